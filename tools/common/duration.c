/* SPDX-License-Identifier: MIT */
#include "duration.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int parse_duration(const char *v, int64_t bare_unit_ms, int64_t *ms, int *bare)
{
    static const struct {
        const char *unit;
        double ms;
    } units[] = {{"ms", 1}, {"s", 1e3}, {"m", 6e4}, {"h", 3.6e6}, {"d", 8.64e7}};
    size_t digits, dot;
    const char *unit;
    double x, scale = (double)bare_unit_ms;
    char *end;

    /* Plain decimal only: strtod alone would take "0x10", "1e3", " 5",
     * "-1", "inf". */
    if (!v)
        return DURATION_SYNTAX;
    digits = strspn(v, "0123456789");
    dot = v[digits] == '.' ? 1 + strspn(v + digits + 1, "0123456789") : 0;
    if (digits == 0 || dot == 1)
        return DURATION_SYNTAX;
    unit = v + digits + dot;
    if (*unit) {
        size_t i;
        for (i = 0; i < sizeof units / sizeof units[0]; i++)
            if (strcmp(unit, units[i].unit) == 0)
                break;
        if (i == sizeof units / sizeof units[0])
            return DURATION_SYNTAX;
        scale = units[i].ms;
    }
    x = strtod(v, &end);
    if (end != unit || !isfinite(x))
        return DURATION_SYNTAX;
    if (x * scale > 9.0e15)
        return DURATION_RANGE;
    /* A time above 0 never rounds to 0, which the options read as none. */
    *ms = x > 0 && x * scale < 1 ? 1 : (int64_t)(x * scale + 0.5);
    if (bare)
        *bare = !*unit;
    return DURATION_OK;
}
