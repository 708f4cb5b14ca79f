// Integration: absolute workspace paths inside exec (issue 10, part 2). write_file /hello.js then
// exec `node /hello.js` prints what the file prints; system paths keep their meaning; a
// workspace folder named like a system directory stays reachable under /workspace; and the
// workspace gains nothing from the links.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';

function ok(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  return r.body;
}

async function sh(d, command) {
  const r = ok(await d.call('exec', { command }));
  return r.structured;
}

describe('exec: workspace paths at the root', () => {
  let d;
  before(async () => { d = await startDaemon(); });
  after(async () => { await d.stop(); });

  test('node /hello.js runs the file write_file /hello.js wrote', async () => {
    ok(await d.call('write_file', { path: '/hello.js', content: 'console.log("hi from", 6 * 7)\n' }));
    const r = await sh(d, 'node /hello.js');
    assert.equal(r.exit_code, 0, r.stderr);
    assert.equal(r.stdout, 'hi from 42\n');
  });

  test('files in folders, and a rename over a file, are seen through the root path', async () => {
    ok(await d.call('write_file', { path: '/src/a.py', content: 'print("a")\n' }));
    let r = await sh(d, 'python3 /src/a.py && cat /src/a.py | wc -l');
    assert.equal(r.stdout, 'a\n1\n', r.stderr);
    // An atomic replace inside /workspace is what /src/a.py shows next (a link, not a bind).
    r = await sh(d, 'printf \'print("b")\\n\' > /workspace/src/t && mv /workspace/src/t /workspace/src/a.py && python3 /src/a.py');
    assert.equal(r.stdout, 'b\n', r.stderr);
    // Writing through the root path writes the workspace file.
    r = await sh(d, 'echo more >> /hello.js && tail -n 1 /workspace/hello.js');
    assert.equal(r.stdout, 'more\n');
    const read = ok(await d.call('read_file', { path: '/hello.js' }));
    assert.match(read.result, /more\n$/);
  });

  test('system paths keep working and a workspace usr/ is reachable under /workspace', async () => {
    ok(await d.call('write_file', { path: '/usr/mine.txt', content: 'mine\n' }));
    ok(await d.call('write_file', { path: '/tmp/x.txt', content: 'ws tmp\n' }));
    const r = await sh(d, 'test -x /usr/bin/env && test -e /etc/passwd && test -d /proc/self && ' +
                          'test -c /dev/null && echo t > /tmp/t && cat /workspace/usr/mine.txt && ' +
                          'cat /workspace/tmp/x.txt && (cat /usr/mine.txt 2>/dev/null || echo no-usr-link)');
    assert.equal(r.exit_code, 0, r.stderr);
    assert.equal(r.stdout, 'mine\nws tmp\nno-usr-link\n');
  });

  test('files created under /workspace appear to the file tools at once; the workspace gains nothing', async () => {
    const r = await sh(d, 'mkdir -p /workspace/made && echo fresh > /workspace/made/f.txt && ls /');
    assert.equal(r.exit_code, 0, r.stderr);
    const read = ok(await d.call('read_file', { path: '/made/f.txt' }));
    assert.equal(read.result, 'fresh\n');
    // The links live in the sandbox's own root: the workspace holds only what was written.
    assert.deepEqual(readdirSync(d.workspace).sort(), ['hello.js', 'made', 'src', 'tmp', 'usr']);
    // A new top-level entry is at the root in the next command.
    const next = await sh(d, 'cat /made/f.txt');
    assert.equal(next.stdout, 'fresh\n');
    // A root path that does not exist in the workspace fails as usual.
    const miss = await sh(d, 'cat /nope.txt');
    assert.notEqual(miss.exit_code, 0);
    assert.match(miss.stderr, /No such file/);
  });
});
