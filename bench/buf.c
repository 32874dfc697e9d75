/* SPDX-License-Identifier: MIT */
/*
 * bench/buf: append throughput of sbx__buf (geometric growth, the base of every
 * text the library builds) against a naive peer that reallocs to the exact size
 * on every append, measured in the same run on the same chunk sequence.
 * Each run builds DOCS documents of about DOC bytes from scratch (request
 * bodies, log windows), so the figure is the buffer's, not the kernel's
 * first-touch page faults on one huge allocation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "util/buf.h"

#define DOC (64u << 10) /* bytes per document */
#define DOCS 1024       /* documents per run */
#define TOTAL ((size_t)DOC * DOCS)
#define RUNS 5

static char chunk[256];

static double run_sbx(const unsigned *sizes, size_t n)
{
    double best = 1e9;
    for (int r = 0; r < RUNS; r++) {
        sbx__buf b = SBX__BUF_INIT;
        size_t doc = 0;
        double t = bench_now();
        for (size_t i = 0; i < n; i++) {
            if (sbx__buf_append(&b, chunk, sizes[i]) != SBX_OK)
                abort();
            if ((doc += sizes[i]) >= DOC) {
                sbx__buf_free(&b);
                doc = 0;
            }
        }
        t = bench_now() - t;
        sbx__buf_free(&b);
        if (t < best)
            best = t;
    }
    return best;
}

static double run_naive(const unsigned *sizes, size_t n)
{
    double best = 1e9;
    for (int r = 0; r < RUNS; r++) {
        char *p = NULL;
        size_t len = 0;
        double t = bench_now();
        for (size_t i = 0; i < n; i++) {
            char *q = realloc(p, len + sizes[i] + 1);
            if (!q)
                abort();
            p = q;
            memcpy(p + len, chunk, sizes[i]);
            len += sizes[i];
            p[len] = '\0';
            if (len >= DOC) {
                free(p);
                p = NULL;
                len = 0;
            }
        }
        t = bench_now() - t;
        free(p);
        if (t < best)
            best = t;
    }
    return best;
}

int main(void)
{
    uint64_t seed = 42;
    size_t n = 0, total = 0, cap = TOTAL / 64;
    unsigned *sizes = malloc(cap * sizeof *sizes);
    double t_sbx, t_naive, mb;

    if (!sizes)
        return 1;
    memset(chunk, 'x', sizeof chunk);
    /* Line-sized appends, 1..200 bytes, like command output. */
    while (total < TOTAL) {
        if (n == cap) {
            unsigned *s2 = realloc(sizes, (cap *= 2) * sizeof *sizes);
            if (!s2)
                return 1;
            sizes = s2;
        }
        sizes[n] = 1 + bench_rand(&seed) % 200;
        total += sizes[n++];
    }
    mb = (double)total / 1e6;
    t_sbx = run_sbx(sizes, n);
    t_naive = run_naive(sizes, n);
    printf("bench/buf: %zu appends of 1..200 bytes into %u documents of %u KiB, %.1f MB, best of %d\n",
           n, DOCS, DOC >> 10, mb, RUNS);
    printf("  sbx__buf (doubling)       %8.0f MB/s  %6.1f ns/append\n", mb / t_sbx, t_sbx * 1e9 / (double)n);
    printf("  naive exact-size realloc  %8.0f MB/s  %6.1f ns/append\n", mb / t_naive, t_naive * 1e9 / (double)n);
    printf("  ratio sbx/naive           %8.2fx\n", t_naive / t_sbx);
    free(sizes);
    return 0;
}
