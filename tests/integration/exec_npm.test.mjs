// Integration: `npm install` in the sandbox through the egress proxy, from the registry the
// host's npm is configured with (issue 10, part 3), and the second install served from the
// cache that persists outside the workspace: it makes no connection through the proxy at all.
// Skipped, with the reason printed, only when the host's npm itself cannot reach its registry.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';

const PKG = 'is-odd@3.0.1'; // two small packages (is-odd, is-number), no install scripts

function hostNpmReaches() {
  try {
    execFileSync('npm', ['view', PKG, 'version'], { cwd: '/', stdio: 'pipe', timeout: 60000 });
    return null;
  } catch (e) {
    return `the host's npm cannot reach its registry (${String(e.stderr || e.message).split('\n')[0]})`;
  }
}

function ok(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  return r.body;
}

async function served(d) {
  return (await d.get('/health')).body.sandbox.egress.served;
}

const skip = hostNpmReaches();
if (skip) console.log(`# skipping exec_npm: ${skip}`);

describe('exec: npm install through the egress proxy', { skip: skip || false }, () => {
  let d, cache;
  before(async () => {
    // A cache of this test's own, cold; 0755 so the account runboxd drops to can reach it.
    cache = mkdtempSync(path.join(os.tmpdir(), 'runbox-npm-cache-'));
    chmodSync(cache, 0o755);
    d = await startDaemon({ args: ['--cache-dir', cache] });
  });
  after(async () => {
    await d.stop();
    rmSync(cache, { recursive: true, force: true });
  });

  test('the first install fetches from the registry, the second from the cache alone', async () => {
    const caches = (await d.get('/health')).body.sandbox.caches;
    assert.deepEqual(caches, { npm: path.join(cache, 'npm'), pip: path.join(cache, 'pip') });
    ok(await d.call('write_file', { path: '/package.json', content: '{"name":"t","version":"1.0.0"}\n' }));
    const before1 = await served(d);
    const first = ok(await d.call('exec', { command: `npm install --no-audit --no-fund ${PKG}`,
                                            timeout_ms: 100000 })).structured;
    assert.equal(first.exit_code, 0, first.stderr);
    assert.ok((await served(d)) > before1, 'the first install made no connection through the proxy');
    assert.ok(existsSync(path.join(d.workspace, 'node_modules', 'is-odd', 'package.json')));
    // The cache is outside the workspace, in --cache-dir.
    assert.ok(readdirSync(path.join(cache, 'npm')).includes('_cacache'));
    assert.ok(!existsSync(path.join(d.workspace, '.npm')));
    const run = ok(await d.call('exec', { command: 'node -e "console.log(require(\'is-odd\')(7))"' }));
    assert.equal(run.structured.stdout, 'true\n');

    ok(await d.call('exec', { command: 'rm -rf node_modules package-lock.json' }));
    const before2 = await served(d);
    const second = ok(await d.call('exec', {
      command: `npm install --no-audit --no-fund --prefer-offline ${PKG}`, timeout_ms: 100000 })).structured;
    assert.equal(second.exit_code, 0, second.stderr);
    assert.equal(await served(d), before2, 'the second install went to the registry');
    assert.ok(existsSync(path.join(d.workspace, 'node_modules', 'is-number', 'package.json')));
  });
});
