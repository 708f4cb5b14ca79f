// Integration: runboxd as a server - keep-alive, concurrency, signals, the token, the
// command line and config file, a taken port, and dropping root.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';

import { request, runRunboxd, startDaemon } from '../lib/daemon.mjs';
import { until } from '../lib/wait.mjs';

function tmpdir(tag) {
  return mkdtempSync(path.join(os.tmpdir(), `runboxd-${tag}-`));
}

describe('connections', () => {
  test('several requests travel on one keep-alive socket', async () => {
    const d = await startDaemon();
    try {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const sockets = new Set();
      for (let i = 0; i < 5; i++) {
        const r = await request(d.port, '/tool/write_file', {
          method: 'POST', agent, headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ path: `/k${i}.txt`, content: `${i}` }) });
        assert.equal(r.status, 200);
        assert.equal(r.body.ok, true);
        assert.notEqual(r.headers.connection, 'close');
        sockets.add(r.socket);
      }
      const h = await request(d.port, '/health', { agent });
      sockets.add(h.socket);
      assert.equal(sockets.size, 1, 'all requests used one socket');
      agent.destroy();
    } finally {
      await d.stop();
    }
  });

  test('answers on a connection that stays open say how long it may idle (Keep-Alive: timeout=5)', async () => {
    // Without it a keep-alive client cannot know that runboxd closes an idle connection after
    // 5 s, and a request it sends into one that is being closed gets no answer ("socket hang
    // up"). Node's http.Agent with a timeout and undici stop reusing a socket before the hint.
    const d = await startDaemon();
    try {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const json = { 'Content-Type': 'application/json' };
      const answers = [
        await request(d.port, '/health', { agent }),
        await request(d.port, '/tool/list_dir', { method: 'POST', agent, headers: json, body: '{}' }),
        await request(d.port, '/tool/no_such_tool', { method: 'POST', agent, headers: json, body: '{}' }),
        await request(d.port, '/nowhere', { agent }),
      ];
      agent.destroy();
      assert.deepEqual(answers.map((r) => [r.status, r.headers['keep-alive']]),
                       [[200, 'timeout=5'], [200, 'timeout=5'], [404, 'timeout=5'], [404, 'timeout=5']]);
      // A client that said Connection: close (the helper's default) is promised nothing.
      const closing = await request(d.port, '/health');
      assert.equal(closing.headers['keep-alive'], undefined);
      // Nor is one whose answer ends the connection: a body over the limit gets 413 and close.
      const head = await new Promise((resolve, reject) => {
        const sock = net.connect(d.port, '127.0.0.1');
        let got = '';
        sock.on('data', (c) => {
          got += c;
          if (got.includes('\r\n\r\n')) {
            sock.destroy();
            resolve(got.slice(0, got.indexOf('\r\n\r\n')));
          }
        });
        sock.on('error', reject);
        sock.write(`POST /tool/write_file HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\n` +
                   'Content-Type: application/json\r\nContent-Length: 40000000\r\n\r\n');
      });
      assert.match(head, /^HTTP\/1\.1 413 /);
      assert.match(head, /\r\nConnection: close(\r\n|$)/);
      assert.doesNotMatch(head, /Keep-Alive/i);
    } finally {
      await d.stop();
    }
  });

  test('pipelined requests on a raw socket are all answered in order', async () => {
    const d = await startDaemon();
    try {
      const body = JSON.stringify({ path: '/' });
      const one = `POST /tool/list_dir HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\n` +
                  `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
      const text = await new Promise((resolve, reject) => {
        const sock = net.connect(d.port, '127.0.0.1');
        let got = '';
        sock.on('data', (c) => {
          got += c;
          if ((got.match(/HTTP\/1\.1 200/g) || []).length === 3 && got.endsWith('}')) {
            sock.end();
            resolve(got);
          }
        });
        sock.on('error', reject);
        sock.on('close', () => reject(new Error(`closed early after: ${got}\n${d.stderr()}`)));
        sock.write(one + one + one);
      });
      assert.equal((text.match(/"ok":true/g) || []).length, 3);
    } finally {
      await d.stop();
    }
  });

  test('Expect: 100-continue gets the interim answer, then the real one', async () => {
    const d = await startDaemon();
    try {
      const body = JSON.stringify({ path: '/e.txt', content: 'expected' });
      const text = await new Promise((resolve, reject) => {
        const sock = net.connect(d.port, '127.0.0.1');
        let got = '';
        let sentBody = false;
        sock.on('data', (c) => {
          got += c;
          if (!sentBody && got.includes('\r\n\r\n')) { sentBody = true; sock.write(body); }
          if (/\r\n\r\n[^]*\r\n\r\n\{[^]*\}$/.test(got)) { sock.end(); resolve(got); }
        });
        sock.on('error', reject);
        sock.write(`POST /tool/write_file HTTP/1.1\r\nHost: 127.0.0.1:${d.port}\r\n` +
                   `Content-Type: application/json\r\nExpect: 100-continue\r\n` +
                   `Content-Length: ${body.length}\r\n\r\n`);
      });
      assert.match(text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
      assert.match(text, /"created":true/);
      assert.equal(readFileSync(path.join(d.workspace, 'e.txt'), 'utf8'), 'expected');
    } finally {
      await d.stop();
    }
  });

  test('50 concurrent requests all succeed', async () => {
    const d = await startDaemon();
    try {
      const calls = [];
      for (let i = 0; i < 50; i++) {
        calls.push(d.call('write_file', { path: `/c/${i}.txt`, content: `n${i}` })
          .then(() => d.call('read_file', { path: `/c/${i}.txt` })));
      }
      const res = await Promise.all(calls);
      res.forEach((r, i) => {
        assert.equal(r.status, 200);
        assert.equal(r.body.result, `n${i}`);
      });
      const l = await d.call('list_dir', { path: '/c' });
      assert.equal(l.body.result.total, 50);
    } finally {
      await d.stop();
    }
  });

  test('SIGTERM during a steady stream of requests exits 0', async () => {
    const d = await startDaemon();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    let stop = false;
    let answered = 0;
    let streaming;
    const flowing = new Promise((r) => { streaming = r; });
    const loops = [0, 1, 2, 3].map(async () => {
      while (!stop) {
        try {
          await request(d.port, '/tool/list_dir', { method: 'POST', agent,
                                                    headers: { 'Content-Type': 'application/json' }, body: '{}' });
        } catch { return; }
        if (++answered === 20) streaming();
      }
    });
    // The signal comes while requests are flowing on all four kept-alive connections.
    await flowing;
    // The clients go on until runboxd has exited, so a daemon that waited for them to leave
    // would never exit (and d.stop() never resolve): it must end the connections itself.
    const res = await d.stop();
    stop = true;
    await Promise.all(loops);
    agent.destroy();
    assert.deepEqual(res, { code: 0, signal: null });
  });
});

describe('long calls', () => {
  test('many long calls at once: /health and quick tools still answer while they run; past 24 they are refused as busy', async () => {
    const d = await startDaemon({ args: ['--exec-concurrent-max', '8'] });
    try {
      // 30 foreground execs, each on its own connection (each holds a civetweb worker). Each
      // waits for /workspace/go, which is written only after /health and list_dir answered: if
      // those waited behind the execs, they would answer only once execs ended by their
      // timeout, and "no exec had ended" below says so. Nothing here depends on how fast the
      // machine is.
      const calls = [];
      const settled = [];
      let busyCount = 0;
      let allIn;
      const admitted = new Promise((r) => { allIn = r; });
      for (let i = 0; i < 30; i++) {
        calls.push(d.call('exec', {
          command: 'while [ ! -e /workspace/go ]; do sleep 0.05; done; echo released',
          timeout_ms: 100000,
        }).then((r) => {
          settled.push(r);
          if (!r.body.ok && ++busyCount === 6) allIn();
          return r;
        }));
      }
      // The 6 past the budget are refused at once; the 24 admitted cannot end before go exists.
      // So once 6 are refused, all 30 are in.
      await admitted;
      const h = await d.get('/health');
      assert.equal(h.status, 200);
      const l = await d.call('list_dir', { path: '/' });
      assert.equal(l.body.ok, true, l.text);
      assert.deepEqual(settled.filter((r) => r.body.ok), [],
                       '/health and list_dir answered while the 24 long calls still ran');
      assert.equal((await d.call('write_file', { path: '/go', content: '' })).body.ok, true);
      const done = await Promise.all(calls);
      const ran = done.filter((r) => r.body.ok);
      const busy = done.filter((r) => !r.body.ok);
      assert.equal(ran.length, 24, JSON.stringify(busy.map((r) => r.body)));
      for (const r of ran) assert.equal(r.body.result, 'released\n', JSON.stringify(r.body));
      assert.equal(busy.length, 6);
      for (const r of busy) {
        assert.equal(r.status, 200);
        assert.match(r.body.error, /^runboxd is busy: 24 calls that can take long \(exec, kill, Studio tools\) are in progress.*try again/);
      }
      // The budget is given back: a new long call runs.
      const again = await d.call('exec', { command: 'echo again' });
      assert.equal(again.body.result, 'again\n');
    } finally {
      await d.stop();
    }
  });
});

describe('token', () => {
  test('with RUNBOX_TOKEN every request needs the bearer token', async () => {
    const d = await startDaemon({ env: { RUNBOX_TOKEN: 's3cret-token' } });
    try {
      const none = await request(d.port, '/health');
      assert.equal(none.status, 401);
      assert.equal(none.body.ok, false);
      assert.match(none.body.error, /Authorization: Bearer/);
      assert.equal(none.headers['www-authenticate'], 'Bearer');
      const wrong = await request(d.port, '/tools', { headers: { Authorization: 'Bearer s3cret-tokex' } });
      assert.equal(wrong.status, 401);
      const longer = await request(d.port, '/tools', { headers: { Authorization: 'Bearer s3cret-token2' } });
      assert.equal(longer.status, 401);
      const basic = await request(d.port, '/tools', { headers: { Authorization: 'Basic s3cret-token' } });
      assert.equal(basic.status, 401);
      const ok = await d.call('write_file', { path: '/t.txt', content: 'x' }); // helper sends the token
      assert.equal(ok.status, 200);
      assert.equal(ok.body.ok, true);
      // Host and Origin are still checked first.
      const host = await request(d.port, '/health', { headers: { Host: 'evil.test', Authorization: 'Bearer s3cret-token' } });
      assert.equal(host.status, 403);
      assert.doesNotMatch(d.stderr(), /s3cret/);
    } finally {
      await d.stop();
    }
  });

  test('--token-file reads the token (trailing newline dropped) and beats RUNBOX_TOKEN', async () => {
    const dir = tmpdir('token');
    try {
      const file = path.join(dir, 'token');
      writeFileSync(file, 'from-file\n');
      chmodSync(file, 0o600);
      const d = await startDaemon({ args: ['--token-file', file], env: { RUNBOX_TOKEN: 'from-env' }, token: 'from-file' });
      try {
        assert.equal((await request(d.port, '/health', { headers: { Authorization: 'Bearer from-env' } })).status, 401);
        assert.equal((await request(d.port, '/health', { headers: { Authorization: 'Bearer from-file' } })).status, 200);
      } finally {
        await d.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a non-loopback --bind without a token refuses to start (exit 2)', async () => {
    const r = await runRunboxd(['--port', '0', '--workspace', ':memory:', '--bind', '0.0.0.0']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /0\.0\.0\.0.*token/);
    assert.equal(r.stdout, '');
  });
});

// The thread stacks of a process from /proc/PID/smaps: anonymous rw mappings right above a
// guard page, as glibc lays them out, with their size and resident size in KiB.
function threadStacks(pid) {
  const maps = [];
  let cur = null;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (m) {
      cur = { lo: BigInt(`0x${m[1]}`), hi: BigInt(`0x${m[2]}`), perm: m[3], inode: m[4], name: m[5], rss: 0 };
      maps.push(cur);
    } else if (cur && line.startsWith('Rss:')) {
      cur.rss = Number(line.split(/\s+/)[1]);
    }
  }
  return maps.filter((mp, i) => i > 0 && mp.perm === 'rw-p' && mp.inode === '0' && !mp.name &&
                     maps[i - 1].perm === '---p' && maps[i - 1].hi === mp.lo)
    .map((mp) => ({ kib: Number((mp.hi - mp.lo) / 1024n), rss: mp.rss }));
}

describe('libraries loaded on demand', () => {
  test('a daemon with no external server over HTTP or WebSocket maps neither libcurl nor OpenSSL', async () => {
    // They and the libraries they bring were 7.5 MiB of an idle runboxd's 19.5 MiB resident
    // memory; only the registry's HTTP and WebSocket clients use them (common/dynlib.h).
    const d = await startDaemon({ workspace: ':memory:' });
    try {
      assert.equal((await d.get('/health')).body.ok, true);
      const libs = [...new Set(readFileSync(`/proc/${d.pid}/maps`, 'utf8').split('\n')
        .map((l) => /\/([^/\s]+\.so[.\d]*)$/.exec(l)).filter(Boolean).map((m) => m[1]))];
      const loaded = libs.filter((l) => /^lib(curl|ssl|crypto|gnutls|krb5|ldap)/.test(l));
      assert.deepEqual(loaded, [], `runboxd maps ${libs.join(' ')}`);
    } finally {
      await d.stop();
    }
  });

  test('where libcurl and OpenSSL cannot be loaded, the servers needing them fail saying so', async () => {
    // A library without their entry points stands in for both (found first on LD_LIBRARY_PATH).
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'runbox-nolibs-'));
    let d = null;
    chmodSync(tmp, 0o755); // runboxd started as root loads them after dropping to nobody
    try {
      for (const name of ['libcurl.so.4', 'libssl.so.3']) {
        symlinkSync(process.env.RUNBOX_EMPTY_LIB, path.join(tmp, name));
      }
      writeFileSync(path.join(tmp, 'config.json'), JSON.stringify({ mcpServers: {
        h: { url: 'http://127.0.0.1:9/mcp' },
        w: { url: 'ws://127.0.0.1:9/ws' },
      } }));
      d = await startDaemon({ workspace: ':memory:', args: ['--config', path.join(tmp, 'config.json')],
                              env: { LD_LIBRARY_PATH: tmp } });
      let by = {};
      await until('both servers failed', async () => {
        by = Object.fromEntries((await d.get('/mcp-servers')).body.servers.map((s) => [s.name, s]));
        return by.h?.last_error && by.w?.last_error;
      });
      assert.match(by.h.last_error, /libcurl lacks curl_/);
      assert.match(by.w.last_error, /OpenSSL lacks /);
      assert.equal((await d.get('/health')).body.ok, true); // and the daemon serves on
    } finally {
      await d?.stop();
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

describe('worker thread stacks', () => {
  test('every thread has at least 1 MiB of stack, and only touched pages count', async () => {
    // civetweb (as Debian builds it) asks for 100 KiB stacks; runboxd raises them to 1 MiB,
    // since a deep search does not fit in 100 KiB. Many workers must stay cheap: a stack's
    // untouched pages cost nothing.
    const d = await startDaemon({ workspace: ':memory:' });
    try {
      const threads = Number(/^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${d.pid}/status`, 'utf8'))[1]);
      const stacks = threadStacks(d.pid);
      const big = stacks.filter((st) => st.kib >= 1024);
      assert.ok(threads > 8, `runboxd has ${threads} threads`);
      assert.ok(big.length >= threads - 1, // all but the main thread, which has [stack]
                `${big.length} of ${threads - 1} thread stacks are >= 1 MiB: ${JSON.stringify(stacks)}`);
      // (ThreadSanitizer's runtime maps and touches regions of the same shape: not counted.)
      const maps = readFileSync(`/proc/${d.pid}/maps`, 'utf8');
      if (!/libtsan/.test(maps)) {
        const rss = big.reduce((n, st) => n + st.rss, 0);
        assert.ok(rss < big.length * 256, `${big.length} stacks hold ${rss} KiB`);
      }
      // An idle worker's stack is two pages: glibc's thread descriptor and static TLS on the
      // top one, civetweb's start of the thread (its deepest frame is vfprintf, naming the
      // thread) on the next, 8 168 bytes down. Thread-local storage of runboxd's own, or a
      // library with initial-exec TLS linked at start, pushes that onto a third page: 4 KiB
      // more for each of the 320 workers. (Sanitizer runtimes deepen every frame: not counted.)
      if (!/lib(tsan|asan|ubsan)/.test(maps)) {
        const workers = stacks.filter((st) => st.kib === 1024); // the others have 8 MiB
        const over = workers.filter((st) => st.rss > 8);
        assert.ok(workers.length >= 320, `${workers.length} worker stacks`);
        assert.ok(over.length <= 4, `${over.length} of ${workers.length} worker stacks hold more than ` +
                  `8 KiB (${JSON.stringify(over.slice(0, 8))})`); // the few that served a request
      }
      // And the depth they are for: a search 200 directories deep answers.
      const deep = Array.from({ length: 200 }, (_, i) => `d${i}`).join('/');
      assert.equal((await d.call('write_file', { path: `/${deep}/f.txt`, content: 'needle' })).body.ok, true);
      const r = await d.call('search', { query: 'ne+dle', regex: true });
      assert.equal(r.body.ok, true, r.text);
      assert.match(JSON.stringify(r.body.result), /f\.txt/);
    } finally {
      await d.stop();
    }
  });
});

describe('a small stack limit', () => {
  test('a soft `ulimit -s 64` neither crashes runboxd nor shrinks its threads\' stacks', async () => {
    // glibc sizes threads made without attributes by RLIMIT_STACK, and main's own frame is over
    // 64 KiB: with this limit runboxd crashed at once (SIGSEGV before its first line).
    const { spawn } = await import('node:child_process');
    const cache = mkdtempSync(path.join(os.tmpdir(), 'runboxd-ulimit-'));
    chmodSync(cache, 0o755);
    const child = spawn('sh', ['-c', 'ulimit -S -s 64 && exec "$0" "$@"', process.env.RUNBOXD,
                               '--port', '0', '--workspace', ':memory:', '--cache-dir', path.join(cache, 'c')],
                        { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, XDG_CONFIG_HOME: cache } });
    let out = '', err = '';
    child.stderr.on('data', (c) => { err += c; });
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    try {
      const port = await Promise.race([
        new Promise((resolve) => child.stdout.on('data', (c) => {
          out += c;
          const m = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
          if (m) resolve(Number(m[1]));
        })),
        exited.then((e) => { throw new Error(`runboxd ended before it listened: ${JSON.stringify(e)} ${err}`); }),
      ]);
      const h = await request(port, '/health');
      assert.equal(h.status, 200);
      const threads = Number(/^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]);
      const big = threadStacks(child.pid).filter((st) => st.kib >= 1024);
      assert.ok(threads > 8 && big.length >= threads - 1, `${big.length} of ${threads - 1} thread stacks are >= 1 MiB`);
      const r = await request(port, '/tool/write_file', { method: 'POST', headers: { 'Content-Type': 'application/json' },
                                                           body: JSON.stringify({ path: '/a.txt', content: 'x' }) });
      assert.equal(r.status, 200, r.text);
    } finally {
      child.kill('SIGTERM');
    }
    assert.deepEqual(await exited, { code: 0, signal: null });
    rmSync(cache, { recursive: true, force: true });
  });

  test('a hard `ulimit -s 64`, which cannot be raised, is an error that says what to do', async () => {
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync('sh', ['-c', 'ulimit -s 64 && exec "$0" --port 0 --workspace :memory:', process.env.RUNBOXD],
                        { encoding: 'utf8', timeout: 20000 });
    assert.equal(r.status, 2, `${r.signal} ${r.stderr}`);
    assert.match(r.stderr, /^runboxd: the stack limit \(ulimit -s\) is too small .* start runboxd with ulimit -s 8192\n$/);
  });
});

describe('command line and config file', () => {
  test('--bind ::1 is refused at start where civetweb has no IPv6 (Debian\'s), saying so', async () => {
    const r = await runRunboxd(['--port', '0', '--workspace', ':memory:', '--bind', '::1'],
                               { until: /listening on/ });
    if (/listening on http:\/\/\[::1\]/.test(r.stdout)) return; // a civetweb built with IPv6
    assert.equal(r.code, 2, JSON.stringify(r));
    assert.match(r.stderr, /--bind ::1: this runboxd's HTTP server \(civetweb, as Debian 12 builds it\) has no IPv6; bind to an IPv4 address such as 127\.0\.0\.1/);
    assert.doesNotMatch(r.stderr, /Failed to setup server ports/);
    assert.equal(r.stdout, '');
  });

  test('--help and --version exit 0', async () => {
    const h = await runRunboxd(['--help']);
    assert.equal(h.code, 0);
    for (const f of ['--port', '--bind', '--workspace', '--config', '--allow-network', '--log-level', '--user',
                     '--no-fsync', '--token-file', '--version'])
      assert.ok(h.stdout.includes(f), f);
    assert.match(h.stdout, /--allow-network\s+\S/); /* the flag is explained, not just listed */
    const v = await runRunboxd(['--version']);
    assert.equal(v.code, 0);
    assert.match(v.stdout, /^runboxd \d+\.\d+\.\d+/);
  });

  test('bad flags exit 2 with a message naming the flag', async () => {
    for (const [args, re] of [[['--port', 'abc'], /--port/], [['--port', '70000'], /--port/],
                              [['--frobnicate'], /--frobnicate/], [['--log-level', 'loud'], /--log-level.*debug/],
                              [['--bind', 'not-an-ip'], /--bind/], [['--port'], /--port needs a value/]]) {
      const r = await runRunboxd(args);
      assert.equal(r.code, 2, `${args}: ${r.stderr}`);
      assert.match(r.stderr, re);
    }
  });

  test('the config file sets values; flags beat it; errors name the file and key', async () => {
    const dir = tmpdir('config');
    try {
      const cfg = path.join(dir, 'config.json');
      const ws = path.join(dir, 'ws');
      writeFileSync(cfg, JSON.stringify({ workspace: ws, fsync: false, allow_network: true, log_level: 'error' }));
      const d = await startDaemon({ workspace: ':memory:', args: ['--config', cfg] });
      try {
        const h = (await d.get('/health')).body;
        assert.equal(h.workspace, ':memory:', 'the --workspace flag beats the file');
        assert.equal(h.fsync, false);
        assert.equal(h.allow_network, true);
      } finally {
        await d.stop();
      }
      // The default location: $XDG_CONFIG_HOME/runbox/config.json
      const xdg = path.join(dir, 'xdg');
      const { mkdirSync } = await import('node:fs');
      mkdirSync(path.join(xdg, 'runbox'), { recursive: true });
      writeFileSync(path.join(xdg, 'runbox', 'config.json'), '{"allow_network": true}');
      const d2 = await startDaemon({ env: { XDG_CONFIG_HOME: xdg } });
      try {
        assert.equal((await d2.get('/health')).body.allow_network, true);
      } finally {
        await d2.stop();
      }
      for (const [text, re] of [['{"prot": 1}', /unknown key "prot"; did you mean "port"\? \(runboxd --help lists every key\)/],
                                ['{"port": "7766"}', /key "port": expected an integer/],
                                ['{"fsync": 1}', /key "fsync": expected true or false/],
                                ['{"port": 7766', /invalid JSON/],
                                ['[1]', /expected a JSON object/]]) {
        writeFileSync(cfg, text);
        const r = await runRunboxd(['--config', cfg, '--port', '0', '--workspace', ':memory:']);
        assert.equal(r.code, 2, text);
        assert.ok(r.stderr.includes(cfg), `names the file: ${r.stderr}`);
        assert.match(r.stderr, re);
      }
      const missing = await runRunboxd(['--config', path.join(dir, 'nope.json'), '--workspace', ':memory:']);
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /nope\.json/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a taken port exits 1 with advice', async () => {
    const d = await startDaemon();
    try {
      const r = await runRunboxd(['--port', String(d.port), '--workspace', ':memory:']);
      assert.equal(r.code, 1);
      assert.match(r.stderr, new RegExp(`port ${d.port} is in use; is another runboxd running\\? \\(GET /health\\) or pick --port`));
      assert.equal((await d.get('/health')).status, 200);
    } finally {
      await d.stop();
    }
  });

  test('the ready line is exactly one line on stdout', async () => {
    const d = await startDaemon({ args: ['--log-level', 'debug'] });
    let out = '';
    d.child.stdout.on('data', (c) => { out += c; });
    await d.call('list_dir', {});
    await d.stop();
    assert.equal(out, '', 'nothing after the ready line');
  });
});

const isRoot = process.getuid && process.getuid() === 0;

describe('privileges', { skip: !isRoot && 'not running as root' }, () => {
  function uidOf(pid) {
    const m = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m.slice(1).map(Number);
  }

  test('started as root, it serves as an unprivileged user and its files are not root\'s', async () => {
    const env = { SUDO_UID: '', SUDO_GID: '' };
    const d = await startDaemon({ env, args: ['--log-level', 'info'] });
    try {
      for (const id of uidOf(d.pid)) assert.notEqual(id, 0);
      const w = await d.call('write_file', { path: '/owned/by.txt', content: 'x' });
      assert.equal(w.body.ok, true, w.text);
      const st = statSync(path.join(d.workspace, 'owned', 'by.txt'));
      assert.notEqual(st.uid, 0);
      assert.notEqual(statSync(path.join(d.workspace, 'owned')).uid, 0);
      assert.match(d.stderr(), /serving as user nobody/);
    } finally {
      await d.stop();
    }
  });

  test('SUDO_UID picks the account; --user overrides it; an unknown user exits 2', async () => {
    const d = await startDaemon({ env: { SUDO_UID: '4242', SUDO_GID: '4343' } });
    try {
      assert.deepEqual(uidOf(d.pid), [4242, 4242, 4242, 4242]);
      await d.call('write_file', { path: '/s.txt', content: 'x' });
      const st = statSync(path.join(d.workspace, 's.txt'));
      assert.equal(st.uid, 4242);
      assert.equal(st.gid, 4343);
    } finally {
      await d.stop();
    }
    const d2 = await startDaemon({ env: { SUDO_UID: '4242' }, args: ['--user', 'nobody'] });
    try {
      assert.notEqual(uidOf(d2.pid)[0], 4242);
      assert.notEqual(uidOf(d2.pid)[0], 0);
    } finally {
      await d2.stop();
    }
    const r = await runRunboxd(['--port', '0', '--workspace', ':memory:', '--user', 'no-such-user-xyz']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /no-such-user-xyz/);
    const root = await runRunboxd(['--port', '0', '--workspace', ':memory:', '--user', 'root']);
    assert.equal(root.code, 2);
    assert.match(root.stderr, /never serves as root/);
  });
});
