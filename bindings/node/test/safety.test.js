// SPDX-License-Identifier: MIT
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const sbxrun = require('..');
const { withClient } = require('../testlib/sbxd');

const ctx = withClient(test);

test('policy decisions; a client policy refuses before sending', async () => {
  const p = new sbxrun.Policy();
  assert.deepEqual(p.checkArgv(['npx', 'left-pad']).reason, 'package_exec');
  assert.equal(p.checkArgv(['git', 'status']).allowed, true);
  assert.equal(p.checkArgv(['cat', '/etc/shadow']).reason, 'path_outside');
  assert.throws(() => p.checkArgv(['git'], { jobType: 'verify.everything' }), sbxrun.InvalidArgError);
  assert.throws(() => new sbxrun.Policy('{not json'), sbxrun.ParseError);
  const s = await ctx.client.createSandbox({ timeoutMs: 120000 });
  try {
    ctx.client.setPolicy(p);
    await assert.rejects(s.run(['npx', 'cowsay']), sbxrun.PolicyDeniedError);
    ctx.client.setPolicy(null);
    // redaction of a command's output
    const r = new sbxrun.Redactor(['hunter2hunter2']);
    assert.equal(r.redact('pw=hunter2hunter2').toString(), 'pw=[REDACTED:secret]');
    assert.throws(() => r.addSecret('short'), sbxrun.InvalidArgError);
    ctx.client.setRedactor(r);
    assert.equal((await s.run(['sh', '-c', 'echo token=hunter2hunter2'])).stdout.toString(),
                 'token=[REDACTED:secret]\n');
    ctx.client.setRedactor(null);
    r.close();
    await s.stop();
  } finally {
    s.close();
    p.close();
  }
  const n = sbxrun.NetworkPolicy.preset('repo.clone', { url: 'https://github.com/a/b.git' });
  assert.deepEqual(n.toJSON(), { mode: 'custom', allowedDomains: ['github.com'] });
  assert.throws(() => { n.mode = 'open'; }, RangeError);
  n.close();
});

// A GitHub token of the shape the library knows (tests/unit/redact_shapes_cases.h),
// written in two pieces so that no scanner takes this file for a leak.
const GITHUB_TOKEN = 'gh' + 'p_m0xVQzJXtw3XVBOsrT5mH3DaWvTrmFLHBMUA';

test('output is redacted unless the client says not', async () => {
  const argv = ['sh', '-c', `echo token=${GITHUB_TOKEN}; echo also=${GITHUB_TOKEN} >&2`];
  const c = new sbxrun.Client({ endpoint: ctx.sbxd.endpoint, token: ctx.sbxd.token });
  const raw = new sbxrun.Client({ endpoint: ctx.sbxd.endpoint, token: ctx.sbxd.token, redact: false });
  const r = new sbxrun.Redactor(['hunter2hunter2'], { shapes: false });
  const own = new sbxrun.Client({ endpoint: ctx.sbxd.endpoint, token: ctx.sbxd.token, redact: r });
  r.close(); // the client took a copy of its rules
  assert.throws(() => new sbxrun.Client({ redact: 'yes' }), TypeError);
  const s = await c.createSandbox({ timeoutMs: 120000 });
  const handles = [s];
  try {
    // By default: the built-in shapes, on both streams.
    const res = await s.run(argv);
    assert.equal(res.stdout.toString(), 'token=[REDACTED:github]\n');
    assert.equal(res.stderr.toString(), 'also=[REDACTED:github]\n');
    const cmd = s.spawn(argv);
    const chunks = [];
    cmd.stdout.on('data', (b) => chunks.push(b));
    await cmd.exited;
    cmd.close();
    assert.equal(Buffer.concat(chunks).toString(), 'token=[REDACTED:github]\n');
    // redact: false: the output as the program wrote it.
    const sr = await raw.sandbox().fetch(s.id);
    handles.push(sr);
    assert.equal((await sr.run(argv)).stdout.toString(), `token=${GITHUB_TOKEN}\n`);
    // A Redactor of the caller's: its rules in place of the default's.
    const so = await own.sandbox().fetch(s.id);
    handles.push(so);
    assert.equal((await so.run(['sh', '-c', `echo hunter2hunter2 ${GITHUB_TOKEN}`])).stdout.toString(),
                 `[REDACTED:secret] ${GITHUB_TOKEN}\n`);
    // setRedactor(null) stops redacting for the commands started after it.
    c.setRedactor(null);
    assert.equal((await s.run(argv)).stdout.toString(), `token=${GITHUB_TOKEN}\n`);
    await s.stop();
  } finally {
    for (const h of handles) h.close();
    for (const cl of [c, raw, own]) cl.close();
  }
});

test('cancelling a command stops following it; the client goes on', async () => {
  const s = await ctx.client.createSandbox({ timeoutMs: 120000 });
  try {
    const cmd = s.spawn(['sleep', '30']);
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    cmd.cancel();
    await assert.rejects(cmd.exited, sbxrun.CancelledError);
    assert.ok(Date.now() - t0 < 5000);
    cmd.close();
    assert.equal((await s.run(['echo', 'after'])).stdout.toString(), 'after\n');
    await s.stop();
  } finally {
    s.close();
  }
});

async function collect() {
  for (let i = 0; i < 5; i++) {
    global.gc();
    await new Promise((r) => setTimeout(r, 20)); // finalizers run between turns
  }
}

const DIFF = 'diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n';

test('no handle leaked: 10,000 made and dropped', async () => {
  await collect(); // what earlier tests dropped goes first
  const base = sbxrun.liveHandles();
  const { endpoint, token } = ctx.sbxd;
  // Every kind of handle, as Python's test makes them: half closed by hand
  // (in no particular order), the rest left to the collector.
  for (let i = 0; i < 10000; i++) {
    const c = new sbxrun.Client({ endpoint, token }); // with its default redactor
    const s = ctx.client.sandbox();
    const k = new sbxrun.Command(s, ['true']);
    const p = new sbxrun.Policy();
    const j = new sbxrun.Job(ctx.client, 'verify.test');
    const sn = new sbxrun.Snapshot(ctx.client);
    const r = new sbxrun.Run(ctx.client);
    r.addJob('verify.test', { inputs: { script: 'test' } }); // the run's: freed with it
    const t = new sbxrun.Transcript();
    const red = new sbxrun.Redactor(['hunter2hunter2']);
    const n = new sbxrun.NetworkPolicy('deny-all');
    const pa = new sbxrun.Patch({ diff: DIFF });
    if (i % 2) for (const h of [k, s, c, j, r, red, t, n, pa, p, sn]) h.close();
    // A client holds file descriptors (its event fd, its poller...) until
    // it is freed, and the collector runs for memory, not descriptors: the
    // dropped ones are collected as they go, before the process runs out.
    if (i % 1000 === 999) await collect();
  }
  // Handles that have been through the server: a command that ran, a
  // sandbox read back, a run's job seen through run.jobs.
  const sb = await ctx.client.createSandbox({ timeoutMs: 120000 });
  try {
    for (let i = 0; i < 40; i++) {
      const k = new sbxrun.Command(sb, ['echo', String(i)]);
      k.start();
      const out = [];
      k.stdout.on('data', (b) => out.push(b));
      assert.equal(await k.exited, 0);
      await new Promise((res) => (k.stdout.readableEnded ? res() : k.stdout.on('end', res)));
      assert.equal(Buffer.concat(out).toString(), `${i}\n`);
      const s = await ctx.client.sandbox().fetch(sb.id);
      const r = new sbxrun.Run(ctx.client);
      r.addJob('verify.lint', { inputs: { script: 'lint' } });
      assert.equal(r.jobs.length, 1);
      if (i % 2) for (const h of [k, s, r]) h.close();
    }
    await sb.stop();
  } finally {
    sb.close();
  }
  for (let i = 0; i < 4 && sbxrun.liveHandles() !== base; i++)
    await collect();
  assert.equal(sbxrun.liveHandles(), base);
});
