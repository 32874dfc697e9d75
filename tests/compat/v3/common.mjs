// SPDX-License-Identifier: MIT
//
// Shared by the 3.x test files (v3/*.test.mjs): one sbxd per file, started
// for SDK 3.5.0 (the `sdk3` npm alias), and the small helpers the files
// share. Not a test file itself (node --test runs only *.test.mjs).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { APIError } from 'sdk3';
import { startSbxd } from '../sbxd.mjs';

export { readAll } from '../sbxd.mjs';

export const STATUSES = ['pending', 'running', 'stopping', 'stopped', 'failed', 'aborted', 'snapshotting'];

/**
 * Starts a private sbxd for this test file (before all tests, stopped after
 * them) and returns a context: `ctx.server` once started; `ctx.it`, a test
 * whose failure message shows the SDK's last requests and sbxd's answers;
 * `ctx.atStart(fn)`, to run fn once sbxd is up, before the tests;
 * `ctx.atEnd(fn)`, to run fn after the tests but before sbxd stops.
 * (One hook each: Node 20 runs a file's top-level before/after hooks
 * concurrently, not one after the other.)
 */
export function useSbxd({ timeout = 60_000 } = {}) {
  const ctx = {};
  const atStart = [];
  const atEnd = [];
  ctx.atStart = (fn) => atStart.push(fn);
  ctx.atEnd = (fn) => atEnd.push(fn);
  before(async () => {
    ctx.server = await startSbxd({ sdk: 'sdk3' });
    for (const fn of atStart) await fn();
  });
  after(async () => {
    for (const fn of atEnd) await Promise.resolve().then(fn).catch(() => {});
    await ctx.server?.stop();
  });
  ctx.it = (name, fn, opts = {}) =>
    test(name, { timeout, ...opts }, (t) => ctx.server.traced(fn)(t));
  return ctx;
}

/** A sandbox name no other test uses: `<prefix>-<8 hex>`. */
export function uniqueName(prefix) {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** Credentials with a project of their own (lists then show only this test's objects). */
export function ownProject(server) {
  return { ...server.credentials, projectId: `prj_${randomUUID().replaceAll('-', '')}` };
}

/**
 * A predicate for assert.rejects: an APIError with this HTTP status (a number,
 * or a function of the status) and, when given, a message matching `message`.
 * It also checks that the SDK put the server's error.message into the
 * APIError's message ("Status code N is not ok: <message>").
 */
export function apiError(status, message) {
  return (err) => {
    assert.ok(err instanceof APIError, `expected an APIError, got ${err?.stack ?? err}`);
    const got = err.response?.status;
    if (typeof status === 'function') assert.ok(status(got), `unexpected HTTP status ${got}`);
    else assert.equal(got, status, `HTTP status (message: ${err.message})`);
    const serverMessage = err.json?.error?.message;
    assert.equal(typeof serverMessage, 'string', `the error body should carry error.message: ${err.text}`);
    assert.ok(serverMessage.length > 0);
    assert.equal(typeof err.json.error.code, 'string', `the error body should carry error.code: ${err.text}`);
    assert.equal(err.message, `Status code ${got} is not ok: ${serverMessage}`);
    if (message !== undefined) assert.match(err.message, message);
    return true;
  };
}

export const is4xx = (s) => s >= 400 && s < 500;

/**
 * The refusal of an optional feature sbxd does not implement: HTTP 400,
 * error code "not_supported", and a message that names the feature.
 */
export function notSupported(feature) {
  return (err) => {
    apiError(400, feature)(err);
    assert.equal(err.json.error.code, 'not_supported');
    return true;
  };
}

/** Stops sandboxes at the end of a test, whatever state they are in. */
export async function cleanup(...sandboxes) {
  for (const s of sandboxes) {
    try {
      if (s && ['pending', 'running'].includes(s.status)) await s.stop();
    } catch {}
  }
}

/** Lets the recorder's response-body clones settle (see sbxd.mjs requestsSince). */
export function settle() {
  return new Promise((resolve) => setTimeout(resolve, 20));
}

/** "METHOD /path?query" of each exchange, for deepEqual on a request sequence. */
export function lines(exchanges) {
  return exchanges.map((e) => `${e.method} ${e.path}`);
}

/** The request body of an exchange, parsed as JSON (undefined when there was none). */
export function bodyOf(exchange) {
  return exchange.requestBody === undefined ? undefined : JSON.parse(exchange.requestBody);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls Sandbox.get until `pred(sandbox)` holds or `ms` pass; returns the last one. */
export async function pollGet(Sandbox, params, pred, ms = 15_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = await Sandbox.get(params);
    if (pred(got) || Date.now() > deadline) return got;
    await sleep(200);
  }
}
