// Integration: every answer says what civetweb then does with the connection (common/http_conn.h).
// civetweb keeps a connection after an answer only when the client's Connection header lists
// keep-alive, or, without that header, on HTTP/1.1. An answer on a connection it keeps says
// "Keep-Alive: timeout=5"; one it closes says "Connection: close" — on the daemon's own routes
// and on the MCP transport alike. HTTP/1.0 has no chunks: an event stream to such a client is
// unchunked and ends when the connection closes, even when the client asked to keep it.
// Everything goes over raw sockets to a real runboxd.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';

let d;
before(async () => { d = await startDaemon({ workspace: ':memory:' }); });
after(async () => { await d?.stop(); });

// Writes one request on a fresh connection and reads until `done(text)` holds (closed: false)
// or the daemon closes the connection (closed: true); waits `graceMs` more after `done` to see
// whether a close follows. A close comes at once on an idle machine, but a loaded one may run
// the worker late: where a close is expected, wait long for it (civetweb's own keep-alive
// timer would close a kept connection only after 5 s).
function exchange(request, done, { graceMs = 300 } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(d.port, '127.0.0.1');
    let text = '', timer = null;
    const finish = (closed) => { clearTimeout(timer); sock.destroy(); resolve({ text, closed }); };
    sock.setEncoding('latin1');
    sock.on('data', (c) => {
      text += c;
      if (!timer && done(text)) timer = setTimeout(() => finish(false), graceMs);
    });
    sock.on('end', () => finish(true));
    sock.on('error', (e) => (e.code === 'ECONNRESET' ? finish(true) : reject(e)));
    sock.on('connect', () => sock.write(request));
  });
}

const head = (text) => text.slice(0, text.indexOf('\r\n\r\n') + 2);
// A complete answer with a Content-Length is in text.
const whole = (text) => {
  const end = text.indexOf('\r\n\r\n');
  const m = /\r\nContent-Length: (\d+)\r\n/i.exec(text);
  return end >= 0 && m && text.length >= end + 4 + Number(m[1]);
};

const get = (version, conn, path = '/health') =>
  `GET ${path} HTTP/${version}\r\nHost: 127.0.0.1:${d.port}\r\n${conn ? `Connection: ${conn}\r\n` : ''}\r\n`;
// /mcp needs both types in Accept; /tool answers an event stream when it may.
const post = (path, body, version, conn, extra = '') => {
  const b = JSON.stringify(body);
  const accept = path === '/mcp' ? 'application/json, text/event-stream' : 'application/json';
  return `POST ${path} HTTP/${version}\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\n` +
    `Accept: ${accept}\r\n${conn ? `Connection: ${conn}\r\n` : ''}${extra}` +
    `Content-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`;
};
const INIT = { jsonrpc: '2.0', id: 1, method: 'initialize',
               params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'ka', version: '1' } } };

// [version, Connection header, does civetweb keep the connection]
const CASES = [
  ['1.1', null, true],
  ['1.1', 'keep-alive', true],
  ['1.1', 'close', false],
  ['1.1', 'TE', false],            // a Connection header without keep-alive closes, on 1.1 too
  ['1.1', 'TE, Keep-Alive', true],
  ['1.0', null, false],
  ['1.0', 'keep-alive', true],
  ['1.0', 'Upgrade', false],
];

for (const [version, conn, keeps] of CASES) {
  test(`HTTP/${version}${conn ? ` with Connection: ${conn}` : ''}: the answer says the connection ${keeps ? 'stays' : 'closes'}, and it does`, async () => {
    const routes = [
      ['GET /health', get(version, conn)],
      ['GET / (the status page)', get(version, conn, '/')],
      ['POST /tool/list_dir', post('/tool/list_dir', { path: '/' }, version, conn)],
      ['POST /mcp initialize', post('/mcp', INIT, version, conn)],
      ['POST /mcp refused', post('/mcp', { jsonrpc: '2.0', id: 2, method: 'tools/list' }, version, conn)],
    ];
    for (const [name, request] of routes) {
      const r = await exchange(request, whole, { graceMs: keeps ? 300 : 4000 });
      const h = head(r.text);
      assert.ok(whole(r.text), `${name}: a whole answer: ${r.text}`);
      if (keeps) {
        assert.match(h, /\r\nKeep-Alive: timeout=5\r\n/, `${name}: ${h}`);
        assert.doesNotMatch(h, /\r\nConnection: close\r\n/i, `${name}: ${h}`);
        assert.equal(r.closed, false, `${name}: the connection stays open`);
      } else {
        assert.match(h, /\r\nConnection: close\r\n/, `${name}: ${h}`);
        assert.doesNotMatch(h, /\r\nKeep-Alive:/, `${name}: ${h}`);
        assert.equal(r.closed, true, `${name}: the connection is closed`);
      }
    }
  });
}

// The daemon's own event streams (a POST /tool answered as a stream, GET /events) on HTTP/1.1
// are chunked, and their heads say what happens after them like every other answer.
test('POST /tool streamed and GET /events on HTTP/1.1: the head says Keep-Alive or Connection: close', async () => {
  const ended = (t) => t.includes('\r\n0\r\n\r\n');
  for (const [conn, keeps] of [[null, true], ['TE', false]]) {
    const call = post('/tool/exec', { command: 'echo hi' }, '1.1', conn).replace('Accept: application/json', 'Accept: text/event-stream');
    const r = await exchange(call, ended, { graceMs: keeps ? 300 : 4000 });
    const h = head(r.text);
    assert.match(h, /\r\nContent-Type: text\/event-stream\r\n/, h);
    assert.match(h, /\r\nTransfer-Encoding: chunked\r\n/, h);
    assert.ok(ended(r.text), `the stream ends with its last chunk: ${r.text}`);
    assert.match(r.text, /"stdout":"hi\\n"/, r.text);
    const events = get('1.1', conn, '/events');
    const e = await exchange(events, (t) => t.includes('\r\n\r\n'), { graceMs: 100 });
    for (const [name, text, closed] of [['POST /tool', h, r.closed], ['GET /events', head(e.text), null]]) {
      if (keeps) {
        assert.match(text, /\r\nKeep-Alive: timeout=5\r\n/, `${name}: ${text}`);
        assert.doesNotMatch(text, /\r\nConnection: close\r\n/i, `${name}: ${text}`);
      } else {
        assert.match(text, /\r\nConnection: close\r\n/, `${name}: ${text}`);
        assert.doesNotMatch(text, /\r\nKeep-Alive:/, `${name}: ${text}`);
      }
      if (closed !== null) assert.equal(closed, !keeps, `${name}: the connection ${keeps ? 'stays' : 'is closed'}`);
    }
  }
});

test('GET /sse on HTTP/1.0: an unchunked stream that ends with the connection', async () => {
  for (const conn of [null, 'keep-alive']) {
    const req = `GET /sse HTTP/1.0\r\nHost: 127.0.0.1:${d.port}\r\nAccept: text/event-stream\r\n` +
      `${conn ? `Connection: ${conn}\r\n` : ''}\r\n`;
    const r = await exchange(req, (t) => /data: \/message\?sessionId=[0-9a-f]+\n\n/.test(t));
    const h = head(r.text);
    assert.match(h, /\r\nContent-Type: text\/event-stream\r\n/);
    assert.match(h, /\r\nConnection: close\r\n/);
    assert.doesNotMatch(h, /Transfer-Encoding/i);
    // The first bytes of the body are the event itself, with no chunk size before it.
    assert.match(r.text, /\r\n\r\nevent: endpoint\ndata: \/message\?sessionId=[0-9a-f]+\n\n/);
  }
});

test('POST /mcp answered as an event stream on HTTP/1.0: unchunked, ends with the connection', async () => {
  // A session of its own, then a call that sends progress before its answer (exec says how it
  // is doing once a second), so the answer is an event stream.
  const init = await exchange(post('/mcp', INIT, '1.1', null), whole);
  const sid = /\r\nMcp-Session-Id: ([0-9a-f]+)\r\n/i.exec(init.text)[1];
  const call = { jsonrpc: '2.0', id: 2, method: 'tools/call',
                 params: { name: 'exec', arguments: { command: 'echo a; sleep 1.3; echo b' },
                           _meta: { progressToken: 'p' } } };
  for (const conn of [null, 'keep-alive']) {
    const r = await exchange(post('/mcp', call, '1.0', conn,
      `Mcp-Session-Id: ${sid}\r\nMCP-Protocol-Version: 2025-06-18\r\n`), () => false);
    assert.equal(r.closed, true, 'the stream ends with the connection');
    const h = head(r.text);
    assert.match(h, /\r\nContent-Type: text\/event-stream\r\n/, h);
    assert.match(h, /\r\nConnection: close\r\n/, h);
    assert.doesNotMatch(h, /Transfer-Encoding/i, h);
    const body = r.text.slice(r.text.indexOf('\r\n\r\n') + 4);
    const events = body.split('\n\n').filter(Boolean);
    assert.ok(events.length >= 2, `progress, then the answer: ${body}`);
    for (const e of events) assert.match(e, /^event: message\ndata: \{/, `no chunk framing: ${JSON.stringify(e)}`);
    const last = JSON.parse(events[events.length - 1].slice('event: message\ndata: '.length));
    assert.equal(last.id, 2);
    assert.equal(last.result.structuredContent.stdout, 'a\nb\n');
    assert.match(events[0], /notifications\/progress/);
  }
});
