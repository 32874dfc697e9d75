/* SPDX-License-Identifier: MIT */
/*
 * bench/sbxd: latency and capacity of sbxd, measured through its HTTP API on a
 * unix socket exactly as a client sees it.
 *
 *   create              POST /v1/sandboxes until the sandbox is running
 *   first command       then the first `true` in wait mode (both NDJSON lines)
 *   create -> first     the two together: what a job waits before its first step
 *   round trip          `true` in wait mode in a warm sandbox
 *   at once             N sandboxes created 16 at a time, then 16 commands
 *                       (sleep) started in each, all shown alive together
 *   isolation           what each create spent on the isolation layers, as
 *                       sbxd logs it (file system, /proc, network, seccomp)
 *
 * usage: bench-sbxd PATH-TO-SBXD [iterations]
 *
 * sbxd under bursts (10,000 followed commands at once, its memory before
 * and after, idle connections beside a working client) is the soak of
 * bench/client.c, run on its own with `meson compile -C build
 * bench-sbxd-soak`: it needs the client library's engine to follow that
 * many commands.
 */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "bench_sbxd.h"
#include "util/buf.h"

static char sock[512], token[256], dir[256];
static pid_t server;

static size_t collect(void *p, size_t size, size_t n, void *user)
{
    sbx__buf *b = user;
    if (sbx__buf_append(b, p, size * n) != SBX_OK)
        return 0;
    return size * n;
}

/* One request; returns the HTTP status and the body in out. */
static long http(CURL *h, const char *method, const char *path, const char *body, sbx__buf *out)
{
    char url[512], auth[300];
    struct curl_slist *hdr = NULL;
    long status = 0;

    snprintf(url, sizeof url, "http://sbxd%s", path);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    hdr = curl_slist_append(hdr, auth);
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    sbx__buf_clear(out);
    curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, sock);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPGET, body ? 0L : 1L);
    if (!body)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    return status;
}

static char *create_sandbox(CURL *h, sbx__buf *b)
{
    static int reported;
    json_t *j;
    char *id = NULL;
    long st = http(h, "POST", "/v1/sandboxes", "{\"projectId\":\"bench\"}", b);
    if (st != 200) {
        if (!__atomic_fetch_add(&reported, 1, __ATOMIC_RELAXED))
            fprintf(stderr, "bench-sbxd: create failed: HTTP %ld %s\n", st, b->data ? b->data : "");
        return NULL;
    }
    j = json_loads(b->data, 0, NULL);
    if (j)
        id = strdup(json_string_value(json_object_get(json_object_get(j, "sandbox"), "id")));
    json_decref(j);
    return id;
}

/* Run `true` in wait mode; returns its exit code or -1. */
static int run_true(CURL *h, const char *id, sbx__buf *b)
{
    char path[128];
    const char *nl;
    json_t *j;
    int code = -1;
    snprintf(path, sizeof path, "/v1/sandboxes/%s/cmd", id);
    if (http(h, "POST", path, "{\"command\":\"true\",\"args\":[],\"wait\":true}", b) != 200)
        return -1;
    nl = strchr(b->data, '\n');
    if (!nl)
        return -1;
    j = json_loads(nl + 1, JSON_DISABLE_EOF_CHECK, NULL);
    if (j && json_is_integer(json_object_get(json_object_get(j, "command"), "exitCode")))
        code = (int)json_integer_value(json_object_get(json_object_get(j, "command"), "exitCode"));
    json_decref(j);
    return code;
}

static void stop_sandbox(CURL *h, const char *id, sbx__buf *b)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/sandboxes/%s/stop", id);
    http(h, "POST", path, "", b);
}

static void report(const char *what, double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    printf("  %-22s p50 %7.2f ms   p95 %7.2f ms   (n=%d)\n", what, v[n / 2] * 1e3,
           v[(int)(n * 0.95)] * 1e3, n);
}

static int start_server(const char *bin)
{
    /* info: one line per sandbox, with what its isolation cost */
    static const char *const extra[] = {"--max-sandboxes", "512", NULL};
    char listen[600], url[600];
    snprintf(dir, sizeof dir, "/tmp/bench-sbxd.XXXXXX");
    if (!mkdtemp(dir) || chmod(dir, 0711) < 0)
        return -1;
    snprintf(sock, sizeof sock, "%s/sock", dir);
    snprintf(listen, sizeof listen, "unix:%s", sock);
    server = bench_sbxd_start("bench-sbxd", bin, dir, listen, "info", extra, url, sizeof url, token, sizeof token);
    return server > 0 ? 0 : -1;
}

/* ---- capacity: N sandboxes x 16 commands alive at once ---- */

#define PER_SANDBOX 16
#define CAP_THREADS 16
#define HOLD_S 20 /* commands sleep this long: longer than starting them all takes */

struct cap {
    int n;
    char **ids;            /* sandboxes */
    char (*cmds)[64];      /* n * PER_SANDBOX command ids */
    int64_t *started;      /* their startedAt */
    double *t_create;
    int next;              /* work queue position */
    pthread_mutex_t lk;
};

static int take(struct cap *c)
{
    int i;
    pthread_mutex_lock(&c->lk);
    i = c->next++;
    pthread_mutex_unlock(&c->lk);
    return i;
}

static void *cap_create(void *arg)
{
    struct cap *c = arg;
    CURL *h = curl_easy_init();
    sbx__buf b = SBX__BUF_INIT;
    for (int i; (i = take(c)) < c->n;) {
        double t0 = bench_now();
        c->ids[i] = create_sandbox(h, &b);
        c->t_create[i] = bench_now() - t0;
    }
    sbx__buf_free(&b);
    curl_easy_cleanup(h);
    return NULL;
}

static void *cap_start(void *arg)
{
    struct cap *c = arg;
    CURL *h = curl_easy_init();
    sbx__buf b = SBX__BUF_INIT;
    char path[160], body[128];
    snprintf(body, sizeof body, "{\"command\":\"sleep\",\"args\":[\"%d\"]}", HOLD_S);
    for (int k; (k = take(c)) < c->n * PER_SANDBOX;) {
        const char *id = c->ids[k / PER_SANDBOX];
        json_t *r, *cmd;
        if (!id)
            continue;
        snprintf(path, sizeof path, "/v1/sandboxes/%.40s/cmd", id);
        if (http(h, "POST", path, body, &b) != 200)
            continue;
        r = json_loads(b.data, 0, NULL);
        cmd = json_object_get(r, "command");
        snprintf(c->cmds[k], sizeof c->cmds[k], "%s", json_string_value(json_object_get(cmd, "id")));
        c->started[k] = json_integer_value(json_object_get(cmd, "startedAt"));
        json_decref(r);
    }
    sbx__buf_free(&b);
    curl_easy_cleanup(h);
    return NULL;
}

static void *cap_stop(void *arg)
{
    struct cap *c = arg;
    CURL *h = curl_easy_init();
    sbx__buf b = SBX__BUF_INIT;
    for (int i; (i = take(c)) < c->n;)
        if (c->ids[i])
            stop_sandbox(h, c->ids[i], &b);
    sbx__buf_free(&b);
    curl_easy_cleanup(h);
    return NULL;
}

static double run_phase(struct cap *c, void *(*fn)(void *))
{
    pthread_t t[CAP_THREADS];
    double t0 = bench_now();
    c->next = 0;
    for (int i = 0; i < CAP_THREADS; i++)
        pthread_create(&t[i], NULL, fn, c);
    for (int i = 0; i < CAP_THREADS; i++)
        pthread_join(t[i], NULL);
    return bench_now() - t0;
}

/* N sandboxes, then 16 commands in each, all alive together: every command
 * started (by its startedAt) before the first could have ended. */
static void capacity(int n)
{
    struct cap c;
    int created = 0, started = 0;
    int64_t first = 0, last = 0;
    double t_create, t_start, t_stop;

    memset(&c, 0, sizeof c);
    c.n = n;
    c.ids = calloc((size_t)n, sizeof *c.ids);
    c.cmds = calloc((size_t)n * PER_SANDBOX, sizeof *c.cmds);
    c.started = calloc((size_t)n * PER_SANDBOX, sizeof *c.started);
    c.t_create = calloc((size_t)n, sizeof *c.t_create);
    pthread_mutex_init(&c.lk, NULL);

    t_create = run_phase(&c, cap_create);
    t_start = run_phase(&c, cap_start);
    for (int i = 0; i < n; i++)
        created += c.ids[i] != NULL;
    for (int k = 0; k < n * PER_SANDBOX; k++) {
        if (!c.cmds[k][0])
            continue;
        started++;
        if (!first || c.started[k] < first)
            first = c.started[k];
        if (c.started[k] > last)
            last = c.started[k];
    }
    t_stop = run_phase(&c, cap_stop);
    printf("  %3d sandboxes x %d commands: %d created in %.2f s (%.1f/s), %d/%d commands started "
           "in %.2f s (%.0f/s), all alive at once: %s, stopped in %.2f s\n",
           n, PER_SANDBOX, created, t_create, created / t_create, started, n * PER_SANDBOX, t_start,
           started / t_start,
           started == n * PER_SANDBOX && created == n && last - first < HOLD_S * 1000 ? "yes" : "NO",
           t_stop);
    report("  create, 16 in flight", c.t_create, n);
    for (int i = 0; i < n; i++)
        free(c.ids[i]);
    free(c.ids);
    free(c.cmds);
    free(c.started);
    free(c.t_create);
    pthread_mutex_destroy(&c.lk);
}

/* The isolation phases of every create, from sbxd's "running" log lines
 * (sbxd builds without them print nothing here). */
static void report_isolation(void)
{
    static const char *const names[] = {"file system", "/proc", "network", "seccomp"};
    char path[400], line[1024];
    double *v[4], total[4096];
    size_t n = 0;
    FILE *f;

    snprintf(path, sizeof path, "%s/sbxd.log", dir);
    if (!(f = fopen(path, "r")))
        return;
    for (int k = 0; k < 4; k++)
        v[k] = calloc(4096, sizeof *v[k]);
    while (n < 4096 && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "isolation ms: file system ");
        double a, b, c, d;
        if (p && sscanf(p, "isolation ms: file system %lf, /proc %lf, network %lf, seccomp %lf", &a, &b, &c,
                        &d) == 4) {
            v[0][n] = a / 1e3, v[1][n] = b / 1e3, v[2][n] = c / 1e3, v[3][n] = d / 1e3;
            total[n++] = (a + b + c + d) / 1e3;
        }
    }
    fclose(f);
    if (n) {
        printf("  isolation, per create (from sbxd's log, the sequential creates above):\n");
        for (int k = 0; k < 4; k++)
            report(names[k], v[k], (int)n);
        report("all layers", total, (int)n);
    }
    for (int k = 0; k < 4; k++)
        free(v[k]);
}

int main(int argc, char **argv)
{
    int iters = argc > 2 ? atoi(argv[2]) : 40, rt_n = 300;
    double *create, *first, *total, *rt;
    CURL *h;
    sbx__buf b = SBX__BUF_INIT;
    char *id;

    if (argc < 2) {
        fprintf(stderr, "usage: bench-sbxd PATH-TO-SBXD [iterations]\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (start_server(argv[1]) < 0) {
        bench_sbxd_stop("bench-sbxd", server, dir);
        return 1;
    }
    h = curl_easy_init();
    create = calloc((size_t)iters, sizeof *create);
    first = calloc((size_t)iters, sizeof *first);
    total = calloc((size_t)iters, sizeof *total);
    rt = calloc((size_t)rt_n, sizeof *rt);

    /* Warm-up: page cache, the first bwrap. */
    for (int i = 0; i < 3; i++) {
        id = create_sandbox(h, &b);
        if (id) {
            run_true(h, id, &b);
            stop_sandbox(h, id, &b);
        }
        free(id);
    }
    for (int i = 0; i < iters; i++) {
        double t0 = bench_now(), t1, t2;
        id = create_sandbox(h, &b);
        t1 = bench_now();
        if (!id || run_true(h, id, &b) != 0) {
            fprintf(stderr, "bench-sbxd: create/run failed: %s\n", b.data ? b.data : "");
            return 1;
        }
        t2 = bench_now();
        create[i] = t1 - t0;
        first[i] = t2 - t1;
        total[i] = t2 - t0;
        stop_sandbox(h, id, &b);
        free(id);
    }
    id = create_sandbox(h, &b);
    for (int i = 0; i < rt_n && id; i++) {
        double t0 = bench_now();
        if (run_true(h, id, &b) != 0)
            return 1;
        rt[i] = bench_now() - t0;
    }
    if (id)
        stop_sandbox(h, id, &b);
    free(id);

    printf("bench/sbxd: sbxd over a unix socket, libcurl client, %ld CPUs\n",
           sysconf(_SC_NPROCESSORS_ONLN));
    report("create", create, iters);
    report("first command", first, iters);
    report("create -> first done", total, iters);
    report("`true` round trip", rt, rt_n);
    report_isolation();
    capacity(64);
    capacity(128);

    bench_sbxd_stop("bench-sbxd", server, dir);
    sbx__buf_free(&b);
    curl_easy_cleanup(h);
    curl_global_cleanup();
    return 0;
}
