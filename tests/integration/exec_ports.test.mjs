// Integration: dev servers a person can open (issue 10, part 4). A background process's port in
// the sandbox's own network namespace is forwarded to a loopback port of the host: exec
// {background, ports} and expose_port answer the URL, process_list shows it, the forward ends
// with the process, nothing listening yet is a 502 page, and the Host check of the daemon's own
// port applies.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';

import { request, startDaemon } from '../lib/daemon.mjs';
import { procStat } from '../lib/procstat.mjs';
import { until } from '../lib/wait.mjs';

function ok(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  return r.body;
}

function fail(r) {
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, false, r.text);
  return r.body.error;
}

function get(url, headers = {}) {
  const u = new URL(url);
  return request(Number(u.port), u.pathname, { headers });
}

// Waits until the server in the sandbox answers through the forward (502 until it listens; a
// forward that can never answer, its sandbox's network agent gone, fails at once).
async function untilServed(url) {
  for (;;) {
    const r = await get(url);
    if (r.status !== 502) return r;
    assert.doesNotMatch(r.text, /network agent is gone/);
    await new Promise((res) => setTimeout(res, 25));
  }
}

// The children of process pid, with their command names, from /proc.
function children(pid) {
  const out = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    const s = procStat(name);
    if (s && s.ppid === pid) out.push({ pid: s.pid, comm: s.comm });
  }
  return out;
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

describe('exec: port forwards', () => {
  let d;
  before(async () => { d = await startDaemon(); });
  after(async () => { await d.stop(); });

  test('python3 -m http.server in the background is fetched from the host through its URL', async () => {
    ok(await d.call('write_file', { path: '/site/index.html', content: '<p>hello from the sandbox</p>\n' }));
    const r = ok(await d.call('exec', { command: 'python3 -m http.server 8000 --bind 127.0.0.1',
                                        cwd: '/site', background: true, ports: [8000] }));
    const pid = r.structured.pid;
    const [{ port, url }] = r.structured.urls;
    assert.equal(port, 8000);
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    assert.ok(r.result.includes(`[port 8000: ${url}]`), r.result);
    const page = await untilServed(url);
    assert.equal(page.status, 200);
    assert.equal(page.text, '<p>hello from the sandbox</p>\n');
    // process_list shows the URL.
    const list = ok(await d.call('process_list')).result.processes;
    assert.deepEqual(list.find((p) => p.pid === pid).urls, [{ port: 8000, url }]);
    // The same Host check as the daemon's own port: a rebinding page's name is refused.
    const evil = await get(url, { Host: `evil.example:${new URL(url).port}` });
    assert.equal(evil.status, 403);
    assert.match(evil.text, /Host not allowed/);
    const local = await get(url, { Host: `localhost:${new URL(url).port}` });
    assert.equal(local.status, 200);
    // A port already exposed, and one nobody listens on yet (a clear 502 page).
    assert.match(fail(await d.call('expose_port', { pid, port: 8000 })),
                 new RegExp(`port 8000 of process ${pid} is already exposed at ${url.replace(/[.]/g, '\\.')}`));
    const idle = ok(await d.call('expose_port', { pid, port: 8001 })).result;
    const bad = await get(idle.url);
    assert.equal(bad.status, 502);
    assert.match(bad.text, new RegExp(`Process ${pid} is not listening on port 8001 in its sandbox yet`));
    // The forward ends with the process: once the daemon says the process ended, its port
    // refuses (never accepts and then resets). kill answers once the end is seen, or after 3 s
    // on a machine too slow for that: the wait covers the second case.
    ok(await d.call('kill', { pid, signal: 'KILL' }));
    await until(`process ${pid} ended`, async () =>
      ok(await d.call('process_list')).result.processes.find((p) => p.pid === pid).state !== 'running');
    await assert.rejects(get(url), /ECONNREFUSED/);
    assert.match(fail(await d.call('expose_port', { pid, port: 8000 })), /is not running/);
  });

  test('a fixed host port; a taken one, an unknown pid and a bad port are refused', async () => {
    const hostPort = await freePort();
    const r = ok(await d.call('exec', { command: 'node -e "require(\'http\').createServer((q,s)=>s.end(\'n\')).listen(3000,\'127.0.0.1\')"',
                                        background: true }));
    const pid = r.structured.pid;
    const e = ok(await d.call('expose_port', { pid, port: 3000, host_port: hostPort })).result;
    assert.equal(e.url, `http://127.0.0.1:${hostPort}/`);
    assert.equal((await untilServed(e.url)).text, 'n');
    assert.match(fail(await d.call('expose_port', { pid, port: 3001, host_port: hostPort })),
                 new RegExp(`127\\.0\\.0\\.1:${hostPort} is already in use on this host`));
    assert.match(fail(await d.call('expose_port', { pid: 999999, port: 3000 })),
                 /process 999999 is not running/);
    const range = await d.call('expose_port', { pid, port: 70000 });
    assert.equal(range.status, 400);
    assert.match(range.text, /arguments\.port/);
    const fg = await d.call('exec', { command: 'true', ports: [3000] });
    assert.match(fail(fg), /only a background command can have exposed ports/);
    ok(await d.call('kill', { pid, signal: 'KILL' }));
  });

  test('a forward whose sandbox lost its network agent says so (502), not "not listening yet"', async () => {
    const r = ok(await d.call('exec', { command: 'sleep 600', background: true, ports: [5000] }));
    const { url } = r.structured.urls[0];
    // runboxd -> bwrap (the sandbox's setup process) -> the agent (still named runboxd).
    const agents = children(d.pid).filter((c) => c.comm === 'bwrap')
      .flatMap((b) => children(b.pid)).filter((c) => c.comm === 'runboxd');
    assert.equal(agents.length, 1, JSON.stringify(agents));
    process.kill(agents[0].pid, 'SIGKILL');
    await until('the agent is gone', () => !children(d.pid).filter((c) => c.comm === 'bwrap')
      .flatMap((b) => children(b.pid)).some((c) => c.pid === agents[0].pid));
    const gone = await get(url);
    assert.equal(gone.status, 502);
    assert.match(gone.text, new RegExp(`The sandbox of process ${r.structured.pid} can no longer make connections: its network agent is gone`));
    ok(await d.call('kill', { pid: r.structured.pid, signal: 'KILL' }));
  });

  test('200 connections at once through one forward all get their answer', async () => {
    const server = `require('http').createServer((q, s) => setTimeout(() => s.end(q.url), 20)).listen(4000, '127.0.0.1')`;
    ok(await d.call('write_file', { path: '/srv.js', content: server }));
    const r = ok(await d.call('exec', { command: 'node /srv.js', background: true, ports: [4000] }));
    const { url } = r.structured.urls[0];
    await untilServed(url);
    const agent = new http.Agent({ keepAlive: false, maxSockets: 200 });
    const u = new URL(url);
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) =>
      request(Number(u.port), `/r${i}`, { agent })));
    assert.deepEqual(answers.map((a) => a.status), Array(200).fill(200));
    assert.deepEqual(answers.map((a) => a.text), Array.from({ length: 200 }, (_, i) => `/r${i}`));
    agent.destroy();
    assert.equal((await d.get('/health')).body.ok, true);
    ok(await d.call('kill', { pid: r.structured.pid, signal: 'KILL' }));
  });
});
