// Integration: the test helpers themselves. A test that fails before it stops its daemon must
// make its file fail, not hang until ctest's timeout with the daemon still running (as a
// failed write in daemon_tools did: the file then waited 300 s in silence).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const lib = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'lib', 'daemon.mjs');

test('a test that throws before stopping its daemon fails its file, and the daemon is killed', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'runbox-testlib-'));
  try {
    const file = path.join(dir, 'forgets.test.mjs');
    writeFileSync(file, `
import { test } from 'node:test';
import { startDaemon } from ${JSON.stringify(lib)};
test('forgets to stop', async () => {
  const d = await startDaemon({ workspace: ':memory:' });
  console.log('daemon pid ' + d.pid);
  throw new Error('failed before d.stop()');
});
`);
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT; // a test runner of its own, not a part of ours
    const child = spawn(process.execPath, ['--test', '--test-reporter=tap', file],
                        { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { out += c; });
    const code = await new Promise((r) => child.once('exit', r));
    assert.equal(code, 1, out);
    assert.match(out, /failed before d\.stop\(\)/);
    // Killed as that node exited; gone once its new parent has reaped it, however long that
    // takes on a loaded machine. A daemon that outlived its test keeps this wait going until
    // ctest's timeout fails the file.
    const pid = Number(/daemon pid (\d+)/.exec(out)[1]);
    const alive = () => { try { process.kill(pid, 0); return true; } catch { return false; } };
    while (alive()) await new Promise((r) => setTimeout(r, 10));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
