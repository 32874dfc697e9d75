/* SPDX-License-Identifier: MIT */
/* What other modules take from the command policy: a private copy, so a
 * holder (a client, a job) is not changed by later edits of the caller's. */
#ifndef SBX_POLICY_SHARE_H
#define SBX_POLICY_SHARE_H

#include <sbxrun/policy.h>

/* A deep copy of p (its last error is not copied); NULL when out of memory. */
sbx_policy *sbx__policy_copy(const sbx_policy *p);

#endif /* SBX_POLICY_SHARE_H */
