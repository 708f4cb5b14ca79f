// Integration: a client that drops its HTTP request cancels the call, and the cancellation reaches
// the work. A dropped exec kills its run; a dropped Studio call is removed from the queue (never
// delivered) or, once sent, abandoned (its late answer is ignored). Either way the call's
// admission slot comes back at once: 24 dropped long calls (the whole "long" budget) leave the
// next one free to run. A search, cancelled by a dropped request or by an MCP client's
// notifications/cancelled on /mcp, stops (the daemon logs where) and gives its "search" slot back.
//
// Every wait here is for a condition the daemon reports (process_list, /health), never a time.
import assert from 'node:assert/strict';
import http from 'node:http';
import { closeSync, ftruncateSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';
import { FakePlugin } from '../lib/fakeplugin.mjs';
import { mcpSession } from '../lib/mcp.mjs';
import { until } from '../lib/wait.mjs';

const LONG_BUDGET = 24; // CALL_LONG_MAX_DEFAULT
const SEARCH_BUDGET = 8; // CALL_SEARCH_MAX_DEFAULT

// Starts POST /tool/<name> and returns { req, answer } where answer settles with the response
// (or rejects when the request is destroyed). The request can be dropped with req.destroy().
function startCall(d, tool, args) {
  const body = Buffer.from(JSON.stringify(args));
  let req;
  const answer = new Promise((resolve, reject) => {
    req = http.request({ host: '127.0.0.1', port: d.port, path: `/tool/${tool}`, method: 'POST',
                         agent: false,
                         headers: { 'Content-Type': 'application/json',
                                    'Content-Length': body.length } }, (res) => {
      let t = '';
      res.on('data', (c) => { t += c; });
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(t) }));
    });
    req.on('error', reject);
    req.end(body);
  });
  answer.catch(() => {}); // dropped on purpose
  return { req, answer };
}

async function processes(d) {
  const r = await d.call('process_list', {});
  return r.body.result.processes;
}

async function queueDepth(d) {
  return (await d.get('/health')).body.studio.queue_depth;
}

// Host processes whose command line holds marker.
function hostProcesses(marker) {
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(marker))
        found.push(name);
    } catch { /* gone */ }
  }
  return found;
}

describe('a dropped HTTP request cancels its call', () => {
  let d;
  before(async () => { d = await startDaemon({ workspace: ':memory:' }); });
  after(async () => { await d.stop(); });
  afterEach(async () => { await FakePlugin.cleanupAll(); });

  test(`${LONG_BUDGET} dropped execs: every run is killed and the next exec runs at once`,
       async () => {
    const marker = `9${Date.now() % 100000}.125`; // an odd sleep length no other test uses
    const calls = [];
    for (let i = 0; i < LONG_BUDGET; i++)
      calls.push(startCall(d, 'exec', { command: `sleep ${marker}`, timeout_ms: 100000 }));
    // All of them are in the registry (8 running, the rest waiting for a slot).
    await until('24 runs in process_list', async () =>
      (await processes(d)).filter((p) => p.command.includes(marker)).length === LONG_BUDGET);
    for (const c of calls) c.req.destroy();
    await until('every dropped run killed', async () =>
      (await processes(d)).filter((p) => p.command.includes(marker))
        .every((p) => p.state === 'killed'));
    await until('no sleep left on the host', () => hostProcesses(marker).length === 0);
    const r = await d.call('exec', { command: 'echo still-free' });
    assert.equal(r.body.ok, true, JSON.stringify(r.body));
    assert.equal(r.body.result, 'still-free\n');
  });

  test('a Studio call dropped while queued is never delivered; one dropped after it was sent ' +
       'is abandoned and its late answer ignored', async () => {
    const plug = new FakePlugin(d.port, { instance: 'cancel-studio' });
    // One poll by hand (no loop), so that after it the instance is registered and no poll waits.
    const firstPoll = plug.pollOnce();
    await until('the poll parked', async () =>
      (await d.get('/health')).body.studio.instances.some((i) => i.id === 'cancel-studio'));
    const sent = startCall(d, 'get_selection', {});
    const got = (await firstPoll).body;
    assert.equal(got.hasCommand, true);
    assert.equal(got.tool, 'get_selection');
    const waiting = startCall(d, 'get_place_info', {});
    await until('two commands in the queue', async () => (await queueDepth(d)) === 2);
    waiting.req.destroy();
    await until('the queued one dropped', async () => (await queueDepth(d)) === 1);
    sent.req.destroy();
    await until('the sent one abandoned', async () => (await queueDepth(d)) === 0);
    const late = await plug.post('/result', JSON.stringify({ id: got.id, ok: true, result: 1 }));
    assert.equal(late.body.ignored, true, JSON.stringify(late.body));
    // The next poll gets the next call's command, not the dropped one.
    const nextPoll = plug.pollOnce();
    const fresh = startCall(d, 'get_studio_mode', {});
    const cmd = (await nextPoll).body;
    assert.equal(cmd.tool, 'get_studio_mode', JSON.stringify(cmd));
    await plug.post('/result', JSON.stringify({ id: cmd.id, ok: true, result: 'edit' }));
    const answered = await fresh.answer;
    assert.equal(answered.body.ok, true, JSON.stringify(answered.body));
  });

  test(`${LONG_BUDGET} Studio calls dropped while queued give back the whole budget`, async () => {
    const plug = new FakePlugin(d.port, { instance: 'cancel-budget' });
    const firstPoll = plug.pollOnce();
    await until('registered', async () =>
      (await d.get('/health')).body.studio.instances.some((i) => i.id === 'cancel-budget'));
    const first = startCall(d, 'get_selection', {});
    const cmd = (await firstPoll).body;
    assert.equal(cmd.hasCommand, true);
    await plug.post('/result', JSON.stringify({ id: cmd.id, ok: true, result: 'first' }));
    assert.equal((await first.answer).body.ok, true);
    const calls = [];
    for (let i = 0; i < LONG_BUDGET; i++) calls.push(startCall(d, 'get_selection', {}));
    await until(`${LONG_BUDGET} queued`, async () => (await queueDepth(d)) === LONG_BUDGET);
    for (const c of calls) c.req.destroy();
    await until('the queue empty', async () => (await queueDepth(d)) === 0);
    const poll = plug.pollOnce();
    const next = startCall(d, 'get_selection', {});
    const got = (await poll).body;
    assert.equal(got.hasCommand, true, 'not refused as busy: the plugin got the command');
    await plug.post('/result', JSON.stringify({ id: got.id, ok: true, result: 'next' }));
    assert.equal((await next.answer).body.result, 'next');
  });
});

describe('notifications/cancelled on /mcp', () => {
  let d;
  before(async () => { d = await startDaemon(); });
  after(async () => { await d.stop(); });

  test('the cancelled request\'s own POST ends without an answer, and its worker is free', async () => {
    const s = await mcpSession(d);
    const marker = `cancel-mcp-${process.pid}`;
    // The exec's POST, answered only when the call ends: it stays open while the run lives.
    const pending = s.post({ jsonrpc: '2.0', id: 41, method: 'tools/call',
                             params: { name: 'exec',
                                       arguments: { command: `sleep 300 # ${marker}`,
                                                    timeout_ms: 100000 } } });
    await until('the run started', () => hostProcesses(marker).length > 0);
    const n = await s.post({ jsonrpc: '2.0', method: 'notifications/cancelled',
                             params: { requestId: 41, reason: 'test' } });
    assert.equal(n.status, 202, n.text);
    // A cancelled request is not answered (MCP), and its POST does not wait for one: it ends as
    // an event stream holding no message. Without that the POST stayed open until the client
    // hung up, holding one of runboxd's workers.
    const r = await pending;
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers['content-type'], /^text\/event-stream/);
    assert.doesNotMatch(r.text, /^data:/m, 'no message: the cancelled request is not answered');
    await until('the run killed', () => hostProcesses(marker).length === 0);
    await until('the long-call slot back', async () =>
      (await d.get('/health')).body.calls.long.in_use === 0);
    // The session goes on.
    const l = await s.post({ jsonrpc: '2.0', id: 42, method: 'tools/call',
                             params: { name: 'list_dir', arguments: { path: '/' } } });
    assert.equal(l.status, 200, l.text);
    assert.equal(l.body.id, 42);
  });
});

// A file a search would read for many minutes: a line to find, then a 4 TiB hole (sparse: it
// takes no disk, and reads as zeros after the first 8 KiB, so it does not look binary).
function writeHuge(file) {
  const fd = openSync(file, 'w');
  writeSync(fd, `needle\n${'text without the word\n'.repeat(1000)}`);
  ftruncateSync(fd, 2 ** 42);
  closeSync(fd);
}

async function searchInUse(d) {
  return (await d.get('/health')).body.calls.search.in_use;
}

// The log lines of searches that stopped because they were cancelled.
function cancelledSearches(d) {
  // Stopped by its cancel check, or cancelled between admission and its start (call.c).
  const stopped = /search: call \S+ search: cancelled after|call: \S+ search was cancelled before/;
  return d.stderr().split('\n').filter((l) => stopped.test(l));
}

describe('a cancelled search stops and gives back its slot', () => {
  let d;
  before(async () => {
    d = await startDaemon({ args: ['--log-level', 'info'] }); // the cancelled searches' lines
    writeHuge(path.join(d.workspace, 'huge.txt'));
    await d.call('write_file', { path: 'small.txt', content: 'needle in a small file\n' });
  });
  after(async () => { await d.stop(); });

  test(`${SEARCH_BUDGET} dropped searches (the whole budget) stop, and the next search runs`,
       async () => {
    const before = cancelledSearches(d).length;
    const calls = [];
    for (let i = 0; i < SEARCH_BUDGET; i++)
      calls.push(startCall(d, 'search', { query: 'needle', path: '/huge.txt' }));
    await until('every search admitted', async () => (await searchInUse(d)) === SEARCH_BUDGET);
    // The budget is full: one more is refused as busy (it would be admitted if a slot were free).
    const busy = await d.call('search', { query: 'needle', path: '/small.txt' });
    assert.equal(busy.body.ok, false, JSON.stringify(busy.body));
    assert.match(busy.body.error, /busy/);
    for (const c of calls) c.req.destroy();
    await until('every slot back', async () => (await searchInUse(d)) === 0);
    // Each search's thread stopped through its cancel check: nothing else ends a 4 TiB read now.
    await until('every search logged as cancelled',
                () => cancelledSearches(d).length - before === SEARCH_BUDGET);
    const r = await d.call('search', { query: 'needle', path: '/small.txt' });
    assert.equal(r.body.ok, true, JSON.stringify(r.body));
    assert.match(r.body.result, /small\.txt:1: needle in a small file/);
  });

  test('/mcp: notifications/cancelled stops the search; its POST ends unanswered', async () => {
    const before = cancelledSearches(d).length;
    const s = await mcpSession(d);
    const pending = s.post({ jsonrpc: '2.0', id: 2, method: 'tools/call',
                             params: { name: 'search',
                                       arguments: { query: 'needle', path: '/huge.txt' } } });
    await until('the search admitted', async () => (await searchInUse(d)) === 1);
    const cancel = await s.post({ jsonrpc: '2.0', method: 'notifications/cancelled',
                                  params: { requestId: 2, reason: 'test' } });
    assert.equal(cancel.status, 202, cancel.text);
    // The search stopped for the notification (its POST is still open until the call ends).
    await until('the slot back', async () => (await searchInUse(d)) === 0);
    await until('the search logged as cancelled', () => cancelledSearches(d).length === before + 1);
    const r = await pending;
    assert.doesNotMatch(r.text, /"id"\s*:\s*2\b/, 'the cancelled request is not answered');
    const next = await s.post({ jsonrpc: '2.0', id: 3, method: 'tools/call',
                                params: { name: 'search',
                                          arguments: { query: 'needle', path: '/small.txt' } } });
    assert.match(next.text, /small\.txt:1: needle in a small file/);
  });
});
