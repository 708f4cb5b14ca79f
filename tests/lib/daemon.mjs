// tests/lib/daemon.mjs - start a real runboxd for a test and talk to it over HTTP.
//
//   const d = await startDaemon({ workspace, args, env });
//   // d.url 'http://127.0.0.1:PORT', d.port, d.pid, d.workspace (host dir or ':memory:')
//   const r = await d.call('write_file', { path: '/a.txt', content: 'hi' }); // {status, body}
//   await d.stop();            // SIGTERM, then waits for the exit; resolves to { code, signal }
//
// The binary is $RUNBOXD. runboxd is started with --port 0 (a free port, read back from its
// "runboxd: listening on http://ADDR:PORT" line) and the helper waits until GET /health answers.
// Nothing here waits for a time: every wait lasts until its condition holds or the child exits
// (ctest's per-test timeout bounds a hang), so a loaded machine or a sanitizer build is only
// slower, never a failure.
// token: the bearer token the helper's requests carry (default: env.RUNBOX_TOKEN).
// fds: more of runboxd's descriptors, from 3 on (child_process's stdio entries: an open fd
// number is inherited as it is, without close-on-exec).
// Without a workspace, a fresh temporary directory is used (and removed by stop()).
// XDG_CONFIG_HOME points at an empty temporary directory unless env sets it, so a config file
// of the user running the tests never leaks in.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { procStat } from './procstat.mjs';

const READY = /^runboxd: listening on (http:\/\/(.+):(\d+))$/;

// Daemons started and not yet exited; killed when node exits (see startDaemon).
const live = new Set();
process.on('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export function runboxdPath() {
  const bin = process.env.RUNBOXD;
  if (!bin) throw new Error('RUNBOXD is not set: point it at the runboxd binary (ctest sets it)');
  return bin;
}

// Plain HTTP request; resolves to { status, headers, text, body } (body = parsed JSON or null).
// opts: { method, headers, body (string|Buffer), host, port, agent }
export function request(port, urlPath, opts = {}) {
  return new Promise((resolve, reject) => {
    const body = opts.body === undefined ? undefined : Buffer.from(opts.body);
    const headers = { ...(opts.headers || {}) };
    if (body !== undefined && headers['Content-Length'] === undefined)
      headers['Content-Length'] = body.length;
    const req = http.request(
      { host: opts.host || '127.0.0.1', port, path: urlPath, method: opts.method || 'GET',
        headers, agent: opts.agent ?? false, setHost: headers.Host === undefined },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed = null;
          try { parsed = JSON.parse(text); } catch { /* not JSON: leave null */ }
          resolve({ status: res.statusCode, headers: res.headers, text, body: parsed,
                    socket: res.socket });
        });
        res.on('error', reject);
      });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

function waitExit(child) {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })));
}

// Runs runboxd to completion (for flags that exit at once); resolves { code, signal, stdout,
// stderr }. until: a RegExp; once stdout matches it, runboxd is sent SIGTERM (for a start that
// may either fail at once or serve, as some builds do).
export function runRunboxd(args, { env = {}, until } = {}) {
  return new Promise((resolve) => {
    const child = spawn(runboxdPath(), args, { env: { ...process.env, ...env },
                                               stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (c) => {
      stdout += c;
      if (until && until.test(stdout)) child.kill('SIGTERM');
    });
    child.stderr.on('data', (c) => { stderr += c; });
    // 'close' comes after the pipes are drained.
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

export async function startDaemon({ workspace, args = [], env = {}, token, fds = [] } = {}) {
  const bin = runboxdPath();
  const tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'runboxd-test-'));
  if (!workspace) workspace = path.join(tmpRoot, 'workspace');
  const childEnv = { ...process.env, XDG_CONFIG_HOME: path.join(tmpRoot, 'config'), ...env };
  // npm's and pip's caches of this daemon alone (as root the default is /var/cache/runbox, shared
  // by every daemon of the run: one that dropped root to another account left files there the
  // next could not read, and npm's warnings reached exec's stderr). 0755: the account runboxd
  // drops to must reach the cache below it.
  const own = [];
  if (!args.includes('--cache-dir')) {
    chmodSync(tmpRoot, 0o755);
    own.push('--cache-dir', path.join(tmpRoot, 'cache'));
  }
  const child = spawn(bin, ['--port', '0', '--workspace', workspace, ...own, ...args],
                      { env: childEnv, stdio: ['ignore', 'pipe', 'pipe', ...fds] });
  let stderr = '';
  child.stderr.on('data', (c) => { stderr += c; });

  // The ready line, however long the start takes (a loaded machine, TSan): a start that fails
  // ends the process, and that is what ends the wait.
  const ready = await new Promise((resolve, reject) => {
    let buf = '';
    const onExit = (code, signal) => {
      reject(new Error(`runboxd exited (code ${code}, signal ${signal}) before it was ready; ` +
                       `stderr:\n${stderr}`));
    };
    child.once('exit', onExit);
    child.stdout.on('data', (c) => {
      buf += c;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      const m = READY.exec(buf.slice(0, nl));
      child.off('exit', onExit);
      if (!m) {
        child.kill('SIGKILL');
        reject(new Error(`unexpected first line from runboxd: ${JSON.stringify(buf.slice(0, nl))}`));
        return;
      }
      resolve({ url: m[1], addr: m[2], port: Number(m[3]) });
    });
  });

  // The token the helper's requests carry: the token option, else RUNBOX_TOKEN.
  if (token === undefined) token = childEnv.RUNBOX_TOKEN;
  const authHeaders = token ? { Authorization: `Bearer ${token}` } : {};
  for (;;) {
    let r = null;
    try {
      r = await request(ready.port, '/health', { headers: authHeaders });
      // 401: it answers, but wants a token the helper was not told about.
      if ((r.status === 200 && r.body && r.body.ok) || r.status === 401) break;
    } catch { /* not accepting yet */ }
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`runboxd exited (code ${child.exitCode}, signal ${child.signalCode}) before ` +
                      `GET /health answered${r ? ` (last answer ${r.status} ${r.text})` : ''}; ` +
                      `stderr:\n${stderr}`);
    await new Promise((res) => setTimeout(res, 20));
  }

  // A test that fails before it stops its daemon must not hang the file until ctest's timeout:
  // once ready, the child no longer keeps node alive, and whatever is still running when the
  // file's tests are done is killed as node exits. stop() and exited() hold node again while
  // they wait.
  live.add(child);
  child.once('exit', () => live.delete(child));
  child.unref();
  child.stdout.unref();
  child.stderr.unref();
  let stopped = null;
  // A request that fails at the socket (a hang-up, a refused connection) says what became of
  // runboxd, so that a crash classifies itself in the test's output instead of passing for a
  // flaky network: exited or not (a dead child not yet reaped is a zombie), and its stderr's end.
  const explain = (promise) => promise.catch((e) => {
    if (!e || typeof e.code !== 'string') throw e;
    let state = 'still running';
    if (child.exitCode !== null || child.signalCode !== null) {
      state = `exited (code ${child.exitCode}, signal ${child.signalCode})`;
    } else {
      const s = procStat(child.pid);
      if (!s) state = 'gone';
      else if (s.state === 'Z') state = 'dead (not yet reaped)';
    }
    e.message += ` [runboxd pid ${child.pid} ${state}; the end of its stderr:\n` +
                 `${stderr.slice(-2000)}]`;
    throw e;
  });
  return {
    url: ready.url,
    port: ready.port,
    pid: child.pid,
    workspace,
    child,
    stderr: () => stderr,
    exited: () => {
      child.ref();
      return waitExit(child);
    },
    // POST /tool/<name> with JSON arguments; resolves { status, body, text, headers }.
    call: (tool, args = {}, headers = {}) =>
      explain(request(ready.port, `/tool/${tool}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...authHeaders, ...headers },
        body: typeof args === 'string' ? args : JSON.stringify(args),
      })),
    get: (p, headers = {}) =>
      explain(request(ready.port, p, { headers: { ...authHeaders, ...headers } })),
    // Sends signal and waits until runboxd has exited, however long that takes: a daemon that
    // does not stop is a failure ctest's timeout reports, never one a SIGKILL hides.
    async stop(signal = 'SIGTERM') {
      if (!stopped) {
        stopped = (async () => {
          child.ref();
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          const res = await waitExit(child);
          // A sanitizer report by runboxd or by a child of it before its exec (a run's setup
          // process exits 66, TSan's code, and says nothing else) is in runboxd's stderr: shown,
          // so that the test's failure says what happened.
          const at = stderr.search(/WARNING: ThreadSanitizer|ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error: /);
          if (at >= 0) process.stderr.write(`runboxd ${child.pid}'s stderr has a sanitizer report:\n${stderr.slice(Math.max(0, at - 200), at + 6000)}\n`);
          // tmpRoot holds the config dir and, when the helper made it, the workspace.
          rmSync(tmpRoot, { recursive: true, force: true });
          return res;
        })();
      }
      return stopped;
    },
  };
}
