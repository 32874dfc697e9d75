// SPDX-License-Identifier: MIT
// Type-checked by types.test.js (tsc --strict --noEmit), never run: a
// program using the surface as index.d.ts declares it; a declaration that
// drifts from what the package offers, or is wrong, fails the check.
import * as sbxrun from '..';

async function main(): Promise<void> {
  const c = new sbxrun.Client({ endpoint: 'unix:/run/sbxd.sock', token: 't', options: { protocol: 'v2' } });
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
  [code, exited, id, v, own, j, size, d, red, sbxrun.liveHandles()].length;
  c.close();
}
main();
