// Integration: every byte Runbox sends is UTF-8, whatever the workspace and the commands hold.
// A command makes files whose names are not UTF-8 and prints bytes that are not either; the
// daemon's HTTP answers (read byte for byte, decoded strictly), and runbox's stdout over MCP,
// must stay valid UTF-8. Text gets U+FFFD; names get the escaped form (\xHH, \\) that the file
// tools take back, so such a file can still be read and removed.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';
import { resultText, startProxy } from '../lib/proxy.mjs';

const strict = new TextDecoder('utf-8', { fatal: true });

// POST or GET, with the body read as bytes: fails the test when they are not UTF-8.
function rawRequest(port, path, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(body);
    const req = http.request({ host: '127.0.0.1', port, path, method: data ? 'POST' : 'GET',
      headers: data ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {} },
    (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        let text;
        try {
          text = strict.decode(bytes);
        } catch {
          reject(new Error(`${path}: the answer is not UTF-8: ${bytes.toString('latin1').slice(0, 300)}`));
          return;
        }
        resolve(JSON.parse(text));
      });
    });
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

const tool = (d, name, args) => rawRequest(d.port, `/tool/${name}`, JSON.stringify(args));

// The command makes "caf\xe9" (Latin-1), "n\nl.txt", "s\\l.txt" and prints bytes that are
// not UTF-8 on both streams.
const MAKE = "printf 'latin-1' > \"$(printf 'caf\\351')\"; printf 'nl' > \"$(printf 'n\\nl.txt')\"; " +
             "printf 'bs' > 's\\l.txt'; printf 'bad \\377\\376 ok\\n'; printf 'err \\300\\n' >&2";

describe('UTF-8 on the wire: the HTTP API', () => {
  let d;
  before(async () => { d = await startDaemon(); });
  after(async () => { await d.stop(); });

  test('exec output that is not UTF-8 comes back with U+FFFD, in the result and the console', async () => {
    const r = await tool(d, 'exec', { command: MAKE });
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(r.structured.stdout, 'bad \uFFFD\uFFFD ok\n');
    assert.equal(r.structured.stderr, 'err \uFFFD\n');
    const c = await tool(d, 'console_logs', { source: 'exec', limit: 20 });
    assert.ok(c.result.entries.some((e) => e.message === 'bad \uFFFD\uFFFD ok'), JSON.stringify(c));
    const ps = await tool(d, 'process_list', {});
    assert.ok(ps.result.processes.length > 0);
  });

  test('a NUL in a command\'s output is U+FFFD, and nothing after it is lost', async () => {
    const r = await tool(d, 'exec', { command: "printf 'a\\000b\\n'; printf 'c\\000d' >&2" });
    assert.equal(r.structured.stdout, 'a\uFFFDb\n', JSON.stringify(r));
    assert.equal(r.structured.stderr, 'c\uFFFDd');
    assert.equal(r.result, 'a\uFFFDb\n[stderr]\nc\uFFFDd');
  });

  test('names that are not UTF-8 are listed escaped, and read and removed by that name', async () => {
    const l = await tool(d, 'list_dir', { path: '/' });
    const names = l.result.entries.map((e) => e.name).sort();
    assert.deepEqual(names, ['caf\\xe9', 'n\\x0al.txt', 's\\\\l.txt']);
    const back = await tool(d, 'read_file', { path: '/caf\\xe9' });
    assert.equal(back.result, 'latin-1');
    assert.equal((await tool(d, 'read_file', { path: '/n\\x0al.txt' })).result, 'nl');
    assert.equal((await tool(d, 'read_file', { path: '/s\\\\l.txt' })).result, 'bs');
    const s = await tool(d, 'search', { query: 'latin' });
    assert.equal(s.result, '/caf\\xe9:1: latin-1');
    const w = await tool(d, 'write_file', { path: '/caf\\xE9', content: 'again' });
    assert.equal(w.result.path, '/caf\\xe9');
    const rm = await tool(d, 'remove', { path: '/caf\\xe9' });
    assert.equal(rm.result.path, '/caf\\xe9');
    const bad = await tool(d, 'read_file', { path: '/a\\qb' });
    assert.equal(bad.ok, false);
    assert.match(bad.error, /starts no escape/);
  });

  test('resources list such files with %-encoded URIs that read back', async () => {
    await tool(d, 'exec', { command: "printf 'x' > \"$(printf 'r\\377.txt')\"" });
    const list = (await rawRequest(d.port, '/resources')).result;
    const file = list.resources.find((r) => r.uri === 'file:///r%FF.txt');
    assert.ok(file, JSON.stringify(list.resources.map((r) => r.uri)));
    assert.equal(file.name, 'r\\xff.txt');
    const read = (await rawRequest(d.port, `/resource?uri=${encodeURIComponent('file:///r%FF.txt')}`))
      .result;
    assert.equal(read.contents[0].text, 'x', JSON.stringify(read));
  });
});

describe('UTF-8 on the wire: runbox over stdio', () => {
  let d, p;
  before(async () => {
    d = await startDaemon();
    p = startProxy({ daemonUrl: d.url });
    await p.initialize('2025-11-25');
  });
  after(async () => {
    await p.close();
    await d.stop();
  });

  test('list_dir, exec, search and resources/list never put a byte that is not UTF-8 on stdout', async () => {
    const ex = await p.callTool('exec', { command: MAKE });
    assert.match(resultText(ex), /bad \uFFFD\uFFFD ok/);
    const l = await p.callTool('list_dir', { path: '/' });
    assert.deepEqual(l.structuredContent.entries.map((e) => e.name).sort(),
                     ['caf\\xe9', 'n\\x0al.txt', 's\\\\l.txt']);
    assert.equal(resultText(await p.callTool('search', { query: 'latin' })), '/caf\\xe9:1: latin-1');
    const res = await p.request('resources/list');
    assert.ok(res.result.resources.some((r) => r.uri === 'file:///caf%E9'), JSON.stringify(res));
    assert.equal(resultText(await p.callTool('read_file', { path: '/caf\\xe9' })), 'latin-1');
    assert.equal(p.invalidUtf8(), 0);
    assert.deepEqual(p.badLines, []);
  });

  test('a NUL in a file or an output is U+FFFD through runbox, and nothing after it is lost', async () => {
    const ex = await p.callTool('exec', { command: "printf 'a\\000b\\n'; printf 'x\\000y' > nul.bin" });
    assert.equal(ex.structuredContent.stdout, 'a\uFFFDb\n', JSON.stringify(ex));
    // Over HTTP read_file sends the NUL as \u0000 (JSON can); runbox's strings cannot hold one.
    const http = await rawRequest(d.port, '/tool/read_file', JSON.stringify({ path: '/nul.bin' }));
    assert.equal(http.result, 'x\u0000y');
    assert.equal(resultText(await p.callTool('read_file', { path: '/nul.bin' })), 'x\uFFFDy');
  });
});
