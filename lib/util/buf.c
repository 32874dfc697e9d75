/* SPDX-License-Identifier: MIT */
/* buf: growable byte buffer with a hard limit, the base of every text we build. */
#include "util/internal.h"

#include <stdio.h>
#include <string.h>

#include "util/buf.h"
#include "util/str.h"

void sbx__buf_init(sbx__buf *b, size_t limit)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->limit = limit;
}

sbx_status sbx__buf_reserve(sbx__buf *b, size_t extra)
{
    size_t need, cap;
    char *p;

    /* +1 for the terminator we always keep. */
    if (sbx__size_add(b->len, extra, &need) || sbx__size_add(need, 1, &need))
        return SBX_E_BUDGET_EXCEEDED;
    if (b->limit && need - 1 > b->limit)
        return SBX_E_BUDGET_EXCEEDED;
    if (need <= b->cap)
        return SBX_OK;
    cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    /* Never allocate far past the limit for a buffer that cannot use it. */
    if (b->limit && cap > b->limit + 1)
        cap = b->limit + 1;
    p = sbx__realloc(b->data, cap);
    if (!p)
        return SBX_E_NOMEM;
    if (!b->data)
        p[0] = '\0';
    b->data = p;
    b->cap = cap;
    return SBX_OK;
}

sbx_status sbx__buf_append(sbx__buf *b, const void *p, size_t n)
{
    sbx_status st = sbx__buf_reserve(b, n);
    if (st != SBX_OK)
        return st;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return SBX_OK;
}

sbx_status sbx__buf_puts(sbx__buf *b, const char *s)
{
    return sbx__buf_append(b, s, strlen(s));
}

sbx_status sbx__buf_putc(sbx__buf *b, char c)
{
    return sbx__buf_append(b, &c, 1);
}

sbx_status sbx__buf_vprintf(sbx__buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;
    sbx_status st;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return SBX_E_INVALID_ARG;
    st = sbx__buf_reserve(b, (size_t)n);
    if (st != SBX_OK)
        return st;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return SBX_OK;
}

sbx_status sbx__buf_printf(sbx__buf *b, const char *fmt, ...)
{
    va_list ap;
    sbx_status st;
    va_start(ap, fmt);
    st = sbx__buf_vprintf(b, fmt, ap);
    va_end(ap);
    return st;
}

void sbx__buf_consume(sbx__buf *b, size_t n)
{
    if (n >= b->len) {
        sbx__buf_clear(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

void sbx__buf_truncate(sbx__buf *b, size_t n)
{
    if (n >= b->len)
        return;
    b->len = n;
    b->data[n] = '\0';
}

void sbx__buf_clear(sbx__buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

char *sbx__buf_detach(sbx__buf *b, size_t *len)
{
    char *d = b->data;
    size_t l = b->len;

    if (!d) {
        d = sbx__strdup("");
        if (!d)
            return NULL;
        l = 0;
    }
    b->data = NULL;
    b->len = b->cap = 0;
    if (len)
        *len = l;
    return d;
}

void sbx__buf_free(sbx__buf *b)
{
    sbx__free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void sbx__buf_wipe_free(sbx__buf *b)
{
    if (b->data)
        sbx__wipe(b->data, b->cap);
    sbx__buf_free(b);
}

void sbx__buf_keep_tail(sbx__buf *b, size_t limit, size_t slack)
{
    if (b->len <= limit + slack)
        return;
    sbx__buf_consume(b, b->len - limit);
    while (b->len && ((unsigned char)b->data[0] & 0xC0) == 0x80)
        sbx__buf_consume(b, 1);
}
