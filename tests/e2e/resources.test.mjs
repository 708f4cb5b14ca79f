// tests/e2e/resources.test.mjs - resources and prompts through the real runbox over stdio
// against a real runboxd: capabilities, resources/list pagination, resources/read (text and
// blob), resources/templates/list, prompts/list and prompts/get, and -32602 for bad requests
// (the daemon's message carried over).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDaemon } from '../lib/daemon.mjs';
import { startProxy } from '../lib/proxy.mjs';

let d, p, ws, init;

before(async () => {
  ws = mkdtempSync(path.join(os.tmpdir(), 'runbox-e2e-res-'));
  for (let i = 0; i < 150; i++) writeFileSync(path.join(ws, `n${String(i).padStart(3, '0')}.md`), `# ${i}\n`);
  writeFileSync(path.join(ws, 'pixel.gif'), Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1'));
  d = await startDaemon({ workspace: ws });
  p = startProxy({ daemonUrl: d.url });
  init = await p.initialize('2025-11-25');
});

after(async () => {
  await p.close();
  await d.stop();
  rmSync(ws, { recursive: true, force: true });
});

test('initialize declares resources (with subscribe and listChanged), prompts and completions', () => {
  assert.deepEqual(init.capabilities.resources, { subscribe: true, listChanged: true });
  assert.deepEqual(init.capabilities.prompts, {});
  assert.deepEqual(init.capabilities.completions, {});
});

test('resources/list pages with opaque cursors', async () => {
  const uris = [];
  let cursor, pages = 0;
  do {
    const r = await p.request('resources/list', cursor ? { cursor } : {});
    assert.ok(r.result, JSON.stringify(r.error));
    uris.push(...r.result.resources.map((x) => x.uri));
    cursor = r.result.nextCursor;
    pages++;
  } while (cursor);
  assert.equal(pages, 2);
  assert.equal(uris.length, 153);
  assert.equal(uris[0], 'runbox://console/logs');
  assert.equal(uris[1], 'runbox://process/list');
  assert.equal(uris[2], 'file:///n000.md');
  assert.equal(uris.at(-1), 'file:///pixel.gif');
});

test('resources/read: text and blob', async () => {
  let r = await p.request('resources/read', { uri: 'file:///n007.md' });
  assert.deepEqual(r.result.contents, [{ uri: 'file:///n007.md', mimeType: 'text/markdown', text: '# 7\n' }]);
  r = await p.request('resources/read', { uri: 'file:///pixel.gif' });
  assert.equal(r.result.contents[0].mimeType, 'image/gif');
  assert.equal(Buffer.from(r.result.contents[0].blob, 'base64').toString('latin1').slice(0, 6), 'GIF89a');
  r = await p.request('resources/read', { uri: 'runbox://console/logs' });
  assert.ok(Array.isArray(JSON.parse(r.result.contents[0].text).entries));
});

test('resources/templates/list has file:///{path}', async () => {
  const r = await p.request('resources/templates/list');
  assert.equal(r.result.resourceTemplates[0].uriTemplate, 'file:///{path}');
  assert.equal(r.result.resourceTemplates[0].name, 'Workspace file');
});

test('prompts/list and prompts/get for each prompt', async () => {
  let r = await p.request('prompts/list');
  assert.deepEqual(r.result.prompts.map((x) => x.name), ['explain_file', 'fix_error', 'scaffold']);
  r = await p.request('prompts/get', { name: 'explain_file', arguments: { path: '/n001.md' } });
  assert.match(r.result.messages[0].content.text, /--- \/n001\.md ---\n# 1\n/);
  r = await p.request('prompts/get', { name: 'fix_error' });
  assert.match(r.result.messages[0].content.text, /Analyze the root cause and propose a concrete fix\.$/);
  r = await p.request('prompts/get', { name: 'scaffold', arguments: { type: 'bun-api' } });
  assert.match(r.result.messages[0].content.text, /^Scaffold a new bun-api project named my-bun-api\./);
});

test('bad requests are -32602 with a clear message', async () => {
  const cases = [
    ['resources/read', { uri: 'file:///nope.txt' }, /nope\.txt/],
    ['resources/read', { uri: 'ftp://x' }, /unknown resource URI/],
    ['resources/read', {}, /params\.uri/],
    ['resources/list', { cursor: 'zzz' }, /invalid cursor/],
    ['prompts/get', { name: 'nope' }, /unknown prompt/],
    ['prompts/get', { name: 'explain_file' }, /missing required argument path/],
    ['prompts/get', { name: 'scaffold', arguments: { type: 'cobol' } }, /type must be one of/],
    ['prompts/get', { name: 'scaffold', arguments: { type: 1 } }, /must be a string/],
  ];
  for (const [method, params, re] of cases) {
    const r = await p.request(method, params);
    assert.equal(r.error?.code, -32602, `${method} ${JSON.stringify(params)}: ${JSON.stringify(r)}`);
    assert.match(r.error.message, re);
  }
  assert.deepEqual(p.badLines, []);
});

test('an unreachable daemon is a clear -32603', async () => {
  const q = startProxy({ daemonUrl: 'http://127.0.0.1:9' });
  await q.initialize();
  const r = await q.request('resources/list');
  assert.equal(r.error.code, -32603);
  assert.match(r.error.message, /not reachable/);
  await q.close();
});
