// Integration: the bad input of issue 2 that reaches the daemon. Each one gets a clear JSON
// error, no file is damaged, and the daemon keeps serving.
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync,
         writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';

import { request, startDaemon } from '../lib/daemon.mjs';

let d;
before(async () => { d = await startDaemon(); });
after(async () => { await d.stop(); });
// After every case the daemon must still answer.
afterEach(async () => {
  let h;
  try {
    h = await d.get('/health');
  } catch (e) {
    throw new Error(`runboxd stopped answering (${e.message}); its stderr:\n${d.stderr()}`);
  }
  assert.equal(h.status, 200);
});

function jsonError(r, status, pattern) {
  assert.equal(r.status, status, r.text);
  assert.match(r.headers['content-type'], /^application\/json/);
  assert.equal(r.body.ok, false, r.text);
  assert.equal(typeof r.body.error, 'string');
  if (pattern) assert.match(r.body.error, pattern);
}

function toolFailure(r, pattern) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, false, r.text);
  assert.equal(typeof r.body.id, 'string');
  if (pattern) assert.match(r.body.error, pattern);
}

describe('HTTP checks', () => {
  test('a foreign Host header is refused with 403', async () => {
    for (const host of ['evil.example.com', `evil.example.com:${d.port}`, `127.0.0.1:${d.port + 1}`,
                        `localhost.evil.com:${d.port}`]) {
      const r = await request(d.port, '/health', { headers: { Host: host } });
      jsonError(r, 403, /Host/);
    }
    // The status page too: a rebinding page (Host: attacker.test) never gets it.
    for (const p of ['/', '/events'])
      jsonError(await request(d.port, p, { headers: { Host: 'attacker.test' } }), 403, /Host/);
    const w = await request(d.port, '/tool/write_file', {
      method: 'POST', headers: { Host: 'attacker.test', 'Content-Type': 'application/json' },
      body: JSON.stringify({ path: '/pwned.txt', content: 'x' }) });
    jsonError(w, 403);
    assert.equal(existsSync(path.join(d.workspace, 'pwned.txt')), false);
  });

  test('our own Host names are accepted, with or without the port', async () => {
    for (const host of [`127.0.0.1:${d.port}`, `localhost:${d.port}`, `[::1]:${d.port}`,
                        'localhost', '127.0.0.1', `LOCALHOST:${d.port}`]) {
      const r = await request(d.port, '/health', { headers: { Host: host } });
      assert.equal(r.status, 200, host);
    }
  });

  test('a browser Origin is refused with 403; our own origin is fine, with the page token', async () => {
    const foreign = ['https://evil.example.com', 'null', `http://evil.com:${d.port}`,
                     `http://localhost:${d.port + 1}`, `https://localhost:${d.port}`];
    for (const origin of foreign) {
      const r = await d.call('write_file', { path: '/o.txt', content: 'x' }, { Origin: origin });
      jsonError(r, 403, /Origin/);
      // The status page and its endpoints are no exception.
      for (const p of ['/', '/events', '/health'])
        jsonError(await d.get(p, { Origin: origin }), 403, /Origin/);
    }
    assert.equal(existsSync(path.join(d.workspace, 'o.txt')), false);
    // A browser's tool call (it sends Origin) needs the token only the page's own HTML has.
    const own = `http://127.0.0.1:${d.port}`;
    jsonError(await d.call('list_dir', {}, { Origin: own }), 403, /page's token/);
    jsonError(await d.call('list_dir', {}, { Origin: own, 'X-Runbox-Page-Token': 'f'.repeat(32) }),
              403, /page's token/);
    const page = await d.get('/');
    const token = /<meta name="runbox-page-token" content="([0-9a-f]{32})">/.exec(page.text)[1];
    const ok = await d.call('list_dir', {}, { Origin: own, 'X-Runbox-Page-Token': token });
    assert.equal(ok.status, 200);
    // Requests a browser marks as coming from another site are refused even without Origin
    // (<script src>, <iframe>): Sec-Fetch-Site.
    jsonError(await d.get('/health', { 'Sec-Fetch-Site': 'cross-site' }), 403, /another site/);
    jsonError(await d.get('/', { 'Sec-Fetch-Site': 'same-site', 'Sec-Fetch-Dest': 'iframe',
                                 'Sec-Fetch-Mode': 'navigate' }), 403, /another site/);
    // Following a link to the page is fine; the page then runs on its own origin.
    const nav = await d.get('/', { 'Sec-Fetch-Site': 'cross-site', 'Sec-Fetch-Dest': 'document',
                                   'Sec-Fetch-Mode': 'navigate' });
    assert.equal(nav.status, 200);
    assert.equal(nav.headers['x-frame-options'], 'DENY');
    const csp = nav.headers['content-security-policy'];
    assert.match(csp, /frame-ancestors 'none'/);
    // The page's style and script are in it, allowed by a nonce; nothing else may run.
    const nonce = /script-src 'nonce-([0-9a-f]{32})'/.exec(csp)[1];
    assert.ok(nav.text.includes(`<script nonce="${nonce}">`));
    assert.ok(!/<script(?![^>]*nonce)/.test(nav.text), 'every script has the nonce');
  });

  test('a text/plain body is refused with 415; charset parameters are fine', async () => {
    const r = await d.call('write_file', { path: '/t.txt', content: 'x' }, { 'Content-Type': 'text/plain' });
    jsonError(r, 415, /application\/json/);
    const none = await request(d.port, '/tool/list_dir', { method: 'POST', body: '{}' });
    jsonError(none, 415);
    const cs = await d.call('list_dir', {}, { 'Content-Type': 'application/json; charset=utf-8' });
    assert.equal(cs.status, 200);
  });

  test('a POST with no body and no Content-Type runs the tool with {} (curl -X POST)', async () => {
    const bare = await request(d.port, '/tool/list_dir', { method: 'POST' });
    assert.equal(bare.status, 200, bare.text);
    assert.equal(bare.body.ok, true);
    const empty = await request(d.port, '/tool/list_dir',
                                { method: 'POST', headers: { 'Content-Length': '0' } });
    assert.equal(empty.status, 200, empty.text);
    // A bodyless call still validates: read_file needs a path.
    const missing = await request(d.port, '/tool/read_file', { method: 'POST' });
    jsonError(missing, 400, /arguments\.path: required property is missing/);
  });

  test('a 100 MB body gets 413 without being read, and that connection is closed', async () => {
    // A daemon that went on waiting for the body would hold the connection until civetweb's
    // request timeout (30 s) ends it; one that drains what came and closes does so once the
    // client has stopped. A third of the timeout tells the two apart on any load.
    const REQUEST_TIMEOUT_MS = 30000;
    const got = await new Promise((resolve, reject) => {
      const sock = net.connect(d.port, '127.0.0.1');
      let text = '';
      const timer = setTimeout(() => { sock.destroy(); resolve(text + '[still open]'); },
                               REQUEST_TIMEOUT_MS / 3);
      // Once the answer is in, stop sending (as curl does); the daemon then closes at once.
      sock.on('data', (c) => { text += c; if (/\r\n\r\n[^]*\}/.test(text)) sock.end(); });
      sock.on('end', () => { clearTimeout(timer); sock.destroy(); resolve(text); });
      sock.on('error', reject);
      // A little of the body, then what would be a second request if the body were skipped.
      sock.write(`POST /tool/write_file HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\n` +
                 `Content-Type: application/json\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n` +
                 '{"path":"/huge.txt","content":"' + 'a'.repeat(65536) +
                 `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\n\r\n`);
    });
    assert.match(got, /^HTTP\/1\.1 413/);
    assert.match(got, /32 MiB/);
    assert.equal((got.match(/HTTP\/1\.1 /g) || []).length, 1, got);
    assert.doesNotMatch(got, /still open/);
    assert.equal(existsSync(path.join(d.workspace, 'huge.txt')), false);
  });

  test('a 100 MB upload through node http gets 413 long before it is all sent', async () => {
    const total = 100 * 1024 * 1024;
    const chunk = Buffer.alloc(1 << 20, 0x61);
    let sent = 0;
    const res = await new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: d.port, path: '/tool/write_file', method: 'POST',
                                 agent: false,
                                 headers: { 'Content-Type': 'application/json', 'Content-Length': total } });
      let answered = false;
      req.on('response', (r) => {
        answered = true;
        let text = '';
        r.on('data', (c) => { text += c; });
        r.on('end', () => { req.destroy(); resolve({ status: r.statusCode, text }); });
      });
      req.on('error', (e) => (answered ? null : reject(e)));
      // Send at most 8 MiB: the daemon answers long before, and discards up to 32 MiB in
      // flight before it closes, so the answer is never lost to a reset.
      (function pump() {
        if (answered || sent >= 8 * chunk.length) return;
        sent += chunk.length;
        if (req.write(chunk)) setImmediate(pump);
        else req.once('drain', pump);
      })();
    });
    assert.equal(res.status, 413);
    assert.match(JSON.parse(res.text).error, /32 MiB/);
    assert.ok(sent < total, `answered after ${sent} of ${total} bytes`);
  });

  test('a chunked body over the limit is cut off with 413', async () => {
    const res = await new Promise((resolve, reject) => {
      const sock = net.connect(d.port, '127.0.0.1');
      let got = '';
      let stop = false;
      sock.on('data', (c) => { got += c; if (/\r\n\r\n/.test(got)) { stop = true; sock.destroy(); resolve(got); } });
      sock.on('error', (e) => (stop ? null : reject(e)));
      sock.write(`POST /tool/write_file HTTP/1.1\r\nHost: localhost:${d.port}\r\n` +
                 'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
      const chunk = 'a'.repeat(1 << 20);
      const piece = `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
      (function pump(n) {
        if (stop || n === 0) return;
        if (sock.write(piece)) setImmediate(() => pump(n - 1));
        else sock.once('drain', () => pump(n - 1));
      })(40);
    });
    assert.match(res, /^HTTP\/1\.1 413/);
  });

  test('1000-deep JSON is refused with 400', async () => {
    const deep = '{"a":'.repeat(1000) + '1' + '}'.repeat(1000);
    jsonError(await d.call('list_dir', deep), 400, /depth|deep|nest/i);
    const arr = '['.repeat(1000) + ']'.repeat(1000);
    jsonError(await d.call('list_dir', arr), 400);
  });

  test('malformed JSON is 400 with the offset; a non-object body is 400', async () => {
    jsonError(await d.call('list_dir', '{"path": "/",'), 400, /byte \d+/);
    jsonError(await d.call('list_dir', '[]'), 400, /object/);
    jsonError(await d.call('list_dir', '"x"'), 400, /object/);
  });

  test('an empty body means {}', async () => {
    const r = await request(d.port, '/tool/list_dir', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '' });
    assert.equal(r.status, 200);
    assert.equal(r.body.result.path, '/');
  });

  test('bad, missing and extra arguments are 400 with details naming the argument', async () => {
    let r = await d.call('read_file', {});
    jsonError(r, 400, /^invalid arguments for read_file: arguments\.path/);
    assert.ok(r.body.details.some((m) => /arguments\.path/.test(m) && /required/.test(m)));
    r = await d.call('read_file', { path: 5 });
    jsonError(r, 400, /arguments\.path: expected string, got (number|integer)/);
    r = await d.call('write_file', { path: '/x', content: 'y', colour: 'red' });
    jsonError(r, 400, /arguments\.colour/);
    assert.ok(r.body.details.some((m) => /colour/.test(m)));
    r = await d.call('read_file', { path: '/x', encoding: 'hex' });
    jsonError(r, 400, /arguments\.encoding/);
    r = await d.call('search', { query: 'a', max_results: 0 });
    jsonError(r, 400, /arguments\.max_results/);
    r = await d.call('write_file', {});
    assert.ok(r.body.details.length >= 2, 'both path and content are reported');
  });

  test('an unknown tool is 404 pointing at GET /tools', async () => {
    const r = await d.call('format_disk', {});
    jsonError(r, 404, /^unknown tool: format_disk; GET \/tools lists the tools$/);
  });

  test('unknown paths are 404 and wrong methods 405 with Allow, both JSON', async () => {
    jsonError(await d.get('/nope'), 404, /POST \/tool\/<name>/);
    const page = await d.get('/');
    assert.equal(page.status, 200, 'GET / is the status page');
    assert.match(page.headers['content-type'], /^text\/html/);
    jsonError(await request(d.port, '/', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' }), 405);
    const r = await request(d.port, '/tool/read_file', { method: 'GET' });
    jsonError(r, 405, /POST/);
    assert.equal(r.headers.allow, 'POST');
    const h = await request(d.port, '/health', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    jsonError(h, 405);
    assert.equal(h.headers.allow, 'GET');
    const opt = await request(d.port, '/tool/read_file', { method: 'OPTIONS', headers: { Origin: 'https://evil.example.com' } });
    assert.equal(opt.status, 403);
    assert.equal(opt.headers['access-control-allow-origin'], undefined);
    // A CORS preflight is never granted, not even for our own origin.
    const pre = await request(d.port, '/tool/write_file', { method: 'OPTIONS', headers: {
      Origin: `http://127.0.0.1:${d.port}`, 'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'content-type' } });
    assert.equal(pre.status, 405);
    assert.equal(pre.headers['access-control-allow-origin'], undefined);
    assert.equal(pre.headers['access-control-allow-methods'], undefined);
  });
});

describe('paths', () => {
  test('traversal stays inside the workspace', async () => {
    writeFileSync(path.join(d.workspace, 'inside.txt'), 'inside');
    // "/../../etc/passwd" normalizes to "/etc/passwd" inside the workspace: not found.
    toolFailure(await d.call('read_file', { path: '/../../etc/passwd' }));
    toolFailure(await d.call('read_file', { path: '../../../../etc/passwd' }));
    const w = await d.call('write_file', { path: '/../../escape.txt', content: 'x' });
    assert.equal(w.status, 200);
    if (w.body.ok) assert.equal(w.body.result.path, '/escape.txt');
    assert.equal(existsSync(path.join(path.dirname(d.workspace), 'escape.txt')), false);
    assert.equal(existsSync('/escape.txt'), false);
    assert.equal(okText(await d.call('read_file', { path: '/sub/../inside.txt' })), 'inside');
  });

  test('backslashes, NUL characters and a 10 000-character path are refused', async () => {
    toolFailure(await d.call('read_file', { path: '\\..\\..\\etc\\passwd' }), /\//);
    toolFailure(await d.call('write_file', { path: 'a\\b.txt', content: 'x' }));
    jsonError(await d.call('read_file', '{"path":"/inside.txt\\u0000.png"}'), 400, /NUL/);
    jsonError(await d.call('write_file', '{"path":"/n.txt","content":"a\\u0000b"}'), 400, /NUL/);
    const long = '/' + 'a'.repeat(9999);
    const r = await d.call('read_file', { path: long });
    assert.ok(r.status === 400 || (r.status === 200 && r.body.ok === false), r.text);
    // Just under the limits works: 19 components of 200 bytes.
    const nearLimit = '/' + Array(19).fill('b'.repeat(200)).join('/');
    const r2 = await d.call('write_file', { path: nearLimit, content: 'x' });
    assert.equal(r2.body.ok, true, r2.text);
    const r3 = await d.call('write_file', { path: '/' + 'c'.repeat(256), content: 'x' });
    assert.equal(r3.body.ok, false, 'a 256-byte name is refused');
  });

  test('a 300-level deep tree does not crash search, list or remove', async () => {
    // Worker threads once had 100 KiB stacks; a deep walk overflowed them.
    let p = path.join(d.workspace, 'deep');
    for (let i = 0; i < 300; i++) p = path.join(p, 'd');
    mkdirSync(p, { recursive: true });
    writeFileSync(path.join(p, 'leaf.txt'), 'needle\n');
    const s = await d.call('search', { query: 'needle', path: '/deep' });
    assert.equal(s.status, 200, s.text);
    assert.equal(s.body.ok, true, s.text);
    const r = await d.call('remove', { path: '/deep', recursive: true });
    assert.equal(r.status, 200);
    rmSync(path.join(d.workspace, 'deep'), { recursive: true, force: true });
  });

  test('a symlink planted inside the workspace never leads outside it', async () => {
    const outside = mkdtempSync(path.join(os.tmpdir(), 'runboxd-outside-'));
    try {
      writeFileSync(path.join(outside, 'secret.txt'), 'SECRET-DATA\n');
      symlinkSync(path.join(outside, 'secret.txt'), path.join(d.workspace, 'link.txt'));
      symlinkSync(outside, path.join(d.workspace, 'linkdir'));
      // read: the absolute target resolves inside the workspace, where it does not exist
      const r = await d.call('read_file', { path: '/link.txt' });
      assert.ok(!(r.body.ok && r.body.result.includes('SECRET')), r.text);
      const rd = await d.call('read_file', { path: '/linkdir/secret.txt' });
      assert.ok(!(rd.body.ok && rd.body.result.includes('SECRET')), rd.text);
      // write through the links: never lands outside
      await d.call('write_file', { path: '/link.txt', content: 'overwritten' });
      await d.call('write_file', { path: '/linkdir/secret.txt', content: 'overwritten' });
      await d.call('write_file', { path: '/linkdir/new.txt', content: 'planted' });
      assert.equal(readFileSync(path.join(outside, 'secret.txt'), 'utf8'), 'SECRET-DATA\n');
      assert.equal(existsSync(path.join(outside, 'new.txt')), false);
      // list: the link is shown as a link, its target's entries are not listed
      const l = await d.call('list_dir', { path: '/linkdir' });
      assert.ok(!(l.body.ok && l.body.result.entries.some((e) => e.name === 'secret.txt')), l.text);
      const root = await d.call('list_dir', { path: '/' });
      const le = root.body.result.entries.find((e) => e.name === 'linkdir');
      if (le) assert.equal(le.type, 'symlink');
      // search: does not follow the links
      const s = await d.call('search', { query: 'SECRET' });
      assert.equal(s.body.ok, true);
      assert.ok(!s.body.result.includes('SECRET-DATA'), s.body.result);
      // remove: removes the link, not the target
      await d.call('remove', { path: '/linkdir', recursive: true });
      assert.equal(readFileSync(path.join(outside, 'secret.txt'), 'utf8'), 'SECRET-DATA\n');
    } finally {
      rmSync(path.join(d.workspace, 'link.txt'), { force: true });
      rmSync(path.join(d.workspace, 'linkdir'), { force: true });
      rmSync(outside, { recursive: true, force: true });
    }
  });

  test('reading a directory, writing over a directory, removing "/" fail clearly', async () => {
    mkdirSync(path.join(d.workspace, 'adir', 'kid'), { recursive: true });
    toolFailure(await d.call('read_file', { path: '/adir' }), /directory/);
    toolFailure(await d.call('write_file', { path: '/adir', content: 'x' }), /directory/);
    assert.ok(lstatSync(path.join(d.workspace, 'adir')).isDirectory());
    assert.ok(existsSync(path.join(d.workspace, 'adir', 'kid')));
    toolFailure(await d.call('remove', { path: '/' }));
    toolFailure(await d.call('remove', { path: '/', recursive: true }));
    toolFailure(await d.call('remove', { path: '/..', recursive: true }));
    assert.ok(existsSync(path.join(d.workspace, 'adir', 'kid')));
    toolFailure(await d.call('read_file', { path: '/missing.txt' }));
    toolFailure(await d.call('list_dir', { path: '/inside.txt' }), /file/);
  });

  test('non-UTF-8 content: base64 in, utf8 read refused with the offset, base64 read back exact', async () => {
    const bytes = Buffer.from([0x50, 0x4e, 0x47, 0x0d, 0x0a, 0xff, 0x00, 0x9f, 0x41]);
    const w = await d.call('write_file', { path: '/img.png', content: bytes.toString('base64'), encoding: 'base64' });
    assert.equal(w.body.ok, true, w.text);
    const r = await d.call('read_file', { path: '/img.png' });
    toolFailure(r, /not UTF-8.*9 bytes.*offset 5.*base64/);
    const b = await d.call('read_file', { path: '/img.png', encoding: 'base64' });
    assert.equal(b.body.ok, true);
    assert.deepEqual(Buffer.from(b.body.result, 'base64'), bytes);
    toolFailure(await d.call('write_file', { path: '/bad.b64', content: 'ab$d', encoding: 'base64' }), /position 2/);
    assert.equal(existsSync(path.join(d.workspace, 'bad.b64')), false);
  });
});

function okText(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  return r.body.result;
}
