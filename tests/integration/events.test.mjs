// tests/integration/events.test.mjs - what changed reaches whoever listens: GET /events (the
// console, resource updates, list changes, replay), POST /tool/<name> as an event stream
// (progress while exec runs, then the answer), and the same facts as MCP notifications on /mcp
// (logging/setLevel, resources/subscribe, list_changed; a modern request's own log).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ResourceListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { startDaemon } from '../lib/daemon.mjs';
import { openSse } from '../lib/sse.mjs';

let d;

before(async () => { d = await startDaemon(); });
after(async () => { await d.stop(); });

const exec = (command, extra = {}) => d.call('exec', { command, ...extra });

test('/events: console entries arrive as they are written, after a ready event', async () => {
  const s = await openSse(d.port, '/events');
  assert.equal(s.status, 200);
  assert.match(s.headers['content-type'], /^text\/event-stream/);
  await s.next((e) => e.event === 'ready');
  const r = await exec('echo events-live-1; echo events-live-2 >&2');
  assert.equal(r.body.ok, true);
  const out = await s.next((e) => e.event === 'console' && e.json.message === 'events-live-1');
  assert.equal(out.json.level, 'log');
  assert.equal(out.json.source, 'exec');
  assert.equal(out.id, String(out.json.id), 'the SSE id is the console id');
  const err = await s.next((e) => e.event === 'console' && e.json.message === 'events-live-2');
  assert.equal(err.json.level, 'warn');
  assert.equal(err.json.pid, out.json.pid);
  assert.ok(err.json.id > out.json.id);
  s.close();
});

test('/events?since=N replays what came after N, once each, in order, then goes live', async () => {
  const first = await exec('echo replay-a');
  await exec('echo replay-b; echo replay-c');
  const logs = await d.call('console_logs', { source: 'exec', limit: 1000 });
  const a = logs.body.result.entries.find((e) => e.message === 'replay-a');
  assert.ok(a, 'the console has replay-a');
  assert.equal(first.body.ok, true);
  const s = await openSse(d.port, `/events?since=${a.id}`);
  const ready = await s.next((e) => e.event === 'ready');
  const before = s.events.filter((e) => e.event === 'console');
  const ids = before.map((e) => e.json.id);
  assert.deepEqual(ids, [...ids].sort((x, y) => x - y), 'in id order');
  assert.equal(new Set(ids).size, ids.length, 'no entry twice');
  assert.ok(ids.every((id) => id > a.id), 'nothing at or before since');
  const msgs = before.map((e) => e.json.message);
  assert.ok(msgs.includes('replay-b') && msgs.includes('replay-c'), JSON.stringify(msgs));
  assert.ok(!msgs.includes('replay-a'));
  assert.equal(ready.json.latest_id, ids[ids.length - 1]);
  await exec('echo replay-live');
  const live = await s.next((e) => e.event === 'console' && e.json.message === 'replay-live');
  assert.ok(live.json.id > ready.json.latest_id);
  s.close();
});

test('/events: Last-Event-ID resumes like since (a browser EventSource reconnecting)', async () => {
  await exec('echo resume-1');
  const logs = await d.call('console_logs', { source: 'exec', limit: 1000 });
  const one = logs.body.result.entries.find((e) => e.message === 'resume-1');
  await exec('echo resume-2');
  const s = await openSse(d.port, '/events', { headers: { 'Last-Event-ID': String(one.id) } });
  await s.next((e) => e.event === 'console' && e.json.message === 'resume-2');
  assert.ok(!s.events.some((e) => e.json && e.json.message === 'resume-1'));
  s.close();
});

test('/events?console=warn&source=exec keeps only entries at warn or above from exec', async () => {
  const s = await openSse(d.port, '/events?console=warn&source=exec');
  await s.next((e) => e.event === 'ready');
  await exec('echo level-out; echo level-err >&2');
  await s.next((e) => e.event === 'console' && e.json.message === 'level-err');
  assert.ok(!s.events.some((e) => e.json && e.json.message === 'level-out'));
  assert.ok(s.events.filter((e) => e.event === 'console').every((e) =>
    ['warn', 'error'].includes(e.json.level) && e.json.source === 'exec'));
  s.close();
});

test('/events: a bad query is a 400 that names the values', async () => {
  let r = await d.get('/events?console=loud');
  assert.equal(r.status, 400);
  assert.match(r.body.error, /console=loud: expected a level \(debug, log, info, warn, error\) or none/);
  r = await d.get('/events?since=-3');
  assert.equal(r.status, 400);
  assert.match(r.body.error, /since=-3: expected a console id/);
  r = await d.get('/events?source=cloud');
  assert.equal(r.status, 400);
  r = await d.get('/events?uri=' + encodeURIComponent('file:///a%00b'));
  assert.equal(r.status, 400);
  assert.match(r.body.error, /bad %-escape/);
  r = await d.get('/events?uri=https://example.com/');
  assert.equal(r.status, 400);
  r = await d.call('../events', {});
  assert.ok(r.status >= 400);
  r = await request405();
  assert.equal(r.status, 405);
});

async function request405() {
  const { request } = await import('../lib/daemon.mjs');
  return request(d.port, '/events', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                       body: '{}' });
}

test('/events?uri=: a file changed by exec, by a tool, and removed, is told each time', async () => {
  await d.call('write_file', { path: '/watched/w.txt', content: 'v1' });
  const s = await openSse(d.port, '/events?console=none&uri=' + encodeURIComponent('file:///watched/w.txt'));
  await s.next((e) => e.event === 'ready');
  await exec('echo v2 > /workspace/watched/w.txt');
  await s.next((e) => e.event === 'resource_updated' && e.json.uri === 'file:///watched/w.txt');
  await d.call('write_file', { path: '/watched/w.txt', content: 'v3' });
  await s.next((e) => e.event === 'resource_updated');
  await d.call('remove', { path: '/watched/w.txt' });
  await s.next((e) => e.event === 'resource_updated');
  assert.ok(!s.events.some((e) => e.event === 'console'), 'console=none sends no entries');
  s.close();
});

test('/events?uri=: a file whose folder does not exist yet is told when it is made', async () => {
  const uri = 'file:///later/deep/made.txt';
  const s = await openSse(d.port, '/events?console=none&uri=' + encodeURIComponent(uri));
  await s.next((e) => e.event === 'ready');
  await exec('mkdir -p /workspace/later/deep && echo hi > /workspace/later/deep/made.txt');
  await s.next((e) => e.event === 'resource_updated' && e.json.uri === uri);
  s.close();
});

test('/events: a tool that creates a file changes the resources list', async () => {
  const s = await openSse(d.port, '/events?console=none');
  await s.next((e) => e.event === 'ready');
  await d.call('write_file', { path: `/new-${Date.now()}.txt`, content: 'x' });
  const ev = await s.next((e) => e.event === 'list_changed');
  assert.deepEqual(ev.json.lists, ['resources']);
  s.close();
});

test('POST /tool/exec with Accept: text/event-stream: progress each second, then the answer', async () => {
  const plain = await exec('echo same');
  const s = await openSse(d.port, '/tool/exec', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ command: 'for i in 1 2 3; do echo tick $i; sleep 1; done' }),
  });
  assert.equal(s.status, 200);
  const answer = await s.next((e) => e.event === 'answer');
  const progress = s.events.filter((e) => e.event === 'progress');
  assert.ok(progress.length >= 2, `at least two progress events: ${JSON.stringify(progress)}`);
  for (let i = 1; i < progress.length; i++)
    assert.ok(progress[i].json.progress > progress[i - 1].json.progress, 'progress grows');
  assert.ok(progress.some((e) => /tick 1/.test(e.json.message)), 'the latest lines are in it');
  assert.equal(answer.json.status, 200);
  assert.equal(answer.json.body.ok, true);
  assert.equal(answer.json.body.result, 'tick 1\ntick 2\ntick 3\n');
  assert.deepEqual(Object.keys(answer.json.body).sort(), Object.keys(plain.body).sort());
  // The stream ends after the answer (a stream that stayed open keeps this waiting until
  // ctest's timeout), and nothing came after it.
  await s.done();
  assert.equal(s.events[s.events.length - 1], answer, 'the answer is the last event');
});

// One raw HTTP exchange on a socket: writes head+body, reads until `until(text)` holds or the
// server closes. Returns {text, closed}.
function exchange(sock, request, until) {
  return new Promise((resolve) => {
    let text = '';
    const onData = (c) => { text += c; if (until(text)) finish(false); };
    const onEnd = () => finish(true);
    const finish = (closed) => {
      sock.off('data', onData); sock.off('end', onEnd); sock.off('close', onEnd);
      resolve({ text, closed });
    };
    sock.on('data', onData); sock.on('end', onEnd); sock.on('close', onEnd);
    sock.write(request);
  });
}

const streamRequest = (version, extra = '') => {
  const body = JSON.stringify({ path: '/' });
  return `POST /tool/list_dir HTTP/${version}\r\nHost: 127.0.0.1:${d.port}\r\nContent-Type: application/json\r\n` +
    `Accept: text/event-stream\r\n${extra}Content-Length: ${body.length}\r\n\r\n${body}`;
};

test('POST /tool as an event stream on HTTP/1.1: chunked, ends with the answer, the connection is kept', async () => {
  const { connect } = await import('node:net');
  const sock = connect(d.port, '127.0.0.1');
  sock.setEncoding('latin1');
  await new Promise((r) => sock.once('connect', r));
  // A body that ended only when the connection closed never ended for a client that keeps
  // connections (runbox's libcurl, Node's agent): they waited for runboxd's keep-alive timer.
  for (let round = 0; round < 2; round++) {
    const r = await exchange(sock, streamRequest('1.1'), (t) => t.endsWith('\r\n0\r\n\r\n'));
    assert.equal(r.closed, false, `the stream ended with its last chunk, the socket open: ${r.text}`);
    const [head, body] = [r.text.slice(0, r.text.indexOf('\r\n\r\n')), r.text.slice(r.text.indexOf('\r\n\r\n') + 4)];
    assert.match(head, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(head, /\r\nContent-Type: text\/event-stream\r\n/);
    assert.match(head, /\r\nTransfer-Encoding: chunked(\r\n|$)/);
    assert.doesNotMatch(head, /Connection: close/);
    // Undo the chunking: every chunk's size is exact, and the events are whole.
    let events = '', at = 0;
    for (;;) {
      const nl = body.indexOf('\r\n', at);
      const size = parseInt(body.slice(at, nl), 16);
      if (size === 0) break;
      events += body.slice(nl + 2, nl + 2 + size);
      assert.equal(body.slice(nl + 2 + size, nl + 4 + size), '\r\n');
      at = nl + 4 + size;
    }
    const answer = /^event: answer\ndata: (.*)\n\n$/m.exec(events);
    assert.ok(answer, events);
    assert.equal(JSON.parse(answer[1]).body.ok, true);
  }
  sock.destroy();
});

test('POST /tool as an event stream on HTTP/1.0: until the close; with keep-alive a plain answer', async () => {
  const { connect } = await import('node:net');
  const open = async () => {
    const sock = connect(d.port, '127.0.0.1');
    sock.setEncoding('latin1');
    await new Promise((r) => sock.once('connect', r));
    return sock;
  };
  let sock = await open();
  let r = await exchange(sock, streamRequest('1.0'), () => false);
  assert.equal(r.closed, true);
  assert.match(r.text, /\r\nContent-Type: text\/event-stream\r\n/);
  assert.match(r.text, /\r\n\r\nevent: answer\ndata: \{"status":200,/);
  sock.destroy();
  // HTTP/1.0 has no chunks, and this client would keep the connection: the plain answer.
  sock = await open();
  r = await exchange(sock, streamRequest('1.0', 'Connection: keep-alive\r\n'), (t) => {
    const m = /Content-Length: (\d+)\r\n/.exec(t);
    return m && t.length >= t.indexOf('\r\n\r\n') + 4 + Number(m[1]);
  });
  assert.equal(r.closed, false, r.text);
  assert.match(r.text, /\r\nContent-Type: application\/json\r\n/);
  assert.equal(JSON.parse(r.text.slice(r.text.indexOf('\r\n\r\n') + 4)).ok, true);
  sock.destroy();
});

test('POST /tool with Accept: text/event-stream: errors before the call are plain JSON', async () => {
  const { request } = await import('../lib/daemon.mjs');
  let r = await request(d.port, '/tool/no_such_tool', {
    method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: '{}' });
  assert.equal(r.status, 404);
  assert.match(r.headers['content-type'], /application\/json/);
  r = await request(d.port, '/tool/exec', {
    method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: '{"command": 7}' });
  assert.equal(r.status, 400);
  assert.match(r.body.error, /command/);
});

test('POST /tool/exec as an event stream: a failed run is an answer with ok:false', async () => {
  const s = await openSse(d.port, '/tool/exec', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ command: 'sleep 5', timeout_ms: 1200 }) });
  const answer = await s.next((e) => e.event === 'answer');
  assert.equal(answer.json.status, 200);
  assert.equal(answer.json.body.ok, true, 'a timed-out run is still a result');
  assert.match(answer.json.body.result, /timed out/);
});

// ---- the same facts as MCP notifications ----

async function mcpClient() {
  const client = new Client({ name: 'events-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`));
  await client.connect(transport);
  return client;
}

function collect(client, schema) {
  const got = [];
  const waiters = [];
  client.setNotificationHandler(schema, (n) => {
    got.push(n);
    for (const w of waiters.splice(0)) w();
  });
  return {
    got,
    async until(pred, timeoutMs = 60000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = got.find(pred);
        if (hit) return hit;
        if (Date.now() > deadline)
          throw new Error(`no matching notification; got ${JSON.stringify(got).slice(0, 2000)}`);
        await new Promise((r) => { waiters.push(r); setTimeout(r, 200); });
      }
    },
  };
}

test('/mcp: a call the whole schema refuses is isError naming the argument (tools/list omits ceilings)',
     async () => {
  const client = await mcpClient();
  const { tools } = await client.listTools();
  const readFile = tools.find((t) => t.name === 'read_file');
  assert.equal(readFile.inputSchema.properties.path.maxLength, undefined);
  const long = await client.callTool({ name: 'read_file', arguments: { path: '/' + 'a'.repeat(5000) } });
  assert.equal(long.isError, true);
  assert.match(long.content[0].text, /arguments\.path: .*at most 4096/);
  const extra = await client.callTool({ name: 'read_file', arguments: { path: '/a', colour: 1 } });
  assert.equal(extra.isError, true);
  assert.match(extra.content[0].text, /arguments\.colour: unexpected property/);
  await client.close();
});

test('/mcp: the server says what it sends: logging, resources.subscribe and listChanged', async () => {
  const client = await mcpClient();
  const caps = client.getServerCapabilities();
  assert.ok(caps.logging);
  assert.equal(caps.resources.subscribe, true);
  assert.equal(caps.resources.listChanged, true);
  await client.close();
});

test('/mcp: after logging/setLevel, console entries at the level arrive as notifications/message', async () => {
  const client = await mcpClient();
  const logs = collect(client, LoggingMessageNotificationSchema);
  await exec('echo before-setlevel');
  await client.setLoggingLevel('warning');
  await exec('echo mcp-log-out; echo mcp-log-err >&2');
  const n = await logs.until((x) => x.params.data.message === 'mcp-log-err');
  assert.equal(n.params.level, 'warning');
  assert.equal(n.params.logger, 'exec');
  assert.equal(typeof n.params.data.pid, 'number');
  assert.ok(!logs.got.some((x) => x.params.data.message === 'mcp-log-out'), 'below the level');
  assert.ok(!logs.got.some((x) => x.params.data.message === 'before-setlevel'));
  await client.setLoggingLevel('debug');
  await exec('echo mcp-log-now');
  await logs.until((x) => x.params.data.message === 'mcp-log-now' && x.params.level === 'info');
  await client.close();
});

test('/mcp: resources/subscribe, then notifications/resources/updated when exec writes the file', async () => {
  const client = await mcpClient();
  const updates = collect(client, ResourceUpdatedNotificationSchema);
  await d.call('write_file', { path: '/sub/s.txt', content: 'one' });
  await client.subscribeResource({ uri: 'file:///sub/s.txt' });
  await exec('echo two >> /workspace/sub/s.txt');
  await updates.until((x) => x.params.uri === 'file:///sub/s.txt');
  const read = await client.readResource({ uri: 'file:///sub/s.txt' });
  assert.equal(read.contents[0].text, 'one' + 'two\n');
  await client.unsubscribeResource({ uri: 'file:///sub/s.txt' });
  const n = updates.got.length;
  await exec('echo three >> /workspace/sub/s.txt');
  await exec('true'); // a later run: the watch had its chance to fire
  await new Promise((r) => setTimeout(r, 600));
  assert.equal(updates.got.length, n, 'nothing after unsubscribing');
  await client.close();
});

test('/mcp: subscribing to a URI that names no resource is -32602 with the reason', async () => {
  const client = await mcpClient();
  await assert.rejects(client.subscribeResource({ uri: 'https://example.com/x' }),
                       (e) => e.code === -32602 && /file:\/\//.test(e.message));
  await client.close();
});

test('/mcp: creating a file sends notifications/resources/list_changed', async () => {
  const client = await mcpClient();
  const changes = collect(client, ResourceListChangedNotificationSchema);
  await exec(`touch /workspace/listed-${Date.now()}`);
  await changes.until(() => true);
  await client.close();
});

test('/mcp, 2026-07-28: a request with logLevel hears its own run, on its own response stream', async () => {
  const body = {
    jsonrpc: '2.0', id: 5, method: 'tools/call',
    params: {
      name: 'exec',
      arguments: { command: 'echo modern-own-1; echo modern-own-2 >&2' },
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
        'io.modelcontextprotocol/logLevel': 'info',
      },
    },
  };
  // Another run at the same time must not leak into this request's log.
  const other = exec('for i in 1 2 3; do echo other-run; sleep 0.2; done');
  const s = await openSse(d.port, '/mcp', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
               'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'exec' },
    body: JSON.stringify(body),
  });
  assert.equal(s.status, 200);
  const answer = await s.next((e) => e.json && e.json.id === 5);
  await other;
  const logs = s.events.filter((e) => e.json && e.json.method === 'notifications/message');
  const msgs = logs.map((e) => e.json.params.data.message);
  assert.ok(msgs.includes('modern-own-1') && msgs.includes('modern-own-2'), JSON.stringify(msgs));
  assert.ok(!msgs.includes('other-run'), 'only its own run');
  assert.ok(s.events.indexOf(answer) > s.events.indexOf(logs[logs.length - 1]), 'logs come first');
  assert.equal(answer.json.result.isError, false);
});

test('/mcp, 2026-07-28: without logLevel a request hears no log messages', async () => {
  const s = await openSse(d.port, '/mcp', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
               'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'exec' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: {
      name: 'exec', arguments: { command: 'echo quiet' },
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
               'io.modelcontextprotocol/clientCapabilities': {} } } }),
  });
  // Without notifications to send, the answer may come as plain JSON.
  if (/application\/json/.test(s.headers['content-type'])) {
    await s.done(); // the whole body
    assert.equal(JSON.parse(s.text).id, 6);
    return;
  }
  await s.next((e) => e.json && e.json.id === 6);
  assert.ok(!s.events.some((e) => e.json && e.json.method === 'notifications/message'));
});

test('/events?since_ts=T replays the entries written at or after T', async () => {
  await exec('echo ts-before');
  await new Promise((r) => setTimeout(r, 20));
  const t = Date.now();
  await exec('echo ts-after');
  const s = await openSse(d.port, `/events?since_ts=${t}`);
  await s.next((e) => e.event === 'ready');
  const msgs = s.events.filter((e) => e.event === 'console').map((e) => e.json.message);
  assert.ok(msgs.includes('ts-after'), JSON.stringify(msgs));
  assert.ok(!msgs.includes('ts-before'));
  s.close();
  const bad = await d.get('/events?since_ts=yesterday');
  assert.equal(bad.status, 400);
  assert.match(bad.body.error, /since_ts=yesterday: expected a time in ms since the epoch/);
});

test('/events?uri=runbox://process/list: a run starting and ending is told', async () => {
  const s = await openSse(d.port, '/events?console=none&uri=' + encodeURIComponent('runbox://process/list'));
  await s.next((e) => e.event === 'ready');
  const r = await exec('echo processes', { background: true });
  assert.equal(r.body.ok, true);
  await s.next((e) => e.event === 'resource_updated' && e.json.uri === 'runbox://process/list');
  s.close();
});

test('/events?uri=runbox://console/logs: a console entry is told', async () => {
  const s = await openSse(d.port, '/events?console=none&uri=' + encodeURIComponent('runbox://console/logs'));
  await s.next((e) => e.event === 'ready');
  await exec('echo console-resource');
  await s.next((e) => e.event === 'resource_updated' && e.json.uri === 'runbox://console/logs');
  s.close();
});

test('/events: a background run that makes a file changes the resources list when it ends', async () => {
  const s = await openSse(d.port, '/events?console=none');
  await s.next((e) => e.event === 'ready');
  await exec(`sleep 0.3; touch /workspace/bg-${Date.now()}`, { background: true });
  await s.next((e) => e.event === 'list_changed');
  s.close();
});
