// Integration: the temporary files of writes that never finished (runboxd killed with kill -9
// in the middle of a write leaves ".<name>.rbx-XXXXXX" next to the file). A new runboxd removes
// the stale ones at start, and no tool shows them, stale or not.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';

function ok(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  return r.body.result;
}

describe('write temporaries left behind', () => {
  let dir, ws;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'runbox-temps-'));
    ws = path.join(dir, 'ws');
    mkdirSync(ws);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a write killed with kill -9 leaves nothing a tool shows, and the next start sweeps', async () => {
    // A real kill -9 in the middle of many writes, then the temporaries a kill leaves, planted
    // where such writes happen (a real kill may land between writes and leave none).
    const d1 = await startDaemon({ workspace: ws });
    const big = 'x'.repeat(1 << 20);
    const writes = [];
    for (let i = 0; i < 16; i++)
      writes.push(d1.call('write_file', { path: `/w/f${i}.txt`, content: big }).catch(() => null));
    await Promise.race(writes);
    process.kill(d1.pid, 'SIGKILL');
    await Promise.all(writes);
    await d1.stop().catch(() => {});
    mkdirSync(path.join(ws, 'src', 'deep'), { recursive: true });
    writeFileSync(path.join(ws, 'src', 'main.js'), 'needle\n');
    const old = [path.join(ws, '.notes.txt.rbx-Ab12Cd'), path.join(ws, 'src', 'deep', '.main.js.rbx-000000')];
    const fresh = path.join(ws, 'src', '.main.js.rbx-zzzzzz'); // a write in flight, say
    for (const f of [...old, fresh]) writeFileSync(f, 'needle half-written\n');
    const twoMinutesAgo = new Date(Date.now() - 120_000);
    for (const f of old) utimesSync(f, twoMinutesAgo, twoMinutesAgo);
    for (const n of readdirSync(path.join(ws, 'w')).filter((n) => n.includes('.rbx-'))) {
      utimesSync(path.join(ws, 'w', n), twoMinutesAgo, twoMinutesAgo); // what the kill left
    }
    // A name that only looks alike is the user's own file and stays.
    writeFileSync(path.join(ws, '.x.rbx-toolong1'), 'mine\n');

    const d2 = await startDaemon({ workspace: ws });
    try {
      for (const f of old) assert.equal(existsSync(f), false, `${f} survived the start`);
      assert.deepEqual(readdirSync(path.join(ws, 'w')).filter((n) => n.includes('.rbx-')), []);
      assert.equal(existsSync(fresh), true, 'a temporary a minute old may be a write in flight');
      assert.equal(existsSync(path.join(ws, '.x.rbx-toolong1')), true);

      const listing = JSON.stringify(ok(await d2.call('list_dir', { path: '/src' })));
      assert.match(listing, /main\.js/);
      assert.doesNotMatch(listing, /rbx-/);
      const root = JSON.stringify(ok(await d2.call('list_dir', {})));
      assert.match(root, /\.x\.rbx-toolong1/);
      const found = JSON.stringify(ok(await d2.call('search', { query: 'needle' })));
      assert.match(found, /\/src\/main\.js:1/);
      assert.doesNotMatch(found, /rbx-/);
      const res = await d2.get('/resources');
      assert.equal(res.status, 200, res.text);
      assert.doesNotMatch(JSON.stringify(res.body), /\.main\.js\.rbx-/);
      // The files themselves are whole: each write either happened or did not.
      for (const n of readdirSync(path.join(ws, 'w'))) {
        assert.equal(ok(await d2.call('read_file', { path: `/w/${n}` })).length, big.length);
      }
    } finally {
      await d2.stop();
    }
  });
});
