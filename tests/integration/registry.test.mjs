// The outbound registry against real MCP servers from npm, started by the test itself:
// @modelcontextprotocol/server-filesystem over stdio, @modelcontextprotocol/server-everything
// over stdio, legacy SSE and Streamable HTTP, an SDK server over WebSocket (tests/lib/
// mcpservers.mjs), and the same test server over stdio. One client of each of runboxd's
// transports (POST /tool, /mcp, /sse, /ws) sees and calls the same external tools.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync,
         writeFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startDaemon } from '../lib/daemon.mjs';
import { resultText, startProxy } from '../lib/proxy.mjs';
import { serverPaths } from '../lib/readable.mjs';
import { startHttpServer, startWsServer } from '../lib/mcpservers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
// Paths runboxd's account can read (a copy when the checkout is under a private home).
const readable = serverPaths();
const modules = path.join(readable.modules, '@modelcontextprotocol');
const everything = path.join(modules, 'server-everything', 'dist', 'index.js');
const filesystem = path.join(modules, 'server-filesystem', 'dist', 'index.js');
const testServerScript = path.join(readable.lib, 'mcpservers.mjs');

const tmp = mkdtempSync(path.join(os.tmpdir(), 'registry-test-'));
chmodSync(tmp, 0o755); // runboxd started as root serves as nobody: its servers read here
const children = [];
const wsEvents = { cancelled: [], headers: [], started: 0 };
let daemon, ws, ws2;

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

// Starts server-everything in an HTTP mode on a free port; resolves once it says it listens.
async function startEverything(mode) {
  const port = await freePort();
  const child = spawn(process.execPath, [everything, mode], {
    env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  await new Promise((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (c) => {
      err += c;
      if (/listening on port|running on port/i.test(err)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server-everything ${mode} exited ${code}: ${err}`)));
  });
  return port;
}

async function servers() {
  return (await daemon.get('/mcp-servers')).body.servers;
}

// Waits until server `name` is in state `state` (and, with since, has restarted past it).
async function waitState(name, state, pred = () => true) {
  for (;;) {
    const s = (await servers()).find((x) => x.name === name);
    if (s && s.state === state && pred(s)) return s;
    await new Promise((r) => setTimeout(r, 25));
  }
}

// Waits until the console has a line from mcp:<name> matching re.
async function waitConsole(name, re) {
  for (;;) {
    const r = await daemon.call('console_logs', { source: 'mcp', limit: 1000 });
    const entries = r.body.result.entries;
    if (entries.some((e) => e.source === `mcp:${name}` && re.test(e.message))) return;
    await new Promise((r2) => setTimeout(r2, 25));
  }
}

before(async () => {
  const [httpPort, ssePort] = await Promise.all([startEverything('streamableHttp'),
                                                 startEverything('sse')]);
  ws = await startWsServer('w', {
    started: () => { wsEvents.started++; },
    cancelled: (n) => wsEvents.cancelled.push(n),
    headers: (h) => wsEvents.headers.push(h),
  });
  ws2 = await startWsServer('w2');
  const config = {
    mcpServers: {
      fs: { command: process.execPath, args: [filesystem, tmp] },
      ev: { command: process.execPath, args: [everything, 'stdio'] },
      evhttp: { url: `http://127.0.0.1:${httpPort}/mcp` },
      evsse: { url: `http://127.0.0.1:${ssePort}/sse`, type: 'sse' },
      // No type: Streamable HTTP first, then legacy SSE when the POST is refused.
      evfall: { url: `http://127.0.0.1:${ssePort}/sse` },
      w: { url: ws.url, headers: { Authorization: 'Bearer ${env:REGISTRY_TEST_TOKEN}' } },
      w2: { url: ws2.url, tools: ['echo', 'no_such_tool'] },
      st: { command: process.execPath, args: [testServerScript, 'stdio', 'st'], timeout_ms: 60000 },
      off: { command: process.execPath, args: [everything, 'stdio'], enabled: false },
    },
  };
  writeFileSync(path.join(tmp, 'config.json'), JSON.stringify(config));
  writeFileSync(path.join(tmp, 'hello.txt'), 'hello from the filesystem server');
  daemon = await startDaemon({ workspace: ':memory:', args: ['--config', path.join(tmp, 'config.json')],
                               env: { REGISTRY_TEST_TOKEN: 'tok-123' } });
  await Promise.all(['fs', 'ev', 'evhttp', 'evsse', 'evfall', 'w', 'w2', 'st'].map((n) => waitState(n, 'ready')));
});

after(async () => {
  await daemon?.stop();
  await ws?.close();
  await ws2?.close();
  for (const c of children) c.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
});

test('every server is ready with its transport, protocol and counts; a disabled one is listed', async () => {
  const list = await servers();
  const by = Object.fromEntries(list.map((s) => [s.name, s]));
  assert.equal(by.fs.transport, 'stdio');
  assert.equal(by.evhttp.transport, 'http');
  assert.equal(by.evsse.transport, 'sse');
  assert.equal(by.w.transport, 'ws');
  assert.equal(by.evfall.transport, 'sse', 'what it speaks after the fallback');
  for (const n of ['fs', 'ev', 'evhttp', 'evsse', 'evfall', 'w', 'st']) {
    assert.equal(by[n].protocol, '2025-11-25', n);
    assert.ok(by[n].tools > 0, n);
  }
  assert.ok(by.ev.prompts > 0 && by.ev.resources > 0);
  assert.equal(by.off.state, 'disabled');
  assert.match(by.w2.warning, /tools names no_such_tool, which the server does not have/);
  const health = (await daemon.get('/health')).body;
  assert.equal(health.mcp_servers.configured, 9);
  assert.equal(health.mcp_servers.ready, 8);
  assert.equal(health.mcp_servers.servers.off, 'disabled');
  const tool = await daemon.call('mcp_servers', { name: 'evsse' });
  assert.equal(tool.body.result.servers.length, 1);
  assert.equal(tool.body.result.servers[0].state, 'ready');
  // The servers over HTTP and WebSocket had runboxd load libcurl and OpenSSL (common/dynlib.h);
  // a daemon without such servers maps neither (daemon_server.test.mjs).
  const maps = readFileSync(`/proc/${daemon.pid}/maps`, 'utf8');
  assert.match(maps, /\/libcurl\.so/);
  assert.match(maps, /\/libssl\.so/);
});

test('GET /tools lists the external tools as <server>__<tool> in the allowed form', async () => {
  const tools = (await daemon.get('/tools')).body.tools;
  const names = tools.map((t) => t.name);
  for (const n of ['fs__list_directory', 'fs__read_text_file', 'ev__echo', 'evhttp__echo',
                   'evsse__echo', 'w__echo', 'w2__echo', 'st__slow', 'read_file', 'exec'])
    assert.ok(names.includes(n), n);
  assert.ok(!names.includes('w2__slow'), 'the allow list keeps only echo');
  for (const n of names) assert.match(n, /^[A-Za-z0-9_-]{1,64}$/);
  const echo = tools.find((t) => t.name === 'ev__echo');
  assert.equal(echo._meta['runbox/server'], 'ev');
  assert.equal(echo.inputSchema.type, 'object');
});

test('POST /tool calls each upstream, by served name, server/tool, and the bare name', async () => {
  for (const n of ['ev', 'evhttp', 'evsse', 'evfall']) {
    const r = await daemon.call(`${n}__echo`, { message: n });
    assert.equal(r.status, 200);
    assert.deepEqual([r.body.ok, r.body.result], [true, `Echo: ${n}`]);
  }
  const slash = await daemon.call('w/echo', { message: 'slash' });
  assert.equal(slash.body.result, 'w: slash');
  assert.equal(wsEvents.headers.at(-1).authorization, 'Bearer tok-123', 'the config header, from ${env:}');
  const fs = await daemon.call('fs__read_text_file', { path: path.join(tmp, 'hello.txt') });
  assert.equal(fs.body.ok, true, JSON.stringify(fs.body));
  assert.match(JSON.stringify(fs.body.result), /hello from the filesystem server/);
  // Runbox's own read_file wins the bare name; the server's stays reachable as fs__read_file.
  const own = await daemon.call('read_file', { path: '/nothing-here' });
  assert.match(own.body.error, /no such file|not found/i);
  // A bare name several servers have is an error naming the candidates.
  const amb = await daemon.call('echo', { message: 'x' });
  assert.equal(amb.status, 404);
  assert.match(amb.body.error, /ambiguous/);
  assert.match(amb.body.error, /ev__echo/);
  assert.match(amb.body.error, /w2__echo/);
  // The upstream's schema is checked by runbox's validator where it can.
  const bad = await daemon.call('ev__get-sum', { a: 1, b: 'two' });
  assert.equal(bad.status, 400);
  assert.match(bad.body.error, /arguments\.b: expected number, got string/);
});

async function mcpClient(kind) {
  const base = new URL(daemon.url);
  const client = new Client({ name: `registry-${kind}`, version: '1.0.0' });
  const transport = kind === 'mcp' ? new StreamableHTTPClientTransport(new URL('/mcp', base))
    : kind === 'sse' ? new SSEClientTransport(new URL('/sse', base))
      : new WebSocketClientTransport(new URL(`ws://127.0.0.1:${daemon.port}/ws`));
  await client.connect(transport);
  return client;
}

for (const kind of ['mcp', 'sse', 'ws']) {
  test(`an MCP client on /${kind} sees and calls the same external tools`, async () => {
    const client = await mcpClient(kind);
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const n of ['fs__list_directory', 'ev__echo', 'evhttp__echo', 'evsse__echo', 'w__echo'])
        assert.ok(names.includes(n), `${kind}: ${n}`);
      for (const n of ['ev__echo', 'evhttp__echo', 'evsse__echo']) {
        const r = await client.callTool({ name: n, arguments: { message: kind } });
        assert.deepEqual(r.content, [{ type: 'text', text: `Echo: ${kind}` }]);
      }
      const img = await client.callTool({ name: 'ev__get-tiny-image', arguments: {} });
      assert.ok(img.content.some((c) => c.type === 'image'), 'content other than text passes through');
      const alias = await client.callTool({ name: 'w/echo', arguments: { message: 'alias' } });
      assert.equal(alias.content[0].text, 'w: alias');
      const { prompts } = await client.listPrompts();
      assert.ok(prompts.some((p) => p.name.startsWith('ev__')), 'external prompts are listed');
      const p = prompts.find((x) => x.name === 'ev__simple-prompt') ?? prompts.find((x) => x.name.startsWith('ev__') && !(x.arguments || []).some((a) => a.required));
      const got = await client.getPrompt({ name: p.name, arguments: {} });
      assert.ok(got.messages.length > 0);
      const { resources } = await client.listResources();
      const ext = resources.find((r) => r.uri.startsWith('demo://') || r.uri.startsWith('test://'));
      assert.ok(ext, 'external resources are listed');
      const read = await client.readResource({ uri: ext.uri });
      assert.ok(read.contents.length > 0);
    } finally {
      await client.close();
    }
  });
}

test('progress from the upstream reaches the client; a cancelled call cancels the upstream call', async () => {
  const client = await mcpClient('mcp');
  try {
    const ac = new AbortController();
    const progress = [];
    const before = wsEvents.cancelled.length;
    const call = client.callTool({ name: 'w__slow', arguments: { ms: 600000 } }, undefined, {
      signal: ac.signal,
      onprogress: (p) => { progress.push(p); ac.abort(); },
    });
    await assert.rejects(call);
    assert.equal(progress[0].progress, 1);
    assert.equal(progress[0].message, 'started');
    while (wsEvents.cancelled.length === before) await new Promise((r) => setTimeout(r, 20));
    assert.equal(wsEvents.cancelled.at(-1), 'w');
    // The server still serves.
    const r = await client.callTool({ name: 'w__echo', arguments: { message: 'still' } });
    assert.equal(r.content[0].text, 'w: still');
  } finally {
    await client.close();
  }
});

test('list_changed from an upstream reaches an /mcp client and the new tool is callable', async () => {
  const client = await mcpClient('mcp');
  try {
    const changed = new Promise((resolve) =>
      client.setNotificationHandler(ToolListChangedNotificationSchema, resolve));
    await client.callTool({ name: 'w__add_tool', arguments: { tool: 'fresh' } });
    await changed;
    let names = [];
    while (!names.includes('w__fresh')) {
      names = (await client.listTools()).tools.map((t) => t.name);
      if (!names.includes('w__fresh')) await new Promise((r) => setTimeout(r, 20));
    }
    const r = await client.callTool({ name: 'w__fresh', arguments: {} });
    assert.equal(r.content[0].text, 'w: fresh ran');
    assert.ok((await daemon.get('/tools')).body.tools.some((t) => t.name === 'w__fresh'));
  } finally {
    await client.close();
  }
});

test('an upstream killed mid-call fails that call with its name; the next call works after the restart', async () => {
  const st = await waitState('st', 'ready');
  const call = daemon.call('st__slow', { ms: 600000 });
  await waitConsole('st', /slow call started/);
  process.kill(st.pid, 'SIGKILL');
  const r = await call;
  assert.equal(r.body.ok, false);
  assert.match(r.body.error, /^st: was killed by signal 9/);
  assert.match(r.body.error, /its last stderr lines: .*slow call started/);
  const again = await waitState('st', 'ready', (s) => s.restarts >= 1 && s.pid !== st.pid);
  assert.match(again.last_error, /killed by signal 9/);
  const ok = await daemon.call('st__echo', { message: 'back' });
  assert.equal(ok.body.result, 'st: back');
});

test('a client that drops its POST /tool cancels the upstream call', async () => {
  const before = wsEvents.cancelled.length, started = wsEvents.started;
  const http = await import('node:http');
  const req = http.request({ host: '127.0.0.1', port: daemon.port, path: '/tool/w__slow',
                             method: 'POST', headers: { 'Content-Type': 'application/json' } });
  req.on('error', () => {});
  req.end(JSON.stringify({ ms: 600000 }));
  // Once the upstream runs the call, hang up.
  while (wsEvents.started === started) await new Promise((r) => setTimeout(r, 20));
  req.destroy();
  while (wsEvents.cancelled.length === before) await new Promise((r) => setTimeout(r, 20));
  assert.equal(wsEvents.cancelled.at(-1), 'w');
});

// A Streamable HTTP POST's worker waits for the answer anyway, so a call of an external tool
// that asks for no progress runs there (no thread of its own); these are the ways such a call
// is cancelled.
async function rawSession() {
  const http = await import('node:http');
  const post = (body, session) => new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: daemon.port, path: '/mcp', method: 'POST',
                               headers: { 'Content-Type': 'application/json',
                                          Accept: 'application/json, text/event-stream',
                                          ...(session ? { 'Mcp-Session-Id': session,
                                                          'MCP-Protocol-Version': '2025-11-25' } : {}) } },
                             (res) => { let t = ''; res.on('data', (c) => { t += c; });
                                        res.on('end', () => resolve({ res, text: t })); });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
  const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize',
                            params: { protocolVersion: '2025-11-25', capabilities: {},
                                      clientInfo: { name: 'raw', version: '1' } } });
  const id = init.res.headers['mcp-session-id'];
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, id);
  return { id, post: (body) => post(body, id), http };
}

const threadsOf = async (pid) => (await import('node:fs')).readdirSync(`/proc/${pid}/task`);

test('an /mcp call of an external tool runs on its POST\'s worker: no thread is started for it', async () => {
  const s = await rawSession();
  const before = new Set(await threadsOf(daemon.pid)), started = wsEvents.started;
  const call = s.post({ jsonrpc: '2.0', id: 2, method: 'tools/call',
                        params: { name: 'w__slow', arguments: { ms: 600000 } } });
  while (wsEvents.started === started) await new Promise((r) => setTimeout(r, 20));
  const during = (await threadsOf(daemon.pid)).filter((t) => !before.has(t));
  const cancelledBefore = wsEvents.cancelled.length;
  await s.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } });
  while (wsEvents.cancelled.length === cancelledBefore) await new Promise((r) => setTimeout(r, 20));
  assert.equal(wsEvents.cancelled.at(-1), 'w', 'notifications/cancelled reaches the upstream');
  const answer = await call; // a cancelled request gets no answer: its POST ends
  assert.equal(answer.res.statusCode, 200);
  assert.doesNotMatch(answer.text, /"id":2/);
  assert.deepEqual(during, [], 'threads started while the call ran');
});

test('a client that drops its /mcp POST of an external tool cancels the upstream call', async () => {
  const s = await rawSession();
  const before = wsEvents.cancelled.length, started = wsEvents.started;
  const req = s.http.request({ host: '127.0.0.1', port: daemon.port, path: '/mcp', method: 'POST',
                               headers: { 'Content-Type': 'application/json',
                                          Accept: 'application/json, text/event-stream',
                                          'Mcp-Session-Id': s.id, 'MCP-Protocol-Version': '2025-11-25' } });
  req.on('error', () => {});
  req.end(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call',
                           params: { name: 'w__slow', arguments: { ms: 600000 } } }));
  while (wsEvents.started === started) await new Promise((r) => setTimeout(r, 20));
  req.destroy();
  while (wsEvents.cancelled.length === before) await new Promise((r) => setTimeout(r, 20));
  assert.equal(wsEvents.cancelled.at(-1), 'w');
  const r = await s.post({ jsonrpc: '2.0', id: 4, method: 'tools/call',
                           params: { name: 'w__echo', arguments: { message: 'after' } } });
  assert.match(r.text, /w: after/);
});

// Requests to a stdio server are written by the calling thread when nothing waits before them
// (a line of at most PIPE_BUF bytes, which a pipe takes whole), else queued for the server's
// thread: mixed small and large ones in flight together must reach it as whole lines.
test('small and large requests in flight together to one stdio server all come back whole', async () => {
  const sizes = [10, 5000, 20, 100000, 30, 4095, 4096, 40, 70000, 50];
  const results = await Promise.all(sizes.map((n, i) => {
    const message = `${i}:` + 'x'.repeat(n);
    return daemon.call('ev__echo', { message }).then((r) => ({ r, message }));
  }));
  for (const { r, message } of results) {
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.equal(r.body.ok, true, r.text.slice(0, 300));
    assert.equal(r.body.result, `Echo: ${message}`);
  }
});

test('16 calls in flight to 4 upstreams at once', async () => {
  // Four WebSocket servers whose calls wait at one gate until all 16 have started: the gate
  // only opens if runboxd really has them all in flight together.
  let started = 0, open;
  const gate = new Promise((resolve) => { open = resolve; });
  const events = { started: () => { if (++started === 16) open(); }, gate: () => gate };
  const four = await Promise.all([0, 1, 2, 3].map((i) => startWsServer(`g${i}`, events)));
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', writeConfig('gates', {
    mcpServers: Object.fromEntries(four.map((s, i) => [`g${i}`, { url: s.url, timeout_ms: 60000 }])),
  })] });
  try {
    for (;;) {
      const st = (await d.get('/mcp-servers')).body.servers;
      if (st.every((s) => s.state === 'ready')) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const calls = [];
    for (let i = 0; i < 16; i++) calls.push(d.call(`g${i % 4}__slow`, { ms: 1 }));
    const answers = await Promise.all(calls);
    for (let i = 0; i < 16; i++)
      assert.equal(answers[i].body.result, `g${i % 4}: through the gate`, JSON.stringify(answers[i].body));
    assert.equal(started, 16);
  } finally {
    await d.stop();
    await Promise.all(four.map((s) => s.close()));
  }
});

// A call to a stdio server reads the server's answers on its own worker while it waits (the
// reader's turn, daemon/mcpclient.c), and hands the turn on: calls in flight together, progress,
// cancellation, a timeout, an answer over the limit, list_changed and the server's exit between
// calls must all still reach the right place.
test('calls to a stdio server read its answers themselves: progress, cancel, timeout, the size limit and list_changed still work', async () => {
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', writeConfig('lent', {
    // sx serves the calls that must all come back, with room for a loaded machine (a sanitizer
    // build with both cores busy took over 3 s for 16 calls with a 17 MiB answer among them);
    // sy, the same server, the call that must time out.
    mcpServers: { sx: { command: process.execPath, args: [testServerScript, 'stdio', 'sx'], timeout_ms: 60000 },
                  sy: { command: process.execPath, args: [testServerScript, 'stdio', 'sy'], timeout_ms: 3000 } },
  })] });
  const sx = async (pred = () => true, name = 'sx') => {
    for (;;) {
      const s = (await d.get('/mcp-servers')).body.servers.find((x) => x.name === name);
      if (s.state === 'ready' && pred(s)) return s;
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  const consoleHas = async (re) => {
    for (;;) {
      const r = await d.call('console_logs', { source: 'mcp', limit: 1000 });
      if (r.body.result.entries.some((e) => e.source === 'mcp:sx' && re.test(e.message))) return;
      await new Promise((r2) => setTimeout(r2, 25));
    }
  };
  const client = new Client({ name: 'registry-lent', version: '1.0.0' });
  try {
    const first = await sx();
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', d.url)));
    // Progress reaches the client, and its cancellation reaches the server.
    const ac = new AbortController();
    const progress = [];
    await assert.rejects(client.callTool({ name: 'sx__slow', arguments: { ms: 600000 } }, undefined, {
      signal: ac.signal, onprogress: (p) => { progress.push(p); ac.abort(); } }));
    assert.equal(progress[0].message, 'started');
    await consoleHas(/slow call cancelled/);
    // Many in flight together, slow and quick, one over the size limit: each gets its own.
    const calls = [];
    for (let i = 0; i < 12; i++) calls.push(d.call('sx__echo', { message: `m${i}` }));
    for (let i = 0; i < 3; i++) calls.push(d.call('sx__slow', { ms: 100 * (i + 1) }));
    calls.push(d.call('sx__huge', { mb: 17 }));
    const answers = await Promise.all(calls);
    for (let i = 0; i < 12; i++) assert.equal(answers[i].body.result, `sx: m${i}`, JSON.stringify(answers[i].body));
    for (let i = 12; i < 15; i++) assert.equal(answers[i].body.result, 'sx: slept', JSON.stringify(answers[i].body));
    assert.equal(answers[15].body.ok, false);
    assert.match(answers[15].body.error, /over runbox's limit/);
    // A call past the server's timeout_ms fails alone; the server is told, and still serves.
    await sx(() => true, 'sy');
    const late = await d.call('sy__slow', { ms: 600000 });
    assert.equal(late.body.ok, false);
    assert.match(late.body.error, /sy did not answer tools\/call within 3000 ms/);
    const r = await client.callTool({ name: 'sy__echo', arguments: { message: 'after' } });
    assert.equal(r.content[0].text, 'sy: after');
    // list_changed, read by the worker of the call that caused it, reaches runboxd's list.
    await d.call('sx__add_tool', { tool: 'fresh' });
    while (!(await d.get('/tools')).body.tools.some((t) => t.name === 'sx__fresh'))
      await new Promise((r2) => setTimeout(r2, 20));
    assert.equal((await d.call('sx__fresh', {})).body.result, 'sx: fresh ran');
    // The server's exit between calls is noticed: it restarts and serves again.
    process.kill(first.pid, 'SIGKILL');
    await sx((s) => s.restarts >= 1 && s.pid !== first.pid);
    assert.equal((await d.call('sx__echo', { message: 'back' })).body.result, 'sx: back');
  } finally {
    await client.close();
    await d.stop();
  }
});

test('an answer runbox cannot read fails its call at once, saying why; one with a NUL is kept', async () => {
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', writeConfig('raw', {
    mcpServers: { raw: { command: process.execPath, args: [testServerScript, 'raw', 'raw'], timeout_ms: 30000 } },
  })] });
  try {
    for (;;) {
      const s = (await d.get('/mcp-servers')).body.servers.find((x) => x.name === 'raw');
      if (s.state === 'ready') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    // A NUL is not something cJSON can hold: it comes back as U+FFFD, the rest of the text kept.
    assert.equal((await d.call('raw__nul', {})).body.result, 'a\ufffdb');
    const why = {
      deep: /raw answered with JSON runbox cannot read \(JSON nests deeper than 64 levels\)/,
      broken: /raw answered with JSON runbox cannot read \(invalid JSON at byte \d+: unexpected end of input\)/,
      ctrl: /raw answered with JSON runbox cannot read \(invalid JSON at byte \d+: control character 0x01 inside a string must be escaped\)/,
    };
    for (const [tool, re] of Object.entries(why)) {
      const t0 = Date.now();
      const r = await d.call(`raw__${tool}`, {});
      assert.equal(r.body.ok, false, JSON.stringify(r.body));
      assert.match(r.body.error, re);
      // It failed on the answer, not at the server's 30 s timeout.
      assert.ok(Date.now() - t0 < 15000, `${tool} took ${Date.now() - t0} ms`);
    }
    // The server is still in use: nothing else was dropped.
    assert.equal((await d.call('raw__echo', { message: 'still here' })).body.result, 'raw: still here');
    const s = (await d.get('/mcp-servers')).body.servers.find((x) => x.name === 'raw');
    assert.equal(s.restarts, 0);
  } finally {
    await d.stop();
  }
});

test('a server that writes no JSON-RPC in answer to initialize fails at its timeout, quoting what it wrote', async () => {
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', writeConfig('junk', {
    mcpServers: { junk: { command: process.execPath, args: [testServerScript, 'raw', 'junk'],
                          env: { RAW_INIT: 'junk' }, timeout_ms: 1500 } },
  })] });
  try {
    let s;
    for (let i = 0; i < 400; i++) {
      s = (await d.get('/mcp-servers')).body.servers.find((x) => x.name === 'junk');
      if (s.state === 'failed') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.equal(s.state, 'failed');
    assert.match(s.last_error, /did not finish initializing within 1500 ms \(timeout_ms\); it wrote 2 messages that were no JSON-RPC runbox could use, the last: \{\}/);
  } finally {
    await d.stop();
  }
});

test('an HTTP server gone mid-call fails that call saying the request was sent and no answer came', async () => {
  const hs = await startHttpServer('hk');
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', writeConfig('gone', {
    mcpServers: { hk: { url: hs.url, timeout_ms: 60000 } },
  })] });
  try {
    for (;;) {
      const s = (await d.get('/mcp-servers')).body.servers.find((x) => x.name === 'hk');
      if (s.state === 'ready') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const t0 = Date.now();
    const call = d.call('hk__slow', { ms: 30000 });
    await new Promise((r) => setTimeout(r, 500));
    await hs.close();
    const r = await call;
    assert.equal(r.body.ok, false, JSON.stringify(r.body));
    assert.match(r.body.error, /^hk: tools\/call was sent to http:\/\/127\.0\.0\.1:\d+\/mcp, but no answer came back: /);
    assert.ok(Date.now() - t0 < 20000, 'it failed when the server went, not at its timeout');
  } finally {
    await d.stop();
  }
});

test('a tool\'s own _meta and icons reach every client, beside where it comes from; execution does not', async () => {
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', writeConfig('extras', {
    mcpServers: { raw: { command: process.execPath, args: [testServerScript, 'raw', 'raw'] } },
  })] });
  const p = startProxy({ daemonUrl: d.url });
  const client = new Client({ name: 'registry-extras', version: '1.0.0' });
  try {
    for (;;) {
      const s = (await d.get('/mcp-servers')).body.servers.find((x) => x.name === 'raw');
      if (s.state === 'ready') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const check = (t, who) => {
      assert.ok(t, `${who}: raw__echo is listed`);
      assert.deepEqual(t._meta.ui, { resourceUri: 'ui://raw/echo' }, who);
      // Where the tool comes from is runbox's to say, not the server's.
      assert.equal(t._meta['runbox/server'], 'raw', who);
      assert.equal(t._meta['runbox/tool'], 'echo', who);
      assert.deepEqual(t.icons, [{ src: 'https://example.com/echo.png', mimeType: 'image/png', sizes: ['48x48'] }], who);
      assert.equal(t.execution, undefined, `${who}: runbox runs no tasks, so none is offered`);
    };
    check((await d.get('/tools')).body.tools.find((t) => t.name === 'raw__echo'), 'GET /tools');
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', d.url)));
    check((await client.listTools()).tools.find((t) => t.name === 'raw__echo'), '/mcp');
    // A tool without any lists none.
    const nul = (await client.listTools()).tools.find((t) => t.name === 'raw__nul');
    assert.equal(nul.icons, undefined);
    assert.deepEqual(Object.keys(nul._meta).sort(), ['runbox/server', 'runbox/tool']);
    await p.initialize();
    let listed; // runbox reads runboxd's external tools in the background
    for (let i = 0; !listed && i < 200; i++) {
      listed = (await p.request('tools/list', {})).result.tools.find((x) => x.name === 'raw__echo');
      if (!listed) await new Promise((r) => setTimeout(r, 50));
    }
    check(listed, 'runbox');
    assert.equal((await client.callTool({ name: 'raw__echo', arguments: { message: 'm' } })).content[0].text, 'raw: m');
  } finally {
    await client.close();
    await p.close();
    await d.stop();
  }
});

test('an HTTP server answering past the size limit fails that call at once, as JSON or as an event stream; runboxd goes on', async () => {
  const [json, sse] = await Promise.all([startHttpServer('hj', { json: true }), startHttpServer('hs')]);
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', writeConfig('huge', {
    mcpServers: { hj: { url: json.url, timeout_ms: 30000 }, hs: { url: sse.url, timeout_ms: 30000 } },
  })] });
  try {
    for (const name of ['hj', 'hs']) {
      for (;;) {
        const s = (await d.get('/mcp-servers')).body.servers.find((x) => x.name === name);
        if (s.state === 'ready') break;
        await new Promise((r) => setTimeout(r, 25));
      }
    }
    for (const name of ['hj', 'hs']) {
      const t0 = Date.now();
      const r = await d.call(`${name}__huge`, { mb: 17 });
      assert.equal(r.body.ok, false, JSON.stringify(r.body).slice(0, 300));
      assert.match(r.body.error, new RegExp(`^${name} answered with \\d+ bytes, over runbox's limit of 16777216 bytes`));
      // On the answer, not at the server's 30 s timeout.
      assert.ok(Date.now() - t0 < 15000, `${name}: ${Date.now() - t0} ms`);
      assert.equal((await d.call(`${name}__echo`, { message: 'after' })).body.result, `${name}: after`);
    }
    assert.equal((await d.get('/health')).body.ok, true);
  } finally {
    await d.stop();
    await json.close();
    await sse.close();
  }
});

test('a call reaches the server whose tool it is, when a prefix is another server\'s name or two names sanitise alike; "tools": [] serves none', async () => {
  // x serves its tools as y__*, beside a server named y; "a.b" and "a_b" both serve as a_b__*.
  const raw = (label) => ({ command: process.execPath, args: [testServerScript, 'raw', label] });
  const label = { x: 'X', y: 'Y', 'a.b': 'AdotB', a_b: 'AunderB' };
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', writeConfig('names', {
    mcpServers: { x: { ...raw('X'), prefix: 'y' }, y: raw('Y'), 'a.b': raw('AdotB'), a_b: raw('AunderB'),
                  none: { ...raw('N'), tools: [] } },
  })] });
  const p = startProxy({ daemonUrl: d.url });
  try {
    for (;;) {
      const s = (await d.get('/mcp-servers')).body.servers;
      if (s.filter((x) => x.state === 'ready').length === 5) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    // An empty allow list ("tools": []) serves none of the server's tools.
    assert.ok(!(await d.get('/tools')).body.tools.some((t) => t._meta?.['runbox/server'] === 'none'));
    // Every served echo runs on the server its _meta names.
    const echoes = (await d.get('/tools')).body.tools.filter((t) => t._meta?.['runbox/tool'] === 'echo');
    assert.equal(echoes.length, 4, JSON.stringify(echoes.map((t) => t.name)));
    for (const t of echoes) {
      const who = label[t._meta['runbox/server']];
      assert.equal((await d.call(t.name, { message: 'm' })).body.result, `${who}: m`, t.name);
    }
    // <server>/<tool>: a server's name wins over another's prefix; a prefix alone still works.
    await p.initialize();
    for (const [alias, who] of [['y/echo', 'Y'], ['x/echo', 'X'], ['a.b/echo', 'AdotB'], ['a_b/echo', 'AunderB']]) {
      assert.equal((await d.call(alias, { message: 'm' })).body.result, `${who}: m`, alias);
      assert.equal(resultText(await p.callTool(alias, { message: 'm' })), `${who}: m`, `${alias} through runbox`);
    }
  } finally {
    await p.close();
    await d.stop();
  }
});

test('a server whose tools/list goes round in circles is read once; a prompt may have a tool\'s name; each warning is logged once', async () => {
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', writeConfig('loop', {
    mcpServers: { loop: { command: process.execPath, args: [testServerScript, 'raw', 'L'], env: { RAW_LOOP: '1' } },
                  // Exits at once, every time: its retries rebuild the lists again and again.
                  gone: { command: process.execPath, args: ['-e', 'process.exit(3)'] },
                  // 50 characters of prefix: its served names are over 45, which is warned about.
                  long: { command: process.execPath, args: [testServerScript, 'raw', 'G'], prefix: 'p'.repeat(50) },
                  // More tools than runbox keeps of one server.
                  many: { command: process.execPath, args: [testServerScript, 'raw', 'M'], env: { RAW_MANY: '4200' } } },
  })] });
  try {
    for (;;) {
      const s = (await d.get('/mcp-servers')).body.servers;
      if (['loop', 'long', 'many'].every((n) => s.find((x) => x.name === n).state === 'ready') &&
          s.find((x) => x.name === 'gone').restarts >= 3) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const names = (await d.get('/tools')).body.tools.map((t) => t.name).filter((n) => n.startsWith('loop__')).sort();
    assert.deepEqual(names, ['loop__broken', 'loop__ctrl', 'loop__deep', 'loop__echo', 'loop__nul']);
    assert.match(d.stderr(), /mcp loop: tools\/list repeats itself .* the list ends at page 2/);
    // The items past the limit are left out, and the log says so.
    assert.equal((await d.get('/mcp-servers')).body.servers.find((x) => x.name === 'many').tools, 4096);
    assert.match(d.stderr(), /mcp many: tools\/list has more than runbox keeps \(4096 items, 100 pages\): the items past the limit are left out/);
    const prompts = (await d.get('/prompts')).body.result.prompts.map((p) => p.name);
    assert.ok(prompts.includes('loop__echo'), JSON.stringify(prompts));
    assert.ok(!prompts.some((n) => n.endsWith('_2')), JSON.stringify(prompts));
    const longWarnings = d.stderr().split('\n').filter((l) => /registry: tool name p+__echo is \d+ characters/.test(l));
    assert.equal(longWarnings.length, 1, longWarnings.join('\n'));
  } finally {
    await d.stop();
  }
});

function writeConfig(name, obj) {
  const p = path.join(tmp, `${name}.json`);
  writeFileSync(p, typeof obj === 'string' ? obj : JSON.stringify(obj));
  return p;
}

test('bad config entries are errors naming the file and the key; the daemon starts with the rest', async () => {
  const html = (await import('node:http')).createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end('<html><body>not MCP</body></html>');
  });
  await new Promise((r) => html.listen(0, '127.0.0.1', r));
  const refused = await freePort();
  const good = path.join(tmp, 'good.json');
  const file = writeConfig('bad', `{"mcpServers": {
    "typo": {"url": "http://127.0.0.1:1/x", "type": "carrier-pigeon"},
    "nocmd": {"command": "no-such-command-registry-test"},
    "refused": {"url": "http://127.0.0.1:${refused}/mcp"},
    "html": {"url": "http://127.0.0.1:${html.address().port}/"},
    "ok": {"command": ${JSON.stringify(process.execPath)}, "args": [${JSON.stringify(testServerScript)}, "stdio", "ok"], "timeout": 30},
    "both": {"command": "true", "url": "http://127.0.0.1:1/"},
    "ok": {"command": "true"},
    "nodir": {"command": ${JSON.stringify(process.execPath)}, "args": ["-e", "0"], "cwd": "/no-such-dir-registry-test"},
    "re__fused": {"url": "http://127.0.0.1:${refused}/mcp"}
  }}`);
  writeConfig('good', { mcpServers: { extra: { command: process.execPath, args: [testServerScript, 'stdio', 'extra'] } } });
  const malformed = writeConfig('malformed', '{"mcpServers": {');
  const d = await startDaemon({ workspace: ':memory:',
    args: ['--config', file, '--mcp-config', good, '--mcp-config', malformed,
           '--mcp-config', path.join(tmp, 'no-such-config.json')] });
  try {
    let by;
    for (;;) {
      by = Object.fromEntries((await d.get('/mcp-servers')).body.servers.map((s) => [s.name + (s.config_error ? '!' : ''), s]));
      const r = by.refused, h = by.html;
      if (by.ok?.state === 'ready' && by.extra?.state === 'ready' && r?.last_error && h?.last_error &&
          by.nodir?.last_error && by.re__fused?.last_error) break;
      await new Promise((res) => setTimeout(res, 25));
    }
    assert.match(by['typo!'].config_error, new RegExp(`${file.replace(/[.]/g, '\\.')}: mcpServers\\.typo\\.type: unknown type "carrier-pigeon"`));
    assert.equal(by['typo!'].state, 'failed');
    assert.match(by['nocmd!'].config_error, /mcpServers\.nocmd\.command: "no-such-command-registry-test" was not found/);
    assert.match(by['ok!'].config_error, /mcpServers\.ok: a second server named "ok"/);
    assert.match(by['both!'].config_error, /mcpServers\.both: has both "command" \(a stdio server\) and "url" \(a remote one\)/);
    // A key runbox does not read is a warning; the server runs.
    assert.match(by.ok.config_warning, /mcpServers\.ok: runbox does not know the key "timeout" and ignores it \(it reads .*timeout_ms/);
    assert.match(d.stderr(), /runbox does not know the key "timeout"/);
    assert.match(by.refused.last_error, /^refused: .*Couldn't connect|^refused: .*refused/i);
    assert.match(by.html.last_error, /HTML page/);
    // The child's failure before execve reaches runboxd with its errno.
    assert.match(by.nodir.last_error, /^nodir: cannot run "[^"]*node" in \/no-such-dir-registry-test: No such file or directory/);
    assert.equal(by.extra.state, 'ready', 'a server of --mcp-config FILE');
    assert.match(d.stderr(), new RegExp(`${malformed.replace(/[.]/g, '\\.')}: not a JSON config file`));
    assert.match(d.stderr(), /mcpServers\.typo\.type: unknown type .*the server is skipped/);
    const r = await d.call('ok__echo', { message: 'fine' });
    assert.equal(r.body.result, 'ok: fine');
    const missing = await d.call('html__echo', {});
    assert.equal(missing.status, 404);
    assert.match(missing.body.error, /MCP server html is (failed|connecting)/);
    // A server whose name holds "__" is found in its tools' names all the same.
    const under = await d.call('re__fused__echo', {});
    assert.equal(under.status, 404);
    assert.match(under.body.error, /re__fused__echo: MCP server re__fused is (failed|connecting)/);
    // A --mcp-config file that is not there is listed, as one that is not JSON is.
    const unread = (await d.get('/mcp-servers')).body.servers.filter((x) => /no-such-config/.test(x.config_error ?? ''));
    assert.equal(unread.length, 1);
    assert.match(unread[0].config_error, /--mcp-config \S*no-such-config\.json: No such file or directory; no server was read from it/);
    // /health names each server once, the second "ok" (a config error) not again.
    const health = await d.get('/health');
    assert.equal(health.text.match(/"ok":"/g).length, 1, health.text);
    assert.equal(health.body.mcp_servers.servers.ok, 'ready');
  } finally {
    await d.stop();
    html.close();
  }
});

test('a secret from ${env:} never shows: not in /mcp-servers, mcp_servers, /health or the log', async () => {
  const secret = 's3cret-registry-tok-4821';
  const refused = await freePort();
  // A server that prints its arguments (the token among them) to stderr and exits: its last
  // stderr lines are part of last_error.
  const echoArgs = 'console.error("args: " + process.argv.slice(1).join(" ")); process.exit(3)';
  const file = writeConfig('secret', { mcpServers: {
    url: { url: `http://127.0.0.1:${refused}/mcp?api_key=\${env:SECRET_TOK}`,
           headers: { Authorization: 'Bearer ${env:SECRET_TOK}' } },
    sse: { url: `http://127.0.0.1:${refused}/sse?api_key=\${env:SECRET_TOK}`, type: 'sse' },
    wsurl: { url: `ws://127.0.0.1:${refused}/mcp?api_key=\${env:SECRET_TOK}` },
    nocmd: { command: 'no-such-command-registry-secret', args: ['--token', '${env:SECRET_TOK}'] },
    cmdpath: { command: '/no-such-dir/${env:SECRET_TOK}/server', args: ['--token', '${env:SECRET_TOK}'] },
    nodir: { command: process.execPath, args: ['-e', '0', '${env:SECRET_TOK}'], cwd: '/no-such-dir/${env:SECRET_TOK}' },
    echo: { command: process.execPath, args: ['-e', echoArgs, '--', '--token', '${env:SECRET_TOK}'],
            env: { TOKEN: '${env:SECRET_TOK}' } },
  } });
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', file],
                                env: { SECRET_TOK: secret, RUNBOX_LOG: 'debug' } });
  try {
    let by;
    for (;;) {
      by = Object.fromEntries((await d.get('/mcp-servers')).body.servers.map((s) => [s.name, s]));
      if (['url', 'sse', 'wsurl', 'nodir', 'echo'].every((n) => by[n]?.last_error) &&
          /stderr lines/.test(by.echo.last_error)) break;
      await new Promise((res) => setTimeout(res, 25));
    }
    // Shown as written in the file.
    assert.equal(by.url.url, `http://127.0.0.1:${refused}/mcp?api_key=\${env:SECRET_TOK}`);
    assert.match(by.url.last_error, /^url: \S+ could not be sent to http:\/\/127\.0\.0\.1:\d+\/mcp\?api_key=\$\{env:SECRET_TOK\}: /);
    assert.equal(by.wsurl.url, `ws://127.0.0.1:${refused}/mcp?api_key=\${env:SECRET_TOK}`);
    assert.equal(by.cmdpath.command, '/no-such-dir/${env:SECRET_TOK}/server');
    assert.match(by.cmdpath.config_error, /mcpServers\.cmdpath\.command: "\/no-such-dir\/\$\{env:SECRET_TOK\}\/server" was not found/);
    assert.match(by.nocmd.config_error, /mcpServers\.nocmd\.command: "no-such-command-registry-secret" was not found/);
    assert.match(by.nodir.last_error, /^nodir: cannot run "[^"]*node" in \/no-such-dir\/\$\{env:SECRET_TOK\}: No such file or directory/);
    assert.match(by.echo.last_error, /its last stderr lines: .*--token \$\{env:SECRET_TOK\}/);
    const shown = {
      '/mcp-servers': JSON.stringify((await d.get('/mcp-servers')).body),
      mcp_servers: JSON.stringify((await d.call('mcp_servers', {})).body),
      '/health': JSON.stringify((await d.get('/health')).body),
      'a call of a failed server': JSON.stringify((await d.call('url/echo', {})).body),
      // The server's stderr lines in the console, as in last_error.
      console_logs: JSON.stringify((await d.call('console_logs', { source: 'mcp', limit: 1000 })).body),
    };
    assert.match(shown.console_logs, /args: .*--token \$\{env:SECRET_TOK\}/);
    for (const [where, text] of Object.entries(shown))
      assert.ok(!text.includes(secret), `${where} shows the secret: ${text}`);
    assert.match(d.stderr(), /\$\{env:SECRET_TOK\}/, 'the log names the variable');
    assert.ok(!d.stderr().includes(secret), `runboxd's log shows the secret:\n${d.stderr()}`);
  } finally {
    await d.stop();
  }
});

test('a header or URL that holds a line break once ${env:} is replaced is a config error, never sent', async () => {
  const seen = [];
  const upstream = (await import('node:http')).createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(404);
    res.end();
  });
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${upstream.address().port}/mcp`;
  const file = writeConfig('inject', { mcpServers: {
    inj: { url: base, headers: { 'X-Inj': '${env:INJ}' } },
    injws: { url: `ws://127.0.0.1:${upstream.address().port}/`, headers: { 'X-Inj': '${env:INJ}' } },
    ctl: { url: base, headers: { 'X-Ctl': 'a${env:CTL}b' } },
    badname: { url: base, headers: { 'X Bad': 'v' } },
    injurl: { url: `${base}\${env:INJ}` },
    spaceurl: { url: `${base}?q=\${env:SPACE}` },
    fine: { command: process.execPath, args: [testServerScript, 'stdio', 'fine'] },
  } });
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', file],
                                env: { INJ: 'a\r\nX-Evil: injected', CTL: '\x01', SPACE: 'a b' } });
  try {
    let by;
    for (;;) {
      by = Object.fromEntries((await d.get('/mcp-servers')).body.servers.map((s) => [s.name, s]));
      if (by.fine?.state === 'ready') break;
      await new Promise((res) => setTimeout(res, 25));
    }
    const where = file.replace(/[.]/g, '\\.');
    for (const [name, key] of [['inj', 'headers.X-Inj'], ['injws', 'headers.X-Inj'], ['ctl', 'headers.X-Ctl']]) {
      assert.equal(by[name].state, 'failed', name);
      assert.match(by[name].config_error, new RegExp(`^${where}: mcpServers\\.${name}\\.${key.replace('.', '\\.')}: ` +
                                                     'not a usable header value: .*line break or control character'));
    }
    assert.match(by.badname.config_error, /mcpServers\.badname\.headers\.X Bad: not a usable header name/);
    assert.match(by.injurl.config_error, new RegExp(`^${where}: mcpServers\\.injurl\\.url: .*space, line break or control character`));
    assert.match(by.spaceurl.config_error, /mcpServers\.spaceurl\.url: .*space, line break or control character/);
    for (const n of ['inj', 'injws', 'ctl', 'injurl', 'spaceurl'])
      assert.ok(!by[n].config_error.includes('X-Evil') && !by[n].config_error.includes('a b'), by[n].config_error);
    assert.match(d.stderr(), /mcpServers\.inj\.headers\.X-Inj: .*the server is skipped/);
    // Give a server that had been started a moment to connect: none was.
    await new Promise((res) => setTimeout(res, 300));
    assert.deepEqual(seen.filter((h) => 'x-evil' in h || 'x-inj' in h), []);
  } finally {
    await d.stop();
    upstream.close();
  }
});

test('runboxd killed with -9 takes its stdio servers along', async () => {
  // Servers that stay after their stdin ends: only the death signal runboxd's children ask for
  // (PR_SET_PDEATHSIG) ends them.
  const linger = (n) => ({ command: process.execPath, args: [testServerScript, 'stdio', n], env: { MCPSERVERS_LINGER: '1' } });
  const file = writeConfig('orphans', { mcpServers: { a: linger('a'), b: linger('b') } });
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', file] });
  let pids;
  try {
    for (;;) {
      const s = (await d.get('/mcp-servers')).body.servers;
      if (s.length === 2 && s.every((x) => x.state === 'ready')) { pids = s.map((x) => x.pid); break; }
      await new Promise((res) => setTimeout(res, 25));
    }
    for (const pid of pids) process.kill(pid, 0); // running
    process.kill(d.pid, 'SIGKILL');
  } finally {
    await d.stop();
  }
  const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
  const until = Date.now() + 10000;
  while (pids.some(alive) && Date.now() < until) await new Promise((res) => setTimeout(res, 25));
  const left = pids.filter(alive);
  for (const pid of left) process.kill(pid, 'SIGKILL');
  assert.deepEqual(left, [], 'no server outlives runboxd');
});

// The processes of pid's family as /proc shows them: its process group and every descendant
// (a sandboxed server's sit in a session of bubblewrap's own). Zombies are left out: they are
// gone, only not yet reaped.
function family(pid) {
  const procs = [];
  for (const e of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(e)) continue;
    let stat;
    try { stat = readFileSync(`/proc/${e}/stat`, 'utf8'); } catch { continue; }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // state, ppid, pgrp, ...
    if (f[0] !== 'Z') procs.push({ pid: Number(e), ppid: Number(f[1]), pgrp: Number(f[2]) });
  }
  const out = new Set(procs.some((p) => p.pid === pid) ? [pid] : []);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of procs) {
      if (!out.has(p.pid) && (out.has(p.ppid) || p.pgrp === pid)) { out.add(p.pid); grew = true; }
    }
  }
  return [...out];
}

function commOf(pid) {
  try { return readFileSync(`/proc/${pid}/comm`, 'utf8').trim(); } catch { return ''; }
}

function isLive(pid) {
  try { return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()[0] !== 'Z'; } catch { return false; }
}

test('runboxd killed with -9 takes the whole process group of a wrapped server along, and a sandboxed one', async () => {
  // The real server is a grandchild of runboxd, behind sh (as behind npx or uvx), and stays
  // after its stdin ends; PR_SET_PDEATHSIG is not inherited across fork, so it alone does not
  // end it. "; true" keeps sh from exec'ing node in its own place.
  const node = process.execPath;
  const wrapped = { command: 'sh', args: ['-c', `"${node}" "${testServerScript}" stdio wrapped; true`],
                    env: { MCPSERVERS_LINGER: '1' } };
  // Under bubblewrap (whose /tmp is private: an inline program rather than the test server),
  // wrapped the same way; it never answers, and stays "connecting".
  const idle = `"${node}" -e "setInterval(() => {}, 1 << 30)"; true`;
  const boxed = { command: 'sh', args: ['-c', idle], sandbox: true, timeout_ms: 600000 };
  const file = writeConfig('wrapped', { mcpServers: { wrapped, boxed } });
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', file] });
  let pids;
  try {
    for (;;) {
      const s = Object.fromEntries((await d.get('/mcp-servers')).body.servers.map((x) => [x.name, x]));
      if (s.wrapped?.state === 'ready' && s.boxed?.pid) {
        const fams = [family(s.wrapped.pid), family(s.boxed.pid)];
        if (fams.every((f) => f.some((p) => commOf(p) === 'node'))) { pids = fams.flat(); break; }
      }
      await new Promise((res) => setTimeout(res, 25));
    }
    assert.ok(pids.length >= 4, `sh and node, twice: ${pids}`);
    process.kill(d.pid, 'SIGKILL');
  } finally {
    await d.stop();
  }
  const until = Date.now() + 10000;
  while (pids.some(isLive) && Date.now() < until) await new Promise((res) => setTimeout(res, 25));
  const left = pids.filter(isLive);
  const described = left.map((p) => `${p} ${commOf(p)}`);
  for (const pid of left) process.kill(pid, 'SIGKILL');
  assert.deepEqual(described, [], 'no process of a server outlives runboxd');
});

test('a stdio server inherits no descriptor of runboxd beyond stdin, stdout and stderr; a graceful stop ends every process of it', async () => {
  // An fd runboxd's parent left open without close-on-exec (as `exec 7>file; runboxd` does).
  const leak = path.join(tmp, 'leaked-fd.txt');
  const fd = openSync(leak, 'w');
  const node = process.execPath;
  const plain = { command: node, args: [testServerScript, 'stdio', 'plain'] };
  const wrapped = { command: 'sh', args: ['-c', `"${node}" "${testServerScript}" stdio wrapped; true`] };
  const idle = `"${node}" -e "setInterval(() => {}, 1 << 30)"; true`;
  const boxed = { command: 'sh', args: ['-c', idle], sandbox: true, timeout_ms: 600000 };
  const file = writeConfig('fds', { mcpServers: { plain, wrapped, boxed } });
  let d, pids, watcher = [];
  try {
    d = await startDaemon({ workspace: ':memory:', args: ['--config', file], fds: [fd] });
  } finally {
    closeSync(fd);
  }
  const holders = (pid) => {
    try {
      return readdirSync(`/proc/${pid}/fd`).filter((n) => {
        try { return readlinkSync(`/proc/${pid}/fd/${n}`) === leak; } catch { return false; }
      }).map((n) => `${pid} ${commOf(pid)} fd ${n}`);
    } catch { return []; }
  };
  try {
    assert.notDeepEqual(holders(d.pid), [], 'runboxd itself has the descriptor');
    for (;;) {
      const s = Object.fromEntries((await d.get('/mcp-servers')).body.servers.map((x) => [x.name, x]));
      if (s.plain?.state === 'ready' && s.wrapped?.state === 'ready' && s.boxed?.pid) {
        const fams = [family(s.plain.pid), family(s.wrapped.pid), family(s.boxed.pid)];
        if (fams.every((f) => f.some((p) => commOf(p) === 'node'))) { pids = fams.flat(); break; }
      }
      await new Promise((res) => setTimeout(res, 25));
    }
    assert.deepEqual(pids.flatMap(holders), [], 'no server process holds it');
  } finally {
    const parentOf = (p) => { try { return readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ')[1]; } catch { return ''; } };
    watcher = readdirSync('/proc').filter((p) => /^\d+$/.test(p) && commOf(p) === 'runboxd-groups' &&
                                           parentOf(p) === String(d.pid));
    await d.stop();
  }
  // runboxd's watcher of its servers' groups ends before runboxd does (a cgroup emptied for
  // removal right after runboxd's exit held it, now and then, on a slow machine).
  assert.equal(watcher.length, 1, 'runboxd has one watcher');
  assert.equal(isLive(Number(watcher[0])), false, 'the watcher is gone when runboxd is');
  // The graceful stop ended each server's group (the sandboxed one's pid namespace with it).
  const until = Date.now() + 10000;
  while (pids.some(isLive) && Date.now() < until) await new Promise((res) => setTimeout(res, 25));
  const left = pids.filter(isLive).map((p) => `${p} ${commOf(p)}`);
  for (const p of pids.filter(isLive)) process.kill(p, 'SIGKILL');
  assert.deepEqual(left, [], 'no process of a server outlives a graceful stop');
});

test('--mcp-parallel-starts 1: stdio servers start one after another, and one that hangs holds the rest back only briefly', async () => {
  // Each serves 400 ms after its start: servers started together would all have started before
  // the first is ready.
  const tsServer = (n) => ({ command: process.execPath, args: [testServerScript, 'stdio', n],
                             env: { MCPSERVERS_START_MS: '400' } });
  // Never answers initialize, and its timeout keeps it "connecting" for the whole test.
  const hang = { command: process.execPath, args: ['-e', 'setInterval(() => {}, 1 << 30)'], timeout_ms: 600000 };
  const file = writeConfig('gate', { mcpServers: { hang, a: tsServer('a'), b: tsServer('b'), c: tsServer('c') } });
  const d = await startDaemon({ workspace: ':memory:', args: ['--config', file, '--mcp-parallel-starts', '1'] });
  try {
    let by;
    for (;;) {
      by = Object.fromEntries((await d.get('/mcp-servers')).body.servers.map((s) => [s.name, s]));
      if (['a', 'b', 'c'].every((n) => by[n].state === 'ready')) break;
      await new Promise((res) => setTimeout(res, 25));
    }
    assert.equal(by.hang.state, 'connecting', 'the hanging server did not keep the others from starting');
    // With one slot, a server starts when the one before it is ready, or has been starting
    // for a second (the hanging one never is; its second is timed from taking the slot, a
    // moment before its started_at, hence the slack).
    const at = (n, key) => (by[n][key] ? Date.parse(by[n][key]) : Infinity);
    const order = ['hang', 'a', 'b', 'c'].sort((x, y) => at(x, 'started_at') - at(y, 'started_at'));
    for (let i = 1; i < order.length; i++) {
      const prev = order[i - 1];
      const free = Math.min(at(prev, 'ready_at'), at(prev, 'started_at') + 1000 - 50);
      assert.ok(at(order[i], 'started_at') >= free,
                `${order[i]} started at ${by[order[i]].started_at}, before ${prev} (started ` +
                `${by[prev].started_at}, ready ${by[prev].ready_at}) gave its turn back`);
    }
  } finally {
    await d.stop();
  }
});

test('--mcp-parallel-starts: a bad value is refused at start with the range', async () => {
  const { runRunboxd } = await import('../lib/daemon.mjs');
  const r = await runRunboxd(['--workspace', ':memory:', '--port', '0', '--mcp-parallel-starts', '-1']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /--mcp-parallel-starts: expected a whole number 0-1024; got -1/);
});

test('no endpoint or method adds a server: the registry is read-only from the outside', async () => {
  const post = await daemon.get('/mcp-servers', {});
  assert.equal(post.status, 200);
  const { request } = await import('../lib/daemon.mjs');
  const r = await request(daemon.port, '/mcp-servers', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                        body: JSON.stringify({ name: 'evil', command: 'sh' }) });
  assert.equal(r.status, 405);
  const t = await daemon.call('mcp_servers', { name: 'evil', command: 'sh' });
  assert.equal(t.status, 400, 'mcp_servers takes no command');
});
