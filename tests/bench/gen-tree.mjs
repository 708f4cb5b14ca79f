#!/usr/bin/env node
// gen-tree.mjs — writes a deterministic tree of source-like files (.c .js .py .md) for the
// search benchmark, and prints a one-line JSON manifest of what it wrote.
//
//   node gen-tree.mjs --out DIR [--mb 100] [--seed 20261129] [--needle zephyr_checksum]
//
// The same seed and size always give byte-identical trees. The needle appears on exactly
// `needle_lines` lines with that exact spelling and on `needle_ci_extra` more lines in other
// capitalisations, so a case-sensitive search reports a few dozen lines and a case-insensitive
// one a few more, while every byte of the tree still has to be scanned. The vocabulary never
// contains the needle, so nothing else matches by chance.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function parseArgs(argv) {
  const o = { out: null, mb: 100, seed: 20261129, needle: 'zephyr_checksum', exact: 36, ciExtra: 12 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--out') o.out = v();
    else if (a === '--mb') o.mb = Number(v());
    else if (a === '--seed') o.seed = Number(v());
    else if (a === '--needle') o.needle = v();
    else if (a === '--needle-lines') o.exact = Number(v());
    else if (a === '--needle-ci-extra') o.ciExtra = Number(v());
    else throw new Error(`unknown option ${a}`);
  }
  if (!o.out) throw new Error('usage: node gen-tree.mjs --out DIR [--mb N] [--seed N] [--needle WORD]');
  if (!(o.mb > 0)) throw new Error('--mb wants a positive number');
  return o;
}

// mulberry32: small, fast and fully determined by its 32-bit seed (Math.random is not seedable)
function rng(seed) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (arr) => arr[Math.floor(next() * arr.length)],
  };
}

const WORDS = ('buffer count index value result error state config handle stream parser token node ' +
  'entry table cache queue event timer socket request response header payload offset length size ' +
  'path file name mode flags option context session client server worker thread lock signal ' +
  'alpha beta gamma delta vector matrix record field column row page block chunk frame packet ' +
  'input output source target origin limit total retry timeout status message level scope item ' +
  'list map set tree graph edge weight score rank label group owner user admin policy rule')
  .split(' ');
const VERBS = 'get set read write open close parse format build load save update remove find check init free copy merge split resolve'.split(' ');
const TYPES = 'int size_t char * const char * struct node * bool double uint32_t int64_t void *'.split(' ');
const PROSE = ('the a this that each every some when while after before because so then and or but ' +
  'with without into from over under between through returns expects keeps drops holds sends ' +
  'reads writes caller callee module function daemon proxy workspace request answer error value ' +
  'quickly safely once twice never always usually only also still').split(' ');

const snake = (r, n) => Array.from({ length: n }, () => r.pick(WORDS)).join('_');
const camel = (r, n) =>
  Array.from({ length: n }, (_, i) => {
    const w = r.pick(WORDS);
    return i ? w[0].toUpperCase() + w.slice(1) : w;
  }).join('');
const args = (r, f) => Array.from({ length: r.int(4) }, () => f()).join(', ');
const sentence = (r, n) => Array.from({ length: n }, () => r.pick(PROSE)).join(' ');

// one line of source; indent and kind vary so line lengths spread from 0 to a few hundred
// bytes, with an occasional very long line (minified data, long prose)
function line(r, ext, depth) {
  const ind = ' '.repeat(Math.min(depth, 4) * (ext === 'c' ? 4 : 2));
  const k = r.int(20);
  if (k === 0) return '';
  switch (ext) {
    case 'c':
      if (k < 3) return `${ind}/* ${sentence(r, 3 + r.int(14))} */`;
      if (k < 5) return `${ind}if (${snake(r, 2)} ${r.pick(['==', '!=', '<', '>='])} ${r.int(4096)}) {`;
      if (k < 6) return `${ind}}`;
      if (k < 7) return `static ${r.pick(TYPES)} ${r.pick(VERBS)}_${snake(r, 2)}(${args(r, () => `${r.pick(TYPES)} ${snake(r, 1)}`)})`;
      if (k < 8) return `${ind}return ${snake(r, 1 + r.int(2))};`;
      return `${ind}${r.pick(TYPES)} ${snake(r, 1 + r.int(3))} = ${r.pick(VERBS)}_${snake(r, 1 + r.int(2))}(${args(r, () => snake(r, 1 + r.int(2)))});`;
    case 'js':
      if (k < 3) return `${ind}// ${sentence(r, 3 + r.int(14))}`;
      if (k < 4) return `${ind}export async function ${r.pick(VERBS)}${camel(r, 2)}(${args(r, () => camel(r, 1))}) {`;
      if (k < 5) return `${ind}}`;
      if (k < 6) return `${ind}if (${camel(r, 2)}.${camel(r, 1)} ${r.pick(['===', '!==', '<', '>'])} ${r.int(1000)}) return ${camel(r, 1)};`;
      if (k === 19 && r.int(8) === 0) {
        // a minified-looking data line, 1-3 KB
        const n = 150 + r.int(300);
        return `const ${camel(r, 2)}=[${Array.from({ length: n }, () => r.int(100000)).join(',')}];`;
      }
      return `${ind}const ${camel(r, 1 + r.int(3))} = await ${camel(r, 1)}.${r.pick(VERBS)}${camel(r, 1 + r.int(2))}(${args(r, () => `'${snake(r, 1)}'`)});`;
    case 'py':
      if (k < 3) return `${ind}# ${sentence(r, 3 + r.int(14))}`;
      if (k < 5) return `def ${r.pick(VERBS)}_${snake(r, 2)}(${args(r, () => snake(r, 1))}):`;
      if (k < 6) return `${ind}return ${snake(r, 1 + r.int(2))}`;
      if (k < 7) return `${ind}for ${snake(r, 1)} in ${snake(r, 2)}:`;
      return `${ind}${snake(r, 1 + r.int(3))} = ${r.pick(VERBS)}_${snake(r, 1 + r.int(2))}(${args(r, () => snake(r, 1))})`;
    default: // md
      if (k < 2) return `${'#'.repeat(1 + r.int(3))} ${sentence(r, 2 + r.int(5))}`;
      if (k < 6) return `- ${sentence(r, 4 + r.int(16))}`;
      if (k < 7) return `    ${r.pick(VERBS)}_${snake(r, 2)}(${snake(r, 1)})`;
      return sentence(r, 6 + r.int(r.int(4) === 0 ? 120 : 30));
  }
}

function fileText(r, ext, bytes, needleLine) {
  const lines = [];
  let n = 0;
  let depth = 0;
  while (n < bytes) {
    const l = line(r, ext, depth);
    depth = Math.max(0, Math.min(5, depth + r.int(3) - 1));
    lines.push(l);
    n += l.length + 1;
  }
  if (needleLine !== null) {
    const at = r.int(lines.length);
    const c = ext === 'py' || ext === 'md' ? '#' : '//';
    lines[at] = ext === 'md' ? `see ${needleLine} for details` : `${c} ${needleLine}: ${sentence(r, 4)}`;
  }
  return lines.join('\n') + '\n';
}

// capitalisations a case-insensitive search must match and a case-sensitive one must not
function variant(needle, i) {
  const v = [needle.toUpperCase(), needle[0].toUpperCase() + needle.slice(1),
    needle.split('_').map((w) => w[0].toUpperCase() + w.slice(1)).join('_')];
  return v[i % v.length];
}

function main() {
  const o = parseArgs(process.argv.slice(2));
  const target = Math.round(o.mb * 1024 * 1024);
  const plan = rng(o.seed);
  const EXTS = ['c', 'c', 'js', 'js', 'py', 'md'];

  // 1. plan the files (directory, name, extension, size) until the target size is reached
  const projects = 8;
  const SUBDIRS = ['core', 'util', 'net', 'io', 'model'];
  const files = [];
  let total = 0;
  while (total < target) {
    const ext = plan.pick(EXTS);
    const parts = [`proj-${String(plan.int(projects)).padStart(2, '0')}`,
      plan.pick(['src', 'lib', 'tests', 'docs'])];
    for (let d = plan.int(3); d > 0; d--) parts.push(plan.pick(SUBDIRS));
    // sizes spread log-uniformly from ~400 B to ~160 KB, like a real repository
    const size = Math.round(400 * Math.pow(400, plan.next()));
    files.push({ dir: parts.join('/'), name: `${plan.pick(VERBS)}_${plan.pick(WORDS)}_${files.length}.${ext}`, ext, size });
    total += size;
  }

  // 2. choose which files carry the needle (distinct files, so line counts are exact)
  const want = Math.min(o.exact + o.ciExtra, files.length);
  const chosen = new Map();
  while (chosen.size < want) {
    const i = plan.int(files.length);
    if (!chosen.has(i)) chosen.set(i, chosen.size);
  }

  // 3. write them; each file has its own generator so its text depends only on seed and index
  let bytes = 0;
  const dirs = new Set();
  for (let i = 0; i < files.length; i++) {
    const f = files[i];
    const dir = join(o.out, f.dir);
    if (!dirs.has(dir)) { mkdirSync(dir, { recursive: true }); dirs.add(dir); }
    const slot = chosen.get(i);
    const needleLine = slot === undefined ? null : slot < o.exact ? o.needle : variant(o.needle, slot);
    const text = fileText(rng((o.seed ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0), f.ext, f.size, needleLine);
    writeFileSync(join(dir, f.name), text);
    bytes += Buffer.byteLength(text);
  }
  console.log(JSON.stringify({
    ok: true, dir: o.out, seed: o.seed, files: files.length, dirs: dirs.size, bytes,
    needle: o.needle, needle_lines: Math.min(o.exact, want), needle_ci_extra: Math.max(0, want - o.exact),
  }));
}

try {
  main();
} catch (e) {
  console.error(`gen-tree: ${e.message}`);
  process.exit(2);
}
