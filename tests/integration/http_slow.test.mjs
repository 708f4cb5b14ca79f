// Integration: slow and many clients cannot lock the daemon (issue 12 §3). A request head or
// body that does not arrive within its limit (--http-head-timeout-ms, --http-body-timeout-ms;
// short ones here) is answered 408 and its connection closed, however the client trickles it; a
// refused body is not drained at the client's pace; and with 100 slowloris connections, 60
// parked Studio polls and 64 busy keep-alive clients at once, /health and read_file probes are
// all answered. No timed assertion: the test waits for conditions (with generous deadlines that
// only turn a hang into a failure); the latency figures are tests/bench/slow-clients.mjs's.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';
import { keepAliveClients, parkedPolls, probe, slowloris } from '../lib/slowclients.mjs';

const HEAD_MS = 1500;
const BODY_MS = 2500;

let d;
before(async () => {
  d = await startDaemon({ args: ['--http-head-timeout-ms', `${HEAD_MS}`,
                                 '--http-body-timeout-ms', `${BODY_MS}`] });
  await d.call('write_file', { path: '/probe.txt', content: 'probe' });
});
after(async () => { await d.stop(); });

async function httpStatus() {
  const h = await d.get('/health');
  assert.equal(h.status, 200, h.text);
  return h.body.http;
}

// Opens a connection, sends `first`, then one byte of `rest` every `everyMs` (forever if rest
// is long enough), and resolves what came back once the daemon closes the connection.
// `bytesSent` is how much of rest went out. Gives up (rejects) after `giveUpMs`.
function trickle(first, rest, { everyMs = 100, giveUpMs = 120000 } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(d.port, '127.0.0.1');
    let got = '';
    let i = 0;
    const timer = setInterval(() => { if (i < rest.length) sock.write(rest[i++]); }, everyMs);
    const giveUp = setTimeout(() => {
      sock.destroy();
      reject(new Error(`the daemon kept the connection open for ${giveUpMs} ms (sent ${i} bytes)`));
    }, giveUpMs);
    sock.on('data', (c) => { got += c; });
    sock.on('error', () => {});
    sock.on('close', () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ text: got, bytesSent: i });
    });
    sock.write(first);
  });
}

function json408(text, pattern) {
  assert.match(text, /^HTTP\/1\.1 408 /, text);
  assert.match(text, /Content-Type: application\/json/);
  const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
  assert.equal(body.ok, false);
  assert.match(body.error, pattern);
}

describe('stalled requests are dropped after the documented limit', () => {
  test('/health reports the limits', async () => {
    const h = await httpStatus();
    assert.equal(h.head_timeout_ms, HEAD_MS);
    assert.equal(h.body_timeout_ms, BODY_MS);
    assert.equal(h.workers, 320);
  });

  test('a head trickled a byte at a time is cut: 408, connection closed', async () => {
    const before = (await httpStatus()).heads_cut;
    const head = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\nX-Pad: ${'a'.repeat(5000)}\r\n\r\n`;
    const r = await trickle('', head, { everyMs: 50 });
    json408(r.text, new RegExp(`request head did not arrive in time \\(${HEAD_MS} ms\\)`));
    assert.ok(r.bytesSent < head.length, 'cut before the head was complete');
    assert.equal((await httpStatus()).heads_cut, before + 1);
  });

  test('a kept-alive connection whose next head trickles is cut too', async () => {
    const host = `Host: 127.0.0.1:${d.port}\r\n`;
    const r = await trickle(`GET /health HTTP/1.1\r\n${host}\r\n`,
                            `GET /health HTTP/1.1\r\n${host}X-Pad: ${'a'.repeat(5000)}\r\n\r\n`,
                            { everyMs: 50 });
    assert.equal((r.text.match(/^HTTP\/1\.1 200 /gm) || []).length, 1, r.text);
    // civetweb's own keep-alive limit (5 s for the next head) or the guard's ends it; either way
    // the connection is closed with an answer or without one, never held.
    assert.ok(r.bytesSent < 5100);
  });

  test('a body that stalls is cut: 408, the tool does not run', async () => {
    const before = (await httpStatus()).bodies_cut;
    const body = JSON.stringify({ path: '/stalled.txt', content: 'x'.repeat(100) });
    const r = await trickle(`POST /tool/write_file HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\n` +
                            `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n` +
                            body.slice(0, 20), '');
    json408(r.text, new RegExp(`request body did not arrive within ${BODY_MS} ms`));
    assert.equal(existsSync(path.join(d.workspace, 'stalled.txt')), false);
    assert.equal((await httpStatus()).bodies_cut, before + 1);
  });

  test('a body trickled a byte at a time is cut at the limit, not at each byte', async () => {
    // civetweb restarts its request_timeout_ms at every read: this body once held a worker for as
    // long as it kept trickling.
    const body = JSON.stringify({ path: '/trickled.txt', content: 'x'.repeat(2000) });
    const r = await trickle(`POST /tool/write_file HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\n` +
                            `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
                            body, { everyMs: 50 });
    json408(r.text, /request body did not arrive within/);
    assert.ok(r.bytesSent < body.length, 'cut before the body was complete');
    assert.equal(existsSync(path.join(d.workspace, 'trickled.txt')), false);
  });

  test('a chunked body that stalls is cut the same way', async () => {
    const r = await trickle(`POST /tool/list_dir HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\n` +
                            'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{', '');
    json408(r.text, /request body did not arrive within/);
  });

  test('after a 413 the rest of the body is not drained at the client\'s pace', async () => {
    // A 100 MB Content-Length is refused at once; the client then keeps sending slowly. The old
    // drain read on until 32 MiB had come; now the connection closes after a short drain.
    const r = await trickle(`POST /tool/write_file HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\n` +
                            `Content-Type: application/json\r\nContent-Length: ${100 << 20}\r\n\r\n`,
                            'x'.repeat(1 << 20), { everyMs: 20 });
    assert.match(r.text, /^HTTP\/1\.1 413 /, r.text);
    assert.match(r.text, /Connection: close/i);
    assert.ok(r.bytesSent < 1 << 20, 'closed while the client was still sending');
  });
});

describe('slow and many clients at once', () => {
  test('100 slowloris, 60 parked polls, 64 keep-alive clients: every probe is answered', async () => {
    const cutBefore = (await httpStatus()).heads_cut;
    const s = slowloris(d.port, 100, { byteMs: 200 });
    const p = parkedPolls(d.port, 60);
    const k = keepAliveClients(d.port, 64, { path: '/health' });
    const probes = [];
    try {
      // Until every slowloris connection has been cut at least once (so the probes ran while
      // the attack held workers and reconnected), and at least 60 probes went out.
      const deadline = Date.now() + 240000;
      while ((probes.length < 60 || s.stats().answered408 < 100) && Date.now() < deadline) {
        const [h, rf] = await Promise.all([
          probe(d.port, '/health'),
          probe(d.port, '/tool/read_file', { method: 'POST', body: JSON.stringify({ path: '/probe.txt' }) }),
        ]);
        probes.push(h, rf);
        assert.equal(h.status, 200, `a /health probe was not answered: ${h.error ?? h.status}`);
        assert.equal(rf.status, 200, `a read_file probe was not answered: ${rf.error ?? rf.status}`);
        assert.equal(rf.body.result, 'probe');
      }
      assert.ok(s.stats().answered408 >= 100, `slowloris connections cut: ${JSON.stringify(s.stats())}`);
      assert.equal(p.stats().maxParked, 60, `polls parked: ${JSON.stringify(p.stats())}`);
      assert.equal(p.stats().failed, 0, `polls failed: ${JSON.stringify(p.stats())}`);
      assert.ok(k.stats().answered > 0);
      assert.equal(k.stats().failed, 0, `keep-alive clients: ${JSON.stringify(k.stats())}`);
    } finally {
      await Promise.all([s.stop(), p.stop(), k.stop()]);
    }
    const h = await httpStatus();
    assert.ok(h.heads_cut - cutBefore >= 100, JSON.stringify(h));
    const ms = probes.map((x) => x.ms).sort((a, b) => a - b);
    console.log(`# ${probes.length} probes under attack: p50 ${ms[ms.length >> 1].toFixed(1)} ms, ` +
                `max ${ms[ms.length - 1].toFixed(1)} ms; ${JSON.stringify(h)}`);
  });
});

describe('more slow clients than workers', () => {
  test('when every worker is taken, slow first heads are cut at once and new clients get through', async () => {
    // 16 workers and a head limit of 10 minutes: only the busy rule can free a worker held by
    // a slowloris connection. Each probe gives up after 60 s (a hang), far below that limit.
    const t = await startDaemon({ args: ['--http-threads', '16', '--http-head-timeout-ms', '600000'] });
    const s = slowloris(t.port, 24, { byteMs: 200 });
    try {
      const deadline = Date.now() + 120000;
      while (s.stats().opened < 24 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      for (let i = 0; i < 10; i++) {
        const h = await probe(t.port, '/health');
        assert.equal(h.status, 200, `probe ${i} was not answered: ${h.error ?? h.status}`);
      }
      const r = await t.get('/health');
      assert.ok(r.body.http.heads_shed > 0, JSON.stringify(r.body.http));
      assert.ok(s.stats().answered408 > 0, JSON.stringify(s.stats()));
    } finally {
      await s.stop();
      await t.stop();
    }
  });
});
