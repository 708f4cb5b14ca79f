// tests/bench/registry-bench.mjs - the outbound registry's speed (issue 9), in one run:
//
//   RUNBOXD=build-bench/daemon/runboxd RUNBOX=build-bench/mcp-proxy/runbox \
//     node tests/bench/registry-bench.mjs
//
// 1. `echo` of @modelcontextprotocol/server-everything (stdio), the same raw JSON-RPC client:
//    A. straight to the server over stdio;
//    B. over Streamable HTTP to runboxd's /mcp, runboxd calling the server over stdio;
//    C. to mcp-hub (the Node aggregator from npm; its /mcp is legacy HTTP+SSE) aggregating it
//       the same way;
//    D. over stdio to runbox, which calls runboxd's POST /tool (the path of a stdio client such
//       as Claude Desktop: the one the target is about).
//    Every path first makes PREWARM calls (the servers' JIT warms up), then rounds interleave
//    A, B, C, D; each reports p50 of CALLS sequential calls. The overhead of
//    an aggregator is its p50 minus A's; the target is D - A <= 0.2 ms and
//    (D - A) <= (C - A) / 5, and the same for B.
// 2. Ten stdio upstreams (tests/lib/mcpservers.mjs, an SDK server): how long after runboxd's
//    start /health answers (median of HEALTH_STARTS starts, default 5; and, for scale, with no
//    upstream at all), and when each upstream is ready against the slowest one's own start
//    time (spawn to initialize answer, measured alone). "Alone" is one server on an otherwise
//    idle machine; ten Node starts need ten times its CPU (~0.25 s each here), so on 2 cores
//    the last can be ready no sooner than about five solo starts. The row "for scale" shows that
//    floor: the same ten started at once by this process itself, without runboxd. Another row
//    shows when runboxd's first and middle upstreams are ready (it starts stdio servers one per
//    core at a time, so the first are ready long before the last).
// PARTS=echo or PARTS=many runs one of the two.
// Prints a line per figure and JSON lines {"measure","value","target","met"} for report.mjs.
// A benchmark, not a test: nothing fails because a number is slow.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const tests = path.join(here, '..');
const everything = path.join(tests, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const hub = path.join(tests, 'node_modules/mcp-hub/dist/cli.js');
const testServer = path.join(tests, 'lib/mcpservers.mjs');
const RUNBOXD = process.env.RUNBOXD;
const RUNBOX = process.env.RUNBOX || path.join(path.dirname(RUNBOXD || '.'), '..', 'mcp-proxy', 'runbox');
const CALLS = Number(process.env.CALLS || 1000);
const WARMUP = Number(process.env.WARMUP || 100);
const PREWARM = Number(process.env.PREWARM || 2000); // calls on each path once, before the rounds
const RUNS = Number(process.env.RUNS || 3);
const UPSTREAMS = Number(process.env.UPSTREAMS || 10);
const PARTS = (process.env.PARTS || 'echo,many').split(',');
if (!RUNBOXD) throw new Error('set RUNBOXD to the runboxd binary');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'registry-bench-'));
const kids = [];
process.on('exit', () => { for (const k of kids) k.kill('SIGKILL'); rmSync(tmp, { recursive: true, force: true }); });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(s.length * p))]; };
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

function freePort() {
  return new Promise((resolve) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); }); });
}

// ---- a raw JSON-RPC client over a child's stdio ----
function stdioClient(cmd, args, env = {}) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'ignore'] });
  kids.push(child);
  const waiting = new Map();
  let buf = '', next = 1;
  child.stdout.on('data', (c) => {
    buf += c;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl); buf = buf.slice(nl + 1);
      let m; try { m = JSON.parse(line); } catch { continue; }
      if (m.id !== undefined && waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); }
    }
  });
  return {
    child,
    request(method, params) {
      const id = next++;
      return new Promise((resolve) => { waiting.set(id, resolve); child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n'); });
    },
    notify(method) { child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method }) + '\n'); },
  };
}

// ---- a raw JSON-RPC client over Streamable HTTP (one kept-alive connection) ----
function httpClient(port, pathname) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let session = null, next = 1;
  const post = (msg) => new Promise((resolve, reject) => {
    const body = JSON.stringify(msg);
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
                      'Content-Length': Buffer.byteLength(body) };
    if (session) { headers['Mcp-Session-Id'] = session; headers['MCP-Protocol-Version'] = '2025-11-25'; }
    const req = http.request({ host: '127.0.0.1', port, path: pathname, method: 'POST', agent, headers }, (res) => {
      if (res.headers['mcp-session-id']) session = res.headers['mcp-session-id'];
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => {
        try {
          if (!text) return resolve(null);
          if (/event-stream/.test(res.headers['content-type'] || '')) {
            for (const line of text.split('\n')) if (line.startsWith('data:')) {
              const m = JSON.parse(line.slice(5)); if (m.id === msg.id) return resolve(m);
            }
            return resolve(null);
          }
          resolve(JSON.parse(text));
        } catch (e) {
          reject(new Error(`${pathname} answered HTTP ${res.statusCode}: ${text.slice(0, 200)}`));
        }
      });
    });
    req.on('error', reject);
    req.end(body);
  });
  return {
    request: (method, params) => post({ jsonrpc: '2.0', id: next++, method, params }),
    notify: (method) => post({ jsonrpc: '2.0', method }),
  };
}

// ---- a raw JSON-RPC client over legacy HTTP+SSE (mcp-hub serves only this) ----
function sseClient(port, pathname) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const waiting = new Map();
  let next = 1, endpoint;
  const ready = new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: pathname, headers: { Accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`GET ${pathname}: HTTP ${res.statusCode}`));
      let buf = '', event = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        buf += c;
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          const line = buf.slice(0, nl).replace(/\r$/, ''); buf = buf.slice(nl + 1);
          if (line.startsWith('event:')) event = line.slice(6).trim();
          else if (line.startsWith('data:')) {
            const data = line.slice(5).trim();
            if (event === 'endpoint') { endpoint = data; resolve(); }
            else { try { const m = JSON.parse(data); if (waiting.has(m.id)) { waiting.get(m.id)(m); waiting.delete(m.id); } } catch { /* not ours */ } }
          } else if (!line) event = '';
        }
      });
    }).on('error', reject);
  });
  const post = (msg) => new Promise((resolve, reject) => {
    const body = JSON.stringify(msg);
    const req = http.request({ host: '127.0.0.1', port, path: endpoint, method: 'POST', agent,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, (res) => { res.resume(); res.on('end', resolve); });
    req.on('error', reject);
    req.end(body);
  });
  return {
    ready,
    request(method, params) {
      const id = next++;
      const answer = new Promise((resolve) => waiting.set(id, resolve));
      return post({ jsonrpc: '2.0', id, method, params }).then(() => answer);
    },
    notify: (method) => post({ jsonrpc: '2.0', method }),
  };
}

const INIT = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'registry-bench', version: '1' } };

async function measure(client, tool, args = { message: 'x' }) {
  const lat = [];
  for (let i = 0; i < WARMUP + CALLS; i++) {
    const t0 = process.hrtime.bigint();
    const r = await client.request('tools/call', { name: tool, arguments: args });
    if (!r?.result?.content) throw new Error(`${tool}: ${JSON.stringify(r)}`);
    if (i >= WARMUP) lat.push(ms(t0));
  }
  return { p50: median(lat), p90: pct(lat, 0.9) };
}

async function startRunboxd(config) {
  const file = path.join(tmp, `runboxd-${Date.now()}-${Math.random()}.json`);
  writeFileSync(file, JSON.stringify(config));
  const t0 = process.hrtime.bigint();
  const child = spawn(RUNBOXD, ['--port', '0', '--workspace', ':memory:', '--config', file],
                      { env: { ...process.env, XDG_CONFIG_HOME: tmp }, stdio: ['ignore', 'pipe', 'ignore'] });
  kids.push(child);
  const port = await new Promise((resolve) => {
    let out = '';
    child.stdout.on('data', (c) => { out += c; const m = /listening on http:\/\/[^:]+:(\d+)/.exec(out); if (m) resolve(Number(m[1])); });
  });
  return { child, port, t0 };
}

function get(port, p) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: p }, (res) => {
      let t = ''; res.on('data', (c) => { t += c; }); res.on('end', () => resolve(JSON.parse(t)));
    }).on('error', reject);
  });
}

async function waitReady(port, n) {
  for (;;) {
    const s = (await get(port, '/mcp-servers')).servers;
    if (s.filter((x) => x.state === 'ready').length >= n) return s;
    await sleep(5);
  }
}

// ---------------------------------------------------------------- 1. echo
async function echoBench() {
  const direct = stdioClient(process.execPath, [everything, 'stdio']);
  await direct.request('initialize', INIT);
  direct.notify('notifications/initialized');

  const rb = await startRunboxd({ mcpServers: { ev: { command: process.execPath, args: [everything, 'stdio'] } } });
  await waitReady(rb.port, 1);
  const viaRunbox = httpClient(rb.port, '/mcp');
  await viaRunbox.request('initialize', INIT);
  await viaRunbox.notify('notifications/initialized');
  const viaStdio = stdioClient(RUNBOX, [], { DAEMON_URL: `http://127.0.0.1:${rb.port}`, RUNBOX_LOG: 'error' });
  await viaStdio.request('initialize', INIT);
  viaStdio.notify('notifications/initialized');

  const hubPort = await freePort();
  const hubCfg = path.join(tmp, 'hub.json');
  writeFileSync(hubCfg, JSON.stringify({ mcpServers: { ev: { command: process.execPath, args: [everything, 'stdio'] } } }));
  const hubChild = spawn(process.execPath, [hub, '--port', String(hubPort), '--config', hubCfg],
                         { env: { ...process.env, HOME: tmp, XDG_STATE_HOME: tmp, XDG_CONFIG_HOME: tmp, XDG_DATA_HOME: tmp }, stdio: ['ignore', 'ignore', 'ignore'] });
  kids.push(hubChild);
  let viaHub, hubTool;
  for (;;) {
    try {
      viaHub = sseClient(hubPort, '/mcp');
      await viaHub.ready;
      await viaHub.request('initialize', INIT);
      await viaHub.notify('notifications/initialized');
      const tools = (await viaHub.request('tools/list', {}))?.result?.tools || [];
      hubTool = tools.find((t) => /^ev.*echo$/.test(t.name))?.name;
      if (hubTool) break;
    } catch { /* not up yet */ }
    await sleep(100);
  }
  // Node's JIT warms server-everything over its first thousand calls or so. direct has a server
  // of its own while the runboxd paths share one, so without this the first path measured on
  // the shared server paid for warming it (p50 0.42 ms in its first round, 0.15 ms later).
  for (const [client, tool] of [[direct, 'echo'], [viaRunbox, 'ev__echo'], [viaHub, hubTool], [viaStdio, 'ev__echo']])
    for (let i = 0; i < PREWARM; i++) await client.request('tools/call', { name: tool, arguments: { message: 'x' } });
  const rows = { direct: [], runboxd: [], hub: [], local: [], stdio: [] };
  for (let r = 0; r < RUNS; r++) {
    rows.direct.push(await measure(direct, 'echo'));
    rows.runboxd.push(await measure(viaRunbox, 'ev__echo'));
    rows.hub.push(await measure(viaHub, hubTool));
    rows.stdio.push(await measure(viaStdio, 'ev__echo'));
    // The same client on runboxd's /mcp with a quick tool of its own: the HTTP front's share.
    rows.local.push(await measure(viaRunbox, 'mcp_servers', { name: 'ev' }));
  }
  const p50 = (k) => median(rows[k].map((x) => x.p50));
  const A = p50('direct'), B = p50('runboxd'), C = p50('hub'), L = p50('local'), D = p50('stdio');
  const oR = B - A, oH = C - A, oS = D - A;
  console.log(`echo p50 over ${RUNS} rounds of ${CALLS}: direct stdio ${A.toFixed(3)} ms, via runbox (stdio) ${D.toFixed(3)} ms, via runboxd /mcp ${B.toFixed(3)} ms, via mcp-hub /mcp ${C.toFixed(3)} ms`);
  console.log(`overhead: runbox ${oS.toFixed(3)} ms, runboxd /mcp ${oR.toFixed(3)} ms, mcp-hub ${oH.toFixed(3)} ms; ratios ${(oS / oH).toFixed(3)}, ${(oR / oH).toFixed(3)}`);
  const out = [
    { measure: `echo on server-everything (stdio) p50: direct ${A.toFixed(3)} ms, through runbox (stdio) → runboxd ${D.toFixed(3)} ms: added`, value: `${oS.toFixed(3)} ms`, target: '≤ 0.2 ms', met: oS <= 0.2 },
    { measure: `… the same through mcp-hub 4.2.1's /mcp (SSE) ${C.toFixed(3)} ms: runbox's overhead ÷ mcp-hub's (${oH.toFixed(3)} ms)`, value: `${(oS / oH).toFixed(3)}×`, target: '≤ 0.2×', met: oS / oH <= 0.2 },
    { measure: `for scale: the same HTTP client on runboxd's /mcp calling a quick tool of runboxd's own (mcp_servers), p50`, value: `${L.toFixed(3)} ms`, target: '', met: undefined },
    { measure: `echo on server-everything (stdio) p50: direct ${A.toFixed(3)} ms, through runboxd's /mcp ${B.toFixed(3)} ms: added`, value: `${oR.toFixed(3)} ms`, target: '≤ 0.2 ms', met: oR <= 0.2 },
    { measure: `… the same through mcp-hub 4.2.1's /mcp (SSE) ${C.toFixed(3)} ms: runboxd's overhead ÷ mcp-hub's (${oH.toFixed(3)} ms)`, value: `${(oR / oH).toFixed(3)}×`, target: '≤ 0.2×', met: oR / oH <= 0.2 },
  ];
  direct.child.kill(); viaStdio.child.kill(); rb.child.kill('SIGTERM'); hubChild.kill('SIGTERM');
  return out;
}

// ---------------------------------------------------------------- 2. ten upstreams
// Kills a child and waits until it is gone, so that the next measure starts on an idle machine.
function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill();
  return gone;
}

async function soloStart() {
  const t0 = process.hrtime.bigint();
  const c = stdioClient(process.execPath, [testServer, 'stdio', 'solo']);
  await c.request('initialize', INIT);
  const t = ms(t0);
  await stop(c.child);
  return t;
}

// The same servers started all at once by this process, without runboxd: what UPSTREAMS Node
// starts cost on this machine's cores together (each one is ~0.25 s of CPU), the floor under
// "every upstream ready".
async function togetherStart() {
  const t0 = process.hrtime.bigint();
  const clients = Array.from({ length: UPSTREAMS }, (_, i) => stdioClient(process.execPath, [testServer, 'stdio', `t${i}`]));
  const t = await Promise.all(clients.map((c) => c.request('initialize', INIT).then(() => ms(t0))));
  await Promise.all(clients.map((c) => stop(c.child)));
  return Math.max(...t);
}

// True while a test server started by some runboxd of this benchmark still runs (a stopped
// daemon's servers may take a moment to exit, and their exit costs CPU).
function serversRunning() {
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(testServer)) return true;
    } catch { /* gone meanwhile */ }
  }
  return false;
}

// Spawn to the first /health answer of runboxd with each config, HEALTH_STARTS times each,
// the configs taking turns. Each daemon is stopped, and its servers are gone, before the next.
const HEALTH_STARTS = Number(process.env.HEALTH_STARTS || 5);
async function healthAfterStart(configs) {
  const t = configs.map(() => []);
  for (let i = 0; i < HEALTH_STARTS; i++) {
    for (const [k, config] of configs.entries()) {
      const rb = await startRunboxd(config);
      for (;;) {
        try { await get(rb.port, '/health'); t[k].push(ms(rb.t0)); break; } catch { await sleep(1); }
      }
      const gone = new Promise((resolve) => rb.child.once('exit', resolve));
      rb.child.kill('SIGTERM');
      await gone;
      while (serversRunning()) await sleep(20);
      await sleep(200);
    }
  }
  return t;
}

async function manyBench() {
  const solos = [];
  for (let i = 0; i < UPSTREAMS; i++) solos.push(await soloStart());
  const slowestSolo = Math.max(...solos);
  const together = await togetherStart();
  const cfg = { mcpServers: {} };
  for (let i = 0; i < UPSTREAMS; i++) cfg.mcpServers[`s${i}`] = { command: process.execPath, args: [testServer, 'stdio', `s${i}`] };
  const [healths, bares] = await healthAfterStart([cfg, { mcpServers: {} }]);
  const health = median(healths), bare = median(bares);
  const startWall = Date.now();
  const rb = await startRunboxd(cfg);
  const servers = await waitReady(rb.port, UPSTREAMS);
  const readyAfter = servers.map((s) => Date.parse(s.ready_at) - startWall);
  const lastReady = Math.max(...readyAfter);
  const sorted = [...readyAfter].sort((a, b) => a - b);
  rb.child.kill('SIGTERM');
  console.log(`/health after spawn, ${HEALTH_STARTS} starts each: ${UPSTREAMS} upstreams ${healths.map((x) => x.toFixed(1)).join(', ')} ms (median ${health.toFixed(1)}); none ${bares.map((x) => x.toFixed(1)).join(', ')} ms (median ${bare.toFixed(1)})`);
  console.log(`${UPSTREAMS} upstreams: /health answered ${health.toFixed(1)} ms after spawn; ready after ${readyAfter.map((x) => x.toFixed(0)).join(', ')} ms; slowest solo start ${slowestSolo.toFixed(0)} ms; all started together by the bench ${together.toFixed(0)} ms`);
  return [
    { measure: `${UPSTREAMS} stdio upstreams configured: GET /health answers after runboxd's spawn (median of ${HEALTH_STARTS} starts)`, value: `${health.toFixed(1)} ms`, target: '≤ 50 ms', met: health <= 50 },
    { measure: `for scale: the same with no upstream configured (runboxd's own start: civetweb makes its --http-threads workers before it listens)`, value: `${bare.toFixed(1)} ms`, target: '', met: undefined },
    { measure: `… every upstream ready (last at ${lastReady.toFixed(0)} ms) after the slowest one's own start alone (${slowestSolo.toFixed(0)} ms; ${os.cpus().length} cores shared by ${UPSTREAMS} Node servers)`, value: `+${(lastReady - slowestSolo).toFixed(0)} ms`, target: '≤ +100 ms', met: lastReady - slowestSolo <= 100 },
    { measure: `for scale: the same ${UPSTREAMS} servers started all at once by the benchmark itself, without runboxd: the last initialize answer (the floor under the row above on ${os.cpus().length} cores)`, value: `${together.toFixed(0)} ms`, target: '', met: undefined },
    { measure: `for scale: runboxd's first upstream ready, and the ${Math.ceil(UPSTREAMS / 2)}th (stdio servers start one per core at a time)`, value: `${sorted[0].toFixed(0)} ms, ${sorted[Math.ceil(UPSTREAMS / 2) - 1].toFixed(0)} ms`, target: '', met: undefined },
  ];
}

const lines = [...(PARTS.includes('echo') ? await echoBench() : []), ...(PARTS.includes('many') ? await manyBench() : [])];
for (const l of lines) console.log(JSON.stringify(l));
process.exit(0);
