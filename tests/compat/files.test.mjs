// SPDX-License-Identifier: MIT
// Files through the official SDK: writeFiles (a gzip tar upload), readFile,
// readFileToBuffer and mkDir.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { APIError, Sandbox } from '@vercel/sandbox';
import { readAll, startSbxd } from './sbxd.mjs';

let server;
let sandbox; // one sandbox for the whole file; every test uses its own paths
before(async () => {
  server = await startSbxd();
  sandbox = await Sandbox.create({ ...server.credentials, timeout: 300_000 });
});
after(async () => {
  await sandbox?.stop().catch(() => {});
  await server?.stop();
});

/** A test whose failure message shows the SDK's last requests and sbxd's answers. */
function it(name, fn) {
  test(name, { timeout: 60_000 }, (t) => server.traced(fn)(t));
}

/** The file as the sandbox sees it, through readFile (a Node Readable). */
async function contents(path, cwd) {
  const stream = await sandbox.readFile(cwd ? { path, cwd } : { path });
  return stream === null ? null : readAll(stream);
}

it('writeFiles and readFile: several files, relative and absolute, nested, text and binary', async () => {
  const binary = Buffer.concat([Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 0x0a, 0x0d]), randomBytes(300_000)]);
  await sandbox.writeFiles([
    { path: 'write-test/hello.txt', content: Buffer.from('hello, sandbox\n') },
    { path: 'write-test/deeply/nested/dir/file.txt', content: Buffer.from('nested') },
    { path: '/tmp/write-test/absolute.bin', content: binary },
    { path: 'write-test/ünïcødé ✓.txt', content: Buffer.from('unicode name') },
    { path: `write-test/${'long-directory-name/'.repeat(8)}${'f'.repeat(120)}.txt`, content: Buffer.from('long path') },
    { path: 'write-test/empty.txt', content: Buffer.alloc(0) },
  ]);

  assert.deepEqual(await contents('write-test/hello.txt'), Buffer.from('hello, sandbox\n'));
  assert.deepEqual(await contents('/vercel/sandbox/write-test/hello.txt'), Buffer.from('hello, sandbox\n'));
  assert.deepEqual(await contents('write-test/deeply/nested/dir/file.txt'), Buffer.from('nested'));
  assert.ok((await contents('/tmp/write-test/absolute.bin')).equals(binary), 'binary content round trip');
  assert.deepEqual(await contents('write-test/ünïcødé ✓.txt'), Buffer.from('unicode name'));
  assert.deepEqual(
    await contents(`write-test/${'long-directory-name/'.repeat(8)}${'f'.repeat(120)}.txt`),
    Buffer.from('long path'),
  );
  // An empty file is a file (200, no bytes), not a missing one.
  assert.deepEqual(await contents('write-test/empty.txt'), Buffer.alloc(0));

  // What the sandbox's own tools see.
  const r = await sandbox.runCommand('sh', ['-c', 'cat write-test/hello.txt; stat -c %s /tmp/write-test/absolute.bin']);
  assert.equal(await r.stdout(), `hello, sandbox\n${binary.length}\n`);
});

it('writeFiles and readFile: overwrites existing files and keeps the mode given', async () => {
  await sandbox.writeFiles([{ path: 'mode-test/run.sh', content: Buffer.from('#!/bin/sh\necho first\n'), mode: 0o755 }]);
  await sandbox.writeFiles([{ path: 'mode-test/run.sh', content: Buffer.from('#!/bin/sh\necho second\n'), mode: 0o755 }]);
  const r = await sandbox.runCommand('./mode-test/run.sh');
  assert.equal(r.exitCode, 0);
  assert.equal(await r.stdout(), 'second\n');
  const plain = await sandbox.runCommand('stat', ['-c', '%a', 'mode-test/run.sh']);
  assert.equal(await plain.stdout(), '755\n');
});

it('writeFiles and readFile: a relative path with .. resolves against the sandbox cwd', async () => {
  await sandbox.writeFiles([{ path: '../dotdot-test.txt', content: Buffer.from('one level up') }]);
  assert.deepEqual(await contents('/vercel/dotdot-test.txt'), Buffer.from('one level up'));
});

it('writeFiles and readFile: readFile with a cwd', async () => {
  await sandbox.writeFiles([{ path: '/tmp/cwd-test/a.txt', content: Buffer.from('via cwd') }]);
  assert.deepEqual(await contents('a.txt', '/tmp/cwd-test'), Buffer.from('via cwd'));
});

it('writeFiles and readFile: files written by commands are readable, as Buffer too', async () => {
  const r = await sandbox.runCommand('sh', ['-c', 'printf "from a command" > made-by-cmd.txt']);
  assert.equal(r.exitCode, 0);
  assert.deepEqual(await contents('made-by-cmd.txt'), Buffer.from('from a command'));
  assert.deepEqual(await sandbox.readFileToBuffer({ path: 'made-by-cmd.txt' }), Buffer.from('from a command'));
});

it('writeFiles and readFile: a missing file reads as null', async () => {
  assert.equal(await sandbox.readFile({ path: 'no-such-file.txt' }), null);
  assert.equal(await sandbox.readFile({ path: '/no/such/dir/file.txt' }), null);
  assert.equal(await sandbox.readFileToBuffer({ path: 'no-such-file.txt' }), null);
});

// For fs/read the SDK understands only 404 (-> null); any other status's
// body is handed to the caller as the file's contents (api-client.js
// readFile). So a file that cannot be produced must be a 404, never an
// error document that reads like data.
it('writeFiles and readFile: a directory reads as null', async () => {
  await sandbox.mkDir('/tmp/read-a-directory');
  assert.equal(await sandbox.readFile({ path: '/tmp/read-a-directory' }), null);
});

it('writeFiles and readFile: on a stopped sandbox, an error body is never returned as the contents', async () => {
  const own = await Sandbox.create({ ...server.credentials, timeout: 60_000 });
  try {
    await own.writeFiles([{ path: 'kept.txt', content: Buffer.from('real contents') }]);
    await own.stop({ blocking: true });
    const outcome = await own.readFile({ path: 'kept.txt' }).then(
      async (stream) => (stream === null ? null : (await readAll(stream)).toString()),
      (err) => err,
    );
    assert.ok(outcome === null || outcome instanceof Error,
      `readFile on a stopped sandbox resolved with contents ${JSON.stringify(outcome)}`);
  } finally {
    await own.stop().catch(() => {});
  }
});

it('mkDir: creates a directory (relative to the sandbox cwd) that files can go into', async () => {
  await sandbox.mkDir('mkdir-test');
  await sandbox.mkDir('/tmp/mkdir-abs-test');
  const r = await sandbox.runCommand('sh', ['-c', 'test -d /vercel/sandbox/mkdir-test && test -d /tmp/mkdir-abs-test && stat -c %U mkdir-test']);
  assert.equal(r.exitCode, 0);
  assert.equal(await r.stdout(), 'vercel-sandbox\n');
  await sandbox.writeFiles([{ path: 'mkdir-test/inside.txt', content: Buffer.from('inside') }]);
  assert.deepEqual(await contents('mkdir-test/inside.txt'), Buffer.from('inside'));
});

it('mkDir: an existing directory or a missing parent rejects with a 4xx APIError', async () => {
  await sandbox.mkDir('mkdir-twice');
  const is4xx = (err) => err instanceof APIError && err.response.status >= 400 && err.response.status < 500;
  await assert.rejects(sandbox.mkDir('mkdir-twice'), is4xx);
  await assert.rejects(sandbox.mkDir('no-parent/child'), is4xx);
});
