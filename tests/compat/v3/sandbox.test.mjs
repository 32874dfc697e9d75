// SPDX-License-Identifier: MIT
// SDK 3.5.0: named sandboxes. Create (the /v3 image route by default, the /v2
// route with a runtime), name/persistent/status/routes/session, Sandbox.get,
// Sandbox.getOrCreate, Sandbox.list (cursor pagination, namePrefix, sortBy,
// tags), update, delete, error answers, and the optional features sbxd
// refuses (fork, drives, interactive).
import assert from 'node:assert/strict';
import { Drive, Sandbox, Session } from 'sdk3';
import {
  apiError, bodyOf, cleanup, is4xx, lines, notSupported, ownProject, uniqueName, useSbxd,
} from './common.mjs';

const ctx = useSbxd();
const it = ctx.it;

it('Sandbox.create: defaults go to POST /v3/sandboxes; name, status, routes and session', async () => {
  const { server } = ctx;
  const mark = server.requestCount;
  const sandbox = await Sandbox.create({ ...server.credentials });
  try {
    const [req] = server.requestsSince(mark);
    assert.equal(`${req.method} ${req.path}`, 'POST /v3/sandboxes?teamId=team_compat');
    assert.deepEqual(bodyOf(req), { projectId: 'prj_compat', ports: [] });
    assert.ok(req.status >= 200 && req.status < 300, `status ${req.status}`);

    // The server names an unnamed sandbox.
    assert.equal(typeof sandbox.name, 'string');
    assert.ok(sandbox.name.length > 0);
    assert.ok(!['sessions', 'snapshots', 'drives'].includes(sandbox.name));
    assert.equal(typeof sandbox.persistent, 'boolean');
    assert.ok(['pending', 'running'].includes(sandbox.status), `status ${sandbox.status}`);
    assert.deepEqual(sandbox.routes, []);
    assert.equal(sandbox.runtime, undefined, 'created without a runtime');
    assert.equal(sandbox.sourceSnapshotId, undefined);
    assert.equal(sandbox.networkPolicy ?? 'allow-all', 'allow-all');
    assert.ok(sandbox.createdAt instanceof Date && !Number.isNaN(sandbox.createdAt.getTime()));
    assert.ok(sandbox.updatedAt instanceof Date && !Number.isNaN(sandbox.updatedAt.getTime()));
    assert.equal(sandbox.cwd, '/vercel/sandbox');

    const session = sandbox.currentSession();
    assert.ok(session instanceof Session);
    assert.equal(typeof session.sessionId, 'string');
    assert.ok(session.sessionId.length > 0);
    assert.equal(session.status, sandbox.status);
    assert.equal(typeof session.timeout, 'number');
    assert.ok(session.timeout > 0);
    assert.equal(typeof session.vcpus, 'number');
    assert.equal(typeof session.memory, 'number');
    assert.equal(typeof session.region, 'string');

    // The SDK does not wait for "running": a command right away must work,
    // on that session.
    const m2 = server.requestCount;
    const r = await sandbox.runCommand('true');
    assert.equal(r.exitCode, 0);
    assert.deepEqual(lines(server.requestsSince(m2)),
      [`POST /v2/sandboxes/sessions/${session.sessionId}/cmd?teamId=team_compat`]);
    // Never a 1.x route.
    assert.ok(!server.requestsSince(mark).some((e) => e.path.startsWith('/v1/')));
  } finally {
    await cleanup(sandbox);
  }
});

it('Sandbox.create: with a runtime goes to POST /v2/sandboxes; name, persistent, ports, timeout, resources, env', async () => {
  const { server } = ctx;
  const name = uniqueName('rt');
  const mark = server.requestCount;
  const sandbox = await Sandbox.create({
    ...server.credentials,
    runtime: 'node24',
    name,
    persistent: true,
    ports: [3000],
    timeout: 60_000,
    resources: { vcpus: 1 },
    env: { COMPAT_GREETING: 'hello', COMPAT_OVERRIDE: 'create' },
  });
  try {
    const [req] = server.requestsSince(mark);
    assert.equal(`${req.method} ${req.path}`, 'POST /v2/sandboxes?teamId=team_compat');
    assert.deepEqual(bodyOf(req), {
      projectId: 'prj_compat',
      ports: [3000],
      timeout: 60_000,
      resources: { vcpus: 1 },
      runtime: 'node24',
      name,
      persistent: true,
      env: { COMPAT_GREETING: 'hello', COMPAT_OVERRIDE: 'create' },
    });

    assert.equal(sandbox.name, name);
    assert.equal(sandbox.persistent, true);
    // sbxd answers the runtime it provides: the host's node, whatever was asked
    const nodeVersion = await (await sandbox.runCommand('node', ['--version'])).stdout();
    assert.equal(sandbox.runtime, `node${nodeVersion.match(/^v(\d+)/)[1]}`);
    assert.equal(sandbox.timeout, 60_000);
    const session = sandbox.currentSession();
    assert.equal(session.timeout, 60_000);
    assert.equal(session.vcpus, 1);
    assert.equal(session.memory, 2048);

    assert.equal(sandbox.routes.length, 1);
    const [route] = sandbox.routes;
    assert.equal(route.port, 3000);
    assert.equal(typeof route.url, 'string');
    assert.equal(typeof route.subdomain, 'string');
    assert.equal(sandbox.domain(3000), `https://${route.subdomain}.vercel.run`);
    assert.throws(() => sandbox.domain(3001), /No route for port 3001/);

    // Create-time env reaches commands; a command's env wins over it.
    const r = await sandbox.runCommand({
      cmd: 'sh',
      args: ['-c', 'printf "%s|%s" "$COMPAT_GREETING" "$COMPAT_OVERRIDE"'],
      env: { COMPAT_OVERRIDE: 'command' },
    });
    assert.equal(await r.stdout(), 'hello|command');
  } finally {
    await cleanup(sandbox);
  }
});

it('Sandbox.create: a name that exists already is refused with 409 (not retried)', async () => {
  const { server } = ctx;
  const name = uniqueName('dup');
  const first = await Sandbox.create({ ...server.credentials, name, timeout: 60_000 });
  try {
    const mark = server.requestCount;
    await assert.rejects(
      Sandbox.create({ ...server.credentials, name, timeout: 60_000, signal: server.failFastSignal() }),
      apiError(409),
    );
    assert.equal(server.requestCount - mark, 1, 'a 4xx must not be retried');
    // The existing sandbox is untouched.
    const got = await Sandbox.get({ ...server.credentials, name });
    assert.equal(got.currentSession().sessionId, first.currentSession().sessionId);
    assert.equal(got.status, 'running');
  } finally {
    await cleanup(first);
  }
});

it('Sandbox.create: the reserved names sessions, snapshots and drives are refused with a 4xx', async () => {
  const { server } = ctx;
  // A project of its own: a server that wrongly accepts one must not
  // disturb the other tests.
  const creds = ownProject(server);
  for (const name of ['sessions', 'snapshots', 'drives']) {
    await assert.rejects(
      Sandbox.create({ ...creds, name, timeout: 60_000, signal: server.failFastSignal() }),
      apiError(is4xx),
      `name ${name}`,
    );
  }
});

it('Sandbox.create: bad parameters are refused with a 4xx APIError carrying the server message', async () => {
  const { server } = ctx;
  const mark = server.requestCount;
  await assert.rejects(
    Sandbox.create({ ...server.credentials, resources: { vcpus: 1000 }, signal: server.failFastSignal() }),
    apiError(is4xx),
  );
  assert.equal(server.requestCount - mark, 1, 'a 4xx must not be retried');
});

it('Sandbox.get: by name, without resume, returns the same sandbox and session', async () => {
  const { server } = ctx;
  const name = uniqueName('get');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000, ports: [4000] });
  try {
    const mark = server.requestCount;
    const got = await Sandbox.get({ ...server.credentials, name });
    assert.deepEqual(lines(server.requestsSince(mark)),
      [`GET /v2/sandboxes/${name}?teamId=team_compat&projectId=prj_compat`]);
    assert.equal(got.name, name);
    assert.equal(got.persistent, sandbox.persistent);
    assert.equal(got.createdAt.getTime(), sandbox.createdAt.getTime());
    assert.equal(got.timeout, 60_000);
    assert.equal(got.status, 'running');
    assert.equal(got.currentSession().sessionId, sandbox.currentSession().sessionId);
    assert.equal(got.currentSession().timeout, 60_000);
    assert.deepEqual(got.routes, sandbox.routes);
    // The instance from get() is fully usable.
    const r = await got.runCommand('echo', ['via get']);
    assert.equal(await r.stdout(), 'via get\n');
  } finally {
    await cleanup(sandbox);
  }
});

it('Sandbox.get: resume:true on a running sandbox keeps its session and does not call onResume', async () => {
  const { server } = ctx;
  const name = uniqueName('getres');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000 });
  try {
    let resumed = 0;
    const mark = server.requestCount;
    const got = await Sandbox.get({ ...server.credentials, name, resume: true, onResume: async () => { resumed++; } });
    assert.deepEqual(lines(server.requestsSince(mark)),
      [`GET /v2/sandboxes/${name}?teamId=team_compat&projectId=prj_compat&resume=true`]);
    assert.equal(got.currentSession().sessionId, sandbox.currentSession().sessionId);
    assert.equal(got.status, 'running');
    assert.equal(resumed, 0);
  } finally {
    await cleanup(sandbox);
  }
});

it('Sandbox.get: an unknown name rejects with a 404 APIError naming the sandbox', async () => {
  const { server } = ctx;
  const name = uniqueName('nosuch');
  const mark = server.requestCount;
  await assert.rejects(
    Sandbox.get({ ...server.credentials, name, signal: server.failFastSignal() }),
    (err) => {
      apiError(404)(err);
      assert.equal(err.sandboxName, name);
      return true;
    },
  );
  assert.equal(server.requestCount - mark, 1, 'a 404 must not be retried');
});

it('Sandbox.getOrCreate: creates once under the name (onCreate), then returns the existing one', async () => {
  const { server } = ctx;
  const name = uniqueName('goc');
  let created = 0;
  const params = {
    ...server.credentials,
    name,
    timeout: 60_000,
    onCreate: async (s) => {
      created++;
      await s.writeFiles([{ path: 'seed.txt', content: Buffer.from('seeded once') }]);
    },
  };
  const mark = server.requestCount;
  const a = await Sandbox.getOrCreate(params);
  let b;
  try {
    const first = server.requestsSince(mark);
    assert.deepEqual(lines(first).slice(0, 2), [
      `GET /v2/sandboxes/${name}?teamId=team_compat&projectId=prj_compat`,
      'POST /v3/sandboxes?teamId=team_compat',
    ]);
    assert.equal(first[0].status, 404);
    assert.equal(bodyOf(first[1]).name, name);
    assert.equal(created, 1);
    assert.equal(a.name, name);

    const m2 = server.requestCount;
    b = await Sandbox.getOrCreate(params);
    assert.deepEqual(lines(server.requestsSince(m2)),
      [`GET /v2/sandboxes/${name}?teamId=team_compat&projectId=prj_compat`]);
    assert.equal(created, 1, 'onCreate runs only for a new sandbox');
    assert.equal(b.name, name);
    assert.equal(b.currentSession().sessionId, a.currentSession().sessionId);
    assert.deepEqual(await b.readFileToBuffer({ path: 'seed.txt' }), Buffer.from('seeded once'));
  } finally {
    await cleanup(a, b);
  }
});

it('Sandbox.list: cursor pagination, sortBy/sortOrder, namePrefix and tags in a project of its own', async () => {
  const { server } = ctx;
  const creds = ownProject(server);
  const p = uniqueName('ls');
  // Created in an order that differs from the names' order.
  const spec = [
    { name: `${p}-b` },
    { name: `${p}-c` },
    { name: `${p}-a` },
    { name: `z${p}-other`, tags: { role: 'odd' } },
  ];
  const created = [];
  try {
    for (const s of spec) created.push(await Sandbox.create({ ...creds, timeout: 60_000, ...s }));
    const [b, c, a, other] = created.map((s) => s.name);
    const names = (page) => page.sandboxes.map((s) => s.name);

    const mark = server.requestCount;
    const all = await Sandbox.list({ ...creds, sortBy: 'name', sortOrder: 'asc' });
    assert.deepEqual(lines(server.requestsSince(mark)),
      [`GET /v2/sandboxes?teamId=team_compat&project=${creds.projectId}&sortBy=name&sortOrder=asc`]);
    assert.deepEqual(names(all), [a, b, c, other]);
    assert.deepEqual(all.pagination, { count: 4, next: null });
    for (const [i, item] of all.sandboxes.entries()) {
      const sandbox = created.find((s) => s.name === item.name);
      assert.equal(item.status, 'running');
      assert.equal(typeof item.persistent, 'boolean');
      assert.equal(item.currentSessionId, sandbox.currentSession().sessionId, `item ${i}`);
      assert.equal(item.createdAt, sandbox.createdAt.getTime());
      assert.equal(typeof item.updatedAt, 'number');
    }
    assert.deepEqual(all.sandboxes.find((s) => s.name === other).tags, { role: 'odd' });

    assert.deepEqual(names(await Sandbox.list({ ...creds, sortBy: 'name', sortOrder: 'desc' })), [other, c, b, a]);
    assert.deepEqual(names(await Sandbox.list({ ...creds, sortBy: 'createdAt', sortOrder: 'asc' })), [b, c, a, other]);
    assert.deepEqual(names(await Sandbox.list({ ...creds, sortBy: 'createdAt', sortOrder: 'desc' })), [other, a, c, b]);

    // Cursor pagination: next is handed back unchanged as cursor.
    const page1 = await Sandbox.list({ ...creds, limit: 3, sortBy: 'name', sortOrder: 'asc' });
    assert.deepEqual(names(page1), [a, b, c]);
    assert.equal(page1.pagination.count, 3);
    assert.equal(typeof page1.pagination.next, 'string');
    const m2 = server.requestCount;
    const page2 = await Sandbox.list({ ...creds, limit: 3, sortBy: 'name', sortOrder: 'asc', cursor: page1.pagination.next });
    assert.deepEqual(lines(server.requestsSince(m2)), [
      `GET /v2/sandboxes?teamId=team_compat&project=${creds.projectId}&limit=3&sortBy=name&sortOrder=asc` +
      `&${new URLSearchParams({ cursor: page1.pagination.next })}`,
    ]);
    assert.deepEqual(names(page2), [other]);
    assert.deepEqual(page2.pagination, { count: 1, next: null });

    // The SDK's auto-paginator walks every page.
    const walked = await (await Sandbox.list({ ...creds, limit: 1, sortBy: 'name', sortOrder: 'asc' })).toArray();
    assert.deepEqual(walked.map((s) => s.name), [a, b, c, other]);

    // namePrefix and a tag filter.
    assert.deepEqual(names(await Sandbox.list({ ...creds, namePrefix: `${p}-`, sortBy: 'name', sortOrder: 'asc' })), [a, b, c]);
    assert.deepEqual(names(await Sandbox.list({ ...creds, namePrefix: `${p}-c` })), [c]);
    assert.deepEqual(names(await Sandbox.list({ ...creds, namePrefix: 'no-such-prefix-' })), []);
    assert.deepEqual(names(await Sandbox.list({ ...creds, tags: { role: 'odd' } })), [other]);
    assert.deepEqual(names(await Sandbox.list({ ...creds, tags: { role: 'even' } })), []);

    // A stopped sandbox is still listed, with its status.
    await created[0].stop();
    const afterStop = await Sandbox.list({ ...creds, sortBy: 'name', sortOrder: 'asc' });
    assert.deepEqual(names(afterStop), [a, b, c, other]);
    assert.ok(['stopping', 'stopped'].includes(afterStop.sandboxes[1].status), `status ${afterStop.sandboxes[1].status}`);
    // Nothing of this project shows up elsewhere.
    const outside = await Sandbox.list({ ...server.credentials, namePrefix: `${p}-` });
    assert.deepEqual(names(outside), []);
  } finally {
    await cleanup(...created);
  }
});

it('sandbox.update({timeout}): PATCH sets the default, then the running session is extended by the difference', async () => {
  const { server } = ctx;
  const name = uniqueName('updt');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000 });
  try {
    const sid = sandbox.currentSession().sessionId;
    const mark = server.requestCount;
    await sandbox.update({ timeout: 120_000 });
    const reqs = server.requestsSince(mark);
    assert.deepEqual(lines(reqs), [
      `PATCH /v2/sandboxes/${name}?teamId=team_compat&projectId=prj_compat`,
      `POST /v2/sandboxes/sessions/${sid}/extend-timeout?teamId=team_compat`,
    ]);
    assert.deepEqual(bodyOf(reqs[0]), { timeout: 120_000 });
    assert.deepEqual(bodyOf(reqs[1]), { duration: 60_000 });
    assert.equal(sandbox.timeout, 120_000);
    assert.equal(sandbox.currentSession().timeout, 120_000);
    const got = await Sandbox.get({ ...server.credentials, name });
    assert.equal(got.timeout, 120_000);
    assert.equal(got.currentSession().timeout, 120_000);

    // A smaller default changes only the sandbox: no extend-timeout call.
    const m2 = server.requestCount;
    await sandbox.update({ timeout: 30_000 });
    assert.deepEqual(lines(server.requestsSince(m2)),
      [`PATCH /v2/sandboxes/${name}?teamId=team_compat&projectId=prj_compat`]);
    assert.equal(sandbox.timeout, 30_000);
    assert.equal((await Sandbox.get({ ...server.credentials, name })).timeout, 30_000);
  } finally {
    await cleanup(sandbox);
  }
});

it('sandbox.update({persistent}): the flag flips and Sandbox.get reports it', async () => {
  const { server } = ctx;
  const name = uniqueName('updp');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000, persistent: false });
  try {
    assert.equal(sandbox.persistent, false);
    const mark = server.requestCount;
    await sandbox.update({ persistent: true });
    const reqs = server.requestsSince(mark);
    assert.deepEqual(lines(reqs), [`PATCH /v2/sandboxes/${name}?teamId=team_compat&projectId=prj_compat`]);
    assert.deepEqual(bodyOf(reqs[0]), { persistent: true });
    assert.equal(sandbox.persistent, true);
    assert.equal((await Sandbox.get({ ...server.credentials, name })).persistent, true);
    await sandbox.update({ persistent: false });
    assert.equal(sandbox.persistent, false);
    assert.equal((await Sandbox.get({ ...server.credentials, name })).persistent, false);
    // The session is not disturbed by a configuration change.
    assert.equal(sandbox.status, 'running');
    assert.equal((await sandbox.runCommand('true')).exitCode, 0);
  } finally {
    await cleanup(sandbox);
  }
});

it('sandbox.update: an unknown sandbox is a 404', async () => {
  const { server } = ctx;
  const name = uniqueName('upd404');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000 });
  await sandbox.delete();
  await assert.rejects(sandbox.update({ timeout: 90_000 }), apiError(404));
});

it('sandbox.delete(): the name is gone (get → 404, not listed) and can be used again', async () => {
  const { server } = ctx;
  const creds = ownProject(server);
  const name = uniqueName('del');
  const sandbox = await Sandbox.create({ ...creds, name, timeout: 60_000 });
  let again;
  try {
    const mark = server.requestCount;
    await sandbox.delete();
    const [req] = server.requestsSince(mark);
    assert.equal(`${req.method} ${req.path}`, `DELETE /v2/sandboxes/${name}?teamId=team_compat&projectId=${creds.projectId}`);
    assert.ok(req.status >= 200 && req.status < 300, `status ${req.status}`);
    await assert.rejects(Sandbox.get({ ...creds, name }), apiError(404));
    assert.deepEqual((await Sandbox.list({ ...creds })).sandboxes.map((s) => s.name), []);
    // A second delete: the sandbox is unknown now.
    await assert.rejects(sandbox.delete(), apiError(404));
    again = await Sandbox.create({ ...creds, name, timeout: 60_000 });
    assert.equal(again.name, name);
    assert.notEqual(again.currentSession().sessionId, sandbox.currentSession().sessionId);
  } finally {
    await cleanup(again);
  }
});

// Optional features sbxd does not implement: a 400 "not_supported" naming
// the feature, so a caller learns at once what is missing.
it('not supported: Sandbox.fork', async () => {
  const { server } = ctx;
  const name = uniqueName('fork');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000 });
  try {
    const mark = server.requestCount;
    await assert.rejects(
      Sandbox.fork({ ...server.credentials, sourceSandbox: name, name: uniqueName('forked'), signal: server.failFastSignal() }),
      notSupported(/fork/i),
    );
    assert.deepEqual(lines(server.requestsSince(mark)),
      [`POST /v2/sandboxes/${name}/fork?teamId=team_compat&projectId=prj_compat`]);
  } finally {
    await cleanup(sandbox);
  }
});

it('not supported: drives (Drive.getOrCreate, Drive.list, Sandbox.create with mounts)', async () => {
  const { server } = ctx;
  const creds = ownProject(server);
  await assert.rejects(
    Drive.getOrCreate({ ...creds, name: uniqueName('drive'), signal: server.failFastSignal() }),
    notSupported(/drive/i),
  );
  await assert.rejects(
    Drive.list({ ...creds, signal: server.failFastSignal() }),
    notSupported(/drive/i),
  );
  await assert.rejects(
    Sandbox.create({ ...creds, timeout: 60_000, mounts: { '/data': { drive: 'some-drive', mode: 'read-write' } }, signal: server.failFastSignal() }),
    notSupported(/drive/i),
  );
  // Nothing was created.
  assert.deepEqual((await Sandbox.list({ ...creds })).sandboxes, []);
});

it('not supported: sandbox.openInteractive', async () => {
  const { server } = ctx;
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000 });
  try {
    const mark = server.requestCount;
    await assert.rejects(sandbox.openInteractive({ signal: server.failFastSignal() }), notSupported(/interactive/i));
    assert.deepEqual(lines(server.requestsSince(mark)),
      [`POST /v2/sandboxes/sessions/${sandbox.currentSession().sessionId}/interactive?teamId=team_compat`]);
    // The sandbox is unaffected.
    assert.equal((await sandbox.runCommand('true')).exitCode, 0);
  } finally {
    await cleanup(sandbox);
  }
});

it('APIError: the server message and code are on the error; the SDK adds the session id', async () => {
  const { server } = ctx;
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000 });
  try {
    await assert.rejects(sandbox.getCommand('cmd_doesnotexist00000000'), (err) => {
      apiError(404)(err);
      assert.equal(err.sessionId, sandbox.currentSession().sessionId);
      return true;
    });
  } finally {
    await cleanup(sandbox);
  }
});
