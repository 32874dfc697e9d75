// SPDX-License-Identifier: MIT
// Sandbox life cycle through the official SDK: create, get, list, domain,
// network policy, extend timeout, stop, and errors.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { APIError, Sandbox } from '@vercel/sandbox';
import { startSbxd } from './sbxd.mjs';

let server;
before(async () => { server = await startSbxd(); });
after(async () => { await server?.stop(); });

/** A test whose failure message shows the SDK's last requests and sbxd's answers. */
function it(name, fn) {
  test(name, { timeout: 60_000 }, (t) => server.traced(fn)(t));
}

const STATUSES = ['pending', 'running', 'stopping', 'stopped', 'failed', 'aborted', 'snapshotting'];

/** Stops a sandbox at the end of a test, whatever state it is in. */
async function cleanup(...sandboxes) {
  for (const s of sandboxes) await s?.stop().catch(() => {});
}

it('Sandbox.create: with defaults', async () => {
  const sandbox = await Sandbox.create({ ...server.credentials });
  try {
    assert.equal(typeof sandbox.sandboxId, 'string');
    assert.ok(sandbox.sandboxId.length > 0);
    assert.ok(STATUSES.includes(sandbox.status), `status ${sandbox.status}`);
    assert.equal(typeof sandbox.timeout, 'number');
    assert.ok(sandbox.timeout > 0);
    assert.ok(sandbox.createdAt instanceof Date && !Number.isNaN(sandbox.createdAt.getTime()));
    assert.equal(sandbox.networkPolicy ?? 'allow-all', 'allow-all');
    assert.deepEqual(sandbox.routes, []);
    assert.equal(sandbox.sourceSnapshotId, undefined);
    // The SDK does not wait for "running": a command right away must work.
    const r = await sandbox.runCommand('true');
    assert.equal(r.exitCode, 0);
  } finally {
    await cleanup(sandbox);
  }
});

it('Sandbox.create: with env, ports, timeout, resources and networkPolicy', async () => {
  const sandbox = await Sandbox.create({
    ...server.credentials,
    env: { COMPAT_GREETING: 'hello from create', COMPAT_OVERRIDE: 'create' },
    ports: [3000, 8080],
    timeout: 123_000,
    resources: { vcpus: 1 },
    networkPolicy: { allow: ['example.com', '*.example.org'] },
  });
  try {
    assert.equal(sandbox.timeout, 123_000);
    assert.deepEqual(sandbox.networkPolicy, { allow: ['example.com', '*.example.org'] });
    assert.deepEqual(sandbox.routes.map((r) => r.port).sort((a, b) => a - b), [3000, 8080]);
    for (const r of sandbox.routes) {
      assert.equal(typeof r.url, 'string');
      assert.equal(typeof r.subdomain, 'string');
    }
    // Create-time env reaches commands; a command's env wins over it.
    const r = await sandbox.runCommand({
      cmd: 'sh',
      args: ['-c', 'printf "%s|%s" "$COMPAT_GREETING" "$COMPAT_OVERRIDE"'],
      env: { COMPAT_OVERRIDE: 'command' },
    });
    assert.equal(r.exitCode, 0);
    assert.equal(await r.stdout(), 'hello from create|command');
    // vcpus/memory are not getters of Sandbox; stop() returns the metadata.
    const meta = await sandbox.stop();
    assert.equal(meta.vcpus, 1);
    assert.equal(meta.memory, 2048);
  } finally {
    await cleanup(sandbox);
  }
});

it('Sandbox.create: with networkPolicy deny-all', async () => {
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000, networkPolicy: 'deny-all' });
  try {
    assert.equal(sandbox.networkPolicy, 'deny-all');
    const again = await Sandbox.get({ ...server.credentials, sandboxId: sandbox.sandboxId });
    assert.equal(again.networkPolicy, 'deny-all');
  } finally {
    await cleanup(sandbox);
  }
});

it('Sandbox.create: rejects bad parameters with an APIError (4xx, not retried)', async () => {
  const sent = server.requestCount;
  await assert.rejects(
    Sandbox.create({ ...server.credentials, resources: { vcpus: 1000 } }),
    (err) => err instanceof APIError && err.response.status >= 400 && err.response.status < 500,
  );
  assert.equal(server.requestCount - sent, 1, 'a 4xx must not be retried');
});

it('Sandbox.get: returns the same sandbox with its routes', async () => {
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000, ports: [4000] });
  try {
    const got = await Sandbox.get({ ...server.credentials, sandboxId: sandbox.sandboxId });
    assert.equal(got.sandboxId, sandbox.sandboxId);
    assert.equal(got.status, 'running');
    assert.equal(got.timeout, 60_000);
    assert.equal(got.createdAt.getTime(), sandbox.createdAt.getTime());
    assert.deepEqual(got.routes, sandbox.routes);
    // The instance from get() is fully usable.
    const r = await got.runCommand('echo', ['via get']);
    assert.equal(await r.stdout(), 'via get\n');
  } finally {
    await cleanup(sandbox);
  }
});

it('Sandbox.get: of an unknown id rejects with a 404 APIError', async () => {
  await assert.rejects(
    Sandbox.get({ ...server.credentials, sandboxId: 'sbx_doesnotexist00000000' }),
    (err) => err instanceof APIError && err.response.status === 404,
  );
});

it('Sandbox.list: pages newest first with count, next and prev', async () => {
  // A project of its own, so other tests' sandboxes do not show up.
  const creds = { ...server.credentials, projectId: `prj_list_${randomUUID()}` };
  const created = [];
  try {
    for (let i = 0; i < 3; i++) created.push(await Sandbox.create({ ...creds, timeout: 60_000 }));
    const [a, b, c] = created;

    const all = await Sandbox.list({ ...creds });
    assert.deepEqual(all.json.sandboxes.map((s) => s.id), [c, b, a].map((s) => s.sandboxId));
    assert.deepEqual(all.json.pagination, { count: 3, next: null, prev: null });
    for (const s of all.json.sandboxes) {
      assert.equal(s.status, 'running');
      assert.equal(typeof s.createdAt, 'number');
      assert.equal(typeof s.memory, 'number');
    }

    const page1 = await Sandbox.list({ ...creds, limit: 2 });
    assert.deepEqual(page1.json.sandboxes.map((s) => s.id), [c.sandboxId, b.sandboxId]);
    assert.equal(page1.json.pagination.count, 2);
    assert.equal(typeof page1.json.pagination.next, 'number');
    assert.equal(page1.json.pagination.prev, null);

    // next is the value to pass as `until` for the following (older) page.
    const page2 = await Sandbox.list({ ...creds, limit: 2, until: page1.json.pagination.next });
    assert.deepEqual(page2.json.sandboxes.map((s) => s.id), [a.sandboxId]);
    assert.equal(page2.json.pagination.count, 1);
    assert.equal(page2.json.pagination.next, null);
    assert.equal(typeof page2.json.pagination.prev, 'number');

    // prev is the value to pass as `since` to get the newer items back; a
    // Date is accepted as well as a number.
    const newer = await Sandbox.list({ ...creds, since: new Date(page2.json.pagination.prev) });
    assert.deepEqual(newer.json.sandboxes.map((s) => s.id), [c.sandboxId, b.sandboxId]);

    // Stopped sandboxes are still listed, with their final status.
    await a.stop();
    const afterStop = await Sandbox.list({ ...creds });
    assert.equal(afterStop.json.sandboxes.find((s) => s.id === a.sandboxId)?.status, 'stopped');
  } finally {
    await cleanup(...created);
  }
});

it('routes: domain() resolves a listed port and throws for an unlisted one', async () => {
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000, ports: [3000] });
  try {
    const d = sandbox.domain(3000);
    assert.match(d, /^https:\/\/[^/]+\.vercel\.run$/);
    assert.throws(() => sandbox.domain(3001), /No route for port 3001/);
  } finally {
    await cleanup(sandbox);
  }
});

it('routes: a route url reaches a server listening on that port in the sandbox', async (t) => {
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000, ports: [3000] });
  try {
    const probe = await sandbox.runCommand('sh', ['-c', 'command -v node']);
    if (probe.exitCode !== 0) {
      t.skip('no node inside the sandbox to serve HTTP');
      return;
    }
    const srv = await sandbox.runCommand({
      cmd: 'node',
      args: ['-e', `require('http').createServer((q, s) => s.end('hi from ' + q.url))
                    .listen(3000, '127.0.0.1', () => console.log('listening'))`],
      detached: true,
    });
    for await (const log of srv.logs()) if (log.data.includes('listening')) break;
    const { url } = sandbox.routes.find((r) => r.port === 3000);
    const res = await fetch(`${url}/compat`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'hi from /compat');
    await srv.kill();
  } finally {
    await cleanup(sandbox);
  }
});

// Every mode change an SDK user can make, each checked on the value
// updateNetworkPolicy returns, on sandbox.networkPolicy and on a fresh
// Sandbox.get. Starting from allow-all, as Sandbox.create does by default.
it('network policy: allow-all -> deny-all -> {allow:[...]} -> allow-all', async () => {
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000 });
  const observe = async (expected) => {
    assert.deepEqual(sandbox.networkPolicy, expected);
    const got = await Sandbox.get({ ...server.credentials, sandboxId: sandbox.sandboxId });
    assert.deepEqual(got.networkPolicy, expected);
  };
  try {
    assert.equal(await sandbox.updateNetworkPolicy('deny-all'), 'deny-all');
    await observe('deny-all');
    assert.deepEqual(await sandbox.updateNetworkPolicy({ allow: ['example.com'] }), { allow: ['example.com'] });
    await observe({ allow: ['example.com'] });
    assert.equal(await sandbox.updateNetworkPolicy('allow-all'), 'allow-all');
    await observe('allow-all');
    // Still a working sandbox afterwards.
    assert.equal((await sandbox.runCommand('true')).exitCode, 0);
  } finally {
    await cleanup(sandbox);
  }
});

it('network policy: deny-all -> {allow:[...]} -> allow-all (starting isolated)', async () => {
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000, networkPolicy: 'deny-all' });
  try {
    assert.deepEqual(await sandbox.updateNetworkPolicy({ allow: ['example.com'] }), { allow: ['example.com'] });
    assert.deepEqual(sandbox.networkPolicy, { allow: ['example.com'] });
    assert.equal(await sandbox.updateNetworkPolicy('allow-all'), 'allow-all');
    assert.equal(sandbox.networkPolicy, 'allow-all');
    assert.equal((await sandbox.runCommand('true')).exitCode, 0);
  } finally {
    await cleanup(sandbox);
  }
});

it('network policy: custom policy with subnets round-trips through create and get', async () => {
  const policy = {
    allow: ['example.com', '*.example.org'],
    subnets: { allow: ['10.0.0.0/8'], deny: ['10.1.0.0/16'] },
  };
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000, networkPolicy: policy });
  try {
    assert.deepEqual(sandbox.networkPolicy, policy);
    const got = await Sandbox.get({ ...server.credentials, sandboxId: sandbox.sandboxId });
    assert.deepEqual(got.networkPolicy, policy);
  } finally {
    await cleanup(sandbox);
  }
});

// Header transforms (credential brokering): the SDK turns `allow: {domain:
// [{transform: [{headers}]}]}` into API injectionRules; sbxd applies them
// and echoes only the header names, which the SDK maps back to
// "<redacted>". The values never come back.
it('network policy: header transforms are accepted and echoed redacted', async () => {
  const sandbox = await Sandbox.create({
    ...server.credentials,
    timeout: 60_000,
    networkPolicy: {
      allow: {
        'api.example.com': [{ transform: [{ headers: { authorization: 'Bearer secret-value' } }] }],
        'example.org': [],
      },
    },
  });
  try {
    const policy = sandbox.networkPolicy;
    assert.deepEqual(policy, {
      allow: {
        'api.example.com': [{ transform: [{ headers: { authorization: '<redacted>' } }] }],
        'example.org': [],
      },
    });
    const answered = server.exchanges.map((e) => e.responseBody ?? '').join('\n');
    assert.ok(answered.includes('headerNames'), 'sbxd should echo the rule by header names');
    assert.ok(!answered.includes('secret-value'), 'the header value must never come back from sbxd');
    const updated = await sandbox.updateNetworkPolicy({
      allow: { '*': [{ transform: [{ headers: { 'x-api-key': 'k2' } }] }] },
    });
    assert.deepEqual(updated, { allow: { '*': [{ transform: [{ headers: { 'x-api-key': '<redacted>' } }] }] } });
  } finally {
    await cleanup(sandbox);
  }
});

it('timeout: extendTimeout grows sandbox.timeout', async () => {
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000 });
  try {
    assert.equal(sandbox.timeout, 60_000);
    await sandbox.extendTimeout(30_000);
    assert.equal(sandbox.timeout, 90_000);
    const got = await Sandbox.get({ ...server.credentials, sandboxId: sandbox.sandboxId });
    assert.equal(got.timeout, 90_000);
  } finally {
    await cleanup(sandbox);
  }
});

it('timeout: a sandbox stops by itself when its timeout is reached', async () => {
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 1_500 });
  try {
    const deadline = Date.now() + 15_000;
    let got;
    do {
      await new Promise((r) => setTimeout(r, 250));
      got = await Sandbox.get({ ...server.credentials, sandboxId: sandbox.sandboxId });
    } while (got.status !== 'stopped' && Date.now() < deadline);
    assert.equal(got.status, 'stopped');
  } finally {
    await cleanup(sandbox);
  }
});

it('stop: stop() returns the stopping/stopped sandbox and status follows', async () => {
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000 });
  const meta = await sandbox.stop();
  assert.equal(meta.id, sandbox.sandboxId);
  assert.ok(['stopping', 'stopped'].includes(meta.status), `status ${meta.status}`);
  assert.equal(sandbox.status, meta.status);
  // Stopping twice is harmless.
  await sandbox.stop();
});

it('stop: stop({blocking: true}) returns once the sandbox is stopped', async () => {
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000 });
  const meta = await sandbox.stop({ blocking: true });
  assert.equal(meta.status, 'stopped');
  assert.equal(sandbox.status, 'stopped');
  assert.equal(typeof meta.stoppedAt, 'number');
  const got = await Sandbox.get({ ...server.credentials, sandboxId: sandbox.sandboxId });
  assert.equal(got.status, 'stopped');
});

it('stop: operations on a stopped sandbox reject with an APIError', async () => {
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000 });
  await sandbox.stop({ blocking: true });
  const is4xx = (err) => err instanceof APIError && err.response.status >= 400 && err.response.status < 500;
  await assert.rejects(sandbox.runCommand('true'), is4xx);
  await assert.rejects(sandbox.runCommand({ cmd: 'sleep', args: ['1'], detached: true }), is4xx);
  await assert.rejects(sandbox.writeFiles([{ path: 'x.txt', content: Buffer.from('x') }]), is4xx);
  await assert.rejects(sandbox.mkDir('newdir'), is4xx);
  await assert.rejects(sandbox.extendTimeout(10_000), is4xx);
  await assert.rejects(sandbox.snapshot(), is4xx);
});
