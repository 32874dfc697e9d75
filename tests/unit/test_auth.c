/* SPDX-License-Identifier: MIT */
/* Unit tests for lib/client/auth.c: JWT claims, explicit and environment credentials. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/auth.h"
#include "client/core.h"

#define FUTURE_EXP 4102444800LL /* 2100-01-01 */
#define PAST_EXP 1000000000LL   /* 2001-09-09 */

/* ---- building JWTs ---------------------------------------------------------- */

/* base64url of [in, in+n), with or without '=' padding, into a new string. */
static char *b64url(const char *in, size_t n, int pad)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    const unsigned char *p = (const unsigned char *)in;
    size_t i;
    ck_assert_ptr_nonnull(out);
    for (i = 0; i + 2 < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        *o++ = tbl[v >> 18 & 63];
        *o++ = tbl[v >> 12 & 63];
        *o++ = tbl[v >> 6 & 63];
        *o++ = tbl[v & 63];
    }
    if (n - i == 1) {
        unsigned v = (unsigned)p[i] << 16;
        *o++ = tbl[v >> 18 & 63];
        *o++ = tbl[v >> 12 & 63];
        if (pad) {
            *o++ = '=';
            *o++ = '=';
        }
    } else if (n - i == 2) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
        *o++ = tbl[v >> 18 & 63];
        *o++ = tbl[v >> 12 & 63];
        *o++ = tbl[v >> 6 & 63];
        if (pad)
            *o++ = '=';
    }
    *o = '\0';
    return out;
}

/* header.payload.signature with the payload JSON given. */
static char *make_jwt(const char *payload_json, int pad)
{
    static const char header[] = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
    char *h = b64url(header, strlen(header), 0), *p = b64url(payload_json, strlen(payload_json), pad);
    size_t n = strlen(h) + strlen(p) + 32;
    char *jwt = malloc(n);
    ck_assert_ptr_nonnull(jwt);
    snprintf(jwt, n, "%s.%s.c2lnbmF0dXJl", h, p);
    free(h);
    free(p);
    return jwt;
}

static char *payload_segment(const char *jwt)
{
    const char *d1 = strchr(jwt, '.'), *d2 = strchr(d1 + 1, '.');
    char *seg = strndup(d1 + 1, (size_t)(d2 - d1 - 1));
    ck_assert_ptr_nonnull(seg);
    return seg;
}

static char *claims_json(const char *owner, const char *project, long long exp, const char *extra)
{
    char *s = malloc(512);
    int n = 0;
    ck_assert_ptr_nonnull(s);
    n += snprintf(s + n, 512 - (size_t)n, "{\"sub\":\"owner:x\"");
    if (owner)
        n += snprintf(s + n, 512 - (size_t)n, ",\"owner_id\":\"%s\"", owner);
    if (project)
        n += snprintf(s + n, 512 - (size_t)n, ",\"project_id\":\"%s\"", project);
    if (exp)
        n += snprintf(s + n, 512 - (size_t)n, ",\"exp\":%lld", exp);
    if (extra)
        n += snprintf(s + n, 512 - (size_t)n, ",%s", extra);
    snprintf(s + n, 512 - (size_t)n, "}");
    return s;
}

static char *jwt_for(const char *owner, const char *project, long long exp)
{
    char *j = claims_json(owner, project, exp, NULL);
    char *t = make_jwt(j, 0);
    free(j);
    return t;
}

/* ---- sbx__jwt_claims -------------------------------------------------------- */

static void expect_claims(const char *jwt, const char *owner, const char *project, int64_t exp)
{
    char *o = (char *)"unset", *p = (char *)"unset";
    int64_t e = -7;
    sbx_status st = sbx__jwt_claims(jwt, &o, &p, &e);
    ck_assert_msg(st == SBX_OK, "%s: %s", jwt, sbx_status_name(st));
    if (owner)
        ck_assert_str_eq(o, owner);
    else
        ck_assert_ptr_null(o);
    if (project)
        ck_assert_str_eq(p, project);
    else
        ck_assert_ptr_null(p);
    ck_assert_int_eq(e, exp);
    sbx__free(o);
    sbx__free(p);
}

static void expect_parse_error(const char *jwt)
{
    char *o = (char *)"unset", *p = (char *)"unset";
    int64_t e = -7;
    sbx_status st = sbx__jwt_claims(jwt, &o, &p, &e);
    ck_assert_msg(st == SBX_E_PARSE, "'%s' gave %s, not SBX_E_PARSE", jwt, sbx_status_name(st));
    ck_assert_ptr_null(o);
    ck_assert_ptr_null(p);
    ck_assert_int_eq(e, 0);
}

START_TEST(test_auth_jwt_claims_valid_unpadded)
{
    char *jwt = jwt_for("team_abc", "prj_123", FUTURE_EXP);
    expect_claims(jwt, "team_abc", "prj_123", FUTURE_EXP);
    free(jwt);
}
END_TEST

START_TEST(test_auth_jwt_claims_with_url_alphabet_characters)
{
    /* Runs of '?' and '>' hold a whole 3-byte group at any alignment, and
     * encode as "Pz8_" and "Pj4-": the payload uses both base64url letters. */
    char *j = claims_json("team_\xc3\xa9t\xc3\xa9", "prj_x", FUTURE_EXP, "\"q\":\"\?\?\?\?\?>>>>>\"");
    char *jwt = make_jwt(j, 0), *seg = payload_segment(jwt);
    ck_assert_msg(strchr(seg, '-') && strchr(seg, '_'), "the payload '%s' lacks '-' or '_'", seg);
    expect_claims(jwt, "team_\xc3\xa9t\xc3\xa9", "prj_x", FUTURE_EXP);
    free(seg);
    free(jwt);
    free(j);
}
END_TEST

START_TEST(test_auth_jwt_claims_every_payload_length_mod_3)
{
    /* Payload lengths 3k, 3k+1, 3k+2: no padding, and the two partial groups. */
    for (int k = 0; k < 3; k++) {
        char extra[32];
        char *j, *jwt;
        snprintf(extra, sizeof extra, "\"f\":\"%.*s\"", k, "zz");
        j = claims_json("team_a", "prj_b", 1700000000LL, extra);
        jwt = make_jwt(j, 0);
        expect_claims(jwt, "team_a", "prj_b", 1700000000LL);
        free(jwt);
        free(j);
    }
}
END_TEST

START_TEST(test_auth_jwt_claims_with_padding_chars)
{
    /* Some encoders keep the '=' padding; the decoder accepts '=' and must
     * give the same claims as for the unpadded form. */
    int padded_cases = 0;
    for (int k = 0; k < 3; k++) {
        char extra[32];
        char *j, *jwt, *seg;
        snprintf(extra, sizeof extra, "\"f\":\"%.*s\"", k, "zz");
        j = claims_json("team_a", "prj_b", FUTURE_EXP, extra);
        jwt = make_jwt(j, 1);
        seg = payload_segment(jwt);
        if (strchr(seg, '='))
            padded_cases++;
        expect_claims(jwt, "team_a", "prj_b", FUTURE_EXP);
        free(seg);
        free(jwt);
        free(j);
    }
    ck_assert_int_eq(padded_cases, 2);
}
END_TEST

START_TEST(test_auth_jwt_claims_missing_or_not_strings)
{
    char *jwt = make_jwt("{\"sub\":\"x\"}", 0);
    expect_claims(jwt, NULL, NULL, 0);
    free(jwt);
    jwt = make_jwt("{\"owner_id\":5,\"project_id\":null,\"exp\":\"soon\"}", 0);
    expect_claims(jwt, NULL, NULL, 0);
    free(jwt);
    jwt = make_jwt("{\"project_id\":\"prj_only\",\"exp\":1.7e9}", 0);
    expect_claims(jwt, NULL, "prj_only", 1700000000LL);
    free(jwt);
    jwt = make_jwt("{}", 0);
    expect_claims(jwt, NULL, NULL, 0);
    free(jwt);
}
END_TEST

START_TEST(test_auth_jwt_claims_payload_not_a_json_object)
{
    static const char *const payloads[] = {"not json", "[1,2,3]", "\"owner_id\"", "{\"owner_id\":", "42", ""};
    for (size_t i = 0; i < SBX__ARRAY_LEN(payloads); i++) {
        char *jwt = make_jwt(payloads[i], 0);
        expect_parse_error(jwt);
        free(jwt);
    }
}
END_TEST

START_TEST(test_auth_jwt_claims_wrong_number_of_dots)
{
    char *jwt = jwt_for("team_abc", "prj_123", FUTURE_EXP);
    char *seg = payload_segment(jwt);
    char buf[1024];
    expect_parse_error("");
    expect_parse_error("no-dots-at-all");
    snprintf(buf, sizeof buf, "eyJhbGciOiJub25lIn0.%s", seg); /* one dot */
    expect_parse_error(buf);
    snprintf(buf, sizeof buf, "%s.extra", jwt); /* three dots */
    expect_parse_error(buf);
    snprintf(buf, sizeof buf, "%s..", jwt); /* four */
    expect_parse_error(buf);
    snprintf(buf, sizeof buf, ".%s.sig", seg); /* empty header */
    expect_parse_error(buf);
    expect_parse_error("eyJhbGciOiJub25lIn0..sig"); /* empty payload */
    free(seg);
    free(jwt);
}
END_TEST

START_TEST(test_auth_jwt_claims_bad_base64)
{
    char *jwt = jwt_for("team_abc", "prj_123", FUTURE_EXP);
    char *seg = payload_segment(jwt);
    static const char bad[] = {'*', '!', ' ', '%', '\\', '"', '\x01', '\x80'};
    char buf[1024];
    for (size_t i = 0; i < sizeof bad; i++) {
        char *s = strdup(seg);
        ck_assert_ptr_nonnull(s);
        s[strlen(s) / 2] = bad[i];
        snprintf(buf, sizeof buf, "eyJhbGciOiJub25lIn0.%s.sig", s);
        expect_parse_error(buf);
        free(s);
    }
    free(seg);
    free(jwt);
}
END_TEST

/* A real exp is saturated, not cast: a cast past int64_t's range is
 * undefined behaviour. */
START_TEST(test_auth_jwt_claims_real_exp_saturated)
{
    expect_claims("e30.eyJvd25lcl9pZCI6InQiLCJleHAiOjFlMzAwfQ.s", "t", NULL, INT64_MAX); /* {"owner_id":"t","exp":1e300} */
    expect_claims("e30.eyJvd25lcl9pZCI6InQiLCJleHAiOi0xZTMwMH0.s", "t", NULL, INT64_MIN);
    expect_claims("e30.eyJvd25lcl9pZCI6InQiLCJleHAiOjEuOWU5fQ.s", "t", NULL, 1900000000);
}
END_TEST

START_TEST(test_auth_jwt_claims_impossible_base64_length)
{
    /* No base64 text has a length of 4k+1: the last character would carry 6
     * bits of a byte that cannot exist. Such a payload is damaged. */
    char buf[1024];
    int done = 0;
    for (int k = 0; k < 3 && !done; k++) {
        char extra[32];
        char *j, *jwt, *seg;
        snprintf(extra, sizeof extra, "\"f\":\"%.*s\"", k, "zz");
        j = claims_json("team_a", "prj_b", FUTURE_EXP, extra);
        jwt = make_jwt(j, 0);
        seg = payload_segment(jwt);
        if (strlen(seg) % 4 == 0) {
            snprintf(buf, sizeof buf, "eyJhbGciOiJub25lIn0.%sA.sig", seg);
            expect_parse_error(buf);
            done = 1;
        }
        free(seg);
        free(jwt);
        free(j);
    }
    ck_assert(done);
}
END_TEST

/* ---- sbx__auth_set ---------------------------------------------------------- */

static void assert_no_secret(const sbx__err *err, const char *secret)
{
    const char *m = sbx__err_msg(err);
    ck_assert_msg(strstr(m, secret) == NULL, "the message '%s' quotes the token", m);
}

START_TEST(test_auth_set_rejects_spaces_and_controls)
{
    static const char *const bad[] = {
        "", "s3c ret", "s3c\tret", "s3c\nret", "s3c\rret", "s3cret\x7f", "\x01s3cret", "s3cret ",
    };
    struct sbx__auth a = {0};
    sbx__err err = {0};
    ck_assert_int_eq(sbx__auth_set(&a, "good-token", NULL, NULL, &err), SBX_OK);
    for (size_t i = 0; i < SBX__ARRAY_LEN(bad); i++) {
        sbx__err_clear(&err);
        ck_assert_msg(sbx__auth_set(&a, bad[i], NULL, NULL, &err) == SBX_E_INVALID_ARG, "case %zu", i);
        ck_assert_int_eq(err.code, SBX_E_INVALID_ARG);
        if (bad[i][0])
            assert_no_secret(&err, bad[i]);
        /* The credentials in place are kept. */
        ck_assert_str_eq(a.token, "good-token");
    }
    ck_assert_int_eq(sbx__auth_set(&a, NULL, NULL, NULL, &err), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx__auth_set(&a, "tok", "", NULL, &err), SBX_E_INVALID_ARG);
    ck_assert_int_eq(sbx__auth_set(&a, "tok", NULL, "", &err), SBX_E_INVALID_ARG);
    ck_assert_str_eq(a.token, "good-token");
    sbx__auth_clear(&a);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_auth_set_plain_token)
{
    struct sbx__auth a = {0};
    sbx__err err = {0};
    ck_assert_int_eq(sbx__auth_set(&a, "vcp_plainToken123", "team_t", "prj_p", &err), SBX_OK);
    ck_assert_str_eq(a.token, "vcp_plainToken123");
    ck_assert_str_eq(a.team, "team_t");
    ck_assert_str_eq(a.project, "prj_p");
    ck_assert(!a.oidc);
    ck_assert_int_eq(a.expires, 0);
    ck_assert_str_eq(a.source, "explicit");
    /* Replacing drops the old scope. */
    ck_assert_int_eq(sbx__auth_set(&a, "other", NULL, NULL, &err), SBX_OK);
    ck_assert_str_eq(a.token, "other");
    ck_assert_ptr_null(a.team);
    ck_assert_ptr_null(a.project);
    sbx__auth_clear(&a);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_auth_set_jwt_becomes_oidc)
{
    struct sbx__auth a = {0};
    sbx__err err = {0};
    char *jwt = jwt_for("team_claim", "prj_claim", FUTURE_EXP);
    ck_assert_int_eq(sbx__auth_set(&a, jwt, NULL, NULL, &err), SBX_OK);
    ck_assert(a.oidc);
    ck_assert_str_eq(a.token, jwt);
    ck_assert_ptr_ne(a.token, jwt);
    ck_assert_str_eq(a.team, "team_claim");
    ck_assert_str_eq(a.project, "prj_claim");
    ck_assert_int_eq(a.expires, FUTURE_EXP);
    ck_assert_str_eq(a.source, "explicit");
    free(jwt);

    /* owner_id alone is enough; no exp means no known expiry. */
    jwt = jwt_for("team_only", NULL, 0);
    ck_assert_int_eq(sbx__auth_set(&a, jwt, NULL, NULL, &err), SBX_OK);
    ck_assert(a.oidc);
    ck_assert_str_eq(a.team, "team_only");
    ck_assert_ptr_null(a.project);
    ck_assert_int_eq(a.expires, 0);
    free(jwt);

    /* A JWT without those claims is just a token. */
    jwt = jwt_for(NULL, NULL, FUTURE_EXP);
    ck_assert_int_eq(sbx__auth_set(&a, jwt, NULL, NULL, &err), SBX_OK);
    ck_assert(!a.oidc);
    ck_assert_ptr_null(a.team);
    free(jwt);
    sbx__auth_clear(&a);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_auth_set_explicit_scope_overrides_claims)
{
    struct sbx__auth a = {0};
    sbx__err err = {0};
    char *jwt = jwt_for("team_claim", "prj_claim", FUTURE_EXP);
    ck_assert_int_eq(sbx__auth_set(&a, jwt, "team_mine", "prj_mine", &err), SBX_OK);
    ck_assert(a.oidc);
    ck_assert_str_eq(a.team, "team_mine");
    ck_assert_str_eq(a.project, "prj_mine");
    ck_assert_int_eq(sbx__auth_set(&a, jwt, NULL, "prj_mine", &err), SBX_OK);
    ck_assert_str_eq(a.team, "team_claim");
    ck_assert_str_eq(a.project, "prj_mine");
    ck_assert_int_eq(sbx__auth_set(&a, jwt, "team_mine", NULL, &err), SBX_OK);
    ck_assert_str_eq(a.team, "team_mine");
    ck_assert_str_eq(a.project, "prj_claim");
    free(jwt);
    sbx__auth_clear(&a);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_auth_set_expired_jwt_refused)
{
    struct sbx__auth a = {0};
    sbx__err err = {0};
    char *jwt = jwt_for("team_claim", "prj_claim", PAST_EXP), *seg = payload_segment(jwt);
    ck_assert_int_eq(sbx__auth_set(&a, "previous", NULL, NULL, &err), SBX_OK);
    ck_assert_int_eq(sbx__auth_set(&a, jwt, NULL, NULL, &err), SBX_E_AUTH);
    ck_assert_int_eq(err.code, SBX_E_AUTH);
    ck_assert_ptr_nonnull(strstr(sbx__err_msg(&err), "expired"));
    ck_assert_ptr_nonnull(strstr(sbx__err_msg(&err), "2001-09-09"));
    assert_no_secret(&err, jwt);
    assert_no_secret(&err, seg);
    ck_assert_str_eq(a.token, "previous");
    /* Also refused with an explicit scope. */
    ck_assert_int_eq(sbx__auth_set(&a, jwt, "t", "p", &err), SBX_E_AUTH);
    /* One second ago is expired too. */
    free(jwt);
    jwt = jwt_for("team_claim", "prj_claim", (long long)time(NULL) - 1);
    ck_assert_int_eq(sbx__auth_set(&a, jwt, NULL, NULL, &err), SBX_E_AUTH);
    ck_assert_str_eq(a.token, "previous");
    free(jwt);
    free(seg);
    sbx__auth_clear(&a);
    sbx__err_free(&err);
}
END_TEST

START_TEST(test_auth_expired)
{
    struct sbx__auth a = {0};
    a.oidc = true;
    a.expires = 1000;
    ck_assert(!sbx__auth_expired(&a, 999));
    ck_assert(sbx__auth_expired(&a, 1000));
    ck_assert(sbx__auth_expired(&a, 5000));
    a.expires = 0; /* unknown: never treated as expired */
    ck_assert(!sbx__auth_expired(&a, 5000));
    a.oidc = false; /* only OIDC tokens expire here */
    a.expires = 1000;
    ck_assert(!sbx__auth_expired(&a, 5000));
}
END_TEST

START_TEST(test_auth_clear_resets_every_field)
{
    struct sbx__auth a = {0};
    sbx__err err = {0};
    char *jwt = jwt_for("team_claim", "prj_claim", FUTURE_EXP);
    ck_assert_int_eq(sbx__auth_set(&a, jwt, NULL, NULL, &err), SBX_OK);
    ck_assert_ptr_nonnull(a.token);
    ck_assert_ptr_nonnull(a.team);
    ck_assert_ptr_nonnull(a.project);
    sbx__auth_clear(&a);
    ck_assert_ptr_null(a.token);
    ck_assert_ptr_null(a.team);
    ck_assert_ptr_null(a.project);
    ck_assert_ptr_null(a.source);
    ck_assert(!a.oidc);
    ck_assert_int_eq(a.expires, 0);
    sbx__auth_clear(&a); /* twice is fine */
    free(jwt);
    sbx__err_free(&err);
}
END_TEST

/* ---- sbx__auth_from_env ----------------------------------------------------- */

static void clear_env(void)
{
    unsetenv("VERCEL_OIDC_TOKEN");
    unsetenv("VERCEL_TOKEN");
    unsetenv("VERCEL_PROJECT_ID");
    unsetenv("VERCEL_TEAM_ID");
    unsetenv("SBXRUN_TOKEN");
}

static void env(const char *k, const char *v)
{
    ck_assert_int_eq(setenv(k, v, 1), 0);
}

/* An error from the environment: code, the words the message must hold, and
 * the credentials in place left alone. */
static void expect_env_error(bool vercel, sbx_status code, const char *secret, const char *const *words,
                             size_t nwords)
{
    struct sbx__auth a = {0};
    sbx__err err = {0};
    const char *m;
    ck_assert_int_eq(sbx__auth_set(&a, "kept-token", NULL, NULL, &err), SBX_OK);
    ck_assert_int_eq(sbx__auth_from_env(&a, vercel, &err), code);
    ck_assert_int_eq(err.code, code);
    m = sbx__err_msg(&err);
    for (size_t i = 0; i < nwords; i++)
        ck_assert_msg(strstr(m, words[i]) != NULL, "'%s' does not name %s", m, words[i]);
    if (secret)
        assert_no_secret(&err, secret);
    ck_assert_str_eq(a.token, "kept-token");
    sbx__auth_clear(&a);
    sbx__err_free(&err);
}

START_TEST(test_auth_env_oidc_beats_vercel_token)
{
    struct sbx__auth a = {0};
    sbx__err err = {0};
    char *jwt = jwt_for("team_oidc", "prj_oidc", FUTURE_EXP);
    clear_env();
    env("VERCEL_OIDC_TOKEN", jwt);
    env("VERCEL_TOKEN", "vercel-token-value");
    env("VERCEL_PROJECT_ID", "prj_env");
    env("VERCEL_TEAM_ID", "team_env");
    ck_assert_int_eq(sbx__auth_from_env(&a, true, &err), SBX_OK);
    ck_assert_str_eq(a.source, "VERCEL_OIDC_TOKEN");
    ck_assert_str_eq(a.token, jwt);
    ck_assert(a.oidc);
    ck_assert_str_eq(a.team, "team_oidc");
    ck_assert_str_eq(a.project, "prj_oidc");
    ck_assert_int_eq(a.expires, FUTURE_EXP);

    /* Without the OIDC token, VERCEL_TOKEN with its scope from the environment. */
    unsetenv("VERCEL_OIDC_TOKEN");
    ck_assert_int_eq(sbx__auth_from_env(&a, true, &err), SBX_OK);
    ck_assert_str_eq(a.source, "VERCEL_TOKEN");
    ck_assert_str_eq(a.token, "vercel-token-value");
    ck_assert(!a.oidc);
    ck_assert_str_eq(a.team, "team_env");
    ck_assert_str_eq(a.project, "prj_env");

    /* An empty OIDC variable counts as unset. */
    env("VERCEL_OIDC_TOKEN", "");
    ck_assert_int_eq(sbx__auth_from_env(&a, true, &err), SBX_OK);
    ck_assert_str_eq(a.source, "VERCEL_TOKEN");
    /* VERCEL_TEAM_ID is optional. */
    unsetenv("VERCEL_TEAM_ID");
    ck_assert_int_eq(sbx__auth_from_env(&a, true, &err), SBX_OK);
    ck_assert_ptr_null(a.team);
    ck_assert_str_eq(a.project, "prj_env");
    free(jwt);
    sbx__auth_clear(&a);
    sbx__err_free(&err);
    clear_env();
}
END_TEST

START_TEST(test_auth_env_vercel_token_needs_project)
{
    static const char *const words[] = {"VERCEL_PROJECT_ID"};
    clear_env();
    env("VERCEL_TOKEN", "s3cretVercelToken");
    expect_env_error(true, SBX_E_AUTH, "s3cretVercelToken", words, 1);
    env("VERCEL_PROJECT_ID", "");
    expect_env_error(true, SBX_E_AUTH, "s3cretVercelToken", words, 1);
    env("VERCEL_TEAM_ID", "team_x"); /* a team without a project is not enough */
    expect_env_error(true, SBX_E_AUTH, "s3cretVercelToken", words, 1);
    clear_env();
}
END_TEST

START_TEST(test_auth_env_nothing_set)
{
    static const char *const vercel_words[] = {"VERCEL_OIDC_TOKEN", "VERCEL_TOKEN", "VERCEL_PROJECT_ID"};
    static const char *const sbxd_words[] = {"SBXRUN_TOKEN"};
    clear_env();
    expect_env_error(true, SBX_E_AUTH, NULL, vercel_words, 3);
    expect_env_error(false, SBX_E_AUTH, NULL, sbxd_words, 1);
    /* Empty variables are the same as unset ones. */
    env("VERCEL_OIDC_TOKEN", "");
    env("VERCEL_TOKEN", "");
    env("SBXRUN_TOKEN", "");
    expect_env_error(true, SBX_E_AUTH, NULL, vercel_words, 3);
    expect_env_error(false, SBX_E_AUTH, NULL, sbxd_words, 1);
    clear_env();
}
END_TEST

START_TEST(test_auth_env_sbxd_endpoint_uses_sbxrun_token)
{
    struct sbx__auth a = {0};
    sbx__err err = {0};
    char *jwt = jwt_for("team_oidc", "prj_oidc", FUTURE_EXP);
    clear_env();
    env("SBXRUN_TOKEN", "sbxd-token-value");
    env("VERCEL_OIDC_TOKEN", jwt);
    env("VERCEL_TOKEN", "vercel-token-value");
    ck_assert_int_eq(sbx__auth_from_env(&a, false, &err), SBX_OK);
    ck_assert_str_eq(a.source, "SBXRUN_TOKEN");
    ck_assert_str_eq(a.token, "sbxd-token-value");
    ck_assert(!a.oidc);
    ck_assert_ptr_null(a.team);
    ck_assert_ptr_null(a.project);
    env("VERCEL_PROJECT_ID", "prj_env");
    ck_assert_int_eq(sbx__auth_from_env(&a, false, &err), SBX_OK);
    ck_assert_str_eq(a.project, "prj_env");

    /* A Vercel endpoint never takes SBXRUN_TOKEN. */
    ck_assert_int_eq(sbx__auth_from_env(&a, true, &err), SBX_OK);
    ck_assert_str_eq(a.source, "VERCEL_OIDC_TOKEN");
    unsetenv("VERCEL_OIDC_TOKEN");
    unsetenv("VERCEL_TOKEN");
    {
        static const char *const words[] = {"VERCEL_OIDC_TOKEN", "VERCEL_TOKEN"};
        expect_env_error(true, SBX_E_AUTH, "sbxd-token-value", words, 2);
    }

    /* Without SBXRUN_TOKEN, sbxd falls back to the Vercel variables and does
     * not need a project. */
    unsetenv("SBXRUN_TOKEN");
    unsetenv("VERCEL_PROJECT_ID");
    env("VERCEL_TOKEN", "vercel-token-value");
    ck_assert_int_eq(sbx__auth_from_env(&a, false, &err), SBX_OK);
    ck_assert_str_eq(a.source, "VERCEL_TOKEN");
    ck_assert_ptr_null(a.project);
    free(jwt);
    sbx__auth_clear(&a);
    sbx__err_free(&err);
    clear_env();
}
END_TEST

START_TEST(test_auth_env_malformed_oidc_token)
{
    static const char *const words[] = {"VERCEL_OIDC_TOKEN"};
    char *no_project = jwt_for("team_x", NULL, FUTURE_EXP);
    char *no_owner = jwt_for(NULL, "prj_x", FUTURE_EXP);
    char *not_json = make_jwt("this is not json at all", 0);
    const char *const cases[] = {"s3cret-not-a-jwt", "s3cret.two-parts", no_project, no_owner, not_json};
    clear_env();
    /* A usable VERCEL_TOKEN is not a silent fallback for a broken OIDC token. */
    env("VERCEL_TOKEN", "vercel-token-value");
    env("VERCEL_PROJECT_ID", "prj_env");
    for (size_t i = 0; i < SBX__ARRAY_LEN(cases); i++) {
        env("VERCEL_OIDC_TOKEN", cases[i]);
        expect_env_error(true, SBX_E_AUTH, cases[i], words, 1);
        if (strchr(cases[i], '.') && strchr(strchr(cases[i], '.') + 1, '.')) {
            char *seg = payload_segment(cases[i]);
            expect_env_error(true, SBX_E_AUTH, seg, words, 1);
            free(seg);
        }
    }
    free(no_project);
    free(no_owner);
    free(not_json);
    clear_env();
}
END_TEST

START_TEST(test_auth_env_expired_oidc_token)
{
    static const char *const words[] = {"VERCEL_OIDC_TOKEN", "expired"};
    char *jwt = jwt_for("team_x", "prj_x", PAST_EXP), *seg = payload_segment(jwt);
    clear_env();
    env("VERCEL_OIDC_TOKEN", jwt);
    expect_env_error(true, SBX_E_AUTH, jwt, words, 2);
    expect_env_error(true, SBX_E_AUTH, seg, words, 2);
    free(seg);
    free(jwt);
    clear_env();
}
END_TEST

START_TEST(test_auth_env_tokens_with_spaces_or_controls)
{
    static const char *const vt[] = {"VERCEL_TOKEN"};
    static const char *const st[] = {"SBXRUN_TOKEN"};
    clear_env();
    env("VERCEL_PROJECT_ID", "prj_env");
    env("VERCEL_TOKEN", "s3cret token");
    expect_env_error(true, SBX_E_AUTH, "s3cret", vt, 1);
    env("VERCEL_TOKEN", "s3cret\x1btoken");
    expect_env_error(true, SBX_E_AUTH, "s3cret", vt, 1);
    unsetenv("VERCEL_TOKEN");
    env("SBXRUN_TOKEN", "s3cret\ttoken");
    expect_env_error(false, SBX_E_AUTH, "s3cret", st, 1);
    clear_env();
}
END_TEST

/* ---- out of memory ---------------------------------------------------------- */

struct oom_ctx {
    const char *jwt;
};

static sbx_status oom_jwt_claims(void *ctx)
{
    struct oom_ctx *c = ctx;
    char *o = NULL, *p = NULL;
    int64_t e = 0;
    sbx_status st = sbx__jwt_claims(c->jwt, &o, &p, &e);
    if (st == SBX_OK) {
        /* Success means all the claims, never a silently missing one. */
        ck_assert_msg(o && strcmp(o, "team_oom") == 0, "owner_id lost: %s", o ? o : "NULL");
        ck_assert_msg(p && strcmp(p, "prj_oom") == 0, "project_id lost: %s", p ? p : "NULL");
        ck_assert_int_eq(e, FUTURE_EXP);
    } else {
        ck_assert_ptr_null(o);
        ck_assert_ptr_null(p);
    }
    sbx__free(o);
    sbx__free(p);
    return st;
}

START_TEST(test_auth_jwt_claims_out_of_memory)
{
    struct oom_ctx c;
    char *jwt = jwt_for("team_oom", "prj_oom", FUTURE_EXP);
    c.jwt = jwt;
    ck_assert_int_gt(sbx_test_oom_loop(oom_jwt_claims, &c), 0);
    free(jwt);
}
END_TEST

static sbx_status oom_auth_set_plain(void *ctx)
{
    struct sbx__auth a = {0};
    sbx__err err = {0};
    sbx_status st;
    (void)ctx;
    st = sbx__auth_set(&a, "plain-token", "team_t", "prj_p", &err);
    if (st == SBX_OK) {
        ck_assert_str_eq(a.token, "plain-token");
        ck_assert_str_eq(a.team, "team_t");
        ck_assert_str_eq(a.project, "prj_p");
    } else {
        ck_assert_int_eq(err.code, st);
        ck_assert_ptr_null(a.token);
    }
    sbx__auth_clear(&a);
    sbx__err_free(&err);
    return st;
}

START_TEST(test_auth_set_plain_out_of_memory)
{
    ck_assert_int_gt(sbx_test_oom_loop(oom_auth_set_plain, NULL), 0);
}
END_TEST

static sbx_status oom_auth_set_jwt(void *ctx)
{
    struct oom_ctx *c = ctx;
    struct sbx__auth a = {0};
    sbx__err err = {0};
    sbx_status st = sbx__auth_set(&a, c->jwt, NULL, NULL, &err);
    if (st == SBX_OK) {
        /* An allocation failure must not turn the OIDC token into a plain one. */
        ck_assert_msg(a.oidc, "the JWT was taken as a plain token");
        ck_assert_msg(a.team && strcmp(a.team, "team_oom") == 0, "team: %s", a.team ? a.team : "NULL");
        ck_assert_msg(a.project && strcmp(a.project, "prj_oom") == 0, "project: %s",
                      a.project ? a.project : "NULL");
        ck_assert_int_eq(a.expires, FUTURE_EXP);
    } else {
        ck_assert_int_eq(err.code, st);
        ck_assert_ptr_null(a.token);
    }
    sbx__auth_clear(&a);
    sbx__err_free(&err);
    return st;
}

START_TEST(test_auth_set_jwt_out_of_memory)
{
    struct oom_ctx c;
    char *jwt = jwt_for("team_oom", "prj_oom", FUTURE_EXP);
    c.jwt = jwt;
    ck_assert_int_gt(sbx_test_oom_loop(oom_auth_set_jwt, &c), 0);
    free(jwt);
}
END_TEST

static sbx_status oom_from_env(void *ctx)
{
    const char *want_source = ctx;
    struct sbx__auth a = {0};
    sbx__err err = {0};
    sbx_status st = sbx__auth_from_env(&a, true, &err);
    if (st == SBX_OK) {
        ck_assert_str_eq(a.source, want_source);
        ck_assert_str_eq(a.project, strcmp(want_source, "VERCEL_TOKEN") == 0 ? "prj_env" : "prj_oom");
    } else {
        ck_assert_int_eq(err.code, st);
        ck_assert_ptr_null(a.token);
    }
    sbx__auth_clear(&a);
    sbx__err_free(&err);
    return st;
}

START_TEST(test_auth_env_vercel_token_out_of_memory)
{
    clear_env();
    env("VERCEL_TOKEN", "vercel-token-value");
    env("VERCEL_PROJECT_ID", "prj_env");
    env("VERCEL_TEAM_ID", "team_env");
    ck_assert_int_gt(sbx_test_oom_loop(oom_from_env, (void *)"VERCEL_TOKEN"), 0);
    clear_env();
}
END_TEST

START_TEST(test_auth_env_oidc_out_of_memory)
{
    char *jwt = jwt_for("team_oom", "prj_oom", FUTURE_EXP);
    clear_env();
    env("VERCEL_OIDC_TOKEN", jwt);
    ck_assert_int_gt(sbx_test_oom_loop(oom_from_env, (void *)"VERCEL_OIDC_TOKEN"), 0);
    clear_env();
    free(jwt);
}
END_TEST

/* ---- the token file beside a unix socket ---------------------------------------------- */

/* A temporary directory standing for sbxd's state directory. */
struct tokdir {
    char dir[64];
    char sock[128];  /* "unix:DIR/sbxd.sock" (nothing listens: resolving sends nothing) */
    char path[128];  /* DIR/token */
};

static void tokdir_make(struct tokdir *t)
{
    strcpy(t->dir, "/tmp/sbx-auth-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(t->dir));
    snprintf(t->sock, sizeof t->sock, "unix:%s/sbxd.sock", t->dir);
    snprintf(t->path, sizeof t->path, "%s/token", t->dir);
}

static void tokdir_write(const struct tokdir *t, const char *data, size_t n)
{
    FILE *f = fopen(t->path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

static void tokdir_remove(struct tokdir *t)
{
    if (unlink(t->path) != 0)
        rmdir(t->path);
    ck_assert_int_eq(rmdir(t->dir), 0);
}

/* A client for t's socket, credentials resolved (or not); the caller frees it. */
static sbx_client *tok_client(const struct tokdir *t, sbx_status want)
{
    sbx_client *c = sbx_client_new();
    sbx_status st;
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(sbx_client_set_endpoint(c, t->sock), SBX_OK);
    st = sbx_client_resolve_credentials(c);
    ck_assert_msg(st == want, "resolve: %s, wanted %s: %s", sbx_status_name(st), sbx_status_name(want),
                  sbx_client_last_error(c));
    return c;
}

/* A bad token file: SBX_E_AUTH, and the message names the file and what is wrong. */
static void expect_file_error(const struct tokdir *t, const char *why)
{
    sbx_client *c = tok_client(t, SBX_E_AUTH);
    ck_assert_msg(strstr(sbx_client_last_error(c), t->path), "'%s' lacks %s", sbx_client_last_error(c), t->path);
    ck_assert_msg(strstr(sbx_client_last_error(c), why), "'%s' lacks '%s'", sbx_client_last_error(c), why);
    sbx_client_free(c);
}

START_TEST(test_auth_file_beside_socket)
{
    struct tokdir t;
    sbx_client *c;
    clear_env();
    unsetenv("SBXRUN_ENDPOINT");
    tokdir_make(&t);
    tokdir_write(&t, "tok_from_file_0123\n", 19);
    c = tok_client(&t, SBX_OK);
    ck_assert_str_eq(c->core->auth.token, "tok_from_file_0123");
    ck_assert_str_eq(c->core->auth.source, "token file");
    sbx_client_free(c);
    /* CRLF, and no newline at all, read the same. */
    tokdir_write(&t, "tok_from_file_0123\r\n", 20);
    c = tok_client(&t, SBX_OK);
    ck_assert_str_eq(c->core->auth.token, "tok_from_file_0123");
    sbx_client_free(c);
    tokdir_write(&t, "tok_from_file_0123", 18);
    c = tok_client(&t, SBX_OK);
    ck_assert_str_eq(c->core->auth.token, "tok_from_file_0123");
    sbx_client_free(c);
    tokdir_remove(&t);
}
END_TEST

START_TEST(test_auth_file_order)
{
    struct tokdir t;
    sbx_client *c;
    clear_env();
    unsetenv("SBXRUN_ENDPOINT");
    tokdir_make(&t);
    tokdir_write(&t, "tok_from_file\n", 14);
    /* The environment wins over the file... */
    env("SBXRUN_TOKEN", "tok_from_env");
    c = tok_client(&t, SBX_OK);
    ck_assert_str_eq(c->core->auth.token, "tok_from_env");
    ck_assert_str_eq(c->core->auth.source, "SBXRUN_TOKEN");
    sbx_client_free(c);
    /* ...and explicit credentials win over the environment. */
    c = sbx_client_new();
    ck_assert_int_eq(sbx_client_set_endpoint(c, t.sock), SBX_OK);
    ck_assert_int_eq(sbx_client_set_credentials(c, "tok_explicit", NULL, NULL), SBX_OK);
    ck_assert_int_eq(sbx_client_resolve_credentials(c), SBX_OK);
    ck_assert_str_eq(c->core->auth.token, "tok_explicit");
    sbx_client_free(c);
    /* A Vercel token in the environment is not sent to a local server that has
     * its own token file; without the file it is tried. */
    clear_env();
    env("VERCEL_TOKEN", "vercel-token-value");
    c = tok_client(&t, SBX_OK);
    ck_assert_str_eq(c->core->auth.token, "tok_from_file");
    sbx_client_free(c);
    ck_assert_int_eq(rename(t.path, "/tmp/sbx-auth-moved-token"), 0);
    c = tok_client(&t, SBX_OK);
    ck_assert_str_eq(c->core->auth.source, "VERCEL_TOKEN");
    sbx_client_free(c);
    ck_assert_int_eq(rename("/tmp/sbx-auth-moved-token", t.path), 0);
    clear_env();
    /* An environment credential that is wrong is reported, not skipped for the file. */
    env("SBXRUN_TOKEN", "bad token");
    c = tok_client(&t, SBX_E_AUTH);
    ck_assert(strstr(sbx_client_last_error(c), "SBXRUN_TOKEN"));
    sbx_client_free(c);
    clear_env();
    /* Only a unix socket has a file beside it. */
    c = sbx_client_new();
    ck_assert_int_eq(sbx_client_set_endpoint(c, "http://127.0.0.1:1"), SBX_OK);
    ck_assert_int_eq(sbx_client_resolve_credentials(c), SBX_E_AUTH);
    ck_assert(strstr(sbx_client_last_error(c), "SBXRUN_TOKEN"));
    sbx_client_free(c);
    tokdir_remove(&t);
}
END_TEST

START_TEST(test_auth_file_errors_name_the_path)
{
    struct tokdir t;
    char big[5000];
    clear_env();
    unsetenv("SBXRUN_ENDPOINT");
    tokdir_make(&t);
    /* Missing: the message also says what else would do. */
    expect_file_error(&t, "SBXRUN_TOKEN");
    tokdir_write(&t, "", 0);
    expect_file_error(&t, "empty");
    tokdir_write(&t, "\n", 1);
    expect_file_error(&t, "empty");
    tokdir_write(&t, "two words\n", 10);
    expect_file_error(&t, "spaces");
    memset(big, 'a', sizeof big);
    tokdir_write(&t, big, sizeof big);
    expect_file_error(&t, "larger than 4096");
    tokdir_write(&t, big, 4096); /* the limit itself is fine */
    sbx_client_free(tok_client(&t, SBX_OK));
    ck_assert_int_eq(unlink(t.path), 0);
    ck_assert_int_eq(mkdir(t.path, 0700), 0);
    expect_file_error(&t, "not a regular file");
    ck_assert_int_eq(rmdir(t.path), 0);
    ck_assert_int_eq(symlink("/etc/hostname", t.path), 0);
    expect_file_error(&t, "symbolic link");
    tokdir_remove(&t);
}
END_TEST

static sbx_status oom_from_file(void *ctx)
{
    const char *sock = ctx;
    struct sbx__auth a = {0};
    sbx__err err = {0};
    sbx_status st = sbx__auth_resolve(&a, false, sock, &err);
    if (st == SBX_OK)
        ck_assert_str_eq(a.token, "tok_oom");
    else
        ck_assert_ptr_null(a.token);
    sbx__auth_clear(&a);
    sbx__err_free(&err);
    return st;
}

START_TEST(test_auth_file_out_of_memory)
{
    struct tokdir t;
    clear_env();
    tokdir_make(&t);
    tokdir_write(&t, "tok_oom\n", 8);
    ck_assert_int_gt(sbx_test_oom_loop(oom_from_file, t.sock + 5), 0);
    tokdir_remove(&t);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("auth");
    TCase *jwt = tcase_create("jwt");
    TCase *set = tcase_create("set");
    TCase *fromenv = tcase_create("env");
    TCase *oom = tcase_create("oom");

    SBX_TEST_ADD(jwt, test_auth_jwt_claims_valid_unpadded);
    SBX_TEST_ADD(jwt, test_auth_jwt_claims_with_url_alphabet_characters);
    SBX_TEST_ADD(jwt, test_auth_jwt_claims_every_payload_length_mod_3);
    SBX_TEST_ADD(jwt, test_auth_jwt_claims_with_padding_chars);
    SBX_TEST_ADD(jwt, test_auth_jwt_claims_missing_or_not_strings);
    SBX_TEST_ADD(jwt, test_auth_jwt_claims_payload_not_a_json_object);
    SBX_TEST_ADD(jwt, test_auth_jwt_claims_wrong_number_of_dots);
    SBX_TEST_ADD(jwt, test_auth_jwt_claims_bad_base64);
    SBX_TEST_ADD(jwt, test_auth_jwt_claims_impossible_base64_length);
    SBX_TEST_ADD(jwt, test_auth_jwt_claims_real_exp_saturated);
    suite_add_tcase(s, jwt);

    SBX_TEST_ADD(set, test_auth_set_rejects_spaces_and_controls);
    SBX_TEST_ADD(set, test_auth_set_plain_token);
    SBX_TEST_ADD(set, test_auth_set_jwt_becomes_oidc);
    SBX_TEST_ADD(set, test_auth_set_explicit_scope_overrides_claims);
    SBX_TEST_ADD(set, test_auth_set_expired_jwt_refused);
    SBX_TEST_ADD(set, test_auth_expired);
    SBX_TEST_ADD(set, test_auth_clear_resets_every_field);
    suite_add_tcase(s, set);

    SBX_TEST_ADD(fromenv, test_auth_env_oidc_beats_vercel_token);
    SBX_TEST_ADD(fromenv, test_auth_env_vercel_token_needs_project);
    SBX_TEST_ADD(fromenv, test_auth_env_nothing_set);
    SBX_TEST_ADD(fromenv, test_auth_env_sbxd_endpoint_uses_sbxrun_token);
    SBX_TEST_ADD(fromenv, test_auth_env_malformed_oidc_token);
    SBX_TEST_ADD(fromenv, test_auth_env_expired_oidc_token);
    SBX_TEST_ADD(fromenv, test_auth_env_tokens_with_spaces_or_controls);
    SBX_TEST_ADD(fromenv, test_auth_file_beside_socket);
    SBX_TEST_ADD(fromenv, test_auth_file_order);
    SBX_TEST_ADD(fromenv, test_auth_file_errors_name_the_path);
    suite_add_tcase(s, fromenv);

    SBX_TEST_ADD(oom, test_auth_jwt_claims_out_of_memory);
    SBX_TEST_ADD(oom, test_auth_set_plain_out_of_memory);
    SBX_TEST_ADD(oom, test_auth_set_jwt_out_of_memory);
    SBX_TEST_ADD(oom, test_auth_env_vercel_token_out_of_memory);
    SBX_TEST_ADD(oom, test_auth_env_oidc_out_of_memory);
    SBX_TEST_ADD(oom, test_auth_file_out_of_memory);
    suite_add_tcase(s, oom);
    return s;
}
