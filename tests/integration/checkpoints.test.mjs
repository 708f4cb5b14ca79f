// Integration: workspace checkpoints (issue 10, part 5). checkpoint -> rm -rf everything with
// exec -> restore_checkpoint -> every file back byte for byte, with modes and symlinks; diff;
// retention (--checkpoint-keep); the store outside the workspace and out of the sandbox's
// sight; and the bad inputs: an unknown id, a file that a command keeps writing, a disk that
// fills during a checkpoint.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync,
         readlinkSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';

function ok(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  return r.body;
}

function fail(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, false, r.text);
  return r.body.error;
}

async function sh(d, command) {
  const r = ok(await d.call('exec', { command, timeout_ms: 60000 })).structured;
  assert.equal(r.exit_code, 0, `${command}: ${r.stderr}`);
  return r;
}

// Every entry of a host directory: path -> {type, mode, sha256 | target}.
function snapshot(root) {
  const out = {};
  const walk = (rel) => {
    for (const name of readdirSync(path.join(root, rel))) {
      const p = path.join(rel, name), full = path.join(root, p), st = lstatSync(full);
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isSymbolicLink()) out[p] = { type: 'l', target: readlinkSync(full) };
      else if (st.isDirectory()) { out[p] = { type: 'd', mode }; walk(p); }
      else out[p] = { type: 'f', mode, sha: createHash('sha256').update(readFileSync(full)).digest('hex') };
    }
  };
  walk('');
  return out;
}

function storeDir() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'runbox-cp-test-'));
  chmodSync(dir, 0o755); // the account runboxd drops to must reach it
  return dir;
}

describe('checkpoints', () => {
  let d, store;
  before(async () => {
    store = path.join(storeDir(), 'store');
    d = await startDaemon({ args: ['--checkpoint-dir', store] });
  });
  after(async () => { await d.stop(); rmSync(path.dirname(store), { recursive: true, force: true }); });

  test('checkpoint, rm -rf everything with exec, restore: every file back byte for byte', async () => {
    await sh(d, [
      'mkdir -p src/lib empty "odd dir" && printf "line1\\nline2\\n" > src/a.txt',
      'head -c 300000 /dev/urandom > src/blob.bin',
      'printf "#!/bin/sh\\necho run\\n" > run.sh && chmod 755 run.sh',
      'echo secret > src/lib/private && chmod 600 src/lib/private && chmod 700 src/lib',
      'ln -s src/a.txt link-to-a && ln -s /nowhere dangling',
      'echo x > "odd dir/ name with spaces" && printf "no newline" > .hidden',
      'git init -q && git add -A && git commit -qm init',
    ].join(' && '));
    const want = snapshot(d.workspace);
    const cp = ok(await d.call('checkpoint', { message: 'before the wipe' }));
    const id = cp.structured.id;
    assert.match(cp.result, new RegExp(`^\\[checkpoint ${id}: `));
    // The store is outside the workspace and the sandbox cannot see it.
    assert.ok(!readdirSync(d.workspace).some((n) => n.includes('checkpoint')));
    const look = await sh(d, `ls ${store} 2>&1 || echo not-visible`);
    assert.match(look.stdout, /not-visible/);

    await sh(d, 'rm -rf ./* ./.[!.]* && echo added > new.txt && mkdir newdir && ls -A');
    assert.deepEqual(readdirSync(d.workspace).sort(), ['new.txt', 'newdir']);
    const r = ok(await d.call('restore_checkpoint', { id }));
    assert.match(r.result, new RegExp(`^\\[restored checkpoint ${id}: `));
    assert.deepEqual(snapshot(d.workspace), want);
    // A second restore of the same state changes nothing.
    const again = ok(await d.call('restore_checkpoint', { id })).structured;
    assert.equal(again.written, 0);
    assert.equal(again.removed, 0);
    // The restored repository works.
    const git = await sh(d, 'git status --porcelain && git log --oneline | wc -l');
    assert.equal(git.stdout, '1\n');
  });

  test('diff lists what changed and shows a unified diff; list_checkpoints lists them', async () => {
    const first = ok(await d.call('checkpoint', { message: 'base' })).structured.id;
    await sh(d, 'printf "line1\\nLINE2\\nline3\\n" > src/a.txt && rm run.sh && echo n > added.txt && chmod 644 src/lib/private');
    const now = ok(await d.call('diff', {}));
    assert.deepEqual(now.structured.added, ['/added.txt']);
    assert.deepEqual(now.structured.removed, ['/run.sh']);
    assert.deepEqual(now.structured.changed.sort(), ['/src/a.txt', '/src/lib/private']);
    assert.equal(now.structured.to, 'now');
    assert.ok(now.result.includes('@@ -1,2 +1,3 @@\n line1\n-line2\n+LINE2\n+line3\n'), now.result);
    assert.ok(now.result.includes('M /src/lib/private (mode 600 -> 644)'), now.result);
    const second = ok(await d.call('checkpoint', { message: 'after' })).structured.id;
    const between = ok(await d.call('diff', { from: first, to: second })).structured;
    assert.deepEqual(between.added, ['/added.txt']);
    const list = ok(await d.call('list_checkpoints')).result.checkpoints;
    assert.deepEqual(list.slice(-2).map((c) => [c.id, c.message]), [[first, 'base'], [second, 'after']]);
  });

  test('bad input: an unknown id, a background command still running, a file that keeps changing', async () => {
    const e = fail(await d.call('restore_checkpoint', { id: '999' }));
    assert.match(e, /^no checkpoint "999" \(the checkpoints are: \d+(, \d+)*\)$/);
    assert.match(fail(await d.call('restore_checkpoint', { id: '../cp' })), /no checkpoint/);
    assert.match(fail(await d.call('diff', { from: 'nope' })), /no checkpoint "nope"/);
    const before = snapshot(d.workspace);
    // A command that rewrites a file as fast as it can: the checkpoint either catches a moment
    // between two writes or fails naming the file; either way nothing half-made is listed.
    const bg = ok(await d.call('exec', { command: 'while :; do head -c 2000000 /dev/zero > hot.bin; done', background: true }));
    const count = ok(await d.call('list_checkpoints')).result.checkpoints.length;
    const r = await d.call('checkpoint', { message: 'busy' });
    const after = ok(await d.call('list_checkpoints')).result.checkpoints.length;
    if (r.body.ok) assert.equal(after, count + 1);
    else {
      assert.match(r.body.error, /\/hot\.bin changed while it was being saved, 3 times .*nothing was saved/);
      assert.equal(after, count);
    }
    const res = ok(await d.call('restore_checkpoint', { id: ok(await d.call('list_checkpoints')).result.checkpoints.at(-1).id }));
    assert.match(res.result, new RegExp(`Still running .*${bg.structured.pid} \\(while`));
    ok(await d.call('kill', { pid: bg.structured.pid, signal: 'KILL' }));
    void before;
  });
});

// Each folder level is a frame of a recursive walk on an HTTP worker's stack (1 MiB): a
// 4 KiB buffer in that frame once made a checkpoint of a 250-level tree kill the daemon.
describe('checkpoints: a tree as deep as they go', () => {
  let d, store;
  before(async () => {
    store = path.join(storeDir(), 'store');
    d = await startDaemon({ args: ['--checkpoint-dir', store] });
  });
  after(async () => { await d.stop(); rmSync(path.dirname(store), { recursive: true, force: true }); });

  test('256 folders deep with a symlink at the bottom: saved, diffed and restored', async () => {
    const deep = Array(256).fill('d').join('/');
    await sh(d, `mkdir -p ${deep} && echo bottom > ${deep}/f && ln -s f ${deep}/link`);
    const want = snapshot(d.workspace);
    const id = ok(await d.call('checkpoint', { message: 'deep' })).structured.id;
    const half = Array(100).fill('d').join('/');
    await sh(d, `rm -rf d && mkdir -p ${half} && echo other > ${half}/g`);
    const diff = ok(await d.call('diff', { from: id })).structured;
    assert.deepEqual(diff.added, [`/${half}/g`]);
    assert.ok(diff.removed.includes(`/${deep}/f`), JSON.stringify(diff.removed.slice(-3)));
    ok(await d.call('restore_checkpoint', { id }));
    assert.deepEqual(snapshot(d.workspace), want);
  });

  test('one level deeper: refused with the path, nothing listed, the daemon keeps serving', async () => {
    const count = ok(await d.call('list_checkpoints')).result.checkpoints.length;
    await sh(d, `mkdir -p ${Array(300).fill('e').join('/')}`);
    assert.match(fail(await d.call('checkpoint', {})), /^checkpoint: folders nest deeper than 256 levels, more than a checkpoint saves; move or remove the deepest, then try again: \/(e\/)+/);
    assert.equal(ok(await d.call('list_checkpoints')).result.checkpoints.length, count);
    await sh(d, 'rm -rf e');
  });
});

describe('checkpoints: retention and a full disk', () => {
  test('--checkpoint-keep 2 keeps the newest two and drops the blobs only they used', async () => {
    const store = path.join(storeDir(), 'store');
    const d = await startDaemon({ args: ['--checkpoint-dir', store, '--checkpoint-keep', '2'] });
    try {
      const ids = [];
      for (let i = 0; i < 4; i++) {
        ok(await d.call('write_file', { path: `/f${i}.txt`, content: `v${i}\n` }));
        ids.push(ok(await d.call('checkpoint', { message: `c${i}` })).structured);
      }
      assert.deepEqual(ids[2].removed_old, [ids[0].id]);
      assert.deepEqual(ids[3].removed_old, [ids[1].id]);
      const list = ok(await d.call('list_checkpoints')).result.checkpoints;
      assert.deepEqual(list.map((c) => c.id), [ids[2].id, ids[3].id]);
      // f0 and f1 were first saved by the dropped ones but are still in the kept ones.
      await sh(d, 'rm -rf ./*');
      ok(await d.call('restore_checkpoint', { id: ids[3].id }));
      for (let i = 0; i < 4; i++)
        assert.equal(readFileSync(path.join(d.workspace, `f${i}.txt`), 'utf8'), `v${i}\n`);
    } finally {
      await d.stop();
      rmSync(path.dirname(store), { recursive: true, force: true });
    }
  });

  const root = process.getuid() === 0;
  test('the disk filling during a checkpoint: a clear error, nothing listed, the workspace untouched',
       { skip: root ? false : 'needs root to mount a small tmpfs for the store' }, async () => {
    const base = storeDir();
    const store = path.join(base, 'small');
    mkdirSync(store);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0777', 'tmpfs', store]);
    let d;
    try {
      d = await startDaemon({ args: ['--checkpoint-dir', store] });
      await sh(d, 'echo small > a.txt && head -c 5000000 /dev/urandom > big.bin');
      const want = snapshot(d.workspace);
      const e = fail(await d.call('checkpoint', { message: 'too big' }));
      assert.match(e, /cannot save \/big\.bin: No space left on device/);
      assert.deepEqual(ok(await d.call('list_checkpoints')).result.checkpoints, []);
      assert.deepEqual(snapshot(d.workspace), want);
      // Nothing of the failed attempt stays in the store; a smaller one then works.
      assert.deepEqual(readdirSync(path.join(store, 'blobs')), []);
      await sh(d, 'rm big.bin');
      ok(await d.call('checkpoint', { message: 'fits' }));
    } finally {
      if (d) await d.stop();
      execFileSync('umount', [store]);
      rmSync(base, { recursive: true, force: true });
    }
  });
});

describe('checkpoints: the store of a :memory: workspace', () => {
  // The store directory a runboxd holds open, read from its file descriptors.
  const storeOf = (pid) => {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      let target;
      try { target = readlinkSync(`/proc/${pid}/fd/${fd}`); } catch { continue; }
      if (/\/runbox-checkpoints-[^/]+$/.test(target)) return target;
    }
    return null;
  };

  test('a normal stop removes it; one a killed runboxd left is swept by the next start, a live one kept',
       async () => {
    const a = await startDaemon({ workspace: ':memory:' });
    const b = await startDaemon({ workspace: ':memory:' });
    let c;
    try {
      const storeA = storeOf(a.pid), storeB = storeOf(b.pid);
      assert.ok(storeA && storeB && storeA !== storeB, `stores ${storeA} and ${storeB}`);
      ok(await a.call('write_file', { path: '/x.txt', content: 'x\n' }));
      ok(await a.call('checkpoint', { message: 'one' }));
      await a.stop('SIGKILL');
      // Any runboxd that starts sweeps (other tests' too, when ctest runs them beside this one):
      // once this one is ready, the dead daemon's store is gone and the live one's is not.
      c = await startDaemon({ workspace: ':memory:' });
      assert.ok(!existsSync(storeA), `${storeA} of the killed runboxd was swept`);
      assert.ok(existsSync(storeB), `${storeB} of a running runboxd is kept`);
      ok(await b.call('checkpoint', { message: 'still works' }));
      await b.stop();
      assert.ok(!existsSync(storeB), `${storeB} is removed when its runboxd stops`);
    } finally {
      await a.stop();
      await b.stop();
      if (c) await c.stop();
    }
  });
});
