// tests/integration/resources.test.mjs - runboxd's resources and prompts endpoints over HTTP:
// GET /resources (pagination with cursors), GET /resource (text, blob, errors), GET /prompts,
// POST /prompt/<name>, and the same Host/token checks as every request.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, symlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDaemon, request } from '../lib/daemon.mjs';

let d, ws;
const get = (p, opts) => request(d.port, p, opts);
const post = (p, body) => request(d.port, p, { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                               body: JSON.stringify(body) });

before(async () => {
  ws = mkdtempSync(path.join(os.tmpdir(), 'runbox-res-'));
  mkdirSync(path.join(ws, 'src'));
  writeFileSync(path.join(ws, 'src', 'main.js'), 'console.log("hi")\n');
  writeFileSync(path.join(ws, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]));
  writeFileSync(path.join(ws, 'a b.txt'), 'spaced\n');
  writeFileSync(path.join(ws, 'blob'), Buffer.from([0, 0xff, 0xfe]));
  writeFileSync(path.join(ws, 'big.txt'), 'x'.repeat((1 << 20) + 1));
  for (let i = 0; i < 250; i++) writeFileSync(path.join(ws, 'src', `f${String(i).padStart(3, '0')}.ts`), 'x');
  symlinkSync('/etc', path.join(ws, 'etc-link'));
  d = await startDaemon({ workspace: ws });
});

after(async () => {
  await d.stop();
  rmSync(ws, { recursive: true, force: true });
});

test('resources/list pages through every file once, in path order, runbox resources first', async () => {
  const seen = [];
  let cursor, pages = 0;
  do {
    const r = await get('/resources' + (cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''));
    assert.equal(r.status, 200);
    assert.equal(r.body.ok, true);
    seen.push(...r.body.result.resources);
    cursor = r.body.result.nextCursor;
    pages++;
  } while (cursor);
  assert.equal(pages, 3);
  assert.deepEqual(seen.slice(0, 2).map((x) => x.uri), ['runbox://console/logs', 'runbox://process/list']);
  assert.equal(seen[0].name, 'Console logs');
  assert.equal(seen[0].description, 'All console entries from the sandbox');
  const files = seen.slice(2).map((x) => x.uri);
  assert.equal(files.length, 255);
  assert.equal(new Set(files).size, files.length);
  assert.deepEqual(files, [...files].sort((a, b) => (a < b ? -1 : 1)));
  assert.ok(files.includes('file:///a%20b.txt'));
  assert.ok(!files.some((u) => u.includes('etc-link')), 'symlinks are not listed');
  const byUri = Object.fromEntries(seen.map((x) => [x.uri, x]));
  assert.equal(byUri['file:///src/main.js'].mimeType, 'text/javascript');
  assert.equal(byUri['file:///src/main.js'].name, 'main.js');
  assert.equal(byUri['file:///logo.png'].mimeType, 'image/png');
  assert.equal(byUri['file:///blob'].mimeType, 'application/octet-stream');
  assert.equal(byUri['file:///src/f000.ts'].mimeType, 'text/x-typescript');
});

test('a bad cursor is 400 with a clear message', async () => {
  const r = await get('/resources?cursor=nonsense');
  assert.equal(r.status, 400);
  assert.match(r.body.error, /invalid cursor/);
});

test('resources/read gives text, blob for binary files, and refuses what it cannot give', async () => {
  let r = await get('/resource?uri=' + encodeURIComponent('file:///src/main.js'));
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.result.contents, [{ uri: 'file:///src/main.js', mimeType: 'text/javascript', text: 'console.log("hi")\n' }]);
  // The path commands see in the sandbox names the same file, as for the file tools.
  r = await get('/resource?uri=' + encodeURIComponent('file:///workspace/src/main.js'));
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.result.contents, [{ uri: 'file:///workspace/src/main.js', mimeType: 'text/javascript', text: 'console.log("hi")\n' }]);
  r = await get('/resource?uri=' + encodeURIComponent('file:///a%20b.txt'));
  assert.equal(r.body.result.contents[0].text, 'spaced\n');
  r = await get('/resource?uri=' + encodeURIComponent('file:///logo.png'));
  assert.equal(Buffer.from(r.body.result.contents[0].blob, 'base64').toString('hex'), '89504e47000102');
  r = await get('/resource?uri=' + encodeURIComponent('file:///blob'));
  assert.equal(r.body.result.contents[0].mimeType, 'application/octet-stream');
  assert.ok(r.body.result.contents[0].blob);
  r = await get('/resource?uri=' + encodeURIComponent('file:///big.txt'));
  assert.equal(r.status, 400);
  assert.match(r.body.error, /limit of resources\/read.*read_file/);
  r = await get('/resource?uri=' + encodeURIComponent('file:///missing.txt'));
  assert.equal(r.status, 404);
  assert.match(r.body.error, /missing\.txt/);
  r = await get('/resource?uri=' + encodeURIComponent('http://example.com/'));
  assert.equal(r.status, 400);
  assert.match(r.body.error, /unknown resource URI/);
  r = await get('/resource');
  assert.equal(r.status, 400);
  r = await get('/resource?uri=' + encodeURIComponent('file:///etc-link/passwd'));
  assert.notEqual(r.status, 200, 'a symlink out of the workspace never reads a host file');
});

test('the console and process resources are JSON', async () => {
  let r = await get('/resource?uri=' + encodeURIComponent('runbox://console/logs'));
  const c = JSON.parse(r.body.result.contents[0].text);
  assert.equal(r.body.result.contents[0].mimeType, 'application/json');
  assert.ok(c.entries.some((e) => e.source === 'daemon' && /started/.test(e.message)),
            JSON.stringify(c.entries).slice(0, 500));
  r = await get('/resource?uri=' + encodeURIComponent('runbox://process/list'));
  assert.ok(JSON.parse(r.body.result.contents[0].text));
});

test('console_logs reads the ring with filters', async () => {
  const r = await post('/tool/console_logs', { source: 'daemon', limit: 5 });
  assert.equal(r.body.ok, true);
  assert.ok(r.body.result.entries.length >= 1);
  assert.ok(r.body.result.entries.every((e) => e.source === 'daemon'));
  const bad = await post('/tool/console_logs', { level: 'fatal' });
  assert.equal(bad.status, 400);
});

test('prompts list and render as the guide words them', async () => {
  let r = await get('/prompts');
  assert.deepEqual(r.body.result.prompts.map((p) => p.name), ['explain_file', 'fix_error', 'scaffold']);
  r = await post('/prompt/explain_file', { path: '/src/main.js' });
  assert.equal(r.body.result.messages[0].role, 'user');
  assert.equal(r.body.result.messages[0].content.text,
    'The user wants an explanation of the following file:\n\n--- /src/main.js ---\nconsole.log("hi")\n\n---\n\nExplain the purpose and structure of this file clearly.');
  r = await post('/prompt/scaffold', { type: 'python-script', name: 'tool' });
  assert.equal(r.body.result.messages[0].content.text,
    'Scaffold a new python-script project named tool.\nCreate the directory structure, config files, and a basic entry point.\nUse best practices for the chosen stack.');
  r = await post('/prompt/fix_error', {});
  assert.match(r.body.result.messages[0].content.text, /^The following errors appeared in the sandbox console:\n\n/);
  for (const [name, args, re] of [['explain_file', {}, /missing required argument path/],
    ['scaffold', { type: 'rails' }, /type must be one of/], ['scaffold', { type: 'bun-api', x: '1' }, /no argument "x"/],
    ['nope', {}, /unknown prompt/], ['explain_file', { path: 5 }, /must be a string/]]) {
    r = await post(`/prompt/${name}`, args);
    assert.equal(r.status, 400, `${name} ${JSON.stringify(args)}`);
    assert.match(r.body.error, re);
  }
  r = await post('/prompt/explain_file', { path: '/none.js' });
  assert.equal(r.status, 404);
});

test('the same Host and method checks as every endpoint', async () => {
  let r = await get('/resources', { headers: { Host: 'evil.example:80' } });
  assert.equal(r.status, 403);
  r = await get('/prompt/scaffold');
  assert.equal(r.status, 405);
  assert.equal(r.headers.allow, 'POST');
  r = await request(d.port, '/resources', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  assert.equal(r.status, 405);
  assert.equal(r.headers.allow, 'GET');
});

test('POST /complete answers completion/complete for runbox', async () => {
  const dd = await startDaemon();
  try {
    await dd.call('write_file', { path: '/src/main.js', content: '' });
    const post = (body) => request(dd.port, '/complete', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    let r = await post({ ref: { type: 'ref/prompt', name: 'explain_file' }, argument: { name: 'path', value: '/src/m' } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.result.completion.values, ['/src/main.js']);
    r = await post({ ref: { type: 'ref/prompt', name: 'scaffold' }, argument: { name: 'type', value: '' } });
    assert.deepEqual(r.body.result.completion.values, ['bun-api', 'python-script', 'fullstack']);
    r = await post({ argument: { name: 'path' } });
    assert.equal(r.status, 400);
    assert.match(r.body.error, /params.ref.type and params.argument.name must be strings/);
    r = await request(dd.port, '/complete');
    assert.equal(r.status, 405);
  } finally {
    await dd.stop();
  }
});
