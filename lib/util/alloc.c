/* SPDX-License-Identifier: MIT */
/* alloc: the allocation wrapper every lib/ module goes through. */
#include "util/internal.h"

#include <stdlib.h>
#include <string.h>

#ifdef SBX_FAULT_INJECTION
#include <stdatomic.h>

static atomic_long fault_countdown;
static atomic_long fault_allocs;
static atomic_int fault_hit;

void sbx__fault_fail_nth(long n)
{
    atomic_store(&fault_countdown, n > 0 ? n : 0);
    atomic_store(&fault_allocs, 0);
    atomic_store(&fault_hit, 0);
}

int sbx__fault_triggered(void)
{
    return atomic_load(&fault_hit);
}

long sbx__fault_count(void)
{
    return atomic_load(&fault_allocs);
}

/* True for exactly the armed allocation; the ones after it succeed again, so
 * code under test sees one failure, as with a real transient shortage. */
static int fault_now(void)
{
    atomic_fetch_add(&fault_allocs, 1);
    long c = atomic_load(&fault_countdown);
    while (c > 0) {
        if (atomic_compare_exchange_weak(&fault_countdown, &c, c - 1)) {
            if (c == 1) {
                atomic_store(&fault_hit, 1);
                return 1;
            }
            return 0;
        }
    }
    return 0;
}
#else
#define fault_now() 0
#endif

void *sbx__malloc(size_t n)
{
    if (fault_now())
        return NULL;
    return malloc(n ? n : 1);
}

void *sbx__calloc(size_t count, size_t size)
{
    size_t total;
    /* Refuse an overflowing product here rather than trust every libc (and
     * sanitizer runtime) to return NULL for it. */
    if (sbx__size_mul(count, size, &total))
        return NULL;
    if (fault_now())
        return NULL;
    if (total == 0)
        count = size = 1;
    return calloc(count, size);
}

void *sbx__realloc(void *p, size_t n)
{
    if (fault_now())
        return NULL;
    return realloc(p, n ? n : 1);
}

void *sbx__memdup(const void *p, size_t n)
{
    void *d = sbx__malloc(n);
    if (d && n)
        memcpy(d, p, n);
    return d;
}

static char *dup_len(const char *s, size_t len)
{
    char *d;
    if (len == SIZE_MAX)
        return NULL;
    d = sbx__malloc(len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *sbx__strndup(const char *s, size_t n)
{
    return dup_len(s, strnlen(s, n));
}

char *sbx__strdup(const char *s)
{
    return dup_len(s, strlen(s));
}

void sbx__free(void *p)
{
    free(p);
}

void sbx_free(void *p)
{
    sbx__free(p);
}
