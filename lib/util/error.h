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
    char *api_code; /* the server's error.code behind the failure, or NULL */
} sbx__err;

/* Record a failure and return its code, so callers can `return sbx__err_set(...)`.
 * If the message cannot be allocated the code is still recorded and the
 * message falls back to sbx_strerror(code). */
sbx_status sbx__err_set(sbx__err *e, sbx_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
sbx_status sbx__err_setv(sbx__err *e, sbx_status code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* Copy another handle's failure (code, message, server's code) into this one. */
sbx_status sbx__err_copy(sbx__err *dst, const sbx__err *src);
/* The server's error.code behind the failure just recorded (NULL: none).
 * Every new failure set starts without one. On out of memory it stays
 * NULL: the code is a detail, the failure is kept. */
void sbx__err_set_api_code(sbx__err *e, const char *api_code);
/* It, or NULL when the handle has no failure or the failure no code. */
const char *sbx__err_api_code(const sbx__err *e);
/* Forget the last failure. */
void sbx__err_clear(sbx__err *e);
/* The message of the last failure; "" when there was none. Never NULL. */
const char *sbx__err_msg(const sbx__err *e);
/* Record an allocation failure with the library's one text for it. */
sbx_status sbx__err_nomem(sbx__err *e);
#define SBX__NOMEM_TEXT "out of memory"

/* What every sbx_<noun>_last_error() returns for a NULL handle. */
#define SBX__NULL_HANDLE_TEXT "invalid argument: the handle is NULL"
/* The body of every sbx_<noun>_last_error(). */
#define SBX__LAST_ERROR(h) ((h) ? sbx__err_msg(&(h)->err) : SBX__NULL_HANDLE_TEXT)

/*
 * The entry of every public call that can fail, on a handle h with an `err`
 * member (the error contract of doc/api-conventions.md): a NULL handle is
 * SBX_E_INVALID_ARG; otherwise the handle's last error is cleared, so that it
 * only ever describes the most recent failing call; then `busy` (true when a
 * callback of the client is running and the call would reenter it) makes
 * the call SBX_E_MISUSE. Pure getters, _wakeup and _cancel do not use it.
 */
#define SBX__ENTER(h, busy)                                                                        \
    do {                                                                                           \
        if (!(h))                                                                                  \
            return SBX_E_INVALID_ARG;                                                              \
        sbx__err_clear(&(h)->err);                                                                 \
        if (busy)                                                                                  \
            return sbx__err_set(&(h)->err, SBX_E_MISUSE, "not allowed inside a callback");         \
    } while (0)

/* An argument check after SBX__ENTER: when cond is false the call fails with
 * SBX_E_INVALID_ARG and the message (printf format) names what was wrong. */
#define SBX__ARG(h, cond, ...)                                                                     \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return sbx__err_set(&(h)->err, SBX_E_INVALID_ARG, __VA_ARGS__);                        \
    } while (0)
void sbx__err_free(sbx__err *e);

#endif /* SBX_ERROR_H */
