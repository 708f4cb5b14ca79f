// tests/e2e/studio.test.mjs - the Studio bridge end to end: the plugin's REAL poll loop
// (plugin-bridge/tests/run_plugin.lua: Main, Bridge, Executor and the tool handlers over a fake
// place, under lua5.1 with LuaSocket HTTP) against the real runboxd, driven through the real
// runbox over stdio, as an MCP client would.
//
// Each test has its own daemon and proxy, so an instance a failed test left behind cannot take
// the next test's commands. A plugin counts as started once the daemon lists it (its "connected"
// line only means GET /health answered), and the commands a plugin ran are counted after a
// barrier on its own stdout (pl.ran(tool)): the call's answer comes back through the proxy's
// pipe, the plugin's lines through another, and node does not order the two.
//
// Skipped, with the reason, when lua5.1 with lua-socket and lua-cjson is not installed.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';
import { resultText, startProxy } from '../lib/proxy.mjs';
import { until } from '../lib/wait.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const RUN_PLUGIN = path.resolve(here, '../../plugin-bridge/tests/run_plugin.lua');
const BUILD = path.resolve(here, '../../plugin-bridge/build.lua');
const LUA = process.env.LUA || 'lua5.1';

function luaMissing() {
  const r = spawnSync(LUA, ['-e', 'require("socket"); require("cjson")'], { encoding: 'utf8' });
  if (r.error) return `${LUA} is not installed (Debian: apt-get install lua5.1 lua-socket lua-cjson)`;
  if (r.status !== 0)
    return `${LUA} lacks LuaSocket or lua-cjson (Debian: apt-get install lua-socket lua-cjson): ${r.stderr.trim()}`;
  return false;
}
const skip = luaMissing();

// Resolves once the daemon's /health lists the instance (its first poll was registered),
// however long that takes.
async function waitRegistered(daemon, instance) {
  await until(`/health to list Studio instance ${instance}`, async () =>
    (await daemon.get('/health')).body.studio.instances.some((i) => i.id === instance),
  { every: 10 });
}

// Starts run_plugin.lua with --instance id; resolves once it reports "connected" and the
// daemon lists it.
async function startPlugin(daemon, id, args = []) {
  const child = spawn(LUA, [RUN_PLUGIN, daemon.url, '--instance', id, ...args],
                      { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines = [];
  const waiters = [];
  let stderr = '';
  let buf = '';
  child.stdout.on('data', (c) => {
    buf += c;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      lines.push(line);
      for (const w of waiters.splice(0)) {
        if (w.re.test(line)) w.resolve(line); else waiters.push(w);
      }
    }
  });
  child.stderr.on('data', (c) => { stderr += c; });
  child.stdin.on('error', () => {});
  // 'close': the process has exited and its stdout is drained, so no line is still to come.
  const exited = new Promise((resolve) => child.on('close', (code, signal) => {
    for (const w of waiters.splice(0)) {
      w.reject(new Error(`run_plugin exited (code ${code}, signal ${signal}) without printing a ` +
                         `line matching ${w.re}; stdout:\n${lines.join('\n')}\nstderr:\n${stderr}`));
    }
    resolve({ code, signal });
  }));
  let syncs = 0;
  const plugin = {
    id, child, lines, exited,
    stderr: () => stderr,
    // The first line matching re, seen or still to come, however long it takes; rejects when
    // run_plugin exits without printing it.
    waitLine(re) {
      const seen = lines.find((l) => re.test(l));
      if (seen) return Promise.resolve(seen);
      if (child.exitCode !== null || child.signalCode !== null)
        return Promise.reject(new Error(`run_plugin has exited; no line matching ${re}; ` +
                                        `stdout:\n${lines.join('\n')}\nstderr:\n${stderr}`));
      return new Promise((resolve, reject) => { waiters.push({ re, resolve, reject }); });
    },
    // How many times the plugin ran tool so far: counted after a barrier line on its stdout.
    async ran(tool) {
      const mark = ++syncs;
      const seen = plugin.waitLine(new RegExp(`^run_plugin: sync ${mark}$`));
      child.stdin.write(`sync ${mark}\n`);
      await seen;
      return lines.filter((l) => l === `run_plugin: command ${tool}`).length;
    },
    alive: () => child.exitCode === null && child.signalCode === null,
    // Unloads like Studio does (POST /disconnect), then exits; resolves once it has, however
    // long that takes.
    async quit() {
      child.stdin.end('quit\n');
      return exited;
    },
    kill() { if (plugin.alive()) child.kill('SIGKILL'); },
  };
  try {
    await plugin.waitLine(/^run_plugin: connected$/);
    await waitRegistered(daemon, id);
  } catch (e) {
    plugin.kill();
    throw e;
  }
  return plugin;
}

async function call(p, name, args) {
  return p.callTool(name, args);
}

function okJson(result) {
  assert.equal(result.isError, false, `tool failed: ${resultText(result)}`);
  return JSON.parse(resultText(result));
}

describe('Studio bridge end to end (run_plugin.lua + runboxd + runbox)', { skip }, () => {
  let daemon;
  let proxy;
  let tmp;
  let bundle;
  let plugins = [];

  async function plugin(id, args = []) {
    const pl = await startPlugin(daemon, id, args);
    plugins.push(pl);
    return pl;
  }

  before(() => {
    // The first test runs the one-file plugin users install, built from the sources now.
    tmp = mkdtempSync(path.join(os.tmpdir(), 'runbox-plugin-'));
    bundle = path.join(tmp, 'RunboxBridge.lua');
    const built = spawnSync(LUA, [BUILD, path.resolve(here, '../../plugin-bridge/src'), bundle],
                            { encoding: 'utf8' });
    assert.equal(built.status, 0, `build.lua failed: ${built.stderr}`);
  });

  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  beforeEach(async () => {
    daemon = await startDaemon({ workspace: ':memory:' });
    proxy = startProxy({ daemonUrl: daemon.url });
    await proxy.initialize();
  });

  afterEach(async () => {
    for (const pl of plugins) pl.kill();
    await Promise.all(plugins.map((pl) => pl.exited));
    plugins = [];
    proxy.kill();
    await daemon.stop();
  });

  test('create_object, then get_instance_properties shows it; set_property Vector3 reads back',
       async () => {
    const pl = await plugin('e2e-main', ['--bundle', bundle]);
    const created = okJson(await call(proxy, 'create_object',
                                      { class_name: 'Part', parent: 'Workspace', name: 'E2EPart' }));
    assert.equal(created.path, 'Workspace.E2EPart');
    const props = okJson(await call(proxy, 'get_instance_properties', { path: 'Workspace.E2EPart' }));
    assert.equal(props.className, 'Part');
    assert.equal(props.path, 'Workspace.E2EPart');

    const size = { type: 'Vector3', value: [4, 5.5, -6] };
    okJson(await call(proxy, 'set_property', { path: 'Workspace.E2EPart', property: 'Size', value: size }));
    const back = okJson(await call(proxy, 'get_instance_properties',
                                   { path: 'Workspace.E2EPart', properties: ['Size'] }));
    assert.deepEqual(back.properties.Size, size);
    assert.equal(await pl.ran('set_property'), 1, 'the plugin ran set_property once');
    await pl.quit();
  });

  test('Studio output reaches get_console_output (batched POST /console)', async () => {
    const pl = await plugin('e2e-console');
    const marker = `e2e console line ${Date.now()}`;
    okJson(await call(proxy, 'execute_luau', { code: `warn(${JSON.stringify(marker)}) return 1` }));
    // The plugin sends its output in batches: wait for the batch with the line.
    const found = await until('the warn() line in the daemon console', async () => {
      const r = await call(proxy, 'get_console_output', { limit: 1000 });
      assert.equal(r.isError, false, resultText(r));
      return resultText(r).includes(marker) && resultText(r);
    }, { every: 200 });
    assert.match(found, /studio/);
    await pl.quit();
  });

  test('a failing handler arrives as isError with the plugin\'s message', async () => {
    const pl = await plugin('e2e-fail', ['--fail', 'get_instance_children']);
    const r = await call(proxy, 'get_instance_children', { path: 'Workspace' });
    assert.equal(r.isError, true);
    assert.match(resultText(r), /injected failure in get_instance_children/);
    await pl.quit();
  });

  test('the plugin stopped: the next call fails at once with the connect message',
       async () => {
    const pl = await plugin('e2e-stop');
    okJson(await call(proxy, 'get_selection', {}));
    const { code } = await pl.quit();
    assert.equal(code, 0);
    // "At once": the connect message is given only to a call refused before it is queued; a
    // call queued for a window that is gone would end with a deadline's or liveness message.
    const r = await call(proxy, 'get_selection', {});
    assert.equal(r.isError, true);
    assert.match(resultText(r), /not connected/i);
    assert.match(resultText(r), /Connect/);
    assert.doesNotMatch(resultText(r), /within \d+ s|stopped polling/);
  });

  test('the plugin killed while holding a command: "may have been applied", well before the deadline',
       async () => {
    const pl = await plugin('e2e-die', ['--die-on', 'delete_object']);
    const r = await call(proxy, 'delete_object', { path: 'Workspace.Baseplate' });
    assert.equal(r.isError, true);
    assert.match(resultText(r), /may have been applied/);
    // Well before the deadline: failed by the liveness check (the plugin stopped polling), not
    // by the 110 s deadline, whose message is "no answer within 110 s".
    assert.match(resultText(r), /Studio instance e2e-die stopped polling while running delete_object/);
    await pl.waitLine(/^run_plugin: dying while holding delete_object$/);
    await pl.exited;
  });

  test('two edit instances: list_studios shows both, set_active_studio routes the next call',
       async () => {
    const a = await plugin('e2e-a', ['--place-name', 'Place A', '--place-id', '111']);
    const b = await plugin('e2e-b', ['--place-name', 'Place B', '--place-id', '222']);
    const list = okJson(await call(proxy, 'list_studios', {}));
    const text = JSON.stringify(list);
    assert.match(text, /e2e-a/);
    assert.match(text, /e2e-b/);
    assert.match(text, /Place A/);
    assert.match(text, /Place B/);

    okJson(await call(proxy, 'set_active_studio', { instance: 'e2e-b' }));
    okJson(await call(proxy, 'get_selection', {}));
    assert.equal(await b.ran('get_selection'), 1, 'the chosen Studio ran it');
    assert.equal(await a.ran('get_selection'), 0, 'the other did not');

    okJson(await call(proxy, 'set_active_studio', { instance: 'e2e-a' }));
    okJson(await call(proxy, 'get_selection', {}));
    assert.equal(await a.ran('get_selection'), 1);
    assert.equal(await b.ran('get_selection'), 1);
    await a.quit();
    await b.quit();
  });

  test('a play-test server copy registers with its role and gets no edit commands', async () => {
    const edit = await plugin('e2e-edit', ['--place-id', '333']);
    const server = await plugin('e2e-server', ['--role', 'server', '--place-id', '333']);
    const list = okJson(await call(proxy, 'list_studios', {}));
    const text = JSON.stringify(list);
    assert.match(text, /e2e-server/);
    assert.match(text, /"server"/);
    okJson(await call(proxy, 'get_selection', {}));
    assert.equal(await edit.ran('get_selection'), 1);
    assert.equal(await server.ran('get_selection'), 0);
    await server.quit();
    await edit.quit();
  });
});
