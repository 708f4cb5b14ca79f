// Integration: the exec engine against a real runboxd and the real bubblewrap sandbox: real
// tools (node, python3, git, npm), the result format, cwd/env/stdin, background processes with
// process_list and kill, and the attacks of issue 3, each contained with the daemon healthy
// afterwards. As root (CI) the daemon drops to an unprivileged user, and the helper's workspace
// lies under a 0700 root-owned temporary directory that user cannot traverse.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';
import { until } from '../lib/wait.mjs';

function ok(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  return r.body;
}

// A tool answer that may be a failure ({ok:false,error}).
function answer(r) {
  assert.equal(r.status, 200, r.text);
  return r.body;
}

async function exec(d, args) {
  return ok(await d.call('exec', typeof args === 'string' ? { command: args } : args));
}

// A `sleep` duration no other process on the machine uses: other test files, and other
// checkouts' runs of this one, run beside this file. base.<our pid> is a valid duration.
const markOf = (base) => `${base}.${process.pid}`;

// Processes with marker as one of their arguments (the test's own never has it: it is built
// from pieces).
function processesWith(marker) {
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const args = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (args.includes(marker)) found.push(`${name}: ${args.join(' ')}`);
    } catch { /* gone */ }
  }
  return found;
}

// Waits until no process has marker, however long the kills take on a loaded machine; a
// process that survives (its `sleep` lasts hours) keeps it waiting, with what is left written
// to stderr, until ctest's timeout fails the file.
async function waitGone(marker) {
  await until(`the processes with ${marker} to end`, () => processesWith(marker).length === 0,
              { every: 50, describe: () => processesWith(marker).join('; ') });
}

async function healthy(d) {
  const h = await d.get('/health');
  assert.equal(h.status, 200);
  assert.equal(h.body.sandbox.available, true, JSON.stringify(h.body.sandbox));
  const r = await exec(d, 'echo still-ok');
  assert.equal(r.result, 'still-ok\n');
}

describe('exec: real tools in the sandbox', () => {
  let d;
  before(async () => { d = await startDaemon(); });
  after(async () => { await d.stop(); });

  test('/health reports the sandbox and its limits', async () => {
    const h = (await d.get('/health')).body;
    assert.equal(h.sandbox.available, true, JSON.stringify(h.sandbox));
    assert.match(h.sandbox.version, /^\d+\.\d+/);
    assert.equal(h.sandbox.reason, null);
    assert.equal(h.sandbox.network, false);
    assert.equal(h.sandbox.limits.timeout_ms, 60000);
    assert.equal(h.sandbox.limits.output_bytes, 1048576);
  });

  test('node runs a file written with write_file; the workspace is the current directory', async () => {
    ok(await d.call('write_file', { path: '/hello.js', content: 'console.log("hello from " + process.cwd())\n' }));
    const r = await exec(d, 'node hello.js && node /workspace/hello.js');
    assert.equal(r.result, 'hello from /workspace\nhello from /workspace\n');
    assert.equal(r.structured.exit_code, 0);
    assert.equal(r.structured.stdout, r.result);
    assert.equal(r.structured.stderr, '');
    assert.equal(r.structured.timed_out, false);
    assert.equal(r.structured.truncated, false);
    assert.equal(r.structured.signal, null);
    assert.equal(typeof r.structured.duration_ms, 'number');
    assert.ok(r.structured.pid >= 1);
  });

  test('python3, git with a default identity, npm init -y', async () => {
    assert.equal((await exec(d, `python3 -c "print('hello')"`)).result, 'hello\n');
    const g = await exec(d, 'git init -q && git add -A && git commit -qm x && git log --format=%an%n%s');
    assert.equal(g.result, 'Runbox\nx\n');
    const n = await exec(d, 'npm init -y >/dev/null && node -p "require(\'./package.json\').version"');
    assert.equal(n.result, '1.0.0\n', JSON.stringify(n.structured));
    // HOME and the npm cache are in the private /tmp, not in the workspace.
    assert.equal(existsSync(`${d.workspace}/.npm`), false);
  });

  test('pipes and redirects; files are visible to the file tools and replaceable', async () => {
    const r = await exec(d, 'printf "b\\na\\nc\\n" | sort > sorted.txt && wc -l < sorted.txt && mkdir -p out && echo made > out/f.txt');
    assert.equal(r.result.trim(), '3');
    assert.equal(ok(await d.call('read_file', { path: '/sorted.txt' })).result, 'a\nb\nc\n');
    assert.equal(ok(await d.call('read_file', { path: '/workspace/out/f.txt' })).result, 'made\n');
    ok(await d.call('write_file', { path: '/workspace/out/f.txt', content: 'replaced' }));
    assert.equal((await exec(d, 'cat out/f.txt')).result, 'replaced');
    ok(await d.call('remove', { path: '/out', recursive: true }));
    const l = ok(await d.call('list_dir', { path: '/workspace' })).result;
    assert.ok(l.entries.some((e) => e.name === 'sorted.txt'));
  });

  test('text result: stdout, [stderr], [exit code N]; structured carries the same', async () => {
    const r = await exec(d, 'echo out; echo oops >&2; exit 3');
    assert.equal(r.result, 'out\n[stderr]\noops\n[exit code 3]\n');
    assert.equal(r.structured.exit_code, 3);
    assert.equal(r.structured.stderr, 'oops\n');
  });

  test('cwd (both spellings), env and stdin', async () => {
    ok(await d.call('write_file', { path: '/sub/x.txt', content: 'x' }));
    assert.equal((await exec(d, { command: 'pwd; ls', cwd: '/sub' })).result, '/workspace/sub\nx.txt\n');
    assert.equal((await exec(d, { command: 'pwd', cwd: '/workspace/sub' })).result, '/workspace/sub\n');
    const missing = answer(await d.call('exec', { command: 'pwd', cwd: '/nope' }));
    assert.equal(missing.ok, false);
    assert.match(missing.error, /cwd \/nope/);
    const e = await exec(d, { command: 'echo "$GREETING $HOME $LANG"', env: { GREETING: 'hi' } });
    assert.equal(e.result, 'hi /tmp C.UTF-8\n');
    const bad = answer(await d.call('exec', { command: 'true', env: { 'A-B': 'x' } }));
    assert.equal(bad.ok, false);
    assert.match(bad.error, /not a variable name/);
    assert.equal((await exec(d, { command: 'tr a-z A-Z', stdin: 'shout\n' })).result, 'SHOUT\n');
    // Without stdin the command reads end-of-file instead of hanging (a hang would end at the
    // 60 s default timeout, and the result would say "timed out").
    assert.equal((await exec(d, { command: 'cat; echo done' })).result, 'done\n');
  });

  test('timeout_ms over the daemon maximum is refused', async () => {
    const r = answer(await d.call('exec', { command: 'true', timeout_ms: 86400000 }));
    assert.equal(r.ok, false);
    assert.match(r.error, /maximum/);
  });
});

describe('exec: attacks are contained', () => {
  let d;
  const secret = 'RUNBOX_SECRET_' + 'b7f3e1';
  before(async () => {
    d = await startDaemon({
      args: ['--exec-file-size-mb', '16', '--exec-memory-mb', '512', '--exec-procs', '64'],
      env: { RUNBOX_TEST_SECRET: secret },
    });
  });
  after(async () => { await d.stop(); });

  test('host files: /etc/shadow, the daemon binary and its environment are out of reach', async () => {
    const r = await exec(d, `cat /etc/shadow; cat ${process.env.RUNBOXD}; ls /root /home; cat /proc/1/environ /proc/*/environ 2>&1; ps -e 2>/dev/null | wc -l`);
    assert.doesNotMatch(r.result, /root:/);
    assert.ok(!r.result.includes(secret));
    assert.match(r.structured.stderr, /shadow: No such file/);
  });

  test('writing outside the workspace fails (read-only root) and leaves the host untouched', async () => {
    const marker = `pwned-${process.pid}`;
    const r = await exec(d, `echo x > /${marker}; echo x > /etc/${marker}; echo x > /usr/${marker}; echo x > /tmp/${marker} && echo tmp-ok`);
    assert.match(r.structured.stderr, /Read-only file system/);
    assert.equal(r.structured.stdout, 'tmp-ok\n');
    for (const p of [`/${marker}`, `/etc/${marker}`, `/usr/${marker}`, `/tmp/${marker}`])
      assert.equal(existsSync(p), false, p);
  });

  test('no network: the internet and the daemon port on 127.0.0.1 are unreachable', async () => {
    const py = `import socket
for host, port in (("1.1.1.1", 80), ("127.0.0.1", ${d.port})):
    try:
        socket.create_connection((host, port), timeout=3); print("connected", host)
    except OSError as e:
        print("blocked", host, e.errno)`;
    const r = await exec(d, { command: 'python3 -', stdin: py });
    assert.doesNotMatch(r.result, /connected/);
    assert.match(r.result, /blocked 1\.1\.1\.1/);
    assert.match(r.result, /blocked 127\.0\.0\.1/);
  });

  test('a fork bomb is bounded and the daemon stays healthy', async () => {
    // Bounded: the run ends, by its own end or by its timeout, and says which.
    const r = await exec(d, { command: 'f(){ f | f & }; f; sleep 2', timeout_ms: 4000 });
    if (r.structured.timed_out) assert.match(r.result, /\[timed out after 4000 ms\]/);
    else assert.notEqual(r.structured.exit_code, null, JSON.stringify(r.structured));
    await healthy(d);
  });

  test('yes: output capped at 1 MiB, truncation reported, stopped early', async () => {
    // Stopped early: by the output limit, not by the 60 s default timeout.
    const r = await exec(d, 'yes');
    assert.equal(r.structured.timed_out, false, JSON.stringify({ ...r.structured, stdout: '' }));
    assert.equal(r.structured.stdout.length, 1048576);
    assert.equal(r.structured.truncated, true);
    assert.match(r.result, /\[output truncated\]\n/);
    assert.match(r.result, /\[killed: output limit/);
  });

  test('a flood of output: the console takes its first 1000 lines, one note, then lines again',
       async () => {
    // One seq writes the 3000 lines at once. The bucket refills at 200 lines/s while they are
    // read, so on a slow machine a few more than 1000 may get through: the test counts them.
    const marker = `flood${Date.now()}`;
    const before = ok(await d.call('console_logs', { limit: 1 })).result.latest_id;
    const r = await exec(d, `seq -f '${marker} %g' 1 3000; sleep 3; echo ${marker} after`);
    assert.equal(r.structured.exit_code, 0);
    assert.equal(r.structured.stdout.split('\n').length, 3002, 'the result has every line');
    const seen = [];
    for (let since = before; ;) {
      const page = ok(await d.call('console_logs', { source: 'exec', since_id: since, limit: 1000 }))
        .result;
      seen.push(...page.entries.filter((e) => e.pid === r.structured.pid));
      if (!page.entries.length) break;
      since = page.next_since_id;
    }
    const messages = seen.filter((e) => e.level !== 'info').map((e) => e.message);
    const note = messages.findIndex((m) => /output lines not shown here/.test(m));
    assert.ok(note >= 1000, `the note came after ${note} lines`);
    assert.deepEqual(messages.slice(0, note),
                     Array.from({ length: note }, (_, i) => `${marker} ${i + 1}`));
    assert.equal(messages[note], `[process ${r.structured.pid}: ${3000 - note} output lines not ` +
                                 'shown here (more than 200 lines a second); the command\'s own ' +
                                 'result has its output]');
    assert.equal(seen.find((e) => e.message === messages[note]).level, 'warn');
    assert.deepEqual(messages.slice(note + 1), [`${marker} after`],
                     'one note; after a pause its lines reach the console again');
  });

  test('a sleep of hours with timeout_ms 500: stopped by the timeout, setsid grandchildren too', async () => {
    // The call ends on the timeout (it says so), not when the sleeps would (in 2.5 hours), and
    // takes the grandchildren that left the process group with it.
    const mark = markOf(9137);
    const r = await exec(d, { command: `setsid sleep ${mark} & (sleep ${mark} &) ; sleep ${mark}`, timeout_ms: 500 });
    assert.equal(r.structured.timed_out, true);
    assert.match(r.result, /\[timed out after 500 ms\]/);
    await waitGone(mark);
  });

  test('a memory hog is stopped at the memory limit, not the host\'s memory', async () => {
    // 1 GiB of touched memory against a 512 MiB limit: the OOM killer of the run's cgroup where
    // runboxd has the memory controller, else an allocation failure under RLIMIT_DATA (or the
    // watchdog, should it see the run past the limit first).
    const mode = (await d.get('/health')).body.sandbox.memory;
    const r = await exec(d, `python3 -c "b = b'x' * (1 << 30)"`);
    assert.notEqual(r.structured.exit_code, 0);
    if (mode === 'cgroup') {
      assert.match(r.result, /\[killed: memory limit\]/);
      assert.equal(r.structured.killed, 'memory limit');
    } else {
      assert.equal(mode, 'watchdog');
      assert.ok(/MemoryError/.test(r.structured.stderr) || r.structured.killed === 'memory limit',
                r.result);
    }
    await healthy(d);
  });

  test('writing a 1 GB file stops at the file size limit', async () => {
    const r = await exec(d, 'head -c 1073741824 /dev/zero > big.bin');
    assert.match(r.result, /\[killed: file size limit\]/);
    assert.equal(r.structured.signal, 'SIGXFSZ');
    assert.ok(statSync(`${d.workspace}/big.bin`).size <= 16 * 1024 * 1024);
    ok(await d.call('remove', { path: '/big.bin' }));
  });

  test('a symlink to / planted by a command stays inside the workspace for the file tools', async () => {
    await exec(d, 'ln -s / escape && ln -s /etc/passwd pw');
    const read = answer(await d.call('read_file', { path: '/escape/etc/passwd' }));
    assert.equal(read.ok, false);
    const pw = answer(await d.call('read_file', { path: '/pw' }));
    assert.equal(pw.ok, false);
    const marker = `escaped-${process.pid}`;
    const w = answer(await d.call('write_file', { path: `/escape/${marker}`, content: 'x' }));
    assert.equal(existsSync(`/${marker}`), false);
    if (w.ok) assert.equal(readFileSync(`${d.workspace}/${marker}`, 'utf8'), 'x');
  });

  test('20 execs at once all finish with their own output', async () => {
    const runs = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      d.call('exec', { command: `sleep 0.2; echo run-${i}` })));
    runs.forEach((r, i) => assert.equal(ok(r).result, `run-${i}\n`));
    await healthy(d);
  });
});

describe('exec: background processes', () => {
  let d;
  before(async () => { d = await startDaemon(); });
  after(async () => { await d.stop(); });

  test('background returns at once; output reaches the console; process_list; kill takes children', async () => {
    const mark = markOf(8123);
    // "At once": the answer comes while the run goes on (its sleep lasts hours).
    const r = await exec(d, { command: `echo started; echo warned >&2; setsid sleep ${mark} & sleep ${mark}`, background: true });
    const pid = r.structured.pid;
    assert.equal(r.structured.background, true);
    assert.match(r.result, new RegExp(`process ${pid}`));
    let list = ok(await d.call('process_list')).result.processes;
    let me = list.find((p) => p.pid === pid);
    assert.equal(me.state, 'running');
    assert.equal(me.background, true);
    assert.equal(me.exit_code, null);
    assert.match(me.started, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // The output lines flow into the console (stdout as log, stderr as warn).
    let entries = [];
    await until('both lines in the console', async () => {
      const c = await d.call('console_logs', { source: 'exec', limit: 100 });
      entries = c.body.ok ? c.body.result.entries : [];
      return ['started', 'warned'].every((m) => entries.some((e) => e.message === m && e.pid === pid));
    }, { every: 50, describe: () => JSON.stringify(entries) });
    assert.ok(entries.some((e) => e.message === 'started' && e.level === 'log' && e.pid === pid), JSON.stringify(entries));
    assert.ok(entries.some((e) => e.message === 'warned' && e.level === 'warn'));
    await until('both sleeps to run', () => processesWith(mark).length >= 2);
    const k = ok(await d.call('kill', { pid })).result;
    assert.deepEqual(k, { pid, signal: 'TERM', state: 'killed' });
    await waitGone(mark);
    list = ok(await d.call('process_list')).result.processes;
    me = list.find((p) => p.pid === pid);
    assert.equal(me.state, 'killed');
    const again = answer(await d.call('kill', { pid, signal: 'KILL' }));
    assert.equal(again.ok, false);
    assert.match(again.error, /not running/);
    const none = answer(await d.call('kill', { pid: 99999 }));
    assert.equal(none.ok, false);
  });

  test('a failing foreground run leaves an error entry with its last stderr lines', async () => {
    await exec(d, 'echo first-line >&2; echo last-words >&2; exit 7');
    const c = ok(await d.call('console_logs', { source: 'exec', level: 'error' })).result;
    assert.ok(c.entries.some((e) => /exit code 7/.test(e.message) && /last-words/.test(e.message)), JSON.stringify(c));
  });

  test('stopping the daemon kills every background process', async () => {
    const d2 = await startDaemon();
    const mark = markOf(7411);
    for (let i = 0; i < 2; i++)
      await exec(d2, { command: `setsid sleep ${mark} & sleep ${mark}`, background: true });
    await until('the four sleeps to run', () => processesWith(mark).length >= 4,
                { describe: () => processesWith(mark).join('; ') });
    // The daemon exits (it does not wait for the sleeps of hours) and takes them with it.
    const res = await d2.stop('SIGTERM');
    assert.equal(res.code, 0, d2.stderr());
    await waitGone(mark);
  });
});

describe('exec: no usable sandbox', () => {
  test('bwrap missing: exec fails naming the cause and the fix; /health says so', async () => {
    const d = await startDaemon({ env: { PATH: '/nonexistent' } });
    try {
      const h = (await d.get('/health')).body;
      assert.equal(h.sandbox.available, false);
      assert.match(h.sandbox.reason, /bubblewrap/);
      const r = answer(await d.call('exec', { command: 'echo should-not-run' }));
      assert.equal(r.ok, false);
      assert.match(r.error, /bubblewrap.*install/);
    } finally {
      await d.stop();
    }
  });
});
