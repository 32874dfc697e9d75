/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the parsers of the server's answers (lib/client/proto/):
 * the input is given, as a response body, to every one of them, in both
 * protocol versions: sandbox (session), command, snapshot (with and without
 * the sandbox beside it), the list and delete checks, a log line and the
 * error-body summary and code; and, as a caller's network policy, to each
 * version's check (v2 also converts it to its request shape). None may crash, leak or
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

static void sandbox(const struct sbx__proto *p, const char *body, size_t len)
{
    struct sbx__sandbox_info in = {0};
    sbx__err err = {0};
    sbx_status st = p->parse_sandbox(body, len, &in, &err);
    if (st == SBX_OK) {
        /* a 2.x session's runtime is optional */
        if (!in.id || !in.status || (p == &sbx__proto_v1 && !in.runtime) || !in.region || !in.json ||
            in.nroutes > SBX__MAX_PORTS || in.persistent < -1 || in.persistent > 1)
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

static void snapshot(const struct sbx__proto *p, const char *body, size_t len, bool with_sandbox)
{
    struct sbx__snapshot_info sn = {0};
    struct sbx__sandbox_info sb = {0};
    sbx__err err = {0};
    sbx_status st = p->parse_snapshot(body, len, &sn, with_sandbox ? &sb : NULL, &err);
    if (st == SBX_OK) {
        if (!sn.id || !sn.status || !sn.source_sandbox_id || !sn.json)
            abort();
        if (strlen(sn.json) != len || memcmp(sn.json, body, len) != 0)
            abort();
        if (sb.id && (!sb.status || (p == &sbx__proto_v1 && !sb.runtime) || !sb.region))
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
    if (st == SBX_OK && stream != SBX__LOG_STDOUT && stream != SBX__LOG_STDERR && stream != SBX__LOG_ERROR &&
        stream != SBX__LOG_COMMAND)
        abort();
    if (st == SBX_OK && stream == SBX__LOG_COMMAND && data.len != 0)
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
        if (sbx__api_error_code(body, len, out, caps[i]) && (!out[0] || strnlen(out, caps[i]) == caps[i]))
            abort(); /* a code is non-empty and terminated inside the buffer */
        free(out);
    }
}

/* A caller's policy: each version's check; what v2 accepts it also builds. */
static void policy(const char *text)
{
    static const char *const ids[] = {"sess_1"};
    sbx__err err = {0};
    struct sbx__api_req r;
    sbx_status st = sbx__proto_v1.check_policy(text, &err);
    check_status(st, &err);
    st = sbx__proto_v2.check_policy(text, &err);
    check_status(st, &err);
    if (st == SBX_OK) {
        if (sbx__proto_v2.update_network_policy(&r, ids[0], text) != SBX_OK || !r.body)
            abort(); /* checked, so it converts */
        sbx__api_req_free(&r);
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
    for (int v = 0; v < 2; v++) {
        const struct sbx__proto *p = v ? &sbx__proto_v2 : &sbx__proto_v1;
        sandbox(p, body, size);
        snapshot(p, body, size, false);
        snapshot(p, body, size, true);
    }
    command(body, size);
    check_status(sbx__api_check_list(body, size, SBX__API_SANDBOXES, &err), &err);
    check_status(sbx__api_check_list(body, size, SBX__API_SNAPSHOTS, &err), &err);
    check_status(sbx__api_check_deleted(body, size, &err), &err);
    log_line(body, size);
    error_text(body, size);
    free(body);
    /* A caller's network policy: the same bytes as a C string. */
    if ((text = malloc(size + 1)) == NULL)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    policy(text);
    free(text);
    return 0;
}
