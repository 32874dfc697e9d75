// SPDX-License-Identifier: MIT
// index.d.ts against a program that uses the package (types.ts), with the
// TypeScript compiler pinned in package-lock.json, in strict mode.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');

test('the TypeScript declarations describe the package', () => {
  const tsc = path.join(__dirname, '..', 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2022', '--module', 'commonjs',
                                         '--types', 'node', path.join(__dirname, 'types.ts')],
                      { encoding: 'utf8', cwd: path.join(__dirname, '..') });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('everything the declarations name exists in the package', () => {
  const fs = require('node:fs');
  const sbxrun = require('..');
  const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8');
  let checked = 0;
  for (const m of dts.matchAll(/^export (?:const|function) (\w+)/gm)) {
    assert.ok(m[1] in sbxrun, `${m[1]} is declared but not exported`);
    checked++;
  }
  for (const m of dts.matchAll(/^export class (\w+)[^{]*\{\n([\s\S]*?)^\}/gm)) {
    const [, name, body] = m;
    const Cls = sbxrun[name];
    assert.equal(typeof Cls, 'function', `class ${name} is declared but not exported`);
    for (const mm of body.matchAll(/^ {2}(static )?(\w+)\??\(/gm)) {
      if (mm[2] === 'constructor') continue;
      const where = mm[1] ? Cls : Cls.prototype;
      assert.equal(typeof where[mm[2]], 'function', `${name}${mm[1] ? '.' : '#'}${mm[2]} is declared but missing`);
      checked++;
    }
  }
  assert.ok(checked > 60, `only ${checked} names checked: the parser missed the declarations`);
});
