// tests/integration/outputs.test.mjs - the answers runboxd gives itself (workspace, exec,
// console, checkpoints, ports, the Studio session tools) validate against their outputSchemas:
// every local tool whose catalog entry has one is called through POST /tool on a real daemon
// (with a fake plugin connected for the Studio session tools), and tests/helpers/check_output
// (RUNBOX_CHECK_OUTPUT) checks the answers with the validator runbox and runboxd use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startDaemon } from '../lib/daemon.mjs';
import { FakePlugin } from '../lib/fakeplugin.mjs';

async function waitInstances(d, n) {
  for (let i = 0; i < 2000; i++) {
    const h = await d.get('/health');
    if (h.body.studio.instances.length === n) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.fail(`never ${n} Studio instances`);
}

test('every local tool with an outputSchema answers what its schema says', async (t) => {
  const checker = process.env.RUNBOX_CHECK_OUTPUT;
  assert.ok(checker, 'RUNBOX_CHECK_OUTPUT names tests/helpers/check_output (ctest sets it)');
  const d = await startDaemon();
  t.after(async () => { await FakePlugin.cleanupAll(); await d.stop(); });
  new FakePlugin(d.port, {
    instance: 'out-1', place: '7', name: 'Outputs',
    handler: async () => ({ ok: true, result: { mode: 'edit', paused: false, testRunning: false } }),
  }).start();
  await waitInstances(d, 1);

  const answers = [];
  const call = async (tool, args) => {
    const r = await d.call(tool, args);
    assert.equal(r.body.ok, true, `${tool}: ${JSON.stringify(r.body)}`);
    answers.push([tool, r.body.structured ?? r.body.result]);
    return r.body;
  };
  await call('write_file', { path: '/o/a.txt', content: 'one\n' });
  await call('list_dir', { path: '/o' });
  await call('checkpoint', { message: 'first' });
  await call('write_file', { path: '/o/b.txt', content: 'two\n' });
  await call('list_checkpoints', {});
  await call('diff', {});
  const bg = await call('exec', { command: 'sleep 30', background: true });
  await call('process_list', {});
  await call('kill', { pid: (bg.structured ?? bg.result).pid, signal: 'KILL' });
  await call('exec', { command: 'echo hi; echo err >&2; exit 3' });
  await call('console_logs', { limit: 2 });
  await call('remove', { path: '/o/b.txt' });
  await call('list_studios', {});
  await call('set_active_studio', { instance: 'out-1' });
  await call('get_studio_state', {});
  await call('get_console_output', {});
  await call('clear_console_output', {});
  const cps = answers.find(([n]) => n === 'checkpoint')[1];
  await call('restore_checkpoint', { id: cps.id });

  // Every local tool with an outputSchema was called above (expose_port needs a listening
  // server in the sandbox: tests/integration/exec_ports.test.mjs checks its answer's fields).
  const called = new Set(answers.map(([n]) => n));
  const missing = localToolsWithSchemas().filter((n) => !called.has(n) && n !== 'expose_port');
  assert.deepEqual(missing, [], 'local tools with an outputSchema that were not called');

  const dir = mkdtempSync(path.join(os.tmpdir(), 'runbox-outputs-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'answers.txt');
  writeFileSync(file, answers.map(([n, a]) => `${n}\t${JSON.stringify(a)}\n`).join(''));
  const r = spawnSync(checker, [file], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`${answers.length} answers checked, 0 failed`));
});

// The catalog's local tools that declare an outputSchema (the Studio-routed ones are checked by
// plugin-bridge/tests/test_outputs.lua against the plugin's handlers).
function localToolsWithSchemas() {
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'common', 'tools');
  const names = [];
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.json'))) {
    const doc = JSON.parse(readFileSync(path.join(dir, f), 'utf8'));
    for (const tool of doc.tools || [])
      if (tool.route === 'local' && tool.outputSchema) names.push(tool.name);
  }
  return names.sort();
}
