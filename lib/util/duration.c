/* SPDX-License-Identifier: MIT */
#include "util/duration.h"

#include <stdio.h>
#include <string.h>

/* Under a minute (ms > 0): "250ms", "10s", "1.5s" (what is left of a
 * second as decimals, trailing zeros dropped). */
static void under_a_minute(int64_t ms, char *buf, size_t cap)
{
    int n;
    if (ms < 1000) {
        snprintf(buf, cap, "%lldms", (long long)ms);
        return;
    }
    n = snprintf(buf, cap, "%lld.%03lld", (long long)(ms / 1000), (long long)(ms % 1000));
    while (n > 0 && buf[n - 1] == '0')
        buf[--n] = '\0';
    if (n > 0 && buf[n - 1] == '.')
        buf[--n] = '\0';
    snprintf(buf + n, cap - (size_t)n, "s");
}

const char *sbx__duration_text(int64_t ms, char *buf)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}};
    size_t used = 0;
    if (ms <= 0) {
        snprintf(buf, SBX__DURATION_TEXT_MAX, "0s");
        return buf;
    }
    buf[0] = '\0';
    /* Whole days, hours and minutes, then the rest as under a minute:
     * nothing is dropped ("1m 30.5s", "5m 123ms"). */
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        int64_t k = ms / units[i].ms;
        if (k == 0)
            continue;
        snprintf(buf + used, SBX__DURATION_TEXT_MAX - used, "%s%lld%s", used ? " " : "", (long long)k, units[i].unit);
        used = strlen(buf);
        ms -= k * units[i].ms;
    }
    if (ms > 0) {
        if (used && used < SBX__DURATION_TEXT_MAX - 1)
            buf[used++] = ' ';
        under_a_minute(ms, buf + used, SBX__DURATION_TEXT_MAX - used);
    }
    return buf;
}
