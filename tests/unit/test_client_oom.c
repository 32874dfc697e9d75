/* SPDX-License-Identifier: MIT */
/*
 * client_oom: the client, sandbox and command paths (lib/client/client.c,
 * lib/client/sandbox.c, lib/client/command.c, lib/client/engine.c) under allocation failure.
 *
 * Each scenario makes a client against canned_http, a server in the test
 * process that answers every request as sbxd would (tests/unit/canned_http.c),
 * and drives it through the public API from scratch: handles made, requests
 * sent, answers parsed, everything freed. The scenario runs once with each
 * allocation of lib/ failing in turn (1st, 2nd, ...: sbx_test_oom_loop), and
 * must then return SBX_E_NOMEM or absorb the failure and succeed with the
 * right results; the ASan and valgrind runs of the unit suite prove that no
 * path leaks. libcurl, jansson and OpenSSL allocate on their own and are not
 * counted, so every scenario stays short (under a second under valgrind).
 */
#include "harness.h"

#include <sbxrun/sbxrun.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "canned_http.h"

#define SID "sbx_canned"
#define CID "cmd_canned"
#define SNAP "snap_canned"
#define FILE_BODY "file bytes\nline two\n"
#define ERR_TEXT "warning\n"
#define OUT_LINES 40 /* stdout lines of the command, enough to grow its buffers */

#define SANDBOX_OBJ(status)                                                                         \
    "{\"id\":\"" SID "\",\"memory\":4096,\"vcpus\":2,\"region\":\"local\",\"runtime\":\"node24\","   \
    "\"timeout\":300000,\"status\":\"" status "\",\"requestedAt\":1764100000000,"                   \
    "\"createdAt\":1764100000000,\"updatedAt\":1764100000000,\"cwd\":\"/vercel/sandbox\","          \
    "\"networkPolicy\":{\"mode\":\"allow-all\"}}"
#define ROUTES "[{\"url\":\"http://127.0.0.1:40000\",\"port\":3000,\"subdomain\":\"sbx-canned-3000\"}]"
#define COMMAND_OBJ(exit)                                                                           \
    "{\"command\":{\"id\":\"" CID "\",\"name\":\"sh\",\"args\":[\"-c\",\"echo hello\"],"            \
    "\"cwd\":\"/vercel/sandbox\",\"sandboxId\":\"" SID "\",\"exitCode\":" exit ","                   \
    "\"startedAt\":1764100000100}}"
/* 2.x: the named sandbox "canned", whose session SID has stopped; its
 * resume answers SID2. */
#define SID2 "sbx_canned2"
#define SESSION_OBJ(id, status)                                                                     \
    "{\"id\":\"" id "\",\"memory\":4096,\"vcpus\":2,\"region\":\"local\",\"runtime\":\"node24\","    \
    "\"timeout\":300000,\"status\":\"" status "\",\"requestedAt\":1764100000000,"                   \
    "\"createdAt\":1764100000000,\"updatedAt\":1764100000000,\"cwd\":\"/vercel/sandbox\","          \
    "\"networkPolicy\":{\"mode\":\"allow-all\"}}"
#define NAMED_FIELDS(id, status)                                                                    \
    "\"sandbox\":{\"name\":\"canned\",\"persistent\":true,\"currentSessionId\":\"" id "\"},"        \
    "\"session\":" SESSION_OBJ(id, status) ",\"routes\":" ROUTES
#define SNAPSHOT_OBJ(status)                                                                        \
    "{\"id\":\"" SNAP "\",\"sourceSandboxId\":\"" SID "\",\"region\":\"local\",\"status\":\"" status \
    "\",\"sizeBytes\":4096,\"createdAt\":1764100000200,\"updatedAt\":1764100000200,"                \
    "\"expiresAt\":1764186400200}"

/* The canned answers, made once (plain malloc: not counted). */
static struct {
    struct canned_http *srv;
    char *sandbox, *sandbox_routes, *sandbox_stopped, *list_sandboxes, *list_snapshots;
    char *cmd_running, *cmd_exited, *cmd_stream, *logs, *empty, *file, *snapshot, *snapshot_get,
        *snapshot_deleted, *not_found, *busy, *named_stopped, *named_resumed, *gone, *patched, *session2;
    char out_text[OUT_LINES * 64];  /* the command's whole stdout */
    char upload_dir[64];            /* a local directory to upload */
    unsigned busy_calls;            /* the server thread's own */
} canned;

static bool prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* Files and commands of the sandbox (v1) or session (2.x): tail is the
 * path after its id. */
static const char *session_route(bool get, bool post, const char *tail, const char *body)
{
    if (post && (strcmp(tail, "/fs/mkdir") == 0 || strcmp(tail, "/fs/write") == 0))
        return canned.empty;
    if (post && strcmp(tail, "/fs/read") == 0)
        return canned.file;
    if (post && strcmp(tail, "/cmd") == 0)
        return strstr(body, "\"wait\"") ? canned.cmd_stream : canned.cmd_running;
    if (get && strcmp(tail, "/cmd/" CID "/logs") == 0)
        return canned.logs;
    if (get && strcmp(tail, "/cmd/" CID "?wait=true") == 0)
        return canned.cmd_exited;
    if (get && strcmp(tail, "/cmd/" CID) == 0)
        return canned.cmd_running;
    if (post && strcmp(tail, "/" CID "/kill") == 0)
        return canned.cmd_exited;
    return canned.not_found;
}

/* The 2.x routes of the automatic resume scenario. */
static const char *route_v2(const char *method, const char *target, const char *body)
{
    static const char old[] = "/v2/sandboxes/sessions/" SID "/", cur[] = "/v2/sandboxes/sessions/" SID2;
    const char *tail = prefix(target, cur) ? target + sizeof cur - 1 : NULL;
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;

    if (get && prefix(target, "/v2/sandboxes/canned?"))
        return strstr(target, "resume=true") ? canned.named_resumed : canned.named_stopped;
    if (strcmp(method, "PATCH") == 0 && prefix(target, "/v2/sandboxes/canned?"))
        return canned.patched;
    if (prefix(target, old))
        return canned.gone;
    if (post && tail && (strcmp(tail, "/extend-timeout") == 0 || strcmp(tail, "/network-policy") == 0))
        return canned.session2;
    return tail ? session_route(get, post, tail, body) : canned.not_found;
}

static const char *route(const char *method, const char *target, const char *body, size_t len, void *user)
{
    static const char sbx[] = "/v1/sandboxes/" SID;
    const char *tail = prefix(target, sbx) ? target + sizeof sbx - 1 : NULL;
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    (void)len;
    (void)user;
    if (prefix(target, "/v2/"))
        return route_v2(method, target, body);

    if (get && prefix(target, "/v1/sandboxes?project=busy")) /* every other one: 429, retry at once */
        return canned.busy_calls++ % 2 == 0 ? canned.busy : canned.list_sandboxes;
    if (prefix(target, "/v1/sandboxes/snapshots/" SNAP))
        return get ? canned.snapshot_get : strcmp(method, "DELETE") == 0 ? canned.snapshot_deleted : canned.not_found;
    if (get && prefix(target, "/v1/sandboxes/snapshots"))
        return canned.list_snapshots;
    if (post && strcmp(target, "/v1/sandboxes") == 0)
        return canned.sandbox_routes;
    if (get && (strcmp(target, "/v1/sandboxes") == 0 || prefix(target, "/v1/sandboxes?")))
        return canned.list_sandboxes;
    if (!tail)
        return canned.not_found;
    if (get && tail[0] == '\0')
        return canned.sandbox_routes;
    if (post && strcmp(tail, "/stop") == 0)
        return canned.sandbox_stopped;
    if (post && (strcmp(tail, "/extend-timeout") == 0 || strcmp(tail, "/network-policy") == 0))
        return canned.sandbox;
    if (post && strcmp(tail, "/snapshot") == 0)
        return canned.snapshot;
    return session_route(get, post, tail, body);
}

/* dir/name, in a static buffer. */
static const char *path_in(const char *dir, const char *name)
{
    static char p[128];
    int n = snprintf(p, sizeof p, "%s/%s", dir, name);
    ck_assert(n > 0 && (size_t)n < sizeof p);
    return p;
}

static char *json_reply(const char *body)
{
    return canned_http_reply(200, "application/json", body, strlen(body));
}

static void canned_start(void)
{
    static const char *const stream[] = {COMMAND_OBJ("null") "\n", COMMAND_OBJ("0") "\n", NULL};
    static const char err[] = "{\"error\":{\"code\":\"not_found\",\"message\":\"no such route\"}}";
    static const char gone[] = "{\"error\":{\"code\":\"gone\",\"message\":\"session " SID " is stopped\"}}";
    static const char busy[] = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Type: "
                               "application/json\r\nContent-Length: 2\r\n\r\n{}";
    /* The output: stdout lines, two chunks per line with a stderr line cut
     * in two between them. */
    char lines[OUT_LINES][128], *logs[2 * OUT_LINES + 3];
    size_t nlogs = 0, off = 0;
    FILE *f;

    for (int i = 0; i < OUT_LINES; i++) {
        int n = snprintf(lines[i], sizeof lines[i],
                         "{\"stream\":\"stdout\",\"data\":\"line %02d of the output\\n\",\"timestamp\":%d}\n", i,
                         1000 + i);
        ck_assert(n > 0 && (size_t)n < sizeof lines[i]);
        off += (size_t)snprintf(canned.out_text + off, sizeof canned.out_text - off, "line %02d of the output\n", i);
        /* Chunks do not follow lines: split each in two. */
        logs[nlogs++] = strndup(lines[i], (size_t)n / 2);
        logs[nlogs++] = strdup(lines[i] + n / 2);
        if (i == OUT_LINES / 2) {
            logs[nlogs++] = strdup("{\"stream\":\"stderr\",\"data\":\"warn");
            logs[nlogs++] = strdup("ing\\n\",\"timestamp\":2000}\n");
        }
    }
    logs[nlogs] = NULL;

    /* One reference on the library's global state for the whole scenario,
     * so each client only counts it up: the loop is about the client, not
     * about libcurl's and OpenSSL's start-up (test_global has that). */
    ck_assert_int_eq(sbx_global_init(), SBX_OK);
    canned.sandbox = json_reply("{\"sandbox\":" SANDBOX_OBJ("running") "}");
    canned.sandbox_routes = json_reply("{\"sandbox\":" SANDBOX_OBJ("running") ",\"routes\":" ROUTES "}");
    canned.sandbox_stopped = json_reply("{\"sandbox\":" SANDBOX_OBJ("stopping") "}");
    canned.list_sandboxes = json_reply("{\"sandboxes\":[" SANDBOX_OBJ("running") "],"
                                       "\"pagination\":{\"count\":1,\"next\":null,\"prev\":null}}");
    canned.list_snapshots = json_reply("{\"snapshots\":[" SNAPSHOT_OBJ("created") "],"
                                       "\"pagination\":{\"count\":1,\"next\":null,\"prev\":null}}");
    canned.cmd_running = json_reply(COMMAND_OBJ("null"));
    canned.cmd_exited = json_reply(COMMAND_OBJ("0"));
    canned.cmd_stream = canned_http_chunked(200, "application/x-ndjson", stream);
    canned.logs = canned_http_chunked(200, "application/x-ndjson", (const char *const *)logs);
    for (size_t i = 0; i < nlogs; i++)
        free(logs[i]);
    canned.empty = json_reply("{}");
    canned.file = canned_http_reply(200, "application/octet-stream", FILE_BODY, strlen(FILE_BODY));
    canned.snapshot =
        json_reply("{\"snapshot\":" SNAPSHOT_OBJ("created") ",\"sandbox\":" SANDBOX_OBJ("stopped") "}");
    canned.snapshot_get = json_reply("{\"snapshot\":" SNAPSHOT_OBJ("created") "}");
    canned.snapshot_deleted = json_reply("{\"snapshot\":" SNAPSHOT_OBJ("deleted") "}");
    canned.not_found = canned_http_reply(404, "application/json", err, strlen(err));
    canned.busy = strdup(busy);
    canned.named_stopped = json_reply("{" NAMED_FIELDS(SID, "stopped") "}");
    canned.named_resumed = json_reply("{\"resumed\":true," NAMED_FIELDS(SID2, "running") "}");
    canned.gone = canned_http_reply(410, "application/json", gone, strlen(gone));
    canned.patched = json_reply("{\"sandbox\":{\"name\":\"canned\",\"persistent\":false}}");
    canned.session2 = json_reply("{\"session\":" SESSION_OBJ(SID2, "running") "}");
    canned.busy_calls = 0;
    /* A directory for uploads: two files and a subdirectory. */
    snprintf(canned.upload_dir, sizeof canned.upload_dir, "/tmp/sbx-upload-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(canned.upload_dir));
    ck_assert_int_eq(mkdir(path_in(canned.upload_dir, "sub"), 0755), 0);
    ck_assert_ptr_nonnull(f = fopen(path_in(canned.upload_dir, "a.txt"), "w"));
    fputs(FILE_BODY, f);
    fclose(f);
    ck_assert_ptr_nonnull(f = fopen(path_in(canned.upload_dir, "sub/b.txt"), "w"));
    fputs(canned.out_text, f);
    fclose(f);
    canned.srv = canned_http_start(route, NULL);
}

static void canned_stop(void)
{
    char **all[] = {&canned.sandbox, &canned.sandbox_routes, &canned.sandbox_stopped,
                    &canned.list_sandboxes, &canned.list_snapshots, &canned.cmd_running,
                    &canned.cmd_exited, &canned.cmd_stream, &canned.logs, &canned.empty,
                    &canned.file, &canned.snapshot, &canned.snapshot_get,
                    &canned.snapshot_deleted, &canned.not_found, &canned.busy, &canned.named_stopped,
                    &canned.named_resumed, &canned.gone, &canned.patched, &canned.session2};
    canned_http_stop(canned.srv);
    unlink(path_in(canned.upload_dir, "a.txt"));
    unlink(path_in(canned.upload_dir, "sub/b.txt"));
    rmdir(path_in(canned.upload_dir, "sub"));
    rmdir(canned.upload_dir);
    canned.srv = NULL;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(*all[i]);
        *all[i] = NULL;
    }
    ck_assert_int_eq(sbx_global_cleanup(), SBX_OK);
}

/* ---- building blocks ------------------------------------------------------------------- */

/* Leave the scenario on the first failure; the status is its result. */
#define TRY(call)                                                                                  \
    do {                                                                                           \
        st = (call);                                                                               \
        if (st != SBX_OK)                                                                          \
            goto out;                                                                              \
    } while (0)

/* What a call that succeeded must have produced: a wrong result after an
 * absorbed allocation failure is a bug, not an error status. */
#define EXPECT(cond) ck_assert_msg((cond), "%s: wrong result after a successful call", #cond)

static sbx_status new_client_proto(sbx_client **out, const char *proto)
{
    sbx_client *c = sbx_client_new();
    sbx_status st;
    *out = c;
    if (!c)
        return SBX_E_NOMEM;
    if ((st = sbx_client_set_endpoint(c, canned_http_endpoint(canned.srv))) != SBX_OK ||
        (st = sbx_client_set_credentials(c, "canned-token", NULL, "prj_canned")) != SBX_OK)
        return st;
    /* the canned server answers the v1 routes */
    if ((st = sbx_client_set_option(c, "protocol", proto)) != SBX_OK)
        return st;
    return sbx_client_set_option(c, "user_agent", "test_client_oom");
}

static sbx_status new_client(sbx_client **out)
{
    return new_client_proto(out, "v1");
}

/* A client speaking proto and a new sandbox handle. */
static sbx_status new_handle(sbx_client **c, sbx_sandbox **s, const char *proto)
{
    sbx_status st;
    *s = NULL;
    if ((st = new_client_proto(c, proto)) != SBX_OK)
        return st;
    return (*s = sbx_sandbox_new(*c)) ? SBX_OK : SBX_E_NOMEM;
}

/* A client and a handle on the running sandbox SID. */
static sbx_status new_sandbox(sbx_client **c, sbx_sandbox **s)
{
    sbx_status st;
    if ((st = new_handle(c, s, "v1")) != SBX_OK)
        return st;
    if ((st = sbx_sandbox_fetch(*s, SID)) == SBX_OK)
        EXPECT(strcmp(sbx_sandbox_id(*s), SID) == 0);
    return st;
}

/* ---- scenarios --------------------------------------------------------------------------- */

static sbx_status sc_client_lists(void *ctx)
{
    sbx_client *c = NULL;
    char *json = NULL;
    sbx_status st;
    (void)ctx;
    TRY(new_client(&c));
    TRY(sbx_client_set_option(c, "retry.max", "2"));
    TRY(sbx_client_resolve_credentials(c));
    EXPECT(strcmp(sbx_client_project(c), "prj_canned") == 0);
    TRY(sbx_client_list_sandboxes(c, NULL, 10, -1, -1, &json));
    EXPECT(strstr(json, "\"" SID "\"") != NULL);
    sbx_free(json);
    json = NULL;
    TRY(sbx_client_list_snapshots(c, "prj_other", 0, 1, 1764200000000, &json));
    EXPECT(strstr(json, "\"" SNAP "\"") != NULL);
out:
    sbx_free(json);
    sbx_client_free(c);
    return st;
}

static sbx_status sc_sandbox_create(void *ctx)
{
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_status st;
    (void)ctx;
    TRY(new_handle(&c, &s, "v1"));
    TRY(sbx_sandbox_set_runtime(s, "node24"));
    TRY(sbx_sandbox_set_timeout_ms(s, 300000));
    TRY(sbx_sandbox_set_vcpus(s, 2));
    TRY(sbx_sandbox_add_port(s, 3000));
    TRY(sbx_sandbox_set_env(s, "CI", "1"));
    TRY(sbx_sandbox_set_env(s, "SECRET", "s3cr3t"));
    TRY(sbx_sandbox_set_option(s, "vcpus", "2"));
    TRY(sbx_sandbox_set_network_policy_json(s, "{\"mode\":\"allow-all\"}"));
    TRY(sbx_sandbox_set_source_git(s, "https://git.example/repo.git", "main", 1));
    TRY(sbx_sandbox_create(s));
    EXPECT(strcmp(sbx_sandbox_id(s), SID) == 0);
    EXPECT(strcmp(sbx_sandbox_status(s), "running") == 0);
    EXPECT(sbx_sandbox_vcpus(s) == 2 && sbx_sandbox_memory_mb(s) == 4096);
    EXPECT(sbx_sandbox_route_url(s, 3000) != NULL);
    EXPECT(strstr(sbx_sandbox_network_policy_json(s), "allow-all") != NULL);
out:
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

static sbx_status sc_sandbox_lifecycle(void *ctx)
{
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_status st;
    (void)ctx;
    TRY(new_sandbox(&c, &s));
    TRY(sbx_sandbox_refresh(s));
    TRY(sbx_sandbox_extend_timeout(s, 60000));
    TRY(sbx_sandbox_update_network_policy(s, "{\"mode\":\"deny-all\"}"));
    TRY(sbx_sandbox_stop(s));
    EXPECT(strcmp(sbx_sandbox_status(s), "stopping") == 0);
out:
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

static sbx_status sc_snapshot(void *ctx)
{
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_snapshot *sn = NULL, *again = NULL;
    sbx_status st;
    (void)ctx;
    TRY(new_sandbox(&c, &s));
    if (!(sn = sbx_snapshot_new(c)) || !(again = sbx_snapshot_new(c))) {
        st = SBX_E_NOMEM;
        goto out;
    }
    TRY(sbx_sandbox_snapshot(s, 86400000, sn));
    EXPECT(strcmp(sbx_snapshot_id(sn), SNAP) == 0);
    EXPECT(strcmp(sbx_sandbox_status(s), "stopped") == 0);
    TRY(sbx_snapshot_fetch(again, SNAP));
    EXPECT(sbx_snapshot_size_bytes(again) == 4096);
    TRY(sbx_snapshot_delete(again));
    EXPECT(strcmp(sbx_snapshot_status(again), "deleted") == 0);
out:
    sbx_snapshot_free(again);
    sbx_snapshot_free(sn);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

/* The whole of one stream's buffered output. */
static sbx_status drain(sbx_command *k, int stream, char *all, size_t cap)
{
    size_t n = 0, got;
    char buf[5];
    sbx_status st;
    while ((st = sbx_command_read_output(k, stream, (uint8_t *)buf, sizeof buf, &got)) == SBX_OK) {
        ck_assert_uint_lt(n + got, cap);
        memcpy(all + n, buf, got);
        n += got;
    }
    all[n] = '\0';
    return st == SBX_E_NOT_FOUND ? SBX_OK : st;
}

static sbx_status sc_command_run(void *ctx)
{
    static const char *const argv[] = {"sh", "-c", "echo hello"};
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_command *k = NULL;
    char out[OUT_LINES * 64], err[64];
    sbx_status st;
    (void)ctx;
    TRY(new_sandbox(&c, &s));
    if (!(k = sbx_command_new(s))) {
        st = SBX_E_NOMEM;
        goto out;
    }
    TRY(sbx_command_set_argv(k, 3, argv));
    TRY(sbx_command_set_cwd(k, "/vercel/sandbox"));
    TRY(sbx_command_set_env(k, "A", "alpha"));
    TRY(sbx_command_set_timeout_ms(k, 60000));
    TRY(sbx_command_run(k));
    EXPECT(strcmp(sbx_command_id(k), CID) == 0);
    EXPECT(sbx_command_exit_code(k) == 0);
    EXPECT(sbx_command_output_bytes(k, SBX_STREAM_STDOUT) == strlen(canned.out_text));
    TRY(drain(k, SBX_STREAM_STDOUT, out, sizeof out));
    TRY(drain(k, SBX_STREAM_STDERR, err, sizeof err));
    EXPECT(strcmp(out, canned.out_text) == 0);
    EXPECT(strcmp(err, ERR_TEXT) == 0);
out:
    sbx_command_free(k);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

/* A job with a secret in its environment: its command's output, policy
 * and network preset, its result redacted. Whatever allocation fails, the
 * result never holds the secret (the output's last line, and an argument). */
static sbx_status sc_job_run(void *ctx)
{
    const char *argv[] = {"npm", "test", NULL};
    char secret[64], *json = NULL;
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_job *job = NULL;
    sbx_status st, rst;
    (void)ctx;
    snprintf(secret, sizeof secret, "line %02d of the output", OUT_LINES - 1);
    TRY(new_sandbox(&c, &s));
    if (!(job = sbx_job_new(c))) {
        st = SBX_E_NOMEM;
        goto out;
    }
    TRY(sbx_job_set_type(job, "verify.test"));
    argv[2] = secret; /* in the argv too: the result's own copy of it is redacted */
    TRY(sbx_job_set_argv(job, 3, argv));
    TRY(sbx_job_set_env(job, "CANNED_SECRET", secret));
    st = sbx_job_run(job, s);
    /* The result exists whether the run succeeded or not (it may itself
     * run out of memory); it never holds the secret. */
    if ((rst = sbx_job_result_to_json(job, &json)) == SBX_OK)
        ck_assert_msg(!strstr(json, secret), "the secret is in the result: %s", json);
    TRY(st);
    TRY(rst);
    EXPECT(sbx_job_verdict(job) == SBX_VERDICT_PASSED);
    ck_assert_msg(strstr(json, "[REDACTED:secret]"), "no redaction in the result: %s", json);
out:
    sbx_free(json);
    sbx_job_free(job);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

/* repo.applyPatch (the diff uploaded and applied by git in the sandbox),
 * then an artifact read back, redacted. */
static sbx_status sc_job_patch_artifact(void *ctx)
{
    static const char diff[] = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n";
    char *json = NULL;
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_job *job = NULL;
    sbx_status st, rst;
    (void)ctx;
    TRY(new_sandbox(&c, &s));
    if (!(job = sbx_job_new(c))) {
        st = SBX_E_NOMEM;
        goto out;
    }
    TRY(sbx_job_set_type(job, "repo.applyPatch"));
    TRY(sbx_job_set_input(job, "patch", diff));
    TRY(sbx_job_add_artifact(job, "report.txt"));
    TRY(sbx_job_add_secret(job, (const uint8_t *)"line two", 8)); /* in the artifact (FILE_BODY) */
    st = sbx_job_run(job, s);
    if ((rst = sbx_job_result_to_json(job, &json)) == SBX_OK)
        ck_assert_msg(!strstr(json, "line two"), "the secret is in the result: %s", json);
    TRY(st);
    TRY(rst);
    ck_assert_msg(sbx_job_verdict(job) == SBX_VERDICT_PASSED, "%s", json);
    ck_assert_msg(strstr(json, "\"/vercel/sandbox/report.txt\"") && strstr(json, "[REDACTED:secret]"), "%s", json);
out:
    sbx_free(json);
    sbx_job_free(job);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

/* deps.install (the lockfile detected in the sandbox, its network preset
 * set), then repo.clone with a token the network policy carries. */
static sbx_status sc_jobs_install_clone(void *ctx)
{
    const char *types[] = {"deps.install", "repo.clone"};
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_job *job = NULL;
    sbx_status st = SBX_OK;
    (void)ctx;
    TRY(new_sandbox(&c, &s));
    for (size_t i = 0; i < 2; i++) {
        if (!(job = sbx_job_new(c))) {
            st = SBX_E_NOMEM;
            goto out;
        }
        TRY(sbx_job_set_type(job, types[i]));
        if (i == 1) {
            TRY(sbx_job_set_input(job, "url", "https://git.example.com/org/repo.git"));
            TRY(sbx_job_set_input(job, "token", "ghs_canned-token-0123456789"));
        } else {
            TRY(sbx_job_set_input(job, "registry", "https://registry.example.com/"));
        }
        TRY(sbx_job_run(job, s));
        ck_assert_msg(sbx_job_verdict(job) != SBX_VERDICT_DENIED, "%s: %s", types[i], sbx_job_last_error(job));
        sbx_job_free(job);
        job = NULL;
    }
out:
    sbx_job_free(job);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

/* A run: its own sandbox created, a directory uploaded, two jobs (a secret
 * in the second's environment), a transcript, the sandbox stopped. */
static sbx_status sc_run(void *ctx)
{
    const char *lint[] = {"npm", "run", "lint"}, *test[] = {"npm", "test"};
    char secret[64], *json = NULL;
    sbx_client *c = NULL;
    sbx_run *run = NULL;
    sbx_transcript *t = NULL;
    sbx_job *job;
    size_t broken = 0;
    sbx_status st, rst;
    (void)ctx;
    snprintf(secret, sizeof secret, "line %02d of the output", OUT_LINES - 1);
    TRY(new_client(&c));
    if (!(run = sbx_run_new(c)) || !(t = sbx_transcript_new())) {
        st = SBX_E_NOMEM;
        goto out;
    }
    TRY(sbx_run_set_transcript(run, t));
    TRY(sbx_run_add_upload(run, canned.upload_dir, "/vercel/sandbox"));
    TRY(sbx_run_add_job(run, "verify.test", &job));
    TRY(sbx_job_set_argv(job, 2, test));
    TRY(sbx_job_set_env(job, "CANNED_SECRET", secret));
    TRY(sbx_run_add_job(run, "verify.lint", &job));
    TRY(sbx_job_set_argv(job, 3, lint));
    st = sbx_run_execute(run);
    if ((rst = sbx_run_result_to_json(run, &json)) == SBX_OK)
        ck_assert_msg(!strstr(json, secret), "the secret is in the result: %s", json);
    TRY(st);
    TRY(rst);
    EXPECT(sbx_run_verdict(run) == SBX_VERDICT_PASSED);
    EXPECT(sbx_run_job_count(run) == 2 && sbx_job_verdict(sbx_run_job(run, 1)) == SBX_VERDICT_PASSED);
    /* Reported complete, so it is: both steps, the end, the chain whole. */
    TRY(sbx_transcript_verify(t, &broken));
    EXPECT(sbx_transcript_complete(t) && sbx_transcript_step_count(t) == 2);
out:
    sbx_free(json);
    sbx_transcript_free(t);
    sbx_run_free(run);
    sbx_client_free(c);
    return st;
}

struct collected {
    char text[2][OUT_LINES * 64];
    size_t len[2];
};

static int collect(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    struct collected *o = user;
    int i = stream == SBX_STREAM_STDERR;
    ck_assert_uint_lt(o->len[i] + len, sizeof o->text[i]);
    memcpy(o->text[i] + o->len[i], data, len);
    o->len[i] += len;
    o->text[i][o->len[i]] = '\0';
    return 0;
}

/* A command as an op, driven by a host loop, output to a callback. */
static sbx_status sc_command_op(void *ctx)
{
    static const char *const argv[] = {"sh", "-c", "echo hello"};
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_command *k = NULL;
    sbx_op *op = NULL, *done;
    struct collected o = {0};
    size_t running = 1;
    sbx_status st;
    (void)ctx;
    TRY(new_sandbox(&c, &s));
    if (!(k = sbx_command_new(s))) {
        st = SBX_E_NOMEM;
        goto out;
    }
    TRY(sbx_command_set_argv(k, 3, argv));
    TRY(sbx_command_set_output_cb(k, collect, &o));
    TRY(sbx_command_run_start(k, &op));
    while (running) {
        int64_t ms;
        TRY(sbx_client_get_timeout(c, &ms));
        st = sbx_client_wait(c, ms < 0 || ms > 1000 ? 1000 : ms);
        if (st != SBX_OK && st != SBX_E_TIMEOUT)
            goto out;
        TRY(sbx_client_process(c, &running));
    }
    done = sbx_client_next_done(c);
    EXPECT(done == op);
    TRY(sbx_op_status(op));
    EXPECT(sbx_command_exit_code(k) == 0);
    EXPECT(strcmp(o.text[0], canned.out_text) == 0 && strcmp(o.text[1], ERR_TEXT) == 0);
out:
    sbx_op_free(op);
    sbx_command_free(k);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

static sbx_status sc_command_detached(void *ctx)
{
    static const char *const argv[] = {"sleep", "1"};
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_command *k = NULL, *other = NULL;
    sbx_status st;
    (void)ctx;
    TRY(new_sandbox(&c, &s));
    if (!(k = sbx_command_new(s)) || !(other = sbx_command_new(s))) {
        st = SBX_E_NOMEM;
        goto out;
    }
    TRY(sbx_command_set_argv(k, 2, argv));
    TRY(sbx_command_set_detached(k, 1));
    TRY(sbx_command_set_sudo(k, 1));
    TRY(sbx_command_run(k));
    EXPECT(strcmp(sbx_command_id(k), CID) == 0 && sbx_command_exit_code(k) == -1);
    TRY(sbx_command_fetch(other, CID));
    TRY(sbx_command_wait_exit(other));
    EXPECT(sbx_command_exit_code(other) == 0);
    TRY(sbx_command_kill(k, 15));
out:
    sbx_command_free(other);
    sbx_command_free(k);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

static int count_bytes(const uint8_t *data, size_t len, void *user)
{
    (void)data;
    *(size_t *)user += len;
    return 0;
}

static sbx_status sc_files(void *ctx)
{
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    char *data = NULL;
    size_t len = 0, streamed = 0;
    sbx_status st;
    (void)ctx;
    TRY(new_sandbox(&c, &s));
    TRY(sbx_sandbox_mkdir(s, "work"));
    TRY(sbx_sandbox_write_file(s, "work/a.txt", (const uint8_t *)FILE_BODY, strlen(FILE_BODY), 0600));
    TRY(sbx_sandbox_read_file(s, "work/a.txt", 0, (uint8_t **)&data, &len));
    EXPECT(len == strlen(FILE_BODY) && memcmp(data, FILE_BODY, len) == 0);
    TRY(sbx_sandbox_read_stream(s, "/vercel/sandbox/work/a.txt", count_bytes, &streamed));
    EXPECT(streamed == strlen(FILE_BODY));
    TRY(sbx_sandbox_upload(s, canned.upload_dir, "work/up"));
out:
    sbx_free(data);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

/* A call that must fail with `want`: then it counts as done. */
#define EXPECT_FAIL(call, want)                                                                    \
    do {                                                                                           \
        st = (call);                                                                               \
        if (st == SBX_E_NOMEM)                                                                     \
            goto out;                                                                              \
        ck_assert_msg(st == (want), "%s: %s, not %s", #call, sbx_status_name(st), sbx_status_name(want)); \
    } while (0)

/* Error answers and a retried request. */
static sbx_status sc_errors(void *ctx)
{
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL, *missing = NULL;
    char *json = NULL;
    sbx_status st;
    (void)ctx;
    TRY(new_sandbox(&c, &s));
    if (!(missing = sbx_sandbox_new(c))) {
        st = SBX_E_NOMEM;
        goto out;
    }
    EXPECT_FAIL(sbx_sandbox_fetch(missing, "sbx_missing"), SBX_E_NOT_FOUND);
    /* The message is kept only if there was memory for it. */
    EXPECT(sbx__fault_triggered() || strstr(sbx_sandbox_last_error(missing), "no such route") != NULL);
    EXPECT_FAIL(sbx_sandbox_write_file(s, "/", (const uint8_t *)"x", 1, 0), SBX_E_INVALID_ARG);
    EXPECT_FAIL(sbx_client_set_option(c, "no.such.option", "1"), SBX_E_UNKNOWN_OPTION);
    /* 429 with Retry-After: 0, then the page. */
    TRY(sbx_client_list_sandboxes(c, "busy", 0, -1, -1, &json));
    EXPECT(strstr(json, "\"" SID "\"") != NULL);
    TRY(sbx_sandbox_stop(s));
    st = SBX_OK;
out:
    sbx_free(json);
    sbx_sandbox_free(missing);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

/* 2.x: three ops meet a stopped session; one resume, each op repeated on
 * the new session. */
static sbx_status sc_auto_resume(void *ctx)
{
    static const char *const argv[] = {"sh", "-c", "echo hello"};
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_command *k = NULL;
    sbx_op *ops[3] = {NULL, NULL, NULL};
    size_t streamed = 0;
    sbx_status st;
    (void)ctx;
    TRY(new_handle(&c, &s, "v2"));
    TRY(sbx_sandbox_fetch_named(s, "canned"));
    EXPECT(strcmp(sbx_sandbox_id(s), SID) == 0 && sbx_sandbox_persistent(s) == 1);
    if (!(k = sbx_command_new(s))) {
        st = SBX_E_NOMEM;
        goto out;
    }
    TRY(sbx_command_set_argv(k, 3, argv));
    TRY(sbx_command_run_start(k, &ops[0]));
    TRY(sbx_sandbox_mkdir_start(s, "/vercel/sandbox/d", &ops[1]));
    TRY(sbx_sandbox_read_stream_start(s, "/vercel/sandbox/f", count_bytes, &streamed, &ops[2]));
    TRY(sbx_client_run(c, 30000));
    for (size_t i = 0; i < 3; i++)
        TRY(sbx_op_status(ops[i]));
    EXPECT(strcmp(sbx_sandbox_id(s), SID2) == 0);
    EXPECT(sbx_command_exit_code(k) == 0);
    EXPECT(streamed == strlen(FILE_BODY));
out:
    for (size_t i = 0; i < 3; i++)
        sbx_op_free(ops[i]);
    sbx_command_free(k);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

/* 2.x: resume, then update: the PATCH and the session's follow-ups. */
static sbx_status sc_update(void *ctx)
{
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    sbx_status st;
    (void)ctx;
    TRY(new_handle(&c, &s, "v2"));
    TRY(sbx_sandbox_fetch_named(s, "canned"));
    TRY(sbx_sandbox_resume(s));
    EXPECT(strcmp(sbx_sandbox_id(s), SID2) == 0);
    TRY(sbx_sandbox_update(s, "{\"persistent\":false,\"timeout_ms\":600000,\"network_policy\":{\"mode\":"
                              "\"deny-all\"}}"));
    EXPECT(sbx_sandbox_persistent(s) == 0);
out:
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

/* Several ops at once, handed out by next_done. */
static sbx_status sc_ops(void *ctx)
{
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL, *t = NULL;
    sbx_op *ops[3] = {NULL, NULL, NULL};
    size_t finished = 0;
    sbx_status st;
    (void)ctx;
    TRY(new_client(&c));
    if (!(s = sbx_sandbox_new(c)) || !(t = sbx_sandbox_new(c))) {
        st = SBX_E_NOMEM;
        goto out;
    }
    TRY(sbx_sandbox_fetch_start(s, SID, &ops[0]));
    TRY(sbx_sandbox_create_start(t, &ops[1]));
    TRY(sbx_client_list_sandboxes_start(c, NULL, 0, -1, -1, &ops[2]));
    TRY(sbx_client_run(c, 30000));
    while (sbx_client_next_done(c))
        finished++;
    EXPECT(finished == 3);
    for (size_t i = 0; i < 3; i++)
        TRY(sbx_op_status(ops[i]));
    EXPECT(strstr(sbx_op_result_json(ops[2]), "\"sandboxes\"") != NULL);
    EXPECT(strcmp(sbx_sandbox_id(t), SID) == 0);
out:
    for (size_t i = 0; i < 3; i++)
        sbx_op_free(ops[i]);
    sbx_sandbox_free(t);
    sbx_sandbox_free(s);
    sbx_client_free(c);
    return st;
}

/* ---- the loop ------------------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The scenarios, each a test of its own (a loop test: one process each).
 * Every allocation fails in turn; under valgrind, the long ones (jobs and
 * runs: hundreds of allocations, each attempt a whole run) fail one in
 * seven, as a sample. */
static const struct {
    const char *name;
    sbx_test_oom_fn fn;
    bool is_long;
} scenarios[] = {
    {"client lists", sc_client_lists, false},
    {"sandbox create", sc_sandbox_create, false},
    {"sandbox get, refresh, extend, policy, stop", sc_sandbox_lifecycle, false},
    {"snapshot, get, delete", sc_snapshot, false},
    {"command run (wait stream, logs)", sc_command_run, false},
    {"command op on a host loop", sc_command_op, false},
    {"a job with a secret, redacted", sc_job_run, true},
    {"a run: sandbox, upload, two jobs, transcript, stop", sc_run, true},
    {"repo.applyPatch with an artifact", sc_job_patch_artifact, true},
    {"deps.install, repo.clone with a token", sc_jobs_install_clone, true},
    {"command detached, get, wait, kill", sc_command_detached, false},
    {"files mkdir, write, read, stream", sc_files, false},
    {"error answers and a 429 retried", sc_errors, false},
    {"concurrent ops", sc_ops, false},
    {"2.x automatic resume of three ops", sc_auto_resume, false},
    {"2.x update with its session follow-ups", sc_update, false},
};

/* Scenario _i: a clean run first (it must succeed), then the loop. */
START_TEST(test_client_oom_scenario)
{
    const char *name = scenarios[_i].name;
    long every = scenarios[_i].is_long && getenv("SBX_TEST_UNDER_VALGRIND") ? 7 : 1;
    double t0;
    unsigned before;
    long allocs;
    sbx_status st;

    canned_start();
    st = scenarios[_i].fn(NULL);
    ck_assert_msg(st == SBX_OK, "%s: the run without failures returned %s", name, sbx_status_name(st));
    t0 = now_s();
    before = canned_http_requests(canned.srv);
    allocs = sbx_test_oom_loop_every(scenarios[_i].fn, NULL, every);
    fprintf(stderr, "# %s: %ld allocations, %s%ld failed in turn: %u requests, %.2f s\n", name, allocs,
            every == 1 ? "each of the " : "one in ", every == 1 ? allocs : every, canned_http_requests(canned.srv) - before,
            now_s() - t0);
    ck_assert_int_gt(allocs, 0);
    canned_stop();
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("client_oom");
    TCase *tc = tcase_create("core");
    /* Each loop is seconds long; ASan at -O0 makes it several times that. */
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_client_oom_scenario, 0, (int)SBX__ARRAY_LEN(scenarios));
    suite_add_tcase(s, tc);
    return s;
}
