// Integration: the workspace quota (--workspace-quota-mb) against a real runboxd: /health shows
// it, write_file past it fails saying how full the workspace is and loses nothing, an exec run
// that writes past it is stopped and reported, and a run that frees space in a full workspace is
// left to do it.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { runRunboxd, startDaemon } from '../lib/daemon.mjs';

function ok(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  return r.body;
}

function mib(n, ch = 'q') {
  return Buffer.alloc(n << 20, ch).toString('base64');
}

describe('workspace quota: 24 MiB', () => {
  let d;
  before(async () => {
    // The file size limit is raised so that only the quota can stop the writer.
    d = await startDaemon({ args: ['--workspace-quota-mb', '24', '--exec-file-size-mb', '1024',
                                   '--no-fsync'] });
  });
  after(async () => { await d.stop(); });

  test('/health shows the quota and the usage', async () => {
    ok(await d.call('write_file', { path: '/one.bin', content: mib(2), encoding: 'base64' }));
    // An exec run makes the watchdog look (and its first walk is done at start).
    ok(await d.call('exec', { command: 'true' }));
    const q = (await d.get('/health')).body.workspace_quota;
    assert.equal(q.quota_mb, 24);
    assert.ok(q.used_mb >= 2 && q.used_mb < 24, JSON.stringify(q));
  });

  test('write_file past the quota fails with the usage, and the old files stay', async () => {
    ok(await d.call('write_file', { path: '/a.bin', content: mib(10, 'a'), encoding: 'base64' }));
    const r = await d.call('write_file', { path: '/b.bin', content: mib(16, 'b'),
                                          encoding: 'base64' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.ok, false, r.text);
    assert.match(r.body.error, /^workspace is full \(quota 24 MiB, used 1[0-9] MiB\)/);
    assert.match(r.body.error, /--workspace-quota-mb/);
    // Nothing of the refused write, no temporary file; the earlier file is whole.
    assert.deepEqual(readdirSync(d.workspace).sort(), ['a.bin', 'one.bin']);
    const back = ok(await d.call('read_file', { path: '/a.bin', length: 16, encoding: 'base64' }));
    assert.ok(back.result.startsWith(Buffer.alloc(12, 'a').toString('base64')), back.result);
    ok(await d.call('remove', { path: '/a.bin' }));
  });

  test('an exec run that writes past the quota is stopped and reported', async () => {
    const r = ok(await d.call('exec', {
      command: 'dd if=/dev/zero of=fill.bin bs=1M count=64 2>/dev/null; sleep 30',
      timeout_ms: 20000,
    }));
    assert.equal(r.structured.timed_out, false, r.result);
    assert.equal(r.structured.killed, 'workspace quota', r.result);
    assert.match(r.result, /\[killed: workspace is full \(quota 24 MiB, used \d+ MiB\)\]\n$/);
    const c = ok(await d.call('console_logs', { level: 'error', limit: 5 })).result;
    assert.ok(c.entries.some((e) => e.pid === r.structured.pid &&
                             /the workspace passed its quota \(24 MiB/.test(e.message)),
              JSON.stringify(c));
    // Full now: write_file says so until space is freed.
    const w = await d.call('write_file', { path: '/x.txt', content: 'x' });
    assert.match(w.body.error, /^workspace is full/);
  });

  test('in a full workspace a run that frees space is not stopped', async () => {
    const r = ok(await d.call('exec', { command: 'rm fill.bin; sleep 1; echo freed',
                                        timeout_ms: 20000 }));
    assert.equal(r.structured.exit_code, 0, r.result);
    assert.equal(r.structured.stdout, 'freed\n');
    ok(await d.call('write_file', { path: '/x.txt', content: 'x' }));
  });
});

describe('workspace quota: settings', () => {
  test('the default is 10240 MiB on disk and 2048 MiB for :memory:; 0 means none', async () => {
    for (const [args, want] of [[[], 10240], [['--workspace-quota-mb', '0'], null]]) {
      const d = await startDaemon({ args });
      try {
        const q = (await d.get('/health')).body.workspace_quota;
        assert.equal(want === null ? q : q.quota_mb, want, JSON.stringify(q));
      } finally {
        await d.stop();
      }
    }
    const m = await startDaemon({ workspace: ':memory:' });
    try {
      assert.equal((await m.get('/health')).body.workspace_quota.quota_mb, 2048);
    } finally {
      await m.stop();
    }
  });

  test('a bad value is refused at start with the rule', async () => {
    const r = await runRunboxd(['--workspace-quota-mb', '-5', '--workspace', ':memory:']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--workspace-quota-mb: expected a whole number 0-/);
  });
});
