/* SPDX-License-Identifier: MIT */
/* auth and bad input: tokens, unknown paths, malformed and oversized bodies, error shape. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

START_TEST(test_sbxd_auth_no_token_401)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = http_request(d, "GET", "/v1/sandboxes", NULL, 0, NULL, REQ_NO_AUTH);
    expect_error(r, 401, "unauthorized");
    http_resp_free(r);
    /* Before anything happens: a create without a token creates nothing. */
    r = http_request(d, "POST", "/v1/sandboxes", "{}", 2, NULL, REQ_NO_AUTH);
    expect_error(r, 401, "unauthorized");
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "sandboxes")), 0);
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_auth_wrong_token_401)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char wrong[300], prefix[300], basic[] = "Authorization: Basic dXNlcjpwYXNz";
    const char *h1[] = {wrong, NULL}, *h2[] = {prefix, NULL}, *h3[] = {basic, NULL};
    struct http_resp *r;

    snprintf(wrong, sizeof wrong, "Authorization: Bearer %sx", d->token);
    r = http_request(d, "GET", "/v1/sandboxes", NULL, 0, h1, 0);
    expect_error(r, 401, "unauthorized");
    http_resp_free(r);
    /* A prefix of the right token is not the token. */
    snprintf(prefix, sizeof prefix, "Authorization: Bearer %.*s", (int)strlen(d->token) - 1, d->token);
    r = http_request(d, "GET", "/v1/sandboxes", NULL, 0, h2, 0);
    expect_error(r, 401, "unauthorized");
    http_resp_free(r);
    r = http_request(d, "GET", "/v1/sandboxes", NULL, 0, h3, 0);
    expect_error(r, 401, "unauthorized");
    http_resp_free(r);
    /* The right one works (the control). */
    r = http_get(d, "/v1/sandboxes");
    expect_status(r, 200);
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_auth_token_file_option)
{
    /* --token-file: that file's token (trailing newline ignored) is the one,
     * and none is generated in the state directory. */
    char path[] = "/tmp/sbxd-it-token-XXXXXX", tok[64], other[128], state_token[400];
    int fd = mkstemp(path);
    const char *args[] = {"--token-file", path, NULL};
    const char *h[] = {other, NULL};
    struct sbxd *d;
    struct http_resp *r;

    ck_assert(fd >= 0);
    snprintf(tok, sizeof tok, "sbxdit_%s\n", rand_hex(24));
    ck_assert(write(fd, tok, strlen(tok)) == (ssize_t)strlen(tok));
    close(fd);
    d = sbxd_start(args, NULL); /* the harness reads the token from --token-file */
    sbxd_cleanup_path(d, path);
    tok[strlen(tok) - 1] = '\0';
    ck_assert_str_eq(d->token, tok);
    r = http_get(d, "/v1/sandboxes");
    expect_status(r, 200);
    http_resp_free(r);
    snprintf(other, sizeof other, "Authorization: Bearer sbxd_%s", rand_hex(48));
    r = http_request(d, "GET", "/v1/sandboxes", NULL, 0, h, 0);
    expect_error(r, 401, "unauthorized");
    http_resp_free(r);
    snprintf(state_token, sizeof state_token, "%s/token", d->state);
    ck_assert_msg(access(state_token, F_OK) != 0, "a token was generated despite --token-file");
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_auth_unknown_path_404)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    static const char *const paths[] = {"/", "/v4/sandboxes", "/v2/nothing", "/v1/nothing", "/v1/sandboxes/x/y/z/w/v"};
    struct http_resp *r;

    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        r = http_get(d, "%s", paths[i]);
        expect_error(r, 404, "not_found");
        http_resp_free(r);
    }
    r = http_get(d, "/v1/sandboxes/%s/nothing", sid);
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    r = http_post(d, json_object(), "/v1/sandboxes/%s/fs/chmod", sid);
    ck_assert_msg(r->status == 404 || r->status == 405, "%s: %ld", r->what, r->status);
    expect_error(r, r->status, NULL);
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes/%s/cmd/cmd_doesnotexist", sid);
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes/%s/cmd/cmd_doesnotexist/logs", sid);
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    r = http_post(d, jpack("{s:i}", "signal", 15), "/v1/sandboxes/%s/cmd_doesnotexist/kill", sid);
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_auth_unknown_sandbox_404)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    static const char *const ids[] = {"sbx_doesnotexist", "sbx_../../etc", "SBX_UPPER"};
    struct http_resp *r;

    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        const char *id = ids[i];
        r = http_get(d, "/v1/sandboxes/%s", id);
        expect_error(r, 404, "not_found");
        http_resp_free(r);
        r = http_post(d, jpack("{s:s}", "command", "true"), "/v1/sandboxes/%s/cmd", id);
        expect_error(r, 404, "not_found");
        http_resp_free(r);
        r = http_post(d, NULL, "/v1/sandboxes/%s/stop", id);
        expect_error(r, 404, "not_found");
        http_resp_free(r);
        r = http_post(d, jpack("{s:s}", "path", "/etc/hostname"), "/v1/sandboxes/%s/fs/read", id);
        expect_error(r, 404, "not_found");
        http_resp_free(r);
        r = http_post(d, jpack("{s:i}", "duration", 1000), "/v1/sandboxes/%s/extend-timeout", id);
        expect_error(r, 404, "not_found");
        http_resp_free(r);
        r = http_post(d, NULL, "/v1/sandboxes/%s/snapshot", id);
        expect_error(r, 404, "not_found");
        http_resp_free(r);
    }
    r = http_get(d, "/v1/sandboxes/snapshots/snap_doesnotexist");
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    r = http_delete(d, "/v1/sandboxes/snapshots/snap_doesnotexist");
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_auth_malformed_json_400)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    static const char *const bodies[] = {"{", "{\"command\":", "not json", "{\"a\":1}}", "[1,2]",
                                         "\"str\"", "{\"command\":\"echo\",\"command\":\"true\"}"};
    struct http_resp *r;

    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        r = http_post_text(d, bodies[i], "/v1/sandboxes");
        expect_error(r, 400, "bad_request");
        http_resp_free(r);
        r = http_post_text(d, bodies[i], "/v1/sandboxes/%s/cmd", sid);
        expect_error(r, 400, "bad_request");
        http_resp_free(r);
    }
    /* Nothing was created by the refused creates. */
    r = http_get(d, "/v1/sandboxes");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "sandboxes")), 1);
    http_resp_free(r);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_auth_wrong_types_400)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    static const char *const creates[] = {
        "{\"timeout\":-1}",
        "{\"timeout\":\"60000\"}",
        "{\"timeout\":1.5}",
        "{\"timeout\":999}",
        "{\"timeout\":18000001}",
        "{\"ports\":[70000]}",
        "{\"ports\":[0]}",
        "{\"ports\":\"8080\"}",
        "{\"ports\":[\"8080\"]}",
        "{\"ports\":[1,2,3,4,5]}",
        "{\"ports\":[8080,8080]}",
        "{\"runtime\":\"node1\"}", /* not a runtime, whatever node the host has */
        "{\"runtime\":24}",
        "{\"resources\":{\"vcpus\":0}}",
        "{\"resources\":{\"vcpus\":\"2\"}}",
        "{\"resources\":{\"vcpus\":1000}}",
        "{\"resources\":4}",
        "{\"env\":{\"A\":1}}",
        "{\"env\":[\"A=1\"]}",
        "{\"env\":{\"A=B\":\"1\"}}",
        "{\"projectId\":5}",
        "{\"networkPolicy\":{\"mode\":\"bogus\"}}",
        "{\"networkPolicy\":\"allow-all\"}",
        "{\"source\":{\"type\":\"svn\",\"url\":\"x\"}}",
        "{\"source\":{\"type\":\"snapshot\"}}",
        "{\"source\":{\"type\":\"git\"}}",
        "{\"source\":{\"type\":\"tarball\"}}",
    };
    static const char *const cmds[] = {
        "{\"command\":\"echo\",\"args\":\"hi\"}",
        "{\"command\":\"echo\",\"args\":[1]}",
        "{\"args\":[\"hi\"]}",
        "{\"command\":\"\"}",
        "{\"command\":5}",
        "{\"command\":\"echo\",\"env\":[\"A=1\"]}",
        "{\"command\":\"echo\",\"env\":{\"A\":true}}",
        "{\"command\":\"echo\",\"sudo\":\"yes\"}",
        "{\"command\":\"echo\",\"cwd\":5}",
        "{\"command\":\"echo\",\"wait\":\"true\"}",
        "{\"command\":\"echo\",\"cwd\":\"/does/not/exist\"}",
    };
    struct http_resp *r;

    for (size_t i = 0; i < sizeof creates / sizeof creates[0]; i++) {
        r = http_post_text(d, creates[i], "/v1/sandboxes");
        ck_assert_msg(r->status == 400, "create %s: expected 400, got %ld: %s", creates[i], r->status,
                      r->body);
        expect_error(r, 400, "bad_request");
        http_resp_free(r);
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        r = http_post_text(d, cmds[i], "/v1/sandboxes/%s/cmd", sid);
        ck_assert_msg(r->status == 400, "run %s: expected 400, got %ld: %s", cmds[i], r->status, r->body);
        expect_error(r, 400, "bad_request");
        http_resp_free(r);
    }
    r = http_post_text(d, "{\"signal\":\"TERM\"}", "/v1/sandboxes/%s/cmd_x/kill", sid);
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    r = http_post_text(d, "{\"path\":5}", "/v1/sandboxes/%s/fs/read", sid);
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    r = http_post_text(d, "{}", "/v1/sandboxes/%s/fs/mkdir", sid);
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    r = http_post_text(d, "{\"duration\":\"1000\"}", "/v1/sandboxes/%s/extend-timeout", sid);
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    r = http_post_text(d, "{\"expiration\":-5}", "/v1/sandboxes/%s/snapshot", sid);
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes?limit=abc");
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    /* Only the first sandbox exists, still running: nothing above had an effect. */
    r = http_get(d, "/v1/sandboxes");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "sandboxes")), 1);
    http_resp_free(r);
    ck_assert_str_eq(sbx_status_str(d, sid), "running");
    free(sid);
    sbxd_stop(d);
}
END_TEST

static char *big_json(size_t size)
{
    /* {"command":"echo","args":["xxxx..."]} of `size` bytes. */
    const char *head = "{\"command\":\"echo\",\"args\":[\"", *tail = "\"]}";
    char *s = malloc(size + 1);
    size_t h = strlen(head), t = strlen(tail);
    ck_assert(s != NULL);
    memcpy(s, head, h);
    memset(s + h, 'x', size - h - t);
    memcpy(s + size - t, tail, t);
    s[size] = '\0';
    return s;
}

START_TEST(test_sbxd_auth_oversized_body_413)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    size_t limit = 4u << 20;
    char *body = big_json(limit + 4096), *path;
    const char *expect100[] = {"Expect: 100-continue", NULL};
    struct http_resp *r;

    path = malloc(128);
    snprintf(path, 128, "/v1/sandboxes/%s/cmd", sid);
    /* Content-Length over the limit: refused before the body is sent (a
     * client that asks with Expect: 100-continue never sends it). */
    r = http_request(d, "POST", path, body, strlen(body), expect100, 0);
    expect_error(r, 413, "payload_too_large");
    http_resp_free(r);
    r = http_request(d, "POST", "/v1/sandboxes", body, strlen(body), expect100, 0);
    expect_error(r, 413, "payload_too_large");
    http_resp_free(r);
    /* Chunked, so the size is only known while reading. */
    r = http_request(d, "POST", path, body, strlen(body), NULL, REQ_CHUNKED);
    expect_error(r, 413, "payload_too_large");
    http_resp_free(r);
    free(body);
    /* Just under the limit is accepted: the limit is the JSON limit, not less. */
    body = big_json(limit - 1024);
    r = http_request(d, "POST", path, body, strlen(body), NULL, 0);
    ck_assert_msg(r->status != 413, "a body under the 4 MiB JSON limit was refused as too large: %s", r->body);
    http_resp_free(r);
    free(body);
    free(path);
    /* Nothing ran, the server is fine. */
    ck_assert_str_eq(sbx_status_str(d, sid), "running");
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* The SDK sends bodies with Content-Length and without Expect, and retries
 * network errors up to 5 times (protocol 1.3): the early 413 and 401 must
 * reach such a client, at the latest on a retry. */
static long send_like_sdk(struct sbxd *d, const char *path, const char *body, size_t n, const char *const *h)
{
    long status = 0;
    for (int attempt = 0; attempt < 6 && status == 0; attempt++) {
        struct http_resp *r = http_request(d, "POST", path, body, n, h, 0);
        status = r->status;
        http_resp_free(r);
    }
    return status;
}

START_TEST(test_sbxd_auth_early_reply_reaches_sending_client)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), path[128], wrong[300];
    const char *bad_auth[] = {wrong, NULL};
    size_t n = 64u << 20;
    char *body = big_json(n);
    long st;

    snprintf(path, sizeof path, "/v1/sandboxes/%s/cmd", sid);
    st = send_like_sdk(d, path, body, n, NULL);
    ck_assert_msg(st == 413, "a %zu-byte body sent like the SDK sends it: got %ld, not the 413", n, st);
    snprintf(wrong, sizeof wrong, "Authorization: Bearer not-%s", d->token);
    st = send_like_sdk(d, path, body, n / 4, bad_auth); /* under the limit, wrong token */
    ck_assert_msg(st == 401, "a large body with a wrong token: got %ld, not the 401", st);
    free(body);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_auth_get_delete_with_json_content_type)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, jpack("{s:s}", "projectId", "prj_ct"));
    struct http_resp *r;
    char *snap, path[256];

    /* The harness sends Content-Type: application/json on every request,
     * bodies or not, as the SDK does; state it explicitly here. */
    const char *ct[] = {"Content-Type: application/json", NULL};
    r = http_request(d, "GET", "/v1/sandboxes?project=prj_ct", NULL, 0, ct, 0);
    expect_status(r, 200);
    http_resp_free(r);
    snprintf(path, sizeof path, "/v1/sandboxes/%s", sid);
    r = http_request(d, "GET", path, NULL, 0, ct, 0);
    expect_status(r, 200);
    http_resp_free(r);
    snprintf(path, sizeof path, "/v1/sandboxes/%s/snapshot", sid);
    r = http_request(d, "POST", path, NULL, 0, ct, 0); /* body-less POST, JSON type */
    expect_status(r, 200);
    snap = strdup(json_string_value(json_object_get(json_object_get(r->json, "snapshot"), "id")));
    http_resp_free(r);
    snprintf(path, sizeof path, "/v1/sandboxes/snapshots/%s", snap);
    r = http_request(d, "GET", path, NULL, 0, ct, 0);
    expect_status(r, 200);
    http_resp_free(r);
    r = http_request(d, "GET", "/v1/sandboxes/snapshots", NULL, 0, ct, 0);
    expect_status(r, 200);
    http_resp_free(r);
    r = http_request(d, "DELETE", path, NULL, 0, ct, 0);
    expect_status(r, 200);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r->json, "snapshot"), "status")),
                     "deleted");
    http_resp_free(r);
    snprintf(path, sizeof path, "/v1/sandboxes/%s/stop", sid);
    r = http_request(d, "POST", path, NULL, 0, ct, 0);
    expect_status(r, 200);
    http_resp_free(r);
    free(snap);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_auth_error_body_shape)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r;

    /* Every error above goes through expect_error; a few more statuses. */
    r = http_request(d, "PUT", "/v1/sandboxes", "{}", 2, NULL, 0);
    ck_assert_msg(r->status >= 400 && r->status < 500, "PUT /v1/sandboxes: %ld", r->status);
    expect_error(r, r->status, NULL);
    http_resp_free(r);
    r = http_request(d, "DELETE", "/v1/sandboxes", NULL, 0, NULL, 0);
    ck_assert_msg(r->status >= 400 && r->status < 500, "DELETE /v1/sandboxes: %ld", r->status);
    expect_error(r, r->status, NULL);
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes?limit=0");
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes?limit=101");
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes?until=yesterday");
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_auth_keepalive_after_early_reply)
{
    /* The SDK keeps connections alive. A request answered before its body
     * was read (401, 413) must not leave that body to be read as the next
     * request on the connection. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), path[128], wrong[300];
    const char *bad_auth[] = {wrong, NULL};
    const char *bad_auth_gz[] = {wrong, "Content-Type: application/gzip", "x-cwd: /", NULL};
    size_t n = 16 * 1024; /* fits the socket buffer: sent before any answer */
    char *body = malloc(n + 1), *big;
    struct http_resp *r;

    ck_assert(body != NULL);
    memset(body, ' ', n);
    memcpy(body, "{\"command\":\"true\"}", 18);
    body[n] = '\0';
    snprintf(wrong, sizeof wrong, "Authorization: Bearer not-%s", d->token);
    snprintf(path, sizeof path, "/v1/sandboxes/%s/cmd", sid);
    for (int round = 0; round < 3; round++) {
        r = http_request(d, "GET", "/v1/sandboxes", NULL, 0, NULL, REQ_REUSE);
        expect_status(r, 200);
        http_resp_free(r);
        r = http_request(d, "POST", path, body, n, bad_auth, REQ_REUSE);
        expect_error(r, 401, "unauthorized");
        http_resp_free(r);
        r = http_request(d, "GET", "/v1/sandboxes", NULL, 0, NULL, REQ_REUSE);
        expect_status(r, 200);
        ck_assert_int_eq(json_array_size(json_object_get(r->json, "sandboxes")), 1);
        http_resp_free(r);
        snprintf(path, sizeof path, "/v1/sandboxes/%s/fs/write", sid);
        r = http_request(d, "POST", path, body, n, bad_auth_gz, REQ_REUSE);
        expect_error(r, 401, "unauthorized");
        http_resp_free(r);
        snprintf(path, sizeof path, "/v1/sandboxes/%s/cmd", sid);
        /* A full body with a good token, on the same connection: it runs. */
        r = http_request(d, "POST", path, body, n, NULL, REQ_REUSE);
        expect_status(r, 200);
        http_resp_free(r);
    }
    big = malloc((5u << 20) + 1);
    ck_assert(big != NULL);
    memset(big, ' ', 5u << 20);
    memcpy(big, "{\"command\":\"true\"}", 18);
    {
        const char *expect100[] = {"Expect: 100-continue", NULL};
        r = http_request(d, "POST", path, big, 5u << 20, expect100, REQ_REUSE);
    }
    expect_error(r, 413, "payload_too_large");
    http_resp_free(r);
    r = http_request(d, "GET", "/v1/sandboxes", NULL, 0, NULL, REQ_REUSE);
    expect_status(r, 200);
    http_resp_free(r);
    free(big);
    free(body);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_auth_upload_limit_413)
{
    /* fs/write has its own limit (--max-upload), checked against the body. */
    const char *args[] = {"--max-upload", "8192", NULL};
    struct sbxd *d = sbxd_start(args, NULL);
    char *sid = sbx_create(d, NULL);
    unsigned char noise[32768];
    struct tar_ent e = {"vercel/sandbox/noise.bin", noise, sizeof noise, 0644, 'f', NULL};
    struct http_resp *r;
    size_t len;
    void *t;

    for (size_t i = 0; i < sizeof noise; i++)
        noise[i] = (unsigned char)(rand_hex(2)[0] * 31 + i * 2654435761u);
    t = tar_gz(&e, 1, TAR_PAX, &len);
    ck_assert_int_gt(len, 8192);
    r = sbx_fs_write(d, sid, t, len, "/");
    expect_error(r, 413, "payload_too_large");
    http_resp_free(r);
    free(t);
    /* Under the limit: fine. */
    e.len = 100;
    t = tar_gz(&e, 1, TAR_PAX, &len);
    r = sbx_fs_write(d, sid, t, len, "/");
    expect_status(r, 200);
    http_resp_free(r);
    free(t);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_auth_chunked_json_body_accepted)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    const char *body = "{\"projectId\":\"prj_chunked\"}";
    struct http_resp *r = http_request(d, "POST", "/v1/sandboxes", body, strlen(body), NULL, REQ_CHUNKED);
    expect_status(r, 200);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r->json, "sandbox"), "projectId")),
                     "prj_chunked");
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_auth_unknown_fields_ignored)
{
    /* The SDK passes "__*" options through, in create bodies and get queries;
     * it always adds teamId. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = http_post_text(d, "{\"__experimental\":{\"x\":1},\"somethingNew\":true,\"ports\":[]}",
                                         "/v1/sandboxes");
    char *sid;
    expect_status(r, 200);
    sid = strdup(json_string_value(json_object_get(json_object_get(r->json, "sandbox"), "id")));
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes/%s?__includeSystemRoutes=true&__x=1", sid);
    expect_status(r, 200);
    http_resp_free(r);
    r = http_request(d, "GET", "/v1/sandboxes", NULL, 0, NULL, REQ_NO_TEAM);
    expect_status(r, 200);
    http_resp_free(r);
    r = http_post_text(d, "{\"command\":\"true\",\"args\":[],\"env\":{},\"sudo\":false,\"__new\":1}",
                       "/v1/sandboxes/%s/cmd", sid);
    expect_status(r, 200);
    http_resp_free(r);
    free(sid);
    sbxd_stop(d);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("sbxd_auth");
    TCase *tc = sbx_tcase("auth", 120);
    tcase_add_test(tc, test_sbxd_auth_no_token_401);
    tcase_add_test(tc, test_sbxd_auth_wrong_token_401);
    tcase_add_test(tc, test_sbxd_auth_token_file_option);
    tcase_add_test(tc, test_sbxd_auth_unknown_path_404);
    tcase_add_test(tc, test_sbxd_auth_unknown_sandbox_404);
    tcase_add_test(tc, test_sbxd_auth_malformed_json_400);
    tcase_add_test(tc, test_sbxd_auth_wrong_types_400);
    tcase_add_test(tc, test_sbxd_auth_oversized_body_413);
    tcase_add_test(tc, test_sbxd_auth_early_reply_reaches_sending_client);
    tcase_add_test(tc, test_sbxd_auth_get_delete_with_json_content_type);
    tcase_add_test(tc, test_sbxd_auth_error_body_shape);
    tcase_add_test(tc, test_sbxd_auth_keepalive_after_early_reply);
    tcase_add_test(tc, test_sbxd_auth_upload_limit_413);
    tcase_add_test(tc, test_sbxd_auth_chunked_json_body_accepted);
    tcase_add_test(tc, test_sbxd_auth_unknown_fields_ignored);
    suite_add_tcase(s, tc);
    return s;
}
