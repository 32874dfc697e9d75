/* SPDX-License-Identifier: MIT */
/* Helpers shared by the benchmarks: a monotonic clock and best-of-N timing. */
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

#endif /* SBX_BENCH_H */
