/* SPDX-License-Identifier: MIT */
/* lifecycle: timeouts, kills, stop, limits, SIGTERM and restarting on the same state. */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* A sleep duration nobody else on the host uses, to find its process. */
static void unique_seconds(char *out, size_t cap)
{
    const char *h = rand_hex(7);
    snprintf(out, cap, "4");
    for (size_t i = 0; h[i] && i + 2 < cap; i++) {
        char c = h[i] >= 'a' ? (char)('0' + (h[i] - 'a')) : h[i];
        out[i + 1] = c;
        out[i + 2] = '\0';
    }
}

static json_t *sleep_cmd(const char *secs)
{
    return jpack("{s:s,s:[s]}", "command", "sleep", "args", secs);
}

static bool sleeping_now(const char *secs)
{
    const char *argv[] = {"sleep", secs, NULL};
    return host_process_exists(argv);
}

/* Whether the host has (want) or no longer has (!want) a process "sleep SECS",
 * waiting up to 5 s for it to appear or go (exec and exit are asynchronous). */
static bool sleeping_is(const char *secs, bool want)
{
    int64_t deadline = mono_ms() + 5000;
    while (sleeping_now(secs) != want) {
        if (mono_ms() > deadline)
            return false;
        usleep(20000);
    }
    return true;
}

#define sleeping(secs) sleeping_is((secs), true)
#define gone_from_host(secs) sleeping_is((secs), false)

static const char *error_code(struct cmd_result *c)
{
    json_t *last = c->logs->n ? c->logs->lines[c->logs->n - 1] : NULL;
    const char *code = json_string_value(json_object_get(json_object_get(last, "data"), "code"));
    return code ? code : "(none)";
}

START_TEST(test_sbxd_lifecycle_timeout_stops_sandbox)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, jpack("{s:i}", "timeout", 2000)), *cid;
    char secs[16];
    int64_t t0;
    struct cmd_result *logs;
    struct http_resp *r;
    json_t *s;
    int code;

    unique_seconds(secs, sizeof secs);
    cid = sbx_detach(d, sid, sleep_cmd(secs));
    t0 = mono_ms();
    ck_assert(sleeping(secs));
    /* The long poll ends when the timeout stops the sandbox. */
    code = sbx_cmd_wait(d, sid, cid);
    ck_assert_int_eq(code, 137);
    ck_assert_msg(mono_ms() - t0 < 15000, "the 2 s timeout took %lld ms", (long long)(mono_ms() - t0));
    ck_assert_msg(sbx_wait_status(d, sid, "stopped", 10000), "status after the timeout: %s", sbx_status_str(d, sid));
    s = sbx_get_sandbox(d, sid);
    ck_assert(json_is_integer(json_object_get(s, "stoppedAt")));
    ck_assert_int_ge(json_integer_value(json_object_get(s, "stoppedAt")) -
                         json_integer_value(json_object_get(s, "startedAt")),
                     1900);
    json_decref(s);
    ck_assert_msg(gone_from_host(secs), "the command's process outlived the sandbox");
    /* Its logs end with an error line; new commands are refused. */
    logs = sbx_logs(d, sid, cid);
    ck_assert_msg(logs->error_line, "logs of a command ended by the timeout have no error line");
    cmd_result_free(logs);
    r = http_post(d, jpack("{s:s}", "command", "true"), "/v1/sandboxes/%s/cmd", sid);
    expect_error(r, 410, "gone");
    http_resp_free(r);
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_lifecycle_timeout_ends_wait_stream)
{
    /* A wait-mode run still streaming when the timeout fires gets its second line. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, jpack("{s:i}", "timeout", 2000));
    struct cmd_result *c = sbxd_run(d, sid, jpack("{s:s,s:[s,s]}", "command", "sh", "args", "-c",
                                                 "echo before; exec sleep 300"));
    ck_assert_int_eq(c->exit_code, 137);
    ck_assert_str_eq(c->out, "before\n");
    ck_assert(c->error_line);
    cmd_result_free(c);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_lifecycle_extend_timeout_postpones_stop)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, jpack("{s:i}", "timeout", 1500)), *cid;
    struct http_resp *r;
    json_t *s;
    int64_t started, stopped;

    cid = sbx_detach(d, sid, sleep_cmd("300"));
    r = http_post(d, jpack("{s:i}", "duration", 2500), "/v1/sandboxes/%s/extend-timeout", sid);
    expect_status(r, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r->json, "sandbox"), "timeout")), 4000);
    http_resp_free(r);
    ck_assert_int_eq(sbx_cmd_wait(d, sid, cid), 137);
    ck_assert(sbx_wait_status(d, sid, "stopped", 10000));
    s = sbx_get_sandbox(d, sid);
    started = json_integer_value(json_object_get(s, "startedAt"));
    stopped = json_integer_value(json_object_get(s, "stoppedAt"));
    ck_assert_msg(stopped - started >= 3900, "stopped after %lld ms: the extension was not applied",
                  (long long)(stopped - started));
    ck_assert_msg(stopped - started < 15000, "stopped after %lld ms", (long long)(stopped - started));
    json_decref(s);
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_lifecycle_default_timeout_option)
{
    const char *args[] = {"--default-timeout", "1.5s", NULL}; /* a time with a unit, as 1500 (ms) */
    struct sbxd *d = sbxd_start(args, NULL);
    struct http_resp *r = sbx_create_resp(d, NULL);
    char *sid = strdup(json_string_value(json_object_get(json_object_get(r->json, "sandbox"), "id"))), *cid;

    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r->json, "sandbox"), "timeout")), 1500);
    http_resp_free(r);
    cid = sbx_detach(d, sid, sleep_cmd("300"));
    ck_assert_int_eq(sbx_cmd_wait(d, sid, cid), 137);
    ck_assert(sbx_wait_status(d, sid, "stopped", 10000));
    free(cid);
    free(sid);
    sbxd_stop(d);
    /* A time that is none: sbxd refuses to start (exit 2), naming the forms. */
    ck_assert_int_eq(host_sh("out=$('%s' --retain-output 5x --state-dir /nonexistent 2>&1); rc=$?; "
                             "echo \"$out\" | grep -q 'wants a time of at least 0 ms (milliseconds, or 250ms' && exit $rc; "
                             "exit 99", getenv("SBXD")), 2);
}
END_TEST

START_TEST(test_sbxd_lifecycle_kill_whole_process_group)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *cid;
    char a[16], b[16];
    struct cmd_result *c;
    struct http_resp *r;

    unique_seconds(a, sizeof a);
    unique_seconds(b, sizeof b);
    cid = sbx_detach_sh(d, sid, "sleep %s & sleep %s & wait", a, b);
    /* Wait (inside the sandbox) until both children run. */
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s,s,s]}", "command", "python3", "args", "-c", PY_PS, "present", a, b));
    ck_assert_msg(contains(c->out, a) && contains(c->out, b), "children not running: %s", c->out);
    cmd_result_free(c);
    r = http_post(d, jpack("{s:i}", "signal", 15), "/v1/sandboxes/%s/%s/kill", sid, cid);
    expect_status(r, 200);
    http_resp_free(r);
    ck_assert_int_eq(sbx_cmd_wait(d, sid, cid), 143);
    /* The background children got the signal too. */
    c = sbxd_run(d, sid, jpack("{s:s,s:[s,s,s,s,s]}", "command", "python3", "args", "-c", PY_PS, "absent", a, b));
    ck_assert_msg(!contains(c->out, a) && !contains(c->out, b), "children survived the kill: %s", c->out);
    cmd_result_free(c);
    ck_assert(gone_from_host(a) && gone_from_host(b));
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_lifecycle_stop_kills_detached)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *c1, *c2;
    char a[16], b[16];
    struct cmd_result *logs;
    struct http_resp *r;

    unique_seconds(a, sizeof a);
    unique_seconds(b, sizeof b);
    c1 = sbx_detach(d, sid, sleep_cmd(a));
    /* One that ignores SIGTERM, as root of its nested user namespace. */
    c2 = sbx_detach(d, sid, jpack("{s:s,s:[s,s,s],s:b}", "command", "sh", "args", "-c",
                                  "trap '' TERM HUP INT; sleep \"$0\"; sleep \"$0\"", b, "sudo", 1));
    ck_assert_msg(sleeping(a) && sleeping(b), "control: the detached sleeps are not running on the host");
    r = http_post(d, NULL, "/v1/sandboxes/%s/stop", sid);
    expect_status(r, 200);
    http_resp_free(r);
    ck_assert_int_eq(sbx_cmd_wait(d, sid, c1), 137);
    ck_assert_int_eq(sbx_cmd_wait(d, sid, c2), 137);
    ck_assert_msg(gone_from_host(a) && gone_from_host(b), "a detached command outlived stop");
    logs = sbx_logs(d, sid, c1);
    ck_assert(logs->error_line);
    ck_assert_str_eq(error_code(logs), "sandbox_stopped");
    cmd_result_free(logs);
    free(c1);
    free(c2);
    free(sid);
    sbxd_stop(d);
}
END_TEST

struct follower {
    struct sbxd *d;
    const char *sid, *cid;
    struct ndjson *nd;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int lines;
};

static int follow_line(const char *line, size_t len, int64_t t, void *user)
{
    struct follower *f = user;
    (void)line;
    (void)len;
    (void)t;
    pthread_mutex_lock(&f->lock);
    f->lines++;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
    return 0;
}

static void *follow_main(void *arg)
{
    struct follower *f = arg;
    struct http_resp *r = http_stream(f->d, "GET", NULL, follow_line, f, "/v1/sandboxes/%s/cmd/%s/logs", f->sid,
                                      f->cid);
    http_resp_free(r);
    return NULL;
}

START_TEST(test_sbxd_lifecycle_stop_ends_streams)
{
    /* A logs reader following a running command is ended by stop. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *cid;
    struct follower f;
    pthread_t t;
    struct http_resp *r;
    struct cmd_result *logs;

    cid = sbx_detach_sh(d, sid, "echo started; exec sleep 300");
    memset(&f, 0, sizeof f);
    f.d = d;
    f.sid = sid;
    f.cid = cid;
    pthread_mutex_init(&f.lock, NULL);
    pthread_cond_init(&f.cond, NULL);
    ck_assert(pthread_create(&t, NULL, follow_main, &f) == 0);
    pthread_mutex_lock(&f.lock);
    while (f.lines == 0)
        pthread_cond_wait(&f.cond, &f.lock);
    pthread_mutex_unlock(&f.lock);
    r = http_post(d, NULL, "/v1/sandboxes/%s/stop", sid);
    expect_status(r, 200);
    http_resp_free(r);
    pthread_join(t, NULL); /* the stream ended (a hang is a Check timeout) */
    ck_assert_int_ge(f.lines, 2); /* "started", then the error line */
    logs = sbx_logs(d, sid, cid);
    ck_assert_str_eq(logs->out, "started\n");
    ck_assert(logs->error_line);
    cmd_result_free(logs);
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_lifecycle_max_sandboxes_429)
{
    const char *args[] = {"--max-sandboxes", "1", NULL};
    struct sbxd *d = sbxd_start(args, NULL);
    char *first = sbx_create(d, NULL), *second;
    struct http_resp *r = http_post(d, NULL, "/v1/sandboxes");
    long ra;

    expect_error(r, 429, "rate_limited");
    ck_assert_msg(r->retry_after[0], "429 without Retry-After");
    ra = strtol(r->retry_after, NULL, 10);
    ck_assert_msg(ra >= 0 && ra <= 20, "Retry-After %s: the SDK only retries for <= 20 s", r->retry_after);
    http_resp_free(r);
    r = http_post(d, NULL, "/v1/sandboxes/%s/stop", first);
    expect_status(r, 200);
    http_resp_free(r);
    ck_assert(sbx_wait_status(d, first, "stopped", 10000));
    second = sbx_create(d, NULL);
    free(first);
    free(second);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_lifecycle_sigterm_stops_every_sandbox)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char secs[3][16], rel[400];
    int64_t t0;
    DIR *dir;
    struct dirent *e;

    for (int i = 0; i < 3; i++) {
        char *sid = sbx_create(d, i == 2 ? jpack("{s:{s:s}}", "networkPolicy", "mode", "deny-all") : NULL);
        unique_seconds(secs[i], sizeof secs[i]);
        free(sbx_detach(d, sid, sleep_cmd(secs[i])));
        free(sid);
        ck_assert(sleeping(secs[i]));
    }
    t0 = mono_ms();
    sbxd_terminate(d); /* asserts exit status 0 */
    ck_assert_msg(mono_ms() - t0 < 20000, "SIGTERM took %lld ms", (long long)(mono_ms() - t0));
    for (int i = 0; i < 3; i++)
        ck_assert_msg(gone_from_host(secs[i]), "a sandbox process outlived sbxd");
    /* The sandboxes' filesystems are gone; their records stay. */
    snprintf(rel, sizeof rel, "%s/sandboxes", d->state);
    dir = opendir(rel);
    ck_assert(dir != NULL);
    while ((e = readdir(dir)) != NULL) {
        char root[700];
        if (e->d_name[0] == '.')
            continue;
        snprintf(root, sizeof root, "%s/%s/root", rel, e->d_name);
        ck_assert_msg(access(root, F_OK) != 0, "%s left behind", root);
    }
    closedir(dir);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_lifecycle_restart_keeps_records)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *s1 = sbx_create(d, jpack("{s:s}", "projectId", "prj_r"));
    char *s2, *s3, *s4, *snap, *ids[3], token[256], secs[16];
    struct http_resp *r;
    json_t *list;
    struct cmd_result *c;

    sbx_write_file(d, s1, "/vercel/sandbox/survivor.txt", "survived\n", 9, 0644);
    r = http_post(d, NULL, "/v1/sandboxes/%s/snapshot", s1);
    expect_status(r, 200);
    snap = strdup(json_string_value(json_object_get(json_object_get(r->json, "snapshot"), "id")));
    http_resp_free(r);
    s2 = sbx_create(d, jpack("{s:s}", "projectId", "prj_r"));
    unique_seconds(secs, sizeof secs);
    free(sbx_detach(d, s2, sleep_cmd(secs)));
    s3 = sbx_create(d, jpack("{s:s}", "projectId", "prj_r"));
    r = http_post(d, NULL, "/v1/sandboxes/%s/stop", s3);
    expect_status(r, 200);
    http_resp_free(r);
    ids[0] = s3;
    ids[1] = s2;
    ids[2] = s1;
    snprintf(token, sizeof token, "%s", d->token);

    ck_assert(sleeping(secs));
    sbxd_terminate(d);
    ck_assert(gone_from_host(secs));
    sbxd_restart(d);
    ck_assert_str_eq(d->token, token);

    /* Every earlier sandbox is listed, stopped, newest first. */
    r = http_get(d, "/v1/sandboxes?project=prj_r");
    expect_status(r, 200);
    list = json_object_get(r->json, "sandboxes");
    ck_assert_int_eq(json_array_size(list), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *s = json_array_get(list, i);
        ck_assert_str_eq(json_string_value(json_object_get(s, "id")), ids[i]);
        ck_assert_str_eq(json_string_value(json_object_get(s, "status")), "stopped");
        ck_assert_str_eq(json_string_value(json_object_get(s, "projectId")), "prj_r");
        ck_assert(json_is_integer(json_object_get(s, "stoppedAt")));
    }
    http_resp_free(r);
    r = http_post(d, jpack("{s:s}", "command", "true"), "/v1/sandboxes/%s/cmd", s2);
    expect_error(r, 410, "gone");
    http_resp_free(r);
    /* The snapshot survived and still makes sandboxes. */
    r = http_get(d, "/v1/sandboxes/snapshots/%s", snap);
    expect_status(r, 200);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r->json, "snapshot"), "status")), "created");
    http_resp_free(r);
    r = http_get(d, "/v1/sandboxes/snapshots?project=prj_r");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "snapshots")), 1);
    http_resp_free(r);
    s4 = sbx_create(d, jpack("{s:{s:s,s:s}}", "source", "type", "snapshot", "snapshotId", snap));
    c = sbx_sh(d, s4, "cat /vercel/sandbox/survivor.txt");
    ck_assert_str_eq(c->out, "survived\n");
    cmd_result_free(c);
    /* New sandboxes are listed before the old ones. */
    r = http_get(d, "/v1/sandboxes?limit=1");
    expect_status(r, 200);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(r->json, "sandboxes"), 0), "id")),
                     s4);
    http_resp_free(r);
    free(s1);
    free(s2);
    free(s3);
    free(s4);
    free(snap);
    sbxd_stop(d);
}
END_TEST

/* The commands of a stopped sandbox move to the state directory once
 * nothing reads them (--spill-after): read back, they are what they were,
 * output byte for byte, after a restart too; after --retain-output they
 * are gone, file and all. */
static bool file_is(const char *path, bool want)
{
    int64_t deadline = mono_ms() + 10000;
    while ((access(path, F_OK) == 0) != want) {
        if (mono_ms() > deadline)
            return false;
        usleep(50000);
    }
    return true;
}

static void expect_same_command(struct sbxd *d, const char *sid, const char *cid, const json_t *want,
                                const struct cmd_result *want_logs)
{
    struct http_resp *r = http_get(d, "/v1/sandboxes/%s/cmd/%s", sid, cid);
    struct cmd_result *c;
    expect_status(r, 200);
    ck_assert_msg(json_equal(json_object_get(r->json, "command"), (json_t *)want), "%s changed: %s", cid,
                  r->body);
    http_resp_free(r);
    ck_assert_int_eq(sbx_cmd_wait(d, sid, cid), (int)json_integer_value(json_object_get(want, "exitCode")));
    c = sbx_logs(d, sid, cid);
    ck_assert_uint_eq(c->out_len, want_logs->out_len);
    ck_assert_uint_eq(c->err_len, want_logs->err_len);
    ck_assert(memcmp(c->out, want_logs->out, c->out_len) == 0);
    ck_assert(memcmp(c->err, want_logs->err, c->err_len) == 0);
    ck_assert_uint_eq(c->logs->n, want_logs->logs->n);
    for (size_t i = 0; i < c->logs->n; i++)
        ck_assert(json_equal(c->logs->lines[i], want_logs->logs->lines[i]));
    cmd_result_free(c);
}

START_TEST(test_sbxd_lifecycle_stopped_output_moves_to_disk)
{
    const char *args[] = {"--spill-after", "0", NULL}, *expire[] = {"--retain-output", "1", NULL};
    struct sbxd *d = sbxd_start(args, NULL);
    char *sid = sbx_create(d, NULL), *cids[2], store[700], big[40001];
    struct cmd_result *logs[2];
    json_t *cmds[2];
    struct http_resp *r;

    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    /* Output in many chunks, both streams, multibyte characters, a
     * non-zero exit; and a command with a 40 KB argument and a cwd. */
    cids[0] = sbx_detach_sh(d, sid, "printf 'out1\\n'; printf 'err1\\n' >&2; head -c 300000 /dev/zero | tr '\\0' x; "
                                    "printf '\\303\\251 done\\n' >&2; exit 7");
    cids[1] = sbx_detach(d, sid, jpack("{s:s,s:[s,s,s],s:s}", "command", "sh", "args", "-c", "echo ${#0}; exit 3",
                                       big, "cwd", "/tmp"));
    ck_assert_int_eq(sbx_cmd_wait(d, sid, cids[1]), 3);
    ck_assert_int_eq(sbx_cmd_wait(d, sid, cids[0]), 7);
    for (int i = 0; i < 2; i++) {
        r = http_get(d, "/v1/sandboxes/%s/cmd/%s", sid, cids[i]);
        expect_status(r, 200);
        cmds[i] = json_incref(json_object_get(r->json, "command"));
        http_resp_free(r);
        logs[i] = sbx_logs(d, sid, cids[i]);
    }
    ck_assert_uint_eq(logs[0]->out_len, 5 + 300000);
    ck_assert_str_eq(logs[0]->err, "err1\n\xc3\xa9 done\n");
    ck_assert_str_eq(logs[1]->out, "40000\n");
    r = http_post(d, NULL, "/v1/sandboxes/%s/stop", sid);
    expect_status(r, 200);
    http_resp_free(r);
    ck_assert(sbx_wait_status(d, sid, "stopped", 15000));

    snprintf(store, sizeof store, "%s/sandboxes/%s/commands", d->state, sid);
    ck_assert_msg(file_is(store, true), "no command store %s", store);
    /* Read back from the store (a copy is loaded), then again from memory. */
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 2; i++)
            expect_same_command(d, sid, cids[i], cmds[i], logs[i]);
    r = http_get(d, "/v1/sandboxes/%s/cmd/cmd_nonexistent", sid);
    expect_error(r, 404, "not_found");
    http_resp_free(r);

    /* An sbxd started again on the same state still has them. */
    sbxd_terminate(d);
    sbxd_restart(d);
    for (int i = 0; i < 2; i++)
        expect_same_command(d, sid, cids[i], cmds[i], logs[i]);

    /* Past --retain-output: 410, and the file is gone. */
    sbxd_terminate(d);
    sbxd_set_args(d, expire);
    sbxd_restart(d);
    ck_assert_msg(file_is(store, false), "%s still there", store);
    r = http_get(d, "/v1/sandboxes/%s/cmd/%s", sid, cids[0]);
    expect_error(r, 410, "gone");
    http_resp_free(r);
    for (int i = 0; i < 2; i++) {
        json_decref(cmds[i]);
        cmd_result_free(logs[i]);
        free(cids[i]);
    }
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_lifecycle_sighup_keeps_serving)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL);
    struct cmd_result *c;

    ck_assert(kill(d->pid, SIGHUP) == 0);
    c = sbx_sh(d, sid, "echo alive");
    ck_assert_str_eq(c->out, "alive\n");
    cmd_result_free(c);
    ck_assert_str_eq(sbx_status_str(d, sid), "running");
    free(sid);
    sbxd_stop(d); /* and SIGTERM still stops it cleanly */
}
END_TEST

START_TEST(test_sbxd_lifecycle_one_server_per_state_dir)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char err[400];
    int st;

    snprintf(err, sizeof err, "%s/second.err", d->dir);
    st = host_sh("\"$SBXD\" --listen unix:%s/sock2 --state-dir %s >/dev/null 2>%s", d->dir, d->state, err);
    ck_assert_msg(st != 0, "a second sbxd started on the same state directory");
    ck_assert_int_eq(host_sh("grep -q 'another sbxd' %s", err), 0);
    /* The first one is unharmed. */
    {
        struct http_resp *r = http_get(d, "/v1/sandboxes");
        expect_status(r, 200);
        http_resp_free(r);
    }
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_lifecycle_listen_loopback_only)
{
    struct sbxd *d = sbxd_start(NULL, NULL); /* for a scratch directory and its cleanup */
    static const char *const addrs[] = {"0.0.0.0:0", "[::]:0", "192.0.2.1:0", "example.com:0"};

    for (size_t i = 0; i < sizeof addrs / sizeof addrs[0]; i++) {
        int st = host_sh("\"$SBXD\" --listen '%s' --state-dir %s/other-%zu >%s/out-%zu 2>&1", addrs[i], d->dir, i,
                         d->dir, i);
        ck_assert_msg(st != 0, "sbxd started listening on %s", addrs[i]);
        ck_assert_msg(host_sh("grep -q 'listening on' %s/out-%zu", d->dir, i) != 0, "it printed a listening line");
    }
    sbxd_stop(d);
}
END_TEST

struct worker {
    struct sbxd *d;
    int n;
    bool ok;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    char *sid = sbx_create(w->d, w->n % 2 ? jpack("{s:{s:s}}", "networkPolicy", "mode", "deny-all") : NULL);
    char path[64], want[64];
    struct http_resp *r;

    snprintf(path, sizeof path, "/vercel/sandbox/w%d.txt", w->n);
    snprintf(want, sizeof want, "worker %d\n", w->n);
    sbx_write_file(w->d, sid, path, want, strlen(want), 0644);
    for (int i = 0; i < 4; i++) {
        struct cmd_result *c = sbx_sh(w->d, sid, "cat %s; echo %d >&2", path, i);
        char err[16];
        snprintf(err, sizeof err, "%d\n", i);
        ck_assert_str_eq(c->out, want);
        ck_assert_str_eq(c->err, err);
        cmd_result_free(c);
    }
    r = sbx_fs_read(w->d, sid, path, NULL);
    expect_status(r, 200);
    ck_assert_str_eq(r->body, want);
    http_resp_free(r);
    r = http_post(w->d, NULL, "/v1/sandboxes/%s/stop", sid);
    expect_status(r, 200);
    http_resp_free(r);
    free(sid);
    w->ok = true;
    return NULL;
}

START_TEST(test_sbxd_lifecycle_concurrent_sandboxes)
{
    /* Eight clients at once: create, write, run, read, stop. */
    struct sbxd *d = sbxd_start(NULL, NULL);
    struct worker w[8];
    pthread_t t[8];
    struct http_resp *r;

    for (int i = 0; i < 8; i++) {
        w[i] = (struct worker){d, i, false};
        ck_assert(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        ck_assert(w[i].ok);
    }
    r = http_get(d, "/v1/sandboxes");
    expect_status(r, 200);
    ck_assert_int_eq(json_array_size(json_object_get(r->json, "sandboxes")), 8);
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

/* A crash (SIGKILL) leaves nothing running, and the next start clears what
 * could not go with the process: its cgroups. Mounts, loop devices,
 * sbxd-net and the ids' locks go with it by construction; checked too. */
START_TEST(test_sbxd_lifecycle_restart_after_kill_leaves_nothing)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), cg[1200] = "", line[512], marker[32];
    pid_t old = d->pid;
    FILE *f;
    bool gone = false, still;
    pid_t zombie;

    snprintf(marker, sizeof marker, "5%s", rand_hex(7));
    for (char *p = marker; *p; p++)
        if (*p < '0' || *p > '9')
            *p = (char)('1' + (*p - 'a'));
    free(sbx_detach(d, sid, jpack("{s:s,s:[s]}", "command", "sleep", "args", marker)));
    snprintf(line, sizeof line, "/proc/%d/cgroup", (int)old);
    f = fopen(line, "re");
    ck_assert(f != NULL);
    while (fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2 && strncmp(c1 + 1, "memory:", 7) == 0) {
            c2[1 + strcspn(c2 + 1, "\n")] = '\0';
            snprintf(cg, sizeof cg, "/sys/fs/cgroup/memory%s/sbxd-%d", strcmp(c2 + 1, "/") ? c2 + 1 : "",
                     (int)old);
        } else if (c2 && c1[1] == ':' && !cg[0]) {
            c2[1 + strcspn(c2 + 1, "\n")] = '\0';
            snprintf(cg, sizeof cg, "/sys/fs/cgroup%s/../sbxd-%d", c2 + 1, (int)old);
        }
    }
    fclose(f);
    ck_assert_msg(access(cg, F_OK) == 0, "no cgroup of sbxd at %s", cg);
    /* Its user-mode network helper, by pid (once sbxd dies it is re-parented). */
    snprintf(line, sizeof line,
             "for s in /proc/[0-9]*/stat; do read -r p c st pp rest < $s 2>/dev/null; "
             "[ \"$c\" = '(sbxd-net)' ] && [ \"$pp\" = %d ] && echo $p; done > '%s/net.pids'; true",
             (int)old, d->dir);
    ck_assert_int_eq(host_sh("%s", line), 0);
    ck_assert_msg(host_sh("test -s '%s/net.pids'", d->dir) == 0, "no sbxd-net under sbxd %d", (int)old);
    /* Dead but not reaped yet (a zombie, as when its parent is slow): it
     * is dead all the same. */
    zombie = sbxd_kill_unreaped(d);
    /* Its sandboxes and helpers die with it. The pattern's [%c] keeps grep
     * from finding its own command line. */
    for (int i = 0; i < 100 && !gone; i++) {
        gone = host_sh("grep -qs 'sleep.[%c]%s' /proc/[0-9]*/cmdline", marker[0], marker + 1) != 0 &&
               host_sh("for p in $(cat '%s/net.pids'); do kill -0 $p 2>/dev/null && exit 0; done; exit 1",
                       d->dir) != 0;
        if (!gone)
            usleep(50000);
    }
    ck_assert_msg(gone, "a sandbox process or sbxd-net outlived its sbxd");
    ck_assert_msg(host_sh("losetup -a | grep -q '%s'", d->state) != 0, "a loop device still holds a disk image");
    /* The control: its cgroup is still there, then the next start removes
     * it. Any sbxd starting meanwhile (a parallel test) removes it too:
     * then only the outcome can be checked. */
    still = access(cg, F_OK) == 0;
    sbxd_restart(d);
    ck_assert_msg(access(cg, F_OK) != 0, "the restarted sbxd left %s (its sbxd %d is a zombie)", cg, (int)zombie);
    if (still)
        ck_assert_msg(host_sh("grep -q 'cgroups left by sbxd processes that did not exit cleanly' '%s'",
                              d->log) == 0, "the restart did not say what it removed");
    ck_assert(waitpid(zombie, NULL, 0) == zombie);
    ck_assert_str_eq(sbx_status_str(d, sid), "stopped");
    ck_assert_msg(host_sh("grep -q '1 sandboxes were running when the previous sbxd ended' '%s'", d->log) == 0,
                  "the restart did not say it found a sandbox left running");
    free(sid);
    sbxd_stop(d);
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("sbxd_lifecycle");
    TCase *tc = sbx_tcase("lifecycle", 120);
    tcase_add_test(tc, test_sbxd_lifecycle_timeout_stops_sandbox);
    tcase_add_test(tc, test_sbxd_lifecycle_timeout_ends_wait_stream);
    tcase_add_test(tc, test_sbxd_lifecycle_extend_timeout_postpones_stop);
    tcase_add_test(tc, test_sbxd_lifecycle_default_timeout_option);
    tcase_add_test(tc, test_sbxd_lifecycle_kill_whole_process_group);
    tcase_add_test(tc, test_sbxd_lifecycle_stop_kills_detached);
    tcase_add_test(tc, test_sbxd_lifecycle_stop_ends_streams);
    tcase_add_test(tc, test_sbxd_lifecycle_max_sandboxes_429);
    tcase_add_test(tc, test_sbxd_lifecycle_sigterm_stops_every_sandbox);
    tcase_add_test(tc, test_sbxd_lifecycle_restart_keeps_records);
    tcase_add_test(tc, test_sbxd_lifecycle_stopped_output_moves_to_disk);
    tcase_add_test(tc, test_sbxd_lifecycle_restart_after_kill_leaves_nothing);
    tcase_add_test(tc, test_sbxd_lifecycle_concurrent_sandboxes);
    tcase_add_test(tc, test_sbxd_lifecycle_sighup_keeps_serving);
    tcase_add_test(tc, test_sbxd_lifecycle_one_server_per_state_dir);
    tcase_add_test(tc, test_sbxd_lifecycle_listen_loopback_only);
    suite_add_tcase(s, tc);
    return s;
}
