// tests/bench/resources-bench.mjs - benchmark (not a test) of issue 3's console and resources
// targets, through runbox (stdio) to runboxd:
//   1. resources/list, first page, over a workspace of FILES files (target p50 <= 5 ms);
//   2. console_logs {} over a full ring (target p50 <= 1 ms). The ring is filled with exec
//      (runs of `seq 1 1000`, one run's burst, until more lines than the ring keeps were sent);
//      without a working exec tool this phase says so and is skipped.
// Usage: RUNBOXD=build/daemon/runboxd RUNBOX=build/mcp-proxy/runbox node tests/bench/resources-bench.mjs
// Env: FILES [10000], ITER [300], WARMUP [30]. Prints one JSON line per phase, then a summary.
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDaemon } from '../lib/daemon.mjs';
import { startProxy } from '../lib/proxy.mjs';

const FILES = Number(process.env.FILES || 10000);
const ITER = Number(process.env.ITER || 300);
const WARMUP = Number(process.env.WARMUP || 30);

function pct(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

async function measure(name, fn, target) {
  for (let i = 0; i < WARMUP; i++) await fn();
  const ms = [];
  for (let i = 0; i < ITER; i++) {
    const t = process.hrtime.bigint();
    await fn();
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  const r = { phase: name, iterations: ITER, p50_ms: +pct(ms, 0.5).toFixed(3),
              p99_ms: +pct(ms, 0.99).toFixed(3), target_p50_ms: target };
  r.meets_target = r.p50_ms <= target;
  console.log(JSON.stringify(r));
  return r;
}

const ws = mkdtempSync(path.join(os.tmpdir(), 'runbox-res-bench-'));
for (let d = 0; d < 100; d++) {
  mkdirSync(path.join(ws, `dir${String(d).padStart(2, '0')}`));
  for (let f = 0; f < FILES / 100; f++)
    writeFileSync(path.join(ws, `dir${String(d).padStart(2, '0')}`, `file${f}.js`), 'x\n');
}
const daemon = await startDaemon({ workspace: ws });
const proxy = startProxy({ daemonUrl: daemon.url });
try {
  await proxy.initialize();
  await measure(`resources/list first page (${FILES} files)`, async () => {
    const r = await proxy.request('resources/list');
    if (!r.result) throw new Error(JSON.stringify(r.error));
  }, 5);
  // One run sends at most PROC_CONSOLE_BURST (1000) lines to the console at once (then 200 a
  // second): the ring is filled by runs of 1000 lines until it has wrapped.
  let fill, latest = 0;
  for (let i = 0; i < 15 && latest < 10000; i++) {
    fill = await proxy.request('tools/call', { name: 'exec', arguments: { command: 'seq 1 1000' } });
    if (!fill.result || fill.result.isError) break;
    const st = await daemon.call('console_logs', { limit: 1 });
    latest = st.body?.result?.latest_id || 0;
  }
  if (fill.result && !fill.result.isError && latest >= 10000) {
    await measure(`console_logs over a full ring (${latest} appended)`, async () => {
      const r = await proxy.request('tools/call', { name: 'console_logs', arguments: {} });
      if (!r.result || r.result.isError) throw new Error(JSON.stringify(r));
    }, 1);
  } else {
    console.log(JSON.stringify({ phase: 'console_logs over a full ring', skipped:
      `could not fill the ring with exec (latest id ${latest}): ${JSON.stringify(fill.error || fill.result).slice(0, 200)}` }));
  }
} finally {
  await proxy.close();
  await daemon.stop();
  rmSync(ws, { recursive: true, force: true });
}
