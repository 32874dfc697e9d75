/* SPDX-License-Identifier: MIT */
/*
 * jobrun: carrying a job out in a sandbox, as an op made of other ops
 * (sbx__op_adopt): the network preset of the type, an upload (a patch),
 * the steps' commands one after the other, then the artifacts. advance()
 * is the one place that decides what comes next; each child's end calls
 * it again. The soft timeout is an engine timer: SIGTERM to the running
 * command, SIGKILL after the grace period, and the command is followed to
 * its end so that its output is kept.
 */
#include "util/internal.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "client/command_int.h"
#include "client/sandbox_int.h"
#include "job/job_int.h"
#include "policy/netpolicy_sdk.h"
#include "policy/policy_share.h"
#include "redact/redact_int.h"
#include "util/clock.h"
#include "util/duration.h"

/* After SIGKILL, how long the command's own follow may still take before
 * its hard deadline ends it. */
#define BACKSTOP_MS 10000
#define CAPTURE_MAX (256u << 10)

enum phase { PH_NETPOLICY, PH_UPLOAD, PH_STEPS, PH_ARTIFACTS, PH_DONE };

struct jrun {
    sbx_job *job;
    sbx_op *op;
    sbx_sandbox *sbx;
    enum phase phase;
    size_t art;               /* the artifact being read */
    sbx__redact_rules *rules; /* NULL: not redacted */
    sbx_redact_stream *ars;   /* the artifact being read, redacted */
    sbx_command *cmd;         /* the running step's */
    sbx_op *child;            /* the op advance() waits for */
    sbx_op *killer;           /* a kill in flight */
    size_t tr_step;
    sbx__timer timer;
    sbx__timer kick;          /* the first advance, in the next round */
    struct sbx__slot_wait wait; /* its place in the client's limits; first
                                 * member after these: see from_wait() */
    int64_t deadline, step_t0, t0;
    int next_signal;          /* after SIGTERM: SIGKILL */
    bool timed_out, cancelled, advancing, again, finishing;
    bool lost;                /* out of memory lost part of the job's record (transcript, an artifact) */
    bool failed;              /* a step failed: artifacts, then "failed" */
    bool kill_pending;        /* SIGKILL is due once the kill in flight ends */
    sbx_verdict verdict;
    sbx_status fail;
};

static void advance(struct jrun *jr);

/* The transcript the job records in: the caller's, or its own. */
static sbx_transcript *TR(const sbx_job *job)
{
    return job->tr ? job->tr : job->own_tr;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The job's end: its verdict and message (printf), once. The op itself
 * ends when no child is left (a kill in flight is waited for). */
static void conclude(struct jrun *jr, sbx_verdict v, sbx_status fail, const char *fmt, ...) SBX__PRINTF(4, 5);

static void conclude(struct jrun *jr, sbx_verdict v, sbx_status fail, const char *fmt, ...)
{
    sbx_job *job = jr->job;
    if (jr->phase == PH_DONE)
        return;
    jr->phase = PH_DONE;
    jr->verdict = v;
    jr->fail = fail;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        sbx__job_vmessage(&job->message, fmt, ap);
        va_end(ap);
    }
    jr->again = true;
}

/* The job's end, once no child is left. Only marks it: advance() ends
 * the op as its very last step, because ending it may free jr (a run
 * destroys the op of a job it adopted at once). */
static void finish_op(struct jrun *jr)
{
    if (jr->child || jr->killer || jr->finishing)
        return;
    jr->finishing = true;
}

static void end_op(struct jrun *jr)
{
    sbx_job *job = jr->job;
    sbx_op *op = jr->op;
    sbx_status st;
    sbx__slot_give(job->core, &jr->wait);
    sbx__engine_timer_cancel(jr->job->core->engine, &jr->timer);
    sbx__engine_timer_cancel(jr->job->core->engine, &jr->kick);
    if (job->own_tr && sbx_transcript_finish(job->own_tr, jr->verdict) == SBX_E_NOMEM)
        jr->lost = true;
    /* A record that misses part of the job (its transcript, an artifact)
     * is not reported as the job's: the job fails for want of memory. */
    if (jr->lost && jr->fail == SBX_OK && jr->verdict != SBX_VERDICT_CANCELLED) {
        sbx__free(job->message);
        job->message = sbx__strdup("out of memory: the job's transcript or artifacts could not be kept whole");
        jr->verdict = SBX_VERDICT_ERROR;
        jr->fail = SBX_E_NOMEM;
    }
    job->verdict = jr->verdict;
    job->duration_ms = sbx__mono_ms() - jr->t0;
    if (jr->verdict == SBX_VERDICT_TIMED_OUT || jr->verdict == SBX_VERDICT_UNAVAILABLE)
        job->retryable = true;
    job->finished = true;
    st = jr->verdict == SBX_VERDICT_CANCELLED ? SBX_E_CANCELLED : jr->fail;
    /* jr and the job may be gone once the op is finished: nothing after. */
    if (st != SBX_OK)
        sbx__op_finish(op, st, "%s", job->message ? job->message : sbx_strerror(st));
    else
        sbx__op_finish(op, SBX_OK, NULL);
}

/* ---- the transcript ----------------------------------------------------------------------- */

/* A transcript call's status: running out of memory leaves the record
 * short, which fails the job at its end (end_op). Other refusals (a
 * transcript over its size limit) are the transcript's to record. */
static void tr_took(struct jrun *jr, sbx_status st)
{
    if (st == SBX_E_NOMEM)
        jr->lost = true;
}

/* A policy's summary (v) set in t by set; nothing for null. */
static sbx_status tr_json(sbx_transcript *t, sbx_status (*set)(sbx_transcript *, const char *), const json_t *v)
{
    char *text;
    sbx_status st;
    if (json_is_null(v))
        return SBX_OK;
    if (!(text = json_dumps(v, JSON_COMPACT)))
        return SBX_E_NOMEM;
    st = set(t, text);
    free(text);
    return st;
}

/* The policies the job runs under, in its header. */
static void tr_policies(struct jrun *jr, sbx_transcript *t)
{
    json_t *pol, *np;
    if (sbx__job_policy_summaries(jr->job, &pol, &np) != SBX_OK) {
        jr->lost = true;
        return;
    }
    tr_took(jr, tr_json(t, sbx_transcript_set_policy_json, pol));
    tr_took(jr, tr_json(t, sbx_transcript_set_netpolicy_json, np));
    json_decref(pol);
    json_decref(np);
}

static void tr_header(struct jrun *jr)
{
    sbx_job *job = jr->job;
    sbx_transcript *t = TR(job);
    if (!t || job->tr_shared)
        return; /* a run writes the header of its transcript */
    if (sbx_transcript_step_count(t) > 0)
        return;
    tr_took(jr, sbx_transcript_set_job_type(t, sbx__job_type_str(job->type)));
    for (size_t i = 0; i < job->inputs.n; i++) {
        const char *kv = job->inputs.v[i], *eq = strchr(kv, '=');
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
        if (strcmp(key, "token") != 0)
            tr_took(jr, sbx_transcript_set_input(t, key, eq + 1));
    }
    tr_took(jr, sbx_transcript_set_endpoint(t, job->core->endpoint));
    tr_policies(jr, t);
    if (sbx_sandbox_id(jr->sbx))
        tr_took(jr, sbx_transcript_set_sandbox_id(t, sbx_sandbox_id(jr->sbx)));
}

static void tr_step_begin(struct jrun *jr, const struct sbx__jstep *s)
{
    sbx_transcript *t = TR(jr->job);
    sbx_status st;
    if (!t)
        return;
    if ((st = sbx_transcript_step_begin(t, s->name, &jr->tr_step)) != SBX_OK) {
        tr_took(jr, st);
        jr->tr_step = SIZE_MAX;
        return;
    }
    tr_took(jr, sbx_transcript_step_set_argv(t, jr->tr_step, s->argv.n, (const char *const *)s->argv.v));
    tr_took(jr, sbx_transcript_step_set_cwd(t, jr->tr_step, s->cwd));
    for (size_t i = 0; i < jr->job->env.n; i++) {
        char name[256];
        const char *eq = strchr(jr->job->env.v[i], '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - jr->job->env.v[i]), jr->job->env.v[i]);
        tr_took(jr, sbx_transcript_step_add_env(t, jr->tr_step, name));
    }
}

static void tr_step_end(struct jrun *jr, const struct sbx__jstep *s, bool retryable, const char *detail)
{
    sbx_transcript *t = TR(jr->job);
    if (!t || jr->tr_step == SIZE_MAX)
        return;
    if (s->command_id)
        tr_took(jr, sbx_transcript_step_set_command_id(t, jr->tr_step, s->command_id));
    tr_took(jr, sbx_transcript_step_end(t, jr->tr_step, s->outcome,
                                        s->exit_code >= 0 && s->exit_code <= 255 ? s->exit_code : -1, retryable,
                                        detail));
    jr->tr_step = SIZE_MAX;
}

/* ---- safety ------------------------------------------------------------------------------ */

/* The redaction rules of the run: the shapes, every environment value,
 * the caller's secrets, the clone token. */
static sbx_status make_rules(struct jrun *jr)
{
    sbx_job *job = jr->job;
    sbx_redactor *r;
    const char *tok = sbx__job_input(job, "token");
    sbx_status st = SBX_OK;
    if (!job->opt_redact) {
        /* Unredacted output; the job's own record is still kept. */
        if (!job->tr && !(job->own_tr = sbx_transcript_new()))
            return sbx__err_nomem(&job->err);
        return SBX_OK;
    }
    if (!(r = sbx_redactor_new()))
        return sbx__err_nomem(&job->err);
    for (size_t i = 0; i < job->env.n && st != SBX_E_NOMEM; i++) {
        const char *v = strchr(job->env.v[i], '=') + 1;
        if (strlen(v) >= SBX__SECRET_MIN) /* the setter refused longer than the maximum */
            st = sbx_redactor_add_secret(r, (const uint8_t *)v, strlen(v));
    }
    /* The setters took only what the redactor takes: any refusal here is
     * a secret that would go unredacted, so the job does not run. */
    for (size_t i = 0; i < job->secrets.n && st == SBX_OK; i++)
        st = sbx_redactor_add_secret(r, (const uint8_t *)job->secrets.v[i], strlen(job->secrets.v[i]));
    if (tok && st == SBX_OK)
        st = sbx_redactor_add_secret(r, (const uint8_t *)tok, strlen(tok));
    /* Every job's of the run, this one's again among them (a value added
     * twice is kept once; each was checked as its own job's). */
    for (size_t i = 0; job->run_secrets && i < job->run_secrets->n && st == SBX_OK; i++)
        st = sbx_redactor_add_secret(r, (const uint8_t *)job->run_secrets->v[i], strlen(job->run_secrets->v[i]));
    if (st == SBX_E_NOMEM) {
        sbx_redactor_free(r);
        return sbx__err_nomem(&job->err);
    }
    if (st != SBX_OK) {
        sbx__err_set(&job->err, st, "%s cannot be redacted: %s",
                     tok && (strlen(tok) < SBX__SECRET_MIN || strlen(tok) > SBX__SECRET_MAX) ? "the token input"
                                                                                          : "a secret of the job",
                     sbx_redactor_last_error(r));
        sbx_redactor_free(r);
        return st;
    }
    jr->rules = sbx__redactor_rules(r);
    job->rules = sbx__redactor_rules(r); /* the result's text too (freed with the job) */
    if (!jr->rules || !job->rules ||
        (!job->tr && (!(job->own_tr = sbx_transcript_new()) || sbx_transcript_set_redactor(job->own_tr, r) != SBX_OK))) {
        /* the caller frees jr alone: its reference goes here */
        sbx__redact_rules_unref(jr->rules);
        jr->rules = NULL;
        sbx_redactor_free(r);
        return sbx__err_nomem(&job->err);
    }
    sbx_redactor_free(r);
    return SBX_OK;
}

/* Check the steps from `from` on against the policy of the type. true
 * when one is refused (the job then ends denied; nothing of it was sent). */
static bool refused(struct jrun *jr, size_t from)
{
    sbx_job *job = jr->job;
    sbx_policy *def = NULL;
    const sbx_policy *p = job->policy;
    bool denied = false;
    if (!job->opt_policy)
        return false;
    if (!p && !(p = def = sbx_policy_new())) {
        conclude(jr, SBX_VERDICT_ERROR, sbx__err_nomem(&job->err), SBX__NOMEM_TEXT);
        return true;
    }
    for (size_t i = from; i < job->nsteps && !denied; i++) {
        struct sbx__jstep *s = &job->steps[i];
        sbx_policy_reason why = SBX_POLICY_ALLOW;
        char msg[768];
        sbx_status st = sbx_policy_check(p, sbx__job_type_str(job->type), s->argv.n, (const char *const *)s->argv.v,
                                         s->cwd, &why, msg, sizeof msg);
        if (st == SBX_OK)
            continue;
        denied = true;
        s->outcome = SBX_STEP_POLICY_DENIED;
        tr_step_begin(jr, s);
        tr_step_end(jr, s, false, msg);
        if (st == SBX_E_POLICY_DENIED)
            conclude(jr, SBX_VERDICT_DENIED, SBX_OK, "step %s denied by the command policy (%s): %s", s->name,
                     sbx_policy_reason_name(why), msg);
        else
            conclude(jr, SBX_VERDICT_ERROR, st, "step %s: the command policy could not decide: %s", s->name, msg);
    }
    sbx_policy_free(def);
    return denied;
}

/* ---- the soft timeout ---------------------------------------------------------------------- */

static void signal_command(struct jrun *jr, int sig);

static void kill_done(sbx_op *op, void *arg)
{
    struct jrun *jr = arg;
    jr->killer = NULL;
    sbx__op_destroy(op);
    if (jr->kill_pending) { /* the grace ended while SIGTERM was in flight */
        jr->kill_pending = false;
        if (jr->cmd && sbx_command_exit_code(jr->cmd) < 0)
            signal_command(jr, 9);
    }
    advance(jr);
}

/* Send sig to the running command (once its id is known). */
static void signal_command(struct jrun *jr, int sig)
{
    sbx_op *k = NULL;
    if (!jr->cmd || !sbx_command_id(jr->cmd) || jr->killer)
        return;
    if (sbx_command_kill_start(jr->cmd, sig, &k) != SBX_OK)
        return; /* the hard deadline of the command still ends it */
    jr->killer = k;
    sbx__op_adopt(k, kill_done, jr);
}

static void on_timer(sbx__timer *t, void *user)
{
    struct jrun *jr = user;
    (void)t;
    if (jr->phase == PH_DONE)
        return;
    if (!jr->timed_out) {
        jr->timed_out = true;
        if (jr->phase != PH_STEPS || !jr->cmd || !sbx_command_id(jr->cmd)) {
            /* Nothing runs yet (or it has no id): stop what is in flight. */
            if (jr->child)
                sbx__op_cancel_now(jr->child);
            return;
        }
        signal_command(jr, 15);
        sbx__engine_timer_set(jr->job->core->engine, &jr->timer, sbx__mono_ms() + jr->job->kill_grace_ms, on_timer,
                              jr);
        return;
    }
    if (jr->killer)
        jr->kill_pending = true; /* after the SIGTERM in flight */
    else
        signal_command(jr, 9); /* the grace period is over */
}

/* ---- steps ---------------------------------------------------------------------------------- */

static char *sbx__strdup_printf_step(const char *name, int code)
{
    char msg[512];
    snprintf(msg, sizeof msg, "step %s exited with code %d", name, code);
    return sbx__strdup(msg);
}

/* The line of text that starts with prefix, from p to end; its rest
 * (after prefix) and length, or NULL. */
static const char *line_after(const char *p, const char *end, const char *prefix, size_t *len)
{
    size_t pl = strlen(prefix);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
        if ((size_t)(e - p) >= pl && memcmp(p, prefix, pl) == 0) {
            *len = (size_t)(e - p) - pl;
            return p + pl;
        }
        p = e + 1;
    }
    return NULL;
}

/* Whether a ---/+++ line's path (after "a/" or "b/", up to a tab) is
 * file. */
static bool header_names(const char *p, size_t n, const char *file, size_t fl)
{
    const char *slash = memchr(p, '/', n), *tab;
    if (!slash)
        return false;
    n -= (size_t)(slash + 1 - p);
    p = slash + 1;
    if ((tab = memchr(p, '\t', n)))
        n = (size_t)(tab - p);
    return n == fl && memcmp(p, file, fl) == 0;
}

/* Why git apply refused the patch of repo.applyPatch, from what it printed
 * ("error: patch failed: FILE:LINE", LINE the hunk's old start): the file
 * and the hunk, by its header in the patch, as sbx_patch names them; else
 * git's own first error; else the exit code. */
static char *apply_failure(const sbx_job *job, int code)
{
    /* Both NUL-terminated, so strtol stops in them. */
    const char *err = job->tails[1].data, *eend = err ? err + job->tails[1].len : NULL;
    const char *pt = (const char *)job->patch_data, *pend = pt ? pt + job->patch_len : NULL, *at, *colon;
    char msg[1024], file[512];
    size_t n, fl;
    long line;
    bool ours;
    if (!err || !(at = line_after(err, eend, "error: patch failed: ", &n))) {
        if (err && (at = line_after(err, eend, "error: ", &n))) {
            snprintf(msg, sizeof msg, "the patch does not apply: %.*s (git apply exited with code %d)", (int)n, at,
                     code);
            return sbx__strdup(msg);
        }
        return sbx__strdup_printf_step("apply", code);
    }
    for (colon = at + n; colon > at && colon[-1] != ':'; colon--)
        ;
    fl = colon > at ? (size_t)(colon - 1 - at) : 0;
    line = colon > at ? strtol(colon, NULL, 10) : -1;
    if (fl >= sizeof file) /* a path this long is named by git's own line */
        fl = 0, line = -1;
    snprintf(file, sizeof file, "%.*s", (int)fl, at);
    /* The hunk of that file starting at that line of the old text; ours:
     * the file's old (---) or new (+++) name is FILE. */
    ours = false;
    for (const char *p = pt; pt && p < pend;) {
        const char *nl = memchr(p, '\n', (size_t)(pend - p)), *e = nl ? nl : pend;
        size_t ll = (size_t)(e - p);
        if (ll > 4 && !memcmp(p, "--- ", 4))
            ours = header_names(p + 4, ll - 4, file, fl);
        else if (ll > 4 && !memcmp(p, "+++ ", 4))
            ours = ours || header_names(p + 4, ll - 4, file, fl);
        else if (ours && ll > 4 && !memcmp(p, "@@ -", 4) && strtol(p + 4, NULL, 10) == line) {
            const char *close = ll > 7 ? memmem(p + 3, ll - 3, " @@", 3) : NULL;
            size_t hl = close ? (size_t)(close + 3 - p) : ll;
            snprintf(msg, sizeof msg,
                     "the patch does not apply: %s: hunk %.*s: its context and removed lines are not in the file "
                     "(git apply exited with code %d)",
                     file, (int)hl, p, code);
            return sbx__strdup(msg);
        }
        p = e + 1;
    }
    snprintf(msg, sizeof msg, "the patch does not apply: %.*s (git apply exited with code %d)", (int)n, at, code);
    return sbx__strdup(msg);
}

static void tail_add(sbx__buf *b, size_t cap, const uint8_t *d, size_t n)
{
    if (cap == 0)
        return;
    if (n > cap) { /* only its end can stay */
        d += n - cap;
        n = cap;
    }
    (void)sbx__buf_append(b, d, n); /* out of memory: the tail is shorter */
    sbx__buf_keep_tail(b, cap, cap);
}

static int on_output(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    struct jrun *jr = user;
    sbx_job *job = jr->job;
    const struct sbx__jstep *s = &job->steps[job->cur];
    int i = stream == SBX_STREAM_STDERR;
    if (TR(job) && jr->tr_step != SIZE_MAX)
        tr_took(jr, sbx_transcript_step_add_output(TR(job), jr->tr_step, stream, data, len));
    if (s->kind != JS_RUN) {
        if (!i && job->capture.len + len <= CAPTURE_MAX)
            (void)sbx__buf_append(&job->capture, data, len);
        return 0;
    }
    tail_add(&job->tails[i], job->tail_bytes, data, len);
    if (job->cb && job->cb(stream, data, len, job->cb_user)) {
        jr->cancelled = true;
        return 1;
    }
    return 0;
}

static void step_done(sbx_op *op, void *arg)
{
    char d1[SBX__DURATION_TEXT_MAX], d2[SBX__DURATION_TEXT_MAX];
    struct jrun *jr = arg;
    sbx_job *job = jr->job;
    struct sbx__jstep *s = &job->steps[job->cur];
    sbx_status st = sbx_op_status(op);
    char detail[1024];
    bool started = sbx_command_id(jr->cmd) != NULL;
    snprintf(detail, sizeof detail, "%s", st == SBX_OK ? "" : sbx_op_last_error(op));
    jr->child = NULL;
    sbx__op_destroy(op);
    s->ran = started;
    s->duration_ms = sbx__mono_ms() - jr->step_t0;
    s->exit_code = sbx_command_exit_code(jr->cmd);
    if (started && !(s->command_id = sbx__strdup(sbx_command_id(jr->cmd))))
        st = st == SBX_OK ? SBX_E_NOMEM : st;
    if (s->kind == JS_RUN) {
        job->bytes[0] += sbx_command_output_bytes(jr->cmd, SBX_STREAM_STDOUT);
        job->bytes[1] += sbx_command_output_bytes(jr->cmd, SBX_STREAM_STDERR);
    }
    if (jr->timed_out)
        s->outcome = SBX_STEP_TIMEOUT;
    else if (st == SBX_OK)
        s->outcome = SBX_STEP_EXITED;
    else if (st == SBX_E_CONFLICT && s->exit_code >= 0)
        s->outcome = SBX_STEP_KILLED;
    else if (st == SBX_E_TIMEOUT)
        s->outcome = SBX_STEP_TIMEOUT;
    else if (st == SBX_E_CANCELLED || jr->cancelled)
        s->outcome = SBX_STEP_CANCELLED;
    else
        s->outcome = SBX_STEP_TRANSPORT_ERROR;
    if (s->kind == JS_RUN || s->exit_code != 0)
        job->exit_code = s->exit_code;
    tr_step_end(jr, s,
                s->outcome == SBX_STEP_TIMEOUT ||
                    (s->outcome == SBX_STEP_TRANSPORT_ERROR && !sbx__command_may_have_started(jr->cmd)),
                detail[0] ? detail : NULL);
    /* Stopped on our side (a callback, a budget) while it still runs
     * there: kill it. The handle is kept until the kill is done. */
    if (started && s->exit_code < 0 && s->outcome == SBX_STEP_CANCELLED)
        signal_command(jr, 9);

    switch (s->outcome) {
    case SBX_STEP_TIMEOUT:
        if (job->run_wall_ms)
            conclude(jr, SBX_VERDICT_TIMED_OUT, SBX_OK,
                     "step %s was stopped: the run's wall-time budget of %s ran out (%s were left for this job)",
                     s->name, sbx__duration_text(job->run_wall_ms, d1), sbx__duration_text(job->timeout_ms, d2));
        else
            conclude(jr, SBX_VERDICT_TIMED_OUT, SBX_OK, "step %s ran past the job's %s timeout and was stopped",
                     s->name, sbx__duration_text(job->timeout_ms, d1));
        break;
    case SBX_STEP_CANCELLED:
        conclude(jr, SBX_VERDICT_CANCELLED, SBX_OK, "cancelled during step %s", s->name);
        break;
    case SBX_STEP_TRANSPORT_ERROR:
        /* Running it again is safe only if this one never reached the
         * sandbox. */
        job->retryable = !sbx__command_may_have_started(jr->cmd);
        conclude(jr, SBX_VERDICT_ERROR, st, "step %s: %s", s->name, detail);
        break;
    case SBX_STEP_KILLED:
        conclude(jr, SBX_VERDICT_FAILED, SBX_OK, "step %s was killed", s->name);
        break;
    default:
        if (s->exit_code != 0) {
            if (s->kind == JS_DETECT)
                conclude(jr, SBX_VERDICT_FAILED, SBX_OK, "cannot list %s (exit code %d): is it the project?",
                         s->argv.v[2], s->exit_code);
            else {
                /* Failed: its reports (junit, coverage) are wanted most
                 * now; the artifacts are read, then the job ends. */
                jr->failed = true;
                sbx__free(job->message);
                job->message = job->type == J_APPLY ? apply_failure(job, s->exit_code)
                                                    : sbx__strdup_printf_step(s->name, s->exit_code);
                jr->phase = PH_ARTIFACTS;
            }
            break;
        }
        if (s->kind == JS_DETECT) {
            size_t before = job->nsteps;
            sbx_status pst = sbx__job_plan_detected(job, job->capture.data ? job->capture.data : "", job->capture.len);
            if (pst == SBX_E_NOT_FOUND) {
                conclude(jr, SBX_VERDICT_FAILED, SBX_OK, "%s", sbx__err_msg(&job->err));
                break;
            }
            if (pst != SBX_OK || (pst = sbx__job_plan(job)) != SBX_OK) {
                conclude(jr, SBX_VERDICT_ERROR, pst, "%s", sbx__err_msg(&job->err));
                break;
            }
            if (refused(jr, before))
                break;
        } else if (s->kind == JS_REVPARSE && job->capture.data) {
            size_t n = job->capture.len;
            while (n && (job->capture.data[n - 1] == '\n' || job->capture.data[n - 1] == '\r'))
                n--;
            sbx__free(job->resolved_commit);
            job->resolved_commit = sbx__strndup(job->capture.data, n);
        }
        sbx__buf_clear(&job->capture);
        job->cur++;
    }
    advance(jr);
}

static sbx_status start_step(struct jrun *jr)
{
    sbx_job *job = jr->job;
    struct sbx__jstep *s = &job->steps[job->cur];
    sbx_command *cmd;
    sbx_op *op = NULL;
    sbx_status st;
    sbx_command_free(jr->cmd); /* the step before's */
    jr->cmd = NULL;
    if (!(cmd = sbx_command_new(jr->sbx)))
        return sbx__err_nomem(&job->err);
    jr->cmd = cmd;
    if ((st = sbx_command_set_argv(cmd, s->argv.n, (const char *const *)s->argv.v)) != SBX_OK ||
        (st = sbx_command_set_cwd(cmd, s->cwd)) != SBX_OK)
        return sbx__err_set(&job->err, st, "step %s: %s", s->name, sbx_command_last_error(cmd));
    for (size_t i = 0; i < job->env.n; i++) {
        char name[256];
        const char *eq = strchr(job->env.v[i], '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - job->env.v[i]), job->env.v[i]);
        if ((st = sbx_command_set_env(cmd, name, eq + 1)) != SBX_OK)
            return sbx__err_set(&job->err, st, "%s", sbx_command_last_error(cmd));
    }
    if (jr->deadline) {
        /* The command's own deadline is the backstop of the soft timeout:
         * past it and the grace, the command layer kills and gives up. */
        int64_t left = jr->deadline - sbx__mono_ms();
        sbx_command_set_timeout_ms(cmd, (left > 0 ? left : 1) + job->kill_grace_ms + BACKSTOP_MS);
    }
    if (jr->rules)
        sbx__redact_rules_ref(jr->rules);
    sbx__command_own_safety(cmd, jr->rules);
    sbx_command_set_output_cb(cmd, on_output, jr);
    tr_step_begin(jr, s);
    jr->step_t0 = sbx__mono_ms();
    if ((st = sbx_command_run_start(cmd, &op)) != SBX_OK) {
        s->outcome = st == SBX_E_POLICY_DENIED ? SBX_STEP_POLICY_DENIED : SBX_STEP_TRANSPORT_ERROR;
        tr_step_end(jr, s, false, sbx_command_last_error(cmd));
        return sbx__err_set(&job->err, st, "step %s: %s", s->name, sbx_command_last_error(cmd));
    }
    jr->child = op;
    sbx__op_adopt(op, step_done, jr);
    return SBX_OK;
}

/* ---- the other children ---------------------------------------------------------------------- */

/* base64 of "x-access-token:TOKEN", for HTTP basic auth to a git host. */
static char *basic_auth(const char *token)
{
    static const char user[] = "x-access-token:";
    size_t n = strlen(user) + strlen(token), out = 4 * ((n + 2) / 3) + 1;
    char *plain = sbx__malloc(n + 1), *b64 = sbx__malloc(out + 6);
    if (!plain || !b64) {
        sbx__free(plain);
        sbx__free(b64);
        return NULL;
    }
    snprintf(plain, n + 1, "%s%s", user, token);
    memcpy(b64, "Basic ", 6);
    EVP_EncodeBlock((unsigned char *)b64 + 6, (const unsigned char *)plain, (int)n);
    sbx__wipe(plain, n);
    sbx__free(plain);
    return b64;
}

static void child_done(sbx_op *op, void *arg)
{
    struct jrun *jr = arg;
    sbx_job *job = jr->job;
    sbx_status st = sbx_op_status(op);
    jr->child = NULL;
    if (jr->phase == PH_NETPOLICY || jr->phase == PH_UPLOAD) {
        if (st == SBX_E_CANCELLED || jr->timed_out)
            conclude(jr, jr->timed_out ? SBX_VERDICT_TIMED_OUT : SBX_VERDICT_CANCELLED, SBX_OK, "%s",
                     jr->timed_out ? "the job's timeout passed before its first command" : "cancelled");
        else if (st != SBX_OK)
            conclude(jr,
                     st == SBX_E_TRANSPORT || st == SBX_E_HTTP || st == SBX_E_RATE_LIMITED || st == SBX_E_TIMEOUT
                         ? SBX_VERDICT_UNAVAILABLE /* the sandbox cannot be had now */
                         : SBX_VERDICT_ERROR,
                     st, "%s: %s", jr->phase == PH_NETPOLICY ? "setting the network policy" : "uploading",
                     sbx_op_last_error(op));
        else
            jr->phase = jr->phase == PH_NETPOLICY ? PH_UPLOAD : PH_STEPS;
    } else if (jr->phase == PH_ARTIFACTS) {
        struct sbx__job_artifact *a = &job->artifacts[jr->art];
        const uint8_t *o;
        size_t on;
        a->read = true;
        a->found = st == SBX_OK || (a->truncated && st == SBX_E_CANCELLED);
        if (a->found && jr->ars &&
            (sbx_redact_stream_finish(jr->ars, &o, &on) != SBX_OK || sbx__buf_append(&a->data, o, on) != SBX_OK))
            jr->lost = true;
        if (!a->found && (st == SBX_E_NOMEM || !(a->error = sbx__strdup(sbx_op_last_error(op)))))
            jr->lost = true;
        sbx_redact_stream_free(jr->ars);
        jr->ars = NULL;
        jr->art++;
    }
    sbx__op_destroy(op);
    advance(jr);
}

static int artifact_data(const uint8_t *data, size_t len, void *user)
{
    struct jrun *jr = user;
    struct sbx__job_artifact *a = &jr->job->artifacts[jr->art];
    size_t room = jr->job->artifact_max > a->data.len ? jr->job->artifact_max - a->data.len : 0;
    const uint8_t *o = data;
    size_t on = len;
    if (len > room) {
        len = room;
        a->truncated = true;
    }
    if (jr->ars && sbx_redact_stream_feed(jr->ars, data, len, &o, &on) != SBX_OK) {
        jr->lost = true; /* the only failure of a stream made and fed bytes: memory */
        return 1;
    }
    if (!jr->ars)
        on = len;
    if (sbx__buf_append(&a->data, o, on) != SBX_OK) {
        jr->lost = true;
        return 1;
    }
    return a->truncated; /* enough: stop reading */
}

/* The message is on the job. */
sbx_status sbx__job_netpolicy(sbx_job *job, char **json)
{
    const char *keys[2], *vals[2], *v;
    size_t n = 0;
    sbx_netpolicy *np;
    char host[256];
    sbx_status st;
    *json = NULL;
    if (job->type == J_CLONE) {
        keys[n] = "url", vals[n++] = sbx__job_input(job, "url");
    } else if (job->type == J_INSTALL && (v = sbx__job_input(job, "registry"))) {
        keys[n] = "registry", vals[n++] = v;
    } else if (job->type == J_MIGRATE) {
        if ((v = sbx__job_input(job, "url")))
            keys[n] = "url", vals[n++] = v;
        else if ((v = sbx__job_input(job, "host")))
            keys[n] = "host", vals[n++] = v;
    }
    if (!(np = sbx_netpolicy_new()))
        return sbx__err_nomem(&job->err);
    st = sbx_netpolicy_load_preset(np, job->type == J_INSTALL ? "deps.install" : sbx__job_type_str(job->type), n,
                                   keys, vals);
    if (st == SBX_OK && job->type == J_CLONE && sbx__job_input(job, "token") &&
        sbx__job_url_host(sbx__job_input(job, "url"), host, sizeof host)) {
        /* The token stays outside: the egress proxy adds it to requests
         * for the git host only. */
        char *auth = basic_auth(sbx__job_input(job, "token"));
        st = auth ? sbx_netpolicy_inject_header(np, host, "Authorization", auth) : SBX_E_NOMEM;
        if (auth)
            sbx__free_secret(auth);
    }
    if (st == SBX_OK)
        st = sbx_netpolicy_to_json(np, json);
    if (st != SBX_OK)
        st = sbx__err_set(&job->err, st, "the network preset: %s", sbx_netpolicy_last_error(np));
    sbx_netpolicy_free(np);
    return st;
}

static sbx_status start_netpolicy(struct jrun *jr, bool *started)
{
    sbx_job *job = jr->job;
    char *json = NULL;
    sbx_op *op = NULL;
    sbx_status st;
    *started = false;
    if (!job->opt_netpolicy)
        return SBX_OK;
    if ((st = sbx__job_netpolicy(job, &json)) != SBX_OK)
        return st;
    st = sbx_sandbox_update_network_policy_start(jr->sbx, json, &op);
    sbx__free_secret(json);
    if (st != SBX_OK)
        return sbx__err_set(&job->err, st, "setting the network policy: %s", sbx_sandbox_last_error(jr->sbx));
    jr->child = op;
    *started = true;
    sbx__op_adopt(op, child_done, jr);
    return SBX_OK;
}

/* A network policy's JSON as a transcript records it: each header's
 * value left out and its name kept, as a server echoes them. text is
 * wiped and freed. NULL when out of memory. */
static json_t *without_header_values(char *text)
{
    json_t *np = json_loads(text, 0, NULL), *rules = json_object_get(np, "injectionRules"), *r, *v;
    bool ok = np != NULL;
    const char *k;
    size_t i;
    sbx__free_secret(text);
    json_array_foreach(rules, i, r) {
        json_t *names = json_array();
        ok = ok && names;
        json_object_foreach(json_object_get(r, "headers"), k, v)
            ok = ok && json_array_append_new(names, json_string(k)) == 0;
        ok = json_object_set_new(r, "headerNames", names) == 0 && ok;
    }
    sbx__netpolicy_wipe(np);
    json_array_foreach(rules, i, r)
        json_object_del(r, "headers");
    if (!ok) {
        json_decref(np);
        return NULL;
    }
    return np;
}

sbx_status sbx__job_policy_summaries(sbx_job *job, json_t **policy, json_t **netpolicy)
{
    sbx_policy *def = NULL;
    const sbx_policy *p = job->policy;
    char *text = NULL;
    sbx_status st;
    *policy = *netpolicy = NULL;
    if (!job->opt_policy)
        *policy = json_null();
    else if (p || (p = def = sbx_policy_new()))
        *policy = sbx__policy_summary(p, sbx__job_type_str(job->type));
    sbx_policy_free(def);
    if (!job->opt_netpolicy) {
        *netpolicy = json_null();
    } else {
        /* Written into a header, not the job's call: its last error stays. */
        sbx__err saved = {0};
        (void)sbx__err_copy(&saved, &job->err); /* returns the code copied */
        if ((st = sbx__job_netpolicy(job, &text)) != SBX_OK) {
            sbx__err_free(&job->err);
            job->err = saved;
        } else {
            sbx__err_free(&saved);
        }
        if (st == SBX_OK)
            *netpolicy = without_header_values(text);
        else if (st != SBX_E_NOMEM)
            *netpolicy = json_null(); /* no preset without its input: the run says so */
    }
    if (!*policy || !*netpolicy) {
        json_decref(*policy);
        json_decref(*netpolicy);
        *policy = *netpolicy = NULL;
        return SBX_E_NOMEM;
    }
    return SBX_OK;
}

/* ---- advance ---------------------------------------------------------------------------------- */

static void step_once(struct jrun *jr)
{
    sbx_job *job = jr->job;
    sbx_status st = SBX_OK;
    bool started = false;
    sbx_op *op = NULL;
    switch (jr->phase) {
    case PH_NETPOLICY:
        st = start_netpolicy(jr, &started);
        if (st == SBX_OK && !started) {
            jr->phase = PH_UPLOAD;
            jr->again = true;
        }
        break;
    case PH_UPLOAD:
        if (job->type != J_APPLY) {
            jr->phase = PH_STEPS;
            jr->again = true;
            break;
        }
        st = sbx_sandbox_write_file_start(jr->sbx, SBX__JOB_PRIVATE_DIR "/patch.diff", job->patch_data,
                                          job->patch_len, 0644, &op);
        if (st != SBX_OK) {
            st = sbx__err_set(&job->err, st, "uploading the patch: %s", sbx_sandbox_last_error(jr->sbx));
            break;
        }
        jr->child = op;
        sbx__op_adopt(op, child_done, jr);
        break;
    case PH_STEPS:
        if (jr->timed_out || jr->cancelled) {
            conclude(jr, jr->timed_out ? SBX_VERDICT_TIMED_OUT : SBX_VERDICT_CANCELLED, SBX_OK, "%s",
                     jr->timed_out ? "the job's timeout passed" : "cancelled");
            break;
        }
        if (job->cur < job->nsteps) {
            st = start_step(jr);
            break;
        }
        jr->phase = PH_ARTIFACTS;
        jr->again = true;
        break;
    case PH_ARTIFACTS:
        if (jr->timed_out || jr->cancelled) {
            conclude(jr, jr->timed_out ? SBX_VERDICT_TIMED_OUT : SBX_VERDICT_CANCELLED, SBX_OK, "%s",
                     jr->timed_out ? "the job's timeout passed while its artifacts were read" : "cancelled");
            break;
        }
        if (jr->art >= job->nartifacts) {
            conclude(jr, jr->failed ? SBX_VERDICT_FAILED : SBX_VERDICT_PASSED, SBX_OK, NULL);
            break;
        }
        if (jr->rules && !(jr->ars = sbx__redact_stream_with(jr->rules))) {
            st = sbx__err_nomem(&job->err);
            break;
        }
        st = sbx_sandbox_read_stream_start(jr->sbx, job->artifacts[jr->art].path, artifact_data, jr, &op);
        if (st != SBX_OK) {
            st = sbx__err_set(&job->err, st, "reading %s: %s", job->artifacts[jr->art].path,
                              sbx_sandbox_last_error(jr->sbx));
            break;
        }
        jr->child = op;
        sbx__op_adopt(op, child_done, jr);
        break;
    case PH_DONE:
        finish_op(jr);
        break;
    }
    if (st != SBX_OK)
        conclude(jr, SBX_VERDICT_ERROR, st, "%s", sbx__err_msg(&job->err));
}

static void advance(struct jrun *jr)
{
    if (jr->advancing) {
        jr->again = true;
        return;
    }
    jr->advancing = true;
    do {
        jr->again = false;
        if (!jr->child && !jr->finishing)
            step_once(jr);
    } while (jr->again && !jr->finishing);
    jr->advancing = false;
    if (jr->finishing)
        end_op(jr); /* the last thing: it may free jr */
}

/* ---- the op ---------------------------------------------------------------------------------- */

static void on_kick(sbx__timer *t, void *user);

static void jr_cancel(sbx_op *op)
{
    struct jrun *jr = op->state;
    jr->cancelled = true;
    if (jr->wait.queued) {
        /* Never started: it leaves the queue and ends. */
        sbx__slot_unqueue(jr->job->core, &jr->wait);
        conclude(jr, SBX_VERDICT_CANCELLED, SBX_OK, "cancelled while waiting for a place to run");
        sbx__engine_timer_set(jr->job->core->engine, &jr->kick, sbx__mono_ms(), on_kick, jr);
        return;
    }
    /* The command is killed, not left running: the kill is waited for. */
    if (jr->phase == PH_STEPS && jr->cmd && sbx_command_id(jr->cmd))
        signal_command(jr, 9);
    if (jr->child)
        sbx__op_cancel_now(jr->child);
}

static void jr_release(sbx_op *op)
{
    struct jrun *jr = op->state;
    sbx_job *job = jr->job;
    sbx__engine_timer_cancel(jr->job->core->engine, &jr->timer);
    sbx__engine_timer_cancel(jr->job->core->engine, &jr->kick);
    sbx__slot_unqueue(jr->job->core, &jr->wait);
    sbx__slot_give(jr->job->core, &jr->wait);
    sbx_command_free(jr->cmd);
    sbx_redact_stream_free(jr->ars);
    sbx__redact_rules_unref(jr->rules);
    sbx__target_unref(&jr->sbx->t);
    sbx__free(jr);
    job->run_op = NULL;
    if (job->free_pending)
        sbx__job_destroy(job); /* sbx_job_free() came first */
}

static const struct sbx__op_ops jr_ops = {jr_cancel, jr_release};

static void on_kick(sbx__timer *t, void *user)
{
    (void)t;
    advance(user);
}

/* It may run: its deadline starts now (time spent waiting for a place
 * does not count), and its first step in the engine's next round. */
static void begin(struct jrun *jr)
{
    struct sbx__engine *e = jr->job->core->engine;
    int64_t cap = jr->job->deadline_cap;
    /* Past INT64_MAX / 4 ms (73 million years) the sum would overflow: none. */
    if (jr->job->timeout_ms > 0 && jr->job->timeout_ms <= INT64_MAX / 4)
        jr->deadline = sbx__mono_ms() + jr->job->timeout_ms;
    /* A run's budget ends it too, however long it waited for its place. */
    if (cap > 0 && (jr->deadline == 0 || cap < jr->deadline))
        jr->deadline = cap;
    if (jr->deadline && jr->phase != PH_DONE)
        sbx__engine_timer_set(e, &jr->timer, jr->deadline, on_timer, jr);
    sbx__engine_timer_set(e, &jr->kick, sbx__mono_ms(), on_kick, jr);
}

static void on_grant(struct sbx__slot_wait *w)
{
    struct jrun *jr = (struct jrun *)((char *)w - offsetof(struct jrun, wait));
    begin(jr);
}

/* The patch of repo.applyPatch, checked here before it is uploaded: an
 * unsafe one is denied, an unreadable one fails; nothing is sent. */
static bool patch_refused(struct jrun *jr)
{
    sbx_job *job = jr->job;
    sbx_patch *p = sbx_patch_new();
    sbx_patch_verdict v;
    sbx_status st;
    bool bad = true;
    if (!p) {
        conclude(jr, SBX_VERDICT_ERROR, sbx__err_nomem(&job->err), SBX__NOMEM_TEXT);
        return true;
    }
    if ((st = sbx_patch_load_data(p, job->patch_data, job->patch_len)) != SBX_OK &&
        sbx_patch_get_verdict(p) == SBX_PATCH_UNCHECKED) {
        conclude(jr, SBX_VERDICT_ERROR, st == SBX_E_NOMEM ? sbx__err_nomem(&job->err) : SBX_E_PATCH, "the patch: %s",
                 sbx_patch_last_error(p));
        sbx_patch_free(p);
        return true;
    }
    /* A patch refused by the load (unsafe, malformed, too large) has its
     * verdict and message already: checking it would only replace them. */
    if (st == SBX_OK && (st = sbx_patch_check(p)) == SBX_E_NOMEM) {
        conclude(jr, SBX_VERDICT_ERROR, sbx__err_nomem(&job->err), SBX__NOMEM_TEXT);
        sbx_patch_free(p);
        return true;
    }
    v = sbx_patch_get_verdict(p);
    if (v == SBX_PATCH_UNSAFE)
        conclude(jr, SBX_VERDICT_DENIED, SBX_OK, "%s (rule %s)", sbx_patch_last_error(p),
                 sbx_patch_rule_name(sbx_patch_broken_rule(p)));
    else if (v != SBX_PATCH_SAFE && v != SBX_PATCH_APPLIES)
        conclude(jr, SBX_VERDICT_FAILED, SBX_OK, "%s", sbx_patch_last_error(p));
    else if (sbx_patch_to_json(p, &job->patch_json) != SBX_OK)
        conclude(jr, SBX_VERDICT_ERROR, sbx__err_nomem(&job->err), SBX__NOMEM_TEXT);
    else
        bad = false;
    sbx_patch_free(p);
    return bad;
}

/* The job's network preset, built to see that its inputs are ones it
 * takes (a host it refuses ends a run before a sandbox is made for it). */
static sbx_status precheck_netpolicy(sbx_job *job, char *msg, size_t cap)
{
    char *json;
    sbx_status st;
    if (!job->opt_netpolicy)
        return SBX_OK;
    if ((st = sbx__job_netpolicy(job, &json)) != SBX_OK) {
        snprintf(msg, cap, "%s", sbx__err_msg(&job->err));
        return st;
    }
    sbx__free_secret(json);
    return SBX_OK;
}

sbx_status sbx__job_precheck(sbx_job *job, char *msg, size_t cap)
{
    sbx_policy *def = NULL;
    const sbx_policy *p = job->policy;
    sbx_status st = SBX_OK;
    size_t n;
    msg[0] = '\0';
    if (job->started)
        return SBX_OK;
    if (!job->opt_policy)
        return precheck_netpolicy(job, msg, cap);
    if (!p && !(p = def = sbx_policy_new()))
        return SBX_E_NOMEM;
    /* The steps known before the sandbox is looked at (those after a
     * detection are checked when they are planned). */
    if (sbx__job_plan(job) != SBX_OK) {
        sbx_policy_free(def);
        return SBX_OK; /* the run reports it */
    }
    for (size_t i = 0; i < job->nsteps && st == SBX_OK; i++) {
        const struct sbx__jstep *s = &job->steps[i];
        sbx_policy_reason why = SBX_POLICY_ALLOW;
        char m[768];
        st = sbx_policy_check(p, sbx__job_type_str(job->type), s->argv.n, (const char *const *)s->argv.v, s->cwd,
                              &why, m, sizeof m);
        if (st == SBX_E_POLICY_DENIED)
            snprintf(msg, cap, "step %s denied by the command policy (%s): %s", s->name, sbx_policy_reason_name(why), m);
        else if (st != SBX_OK)
            snprintf(msg, cap, "step %s: %s", s->name, m);
    }
    /* Planned again at the run. */
    for (n = 0; n < job->nsteps; n++) {
        sbx__free(job->steps[n].name);
        sbx__free(job->steps[n].cwd);
        sbx__strlist_clear(&job->steps[n].argv);
    }
    job->nsteps = 0;
    sbx__free(job->pm);
    job->pm = NULL;
    sbx_policy_free(def);
    return st == SBX_OK ? precheck_netpolicy(job, msg, cap) : st;
}

sbx_status sbx_job_run_start(sbx_job *job, sbx_sandbox *s, sbx_op **out)
{
    struct jrun *jr;
    sbx_op *op;
    sbx_status st;
    SBX__ENTER(job, sbx__core_in_callback(job->core));
    SBX__ARG(job, out, "op must not be NULL");
    *out = NULL;
    SBX__ARG(job, s, "the sandbox is NULL");
    SBX__ARG(job, s->core == job->core, "the sandbox belongs to another client");
    if (job->started)
        return sbx__err_set(&job->err, SBX_E_MISUSE, "the job has run: a job runs once; use a new one");
    if (!sbx_sandbox_id(s))
        return sbx__err_set(&job->err, SBX_E_MISUSE, "the sandbox is not created or fetched yet");
    if ((st = sbx__job_plan_validate(job)) != SBX_OK)
        return st;
    if (job->artifact_paths.n && !(job->artifacts = sbx__calloc(job->artifact_paths.n, sizeof *job->artifacts)))
        return sbx__err_nomem(&job->err);
    for (size_t i = 0; i < job->artifact_paths.n; i++) {
        const char *p = job->artifact_paths.v[i];
        struct sbx__job_artifact *a = &job->artifacts[job->nartifacts];
        size_t n = strlen(sbx__job_dir(job)) + strlen(p) + 2;
        if (!(a->path = sbx__malloc(n)))
            return sbx__err_nomem(&job->err);
        if (p[0] == '/')
            snprintf(a->path, n, "%s", p);
        else
            snprintf(a->path, n, "%s/%s", sbx__job_dir(job), p);
        job->nartifacts++;
    }
    if (!(jr = sbx__calloc(1, sizeof *jr)))
        return sbx__err_nomem(&job->err);
    jr->job = job;
    jr->sbx = s;
    jr->tr_step = SIZE_MAX;
    jr->t0 = sbx__mono_ms();
    if ((st = make_rules(jr)) != SBX_OK) {
        sbx__free(jr);
        return st;
    }
    if (!(op = sbx__op_new(job->core, NULL, &jr_ops, jr))) {
        sbx__redact_rules_unref(jr->rules);
        sbx__free(jr);
        return sbx__err_nomem(&job->err);
    }
    sbx__target_ref(&s->t);
    jr->op = op;
    job->run_op = op;
    job->started = true;
    job->started_at = wall_ms();
    sbx__buf_init(&job->capture, 0);
    tr_header(jr);
    if (job->type == J_APPLY && patch_refused(jr)) {
        /* concluded */
    } else if ((st = sbx__job_plan(job)) != SBX_OK) {
        conclude(jr, SBX_VERDICT_ERROR, st, "%s", sbx__err_msg(&job->err));
    } else {
        refused(jr, 0);
    }
    *out = op;
    /* Started from the engine's next round, never inside this call (an op
     * is not reported done before its caller has it), once the client's
     * limits on running jobs allow. */
    jr->wait.project = job->project ? job->project : job->core->auth.project ? job->core->auth.project : "";
    jr->wait.grant = on_grant;
    if (jr->phase != PH_DONE) {
        bool now = false;
        if (sbx__slot_take(job->core, &jr->wait, &now) != SBX_OK) {
            conclude(jr, SBX_VERDICT_ERROR, sbx__err_nomem(&job->err), SBX__NOMEM_TEXT);
            now = true;
        }
        if (!now)
            return SBX_OK; /* on_grant() starts it */
    }
    begin(jr);
    return SBX_OK;
}

sbx_status sbx_job_run(sbx_job *job, sbx_sandbox *s)
{
    sbx_op *op;
    sbx_status st = sbx_job_run_start(job, s, &op);
    if (st != SBX_OK)
        return st;
    return sbx__op_block(op, &job->err);
}
