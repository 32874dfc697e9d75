/* SPDX-License-Identifier: MIT */
/*
 * sbx_command: one program run in a sandbox, its output and its exit code.
 * Included by <sbxrun/sbxrun.h>.
 *
 * Output arrives while the command runs, in order, through a callback set
 * with sbx_command_set_output_cb(), or into bounded buffers read with
 * sbx_command_read_output(). If the stream carrying it drops, the client
 * reconnects and skips what it already delivered; an exit code is only ever
 * one the server reported.
 */
#ifndef SBXRUN_COMMAND_H
#define SBXRUN_COMMAND_H

#include <stddef.h>
#include <stdint.h>

#include <sbxrun/client.h>
#include <sbxrun/common.h>
#include <sbxrun/sandbox.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sbx_command sbx_command;

/**
 * Receives a command's output as it arrives: stream is SBX_STREAM_STDOUT or
 * SBX_STREAM_STDERR; data is bytes as the program wrote them (not
 * NUL-terminated, not necessarily UTF-8), valid only during the call. Return
 * non-zero to cancel the command's operation.
 * @since 1.0
 */
typedef int (*sbx_output_cb)(sbx_stream stream, const uint8_t *data, size_t len, void *user);

/**
 * A command handle for sandbox s (which must be created or attached by the
 * time the command starts). It keeps the sandbox handle's data alive.
 *
 * @return the handle, or NULL (out of memory, called inside a callback, or s is NULL).
 * @since 1.0
 */
SBX_API sbx_command *sbx_command_new(sbx_sandbox *s);

/**
 * Release the handle; a pending operation is cancelled (the command keeps
 * running in the sandbox). NULL is fine.
 *
 * @since 1.0
 */
SBX_API void sbx_command_free(sbx_command *cmd);

/**
 * What went wrong in the most recent failing call on the command: "" when
 * the last call on it that can fail succeeded (each such call clears it
 * first). Getters and sbx_command_last_error() itself never change it. Owned
 * by the handle, valid until the next call on it that can fail. Never NULL;
 * for a NULL handle, "invalid argument: the handle is NULL". Never contains
 * a secret.
 *
 * @since 1.0
 */
SBX_API const char *sbx_command_last_error(const sbx_command *cmd);

/**
 * The server's error code ("not_found", "sandbox_stopped", "gone",
 * "rate_limited"...: the "code" of its {"error": {...}} answer) behind the
 * most recent failing call on the command, as sbx_op_error_code() gives it
 * for an operation; NULL when that failure had none (it failed before an
 * answer, or the answer had no code) and when the last call that can fail
 * succeeded. Owned by the handle, valid as long as the message of
 * sbx_command_last_error(); NULL for a NULL handle.
 *
 * @since 1.0
 */
SBX_API const char *sbx_command_last_error_code(const sbx_command *cmd);

/**
 * The program and its arguments: argv[0] is the program (looked up in the
 * sandbox's PATH), the rest are passed verbatim, without a shell.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (argc 0, an empty program, a NULL
 *         element, text that is not UTF-8), SBX_E_MISUSE (started),
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_command_set_argv(sbx_command *cmd, size_t argc, const char *const *argv);

/**
 * The working directory (absolute, or relative to /vercel/sandbox); NULL for
 * the sandbox's.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_command_set_cwd(sbx_command *cmd, const char *cwd);

/**
 * An environment variable for this command (over the sandbox's); value NULL
 * removes it. The value is wiped from the library's memory when the handle is
 * freed and never appears in an error message. It is not redacted from the
 * command's output: a program that prints it prints it. To keep a value out
 * of output, register it with a redactor (sbx_redactor_add_secret()) and
 * filter the output through it; jobs do this for their secret inputs.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_command_set_env(sbx_command *cmd, const char *name, const char *value);

/**
 * Run as root of the sandbox (1) or as its unprivileged user (0, default).
 *
 * @return SBX_OK, SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_command_set_sudo(sbx_command *cmd, int sudo);

/**
 * A deadline from the start: when it passes, the command is killed
 * (SIGKILL) and its operation fails with SBX_E_TIMEOUT. 0 means none. In
 * the 2.x protocol the server is given the same limit and kills the
 * command itself (exit code 137), should the client be gone by then.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (negative), SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_command_set_timeout_ms(sbx_command *cmd, int64_t ms);

/**
 * Receive output through cb instead of the buffers (NULL returns to the
 * buffers). cb runs from sbx_client_process() and the blocking calls.
 *
 * @return SBX_OK, SBX_E_MISUSE (started).
 * @since 1.0
 */
SBX_API sbx_status sbx_command_set_output_cb(sbx_command *cmd, sbx_output_cb cb, void *user);

/**
 * How many bytes of output each stream's buffer holds for
 * sbx_command_read_output() (default 1 MiB). For a command followed through
 * an op, when a buffer is full reading from the server pauses until it is
 * drained: nothing is dropped, and memory stays bounded (by the limit plus
 * one network read). A blocking sbx_command_run() keeps the tail instead.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (0), SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_command_set_output_limit(sbx_command *cmd, size_t bytes);

/**
 * Run the command and wait for it to exit, its whole output delivered.
 * A command that ran and failed is not an error: see sbx_command_exit_code().
 * The request that starts it is never sent twice once it may have reached
 * the server. Output not taken by a callback is kept in each stream's buffer
 * up to the output limit; beyond it the oldest bytes are dropped, so after
 * the run the buffers hold the tail of the output (where errors usually are),
 * read with sbx_command_read_output().
 *
 * @return SBX_OK, SBX_E_MISUSE (started, no argv, sandbox not created),
 *         SBX_E_TIMEOUT (its deadline passed; it was killed),
 *         SBX_E_CANCELLED, SBX_E_CONFLICT (the sandbox stopped; the exit
 *         code is the one the server reported, if any), SBX_E_AUTH,
 *         SBX_E_TRANSPORT (the connection was lost and could not be
 *         resumed; the command may still run), SBX_E_HTTP, SBX_E_PROTOCOL,
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_command_run(sbx_command *cmd);

/**
 * Start the command; the op finishes when it has exited and all its output
 * has been delivered (or failed). sbx_command_id() is set as soon as the
 * server has started it.
 *
 * @return SBX_OK (*op is the operation), SBX_E_INVALID_ARG, SBX_E_MISUSE,
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_command_run_start(sbx_command *cmd, sbx_op **op);

/**
 * Check the command against the client's command policy
 * (sbx_client_set_policy()) as sbx_command_run() does first, without
 * sending anything and without needing the sandbox to exist yet: a caller
 * can refuse a command before it creates a sandbox for it.
 *
 * @return SBX_OK (allowed, or the client has no policy),
 *         SBX_E_POLICY_DENIED (last_error names the rule and the argument),
 *         SBX_E_MISUSE (no argv yet, or inside a callback),
 *         SBX_E_INVALID_ARG.
 * @since 1.0
 */
SBX_API sbx_status sbx_command_check(sbx_command *cmd);

/**
 * Follow a command that is already running (or finished) in the sandbox:
 * its output from the beginning, then its exit.
 *
 * @return as sbx_command_run_start(); SBX_E_NOT_FOUND for an unknown id.
 * @since 1.0
 */
SBX_API sbx_status sbx_command_attach_start(sbx_command *cmd, const char *id, sbx_op **op);

/**
 * Start the command without following it (the protocol's detached mode):
 * the op finishes as soon as the server has started it, with its id set.
 * Follow it later with sbx_command_attach_start(), or wait for its exit with
 * sbx_command_wait_exit(). Typical for servers a later command talks to.
 *
 * @return SBX_OK, SBX_E_MISUSE (started).
 * @since 1.0
 */
SBX_API sbx_status sbx_command_set_detached(sbx_command *cmd, int detached);

/**
 * Follow a command that is already running (or finished): as
 * sbx_command_attach_start(), blocking until it has exited.
 *
 * @return as sbx_command_run(); SBX_E_NOT_FOUND for an unknown id.
 * @since 1.0
 */
SBX_API sbx_status sbx_command_attach(sbx_command *cmd, const char *id);

/**
 * Point the handle at command id of the sandbox (if it is not already) and
 * read its state: sbx_command_exit_code() is then its exit code, or -1 while
 * it runs.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (the handle follows
 *         another command), SBX_E_NOT_FOUND, SBX_E_TRANSPORT, SBX_E_HTTP, and the
 *         request errors (see client.h)
 * @since 1.0
 */
SBX_API sbx_status sbx_command_fetch(sbx_command *cmd, const char *id);

/**
 * Start sbx_command_fetch().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_command_fetch() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_command_fetch_start(sbx_command *cmd, const char *id, sbx_op **op);

/**
 * Wait until the command has exited, without reading its output (a long
 * poll on the server), and set its exit code. The handle's timeout
 * (sbx_command_set_timeout_ms()), counted from this call, bounds the wait;
 * the command is not killed when it passes.
 *
 * @return SBX_OK, SBX_E_MISUSE (no command id yet), SBX_E_NOT_FOUND,
 *         SBX_E_TIMEOUT, SBX_E_TRANSPORT, and the
 *         request errors (see client.h)
 * @since 1.0
 */
SBX_API sbx_status sbx_command_wait_exit(sbx_command *cmd);

/**
 * Start sbx_command_wait_exit().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_command_wait_exit() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_command_wait_exit_start(sbx_command *cmd, sbx_op **op);

/**
 * Send a signal (Linux number, e.g. 15) to the command's process group.
 * Killing a finished command succeeds. Not retried once sent.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (signal outside 1..64), SBX_E_MISUSE
 *         (no command id yet), SBX_E_HTTP, SBX_E_TRANSPORT, and the
 *         request errors (see client.h)
 * @since 1.0
 */
SBX_API sbx_status sbx_command_kill(sbx_command *cmd, int signal);

/**
 * Start sbx_command_kill().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_command_kill() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_command_kill_start(sbx_command *cmd, int signal, sbx_op **op);

/**
 * Copy up to cap bytes of buffered output of one stream into buf and drop
 * them from the buffer; *n receives the count.
 *
 * @return SBX_OK (*n > 0), SBX_E_AGAIN (nothing buffered now, the command
 *         is still producing), SBX_E_NOT_FOUND (nothing buffered and the
 *         stream has ended), SBX_E_INVALID_ARG, SBX_E_MISUSE (output goes to
 *         a callback).
 * @since 1.0
 */
SBX_API sbx_status sbx_command_read_output(sbx_command *cmd, sbx_stream stream, uint8_t *buf, size_t cap,
                                           size_t *n);

/**
 * The command id given by the server, or NULL before it started.
 *
 * @since 1.0
 */
SBX_API const char *sbx_command_id(const sbx_command *cmd);

/**
 * The exit code (128 + signal for a signalled process), or -1 while it runs
 * or when it is unknown.
 *
 * @since 1.0
 */
SBX_API int sbx_command_exit_code(const sbx_command *cmd);

/**
 * When the command started (ms since the epoch), or -1.
 *
 * @since 1.0
 */
SBX_API int64_t sbx_command_started_at(const sbx_command *cmd);

/**
 * Bytes of output received so far on a stream (including bytes discarded
 * when a blocking run's buffer was full).
 *
 * @since 1.0
 */
SBX_API uint64_t sbx_command_output_bytes(const sbx_command *cmd, sbx_stream stream);

#ifdef __cplusplus
}
#endif

#endif /* SBXRUN_COMMAND_H */
