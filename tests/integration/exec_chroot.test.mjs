// Integration: runboxd inside a chroot. The kernel refuses new user namespaces to a chrooted
// process, so the sandbox cannot work there; runboxd must say that (and how to get out of it),
// not blame the user-namespace sysctls. The chroot is made of bind mounts of this machine's
// /usr and /etc in a private mount namespace, and needs root (skipped otherwise).
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { runboxdPath, startDaemon } from '../lib/daemon.mjs';

const why = process.getuid?.() !== 0 ? 'needs root to make a chroot' : null;

describe('exec: runboxd in a chroot', { skip: why ?? false }, () => {
  let dir, d;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'runbox-chroot-'));
    const root = path.join(dir, 'root');
    const bin = runboxdPath();
    // The root is a plain directory (not a mount point), as a chroot usually is.
    const script = path.join(dir, 'runboxd-in-chroot');
    writeFileSync(script, `#!/bin/sh
exec unshare --mount sh -c '
set -e
R=$1; bin=$2; shift 2
mount --make-rprivate /
for d in usr etc dev proc tmp mnt; do mkdir -p "$R/$d"; done
for l in bin lib lib64 sbin; do [ -e "/$l" ] && ln -s "usr/$l" "$R/$l"; done
mount --rbind /usr "$R/usr"
mount --bind /etc "$R/etc"
mount --rbind /dev "$R/dev"
mount -t proc proc "$R/proc"
mount -t tmpfs tmpfs "$R/tmp"
mkdir -p "$R$(dirname "$bin")"
touch "$R$bin"
mount --bind "$bin" "$R$bin"
exec chroot "$R" "$bin" "$@"' sh '${root}' '${bin}' "$@"
`);
    chmodSync(script, 0o755);
    const saved = process.env.RUNBOXD;
    process.env.RUNBOXD = script;
    try {
      d = await startDaemon({ workspace: ':memory:' });
    } finally {
      process.env.RUNBOXD = saved;
    }
  });
  after(async () => {
    if (d) await d.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('/health and exec say it is the chroot, and what to do instead', async () => {
    const h = await d.get('/health');
    assert.equal(h.status, 200);
    assert.equal(h.body.sandbox.available, false, JSON.stringify(h.body.sandbox));
    const reason = h.body.sandbox.reason;
    assert.match(reason, /runboxd runs in a chroot, where the kernel refuses user namespaces/);
    assert.match(reason, /pivot_root \(docs\/install\.md#chroots\)/);
    assert.doesNotMatch(reason, /max_user_namespaces/);
    const r = await d.call('exec', { command: 'echo never' });
    assert.equal(r.body.ok, false, r.text);
    assert.match(r.body.error, /runs in a chroot/);
  });

  test('everything but exec still works', async () => {
    const w = await d.call('write_file', { path: '/a.txt', content: 'in a chroot' });
    assert.equal(w.body.ok, true, w.text);
    const r = await d.call('read_file', { path: '/a.txt' });
    assert.equal(r.body.result, 'in a chroot');
  });
});
