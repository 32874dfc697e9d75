/* SPDX-License-Identifier: MIT */
/*
 * client_faults: the public libsbxrun API through faultd (faultd.h), a proxy
 * in front of a real sbxd that injects failures: 5xx before and after the
 * request reached the server, 429 with Retry-After, resets before and in the
 * middle of a response, stalls, cut NDJSON streams, one-byte and slow
 * writes, invalid JSON, huge headers. Each test checks the status, the
 * message, and that nothing the client must not repeat (creating a sandbox,
 * starting a command) happened twice.
 *
 * Side effects are read from sbxd directly (harness helpers over its unix
 * socket), never through the proxy.
 */
#include <sbxrun/sbxrun.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_it.h"
#include "faultd.h"
#include "harness.h"

#define COUNT_FILE "/vercel/sandbox/count"
#define COUNT_SCRIPT "echo x >> " COUNT_FILE

#define expect_sbx(call, want, errfn, h)                                                           \
    do {                                                                                           \
        sbx_status st_ = (call);                                                                   \
        ck_assert_msg(st_ == (want), "%s: expected %s, got %s: %s", #call, sbx_status_name(want),  \
                      sbx_status_name(st_), errfn(h));                                             \
    } while (0)
#define ok_cl(call, c) expect_sbx(call, SBX_OK, sbx_client_last_error, c)
#define ok_sb(call, s) expect_sbx(call, SBX_OK, sbx_sandbox_last_error, s)
#define ok_k(call, k) expect_sbx(call, SBX_OK, sbx_command_last_error, k)

/* FAULTS_VERBOSE=1 prints the messages the client gave. */
static void note(const char *what, const char *msg)
{
    if (getenv("FAULTS_VERBOSE"))
        fprintf(stderr, "# %s: %s\n", what, msg);
}

/* ---- fixtures ------------------------------------------------------------------------ */

struct fx {
    struct sbxd *d;
    struct faultd *f;
    sbx_client *c;
    char *sid;          /* a sandbox made directly on sbxd (fx_start with_sandbox) */
    sbx_sandbox *s;     /* the client's handle on it */
};

static sbx_client *fx_client(struct fx *x, const char *retry_max, const char *timeout_ms)
{
    sbx_client *c = sbx_client_new();
    ck_assert_ptr_nonnull(c);
    ok_cl(sbx_client_set_endpoint(c, faultd_url(x->f)), c);
    ok_cl(sbx_client_set_credentials(c, x->d->token, NULL, NULL), c);
    if (retry_max)
        ok_cl(sbx_client_set_option(c, "retry.max", retry_max), c);
    if (timeout_ms)
        ok_cl(sbx_client_set_option(c, "timeout_ms", timeout_ms), c);
    return c;
}

/* sbxd, the proxy, a client through it; with_sandbox: a sandbox made on sbxd
 * directly and attached by the client (a clean GET through the proxy). */
static void fx_start(struct fx *x, bool with_sandbox, const char *retry_max, const char *timeout_ms)
{
    memset(x, 0, sizeof *x);
    x->d = sbxd_start(NULL, NULL);
    x->f = faultd_start(x->d);
    x->c = fx_client(x, retry_max, timeout_ms);
    if (with_sandbox) {
        x->sid = sbx_create(x->d, NULL);
        x->s = sbx_sandbox_new(x->c);
        ck_assert_ptr_nonnull(x->s);
        ok_sb(sbx_sandbox_fetch(x->s, x->sid), x->s);
    }
}

static void fx_stop(struct fx *x)
{
    sbx_sandbox_free(x->s);
    sbx_client_free(x->c);
    faultd_stop(x->f);
    sbxd_stop(x->d);
    free(x->sid);
    memset(x, 0, sizeof *x);
}

/* The sandbox's own path + tail, anchored at the end of the path:
 * "/v1/sandboxes/SID", or the session's "/v2/sandboxes/sessions/SID". */
static const char *sbx_pat(const struct fx *x, const char *tail)
{
    static char buf[4][256];
    static int i;
    char *b = buf[i++ & 3];
    snprintf(b, sizeof buf[0], "%s/%s%s$", IT_SESSIONS, x->sid, tail);
    return b;
}

/* For the tests of the log stream's repair. In v2 a waited command's output
 * comes in its start stream and /logs is not asked; there these tests
 * follow with command.follow=logs, where /logs brings the output (the
 * repair code is the same; the inline cases have tests of their own). */
static void via_logs(struct fx *x)
{
    if (it_v2())
        ok_cl(sbx_client_set_option(x->c, "command.follow", "logs"), x->c);
}

/* ---- side effects, read from sbxd directly ------------------------------------------------ */

static int direct_sandbox_count(struct sbxd *d)
{
    struct http_resp *r = http_get(d, "/v1/sandboxes?limit=100");
    int n;
    expect_status(r, 200);
    ck_assert_msg(json_is_array(json_object_get(r->json, "sandboxes")), "list: %s", r->body);
    n = (int)json_array_size(json_object_get(r->json, "sandboxes"));
    http_resp_free(r);
    return n;
}

/* Lines of a file in the sandbox, 0 when it does not exist. */
static int direct_file_lines(struct sbxd *d, const char *sid, const char *path)
{
    struct http_resp *r = sbx_fs_read(d, sid, path, NULL);
    int n = 0;
    if (r->status != 404) {
        expect_status(r, 200);
        for (size_t i = 0; i < r->len; i++)
            n += r->body[i] == '\n';
    }
    http_resp_free(r);
    return n;
}

/* Wait (up to 5 s) for the count file to get a line, then a little longer
 * for a second one that must not come; returns the final count. */
static int settled_count(struct sbxd *d, const char *sid)
{
    int64_t until = mono_ms() + 5000;
    while (direct_file_lines(d, sid, COUNT_FILE) == 0 && mono_ms() < until)
        usleep(50000);
    usleep(400000);
    return direct_file_lines(d, sid, COUNT_FILE);
}

/* ---- commands through the client ------------------------------------------------------------ */

struct outbuf {
    char *data[2];
    size_t len[2];
};

static int collect(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    struct outbuf *o = user;
    int i = stream == SBX_STREAM_STDERR ? 1 : 0;
    ck_assert(stream == SBX_STREAM_STDOUT || stream == SBX_STREAM_STDERR);
    o->data[i] = realloc(o->data[i], o->len[i] + len + 1);
    ck_assert_ptr_nonnull(o->data[i]);
    memcpy(o->data[i] + o->len[i], data, len);
    o->len[i] += len;
    o->data[i][o->len[i]] = '\0';
    return 0;
}

static void outbuf_free(struct outbuf *o)
{
    free(o->data[0]);
    free(o->data[1]);
    memset(o, 0, sizeof *o);
}

static sbx_command *sh_cmd(sbx_sandbox *s, const char *script, struct outbuf *o)
{
    const char *argv[] = {"sh", "-c", script};
    sbx_command *k = sbx_command_new(s);
    ck_assert_ptr_nonnull(k);
    ok_k(sbx_command_set_argv(k, 3, argv), k);
    if (o)
        ok_k(sbx_command_set_output_cb(k, collect, o), k);
    return k;
}

/* Everything left in a command's buffer for one stream (malloc'd). */
static char *drain(sbx_command *k, int stream, size_t *len)
{
    size_t cap = 1 << 16, n = 0, got;
    char *b = malloc(cap + 1);
    sbx_status st;
    ck_assert_ptr_nonnull(b);
    for (;;) {
        if (cap - n < 4096) {
            cap *= 2;
            b = realloc(b, cap + 1);
            ck_assert_ptr_nonnull(b);
        }
        st = sbx_command_read_output(k, stream, (uint8_t *)b + n, cap - n, &got);
        if (st != SBX_OK)
            break;
        n += got;
    }
    ck_assert_msg(st == SBX_E_NOT_FOUND, "read_output ended with %s", sbx_status_name(st));
    b[n] = '\0';
    *len = n;
    return b;
}

/* The output of `seq 1 n`. */
static char *seq_text(int n, size_t *len)
{
    size_t cap = (size_t)n * 8 + 16, o = 0;
    char *b = malloc(cap);
    ck_assert_ptr_nonnull(b);
    for (int i = 1; i <= n; i++)
        o += (size_t)snprintf(b + o, cap - o, "%d\n", i);
    *len = o;
    return b;
}

/* 20000 lines in four bursts 200 ms apart: the log stream is live. */
#define SEQ_N 20000
#define SEQ_SCRIPT                                                                                 \
    "for i in 0 1 2 3; do seq $((i * 5000 + 1)) $((i * 5000 + 5000)); sleep 0.2; done"

static void expect_seq(const char *got, size_t len)
{
    size_t wlen;
    char *want = seq_text(SEQ_N, &wlen);
    ck_assert_msg(len == wlen, "output is %zu bytes, expected %zu", len, wlen);
    if (memcmp(got, want, wlen) != 0) {
        size_t i = 0;
        while (got[i] == want[i])
            i++;
        ck_abort_msg("output differs at byte %zu: got \"%.20s\" expected \"%.20s\"", i, got + i, want + i);
    }
    free(want);
}

/* ---- GET: transient failures are retried ------------------------------------------------------------ */

START_TEST(test_client_faults_get_transient_retried)
{
    struct fx x;
    const char *get = NULL;
    sbx_sandbox *s2;
    int64_t t0;

    fx_start(&x, true, NULL, NULL);
    get = sbx_pat(&x, "");
    /* 500 then 502 (neither forwarded): the third attempt gets through. */
    faultd_rule(x.f, "GET", get, 1, FAULT_STATUS, 500);
    faultd_rule(x.f, "GET", get, 2, FAULT_STATUS, 502);
    t0 = mono_ms();
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    ck_assert_str_eq(sbx_sandbox_status(x.s), "running");
    ck_assert_int_eq(faultd_count(x.f, "GET", get), 1 + 3);
    ck_assert_msg(mono_ms() - t0 >= 100, "retries came without a backoff (%lld ms)", (long long)(mono_ms() - t0));

    /* 503 after forwarding, then a reset before any response byte. */
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 1, FAULT_STATUS_AFTER, 503);
    faultd_rule(x.f, "GET", get, 2, FAULT_RESET, 0);
    s2 = sbx_sandbox_new(x.c);
    ok_sb(sbx_sandbox_fetch(s2, x.sid), s2);
    ck_assert_str_eq(sbx_sandbox_id(s2), x.sid);
    ck_assert_str_eq(sbx_sandbox_status(s2), "running");
    sbx_sandbox_free(s2);

    /* Reset after sbxd answered, then in the middle of the body. */
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 1, FAULT_RESET_AFTER, 0);
    faultd_rule(x.f, "GET", get, 2, FAULT_RESET_MID, 20);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    ck_assert_str_eq(sbx_sandbox_status(x.s), "running");
    ck_assert_int_ge(faultd_faulted(x.f), 6);
    fx_stop(&x);
}
END_TEST

/* Without retry.max, a request is tried as the SDKs of the protocol spoken
 * try it: 3 times in v2 (3.x), 6 times in v1 (1.x); setting the protocol
 * after retry.max leaves the caller's count. */
START_TEST(test_client_faults_default_attempts)
{
    struct fx x;
    const char *get;
    int n0;
    sbx_client *c;

    fx_start(&x, true, NULL, NULL);
    get = sbx_pat(&x, "");
    faultd_rule(x.f, "GET", get, 0, FAULT_STATUS, 503);
    n0 = faultd_count(x.f, "GET", get);
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_HTTP, sbx_sandbox_last_error, x.s);
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, it_v2() ? 3 : 6);

    c = sbx_client_new();
    ok_cl(sbx_client_set_option(c, "retry.max", "1"), c);
    ok_cl(sbx_client_set_option(c, "protocol", it_v2() ? "v1" : "v2"), c);
    ok_cl(sbx_client_set_option(c, "protocol", it_v2() ? "v2" : "v1"), c);
    ok_cl(sbx_client_set_endpoint(c, faultd_url(x.f)), c);
    ok_cl(sbx_client_set_credentials(c, x.d->token, NULL, NULL), c);
    {
        sbx_sandbox *s = sbx_sandbox_new(c);
        n0 = faultd_count(x.f, "GET", get);
        expect_sbx(sbx_sandbox_fetch(s, x.sid), SBX_E_HTTP, sbx_sandbox_last_error, s);
        ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 2);
        sbx_sandbox_free(s);
    }
    sbx_client_free(c);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_get_exhausted)
{
    struct fx x;
    const char *get;
    int n0, n;

    fx_start(&x, true, "2", NULL);
    get = sbx_pat(&x, "");
    n0 = faultd_count(x.f, "GET", get);
    faultd_rule(x.f, "GET", get, 0, FAULT_STATUS, 503);
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_HTTP, sbx_sandbox_last_error, x.s);
    ck_assert_msg(contains(sbx_sandbox_last_error(x.s), "503"), "message: %s", sbx_sandbox_last_error(x.s));
    /* 1 attempt + retry.max retries. */
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 3);

    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 0, FAULT_STATUS_AFTER, 500);
    n0 = faultd_count(x.f, "GET", get);
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_HTTP, sbx_sandbox_last_error, x.s);
    ck_assert_msg(contains(sbx_sandbox_last_error(x.s), "500"), "message: %s", sbx_sandbox_last_error(x.s));
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 3);

    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 0, FAULT_RESET, 0);
    n0 = faultd_count(x.f, "GET", get);
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_TRANSPORT, sbx_sandbox_last_error, x.s);
    ck_assert_msg(sbx_sandbox_last_error(x.s)[0] != '\0', "no message");
    ck_assert_msg(contains(sbx_sandbox_last_error(x.s), "get sandbox"), "message: %s", sbx_sandbox_last_error(x.s));
    /* libcurl itself may resend once on a fresh connection when a reused
     * one dies before any answer: 3 attempts, each seen once or twice. */
    n = faultd_count(x.f, "GET", get) - n0;
    ck_assert_msg(n >= 3 && n <= 6, "%d requests for 3 attempts", n);

    /* The client is still usable. */
    faultd_clear(x.f);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);

    /* list, fs/read and command get give up the same way. */
    {
        char *json = NULL, *data = NULL, *cid, pat[256];
        size_t len = 0;
        sbx_command *k;
        faultd_rule(x.f, "GET", IT_LIST_RE, 0, FAULT_STATUS_AFTER, 502);
        expect_sbx(sbx_client_list_sandboxes(x.c, NULL, 0, -1, -1, &json), SBX_E_HTTP, sbx_client_last_error, x.c);
        note("list 502 every time", sbx_client_last_error(x.c));
        ck_assert_ptr_null(json);
        ck_assert_int_eq(faultd_count(x.f, "GET", IT_LIST_RE), 3);
        faultd_rule(x.f, "POST", "/fs/read$", 0, FAULT_RESET_AFTER, 0);
        expect_sbx(sbx_sandbox_read_file(x.s, "nope.txt", 0, (uint8_t **)&data, &len), SBX_E_TRANSPORT, sbx_sandbox_last_error,
                   x.s);
        note("fs/read reset every time", sbx_sandbox_last_error(x.s));
        ck_assert_int_ge(faultd_count(x.f, "POST", "/fs/read$"), 3);
        cid = sbx_detach_sh(x.d, x.sid, "true");
        snprintf(pat, sizeof pat, "/cmd/%s$", cid);
        faultd_rule(x.f, "GET", pat, 0, FAULT_STATUS, 500);
        k = sbx_command_new(x.s);
        expect_sbx(sbx_command_fetch(k, cid), SBX_E_HTTP, sbx_command_last_error, k);
        note("command get 500 every time", sbx_command_last_error(k));
        ck_assert_int_eq(faultd_count(x.f, "GET", pat), 3);
        sbx_command_free(k);
        free(cid);
    }
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_get_others_retried)
{
    struct fx x;
    sbx_command *k;
    char *json = NULL, *data = NULL, *cid, pat[256];
    size_t len = 0;
    static const char content[] = "line one\nline two\n\xe2\x82\xac\n";

    fx_start(&x, true, NULL, NULL);

    /* list */
    faultd_rule(x.f, "GET", IT_LIST_RE, 1, FAULT_STATUS, 502);
    faultd_rule(x.f, "GET", IT_LIST_RE, 2, FAULT_RESET, 0);
    ok_cl(sbx_client_list_sandboxes(x.c, NULL, 0, -1, -1, &json), x.c);
    /* 2.x lists named sandboxes; the fixture's was made by v1 directly */
    ck_assert_msg(it_v2() ? contains(json, "\"sandboxes\"") : contains(json, x.sid), "list: %s", json);
    sbx_free(json);
    ck_assert_int_ge(faultd_count(x.f, "GET", IT_LIST_RE), 3);

    /* command get */
    cid = sbx_detach_sh(x.d, x.sid, "echo hi");
    ck_assert_int_eq(sbx_cmd_wait(x.d, x.sid, cid), 0);
    snprintf(pat, sizeof pat, "/cmd/%s$", cid);
    faultd_rule(x.f, "GET", pat, 1, FAULT_STATUS, 500);
    faultd_rule(x.f, "GET", pat, 2, FAULT_RESET_AFTER, 0);
    faultd_rule(x.f, "GET", pat, 3, FAULT_STATUS_AFTER, 503);
    k = sbx_command_new(x.s);
    ok_k(sbx_command_fetch(k, cid), k);
    ck_assert_str_eq(sbx_command_id(k), cid);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    ck_assert_int_ge(faultd_count(x.f, "GET", pat), 4);
    sbx_command_free(k);
    free(cid);

    /* fs/read */
    sbx_write_file(x.d, x.sid, "/vercel/sandbox/r.txt", content, sizeof content - 1, 0644);
    faultd_rule(x.f, "POST", "/fs/read$", 1, FAULT_STATUS, 503);
    faultd_rule(x.f, "POST", "/fs/read$", 2, FAULT_RESET, 0);
    faultd_rule(x.f, "POST", "/fs/read$", 3, FAULT_RESET_AFTER, 0);
    ok_sb(sbx_sandbox_read_file(x.s, "r.txt", 0, (uint8_t **)&data, &len), x.s);
    ck_assert_uint_eq(len, sizeof content - 1);
    ck_assert_mem_eq(data, content, len);
    sbx_free(data);
    ck_assert_int_ge(faultd_count(x.f, "POST", "/fs/read$"), 4);
    fx_stop(&x);
}
END_TEST

/* ---- POST create: never sent twice ------------------------------------------------------------------ */

/* A create whose outcome is unknown says so: SBX_E_TRANSPORT, and a message
 * that starts by telling the caller a sandbox may exist. */
static void expect_may_exist(sbx_sandbox *s)
{
    expect_sbx(sbx_sandbox_create(s), SBX_E_TRANSPORT, sbx_sandbox_last_error, s);
    ck_assert_msg(strncmp(sbx_sandbox_last_error(s), "a sandbox may exist: ", 21) == 0, "message: %s",
                  sbx_sandbox_last_error(s));
    ck_assert_ptr_null(sbx_sandbox_id(s));
}

START_TEST(test_client_faults_create_5xx_after_forward)
{
    struct fx x;
    sbx_sandbox *s;

    fx_start(&x, false, NULL, NULL);
    faultd_rule(x.f, "POST", IT_CREATE_RE, 1, FAULT_STATUS_AFTER, 500);
    s = sbx_sandbox_new(x.c);
    /* The server made it and said 500: the client cannot tell. */
    expect_may_exist(s);
    ck_assert_msg(contains(sbx_sandbox_last_error(s), "500"), "message: %s", sbx_sandbox_last_error(s));
    ck_assert_int_eq(faultd_count(x.f, "POST", IT_CREATE_RE), 1);
    ck_assert_int_eq(faultd_forwarded(x.f, "POST", IT_CREATE_RE), 1);
    ck_assert_int_eq(direct_sandbox_count(x.d), 1);
    sbx_sandbox_free(s);

    /* 502 after forwarding, on a kept-alive connection this time (a rule
     * counts the requests that come after it was added). */
    faultd_rule(x.f, "POST", IT_CREATE_RE, 1, FAULT_STATUS_AFTER, 502);
    s = sbx_sandbox_new(x.c);
    expect_may_exist(s);
    ck_assert_int_eq(faultd_count(x.f, "POST", IT_CREATE_RE), 2);
    ck_assert_int_eq(direct_sandbox_count(x.d), 2);
    sbx_sandbox_free(s);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_create_reset_after_forward)
{
    struct fx x;
    sbx_sandbox *s;

    fx_start(&x, false, NULL, NULL);
    faultd_rule(x.f, "POST", IT_CREATE_RE, 1, FAULT_RESET_AFTER, 0);
    faultd_rule(x.f, "POST", IT_CREATE_RE, 2, FAULT_RESET_MID, 10);
    s = sbx_sandbox_new(x.c);
    expect_may_exist(s);
    ck_assert_msg(contains(sbx_sandbox_last_error(s), "may have reached the server"), "message: %s",
                  sbx_sandbox_last_error(s));
    ck_assert_int_eq(faultd_count(x.f, "POST", IT_CREATE_RE), 1);
    ck_assert_int_eq(direct_sandbox_count(x.d), 1);
    sbx_sandbox_free(s);

    /* Cut in the middle of the answer's body. */
    s = sbx_sandbox_new(x.c);
    expect_may_exist(s);
    ck_assert_msg(contains(sbx_sandbox_last_error(s), "may have reached the server"), "message: %s",
                  sbx_sandbox_last_error(s));
    ck_assert_int_eq(faultd_count(x.f, "POST", IT_CREATE_RE), 2);
    ck_assert_int_eq(direct_sandbox_count(x.d), 2);
    sbx_sandbox_free(s);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_create_not_forwarded)
{
    struct fx x;
    sbx_sandbox *s;

    fx_start(&x, false, NULL, NULL);
    faultd_rule(x.f, "POST", IT_CREATE_RE, 1, FAULT_STATUS, 503);
    faultd_rule(x.f, "POST", IT_CREATE_RE, 2, FAULT_RESET, 0);
    s = sbx_sandbox_new(x.c);
    /* The client cannot know the 503 came before the server: not retried,
     * and a sandbox may exist as far as it knows. */
    expect_may_exist(s);
    ck_assert_msg(contains(sbx_sandbox_last_error(s), "503"), "message: %s", sbx_sandbox_last_error(s));
    ck_assert_int_eq(faultd_count(x.f, "POST", IT_CREATE_RE), 1);
    sbx_sandbox_free(s);

    s = sbx_sandbox_new(x.c);
    expect_may_exist(s);
    ck_assert_msg(contains(sbx_sandbox_last_error(s), "may have reached the server"), "message: %s",
                  sbx_sandbox_last_error(s));
    ck_assert_int_eq(faultd_count(x.f, "POST", IT_CREATE_RE), 2);
    ck_assert_int_eq(faultd_forwarded(x.f, "POST", IT_CREATE_RE), 0);
    ck_assert_int_eq(direct_sandbox_count(x.d), 0);
    sbx_sandbox_free(s);
    fx_stop(&x);
}
END_TEST

/* An answer that says the server did nothing (4xx, 429) is not an unknown
 * outcome; an unreadable 2xx and a deadline passed after sending are. */
START_TEST(test_client_faults_create_outcome_known_or_not)
{
    struct fx x;
    sbx_sandbox *s;
    sbx_op *op;
    int64_t until;

    fx_start(&x, false, NULL, NULL);
    faultd_rule(x.f, "POST", IT_CREATE_RE, 1, FAULT_STATUS, 400);
    s = sbx_sandbox_new(x.c);
    expect_sbx(sbx_sandbox_create(s), SBX_E_INVALID_ARG, sbx_sandbox_last_error, s);
    ck_assert_msg(!contains(sbx_sandbox_last_error(s), "may exist"), "message: %s", sbx_sandbox_last_error(s));
    sbx_sandbox_free(s);

    faultd_rule(x.f, "POST", IT_CREATE_RE, 1, FAULT_BAD_JSON, 0);
    s = sbx_sandbox_new(x.c);
    expect_may_exist(s);
    ck_assert_int_eq(direct_sandbox_count(x.d), 1);
    sbx_sandbox_free(s);

    /* Made, its answer held back past the client's deadline. */
    ok_cl(sbx_client_set_option(x.c, "timeout_ms", "700"), x.c);
    faultd_rule(x.f, "POST", IT_CREATE_RE, 1, FAULT_STALL_AFTER, 5000);
    s = sbx_sandbox_new(x.c);
    expect_may_exist(s);
    ck_assert_int_eq(direct_sandbox_count(x.d), 2);
    sbx_sandbox_free(s);

    /* Cancelled while the server holds its answer back: still cancelled,
     * and said to have maybe made one. */
    ok_cl(sbx_client_set_option(x.c, "timeout_ms", "0"), x.c);
    faultd_rule(x.f, "POST", IT_CREATE_RE, 1, FAULT_STALL_AFTER, 0);
    s = sbx_sandbox_new(x.c);
    ok_sb(sbx_sandbox_create_start(s, &op), s);
    until = mono_ms() + 10000;
    while (faultd_forwarded(x.f, "POST", IT_CREATE_RE) < 3 && mono_ms() < until)
        sbx_client_run(x.c, 50);
    sbx_client_run(x.c, 200);
    ck_assert_int_eq(sbx_op_done(op), 0);
    ok_cl(sbx_op_cancel(op), x.c);
    expect_sbx(sbx_op_wait(op, -1), SBX_E_CANCELLED, sbx_op_last_error, op);
    ck_assert_msg(strncmp(sbx_op_last_error(op), "a sandbox may exist: ", 21) == 0, "message: %s",
                  sbx_op_last_error(op));
    sbx_op_free(op);
    sbx_sandbox_free(s);
    fx_stop(&x);
}
END_TEST

/* ---- POST cmd: never started twice -------------------------------------------------------------------- */

static void cmd_fault_case(enum fault kind, long arg, sbx_status want, const char *want_msg, bool forwarded)
{
    struct fx x;
    sbx_command *k;
    const char *post;

    fx_start(&x, true, NULL, NULL);
    post = sbx_pat(&x, "/cmd");
    faultd_rule(x.f, "POST", post, 1, kind, arg);
    k = sh_cmd(x.s, COUNT_SCRIPT, NULL);
    expect_sbx(sbx_command_run(k), want, sbx_command_last_error, k);
    ck_assert_msg(contains(sbx_command_last_error(k), want_msg), "%s: message: %s", fault_name(kind),
                  sbx_command_last_error(k));
    ck_assert_msg(contains(sbx_command_last_error(k), "start the command"), "message: %s",
                  sbx_command_last_error(k));
    ck_assert_int_eq(faultd_count(x.f, "POST", post), 1);
    ck_assert_int_eq(faultd_forwarded(x.f, "POST", post), forwarded ? 1 : 0);
    ck_assert_int_eq(settled_count(x.d, x.sid), forwarded ? 1 : 0);
    /* Nothing else was asked about it (no logs, no wait). */
    ck_assert_int_eq(faultd_count(x.f, "GET", "/cmd/"), 0);
    sbx_command_free(k);

    /* The next command on the same client runs normally. */
    k = sh_cmd(x.s, COUNT_SCRIPT, NULL);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    ck_assert_int_eq(direct_file_lines(x.d, x.sid, COUNT_FILE), forwarded ? 2 : 1);
    sbx_command_free(k);
    fx_stop(&x);
}

START_TEST(test_client_faults_cmd_5xx_after_forward)
{
    cmd_fault_case(FAULT_STATUS_AFTER, 502, SBX_E_HTTP, "502", true);
}
END_TEST

START_TEST(test_client_faults_cmd_500_after_forward)
{
    cmd_fault_case(FAULT_STATUS_AFTER, 500, SBX_E_HTTP, "500", true);
}
END_TEST

START_TEST(test_client_faults_cmd_reset_after_forward)
{
    cmd_fault_case(FAULT_RESET_AFTER, 0, SBX_E_TRANSPORT, "may have reached the server", true);
}
END_TEST

START_TEST(test_client_faults_cmd_reset_mid_answer)
{
    cmd_fault_case(FAULT_RESET_MID, 15, SBX_E_TRANSPORT, "may have reached the server", true);
}
END_TEST

START_TEST(test_client_faults_cmd_5xx_not_forwarded)
{
    cmd_fault_case(FAULT_STATUS, 503, SBX_E_HTTP, "503", false);
}
END_TEST

START_TEST(test_client_faults_cmd_reset_not_forwarded)
{
    cmd_fault_case(FAULT_RESET, 0, SBX_E_TRANSPORT, "may have reached the server", false);
}
END_TEST

/* ---- Retry-After as the 2.x SDKs read it: decimal seconds, and past 20 s given up ---------------------- */

START_TEST(test_client_faults_retry_after_decimal_and_v2_cap)
{
    struct fx x;
    sbx_sandbox *s;
    int64_t t0, dt;
    char *json = NULL;

    fx_start(&x, false, NULL, NULL);
    /* decimal seconds: slept as given (not read as "no hint") */
    faultd_rule(x.f, "GET", IT_LIST_RE, 1, FAULT_429_MS, 1500);
    t0 = mono_ms();
    ok_cl(sbx_client_list_sandboxes(x.c, NULL, 0, -1, -1, &json), x.c);
    dt = mono_ms() - t0;
    sbx_free(json);
    ck_assert_msg(dt >= 1400 && dt < 6000, "the retry came after %lld ms for Retry-After: 1.500", (long long)dt);
    faultd_clear(x.f);
    sbx_client_free(x.c);

    /* v2: a Retry-After over 20 s is reported at once, as the SDK does */
    x.c = fx_client(&x, NULL, NULL);
    ok_cl(sbx_client_set_option(x.c, "protocol", "v2"), x.c);
    faultd_rule(x.f, "POST", "/v3/sandboxes$", 1, FAULT_429, 25);
    s = sbx_sandbox_new(x.c);
    t0 = mono_ms();
    expect_sbx(sbx_sandbox_create(s), SBX_E_RATE_LIMITED, sbx_sandbox_last_error, s);
    ck_assert_msg(mono_ms() - t0 < 5000, "waited %lld ms", (long long)(mono_ms() - t0));
    ck_assert_int_eq(faultd_count(x.f, "POST", "/v3/sandboxes$"), 1);
    ck_assert_int_eq(direct_sandbox_count(x.d), 0);
    sbx_sandbox_free(s);
    /* and a client's protocol is fixed once it made a request */
    expect_sbx(sbx_client_set_option(x.c, "protocol", "v1"), SBX_E_MISUSE, sbx_client_last_error, x.c);
    expect_sbx(sbx_client_set_option(x.c, "protocol", "v3"), SBX_E_INVALID_ARG, sbx_client_last_error, x.c);
    ok_cl(sbx_client_set_option(x.c, "protocol", "v2"), x.c);
    fx_stop(&x);
}
END_TEST

/* ---- 429 + Retry-After: retried, once done ------------------------------------------------------------ */

START_TEST(test_client_faults_429_retry_after)
{
    struct fx x;
    sbx_sandbox *s;
    sbx_command *k;
    struct outbuf o = {0};
    const char *post;
    char *sid;
    int64_t t0, dt;

    fx_start(&x, false, NULL, NULL);
    /* create */
    faultd_rule(x.f, "POST", IT_CREATE_RE, 1, FAULT_429, 1);
    s = sbx_sandbox_new(x.c);
    t0 = mono_ms();
    ok_sb(sbx_sandbox_create(s), s);
    dt = mono_ms() - t0;
    ck_assert_msg(dt >= 900, "the retry came after %lld ms, before Retry-After: 1", (long long)dt);
    ck_assert_msg(dt < 5000, "create took %lld ms", (long long)dt);
    ck_assert_int_eq(faultd_count(x.f, "POST", IT_CREATE_RE), 2);
    ck_assert_int_eq(faultd_forwarded(x.f, "POST", IT_CREATE_RE), 1);
    ck_assert_int_eq(direct_sandbox_count(x.d), 1);
    sid = strdup(sbx_sandbox_id(s));
    x.sid = sid;

    /* start command */
    post = sbx_pat(&x, "/cmd");
    faultd_rule(x.f, "POST", post, 1, FAULT_429, 1);
    k = sh_cmd(s, COUNT_SCRIPT "; echo done", &o);
    t0 = mono_ms();
    ok_k(sbx_command_run(k), k);
    dt = mono_ms() - t0;
    ck_assert_msg(dt >= 900, "the retry came after %lld ms", (long long)dt);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "done\n");
    ck_assert_int_eq(faultd_count(x.f, "POST", post), 2);
    ck_assert_int_eq(faultd_forwarded(x.f, "POST", post), 1);
    ck_assert_int_eq(direct_file_lines(x.d, x.sid, COUNT_FILE), 1);
    sbx_command_free(k);
    outbuf_free(&o);

    /* get, and the logs */
    faultd_rule(x.f, "GET", sbx_pat(&x, ""), 1, FAULT_429, 1);
    ok_sb(sbx_sandbox_refresh(s), s);
    faultd_rule(x.f, "GET", "/logs$", 1, FAULT_429, 1);
    k = sh_cmd(s, "echo again", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "again\n");
    sbx_command_free(k);
    outbuf_free(&o);
    sbx_sandbox_free(s);
    fx_stop(&x);
}
END_TEST

/* ---- the logs stream breaks: resumed, byte-exact ---------------------------------------------------------- */

START_TEST(test_client_faults_logs_reset_mid_body)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};

    fx_start(&x, true, NULL, NULL);
    via_logs(&x);
    faultd_rule(x.f, "GET", "/logs$", 1, FAULT_RESET_MID, 5000);
    faultd_rule(x.f, "GET", "/logs$", 2, FAULT_RESET_MID, 60000);
    faultd_rule(x.f, "GET", "/logs$", 3, FAULT_RESET_MID, 100000);
    k = sh_cmd(x.s, SEQ_SCRIPT "; echo bye >&2", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    expect_seq(o.data[0], o.len[0]);
    ck_assert_str_eq(o.data[1] ? o.data[1] : "", "bye\n");
    ck_assert_int_ge(faultd_count(x.f, "GET", "/logs$"), 4);
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")), 1);
    sbx_command_free(k);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* command.follow=logs: a plain start, the log stream, then a GET of the
 * exit code; one long-lived request per command. Breaks of the log stream
 * are resumed as in the default mode, and the start is never repeated. */
START_TEST(test_client_faults_follow_logs_only)
{
    struct fx x;
    sbx_command *k;
    char *out, *err;
    size_t len, elen;
    int n_post, n_get;

    fx_start(&x, true, NULL, NULL);
    expect_sbx(sbx_client_set_option(x.c, "command.follow", "both"), SBX_E_INVALID_ARG, sbx_client_last_error, x.c);
    ok_cl(sbx_client_set_option(x.c, "command.follow", "logs"), x.c);
    faultd_rule(x.f, "GET", "/logs$", 1, FAULT_TRUNCATE, 3000);
    faultd_rule(x.f, "GET", "/logs$", 2, FAULT_RESET_MID, 60000);
    k = sh_cmd(x.s, SEQ_SCRIPT "; echo bye >&2; exit 3", NULL);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 3);
    out = drain(k, SBX_STREAM_STDOUT, &len);
    err = drain(k, SBX_STREAM_STDERR, &elen);
    expect_seq(out, len);
    ck_assert_str_eq(err, "bye\n");
    ck_assert_int_ge(faultd_count(x.f, "GET", "/logs$"), 3);
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")), 1);
    /* The exit code came from the GET, not from a start stream. */
    ck_assert_int_eq(faultd_count(x.f, "GET", "wait=true"), 1);
    free(out);
    free(err);
    sbx_command_free(k);

    /* A start cut after it was forwarded is not sent again. */
    faultd_clear(x.f);
    n_post = faultd_count(x.f, "POST", sbx_pat(&x, "/cmd"));
    n_get = faultd_count(x.f, "GET", "/cmd/");
    faultd_rule(x.f, "POST", sbx_pat(&x, "/cmd"), 1, FAULT_RESET_AFTER, 0);
    k = sh_cmd(x.s, COUNT_SCRIPT, NULL);
    expect_sbx(sbx_command_run(k), SBX_E_TRANSPORT, sbx_command_last_error, k);
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")) - n_post, 1);
    ck_assert_int_eq(faultd_count(x.f, "GET", "/cmd/") - n_get, 0);
    sbx_command_free(k);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_logs_truncated_mid_line)
{
    struct fx x;
    sbx_command *k;
    char *out, *err;
    size_t len, elen;

    fx_start(&x, true, NULL, NULL);
    via_logs(&x);
    faultd_rule(x.f, "GET", "/logs$", 1, FAULT_TRUNCATE, 3000);
    faultd_rule(x.f, "GET", "/logs$", 2, FAULT_TRUNCATE, 40000);
    faultd_rule(x.f, "GET", "/logs$", 3, FAULT_TRUNCATE, 90000);
    /* Output into the handle's buffers this time. */
    k = sh_cmd(x.s, SEQ_SCRIPT "; echo bye >&2; exit 3", NULL);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 3);
    out = drain(k, SBX_STREAM_STDOUT, &len);
    err = drain(k, SBX_STREAM_STDERR, &elen);
    expect_seq(out, len);
    ck_assert_str_eq(err, "bye\n");
    ck_assert_int_ge(faultd_count(x.f, "GET", "/logs$"), 4);
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")), 1);
    free(out);
    free(err);
    sbx_command_free(k);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_logs_reset_before_answer)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};

    fx_start(&x, true, NULL, NULL);
    /* Before the logs answer started, and on the final wait. */
    faultd_rule(x.f, "GET", "/logs$", 1, FAULT_RESET, 0);
    faultd_rule(x.f, "GET", "/logs$", 2, FAULT_STATUS, 502);
    faultd_rule(x.f, "GET", "/logs$", 3, FAULT_RESET_AFTER, 0);
    faultd_rule(x.f, "GET", "wait=true", 1, FAULT_RESET, 0);
    faultd_rule(x.f, "GET", "wait=true", 2, FAULT_STATUS, 503);
    k = sh_cmd(x.s, "echo one; sleep 0.2; echo two; exit 7", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 7);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "one\ntwo\n");
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")), 1);
    sbx_command_free(k);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* ---- the start stream (POST cmd with wait: true) ------------------------------------------------------- */

/* 400 bytes the server echoes back in both lines of the start stream (the
 * command's args), so that a cut at 800 bytes passes the first line whole
 * and breaks the second. */
#define PAD400                                                                                             \
    "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789" \
    "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789" \
    "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789" \
    "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"

/* Broken after its first line: the command runs on and is followed; its
 * exit code comes from GET ?wait=true (retried through a reset and a 503),
 * and it is never started again. */
START_TEST(test_client_faults_start_stream_cut_after_start)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};
    const char *post;

    fx_start(&x, true, NULL, NULL);
    post = sbx_pat(&x, "/cmd");
    faultd_rule(x.f, "POST", post, 1, FAULT_TRUNCATE, 800);
    faultd_rule(x.f, "GET", "wait=true", 1, FAULT_RESET, 0);
    faultd_rule(x.f, "GET", "wait=true", 2, FAULT_STATUS, 503);
    k = sh_cmd(x.s, COUNT_SCRIPT "; echo one; sleep 0.3; echo two; exit 5 # " PAD400, &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 5);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "one\ntwo\n");
    ck_assert_int_eq(faultd_count(x.f, "POST", post), 1);
    ck_assert_int_eq(faultd_faulted(x.f), 3);
    ck_assert_int_eq(faultd_count(x.f, "GET", "wait=true"), 3);
    ck_assert_int_eq(direct_file_lines(x.d, x.sid, COUNT_FILE), 1);
    sbx_command_free(k);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* Both lines arrived, then the connection broke instead of ending the
 * stream: the exit code is in hand, nothing more is asked. */
START_TEST(test_client_faults_start_stream_no_terminator)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};

    fx_start(&x, true, NULL, NULL);
    faultd_rule(x.f, "POST", sbx_pat(&x, "/cmd"), 1, FAULT_NO_TERMINATOR, 1);
    k = sh_cmd(x.s, "echo hi; sleep 0.2; exit 4", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 4);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "hi\n");
    ck_assert_int_eq(faultd_faulted(x.f), 1);
    ck_assert_int_eq(faultd_count(x.f, "GET", "wait=true"), 0);
    ck_assert_int_eq(faultd_count(x.f, "GET", "/logs$"), it_v2() ? 0 : 1); /* v2: the output came inline */
    sbx_command_free(k);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* Wait up to 2 s for faultd to hold n last chunks back. */
static bool held_becomes(struct faultd *f, int n)
{
    int64_t until = mono_ms() + 2000;
    while (faultd_held(f) != n && mono_ms() < until)
        usleep(5000);
    return faultd_held(f) == n;
}

/* The start stream's last chunk comes late (after the exit line and the end
 * of the output): the command is reported at once, and the stream is left to
 * end on its own so that its connection is used again rather than closed. */
START_TEST(test_client_faults_start_stream_late_terminator)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};
    int conns;

    fx_start(&x, true, NULL, NULL);
    faultd_rule(x.f, "POST", sbx_pat(&x, "/cmd"), 0, FAULT_LATE_TERMINATOR, 3000);
    k = sh_cmd(x.s, "echo one; exit 3", &o);
    ok_k(sbx_command_run(k), k);
    /* Reported before faultd let the stream's end go (waiting for it would
     * have returned after the hold, and the hold never starts again). */
    ck_assert_msg(held_becomes(x.f, 1), "the stream's end is held back after the command was reported");
    ck_assert_int_eq(sbx_command_exit_code(k), 3);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "one\n");
    sbx_command_free(k);
    outbuf_free(&o);
    conns = faultd_connections(x.f);
    /* Let the last chunk arrive; the next command finds the connection
     * free (the engine reads the end first, then starts new requests). */
    while (faultd_held(x.f) > 0)
        usleep(10000);
    usleep(50000);
    faultd_clear(x.f);
    k = sh_cmd(x.s, "echo two", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "two\n");
    sbx_command_free(k);
    ck_assert_msg(faultd_connections(x.f) == conns, "%d connections after the second command, %d before",
                  faultd_connections(x.f), conns);
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")), 2);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* A start stream whose end does not come: the command is reported, the
 * draining stream is not something the caller waits for, and freeing the
 * client while such streams drain leaks nothing (ASan and valgrind runs). */
START_TEST(test_client_faults_start_stream_terminator_never)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};
    size_t running = 1;

    fx_start(&x, true, NULL, NULL);
    faultd_rule(x.f, "POST", sbx_pat(&x, "/cmd"), 0, FAULT_LATE_TERMINATOR, 30000);
    k = sh_cmd(x.s, "echo a", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    ck_assert(held_becomes(x.f, 1));
    sbx_command_free(k);
    /* Nothing the caller started is running: the draining stream is not
     * counted, and sbx_client_run returns at once. */
    ok_cl(sbx_client_process(x.c, &running), x.c);
    ck_assert_uint_eq(running, 0);
    ok_cl(sbx_client_run(x.c, 60000), x.c);
    /* A second command while the first stream drains; then the client is
     * freed with it still open. */
    k = sh_cmd(x.s, "echo b", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    sbx_command_free(k);
    ck_assert(held_becomes(x.f, 2));
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* Cut inside the first line, or a first line that is not JSON: nothing
 * says whether the command runs, so nothing more is asked, and the message
 * says it may have started. */
START_TEST(test_client_faults_start_stream_cut_before_start)
{
    cmd_fault_case(FAULT_TRUNCATE, 20, SBX_E_TRANSPORT, "may have reached the server", true);
}
END_TEST

START_TEST(test_client_faults_start_stream_bad_first_line)
{
    cmd_fault_case(FAULT_BAD_NDJSON, 0, SBX_E_PROTOCOL, "may have started", true);
}
END_TEST

/* ---- v2: the output inline in the start stream ---------------------------------------------------- */

/* The order of the output across both streams, as the callback saw it. */
struct seqlog {
    char text[256];
    size_t len;
};

static int log_order(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    struct seqlog *l = user;
    for (size_t i = 0; i < len && l->len + 3 < sizeof l->text; i++)
        if (data[i] != '\n')
            l->text[l->len++] = (char)data[i];
        else
            l->text[l->len++] = stream == SBX_STREAM_STDERR ? '!' : ';';
    l->text[l->len] = '\0';
    return 0;
}

/* A waited command in v2 is one request, as with SDK 3.x: "logs": true on
 * the start, the output read from its stream, no /logs and no wait GET;
 * stdout and stderr arrive in the order written. v1 follows /logs. */
START_TEST(test_client_faults_inline_logs_no_logs_request)
{
    struct fx x;
    sbx_command *k;
    struct seqlog l = {{0}, 0};
    const char *argv[] = {"sh", "-c",
                          "echo o1; sleep 0.1; echo e1 >&2; sleep 0.1; echo o2; sleep 0.1; echo e2 >&2; exit 3"};

    fx_start(&x, true, NULL, NULL);
    k = sbx_command_new(x.s);
    ok_k(sbx_command_set_argv(k, 3, argv), k);
    ok_k(sbx_command_set_output_cb(k, log_order, &l), k);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 3);
    ck_assert_str_eq(l.text, "o1;e1!o2;e2!");
    ck_assert_int_eq(sbx_command_output_bytes(k, SBX_STREAM_STDOUT), 6);
    ck_assert_int_eq(sbx_command_output_bytes(k, SBX_STREAM_STDERR), 6);
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")), 1);
    ck_assert_int_eq(faultd_count(x.f, "GET", "/logs$"), it_v2() ? 0 : 1);
    ck_assert_int_eq(faultd_count(x.f, "GET", "wait=true"), 0);
    sbx_command_free(k);

    /* A big output, drained from the handle's buffers with backpressure
     * (reading pauses the start stream): whole, still one request. */
    {
        sbx_op *op;
        size_t wlen, glen = 0, n;
        char *want = seq_text(SEQ_N, &wlen), *got = malloc(wlen + 1), buf[997];
        int64_t until = mono_ms() + 30000;
        bool ended = false;
        k = sh_cmd(x.s, SEQ_SCRIPT, NULL);
        ok_k(sbx_command_set_output_limit(k, 4096), k);
        ok_k(sbx_command_run_start(k, &op), k);
        while (!ended && mono_ms() < until) {
            sbx_status st;
            sbx_client_run(x.c, 5);
            st = sbx_command_read_output(k, SBX_STREAM_STDOUT, (uint8_t *)buf, sizeof buf, &n);
            if (st == SBX_OK) {
                ck_assert_uint_le(glen + n, wlen);
                memcpy(got + glen, buf, n);
                glen += n;
            } else {
                ck_assert_msg(st == SBX_E_AGAIN || st == SBX_E_NOT_FOUND, "read_output: %s", sbx_status_name(st));
                ended = st == SBX_E_NOT_FOUND;
            }
        }
        expect_sbx(sbx_op_wait(op, -1), SBX_OK, sbx_op_last_error, op);
        ck_assert_uint_eq(glen, wlen);
        ck_assert_mem_eq(got, want, wlen);
        ck_assert_int_eq(faultd_count(x.f, "GET", "/logs$"), it_v2() ? 0 : 2);
        sbx_op_free(op);
        sbx_command_free(k);
        free(want);
        free(got);
    }
    fx_stop(&x);
}
END_TEST

/* The start stream cut in the middle of the output (after its first line):
 * the output goes on from /logs at the byte reached, whole and exact on
 * both streams, with the log stream cut too; the exit code comes from the
 * wait GET; the command ran once. The same in v1, where /logs was the
 * output's stream from the start. */
START_TEST(test_client_faults_inline_logs_cut_falls_back)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};
    const char *post;
    static const enum fault cuts[] = {FAULT_TRUNCATE, FAULT_RESET_MID};

    fx_start(&x, true, NULL, NULL);
    post = sbx_pat(&x, "/cmd");
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        int p0 = faultd_count(x.f, "POST", post), w0 = faultd_count(x.f, "GET", "wait=true"),
            l0 = faultd_count(x.f, "GET", "/logs$");
        faultd_clear(x.f);
        faultd_rule(x.f, "POST", post, 1, cuts[c], 30000);
        faultd_rule(x.f, "GET", "/logs$", 1, FAULT_RESET_MID, 20000);
        k = sh_cmd(x.s, COUNT_SCRIPT "; " SEQ_SCRIPT "; echo bye >&2; exit 5", &o);
        ok_k(sbx_command_run(k), k);
        ck_assert_int_eq(sbx_command_exit_code(k), 5);
        expect_seq(o.data[0], o.len[0]);
        ck_assert_str_eq(o.data[1] ? o.data[1] : "", "bye\n");
        ck_assert_int_eq(faultd_count(x.f, "POST", post) - p0, 1);
        ck_assert_int_ge(faultd_count(x.f, "GET", "/logs$") - l0, 2);
        if (it_v2())
            ck_assert_int_eq(faultd_count(x.f, "GET", "wait=true") - w0, 1);
        ck_assert_int_eq(direct_file_lines(x.d, x.sid, COUNT_FILE), (int)c + 1);
        sbx_command_free(k);
        outbuf_free(&o);
    }
    fx_stop(&x);
}
END_TEST

/* A line between the command lines that is neither output nor the last
 * command line fails the op (as the SDK's schema does), naming it; the
 * command is not started again. */
START_TEST(test_client_faults_inline_logs_bad_line)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};

    fx_start(&x, true, NULL, NULL);
    faultd_rule(x.f, "POST", sbx_pat(&x, "/cmd"), 1, FAULT_BAD_NDJSON, 0);
    k = sh_cmd(x.s, "echo hi", &o);
    /* the bad line comes first: before the command is known */
    expect_sbx(sbx_command_run(k), SBX_E_PROTOCOL, sbx_command_last_error, k);
    ck_assert(contains(sbx_command_last_error(k), "may have started"));
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")), 1);
    ck_assert_int_eq(faultd_count(x.f, "GET", "/logs$"), 0);
    sbx_command_free(k);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* ---- stalls: deadlines and cancellation ---------------------------------------------------------------- */

START_TEST(test_client_faults_stall_get_timeout)
{
    struct fx x;
    int64_t t0, dt;

    fx_start(&x, true, NULL, "500");
    faultd_rule(x.f, "GET", sbx_pat(&x, ""), 0, FAULT_STALL, 0);
    t0 = mono_ms();
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_TIMEOUT, sbx_sandbox_last_error, x.s);
    dt = mono_ms() - t0;
    ck_assert_msg(dt >= 450 && dt < 2000, "timed out after %lld ms (deadline 500 ms)", (long long)dt);
    ck_assert_msg(sbx_sandbox_last_error(x.s)[0], "no message");

    /* Forwarded, answer held back: the same. */
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", sbx_pat(&x, ""), 0, FAULT_STALL_AFTER, 0);
    t0 = mono_ms();
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_TIMEOUT, sbx_sandbox_last_error, x.s);
    dt = mono_ms() - t0;
    ck_assert_msg(dt >= 450 && dt < 2000, "timed out after %lld ms (deadline 500 ms)", (long long)dt);

    faultd_clear(x.f);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_stall_logs_command_timeout)
{
    struct fx x;
    sbx_command *k;
    char *cid;
    int64_t t0, dt;

    fx_start(&x, true, NULL, NULL);
    faultd_rule(x.f, "GET", "/logs$", 0, FAULT_STALL, 0);
    /* The kill sent at the deadline is itself refused once: retried. */
    faultd_rule(x.f, "POST", "/kill$", 1, FAULT_STATUS, 503);
    k = sh_cmd(x.s, "echo started; sleep 30", NULL);
    ok_k(sbx_command_set_timeout_ms(k, 1500), k);
    t0 = mono_ms();
    expect_sbx(sbx_command_run(k), SBX_E_TIMEOUT, sbx_command_last_error, k);
    dt = mono_ms() - t0;
    ck_assert_msg(dt >= 1400 && dt < 5000, "timed out after %lld ms (deadline 1500 ms)", (long long)dt);
    ck_assert_msg(contains(sbx_command_last_error(k), "killed"), "message: %s", sbx_command_last_error(k));
    ck_assert_ptr_nonnull(sbx_command_id(k));
    cid = strdup(sbx_command_id(k));
    /* It was killed: sbxd reports SIGKILL's exit code. */
    ck_assert_int_eq(sbx_cmd_wait(x.d, x.sid, cid), 137);
    ck_assert_int_eq(faultd_count(x.f, "POST", "/kill$"), 2);
    note("stalled logs, deadline 1500 ms", sbx_command_last_error(k));
    free(cid);
    sbx_command_free(k);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_cancel_during_stall)
{
    struct fx x;
    sbx_command *k;
    sbx_op *op;
    int64_t t0, dt, until;

    fx_start(&x, true, NULL, NULL);
    via_logs(&x);
    /* The logs stall. */
    faultd_rule(x.f, "GET", "/logs$", 0, FAULT_STALL, 0);
    k = sh_cmd(x.s, "sleep 30", NULL);
    ok_k(sbx_command_run_start(k, &op), k);
    until = mono_ms() + 5000;
    while (faultd_count(x.f, "GET", "/logs$") == 0 && mono_ms() < until)
        sbx_client_run(x.c, 50);
    ck_assert_int_eq(faultd_count(x.f, "GET", "/logs$"), 1);
    ck_assert_int_eq(sbx_op_done(op), 0);
    sbx_client_run(x.c, 200);
    ck_assert_int_eq(sbx_op_done(op), 0);
    t0 = mono_ms();
    ok_cl(sbx_op_cancel(op), x.c);
    expect_sbx(sbx_op_wait(op, -1), SBX_E_CANCELLED, sbx_op_last_error, op);
    dt = mono_ms() - t0;
    ck_assert_msg(dt < 500, "cancel took %lld ms", (long long)dt);
    ck_assert_msg(sbx_op_last_error(op)[0], "no message");
    ck_assert_ptr_nonnull(sbx_command_id(k));
    sbx_op_free(op);
    sbx_command_free(k);

    /* The start's answer is held back (the command did start). */
    faultd_rule(x.f, "POST", sbx_pat(&x, "/cmd"), 0, FAULT_STALL_AFTER, 0);
    k = sh_cmd(x.s, COUNT_SCRIPT, NULL);
    ok_k(sbx_command_run_start(k, &op), k);
    until = mono_ms() + 5000;
    while (faultd_forwarded(x.f, "POST", sbx_pat(&x, "/cmd")) < 2 && mono_ms() < until)
        sbx_client_run(x.c, 50);
    sbx_client_run(x.c, 200);
    ck_assert_int_eq(sbx_op_done(op), 0);
    t0 = mono_ms();
    ok_cl(sbx_op_cancel(op), x.c);
    expect_sbx(sbx_op_wait(op, -1), SBX_E_CANCELLED, sbx_op_last_error, op);
    dt = mono_ms() - t0;
    ck_assert_msg(dt < 500, "cancel took %lld ms", (long long)dt);
    ck_assert_int_eq(settled_count(x.d, x.sid), 1);
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")), 2);
    sbx_op_free(op);
    sbx_command_free(k);
    fx_stop(&x);
}
END_TEST

/* ---- slow and fragmented answers ----------------------------------------------------------------------- */

static void slow_case(enum fault kind, long arg)
{
    struct fx x;
    sbx_sandbox *s;
    sbx_command *k;
    struct outbuf o = {0};
    char *data = NULL, *json = NULL, big[6000];
    size_t len = 0;
    /* The euro sign's three bytes come apart in one-byte writes. */
    const char *script = kind == FAULT_DRIP ? "seq 1 30; printf '\\342\\202\\254\\n' >&2; exit 4"
                                            : "seq 1 3000; printf '\\342\\202\\254\\n' >&2; exit 4";
    size_t wlen;
    char *want = seq_text(kind == FAULT_DRIP ? 30 : 3000, &wlen);

    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)('a' + i % 26);
    big[sizeof big - 1] = '\n';
    fx_start(&x, false, NULL, NULL);
    faultd_rule(x.f, NULL, "", 0, kind, arg);

    s = sbx_sandbox_new(x.c);
    ok_sb(sbx_sandbox_create(s), s);
    ck_assert_ptr_nonnull(sbx_sandbox_id(s));
    ck_assert_str_eq(sbx_sandbox_status(s), "running");
    ck_assert_int_eq(direct_sandbox_count(x.d), 1);

    k = sh_cmd(s, script, &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 4);
    ck_assert_uint_eq(o.len[0], wlen);
    ck_assert_mem_eq(o.data[0], want, wlen);
    ck_assert_str_eq(o.data[1] ? o.data[1] : "", "\xe2\x82\xac\n");
    sbx_command_free(k);
    outbuf_free(&o);

    ok_sb(sbx_sandbox_write_file(s, "slow/big.txt", (const uint8_t *)big, kind == FAULT_DRIP ? 300 : sizeof big, 0644), s);
    ok_sb(sbx_sandbox_read_file(s, "slow/big.txt", 0, (uint8_t **)&data, &len), s);
    ck_assert_uint_eq(len, kind == FAULT_DRIP ? 300 : sizeof big);
    ck_assert_mem_eq(data, big, len);
    sbx_free(data);

    ok_cl(sbx_client_list_sandboxes(x.c, NULL, 0, -1, -1, &json), x.c);
    ck_assert_msg(contains(json, sbx_sandbox_id(s)), "list: %s", json);
    sbx_free(json);
    /* v2: the output came in the start stream, one request fewer */
    ck_assert_int_ge(faultd_faulted(x.f), it_v2() ? 5 : 6);
    ck_assert_int_eq(faultd_count(x.f, "GET", "/logs$"), it_v2() ? 0 : 1);
    free(want);
    sbx_sandbox_free(s);
    fx_stop(&x);
}

START_TEST(test_client_faults_one_byte_writes)
{
    slow_case(FAULT_ONE_BYTE, 0);
}
END_TEST

START_TEST(test_client_faults_slow_drip)
{
    slow_case(FAULT_DRIP, 1);
}
END_TEST

/* ---- answers that break the protocol --------------------------------------------------------------------- */

START_TEST(test_client_faults_invalid_json)
{
    struct fx x;
    const char *get;
    int n0;

    fx_start(&x, true, NULL, NULL);
    get = sbx_pat(&x, "");
    n0 = faultd_count(x.f, "GET", get);
    faultd_rule(x.f, "GET", get, 1, FAULT_BAD_JSON, 0);
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_PROTOCOL, sbx_sandbox_last_error, x.s);
    ck_assert_msg(contains(sbx_sandbox_last_error(x.s), "JSON"), "message: %s", sbx_sandbox_last_error(x.s));
    /* A 200 is an answer: not retried. */
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 1);
    /* The handle keeps what it knew. */
    ck_assert_str_eq(sbx_sandbox_id(x.s), x.sid);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_invalid_ndjson_line)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};

    fx_start(&x, true, NULL, NULL);
    via_logs(&x);
    faultd_rule(x.f, "GET", "/logs$", 1, FAULT_BAD_NDJSON, 0);
    k = sh_cmd(x.s, "echo hi", &o);
    expect_sbx(sbx_command_run(k), SBX_E_PROTOCOL, sbx_command_last_error, k);
    ck_assert_msg(sbx_command_last_error(k)[0], "no message");
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")), 1);
    sbx_command_free(k);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_huge_headers)
{
    struct fx x;
    int64_t t0;

    fx_start(&x, true, "1", NULL);
    faultd_rule(x.f, "GET", sbx_pat(&x, ""), 0, FAULT_HUGE_HEADERS, 400 * 1024);
    t0 = mono_ms();
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_TRANSPORT, sbx_sandbox_last_error, x.s);
    ck_assert_msg(sbx_sandbox_last_error(x.s)[0], "no message");
    ck_assert_msg(mono_ms() - t0 < 5000, "took %lld ms", (long long)(mono_ms() - t0));
    /* Still usable. */
    faultd_clear(x.f);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    fx_stop(&x);
}
END_TEST

/* ---- more: exhaustion, cancellation in a backoff, cut file reads ------------------------------------------ */

START_TEST(test_client_faults_429_exhausted)
{
    struct fx x;
    const char *get;
    int n0;

    fx_start(&x, true, "1", NULL);
    get = sbx_pat(&x, "");
    n0 = faultd_count(x.f, "GET", get);
    faultd_rule(x.f, "GET", get, 0, FAULT_429, 0);
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_RATE_LIMITED, sbx_sandbox_last_error, x.s);
    note("429 exhausted", sbx_sandbox_last_error(x.s));
    ck_assert_msg(contains(sbx_sandbox_last_error(x.s), "429"), "message: %s", sbx_sandbox_last_error(x.s));
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 2);

    /* A Retry-After beyond the request's deadline is reported, not slept. */
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 0, FAULT_429, 30);
    ok_cl(sbx_client_set_option(x.c, "timeout_ms", "1000"), x.c);
    n0 = faultd_count(x.f, "GET", get);
    {
        int64_t t0 = mono_ms();
        sbx_status st = sbx_sandbox_refresh(x.s);
        ck_assert_msg(st == SBX_E_RATE_LIMITED || st == SBX_E_TIMEOUT, "got %s: %s", sbx_status_name(st),
                      sbx_sandbox_last_error(x.s));
        ck_assert_msg(mono_ms() - t0 < 3000, "took %lld ms", (long long)(mono_ms() - t0));
        note("429 Retry-After 30, deadline 1 s", sbx_sandbox_last_error(x.s));
    }
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 1);

    /* Beyond a minute: reported at once, whatever the deadline. */
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 0, FAULT_429, 120);
    ok_cl(sbx_client_set_option(x.c, "timeout_ms", "0"), x.c);
    n0 = faultd_count(x.f, "GET", get);
    {
        int64_t t0 = mono_ms();
        expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_RATE_LIMITED, sbx_sandbox_last_error, x.s);
        ck_assert_msg(mono_ms() - t0 < 1000, "took %lld ms", (long long)(mono_ms() - t0));
    }
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 1);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_cancel_during_backoff)
{
    struct fx x;
    sbx_command *k;
    sbx_op *op;
    const char *post;
    int64_t t0, dt, until;

    fx_start(&x, true, NULL, NULL);
    post = sbx_pat(&x, "/cmd");
    faultd_rule(x.f, "POST", post, 0, FAULT_429, 10);
    k = sh_cmd(x.s, COUNT_SCRIPT, NULL);
    ok_k(sbx_command_run_start(k, &op), k);
    until = mono_ms() + 5000;
    while (faultd_count(x.f, "POST", post) == 0 && mono_ms() < until)
        sbx_client_run(x.c, 50);
    sbx_client_run(x.c, 200);
    ck_assert_int_eq(sbx_op_done(op), 0);
    t0 = mono_ms();
    ok_cl(sbx_op_cancel(op), x.c);
    expect_sbx(sbx_op_wait(op, -1), SBX_E_CANCELLED, sbx_op_last_error, op);
    dt = mono_ms() - t0;
    ck_assert_msg(dt < 500, "cancel took %lld ms", (long long)dt);
    note("cancel in a 429 wait", sbx_op_last_error(op));
    ck_assert_int_eq(faultd_count(x.f, "POST", post), 1);
    ck_assert_int_eq(faultd_forwarded(x.f, "POST", post), 0);
    ck_assert_ptr_null(sbx_command_id(k));
    usleep(300000);
    ck_assert_int_eq(direct_file_lines(x.d, x.sid, COUNT_FILE), 0);
    sbx_op_free(op);
    sbx_command_free(k);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_stall_start_command_timeout)
{
    struct fx x;
    sbx_command *k;
    const char *post;
    int64_t t0, dt;

    fx_start(&x, true, NULL, NULL);
    post = sbx_pat(&x, "/cmd");
    faultd_rule(x.f, "POST", post, 1, FAULT_STALL, 0);
    k = sh_cmd(x.s, COUNT_SCRIPT, NULL);
    ok_k(sbx_command_set_timeout_ms(k, 800), k);
    t0 = mono_ms();
    expect_sbx(sbx_command_run(k), SBX_E_TIMEOUT, sbx_command_last_error, k);
    dt = mono_ms() - t0;
    note("stalled start, deadline 800 ms", sbx_command_last_error(k));
    ck_assert_msg(dt >= 750 && dt < 3000, "timed out after %lld ms", (long long)dt);
    ck_assert_msg(contains(sbx_command_last_error(k), "may have started"), "message: %s",
                  sbx_command_last_error(k));
    ck_assert_int_eq(faultd_count(x.f, "POST", post), 1);
    ck_assert_int_eq(faultd_forwarded(x.f, "POST", post), 0);
    sbx_command_free(k);
    fx_stop(&x);
}
END_TEST

/* A file read cut in the middle is an error, never a short success. */
START_TEST(test_client_faults_read_cut_mid_body)
{
    struct fx x;
    char *data = (char *)"sentinel", *big, local[600], dir[400];
    size_t len = 7, n = 200000;
    int nfiles = 0;

    fx_start(&x, true, NULL, NULL);
    big = malloc(n);
    ck_assert_ptr_nonnull(big);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('A' + i % 23);
    sbx_write_file(x.d, x.sid, "/vercel/sandbox/big.bin", big, n, 0644);

    faultd_rule(x.f, "POST", "/fs/read$", 1, FAULT_RESET_MID, 50000);
    expect_sbx(sbx_sandbox_read_file(x.s, "big.bin", 0, (uint8_t **)&data, &len), SBX_E_TRANSPORT, sbx_sandbox_last_error,
               x.s);
    note("read reset mid-body", sbx_sandbox_last_error(x.s));
    ck_assert_ptr_null(data);
    ck_assert_uint_eq(len, 0);

    faultd_rule(x.f, "POST", "/fs/read$", 1, FAULT_TRUNCATE, 70000);
    expect_sbx(sbx_sandbox_read_file(x.s, "big.bin", 0, (uint8_t **)&data, &len), SBX_E_TRANSPORT, sbx_sandbox_last_error,
               x.s);
    note("read truncated", sbx_sandbox_last_error(x.s));
    ck_assert_ptr_null(data);

    /* A download leaves nothing behind. */
    snprintf(dir, sizeof dir, "%.300s/dl", x.d->dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(local, sizeof local, "%s/big.bin", dir);
    faultd_rule(x.f, "POST", "/fs/read$", 1, FAULT_RESET_MID, 30000);
    expect_sbx(sbx_sandbox_download(x.s, "big.bin", local), SBX_E_TRANSPORT, sbx_sandbox_last_error, x.s);
    ck_assert_int_eq(access(local, F_OK), -1);
    {
        char cmdline[700];
        snprintf(cmdline, sizeof cmdline, "test -z \"$(ls -A '%s')\"", dir);
        nfiles = host_sh("%s", cmdline);
    }
    ck_assert_msg(nfiles == 0, "the failed download left files in %s", dir);

    /* Without faults: all of it. */
    faultd_clear(x.f);
    ok_sb(sbx_sandbox_read_file(x.s, "big.bin", 0, (uint8_t **)&data, &len), x.s);
    ck_assert_uint_eq(len, n);
    ck_assert_mem_eq(data, big, n);
    sbx_free(data);
    ok_sb(sbx_sandbox_download(x.s, "big.bin", local), x.s);
    ck_assert_int_eq(access(local, F_OK), 0);
    free(big);
    fx_stop(&x);
}
END_TEST

/* A success answer to a read that is not application/octet-stream (a
 * proxy's HTML page, an empty 200 without a type): in v2 not the file, an
 * SBX_E_PROTOCOL naming what came, and no byte of it reaches any sink. v1
 * takes any 2xx body, as its SDKs do. */
static int count_bytes(const uint8_t *data, size_t len, void *user)
{
    (void)data;
    *(size_t *)user += len;
    return 0;
}

START_TEST(test_client_faults_read_not_octet_stream)
{
    struct fx x;
    char *data = NULL, local[600];
    size_t len = 0, streamed = 0;

    fx_start(&x, true, NULL, NULL);
    sbx_write_file(x.d, x.sid, "/vercel/sandbox/f.txt", "file bytes", 10, 0644);
    sbx_write_file(x.d, x.sid, "/vercel/sandbox/empty.txt", "", 0, 0644);
    snprintf(local, sizeof local, "%.300s/dl-f.txt", x.d->dir);

    faultd_rule(x.f, "POST", "/fs/read$", 0, FAULT_HTML_200, 0);
    if (it_v2()) {
        expect_sbx(sbx_sandbox_read_file(x.s, "f.txt", 0, (uint8_t **)&data, &len), SBX_E_PROTOCOL,
                   sbx_sandbox_last_error, x.s);
        note("read answered text/html", sbx_sandbox_last_error(x.s));
        ck_assert(contains(sbx_sandbox_last_error(x.s), "HTTP 200"));
        ck_assert(contains(sbx_sandbox_last_error(x.s), "text/html"));
        ck_assert(contains(sbx_sandbox_last_error(x.s), "application/octet-stream"));
        ck_assert_ptr_null(data);
        ck_assert_uint_eq(len, 0);
        expect_sbx(sbx_sandbox_read_stream(x.s, "f.txt", count_bytes, &streamed), SBX_E_PROTOCOL,
                   sbx_sandbox_last_error, x.s);
        ck_assert_uint_eq(streamed, 0);
        expect_sbx(sbx_sandbox_download(x.s, "f.txt", local), SBX_E_PROTOCOL, sbx_sandbox_last_error, x.s);
        ck_assert_int_eq(access(local, F_OK), -1);
        /* answered, not a transport failure: not retried */
        ck_assert_int_eq(faultd_count(x.f, "POST", "/fs/read$"), 3);

        faultd_clear(x.f);
        faultd_rule(x.f, "POST", "/fs/read$", 0, FAULT_EMPTY_200, 0);
        expect_sbx(sbx_sandbox_read_file(x.s, "empty.txt", 0, (uint8_t **)&data, &len), SBX_E_PROTOCOL,
                   sbx_sandbox_last_error, x.s);
        note("read answered empty, untyped", sbx_sandbox_last_error(x.s));
        ck_assert(contains(sbx_sandbox_last_error(x.s), "without a Content-Type"));
    } else {
        ok_sb(sbx_sandbox_read_file(x.s, "f.txt", 0, (uint8_t **)&data, &len), x.s);
        ck_assert(contains(data, "faultd: not the server"));
        sbx_free(data);
        data = NULL;
    }

    /* sbxd's own answers (application/octet-stream): the files, the empty one too */
    faultd_clear(x.f);
    ok_sb(sbx_sandbox_read_file(x.s, "f.txt", 0, (uint8_t **)&data, &len), x.s);
    ck_assert_uint_eq(len, 10);
    ck_assert_mem_eq(data, "file bytes", 10);
    sbx_free(data);
    ok_sb(sbx_sandbox_read_file(x.s, "empty.txt", 0, (uint8_t **)&data, &len), x.s);
    ck_assert_uint_eq(len, 0);
    sbx_free(data);
    ok_sb(sbx_sandbox_download(x.s, "f.txt", local), x.s);
    ck_assert_int_eq(access(local, F_OK), 0);
    fx_stop(&x);
}
END_TEST

/* ---- other requests that must not run twice, and retried bodies ------------------------------------------- */

static int64_t direct_timeout(struct sbxd *d, const char *sid)
{
    json_t *sb = sbx_get_sandbox(d, sid);
    int64_t t = json_integer_value(json_object_get(sb, "timeout"));
    json_decref(sb);
    return t;
}

static int direct_snapshot_count(struct sbxd *d)
{
    struct http_resp *r = http_get(d, "/v1/sandboxes/snapshots?limit=100");
    int n;
    expect_status(r, 200);
    n = (int)json_array_size(json_object_get(r->json, "snapshots"));
    http_resp_free(r);
    return n;
}

START_TEST(test_client_faults_other_posts_once)
{
    struct fx x;
    int64_t t0;
    sbx_snapshot *sn;

    fx_start(&x, true, NULL, NULL);

    /* mkdir: a repeat would fail "exists" (409). */
    faultd_rule(x.f, "POST", "/fs/mkdir$", 1, FAULT_STATUS_AFTER, 502);
    expect_sbx(sbx_sandbox_mkdir(x.s, "made"), SBX_E_HTTP, sbx_sandbox_last_error, x.s);
    ck_assert_int_eq(faultd_count(x.f, "POST", "/fs/mkdir$"), 1);
    /* It was made once: making it again says it exists. */
    expect_sbx(sbx_sandbox_mkdir(x.s, "made"), SBX_E_CONFLICT, sbx_sandbox_last_error, x.s);

    /* extend-timeout adds: exactly once. */
    t0 = direct_timeout(x.d, x.sid);
    faultd_rule(x.f, "POST", "/extend-timeout$", 1, FAULT_RESET_AFTER, 0);
    expect_sbx(sbx_sandbox_extend_timeout(x.s, 60000), SBX_E_TRANSPORT, sbx_sandbox_last_error, x.s);
    ck_assert_msg(contains(sbx_sandbox_last_error(x.s), "may have reached the server"), "message: %s",
                  sbx_sandbox_last_error(x.s));
    ck_assert_int_eq(faultd_count(x.f, "POST", "/extend-timeout$"), 1);
    ck_assert_int_eq(direct_timeout(x.d, x.sid), t0 + 60000);

    /* stop is idempotent: retried. */
    faultd_rule(x.f, "POST", "/stop$", 1, FAULT_RESET_AFTER, 0);
    faultd_rule(x.f, "POST", "/stop$", 2, FAULT_STATUS, 503);
    ok_sb(sbx_sandbox_stop(x.s), x.s);
    ck_assert_int_ge(faultd_count(x.f, "POST", "/stop$"), 3);
    ck_assert_msg(sbx_wait_status(x.d, x.sid, "stopped", 5000), "not stopped: %s", sbx_status_str(x.d, x.sid));
    fx_stop(&x);

    /* snapshot (it stops the sandbox): once. */
    fx_start(&x, true, NULL, NULL);
    faultd_rule(x.f, "POST", "/snapshot$", 1, FAULT_STATUS_AFTER, 500);
    sn = sbx_snapshot_new(x.c);
    expect_sbx(sbx_sandbox_snapshot(x.s, -1, sn), SBX_E_HTTP, sbx_sandbox_last_error, x.s);
    note("snapshot 500 after forwarding", sbx_sandbox_last_error(x.s));
    ck_assert_int_eq(faultd_count(x.f, "POST", "/snapshot$"), 1);
    ck_assert_int_eq(direct_snapshot_count(x.d), 1);
    sbx_snapshot_free(sn);
    fx_stop(&x);
}
END_TEST

/* Bodies sent again: an in-memory file write and a streamed upload. */
START_TEST(test_client_faults_bodies_replayed)
{
    struct fx x;
    char dir[600], path[700], *data = NULL;
    size_t len = 0, n = 3u << 20;
    unsigned char *big = malloc(n);
    uint32_t v = 12345;
    FILE *fp;

    fx_start(&x, true, NULL, NULL);
    ck_assert_ptr_nonnull(big);
    for (size_t i = 0; i < n; i++) {
        v = v * 1103515245u + 12345u;
        big[i] = (unsigned char)(v >> 16);
    }

    /* write_file: 503 after forwarding, reset before, reset after. */
    faultd_rule(x.f, "POST", "/fs/write$", 1, FAULT_STATUS_AFTER, 503);
    faultd_rule(x.f, "POST", "/fs/write$", 2, FAULT_RESET, 0);
    faultd_rule(x.f, "POST", "/fs/write$", 3, FAULT_RESET_AFTER, 0);
    ok_sb(sbx_sandbox_write_file(x.s, "w/small.txt", (const uint8_t *)"small\n", 6, 0644), x.s);
    ck_assert_int_ge(faultd_count(x.f, "POST", "/fs/write$"), 4);
    ok_sb(sbx_sandbox_read_file(x.s, "w/small.txt", 0, (uint8_t **)&data, &len), x.s);
    ck_assert_uint_eq(len, 6);
    ck_assert_mem_eq(data, "small\n", 6);
    sbx_free(data);

    /* A 3 MiB random file (a large body: Expect: 100-continue). */
    faultd_clear(x.f);
    faultd_rule(x.f, "POST", "/fs/write$", 1, FAULT_STATUS, 500);
    ok_sb(sbx_sandbox_write_file(x.s, "w/big.bin", (const uint8_t *)big, n, 0600), x.s);
    ok_sb(sbx_sandbox_read_file(x.s, "w/big.bin", 0, (uint8_t **)&data, &len), x.s);
    ck_assert_uint_eq(len, n);
    ck_assert_mem_eq(data, big, n);
    sbx_free(data);

    /* upload: streamed from disk, replayed by rewinding. */
    snprintf(dir, sizeof dir, "%.300s/up", x.d->dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(path, sizeof path, "%s/a.txt", dir);
    fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    fputs("upload a\n", fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/big.bin", dir);
    fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(big, 1, n, fp), n);
    fclose(fp);
    faultd_clear(x.f);
    faultd_rule(x.f, "POST", "/fs/write$", 1, FAULT_STATUS_AFTER, 502);
    faultd_rule(x.f, "POST", "/fs/write$", 2, FAULT_RESET, 0);
    ok_sb(sbx_sandbox_upload(x.s, dir, "uploaded"), x.s);
    ck_assert_int_ge(faultd_count(x.f, "POST", "/fs/write$"), 3);
    ok_sb(sbx_sandbox_read_file(x.s, "uploaded/a.txt", 0, (uint8_t **)&data, &len), x.s);
    ck_assert_str_eq(data, "upload a\n");
    sbx_free(data);
    ok_sb(sbx_sandbox_read_file(x.s, "uploaded/big.bin", 0, (uint8_t **)&data, &len), x.s);
    ck_assert_uint_eq(len, n);
    ck_assert_mem_eq(data, big, n);
    sbx_free(data);
    free(big);
    fx_stop(&x);
}
END_TEST

/* The server closes a kept-alive connection after an answer: the next
 * request, even one that is never repeated, goes out on a new one. */
START_TEST(test_client_faults_server_closes_idle)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};

    fx_start(&x, true, NULL, NULL);
    faultd_rule(x.f, "GET", sbx_pat(&x, ""), 0, FAULT_CLOSE_AFTER, 0);
    for (int i = 0; i < 5; i++) {
        ok_sb(sbx_sandbox_refresh(x.s), x.s);
        usleep(50000);
        k = sh_cmd(x.s, COUNT_SCRIPT "; echo ok", &o);
        ok_k(sbx_command_run(k), k);
        ck_assert_int_eq(sbx_command_exit_code(k), 0);
        sbx_command_free(k);
    }
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")), 5);
    ck_assert_int_eq(direct_file_lines(x.d, x.sid, COUNT_FILE), 5);
    ck_assert_str_eq(o.data[0], "ok\nok\nok\nok\nok\n");
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* Every logs request is cut at the same place: the run gives up after a few
 * reconnects that bring nothing new, having delivered a clean prefix. */
START_TEST(test_client_faults_logs_always_cut)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};
    size_t wlen;
    char *want = seq_text(SEQ_N, &wlen);

    fx_start(&x, true, NULL, NULL);
    via_logs(&x);
    faultd_rule(x.f, "GET", "/logs$", 0, FAULT_TRUNCATE, 3000);
    /* A first line of 1092 bytes, then one beyond the cut. */
    k = sh_cmd(x.s, "seq 1 300; sleep 0.3; seq 301 20000", &o);
    expect_sbx(sbx_command_run(k), SBX_E_TRANSPORT, sbx_command_last_error, k);
    note("logs always cut", sbx_command_last_error(k));
    ck_assert_msg(contains(sbx_command_last_error(k), sbx_command_id(k)), "message: %s", sbx_command_last_error(k));
    /* The exit code comes on the start stream, which is not cut: known
     * when the command exited before the run gave up, and then the real
     * one; never made up. */
    if (sbx_command_exit_code(k) == -1)
        ck_assert_msg(contains(sbx_command_last_error(k), "may still be running"), "message: %s",
                      sbx_command_last_error(k));
    else
        ck_assert_msg(sbx_command_exit_code(k) == 0 &&
                          contains(sbx_command_last_error(k), "exited with code 0, its output is incomplete"),
                      "exit code %d, message: %s", sbx_command_exit_code(k), sbx_command_last_error(k));
    ck_assert_uint_gt(o.len[0], 0);
    ck_assert_uint_le(o.len[0], 3000);
    ck_assert_msg(memcmp(o.data[0], want, o.len[0]) == 0, "the output delivered is not a prefix of the real one");
    ck_assert_int_le(faultd_count(x.f, "GET", "/logs$"), 12);
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")), 1);
    free(want);
    sbx_command_free(k);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* An op whose output buffers fill (reading pauses) while its stream breaks. */
START_TEST(test_client_faults_logs_cut_with_backpressure)
{
    struct fx x;
    sbx_command *k;
    sbx_op *op;
    char *got[2] = {NULL, NULL}, buf[1000], name[16];
    size_t glen[2] = {0, 0}, n, wlen[2] = {0, 0};
    char *want[2];
    int64_t until;
    bool ended[2] = {false, false};

    /* 20000 lines: enough that even a replay of the finished command,
     * which sbxd sends in few large lines, is longer than the last cut
     * (on a slow machine the command ends before the third request). */
    fx_start(&x, true, NULL, NULL);
    via_logs(&x);
    faultd_rule(x.f, "GET", "/logs$", 1, FAULT_RESET_MID, 20000);
    faultd_rule(x.f, "GET", "/logs$", 2, FAULT_TRUNCATE, 70000);
    faultd_rule(x.f, "GET", "/logs$", 3, FAULT_RESET_MID, 130000);
    k = sh_cmd(x.s, "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); echo out$i; echo err$i >&2; done", NULL);
    ok_k(sbx_command_set_output_limit(k, 4096), k);
    ok_k(sbx_command_run_start(k, &op), k);
    want[0] = malloc(20000 * 12);
    want[1] = malloc(20000 * 12);
    for (int i = 1; i <= 20000; i++) {
        wlen[0] += (size_t)sprintf(want[0] + wlen[0], "out%d\n", i);
        wlen[1] += (size_t)sprintf(want[1] + wlen[1], "err%d\n", i);
    }
    got[0] = malloc(wlen[0] + 1000);
    got[1] = malloc(wlen[1] + 1000);
    until = mono_ms() + 30000;
    while (!(ended[0] && ended[1]) && mono_ms() < until) {
        sbx_client_run(x.c, 5);
        for (int i = 0; i < 2; i++) {
            /* Read slowly: a little at a time. */
            sbx_status st = ended[i] ? SBX_E_NOT_FOUND
                                     : sbx_command_read_output(k, i ? SBX_STREAM_STDERR : SBX_STREAM_STDOUT, (uint8_t *)buf,
                                                               sizeof buf, &n);
            if (st == SBX_OK) {
                ck_assert_uint_le(glen[i] + n, wlen[i] + 999);
                memcpy(got[i] + glen[i], buf, n);
                glen[i] += n;
            } else if (st == SBX_E_NOT_FOUND) {
                ended[i] = true;
            } else {
                ck_assert_msg(st == SBX_E_AGAIN, "read_output: %s", sbx_status_name(st));
            }
        }
    }
    ck_assert_msg(ended[0] && ended[1], "the output did not end");
    expect_sbx(sbx_op_wait(op, -1), SBX_OK, sbx_op_last_error, op);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "%s", i ? "stderr" : "stdout");
        ck_assert_msg(glen[i] == wlen[i], "%s: %zu bytes, expected %zu", name, glen[i], wlen[i]);
        ck_assert_msg(memcmp(got[i], want[i], wlen[i]) == 0, "%s differs", name);
        free(got[i]);
        free(want[i]);
    }
    ck_assert_int_ge(faultd_count(x.f, "GET", "/logs$"), 4);
    sbx_op_free(op);
    sbx_command_free(k);
    fx_stop(&x);
}
END_TEST

/* The stream's data all came, its end did not: the client asks again, gets
 * nothing new, and finishes cleanly. */
START_TEST(test_client_faults_logs_lost_terminator)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};

    fx_start(&x, true, NULL, NULL);
    via_logs(&x);
    faultd_rule(x.f, "GET", "/logs$", 1, FAULT_NO_TERMINATOR, 0);
    faultd_rule(x.f, "GET", "/logs$", 2, FAULT_NO_TERMINATOR, 1);
    k = sh_cmd(x.s, SEQ_SCRIPT "; echo end >&2", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    expect_seq(o.data[0], o.len[0]);
    ck_assert_str_eq(o.data[1] ? o.data[1] : "", "end\n");
    ck_assert_int_eq(faultd_count(x.f, "GET", "/logs$"), 3);
    sbx_command_free(k);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* The client's timeout_ms bounds short requests only: a command that runs
 * longer is followed to its end; a stalled start fails with a message about
 * the deadline that applied. */
START_TEST(test_client_faults_client_timeout_and_commands)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};
    const char *post;
    int64_t t0, dt;

    fx_start(&x, true, NULL, "400");
    k = sh_cmd(x.s, "sleep 1; echo done", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "done\n");
    sbx_command_free(k);
    outbuf_free(&o);

    post = sbx_pat(&x, "/cmd");
    faultd_rule(x.f, "POST", post, 1, FAULT_STALL_AFTER, 0);
    k = sh_cmd(x.s, COUNT_SCRIPT, NULL);
    t0 = mono_ms();
    expect_sbx(sbx_command_run(k), SBX_E_TIMEOUT, sbx_command_last_error, k);
    dt = mono_ms() - t0;
    note("stalled start, client timeout_ms 400", sbx_command_last_error(k));
    ck_assert_msg(dt >= 350 && dt < 3000, "timed out after %lld ms", (long long)dt);
    ck_assert_msg(contains(sbx_command_last_error(k), "may have started"), "message: %s", sbx_command_last_error(k));
    ck_assert_int_eq(faultd_count(x.f, "POST", post), 2); /* the first command's, and this one */
    ck_assert_int_eq(settled_count(x.d, x.sid), 1);
    /* The deadline that passed was the client's 400 ms (the command has none). */
    ck_assert_msg(!contains(sbx_command_last_error(k), "its 0s deadline"),
                  "the message names a 0 ms command deadline that does not exist: %s", sbx_command_last_error(k));
    sbx_command_free(k);
    fx_stop(&x);
}
END_TEST

/* Cancelled while its start waits out a 429: the command never started, and
 * the message must not say it keeps running. */
START_TEST(test_client_faults_cancel_message_unstarted)
{
    struct fx x;
    sbx_command *k;
    sbx_op *op;
    const char *post;
    int64_t until;

    fx_start(&x, true, NULL, NULL);
    post = sbx_pat(&x, "/cmd");
    faultd_rule(x.f, "POST", post, 0, FAULT_429, 10);
    k = sh_cmd(x.s, COUNT_SCRIPT, NULL);
    ok_k(sbx_command_run_start(k, &op), k);
    until = mono_ms() + 5000;
    while (faultd_count(x.f, "POST", post) == 0 && mono_ms() < until)
        sbx_client_run(x.c, 50);
    sbx_client_run(x.c, 100);
    ok_cl(sbx_op_cancel(op), x.c);
    expect_sbx(sbx_op_wait(op, -1), SBX_E_CANCELLED, sbx_op_last_error, op);
    ck_assert_ptr_null(sbx_command_id(k));
    ck_assert_int_eq(faultd_forwarded(x.f, "POST", post), 0);
    ck_assert_msg(!contains(sbx_op_last_error(op), "keeps running"),
                  "the command was never started (429, then cancelled), yet the message says: %s",
                  sbx_op_last_error(op));
    sbx_op_free(op);
    sbx_command_free(k);
    fx_stop(&x);
}
END_TEST

/* Nothing listens: even a create is retried (it cannot have been sent). */
START_TEST(test_client_faults_connection_refused)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = sbx_client_new();
    sbx_sandbox *s;
    char url[64];
    int64_t t0, dt;

    snprintf(url, sizeof url, "http://127.0.0.1:%d", free_port());
    ok_cl(sbx_client_set_endpoint(c, url), c);
    ok_cl(sbx_client_set_credentials(c, d->token, NULL, NULL), c);
    ok_cl(sbx_client_set_option(c, "retry.max", "2"), c);
    s = sbx_sandbox_new(c);
    t0 = mono_ms();
    expect_sbx(sbx_sandbox_create(s), SBX_E_TRANSPORT, sbx_sandbox_last_error, s);
    dt = mono_ms() - t0;
    note("connection refused", sbx_sandbox_last_error(s));
    /* Two backoffs (50..150 ms, then 100..300 ms). */
    ck_assert_msg(dt >= 150 && dt < 3000, "gave up after %lld ms", (long long)dt);
    ck_assert_msg(!contains(sbx_sandbox_last_error(s), "may have reached"), "message: %s", sbx_sandbox_last_error(s));
    ck_assert_msg(!contains(sbx_sandbox_last_error(s), "may exist"), "message: %s", sbx_sandbox_last_error(s));
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

/* ---- incomplete responses, stalls, Retry-After on 503, credentials in messages ------------------------------ */

/* The connection closes inside the response's head: libcurl 7.88 calls that
 * a 200 with no body. It is a transport error, retried where safe, and
 * never an empty success. */
START_TEST(test_client_faults_cut_in_head)
{
    struct fx x;
    const char *get;
    int n0;

    fx_start(&x, true, NULL, NULL);
    get = sbx_pat(&x, "");
    n0 = faultd_count(x.f, "GET", get);
    faultd_rule(x.f, "GET", get, 1, FAULT_CUT_HEAD, 0);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    ck_assert_str_eq(sbx_sandbox_status(x.s), "running");
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 2);

    /* Every time, cut after the status line: reported as incomplete. */
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 0, FAULT_CUT_HEAD, 17);
    ok_cl(sbx_client_set_option(x.c, "retry.max", "1"), x.c);
    n0 = faultd_count(x.f, "GET", get);
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_TRANSPORT, sbx_sandbox_last_error, x.s);
    note("head cut every time", sbx_sandbox_last_error(x.s));
    ck_assert_msg(contains(sbx_sandbox_last_error(x.s), "before it was complete"), "message: %s",
                  sbx_sandbox_last_error(x.s));
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 2);
    fx_stop(&x);
}
END_TEST

/* The log stream's head cut once (on a fresh connection: the start stream
 * holds the other): the output still arrives, whole, instead of the
 * command ending with none. */
START_TEST(test_client_faults_logs_cut_in_head)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};

    fx_start(&x, true, NULL, NULL);
    via_logs(&x);
    faultd_rule(x.f, "GET", "/logs$", 1, FAULT_CUT_HEAD, 17);
    k = sh_cmd(x.s, "echo hi; exit 3", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 3);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "hi\n");
    ck_assert_int_ge(faultd_count(x.f, "GET", "/logs$"), 2);
    sbx_command_free(k);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* A file read cut in its head every time: an error, not an empty file; a
 * download leaves nothing behind. */
START_TEST(test_client_faults_read_cut_in_head)
{
    struct fx x;
    char *data = (char *)"sentinel", dir[400], local[600];
    size_t len = 7;

    fx_start(&x, true, NULL, NULL);
    sbx_write_file(x.d, x.sid, "/vercel/sandbox/f.txt", "content\n", 8, 0644);
    faultd_rule(x.f, "POST", "/fs/read$", 0, FAULT_CUT_HEAD, 17);
    expect_sbx(sbx_sandbox_read_file(x.s, "f.txt", 0, (uint8_t **)&data, &len), SBX_E_TRANSPORT, sbx_sandbox_last_error, x.s);
    ck_assert_ptr_null(data);
    snprintf(dir, sizeof dir, "%.300s/dlh", x.d->dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(local, sizeof local, "%s/f.txt", dir);
    expect_sbx(sbx_sandbox_download(x.s, "f.txt", local), SBX_E_TRANSPORT, sbx_sandbox_last_error, x.s);
    ck_assert_int_eq(host_sh("test -z \"$(ls -A '%s')\"", dir), 0);
    faultd_clear(x.f);
    ok_sb(sbx_sandbox_download(x.s, "f.txt", local), x.s);
    ck_assert_int_eq(host_sh("test \"$(cat '%s')\" = content", local), 0);
    fx_stop(&x);
}
END_TEST

/* The start of a command answered with a cut head: it may have started,
 * so it is reported, not sent again, and not called a protocol error. On a
 * fresh connection: on a reused one libcurl resends by itself (which the
 * engine stops, cmd_reset_not_forwarded), and the cut looks different. */
START_TEST(test_client_faults_cmd_cut_in_head)
{
    struct fx x;
    sbx_command *k;
    const char *post;

    fx_start(&x, true, NULL, NULL);
    post = sbx_pat(&x, "/cmd");
    faultd_rule(x.f, "GET", sbx_pat(&x, ""), 1, FAULT_CLOSE_AFTER, 0);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    usleep(100000); /* the FIN is in: libcurl does not reuse the connection */
    /* Just the status line: with a Transfer-Encoding header in, libcurl
     * would call it a short body itself. */
    faultd_rule(x.f, "POST", post, 1, FAULT_CUT_HEAD, 17);
    k = sh_cmd(x.s, COUNT_SCRIPT, NULL);
    expect_sbx(sbx_command_run(k), SBX_E_TRANSPORT, sbx_command_last_error, k);
    note("start, head cut", sbx_command_last_error(k));
    ck_assert_msg(contains(sbx_command_last_error(k), "may have reached the server"), "message: %s",
                  sbx_command_last_error(k));
    ck_assert_int_eq(faultd_count(x.f, "POST", post), 1);
    ck_assert_int_eq(settled_count(x.d, x.sid), 1);
    ck_assert_int_eq(faultd_count(x.f, "GET", "/cmd/"), 0);
    sbx_command_free(k);
    fx_stop(&x);
}
END_TEST

/* Cut inside a chunk-size line of the log stream and of the start stream.
 * libcurl catches this one itself; the engine must keep treating it as a
 * cut (the log stream is asked for again; the exit code is asked for). */
START_TEST(test_client_faults_cut_in_chunk_size)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};
    int w0;

    fx_start(&x, true, NULL, NULL);
    via_logs(&x);
    faultd_rule(x.f, "GET", "/logs$", 1, FAULT_CUT_CHUNK_SIZE, 3000);
    k = sh_cmd(x.s, SEQ_SCRIPT, &o);
    ok_k(sbx_command_run(k), k);
    expect_seq(o.data[0], o.len[0]);
    ck_assert_int_ge(faultd_count(x.f, "GET", "/logs$"), 2);
    sbx_command_free(k);
    outbuf_free(&o);

    ok_cl(sbx_client_set_option(x.c, "command.follow", "wait"), x.c);
    w0 = faultd_count(x.f, "GET", "wait=true"); /* via_logs asked for one */
    faultd_rule(x.f, "POST", sbx_pat(&x, "/cmd"), 1, FAULT_CUT_CHUNK_SIZE, 1);
    k = sh_cmd(x.s, "echo a; sleep 0.3; exit 2", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 2);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "a\n");
    ck_assert_int_eq(faultd_count(x.f, "POST", sbx_pat(&x, "/cmd")), 2);
    ck_assert_int_eq(faultd_count(x.f, "GET", "wait=true") - w0, 1);
    sbx_command_free(k);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* A body framed only by the connection's end cannot be told from a cut. */
START_TEST(test_client_faults_no_framing)
{
    struct fx x;
    const char *get;
    int n0;

    fx_start(&x, true, "1", NULL);
    get = sbx_pat(&x, "");
    n0 = faultd_count(x.f, "GET", get);
    faultd_rule(x.f, "GET", get, 0, FAULT_NO_FRAMING, 0);
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_TRANSPORT, sbx_sandbox_last_error, x.s);
    note("no framing", sbx_sandbox_last_error(x.s));
    ck_assert_msg(contains(sbx_sandbox_last_error(x.s), "before it was complete"), "message: %s",
                  sbx_sandbox_last_error(x.s));
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 2);
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 1, FAULT_NO_FRAMING, 0);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    fx_stop(&x);
}
END_TEST

/* 503 with Retry-After: honoured as for 429; a wait past the cap or the
 * deadline is reported at once; a request with an effect is not repeated. */
START_TEST(test_client_faults_503_retry_after)
{
    struct fx x;
    const char *get;
    sbx_sandbox *s;
    int64_t t0, dt;
    int n0;

    fx_start(&x, true, NULL, NULL);
    get = sbx_pat(&x, "");
    n0 = faultd_count(x.f, "GET", get);
    faultd_rule(x.f, "GET", get, 1, FAULT_503, 1);
    t0 = mono_ms();
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    dt = mono_ms() - t0;
    ck_assert_msg(dt >= 900 && dt < 5000, "the retry came after %lld ms, with Retry-After: 1", (long long)dt);
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 2);

    /* Beyond the cap (60 s): reported, not slept. */
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 0, FAULT_503, 120);
    n0 = faultd_count(x.f, "GET", get);
    t0 = mono_ms();
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_HTTP, sbx_sandbox_last_error, x.s);
    ck_assert_msg(mono_ms() - t0 < 1000, "took %lld ms", (long long)(mono_ms() - t0));
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 1);

    /* Beyond the request's deadline: reported at once. */
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 0, FAULT_503, 5);
    ok_cl(sbx_client_set_option(x.c, "timeout_ms", "2000"), x.c);
    n0 = faultd_count(x.f, "GET", get);
    t0 = mono_ms();
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_HTTP, sbx_sandbox_last_error, x.s);
    ck_assert_msg(mono_ms() - t0 < 1500, "took %lld ms", (long long)(mono_ms() - t0));
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 1);
    ok_cl(sbx_client_set_option(x.c, "timeout_ms", "0"), x.c);

    /* A create is not repeated on a 503, Retry-After or not, and a 5xx
     * leaves its outcome unknown. */
    faultd_clear(x.f);
    faultd_rule(x.f, "POST", IT_CREATE_RE, 1, FAULT_503, 1);
    s = sbx_sandbox_new(x.c);
    expect_sbx(sbx_sandbox_create(s), SBX_E_TRANSPORT, sbx_sandbox_last_error, s);
    ck_assert_msg(strncmp(sbx_sandbox_last_error(s), "a sandbox may exist: ", 21) == 0, "%s",
                  sbx_sandbox_last_error(s));
    ck_assert_int_eq(faultd_count(x.f, "POST", IT_CREATE_RE), 1);
    sbx_sandbox_free(s);
    fx_stop(&x);
}
END_TEST

/* No deadline set: a server that stops answering is still detected, by the
 * idle timeout, and a stall is retried once at most. */
START_TEST(test_client_faults_stall_idle_timeout)
{
    struct fx x;
    const char *get;
    sbx_sandbox *s;
    int64_t t0, dt;
    int n0;

    fx_start(&x, true, NULL, NULL);
    ok_cl(sbx_client_set_option(x.c, "idle_timeout_ms", "1000"), x.c);
    get = sbx_pat(&x, "");

    /* Nothing at all. */
    faultd_rule(x.f, "GET", get, 0, FAULT_STALL, 0);
    n0 = faultd_count(x.f, "GET", get);
    t0 = mono_ms();
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_TRANSPORT, sbx_sandbox_last_error, x.s);
    dt = mono_ms() - t0;
    note("stall, idle 1000 ms", sbx_sandbox_last_error(x.s));
    ck_assert_msg(dt >= 1900 && dt < 2000 + 5000, "gave up after %lld ms (idle 1000 ms, one retry)", (long long)dt);
    ck_assert_msg(contains(sbx_sandbox_last_error(x.s), "stalled"), "message: %s", sbx_sandbox_last_error(x.s));
    ck_assert_int_eq(faultd_count(x.f, "GET", get) - n0, 2);

    /* The head, then silence. */
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 0, FAULT_STALL_MID, 0);
    t0 = mono_ms();
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_TRANSPORT, sbx_sandbox_last_error, x.s);
    dt = mono_ms() - t0;
    ck_assert_msg(dt >= 1900 && dt < 2000 + 5000, "gave up after %lld ms", (long long)dt);

    /* A pause shorter than the idle timeout is not a stall. */
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 0, FAULT_STALL_MID, 400);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);

    /* A create that stalls is not sent again. */
    faultd_clear(x.f);
    faultd_rule(x.f, "POST", IT_CREATE_RE, 0, FAULT_STALL, 0);
    s = sbx_sandbox_new(x.c);
    t0 = mono_ms();
    expect_sbx(sbx_sandbox_create(s), SBX_E_TRANSPORT, sbx_sandbox_last_error, s);
    ck_assert_msg(mono_ms() - t0 < 1000 + 5000, "took %lld ms", (long long)(mono_ms() - t0));
    ck_assert_msg(contains(sbx_sandbox_last_error(s), "may have reached the server"), "message: %s",
                  sbx_sandbox_last_error(s));
    ck_assert_int_eq(faultd_count(x.f, "POST", IT_CREATE_RE), 1);
    sbx_sandbox_free(s);
    fx_stop(&x);
}
END_TEST

/* A followed command's streams may be silent: the command is asked about
 * then, and while it runs, silence is fine. */
START_TEST(test_client_faults_stream_probe)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};
    char pat[300];

    fx_start(&x, true, NULL, NULL);
    ok_cl(sbx_client_set_option(x.c, "probe_after_ms", "500"), x.c);
    ok_cl(sbx_client_set_option(x.c, "probe_timeout_ms", "2000"), x.c);

    /* Silent for 2 s, longer than the probe period: fine. */
    k = sh_cmd(x.s, "sleep 2; echo done", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "done\n");
    snprintf(pat, sizeof pat, "/cmd/%s$", sbx_command_id(k));
    ck_assert_int_ge(faultd_count(x.f, "GET", pat), 1);
    sbx_command_free(k);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* The log stream sends its head, then nothing, ever, while the command
 * runs and exits: the check finds it exited, and the stream is asked for
 * again instead of waited on forever. */
START_TEST(test_client_faults_stream_stuck_after_exit)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};
    int n0;

    fx_start(&x, true, NULL, NULL);
    ok_cl(sbx_client_set_option(x.c, "probe_after_ms", "500"), x.c);
    ok_cl(sbx_client_set_option(x.c, "probe_timeout_ms", "2000"), x.c);
    via_logs(&x);
    n0 = faultd_count(x.f, "GET", "/logs$");
    faultd_rule(x.f, "GET", "/logs$", 1, FAULT_STALL_MID, 0);
    k = sh_cmd(x.s, "echo one; sleep 1; echo two; exit 6", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 6);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "one\ntwo\n");
    ck_assert_int_eq(faultd_count(x.f, "GET", "/logs$") - n0, 2);
    sbx_command_free(k);
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* sbxd stopped (SIGSTOP): neither a short call nor a followed command, nor a
 * wait for a command's exit, waits forever. */
START_TEST(test_client_faults_server_stopped)
{
    struct fx x;
    sbx_command *k, *k2;
    sbx_op *op;
    char *cid;
    int64_t t0, dt, until;

    fx_start(&x, true, NULL, NULL);
    ok_cl(sbx_client_set_option(x.c, "idle_timeout_ms", "1000"), x.c);
    ok_cl(sbx_client_set_option(x.c, "probe_after_ms", "1000"), x.c);
    ok_cl(sbx_client_set_option(x.c, "probe_timeout_ms", "1000"), x.c);
    cid = sbx_detach_sh(x.d, x.sid, "sleep 60");

    k = sh_cmd(x.s, "echo started; sleep 60", NULL);
    ok_k(sbx_command_run_start(k, &op), k);
    until = mono_ms() + 5000;
    while (faultd_count(x.f, "GET", "/logs$") == 0 && mono_ms() < until)
        sbx_client_run(x.c, 50);
    sbx_client_run(x.c, 300);
    ck_assert_int_eq(sbx_op_done(op), 0);

    ck_assert_int_eq(kill(x.d->pid, SIGSTOP), 0);
    t0 = mono_ms();
    expect_sbx(sbx_op_wait(op, -1), SBX_E_TRANSPORT, sbx_op_last_error, op);
    dt = mono_ms() - t0;
    note("sbxd stopped, followed command", sbx_op_last_error(op));
    ck_assert_msg(dt < 1000 + 1000 + 5000, "took %lld ms", (long long)dt);
    ck_assert_msg(contains(sbx_op_last_error(op), "stopped answering"), "message: %s", sbx_op_last_error(op));
    sbx_op_free(op);

    t0 = mono_ms();
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_TRANSPORT, sbx_sandbox_last_error, x.s);
    ck_assert_msg(mono_ms() - t0 < 2000 + 5000, "took %lld ms", (long long)(mono_ms() - t0));

    k2 = sbx_command_new(x.s);
    ck_assert_ptr_nonnull(k2);
    ck_assert_int_eq(kill(x.d->pid, SIGCONT), 0);
    ok_k(sbx_command_fetch(k2, cid), k2);
    ck_assert_int_eq(kill(x.d->pid, SIGSTOP), 0);
    t0 = mono_ms();
    expect_sbx(sbx_command_wait_exit(k2), SBX_E_TRANSPORT, sbx_command_last_error, k2);
    note("sbxd stopped, wait for exit", sbx_command_last_error(k2));
    ck_assert_msg(mono_ms() - t0 < 1000 + 1000 + 5000, "took %lld ms", (long long)(mono_ms() - t0));
    ck_assert_int_eq(kill(x.d->pid, SIGCONT), 0);
    sbx_command_free(k2);
    sbx_command_free(k);
    free(cid);
    fx_stop(&x);
}
END_TEST

/* A create with a source is answered only once sbxd has cloned it, with
 * nothing on the wire meanwhile: the client checks the server after each
 * silent probe_after_ms (a list of one sandbox) instead of failing the
 * create, or waiting forever. A live server is left to answer; a stopped
 * one fails the create in about probe_after_ms + probe_timeout_ms, saying
 * a sandbox may exist. */
START_TEST(test_client_faults_create_with_source_checks_a_silent_server)
{
    struct fx x;
    sbx_sandbox *s;
    sbx_op *op;
    char dir[] = "/var/tmp/sbx-faults-git-XXXXXX", url[400];
    int64_t t0, dt;

    fx_start(&x, false, NULL, NULL);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    sbxd_cleanup_path(x.d, dir);
    ck_assert_int_eq(host_sh("set -e; cd '%s'; git init -q -b main repo; cd repo; echo one > f.txt; git add -A;"
                             "git -c user.name=t -c user.email=t@e commit -qm 1",
                             dir),
                     0);
    snprintf(url, sizeof url, "file://%s/repo", dir);

    /* Live: checked after each 100 ms of silence, and still made. The
     * proxy holds the answer back 5 s (a slow clone): time for many checks
     * to reach it even on a loaded machine under ASan. */
    ok_cl(sbx_client_set_option(x.c, "probe_after_ms", "100"), x.c);
    faultd_rule(x.f, "POST", "/sandboxes", 1, FAULT_DELAY, 5000);
    s = sbx_sandbox_new(x.c);
    ok_sb(sbx_sandbox_set_source_git(s, url, NULL, 0), s);
    ok_sb(sbx_sandbox_create(s), s);
    if (faultd_count(x.f, "GET", "limit=1") < 1)
        faultd_dump(x.f);
    ck_assert_msg(faultd_count(x.f, "GET", "limit=1") >= 1, "the silent create was never checked");
    ck_assert_int_eq(faultd_count(x.f, "POST", "/sandboxes"), 1);
    sbx_sandbox_free(s);
    faultd_clear(x.f);

    /* Stopped: the check gets no answer. */
    ok_cl(sbx_client_set_option(x.c, "probe_after_ms", "1000"), x.c);
    ok_cl(sbx_client_set_option(x.c, "probe_timeout_ms", "1000"), x.c);
    s = sbx_sandbox_new(x.c);
    ok_sb(sbx_sandbox_set_source_git(s, url, NULL, 0), s);
    ck_assert_int_eq(kill(x.d->pid, SIGSTOP), 0);
    t0 = mono_ms();
    ok_sb(sbx_sandbox_create_start(s, &op), s);
    ck_assert_msg(sbx_op_wait(op, 20000) == SBX_E_TRANSPORT, "the create of a stopped server: %s (%s)",
                  sbx_status_name(sbx_op_status(op)), sbx_op_last_error(op));
    dt = mono_ms() - t0;
    note("sbxd stopped, create with a source", sbx_op_last_error(op));
    ck_assert_msg(dt < 1000 + 1000 + 5000, "took %lld ms", (long long)dt);
    ck_assert_msg(contains(sbx_op_last_error(op), "a sandbox may exist") &&
                      contains(sbx_op_last_error(op), "stopped answering"),
                  "message: %s", sbx_op_last_error(op));
    sbx_op_free(op);
    ck_assert_int_eq(kill(x.d->pid, SIGCONT), 0);
    sbx_sandbox_free(s);
    fx_stop(&x);
}
END_TEST

/* The kill sent at a command's deadline gets no answer: the op still ends
 * soon after the deadline, with a readable message. */
START_TEST(test_client_faults_kill_stalls)
{
    struct fx x;
    sbx_command *k;
    int64_t t0, dt;

    fx_start(&x, true, NULL, NULL);
    faultd_rule(x.f, "POST", "/kill$", 0, FAULT_STALL, 0);
    k = sh_cmd(x.s, "sleep 30", NULL);
    ok_k(sbx_command_set_timeout_ms(k, 1000), k);
    t0 = mono_ms();
    expect_sbx(sbx_command_run(k), SBX_E_TIMEOUT, sbx_command_last_error, k);
    dt = mono_ms() - t0;
    note("kill stalls", sbx_command_last_error(k));
    ck_assert_msg(dt >= 950 && dt < 1000 + 5000 + 2000, "ended after %lld ms (deadline 1000 ms, grace 5000 ms)",
                  (long long)dt);
    ck_assert_msg(contains(sbx_command_last_error(k), "killing it failed") &&
                      contains(sbx_command_last_error(k), "the request's deadline)"),
                  "message: %s", sbx_command_last_error(k));
    sbx_command_free(k);
    fx_stop(&x);
}
END_TEST

/* user:password in the endpoint URL is sent, but never shown. */
START_TEST(test_client_faults_endpoint_userinfo)
{
    struct fx x;
    sbx_client *c;
    sbx_sandbox *s;
    char url[200];

    fx_start(&x, true, NULL, NULL);
    snprintf(url, sizeof url, "http://alice:s3cret%%40pw@127.0.0.1:%d", faultd_port(x.f));
    c = sbx_client_new();
    ck_assert_ptr_nonnull(c);
    ok_cl(sbx_client_set_endpoint(c, url), c);
    ck_assert_msg(!contains(sbx_client_endpoint(c), "s3cret") && !contains(sbx_client_endpoint(c), "alice"),
                  "endpoint: %s", sbx_client_endpoint(c));
    ok_cl(sbx_client_set_credentials(c, x.d->token, NULL, NULL), c);
    ok_cl(sbx_client_set_option(c, "retry.max", "0"), c);
    s = sbx_sandbox_new(c);
    ok_sb(sbx_sandbox_fetch(s, x.sid), s);
    faultd_rule(x.f, "GET", sbx_pat(&x, ""), 0, FAULT_RESET, 0);
    expect_sbx(sbx_sandbox_refresh(s), SBX_E_TRANSPORT, sbx_sandbox_last_error, s);
    note("userinfo endpoint, reset", sbx_sandbox_last_error(s));
    ck_assert_msg(!contains(sbx_sandbox_last_error(s), "s3cret") && !contains(sbx_sandbox_last_error(s), "alice"),
                  "message: %s", sbx_sandbox_last_error(s));
    ck_assert_msg(contains(sbx_sandbox_last_error(s), "127.0.0.1"), "message: %s", sbx_sandbox_last_error(s));
    sbx_sandbox_free(s);
    sbx_client_free(c);
    c = sbx_client_new();
    ck_assert_ptr_nonnull(c);
    expect_sbx(sbx_client_set_endpoint(c, "ftp://alice:s3cret@example.com"), SBX_E_INVALID_ARG,
               sbx_client_last_error, c);
    ck_assert_msg(!contains(sbx_client_last_error(c), "s3cret"), "message: %s", sbx_client_last_error(c));
    sbx_client_free(c);
    fx_stop(&x);
}
END_TEST

/* A unix socket that is not there: named, with the reason. */
/* ---- the log callback ------------------------------------------------------------------ */

/* What a log callback received, and what it could call from inside. */
struct logs {
    sbx_client *c;
    sbx_sandbox *s;
    pthread_t thread;          /* the test's: every call must come on it */
    bool try_calls;            /* call mutating functions from inside */
    int n, other_thread, misuse, not_misuse;
    int level[512];
    char *line[512];
};

static void log_collect(sbx_log_level level, const char *msg, void *user)
{
    struct logs *l = user;
    if (!pthread_equal(pthread_self(), l->thread))
        l->other_thread++;
    if (l->try_calls) {
        sbx_status v[] = {sbx_client_set_option(l->c, "retry.max", "3"),
                          sbx_client_set_log_cb(l->c, SBX_LOG_DEBUG, NULL, NULL), sbx_sandbox_refresh(l->s)};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
            *(v[i] == SBX_E_MISUSE ? &l->misuse : &l->not_misuse) += 1;
    }
    note("log", msg);
    if (l->n < (int)(sizeof l->line / sizeof l->line[0])) {
        l->level[l->n] = (int)level;
        l->line[l->n++] = strdup(msg);
    }
}

static void logs_reset(struct logs *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->line[i]);
    l->n = 0;
}

/* Lines at this level (-1: any) holding a and b (NULL: anything). */
static int logs_count(const struct logs *l, int level, const char *a, const char *b)
{
    int n = 0;
    for (int i = 0; i < l->n; i++)
        if ((level < 0 || l->level[i] == level) && (!a || strstr(l->line[i], a)) && (!b || strstr(l->line[i], b)))
            n++;
    return n;
}

static void logs_dump(const struct logs *l)
{
    for (int i = 0; i < l->n; i++)
        fprintf(stderr, "# log %d: %s\n", l->level[i], l->line[i]);
}

/* A 503 with Retry-After is a WARN naming the path and the wait; levels
 * filter; an answer that ends the request is an ERROR; removing the
 * callback stops the messages; no message holds the token. */
/* A kept-alive connection dies under a request before any answer (a
 * server's idle close racing it): libcurl sends the request again on a new
 * connection, and the log says so (INFO), once. */
START_TEST(test_client_faults_log_reconnect)
{
    struct fx x;
    struct logs l = {0};
    const char *get;

    fx_start(&x, true, NULL, NULL);
    l.c = x.c;
    l.s = x.s;
    l.thread = pthread_self();
    get = sbx_pat(&x, "");
    ok_sb(sbx_sandbox_refresh(x.s), x.s); /* a connection, kept alive */
    ok_cl(sbx_client_set_log_cb(x.c, SBX_LOG_DEBUG, log_collect, &l), x.c);
    faultd_rule(x.f, "GET", get, 1, FAULT_RESET, 0);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    if (logs_count(&l, SBX_LOG_INFO, NULL, "went on a new one") != 1)
        logs_dump(&l);
    ck_assert_int_eq(logs_count(&l, SBX_LOG_INFO, "the reused connection had closed", "went on a new one"), 1);
    logs_reset(&l);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_log_retry_levels)
{
    struct fx x;
    struct logs l = {0};
    const char *get;
    char path[200];

    fx_start(&x, true, NULL, NULL);
    l.c = x.c;
    l.s = x.s;
    l.thread = pthread_self();
    get = sbx_pat(&x, "");
    snprintf(path, sizeof path, "GET %s/%s:", IT_SESSIONS, x.sid);
    ok_cl(sbx_client_set_log_cb(x.c, SBX_LOG_DEBUG, log_collect, &l), x.c);
    faultd_rule(x.f, "GET", get, 1, FAULT_503, 1);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    if (logs_count(&l, SBX_LOG_WARN, path, "HTTP 503 with Retry-After 1 s") != 1)
        logs_dump(&l);
    ck_assert_int_eq(logs_count(&l, SBX_LOG_WARN, path, "HTTP 503 with Retry-After 1 s"), 1);
    ck_assert_int_eq(logs_count(&l, SBX_LOG_WARN, path, "in 1000 ms"), 1);
    ck_assert_int_eq(logs_count(&l, SBX_LOG_DEBUG, path, "started"), 2); /* each attempt */
    ck_assert_int_eq(logs_count(&l, SBX_LOG_DEBUG, path, "attempt 2 started"), 1);
    ck_assert_int_eq(logs_count(&l, SBX_LOG_DEBUG, path, "done: HTTP 200"), 1);
    ck_assert_int_eq(logs_count(&l, SBX_LOG_ERROR, NULL, NULL), 0);

    /* Retry-After beyond the cap: the answer ends the request, an ERROR. */
    logs_reset(&l);
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 0, FAULT_503, 120);
    expect_sbx(sbx_sandbox_refresh(x.s), SBX_E_HTTP, sbx_sandbox_last_error, x.s);
    ck_assert_int_eq(logs_count(&l, SBX_LOG_ERROR, path, "failed: HTTP 503"), 1);

    /* At WARN, no DEBUG (nor INFO) message is made. */
    logs_reset(&l);
    ok_cl(sbx_client_set_log_cb(x.c, SBX_LOG_WARN, log_collect, &l), x.c);
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 1, FAULT_503, 1);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    ck_assert_int_eq(logs_count(&l, SBX_LOG_WARN, path, "Retry-After"), 1);
    ck_assert_int_eq(logs_count(&l, SBX_LOG_DEBUG, NULL, NULL), 0);
    ck_assert_int_eq(logs_count(&l, SBX_LOG_INFO, NULL, NULL), 0);
    ck_assert_int_eq(l.other_thread, 0);

    /* Removed: nothing more. */
    for (int i = 0; i < l.n; i++)
        ck_assert_msg(!strstr(l.line[i], x.d->token), "the token in: %s", l.line[i]);
    logs_reset(&l);
    ok_cl(sbx_client_set_log_cb(x.c, SBX_LOG_DEBUG, NULL, NULL), x.c);
    faultd_rule(x.f, "GET", get, 1, FAULT_503, 1);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    ck_assert_int_eq(l.n, 0);

    expect_sbx(sbx_client_set_log_cb(x.c, (sbx_log_level)4, log_collect, &l), SBX_E_INVALID_ARG,
               sbx_client_last_error, x.c);
    expect_sbx(sbx_client_set_log_cb(x.c, (sbx_log_level)-1, log_collect, &l), SBX_E_INVALID_ARG,
               sbx_client_last_error, x.c);
    expect_sbx(sbx_client_set_log_cb(NULL, SBX_LOG_DEBUG, log_collect, &l), SBX_E_INVALID_ARG,
               sbx_client_last_error, (sbx_client *)NULL);
    fx_stop(&x);
}
END_TEST

/* A slow answer is a WARN, once per attempt, with the threshold set low;
 * 0 turns it off. Inside the callback, mutating calls are refused. */
START_TEST(test_client_faults_log_slow_and_misuse)
{
    struct fx x;
    struct logs l = {0};
    const char *get;
    char path[200];

    fx_start(&x, true, NULL, NULL);
    l.c = x.c;
    l.s = x.s;
    l.thread = pthread_self();
    l.try_calls = true;
    get = sbx_pat(&x, "");
    snprintf(path, sizeof path, "GET %s/%s:", IT_SESSIONS, x.sid);
    expect_sbx(sbx_client_set_option(x.c, "log.slow_request_ms", "-1"), SBX_E_INVALID_ARG, sbx_client_last_error,
               x.c);
    ck_assert(strstr(sbx_client_last_error(x.c), "log.slow_request_ms"));
    ok_cl(sbx_client_set_option(x.c, "log.slow_request_ms", "100"), x.c);
    ok_cl(sbx_client_set_log_cb(x.c, SBX_LOG_DEBUG, log_collect, &l), x.c);
    faultd_rule(x.f, "GET", get, 1, FAULT_STALL_MID, 600);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    if (logs_count(&l, SBX_LOG_WARN, path, "slow") != 1)
        logs_dump(&l);
    ck_assert_int_eq(logs_count(&l, SBX_LOG_WARN, path, "slow"), 1);
    ck_assert_int_eq(logs_count(&l, SBX_LOG_WARN, path, "log.slow_request_ms 100"), 1);
    ck_assert_int_gt(l.misuse, 0);
    ck_assert_int_eq(l.not_misuse, 0);
    ck_assert_int_eq(l.other_thread, 0);
    for (int i = 0; i < l.n; i++)
        ck_assert_msg(!strstr(l.line[i], x.d->token), "the token in: %s", l.line[i]);
    /* The calls refused inside changed nothing: the callback is still set. */
    logs_reset(&l);
    l.try_calls = false;
    ok_cl(sbx_client_set_option(x.c, "log.slow_request_ms", "0"), x.c);
    faultd_clear(x.f);
    faultd_rule(x.f, "GET", get, 1, FAULT_STALL_MID, 400);
    ok_sb(sbx_sandbox_refresh(x.s), x.s);
    ck_assert_int_gt(l.n, 0);
    ck_assert_int_eq(logs_count(&l, -1, NULL, "slow"), 0);
    logs_reset(&l);
    fx_stop(&x);
}
END_TEST

START_TEST(test_client_faults_unix_socket_missing)
{
    sbx_client *c = sbx_client_new();
    sbx_sandbox *s;

    ck_assert_ptr_nonnull(c);
    ok_cl(sbx_client_set_endpoint(c, "unix:/nonexistent/sbxd.sock"), c);
    ok_cl(sbx_client_set_credentials(c, "sbxd_test_token", NULL, NULL), c);
    ok_cl(sbx_client_set_option(c, "retry.max", "0"), c);
    s = sbx_sandbox_new(c);
    expect_sbx(sbx_sandbox_fetch(s, "sbx_x"), SBX_E_TRANSPORT, sbx_sandbox_last_error, s);
    note("missing unix socket", sbx_sandbox_last_error(s));
    ck_assert_msg(contains(sbx_sandbox_last_error(s), "/nonexistent/sbxd.sock") &&
                      contains(sbx_sandbox_last_error(s), "No such file") &&
                      !contains(sbx_sandbox_last_error(s), "port 80"),
                  "message: %s", sbx_sandbox_last_error(s));
    sbx_sandbox_free(s);
    sbx_client_free(c);
}
END_TEST

/* ---- faultd itself, seen from a raw socket ------------------------------------------------------------------ */

static int raw_connect(const struct faultd *f)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)faultd_port(f));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void raw_send(int fd, struct sbxd *d, const char *method, const char *path)
{
    char req[2048];
    int n = snprintf(req, sizeof req,
                     "%s %s?teamId=team_x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                     "Content-Type: application/json\r\nContent-Length: 0\r\n\r\n",
                     method, path, d->token);
    ck_assert_int_eq(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
}

/* Read until the connection ends (*how: 0 EOF, else the errno) or stays
 * quiet for idle_ms. */
static char *raw_read(int fd, size_t *len, int *how, int idle_ms)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    *how = -1;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t r;
        if (poll(&p, 1, idle_ms) <= 0)
            break;
        if (cap - n < 8192) {
            cap *= 2;
            b = realloc(b, cap + 1);
        }
        r = recv(fd, b + n, cap - n, 0);
        if (r <= 0) {
            *how = r == 0 ? 0 : errno;
            break;
        }
        n += (size_t)r;
    }
    b[n] = '\0';
    *len = n;
    return b;
}

START_TEST(test_client_faults_faultd_selftest)
{
    struct fx x;
    char path[256], *b, *cid;
    const char *body;
    size_t len, data = 0;
    int fd, how;

    fx_start(&x, true, NULL, NULL);
    snprintf(path, sizeof path, "%s/%s", IT_SESSIONS, x.sid);

    /* 429 with its header, then the same connection forwards. */
    faultd_rule(x.f, "GET", sbx_pat(&x, ""), 1, FAULT_429, 7);
    fd = raw_connect(x.f);
    raw_send(fd, x.d, "GET", path);
    b = raw_read(fd, &len, &how, 300);
    ck_assert_msg(strncmp(b, "HTTP/1.1 429 ", 13) == 0 && contains(b, "\r\nRetry-After: 7\r\n"), "%s", b);
    ck_assert_int_eq(how, -1); /* still open */
    free(b);
    raw_send(fd, x.d, "GET", path);
    b = raw_read(fd, &len, &how, 300);
    ck_assert_msg(strncmp(b, "HTTP/1.1 200 ", 13) == 0 && contains(b, x.sid), "%s", b);
    free(b);
    close(fd);
    ck_assert_int_eq(faultd_forwarded(x.f, "GET", sbx_pat(&x, "")), 2); /* fx_start's and this one */

    /* A reset before any byte. */
    faultd_rule(x.f, "GET", sbx_pat(&x, ""), 1, FAULT_RESET, 0);
    fd = raw_connect(x.f);
    raw_send(fd, x.d, "GET", path);
    b = raw_read(fd, &len, &how, 2000);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(how, ECONNRESET);
    free(b);
    close(fd);

    /* A reset after the head and 100 bytes of the body. */
    faultd_rule(x.f, "GET", sbx_pat(&x, ""), 1, FAULT_RESET_MID, 100);
    fd = raw_connect(x.f);
    raw_send(fd, x.d, "GET", path);
    b = raw_read(fd, &len, &how, 2000);
    body = strstr(b, "\r\n\r\n");
    ck_assert_ptr_nonnull(body);
    ck_assert_uint_eq(len - (size_t)(body + 4 - b), 100);
    ck_assert_int_eq(how, ECONNRESET);
    free(b);
    close(fd);

    /* Huge headers. */
    faultd_rule(x.f, "GET", sbx_pat(&x, ""), 1, FAULT_HUGE_HEADERS, 300000);
    fd = raw_connect(x.f);
    raw_send(fd, x.d, "GET", path);
    b = raw_read(fd, &len, &how, 300);
    body = strstr(b, "\r\n\r\n");
    ck_assert_ptr_nonnull(body);
    ck_assert_uint_ge((size_t)(body - b), 300000);
    ck_assert(contains(body, x.sid));
    free(b);
    close(fd);

    /* A chunked NDJSON stream cut in the middle of a line, closed with a
     * FIN and no last chunk. */
    cid = sbx_detach_sh(x.d, x.sid, "seq 1 5000");
    ck_assert_int_eq(sbx_cmd_wait(x.d, x.sid, cid), 0);
    faultd_rule(x.f, "GET", "/logs$", 1, FAULT_TRUNCATE, 1000);
    snprintf(path, sizeof path, "%s/%s/cmd/%s/logs", IT_SESSIONS, x.sid, cid);
    fd = raw_connect(x.f);
    raw_send(fd, x.d, "GET", path);
    b = raw_read(fd, &len, &how, 2000);
    ck_assert_int_eq(how, 0);
    ck_assert_msg(contains(b, "Transfer-Encoding: chunked") || contains(b, "transfer-encoding: chunked"), "%s", b);
    body = strstr(b, "\r\n\r\n") + 4;
    {
        const char *p = body, *end = b + len;
        char last = 0;
        bool terminated = false;
        while (p < end) {
            char *eol;
            unsigned long sz = strtoul(p, &eol, 16);
            ck_assert_msg(eol[0] == '\r' && eol[1] == '\n', "bad chunk framing at %zu", (size_t)(p - body));
            if (sz == 0) {
                terminated = true;
                break;
            }
            ck_assert_msg(eol + 2 + sz + 2 <= end, "a partial chunk (the cut must be clean)");
            last = eol[2 + sz - 1];
            data += sz;
            p = eol + 2 + sz + 2;
        }
        ck_assert_msg(!terminated, "the stream has its last chunk");
        ck_assert_msg(last != '\n', "the cut is at the end of a line");
        ck_assert_uint_ge(data, 500);
        ck_assert_uint_le(data, 1000);
    }
    free(b);
    close(fd);
    free(cid);
    fx_stop(&x);
}
END_TEST

/* ---- no fault: the proxy itself is transparent -------------------------------------------------------------- */

START_TEST(test_client_faults_passthrough)
{
    struct fx x;
    sbx_command *k;
    struct outbuf o = {0};
    char *data = NULL;
    size_t len = 0;

    fx_start(&x, true, NULL, NULL);
    k = sh_cmd(x.s, SEQ_SCRIPT, &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    expect_seq(o.data[0], o.len[0]);
    sbx_command_free(k);
    ok_sb(sbx_sandbox_write_file(x.s, "p.txt", (const uint8_t *)"pass\n", 5, 0600), x.s);
    ok_sb(sbx_sandbox_read_file(x.s, "p.txt", 0, (uint8_t **)&data, &len), x.s);
    ck_assert_uint_eq(len, 5);
    ck_assert_mem_eq(data, "pass\n", 5);
    sbx_free(data);
    ck_assert_int_eq(faultd_faulted(x.f), 0);
    /* Kept alive through the proxy: a connection or two, not one per request. */
    ck_assert_msg(faultd_connections(x.f) <= 2, "%d connections for %d requests", faultd_connections(x.f),
                  faultd_count(x.f, NULL, ""));
    outbuf_free(&o);
    fx_stop(&x);
}
END_TEST

/* ---- 2.x: a session on its way out --------------------------------------------------------------------- */

/* 422 sandbox_stopping / sandbox_snapshotting: the session is stopping;
 * the op resumes the named sandbox (GET ...?resume=true) and is repeated
 * once, as the 2.x SDKs do. Another 422, a second one in a row, and a
 * failed resume are the answer. v1 has no sessions: the 422 is the answer. */
START_TEST(test_client_faults_session_stopping_resumed)
{
    struct fx x;
    struct outbuf o = {0};
    sbx_command *k;
    sbx_sandbox *s;
    char name[40], sid[64];
    int fwd, resumes;

    fx_start(&x, false, NULL, NULL);
    s = sbx_sandbox_new(x.c);
    if (it_v2()) {
        snprintf(name, sizeof name, "st-%s", rand_hex(8));
        ok_sb(sbx_sandbox_set_name(s, name), s);
        ok_sb(sbx_sandbox_set_persistent(s, 1), s);
    }
    ok_sb(sbx_sandbox_create(s), s);
    snprintf(sid, sizeof sid, "%s", sbx_sandbox_id(s));
    if (!it_v2()) {
        faultd_rule(x.f, "POST", "/fs/mkdir$", 1, FAULT_STOPPING, 0);
        expect_sbx(sbx_sandbox_mkdir(s, "/vercel/sandbox/a"), SBX_E_HTTP, sbx_sandbox_last_error, s);
        ck_assert_int_eq(faultd_count(x.f, "POST", "/fs/mkdir$"), 1);
        ck_assert_int_eq(faultd_count(x.f, "GET", "resume=true"), 0);
        goto out;
    }
    /* stopping: resumed (the session still runs: the same one), repeated */
    faultd_rule(x.f, "POST", "/fs/mkdir$", 1, FAULT_STOPPING, 0);
    ok_sb(sbx_sandbox_mkdir(s, "/vercel/sandbox/a"), s);
    ck_assert_int_eq(faultd_count(x.f, "GET", "resume=true"), 1);
    ck_assert_int_eq(faultd_count(x.f, "POST", "/fs/mkdir$"), 2);
    ck_assert_int_eq(faultd_forwarded(x.f, "POST", "/fs/mkdir$"), 1);
    ck_assert_str_eq(sbx_sandbox_id(s), sid);
    /* snapshotting, on a command start (wait mode): started once */
    faultd_rule(x.f, "POST", "/cmd$", 1, FAULT_STOPPING, 1);
    k = sh_cmd(s, "test -d /vercel/sandbox/a && echo once >> /vercel/sandbox/n && cat /vercel/sandbox/n", &o);
    ok_k(sbx_command_run(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 0);
    ck_assert_str_eq(o.data[0] ? o.data[0] : "", "once\n");
    ck_assert_int_eq(faultd_count(x.f, "GET", "resume=true"), 2);
    ck_assert_int_eq(faultd_forwarded(x.f, "POST", "/cmd$"), 1);
    sbx_command_free(k);
    /* twice in a row: repeated once only */
    faultd_clear(x.f);
    faultd_rule_first(x.f, "POST", "/fs/mkdir$", 2, FAULT_STOPPING, 0);
    expect_sbx(sbx_sandbox_mkdir(s, "/vercel/sandbox/b"), SBX_E_HTTP, sbx_sandbox_last_error, s);
    ck_assert_msg(strstr(sbx_sandbox_last_error(s), "sandbox_stopping"), "%s", sbx_sandbox_last_error(s));
    ck_assert_int_eq(faultd_count(x.f, "GET", "resume=true"), 3);
    ck_assert_int_eq(faultd_count(x.f, "POST", "/fs/mkdir$"), 4);
    /* any other 422 is the answer */
    faultd_clear(x.f);
    faultd_rule(x.f, "POST", "/fs/mkdir$", 1, FAULT_STATUS, 422);
    expect_sbx(sbx_sandbox_mkdir(s, "/vercel/sandbox/c"), SBX_E_HTTP, sbx_sandbox_last_error, s);
    ck_assert_int_eq(faultd_count(x.f, "GET", "resume=true"), 3);
    /* the resume fails: its answer is reported with the op */
    faultd_clear(x.f);
    faultd_rule(x.f, "POST", "/fs/mkdir$", 1, FAULT_STOPPING, 0);
    faultd_rule(x.f, "GET", "resume=true", 1, FAULT_STATUS, 403);
    expect_sbx(sbx_sandbox_mkdir(s, "/vercel/sandbox/d"), SBX_E_AUTH, sbx_sandbox_last_error, s);
    note("resume failed", sbx_sandbox_last_error(s));
    ck_assert(strstr(sbx_sandbox_last_error(s), "resuming it failed"));
    ck_assert(strstr(sbx_sandbox_last_error(s), "HTTP 403"));
    ck_assert_int_eq(faultd_count(x.f, "POST", "/fs/mkdir$"), 6);
    /* the caller's own stop under way: its 422 is the answer, no resume */
    faultd_clear(x.f);
    faultd_rule(x.f, "POST", "/stop$", 1, FAULT_STALL, 1500); /* then closed: the stop is sent again */
    faultd_rule(x.f, "POST", "/fs/mkdir$", 1, FAULT_STOPPING, 0);
    {
        sbx_op *stop, *mk;
        ok_sb(sbx_sandbox_stop_start(s, &stop), s);
        ok_sb(sbx_sandbox_mkdir_start(s, "/vercel/sandbox/e", &mk), s);
        ck_assert_int_eq(sbx_op_wait(mk, 30000), SBX_E_HTTP);
        ck_assert_int_eq(sbx_op_http_status(mk), 422);
        ck_assert_int_eq(sbx_op_wait(stop, 30000), SBX_OK);
        sbx_op_free(mk);
        sbx_op_free(stop);
    }
    ck_assert_int_eq(faultd_count(x.f, "GET", "resume=true"), 4);
    /* once stopped, the next op resumes it */
    ok_sb(sbx_sandbox_mkdir(s, "/vercel/sandbox/e"), s);
    ck_assert_int_eq(faultd_count(x.f, "GET", "resume=true"), 5);
    ck_assert_str_ne(sbx_sandbox_id(s), sid);
    /* a stop while a resume is under way goes to the session it brings */
    faultd_clear(x.f);
    ok_sb(sbx_sandbox_stop(s), s);
    snprintf(sid, sizeof sid, "%s", sbx_sandbox_id(s));
    faultd_rule(x.f, "GET", "resume=true", 1, FAULT_DRIP, 1); /* about a second */
    {
        sbx_op *stop, *mk;
        char pat[160];
        int n = faultd_count(x.f, "GET", "resume=true");
        ok_sb(sbx_sandbox_mkdir_start(s, "/vercel/sandbox/f", &mk), s);
        for (int i = 0; i < 500 && faultd_count(x.f, "GET", "resume=true") == n; i++)
            sbx_client_run(x.c, 10);
        ck_assert_int_eq(faultd_count(x.f, "GET", "resume=true"), n + 1);
        ok_sb(sbx_sandbox_stop_start(s, &stop), s);
        /* the mkdir, repeated beside the stop, races it (the caller's
         * choice): done, or answered by the session stopping */
        ck_assert_int_eq(sbx_op_wait(stop, 30000), SBX_OK);
        ck_assert_msg(sbx_op_wait(mk, 30000) == SBX_OK || sbx_op_http_status(mk) == 410 ||
                          sbx_op_http_status(mk) == 422,
                      "%s", sbx_op_last_error(mk));
        sbx_op_free(mk);
        sbx_op_free(stop);
        ck_assert_str_ne(sbx_sandbox_id(s), sid);
        snprintf(pat, sizeof pat, "/v2/sandboxes/sessions/%s/stop$", sbx_sandbox_id(s));
        ck_assert_int_eq(faultd_count(x.f, "POST", pat), 1);
        snprintf(pat, sizeof pat, "/v2/sandboxes/sessions/%s/stop$", sid);
        ck_assert_int_eq(faultd_count(x.f, "POST", pat), 1); /* the one before, not this one */
        ok_sb(sbx_sandbox_refresh(s), s);
        ck_assert_str_eq(sbx_sandbox_status(s), "stopped");
    }
    /* the deadline passes while the sandbox resumes: not sent again */
    faultd_clear(x.f);
    fwd = faultd_forwarded(x.f, "POST", "/cmd$");
    resumes = faultd_count(x.f, "GET", "resume=true");
    faultd_rule(x.f, "POST", "/cmd$", 1, FAULT_STOPPING, 0);
    faultd_rule(x.f, "GET", "resume=true", 1, FAULT_STALL, 2500); /* then closed: sent again */
    k = sh_cmd(s, "echo ran >> /vercel/sandbox/ran", NULL);
    ok_k(sbx_command_set_timeout_ms(k, 1000), k);
    expect_sbx(sbx_command_run(k), SBX_E_TIMEOUT, sbx_command_last_error, k);
    note("deadline while resuming", sbx_command_last_error(k));
    ck_assert(strstr(sbx_command_last_error(k), "was not sent again"));
    ck_assert_int_eq(faultd_forwarded(x.f, "POST", "/cmd$"), fwd);
    ck_assert_int_eq(faultd_count(x.f, "GET", "resume=true"), resumes + 2); /* the first attempt stalled */
    sbx_command_free(k);
    /* a write streamed from a file is replayed whole on the repeat */
    faultd_clear(x.f);
    faultd_rule(x.f, "POST", "/fs/write$", 1, FAULT_STOPPING, 0);
    ok_sb(sbx_sandbox_write_file(s, "w.txt", (const uint8_t *)"replayed\n", 9, 0644), s);
    {
        char *data = NULL;
        size_t len = 0;
        faultd_rule(x.f, "POST", "/fs/read$", 1, FAULT_STOPPING, 1);
        ok_sb(sbx_sandbox_read_file(s, "w.txt", 0, (uint8_t **)&data, &len), s);
        ck_assert_uint_eq(len, 9);
        ck_assert_mem_eq(data, "replayed\n", 9);
        sbx_free(data);
    }
    ok_sb(sbx_sandbox_delete(s), s);
out:
    outbuf_free(&o);
    sbx_sandbox_free(s);
    fx_stop(&x);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("client_faults");
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"passthrough", test_client_faults_passthrough},
        {"get_transient", test_client_faults_get_transient_retried},
        {"get_exhausted", test_client_faults_get_exhausted},
        {"get_others", test_client_faults_get_others_retried},
        {"create_5xx_after", test_client_faults_create_5xx_after_forward},
        {"create_reset_after", test_client_faults_create_reset_after_forward},
        {"create_not_forwarded", test_client_faults_create_not_forwarded},
        {"create_outcome", test_client_faults_create_outcome_known_or_not},
        {"cmd_5xx_after", test_client_faults_cmd_5xx_after_forward},
        {"cmd_500_after", test_client_faults_cmd_500_after_forward},
        {"cmd_reset_after", test_client_faults_cmd_reset_after_forward},
        {"cmd_reset_mid_answer", test_client_faults_cmd_reset_mid_answer},
        {"cmd_5xx_not_forwarded", test_client_faults_cmd_5xx_not_forwarded},
        {"cmd_reset_not_forwarded", test_client_faults_cmd_reset_not_forwarded},
        {"rate_limited", test_client_faults_429_retry_after},
        {"retry_after_decimal_v2_cap", test_client_faults_retry_after_decimal_and_v2_cap},
        {"logs_reset_mid", test_client_faults_logs_reset_mid_body},
        {"logs_truncated", test_client_faults_logs_truncated_mid_line},
        {"follow_logs_only", test_client_faults_follow_logs_only},
        {"logs_reset_before", test_client_faults_logs_reset_before_answer},
        {"stall_get", test_client_faults_stall_get_timeout},
        {"stall_logs", test_client_faults_stall_logs_command_timeout},
        {"cancel", test_client_faults_cancel_during_stall},
        {"one_byte", test_client_faults_one_byte_writes},
        {"drip", test_client_faults_slow_drip},
        {"invalid_json", test_client_faults_invalid_json},
        {"invalid_ndjson", test_client_faults_invalid_ndjson_line},
        {"huge_headers", test_client_faults_huge_headers},
        {"rate_limited_exhausted", test_client_faults_429_exhausted},
        {"cancel_backoff", test_client_faults_cancel_during_backoff},
        {"stall_start", test_client_faults_stall_start_command_timeout},
        {"read_cut", test_client_faults_read_cut_mid_body},
        {"read_not_octet_stream", test_client_faults_read_not_octet_stream},
        {"faultd_selftest", test_client_faults_faultd_selftest},
        {"other_posts_once", test_client_faults_other_posts_once},
        {"bodies_replayed", test_client_faults_bodies_replayed},
        {"server_closes_idle", test_client_faults_server_closes_idle},
        {"logs_always_cut", test_client_faults_logs_always_cut},
        {"start_cut_after_start", test_client_faults_start_stream_cut_after_start},
        {"start_no_terminator", test_client_faults_start_stream_no_terminator},
        {"start_late_terminator", test_client_faults_start_stream_late_terminator},
        {"start_terminator_never", test_client_faults_start_stream_terminator_never},
        {"start_cut_before_start", test_client_faults_start_stream_cut_before_start},
        {"start_bad_first_line", test_client_faults_start_stream_bad_first_line},
        {"inline_logs_no_logs_request", test_client_faults_inline_logs_no_logs_request},
        {"inline_logs_cut_falls_back", test_client_faults_inline_logs_cut_falls_back},
        {"inline_logs_bad_line", test_client_faults_inline_logs_bad_line},
        {"logs_backpressure", test_client_faults_logs_cut_with_backpressure},
        {"logs_lost_terminator", test_client_faults_logs_lost_terminator},
        {"client_timeout", test_client_faults_client_timeout_and_commands},
        {"cancel_message", test_client_faults_cancel_message_unstarted},
        {"connection_refused", test_client_faults_connection_refused},
        {"cut_in_head", test_client_faults_cut_in_head},
        {"logs_cut_in_head", test_client_faults_logs_cut_in_head},
        {"read_cut_in_head", test_client_faults_read_cut_in_head},
        {"cmd_cut_in_head", test_client_faults_cmd_cut_in_head},
        {"cut_in_chunk_size", test_client_faults_cut_in_chunk_size},
        {"no_framing", test_client_faults_no_framing},
        {"503_retry_after", test_client_faults_503_retry_after},
        {"stall_idle", test_client_faults_stall_idle_timeout},
        {"stream_probe", test_client_faults_stream_probe},
        {"stream_stuck_after_exit", test_client_faults_stream_stuck_after_exit},
        {"server_stopped", test_client_faults_server_stopped},
        {"default_attempts", test_client_faults_default_attempts},
        {"silent_source_create", test_client_faults_create_with_source_checks_a_silent_server},
        {"kill_stalls", test_client_faults_kill_stalls},
        {"endpoint_userinfo", test_client_faults_endpoint_userinfo},
        {"unix_socket_missing", test_client_faults_unix_socket_missing},
        {"log_retry_levels", test_client_faults_log_retry_levels},
        {"log_reconnect", test_client_faults_log_reconnect},
        {"log_slow_misuse", test_client_faults_log_slow_and_misuse},
        {"session_stopping", test_client_faults_session_stopping_resumed},
    };
#ifdef SBX_TEST_NO_PREREQ
    /* This build links the fault-injection copy of the library and takes
     * the path for libcurl < 7.80 (no CURLOPT_PREREQFUNCTION): bodies with
     * an effect through a read callback that refuses to rewind. Only the
     * cases about requests that must not run twice. */
    extern bool sbx__engine_no_prereq;
    sbx__engine_no_prereq = true;
#endif
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc;
#ifdef SBX_TEST_NO_PREREQ
        if (strncmp(cases[i].name, "cmd_", 4) != 0 && strncmp(cases[i].name, "create_", 7) != 0 &&
            strcmp(cases[i].name, "other_posts_once") != 0)
            continue;
#endif
        tc = sbx_tcase(cases[i].name, 60);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}
