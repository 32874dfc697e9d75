/* SPDX-License-Identifier: MIT */
/*
 * sbx_client: the connection to a sandbox endpoint (Vercel Sandbox, or sbxd),
 * its credentials, and the engine that runs every request; sbx_op: one
 * asynchronous operation. Included by <sbxrun/sbxrun.h>.
 *
 * Every operation that talks to the endpoint comes in two forms: a blocking
 * one (sbx_sandbox_create) and one that starts it and returns an sbx_op
 * (sbx_sandbox_create_start). Ops progress only while the client is driven:
 * by a blocking call, by sbx_op_wait(), or by a host loop using
 * sbx_client_get_fd() / sbx_client_get_timeout() / sbx_client_process().
 * Finished ops are handed out by sbx_client_next_done(), so a binding needs
 * no callbacks at all. A _start function fails, without starting anything,
 * for the reasons its blocking form fails before sending (SBX_E_AUTH when
 * credentials are missing, SBX_E_MISUSE, SBX_E_INVALID_ARG, SBX_E_NOMEM);
 * on failure *op is set to NULL. See doc/client.md.
 *
 * "The request errors", named in the return lists of the calls that talk to
 * the endpoint, are: SBX_E_AUTH (credentials missing or refused),
 * SBX_E_TRANSPORT (the endpoint could not be reached, or the connection
 * broke and the request could not be repeated safely), SBX_E_HTTP (an error
 * status without a code of its own), SBX_E_PROTOCOL (an answer that does
 * not follow the protocol), SBX_E_RATE_LIMITED (429 after the retries),
 * SBX_E_TIMEOUT (the request's deadline passed), SBX_E_CANCELLED
 * (sbx_op_cancel()) and SBX_E_NOMEM.
 */
#ifndef SBXRUN_CLIENT_H
#define SBXRUN_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <sbxrun/common.h>
#include <sbxrun/policy.h>
#include <sbxrun/redact.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sbx_client sbx_client;
typedef struct sbx_op sbx_op;

/**
 * Make a client. It talks to Vercel's API (https://vercel.com/api) unless
 * an endpoint is set (sbx_client_set_endpoint(), or SBXRUN_ENDPOINT).
 * Credentials are resolved when the first request needs them, as
 * sbx_client_resolve_credentials() says. A malformed SBXRUN_ENDPOINT is kept as an error: every
 * request fails with SBX_E_INVALID_ARG (and last_error says why) until
 * sbx_client_set_endpoint() gives a good one, so nothing meant for a local
 * server is sent to Vercel. Takes a reference on the library's global
 * state (sbx_global_init()).
 *
 * @return a client, or NULL when memory or the global initialisation fails.
 * @since 1.0
 */
SBX_API sbx_client *sbx_client_new(void);

/**
 * Release a client. Operations still pending are cancelled; sandboxes,
 * commands and snapshots made from it stay valid (they keep the client's
 * core alive until they are freed). Tokens are wiped. NULL is fine.
 *
 * @since 1.0
 */
SBX_API void sbx_client_free(sbx_client *c);

/**
 * What went wrong in the most recent failing call on the client: "" when the
 * last call on it that can fail succeeded (each such call clears it first).
 * Getters (sbx_client_get_fd() and sbx_client_get_timeout() included),
 * sbx_client_wait(), sbx_client_wakeup() and sbx_client_last_error() itself
 * never change it. Owned by the handle, valid
 * until the next call on it that can fail. Never NULL; for a NULL handle,
 * "invalid argument: the handle is NULL". Never contains a secret.
 *
 * @since 1.0
 */
SBX_API const char *sbx_client_last_error(const sbx_client *c);

/**
 * The server's error code ("not_found", "sandbox_stopped", "gone",
 * "rate_limited"...: the "code" of its {"error": {...}} answer) behind the
 * most recent failing call on the client, as sbx_op_error_code() gives it
 * for an operation; NULL when that failure had none (it failed before an
 * answer, or the answer had no code) and when the last call that can fail
 * succeeded. Owned by the handle, valid as long as the message of
 * sbx_client_last_error(); NULL for a NULL handle.
 *
 * @since 1.0
 */
SBX_API const char *sbx_client_last_error_code(const sbx_client *c);

/**
 * Where requests go: "https://vercel.com/api" (the default), an sbxd URL
 * ("http://127.0.0.1:7878"), or an sbxd unix socket ("unix:/path/sock").
 * A "user:password@" in a URL is sent to the server but kept out of the
 * stored endpoint and of every message.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (not one of those forms), SBX_E_MISUSE
 *         (requests already made, or credentials resolved), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_client_set_endpoint(sbx_client *c, const char *endpoint);

/**
 * Set the credentials explicitly: an access token (or an OIDC JWT), the team
 * and the project. team may be NULL (then the token's own scope is used);
 * project must be set for Vercel (requests fail with SBX_E_AUTH without
 * one). Overrides the environment. The token is
 * copied, and wiped from memory when replaced or freed.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (empty token, control characters),
 *         SBX_E_AUTH (an OIDC token that has expired), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_client_set_credentials(sbx_client *c, const char *token, const char *team,
                                              const char *project);

/**
 * Set an option by name (for command lines, config files, bindings):
 * "endpoint", "limit.global" (requests at once, default 64),
 * "limit.project" (per project, default 32), "retry.max" (retries of a
 * request that is safe to repeat, default 5), "timeout_ms" (default
 * deadline of a request, 0 = none; default 0), "idle_timeout_ms" (a
 * request that moves no byte this long has stalled, 0 = never; default
 * 60000), "probe_after_ms" (a command's stream silent this long makes the
 * client check the command, 0 = never; default 30000), "probe_timeout_ms"
 * (how long that check may take; default 10000), "max_response_bytes"
 * (largest JSON answer, default 16 MiB), "user_agent", "command.follow"
 * ("wait" or "logs"), "log.slow_request_ms" (a request in flight this long
 * is logged as slow, 0 = never; default 10000), "jobs.max_running" and
 * "jobs.max_running_per_project" (how many jobs of the client run at once,
 * in all and per project; the rest wait in order; 0 = no limit, the
 * default; doc/job.md), "protocol" ("v2", the default: the 2.x/3.x SDKs'
 * named sandboxes and sessions, or "v1" for older deployments; before the
 * first request).
 * doc/client.md has the protocol versions, the retry policy and what the
 * timeouts do.
 *
 * @return SBX_OK, SBX_E_UNKNOWN_OPTION (the key is named in last_error),
 *         SBX_E_INVALID_ARG (a bad value), SBX_E_MISUSE ("protocol" after
 *         a request), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_client_set_option(sbx_client *c, const char *key, const char *value);

/**
 * The endpoint in use ("https://vercel.com/api", "unix:/path", ...).
 * Owned by the client.
 *
 * @since 1.0
 */
SBX_API const char *sbx_client_endpoint(const sbx_client *c);

/**
 * Resolve the credentials now instead of at the first request, to report a
 * configuration problem early. The library and the sbxrun command resolve
 * them the same way, in this order: those set with
 * sbx_client_set_credentials(); else SBXRUN_TOKEN, for an sbxd endpoint;
 * else, for a "unix:" endpoint, the file "token" in the socket's directory,
 * where sbxd keeps it (a regular file, not a symbolic link, at most 4 KiB,
 * trailing newline ignored; wiped from memory after use), so a Vercel token
 * from the environment is not sent to a local server that has its own;
 * else VERCEL_OIDC_TOKEN, then VERCEL_TOKEN (with VERCEL_PROJECT_ID and
 * VERCEL_TEAM_ID for Vercel). An sbxd endpoint needs a token too (its
 * bearer token).
 *
 * @return SBX_OK, SBX_E_AUTH (nothing usable: the message names the
 *         variables to set, or the token file and what is wrong with it;
 *         or an expired OIDC token), SBX_E_INVALID_ARG (c NULL, or a
 *         malformed SBXRUN_ENDPOINT not replaced since), SBX_E_MISUSE (from a
 *         callback), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_client_resolve_credentials(sbx_client *c);

/**
 * The project the resolved credentials name, or NULL. Owned by the client.
 *
 * @since 1.0
 */
SBX_API const char *sbx_client_project(const sbx_client *c);

/**
 * The team the resolved credentials name, or NULL. Owned by the client.
 *
 * @since 1.0
 */
SBX_API const char *sbx_client_team(const sbx_client *c);

/* ---- driving the client ------------------------------------------------ */

/**
 * One file descriptor that becomes readable when the client has work for
 * sbx_client_process(): an epoll descriptor that folds every connection, a
 * timer and a wakeup event. Watch it for reading in a foreign event loop.
 * Owned by the client; do not close it. A query: it never changes
 * sbx_client_last_error().
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (c or fd NULL).
 * @since 1.0
 */
SBX_API sbx_status sbx_client_get_fd(sbx_client *c, int *fd);

/**
 * How long the host loop may sleep before calling sbx_client_process() even
 * if the fd stays quiet: milliseconds, 0 for now, -1 for no limit.
 *
 * A query: it never changes sbx_client_last_error().
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (c or ms NULL).
 * @since 1.0
 */
SBX_API sbx_status sbx_client_get_timeout(sbx_client *c, int64_t *ms);

/**
 * Do whatever is ready: I/O, timers, retries, starting queued requests,
 * finishing operations. Never blocks. Completion callbacks run here, on the
 * caller's thread. *running (may be NULL) receives the number of operations
 * still pending.
 *
 * @return SBX_OK, SBX_E_MISUSE (called from inside a callback).
 * @since 1.0
 */
SBX_API sbx_status sbx_client_process(sbx_client *c, size_t *running);

/**
 * Block until the client has work (the fd is readable or the timeout is
 * due) or timeout_ms passes (-1: no limit). Runs no callbacks and touches no
 * operation, so it may run on a worker thread while another thread calls
 * sbx_client_process() afterwards (never at the same time as _free).
 *
 * Never changes sbx_client_last_error().
 *
 * @return SBX_OK, SBX_E_AGAIN (timeout_ms passed and nothing happened),
 *         SBX_E_INVALID_ARG, SBX_E_IO.
 * @since 1.0
 */
SBX_API sbx_status sbx_client_wait(sbx_client *c, int64_t timeout_ms);

/**
 * Make a pending or future sbx_client_wait() return. Safe from any thread,
 * including signal handlers' threads.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (c NULL).
 * @since 1.0
 */
SBX_API sbx_status sbx_client_wakeup(sbx_client *c);

/**
 * The next finished operation, in completion order, or NULL when none is
 * waiting. Each op is handed out once; it stays owned by the caller, who
 * frees it with sbx_op_free().
 *
 * @since 1.0
 */
SBX_API sbx_op *sbx_client_next_done(sbx_client *c);

/**
 * Drive the client until every operation has finished, or timeout_ms passes
 * (-1: no limit). A binding that must notice signals calls it with a short
 * timeout in a loop; the operations carry on between calls.
 *
 * @return SBX_OK (nothing is pending), SBX_E_AGAIN (timeout_ms passed with
 *         operations still pending), SBX_E_MISUSE (from a callback).
 * @since 1.0
 */
SBX_API sbx_status sbx_client_run(sbx_client *c, int64_t timeout_ms);

/**
 * Called when an operation finishes, from sbx_client_process() (and the
 * blocking calls built on it), on the thread driving the client. From inside
 * it only getters, sbx_op_cancel(), sbx_op_free() and
 * sbx_client_next_done() may be called; other calls fail with SBX_E_MISUSE
 * (constructors return NULL).
 * @since 1.0
 */
typedef void (*sbx_op_done_cb)(sbx_op *op, void *user);

/**
 * Set (or with NULL remove) the callback for finished operations. Ops are
 * still handed out by sbx_client_next_done() as well.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (from a callback).
 * @since 1.0
 */
SBX_API sbx_status sbx_client_set_done_cb(sbx_client *c, sbx_op_done_cb cb, void *user);

/* ---- operations -------------------------------------------------------- */

/**
 * Whether the operation has finished (1) or is pending (0).
 *
 * @since 1.0
 */
SBX_API int sbx_op_done(const sbx_op *op);

/**
 * The outcome: SBX_E_AGAIN while pending, then SBX_OK or the failure.
 *
 * @since 1.0
 */
SBX_API sbx_status sbx_op_status(const sbx_op *op);

/**
 * The message of a failed operation ("" while pending or on success): what
 * failed, the HTTP status and the server's error code where there was one.
 * Owned by the op. Never NULL; for a NULL op, "invalid argument: the handle
 * is NULL".
 *
 * @since 1.0
 */
SBX_API const char *sbx_op_last_error(const sbx_op *op);

/**
 * The "code" of the server's error answer that failed the operation
 * ({"error": {"code": ..., "message": ...}}: "not_found", "gone",
 * "sandbox_stopping", "snapshot_not_found", "rate_limited"...), or NULL
 * when it did not fail so (it succeeded, is not done, failed before an
 * answer, or the answer had no code). The message is in
 * sbx_op_last_error(). Owned by the operation.
 *
 * @since 1.0
 */
SBX_API const char *sbx_op_error_code(const sbx_op *op);

/**
 * The HTTP status of the operation's last response, 0 if none yet.
 *
 * @since 1.0
 */
SBX_API int sbx_op_http_status(const sbx_op *op);

/**
 * How far the operation's transfer has come: the bytes of its request body
 * sent and of its response body received so far, and the total of each.
 *
 * The transfers of files are what this is for: sbx_sandbox_upload_start()
 * and sbx_sandbox_write_file_start() send a body, the read, stream and
 * download calls receive one. Other operations report their JSON bodies
 * where they are one request, or 0 and -1. A retried
 * request starts again from 0. The received bytes are the body as the
 * caller gets it (after any content decoding); its total is the
 * Content-Length of a successful answer that is not content-encoded.
 * The counts are read atomically: unlike the rest of the sbx_op calls, this
 * one may be made from any thread while another drives the client, as long
 * as op is not freed meanwhile (to draw a progress bar beside a blocking
 * sbx_op_wait(), say).
 *
 * @param op             the operation.
 * @param sent           if not NULL: request body bytes sent.
 * @param send_total     if not NULL: the request body's size (0: none), or
 *                       -1 before the request starts.
 * @param received       if not NULL: response body bytes received.
 * @param receive_total  if not NULL: the response body's size, or -1 while
 *                       it is not known (no answer yet, chunked, encoded).
 * @return SBX_OK, or SBX_E_INVALID_ARG for a NULL op.
 * @since 1.0
 */
SBX_API sbx_status sbx_op_get_progress(const sbx_op *op, uint64_t *sent, int64_t *send_total, uint64_t *received,
                                       int64_t *receive_total);

/**
 * The operation's JSON result where it has one (the page of a list, the
 * object of a get), else NULL. Owned by the op.
 *
 * @since 1.0
 */
SBX_API const char *sbx_op_result_json(const sbx_op *op);

/**
 * The operation's bytes where it has some (the file of a successful
 * sbx_sandbox_read_file_start()), else NULL: what the blocking form hands
 * over, kept by the op as sbx_op_result_json() keeps its text. They are
 * followed by a NUL for convenience; an empty file gives "" and length 0.
 * Owned by the op, valid until sbx_op_free().
 *
 * @param op   the operation.
 * @param len  if not NULL: the length in bytes (0 when NULL is returned).
 * @since 1.0
 */
SBX_API const uint8_t *sbx_op_result_data(const sbx_op *op, size_t *len);

/**
 * Ask a pending operation to stop: its requests are aborted and it finishes
 * with SBX_E_CANCELLED at the next sbx_client_process(). Safe from any
 * thread. A command already started on the server keeps running there
 * (kill it with sbx_command_kill()).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG.
 * @since 1.0
 */
SBX_API sbx_status sbx_op_cancel(sbx_op *op);

/**
 * Drive the client until this operation finishes (others progress too), or
 * timeout_ms passes (-1: no limit). When the timeout passes first the
 * operation is left as it is, still pending: call again to go on waiting, or
 * sbx_op_cancel() it. A binding waits in slices (say 100 ms) to check for
 * signals between them, so a Ctrl-C is not held up by a long operation.
 *
 * @return the operation's status once it has finished, SBX_E_AGAIN when
 *         timeout_ms passed first, SBX_E_INVALID_ARG (op NULL),
 *         SBX_E_MISUSE (from a callback).
 * @since 1.0
 */
SBX_API sbx_status sbx_op_wait(sbx_op *op, int64_t timeout_ms);

/**
 * Attach a pointer of the caller's to the op (a binding's future, say).
 *
 * @since 1.0
 */
SBX_API void sbx_op_set_user(sbx_op *op, void *user);

/**
 * The pointer given to sbx_op_set_user(), or NULL.
 *
 * @since 1.0
 */
SBX_API void *sbx_op_user(const sbx_op *op);

/**
 * Release an operation; a pending one is cancelled first. NULL is fine.
 *
 * @since 1.0
 */
SBX_API void sbx_op_free(sbx_op *op);

/* ---- lists ------------------------------------------------------------- */

/**
 * One page of the project's sandboxes, newest first, as the protocol's JSON
 * ({"sandboxes": [...], "pagination": {"count","next","prev"}}), freed with
 * sbx_free(). project NULL means the credentials' project; limit 0 means the
 * server's default; since/until are creation times in ms (exclusive), or -1.
 * Pass pagination.next as until for the following page.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_AUTH, SBX_E_TRANSPORT,
 *         SBX_E_HTTP, SBX_E_PROTOCOL, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_client_list_sandboxes(sbx_client *c, const char *project, size_t limit,
                                             int64_t since, int64_t until, char **json);

/**
 * Start sbx_client_list_sandboxes(); the page is the op's
 * sbx_op_result_json() once it has finished.
 *
 * @return SBX_OK (*op is the operation), SBX_E_INVALID_ARG, SBX_E_MISUSE,
 *         SBX_E_AUTH, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_client_list_sandboxes_start(sbx_client *c, const char *project,
                                                   size_t limit, int64_t since, int64_t until,
                                                   sbx_op **op);

/**
 * One page of the project's snapshots ({"snapshots": [...], "pagination":
 * ...}), as sbx_client_list_sandboxes().
 *
 * @return as sbx_client_list_sandboxes().
 * @since 1.0
 */
SBX_API sbx_status sbx_client_list_snapshots(sbx_client *c, const char *project, size_t limit,
                                             int64_t since, int64_t until, char **json);

/**
 * Start sbx_client_list_snapshots(); the page is the op's
 * sbx_op_result_json() once it has finished.
 *
 * @return SBX_OK (*op is the operation), SBX_E_INVALID_ARG, SBX_E_MISUSE,
 *         SBX_E_AUTH, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_client_list_snapshots_start(sbx_client *c, const char *project,
                                                   size_t limit, int64_t since, int64_t until,
                                                   sbx_op **op);

/**
 * One page of a list in the 2.x protocol (the client's default): the
 * project's named sandboxes, newest first ({"sandboxes": [...],
 * "pagination": {"count", "next"}}), from cursor, the "next" of the page
 * before (NULL: the first page; "next" is null on the last). project and
 * limit as sbx_client_list_sandboxes().
 *
 * @return as sbx_client_list_sandboxes(); SBX_E_UNSUPPORTED with a cursor
 *         in the v1 protocol (which pages by since/until).
 * @since 1.0
 */
SBX_API sbx_status sbx_client_list_sandboxes_from(sbx_client *c, const char *project, size_t limit,
                                                  const char *cursor, char **json);

/**
 * Start sbx_client_list_sandboxes_from(); the page is the op's
 * sbx_op_result_json() once it has finished.
 *
 * @return SBX_OK (*op is the operation), SBX_E_INVALID_ARG, SBX_E_MISUSE,
 *         SBX_E_UNSUPPORTED, SBX_E_AUTH, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_client_list_sandboxes_from_start(sbx_client *c, const char *project, size_t limit,
                                                        const char *cursor, sbx_op **op);

/**
 * The snapshots' list by cursor ({"snapshots": [...], "pagination": ...}),
 * as sbx_client_list_sandboxes_from().
 *
 * @return as sbx_client_list_sandboxes_from().
 * @since 1.0
 */
SBX_API sbx_status sbx_client_list_snapshots_from(sbx_client *c, const char *project, size_t limit,
                                                  const char *cursor, char **json);

/**
 * Start sbx_client_list_snapshots_from().
 *
 * @return as sbx_client_list_sandboxes_from_start().
 * @since 1.0
 */
SBX_API sbx_status sbx_client_list_snapshots_from_start(sbx_client *c, const char *project, size_t limit,
                                                        const char *cursor, sbx_op **op);

/**
 * One page of the sessions (each run of a named sandbox: {"sessions":
 * [...], "pagination": {"count", "next"}}) of the named sandbox name, or of
 * every sandbox when name is NULL, newest first, from cursor as
 * sbx_client_list_sandboxes_from(); project and limit as there. The 2.x
 * protocol's; the v1 protocol has no sessions.
 *
 * @return as sbx_client_list_sandboxes_from(); SBX_E_INVALID_ARG for an
 *         empty name; SBX_E_UNSUPPORTED in the v1 protocol.
 * @since 1.0
 */
SBX_API sbx_status sbx_client_list_sessions_from(sbx_client *c, const char *project, const char *name, size_t limit,
                                                 const char *cursor, char **json);

/**
 * Start sbx_client_list_sessions_from(); the page is the op's
 * sbx_op_result_json() once it has finished.
 *
 * @return as sbx_client_list_sandboxes_from_start().
 * @since 1.0
 */
SBX_API sbx_status sbx_client_list_sessions_from_start(sbx_client *c, const char *project, const char *name,
                                                       size_t limit, const char *cursor, sbx_op **op);

/* ---- logging ----------------------------------------------------------- */

/**
 * How much a log message matters. Messages at a level below the minimum
 * given to sbx_client_set_log_cb() are not made at all.
 *
 * @since 1.0
 */
typedef enum sbx_log_level {
    SBX_LOG_DEBUG = 0, /* every request's start and end, with status and duration */
    SBX_LOG_INFO = 1,  /* a new connection made because a used one failed, a stream asked for again */
    SBX_LOG_WARN = 2,  /* a retry (why, and the wait before it), a slow request, a stall */
    SBX_LOG_ERROR = 3  /* a request that failed for good */
} sbx_log_level;

/**
 * Receives one log message: one line of plain English naming the request's
 * method and path (no query string), never a header, a token or a URL's
 * user and password. The message is valid only during the call. Called
 * from sbx_client_process() (and the blocking calls built on it), on the
 * thread driving the client; never from sbx_client_wait(), never from
 * another thread. From inside it only getters, sbx_op_cancel(),
 * sbx_op_free() and sbx_client_next_done() may be called; other calls fail
 * with SBX_E_MISUSE.
 *
 * @since 1.0
 */
typedef void (*sbx_log_cb)(sbx_log_level level, const char *message, void *user);

/**
 * Set (or with a NULL cb remove) the client's log callback, which gets the
 * messages at min_level and above. The library never prints: without a
 * callback, nothing is logged. sbx_client_free() removes it (handles made
 * from the client log nothing after that). The option
 * "log.slow_request_ms" (sbx_client_set_option()) sets when a request
 * counts as slow (default 10000, 0 = never).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (c NULL, or min_level not a level),
 *         SBX_E_MISUSE (from inside a callback).
 * @since 1.0
 */
SBX_API sbx_status sbx_client_set_log_cb(sbx_client *c, sbx_log_level min_level, sbx_log_cb cb, void *user);

/* ---- safety for plain commands ----------------------------------------- */

/**
 * Check every command made from this client against a command policy
 * before anything is sent: sbx_command_run(), _run_start() and a detached
 * start fail with SBX_E_POLICY_DENIED, the message naming the rule
 * (sbx_policy_reason_name()) and the argument, and no request is made.
 * Attaching to a command already running is not checked. A relative
 * working directory is taken under /vercel/sandbox, as the server does.
 *
 * p is copied: later changes to it do not reach the client. NULL removes
 * the check (the default: a plain command is a faithful client of the
 * protocol). Jobs (sbx_job) check their commands with their own policy.
 *
 * @param job_type  the job type whose rules apply (NULL: the base rules).
 * @return SBX_OK, SBX_E_INVALID_ARG (c NULL, job_type unknown),
 *         SBX_E_NOMEM, SBX_E_MISUSE (from inside a callback).
 * @since 1.0
 */
SBX_API sbx_status sbx_client_set_policy(sbx_client *c, const sbx_policy *p, const char *job_type);

/**
 * Redact the output of every command started from this client from now
 * on, before any output callback or buffer sees it (sbx_redact_stream
 * rules: a secret cut across chunks is still caught; what the redactor
 * holds back at a chunk's end comes with the next chunk or at the
 * output's end). The byte counts of sbx_command_output_bytes() stay those
 * of the output as the program wrote it.
 *
 * The redactor's rules are taken as they are now (it may be changed or
 * freed afterwards). NULL stops redacting for commands started later.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (c NULL), SBX_E_MISUSE (from inside a
 *         callback), SBX_E_NOMEM (building the rules; the redactor set
 *         before stays).
 * @since 1.0
 */
SBX_API sbx_status sbx_client_set_redactor(sbx_client *c, const sbx_redactor *r);

#ifdef __cplusplus
}
#endif

#endif /* SBXRUN_CLIENT_H */
