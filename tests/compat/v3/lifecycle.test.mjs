// SPDX-License-Identifier: MIT
// SDK 3.5.0: sessions. stop() ends the session, not the sandbox; the next
// Sandbox operation gets a 410 (or 422 sandbox_stopping) and the SDK resumes
// (GET /v2/sandboxes/{name}?resume=true) on a new session and retries. A
// non-persistent sandbox starts afresh; a persistent one keeps its files.
// Sandbox.get without resume starts nothing. listSessions.
import assert from 'node:assert/strict';
import { Sandbox, Snapshot } from 'sdk3';
import { apiError, cleanup, lines, ownProject, uniqueName, useSbxd } from './common.mjs';

const ctx = useSbxd();
const it = ctx.it;

const getPath = (name, projectId = 'prj_compat') => `/v2/sandboxes/${name}?teamId=team_compat&projectId=${projectId}`;

it('stop(): one POST on the session; returns the stopping/stopped session', async () => {
  const { server } = ctx;
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000, persistent: false });
  const sid = sandbox.currentSession().sessionId;
  const mark = server.requestCount;
  const meta = await sandbox.stop();
  const reqs = server.requestsSince(mark);
  assert.deepEqual(lines(reqs), [`POST /v2/sandboxes/sessions/${sid}/stop?teamId=team_compat`]);
  assert.equal(reqs[0].requestBody, undefined);
  assert.ok(reqs[0].status >= 200 && reqs[0].status < 300, `status ${reqs[0].status}`);
  assert.equal(meta.id, sid);
  assert.ok(['stopping', 'stopped'].includes(meta.status), `status ${meta.status}`);
  assert.equal(sandbox.status, meta.status);
  assert.equal(sandbox.currentSession().sessionId, sid);
});

it('auto resume: an operation after stop() runs on a new session; a non-persistent sandbox starts afresh', async () => {
  const { server } = ctx;
  const name = uniqueName('resume');
  let resumes = 0;
  const sandbox = await Sandbox.create({
    ...server.credentials, name, timeout: 60_000, persistent: false,
    onResume: async (s) => { resumes++; assert.equal(s.name, name); },
  });
  try {
    assert.equal(sandbox.persistent, false);
    const sid = sandbox.currentSession().sessionId;
    await sandbox.writeFiles([{ path: 'gone.txt', content: Buffer.from('only in the first session') }]);
    await sandbox.stop();

    const mark = server.requestCount;
    const r = await sandbox.runCommand('sh', ['-c', 'echo resumed; test -e gone.txt']);
    const reqs = server.requestsSince(mark);
    const newSid = sandbox.currentSession().sessionId;
    assert.notEqual(newSid, sid);
    assert.deepEqual(lines(reqs), [
      `POST /v2/sandboxes/sessions/${sid}/cmd?teamId=team_compat`,
      `GET ${getPath(name)}&resume=true`,
      `POST /v2/sandboxes/sessions/${newSid}/cmd?teamId=team_compat`,
    ]);
    assert.ok(reqs[0].status === 410 || reqs[0].status === 422, `a stopped session answers 410 (or 422), not ${reqs[0].status}`);
    assert.equal(reqs[1].status, 200);
    assert.equal(resumes, 1, 'onResume runs once, for resumed: true');
    assert.equal(await r.stdout(), 'resumed\n');
    assert.equal(r.exitCode, 1, 'the file of the first session must be gone');
    assert.equal(sandbox.status, 'running');
    assert.equal(await sandbox.readFileToBuffer({ path: 'gone.txt' }), null);
    // Same sandbox, same name.
    assert.equal(sandbox.name, name);
    const got = await Sandbox.get({ ...server.credentials, name });
    assert.equal(got.currentSession().sessionId, newSid);
    assert.equal(got.status, 'running');
  } finally {
    await cleanup(sandbox);
  }
});

it('auto resume: writeFiles, readFileToBuffer, mkDir, extendTimeout and a detached command resume too', async () => {
  const { server } = ctx;
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000, persistent: false });
  try {
    const ops = [
      ['writeFiles', (s) => s.writeFiles([{ path: 'w.txt', content: Buffer.from('w') }])],
      ['readFileToBuffer', async (s) => assert.equal(await s.readFileToBuffer({ path: 'nothing-here' }), null)],
      ['mkDir', (s) => s.mkDir('some-dir')],
      ['extendTimeout', (s) => s.extendTimeout(1_000)],
      ['runCommand detached', async (s) => assert.equal((await (await s.runCommand({ cmd: 'true', detached: true })).wait()).exitCode, 0)],
    ];
    for (const [label, op] of ops) {
      const before = sandbox.currentSession().sessionId;
      await sandbox.stop();
      await op(sandbox);
      assert.notEqual(sandbox.currentSession().sessionId, before, `${label} should have resumed`);
      assert.equal(sandbox.status, 'running', label);
    }
  } finally {
    await cleanup(sandbox);
  }
});

it('persistent: files survive stop(); Sandbox.get({resume:true}) brings a new session with them', async () => {
  const { server } = ctx;
  const name = uniqueName('persist');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000, persistent: true });
  let resumed;
  try {
    assert.equal(sandbox.persistent, true);
    const sid = sandbox.currentSession().sessionId;
    await sandbox.writeFiles([
      { path: 'keep/kept.txt', content: Buffer.from('kept across sessions') },
      { path: '/tmp/outside.txt', content: Buffer.from('tmp') },
    ]);
    await sandbox.stop();

    let hooked = 0;
    const mark = server.requestCount;
    resumed = await Sandbox.get({ ...server.credentials, name, resume: true, onResume: async () => { hooked++; } });
    assert.deepEqual(lines(server.requestsSince(mark)), [`GET ${getPath(name)}&resume=true`]);
    assert.equal(hooked, 1);
    assert.notEqual(resumed.currentSession().sessionId, sid);
    assert.equal(resumed.status, 'running');
    assert.equal(resumed.persistent, true);
    assert.deepEqual(await resumed.readFileToBuffer({ path: 'keep/kept.txt' }), Buffer.from('kept across sessions'));
    const r = await resumed.runCommand('cat', ['keep/kept.txt']);
    assert.equal(await r.stdout(), 'kept across sessions');
  } finally {
    await cleanup(resumed, sandbox);
  }
});

it('persistent: an operation after stop() resumes with the files (two generations)', async () => {
  const { server } = ctx;
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000, persistent: true });
  try {
    await sandbox.writeFiles([{ path: 'gen1.txt', content: Buffer.from('one') }]);
    const s1 = sandbox.currentSession().sessionId;
    await sandbox.stop();
    assert.deepEqual(await sandbox.readFileToBuffer({ path: 'gen1.txt' }), Buffer.from('one'));
    const s2 = sandbox.currentSession().sessionId;
    assert.notEqual(s2, s1);
    await sandbox.writeFiles([{ path: 'gen2.txt', content: Buffer.from('two') }]);
    await sandbox.runCommand('rm', ['gen1.txt']);
    await sandbox.stop();
    const r = await sandbox.runCommand('sh', ['-c', 'cat gen2.txt; test ! -e gen1.txt']);
    assert.notEqual(sandbox.currentSession().sessionId, s2);
    assert.equal(r.exitCode, 0, 'the deletion persisted too');
    assert.equal(await r.stdout(), 'two');
  } finally {
    await cleanup(sandbox);
  }
});

it('persistent: update({persistent:true}) on a running sandbox keeps its files from then on', async () => {
  const { server } = ctx;
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000, persistent: false });
  try {
    await sandbox.update({ persistent: true });
    assert.equal(sandbox.persistent, true);
    await sandbox.writeFiles([{ path: 'late.txt', content: Buffer.from('persisted after update') }]);
    await sandbox.stop();
    assert.deepEqual(await sandbox.readFileToBuffer({ path: 'late.txt' }), Buffer.from('persisted after update'));
  } finally {
    await cleanup(sandbox);
  }
});

it('Sandbox.get without resume: a stopped sandbox stays stopped until an operation resumes it', async () => {
  const { server } = ctx;
  const name = uniqueName('noresume');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000 });
  try {
    const sid = sandbox.currentSession().sessionId;
    await sandbox.stop();
    let hooked = 0;
    const got = await Sandbox.get({ ...server.credentials, name, onResume: async () => { hooked++; } });
    assert.equal(got.currentSession().sessionId, sid);
    assert.ok(['stopping', 'stopped'].includes(got.status), `status ${got.status}`);
    assert.equal(hooked, 0);
    const again = await Sandbox.get({ ...server.credentials, name, resume: false });
    assert.equal(again.currentSession().sessionId, sid);
    const sessions = await got.listSessions();
    assert.deepEqual(sessions.sessions.map((s) => s.id), [sid], 'no session was started');

    // The first operation on that instance resumes.
    const r = await got.runCommand('echo', ['now']);
    assert.equal(await r.stdout(), 'now\n');
    assert.notEqual(got.currentSession().sessionId, sid);
    assert.equal(hooked, 1);
  } finally {
    await cleanup(sandbox);
  }
});

it('listSessions: every session of the sandbox, cursor pagination and sortOrder', async () => {
  const { server } = ctx;
  const creds = ownProject(server);
  const name = uniqueName('sessions');
  const sandbox = await Sandbox.create({ ...creds, name, timeout: 60_000 });
  try {
    const ids = [sandbox.currentSession().sessionId];
    for (let i = 0; i < 2; i++) {
      await sandbox.stop();
      await sandbox.runCommand('true'); // resumes
      ids.push(sandbox.currentSession().sessionId);
    }
    assert.equal(new Set(ids).size, 3);
    const [s1, s2, s3] = ids;

    const mark = server.requestCount;
    const asc = await sandbox.listSessions({ sortOrder: 'asc' });
    assert.deepEqual(lines(server.requestsSince(mark)),
      [`GET /v2/sandboxes/sessions?teamId=team_compat&project=${creds.projectId}&name=${name}&sortOrder=asc`]);
    assert.deepEqual(asc.sessions.map((s) => s.id), [s1, s2, s3]);
    assert.deepEqual(asc.pagination, { count: 3, next: null });
    assert.deepEqual(asc.sessions.map((s) => s.status).slice(0, 2), ['stopped', 'stopped']);
    assert.equal(asc.sessions[2].status, 'running');
    for (const s of asc.sessions) {
      assert.equal(typeof s.createdAt, 'number');
      assert.equal(typeof s.timeout, 'number');
      assert.equal(s.cwd, '/vercel/sandbox');
    }
    const desc = await sandbox.listSessions({ sortOrder: 'desc' });
    assert.deepEqual(desc.sessions.map((s) => s.id), [s3, s2, s1]);

    const page1 = await sandbox.listSessions({ sortOrder: 'asc', limit: 2 });
    assert.deepEqual(page1.sessions.map((s) => s.id), [s1, s2]);
    assert.equal(page1.pagination.count, 2);
    assert.equal(typeof page1.pagination.next, 'string');
    const page2 = await sandbox.listSessions({ sortOrder: 'asc', limit: 2, cursor: page1.pagination.next });
    assert.deepEqual(page2.sessions.map((s) => s.id), [s3]);
    assert.deepEqual(page2.pagination, { count: 1, next: null });
    const walked = await (await sandbox.listSessions({ sortOrder: 'asc', limit: 1 })).toArray();
    assert.deepEqual(walked.map((s) => s.id), [s1, s2, s3]);

    // Only this sandbox's sessions.
    const other = await Sandbox.create({ ...creds, timeout: 60_000 });
    try {
      assert.deepEqual((await sandbox.listSessions({ sortOrder: 'asc' })).sessions.map((s) => s.id), [s1, s2, s3]);
      assert.deepEqual((await other.listSessions()).sessions.map((s) => s.id), [other.currentSession().sessionId]);
    } finally {
      await cleanup(other);
    }
  } finally {
    await cleanup(sandbox);
  }
});

// The persistent sandbox's saved filesystem is a snapshot the next session
// restores (currentSnapshotId). When it is gone, Sandbox.get answers 410
// snapshot_not_found, and getOrCreate replaces the sandbox.
it('persistent: a deleted restore snapshot is 410 snapshot_not_found; getOrCreate deletes and recreates', async (t) => {
  const { server } = ctx;
  const creds = ownProject(server);
  const name = uniqueName('stale');
  const sandbox = await Sandbox.create({ ...creds, name, timeout: 60_000, persistent: true });
  try {
    await sandbox.writeFiles([{ path: 'old.txt', content: Buffer.from('old') }]);
    const stopped = await sandbox.stop();
    const got = await Sandbox.get({ ...creds, name });
    const snapshotId = stopped.snapshot?.id ?? got.currentSnapshotId;
    if (!snapshotId) {
      t.skip('neither the stop answer nor the sandbox names the snapshot a persistent sandbox restores from');
      return;
    }
    const snap = await Snapshot.get({ ...creds, snapshotId });
    await snap.delete();
    await assert.rejects(Sandbox.get({ ...creds, name }), (err) => {
      apiError(410)(err);
      assert.equal(err.json.error.code, 'snapshot_not_found');
      return true;
    });
    let created = 0;
    const mark = server.requestCount;
    const fresh = await Sandbox.getOrCreate({ ...creds, name, timeout: 60_000, onCreate: async () => { created++; } });
    try {
      assert.deepEqual(lines(server.requestsSince(mark)).slice(0, 3), [
        `GET ${getPath(name, creds.projectId)}`,
        `DELETE ${getPath(name, creds.projectId)}`,
        'POST /v3/sandboxes?teamId=team_compat',
      ]);
      assert.equal(created, 1);
      assert.equal(fresh.name, name);
      assert.equal(await fresh.readFileToBuffer({ path: 'old.txt' }), null);
    } finally {
      await cleanup(fresh);
    }
  } finally {
    await cleanup(sandbox);
  }
});
