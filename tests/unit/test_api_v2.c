/* SPDX-License-Identifier: MIT */
/*
 * The client's 2.x requests against the official SDK's: for each operation
 * in tests/fixtures/sdk3/requests.json (what @vercel/sandbox 3.5.0 sent,
 * recorded by tests/compat/record-sdk3.mjs) that the library also performs,
 * the request lib/client/proto/v2.c builds must have the same method, path,
 * query parameters (teamId is added by the engine, order aside), content
 * type and JSON body. The differences are deliberate and listed here, each
 * with its reason; operations the library does not offer are named too, so
 * that the table is the whole comparison.
 */
#include "harness.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "client/proto/proto.h"

static json_t *fixture;

static void load_fixture(void)
{
    json_error_t je;
    fixture = json_load_file(SBX_SDK3_REQUESTS, 0, &je);
    ck_assert_msg(json_is_array(fixture), "%s: %s", SBX_SDK3_REQUESTS, je.text);
}

static void free_fixture(void)
{
    json_decref(fixture);
}

/* The n-th (0-based) entry recorded for op. */
static json_t *recorded(const char *op, size_t nth)
{
    size_t i;
    json_t *e;
    json_array_foreach(fixture, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "op")), op) == 0 && nth-- == 0)
            return e;
    }
    ck_abort_msg("no recorded request for %s", op);
    return NULL;
}

/* path and query into their parts: the query's parameters other than
 * teamId, as an object (decoded values are not needed: both encode alike). */
static json_t *split(const char *full, char *path, size_t cap)
{
    const char *q = strchr(full, '?');
    json_t *params = json_object();
    size_t n = q ? (size_t)(q - full) : strlen(full);
    ck_assert_uint_lt(n, cap);
    memcpy(path, full, n);
    path[n] = '\0';
    while (q && *q) {
        const char *k = q + 1, *amp = strchr(k, '&'), *eq = strchr(k, '=');
        size_t kl;
        char key[64], val[128];
        if (!amp)
            amp = k + strlen(k);
        if (!eq || eq > amp)
            eq = amp;
        kl = (size_t)(eq - k);
        snprintf(key, sizeof key, "%.*s", (int)kl, k);
        snprintf(val, sizeof val, "%.*s", eq < amp ? (int)(amp - eq - 1) : 0, eq < amp ? eq + 1 : "");
        if (strcmp(key, "teamId") != 0)
            json_object_set_new(params, key, json_string(val));
        q = *amp ? amp : NULL;
    }
    return params;
}

/* Compare the built request r with the recorded one; expect_body is the
 * recorded body with the listed differences applied (NULL: no body).
 * omit_query: recorded parameters the library's call has no way to send. */
static void compare(struct sbx__api_req *r, sbx_status built, json_t *rec, json_t *expect_body,
                    const char *const *omit_query)
{
    char want_path[512], got_path[512];
    json_t *want_q, *got_q;
    const char *op = json_string_value(json_object_get(rec, "op"));
    ck_assert_msg(built == SBX_OK, "%s: the builder failed", op);
    ck_assert_str_eq(r->method, json_string_value(json_object_get(rec, "method")));
    want_q = split(json_string_value(json_object_get(rec, "path")), want_path, sizeof want_path);
    got_q = split(r->path, got_path, sizeof got_path);
    for (size_t i = 0; omit_query && omit_query[i]; i++)
        json_object_del(want_q, omit_query[i]);
    ck_assert_msg(strcmp(want_path, got_path) == 0, "%s: path %s, the SDK's %s", op, got_path, want_path);
    ck_assert_msg(json_equal(want_q, got_q), "%s: query of %s differs from the SDK's %s", op, r->path,
                  json_string_value(json_object_get(rec, "path")));
    if (expect_body) {
        json_t *got = r->body ? json_loads(r->body, 0, NULL) : NULL;
        char *w = json_dumps(expect_body, JSON_SORT_KEYS), *g = got ? json_dumps(got, JSON_SORT_KEYS) : NULL;
        ck_assert_msg(got && json_equal(got, expect_body), "%s: body %s, the SDK's %s", op, g ? g : "(none)", w);
        ck_assert_str_eq(r->content_type, "application/json");
        free(w);
        free(g);
        json_decref(got);
    } else {
        ck_assert_msg(!r->body, "%s: a body the SDK does not send: %s", op, r->body);
    }
    json_decref(want_q);
    json_decref(got_q);
    sbx__api_req_free(r);
}

static json_t *body_of(json_t *rec)
{
    return json_deep_copy(json_object_get(rec, "body"));
}

START_TEST(test_create)
{
    struct sbx__api_req r;
    struct sbx__create_spec s = {0};
    json_t *rec = recorded("Sandbox.create()", 0), *want = body_of(rec);
    sbx_status st;
    uint32_t ports[] = {3000};

    s.project = "prj_1";
    st = sbx__proto_v2.create_sandbox(&r, &s);
    /* difference: the library's sandboxes are not persistent unless asked
     * (sbx_sandbox_set_persistent), so it says so; the SDK leaves the
     * server's default (persistent) */
    json_object_set_new(want, "persistent", json_false());
    compare(&r, st, rec, want, NULL);
    json_decref(want);

    rec = recorded("Sandbox.create({runtime, name, persistent, ports, timeout, networkPolicy})", 0);
    want = body_of(rec);
    memset(&s, 0, sizeof s);
    s.project = "prj_1";
    s.runtime = "node24";
    s.name = "my-sbx";
    s.persistent = true;
    s.ports = ports;
    s.nports = 1;
    s.timeout_ms = 300000;
    /* the same policy in the library's form (the API form) */
    s.policy_json = "{\"mode\":\"custom\",\"allowedDomains\":[\"a.com\",\"*\"],\"deniedCIDRs\":[\"10.0.0.0/8\"],"
                    "\"injectionRules\":[{\"domain\":\"a.com\",\"headers\":{\"authorization\":\"x\"}}]}";
    st = sbx__proto_v2.create_sandbox(&r, &s);
    compare(&r, st, rec, want, NULL);
    json_decref(want);
}
END_TEST

START_TEST(test_commands)
{
    struct sbx__api_req r;
    sbx__strlist argv = SBX__STRLIST_INIT, env = SBX__STRLIST_INIT;
    json_t *rec = recorded("runCommand(\"echo\", [\"hi\"])", 0), *want = body_of(rec);
    sbx_status st;

    ck_assert_int_eq(sbx__strlist_push(&argv, "echo"), SBX_OK);
    ck_assert_int_eq(sbx__strlist_push(&argv, "hi"), SBX_OK);
    st = sbx__proto_v2.run_command(&r, "sess_2", &argv, NULL, &env, false, true, 0);
    /* the SDK's body exactly, "logs": true included: the output comes in
     * the wait stream */
    ck_assert(json_is_true(json_object_get(want, "logs")));
    compare(&r, st, rec, want, NULL);
    json_decref(want);
    sbx__strlist_clear(&argv);

    rec = recorded("runCommand({cmd, args, detached: true, timeoutMs: 1000})", 0);
    want = body_of(rec);
    ck_assert_int_eq(sbx__strlist_push(&argv, "sleep"), SBX_OK);
    ck_assert_int_eq(sbx__strlist_push(&argv, "10"), SBX_OK);
    st = sbx__proto_v2.run_command(&r, "sess_2", &argv, NULL, &env, false, false, 1000);
    compare(&r, st, rec, want, NULL);
    json_decref(want);
    sbx__strlist_clear(&argv);

    compare(&r, sbx__proto_v2.wait_command(&r, "sess_2", "cmd_2"), recorded("command.wait()", 0), NULL, NULL);
    rec = recorded("command.kill()", 0);
    want = body_of(rec);
    compare(&r, sbx__proto_v2.kill_command(&r, "sess_2", "cmd_2", 15), rec, want, NULL);
    json_decref(want);
    compare(&r, sbx__proto_v2.command_logs(&r, "sess_2", "cmd_2"), recorded("command.logs()", 0), NULL, NULL);
}
END_TEST

START_TEST(test_files_and_session)
{
    struct sbx__api_req r;
    json_t *rec = recorded("writeFiles([a.txt, /etc/b])", 0), *want;
    json_t *hdrs = json_object_get(rec, "headers");

    /* the body is the gzip tar the caller streams: its names are checked
     * by the tarball tests; here the route and its headers */
    ck_assert_int_eq(sbx__proto_v2.write_files(&r, "sess_2"), SBX_OK);
    ck_assert_str_eq(r.method, "POST");
    ck_assert_str_eq(r.path, "/v2/sandboxes/sessions/sess_2/fs/write");
    ck_assert_str_eq(r.content_type, json_string_value(json_object_get(hdrs, "content-type")));
    ck_assert_str_eq(r.header, "x-cwd: /");
    ck_assert_str_eq(json_string_value(json_object_get(hdrs, "x-cwd")), "/");
    sbx__api_req_free(&r);

    rec = recorded("readFileToBuffer({path: \"a.txt\"})", 0);
    want = body_of(rec);
    compare(&r, sbx__proto_v2.read_file(&r, "sess_2", "a.txt"), rec, want, NULL);
    json_decref(want);
    rec = recorded("mkDir(\"d\")", 0);
    want = body_of(rec);
    compare(&r, sbx__proto_v2.mkdir(&r, "sess_2", "d"), rec, want, NULL);
    json_decref(want);
    rec = recorded("extendTimeout(1000)", 0);
    want = body_of(rec);
    compare(&r, sbx__proto_v2.extend_timeout(&r, "sess_2", 1000), rec, want, NULL);
    json_decref(want);
    rec = recorded("updateNetworkPolicy({allow: [\"a.com\"]})", 0);
    want = body_of(rec);
    compare(&r, sbx__proto_v2.update_network_policy(&r, "sess_2", "{\"mode\":\"custom\",\"allowedDomains\":[\"a.com\"]}"),
            rec, want, NULL);
    json_decref(want);
    rec = recorded("snapshot({expiration: 0})", 0);
    want = body_of(rec);
    compare(&r, sbx__proto_v2.create_snapshot(&r, "sess_2", 0), rec, want, NULL);
    json_decref(want);
    compare(&r, sbx__proto_v2.stop_sandbox(&r, "sess_3"), recorded("stop()", 0), NULL, NULL);
}
END_TEST

START_TEST(test_named_lists_snapshots)
{
    struct sbx__api_req r;
    static const char *const no_tags[] = {"tags", NULL};
    compare(&r, sbx__proto_v2.get_named(&r, "prj_1", "my-sbx", false), recorded("Sandbox.get({name})", 0), NULL, NULL);
    compare(&r, sbx__proto_v2.get_named(&r, "prj_1", "my-sbx", true), recorded("Sandbox.get({name, resume: true})", 0),
            NULL, NULL);
    /* difference: the library's list has no tag filter */
    compare(&r, sbx__proto_v2.list_sandboxes(&r, "prj_1", 5, -1, -1, NULL),
            recorded("Sandbox.list({limit: 5, tags: {env: \"x\"}})", 0), NULL, no_tags);
    compare(&r, sbx__proto_v2.get_snapshot(&r, "snap_1"), recorded("Snapshot.get({snapshotId})", 0), NULL, NULL);
    compare(&r, sbx__proto_v2.list_snapshots(&r, "prj_1", 0, -1, -1, NULL), recorded("Snapshot.list()", 0), NULL, NULL);
    compare(&r, sbx__proto_v2.delete_named(&r, "prj_1", "my-sbx"), recorded("delete()", 0), NULL, NULL);
    /* sandbox.listSessions(): not in the recording; the path of the
     * protocol's table (project, name, limit, cursor, escaped). */
    ck_assert_int_eq(sbx__proto_v2.list_sessions(&r, "prj_1", "my sbx", 2, "c/1"), SBX_OK);
    ck_assert_str_eq(r.method, "GET");
    ck_assert_str_eq(r.path, "/v2/sandboxes/sessions?project=prj_1&name=my%20sbx&limit=2&cursor=c%2F1");
    ck_assert_ptr_null(r.body);
    sbx__api_req_free(&r);
    ck_assert_int_eq(sbx__proto_v2.list_sessions(&r, NULL, NULL, 0, NULL), SBX_OK);
    ck_assert_str_eq(r.path, "/v2/sandboxes/sessions");
    sbx__api_req_free(&r);
    ck_assert_ptr_null(sbx__proto_v1.list_sessions); /* v1 has no sessions */
}
END_TEST

/* sbx_sandbox_update: the PATCH, then the session's extension by the
 * difference (the recorded session had 301000 ms). */
START_TEST(test_update)
{
    struct sbx__api_req r;
    struct sbx__update_info u;
    sbx__err err = {0};
    const char *op = "update({timeout: 600000})";
    json_t *want = body_of(recorded(op, 0));
    sbx_status st = sbx__proto_v2.update_named(&r, "prj_1", "my-sbx", "{\"timeout_ms\":600000}", &u, &err);
    ck_assert_int_eq(u.timeout_ms, 600000);
    ck_assert_ptr_null(u.policy_json);
    compare(&r, st, recorded(op, 0), want, NULL);
    json_decref(want);
    want = body_of(recorded(op, 1));
    compare(&r, sbx__proto_v2.extend_timeout(&r, "sess_2", 600000 - 301000), recorded(op, 1), want, NULL);
    json_decref(want);

    /* every key, in the protocol's names */
    st = sbx__proto_v2.update_named(&r, NULL, "my-sbx",
                                    "{\"persistent\":false,\"vcpus\":2,\"ports\":[3000],\"tags\":{},"
                                    "\"snapshot_expiration_ms\":0,\"network_policy\":{\"mode\":\"custom\","
                                    "\"allowedDomains\":[\"a.com\"]}}",
                                    &u, &err);
    ck_assert_int_eq(st, SBX_OK);
    ck_assert_str_eq(r.method, "PATCH");
    ck_assert_str_eq(r.path, "/v2/sandboxes/my-sbx");
    want = json_loads("{\"persistent\":false,\"resources\":{\"vcpus\":2,\"memory\":4096},\"ports\":[3000],"
                      "\"tags\":{},\"snapshotExpiration\":0,\"networkPolicy\":{\"allow\":[\"a.com\"]}}",
                      0, NULL);
    {
        json_t *got = json_loads(r.body, 0, NULL);
        ck_assert_msg(json_equal(got, want), "%s", r.body);
        json_decref(got);
    }
    json_decref(want);
    ck_assert_ptr_nonnull(u.policy_json);
    ck_assert_ptr_nonnull(strstr(u.policy_json, "custom"));
    free(u.policy_json);
    sbx__api_req_free(&r);

    /* refused before anything is sent, naming the key */
    {
        static const struct {
            const char *settings, *says;
            sbx_status st;
        } bad[] = {
            {"{}", "nothing to change", SBX_E_INVALID_ARG},
            {"[]", "not a JSON object", SBX_E_PARSE},
            {"{\"a\":", "not a JSON object", SBX_E_PARSE},
            {"{\"timeout_ms\":0}", "timeout_ms", SBX_E_INVALID_ARG},
            {"{\"timeout_ms\":1.5}", "timeout_ms", SBX_E_INVALID_ARG},
            {"{\"vcpus\":65}", "vcpus", SBX_E_INVALID_ARG},
            {"{\"ports\":[0]}", "ports[0]", SBX_E_INVALID_ARG},
            {"{\"ports\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}", "at most 15", SBX_E_INVALID_ARG},
            {"{\"persistent\":\"yes\"}", "persistent", SBX_E_INVALID_ARG},
            {"{\"tags\":{\"a\":1}}", "tags.a", SBX_E_INVALID_ARG},
            {"{\"snapshot_expiration_ms\":-1}", "snapshot_expiration_ms", SBX_E_INVALID_ARG},
            {"{\"network_policy\":\"deny-all\"}", "network_policy", SBX_E_INVALID_ARG},
            {"{\"network_policy\":{\"allowedDomains\":[]}}", "mode", SBX_E_PARSE},
            {"{\"persistent\":true,\"persistent\":false}", "not a JSON object", SBX_E_PARSE},
            {"{\"region\":\"x\"}", "unknown key 'region'", SBX_E_INVALID_ARG},
            {"{\"tags\":null}", "tags", SBX_E_INVALID_ARG},
            {"{\"tags\":{\"a\":\"1\",\"b\":\"1\",\"c\":\"1\",\"d\":\"1\",\"e\":\"1\",\"f\":\"1\"}}", "at most 5",
             SBX_E_INVALID_ARG},
            {"{\"ports\":[3000,3000]}", "repeats port 3000", SBX_E_INVALID_ARG},
            {"{\"snapshot_expiration_ms\":null}", "snapshot_expiration_ms", SBX_E_INVALID_ARG},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            sbx__err_clear(&err);
            st = sbx__proto_v2.update_named(&r, "p", "n", bad[i].settings, &u, &err);
            ck_assert_msg(st == bad[i].st, "%s: %s", bad[i].settings, sbx_status_name(st));
            ck_assert_msg(strstr(sbx__err_msg(&err), bad[i].says), "%s: %s", bad[i].settings, sbx__err_msg(&err));
            ck_assert_ptr_null(r.path);
            ck_assert_ptr_null(u.policy_json);
        }
    }
    ck_assert_ptr_null(sbx__proto_v1.update_named);
    sbx__err_free(&err);
}
END_TEST

/* The automatic resume: the op on the stopped session (410), the resume,
 * the op again on the new session, which the client makes by sending the
 * first request to the new session (rebase). */
START_TEST(test_resume_after_410)
{
    const char *op = "runCommand after 410 (resume, retry)";
    struct sbx__api_req r, again;
    sbx__strlist argv = SBX__STRLIST_INIT, env = SBX__STRLIST_INIT;
    json_t *want = body_of(recorded(op, 0));
    char *body, *path;

    ck_assert_int_eq(json_integer_value(json_object_get(recorded(op, 0), "status")), 410);
    ck_assert_int_eq(sbx__strlist_push(&argv, "echo"), SBX_OK);
    ck_assert_int_eq(sbx__strlist_push(&argv, "again"), SBX_OK);
    ck_assert_int_eq(sbx__proto_v2.run_command(&r, "sess_2", &argv, NULL, &env, false, true, 0), SBX_OK);
    ck_assert_int_eq(sbx__proto_v2.rebase(r.path, "sess_2", "sess_3", &path), SBX_OK);
    body = strdup(r.body);
    compare(&r, SBX_OK, recorded(op, 0), want, NULL);
    compare(&r, sbx__proto_v2.get_named(&r, "prj_1", "my-sbx", true), recorded(op, 1), NULL, NULL);
    again = (struct sbx__api_req){.method = "POST", .path = path, .body = body, .content_type = "application/json"};
    compare(&again, SBX_OK, recorded(op, 2), want, NULL);
    json_decref(want);
    sbx__strlist_clear(&argv);
}
END_TEST

/* rebase: the session segment alone, wherever the query starts; a URL not
 * about that session is refused. */
START_TEST(test_rebase)
{
    char *out;
    ck_assert_int_eq(sbx__proto_v2.rebase("http://h/api/v2/sandboxes/sessions/s1/cmd/c1?wait=true&teamId=t", "s1",
                                          "s2", &out), SBX_OK);
    ck_assert_str_eq(out, "http://h/api/v2/sandboxes/sessions/s2/cmd/c1?wait=true&teamId=t");
    free(out);
    ck_assert_int_eq(sbx__proto_v2.rebase("http://h/v2/sandboxes/sessions/s1?teamId=t", "s1", "s 2", &out), SBX_OK);
    ck_assert_str_eq(out, "http://h/v2/sandboxes/sessions/s%202?teamId=t");
    free(out);
    /* a prefix of another id is not it */
    ck_assert_int_eq(sbx__proto_v2.rebase("http://h/v2/sandboxes/sessions/s10/fs/mkdir", "s1", "s2", &out),
                     SBX_E_INVALID_ARG);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(sbx__proto_v2.rebase("http://h/v2/sandboxes/sessions/s1", "s1", "s2", &out), SBX_OK);
    ck_assert_str_eq(out, "http://h/v2/sandboxes/sessions/s2");
    free(out);
    ck_assert_ptr_null(sbx__proto_v1.rebase);
}
END_TEST

/* Ids from the server go into later paths: "." and ".." (dot segments
 * once in a URL) and "" are refused wherever an id is read. */
START_TEST(test_dot_ids_refused)
{
    static const char *const ids[] = {".", "..", ""};
    char body[512];
    sbx__err err = {0};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        struct sbx__sandbox_info in = {0};
        struct sbx__command_info ci = {0};
        struct sbx__snapshot_info sn = {0};
        snprintf(body, sizeof body,
                 "{\"sandbox\":{\"name\":\"n\"},\"session\":{\"id\":\"%s\",\"status\":\"running\","
                 "\"region\":\"g\",\"timeout\":1,\"createdAt\":2,\"vcpus\":1,\"memory\":2048},\"routes\":[]}",
                 ids[i]);
        ck_assert_int_eq(sbx__proto_v2.parse_sandbox(body, strlen(body), &in, &err), SBX_E_PROTOCOL);
        ck_assert_msg(strstr(sbx__err_msg(&err), "is not an id"), "%s", sbx__err_msg(&err));
        sbx__sandbox_info_free(&in);
        snprintf(body, sizeof body, "{\"command\":{\"id\":\"%s\",\"startedAt\":1,\"exitCode\":null}}", ids[i]);
        ck_assert_int_eq(sbx__api_parse_command(body, strlen(body), &ci, &err), SBX_E_PROTOCOL);
        sbx__command_info_free(&ci);
        snprintf(body, sizeof body,
                 "{\"snapshot\":{\"id\":\"%s\",\"status\":\"created\",\"sourceSessionId\":\"s\","
                 "\"sizeBytes\":1,\"createdAt\":1,\"expiresAt\":2}}",
                 ids[i]);
        ck_assert_int_eq(sbx__proto_v2.parse_snapshot(body, strlen(body), &sn, NULL, &err), SBX_E_PROTOCOL);
        sbx__snapshot_info_free(&sn);
    }
    sbx__err_free(&err);
}
END_TEST

/* Every recorded operation is one of those above: a new one in the
 * fixture must be looked at here. */
START_TEST(test_every_op_accounted)
{
    static const char *const known[] = {
        "Sandbox.create()", "Sandbox.create({runtime, name, persistent, ports, timeout, networkPolicy})",
        "runCommand(\"echo\", [\"hi\"])", "runCommand({cmd, args, detached: true, timeoutMs: 1000})",
        "command.wait()", "command.kill()", "command.logs()", "writeFiles([a.txt, /etc/b])",
        "readFileToBuffer({path: \"a.txt\"})", "mkDir(\"d\")", "extendTimeout(1000)",
        "updateNetworkPolicy({allow: [\"a.com\"]})", "Sandbox.get({name})", "Sandbox.get({name, resume: true})",
        "Sandbox.list({limit: 5, tags: {env: \"x\"}})", "update({timeout: 600000})", "snapshot({expiration: 0})",
        "runCommand after 410 (resume, retry)", "stop()", "delete()", "Snapshot.get({snapshotId})", "Snapshot.list()",
    };
    size_t i;
    json_t *e;
    json_array_foreach(fixture, i, e) {
        const char *op = json_string_value(json_object_get(e, "op"));
        bool found = false;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            found |= strcmp(op, known[k]) == 0;
        ck_assert_msg(found, "the fixture has an operation this test does not know: %s", op);
    }
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("api_v2");
    TCase *tc = tcase_create("sdk3");
    tcase_add_checked_fixture(tc, load_fixture, free_fixture);
    tcase_add_test(tc, test_create);
    tcase_add_test(tc, test_commands);
    tcase_add_test(tc, test_files_and_session);
    tcase_add_test(tc, test_named_lists_snapshots);
    tcase_add_test(tc, test_every_op_accounted);
    tcase_add_test(tc, test_resume_after_410);
    tcase_add_test(tc, test_rebase);
    tcase_add_test(tc, test_update);
    tcase_add_test(tc, test_dot_ids_refused);
    suite_add_tcase(s, tc);
    return s;
}
