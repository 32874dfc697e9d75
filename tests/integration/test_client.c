/* SPDX-License-Identifier: MIT */
/* client: the sbx_client handle, credentials, options, the driving layer, ops and lists. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_it.h"

/* A JWT with these claims (unsigned: the client does not verify). */
static char *jwt(const char *payload)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t n = strlen(payload), o = 0;
    char *b = malloc(n * 2 + 64);
    const char *head = "eyJhbGciOiJSUzI1NiJ9.";
    strcpy(b, head);
    o = strlen(head);
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)payload[i] << 16;
        if (i + 1 < n)
            v |= (unsigned char)payload[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)payload[i + 2];
        b[o++] = t[(v >> 18) & 63];
        b[o++] = t[(v >> 12) & 63];
        if (i + 1 < n)
            b[o++] = t[(v >> 6) & 63];
        if (i + 2 < n)
            b[o++] = t[v & 63];
    }
    strcpy(b + o, ".c2lnbmF0dXJl");
    return b;
}

START_TEST(test_client_endpoint_forms)
{
    sbx_client *c;
    unsetenv("SBXRUN_ENDPOINT");
    c = sbx_client_new();
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(sbx_client_endpoint(c), "https://vercel.com/api");
    ck_assert_str_eq(sbx_client_last_error(c), "");
    expect_st(sbx_client_set_endpoint(c, "ftp://x"), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    ck_assert(contains(sbx_client_last_error(c), "ftp://x"));
    expect_st(sbx_client_set_endpoint(c, "unix:relative"), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    expect_st(sbx_client_set_endpoint(c, "http://"), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    expect_st(sbx_client_set_endpoint(c, NULL), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    ck_assert_str_eq(sbx_client_endpoint(c), "https://vercel.com/api");
    ok_c(sbx_client_set_endpoint(c, "http://127.0.0.1:7878/"), c);
    ck_assert_str_eq(sbx_client_endpoint(c), "http://127.0.0.1:7878/");
    ok_c(sbx_client_set_option(c, "endpoint", "unix:/run/sbxd.sock"), c);
    ck_assert_str_eq(sbx_client_endpoint(c), "unix:/run/sbxd.sock");
    sbx_client_free(c);

    /* SBXRUN_ENDPOINT picks the default. */
    setenv("SBXRUN_ENDPOINT", "unix:/tmp/elsewhere.sock", 1);
    c = sbx_client_new();
    ck_assert_str_eq(sbx_client_endpoint(c), "unix:/tmp/elsewhere.sock");
    sbx_client_free(c);
    /* A bad one is reported and the default stays. */
    setenv("SBXRUN_ENDPOINT", "gopher://x", 1);
    c = sbx_client_new();
    ck_assert(contains(sbx_client_last_error(c), "gopher://x"));
    /* ...and nothing is sent anywhere until a good endpoint is set. */
    ok_c(sbx_client_set_credentials(c, "tok", "team", "prj"), c);
    expect_st(sbx_client_resolve_credentials(c), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    ck_assert(contains(sbx_client_last_error(c), "SBXRUN_ENDPOINT"));
    ok_c(sbx_client_set_endpoint(c, "unix:/tmp/x.sock"), c);
    ok_c(sbx_client_resolve_credentials(c), c);
    sbx_client_free(c);
    unsetenv("SBXRUN_ENDPOINT");

    /* NULL handles are refused, not crashed on. */
    expect_st(sbx_client_set_endpoint(NULL, "unix:/x"), SBX_E_INVALID_ARG, sbx_client_last_error, (sbx_client *)NULL);
    ck_assert_str_eq(sbx_client_last_error(NULL), "invalid argument: the handle is NULL");
    ck_assert_str_eq(sbx_op_last_error(NULL), "invalid argument: the handle is NULL");
    sbx_client_free(NULL);
}
END_TEST

START_TEST(test_client_endpoint_fixed_after_use)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    char *json = NULL;
    ok_c(sbx_client_list_sandboxes(c, NULL, 0, -1, -1, &json), c);
    sbx_free(json);
    expect_st(sbx_client_set_endpoint(c, "unix:/other"), SBX_E_MISUSE, sbx_client_last_error, c);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_client_credentials_from_environment)
{
    sbx_client *c;
    char *tok;
    const char *vars[] = {"VERCEL_OIDC_TOKEN", "VERCEL_TOKEN", "VERCEL_PROJECT_ID", "VERCEL_TEAM_ID", "SBXRUN_TOKEN"};
    for (size_t i = 0; i < 5; i++)
        unsetenv(vars[i]);
    unsetenv("SBXRUN_ENDPOINT");

    /* Vercel, nothing set: the message names what to set. */
    c = sbx_client_new();
    expect_st(sbx_client_resolve_credentials(c), SBX_E_AUTH, sbx_client_last_error, c);
    ck_assert(contains(sbx_client_last_error(c), "VERCEL_OIDC_TOKEN"));
    ck_assert(contains(sbx_client_last_error(c), "VERCEL_TOKEN"));
    ck_assert(contains(sbx_client_last_error(c), "VERCEL_PROJECT_ID"));
    ck_assert_ptr_null(sbx_client_project(c));
    sbx_client_free(c);

    /* VERCEL_TOKEN without a project. */
    setenv("VERCEL_TOKEN", "tok_secret_value_1", 1);
    c = sbx_client_new();
    expect_st(sbx_client_resolve_credentials(c), SBX_E_AUTH, sbx_client_last_error, c);
    ck_assert(contains(sbx_client_last_error(c), "VERCEL_PROJECT_ID"));
    ck_assert(!contains(sbx_client_last_error(c), "tok_secret_value_1"));
    sbx_client_free(c);

    /* VERCEL_TOKEN + project + team. */
    setenv("VERCEL_PROJECT_ID", "prj_env", 1);
    setenv("VERCEL_TEAM_ID", "team_env", 1);
    c = sbx_client_new();
    ok_c(sbx_client_resolve_credentials(c), c);
    ck_assert_str_eq(sbx_client_project(c), "prj_env");
    ck_assert_str_eq(sbx_client_team(c), "team_env");
    sbx_client_free(c);

    /* An OIDC token wins over VERCEL_TOKEN; its claims give team and project. */
    tok = jwt("{\"owner_id\":\"team_oidc\",\"project_id\":\"prj_oidc\",\"exp\":4102444800}");
    setenv("VERCEL_OIDC_TOKEN", tok, 1);
    c = sbx_client_new();
    ok_c(sbx_client_resolve_credentials(c), c);
    ck_assert_str_eq(sbx_client_project(c), "prj_oidc");
    ck_assert_str_eq(sbx_client_team(c), "team_oidc");
    sbx_client_free(c);
    free(tok);

    /* An expired one is refused, clearly. */
    tok = jwt("{\"owner_id\":\"team_oidc\",\"project_id\":\"prj_oidc\",\"exp\":1000000000}");
    setenv("VERCEL_OIDC_TOKEN", tok, 1);
    c = sbx_client_new();
    expect_st(sbx_client_resolve_credentials(c), SBX_E_AUTH, sbx_client_last_error, c);
    ck_assert(contains(sbx_client_last_error(c), "expired"));
    ck_assert(!contains(sbx_client_last_error(c), tok));
    sbx_client_free(c);
    free(tok);

    /* Not a JWT at all. */
    setenv("VERCEL_OIDC_TOKEN", "not-a-jwt", 1);
    c = sbx_client_new();
    expect_st(sbx_client_resolve_credentials(c), SBX_E_AUTH, sbx_client_last_error, c);
    ck_assert(contains(sbx_client_last_error(c), "VERCEL_OIDC_TOKEN"));
    sbx_client_free(c);

    /* sbxd endpoints take SBXRUN_TOKEN, else the token file beside a unix
     * socket; without either the message says so. */
    unsetenv("VERCEL_OIDC_TOKEN");
    unsetenv("VERCEL_TOKEN");
    c = sbx_client_new();
    ok_c(sbx_client_set_endpoint(c, "unix:/nonexistent-sbx-dir/none.sock"), c);
    expect_st(sbx_client_resolve_credentials(c), SBX_E_AUTH, sbx_client_last_error, c);
    ck_assert(contains(sbx_client_last_error(c), "SBXRUN_TOKEN"));
    ck_assert(contains(sbx_client_last_error(c), "/nonexistent-sbx-dir/token"));
    sbx_client_free(c);
    setenv("SBXRUN_TOKEN", "opaque_token", 1);
    c = sbx_client_new();
    ok_c(sbx_client_set_endpoint(c, "unix:/tmp/none.sock"), c);
    ok_c(sbx_client_resolve_credentials(c), c);
    sbx_client_free(c);
    unsetenv("SBXRUN_TOKEN");
}
END_TEST

START_TEST(test_client_credentials_explicit)
{
    sbx_client *c = sbx_client_new();
    char *tok;
    expect_st(sbx_client_set_credentials(c, "", NULL, NULL), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    expect_st(sbx_client_set_credentials(c, "a b", NULL, NULL), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    expect_st(sbx_client_set_credentials(c, "a\nb", NULL, NULL), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    expect_st(sbx_client_set_credentials(c, NULL, NULL, NULL), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    expect_st(sbx_client_set_credentials(c, "tok", "", NULL), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    ok_c(sbx_client_set_credentials(c, "tok_1", "team_1", "prj_1"), c);
    ck_assert_str_eq(sbx_client_project(c), "prj_1");
    ck_assert_str_eq(sbx_client_team(c), "team_1");
    /* A JWT naming its scope is an OIDC token, as the SDK treats it. */
    tok = jwt("{\"owner_id\":\"team_j\",\"project_id\":\"prj_j\"}");
    ok_c(sbx_client_set_credentials(c, tok, NULL, NULL), c);
    ck_assert_str_eq(sbx_client_project(c), "prj_j");
    ck_assert_str_eq(sbx_client_team(c), "team_j");
    free(tok);
    tok = jwt("{\"owner_id\":\"team_j\",\"project_id\":\"prj_j\",\"exp\":1000}");
    expect_st(sbx_client_set_credentials(c, tok, NULL, NULL), SBX_E_AUTH, sbx_client_last_error, c);
    ck_assert(contains(sbx_client_last_error(c), "expired"));
    /* The earlier credentials stay. */
    ck_assert_str_eq(sbx_client_project(c), "prj_j");
    free(tok);
    sbx_client_free(c);
}
END_TEST

START_TEST(test_client_wrong_token_is_auth_error)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s;
    ok_c(sbx_client_set_credentials(c, "sbxd_wrong_token_0123", NULL, NULL), c);
    s = sbx_sandbox_new(c);
    expect_st(sbx_sandbox_create(s), SBX_E_AUTH, sbx_sandbox_last_error, s);
    ck_assert(contains(sbx_sandbox_last_error(s), "401"));
    ck_assert(!contains(sbx_sandbox_last_error(s), "sbxd_wrong_token_0123"));
    sbx_sandbox_free(s);
    /* A list (a call on the client) keeps the server's code too. */
    {
        char *json = NULL;
        expect_st(sbx_client_list_sandboxes(c, NULL, 0, -1, -1, &json), SBX_E_AUTH, sbx_client_last_error, c);
        ck_assert_msg(sbx_client_last_error_code(c) != NULL, "no code kept from: %s", sbx_client_last_error(c));
        ck_assert_ptr_null(json);
    }
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_client_options)
{
    sbx_client *c = sbx_client_new();
    const char *good[][2] = {{"limit.global", "8"}, {"limit.project", "0"}, {"retry.max", "0"},
                             {"timeout_ms", "1500"}, {"max_response_bytes", "65536"},
                             {"user_agent", "test/1"}, {"idle_timeout_ms", "0"},
                             {"idle_timeout_ms", "120000"}, {"probe_after_ms", "0"},
                             {"probe_after_ms", "5000"}, {"probe_timeout_ms", "100"}};
    const char *bad[][2] = {{"limit.global", "-1"}, {"limit.global", "x"}, {"retry.max", "101"},
                            {"timeout_ms", ""}, {"max_response_bytes", "10"}, {"limit.project", "1e3"},
                            {"idle_timeout_ms", "50"}, {"idle_timeout_ms", "-1"}, {"probe_after_ms", "1s"},
                            {"probe_timeout_ms", "0"}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        ok_c(sbx_client_set_option(c, good[i][0], good[i][1]), c);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_st(sbx_client_set_option(c, bad[i][0], bad[i][1]), SBX_E_INVALID_ARG, sbx_client_last_error, c);
        ck_assert(contains(sbx_client_last_error(c), bad[i][0]));
    }
    expect_st(sbx_client_set_option(c, "no.such", "1"), SBX_E_UNKNOWN_OPTION, sbx_client_last_error, c);
    ck_assert(contains(sbx_client_last_error(c), "no.such"));
    expect_st(sbx_client_set_option(c, NULL, "1"), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    sbx_client_free(c);
}
END_TEST

/* A response larger than max_response_bytes is refused, not buffered. */
START_TEST(test_client_max_response_bytes)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s[4];
    char *json = NULL;
    for (int i = 0; i < 4; i++)
        s[i] = it_sandbox(c);
    ok_c(sbx_client_set_option(c, "max_response_bytes", "1024"), c);
    expect_st(sbx_client_list_sandboxes(c, NULL, 0, -1, -1, &json), SBX_E_BUDGET_EXCEEDED, sbx_client_last_error, c);
    ck_assert_ptr_null(json);
    ck_assert(contains(sbx_client_last_error(c), "1024"));
    for (int i = 0; i < 4; i++)
        sbx_sandbox_free(s[i]);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

static json_t *parse_ok(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    ck_assert_msg(j != NULL, "not JSON: %s: %s", e.text, text);
    return j;
}

START_TEST(test_client_list_pagination)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s[3];
    char *json = NULL;
    json_t *j, *page;
    json_int_t next;
    sbx_op *op;

    for (int i = 0; i < 3; i++) {
        s[i] = it_sandbox(c);
        usleep(5000); /* distinct createdAt */
    }
    if (it_v2()) {
        /* 2.x: named sandboxes, newest first, a cursor for the rest; no
         * since/until in this protocol */
        ok_c(sbx_client_list_sandboxes(c, NULL, 2, -1, -1, &json), c);
        j = parse_ok(json);
        page = json_object_get(j, "sandboxes");
        ck_assert_int_eq(json_array_size(page), 2);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(page, 0), "currentSessionId")),
                         sbx_sandbox_id(s[2]));
        ck_assert(json_is_string(json_object_get(json_object_get(j, "pagination"), "next")));
        {
            /* the next page from the cursor, both forms */
            char *cursor = strdup(json_string_value(json_object_get(json_object_get(j, "pagination"), "next")));
            json_t *j2;
            json_decref(j);
            sbx_free(json);
            ok_c(sbx_client_list_sandboxes_from(c, NULL, 2, cursor, &json), c);
            j2 = parse_ok(json);
            ck_assert_int_eq(json_array_size(json_object_get(j2, "sandboxes")), 1);
            ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(j2, "sandboxes"), 0),
                                                               "currentSessionId")),
                             sbx_sandbox_id(s[0]));
            ck_assert(json_is_null(json_object_get(json_object_get(j2, "pagination"), "next")));
            json_decref(j2);
            sbx_free(json);
            ok_c(sbx_client_list_sandboxes_from_start(c, NULL, 2, cursor, &op), c);
            ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
            ck_assert(contains(sbx_op_result_json(op), sbx_sandbox_id(s[0])));
            sbx_op_free(op);
            ok_c(sbx_client_list_snapshots_from(c, NULL, 0, NULL, &json), c);
            ck_assert(contains(json, "\"snapshots\""));
            sbx_free(json);
            expect_st(sbx_client_list_sandboxes_from(c, NULL, 2, "", &json), SBX_E_INVALID_ARG, sbx_client_last_error,
                      c);
            free(cursor);
            j = NULL;
            json = NULL;
        }
        expect_st(sbx_client_list_sandboxes(c, NULL, 2, -1, 5, &json), SBX_E_INVALID_ARG, sbx_client_last_error, c);
        ck_assert(contains(sbx_client_last_error(c), "cursor"));
        expect_st(sbx_client_list_snapshots(c, NULL, 2, 5, -1, &json), SBX_E_INVALID_ARG, sbx_client_last_error, c);
        ok_c(sbx_client_list_sandboxes(c, "prj_other", 0, -1, -1, &json), c);
        j = parse_ok(json);
        ck_assert_int_eq(json_array_size(json_object_get(j, "sandboxes")), 0);
        json_decref(j);
        sbx_free(json);
        ok_c(sbx_client_list_snapshots(c, NULL, 0, -1, -1, &json), c);
        j = parse_ok(json);
        ck_assert_int_eq(json_array_size(json_object_get(j, "snapshots")), 0);
        json_decref(j);
        sbx_free(json);
        goto out;
    }
    /* v1 pages by since/until: a cursor is the 2.x protocol's */
    expect_st(sbx_client_list_sandboxes_from(c, NULL, 2, "1:x", &json), SBX_E_UNSUPPORTED, sbx_client_last_error, c);
    ok_c(sbx_client_list_sandboxes(c, NULL, 2, -1, -1, &json), c);
    j = parse_ok(json);
    page = json_object_get(j, "sandboxes");
    ck_assert_int_eq(json_array_size(page), 2);
    /* Newest first. */
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(page, 0), "id")), sbx_sandbox_id(s[2]));
    next = json_integer_value(json_object_get(json_object_get(j, "pagination"), "next"));
    ck_assert(next > 0);
    json_decref(j);
    sbx_free(json);

    /* The next page, through the op form. */
    ok_c(sbx_client_list_sandboxes_start(c, NULL, 2, -1, (int64_t)next, &op), c);
    ck_assert_int_eq(sbx_op_status(op), SBX_E_AGAIN);
    ck_assert_ptr_null(sbx_op_result_json(op));
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    ck_assert_int_eq(sbx_op_http_status(op), 200);
    j = parse_ok(sbx_op_result_json(op));
    page = json_object_get(j, "sandboxes");
    ck_assert_int_eq(json_array_size(page), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(page, 0), "id")), sbx_sandbox_id(s[0]));
    json_decref(j);
    sbx_op_free(op);

    /* since: only newer than the oldest. */
    ok_c(sbx_client_list_sandboxes(c, NULL, 0, sbx_sandbox_created_at(s[0]), -1, &json), c);
    j = parse_ok(json);
    ck_assert_int_eq(json_array_size(json_object_get(j, "sandboxes")), 2);
    json_decref(j);
    sbx_free(json);

    /* Another project has none. */
    ok_c(sbx_client_list_sandboxes(c, "prj_other", 0, -1, -1, &json), c);
    j = parse_ok(json);
    ck_assert_int_eq(json_array_size(json_object_get(j, "sandboxes")), 0);
    json_decref(j);
    sbx_free(json);

    /* Snapshots list, empty, both forms. */
    ok_c(sbx_client_list_snapshots(c, NULL, 0, -1, -1, &json), c);
    j = parse_ok(json);
    ck_assert_int_eq(json_array_size(json_object_get(j, "snapshots")), 0);
    json_decref(j);
    sbx_free(json);
    ok_c(sbx_client_list_snapshots_start(c, NULL, 10, -1, -1, &op), c);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_OK);
    ck_assert(contains(sbx_op_result_json(op), "\"snapshots\""));
    sbx_op_free(op);

    /* Bad arguments. */
    expect_st(sbx_client_list_sandboxes(c, NULL, 0, -1, -1, NULL), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    expect_st(sbx_client_list_sandboxes(c, NULL, 5000, -1, -1, &json), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    expect_st(sbx_client_list_sandboxes(c, NULL, 0, -5, -1, &json), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    expect_st(sbx_client_list_snapshots_start(c, NULL, 0, -1, -1, NULL), SBX_E_INVALID_ARG, sbx_client_last_error, c);

out:
    for (int i = 0; i < 3; i++)
        sbx_sandbox_free(s[i]);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

/* ---- driving from a host loop ------------------------------------------------------------ */

struct done_log {
    sbx_op *ops[16];
    int n;
    sbx_status inside;
};

static void on_done(sbx_op *op, void *user)
{
    struct done_log *l = user;
    sbx_client *c = sbx_op_user(op);
    char *json = NULL;
    l->ops[l->n++] = op;
    /* Only getters and cancel inside a callback. */
    l->inside = sbx_client_list_sandboxes(c, NULL, 0, -1, -1, &json);
    ck_assert_ptr_null(json);
    ck_assert_int_eq(sbx_op_done(op), 1);
}

START_TEST(test_client_host_loop)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = it_sandbox(c);
    sbx_op *ops[3], *got;
    struct done_log log = {0};
    int fd = -1, seen = 0;
    int64_t t;
    size_t running = 99;

    ok_c(sbx_client_get_fd(c, &fd), c);
    ck_assert(fd >= 0);
    /* Idle: nothing to do, wait times out. */
    ok_c(sbx_client_get_timeout(c, &t), c);
    ck_assert(t == -1 || t > 0);
    ck_assert_int_eq(sbx_client_wait(c, 50), SBX_E_AGAIN);
    ok_c(sbx_client_process(c, &running), c);
    ck_assert_int_eq(running, 0);
    ck_assert_ptr_null(sbx_client_next_done(c));

    ok_c(sbx_client_set_done_cb(c, on_done, &log), c);
    ok_s(sbx_sandbox_refresh_start(s, &ops[0]), s);
    ok_c(sbx_client_list_sandboxes_start(c, NULL, 0, -1, -1, &ops[1]), c);
    ok_c(sbx_client_list_snapshots_start(c, NULL, 0, -1, -1, &ops[2]), c);
    for (int i = 0; i < 3; i++)
        sbx_op_set_user(ops[i], c);
    ck_assert_ptr_eq(sbx_op_user(ops[0]), c);
    {
        /* A loop that took the fd learns of new work from the fd alone,
         * without asking for the timeout again. */
        struct pollfd p = {fd, POLLIN, 0};
        ck_assert_int_eq(poll(&p, 1, 0), 1);
    }

    /* A foreign loop: poll the one fd, honour the timeout, process. */
    while (seen < 3) {
        struct pollfd p = {fd, POLLIN, 0};
        ok_c(sbx_client_get_timeout(c, &t), c);
        poll(&p, 1, t < 0 ? 1000 : (int)t);
        ok_c(sbx_client_process(c, &running), c);
        while ((got = sbx_client_next_done(c)) != NULL) {
            ck_assert_int_eq(sbx_op_status(got), SBX_OK);
            seen++;
        }
        /* Ops finish only inside process: what it called running, plus
         * what it finished (all handed out now), is every op. */
        ck_assert_int_eq(running + (uint32_t)seen, 3);
    }
    ck_assert_int_eq(running, 0);
    ck_assert_int_eq(log.n, 3);
    ck_assert_int_eq(log.inside, SBX_E_MISUSE);
    /* Each op handed out once. */
    ck_assert_ptr_null(sbx_client_next_done(c));
    for (int i = 0; i < 3; i++) {
        int found = 0;
        for (int k = 0; k < 3; k++)
            found += log.ops[k] == ops[i];
        ck_assert_int_eq(found, 1);
        sbx_op_free(ops[i]);
    }
    ok_c(sbx_client_set_done_cb(c, NULL, NULL), c);

    /* run drives everything to the end. */
    ok_s(sbx_sandbox_refresh_start(s, &ops[0]), s);
    ok_c(sbx_client_run(c, 10000), c);
    ck_assert_int_eq(sbx_op_done(ops[0]), 1);
    ck_assert_ptr_eq(sbx_client_next_done(c), ops[0]);
    sbx_op_free(ops[0]);

    /* A finished op freed before it was handed out leaves the queue. */
    ok_s(sbx_sandbox_refresh_start(s, &ops[0]), s);
    ck_assert_int_eq(sbx_op_wait(ops[0], -1), SBX_OK);
    sbx_op_free(ops[0]);
    ck_assert_ptr_null(sbx_client_next_done(c));

    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

static void *wake_later(void *arg)
{
    usleep(100000);
    sbx_client_wakeup(arg);
    return NULL;
}

START_TEST(test_client_wakeup_from_thread)
{
    sbx_client *c = sbx_client_new();
    pthread_t t;
    int64_t t0 = mono_ms();
    ck_assert(pthread_create(&t, NULL, wake_later, c) == 0);
    ck_assert_int_eq(sbx_client_wait(c, 10000), SBX_OK);
    ck_assert(mono_ms() - t0 < 5000);
    pthread_join(t, NULL);
    ok_c(sbx_client_process(c, NULL), c);
    expect_st(sbx_client_get_fd(c, NULL), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    expect_st(sbx_client_get_fd(NULL, NULL), SBX_E_INVALID_ARG, sbx_client_last_error, c);
    ck_assert_int_eq(sbx_client_wakeup(NULL), SBX_E_INVALID_ARG);
    sbx_client_free(c);
}
END_TEST

struct canceller {
    sbx_op *op;
};

static void *cancel_later(void *arg)
{
    struct canceller *k = arg;
    usleep(300000);
    sbx_op_cancel(k->op);
    return NULL;
}

/* A command op cancelled from another thread ends with SBX_E_CANCELLED; the
 * command itself keeps running in the sandbox. */
START_TEST(test_client_cancel_from_thread)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = it_sandbox(c);
    sbx_command *k = it_sh_cmd(s, "sleep 30", NULL);
    struct canceller kc;
    pthread_t t;
    int64_t t0;

    ok_cmd(sbx_command_run_start(k, &kc.op), k);
    ck_assert(pthread_create(&t, NULL, cancel_later, &kc) == 0);
    t0 = mono_ms();
    ck_assert_int_eq(sbx_op_wait(kc.op, -1), SBX_E_CANCELLED);
    ck_assert(mono_ms() - t0 < 10000);
    ck_assert(contains(sbx_op_last_error(kc.op), "cancel"));
    pthread_join(t, NULL);
    sbx_op_free(kc.op);
    /* Still running there. */
    ok_cmd(sbx_command_fetch(k, sbx_command_id(k)), k);
    ck_assert_int_eq(sbx_command_exit_code(k), -1);
    ok_cmd(sbx_command_kill(k, 9), k);
    ok_cmd(sbx_command_wait_exit(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 137);
    sbx_command_free(k);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

/* Ops freed while pending, handles freed in any order: nothing leaks or
 * dangles (ASan/valgrind runs prove the "nothing leaks"). */
START_TEST(test_client_free_in_any_order)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = it_sandbox(c);
    sbx_command *k = it_sh_cmd(s, "sleep 20", NULL);
    sbx_op *op, *op2;

    ok_cmd(sbx_command_run_start(k, &op), k);
    /* Drive until the server has started it. */
    while (!sbx_command_id(k)) {
        ck_assert_int_eq(sbx_client_wait(c, 5000), SBX_OK);
        ok_c(sbx_client_process(c, NULL), c);
    }
    ck_assert_int_eq(sbx_op_done(op), 0);
    /* Free a pending op: cancelled and released at once. (It drives the
     * engine until the cancellation is through, so an op started before
     * it could finish meanwhile: op2 is started after.) */
    sbx_op_free(op);
    ok_s(sbx_sandbox_refresh_start(s, &op2), s);
    /* The client goes first: its pending ops are cancelled, its handles
     * still work. */
    sbx_client_free(c);
    ck_assert_int_eq(sbx_op_wait(op2, -1), SBX_E_CANCELLED);
    sbx_op_free(op2);
    ok_s(sbx_sandbox_refresh(s), s);
    ck_assert_str_eq(sbx_sandbox_status(s), "running");
    ok_cmd(sbx_command_kill(k, 9), k);
    sbx_sandbox_free(s); /* the command handle keeps what it needs */
    ok_cmd(sbx_command_wait_exit(k), k);
    ck_assert_int_eq(sbx_command_exit_code(k), 137);
    sbx_command_free(k);
    sbxd_stop(d);
}
END_TEST

/* An op handed out by _start and never waited for: freeing its handle
 * cancels it; the op reports the cancellation. */
START_TEST(test_client_free_handle_cancels_ops)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    sbx_sandbox *s = it_sandbox(c);
    sbx_command *k = it_sh_cmd(s, "sleep 20", NULL);
    sbx_op *op;
    ok_cmd(sbx_command_run_start(k, &op), k);
    sbx_command_free(k);
    ck_assert_int_eq(sbx_op_wait(op, -1), SBX_E_CANCELLED);
    sbx_op_free(op);
    ok_s(sbx_sandbox_stop(s), s);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

/* The transport error names the endpoint but never the token. */
START_TEST(test_client_unreachable_endpoint)
{
    sbx_client *c = sbx_client_new();
    sbx_sandbox *s;
    int64_t t0;
    ok_c(sbx_client_set_endpoint(c, "unix:/nonexistent/sbxd.sock"), c);
    ok_c(sbx_client_set_credentials(c, "secret_token_abc", NULL, NULL), c);
    ok_c(sbx_client_set_option(c, "retry.max", "2"), c);
    s = sbx_sandbox_new(c);
    t0 = mono_ms();
    expect_st(sbx_sandbox_create(s), SBX_E_TRANSPORT, sbx_sandbox_last_error, s);
    /* Never sent, so retried (2 times, with backoff) before failing. */
    ck_assert(mono_ms() - t0 >= 100);
    ck_assert(!contains(sbx_sandbox_last_error(s), "secret_token_abc"));
    sbx_sandbox_free(s);
    sbx_client_free(c);
}
END_TEST

/* The token sbxd keeps in the socket's directory is found there: no
 * credentials given, none in the environment. */
START_TEST(test_client_token_file_beside_socket)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    const char *vars[] = {"VERCEL_OIDC_TOKEN", "VERCEL_TOKEN", "VERCEL_PROJECT_ID", "VERCEL_TEAM_ID", "SBXRUN_TOKEN"};
    char ep[400], path[400], *json = NULL;
    sbx_client *c;
    FILE *f;

    for (size_t i = 0; i < 5; i++)
        unsetenv(vars[i]);
    snprintf(ep, sizeof ep, "unix:%s", d->sock);
    snprintf(path, sizeof path, "%.*s/token", (int)(strrchr(d->sock, '/') - d->sock), d->sock);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", d->token);
    ck_assert_int_eq(fclose(f), 0);
    c = sbx_client_new();
    ok_c(sbx_client_set_endpoint(c, ep), c);
    ok_c(sbx_client_list_sandboxes(c, NULL, 0, -1, -1, &json), c);
    ck_assert(contains(json, "sandboxes"));
    sbx_free(json);
    sbx_client_free(c);

    /* A wrong token in the environment wins over the file (and fails). */
    setenv("SBXRUN_TOKEN", "sbxd_wrong_token_0123", 1);
    c = sbx_client_new();
    ok_c(sbx_client_set_endpoint(c, ep), c);
    expect_st(sbx_client_list_sandboxes(c, NULL, 0, -1, -1, &json), SBX_E_AUTH, sbx_client_last_error, c);
    sbx_client_free(c);
    unsetenv("SBXRUN_TOKEN");

    /* An empty file is an error naming it, not a request without a token. */
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fclose(f), 0);
    c = sbx_client_new();
    ok_c(sbx_client_set_endpoint(c, ep), c);
    expect_st(sbx_client_list_sandboxes(c, NULL, 0, -1, -1, &json), SBX_E_AUTH, sbx_client_last_error, c);
    ck_assert(contains(sbx_client_last_error(c), path));
    ck_assert(contains(sbx_client_last_error(c), "empty"));
    sbx_client_free(c);
    ck_assert_int_eq(unlink(path), 0);
    sbxd_stop(d);
}
END_TEST

struct log_seen {
    int n, debug;
    const char *token;
    int token_seen;
    char first[256];
};

static void log_seen_cb(sbx_log_level level, const char *msg, void *user)
{
    struct log_seen *l = user;
    if (l->n++ == 0)
        snprintf(l->first, sizeof l->first, "%s", msg);
    l->debug += level == SBX_LOG_DEBUG;
    l->token_seen += strstr(msg, l->token) != NULL;
}

/* Against sbxd on its unix socket: each request is said at DEBUG, with its
 * method and path and never its query string or the token. */
START_TEST(test_client_log_requests)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    sbx_client *c = it_client(d);
    struct log_seen l = {0};
    char *json = NULL;

    l.token = d->token;
    ok_c(sbx_client_set_log_cb(c, SBX_LOG_DEBUG, log_seen_cb, &l), c);
    ok_c(sbx_client_list_sandboxes(c, NULL, 7, -1, -1, &json), c);
    sbx_free(json);
    ck_assert_int_ge(l.debug, 2); /* started, done */
    ck_assert_msg(strcmp(l.first, it_v2() ? "GET /v2/sandboxes: started" : "GET /v1/sandboxes: started") == 0, "%s",
                  l.first);
    ck_assert_int_eq(l.token_seen, 0);
    /* Nothing above DEBUG for a clean request. */
    l.n = l.debug = 0;
    ok_c(sbx_client_set_log_cb(c, SBX_LOG_INFO, log_seen_cb, &l), c);
    ok_c(sbx_client_list_sandboxes(c, NULL, 0, -1, -1, &json), c);
    sbx_free(json);
    ck_assert_int_eq(l.n, 0);
    sbx_client_free(c);
    sbxd_stop(d);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("client");
    TCase *tc = sbx_tcase("client", 120);
    tcase_add_test(tc, test_client_endpoint_forms);
    tcase_add_test(tc, test_client_endpoint_fixed_after_use);
    tcase_add_test(tc, test_client_credentials_from_environment);
    tcase_add_test(tc, test_client_credentials_explicit);
    tcase_add_test(tc, test_client_wrong_token_is_auth_error);
    tcase_add_test(tc, test_client_options);
    tcase_add_test(tc, test_client_max_response_bytes);
    tcase_add_test(tc, test_client_list_pagination);
    tcase_add_test(tc, test_client_host_loop);
    tcase_add_test(tc, test_client_wakeup_from_thread);
    tcase_add_test(tc, test_client_cancel_from_thread);
    tcase_add_test(tc, test_client_free_in_any_order);
    tcase_add_test(tc, test_client_free_handle_cancels_ops);
    tcase_add_test(tc, test_client_unreachable_endpoint);
    tcase_add_test(tc, test_client_token_file_beside_socket);
    tcase_add_test(tc, test_client_log_requests);
    suite_add_tcase(s, tc);
    return s;
}
