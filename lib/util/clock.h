/* SPDX-License-Identifier: MIT */
/* clock: the library's one monotonic clock, shared by the engine and the transcript. */
#ifndef SBX_CLOCK_H
#define SBX_CLOCK_H

#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC: for deadlines and durations, never dates. */
int64_t sbx__mono_ms(void);

/* A duration the caller chose, as messages show it: "250ms", "1.5s",
 * "10s", "1m 30s", "2h", "1d 6h". Writes at most 32 bytes into buf and
 * returns it. */
#define SBX__DURATION_TEXT_MAX 32
const char *sbx__duration_text(int64_t ms, char *buf);

#endif /* SBX_CLOCK_H */
