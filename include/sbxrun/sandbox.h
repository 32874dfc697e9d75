/* SPDX-License-Identifier: MIT */
/*
 * sbx_sandbox: one sandbox (a Vercel Sandbox microVM or an sbxd sandbox),
 * its lifecycle and its files; sbx_snapshot: a saved sandbox filesystem.
 * Included by <sbxrun/sbxrun.h>.
 *
 * A handle is made with sbx_sandbox_new(), configured with setters, then
 * either created (sbx_sandbox_create) or pointed at an existing sandbox
 * (sbx_sandbox_fetch). Getters read what the server last said about it.
 */
#ifndef SBXRUN_SANDBOX_H
#define SBXRUN_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include <sbxrun/client.h>
#include <sbxrun/common.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sbx_sandbox sbx_sandbox;
typedef struct sbx_snapshot sbx_snapshot;

/**
 * A sandbox handle of client c, not yet created nor attached. It keeps the
 * client's core alive until it is freed.
 *
 * @return the handle, or NULL (out of memory, called inside a callback, or c is NULL).
 * @since 1.0
 */
SBX_API sbx_sandbox *sbx_sandbox_new(sbx_client *c);

/**
 * Release the handle (the sandbox itself keeps running: stop it first if
 * that is wanted). Pending operations on it are cancelled. NULL is fine.
 *
 * @since 1.0
 */
SBX_API void sbx_sandbox_free(sbx_sandbox *s);

/**
 * What went wrong in the most recent failing call on the sandbox: "" when
 * the last call on it that can fail succeeded (each such call clears it
 * first). Getters and sbx_sandbox_last_error() itself never change it. Owned
 * by the handle, valid until the next call on it that can fail. Never NULL;
 * for a NULL handle, "invalid argument: the handle is NULL". Never contains
 * a secret.
 *
 * @since 1.0
 */
SBX_API const char *sbx_sandbox_last_error(const sbx_sandbox *s);

/**
 * The server's error code ("not_found", "sandbox_stopped", "gone",
 * "rate_limited"...: the "code" of its {"error": {...}} answer) behind the
 * most recent failing call on the sandbox, as sbx_op_error_code() gives it
 * for an operation; NULL when that failure had none (it failed before an
 * answer, or the answer had no code) and when the last call that can fail
 * succeeded. Owned by the handle, valid as long as the message of
 * sbx_sandbox_last_error(); NULL for a NULL handle.
 *
 * @since 1.0
 */
SBX_API const char *sbx_sandbox_last_error_code(const sbx_sandbox *s);

/* ---- configuration, before sbx_sandbox_create() ------------------------- */

/**
 * The runtime image: "node24" (the server's default), "node22", "node26" or
 * "python3.13".
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (already created), SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_set_runtime(sbx_sandbox *s, const char *runtime);

/**
 * The sandbox's name (2.x protocol, the client's default): unique in
 * its project, what sbx_sandbox_fetch_named() finds it by. NULL (the
 * default): the server makes one up. At most 64 bytes, no '/'.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (already created),
 *         SBX_E_NOMEM. sbx_sandbox_create() fails with SBX_E_UNSUPPORTED
 *         when a name is set and the client speaks v1.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_set_name(sbx_sandbox *s, const char *name);

/**
 * Whether the sandbox is persistent (2.x protocol): its stop saves the
 * file system, and the session sbx_sandbox_resume() starts next restores
 * it. 0 (the default here; the official SDK's default is 1): every
 * session starts from the image.
 *
 * @return SBX_OK, SBX_E_MISUSE. sbx_sandbox_create() fails with
 *         SBX_E_UNSUPPORTED for a persistent sandbox when the client speaks v1.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_set_persistent(sbx_sandbox *s, int persistent);

/**
 * The sandbox's lifetime in milliseconds; 0 for the server's default.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (negative), SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_set_timeout_ms(sbx_sandbox *s, int64_t ms);

/**
 * Virtual CPUs (memory is 2048 MB each); 0 for the server's default.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (more than 64), SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_set_vcpus(sbx_sandbox *s, size_t vcpus);

/**
 * Publish a port of the sandbox (at most 15 in the v2 protocol, 4 in v1):
 * its route is then known by sbx_sandbox_route_url(). A create in v1 with
 * more than 4 fails with SBX_E_INVALID_ARG before anything is sent.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (0, above 65535, one more than the
 *         protocol allows, or a repeated port), SBX_E_MISUSE.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_add_port(sbx_sandbox *s, uint32_t port);

/**
 * An environment variable for every command of the sandbox; value NULL
 * removes it. Values are wiped from the library's memory on free and never
 * appear in an error message; they are not redacted from output (see
 * sbx_command_set_env()).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (empty name, '=' in it, control
 *         characters), SBX_E_MISUSE, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_set_env(sbx_sandbox *s, const char *name, const char *value);

/**
 * The network policy, as the protocol's JSON object: {"mode":"allow-all"},
 * {"mode":"deny-all"} or {"mode":"custom", "allowedDomains": [...], ...};
 * or in the shape the 2.x/3.x SDKs take, {"allow": [domains] | {domain:
 * [{"transform": [{"headers": {...}}]}]}, "subnets": {"allow": [...],
 * "deny": [...]}}, which is kept as the API form it stands for.
 * NULL restores the server's default (allow-all).
 *
 * @return SBX_OK, SBX_E_PARSE (not a JSON object with a mode),
 *         SBX_E_INVALID_ARG (the SDK's shape with what cannot be
 *         represented: forwardURL and response rules, named), SBX_E_MISUSE,
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_set_network_policy_json(sbx_sandbox *s, const char *json);

/**
 * Populate the workspace from a git repository. revision (branch, tag or
 * commit) may be NULL; depth 0 means a full clone.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_set_source_git(sbx_sandbox *s, const char *url, const char *revision,
                                              size_t depth);

/**
 * Credentials for the git source (both or neither; NULL, NULL removes them).
 * Wiped from memory on free, never in an error message.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (one without the other), SBX_E_MISUSE,
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_set_source_git_auth(sbx_sandbox *s, const char *username,
                                                   const char *password);

/**
 * Populate the workspace from a tarball at url.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_set_source_tarball(sbx_sandbox *s, const char *url);

/**
 * Start from a snapshot (its filesystem and runtime).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_set_source_snapshot(sbx_sandbox *s, const char *snapshot_id);

/**
 * Set a creation option by name: "runtime", "timeout_ms", "vcpus", "port",
 * "env.NAME", "network_policy" (JSON), "source.git", "source.revision",
 * "source.depth", "source.tarball", "source.snapshot". And, at any time,
 * "auto_resume" (2.x protocol): when an operation that meets a stopped
 * session resumes the sandbox and is repeated on the new session —
 * "persistent" (the default: when the sandbox's stop kept its files),
 * "always" (as the official SDK: a sandbox that is not persistent resumes
 * with a clean file system) or "never".
 *
 * @return SBX_OK, SBX_E_UNKNOWN_OPTION, SBX_E_INVALID_ARG, SBX_E_MISUSE,
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_set_option(sbx_sandbox *s, const char *key, const char *value);

/* ---- lifecycle ------------------------------------------------------------ */

/**
 * Create the sandbox as configured and wait until the server answers. The
 * request is never sent twice once it may have reached the server (see
 * doc/client.md): a failure after that is reported, not retried. When the
 * outcome is unknown (the connection failed or the deadline passed after
 * the request may have been sent, a 5xx, an unreadable 2xx) the status is
 * SBX_E_TRANSPORT (SBX_E_CANCELLED if cancelled) and the message starts
 * with "a sandbox may exist: ": one may run that the handle does not know
 * (find it with sbx_client_list_sandboxes()).
 *
 * @return SBX_OK, SBX_E_MISUSE (already created or attached), SBX_E_AUTH,
 *         SBX_E_INVALID_ARG (more ports than the protocol allows),
 *         SBX_E_TRANSPORT, SBX_E_HTTP, SBX_E_RATE_LIMITED, SBX_E_NOT_FOUND
 *         (a snapshot source), SBX_E_TIMEOUT (before the request was sent),
 *         SBX_E_CANCELLED, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_create(sbx_sandbox *s);

/**
 * Start sbx_sandbox_create().
 *
 * @return SBX_OK (*op is the operation), SBX_E_INVALID_ARG, SBX_E_MISUSE,
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_create_start(sbx_sandbox *s, sbx_op **op);

/**
 * Point the handle at an existing sandbox and read its state.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (created or attached
 *         already, to another id), SBX_E_NOT_FOUND, SBX_E_AUTH,
 *         SBX_E_TRANSPORT, SBX_E_HTTP, SBX_E_PROTOCOL, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_fetch(sbx_sandbox *s, const char *id);

/**
 * Start sbx_sandbox_fetch().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_fetch() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_fetch_start(sbx_sandbox *s, const char *id, sbx_op **op);

/**
 * Point the handle at a named sandbox (2.x protocol) in the client's
 * project and read its current session, without starting one: the
 * session may be stopped (sbx_sandbox_resume() then starts a new one).
 * sbx_sandbox_id() is the session's id, which every other call uses.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE (bound to another
 *         sandbox), SBX_E_UNSUPPORTED (the client speaks v1),
 *         SBX_E_NOT_FOUND (no such name), SBX_E_CONFLICT (HTTP 410: a
 *         persistent sandbox whose snapshot is gone), SBX_E_AUTH,
 *         SBX_E_TRANSPORT, SBX_E_HTTP, SBX_E_PROTOCOL, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_fetch_named(sbx_sandbox *s, const char *name);

/**
 * Start sbx_sandbox_fetch_named().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_fetch_named() returns before sending anything;
 *         *op is then NULL. The operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_fetch_named_start(sbx_sandbox *s, const char *name, sbx_op **op);

/**
 * Make sure a named sandbox (2.x protocol) has a running session: its
 * current one when it runs, else a new one the server starts (from the
 * snapshot its last stop took, when persistent). The handle then points at
 * that session (sbx_sandbox_id() changes); commands and files of the old
 * one are gone with it. A persistent sandbox also resumes by itself when an
 * operation meets its stopped session (the option "auto_resume" of
 * sbx_sandbox_set_option()).
 *
 * @return SBX_OK, SBX_E_MISUSE (no sandbox, or one pending),
 *         SBX_E_UNSUPPORTED (no name: created in v1, or by id),
 *         SBX_E_NOT_FOUND (deleted), SBX_E_CONFLICT (its snapshot is gone),
 *         SBX_E_AUTH, SBX_E_TRANSPORT, SBX_E_HTTP, SBX_E_PROTOCOL, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_resume(sbx_sandbox *s);

/**
 * Start sbx_sandbox_resume().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_resume() returns before sending anything; *op is
 *         then NULL. The operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_resume_start(sbx_sandbox *s, sbx_op **op);

/**
 * Delete a named sandbox (2.x protocol): its running session stops, its
 * name is free again, and it no longer lists. The handle keeps what it
 * knew, with the status "stopped".
 *
 * @return SBX_OK, SBX_E_MISUSE (no sandbox), SBX_E_UNSUPPORTED (no name:
 *         stop it instead), SBX_E_NOT_FOUND (deleted already), SBX_E_AUTH,
 *         SBX_E_TRANSPORT, SBX_E_HTTP, SBX_E_PROTOCOL, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_delete(sbx_sandbox *s);

/**
 * Start sbx_sandbox_delete().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_delete() returns before sending anything; *op is
 *         then NULL. The operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_delete_start(sbx_sandbox *s, sbx_op **op);

/**
 * Change a named sandbox's settings (2.x protocol): those its next sessions
 * start with, and, as the official SDK does, the running session's lifetime
 * (extended by the difference when the new timeout is longer than the
 * session's) and network policy. settings_json is a JSON object with any of:
 * "persistent" (true/false: whether a stop keeps the files), "timeout_ms"
 * (> 0), "vcpus" (1 to 64), "ports" (the complete list, at most 4),
 * "network_policy" (a policy object, as sbx_sandbox_set_network_policy_json()
 * takes), "snapshot_expiration_ms" (of the snapshots its stops take: 0
 * never), "tags" (an object of at most 5 strings; {} removes them).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (a key or value not as above, named in
 *         the message), SBX_E_PARSE (not a JSON object, or a policy that
 *         does not parse), SBX_E_MISUSE (no sandbox), SBX_E_UNSUPPORTED (no
 *         name: created in v1, or fetched by id), SBX_E_NOT_FOUND (deleted),
 *         SBX_E_AUTH, SBX_E_TRANSPORT, SBX_E_HTTP, SBX_E_PROTOCOL,
 *         SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_update(sbx_sandbox *s, const char *settings_json);

/**
 * Start sbx_sandbox_update().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_update() returns before sending anything; *op is
 *         then NULL. The operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_update_start(sbx_sandbox *s, const char *settings_json, sbx_op **op);

/**
 * Read the sandbox's state again (status, timeout, policy...).
 *
 * @return as sbx_sandbox_fetch(); SBX_E_MISUSE when the handle has no sandbox.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_refresh(sbx_sandbox *s);

/**
 * Start sbx_sandbox_refresh().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_refresh() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_refresh_start(sbx_sandbox *s, sbx_op **op);

/**
 * Stop the sandbox: every process in it is killed. Stopping a stopped
 * sandbox succeeds.
 *
 * @return SBX_OK, SBX_E_MISUSE (no sandbox), SBX_E_NOT_FOUND, SBX_E_AUTH,
 *         SBX_E_TRANSPORT, SBX_E_HTTP, SBX_E_PROTOCOL, SBX_E_NOMEM.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_stop(sbx_sandbox *s);

/**
 * Start sbx_sandbox_stop().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_stop() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_stop_start(sbx_sandbox *s, sbx_op **op);

/**
 * Add ms to the sandbox's lifetime. Not retried once sent (it adds).
 *
 * @return SBX_OK, SBX_E_INVALID_ARG (ms <= 0), SBX_E_MISUSE, SBX_E_CONFLICT
 *         (stopped), SBX_E_HTTP (beyond the maximum), SBX_E_TRANSPORT, and the
 *         request errors (see client.h)
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_extend_timeout(sbx_sandbox *s, int64_t ms);

/**
 * Start sbx_sandbox_extend_timeout().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_extend_timeout() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_extend_timeout_start(sbx_sandbox *s, int64_t ms, sbx_op **op);

/**
 * Replace the network policy of the running sandbox (JSON as in
 * sbx_sandbox_set_network_policy_json()).
 *
 * @return SBX_OK, SBX_E_PARSE, SBX_E_MISUSE, SBX_E_CONFLICT, SBX_E_HTTP, and the
 *         request errors (see client.h)
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_update_network_policy(sbx_sandbox *s, const char *json);

/**
 * Start sbx_sandbox_update_network_policy().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_update_network_policy() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_update_network_policy_start(sbx_sandbox *s, const char *json,
                                                           sbx_op **op);

/* ---- what the server says ----------------------------------------------------- */

/**
 * The sandbox id, or NULL before create/fetch. Owned by the handle.
 *
 * @since 1.0
 */
SBX_API const char *sbx_sandbox_id(const sbx_sandbox *s);

/**
 * The status as the server last reported it ("pending", "running",
 * "stopping", "stopped", "failed", "aborted", "snapshotting"), or NULL.
 *
 * @since 1.0
 */
SBX_API const char *sbx_sandbox_status(const sbx_sandbox *s);

/**
 * The runtime, or NULL.
 *
 * @since 1.0
 */
SBX_API const char *sbx_sandbox_runtime(const sbx_sandbox *s);

/**
 * The named sandbox the handle's session belongs to (2.x protocol), or
 * NULL (v1, or not known yet). Owned by the handle.
 *
 * @since 1.0
 */
SBX_API const char *sbx_sandbox_name(const sbx_sandbox *s);

/**
 * Whether the named sandbox is persistent as the server last said: 1, 0,
 * or -1 when not known (v1, or no sandbox yet).
 *
 * @since 1.0
 */
SBX_API int sbx_sandbox_persistent(const sbx_sandbox *s);

/**
 * The region ("iad1"; sbxd says "local"), or NULL.
 *
 * @since 1.0
 */
SBX_API const char *sbx_sandbox_region(const sbx_sandbox *s);

/**
 * The lifetime in ms (it grows with extensions), or -1 if unknown.
 *
 * @since 1.0
 */
SBX_API int64_t sbx_sandbox_timeout_ms(const sbx_sandbox *s);

/**
 * The vCPUs applied, or 0 if unknown.
 *
 * @since 1.0
 */
SBX_API size_t sbx_sandbox_vcpus(const sbx_sandbox *s);

/**
 * The memory in MB as the server reports it, or -1 if unknown.
 *
 * @since 1.0
 */
SBX_API int64_t sbx_sandbox_memory_mb(const sbx_sandbox *s);

/**
 * When the sandbox was created, in ms since the epoch, or -1.
 *
 * @since 1.0
 */
SBX_API int64_t sbx_sandbox_created_at(const sbx_sandbox *s);

/**
 * The URL of the route to a port given at creation, or NULL. Owned by the
 * handle.
 *
 * @since 1.0
 */
SBX_API const char *sbx_sandbox_route_url(const sbx_sandbox *s, uint32_t port);

/**
 * The network policy as the server reports it (JSON; injected header values
 * are never included), or NULL. Owned by the handle.
 *
 * @since 1.0
 */
SBX_API const char *sbx_sandbox_network_policy_json(const sbx_sandbox *s);

/**
 * The whole sandbox object as the server last sent it
 * ({"sandbox": {...}, "routes": [...]}), or NULL. Owned by the handle.
 *
 * @since 1.0
 */
SBX_API const char *sbx_sandbox_json(const sbx_sandbox *s);

/* ---- files ---------------------------------------------------------------------- */

/**
 * Create one directory (relative paths resolve against the sandbox's working
 * directory, /vercel/sandbox). Not retried once sent.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE, SBX_E_CONFLICT (exists),
 *         SBX_E_NOT_FOUND (no parent), SBX_E_HTTP, SBX_E_TRANSPORT, and the
 *         request errors (see client.h)
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_mkdir(sbx_sandbox *s, const char *path);

/**
 * Start sbx_sandbox_mkdir().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_mkdir() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_mkdir_start(sbx_sandbox *s, const char *path, sbx_op **op);

/**
 * Write bytes to a file in the sandbox (parents are created, an existing
 * file is replaced). mode is the permission bits, e.g. 0644.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE, SBX_E_BUDGET_EXCEEDED
 *         (too large for the server), SBX_E_HTTP, SBX_E_TRANSPORT, and the
 *         request errors (see client.h)
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_write_file(sbx_sandbox *s, const char *path, const uint8_t *data,
                                          size_t len, uint32_t mode);

/**
 * Start sbx_sandbox_write_file(). data is copied.
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_write_file() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_write_file_start(sbx_sandbox *s, const char *path, const uint8_t *data,
                                                size_t len, uint32_t mode, sbx_op **op);

/**
 * Copy a local file, or a directory and everything under it, into the
 * sandbox at path. Streamed from disk as a gzip tar: a file is never read
 * into memory whole. Symbolic links are copied as the files they name only
 * when those are regular files inside local; other links, sockets, fifos
 * and devices are skipped, and empty directories are not created. local
 * itself may be a fifo, a character device or a file that says 0 bytes
 * (/proc, /sys): read to its end by the call, up to 64 MiB.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_IO (cannot read local),
 *         SBX_E_BUDGET_EXCEEDED (a local of unknown size past 64 MiB),
 *         SBX_E_MISUSE, SBX_E_HTTP, SBX_E_TRANSPORT, and the
 *         request errors (see client.h)
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_upload(sbx_sandbox *s, const char *local, const char *path);

/**
 * Start sbx_sandbox_upload().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_upload() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_upload_start(sbx_sandbox *s, const char *local, const char *path,
                                            sbx_op **op);

/**
 * Read a file of the sandbox into memory (at most max bytes; 0 means 64 MiB),
 * freed with sbx_free(); *data is NUL-terminated for convenience.
 *
 * @return SBX_OK, SBX_E_NOT_FOUND (no such file, or not a regular file),
 *         SBX_E_BUDGET_EXCEEDED (larger than max), SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_HTTP, SBX_E_TRANSPORT, SBX_E_PROTOCOL (in
 *         the v2 protocol, a success answer that is not
 *         application/octet-stream: none of it is taken as the file), and
 *         the request errors (see client.h)
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_read_file(sbx_sandbox *s, const char *path, size_t max,
                                         uint8_t **data, size_t *len);

/**
 * Start sbx_sandbox_read_file(). Once the operation has succeeded, the
 * file's bytes are its sbx_op_result_data() (NUL-terminated, owned by the
 * op: copy them to keep them past sbx_op_free()); a file larger than max
 * fails it with SBX_E_BUDGET_EXCEEDED.
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_read_file() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_read_file_start(sbx_sandbox *s, const char *path, size_t max, sbx_op **op);

/**
 * Receives a file's bytes as they arrive; return non-zero to stop (the read
 * then fails with SBX_E_CANCELLED). data is valid only during the call.
 * @since 1.0
 */
typedef int (*sbx_data_cb)(const uint8_t *data, size_t len, void *user);

/**
 * Stream a file of the sandbox to cb, in pieces, without holding it whole.
 *
 * @return as sbx_sandbox_read_file(); SBX_E_CANCELLED when cb stopped it.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_read_stream(sbx_sandbox *s, const char *path, sbx_data_cb cb,
                                           void *user);

/**
 * Start sbx_sandbox_read_stream(); cb runs from sbx_client_process().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_read_stream() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_read_stream_start(sbx_sandbox *s, const char *path, sbx_data_cb cb,
                                                 void *user, sbx_op **op);

/**
 * Copy a file of the sandbox to a local file, streamed: written to a
 * temporary file beside local and renamed into place once complete, so a
 * failed download leaves nothing behind.
 *
 * @return as sbx_sandbox_read_file(), and SBX_E_IO for the local file.
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_download(sbx_sandbox *s, const char *path, const char *local);

/**
 * Start sbx_sandbox_download().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_download() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_download_start(sbx_sandbox *s, const char *path, const char *local,
                                              sbx_op **op);

/* ---- snapshots ------------------------------------------------------------------ */

/**
 * A snapshot handle of client c.
 *
 * @return the handle, or NULL (out of memory, called inside a callback, or c is NULL).
 * @since 1.0
 */
SBX_API sbx_snapshot *sbx_snapshot_new(sbx_client *c);

/**
 * Release the handle (the snapshot itself stays). NULL is fine.
 *
 * @since 1.0
 */
SBX_API void sbx_snapshot_free(sbx_snapshot *sn);

/**
 * What went wrong in the most recent failing call on the snapshot: "" when
 * the last call on it that can fail succeeded (each such call clears it
 * first). Getters and sbx_snapshot_last_error() itself never change it.
 * Owned by the handle, valid until the next call on it that can fail. Never
 * NULL; for a NULL handle, "invalid argument: the handle is NULL". Never
 * contains a secret.
 *
 * @since 1.0
 */
SBX_API const char *sbx_snapshot_last_error(const sbx_snapshot *sn);

/**
 * The server's error code ("not_found", "sandbox_stopped", "gone",
 * "rate_limited"...: the "code" of its {"error": {...}} answer) behind the
 * most recent failing call on the snapshot, as sbx_op_error_code() gives it
 * for an operation; NULL when that failure had none (it failed before an
 * answer, or the answer had no code) and when the last call that can fail
 * succeeded. Owned by the handle, valid as long as the message of
 * sbx_snapshot_last_error(); NULL for a NULL handle.
 *
 * @since 1.0
 */
SBX_API const char *sbx_snapshot_last_error_code(const sbx_snapshot *sn);

/**
 * Snapshot the sandbox's filesystem into sn. This stops the sandbox.
 * expiration_ms is the snapshot's lifetime (0: it never expires; -1: the
 * server's default). Not retried once sent.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_MISUSE, SBX_E_CONFLICT (not
 *         running), SBX_E_HTTP, SBX_E_TRANSPORT, and the
 *         request errors (see client.h)
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_snapshot(sbx_sandbox *s, int64_t expiration_ms, sbx_snapshot *sn);

/**
 * Start sbx_sandbox_snapshot().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_sandbox_snapshot() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_sandbox_snapshot_start(sbx_sandbox *s, int64_t expiration_ms,
                                              sbx_snapshot *sn, sbx_op **op);

/**
 * Read an existing snapshot into sn.
 *
 * @return SBX_OK, SBX_E_INVALID_ARG, SBX_E_NOT_FOUND, SBX_E_HTTP, and the
 *         request errors (see client.h)
 * @since 1.0
 */
SBX_API sbx_status sbx_snapshot_fetch(sbx_snapshot *sn, const char *id);

/**
 * Start sbx_snapshot_fetch().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_snapshot_fetch() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_snapshot_fetch_start(sbx_snapshot *sn, const char *id, sbx_op **op);

/**
 * Delete the snapshot; its status becomes "deleted".
 *
 * @return SBX_OK, SBX_E_MISUSE (no snapshot), SBX_E_NOT_FOUND, SBX_E_HTTP, and the
 *         request errors (see client.h)
 * @since 1.0
 */
SBX_API sbx_status sbx_snapshot_delete(sbx_snapshot *sn);

/**
 * Start sbx_snapshot_delete().
 *
 * @return SBX_OK (*op is the new operation, freed with sbx_op_free()), or
 *         what sbx_snapshot_delete() returns before sending anything (SBX_E_INVALID_ARG,
 *         SBX_E_MISUSE, SBX_E_AUTH, SBX_E_NOMEM); *op is then NULL. The
 *         operation's own outcome is its sbx_op_status().
 * @since 1.0
 */
SBX_API sbx_status sbx_snapshot_delete_start(sbx_snapshot *sn, sbx_op **op);

/**
 * The snapshot id, or NULL.
 *
 * @since 1.0
 */
SBX_API const char *sbx_snapshot_id(const sbx_snapshot *sn);

/**
 * The status ("created", "deleted", "failed"), or NULL.
 *
 * @since 1.0
 */
SBX_API const char *sbx_snapshot_status(const sbx_snapshot *sn);

/**
 * The id of the sandbox it was taken from, or NULL.
 *
 * @since 1.0
 */
SBX_API const char *sbx_snapshot_source_sandbox_id(const sbx_snapshot *sn);

/**
 * Its size in bytes, or -1 if unknown.
 *
 * @since 1.0
 */
SBX_API int64_t sbx_snapshot_size_bytes(const sbx_snapshot *sn);

/**
 * When it expires (ms since the epoch), 0 for never, -1 if unknown.
 *
 * @since 1.0
 */
SBX_API int64_t sbx_snapshot_expires_at(const sbx_snapshot *sn);

/**
 * The whole snapshot object as the server last sent it, or NULL.
 *
 * @since 1.0
 */
SBX_API const char *sbx_snapshot_json(const sbx_snapshot *sn);

#ifdef __cplusplus
}
#endif

#endif /* SBXRUN_SANDBOX_H */
