'use strict';

// The project's lint: plain Node, no dependencies. Every .js file under src/,
// test/ and scripts/ must end with a newline and have no trailing whitespace
// or tabs; src/ must not call console.log (a library prints nothing).
// Prints one line per problem (file:line: what) and exits 1 if there is any.

const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const dirs = ['src', 'test', 'scripts'];

function jsFiles(dir) {
  const out = [];
  if (!fs.existsSync(dir)) {
    return out;
  }
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      out.push(...jsFiles(p));
    } else if (e.isFile() && /\.(c|m)?js$/.test(e.name)) {
      out.push(p);
    }
  }
  return out.sort();
}

const problems = [];
let checked = 0;
for (const d of dirs) {
  for (const file of jsFiles(path.join(root, d))) {
    const rel = path.relative(root, file);
    const text = fs.readFileSync(file, 'utf8');
    checked++;
    if (text.length > 0 && !text.endsWith('\n')) {
      problems.push(`${rel}: no newline at the end of the file`);
    }
    text.split('\n').forEach((line, i) => {
      if (/[ \t]+$/.test(line)) {
        problems.push(`${rel}:${i + 1}: trailing whitespace`);
      }
      if (line.includes('\t')) {
        problems.push(`${rel}:${i + 1}: tab (indent with spaces)`);
      }
      if (d === 'src' && /\bconsole\.log\s*\(/.test(line)) {
        problems.push(`${rel}:${i + 1}: console.log in library code`);
      }
    });
  }
}

for (const p of problems) {
  process.stderr.write(p + '\n');
}
process.stdout.write(`lint: ${checked} files, ${problems.length} problems\n`);
process.exitCode = problems.length ? 1 : 0;
