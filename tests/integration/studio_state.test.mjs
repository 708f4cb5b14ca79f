// tests/integration/studio_state.test.mjs - get_studio_state against a real runboxd: no Studio
// (connected false, no error), one edit window (the plugin's mode joined with the windows), and a
// test server of that window (its answer, with paused and who started the test, wins).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { startDaemon } from '../lib/daemon.mjs';
import { FakePlugin } from '../lib/fakeplugin.mjs';
import { until } from '../lib/wait.mjs';

async function waitInstances(d, n) {
  await until(`${n} Studio instance(s) in /health`,
              async () => (await d.get('/health')).body.studio.instances.length === n, { every: 5 });
}

test('get_studio_state joins the windows the daemon knows with the mode the plugin reports', async (t) => {
  const d = await startDaemon();
  t.after(async () => { await FakePlugin.cleanupAll(); await d.stop(); });

  let r = await d.call('get_studio_state', {});
  assert.equal(r.body.ok, true, JSON.stringify(r.body));
  assert.equal(r.body.result.connected, false);
  assert.deepEqual(r.body.result.windows, []);

  const edit = new FakePlugin(d.port, {
    instance: 'win-1', place: '0', name: 'Place1',
    handler: async (cmd) => ({ ok: true, result: { mode: 'edit', paused: false, testRunning: false, who: cmd.tool } }),
  }).start();
  await waitInstances(d, 1);
  r = await d.call('get_studio_state', {});
  assert.equal(r.body.result.connected, true);
  assert.equal(r.body.result.mode, 'edit');
  assert.equal(r.body.result.who, 'get_studio_mode');
  assert.equal(r.body.result.active, 'win-1');
  assert.deepEqual(r.body.result.windows.map((w) => [w.id, w.role]), [['win-1', 'edit']]);

  // A test of win-1 runs, paused, started by the user: its server copy answers.
  new FakePlugin(d.port, {
    instance: 'win-1-server', role: 'server', place: '0', name: 'Place1', parent: 'win-1',
    handler: async () => ({ ok: true, result: { mode: 'play_server', paused: true, testRunning: true, startedBy: 'user' } }),
  }).start();
  await waitInstances(d, 2);
  r = await d.call('get_studio_state', {});
  assert.equal(r.body.result.mode, 'play_server');
  assert.equal(r.body.result.paused, true);
  assert.equal(r.body.result.startedBy, 'user');
  const server = r.body.result.windows.find((w) => w.id === 'win-1-server');
  assert.equal(server.parent, 'win-1');
  await edit.disconnect();
});
