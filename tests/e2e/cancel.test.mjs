// End to end: notifications/cancelled sent to the real runbox over stdio reaches the work in the
// real runboxd. runbox aborts the call's HTTP request; the daemon sees the client go and cancels
// the call: an exec run is killed, a queued Studio command is dropped, and the call's slot in the
// "long" budget comes back. The cancelled id is never answered. A cancelled search stops (the
// daemon logs it) and gives back its "search" slot.
import assert from 'node:assert/strict';
import { closeSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';
import { FakePlugin } from '../lib/fakeplugin.mjs';
import { resultText, startProxy } from '../lib/proxy.mjs';
import { until } from '../lib/wait.mjs';

describe('notifications/cancelled through runbox reaches the daemon', () => {
  let d;
  let p;
  before(async () => {
    d = await startDaemon({ workspace: ':memory:' });
    p = startProxy({ daemonUrl: d.url });
    await p.initialize();
  });
  after(async () => {
    await FakePlugin.cleanupAll();
    p.kill();
    await d.stop();
  });

  test('24 cancelled execs are killed, never answered, and exec stays free', async () => {
    const marker = `8${Date.now() % 100000}.375`;
    const ids = [];
    for (let i = 0; i < 24; i++) {
      const id = p.nextId();
      ids.push(id);
      p.send({ jsonrpc: '2.0', id, method: 'tools/call',
               params: { name: 'exec', arguments: { command: `sleep ${marker}` } } });
    }
    const mine = async () => (await d.call('process_list', {})).body.result.processes
      .filter((x) => x.command.includes(marker));
    await until('24 runs registered', async () => (await mine()).length === 24);
    for (const id of ids) p.notify('notifications/cancelled', { requestId: id, reason: 'test' });
    await until('every run killed', async () =>
      (await mine()).every((x) => x.state === 'killed'));
    const r = await p.callTool('exec', { command: 'echo free' });
    assert.equal(r.isError, false, resultText(r));
    assert.equal(resultText(r), 'free\n');
    assert.deepEqual(p.messages.filter((m) => ids.includes(m.id)), [], 'a cancelled id was answered');
  });

  test('a cancelled Studio call still in the queue is never delivered', async () => {
    const plug = new FakePlugin(d.port, { instance: 'stdio-cancel' });
    const poll = plug.pollOnce();
    await until('registered', async () =>
      (await d.get('/health')).body.studio.instances.some((i) => i.id === 'stdio-cancel'));
    const first = p.callTool('get_selection', {});
    const cmd = (await poll).body;
    await plug.post('/result', JSON.stringify({ id: cmd.id, ok: true, result: 'one' }));
    assert.equal(resultText(await first), 'one');
    const id = p.nextId();
    p.send({ jsonrpc: '2.0', id, method: 'tools/call',
             params: { name: 'get_place_info', arguments: {} } });
    await until('queued', async () => (await d.get('/health')).body.studio.queue_depth === 1);
    p.notify('notifications/cancelled', { requestId: id });
    await until('dropped', async () => (await d.get('/health')).body.studio.queue_depth === 0);
    const next = plug.pollOnce();
    const answer = p.callTool('get_studio_mode', {});
    const got = (await next).body;
    assert.equal(got.tool, 'get_studio_mode', 'the poll got the next call, not the cancelled one');
    await plug.post('/result', JSON.stringify({ id: got.id, ok: true, result: 'edit' }));
    assert.equal(resultText(await answer), 'edit');
    assert.deepEqual(p.messages.filter((m) => m.id === id), []);
  });
});

describe('notifications/cancelled through runbox stops a search', () => {
  let d;
  let p;
  before(async () => {
    d = await startDaemon({ args: ['--log-level', 'info'] }); // the cancelled searches' lines
    // A line to find, then a 4 TiB hole (sparse, no disk): a search would read it for minutes.
    const fd = openSync(path.join(d.workspace, 'huge.txt'), 'w');
    writeSync(fd, `needle\n${'text without the word\n'.repeat(1000)}`);
    ftruncateSync(fd, 2 ** 42);
    closeSync(fd);
    p = startProxy({ daemonUrl: d.url });
    await p.initialize();
  });
  after(async () => {
    p.kill();
    await d.stop();
  });

  test('8 cancelled searches (the whole budget) stop, are never answered, and search stays free',
       async () => {
    const cancelled = () => d.stderr().split('\n')
      .filter((l) => /search: call \S+ search: cancelled after|call: \S+ search was cancelled before/
        .test(l)).length;
    const inUse = async () => (await d.get('/health')).body.calls.search.in_use;
    const ids = [];
    for (let i = 0; i < 8; i++) {
      const id = p.nextId();
      ids.push(id);
      p.send({ jsonrpc: '2.0', id, method: 'tools/call',
               params: { name: 'search', arguments: { query: 'needle', path: '/huge.txt' } } });
    }
    await until('8 searches admitted', async () => (await inUse()) === 8);
    for (const id of ids) p.notify('notifications/cancelled', { requestId: id, reason: 'test' });
    await until('every slot back', async () => (await inUse()) === 0);
    await until('8 searches logged as cancelled', () => cancelled() === 8);
    await p.callTool('write_file', { path: 'small.txt', content: 'needle, small\n' });
    const r = await p.callTool('search', { query: 'needle', path: '/small.txt' });
    assert.equal(r.isError, false, resultText(r));
    assert.match(resultText(r), /small\.txt:1: needle, small/);
    assert.deepEqual(p.messages.filter((m) => ids.includes(m.id)), [], 'a cancelled id was answered');
  });
});
