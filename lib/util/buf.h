/* SPDX-License-Identifier: MIT */
/* A growable byte buffer with an optional hard size limit. */
#ifndef SBX_BUF_H
#define SBX_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include <sbxrun/common.h>

/* `data` is NUL-terminated whenever it is non-NULL (the terminator is not
 * counted in `len`), so text can be handed out without copying. `limit` caps
 * `len`: an append that would pass it fails with SBX_E_BUDGET_EXCEEDED and
 * leaves the buffer as it was. Zero-initialised = empty, no limit. */
typedef struct sbx__buf {
    char *data;
    size_t len;
    size_t cap;
    size_t limit;
} sbx__buf;

#define SBX__BUF_INIT {NULL, 0, 0, 0}

void sbx__buf_init(sbx__buf *b, size_t limit);
/* Make room for `extra` more bytes (plus the terminator). */
sbx_status sbx__buf_reserve(sbx__buf *b, size_t extra);
sbx_status sbx__buf_append(sbx__buf *b, const void *p, size_t n);
sbx_status sbx__buf_puts(sbx__buf *b, const char *s);
sbx_status sbx__buf_putc(sbx__buf *b, char c);
sbx_status sbx__buf_printf(sbx__buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
sbx_status sbx__buf_vprintf(sbx__buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Drop the first n bytes (n > len drops everything); keeps the memory. */
void sbx__buf_consume(sbx__buf *b, size_t n);
/* Shorten to n bytes (no-op if already shorter). */
void sbx__buf_truncate(sbx__buf *b, size_t n);
/* len = 0, memory kept. */
void sbx__buf_clear(sbx__buf *b);
/* Hand the contents to the caller (free with sbx__free) and reset the buffer.
 * An empty buffer yields an allocated "", so NULL always means out of memory. */
char *sbx__buf_detach(sbx__buf *b, size_t *len);
void sbx__buf_free(sbx__buf *b);
/* Keep the last `limit` bytes once b holds more than limit + slack
 * (amortised: a tail kept while appending moves each byte at most once per
 * slack bytes), never starting inside a UTF-8 sequence. */
void sbx__buf_keep_tail(sbx__buf *b, size_t limit, size_t slack);
/* Free after overwriting the buffer's memory (for secrets). Growth by realloc
 * may leave earlier copies behind: reserve the full size first for secrets. */
void sbx__buf_wipe_free(sbx__buf *b);

#endif /* SBX_BUF_H */
