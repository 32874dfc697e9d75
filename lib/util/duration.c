/* SPDX-License-Identifier: MIT */
#include "util/duration.h"

#include <stdio.h>
#include <string.h>

const char *sbx__duration_text(int64_t ms, char *buf)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}};
    size_t used = 0;
    if (ms <= 0) {
        snprintf(buf, SBX__DURATION_TEXT_MAX, "0s");
        return buf;
    }
    if (ms < 1000) {
        snprintf(buf, SBX__DURATION_TEXT_MAX, "%lldms", (long long)ms);
        return buf;
    }
    if (ms < 60000) { /* seconds with what is left of a second: 1.5s */
        int n = snprintf(buf, SBX__DURATION_TEXT_MAX, "%lld.%03lld", (long long)(ms / 1000), (long long)(ms % 1000));
        while (n > 0 && buf[n - 1] == '0')
            buf[--n] = '\0';
        if (n > 0 && buf[n - 1] == '.')
            buf[--n] = '\0';
        snprintf(buf + n, SBX__DURATION_TEXT_MAX - (size_t)n, "s");
        return buf;
    }
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof units / sizeof units[0] && ms >= 1000; i++) {
        int64_t k = ms / units[i].ms;
        if (k == 0)
            continue;
        snprintf(buf + used, SBX__DURATION_TEXT_MAX - used, "%s%lld%s", used ? " " : "", (long long)k, units[i].unit);
        used = strlen(buf);
        ms -= k * units[i].ms;
    }
    return buf;
}
