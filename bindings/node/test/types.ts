// SPDX-License-Identifier: MIT
// Type-checked by types.test.js (tsc --strict --noEmit), never run: a
// program using the surface as index.d.ts declares it; a declaration that
// drifts from what the package offers, or is wrong, fails the check.
import * as sbxrun from '..';

async function main(): Promise<void> {
  const c = new sbxrun.Client({ endpoint: 'unix:/run/sbxd.sock', token: 't', options: { protocol: 'v2' } });
  new sbxrun.Client({ redact: false }).close();
  new sbxrun.Client({ redact: new sbxrun.Redactor(['hunter2hunter2'], { shapes: false }) }).close();
  const s: sbxrun.Sandbox = await c.createSandbox({ sourceSnapshot: 'snap_1', timeoutMs: 1000, ports: [3000] });
  const r: sbxrun.CompletedCommand = await s.run(['echo', 'hi'], { cwd: '/vercel/sandbox' });
  const code: number = r.exitCode;
  const cmd: sbxrun.Command = s.spawn(['sleep', '1']);
  cmd.stdout.on('data', (b: Buffer) => b.length);
  cmd.cancel();
  const again = await sbxrun.Command.attach(s, 'cmd_1', { timeoutMs: 5000 });
  const exited: number = await again.follow().exited;
  await again.kill(9);
  const id: string = await new sbxrun.Command(s, ['true']).startDetached();
  for await (const chunk of s.readStream('/vercel/sandbox/f')) (chunk as Buffer).length;
  await s.upload('dist', 'dist', { onProgress: (done: number, total: number | null) => done / (total ?? 1) });
  await s.download('dist/app.js', 'app.js', { onProgress: (done, total) => total === null || done <= total });
  await s.download('dist/app.js', 'app.js');

  const tr = new sbxrun.Transcript('job.jsonl');
  const job = new sbxrun.Job(c, 'verify.test', { inputs: { script: 'test' }, secrets: ['12345678'], transcript: tr });
  await job.run(s, { onOutput: (stream, b) => (stream === 1 ? process.stdout : process.stderr).write(b) });
  const v: sbxrun.Verdict = job.verdict;
  tr.finish(job);
  tr.finish('passed');
  const own = new sbxrun.Job(c, null, { json: { jobType: 'verify.lint' }, policy: new sbxrun.Policy() });

  const run = new sbxrun.Run(c, { sandbox: s, wallMs: 1000 });
  const j: sbxrun.Job = run.addJob('verify.build', { argv: ['make'], artifacts: ['out.txt'] });
  await run.execute();

  const snap: sbxrun.Snapshot = await s.snapshot(0);
  const size: number | null = snap.sizeBytes;
  await snap.delete();
  const page = await c.listSnapshots({ limit: 5 });
  await c.listSandboxes({ cursor: page.pagination.next });

  const d: sbxrun.Decision = new sbxrun.Policy().checkArgv(['npx', 'x'], { jobType: 'verify.test' });
  const red: Buffer = new sbxrun.Redactor(['12345678']).redact('x');
  const np = sbxrun.NetworkPolicy.preset('deps.install', { packageManager: 'npm' });
  np.mode = 'deny-all';
  try {
    await s.stop();
  } catch (e) {
    if (e instanceof sbxrun.NotFoundError) e.httpStatus.toFixed();
  }
  await run.execute({ onProgress: (event: sbxrun.RunEvent, job) => (job ? `${event} ${job.type} ${job.verdict ?? ''}` : event) });

  const p = new sbxrun.Patch({ diff: Buffer.from('diff --git a/x b/x\n'), repo: '.', base: 'main', maxBytes: 1 << 20 });
  const pv: sbxrun.PatchVerdict = p.check();
  const files: sbxrun.PatchFile[] = p.files;
  const old: string | null = files[0].oldPath;
  const rule: sbxrun.PatchRule | null = p.rule;
  const bytes: Buffer | null = p.diff;
  const pid: string | null = p.patchId;
  if (!p.ok) p.message.length;
  p.saveTree('tree.tar.gz');
  p.saveTreeDir('tree');
  p.toJSON().diffstat;
  p.close();
  const ops = new sbxrun.Patch({ repo: '.' });
  ops.addFile('added', 'docs/new.md', '# New\n', 0o644);
  ops.addFile('modified', 'run.sh', Buffer.from('#!/bin/sh\n'), 0o755);
  ops.addFile('deleted', 'gone.txt');
  const next = new sbxrun.Patch({ diff: 'diff --git a/y b/y\n', after: ops });
  next.close();
  ops.close();
  const result = await sbxrun.verify(c, '.', { patch: 'change.diff', scripts: ['lint', 'test'], install: false,
                                              transcript: tr, wallMs: 600000, onProgress: (event) => event.length });
  await sbxrun.verify(c, '.', { patch: Buffer.from(''), base: 'HEAD~1' });
  await sbxrun.verify(c, '.', { patch: ['a.diff', Buffer.from(''), new Uint8Array(0)] });
  try {
    await sbxrun.verify(c, '.');
  } catch (e) {
    if (e instanceof sbxrun.PatchError) e.code.length;
  }
  [code, exited, id, v, own, j, size, d, red, sbxrun.liveHandles(), pv, old, rule, bytes, pid, result].length;
  c.close();
}
main();
