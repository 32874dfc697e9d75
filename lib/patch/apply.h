/* SPDX-License-Identifier: MIT */
/* apply: text hunks placed as `git apply` places them. */
#ifndef SBX_PATCH_APPLY_H
#define SBX_PATCH_APPLY_H

#include <git2.h>
#include <stddef.h>

#include <sbxrun/common.h>

/* Apply the hunks of gp to pre (pre_len bytes). SBX_OK with *out (freed
 * with sbx__free) and *out_len; SBX_E_PATCH when a hunk does not apply, why
 * naming it; SBX_E_NOMEM; SBX_E_INTERNAL when libgit2 fails. */
sbx_status sbx__apply_text(const char *pre, size_t pre_len, git_patch *gp, char **out, size_t *out_len, char *why,
                           size_t why_cap);

#endif /* SBX_PATCH_APPLY_H */
