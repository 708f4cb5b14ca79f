// End to end through runbox (stdio MCP) -> runboxd -> fake Studio plugin (node): the failure
// cases of the Studio bridge as an MCP client sees them, and choosing between two Studio
// windows. The "killed while holding a command" case waits for the daemon's ~20 s liveness
// limit, so this file takes about half a minute.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';
import { FakePlugin } from '../lib/fakeplugin.mjs';
import { startProxy } from '../lib/proxy.mjs';

function text(res) {
  assert.equal(res.content[0].type, 'text');
  return res.content[0].text;
}

// Waits until /health lists n instances, however long that takes (ctest's timeout bounds it).
async function waitInstances(d, n) {
  while ((await d.get('/health')).body.studio.instances.length !== n)
    await new Promise((res) => setTimeout(res, 10));
}

describe('Studio bridge through runbox', () => {
  let d, p;
  before(async () => {
    d = await startDaemon();
    p = startProxy({ daemonUrl: d.url });
    await p.initialize('2025-11-25');
  });
  afterEach(async () => { await FakePlugin.cleanupAll(); });
  after(async () => {
    await p.close();
    await d.stop();
  });

  test('a Studio tool round trip gives the plugin\'s result as text', async () => {
    const plug = new FakePlugin(d.port, {
      instance: 'e2e-1', handler: async (cmd) => ({ ok: true, result: { got: cmd.args } }),
    }).start();
    await plug.waitRegistered();
    const res = await p.callTool('get_instance_children', { path: 'Workspace' });
    assert.equal(res.isError, false, JSON.stringify(res));
    assert.deepEqual(JSON.parse(text(res)), { got: { path: 'Workspace' } });
    const err = await (async () => {
      plug.handler = async () => ({ ok: false, error: 'Workspace.Nope: no child "Nope"' });
      return p.callTool('delete_object', { path: 'Workspace.Nope' });
    })();
    assert.equal(err.isError, true);
    assert.deepEqual(JSON.parse(text(err)), { error: 'Workspace.Nope: no child "Nope"', timeout: false });
    await plug.disconnect();
  });

  test('plugin stopped: the next call fails at once with the connect message', async () => {
    const plug = new FakePlugin(d.port, { instance: 'e2e-stop' }).start();
    await plug.waitRegistered();
    await waitInstances(d, 1);
    await plug.disconnect(); // what the plugin sends on Disconnect or unload
    // "At once": the connect message is given only when the call is refused before it is
    // queued; a call queued for a vanished window would end with a deadline or liveness message.
    const res = await p.callTool('get_place_info', {});
    assert.equal(res.isError, true);
    assert.match(JSON.parse(text(res)).error,
                 /not connected.*install the Runbox plugin.*click Connect.*docs\/plugin\.md/);
  });

  test('two edit windows: list_studios shows both, set_active_studio routes the next call', async () => {
    const mk = (instance) => new FakePlugin(d.port, {
      instance, place: instance === 'win-1' ? '111' : '222', name: `Place ${instance}`,
      handler: async () => ({ ok: true, result: `answered by ${instance}` }),
    }).start();
    const a = mk('win-1');
    await waitInstances(d, 1);
    const b = mk('win-2');
    await waitInstances(d, 2);
    let list = JSON.parse(text(await p.callTool('list_studios', {})));
    assert.deepEqual(list.instances.map((i) => [i.id, i.role, i.place, i.name, i.active]),
                     [['win-1', 'edit', '111', 'Place win-1', true],
                      ['win-2', 'edit', '222', 'Place win-2', false]]);
    assert.equal(text(await p.callTool('get_place_info', {})), 'answered by win-1');
    const sw = await p.callTool('set_active_studio', { instance: 'win-2' });
    assert.equal(sw.isError, false, JSON.stringify(sw));
    assert.equal(text(await p.callTool('get_place_info', {})), 'answered by win-2');
    list = JSON.parse(text(await p.callTool('list_studios', {})));
    assert.equal(list.active, 'win-2');
    await a.disconnect();
    await b.disconnect();
  });

  test('plugin killed while holding a command: "may have been applied" well before the deadline', async () => {
    const plug = new FakePlugin(d.port, { instance: 'e2e-die', handler: async () => FakePlugin.NO_ANSWER }).start();
    await plug.waitRegistered();
    await waitInstances(d, 1);
    const t0 = Date.now();
    const pending = p.callTool('set_property',
                               { path: 'Workspace.Part', property: 'Anchored', value: true });
    await plug.nextCommand();
    plug.die(); // Studio crashed: no answer, no more polls, no disconnect
    const res = await pending;
    const ms = Date.now() - t0;
    assert.equal(res.isError, true);
    // "Well before the deadline": this is the liveness message (the plugin stopped polling); the
    // 110 s deadline's says "no answer within 110 s".
    assert.match(JSON.parse(text(res)).error,
                 /^sent to Studio, no answer — it may have been applied; read back before repeating/);
    assert.match(JSON.parse(text(res)).error, /Studio instance e2e-die stopped polling while running set_property/);
    // The plugin's last poll started after t0 (it polls on while a command runs), and the daemon
    // waits 20 s from there: a load can only make this longer.
    assert.ok(ms > 15000, `took only ${ms} ms: a live plugin would have been cut off`);
  });
});
