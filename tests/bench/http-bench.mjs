#!/usr/bin/env node
// tests/bench/http-bench.mjs - one MCP-over-HTTP client for every HTTP server in the benchmark,
// so that runboxd's /mcp and a peer (@modelcontextprotocol/server-everything in its streamable
// HTTP mode) are driven by exactly the same code in the same run. Dependency-free: node:http
// with kept-alive connections (one per call in flight) and Node's built-in WebSocket.
//
//   node http-bench.mjs --url http://127.0.0.1:PORT/mcp --tool read_file --args '{"path":"/a.txt"}'
//        --expect abcdef --calls 2000 [--min-ms 1000] --warmup 100 --inflight 1,16 --pid PID --label NAME
//   node http-bench.mjs --url ws://127.0.0.1:PORT/ws ...            # the same over WebSocket
//   node http-bench.mjs --url http://127.0.0.1:PORT/mcp --sessions 256 --pid PID  # memory
//
// Calls: one session (initialize, notifications/initialized), then for each --inflight K:
// --warmup calls (at least 10 K) with K in flight, untimed, then --calls calls with K in flight,
// and more until the phase has lasted --min-ms (default 1000): a fast server's 2000 calls take
// under 0.1 s, too short a time to measure a rate (it read a third low).
// An answer may be application/json or a text/event-stream (the SDK's servers answer with a
// stream unless told otherwise): both are read to the message with the call's id, and its text
// must contain --expect. Prints one JSON line:
// {label, url, phases: [{inflight, calls, p50_ms, p90_ms, p99_ms, max_ms, calls_per_s}], rss_kib}.
// --sessions N: opens N sessions, each with its GET stream held open, and reports the server's
// RSS (VmRSS of --pid) before and with them.
import http from 'node:http';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { CLK_TCK, procStat } from '../lib/procstat.mjs';

function parseArgs(argv) {
  const o = { calls: 2000, min_ms: 1000, warmup: 100, inflight: [1, 16], args: '{}', expect: '',
              label: '',
              sessions: 0, pid: 0 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '');
    const v = argv[++i];
    if (k === 'inflight') o.inflight = v.split(',').map(Number);
    else if (['calls', 'warmup', 'sessions', 'pid'].includes(k)) o[k] = Number(v);
    else if (k === 'min-ms') o.min_ms = Number(v);
    else o[k] = v;
  }
  if (!o.url) throw new Error('--url is needed');
  return o;
}

const opt = parseArgs(process.argv.slice(2));
const url = new URL(opt.url);

// The CPU time (user + system) the server process used so far, in µs.
function cpuUs(pid) {
  if (!pid) return null;
  const s = procStat(pid);
  return s ? ((s.utime + s.stime) * 1e6) / CLK_TCK : null;
}

function rssKiB(pid) {
  if (!pid) return null;
  const m = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : null;
}

// ---- Streamable HTTP ----

// One kept-alive HTTP/1.1 connection written and parsed by hand: node:http's own client costs
// more per request than the servers measured here, and would be what the figures show. Requests
// go one at a time on a connection; answers are Content-Length or chunked bodies.
class Conn {
  constructor() {
    this.sock = null;
    this.buf = Buffer.alloc(0);
    this.waiter = null;
  }

  connect() {
    return new Promise((resolve, reject) => {
      this.sock = net.connect(Number(url.port), url.hostname, resolve);
      this.sock.setNoDelay(true);
      this.sock.on('error', (e) => { if (this.waiter) this.waiter.reject(e); else reject(e); });
      // The server closes a kept-alive connection it found idle: the next request reconnects.
      this.sock.on('close', () => {
        this.closed = true;
        if (this.waiter) this.waiter.reject(new Error('the server closed the connection'));
        this.waiter = null;
      });
      this.sock.on('data', (c) => {
        this.buf = this.buf.length ? Buffer.concat([this.buf, c]) : c;
        this.#parse();
      });
    });
  }

  // Parses one whole response off this.buf when it is there.
  #parse() {
    if (!this.waiter) return;
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = this.buf.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(head[0].split(' ')[1]);
    const headers = {};
    for (const l of head.slice(1)) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
    }
    let off = end + 4;
    let body;
    if (headers['transfer-encoding'] === 'chunked') {
      const parts = [];
      for (;;) {
        const nl = this.buf.indexOf('\r\n', off);
        if (nl < 0) return;
        const size = parseInt(this.buf.subarray(off, nl).toString('latin1'), 16);
        if (this.buf.length < nl + 2 + size + 2) return;
        if (size === 0) { off = nl + 4; break; }
        parts.push(this.buf.subarray(nl + 2, nl + 2 + size));
        off = nl + 2 + size + 2;
      }
      body = Buffer.concat(parts);
    } else {
      const len = Number(headers['content-length'] || 0);
      if (this.buf.length < off + len) return;
      body = this.buf.subarray(off, off + len);
      off += len;
    }
    this.buf = this.buf.subarray(off);
    const w = this.waiter;
    this.waiter = null;
    w.resolve({ status, headers, text: body.toString('utf8') });
  }

  async request(method, headers, body) {
    if (this.closed) {
      this.closed = false;
      this.buf = Buffer.alloc(0);
      await this.connect();
    }
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      let head = `${method} ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\n`;
      for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
      const b = body ? Buffer.from(body) : null;
      head += `Content-Length: ${b ? b.length : 0}\r\n\r\n`;
      this.sock.write(b ? Buffer.concat([Buffer.from(head, 'latin1'), b]) : head);
    });
  }
}

function httpClient(connections) {
  const idle = [];
  const waiting = [];
  let made = 0;
  let session = null;
  const take = async () => {
    if (idle.length) return idle.pop();
    if (made < connections) {
      made++;
      const c = new Conn();
      await c.connect();
      return c;
    }
    return new Promise((r) => waiting.push(r));
  };
  const give = (c) => (waiting.length ? waiting.shift()(c) : idle.push(c));
  const exchange = async (method, headers, body) => {
    const c = await take();
    try {
      return await c.request(method, headers, body);
    } finally {
      give(c);
    }
  };
  const post = async (msg) => {
    const headers = { 'Content-Type': 'application/json',
                      Accept: 'application/json, text/event-stream' };
    if (session) {
      headers['Mcp-Session-Id'] = session;
      headers['MCP-Protocol-Version'] = '2025-11-25';
    }
    const res = await exchange('POST', headers, JSON.stringify(msg));
    if (res.headers['mcp-session-id']) session = res.headers['mcp-session-id'];
    if (res.status === 202) return null;
    if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${res.text.slice(0, 300)}`);
    if (!/^text\/event-stream/.test(res.headers['content-type'] || '')) return JSON.parse(res.text);
    // An SSE answer: the stream ends after it; take the message with our id.
    for (const ev of res.text.split(/\n\n/)) {
      const data = ev.split('\n').filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart()).join('\n');
      if (!data) continue;
      const m = JSON.parse(data);
      if (m.id === msg.id) return m;
    }
    throw new Error(`no answer in the stream: ${res.text.slice(0, 300)}`);
  };
  return {
    async open() {
      const r = await post({ jsonrpc: '2.0', id: 0, method: 'initialize',
                             params: { protocolVersion: '2025-11-25', capabilities: {},
                                       clientInfo: { name: 'http-bench', version: '1' } } });
      if (!r?.result) throw new Error(`initialize: ${JSON.stringify(r)}`);
      await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
      return session;
    },
    call: post,
    get session() { return session; },
    async close() {
      await exchange('DELETE', { 'Mcp-Session-Id': session }, null).catch(() => {});
      for (const c of idle) c.sock.destroy();
    },
  };
}

// ---- WebSocket ----

// A WebSocket client written by hand like the HTTP one (Node's own WebSocket costs more per
// message than the server does): the upgrade, then text frames with a zero masking key (allowed
// by RFC 6455; a benchmark needs no unpredictable key), and the server's unmasked frames parsed.
function wsClient() {
  const pending = new Map();
  let sock;
  let buf = Buffer.alloc(0);
  const onFrames = () => {
    for (;;) {
      if (buf.length < 2) return;
      let len = buf[1] & 127;
      let off = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        len = Number(buf.readBigUInt64BE(2));
        off = 10;
      }
      if (buf.length < off + len) return;
      if ((buf[0] & 15) === 1) {
        const m = JSON.parse(buf.subarray(off, off + len).toString('utf8'));
        const p = pending.get(m.id);
        if (p) {
          pending.delete(m.id);
          p(m);
        }
      }
      buf = buf.subarray(off + len);
    }
  };
  const frame = (text) => {
    const data = Buffer.from(text);
    const n = data.length;
    const head = n < 126 ? Buffer.from([0x81, 0x80 | n, 0, 0, 0, 0])
      : n < 65536 ? Buffer.from([0x81, 0x80 | 126, n >> 8, n & 255, 0, 0, 0, 0])
        : (() => { const h = Buffer.alloc(14); h[0] = 0x81; h[1] = 0x80 | 127;
                   h.writeBigUInt64BE(BigInt(n), 2); return h; })();
    return Buffer.concat([head, data]);
  };
  const client = {
    open() {
      return new Promise((resolve, reject) => {
        sock = net.connect(Number(url.port), url.hostname, () => {
          sock.setNoDelay(true);
          sock.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\n` +
                     'Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
                     'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mcp\r\n\r\n');
        });
        sock.on('error', reject);
        let upgraded = false;
        sock.on('data', async (c) => {
          buf = buf.length ? Buffer.concat([buf, c]) : c;
          if (!upgraded) {
            const end = buf.indexOf('\r\n\r\n');
            if (end < 0) return;
            if (!/^HTTP\/1\.1 101/.test(buf.toString('latin1', 0, 12)))
              return reject(new Error(`upgrade refused: ${buf.toString('latin1', 0, end)}`));
            upgraded = true;
            buf = buf.subarray(end + 4);
            const r = await client.call({ jsonrpc: '2.0', id: 0, method: 'initialize',
                                          params: { protocolVersion: '2025-11-25', capabilities: {},
                                                    clientInfo: { name: 'http-bench', version: '1' } } });
            sock.write(frame(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })));
            resolve(r);
          }
          onFrames();
        });
      });
    },
    call(msg) {
      return new Promise((resolve) => {
        pending.set(msg.id, resolve);
        sock.write(frame(JSON.stringify(msg)));
      });
    },
    close() {
      sock.end(Buffer.from([0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8]));
      return Promise.resolve();
    },
  };
  return client;
}

// ---- measuring ----

function check(answer) {
  const text = answer?.result?.content?.map((c) => c.text).join('') ?? '';
  if (answer?.error || answer?.result?.isError || !text.includes(opt.expect))
    throw new Error(`unexpected answer: ${JSON.stringify(answer).slice(0, 300)}`);
}

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

async function phase(client, inflight, calls, nextId, minMs = 0) {
  const lat = [];
  let issued = 0;
  const t0 = process.hrtime.bigint();
  const until = t0 + BigInt(Math.round(minMs * 1e6));
  const cpu0 = cpuUs(opt.pid);
  const worker = async () => {
    while (issued < calls || process.hrtime.bigint() < until) {
      issued++;
      const id = nextId();
      const s = process.hrtime.bigint();
      const a = await client.call({ jsonrpc: '2.0', id, method: 'tools/call',
                                    params: { name: opt.tool, arguments: JSON.parse(opt.args) } });
      lat.push(Number(process.hrtime.bigint() - s) / 1e6);
      check(a);
    }
  };
  await Promise.all(Array.from({ length: inflight }, worker));
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  calls = issued;
  const cpu = opt.pid ? (cpuUs(opt.pid) - cpu0) / calls : null;
  lat.sort((a, b) => a - b);
  const r = (x) => Math.round(x * 1000) / 1000;
  return { inflight, calls, p50_ms: r(pct(lat, 50)), p90_ms: r(pct(lat, 90)),
           p99_ms: r(pct(lat, 99)), max_ms: r(lat.at(-1)), calls_per_s: Math.round(calls / secs),
           server_cpu_us_per_call: cpu === null ? null : Math.round(cpu * 10) / 10 };
}

async function benchCalls() {
  const ws = url.protocol === 'ws:';
  const client = ws ? wsClient() : httpClient(Math.max(...opt.inflight));
  await client.open();
  let id = 1;
  const nextId = () => id++;
  // Each timed phase is preceded by --warmup calls at its own width, so that its K connections
  // are open (and the server's workers for them awake) before the clock starts: otherwise the
  // first phase wider than the warm-up would time K-1 connection set-ups too.
  const phases = [];
  for (const k of opt.inflight) {
    await phase(client, k, Math.max(opt.warmup, 10 * k), nextId);
    phases.push(await phase(client, k, opt.calls, nextId, opt.min_ms));
  }
  const rss = rssKiB(opt.pid);
  await client.close();
  return { label: opt.label, url: opt.url, tool: opt.tool, phases, rss_kib: rss };
}

// Opens n sessions, each with its GET stream held open; reports the server's RSS.
async function benchSessions(n) {
  const before = rssKiB(opt.pid);
  const clients = [];
  const streams = [];
  for (let i = 0; i < n; i++) {
    const c = httpClient(1);
    await c.open();
    clients.push(c);
    await new Promise((resolve, reject) => {
      const req = http.request({ host: url.hostname, port: url.port, path: url.pathname,
                                 agent: false,
                                 headers: { Accept: 'text/event-stream',
                                            'Mcp-Session-Id': c.session,
                                            'MCP-Protocol-Version': '2025-11-25' } }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`GET stream ${i}: HTTP ${res.statusCode}`));
        res.on('data', () => {});
        streams.push(req);
        resolve();
      });
      req.on('error', (e) => (streams.includes(req) ? null : reject(e)));
      req.end();
    });
  }
  // A quiet moment for the server to settle its first-use allocations.
  await new Promise((r) => setTimeout(r, 500));
  const withSessions = rssKiB(opt.pid);
  for (const s of streams) s.destroy();
  for (const c of clients) await c.close();
  return { label: opt.label, url: opt.url, sessions: n, rss_kib_before: before,
           rss_kib_with_sessions: withSessions };
}

const out = opt.sessions ? await benchSessions(opt.sessions) : await benchCalls();
console.log(JSON.stringify(out));
process.exit(0);
