/* SPDX-License-Identifier: MIT */
/* clock: the library's one monotonic clock, shared by the engine and the transcript. */
#ifndef SBX_CLOCK_H
#define SBX_CLOCK_H

#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC: for deadlines and durations, never dates. */
int64_t sbx__mono_ms(void);

#endif /* SBX_CLOCK_H */
