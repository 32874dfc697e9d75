// SPDX-License-Identifier: MIT
// The library's version is checked before anything else is bound: an old,
// newer-major or foreign library is refused at require() with both versions
// and its path, not with the first function it lacks.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const PKG = path.join(__dirname, '..');
const VERSION = require('../package.json').version;

function stub(dir, name, source) {
  const c = path.join(dir, `${name}.c`);
  fs.writeFileSync(c, source);
  const so = path.join(dir, `${name}.so`);
  execFileSync('cc', ['-shared', '-fPIC', '-o', so, c]);
  return so;
}

function requireWith(library, { keepPreload = false } = {}) {
  const env = { ...process.env, SBXRUN_LIBRARY: library };
  if (!keepPreload) delete env.LD_PRELOAD; // no sanitiser runtime for a stub
  return spawnSync(process.execPath, ['-e', `require(${JSON.stringify(PKG)})`], { env, encoding: 'utf8', timeout: 60000 });
}

/** The message of the error require() threw, as node printed it. */
function thrown(r) {
  const line = r.stderr.split('\n').find((l) => l.startsWith('Error: '));
  assert.ok(line, r.stderr);
  return line.slice('Error: '.length);
}

test('a library of another version, or not libsbxrun, is refused by name', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxrun-node-version-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const [num, shown] of [[0x000900, '0.9.0'], [0x020000, '2.0.0']]) {
    const so = stub(dir, `v${num}`, `unsigned sbx_version_num(void) { return ${num}u; }\n`);
    const r = requireWith(so);
    assert.notEqual(r.status, 0);
    assert.equal(thrown(r), `sbxrun ${VERSION} needs libsbxrun 1.x, ${VERSION} or newer; ${fs.realpathSync(so)} is ` +
                            `libsbxrun ${shown} (install a matching library, or set SBXRUN_LIBRARY to one)`);
  }
  const so = stub(dir, 'foreign', 'int something_else(void) { return 0; }\n');
  const r = requireWith(so);
  assert.notEqual(r.status, 0);
  assert.equal(thrown(r), `sbxrun ${VERSION}: ${fs.realpathSync(so)} is not libsbxrun (it has no sbx_version_num); ` +
                          `this package needs libsbxrun 1.x, ${VERSION} or newer`);
  assert.doesNotMatch(r.stderr, /Cannot find function/);
});

test('the library being tested is accepted', { skip: !process.env.SBXRUN_LIBRARY }, () => {
  const r = requireWith(process.env.SBXRUN_LIBRARY, { keepPreload: true });
  assert.equal(r.status, 0, r.stderr);
});
