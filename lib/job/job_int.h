/* SPDX-License-Identifier: MIT */
/* What the job modules share: the job handle (job.c), its plan of steps
 * per type (plan.c). */
#ifndef SBX_JOB_INT_H
#define SBX_JOB_INT_H

#include <stdarg.h>
#include <stdbool.h>

#include <jansson.h>

#include <sbxrun/sbxrun.h>
#include <sbxrun/job.h>

#include "client/core.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/str.h"

#define SBX__JOB_WORKSPACE "/vercel/sandbox"
/* Where a job puts its own files in the sandbox (a patch to apply). */
#define SBX__JOB_PRIVATE_DIR SBX__JOB_WORKSPACE "/.sbxrun"

enum sbx__jtype {
    J_NONE = -1,
    J_CLONE,
    J_APPLY,
    J_INSTALL,
    J_LINT,
    J_TYPECHECK,
    J_TEST,
    J_BUILD,
    J_MIGRATE,
    J_NTYPES
};

/* What a step's output is for, besides the result and the transcript. */
enum sbx__jstep_kind {
    JS_RUN,      /* the job's work */
    JS_DETECT,   /* `ls -A DIR`: which lockfile, hence which package manager */
    JS_REVPARSE  /* `git rev-parse HEAD`: the commit a clone resolved to */
};

struct sbx__jstep {
    char *name;
    sbx__strlist argv;
    char *cwd;
    enum sbx__jstep_kind kind;
    /* how it went */
    bool ran;
    sbx_step_outcome outcome;
    int exit_code;
    int64_t duration_ms;
    char *command_id;
};

struct sbx__job_artifact {
    char *path;     /* absolute, in the sandbox */
    sbx__buf data;  /* redacted */
    bool found, truncated, read;
    char *error;
};

struct sbx_job {
    struct sbx__core *core;
    sbx__err err;
    /* the request */
    enum sbx__jtype type;
    sbx__strlist inputs;      /* KEY=VALUE; "token" kept out of every output */
    sbx__strlist argv;        /* verify.* / db.migrate program, or empty */
    int64_t timeout_ms;
    sbx__strlist env;         /* NAME=VALUE, secrets */
    sbx__strlist env_keys;    /* names a JSON request requires */
    sbx__strlist secrets;     /* sbx_job_add_secret() */
    const sbx__strlist *run_secrets; /* a run's: every job's secrets, redacted in each (the run's) */
    sbx__strlist artifact_paths;
    sbx_policy *policy;       /* NULL: the default */
    sbx_transcript *tr;
    bool tr_shared;           /* a run owns the transcript's header */
    int64_t deadline_cap;     /* a run's budget: the latest deadline (mono ms), 0 none */
    int64_t run_wall_ms;      /* the run's wall-time budget, when it set timeout_ms (0: it did not) */
    sbx_output_cb cb;
    void *cb_user;
    bool opt_policy, opt_redact, opt_netpolicy, opt_lifecycle;
    int64_t kill_grace_ms;
    char *project;            /* option "project": the per-project limit's key */
    size_t tail_bytes, artifact_max;
    /* the run */
    bool started, finished;
    sbx_op *run_op;           /* the run's op until it is destroyed (jobrun.c) */
    bool free_pending;        /* sbx_job_free() came first: freed with run_op */
    char *pm;                 /* package manager: npm, pnpm, yarn, bun */
    char *lockfile;           /* what the detection found */
    const char *pm_locked;    /* the package manager the lockfile is of */
    bool yarn_berry;          /* yarn 2+ (.yarnrc.yml): other install flags */
    struct rules *rules;      /* the run's redaction (also for the result) */
    sbx_transcript *own_tr;   /* the transcript kept when none was given */
    struct sbx__jstep *steps;
    size_t nsteps, capsteps, cur;
    struct sbx__job_artifact *artifacts;
    size_t nartifacts;
    sbx__buf capture;         /* stdout of a DETECT/REVPARSE step */
    sbx__buf tails[2];
    uint64_t bytes[2];
    char *resolved_commit;
    char *patch_json;         /* repo.applyPatch: the checked patch */
    uint8_t *patch_data;
    size_t patch_len;
    /* the result */
    sbx_verdict verdict;
    int exit_code;
    bool retryable;
    char *message;
    int64_t started_at, duration_ms;
};

/* A job's place in the client's concurrency limits (slots.c). */
struct sbx__slot_wait {
    struct sbx__slot_wait *next;
    const char *project;                       /* the limit's key, owned by the job */
    void (*grant)(struct sbx__slot_wait *w);   /* let go after waiting */
    bool queued, holds;
};
/* Take a place for w: *now true when it may start at once, else it waits
 * and w->grant is called when it may (from sbx__slot_give, a limit's
 * change). SBX_E_NOMEM. */
sbx_status sbx__slot_take(struct sbx__core *c, struct sbx__slot_wait *w, bool *now);
/* Leave the queue (cancelled while waiting). */
void sbx__slot_unqueue(struct sbx__core *c, struct sbx__slot_wait *w);
/* Give the place back; waiting jobs that now fit are let go. */
void sbx__slot_give(struct sbx__core *c, struct sbx__slot_wait *w);
/* Jobs of the client running now. */
unsigned sbx__slot_running(const struct sbx__core *c);
/* Free the job now (sbx_job_free() defers it while the run's op lives). */
void sbx__job_destroy(sbx_job *job);

/* A finished job's result (result.c), NULL when out of memory. */
json_t *sbx__job_result(const sbx_job *job);
/* A result as compact JSON text in the library's memory (r is consumed):
 * SBX_OK or SBX_E_NOMEM (result.c). */
sbx_status sbx__job_json_text(json_t *r, char **out);
/* Replace *msg with a formatted message (result.c). */
void sbx__job_vmessage(char **msg, const char *fmt, va_list ap) SBX__PRINTF(2, 0);

/* The job type's index, J_NONE when unknown. */
enum sbx__jtype sbx__job_type_find(const char *name);
const char *sbx__job_type_str(enum sbx__jtype t);
/* The input's value, NULL when not set. */
const char *sbx__job_input(const sbx_job *job, const char *key);
/* The host of a URL (scheme://[user@]host[:port]/...) into buf (an IPv6
 * address in its brackets); false when it names none or it does not fit. */
bool sbx__job_url_host(const char *url, char *buf, size_t cap);
/* The directory the job works in: input "dir", else the type's default. */
const char *sbx__job_dir(const sbx_job *job);

/* Check the inputs against the type (the message names the input). */
sbx_status sbx__job_plan_validate(sbx_job *job);
/* The network policy of the job as JSON in *json (free it with
 * sbx__free_secret: it may hold the token): its type's preset, with the
 * token of repo.clone as a header for the git host. The message is on the
 * job (jobrun.c). */
sbx_status sbx__job_netpolicy(sbx_job *job, char **json);
/* Append the steps the job can plan now: all of them, or a detection step
 * first when the package manager must be learnt from the workspace (then
 * again after it, with job->pm set). */
sbx_status sbx__job_plan(sbx_job *job);
/* Read a DETECT step's listing: sets job->pm and job->lockfile, or fails
 * with a message for the result. */
sbx_status sbx__job_plan_detected(sbx_job *job, const char *listing, size_t len);
/* The policy's verdict on the steps of the job that are known before it
 * runs, then whether its network preset takes its inputs: SBX_OK,
 * SBX_E_POLICY_DENIED or the preset's error (msg says which and why). */
sbx_status sbx__job_precheck(sbx_job *job, char *msg, size_t cap);
/* The job's command policy summary and network policy (header values
 * left out), as its transcript records them; json null for one the job's
 * options turn off. New references: SBX_OK or SBX_E_NOMEM. */
sbx_status sbx__job_policy_summaries(sbx_job *job, json_t **policy, json_t **netpolicy);
sbx_status sbx__job_add_step(sbx_job *job, const char *name, enum sbx__jstep_kind kind, const char *cwd,
                             size_t argc, const char *const *argv);

#endif /* SBX_JOB_INT_H */
