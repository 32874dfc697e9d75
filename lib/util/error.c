/* SPDX-License-Identifier: MIT */
/* error: status code names and texts, and the per-handle last-error record. */
#include "util/internal.h"

#include <stdio.h>
#include <string.h>

#include "util/str.h"

struct status_info {
    const char *name;
    const char *text;
};

/* Indexed by code. Codes are append-only (common.h): add new rows at the end. */
static const struct status_info status_table[] = {
    [SBX_OK] = {"SBX_OK", "success"},
    [SBX_E_INVALID_ARG] = {"SBX_E_INVALID_ARG", "invalid argument"},
    [SBX_E_MISUSE] = {"SBX_E_MISUSE", "call not allowed in this state"},
    [SBX_E_NOMEM] = {"SBX_E_NOMEM", "out of memory"},
    [SBX_E_UNKNOWN_OPTION] = {"SBX_E_UNKNOWN_OPTION", "unknown option"},
    [SBX_E_NOT_FOUND] = {"SBX_E_NOT_FOUND", "not found"},
    [SBX_E_IO] = {"SBX_E_IO", "input/output error"},
    [SBX_E_PARSE] = {"SBX_E_PARSE", "parse error"},
    [SBX_E_AUTH] = {"SBX_E_AUTH", "authentication failed or credentials missing"},
    [SBX_E_TRANSPORT] = {"SBX_E_TRANSPORT", "could not reach the endpoint"},
    [SBX_E_PROTOCOL] = {"SBX_E_PROTOCOL", "protocol error in the server's answer"},
    [SBX_E_HTTP] = {"SBX_E_HTTP", "the server answered with an error status"},
    [SBX_E_TIMEOUT] = {"SBX_E_TIMEOUT", "timed out"},
    [SBX_E_CANCELLED] = {"SBX_E_CANCELLED", "cancelled"},
    [SBX_E_BUDGET_EXCEEDED] = {"SBX_E_BUDGET_EXCEEDED", "budget exceeded"},
    [SBX_E_POLICY_DENIED] = {"SBX_E_POLICY_DENIED", "denied by policy"},
    [SBX_E_UNSUPPORTED] = {"SBX_E_UNSUPPORTED", "not supported"},
    [SBX_E_CONFLICT] = {"SBX_E_CONFLICT", "conflicts with the object's current state"},
    [SBX_E_RATE_LIMITED] = {"SBX_E_RATE_LIMITED", "rate limited by the server"},
    [SBX_E_INTEGRITY] = {"SBX_E_INTEGRITY", "integrity check failed"},
    [SBX_E_PATCH] = {"SBX_E_PATCH", "patch does not apply"},
    [SBX_E_INTERNAL] = {"SBX_E_INTERNAL", "internal error in libsbxrun"},
    [SBX_E_AGAIN] = {"SBX_E_AGAIN", "not finished yet, or nothing available now"},
};

static const struct status_info *status_lookup(sbx_status code)
{
    /* Compare as unsigned: a negative value from a binding is just unknown. */
    unsigned idx = (unsigned)code;
    if (idx >= SBX__ARRAY_LEN(status_table) || !status_table[idx].name)
        return NULL;
    return &status_table[idx];
}

const char *sbx_strerror(sbx_status code)
{
    const struct status_info *si = status_lookup(code);
    return si ? si->text : "unknown status code";
}

const char *sbx_status_name(sbx_status code)
{
    const struct status_info *si = status_lookup(code);
    return si ? si->name : NULL;
}

sbx_status sbx__err_setv(sbx__err *e, sbx_status code, const char *fmt, va_list ap)
{
    char tmp[SBX__ERR_MAX + 1];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    char *msg;

    if (n < 0) {
        tmp[0] = '\0';
    } else if ((size_t)n >= sizeof tmp) {
        /* Cut on a character boundary so the message stays valid UTF-8. */
        size_t keep = sbx__utf8_floor(tmp, SBX__ERR_MAX - 3);
        memcpy(tmp + keep, "...", 4);
    }
    /* Format before freeing: the arguments may point into the old message. */
    msg = sbx__strdup(tmp);
    sbx__free(e->msg);
    e->msg = msg;
    e->code = code;
    sbx__free(e->api_code);
    e->api_code = NULL;
    return code;
}

sbx_status sbx__err_set(sbx__err *e, sbx_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sbx__err_setv(e, code, fmt, ap);
    va_end(ap);
    return code;
}

sbx_status sbx__err_copy(sbx__err *dst, const sbx__err *src)
{
    if (dst == src)
        return dst->code;
    sbx__err_set(dst, src->code, "%s", sbx__err_msg(src));
    sbx__err_set_api_code(dst, src->api_code);
    return dst->code;
}

void sbx__err_set_api_code(sbx__err *e, const char *api_code)
{
    char *c = api_code ? sbx__strdup(api_code) : NULL;
    sbx__free(e->api_code);
    e->api_code = c;
}

const char *sbx__err_api_code(const sbx__err *e)
{
    return e->code != SBX_OK ? e->api_code : NULL;
}

void sbx__err_clear(sbx__err *e)
{
    sbx__free(e->msg);
    e->msg = NULL;
    e->code = SBX_OK;
    sbx__free(e->api_code);
    e->api_code = NULL;
}

sbx_status sbx__err_nomem(sbx__err *e)
{
    return sbx__err_set(e, SBX_E_NOMEM, SBX__NOMEM_TEXT);
}

const char *sbx__err_msg(const sbx__err *e)
{
    if (e->msg)
        return e->msg;
    return e->code == SBX_OK ? "" : sbx_strerror(e->code);
}

void sbx__err_free(sbx__err *e)
{
    sbx__err_clear(e);
}
