/* SPDX-License-Identifier: MIT */
/* Definitions every lib/ module shares: the public header, attributes, checked arithmetic. */
#ifndef SBX_INTERNAL_H
#define SBX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sbxrun/sbxrun.h>

#include "util/alloc.h"
#include "util/error.h"

#define SBX__PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define SBX__UNUSED __attribute__((unused))
#define SBX__WARN_UNUSED __attribute__((warn_unused_result))
#define SBX__ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Checked size arithmetic: true on overflow, *out untouched then. */
static inline bool sbx__size_add(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r))
        return true;
    *out = r;
    return false;
}

static inline bool sbx__size_mul(size_t a, size_t b, size_t *out)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return true;
    *out = r;
    return false;
}

#endif /* SBX_INTERNAL_H */
