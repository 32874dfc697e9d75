/* SPDX-License-Identifier: MIT */
/* api: every endpoint of the v1 protocol, its response shapes and its error statuses. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "testnet.h"

/* ---- shapes ---------------------------------------------------------------------------- */

static bool has_null(json_t *j)
{
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_null(j))
        return true;
    if (json_is_object(j))
        json_object_foreach(j, k, v) if (has_null(v)) return true;
    if (json_is_array(j))
        json_array_foreach(j, i, v) if (has_null(v)) return true;
    return false;
}

static const char *dump(json_t *j)
{
    static char buf[4096];
    char *t = json_dumps(j, JSON_COMPACT);
    snprintf(buf, sizeof buf, "%s", t ? t : "(null)");
    free(t);
    return buf;
}

/* The sandbox object of protocol 3.1 / 5. */
static void check_sandbox_shape(json_t *s)
{
    static const char *const strs[] = {"id", "region", "runtime", "status", "cwd"};
    static const char *const nums[] = {"memory", "vcpus", "timeout", "requestedAt", "createdAt",
                                       "updatedAt"};
    static const char *const opt_nums[] = {"startedAt", "requestedStopAt", "stoppedAt", "abortedAt",
                                           "duration", "snapshottedAt", "interactivePort",
                                           "activeCpuDurationMs"};
    static const char *const statuses[] = {"pending", "running", "stopping", "stopped", "failed",
                                           "aborted", "snapshotting"};
    const char *st;
    bool ok = false;
    json_t *np, *nt;

    ck_assert_msg(json_is_object(s), "sandbox is not an object");
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        ck_assert_msg(json_is_string(json_object_get(s, strs[i])), "sandbox.%s is not a string: %s",
                      strs[i], dump(s));
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        ck_assert_msg(json_is_integer(json_object_get(s, nums[i])), "sandbox.%s is not a number: %s",
                      nums[i], dump(s));
    for (size_t i = 0; i < sizeof opt_nums / sizeof opt_nums[0]; i++) {
        json_t *v = json_object_get(s, opt_nums[i]);
        ck_assert_msg(!v || json_is_integer(v), "sandbox.%s is present but not a number: %s",
                      opt_nums[i], dump(s));
    }
    ck_assert_msg(!has_null(s), "sandbox has a null (optional fields must be omitted): %s", dump(s));
    st = json_string_value(json_object_get(s, "status"));
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        ok |= strcmp(st, statuses[i]) == 0;
    ck_assert_msg(ok, "sandbox.status '%s' is not in the enum", st);
    if (json_object_get(s, "sourceSnapshotId"))
        ck_assert(json_is_string(json_object_get(s, "sourceSnapshotId")));
    np = json_object_get(s, "networkPolicy");
    if (np)
        ck_assert_msg(json_is_string(json_object_get(np, "mode")), "networkPolicy without mode");
    nt = json_object_get(s, "networkTransfer");
    if (nt)
        ck_assert(json_is_integer(json_object_get(nt, "ingress")) &&
                  json_is_integer(json_object_get(nt, "egress")));
    ck_assert_str_eq(json_string_value(json_object_get(s, "cwd")), "/vercel/sandbox");
}

static void check_snapshot_shape(json_t *sn)
{
    static const char *const strs[] = {"id", "sourceSandboxId", "region", "status"};
    static const char *const nums[] = {"sizeBytes", "createdAt", "updatedAt"};
    const char *st;
    ck_assert_msg(json_is_object(sn), "snapshot is not an object");
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        ck_assert_msg(json_is_string(json_object_get(sn, strs[i])), "snapshot.%s: %s", strs[i],
                      dump(sn));
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        ck_assert_msg(json_is_integer(json_object_get(sn, nums[i])), "snapshot.%s: %s", nums[i],
                      dump(sn));
    ck_assert_msg(!json_object_get(sn, "expiresAt") || json_is_integer(json_object_get(sn, "expiresAt")),
                  "snapshot.expiresAt: %s", dump(sn));
    ck_assert_msg(!has_null(sn), "snapshot has a null: %s", dump(sn));
    st = json_string_value(json_object_get(sn, "status"));
    ck_assert_msg(strcmp(st, "created") == 0 || strcmp(st, "deleted") == 0 || strcmp(st, "failed") == 0,
                  "snapshot.status '%s'", st);
}

static void check_pagination(json_t *p)
{
    json_t *next = json_object_get(p, "next"), *prev = json_object_get(p, "prev");
    ck_assert_msg(json_is_integer(json_object_get(p, "count")), "pagination.count: %s", dump(p));
    ck_assert_msg(next && (json_is_null(next) || json_is_integer(next)), "pagination.next: %s", dump(p));
    ck_assert_msg(prev && (json_is_null(prev) || json_is_integer(prev)), "pagination.prev: %s", dump(p));
}

static json_t *jget(json_t *o, const char *a, const char *b)
{
    return json_object_get(json_object_get(o, a), b);
}

static const char *jstr(json_t *o, const char *a, const char *b)
{
    return json_string_value(b ? jget(o, a, b) : json_object_get(o, a));
}

static char *jdup(json_t *o, const char *a, const char *b)
{
    const char *s = jstr(o, a, b);
    ck_assert_msg(s != NULL, "no string at %s.%s in %s", a, b ? b : "", dump(o));
    return strdup(s);
}

/* ---- runtimes ------------------------------------------------------------------------------ */

/* What the sandbox really runs, named as Vercel names runtimes: "node" + the
 * major version `node --version` prints in it, "python" + the major.minor
 * `python3 --version` prints. NULL when the sandbox has no such program.
 * malloc'd. */
static char *runtime_in_sandbox(struct sbxd *d, const char *sid, const char *prog)
{
    struct cmd_result *c = sbxd_run(d, sid, jpack("{s:s,s:[s]}", "command", prog, "args", "--version"));
    char name[32] = "";
    int major = -1, minor = -1;

    if (c->exit_code == 127) { /* not there: sbxd's "not found" */
        cmd_result_free(c);
        return NULL;
    }
    ck_assert_msg(c->exit_code == 0, "%s --version exited %d: %s%s", prog, c->exit_code, c->out, c->err);
    if (strcmp(prog, "node") == 0) {
        ck_assert_msg(sscanf(c->out, "v%d.", &major) == 1 && major > 0, "node --version: %s", c->out);
        snprintf(name, sizeof name, "node%d", major);
    } else {
        /* stdout since Python 3.4, stderr before */
        const char *v = strncmp(c->out, "Python ", 7) == 0 ? c->out : c->err;
        ck_assert_msg(sscanf(v, "Python %d.%d", &major, &minor) == 2, "python3 --version: %s|%s", c->out, c->err);
        snprintf(name, sizeof name, "python%d.%d", major, minor);
    }
    cmd_result_free(c);
    return strdup(name);
}

/* The sbxd log so far (malloc'd). */
static char *log_text(struct sbxd *d)
{
    FILE *f = fopen(d->log, "r");
    struct membuf b = {0};
    char buf[4096];
    size_t n;
    ck_assert_msg(f != NULL, "cannot read %s", d->log);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        membuf_add(&b, buf, n);
    fclose(f);
    membuf_add(&b, "", 0);
    return b.p ? b.p : strdup("");
}

/* A create names the runtime the sandbox really runs (the host's node or
 * python3, whatever was asked for), keeps what was asked in
 * requestedRuntime, and sbxd warns in its log when they differ. */
START_TEST(test_sbxd_api_runtime_is_what_runs)
{
    static const struct {
        const char *ask;    /* NULL: none, the default */
        const char *prog;
    } cases[] = {{"node22", "node"}, {"python3.13", "python3"}, {NULL, "node"}, {"node24", "node"},
                 {"node26", "node"}};
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *real_node = NULL, *first = NULL, *first_runtime = NULL;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *ask = cases[i].ask;
        struct http_resp *r = sbx_create_resp(d, ask ? jpack("{s:s}", "runtime", ask) : NULL);
        json_t *s = json_object_get(r->json, "sandbox");
        char *sid = jdup(s, "id", NULL), *answered = jdup(s, "runtime", NULL);
        char *real = runtime_in_sandbox(d, sid, cases[i].prog), *log;
        char warn[160];

        check_sandbox_shape(s);
        /* the answer is what runs; a missing program leaves the name asked for */
        ck_assert_msg(strcmp(answered, real ? real : ask ? ask : "node24") == 0,
                      "asked %s: answered runtime %s, the sandbox runs %s", ask ? ask : "(default)", answered,
                      real ? real : "nothing");
        if (ask)
            ck_assert_str_eq(jstr(s, "requestedRuntime", NULL), ask);
        else
            ck_assert_msg(!json_object_get(s, "requestedRuntime"), "requestedRuntime without a request: %s",
                          dump(s));
        http_resp_free(r);
        /* GET says the same */
        s = sbx_get_sandbox(d, sid);
        ck_assert_str_eq(jstr(s, "runtime", NULL), answered);
        if (ask)
            ck_assert_str_eq(jstr(s, "requestedRuntime", NULL), ask);
        json_decref(s);
        /* a warning when it differs from what was asked */
        snprintf(warn, sizeof warn, "sandbox %s: runtime %s requested, %s provided", sid, ask ? ask : "", answered);
        log = log_text(d);
        if (ask && real && strcmp(ask, real) != 0)
            ck_assert_msg(contains(log, warn) && contains(log, "sbxd warn: sandbox"),
                          "no warning '%s' in the log", warn);
        else
            ck_assert_msg(!contains(log, warn), "a warning without a difference: '%s'", warn);
        if (!ask && real)
            real_node = strdup(real);
        if (i == 0) {
            first = strdup(sid);
            first_runtime = strdup(answered);
        }
        free(log);
        free(real);
        free(answered);
        free(sid);
    }

    /* The names sbxd answers are accepted back as they are. */
    if (real_node) {
        struct http_resp *r = sbx_create_resp(d, jpack("{s:s}", "runtime", real_node));
        json_t *s = json_object_get(r->json, "sandbox");
        ck_assert_str_eq(jstr(s, "runtime", NULL), real_node);
        ck_assert_str_eq(jstr(s, "requestedRuntime", NULL), real_node);
        http_resp_free(r);
    }
    /* Other names are refused as before. */
    {
        static const char *const bad[] = {"ruby3.3", "bun1", "", "node", "python"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            struct http_resp *r = http_post(d, jpack("{s:s}", "runtime", bad[i]), "/v1/sandboxes");
            expect_error(r, 400, "bad_request");
            ck_assert_msg(contains(r->body, "runtime"), "%s", r->body);
            http_resp_free(r);
        }
        if (!real_node || strcmp(real_node, "node18") != 0) {
            struct http_resp *r = http_post(d, jpack("{s:s}", "runtime", "node18"), "/v1/sandboxes");
            expect_error(r, 400, "bad_request");
            http_resp_free(r);
        }
    }
    /* Both are kept in the record, across a restart. */
    sbxd_terminate(d);
    sbxd_restart(d);
    {
        json_t *s = sbx_get_sandbox(d, first);
        ck_assert_str_eq(jstr(s, "status", NULL), "stopped");
        ck_assert_str_eq(jstr(s, "runtime", NULL), first_runtime);
        ck_assert_str_eq(jstr(s, "requestedRuntime", NULL), cases[0].ask);
        json_decref(s);
    }
    free(first_runtime);
    free(first);
    free(real_node);
    sbxd_stop(d);
}
END_TEST

/* ---- sandboxes ---------------------------------------------------------------------------- */

START_TEST(test_sbxd_api_create_response_shape)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = sbx_create_resp(
        d, jpack("{s:s,s:[i,i],s:i,s:{s:i},s:{s:s},s:{s:s,s:s},s:s}", "projectId", "prj_shape", "ports",
                 8080, 3000, "timeout", 60000, "resources", "vcpus", 1, "networkPolicy", "mode",
                 "allow-all", "env", "GREETING", "hello", "SHARED", "from-create", "runtime",
                 "python3.13"));
    json_t *s = json_object_get(r->json, "sandbox"), *routes = json_object_get(r->json, "routes");
    static const char *const absent[] = {"stoppedAt", "requestedStopAt", "abortedAt", "snapshottedAt",
                                         "duration", "sourceSnapshotId", "activeCpuDurationMs"};
    const char *st;
    char *sid;
    struct cmd_result *c;

    ck_assert_msg(strncmp(r->ctype, "application/json", 16) == 0, "Content-Type %s", r->ctype);
    check_sandbox_shape(s);
    sid = jdup(s, "id", NULL);
    st = jstr(s, "status", NULL);
    ck_assert_msg(strcmp(st, "running") == 0 || strcmp(st, "pending") == 0, "status %s", st);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "timeout")), 60000);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "vcpus")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "memory")), 2048);
    /* the runtime it really has (runtime_is_what_runs), and what was asked */
    ck_assert_str_eq(jstr(s, "requestedRuntime", NULL), "python3.13");
    {
        char *real = runtime_in_sandbox(d, sid, "python3");
        ck_assert_str_eq(jstr(s, "runtime", NULL), (real ? real : "python3.13"));
        free(real);
    }
    ck_assert_str_eq(jstr(s, "networkPolicy", "mode"), "allow-all");
    ck_assert_int_ge(json_integer_value(json_object_get(s, "createdAt")),
                     json_integer_value(json_object_get(s, "requestedAt")));
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        ck_assert_msg(!json_object_get(s, absent[i]), "a running sandbox has %s: %s", absent[i], dump(s));
    /* One route per port, in order. */
    ck_assert_msg(json_is_array(routes) && json_array_size(routes) == 2, "routes: %s", dump(routes));
    for (size_t i = 0; i < 2; i++) {
        json_t *rt = json_array_get(routes, i);
        ck_assert_msg(json_is_string(json_object_get(rt, "url")) &&
                          strncmp(jstr(rt, "url", NULL), "http", 4) == 0,
                      "route url: %s", dump(rt));
        ck_assert_msg(json_is_string(json_object_get(rt, "subdomain")) &&
                          json_string_length(json_object_get(rt, "subdomain")) > 0,
                      "route subdomain: %s", dump(rt));
        ck_assert_int_eq(json_integer_value(json_object_get(rt, "port")), i == 0 ? 8080 : 3000);
    }
    ck_assert_str_ne(jstr(json_array_get(routes, 0), "url", NULL), jstr(json_array_get(routes, 1), "url", NULL));
    http_resp_free(r);

    /* The create-time env reaches commands; a command's env wins over it. */
    c = sbx_sh(d, sid, "echo \"$GREETING-$SHARED\"");
    ck_assert_int_eq(c->exit_code, 0);
    ck_assert_str_eq(c->out, "hello-from-create\n");
    cmd_result_free(c);
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s],s:{s:s}}", "command", "sh", "args", "-c",
                              "echo \"$GREETING-$SHARED\"", "env", "SHARED", "from-cmd"));
    ck_assert_str_eq(c->out, "hello-from-cmd\n");
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_create_defaults)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r = sbx_create_resp(d, NULL);
    json_t *s = json_object_get(r->json, "sandbox");
    json_t *np = json_object_get(s, "networkPolicy");

    check_sandbox_shape(s);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "timeout")), 300000);
    /* the default (node24) names the node sandboxes really have */
    {
        char *sid = jdup(s, "id", NULL), *real = runtime_in_sandbox(d, sid, "node");
        ck_assert_str_eq(jstr(s, "runtime", NULL), (real ? real : "node24"));
        ck_assert_msg(!json_object_get(s, "requestedRuntime"), "requestedRuntime: %s", dump(s));
        free(real);
        free(sid);
    }
    ck_assert_int_eq(json_integer_value(json_object_get(s, "memory")),
                     2048 * json_integer_value(json_object_get(s, "vcpus")));
    ck_assert_msg(!np || strcmp(jstr(np, "mode", NULL), "allow-all") == 0, "default policy %s", dump(np));
    ck_assert_msg(json_is_array(json_object_get(r->json, "routes")) &&
                      json_array_size(json_object_get(r->json, "routes")) == 0,
                  "routes must be [] without ports: %s", r->body);
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_get_sandbox)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *c = sbx_create_resp(d, jpack("{s:[i],s:s}", "ports", 5000, "projectId", "prj_get"));
    json_t *cs = json_object_get(c->json, "sandbox");
    char *sid = jdup(cs, "id", NULL);
    struct http_resp *r = http_get(d, "/v1/sandboxes/%s", sid);
    json_t *s = json_object_get(r->json, "sandbox");

    expect_status(r, 200);
    check_sandbox_shape(s);
    ck_assert_str_eq(jstr(s, "id", NULL), sid);
    ck_assert_str_eq(jstr(s, "status", NULL), "running");
    ck_assert_int_eq(json_integer_value(json_object_get(s, "createdAt")),
                     json_integer_value(json_object_get(cs, "createdAt")));
    ck_assert_msg(json_equal(json_object_get(r->json, "routes"), json_object_get(c->json, "routes")),
                  "GET routes %s differ from create's %s", r->body, c->body);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "routes")), 1);
    http_resp_free(r);
    http_resp_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

static bool in_list(char **ids, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ids[i], id) == 0)
            return true;
    return false;
}

START_TEST(test_sbxd_api_list_project_and_pagination)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *a[5], *seen[16], *page1[2] = {NULL, NULL};
    size_t nseen = 0, pages = 0;
    int64_t until = -1, last_created = -1, page2_prev = -1;
    struct http_resp *r;

    for (int i = 0; i < 5; i++) {
        a[i] = sbx_create(d, jpack("{s:s}", "projectId", "prj_a"));
        if (i < 2)
            free(sbx_create(d, jpack("{s:s}", "projectId", "prj_b")));
    }
    free(sbx_create(d, NULL));

    /* Walk prj_a two at a time, `next` as `until`. */
    for (;;) {
        json_t *list, *pg, *next;
        size_t i;
        json_t *s;
        if (until < 0)
            r = http_get(d, "/v1/sandboxes?project=prj_a&limit=2");
        else
            r = http_get(d, "/v1/sandboxes?project=prj_a&limit=2&until=%lld", (long long)until);
        expect_status(r, 200);
        list = json_object_get(r->json, "sandboxes");
        pg = json_object_get(r->json, "pagination");
        ck_assert_msg(json_is_array(list), "sandboxes: %s", r->body);
        check_pagination(pg);
        ck_assert_int_eq(json_integer_value(json_object_get(pg, "count")), json_array_size(list));
        ck_assert_int_le(json_array_size(list), 2);
        json_array_foreach(list, i, s) {
            const char *id = jstr(s, "id", NULL);
            int64_t created = json_integer_value(json_object_get(s, "createdAt"));
            check_sandbox_shape(s);
            ck_assert_msg(in_list(a, 5, id), "page %zu lists %s, not of prj_a", pages, id);
            ck_assert_msg(!in_list(seen, nseen, id), "%s listed twice across pages", id);
            ck_assert_msg(last_created < 0 || created < last_created, "not newest first");
            last_created = created;
            seen[nseen++] = strdup(id);
            if (pages == 0)
                page1[i] = strdup(id);
        }
        if (pages == 0)
            ck_assert_msg(json_is_null(json_object_get(pg, "prev")), "first page has a prev: %s", r->body);
        if (pages == 1) {
            ck_assert_msg(json_is_integer(json_object_get(pg, "prev")), "second page has no prev");
            page2_prev = json_integer_value(json_object_get(pg, "prev"));
        }
        pages++;
        next = json_object_get(pg, "next");
        if (json_is_null(next)) {
            http_resp_free(r);
            break;
        }
        ck_assert_int_eq(json_integer_value(next), last_created);
        until = json_integer_value(next);
        http_resp_free(r);
        ck_assert_msg(pages < 10, "pagination does not end");
    }
    ck_assert_int_eq(pages, 3);
    ck_assert_int_eq(nseen, 5);
    /* `prev` as `since` gives the newer page back. */
    r = http_get(d, "/v1/sandboxes?project=prj_a&limit=2&since=%lld", (long long)page2_prev);
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "sandboxes")), 2);
    for (size_t i = 0; i < 2; i++)
        ck_assert_msg(in_list(page1, 2, jstr(json_array_get(json_object_get(r->json, "sandboxes"), i), "id", NULL)),
                      "since=prev does not give the first page back: %s", r->body);
    http_resp_free(r);

    r = http_get(d, "/v1/sandboxes?project=prj_b");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "sandboxes")), 2);
    ck_assert(json_is_null(jget(r->json, "pagination", "next")));
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes?project=prj_none");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "sandboxes")), 0);
    ck_assert_int_eq(json_integer_value(jget(r->json, "pagination", "count")), 0);
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "sandboxes")), 8);
    http_resp_free(r);
    for (int i = 0; i < 5; i++)
        free(a[i]);
    for (size_t i = 0; i < nseen; i++)
        free(seen[i]);
    free(page1[0]);
    free(page1[1]);
    sbxd_stop(d);
}
END_TEST

/* ---- commands ------------------------------------------------------------------------------- */

START_TEST(test_sbxd_api_run_detached_and_get)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *cid;
    /* It runs until /tmp/go appears, so "still running" is certain. */
    const char *script = "while [ ! -e /tmp/go ]; do sleep 0.05; done; exit 3";
    struct http_resp *r = http_post(d, jpack("{s:s,s:[s,s]}", "command", "sh", "args", "-c", script),
                                    "/v1/sandboxes/%s/cmd", sid);
    struct cmd_result *go;
    json_t *c;

    expect_status(r, 200);
    c = json_object_get(r->json, "command");
    ck_assert_msg(json_is_null(json_object_get(c, "exitCode")), "detached: exitCode %s", r->body);
    ck_assert_str_eq(jstr(c, "name", NULL), "sh");
    ck_assert_int_eq(json_array_size(json_object_get(c, "args")), 2);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(c, "args"), 1)), script);
    ck_assert_str_eq(jstr(c, "cwd", NULL), "/vercel/sandbox");
    ck_assert_str_eq(jstr(c, "sandboxId", NULL), sid);
    ck_assert(json_is_integer(json_object_get(c, "startedAt")));
    cid = jdup(c, "id", NULL);
    http_resp_free(r);

    r = http_get(d, "/v1/sandboxes/%s/cmd/%s", sid, cid);
    expect_status(r, 200);
    ck_assert_str_eq(jstr(r->json, "command", "id"), cid);
    ck_assert_msg(json_is_null(jget(r->json, "command", "exitCode")), "still running: %s", r->body);
    http_resp_free(r);
    go = sbx_sh(d, sid, "touch /tmp/go");
    cmd_result_free(go);
    /* The long poll answers once it exited, with the number. */
    ck_assert_int_eq(sbx_cmd_wait(d, sid, cid), 3);
    r = http_get(d, "/v1/sandboxes/%s/cmd/%s", sid, cid);
    expect_status(r, 200);
    ck_assert_int_eq(json_integer_value(jget(r->json, "command", "exitCode")), 3);
    http_resp_free(r);
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_run_wait_two_lines)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    struct cmd_result *c;
    struct http_resp *r;

    /* sbxd_run asserts the shape: Content-Type exactly application/x-ndjson,
     * exactly two lines, null then numeric exitCode, one id. */
    c = sbx_sh(d, sid, "echo out; echo err >&2; exit 7");
    ck_assert_int_eq(c->exit_code, 7);
    ck_assert_str_eq(c->out, "out\n");
    ck_assert_str_eq(c->err, "err\n");
    cmd_result_free(c);
    /* args are passed verbatim: no shell in between. */
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s,s]}", "command", "printf", "args", "%s|", "a b", "$HOME", "*"));
    ck_assert_int_eq(c->exit_code, 0);
    ck_assert_str_eq(c->out, "a b|$HOME|*|");
    cmd_result_free(c);
    /* cwd: absolute, and relative to the sandbox's cwd. */
    c = sbxd_run(d, sid, jpack("{s:s,s:s}", "command", "pwd", "cwd", "/tmp"));
    ck_assert_str_eq(c->out, "/tmp\n");
    r = http_get(d, "/v1/sandboxes/%s/cmd/%s", sid, c->id);
    ck_assert_str_eq(jstr(r->json, "command", "cwd"), "/tmp");
    http_resp_free(r);
    cmd_result_free(c);
    c = sbx_sh(d, sid, "mkdir -p sub");
    cmd_result_free(c);
    c = sbxd_run(d, sid, jpack("{s:s,s:s}", "command", "pwd", "cwd", "sub"));
    ck_assert_str_eq(c->out, "/vercel/sandbox/sub\n");
    cmd_result_free(c);
    c = sbxd_run(d, sid, jpack("{s:s}", "command", "pwd"));
    ck_assert_str_eq(c->out, "/vercel/sandbox\n");
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_run_not_found_127)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    struct cmd_result *c;

    c = sbxd_run(d, sid, jpack("{s:s}", "command", "no-such-program-sbxdit"));
    ck_assert_int_eq(c->exit_code, 127);
    ck_assert_msg(contains(c->err, "not found"), "stderr: %s", c->err);
    cmd_result_free(c);
    sbx_write_file(d, sid, "/vercel/sandbox/noexec", "#!/bin/sh\necho hi\n", 18, 0644);
    c = sbxd_run(d, sid, jpack("{s:s}", "command", "/vercel/sandbox/noexec"));
    ck_assert_int_eq(c->exit_code, 126);
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_logs_replay_after_end)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *cid;
    struct cmd_result *c;

    cid = sbx_detach_sh(d, sid, "for i in 1 2 3 4 5; do echo line$i; done; echo warn >&2; exit 4");
    ck_assert_int_eq(sbx_cmd_wait(d, sid, cid), 4);
    for (int round = 0; round < 2; round++) {
        c = sbx_logs(d, sid, cid);
        ck_assert_str_eq(c->out, "line1\nline2\nline3\nline4\nline5\n");
        ck_assert_str_eq(c->err, "warn\n");
        ck_assert(!c->error_line);
        cmd_result_free(c);
    }
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_logs_interleaved_in_order)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    static const char *const want_stream[] = {"stdout", "stderr", "stdout", "stderr", "stdout", "stderr"};
    static const char *const want_data[] = {"o1\n", "e1\n", "o2\n", "e2\n", "o3\n", "e3\n"};
    struct cmd_result *c = sbx_sh(d, sid,
                                  "echo o1; sleep 0.2; echo e1 >&2; sleep 0.2; echo o2; sleep 0.2; "
                                  "echo e2 >&2; sleep 0.2; echo o3; sleep 0.2; echo e3 >&2");
    char merged_stream[16][8], merged[16][64];
    size_t n = 0;

    /* Consecutive chunks of one stream are one run; the runs alternate. */
    for (size_t i = 0; i < c->logs->n; i++) {
        const char *st = jstr(c->logs->lines[i], "stream", NULL);
        const char *data = jstr(c->logs->lines[i], "data", NULL);
        if (n > 0 && strcmp(merged_stream[n - 1], st) == 0) {
            strncat(merged[n - 1], data, sizeof merged[0] - strlen(merged[n - 1]) - 1);
            continue;
        }
        ck_assert_int_lt(n, 16);
        snprintf(merged_stream[n], sizeof merged_stream[0], "%s", st);
        snprintf(merged[n], sizeof merged[0], "%s", data);
        n++;
    }
    ck_assert_msg(n == 6, "expected 6 alternating runs, got %zu", n);
    for (size_t i = 0; i < 6; i++) {
        ck_assert_str_eq(merged_stream[i], want_stream[i]);
        ck_assert_str_eq(merged[i], want_data[i]);
    }
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

static json_t *kill_resp(struct sbxd *d, const char *path, json_t *body, long want)
{
    struct http_resp *r = http_post(d, body, "%s", path);
    json_t *c;
    expect_status(r, want);
    c = json_object_get(r->json, "command");
    if (want == 200)
        ck_assert_msg(json_is_object(c), "kill: no command: %s", r->body);
    json_incref(c);
    http_resp_free(r);
    return c;
}

START_TEST(test_sbxd_api_kill_both_paths)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *c1, *c2, *c3, path[256];
    json_t *c;
    struct http_resp *r;

    /* 1.x path, without cmd/: SIGTERM -> 143. */
    c1 = sbx_detach(d, sid, jpack("{s:s,s:[s]}", "command", "sleep", "args", "300"));
    snprintf(path, sizeof path, "/v1/sandboxes/%s/%s/kill", sid, c1);
    c = kill_resp(d, path, jpack("{s:i}", "signal", 15), 200);
    ck_assert_str_eq(jstr(c, "id", NULL), c1);
    json_decref(c);
    ck_assert_int_eq(sbx_cmd_wait(d, sid, c1), 143);
    /* Later majors' path, with cmd/: SIGKILL -> 137. */
    c2 = sbx_detach(d, sid, jpack("{s:s,s:[s]}", "command", "sleep", "args", "300"));
    snprintf(path, sizeof path, "/v1/sandboxes/%s/cmd/%s/kill", sid, c2);
    json_decref(kill_resp(d, path, jpack("{s:i}", "signal", 9), 200));
    ck_assert_int_eq(sbx_cmd_wait(d, sid, c2), 137);
    /* No signal given: SIGTERM. */
    c3 = sbx_detach(d, sid, jpack("{s:s,s:[s]}", "command", "sleep", "args", "300"));
    snprintf(path, sizeof path, "/v1/sandboxes/%s/%s/kill", sid, c3);
    json_decref(kill_resp(d, path, json_object(), 200));
    ck_assert_int_eq(sbx_cmd_wait(d, sid, c3), 143);
    /* Killing a finished command: 200 with the finished command. */
    snprintf(path, sizeof path, "/v1/sandboxes/%s/%s/kill", sid, c1);
    c = kill_resp(d, path, jpack("{s:i}", "signal", 9), 200);
    ck_assert_int_eq(json_integer_value(json_object_get(c, "exitCode")), 143);
    json_decref(c);
    /* A command of another sandbox is not found through this one. */
    {
        char *other = sbx_create(d, NULL);
        r = http_post(d, jpack("{s:i}", "signal", 9), "/v1/sandboxes/%s/%s/kill", other, c1);
        expect_error(r, 404, "not_found");
        http_resp_free(r);
        r = http_get(d, "/v1/sandboxes/%s/cmd/%s", other, c1);
        expect_error(r, 404, "not_found");
        http_resp_free(r);
        free(other);
    }
    /* Out-of-range signals are refused. */
    r = http_post(d, jpack("{s:i}", "signal", 0), "/v1/sandboxes/%s/%s/kill", sid, c1);
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    r = http_post(d, jpack("{s:i}", "signal", 65), "/v1/sandboxes/%s/%s/kill", sid, c1);
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    free(c1);
    free(c2);
    free(c3);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_kill_stop_and_continue)
{
    /* Signals pass through: SIGSTOP (19) pauses, SIGCONT (18) resumes. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *cid;
    struct http_resp *r;
    struct cmd_result *c;

    cid = sbx_detach_sh(d, sid, "echo $$ > /tmp/pid; exec sleep 300");
    c = sbx_sh(d, sid, "while [ ! -s /tmp/pid ]; do sleep 0.05; done; cat /tmp/pid");
    cmd_result_free(c);
    r = http_post(d, jpack("{s:i}", "signal", 19), "/v1/sandboxes/%s/%s/kill", sid, cid);
    expect_status(r, 200);
    http_resp_free(r);
    c = sbx_sh(d, sid, "for i in $(seq 100); do s=$(cut -d' ' -f3 /proc/$(cat /tmp/pid)/stat); "
                       "[ \"$s\" = T ] && break; sleep 0.05; done; echo $s");
    ck_assert_str_eq(c->out, "T\n");
    cmd_result_free(c);
    r = http_get(d, "/v1/sandboxes/%s/cmd/%s", sid, cid);
    ck_assert_msg(json_is_null(jget(r->json, "command", "exitCode")), "a stopped process is not finished: %s", r->body);
    http_resp_free(r);
    r = http_post(d, jpack("{s:i}", "signal", 18), "/v1/sandboxes/%s/%s/kill", sid, cid);
    expect_status(r, 200);
    http_resp_free(r);
    c = sbx_sh(d, sid, "for i in $(seq 100); do s=$(cut -d' ' -f3 /proc/$(cat /tmp/pid)/stat); "
                       "[ \"$s\" != T ] && break; sleep 0.05; done; echo $s");
    ck_assert_str_eq(c->out, "S\n");
    cmd_result_free(c);
    r = http_post(d, jpack("{s:i}", "signal", 2), "/v1/sandboxes/%s/%s/kill", sid, cid);
    expect_status(r, 200);
    http_resp_free(r);
    ck_assert_int_eq(sbx_cmd_wait(d, sid, cid), 130);
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* ---- files -------------------------------------------------------------------------------------- */

static struct http_resp *mkdir_req(struct sbxd *d, const char *sid, const char *path, const char *cwd)
{
    json_t *b = cwd ? jpack("{s:s,s:s}", "path", path, "cwd", cwd) : jpack("{s:s}", "path", path);
    return http_post(d, b, "/v1/sandboxes/%s/fs/mkdir", sid);
}

START_TEST(test_sbxd_api_fs_mkdir)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    struct http_resp *r;
    struct cmd_result *c;

    r = mkdir_req(d, sid, "/vercel/sandbox/newdir", NULL);
    expect_status(r, 200);
    ck_assert_msg(r->len == 0 || json_is_object(r->json), "mkdir body: %s", r->body);
    http_resp_free(r);
    r = mkdir_req(d, sid, "/vercel/sandbox/newdir", NULL);
    expect_error(r, 409, "conflict");
    http_resp_free(r);
    r = mkdir_req(d, sid, "/vercel/sandbox/missing/child", NULL);
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    r = mkdir_req(d, sid, "reldir", NULL);
    expect_status(r, 200);
    http_resp_free(r);
    r = mkdir_req(d, sid, "incwd", "/tmp");
    expect_status(r, 200);
    http_resp_free(r);
    c = sbx_sh(d, sid, "test -d /vercel/sandbox/newdir && test -d /vercel/sandbox/reldir && "
                       "test -d /tmp/incwd && stat -c %%U /vercel/sandbox/newdir");
    ck_assert_int_eq(c->exit_code, 0);
    ck_assert_str_eq(c->out, "vercel-sandbox\n");
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

static void expect_out(struct sbxd *d, const char *sid, const char *script, const char *want)
{
    struct cmd_result *c = sbx_sh(d, sid, "%s", script);
    ck_assert_msg(c->exit_code == 0, "`%s` exited %d: %s", script, c->exit_code, c->err);
    ck_assert_msg(strcmp(c->out, want) == 0, "`%s` printed '%s', expected '%s'", script, c->out, want);
    cmd_result_free(c);
}

/* "ünïcödé-€.txt" */
#define UNAME "\xc3\xbc" "n" "\xc3\xaf" "c" "\xc3\xb6" "d" "\xc3\xa9" "-\xe2\x82\xac.txt"

START_TEST(test_sbxd_api_fs_write_files)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    char mid[256], lng[400], script[1200];
    unsigned char bin[300];
    struct http_resp *r;
    size_t len;
    void *t;
    char **names;

    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (unsigned char)(i * 7);
    /* 150 bytes: ustar splits it into prefix and name. */
    snprintf(mid, sizeof mid, "vercel/sandbox/%s/%s/%s/mid.txt", "d0123456789abcdefghij0123456789abcdefghij",
             "d1123456789abcdefghij0123456789abcdefghij", "d2123456789abcdefghij0123456789");
    ck_assert_int_gt(strlen(mid), 100);
    ck_assert_int_le(strlen(mid), 255);
    {
        struct tar_ent e[] = {
            {"vercel/sandbox/a.txt", "alpha-long-content\n", 19, 0644, 'f', NULL},
            {"vercel/sandbox/bin/run.sh", "#!/bin/sh\necho ran\n", 19, 0755, 'f', NULL},
            {mid, "mid\n", 4, 0600, 'f', NULL},
            {"etc/x.bin", bin, sizeof bin, 0644, 'f', NULL},
            {"vercel/sandbox/empty", NULL, 0, 0644, 'f', NULL},
        };
        t = tar_gz(e, 5, TAR_USTAR, &len);
        names = tar_gz_names(t, len);
        ck_assert_str_eq(names[2], mid);
        strv_free(names);
        r = sbx_fs_write(d, sid, t, len, "/");
        expect_status(r, 200);
        ck_assert_msg(r->len == 0 || json_is_object(r->json), "fs/write body: %s", r->body);
        http_resp_free(r);
        free(t);
    }
    /* Over 255 bytes, and non-ASCII: PAX headers. */
    snprintf(lng, sizeof lng, "vercel/sandbox/%s/%s/%s/%s/%s/long-name-file.txt",
             "p0123456789abcdefghij0123456789abcdefghij0123456789",
             "p1123456789abcdefghij0123456789abcdefghij0123456789",
             "p2123456789abcdefghij0123456789abcdefghij0123456789",
             "p3123456789abcdefghij0123456789abcdefghij0123456789",
             "p4123456789abcdefghij0123456789abcdefghij0123456789");
    ck_assert_int_gt(strlen(lng), 255);
    {
        struct tar_ent e[] = {
            {lng, "long\n", 5, 0644, 'f', NULL},
            {"vercel/sandbox/" UNAME, "utf8\n", 5, 0644, 'f', NULL},
        };
        t = tar_gz(e, 2, TAR_PAX, &len);
        names = tar_gz_names(t, len);
        ck_assert_str_eq(names[0], lng);
        strv_free(names);
        r = sbx_fs_write(d, sid, t, len, "/");
        expect_status(r, 200);
        http_resp_free(r);
        free(t);
    }
    expect_out(d, sid, "cat /vercel/sandbox/a.txt; stat -c '%a %u' /vercel/sandbox/a.txt",
               "alpha-long-content\n644 1000\n");
    expect_out(d, sid, "stat -c %a /vercel/sandbox/bin/run.sh && /vercel/sandbox/bin/run.sh", "755\nran\n");
    snprintf(script, sizeof script, "cat /%s; stat -c %%a /%s", mid, mid);
    expect_out(d, sid, script, "mid\n600\n");
    snprintf(script, sizeof script, "cat /%s", lng);
    expect_out(d, sid, script, "long\n");
    expect_out(d, sid, "cat '/vercel/sandbox/" UNAME "'", "utf8\n");
    expect_out(d, sid, "wc -c < /vercel/sandbox/empty; test -d /vercel/sandbox/bin && echo dir", "0\ndir\n");
    r = sbx_fs_read(d, sid, "/etc/x.bin", NULL);
    expect_status(r, 200);
    ck_assert_int_eq(r->len, sizeof bin);
    ck_assert(memcmp(r->body, bin, sizeof bin) == 0);
    http_resp_free(r);

    /* Overwrite: shorter content (truncated), new mode. */
    sbx_write_file(d, sid, "/vercel/sandbox/a.txt", "beta\n", 5, 0640);
    expect_out(d, sid, "cat /vercel/sandbox/a.txt; stat -c %a /vercel/sandbox/a.txt", "beta\n640\n");

    /* x-cwd other than /, and absent (the sandbox cwd). */
    {
        struct tar_ent e = {"c.txt", "see\n", 4, 0644, 'f', NULL};
        t = tar_gz(&e, 1, TAR_PAX, &len);
        r = sbx_fs_write(d, sid, t, len, "/tmp");
        expect_status(r, 200);
        http_resp_free(r);
        r = sbx_fs_write(d, sid, t, len, NULL);
        expect_status(r, 200);
        http_resp_free(r);
        free(t);
    }
    expect_out(d, sid, "cat /tmp/c.txt /vercel/sandbox/c.txt", "see\nsee\n");
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_fs_write_hostile_entries)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), abs_name[128], abs_host[128];
    struct {
        struct tar_ent bad;
        const char *xcwd;
    } cases[] = {
        {{"../x-escape", "x", 1, 0644, 'f', NULL}, "/vercel/sandbox"},
        {{"vercel/sandbox/../../x-escape2", "x", 1, 0644, 'f', NULL}, "/"},
        {{abs_name, "x", 1, 0644, 'f', NULL}, "/vercel/sandbox"},
        {{"vercel/sandbox/link", NULL, 0, 0777, 'l', "/etc"}, "/"},
        {{"vercel/sandbox/rel-link", NULL, 0, 0777, 'l', "../../etc/passwd"}, "/"},
        {{"vercel/sandbox/hard", NULL, 0, 0644, 'h', "etc/passwd"}, "/"},
    };
    struct http_resp *r;
    struct cmd_result *c;

    snprintf(abs_name, sizeof abs_name, "/x-abs-%s", rand_hex(12));
    snprintf(abs_host, sizeof abs_host, "%s", abs_name);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char good[64];
        size_t len;
        void *t;
        char **names;
        snprintf(good, sizeof good, "vercel/sandbox/good-%zu.txt", i);
        {
            struct tar_ent e[2] = {{good, "ok\n", 3, 0644, 'f', NULL}, cases[i].bad};
            t = tar_gz(e, 2, TAR_PAX, &len);
        }
        /* The archive really holds the hostile name. */
        names = tar_gz_names(t, len);
        ck_assert_msg(names[1] && strcmp(names[1], cases[i].bad.name) == 0, "tar writer changed %s to %s",
                      cases[i].bad.name, names[1] ? names[1] : "(none)");
        strv_free(names);
        r = sbx_fs_write(d, sid, t, len, cases[i].xcwd);
        ck_assert_msg(r->status == 400, "hostile entry %s (%c): expected 400, got %ld: %s", cases[i].bad.name,
                      cases[i].bad.type, r->status, r->body);
        expect_error(r, 400, "bad_request");
        http_resp_free(r);
        free(t);
    }
    /* A refused archive writes nothing, not even its good entries. */
    c = sbx_sh(d, sid, "ls /vercel/sandbox; for f in /vercel/x-escape /x-escape /x-escape2 %s "
                       "/vercel/sandbox/link /vercel/sandbox/rel-link /vercel/sandbox/hard; do "
                       "test -e $f -o -L $f && echo WRITTEN $f; done; true", abs_name);
    ck_assert_msg(!contains(c->out, "good-"), "a refused archive wrote files: %s", c->out);
    ck_assert_msg(!contains(c->out, "WRITTEN"), "hostile entry written: %s", c->out);
    cmd_result_free(c);
    ck_assert_msg(access(abs_host, F_OK) != 0, "%s was written on the host", abs_host);
    /* Not a tar at all. */
    r = sbx_fs_write(d, sid, "this is not gzip", 16, "/");
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_fs_read)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    unsigned char bin[1024];
    struct http_resp *r;
    struct cmd_result *c;

    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (unsigned char)(i & 255);
    sbx_write_file(d, sid, "/vercel/sandbox/bin.dat", bin, sizeof bin, 0644);
    r = sbx_fs_read(d, sid, "/vercel/sandbox/bin.dat", NULL);
    expect_status(r, 200);
    ck_assert_msg(strcmp(r->ctype, "application/octet-stream") == 0, "fs/read Content-Type %s", r->ctype);
    ck_assert_int_eq(r->len, sizeof bin);
    ck_assert_msg(memcmp(r->body, bin, sizeof bin) == 0, "binary bytes did not round-trip");
    http_resp_free(r);
    /* Relative: against the sandbox cwd, or the given cwd. */
    r = sbx_fs_read(d, sid, "bin.dat", NULL);
    expect_status(r, 200);
    ck_assert_int_eq(r->len, sizeof bin);
    http_resp_free(r);
    c = sbx_sh(d, sid, ": > /vercel/sandbox/empty; echo tmpfile > /tmp/t.txt; echo secret > /vercel/sandbox/locked; "
                       "chmod 000 /vercel/sandbox/locked; "
                       "python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 12288)' > /vercel/sandbox/big");
    ck_assert_int_eq(c->exit_code, 0);
    cmd_result_free(c);
    r = sbx_fs_read(d, sid, "t.txt", "/tmp");
    expect_status(r, 200);
    ck_assert_str_eq(r->body, "tmpfile\n");
    http_resp_free(r);
    /* Empty: 200 with an empty body, not 204. */
    r = sbx_fs_read(d, sid, "/vercel/sandbox/empty", NULL);
    expect_status(r, 200);
    ck_assert_int_eq(r->len, 0);
    http_resp_free(r);
    /* 3 MiB comes back whole. */
    r = sbx_fs_read(d, sid, "/vercel/sandbox/big", NULL);
    expect_status(r, 200);
    ck_assert_int_eq(r->len, 256 * 12288);
    for (size_t i = 0; i < r->len; i++)
        if ((unsigned char)r->body[i] != (unsigned char)(i & 255))
            ck_abort_msg("big file differs at byte %zu", i);
    http_resp_free(r);
    /* Everything else is 404: missing, missing parent, a directory, unreadable. */
    r = sbx_fs_read(d, sid, "/vercel/sandbox/missing.txt", NULL);
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    r = sbx_fs_read(d, sid, "/vercel/sandbox/no/such/dir/file", NULL);
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    r = sbx_fs_read(d, sid, "/vercel/sandbox", NULL);
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    r = sbx_fs_read(d, sid, "/vercel/sandbox/locked", NULL);
    expect_error(r, 404, "not_found");
    http_resp_free(r);
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* ---- stop, timeout, network policy -------------------------------------------------------------- */

START_TEST(test_sbxd_api_stop)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *cid;
    struct http_resp *r;
    json_t *s;
    const char *st;

    cid = sbx_detach(d, sid, jpack("{s:s,s:[s]}", "command", "sleep", "args", "300"));
    r = http_post(d, NULL, "/v1/sandboxes/%s/stop", sid);
    expect_status(r, 200);
    s = json_object_get(r->json, "sandbox");
    check_sandbox_shape(s);
    st = jstr(s, "status", NULL);
    ck_assert_msg(strcmp(st, "stopped") == 0 || strcmp(st, "stopping") == 0, "after stop: %s", st);
    ck_assert(json_is_integer(json_object_get(s, "requestedStopAt")));
    http_resp_free(r);
    ck_assert_msg(sbx_wait_status(d, sid, "stopped", 15000), "not stopped: %s", sbx_status_str(d, sid));
    s = sbx_get_sandbox(d, sid);
    check_sandbox_shape(s);
    ck_assert(json_is_integer(json_object_get(s, "stoppedAt")));
    ck_assert(json_is_integer(json_object_get(s, "duration")));
    json_decref(s);
    /* Its command ended as if killed. */
    ck_assert_int_eq(sbx_cmd_wait(d, sid, cid), 137);
    /* Afterwards: commands 410, file operations 4xx, stop again 200. */
    r = http_post(d, jpack("{s:s}", "command", "true"), "/v1/sandboxes/%s/cmd", sid);
    expect_error(r, 410, "gone");
    http_resp_free(r);
    r = http_post(d, jpack("{s:s,s:b}", "command", "true", "wait", 1), "/v1/sandboxes/%s/cmd", sid);
    expect_error(r, 410, "gone");
    http_resp_free(r);
    r = http_post(d, jpack("{s:s}", "path", "/vercel/sandbox/x"), "/v1/sandboxes/%s/fs/mkdir", sid);
    ck_assert_msg(r->status >= 400 && r->status < 500, "mkdir on stopped: %ld", r->status);
    expect_error(r, r->status, NULL);
    http_resp_free(r);
    r = sbx_fs_read(d, sid, "/etc/hostname", NULL);
    ck_assert_msg(r->status >= 400 && r->status < 500, "read on stopped: %ld", r->status);
    http_resp_free(r);
    r = http_post(d, jpack("{s:i}", "duration", 1000), "/v1/sandboxes/%s/extend-timeout", sid);
    ck_assert_msg(r->status >= 400 && r->status < 500, "extend on stopped: %ld", r->status);
    http_resp_free(r);
    r = http_post(d, NULL, "/v1/sandboxes/%s/snapshot", sid);
    ck_assert_msg(r->status >= 400 && r->status < 500, "snapshot on stopped: %ld", r->status);
    http_resp_free(r);
    r = http_post(d, NULL, "/v1/sandboxes/%s/stop", sid);
    expect_status(r, 200);
    ck_assert_str_eq(jstr(r->json, "sandbox", "status"), "stopped");
    http_resp_free(r);
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_extend_timeout)
{
    const char *args[] = {"--max-timeout", "600000", NULL};
    struct sbxd *d = sbxd_start(args, NULL);
    char *sid = sbx_create(d, jpack("{s:i}", "timeout", 60000));
    struct http_resp *r;
    json_t *s;

    r = http_post(d, jpack("{s:i}", "duration", 30000), "/v1/sandboxes/%s/extend-timeout", sid);
    expect_status(r, 200);
    check_sandbox_shape(json_object_get(r->json, "sandbox"));
    ck_assert_int_eq(json_integer_value(jget(r->json, "sandbox", "timeout")), 90000);
    http_resp_free(r);
    s = sbx_get_sandbox(d, sid);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "timeout")), 90000);
    json_decref(s);
    /* Past the maximum: 400, nothing changes. */
    r = http_post(d, jpack("{s:i}", "duration", 600000), "/v1/sandboxes/%s/extend-timeout", sid);
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    r = http_post(d, jpack("{s:i}", "duration", 0), "/v1/sandboxes/%s/extend-timeout", sid);
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    r = http_post(d, jpack("{s:i}", "duration", -5000), "/v1/sandboxes/%s/extend-timeout", sid);
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    s = sbx_get_sandbox(d, sid);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "timeout")), 90000);
    json_decref(s);
    /* Up to exactly the maximum is fine. */
    r = http_post(d, jpack("{s:i}", "duration", 510000), "/v1/sandboxes/%s/extend-timeout", sid);
    expect_status(r, 200);
    ck_assert_int_eq(json_integer_value(jget(r->json, "sandbox", "timeout")), 600000);
    http_resp_free(r);
    ck_assert_str_eq(sbx_status_str(d, sid), "running");
    free(sid);
    sbxd_stop(d);
}
END_TEST

static struct http_resp *set_policy(struct sbxd *d, const char *sid, json_t *p)
{
    return http_post(d, p, "/v1/sandboxes/%s/network-policy", sid);
}

START_TEST(test_sbxd_api_network_policy_update_echo)
{
    /* Between policies of the same network kind (isolated: deny-all, custom). */
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, jpack("{s:{s:s}}", "networkPolicy", "mode", "deny-all"));
    json_t *custom = jpack("{s:s,s:[s,s],s:[s],s:[s]}", "mode", "custom", "allowedDomains", "example.com",
                           "*.pkgs.example.org", "allowedCIDRs", "10.0.0.0/8", "deniedCIDRs", "10.1.0.0/16");
    struct http_resp *r;
    struct cmd_result *c;
    json_t *s;

    r = set_policy(d, sid, json_incref(custom));
    expect_status(r, 200);
    check_sandbox_shape(json_object_get(r->json, "sandbox"));
    ck_assert_msg(json_equal(jget(r->json, "sandbox", "networkPolicy"), custom),
                  "network-policy response %s does not reflect %s", r->body, dump(custom));
    http_resp_free(r);
    s = sbx_get_sandbox(d, sid);
    ck_assert_msg(json_equal(json_object_get(s, "networkPolicy"), custom), "GET shows %s", dump(s));
    json_decref(s);
    c = sbx_sh(d, sid, "echo still-works");
    ck_assert_str_eq(c->out, "still-works\n");
    cmd_result_free(c);
    r = set_policy(d, sid, jpack("{s:s}", "mode", "deny-all"));
    expect_status(r, 200);
    ck_assert_str_eq(jstr(json_object_get(r->json, "sandbox"), "networkPolicy", "mode"), "deny-all");
    http_resp_free(r);
    c = sbx_sh(d, sid, "echo still-works");
    ck_assert_str_eq(c->out, "still-works\n");
    cmd_result_free(c);
    json_decref(custom);
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* Switch a running sandbox's policy and check, each time, whether a command
 * reaches the test network (the outside) by direct TCP, and that it never
 * reaches a TCP server on the host's 127.0.0.1. */
static void policy_round(struct sbxd *d, const char *sid, struct testnet *t, struct host_server *hs,
                         const char *mode, bool outside)
{
    char port[16];
    struct http_resp *r = set_policy(d, sid, jpack("{s:s}", "mode", mode));
    struct cmd_result *c;
    ck_assert_msg(r->status == 200, "network-policy %s on a running sandbox: HTTP %ld: %s", mode, r->status,
                  r->body);
    ck_assert_str_eq(jstr(json_object_get(r->json, "sandbox"), "networkPolicy", "mode"), mode);
    http_resp_free(r);
    snprintf(port, sizeof port, "%d", t->http_port);
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s,s]}", "command", "python3", "args", "-c", PY_CONNECT, t->addr,
                              port));
    ck_assert_msg(contains(c->out, outside ? "CONNECTED" : "REFUSED"), "under %s the outside %s:%d should be %s: %s%s",
                  mode, t->addr, t->http_port, outside ? "reachable" : "unreachable", c->out, c->err);
    cmd_result_free(c);
    snprintf(port, sizeof port, "%d", hs->port);
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s,s]}", "command", "python3", "args", "-c", PY_CONNECT, "127.0.0.1",
                              port));
    ck_assert_msg(contains(c->out, "REFUSED"), "under %s the host's 127.0.0.1:%d was reached: %s%s", mode,
                  hs->port, c->out, c->err);
    cmd_result_free(c);
}

START_TEST(test_sbxd_api_network_policy_allow_deny_allow)
{
    struct testnet *t = testnet_start(0);
    struct sbxd *d = sbxd_start(testnet_sbxd_args(t), NULL);
    struct host_server *hs = host_server_start("policy");
    char *sid = sbx_create(d, NULL);
    struct cmd_result *c;

    sbx_write_file(d, sid, "/vercel/sandbox/before.txt", "kept\n", 5, 0644);
    policy_round(d, sid, t, hs, "allow-all", true);
    policy_round(d, sid, t, hs, "deny-all", false);
    /* Same sandbox: its files are still there. */
    c = sbx_sh(d, sid, "cat /vercel/sandbox/before.txt");
    ck_assert_str_eq(c->out, "kept\n");
    cmd_result_free(c);
    policy_round(d, sid, t, hs, "allow-all", true);
    ck_assert_int_eq(hs->hits, 0);
    host_server_stop(hs);
    free(sid);
    sbxd_stop(d);
    testnet_stop(t);
}
END_TEST

START_TEST(test_sbxd_api_network_policy_deny_allow_deny)
{
    struct testnet *t = testnet_start(0);
    struct sbxd *d = sbxd_start(testnet_sbxd_args(t), NULL);
    struct host_server *hs = host_server_start("policy");
    char *sid = sbx_create(d, jpack("{s:{s:s}}", "networkPolicy", "mode", "deny-all"));

    policy_round(d, sid, t, hs, "deny-all", false);
    policy_round(d, sid, t, hs, "allow-all", true);
    policy_round(d, sid, t, hs, "deny-all", false);
    ck_assert_int_eq(hs->hits, 0);
    host_server_stop(hs);
    free(sid);
    sbxd_stop(d);
    testnet_stop(t);
}
END_TEST

/* ---- snapshots ------------------------------------------------------------------------------------ */

static json_t *snapshot_of(struct sbxd *d, const char *sid, json_t *body)
{
    struct http_resp *r = http_post(d, body, "/v1/sandboxes/%s/snapshot", sid);
    json_t *sn;
    expect_status(r, 200);
    sn = json_object_get(r->json, "snapshot");
    check_snapshot_shape(sn);
    check_sandbox_shape(json_object_get(r->json, "sandbox"));
    json_incref(r->json);
    sn = r->json;
    http_resp_free(r);
    return sn;
}

START_TEST(test_sbxd_api_snapshot_create)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, jpack("{s:s}", "projectId", "prj_snap")), *cid, *sid2, *sid3;
    json_t *out, *sn, *s;
    struct http_resp *r;

    sbx_write_file(d, sid, "/vercel/sandbox/keep.txt", "kept\n", 5, 0640);
    cid = sbx_detach(d, sid, jpack("{s:s,s:[s]}", "command", "sleep", "args", "300"));
    out = snapshot_of(d, sid, NULL);
    sn = json_object_get(out, "snapshot");
    s = json_object_get(out, "sandbox");
    ck_assert_str_eq(jstr(sn, "status", NULL), "created");
    ck_assert_str_eq(jstr(sn, "sourceSandboxId", NULL), sid);
    ck_assert_int_gt(json_integer_value(json_object_get(sn, "sizeBytes")), 0);
    /* Default expiration: the server's (7 days). */
    ck_assert_int_eq(json_integer_value(json_object_get(sn, "expiresAt")) -
                         json_integer_value(json_object_get(sn, "createdAt")),
                     7LL * 24 * 3600 * 1000);
    ck_assert_str_eq(jstr(s, "id", NULL), sid);
    ck_assert_str_eq(jstr(s, "status", NULL), "stopped");
    ck_assert(json_is_integer(json_object_get(s, "snapshottedAt")));
    json_decref(out);
    ck_assert_str_eq(sbx_status_str(d, sid), "stopped");
    ck_assert_int_eq(sbx_cmd_wait(d, sid, cid), 137);
    r = http_post(d, jpack("{s:s}", "command", "true"), "/v1/sandboxes/%s/cmd", sid);
    expect_error(r, 410, "gone");
    http_resp_free(r);
    r = http_post(d, NULL, "/v1/sandboxes/%s/snapshot", sid);
    ck_assert_msg(r->status == 410 || r->status == 409, "snapshot of a stopped sandbox: %ld", r->status);
    expect_error(r, r->status, NULL);
    http_resp_free(r);

    /* expiration 0: never expires (no expiresAt); N: now + N. */
    sid2 = sbx_create(d, NULL);
    out = snapshot_of(d, sid2, jpack("{s:i}", "expiration", 0));
    ck_assert_msg(!jget(out, "snapshot", "expiresAt"), "expiration 0 gave %s", dump(out));
    json_decref(out);
    sid3 = sbx_create(d, NULL);
    out = snapshot_of(d, sid3, jpack("{s:i}", "expiration", 60000));
    ck_assert_int_eq(json_integer_value(jget(out, "snapshot", "expiresAt")) -
                         json_integer_value(jget(out, "snapshot", "createdAt")),
                     60000);
    json_decref(out);
    free(cid);
    free(sid);
    free(sid2);
    free(sid3);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_snapshot_get_list_delete)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *s1 = sbx_create(d, jpack("{s:s}", "projectId", "prj_s1"));
    char *s2 = sbx_create(d, jpack("{s:s}", "projectId", "prj_s1"));
    char *s3 = sbx_create(d, jpack("{s:s}", "projectId", "prj_s2"));
    json_t *o1 = snapshot_of(d, s1, NULL), *o2 = snapshot_of(d, s2, NULL), *o3 = snapshot_of(d, s3, NULL);
    char *n1 = jdup(o1, "snapshot", "id"), *n2 = jdup(o2, "snapshot", "id"), *n3 = jdup(o3, "snapshot", "id");
    struct http_resp *r;
    json_t *list;
    int64_t until;

    r = http_get(d, "/v1/sandboxes/snapshots/%s", n1);
    expect_status(r, 200);
    check_snapshot_shape(json_object_get(r->json, "snapshot"));
    ck_assert_msg(json_equal(json_object_get(r->json, "snapshot"), json_object_get(o1, "snapshot")),
                  "GET snapshot %s differs from create's %s", r->body, dump(o1));
    http_resp_free(r);

    r = http_get(d, "/v1/sandboxes/snapshots?project=prj_s1");
    expect_status(r, 200);
    list = json_object_get(r->json, "snapshots");
    check_pagination(json_object_get(r->json, "pagination"));
    ck_assert_int_eq(json_array_size(list), 2);
    ck_assert_str_eq(jstr(json_array_get(list, 0), "id", NULL), n2); /* newest first */
    ck_assert_str_eq(jstr(json_array_get(list, 1), "id", NULL), n1);
    ck_assert(json_is_null(jget(r->json, "pagination", "next")));
    http_resp_free(r);
    /* Pagination. */
    r = http_get(d, "/v1/sandboxes/snapshots?project=prj_s1&limit=1");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "snapshots")), 1);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r->json, "snapshots"), 0), "id", NULL), n2);
    ck_assert(json_is_integer(jget(r->json, "pagination", "next")));
    until = json_integer_value(jget(r->json, "pagination", "next"));
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes/snapshots?project=prj_s1&limit=1&until=%lld", (long long)until);
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "snapshots")), 1);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r->json, "snapshots"), 0), "id", NULL), n1);
    ck_assert(json_is_null(jget(r->json, "pagination", "next")));
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes/snapshots?project=prj_s2");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "snapshots")), 1);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r->json, "snapshots"), 0), "id", NULL), n3);
    http_resp_free(r);

    /* Delete: status "deleted"; the record stays readable; lists skip it. */
    r = http_delete(d, "/v1/sandboxes/snapshots/%s", n1);
    expect_status(r, 200);
    check_snapshot_shape(json_object_get(r->json, "snapshot"));
    ck_assert_str_eq(jstr(r->json, "snapshot", "status"), "deleted");
    ck_assert_str_eq(jstr(r->json, "snapshot", "id"), n1);
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes/snapshots/%s", n1);
    ck_assert_msg(r->status == 200 || r->status == 404, "GET deleted snapshot: %ld", r->status);
    if (r->status == 200)
        ck_assert_str_eq(jstr(r->json, "snapshot", "status"), "deleted");
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes/snapshots?project=prj_s1");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "snapshots")), 1);
    ck_assert_str_eq(jstr(json_array_get(json_object_get(r->json, "snapshots"), 0), "id", NULL), n2);
    http_resp_free(r);
    json_decref(o1);
    json_decref(o2);
    json_decref(o3);
    free(n1);
    free(n2);
    free(n3);
    free(s1);
    free(s2);
    free(s3);
    sbxd_stop(d);
}
END_TEST

static int64_t now_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

START_TEST(test_sbxd_api_snapshot_expires)
{
    /* A snapshot past its expiresAt is no longer "created" and makes no sandbox. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *src = sbx_create(d, NULL), *snap;
    json_t *o = snapshot_of(d, src, jpack("{s:i}", "expiration", 1000));
    int64_t expires = json_integer_value(jget(o, "snapshot", "expiresAt"));
    struct http_resp *r;

    snap = jdup(o, "snapshot", "id");
    json_decref(o);
    /* No endpoint waits for an expiry: wait for the wall clock to pass it. */
    while (now_wall() <= expires + 200)
        usleep(50000);
    /* doc/sbxd.md: an expired snapshot's record says "deleted", creating from
     * it gives 410, lists leave it out. */
    r = http_get(d, "/v1/sandboxes/snapshots/%s", snap);
    expect_status(r, 200);
    ck_assert_msg(strcmp(jstr(r->json, "snapshot", "status"), "deleted") == 0,
                  "snapshot %lld ms past its expiresAt: %s", (long long)(now_wall() - expires), r->body);
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes/snapshots");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "snapshots")), 0);
    http_resp_free(r);
    r = http_post(d, jpack("{s:{s:s,s:s}}", "source", "type", "snapshot", "snapshotId", snap), "/v1/sandboxes");
    expect_error(r, 410, "gone");
    http_resp_free(r);
    free(snap);
    free(src);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_snapshot_restore)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *src = sbx_create(d, jpack("{s:s}", "runtime", "python3.13")), *snap, *dst, *dst2;
    struct cmd_result *c;
    struct http_resp *r;
    json_t *o, *s;

    sbx_write_file(d, src, "/vercel/sandbox/app/main.sh", "#!/bin/sh\necho restored\n", 24, 0750);
    c = sbx_sh(d, src, "cd /vercel/sandbox && ln -s app/main.sh link && echo home > ~/.rc && mkdir -p empty/dir");
    ck_assert_int_eq(c->exit_code, 0);
    cmd_result_free(c);
    o = snapshot_of(d, src, NULL);
    snap = jdup(o, "snapshot", "id");
    json_decref(o);

    r = sbx_create_resp(d, jpack("{s:{s:s,s:s}}", "source", "type", "snapshot", "snapshotId", snap));
    s = json_object_get(r->json, "sandbox");
    check_sandbox_shape(s);
    ck_assert_str_eq(jstr(s, "sourceSnapshotId", NULL), snap);
    /* the source's runtime: the python3 it really had */
    {
        json_t *from = sbx_get_sandbox(d, src);
        ck_assert_str_eq(jstr(s, "runtime", NULL), jstr(from, "runtime", NULL));
        ck_assert(strncmp(jstr(s, "runtime", NULL), "python3.", 8) == 0);
        json_decref(from);
    }
    dst = jdup(s, "id", NULL);
    http_resp_free(r);
    expect_out(d, dst, "/vercel/sandbox/app/main.sh; stat -c %a /vercel/sandbox/app/main.sh; "
                       "readlink /vercel/sandbox/link; cat ~/.rc; test -d /vercel/sandbox/empty/dir && echo d",
               "restored\n750\napp/main.sh\nhome\nd\n");
    /* The new sandbox is its own: writable, and the snapshot can be used again. */
    expect_out(d, dst, "echo new > /vercel/sandbox/new.txt && cat /vercel/sandbox/new.txt", "new\n");
    dst2 = sbx_create(d, jpack("{s:{s:s,s:s}}", "source", "type", "snapshot", "snapshotId", snap));
    expect_out(d, dst2, "test -e /vercel/sandbox/new.txt || echo absent; cat /vercel/sandbox/link", "absent\n#!/bin/sh\necho restored\n");

    free(snap);
    free(src);
    free(dst);
    free(dst2);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_snapshot_source_deleted_410)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *src = sbx_create(d, NULL), *snap;
    json_t *o = snapshot_of(d, src, NULL);
    struct http_resp *r;

    snap = jdup(o, "snapshot", "id");
    json_decref(o);
    r = http_delete(d, "/v1/sandboxes/snapshots/%s", snap);
    expect_status(r, 200);
    http_resp_free(r);
    r = http_post(d, jpack("{s:{s:s,s:s}}", "source", "type", "snapshot", "snapshotId", snap), "/v1/sandboxes");
    expect_error(r, 410, "gone");
    ck_assert_msg(contains(r->body, snap), "the 410 message does not name the snapshot: %s", r->body);
    http_resp_free(r);
    free(snap);
    free(src);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_snapshot_source_unknown_404)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct http_resp *r;

    for (int i = 0; i < 3; i++) {
        r = http_post(d, jpack("{s:{s:s,s:s}}", "source", "type", "snapshot", "snapshotId", "snap_doesnotexist"),
                      "/v1/sandboxes");
        expect_error(r, 404, "not_found");
        ck_assert_msg(contains(r->body, "snap_doesnotexist"), "the 404 message does not name the snapshot: %s",
                      r->body);
        http_resp_free(r);
    }
    sbxd_stop(d);
}
END_TEST

/* ---- routes and sources ----------------------------------------------------------------------------- */

static void check_route(struct sbxd *d, json_t *net_policy, int port)
{
    struct http_resp *c = sbx_create_resp(d, net_policy ? jpack("{s:[i],s:o}", "ports", port, "networkPolicy", net_policy)
                                                        : jpack("{s:[i]}", "ports", port));
    json_t *route = json_array_get(json_object_get(c->json, "routes"), 0);
    char *sid = jdup(c->json, "sandbox", "id"), *url, *cid, body[64], portstr[16];
    int64_t deadline;
    struct http_resp *r = NULL;

    ck_assert_int_eq(json_integer_value(json_object_get(route, "port")), port);
    url = malloc(strlen(jstr(route, "url", NULL)) + 32);
    sprintf(url, "%s/hello.txt", jstr(route, "url", NULL));
    http_resp_free(c);
    snprintf(body, sizeof body, "route-%s\n", rand_hex(16));
    sbx_write_file(d, sid, "/vercel/sandbox/hello.txt", body, strlen(body), 0644);
    snprintf(portstr, sizeof portstr, "%d", port);
    cid = sbx_detach(d, sid, jpack("{s:s,s:[s,s,s,s,s]}", "command", "python3", "args", "-m", "http.server",
                                   portstr, "--bind", "127.0.0.1"));
    /* No endpoint says when the server listens: try until it answers. */
    deadline = mono_ms() + 20000;
    for (;;) {
        http_resp_free(r);
        r = http_get_url(url, 5000);
        if (r->status == 200 || mono_ms() > deadline)
            break;
        usleep(100000);
    }
    ck_assert_msg(r->status == 200, "route %s never answered: %ld %s", url, r->status, r->body);
    ck_assert_str_eq(r->body, body);
    http_resp_free(r);
    /* Stopped: the route is gone. */
    r = http_post(d, NULL, "/v1/sandboxes/%s/stop", sid);
    expect_status(r, 200);
    http_resp_free(r);
    r = http_get_url(url, 5000);
    ck_assert_msg(r->status != 200, "the route still answers after stop");
    http_resp_free(r);
    free(cid);
    free(url);
    free(sid);
}

START_TEST(test_sbxd_api_routes_reach_sandbox_port)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    /* allow-all shares the host network: use a free port there. */
    check_route(d, NULL, free_port());
    /* An isolated sandbox has its own: 8080 is free in it. */
    check_route(d, jpack("{s:s}", "mode", "deny-all"), 8080);
    sbxd_stop(d);
}
END_TEST

/* A repository with a commit on main and one on branch "feature". */
static void make_repo(const char *repo)
{
    ck_assert_int_eq(host_sh("set -e; git init -q -b main '%s'; cd '%s'; printf 'hello from git\\n' > README.md; "
                             "mkdir sub; printf 'x\\n' > sub/file.txt; git add -A; "
                             "git -c user.name=t -c user.email=t@example.com commit -qm init; "
                             "git checkout -q -b feature; printf 'feature\\n' > feature.txt; git add -A; "
                             "git -c user.name=t -c user.email=t@example.com commit -qm feature; "
                             "git checkout -q main",
                             repo, repo),
                     0);
}

START_TEST(test_sbxd_api_git_source)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char dir[] = "/var/tmp/sbxd-it-git-XXXXXX", repo[400], url[420], *sid;
    struct http_resp *r;

    ck_assert(mkdtemp(dir) != NULL);
    sbxd_cleanup_path(d, dir);
    snprintf(repo, sizeof repo, "%s/repo", dir);
    snprintf(url, sizeof url, "file://%s", repo);
    make_repo(repo);
    sid = sbx_create(d, jpack("{s:{s:s,s:s}}", "source", "type", "git", "url", url));
    expect_out(d, sid, "cd /vercel/sandbox && cat README.md sub/file.txt && test -d .git && echo git && "
                       "test ! -e feature.txt && echo main",
               "hello from git\nx\ngit\nmain\n");
    free(sid);
    /* A branch as revision, shallow. */
    sid = sbx_create(d, jpack("{s:{s:s,s:s,s:s,s:i}}", "source", "type", "git", "url", url, "revision",
                              "feature", "depth", 1));
    expect_out(d, sid, "cat /vercel/sandbox/feature.txt", "feature\n");
    free(sid);
    /* A repository that is not there: 400, and no sandbox is left behind. */
    r = http_post(d, jpack("{s:s,s:{s:s,s:s}}", "projectId", "prj_git_bad", "source", "type", "git", "url",
                           "file:///nonexistent/sbxd-it-repo"),
                  "/v1/sandboxes");
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes?project=prj_git_bad");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "sandboxes")), 0);
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_api_git_source_repo_under_tmp)
{
    /* The natural place for a throwaway repository: mkdtemp under /tmp. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    char repo[400], url[420], *sid;

    snprintf(repo, sizeof repo, "%s/repo", d->dir); /* /tmp/sbxd-it-XXXXXX/repo */
    snprintf(url, sizeof url, "file://%s", repo);
    make_repo(repo);
    sid = sbx_create(d, jpack("{s:{s:s,s:s}}", "source", "type", "git", "url", url));
    expect_out(d, sid, "cat /vercel/sandbox/README.md", "hello from git\n");
    free(sid);
    sbxd_stop(d);
}
END_TEST

static void write_host_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert(fwrite(data, 1, len, f) == len);
    fclose(f);
}

START_TEST(test_sbxd_api_tarball_source)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char path[400], url[420], target[400], probe[450], *sid;
    struct tar_ent e[] = {
        {"README.txt", "from tarball\n", 13, 0644, 'f', NULL},
        {"dir/run.sh", "#!/bin/sh\necho tar-ran\n", 23, 0755, 'f', NULL},
    };
    struct http_resp *r;
    size_t len;
    void *t = tar_gz(e, 2, TAR_PAX, &len);

    snprintf(path, sizeof path, "%s/src.tar.gz", d->dir);
    write_host_file(path, t, len);
    free(t);
    snprintf(url, sizeof url, "file://%s", path);
    sid = sbx_create(d, jpack("{s:{s:s,s:s}}", "source", "type", "tarball", "url", url));
    expect_out(d, sid, "cat /vercel/sandbox/README.txt; /vercel/sandbox/dir/run.sh; stat -c %a /vercel/sandbox/dir/run.sh",
               "from tarball\ntar-ran\n755\n");
    free(sid);

    /* Missing: 400. */
    r = http_post(d, jpack("{s:{s:s,s:s}}", "source", "type", "tarball", "url", "file:///nonexistent/sbxd-it.tgz"),
                  "/v1/sandboxes");
    expect_error(r, 400, "bad_request");
    http_resp_free(r);

    /* Hostile: a symlink to a host directory, then a file through it; and a
     * name that climbs out. Neither may touch the host. */
    snprintf(target, sizeof target, "%s/host-target", d->dir);
    ck_assert(mkdir(target, 0755) == 0);
    snprintf(probe, sizeof probe, "%s/pwned.txt", target);
    {
        struct tar_ent h[] = {
            {"esc", NULL, 0, 0777, 'l', target},
            {"esc/pwned.txt", "pwned\n", 6, 0644, 'f', NULL},
        };
        t = tar_gz(h, 2, TAR_PAX, &len);
        snprintf(path, sizeof path, "%s/hostile1.tar.gz", d->dir);
        write_host_file(path, t, len);
        free(t);
        snprintf(url, sizeof url, "file://%s", path);
        r = http_post(d, jpack("{s:{s:s,s:s}}", "source", "type", "tarball", "url", url), "/v1/sandboxes");
        ck_assert_msg(access(probe, F_OK) != 0, "a tarball source wrote through a symlink onto the host: %s", probe);
        /* Refusing is fine; so is replacing the link by a directory (what
         * libarchive's secure extraction does), as long as the file stays in
         * the sandbox. */
        ck_assert_msg(r->status == 400 || r->status == 200, "hostile tarball: %ld %s", r->status, r->body);
        if (r->status == 400) {
            expect_error(r, 400, "bad_request");
        } else {
            sid = strdup(jstr(r->json, "sandbox", "id"));
            expect_out(d, sid, "test -L /vercel/sandbox/esc || cat /vercel/sandbox/esc/pwned.txt", "pwned\n");
            free(sid);
        }
        http_resp_free(r);
    }
    {
        struct tar_ent h[] = {{"../../../../escaped-sbxd-it.txt", "x\n", 2, 0644, 'f', NULL}};
        t = tar_gz(h, 1, TAR_PAX, &len);
        snprintf(path, sizeof path, "%s/hostile2.tar.gz", d->dir);
        write_host_file(path, t, len);
        free(t);
        snprintf(url, sizeof url, "file://%s", path);
        r = http_post(d, jpack("{s:{s:s,s:s}}", "source", "type", "tarball", "url", url), "/v1/sandboxes");
        expect_error(r, 400, "bad_request");
        http_resp_free(r);
        ck_assert_int_ne(host_sh("find '%s' -name escaped-sbxd-it.txt | grep -q .", d->dir), 0);
    }
    /* Only tar is parsed (uncompressed, gzip, bzip2, xz, zstd): a zip, or a
     * tar behind a filter libarchive may hand to an external program, is
     * refused, not extracted by a parser the protocol does not need. */
    {
        const char *kinds[] = {"zip", "lzma"};
        for (size_t i = 0; i < 2; i++) {
            snprintf(path, sizeof path, "%s/other.%s", d->dir, kinds[i]);
            ck_assert_int_eq(host_sh("cd '%s' && echo other > other.txt && python3 -c \"import sys, zipfile, lzma, "
                                     "tarfile, io\n"
                                     "if sys.argv[1] == 'zip':\n"
                                     "    zipfile.ZipFile(sys.argv[2], 'w').write('other.txt')\n"
                                     "else:\n"
                                     "    b = io.BytesIO(); t = tarfile.open(fileobj=b, mode='w'); t.add('other.txt'); "
                                     "t.close()\n"
                                     "    open(sys.argv[2], 'wb').write(lzma.compress(b.getvalue(), "
                                     "format=lzma.FORMAT_ALONE))\n\" %s '%s'",
                                     d->dir, kinds[i], path),
                             0);
            snprintf(url, sizeof url, "file://%s", path);
            r = http_post(d, jpack("{s:{s:s,s:s}}", "source", "type", "tarball", "url", url), "/v1/sandboxes");
            ck_assert_msg(r->status == 400, "a %s tarball source: %ld %s", kinds[i], r->status, r->body);
            http_resp_free(r);
        }
    }
    sbxd_stop(d);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("sbxd_api");
    TCase *sandboxes = sbx_tcase("sandboxes", 120), *commands = sbx_tcase("commands", 120),
          *files = sbx_tcase("files", 120), *state = sbx_tcase("state", 120),
          *snapshots = sbx_tcase("snapshots", 120), *sources = sbx_tcase("sources", 120);

    tcase_add_test(sandboxes, test_sbxd_api_create_response_shape);
    tcase_add_test(sandboxes, test_sbxd_api_create_defaults);
    tcase_add_test(sandboxes, test_sbxd_api_runtime_is_what_runs);
    tcase_add_test(sandboxes, test_sbxd_api_get_sandbox);
    tcase_add_test(sandboxes, test_sbxd_api_list_project_and_pagination);
    suite_add_tcase(s, sandboxes);

    tcase_add_test(commands, test_sbxd_api_run_detached_and_get);
    tcase_add_test(commands, test_sbxd_api_run_wait_two_lines);
    tcase_add_test(commands, test_sbxd_api_run_not_found_127);
    tcase_add_test(commands, test_sbxd_api_logs_replay_after_end);
    tcase_add_test(commands, test_sbxd_api_logs_interleaved_in_order);
    tcase_add_test(commands, test_sbxd_api_kill_both_paths);
    tcase_add_test(commands, test_sbxd_api_kill_stop_and_continue);
    suite_add_tcase(s, commands);

    tcase_add_test(files, test_sbxd_api_fs_mkdir);
    tcase_add_test(files, test_sbxd_api_fs_write_files);
    tcase_add_test(files, test_sbxd_api_fs_write_hostile_entries);
    tcase_add_test(files, test_sbxd_api_fs_read);
    suite_add_tcase(s, files);

    tcase_add_test(state, test_sbxd_api_stop);
    tcase_add_test(state, test_sbxd_api_extend_timeout);
    tcase_add_test(state, test_sbxd_api_network_policy_update_echo);
    tcase_add_test(state, test_sbxd_api_network_policy_allow_deny_allow);
    tcase_add_test(state, test_sbxd_api_network_policy_deny_allow_deny);
    suite_add_tcase(s, state);

    tcase_add_test(snapshots, test_sbxd_api_snapshot_create);
    tcase_add_test(snapshots, test_sbxd_api_snapshot_get_list_delete);
    tcase_add_test(snapshots, test_sbxd_api_snapshot_expires);
    tcase_add_test(snapshots, test_sbxd_api_snapshot_restore);
    tcase_add_test(snapshots, test_sbxd_api_snapshot_source_deleted_410);
    tcase_add_test(snapshots, test_sbxd_api_snapshot_source_unknown_404);
    suite_add_tcase(s, snapshots);

    tcase_add_test(sources, test_sbxd_api_routes_reach_sandbox_port);
    tcase_add_test(sources, test_sbxd_api_git_source);
    tcase_add_test(sources, test_sbxd_api_git_source_repo_under_tmp);
    tcase_add_test(sources, test_sbxd_api_tarball_source);
    suite_add_tcase(s, sources);
    return s;
}
