/* SPDX-License-Identifier: MIT */
/* duration: a time in milliseconds as people write it. Self-contained (libc
 * only): sbxrun compiles this file too, so that the library's messages and
 * the command's output write durations alike. */
#ifndef SBX_DURATION_H
#define SBX_DURATION_H

#include <stdint.h>

/* A duration the caller chose, as messages show it: "0s", "250ms", "1.5s",
 * "10s", "1m 30s", "2h", "1d 6h" (negative counts as 0). Writes at most
 * SBX__DURATION_TEXT_MAX bytes into buf and returns it. */
#define SBX__DURATION_TEXT_MAX 32
const char *sbx__duration_text(int64_t ms, char *buf);

#endif /* SBX_DURATION_H */
