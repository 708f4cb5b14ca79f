// tests/lib/mcp.mjs - helpers for the tests of runboxd's MCP endpoints (/mcp, /sse + /message,
// /ws): the official SDK client on each transport, raw Streamable HTTP requests, a raw
// WebSocket client that can send any frame (binary, fragmented, oversized), and waiting for a
// condition.
//
//   const c = await sdkClient(d, 'http' | 'sse' | 'ws');        // a connected SDK Client
//   const s = await mcpSession(d);                               // raw: s.id, s.post(msg)
//   const ws = await WsClient.open(d.port);                      // raw frames
//   await until('what', async () => cond);                       // polls a condition
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';

import { request, runboxdPath } from './daemon.mjs';
import { until as waitUntil } from './wait.mjs';

export const TRANSPORTS = ['http', 'sse', 'ws'];

// Waits until pred() is truthy (polled every 20 ms) and returns its value, however long that
// takes: tests/lib/wait.mjs's until() (a hang says what it waits for; ctest's timeout ends it).
export function until(what, pred) {
  return waitUntil(what, pred);
}

// The SDK's client transport for kind on daemon d. headers: sent with every HTTP request (the
// WebSocket transport takes none: the browser API has no way to set them).
export function sdkTransport(d, kind, headers = {}) {
  const base = `http://127.0.0.1:${d.port}`;
  const requestInit = { headers };
  if (kind === 'http')
    return new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit });
  if (kind === 'sse') {
    // The SDK's SSE transport reads its stream with eventsource, which takes its own fetch.
    const fetchWithHeaders = (url, init) =>
      fetch(url, { ...init, headers: { ...(init?.headers || {}), ...headers } });
    return new SSEClientTransport(new URL(`${base}/sse`),
                                  { requestInit, eventSourceInit: { fetch: fetchWithHeaders } });
  }
  if (kind === 'ws') return new WebSocketClientTransport(new URL(`ws://127.0.0.1:${d.port}/ws`));
  throw new Error(`unknown transport ${kind}`);
}

export async function sdkClient(d, kind, headers = {}) {
  const c = new Client({ name: `runbox-test-${kind}`, version: '1.0.0' });
  await c.connect(sdkTransport(d, kind, headers));
  return c;
}

// ---- raw Streamable HTTP ----

export const ACCEPT_BOTH = 'application/json, text/event-stream';

export function initializeMessage(id = 1, version = '2025-11-25') {
  return { jsonrpc: '2.0', id, method: 'initialize',
           params: { protocolVersion: version, capabilities: {},
                     clientInfo: { name: 'runbox-raw', version: '1.0.0' } } };
}

// POST /mcp with msg (an object, or a string/Buffer sent as is); headers with the value
// undefined are left out. Resolves { status, headers, text, body }.
export function mcpPost(port, msg, headers = {}, path = '/mcp') {
  const all = { 'Content-Type': 'application/json', Accept: ACCEPT_BOTH, ...headers };
  for (const k of Object.keys(all)) if (all[k] === undefined) delete all[k];
  const body = typeof msg === 'string' || Buffer.isBuffer(msg) ? msg : JSON.stringify(msg);
  return request(port, path, { method: 'POST', headers: all, body });
}

// A Streamable HTTP session opened with initialize (and notifications/initialized).
// s.post(msg, headers) posts with the session's id; s.id; s.delete().
export async function mcpSession(d, headers = {}) {
  const r = await mcpPost(d.port, initializeMessage(), headers);
  assert.equal(r.status, 200, r.text);
  const id = r.headers['mcp-session-id'];
  assert.match(id, /^[\x21-\x7e]+$/, 'Mcp-Session-Id is visible ASCII');
  const s = {
    id,
    init: r.body,
    post: (msg, h = {}) => mcpPost(d.port, msg, { 'Mcp-Session-Id': id, ...headers, ...h }),
    delete: () => request(d.port, '/mcp', { method: 'DELETE',
                                            headers: { 'Mcp-Session-Id': id, ...headers } }),
  };
  const n = await s.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  assert.equal(n.status, 202, n.text);
  return s;
}

// ---- a raw WebSocket client ----

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

// Encodes one client frame (masked, as RFC 6455 requires of clients).
export function wsFrame(opcode, payload, fin = true) {
  const data = Buffer.isBuffer(payload) ? payload : Buffer.from(payload ?? '');
  const len = data.length;
  let head;
  if (len < 126) {
    head = Buffer.alloc(2);
    head[1] = 0x80 | len;
  } else if (len < 65536) {
    head = Buffer.alloc(4);
    head[1] = 0x80 | 126;
    head.writeUInt16BE(len, 2);
  } else {
    head = Buffer.alloc(10);
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(len), 2);
  }
  head[0] = (fin ? 0x80 : 0) | opcode;
  const mask = crypto.randomBytes(4);
  const masked = Buffer.allocUnsafe(len);
  for (let i = 0; i < len; i++) masked[i] = data[i] ^ mask[i & 3];
  return Buffer.concat([head, mask, masked]);
}

export const WS_TEXT = 1, WS_BINARY = 2, WS_CLOSE = 8, WS_PING = 9, WS_PONG = 10, WS_CONT = 0;

// One WebSocket connection over a plain socket: upgrade by hand, then frames in both directions.
// Incoming frames collect in ws.frames ({opcode, data: Buffer}); ws.messages() are the text
// frames parsed as JSON; ws.closed resolves when the socket ends.
export class WsClient {
  static open(port, { headers = {}, protocol = 'mcp', path = '/ws' } = {}) {
    return new Promise((resolve, reject) => {
      const sock = net.connect(port, '127.0.0.1');
      const key = crypto.randomBytes(16).toString('base64');
      const lines = [`GET ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Upgrade: websocket',
                     'Connection: Upgrade', `Sec-WebSocket-Key: ${key}`,
                     'Sec-WebSocket-Version: 13'];
      if (protocol) lines.push(`Sec-WebSocket-Protocol: ${protocol}`);
      for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
      let buf = Buffer.alloc(0);
      const onData = (c) => {
        buf = Buffer.concat([buf, c]);
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        sock.off('data', onData);
        const head = buf.subarray(0, end).toString('latin1');
        const status = Number(head.split(' ')[1]);
        const rest = buf.subarray(end + 4);
        if (status !== 101) {
          // Read the refusal's body too, for the message.
          let body = rest;
          sock.on('data', (d) => { body = Buffer.concat([body, d]); });
          sock.on('close', () => resolve({ refused: true, status, head,
                                           body: body.toString('utf8') }));
          sock.end();
          return;
        }
        const accept = crypto.createHash('sha1').update(key + WS_GUID).digest('base64');
        if (!head.includes(accept)) {
          reject(new Error(`bad Sec-WebSocket-Accept in ${head}`));
          return;
        }
        resolve(new WsClient(sock, rest, head));
      };
      sock.on('data', onData);
      sock.once('error', reject);
      sock.write(lines.join('\r\n') + '\r\n\r\n');
    });
  }

  constructor(sock, rest, head) {
    this.sock = sock;
    this.head = head;
    this.frames = [];
    this.buf = Buffer.alloc(0);
    this.waiters = [];
    this.closed = new Promise((resolve) => sock.on('close', resolve));
    sock.on('error', () => {});
    sock.on('data', (c) => this.#feed(c));
    if (rest.length) this.#feed(rest);
  }

  #feed(c) {
    this.buf = Buffer.concat([this.buf, c]);
    for (;;) {
      if (this.buf.length < 2) break;
      let len = this.buf[1] & 127, off = 2;
      if (len === 126) {
        if (this.buf.length < 4) break;
        len = this.buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (this.buf.length < 10) break;
        len = Number(this.buf.readBigUInt64BE(2));
        off = 10;
      }
      if (this.buf.length < off + len) break;
      this.frames.push({ opcode: this.buf[0] & 15, data: this.buf.subarray(off, off + len) });
      this.buf = this.buf.subarray(off + len);
    }
    for (const w of this.waiters.splice(0)) w();
  }

  send(opcode, payload, fin = true) {
    return new Promise((resolve) => this.sock.write(wsFrame(opcode, payload, fin), resolve));
  }

  sendJson(msg) {
    return this.send(WS_TEXT, JSON.stringify(msg));
  }

  messages() {
    return this.frames.filter((f) => f.opcode === WS_TEXT).map((f) => JSON.parse(f.data));
  }

  // Resolves with the first frame (index >= from) that pred accepts; rejects when the socket
  // closes first.
  async waitFrame(pred, from = 0) {
    for (;;) {
      const i = this.frames.findIndex((f, k) => k >= from && pred(f));
      if (i >= 0) return this.frames[i];
      if (this.sock.destroyed || this.sock.readableEnded)
        throw new Error(`the WebSocket closed; frames: ${JSON.stringify(this.frames.map(
          (f) => [f.opcode, f.data.toString('utf8').slice(0, 200)]))}`);
      await new Promise((r) => {
        this.waiters.push(r);
        this.sock.once('close', r);
      });
    }
  }

  // The message answering request id.
  async answer(id) {
    const f = await this.waitFrame((x) => x.opcode === WS_TEXT && JSON.parse(x.data).id === id);
    return JSON.parse(f.data);
  }

  destroy() {
    this.sock.destroy();
  }
}

// ---- the daemon's process ----

// True when runboxd was built with a sanitizer: its memory figures then say nothing (ASan keeps
// freed memory in quarantine), so memory assertions are skipped (the figures still print).
let sanitized;
export function isSanitized() {
  if (sanitized === undefined) {
    const bin = readFileSync(runboxdPath());
    sanitized = bin.includes('__asan_init') || bin.includes('__tsan_init');
  }
  return sanitized;
}

// Resident and peak memory of a process, from /proc (KiB).
export function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return { rssKiB: kb('VmRSS'), hwmKiB: kb('VmHWM'), threads: kb('Threads') };
}

// Open file descriptors of a process.
export function fdCount(pid) {
  return readdirSync(`/proc/${pid}/fd`).length;
}
