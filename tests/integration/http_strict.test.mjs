// Integration: strict HTTP (issue 12 §4). A request whose framing or target can be read two ways
// is refused with a JSON 400 before any handler runs, on the daemon's own routes and on the MCP
// transports alike, and the smuggled part never runs; civetweb's own error answers are JSON too.
// Every case goes over a raw socket to a real runboxd.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';

let d;
let H; // the Host line of every raw request
before(async () => {
  d = await startDaemon();
  H = `Host: 127.0.0.1:${d.port}\r\n`;
});
after(async () => { await d.stop(); });
afterEach(async () => {
  const h = await d.get('/health');
  assert.equal(h.status, 200, `runboxd stopped answering; its stderr:\n${d.stderr()}`);
});

// Sends bytes on a fresh connection and collects everything until the daemon closes it (or
// `idleMs` pass after the last byte received, for answers on a connection kept alive).
function raw(bytes, { idleMs = 15000 } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(d.port, '127.0.0.1');
    let got = Buffer.alloc(0);
    let timer = null;
    const done = (closed) => { clearTimeout(timer); sock.destroy(); resolve({ text: got.toString('latin1'), closed }); };
    const arm = () => { clearTimeout(timer); timer = setTimeout(() => done(false), idleMs); };
    sock.on('data', (c) => { got = Buffer.concat([got, c]); arm(); });
    sock.on('end', () => done(true));
    sock.on('error', (e) => (e.code === 'ECONNRESET' ? done(true) : reject(e)));
    arm();
    sock.write(bytes);
  });
}

// The answers in a raw byte stream: [{status, headers, body}] (body parsed as JSON or null).
function answers(text) {
  const out = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const head = rest.slice(0, end).split('\r\n');
    const headers = {};
    for (const l of head.slice(1)) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
    }
    const len = Number(headers['content-length'] ?? 0);
    const bodyText = rest.slice(end + 4, end + 4 + len);
    let body = null;
    try { body = JSON.parse(bodyText); } catch { /* not JSON */ }
    out.push({ status: Number(head[0].split(' ')[1]), headers, body, bodyText });
    rest = rest.slice(end + 4 + len);
  }
  return out;
}

// Exactly one answer, a JSON 400 (or `status`) whose error matches `pattern`, on a connection
// the daemon then closed (so nothing after it was read as a request).
function refused(r, pattern, status = 400) {
  const a = answers(r.text);
  assert.equal(a.length, 1, `expected one answer, got:\n${r.text}`);
  assert.equal(a[0].status, status, r.text);
  assert.match(a[0].headers['content-type'], /^application\/json/, r.text);
  // runboxd's {"ok":false,"error":"..."}, or on an MCP endpoint a JSON-RPC error object.
  const msg = a[0].body?.ok === false ? a[0].body.error : a[0].body?.error?.message;
  assert.equal(typeof msg, 'string', r.text);
  assert.match(msg, pattern);
  assert.equal(r.closed, true, 'the connection is closed after the refusal');
  // ... and says so, without also promising to keep it (Keep-Alive: timeout=5).
  assert.match(a[0].headers.connection ?? '', /close/i, r.text);
  assert.equal(a[0].headers['keep-alive'], undefined, r.text);
  return a[0];
}

const JSONCT = 'Content-Type: application/json\r\n';
const write = (name) => JSON.stringify({ path: `/${name}`, content: 'smuggled' });
const smuggledHealth = () => `GET /health HTTP/1.1\r\n${H}\r\n`;

describe('ambiguous framing is refused before any handler runs', () => {
  test('Content-Length together with Transfer-Encoding: 400, neither body nor the smuggled request runs', async () => {
    const body = write('clte.txt');
    const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    // Read by Content-Length, the chunked framing would be a second request; read as chunked,
    // the tool would run. Neither may happen.
    const r = await raw(`POST /tool/write_file HTTP/1.1\r\n${H}${JSONCT}Content-Length: 4\r\n` +
                        `Transfer-Encoding: chunked\r\n\r\n${chunked}${smuggledHealth()}`);
    refused(r, /both Content-Length and Transfer-Encoding/);
    assert.equal(existsSync(path.join(d.workspace, 'clte.txt')), false);
  });

  test('"Transfer-Encoding :" (space before the colon) is refused, not taken as chunked', async () => {
    const body = write('tespace.txt');
    const r = await raw(`POST /tool/write_file HTTP/1.1\r\n${H}${JSONCT}Transfer-Encoding : chunked\r\n` +
                        `\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    refused(r, /"Transfer-Encoding" has whitespace before its colon/);
    assert.equal(existsSync(path.join(d.workspace, 'tespace.txt')), false);
  });

  test('any Transfer-Encoding but exactly chunked is refused', async () => {
    for (const te of ['identity', 'gzip, chunked', 'chunked, chunked', 'xchunked', 'chunked;q=1']) {
      const r = await raw(`POST /tool/list_dir HTTP/1.1\r\n${H}${JSONCT}Transfer-Encoding: ${te}\r\n` +
                          '\r\n2\r\n{}\r\n0\r\n\r\n');
      refused(r, /Transfer-Encoding .* is not supported; the only one accepted is exactly "chunked"/);
    }
    // chunked on HTTP/1.0 is refused too (1.0 has no chunked bodies).
    const old = await raw(`POST /tool/list_dir HTTP/1.0\r\n${H}${JSONCT}Transfer-Encoding: chunked\r\n` +
                          '\r\n2\r\n{}\r\n0\r\n\r\n');
    refused(old, /needs HTTP\/1\.1/);
  });

  test('two Content-Length headers are refused, equal or not', async () => {
    for (const [a, b] of [['2', '2'], ['2', '40']]) {
      const r = await raw(`POST /tool/write_file HTTP/1.1\r\n${H}${JSONCT}Content-Length: ${a}\r\n` +
                          `Content-Length: ${b}\r\n\r\n{}${write('twocl.txt')}`);
      refused(r, /two Content-Length headers; send exactly one/);
    }
    assert.equal(existsSync(path.join(d.workspace, 'twocl.txt')), false);
  });

  test('a Content-Length that is not decimal digits is refused', async () => {
    for (const cl of ['+2', '0x2', '2 2', '-1', '']) {
      const r = await raw(`POST /tool/list_dir HTTP/1.1\r\n${H}${JSONCT}Content-Length: ${cl}\r\n\r\n{}`);
      refused(r, /Content-Length .* is not a number of bytes/);
    }
  });

  test('a second Host or Origin is refused, whichever comes first', async () => {
    const good = `Host: 127.0.0.1:${d.port}\r\n`;
    for (const hosts of [`${good}Host: evil.example\r\n`, `Host: evil.example\r\n${good}`, `${good}${good}`]) {
      const r = await raw(`GET /health HTTP/1.1\r\n${hosts}\r\n`);
      refused(r, /two Host headers/);
    }
    const origin = `Origin: http://127.0.0.1:${d.port}\r\n`;
    const r = await raw(`POST /tool/write_file HTTP/1.1\r\n${H}${JSONCT}${origin}Origin: http://evil.example\r\n` +
                        `Content-Length: ${write('origin.txt').length}\r\n\r\n${write('origin.txt')}`);
    refused(r, /two Origin headers/);
    assert.equal(existsSync(path.join(d.workspace, 'origin.txt')), false);
  });

  test('a malformed chunk size is 400 and the tool does not run (with {} or anything else)', async () => {
    const body = write('chunk.txt');
    for (const bad of [`zz\r\n${body}\r\n0\r\n\r\n`,                  // not hex
                       `${body.length.toString(16)};x=1\r\n${body}\r\n0\r\n\r\n`, // an extension
                       `${body.length.toString(16)}\r\n${body}XX0\r\n\r\n`]) {   // no CRLF after the data
      const r = await raw(`POST /tool/write_file HTTP/1.1\r\n${H}${JSONCT}Transfer-Encoding: chunked\r\n\r\n${bad}`);
      refused(r, /chunked request body is malformed/);
    }
    // list_dir would answer 200 if it ran with {}: it must not.
    const r = await raw(`POST /tool/list_dir HTTP/1.1\r\n${H}${JSONCT}Transfer-Encoding: chunked\r\n\r\nq\r\n`);
    refused(r, /chunked request body is malformed/);
    assert.equal(existsSync(path.join(d.workspace, 'chunk.txt')), false);
    // A well-formed chunked body still works.
    const ok = await raw(`POST /tool/write_file HTTP/1.1\r\n${H}${JSONCT}Transfer-Encoding: chunked\r\n` +
                         `Connection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    const a = answers(ok.text);
    assert.equal(a[0].status, 200, ok.text);
    assert.equal(a[0].body.ok, true, ok.text);
    assert.equal(existsSync(path.join(d.workspace, 'chunk.txt')), true);
  });

  test('%00 in the path or the query is refused (it cut tool names and URIs short)', async () => {
    for (const target of ['/tool/read_file%00x', '/tool/list_dir%00', '/health?x=%00',
                          '/resources/read?uri=runbox://file/a%00b', '/mcp%00']) {
      const r = await raw(`POST ${target} HTTP/1.1\r\n${H}${JSONCT}Content-Length: 2\r\n\r\n{}`);
      refused(r, /%00 \(a NUL byte\)/);
    }
    const bad = await raw(`GET /tool/list%zzdir HTTP/1.1\r\n${H}\r\n`);
    refused(bad, /malformed %-escape/);
    // Escapes still decode: /tool/list%5Fdir is list_dir.
    const ok = await raw(`POST /tool/list%5Fdir HTTP/1.1\r\n${H}${JSONCT}Content-Length: 2\r\nConnection: close\r\n\r\n{}`);
    assert.equal(answers(ok.text)[0].status, 200, ok.text);
  });

  test('64 header lines or more are refused (civetweb reads only 64: a second Host could hide past them)', async () => {
    const many = Array.from({ length: 70 }, (_, i) => `X-H${i}: v\r\n`).join('');
    refused(await raw(`GET /health HTTP/1.1\r\n${H}${many}Host: evil.example\r\n\r\n`), /64 or more header lines/);
    const ok = await raw(`GET /health HTTP/1.1\r\n${H}${many.split('\r\n').slice(0, 60).join('\r\n')}\r\n` +
                         'Connection: close\r\n\r\n');
    assert.equal(answers(ok.text)[0].status, 200, ok.text);
  });

  test('a raw NUL or other control byte in the head is a JSON 400', async () => {
    for (const head of [`GET /hea\0lth HTTP/1.1\r\n${H}\r\n`, `GET /health HTTP/1.1\r\n${H}X: a\x01b\r\n\r\n`]) {
      refused(await raw(head), /malformed request head: a control character/);
    }
  });
});

describe('the MCP transports get the same checks', () => {
  const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
                                params: { protocolVersion: '2025-06-18', capabilities: {},
                                          clientInfo: { name: 't', version: '1' } } });
  const mcp = () => `POST /mcp HTTP/1.1\r\n${H}${JSONCT}Accept: application/json, text/event-stream\r\n`;

  test('/mcp: CL+TE, a second Host, a malformed chunk, %00 are each a JSON 400', async () => {
    refused(await raw(`${mcp()}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n` +
                      `${init.length.toString(16)}\r\n${init}\r\n0\r\n\r\n`), /both Content-Length/);
    refused(await raw(`${mcp()}Host: evil.example\r\nContent-Length: ${init.length}\r\n\r\n${init}`),
            /two Host headers/);
    refused(await raw(`${mcp()}Transfer-Encoding: chunked\r\n\r\nnothex\r\n${init}\r\n0\r\n\r\n`),
            /chunked request body is malformed/);
    refused(await raw(`${mcp().replace('/mcp', '/mcp%00x')}Content-Length: ${init.length}\r\n\r\n${init}`), /%00/);
  });

  test('/sse, /message and the /ws upgrade: duplicate headers and %00 are refused', async () => {
    refused(await raw(`GET /sse HTTP/1.1\r\n${H}${H}Accept: text/event-stream\r\n\r\n`), /two Host headers/);
    refused(await raw(`POST /message?sessionId=%00 HTTP/1.1\r\n${H}${JSONCT}Content-Length: 2\r\n\r\n{}`), /%00/);
    refused(await raw(`GET /ws HTTP/1.1\r\n${H}Origin: http://127.0.0.1:${d.port}\r\nOrigin: http://evil.example\r\n` +
                      'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n' +
                      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'), /two Origin headers/);
  });
});

describe("civetweb's own errors are JSON", () => {
  test('a request line that is not METHOD /path HTTP/1.1, or an unknown method: JSON 400', async () => {
    for (const line of ['GARBAGE', 'GET', 'BREW /health HTTP/1.1', 'GET /health FTP/1.1']) {
      refused(await raw(`${line}\r\n${H}\r\n`), /malformed request: the first line is METHOD \/path HTTP\/1\.1/);
    }
  });

  test('a header line without a colon: JSON 400', async () => {
    refused(await raw(`GET /health HTTP/1.1\r\n${H}NoColonHere\r\n\r\n`), /each header line is Name: value/);
  });

  test('HTTP/2.0 on the request line: JSON 505', async () => {
    refused(await raw(`GET /health HTTP/2.0\r\n${H}\r\n`), /HTTP\/2\.0 is not supported; send HTTP\/1\.1/, 505);
  });

  test('a head over 16 KiB: JSON 400 that says so', async () => {
    refused(await raw(`GET /health HTTP/1.1\r\n${H}X-Big: ${'a'.repeat(40000)}\r\n\r\n`), /more than 16384 bytes/);
  });

  test('an absolute-form target: JSON 400 (it was closed without an answer)', async () => {
    refused(await raw(`GET http://127.0.0.1:${d.port}/health HTTP/1.1\r\n${H}\r\n`),
            /the request target must be a path such as \/health/);
  });

  test('a head cut off by the client: JSON 400 naming the missing empty line', async () => {
    const r = await new Promise((resolve, reject) => {
      const sock = net.connect(d.port, '127.0.0.1');
      let got = '';
      sock.on('data', (c) => { got += c; });
      sock.on('end', () => resolve({ text: got, closed: true }));
      sock.on('error', reject);
      sock.end(`GET /health HTTP/1.1\r\n${H}`); // no empty line, then FIN
    });
    refused(r, /no empty line at its end before the client stopped sending/);
  });
});
