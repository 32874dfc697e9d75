/* SPDX-License-Identifier: MIT */
/*
 * conns: sbxd under many connections and odd requests. Long polls and log
 * streams hold no thread; command output holds no descriptor in sbxd;
 * connections without a token are capped, oldest closed first; past the
 * connection limit a 503 with Retry-After; silent connections time out;
 * command lines up to execve's limits run whole, larger ones are refused
 * before anything runs; old records are pruned; SIGTERM under load exits
 * cleanly.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* A connection to sbxd's unix socket that nobody has written to. */
static int raw_connect(const struct sbxd *d)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    ck_assert(strlen(d->sock) < sizeof sa.sun_path);
    memcpy(sa.sun_path, d->sock, strlen(d->sock) + 1);
    ck_assert_msg(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect %s: %s", d->sock,
                  strerror(errno));
    return fd;
}

static void raw_send(int fd, const char *text)
{
    size_t n = strlen(text);
    ck_assert_msg(write(fd, text, n) == (ssize_t)n, "write: %s", strerror(errno));
}

/* GET path with the token, on a new connection; the answer is left unread. */
static int raw_get(const struct sbxd *d, const char *path)
{
    char req[1024];
    int fd = raw_connect(d);
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: sbxd\r\nAuthorization: Bearer %s\r\n\r\n", path,
             d->token);
    raw_send(fd, req);
    return fd;
}

/* Whether the peer has closed fd (end of stream or reset), waiting at most ms. */
static bool closed_by_peer(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    char c;
    if (poll(&p, 1, ms) <= 0)
        return false;
    return recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK) <= 0;
}

/* Read fd to its end (at most ms), into a NUL-terminated string. */
static char *read_all(int fd, int ms)
{
    struct membuf b = {0};
    int64_t end = mono_ms() + ms;
    char buf[4096];
    membuf_add(&b, "", 0);
    while (mono_ms() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;
        if (poll(&p, 1, 200) <= 0)
            continue;
        n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        membuf_add(&b, buf, (size_t)n);
        /* A chunked response is complete at its last chunk. */
        if (strstr(b.p, "\r\n0\r\n\r\n"))
            break;
    }
    return b.p;
}

static long proc_status_field(pid_t pid, const char *name)
{
    char path[64], line[256];
    long v = -1;
    FILE *f;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    f = fopen(path, "re");
    ck_assert(f != NULL);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, name, strlen(name)) == 0 && line[strlen(name)] == ':')
            v = atol(line + strlen(name) + 1);
    fclose(f);
    return v;
}

static int count_fds(pid_t pid)
{
    char cmd[128];
    FILE *p;
    int n = -1;
    snprintf(cmd, sizeof cmd, "ls /proc/%d/fd | wc -l", (int)pid);
    p = popen(cmd, "r");
    ck_assert(p != NULL);
    ck_assert_int_eq(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* 300 long polls and 300 log streams on one running command: with a thread
 * per connection sbxd would need 600 threads. */
START_TEST(test_sbxd_conns_waits_hold_no_thread)
{
    enum { N = 300 };
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *cid = sbx_detach_sh(d, sid, "echo early; sleep 600");
    char path[256];
    int waits[N], logs[N];
    long threads;
    struct http_resp *r;

    for (int i = 0; i < N; i++) {
        snprintf(path, sizeof path, "/v1/sandboxes/%s/cmd/%s?wait=true", sid, cid);
        waits[i] = raw_get(d, path);
        snprintf(path, sizeof path, "/v1/sandboxes/%s/cmd/%s/logs", sid, cid);
        logs[i] = raw_get(d, path);
    }
    /* Every stream has sent what there is ("early"), then waits. */
    for (int i = 0; i < N; i++) {
        struct pollfd p = {.fd = logs[i], .events = POLLIN};
        ck_assert_msg(poll(&p, 1, 20000) == 1, "log stream %d sent nothing", i);
    }
    threads = proc_status_field(d->pid, "Threads");
    ck_assert_msg(threads < 120, "sbxd has %ld threads with %d long polls and %d log streams open", threads,
                  N, N);
    /* Still serving, and every waiter gets its answer when the command ends. */
    r = http_post(d, jpack("{s:i}", "signal", 9), "/v1/sandboxes/%s/cmd/%s/kill", sid, cid);
    ck_assert_int_eq(r->status, 200);
    http_resp_free(r);
    for (int i = 0; i < N; i++) {
        char *w = read_all(waits[i], 20000), *l = read_all(logs[i], 20000);
        ck_assert_msg(contains(w, "HTTP/1.1 200") && contains(w, "\"exitCode\":137"),
                      "long poll %d: %.300s", i, w);
        ck_assert_msg(contains(l, "HTTP/1.1 200") && contains(l, "early") && contains(l, "\r\n0\r\n\r\n"),
                      "log stream %d: %.300s", i, l);
        free(w);
        free(l);
        close(waits[i]);
        close(logs[i]);
    }
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* Output travels through the sandbox's init: no pipe per command in sbxd. */
START_TEST(test_sbxd_conns_commands_hold_no_descriptor)
{
    enum { N = 40 };
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), *cids[N];
    struct cmd_result *res;
    int before, after;

    free(sbx_detach_sh(d, sid, "true")); /* the first command's one-time costs */
    before = count_fds(d->pid);
    for (int i = 0; i < N; i++)
        cids[i] = sbx_detach_sh(d, sid, "echo out%d; echo err%d >&2; while [ ! -e /tmp/go ]; do sleep 0.1; done",
                                i, i);
    after = count_fds(d->pid);
    ck_assert_msg(after - before < 10, "sbxd's descriptors went from %d to %d for %d running commands",
                  before, after, N);
    /* And their output is all there, per stream. */
    res = sbx_sh(d, sid, "touch /tmp/go");
    cmd_result_free(res);
    for (int i = 0; i < N; i++) {
        char want[32];
        ck_assert_int_eq(sbx_cmd_wait(d, sid, cids[i]), 0);
        res = sbx_logs(d, sid, cids[i]);
        snprintf(want, sizeof want, "out%d\n", i);
        ck_assert_str_eq(res->out, want);
        snprintf(want, sizeof want, "err%d\n", i);
        ck_assert_str_eq(res->err, want);
        cmd_result_free(res);
        free(cids[i]);
    }
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_conns_unauthenticated_capped_oldest_first)
{
    enum { N = 100, CAP = 20 };
    const char *args[] = {"--max-unauthenticated", "20", NULL};
    struct sbxd *d = sbxd_start(args, NULL);
    int fds[N], closed = 0;
    struct http_resp *r;

    for (int i = 0; i < N; i++) {
        fds[i] = raw_connect(d);
        usleep(2000); /* accepted in this order */
    }
    /* A real client gets through meanwhile. */
    r = http_get(d, "/v1/sandboxes");
    ck_assert_int_eq(r->status, 200);
    http_resp_free(r);
    /* Each has 10 s to send a request; then the janitor (every 10 s) or the
     * next connection closes the oldest past the cap. */
    ck_assert_msg(closed_by_peer(fds[0], 30000), "the oldest idle connection is still open after 30 s");
    for (int i = 0; i < N; i++)
        closed += closed_by_peer(fds[i], i < N - CAP ? 2000 : 0);
    ck_assert_msg(closed >= N - CAP && closed <= N - CAP + 2, "%d of %d idle connections closed (cap %d)",
                  closed, N, CAP);
    for (int i = 0; i < N - CAP; i++)
        ck_assert_msg(closed_by_peer(fds[i], 0), "an older connection (%d) was kept", i);
    ck_assert_msg(!closed_by_peer(fds[N - 1], 0), "the newest connection was closed");
    for (int i = 0; i < N; i++)
        close(fds[i]);
    ck_assert_msg(host_sh("grep -q 'connections closed that had not authenticated' '%s'", d->log) == 0,
                  "no warning in sbxd's log");
    sbxd_stop(d);
}
END_TEST

/* A burst of clients that send their requests at once is not mistaken for
 * idle connections, however far past the cap. */
START_TEST(test_sbxd_conns_burst_of_clients_served)
{
    enum { N = 300 };
    const char *args[] = {"--max-unauthenticated", "16", NULL};
    struct sbxd *d = sbxd_start(args, NULL);
    int fds[N];

    for (int i = 0; i < N; i++)
        fds[i] = raw_get(d, "/v1/sandboxes");
    for (int i = 0; i < N; i++) {
        struct pollfd p = {.fd = fds[i], .events = POLLIN};
        char buf[512];
        ssize_t n = poll(&p, 1, 20000) == 1 ? read(fds[i], buf, sizeof buf - 1) : -1;
        buf[n > 0 ? n : 0] = '\0';
        ck_assert_msg(contains(buf, "HTTP/1.1 200"), "request %d of a burst: %s", i, buf);
        close(fds[i]);
    }
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_conns_over_limit_503_retry_after)
{
    enum { N = 24 };
    const char *args[] = {"--max-connections", "16", NULL};
    struct sbxd *d = sbxd_start(args, NULL);
    char *sid = sbx_create(d, NULL), *cid = sbx_detach_sh(d, sid, "sleep 600"), path[256];
    int fds[N], refused = 0;

    snprintf(path, sizeof path, "/v1/sandboxes/%s/cmd/%s/logs", sid, cid);
    for (int i = 0; i < N; i++) {
        fds[i] = raw_get(d, path);
        usleep(20000);
    }
    for (int i = 0; i < N; i++) {
        struct pollfd p = {.fd = fds[i], .events = POLLIN};
        char buf[2048];
        ssize_t n;
        ck_assert_msg(poll(&p, 1, 20000) == 1, "request %d got no answer", i);
        n = read(fds[i], buf, sizeof buf - 1);
        ck_assert_int_gt(n, 0);
        buf[n] = '\0';
        if (contains(buf, "HTTP/1.1 503")) {
            ck_assert_msg(contains(buf, "Retry-After: 1"), "a 503 without Retry-After: %s", buf);
            refused++;
        } else {
            ck_assert_msg(contains(buf, "HTTP/1.1 200"), "request %d: %.200s", i, buf);
        }
    }
    ck_assert_msg(refused >= N - 16 - 1 && refused < N, "%d of %d refused past a limit of 16", refused, N);
    for (int i = 0; i < N; i++)
        close(fds[i]);
    ck_assert_msg(host_sh("grep -q 'refused with 503' '%s'", d->log) == 0, "no warning in sbxd's log");
    free(cid);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_conns_silent_connection_times_out)
{
    const char *args[] = {"--read-timeout", "2", NULL};
    struct sbxd *d = sbxd_start(args, NULL);
    int fd = raw_connect(d);
    int64_t t0 = mono_ms();
    struct http_resp *r;

    raw_send(fd, "GET /v1/sandboxes HTTP/1.1\r\nHost: sbxd\r\n"); /* and never the rest */
    ck_assert_msg(closed_by_peer(fd, 15000), "a connection silent inside its headers was kept 15 s");
    ck_assert_msg(mono_ms() - t0 >= 1500, "closed after %lld ms, before the 2 s timeout",
                  (long long)(mono_ms() - t0));
    close(fd);
    r = http_get(d, "/v1/sandboxes");
    ck_assert_int_eq(r->status, 200);
    http_resp_free(r);
    sbxd_stop(d);
}
END_TEST

/* sh prints the sizes of its arguments: proof they arrived whole. */
static json_t *count_args(size_t n, size_t size, const char *marker)
{
    json_t *args = json_array();
    char *v = malloc(size + 1);
    ck_assert(v != NULL);
    memset(v, 'a', size);
    v[size] = '\0';
    json_array_append_new(args, json_string("-c"));
    json_array_append_new(args, json_sprintf("touch /tmp/%s; n=0; for a; do n=$((n+${#a})); done; echo $# $n",
                                             marker));
    json_array_append_new(args, json_string("sh"));
    for (size_t i = 0; i < n; i++)
        json_array_append_new(args, json_string(v));
    free(v);
    return jpack("{s:s,s:o,s:b}", "command", "sh", "args", args, "wait", 1);
}

START_TEST(test_sbxd_conns_large_command_lines)
{
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), marker[32];
    struct cmd_result *res;
    struct http_resp *r;

    /* One 33,000-byte argument: its start line is larger than a block. */
    res = sbxd_run(d, sid, count_args(1, 33000, "a1"));
    ck_assert_int_eq(res->exit_code, 0);
    ck_assert_str_eq(res->out, "1 33000\n");
    cmd_result_free(res);
    /* 1 MiB of arguments. */
    res = sbxd_run(d, sid, count_args(16, 65536, "a2"));
    ck_assert_int_eq(res->exit_code, 0);
    ck_assert_str_eq(res->out, "16 1048576\n");
    cmd_result_free(res);
    /* 100,000 small ones. */
    res = sbxd_run(d, sid, count_args(100000, 1, "a3"));
    ck_assert_int_eq(res->exit_code, 0);
    ck_assert_str_eq(res->out, "100000 100000\n");
    cmd_result_free(res);
    /* Past execve's limits: 400, and nothing ran. */
    snprintf(marker, sizeof marker, "big%s", rand_hex(6));
    r = http_post(d, count_args(1, 200000, marker), "/v1/sandboxes/%s/cmd", sid);
    expect_error(r, 400, "bad_request");
    ck_assert_msg(contains(r->body, "131071"), "the message does not name the limit: %s", r->body);
    http_resp_free(r);
    r = http_post(d, count_args(24, 100000, marker), "/v1/sandboxes/%s/cmd", sid);
    expect_error(r, 400, "bad_request");
    http_resp_free(r);
    res = sbx_sh(d, sid, "test -e /tmp/%s && echo ran || echo not", marker);
    ck_assert_str_eq(res->out, "not\n");
    cmd_result_free(res);
    free(sid);
    sbxd_stop(d);
}
END_TEST

START_TEST(test_sbxd_conns_old_records_pruned)
{
    const char *args[] = {"--retain-records", "1", NULL};
    struct sbxd *d = sbxd_start(NULL, NULL);
    char *sid = sbx_create(d, NULL), dir[600];
    struct http_resp *r = http_post(d, NULL, "/v1/sandboxes/%s/stop", sid);
    ck_assert_int_eq(r->status, 200);
    http_resp_free(r);
    ck_assert(sbx_wait_status(d, sid, "stopped", 30000));
    snprintf(dir, sizeof dir, "%s/sandboxes/%s", d->state, sid);
    ck_assert_int_eq(access(dir, F_OK), 0);
    /* Kept by default; with a retention of 1 ms the next start prunes it. */
    sbxd_terminate(d);
    sbxd_set_args(d, args);
    sbxd_restart(d);
    r = http_get(d, "/v1/sandboxes/%s", sid);
    ck_assert_int_eq(r->status, 404);
    http_resp_free(r);
    ck_assert_msg(access(dir, F_OK) != 0, "%s is still there", dir);
    ck_assert(host_sh("grep -q 'removed the records of 1 sandboxes' '%s'", d->log) == 0);
    free(sid);
    sbxd_stop(d);
}
END_TEST

/* A client that keeps sbxd busy until it is killed: the requests in reqs
 * (pipelined, the last one closing), on one connection after another, the
 * answers read and dropped. A forked child: no ck_assert here. */
static void busy_client(const struct sbxd *d, const char *reqs)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char buf[65536];
    memcpy(sa.sun_path, d->sock, strlen(d->sock) + 1);
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            if (fd >= 0)
                close(fd);
            usleep(1000);
            continue;
        }
        if (send(fd, reqs, strlen(reqs), MSG_NOSIGNAL) > 0)
            while (read(fd, buf, sizeof buf) > 0)
                ;
        close(fd);
    }
}

/* SIGTERM while requests keep coming on open connections, workers answer,
 * long polls and log streams wait: sbxd ends with status 0 every time. A
 * request that arrived while sbxd was stopping used to leave its connection
 * suspended when the HTTP server was stopped, and libmicrohttpd aborted the
 * process ("MHD_stop_daemon() called while we have suspended connections"). */
START_TEST(test_sbxd_conns_sigterm_under_load)
{
    enum { ROUNDS = 8, KINDS = 4, KIDS = 9 };
    for (int round = 0; round < ROUNDS; round++) {
        struct sbxd *d = sbxd_start(NULL, NULL);
        char *sid = sbx_create(d, NULL), *cid = sbx_detach_sh(d, sid, "sleep 600");
        char reqs[KINDS][4096];
        pid_t kids[KIDS];
        const char *body = "{\"runtime\":\"node22\"}";
        size_t o = 0;

        /* many short requests on each connection */
        for (int i = 0; i < 30; i++)
            o += (size_t)snprintf(reqs[0] + o, sizeof reqs[0] - o,
                                  "GET /v2/sandboxes?limit=1 HTTP/1.1\r\nHost: sbxd\r\nAuthorization: Bearer %s\r\n%s\r\n",
                                  d->token, i == 29 ? "Connection: close\r\n" : "");
        /* creates, each booting a sandbox while the stop begins */
        snprintf(reqs[1], sizeof reqs[1],
                 "POST /v2/sandboxes HTTP/1.1\r\nHost: sbxd\r\nAuthorization: Bearer %s\r\n"
                 "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                 d->token, strlen(body), body);
        /* a long poll and a log stream on the running command */
        snprintf(reqs[2], sizeof reqs[2],
                 "GET /v1/sandboxes/%s/cmd/%s?wait=true HTTP/1.1\r\nHost: sbxd\r\nAuthorization: Bearer %s\r\n"
                 "Connection: close\r\n\r\n",
                 sid, cid, d->token);
        snprintf(reqs[3], sizeof reqs[3],
                 "GET /v1/sandboxes/%s/cmd/%s/logs HTTP/1.1\r\nHost: sbxd\r\nAuthorization: Bearer %s\r\n"
                 "Connection: close\r\n\r\n",
                 sid, cid, d->token);
        for (int k = 0; k < KIDS; k++) {
            kids[k] = fork();
            ck_assert_int_ge(kids[k], 0);
            if (kids[k] == 0) {
                busy_client(d, reqs[k < KIDS - KINDS + 1 ? 0 : k - (KIDS - KINDS)]);
                _exit(0);
            }
        }
        usleep((useconds_t)(200 + 100 * (round % 5)) * 1000);
        sbxd_terminate(d); /* asserts a clean exit */
        for (int k = 0; k < KIDS; k++) {
            kill(kids[k], SIGKILL);
            waitpid(kids[k], NULL, 0);
        }
        free(cid);
        free(sid);
        sbxd_stop(d);
    }
}
END_TEST

Suite *sbx_test_suite(void)
{
    Suite *s = suite_create("sbxd_conns");
    TCase *tc = sbx_tcase("conns", 240);
    tcase_add_test(tc, test_sbxd_conns_waits_hold_no_thread);
    tcase_add_test(tc, test_sbxd_conns_commands_hold_no_descriptor);
    tcase_add_test(tc, test_sbxd_conns_unauthenticated_capped_oldest_first);
    tcase_add_test(tc, test_sbxd_conns_burst_of_clients_served);
    tcase_add_test(tc, test_sbxd_conns_over_limit_503_retry_after);
    tcase_add_test(tc, test_sbxd_conns_silent_connection_times_out);
    tcase_add_test(tc, test_sbxd_conns_large_command_lines);
    tcase_add_test(tc, test_sbxd_conns_old_records_pruned);
    suite_add_tcase(s, tc);
    tc = sbx_tcase("sigterm_under_load", 180);
    tcase_add_test(tc, test_sbxd_conns_sigterm_under_load);
    suite_add_tcase(s, tc);
    return s;
}
