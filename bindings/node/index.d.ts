// SPDX-License-Identifier: MIT
// Types of the sbxrun package (index.js).
import { Readable } from 'node:stream';

export const version: string;
export function libraryVersion(): string;
export function className(statusName: string): string;

/** A libsbxrun call failed. */
export class SbxError extends Error {
  /** The sbx_status code. */
  status: number;
  /** Its name, such as "SBX_E_NOT_FOUND". */
  code: string;
  /** The server's error.code, when an answer carried one. */
  errorCode: string | null;
  /** The HTTP status of the answer that failed it (0: none). */
  httpStatus: number;
}
export class InvalidArgError extends SbxError {}
export class MisuseError extends SbxError {}
export class NomemError extends SbxError {}
export class UnknownOptionError extends SbxError {}
export class NotFoundError extends SbxError {}
export class IoError extends SbxError {}
export class ParseError extends SbxError {}
export class AuthError extends SbxError {}
export class TransportError extends SbxError {}
export class ProtocolError extends SbxError {}
export class HttpError extends SbxError {}
export class TimeoutError extends SbxError {}
export class CancelledError extends SbxError {}
export class BudgetExceededError extends SbxError {}
export class PolicyDeniedError extends SbxError {}
export class UnsupportedError extends SbxError {}
export class ConflictError extends SbxError {}
export class RateLimitedError extends SbxError {}
export class IntegrityError extends SbxError { brokenEntry?: number; }
export class PatchError extends SbxError {}
export class InternalError extends SbxError {}
export class AgainError extends SbxError {}

interface Disposable {
  close(): void;
  [Symbol.asyncDispose]?(): Promise<void>;
}

export interface ClientOptions {
  /** "http://host:port", "unix:/path"; omitted: SBXRUN_ENDPOINT, or Vercel. */
  endpoint?: string;
  token?: string;
  team?: string;
  project?: string;
  /** Client options by name (doc/client.md): { protocol: 'v1' }. */
  options?: Record<string, string | number>;
  /** How the output of the client's commands is redacted before any stream
   * sees it: true (the default) the built-in credential shapes (a default
   * Redactor), a Redactor of your own (its rules copied), false none. */
  redact?: boolean | Redactor;
}

export class Client implements Disposable {
  constructor(opts?: ClientOptions);
  setOption(key: string, value: string | number): void;
  /** Check every plain command against a Policy (copied; null removes it). */
  setPolicy(policy: Policy | null, jobType?: string | null): void;
  /** Redact the output of commands started from now on with this Redactor
   * (its rules copied) in place of the client's; null stops redacting. */
  setRedactor(redactor: Redactor | null): void;
  sandbox(config?: SandboxConfig): Sandbox;
  createSandbox(config?: SandboxConfig): Promise<Sandbox>;
  /** One page of the project's sandboxes as the server sent it ({sandboxes, pagination}). */
  listSandboxes(opts?: { project?: string; limit?: number; cursor?: string }): Promise<any>;
  /** One page of the project's snapshots ({snapshots, pagination}). */
  listSnapshots(opts?: { project?: string; limit?: number; cursor?: string }): Promise<any>;
  /** One page of the sessions of the named sandbox `name`, or of all ({sessions, pagination}); 2.x protocol. */
  listSessions(opts?: { name?: string; project?: string; limit?: number; cursor?: string }): Promise<any>;
  /** An existing snapshot, read from the server. */
  snapshot(id: string): Promise<Snapshot>;
  close(): void;
}

export interface SandboxConfig {
  name?: string;
  persistent?: boolean;
  runtime?: string;
  timeoutMs?: number;
  vcpus?: number;
  ports?: number[];
  env?: Record<string, string>;
  networkPolicy?: object | string;
  sourceGit?: string;
  sourceTarball?: string;
  /** Start from a snapshot's filesystem (Snapshot.id). */
  sourceSnapshot?: string;
  /** Sandbox options by name: { auto_resume: 'never' }. */
  options?: Record<string, string | number>;
}

export interface CommandOptions {
  cwd?: string;
  env?: Record<string, string>;
  sudo?: boolean;
  timeoutMs?: number;
}

export interface TransferOptions {
  /** Called about ten times a second and once at the end with the bytes moved and the total (null while not known); an exception it throws cancels the transfer and rejects the promise with it. */
  onProgress?: (done: number, total: number | null) => void;
}

export interface CompletedCommand {
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
  id: string | null;
}

export class Sandbox implements Disposable {
  create(): Promise<Sandbox>;
  fetch(id: string): Promise<Sandbox>;
  fetchNamed(name: string): Promise<Sandbox>;
  resume(): Promise<void>;
  stop(): Promise<void>;
  delete(): Promise<void>;
  update(settings: Record<string, unknown>): Promise<void>;
  refresh(): Promise<void>;
  extendTimeout(ms: number): Promise<void>;
  /** Snapshot the filesystem (this stops the sandbox); 0: never expires, -1: the server's default. */
  snapshot(expirationMs?: number): Promise<Snapshot>;
  mkdir(path: string): Promise<void>;
  writeFile(path: string, data: Buffer | string, mode?: number): Promise<void>;
  readFile(path: string): Promise<Buffer>;
  /** The file's bytes as they arrive; destroying the stream cancels the read. */
  readStream(path: string): Readable;
  /** Copy a local file or directory in; onProgress gets the bytes of the body (the files as a gzip tar) sent, and its size. */
  upload(local: string, path: string, opts?: TransferOptions): Promise<void>;
  /** Copy a file out (written whole, or not at all); onProgress gets the bytes received, and the file's size. */
  download(path: string, local: string, opts?: TransferOptions): Promise<void>;
  spawn(argv: string[], opts?: CommandOptions): Command;
  run(argv: string[], opts?: CommandOptions): Promise<CompletedCommand>;
  setOption(key: string, value: string | number): void;
  readonly id: string | null;
  readonly status: string | null;
  readonly name: string | null;
  readonly persistent: boolean | null;
  readonly runtime: string | null;
  readonly timeoutMs: number | null;
  readonly json: any;
  close(): void;
}

export class Snapshot implements Disposable {
  /** Delete it on the server (it then reads as status "deleted"). */
  delete(): Promise<void>;
  readonly id: string | null;
  /** "created", "deleted" or "failed". */
  readonly status: string | null;
  readonly sourceSandboxId: string | null;
  readonly sizeBytes: number | null;
  /** ms since the epoch; null when it never expires. */
  readonly expiresAt: number | null;
  readonly json: any;
  close(): void;
}

export class Command implements Disposable {
  constructor(sandbox: Sandbox, argv: string[], opts?: CommandOptions);
  /** A handle on a command already started in the sandbox, by id. */
  static attach(sandbox: Sandbox, id: string, opts?: { timeoutMs?: number }): Promise<Command>;
  /** Start it without following it; resolves to its id (it outlives the handle). */
  startDetached(): Promise<string>;
  /** Follow a started or attached command: stdout, stderr and exited from its beginning. */
  follow(): this;
  /** Its exit code, without reading its output. */
  wait(): Promise<number>;
  /** Send a signal (default 15, SIGTERM) to its process group. */
  kill(signal?: number): Promise<void>;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** The exit code, once the command has ended. */
  readonly exited: Promise<number>;
  readonly id: string | null;
  /** -1 while unknown. */
  readonly exitCode: number;
  cancel(): void;
  close(): void;
}

export type Verdict = 'passed' | 'failed' | 'timed-out' | 'denied' | 'cancelled' | 'error' | 'unavailable';

export interface JobOptions {
  inputs?: Record<string, string>;
  argv?: string[];
  timeoutMs?: number;
  env?: Record<string, string>;
  /** Values to redact, 8 to 4096 bytes each. */
  secrets?: (string | Buffer)[];
  artifacts?: string[];
  /** Job options by name (doc/job.md). */
  options?: Record<string, string | number>;
}

export interface OwnJobOptions extends JobOptions {
  /** The JSON job description (doc/job.md); type may then be null. */
  json?: object | string;
  /** A command policy of its own (copied). */
  policy?: Policy;
  /** Records the job; the caller ends it with Transcript.finish(). */
  transcript?: Transcript;
}

/** A job: of its own (new Job(client, type, opts), then run(sandbox)), or a Run's (Run.addJob). */
export class Job implements Disposable {
  constructor(client: Client, type: string | null, opts?: OwnJobOptions);
  setInput(key: string, value: string | null): void;
  setArgv(argv: string[]): void;
  /** Run a job of its own; resolves to its result (a failed job resolves: see verdict). */
  run(sandbox: Sandbox, opts?: { onOutput?: (stream: 1 | 2, chunk: Buffer) => void }): Promise<any>;
  readonly verdict: Verdict;
  readonly exitCode: number;
  readonly retryable: boolean;
  readonly result: any;
  close(): void;
}

export class Run implements Disposable {
  constructor(client: Client, opts?: {
    sandbox?: Sandbox; wallMs?: number; outputBytes?: number; maxJobs?: number;
    transcript?: Transcript; options?: Record<string, string | number>;
  });
  addJob(type: string, opts?: JobOptions): Job;
  addUpload(local: string, sandboxPath?: string): void;
  /** Carry the run out; resolves to its result (sbxrun.run.result/1). onProgress is told of each stage; an exception it throws cancels the run and rejects the promise with it. */
  execute(opts?: { onProgress?: RunProgress }): Promise<any>;
  readonly verdict: Verdict;
  readonly jobs: Job[];
  readonly result: any;
  close(): void;
}

/** A stage of a run, as Run.execute()'s onProgress is told of it. */
export type RunEvent = 'sandbox-creating' | 'uploading' | 'job-started' | 'job-ended' | 'job-skipped' | 'stopping';

/** The job a progress event is about: its place in run order, its type, and its verdict once it has ended. */
export interface RunProgressJob {
  index: number;
  type: string;
  /** Set for 'job-ended', null otherwise. */
  verdict: Verdict | null;
}

/** Told of a run's progress on the JavaScript thread; job is null for the events about the sandbox. */
export type RunProgress = (event: RunEvent, job: RunProgressJob | null) => void;

export class Transcript implements Disposable {
  constructor(file?: string);
  static load(file: string): Transcript;
  verify(): void;
  readonly stepCount: number;
  readonly complete: boolean;
  readonly headHash: string;
  /** The header entry. */
  readonly job: any;
  /** Step n (1-based) as recorded. */
  step(n: number): any;
  save(file: string): void;
  /** End it with a verdict (or the Job or Run whose verdict it is). */
  finish(verdict: Verdict | Job | Run): void;
  close(): void;
}

export interface Decision {
  allowed: boolean;
  /** A stable name: "allow", "program_not_allowed", "package_exec"... */
  reason: string;
  message: string;
}

export class Policy implements Disposable {
  constructor(json?: string | object);
  allowProgram(program: string, jobType?: string | null): void;
  denyProgram(program: string, jobType?: string | null): void;
  allowPackage(spec: string, jobType?: string | null): void;
  checkArgv(argv: string[], opts?: { jobType?: string | null; cwd?: string | null }): Decision;
  close(): void;
}

export class Redactor implements Disposable {
  constructor(secrets?: (string | Buffer)[], opts?: { shapes?: boolean });
  addSecret(value: string | Buffer): void;
  redact(data: string | Buffer): Buffer;
  close(): void;
}

export class NetworkPolicy implements Disposable {
  constructor(mode?: 'allow-all' | 'deny-all' | 'custom');
  static preset(jobType: string, inputs?: Record<string, string>): NetworkPolicy;
  mode: 'allow-all' | 'deny-all' | 'custom';
  allowDomain(domain: string): void;
  allowCidr(cidr: string): void;
  denyCidr(cidr: string): void;
  injectHeader(domain: string, name: string, value: string): void;
  toJSON(): object;
  close(): void;
}

/** What is known about a patch: 'applies' and 'safe' (without a base) are the good ones. */
export type PatchVerdict = 'unchecked' | 'safe' | 'applies' | 'does-not-apply' | 'unsafe' | 'malformed' | 'too-large';

/** The rule an unsafe patch breaks. */
export type PatchRule = 'absolute' | 'dotdot' | 'git-dir' | 'symlink' | 'gitlink' | 'bad-path';

export type PatchChange = 'added' | 'modified' | 'deleted' | 'renamed' | 'copied';

/** One file a patch touches. Modes are git's (0o100644, 0o100755; 0 for a side that does not exist). */
export interface PatchFile {
  /** The path after the patch (the old path for a deletion). */
  path: string;
  /** The source of a rename or a copy, null otherwise. */
  oldPath: string | null;
  change: PatchChange;
  oldMode: number;
  newMode: number;
  /** Lines added and removed (0 for a binary file). */
  additions: number;
  deletions: number;
  binary: boolean;
}

export interface PatchOptions {
  /** The unified diff to load (git's format, or `diff -u` output). */
  diff?: Buffer | Uint8Array | string;
  /** Or a file holding it (not both). */
  file?: string;
  /** A local repository (work tree or bare): the patch is checked against a tree of it. */
  repo?: string;
  /** The revision of repo (any form git accepts); default HEAD. */
  base?: string;
  /** Instead of repo and base: a Patch checked before that applies; the tree it leaves is the base (a series). */
  after?: Patch;
  /** Limits; 0 keeps the library's defaults (16 MiB, 10,000 files, 8 MiB). */
  maxBytes?: number;
  maxFiles?: number;
  maxFileBytes?: number;
  /** Threads a check may read the base with (0: by the patch's size; at most 8). */
  threads?: number;
}

/**
 * A unified diff, or file operations, checked on this machine before anything is uploaded: is it safe, does it
 * apply to the base tree (as `git apply --check` says), what does it do. A patch that is unsafe, malformed, too
 * large or does not apply is a verdict, not an exception; what stops the check itself (no such repository or
 * revision: NotFoundError; a file that cannot be read: IoError; misuse) throws.
 */
export class Patch implements Disposable {
  constructor(opts?: PatchOptions);
  /** One file operation instead of a diff (a base must be set); mode 0o644 or 0o755 (0: 0o644). An unsafe path throws PatchError, one over the limits BudgetExceededError: that operation is refused, the others stay. */
  addFile(change: 'added' | 'modified' | 'deleted', path: string, data?: Buffer | Uint8Array | string | null, mode?: number): void;
  /** Check against the base (safety alone without one); returns the verdict. */
  check(): PatchVerdict;
  readonly verdict: PatchVerdict;
  /** The verdict is 'applies' or 'safe'. */
  readonly ok: boolean;
  /** The rule an unsafe patch breaks, null otherwise. */
  readonly rule: PatchRule | null;
  /** Why the verdict is what it is ('' when the last load, operation or check succeeded). */
  readonly message: string;
  readonly files: PatchFile[];
  /** As `git patch-id --stable` gives it; null before a load, or after one that failed. */
  readonly patchId: string | null;
  /** The patch as git's unified diff (built from the file operations once checked); null when there is none. */
  readonly diff: Buffer | null;
  /** {verdict, rule, message, patchId, files, diffstat}, with the library's names. */
  toJSON(): any;
  /** Write the base tree with the patch applied as a gzip tar (replaced atomically). */
  saveTree(path: string): void;
  /** Write that tree as files under dir (which must not exist, or be empty); on failure nothing is left behind. */
  saveTreeDir(dir: string): void;
  close(): void;
}

export type VerifyScript = 'lint' | 'typecheck' | 'test' | 'build';

export interface VerifyOptions {
  /** A file holding the diff, or the diff's bytes, or an array of them applied in turn; omitted: the base tree alone. */
  patch?: string | Buffer | Uint8Array | Array<string | Buffer | Uint8Array>;
  /** The revision of the project's repository; default HEAD. */
  base?: string;
  /** The package.json scripts to run, those it has (default all four). */
  scripts?: VerifyScript[];
  /** deps.install first; default: when package.json declares dependencies. */
  install?: boolean;
  /** Records the run (it finishes it). */
  transcript?: Transcript;
  /** The run's wall budget in ms (0: none). */
  wallMs?: number;
  onProgress?: RunProgress;
}

/**
 * Verify project (a directory of a git repository: its top, or a project below it, whose paths the patch's are
 * relative to) at base with patch applied: the patch is checked here first
 * (PatchError when it is unsafe or does not apply; nothing is sent), the tree is uploaded into a new sandbox and
 * deps.install and verify.<script> run as one Run. Resolves to its result (sbxrun.run.result/1): a failing script
 * is its verdict, not an exception.
 */
export function verify(client: Client, project: string, opts?: VerifyOptions): Promise<any>;

/** How many handles the package holds now (a leak check for tests). */
export function liveHandles(): number;
