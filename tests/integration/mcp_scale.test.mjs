// Integration: runboxd at the scale issue 8 §5 names, with its default --http-threads (320) and
// --mcp-sessions (256). 256 MCP sessions each hold a GET stream open, 16 of them run a long exec
// (8 run, 8 wait for an exec slot: every one holds its request's worker), and 8 Studio plugins
// keep a long-poll parked. Meanwhile read_file over POST /tool and over /mcp keeps answering:
// every probe is answered, with the right bytes. Session 257 gets the 503 that names
// --mcp-sessions. The daemon's RSS stays flat while the probes run. The latencies are printed
// for the benchmark (docs/performance.md); nothing here is timed.
//
// Workers: 256 streams + 16 execs + 8 polls = 280 of 320, leaving 40 for requests (keep-alive
// connections hold a worker while idle, up to 2 s). See docs/configuration.md, --http-threads.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, afterEach, before, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';
import { FakePlugin } from '../lib/fakeplugin.mjs';
import { initializeMessage, isSanitized, mcpPost, mcpSession, memoryOf,
         until } from '../lib/mcp.mjs';

const SESSIONS = 256;
const EXECS = 16;
const POLLS = 8;
const PROBES = 200;

let d;
const streams = [];

before(async () => {
  d = await startDaemon({ workspace: ':memory:' });
});

afterEach(async () => {
  await FakePlugin.cleanupAll();
});

after(async () => {
  for (const s of streams) s.destroy();
  await d?.stop();
});

// Opens the session's GET stream; resolves once its 200 head arrived. Never read further than
// the comments it gets.
function openStream(s) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: d.port, path: '/mcp', agent: false,
                               headers: { Accept: 'text/event-stream',
                                          'Mcp-Session-Id': s.id } });
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`GET stream: ${res.statusCode}`));
        return;
      }
      res.on('data', () => {});
      streams.push(req);
      resolve(req);
    });
    req.on('error', (e) => (streams.includes(req) ? null : reject(e)));
    req.end();
  });
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

test(`${SESSIONS} sessions with GET streams, ${EXECS} execs and ${POLLS} polls: reads answer`, async () => {
  const content = 'r'.repeat(4096);
  assert.equal((await d.call('write_file', { path: '/probe.txt', content })).body.ok, true);
  const base = memoryOf(d.pid);

  const sessions = [];
  for (let i = 0; i < SESSIONS; i++) sessions.push(await mcpSession(d));
  for (let i = 0; i < SESSIONS; i += 32)
    await Promise.all(sessions.slice(i, i + 32).map(openStream));
  await until('every stream counted', async () =>
    (await d.get('/health')).body.mcp.streams === SESSIONS);

  // Session 257: refused, naming the flag.
  const full = await mcpPost(d.port, initializeMessage());
  assert.equal(full.status, 503, full.text);
  assert.match(full.body.error.message, /256 MCP sessions open.*--mcp-sessions/);

  // 16 long execs in 16 of the sessions (idle: a sleep), killed at the end.
  const marker = 'sleep 86399.5';
  const execs = sessions.slice(0, EXECS).map((s, i) => s.post({
    jsonrpc: '2.0', id: `exec-${i}`, method: 'tools/call',
    params: { name: 'exec', arguments: { command: marker, timeout_ms: 100000 } } }));
  const ours = async () => (await d.call('process_list', {})).body.result.processes
    .filter((p) => p.command === marker);
  await until(`${EXECS} execs in the registry`, async () => (await ours()).length === EXECS);

  // 8 Studio plugins with a parked long-poll each.
  const plugins = [];
  for (let i = 0; i < POLLS; i++) {
    const p = new FakePlugin(d.port, { instance: `scale-${i}`, role: 'edit' });
    p.start();
    plugins.push(p);
  }
  await until('8 instances registered', async () =>
    (await d.get('/health')).body.studio.instances.length === POLLS);
  const loaded = memoryOf(d.pid);

  // The probes: read_file over POST /tool (one kept-alive connection) and over /mcp.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const tool = () => new Promise((resolve, reject) => {
    const body = JSON.stringify({ path: '/probe.txt' });
    const req = http.request({ host: '127.0.0.1', port: d.port, path: '/tool/read_file',
                               method: 'POST', agent,
                               headers: { 'Content-Type': 'application/json',
                                          'Content-Length': body.length } }, (res) => {
      let t = '';
      res.on('data', (c) => { t += c; });
      res.on('end', () => resolve(JSON.parse(t)));
    });
    req.on('error', reject);
    req.end(body);
  });
  const probe = sessions[EXECS];
  const lat = { tool: [], mcp: [] };
  for (let i = 0; i < PROBES; i++) {
    let t0 = process.hrtime.bigint();
    const a = await tool();
    lat.tool.push(Number(process.hrtime.bigint() - t0) / 1e6);
    assert.equal(a.ok, true, JSON.stringify(a).slice(0, 300));
    assert.equal(a.result, content);
    t0 = process.hrtime.bigint();
    const m = await probe.post({ jsonrpc: '2.0', id: i, method: 'tools/call',
                                 params: { name: 'read_file', arguments: { path: '/probe.txt' } } });
    lat.mcp.push(Number(process.hrtime.bigint() - t0) / 1e6);
    assert.equal(m.status, 200, m.text);
    assert.equal(m.body.result.content[0].text, content);
  }
  agent.destroy();
  const probed = memoryOf(d.pid);
  for (const k of ['tool', 'mcp']) {
    const s = lat[k].sort((x, y) => x - y);
    console.log(`# read_file 4 KiB over ${k === 'tool' ? 'POST /tool' : '/mcp'} under load: ` +
                `p50 ${percentile(s, 50).toFixed(2)} ms, p99 ${percentile(s, 99).toFixed(2)} ms`);
  }
  console.log(`# RSS: ${base.rssKiB} KiB idle, ${loaded.rssKiB} KiB with ${SESSIONS} sessions, ` +
              `streams, execs and polls, ${probed.rssKiB} KiB after ${2 * PROBES} probes; ` +
              `threads ${probed.threads}`);
  if (!isSanitized())
    assert.ok(probed.rssKiB < loaded.rssKiB + 2048,
              `RSS flat while probing: ${loaded.rssKiB} -> ${probed.rssKiB} KiB`);

  // Every exec is answered once killed (the queued ones too).
  for (const p of await ours()) await d.call('kill', { pid: p.pid, signal: 'KILL' });
  for (const r of await Promise.all(execs)) {
    assert.equal(r.status, 200, r.text);
    const sc = r.body.result.structuredContent;
    assert.ok(r.body.result.isError || /stopped by kill/.test(sc?.killed), r.text);
  }
  for (const p of plugins) await p.stop();
  for (const s of streams) s.destroy();
  await until('the streams closed', async () => (await d.get('/health')).body.mcp.streams === 0);
  const stream = (await d.get('/health')).body.calls.stream;
  assert.equal(stream.in_use, 0, JSON.stringify(stream));
});

test('with few workers (--http-threads 32) streams take at most half; requests still answer', async () => {
  const small = await startDaemon({ workspace: ':memory:', args: ['--http-threads', '32'] });
  const held = [];
  try {
    assert.equal((await small.get('/health')).body.calls.stream.max, 16);
    const sessions = [];
    for (let i = 0; i < 17; i++) sessions.push(await mcpSession(small));
    const open = (s) => new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: small.port, path: '/mcp', agent: false,
                                 headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': s.id } });
      req.on('response', (res) => {
        held.push(req);
        if (res.statusCode === 200) {
          res.on('data', () => {});
          resolve(200);
          return;
        }
        let t = '';
        res.on('data', (c) => { t += c; });
        res.on('end', () => resolve({ status: res.statusCode, text: t }));
      });
      req.on('error', (e) => (held.includes(req) ? null : reject(e)));
      req.end();
    });
    for (let i = 0; i < 16; i++) assert.equal(await open(sessions[i]), 200, `stream ${i}`);
    const refused = await open(sessions[16]);
    assert.equal(refused.status, 503, JSON.stringify(refused));
    assert.match(JSON.parse(refused.text).error.message, /runboxd is busy: 16 open streams/);
    // The other 16 workers still serve requests.
    const r = await small.call('list_dir', { path: '/' });
    assert.equal(r.body.ok, true);
    const m = await sessions[16].post({ jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.equal(m.status, 200, m.text);
  } finally {
    for (const req of held) req.destroy();
    await small.stop();
  }
});

test('at --mcp-sessions, a new session takes the place of the least recently used idle one; ' +
     'sessions in use are never ended for it', async () => {
  const own = await startDaemon({ workspace: ':memory:', args: ['--mcp-sessions', '4'] });
  const held = [];
  try {
    const s = [];
    for (let i = 0; i < 4; i++) s.push(await mcpSession(own));
    for (const x of s.slice(1)) // s[0] is now the least recently used
      assert.equal((await x.post({ jsonrpc: '2.0', id: 1, method: 'ping' })).status, 200);
    s.push(await mcpSession(own)); // the fifth: it fits, in s[0]'s place
    const gone = await s[0].post({ jsonrpc: '2.0', id: 2, method: 'ping' });
    assert.equal(gone.status, 404, gone.text);
    for (const x of s.slice(1))
      assert.equal((await x.post({ jsonrpc: '2.0', id: 3, method: 'ping' })).status, 200);
    // Now every session holds a GET stream: none may be ended, the next one is refused.
    for (const x of s.slice(1)) {
      await new Promise((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: own.port, path: '/mcp', agent: false,
                                   headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': x.id } },
                                 (res) => { res.on('data', () => {}); held.push(req); resolve(); });
        req.on('error', (e) => (held.includes(req) ? null : reject(e)));
        req.end();
      });
    }
    const full = await mcpPost(own.port, initializeMessage());
    assert.equal(full.status, 503, full.text);
    assert.match(full.body.error.message, /4 MCP sessions open.*raise --mcp-sessions/);
    for (const x of s.slice(1))
      assert.equal((await x.post({ jsonrpc: '2.0', id: 4, method: 'ping' })).status, 200);
  } finally {
    for (const r of held) r.destroy();
    await own.stop();
  }
});
