// tests/e2e/proxy_registry.test.mjs - the external MCP servers of runboxd's registry, through the
// real runbox binary: a stdio client lists their tools (already in its first tools/list), calls
// them by <server>__<tool>, <server>/<tool> and an unambiguous bare name with the same answers
// as runboxd's /mcp gives, hears notifications/tools/list_changed when an upstream's list
// changes (runbox re-reads GET /tools when GET /events says so), gets the upstream's progress
// and cancels it. The servers are the real npm ones (server-everything and server-filesystem
// over stdio) and SDK servers over WebSocket (tests/lib/mcpservers.mjs), started here.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startDaemon } from '../lib/daemon.mjs';
import { serverPaths } from '../lib/readable.mjs';
import { startProxy } from '../lib/proxy.mjs';
import { startWsServer } from '../lib/mcpservers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
// Paths runboxd's account can read (a copy when the checkout is under a private home).
const modules = path.join(serverPaths().modules, '@modelcontextprotocol');
const everything = path.join(modules, 'server-everything', 'dist', 'index.js');
const filesystem = path.join(modules, 'server-filesystem', 'dist', 'index.js');

const tmp = mkdtempSync(path.join(os.tmpdir(), 'proxy-registry-'));
chmodSync(tmp, 0o755); // runboxd started as root serves as nobody: its servers read here
const wsEvents = { cancelled: [], started: 0 };
let daemon, ws, ws2, mcp;
const proxies = [];

function writeConfig(name, obj) {
  const p = path.join(tmp, `${name}.json`);
  writeFileSync(p, JSON.stringify(obj));
  return p;
}

async function waitReady(d, names) {
  for (;;) {
    const list = (await d.get('/mcp-servers')).body.servers;
    if (names.every((n) => list.some((s) => s.name === n && s.state === 'ready'))) return;
    await new Promise((r) => setTimeout(r, 25));
  }
}

function proxy(url = daemon.url) {
  const p = startProxy({ daemonUrl: url });
  proxies.push(p);
  return p;
}

before(async () => {
  ws = await startWsServer('w', {
    started: () => { wsEvents.started++; },
    cancelled: (n) => wsEvents.cancelled.push(n),
  });
  ws2 = await startWsServer('w2');
  writeFileSync(path.join(tmp, 'hello.txt'), 'hello through runbox');
  const config = writeConfig('config', {
    mcpServers: {
      ev: { command: process.execPath, args: [everything, 'stdio'] },
      fs: { command: process.execPath, args: [filesystem, tmp] },
      w: { url: ws.url },
      w2: { url: ws2.url, tools: ['echo'] },
    },
  });
  daemon = await startDaemon({ workspace: ':memory:', args: ['--config', config] });
  await waitReady(daemon, ['ev', 'fs', 'w', 'w2']);
  mcp = new Client({ name: 'proxy-registry', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL('/mcp', daemon.url)));
});

after(async () => {
  for (const p of proxies) await p.close().catch(() => {});
  await mcp?.close();
  await daemon?.stop();
  await ws?.close();
  await ws2?.close();
  rmSync(tmp, { recursive: true, force: true });
});

test('the first tools/list, piped right after initialize, already has the external tools', async () => {
  const p = proxy();
  // One write, as a client that does not wait for answers sends it.
  p.sendRaw([
    { jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
  ].map((m) => JSON.stringify(m) + '\n').join(''));
  const init = await p.waitFor((m) => m.id === 1);
  assert.equal(init.result.capabilities.tools.listChanged, true, 'runbox declares tools.listChanged');
  const list = await p.waitFor((m) => m.id === 2);
  const tools = list.result.tools;
  const names = tools.map((t) => t.name);
  for (const n of ['ev__echo', 'ev__get-sum', 'fs__read_text_file', 'w__echo', 'w__slow', 'w2__echo',
                   'exec', 'read_file', 'mcp_servers'])
    assert.ok(names.includes(n), n);
  assert.ok(!names.includes('w2__slow'), "w2's allow list keeps only echo");
  // The same external tools, with the same schemas, as /mcp lists.
  const onMcp = (await mcp.listTools()).tools.filter((t) => t.name.includes('__'));
  for (const t of onMcp) {
    const mine = tools.find((x) => x.name === t.name);
    assert.ok(mine, `${t.name} is listed by runbox`);
    assert.deepEqual(mine.inputSchema, t.inputSchema, t.name);
    assert.equal(mine.description, t.description, t.name);
  }
  assert.equal(tools.filter((t) => t.name.includes('__')).length, onMcp.length);
  assert.deepEqual(p.badLines, []);
});

// What a tools/call answers, in a form both clients share.
function outcome(r) {
  return { content: r.content, isError: Boolean(r.isError), structuredContent: r.structuredContent };
}

test('calls by <server>__<tool>, <server>/<tool> and a bare name answer as on /mcp', async () => {
  const p = proxy();
  await p.initialize();
  const calls = [
    ['ev__echo', { message: 'through runbox' }],
    ['ev/echo', { message: 'by server/tool' }],
    ['ev__get-tiny-image', {}],
    ['ev__get-sum', { a: 2, b: 3 }],
    ['fs__read_text_file', { path: path.join(tmp, 'hello.txt') }],
    ['read_text_file', { path: path.join(tmp, 'hello.txt') }], // only fs has it
    ['w/echo', { message: 'ws' }],
    ['w__fail', { why: 'on purpose' }], // the upstream's isError result
  ];
  for (const [name, args] of calls) {
    const mine = await p.callTool(name, args);
    const theirs = await mcp.callTool({ name, arguments: args });
    assert.deepEqual(outcome(mine), outcome(theirs), name);
  }
  const echo = await p.callTool('ev__echo', { message: 'x' });
  assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: x' }]);
  const img = await p.callTool('ev__get-tiny-image', {});
  assert.ok(img.content.some((c) => c.type === 'image' && c.mimeType === 'image/png'),
            'content other than text passes through');
  const fail = await p.callTool('w__fail', { why: 'on purpose' });
  assert.equal(fail.isError, true);
  assert.deepEqual(fail.content, [{ type: 'text', text: 'w: failed: on purpose' }]);
  const bare = await p.callTool('read_text_file', { path: path.join(tmp, 'hello.txt') });
  assert.match(JSON.stringify(bare.content), /hello through runbox/);
});

test('an ambiguous bare name and bad arguments are refused as on /mcp', async () => {
  const p = proxy();
  await p.initialize();
  // echo: ev, w and w2 have it.
  const amb = await p.request('tools/call', { name: 'echo', arguments: { message: 'x' } });
  assert.equal(amb.error.code, -32602);
  assert.match(amb.error.message, /tool name echo is ambiguous: 3 servers have it; call one of .*ev__echo/);
  await assert.rejects(mcp.callTool({ name: 'echo', arguments: { message: 'x' } }),
                       (e) => e.message.includes(amb.error.message));
  // The upstream's schema is checked before the call leaves runbox.
  const bad = await p.callTool('ev__get-sum', { a: 1, b: 'two' });
  const badMcp = await mcp.callTool({ name: 'ev__get-sum', arguments: { a: 1, b: 'two' } });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /b: expected number, got string/);
  assert.deepEqual(outcome(bad), outcome(badMcp));
  // A server's tool that is not served stays unknown.
  const none = await p.request('tools/call', { name: 'w2__slow', arguments: { ms: 1 } });
  assert.equal(none.error.code, -32602);
  assert.match(none.error.message, /Unknown tool: w2__slow/);
  // A built-in name is never an alias for an external tool.
  const own = await p.request('tools/call', { name: 'w/read_file', arguments: {} });
  assert.match(own.error.message, /Unknown tool/);
});

test('an upstream whose tools change: runbox says tools/list_changed and serves the new one', async () => {
  const p = proxy();
  await p.initialize();
  const before = (await p.request('tools/list')).result.tools.map((t) => t.name);
  assert.ok(!before.includes('w__fresh_proxy'));
  const from = p.messages.length;
  assert.equal((await p.callTool('w__add_tool', { tool: 'fresh_proxy' })).content[0].text, 'added');
  await p.waitFor((m) => m.method === 'notifications/tools/list_changed', { from });
  // The notification comes after runbox has the new list: the next tools/list has the tool.
  const after = (await p.request('tools/list')).result.tools.map((t) => t.name);
  assert.ok(after.includes('w__fresh_proxy'), after.join(' '));
  const r = await p.callTool('w__fresh_proxy', {});
  assert.deepEqual(r.content, [{ type: 'text', text: 'w: fresh_proxy ran' }]);
  assert.deepEqual(p.badLines, []);
});

test("an upstream's progress reaches runbox's client, and cancelling the call cancels it upstream", async () => {
  const p = proxy();
  await p.initialize();
  const cancelledBefore = wsEvents.cancelled.length;
  const id = p.nextId();
  const from = p.messages.length;
  p.send({ jsonrpc: '2.0', id, method: 'tools/call',
           params: { name: 'w__slow', arguments: { ms: 600000 }, _meta: { progressToken: 'pt-1' } } });
  const prog = await p.waitFor((m) => m.method === 'notifications/progress', { from });
  assert.equal(prog.params.progressToken, 'pt-1');
  assert.equal(prog.params.progress, 1);
  assert.equal(prog.params.message, 'started');
  p.notify('notifications/cancelled', { requestId: id, reason: 'test' });
  while (wsEvents.cancelled.length === cancelledBefore) await new Promise((r) => setTimeout(r, 20));
  assert.equal(wsEvents.cancelled.at(-1), 'w');
  // The server still serves through runbox.
  const r = await p.callTool('w__echo', { message: 'still here' });
  assert.equal(r.content[0].text, 'w: still here');
});

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

test('a daemon that comes up after runbox: its external tools appear with tools/list_changed', async () => {
  const port = await freePort();
  const p = proxy(`http://127.0.0.1:${port}`);
  await p.initialize();
  const first = (await p.request('tools/list')).result.tools.map((t) => t.name);
  assert.ok(first.includes('exec') && !first.some((n) => n.includes('__')), 'only runbox\'s own tools');
  const ws3 = await startWsServer('late');
  const d = await startDaemon({ workspace: ':memory:',
    args: ['--config', writeConfig('late', { mcpServers: { late: { url: ws3.url } } }), '--port', String(port)] });
  try {
    await waitReady(d, ['late']);
    const from = p.messages.length;
    // The first answer from the daemon makes runbox read its tools.
    const r = await p.callTool('mcp_servers', {});
    assert.notEqual(r.isError, true, JSON.stringify(r));
    await p.waitFor((m) => m.method === 'notifications/tools/list_changed', { from });
    const names = (await p.request('tools/list')).result.tools.map((t) => t.name);
    assert.ok(names.includes('late__echo'), names.join(' '));
    assert.equal((await p.callTool('late__echo', { message: 'hi' })).content[0].text, 'late: hi');
  } finally {
    await p.close();
    await d.stop();
    await ws3.close();
  }
});
