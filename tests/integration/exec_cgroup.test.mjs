// Integration: the sandboxes' cgroups (cgroup v2) on the machine the tests run on, against a
// real runboxd. What a host offers differs: runboxd makes cgroups only where it may write its own
// cgroup (as root, or with systemd's Delegate=yes), and memory/pids limits only where that
// cgroup offers the controllers. Each test reads /health and asserts what that machine must do;
// a test that needs cgroups says so and skips where /health reports them off. The memory and
// process controllers themselves are tested in a VM with a pure cgroup v2 kernel (tests/vm/).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync,
  rmSync, statSync, writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { runboxdPath, startDaemon } from '../lib/daemon.mjs';
import { until } from '../lib/wait.mjs';

function ok(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  return r.body;
}

async function sandbox(d) {
  const h = await d.get('/health');
  assert.equal(h.status, 200);
  return h.body.sandbox;
}

function pidsOf(dir) {
  return readFileSync(`${dir}/cgroup.procs`, 'utf8').split('\n').filter(Boolean).map(Number);
}

function runDirs(dir) {
  return readdirSync(dir).filter((n) => n.startsWith('exec-'));
}


describe('exec: cgroups', () => {
  let d, sb;
  before(async () => {
    d = await startDaemon();
    sb = await sandbox(d);
  });
  after(async () => { await d.stop(); });

  test('/health says how memory and processes are limited, and why when not by cgroups', async () => {
    assert.ok(['cgroup', 'watchdog'].includes(sb.memory), JSON.stringify(sb));
    assert.ok(['cgroup', 'rlimit'].includes(sb.procs), JSON.stringify(sb));
    assert.ok('path' in sb.cgroup && 'reason' in sb.cgroup, JSON.stringify(sb));
    if (sb.memory === 'cgroup' && sb.procs === 'cgroup') assert.equal(sb.cgroup.reason, null);
    else assert.match(sb.cgroup.reason, /rlimit/);
    if (sb.cgroup.path === null) {
      assert.equal(sb.memory, 'watchdog');
      assert.equal(sb.procs, 'rlimit');
      return;
    }
    // The daemon lives in the leaf "daemon" of its own cgroup.
    assert.match(sb.cgroup.path, new RegExp(`/runboxd-${d.pid}$`));
    assert.ok(pidsOf(`${sb.cgroup.path}/daemon`).includes(d.pid));
  });

  test('a run lives in a cgroup of its own; kill empties it and it is removed', async (t) => {
    if (!sb.cgroup.path) return t.skip(`cgroups are off here: ${sb.cgroup.reason}`);
    const mark = '6271.5';
    const r = ok(await d.call('exec', { command: `setsid sleep ${mark} & sleep ${mark}`, background: true }));
    const pid = r.structured.pid;
    const dir = `${sb.cgroup.path}/exec-${pid}`;
    // bwrap, the sandbox's init, sh and the two sleeps.
    await until(`${dir} to hold the run`, () => existsSync(dir) && pidsOf(dir).length >= 4,
                { describe: () => (existsSync(dir) ? pidsOf(dir).join(' ') : 'no cgroup') });
    const inside = pidsOf(dir);
    const k = ok(await d.call('kill', { pid, signal: 'KILL' })).result;
    assert.equal(k.state, 'killed');
    // However long the kill takes on a loaded machine; a run that survived (its sleep lasts
    // hours) or a cgroup left behind keeps these waiting until ctest's timeout.
    await until('the run\'s processes to end', () => inside.every((p) => !existsSync(`/proc/${p}`)),
                { describe: () => `left: ${inside.filter((p) => existsSync(`/proc/${p}`))}` });
    await until(`${dir} to be removed`, () => !existsSync(dir));
  });

  test('a command cannot reach its cgroup to lift its own limits', async () => {
    // The sandbox runs as the account the cgroups are delegated to, so it must not see them.
    const r = ok(await d.call('exec', {
      command: 'ls /sys/fs/cgroup; mkdir -p /tmp/c && mount -t cgroup2 none /tmp/c; ' +
        'ls /tmp/c | wc -l; echo end',
    }));
    assert.match(r.structured.stderr, /cannot access '\/sys\/fs\/cgroup'/);
    assert.match(r.structured.stderr, /mount: .*(permission denied|must be superuser|Operation not permitted)/i);
    assert.match(r.structured.stdout, /^0\nend\n$/);
  });

  test('after foreground runs no run cgroup is left', async (t) => {
    if (!sb.cgroup.path) return t.skip(`cgroups are off here: ${sb.cgroup.reason}`);
    for (let i = 0; i < 5; i++) {
      const r = ok(await d.call('exec', { command: 'cat /proc/self/cgroup; echo done' }));
      assert.match(r.result, /done\n$/);
    }
    // A timed-out run whose children would outlive its shell by an hour: only the kill at the
    // timeout empties the cgroup before ctest's timeout.
    const r = ok(await d.call('exec', { command: 'setsid sleep 3600 & sleep 3600', timeout_ms: 300 }));
    assert.equal(r.structured.timed_out, true);
    await until('no run cgroup left', () => runDirs(sb.cgroup.path).length === 0,
                { describe: () => runDirs(sb.cgroup.path).join(' ') });
  });

  test('the cgroup a daemon leaves is removed by the next daemon', async (t) => {
    if (!sb.cgroup.path) return t.skip(`cgroups are off here: ${sb.cgroup.reason}`);
    const d1 = await startDaemon();
    const path1 = (await sandbox(d1)).cgroup.path;
    assert.ok(path1 && existsSync(path1));
    ok(await d1.call('exec', { command: 'true' }));
    assert.equal((await d1.stop()).code, 0);
    const d2 = await startDaemon();
    try {
      assert.equal(existsSync(path1), false, `${path1} survived the next start`);
    } finally {
      await d2.stop();
    }
  });
});

describe('exec: daemons of other pid namespaces', () => {
  // What a runboxd in a container with a pid namespace of its own (and the host's cgroup tree)
  // leaves beside ours: runboxd-<its pid there>, a pid that names no process here, with the
  // daemon in the leaf. A sleep stands in for that daemon. All of it lives in a cgroup of the
  // test's own, where the daemons it starts make theirs, so no other runboxd on the machine
  // sweeps it meanwhile.
  const mount = cgroup2Mount();
  const why = process.getuid?.() !== 0 ? 'needs root to make the cgroups'
    : !mount ? 'no cgroup v2 hierarchy is mounted' : null;

  test('a live daemon in another pid namespace keeps its cgroup', { skip: why ?? false }, async (t) => {
    const parent = path.join(mount, `runbox-test-ns-${process.pid}`);
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'runbox-pidns-'));
    // A pid past the kernel's limit (PID_MAX_LIMIT, 2^22) names no process here, now or later:
    // a free pid below it could be given to a new process while the test runs.
    const pid = 4194304 + process.pid;
    const other = path.join(parent, `runboxd-${pid}`);
    const start = () => startThrough(tmp, `echo $$ > '${parent}/cgroup.procs' || exit 1\n` +
                                     `exec '${runboxdPath()}' "$@"`);
    mkdirSync(path.join(other, 'daemon'), { recursive: true });
    const standIn = spawn('sleep', ['600'], { stdio: 'ignore' });
    const standInGone = new Promise((r) => standIn.once('exit', r));
    try {
      writeFileSync(path.join(other, 'daemon', 'cgroup.procs'), `${standIn.pid}\n`);
      const d2 = await start();
      try {
        const sb = await sandbox(d2);
        if (!sb.cgroup.path) return t.skip(`cgroups are off here: ${sb.cgroup.reason}`);
        assert.equal(path.dirname(sb.cgroup.path), parent);
        assert.equal(existsSync(other), true, `${other} was removed by the next start`);
        assert.deepEqual(pidsOf(path.join(other, 'daemon')), [standIn.pid]);
      } finally {
        await d2.stop();
      }
      // Once that daemon is gone its cgroup is stale, and the next start removes it.
      standIn.kill('SIGKILL');
      await standInGone;
      const d3 = await start();
      await d3.stop();
      assert.equal(existsSync(other), false, `${other} survived after its daemon ended`);
    } finally {
      // Reaped first: a leaf that still holds the stand-in cannot be removed (EBUSY), and that
      // error would hide the test's own.
      standIn.kill('SIGKILL');
      await standInGone;
      if (existsSync(parent)) {
        for (const name of readdirSync(parent).filter((n) => n.startsWith('runboxd-'))) {
          const r = path.join(parent, name);
          for (const sub of readdirSync(r, { withFileTypes: true }).filter((e) => e.isDirectory()))
            rmdirSync(path.join(r, sub.name));
          rmdirSync(r);
        }
        rmdirSync(parent);
      }
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

describe('exec: memory limit of a sandbox', () => {
  let d;
  before(async () => { d = await startDaemon({ args: ['--exec-memory-mb', '128'] }); });
  after(async () => { await d.stop(); });

  test('a hog past the limit is stopped and reported; the daemon stays healthy', async () => {
    const sb = await sandbox(d);
    const r = ok(await d.call('exec', { command: `python3 -c "b = b'x' * (512 << 20)"; echo after=$?` }));
    if (sb.memory === 'cgroup') {
      // The OOM killer of the run's cgroup took python3; the shell went on.
      assert.match(r.result, /after=137/);
      assert.match(r.result, /\[killed: memory limit\]/);
      assert.equal(r.structured.killed, 'memory limit');
      const c = ok(await d.call('console_logs', { source: 'exec', level: 'error' })).result;
      assert.ok(c.entries.some((e) => /memory limit \(128 MiB\)/.test(e.message)), JSON.stringify(c));
    } else {
      assert.match(r.structured.stderr, /MemoryError/);
      assert.match(r.result, /after=1/);
    }
    const again = ok(await d.call('exec', { command: 'echo fine' }));
    assert.equal(again.result, 'fine\n');
  });
});

describe('exec: --no-cgroup', () => {
  test('rlimits only, /health says it was turned off, and commands still run', async () => {
    const d = await startDaemon({ args: ['--no-cgroup'] });
    try {
      const sb = await sandbox(d);
      assert.equal(sb.memory, 'watchdog');
      assert.equal(sb.procs, 'rlimit');
      assert.equal(sb.cgroup.path, null);
      assert.match(sb.cgroup.reason, /--no-cgroup/);
      const r = ok(await d.call('exec', { command: 'echo plain' }));
      assert.equal(r.result, 'plain\n');
    } finally {
      await d.stop();
    }
  });
});

// Where the cgroup v2 hierarchy is mounted (its root), or null.
function cgroup2Mount() {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [pre, post] = line.split(' - ');
    if (post?.startsWith('cgroup2 ') && pre.split(' ')[3] === '/') return pre.split(' ')[4];
  }
  return null;
}

const NOBODY = 65534;

// Starts runboxd through a shell script (in dir) whose body ends by exec'ing it: startDaemon
// runs $RUNBOXD, so the script stands in for it during the start.
async function startThrough(dir, body, opts) {
  const script = path.join(dir, 'runboxd-wrapper');
  writeFileSync(script, `#!/bin/sh\n${body}\n`);
  chmodSync(script, 0o755);
  const saved = process.env.RUNBOXD;
  process.env.RUNBOXD = script;
  try {
    return await startDaemon(opts);
  } finally {
    process.env.RUNBOXD = saved;
  }
}

describe('exec: an unprivileged runboxd in a cgroup delegated to it', () => {
  // What systemd's Delegate=yes (or systemd-run --user --scope -p Delegate=yes) gives: a cgroup
  // owned by the daemon's user, the daemon inside it. Made here by hand, as root.
  const mount = cgroup2Mount();
  const why = process.getuid?.() !== 0 ? 'needs root to make the delegated cgroup'
    : !mount ? 'no cgroup v2 hierarchy is mounted' : null;

  test('runs get their cgroups inside it, owned by the daemon\'s user, and are removed', { skip: why ?? false }, async () => {
    const deleg = path.join(mount, `runbox-test-${process.pid}`);
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'runbox-deleg-'));
    let d;
    try {
      mkdirSync(deleg);
      for (const f of ['', 'cgroup.procs', 'cgroup.threads', 'cgroup.subtree_control'])
        chownSync(path.join(deleg, f), NOBODY, NOBODY);
      chmodSync(tmp, 0o755);
      for (const dir of ['ws', 'config']) {
        mkdirSync(path.join(tmp, dir));
        chownSync(path.join(tmp, dir), NOBODY, NOBODY);
      }
      // Enter the delegated cgroup as root (moving needs its parent's rights), then drop.
      d = await startThrough(tmp, `echo $$ > '${deleg}/cgroup.procs' || exit 1\n` +
        `exec setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups '${runboxdPath()}' "$@"`,
      { workspace: path.join(tmp, 'ws'), env: { XDG_CONFIG_HOME: path.join(tmp, 'config') } });

      const sb = await sandbox(d);
      assert.equal(sb.available, true, JSON.stringify(sb));
      assert.equal(sb.cgroup.path, path.join(deleg, `runboxd-${d.pid}`), JSON.stringify(sb.cgroup));
      assert.ok(pidsOf(path.join(sb.cgroup.path, 'daemon')).includes(d.pid));
      const r = ok(await d.call('exec', { command: 'sleep 5271.5', background: true }));
      const dir = path.join(sb.cgroup.path, `exec-${r.structured.pid}`);
      await until(`${dir} to hold the run`, () => existsSync(dir) && pidsOf(dir).length >= 2);
      assert.equal(statSync(dir).uid, NOBODY);
      ok(await d.call('kill', { pid: r.structured.pid, signal: 'KILL' }));
      await until(`${dir} to be removed`, () => !existsSync(dir));
      const fg = ok(await d.call('exec', { command: 'id -u' }));
      assert.equal(fg.result, `${NOBODY}\n`);
    } finally {
      if (d) await d.stop();
      // The daemon cannot remove its own directories; once it is gone they are empty.
      if (existsSync(deleg)) {
        for (const name of readdirSync(deleg).filter((n) => n.startsWith('runboxd-'))) {
          const r = path.join(deleg, name);
          for (const sub of readdirSync(r, { withFileTypes: true }).filter((e) => e.isDirectory()))
            rmdirSync(path.join(r, sub.name));
          rmdirSync(r);
        }
        rmdirSync(deleg);
      }
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

describe('exec: clone3 refused by a seccomp filter (as in Docker)', () => {
  test('cgroups are turned off with the reason; commands run, limited by rlimits', async (t) => {
    const helper = process.env.RUNBOX_NO_CLONE3;
    if (!helper) return t.skip('RUNBOX_NO_CLONE3 is not set (ctest sets it)');
    const plain = await startDaemon();
    const on = (await sandbox(plain)).cgroup.path !== null;
    await plain.stop();
    if (!on) return t.skip('cgroups are off here anyway, so runboxd never calls clone3');

    const tmp = mkdtempSync(path.join(os.tmpdir(), 'runbox-noclone3-'));
    let d;
    try {
      d = await startThrough(tmp, `exec '${helper}' '${runboxdPath()}' "$@"`,
        { args: ['--exec-memory-mb', '128'] });
      const sb = await sandbox(d);
      assert.equal(sb.available, true, JSON.stringify(sb));
      assert.equal(sb.cgroup.path, null);
      assert.equal(sb.memory, 'watchdog');
      assert.equal(sb.procs, 'rlimit');
      assert.match(sb.cgroup.reason, /^starting a sandbox in its cgroup failed \(clone3: Function not implemented\): limits are rlimits/);
      const r = ok(await d.call('exec', { command: 'echo fine' }));
      assert.equal(r.result, 'fine\n');
      // The memory limit is RLIMIT_DATA again: an allocation past it fails.
      const hog = ok(await d.call('exec', { command: `python3 -c "b = b'x' * (512 << 20)"` }));
      assert.match(hog.structured.stderr, /MemoryError/);
    } finally {
      if (d) await d.stop();
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
