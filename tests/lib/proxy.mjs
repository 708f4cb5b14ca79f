// tests/lib/proxy.mjs - run the real runbox ($RUNBOX) over pipes and speak JSON-RPC to it.
//
//   const p = startProxy({ daemonUrl: d.url });        // env DAEMON_URL, RUNBOX_LOG=warn
//   await p.initialize('2025-11-25');                   // initialize + notifications/initialized
//   const res = await p.callTool('read_file', { path: '/a.txt' });   // the tools/call result
//   const msg = await p.request('tools/list');          // the whole response message
//   p.sendRaw('not json\n');                            // any bytes
//   const err = await p.waitFor((m) => m.id === null);  // next message matching a predicate
//   const { code } = await p.close();                   // end stdin, wait for exit
//   assert.deepEqual(p.badLines, []);                   // every stdout line was JSON-RPC
//   assert.equal(p.invalidUtf8(), 0);                   // every stdout byte was UTF-8
//
// Every stdout line is parsed as it arrives; a line that is not one JSON-RPC 2.0 message (or an
// array of them) goes to p.badLines, so tests can assert that stdout carries protocol only.
import { spawn } from 'node:child_process';

export const PROTOCOL_VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'];

export function runboxPath() {
  const bin = process.env.RUNBOX;
  if (!bin) throw new Error('RUNBOX is not set: point it at the runbox binary (ctest sets it)');
  return bin;
}

function isRpcMessage(m) {
  return m !== null && typeof m === 'object' && !Array.isArray(m) && m.jsonrpc === '2.0';
}

// Runs runbox with args to completion (for --list-tools, --version, ...); resolves
// { code, signal, stdout, stderr }. No time limit: ctest's per-test timeout bounds a hang.
export function runRunbox(args, { env = {}, input = '' } = {}) {
  return new Promise((resolve) => {
    const child = spawn(runboxPath(), args, { env: { ...process.env, ...env },
                                              stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (c) => { stdout += c; });
    child.stderr.on('data', (c) => { stderr += c; });
    child.stdin.on('error', () => {});
    child.stdin.end(input);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

// Starts runbox (bin, default $RUNBOX). daemonUrl sets DAEMON_URL (omit it only in autostart
// tests, and then pass env with HOME/XDG_* of your own). env is merged over process.env, minus
// DAEMON_URL unless given.
export function startProxy({ daemonUrl, env = {}, args = [], bin } = {}) {
  const childEnv = { ...process.env, RUNBOX_LOG: 'warn', ...env };
  if (daemonUrl !== undefined) childEnv.DAEMON_URL = daemonUrl;
  else if (!('DAEMON_URL' in env)) delete childEnv.DAEMON_URL;
  const child = spawn(bin || runboxPath(), args,
                      { env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] });

  const messages = [];   // every message received, in order (batch arrays stay arrays)
  const badLines = [];   // stdout lines that are not JSON-RPC
  const waiters = [];    // { pred, resolve, reject }
  let stdoutBuf = '';
  let stderr = '';
  let nextId = 1;
  // Strict decoding: a byte that is not UTF-8 is counted (then decoded leniently); a character
  // cut between two chunks is carried over rather than broken.
  let strict = new TextDecoder('utf-8', { fatal: true });
  let invalidUtf8 = 0;

  let exitInfo = null;
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })));
  // A runbox that is gone will answer nothing more: fail every wait at once (after the last
  // stdout bytes were read), instead of letting each one run into its timeout.
  child.on('close', (code, signal) => {
    exitInfo = { code, signal };
    for (const w of waiters.splice(0)) {
      w.reject(new Error(`runbox exited (code ${code}, signal ${signal}) before answering; ` +
                         `stderr:\n${stderr.slice(-4000)}`));
    }
  });
  child.stdin.on('error', () => { /* EPIPE after runbox exited: the test sees the exit */ });
  child.stderr.on('data', (c) => { stderr += c; if (stderr.length > 1 << 20) stderr = stderr.slice(-65536); });

  function deliver(msg) {
    messages.push(msg);
    for (let i = 0; i < waiters.length; i++) {
      const w = waiters[i];
      if (w.pred(msg)) {
        waiters.splice(i, 1);
        w.resolve(msg);
        return;
      }
    }
  }

  child.stdout.on('data', (chunk) => {
    try {
      stdoutBuf += strict.decode(chunk, { stream: true });
    } catch {
      invalidUtf8++;
      strict = new TextDecoder('utf-8', { fatal: true });
      stdoutBuf += chunk.toString('utf8');
    }
    let nl;
    while ((nl = stdoutBuf.indexOf('\n')) >= 0) {
      const line = stdoutBuf.slice(0, nl);
      stdoutBuf = stdoutBuf.slice(nl + 1);
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        badLines.push(line);
        continue;
      }
      const ok = Array.isArray(msg) ? msg.length > 0 && msg.every(isRpcMessage) : isRpcMessage(msg);
      if (!ok) { badLines.push(line); continue; }
      deliver(msg);
    }
  });

  // Resolves with the first message (already received or future) that matches pred, however
  // long it takes (a loaded machine or a sanitizer build is only slower; ctest's per-test
  // timeout bounds a hang); rejects when runbox exits first. Messages already received are
  // searched from `from` (an index into messages).
  function waitFor(pred, { from = 0 } = {}) {
    for (let i = from; i < messages.length; i++)
      if (pred(messages[i])) return Promise.resolve(messages[i]);
    if (exitInfo)
      return Promise.reject(new Error(`runbox already exited (code ${exitInfo.code})`));
    return new Promise((resolve, reject) => {
      waiters.push({ pred, resolve, reject });
    });
  }

  function sendRaw(text) {
    child.stdin.write(text);
  }

  function send(obj) {
    sendRaw(JSON.stringify(obj) + '\n');
  }

  function request(method, params, { id } = {}) {
    const rid = id === undefined ? nextId++ : id;
    const msg = { jsonrpc: '2.0', id: rid, method };
    if (params !== undefined) msg.params = params;
    const from = messages.length;
    send(msg);
    return waitFor((m) => !Array.isArray(m) && m.id === rid && m.method === undefined, { from });
  }

  function notify(method, params) {
    const msg = { jsonrpc: '2.0', method };
    if (params !== undefined) msg.params = params;
    send(msg);
  }

  async function initialize(protocolVersion = '2025-11-25') {
    const r = await request('initialize', {
      protocolVersion, capabilities: {}, clientInfo: { name: 'runbox-e2e', version: '1' } });
    if (r.error) throw new Error(`initialize failed: ${JSON.stringify(r.error)}`);
    notify('notifications/initialized');
    return r.result;
  }

  // tools/call; resolves to the result ({content, isError, ...}); throws on a JSON-RPC error.
  async function callTool(name, args, opts) {
    const r = await request('tools/call', { name, arguments: args }, opts);
    if (r.error) throw new Error(`tools/call ${name}: JSON-RPC error ${JSON.stringify(r.error)}`);
    return r.result;
  }

  // Ends stdin and waits until runbox has exited (it must, at end of input).
  async function close() {
    child.stdin.end();
    return exited;
  }

  return {
    child, pid: child.pid, messages, badLines, exited,
    stderr: () => stderr,
    nextId: () => nextId++,
    invalidUtf8: () => invalidUtf8,
    send, sendRaw, request, notify, initialize, callTool, waitFor, close,
    kill: (sig = 'SIGKILL') => child.kill(sig),
  };
}

// The text of a tool result's first content item.
export function resultText(result) {
  return result && result.content && result.content[0] ? result.content[0].text : undefined;
}

// For failed calls: the {"error":...,"timeout":...} object carried in the text.
export function resultError(result) {
  return JSON.parse(resultText(result));
}
