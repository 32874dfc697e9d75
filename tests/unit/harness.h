/* SPDX-License-Identifier: MIT */
/* The unit-test harness: each test_<module>.c defines its suite, harness.c runs it. */
#ifndef SBX_TEST_HARNESS_H
#define SBX_TEST_HARNESS_H

#include <check.h>

#include "util/internal.h"

/* The API takes and gives bytes (uint8_t); the tests write their data as
 * string literals. These pass them through unchanged. */
static inline sbx_status t_feed(sbx_redact_stream *s, const char *d, size_t n, const char **o, size_t *on)
{
    return sbx_redact_stream_feed(s, (const uint8_t *)d, n, (const uint8_t **)o, on);
}
static inline sbx_status t_finish(sbx_redact_stream *s, const char **o, size_t *on)
{
    return sbx_redact_stream_finish(s, (const uint8_t **)o, on);
}
static inline sbx_status t_redact(const sbx_redactor *r, const char *d, size_t n, char **o, size_t *on)
{
    return sbx_redactor_redact(r, (const uint8_t *)d, n, (uint8_t **)o, on);
}
static inline sbx_status t_step_output(sbx_transcript *t, size_t step, sbx_stream stream, const char *d, size_t n)
{
    return sbx_transcript_step_add_output(t, step, stream, (const uint8_t *)d, n);
}
static inline sbx_status t_load_data(sbx_transcript *t, const char *d, size_t n)
{
    return sbx_transcript_load_data(t, (const uint8_t *)d, n);
}
static inline sbx_status t_save_data(sbx_transcript *t, char **o, size_t *n)
{
    return sbx_transcript_save_data(t, (uint8_t **)o, n);
}

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

/* The same, failing only the 1st, (1+every)th, (1+2*every)th ...
 * allocation: a sample, for long operations under valgrind. */
long sbx_test_oom_loop_every(sbx_test_oom_fn fn, void *ctx, long every);

/* Convenience for building suites: one TCase per file is usually enough. */
#define SBX_TEST_ADD(tc, fn) tcase_add_test((tc), (fn))

#endif /* SBX_TEST_HARNESS_H */
