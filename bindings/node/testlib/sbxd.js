// SPDX-License-Identifier: MIT
// A real sbxd for a test file: started on a unix socket in a temporary
// directory (SBXD names the program; meson sets it), stopped after.
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

async function startSbxd() {
  const exe = process.env.SBXD;
  if (!exe) throw new Error('SBXD (the sbxd program to test) is not set in the environment');
  // Sandboxes run under host ids of their own: they must pass through the
  // directories above the state directory.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxrun-node-'));
  fs.chmodSync(dir, 0o711);
  const log = fs.openSync(path.join(dir, 'sbxd.log'), 'w');
  const sock = path.join(dir, 'sock');
  const state = path.join(dir, 'state');
  const proc = spawn(exe, ['--listen', `unix:${sock}`, '--state-dir', state, '--log-level', 'debug'],
                     { stdio: ['ignore', 'pipe', log] });
  const line = await new Promise((resolve) => {
    const rl = readline.createInterface({ input: proc.stdout });
    rl.once('line', (l) => { rl.close(); resolve(l); });
    proc.once('exit', () => resolve(''));
  });
  if (!line.startsWith('sbxd listening on'))
    throw new Error(`sbxd did not start: ${fs.readFileSync(path.join(dir, 'sbxd.log'), 'utf8').slice(-2000)}`);
  const token = fs.readFileSync(path.join(state, 'token'), 'utf8').trim();
  return {
    dir, endpoint: `unix:${sock}`, token,
    async stop() {
      const exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
      proc.kill('SIGTERM');
      const code = await exited;
      fs.closeSync(log);
      fs.rmSync(dir, { recursive: true, force: true });
      if (code !== 0) throw new Error(`sbxd exited ${code}`);
    },
  };
}

/** An sbxd and a client on it for a test file: before() starts them,
 * after() stops them; ctx.client and ctx.sbxd in between. */
function withClient(test) {
  const ctx = {};
  test.before(async () => {
    const sbxrun = require('..');
    ctx.sbxd = await startSbxd();
    ctx.client = new sbxrun.Client({ endpoint: ctx.sbxd.endpoint, token: ctx.sbxd.token });
  });
  test.after(async () => {
    ctx.client.close();
    await ctx.sbxd.stop();
  });
  return ctx;
}

module.exports = { startSbxd, withClient };
