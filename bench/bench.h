/* SPDX-License-Identifier: MIT */
/* Helpers shared by the benchmarks: a monotonic clock, a generator, medians. */
#ifndef SBX_BENCH_H
#define SBX_BENCH_H

#include <stdint.h>
#include <time.h>

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A small deterministic generator, so every run measures the same input. */
static inline uint32_t bench_rand(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*state >> 33);
}

/* qsort comparator for doubles, and the median of a sorted array. */
static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double median(const double *sorted, int n)
{
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

#endif /* SBX_BENCH_H */
