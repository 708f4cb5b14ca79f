// tests/lune/studio_lune.test.mjs - the plugin's real poll loop under the real Luau runtime:
// plugin-bridge/tests/lune/run_plugin.luau (the built bundle under Lune, its place made of
// reflection-backed Instances) long-polls a real runboxd while this test drives the real
// runbox over stdio. Run by test.sh's lune stage:
//
//   LUNE=build-lune/lune RUNBOXD=build/daemon/runboxd RUNBOX=build/mcp-proxy/runbox \
//     node --test tests/lune/*.test.mjs
//
// It fails, never skips, when LUNE is not set: the stage exists to prove the plugin on Luau.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startDaemon } from '../lib/daemon.mjs';
import { startProxy } from '../lib/proxy.mjs';
import { until } from '../lib/wait.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LUNE = process.env.LUNE;
const RUN_PLUGIN = path.join(ROOT, 'plugin-bridge/tests/lune/run_plugin.luau');

// However long it takes (ctest's timeout bounds a hang).
async function waitRegistered(daemon, instance) {
  await until(`/health to list Studio instance ${instance}`, async () =>
    (await daemon.get('/health')).body.studio.instances.some((i) => i.id === instance),
  { every: 10 });
}

function startLunePlugin(daemon, id) {
  const child = spawn(LUNE, ['run', RUN_PLUGIN, daemon.url, id],
                      { cwd: ROOT, env: { ...process.env, RUNBOX_ROOT: ROOT },
                        stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  child.stdout.on('data', (c) => { out += c; });
  child.stderr.on('data', (c) => { err += c; });
  const connected = new Promise((resolve, reject) => {
    const check = () => { if (/^run_plugin: connected$/m.test(out)) resolve(); };
    child.stdout.on('data', check);
    child.on('exit', (code) => reject(new Error(`run_plugin.luau exited (${code}); stdout:\n${out}\nstderr:\n${err}`)));
  });
  return { child, connected, output: () => `stdout:\n${out}\nstderr:\n${err}` };
}

function parse(result) {
  assert.equal(result.isError, false, JSON.stringify(result));
  return JSON.parse(result.content[0].text);
}

test('the plugin under Lune answers Studio tools that runbox sends through runboxd', async (t) => {
  assert.ok(LUNE, 'LUNE is not set: point it at the Lune wrapper (scripts/get-lune.sh DIR gives DIR/lune)');
  const d = await startDaemon();
  const plugin = startLunePlugin(d, 'lune-e2e');
  const p = startProxy({ daemonUrl: d.url });
  t.after(async () => {
    plugin.child.kill('SIGKILL');
    await p.close();
    await d.stop();
  });
  await plugin.connected;
  await waitRegistered(d, 'lune-e2e');
  await p.initialize();

  const tree = parse(await p.callTool('get_file_tree', { depth: 2 }));
  assert.equal(tree.root, 'game');
  assert.ok(tree.tree.children.some((c) => c.name === 'Workspace'), plugin.output());

  // float32 storage (F9): 0.3 reads back 0.30000001..., and is found again
  const set = parse(await p.callTool('set_property', { path: 'Workspace.Model.Part', property: 'Transparency', value: 0.3 }));
  assert.notEqual(set.value, 0.3);
  assert.ok(Math.abs(set.value - 0.3) < 1e-6);
  const found = parse(await p.callTool('search_by_property', { property: 'Transparency', value: 0.3 }));
  assert.deepEqual(found.results.map((r) => r.path), ['Workspace.Model.Part']);

  // value codecs both ways (F10): read a Font, change it, write it back
  const props = parse(await p.callTool('get_instance_properties', { path: 'StarterGui.Title', properties: ['FontFace'] }));
  const font = props.properties.FontFace;
  assert.equal(font.type, 'Font');
  font.value.weight = 'Bold';
  const back = parse(await p.callTool('set_property', { path: 'StarterGui.Title', property: 'FontFace', value: font }));
  assert.equal(back.value.value.weight, 'Bold');
  const phys = parse(await p.callTool('set_property', {
    path: 'Workspace.Model.Part', property: 'CustomPhysicalProperties',
    value: { type: 'PhysicalProperties', value: [2, 0.5, 0.1, 1, 1] } }));
  assert.equal(phys.value.type, 'PhysicalProperties');

  const run = parse(await p.callTool('execute_luau', { code: 'print("from lune") return workspace.Model.Part.Name, 1 + 1' }));
  assert.deepEqual(run.returns, ['Part', 2]);
  assert.deepEqual(run.output, [{ level: 'info', message: 'from lune' }]);
  const src = parse(await p.callTool('get_script_source', { path: 'ServerScriptService.MainScript' }));
  assert.equal(src.lineCount, 3);
  const undo = parse(await p.callTool('undo', {}));
  assert.equal(undo.done, true);
  assert.match(undo.step, /^Runbox: /);

  // retry safety: the same operation_id twice creates one instance; the repeat says replayed
  const args = { class_name: 'Part', parent: 'Workspace', name: 'Once', operation_id: 'e2e-op-1' };
  const first = parse(await p.callTool('create_object', args));
  assert.equal(first.path, 'Workspace.Once');
  const again = parse(await p.callTool('create_object', args));
  assert.equal(again.replayed, true);
  assert.equal(again.path, 'Workspace.Once');
  const kids = parse(await p.callTool('get_instance_children', { path: 'Workspace' }));
  assert.equal(kids.children.filter((k) => k.name.startsWith('Once')).length, 1);

  const bad = await p.callTool('set_property', { path: 'Workspace.Model.Part', property: 'Size', value: 'big' });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /Vector3/);
});
