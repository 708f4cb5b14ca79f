// tests/e2e/proxy_autostart.test.mjs - with DAEMON_URL unset, runbox starts runboxd itself when
// nothing answers at 127.0.0.1:7766; with DAEMON_URL set or --no-autostart it never does.
//
// These tests need the default port 7766 free (they are skipped, with the reason, when it is
// not). HOME and XDG_* point at temporary directories, so the started daemon's workspace and
// log land there; the daemon is stopped at the end (GET /health gives its pid).
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync,
         writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { request, runboxdPath } from '../lib/daemon.mjs';
import { resultError, resultText, runboxPath, startProxy } from '../lib/proxy.mjs';

const PORT = 7766;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function portFree(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

async function health() {
  try {
    const r = await request(PORT, '/health');
    return r.status === 200 ? r.body : null;
  } catch {
    return null;
  }
}

async function stopStartedDaemon() {
  const h = await health();
  if (!h || !h.pid) return;
  process.kill(h.pid, 'SIGTERM');
  // Until the port no longer answers, however long the stop takes: the next test needs it free.
  while (await health()) await sleep(50);
}

const skipReason = (await portFree(PORT))
  ? false
  : `127.0.0.1:${PORT} is in use; autostart can only be tested when the default port is free`;

let tmp;
let env;
const proxies = [];

// A private bin dir: a copy of runbox (so /proc/self/exe points here) beside a link to runboxd.
function makeBin(withDaemon) {
  const bin = mkdtempSync(path.join(tmp, 'bin-'));
  copyFileSync(runboxPath(), path.join(bin, 'runbox'));
  if (withDaemon) symlinkSync(path.resolve(runboxdPath()), path.join(bin, 'runboxd'));
  return path.join(bin, 'runbox');
}

function proxy(bin, extra = {}, args = []) {
  const p = startProxy({ bin: bin || undefined, env: { ...env, ...extra }, args });
  proxies.push(p);
  return p;
}

before(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'runbox-autostart-'));
  env = {
    HOME: path.join(tmp, 'home'),
    XDG_STATE_HOME: path.join(tmp, 'state'),
    XDG_DATA_HOME: path.join(tmp, 'data'),
    XDG_CONFIG_HOME: path.join(tmp, 'config'),
    PATH: '/usr/bin:/bin', // no runboxd here, unless installed system-wide (checked below)
  };
  mkdirSync(env.HOME);
});

after(async () => {
  for (const p of proxies) p.kill();
  if (!skipReason) await stopStartedDaemon();
  rmSync(tmp, { recursive: true, force: true });
});

describe('autostart', { skip: skipReason }, () => {
  test('DAEMON_URL set: nothing is started and the call says what to do', async () => {
    const p = proxy(null, { DAEMON_URL: `http://127.0.0.1:${PORT}` });
    await p.initialize();
    const r = await p.callTool('list_dir', {});
    assert.equal(r.isError, true);
    assert.match(resultError(r).error, /not reachable at http:\/\/127\.0\.0\.1:7766/);
    await p.close();
    assert.equal(await portFree(PORT), true, 'something was started');
  });

  test('--no-autostart: nothing is started', async () => {
    const p = proxy(makeBin(true), {}, ['--no-autostart']);
    await p.initialize();
    const r = await p.callTool('list_dir', {});
    assert.equal(r.isError, true);
    assert.match(resultError(r).error, /not reachable/);
    await p.close();
    assert.equal(await portFree(PORT), true, 'something was started');
  });

  test('no runboxd to be found: the call fails at once and says why', async (t) => {
    if (['/usr/bin/runboxd', '/bin/runboxd'].some(existsSync))
      return t.skip('runboxd is installed system-wide');
    const p = proxy(makeBin(false));
    await p.initialize();
    const r = await p.callTool('list_dir', {});
    assert.equal(r.isError, true);
    const e = resultError(r).error;
    // Not "did not answer": the proxy knew at once that there was nothing to start.
    assert.match(e, /^could not start runboxd: runboxd was found neither beside runbox/);
    assert.match(e, /see .*state\/runbox\/runboxd\.log$/);
    await p.close();
  });

  test('runboxd exits at once: the call says with what status, and what its log says', async () => {
    const cfgDir = path.join(env.XDG_CONFIG_HOME, 'runbox');
    mkdirSync(cfgDir, { recursive: true });
    writeFileSync(path.join(cfgDir, 'config.json'), '{"port": "seven"}');
    try {
      const p = proxy(makeBin(true));
      await p.initialize();
      const r = await p.callTool('list_dir', {});
      assert.equal(r.isError, true);
      const e = resultError(r).error;
      // Not a 2 s wait and "did not answer": the exit was seen as it happened.
      assert.match(e, /^could not start runboxd: runboxd exited with status 2 right after it was started; its log says: runboxd: .*config\.json/);
      assert.match(e, /see .*state\/runbox\/runboxd\.log$/);
      await p.close();
    } finally {
      rmSync(path.join(cfgDir, 'config.json'));
    }
    assert.equal(await portFree(PORT), true);
  });

  test('another program on 127.0.0.1:7766 is named as such, not passed on as HTML', async () => {
    const srv = http.createServer((req, res) => {
      res.writeHead(501, { 'Content-Type': 'text/html' });
      res.end('<!DOCTYPE HTML>\n<html><head><title>Error response</title></head></html>\n');
    });
    await new Promise((r) => srv.listen(PORT, '127.0.0.1', r));
    try {
      const p = proxy(makeBin(true));
      await p.initialize();
      const r = await p.callTool('list_dir', {});
      assert.equal(r.isError, true);
      assert.equal(resultError(r).error,
                   'something else answers on 127.0.0.1:7766 — not runboxd (HTTP 501: ' +
                   '<!DOCTYPE HTML> <html><head><title>Error response</title></head></html> ); ' +
                   'stop it or set DAEMON_URL to where runboxd listens');
      await p.close();
    } finally {
      await new Promise((r) => srv.close(r));
    }
  });

  test('runbox starts runboxd, calls wait for it, ping is answered meanwhile', async () => {
    const p = proxy(makeBin(true));
    await p.initialize();
    const calls = [
      p.callTool('write_file', { path: '/auto.txt', content: 'started' }),
      p.callTool('list_dir', {}),
    ];
    const ping = await p.request('ping');
    assert.deepEqual(ping.result, {});
    const [w, l] = await Promise.all(calls);
    assert.equal(w.isError, false, resultText(w));
    assert.equal(l.isError, false, resultText(l));
    const r = await p.callTool('read_file', { path: '/auto.txt' });
    assert.equal(resultText(r), 'started');

    const h = await health();
    assert.ok(h && h.ok, 'the started daemon answers /health');
    assert.ok(h.workspace.startsWith(env.XDG_DATA_HOME), `workspace ${h.workspace}`);
    const log = path.join(env.XDG_STATE_HOME, 'runbox', 'runboxd.log');
    assert.ok(existsSync(log), 'the daemon log exists');
    assert.match(readFileSync(log, 'utf8'), /listening on/);

    // The daemon outlives the proxy that started it (detached, own session).
    const { code } = await p.close();
    assert.equal(code, 0);
    assert.deepEqual(p.badLines, []);
    await sleep(100);
    assert.ok(await health(), 'the daemon is still running after runbox exited');
    await stopStartedDaemon();
  });
});
