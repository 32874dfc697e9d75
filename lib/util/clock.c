/* SPDX-License-Identifier: MIT */
/* clock: the monotonic clock behind every deadline and duration. */
#include "util/internal.h"

#include <time.h>

#include "util/clock.h"

int64_t sbx__mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
