// tests/lib/readable.mjs - a copy of tests/lib and tests/node_modules that runboxd's account can
// read, for the external MCP servers a test has runboxd start over stdio.
//
//   import { serverPaths } from '../lib/readable.mjs';
//   const { modules, lib } = serverPaths(); // modules: .../node_modules, lib: .../lib
//
// runboxd started as root serves as an unprivileged account (nobody), and so do the stdio
// servers it starts: a checkout under /root (0700), as a CI runner's may be, is out of their
// reach and every such server fails with MODULE_NOT_FOUND. When a directory above tests/ denies
// others, serverPaths() makes the copy once per process (hard links where the file system
// allows, a plain copy otherwise) in a 0755 temporary directory, removed at exit; otherwise it
// answers the checkout's own directories.
import { chmodSync, cpSync, linkSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const tests = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
let cached = null;

// True when every directory from / down to dir lets others through (o+x) and dir's entries are
// readable by others: what the account runboxd drops to needs.
function othersReach(dir) {
  for (let d = dir; ; d = path.dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return false;
    if (d === path.dirname(d)) return true;
  }
}

// Hard links of src's files below dst (directories made 0755); false when the file system
// refuses (EXDEV), so that the caller copies instead.
function linkTree(src, dst) {
  mkdirSync(dst, { recursive: true, mode: 0o755 });
  for (const e of readdirSync(src, { withFileTypes: true })) {
    const s = path.join(src, e.name), t = path.join(dst, e.name);
    if (e.isDirectory()) {
      if (!linkTree(s, t)) return false;
    } else if (e.isSymbolicLink()) {
      cpSync(s, t, { verbatimSymlinks: true });
    } else {
      try { linkSync(s, t); } catch (err) { if (err.code === 'EXDEV') return false; throw err; }
    }
  }
  return true;
}

export function serverPaths() {
  if (cached) return cached;
  const own = { modules: path.join(tests, 'node_modules'), lib: path.join(tests, 'lib') };
  if (process.getuid?.() !== 0 || othersReach(tests)) return (cached = own);
  const root = mkdtempSync(path.join(os.tmpdir(), 'runbox-test-servers-'));
  chmodSync(root, 0o755);
  process.on('exit', () => rmSync(root, { recursive: true, force: true }));
  for (const name of ['node_modules', 'lib']) {
    const dst = path.join(root, name);
    if (!linkTree(path.join(tests, name), dst)) {
      rmSync(dst, { recursive: true, force: true });
      cpSync(path.join(tests, name), dst, { recursive: true, verbatimSymlinks: true });
    }
  }
  // The copy's files keep their modes (npm's are 0644/0755); its directories must be reachable.
  return (cached = { modules: path.join(root, 'node_modules'), lib: path.join(root, 'lib') });
}
