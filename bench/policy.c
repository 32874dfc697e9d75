/* SPDX-License-Identifier: MIT */
/*
 * bench/policy: decisions per second of sbx_policy_check() on a realistic
 * mix of what verification jobs run (git, bun, sed, node, rg, ls, cat, a
 * package exec, about a fifth denied), one thread and then four threads
 * sharing one policy. Best of RUNS; the mix is checked for the expected
 * decisions first so the figure is for correct answers.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sbxrun/sbxrun.h>

#include "bench.h"

#define RUNS 5
#define ROUNDS 20000 /* passes over the mix per run */
#define THREADS 4

struct item {
    const char *argv[12];
    const char *cwd;
    int allow;
};

static const struct item mix[] = {
    {{"git", "clone", "--depth=1", "https://github.com/acme/app.git", "."}, NULL, 1},
    {{"git", "apply", "--check", "patches/0001-fix.patch"}, NULL, 1},
    {{"git", "-c", "user.name=bot", "-c", "user.email=bot@example.com", "commit", "-m", "fix: handle /api/v1 paths"},
     NULL, 1},
    {{"git", "diff", "--stat", "origin/main...HEAD", "--", "src/"}, NULL, 1},
    {{"git", "status", "--porcelain"}, "/vercel/sandbox/app", 1},
    {{"git", "log", "--format=%H %s", "-n", "20"}, NULL, 1},
    {{"bun", "install", "--frozen-lockfile"}, NULL, 1},
    {{"bun", "run", "lint"}, NULL, 1},
    {{"bun", "test", "--coverage", "tests/unit"}, NULL, 1},
    {{"bun", "build", "./src/index.ts", "--outdir=dist"}, NULL, 1},
    {{"node", "--test", "test/"}, "/vercel/sandbox/app", 1},
    {{"node", "-r", "./setup.js", "scripts/check.mjs"}, NULL, 1},
    {{"sed", "-i", "-e", "s|/old/path|/new/path|g", "src/config.ts"}, NULL, 1},
    {{"rg", "-n", "--glob", "*.ts", "TODO|FIXME", "src"}, NULL, 1},
    {{"ls", "-la", "dist"}, NULL, 1},
    {{"cat", "package.json"}, NULL, 1},
    {{"bunx", "eslint@9.14.0", "src"}, NULL, 1},
    {{"git", "-c", "core.sshCommand=sh -c id", "fetch"}, NULL, 0},
    {{"cat", "../../etc/passwd"}, NULL, 0},
    {{"node", "-e", "require('child_process').exec('id')"}, NULL, 0},
    {{"rg", "--pre", "sh", "x"}, NULL, 0},
    {{"npx", "cowsay", "hi"}, NULL, 0},
    {{"sed", "s/x/y/w /tmp/out", "a.txt"}, NULL, 0},
};
#define NMIX (sizeof mix / sizeof mix[0])

static size_t argc_of(const struct item *it)
{
    size_t n = 0;
    while (n < 12 && it->argv[n])
        n++;
    return n;
}

static size_t argcs[NMIX];

/* One pass over the mix ROUNDS times; returns the number of denials. */
static unsigned long run(const sbx_policy *p)
{
    unsigned long denied = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (size_t i = 0; i < NMIX; i++)
            if (sbx_policy_check(p, "verify.lint", argcs[i], mix[i].argv, mix[i].cwd, NULL, NULL, 0) != SBX_OK)
                denied++;
    return denied;
}

static void *thread_main(void *arg)
{
    run(arg);
    return NULL;
}

int main(void)
{
    sbx_policy *p = sbx_policy_new();
    double best1 = 1e9, bestn = 1e9;
    unsigned long want_denied = 0;
    if (!p || sbx_policy_allow_package(p, "verify.lint", "eslint@9.14.0") != SBX_OK)
        return 1;
    for (size_t i = 0; i < NMIX; i++) {
        sbx_policy_reason why;
        char msg[256];
        sbx_status st;
        argcs[i] = argc_of(&mix[i]);
        st = sbx_policy_check(p, "verify.lint", argcs[i], mix[i].argv, mix[i].cwd, &why, msg, sizeof msg);
        if ((st == SBX_OK) != mix[i].allow) {
            fprintf(stderr, "bench-policy: item %zu (%s): unexpected %s %s\n", i, mix[i].argv[0],
                    sbx_policy_reason_name((int)why), msg);
            return 1;
        }
        want_denied += !mix[i].allow;
    }
    for (int r = 0; r < RUNS; r++) {
        double t = bench_now();
        if (run(p) != want_denied * ROUNDS)
            return 1;
        t = bench_now() - t;
        if (t < best1)
            best1 = t;
    }
    for (int r = 0; r < RUNS; r++) {
        pthread_t th[THREADS];
        double t = bench_now();
        for (int i = 0; i < THREADS; i++)
            pthread_create(&th[i], NULL, thread_main, p);
        for (int i = 0; i < THREADS; i++)
            pthread_join(th[i], NULL);
        t = bench_now() - t;
        if (t < bestn)
            bestn = t;
    }
    printf("bench/policy: %zu commands (%lu denied) x %d rounds, best of %d\n", NMIX, want_denied, ROUNDS, RUNS);
    printf("  1 thread : %10.0f decisions/s  (%.2f us/decision)\n", (double)(NMIX * ROUNDS) / best1,
           best1 * 1e6 / (double)(NMIX * ROUNDS));
    printf("  %d threads: %10.0f decisions/s  (one shared policy)\n", THREADS,
           (double)(NMIX * ROUNDS * THREADS) / bestn);
    sbx_policy_free(p);
    return 0;
}
