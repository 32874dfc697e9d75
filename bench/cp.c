/* SPDX-License-Identifier: MIT */
/*
 * bench/cp: copying a large file into and out of a sandbox through the
 * library, against curl doing the same requests, in the same run, against
 * the same sbxd (one this program starts, on a unix socket).
 *
 *   upload    library: sbx_sandbox_upload() of the file (a gzip tar made
 *                      while it is sent; lib/client/tarball.c)
 *             peer:    tar czf - FILE | curl --data-binary @- .../fs/write
 *                      (tar's gzip: level 6), and the same with gzip -1
 *   download  library: sbx_sandbox_download() (a temporary file beside the
 *                      target, fsynced, renamed into place)
 *             peer:    curl .../fs/read -o FILE (the protocol sends the
 *                      file's bytes as they are: nothing to untar), and the
 *                      same followed by a sync of the file, which is what
 *                      the library's fsync costs
 *
 * Two files of --mb MB each: "text" (lines of words and numbers, which gzip
 * shrinks to about 40%) and "random" (which it cannot shrink). Each figure
 * is the median of --rounds rounds, the library and the peer alternating;
 * every copy is checked byte for byte against the original, outside the
 * timing. Besides the wall time: the CPU of this process (the library),
 * of the peer's processes (tar, gzip, curl) and of sbxd, per copy. "gen"
 * is the library's body generated once with no server (sbx__tar_prepare,
 * internal): an upload makes it twice, once to learn its Content-Length and
 * once while it is sent.
 *
 * usage: bench-cp PATH-TO-SBXD [--mb N] [--rounds N] [--only text|random]
 * Needs tar, gzip and curl in PATH. Run it directly (not under meson test:
 * MALLOC_PERTURB_ slows every allocation).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sbxrun/sbxrun.h>

#include "bench.h"
#include "bench_sbxd.h"
#include "client/tarball.h"

#define MAX_ROUNDS 15

static char dir[256], sock[300], token[256];
static pid_t sbxd_pid;

static void stop_sbxd(void)
{
    bench_sbxd_stop("bench-cp", sbxd_pid, dir);
    sbxd_pid = 0;
}

static int start_sbxd(const char *bin)
{
    char listen[320], url[600];
    snprintf(dir, sizeof dir, "/tmp/bench-cp.XXXXXX");
    /* sandboxes run under ids of their own: they pass through to the state */
    if (!mkdtemp(dir) || chmod(dir, 0711) < 0)
        return -1;
    snprintf(sock, sizeof sock, "%s/sbxd.sock", dir);
    snprintf(listen, sizeof listen, "unix:%s", sock);
    sbxd_pid = bench_sbxd_start("bench-cp", bin, dir, listen, "warn", NULL, url, sizeof url, token, sizeof token);
    return sbxd_pid > 0 ? 0 : -1;
}

/* ---- the files ---------------------------------------------------------------------- */

static int make_file(const char *path, size_t size, bool text)
{
    static const char *const words[] = {"the", "request", "sandbox", "return", "static", "const", "error",
                                        "status", "buffer", "file", "upload", "download", "server",
                                        "client", "int", "size_t", "if", "else", "for", "while"};
    uint64_t seed = text ? 1 : 2;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 256);
    FILE *f = fopen(path, "w");
    if (!buf || !f) {
        free(buf);
        if (f)
            fclose(f);
        return -1;
    }
    for (size_t done = 0; done < size;) {
        if (text) {
            /* a line of 6-15 words and a number or two */
            int k = 6 + (int)(bench_rand(&seed) % 10);
            for (int i = 0; i < k; i++) {
                uint32_t r = bench_rand(&seed);
                if (r % 7 == 0)
                    n += (size_t)sprintf(buf + n, "%u ", r % 100000);
                else
                    n += (size_t)sprintf(buf + n, "%s ", words[r % (sizeof words / sizeof words[0])]);
            }
            buf[n - 1] = '\n';
        } else {
            for (int i = 0; i < 16; i++) {
                uint32_t r = bench_rand(&seed);
                memcpy(buf + n, &r, 4);
                n += 4;
            }
        }
        if (n >= cap || done + n >= size) {
            size_t w = size - done < n ? size - done : n;
            if (fwrite(buf, 1, w, f) != w)
                break;
            done += w;
            n = 0;
        }
    }
    free(buf);
    return fclose(f) == 0 ? 0 : -1;
}

static int same_files(const char *a, const char *b)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

/* ---- CPU ---------------------------------------------------------------------------- */

struct cpu {
    double self, children, server;
};

static double tv(struct timeval t)
{
    return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

static double server_cpu(void)
{
    char path[64], buf[1024], *p;
    unsigned long ut = 0, st = 0;
    FILE *f;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)sbxd_pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(buf, sizeof buf, f))
        buf[0] = '\0';
    fclose(f);
    p = strrchr(buf, ')');
    /* after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static struct cpu cpu_now(void)
{
    struct rusage s, c;
    getrusage(RUSAGE_SELF, &s);
    getrusage(RUSAGE_CHILDREN, &c);
    return (struct cpu){tv(s.ru_utime) + tv(s.ru_stime), tv(c.ru_utime) + tv(c.ru_stime), server_cpu()};
}

static struct cpu cpu_since(struct cpu a)
{
    struct cpu b = cpu_now();
    return (struct cpu){b.self - a.self, b.children - a.children, b.server - a.server};
}

/* ---- one way of copying ------------------------------------------------------------- */

struct way {
    const char *name;
    double wall[MAX_ROUNDS];
    struct cpu cpu[MAX_ROUNDS];
    int n;
};

static void record(struct way *w, double t0, struct cpu c0)
{
    w->wall[w->n] = bench_now() - t0;
    w->cpu[w->n] = cpu_since(c0);
    w->n++;
}

static double med_wall(const struct way *w)
{
    double v[MAX_ROUNDS];
    memcpy(v, w->wall, sizeof v);
    qsort(v, (size_t)w->n, sizeof v[0], cmp_double);
    return median(v, w->n);
}

static struct cpu med_cpu(const struct way *w)
{
    double a[3][MAX_ROUNDS];
    for (int i = 0; i < w->n; i++) {
        a[0][i] = w->cpu[i].self;
        a[1][i] = w->cpu[i].children;
        a[2][i] = w->cpu[i].server;
    }
    for (int k = 0; k < 3; k++)
        qsort(a[k], (size_t)w->n, sizeof a[k][0], cmp_double);
    return (struct cpu){median(a[0], w->n), median(a[1], w->n), median(a[2], w->n)};
}

static void row(const struct way *w, size_t size, double ref)
{
    double t = med_wall(w);
    struct cpu c = med_cpu(w);
    printf("  %-34s %7.2f s %8.1f MB/s  cpu: client %5.2f s, peer %5.2f s, sbxd %5.2f s", w->name, t,
           (double)size / 1e6 / t, c.self, c.children, c.server);
    if (ref > 0)
        printf("  lib/peer %.2f", ref / t); /* times: > 1, the library is slower */
    printf("\n");
}

static int run_sh(const char *cmd)
{
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "bench-cp: failed (%d): %s\n", rc, cmd);
    return rc == 0 ? 0 : -1;
}

/* The library's body generated once, with no server: what each of the
 * upload's two passes costs. */
static int gen_once(const char *file, double *wall, double *cpu, uint64_t *size)
{
    sbx__tar *t = sbx__tar_new();
    sbx__err err = {0};
    struct cpu c0 = cpu_now();
    double t0 = bench_now();
    int rc = -1;
    if (t && sbx__tar_add_path(t, file, "x", &err) == SBX_OK && sbx__tar_prepare(t, 0, size, &err) == SBX_OK)
        rc = 0;
    else
        fprintf(stderr, "bench-cp: generating the body: %s\n", sbx__err_msg(&err));
    *wall = bench_now() - t0;
    *cpu = cpu_since(c0).self;
    sbx__tar_free(t);
    sbx__err_free(&err);
    return rc;
}

static int bench_file(sbx_sandbox *s, const char *kind, size_t size, int rounds)
{
    char file[400], got[400], cmd[3000], base[400], auth[300];
    struct way up_lib = {.name = "upload   library"}, up_peer = {.name = "upload   tar czf | curl"},
               up_peer1 = {.name = "upload   tar cf | gzip -1 | curl"}, down_lib = {.name = "download library"},
               down_peer = {.name = "download curl -o"}, down_sync = {.name = "download curl -o; sync FILE"};
    const char *id = sbx_sandbox_id(s);
    double gen_wall, gen_cpu;
    uint64_t body = 0;

    snprintf(file, sizeof file, "%s/%s.bin", dir, kind);
    snprintf(got, sizeof got, "%s/got.bin", dir);
    if (make_file(file, size, strcmp(kind, "text") == 0) < 0)
        return fprintf(stderr, "bench-cp: cannot write %s\n", file), -1;
    if (gen_once(file, &gen_wall, &gen_cpu, &body) < 0)
        return -1;
    snprintf(base, sizeof base, "curl -sS --fail --unix-socket '%s' http://sbxd/v2/sandboxes/sessions/%s", sock, id);
    snprintf(auth, sizeof auth, "-H 'Authorization: Bearer %s'", token);

    for (int r = 0; r < rounds; r++) {
        struct cpu c0;
        double t0;
        /* Upload: the library and both peers write the same file's bytes. */
        for (int k = 0; k < 3; k++) {
            int which = (k + r) % 3; /* alternate the order */
            c0 = cpu_now();
            t0 = bench_now();
            if (which == 0) {
                if (sbx_sandbox_upload(s, file, "/vercel/sandbox/lib.bin") != SBX_OK)
                    return fprintf(stderr, "bench-cp: upload: %s\n", sbx_sandbox_last_error(s)), -1;
                record(&up_lib, t0, c0);
            } else {
                snprintf(cmd, sizeof cmd,
                         "cd '%s' && tar cf - %s.bin | gzip -%d | %s/fs/write %s -H 'Content-Type: application/gzip' "
                         "-H 'x-cwd: /vercel/sandbox/peer' --data-binary @- -o /dev/null",
                         dir, kind, which == 1 ? 6 : 1, base, auth);
                if (run_sh(cmd) < 0)
                    return -1;
                record(which == 1 ? &up_peer : &up_peer1, t0, c0);
            }
        }
        /* Download: each way to its own file, checked, removed. */
        for (int k = 0; k < 3; k++) {
            int which = (k + r) % 3;
            c0 = cpu_now();
            t0 = bench_now();
            if (which == 0) {
                if (sbx_sandbox_download(s, "/vercel/sandbox/lib.bin", got) != SBX_OK)
                    return fprintf(stderr, "bench-cp: download: %s\n", sbx_sandbox_last_error(s)), -1;
                record(&down_lib, t0, c0);
            } else {
                snprintf(cmd, sizeof cmd,
                         "%s/fs/read %s -H 'Content-Type: application/json' "
                         "--data '{\"path\":\"/vercel/sandbox/peer/%s.bin\"}' -o '%s'%s%s%s",
                         base, auth, kind, got, which == 2 ? " && sync '" : "", which == 2 ? got : "",
                         which == 2 ? "'" : "");
                if (run_sh(cmd) < 0)
                    return -1;
                record(which == 1 ? &down_peer : &down_sync, t0, c0);
            }
            if (!same_files(file, got))
                return fprintf(stderr, "bench-cp: the %s copy differs from the original\n",
                               which == 0 ? "library's" : "peer's"), -1;
            unlink(got);
        }
    }
    printf("\n%s: %zu MB; the library's body %.1f MB (%.0f%%); generated alone in %.2f s (%.2f s CPU)\n", kind,
           size / 1000000, (double)body / 1e6, 100.0 * (double)body / (double)size, gen_wall, gen_cpu);
    row(&up_lib, size, 0);
    row(&up_peer, size, med_wall(&up_lib));
    row(&up_peer1, size, med_wall(&up_lib));
    row(&down_lib, size, 0);
    row(&down_peer, size, med_wall(&down_lib));
    row(&down_sync, size, med_wall(&down_lib));
    unlink(file);
    return 0;
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    size_t mb = 200;
    int rounds = 3, rc = 0;
    sbx_client *c = NULL;
    sbx_sandbox *s = NULL;
    char ep[320];

    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: bench-cp PATH-TO-SBXD [--mb N] [--rounds N] [--only text|random]\n");
        return 2;
    }
    for (int a = 2; a < argc; a++) {
        if (strcmp(argv[a], "--mb") == 0 && a + 1 < argc && atoi(argv[a + 1]) > 0)
            mb = (size_t)atoi(argv[++a]);
        else if (strcmp(argv[a], "--rounds") == 0 && a + 1 < argc && atoi(argv[a + 1]) > 0 &&
                 atoi(argv[a + 1]) <= MAX_ROUNDS)
            rounds = atoi(argv[++a]);
        else if (strcmp(argv[a], "--only") == 0 && a + 1 < argc)
            only = argv[++a];
        else
            return fprintf(stderr, "bench-cp: unknown option %s\n", argv[a]), 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (start_sbxd(argv[1]) < 0) {
        stop_sbxd();
        return 1;
    }
    snprintf(ep, sizeof ep, "unix:%s", sock);
    c = sbx_client_new();
    s = c ? sbx_sandbox_new(c) : NULL;
    if (!s || sbx_client_set_endpoint(c, ep) != SBX_OK || sbx_client_set_credentials(c, token, NULL, NULL) != SBX_OK ||
        sbx_sandbox_set_timeout_ms(s, 3600 * 1000) != SBX_OK || sbx_sandbox_create(s) != SBX_OK) {
        fprintf(stderr, "bench-cp: cannot create a sandbox: %s\n",
                s ? sbx_sandbox_last_error(s) : "out of memory");
        rc = 1;
        goto out;
    }
    printf("bench/cp: a %zu MB file into and out of one sandbox of a local sbxd (%s), %d round%s,\n"
           "medians; %ld CPUs. lib/peer: the library's time over the peer's (target: at most 1.2).\n",
           mb, ep, rounds, rounds > 1 ? "s" : "", sysconf(_SC_NPROCESSORS_ONLN));
    if (!only || strcmp(only, "text") == 0)
        rc |= bench_file(s, "text", mb * 1000000, rounds) < 0;
    if (!only || strcmp(only, "random") == 0)
        rc |= bench_file(s, "random", mb * 1000000, rounds) < 0;
    sbx_sandbox_stop(s);
out:
    sbx_sandbox_free(s);
    sbx_client_free(c);
    stop_sbxd();
    return rc;
}
