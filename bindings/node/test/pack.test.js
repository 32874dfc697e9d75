// SPDX-License-Identifier: MIT
// `npm pack` makes a tarball that installs and loads. The install is
// offline: the app's lockfile pins koffi exactly as ours does, so `npm ci`
// takes koffi's tarballs from npm's cache (filled by run.sh's `npm ci`) by
// their sha512, with no registry metadata (which `npm ci` never caches).
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
    const spec = `file:../${info.filename}`;
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({
      name: 'app', version: '1.0.0', private: true, dependencies: { sbxrun: spec } }));
    const ours = require('../package-lock.json');
    const pkg = require('../package.json');
    const lock = {
      name: 'app', version: '1.0.0', lockfileVersion: 3, requires: true,
      packages: {
        '': { name: 'app', version: '1.0.0', dependencies: { sbxrun: spec } },
        'node_modules/sbxrun': { version: pkg.version, resolved: spec, integrity: info.integrity,
                                 license: pkg.license, dependencies: pkg.dependencies, engines: pkg.engines },
      },
    };
    for (const [k, v] of Object.entries(ours.packages)) {
      if (k === 'node_modules/koffi' || k.startsWith('node_modules/@koromix/')) lock.packages[k] = v;
    }
    fs.writeFileSync(path.join(app, 'package-lock.json'), JSON.stringify(lock, null, 2));
    execFileSync('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--ignore-scripts'],
                 { cwd: app, encoding: 'utf8' });
    const v = execFileSync(process.execPath, ['-e', "console.log(require('sbxrun').libraryVersion())"],
                           { cwd: app, encoding: 'utf8' });
    assert.equal(v.trim(), require('../package.json').version);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
