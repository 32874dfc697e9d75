// SPDX-License-Identifier: MIT
// Commands through the official SDK: wait mode, the object form, detached
// commands with wait(), live logs and kill(), and getCommand().
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { APIError, Command, CommandFinished, Sandbox, StreamError } from '@vercel/sandbox';
import { startSbxd } from './sbxd.mjs';

let server;
let sandbox; // one sandbox for the read-mostly tests of this file
before(async () => {
  server = await startSbxd();
  sandbox = await Sandbox.create({ ...server.credentials, timeout: 300_000, env: { COMPAT_SANDBOX_ENV: 'from-create' } });
});
after(async () => {
  await sandbox?.stop().catch(() => {});
  await server?.stop();
});

/** A test whose failure message shows the SDK's last requests and sbxd's answers. */
function it(name, fn) {
  test(name, { timeout: 60_000 }, (t) => server.traced(fn)(t));
}

it('runCommand, wait mode: exit code, stdout(), stderr() and output()', async () => {
  // The sleep keeps the two streams' order certain for output().
  const r = await sandbox.runCommand('sh', ['-c', 'echo out; sleep 0.2; echo err >&2; exit 3']);
  assert.ok(r instanceof CommandFinished);
  assert.equal(r.exitCode, 3);
  assert.equal(typeof r.cmdId, 'string');
  assert.equal(await r.stdout(), 'out\n');
  assert.equal(await r.stderr(), 'err\n');
  assert.equal(await r.output(), 'out\nerr\n');
  assert.equal(await r.output('stdout'), 'out\n');
  assert.equal(await r.output('both'), 'out\nerr\n');
  // wait() on a finished command is the command itself.
  assert.equal(await r.wait(), r);
});

it('runCommand, wait mode: args are passed verbatim, without a shell', async () => {
  const r = await sandbox.runCommand('printf', ['%s|', 'two words', '$HOME', '*', '']);
  assert.equal(r.exitCode, 0);
  assert.equal(await r.stdout(), 'two words|$HOME|*||');
});

it('runCommand, wait mode: runs in the sandbox cwd by default, as the unprivileged user', async () => {
  const r = await sandbox.runCommand('sh', ['-c', 'pwd; id -u']);
  assert.equal(r.exitCode, 0);
  assert.equal(r.cwd, '/vercel/sandbox');
  assert.equal(await r.stdout(), '/vercel/sandbox\n1000\n');
});

it('runCommand, wait mode: object form with cmd, args, cwd, env and sudo', async () => {
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
  const plain = await sandbox.runCommand({ cmd: 'id', args: ['-u'], sudo: false });
  assert.equal(await plain.stdout(), '1000\n');
});

it('runCommand, wait mode: stdout/stderr writables receive the output while it runs', async () => {
  const { Writable } = await import('node:stream');
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
});

it('runCommand, wait mode: large and multi-byte output arrives intact', async () => {
  // ~1.2 MB of lines, plus UTF-8 text that chunking must not split.
  const r = await sandbox.runCommand('sh', ['-c', 'seq 1 200000; printf "héllo wörld ✓ 日本語\\n"']);
  assert.equal(r.exitCode, 0);
  const out = await r.stdout();
  const lines = out.split('\n');
  assert.equal(lines[0], '1');
  assert.equal(lines[199_999], '200000');
  assert.equal(lines[200_000], 'héllo wörld ✓ 日本語');
});

it('runCommand, wait mode: a program that does not exist does not hang', async () => {
  // sbxd finishes it with 127 (shell convention); a 4xx would be fine too.
  const outcome = await sandbox.runCommand('/no/such/program', []).then(
    (r) => r.exitCode,
    (err) => (err instanceof APIError ? err.response.status : err),
  );
  assert.ok(outcome === 127 || (outcome >= 400 && outcome < 500), `outcome ${outcome}`);
});

it('runCommand, wait mode: several commands at once on one sandbox', async () => {
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) => sandbox.runCommand('sh', ['-c', `sleep 0.3; echo job ${i}; exit ${i}`])),
  );
  for (const [i, r] of results.entries()) {
    assert.equal(r.exitCode, i);
    assert.equal(await r.stdout(), `job ${i}\n`);
  }
  assert.equal(new Set(results.map((r) => r.cmdId)).size, 6);
});

it('runCommand, detached: returns at once; wait() gives the exit code and output stays readable', async () => {
  const cmd = await sandbox.runCommand({ cmd: 'sh', args: ['-c', 'sleep 0.5; echo done; exit 7'], detached: true });
  assert.ok(cmd instanceof Command);
  assert.ok(!(cmd instanceof CommandFinished));
  assert.equal(cmd.exitCode, null);
  const finished = await cmd.wait();
  assert.ok(finished instanceof CommandFinished);
  assert.equal(finished.exitCode, 7);
  assert.equal(finished.cmdId, cmd.cmdId);
  assert.equal(await finished.stdout(), 'done\n');
  // logs() after the end replays everything.
  assert.equal(await cmd.stdout(), 'done\n');
});

it('runCommand, detached: logs() yields lines before the command ends', async () => {
  // The command prints, then waits for a file the test writes only after
  // it has seen the first line: the first line must arrive while the
  // command is still running.
  const cmd = await sandbox.runCommand({
    cmd: 'sh',
    args: ['-c', 'echo first; while [ ! -e /tmp/compat-go ]; do sleep 0.05; done; echo second; echo oops >&2'],
    detached: true,
  });
  const seen = [];
  let text = '';
  for await (const log of cmd.logs()) {
    seen.push(log);
    text += log.data;
    if (seen.length === 1) {
      assert.equal(log.stream, 'stdout');
      assert.match(log.data, /^first/);
      const now = await sandbox.getCommand(cmd.cmdId);
      assert.equal(now.exitCode, null, 'the command must still be running');
      await sandbox.writeFiles([{ path: '/tmp/compat-go', content: Buffer.from('') }]);
    }
  }
  assert.equal(text, 'first\nsecond\noops\n');
  assert.deepEqual([...new Set(seen.map((l) => l.stream))].sort(), ['stderr', 'stdout']);
  assert.equal((await cmd.wait()).exitCode, 0);
});

it('runCommand, detached: kill() stops it (SIGTERM by default); the exit code follows', async () => {
  const cmd = await sandbox.runCommand({ cmd: 'sleep', args: ['60'], detached: true });
  const started = Date.now();
  await cmd.kill();
  const finished = await cmd.wait();
  assert.ok(Date.now() - started < 10_000);
  assert.equal(finished.exitCode, 143);
});

it('runCommand, detached: kill("SIGKILL") while a logs() reader follows the command', async () => {
  const cmd = await sandbox.runCommand({
    cmd: 'sh',
    args: ['-c', 'trap "" TERM; echo ready; while :; do sleep 0.1; done'],
    detached: true,
  });
  const logs = cmd.logs();
  const first = await logs.next();
  assert.equal(first.value.data, 'ready\n');
  await cmd.kill('SIGKILL');
  // The reader ends with the command.
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

it('getCommand: returns a running command, then the finished one', async () => {
  const cmd = await sandbox.runCommand({
    cmd: 'sh',
    args: ['-c', 'echo hi; while [ ! -e /tmp/compat-getcommand ]; do sleep 0.05; done'],
    detached: true,
  });
  const running = await sandbox.getCommand(cmd.cmdId);
  assert.ok(running instanceof Command);
  assert.equal(running.cmdId, cmd.cmdId);
  assert.equal(running.exitCode, null);
  assert.equal(running.cwd, '/vercel/sandbox');
  assert.equal(running.startedAt, cmd.startedAt);
  await sandbox.writeFiles([{ path: '/tmp/compat-getcommand', content: Buffer.from('') }]);
  assert.equal((await running.wait()).exitCode, 0);
  const done = await sandbox.getCommand(cmd.cmdId);
  assert.equal(done.exitCode, 0);
  assert.equal(await done.stdout(), 'hi\n');
});

it('getCommand: of an unknown id rejects with a 404 APIError', async () => {
  await assert.rejects(
    sandbox.getCommand('cmd_doesnotexist00000000'),
    (err) => err instanceof APIError && err.response.status === 404,
  );
});

it('commands and stop: stopping the sandbox ends a detached command; later commands reject', async () => {
  const own = await Sandbox.create({ ...server.credentials, timeout: 60_000 });
  try {
    const cmd = await own.runCommand({ cmd: 'sh', args: ['-c', 'echo up; sleep 60'], detached: true });
    const waiting = cmd.wait();
    const logs = cmd.logs();
    assert.equal((await logs.next()).value.data, 'up\n');
    const ended = (async () => { for await (const _ of logs); })().then(() => null, (err) => err);
    await own.stop();
    // A log reader learns why the output ended: a StreamError.
    const err = await ended;
    assert.ok(err instanceof StreamError, `logs() ended with ${err}`);
    assert.equal(typeof err.code, 'string');
    const finished = await waiting;
    assert.equal(typeof finished.exitCode, 'number');
    assert.notEqual(finished.exitCode, 0);
    await assert.rejects(
      own.runCommand('true'),
      (err) => err instanceof APIError && err.response.status >= 400 && err.response.status < 500,
    );
  } finally {
    await own.stop().catch(() => {});
  }
});
