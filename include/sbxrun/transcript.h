/* SPDX-License-Identifier: MIT */
/*
 * sbx_transcript: the auditable record of a job. Included by
 * <sbxrun/sbxrun.h>.
 *
 * A transcript holds a header (the job: type, inputs, policy and network
 * policy summaries, endpoint, sandbox), one entry per step (argv, cwd, env
 * key names, times, exit code or the reason there is none, the remote
 * command id, head and tail windows of each output stream with the count of
 * bytes dropped between them, redaction counts, whether it is retryable) and
 * an end entry (the verdict). Every string that enters it goes through a
 * redactor. Each entry carries the SHA-256 of its own canonical JSON and of
 * the entry before it: a hash chain, checked by sbx_transcript_verify().
 *
 * Memory is bounded: output is kept as head and tail windows, and the whole
 * transcript has a byte limit (sbx_transcript_set_limits()). With a file set
 * (sbx_transcript_set_file()), every entry is appended and synced as it is
 * made, so a crash leaves every finished step on disk; the file is always
 * loadable. The format (JSON Lines, versioned) is in doc/transcript.md.
 *
 * Threads: a transcript belongs to one thread at a time; it may be passed
 * between threads. Reference counted: sbx_transcript_ref() and _free().
 */
#ifndef SBXRUN_TRANSCRIPT_H
#define SBXRUN_TRANSCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include <sbxrun/common.h>
#include <sbxrun/redact.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sbx_transcript sbx_transcript;

/**
 * How a step ended (the "reason" of its entry).
 * @since 1.0
 */
typedef enum sbx_step_outcome {
    SBX_STEP_EXITED = 0,          /**< the program exited; its exit code says how */
    SBX_STEP_TIMEOUT = 1,         /**< it ran past its deadline and was stopped */
    SBX_STEP_KILLED = 2,          /**< it was killed (a signal, the sandbox stopped) */
    SBX_STEP_POLICY_DENIED = 3,   /**< the command policy refused it: it never ran */
    SBX_STEP_TRANSPORT_ERROR = 4, /**< the sandbox could not be reached: outcome unknown */
    SBX_STEP_CANCELLED = 5,       /**< the job was cancelled during it */
    SBX_STEP_SKIPPED = 6          /**< not run (an earlier step failed) */
} sbx_step_outcome;

/**
 * How a job ended: the verdict of a transcript's end entry, written there as
 * the lowercase text in each comment.
 * @since 1.0
 */
typedef enum sbx_verdict {
    SBX_VERDICT_PASSED = 0,    /**< "passed": every step ran and succeeded */
    SBX_VERDICT_FAILED = 1,    /**< "failed": a step ran and failed */
    SBX_VERDICT_TIMED_OUT = 2, /**< "timed-out": the job ran past its deadline */
    SBX_VERDICT_DENIED = 3,    /**< "denied": a policy refused a step */
    SBX_VERDICT_CANCELLED = 4, /**< "cancelled": the caller stopped the job */
    SBX_VERDICT_ERROR = 5,     /**< "error": the job could not be carried out */
    SBX_VERDICT_UNAVAILABLE = 6 /**< "unavailable": no sandbox could be had (retry later) */
} sbx_verdict;

/**
 * A new, empty transcript with default limits (head 16 KiB and tail 16 KiB
 * per stream, 16 MiB in all) and a redactor with the built-in shapes.
 *
 * @return the transcript, or NULL when out of memory. Free with
 *         sbx_transcript_free().
 * @since 1.0
 */
SBX_API sbx_transcript *sbx_transcript_new(void);

/**
 * Take a reference: the transcript lives until every reference is freed.
 *
 * @return t (NULL when t is NULL).
 * @since 1.0
 */
SBX_API sbx_transcript *sbx_transcript_ref(sbx_transcript *t);

/**
 * Drop a reference; the last one frees the transcript (its file, if any, is
 * closed as it is: a transcript not finished stays a journal of the steps
 * that ended). NULL is accepted.
 * @since 1.0
 */
SBX_API void sbx_transcript_free(sbx_transcript *t);

/**
 * What went wrong in the most recent failing call on the transcript: "" when
 * the last call on it that can fail succeeded (each such call clears it
 * first). Getters and sbx_transcript_last_error() itself never change it.
 * Owned by the handle, valid until the next call on it that can fail. Never
 * NULL; for a NULL handle, "invalid argument: the handle is NULL". Never
 * contains a secret.
 *
 * @since 1.0
 */
SBX_API const char *sbx_transcript_last_error(const sbx_transcript *t);

/**
 * Use r's rules for every string and every byte of output that enters the
 * transcript from now on (a reference to the rules is kept: r may be freed).
 * Without a call, the built-in shapes are used.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_set_redactor(sbx_transcript *t, const sbx_redactor *r);

/**
 * Set the byte limits: head and tail are the output windows kept per
 * stream of a step (the bytes between are counted, not kept); total bounds
 * the whole transcript's JSON, the end entry included (a step that would
 * pass it keeps less output and is marked truncated). Before the first
 * entry is made.
 *
 * @param head   0 to 1 GiB.
 * @param tail   0 to 1 GiB.
 * @param total  4 KiB to 4 GiB (and at most SIZE_MAX).
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (entries exist).
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_set_limits(sbx_transcript *t, size_t head, size_t tail, size_t total);

/**
 * Journal the transcript to path: the file is created (or replaced), the
 * entries made so far are written, and each later one is appended and
 * synced as it is made. sbx_transcript_finish() then replaces the file
 * atomically with the complete transcript.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (a file is set, or the
 *         transcript was loaded), SBX_E_IO (naming the path and the error),
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_set_file(sbx_transcript *t, const char *path);

/**
 * Set the job's type ("verify.test", "repo.clone"...): letters, digits,
 * '.', '-' and '_', up to 64 bytes. Before the first step.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_set_job_type(sbx_transcript *t, const char *type);

/**
 * Record an input of the job (its value redacted). Setting a key again
 * replaces its value. Before the first step.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (a key that is empty, longer than 128
 *         bytes or not UTF-8), SBX_E_MISUSE, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_set_input(sbx_transcript *t, const char *key, const char *value);

/**
 * Record the summary of the command policy (json: an object, as written by
 * the caller; its strings are redacted). Before the first step.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_PARSE (not a JSON object),
 *         SBX_E_MISUSE, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_set_policy_json(sbx_transcript *t, const char *json);

/**
 * Record the network policy (json: an object, such as
 * sbx_netpolicy_to_json() writes; its strings are redacted). Before the
 * first step.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_PARSE, SBX_E_MISUSE, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_set_netpolicy_json(sbx_transcript *t, const char *json);

/**
 * Record the endpoint the job ran against (a URL; credentials in it are
 * redacted). Before the first step.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_set_endpoint(sbx_transcript *t, const char *endpoint);

/**
 * Record the sandbox the job ran in. At any time before the end: set after
 * entries were made, it is recorded in an entry of its own.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (finished or loaded),
 *         SBX_E_IO (journal), SBX_E_BUDGET_EXCEEDED (total limit),
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_set_sandbox_id(sbx_transcript *t, const char *id);

/**
 * Begin a step: its start time is now. The header entry is made with the
 * first step (or at sbx_transcript_finish()).
 *
 * @param name  a short label ("lint", "test"), or NULL.
 * @param step  receives the step's number (1, 2...).
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (finished or loaded),
 *         SBX_E_IO (journal), SBX_E_BUDGET_EXCEEDED (total limit),
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_step_begin(sbx_transcript *t, const char *name, size_t *step);

/**
 * Set a step's argv (each argument redacted; copied).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (argc 0, a NULL argument, not UTF-8),
 *         SBX_E_NOT_FOUND (no such open step), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_step_set_argv(sbx_transcript *t, size_t step, size_t argc,
                                                const char *const *argv);

/**
 * Set a step's working directory (redacted).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOT_FOUND, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_step_set_cwd(sbx_transcript *t, size_t step, const char *cwd);

/**
 * Record an environment variable given to a step: its name only. name may
 * be "NAME" or "NAME=value"; the value is never stored.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (an empty or invalid name),
 *         SBX_E_NOT_FOUND, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_step_add_env(sbx_transcript *t, size_t step, const char *name);

/**
 * Record the remote command id of a step.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOT_FOUND, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_step_set_command_id(sbx_transcript *t, size_t step, const char *id);

/**
 * Add output of a step: redacted as a stream (a secret split between calls
 * is still caught), then kept in the stream's head window until it is full,
 * and in its tail window (the last bytes); the bytes between are counted.
 *
 * @param stream  SBX_STREAM_STDOUT or SBX_STREAM_STDERR.
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOT_FOUND, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_step_add_output(sbx_transcript *t, size_t step, sbx_stream stream,
                                              const uint8_t *data, size_t len);

/**
 * End a step: its end time is now, its entry is made (and journaled).
 *
 * @param outcome    how it ended.
 * @param exit_code  its exit code (0..255), or -1 when it has none.
 * @param retryable  non-zero when running it again is safe.
 * @param detail     a message (an error, why it was denied), or NULL;
 *                   redacted.
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOT_FOUND, SBX_E_IO (journal),
 *         SBX_E_NOMEM. The step is ended even on SBX_E_IO: the entry is in
 *         memory, the file lacks it (and later entries are not appended).
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_step_end(sbx_transcript *t, size_t step, sbx_step_outcome outcome,
                                           int exit_code, int retryable, const char *detail);

/**
 * End the transcript: steps still open are ended as cancelled, the end
 * entry records the verdict, and the file (if set) is replaced atomically
 * with the complete transcript (a temporary file, synced, renamed).
 *
 * @param verdict  how the job ended.
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (finished or loaded),
 *         SBX_E_IO, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_finish(sbx_transcript *t, sbx_verdict verdict);

/**
 * Load a transcript file into an empty transcript. A torn last line (a
 * writer that crashed in the middle of it) is left out and reported by
 * sbx_transcript_torn_bytes(); entries that do not verify are loaded as
 * they are (sbx_transcript_verify() says which). A loaded transcript is
 * read-only.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (t is not empty),
 *         SBX_E_IO, SBX_E_PARSE (not a transcript: no header line),
 *         SBX_E_UNSUPPORTED (a newer format version), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_load_file(sbx_transcript *t, const char *path);

/**
 * Load a transcript from memory, as sbx_transcript_load_file() does from a file.
 *
 * @return as sbx_transcript_load_file(), without SBX_E_IO.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_load_data(sbx_transcript *t, const uint8_t *data, size_t len);

/**
 * Check the hash chain: each entry's own hash, its link to the entry
 * before, its sequence number, and that it is written canonically; a torn
 * last line counts as broken.
 *
 * @param broken  receives the index (0-based) of the first broken entry
 *                when the result is SBX_E_INTEGRITY, and is left as it is
 *                otherwise; may be NULL.
 * @return SBX_OK (the chain holds), SBX_E_INTEGRITY (the message names the
 *         entry and what is wrong), SBX_E_INVALID_ARG.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_verify(sbx_transcript *t, size_t *broken);

/**
 * The number of step entries.
 * @since 1.0
 */
SBX_API size_t sbx_transcript_step_count(const sbx_transcript *t);

/**
 * Whether the transcript has its end entry (the job finished).
 * @return 1 or 0.
 * @since 1.0
 */
SBX_API int sbx_transcript_complete(const sbx_transcript *t);

/**
 * Bytes of a torn last line left out by the load (0: none).
 * @since 1.0
 */
SBX_API size_t sbx_transcript_torn_bytes(const sbx_transcript *t);

/**
 * The hash of the last entry (64 hex digits): kept elsewhere, it lets a
 * later check see that nothing was removed from the end either.
 *
 * @return owned by t, valid until the next entry; "" when there is none.
 * @since 1.0
 */
SBX_API const char *sbx_transcript_head_hash(const sbx_transcript *t);

/**
 * The header entry (the job) as JSON.
 *
 * @param out  receives a NUL-terminated JSON object; free it with sbx_free().
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOT_FOUND (no header yet),
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_job_to_json(sbx_transcript *t, char **out);

/**
 * A step's entry as JSON, by position (1 = the first step entry, in the
 * order the steps ended).
 *
 * @param out  receives a NUL-terminated JSON object; free it with sbx_free().
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOT_FOUND, SBX_E_PARSE (the
 *         entry is damaged), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_step_to_json(sbx_transcript *t, size_t n, char **out);

/**
 * The whole transcript in its file format (JSON Lines), as
 * sbx_transcript_save_file() writes it and sbx_transcript_load_data() reads it.
 *
 * @param out  receives it, with a NUL after it; free it with sbx_free().
 * @param len  receives its length; may be NULL.
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_save_data(sbx_transcript *t, uint8_t **out, size_t *len);

/**
 * Write the transcript to path atomically: a temporary file beside it,
 * synced, then renamed over path (and the directory synced).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_IO, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_transcript_save_file(sbx_transcript *t, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* SBXRUN_TRANSCRIPT_H */
