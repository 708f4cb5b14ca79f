// Test MCP servers written with the official SDK, for the registry's tests: a WebSocket
// server (the SDK has a WebSocket client transport but no server one, so the transport is
// here: one JSON-RPC message per text frame, subprotocol "mcp"), and the tools every test
// server offers (echo, a slow call that reports progress and notices cancellation, a tool that
// adds a tool, a huge answer, a flood of progress before its answer).
import { WebSocketServer } from 'ws';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

// The SDK's Transport over one accepted WebSocket.
class WsServerTransport {
  constructor(socket) {
    this.socket = socket;
  }
  async start() {
    this.socket.on('message', (data) => {
      let msg;
      try {
        msg = JSON.parse(data.toString());
      } catch (e) {
        this.onerror?.(e);
        return;
      }
      this.onmessage?.(msg);
    });
    this.socket.on('close', () => this.onclose?.());
  }
  async send(message) {
    this.socket.send(JSON.stringify(message));
  }
  async close() {
    this.socket.close();
  }
}

// An McpServer with the test tools. events.cancelled(name) is called when a slow call sees
// its cancellation.
export function testServer(name, events = {}) {
  const server = new McpServer({ name, version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  server.registerTool('echo', { description: 'Echoes', inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: 'text', text: `${name}: ${message}` }] }));
  server.registerTool('slow', { description: 'Waits until cancelled or ms pass, reporting progress',
    inputSchema: { ms: z.number() } },
    async ({ ms }, extra) => {
      const token = extra._meta?.progressToken;
      if (token !== undefined)
        await extra.sendNotification({ method: 'notifications/progress',
          params: { progressToken: token, progress: 1, total: 2, message: 'started' } });
      events.started?.(name);
      if (events.gate) {
        await events.gate(name);
        return { content: [{ type: 'text', text: `${name}: through the gate` }] };
      }
      await new Promise((resolve) => {
        const t = setTimeout(resolve, ms);
        extra.signal.addEventListener('abort', () => { clearTimeout(t); events.cancelled?.(name); resolve(); });
      });
      return { content: [{ type: 'text', text: `${name}: slept` }] };
    });
  server.registerTool('add_tool', { description: 'Adds a tool named by the argument', inputSchema: { tool: z.string() } },
    async ({ tool }) => {
      server.registerTool(tool, { description: 'Added' }, async () => ({ content: [{ type: 'text', text: `${name}: ${tool} ran` }] }));
      return { content: [{ type: 'text', text: 'added' }] };
    });
  server.registerTool('fail', { description: 'Answers isError', inputSchema: { why: z.string() } },
    async ({ why }) => ({ content: [{ type: 'text', text: `${name}: failed: ${why}` }], isError: true }));
  server.registerTool('huge', { description: 'Answers n megabytes', inputSchema: { mb: z.number() } },
    async ({ mb }) => ({ content: [{ type: 'text', text: 'x'.repeat(mb * 1024 * 1024) }] }));
  // n progress notifications (1..n, each with a message of size bytes) as fast as the transport
  // takes them, then the answer; with done, that file is created once all n are sent.
  server.registerTool('flood', { description: 'Reports progress n times as fast as it can, then answers',
    inputSchema: { n: z.number(), size: z.number().optional(), done: z.string().optional() } },
    async ({ n, size = 0, done }, extra) => {
      const token = extra._meta?.progressToken;
      const message = 'p'.repeat(size);
      for (let i = 1; token !== undefined && i <= n; i++)
        await extra.sendNotification({ method: 'notifications/progress',
          params: { progressToken: token, progress: i, total: n, message } });
      if (done) writeFileSync(done, `${n}\n`);
      return { content: [{ type: 'text', text: `${name}: flooded ${n}` }] };
    });
  return server;
}

// Starts a WebSocket MCP server on a free loopback port; resolves to {url, close()}. Each
// connection gets a server of its own (as an SDK HTTP server does per session).
export async function startWsServer(name, events = {}) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0,
    handleProtocols: (protocols) => (protocols.has('mcp') ? 'mcp' : false) });
  await new Promise((resolve) => wss.on('listening', resolve));
  wss.on('connection', (socket, req) => {
    events.headers?.(req.headers);
    testServer(name, events).connect(new WsServerTransport(socket));
  });
  return {
    url: `ws://127.0.0.1:${wss.address().port}/`,
    close: () => new Promise((resolve) => { for (const c of wss.clients) c.terminate(); wss.close(resolve); }),
  };
}

// Starts the test tools over stateless Streamable HTTP on a free loopback port (a server per
// request, as the SDK's stateless example does); json: answers as application/json rather than
// as an event stream. Resolves to {url, close()}.
export async function startHttpServer(name, { json = false } = {}) {
  const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const http = await import('node:http');
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', async () => {
      const t = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
      await testServer(name).connect(t);
      await t.handleRequest(req, res, body ? JSON.parse(body) : undefined);
    });
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${srv.address().port}/mcp`,
    close: () => new Promise((resolve) => { srv.closeAllConnections(); srv.close(resolve); }),
  };
}

// As a program: `node mcpservers.mjs stdio NAME` serves the test tools over stdio, and says
// on stderr when a slow call starts or sees its cancellation (the console shows it). With
// MCPSERVERS_LINGER=1 it stays after its stdin ends, like a server that never notices its
// client is gone. With MCPSERVERS_START_MS=N it says "process up" at once and begins to serve
// N ms later, like a server that loads something big first.
if (import.meta.url === pathToFileURL(process.argv[1]).href && process.argv[2] === 'stdio') {
  const name = process.argv[3] || 'stdio';
  const server = testServer(name, {
    started: () => console.error(`${name}: slow call started`),
    cancelled: () => console.error(`${name}: slow call cancelled`),
  });
  if (process.env.MCPSERVERS_START_MS) {
    console.error(`${name}: process up`);
    await new Promise((r) => setTimeout(r, Number(process.env.MCPSERVERS_START_MS)));
  }
  await server.connect(new StdioServerTransport());
  console.error(`${name}: serving on stdio`);
  if (process.env.MCPSERVERS_LINGER === '1') setInterval(() => {}, 1 << 30);
}

// As a program: `node mcpservers.mjs raw NAME` is a hand-written stdio server whose answers are
// what no SDK would send: `nul` answers text with a NUL in it (\u0000), `deep` a result nested
// 100 levels deep with its id last, `broken` JSON cut off after its id, `ctrl` a raw control
// character inside a string; `echo` answers normally, and is listed with _meta, icons and
// execution. It has one prompt, also named `echo`.
// With RAW_LOOP=1 every tools/list page says there is a next one, with the same cursor; with
// RAW_INIT=junk it answers initialize with a log line and {} only; RAW_MANY=N lists N more tools
// (t0, t1, ...).
if (import.meta.url === pathToFileURL(process.argv[1]).href && process.argv[2] === 'raw') {
  const name = process.argv[3] || 'raw';
  const { createInterface } = await import('node:readline');
  const send = (text) => process.stdout.write(`${text}\n`);
  const answers = {
    nul: (id) => JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'a\0b' }] } }),
    deep: (id) => `{"jsonrpc":"2.0","result":{"content":[],"structuredContent":{"a":${'['.repeat(100)}${']'.repeat(100)}}},"id":${id}}`,
    broken: (id) => `{"jsonrpc":"2.0","id":${id},"result":{"content":[}`,
    ctrl: (id) => `{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"a\u0001b"}]}}`,
    echo: (id, args) => JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: `${name}: ${args.message}` }] } }),
  };
  // What a client should see of echo as the server gave it (_meta, icons), beside what it
  // should not: a _meta key that claims another server, and task support runbox does not have.
  const echoExtras = {
    _meta: { ui: { resourceUri: `ui://${name}/echo` }, 'runbox/server': 'elsewhere' },
    icons: [{ src: 'https://example.com/echo.png', mimeType: 'image/png', sizes: ['48x48'] }],
    execution: { taskSupport: 'required' },
  };
  createInterface({ input: process.stdin }).on('line', (line) => {
    const m = JSON.parse(line);
    if (m.method === 'initialize' && process.env.RAW_INIT === 'junk') {
      send(`${name} listening on stdio`); // a log line on stdout, then no answer at all
      send('{}');
    } else if (m.method === 'initialize') {
      send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
        capabilities: { tools: {}, prompts: {} }, serverInfo: { name, version: '1.0.0' } } }));
    } else if (m.method === 'tools/list') {
      const many = Array.from({ length: Number(process.env.RAW_MANY ?? 0) }, (_, i) => `t${i}`);
      send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { tools: [...Object.keys(answers), ...many].map((t) => (
        { name: t, inputSchema: { type: 'object' }, ...(t === 'echo' ? echoExtras : {}) })),
      ...(process.env.RAW_LOOP === '1' ? { nextCursor: 'again' } : {}) } }));
    } else if (m.method === 'prompts/list') {
      send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { prompts: [{ name: 'echo', description: 'a prompt named as a tool' }] } }));
    } else if (m.method === 'tools/call') {
      send(answers[m.params.name](m.id, m.params.arguments ?? {}));
    } else if (m.id !== undefined) {
      send(JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: `no ${m.method}` } }));
    }
  });
}
