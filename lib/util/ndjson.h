/* SPDX-License-Identifier: MIT */
/* ndjson: incremental, bounded splitting of a newline-delimited JSON stream. */
#ifndef SBX_NDJSON_H
#define SBX_NDJSON_H

#include <stdbool.h>
#include <stddef.h>

#include <sbxrun/common.h>

#include "util/buf.h"

/* Called for each complete, non-empty line (without its '\n', and without a
 * '\r' before it). line is valid only during the call. Non-zero stops. */
typedef int (*sbx__line_cb)(const char *line, size_t len, void *user);

typedef struct sbx__ndjson {
    sbx__buf pending;   /* the start of a line whose end has not arrived */
    size_t max_line;
    bool broken;        /* a line exceeded max_line: nothing more is parsed */
} sbx__ndjson;

void sbx__ndjson_init(sbx__ndjson *s, size_t max_line);
/* Feed bytes as they arrive, split anywhere. Returns SBX_OK,
 * SBX_E_BUDGET_EXCEEDED (a line longer than max_line; the stream cannot be
 * resynchronised safely and every later feed fails too), SBX_E_CANCELLED
 * (the callback stopped it), SBX_E_NOMEM. */
sbx_status sbx__ndjson_feed(sbx__ndjson *s, const char *data, size_t len, sbx__line_cb cb, void *user);
/* The stream ended: a last line without '\n' is still delivered. */
sbx_status sbx__ndjson_finish(sbx__ndjson *s, sbx__line_cb cb, void *user);
/* Bytes held back waiting for the end of a line. */
size_t sbx__ndjson_pending(const sbx__ndjson *s);
void sbx__ndjson_reset(sbx__ndjson *s);
void sbx__ndjson_free(sbx__ndjson *s);

#endif /* SBX_NDJSON_H */
