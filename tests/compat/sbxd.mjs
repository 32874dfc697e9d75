// SPDX-License-Identifier: MIT
//
// Starts a private sbxd for a test file and points an official
// @vercel/sandbox SDK at it without changing the SDK: explicit credentials
// plus a custom `fetch` that rewrites the SDK's fixed base URL
// (https://vercel.com/api) to sbxd's. See README.md.
//
//   const server = await startSbxd();                  // 1.x: '@vercel/sandbox'
//   const server = await startSbxd({ sdk: 'sdk3' });   // 3.x: the 'sdk3' alias
//   const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000 });
//   ...
//   await server.stop();
//
// Every request the SDK makes is recorded (server.exchanges); traced() adds
// the last few to a failing test's error, so a failure shows the exact
// request and sbxd's answer.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const VERCEL_API = 'https://vercel.com/api';

// The SDK hands its own undici Agent (from the `undici` npm package, with
// bodyTimeout 0 for long polls and log streams) to fetch as `dispatcher`.
// Node's global fetch comes from a different undici and must not get it, so
// the rewritten request goes through `fetch` of the very undici the SDK
// imports: resolved from the SDK's own location, it is the same module
// instance, and the Agent is used as intended. Each SDK (the 1.x package and
// the 3.x alias `sdk3`) gets the undici its own location resolves to, so the
// two keep working should their undici ever differ.
const require = createRequire(import.meta.url);
const undiciBySdk = new Map();

/** `fetch` and `Dispatcher` of the undici the given SDK package imports. */
export function undiciOf(sdk = '@vercel/sandbox') {
  let u = undiciBySdk.get(sdk);
  if (!u) {
    const sdkRequire = createRequire(require.resolve(sdk));
    const { fetch, Dispatcher } = sdkRequire('undici');
    u = { fetch, Dispatcher };
    undiciBySdk.set(sdk, u);
  }
  return u;
}

const READY_TIMEOUT_MS = 20_000;
const KEEP_EXCHANGES = 400;

function sbxdPath() {
  const p = process.env.SBXD;
  if (!p)
    throw new Error('SBXD is not set: run the suite through run.sh, or set SBXD=/path/to/build/tools/sbxd/sbxd');
  return p;
}

// Node's TAP reporter prints an error message inside a YAML block, and
// meson's TAP parser ends that block at the first blank line (the rest would
// be "unknown TAP lines"), so messages this file builds have none.
function noBlankLines(text) {
  return text.replace(/\n[ \t]*(?=\n)/g, '');
}

function pathOf(url) {
  const u = new URL(url);
  return u.pathname + u.search;
}

function describeBody(body) {
  if (body == null) return undefined;
  if (typeof body === 'string') return body.length > 600 ? `${body.slice(0, 600)}…` : body;
  const n = body.byteLength ?? body.length;
  return `<${n ?? '?'} bytes of ${body.constructor?.name ?? typeof body}>`;
}

/**
 * Starts sbxd on 127.0.0.1:0 with a fresh state directory.
 * Options: extraArgs (array of sbxd arguments), logLevel (default 'debug'),
 * sdk (the package name the test imports the SDK from: '@vercel/sandbox',
 * the default, for 1.10.2, or 'sdk3' for 3.5.0; it decides which undici
 * the rewritten requests go through).
 */
export async function startSbxd({ extraArgs = [], logLevel = 'debug', sdk = '@vercel/sandbox' } = {}) {
  const { fetch: undiciFetch, Dispatcher } = undiciOf(sdk);
  const stateDir = await mkdtemp(join(tmpdir(), 'sbxd-compat-'));
  const args = ['--listen', '127.0.0.1:0', '--state-dir', stateDir, '--log-level', logLevel, ...extraArgs];
  const child = spawn(sbxdPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => {
    stderr += d;
    if (stderr.length > 4_000_000) stderr = stderr.slice(-2_000_000);
  });
  // 'error' without 'exit' when the program cannot be started at all.
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
  });

  let baseUrl;
  try {
    baseUrl = await new Promise((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`sbxd did not print its listening line within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (d) => {
        out += d;
        const m = /^sbxd listening on (http:\/\/127\.0\.0\.1:\d+)\n/m.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      exited.then(({ code, signal, error }) => {
        clearTimeout(timer);
        reject(error ?? new Error(`sbxd exited (code ${code}, signal ${signal}) before listening`));
      });
    });
  } catch (err) {
    child.kill('SIGKILL');
    await exited;
    await rm(stateDir, { recursive: true, force: true });
    err.message = noBlankLines(`${err.message}\n--- sbxd stderr ---\n${stderr}`);
    throw err;
  }
  child.stdout.resume(); // nothing more is expected; never let the pipe fill
  // If this process dies without calling stop() (a runner timeout), do not
  // leave sbxd and its sandboxes behind.
  const onExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    try { rmSync(stateDir, { recursive: true, force: true }); } catch {}
  };
  process.once('exit', onExit);

  const token = (await readFile(join(stateDir, 'token'), 'utf8')).trim();
  const exchanges = []; // the last KEEP_EXCHANGES
  let sent = 0; // all of them
  const failFast = new Set();

  /** The fetch given to the SDK: https://vercel.com/api/... → sbxd. */
  async function sbxdFetch(input, init = {}) {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith(`${VERCEL_API}/`))
      throw new Error(`the SDK asked for ${url}, outside ${VERCEL_API}`);
    const target = baseUrl + url.slice(VERCEL_API.length);
    const entry = {
      method: init.method ?? 'GET',
      path: pathOf(target),
      requestHeaders: { ...(init.headers ?? {}) },
      requestBody: describeBody(init.body),
    };
    if (entry.requestHeaders.Authorization) entry.requestHeaders.Authorization = 'Bearer <token>';
    exchanges.push(entry);
    sent++;
    if (exchanges.length > KEEP_EXCHANGES) exchanges.shift();
    try {
      // Should the SDK ever bring a second copy of undici, its Agent would
      // not be ours: leave it out rather than mix two undici versions.
      const sdkInit = init.dispatcher && !(init.dispatcher instanceof Dispatcher)
        ? { ...init, dispatcher: undefined }
        : init;
      const res = await undiciFetch(target, sdkInit);
      entry.status = res.status;
      entry.contentType = res.headers.get('content-type');
      // Keep the body of plain JSON answers (streams and file contents are
      // read by the SDK as they come; a tee would only buffer them).
      if (entry.contentType?.startsWith('application/json')) {
        res.clone().text().then(
          (t) => { entry.responseBody = t.length > 1500 ? `${t.slice(0, 1500)}…` : t; },
          () => {},
        );
      }
      return res;
    } catch (err) {
      entry.error = String(err?.cause ?? err);
      for (const ac of failFast) {
        ac.abort(new Error(`sbxd answered ${entry.method} ${entry.path} with a network error (${entry.error}) ` +
                           'instead of an HTTP response; the SDK would retry it (5 times in 1.x, twice in 3.x), then throw it'));
      }
      failFast.clear();
      throw err;
    }
  }

  /**
   * An AbortSignal for an SDK call whose test expects an HTTP answer: it
   * aborts the call at the first network error (a connection sbxd closed),
   * so the test fails at once with that cause instead of after the SDK's
   * retries (~15-30 s in 1.x, a few seconds in 3.x).
   */
  function failFastSignal() {
    const ac = new AbortController();
    failFast.add(ac);
    return ac.signal;
  }

  const credentials = { token, teamId: 'team_compat', projectId: 'prj_compat', fetch: sbxdFetch };

  let stopped = false;
  async function stop() {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(stateDir, { recursive: true, force: true });
    process.removeListener('exit', onExit);
  }

  /**
   * Runs fn with globalThis.fetch replaced by the rewriting fetch. Needed for
   * Snapshot.get, which builds its API client without the caller's fetch
   * (the client captures the function when it is built, so a Snapshot it
   * returns keeps working after the original fetch is back).
   */
  async function withGlobalFetch(fn) {
    const saved = globalThis.fetch;
    globalThis.fetch = sbxdFetch;
    try {
      return await fn();
    } finally {
      globalThis.fetch = saved;
    }
  }

  /** The last n exchanges, one per line, for error messages. */
  function trace(n = 12) {
    return exchanges.slice(-n).map((e) => {
      let s = `${e.method} ${e.path}`;
      if (e.requestBody !== undefined) s += `\n    request body: ${e.requestBody}`;
      if (e.error) return `${s}\n    -> network error: ${e.error}`;
      s += `\n    -> ${e.status} ${e.contentType ?? '(no content-type)'}`;
      if (e.responseBody !== undefined) s += `\n    response body: ${e.responseBody}`;
      return s;
    }).join('\n');
  }

  /**
   * Wraps a test body: on failure the error message gains the last SDK
   * requests with sbxd's answers, and the SDK error's own details.
   */
  function traced(fn) {
    return async (t) => {
      const mark = sent;
      try {
        return await fn(t);
      } catch (err) {
        const details = [];
        if (err?.json !== undefined) details.push(`SDK error json: ${JSON.stringify(err.json)}`);
        else if (err?.text) details.push(`SDK error text: ${err.text}`);
        if (err?.response?.status) details.push(`SDK error status: ${err.response.status} ${err.response.url ?? ''}`);
        const n = Math.max(1, Math.min(15, sent - mark));
        details.push(`last SDK requests:\n${trace(n)}`);
        if (err instanceof Error) {
          err.message = noBlankLines(`${err.message}\n${details.join('\n')}`);
        }
        throw err;
      }
    };
  }

  return {
    url: baseUrl,
    token,
    stateDir,
    credentials,
    fetch: sbxdFetch,
    exchanges,
    /** How many requests the SDK has made so far. */
    get requestCount() { return sent; },
    /**
     * The exchanges recorded since `mark` (a requestCount read earlier),
     * oldest first: { method, path, requestHeaders, requestBody, status,
     * contentType, responseBody? }. A JSON answer's body arrives a little
     * after the status, so read responseBody only once the SDK call is done.
     */
    requestsSince(mark) {
      const n = sent - mark;
      return n <= 0 ? [] : exchanges.slice(-Math.min(n, exchanges.length));
    },
    get stderr() { return stderr; },
    stop,
    withGlobalFetch,
    failFastSignal,
    trace,
    traced,
  };
}

/** Reads a Node Readable (as returned by sandbox.readFile) into a Buffer. */
export async function readAll(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}
