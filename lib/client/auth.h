/* SPDX-License-Identifier: MIT */
/* auth: the credentials a client sends, resolved from code or the environment. */
#ifndef SBX_AUTH_H
#define SBX_AUTH_H

#include <stdbool.h>
#include <stdint.h>

#include <sbxrun/common.h>

#include "util/error.h"

struct sbx__auth {
    char *token;        /* secret: wiped when replaced or freed */
    char *team;
    char *project;
    bool oidc;          /* the token is an OIDC JWT */
    int64_t expires;    /* its exp claim in seconds since the epoch, 0 unknown */
    const char *source; /* "explicit", "VERCEL_OIDC_TOKEN", "VERCEL_TOKEN", "SBXRUN_TOKEN", "token file" */
};

/* Claims of a JWT, decoded without verifying it (the API verifies). Returns
 * SBX_OK, SBX_E_PARSE (not a JWT, or its payload not JSON) or SBX_E_NOMEM.
 * Claims that are absent or not strings come back NULL; exp 0 when absent. */
sbx_status sbx__jwt_claims(const char *jwt, char **owner_id, char **project_id, int64_t *exp);

/* Explicit credentials. A token that is a JWT with owner_id/project_id
 * claims is taken as an OIDC token: the claims fill a missing team/project,
 * and an expired one is refused. */
sbx_status sbx__auth_set(struct sbx__auth *a, const char *token, const char *team,
                         const char *project, sbx__err *err);
/* From the environment, in order: VERCEL_OIDC_TOKEN; VERCEL_TOKEN with
 * VERCEL_PROJECT_ID (and VERCEL_TEAM_ID); for a non-Vercel endpoint (sbxd)
 * also SBXRUN_TOKEN. The error names the variables to set. */
sbx_status sbx__auth_from_env(struct sbx__auth *a, bool vercel, sbx__err *err);
/* From the file 'token' in the directory of the unix socket unix_path
 * (sbxd's state directory holds both): opened without following a symbolic
 * link, a regular file of at most 4 KiB, trailing newline stripped, wiped
 * from memory after use. Every failure is SBX_E_AUTH naming the path. */
sbx_status sbx__auth_from_file(struct sbx__auth *a, const char *unix_path, sbx__err *err);
/* What a client without explicit credentials uses: the environment, else,
 * for a unix socket endpoint (unix_path not NULL) when the environment
 * names no credential at all, the token file beside the socket. */
sbx_status sbx__auth_resolve(struct sbx__auth *a, bool vercel, const char *unix_path, sbx__err *err);
/* Whether the token has expired (OIDC tokens with an exp claim). */
bool sbx__auth_expired(const struct sbx__auth *a, int64_t now_s);
void sbx__auth_clear(struct sbx__auth *a);

#endif /* SBX_AUTH_H */
