// tests/bench/studio-bench.mjs - benchmark (not a test) of issue 4's Studio bridge targets,
// through runbox (stdio) to runboxd, with the node fake plugin (tests/lib/fakeplugin.mjs)
// long-polling the daemon and answering at once:
//   1. round trip: a Studio tool (get_place_info, queued for the plugin) against a local tool
//      of the same size (list_studios, answered by the daemon); target: the Studio tool adds at
//      most 2 ms at p50;
//   2. idle traffic: HTTP requests an idle connected Studio makes per minute (its polls, each
//      held up to the 15 s window); target: at most 5.
// Usage: RUNBOXD=build/daemon/runboxd RUNBOX=build/mcp-proxy/runbox node tests/bench/studio-bench.mjs
// Env: ITER [1000], WARMUP [100], IDLE_S [60] (0 skips phase 2). Prints one JSON line per phase,
// then a summary.
import { startDaemon } from '../lib/daemon.mjs';
import { FakePlugin } from '../lib/fakeplugin.mjs';
import { startProxy } from '../lib/proxy.mjs';

const ITER = Number(process.env.ITER || 1000);
const WARMUP = Number(process.env.WARMUP || 100);
const IDLE_S = Number(process.env.IDLE_S ?? 60);

function pct(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

async function timeCalls(p, name, args) {
  for (let i = 0; i < WARMUP; i++) await p.callTool(name, args);
  const ms = [];
  for (let i = 0; i < ITER; i++) {
    const t = process.hrtime.bigint();
    const r = await p.callTool(name, args);
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r)}`);
  }
  return { p50: pct(ms, 0.5), p90: pct(ms, 0.9), p99: pct(ms, 0.99) };
}

const d = await startDaemon({ workspace: ':memory:' });
const plugin = new FakePlugin(d.port, {
  instance: 'bench', place: '1', name: 'Bench',
  handler: async () => ({ ok: true, result: { name: 'Bench', placeId: 1 } }),
}).start();
const p = startProxy({ daemonUrl: d.url });
const out = [];
try {
  await p.initialize('2025-11-25');
  await plugin.waitPolling();
  // Interleave the two so that machine noise hits both alike.
  const local = [], studio = [];
  for (let round = 0; round < 4; round++) {
    local.push(await timeCalls(p, 'list_studios', {}));
    studio.push(await timeCalls(p, 'get_place_info', {}));
  }
  const med = (xs, k) => pct(xs.map((x) => x[k]), 0.5);
  const rt = {
    bench: 'studio_round_trip', iterations: ITER * 4,
    local_p50_ms: +med(local, 'p50').toFixed(3), studio_p50_ms: +med(studio, 'p50').toFixed(3),
    studio_p99_ms: +med(studio, 'p99').toFixed(3),
  };
  rt.added_p50_ms = +(rt.studio_p50_ms - rt.local_p50_ms).toFixed(3);
  rt.target_ms = 2;
  rt.meets_target = rt.added_p50_ms <= 2;
  out.push(rt);
  console.log(JSON.stringify(rt));

  if (IDLE_S > 0) {
    const before = plugin.polls;
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const polls = plugin.polls - before;
    const idle = {
      bench: 'studio_idle_requests', seconds: IDLE_S, requests: polls,
      per_minute: +(polls * 60 / IDLE_S).toFixed(2),
      from_window: 60 / 15, target_per_minute: 5,
    };
    idle.meets_target = idle.per_minute <= 5;
    out.push(idle);
    console.log(JSON.stringify(idle));
  }
} finally {
  await p.close();
  await plugin.disconnect().catch(() => {});
  await d.stop();
}
for (const r of out) {
  if (r.bench === 'studio_round_trip')
    console.log(`Studio round trip: +${r.added_p50_ms} ms p50 over a local tool (${r.local_p50_ms} -> ` +
                `${r.studio_p50_ms} ms; target <= 2 ms): ${r.meets_target ? 'met' : 'MISSED'}`);
  else
    console.log(`Idle Studio: ${r.per_minute} requests/minute over ${r.seconds} s (target <= 5): ` +
                `${r.meets_target ? 'met' : 'MISSED'}`);
}
