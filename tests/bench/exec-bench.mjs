// tests/bench/exec-bench.mjs - exec of `true` through runbox (stdio MCP -> HTTP -> runboxd ->
// sandbox) against a bare `bwrap ... true` with the same flags, in the same run, alternating.
// Prints p50/p90 of both and the ratio (issue 3 target: runbox p50 <= 1.3x bare bwrap p50).
// A benchmark, not a test: it never fails because a number is slow.
//   RUNBOXD=... RUNBOX=... node tests/bench/exec-bench.mjs [N]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { startDaemon } from '../lib/daemon.mjs';
import { startProxy } from '../lib/proxy.mjs';

const N = Number(process.argv[2] || process.env.EXEC_N || 200);
const WARMUP = 10;

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

// The exact bwrap argv the daemon uses, read from a running sandbox.
async function sandboxArgv(d, marker) {
  await d.call('exec', { command: `sleep ${marker}`, background: true });
  for (let i = 0; i < 100; i++) {
    for (const p of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
      let argv;
      try { argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').slice(0, -1); } catch { continue; }
      if (argv.length && argv[0].endsWith('bwrap') && argv.at(-1) === `sleep ${marker}`) return argv;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('could not find the sandbox command line');
}

const ws = mkdtempSync(path.join(os.tmpdir(), 'exec-bench-'));
chmodSync(ws, 0o777); // the bare bwrap runs as the daemon's user and must reach it by path
const d = await startDaemon({ workspace: ws, args: ['--no-fsync'] });
const proxy = startProxy({ daemonUrl: d.url });
await proxy.initialize('2025-11-25');

const argv = await sandboxArgv(d, '4242.5');
// The daemon binds the workspace from its own mount namespace; bare bwrap binds the directory.
const bind = argv.indexOf('--bind');
argv[bind + 1] = ws;
argv[argv.length - 1] = 'true';
const health = (await d.get('/health')).body;
// In network mode proxy (the default) the daemon's setup process makes the sandbox's network
// namespace and bwrap keeps it (--share-net); the bare run gets the same isolation by letting
// bwrap make one itself (--unshare-net: without it bwrap would keep the host's network, and the
// bare run would skip the namespace and its loopback set-up that every sandboxed run pays).
if (health.sandbox.egress && health.sandbox.egress.mode !== 'full') {
  const i = argv.indexOf('--share-net');
  if (i >= 0) argv[i] = '--unshare-net';
}
const asRoot = process.getuid() === 0;
const user = asRoot ? Number(spawnSync('id', ['-u', 'nobody']).stdout.toString().trim()) : undefined;

function bare() {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const c = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'],
                                              ...(asRoot ? { uid: user, gid: user } : {}) });
    let err = '';
    c.stderr.on('data', (x) => { err += x; });
    c.on('close', (code) => {
      if (code !== 0) reject(new Error(`bare bwrap failed (${code}): ${err}`));
      else resolve(Number(process.hrtime.bigint() - t0) / 1e6);
    });
  });
}

async function viaRunbox() {
  const t0 = process.hrtime.bigint();
  const res = await proxy.callTool('exec', { command: 'true' });
  if (res.isError) throw new Error(JSON.stringify(res));
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

const a = [], b = [];
try {
  for (let i = 0; i < WARMUP; i++) { await bare(); await viaRunbox(); }
  for (let i = 0; i < N; i++) {
    // Alternate the order so drift hits both sides alike.
    if (i % 2) { b.push(await bare()); a.push(await viaRunbox()); }
    else { a.push(await viaRunbox()); b.push(await bare()); }
  }
} finally {
  await proxy.close();
  await d.stop();
  rmSync(ws, { recursive: true, force: true });
}
const ra = pct(a, 50), rb = pct(b, 50);
console.log(`exec-bench: bwrap ${health.sandbox.version}, ${N} runs each, ${os.cpus().length} CPUs`);
console.log(`  runbox exec true   p50 ${ra.toFixed(2)} ms  p90 ${pct(a, 90).toFixed(2)} ms`);
console.log(`  bare bwrap true    p50 ${rb.toFixed(2)} ms  p90 ${pct(b, 90).toFixed(2)} ms`);
console.log(`  ratio p50 ${(ra / rb).toFixed(2)}x (target <= 1.30x)`);
// How runs were limited: a cgroup per run costs a mkdir, a few writes and an rmdir.
const limits = health.sandbox.cgroup?.path
  ? `a cgroup per run (memory ${health.sandbox.memory}, procs ${health.sandbox.procs})`
  : 'rlimits, no cgroups';
console.log(`  runs limited by ${limits}`);
console.log(JSON.stringify({ bench: 'exec', runs: N, runbox_p50_ms: ra, bwrap_p50_ms: rb, ratio: ra / rb, limits }));
