// Integration: the daemon's request checks guard every MCP transport exactly as they guard
// POST /tool: a foreign Host is 403 (DNS rebinding: a page on evil.example whose name now
// resolves to 127.0.0.1), a browser Origin is 403 (cross-site requests, and WebSocket upgrades,
// which browsers allow to any host), a body not declared JSON is 415, and with RUNBOX_TOKEN set
// every endpoint wants the bearer token (401). With --bind 0.0.0.0 (which needs a token) the
// token guards them all the same.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { request, startDaemon } from '../lib/daemon.mjs';
import { ACCEPT_BOTH, WsClient, initializeMessage, mcpPost, mcpSession, sdkClient,
         until } from '../lib/mcp.mjs';

const TOKEN = 'security-test-token-abcdefghijklmnop';

// Every MCP HTTP request shape: [label, method, path, body or null].
function shapes(sid) {
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  return [
    ['POST /mcp initialize', 'POST', '/mcp', JSON.stringify(initializeMessage()), {}],
    ['POST /mcp in a session', 'POST', '/mcp', ping, { 'Mcp-Session-Id': sid }],
    ['GET /mcp stream', 'GET', '/mcp', null, { 'Mcp-Session-Id': sid }],
    ['DELETE /mcp', 'DELETE', '/mcp', null, { 'Mcp-Session-Id': sid }],
    ['GET /sse', 'GET', '/sse', null, {}],
    ['POST /message', 'POST', '/message?sessionId=0123', ping, {}],
  ];
}

function send(d, [, method, path, body, extra], headers) {
  const h = { Accept: method === 'GET' ? 'text/event-stream' : ACCEPT_BOTH, ...extra, ...headers };
  if (body !== null && !('Content-Type' in headers)) h['Content-Type'] = 'application/json';
  for (const k of Object.keys(h)) if (h[k] === undefined) delete h[k];
  return request(d.port, path, { method, headers: h, body: body ?? undefined });
}

function refused(r, status, pattern, label) {
  assert.equal(r.status, status, `${label}: ${r.status} ${r.text}`);
  assert.match(r.headers['content-type'], /^application\/json/, label);
  assert.match(r.body.error, pattern, label);
  assert.equal(r.body.ok, false, label);
}

describe('without a token', () => {
  let d;
  let s;
  before(async () => {
    d = await startDaemon({ workspace: ':memory:' });
    s = await mcpSession(d);
  });
  after(async () => { await d?.stop(); });

  test('a foreign Host is 403 on every MCP endpoint, before any MCP handling', async () => {
    const before = (await d.get('/health')).body.mcp.sessions;
    for (const shape of shapes(s.id)) {
      for (const host of ['evil.example', `evil.example:${d.port}`, `127.0.0.1:${d.port + 1}`,
                          `localhost.evil.example:${d.port}`]) {
        refused(await send(d, shape, { Host: host }), 403, /forbidden Host header/,
                `${shape[0]} Host ${host}`);
      }
    }
    // Nothing was opened or ended: the session still works, no new session exists.
    assert.equal((await d.get('/health')).body.mcp.sessions, before);
    assert.equal((await s.post({ jsonrpc: '2.0', id: 2, method: 'ping' })).status, 200);
  });

  test('the DNS-rebinding shape (foreign Host with its own Origin) is 403', async () => {
    for (const shape of shapes(s.id)) {
      refused(await send(d, shape, { Host: `rebind.example:${d.port}`,
                                     Origin: `http://rebind.example:${d.port}` }),
              403, /forbidden Host header/, shape[0]);
    }
  });

  test('a browser Origin is 403 on every MCP endpoint; our own origin is fine', async () => {
    for (const shape of shapes(s.id)) {
      for (const origin of ['http://evil.example', 'https://evil.example', 'null',
                            `http://localhost:${d.port + 1}`]) {
        refused(await send(d, shape, { Origin: origin }), 403, /forbidden Origin/,
                `${shape[0]} Origin ${origin}`);
      }
    }
    const own = await mcpPost(d.port, initializeMessage(), { Origin: `http://127.0.0.1:${d.port}` });
    assert.equal(own.status, 200, own.text);
    await request(d.port, '/mcp', { method: 'DELETE',
                                    headers: { 'Mcp-Session-Id': own.headers['mcp-session-id'] } });
  });

  test('a body not declared JSON is 415 on POST /mcp and POST /message', async () => {
    for (const shape of shapes(s.id).filter((x) => x[1] === 'POST')) {
      for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data',
                        undefined]) {
        const r = await send(d, shape, { 'Content-Type': ct });
        assert.equal(r.status, 415, `${shape[0]} ${ct}: ${r.text}`);
        assert.match(r.body.error.message, /Content-Type: application\/json/);
      }
    }
  });

  test('a WebSocket upgrade with a browser Origin or a foreign Host is refused', async () => {
    for (const headers of [{ Origin: 'http://evil.example' }, { Origin: 'https://evil.example' },
                           { Origin: 'null' }]) {
      const r = await WsClient.open(d.port, { headers });
      assert.equal(r.refused, true, JSON.stringify(headers));
      assert.equal(r.status, 403, r.head);
      assert.match(r.body, /forbidden Origin/);
    }
    // A foreign Host: WsClient sends its own, so build the upgrade by hand.
    const r = await request(d.port, '/ws', { headers: {
      Host: 'evil.example', Upgrade: 'websocket', Connection: 'Upgrade',
      'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Protocol': 'mcp' } });
    assert.equal(r.status, 403, r.text);
    assert.equal((await d.get('/health')).body.mcp.websockets, 0);
    // Our own origin upgrades.
    const ok = await WsClient.open(d.port, { headers: { Origin: `http://localhost:${d.port}` } });
    assert.ok(!ok.refused, ok.head);
    ok.destroy();
  });
});

describe('with RUNBOX_TOKEN', () => {
  let d;
  const auth = { Authorization: `Bearer ${TOKEN}` };
  before(async () => {
    d = await startDaemon({ workspace: ':memory:', env: { RUNBOX_TOKEN: TOKEN } });
  });
  after(async () => { await d?.stop(); });

  test('every MCP endpoint wants the token: 401 without it or with a wrong one', async () => {
    const s = await mcpSession(d, auth);
    for (const shape of shapes(s.id)) {
      for (const h of [{}, { Authorization: 'Bearer wrong' }, { Authorization: `Basic ${TOKEN}` },
                       { Authorization: `Bearer ${TOKEN}x` }]) {
        const r = await send(d, shape, h);
        refused(r, 401, /missing or wrong token/, `${shape[0]} ${JSON.stringify(h)}`);
        assert.equal(r.headers['www-authenticate'], 'Bearer');
      }
    }
    const ws = await WsClient.open(d.port);
    assert.equal(ws.refused, true);
    assert.equal(ws.status, 401, ws.head);
    assert.equal((await s.post({ jsonrpc: '2.0', id: 3, method: 'ping' })).status, 200);
  });

  test('with the token: the SDK over /mcp and /sse, and a WebSocket with the header', async () => {
    for (const kind of ['http', 'sse']) {
      const c = await sdkClient(d, kind, auth);
      const r = await c.callTool({ name: 'write_file',
                                   arguments: { path: `/t-${kind}.txt`, content: kind } });
      assert.equal(r.isError, false, JSON.stringify(r));
      await c.close();
    }
    const ws = await WsClient.open(d.port, { headers: auth });
    assert.ok(!ws.refused, ws.head);
    await ws.sendJson(initializeMessage('i'));
    assert.equal((await ws.answer('i')).result.serverInfo.name, 'runboxd');
    ws.destroy();
  });
});

describe('bound to 0.0.0.0 (with the token it requires)', () => {
  let d;
  before(async () => {
    d = await startDaemon({ workspace: ':memory:', args: ['--bind', '0.0.0.0'],
                            env: { RUNBOX_TOKEN: TOKEN } });
  });
  after(async () => { await d?.stop(); });

  test('any Host reaches it, so the token is what guards /mcp, /sse, /message, /ws', async () => {
    const auth = { Authorization: `Bearer ${TOKEN}` };
    const s = await mcpSession(d, auth);
    for (const shape of shapes(s.id)) {
      refused(await send(d, shape, { Host: `192.0.2.7:${d.port}` }), 401, /token/, shape[0]);
      // No page of any origin may call it, even with the token.
      refused(await send(d, shape, { ...auth, Origin: `http://192.0.2.7:${d.port}` }), 403,
              /forbidden Origin/, shape[0]);
    }
    const ok = await send(d, shapes(s.id)[1], { ...auth, Host: `192.0.2.7:${d.port}` });
    assert.equal(ok.status, 200, ok.text);
    const ws = await WsClient.open(d.port);
    assert.equal(ws.status, 401);
    await until('the stale probes settled', async () =>
      (await d.get('/health', auth)).body.mcp.streams === 0);
  });
});
