// Integration: the sandbox's network by policy (issue 10, part 3). The sandbox has its own empty
// network namespace; the egress proxy at 127.0.0.1:3128 inside it is served by runboxd and lets
// through only hosts on the allow list (by default the registries the host's npm and pip use).
// Denials answer at once with the host, the rule and the flag that would allow it, in the
// command's output, its exec result and the console. Loopback, private and the host's own
// addresses are refused unless a rule names the host exactly.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { runRunboxd, startDaemon } from '../lib/daemon.mjs';

function ok(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  return r.body;
}

async function run(d, command, timeoutMs = 20000) {
  const r = ok(await d.call('exec', { command, timeout_ms: timeoutMs }));
  assert.equal(r.structured.timed_out, false, `timed out: ${command}`);
  return { text: r.result, ...r.structured };
}

// The registry host the host's own npm is configured with (what the default list must hold).
function hostNpmRegistryHost() {
  try {
    const url = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8', cwd: '/' }).trim();
    return new URL(url).host;
  } catch {
    return null;
  }
}

// A server on the host's loopback that the sandbox must never reach on its own.
function hostServer() {
  return new Promise((resolve) => {
    const srv = http.createServer((req, res) => { res.end('host-server'); });
    srv.listen(0, '127.0.0.1', () => resolve(srv));
  });
}

describe('exec network: default policy (proxy, registries only)', () => {
  let d, srv, port;
  before(async () => {
    d = await startDaemon();
    srv = await hostServer();
    port = srv.address().port;
  });
  after(async () => { await d.stop(); srv.close(); });

  test('/health shows the mode, the proxy and the registries of the host npm and pip', async () => {
    // The defaults are learnt in the background: wait for that state, not for a time.
    let e;
    for (;;) {
      e = (await d.get('/health')).body.sandbox.egress;
      if (!['resolving', 'waiting'].includes(e.defaults.state)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(e.mode, 'proxy');
    assert.equal(e.proxy, 'http://127.0.0.1:3128');
    const npmHost = hostNpmRegistryHost();
    if (npmHost) {
      const rule = e.allow.find((r) => r.rule === npmHost.replace(/:443$/, ''));
      assert.ok(rule, `${npmHost} missing from ${JSON.stringify(e.allow)}`);
      assert.equal(rule.from, 'npm config');
    }
  });

  test('the proxy variables are set and a command that ignores them reaches nothing', async () => {
    const r = await run(d, 'echo "$HTTPS_PROXY $npm_config_proxy $NO_PROXY"; ' +
                           'curl -sS --noproxy "*" -m 5 http://93.184.216.34/ 2>&1; echo rc=$?');
    assert.match(r.stdout, /^http:\/\/127\.0\.0\.1:3128 http:\/\/127\.0\.0\.1:3128 localhost,127\.0\.0\.1,::1\n/);
    // No route out of the empty namespace: it fails at once (not a timeout).
    assert.match(r.stdout, /Network is unreachable|Couldn't connect|Failed to connect/);
    assert.match(r.stdout, /rc=(7|28)/);
  });

  test('a host not on the list fails at once with the host, the rule and the flag', async () => {
    const r = await run(d, 'curl -sS -m 15 https://example.com/ -o /dev/null');
    assert.notEqual(r.exit_code, 0);
    assert.match(r.stderr, /CONNECT tunnel failed, response 403/);
    assert.match(r.text, /\[network: CONNECT example\.com:443 denied: example\.com is not on the network allow list \(.*\); allow it with --allow-domain example\.com or "network": \{"allow": \["\.\.\."\]\} in runboxd's config\.json\]/);
    assert.match(r.network, /example\.com/);
    const logs = ok(await d.call('console_logs', { level: 'warn', source: 'exec' })).result.entries;
    const entry = logs.find((e) => e.pid === r.pid && e.message.includes('example.com:443 denied'));
    assert.ok(entry, JSON.stringify(logs));
  });

  test('node speaking CONNECT gets the policy message in the status line and body', async () => {
    const script = `
      const http = require('http');
      const req = http.request({ host: '127.0.0.1', port: 3128, method: 'CONNECT', path: 'denied.example:443' });
      req.on('connect', (res, sock, head) => {
        let b = head.toString();
        sock.on('data', (c) => { b += c; });
        sock.on('end', () => console.log(res.statusCode, res.statusMessage, '|', b.trim()));
      });
      req.end();`;
    ok(await d.call('write_file', { path: '/connect.js', content: script }));
    const r = await run(d, 'node /connect.js');
    assert.match(r.stdout, /^403 Forbidden by runbox network policy \| runbox network policy: CONNECT denied\.example:443 denied: denied\.example is not on the network allow list/);
  });

  test('the host loopback, the daemon port and IP literals are unreachable', async () => {
    const direct = await run(d, `curl -sS -m 5 http://127.0.0.1:${port}/ 2>&1; echo rc=$?`);
    assert.doesNotMatch(direct.stdout, /host-server/);
    assert.match(direct.stdout, /rc=7/); // the sandbox's own loopback: connection refused
    for (const target of [`127.0.0.1:${port}`, `127.0.0.1:${d.port}`, '169.254.169.254:80', '[::1]:80']) {
      const r = await run(d, `curl -sS -m 5 --noproxy "" -x http://127.0.0.1:3128 http://${target}/ 2>&1`);
      assert.doesNotMatch(r.stdout, /host-server|"service":"runboxd"/);
      assert.match(r.text, /\[network: HTTP .* denied: the IP address .* is not on the network allow list/, r.text);
    }
  });

  test('garbage on the proxy socket gets a 400 and nothing else breaks', async () => {
    const script = `
      const s = require('net').connect(3128, '127.0.0.1');
      s.on('data', (c) => process.stdout.write(c));
      s.on('end', () => process.stdout.write('<closed>'));
      s.write(Buffer.from([0x16, 0x03, 0x01, 0xff, 0x01, 0x0d, 0x0a, 0x0d, 0x0a]));`;
    ok(await d.call('write_file', { path: '/garbage.js', content: script }));
    const r = await run(d, 'node /garbage.js');
    assert.match(r.stdout, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.match(r.stdout, /not an HTTP request line/);
    assert.match(r.stdout, /<closed>$/);
    const again = await run(d, 'curl -sS -m 5 https://example.com/ 2>&1 || true');
    assert.match(again.text, /\[network: CONNECT example\.com:443 denied/);
    assert.equal((await d.get('/health')).body.ok, true);
  });
});

// Learning the registries starts npm (a node start); the daemon must not wait for it to serve,
// and no command may run before the list is known. npm is held up by a user config file that
// is a FIFO nobody writes: npm blocks reading it until runboxd gives up on it
// (REGISTRIES_TIMEOUT_MS).
describe('exec network: the registries are learnt while the daemon serves', () => {
  let d, dir;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'runboxd-npm-hang-'));
    chmodSync(dir, 0o755);
    const fifo = path.join(dir, 'npmrc');
    execFileSync('mkfifo', ['-m', '0666', fifo]);
    d = await startDaemon({ env: { npm_config_userconfig: fifo } });
  });
  after(async () => { await d.stop(); rmSync(dir, { recursive: true, force: true }); });

  test('/health answers while npm is still being asked, and exec waits for the list', async () => {
    const first = (await d.get('/health')).body.sandbox.egress;
    assert.ok(['resolving', 'waiting'].includes(first.defaults.state), JSON.stringify(first));
    const r = await run(d, 'echo ran');
    assert.equal(r.stdout, 'ran\n');
    const e = (await d.get('/health')).body.sandbox.egress;
    assert.equal(e.defaults.state, 'ready', JSON.stringify(e));
    assert.match(e.defaults.npm, /npm config list --json failed/);
  });
});

// The discovery starts Node (npm) and Python: while the external MCP servers of the config start,
// it waits (at most 5 s), unless a command needs the list first. A server that never answers
// its initialize keeps it waiting here; the command starts it and gets the list.
describe('exec network: the registries wait while the external servers start', () => {
  let d, dir;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'runboxd-defer-'));
    chmodSync(dir, 0o755);
    const cfg = path.join(dir, 'config.json');
    writeFileSync(cfg, JSON.stringify({ mcpServers: { silent: { command: 'sleep', args: ['600'] } } }));
    d = await startDaemon({ args: ['--config', cfg] });
  });
  after(async () => { await d.stop(); rmSync(dir, { recursive: true, force: true }); });

  test('/health says waiting while a server starts; a command starts the discovery and gets the list',
       async () => {
    const first = (await d.get('/health')).body;
    assert.equal(first.mcp_servers.servers.silent, 'connecting', JSON.stringify(first.mcp_servers));
    // It waits 5 s at most, counted from a moment before the listener started (uptime_ms
    // counts from then; 2 s is room for the start between the two): a daemon up longer than
    // that when the test asks (under TSan with both cores busy) may have begun the discovery by
    // itself, which is right.
    if (first.uptime_ms < 3000)
      assert.equal(first.sandbox.egress.defaults.state, 'waiting', JSON.stringify(first.sandbox.egress));
    const r = await run(d, 'echo ran');
    assert.equal(r.stdout, 'ran\n');
    const e = (await d.get('/health')).body.sandbox.egress;
    assert.equal(e.defaults.state, 'ready', JSON.stringify(e));
    assert.ok(e.allow.some((x) => x.from === 'npm config' || x.from === 'pip config') ||
              e.defaults.npm !== null, JSON.stringify(e));
  });
});

describe('exec network: rules that name loopback', () => {
  let srv, port;
  before(async () => { srv = await hostServer(); port = srv.address().port; });
  after(() => { srv.close(); });

  test('"*" allows names but not one that resolves to 127.0.0.1', async () => {
    const d = await startDaemon({ args: ['--allow-domain', '*'] });
    try {
      const r = await run(d, `curl -sS -m 5 --noproxy "" -x http://127.0.0.1:3128 http://localhost:${port}/ 2>&1`);
      assert.doesNotMatch(r.stdout, /host-server/);
      // port is not 80/443, so '*' does not even match; on port 80 it matches and is refused.
      const r80 = await run(d, 'curl -sS -m 5 --noproxy "" -x http://127.0.0.1:3128 http://localhost/ 2>&1');
      assert.match(r80.text, /\[network: HTTP localhost:80 denied: localhost resolves to (127\.0\.0\.1|::1) \(loopback\), which the sandbox may not reach; name it exactly to allow it: --allow-domain localhost:80\]/);
    } finally {
      await d.stop();
    }
  });

  test('a name under .localhost is loopback without any resolver (RFC 6761)', async () => {
    // No /etc/hosts names app.localhost: runboxd itself maps it (and localhost) to loopback, so
    // it works on a host with no /etc/hosts at all, and reaches a server on 127.0.0.1 even when
    // ::1 comes first.
    const d = await startDaemon({ args: ['--allow-domain', `app.localhost:${port}`] });
    try {
      const r = await run(d, `curl -sS -m 5 --noproxy "" -x http://127.0.0.1:3128 http://app.localhost:${port}/x`);
      assert.equal(r.stdout, 'host-server', r.text);
    } finally {
      await d.stop();
    }
  });

  test('an exact rule for localhost:PORT reaches the host server', async () => {
    const d = await startDaemon({ args: ['--allow-domain', `localhost:${port}`] });
    try {
      const r = await run(d, `curl -sS -m 5 --noproxy "" -x http://127.0.0.1:3128 http://localhost:${port}/x`);
      assert.equal(r.stdout, 'host-server');
    } finally {
      await d.stop();
    }
  });
});

describe('exec network: --network none and bad settings', () => {
  test('--network none: even the registries are refused, saying why', async () => {
    const d = await startDaemon({ args: ['--network', 'none'] });
    try {
      const e = (await d.get('/health')).body.sandbox.egress;
      assert.equal(e.mode, 'none');
      assert.equal(e.proxy, null);
      const r = await run(d, 'curl -sS -m 5 https://registry.npmjs.org/ -o /dev/null 2>&1; echo rc=$?');
      assert.match(r.stdout, /rc=[1-9]/);
      assert.doesNotMatch(r.stdout, /rc=0/);
    } finally {
      await d.stop();
    }
  });

  for (const [args, want] of [
    [['--allow-domain', 'exa mple.com'], /--allow-domain: invalid allow-list entry "exa mple\.com": a host name has letters/],
    [['--allow-domain', 'http://x.test/'], /give a host, not a URL/],
    [['--allow-domain', 'x.test:99999'], /the port must be a number 1-65535/],
    [['--network', 'open'], /--network: expected proxy .* none or full/],
  ]) {
    test(`runboxd ${args.join(' ')} refuses to start and names the entry`, async () => {
      const r = await runRunboxd(['--port', '0', '--workspace', ':memory:', ...args]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, want);
    });
  }
});
