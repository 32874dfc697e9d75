/* SPDX-License-Identifier: MIT */
/**
 * @file job.h
 * Jobs: one unit of verification work of a known type, run in a sandbox
 * with the library's safety on by default.
 *
 * A job is one of the types repo.clone, repo.applyPatch, deps.install,
 * verify.lint, verify.typecheck, verify.test, verify.build, db.migrate,
 * with inputs, a timeout and the environment it may see. Running it:
 *
 *  - checks every command it will run against the command policy of its
 *    type before anything is sent (a refusal is the verdict "denied", and
 *    no request is made);
 *  - puts the sandbox under the network preset of its type
 *    (sbx_netpolicy_load_preset()) before its first command;
 *  - forwards only the environment given with sbx_job_set_env(), and
 *    registers those values as secrets;
 *  - redacts the output (credential shapes, those values, secrets added
 *    with sbx_job_add_secret()) before the output callback, the result or
 *    the transcript sees it;
 *  - stops it at its timeout (SIGTERM, then SIGKILL after a grace period),
 *    keeping the output so far, and marks the result retryable.
 *
 * Turning a layer off is an explicit sbx_job_set_option() call. A job whose
 * commands ran and failed is not an error: sbx_job_run() returns SBX_OK
 * and sbx_job_verdict() says how it went. The request and the result also
 * exist as JSON (sbx_job_load_json(), sbx_job_result_to_json(); schemas in
 * doc/job.md).
 */
#ifndef SBXRUN_JOB_H
#define SBXRUN_JOB_H

#include <stddef.h>
#include <stdint.h>

#include <sbxrun/common.h>
#include <sbxrun/client.h>
#include <sbxrun/command.h>
#include <sbxrun/policy.h>
#include <sbxrun/sandbox.h>
#include <sbxrun/transcript.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A job (opaque). */
typedef struct sbx_job sbx_job;

/**
 * A new job of the client, with no type yet.
 *
 * @return the job, or NULL when c is NULL or out of memory.
 * @since 1.0
 */
SBX_API sbx_job *sbx_job_new(sbx_client *c);

/**
 * Free the job (NULL is fine). A job still running is cancelled first (its
 * command is left to its sandbox, which stops at its own timeout).
 * @since 1.0
 */
SBX_API void sbx_job_free(sbx_job *job);

/** The message of the job's last failure ("" when none); for a NULL handle,
 * "invalid argument: the handle is NULL". @since 1.0 */
SBX_API const char *sbx_job_last_error(const sbx_job *job);

/**
 * Set the job's type: one of repo.clone, repo.applyPatch, deps.install,
 * verify.lint, verify.typecheck, verify.test, verify.build, db.migrate.
 * Inputs already set that the type does not take are refused at the run.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (an unknown type, named),
 *         SBX_E_MISUSE (the job has run).
 * @since 1.0
 */
SBX_API sbx_status sbx_job_set_type(sbx_job *job, const char *type);

/**
 * Set (or with NULL value remove) one input of the job. The inputs each
 * type takes are listed in doc/job.md: repo.clone "url", "ref", "depth",
 * "dir", "token"; repo.applyPatch "patch", "dir"; deps.install
 * "packageManager", "registry", "dir"; verify.* "script",
 * "packageManager", "dir"; db.migrate "script", "packageManager", "url",
 * "host", "dir". A "token" is a secret: it never enters the sandbox, the
 * result or the transcript. Values are checked here when they can be
 * (a number, a path inside /vercel/sandbox), and against the type at the
 * run.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (naming the input), SBX_E_NOMEM,
 *         SBX_E_MISUSE (the job has run).
 * @since 1.0
 */
SBX_API sbx_status sbx_job_set_input(sbx_job *job, const char *key, const char *value);

/**
 * The program a verify.* or db.migrate job runs (no shell), instead of the
 * package.json script of its type. argc 0 clears it.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOMEM, SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_job_set_argv(sbx_job *job, size_t argc, const char *const *argv);

/**
 * The job's soft timeout, all its commands together (0: none; default
 * 600000). When it passes, the running command gets SIGTERM, then SIGKILL
 * after the grace period (option "kill_grace_ms", default 5000); the
 * verdict is "timed-out", the result retryable, the output kept.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (ms < 0), SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_job_set_timeout_ms(sbx_job *job, int64_t ms);

/**
 * Give the job's commands one environment variable (the request's
 * "envKeys"): nothing else of the caller's environment is forwarded. The
 * value is registered as a secret (redacted from all output when 8 bytes
 * or longer: shorter values would redact ordinary text), wiped on free,
 * and never appears in a result or transcript (the name does). NULL value
 * removes it.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (name not [A-Za-z_][A-Za-z0-9_]*, a
 *         value longer than 4096 bytes, which could not be redacted),
 *         SBX_E_NOMEM, SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_job_set_env(sbx_job *job, const char *name, const char *value);

/**
 * One more value to redact from the job's output (a value the commands
 * may print that is not in their environment). 8 to 4096 bytes (what
 * sbx_redactor_add_secret() takes), no NUL.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (shorter, longer, a NUL), SBX_E_NOMEM,
 *         SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_job_add_secret(sbx_job *job, const uint8_t *value, size_t len);

/**
 * A file to read back after the job's commands (a junit report, a coverage
 * summary), relative to the job's directory or absolute inside
 * /vercel/sandbox. Its redacted content goes into the result, up to the
 * option "artifact_max_bytes" (default 1 MiB; the rest is cut and the
 * artifact marked truncated). A missing file is reported as such, not as a
 * failure of the job.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (outside the workspace), SBX_E_NOMEM,
 *         SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_job_add_artifact(sbx_job *job, const char *path);

/**
 * Check the job's commands against this command policy instead of the
 * default one (sbx_policy_new()). p is copied.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (p NULL), SBX_E_NOMEM, SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_job_set_policy(sbx_job *job, const sbx_policy *p);

/**
 * Record the job's steps in t (which takes a reference). The job's header
 * (type, inputs, endpoint, sandbox) is written when t has none yet; the
 * caller ends t (sbx_transcript_finish()) when a run of several jobs is
 * over. Output goes into it redacted.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_job_set_transcript(sbx_job *job, sbx_transcript *t);

/**
 * Receive the job's output as it comes, already redacted. Called on the
 * thread driving the client, as sbx_command_set_output_cb(); a non-zero
 * return cancels the job.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_job_set_output_cb(sbx_job *job, sbx_output_cb cb, void *user);

/**
 * Set an option by name (doc/job.md):
 *  - "policy": "off" runs the commands unchecked (default "on");
 *  - "redact": "off" gives the output as printed (default "on");
 *  - "network_policy": "off" keeps the sandbox's network policy (default
 *    "on": the type's preset);
 *  - "lifecycle_scripts": "on" lets deps.install run the dependencies'
 *    install scripts (default "off": --ignore-scripts);
 *  - "kill_grace_ms", "tail_bytes" (the output kept per stream for the
 *    result, default 65536), "artifact_max_bytes";
 *  - "project": the key of the client's per-project limit on running jobs
 *    (client option "jobs.max_running_per_project"; default the client's
 *    project).
 *
 * @return SBX_OK, SBX_E_UNKNOWN_OPTION, SBX_E_INVALID_ARG (a bad value),
 *         SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_job_set_option(sbx_job *job, const char *key, const char *value);

/**
 * Set the job from a request in JSON: {"jobType": "...", "inputs": {...},
 * "timeoutSeconds": N, "envKeys": ["NAME", ...], "command": ["prog", ...],
 * "artifacts": ["path", ...]} (schema sbxrun.job.request/1, doc/job.md).
 * Input values are strings ("depth" may also be a JSON integer).
 * "envKeys" names the variables the job may see: each must also be given
 * its value with sbx_job_set_env(), or the run fails naming it. Unknown
 * fields are refused. On failure the job is unchanged.
 *
 * @return SBX_OK, SBX_E_PARSE (not JSON), SBX_E_INVALID_ARG (a bad field,
 *         named: `inputs.depth: ...`), SBX_E_NOMEM, SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_job_load_json(sbx_job *job, const char *json);

/**
 * Run the job in sandbox s (created, or fetched), blocking. s must stay
 * alive until the run ends. A job runs once.
 *
 * @return SBX_OK when the job was carried out (whatever its verdict), or
 *         the library's own failure: SBX_E_INVALID_ARG, SBX_E_MISUSE,
 *         SBX_E_NOMEM, SBX_E_CANCELLED, ... (the verdict is then "error",
 *         "cancelled" or "unavailable").
 * @since 1.0
 */
SBX_API sbx_status sbx_job_run(sbx_job *job, sbx_sandbox *s);

/**
 * Start sbx_job_run() as an op, driven by the client (sbx_client_process()
 * and friends). Cancelling the op stops the job (its running command gets
 * SIGKILL).
 *
 * @return SBX_OK (*op is the operation), SBX_E_INVALID_ARG, SBX_E_MISUSE,
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_job_run_start(sbx_job *job, sbx_sandbox *s, sbx_op **op);

/** The verdict of a job that has run (SBX_VERDICT_ERROR before). @since 1.0 */
SBX_API sbx_verdict sbx_job_verdict(const sbx_job *job);

/** "passed", "failed", "timed-out", "denied", "cancelled", "error",
 * "unavailable" (NULL for another value). @since 1.0 */
SBX_API const char *sbx_job_verdict_name(sbx_verdict verdict);

/** The exit code of the job's last command, -1 when none exited. @since 1.0 */
SBX_API int sbx_job_exit_code(const sbx_job *job);

/** 1 when running the job again may succeed: it timed out, no sandbox
 * could be had, or a command could not be sent (the request never reached
 * the server). A policy refusal, a bad input or a failed step is not.
 * @since 1.0 */
SBX_API int sbx_job_retryable(const sbx_job *job);

/**
 * The job's transcript: the one given to sbx_job_set_transcript(), else
 * the one the job keeps in memory from its run on (every job is recorded:
 * read it with sbx_transcript_job_to_json(), save it with
 * sbx_transcript_save_file()). Borrowed: valid until the job is freed; NULL
 * before the run when none was given.
 * @since 1.0
 */
SBX_API sbx_transcript *sbx_job_transcript(const sbx_job *job);

/**
 * The job's result as JSON (schema sbxrun.job.result/1, doc/job.md):
 * status, exitCode, retryable, message, stdoutTail, stderrTail, byte
 * counts, timings, steps, artifacts, outputs. Everything in it is
 * redacted. *out is freed with sbx_free().
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (the job has not run),
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_job_result_to_json(sbx_job *job, char **out);

/* ---- runs: jobs that share a sandbox ----------------------------------- */

/**
 * A run (opaque): the jobs of one piece of work and what they share — the
 * sandbox, the budget, the transcript, the order. The jobs run one after
 * the other in the order clone, apply, install, migrate, lint, typecheck,
 * test, build (jobs of one type in the order they were added); the first
 * job that does not pass ends the run (option "keep_going" runs the
 * verify.* jobs after a failing one).
 */
typedef struct sbx_run sbx_run;

/** What a progress callback is told. */
typedef enum sbx_run_event {
    SBX_RUN_SANDBOX_CREATING = 0, /**< the run's sandbox is being created */
    SBX_RUN_UPLOADING = 1,        /**< the uploads are being sent */
    SBX_RUN_JOB_STARTED = 2,      /**< job `index` started */
    SBX_RUN_JOB_ENDED = 3,        /**< job `index` ended (sbx_job_verdict()) */
    SBX_RUN_JOB_SKIPPED = 4,      /**< job `index` will not run (an earlier one failed) */
    SBX_RUN_STOPPING = 5          /**< the run's sandbox is being stopped */
} sbx_run_event;

/**
 * Told of a run's progress, on the thread driving the client. index is the
 * job's position in run order (sbx_run_job()), 0 for the events about the
 * sandbox. Only getters may be called from it.
 */
typedef void (*sbx_run_progress_cb)(sbx_run *run, sbx_run_event event, size_t index, void *user);

/**
 * A new run of the client.
 *
 * @return the run, or NULL when c is NULL or out of memory.
 * @since 1.0
 */
SBX_API sbx_run *sbx_run_new(sbx_client *c);

/** Free the run and its jobs (NULL is fine); a running one is cancelled
 * first, and the sandbox it created is stopped. @since 1.0 */
SBX_API void sbx_run_free(sbx_run *run);

/** The message of the run's last failure ("" when none); for a NULL handle,
 * "invalid argument: the handle is NULL". @since 1.0 */
SBX_API const char *sbx_run_last_error(const sbx_run *run);

/**
 * A new job of the run, of this type, added in its place in the run order,
 * into *out (out may be NULL when the job needs no set-up). The job belongs
 * to the run (freed with it); set it up with the sbx_job setters before
 * sbx_run_execute().
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (run NULL, an unknown type),
 *         SBX_E_MISUSE (the run has started), SBX_E_NOMEM; *out is NULL on
 *         a failure.
 * @since 1.0
 */
SBX_API sbx_status sbx_run_add_job(sbx_run *run, const char *type, sbx_job **out);

/**
 * Run the jobs in s (created or fetched) instead of a sandbox the run
 * creates. s is not stopped at the end and must outlive the run.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (the run has started).
 * @since 1.0
 */
SBX_API sbx_status sbx_run_set_sandbox(sbx_run *run, sbx_sandbox *s);

/**
 * Send a local file or directory into the sandbox before the first job,
 * extracted at sandbox_path (sbx_sandbox_upload()).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOMEM, SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_run_add_upload(sbx_run *run, const char *local_path, const char *sandbox_path);

/**
 * The run's budget: wall_ms for the whole run (each job's timeout is cut
 * to what is left; 0: none), output_bytes of output of all jobs together
 * (0: none; counted after redaction; the job that passes it is stopped and
 * the run fails), max_jobs jobs at most (0: none; more is refused at
 * sbx_run_execute()). The wall budget also bounds the sandbox's creation
 * and the uploads, and a job's wait for its place under the client's
 * limits.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (wall_ms < 0), SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_run_set_budget(sbx_run *run, int64_t wall_ms, uint64_t output_bytes, size_t max_jobs);

/**
 * Record the run in t (a reference is taken): a header for the run (type
 * "run", the job types as input "jobs"), every job's steps, and the
 * verdict at the end (the run finishes t).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_run_set_transcript(sbx_run *run, sbx_transcript *t);

/** Be told of the run's progress (NULL cb: not). @since 1.0 */
SBX_API sbx_status sbx_run_set_progress_cb(sbx_run *run, sbx_run_progress_cb cb, void *user);

/**
 * Set an option by name: "runtime" (of the sandbox the run creates,
 * default the server's), "vcpus", "sandbox_timeout_ms" (its timeout,
 * default the wall budget plus a minute, or 1800000), "keep_going" ("on":
 * run every verify.* job even after one fails).
 *
 * @return SBX_OK, SBX_E_UNKNOWN_OPTION, SBX_E_INVALID_ARG, SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_run_set_option(sbx_run *run, const char *key, const char *value);

/**
 * Carry the run out, blocking: create the sandbox (unless one was given),
 * upload, run the jobs, stop the sandbox it created.
 *
 * @return SBX_OK when the run was carried out (sbx_run_verdict() says how
 *         it went), SBX_E_BUDGET_EXCEEDED (more jobs than the budget),
 *         SBX_E_CANCELLED, or the failure that stopped it.
 * @since 1.0
 */
SBX_API sbx_status sbx_run_execute(sbx_run *run);

/**
 * Start sbx_run_execute() as an op driven by the client. Cancelling it
 * cancels the running job and stops the run's sandbox.
 *
 * @return SBX_OK (*op is the operation), SBX_E_INVALID_ARG, SBX_E_MISUSE,
 *         SBX_E_BUDGET_EXCEEDED, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_run_execute_start(sbx_run *run, sbx_op **op);

/** The run's verdict: that of the job that ended it (with "keep_going",
 * the first failed check's when no later job ended it otherwise), else
 * "passed"; "unavailable" when no sandbox could be had, "timed-out" when
 * the wall budget ran out. @since 1.0 */
SBX_API sbx_verdict sbx_run_verdict(const sbx_run *run);

/** How many jobs the run has. @since 1.0 */
SBX_API size_t sbx_run_job_count(const sbx_run *run);

/** Job i in run order (NULL when out of range). @since 1.0 */
SBX_API sbx_job *sbx_run_job(const sbx_run *run, size_t i);

/** The sandbox the run uses (NULL before it is created). @since 1.0 */
SBX_API sbx_sandbox *sbx_run_sandbox(const sbx_run *run);

/**
 * The run's result as JSON (schema sbxrun.run.result/1, doc/job.md):
 * status, retryable, message, sandboxId, durationMs, outputBytes, and "jobs": each
 * job's result (those that ran) or {"jobType": ..., "status": "skipped"}.
 * *out is freed with sbx_free().
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (not run), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_run_result_to_json(sbx_run *run, char **out);

#ifdef __cplusplus
}
#endif

#endif /* SBXRUN_JOB_H */
