/* SPDX-License-Identifier: MIT */
/*
 * auth: tokens and their scope. An OIDC token (a JWT from Vercel) names its
 * team (owner_id) and project (project_id) in its payload, which is decoded
 * here without verification: the API verifies it, we only need the scope and
 * the expiry to fail early with a useful message. Tokens are secrets: they
 * are wiped when replaced or freed and never copied into a message.
 */
#include "util/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/auth.h"
#include "util/buf.h"
#include "util/str.h"

static int b64url_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-' || c == '+')
        return 62;
    if (c == '_' || c == '/')
        return 63;
    return -1;
}

/* base64url to bytes (NUL-terminated). Trailing '=' padding is accepted
 * (some encoders keep it); a length of 4k+1 cannot be base64. Returns
 * SBX_OK, SBX_E_PARSE or SBX_E_NOMEM. */
static sbx_status b64url_decode(const char *in, size_t n, unsigned char **out, size_t *outlen)
{
    unsigned char *o;
    uint32_t acc = 0;
    size_t len = 0;
    int bits = 0;

    for (int pad = 0; pad < 2 && n > 0 && in[n - 1] == '='; pad++)
        n--;
    if (n % 4 == 1)
        return SBX_E_PARSE;
    if (!(o = sbx__malloc(n / 4 * 3 + 3)))
        return SBX_E_NOMEM;
    for (size_t i = 0; i < n; i++) {
        int v = b64url_value(in[i]);
        if (v < 0) {
            sbx__free(o);
            return SBX_E_PARSE;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[len++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    o[len] = '\0';
    *out = o;
    *outlen = len;
    return SBX_OK;
}

static sbx_status claim(json_t *j, const char *key, char **out)
{
    const char *v = json_string_value(json_object_get(j, key));
    *out = v ? sbx__strdup(v) : NULL;
    return v && !*out ? SBX_E_NOMEM : SBX_OK;
}

sbx_status sbx__jwt_claims(const char *jwt, char **owner_id, char **project_id, int64_t *exp)
{
    const char *d1 = strchr(jwt, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    unsigned char *payload;
    size_t len;
    sbx_status st;
    json_t *j;
    json_t *e;

    *owner_id = *project_id = NULL;
    *exp = 0;
    if (!d1 || !d2 || strchr(d2 + 1, '.') || d1 == jwt || d2 == d1 + 1)
        return SBX_E_PARSE;
    if ((st = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &payload, &len)) != SBX_OK)
        return st;
    j = json_loadb((const char *)payload, len, 0, NULL);
    sbx__free(payload);
    if (!json_is_object(j)) {
        json_decref(j);
        return SBX_E_PARSE;
    }
    if ((st = claim(j, "owner_id", owner_id)) != SBX_OK || (st = claim(j, "project_id", project_id)) != SBX_OK) {
        sbx__free(*owner_id);
        *owner_id = NULL;
        json_decref(j);
        return st;
    }
    e = json_object_get(j, "exp");
    if (json_is_integer(e))
        *exp = json_integer_value(e);
    else if (json_is_real(e)) {
        /* Saturated: casting a double past int64_t's range is undefined
         * behaviour, and 1e300 means "never", -1e300 "long ago". */
        double d = json_real_value(e);
        *exp = d >= 9223372036854775807.0 ? INT64_MAX : d <= -9223372036854775808.0 ? INT64_MIN : (int64_t)d;
    }
    json_decref(j);
    return SBX_OK;
}

static bool token_ok(const char *t)
{
    if (!t || !*t)
        return false;
    for (; *t; t++)
        if ((unsigned char)*t <= ' ' || *t == 0x7f)
            return false;
    return true;
}

static sbx_status take(struct sbx__auth *a, const char *token, const char *team, const char *project,
                       bool oidc, int64_t exp, const char *source)
{
    char *t = sbx__strdup(token), *tm = team ? sbx__strdup(team) : NULL,
         *p = project ? sbx__strdup(project) : NULL;
    if (!t || (team && !tm) || (project && !p)) {
        sbx__free_secret(t);
        sbx__free(tm);
        sbx__free(p);
        return SBX_E_NOMEM;
    }
    sbx__auth_clear(a);
    a->token = t;
    a->team = tm;
    a->project = p;
    a->oidc = oidc;
    a->expires = exp;
    a->source = source;
    return SBX_OK;
}

static sbx_status expired_error(sbx__err *err, const char *what, int64_t exp)
{
    char when[64];
    time_t t = (time_t)exp;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return sbx__err_set(err, SBX_E_AUTH,
                        "%s expired at %s; get a fresh one (`vercel env pull` refreshes "
                        "VERCEL_OIDC_TOKEN; it lasts 12 hours)",
                        what, when);
}

bool sbx__auth_expired(const struct sbx__auth *a, int64_t now_s)
{
    return a->oidc && a->expires > 0 && a->expires <= now_s;
}

sbx_status sbx__auth_set(struct sbx__auth *a, const char *token, const char *team,
                         const char *project, sbx__err *err)
{
    char *owner = NULL, *proj = NULL;
    int64_t exp = 0;
    bool oidc = false;
    sbx_status st;

    if (!token_ok(token))
        return sbx__err_set(err, SBX_E_INVALID_ARG,
                            "token: empty, or contains spaces or control characters");
    if ((team && !*team) || (project && !*project))
        return sbx__err_set(err, SBX_E_INVALID_ARG, "team and project must be non-empty or NULL");
    st = sbx__jwt_claims(token, &owner, &proj, &exp);
    if (st == SBX_E_NOMEM)
        return sbx__err_set(err, st, SBX__NOMEM_TEXT);
    if (st == SBX_OK && (owner || proj)) {
        /* As the SDK does: a JWT naming a team is an OIDC token. */
        oidc = true;
        if (exp > 0 && exp <= (int64_t)time(NULL)) {
            sbx__free(owner);
            sbx__free(proj);
            return expired_error(err, "the OIDC token", exp);
        }
    }
    st = take(a, token, team ? team : owner, project ? project : proj, oidc, exp, "explicit");
    sbx__free(owner);
    sbx__free(proj);
    return st == SBX_OK ? SBX_OK : sbx__err_set(err, st, SBX__NOMEM_TEXT);
}

sbx_status sbx__auth_from_env(struct sbx__auth *a, bool vercel, sbx__err *err)
{
    const char *oidc = getenv("VERCEL_OIDC_TOKEN");
    const char *tok = getenv("VERCEL_TOKEN"), *proj = getenv("VERCEL_PROJECT_ID");
    const char *team = getenv("VERCEL_TEAM_ID"), *sbxd = getenv("SBXRUN_TOKEN");
    sbx_status st;

    if (!vercel && sbxd && *sbxd) {
        if (!token_ok(sbxd))
            return sbx__err_set(err, SBX_E_AUTH, "SBXRUN_TOKEN contains spaces or control characters");
        st = take(a, sbxd, NULL, proj && *proj ? proj : NULL, false, 0, "SBXRUN_TOKEN");
        return st == SBX_OK ? SBX_OK : sbx__err_set(err, st, SBX__NOMEM_TEXT);
    }
    if (oidc && *oidc) {
        char *owner = NULL, *project = NULL;
        int64_t exp = 0;
        st = sbx__jwt_claims(oidc, &owner, &project, &exp);
        if (st == SBX_E_NOMEM)
            return sbx__err_set(err, st, SBX__NOMEM_TEXT);
        if (st != SBX_OK || !owner || !project) {
            sbx__free(owner);
            sbx__free(project);
            return sbx__err_set(err, SBX_E_AUTH,
                                "VERCEL_OIDC_TOKEN is not a Vercel OIDC token (a JWT with owner_id and "
                                "project_id claims); set it from `vercel env pull`, or unset it and set "
                                "VERCEL_TOKEN and VERCEL_PROJECT_ID");
        }
        if (exp > 0 && exp <= (int64_t)time(NULL)) {
            sbx__free(owner);
            sbx__free(project);
            return expired_error(err, "VERCEL_OIDC_TOKEN", exp);
        }
        st = take(a, oidc, owner, project, true, exp, "VERCEL_OIDC_TOKEN");
        sbx__free(owner);
        sbx__free(project);
        return st == SBX_OK ? SBX_OK : sbx__err_set(err, st, SBX__NOMEM_TEXT);
    }
    if (tok && *tok) {
        if (!token_ok(tok))
            return sbx__err_set(err, SBX_E_AUTH, "VERCEL_TOKEN contains spaces or control characters");
        if (vercel && (!proj || !*proj))
            return sbx__err_set(err, SBX_E_AUTH,
                                "VERCEL_TOKEN is set but VERCEL_PROJECT_ID is not: set it (and "
                                "VERCEL_TEAM_ID for a team's project)");
        st = take(a, tok, team && *team ? team : NULL, proj && *proj ? proj : NULL, false, 0,
                  "VERCEL_TOKEN");
        return st == SBX_OK ? SBX_OK : sbx__err_set(err, st, SBX__NOMEM_TEXT);
    }
    if (vercel)
        return sbx__err_set(err, SBX_E_AUTH,
                            "no credentials: set VERCEL_OIDC_TOKEN, or VERCEL_TOKEN and "
                            "VERCEL_PROJECT_ID (and VERCEL_TEAM_ID), or give them to "
                            "sbx_client_set_credentials()");
    return sbx__err_set(err, SBX_E_AUTH,
                        "no credentials for the sbxd endpoint: set SBXRUN_TOKEN to its token (in "
                        "its state directory, file 'token'), or give it to "
                        "sbx_client_set_credentials()");
}

/* ---- the token file beside a unix socket ---------------------------------------- */

/* sbxd writes its bearer token to a file of a few dozen bytes; anything
 * much larger is not one, and is not read into memory. */
#define TOKEN_FILE_MAX 4096

/* DIR/token for the socket DIR/NAME (the path is absolute: set_endpoint
 * accepts only "unix:/..."). */
static sbx_status token_path(const char *sock, sbx__buf *path)
{
    const char *slash = strrchr(sock, '/');
    size_t dir = slash ? (size_t)(slash - sock) + 1 : 0;
    if (sbx__buf_append(path, sock, dir) != SBX_OK || sbx__buf_puts(path, "token") != SBX_OK)
        return SBX_E_NOMEM;
    return SBX_OK;
}

/* Open the file itself, never what a symbolic link points to (a link in a
 * shared directory could aim the token at anything), and never block on a
 * FIFO planted there: it is refused below as not a regular file. */
static sbx_status token_open(const char *path, int *fd, sbx__err *err)
{
    struct stat sb;
    int e;
    memset(&sb, 0, sizeof sb); /* a failed fstat reads as "not a regular file" */
    *fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (*fd < 0) {
        e = errno;
        if (e == ELOOP)
            return sbx__err_set(err, SBX_E_AUTH, "the token file %s is a symbolic link; it is not followed", path);
        return sbx__err_set(err, SBX_E_AUTH,
                            "no credentials for the sbxd endpoint: cannot read the token file %s beside its "
                            "socket (%s); set SBXRUN_TOKEN, or give the token to sbx_client_set_credentials()",
                            path, strerror(e));
    }
    if (fstat(*fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > TOKEN_FILE_MAX) {
        bool reg = S_ISREG(sb.st_mode);
        close(*fd);
        *fd = -1;
        return reg ? sbx__err_set(err, SBX_E_AUTH, "the token file %s is larger than %d bytes: not a token", path,
                                  TOKEN_FILE_MAX)
                   : sbx__err_set(err, SBX_E_AUTH, "the token file %s is not a regular file", path);
    }
    return SBX_OK;
}

/* Read at most TOKEN_FILE_MAX + 1 bytes (the file may have grown since
 * fstat) into buf, which holds TOKEN_FILE_MAX + 2. */
static sbx_status token_read(int fd, const char *path, char *buf, size_t *len, sbx__err *err)
{
    ssize_t n;
    *len = 0;
    while (*len <= TOKEN_FILE_MAX) {
        n = read(fd, buf + *len, TOKEN_FILE_MAX + 1 - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return sbx__err_set(err, SBX_E_AUTH, "cannot read the token file %s: %s", path, strerror(errno));
        if (n == 0)
            break;
        *len += (size_t)n;
    }
    if (*len > TOKEN_FILE_MAX)
        return sbx__err_set(err, SBX_E_AUTH, "the token file %s is larger than %d bytes: not a token", path,
                            TOKEN_FILE_MAX);
    buf[*len] = '\0';
    /* Files written by `echo` or an editor end in a newline. */
    while (*len && (buf[*len - 1] == '\n' || buf[*len - 1] == '\r' || buf[*len - 1] == ' ' ||
                    buf[*len - 1] == '\t'))
        buf[--*len] = '\0';
    if (!*len)
        return sbx__err_set(err, SBX_E_AUTH, "the token file %s is empty", path);
    if (!token_ok(buf))
        return sbx__err_set(err, SBX_E_AUTH, "the token file %s contains spaces or control characters", path);
    return SBX_OK;
}

sbx_status sbx__auth_from_file(struct sbx__auth *a, const char *unix_path, sbx__err *err)
{
    sbx__buf path = SBX__BUF_INIT;
    const char *proj = getenv("VERCEL_PROJECT_ID");
    char *buf = NULL;
    size_t len = 0;
    sbx_status st;
    int fd = -1;

    if (token_path(unix_path, &path) != SBX_OK || !(buf = sbx__malloc(TOKEN_FILE_MAX + 2))) {
        sbx__buf_free(&path);
        return sbx__err_nomem(err);
    }
    st = token_open(path.data, &fd, err);
    if (st == SBX_OK) {
        st = token_read(fd, path.data, buf, &len, err);
        close(fd);
    }
    /* As SBXRUN_TOKEN: VERCEL_PROJECT_ID, when set, names the project. */
    if (st == SBX_OK && (st = take(a, buf, NULL, proj && *proj ? proj : NULL, false, 0, "token file")) != SBX_OK)
        sbx__err_set(err, st, SBX__NOMEM_TEXT);
    sbx__wipe(buf, TOKEN_FILE_MAX + 2);
    sbx__free(buf);
    sbx__buf_free(&path);
    return st;
}

/* For a unix socket, the token sbxd wrote beside it comes right after
 * SBXRUN_TOKEN: a Vercel token from the environment is only tried when
 * there is no such file, so it is not sent to a local server that has its
 * own. A file that exists but cannot be used is reported, not skipped. */
sbx_status sbx__auth_resolve(struct sbx__auth *a, bool vercel, const char *unix_path, sbx__err *err)
{
    const char *sbxd = getenv("SBXRUN_TOKEN");
    sbx__buf path = SBX__BUF_INIT;
    struct stat sb;
    bool file;

    if (vercel || !unix_path || (sbxd && *sbxd))
        return sbx__auth_from_env(a, vercel, err);
    if (token_path(unix_path, &path) != SBX_OK) {
        sbx__buf_free(&path);
        return sbx__err_nomem(err);
    }
    file = lstat(path.data, &sb) == 0;
    sbx__buf_free(&path);
    if (!file && ((getenv("VERCEL_OIDC_TOKEN") && *getenv("VERCEL_OIDC_TOKEN")) ||
                  (getenv("VERCEL_TOKEN") && *getenv("VERCEL_TOKEN"))))
        return sbx__auth_from_env(a, vercel, err);
    /* Without a file this reports the missing file, naming its path. */
    return sbx__auth_from_file(a, unix_path, err);
}

void sbx__auth_clear(struct sbx__auth *a)
{
    sbx__free_secret(a->token);
    sbx__free(a->team);
    sbx__free(a->project);
    a->token = a->team = a->project = NULL;
    a->oidc = false;
    a->expires = 0;
    a->source = NULL;
}
