/* SPDX-License-Identifier: MIT */
/* What other modules take from the command policy: a private copy, so a
 * holder (a client, a job) is not changed by later edits of the caller's. */
#ifndef SBX_POLICY_SHARE_H
#define SBX_POLICY_SHARE_H

#include <jansson.h>

#include <sbxrun/policy.h>

/* A deep copy of p (its last error is not copied); NULL when out of memory. */
sbx_policy *sbx__policy_copy(const sbx_policy *p);

/* What p lets a job of job_type run, as a policy document of its own
 * ({"version":1,"extends":"none","allow":{"programs","packages"},
 * "deny":{"programs"}}, empty lists left out) that decides as p does for
 * that type: the summary a transcript records. A new reference; NULL when
 * out of memory or for an unknown job type. */
json_t *sbx__policy_summary(const sbx_policy *p, const char *job_type);

#endif /* SBX_POLICY_SHARE_H */
