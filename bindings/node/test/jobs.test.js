// SPDX-License-Identifier: MIT
// A job of its own (streamed, redacted, cancelled by its callback, denied by
// its policy), snapshots, and commands followed by id, against a real sbxd.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const sbxrun = require('..');
const { withClient } = require('../testlib/sbxd');

const ctx = withClient(test);

test('a job of its own: output streamed and redacted, its transcript ended by the caller', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxrun-node-job-'));
  const file = path.join(dir, 'job.jsonl');
  const s = await ctx.client.createSandbox();
  try {
    await s.writeFile('t.js', "console.log('one'); console.error('two tok-12345'); console.log('three')\n");
    const tr = new sbxrun.Transcript(file);
    const job = new sbxrun.Job(ctx.client, 'verify.test', { argv: ['node', 't.js'], secrets: ['tok-12345'], transcript: tr });
    const chunks = [];
    const result = await job.run(s, { onOutput: (stream, b) => chunks.push([stream, b]) });
    assert.equal(job.verdict, 'passed');
    assert.equal(result.jobType, 'verify.test');
    const out = Buffer.concat(chunks.filter(([st]) => st === 1).map(([, b]) => b)).toString();
    const err = Buffer.concat(chunks.filter(([st]) => st === 2).map(([, b]) => b)).toString();
    assert.equal(out, 'one\nthree\n');
    assert.match(err, /two \[REDACTED/);
    assert.doesNotMatch(err, /tok-12345/);
    tr.finish(job);
    job.close();
    tr.close();
    const t = sbxrun.Transcript.load(file);
    t.verify();
    assert.ok(t.complete);
    assert.equal(t.job.job.type, 'verify.test');
    t.close();

    // an exception in the callback cancels the job and rejects with itself
    const j2 = new sbxrun.Job(ctx.client, 'verify.test', { argv: ['node', 't.js'] });
    await assert.rejects(j2.run(s, { onOutput: () => { throw new Error('stop here'); } }), /stop here/);
    assert.equal(j2.verdict, 'cancelled');
    j2.close();

    // from its JSON description, under a policy of its own
    const pol = new sbxrun.Policy({ version: 1, extends: 'none', allow: { programs: ['node'] } });
    const j3 = new sbxrun.Job(ctx.client, null, { json: { jobType: 'verify.test', command: ['python3', '-c', '1'] }, policy: pol });
    await j3.run(s);
    assert.equal(j3.verdict, 'denied');
    j3.close();
    pol.close();

    // refused set-up frees what it made
    const before = sbxrun.liveHandles();
    assert.throws(() => new sbxrun.Job(ctx.client, 'verify.everything'), sbxrun.InvalidArgError);
    assert.throws(() => new sbxrun.Job(ctx.client, 'verify.test', { secrets: ['short'] }), /8 to 4096 bytes/);
    assert.equal(sbxrun.liveHandles(), before);
    await s.stop();
  } finally {
    s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('snapshot, start from it, list, delete', async () => {
  const s = await ctx.client.createSandbox();
  try {
    await s.writeFile('kept.txt', 'from the snapshot\n');
    const snap = await s.snapshot(0);
    assert.ok(snap.id);
    assert.equal(snap.status, 'created');
    assert.equal(snap.sourceSandboxId, s.id);
    assert.equal(snap.expiresAt, null);
    const again = await ctx.client.snapshot(snap.id);
    assert.equal(again.id, snap.id);
    again.close();
    assert.ok((await ctx.client.listSnapshots()).snapshots.some((x) => x.id === snap.id));
    const s2 = await ctx.client.createSandbox({ sourceSnapshot: snap.id });
    assert.equal((await s2.readFile('kept.txt')).toString(), 'from the snapshot\n');
    const listed = (await ctx.client.listSandboxes()).sandboxes.map((x) => x.currentSessionId ?? x.id);
    assert.ok(listed.includes(s2.id));
    await s2.stop();
    s2.close();
    await snap.delete();
    assert.equal(snap.status, 'deleted');
    assert.ok(!(await ctx.client.listSnapshots()).snapshots.some((x) => x.id === snap.id));
    snap.close();
    await assert.rejects(ctx.client.snapshot('snap_doesnotexist'), sbxrun.NotFoundError);
  } finally {
    s.close();
  }
});

test('a detached command followed, waited for and killed by id; a file streamed', async () => {
  const s = await ctx.client.createSandbox();
  try {
    const c1 = new sbxrun.Command(s, ['sh', '-c', 'echo started; sleep 0.3; echo done; exit 4']);
    const id = await c1.startDetached();
    assert.ok(id);
    c1.close(); // it keeps running
    const c2 = await sbxrun.Command.attach(s, id);
    c2.follow();
    const out = [];
    c2.stdout.on('data', (b) => out.push(b));
    assert.equal(await c2.exited, 4);
    assert.equal(Buffer.concat(out).toString(), 'started\ndone\n');
    c2.close();
    const c3 = await sbxrun.Command.attach(s, id);
    assert.equal(await c3.wait(), 4);
    c3.close();

    const c4 = new sbxrun.Command(s, ['sleep', '60']);
    await c4.startDetached();
    await c4.kill(9);
    assert.notEqual(await c4.wait(), 0);
    c4.close();
    await assert.rejects(sbxrun.Command.attach(s, 'cmd_doesnotexist'), sbxrun.NotFoundError);

    const big = Buffer.alloc(3 << 20, 7);
    await s.writeFile('big.bin', big);
    const parts = [];
    for await (const b of s.readStream('big.bin')) parts.push(b);
    assert.ok(Buffer.concat(parts).equals(big));
    // destroying the stream early cancels the read, and the client goes on
    const early = s.readStream('big.bin');
    await new Promise((resolve) => early.once('data', resolve));
    early.destroy();
    assert.equal((await s.readFile('t-missing').catch((e) => e)).constructor, sbxrun.NotFoundError);
    await s.stop();
  } finally {
    s.close();
  }
});
