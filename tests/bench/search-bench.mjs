#!/usr/bin/env node
// search-bench.mjs — times runboxd's `search` tool against grep (and ripgrep when installed)
// over the same directory, and prints one JSON line of results.
//
//   node search-bench.mjs --url http://127.0.0.1:PORT --dir WORKSPACE_DIR --query WORD
//        [--runs 5] [--warmup 1] [--expect-cs N] [--expect-ci N] [--rg PATH] [--grep PATH]
//
// Variants: case-sensitive and case-insensitive, for each tool. Every variant gets --warmup
// untimed runs first (so the page cache is warm for all of them), then --runs timed rounds in
// which the variants take turns, so a burst of load on the machine hits them alike. Time is
// wall time around the whole request: for runboxd the HTTP POST until the body has been read
// and parsed, for grep/rg the spawn until the process has exited and its output been read.
// The matching lines each tool reports are counted and checked against the expected counts.
import { spawn } from 'node:child_process';
import http from 'node:http';

function parseArgs(argv) {
  const o = { url: null, dir: null, query: null, runs: 5, warmup: 1, expectCs: null, expectCi: null,
    rg: null, grep: 'grep', grepLocale: 'C' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case '--url': o.url = v(); break;
      case '--dir': o.dir = v(); break;
      case '--query': o.query = v(); break;
      case '--runs': o.runs = Number(v()); break;
      case '--warmup': o.warmup = Number(v()); break;
      case '--expect-cs': o.expectCs = Number(v()); break;
      case '--expect-ci': o.expectCi = Number(v()); break;
      case '--rg': o.rg = v(); break;
      case '--grep': o.grep = v(); break;
      case '--grep-locale': o.grepLocale = v(); break;
      default: throw new Error(`unknown option ${a}`);
    }
  }
  if (!o.url || !o.dir || !o.query) throw new Error('--url, --dir and --query are required');
  return o;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

// POST /tool/search; resolves to the number of match lines in the result text
function postSearch(url, body) {
  const u = new URL('/tool/search', url);
  const data = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(u, {
      method: 'POST', agent, timeout: 300000,
      headers: { 'Content-Type': 'application/json', 'Content-Length': data.length },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let j;
        try { j = JSON.parse(text); } catch { return reject(new Error(`HTTP ${res.statusCode}: not JSON: ${text.slice(0, 200)}`)); }
        if (res.statusCode !== 200 || !j.ok) return reject(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
        const out = typeof j.result === 'string' ? j.result : JSON.stringify(j.result);
        // "path:line: text" lines; the "[truncated: ...]" note and blank lines are not matches
        const n = out.split('\n').filter((l) => l && !l.startsWith('[truncated')).length;
        resolve({ matches: n, truncated: out.includes('[truncated') });
      });
    });
    req.on('timeout', () => req.destroy(new Error('search request timed out')));
    req.on('error', reject);
    req.end(data);
  });
}

// runs a command; resolves to the number of output lines once it has exited
function run(cmd, args, env) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let lines = 0;
    let err = '';
    p.stdout.on('data', (c) => {
      for (let i = c.indexOf(10); i !== -1; i = c.indexOf(10, i + 1)) lines++;
    });
    p.stderr.on('data', (c) => { err += c; });
    p.on('error', reject);
    p.on('close', (code) => {
      // grep and rg exit 1 when nothing matched: that is an answer, not a failure
      if (code !== 0 && code !== 1) return reject(new Error(`${cmd} exited ${code}: ${err.slice(0, 300)}`));
      resolve({ matches: lines, truncated: false });
    });
  });
}

async function time(fn) {
  const t0 = process.hrtime.bigint();
  const r = await fn();
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, ...r };
}

const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const genv = { ...process.env, LC_ALL: o.grepLocale };
  const q = o.query;
  const variants = [
    { name: 'runbox', ci: false, run: () => postSearch(o.url, { query: q, path: '/', max_results: 10000 }) },
    { name: 'runbox', ci: true, run: () => postSearch(o.url, { query: q, path: '/', max_results: 10000, case_sensitive: false }) },
    { name: 'grep', ci: false, cmd: `grep -rn ${q} DIR`, run: () => run(o.grep, ['-rn', q, o.dir], genv) },
    { name: 'grep', ci: true, cmd: `grep -rni ${q} DIR`, run: () => run(o.grep, ['-rni', q, o.dir], genv) },
  ];
  if (o.rg) {
    variants.push({ name: 'rg', ci: false, cmd: `rg -n ${q} DIR`, run: () => run(o.rg, ['-n', q, o.dir]) });
    variants.push({ name: 'rg', ci: true, cmd: `rg -ni ${q} DIR`, run: () => run(o.rg, ['-ni', q, o.dir]) });
  }
  for (const v of variants) { v.times = []; v.counts = new Set(); v.truncated = false; }

  for (let w = 0; w < o.warmup; w++) {
    for (const v of variants) { const r = await v.run(); v.counts.add(r.matches); }
  }
  for (let i = 0; i < o.runs; i++) {
    for (const v of variants) {
      const r = await time(v.run);
      v.times.push(r.ms);
      v.counts.add(r.matches);
      v.truncated ||= r.truncated;
    }
  }
  // what a bare process spawn costs here (part of every grep/rg time, none of runboxd's)
  const spawnMs = [];
  for (let i = 0; i < 5; i++) spawnMs.push((await time(() => run('true', [], process.env))).ms);

  const res = variants.map((v) => {
    const expect = v.ci ? o.expectCi : o.expectCs;
    const counts = [...v.counts];
    return {
      tool: v.name, case_insensitive: v.ci, cmd: v.cmd ?? null, median_ms: median(v.times),
      min_ms: Math.min(...v.times), max_ms: Math.max(...v.times), times_ms: v.times.map((t) => Math.round(t * 100) / 100),
      matches: counts.length === 1 ? counts[0] : counts, expected: expect, truncated: v.truncated,
      count_ok: expect == null || (counts.length === 1 && counts[0] === expect),
    };
  });
  console.log(JSON.stringify({ ok: true, query: q, runs: o.runs, warmup: o.warmup, grep_locale: o.grepLocale,
    spawn_true_ms: median(spawnMs), results: res }));
  agent.destroy();
}

main().catch((e) => {
  console.log(JSON.stringify({ ok: false, error: e.message }));
  console.error(`search-bench: ${e.message}`);
  agent.destroy();
  process.exit(3);
});
