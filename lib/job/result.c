/* SPDX-License-Identifier: MIT */
/* A job's result as JSON (schema sbxrun.job.result/1, doc/job.md). All of
 * its text is redacted already: tails and artifacts came through the
 * command's redaction, messages are the library's own, and the inputs
 * shown leave out the secret ones ("token") and the patch. */
#include "util/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "job/job_int.h"
#include "redact/redact_int.h"

/* Text as JSON: invalid UTF-8 (a cut multi-byte character, binary output)
 * becomes U+FFFD rather than failing the whole result. */
static json_t *text(const char *p, size_t n)
{
    sbx__buf b = SBX__BUF_INIT;
    json_t *j;
    if (sbx__utf8_valid(p ? p : "", n))
        return json_stringn(p ? p : "", n);
    for (size_t i = 0; i < n;) {
        size_t k = 1;
        while (k <= 4 && i + k <= n && !sbx__utf8_valid(p + i, k))
            k++;
        if (k <= 4 && i + k <= n) {
            sbx__buf_append(&b, p + i, k);
            i += k;
        } else {
            sbx__buf_puts(&b, "\xef\xbf\xbd");
            i++;
        }
    }
    j = json_stringn(b.data ? b.data : "", b.len);
    sbx__buf_free(&b);
    return j;
}

/* Text the caller gave (inputs, argv) or the library made from it (the
 * message): through the job's redaction, as the output went. */
static json_t *clean(const sbx_job *job, const char *p)
{
    sbx_redact_stream *rs;
    sbx__buf b = SBX__BUF_INIT;
    const uint8_t *o;
    size_t on;
    json_t *j;
    if (!p)
        return json_null();
    if (!job->rules) /* redaction turned off for this job */
        return text(p, strlen(p));
    if (!(rs = sbx__redact_stream_with(job->rules)))
        return json_string("[REDACTED]"); /* out of memory: never the text unredacted */
    if (sbx_redact_stream_feed(rs, (const uint8_t *)p, strlen(p), &o, &on) != SBX_OK ||
        sbx__buf_append(&b, o, on) != SBX_OK || sbx_redact_stream_finish(rs, &o, &on) != SBX_OK ||
        sbx__buf_append(&b, o, on) != SBX_OK) {
        sbx_redact_stream_free(rs);
        sbx__buf_free(&b);
        return json_string("[REDACTED]"); /* never the text unredacted */
    }
    sbx_redact_stream_free(rs);
    j = text(b.data ? b.data : "", b.len);
    sbx__buf_free(&b);
    return j;
}

static json_t *tail(const sbx_job *job, int i)
{
    const sbx__buf *b = &job->tails[i];
    size_t n = b->len < job->tail_bytes ? b->len : job->tail_bytes;
    const char *p = b->data ? b->data + b->len - n : "";
    /* Do not start inside a UTF-8 sequence. */
    while (n && ((unsigned char)p[0] & 0xC0) == 0x80)
        p++, n--;
    return text(p, n);
}

static const char *outcome_name(sbx_step_outcome o)
{
    static const char *const names[] = {"exited", "timeout", "killed", "policy-denied", "transport-error",
                                        "cancelled", "skipped"};
    return (size_t)o < SBX__ARRAY_LEN(names) ? names[o] : "unknown";
}

static json_t *steps_json(const sbx_job *job)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < job->nsteps; i++) {
        const struct sbx__jstep *s = &job->steps[i];
        json_t *argv = json_array(), *o;
        for (size_t k = 0; argv && k < s->argv.n; k++)
            json_array_append_new(argv, clean(job, s->argv.v[k]));
        o = json_pack("{s:s,s:o,s:s,s:s,s:i,s:I,s:s?}", "name", s->name, "argv", argv ? argv : json_null(), "cwd",
                      s->cwd, "outcome", outcome_name(s->outcome), "exitCode", s->exit_code, "durationMs",
                      (json_int_t)s->duration_ms, "commandId", s->command_id);
        if (!o || json_array_append_new(a, o)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *artifacts_json(const sbx_job *job)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < job->nartifacts; i++) {
        const struct sbx__job_artifact *f = &job->artifacts[i];
        json_t *o;
        if (!f->read)
            continue; /* the job ended before its artifacts */
        o = json_pack("{s:s,s:b}", "path", f->path, "found", f->found);
        if (o && f->found) {
            json_object_set_new(o, "size", json_integer((json_int_t)f->data.len));
            json_object_set_new(o, "truncated", json_boolean(f->truncated));
            json_object_set_new(o, "content", text(f->data.data, f->data.len));
        } else if (o && f->error) {
            json_object_set_new(o, "error", clean(job, f->error));
        }
        if (!o || json_array_append_new(a, o)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *inputs_json(const sbx_job *job)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < job->inputs.n; i++) {
        const char *kv = job->inputs.v[i], *eq = strchr(kv, '=');
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
        if (strcmp(key, "token") == 0)
            json_object_set_new(o, key, json_string("[REDACTED:secret]"));
        else
            json_object_set_new(o, key, clean(job, eq + 1));
    }
    return o;
}

static int dump_cb(const char *p, size_t n, void *data)
{
    return sbx__buf_append(data, p, n) == SBX_OK ? 0 : -1;
}

sbx_status sbx__job_json_text(json_t *r, char **out)
{
    sbx__buf b = SBX__BUF_INIT;
    /* Into our own buffer: the caller frees it with sbx_free(). */
    int rc = json_dump_callback(r, dump_cb, &b, JSON_COMPACT);
    json_decref(r);
    if (rc != 0 || !b.data) {
        sbx__buf_free(&b);
        return SBX_E_NOMEM;
    }
    *out = sbx__buf_detach(&b, NULL);
    return SBX_OK;
}

void sbx__job_vmessage(char **msg, const char *fmt, va_list ap)
{
    char text[1024];
    vsnprintf(text, sizeof text, fmt, ap);
    sbx__free(*msg);
    *msg = sbx__strdup(text); /* NULL when out of memory: the status says it */
}

json_t *sbx__job_result(const sbx_job *job)
{
    json_t *outputs = json_object();
    if (outputs && job->resolved_commit)
        json_object_set_new(outputs, "resolvedCommit", json_string(job->resolved_commit));
    if (outputs && job->type == J_CLONE)
        json_object_set_new(outputs, "workspace", json_string(sbx__job_dir(job)));
    if (outputs && job->pm)
        json_object_set_new(outputs, "packageManager", json_string(job->pm));
    if (outputs && job->lockfile)
        json_object_set_new(outputs, "lockfile", json_string(job->lockfile));
    if (outputs && job->patch_json) {
        json_t *p = json_loads(job->patch_json, 0, NULL);
        if (p)
            json_object_set_new(outputs, "patch", p);
    }
    return json_pack("{s:s,s:s,s:s,s:o,s:i,s:b,s:o,s:o,s:o,s:I,s:I,s:{s:I,s:I},s:o,s:o,s:o}", "schema",
                  "sbxrun.job.result/1", "jobType", sbx__job_type_str(job->type), "status",
                  sbx_job_verdict_name(job->verdict), "inputs", inputs_json(job), "exitCode", job->exit_code,
                  "retryable", job->retryable, "message", clean(job, job->message), "stdoutTail", tail(job, 0), "stderrTail",
                  tail(job, 1), "stdoutBytes", (json_int_t)job->bytes[0], "stderrBytes", (json_int_t)job->bytes[1],
                  "timings", "startedAt", (json_int_t)job->started_at, "durationMs", (json_int_t)job->duration_ms,
                  "steps", steps_json(job), "artifacts", artifacts_json(job), "outputs",
                  outputs ? outputs : json_null());
}

sbx_status sbx_job_result_to_json(sbx_job *job, char **out)
{
    json_t *r;
    SBX__ENTER(job, false);
    SBX__ARG(job, out, "out must not be NULL");
    *out = NULL;
    if (!job->finished)
        return sbx__err_set(&job->err, SBX_E_MISUSE, "the job has not run to its end: no result yet");
    if (!(r = sbx__job_result(job)) || sbx__job_json_text(r, out) != SBX_OK)
        return sbx__err_nomem(&job->err);
    return SBX_OK;
}
