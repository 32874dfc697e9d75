/* SPDX-License-Identifier: MIT */
/*
 * bench/transcript: what recording a job costs.
 *   1. per-step overhead: begin, argv (4 words), cwd, two env names, a
 *      command id, one line of output, end; in memory, and journaled to a
 *      file in a directory given (each entry written and fdatasync'd);
 *   2. output ingestion: MB/s through sbx_transcript_step_add_output() (64 KiB
 *      chunks of build-log text, redacted with the shapes and 20 values,
 *      kept as 16 KiB head and tail windows), and the process's peak RSS
 *      after one step of 1 GiB of output: memory does not follow output.
 * usage: bench-transcript [DIR]   (the journal's directory [/tmp])
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <sbxrun/sbxrun.h>

#include "bench.h"

#define STEPS 2000

static double peak_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

static sbx_redactor *redactor(void)
{
    sbx_redactor *r = sbx_redactor_new();
    uint64_t seed = 7;
    for (int i = 0; i < 20; i++) {
        char v[25];
        for (int k = 0; k < 24; k++)
            v[k] = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"[bench_rand(&seed) % 57];
        v[24] = '\0';
        sbx_redactor_add_secret(r, (const uint8_t *)v, 24);
    }
    return r;
}

/* Seconds per step for STEPS steps, journaled to path when not NULL. */
static double steps(const sbx_redactor *red, const char *path)
{
    sbx_transcript *t = sbx_transcript_new();
    const char *argv[] = {"npm", "run", "test", "--silent"};
    const char *line = "PASS src/api/users.test.ts (3.214 s)\n";
    double t0;
    sbx_transcript_set_redactor(t, red);
    sbx_transcript_set_job_type(t, "verify.test");
    if (path && sbx_transcript_set_file(t, path) != SBX_OK) {
        fprintf(stderr, "bench-transcript: %s\n", sbx_transcript_last_error(t));
        exit(1);
    }
    t0 = bench_now();
    for (int i = 0; i < STEPS; i++) {
        size_t s;
        if (sbx_transcript_step_begin(t, "test", &s) || sbx_transcript_step_set_argv(t, s, 4, argv) ||
            sbx_transcript_step_set_cwd(t, s, "/vercel/sandbox") || sbx_transcript_step_add_env(t, s, "CI=1") ||
            sbx_transcript_step_add_env(t, s, "NODE_ENV=test") ||
            sbx_transcript_step_set_command_id(t, s, "cmd_0123456789abcdefghij") ||
            sbx_transcript_step_add_output(t, s, SBX_STREAM_STDOUT, (const uint8_t *)line, strlen(line)) ||
            sbx_transcript_step_end(t, s, SBX_STEP_EXITED, 0, 0, NULL)) {
            fprintf(stderr, "bench-transcript: %s\n", sbx_transcript_last_error(t));
            exit(1);
        }
    }
    t0 = bench_now() - t0;
    sbx_transcript_finish(t, SBX_VERDICT_PASSED);
    sbx_transcript_free(t);
    if (path)
        unlink(path);
    return t0 / STEPS;
}

int main(int argc, char **argv)
{
    static const char *const lines[] = {
        "[ 42%] Building CXX object src/core/CMakeFiles/core.dir/engine.cpp.o\n",
        "npm WARN deprecated inflight@1.0.6: This module is not supported\n",
        "PASS src/api/users.test.ts (3.214 s) id=550e8400-e29b-41d4-a716-446655440000\n",
        "    at Object.<anonymous> (/vercel/sandbox/node_modules/jest-circus/build/utils.js:298:28)\n",
    };
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    char path[4096], *chunk = malloc(65536);
    sbx_redactor *red = redactor();
    double mem = 1e9, file = 1e9, best = 1e9;
    size_t o = 0;
    snprintf(path, sizeof path, "%s/bench-transcript.jsonl", dir);
    for (int r = 0; r < 3; r++) {
        double a = steps(red, NULL), b = steps(red, path);
        mem = a < mem ? a : mem;
        file = b < file ? b : file;
    }
    printf("bench/transcript: %d steps, best of 3\n", STEPS);
    printf("  per step, in memory:                    %8.1f us\n", mem * 1e6);
    printf("  per step, journaled to %-16s %8.1f us (each entry written and fdatasync'd)\n", dir, file * 1e6);

    while (o < 65536) { /* build-log text */
        const char *l = lines[o / 64 % 4];
        size_t n = strlen(l) < 65536 - o ? strlen(l) : 65536 - o;
        memcpy(chunk + o, l, n);
        o += n;
    }
    for (int r = 0; r < 3; r++) {
        sbx_transcript *t = sbx_transcript_new();
        size_t s;
        double t0;
        sbx_transcript_set_redactor(t, red);
        sbx_transcript_step_begin(t, NULL, &s);
        t0 = bench_now();
        for (int i = 0; i < 16384; i++) /* 1 GiB */
            sbx_transcript_step_add_output(t, s, SBX_STREAM_STDOUT, (const uint8_t *)chunk, 65536);
        t0 = bench_now() - t0;
        sbx_transcript_step_end(t, s, SBX_STEP_EXITED, 0, 0, NULL);
        sbx_transcript_free(t);
        best = t0 < best ? t0 : best;
    }
    printf("  output ingestion (redacted, 16 KiB head + tail kept): %.0f MB/s\n", (double)(1u << 30) / best / 1e6);
    printf("  peak RSS after steps of 1 GiB of output: %.1f MB\n", peak_mb());
    sbx_redactor_free(red);
    free(chunk);
    return 0;
}
