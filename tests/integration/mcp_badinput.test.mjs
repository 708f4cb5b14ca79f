// Integration: bad input on runboxd's MCP HTTP endpoints (/mcp, /message). Each case gets a
// clear error (the HTTP status and the JSON-RPC code the spec asks for), and nothing else is
// disturbed: a session opened first, with an exec running in it the whole time, still answers
// afterwards and its exec finishes with its output.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, afterEach, before, describe, test } from 'node:test';

import { request, startDaemon } from '../lib/daemon.mjs';
import { initializeMessage, mcpPost, mcpSession, until } from '../lib/mcp.mjs';

const MODERN = '2026-07-28';

let d;
let s; // the bystander session
let bystander; // its exec, running through every case

before(async () => {
  d = await startDaemon({ workspace: ':memory:', args: ['--mcp-session-idle-s', '10'] });
  s = await mcpSession(d);
  // An exec that waits for a file the last test writes: it runs while every case runs.
  bystander = s.post({ jsonrpc: '2.0', id: 'bystander', method: 'tools/call',
                       params: { name: 'exec',
                                 arguments: { command: 'while [ ! -e release ]; do sleep 0.05; ' +
                                                       'done; echo released',
                                              timeout_ms: 100000 } } });
  await until('the bystander exec running', async () =>
    (await d.call('process_list', {})).body.result.processes.some((p) => p.state === 'running'));
});

after(async () => {
  await d?.stop();
});

// After every case the daemon and the bystander session still answer.
afterEach(async () => {
  const h = await d.get('/health');
  assert.equal(h.status, 200);
  const p = await s.post({ jsonrpc: '2.0', id: 'ping', method: 'ping' });
  assert.equal(p.status, 200, p.text);
  assert.deepEqual(p.body, { jsonrpc: '2.0', id: 'ping', result: {} });
});

// A JSON-RPC error answer with this status and code (and message pattern).
function rpcError(r, status, code, pattern) {
  assert.equal(r.status, status, r.text);
  assert.match(r.headers['content-type'], /^application\/json/);
  assert.equal(r.body?.jsonrpc, '2.0', r.text);
  assert.equal(r.body.error?.code, code, r.text);
  if (pattern) assert.match(r.body.error.message, pattern);
  return r.body.error;
}

const list = (id = 2) => ({ jsonrpc: '2.0', id, method: 'tools/list' });

function modern(method, params = {}, id = 9) {
  return { jsonrpc: '2.0', id, method,
           params: { ...params,
                     _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN,
                              'io.modelcontextprotocol/clientCapabilities': {} } } };
}

function modernHeaders(method, name) {
  const h = { 'MCP-Protocol-Version': MODERN, 'Mcp-Method': method };
  if (name) h['Mcp-Name'] = name;
  return h;
}

// Sends raw bytes on a fresh socket; resolves with everything the daemon sent before it closed
// (or, with stopAt, as soon as the text matches it).
function rawExchange(head, body, { stopAt } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(d.port, '127.0.0.1');
    let got = '';
    let done = false;
    const finish = () => { if (!done) { done = true; sock.destroy(); resolve(got); } };
    sock.on('data', (c) => { got += c.toString('latin1'); if (stopAt && stopAt.test(got)) finish(); });
    sock.on('end', finish);
    sock.on('close', finish);
    sock.on('error', (e) => (done ? null : reject(e)));
    sock.write(head);
    if (body) sock.write(body);
  });
}

function postHead(extra) {
  return `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\n` +
         `Accept: application/json, text/event-stream\r\nMcp-Session-Id: ${s.id}\r\n${extra}\r\n`;
}

describe('sessions', () => {
  test('a request without Mcp-Session-Id (not initialize, not 2026-07-28) is 400', async () => {
    const e = rpcError(await mcpPost(d.port, list()), 400, -32602,
                       /session opened with initialize/);
    assert.match(e.message, /2026-07-28/);
  });

  test('a wrong session id is 404 and says to initialize again', async () => {
    rpcError(await mcpPost(d.port, list(), { 'Mcp-Session-Id': 'f'.repeat(32) }), 404, -32001,
             /initialize again without Mcp-Session-Id/);
    // GET and DELETE of a session that does not exist: 404 too.
    const g = await request(d.port, '/mcp', { headers: { Accept: 'text/event-stream',
                                                           'Mcp-Session-Id': 'nope' } });
    rpcError(g, 404, -32001);
    const del = await request(d.port, '/mcp', { method: 'DELETE',
                                                headers: { 'Mcp-Session-Id': 'nope' } });
    rpcError(del, 404, -32001);
  });

  test('a deleted session is 404; an expired one too', async () => {
    const gone = await mcpSession(d);
    assert.equal((await gone.delete()).status, 200);
    rpcError(await gone.post(list()), 404, -32001, /ended or expired/);
    // Idle expiry (--mcp-session-idle-s 10): the session count drops once it expires. Other
    // sessions' requests run the expiry, so keep the bystander busy until then.
    const idle = await mcpSession(d);
    const before = (await d.get('/health')).body.mcp.sessions;
    await until('the idle session expired', async () => {
      await s.post({ jsonrpc: '2.0', id: 'tick', method: 'ping' });
      return (await d.get('/health')).body.mcp.sessions < before;
    }, 60000);
    rpcError(await idle.post(list()), 404, -32001);
  });

  test('an unsupported MCP-Protocol-Version header in a session is 400', async () => {
    rpcError(await s.post(list(), { 'MCP-Protocol-Version': '2099-01-01' }), 400, -32600,
             /unsupported MCP-Protocol-Version 2099-01-01; this session speaks 2025-11-25/);
  });
});

describe('headers and bodies', () => {
  test('Accept without text/event-stream or without application/json is 406', async () => {
    for (const accept of ['application/json', 'text/event-stream', 'text/html', undefined]) {
      rpcError(await s.post(list(), { Accept: accept }), 406, -32600,
               /Accept: application\/json, text\/event-stream/);
    }
  });

  test('a body that is not declared JSON is 415', async () => {
    rpcError(await s.post(list(), { 'Content-Type': 'text/plain' }), 415, -32600,
             /Content-Type: application\/json/);
  });

  test('invalid JSON is 400 with -32700 and the offset', async () => {
    rpcError(await s.post('{"jsonrpc":"2.0","id":1,'), 400, -32700, /at byte \d+/);
    rpcError(await mcpPost(d.port, 'not json at all'), 400, -32700);
  });

  test('a body over 32 MiB (Content-Length) is 413 and the rest is never read', async () => {
    const got = await rawExchange(postHead(`Content-Length: ${100 << 20}\r\n`),
                                  '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"p":"' +
                                  'a'.repeat(65536) +
                                  `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\n\r\n`,
                                  { stopAt: /\r\n\r\n[^]*\}\}$/ });
    assert.match(got, /^HTTP\/1\.1 413/);
    assert.match(got, /over the limit of 33554432 bytes/);
    assert.equal((got.match(/HTTP\/1\.1 /g) || []).length, 1, got);
  });

  test('a chunked body over 32 MiB is 413, not a parse error', async () => {
    const got = await new Promise((resolve, reject) => {
      const sock = net.connect(d.port, '127.0.0.1');
      let text = '';
      let stop = false;
      sock.on('data', (c) => {
        text += c;
        if (/\r\n\r\n[^]*\}\}/.test(text)) { stop = true; sock.destroy(); resolve(text); }
      });
      sock.on('error', (e) => (stop ? null : reject(e)));
      sock.write(postHead('Transfer-Encoding: chunked\r\n'));
      const chunk = ' '.repeat(1 << 20);
      const piece = `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
      (function pump(n) {
        if (stop) return;
        if (n === 0) { sock.write('0\r\n\r\n'); return; }
        if (sock.write(piece)) setImmediate(() => pump(n - 1));
        else sock.once('drain', () => pump(n - 1));
      })(40);
    });
    assert.match(got, /^HTTP\/1\.1 413/, got.slice(0, 300));
    assert.match(got, /over the limit of 33554432 bytes/);
  });

  test('Expect: 100-continue gets the interim answer before the body is sent', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'big', method: 'ping',
                                  params: { pad: 'x'.repeat(2 << 20) } });
    const got = await new Promise((resolve, reject) => {
      const sock = net.connect(d.port, '127.0.0.1');
      let text = '';
      let sent = false;
      sock.on('data', (c) => {
        text += c;
        // Like curl, send the body only once the server said to go on.
        if (!sent && /^HTTP\/1\.1 100 Continue\r\n\r\n/.test(text)) {
          sent = true;
          sock.write(body);
        }
        if (/"id":"big"/.test(text)) { sock.destroy(); resolve(text); }
      });
      sock.on('error', reject);
      sock.write(postHead(`Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n`));
    });
    assert.match(got, /HTTP\/1\.1 200 OK[^]*"result":\{\}/);
    // A body over the limit gets its 413 at once instead of the interim answer.
    const refused = await rawExchange(postHead(`Content-Length: ${40 << 20}\r\n` +
                                               'Expect: 100-continue\r\n'), null,
                                      { stopAt: /\r\n\r\n[^]*\}\}$/ });
    assert.match(refused, /^HTTP\/1\.1 413/);
    assert.doesNotMatch(refused, /100 Continue/);
  });
});

describe('the 2026-07-28 revision', () => {
  test('a well-formed stateless request is answered', async () => {
    const r = await mcpPost(d.port, modern('tools/list'), modernHeaders('tools/list'));
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.result.tools.length > 10);
  });

  test('a stateless request without _meta is 400 with -32602', async () => {
    rpcError(await mcpPost(d.port, list(), modernHeaders('tools/list')), 400, -32602,
             /params\._meta must carry/);
    // _meta with the version but no client capabilities: -32602 naming the key.
    const half = { jsonrpc: '2.0', id: 3, method: 'tools/list',
                   params: { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN } } };
    rpcError(await mcpPost(d.port, half, modernHeaders('tools/list')), 400, -32602,
             /clientCapabilities/);
  });

  test('headers that disagree with the body are 400 with -32020', async () => {
    rpcError(await mcpPost(d.port, modern('tools/list'), modernHeaders('prompts/list')), 400,
             -32020, /Mcp-Method header prompts\/list does not match/);
    rpcError(await mcpPost(d.port, modern('tools/list'), { 'Mcp-Method': 'tools/list' }), 400,
             -32020, /MCP-Protocol-Version header is missing/);
    const call = modern('tools/call', { name: 'list_dir', arguments: {} });
    rpcError(await mcpPost(d.port, call, modernHeaders('tools/call', 'read_file')), 400, -32020,
             /Mcp-Name header does not match/);
    rpcError(await mcpPost(d.port, call, modernHeaders('tools/call')), 400, -32020,
             /Mcp-Name header is missing/);
  });

  test('an unsupported version is 400 with -32022 and data.supported', async () => {
    const msg = { jsonrpc: '2.0', id: 4, method: 'tools/list',
                  params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01',
                                     'io.modelcontextprotocol/clientCapabilities': {} } } };
    const e = rpcError(await mcpPost(d.port, msg, { 'MCP-Protocol-Version': '2099-01-01',
                                                    'Mcp-Method': 'tools/list' }),
                       400, -32022, /Unsupported protocol version 2099-01-01/);
    assert.ok(e.data.supported.includes(MODERN), JSON.stringify(e.data));
    // Only versions a request may name: the legacy ones are reached through initialize, and a
    // client that retried with one of them per request would be refused again.
    assert.ok(!e.data.supported.includes('2025-11-25'), JSON.stringify(e.data));
    assert.match(e.message, /initialize/);
  });

  test('initialize with an unknown version is answered with the newest legacy one', async () => {
    const r = await mcpPost(d.port, initializeMessage(1, '2099-01-01'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.result.protocolVersion, '2025-11-25');
    const id = r.headers['mcp-session-id'];
    assert.equal((await request(d.port, '/mcp', { method: 'DELETE',
                                                  headers: { 'Mcp-Session-Id': id } })).status,
                 200);
  });
});

describe('the legacy /message endpoint', () => {
  test('/message for an unknown session is 404; without sessionId 400', async () => {
    rpcError(await mcpPost(d.port, list(), {}, '/message?sessionId=nope'), 404, -32001,
             /no SSE session nope/);
    rpcError(await mcpPost(d.port, list(), {}, '/message'), 400, -32600, /needs \?sessionId=/);
    rpcError(await mcpPost(d.port, list(), { 'Content-Type': 'text/plain' },
                           '/message?sessionId=nope'), 415, -32600);
  });
});

describe('the bystander', () => {
  test('its exec ran through all of it and finishes with its output', async () => {
    await d.call('write_file', { path: '/release', content: '' });
    const r = await bystander;
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.id, 'bystander');
    assert.equal(r.body.result.isError, false, r.text);
    assert.equal(r.body.result.structuredContent.stdout, 'released\n');
  });
});
