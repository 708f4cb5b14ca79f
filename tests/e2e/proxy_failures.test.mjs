// tests/e2e/proxy_failures.test.mjs - runbox when the daemon misbehaves: a call cancelled by
// the client, a daemon that never answers, no daemon at all, a daemon that drops the
// connection or is killed mid-call, and service again once a daemon is back on the port.
// Misbehaving daemons are small node HTTP servers made here; the kill test uses real runboxd.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';
import { procStat } from '../lib/procstat.mjs';
import { resultError, resultText, runRunbox, startProxy } from '../lib/proxy.mjs';
import { sleep, until } from '../lib/wait.mjs';
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

// A fake runboxd. handler(req, res, body) decides what happens; seen lists every request and
// aborted the ones whose connection closed before an answer was sent. Like runboxd it lists
// no external tools on GET /tools and keeps GET /events open (runbox asks for both: the
// external servers' tools and their changes); those two are not in seen, and connections
// counts only the connections that carried other requests. opts.ready: false leaves out the
// stream's "ready" event, after which runbox fetches GET /tools again (beside whatever calls are
// going on: a test that counts connections cannot have that); a string is the event's data
// (by default that of a runboxd from before it said its version and revision).
async function fakeDaemon(handler, port = 0, opts = {}) {
  const seen = [];
  const aborted = [];
  const waiters = [];
  const sockets = new Set();
  let streams = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/tools') return answer(res, 200, { tools: [] });
      if (req.method === 'GET' && req.url.startsWith('/events')) {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        if (opts.ready !== false) res.write(`event: ready\ndata: ${opts.ready ?? '{"latest_id":0}'}\n\n`);
        streams++;
        return;
      }
      sockets.add(req.socket);
      const entry = { method: req.method, url: req.url, headers: req.headers,
                      body: Buffer.concat(chunks).toString('utf8') };
      seen.push(entry);
      res.on('close', () => {
        if (!res.writableFinished) aborted.push(entry);
        for (const w of waiters.splice(0)) w();
      });
      for (const w of waiters.splice(0)) w();
      handler(req, res, entry);
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const fake = {
    port: server.address().port,
    url: `http://127.0.0.1:${server.address().port}`,
    seen, aborted, handler,
    connections: () => sockets.size,
    forgetConnections: () => sockets.clear(),
    streams: () => streams, // GET /events streams opened
    // Resolves when pred() becomes true (checked after every request event), however long
    // that takes.
    until(pred) {
      return new Promise((resolve) => {
        const check = () => {
          if (pred()) resolve(); else waiters.push(check);
        };
        check();
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  cleanups.push(() => fake.close().catch(() => {}));
  return fake;
}

function answer(res, status, obj) {
  const body = JSON.stringify(obj);
  res.writeHead(status, { 'Content-Type': 'application/json',
                          'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

const okHandler = (req, res, entry) =>
  answer(res, 200, { ok: true, id: 'c', result: `echo ${entry.url} ${entry.body}` });

async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

function proxy(opts) {
  const p = startProxy(opts);
  cleanups.push(() => p.kill());
  return p;
}

async function finish(p) {
  const { code } = await p.close();
  assert.equal(code, 0, p.stderr());
  assert.deepEqual(p.badLines, []);
}

describe('requests to the daemon', () => {
  test('connections are kept alive and reused', async () => {
    // During a burst the fake answers nothing until all 16 of its calls have arrived, so 16 are
    // in flight at once whatever the machine's load: the counts below are exact. Two requests
    // of runbox's own would take connections at moments the load decides (seen: 2 connections
    // for 20 sequential calls, 16 after the second burst): GET /events, opened once the first
    // GET /tools has answered, takes whichever connection is idle then, maybe the one the first
    // call used; and the GET /tools refetch after the stream's "ready" runs beside the calls.
    // So the fake sends no "ready", and the counting starts once the stream is open.
    let gate = 0;
    let held = [];
    const fake = await fakeDaemon((req, res, entry) => {
      if (!gate) return okHandler(req, res, entry);
      held.push(() => okHandler(req, res, entry));
      if (held.length === gate) for (const answerIt of held.splice(0)) answerIt();
    }, 0, { ready: false });
    const p = proxy({ daemonUrl: fake.url });
    await p.initialize();
    assert.equal((await p.callTool('list_dir', {})).isError, false);
    await until('runbox opened its event stream', () => fake.streams() === 1);
    fake.forgetConnections();
    for (let i = 0; i < 20; i++) assert.equal((await p.callTool('list_dir', {})).isError, false);
    assert.equal(fake.connections(), 1, 'sequential calls share one connection');
    assert.equal(fake.streams(), 1, 'one event stream all along');
    gate = 16;
    const burst = [];
    for (let i = 0; i < 16; i++) burst.push(p.callTool('list_dir', { path: `/${i}` }));
    await Promise.all(burst);
    assert.equal(fake.connections(), 16, '16 calls in flight: the first connection and 15 new');
    for (let i = 0; i < 16; i++) burst[i] = p.callTool('list_dir', { path: `/${i}` });
    await Promise.all(burst);
    assert.equal(fake.connections(), 16, 'the 16 connections stayed alive for reuse');
    await finish(p);
  });

  test('a call is POST /tool/<name> with the arguments as a JSON body', async () => {
    const fake = await fakeDaemon(okHandler);
    const p = proxy({ daemonUrl: fake.url, env: { RUNBOX_TOKEN: 's3cret' } });
    await p.initialize();
    // > 1 KiB: libcurl would send "Expect: 100-continue" and wait for an interim answer that
    // civetweb never gives; the proxy must not ask (the header check below).
    const content = 'y'.repeat(5000);
    const r = await p.callTool('write_file', { path: '/a.txt', content });
    assert.equal(r.isError, false);
    const req = fake.seen[0];
    assert.equal(req.method, 'POST');
    assert.equal(req.url, '/tool/write_file');
    assert.equal(req.headers['content-type'], 'application/json');
    assert.equal(req.headers.authorization, 'Bearer s3cret');
    assert.equal(req.headers.expect, undefined);
    assert.deepEqual(JSON.parse(req.body), { path: '/a.txt', content });
    assert.equal(resultText(r), `echo /tool/write_file ${req.body}`);
    await finish(p);
  });

  test('arguments the whole schema refuses never leave runbox, though tools/list omits the ceilings',
       async () => {
    const fake = await fakeDaemon(okHandler);
    const p = proxy({ daemonUrl: fake.url });
    await p.initialize();
    const listed = (await p.request('tools/list', {})).result.tools.find((t) => t.name === 'read_file');
    assert.equal(listed.inputSchema.properties.path.maxLength, undefined, 'the listing has no ceiling');
    assert.equal(listed.inputSchema.additionalProperties, undefined);
    const long = await p.callTool('read_file', { path: '/' + 'a'.repeat(5000) });
    assert.equal(long.isError, true);
    assert.match(resultText(long), /arguments\.path: .*at most 4096/);
    const extra = await p.callTool('read_file', { path: '/a', colour: 'red' });
    assert.equal(extra.isError, true);
    assert.match(resultText(extra), /arguments\.colour: unexpected property/);
    assert.equal(fake.seen.length, 0, 'no HTTP request was made');
    assert.equal((await p.callTool('read_file', { path: '/a' })).isError, false);
    assert.equal(fake.seen.length, 1);
    await finish(p);
  });

  test('HTTP errors become isError messages that name the status', async () => {
    const fake = await fakeDaemon((req, res) => {
      if (req.url === '/tool/read_file')
        answer(res, 400, { ok: false, error: 'invalid arguments',
                           details: ['arguments.path: must not be empty'] });
      else answer(res, 503, { ok: false, error: 'busy' });
    });
    const p = proxy({ daemonUrl: fake.url });
    await p.initialize();
    const bad = await p.callTool('read_file', { path: '/x' });
    assert.equal(bad.isError, true);
    assert.equal(resultError(bad).error, 'invalid arguments: arguments.path: must not be empty');
    const busy = await p.callTool('list_dir', {});
    assert.equal(resultError(busy).error, 'runboxd answered HTTP 503: busy');
    await finish(p);
  });

  test('an answer over 64 MiB is refused with a clear error and service goes on', async () => {
    const fake = await fakeDaemon((req, res, entry) => {
      if (entry.url !== '/tool/read_file') return okHandler(req, res, entry);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const chunk = Buffer.alloc(1 << 20, 0x61);
      res.write('{"ok":true,"result":"');
      let sent = 0;
      const more = () => {
        while (sent < 70) {
          sent++;
          if (!res.write(chunk)) return res.once('drain', more);
        }
        res.end('"}');
      };
      res.on('error', () => {});
      more();
    });
    const p = proxy({ daemonUrl: fake.url });
    await p.initialize();
    const r = await p.callTool('read_file', { path: '/huge' });
    assert.equal(r.isError, true);
    assert.match(resultError(r).error, /larger than the 64 MiB runbox accepts/);
    assert.equal((await p.callTool('list_dir', {})).isError, false);
    await finish(p);
  });
});

describe('cancellation and timeouts', () => {
  test('notifications/cancelled aborts the HTTP request and the id is never answered',
       async () => {
    let slow = true;
    const fake = await fakeDaemon((req, res, entry) => {
      if (!slow) okHandler(req, res, entry); // else: never answer
    });
    const p = proxy({ daemonUrl: fake.url });
    await p.initialize();
    const id = 4242;
    p.send({ jsonrpc: '2.0', id, method: 'tools/call',
             params: { name: 'list_dir', arguments: { path: '/slow' } } });
    await fake.until(() => fake.seen.length === 1);
    p.notify('notifications/cancelled', { requestId: id, reason: 'user gave up' });
    await fake.until(() => fake.aborted.length === 1);
    assert.equal(fake.aborted[0].body, '{"path":"/slow"}');
    slow = false;
    const r = await p.callTool('list_dir', { path: '/fast' });
    assert.equal(r.isError, false);
    await sleep(200);
    assert.equal(p.messages.filter((m) => m.id === id).length, 0, 'cancelled id answered');
    await finish(p);
  });

  test('RUNBOX_TIMEOUT_MS against a daemon that never answers', async () => {
    const fake = await fakeDaemon(() => { /* never answer */ });
    const p = proxy({ daemonUrl: fake.url, env: { RUNBOX_TIMEOUT_MS: '300' } });
    await p.initialize();
    const t0 = performance.now();
    const r = await p.callTool('list_dir', {});
    const ms = performance.now() - t0;
    assert.equal(r.isError, true);
    assert.deepEqual(resultError(r), { error: 'MCP proxy timeout', timeout: true });
    assert.ok(ms >= 290, `gave up after ${ms} ms, before the 300 ms timeout`);
    await fake.until(() => fake.aborted.length === 1); // the request was given up, not left open
    await finish(p);
  });

  test('ping and other calls are answered while a call hangs', async () => {
    const fake = await fakeDaemon((req, res, entry) => {
      if (entry.url !== '/tool/search') okHandler(req, res, entry);
    });
    const p = proxy({ daemonUrl: fake.url });
    await p.initialize();
    const hanging = p.request('tools/call', { name: 'search', arguments: { query: 'x' } });
    hanging.catch(() => {}); // rejected when runbox exits with it still in flight
    await fake.until(() => fake.seen.length === 1);
    assert.deepEqual((await p.request('ping')).result, {});
    assert.equal((await p.callTool('list_dir', {})).isError, false);
    const early = await Promise.race([hanging.then(() => 'answered'), sleep(100)]);
    assert.notEqual(early, 'answered');
    // EOF with the call still in flight: runbox waits for its answer; SIGTERM ends it at once.
    p.child.stdin.end();
    const still = await Promise.race([p.exited.then(() => 'exited'), sleep(300)]);
    assert.notEqual(still, 'exited', 'runbox waits for the call in flight after EOF');
    // The call never gets an answer, so runbox exits only if SIGTERM ends it (one that did
    // not would keep this waiting until ctest's timeout).
    p.kill('SIGTERM');
    const { code, signal } = await p.exited;
    assert.equal(signal, null);
    assert.equal(code, 0);
    assert.deepEqual(p.badLines, []);
  });
});

describe('daemon down, dying and back', () => {
  test('no daemon at DAEMON_URL: isError at once (no autostart, no retry) that says what to do', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const p = proxy({ daemonUrl: url });
    await p.initialize();
    for (let i = 0; i < 3; i++) {
      const r = await p.callTool('list_dir', {});
      assert.equal(r.isError, true);
      const e = resultError(r);
      assert.equal(e.timeout, false);
      assert.equal(e.error, `runboxd is not reachable at ${url} (connection refused). Start it ` +
                            'with `runboxd` (or leave DAEMON_URL unset so runbox starts it), ' +
                            'then retry.');
    }
    await finish(p);
  });

  test('a daemon that drops the connection mid-call, then one back on the same port',
       async () => {
    let fake = await fakeDaemon((req) => req.socket.destroy());
    const port = fake.port;
    const p = proxy({ daemonUrl: fake.url });
    await p.initialize();
    const r = await p.callTool('write_file', { path: '/a', content: 'x' });
    assert.equal(r.isError, true);
    assert.match(resultError(r).error, /closed the connection before answering/);
    assert.match(resultError(r).error, /may have been applied/);

    await fake.close();
    const down = await p.callTool('list_dir', {});
    assert.match(resultError(down).error, /not reachable/);

    fake = await fakeDaemon(okHandler, port);
    const back = await p.callTool('list_dir', {});
    assert.equal(back.isError, false, resultText(back));
    assert.equal((await p.callTool('list_dir', {})).isError, false);
    await finish(p);
  });

  // Resolves once every thread of pid is stopped (state T in /proc/PID/task/TID/stat).
  async function waitStopped(pid) {
    const state = (tid) => procStat(pid, tid)?.state;
    await until(`every thread of runboxd ${pid} stopped`,
                () => readdirSync(`/proc/${pid}/task`).every((tid) => state(tid) === 'T'),
                { every: 2 });
  }

  // Bytes waiting unread in the receive queues of the established TCP sockets on 127.0.0.1
  // whose local port is port (/proc/net/tcp: "local rem st tx_queue:rx_queue", hex).
  function unreadAt(port) {
    let n = 0;
    for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 5 || f[3] !== '01') continue;
      if (parseInt(f[1].split(':')[1], 16) !== port) continue;
      n += parseInt(f[4].split(':')[1], 16);
    }
    return n;
  }

  test('runboxd killed (SIGKILL) during a call, then restarted on the same port', async () => {
    const ws = mkdtempSync(path.join(os.tmpdir(), 'runbox-e2e-ws-'));
    cleanups.push(() => rmSync(ws, { recursive: true, force: true }));
    const d1 = await startDaemon({ workspace: ws });
    cleanups.push(() => d1.stop('SIGKILL'));
    const p = proxy({ daemonUrl: d1.url });
    await p.initialize();
    assert.equal((await p.callTool('write_file', { path: '/k.txt', content: 'kept' })).isError,
                 false);

    // Stop the daemon so the call is surely in flight, then kill it. A group stop is not
    // instant: wait until every thread of the daemon shows state T.
    process.kill(d1.pid, 'SIGSTOP');
    await waitStopped(d1.pid);
    // The call is in flight once its request lies unread in the stopped daemon's socket.
    const pending = p.callTool('read_file', { path: '/k.txt' });
    await until('the request queued at the stopped runboxd', () => unreadAt(d1.port) > 0,
                { every: 5 });
    process.kill(d1.pid, 'SIGKILL');
    const r = await pending;
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.match(resultError(r).error, /closed the connection before answering/);
    await d1.exited();

    const d2 = await startDaemon({ workspace: ws, args: ['--port', String(d1.port)] });
    cleanups.push(() => d2.stop());
    assert.equal(d2.port, d1.port);
    const again = await p.callTool('read_file', { path: '/k.txt' });
    assert.equal(again.isError, false, resultText(again));
    assert.equal(resultText(again), 'kept');
    await finish(p);
  });
});

// A runboxd still running from before runbox was updated (or one from a newer install) is named
// once, with what to do: in runbox's log when it follows the daemon's events, in runbox status.
describe('a daemon from another install', () => {
  const older = /runboxd at http:\/\/127\.0\.0\.1:\d+ is older than this runbox \(runboxd \S+ speaks revision 1, runbox \S+ revision \d+\): it was started before runbox was updated\. Restart it \(runbox restart\)/;

  test('an older one (its events do not say a revision) is named once, however often the stream restarts', async () => {
    const fake = await fakeDaemon(okHandler);
    const p = proxy({ daemonUrl: fake.url });
    await p.initialize();
    assert.equal((await p.callTool('list_dir', {})).isError, false);
    await until('the events stream', () => fake.streams() >= 1);
    await until('the warning', () => older.test(p.stderr()));
    // The stream ends and runbox opens it again: the same daemon is not named twice.
    fake.forgetConnections();
    await fake.close();
    const again = await fakeDaemon(okHandler, fake.port);
    await until('the stream opened again', () => again.streams() >= 1);
    assert.equal((await p.callTool('list_dir', {})).isError, false);
    assert.equal(p.stderr().split('\n').filter((l) => older.test(l)).length, 1, p.stderr());
    await finish(p);
  });

  test('a newer one says to use the runbox installed beside it', async () => {
    const fake = await fakeDaemon(okHandler, 0, { ready: '{"latest_id":0,"version":"9.0.0","wire":999}' });
    const p = proxy({ daemonUrl: fake.url });
    await p.initialize();
    assert.equal((await p.callTool('list_dir', {})).isError, false);
    await until('the warning', () => /runboxd at \S+ is newer than this runbox \(runboxd 9\.0\.0 speaks revision 999/.test(p.stderr()));
    await finish(p);
  });

  test('runbox status names an older one; a runboxd of this install is not named', async () => {
    const fake = await fakeDaemon((req, res) => answer(res, 200, { ok: true, service: 'runboxd', version: '0.0.9', pid: 1, port: 1, uptime_ms: 5 }));
    const old = await runRunbox(['status'], { env: { DAEMON_URL: fake.url } });
    assert.match(old.stdout, /\nwarning +runboxd at \S+ is older than this runbox \(runboxd 0\.0\.9 speaks revision 1, /, old.stdout);
    assert.match(old.stdout, older, old.stdout);
    const d = await startDaemon({ workspace: ':memory:' });
    cleanups.push(() => d.stop());
    const cur = await runRunbox(['status'], { env: { DAEMON_URL: d.url } });
    assert.equal(cur.code, 0, cur.stderr);
    assert.doesNotMatch(cur.stdout, /warning|older|newer/, cur.stdout);
    // runbox's own follow of the real daemon's events: once a console line came through them,
    // their "ready" was read, and said nothing to warn about.
    const p = proxy({ daemonUrl: d.url });
    await p.initialize();
    await p.request('logging/setLevel', { level: 'debug' });
    assert.equal((await p.callTool('exec', { command: 'echo revision-check' })).isError, false);
    await until('the console line through runbox', () => p.messages.some((m) =>
      m.method === 'notifications/message' && JSON.stringify(m.params).includes('revision-check')));
    await finish(p);
    assert.doesNotMatch(p.stderr(), /older than|newer than/, p.stderr());
  });
});
