// Integration: every workspace tool's success path against a real runboxd over HTTP, plus
// persistence across a restart (DIR) and a :memory: workspace vanishing after SIGTERM.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';

function okResult(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  assert.equal(typeof r.body.id, 'string');
  return r.body.result;
}

describe('workspace tools', () => {
  let d;
  before(async () => { d = await startDaemon(); });
  after(async () => { await d.stop(); });

  test('write_file creates, then replaces, creating parent dirs', async () => {
    let res = okResult(await d.call('write_file', { path: '/src/deep/main.js', content: 'let x = 1;\n' }));
    assert.deepEqual(res, { path: '/src/deep/main.js', bytes: 11, created: true });
    res = okResult(await d.call('write_file', { path: 'src/deep/main.js', content: 'héllo' }));
    assert.deepEqual(res, { path: '/src/deep/main.js', bytes: 6, created: false });
    assert.equal(readFileSync(path.join(d.workspace, 'src/deep/main.js'), 'utf8'), 'héllo');
  });

  test('read_file returns the text; offset/length cut on character boundaries', async () => {
    okResult(await d.call('write_file', { path: '/r.txt', content: 'aé€😀z' })); // 1+2+3+4+1 bytes
    assert.equal(okResult(await d.call('read_file', { path: '/r.txt' })), 'aé€😀z');
    // offset 2 is inside "é": start at the next character.
    const mid = okResult(await d.call('read_file', { path: '/r.txt', offset: 2 }));
    assert.equal(mid, '€😀z');
    // length 5 ends inside "€" (bytes 3-5): stop before it, and say how to continue.
    const cut = okResult(await d.call('read_file', { path: '/r.txt', length: 5 }));
    assert.equal(cut, 'aé\n[truncated: showed bytes 0-3 of 11; call read_file with offset=3 to continue]');
    const rest = okResult(await d.call('read_file', { path: '/r.txt', offset: 3 }));
    assert.equal(rest, '€😀z');
    // Past the end: nothing, not an error.
    assert.equal(okResult(await d.call('read_file', { path: '/r.txt', offset: 100 })), '');
  });

  test('read_file of a file over 1 MiB ends with a truncated note', async () => {
    const big = 'x'.repeat(1024 * 1024 + 10);
    okResult(await d.call('write_file', { path: '/big.txt', content: big }));
    const text = okResult(await d.call('read_file', { path: '/big.txt' }));
    assert.ok(text.startsWith('x'.repeat(1000)));
    assert.match(text, /\n\[truncated: showed bytes 0-1048576 of 1048586; call read_file with offset=1048576 to continue\]$/);
    assert.equal(okResult(await d.call('read_file', { path: '/big.txt', offset: 1048576 })), 'x'.repeat(10));
  });

  test('read_file and write_file with encoding base64', async () => {
    const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 10, 13]);
    const res = okResult(await d.call('write_file', { path: '/bin/b.dat', content: bytes.toString('base64'), encoding: 'base64' }));
    assert.deepEqual(res, { path: '/bin/b.dat', bytes: 8, created: true });
    assert.deepEqual(readFileSync(path.join(d.workspace, 'bin/b.dat')), bytes);
    const b64 = okResult(await d.call('read_file', { path: '/bin/b.dat', encoding: 'base64' }));
    assert.deepEqual(Buffer.from(b64, 'base64'), bytes);
  });

  test('list_dir lists names, types, sizes and ISO mtimes; "/" is the default', async () => {
    okResult(await d.call('write_file', { path: '/ls/a.txt', content: 'abc' }));
    okResult(await d.call('write_file', { path: '/ls/sub/b.txt', content: '' }));
    const res = okResult(await d.call('list_dir', { path: '/ls' }));
    assert.equal(res.path, '/ls');
    assert.equal(res.total, 2);
    assert.equal(res.truncated, false);
    assert.deepEqual(res.entries.map((e) => [e.name, e.type, e.size]), [['a.txt', 'file', 3], ['sub', 'dir', 0]]);
    for (const e of res.entries) assert.match(e.mtime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/);
    const root = okResult(await d.call('list_dir', {}));
    assert.equal(root.path, '/');
    assert.ok(root.entries.some((e) => e.name === 'ls' && e.type === 'dir'));
  });

  test('remove deletes a file, and a directory with recursive', async () => {
    okResult(await d.call('write_file', { path: '/rm/x/1.txt', content: '1' }));
    okResult(await d.call('write_file', { path: '/rm/x/2.txt', content: '2' }));
    okResult(await d.call('write_file', { path: '/rm/f.txt', content: 'f' }));
    assert.deepEqual(okResult(await d.call('remove', { path: '/rm/f.txt' })), { path: '/rm/f.txt', removed: 1 });
    const notEmpty = await d.call('remove', { path: '/rm/x' });
    assert.equal(notEmpty.status, 200);
    assert.equal(notEmpty.body.ok, false);
    assert.match(notEmpty.body.error, /recursive/);
    assert.deepEqual(okResult(await d.call('remove', { path: '/rm/x', recursive: true })), { path: '/rm/x', removed: 3 });
    assert.equal(existsSync(path.join(d.workspace, 'rm/x')), false);
    const gone = await d.call('remove', { path: '/rm/x' });
    assert.equal(gone.body.ok, false);
  });

  test('search finds path:line: text, honours ext/regex/case, notes truncation and no matches', async () => {
    okResult(await d.call('write_file', { path: '/s/a.js', content: 'const Foo = 1;\nfoo();\n' }));
    okResult(await d.call('write_file', { path: '/s/b.py', content: 'foo = 2\n' }));
    const all = okResult(await d.call('search', { query: 'foo', path: '/s' }));
    assert.equal(all, '/s/a.js:2: foo();\n/s/b.py:1: foo = 2');
    const ci = okResult(await d.call('search', { query: 'FOO', path: '/s', case_sensitive: false, ext: 'js' }));
    assert.equal(ci, '/s/a.js:1: const Foo = 1;\n/s/a.js:2: foo();');
    const re = okResult(await d.call('search', { query: '^fo+ =', path: '/s', regex: true }));
    assert.equal(re, '/s/b.py:1: foo = 2');
    const capped = okResult(await d.call('search', { query: 'o', path: '/s', max_results: 1 }));
    assert.equal(capped, '/s/a.js:1: const Foo = 1;\n[truncated: showing the first 1 matches; narrow path or raise max_results]');
    const none = okResult(await d.call('search', { query: 'zebra', path: '/s' }));
    assert.match(none, /^no matches for "zebra" under \/s \(2 files searched\)$/);
  });

  test('GET /tools lists the catalog; GET /health describes the daemon', async () => {
    const tools = await d.get('/tools');
    assert.equal(tools.status, 200);
    const names = tools.body.tools.map((t) => t.name).sort();
    for (const n of ['list_dir', 'read_file', 'remove', 'search', 'write_file']) assert.ok(names.includes(n), n);
    for (const t of tools.body.tools) assert.equal(typeof t.inputSchema, 'object');
    const h = await d.get('/health');
    assert.equal(h.status, 200);
    assert.equal(h.body.ok, true);
    assert.equal(h.body.service, 'runboxd');
    assert.equal(h.body.port, d.port);
    assert.equal(h.body.pid, d.pid);
    assert.equal(typeof h.body.version, 'string');
    assert.equal(h.body.fsync, true);
    assert.equal(h.body.allow_network, false);
    assert.equal(typeof h.body.sandbox.available, 'boolean');
    assert.equal(h.body.sandbox.available, h.body.sandbox.bwrap !== null);
    assert.equal(h.body.studio.connected, false);
    assert.deepEqual(h.body.studio.instances, []);
    assert.equal(h.body.studio.queue_depth, 0);
  });

  test('call ids are unique', async () => {
    const ids = new Set();
    for (let i = 0; i < 20; i++) ids.add((await d.call('list_dir', {})).body.id);
    assert.equal(ids.size, 20);
  });
});

describe('storage', () => {
  test('a DIR workspace persists across a restart', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'runboxd-persist-'));
    try {
      let d = await startDaemon({ workspace: dir });
      okResult(await d.call('write_file', { path: '/keep/me.txt', content: 'still here' }));
      assert.deepEqual(await d.stop(), { code: 0, signal: null });
      d = await startDaemon({ workspace: dir });
      assert.equal(okResult(await d.call('read_file', { path: '/keep/me.txt' })), 'still here');
      const h = await d.get('/health');
      assert.equal(path.resolve(h.body.workspace), path.resolve(dir));
      assert.deepEqual(await d.stop(), { code: 0, signal: null });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a :memory: workspace works and is gone after SIGTERM', async () => {
    const d = await startDaemon({ workspace: ':memory:' });
    okResult(await d.call('write_file', { path: '/m/marker.txt', content: 'ram' }));
    assert.equal(okResult(await d.call('read_file', { path: '/m/marker.txt' })), 'ram');
    assert.equal((await d.get('/health')).body.workspace, ':memory:');
    // Find the host directory behind the workspace through the daemon's open descriptors.
    let root = null;
    for (const fd of readdirSync(`/proc/${d.pid}/fd`)) {
      let target;
      try { target = readlinkSync(`/proc/${d.pid}/fd/${fd}`); } catch { continue; }
      if (target.startsWith('/') && existsSync(path.join(target, 'm/marker.txt'))) root = target;
    }
    assert.ok(root, 'the :memory: root is among the daemon\'s open files');
    assert.deepEqual(await d.stop(), { code: 0, signal: null });
    assert.equal(existsSync(root), false, `${root} should be gone`);
  });

  test('SIGINT also exits 0', async () => {
    const d = await startDaemon();
    assert.deepEqual(await d.stop('SIGINT'), { code: 0, signal: null });
  });
});
