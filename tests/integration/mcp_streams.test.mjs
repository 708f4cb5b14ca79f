// Integration: a stream consumer that stops reading. A legacy /sse client keeps posting
// requests to /message but never reads its stream, so their answers pile up for it. Its queue
// is capped (8 MiB): once the cap is hit the stream is closed with a log line, the daemon's
// memory stays bounded, its session ends (/message then says 404), and other clients are served
// the whole time.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';
import { isSanitized, mcpPost, mcpSession, memoryOf, until } from '../lib/mcp.mjs';

const QUEUE_MAX = 8 << 20; // the transport's stream_queue_max default

let d;

before(async () => {
  d = await startDaemon({ workspace: ':memory:' });
});

after(async () => {
  await d?.stop();
});

// Opens GET /sse on a raw socket, reads up to the endpoint event, then stops reading.
function stalledSse() {
  return new Promise((resolve, reject) => {
    const sock = net.connect(d.port, '127.0.0.1');
    // A small receive buffer, so the kernel holds little of what the daemon sends.
    sock.on('connect', () => {
      sock.write(`GET /sse HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nAccept: text/event-stream\r\n\r\n`);
    });
    let text = '';
    const onData = (c) => {
      text += c;
      const m = /data: (\/message\?sessionId=[0-9a-f]+)/.exec(text);
      if (!m) return;
      sock.off('data', onData);
      sock.pause(); // from here on nothing is read
      resolve({ sock, endpoint: m[1] });
    };
    sock.on('data', onData);
    sock.on('error', reject);
  });
}

test('a /sse client that stops reading is cut off at the queue cap; others are served', async () => {
  const half = 'x'.repeat(512 << 10);
  assert.equal((await d.call('write_file', { path: '/half.txt', content: half })).body.ok, true);
  const other = await mcpSession(d);
  const base = memoryOf(d.pid);
  const { sock, endpoint } = await stalledSse();
  const init = { jsonrpc: '2.0', id: 0, method: 'initialize',
                 params: { protocolVersion: '2024-11-05', capabilities: {},
                           clientInfo: { name: 'stalled', version: '1' } } };
  assert.equal((await mcpPost(d.port, init, {}, endpoint)).status, 202);
  // Post until the daemon says the session is gone; each answer is ~512 KiB for the stream.
  let posted = 0;
  let status = 202;
  let peak = 0;
  while (status === 202) {
    const r = await mcpPost(d.port, { jsonrpc: '2.0', id: ++posted, method: 'tools/call',
                                      params: { name: 'read_file',
                                                arguments: { path: '/half.txt' } } },
                            {}, endpoint);
    status = r.status;
    peak = Math.max(peak, memoryOf(d.pid).rssKiB);
    // Meanwhile another client is answered.
    if (posted % 8 === 0) {
      const o = await other.post({ jsonrpc: '2.0', id: posted, method: 'tools/call',
                                   params: { name: 'read_file', arguments: { path: '/half.txt' } } });
      assert.equal(o.status, 200);
      assert.equal(o.body.result.content[0].text.length, half.length);
    }
    if (posted > 4000) assert.fail('the stalled stream was never closed');
    if (status === 202 && /not reading/.test(d.stderr())) {
      // The cap was hit: the stream closes once its worker's blocked write gives up; wait.
      await until('the stalled session ended', async () =>
        (await mcpPost(d.port, { jsonrpc: '2.0', method: 'notifications/x' }, {}, endpoint))
          .status === 404, 60000);
      status = 404;
    }
  }
  const r404 = await mcpPost(d.port, { jsonrpc: '2.0', id: 'late', method: 'ping' }, {}, endpoint);
  assert.equal(r404.status, 404, r404.text);
  assert.match(d.stderr(), /mcp-http: a stream's client is not reading \(\d+ bytes waiting\); the stream is closed/);
  console.log(`# stalled SSE: ${posted} answers of 512 KiB posted; RSS ${base.rssKiB} KiB ` +
              `before, peak ${peak} KiB`);
  if (!isSanitized())
    assert.ok(peak < base.rssKiB + 4 * (QUEUE_MAX >> 10),
              `RSS peak ${peak} KiB, base ${base.rssKiB} KiB`);
  sock.destroy();
  const p = await other.post({ jsonrpc: '2.0', id: 'end', method: 'ping' });
  assert.equal(p.status, 200);
  await until('no streams open', async () => (await d.get('/health')).body.mcp.streams === 0);
});

test('DELETE while a call of the session runs: the call is cancelled, its POST and GET stream ' +
     'end at once, and the daemon stays sound', async () => {
  const own = await startDaemon({ workspace: ':memory:' });
  try {
    const s = await mcpSession(own);
    const getEnded = new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: own.port, path: '/mcp', agent: false,
                                 headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': s.id } },
                               (res) => {
                                 assert.equal(res.statusCode, 200);
                                 res.on('data', () => {});
                                 res.on('end', () => resolve('ended'));
                               });
      req.on('error', reject);
      req.end();
    });
    await until('the GET stream open', async () => (await own.get('/health')).body.mcp.streams === 1);
    const marker = 'sleep 86398.25';
    const call = s.post({ jsonrpc: '2.0', id: 'doomed', method: 'tools/call',
                          params: { name: 'exec', arguments: { command: marker, timeout_ms: 100000 } } });
    const procs = async () => (await own.call('process_list', {})).body.result.processes
      .filter((p) => p.command === marker);
    await until('the run going', async () => (await procs())[0]?.state === 'running');
    assert.equal((await s.delete()).status, 200);
    const r = await call;
    assert.equal(r.status, 404, r.text);
    assert.match(r.body.error.message, /the session ended while this request was served/);
    assert.equal(await getEnded, 'ended');
    await until('the run killed', async () => (await procs())[0]?.state === 'killed');
    assert.equal((await s.post({ jsonrpc: '2.0', id: 1, method: 'ping' })).status, 404);
    await until('nothing left', async () => {
      const m = (await own.get('/health')).body;
      return m.mcp.sessions === 0 && m.mcp.streams === 0 && m.calls.long.in_use === 0;
    });
  } finally {
    const end = await own.stop();
    assert.deepEqual(end, { code: 0, signal: null }, own.stderr().slice(-3000));
  }
});

// A notification sent while a Streamable HTTP session has no GET stream open yet (a list
// change right after initialize, before the client's GET arrives) is held, bounded, and the
// stream starts with it: a client that opens its stream a moment late misses nothing.
test('messages sent before the GET stream opens are held for it and come first', async () => {
  const own = await startDaemon({ workspace: ':memory:' });
  try {
    const s = await mcpSession(own);
    assert.equal((await s.post({ jsonrpc: '2.0', id: 1, method: 'logging/setLevel',
                                 params: { level: 'debug' } })).status, 200);
    // Console lines while the session has no stream: each becomes a notifications/message.
    assert.equal((await own.call('exec', { command: 'echo held-before-stream' })).body.ok, true);
    let text = '';
    let sawAfter;
    const sawAfterLine = new Promise((resolve) => { sawAfter = resolve; });
    const req = http.request({ host: '127.0.0.1', port: own.port, path: '/mcp', agent: false,
                               headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': s.id } },
                             (res) => {
                               assert.equal(res.statusCode, 200);
                               res.setEncoding('utf8');
                               res.on('data', (c) => {
                                 text += c;
                                 if (text.includes('sent-after-stream')) sawAfter();
                               });
                             });
    req.on('error', () => {});
    req.end();
    await until('the GET stream open', async () => (await own.get('/health')).body.mcp.streams === 1);
    assert.equal((await own.call('exec', { command: 'echo sent-after-stream' })).body.ok, true);
    await sawAfterLine;
    const held = text.indexOf('held-before-stream');
    assert.ok(held >= 0, `the held message is on the stream: ${text.slice(0, 2000)}`);
    assert.ok(held < text.indexOf('sent-after-stream'), 'and it comes before the later one');
    assert.match(text, /"method":"notifications\/message"/);
    req.destroy();
  } finally {
    const end = await own.stop();
    assert.deepEqual(end, { code: 0, signal: null }, own.stderr().slice(-3000));
  }
});
