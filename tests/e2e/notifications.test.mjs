// tests/e2e/notifications.test.mjs - a stdio client of the real runbox hears what runboxd's
// own MCP clients hear: progress while exec runs, console entries after logging/setLevel,
// resource updates for its subscriptions, resource list changes, completion, and a modern
// request's own log. runbox reads them from runboxd's event streams (GET /events, POST /tool
// as an event stream).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ResourceListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { startDaemon } from '../lib/daemon.mjs';
import { startProxy } from '../lib/proxy.mjs';

let daemon;

before(async () => { daemon = await startDaemon(); });
after(async () => { await daemon.stop(); });

async function sdkClient() {
  const client = new Client({ name: 'runbox-notifications', version: '1.0.0' });
  await client.connect(new StdioClientTransport({
    command: process.env.RUNBOX, args: [],
    env: { ...getDefaultEnvironment(), DAEMON_URL: daemon.url, RUNBOX_LOG: 'warn' },
  }));
  return client;
}

function collect(client, schema) {
  const got = [];
  let wake = null;
  client.setNotificationHandler(schema, (n) => { got.push(n); if (wake) wake(); });
  return {
    got,
    async until(pred, what, timeoutMs = 60000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = got.find(pred);
        if (hit) return hit;
        if (Date.now() > deadline)
          throw new Error(`no ${what}; got ${JSON.stringify(got).slice(0, 2000)}`);
        await new Promise((r) => { wake = r; setTimeout(r, 200); });
      }
    },
  };
}

test('runbox declares what it sends: logging, completions, resources.subscribe and listChanged', async () => {
  const client = await sdkClient();
  const caps = client.getServerCapabilities();
  assert.ok(caps.logging && caps.completions);
  assert.equal(caps.resources.subscribe, true);
  assert.equal(caps.resources.listChanged, true);
  await client.close();
});

test('progress each second while exec runs, with its latest output', async () => {
  const client = await sdkClient();
  const progress = [];
  const r = await client.callTool(
    { name: 'exec', arguments: { command: 'for i in 1 2 3; do echo step $i; sleep 1; done' } },
    undefined, { onprogress: (p) => progress.push(p) });
  assert.equal(r.isError, false);
  assert.equal(r.content[0].text, 'step 1\nstep 2\nstep 3\n');
  assert.ok(progress.length >= 2, JSON.stringify(progress));
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress);
  assert.ok(progress.some((p) => /step 1/.test(p.message)), JSON.stringify(progress));
  await client.close();
});

test('without a progress token the call is the plain request, and answers the same', async () => {
  const client = await sdkClient();
  const r = await client.callTool({ name: 'exec', arguments: { command: 'echo plain' } });
  assert.equal(r.content[0].text, 'plain\n');
  assert.equal(r.structuredContent.exit_code, 0);
  await client.close();
});

test('logging/setLevel: console entries at the level arrive as notifications/message', async () => {
  const client = await sdkClient();
  const logs = collect(client, LoggingMessageNotificationSchema);
  await client.setLoggingLevel('warning');
  await client.callTool({ name: 'exec', arguments: { command: 'echo e2e-out; echo e2e-err >&2' } });
  const n = await logs.until((x) => x.params.data.message === 'e2e-err', 'warning entry');
  assert.equal(n.params.level, 'warning');
  assert.equal(n.params.logger, 'exec');
  assert.ok(!logs.got.some((x) => x.params.data.message === 'e2e-out'), 'below the level');
  // A lower level: now the run's stdout comes too (the stream is reopened, nothing repeats).
  await client.setLoggingLevel('info');
  await client.callTool({ name: 'exec', arguments: { command: 'echo e2e-info' } });
  await logs.until((x) => x.params.data.message === 'e2e-info', 'info entry');
  const ids = logs.got.map((x) => x.params.data.id);
  assert.equal(new Set(ids).size, ids.length, `no entry twice: ${ids}`);
  await client.close();
});

test('resources/subscribe: an exec run that rewrites the file is told', async () => {
  const client = await sdkClient();
  const updates = collect(client, ResourceUpdatedNotificationSchema);
  await daemon.call('write_file', { path: '/e2e/watched.txt', content: 'a' });
  await client.subscribeResource({ uri: 'file:///e2e/watched.txt' });
  // The subscription reaches runboxd on runbox's next turn; a later write is always seen.
  await waitStreamWithUri(daemon);
  await client.callTool({ name: 'exec', arguments: { command: 'echo b > /workspace/e2e/watched.txt' } });
  await updates.until((x) => x.params.uri === 'file:///e2e/watched.txt', 'resources/updated');
  await assert.rejects(client.subscribeResource({ uri: 'https://example.com/' }),
                       (e) => e.code === -32602 && /names no resource of runboxd/.test(e.message));
  await client.close();
});

// /health says how many resources runboxd watches: the subscription is in place once it counts
// (waits as long as it takes; ctest's timeout bounds it).
async function waitStreamWithUri(d) {
  while ((await d.get('/health')).body.watches < 1) await new Promise((r) => setTimeout(r, 50));
}

// runbox's event stream is open once /health counts a stream.
async function waitEventStream(d) {
  while ((await d.get('/health')).body.calls.stream.in_use < 1)
    await new Promise((r) => setTimeout(r, 50));
}

test('a client that listed resources hears notifications/resources/list_changed', async () => {
  const client = await sdkClient();
  const changes = collect(client, ResourceListChangedNotificationSchema);
  await client.listResources();
  await waitEventStream(daemon); // runbox opens its event stream after the list
  await daemon.call('write_file', { path: `/e2e/new-${Date.now()}.txt`, content: 'x' });
  await changes.until(() => true, 'resources/list_changed', 120000);
  await client.close();
});

test('completion/complete through runbox: scaffold types and workspace paths', async () => {
  const client = await sdkClient();
  await daemon.call('write_file', { path: '/e2e/comp/alpha.js', content: '' });
  let r = await client.complete({ ref: { type: 'ref/prompt', name: 'scaffold' },
                                  argument: { name: 'type', value: 'p' } });
  assert.deepEqual(r.completion.values, ['python-script']);
  r = await client.complete({ ref: { type: 'ref/prompt', name: 'explain_file' },
                              argument: { name: 'path', value: '/e2e/comp/al' } });
  assert.deepEqual(r.completion.values, ['/e2e/comp/alpha.js']);
  r = await client.complete({ ref: { type: 'ref/resource', uri: 'file:///{path}' },
                              argument: { name: 'path', value: 'e2e/comp/' } });
  assert.deepEqual(r.completion.values, ['e2e/comp/alpha.js']);
  await client.close();
});

test('2026-07-28 on stdio: a tools/call with logLevel hears its own run before its answer', async () => {
  const p = startProxy({ daemonUrl: daemon.url });
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                 'io.modelcontextprotocol/clientCapabilities': {},
                 'io.modelcontextprotocol/logLevel': 'info' };
  const answer = await p.request('tools/call', {
    name: 'exec', arguments: { command: 'echo own-a; echo own-b >&2' }, _meta: meta });
  assert.equal(answer.result.isError, false);
  const logs = p.messages.filter((m) => m.method === 'notifications/message');
  const msgs = logs.map((m) => m.params.data.message);
  assert.ok(msgs.includes('own-a') && msgs.includes('own-b'), JSON.stringify(msgs));
  const at = p.messages.indexOf(answer);
  assert.ok(logs.every((m) => p.messages.indexOf(m) < at), 'every log line before the answer');
  await p.close();
});
