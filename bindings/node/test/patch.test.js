// SPDX-License-Identifier: MIT
// Patches checked on this machine against a git repository made here (the
// verdicts, the patch id and the tree compared with git's own), and
// verify() of a small project with a patch against a real sbxd.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const sbxrun = require('..');
const { withClient } = require('../testlib/sbxd');

const ctx = withClient(test);

// git without the machine's or the user's configuration.
const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

function git(cwd, args, input) {
  return execFileSync('git', args, { cwd, input, env: GIT_ENV, stdio: ['pipe', 'pipe', 'pipe'] });
}

/** A repository with files (name -> text, or [text, mode]), committed on main. */
function makeRepo(dir, files) {
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, v] of Object.entries(files)) {
    const [text, mode] = Array.isArray(v) ? v : [v, 0o644];
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text, { mode });
    fs.chmodSync(path.join(dir, name), mode);
  }
  git(dir, ['init', '-q', '-b', 'main']);
  git(dir, ['config', 'user.email', 'test@example.com']);
  git(dir, ['config', 'user.name', 'Test']);
  git(dir, ['add', '-A']);
  git(dir, ['commit', '-q', '-m', 'base']);
  return dir;
}

/** Every regular file under dir but .git: path -> [content, executable]. */
function treeOf(dir) {
  const out = {};
  const walk = (d, rel) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.name === '.git' && rel === '') continue;
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(path.join(d, e.name), r);
      else if (e.isFile()) {
        const p = path.join(d, e.name);
        out[r] = [fs.readFileSync(p, 'utf8'), (fs.statSync(p).mode & 0o111) !== 0];
      }
    }
  };
  walk(dir, '');
  return out;
}

// A patch of three files (modified, added, deleted), shared with the Python tests.
const GOOD = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'tests', 'fixtures', 'patch', 'three-files.diff'), 'utf8');

const newFile = (p) => `diff --git a/${p} b/${p}\nnew file mode 100755\n--- /dev/null\n+++ b/${p}\n@@ -0,0 +1 @@\n+#!/bin/sh\n`;

let tmp;
let repo;
test.before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sbxrun-node-patch-'));
  repo = makeRepo(path.join(tmp, 'repo'), {
    'src/a.txt': 'one\ntwo\nthree\n',
    'gone.txt': 'bye\n',
    'run.sh': ['#!/bin/sh\necho run\n', 0o755],
  });
});
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

test('a patch that applies: its files, its git patch id, its diff, its JSON', () => {
  const p = new sbxrun.Patch({ diff: GOOD, repo });
  try {
    assert.equal(p.verdict, 'safe'); // read, not yet checked against the tree
    assert.equal(p.check(), 'applies');
    assert.equal(p.verdict, 'applies');
    assert.equal(p.ok, true);
    assert.equal(p.rule, null);
    assert.equal(p.message, '');
    const byPath = Object.fromEntries(p.files.map((f) => [f.path, f]));
    assert.deepEqual(Object.keys(byPath), ['src/a.txt', 'new.txt', 'gone.txt']);
    assert.deepEqual(byPath['src/a.txt'], { path: 'src/a.txt', oldPath: null, change: 'modified', oldMode: 0o100644,
                                             newMode: 0o100644, additions: 1, deletions: 1, binary: false });
    assert.equal(byPath['new.txt'].change, 'added');
    assert.deepEqual([byPath['new.txt'].additions, byPath['new.txt'].oldMode], [2, 0]);
    assert.equal(byPath['gone.txt'].change, 'deleted');
    assert.deepEqual([byPath['gone.txt'].deletions, byPath['gone.txt'].newMode], [1, 0]);
    const want = git(repo, ['patch-id', '--stable'], GOOD).toString().split(/\s+/)[0];
    assert.match(want, /^[0-9a-f]{40}$/);
    assert.equal(p.patchId, want);
    assert.ok(Buffer.isBuffer(p.diff));
    assert.equal(p.diff.toString(), GOOD);
    const j = p.toJSON();
    assert.equal(j.verdict, 'applies');
    assert.equal(j.patchId, want);
    assert.deepEqual(j.diffstat, { files: 3, additions: 3, deletions: 2 });
    // reading the diff or the JSON does not lose the message of the verdict
    assert.equal(p.check(), 'applies');
  } finally {
    p.close();
  }
  // bytes, a file, and no base (safety alone) read the same
  const f = path.join(tmp, 'good.diff');
  fs.writeFileSync(f, GOOD);
  for (const opts of [{ diff: Buffer.from(GOOD), repo }, { file: f, repo, base: 'main', threads: 2 }]) {
    const q = new sbxrun.Patch(opts);
    assert.equal(q.check(), 'applies');
    q.close();
  }
  const safe = new sbxrun.Patch({ diff: GOOD });
  assert.equal(safe.check(), 'safe');
  assert.equal(safe.ok, true);
  safe.close();
  assert.equal(git(repo, ['status', '--porcelain']).toString(), ''); // the work tree is not touched
});

test('an unsafe patch is a verdict naming the rule and the path, not an exception', () => {
  for (const [where, rule] of [['../escape', 'dotdot'], ['.git/hooks/pre-commit', 'git-dir']]) {
    const p = new sbxrun.Patch({ diff: newFile(where), repo });
    try {
      assert.equal(p.verdict, 'unsafe', where);
      assert.equal(p.ok, false);
      assert.equal(p.rule, rule);
      assert.ok(p.message.includes(where), p.message);
      assert.equal(p.check(), 'unsafe'); // final: checking again neither throws nor loses the message
      assert.ok(p.message.includes(where), p.message);
      assert.equal(p.patchId, null);
      assert.equal(p.toJSON().rule, rule);
      assert.throws(() => p.saveTreeDir(path.join(tmp, 'never')), sbxrun.MisuseError);
    } finally {
      p.close();
    }
    assert.ok(!fs.existsSync(path.join(tmp, 'never')));
  }
});

test('does not apply, malformed, too large: verdicts with their message', () => {
  const stale = GOOD.replace(' one\n-two', ' uno\n-two');
  const p = new sbxrun.Patch({ diff: stale, repo });
  assert.equal(p.verdict, 'safe');
  assert.equal(p.check(), 'does-not-apply');
  assert.equal(p.ok, false);
  assert.equal(p.rule, null);
  assert.match(p.message, /src\/a\.txt/);
  assert.equal(p.check(), 'does-not-apply');
  assert.match(p.message, /src\/a\.txt/);
  assert.throws(() => p.saveTree(path.join(tmp, 'never.tar.gz')), sbxrun.MisuseError);
  p.close();

  const m = new sbxrun.Patch({ diff: 'this is not a patch\n', repo });
  assert.equal(m.verdict, 'malformed');
  assert.equal(m.check(), 'malformed');
  assert.ok(m.message.length > 0);
  assert.equal(m.diff, null); // nothing was loaded
  m.close();

  const big = new sbxrun.Patch({ diff: GOOD, repo, maxBytes: 64 });
  assert.equal(big.verdict, 'too-large');
  assert.equal(big.check(), 'too-large');
  assert.match(big.message, /64/);
  big.close();
});

test('file operations become a diff; a bad one is refused or thrown', () => {
  const p = new sbxrun.Patch({ repo });
  try {
    p.addFile('added', 'docs/new.md', '# New\n');
    p.addFile('modified', 'run.sh', Buffer.from('#!/bin/sh\necho changed\n'), 0o755);
    p.addFile('deleted', 'gone.txt');
    // an unsafe path is refused (it throws, naming it), the others stay
    assert.throws(() => p.addFile('added', '../outside', 'no'),
                  (e) => e instanceof sbxrun.PatchError && /\.\.\/outside/.test(e.message));
    assert.throws(() => p.addFile('renamed', 'x'), (e) => e instanceof TypeError && /'added', 'modified' or 'deleted'/.test(e.message));
    assert.throws(() => p.addFile('toString', 'x'), TypeError);
    assert.throws(() => p.addFile('deleted', 'src/a.txt', 'data'), sbxrun.InvalidArgError);
    assert.throws(() => p.addFile('added', 'x.txt', 'x', 0o777), sbxrun.InvalidArgError);
    assert.equal(p.check(), 'applies');
    assert.equal(p.message, '');
    assert.deepEqual(Object.fromEntries(p.files.map((f) => [f.path, f.change])),
                     { 'docs/new.md': 'added', 'run.sh': 'modified', 'gone.txt': 'deleted' });
    assert.match(p.diff.toString(), /\+echo changed/);
    const out = path.join(tmp, 'ops-tree');
    p.saveTreeDir(out);
    assert.deepEqual(treeOf(out), {
      'docs/new.md': ['# New\n', false],
      'run.sh': ['#!/bin/sh\necho changed\n', true],
      'src/a.txt': ['one\ntwo\nthree\n', false],
    });
    assert.throws(() => p.addFile('added', 'late.txt', 'x'), sbxrun.MisuseError); // already checked
  } finally {
    p.close();
  }
  const none = new sbxrun.Patch({ repo });
  assert.throws(() => none.check(), sbxrun.MisuseError); // nothing to check
  none.close();
});

test('what stops the check throws, and frees the handle', () => {
  const before = sbxrun.liveHandles();
  assert.throws(() => new sbxrun.Patch({ diff: GOOD, repo: path.join(tmp, 'nowhere') }), sbxrun.NotFoundError);
  assert.throws(() => new sbxrun.Patch({ diff: GOOD, repo, base: 'no-such-branch' }),
                (e) => e instanceof sbxrun.NotFoundError && /no-such-branch/.test(e.message));
  assert.throws(() => new sbxrun.Patch({ file: path.join(tmp, 'missing.diff'), repo }), sbxrun.IoError);
  assert.throws(() => new sbxrun.Patch({ diff: GOOD, threads: 9 }), sbxrun.InvalidArgError);
  assert.throws(() => new sbxrun.Patch({ diff: GOOD, file: 'x.diff' }), TypeError);
  assert.throws(() => new sbxrun.Patch({ diff: GOOD, base: 'main' }), TypeError);
  assert.throws(() => new sbxrun.Patch({ diff: 42 }), TypeError);
  assert.equal(sbxrun.liveHandles(), before);
  const p = new sbxrun.Patch({ diff: GOOD });
  p.close();
  assert.throws(() => p.verdict, /closed/);
  assert.equal(sbxrun.liveHandles(), before);
});

test('the tree written out is what git apply leaves in a clone', () => {
  const clone = path.join(tmp, 'clone');
  git(tmp, ['clone', '-q', repo, clone]);
  git(clone, ['apply'], GOOD);
  const p = new sbxrun.Patch({ diff: GOOD, repo });
  try {
    assert.equal(p.check(), 'applies');
    const out = path.join(tmp, 'tree');
    p.saveTreeDir(out);
    const got = treeOf(out);
    assert.deepEqual(got, treeOf(clone));
    assert.deepEqual(Object.keys(got).sort(), ['new.txt', 'run.sh', 'src/a.txt']);
    assert.equal(got['run.sh'][1], true); // the executable bit is kept
    assert.equal(got['new.txt'][0], 'fresh\nfile\n');

    // a directory with files in it is refused and kept as it was
    const mine = path.join(tmp, 'mine');
    fs.mkdirSync(mine);
    fs.writeFileSync(path.join(mine, 'keep'), 'keep');
    assert.throws(() => p.saveTreeDir(mine), (e) => e instanceof sbxrun.IoError && /must not exist/.test(e.message));
    assert.deepEqual(fs.readdirSync(mine), ['keep']);
    assert.equal(fs.readFileSync(path.join(mine, 'keep'), 'utf8'), 'keep');
    assert.deepEqual(fs.readdirSync(tmp).filter((n) => n.startsWith('mine.tmp.')), []);
    // an empty one is filled
    const empty = path.join(tmp, 'empty');
    fs.mkdirSync(empty);
    p.saveTreeDir(empty);
    assert.deepEqual(treeOf(empty), got);

    const tgz = path.join(tmp, 'tree.tar.gz');
    p.saveTree(tgz);
    const names = execFileSync('tar', ['-tzf', tgz], { stdio: ['ignore', 'pipe', 'pipe'] }).toString().split('\n').filter((n) => n && !n.endsWith('/'));
    assert.deepEqual(names.map((n) => n.replace(/^\.\//, '')).sort(), ['new.txt', 'run.sh', 'src/a.txt']);
  } finally {
    p.close();
  }
  // a base alone: its tree as it is
  const b = new sbxrun.Patch({ repo });
  b.saveTreeDir(path.join(tmp, 'base-tree'));
  b.close();
  assert.deepEqual(treeOf(path.join(tmp, 'base-tree')), treeOf(repo));
});

test('a series: each patch on the tree the one before it leaves, as git applies them in turn', () => {
  const clone = path.join(tmp, 'series-clone');
  git(tmp, ['clone', '-q', repo, clone]);
  git(clone, ['apply', '--index'], GOOD);
  git(clone, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'first']);
  fs.appendFileSync(path.join(clone, 'new.txt'), 'more\n');
  const second = git(clone, ['diff']);
  assert.ok(second.length > 0);

  const first = new sbxrun.Patch({ diff: GOOD, repo });
  assert.equal(first.check(), 'applies');
  const alone = new sbxrun.Patch({ diff: second, repo });
  assert.equal(alone.check(), 'does-not-apply'); // new.txt is not in the base
  const p = new sbxrun.Patch({ diff: second, after: first });
  first.close(); // p keeps what it needs
  try {
    assert.equal(p.check(), 'applies', p.message);
    p.saveTreeDir(path.join(tmp, 'series-tree'));
    assert.deepEqual(treeOf(path.join(tmp, 'series-tree')), treeOf(clone));
    assert.throws(() => new sbxrun.Patch({ diff: second, repo, after: p }), /after is the base/);
    assert.throws(() => new sbxrun.Patch({ diff: second, after: alone }),
                  (e) => e instanceof sbxrun.MisuseError && /does-not-apply/.test(e.message));
  } finally {
    p.close();
    alone.close();
  }
});

// ---- verify() against sbxd ------------------------------------------------------

// A project whose test passes while answer.json says 42; node and npm are in
// the sandbox (as the demo project's verify jobs use them).
const PROJECT = {
  'package.json': JSON.stringify({ name: 'tiny', version: '1.0.0', private: true,
                                   scripts: { test: 'node check.js', start: 'node check.js' } }, null, 2) + '\n',
  'check.js': "process.exit(require('./answer.json').value === 42 ? 0 : 1);\n",
  'answer.json': '{"value": 42}\n',
};

const ADD_NOTE = `diff --git a/notes.txt b/notes.txt
new file mode 100644
--- /dev/null
+++ b/notes.txt
@@ -0,0 +1 @@
+a note
`;

const BREAK = `diff --git a/answer.json b/answer.json
--- a/answer.json
+++ b/answer.json
@@ -1 +1 @@
-{"value": 42}
+{"value": 41}
`;

const verifyDirs = () => fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('sbxrun-verify-')).sort();

// verify() makes its directory in os.tmpdir(): a private one for these
// tests, so that others running beside them (the Python binding's verify)
// do not change the count.
let savedTmpdir;
test.beforeEach(() => {
  savedTmpdir = process.env.TMPDIR;
  process.env.TMPDIR = path.join(tmp, 'tmpdir');
  fs.mkdirSync(process.env.TMPDIR, { recursive: true });
});
test.afterEach(() => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
});

test('verify(): a project with a patch that applies passes; one that breaks the test fails', async () => {
  const project = makeRepo(path.join(tmp, 'tiny'), PROJECT);
  const before = verifyDirs();
  const file = path.join(tmp, 'add-note.diff');
  fs.writeFileSync(file, ADD_NOTE);
  const trFile = path.join(tmp, 'verify.jsonl');
  const tr = new sbxrun.Transcript(trFile);
  const events = [];
  let during = null;
  let result;
  try {
    result = await sbxrun.verify(ctx.client, project, {
      patch: file, transcript: tr, wallMs: 300000,
      onProgress: (event, job) => {
        events.push(job ? `${event} ${job.type} ${job.verdict ?? ''}`.trim() : event);
        if (event === 'uploading') during = verifyDirs();
      },
    });
  } finally {
    tr.close();
  }
  assert.equal(result.status, 'passed', JSON.stringify(result));
  assert.deepEqual(result.jobs.map((j) => j.jobType), ['verify.test']); // no dependencies: no install
  assert.deepEqual(events.filter((e) => e.startsWith('job-')), ['job-started verify.test', 'job-ended verify.test passed']);
  assert.deepEqual(events.filter((e) => !e.startsWith('job-')), ['sandbox-creating', 'uploading', 'stopping']);
  assert.equal(during.length, before.length + 1); // the tree's directory, there while it is sent
  const t = sbxrun.Transcript.load(trFile);
  t.verify();
  assert.ok(t.complete);
  t.close();
  assert.ok(!fs.existsSync(path.join(project, 'notes.txt'))); // the work tree is not touched

  // the same with the diff's bytes that break the test: the verdict, not an exception
  result = await sbxrun.verify(ctx.client, project, { patch: Buffer.from(BREAK), scripts: ['test', 'lint'] });
  assert.equal(result.status, 'failed', JSON.stringify(result));
  assert.deepEqual(result.jobs.map((j) => j.jobType), ['verify.test']);
  assert.deepEqual(verifyDirs(), before);
});

test('verify(): a project below the top of its repository; a directory outside any', async () => {
  const files = { 'README': 'a monorepo\n' };
  for (const [name, text] of Object.entries(PROJECT)) files[`apps/tiny/${name}`] = text;
  const mono = makeRepo(path.join(tmp, 'mono'), files);
  // the patch's paths are the project's own (answer.json, not apps/tiny/answer.json)
  const result = await sbxrun.verify(ctx.client, path.join(mono, 'apps', 'tiny'), { patch: Buffer.from(BREAK) });
  assert.equal(result.status, 'failed', JSON.stringify(result));
  await assert.rejects(sbxrun.verify(ctx.client, path.join(os.tmpdir(), 'nowhere-near-git')),
                       (e) => e instanceof sbxrun.NotFoundError && /not inside a git repository/.test(e.message));
});

test('verify(): install when asked, or when package.json has dependencies', async () => {
  const project = makeRepo(path.join(tmp, 'deps'), {
    ...PROJECT,
    'package.json': JSON.stringify({ name: 'deps', private: true, scripts: { test: 'node check.js' },
                                     devDependencies: { nothing: '1.0.0' } }) + '\n',
  });
  // no lockfile: deps.install fails before it installs anything, and the test is skipped
  const result = await sbxrun.verify(ctx.client, project, { wallMs: 300000 });
  assert.equal(result.status, 'failed', JSON.stringify(result));
  assert.deepEqual(result.jobs.map((j) => j.jobType), ['deps.install', 'verify.test']);
  assert.equal(result.jobs[0].status, 'failed');
  assert.match(result.jobs[0].message, /lockfile/);
  // install: false leaves it out
  const without = await sbxrun.verify(ctx.client, project, { install: false });
  assert.equal(without.status, 'passed', JSON.stringify(without));
  assert.deepEqual(without.jobs.map((j) => j.jobType), ['verify.test']);
  // install: true asks for it without dependencies
  const tiny = makeRepo(path.join(tmp, 'no-deps'), PROJECT);
  const asked = await sbxrun.verify(ctx.client, tiny, { install: true });
  assert.deepEqual(asked.jobs.map((j) => j.jobType), ['deps.install', 'verify.test']);
  assert.equal(asked.jobs[0].status, 'failed');
});

test('verify(): an exception in onProgress cancels the run and rejects with itself', async () => {
  const project = makeRepo(path.join(tmp, 'cancelled'), PROJECT);
  const before = verifyDirs();
  const before2 = sbxrun.liveHandles();
  const stop = new Error('stop at the first job');
  await assert.rejects(sbxrun.verify(ctx.client, project, {
    onProgress: (event) => { if (event === 'job-started') throw stop; },
  }), (e) => e === stop);
  assert.deepEqual(verifyDirs(), before);
  assert.equal(sbxrun.liveHandles(), before2);
  await assert.rejects(sbxrun.verify(ctx.client, project, { onProgress: 'no' }), TypeError);
  // the client goes on
  assert.equal((await sbxrun.verify(ctx.client, project)).status, 'passed');
});

test('verify(): an array of patches is applied in turn', async () => {
  const project = makeRepo(path.join(tmp, 'series'), PROJECT);
  const fix = BREAK.replace('-{"value": 42}\n+{"value": 41}', '-{"value": 41}\n+{"value": 42}');
  // the second puts back what the first broke: the test passes
  let result = await sbxrun.verify(ctx.client, project, { patch: [Buffer.from(BREAK), Buffer.from(fix)] });
  assert.equal(result.status, 'passed', JSON.stringify(result));
  result = await sbxrun.verify(ctx.client, project, { patch: [Buffer.from(BREAK)] });
  assert.equal(result.status, 'failed', JSON.stringify(result));
  await assert.rejects(sbxrun.verify(ctx.client, project, { patch: [Buffer.from(BREAK), Buffer.from(BREAK)] }),
                       (e) => e instanceof sbxrun.PatchError && /^patch 2 of 2: the patch does not apply: .*answer\.json/.test(e.message));
  await assert.rejects(sbxrun.verify(ctx.client, project, { patch: [Buffer.from(BREAK), 3] }),
                       (e) => e instanceof TypeError && /or an array of them/.test(e.message));
});

test('verify(): a patch that does not apply, or is unsafe, is refused before anything is sent', async () => {
  const project = makeRepo(path.join(tmp, 'refused'), PROJECT);
  const before = verifyDirs();
  const sandboxes = (await ctx.client.listSandboxes({ limit: 100 })).sandboxes.length;
  const stale = BREAK.replace('-{"value": 42}', '-{"value": 40}');
  await assert.rejects(sbxrun.verify(ctx.client, project, { patch: Buffer.from(stale) }),
                       (e) => e instanceof sbxrun.PatchError && /^patch: the patch does not apply: .*answer\.json/.test(e.message));
  await assert.rejects(sbxrun.verify(ctx.client, project, { patch: Buffer.from(newFile('.git/hooks/post-checkout')) }),
                       (e) => e instanceof sbxrun.PatchError && /^patch: unsafe patch: .*\.git\/hooks\/post-checkout/.test(e.message));
  await assert.rejects(sbxrun.verify(ctx.client, project, { patch: Buffer.from('not a diff\n') }),
                       (e) => e instanceof sbxrun.PatchError && /^patch: malformed patch: /.test(e.message));
  await assert.rejects(sbxrun.verify(ctx.client, project, { patch: path.join(tmp, 'missing.diff') }), sbxrun.IoError);
  await assert.rejects(sbxrun.verify(ctx.client, project, { base: 'no-such-rev' }), sbxrun.NotFoundError);
  await assert.rejects(sbxrun.verify(ctx.client, project, { scripts: ['deploy'] }),
                       (e) => e instanceof TypeError && /"deploy" is not one of lint, typecheck, test, build/.test(e.message));
  await assert.rejects(sbxrun.verify(ctx.client, project, { scripts: ['lint', 'build'] }),
                       { message: 'nothing to verify: package.json has no lint or build script' });
  // a project without package.json has nothing to verify
  const bare = makeRepo(path.join(tmp, 'bare'), { 'README': 'hi\n' });
  await assert.rejects(sbxrun.verify(ctx.client, bare),
                       { message: 'nothing to verify: package.json has no lint, typecheck, test or build script' });
  // a package.json that is not JSON is named
  const broken = makeRepo(path.join(tmp, 'broken'), { 'package.json': '{ "scripts": \n' });
  await assert.rejects(sbxrun.verify(ctx.client, broken), (e) => !(e instanceof sbxrun.SbxError) && /package\.json/.test(e.message));
  assert.deepEqual(verifyDirs(), before);
  assert.equal((await ctx.client.listSandboxes({ limit: 100 })).sandboxes.length, sandboxes); // no sandbox was made
});
