// SPDX-License-Identifier: MIT
// The program of doc/node.md runs as printed (the endpoint, token and paths
// pointed at the test's sbxd and tree).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { startSbxd } = require('../testlib/sbxd');

const ROOT = path.join(__dirname, '..', '..', '..');

test('the getting-started program runs', async () => {
  const sbxd = await startSbxd();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxrun-doc-'));
  try {
    const text = fs.readFileSync(path.join(ROOT, 'doc', 'node.md'), 'utf8');
    let code = /```js\n([\s\S]*?)```/.exec(text)[1];
    assert.ok(code.split('\n').length <= 45);
    code = code.replace("'http://127.0.0.1:7878'", JSON.stringify(sbxd.endpoint))
      .replace("'/tmp/sbxd/token'", JSON.stringify(path.join(sbxd.dir, 'state', 'token')))
      .replace("'examples/demo-project'", JSON.stringify(path.join(ROOT, 'examples', 'demo-project')))
      .replace("require('sbxrun')", `require(${JSON.stringify(path.join(__dirname, '..'))})`);
    fs.writeFileSync(path.join(dir, 'main.js'), code);
    const out = execFileSync(process.execPath, ['main.js'], { cwd: dir, encoding: 'utf8', timeout: 300000 });
    assert.match(out, /^hello$/m);
    assert.match(out, /stdout 1\n[\s\S]*stdout 2\n[\s\S]*exit 0/);
    assert.match(out, /passed passed,passed/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    await sbxd.stop();
  }
});
