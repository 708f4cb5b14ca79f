// tests/e2e/cli.test.mjs - runbox's subcommands as a person runs them: the real runbox against
// a real runboxd, and the failure paths: no daemon, a daemon that exits at once, another
// program on the port, bad arguments, a tool that fails.
//
// Each test names its daemon with DAEMON_URL (never 7766: the autostart tests own it). start,
// stop and restart run with HOME in a temporary folder and a bin folder holding runbox beside
// a link to runboxd, as an install has them.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync,
         symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { request, runboxdPath, startDaemon } from '../lib/daemon.mjs';
import { procStat } from '../lib/procstat.mjs';
import { serverPaths } from '../lib/readable.mjs';
import { resultText, runboxPath, runRunbox, startProxy } from '../lib/proxy.mjs';
import { until } from '../lib/wait.mjs';

function cli(args, env = {}, opts = {}) {
  return runRunbox(args, { env: { RUNBOX_LOG: 'warn', ...env }, ...opts });
}

async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}


describe('against a running daemon', () => {
  let d;
  let env;

  before(async () => {
    d = await startDaemon({ args: ['--workspace', ':memory:'] });
    env = { DAEMON_URL: d.url };
  });
  after(async () => { await d?.stop(); });

  test('status: address, version, pid, uptime, workspace, sandbox, network, processes', async () => {
    // The allow list's defaults (the registries npm and pip use) are read after the start:
    // compare once they are in, so that /health and the CLI see the same list.
    await until('the egress defaults are read', async () =>
      !['resolving', 'waiting'].includes((await d.get('/health')).body.sandbox.egress?.defaults?.state));
    const h = (await d.get('/health')).body;
    const r = await cli(['status'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^runboxd ${h.version} at ${d.url}: pid ${h.pid}, up `));
    assert.match(r.stdout, /^workspace +:memory:$/m);
    assert.match(r.stdout, /^sandbox +ready: bubblewrap/m);
    const eg = h.sandbox.egress;
    if (eg && eg.mode === 'proxy')
      assert.match(r.stdout, new RegExp(`^network +only through runboxd's egress proxy, to ${eg.allow.map((a) => a.rule).join(', ')}$`, 'm'));
    else
      assert.match(r.stdout, /^network +(none for commands|\S+: commands may use the network)$/m);
    assert.match(r.stdout, /^processes +\d+ running/m);
    assert.match(r.stdout, /^studio +not connected/m);
    assert.match(r.stdout, /^mcp +0 session/m);
    const j = await cli(['status', '--json'], env);
    const doc = JSON.parse(j.stdout);
    assert.equal(doc.running, true);
    assert.equal(doc.healthy, true);
    assert.equal(doc.health.pid, h.pid);
    assert.ok(Array.isArray(doc.processes));
  });

  test('call: key=value arguments typed by the schema, and the text printed', async () => {
    let r = await cli(['call', 'write_file', 'path=/cli/a.txt', 'content=12345'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { path: '/cli/a.txt', bytes: 5, created: true });
    r = await cli(['call', 'read_file', 'path=/cli/a.txt', 'offset=2'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '345\n');
    r = await cli(['call', 'read_file', '{"path":"/cli/a.txt","length":2}'], env);
    assert.match(r.stdout, /^12\n\[truncated: showed bytes 0-2 of 5/);
  });

  test('call --json prints the MCP result, as the MCP server gives it', async () => {
    const r = await cli(['call', '--json', 'list_dir', 'path=/cli'], env);
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout);
    assert.equal(res.isError, false);
    const p = startProxy({ daemonUrl: d.url });
    await p.initialize();
    const viaMcp = await p.callTool('list_dir', { path: '/cli' });
    await p.close();
    assert.deepEqual(res.content, viaMcp.content);
    assert.deepEqual(res.structuredContent, viaMcp.structuredContent);
  });

  test('call: invalid arguments are refused before sending, with the MCP server\'s words', async () => {
    const r = await cli(['call', 'read_file', 'path=/x', 'length=abc', 'colour=red'], env);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    const p = startProxy({ daemonUrl: d.url });
    await p.initialize();
    const viaMcp = await p.callTool('read_file', { path: '/x', length: 'abc', colour: 'red' });
    await p.close();
    assert.equal(viaMcp.isError, true);
    assert.equal(r.stderr, `runbox call: read_file: invalid arguments:\n${resultText(viaMcp)}\n`);
    const bad = await cli(['call', 'read_file', 'path'], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /'path' is not key=value/);
    const unknown = await cli(['call', 'no_such_tool'], env);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown tool: no_such_tool; `runbox tools` lists the tools/);
  });

  test('call: a tool that fails (isError) exits 1 with its message', async () => {
    const r = await cli(['call', 'read_file', 'path=/nope.txt'], env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^runbox call: read_file: .*no such file/);
    const j = await cli(['call', '--json', 'read_file', 'path=/nope.txt'], env);
    assert.equal(j.code, 1);
    const res = JSON.parse(j.stdout);
    assert.equal(res.isError, true);
    assert.match(JSON.parse(res.content[0].text).error, /no such file/);
  });

  test('call exec streams the output as it arrives, then prints the result', async () => {
    // The command waits for a file the test writes only once runbox has shown its first line:
    // that line can only have come while the call was still running.
    const child = spawn(runboxPath(), ['call', 'exec',
      'command=echo first-line; while [ ! -e /workspace/go ]; do sleep 0.05; done; echo second-line',
      'timeout_ms=60000'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { err += c; });
    const exited = new Promise((r) => child.on('close', (code) => r(code)));
    await until('runbox to show the first line while exec runs', () => err.includes('first-line'));
    assert.equal(out, '', 'the result is printed only at the end');
    await d.call('write_file', { path: '/go', content: '' });
    assert.equal(await exited, 0, err);
    assert.equal(out, 'first-line\nsecond-line\n');
    assert.ok(!err.includes('runbox call:'), err);
  });

  test('tools lists the groups, one line each, narrowed by a group or a profile', async () => {
    let r = await cli(['tools'], env);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^workspace$/m);
    assert.match(r.stdout, /^ {2}read_file +Read a workspace file/m);
    r = await cli(['tools', 'console'], env);
    assert.deepEqual(r.stdout.trim().split('\n').map((l) => l.trim().split(/ +/)[0]),
                     ['console', 'console_logs']);
    r = await cli(['tools', '--json', 'sandbox'], env);
    const groups = JSON.parse(r.stdout).groups.map((g) => g.group);
    const profiles = JSON.parse(readFileSync(new URL('../../common/tools/profiles.json',
                                                     import.meta.url), 'utf8'));
    assert.deepEqual(groups.sort(), [...profiles.profiles.sandbox.groups].sort());
    r = await cli(['tools', 'nonsense'], env);
    assert.equal(r.code, 2);
  });

  test('logs: the console, filtered by level and source, after an id', async () => {
    await d.call('exec', { command: 'echo log-out-1; echo log-err-1 >&2' });
    let r = await cli(['logs', '-n', '50'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, / log +exec +\[pid \d+\] log-out-1$/m);
    assert.match(r.stdout, / warn +exec +\[pid \d+\] log-err-1$/m);
    r = await cli(['logs', '--level', 'warn', '-n', '50'], env);
    assert.ok(!r.stdout.includes('log-out-1') && r.stdout.includes('log-err-1'), r.stdout);
    r = await cli(['logs', '--source', 'daemon', '--json'], env);
    const entries = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(entries.length > 0 && entries.every((e) => e.source === 'daemon'));
    const last = JSON.parse((await cli(['logs', '-n', '1', '--json'], env)).stdout.trim()).id;
    await d.call('exec', { command: 'echo after-the-id' });
    r = await cli(['logs', '--since', String(last)], env);
    assert.ok(!r.stdout.includes('log-out-1') && r.stdout.includes('after-the-id'), r.stdout);
    // A message of several lines: its later lines are indented under the first.
    await d.call('exec', { command: 'echo two-line-cause >&2; exit 3' });
    r = await cli(['logs', '--level', 'error', '-n', '1'], env);
    assert.match(r.stdout, /^ +\d+ [\d:.]+ error exec +\[pid \d+\] process \d+ failed with exit code 3:\n {32}two-line-cause\n$/);
    r = await cli(['logs', '--level', 'loud'], env);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--level takes debug, log, info, warn or error/);
  });

  test('logs -f follows the console as it happens', async () => {
    const child = spawn(runboxPath(), ['logs', '-f', '-n', '1'],
                        { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => { out += c; });
    // The first line printed is the replayed tail: from then on it is following.
    await until('logs -f to print its first line', () => out.includes('\n'));
    await d.call('exec', { command: 'echo followed-live' });
    await until('the new entry', () => out.includes('followed-live'));
    child.kill('SIGINT');
    await new Promise((r) => child.on('close', r));
  });

  test('ps and kill', async () => {
    const bg = await d.call('exec', { command: 'sleep 600', background: true });
    const pid = bg.body.structured.pid;
    let r = await cli(['ps'], env);
    assert.match(r.stdout, new RegExp(`^${pid} +running +- +\\S+ +\\[bg\\] sleep 600$`, 'm'));
    r = await cli(['kill', String(pid)], env);
    assert.equal(r.code, 0, r.stderr);
    await until(`process ${pid} to stop`, async () => {
      const list = JSON.parse((await cli(['ps', '--json'], env)).stdout);
      return list.find((p) => p.pid === pid).state !== 'running';
    });
    r = await cli(['kill', '99999'], env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /99999/);
    r = await cli(['kill', 'abc'], env);
    assert.equal(r.code, 2);
  });

  test('--help for every subcommand', async () => {
    for (const sub of ['status', 'call', 'tools', 'logs', 'ps', 'kill', 'start', 'stop',
                       'restart', 'setup']) {
      const r = await cli([sub, '--help'], env);
      assert.equal(r.code, 0, sub);
      assert.match(r.stdout, new RegExp(`^usage: runbox ${sub}`), sub);
    }
    const r = await cli(['frobnicate'], env);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown subcommand 'frobnicate'/);
  });
});

describe('when something is wrong', () => {
  test('no daemon: status exits 1, call exits 3, both say how to start it', async () => {
    const env = { DAEMON_URL: `http://127.0.0.1:${await freePort()}` };
    const s = await cli(['status'], env);
    assert.equal(s.code, 1);
    assert.match(s.stdout, /runboxd is not running at http:\/\/127\.0\.0\.1:\d+; start it with `runbox start`/);
    assert.equal(JSON.parse((await cli(['status', '--json'], env)).stdout).running, false);
    const c = await cli(['call', 'list_dir'], env);
    assert.equal(c.code, 3);
    assert.match(c.stderr, /runboxd is not running at .*start it with `runbox start`/);
  });

  test('another program on the port is named as such', async () => {
    const srv = http.createServer((req, res) => {
      res.writeHead(501, { 'Content-Type': 'text/html' });
      res.end('<!DOCTYPE HTML>\n<html><body><h1>Unsupported method</h1></body></html>\n');
    });
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    const env = { DAEMON_URL: `http://127.0.0.1:${srv.address().port}` };
    try {
      const s = await cli(['status'], env);
      assert.equal(s.code, 2);
      assert.match(s.stderr, /something else answers on 127\.0\.0\.1:\d+ — not runboxd \(HTTP 501: <!DOCTYPE HTML>/);
      assert.match(s.stderr, /stop it or set DAEMON_URL/);
      const c = await cli(['call', 'list_dir'], env);
      assert.equal(c.code, 3);
      assert.match(c.stderr, /not runboxd/);
    } finally {
      srv.close();
    }
  });

  test('a daemon that wants a token it was not given: status exits 2 and says so', async () => {
    const d = await startDaemon({ env: { RUNBOX_TOKEN: 'tok-123' }, token: 'tok-123' });
    try {
      const r = await cli(['status'], { DAEMON_URL: d.url, RUNBOX_TOKEN: '' });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /wants a token: set RUNBOX_TOKEN/);
      const ok = await cli(['status'], { DAEMON_URL: d.url, RUNBOX_TOKEN: 'tok-123' });
      assert.equal(ok.code, 0, ok.stderr);
    } finally {
      await d.stop();
    }
  });

  test('a bad DAEMON_URL is refused with what to write', async () => {
    const r = await cli(['status'], { DAEMON_URL: 'https://127.0.0.1:7766' });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /http:\/\/ only/);
  });
});

describe('start, stop, restart', () => {
  let tmp;
  let env;

  before(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'runbox-cli-'));
    const bin = path.join(tmp, 'bin');
    mkdirSync(bin);
    copyFileSync(runboxPath(), path.join(bin, 'runbox'));
    spawnSync('chmod', ['+x', path.join(bin, 'runbox')]);
    symlinkSync(path.resolve(runboxdPath()), path.join(bin, 'runboxd'));
    env = { HOME: tmp, XDG_STATE_HOME: path.join(tmp, 'state'), XDG_CONFIG_HOME: path.join(tmp, 'cfg'),
            XDG_DATA_HOME: path.join(tmp, 'data'), DAEMON_URL: `http://127.0.0.1:${await freePort()}` };
    env.bin = path.join(bin, 'runbox');
  });
  after(async () => {
    if (env) await runBin(env, ['stop']);
    rmSync(tmp, { recursive: true, force: true });
  });

  test('start runs it detached and says where its log is; stop waits for it to exit', async () => {
    const logPath = path.join(env.XDG_STATE_HOME, 'runbox', 'runboxd.log');
    let r = await runBin(env, ['start', '--', '--workspace', ':memory:']);
    assert.equal(r.code, 0, r.stderr);
    const m = /^runboxd started at (\S+) \(pid (\d+)\); log: (.+)$/m.exec(r.stdout);
    assert.ok(m, r.stdout);
    assert.equal(m[1], env.DAEMON_URL);
    assert.equal(m[3], logPath);
    const port = Number(new URL(env.DAEMON_URL).port);
    const h = (await request(port, '/health')).body;
    assert.equal(h.pid, Number(m[2]));
    assert.equal(h.workspace, ':memory:');

    r = await runBin(env, ['start']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /already running .*\(pid \d+\)/);

    r = await runBin(env, ['restart']);
    assert.equal(r.code, 0, r.stderr);
    const h2 = (await request(port, '/health')).body;
    assert.notEqual(h2.pid, h.pid);
    assert.equal(h2.workspace, ':memory:', 'restart keeps the options it was started with');

    r = await runBin(env, ['stop']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`runboxd \\(pid ${h2.pid}\\) stopped`));
    // When stop returns the daemon is gone: nothing listens any more.
    await assert.rejects(request(port, '/health'));
    assert.ok(!alive(h2.pid), `runboxd ${h2.pid} still runs`);
    r = await runBin(env, ['stop']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /not running/);
  });

  test('a daemon that exits at once: its exit status and the end of its log', async () => {
    mkdirSync(path.join(env.XDG_CONFIG_HOME, 'runbox'), { recursive: true });
    const cfg = path.join(env.XDG_CONFIG_HOME, 'runbox', 'config.json');
    writeFileSync(cfg, '{"port": "not a number"');
    try {
      const r = await runBin(env, ['start']);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /runboxd exited with status 2 right after it was started/);
      assert.match(r.stderr, /the end of its log \(.*runboxd\.log\):\n {4}runboxd: .*config\.json/);
    } finally {
      rmSync(cfg);
    }
  });
});

// True while pid runs (a zombie, exited but not yet reaped by its new parent, does not).
function alive(pid) {
  const s = procStat(pid);
  return s !== null && s.state !== 'Z';
}

function runBin(env, args) {
  const { bin, ...rest } = env;
  return new Promise((resolve) => {
    const child = spawn(bin, args, { env: { ...process.env, ...rest }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (c) => { stdout += c; });
    child.stderr.on('data', (c) => { stderr += c; });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('shell completion', () => {
  test('bash completes subcommands and, after call, the tool names', () => {
    const file = path.resolve(path.dirname(new URL(import.meta.url).pathname),
                              '../../mcp-proxy/completions/runbox.bash');
    const bin = path.dirname(realpathSync(runboxPath()));
    const complete = (words) => spawnSync('bash', ['-c',
      `source ${file}; COMP_WORDS=(${words}); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); ` +
      '_runbox; printf "%s\\n" "${COMPREPLY[@]}"'],
    { encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } }).stdout;
    assert.deepEqual(complete("runbox st").trim().split('\n').sort(), ['start', 'status', 'stop']);
    const tools = complete("runbox call read").trim().split('\n');
    assert.ok(tools.includes('read_file'), tools.join(' '));
    assert.deepEqual(complete("runbox logs --level w").trim(), 'warn');
  });

  test('zsh\'s completion file parses', () => {
    // zsh comes with the test dependencies (scripts/install-deps.sh test): without it, fail.
    assert.equal(spawnSync('zsh', ['--version']).error, undefined, 'zsh is installed');
    const file = path.resolve(path.dirname(new URL(import.meta.url).pathname),
                              '../../mcp-proxy/completions/_runbox');
    const r = spawnSync('zsh', ['-n', file], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  });
});

describe('runbox with no subcommand', () => {
  test('at a terminal it says what it is, and still serves MCP', async () => {
    // script(1) gives runbox a terminal on stdin; Ctrl+D ends it.
    const r = spawnSync('script', ['-qec', `${runboxPath()} --no-autostart`, '/dev/null'],
                        { input: '\x04', encoding: 'utf8',
                          env: { ...process.env, DAEMON_URL: 'http://127.0.0.1:9' } });
    assert.equal(r.error, undefined, 'script(1) from util-linux runs');
    assert.match(r.stdout, /this is the Runbox MCP server/);
    assert.match(r.stdout, /`runbox status`, `runbox call TOOL key=value \.\.\.`/);
  });

  test('on a pipe (an MCP client) it prints nothing but protocol', async () => {
    const r = await cli(['--no-autostart'], { DAEMON_URL: 'http://127.0.0.1:9' },
                        { input: '{"jsonrpc":"2.0","id":1,"method":"ping"}\n' });
    assert.equal(r.stderr, '');
    assert.deepEqual(JSON.parse(r.stdout), { jsonrpc: '2.0', id: 1, result: {} });
  });
});

// runboxd with external MCP servers of its config file (docs/registry.md): a real one over
// stdio (tests/lib/mcpservers.mjs, the SDK's McpServer) and one that cannot be reached.
describe('a daemon with external MCP servers', () => {
  let d;
  let env;
  let tmp;

  before(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'cli-registry-'));
    chmodSync(tmp, 0o755); // runboxd started as root serves as nobody: it reads the config here
    // A path runboxd's account can read (a copy when the checkout is under a private home).
    const script = path.join(serverPaths().lib, 'mcpservers.mjs');
    const config = { mcpServers: {
      st: { command: process.execPath, args: [script, 'stdio', 'st'] },
      down: { url: `http://127.0.0.1:${await freePort()}/mcp`, timeout: 5 },
      both: { command: 'true', url: 'http://127.0.0.1:1/' },
    } };
    writeFileSync(path.join(tmp, 'config.json'), JSON.stringify(config));
    d = await startDaemon({ args: ['--workspace', ':memory:', '--config', path.join(tmp, 'config.json')] });
    env = { DAEMON_URL: d.url };
    await until('st ready and down failed', async () => {
      const s = (await d.get('/mcp-servers')).body.servers;
      return s.find((x) => x.name === 'st')?.state === 'ready' &&
             s.find((x) => x.name === 'down')?.state === 'failed';
    }, 60000);
  });
  after(async () => {
    await d?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test('status lists them with their state, transport, tools and last error', async () => {
    const st = (await d.get('/mcp-servers')).body.servers.find((x) => x.name === 'st');
    const r = await cli(['status'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^external +3 MCP server\(s\), 1 ready$/m);
    // A config error says why it never runs; an ignored key is a warning.
    assert.match(r.stdout, /^ +both +failed .*\n +config error: \S+: mcpServers\.both: has both "command"/m);
    assert.match(r.stdout, /^ +warning: \S+: mcpServers\.down: runbox does not know the key "timeout"/m);
    assert.match(r.stdout, new RegExp(`^ +st +ready +stdio +${st.tools} tool\\(s\\)$`, 'm'));
    // "down" is tried again and again (back-off): between tries it is failed, during one
    // connecting; either way with the last error.
    assert.match(r.stdout, /^ +down +(failed|connecting) +http +0 tool\(s\)\n +last error: down: .*127\.0\.0\.1:\d+\/mcp/m);
    const j = JSON.parse((await cli(['status', '--json'], env)).stdout);
    assert.deepEqual(j.mcp_servers.map((s) => s.name).sort(), ['both', 'down', 'st']);
    assert.equal(j.mcp_servers.find((s) => s.name === 'st').state, 'ready');
  });

  test('tools lists their tools as group external, after the built-in ones', async () => {
    const listed = (await d.get('/tools')).body.tools.filter((t) => t.name.startsWith('st__'));
    const r = await cli(['tools'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\n\nexternal \(runboxd's MCP servers\)\n(  st__\S+ +.+\n)+$/);
    assert.equal(r.stdout.match(/^ +list_dir /gm).length, 1, 'a built-in tool is listed once');
    const only = await cli(['tools', 'external'], env);
    assert.match(only.stdout, /^  st__echo +Echoes$/m);
    const j = JSON.parse((await cli(['tools', '--json', 'external'], env)).stdout);
    assert.deepEqual(j.groups.map((g) => g.group), ['external']);
    assert.deepEqual(j.groups[0].tools.map((t) => t.name), listed.map((t) => t.name));
    assert.doesNotMatch((await cli(['tools', 'workspace'], env)).stdout, /st__/);
  });

  test('call runs one, typed by its schema; isError exits 1 with its text', async () => {
    const r = await cli(['call', 'st__echo', 'message=hi'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'st: hi\n');
    const f = await cli(['call', 'st__fail', 'why=on purpose'], env);
    assert.equal(f.code, 1);
    assert.equal(f.stderr, 'runbox call: st__fail: st: failed: on purpose\n');
    // The server's schema decides: runboxd checks the arguments and says what is wrong.
    const bad = await cli(['call', 'st__echo', 'message:=5'], env);
    assert.equal(bad.code, 1, bad.stdout + bad.stderr);
    assert.match(bad.stderr, /^runbox call: st__echo: .*message/);
  });

  test('an unknown tool is still named as such, and without a daemon only the built-in are known', async () => {
    const r = await cli(['call', 'st__nope'], env);
    assert.equal(r.code, 2);
    assert.equal(r.stderr, 'runbox call: unknown tool: st__nope; `runbox tools` lists the tools\n');
    const down = await cli(['call', 'st__echo'], { DAEMON_URL: `http://127.0.0.1:${await freePort()}` });
    assert.equal(down.code, 2);
    assert.match(down.stderr, /unknown tool: st__echo; .*runboxd did not answer, so only the built-in ones are known/);
  });
});
