// tests/browser/status_page.test.mjs - the status page at GET / in real headless Chromium,
// against a real runboxd: it loads and shows the daemon, the console follows exec live (over
// the event stream, not by re-reading), the kill button stops a background process, the
// filters work, the page fits a narrow window, a screenshot is written for the docs; a page on
// another origin can neither read the daemon nor act on it; with RUNBOX_TOKEN the page asks.
//
// Fails (never skips) when Chromium or playwright-core is missing (tests/lib/browser.mjs).
// Every wait is for a condition; none asserts how long something took (tests/bench does).
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { launchChromium } from '../lib/browser.mjs';
import { startDaemon } from '../lib/daemon.mjs';
import { serverPaths } from '../lib/readable.mjs';
import { until } from '../lib/wait.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));


async function procState(d, pid) {
  const r = await d.call('process_list', {});
  const p = r.body.result.processes.find((x) => x.pid === pid);
  return p && p.state;
}

let browser;
before(async () => { browser = await launchChromium(); });
after(async () => { await browser?.close(); });

describe('the status page', () => {
  let d;
  let page;
  const requests = [];

  before(async () => {
    d = await startDaemon({ args: ['--workspace', ':memory:'] });
    page = await browser.newPage();
    page.on('request', (r) => requests.push({ url: r.url(), method: r.method() }));
    await page.goto(`${d.url}/`);
  });
  after(async () => {
    await page?.close();
    await d?.stop();
  });

  test('it loads and shows the daemon, its version and its sandbox', async () => {
    const h = (await d.get('/health')).body;
    await page.waitForFunction((v) => document.getElementById('daemon-line').textContent
      .includes(`runboxd ${v}`), h.version);
    const line = await page.textContent('#daemon-line');
    assert.match(line, new RegExp(`pid ${h.pid}`));
    assert.match(await page.textContent('#sandbox-facts'), /ready/);
    assert.match(await page.textContent('#daemon-facts'), /:memory:/);
    // The network card says what /health says, once the default allow list (the registries
    // npm and pip use, read in the background after start) is known; until then it says so.
    const settled = await until('the default allow list is read', async () => {
      const eg = (await d.get('/health')).body.sandbox.egress;
      return (!eg || !['resolving', 'waiting'].includes(eg.defaults.state)) && { eg };
    });
    const eg = settled.eg;
    const mode = eg ? eg.mode : (h.allow_network ? 'full' : 'none');
    assert.equal(await page.getAttribute('#network', 'data-mode'), mode);
    if (eg && eg.mode === 'proxy') {
      await page.waitForSelector(`#network[data-defaults="${eg.defaults.state}"]`);
      const text = await page.textContent('#network');
      assert.doesNotMatch(text, /being read/);
      for (const r of eg.allow) assert.match(text, new RegExp(r.rule.replace(/\./g, '\\.')));
    }
  });

  test('a console entry appears as exec prints it, over the event stream', async () => {
    await page.waitForSelector('#conn[data-state="live"]');
    const rereads = () => requests.filter((r) => r.url.endsWith('/tool/console_logs')).length;
    const before = rereads();
    const marker = `marker-${process.pid}-${Date.now()}`;
    await d.call('exec', { command: `echo ${marker}` });
    await page.waitForFunction((m) => [...document.querySelectorAll('#log li .msg')]
      .some((e) => e.textContent === m), marker);
    // It came through GET /events: the page did not read the console again.
    assert.equal(rereads(), before);
    assert.ok(requests.some((r) => r.url.includes('/events?')), 'the page opened GET /events');
  });

  test('the kill button stops a background process', async () => {
    const r = await d.call('exec', { command: 'sleep 600', background: true });
    const pid = r.body.structured.pid;
    const button = `#proc-rows tr[data-pid="${pid}"] button.kill`;
    await page.waitForSelector(button);
    await page.click(button);
    await until(`process ${pid} to stop`, async () => (await procState(d, pid)) !== 'running');
    await page.waitForSelector(`#proc-rows tr[data-pid="${pid}"]`);
    await page.waitForFunction((p) => !document.querySelector(
      `#proc-rows tr[data-pid="${p}"] button.kill`), pid);
  });

  test('the output button shows a process\'s own output', async () => {
    const r = await d.call('exec', { command: 'echo own-output-1; echo own-output-2' });
    const pid = r.body.structured.pid;
    await page.waitForSelector(`#proc-rows tr[data-pid="${pid}"] button.output`);
    await page.waitForFunction(() => [...document.querySelectorAll('#log li .msg')]
      .some((e) => e.textContent === 'own-output-2'));
    await page.click(`#proc-rows tr[data-pid="${pid}"] button.output`);
    const out = await page.waitForSelector(`tr[data-output-of="${pid}"] pre`);
    assert.equal(await out.textContent(), `$ echo own-output-1; echo own-output-2\nown-output-1\nown-output-2`);
  });

  test('the level, source and search filters', async () => {
    await d.call('exec', { command: 'echo filt-out; echo filt-err >&2' });
    const shown = () => page.$$eval('#log li .msg', (els) => els.map((e) => e.textContent));
    await page.waitForFunction(() => [...document.querySelectorAll('#log li .msg')]
      .some((e) => e.textContent === 'filt-err'));
    assert.ok((await shown()).includes('filt-out'));

    await page.selectOption('#f-level', '2'); // warn and up: stdout ("log") goes
    let s = await shown();
    assert.ok(s.includes('filt-err') && !s.includes('filt-out'), s.join('|'));
    const levels = await page.$$eval('#log li', (els) => els.map((e) => e.dataset.level));
    assert.ok(levels.every((l) => l === 'warn' || l === 'error'), levels.join(','));

    await page.selectOption('#f-level', '0');
    await page.selectOption('#f-source', 'daemon');
    const sources = await page.$$eval('#log li', (els) => els.map((e) => e.dataset.source));
    assert.ok(sources.length > 0 && sources.every((x) => x === 'daemon'), sources.join(','));

    await page.selectOption('#f-source', '');
    await page.fill('#f-search', 'FILT-OUT');
    s = await shown();
    assert.ok(s.length > 0 && s.every((m) => m.toLowerCase().includes('filt-out')), s.join('|'));
    assert.ok(s.includes('filt-out') && !s.includes('filt-err'), s.join('|'));
    await page.fill('#f-search', '');
  });

  test('a narrow window: nothing wider than the screen, and a screenshot for the docs', async () => {
    const narrow = await browser.newPage({ viewport: { width: 380, height: 800 } });
    await narrow.goto(`${d.url}/`);
    await narrow.waitForSelector('#conn[data-state="live"]');
    const overflow = await narrow.evaluate(() =>
      document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 1, `the page is ${overflow}px wider than a 380px window`);
    await narrow.close();

    // The picture in docs/status-page.md: a running process with its kill button, some output.
    const bg = await d.call('exec', { command: 'sleep 300', background: true });
    await d.call('exec', { command: 'node --version; python3 --version; echo done >&2' });
    await page.waitForSelector(`#proc-rows tr[data-pid="${bg.body.structured.pid}"] button.kill`);
    await page.waitForFunction(() => [...document.querySelectorAll('#log li .msg')]
      .some((e) => e.textContent === 'done'));
    const dir = process.env.RUNBOX_SCREENSHOT_DIR || path.join(os.tmpdir(), 'runbox-screenshots');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'status-page.png');
    await page.setViewportSize({ width: 1200, height: 900 });
    await page.screenshot({ path: file, fullPage: true });
    await d.call('kill', { pid: bg.body.structured.pid, signal: 'KILL' });
    const png = readFileSync(file);
    assert.equal(png.subarray(1, 4).toString(), 'PNG');
    assert.ok(png.length > 10000, `a screenshot of ${png.length} bytes`);
  });
});

// runboxd with external MCP servers of its config file (docs/registry.md): a real one over
// stdio (tests/lib/mcpservers.mjs) and one that cannot be reached.
describe('the status page with external MCP servers', () => {
  let d;
  let page;
  let tmp;

  before(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'page-registry-'));
    chmodSync(tmp, 0o755); // runboxd started as root serves as nobody: it reads the config here
    // A path runboxd's account can read (a copy when the checkout is under a private home).
    const script = path.join(serverPaths().lib, 'mcpservers.mjs');
    writeFileSync(path.join(tmp, 'config.json'), JSON.stringify({ mcpServers: {
      st: { command: process.execPath, args: [script, 'stdio', 'st'] },
      down: { url: 'http://127.0.0.1:9/mcp', timeout: 5 },
      both: { command: 'true', url: 'http://127.0.0.1:9/' },
    } }));
    d = await startDaemon({ args: ['--workspace', ':memory:', '--config', path.join(tmp, 'config.json')] });
    page = await browser.newPage();
    await page.goto(`${d.url}/`);
  });
  after(async () => {
    await page?.close();
    await d?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test('each server with its state, transport, tools and last error', async () => {
    // The page reads /health and /mcp-servers every few seconds: wait until st is ready there.
    await page.waitForSelector('#external li[data-state="ready"]', { timeout: 60000 });
    const st = (await d.get('/mcp-servers')).body.servers.find((x) => x.name === 'st');
    const items = await page.$$eval('#external li', (lis) => lis.map((li) => li.textContent));
    assert.ok(items.includes(`st ready · stdio · ${st.tools} tool(s)`), items.join(' | '));
    const down = items.find((t) => t.startsWith('down '));
    assert.match(down, /^down (failed|connecting) · http · 0 tool\(s\)down: .*127\.0\.0\.1:9\/mcp.*warning: \S+: mcpServers\.down: runbox does not know the key "timeout"/);
    // A config error says why the server never runs.
    const both = items.find((t) => t.startsWith('both '));
    assert.match(both, /^both failed · .*mcpServers\.both: has both "command"/);
  });
});

describe('a page on another origin', () => {
  let d;
  let evil;
  let evilUrl;

  before(async () => {
    d = await startDaemon({ args: ['--workspace', ':memory:'] });
    // Another port of the same host: the same site to a browser, another origin.
    evil = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<!doctype html><title>elsewhere</title><p>another site</p>');
    });
    await new Promise((r) => evil.listen(0, '127.0.0.1', r));
    evilUrl = `http://127.0.0.1:${evil.address().port}/`;
  });
  after(async () => {
    evil?.close();
    await d?.stop();
  });

  test('cannot read /, /health or the event stream, nor kill a process', async () => {
    const r = await d.call('exec', { command: 'sleep 600', background: true });
    const pid = r.body.structured.pid;
    const page = await browser.newPage();
    await page.goto(evilUrl);
    const results = await page.evaluate(async ({ base, pid }) => {
      const tryIt = async (f) => { try { await f(); return 'read'; } catch { return 'refused'; } };
      const out = {};
      out.page = await tryIt(async () => (await fetch(`${base}/`)).text());
      out.health = await tryIt(async () => (await fetch(`${base}/health`)).json());
      out.killJson = await tryIt(async () => fetch(`${base}/tool/kill`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ pid }) }));
      // A no-cors POST goes out without a preflight; the daemon must refuse it.
      await fetch(`${base}/tool/kill`, { method: 'POST', mode: 'no-cors',
                                         headers: { 'Content-Type': 'text/plain' },
                                         body: JSON.stringify({ pid }) }).catch(() => {});
      out.events = await new Promise((res) => {
        const es = new EventSource(`${base}/events`);
        es.onopen = () => { es.close(); res('read'); };
        es.onerror = () => { es.close(); res('refused'); };
      });
      // A <script> or an <iframe> carries no Origin: Sec-Fetch-Site stops them.
      out.script = await new Promise((res) => {
        const s = document.createElement('script');
        s.src = `${base}/health`;
        s.onload = () => res('loaded');
        s.onerror = () => res('refused');
        document.body.append(s);
      });
      return out;
    }, { base: d.url, pid });
    assert.deepEqual(results, { page: 'refused', health: 'refused', killJson: 'refused',
                                events: 'refused', script: 'refused' });

    // Framing the page shows nothing of it.
    await page.setContent(`<iframe id="f" src="${d.url}/"></iframe>`);
    await sleep(0);
    const frame = await (await page.waitForSelector('#f')).contentFrame();
    await frame.waitForLoadState().catch(() => {});
    assert.equal(await frame.$('#daemon-line'), null);
    await page.close();
    assert.equal(await procState(d, pid), 'running');
    await d.call('kill', { pid, signal: 'KILL' });
  });

  test('the same requests from the page itself work', async () => {
    const page = await browser.newPage();
    await page.goto(`${d.url}/`);
    const ok = await page.evaluate(async () => {
      const token = document.querySelector('meta[name="runbox-page-token"]').content;
      const h = await (await fetch('/health')).json();
      const withToken = await fetch('/tool/list_dir', {
        method: 'POST', body: '{}',
        headers: { 'Content-Type': 'application/json', 'X-Runbox-Page-Token': token } });
      const without = await fetch('/tool/list_dir', {
        method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json' } });
      return { health: h.ok, withToken: withToken.status, without: without.status };
    });
    assert.deepEqual(ok, { health: true, withToken: 200, without: 403 });
    await page.close();
  });
});

describe('with RUNBOX_TOKEN set', () => {
  let d;

  before(async () => {
    d = await startDaemon({ args: ['--workspace', ':memory:'], env: { RUNBOX_TOKEN: 's3cret-tok' } });
  });
  after(async () => { await d?.stop(); });

  test('the page asks for the token, then works, console included', async () => {
    const page = await browser.newPage();
    await page.goto(`${d.url}/`);
    await page.waitForSelector('#auth:not([hidden])');
    await page.fill('#auth-token', 'wrong');
    await page.click('#auth button');
    await page.waitForFunction(() => document.getElementById('auth-error').textContent
      .includes('refused'));
    await page.fill('#auth-token', 's3cret-tok');
    await page.click('#auth button');
    await page.waitForFunction(() => document.getElementById('daemon-line').textContent
      .includes('runboxd'));
    await page.waitForSelector('#conn[data-state="live"]');
    await d.call('exec', { command: 'echo with-token-marker' });
    await page.waitForFunction(() => [...document.querySelectorAll('#log li .msg')]
      .some((e) => e.textContent === 'with-token-marker'));
    await page.close();
  });
});
