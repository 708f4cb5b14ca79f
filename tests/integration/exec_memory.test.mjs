// Integration: the memory limit bounds one run as a whole (all its processes and every tmpfs and
// shared memory it can fill), against a real runboxd in the real sandbox. On a host whose cgroups
// give runboxd no memory controller (this kind of machine: hybrid cgroups) the watchdog does it;
// where a cgroup does, the same runs are stopped by it and reported the same way.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';

function ok(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  return r.body;
}

async function exec(d, command, timeoutMs = 20000) {
  return ok(await d.call('exec', { command, timeout_ms: timeoutMs }));
}

// The run was stopped by the memory limit, not by its timeout.
function assertMemoryKill(r) {
  assert.equal(r.structured.timed_out, false, r.result);
  assert.equal(r.structured.killed, 'memory limit', r.result);
  assert.match(r.result, /\[killed: memory limit\]\n$/);
}

describe('exec: a 2 GiB memory limit bounds the run, not each process', () => {
  let d;
  before(async () => { d = await startDaemon({ args: ['--exec-memory-mb', '2048'] }); });
  after(async () => { await d.stop(); });

  test('/health says what bounds a run\'s memory', async () => {
    const sb = (await d.get('/health')).body.sandbox;
    assert.ok(['cgroup', 'watchdog'].includes(sb.memory), JSON.stringify(sb));
    assert.equal(sb.sysv_shm_bounded, true, JSON.stringify(sb));
  });

  test('a run that forks 4 x 1 GiB is killed and reported', async () => {
    // Each child is below the limit alone (RLIMIT_DATA is per process); together they are not.
    const script = [
      'import os, time',
      'for i in range(4):',
      '    if os.fork() == 0:',
      "        held = [b'\\x01' * (64 << 20) for _ in range(16)]",
      '        time.sleep(60)',
      '        os._exit(0)',
      'os.wait()',
    ].join('\n');
    const r = ok(await d.call('exec', { command: 'python3 -', stdin: script, timeout_ms: 30000 }));
    assertMemoryKill(r);
    const c = ok(await d.call('console_logs', { level: 'error', limit: 5 })).result;
    assert.ok(c.entries.some((e) => e.pid === r.structured.pid &&
                             /memory limit \(2048 MiB\)/.test(e.message)), JSON.stringify(c));
  });
});

describe('exec: tmpfs and shared memory count against the memory limit', () => {
  let d;
  before(async () => {
    // The file size limit is raised so that only the memory limit can stop the writers.
    d = await startDaemon({ args: ['--exec-memory-mb', '256', '--exec-file-size-mb', '1024'] });
  });
  after(async () => { await d.stop(); });

  test('/dev/shm is sized at the limit, and filling it stops the run', async () => {
    const size = await exec(d, "df -k /dev/shm | awk 'NR == 2 { print $2 }'");
    assert.equal(size.structured.stdout, `${256 * 1024}\n`);
    assertMemoryKill(await exec(d, 'dd if=/dev/zero of=/dev/shm/fill bs=1M count=400; sleep 30'));
  });

  test('/dev itself cannot be written', async () => {
    const r = await exec(d, 'touch /dev/fill');
    assert.notEqual(r.structured.exit_code, 0);
    assert.match(r.structured.stderr, /Read-only file system/);
  });

  test('memfd_create files held open count', async () => {
    const script = [
      'import os, time',
      'fds = []',
      'for i in range(8):',
      "    fd = os.memfd_create('m%d' % i)",
      "    os.write(fd, b'\\x02' * (64 << 20))",
      '    fds.append(fd)',
      'time.sleep(30)',
    ].join('\n');
    assertMemoryKill(ok(await d.call('exec', { command: 'python3 -', stdin: script,
                                               timeout_ms: 20000 })));
  });

  test('a shared anonymous mapping counts', async () => {
    const script = [
      'import mmap, time',
      'm = mmap.mmap(-1, 512 << 20)',
      'for off in range(0, 512 << 20, 4096): m[off] = 1',
      'time.sleep(30)',
    ].join('\n');
    assertMemoryKill(ok(await d.call('exec', { command: 'python3 -', stdin: script,
                                               timeout_ms: 20000 })));
  });

  test('System V segments: attached ones count, detached ones are gone', async () => {
    const script = (detach) => [
      'import ctypes, time',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'libc.shmat.restype = ctypes.c_void_p',
      'for i in range(8):',
      '    sid = libc.shmget(0, 64 << 20, 0o1600)',
      '    if sid < 0: break',
      '    addr = libc.shmat(sid, None, 0)',
      '    ctypes.memset(addr, 3, 64 << 20)',
      detach ? '    libc.shmdt(ctypes.c_void_p(addr))' : '    pass',
      // /proc/sysvipc/shm lists this IPC namespace's segments after a header line.
      "print(len(open('/proc/sysvipc/shm').read().splitlines()) - 1)",
      detach ? '' : 'time.sleep(30)',
    ].join('\n');
    const gone = ok(await d.call('exec', { command: 'python3 -', stdin: script(true),
                                           timeout_ms: 20000 }));
    assert.equal(gone.structured.exit_code, 0, gone.result);
    assert.equal(gone.structured.stdout, '0\n', 'no segment outlives its last detach');
    assertMemoryKill(ok(await d.call('exec', { command: 'python3 -', stdin: script(false),
                                               timeout_ms: 20000 })));
  });

  test('a run under the limit is left alone', async () => {
    const r = await exec(d, 'dd if=/dev/zero of=/dev/shm/small bs=1M count=64 2>/dev/null; ' +
                            'head -c 64000000 /dev/zero > /tmp/small; sleep 1; echo done');
    assert.equal(r.structured.exit_code, 0, r.result);
    assert.equal(r.structured.stdout, 'done\n');
  });
});
