/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the client suites (test_client*.c): a libsbxrun client bound to
 * the test's sbxd, sandboxes and commands through the public API only, with
 * assertions that print the handle's last error.
 */
#ifndef SBX_CLIENT_IT_H
#define SBX_CLIENT_IT_H

#include <sbxrun/sbxrun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Assert a status, printing the message of the handle that failed. */
#define expect_st(call, want, errfn, h)                                                            \
    do {                                                                                           \
        sbx_status st_ = (call);                                                                   \
        ck_assert_msg(st_ == (want), "%s: expected %s, got %s: %s", #call, sbx_status_name(want),  \
                      sbx_status_name(st_), errfn(h));                                             \
    } while (0)
#define ok_c(call, c) expect_st(call, SBX_OK, sbx_client_last_error, c)
#define ok_s(call, s) expect_st(call, SBX_OK, sbx_sandbox_last_error, s)
#define ok_cmd(call, k) expect_st(call, SBX_OK, sbx_command_last_error, k)
#define ok_sn(call, sn) expect_st(call, SBX_OK, sbx_snapshot_last_error, sn)

/* Every client of these suites speaks the protocol version SBX_IT_PROTOCOL
 * names (v1 or v2; unset: the library's default, v2), so each suite runs
 * against sbxd once per version. */
static inline sbx_client *it_client_new_(void)
{
    sbx_client *c = (sbx_client_new)();
    const char *p = getenv("SBX_IT_PROTOCOL");
    /* A client born with an error (a bad SBXRUN_ENDPOINT) keeps it for
     * the test to read: it sends nothing, so its version does not matter. */
    if (c && p && *p && !*sbx_client_last_error(c))
        ck_assert_msg(sbx_client_set_option(c, "protocol", p) == SBX_OK, "protocol %s: %s", p,
                      sbx_client_last_error(c));
    return c;
}
#define sbx_client_new() it_client_new_()

/* Whether this run speaks the 2.x protocol (the default; SBX_IT_PROTOCOL=v1
 * makes it v1). */
static inline bool it_v2(void)
{
    const char *p = getenv("SBX_IT_PROTOCOL");
    return !p || !*p || strcmp(p, "v1") != 0;
}
/* The path a sandbox's create goes to in this run, as a faultd pattern. */
#define IT_CREATE_RE (it_v2() ? "/v3/sandboxes$" : "/v1/sandboxes$")
/* Where a sandbox's (session's) own routes are, before "/ID". */
#define IT_SESSIONS (it_v2() ? "/v2/sandboxes/sessions" : "/v1/sandboxes")
/* ...and a list of sandboxes. */
#define IT_LIST_RE (it_v2() ? "/v2/sandboxes$" : "/v1/sandboxes$")

/* A client talking to d over its unix socket with its token. */
static inline sbx_client *it_client(struct sbxd *d)
{
    char ep[400];
    sbx_client *c = sbx_client_new();
    ck_assert_ptr_nonnull(c);
    snprintf(ep, sizeof ep, "unix:%s", d->sock);
    ok_c(sbx_client_set_endpoint(c, ep), c);
    ok_c(sbx_client_set_credentials(c, d->token, NULL, NULL), c);
    return c;
}

/* A new sandbox (server defaults), created. */
static inline sbx_sandbox *it_sandbox(sbx_client *c)
{
    sbx_sandbox *s = sbx_sandbox_new(c);
    ck_assert_ptr_nonnull(s);
    ok_s(sbx_sandbox_create(s), s);
    ck_assert_ptr_nonnull(sbx_sandbox_id(s));
    return s;
}

/* Output collected by an output callback. */
struct it_out {
    char *data[2];
    size_t len[2];
    int order_errors;
    unsigned calls;
    int stop_after; /* >0: return non-zero on that call */
};

static inline int it_collect(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    struct it_out *o = user;
    int i = stream == SBX_STREAM_STDERR ? 1 : 0;
    if (stream != SBX_STREAM_STDOUT && stream != SBX_STREAM_STDERR)
        o->order_errors++;
    o->data[i] = realloc(o->data[i], o->len[i] + len + 1);
    ck_assert_ptr_nonnull(o->data[i]);
    memcpy(o->data[i] + o->len[i], data, len);
    o->len[i] += len;
    o->data[i][o->len[i]] = '\0';
    o->calls++;
    return o->stop_after > 0 && (int)o->calls >= o->stop_after;
}

static inline void it_out_free(struct it_out *o)
{
    free(o->data[0]);
    free(o->data[1]);
    memset(o, 0, sizeof *o);
}

static inline const char *it_str(const struct it_out *o, int i)
{
    return o->data[i] ? o->data[i] : "";
}

/* A command `sh -c SCRIPT` with output collected into o (when not NULL). */
static inline sbx_command *it_sh_cmd(sbx_sandbox *s, const char *script, struct it_out *o)
{
    const char *argv[] = {"sh", "-c", script};
    sbx_command *k = sbx_command_new(s);
    ck_assert_ptr_nonnull(k);
    ok_cmd(sbx_command_set_argv(k, 3, argv), k);
    if (o)
        ok_cmd(sbx_command_set_output_cb(k, it_collect, o), k);
    return k;
}

/* Run `sh -c SCRIPT` to its end; returns the exit code; output into o. */
static inline int it_sh(sbx_sandbox *s, const char *script, struct it_out *o)
{
    sbx_command *k = it_sh_cmd(s, script, o);
    int code;
    ok_cmd(sbx_command_run(k), k);
    code = sbx_command_exit_code(k);
    sbx_command_free(k);
    return code;
}

/* The stdout of `sh -c SCRIPT`, asserting exit code 0 (malloc'd). */
static inline char *it_sh_out(sbx_sandbox *s, const char *script)
{
    struct it_out o = {0};
    int code = it_sh(s, script, &o);
    char *r;
    ck_assert_msg(code == 0, "`%s` exited %d: %s", script, code, it_str(&o, 1));
    r = strdup(it_str(&o, 0));
    it_out_free(&o);
    return r;
}

#define expect_sh_out(s, script, want)                                                            \
    do {                                                                                           \
        char *out_ = it_sh_out((s), (script));                                                     \
        ck_assert_str_eq(out_, (want));                                                            \
        free(out_);                                                                                \
    } while (0)

#endif /* SBX_CLIENT_IT_H */
