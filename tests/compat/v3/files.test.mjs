// SPDX-License-Identifier: MIT
// SDK 3.5.0: files. writeFiles (gzip tar on the session's fs/write route),
// readFile / readFileToBuffer (application/octet-stream; a missing file is
// null), mkDir, downloadFile and the sandbox.fs helpers built on them.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sandbox } from 'sdk3';
import { bodyOf, cleanup, lines, readAll, useSbxd } from './common.mjs';

const ctx = useSbxd();
const it = ctx.it;

let sandbox;
let sid;
ctx.atStart(async () => {
  sandbox = await Sandbox.create({ ...ctx.server.credentials, timeout: 300_000 });
  sid = sandbox.currentSession().sessionId;
});
ctx.atEnd(() => cleanup(sandbox));

const fsPath = (op) => `/v2/sandboxes/sessions/${sid}/fs/${op}?teamId=team_compat`;
const allBytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

it('writeFiles: several files in one gzip tar; read back with readFileToBuffer and cat', async () => {
  const { server } = ctx;
  const mark = server.requestCount;
  await sandbox.writeFiles([
    { path: 'w/a.txt', content: Buffer.from('alpha\n') },
    { path: 'w/nested/deeper/b.txt', content: Buffer.from('bravo') },
    { path: '/tmp/compat3-abs.bin', content: allBytes },
    { path: 'w/empty', content: Buffer.alloc(0) },
    { path: 'w/ünïcode ✓.txt', content: Buffer.from('utf-8 name') },
    { path: 'w/run.sh', content: Buffer.from('#!/bin/sh\necho script ran\n'), mode: 0o755 },
  ]);
  const [req] = server.requestsSince(mark);
  assert.equal(`${req.method} ${req.path}`, `POST ${fsPath('write')}`);
  assert.equal(req.requestHeaders['content-type'], 'application/gzip');
  assert.equal(req.requestHeaders['x-cwd'], '/');
  assert.ok(req.status >= 200 && req.status < 300, `status ${req.status}`);

  assert.deepEqual(await sandbox.readFileToBuffer({ path: 'w/a.txt' }), Buffer.from('alpha\n'));
  assert.deepEqual(await sandbox.readFileToBuffer({ path: '/vercel/sandbox/w/nested/deeper/b.txt' }), Buffer.from('bravo'));
  assert.deepEqual(await sandbox.readFileToBuffer({ path: '/tmp/compat3-abs.bin' }), allBytes);
  assert.deepEqual(await sandbox.readFileToBuffer({ path: 'w/ünïcode ✓.txt' }), Buffer.from('utf-8 name'));
  const empty = await sandbox.readFileToBuffer({ path: 'w/empty' });
  assert.ok(Buffer.isBuffer(empty), 'an empty file is an empty Buffer, not null');
  assert.equal(empty.length, 0);

  const cat = await sandbox.runCommand('cat', ['w/a.txt', 'w/nested/deeper/b.txt']);
  assert.equal(await cat.stdout(), 'alpha\nbravo');
  const run = await sandbox.runCommand('./w/run.sh');
  assert.equal(run.exitCode, 0);
  assert.equal(await run.stdout(), 'script ran\n');
});

it('writeFiles: overwrites an existing file; relative paths resolve against the session cwd', async () => {
  await sandbox.writeFiles([{ path: 'over.txt', content: Buffer.from('a much longer first version') }]);
  await sandbox.writeFiles([{ path: 'over.txt', content: Buffer.from('short') }]);
  assert.deepEqual(await sandbox.readFileToBuffer({ path: `${sandbox.cwd}/over.txt` }), Buffer.from('short'));
});

it('readFile: a stream of the bytes; cwd option; the request names the path', async () => {
  const { server } = ctx;
  await sandbox.writeFiles([{ path: '/tmp/compat3-stream.bin', content: allBytes }]);
  const mark = server.requestCount;
  const stream = await sandbox.readFile({ path: 'compat3-stream.bin', cwd: '/tmp' });
  assert.ok(stream, 'a Readable');
  assert.deepEqual(await readAll(stream), allBytes);
  const [req] = server.requestsSince(mark);
  assert.equal(`${req.method} ${req.path}`, `POST ${fsPath('read')}`);
  assert.deepEqual(bodyOf(req), { path: 'compat3-stream.bin', cwd: '/tmp' });
  assert.equal(req.status, 200);
  assert.match(req.contentType, /application\/octet-stream/);
});

it('readFile / readFileToBuffer: a missing file is null (HTTP 404)', async () => {
  const { server } = ctx;
  const mark = server.requestCount;
  assert.equal(await sandbox.readFile({ path: 'no/such/file.txt' }), null);
  assert.equal(await sandbox.readFileToBuffer({ path: '/no/such/file' }), null);
  const reqs = server.requestsSince(mark);
  assert.deepEqual(reqs.map((e) => e.status), [404, 404]);
});

it('readFileToBuffer: a large file arrives intact', async () => {
  const big = Buffer.alloc(3 * 1024 * 1024 + 17);
  for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >> 11)) & 0xff;
  await sandbox.writeFiles([{ path: 'big.bin', content: big }]);
  const back = await sandbox.readFileToBuffer({ path: 'big.bin' });
  assert.equal(back.length, big.length);
  assert.ok(back.equals(big));
});

it('mkDir: creates a directory (relative to the session cwd)', async () => {
  const { server } = ctx;
  const mark = server.requestCount;
  await sandbox.mkDir('made-by-mkdir');
  const [req] = server.requestsSince(mark);
  assert.equal(`${req.method} ${req.path}`, `POST ${fsPath('mkdir')}`);
  assert.deepEqual(bodyOf(req), { path: 'made-by-mkdir' });
  const r = await sandbox.runCommand('test', ['-d', `${sandbox.cwd}/made-by-mkdir`]);
  assert.equal(r.exitCode, 0);
  await sandbox.mkDir('/tmp/compat3-absdir');
  assert.equal((await sandbox.runCommand('test', ['-d', '/tmp/compat3-absdir'])).exitCode, 0);
  // A file can be written into it.
  await sandbox.writeFiles([{ path: 'made-by-mkdir/x', content: Buffer.from('x') }]);
  assert.deepEqual(await sandbox.readFileToBuffer({ path: 'made-by-mkdir/x' }), Buffer.from('x'));
});

it('downloadFile: writes the file locally; a missing one is null', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'compat3-dl-'));
  try {
    await sandbox.writeFiles([{ path: 'dl.bin', content: allBytes }]);
    const dst = await sandbox.downloadFile({ path: 'dl.bin' }, { path: join(dir, 'sub', 'dl.bin') }, { mkdirRecursive: true });
    assert.equal(dst, join(dir, 'sub', 'dl.bin'));
    assert.deepEqual(await readFile(dst), allBytes);
    assert.equal(await sandbox.downloadFile({ path: 'not-there.bin' }, { path: join(dir, 'nothing') }), null);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

it('sandbox.fs: writeFile, readFile, appendFile, exists, readdir, stat', async () => {
  await sandbox.fs.mkdir('fsdir', { recursive: true });
  await sandbox.fs.writeFile('fsdir/one.txt', 'one');
  await sandbox.fs.appendFile('fsdir/one.txt', '+more');
  assert.equal(await sandbox.fs.readFile('fsdir/one.txt', 'utf8'), 'one+more');
  assert.equal(await sandbox.fs.exists('fsdir/one.txt'), true);
  assert.equal(await sandbox.fs.exists('fsdir/none.txt'), false);
  assert.deepEqual(await sandbox.fs.readdir('fsdir'), ['one.txt']);
  const st = await sandbox.fs.stat('fsdir/one.txt');
  assert.equal(st.isFile(), true);
  assert.equal(st.size, 8);
  await assert.rejects(sandbox.fs.readFile('fsdir/none.txt'), (err) => err.code === 'ENOENT');
});
