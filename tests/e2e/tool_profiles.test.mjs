// tests/e2e/tool_profiles.test.mjs - tool profiles as a user meets them: RUNBOX_TOOLS for the
// real runbox (tools/list, the instructions, calls outside the profile) and --tools for the
// real runboxd (GET /tools, POST /tool of a tool outside it), and the budgets of tools/list.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { startDaemon, runRunboxd } from '../lib/daemon.mjs';
import { startProxy, runRunbox } from '../lib/proxy.mjs';

async function listed(env) {
  const r = await runRunbox(['--list-tools'], { env });
  assert.equal(r.code, 0, r.stderr);
  return { text: r.stdout.trim(), names: JSON.parse(r.stdout).tools.map((t) => t.name) };
}

test('RUNBOX_TOOLS=sandbox lists the workspace, exec and console tools within 12 000 characters', async () => {
  const { text, names } = await listed({ RUNBOX_TOOLS: 'sandbox' });
  assert.ok(text.length <= 12000, `sandbox tools/list is ${text.length} characters`);
  for (const n of ['read_file', 'write_file', 'exec', 'process_list', 'kill', 'console_logs'])
    assert.ok(names.includes(n), n);
  assert.ok(!names.some((n) => n.startsWith('get_') && n !== 'get_console_output' && n !== 'get_file_tree'));
  assert.ok(!names.includes('get_file_tree') && !names.includes('set_property'));
});

test('every tool and the default list fit 45 000 characters; readonly lists only read-only tools', async () => {
  const all = await listed({ RUNBOX_TOOLS: '' });
  assert.ok(all.text.length <= 45000, `tools/list is ${all.text.length} characters`);
  const def = await listed({});
  assert.equal(def.text, all.text);
  const r = await runRunbox(['--list-tools'], { env: { RUNBOX_TOOLS: 'readonly' } });
  for (const t of JSON.parse(r.stdout).tools)
    assert.equal(t.annotations.readOnlyHint, true, t.name);
  const studio = await listed({ RUNBOX_TOOLS: 'studio' });
  assert.ok(studio.names.includes('get_file_tree') && !studio.names.includes('exec'));
});

test('an unknown RUNBOX_TOOLS item stops runbox with a message naming what is accepted', async () => {
  const r = await runRunbox(['--list-tools'], { env: { RUNBOX_TOOLS: 'sandbox,studi' } });
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /unknown tool profile or group "studi"/);
  assert.match(r.stderr, /sandbox/);
});

test('runbox serves only its profile: instructions without Studio rules, other tools unknown', async () => {
  const d = await startDaemon();
  const p = startProxy({ daemonUrl: d.url, env: { RUNBOX_TOOLS: 'sandbox' } });
  try {
    const init = await p.initialize();
    assert.match(init.instructions, /\/workspace/);
    assert.doesNotMatch(init.instructions, /Instance paths/);
    const list = await p.request('tools/list', {});
    assert.ok(list.result.tools.every((t) => !t.name.startsWith('set_')));
    const r = await p.request('tools/call', { name: 'get_file_tree', arguments: {} });
    assert.equal(r.error?.code, -32602, JSON.stringify(r));
    const ok = await p.callTool('write_file', { path: '/p.txt', content: 'x' });
    assert.equal(ok.isError, false, JSON.stringify(ok));
  } finally {
    await p.close();
    await d.stop();
  }
});

test('runboxd --tools sandbox lists and runs only the sandbox tools', async () => {
  const d = await startDaemon({ args: ['--tools', 'sandbox'] });
  try {
    const list = await d.get("/tools");
    const names = list.body.tools.map((t) => t.name);
    assert.ok(names.includes('exec') && !names.includes('get_file_tree'));
    const r = await d.call('get_file_tree', {});
    assert.equal(r.status, 404);
    assert.match(r.body.error, /not served: runboxd runs with a --tools profile/);
    const w = await d.call('write_file', { path: '/a.txt', content: 'hi' });
    assert.equal(w.body.ok, true);
  } finally {
    await d.stop();
  }
});

test('runboxd --tools with an unknown profile exits 2 and says what is accepted', async () => {
  const r = await runRunboxd(['--port', '0', '--workspace', ':memory:', '--tools', 'nope']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--tools nope: unknown tool profile or group "nope"/);
});
