// SPDX-License-Identifier: MIT
// Snapshots through the official SDK: sandbox.snapshot(), Snapshot.get,
// Snapshot.list, snapshot.delete() and creating a sandbox from a snapshot.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { APIError, Sandbox, Snapshot } from '@vercel/sandbox';
import { startSbxd } from './sbxd.mjs';

let server;
before(async () => { server = await startSbxd(); });
after(async () => { await server?.stop(); });

/** A test whose failure message shows the SDK's last requests and sbxd's answers. */
function it(name, fn) {
  test(name, { timeout: 60_000 }, (t) => server.traced(fn)(t));
}

/**
 * Snapshot.get builds its API client without the caller's fetch, so it can
 * only reach sbxd through globalThis.fetch (see sbxd.mjs).
 */
function getSnapshot(creds, snapshotId) {
  return server.withGlobalFetch(() => Snapshot.get({ ...creds, snapshotId }));
}

/** A running sandbox with a file in its workspace, in a project of its own. */
async function sandboxWithFile(creds, text) {
  const sandbox = await Sandbox.create({ ...creds, timeout: 60_000 });
  await sandbox.writeFiles([
    { path: 'state/kept.txt', content: Buffer.from(text) },
    { path: '/tmp/outside-workspace.txt', content: Buffer.from('tmp too') },
  ]);
  return sandbox;
}

it('sandbox.snapshot(): creates a snapshot and stops the sandbox', async () => {
  const creds = { ...server.credentials, projectId: `prj_snap_${randomUUID()}` };
  const sandbox = await sandboxWithFile(creds, 'snapshot me');
  const snapshot = await sandbox.snapshot();
  assert.ok(snapshot instanceof Snapshot);
  assert.equal(typeof snapshot.snapshotId, 'string');
  assert.ok(snapshot.snapshotId.length > 0);
  assert.equal(snapshot.status, 'created');
  assert.equal(snapshot.sourceSandboxId, sandbox.sandboxId);
  assert.equal(typeof snapshot.sizeBytes, 'number');
  assert.ok(snapshot.createdAt instanceof Date && !Number.isNaN(snapshot.createdAt.getTime()));
  // The sandbox stops as part of snapshotting.
  assert.ok(['snapshotting', 'stopping', 'stopped'].includes(sandbox.status), `status ${sandbox.status}`);
  const meta = await sandbox.stop({ blocking: true });
  assert.equal(meta.status, 'stopped');
  await assert.rejects(
    sandbox.runCommand('true'),
    (err) => err instanceof APIError && err.response.status >= 400 && err.response.status < 500,
  );
});

it('sandbox.snapshot(): expiration: 0 means it never expires; a number sets expiresAt', async () => {
  const creds = { ...server.credentials, projectId: `prj_snap_${randomUUID()}` };
  const forever = await (await sandboxWithFile(creds, 'x')).snapshot({ expiration: 0 });
  assert.equal(forever.expiresAt, undefined);
  const hour = await (await sandboxWithFile(creds, 'y')).snapshot({ expiration: 3_600_000 });
  assert.ok(hour.expiresAt instanceof Date);
  const ttl = hour.expiresAt.getTime() - hour.createdAt.getTime();
  assert.ok(Math.abs(ttl - 3_600_000) < 60_000, `expiresAt - createdAt = ${ttl}`);
});

it('Snapshot.get, Snapshot.list, delete: get returns the snapshot; list pages it; delete marks it deleted', async () => {
  const creds = { ...server.credentials, projectId: `prj_snap_${randomUUID()}` };
  const first = await (await sandboxWithFile(creds, 'one')).snapshot();
  const second = await (await sandboxWithFile(creds, 'two')).snapshot();

  const got = await getSnapshot(creds, first.snapshotId);
  assert.ok(got instanceof Snapshot);
  assert.equal(got.snapshotId, first.snapshotId);
  assert.equal(got.status, 'created');
  assert.equal(got.sourceSandboxId, first.sourceSandboxId);
  assert.equal(got.sizeBytes, first.sizeBytes);
  assert.equal(got.createdAt.getTime(), first.createdAt.getTime());

  const all = await Snapshot.list({ ...creds });
  assert.deepEqual(all.json.snapshots.map((s) => s.id), [second.snapshotId, first.snapshotId]);
  assert.deepEqual(all.json.pagination, { count: 2, next: null, prev: null });
  for (const s of all.json.snapshots) assert.equal(s.status, 'created');

  const page1 = await Snapshot.list({ ...creds, limit: 1 });
  assert.deepEqual(page1.json.snapshots.map((s) => s.id), [second.snapshotId]);
  assert.equal(page1.json.pagination.count, 1);
  assert.equal(typeof page1.json.pagination.next, 'number');
  const page2 = await Snapshot.list({ ...creds, limit: 1, until: page1.json.pagination.next });
  assert.deepEqual(page2.json.snapshots.map((s) => s.id), [first.snapshotId]);
  assert.equal(page2.json.pagination.next, null);

  // delete() through the instance Snapshot.get returned, and through the
  // one sandbox.snapshot() returned.
  await got.delete();
  assert.equal(got.status, 'deleted');
  await second.delete();
  assert.equal(second.status, 'deleted');
  const gone = await Snapshot.list({ ...creds });
  assert.deepEqual(gone.json.snapshots.map((s) => s.id), []);
});

it('Snapshot.get, Snapshot.list, delete: get of an unknown id rejects with a 404 APIError', async () => {
  await assert.rejects(
    getSnapshot(server.credentials, 'snap_doesnotexist00000000'),
    (err) => err instanceof APIError && err.response.status === 404,
  );
});

it('Sandbox.create from a snapshot: restores the files and records sourceSnapshotId', async () => {
  const creds = { ...server.credentials, projectId: `prj_snap_${randomUUID()}` };
  const original = await sandboxWithFile(creds, 'survives the snapshot');
  const snapshot = await original.snapshot();
  const restored = await Sandbox.create({ ...creds, timeout: 60_000, source: { type: 'snapshot', snapshotId: snapshot.snapshotId } });
  try {
    assert.notEqual(restored.sandboxId, original.sandboxId);
    assert.equal(restored.sourceSnapshotId, snapshot.snapshotId);
    assert.equal(restored.status, 'running');
    assert.deepEqual(await restored.readFileToBuffer({ path: 'state/kept.txt' }), Buffer.from('survives the snapshot'));
    const r = await restored.runCommand('cat', ['state/kept.txt']);
    assert.equal(await r.stdout(), 'survives the snapshot');
    // The restored sandbox is a normal one: it can change and be snapshotted again.
    await restored.writeFiles([{ path: 'state/second.txt', content: Buffer.from('second generation') }]);
    const again = await restored.snapshot();
    const third = await Sandbox.create({ ...creds, timeout: 60_000, source: { type: 'snapshot', snapshotId: again.snapshotId } });
    try {
      assert.deepEqual(await third.readFileToBuffer({ path: 'state/kept.txt' }), Buffer.from('survives the snapshot'));
      assert.deepEqual(await third.readFileToBuffer({ path: 'state/second.txt' }), Buffer.from('second generation'));
    } finally {
      await third.stop().catch(() => {});
    }
  } finally {
    await restored.stop().catch(() => {});
  }
});

// Both must be refused with an HTTP error the SDK can report, and the
// error body (kept on the APIError) should say which snapshot it is about.
const refusal = (snapshotId) => (err) =>
  err instanceof APIError && err.response.status >= 400 && err.response.status < 500 &&
  typeof err.text === 'string' && err.text.includes(snapshotId);

it('Sandbox.create from a snapshot: a deleted snapshot is refused with a 4xx APIError naming it', async () => {
  const creds = { ...server.credentials, projectId: `prj_snap_${randomUUID()}` };
  const snapshot = await (await sandboxWithFile(creds, 'z')).snapshot();
  await snapshot.delete();
  await assert.rejects(
    Sandbox.create({ ...creds, source: { type: 'snapshot', snapshotId: snapshot.snapshotId }, signal: server.failFastSignal() }),
    refusal(snapshot.snapshotId),
  );
});

it('Sandbox.create from a snapshot: an unknown snapshot is refused with a 4xx APIError naming it', async () => {
  await assert.rejects(
    Sandbox.create({
      ...server.credentials,
      source: { type: 'snapshot', snapshotId: 'snap_doesnotexist00000000' },
      signal: server.failFastSignal(),
    }),
    refusal('snap_doesnotexist00000000'),
  );
});
