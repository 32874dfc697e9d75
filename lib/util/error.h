/* SPDX-License-Identifier: MIT */
/* Per-handle error state: the code and message of a handle's last failure. */
#ifndef SBX_ERROR_H
#define SBX_ERROR_H

#include <stdarg.h>

#include <sbxrun/common.h>

/* Longest message kept, in bytes; longer ones are cut at a UTF-8 boundary and
 * end in "...". Messages may quote remote text, which must not grow memory. */
#define SBX__ERR_MAX 2048

/* Lives inside each handle; zero-initialised = no error. Messages are owned
 * here and stay valid until the next set/clear/free, as the API promises. */
typedef struct sbx__err {
    sbx_status code;
    char *msg;
} sbx__err;

/* Record a failure and return its code, so callers can `return sbx__err_set(...)`.
 * If the message cannot be allocated the code is still recorded and the
 * message falls back to sbx_strerror(code). */
sbx_status sbx__err_set(sbx__err *e, sbx_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
sbx_status sbx__err_setv(sbx__err *e, sbx_status code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* Copy another handle's failure (code and message) into this one. */
sbx_status sbx__err_copy(sbx__err *dst, const sbx__err *src);
/* Forget the last failure. */
void sbx__err_clear(sbx__err *e);
/* The message of the last failure; "" when there was none. Never NULL. */
const char *sbx__err_msg(const sbx__err *e);
void sbx__err_free(sbx__err *e);

#endif /* SBX_ERROR_H */
