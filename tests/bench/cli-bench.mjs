#!/usr/bin/env node
// tests/bench/cli-bench.mjs - issue 13's figures, all in one run against one runboxd:
//   - `runbox call read_file path=/a.txt` from process start to exit, beside the MCP Inspector
//     CLI's same call (its peer) and beside spawning /bin/true (what starting any process from
//     node costs here: the floor);
//   - `runbox status` likewise;
//   - the status page's first load in headless Chromium: bytes transferred and
//     DOMContentLoaded, and how long a console line takes from exec printing it to the page.
// Prints JSON lines (read by tests/bench/run.sh into docs/performance.md) and then the
// "CLI and the status page" section of docs/performance.md as cli-report.mjs writes it.
//
//   RUNBOXD=build/daemon/runboxd RUNBOX=build/mcp-proxy/runbox node tests/bench/cli-bench.mjs
//   env: RUNS [50] runbox runs per figure; PEER_RUNS [5] Inspector runs; PAGE_RUNS [10]
// A benchmark, not a test: nothing here fails because a number is slow.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { launchChromium } from '../lib/browser.mjs';
import { cliSection } from './cli-report.mjs';
import { startDaemon } from '../lib/daemon.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const RUNS = Number(process.env.RUNS || 50);
const PEER_RUNS = Number(process.env.PEER_RUNS || 5);
const PAGE_RUNS = Number(process.env.PAGE_RUNS || 10);
const RUNBOX = path.resolve(process.env.RUNBOX || 'build/mcp-proxy/runbox');
const INSPECTOR = path.resolve(here, '../node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const p90 = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(s.length * 0.9))]; };
const ms = (v) => `${v.toFixed(2)} ms`;

function timeRun(cmd, args, env) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => { out += c; });
    child.on('error', reject);
    child.on('close', (code) => {
      const t = Number(process.hrtime.bigint() - t0) / 1e6;
      if (code !== 0) reject(new Error(`${cmd} ${args.join(' ')} exited ${code}`));
      else resolve({ t, out });
    });
  });
}

// Runs each command n times, interleaved (a, b, c, a, b, c, ...) so that the machine's load
// falls on all of them alike. jobs: [{cmd, args, check?}]. Returns one list of times per job.
async function interleaved(n, jobs, env) {
  const times = jobs.map(() => []);
  for (const j of jobs) await timeRun(j.cmd, j.args, env); // warm the page cache
  for (let i = 0; i < n; i++) {
    for (const [k, j] of jobs.entries()) {
      const { t, out } = await timeRun(j.cmd, j.args, env);
      if (j.check) j.check(out);
      times[k].push(t);
    }
  }
  return times;
}

// The browser's own floor: DOMContentLoaded of a one-line page from node's http server, with a
// new browser context each time, as for the status page.
async function plainPage(browser) {
  const srv = http.createServer((q, r) => {
    r.writeHead(200, { 'Content-Type': 'text/html' });
    r.end('<!doctype html><title>x</title><link rel="icon" href="data:,"><p>hello');
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const loads = [];
  try {
    for (let i = 0; i < PAGE_RUNS; i++) {
      const ctx = await browser.newContext();
      const pg = await ctx.newPage();
      await pg.goto(`http://127.0.0.1:${srv.address().port}/`);
      loads.push(await pg.evaluate(() =>
        performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd));
      await ctx.close();
    }
  } finally {
    srv.close();
  }
  return loads;
}

async function page(d) {
  const browser = await launchChromium();
  const loads = [];
  let plain = [];
  const bytes = [];
  const lags = [];
  const ttfbs = [];
  try {
    plain = await plainPage(browser);
    for (let i = 0; i < PAGE_RUNS; i++) {
      const ctx = await browser.newContext();
      const pg = await ctx.newPage();
      const responses = [];
      pg.on('requestfinished', (r) => responses.push(r));
      await pg.goto(`${d.url}/`);
      await pg.waitForSelector('#conn[data-state="live"]');
      await pg.waitForFunction(() => document.querySelectorAll('#log li').length > 0);
      let total = 0;
      for (const r of responses) {
        const s = await r.sizes();
        total += s.responseBodySize + s.responseHeadersSize;
      }
      bytes.push(total);
      const nav = await pg.evaluate(() => {
        const n = performance.getEntriesByType('navigation')[0];
        return { dcl: n.domContentLoadedEventEnd, ttfb: n.responseStart };
      });
      loads.push(nav.dcl);
      ttfbs.push(nav.ttfb);
      // From exec printing a line to the line in the page: the daemon's console stamp is the
      // start (the same clock on one machine), the page's clock the end.
      const marker = `lag-${i}-${Date.now()}`;
      const waiting = pg.waitForFunction((m) => {
        const li = [...document.querySelectorAll('#log li')].find((e) =>
          e.querySelector('.msg').textContent === m);
        return li && Date.now() - Date.parse(li.querySelector('.ts').title);
      }, marker, { polling: 'raf' });
      await d.call('exec', { command: `echo ${marker}` });
      lags.push(await (await waiting).jsonValue());
      await ctx.close();
    }
  } finally {
    await browser.close();
  }
  return { loads, bytes, lags, ttfbs, plain };
}

const d = await startDaemon({ args: ['--workspace', ':memory:'] });
try {
  let text = '';
  for (let i = 0; i < 4096; i++) text += i % 64 === 63 ? '\n' : String.fromCharCode(97 + (i % 26));
  await d.call('write_file', { path: '/a.txt', content: text });
  const env = { DAEMON_URL: d.url, RUNBOX_LOG: 'warn' };
  const [floor, call, status] = await interleaved(RUNS, [
    { cmd: '/bin/true', args: [] },
    { cmd: RUNBOX, args: ['call', 'read_file', 'path=/a.txt'],
      check: (out) => { if (out !== text) throw new Error('read_file gave another text'); } },
    { cmd: RUNBOX, args: ['status'] },
  ], env);
  let peer = null;
  if (existsSync(INSPECTOR)) {
    const home = mkdtempSync(path.join(os.tmpdir(), 'cli-bench-inspector-'));
    [peer] = await interleaved(PEER_RUNS, [{
      cmd: process.execPath,
      args: [INSPECTOR, '--cli', '-q', '--format', 'json', '-e', `DAEMON_URL=${d.url}`, RUNBOX,
             '--method', 'tools/call', '--tool-name', 'read_file', '--tool-arg', 'path=/a.txt'],
      check: (out) => { if (!out.includes('aaa') && !out.includes('abcdef')) throw new Error(`Inspector: ${out}`); },
    }], { ...env, HOME: home });
    rmSync(home, { recursive: true, force: true });
  }
  const pg = await page(d);
  const kb = (b) => `${(b / 1024).toFixed(1)} KB`;
  const row = (measure, value, target, met) =>
    ({ bench: 'cli', measure, value, ...(target ? { target } : {}), ...(met === undefined ? {} : { met }) });
  const rows = [
    row(`\`runbox call read_file\` (4 KiB), start to exit, p50 (p90 ${ms(p90(call))})`, ms(median(call)),
        '≤ 15 ms', median(call) <= 15),
    ...(peer ? [row(`the MCP Inspector CLI's same call through runbox, p50 (${PEER_RUNS} runs)`,
                    ms(median(peer)), `${(median(peer) / median(call)).toFixed(0)}× runbox call`)] : []),
    row('spawning `/bin/true` from the same node (the floor of every figure above), p50', ms(median(floor))),
    row(`\`runbox status\`, start to exit, p50 (p90 ${ms(p90(status))})`, ms(median(status)),
        '≤ 15 ms', median(status) <= 15),
    row(`status page first load, transferred (${PAGE_RUNS} loads, largest)`, kb(Math.max(...pg.bytes)),
        '≤ 150 KB', Math.max(...pg.bytes) <= 150 * 1024),
    row('status page DOMContentLoaded in headless Chromium, a new browser context each load, p50 (largest ' +
        `${ms(Math.max(...pg.loads))}; first byte of / after ${ms(median(pg.ttfbs))})`,
        ms(median(pg.loads)), '≤ 200 ms', median(pg.loads) <= 200),
    row("the same for a one-line page from node's http server (the browser's floor), p50",
        ms(median(pg.plain)), `status page ${(median(pg.loads) / median(pg.plain)).toFixed(1)}× this`),
    row('a console line from exec printing it to the page (over GET /events), p50 (largest ' +
        `${Math.max(...pg.lags)} ms)`, `${median(pg.lags)} ms`, '≤ 1 s', median(pg.lags) <= 1000),
  ];
  // JSON lines for tests/bench/run.sh (report.mjs), then the section as docs/performance.md has it.
  for (const r of rows) console.log(JSON.stringify(r));
  const command = `RUNS=${RUNS} PEER_RUNS=${PEER_RUNS} PAGE_RUNS=${PAGE_RUNS} node tests/bench/cli-bench.mjs`;
  console.log(`\n${cliSection(rows, { command, load: os.loadavg()[0].toFixed(1) }).join('\n')}`);
} finally {
  await d.stop();
}
