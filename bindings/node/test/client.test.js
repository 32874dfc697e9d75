// SPDX-License-Identifier: MIT
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const sbxrun = require('..');
const { withClient } = require('../testlib/sbxd');

const DEMO = path.join(__dirname, '..', '..', '..', 'examples', 'demo-project');
const ctx = withClient(test);

test('versions agree, one error class per status', () => {
  assert.equal(sbxrun.libraryVersion(), sbxrun.version);
  let seen = 0;
  for (let code = 1; code < 128; code++) {
    const name = sbxrun._C.sbx_status_name(code);
    if (!name) continue;
    seen++;
    const Cls = sbxrun[sbxrun.className(name)];
    assert.ok(Cls && Cls.prototype instanceof sbxrun.SbxError, name);
  }
  assert.ok(seen >= 22);
  assert.throws(() => new sbxrun.Client({ options: { 'no.such.option': '1' } }),
                (e) => e instanceof sbxrun.UnknownOptionError && /no\.such\.option/.test(e.message) &&
                  e.code === 'SBX_E_UNKNOWN_OPTION');
  assert.throws(() => ctx.client.sandbox({ vcpus: 1000 }), sbxrun.InvalidArgError);
});

test('a sandbox, a command streamed, files', async () => {
  const s = await ctx.client.createSandbox({ timeoutMs: 120000 });
  try {
    const r = await s.run(['sh', '-c', 'echo out; echo err >&2; exit 3']);
    assert.deepEqual([r.exitCode, r.stdout.toString(), r.stderr.toString()], [3, 'out\n', 'err\n']);
    const data = Buffer.from(Array.from({ length: 70000 }, (_, i) => i % 256));
    await s.writeFile('bin.dat', data, 0o600);
    assert.deepEqual(await s.readFile('/vercel/sandbox/bin.dat'), data);
    await assert.rejects(s.readFile('/vercel/sandbox/missing'),
                         (e) => e instanceof sbxrun.NotFoundError && e.httpStatus === 404);
    // output as it arrives: the first line before the command ends
    const cmd = s.spawn(['sh', '-c', 'echo first; sleep 1; echo second']);
    const first = await new Promise((resolve) => cmd.stdout.once('data', resolve));
    assert.equal(first.toString(), 'first\n');
    assert.equal(cmd.exitCode, -1, 'the first line came only with the end');
    assert.equal(await cmd.exited, 0);
    cmd.close();
    await s.stop();
  } finally {
    s.close();
  }
});

test('upload and download report their progress', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxrun-progress-'));
  const s = await ctx.client.createSandbox({ timeoutMs: 120000 });
  try {
    const size = 16 << 20;
    const src = path.join(dir, 'big.bin');
    fs.writeFileSync(src, require('node:crypto').randomBytes(size));
    const up = [];
    await s.upload(src, 'big.bin', { onProgress: (done, total) => up.push([done, total]) });
    const [done, total] = up[up.length - 1];
    // the body is the file as a gzip tar: a little more than the file
    assert.ok(total > size && total < size + size / 50 && done === total, `${done} of ${total}`);
    for (let i = 1; i < up.length; i++) assert.ok(up[i][0] >= up[i - 1][0]);
    const down = [];
    await s.download('big.bin', path.join(dir, 'back.bin'), { onProgress: (d, t) => down.push([d, t]) });
    assert.deepEqual(down[down.length - 1], [size, size]);
    assert.ok(fs.readFileSync(path.join(dir, 'back.bin')).equals(fs.readFileSync(src)));
    // an exception from the callback rejects the transfer with it
    const stop = new Error('stop');
    await assert.rejects(s.download('big.bin', path.join(dir, 'maybe.bin'), { onProgress: () => { throw stop; } }),
                         (e) => e === stop);
    assert.ok(fs.readdirSync(dir).every((n) => ['big.bin', 'back.bin', 'maybe.bin'].includes(n)));
    await assert.rejects(s.upload(src, 'x', { onProgress: 3 }), TypeError);
    await s.stop();
  } finally {
    s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the event loop keeps ticking while a command runs', async () => {
  const s = await ctx.client.createSandbox({ timeoutMs: 120000 });
  try {
    let ticks = 0;
    const timer = setInterval(() => { ticks++; }, 50);
    const r = await s.run(['sleep', '1']);
    clearInterval(timer);
    assert.equal(r.exitCode, 0);
    assert.ok(ticks >= 10, `the loop was blocked: ${ticks} ticks in a 1 s command`);
    // two commands at once: one waits for the file the other makes
    const [a, b] = await Promise.all([
      s.run(['sh', '-c', 'while ! test -e /tmp/flag; do sleep 0.05; done; echo seen']),
      s.run(['sh', '-c', 'sleep 0.3; touch /tmp/flag; echo made']),
    ]);
    assert.deepEqual([a.stdout.toString(), b.stdout.toString()], ['seen\n', 'made\n']);
    await s.stop();
  } finally {
    s.close();
  }
});

test('verify the demo project; its transcript verified, then tampered with', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxrun-node-t-'));
  const file = path.join(dir, 'run.jsonl');
  const tr = new sbxrun.Transcript(file);
  const run = new sbxrun.Run(ctx.client, { transcript: tr, wallMs: 300000 });
  try {
    run.addUpload(DEMO, '/vercel/sandbox');
    run.addJob('verify.test', { inputs: { script: 'test' } });
    run.addJob('verify.lint', { inputs: { script: 'lint' } });
    assert.throws(() => run.addJob('verify.everything'),
                  (e) => e instanceof sbxrun.InvalidArgError && /verify\.everything/.test(e.message));
    const result = await run.execute();
    assert.equal(run.verdict, 'passed', JSON.stringify(result));
    assert.deepEqual(run.jobs.map((j) => j.result.jobType), ['verify.lint', 'verify.test']);
    // a run that has started takes no more jobs
    assert.throws(() => run.addJob('verify.build'),
                  (e) => e instanceof sbxrun.MisuseError && /jobs are added before/.test(e.message));
    assert.equal(run.jobs.length, 2);
  } finally {
    run.close();
    tr.close();
  }
  const t = sbxrun.Transcript.load(file);
  t.verify();
  assert.ok(t.complete && t.stepCount >= 2 && t.headHash.length === 64);
  t.close();
  const bytes = fs.readFileSync(file);
  const at = bytes.indexOf('"verify.test"');
  bytes[at + 1] = 'V'.charCodeAt(0);
  fs.writeFileSync(file, bytes);
  const t2 = sbxrun.Transcript.load(file);
  assert.throws(() => t2.verify(), (e) => e instanceof sbxrun.IntegrityError && e.brokenEntry >= 0);
  t2.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

// Symbol.asyncDispose exists from Node 18.18 and 20.4 on; package.json
// allows older 18s, where the method is simply absent.
test('a named persistent sandbox resumes by itself; asyncDispose', {
  skip: !Symbol.asyncDispose && `Node ${process.version} has no Symbol.asyncDispose (18.18 and later do)`,
}, async () => {
  const name = `node-${process.pid}`;
  {
    const s = await ctx.client.createSandbox({ name, persistent: true });
    const first = s.id;
    await s.writeFile('kept.txt', 'kept\n');
    await s.stop();
    assert.equal((await s.run(['cat', 'kept.txt'])).stdout.toString(), 'kept\n');
    assert.notEqual(s.id, first);
    // its two sessions, newest first
    assert.deepEqual((await ctx.client.listSessions({ name })).sessions.map((x) => x.id), [s.id, first]);
    await s.update({ persistent: false });
    assert.equal(s.persistent, false);
    await s.delete();
    await s[Symbol.asyncDispose]();
    assert.throws(() => s.id, /closed/);
  }
});
