// SPDX-License-Identifier: MIT
// `npm pack` makes a tarball that installs (offline, koffi from npm's
// cache) and loads.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

test('npm pack gives an installable package', () => {
  const root = path.join(__dirname, '..');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxrun-pack-'));
  try {
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: root, encoding: 'utf8' });
    const [info] = JSON.parse(out);
    const files = info.files.map((f) => f.path).sort();
    assert.deepEqual(files, ['README.md', 'index.d.ts', 'index.js', 'package.json']);
    assert.equal(info.version, require('../package.json').version);
    const app = path.join(dir, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), '{"name":"app","version":"1.0.0","private":true}');
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts',
                         path.join(dir, info.filename)], { cwd: app, encoding: 'utf8' });
    const v = execFileSync(process.execPath, ['-e', "console.log(require('sbxrun').libraryVersion())"],
                           { cwd: app, encoding: 'utf8' });
    assert.equal(v.trim(), require('../package.json').version);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
