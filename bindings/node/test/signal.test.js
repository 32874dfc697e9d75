// SPDX-License-Identifier: MIT
// Ctrl-C (a real SIGINT) while a command runs: with Node's default handling
// the process ends at once, though a worker is blocked in sbx_client_wait;
// with a handler, cancelling the follow ends it promptly and cleanly.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const path = require('node:path');
const { withClient } = require('../testlib/sbxd');

const ctx = withClient(test);

const CHILD = `
const sbxrun = require(${JSON.stringify(path.join(__dirname, '..'))});
const handle = process.argv[1] === 'handle';
(async () => {
  const c = new sbxrun.Client({ endpoint: process.env.EP, token: process.env.TOK });
  const s = await c.createSandbox();
  const cmd = s.spawn(['sleep', '60']);
  if (handle) process.once('SIGINT', () => cmd.cancel());
  cmd.stdout.resume();
  setTimeout(() => console.log('running'), 300);
  try {
    await cmd.exited;
    console.log('exited');
  } catch (e) {
    console.log('caught ' + e.constructor.name);
    cmd.close();
    await s.stop();
    s.close();
    c.close();
    process.exitCode = 130;
  }
})();
`;

function interrupted(mode) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CHILD, mode],
                        { env: { ...process.env, EP: ctx.sbxd.endpoint, TOK: ctx.sbxd.token }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let t0 = 0;
    child.stdout.on('data', (b) => {
      out += b;
      if (!t0 && out.includes('running')) {
        t0 = Date.now();
        child.kill('SIGINT');
      }
    });
    child.stderr.on('data', (b) => { err += b; });
    const guard = setTimeout(() => child.kill('SIGKILL'), 30000);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, out, err, ms: t0 ? Date.now() - t0 : -1 });
    });
  });
}

test('SIGINT with no handler ends the process at once', async () => {
  const r = await interrupted('default');
  assert.equal(r.signal, 'SIGINT', JSON.stringify(r));
  assert.ok(r.ms >= 0 && r.ms < 5000, `took ${r.ms} ms`);
});

test('SIGINT with a handler cancels the follow promptly; the client shuts down cleanly', async () => {
  const r = await interrupted('handle');
  assert.equal(r.code, 130, JSON.stringify(r));
  assert.match(r.out, /caught CancelledError/);
  assert.ok(r.ms >= 0 && r.ms < 5000, `took ${r.ms} ms`);
});
