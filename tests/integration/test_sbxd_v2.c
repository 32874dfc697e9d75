/* SPDX-License-Identifier: MIT */
/* v2: the 2.x/3.x protocol's routes (named sandboxes, sessions, resume,
 * persistent sandboxes, command timeouts, inline logs, cursor lists, the
 * new network-policy shape) against a real sbxd, beside the v1 routes on
 * the same model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* POST /v3/sandboxes; asserts 200; the response (caller frees). */
static struct http_resp *create_named(struct sbxd *d, json_t *body)
{
    struct http_resp *r = http_post(d, body, "/v3/sandboxes");
    expect_status(r, 200);
    ck_assert_ptr_nonnull(r->json);
    return r;
}

static const char *str_at(json_t *o, const char *a, const char *b)
{
    json_t *x = json_object_get(o, a);
    return json_string_value(b ? json_object_get(x, b) : x);
}

/* The current session id of a named sandbox in project p (malloc'd). */
static char *session_of(struct sbxd *d, const char *p, const char *name)
{
    struct http_resp *r = http_get(d, "/v2/sandboxes/%s?projectId=%s", name, p);
    char *id;
    expect_status(r, 200);
    id = strdup(str_at(r->json, "session", "id"));
    http_resp_free(r);
    return id;
}

static struct http_resp *resume(struct sbxd *d, const char *p, const char *name)
{
    return http_get(d, "/v2/sandboxes/%s?projectId=%s&resume=true", name, p);
}

static json_t *sh_cmd(const char *script, bool logs)
{
    json_t *c = jpack("{s:s,s:[s,s],s:{},s:b,s:b}", "command", "sh", "args", "-c", script, "env", "sudo", 0,
                      "wait", 1);
    if (logs)
        json_object_set_new(c, "logs", json_true());
    return c;
}

START_TEST(test_v2_create_get_names)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = create_named(d, jpack("{s:s,s:[],s:s}", "projectId", "p1", "ports", "name", "alpha"));
    json_t *sb = json_object_get(r->json, "sandbox"), *ss = json_object_get(r->json, "session");
    char *sid;

    ck_assert_str_eq(str_at(sb, "name", NULL), "alpha");
    ck_assert(json_is_true(json_object_get(sb, "persistent"))); /* the SDK's documented default */
    ck_assert_str_eq(str_at(sb, "status", NULL), "running");
    ck_assert_str_eq(str_at(sb, "currentSessionId", NULL), str_at(ss, "id", NULL));
    ck_assert_ptr_nonnull(json_object_get(sb, "createdAt"));
    ck_assert_str_eq(str_at(ss, "status", NULL), "running");
    ck_assert(json_is_array(json_object_get(r->json, "routes")));
    ck_assert_ptr_null(json_object_get(r->json, "resumed"));
    sid = strdup(str_at(ss, "id", NULL));
    http_resp_free(r);

    /* get without resume: the same session, no "resumed" */
    r = http_get(d, "/v2/sandboxes/alpha?projectId=p1");
    expect_status(r, 200);
    ck_assert_str_eq(str_at(r->json, "session", "id"), sid);
    ck_assert_ptr_null(json_object_get(r->json, "resumed"));
    http_resp_free(r);
    /* resume=true on a running session: the same one, resumed false */
    r = resume(d, "p1", "alpha");
    expect_status(r, 200);
    ck_assert_str_eq(str_at(r->json, "session", "id"), sid);
    ck_assert(json_is_false(json_object_get(r->json, "resumed")));
    http_resp_free(r);
    /* the session's own route */
    r = http_get(d, "/v2/sandboxes/sessions/%s", sid);
    expect_status(r, 200);
    ck_assert_str_eq(str_at(r->json, "session", "id"), sid);
    ck_assert(json_is_array(json_object_get(r->json, "routes")));
    http_resp_free(r);

    /* the name is unique in its project, free in another */
    r = http_post(d, jpack("{s:s,s:s}", "projectId", "p1", "name", "alpha"), "/v3/sandboxes");
    expect_error(r, 409, "conflict");
    http_resp_free(r);
    r = create_named(d, jpack("{s:s,s:s}", "projectId", "p2", "name", "alpha"));
    ck_assert_str_ne(str_at(r->json, "session", "id"), sid);
    http_resp_free(r);
    /* no name: one is made up */
    r = create_named(d, jpack("{s:s}", "projectId", "p1"));
    ck_assert_msg(strncmp(str_at(r->json, "sandbox", "name"), "sandbox-", 8) == 0, "%s", r->body);
    http_resp_free(r);
    /* names the routes use, and malformed ones, are refused */
    {
        static const char *const bad[] = {"sessions", "snapshots", "drives", "", "-x", "a/b", "a b", "é"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            r = http_post(d, jpack("{s:s,s:s}", "projectId", "p1", "name", bad[i]), "/v3/sandboxes");
            expect_error(r, 400, "bad_request");
            http_resp_free(r);
        }
    }
    r = http_get(d, "/v2/sandboxes/nosuch?projectId=p1");
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    /* /v2 with a runtime creates the same way (what "runtime" then says:
     * test_v2_runtime_is_what_runs) */
    r = http_post(d, jpack("{s:s,s:s,s:s}", "projectId", "p1", "name", "rt", "runtime", "node22"), "/v2/sandboxes");
    expect_status(r, 200);
    ck_assert_str_eq(str_at(r->json, "session", "requestedRuntime"), "node22");
    ck_assert_str_eq(str_at(r->json, "sandbox", "requestedRuntime"), "node22");
    ck_assert_str_eq(str_at(r->json, "sandbox", "runtime"), str_at(r->json, "session", "runtime"));
    http_resp_free(r);
    /* an image other than the managed ones is refused by name */
    r = http_post(d, jpack("{s:s,s:s}", "projectId", "p1", "image", "docker.io/library/alpine:3"), "/v3/sandboxes");
    expect_error(r, 400, "not_supported");
    ck_assert(contains(r->body, "alpine"));
    http_resp_free(r);
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* `PROG --version` in a session, through the 2.x command route, named as
 * Vercel names runtimes ("node20", "python3.11"); NULL when the session has
 * no such program. malloc'd. */
static char *runtime_in_session(struct sbxd *d, const char *sid, const char *prog)
{
    json_t *cmd = jpack("{s:s,s:[s],s:{},s:b,s:b,s:b}", "command", prog, "args", "--version", "env", "sudo", 0,
                        "wait", 1, "logs", 1);
    struct ndjson *nd = ndjson_request(d, "POST", cmd, "/v2/sandboxes/sessions/%s/cmd", sid);
    char out[256] = "", name[32] = "";
    int major = -1, minor = -1;
    json_int_t code;

    ck_assert_int_eq(nd->status, 200);
    ck_assert_uint_ge(nd->n, 2);
    code = json_integer_value(json_object_get(json_object_get(nd->lines[nd->n - 1], "command"), "exitCode"));
    for (size_t i = 1; i + 1 < nd->n; i++) {
        const char *data = str_at(nd->lines[i], "data", NULL);
        if (data)
            strncat(out, data, sizeof out - strlen(out) - 1);
    }
    ndjson_free(nd);
    if (code == 127)
        return NULL;
    ck_assert_msg(code == 0, "%s --version exited %d: %s", prog, (int)code, out);
    if (strcmp(prog, "node") == 0) {
        ck_assert_msg(sscanf(out, "v%d.", &major) == 1 && major > 0, "node --version: %s", out);
        snprintf(name, sizeof name, "node%d", major);
    } else {
        ck_assert_msg(sscanf(out, "Python %d.%d", &major, &minor) == 2, "python3 --version: %s", out);
        snprintf(name, sizeof name, "python%d.%d", major, minor);
    }
    return strdup(name);
}

/* A named sandbox and its sessions name the runtime they really run (the
 * host's node or python3), whatever was asked, and keep what was asked in
 * requestedRuntime; so do the sessions it resumes with. */
START_TEST(test_v2_runtime_is_what_runs)
{
    static const struct {
        const char *ask, *prog, *name;
    } cases[] = {{"node22", "node", "rt-node"}, {"python3.13", "python3", "rt-python"}};
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *ask = cases[i].ask;
        char *sid, *real, *answered;

        r = http_post(d, jpack("{s:s,s:s,s:s,s:b}", "projectId", "p", "name", cases[i].name, "runtime", ask,
                               "persistent", 0),
                      "/v2/sandboxes");
        expect_status(r, 200);
        sid = strdup(str_at(r->json, "session", "id"));
        answered = strdup(str_at(r->json, "session", "runtime"));
        real = runtime_in_session(d, sid, cases[i].prog);
        /* what runs; the name asked when the program is missing */
        ck_assert_msg(strcmp(answered, real ? real : ask) == 0, "asked %s: session.runtime %s, it runs %s", ask,
                      answered, real ? real : "nothing");
        ck_assert_str_eq(str_at(r->json, "session", "requestedRuntime"), ask);
        ck_assert_str_eq(str_at(r->json, "sandbox", "runtime"), answered);
        ck_assert_str_eq(str_at(r->json, "sandbox", "requestedRuntime"), ask);
        http_resp_free(r);
        /* get: the same */
        r = http_get(d, "/v2/sandboxes/%s?projectId=p", cases[i].name);
        expect_status(r, 200);
        ck_assert_str_eq(str_at(r->json, "sandbox", "runtime"), answered);
        ck_assert_str_eq(str_at(r->json, "session", "runtime"), answered);
        http_resp_free(r);
        r = http_get(d, "/v2/sandboxes/sessions/%s", sid);
        expect_status(r, 200);
        ck_assert_str_eq(str_at(r->json, "session", "runtime"), answered);
        ck_assert_str_eq(str_at(r->json, "session", "requestedRuntime"), ask);
        http_resp_free(r);
        /* the session it resumes with, after a stop, says the same */
        r = http_post(d, NULL, "/v2/sandboxes/sessions/%s/stop", sid);
        expect_status(r, 200);
        http_resp_free(r);
        r = resume(d, "p", cases[i].name);
        expect_status(r, 200);
        ck_assert(json_is_true(json_object_get(r->json, "resumed")));
        ck_assert_str_ne(str_at(r->json, "session", "id"), sid);
        ck_assert_str_eq(str_at(r->json, "session", "runtime"), answered);
        ck_assert_str_eq(str_at(r->json, "session", "requestedRuntime"), ask);
        http_resp_free(r);
        free(real);
        free(answered);
        free(sid);
    }
    /* No runtime (the /v3 image route): the named sandbox has none, as the
     * SDK expects; its session names the node it runs. */
    r = create_named(d, jpack("{s:s,s:s}", "projectId", "p", "name", "rt-default"));
    ck_assert_ptr_null(json_object_get(json_object_get(r->json, "sandbox"), "runtime"));
    ck_assert_ptr_null(json_object_get(json_object_get(r->json, "session"), "requestedRuntime"));
    {
        char *sid = strdup(str_at(r->json, "session", "id")), *real = runtime_in_session(d, sid, "node");
        ck_assert_str_eq(str_at(r->json, "session", "runtime"), (real ? real : "node24"));
        free(real);
        free(sid);
    }
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

/* A named sandbox keeps the runtime it asked for. One asked by the name sbxd
 * answered ("node20") must still resume after the host's Node has changed
 * (its record then names a runtime no longer provided): on the node it has
 * now, not with a 400. */
START_TEST(test_v2_runtime_kept_across_a_host_upgrade)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r;
    char *sid, *now;

    r = http_post(d, jpack("{s:s,s:s,s:s,s:b}", "projectId", "p", "name", "rt-ask", "runtime", "node22", "persistent",
                           0),
                  "/v2/sandboxes");
    expect_status(r, 200);
    now = strdup(str_at(r->json, "session", "runtime")); /* the name this host answers */
    http_resp_free(r);
    r = http_post(d, jpack("{s:s,s:s,s:s,s:b}", "projectId", "p", "name", "rt-old", "runtime", now, "persistent", 0),
                  "/v2/sandboxes");
    expect_status(r, 200);
    sid = strdup(str_at(r->json, "session", "id"));
    http_resp_free(r);
    r = http_post(d, NULL, "/v2/sandboxes/sessions/%s/stop", sid);
    expect_status(r, 200);
    http_resp_free(r);
    sbxd_terminate(d);
    /* the host had node 19 when it was made */
    ck_assert_int_eq(host_sh("f=$(grep -l '\"rt-old\"' '%s'/named/*.json) && "
                             "sed -i 's/\"runtime\":\"%s\"/\"runtime\":\"node19\"/' \"$f\" && "
                             "grep -q '\"runtime\":\"node19\"' \"$f\"", d->state, now),
                     0);
    sbxd_restart(d);
    r = resume(d, "p", "rt-old");
    expect_status(r, 200);
    ck_assert(json_is_true(json_object_get(r->json, "resumed")));
    ck_assert_str_eq(str_at(r->json, "session", "runtime"), now);
    ck_assert_str_eq(str_at(r->json, "session", "requestedRuntime"), "node19");
    http_resp_free(r);
    ck_assert_msg(host_sh("grep -q 'its runtime node19 is no longer provided; it resumes on %s' '%s'", now, d->log) == 0,
                  "the log does not say the runtime changed");
    /* a create still takes only the names it knows */
    r = http_post(d, jpack("{s:s,s:s,s:s}", "projectId", "p", "name", "rt-new", "runtime", "node19"), "/v2/sandboxes");
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    free(now);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_v2_inline_logs_and_command_shape)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = create_named(d, jpack("{s:s,s:s}", "projectId", "p", "name", "logs"));
    char *sid = strdup(str_at(r->json, "session", "id"));
    struct ndjson *nd;
    json_t *first, *last;
    http_resp_free(r);

    nd = ndjson_request(d, "POST", sh_cmd("echo out1; echo err1 >&2; sleep 0.2; echo out2; exit 3", true),
                        "/v2/sandboxes/sessions/%s/cmd", sid);
    ck_assert_int_eq(nd->status, 200);
    ck_assert_str_eq(nd->ctype, "application/x-ndjson");
    ck_assert_uint_ge(nd->n, 4);
    first = json_object_get(nd->lines[0], "command");
    last = json_object_get(nd->lines[nd->n - 1], "command");
    ck_assert(json_is_null(json_object_get(first, "exitCode")));
    ck_assert_str_eq(str_at(first, "sessionId", NULL), sid);
    ck_assert_ptr_null(json_object_get(first, "sandboxId"));
    ck_assert_int_eq(json_integer_value(json_object_get(last, "exitCode")), 3);
    ck_assert(json_is_integer(json_object_get(last, "durationMs")));
    ck_assert_int_ge(json_integer_value(json_object_get(last, "durationMs")), 200);
    {
        /* every line between is a log line, in order per stream */
        char out[64] = "", err[64] = "";
        for (size_t i = 1; i + 1 < nd->n; i++) {
            const char *st = str_at(nd->lines[i], "stream", NULL), *data = str_at(nd->lines[i], "data", NULL);
            ck_assert_msg(st && data && !json_object_get(nd->lines[i], "command"), "line %zu is not a log line", i);
            strncat(strcmp(st, "stdout") == 0 ? out : err, data, 20);
        }
        ck_assert_str_eq(out, "out1\nout2\n");
        ck_assert_str_eq(err, "err1\n");
    }
    ndjson_free(nd);
    /* without "logs": the two lines only */
    nd = ndjson_request(d, "POST", sh_cmd("echo quiet", false), "/v2/sandboxes/sessions/%s/cmd", sid);
    ck_assert_int_eq(nd->status, 200);
    ck_assert_uint_eq(nd->n, 2);
    ndjson_free(nd);
    /* output larger than a stream block arrives whole */
    nd = ndjson_request(d, "POST", sh_cmd("head -c 300000 /dev/zero | tr '\\0' x", true),
                        "/v2/sandboxes/sessions/%s/cmd", sid);
    {
        size_t total = 0;
        for (size_t i = 1; i + 1 < nd->n; i++)
            total += strlen(str_at(nd->lines[i], "data", NULL));
        ck_assert_uint_eq(total, 300000);
    }
    ndjson_free(nd);
    /* the v1 route on the same session keeps the v1 shape */
    nd = ndjson_request(d, "POST", sh_cmd("true", true), "/v1/sandboxes/%s/cmd", sid);
    ck_assert_int_eq(nd->status, 200);
    ck_assert_uint_eq(nd->n, 2);
    ck_assert_str_eq(str_at(json_object_get(nd->lines[0], "command"), "sandboxId", NULL), sid);
    ck_assert_ptr_null(json_object_get(json_object_get(nd->lines[1], "command"), "sessionId"));
    ndjson_free(nd);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_v2_command_timeout)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = create_named(d, jpack("{s:s,s:s}", "projectId", "p", "name", "tmo"));
    char *sid = strdup(str_at(r->json, "session", "id")), *cid;
    json_t *c;
    struct ndjson *nd;
    int64_t t0;
    http_resp_free(r);

    /* waited for: killed with SIGKILL at its timeout, exit code 137 */
    c = sh_cmd("echo started; sleep 60", true);
    json_object_set_new(c, "timeout", json_integer(400));
    t0 = mono_ms();
    nd = ndjson_request(d, "POST", c, "/v2/sandboxes/sessions/%s/cmd", sid);
    ck_assert_int_eq(nd->status, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(nd->lines[nd->n - 1], "command"), "exitCode")),
                     137);
    ck_assert_msg(mono_ms() - t0 < 20000, "the timeout of 400 ms took %lld ms", (long long)(mono_ms() - t0));
    ck_assert_str_eq(str_at(nd->lines[1], "data", NULL), "started\n");
    ndjson_free(nd);
    /* detached: the same, seen by the long poll */
    c = jpack("{s:s,s:[s],s:I}", "command", "sleep", "args", "60", "timeout", (json_int_t)300);
    r = http_post(d, c, "/v2/sandboxes/sessions/%s/cmd", sid);
    expect_status(r, 200);
    cid = strdup(str_at(r->json, "command", "id"));
    http_resp_free(r);
    r = http_get(d, "/v2/sandboxes/sessions/%s/cmd/%s?wait=true", sid, cid);
    expect_status(r, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r->json, "command"), "exitCode")), 137);
    http_resp_free(r);
    /* a command that ends first is not touched */
    c = sh_cmd("exit 5", false);
    json_object_set_new(c, "timeout", json_integer(60000));
    nd = ndjson_request(d, "POST", c, "/v2/sandboxes/sessions/%s/cmd", sid);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(nd->lines[1], "command"), "exitCode")), 5);
    ndjson_free(nd);
    /* bad values */
    {
        json_t *bad[] = {json_integer(0), json_integer(-5), json_string("10")};
        for (size_t i = 0; i < 3; i++) {
            c = sh_cmd("true", false);
            json_object_set_new(c, "timeout", bad[i]);
            r = http_post(d, c, "/v2/sandboxes/sessions/%s/cmd", sid);
            expect_error(r, 400, "bad_request");
            ck_assert(contains(r->body, "timeout"));
            http_resp_free(r);
        }
    }
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_v2_stopped_session_410_then_resume)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = create_named(d, jpack("{s:s,s:s,s:b}", "projectId", "p", "name", "eph", "persistent", 0));
    char *sid = strdup(str_at(r->json, "session", "id")), *sid2;
    struct cmd_result *cr;
    http_resp_free(r);

    sbx_write_file(d, sid, "/vercel/sandbox/keep.txt", "x", 1, 0);
    r = http_post(d, NULL, "/v2/sandboxes/sessions/%s/stop", sid);
    expect_status(r, 200);
    ck_assert_str_eq(str_at(r->json, "session", "status"), "stopped");
    ck_assert_str_eq(str_at(r->json, "sandbox", "status"), "stopped");
    ck_assert_ptr_null(json_object_get(r->json, "snapshot")); /* not persistent */
    http_resp_free(r);
    /* every operation on the stopped session: 410, which makes the SDK resume */
    r = http_post(d, sh_cmd("true", true), "/v2/sandboxes/sessions/%s/cmd", sid);
    expect_error(r, 410, "gone");
    http_resp_free(r);
    r = http_post(d, jpack("{s:s}", "path", "keep.txt"), "/v2/sandboxes/sessions/%s/fs/read", sid);
    expect_error(r, 410, "gone");
    http_resp_free(r);
    r = http_post(d, jpack("{s:s}", "path", "d"), "/v2/sandboxes/sessions/%s/fs/mkdir", sid);
    expect_error(r, 410, "gone");
    http_resp_free(r);
    r = http_post(d, jpack("{s:I}", "duration", (json_int_t)1000), "/v2/sandboxes/sessions/%s/extend-timeout", sid);
    expect_error(r, 410, "gone");
    http_resp_free(r);
    /* v1 keeps its answer for a stopped sandbox's file: 404 */
    r = sbx_fs_read(d, sid, "keep.txt", NULL);
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    /* get without resume does not start one */
    r = http_get(d, "/v2/sandboxes/eph?projectId=p");
    expect_status(r, 200);
    ck_assert_str_eq(str_at(r->json, "session", "id"), sid);
    ck_assert_str_eq(str_at(r->json, "sandbox", "status"), "stopped");
    http_resp_free(r);
    /* resume: a new session, from scratch (not persistent) */
    r = resume(d, "p", "eph");
    expect_status(r, 200);
    ck_assert(json_is_true(json_object_get(r->json, "resumed")));
    sid2 = strdup(str_at(r->json, "session", "id"));
    ck_assert_str_ne(sid2, sid);
    ck_assert_str_eq(str_at(r->json, "sandbox", "currentSessionId"), sid2);
    ck_assert_str_eq(str_at(r->json, "sandbox", "status"), "running");
    http_resp_free(r);
    cr = sbx_sh(d, sid2, "test -e /vercel/sandbox/keep.txt && echo there || echo gone");
    ck_assert_str_eq(cr->out, "gone\n");
    cmd_result_free(cr);
    /* both sessions are listed under the name */
    r = http_get(d, "/v2/sandboxes/sessions?project=p&name=eph");
    expect_status(r, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r->json, "sessions")), 2);
    http_resp_free(r);
    free(sid);
    free(sid2);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_v2_persistent_keeps_files_across_sessions_and_restarts)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = create_named(d, jpack("{s:s,s:s,s:b}", "projectId", "p", "name", "keep", "persistent", 1));
    char *sid = strdup(str_at(r->json, "session", "id")), *snap, *sid2;
    struct cmd_result *cr;
    ck_assert(json_is_true(json_object_get(json_object_get(r->json, "sandbox"), "persistent")));
    http_resp_free(r);

    cr = sbx_sh(d, sid, "echo generation-1 > /vercel/sandbox/state.txt; mkdir -p /tmp/x");
    ck_assert_int_eq(cr->exit_code, 0);
    cmd_result_free(cr);
    r = http_post(d, NULL, "/v2/sandboxes/sessions/%s/stop", sid);
    expect_status(r, 200);
    ck_assert_str_eq(str_at(r->json, "snapshot", "status"), "created");
    ck_assert_str_eq(str_at(r->json, "snapshot", "sourceSessionId"), sid);
    ck_assert_str_eq(str_at(r->json, "snapshot", "creationMethod"), "stop");
    snap = strdup(str_at(r->json, "snapshot", "id"));
    ck_assert_str_eq(str_at(r->json, "sandbox", "currentSnapshotId"), snap);
    http_resp_free(r);

    /* the next session starts from it */
    r = resume(d, "p", "keep");
    expect_status(r, 200);
    ck_assert(json_is_true(json_object_get(r->json, "resumed")));
    sid2 = strdup(str_at(r->json, "session", "id"));
    ck_assert_str_eq(str_at(r->json, "session", "sourceSnapshotId"), snap);
    http_resp_free(r);
    cr = sbx_sh(d, sid2, "cat /vercel/sandbox/state.txt; stat -c %%u /vercel/sandbox/state.txt; "
                         "echo generation-2 > /vercel/sandbox/state.txt");
    ck_assert_str_eq(cr->out, "generation-1\n1000\n");
    cmd_result_free(cr);
    /* a second stop: its snapshot replaces the first, which goes */
    r = http_post(d, NULL, "/v2/sandboxes/sessions/%s/stop", sid2);
    expect_status(r, 200);
    ck_assert_str_ne(str_at(r->json, "snapshot", "id"), snap);
    ck_assert_str_eq(str_at(r->json, "snapshot", "parentId"), snap);
    http_resp_free(r);
    r = http_get(d, "/v2/sandboxes/snapshots/%s", snap);
    expect_status(r, 200);
    ck_assert_str_eq(str_at(r->json, "snapshot", "status"), "deleted");
    http_resp_free(r);

    /* sbxd restarts: the named sandbox and its snapshot are still there */
    sbxd_terminate(d);
    sbxd_restart(d);
    r = http_get(d, "/v2/sandboxes/keep?projectId=p");
    expect_status(r, 200);
    ck_assert_str_eq(str_at(r->json, "sandbox", "status"), "stopped");
    ck_assert_str_eq(str_at(r->json, "sandbox", "currentSessionId"), sid2);
    http_resp_free(r);
    free(sid2);
    sid2 = session_of(d, "p", "keep");
    http_resp_free(resume(d, "p", "keep"));
    free(sid2);
    sid2 = session_of(d, "p", "keep");
    cr = sbx_sh(d, sid2, "cat /vercel/sandbox/state.txt");
    ck_assert_str_eq(cr->out, "generation-2\n");
    cmd_result_free(cr);

    /* sbxd stopping with the session running: the stop keeps the files too */
    cr = sbx_sh(d, sid2, "echo generation-3 > /vercel/sandbox/state.txt");
    cmd_result_free(cr);
    sbxd_terminate(d);
    sbxd_restart(d);
    http_resp_free(resume(d, "p", "keep"));
    free(sid2);
    sid2 = session_of(d, "p", "keep");
    cr = sbx_sh(d, sid2, "cat /vercel/sandbox/state.txt");
    ck_assert_str_eq(cr->out, "generation-3\n");
    cmd_result_free(cr);

    /* persistent off: the stop keeps nothing */
    r = http_json(d, "PATCH", jpack("{s:b}", "persistent", 0), NULL, "/v2/sandboxes/keep?projectId=p");
    expect_status(r, 200);
    ck_assert(json_is_false(json_object_get(json_object_get(r->json, "sandbox"), "persistent")));
    http_resp_free(r);
    r = http_post(d, NULL, "/v2/sandboxes/sessions/%s/stop", sid2);
    expect_status(r, 200);
    ck_assert_ptr_null(json_object_get(r->json, "snapshot"));
    http_resp_free(r);
    free(snap);
    free(sid);
    free(sid2);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_v2_snapshot_not_found)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = create_named(d, jpack("{s:s,s:s,s:b}", "projectId", "p", "name", "lost", "persistent", 1));
    char *sid = strdup(str_at(r->json, "session", "id")), *snap;
    http_resp_free(r);
    r = http_post(d, NULL, "/v2/sandboxes/sessions/%s/stop", sid);
    expect_status(r, 200);
    snap = strdup(str_at(r->json, "snapshot", "id"));
    http_resp_free(r);
    r = http_delete(d, "/v2/sandboxes/snapshots/%s", snap);
    expect_status(r, 200);
    ck_assert_str_eq(str_at(r->json, "snapshot", "status"), "deleted");
    http_resp_free(r);
    /* what getOrCreate turns into delete + create */
    r = http_get(d, "/v2/sandboxes/lost?projectId=p");
    expect_error(r, 410, "snapshot_not_found");
    http_resp_free(r);
    r = resume(d, "p", "lost");
    expect_error(r, 410, "snapshot_not_found");
    http_resp_free(r);
    r = http_delete(d, "/v2/sandboxes/lost?projectId=p");
    expect_status(r, 200);
    http_resp_free(r);
    http_resp_free(create_named(d, jpack("{s:s,s:s}", "projectId", "p", "name", "lost")));
    free(snap);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_v2_cursor_lists)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    static const char *const names[] = {"c-one", "a-two", "b-three"};
    struct http_resp *r;
    const char *next;
    char cursor[200];
    for (size_t i = 0; i < 3; i++) {
        json_t *b = jpack("{s:s,s:s,s:{s:s}}", "projectId", "lp", "name", names[i], "tags", "team", i == 1 ? "x" : "y");
        http_resp_free(create_named(d, b));
    }
    http_resp_free(create_named(d, jpack("{s:s,s:s}", "projectId", "other", "name", "z")));
    /* newest first, two a page */
    r = http_get(d, "/v2/sandboxes?project=lp&limit=2");
    expect_status(r, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r->json, "sandboxes")), 2);
    ck_assert_str_eq(str_at(json_array_get(json_object_get(r->json, "sandboxes"), 0), "name", NULL), "b-three");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r->json, "pagination"), "count")), 2);
    next = str_at(json_object_get(r->json, "pagination"), "next", NULL);
    ck_assert_ptr_nonnull(next);
    ck_assert_ptr_null(json_object_get(json_object_get(r->json, "pagination"), "prev"));
    snprintf(cursor, sizeof cursor, "%s", next);
    http_resp_free(r);
    {
        /* the cursor as the SDK sends it back: URL-encoded */
        char enc[300];
        size_t o = 0;
        for (const char *c = cursor; *c && o + 4 < sizeof enc; c++)
            o += (size_t)(strchr("-_.~", *c) || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
                                  (*c >= 'A' && *c <= 'Z')
                              ? snprintf(enc + o, 2, "%c", *c)
                              : snprintf(enc + o, 4, "%%%02X", (unsigned char)*c));
        r = http_get(d, "/v2/sandboxes?project=lp&limit=2&cursor=%s", enc);
    }
    expect_status(r, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r->json, "sandboxes")), 1);
    ck_assert_str_eq(str_at(json_array_get(json_object_get(r->json, "sandboxes"), 0), "name", NULL), "c-one");
    ck_assert(json_is_null(json_object_get(json_object_get(r->json, "pagination"), "next")));
    http_resp_free(r);
    /* by name, ascending; a prefix; a tag */
    r = http_get(d, "/v2/sandboxes?project=lp&sortBy=name&sortOrder=asc");
    expect_status(r, 200);
    ck_assert_str_eq(str_at(json_array_get(json_object_get(r->json, "sandboxes"), 0), "name", NULL), "a-two");
    ck_assert_str_eq(str_at(json_array_get(json_object_get(r->json, "sandboxes"), 2), "name", NULL), "c-one");
    http_resp_free(r);
    r = http_get(d, "/v2/sandboxes?project=lp&namePrefix=b-");
    ck_assert_uint_eq(json_array_size(json_object_get(r->json, "sandboxes")), 1);
    http_resp_free(r);
    r = http_get(d, "/v2/sandboxes?project=lp&tags=team%%3Ax");
    ck_assert_uint_eq(json_array_size(json_object_get(r->json, "sandboxes")), 1);
    ck_assert_str_eq(str_at(json_array_get(json_object_get(r->json, "sandboxes"), 0), "name", NULL), "a-two");
    ck_assert_str_eq(str_at(json_object_get(json_array_get(json_object_get(r->json, "sandboxes"), 0), "tags"), "team",
                            NULL),
                     "x");
    http_resp_free(r);
    /* bad parameters */
    {
        static const char *const bad[] = {"limit=0", "limit=101", "sortBy=size", "sortOrder=up", "cursor=junk"};
        for (size_t i = 0; i < 5; i++) {
            r = http_get(d, "/v2/sandboxes?project=lp&%s", bad[i]);
            expect_error(r, 400, "bad_request");
            http_resp_free(r);
        }
    }
    sbxd_stop(d);
}
END_TEST

START_TEST(test_v2_update_and_delete)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = create_named(d, jpack("{s:s,s:s}", "projectId", "p", "name", "upd"));
    char *sid = strdup(str_at(r->json, "session", "id"));
    http_resp_free(r);

    r = http_json(d, "PATCH",
                  jpack("{s:I,s:{s:i},s:{s:s},s:I,s:{s:i,s:b}}", "timeout", (json_int_t)600000, "resources", "vcpus", 1,
                        "tags", "k", "v", "snapshotExpiration", (json_int_t)0, "keepLastSnapshots", "count", 2,
                        "deleteEvicted", 1),
                  NULL, "/v2/sandboxes/upd?projectId=p");
    expect_status(r, 200);
    {
        json_t *sb = json_object_get(r->json, "sandbox");
        ck_assert_int_eq(json_integer_value(json_object_get(sb, "timeout")), 600000);
        ck_assert_int_eq(json_integer_value(json_object_get(sb, "vcpus")), 1);
        ck_assert_str_eq(str_at(json_object_get(sb, "tags"), "k", NULL), "v");
        ck_assert_int_eq(json_integer_value(json_object_get(sb, "snapshotExpiration")), 0);
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(sb, "keepLastSnapshots"), "count")), 2);
    }
    http_resp_free(r);
    /* the settings reach the next session */
    http_resp_free(http_post(d, NULL, "/v2/sandboxes/sessions/%s/stop", sid));
    r = resume(d, "p", "upd");
    expect_status(r, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r->json, "session"), "timeout")), 600000);
    http_resp_free(r);
    /* refused: bad values, and what sbxd does not do */
    {
        static const char *const bad[] = {"{\"persistent\":1}", "{\"timeout\":5}", "{\"tags\":{\"a\":1}}",
                                          "{\"ports\":[0]}", "{\"keepLastSnapshots\":{\"count\":11}}",
                                          "{\"currentSnapshotId\":\"snap_nosuch\"}"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            r = http_json(d, "PATCH", json_loads(bad[i], 0, NULL), NULL, "/v2/sandboxes/upd?projectId=p");
            ck_assert_msg(r->status == 400 || r->status == 404, "%s: %ld %s", bad[i], r->status, r->body);
            expect_error(r, r->status, NULL);
            http_resp_free(r);
        }
    }
    r = http_json(d, "PATCH", jpack("{s:{s:{s:s}}}", "mounts", "/data", "drive", "d1"), NULL,
                  "/v2/sandboxes/upd?projectId=p");
    expect_error(r, 400, "not_supported");
    http_resp_free(r);
    r = http_json(d, "PATCH", jpack("{s:s}", "networkId", "net_1"), NULL, "/v2/sandboxes/upd?projectId=p");
    expect_error(r, 400, "not_supported");
    http_resp_free(r);

    /* delete: the running session stops, the name is free again */
    free(sid);
    sid = session_of(d, "p", "upd");
    r = http_delete(d, "/v2/sandboxes/upd?projectId=p");
    expect_status(r, 200);
    ck_assert_str_eq(str_at(r->json, "sandbox", "name"), "upd");
    http_resp_free(r);
    ck_assert_str_eq(sbx_status_str(d, sid), "stopped");
    r = http_get(d, "/v2/sandboxes/upd?projectId=p");
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    r = http_delete(d, "/v2/sandboxes/upd?projectId=p");
    expect_error(r, 404, "not_found");
    http_resp_free(r);

    /* deleteOrphanSnapshots takes its snapshots along */
    r = create_named(d, jpack("{s:s,s:s,s:b}", "projectId", "p", "name", "orph", "persistent", 1));
    free(sid);
    sid = strdup(str_at(r->json, "session", "id"));
    http_resp_free(r);
    r = http_post(d, NULL, "/v2/sandboxes/sessions/%s/stop", sid);
    {
        char *snap = strdup(str_at(r->json, "snapshot", "id"));
        http_resp_free(r);
        r = http_delete(d, "/v2/sandboxes/orph?projectId=p&deleteOrphanSnapshots=true");
        expect_status(r, 200);
        http_resp_free(r);
        r = http_get(d, "/v2/sandboxes/snapshots/%s", snap);
        ck_assert_str_eq(str_at(r->json, "snapshot", "status"), "deleted");
        http_resp_free(r);
        free(snap);
    }
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_v2_network_policy_shape)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = create_named(
        d, json_loads("{\"projectId\":\"p\",\"name\":\"np\",\"networkPolicy\":{\"allow\":[\"example.com\"],"
                      "\"subnets\":{\"deny\":[\"10.0.0.0/8\"]}}}",
                      0, NULL));
    json_t *pol = json_object_get(json_object_get(r->json, "session"), "networkPolicy");
    char *sid = strdup(str_at(r->json, "session", "id"));
    ck_assert_str_eq(str_at(pol, "mode", NULL), "custom");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(pol, "allowedDomains"), 0)), "example.com");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(pol, "deniedCIDRs"), 0)), "10.0.0.0/8");
    pol = json_object_get(json_object_get(r->json, "sandbox"), "networkPolicy");
    ck_assert_str_eq(str_at(pol, "mode", NULL), "custom");
    http_resp_free(r);
    /* the session route: the new shape in, the legacy form (with mode) out */
    r = http_post(d, json_loads("{\"allow\":{\"a.com\":[],\"*.b.org\":[]}}", 0, NULL),
                  "/v2/sandboxes/sessions/%s/network-policy", sid);
    expect_status(r, 200);
    pol = json_object_get(json_object_get(r->json, "session"), "networkPolicy");
    ck_assert_str_eq(str_at(pol, "mode", NULL), "custom");
    ck_assert_uint_eq(json_array_size(json_object_get(pol, "allowedDomains")), 2);
    http_resp_free(r);
    r = http_post(d, jpack("{s:s}", "mode", "deny-all"), "/v2/sandboxes/sessions/%s/network-policy", sid);
    expect_status(r, 200);
    ck_assert_str_eq(str_at(json_object_get(r->json, "session"), "networkPolicy", "mode"), "deny-all");
    http_resp_free(r);
    /* a match is kept (and enforced by the egress proxy) */
    r = http_post(d, json_loads("{\"allow\":{\"a.com\":[{\"match\":{\"method\":[\"GET\"]},\"transform\":[{\"headers\":"
                                "{\"x-k\":\"v\"}}]}]}}", 0, NULL),
                  "/v2/sandboxes/sessions/%s/network-policy", sid);
    expect_status(r, 200);
    pol = json_object_get(json_object_get(r->json, "session"), "networkPolicy");
    ck_assert_ptr_nonnull(json_object_get(json_array_get(json_object_get(pol, "injectionRules"), 0), "match"));
    ck_assert_str_eq(json_string_value(json_array_get(
                         json_object_get(json_array_get(json_object_get(pol, "injectionRules"), 0), "headerNames"), 0)),
                     "x-k");
    http_resp_free(r);
    /* rules sbxd cannot enforce are refused by name, never widened */
    {
        static const char *const bad[][2] = {
            {"{\"allow\":{\"a.com\":[{\"match\":{\"path\":{\"regex\":\"(\"}},\"transform\":[{\"headers\":{\"x\":\"y\"}}]}]}}",
             "regex"},
            {"{\"allow\":{\"a.com\":[{\"forwardURL\":\"https://proxy.example.com/\"}]}}", "forwardURL"},
            {"{\"allow\":{\"a.com\":[{\"response\":{\"statusCode\":403}}]}}", "response"},
            {"{\"allow\":{\"a.com\":[{\"transform\":[],\"response\":{\"statusCode\":403}}]}}", "exactly one"},
            {"{\"allow\":{\"a.com\":[{}]}}", "exactly one"},
            {"{\"allow\":\"a.com\"}", "allow"},
            {"{\"allow\":[\"a.com\"],\"subnets\":{\"allow\":[\"not-a-cidr\"]}}", "not-a-cidr"},
            {"{\"allow\":[\"a.com\"],\"extra\":1}", "extra"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            r = http_post(d, json_loads(bad[i][0], 0, NULL), "/v2/sandboxes/sessions/%s/network-policy", sid);
            expect_error(r, 400, "bad_request");
            ck_assert_msg(contains(r->body, bad[i][1]), "%s: %s", bad[i][0], r->body);
            http_resp_free(r);
        }
    }
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_v2_refused_extras)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = create_named(d, jpack("{s:s,s:s}", "projectId", "p", "name", "ex"));
    char *sid = strdup(str_at(r->json, "session", "id"));
    http_resp_free(r);
    r = http_post(d, jpack("{s:s}", "name", "ex2"), "/v2/sandboxes/ex/fork?projectId=p");
    expect_error(r, 400, "not_supported");
    ck_assert(contains(r->body, "fork"));
    http_resp_free(r);
    r = http_get(d, "/v2/sandboxes/drives?projectId=p");
    expect_error(r, 400, "not_supported");
    http_resp_free(r);
    r = http_post(d, jpack("{s:s}", "projectId", "p"), "/v2/sandboxes/drives/d1");
    expect_error(r, 400, "not_supported");
    http_resp_free(r);
    r = http_get(d, "/v2/sandboxes/snapshots/tree?project=p&snapshotId=snap_x");
    expect_error(r, 400, "not_supported");
    http_resp_free(r);
    r = http_post(d, json_object(), "/v2/sandboxes/sessions/%s/interactive", sid);
    expect_error(r, 400, "not_supported");
    http_resp_free(r);
    /* the 1.x kill path does not exist under /v2 */
    r = http_post(d, jpack("{s:i}", "signal", 15), "/v2/sandboxes/sessions/%s/cmd_x/kill", sid);
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    r = http_get(d, "/v3/sandboxes");
    expect_error(r, 405, "method_not_allowed");
    http_resp_free(r);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_v2_session_responses)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = create_named(d, jpack("{s:s,s:s}", "projectId", "p", "name", "resp"));
    char *sid = strdup(str_at(r->json, "session", "id"));
    http_resp_free(r);
    r = http_post(d, jpack("{s:I}", "duration", (json_int_t)1000), "/v2/sandboxes/sessions/%s/extend-timeout", sid);
    expect_status(r, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r->json, "session"), "timeout")), 301000);
    ck_assert_ptr_null(json_object_get(r->json, "sandbox"));
    http_resp_free(r);
    /* file reads: octet-stream, empty files too; missing: 404 */
    sbx_write_file(d, sid, "/vercel/sandbox/empty", "", 0, 0);
    r = http_post(d, jpack("{s:s}", "path", "empty"), "/v2/sandboxes/sessions/%s/fs/read", sid);
    expect_status(r, 200);
    ck_assert_str_eq(r->ctype, "application/octet-stream");
    ck_assert_uint_eq(r->len, 0);
    http_resp_free(r);
    r = http_post(d, jpack("{s:s}", "path", "nope"), "/v2/sandboxes/sessions/%s/fs/read", sid);
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    /* snapshot: {snapshot, session}, the 2.x snapshot shape */
    r = http_post(d, jpack("{s:I}", "expiration", (json_int_t)0), "/v2/sandboxes/sessions/%s/snapshot", sid);
    expect_status(r, 200);
    ck_assert_str_eq(str_at(r->json, "snapshot", "sourceSessionId"), sid);
    ck_assert_ptr_null(json_object_get(json_object_get(r->json, "snapshot"), "sourceSandboxId"));
    ck_assert_str_eq(str_at(r->json, "snapshot", "creationMethod"), "snapshot");
    ck_assert_str_eq(str_at(r->json, "session", "status"), "stopped");
    ck_assert_ptr_null(json_object_get(json_object_get(r->json, "snapshot"), "expiresAt"));
    {
        char *snap = strdup(str_at(r->json, "snapshot", "id"));
        http_resp_free(r);
        r = http_get(d, "/v2/sandboxes/snapshots?project=p&name=resp");
        expect_status(r, 200);
        ck_assert_str_eq(str_at(json_array_get(json_object_get(r->json, "snapshots"), 0), "id", NULL), snap);
        ck_assert(json_is_null(json_object_get(json_object_get(r->json, "pagination"), "next")));
        http_resp_free(r);
        /* the v1 shape of the same snapshot */
        r = http_get(d, "/v1/sandboxes/snapshots/%s", snap);
        ck_assert_str_eq(str_at(r->json, "snapshot", "sourceSandboxId"), sid);
        free(snap);
    }
    http_resp_free(r);
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* --retain-records lets go of a named sandbox once nothing of it is left;
 * a persistent one with its snapshot stays. */
START_TEST(test_v2_named_pruned_with_records)
{
    const char *args[] = {"--retain-records", "1", NULL};
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r;
    int64_t until;
    bool gone = false;
    static const char *const names[] = {"eph", "kept"};
    for (int i = 0; i < 2; i++) {
        char *sid;
        r = create_named(d, jpack("{s:s,s:s,s:b}", "projectId", "p", "name", names[i], "persistent", i));
        sid = strdup(str_at(r->json, "session", "id"));
        http_resp_free(r);
        r = http_post(d, NULL, "/v2/sandboxes/sessions/%s/stop", sid);
        expect_status(r, 200);
        http_resp_free(r);
        free(sid);
    }
    sbxd_terminate(d);
    sbxd_set_args(d, args);
    sbxd_restart(d);
    /* the janitor (every 10 s) forgets the one with nothing left */
    until = mono_ms() + 30000;
    while (!gone && mono_ms() < until) {
        r = http_get(d, "/v2/sandboxes/eph?projectId=p");
        gone = r->status == 404;
        http_resp_free(r);
        if (!gone)
            usleep(200000);
    }
    ck_assert_msg(gone, "the named sandbox without sessions or snapshot is still there");
    ck_assert(host_sh("grep -q 'forgot 1 named sandboxes' '%s'", d->log) == 0);
    r = resume(d, "p", "kept");
    expect_status(r, 200);
    ck_assert(json_is_true(json_object_get(r->json, "resumed")));
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

/* Header values are never written to disk: after a restart a sandbox that
 * injected headers will not resume without them, until its policy is set
 * again; nothing of the values is in its record. */
START_TEST(test_v2_injected_headers_not_kept_across_restart)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    json_t *pol = json_loads("{\"allow\":{\"api.example.com\":[{\"transform\":[{\"headers\":"
                             "{\"authorization\":\"Bearer sekrit-value-42\"}}]}]}}", 0, NULL);
    struct http_resp *r = create_named(d, jpack("{s:s,s:s,s:b,s:o}", "projectId", "p", "name", "inj", "persistent", 0,
                                                "networkPolicy", pol));
    char *sid = strdup(str_at(r->json, "session", "id"));
    http_resp_free(r);
    r = http_post(d, NULL, "/v2/sandboxes/sessions/%s/stop", sid);
    http_resp_free(r);
    ck_assert_msg(host_sh("! grep -rq 'sekrit-value-42' '%s'", d->state) == 0, "a header value is on disk");
    sbxd_terminate(d);
    sbxd_restart(d);
    r = resume(d, "p", "inj");
    expect_error(r, 409, "conflict");
    ck_assert(contains(r->body, "networkPolicy"));
    http_resp_free(r);
    r = http_json(d, "PATCH", json_loads("{\"networkPolicy\":{\"allow\":{\"api.example.com\":[{\"transform\":"
                                         "[{\"headers\":{\"authorization\":\"Bearer again\"}}]}]}}}", 0, NULL),
                  NULL, "/v2/sandboxes/inj?projectId=p");
    expect_status(r, 200);
    http_resp_free(r);
    r = resume(d, "p", "inj");
    expect_status(r, 200);
    ck_assert(json_is_true(json_object_get(r->json, "resumed")));
    http_resp_free(r);
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* Up to 15 ports in v2 (the 2.x docs), each with its route; a 16th is a
 * 400 that names the limit. v1 keeps its 4. */
START_TEST(test_v2_ports_limit)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    json_t *ports = json_array(), *routes;
    struct http_resp *r;

    for (int p = 3000; p < 3015; p++)
        json_array_append_new(ports, json_integer(p));
    r = create_named(d, jpack("{s:s,s:O}", "projectId", "p1", "ports", ports));
    routes = json_object_get(r->json, "routes");
    ck_assert_int_eq(json_array_size(routes), 15);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(routes, 14), "port")), 3014);
    http_resp_free(r);

    json_array_append_new(ports, json_integer(3015));
    r = http_post(d, jpack("{s:s,s:O}", "projectId", "p1", "ports", ports), "/v3/sandboxes");
    expect_error(r, 400, "bad_request");
    ck_assert_msg(strstr(r->body, "at most 15 port numbers") && strstr(r->body, "16 given"), "%s", r->body);
    http_resp_free(r);
    /* a named sandbox's update: the same limit */
    r = create_named(d, jpack("{s:s,s:s}", "projectId", "p1", "name", "ports16"));
    http_resp_free(r);
    r = http_json(d, "PATCH", jpack("{s:O}", "ports", ports), NULL, "/v2/sandboxes/ports16?projectId=p1");
    expect_error(r, 400, "bad_request");
    ck_assert_msg(strstr(r->body, "at most 15 port numbers"), "%s", r->body);
    http_resp_free(r);

    /* v1: 4 */
    r = http_post(d, jpack("{s:[i,i,i,i,i]}", "ports", 1, 2, 3, 4, 5), "/v1/sandboxes");
    expect_error(r, 400, "bad_request");
    ck_assert_msg(strstr(r->body, "at most 4 port numbers in the v1 API"), "%s", r->body);
    http_resp_free(r);
    json_decref(ports);
    sbxd_stop(d);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("sbxd_v2");
    TCase *tc = sbx_tcase("v2", 120);
    tcase_add_test(tc, test_v2_create_get_names);
    tcase_add_test(tc, test_v2_ports_limit);
    tcase_add_test(tc, test_v2_runtime_is_what_runs);
    tcase_add_test(tc, test_v2_runtime_kept_across_a_host_upgrade);
    tcase_add_test(tc, test_v2_inline_logs_and_command_shape);
    tcase_add_test(tc, test_v2_command_timeout);
    tcase_add_test(tc, test_v2_stopped_session_410_then_resume);
    tcase_add_test(tc, test_v2_persistent_keeps_files_across_sessions_and_restarts);
    tcase_add_test(tc, test_v2_snapshot_not_found);
    tcase_add_test(tc, test_v2_cursor_lists);
    tcase_add_test(tc, test_v2_update_and_delete);
    tcase_add_test(tc, test_v2_network_policy_shape);
    tcase_add_test(tc, test_v2_refused_extras);
    tcase_add_test(tc, test_v2_session_responses);
    tcase_add_test(tc, test_v2_named_pruned_with_records);
    tcase_add_test(tc, test_v2_injected_headers_not_kept_across_restart);
    suite_add_tcase(s, tc);
    return s;
}
