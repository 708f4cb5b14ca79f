// tests/interop/long_exec.test.mjs - a 90-second exec finishes through the official SDK client
// with its default request timeout (60 s) and resetTimeoutOnProgress, on every transport at
// once: stdio through runbox, Streamable HTTP (/mcp), legacy SSE (/sse) and WebSocket (/ws).
// Without progress notifications every one of them would be cut off at 60 s.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { startDaemon } from '../lib/daemon.mjs';

// Node 22 has a global WebSocket; older ones get the ws package's (the SDK uses the global).
if (!globalThis.WebSocket) globalThis.WebSocket = (await import('ws')).WebSocket;

const SECONDS = 90;
let daemon;

before(async () => { daemon = await startDaemon(); });
after(async () => { await daemon.stop(); });

const transports = {
  stdio: () => new StdioClientTransport({
    command: process.env.RUNBOX, args: [],
    env: { ...getDefaultEnvironment(), DAEMON_URL: daemon.url, RUNBOX_LOG: 'warn' } }),
  'streamable-http': () => new StreamableHTTPClientTransport(new URL(`${daemon.url}/mcp`)),
  sse: () => new SSEClientTransport(new URL(`${daemon.url}/sse`)),
  websocket: () => new WebSocketClientTransport(new URL(`${daemon.url.replace('http', 'ws')}/ws`)),
};

async function longCall(name) {
  const client = new Client({ name: `long-exec-${name}`, version: '1.0.0' });
  await client.connect(transports[name]());
  const progress = [];
  const started = Date.now();
  const r = await client.callTool(
    { name: 'exec',
      arguments: { command: `for i in $(seq ${SECONDS}); do echo "${name} $i"; sleep 1; done`,
                   // The most runboxd allows: the loop's own time grows with the load.
                   timeout_ms: 110000 } },
    undefined,
    { resetTimeoutOnProgress: true, onprogress: (p) => progress.push(p) });
  const took = Date.now() - started;
  await client.close();
  return { r, progress, took };
}

test(`a ${SECONDS} s exec with the SDK's default timeout and resetTimeoutOnProgress, on every transport`,
  async () => {
    assert.equal(DEFAULT_REQUEST_TIMEOUT_MSEC, 60000, 'the SDK default this test is about');
    const names = Object.keys(transports);
    const results = await Promise.all(names.map(longCall));
    results.forEach(({ r, progress, took }, i) => {
      const name = names[i];
      assert.equal(r.isError, false, `${name}: ${JSON.stringify(r).slice(0, 500)}`);
      assert.equal(r.structuredContent.exit_code, 0, name);
      const lines = r.content[0].text.trim().split('\n');
      assert.equal(lines.length, SECONDS, name);
      assert.equal(lines[SECONDS - 1], `${name} ${SECONDS}`);
      assert.ok(took > DEFAULT_REQUEST_TIMEOUT_MSEC, `${name}: ran past the default timeout`);
      // At least one report a second: never a gap the SDK's timeout could fall into.
      assert.ok(progress.length >= SECONDS - 5, `${name}: ${progress.length} progress reports`);
      assert.match(progress[progress.length - 1].message, new RegExp(`${name} \\d+`));
    });
  });
