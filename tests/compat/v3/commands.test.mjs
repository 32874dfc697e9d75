// SPDX-License-Identifier: MIT
// SDK 3.5.0: commands. Wait mode with the output carried inline in the
// command stream ("logs": true), the object form, detached commands with
// wait(), logs() and kill(), getCommand(), and per-command timeouts
// (timeoutMs: the server kills the command with SIGKILL, exit 137).
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { Command, CommandFinished, Sandbox, StreamError } from 'sdk3';
import { apiError, bodyOf, cleanup, lines, sleep, useSbxd } from './common.mjs';

const ctx = useSbxd();
const it = ctx.it;

let sandbox; // one sandbox for the read-mostly tests of this file
let sid;
ctx.atStart(async () => {
  sandbox = await Sandbox.create({
    ...ctx.server.credentials,
    timeout: 300_000,
    env: { COMPAT_SANDBOX_ENV: 'from-create' },
  });
  sid = sandbox.currentSession().sessionId;
});
ctx.atEnd(() => cleanup(sandbox));

const cmdPath = () => `/v2/sandboxes/sessions/${sid}/cmd`;

it('runCommand, wait mode: one request; exit code and output from the inline log lines', async () => {
  const { server } = ctx;
  const mark = server.requestCount;
  // The sleep keeps the two streams' order certain.
  const r = await sandbox.runCommand('sh', ['-c', 'echo out; sleep 0.2; echo err >&2; exit 3']);
  assert.ok(r instanceof CommandFinished);
  assert.equal(r.exitCode, 3);
  assert.equal(typeof r.cmdId, 'string');
  assert.equal(r.cwd, '/vercel/sandbox');
  assert.equal(typeof r.startedAt, 'number');
  if (r.durationMs !== undefined) assert.ok(Number.isFinite(r.durationMs) && r.durationMs >= 0);
  assert.equal(await r.stdout(), 'out\n');
  assert.equal(await r.stderr(), 'err\n');
  assert.equal(await r.output(), 'out\nerr\n');
  assert.equal(await r.output('stdout'), 'out\n');
  assert.equal(await r.output('both'), 'out\nerr\n');
  assert.equal(await r.wait(), r);

  // Exactly one request: the command stream carried the output. The SDK
  // never asks /logs for a waited command, so a server that does not send
  // the log lines inline leaves the caller with empty output.
  const reqs = server.requestsSince(mark);
  assert.deepEqual(lines(reqs), [`POST ${cmdPath()}?teamId=team_compat`]);
  assert.deepEqual(bodyOf(reqs[0]), {
    command: 'sh',
    args: ['-c', 'echo out; sleep 0.2; echo err >&2; exit 3'],
    env: {},
    sudo: false,
    wait: true,
    logs: true,
  });
  assert.equal(reqs[0].status, 200);
  assert.equal(reqs[0].contentType, 'application/x-ndjson');
});

it('runCommand, wait mode: output() is stdout then stderr, whatever order they were written in', async () => {
  const r = await sandbox.runCommand('sh', ['-c', 'echo first-err >&2; sleep 0.1; echo then-out']);
  assert.equal(r.exitCode, 0);
  assert.equal(await r.stdout(), 'then-out\n');
  assert.equal(await r.stderr(), 'first-err\n');
  assert.equal(await r.output(), 'then-out\nfirst-err\n');
});

it('runCommand, wait mode: args are passed verbatim, without a shell', async () => {
  const r = await sandbox.runCommand('printf', ['%s|', 'two words', '$HOME', '*', '', "it's", '"q"', '\\n']);
  assert.equal(r.exitCode, 0);
  assert.equal(await r.stdout(), 'two words|$HOME|*||it\'s|"q"|\\n|');
});

it('runCommand, wait mode: object form with cmd, args, cwd, env and sudo', async () => {
  const { server } = ctx;
  const mark = server.requestCount;
  const r = await sandbox.runCommand({
    cmd: 'sh',
    args: ['-c', 'printf "%s %s %s %s" "$(pwd)" "$(id -u)" "$COMPAT_VAR" "$COMPAT_SANDBOX_ENV"'],
    cwd: '/tmp',
    env: { COMPAT_VAR: 'from-command' },
    sudo: true,
  });
  assert.equal(r.exitCode, 0);
  assert.equal(r.cwd, '/tmp');
  assert.equal(await r.stdout(), '/tmp 0 from-command from-create');
  assert.deepEqual(bodyOf(server.requestsSince(mark)[0]), {
    command: 'sh',
    args: ['-c', 'printf "%s %s %s %s" "$(pwd)" "$(id -u)" "$COMPAT_VAR" "$COMPAT_SANDBOX_ENV"'],
    cwd: '/tmp',
    env: { COMPAT_VAR: 'from-command' },
    sudo: true,
    wait: true,
    logs: true,
  });
  // Without sudo: the sandbox's unprivileged user, in the session's cwd.
  const plain = await sandbox.runCommand({ cmd: 'sh', args: ['-c', 'id -u; pwd'], sudo: false });
  const [uid, cwd] = (await plain.stdout()).split('\n');
  assert.notEqual(uid, '0');
  assert.match(uid, /^\d+$/);
  assert.equal(cwd, sandbox.cwd);
});

it('runCommand, wait mode: stdout/stderr writables receive the inline output', async () => {
  const sink = () => {
    const w = new Writable({ write(chunk, _enc, cb) { w.text += chunk; cb(); } });
    w.text = '';
    return w;
  };
  const out = sink();
  const err = sink();
  const r = await sandbox.runCommand({ cmd: 'sh', args: ['-c', 'echo to-out; echo to-err >&2'], stdout: out, stderr: err });
  assert.equal(r.exitCode, 0);
  assert.equal(out.text, 'to-out\n');
  assert.equal(err.text, 'to-err\n');
  assert.equal(await r.stdout(), 'to-out\n');
});

it('runCommand, wait mode: large and multi-byte output arrives intact', async () => {
  const r = await sandbox.runCommand('sh', ['-c', 'seq 1 200000; printf "héllo wörld ✓ 日本語\\n"; seq 1 1000 >&2']);
  assert.equal(r.exitCode, 0);
  const out = (await r.stdout()).split('\n');
  assert.equal(out.length, 200_002);
  assert.equal(out[0], '1');
  assert.equal(out[199_999], '200000');
  assert.equal(out[200_000], 'héllo wörld ✓ 日本語');
  const err = (await r.stderr()).split('\n');
  assert.equal(err.length, 1001);
  assert.equal(err[999], '1000');
});

it('runCommand, wait mode: several commands at once on one session', async () => {
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) => sandbox.runCommand('sh', ['-c', `sleep 0.3; echo job ${i}; exit ${i}`])),
  );
  for (const [i, r] of results.entries()) {
    assert.equal(r.exitCode, i);
    assert.equal(await r.stdout(), `job ${i}\n`);
  }
  assert.equal(new Set(results.map((r) => r.cmdId)).size, 6);
});

it('runCommand, wait mode: timeoutMs kills the command with SIGKILL (exit 137), output so far kept', async () => {
  const { server } = ctx;
  const mark = server.requestCount;
  const started = Date.now();
  const r = await sandbox.runCommand('sh', ['-c', 'echo before; exec sleep 30'], { timeoutMs: 1_500 });
  const took = Date.now() - started;
  assert.equal(r.exitCode, 137);
  assert.ok(took >= 1_400, `killed after ${took} ms, before its timeout`);
  assert.ok(took < 15_000, `killed only after ${took} ms`);
  assert.equal(await r.stdout(), 'before\n');
  assert.deepEqual(bodyOf(server.requestsSince(mark)[0]), {
    command: 'sh',
    args: ['-c', 'echo before; exec sleep 30'],
    env: {},
    sudo: false,
    wait: true,
    logs: true,
    timeout: 1_500,
  });
  // A command that ends in time is not affected; the object form works too.
  const ok = await sandbox.runCommand({ cmd: 'sh', args: ['-c', 'sleep 0.2; echo in time'], timeoutMs: 10_000 });
  assert.equal(ok.exitCode, 0);
  assert.equal(await ok.stdout(), 'in time\n');
  // A command that ignores SIGTERM still goes: it is SIGKILL.
  const stubborn = await sandbox.runCommand({
    cmd: 'sh', args: ['-c', 'trap "" TERM; while :; do sleep 0.1; done'], timeoutMs: 1_000,
  });
  assert.equal(stubborn.exitCode, 137);
});

it('runCommand, detached: returns at once; wait() gives the exit code; output comes from /logs', async () => {
  const { server } = ctx;
  const mark = server.requestCount;
  const cmd = await sandbox.runCommand({ cmd: 'sh', args: ['-c', 'sleep 0.5; echo done; echo warn >&2; exit 7'], detached: true });
  assert.ok(cmd instanceof Command);
  assert.ok(!(cmd instanceof CommandFinished));
  assert.equal(cmd.exitCode, null);
  const [req] = server.requestsSince(mark);
  assert.deepEqual(bodyOf(req), {
    command: 'sh', args: ['-c', 'sleep 0.5; echo done; echo warn >&2; exit 7'], env: {}, sudo: false,
  });
  assert.match(req.contentType, /^application\/json/);

  const m2 = server.requestCount;
  const finished = await cmd.wait();
  assert.deepEqual(lines(server.requestsSince(m2)), [`GET ${cmdPath()}/${cmd.cmdId}?teamId=team_compat&wait=true`]);
  assert.ok(finished instanceof CommandFinished);
  assert.equal(finished.exitCode, 7);
  assert.equal(finished.cmdId, cmd.cmdId);
  const m3 = server.requestCount;
  assert.equal(await finished.stdout(), 'done\n');
  assert.equal(await finished.stderr(), 'warn\n');
  assert.deepEqual(lines(server.requestsSince(m3)), [`GET ${cmdPath()}/${cmd.cmdId}/logs?teamId=team_compat`]);
  // The command object itself replays its logs too.
  assert.equal(await cmd.output(), 'done\nwarn\n');
});

it('runCommand, detached: logs() yields lines before the command ends', async () => {
  const cmd = await sandbox.runCommand({
    cmd: 'sh',
    args: ['-c', 'echo first; while [ ! -e /tmp/compat3-go ]; do sleep 0.05; done; echo second; echo oops >&2'],
    detached: true,
  });
  const seen = [];
  for await (const log of cmd.logs()) {
    seen.push(log);
    if (seen.length === 1) {
      assert.deepEqual(log, { stream: 'stdout', data: 'first\n' });
      const now = await sandbox.getCommand(cmd.cmdId);
      assert.equal(now.exitCode, null, 'the command must still be running');
      await sandbox.writeFiles([{ path: '/tmp/compat3-go', content: Buffer.from('') }]);
    }
  }
  assert.equal(seen.map((l) => l.data).join(''), 'first\nsecond\noops\n');
  assert.deepEqual(seen.filter((l) => l.stream === 'stderr').map((l) => l.data), ['oops\n']);
  assert.equal((await cmd.wait()).exitCode, 0);
});

it('runCommand, detached: kill() sends SIGTERM (exit 143) on the cmd/{id}/kill route', async () => {
  const { server } = ctx;
  const cmd = await sandbox.runCommand({ cmd: 'sleep', args: ['60'], detached: true });
  const started = Date.now();
  const mark = server.requestCount;
  await cmd.kill();
  const [req] = server.requestsSince(mark);
  assert.equal(`${req.method} ${req.path}`, `POST ${cmdPath()}/${cmd.cmdId}/kill?teamId=team_compat`);
  assert.deepEqual(bodyOf(req), { signal: 15 });
  assert.equal(req.status, 200);
  const finished = await cmd.wait();
  assert.ok(Date.now() - started < 10_000);
  assert.equal(finished.exitCode, 143);
});

it('runCommand, detached: kill("SIGKILL") (exit 137) ends a logs() reader', async () => {
  const cmd = await sandbox.runCommand({
    cmd: 'sh',
    args: ['-c', 'trap "" TERM; echo ready; while :; do sleep 0.1; done'],
    detached: true,
  });
  const logs = cmd.logs();
  const first = await logs.next();
  assert.deepEqual(first.value, { stream: 'stdout', data: 'ready\n' });
  await cmd.kill('SIGKILL');
  const rest = [];
  for await (const l of logs) rest.push(l);
  assert.deepEqual(rest, []);
  assert.equal((await cmd.wait()).exitCode, 137);
});

it('runCommand, detached: kill() of a finished command is harmless', async () => {
  const cmd = await sandbox.runCommand({ cmd: 'true', detached: true });
  await cmd.wait();
  await cmd.kill();
  assert.equal((await cmd.wait()).exitCode, 0);
});

it('runCommand, detached: timeoutMs kills it with SIGKILL (exit 137) whether or not anyone waits', async () => {
  const { server } = ctx;
  const mark = server.requestCount;
  const started = Date.now();
  const cmd = await sandbox.runCommand({ cmd: 'sh', args: ['-c', 'echo up; exec sleep 30'], detached: true, timeoutMs: 1_500 });
  assert.deepEqual(bodyOf(server.requestsSince(mark)[0]), {
    command: 'sh', args: ['-c', 'echo up; exec sleep 30'], env: {}, sudo: false, timeout: 1_500,
  });
  assert.equal(cmd.exitCode, null);
  // Nobody waits: the command must still be gone after its timeout.
  await sleep(3_000);
  const later = await sandbox.getCommand(cmd.cmdId);
  assert.equal(later.exitCode, 137);
  assert.equal((await cmd.wait()).exitCode, 137);
  assert.ok(Date.now() - started < 20_000);
  assert.equal(await cmd.stdout(), 'up\n');

  // And through wait(), with the logs followed meanwhile.
  const other = await sandbox.runCommand({ cmd: 'sleep', args: ['30'], detached: true, timeoutMs: 1_000 });
  const t0 = Date.now();
  const [finished, logs] = await Promise.all([
    other.wait(),
    (async () => { const all = []; for await (const l of other.logs()) all.push(l); return all; })(),
  ]);
  assert.equal(finished.exitCode, 137);
  assert.deepEqual(logs, []);
  assert.ok(Date.now() - t0 < 15_000);
});

it('getCommand: returns a running command, then the finished one', async () => {
  const { server } = ctx;
  const cmd = await sandbox.runCommand({
    cmd: 'sh',
    args: ['-c', 'echo hi; while [ ! -e /tmp/compat3-getcommand ]; do sleep 0.05; done'],
    detached: true,
  });
  const mark = server.requestCount;
  const running = await sandbox.getCommand(cmd.cmdId);
  assert.deepEqual(lines(server.requestsSince(mark)), [`GET ${cmdPath()}/${cmd.cmdId}?teamId=team_compat`]);
  assert.ok(running instanceof Command);
  assert.ok(!(running instanceof CommandFinished));
  assert.equal(running.cmdId, cmd.cmdId);
  assert.equal(running.exitCode, null);
  assert.equal(running.cwd, '/vercel/sandbox');
  assert.equal(running.startedAt, cmd.startedAt);
  await sandbox.writeFiles([{ path: '/tmp/compat3-getcommand', content: Buffer.from('') }]);
  assert.equal((await running.wait()).exitCode, 0);
  const done = await sandbox.getCommand(cmd.cmdId);
  assert.equal(done.exitCode, 0);
  assert.equal(await done.stdout(), 'hi\n');
  // A waited command can be fetched later too.
  const waited = await sandbox.runCommand('sh', ['-c', 'echo later; exit 4']);
  const again = await sandbox.getCommand(waited.cmdId);
  assert.equal(again.exitCode, 4);
  assert.equal(await again.stdout(), 'later\n');
});

it('getCommand: an unknown id rejects with a 404 APIError', async () => {
  await assert.rejects(sandbox.getCommand('cmd_doesnotexist00000000'), apiError(404));
});

it('commands and stop: a log reader of a stopped session gets a StreamError; the next command resumes', async () => {
  const { server } = ctx;
  const own = await Sandbox.create({ ...server.credentials, timeout: 60_000, persistent: false });
  try {
    const oldSid = own.currentSession().sessionId;
    const cmd = await own.runCommand({ cmd: 'sh', args: ['-c', 'echo up; sleep 60'], detached: true });
    const waiting = cmd.wait();
    const logs = cmd.logs();
    assert.equal((await logs.next()).value.data, 'up\n');
    const ended = (async () => { for await (const _ of logs); })().then(() => null, (err) => err);
    await own.stop();
    const err = await ended;
    assert.ok(err instanceof StreamError, `logs() ended with ${err}`);
    assert.equal(typeof err.code, 'string');
    assert.equal(err.sessionId, oldSid);
    const finished = await waiting;
    assert.equal(typeof finished.exitCode, 'number');
    assert.notEqual(finished.exitCode, 0);
    // A Sandbox method on the stopped session resumes a new one.
    const r = await own.runCommand('echo', ['again']);
    assert.equal(await r.stdout(), 'again\n');
    assert.notEqual(own.currentSession().sessionId, oldSid);
  } finally {
    await cleanup(own);
  }
});
