#!/usr/bin/env node
// report.mjs — turns one benchmark run's raw results (mcp-bench JSON lines with a "round"
// field, search-bench JSON, the tree manifest) into docs/performance.md: the machine, the
// versions, the figures, and the ratios against issue 2's targets with met / missed.
// Prints the same markdown on stdout. Called by run.sh; see there for the options' meaning.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';

import { cliSection } from './cli-report.mjs';

function parseArgs(argv) {
  const o = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) throw new Error(`bad option ${argv[i]}`);
    o[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of ['mcp', 'labels', 'out']) if (!o[k]) throw new Error(`--${k} is required`);
  return o;
}
const o = parseArgs(process.argv.slice(2));
const [L_FLOOR, L_REF, L_RUNBOX] = o.labels.split('|');

// ---------------------------------------------------------------- helpers
const readJsonLines = (f) => (f && existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter((l) => l.trim())
  .map((l) => { try { return JSON.parse(l); } catch { return null; } }).filter(Boolean) : []);
const readJson = (f) => { try { return JSON.parse(readFileSync(f, 'utf8')); } catch { return null; } };
const sh = (cmd, args, opts = {}) => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', timeout: 3000, stdio: ['ignore', 'pipe', 'ignore'], ...opts }).trim();
  } catch { return null; }
};
const first = (s) => (s ? s.split('\n')[0] : 'not found');
const median = (a) => {
  if (!a.length) return null;
  const s = [...a].sort((x, y) => x - y);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};
const isNum = (v) => typeof v === 'number' && !Number.isNaN(v);
const fmt = (v) => {
  if (!isNum(v)) return '–';
  const a = Math.abs(v);
  if (a >= 1000) return Math.round(v).toLocaleString('en-US').replace(/,/g, '\u202f');
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toFixed(3);
};
const cell = (vals) => {
  const v = vals.filter(isNum);
  if (!v.length) return { m: null, md: '–' };
  const m = median(v);
  return { m, md: v.length > 1 ? `${fmt(m)} (${fmt(Math.min(...v))}–${fmt(Math.max(...v))})` : fmt(m) };
};

// ---------------------------------------------------------------- MCP results
const rows = readJsonLines(o.mcp);
const failed = rows.filter((r) => !r.ok);
const ok = rows.filter((r) => r.ok);
const rejected = readJsonLines(o.rejected);
const byLabel = (l) => ok.filter((r) => r.label === l);
const ks = [...new Set(ok.flatMap((r) => (r.phases || []).map((p) => p.inflight)))];
const kHi = Math.max(0, ...ks.filter((k) => k > 1)) || null;
const phase = (r, k) => (r.phases || []).find((p) => p.inflight === k);
const MiB = (kb) => (isNum(kb) ? kb / 1024 : null);

const METRICS = [
  ['runs measured', (r) => 1, 'count'],
  ['cold start ms (spawn → initialize answer)', (r) => r.cold_start_ms],
  ['p50 ms, 1 in flight', (r) => phase(r, 1)?.p50_ms],
  ['p90 ms, 1 in flight', (r) => phase(r, 1)?.p90_ms],
  ['p99 ms, 1 in flight', (r) => phase(r, 1)?.p99_ms],
  ['calls/s, 1 in flight', (r) => phase(r, 1)?.calls_per_s],
  [`calls/s, ${kHi} in flight`, (r) => phase(r, kHi)?.calls_per_s],
  [`p50 ms, ${kHi} in flight`, (r) => phase(r, kHi)?.p50_ms],
  ['server CPU µs/call, 1 in flight', (r) => phase(r, 1)?.server_cpu_us_per_call],
  ['daemon CPU µs/call, 1 in flight', (r) => phase(r, 1)?.extra_cpu_us_per_call],
  ['peak RSS MiB, stdio server (proxy)', (r) => MiB(r.rss?.total_vmhwm_kb)],
  ['peak RSS MiB, daemon', (r) => MiB(r.extra_rss?.total_vmhwm_kb)],
  ['other load on the machine, cores', (r) => r.other_busy_cores_run ?? phase(r, 1)?.other_busy_cores],
];
const figure = (label, get, kind) => {
  const rs = byLabel(label);
  if (kind === 'count') return { m: rs.length, md: String(rs.length) };
  return cell(rs.map(get));
};
const med = (label, get) => figure(label, get).m;

// per-round ratio a/b over the rounds where both labels have a result, then the median
function roundRatio(la, lb, get) {
  const r = [];
  for (const a of byLabel(la)) {
    const b = byLabel(lb).find((x) => x.round === a.round);
    const va = get(a);
    const vb = b && get(b);
    if (isNum(va) && isNum(vb) && vb > 0) r.push(va / vb);
  }
  return { m: median(r), n: r.length, lo: r.length ? Math.min(...r) : null, hi: r.length ? Math.max(...r) : null };
}

// ---------------------------------------------------------------- search results
const search = o.search ? readJson(o.search) : null;
const tree = o.tree ? readJson(o.tree) : null;
const sres = search?.ok ? search.results : [];
const sfind = (tool, ci) => sres.find((x) => x.tool === tool && x.case_insensitive === ci);
function searchRatio(tool, ci) {
  const a = sfind('runbox', ci);
  const b = sfind(tool, ci);
  if (!a || !b) return { m: null, n: 0 };
  const r = a.times_ms.map((t, i) => t / b.times_ms[i]).filter(isNum);
  return { m: median(r), n: r.length, lo: Math.min(...r), hi: Math.max(...r) };
}

// ---------------------------------------------------------------- targets
const verdict = (v, pass) => (isNum(v) ? (pass(v) ? 'met' : '**missed**') : 'not measured');
const rr = (x) => (isNum(x.m) ? `${fmt(x.m)}×${x.n > 1 ? ` (${fmt(x.lo)}–${fmt(x.hi)})` : ''}` : '–');
const refOverRunboxP50 = roundRatio(L_REF, L_RUNBOX, (r) => phase(r, 1)?.p50_ms);
const coldOverFloor = roundRatio(L_RUNBOX, L_FLOOR, (r) => r.cold_start_ms);
const p50 = med(L_RUNBOX, (r) => phase(r, 1)?.p50_ms);
const cps1 = med(L_RUNBOX, (r) => phase(r, 1)?.calls_per_s);
const cpsK = med(L_RUNBOX, (r) => phase(r, kHi)?.calls_per_s);
const rssP = med(L_RUNBOX, (r) => MiB(r.rss?.total_vmhwm_kb));
const rssD = med(L_RUNBOX, (r) => MiB(r.extra_rss?.total_vmhwm_kb));
const sGrep = searchRatio('grep', false);
const sGrepI = searchRatio('grep', true);
const sRg = searchRatio('rg', false);
const sRgI = searchRatio('rg', true);

const targets = [
  ['read_file p50: reference ÷ runbox (same round)', rr(refOverRunboxP50), '≥ 8×', verdict(refOverRunboxP50.m, (v) => v >= 8)],
  ['cold start: runbox ÷ C echo floor (same round)', rr(coldOverFloor), '≤ 1.5×', verdict(coldOverFloor.m, (v) => v <= 1.5)],
  ['read_file p50, 1 in flight', isNum(p50) ? `${fmt(p50)} ms` : '–', '≤ 0.15 ms', verdict(p50, (v) => v <= 0.15)],
  ['calls/s, 1 in flight', fmt(cps1), '≥ 6 000', verdict(cps1, (v) => v >= 6000)],
  [`calls/s, ${kHi ?? 16} in flight`, fmt(cpsK), '≥ 10 000', verdict(cpsK, (v) => v >= 10000)],
  ['peak RSS of runbox', isNum(rssP) ? `${fmt(rssP)} MiB` : '–', '≤ 4 MiB', verdict(rssP, (v) => v <= 4)],
  ['peak RSS of runboxd', isNum(rssD) ? `${fmt(rssD)} MiB` : '–', '≤ 16 MiB', verdict(rssD, (v) => v <= 16)],
  ['search time: runbox ÷ `grep -rn`', rr(sGrep), '≤ 1×', verdict(sGrep.m, (v) => v <= 1)],
  ['search time, case-insensitive: runbox ÷ `grep -rni`', rr(sGrepI), '≤ 1× (same bar)', verdict(sGrepI.m, (v) => v <= 1)],
];
const info = [
  ['read_file p50: runbox ÷ C echo floor (how far above the floor)', rr(roundRatio(L_RUNBOX, L_FLOOR, (r) => phase(r, 1)?.p50_ms))],
  [`calls/s at ${kHi}: runbox ÷ reference`, rr(roundRatio(L_RUNBOX, L_REF, (r) => phase(r, kHi)?.calls_per_s))],
  ['cold start: reference ÷ runbox', rr(roundRatio(L_REF, L_RUNBOX, (r) => r.cold_start_ms))],
  ['peak RSS, proxy + daemon: reference ÷ runbox', rr(roundRatio(L_REF, L_RUNBOX,
    (r) => (r.rss?.total_vmhwm_kb ?? NaN) + (r.extra_rss?.total_vmhwm_kb ?? NaN)))],
  ['search time: runbox ÷ `rg -n`', rr(sRg)],
  ['search time, case-insensitive: runbox ÷ `rg -ni`', rr(sRgI)],
];

// ---------------------------------------------------------------- machine and versions
const cpuModel = (() => {
  try { return /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model; } catch { return os.cpus()[0]?.model; }
})();
const osName = (() => { try { return /PRETTY_NAME="?([^"\n]*)/.exec(readFileSync('/etc/os-release', 'utf8'))?.[1]; } catch { return null; } })();
const nproc = sh('nproc', []) ?? String(os.availableParallelism?.() ?? os.cpus().length);
const pkgVer = (name) => {
  const f = o['peers-dir'] && join(o['peers-dir'], 'node_modules', name, 'package.json');
  return f && existsSync(f) ? readJson(f)?.version ?? '?' : 'not installed';
};
const gitRev = o.repo ? sh('git', ['-C', o.repo, 'rev-parse', '--short', 'HEAD']) : null;
const gitDirty = o.repo && gitRev ? (sh('git', ['-C', o.repo, 'diff', '--quiet', 'HEAD', '--']) === null ? ' + uncommitted changes' : '') : '';
const versions = [
  ['runbox', `${o.runbox ? first(sh(o.runbox, ['--version'])) : '?'} (Release build, git ${gitRev ?? '?'}${gitDirty})`],
  ['node', process.version],
  ['cc', first(sh('cc', ['--version']))],
  ['cmake', first(sh('cmake', ['--version']))],
  ['runboxd', o.runboxd ? first(sh(o.runboxd, ['--version'])) : '?'],
  ['libcurl / libcjson / civetweb', [sh('pkg-config', ['--modversion', 'libcurl']), sh('pkg-config', ['--modversion', 'libcjson']),
    sh('dpkg-query', ['-W', '-f=${Version}', 'libcivetweb-dev'])].map((v) => v || '?').join(' / ')],
  ['reference peer: @modelcontextprotocol/sdk / zod', `${pkgVer('@modelcontextprotocol/sdk')} / ${pkgVer('zod')}`],
  ['grep', first(sh('grep', ['--version']))],
  ['ripgrep', first(sh('rg', ['--version']))],
];

// ---------------------------------------------------------------- markdown
const out = [];
const p = (s = '') => out.push(s);
const table = (head, body, align) => {
  p(`| ${head.join(' | ')} |`);
  p(`| ${head.map((_, i) => (align?.[i] === 'r' ? '---:' : '---')).join(' | ')} |`);
  for (const r of body) p(`| ${r.join(' | ')} |`);
};
const finished = new Date().toISOString().replace('T', ' ').replace(/:\d\d\.\d+Z$/, ' UTC');

p('# Performance');
p();
p('This page is written by the benchmark; do not edit it by hand — run the command again.');
p('It measures what issue 2 asks for: `runbox` → `runboxd` beside the reference Node');
p('implementation (an `@modelcontextprotocol/sdk` proxy forwarding to a `node:http` daemon) and the');
p('C echo floor (a C MCP server that answers at once: nothing can be faster), all driven by the same');
p('client (`../shared/bench/mcp-bench.mjs`) in the same run, plus `search` against `grep`, and');
p('the exec, console, resources and Studio targets of issues 3 and 4 (their own section below).');
p();
p('## How to run');
p();
p('```sh');
p('tests/bench/run.sh');
p('```');
p();
p('Needs node, cc, cmake, npm (the registry reachable, for the reference peer\'s packages), the');
p('build dependencies of Runbox, and `../shared/bench` beside the repository (or `SHARED_BENCH`);');
p('ripgrep is measured too when it is installed. It builds a Release build in `build-bench/`,');
p('starts every server it measures on a free port with a temporary workspace, stops them all when');
p('it ends, and writes this file. Settings by environment: `RUNS` (rounds, default 3), `CALLS` (calls per phase, 2000),');
p('`WARMUP` (100), `INFLIGHT` (1,16), `TREE_MB` (100), `SEARCH_RUNS` (5), `OUT_DOC` (this file;');
p('`-` for none); the full list is at the top of `tests/bench/run.sh`. Raw JSON results and logs');
p('stay in `build-bench/bench-results/`.');
p();
p('## This run');
p();
p(`- Command: \`${o.command ?? 'tests/bench/run.sh'}\``);
p(`- Settings: ${o.env ?? '–'}`);
p(`- Date: ${o.started ?? '?'} → ${finished}`);
p(`- Machine: ${nproc} CPUs (${cpuModel}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ` +
  `Linux ${os.release()}${osName ? `, ${osName}` : ''}; load average at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
p('- Versions:');
for (const [k, v] of versions) p(`  - ${k}: ${v}`);
p(`- Workload: \`read_file {"path":"/a.txt"}\`, a 4096-byte file ('a'..'z' repeating, a newline every 64th byte), ` +
  `the same text from every server; ${ok[0]?.calls ?? '?'} calls per phase after ${ok[0]?.warmup ?? '?'} warm-up calls; ` +
  `each daemon freshly started for each measurement, runboxd with \`--workspace DIR --no-fsync\`.`);
if (failed.length) p(`- **${failed.length} measurement(s) failed** and are left out: ${failed.map((r) => `${r.label} (round ${r.round}): ${String(r.error).slice(0, 160)}`).join('; ')}`);
if (rejected.length) p(`- ${rejected.length} measurement(s) were redone because other processes kept the machine busy during them.`);
p();
p('## Against the targets');
p();
p('Ratios are taken within each round (the two servers measured minutes apart on the same machine),');
p('then the median over rounds, with (min–max) over rounds; absolute figures are medians over rounds.');
p();
table(['measure', 'this run', 'target', ''], targets, [null, 'r', 'r', null]);
p();
const refP50 = med(L_REF, (r) => phase(r, 1)?.p50_ms);
const floorP50 = med(L_FLOOR, (r) => phase(r, 1)?.p50_ms);
if (isNum(refP50) && isNum(floorP50)) {
  p(`On this machine the reference's p50 is ${fmt(refP50)} ms, so "8× lower" means a runbox p50 of at most ` +
    `${fmt(refP50 / 8)} ms, against the C echo floor's ${fmt(floorP50)} ms.`);
  p();
}
p('For context (no target):');
p();
table(['measure', 'this run'], info, [null, 'r']);
p();
p(`## read_file of a 4 KiB file over MCP stdio`);
p();
p('Median over rounds, (min–max) across rounds.');
p();
table(['', L_FLOOR, L_REF, L_RUNBOX],
  METRICS.map(([name, get, kind]) => [name, ...[L_FLOOR, L_REF, L_RUNBOX].map((l) => figure(l, get, kind).md)]),
  [null, 'r', 'r', 'r']);
p();
p('Peak RSS is VmHWM of the stdio server\'s process tree (for the reference: node running the SDK');
p('proxy) and of the daemon, read just before shutdown, after all phases. "Other load" is the CPU');
p('time that processes outside the benchmark used while the measurement ran (daemon start to');
p('daemon stop), in cores: the noise gauge.');
p();
p('## search over a tree of source files');
p();
if (!search) {
  p('Not measured in this run.');
} else if (!search.ok) {
  p(`**The search benchmark failed:** ${search.error}`);
} else {
  const mib = tree ? tree.bytes / 2 ** 20 : null;
  p(`Tree: ${tree ? `${tree.files} files (.c .js .py .md) in ${tree.dirs} directories, ${fmt(mib)} MiB, generated by ` +
    `\`tests/bench/gen-tree.mjs --seed ${tree.seed}\`` : '?'}, plus /a.txt. Query \`${search.query}\`: it occurs on ` +
    `${tree?.needle_lines ?? '?'} lines as written and on ${tree?.needle_ci_extra ?? '?'} more in other capitalisations, so every ` +
    `tool reads the whole tree. runboxd is timed from the HTTP \`POST /tool/search\` (\`{"query":…,"path":"/","max_results":10000}\`, ` +
    `\`"case_sensitive":false\` for the insensitive variant) to the parsed answer; grep and rg from spawn to exit ` +
    `(a bare spawn costs ${fmt(search.spawn_true_ms)} ms here). grep runs with \`LC_ALL=${search.grep_locale}\`. Each variant ran ` +
    `${search.warmup} untimed warm-up pass first (page cache warm for all), then ${search.runs} timed rounds in turn.`);
  p();
  table(['tool', 'case', 'median ms (min–max)', 'MiB/s', 'matching lines (expected)'],
    sres.map((x) => [x.tool === 'runbox' ? 'runboxd `search`' : `\`${x.cmd.replace(' DIR', ' WORKSPACE')}\``,
      x.case_insensitive ? 'insensitive' : 'sensitive',
      `${fmt(x.median_ms)} (${fmt(x.min_ms)}–${fmt(x.max_ms)})`,
      mib ? fmt(mib / (x.median_ms / 1000)) : '–',
      `${Array.isArray(x.matches) ? x.matches.join('/') : x.matches}${x.expected != null ? ` (${x.expected})` : ''}${x.count_ok ? '' : ' **mismatch**'}${x.truncated ? ' truncated' : ''}`]),
    [null, null, 'r', 'r', 'r']);
  if (isNum(search.runboxd_vmhwm_kb)) {
    p();
    p(`runboxd's peak RSS after these searches: ${fmt(search.runboxd_vmhwm_kb / 1024)} MiB.`);
  }
}
p();
// ---------------------------------------------------------------- issues 3 and 4
const extra = readJsonLines(o.extra);
if (extra.length) {
  p('## Exec, console, resources and Studio');
  p();
  p('Measured by `tests/bench/exec-bench.sh`, `resources-bench.mjs`, `sandbox-bench.mjs`,');
  p('`studio-bench.mjs`, `registry-bench.mjs` (external MCP servers: its header says exactly what');
  p('each row compares) and `rss-exec.mjs` in the same run, through `runbox` over stdio unless the');
  p('row says otherwise. One part of `registry-bench.mjs` alone: `PARTS=many RUNBOXD=build-bench/daemon/runboxd');
  p('node tests/bench/registry-bench.mjs` (the ten upstreams; `PARTS=echo`: the echo rows).');
  p();
  p('| measure | this run | target |  |');
  p('| --- | ---: | ---: | --- |');
  for (const r of extra) {
    if (r.bench === 'cli') {
      continue; // a section of its own, below
    } else if (r.bench === 'exec') {
      p(`| exec of \`true\` p50: runbox ${fmt(r.runbox_p50_ms)} ms ÷ bare bwrap ${fmt(r.bwrap_p50_ms)} ms` +
        `${r.limits ? ` (runs limited by ${r.limits})` : ''} | ` +
        `${fmt(r.ratio)}× | ≤ 1.3× | ${r.ratio <= 1.3 ? 'met' : '**missed**'} |`);
    } else if (r.phase && r.skipped) {
      p(`| ${r.phase} | skipped: ${r.skipped} | | |`);
    } else if (r.phase && isNum(r.p50_ms)) {
      p(`| ${r.phase}, p50 (p99 ${fmt(r.p99_ms)} ms) | ${fmt(r.p50_ms)} ms | ≤ ${r.target_p50_ms} ms | ` +
        `${r.meets_target ? 'met' : '**missed**'} |`);
    } else if (r.bench === 'studio_round_trip') {
      p(`| Studio tool round trip with a fake plugin polling: added p50 over a local tool ` +
        `(${fmt(r.local_p50_ms)} → ${fmt(r.studio_p50_ms)} ms) | +${fmt(r.added_p50_ms)} ms | ≤ 2 ms | ` +
        `${r.meets_target ? 'met' : '**missed**'} |`);
    } else if (r.bench === 'studio_idle_requests') {
      p(`| HTTP requests of an idle connected Studio, per minute (over ${r.seconds} s) | ` +
        `${fmt(r.per_minute)} | ≤ 5 | ${r.meets_target ? 'met' : '**missed**'} |`);
    } else if (r.measure) {
      p(`| ${r.measure} | ${r.value} | ${r.target ?? ''} | ${r.met === undefined ? '' : (r.met ? 'met' : '**missed**')} |`);
    }
  }
  p();
}

// ---------------------------------------------------------------- MCP over HTTP (issue 8)
// The section tests/bench/http-run.sh writes: this run's (--http), else the one already in the
// doc, so that a run of either script keeps the other's figures.
{
  const BEGIN = '<!-- http-bench:begin -->', END = '<!-- http-bench:end -->';
  let section = o.http && existsSync(o.http) ? readFileSync(o.http, 'utf8').trim() : '';
  if (!section && o.out !== '-' && existsSync(o.out)) {
    const doc = readFileSync(o.out, 'utf8');
    const a = doc.indexOf(BEGIN), b = doc.indexOf(END);
    if (a >= 0 && b > a) section = doc.slice(a, b + END.length);
  }
  if (section) {
    for (const l of section.split('\n')) p(l);
    p();
  }
}

// ---------------------------------------------------------------- slow clients (issue 12 §3)
// tests/bench/slow-clients.mjs writes its own section; keep the one already in the doc.
if (o.out !== '-' && existsSync(o.out)) {
  const BEGIN = '<!-- slow-clients:begin -->', END = '<!-- slow-clients:end -->';
  const doc = readFileSync(o.out, 'utf8');
  const a = doc.indexOf(BEGIN), b = doc.indexOf(END);
  if (a >= 0 && b > a) {
    for (const l of doc.slice(a, b + END.length).split('\n')) p(l);
    p();
  }
}

// ---------------------------------------------------------------- issue 13
const cliRows = extra.filter((r) => r.bench === 'cli');
if (cliRows.length) {
  for (const l of cliSection(cliRows, { command: 'tests/bench/run.sh (cli-bench.mjs)' })) p(l);
  p();
}

p('## How to read this');
p();
p('- Only ratios from the same run count. The machines are shared and noisy: absolute times move');
p('  from run to run (and with what else is running), the same-round ratios much less.');
p('- The C echo floor is the client\'s own cost (node\'s `spawn()`, pipes, JSON parsing in');
p('  mcp-bench): no stdio server can start or answer faster, so "× the floor" is the honest');
p('  measure of what runbox adds. The reference is the design runbox replaces.');
p('- Rounds interleave the servers, and each measurement waits for the machine to be quiet; a');
p('  measurement during which other processes kept more than a third of a core busy is redone (up');
p('  to twice; the rejected ones stay in the raw results).');
p('  Check the "other load" row: a large value means that figure is suspect.');
p('- With 16 in flight the client, runbox and runboxd share 2 cores, so that figure is bound by');
p('  the client as much as by the servers (see the floor\'s own figure).');
p('- This is a benchmark, not a test: nothing in the test suite asserts a time.');
if (o.summarize && existsSync(o.summarize) && ok.length) {
  const s = sh('node', [o.summarize, o.mcp], { timeout: 10000 });
  if (s) {
    p();
    p('## All figures (`../shared/bench/summarize.mjs`)');
    p();
    for (const l of s.split('\n')) p(l);
  }
}

const md = out.join('\n') + '\n';
process.stdout.write(md);
if (o.out !== '-') writeFileSync(o.out, md);
