// tests/bench/rss-exec.mjs - runboxd's resident memory over many exec runs (issue 12 §7: it
// must stay flat, at most 32 MiB after 20 000 runs).
//
//   RUNBOXD=build/daemon/runboxd node tests/bench/rss-exec.mjs [N=20000] [IN_FLIGHT=4]
//
// Starts its own runboxd (a temporary workspace, a free port), runs N `exec {"command":"true"}`
// calls over kept-alive HTTP connections with IN_FLIGHT at once, and prints VmRSS and VmHWM
// (from /proc/<pid>/status) every N/20 runs, then one summary line and one JSON line for the
// benchmark report (tests/bench/run.sh):
//   rss-exec: runs=N in_flight=K rss_first_kib=A rss_last_kib=B hwm_kib=C growth_b_per_run=D
//   {"measure":"runboxd RSS after N execs ...","value":"6.06 MiB","target":"≤ 32 MiB","met":true}
// A measurement, not a test: it never fails because of a number (it exits 1 only when a call
// fails).
import { readFileSync } from 'node:fs';
import http from 'node:http';

import { startDaemon } from '../lib/daemon.mjs';

const N = Number(process.argv[2] || 20000);
const IN_FLIGHT = Number(process.argv[3] || 4);

function status(pid) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (k) => Number((new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s) || [])[1]);
  return { rss: kib('VmRSS'), hwm: kib('VmHWM'), threads: Number(/^Threads:\s+(\d+)/m.exec(s)[1]) };
}

const d = await startDaemon({ args: ['--no-fsync'] });
const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
const body = JSON.stringify({ command: 'true' });

function call() {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: d.port, path: '/tool/exec', method: 'POST',
                               agent, headers: { 'Content-Type': 'application/json',
                                                 'Content-Length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.on('data', (c) => { text += c; });
        res.on('end', () => {
          const j = JSON.parse(text);
          if (!j.ok) reject(new Error(`exec failed: ${text}`));
          else resolve();
        });
      });
    req.on('error', reject);
    req.end(body);
  });
}

const step = Math.max(1, Math.floor(N / 20));
let done = 0, next = 0, failed = null;
// Warm up: the first runs allocate what every run reuses (thread stacks, buffers).
for (let i = 0; i < 50; i++) await call();
const first = status(d.pid);
console.log(`runs      rss_kib  hwm_kib  threads`);
console.log(`${String(0).padStart(6)} ${String(first.rss).padStart(9)} ${String(first.hwm).padStart(8)} ${String(first.threads).padStart(8)}`);
async function worker() {
  while (next < N && !failed) {
    next++;
    try { await call(); } catch (e) { failed = e; return; }
    done++;
    if (done % step === 0) {
      const s = status(d.pid);
      console.log(`${String(done).padStart(6)} ${String(s.rss).padStart(9)} ${String(s.hwm).padStart(8)} ${String(s.threads).padStart(8)}`);
    }
  }
}
const t0 = Date.now();
await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
const last = status(d.pid);
agent.destroy();
await d.stop();
if (failed) {
  console.error(`rss-exec: ${failed.message}`);
  process.exit(1);
}
console.log(`rss-exec: runs=${N} in_flight=${IN_FLIGHT} rss_first_kib=${first.rss} ` +
            `rss_last_kib=${last.rss} hwm_kib=${last.hwm} ` +
            `growth_b_per_run=${Math.round(((last.rss - first.rss) * 1024) / N)} ` +
            `seconds=${Math.round((Date.now() - t0) / 1000)}`);
console.log(JSON.stringify({
  measure: `runboxd RSS after ${N} execs of \`true\` (${IN_FLIGHT} in flight; ` +
           `${(first.rss / 1024).toFixed(2)} MiB after the first 50)`,
  value: `${(last.rss / 1024).toFixed(2)} MiB`, target: '≤ 32 MiB', met: last.rss <= 32 * 1024,
}));
