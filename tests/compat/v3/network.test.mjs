// SPDX-License-Identifier: MIT
// SDK 3.5.0: network policy and timeouts. The SDK sends the caller's policy
// unchanged ({mode} for allow-all/deny-all, else {allow, subnets}); the
// server answers in the legacy {mode:"custom", allowedDomains, ...} form,
// which the SDK maps back. updateNetworkPolicy / update({networkPolicy}),
// extendTimeout and the session's timeout.
import assert from 'node:assert/strict';
import { Sandbox } from 'sdk3';
import { bodyOf, cleanup, lines, settle, uniqueName, useSbxd } from './common.mjs';

const ctx = useSbxd();
const it = ctx.it;

const policyPath = (sid) => `/v2/sandboxes/sessions/${sid}/network-policy?teamId=team_compat`;

// Each step: the policy given, the request body the SDK sends, and what the
// SDK maps the server's answer back to.
const STEPS = [
  ['deny-all', { mode: 'deny-all' }, 'deny-all'],
  [{ allow: ['example.com', '*.example.org'] }, { allow: ['example.com', '*.example.org'] }, { allow: ['example.com', '*.example.org'] }],
  [
    { allow: ['example.com'], subnets: { allow: ['10.0.0.0/8'], deny: ['10.1.0.0/16'] } },
    { allow: ['example.com'], subnets: { allow: ['10.0.0.0/8'], deny: ['10.1.0.0/16'] } },
    { allow: ['example.com'], subnets: { allow: ['10.0.0.0/8'], deny: ['10.1.0.0/16'] } },
  ],
  ['allow-all', { mode: 'allow-all' }, 'allow-all'],
];

it('updateNetworkPolicy: deny-all -> {allow} -> subnets -> allow-all, on the session and as Sandbox.get sees it', async () => {
  const { server } = ctx;
  const name = uniqueName('np');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000 });
  try {
    const sid = sandbox.currentSession().sessionId;
    for (const [policy, sent, mapped] of STEPS) {
      const mark = server.requestCount;
      const returned = await sandbox.updateNetworkPolicy(policy);
      const reqs = server.requestsSince(mark);
      assert.deepEqual(lines(reqs), [`POST ${policyPath(sid)}`], `policy ${JSON.stringify(policy)}`);
      assert.deepEqual(bodyOf(reqs[0]), sent);
      assert.deepEqual(returned, mapped, `returned for ${JSON.stringify(policy)}`);
      assert.deepEqual(sandbox.currentSession().networkPolicy, mapped);
      // The answer is the legacy form, with a mode.
      await settle();
      const answered = JSON.parse(reqs[0].responseBody).session.networkPolicy;
      assert.equal(answered.mode, typeof mapped === 'string' ? mapped : 'custom');
      const got = await Sandbox.get({ ...server.credentials, name });
      assert.equal(got.currentSession().sessionId, sid);
      assert.deepEqual(got.currentSession().networkPolicy, mapped, `Sandbox.get after ${JSON.stringify(policy)}`);
    }
    assert.equal((await sandbox.runCommand('true')).exitCode, 0);
  } finally {
    await cleanup(sandbox);
  }
});

it('Sandbox.create: a custom policy with subnets is sent unchanged and reported on the sandbox and the session', async () => {
  const { server } = ctx;
  const name = uniqueName('npc');
  const policy = {
    allow: ['example.com', '*.example.org'],
    subnets: { allow: ['10.0.0.0/8'], deny: ['10.1.0.0/16'] },
  };
  const mark = server.requestCount;
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000, networkPolicy: policy });
  try {
    assert.deepEqual(bodyOf(server.requestsSince(mark)[0]).networkPolicy, policy);
    assert.deepEqual(sandbox.networkPolicy, policy);
    assert.deepEqual(sandbox.currentSession().networkPolicy, policy);
    const got = await Sandbox.get({ ...server.credentials, name });
    assert.deepEqual(got.networkPolicy, policy);
    assert.deepEqual(got.currentSession().networkPolicy, policy);
  } finally {
    await cleanup(sandbox);
  }
});

it('Sandbox.create: deny-all', async () => {
  const { server } = ctx;
  const name = uniqueName('npd');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000, networkPolicy: 'deny-all' });
  try {
    assert.equal(sandbox.networkPolicy, 'deny-all');
    assert.equal(sandbox.currentSession().networkPolicy, 'deny-all');
    assert.equal((await Sandbox.get({ ...server.credentials, name })).currentSession().networkPolicy, 'deny-all');
  } finally {
    await cleanup(sandbox);
  }
});

// Header transforms: sent as rules per domain; the server reports header
// names only (injectionRules[].headerNames), which the SDK shows as
// "<redacted>". The values never come back.
it('network policy: header transforms are accepted and echoed redacted', async () => {
  const { server } = ctx;
  const policy = {
    allow: {
      'api.example.com': [{ transform: [{ headers: { authorization: 'Bearer secret-value' } }] }],
      'example.org': [],
    },
  };
  const mark = server.requestCount;
  const sandbox = await Sandbox.create({ ...server.credentials, timeout: 60_000, networkPolicy: policy });
  try {
    assert.deepEqual(bodyOf(server.requestsSince(mark)[0]).networkPolicy, policy);
    const redacted = {
      allow: {
        'api.example.com': [{ transform: [{ headers: { authorization: '<redacted>' } }] }],
        'example.org': [],
      },
    };
    assert.deepEqual(sandbox.networkPolicy, redacted);
    assert.deepEqual(sandbox.currentSession().networkPolicy, redacted);
    const updated = await sandbox.updateNetworkPolicy({
      allow: { '*': [{ transform: [{ headers: { 'x-api-key': 'k2-secret' } }] }] },
    });
    assert.deepEqual(updated, { allow: { '*': [{ transform: [{ headers: { 'x-api-key': '<redacted>' } }] }] } });
    await settle();
    const answered = server.requestsSince(mark).map((e) => e.responseBody ?? '').join('\n');
    assert.ok(answered.includes('headerNames'), 'sbxd should echo the rules by header names');
    assert.ok(!answered.includes('secret-value') && !answered.includes('k2-secret'), 'a header value must never come back');
  } finally {
    await cleanup(sandbox);
  }
});

it('sandbox.update({networkPolicy}): PATCH the default, then the running session; both reported', async () => {
  const { server } = ctx;
  const name = uniqueName('npu');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000 });
  try {
    const sid = sandbox.currentSession().sessionId;
    const policy = { allow: ['example.com'], subnets: { deny: ['10.0.0.0/8'] } };
    const mark = server.requestCount;
    await sandbox.update({ networkPolicy: policy });
    const reqs = server.requestsSince(mark);
    assert.deepEqual(lines(reqs), [
      `PATCH /v2/sandboxes/${name}?teamId=team_compat&projectId=prj_compat`,
      `POST ${policyPath(sid)}`,
    ]);
    assert.deepEqual(bodyOf(reqs[0]), { networkPolicy: policy });
    assert.deepEqual(bodyOf(reqs[1]), policy);
    assert.deepEqual(sandbox.networkPolicy, policy);
    assert.deepEqual(sandbox.currentSession().networkPolicy, policy);
    const got = await Sandbox.get({ ...server.credentials, name });
    assert.deepEqual(got.networkPolicy, policy);
    assert.deepEqual(got.currentSession().networkPolicy, policy);

    await sandbox.update({ networkPolicy: 'deny-all' });
    assert.equal(sandbox.networkPolicy, 'deny-all');
    assert.equal(sandbox.currentSession().networkPolicy, 'deny-all');
    await sandbox.update({ networkPolicy: 'allow-all' });
    assert.equal(sandbox.networkPolicy, 'allow-all');
    assert.equal(sandbox.currentSession().networkPolicy, 'allow-all');
  } finally {
    await cleanup(sandbox);
  }
});

it('sandbox.update({networkPolicy}): the next session starts with the new default', async () => {
  const { server } = ctx;
  const name = uniqueName('npn');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000 });
  try {
    const sid = sandbox.currentSession().sessionId;
    await sandbox.update({ networkPolicy: { allow: ['example.com'] } });
    await sandbox.stop();
    const resumed = await Sandbox.get({ ...server.credentials, name, resume: true });
    assert.notEqual(resumed.currentSession().sessionId, sid);
    assert.deepEqual(resumed.networkPolicy, { allow: ['example.com'] });
    assert.deepEqual(resumed.currentSession().networkPolicy, { allow: ['example.com'] });
    await cleanup(resumed);
  } finally {
    await cleanup(sandbox);
  }
});

it('extendTimeout: the session timeout grows by the duration; Sandbox.get sees it', async () => {
  const { server } = ctx;
  const name = uniqueName('ext');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 60_000 });
  try {
    const sid = sandbox.currentSession().sessionId;
    assert.equal(sandbox.currentSession().timeout, 60_000);
    const mark = server.requestCount;
    await sandbox.extendTimeout(30_000);
    const reqs = server.requestsSince(mark);
    assert.deepEqual(lines(reqs), [`POST /v2/sandboxes/sessions/${sid}/extend-timeout?teamId=team_compat`]);
    assert.deepEqual(bodyOf(reqs[0]), { duration: 30_000 });
    assert.equal(sandbox.currentSession().timeout, 90_000);
    assert.equal(sandbox.currentSession().sessionId, sid);
    const got = await Sandbox.get({ ...server.credentials, name });
    assert.equal(got.currentSession().timeout, 90_000);
    // Twice: the durations add up.
    await sandbox.extendTimeout(10_000);
    assert.equal(sandbox.currentSession().timeout, 100_000);
  } finally {
    await cleanup(sandbox);
  }
});

it('timeout: a session stops by itself at its timeout; the sandbox stays, and the next operation resumes it', async () => {
  const { server } = ctx;
  const name = uniqueName('expire');
  const sandbox = await Sandbox.create({ ...server.credentials, name, timeout: 1_500 });
  try {
    const sid = sandbox.currentSession().sessionId;
    const deadline = Date.now() + 15_000;
    let got;
    do {
      await new Promise((r) => setTimeout(r, 250));
      got = await Sandbox.get({ ...server.credentials, name });
    } while (got.status !== 'stopped' && Date.now() < deadline);
    assert.equal(got.status, 'stopped');
    assert.equal(got.currentSession().sessionId, sid, 'Sandbox.get without resume starts nothing');
    const r = await sandbox.runCommand('echo', ['back']);
    assert.equal(await r.stdout(), 'back\n');
    assert.notEqual(sandbox.currentSession().sessionId, sid);
    assert.equal(sandbox.status, 'running');
  } finally {
    await cleanup(sandbox);
  }
});
