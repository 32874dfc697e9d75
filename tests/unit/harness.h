/* SPDX-License-Identifier: MIT */
/* The unit-test harness: each test_<module>.c defines its suite, harness.c runs it. */
#ifndef SBX_TEST_HARNESS_H
#define SBX_TEST_HARNESS_H

#include <check.h>

#include "util/internal.h"

/* Defined by each test_<module>.c: the module's suite. */
Suite *sbx_test_suite(void);

/* One attempt of an operation under fault injection: do the whole thing, set-up
 * and tear-down included, and return SBX_OK on success or SBX_E_NOMEM when an
 * allocation failure was reported cleanly. Anything left allocated is a leak
 * that the ASan and valgrind runs report. */
typedef sbx_status (*sbx_test_oom_fn)(void *ctx);

/* Run fn with the 1st, 2nd, 3rd ... allocation failing until a run makes no
 * failing allocation; that last run must succeed. Returns the number of
 * allocations the successful run made. */
long sbx_test_oom_loop(sbx_test_oom_fn fn, void *ctx);

/* Convenience for building suites: one TCase per file is usually enough. */
#define SBX_TEST_ADD(tc, fn) tcase_add_test((tc), (fn))

#endif /* SBX_TEST_HARNESS_H */
