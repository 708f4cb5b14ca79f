// Interop with the MCP Inspector CLI over HTTP, straight to runboxd (no runbox): --transport
// http against /mcp (and sse against /sse), listing and calling tools, reading a resource, and
// with a token, the way a user points the Inspector at a running daemon.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { startDaemon } from '../lib/daemon.mjs';

const TESTS_DIR = dirname(dirname(fileURLToPath(import.meta.url)));
const TOKEN = 'inspector-http-token-0123456789';

let d;
let home;

before(async () => {
  d = await startDaemon({ workspace: ':memory:', env: { RUNBOX_TOKEN: TOKEN } });
  home = await mkdtemp(join(tmpdir(), 'runbox-inspector-home-'));
});

after(async () => {
  await d?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

// Runs the Inspector CLI against url; resolves {code, stdout, stderr}, never rejects.
function inspector(url, args, { token = TOKEN } = {}) {
  const argv = ['--no-install', '@modelcontextprotocol/inspector', '--cli', '-q', '--format',
                'json', url, ...args];
  if (token) argv.push('--header', `Authorization: Bearer ${token}`);
  const env = { ...process.env, HOME: home, npm_config_update_notifier: 'false' };
  return new Promise((resolve) => {
    execFile('npx', argv, { cwd: TESTS_DIR, env, maxBuffer: 16 << 20 },
             (err, stdout, stderr) => {
               const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
               resolve({ code, stdout, stderr });
             });
  });
}

function payload(run) {
  assert.equal(run.code, 0, `inspector exited ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
  const doc = JSON.parse(run.stdout);
  return doc.result ?? doc;
}

const textOf = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

test('--transport http: tools/list', async () => {
  const r = payload(await inspector(`${d.url}/mcp`, ['--transport', 'http', '--method',
                                                       'tools/list']));
  const names = r.tools.map((t) => t.name);
  for (const n of ['read_file', 'write_file', 'exec', 'process_list'])
    assert.ok(names.includes(n), `tools/list has ${n}`);
});

test('--transport http: tools/call write_file, read_file and exec', async () => {
  const w = payload(await inspector(`${d.url}/mcp`, [
    '--transport', 'http', '--method', 'tools/call', '--tool-name', 'write_file',
    '--tool-args-json', JSON.stringify({ path: '/insp/h.txt', content: 'over http\n' })]));
  assert.equal(w.isError, false, JSON.stringify(w));
  assert.equal(w.structuredContent.bytes, 10);
  const r = payload(await inspector(`${d.url}/mcp`, [
    '--transport', 'http', '--method', 'tools/call', '--tool-name', 'read_file', '--tool-arg',
    'path=/insp/h.txt']));
  assert.equal(textOf(r), 'over http\n');
  const e = payload(await inspector(`${d.url}/mcp`, [
    '--transport', 'http', '--method', 'tools/call', '--tool-name', 'exec', '--tool-arg',
    'command=cat insp/h.txt']));
  assert.equal(e.structuredContent.stdout, 'over http\n');
});

test('--transport http: a tool error exits 5; resources/read answers', async () => {
  const bad = await inspector(`${d.url}/mcp`, [
    '--transport', 'http', '--method', 'tools/call', '--tool-name', 'read_file',
    '--tool-args-json', '{"path":7}']);
  assert.equal(bad.code, 5, `stdout: ${bad.stdout} stderr: ${bad.stderr}`);
  assert.match(bad.stdout + bad.stderr, /arguments\.path/);
  const res = payload(await inspector(`${d.url}/mcp`, [
    '--transport', 'http', '--method', 'resources/read', '--uri', 'file:///insp/h.txt']));
  assert.equal(res.contents[0].text, 'over http\n');
});

test('--transport sse: tools/call over the legacy pair', async () => {
  const r = payload(await inspector(`${d.url}/sse`, [
    '--transport', 'sse', '--method', 'tools/call', '--tool-name', 'read_file', '--tool-arg',
    'path=/insp/h.txt']));
  assert.equal(textOf(r), 'over http\n');
});

test('without the token the Inspector is refused and says so', async () => {
  const run = await inspector(`${d.url}/mcp`, ['--transport', 'http', '--method', 'tools/list'],
                              { token: null });
  assert.notEqual(run.code, 0);
  assert.match(run.stdout + run.stderr, /401|token|Unauthorized|auth_required/i);
});
