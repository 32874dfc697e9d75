/* SPDX-License-Identifier: MIT */
/* ndjson: line splitting for the command-wait and log streams, bounded in memory. */
#include "util/internal.h"

#include <string.h>

#include "util/ndjson.h"

void sbx__ndjson_init(sbx__ndjson *s, size_t max_line)
{
    sbx__buf_init(&s->pending, max_line);
    s->max_line = max_line;
    s->broken = false;
}

static sbx_status deliver(const char *line, size_t len, sbx__line_cb cb, void *user)
{
    if (len && line[len - 1] == '\r')
        len--;
    if (len == 0)
        return SBX_OK; /* empty lines are skipped, as the SDK does */
    return cb(line, len, user) ? SBX_E_CANCELLED : SBX_OK;
}

sbx_status sbx__ndjson_feed(sbx__ndjson *s, const char *data, size_t len, sbx__line_cb cb, void *user)
{
    sbx_status st;
    if (s->broken)
        return SBX_E_BUDGET_EXCEEDED;
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t n = nl ? (size_t)(nl - data) : len;

        if (!nl) {
            /* The rest of a line: keep it, within the limit. */
            if (s->pending.len + n > s->max_line) {
                s->broken = true;
                sbx__buf_free(&s->pending);
                return SBX_E_BUDGET_EXCEEDED;
            }
            return sbx__buf_append(&s->pending, data, n) == SBX_OK ? SBX_OK : SBX_E_NOMEM;
        }
        if (s->pending.len == 0) {
            /* A whole line inside this chunk: no copy. */
            if (n > s->max_line) {
                s->broken = true;
                return SBX_E_BUDGET_EXCEEDED;
            }
            st = deliver(data, n, cb, user);
        } else {
            if (s->pending.len + n > s->max_line) {
                s->broken = true;
                sbx__buf_free(&s->pending);
                return SBX_E_BUDGET_EXCEEDED;
            }
            if (sbx__buf_append(&s->pending, data, n) != SBX_OK)
                return SBX_E_NOMEM;
            st = deliver(s->pending.data, s->pending.len, cb, user);
            sbx__buf_clear(&s->pending);
        }
        if (st != SBX_OK)
            return st;
        data += n + 1;
        len -= n + 1;
    }
    return SBX_OK;
}

sbx_status sbx__ndjson_finish(sbx__ndjson *s, sbx__line_cb cb, void *user)
{
    sbx_status st;
    if (s->broken)
        return SBX_E_BUDGET_EXCEEDED;
    if (s->pending.len == 0)
        return SBX_OK;
    st = deliver(s->pending.data, s->pending.len, cb, user);
    sbx__buf_clear(&s->pending);
    return st;
}

size_t sbx__ndjson_pending(const sbx__ndjson *s)
{
    return s->pending.len;
}

void sbx__ndjson_reset(sbx__ndjson *s)
{
    sbx__buf_clear(&s->pending);
    s->broken = false;
}

void sbx__ndjson_free(sbx__ndjson *s)
{
    sbx__buf_free(&s->pending);
}
