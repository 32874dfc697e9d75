/* SPDX-License-Identifier: MIT */
/* One reading of a time given on a command line, shared by sbxrun and sbxd:
 * a decimal number ("30", "1.5") with an optional unit (ms, s, m, h, d).
 * The tools differ only in what a bare number means, which each states in
 * its own help. */
#ifndef SBX_TOOL_DURATION_H
#define SBX_TOOL_DURATION_H

#include <stdint.h>

/* How parse_duration() failed. */
enum {
    DURATION_OK = 0,
    DURATION_SYNTAX = -1, /* not digits[.digits][unit] */
    DURATION_RANGE = -2,  /* too large to hold in milliseconds */
};

/* v read into *ms, rounded to the nearest millisecond (a time above 0 to
 * 1 ms at least); a bare number is
 * counted in bare_unit_ms. *bare is set to whether v had no unit, so that
 * a caller can refuse a bare number it finds ambiguous. *ms and *bare are
 * left alone on failure. */
int parse_duration(const char *v, int64_t bare_unit_ms, int64_t *ms, int *bare);

#endif
