// tests/bench/proxy-mem.mjs - benchmark (not a test) of runbox's memory (issue 8 §9): its RSS,
// and beside it its proportional set size (PSS: each shared page counted as a share of the
// processes that map it) and its private memory, read from /proc/<pid>/smaps_rollup after it
// has served calls: idle after initialize, after CALLS read_file calls, and after an exec with
// progress and a log level set (its event stream open). libcurl's shared libraries are most of
// runbox's RSS and are shared with every other process that maps them; PSS says what one more
// runbox really costs. Target: PSS <= 3 MiB.
// For scale, the floor: curl-floor.c (compiled here with cc), a C program that only opens libcurl
// as runbox does and POSTs the same CALLS read_file calls to runboxd, measured right after runbox
// (which still runs, so libcurl's shared pages are split at least two ways): any program that
// forwards with libcurl has at least its private memory, and its PSS when as many share.
// Usage: RUNBOXD=build/daemon/runboxd RUNBOX=build/mcp-proxy/runbox node tests/bench/proxy-mem.mjs
// Env: CALLS [2000]. Prints one JSON line per measure ({"measure","value","target","met"}).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDaemon } from '../lib/daemon.mjs';
import { startProxy } from '../lib/proxy.mjs';

const CALLS = Number(process.env.CALLS || 2000);

function rollup(pid) {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (k) => Number((new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text) || [])[1] || NaN);
  return { rss: kb('Rss'), pss: kb('Pss'), priv: kb('Private_Clean') + kb('Private_Dirty') };
}

const MiB = (kb) => (kb / 1024).toFixed(2);

function emit(stage, m) {
  console.log(JSON.stringify({ bench: 'proxy_mem', measure: `runbox ${stage}: PSS MiB (RSS ${MiB(m.rss)}, private ${MiB(m.priv)})`,
                               value: MiB(m.pss), target: '≤ 3', met: m.pss <= 3 * 1024,
                               rss_kb: m.rss, pss_kb: m.pss, private_kb: m.priv }));
}

// The floor's line, or nothing when it cannot be built (no cc or no libcurl headers).
function floor() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'runbox-curl-floor-'));
  try {
    const bin = path.join(tmp, 'curl-floor');
    execFileSync('cc', ['-O2', '-o', bin, new URL('./curl-floor.c', import.meta.url).pathname, '-ldl'],
                 { stdio: ['ignore', 'ignore', 'pipe'] });
    const out = execFileSync(bin, [`${d.url}/tool/read_file`, '{"path":"/a.txt"}', String(CALLS)],
                             { encoding: 'utf8' });
    const m = JSON.parse(out);
    const f = { rss: m.rss_kb, pss: m.pss_kb, priv: m.private_kb };
    console.log(JSON.stringify({ bench: 'proxy_mem',
                                 measure: `for scale: a C program that only loads libcurl and makes the same ${CALLS} ` +
                                          `calls (curl-floor.c, beside runbox): PSS MiB (RSS ${MiB(f.rss)}, private ${MiB(f.priv)})`,
                                 value: MiB(f.pss), rss_kb: f.rss, pss_kb: f.pss, private_kb: f.priv }));
  } catch (e) {
    console.error(`proxy-mem: no libcurl floor: ${String(e.stderr || e.message).slice(0, 300)}`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

const d = await startDaemon({ workspace: ':memory:' });
try {
  await d.call('write_file', { path: '/a.txt', content: 'a'.repeat(4096) });
  const p = startProxy({ daemonUrl: d.url });
  await p.initialize();
  emit('after initialize', rollup(p.pid));
  for (let i = 0; i < CALLS; i++) await p.callTool('read_file', { path: '/a.txt' });
  emit(`after ${CALLS} read_file calls`, rollup(p.pid));
  floor();
  await p.request('logging/setLevel', { level: 'info' });
  await p.request('tools/call', { name: 'exec', arguments: { command: 'for i in 1 2; do echo $i; sleep 1; done' },
                                  _meta: { progressToken: 1 } });
  emit('after an exec with progress and its event stream open', rollup(p.pid));
  await p.close();
} finally {
  await d.stop();
}
