// Integration: operation_id on the daemon's own write tools (exec, remove, checkpoint,
// expose_port; docs/tools.md says which and why): a repeat within the window gets the first
// answer, marked replayed, without acting twice; a repeat that waits behind a still-running
// first call ends when its client goes away; a call that was cancelled is not remembered.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';

import { request, startDaemon } from '../lib/daemon.mjs';
import { until } from '../lib/wait.mjs';

let d;
before(async () => { d = await startDaemon(); });
after(async () => { await d.stop(); });

function ok(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  return r.body;
}

async function longInUse() {
  return (await request(d.port, '/health')).body.calls.long.in_use;
}

// Waits until n long calls are in progress (a condition, not a time).
function waitLong(n) {
  return until(`${n} long calls in progress`, async () => (await longInUse()) === n,
               { every: 5, describe: async () => `now ${await longInUse()}` });
}

test('exec: a repeat with the same operation_id answers again without running twice', async () => {
  // Relative paths: the command starts in the workspace (/ of the file tools).
  const args = { command: 'echo run >> log.txt; wc -l < log.txt', operation_id: 'exec-once' };
  const first = ok(await d.call('exec', args));
  assert.match(first.result, /^1\n/);
  const again = ok(await d.call('exec', args));
  assert.equal(again.result, first.result, 'the same text');
  assert.equal(again.structured.replayed, true);
  assert.equal(again.structured.pid, first.structured.pid);
  assert.equal(ok(await d.call('read_file', { path: '/log.txt' })).result, 'run\n', 'ran once');
  // Another id is another operation.
  ok(await d.call('exec', { ...args, operation_id: 'exec-twice' }));
  assert.equal(ok(await d.call('read_file', { path: '/log.txt' })).result, 'run\nrun\n');
});

test('remove and checkpoint: the repeat gets the first answer, not "no such file" or a second checkpoint', async () => {
  ok(await d.call('write_file', { path: '/gone.txt', content: 'x' }));
  const first = ok(await d.call('remove', { path: '/gone.txt', operation_id: 'rm-1' }));
  const again = ok(await d.call('remove', { path: '/gone.txt', operation_id: 'rm-1' }));
  assert.deepEqual(again.result, { replayed: true, ...first.result });
  const plain = await d.call('remove', { path: '/gone.txt' });
  assert.equal(plain.body.ok, false, 'without operation_id the remove runs, and fails');
  const before = ok(await d.call('list_checkpoints', {})).result.checkpoints.length;
  const c1 = ok(await d.call('checkpoint', { message: 'm', operation_id: 'cp-1' }));
  const c2 = ok(await d.call('checkpoint', { message: 'm', operation_id: 'cp-1' }));
  assert.equal(c2.structured.id, c1.structured.id);
  assert.equal(c2.structured.replayed, true);
  assert.equal(c2.result, c1.result, 'the same text');
  assert.equal(ok(await d.call('list_checkpoints', {})).result.checkpoints.length, before + 1);
});

test('a repeat waiting for its first call ends when its client goes away; the first goes on', async () => {
  const args = { command: 'while [ ! -f go ]; do sleep 0.02; done; echo finished',
                 operation_id: 'wait-1' };
  const base = await longInUse();
  const first = d.call('exec', args);
  await waitLong(base + 1);
  // The repeat: a raw request we can drop.
  const body = JSON.stringify(args);
  const req = http.request({ host: '127.0.0.1', port: d.port, path: '/tool/exec', method: 'POST',
                             headers: { 'Content-Type': 'application/json',
                                        'Content-Length': Buffer.byteLength(body) } });
  req.on('error', () => {});
  req.end(body);
  await waitLong(base + 2);
  req.destroy();
  await waitLong(base + 1); // the repeat ended; the first still waits for /go
  ok(await d.call('write_file', { path: '/go', content: '' }));
  const r = ok(await first);
  assert.match(r.result, /finished/);
  // The first call's answer is kept: a later repeat gets it.
  const again = ok(await d.call('exec', args));
  assert.equal(again.structured.replayed, true);
  assert.match(again.result, /finished/);
});
