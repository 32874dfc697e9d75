// SPDX-License-Identifier: MIT
//
// libsbxrun for Node.js, through koffi. The threading model is the library's
// "single fd" one: a libuv worker blocks in sbx_client_wait() (koffi's
// .async call), and when it returns the JavaScript thread alone calls
// sbx_client_process(), which finishes operations; so the event loop never
// blocks, and every library call but the wait runs on the JavaScript thread.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Readable } = require('node:stream');
const koffi = require('koffi');

const SONAME = 'libsbxrun.so.1';
// This package's version: the library's it was made with. The library loaded
// must have its major version (its ABI: doc/abi.md) and be at least as new,
// since the package may call what that version added.
const PACKAGE_VERSION = require('./package.json').version;
const ABI_MAJOR = Number(PACKAGE_VERSION.split('.')[0]);

function candidates() {
  if (process.env.SBXRUN_LIBRARY) return [process.env.SBXRUN_LIBRARY];
  const out = [];
  for (const b of ['build', 'build-release']) {
    const p = path.join(__dirname, '..', '..', b, 'lib', SONAME);
    if (fs.existsSync(p)) out.push(p);
  }
  out.push(SONAME);
  return out;
}

function load() {
  const errors = [];
  for (const p of candidates()) {
    try {
      return { lib: koffi.load(p), where: p.includes(path.sep) ? fs.realpathSync(p) : p };
    } catch (e) {
      errors.push(`${p}: ${e.message}`);
    }
  }
  throw new Error(`sbxrun: cannot load libsbxrun: ${errors.join('; ')} (install it, or set SBXRUN_LIBRARY)`);
}

/** "1.2.3" as sbx_version_num() gives it: 0xMMmmpp. */
const versionNum = (v) => v.split('.').map(Number).reduce((n, x) => (n << 8) | x, 0);

/** Refuse a library this package cannot use, before anything else is bound:
 * an old or foreign one would otherwise fail on the first function it lacks,
 * with a message that names neither version. */
function checkVersion(lib, where) {
  const wanted = `libsbxrun ${ABI_MAJOR}.x, ${PACKAGE_VERSION} or newer`;
  let versionNumFn;
  try {
    versionNumFn = lib.func('uint32_t sbx_version_num(void)');
  } catch (e) {
    throw new Error(`sbxrun ${PACKAGE_VERSION}: ${where} is not libsbxrun (it has no sbx_version_num); ` +
                    `this package needs ${wanted}`);
  }
  const n = versionNumFn();
  if (n >>> 16 !== ABI_MAJOR || n < versionNum(PACKAGE_VERSION))
    throw new Error(`sbxrun ${PACKAGE_VERSION} needs ${wanted}; ${where} is libsbxrun ` +
                    `${n >>> 16}.${(n >>> 8) & 0xff}.${n & 0xff} (install a matching library, or set SBXRUN_LIBRARY to one)`);
}

const { lib, where: libraryPath } = load();
checkVersion(lib, libraryPath);
for (const t of ['sbx_client', 'sbx_op', 'sbx_sandbox', 'sbx_command', 'sbx_run', 'sbx_job', 'sbx_transcript',
                 'sbx_policy', 'sbx_redactor', 'sbx_redact_stream', 'sbx_netpolicy', 'sbx_snapshot', 'sbx_patch'])
  koffi.opaque(t);
// The library's callbacks, called on the JavaScript thread (it alone runs
// sbx_client_process); registered for the life of one operation.
const OutputCb = koffi.proto('int sbx_output_cb(int stream, const void *data, size_t len, void *user)');
const DataCb = koffi.proto('int sbx_data_cb(const void *data, size_t len, void *user)');
const RunProgressCb = koffi.proto('void sbx_run_progress_cb(sbx_run *run, int event, size_t index, void *user)');

const C = {};
for (const proto of [
  'const char *sbx_version(void)',
  'uint32_t sbx_version_num(void)',
  'const char *sbx_status_name(int code)',
  'const char *sbx_strerror(int code)',
  'void sbx_free(void *p)',
  'sbx_client *sbx_client_new(void)',
  'void sbx_client_free(sbx_client *c)',
  'const char *sbx_client_last_error(sbx_client *c)',
  'int sbx_client_set_endpoint(sbx_client *c, const char *e)',
  'int sbx_client_set_credentials(sbx_client *c, const char *token, const char *team, const char *project)',
  'int sbx_client_set_option(sbx_client *c, const char *k, const char *v)',
  'int sbx_client_process(sbx_client *c, _Out_ size_t *running)',
  'int sbx_client_wait(sbx_client *c, int64_t ms)',
  'int sbx_client_wakeup(sbx_client *c)',
  'int sbx_client_list_sandboxes_from_start(sbx_client *c, const char *p, size_t limit, const char *cursor, _Out_ sbx_op **op)',
  'int sbx_client_list_snapshots_from_start(sbx_client *c, const char *p, size_t limit, const char *cursor, _Out_ sbx_op **op)',
  'int sbx_client_list_sessions_from_start(sbx_client *c, const char *p, const char *name, size_t limit, const char *cursor, _Out_ sbx_op **op)',
  'const char *sbx_op_result_json(sbx_op *op)',
  'int sbx_op_done(sbx_op *op)',
  'int sbx_op_status(sbx_op *op)',
  'const char *sbx_op_last_error(sbx_op *op)',
  'const char *sbx_op_error_code(sbx_op *op)',
  'int sbx_op_http_status(sbx_op *op)',
  'int sbx_op_get_progress(sbx_op *op, _Out_ uint64_t *sent, _Out_ int64_t *sendTotal, _Out_ uint64_t *received, _Out_ int64_t *receiveTotal)',
  'int sbx_op_cancel(sbx_op *op)',
  'void sbx_op_free(sbx_op *op)',
  'sbx_sandbox *sbx_sandbox_new(sbx_client *c)',
  'void sbx_sandbox_free(sbx_sandbox *s)',
  'const char *sbx_sandbox_last_error(sbx_sandbox *s)',
  'int sbx_sandbox_set_option(sbx_sandbox *s, const char *k, const char *v)',
  'int sbx_sandbox_set_name(sbx_sandbox *s, const char *name)',
  'int sbx_sandbox_set_persistent(sbx_sandbox *s, int p)',
  'int sbx_sandbox_set_env(sbx_sandbox *s, const char *k, const char *v)',
  'int sbx_sandbox_set_network_policy_json(sbx_sandbox *s, const char *json)',
  'int sbx_sandbox_create_start(sbx_sandbox *s, _Out_ sbx_op **op)',
  'int sbx_sandbox_fetch_start(sbx_sandbox *s, const char *id, _Out_ sbx_op **op)',
  'int sbx_sandbox_fetch_named_start(sbx_sandbox *s, const char *name, _Out_ sbx_op **op)',
  'int sbx_sandbox_resume_start(sbx_sandbox *s, _Out_ sbx_op **op)',
  'int sbx_sandbox_stop_start(sbx_sandbox *s, _Out_ sbx_op **op)',
  'int sbx_sandbox_delete_start(sbx_sandbox *s, _Out_ sbx_op **op)',
  'int sbx_sandbox_update_start(sbx_sandbox *s, const char *json, _Out_ sbx_op **op)',
  'int sbx_sandbox_mkdir_start(sbx_sandbox *s, const char *path, _Out_ sbx_op **op)',
  'int sbx_sandbox_write_file_start(sbx_sandbox *s, const char *path, const uint8_t *data, size_t len, uint32_t mode, _Out_ sbx_op **op)',
  'int sbx_sandbox_upload_start(sbx_sandbox *s, const char *local, const char *path, _Out_ sbx_op **op)',
  'int sbx_sandbox_download_start(sbx_sandbox *s, const char *path, const char *local, _Out_ sbx_op **op)',
  'const char *sbx_sandbox_id(sbx_sandbox *s)',
  'const char *sbx_sandbox_status(sbx_sandbox *s)',
  'const char *sbx_sandbox_name(sbx_sandbox *s)',
  'int sbx_sandbox_persistent(sbx_sandbox *s)',
  'const char *sbx_sandbox_json(sbx_sandbox *s)',
  'const char *sbx_sandbox_runtime(sbx_sandbox *s)',
  'int64_t sbx_sandbox_timeout_ms(sbx_sandbox *s)',
  'int sbx_sandbox_refresh_start(sbx_sandbox *s, _Out_ sbx_op **op)',
  'int sbx_sandbox_extend_timeout_start(sbx_sandbox *s, int64_t ms, _Out_ sbx_op **op)',
  'int sbx_sandbox_read_stream_start(sbx_sandbox *s, const char *path, sbx_data_cb *cb, void *user, _Out_ sbx_op **op)',
  'int sbx_sandbox_snapshot_start(sbx_sandbox *s, int64_t expiration_ms, sbx_snapshot *sn, _Out_ sbx_op **op)',
  'sbx_snapshot *sbx_snapshot_new(sbx_client *c)',
  'void sbx_snapshot_free(sbx_snapshot *sn)',
  'const char *sbx_snapshot_last_error(sbx_snapshot *sn)',
  'int sbx_snapshot_fetch_start(sbx_snapshot *sn, const char *id, _Out_ sbx_op **op)',
  'int sbx_snapshot_delete_start(sbx_snapshot *sn, _Out_ sbx_op **op)',
  'const char *sbx_snapshot_id(sbx_snapshot *sn)',
  'const char *sbx_snapshot_status(sbx_snapshot *sn)',
  'const char *sbx_snapshot_source_sandbox_id(sbx_snapshot *sn)',
  'int64_t sbx_snapshot_size_bytes(sbx_snapshot *sn)',
  'int64_t sbx_snapshot_expires_at(sbx_snapshot *sn)',
  'const char *sbx_snapshot_json(sbx_snapshot *sn)',
  'sbx_command *sbx_command_new(sbx_sandbox *s)',
  'void sbx_command_free(sbx_command *c)',
  'const char *sbx_command_last_error(sbx_command *c)',
  'int sbx_command_set_argv(sbx_command *c, size_t argc, const char **argv)',
  'int sbx_command_set_cwd(sbx_command *c, const char *cwd)',
  'int sbx_command_set_env(sbx_command *c, const char *k, const char *v)',
  'int sbx_command_set_sudo(sbx_command *c, int sudo)',
  'int sbx_command_set_timeout_ms(sbx_command *c, int64_t ms)',
  'int sbx_command_run_start(sbx_command *c, _Out_ sbx_op **op)',
  'int sbx_command_set_detached(sbx_command *c, int detached)',
  'int sbx_command_attach_start(sbx_command *c, const char *id, _Out_ sbx_op **op)',
  'int sbx_command_fetch_start(sbx_command *c, const char *id, _Out_ sbx_op **op)',
  'int sbx_command_wait_exit_start(sbx_command *c, _Out_ sbx_op **op)',
  'int sbx_command_kill_start(sbx_command *c, int signal, _Out_ sbx_op **op)',
  'int sbx_command_read_output(sbx_command *c, int stream, uint8_t *buf, size_t cap, _Out_ size_t *n)',
  'const char *sbx_command_id(sbx_command *c)',
  'int sbx_command_exit_code(sbx_command *c)',
  'sbx_run *sbx_run_new(sbx_client *c)',
  'void sbx_run_free(sbx_run *r)',
  'const char *sbx_run_last_error(sbx_run *r)',
  'int sbx_run_add_job(sbx_run *r, const char *type, _Out_ sbx_job **out)',
  'int sbx_run_set_sandbox(sbx_run *r, sbx_sandbox *s)',
  'int sbx_run_add_upload(sbx_run *r, const char *local, const char *path)',
  'int sbx_run_set_budget(sbx_run *r, int64_t wall_ms, uint64_t bytes, size_t jobs)',
  'int sbx_run_set_transcript(sbx_run *r, sbx_transcript *t)',
  'int sbx_run_set_option(sbx_run *r, const char *k, const char *v)',
  'int sbx_run_execute_start(sbx_run *r, _Out_ sbx_op **op)',
  'int sbx_run_set_progress_cb(sbx_run *r, sbx_run_progress_cb *cb, void *user)',
  'int sbx_run_verdict(sbx_run *r)',
  'size_t sbx_run_job_count(sbx_run *r)',
  'sbx_job *sbx_run_job(sbx_run *r, size_t i)',
  'int sbx_run_result_to_json(sbx_run *r, _Out_ void **json)',
  'sbx_job *sbx_job_new(sbx_client *c)',
  'void sbx_job_free(sbx_job *j)',
  'const char *sbx_job_last_error(sbx_job *j)',
  'int sbx_job_set_type(sbx_job *j, const char *type)',
  'int sbx_job_load_json(sbx_job *j, const char *json)',
  'int sbx_job_set_policy(sbx_job *j, sbx_policy *p)',
  'int sbx_job_set_transcript(sbx_job *j, sbx_transcript *t)',
  'int sbx_job_set_output_cb(sbx_job *j, sbx_output_cb *cb, void *user)',
  'int sbx_job_run_start(sbx_job *j, sbx_sandbox *s, _Out_ sbx_op **op)',
  'int sbx_job_add_artifact(sbx_job *j, const char *path)',
  'int sbx_job_set_option(sbx_job *j, const char *k, const char *v)',
  'int sbx_job_retryable(sbx_job *j)',
  'int sbx_job_set_input(sbx_job *j, const char *k, const char *v)',
  'int sbx_job_set_argv(sbx_job *j, size_t argc, const char **argv)',
  'int sbx_job_set_timeout_ms(sbx_job *j, int64_t ms)',
  'int sbx_job_set_env(sbx_job *j, const char *k, const char *v)',
  'int sbx_job_add_secret(sbx_job *j, const uint8_t *v, size_t len)',
  'int sbx_job_verdict(sbx_job *j)',
  'const char *sbx_job_verdict_name(int v)',
  'int sbx_job_exit_code(sbx_job *j)',
  'int sbx_job_result_to_json(sbx_job *j, _Out_ void **json)',
  'sbx_transcript *sbx_transcript_new(void)',
  'void sbx_transcript_free(sbx_transcript *t)',
  'const char *sbx_transcript_last_error(sbx_transcript *t)',
  'int sbx_transcript_set_file(sbx_transcript *t, const char *path)',
  'int sbx_transcript_load_file(sbx_transcript *t, const char *path)',
  'int sbx_transcript_verify(sbx_transcript *t, _Out_ size_t *broken)',
  'size_t sbx_transcript_step_count(sbx_transcript *t)',
  'int sbx_transcript_complete(sbx_transcript *t)',
  'const char *sbx_transcript_head_hash(sbx_transcript *t)',
  'int sbx_transcript_finish(sbx_transcript *t, int verdict)',
  'int sbx_transcript_job_to_json(sbx_transcript *t, _Out_ void **json)',
  'int sbx_transcript_step_to_json(sbx_transcript *t, size_t n, _Out_ void **json)',
  'int sbx_transcript_save_file(sbx_transcript *t, const char *path)',
  'int sbx_client_set_policy(sbx_client *c, sbx_policy *p, const char *job_type)',
  'int sbx_client_set_redactor(sbx_client *c, sbx_redactor *r)',
  'sbx_policy *sbx_policy_new(void)',
  'void sbx_policy_free(sbx_policy *p)',
  'const char *sbx_policy_last_error(sbx_policy *p)',
  'int sbx_policy_allow_program(sbx_policy *p, const char *job_type, const char *program)',
  'int sbx_policy_deny_program(sbx_policy *p, const char *job_type, const char *program)',
  'int sbx_policy_allow_package(sbx_policy *p, const char *job_type, const char *spec)',
  'int sbx_policy_load_json(sbx_policy *p, const char *json)',
  'int sbx_policy_check(sbx_policy *p, const char *job_type, size_t argc, const char **argv, const char *cwd, _Out_ int *reason, _Out_ uint8_t *msg, size_t cap)',
  'const char *sbx_policy_reason_name(int reason)',
  'sbx_redactor *sbx_redactor_new(void)',
  'void sbx_redactor_free(sbx_redactor *r)',
  'const char *sbx_redactor_last_error(sbx_redactor *r)',
  'int sbx_redactor_add_secret(sbx_redactor *r, const uint8_t *v, size_t len)',
  'int sbx_redactor_set_shapes(sbx_redactor *r, int on)',
  'int sbx_redactor_redact(sbx_redactor *r, const uint8_t *data, size_t len, _Out_ void **out, _Out_ size_t *out_len)',
  'sbx_netpolicy *sbx_netpolicy_new(void)',
  'void sbx_netpolicy_free(sbx_netpolicy *n)',
  'const char *sbx_netpolicy_last_error(sbx_netpolicy *n)',
  'int sbx_netpolicy_set_mode(sbx_netpolicy *n, int mode)',
  'int sbx_netpolicy_mode(sbx_netpolicy *n)',
  'int sbx_netpolicy_allow_domain(sbx_netpolicy *n, const char *d)',
  'int sbx_netpolicy_allow_cidr(sbx_netpolicy *n, const char *c)',
  'int sbx_netpolicy_deny_cidr(sbx_netpolicy *n, const char *c)',
  'int sbx_netpolicy_inject_header(sbx_netpolicy *n, const char *d, const char *name, const char *value)',
  'int sbx_netpolicy_load_preset(sbx_netpolicy *n, const char *job_type, size_t n_in, const char **keys, const char **values)',
  'int sbx_netpolicy_load_json(sbx_netpolicy *n, const char *json)',
  'int sbx_netpolicy_to_json(sbx_netpolicy *n, _Out_ void **json)',
  'sbx_patch *sbx_patch_new(void)',
  'void sbx_patch_free(sbx_patch *p)',
  'const char *sbx_patch_last_error(sbx_patch *p)',
  'int sbx_patch_set_limits(sbx_patch *p, size_t max_bytes, size_t max_files, size_t max_file_bytes)',
  'int sbx_patch_set_threads(sbx_patch *p, size_t threads)',
  'int sbx_patch_set_base(sbx_patch *p, const char *repo_dir, const char *rev)',
  'int sbx_patch_set_base_patch(sbx_patch *p, const sbx_patch *prev)',
  'int sbx_patch_load_data(sbx_patch *p, const uint8_t *data, size_t len)',
  'int sbx_patch_load_file(sbx_patch *p, const char *path)',
  'int sbx_patch_add_file(sbx_patch *p, int change, const char *path, const uint8_t *data, size_t len, uint32_t mode)',
  'int sbx_patch_check(sbx_patch *p)',
  'int sbx_patch_get_verdict(sbx_patch *p)',
  'int sbx_patch_broken_rule(sbx_patch *p)',
  'const char *sbx_patch_verdict_name(int verdict)',
  'const char *sbx_patch_rule_name(int rule)',
  'size_t sbx_patch_file_count(sbx_patch *p)',
  'const char *sbx_patch_file_path(sbx_patch *p, size_t i)',
  'const char *sbx_patch_file_old_path(sbx_patch *p, size_t i)',
  'int sbx_patch_file_change(sbx_patch *p, size_t i)',
  'uint32_t sbx_patch_file_old_mode(sbx_patch *p, size_t i)',
  'uint32_t sbx_patch_file_new_mode(sbx_patch *p, size_t i)',
  'size_t sbx_patch_file_additions(sbx_patch *p, size_t i)',
  'size_t sbx_patch_file_deletions(sbx_patch *p, size_t i)',
  'int sbx_patch_file_binary(sbx_patch *p, size_t i)',
  'const char *sbx_patch_id(sbx_patch *p)',
  'int sbx_patch_save_data(sbx_patch *p, _Out_ void **out, _Out_ size_t *len)',
  'int sbx_patch_to_json(sbx_patch *p, _Out_ void **json)',
  'int sbx_patch_save_tree_file(sbx_patch *p, const char *path)',
  'int sbx_patch_save_tree_dir(sbx_patch *p, const char *dir)',
]) {
  const f = lib.func(proto);
  C[f.info.name] = f;
}

const OK = 0;
const E_MISUSE = 2;
const E_NOT_FOUND = 5;
const E_PARSE = 7;
const E_BUDGET_EXCEEDED = 14;
const E_PATCH = 20;
const E_AGAIN = 22;
const STDOUT = 1;
const STDERR = 2;

// ---- errors ------------------------------------------------------------------

/** A libsbxrun call failed: `status` (the code), `code` ("SBX_E_NOT_FOUND"),
 * the library's message; `httpStatus` and `errorCode` for a server's answer. */
class SbxError extends Error {
  constructor(status, message, errorCode = null, httpStatus = 0) {
    const code = C.sbx_status_name(status) || `SBX_E_${status}`;
    super(`${message || C.sbx_strerror(status)} (${code})`);
    this.name = this.constructor.name;
    this.status = status;
    this.code = code;
    this.errorCode = errorCode;
    this.httpStatus = httpStatus;
  }
}

/** SBX_E_NOT_FOUND -> NotFoundError, one class per status the library names. */
function className(statusName) {
  return statusName.replace(/^SBX_E_/, '').toLowerCase().split('_')
    .map((w) => w[0].toUpperCase() + w.slice(1)).join('') + 'Error';
}

const errorClasses = {};
for (let code = 1; code < 128; code++) {
  const name = C.sbx_status_name(code);
  if (!name) continue;
  const cls = { [className(name)]: class extends SbxError {} }[className(name)];
  errorClasses[cls.name] = cls;
}

function errorFor(status, message, errorCode, httpStatus) {
  const name = C.sbx_status_name(status);
  const Cls = (name && errorClasses[className(name)]) || SbxError;
  return new Cls(status, message, errorCode, httpStatus);
}

function check(status, lastError) {
  if (status !== OK) throw errorFor(status, lastError);
}

function takeJson(ptr) {
  try {
    return JSON.parse(koffi.decode(ptr, 'char', -1));
  } finally {
    C.sbx_free(ptr);
  }
}

// ---- the driver --------------------------------------------------------------

/** Drives one client: one sbx_client_wait() at a time on a libuv worker, and
 * sbx_client_process() on the JavaScript thread when it returns. */
class Driver {
  constructor(client) {
    this.client = client;
    this.ops = new Map();   // op -> {resolve} (or null: abandoned, freed when done)
    this.pollers = new Set();
    this.waiting = false;
    this.onIdle = null;     // the client waits for this to free itself
  }

  track(op) {
    return new Promise((resolve) => {
      this.ops.set(op, resolve);
      this.kick();
    });
  }

  abandon(op) {
    C.sbx_op_cancel(op);
    this.ops.set(op, null);
    this.kick();
  }

  kick() {
    if (this.waiting) C.sbx_client_wakeup(this.client.h);
    else setImmediate(() => this.round());
  }

  round() {
    if (this.waiting || !this.client.h) return;
    C.sbx_client_process(this.client.h, [0]);
    for (const [op, resolve] of this.ops) {
      if (!C.sbx_op_done(op)) continue;
      this.ops.delete(op);
      if (resolve) resolve();
      else C.sbx_op_free(op);
    }
    for (const p of this.pollers) p();
    if (this.ops.size === 0 && this.pollers.size === 0) {
      if (this.onIdle) this.onIdle();
      return;
    }
    this.waiting = true;
    C.sbx_client_wait.async(this.client.h, 1000, () => {
      this.waiting = false;
      if (this.client.closing && this.ops.size === 0) {
        if (this.onIdle) this.onIdle();
        return;
      }
      this.round();
    });
  }
}

/** Await an operation, free it, throw for its failure; resolves to its JSON
 * result (parsed) where it has one, else null. atEnd(op), if given, runs
 * once it has ended, before it is freed. */
async function awaitOp(client, op, atEnd = null) {
  await client.driver.track(op);
  if (atEnd) atEnd(op);
  const st = C.sbx_op_status(op);
  let err = null;
  let result = null;
  if (st !== OK)
    err = errorFor(st, C.sbx_op_last_error(op), C.sbx_op_error_code(op), C.sbx_op_http_status(op));
  else
    result = C.sbx_op_result_json(op);
  C.sbx_op_free(op);
  if (err) throw err;
  return result == null ? null : JSON.parse(result);
}

/** Run fn with a registered C callback for the duration of the promise it returns. */
async function withCallback(js, type, fn) {
  const cb = koffi.register(js, koffi.pointer(type));
  try {
    return await fn(cb);
  } finally {
    koffi.unregister(cb);
  }
}

/** A copy of len bytes at a C pointer (the library reuses its buffer). */
const copyOut = (data, len) => Buffer.from(new Uint8Array(koffi.view(data, Number(len))));

// ---- handles -------------------------------------------------------------------

let live = 0; // handles made and not yet freed (liveHandles())

class Handle {
  constructor(h, free, lastError) {
    if (!h) throw new Error('libsbxrun: out of memory');
    this.h = h;
    this._free = free;
    this._lastError = lastError;
    live++;
    registry.register(this, { h, free }, this);
  }

  get handle() {
    if (!this.h) throw new Error(`${this.constructor.name} is closed`);
    return this.h;
  }

  check(status) {
    check(status, this._lastError(this.handle));
  }

  close() {
    const h = this.h;
    this.h = null;
    if (h) {
      registry.unregister(this);
      this._free(h);
      live--;
    }
  }
}

// A handle the program dropped without close() is freed when collected.
const registry = new FinalizationRegistry(({ h, free }) => {
  free(h);
  live--;
});
if (Symbol.dispose) Handle.prototype[Symbol.dispose] = function () { this.close(); };
if (Symbol.asyncDispose) Handle.prototype[Symbol.asyncDispose] = async function () { this.close(); };

/** A connection to sbxd or Vercel Sandbox. The output of its commands is
 * redacted before any stream sees it: redact true (the default) with a
 * default Redactor (the built-in credential shapes), a Redactor of the
 * caller's (its rules copied), or false for the output as the program wrote
 * it; setRedactor() changes it later. */
class Client extends Handle {
  constructor({ endpoint, token, team, project, options, redact = true } = {}) {
    if (typeof redact !== 'boolean' && !(redact instanceof Redactor))
      throw new TypeError('redact: true, false or a Redactor');
    super(C.sbx_client_new(), C.sbx_client_free, C.sbx_client_last_error);
    this.driver = new Driver(this);
    try {
      if (redact === true) this._setDefaultRedactor();
      else if (redact !== false) this.setRedactor(redact);
      if (endpoint != null) this.check(C.sbx_client_set_endpoint(this.handle, endpoint));
      if (token != null) this.check(C.sbx_client_set_credentials(this.handle, token, team ?? null, project ?? null));
      for (const [k, v] of Object.entries(options || {})) this.setOption(k, v);
    } catch (e) {
      this.close();
      throw e;
    }
  }

  setOption(key, value) {
    this.check(C.sbx_client_set_option(this.handle, key, String(value)));
  }

  /** Check every plain command against a Policy (copied; null removes it). */
  setPolicy(policy, jobType = null) {
    this.check(C.sbx_client_set_policy(this.handle, policy ? policy.handle : null, jobType));
  }

  /** Redact the output of commands started from now on with a Redactor (its
   * rules copied) in place of the client's; null stops redacting. */
  setRedactor(redactor) {
    this.check(C.sbx_client_set_redactor(this.handle, redactor ? redactor.handle : null));
  }

  /** The redactor a client has unless told otherwise: the built-in
   * credential shapes, no values (new Redactor()). */
  _setDefaultRedactor() {
    const r = C.sbx_redactor_new();
    if (!r) throw new Error('libsbxrun: out of memory');
    try {
      this.check(C.sbx_client_set_redactor(this.handle, r));
    } finally {
      C.sbx_redactor_free(r); // the client took a copy of its rules
    }
  }

  /** Start an operation with start(handle, ...args, out) and await it. */
  async _op(handle, start, lastError, ...args) {
    const out = [null];
    check(start(handle, ...args, out), lastError(handle));
    return awaitOp(this, out[0]);
  }

  sandbox(config = {}) {
    return new Sandbox(this, config);
  }

  async createSandbox(config = {}) {
    const s = new Sandbox(this, config);
    try {
      await s.create();
    } catch (e) {
      s.close();
      throw e;
    }
    return s;
  }

  /** One page of the project's sandboxes as the server sent it
   * ({sandboxes, pagination}); pass pagination.next as cursor for the next. */
  listSandboxes({ project = null, limit = 0, cursor = null } = {}) {
    return this._op(this.handle, C.sbx_client_list_sandboxes_from_start, C.sbx_client_last_error, project, limit, cursor);
  }

  /** One page of the project's snapshots ({snapshots, pagination}). */
  listSnapshots({ project = null, limit = 0, cursor = null } = {}) {
    return this._op(this.handle, C.sbx_client_list_snapshots_from_start, C.sbx_client_last_error, project, limit, cursor);
  }

  /** One page of the sessions (runs) of the named sandbox `name`, or of
   * every sandbox ({sessions, pagination}), newest first; the 2.x
   * protocol's (UnsupportedError in v1). */
  listSessions({ name = null, project = null, limit = 0, cursor = null } = {}) {
    return this._op(this.handle, C.sbx_client_list_sessions_from_start, C.sbx_client_last_error, project, name, limit,
                    cursor);
  }

  /** An existing snapshot, read from the server. */
  async snapshot(id) {
    const sn = new Snapshot(this);
    try {
      await sn._op(C.sbx_snapshot_fetch_start, id);
    } catch (e) {
      sn.close();
      throw e;
    }
    return sn;
  }

  /** Free the client once nothing it drives is in flight (a wait on a worker
   * must end first). Pending operations are cancelled. */
  close() {
    if (!this.h || this.closing) return;
    this.closing = true;
    const free = () => Handle.prototype.close.call(this);
    if (!this.driver.waiting) return free();
    this.driver.onIdle = free;
    for (const op of this.driver.ops.keys()) C.sbx_op_cancel(op);
    C.sbx_client_wakeup(this.h);
  }
}

/** A sandbox: configure, then create() or fetch()/fetchNamed(). */
class Sandbox extends Handle {
  constructor(client, { name, persistent, runtime, timeoutMs, vcpus, ports = [], env = {}, networkPolicy, sourceGit,
                        sourceTarball, sourceSnapshot, options = {} } = {}) {
    super(C.sbx_sandbox_new(client.handle), C.sbx_sandbox_free, C.sbx_sandbox_last_error);
    this.client = client;
    try {
      if (name != null) this.check(C.sbx_sandbox_set_name(this.handle, name));
      if (persistent != null) this.check(C.sbx_sandbox_set_persistent(this.handle, persistent ? 1 : 0));
      if (runtime != null) this.setOption('runtime', runtime);
      if (timeoutMs != null) this.setOption('timeout_ms', timeoutMs);
      if (vcpus != null) this.setOption('vcpus', vcpus);
      if (sourceGit != null) this.setOption('source.git', sourceGit);
      if (sourceTarball != null) this.setOption('source.tarball', sourceTarball);
      if (sourceSnapshot != null) this.setOption('source.snapshot', sourceSnapshot);
      for (const p of ports) this.setOption('port', p);
      for (const [k, v] of Object.entries(env)) this.check(C.sbx_sandbox_set_env(this.handle, k, v));
      if (networkPolicy != null) {
        const text = typeof networkPolicy === 'string' ? networkPolicy : JSON.stringify(networkPolicy);
        this.check(C.sbx_sandbox_set_network_policy_json(this.handle, text));
      }
      for (const [k, v] of Object.entries(options)) this.setOption(k, v);
    } catch (e) {
      this.close();
      throw e;
    }
  }

  setOption(key, value) {
    this.check(C.sbx_sandbox_set_option(this.handle, key, String(value)));
  }

  _op(start, ...args) {
    return this.client._op(this.handle, start, C.sbx_sandbox_last_error, ...args);
  }

  async create() { await this._op(C.sbx_sandbox_create_start); return this; }
  async fetch(id) { await this._op(C.sbx_sandbox_fetch_start, id); return this; }
  async fetchNamed(name) { await this._op(C.sbx_sandbox_fetch_named_start, name); return this; }
  resume() { return this._op(C.sbx_sandbox_resume_start); }
  stop() { return this._op(C.sbx_sandbox_stop_start); }
  delete() { return this._op(C.sbx_sandbox_delete_start); }
  update(settings) { return this._op(C.sbx_sandbox_update_start, JSON.stringify(settings)); }
  refresh() { return this._op(C.sbx_sandbox_refresh_start); }
  extendTimeout(ms) { return this._op(C.sbx_sandbox_extend_timeout_start, ms); }

  /** Snapshot the filesystem (this stops the sandbox); expirationMs: 0 never, -1 the server's default. */
  async snapshot(expirationMs = -1) {
    const sn = new Snapshot(this.client);
    try {
      await this._op(C.sbx_sandbox_snapshot_start, expirationMs, sn.handle);
    } catch (e) {
      sn.close();
      throw e;
    }
    return sn;
  }
  mkdir(p) { return this._op(C.sbx_sandbox_mkdir_start, p); }

  writeFile(p, data, mode = 0o644) {
    const buf = Buffer.isBuffer(data) ? data : Buffer.from(String(data));
    return this._op(C.sbx_sandbox_write_file_start, p, buf, buf.length, mode);
  }

  upload(local, p, opts = {}) {
    return this._transfer(C.sbx_sandbox_upload_start, false, opts.onProgress, local, p);
  }

  download(p, local, opts = {}) {
    return this._transfer(C.sbx_sandbox_download_start, true, opts.onProgress, p, local);
  }

  /** An upload or a download; onProgress(done, total) about ten times a
   * second and once at the end: the body's bytes sent (the files as a gzip
   * tar) or received, and its size (null while not known). An exception
   * it throws cancels the transfer and rejects the promise with it. */
  async _transfer(start, receiving, onProgress, ...args) {
    if (onProgress == null) return this._op(start, ...args);
    if (typeof onProgress !== 'function') throw new TypeError('onProgress must be a function');
    const out = [null];
    this.check(start(this.handle, ...args, out));
    const op = out[0];
    let thrown = null;
    const report = (o) => {
      if (thrown) return;
      const v = [0, 0, 0, 0].map(() => [0]);
      C.sbx_op_get_progress(o, v[0], v[1], v[2], v[3]);
      const [done, total] = receiving ? [v[2][0], v[3][0]] : [v[0][0], v[1][0]];
      try {
        onProgress(Number(done), Number(total) < 0 ? null : Number(total));
      } catch (e) {
        thrown = { e };
        C.sbx_op_cancel(o);
        this.client.driver.kick();
      }
    };
    const timer = setInterval(() => report(op), 100);
    try {
      await awaitOp(this.client, op, (o) => { if (C.sbx_op_status(o) === OK) report(o); });
    } catch (e) {
      if (!thrown) throw e;
    } finally {
      clearInterval(timer);
    }
    if (thrown) throw thrown.e;
  }

  /** A file's bytes as a Readable stream of Buffers, as they arrive;
   * destroying the stream cancels the read. */
  readStream(p) {
    const client = this.client;
    let op = null;
    const stream = new Readable({
      read() {},
      destroy(err, done) {
        if (op) C.sbx_op_cancel(op), client.driver.kick();
        done(err);
      },
    });
    const out = [null];
    withCallback((data, len) => (stream.push(copyOut(data, len)), 0), DataCb, (cb) => {
      this.check(C.sbx_sandbox_read_stream_start(this.handle, p, cb, null, out));
      op = out[0];
      return awaitOp(client, op).finally(() => { op = null; });
    }).then(() => stream.push(null), (e) => stream.destroy(e));
    return stream;
  }

  /** A whole file (streamed; memory is the caller's to mind). */
  async readFile(p) {
    const chunks = [];
    for await (const b of this.readStream(p)) chunks.push(b);
    return Buffer.concat(chunks);
  }

  /** Start argv: a Command with stdout and stderr as Readable streams of
   * Buffers and exited, a Promise of the exit code. */
  spawn(argv, opts = {}) {
    const cmd = new Command(this, argv, opts);
    cmd.start();
    return cmd;
  }

  /** Run argv to its end: {exitCode, stdout, stderr, id}. */
  async run(argv, opts = {}) {
    const cmd = this.spawn(argv, opts);
    const chunks = { stdout: [], stderr: [] };
    cmd.stdout.on('data', (b) => chunks.stdout.push(b));
    cmd.stderr.on('data', (b) => chunks.stderr.push(b));
    try {
      const exitCode = await cmd.exited;
      await Promise.all([finished(cmd.stdout), finished(cmd.stderr)]);
      return { exitCode, stdout: Buffer.concat(chunks.stdout), stderr: Buffer.concat(chunks.stderr), id: cmd.id };
    } finally {
      cmd.close();
    }
  }

  get id() { return C.sbx_sandbox_id(this.handle); }
  get status() { return C.sbx_sandbox_status(this.handle); }
  get name() { return C.sbx_sandbox_name(this.handle); }
  get persistent() { const v = C.sbx_sandbox_persistent(this.handle); return v < 0 ? null : v === 1; }
  get runtime() { return C.sbx_sandbox_runtime(this.handle); }
  get timeoutMs() { const v = Number(C.sbx_sandbox_timeout_ms(this.handle)); return v < 0 ? null : v; }
  get json() { const t = C.sbx_sandbox_json(this.handle); return t == null ? null : JSON.parse(t); }
}

/** A snapshot of a sandbox's filesystem: Sandbox.snapshot() makes one,
 * Client.snapshot(id) reads one; a sandbox starts from it with sourceSnapshot. */
class Snapshot extends Handle {
  constructor(client) {
    super(C.sbx_snapshot_new(client.handle), C.sbx_snapshot_free, C.sbx_snapshot_last_error);
    this.client = client;
  }

  _op(start, ...args) {
    return this.client._op(this.handle, start, C.sbx_snapshot_last_error, ...args);
  }

  /** Delete it on the server (it then reads as status "deleted"). */
  delete() { return this._op(C.sbx_snapshot_delete_start); }

  get id() { return C.sbx_snapshot_id(this.handle); }
  get status() { return C.sbx_snapshot_status(this.handle); }
  get sourceSandboxId() { return C.sbx_snapshot_source_sandbox_id(this.handle); }
  get sizeBytes() { const v = Number(C.sbx_snapshot_size_bytes(this.handle)); return v < 0 ? null : v; }
  /** ms since the epoch; null when it never expires (or is not known). */
  get expiresAt() { const v = Number(C.sbx_snapshot_expires_at(this.handle)); return v <= 0 ? null : v; }
  get json() { const t = C.sbx_snapshot_json(this.handle); return t == null ? null : JSON.parse(t); }
}

function finished(stream) {
  return new Promise((resolve) => (stream.readableEnded ? resolve() : stream.on('end', resolve)));
}

/** A command in a sandbox, started by Sandbox.spawn(). */
class Command extends Handle {
  constructor(sandbox, argv, { cwd, env = {}, sudo = false, timeoutMs } = {}) {
    if (argv !== null && (!Array.isArray(argv) || argv.length === 0))
      throw new TypeError('argv: an array of strings, the program first');
    super(C.sbx_command_new(sandbox.handle), C.sbx_command_free, C.sbx_command_last_error);
    this.sandbox = sandbox;
    this.argv = argv ? argv.slice() : [];
    try {
      if (argv) this.check(C.sbx_command_set_argv(this.handle, argv.length, argv.map(String)));
      if (cwd != null) this.check(C.sbx_command_set_cwd(this.handle, cwd));
      for (const [k, v] of Object.entries(env)) this.check(C.sbx_command_set_env(this.handle, k, v));
      if (sudo) this.check(C.sbx_command_set_sudo(this.handle, 1));
      if (timeoutMs != null) this.check(C.sbx_command_set_timeout_ms(this.handle, timeoutMs));
    } catch (e) {
      this.close();
      throw e;
    }
    this.stdout = new Readable({ read() {} });
    this.stderr = new Readable({ read() {} });
  }

  /** A handle on a command already started in the sandbox (by id): follow()
   * streams its output from the beginning, wait() its exit, kill() signals it. */
  static async attach(sandbox, id, { timeoutMs } = {}) {
    const cmd = new Command(sandbox, null, { timeoutMs });
    try {
      await cmd._call(C.sbx_command_fetch_start, id);
    } catch (e) {
      cmd.close();
      throw e;
    }
    return cmd;
  }

  _call(start, ...args) {
    return this.sandbox.client._op(this.handle, start, C.sbx_command_last_error, ...args);
  }

  /** Start it without following it (detached); resolves to its id. It keeps
   * running after the handle is closed. */
  async startDetached() {
    this.check(C.sbx_command_set_detached(this.handle, 1));
    await this._call(C.sbx_command_run_start);
    return this.id;
  }

  /** Wait for its exit without reading its output; resolves to the exit code. */
  async wait() {
    await this._call(C.sbx_command_wait_exit_start);
    return this.exitCode;
  }

  /** Send a signal (Linux number; default 15, SIGTERM) to its process group. */
  kill(signal = 15) { return this._call(C.sbx_command_kill_start, signal); }

  /** Follow a started or attached command: stdout, stderr and exited as start() gives them. */
  follow() { this.start(); return this; }

  start() {
    const client = this.sandbox.client;
    const out = [null];
    const cid = this.h ? C.sbx_command_id(this.h) : null;
    if (cid == null) this.check(C.sbx_command_run_start(this.handle, out));
    else this.check(C.sbx_command_attach_start(this.handle, cid, out));
    const op = out[0];
    const buf = Buffer.alloc(65536);
    const drain = () => {
      if (!this.h) return;
      for (const [stream, r] of [[STDOUT, this.stdout], [STDERR, this.stderr]]) {
        const n = [0];
        while (C.sbx_command_read_output(this.h, stream, buf, buf.length, n) === OK)
          r.push(Buffer.from(buf.subarray(0, n[0])));
      }
    };
    client.driver.pollers.add(drain);
    this._op = op;
    this.exited = client.driver.track(op).then(() => {
      client.driver.pollers.delete(drain);
      this._op = null;
      drain();
      this.stdout.push(null);
      this.stderr.push(null);
      const st = C.sbx_op_status(op);
      const err = st === OK ? null : errorFor(st, C.sbx_op_last_error(op), C.sbx_op_error_code(op),
                                              C.sbx_op_http_status(op));
      C.sbx_op_free(op);
      if (err) throw err;
      return C.sbx_command_exit_code(this.h);
    });
    this.exited.catch(() => {}); // the caller awaits it, or not
  }

  /** Stop following it (the command keeps running in the sandbox). */
  cancel() {
    if (this._op) C.sbx_op_cancel(this._op), this.sandbox.client.driver.kick();
  }

  get id() { return this.h ? C.sbx_command_id(this.h) : null; }
  get exitCode() { return C.sbx_command_exit_code(this.handle); }
}

// ---- runs, jobs, transcripts ---------------------------------------------------

const verdictName = (v) => C.sbx_job_verdict_name(v) || String(v);

// sbx_run_event, by value: what Run.execute()'s onProgress is told.
const RUN_EVENTS = ['sandbox-creating', 'uploading', 'job-started', 'job-ended', 'job-skipped', 'stopping'];

/** One job: made by Run.addJob() (freed with its run), or of its own with
 * new Job(client, type, opts) and run with job.run(sandbox). */
class Job extends Handle {
  constructor(client, type, { json, policy, transcript, ...setup } = {}) {
    super(C.sbx_job_new(client.handle), C.sbx_job_free, C.sbx_job_last_error);
    this.client = client;
    this.transcript = transcript; // must outlive the job
    try {
      if (json != null) this.check(C.sbx_job_load_json(this.handle, typeof json === 'string' ? json : JSON.stringify(json)));
      if (type != null) this.check(C.sbx_job_set_type(this.handle, type));
      if (policy) this.check(C.sbx_job_set_policy(this.handle, policy.handle));
      if (transcript) this.check(C.sbx_job_set_transcript(this.handle, transcript.handle));
      this._setup(setup);
    } catch (e) {
      this.close();
      throw e;
    }
  }

  /** A job its run owns: not counted, not freed here. */
  static _ofRun(run, h) {
    const job = Object.create(Job.prototype);
    Object.assign(job, { h, _free: null, _lastError: C.sbx_job_last_error, _run: run, client: run.client });
    return job;
  }

  close() {
    if (this._free) super.close();
    else this.h = null;
  }

  _setup({ inputs = {}, argv, timeoutMs, env = {}, secrets = [], artifacts = [], options = {} }) {
    for (const [k, v] of Object.entries(inputs)) this.setInput(k, v);
    if (argv) this.setArgv(argv);
    if (timeoutMs != null) this.check(C.sbx_job_set_timeout_ms(this.handle, timeoutMs));
    for (const [k, v] of Object.entries(env)) this.check(C.sbx_job_set_env(this.handle, k, v));
    for (const sec of secrets) {
      const b = Buffer.from(sec);
      this.check(C.sbx_job_add_secret(this.handle, b, b.length));
    }
    for (const a of artifacts) this.check(C.sbx_job_add_artifact(this.handle, a));
    for (const [k, v] of Object.entries(options)) this.check(C.sbx_job_set_option(this.handle, k, String(v)));
  }

  setInput(k, v) { this.check(C.sbx_job_set_input(this.handle, k, v)); }
  setArgv(argv) {
    if (!Array.isArray(argv)) throw new TypeError('argv: an array of strings, the program first');
    this.check(C.sbx_job_set_argv(this.handle, argv.length, argv.map(String)));
  }

  /** Run a job of its own in a created sandbox; resolves to its result
   * (sbxrun.job.result/1). onOutput(stream, buffer) gets the output as it
   * comes, redacted (1 stdout, 2 stderr); an exception it throws cancels the
   * job and rejects the promise with it. A job that ran and failed resolves:
   * see verdict. */
  async run(sandbox, { onOutput } = {}) {
    let failure = null;
    const js = (stream, data, len) => {
      try {
        onOutput(stream, copyOut(data, len));
        return 0;
      } catch (e) {
        failure = failure || e;
        return 1;
      }
    };
    const go = async (cb) => {
      this.check(C.sbx_job_set_output_cb(this.handle, cb, null));
      try {
        await this.client._op(this.handle, C.sbx_job_run_start, C.sbx_job_last_error, sandbox.handle);
      } catch (e) {
        if (!failure) throw e;
      } finally {
        C.sbx_job_set_output_cb(this.handle, null, null);
      }
    };
    await (onOutput ? withCallback(js, OutputCb, go) : go(null));
    if (failure) throw failure;
    return this.result;
  }

  get verdict() { return verdictName(C.sbx_job_verdict(this.handle)); }
  get exitCode() { return C.sbx_job_exit_code(this.handle); }
  get retryable() { return C.sbx_job_retryable(this.handle) === 1; }
  get result() {
    const out = [null];
    this.check(C.sbx_job_result_to_json(this.handle, out));
    return takeJson(out[0]);
  }
}

/** The jobs of one piece of work in one sandbox (doc/job.md). */
class Run extends Handle {
  constructor(client, { sandbox, wallMs = 0, outputBytes = 0, maxJobs = 0, transcript, options = {} } = {}) {
    super(C.sbx_run_new(client.handle), C.sbx_run_free, C.sbx_run_last_error);
    this.client = client;
    this.sandbox = sandbox;
    this.transcript = transcript;
    // job types by job address: no getter gives a job's type, and its
    // result is there only at its end (progress callbacks name the type)
    this._types = new Map();
    try {
      if (sandbox) this.check(C.sbx_run_set_sandbox(this.handle, sandbox.handle));
      if (wallMs || outputBytes || maxJobs) this.check(C.sbx_run_set_budget(this.handle, wallMs, outputBytes, maxJobs));
      if (transcript) this.check(C.sbx_run_set_transcript(this.handle, transcript.handle));
      for (const [k, v] of Object.entries(options)) this.check(C.sbx_run_set_option(this.handle, k, String(v)));
    } catch (e) {
      this.close();
      throw e;
    }
  }

  addJob(type, setup = {}) {
    const out = [null];
    this.check(C.sbx_run_add_job(this.handle, type, out));
    const h = out[0];
    const job = Job._ofRun(this, h);
    job._setup(setup);
    this._types.set(koffi.address(h), type);
    return job;
  }

  addUpload(local, sandboxPath = '/vercel/sandbox') {
    this.check(C.sbx_run_add_upload(this.handle, local, sandboxPath));
  }

  /** Carry the run out; resolves to its result (sbxrun.run.result/1).
   * onProgress(event, job) is told of each stage as it comes (RUN_EVENTS;
   * job {index, type, verdict} for the job events, else null); an exception
   * it throws cancels the run and rejects the promise with it. */
  async execute({ onProgress } = {}) {
    if (onProgress == null) {
      await this.client._op(this.handle, C.sbx_run_execute_start, C.sbx_run_last_error);
      return this.result;
    }
    if (typeof onProgress !== 'function') throw new TypeError('onProgress must be a function');
    let op = null;
    let thrown = null;
    const js = (r, event, index) => {
      if (thrown) return;
      try {
        onProgress(RUN_EVENTS[event] ?? String(event), event >= 2 && event <= 4 ? this._jobInfo(Number(index), event) : null);
      } catch (e) {
        thrown = { e };
        if (op) C.sbx_op_cancel(op), this.client.driver.kick();
      }
    };
    await withCallback(js, RunProgressCb, async (cb) => {
      this.check(C.sbx_run_set_progress_cb(this.handle, cb, null));
      try {
        const out = [null];
        this.check(C.sbx_run_execute_start(this.handle, out));
        op = out[0];
        if (thrown) C.sbx_op_cancel(op);
        await awaitOp(this.client, op);
      } catch (e) {
        if (!thrown) throw e;
      } finally {
        op = null;
        // the callback is unregistered next: the run must not call it after
        if (this.h) C.sbx_run_set_progress_cb(this.h, null, null);
      }
    });
    if (thrown) throw thrown.e;
    return this.result;
  }

  /** What a progress callback is told of job i: plain values, as the job
   * handle is the run's and dies with it. */
  _jobInfo(index, event) {
    const h = C.sbx_run_job(this.handle, index);
    return { index, type: this._types.get(koffi.address(h)) ?? null,
             verdict: event === 3 ? verdictName(C.sbx_job_verdict(h)) : null };
  }

  get verdict() { return verdictName(C.sbx_run_verdict(this.handle)); }
  get jobs() {
    const n = Number(C.sbx_run_job_count(this.handle));
    return Array.from({ length: n }, (_, i) => Job._ofRun(this, C.sbx_run_job(this.handle, i)));
  }
  get result() {
    const out = [null];
    this.check(C.sbx_run_result_to_json(this.handle, out));
    return takeJson(out[0]);
  }
}

/** A tamper-evident record (doc/transcript.md). */
class Transcript extends Handle {
  constructor(file) {
    super(C.sbx_transcript_new(), C.sbx_transcript_free, C.sbx_transcript_last_error);
    try {
      if (file != null) this.check(C.sbx_transcript_set_file(this.handle, file));
    } catch (e) {
      this.close();
      throw e;
    }
  }

  static load(file) {
    const t = new Transcript();
    try {
      t.check(C.sbx_transcript_load_file(t.handle, file));
    } catch (e) {
      t.close();
      throw e;
    }
    return t;
  }

  /** Check the hash chain: throws IntegrityError (brokenEntry: 0-based) when it does not hold. */
  verify() {
    const broken = [0];
    const st = C.sbx_transcript_verify(this.handle, broken);
    if (st !== OK) {
      const e = errorFor(st, C.sbx_transcript_last_error(this.handle));
      e.brokenEntry = Number(broken[0]);
      throw e;
    }
  }

  get stepCount() { return Number(C.sbx_transcript_step_count(this.handle)); }
  get complete() { return C.sbx_transcript_complete(this.handle) === 1; }
  get headHash() { return C.sbx_transcript_head_hash(this.handle); }

  /** The header entry: its job holds the job (or run) type, inputs and policies. */
  get job() {
    const out = [null];
    this.check(C.sbx_transcript_job_to_json(this.handle, out));
    return takeJson(out[0]);
  }

  /** Step n (1-based) as recorded. */
  step(n) {
    const out = [null];
    this.check(C.sbx_transcript_step_to_json(this.handle, n, out));
    return takeJson(out[0]);
  }

  save(file) { this.check(C.sbx_transcript_save_file(this.handle, file)); }

  /** End it with a verdict (a name, or the Job or Run whose verdict it is):
   * the file is then replaced atomically with the complete transcript. A
   * Run ends its own; a job of its own leaves it to the caller. */
  finish(verdict) {
    const name = typeof verdict === 'string' ? verdict : verdict.verdict;
    for (let v = 0; v < 16; v++) {
      if (C.sbx_job_verdict_name(v) === name) return this.check(C.sbx_transcript_finish(this.handle, v));
    }
    throw new TypeError(`verdict: ${JSON.stringify(name)} is not one (passed, failed, timed-out, denied, cancelled, error, unavailable)`);
  }
}

// ---- safety ---------------------------------------------------------------------

/** The default-deny command policy (doc/policy.md). check() decides, never throws for a denial. */
class Policy extends Handle {
  constructor(json) {
    super(C.sbx_policy_new(), C.sbx_policy_free, C.sbx_policy_last_error);
    try {
      if (json != null) this.check(C.sbx_policy_load_json(this.handle, typeof json === 'string' ? json : JSON.stringify(json)));
    } catch (e) {
      this.close();
      throw e;
    }
  }

  allowProgram(program, jobType = null) { this.check(C.sbx_policy_allow_program(this.handle, jobType, program)); }
  denyProgram(program, jobType = null) { this.check(C.sbx_policy_deny_program(this.handle, jobType, program)); }
  allowPackage(spec, jobType = null) { this.check(C.sbx_policy_allow_package(this.handle, jobType, spec)); }

  /** {allowed, reason, message} for argv (in cwd, under jobType's rules). */
  checkArgv(argv, { jobType = null, cwd = null } = {}) {
    const reason = [0];
    const msg = Buffer.alloc(1024);
    const st = C.sbx_policy_check(this.handle, jobType, argv.length, argv.map(String), cwd, reason, msg, msg.length);
    if (st !== OK && st !== 15) this.check(st); // 15: SBX_E_POLICY_DENIED
    const end = msg.indexOf(0);
    return { allowed: st === OK, reason: C.sbx_policy_reason_name(reason[0]),
             message: msg.subarray(0, end < 0 ? msg.length : end).toString() };
  }
}

/** Secrets and credential shapes to replace in output (doc/redact.md). */
class Redactor extends Handle {
  constructor(secrets = [], { shapes = true } = {}) {
    super(C.sbx_redactor_new(), C.sbx_redactor_free, C.sbx_redactor_last_error);
    try {
      for (const s of secrets) this.addSecret(s);
      if (!shapes) this.check(C.sbx_redactor_set_shapes(this.handle, 0));
    } catch (e) {
      this.close();
      throw e;
    }
  }

  addSecret(value) {
    const b = Buffer.from(value);
    this.check(C.sbx_redactor_add_secret(this.handle, b, b.length));
  }

  redact(data) {
    const b = Buffer.isBuffer(data) ? data : Buffer.from(String(data));
    const out = [null];
    const len = [0];
    this.check(C.sbx_redactor_redact(this.handle, b, b.length, out, len));
    try {
      return Buffer.from(koffi.decode(out[0], 'uint8_t', Number(len[0])));
    } finally {
      C.sbx_free(out[0]);
    }
  }
}

const MODES = { 'allow-all': 0, 'deny-all': 1, custom: 2 };

/** Where a sandbox may connect (doc/netpolicy.md). */
class NetworkPolicy extends Handle {
  constructor(mode) {
    super(C.sbx_netpolicy_new(), C.sbx_netpolicy_free, C.sbx_netpolicy_last_error);
    try {
      if (mode != null) this.mode = mode;
    } catch (e) {
      this.close();
      throw e;
    }
  }

  static preset(jobType, inputs = {}) {
    const n = new NetworkPolicy();
    const keys = Object.keys(inputs);
    try {
      n.check(C.sbx_netpolicy_load_preset(n.handle, jobType, keys.length, keys, keys.map((k) => String(inputs[k]))));
    } catch (e) {
      n.close();
      throw e;
    }
    return n;
  }

  get mode() {
    const v = C.sbx_netpolicy_mode(this.handle);
    return Object.keys(MODES).find((k) => MODES[k] === v) ?? String(v);
  }

  set mode(mode) {
    if (!(mode in MODES)) throw new RangeError(`mode: one of ${Object.keys(MODES).join(', ')}, not ${mode}`);
    this.check(C.sbx_netpolicy_set_mode(this.handle, MODES[mode]));
  }

  allowDomain(d) { this.check(C.sbx_netpolicy_allow_domain(this.handle, d)); }
  allowCidr(c) { this.check(C.sbx_netpolicy_allow_cidr(this.handle, c)); }
  denyCidr(c) { this.check(C.sbx_netpolicy_deny_cidr(this.handle, c)); }
  injectHeader(domain, name, value) { this.check(C.sbx_netpolicy_inject_header(this.handle, domain, name, value)); }

  /** The API form a sandbox takes (networkPolicy: ...). */
  toJSON() {
    const out = [null];
    this.check(C.sbx_netpolicy_to_json(this.handle, out));
    return takeJson(out[0]);
  }
}

// ---- patches ----------------------------------------------------------------------

// The statuses that describe the patch rather than a fault: its verdict says
// the rest, so they are answers, not exceptions.
const VERDICT_STATUSES = new Set([E_PARSE, E_BUDGET_EXCEEDED, E_PATCH]);
// A verdict no later call changes: checking again would only answer
// SBX_E_MISUSE or SBX_E_PATCH and replace the message that says why.
const FINAL_VERDICTS = new Set(['does-not-apply', 'unsafe', 'malformed', 'too-large']);
const CHANGES = ['added', 'modified', 'deleted', 'renamed', 'copied']; // sbx_patch_change 1..5

function patchBytes(data, what) {
  if (typeof data === 'string') return Buffer.from(data);
  if (Buffer.isBuffer(data)) return data;
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError(`${what}: a Buffer or a string`);
}

/** A unified diff, or file operations, checked on this machine before
 * anything is uploaded (doc/patch.md). A patch that is unsafe, malformed,
 * too large or does not apply is a verdict, not an exception; what stops
 * the check itself (no such repository or revision, a file that cannot be
 * read, misuse) throws. */
class Patch extends Handle {
  constructor({ diff, file, repo, base, after, maxBytes = 0, maxFiles = 0, maxFileBytes = 0, threads = 0 } = {}) {
    if (diff != null && file != null) throw new TypeError('Patch: give diff or file, not both');
    if (after != null && (repo != null || base != null))
      throw new TypeError('Patch: after is the base; repo and base are not given with it');
    if (after != null && !(after instanceof Patch)) throw new TypeError('Patch: after is a Patch');
    if (base != null && repo == null) throw new TypeError('Patch: base names a revision of repo; repo is not given');
    super(C.sbx_patch_new(), C.sbx_patch_free, C.sbx_patch_last_error);
    this._message = '';
    try {
      if (maxBytes || maxFiles || maxFileBytes)
        this._must(C.sbx_patch_set_limits(this.handle, maxBytes, maxFiles, maxFileBytes));
      if (threads) this._must(C.sbx_patch_set_threads(this.handle, threads));
      if (after != null) this._must(C.sbx_patch_set_base_patch(this.handle, after.handle));
      else if (repo != null) this._must(C.sbx_patch_set_base(this.handle, String(repo), base ?? null));
      if (diff != null) {
        const b = patchBytes(diff, 'diff');
        this._answer(C.sbx_patch_load_data(this.handle, b, b.length));
      } else if (file != null) {
        this._answer(C.sbx_patch_load_file(this.handle, String(file)));
      }
    } catch (e) {
      this.close();
      throw e;
    }
  }

  // Handle.check(status) is this class's check(): its own name here.
  _must(status) {
    check(status, C.sbx_patch_last_error(this.handle));
  }

  /** Throw unless the status is OK or one a verdict describes; keep the
   * message (later calls clear the library's). True when OK. */
  _answer(status) {
    if (status !== OK && !VERDICT_STATUSES.has(status)) this._must(status);
    this._message = status === OK ? '' : C.sbx_patch_last_error(this.handle);
    return status === OK;
  }

  /** One file operation instead of a diff (a base must be set): 'added' or
   * 'modified' with the file's whole new content (mode 0o644 or 0o755; 0
   * means 0o644), or 'deleted'. An unsafe path throws PatchError and one
   * over the limits BudgetExceededError: that operation is refused (a
   * caller cannot miss it), the others stay. */
  addFile(change, path, data = null, mode = 0) {
    const code = CHANGES.slice(0, 3).indexOf(change) + 1;
    if (!code) throw new TypeError(`change: 'added', 'modified' or 'deleted', not ${JSON.stringify(change)}`);
    const b = data == null ? null : patchBytes(data, 'data');
    this._must(C.sbx_patch_add_file(this.handle, code, String(path), b, b ? b.length : 0, mode));
  }

  /** Check against the base (safety alone without one); returns the verdict. */
  check() {
    if (!FINAL_VERDICTS.has(this.verdict)) this._answer(C.sbx_patch_check(this.handle));
    return this.verdict;
  }

  /** 'unchecked', 'safe', 'applies', 'does-not-apply', 'unsafe', 'malformed' or 'too-large'. */
  get verdict() { return C.sbx_patch_verdict_name(C.sbx_patch_get_verdict(this.handle)); }
  /** Safe and, with a base, applies. */
  get ok() { const v = this.verdict; return v === 'applies' || v === 'safe'; }
  /** The rule an unsafe patch breaks ('absolute', 'dotdot', 'git-dir', ...), else null. */
  get rule() {
    const r = C.sbx_patch_broken_rule(this.handle);
    return r ? C.sbx_patch_rule_name(r) : null;
  }
  /** Why the verdict is what it is ('' when the last load, operation or check succeeded). */
  get message() {
    void this.handle; // a closed handle throws, as for the other getters
    return this._message;
  }

  get files() {
    const h = this.handle;
    return Array.from({ length: Number(C.sbx_patch_file_count(h)) }, (_, i) => ({
      path: C.sbx_patch_file_path(h, i),
      oldPath: C.sbx_patch_file_old_path(h, i),
      change: CHANGES[C.sbx_patch_file_change(h, i) - 1] ?? 'unknown',
      oldMode: C.sbx_patch_file_old_mode(h, i),
      newMode: C.sbx_patch_file_new_mode(h, i),
      additions: Number(C.sbx_patch_file_additions(h, i)),
      deletions: Number(C.sbx_patch_file_deletions(h, i)),
      binary: C.sbx_patch_file_binary(h, i) === 1,
    }));
  }

  /** As `git patch-id --stable` gives it; null before a load, and after one that failed. */
  get patchId() { return C.sbx_patch_id(this.handle) || null; }

  /** The patch as git's unified diff (the one built from file operations
   * once checked); null when there is none. */
  get diff() {
    const out = [null];
    const len = [0];
    const st = C.sbx_patch_save_data(this.handle, out, len);
    if (st === E_MISUSE) return null; // nothing loaded, or operations not built yet
    this._must(st);
    try {
      return Buffer.from(koffi.decode(out[0], 'uint8_t', Number(len[0])));
    } finally {
      C.sbx_free(out[0]);
    }
  }

  /** {verdict, rule, message, patchId, files, diffstat}, as doc/patch.md shows it. */
  toJSON() {
    const out = [null];
    this._must(C.sbx_patch_to_json(this.handle, out));
    return takeJson(out[0]);
  }

  /** Write the base tree with the patch applied as a gzip tar (replaced atomically). */
  saveTree(file) { this._must(C.sbx_patch_save_tree_file(this.handle, String(file))); }

  /** Write that tree as files under dir (which must not exist, or be empty),
   * ready for Run.addUpload(); on failure nothing is left behind. */
  saveTreeDir(dir) { this._must(C.sbx_patch_save_tree_dir(this.handle, String(dir))); }
}

const VERIFY_SCRIPTS = ['lint', 'typecheck', 'test', 'build'];
const DEPENDENCY_KEYS = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'];

const orList = (names) => (names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : names[0]);

function readPackage(tree) {
  const file = path.join(tree, 'package.json');
  if (!fs.existsSync(file)) return {};
  let pkg;
  try {
    pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`package.json: not valid JSON: ${e.message}`);
  }
  if (pkg === null || typeof pkg !== 'object' || Array.isArray(pkg)) throw new Error('package.json: not a JSON object');
  return pkg;
}

/** The repository around dir (the directory holding .git) and dir's path
 * below it ('' at its top). */
function repoOf(dir) {
  const real = path.resolve(String(dir));
  for (let d = real; ; d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, '.git'))) return [d, path.relative(d, real)];
    if (path.dirname(d) === d)
      throw errorFor(E_NOT_FOUND, `${dir} is not inside a git repository (verify sends the files tracked at a revision)`);
  }
}

/** Verify project (a directory of a git repository: its top, or a project
 * below it, whose paths the patch's are relative to) at base (default HEAD),
 * with patch applied (a file path, or the diff as a Buffer; or an array of
 * them, applied in turn, each on what the ones before it leave): the patch is
 * checked here first (PatchError when it is unsafe or does not apply, and
 * nothing is sent), then the tree is uploaded into a new sandbox and
 * deps.install (when package.json declares dependencies, or install is
 * true) and verify.<name> for each of scripts package.json has run as one
 * Run. Resolves to the run's result (sbxrun.run.result/1): a failing
 * script is its verdict, not an exception. */
async function verify(client, project, { patch, base, scripts = VERIFY_SCRIPTS, install, transcript, wallMs = 0,
                                         onProgress } = {}) {
  if (!Array.isArray(scripts) || scripts.length === 0)
    throw new TypeError(`scripts: an array of ${VERIFY_SCRIPTS.join(', ')}`);
  for (const s of scripts) {
    if (!VERIFY_SCRIPTS.includes(s))
      throw new TypeError(`scripts: ${JSON.stringify(s)} is not one of ${VERIFY_SCRIPTS.join(', ')}`);
  }
  const series = Array.isArray(patch) ? patch : patch == null ? [] : [patch];
  for (const one of series) {
    if (typeof one !== 'string' && !(one instanceof Uint8Array))
      throw new TypeError('patch: a file path, or the diff as a Buffer (or an array of them)');
  }
  const held = [];
  let run = null;
  let tmp = null;
  try {
    // A project below the repository's top is that directory's tree at the
    // revision, and the patch's paths are relative to it.
    const [repo, sub] = repoOf(project);
    const spec = sub ? `${base ?? 'HEAD'}:${sub}` : base;
    // Each patch on what the ones before it leave; none: the base itself.
    series.forEach((one, i) => {
      const where = held.length ? { after: held[held.length - 1] } : { repo, base: spec };
      const p = new Patch({ ...where, ...(typeof one === 'string' ? { file: one } : { diff: one }) });
      held.push(p);
      const verdict = p.check();
      const which = series.length > 1 ? `patch ${i + 1} of ${series.length}` : 'patch';
      if (verdict !== 'applies') throw errorFor(E_PATCH, `${which}: ${p.message}`);
    });
    if (!held.length) held.push(new Patch({ repo, base: spec }));
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxrun-verify-'));
    const tree = path.join(tmp, 'tree');
    held[held.length - 1].saveTreeDir(tree);
    const pkg = readPackage(tree);
    const defined = pkg.scripts !== null && typeof pkg.scripts === 'object' ? pkg.scripts : {};
    const wanted = [...new Set(scripts)];
    const names = wanted.filter((s) => Object.hasOwn(defined, s));
    if (names.length === 0) throw new Error(`nothing to verify: package.json has no ${orList(wanted)} script`);
    const deps = DEPENDENCY_KEYS.some((k) => pkg[k] !== null && typeof pkg[k] === 'object' && Object.keys(pkg[k]).length > 0);
    run = new Run(client, { transcript, wallMs });
    run.addUpload(tree, '/vercel/sandbox');
    if (install === true || (install == null && deps)) run.addJob('deps.install');
    for (const s of names) run.addJob(`verify.${s}`, { inputs: { script: s } });
    return await run.execute({ onProgress });
  } finally {
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
    for (const p of held) p.close();
    if (run) run.close();
  }
}

module.exports = {
  version: PACKAGE_VERSION,
  libraryVersion: () => C.sbx_version(),
  Client, Sandbox, Snapshot, Command, Run, Job, Transcript, Policy, Redactor, NetworkPolicy, Patch, verify,
  liveHandles: () => live,
  SbxError, ...errorClasses,
  className,
  _C: C,
};
