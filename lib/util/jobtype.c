/* SPDX-License-Identifier: MIT */
/* The job types shared by the command policy and the network presets. */
#include <string.h>

#include "util/internal.h"
#include "util/jobtype.h"

/* In the order of a job's life (clone, patch, install, verify, migrate);
 * SBX__JOB_TYPES_LIST spells the same names in the same order. */
static const char *const job_types[SBX__NJOB_TYPES] = {
    "repo.clone",  "repo.applyPatch", "deps.install", "verify.lint",
    "verify.typecheck", "verify.test", "verify.build", "db.migrate",
};

int sbx__job_type_index(const char *name)
{
    if (!name)
        return -1;
    for (size_t i = 0; i < SBX__NJOB_TYPES; i++)
        if (strcmp(job_types[i], name) == 0)
            return (int)i;
    return -1;
}

const char *sbx__job_type_name(size_t i)
{
    return i < SBX__NJOB_TYPES ? job_types[i] : NULL;
}
