// SPDX-License-Identifier: MIT
//
// The Node side of bench/client: the official @vercel/sandbox 1.x SDK (the
// copy tests/compat/run.sh installs) runs the same workload as the libsbxrun
// side against the same sbxd, and reports what it cost this process.
//
//   node client-node.mjs COMPAT_DIR URL TOKEN SANDBOXES COMMANDS CONCURRENCY MODE
//
// COMPAT_DIR is tests/compat (its node_modules holds the SDK); URL is sbxd's
// http://127.0.0.1:PORT; MODE is "echo" (`echo hi`, stdout read and checked)
// or "true" (`true`, exit code only). The SDK is pointed at sbxd the way
// tests/compat/sbxd.mjs does it (explicit credentials plus a fetch that
// rewrites https://vercel.com/api to sbxd), minus that file's request
// recording, so the SDK pays for nothing a real application would not.
//
// Prints one line: RESULT {json} with process.cpuUsage() (user+system, µs
// since the process started) and RSS at four points: script start (Node
// booted), SDK imported, sandboxes created, commands done; and the peak RSS
// (process.resourceUsage().maxRSS, KiB). bench/client also takes the
// process's rusage from wait4(), which is authoritative.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const t0 = performance.now();
// RssAnon: the anonymous part of RSS (heaps, stacks), from /proc.
const anonKb = () => Number(/^RssAnon:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? -1);
const mark = () => {
  const c = process.cpuUsage();
  return {
    cpu_us: c.user + c.system,
    rss_kb: Math.round(process.memoryUsage.rss() / 1024),
    anon_kb: anonKb(),
    t_ms: performance.now() - t0,
  };
};
const atStart = mark();

const [compat, baseUrl, token, nSandboxes, nCommands, concurrency, mode] = process.argv.slice(2);
const N = Number(nSandboxes), M = Number(nCommands), K = Number(concurrency);
if (!compat || !baseUrl || !token || !(N > 0) || !(M > 0) || !(K > 0) || !['echo', 'true'].includes(mode)) {
  console.error('usage: client-node.mjs COMPAT_DIR URL TOKEN SANDBOXES COMMANDS CONCURRENCY echo|true');
  process.exit(2);
}

// The SDK's ESM entry, and the very undici module it imports (see sbxd.mjs:
// its Agent is passed as `dispatcher` and must go to the same undici's fetch).
const sdkEntry = join(compat, 'node_modules/@vercel/sandbox/dist/index.js');
const { Sandbox } = await import(pathToFileURL(sdkEntry).href);
const sdkRequire = createRequire(sdkEntry);
const { fetch: undiciFetch } = sdkRequire('undici');
const sdkVersion = sdkRequire('../package.json').version;
const afterImport = mark();

const VERCEL_API = 'https://vercel.com/api';
function sbxdFetch(input, init) {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  if (!url.startsWith(`${VERCEL_API}/`)) throw new Error(`the SDK asked for ${url}, outside ${VERCEL_API}`);
  return undiciFetch(baseUrl + url.slice(VERCEL_API.length), init);
}
const credentials = { token, teamId: 'team_bench', projectId: 'prj_bench', fetch: sbxdFetch };

const sandboxes = await Promise.all(
  Array.from({ length: N }, () => Sandbox.create({ ...credentials, timeout: 600_000 })));
const afterCreate = mark();

let next = 0, failures = 0, firstError = null;
async function worker() {
  for (let i; (i = next++) < M;) {
    const sb = sandboxes[i % N];
    try {
      if (mode === 'echo') {
        const r = await sb.runCommand('echo', ['hi']);
        const out = await r.stdout();
        if (r.exitCode !== 0 || out !== 'hi\n') throw new Error(`exit ${r.exitCode}, stdout ${JSON.stringify(out)}`);
      } else {
        const r = await sb.runCommand('true', []);
        if (r.exitCode !== 0) throw new Error(`exit ${r.exitCode}`);
      }
    } catch (err) {
      failures++;
      firstError ??= String(err?.stack ?? err);
    }
  }
}
await Promise.all(Array.from({ length: Math.min(K, M) }, worker));
const afterWork = mark();

await Promise.all(sandboxes.map((s) => s.stop().catch(() => {})));
const end = mark();

const ru = process.resourceUsage();
console.log('RESULT ' + JSON.stringify({
  node: process.version, sdk: sdkVersion,
  start: atStart, import: afterImport, created: afterCreate, work: afterWork, end,
  maxrss_kb: ru.maxRSS, failures, firstError,
}));
