/* SPDX-License-Identifier: MIT */
/*
 * run: the jobs of one piece of work in one sandbox, as an op made of
 * other ops (sbx__op_adopt): create the sandbox (unless given), upload,
 * each job in run order, stop the sandbox it created. advance() decides
 * what comes next, as in jobrun.c.
 */
#include "util/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client/sandbox_int.h"
#include "job/job_int.h"
#include "redact/redact_int.h"
#include "util/clock.h"
#include "util/duration.h"

#define SANDBOX_TIMEOUT_DEFAULT_MS 1800000
/* What a sandbox the run creates has beyond the wall budget: time to stop. */
#define SANDBOX_MARGIN_MS 60000
#define MAX_UPLOADS 64

struct rjob {
    sbx_job *job;
    sbx_output_cb cb; /* the caller's, wrapped for the output budget */
    void *cb_user;
    bool ran, skipped;
};

enum rphase { RP_CREATE, RP_UPLOAD, RP_JOBS, RP_STOP, RP_DONE };

struct sbx_run {
    struct sbx__core *core;
    sbx_client *client;       /* a handle of our own on the core, for jobs */
    sbx__err err;
    struct rjob *jobs;
    size_t njobs;
    sbx__strlist uploads;     /* local\0sandbox pairs: local, then its path */
    sbx__strlist secrets;     /* every job's environment values, secrets and token */
    sbx_sandbox *given, *made;
    sbx_transcript *tr;
    sbx_run_progress_cb progress;
    void *progress_user;
    int64_t wall_ms, deadline;
    uint64_t output_max, output_used;
    size_t max_jobs;
    char *runtime;
    size_t vcpus;
    int64_t sandbox_timeout_ms;
    bool keep_going;
    /* the run */
    bool started, finished, budget_hit, own_op;
    enum rphase phase;
    size_t cur;               /* upload or job index */
    sbx_op *op, *child;
    sbx__timer kick, budget;
    bool advancing, again, cancelled, out_of_time;
    sbx_verdict verdict;
    sbx_status fail;
    char *message;
    int64_t t0, duration_ms;
};

/* The place of a type in run order: clone, apply, install, migrate, then
 * the checks. */
static int rank(enum sbx__jtype t)
{
    static const int r[J_NTYPES] = {0, 1, 2, 4, 5, 6, 7, 3};
    return t >= 0 && t < J_NTYPES ? r[t] : 99;
}

sbx_run *sbx_run_new(sbx_client *c)
{
    sbx_run *run;
    if (!c || !(run = sbx__calloc(1, sizeof *run)))
        return NULL;
    run->core = c->core;
    sbx__core_ref(run->core);
    run->client = c;
    run->verdict = SBX_VERDICT_ERROR;
    return run;
}

const char *sbx_run_last_error(const sbx_run *run)
{
    return SBX__LAST_ERROR(run);
}

void sbx_run_free(sbx_run *run)
{
    if (!run)
        return;
    /* Still running: cancelled (the sandbox it made is stopped) and
     * driven to its end first. The op of sbx_run_execute() is ours; one
     * of sbx_run_execute_start() is the caller's, left ended. */
    if (run->op && run->own_op)
        sbx_op_free(run->op);
    else if (run->op)
        sbx__op_orphan(run->op);
    for (size_t i = 0; i < run->njobs; i++)
        sbx_job_free(run->jobs[i].job);
    sbx__free(run->jobs);
    sbx__strlist_clear(&run->uploads);
    sbx__strlist_wipe(&run->secrets);
    sbx_sandbox_free(run->made);
    sbx_transcript_free(run->tr);
    sbx__free(run->runtime);
    sbx__free(run->message);
    sbx__err_free(&run->err);
    sbx__core_unref(run->core);
    sbx__free(run);
}

#define RUN_ENTER(run)                                                                                       \
    do {                                                                                                     \
        SBX__ENTER(run, sbx__core_in_callback((run)->core));                                                 \
        if ((run)->started)                                                                                  \
            return sbx__err_set(&(run)->err, SBX_E_MISUSE, "the run has started: settings apply before");     \
    } while (0)

sbx_status sbx_run_add_job(sbx_run *run, const char *type, sbx_job **out)
{
    sbx_job *job;
    struct rjob *n;
    size_t at;
    sbx_status st;
    if (out)
        *out = NULL;
    SBX__ENTER(run, sbx__core_in_callback(run->core));
    if (run->started)
        return sbx__err_set(&run->err, SBX_E_MISUSE, "the run has started: jobs are added before");
    if (!(job = sbx_job_new(run->client)))
        return sbx__err_nomem(&run->err);
    if ((st = sbx_job_set_type(job, type ? type : "")) != SBX_OK) {
        sbx__err_copy(&run->err, &job->err);
        sbx_job_free(job);
        return st;
    }
    if (!(n = sbx__realloc(run->jobs, (run->njobs + 1) * sizeof *n))) {
        sbx_job_free(job);
        return sbx__err_nomem(&run->err);
    }
    run->jobs = n;
    /* After every job of the same or an earlier rank. */
    for (at = run->njobs; at > 0 && rank(run->jobs[at - 1].job->type) > rank(job->type); at--)
        ;
    memmove(&run->jobs[at + 1], &run->jobs[at], (run->njobs - at) * sizeof *n);
    memset(&run->jobs[at], 0, sizeof *n);
    run->jobs[at].job = job;
    run->njobs++;
    if (out)
        *out = job;
    return SBX_OK;
}

sbx_status sbx_run_set_sandbox(sbx_run *run, sbx_sandbox *s)
{
    RUN_ENTER(run);
    SBX__ARG(run, s, "the sandbox is NULL");
    SBX__ARG(run, s->core == run->core, "the sandbox belongs to another client");
    run->given = s;
    return SBX_OK;
}

sbx_status sbx_run_add_upload(sbx_run *run, const char *local_path, const char *sandbox_path)
{
    RUN_ENTER(run);
    SBX__ARG(run, local_path && *local_path && sandbox_path && *sandbox_path,
             "upload: a local path and a sandbox path");
    SBX__ARG(run, run->uploads.n / 2 < MAX_UPLOADS, "upload: at most %d", MAX_UPLOADS);
    if (sbx__strlist_push(&run->uploads, local_path) != SBX_OK ||
        sbx__strlist_push(&run->uploads, sandbox_path) != SBX_OK) {
        if (run->uploads.n % 2)
            sbx__free(run->uploads.v[--run->uploads.n]);
        return sbx__err_nomem(&run->err);
    }
    return SBX_OK;
}

sbx_status sbx_run_set_budget(sbx_run *run, int64_t wall_ms, uint64_t output_bytes, size_t max_jobs)
{
    RUN_ENTER(run);
    SBX__ARG(run, wall_ms >= 0, "budget: wall time in milliseconds >= 0 (0: none)");
    run->wall_ms = wall_ms;
    run->output_max = output_bytes;
    run->max_jobs = max_jobs;
    return SBX_OK;
}

sbx_status sbx_run_set_transcript(sbx_run *run, sbx_transcript *t)
{
    RUN_ENTER(run);
    SBX__ARG(run, t, "the transcript is NULL");
    sbx_transcript_free(run->tr);
    run->tr = sbx_transcript_ref(t);
    return SBX_OK;
}

sbx_status sbx_run_set_progress_cb(sbx_run *run, sbx_run_progress_cb cb, void *user)
{
    RUN_ENTER(run);
    run->progress = cb;
    run->progress_user = cb ? user : NULL;
    return SBX_OK;
}

sbx_status sbx_run_set_option(sbx_run *run, const char *key, const char *value)
{
    char *end;
    long long n;
    RUN_ENTER(run);
    SBX__ARG(run, key && value, "option name and value must not be NULL");
    if (!strcmp(key, "runtime")) {
        char *v;
        SBX__ARG(run, *value, "option runtime: a name");
        if (!(v = sbx__strdup(value)))
            return sbx__err_nomem(&run->err);
        sbx__free(run->runtime);
        run->runtime = v;
        return SBX_OK;
    }
    if (!strcmp(key, "keep_going")) {
        SBX__ARG(run, !strcmp(value, "on") || !strcmp(value, "off"), "option keep_going: \"on\" or \"off\"");
        run->keep_going = value[1] == 'n';
        return SBX_OK;
    }
    if (!strcmp(key, "vcpus") || !strcmp(key, "sandbox_timeout_ms")) {
        n = strtoll(value, &end, 10);
        SBX__ARG(run, value[0] >= '0' && value[0] <= '9' && !*end && n > 0 && n <= 86400000LL,
                 "option %s: a positive number, not '%.32s'", key, value);
        if (key[0] == 'v')
            run->vcpus = (size_t)n;
        else
            run->sandbox_timeout_ms = n;
        return SBX_OK;
    }
    return sbx__err_set(&run->err, SBX_E_UNKNOWN_OPTION,
                        "unknown run option '%.64s' (runtime, vcpus, sandbox_timeout_ms, keep_going)", key);
}

/* ---- getters --------------------------------------------------------------------------- */

sbx_verdict sbx_run_verdict(const sbx_run *run)
{
    return run && run->finished ? run->verdict : SBX_VERDICT_ERROR;
}

size_t sbx_run_job_count(const sbx_run *run)
{
    return run ? run->njobs : 0;
}

sbx_job *sbx_run_job(const sbx_run *run, size_t i)
{
    return run && i < run->njobs ? run->jobs[i].job : NULL;
}

sbx_sandbox *sbx_run_sandbox(const sbx_run *run)
{
    if (!run)
        return NULL;
    if (run->given)
        return run->given;
    return run->made && sbx_sandbox_id(run->made) ? run->made : NULL;
}

/* ---- carrying it out --------------------------------------------------------------------- */

static void advance(sbx_run *run);

static void tell(sbx_run *run, sbx_run_event ev, size_t i)
{
    if (!run->progress)
        return;
    run->core->in_callback++;
    run->progress(run, ev, i, run->progress_user);
    run->core->in_callback--;
}

static void end_run(sbx_run *run, sbx_verdict v, sbx_status fail, const char *fmt, ...) SBX__PRINTF(4, 5);

/* The run's verdict (the first one given stands); then stop the sandbox. */
static void end_run(sbx_run *run, sbx_verdict v, sbx_status fail, const char *fmt, ...)
{
    if (run->phase >= RP_STOP)
        return;
    run->verdict = v;
    run->fail = fail;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        sbx__job_vmessage(&run->message, fmt, ap);
        va_end(ap);
    }
    run->phase = RP_STOP;
    run->again = true;
}

static int run_output(sbx_stream stream, const uint8_t *data, size_t len, void *user)
{
    sbx_run *run = user;
    struct rjob *rj = &run->jobs[run->cur];
    run->output_used += len;
    if (run->output_max && run->output_used > run->output_max) {
        run->budget_hit = true;
        return 1;
    }
    return rj->cb ? rj->cb(stream, data, len, rj->cb_user) : 0;
}

static void child_done(sbx_op *op, void *arg)
{
    char dur[SBX__DURATION_TEXT_MAX];
    sbx_run *run = arg;
    sbx_status st = sbx_op_status(op);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", sbx_op_last_error(op));
    run->child = NULL;
    sbx__op_destroy(op);
    if ((run->phase == RP_CREATE || run->phase == RP_UPLOAD) && run->out_of_time && st != SBX_OK) {
        end_run(run, SBX_VERDICT_TIMED_OUT, SBX_OK, "the run's wall-time budget of %s ran out while %s",
                sbx__duration_text(run->wall_ms, dur), run->phase == RP_CREATE ? "the sandbox was created" : "uploading");
        advance(run);
        return;
    }
    switch (run->phase) {
    case RP_CREATE:
        if (st == SBX_OK) {
            run->phase = RP_UPLOAD;
            run->cur = 0;
        } else if (st == SBX_E_CANCELLED) {
            end_run(run, SBX_VERDICT_CANCELLED, SBX_E_CANCELLED, "cancelled");
        } else if (st == SBX_E_TRANSPORT || st == SBX_E_HTTP || st == SBX_E_RATE_LIMITED || st == SBX_E_TIMEOUT) {
            /* No sandbox to be had now: the caller may pause and try later. */
            end_run(run, SBX_VERDICT_UNAVAILABLE, st, "no sandbox: %s", msg);
        } else {
            end_run(run, SBX_VERDICT_ERROR, st, "creating the sandbox: %s", msg);
        }
        break;
    case RP_UPLOAD:
        if (st == SBX_OK)
            run->cur++;
        else
            end_run(run, st == SBX_E_CANCELLED ? SBX_VERDICT_CANCELLED : SBX_VERDICT_ERROR, st, "uploading %s: %s",
                    run->uploads.v[run->cur * 2], msg);
        break;
    case RP_JOBS: {
        struct rjob *rj = &run->jobs[run->cur];
        sbx_job *job = rj->job;
        sbx_verdict v = sbx_job_verdict(job);
        rj->ran = true;
        job->cb = rj->cb; /* the caller's again */
        job->cb_user = rj->cb_user;
        tell(run, SBX_RUN_JOB_ENDED, run->cur);
        if (run->budget_hit) {
            job->verdict = SBX_VERDICT_FAILED;
            sbx__free(job->message);
            job->message = sbx__strdup("stopped: the run's output budget was used up");
            end_run(run, SBX_VERDICT_FAILED, SBX_OK, "the run's output budget of %llu bytes was used up in %s",
                    (unsigned long long)run->output_max, sbx__job_type_str(job->type));
            break;
        }
        if (v == SBX_VERDICT_PASSED || (run->keep_going && v == SBX_VERDICT_FAILED && job->type >= J_LINT &&
                                        job->type <= J_BUILD)) {
            if (v != SBX_VERDICT_PASSED && run->verdict == SBX_VERDICT_PASSED) {
                run->verdict = v;
                sbx__free(run->message);
                run->message = sbx__strdup(job->message ? job->message : "");
            }
            run->cur++;
            break;
        }
        end_run(run, v, v == SBX_VERDICT_ERROR || v == SBX_VERDICT_UNAVAILABLE ? st : SBX_OK, "%s: %s",
                sbx__job_type_str(job->type), job->message ? job->message : sbx_job_verdict_name(v));
        break;
    }
    case RP_STOP:
        run->phase = RP_DONE; /* stopped or not: it ends at its timeout */
        break;
    case RP_DONE: break;
    }
    advance(run);
}

static void adopt(sbx_run *run, sbx_op *op)
{
    run->child = op;
    sbx__op_adopt(op, child_done, run);
}

static sbx_status start_create(sbx_run *run)
{
    sbx_op *op = NULL;
    int64_t t = run->sandbox_timeout_ms;
    sbx_status st;
    if (!(run->made = sbx_sandbox_new(run->client)))
        return sbx__err_nomem(&run->err);
    if (!t)
        t = run->wall_ms ? run->wall_ms + SANDBOX_MARGIN_MS : SANDBOX_TIMEOUT_DEFAULT_MS;
    /* Until a job sets the preset of its type, the sandbox reaches
     * nothing. */
    if ((st = sbx_sandbox_set_network_policy_json(run->made, "{\"mode\":\"deny-all\"}")) != SBX_OK ||
        (st = sbx_sandbox_set_timeout_ms(run->made, t)) != SBX_OK ||
        (run->runtime && (st = sbx_sandbox_set_runtime(run->made, run->runtime)) != SBX_OK) ||
        (run->vcpus && (st = sbx_sandbox_set_vcpus(run->made, run->vcpus)) != SBX_OK) ||
        (st = sbx_sandbox_create_start(run->made, &op)) != SBX_OK)
        return sbx__err_set(&run->err, st, "creating the sandbox: %s", sbx_sandbox_last_error(run->made));
    tell(run, SBX_RUN_SANDBOX_CREATING, 0);
    adopt(run, op);
    return SBX_OK;
}

static sbx_sandbox *sandbox(sbx_run *run)
{
    return run->given ? run->given : run->made;
}

static sbx_status start_job(sbx_run *run)
{
    char dur[SBX__DURATION_TEXT_MAX];
    struct rjob *rj = &run->jobs[run->cur];
    sbx_job *job = rj->job;
    sbx_op *op = NULL;
    sbx_status st;
    if (run->deadline) {
        int64_t left = run->deadline - sbx__mono_ms();
        if (left <= 0) {
            end_run(run, SBX_VERDICT_TIMED_OUT, SBX_OK, "the run's wall-time budget of %s was used up before %s",
                    sbx__duration_text(run->wall_ms, dur), sbx__job_type_str(job->type));
            return SBX_OK;
        }
        if (job->timeout_ms == 0 || job->timeout_ms > left) {
            job->timeout_ms = left;
            job->run_wall_ms = run->wall_ms; /* its timeout is what the run has left */
        }
        job->deadline_cap = run->deadline;
    }
    if (run->tr && !job->tr) {
        job->tr = sbx_transcript_ref(run->tr);
        job->tr_shared = true;
    }
    rj->cb = job->cb;
    rj->cb_user = job->cb_user;
    job->cb = run_output;
    job->cb_user = run;
    tell(run, SBX_RUN_JOB_STARTED, run->cur);
    if ((st = sbx_job_run_start(job, sandbox(run), &op)) != SBX_OK) {
        job->cb = rj->cb;
        job->cb_user = rj->cb_user;
        return sbx__err_set(&run->err, st, "%s: %s", sbx__job_type_str(job->type), sbx_job_last_error(job));
    }
    adopt(run, op);
    return SBX_OK;
}

static void step_once(sbx_run *run)
{
    sbx_status st = SBX_OK;
    sbx_op *op = NULL;
    switch (run->phase) {
    case RP_CREATE:
        if (run->cancelled) {
            end_run(run, SBX_VERDICT_CANCELLED, SBX_E_CANCELLED, "cancelled");
            break;
        }
        if (run->given) {
            run->phase = RP_UPLOAD;
            run->cur = 0;
            run->again = true;
            break;
        }
        st = start_create(run);
        break;
    case RP_UPLOAD:
        if (run->cancelled) {
            end_run(run, SBX_VERDICT_CANCELLED, SBX_E_CANCELLED, "cancelled");
            break;
        }
        if (run->cur * 2 >= run->uploads.n) {
            if (run->tr && sbx_sandbox_id(sandbox(run)) &&
                sbx_transcript_set_sandbox_id(run->tr, sbx_sandbox_id(sandbox(run))) == SBX_E_NOMEM) {
                end_run(run, SBX_VERDICT_ERROR, SBX_E_NOMEM, "out of memory: the transcript could not record the run");
                break;
            }
            run->phase = RP_JOBS;
            run->cur = 0;
            run->verdict = SBX_VERDICT_PASSED;
            run->again = true;
            break;
        }
        if (run->cur == 0)
            tell(run, SBX_RUN_UPLOADING, 0);
        if ((st = sbx_sandbox_upload_start(sandbox(run), run->uploads.v[run->cur * 2], run->uploads.v[run->cur * 2 + 1],
                                           &op)) != SBX_OK) {
            st = sbx__err_set(&run->err, st, "uploading %s: %s", run->uploads.v[run->cur * 2],
                              sbx_sandbox_last_error(sandbox(run)));
            break;
        }
        adopt(run, op);
        break;
    case RP_JOBS:
        if (run->cancelled) {
            end_run(run, SBX_VERDICT_CANCELLED, SBX_E_CANCELLED, "cancelled");
            break;
        }
        if (run->cur >= run->njobs) {
            end_run(run, run->verdict, SBX_OK, NULL);
            break;
        }
        st = start_job(run);
        break;
    case RP_STOP:
        for (size_t i = 0; i < run->njobs; i++)
            if (!run->jobs[i].ran && !run->jobs[i].skipped) {
                run->jobs[i].skipped = true;
                tell(run, SBX_RUN_JOB_SKIPPED, i);
            }
        if (!run->made || !sbx_sandbox_id(run->made)) {
            run->phase = RP_DONE;
            run->again = true;
            break;
        }
        tell(run, SBX_RUN_STOPPING, 0);
        /* A sandbox the run made is gone with it: a named one (2.x) is
         * deleted, so that it neither lists nor keeps its name. */
        if ((sbx_sandbox_name(run->made) ? sbx_sandbox_delete_start(run->made, &op)
                                         : sbx_sandbox_stop_start(run->made, &op)) != SBX_OK) {
            run->phase = RP_DONE;
            run->again = true;
            break;
        }
        adopt(run, op);
        break;
    case RP_DONE: {
        sbx_status end = run->verdict == SBX_VERDICT_CANCELLED ? SBX_E_CANCELLED : run->fail;
        run->duration_ms = sbx__mono_ms() - run->t0;
        run->finished = true;
        /* A transcript left unfinished for want of memory fails the run
         * that would have reported it complete. */
        if (run->tr && sbx_transcript_finish(run->tr, run->verdict) == SBX_E_NOMEM && end == SBX_OK) {
            end = SBX_E_NOMEM;
            run->verdict = SBX_VERDICT_ERROR;
            sbx__free(run->message);
            run->message = sbx__strdup("out of memory: the transcript could not record the end of the run");
        }
        sbx__engine_timer_cancel(run->core->engine, &run->kick);
        sbx__engine_timer_cancel(run->core->engine, &run->budget);
        if (end != SBX_OK)
            sbx__op_finish(run->op, end, "%s", run->message ? run->message : sbx_strerror(end));
        else
            sbx__op_finish(run->op, SBX_OK, NULL);
        return;
    }
    }
    if (st != SBX_OK)
        end_run(run, SBX_VERDICT_ERROR, st, "%s", sbx__err_msg(&run->err));
}

static void advance(sbx_run *run)
{
    if (run->advancing) {
        run->again = true;
        return;
    }
    run->advancing = true;
    do {
        run->again = false;
        if (!run->child && !run->finished)
            step_once(run);
    } while (run->again && !run->finished);
    run->advancing = false;
}

static void on_kick(sbx__timer *t, void *user)
{
    (void)t;
    advance(user);
}

/* The wall budget: a job's own deadline is cut to it; the sandbox's
 * creation and the uploads are stopped here. */
static void on_budget(sbx__timer *t, void *user)
{
    sbx_run *run = user;
    (void)t;
    run->out_of_time = true;
    if (run->child && (run->phase == RP_CREATE || run->phase == RP_UPLOAD))
        sbx__op_cancel_now(run->child);
}

static void run_cancel(sbx_op *op)
{
    sbx_run *run = op->state;
    run->cancelled = true;
    /* The child (a job: it kills its command) ends cancelled; the run
     * then stops its sandbox. */
    if (run->child && run->phase != RP_STOP)
        sbx__op_cancel_now(run->child);
}

static void run_release(sbx_op *op)
{
    sbx_run *run = op->state;
    sbx__engine_timer_cancel(run->core->engine, &run->kick);
    sbx__engine_timer_cancel(run->core->engine, &run->budget);
    run->op = NULL;
}

static const struct sbx__op_ops run_ops = {run_cancel, run_release};

/* The jobs of a run share one sandbox, and what one job was given can
 * stay there for the next to print (a token an install wrote into a
 * config file or a log): each job redacts every job's secrets. */
static sbx_status share_secrets(sbx_run *run)
{
    for (size_t i = 0; i < run->njobs; i++) {
        sbx_job *job = run->jobs[i].job;
        const char *tok = sbx__job_input(job, "token");
        for (size_t k = 0; k < job->env.n; k++) {
            const char *v = strchr(job->env.v[k], '=') + 1;
            if (strlen(v) >= SBX__SECRET_MIN && sbx__strlist_push(&run->secrets, v) != SBX_OK)
                return SBX_E_NOMEM;
        }
        for (size_t k = 0; k < job->secrets.n; k++)
            if (sbx__strlist_push(&run->secrets, job->secrets.v[k]) != SBX_OK)
                return SBX_E_NOMEM;
        if (tok && strlen(tok) >= SBX__SECRET_MIN && strlen(tok) <= SBX__SECRET_MAX &&
            sbx__strlist_push(&run->secrets, tok) != SBX_OK)
            return SBX_E_NOMEM;
    }
    for (size_t i = 0; i < run->njobs; i++)
        run->jobs[i].job->run_secrets = &run->secrets;
    return SBX_OK;
}

/* The policies each job runs under, in the header of the run's
 * transcript: {"jobs": [one per job, in run order]}, as a job's own
 * transcript records its one (null where its option turns it off). */
static sbx_status tr_policies(sbx_run *run)
{
    static sbx_status (*const set[2])(sbx_transcript *, const char *) = {sbx_transcript_set_policy_json,
                                                                          sbx_transcript_set_netpolicy_json};
    json_t *all[2] = {json_array(), json_array()};
    sbx_status st = all[0] && all[1] ? SBX_OK : SBX_E_NOMEM;
    for (size_t i = 0; i < run->njobs && st == SBX_OK; i++) {
        json_t *one[2];
        if ((st = sbx__job_policy_summaries(run->jobs[i].job, &one[0], &one[1])) != SBX_OK)
            break;
        for (size_t k = 0; k < 2; k++) /* each reference taken, even by a failed append */
            if (json_array_append_new(all[k], one[k]) != 0)
                st = SBX_E_NOMEM;
    }
    for (size_t k = 0; k < 2; k++) {
        if (st == SBX_OK) {
            json_t *doc = json_pack("{s:O}", "jobs", all[k]);
            char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
            st = text ? set[k](run->tr, text) : SBX_E_NOMEM;
            free(text);
            json_decref(doc);
        }
        json_decref(all[k]);
    }
    return st;
}

sbx_status sbx_run_execute_start(sbx_run *run, sbx_op **out)
{
    sbx_op *op;
    SBX__ENTER(run, sbx__core_in_callback(run->core));
    SBX__ARG(run, out, "op must not be NULL");
    *out = NULL;
    if (run->started)
        return sbx__err_set(&run->err, SBX_E_MISUSE, "the run has started: a run is carried out once");
    if (run->njobs == 0)
        return sbx__err_set(&run->err, SBX_E_MISUSE, "the run has no jobs: sbx_run_add_job() first");
    if (run->max_jobs && run->njobs > run->max_jobs)
        return sbx__err_set(&run->err, SBX_E_BUDGET_EXCEEDED, "the run has %zu jobs; its budget allows %zu",
                            run->njobs, run->max_jobs);
    if (run->given && !sbx_sandbox_id(run->given))
        return sbx__err_set(&run->err, SBX_E_MISUSE, "the sandbox is not created or fetched yet");
    /* Every job's request is checked before anything is made. */
    for (size_t i = 0; i < run->njobs; i++) {
        sbx_status st = sbx__job_plan_validate(run->jobs[i].job);
        if (st != SBX_OK)
            return sbx__err_set(&run->err, st, "%s (job %zu): %s", sbx__job_type_str(run->jobs[i].job->type), i,
                                sbx_job_last_error(run->jobs[i].job));
    }
    if (share_secrets(run) != SBX_OK)
        return sbx__err_nomem(&run->err);
    if (run->tr) {
        sbx__buf types = SBX__BUF_INIT;
        for (size_t i = 0; i < run->njobs; i++)
            if ((i && sbx__buf_putc(&types, ',') != SBX_OK) ||
                sbx__buf_puts(&types, sbx__job_type_str(run->jobs[i].job->type)) != SBX_OK) {
                sbx__buf_free(&types);
                return sbx__err_nomem(&run->err);
            }
        sbx_status st = sbx_transcript_set_job_type(run->tr, "run");
        if (st == SBX_OK)
            st = sbx_transcript_set_input(run->tr, "jobs", types.data);
        if (st == SBX_OK)
            st = sbx_transcript_set_endpoint(run->tr, run->core->endpoint);
        if (st == SBX_OK)
            st = tr_policies(run);
        sbx__buf_free(&types);
        if (st == SBX_E_NOMEM)
            return sbx__err_nomem(&run->err);
    }
    if (!(op = sbx__op_new(run->core, NULL, &run_ops, run)))
        return sbx__err_nomem(&run->err);
    run->op = op;
    run->started = true;
    run->t0 = sbx__mono_ms();
    /* A step the policy refuses ends the run before a sandbox is made. */
    for (size_t i = 0; i < run->njobs && run->phase == RP_CREATE; i++) {
        char msg[1024];
        sbx_status st = sbx__job_precheck(run->jobs[i].job, msg, sizeof msg);
        if (st == SBX_E_POLICY_DENIED)
            end_run(run, SBX_VERDICT_DENIED, SBX_OK, "%s: %s", sbx__job_type_str(run->jobs[i].job->type), msg);
        else if (st != SBX_OK)
            end_run(run, SBX_VERDICT_ERROR, st, "%s: %s", sbx__job_type_str(run->jobs[i].job->type),
                    msg[0] ? msg : sbx_strerror(st));
    }
    if (run->wall_ms && run->wall_ms <= INT64_MAX / 4) {
        run->deadline = run->t0 + run->wall_ms;
        sbx__engine_timer_set(run->core->engine, &run->budget, run->deadline, on_budget, run);
    }
    *out = op;
    sbx__engine_timer_set(run->core->engine, &run->kick, sbx__mono_ms(), on_kick, run);
    return SBX_OK;
}

sbx_status sbx_run_execute(sbx_run *run)
{
    sbx_op *op;
    sbx_status st = sbx_run_execute_start(run, &op);
    if (st != SBX_OK)
        return st;
    run->own_op = true;
    st = sbx__op_drive(op);
    if (st == SBX_OK)
        sbx__err_clear(&run->err);
    else
        sbx__err_copy(&run->err, &op->err);
    return st; /* the op stays the run's: freed with it */
}

/* ---- result ------------------------------------------------------------------------------ */

/* Worth running again: out of time, no sandbox, or the job that ended it
 * says so (its command never reached the sandbox). */
static bool run_retryable(const sbx_run *run)
{
    if (run->verdict == SBX_VERDICT_TIMED_OUT || run->verdict == SBX_VERDICT_UNAVAILABLE)
        return true;
    for (size_t i = 0; i < run->njobs; i++)
        if (run->jobs[i].ran && sbx_job_verdict(run->jobs[i].job) == run->verdict && run->verdict != SBX_VERDICT_PASSED)
            return sbx_job_retryable(run->jobs[i].job) != 0;
    return false;
}

sbx_status sbx_run_result_to_json(sbx_run *run, char **out)
{
    json_t *r, *jobs;
    SBX__ENTER(run, false);
    SBX__ARG(run, out, "out must not be NULL");
    *out = NULL;
    if (!run->finished)
        return sbx__err_set(&run->err, SBX_E_MISUSE, "the run has not been carried out: no result yet");
    jobs = json_array();
    for (size_t i = 0; jobs && i < run->njobs; i++) {
        json_t *j = NULL;
        if (run->jobs[i].ran && run->jobs[i].job->finished) {
            j = sbx__job_result(run->jobs[i].job); /* the object itself, not its text again */
        } else {
            j = json_pack("{s:s,s:s}", "jobType", sbx__job_type_str(run->jobs[i].job->type), "status", "skipped");
        }
        if (!j || json_array_append_new(jobs, j)) {
            json_decref(jobs);
            return sbx__err_nomem(&run->err);
        }
    }
    r = json_pack("{s:s,s:s,s:b,s:s?,s:s?,s:I,s:I,s:o}", "schema", "sbxrun.run.result/1", "status",
                  sbx_job_verdict_name(run->verdict), "retryable", run_retryable(run), "message",
                  run->message, "sandboxId", sbx_run_sandbox(run) ? sbx_sandbox_id(sbx_run_sandbox(run)) : NULL,
                  "durationMs", (json_int_t)run->duration_ms, "outputBytes", (json_int_t)run->output_used, "jobs",
                  jobs ? jobs : json_null());
    if (!r || sbx__job_json_text(r, out) != SBX_OK)
        return sbx__err_nomem(&run->err);
    return SBX_OK;
}
