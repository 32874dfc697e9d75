/* SPDX-License-Identifier: MIT */
/* The job types, one table shared by the command policy (its per-type
 * scopes) and the network presets, so the two can never disagree on which
 * types exist or how an error message lists them. Internal. */
#ifndef SBX_JOBTYPE_H
#define SBX_JOBTYPE_H

#include <stddef.h>

/* How many job types there are. */
#define SBX__NJOB_TYPES 8

/* The names, in table order, for "unknown job type ... (known: ...)"
 * messages. Kept next to the table: tests/unit/test_policy.c checks that the
 * two agree. */
#define SBX__JOB_TYPES_LIST                                                                                   \
    "repo.clone, repo.applyPatch, deps.install, verify.lint, verify.typecheck, verify.test, verify.build, " \
    "db.migrate"

/* The index of job type name (exact, case-sensitive), -1 when it is not
 * one. name may be NULL (-1). */
int sbx__job_type_index(const char *name);

/* The name of job type i (i < SBX__NJOB_TYPES), NULL when i is out of range. */
const char *sbx__job_type_name(size_t i);

#endif /* SBX_JOBTYPE_H */
