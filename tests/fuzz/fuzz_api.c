/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the parsers of the server's answers (lib/client/proto/v1.c): the
 * input is given, as a response body, to every one of them: sandbox,
 * command, snapshot (with and without the sandbox beside it), the list
 * check, a log line and the error-body summary. None may crash, leak or
 * hit undefined behaviour; each success must carry the fields the protocol
 * makes required, each failure a code and a message, and the error summary
 * must stay inside its buffer, at every buffer size. Built with libFuzzer
 * by -Dfuzz=true (clang); built without it (with standalone.c) it runs over
 * the files named on its command line, which `meson test` does on the seeds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/proto/proto.h"
#include "util/buf.h"
#include "util/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failure has its code recorded and a message; a success records none. */
static void check_status(sbx_status st, sbx__err *err)
{
    if (st != SBX_OK && (err->code != st || !sbx__err_msg(err)[0]))
        abort();
    if (st == SBX_OK && err->code != SBX_OK)
        abort();
    sbx__err_free(err);
}

static void sandbox(const char *body, size_t len)
{
    struct sbx__sandbox_info in = {0};
    sbx__err err = {0};
    sbx_status st = sbx__proto_v1.parse_sandbox(body, len, &in, &err);
    if (st == SBX_OK) {
        if (!in.id || !in.status || !in.runtime || !in.region || !in.json || in.nroutes > SBX__MAX_PORTS)
            abort();
        if (strlen(in.json) != len || memcmp(in.json, body, len) != 0)
            abort(); /* the answer is kept as received */
        for (size_t i = 0; i < in.nroutes; i++)
            if (!in.routes[i].url)
                abort();
    }
    check_status(st, &err);
    sbx__sandbox_info_free(&in); /* also after a partial fill */
}

static void command(const char *body, size_t len)
{
    struct sbx__command_info in = {0};
    sbx__err err = {0};
    sbx_status st;
    in.exit_code = -1;
    st = sbx__api_parse_command(body, len, &in, &err);
    if (st == SBX_OK && !in.id)
        abort();
    check_status(st, &err);
    /* The start stream parses into the same struct twice. */
    st = sbx__api_parse_command(body, len, &in, &err);
    check_status(st, &err);
    sbx__command_info_free(&in);
}

static void snapshot(const char *body, size_t len, bool with_sandbox)
{
    struct sbx__snapshot_info sn = {0};
    struct sbx__sandbox_info sb = {0};
    sbx__err err = {0};
    sbx_status st = sbx__proto_v1.parse_snapshot(body, len, &sn, with_sandbox ? &sb : NULL, &err);
    if (st == SBX_OK) {
        if (!sn.id || !sn.status || !sn.source_sandbox_id || !sn.json)
            abort();
        if (strlen(sn.json) != len || memcmp(sn.json, body, len) != 0)
            abort();
        if (sb.id && (!sb.status || !sb.runtime || !sb.region))
            abort();
    }
    check_status(st, &err);
    sbx__snapshot_info_free(&sn);
    sbx__sandbox_info_free(&sb);
}

static void log_line(const char *line, size_t len)
{
    sbx__buf data = SBX__BUF_INIT;
    sbx__err err = {0};
    int stream = 0;
    sbx_status st = sbx__api_parse_log(line, len, &stream, &data, &err);
    if (st == SBX_OK && stream != SBX__LOG_STDOUT && stream != SBX__LOG_STDERR && stream != SBX__LOG_ERROR)
        abort();
    check_status(st, &err);
    sbx__buf_free(&data);
}

static void error_text(const char *body, size_t len)
{
    static const size_t caps[] = {1, 2, 9, 64, 512};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        char *out = malloc(caps[i]);
        if (!out)
            abort();
        sbx__api_error_text(body, len, out, caps[i]);
        if (strnlen(out, caps[i]) == caps[i])
            abort(); /* not terminated inside the buffer */
        free(out);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Bodies are not NUL-terminated: copy into an exact allocation so a
     * read past the end is caught. */
    char *body = malloc(size ? size : 1), *text;
    sbx__err err = {0};
    if (!body)
        abort();
    memcpy(body, data, size);
    sandbox(body, size);
    command(body, size);
    snapshot(body, size, false);
    snapshot(body, size, true);
    check_status(sbx__api_check_list(body, size, SBX__API_SANDBOXES, &err), &err);
    check_status(sbx__api_check_list(body, size, SBX__API_SNAPSHOTS, &err), &err);
    log_line(body, size);
    error_text(body, size);
    free(body);
    /* A caller's network policy: the same bytes as a C string. */
    if ((text = malloc(size + 1)) == NULL)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    check_status(sbx__api_check_policy(text, &err), &err);
    free(text);
    return 0;
}
