// tests/bench/sandbox-bench.mjs - the speed targets of issue 10, each a ratio or a bound measured
// in one run against this build (a benchmark, not a test: it never fails because of a number):
//   1. npm install of a small package set in the sandbox through the egress proxy, against the
//      same command on the host, both with a cold cache (<= 1.25x); the second sandbox install,
//      from the cache (--prefer-offline), against the first (<= 0.5x);
//   2. an HTTP GET (a new connection each) through a port forward from the host, against the
//      same GET made inside the sandbox: the added p50 (<= 0.3 ms);
//   3. checkpoint of a 10 000-file, 100 MB workspace with 10 files changed (<= 50 ms) and
//      restore_checkpoint of that change (<= 200 ms), p50 over ROUNDS.
// Prints one JSON line per figure ({measure, value, target, met}) for tests/bench/report.mjs.
//   RUNBOXD=... node tests/bench/sandbox-bench.mjs
// Environment: NPM_PKGS ["express@4.19.2": 69 packages], NPM_RUNS [5], GETS [400],
// FILES [10000], FILE_KB [10], ROUNDS [7].
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import { startDaemon } from '../lib/daemon.mjs';

const NPM_PKGS = (process.env.NPM_PKGS || 'express@4.19.2').split(/\s+/);
const NPM_RUNS = Number(process.env.NPM_RUNS || 5);
const GETS = Number(process.env.GETS || 400);
const FILES = Number(process.env.FILES || 10000);
const FILE_KB = Number(process.env.FILE_KB || 10);
const ROUNDS = Number(process.env.ROUNDS || 7);

const fmt = (x) => (Number.isFinite(x) ? (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) : '?');
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const now = () => Number(process.hrtime.bigint()) / 1e6;
function emit(measure, value, target, met) { console.log(JSON.stringify({ bench: 'sandbox', measure, value, target, met })); }

function tmpdir(prefix) {
  const d = mkdtempSync(path.join(os.tmpdir(), prefix));
  chmodSync(d, 0o755); // reachable by the account runboxd drops to
  return d;
}

async function exec(d, command, timeout_ms = 110000) {
  const r = await d.call('exec', { command, timeout_ms });
  if (!r.body.ok || r.body.structured.exit_code !== 0) throw new Error(`${command}: ${r.text.slice(0, 600)}`);
  return r.body.structured;
}

// ---- 1. npm install
async function benchNpm() {
  const pkgs = NPM_PKGS.join(' ');
  const host = [], cold = [], warm = [];
  for (let i = 0; i < NPM_RUNS; i++) {
    // Host: a fresh project and a fresh cache each time.
    const dir = tmpdir('npm-bench-host-');
    writeFileSync(path.join(dir, 'package.json'), '{"name":"b","version":"1.0.0"}\n');
    const t0 = now();
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--cache', path.join(dir, '.cache'), ...NPM_PKGS],
                 { cwd: dir, stdio: 'pipe' });
    host.push(now() - t0);
    rmSync(dir, { recursive: true, force: true });
    // Sandbox: a fresh daemon with a cold cache, then the same install again from the cache.
    const cache = tmpdir('npm-bench-cache-');
    const d = await startDaemon({ args: ['--cache-dir', cache, '--no-fsync'] });
    try {
      await exec(d, 'echo \'{"name":"b","version":"1.0.0"}\' > package.json');
      const t1 = now();
      await exec(d, `npm install --no-audit --no-fund ${pkgs}`);
      cold.push(now() - t1);
      await exec(d, 'rm -rf node_modules package-lock.json');
      const t2 = now();
      await exec(d, `npm install --no-audit --no-fund --prefer-offline ${pkgs}`);
      warm.push(now() - t2);
    } finally {
      await d.stop();
      rmSync(cache, { recursive: true, force: true });
    }
  }
  const r1 = med(cold) / med(host), r2 = med(warm) / med(cold);
  emit(`npm install ${pkgs} in the sandbox through the proxy ${fmt(med(cold))} ms ÷ on the host ${fmt(med(host))} ms, cold caches (median of ${NPM_RUNS})`,
       `${fmt(r1)}×`, '≤ 1.25×', r1 <= 1.25);
  emit(`the second sandbox install (from the cache, --prefer-offline) ${fmt(med(warm))} ms ÷ the first ${fmt(med(cold))} ms`,
       `${fmt(r2)}×`, '≤ 0.5×', r2 <= 0.5);
}

// ---- 2. a GET through a port forward
const CLIENT = `
const http = require('http');
const [host, port, n] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const times = [];
function one(i) {
  if (i === n) { times.sort((a, b) => a - b); console.log(times[Math.floor(times.length / 2)].toFixed(4)); return; }
  const t0 = process.hrtime.bigint();
  http.get({ host, port, path: '/', agent: false }, (res) => {
    res.resume();
    res.on('end', () => { if (i >= 20) times.push(Number(process.hrtime.bigint() - t0) / 1e6); one(i + 1); });
  });
}
one(0);`;

async function benchForward() {
  const d = await startDaemon({ args: ['--no-fsync'] });
  const ROUNDS_FWD = 3;
  try {
    await d.call('write_file', { path: '/srv.js', content: "require('http').createServer((q, s) => s.end('ok')).listen(5000, '127.0.0.1')" });
    await d.call('write_file', { path: '/client.js', content: CLIENT });
    // One sandbox runs the server and, each time /go-<r> appears, the same client inside it
    // (each exec has a network namespace of its own, so a second exec could not reach it).
    const inner = Array.from({ length: ROUNDS_FWD }, (_, r) =>
      `while [ ! -e /workspace/go-${r} ]; do sleep 0.02; done; node /client.js 127.0.0.1 5000 ${GETS} > /workspace/inside-${r}.tmp && mv /workspace/inside-${r}.tmp /workspace/inside-${r}`).join('; ');
    const bg = await d.call('exec', { command: `node /srv.js & ${inner}; wait`, background: true, ports: [5000] });
    const url = new URL(bg.body.structured.urls[0].url);
    for (;;) { // until the server listens (502 before)
      const code = await new Promise((res) => http.get(url, (r) => { r.resume(); res(r.statusCode); }).on('error', () => res(0)));
      if (code === 200) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const inside = [], through = [];
    const hostDir = tmpdir('fwd-bench-'), hostClient = path.join(hostDir, 'client.js');
    writeFileSync(hostClient, CLIENT);
    for (let r = 0; r < ROUNDS_FWD; r++) { // alternate, so both see the same machine
      await d.call('write_file', { path: `/go-${r}`, content: '' });
      for (;;) {
        const got = await d.call('read_file', { path: `/inside-${r}` });
        if (got.body.ok) { inside.push(Number(got.body.result)); break; }
        await new Promise((res) => setTimeout(res, 50));
      }
      through.push(Number(execFileSync('node', [hostClient, '127.0.0.1', url.port, String(GETS)], { encoding: 'utf8' })));
    }
    const added = med(through) - med(inside);
    emit(`HTTP GET (a new connection each) p50: through a port forward from the host ${fmt(med(through))} ms − inside the sandbox ${fmt(med(inside))} ms`,
         `+${fmt(added)} ms`, '≤ +0.3 ms', added <= 0.3);
    await d.call('kill', { pid: bg.body.structured.pid, signal: 'KILL' });
    rmSync(hostDir, { recursive: true, force: true });
  } finally {
    await d.stop();
  }
}

// ---- 3. checkpoint and restore
async function benchCheckpoint() {
  const ws = tmpdir('cp-bench-ws-');
  const store = path.join(tmpdir('cp-bench-store-'), 'store');
  const body = Buffer.alloc(FILE_KB * 1024, 'x');
  for (let i = 0; i < FILES; i++) {
    const dir = path.join(ws, `d${i % 100}`);
    if (i < 100) mkdirSync(dir);
    writeFileSync(path.join(dir, `f${i}.txt`), body);
  }
  execFileSync('chown', ['-R', `${os.userInfo().uid === 0 ? 'nobody' : os.userInfo().uid}`, ws]);
  const d = await startDaemon({ workspace: ws, args: ['--checkpoint-dir', store, '--no-fsync'] });
  const save = [], restore = [];
  try {
    let base = (await d.call('checkpoint', { message: 'full' })).body.structured.id;
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < 10; k++)
        await d.call('write_file', { path: `/d${k}/f${k * 100 + k}.txt`, content: `round ${r} ${k}\n` });
      const t0 = now();
      const c = await d.call('checkpoint', { message: `round ${r}` });
      save.push(now() - t0);
      if (!c.body.ok || c.body.structured.copied_files !== 10) throw new Error(c.text);
      // Then change the same ten again and go back: a restore of a 10-file change.
      for (let k = 0; k < 10; k++)
        await d.call('write_file', { path: `/d${k}/f${k * 100 + k}.txt`, content: `other ${r} ${k}\n` });
      const t1 = now();
      const x = await d.call('restore_checkpoint', { id: c.body.structured.id });
      restore.push(now() - t1);
      if (!x.body.ok || x.body.structured.written !== 10) throw new Error(x.text);
      base = c.body.structured.id;
    }
    void base;
  } finally {
    await d.stop();
    rmSync(ws, { recursive: true, force: true });
    rmSync(path.dirname(store), { recursive: true, force: true });
  }
  const mb = (FILES * FILE_KB) / 1024;
  emit(`checkpoint of a ${FILES}-file, ${fmt(mb)} MB workspace with 10 files changed, p50 of ${ROUNDS} (HTTP call included)`,
       `${fmt(med(save))} ms`, '≤ 50 ms', med(save) <= 50);
  emit(`restore_checkpoint of that 10-file change, p50 of ${ROUNDS}`, `${fmt(med(restore))} ms`, '≤ 200 ms', med(restore) <= 200);
}

const only = process.env.ONLY || 'npm,forward,checkpoint';
for (const [name, fn] of [['checkpoint', benchCheckpoint], ['forward', benchForward], ['npm', benchNpm]]) {
  if (!only.split(',').includes(name)) continue;
  try {
    await fn();
  } catch (e) {
    emit(`${name} benchmark`, `failed: ${String(e.message).split('\n')[0].slice(0, 200)}`, '', false);
  }
}
