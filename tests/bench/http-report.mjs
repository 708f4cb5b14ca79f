#!/usr/bin/env node
// tests/bench/http-report.mjs — the "MCP over HTTP" section of docs/performance.md from the JSON
// lines of tests/bench/http-run.sh (figures, and issue 8's targets with met / missed), and
// splicing that section into the doc between its markers (run.sh's report keeps it).
//
//   node http-report.mjs --in http.jsonl --command CMD --started DATE --everything VER > section.md
//   node http-report.mjs --splice section.md --doc docs/performance.md
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';

export const BEGIN = '<!-- http-bench:begin -->';
export const END = '<!-- http-bench:end -->';

const o = {};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) o[argv[i].replace(/^--/, '')] = argv[i + 1];

if (o.splice) {
  const section = readFileSync(o.splice, 'utf8').trim();
  const doc = existsSync(o.doc) ? readFileSync(o.doc, 'utf8') : '# Performance\n';
  const a = doc.indexOf(BEGIN);
  const b = doc.indexOf(END);
  const next = a >= 0 && b > a
    ? doc.slice(0, a) + section + doc.slice(b + END.length)
    : `${doc.trimEnd()}\n\n${section}\n`;
  writeFileSync(o.doc, next);
  process.exit(0);
}

const rows = readFileSync(o.in, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
const isNum = (v) => typeof v === 'number' && !Number.isNaN(v);
const median = (a) => {
  const s = a.filter(isNum).sort((x, y) => x - y);
  if (!s.length) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fmt = (v) => {
  if (!isNum(v)) return '–';
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US').replace(/,/g, ' ');
  if (Math.abs(v) >= 10) return v.toFixed(1);
  if (Math.abs(v) >= 1) return v.toFixed(2);
  return v.toFixed(3);
};
const cell = (vals) => {
  const v = vals.filter(isNum);
  if (!v.length) return { m: null, md: '–' };
  const m = median(v);
  return { m, md: v.length > 1 ? `${fmt(m)} (${fmt(Math.min(...v))}–${fmt(Math.max(...v))})` : fmt(m) };
};
const by = (label) => rows.filter((r) => r.label === label);
const phase = (r, k) => r.phases?.find((p) => p.inflight === k);
const ks = [...new Set(rows.flatMap((r) => (r.phases || []).map((p) => p.inflight)))];
const kHi = Math.max(...ks);
const fig = (label, get) => cell(by(label).map(get));
function ratio(la, lb, get) {
  const r = [];
  for (const a of by(la)) {
    const b = by(lb).find((x) => x.round === a.round);
    if (b && isNum(get(a)) && isNum(get(b)) && get(b) > 0) r.push(get(a) / get(b));
  }
  return cell(r);
}
const verdict = (v, ok) => (isNum(v) ? (ok(v) ? 'met' : '**missed**') : 'not measured');
const MCP = 'runboxd /mcp', WS = 'runboxd /ws', EV = 'server-everything', SS = 'runboxd sessions';

const mcpP50 = fig(MCP, (r) => phase(r, 1)?.p50_ms);
const wsP50 = fig(WS, (r) => phase(r, 1)?.p50_ms);
const cpsRatio = ratio(MCP, EV, (r) => phase(r, kHi)?.calls_per_s);
const wsOverMcp = ratio(WS, MCP, (r) => phase(r, 1)?.p50_ms);
// The target's ratio: with runboxd and the client pinned (http-run.sh), on one CPU and on two,
// the worse of the two in each round; without pinned rows (one CPU), the unpinned ratio.
const PIN1 = 'pinned, one CPU', PIN2 = 'pinned, two CPUs';
const p50 = (r) => phase(r, 1)?.p50_ms;
const wsOne = ratio(`${WS} ${PIN1}`, `${MCP} ${PIN1}`, p50);
const wsTwo = ratio(`${WS} ${PIN2}`, `${MCP} ${PIN2}`, p50);
const worst = [];
for (const a of by(`${WS} ${PIN1}`)) {
  const pair = (pl) => {
    const w = by(`${WS} ${pl}`).find((x) => x.round === a.round);
    const m = by(`${MCP} ${pl}`).find((x) => x.round === a.round);
    return w && m && isNum(p50(w)) && isNum(p50(m)) && p50(m) > 0 ? p50(w) / p50(m) : null;
  };
  const one = pair(PIN1), two = pair(PIN2);
  if (isNum(one) && isNum(two)) worst.push(Math.max(one, two));
}
const wsTarget = worst.length ? cell(worst) : wsOverMcp;
const sessRss = fig(SS, (r) => r.rss_kib_with_sessions / 1024);
const sessions = by(SS)[0]?.sessions ?? '?';

const out = [];
const p = (s = '') => out.push(s);
const table = (head, body, align) => {
  p(`| ${head.join(' | ')} |`);
  p(`|${head.map((_, i) => (align[i] === 'r' ? '--:' : '---')).join('|')}|`);
  for (const r of body) p(`| ${r.join(' | ')} |`);
};
const sh = (cmd, args) => { try { return execFileSync(cmd, args, { encoding: 'utf8' }).trim(); } catch { return '?'; } };

p(BEGIN);
p('## MCP over HTTP');
p();
p('Written by `tests/bench/http-run.sh` (run.sh runs it too); do not edit by hand. One client,');
p('`tests/bench/http-bench.mjs` (kept-alive HTTP/1.1 connections written and read by hand, one per');
p('call in flight, and a WebSocket client written the same way), drives runboxd\'s `/mcp` (one session, JSON');
p('answers) and `/ws` with `read_file` of the same 4 KiB `/a.txt` as above, and');
p(`\`@modelcontextprotocol/server-everything\` ${o.everything ?? ''} in its streamable HTTP mode (express and the`);
p('SDK\'s `StreamableHTTPServerTransport`, answers as event streams) with its `echo` tool, in the');
p('same run. Each server is started fresh for each round; ratios are taken within a round, then the');
p('median over rounds (min–max over rounds). Every timed phase follows untimed calls at its own');
p('width (its connections open) and lasts at least 1 s.');
p();
p(`- Command: \`${o.command ?? 'tests/bench/http-run.sh'}\``);
p(`- Date: ${o.started ?? '?'}; machine: ${os.cpus().length} CPUs, load average at the end ` +
  `${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; node ${process.version}; ` +
  `git ${sh('git', ['-C', o.repo ?? '.', 'rev-parse', '--short', 'HEAD'])}`);
p();
table(['measure', 'this run', 'target', ''], [
  ['`/mcp` read_file 4 KiB p50, 1 in flight', `${mcpP50.md} ms`, '≤ 0.10 ms', verdict(mcpP50.m, (v) => v <= 0.10)],
  [`calls/s at ${kHi} in flight, runboxd \`/mcp\` ÷ server-everything \`echo\``, `${cpsRatio.md}×`, '≥ 10×', verdict(cpsRatio.m, (v) => v >= 10)],
  [worst.length ? '`/ws` p50 ÷ `/mcp` p50, 1 in flight, pinned (the worse of one CPU and two)'
                 : '`/ws` p50 ÷ `/mcp` p50, 1 in flight', `${wsTarget.md}×`, '≤ 1×', verdict(wsTarget.m, (v) => v <= 1.0)],
  [`runboxd RSS with ${sessions} open sessions (each holding a GET stream)`, `${sessRss.md} MiB`, '≤ 32 MiB', verdict(sessRss.m, (v) => v <= 32)],
], [null, 'r', 'r', null]);
p();
const METRICS = [
  ['p50 ms, 1 in flight', (r) => phase(r, 1)?.p50_ms],
  ['p99 ms, 1 in flight', (r) => phase(r, 1)?.p99_ms],
  ['calls/s, 1 in flight', (r) => phase(r, 1)?.calls_per_s],
  [`p50 ms, ${kHi} in flight`, (r) => phase(r, kHi)?.p50_ms],
  [`calls/s, ${kHi} in flight`, (r) => phase(r, kHi)?.calls_per_s],
  ['server CPU µs/call, 1 in flight', (r) => phase(r, 1)?.server_cpu_us_per_call],
  [`server CPU µs/call, ${kHi} in flight`, (r) => phase(r, kHi)?.server_cpu_us_per_call],
  ['RSS MiB after the calls', (r) => (isNum(r.rss_kib) ? r.rss_kib / 1024 : null)],
];
table(['', MCP, WS, `${EV} \`echo\``], METRICS.map(([n, g]) => [n, fig(MCP, g).md, fig(WS, g).md, fig(EV, g).md]),
  [null, 'r', 'r', 'r']);
p();
if (worst.length) {
  p('`/ws` against `/mcp` at 1 in flight, p50 ms (ratios within each round). Unpinned, a round lands');
  p('on one CPU or on two by the scheduler\'s choice, and may choose differently for the two');
  p('transports; pinned, both are measured in both placements:');
  p();
  const row = (name, pl, r) => [name, fig(`${MCP}${pl}`, p50).md, fig(`${WS}${pl}`, p50).md, `${r.md}×`];
  table(['placement', '`/mcp`', '`/ws`', '`/ws` ÷ `/mcp`'], [
    row('unpinned', '', wsOverMcp),
    row('runboxd and the client on one CPU', ` ${PIN1}`, wsOne),
    row('runboxd on one CPU, the client on another', ` ${PIN2}`, wsTwo),
  ], [null, 'r', 'r', 'r']);
  p();
}
p(`RSS is the server's VmRSS after its phases; for the sessions line, with ${sessions} sessions open`);
p(`(initialize, then a GET stream each) against ${fmt(fig(SS, (r) => r.rss_kib_before / 1024).m)} MiB before.`);
p(END);
console.log(out.join('\n'));
