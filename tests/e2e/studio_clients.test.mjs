// E2E: several agents, one Studio. Two real runbox processes (each names itself to runboxd
// with X-Runbox-Client), then two MCP sessions on runboxd's /mcp, and a fake plugin that takes one command at a time: while the plugin is
// busy, agent A queues two more calls and then agent B one; B's call is handed out before A's
// second (round robin per client), and every answer reaches the caller that asked.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { request, startDaemon } from '../lib/daemon.mjs';
import { FakePlugin } from '../lib/fakeplugin.mjs';
import { resultText, startProxy } from '../lib/proxy.mjs';
import { until } from '../lib/wait.mjs';

let d;
before(async () => { d = await startDaemon(); });
after(async () => { await FakePlugin.cleanupAll(); await d.stop(); });

async function queueDepth() {
  return (await request(d.port, '/health')).body.studio.queue_depth;
}

// Waits until the Studio queue holds n commands (a condition, no deadline of its own).
function waitDepth(n) {
  return until(`the Studio queue to hold ${n} commands`, async () => (await queueDepth()) === n,
               { every: 5, describe: async () => `it holds ${await queueDepth()}` });
}

test('two runbox processes: Studio serves their calls in turn, each answer to its caller', async () => {
  const plugin = new FakePlugin(d.port, { instance: 'fair' });
  const a = startProxy({ daemonUrl: d.url });
  const b = startProxy({ daemonUrl: d.url });
  await a.initialize();
  await b.initialize();
  // The plugin polls by hand: one command per poll, none while "busy".
  const first = plugin.pollOnce();
  const calls = [];
  const call = (p, path) => calls.push(p.callTool('get_instance_properties', { path }));
  const got = [];
  const takeOne = async (poll) => {
    const r = await poll;
    assert.equal(r.body.hasCommand, true, r.text);
    got.push(r.body);
  };
  // Registered once the first poll is parked; A's first call is taken at once.
  await plugin.waitPolling();
  await until('the plugin to be connected',
              async () => (await request(d.port, '/health')).body.studio.connected);
  call(a, 'Workspace.A1');
  await takeOne(first);
  call(a, 'Workspace.A2');
  await waitDepth(2);
  call(a, 'Workspace.A3');
  await waitDepth(3);
  call(b, 'Workspace.B1');
  await waitDepth(4);
  for (let i = 0; i < 3; i++) await takeOne(plugin.pollOnce());
  assert.deepEqual(got.map((c) => c.args.path),
                   ['Workspace.A1', 'Workspace.B1', 'Workspace.A2', 'Workspace.A3'],
                   'B is served before A\'s second call');
  for (const c of got) {
    const r = await plugin.post('/result', JSON.stringify({ id: c.id, ok: true,
      result: { path: c.args.path, className: 'Part', properties: {} } }));
    assert.equal(r.status, 200, r.text);
  }
  const results = await Promise.all(calls);
  const paths = results.map((r) => JSON.parse(resultText(r)).path);
  assert.deepEqual(paths, ['Workspace.A1', 'Workspace.A2', 'Workspace.A3', 'Workspace.B1']);
  // queue_ahead counts the calls that went first: B1 waited for A1 only, A3 for three.
  const ahead = results.map((r) => JSON.parse(resultText(r)).queue_ahead ?? 0);
  assert.deepEqual(ahead, [0, 2, 3, 1]);
  await a.close();
  await b.close();
  await plugin.post('/disconnect', JSON.stringify({ instance: 'fair' }));
});

test('two MCP sessions on /mcp are two clients: Studio serves them in turn', async () => {
  const plugin = new FakePlugin(d.port, { instance: 'fair-mcp' });
  const connect = async (name) => {
    const c = new Client({ name, version: '1.0.0' });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`)));
    return c;
  };
  const a = await connect('agent-a');
  const b = await connect('agent-b');
  const first = plugin.pollOnce();
  await plugin.waitPolling();
  await until('the plugin to be connected',
              async () => (await request(d.port, '/health')).body.studio.connected);
  const calls = [];
  const call = (c, path) => calls.push(c.callTool({ name: 'get_instance_properties',
                                                     arguments: { path } }));
  const got = [];
  call(a, 'Workspace.A1');
  got.push((await first).body);
  call(a, 'Workspace.A2');
  await waitDepth(2);
  call(a, 'Workspace.A3');
  await waitDepth(3);
  call(b, 'Workspace.B1');
  await waitDepth(4);
  for (let i = 0; i < 3; i++) got.push((await plugin.pollOnce()).body);
  assert.deepEqual(got.map((c) => c.args.path),
                   ['Workspace.A1', 'Workspace.B1', 'Workspace.A2', 'Workspace.A3']);
  for (const c of got) {
    await plugin.post('/result', JSON.stringify({ id: c.id, ok: true,
      result: { path: c.args.path, className: 'Part', properties: {} } }));
  }
  const results = await Promise.all(calls);
  assert.deepEqual(results.map((r) => r.structuredContent.path),
                   ['Workspace.A1', 'Workspace.A2', 'Workspace.A3', 'Workspace.B1']);
  await a.close();
  await b.close();
  await plugin.post('/disconnect', JSON.stringify({ instance: 'fair-mcp' }));
});

test('POST /tool: a malformed X-Runbox-Client is refused with what to send', async () => {
  const r = await request(d.port, '/tool/get_place_info', {
    method: 'POST', body: '{}',
    headers: { 'Content-Type': 'application/json', 'X-Runbox-Client': 'has space' } });
  assert.equal(r.status, 400, r.text);
  assert.match(r.body.error, /X-Runbox-Client must be 1 to 48 characters/);
  const ok = await request(d.port, '/tool/list_dir', {
    method: 'POST', body: '{"path":"/"}',
    headers: { 'Content-Type': 'application/json', 'X-Runbox-Client': 'agent-7' } });
  assert.equal(ok.status, 200, ok.text);
});
