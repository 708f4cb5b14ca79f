// Integration: the Studio bridge of a real runboxd over HTTP, with a fake plugin (node) polling
// it: the plugin protocol (GET /poll, POST /result, /console, /disconnect), the header check,
// routing, at-most-once, failure messages, the JSON quirks of Roblox's encoder, size limits and
// /health. (The "plugin stops polling while holding a command" case takes ~20 s and lives in
// bridge_stdio.test.mjs.)
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { request, startDaemon } from '../lib/daemon.mjs';
import { FakePlugin } from '../lib/fakeplugin.mjs';

const CONNECT_MSG = /not connected.*click Connect.*docs\/plugin\.md/;

function body(r) {
  assert.equal(r.status, 200, r.text);
  return r.body;
}

async function health(d) {
  return body(await d.get('/health')).studio;
}

// Waits until /health lists n instances, however long that takes (ctest's timeout bounds it).
async function waitInstances(d, n) {
  while ((await health(d)).instances.length !== n) await new Promise((r) => setTimeout(r, 10));
}

describe('plugin endpoints: access', () => {
  let d;
  before(async () => { d = await startDaemon(); });
  afterEach(async () => { await FakePlugin.cleanupAll(); });
  after(async () => { await d.stop(); });

  for (const [method, path] of [['GET', '/poll?instance=a'], ['POST', '/result'],
                                ['POST', '/console'], ['POST', '/disconnect']]) {
    test(`${method} ${path.split('?')[0]} without X-Runbox-Plugin is 403`, async () => {
      const r = await request(d.port, path, { method, headers: { 'Content-Type': 'application/json' },
                                              body: method === 'POST' ? '{"id":"x"}' : undefined });
      assert.equal(r.status, 403, r.text);
      assert.match(r.body.error, /X-Runbox-Plugin: 1/);
    });
  }

  test('a browser Origin is refused even with the header', async () => {
    const r = await request(d.port, '/poll?instance=a',
                            { headers: { 'X-Runbox-Plugin': '1', Origin: 'https://evil.example' } });
    assert.equal(r.status, 403);
  });

  test('the wrong method is 405, a bad role or instance 400', async () => {
    const p = new FakePlugin(d.port);
    let wrong = await p.post('/poll', '{}');
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.allow, 'GET');
    wrong = await p.request('GET', '/result');
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.allow, 'POST');
    let r = await p.request('GET', '/poll?instance=a&role=admin');
    assert.equal(r.status, 400);
    assert.match(r.body.error, /edit, server or client/);
    r = await p.request('GET', '/poll?instance=' + encodeURIComponent('a b'));
    assert.equal(r.status, 400);
    p.die();
  });

  test('a result body must be JSON typed', async () => {
    const p = new FakePlugin(d.port);
    const r = await p.post('/result', '{"id":"x","result":1}', { 'Content-Type': 'text/plain' });
    assert.equal(r.status, 415);
    p.die();
  });
});

describe('plugin endpoints: token', () => {
  let d;
  before(async () => { d = await startDaemon({ env: { RUNBOX_TOKEN: 'sekrit-token-123' } }); });
  afterEach(async () => { await FakePlugin.cleanupAll(); });
  after(async () => { await d.stop(); });

  test('a poll without the token is 401, with it 200', async () => {
    const p = new FakePlugin(d.port, { instance: 'tok' });
    assert.equal((await p.request('GET', '/poll?instance=tok')).status, 401);
    p.token = 'sekrit-token-123';
    await p.post('/disconnect', '{"instance":"tok"}');
    const r = await p.post('/console', '{"instance":"tok","entries":[]}');
    assert.equal(r.status, 200);
    p.die();
  });
});

describe('Studio calls', () => {
  let d;
  before(async () => { d = await startDaemon(); });
  afterEach(async () => { await FakePlugin.cleanupAll(); });
  after(async () => { await d.stop(); });

  test('no plugin connected: a Studio tool fails at once with how to connect', async () => {
    // "At once": the daemon gives the connect message only when it refuses to queue the call;
    // a call that waited would end with a deadline's message ("did not take ... within").
    const r = body(await d.call('get_place_info', {}));
    assert.equal(r.ok, false);
    assert.match(r.error, CONNECT_MSG);
    const h = await health(d);
    assert.deepEqual(h, { connected: false, active: null, instances: [], queue_depth: 0,
                          recent: [] }); // nothing was sent, so no command finished
  });

  test('round trip: args arrive as sent, JSON and text results come back', async () => {
    const p = new FakePlugin(d.port, {
      instance: 'rt', place: '4242', name: 'My Place',
      handler: async (cmd) => cmd.tool === 'get_place_info'
        ? { ok: true, result: { name: 'My Place', placeId: 4242 } }
        : { ok: true, result: `children of ${cmd.args.path}` },
    }).start();
    await p.waitRegistered();
    let r = body(await d.call('get_place_info', {}));
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.deepEqual(r.result, { name: 'My Place', placeId: 4242 });
    assert.deepEqual(p.received.at(-1).args, {}); // an object, never []
    r = body(await d.call('get_instance_children', { path: 'Workspace.Model', limit: 5 }));
    assert.equal(r.result, 'children of Workspace.Model');
    assert.deepEqual(p.received.at(-1).args, { path: 'Workspace.Model', limit: 5 });
    assert.equal(p.received.at(-1).id, r.id); // the call id is the command id
    const h = await health(d);
    assert.equal(h.connected, true);
    assert.equal(h.active, 'rt');
    assert.equal(h.queue_depth, 0);
    assert.equal(h.instances.length, 1);
    const [i] = h.instances;
    assert.deepEqual({ ...i, last_poll_ms_ago: 0 },
                     { id: 'rt', role: 'edit', place: '4242', name: 'My Place', last_poll_ms_ago: 0,
                       active: true });
    assert.ok(i.last_poll_ms_ago >= 0 && i.last_poll_ms_ago < 16000);
    // The last commands, newest first (the status page shows them).
    assert.deepEqual(h.recent.map((c) => [c.tool, c.instance, c.state]),
                     [['get_instance_children', 'rt', 'ok'], ['get_place_info', 'rt', 'ok']]);
    assert.ok(h.recent.every((c) => c.duration_ms >= 0 && c.ms_ago >= 0));
    await p.disconnect();
  });

  test('the plugin\'s error arrives whole as ok:false (ours and the reference shapes)', async () => {
    const long = 'Workspace.Nope: no child "Nope" in Workspace; children: ' + 'Part, '.repeat(80);
    let shape = 'ours';
    const p = new FakePlugin(d.port, {
      instance: 'err',
      handler: async (cmd) => shape === 'ours'
        ? { ok: false, error: long }
        : JSON.stringify({ id: cmd.id, error: 'reference error' }),
    }).start();
    await p.waitRegistered();
    let r = body(await d.call('delete_object', { path: 'Workspace.Nope' }));
    assert.equal(r.ok, false);
    assert.equal(r.error, long);
    assert.equal(r.timeout, undefined);
    shape = 'reference';
    r = body(await d.call('delete_object', { path: 'Workspace.Nope' }));
    assert.deepEqual([r.ok, r.error], [false, 'reference error']);
    await p.disconnect();
  });

  test('the reference {"id","result"} shape is accepted', async () => {
    const p = new FakePlugin(d.port, {
      instance: 'ref', handler: async (cmd) => JSON.stringify({ id: cmd.id, result: 'fine' }),
    }).start();
    await p.waitRegistered();
    const r = body(await d.call('get_selection', {}));
    assert.deepEqual([r.ok, r.result], [true, 'fine']);
    await p.disconnect();
  });

  test('results for unknown ids, repeated results and unsent ids are ignored', async () => {
    const p = new FakePlugin(d.port, { instance: 'dup', handler: async () => FakePlugin.NO_ANSWER });
    let r = await p.post('/result', JSON.stringify({ id: 'never-issued', ok: true, result: 1 }));
    assert.deepEqual(r.body, { ok: true, ignored: true, reason: 'unknown id' });
    p.start();
    await p.waitRegistered();
    const call = d.call('get_tags', { path: 'Workspace' });
    const cmd = await p.nextCommand();
    r = await p.post('/result', JSON.stringify({ id: cmd.id, ok: true, result: ['first'] }));
    assert.deepEqual(r.body, { ok: true });
    r = await p.post('/result', JSON.stringify({ id: cmd.id, ok: true, result: ['second'] }));
    assert.equal(r.status, 200);
    assert.equal(r.body.ignored, true);
    assert.match(r.body.reason, /already ended/);
    const res = body(await call);
    assert.deepEqual(res.result, ['first']);
    await p.disconnect();
  });

  test('invalid JSON is a 400 for the sender and fails nobody\'s command', async () => {
    const p = new FakePlugin(d.port, { instance: 'bad', handler: async () => FakePlugin.NO_ANSWER }).start();
    await p.waitRegistered();
    const call = d.call('get_attributes', { path: 'Workspace' });
    const cmd = await p.nextCommand();
    for (const garbage of [`{"id":"${cmd.id}","ok":true,"result":`, 'not json', '"just a string"',
                           `{"id":"${cmd.id}" "ok":false}`]) {
      const r = await p.post('/result', garbage);
      assert.equal(r.status, 400, garbage);
      assert.match(r.body.error, /JSON|object/);
    }
    const r = await p.post('/result', '{"ok":true,"result":1}');
    assert.equal(r.status, 400);
    assert.match(r.body.error, /"id"/);
    assert.equal((await health(d)).queue_depth, 1); // still waiting
    await p.post('/result', JSON.stringify({ id: cmd.id, ok: true, result: { n: 3 } }));
    assert.deepEqual(body(await call).result, { n: 3 });
    await p.disconnect();
  });

  test('a result nested past the parser\'s limit fails its command at once, saying so', async () => {
    // 1000 levels parse; 1001 do not. The id comes last, as Lua's table order may put it.
    let levels = 1000;
    const nested = (n) => '['.repeat(n - 1) + ']'.repeat(n - 1);
    const p = new FakePlugin(d.port, {
      instance: 'deep',
      handler: async (cmd) => `{"ok":true,"result":${nested(levels)},"id":"${cmd.id}"}`,
    }).start();
    await p.waitRegistered();
    const start = p.answers.length;
    let r = body(await d.call('get_attributes', { path: 'Workspace' }));
    assert.equal(r.ok, true, JSON.stringify(r).slice(0, 200));
    levels = 1001;
    r = body(await d.call('get_attributes', { path: 'Workspace' }));
    assert.equal(r.ok, false);
    assert.match(r.error, /nested 1001 levels deep, past the limit of 1000; nothing of it was kept/);
    // A call ends before the plugin reads the answer to its POST: wait for both answers (as
    // long as it takes; a loaded machine or TSan is slow, and ctest's timeout bounds the wait).
    while (p.answers.length < start + 2) await new Promise((res) => setTimeout(res, 5));
    assert.deepEqual(p.answers.slice(start).map((a) => a.status).sort(), [200, 400]);
    assert.match(p.answers.slice(start).find((a) => a.status === 400).body.error,
                 /nested 1001 levels deep/);
    assert.equal((await health(d)).queue_depth, 0);
    await p.disconnect();
  });

  test('inf, -inf and nan from Roblox\'s encoder become null (never inside strings)', async () => {
    const p = new FakePlugin(d.port, {
      instance: 'nf',
      handler: async (cmd) =>
        `{"id":"${cmd.id}","ok":true,"result":{"a":inf,"b":-inf,"c":nan,"s":"inf and nan","v":[1,-inf]}}`,
    }).start();
    await p.waitRegistered();
    const r = body(await d.call('get_instance_properties', { path: 'Workspace.Part' }));
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.deepEqual(r.result, { a: null, b: null, c: null, s: 'inf and nan', v: [1, null] });
    await p.disconnect();
  });

  test('[] stands for {} where an object is expected (the body; a result where its outputSchema says so)', async () => {
    const p = new FakePlugin(d.port, { instance: 'arr' });
    // An empty entries table encodes as [] or {}; both are accepted.
    assert.deepEqual((await p.post('/console', '{"instance":"arr","entries":{}}')).body,
                     { ok: true, accepted: 0 });
    assert.deepEqual((await p.post('/console', '[]')).status, 400); // no entries at all
    // An empty table arrives as []: it becomes {} where the tool's outputSchema wants an object
    // (get_attributes' whole answer; its attributes), and stays [] where it wants an array.
    p.handler = async (cmd) => (cmd.tool === 'get_tags'
      ? `{"id":"${cmd.id}","ok":true,"result":{"path":"Workspace","tags":[]}}`
      : cmd.args.path === 'Workspace'
        ? `{"id":"${cmd.id}","ok":true,"result":[]}`
        : `{"id":"${cmd.id}","ok":true,"result":{"path":"x","attributes":[],"count":0}}`);
    p.start();
    await p.waitRegistered();
    assert.deepEqual(body(await d.call('get_attributes', { path: 'Workspace' })).result, {});
    assert.deepEqual(body(await d.call('get_attributes', { path: 'Workspace.Part' })).result,
                     { path: 'x', attributes: {}, count: 0 });
    assert.deepEqual(body(await d.call('get_tags', { path: 'Workspace' })).result,
                     { path: 'Workspace', tags: [] });
    await p.disconnect();
  });

  test('a 20 MB result is refused with 413 and the call fails with a clear error', async () => {
    const big = 'x'.repeat(20 * 1024 * 1024);
    const p = new FakePlugin(d.port, {
      instance: 'big',
      // The id comes after the huge result: the daemon finds it without keeping the body.
      handler: async (cmd) => `{"ok":true,"result":"${big}","id":"${cmd.id}"}`,
    }).start();
    await p.waitRegistered();
    // The call fails on the refusal itself (its message), not at its deadline.
    const r = body(await d.call('get_script_source', { path: 'Workspace.Script' }));
    assert.equal(r.ok, false);
    assert.match(r.error, /over the limit of 16777216 bytes \(16 MiB\)/);
    // The call may end before the plugin has read the 413: wait for that answer.
    await p.waitAnswers(1);
    assert.equal(p.answers.at(-1).status, 413);
    // The daemon still serves the plugin afterwards.
    p.handler = async () => ({ ok: true, result: 'small' });
    assert.equal(body(await d.call('get_script_source', { path: 'Workspace.Script' })).result, 'small');
    await p.disconnect();
  });

  test('disconnect fails the held command at once and forgets the instance', async () => {
    const p = new FakePlugin(d.port, { instance: 'dc', handler: async () => FakePlugin.NO_ANSWER }).start();
    await p.waitRegistered();
    const call = d.call('set_property', { path: 'Workspace.Part', property: 'Anchored', value: true });
    await p.nextCommand();
    const r = await p.disconnect();
    assert.deepEqual(r.body, { ok: true, known: true, failed: 1 });
    // Failed by the disconnect itself (its message names it), not by the deadline or by the
    // instance going stale.
    const res = body(await call);
    assert.equal(res.ok, false);
    assert.match(res.error, /may have been applied; read back before repeating/);
    assert.match(res.error, /disconnected/);
    assert.equal((await health(d)).connected, false);
    // The next call fails at once with the connect message.
    assert.match(body(await d.call('get_place_info', {})).error, CONNECT_MSG);
  });

  test('at most once: two polls of one instance never get the same command', async () => {
    const p = new FakePlugin(d.port, { instance: 'once', handler: async () => FakePlugin.NO_ANSWER });
    const q = new FakePlugin(d.port, { instance: 'once', handler: async () => FakePlugin.NO_ANSWER });
    // A command queued while no poll waits: an answered poll leaves the instance registered
    // with none parked, and /health counts the queued command. Then three polls race for it.
    const first = p.pollOnce();
    await waitInstances(d, 1);
    const warm = d.call('get_tagged', { tag: 'w' });
    const w = (await first).body;
    assert.equal(w.hasCommand, true);
    await p.post('/result', JSON.stringify({ id: w.id, ok: true, result: 'warm' }));
    assert.equal(body(await warm).result, 'warm');
    const call = d.call('get_tagged', { tag: 'x' });
    while ((await health(d)).queue_depth !== 1) await new Promise((r) => setTimeout(r, 5));
    const polls = [p.pollOnce(), q.pollOnce(), p.pollOnce()];
    const got = await Promise.race(polls);
    assert.equal(got.body.hasCommand, true);
    await p.post('/result', JSON.stringify({ id: got.body.id, ok: true, result: 'once' }));
    assert.equal(body(await call).result, 'once');
    await p.post('/disconnect', '{"instance":"once"}'); // ends the other polls at once
    const all = await Promise.all(polls);
    assert.equal(all.filter((x) => x.body.hasCommand).length, 1);
    p.die();
    q.die();
  });

  test('at most once: polls parked when the command comes never get the same one', async () => {
    const p = new FakePlugin(d.port, { instance: 'once-parked', handler: async () => FakePlugin.NO_ANSWER });
    const q = new FakePlugin(d.port, { instance: 'once-parked', handler: async () => FakePlugin.NO_ANSWER });
    // Registration comes with a poll, so at least one of the three is parked in the daemon
    // when the call is made; the others are parked too or arrive to a queued command. Either
    // way only one may get it.
    const polls = [p.pollOnce(), q.pollOnce(), p.pollOnce()];
    await waitInstances(d, 1);
    const call = d.call('get_tagged', { tag: 'y' });
    const got = await Promise.race(polls);
    assert.equal(got.body.hasCommand, true);
    await p.post('/result', JSON.stringify({ id: got.body.id, ok: true, result: 'once' }));
    assert.equal(body(await call).result, 'once');
    await p.post('/disconnect', '{"instance":"once-parked"}'); // ends the other polls at once
    const all = await Promise.all(polls);
    assert.equal(all.filter((x) => x.body.hasCommand).length, 1);
    p.die();
    q.die();
  });

  test('Studio output joins the console with source studio', async () => {
    const p = new FakePlugin(d.port, { instance: 'out' });
    const r = await p.post('/console', JSON.stringify({
      instance: 'out',
      entries: [{ level: 'MessageOutput', message: 'hello from Studio', ts: 1700000000.5 },
                { level: 'MessageWarning', message: 'careful', ts: 1700000001 },
                { level: 'error', message: 'boom' },
                { level: 'info', nomessage: true }],
    }));
    assert.deepEqual(r.body, { ok: true, accepted: 3 });
    let out = body(await d.call('get_console_output', {})).result;
    const mine = out.entries.filter((e) => e.instance === 'out');
    assert.deepEqual(mine.map((e) => [e.level, e.source, e.message]),
                     [['log', 'studio', 'hello from Studio'], ['warn', 'studio', 'careful'],
                      ['error', 'studio', 'boom']]);
    assert.equal(mine[0].ts, '2023-11-14T22:13:20.500Z');
    assert.ok(out.entries.every((e) => e.source === 'studio')); // no daemon/exec lines
    assert.equal(out.truncated, false);
    // since_id and limit page through it.
    const first = mine[0].id;
    out = body(await d.call('get_console_output', { since_id: first, limit: 1 })).result;
    assert.deepEqual(out.entries.map((e) => e.message), ['careful']);
    assert.equal(out.truncated, true);
    out = body(await d.call('get_console_output', { since_id: out.next_since_id })).result;
    assert.deepEqual(out.entries.map((e) => e.message), ['boom']);
    // console_logs sees them too; clear_console_output drops only Studio's.
    const logs = body(await d.call('console_logs', { source: 'studio' })).result;
    assert.ok(logs.entries.some((e) => e.message === 'boom'));
    const cleared = body(await d.call('clear_console_output', {})).result;
    assert.ok(cleared.cleared >= 3);
    out = body(await d.call('get_console_output', {})).result;
    assert.deepEqual(out.entries, []);
    assert.ok(body(await d.call('console_logs', { source: 'daemon' })).result.entries.length > 0);
    p.die();
  });

  test('a console body that is not an object with entries is a 400', async () => {
    const p = new FakePlugin(d.port, { instance: 'out2' });
    assert.equal((await p.post('/console', '{"instance":"x","entries":"no"}')).status, 400);
    assert.equal((await p.post('/console', '{"instance":"x","entries":[{"message":"a",')).status, 400);
    assert.equal((await p.post('/disconnect', '{}')).status, 400);
    assert.deepEqual((await p.post('/disconnect', '{"instance":"never"}')).body,
                     { ok: true, known: false, failed: 0 });
    p.die();
  });

  test('the reference plugin\'s bare GET /poll is one edit instance named "default"', async () => {
    const p = new FakePlugin(d.port);
    const poll = p.request('GET', '/poll');
    await waitInstances(d, 1);
    const h = await health(d);
    assert.equal(h.instances[0].id, 'default');
    assert.equal(h.active, 'default');
    const call = d.call('get_services', {});
    const r = await poll;
    assert.equal(r.body.tool, 'get_services');
    await p.post('/result', JSON.stringify({ id: r.body.id, result: ['Workspace'] }));
    assert.deepEqual(body(await call).result, ['Workspace']);
    await p.post('/disconnect', '{"instance":"default"}');
    p.die();
  });
});

describe('routing between Studio windows', () => {
  let d;
  before(async () => { d = await startDaemon(); });
  afterEach(async () => { await FakePlugin.cleanupAll(); });
  after(async () => { await d.stop(); });

  test('the first edit instance is active; set_active_studio moves the next call', async () => {
    const seen = [];
    const mk = (instance, role, place) => new FakePlugin(d.port, {
      instance, role, place, name: instance,
      handler: async (cmd) => { seen.push([instance, cmd.tool]); return { ok: true, result: instance }; },
    }).start();
    const a = mk('win-a', 'edit', '10');
    await a.waitPolling();
    await waitInstances(d, 1);
    const b = mk('win-b', 'edit', '20');
    await waitInstances(d, 2);
    const s = mk('win-a-server', 'server', '10');
    await waitInstances(d, 3);
    const c = mk('win-a-client', 'client', '10');
    await waitInstances(d, 4);
    let list = body(await d.call('list_studios', {})).result;
    assert.equal(list.active, 'win-a');
    assert.deepEqual(list.instances.map((i) => [i.id, i.role, i.active]),
                     [['win-a', 'edit', true], ['win-b', 'edit', false],
                      ['win-a-server', 'server', false], ['win-a-client', 'client', false]]);
    assert.equal(body(await d.call('get_place_info', {})).result, 'win-a');
    // A play test of win-a runs: play-mode tools go to its server, the rest to the editor.
    assert.equal(body(await d.call('run_script_in_play_mode', { code: 'return 1' })).result, 'win-a-server');
    assert.equal(body(await d.call('stop_play', {})).result, 'win-a-server');
    assert.equal(body(await d.call('set_property', { path: 'Workspace.P', property: 'Name', value: 'x' })).result, 'win-a');
    // Switch windows.
    const sw = body(await d.call('set_active_studio', { instance: 'win-b' }));
    assert.equal(sw.ok, true, JSON.stringify(sw));
    assert.equal(sw.result.active, 'win-b');
    assert.equal(body(await d.call('get_place_info', {})).result, 'win-b');
    // win-b has no play server: its play-mode tools go to win-b itself.
    assert.equal(body(await d.call('stop_play', {})).result, 'win-b');
    let r = body(await d.call('set_active_studio', { instance: 'win-a-server' }));
    assert.equal(r.ok, false);
    assert.match(r.error, /play-mode server copy/);
    r = body(await d.call('set_active_studio', { instance: 'nope' }));
    assert.equal(r.ok, false);
    assert.match(r.error, /no connected Studio instance nope; connected: win-a \(edit\)/);
    assert.ok(!seen.some(([who, tool]) => who === 'win-a-client'));
    // The active window goes away: the other edit window takes over.
    await b.disconnect();
    list = body(await d.call('list_studios', {})).result;
    assert.equal(list.active, 'win-a');
    for (const p of [a, s, c]) await p.disconnect();
    assert.equal(body(await d.call('list_studios', {})).result.connected, false);
  });
});

// BRIDGE_POLL_WINDOW_MS: a parked poll that nothing ends is answered after this long.
const POLL_WINDOW_MS = 15000;

describe('daemon stop with a parked poll', () => {
  test('SIGTERM ends a parked poll and a waiting call at once', async () => {
    const d = await startDaemon();
    const p = new FakePlugin(d.port, { instance: 'stop', handler: async () => FakePlugin.NO_ANSWER }).start();
    await p.waitRegistered();
    // The answer may be "shutting down" or a closed connection, whichever wins the race.
    const call = d.call('get_selection', {}).catch((e) => ({ error: e }));
    await p.nextCommand();
    await p.waitPolling();
    // The parked poll answers "no command" whether the stop ended it or its window did, so only
    // the time tells the two apart. A daemon that left it to its window could exit no sooner
    // than the window after the daemon took that poll, which is after the plugin sent it: an
    // exit within the window of the send can only be the stop ending it. A loaded machine only
    // makes the slow behaviour slower, so this bound never passes it.
    const sent = p.pollSentAt;
    const { code } = await d.stop();
    const ms = Date.now() - sent;
    assert.equal(code, 0);
    assert.ok(ms < POLL_WINDOW_MS, `runboxd exited ${ms} ms after the parked poll was sent`);
    const r = await call;
    if (r.body) assert.match(r.body.error, /shutting down/);
    p.die();
  });
});
