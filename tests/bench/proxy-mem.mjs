// tests/bench/proxy-mem.mjs - benchmark (not a test) of runbox's memory (issue 8 §9): its RSS,
// and beside it its proportional set size (PSS: each shared page counted as a share of the
// processes that map it) and its private memory, read from /proc/<pid>/smaps_rollup after it
// has served calls: idle after initialize, after CALLS read_file calls, and after an exec with
// progress and a log level set (its event stream open). libcurl's shared libraries are most of
// runbox's RSS and are shared with every other process that maps them; PSS says what one more
// runbox really costs. Target: PSS <= 3 MiB.
// Usage: RUNBOXD=build/daemon/runboxd RUNBOX=build/mcp-proxy/runbox node tests/bench/proxy-mem.mjs
// Env: CALLS [2000]. Prints one JSON line per measure ({"measure","value","target","met"}).
import { readFileSync } from 'node:fs';
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

const d = await startDaemon({ workspace: ':memory:' });
try {
  await d.call('write_file', { path: '/a.txt', content: 'a'.repeat(4096) });
  const p = startProxy({ daemonUrl: d.url });
  await p.initialize();
  emit('after initialize', rollup(p.pid));
  for (let i = 0; i < CALLS; i++) await p.callTool('read_file', { path: '/a.txt' });
  emit(`after ${CALLS} read_file calls`, rollup(p.pid));
  await p.request('logging/setLevel', { level: 'info' });
  await p.request('tools/call', { name: 'exec', arguments: { command: 'for i in 1 2; do echo $i; sleep 1; done' },
                                  _meta: { progressToken: 1 } });
  emit('after an exec with progress and its event stream open', rollup(p.pid));
  await p.close();
} finally {
  await d.stop();
}
