// Integration: a flood of progress must not crowd out the answer. An external MCP server (the
// test server over stdio, tests/lib/mcpservers.mjs) reports progress 16 384 times, 2 KiB each,
// as fast as runboxd takes it, and then answers. The SDK client of each of runboxd's MCP
// transports (/mcp, /sse, /ws) stops reading at the first progress until the server has sent
// everything: 32 MiB of progress were then waiting for it, past the 8 MiB a client's queue may
// hold, and runboxd closed the stream as "not reading", so the answer never came (the client
// waited for its own timeout). Progress is a latest value: a newer one replaces the one that
// still waits for the client, so the queue holds one per token, the answer comes, and the values
// the client saw increase.
//
// Nothing here depends on timing: the client waits for the server's file that says all was sent.
// The one bound is civetweb's 30 s for a write the client does not take (request_timeout_ms),
// which the flood (about a second) stays far below.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';

import { startDaemon } from '../lib/daemon.mjs';
import { serverPaths } from '../lib/readable.mjs';

const N = 16384;
const SIZE = 2048; // N * SIZE: 32 MiB, four times the queue's limit

const tmp = mkdtempSync(path.join(os.tmpdir(), 'progress-flood-'));
chmodSync(tmp, 0o777); // runboxd started as root runs its servers as nobody: they write here
let d;

before(async () => {
  const script = path.join(serverPaths().lib, 'mcpservers.mjs');
  const config = { mcpServers: { fl: { command: process.execPath, args: [script, 'stdio', 'fl'],
                                       timeout_ms: 600000 } } };
  writeFileSync(path.join(tmp, 'config.json'), JSON.stringify(config));
  d = await startDaemon({ workspace: ':memory:', args: ['--config', path.join(tmp, 'config.json')] });
  for (;;) {
    const s = (await d.get('/mcp-servers')).body.servers.find((x) => x.name === 'fl');
    if (s?.state === 'ready') break;
    await new Promise((r) => setTimeout(r, 25));
  }
});

after(async () => {
  await d?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

// Blocks this thread (and so the client's reading of its stream) until file exists.
function blockUntil(file) {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  while (!existsSync(file)) Atomics.wait(cell, 0, 0, 10);
}

// Resolves when runboxd logs, past offset from of its log, that it closed a client's stream or
// WebSocket as not reading; null once stop.done is set.
async function cutOff(from, stop) {
  while (!stop.done) {
    const m = /mcp-http: a (stream's|WebSocket) client is not reading[^\n]*/
      .exec(d.stderr().slice(from));
    if (m) return m[0];
    await new Promise((r) => setTimeout(r, 50));
  }
  return null;
}

function transportOf(kind) {
  if (kind === 'mcp') return new StreamableHTTPClientTransport(new URL('/mcp', d.url));
  if (kind === 'sse') return new SSEClientTransport(new URL('/sse', d.url));
  return new WebSocketClientTransport(new URL(`ws://127.0.0.1:${d.port}/ws`));
}

for (const kind of ['mcp', 'sse', 'ws']) {
  test(`/${kind}: ${N} progress notifications while the client lags; the answer still comes`,
       async () => {
    const client = new Client({ name: `flood-${kind}`, version: '1.0.0' });
    await client.connect(transportOf(kind));
    try {
      const from = d.stderr().length;
      const done = path.join(tmp, `${kind}.done`);
      const seen = [];
      const call = client.callTool({ name: 'fl__flood', arguments: { n: N, size: SIZE, done } },
                                   undefined, {
        timeout: 600000,
        onprogress: (p) => {
          if (seen.length === 0) blockUntil(done);
          seen.push(p.progress);
        },
      });
      const stop = { done: false };
      const r = await Promise.race([
        call,
        cutOff(from, stop).then((line) => line && assert.fail(`the daemon cut the client off: ${line}`)),
      ]).finally(() => { stop.done = true; });
      assert.deepEqual(r.content, [{ type: 'text', text: `fl: flooded ${N}` }]);
      // Increasing, within 1..N. Not necessarily up to N: the SDK runs a notification's handler
      // a microtask later but settles the call at once, so the progress read in the same chunk
      // as the answer comes after the call is over and is dropped.
      assert.ok(seen.length > 0);
      assert.ok(seen[0] >= 1 && seen.at(-1) <= N, `${seen[0]}..${seen.at(-1)}`);
      for (let i = 1; i < seen.length; i++)
        assert.ok(seen[i] > seen[i - 1], `progress ${seen[i]} after ${seen[i - 1]}`);
      console.log(`# /${kind}: the client saw ${seen.length} of ${N} progress notifications, ` +
                  `the last ${seen.at(-1)}`);
      // The session still serves.
      const again = await client.callTool({ name: 'fl__echo', arguments: { message: kind } });
      assert.equal(again.content[0].text, `fl: ${kind}`);
    } finally {
      await client.close();
    }
  });
}
