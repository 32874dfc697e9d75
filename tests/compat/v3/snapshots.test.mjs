// SPDX-License-Identifier: MIT
// SDK 3.5.0: snapshots. sandbox.snapshot() (the session stops), Snapshot.get
// (3.x forwards the caller's fetch), Snapshot.list with cursor pagination and
// the sandbox-name filter, sandbox.listSnapshots, snapshot.delete(), a
// sandbox created from a snapshot, and the snapshot tree sbxd refuses.
import assert from 'node:assert/strict';
import { Sandbox, Snapshot } from 'sdk3';
import { apiError, bodyOf, cleanup, is4xx, lines, notSupported, ownProject, uniqueName, useSbxd } from './common.mjs';

const ctx = useSbxd();
const it = ctx.it;

/** A running, non-persistent sandbox with a file in its workspace and one in /tmp. */
async function sandboxWithFile(creds, text, extra = {}) {
  const sandbox = await Sandbox.create({ ...creds, timeout: 60_000, persistent: false, ...extra });
  await sandbox.writeFiles([
    { path: 'state/kept.txt', content: Buffer.from(text) },
    { path: '/tmp/outside-workspace.txt', content: Buffer.from('tmp too') },
  ]);
  return sandbox;
}

it('sandbox.snapshot(): creates a snapshot of the session, which stops; the next operation resumes', async () => {
  const { server } = ctx;
  const creds = ownProject(server);
  const sandbox = await sandboxWithFile(creds, 'snapshot me');
  try {
    const sid = sandbox.currentSession().sessionId;
    const mark = server.requestCount;
    const snapshot = await sandbox.snapshot();
    const reqs = server.requestsSince(mark);
    assert.deepEqual(lines(reqs), [`POST /v2/sandboxes/sessions/${sid}/snapshot?teamId=team_compat`]);
    assert.equal(reqs[0].requestBody, undefined);
    assert.ok(snapshot instanceof Snapshot);
    assert.equal(typeof snapshot.snapshotId, 'string');
    assert.ok(snapshot.snapshotId.length > 0);
    assert.equal(snapshot.status, 'created');
    assert.equal(snapshot.sourceSessionId, sid);
    assert.equal(typeof snapshot.sizeBytes, 'number');
    assert.ok(snapshot.createdAt instanceof Date && !Number.isNaN(snapshot.createdAt.getTime()));
    assert.ok(snapshot.updatedAt instanceof Date);
    assert.ok(Array.isArray(snapshot.regions) && snapshot.regions.length > 0);
    // The session stops as part of snapshotting.
    assert.ok(['snapshotting', 'stopping', 'stopped'].includes(sandbox.status), `status ${sandbox.status}`);
    // A Sandbox operation resumes on a new (fresh: not persistent) session.
    const r = await sandbox.runCommand('echo', ['alive']);
    assert.equal(await r.stdout(), 'alive\n');
    assert.notEqual(sandbox.currentSession().sessionId, sid);
  } finally {
    await cleanup(sandbox);
  }
});

it('sandbox.snapshot(): expiration 0 never expires; a number sets expiresAt', async () => {
  const { server } = ctx;
  const creds = ownProject(server);
  const a = await sandboxWithFile(creds, 'x');
  const mark = server.requestCount;
  const forever = await a.snapshot({ expiration: 0 });
  assert.deepEqual(bodyOf(server.requestsSince(mark)[0]), { expiration: 0 });
  assert.equal(forever.expiresAt, undefined);
  const hour = await (await sandboxWithFile(creds, 'y')).snapshot({ expiration: 3_600_000 });
  assert.ok(hour.expiresAt instanceof Date);
  const ttl = hour.expiresAt.getTime() - hour.createdAt.getTime();
  assert.ok(Math.abs(ttl - 3_600_000) < 60_000, `expiresAt - createdAt = ${ttl}`);
});

it('Snapshot.get, Snapshot.list, listSnapshots, delete: get returns it; lists page it by cursor; delete marks it deleted', async () => {
  const { server } = ctx;
  const creds = ownProject(server);
  const sa = await sandboxWithFile(creds, 'one', { name: uniqueName('snapa') });
  const first = await sa.snapshot();
  const sb = await sandboxWithFile(creds, 'two', { name: uniqueName('snapb') });
  const second = await sb.snapshot();

  // 3.x passes the caller's fetch to Snapshot.get (1.x did not).
  const mark = server.requestCount;
  const got = await Snapshot.get({ ...creds, snapshotId: first.snapshotId });
  assert.deepEqual(lines(server.requestsSince(mark)),
    [`GET /v2/sandboxes/snapshots/${first.snapshotId}?teamId=team_compat`]);
  assert.ok(got instanceof Snapshot);
  assert.equal(got.snapshotId, first.snapshotId);
  assert.equal(got.status, 'created');
  assert.equal(got.sourceSessionId, first.sourceSessionId);
  assert.equal(got.sizeBytes, first.sizeBytes);
  assert.equal(got.createdAt.getTime(), first.createdAt.getTime());

  const ids = (page) => page.snapshots.map((s) => s.id);
  const m2 = server.requestCount;
  const all = await Snapshot.list({ ...creds, sortOrder: 'desc' });
  assert.deepEqual(lines(server.requestsSince(m2)),
    [`GET /v2/sandboxes/snapshots?teamId=team_compat&project=${creds.projectId}&sortOrder=desc`]);
  assert.deepEqual(ids(all), [second.snapshotId, first.snapshotId]);
  assert.deepEqual(all.pagination, { count: 2, next: null });
  for (const s of all.snapshots) {
    assert.equal(s.status, 'created');
    assert.equal(typeof s.sourceSessionId, 'string');
  }
  assert.deepEqual(ids(await Snapshot.list({ ...creds, sortOrder: 'asc' })), [first.snapshotId, second.snapshotId]);

  const page1 = await Snapshot.list({ ...creds, sortOrder: 'desc', limit: 1 });
  assert.deepEqual(ids(page1), [second.snapshotId]);
  assert.equal(page1.pagination.count, 1);
  assert.equal(typeof page1.pagination.next, 'string');
  const page2 = await Snapshot.list({ ...creds, sortOrder: 'desc', limit: 1, cursor: page1.pagination.next });
  assert.deepEqual(ids(page2), [first.snapshotId]);
  const walked = await (await Snapshot.list({ ...creds, sortOrder: 'desc', limit: 1 })).toArray();
  assert.deepEqual(walked.map((s) => s.id), [second.snapshotId, first.snapshotId]);

  // Filtered by sandbox name, directly and through the sandbox.
  assert.deepEqual(ids(await Snapshot.list({ ...creds, name: sa.name })), [first.snapshotId]);
  const m3 = server.requestCount;
  const ofB = await sb.listSnapshots();
  assert.deepEqual(lines(server.requestsSince(m3)),
    [`GET /v2/sandboxes/snapshots?teamId=team_compat&project=${creds.projectId}&name=${sb.name}`]);
  assert.deepEqual(ids(ofB), [second.snapshotId]);

  // delete() through the instance Snapshot.get returned and through the one
  // sandbox.snapshot() returned.
  const m4 = server.requestCount;
  await got.delete();
  assert.deepEqual(lines(server.requestsSince(m4)),
    [`DELETE /v2/sandboxes/snapshots/${first.snapshotId}?teamId=team_compat`]);
  assert.equal(got.status, 'deleted');
  await second.delete();
  assert.equal(second.status, 'deleted');
  assert.deepEqual(ids(await Snapshot.list({ ...creds })), []);
  await cleanup(sa, sb);
});

it('Snapshot.get: an unknown id rejects with a 404 APIError', async () => {
  const { server } = ctx;
  await assert.rejects(
    Snapshot.get({ ...server.credentials, snapshotId: 'snap_doesnotexist00000000', signal: server.failFastSignal() }),
    apiError(404),
  );
});

it('Sandbox.create from a snapshot: POST /v3 with the source; files restored; sourceSnapshotId (two generations)', async () => {
  const { server } = ctx;
  const creds = ownProject(server);
  const original = await sandboxWithFile(creds, 'survives the snapshot');
  const snapshot = await original.snapshot();
  const mark = server.requestCount;
  const restored = await Sandbox.create({ ...creds, timeout: 60_000, source: { type: 'snapshot', snapshotId: snapshot.snapshotId } });
  let third;
  try {
    const [req] = server.requestsSince(mark);
    assert.equal(`${req.method} ${req.path}`, 'POST /v3/sandboxes?teamId=team_compat');
    assert.deepEqual(bodyOf(req), {
      projectId: creds.projectId,
      ports: [],
      source: { type: 'snapshot', snapshotId: snapshot.snapshotId },
      timeout: 60_000,
    });
    assert.notEqual(restored.name, original.name);
    assert.equal(restored.sourceSnapshotId, snapshot.snapshotId);
    assert.ok(['pending', 'running'].includes(restored.status), `status ${restored.status}`);
    assert.deepEqual(await restored.readFileToBuffer({ path: 'state/kept.txt' }), Buffer.from('survives the snapshot'));
    const r = await restored.runCommand('cat', ['state/kept.txt']);
    assert.equal(await r.stdout(), 'survives the snapshot');
    // The restored sandbox is an ordinary one: it changes and is snapshotted again.
    await restored.writeFiles([{ path: 'state/second.txt', content: Buffer.from('second generation') }]);
    const again = await restored.snapshot();
    third = await Sandbox.create({ ...creds, timeout: 60_000, source: { type: 'snapshot', snapshotId: again.snapshotId } });
    assert.deepEqual(await third.readFileToBuffer({ path: 'state/kept.txt' }), Buffer.from('survives the snapshot'));
    assert.deepEqual(await third.readFileToBuffer({ path: 'state/second.txt' }), Buffer.from('second generation'));
  } finally {
    await cleanup(restored, third);
  }
});

it('Sandbox.create from a snapshot: a deleted or unknown snapshot is refused with a 4xx naming it', async () => {
  const { server } = ctx;
  const creds = ownProject(server);
  const snapshot = await (await sandboxWithFile(creds, 'z')).snapshot();
  await snapshot.delete();
  for (const snapshotId of [snapshot.snapshotId, 'snap_doesnotexist00000000']) {
    await assert.rejects(
      Sandbox.create({ ...creds, source: { type: 'snapshot', snapshotId }, signal: server.failFastSignal() }),
      apiError(is4xx, new RegExp(snapshotId)),
    );
  }
});

it('not supported: Snapshot.tree', async () => {
  const { server } = ctx;
  const creds = ownProject(server);
  const snapshot = await (await sandboxWithFile(creds, 't')).snapshot();
  const mark = server.requestCount;
  await assert.rejects(
    Snapshot.tree({ ...creds, snapshotId: snapshot.snapshotId, signal: server.failFastSignal() }),
    notSupported(/tree/i),
  );
  assert.deepEqual(lines(server.requestsSince(mark)), [
    `GET /v2/sandboxes/snapshots/tree?teamId=team_compat&project=${creds.projectId}&snapshotId=${snapshot.snapshotId}`,
  ]);
});
