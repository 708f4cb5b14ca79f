// The Runbox status page: reads runboxd through its own API, from its own origin.
//   GET /health (every few seconds; GET /mcp-servers too when there are external MCP
//   servers), POST /tool/process_list, POST /tool/console_logs (the
//   console so far), GET /events (the console as it happens, and process list updates),
//   POST /tool/kill (the kill buttons).
// Every POST carries the page token from the page's own HTML; with RUNBOX_TOKEN set on the
// daemon, every request carries the token the user types in (kept for this tab only).
// No framework, no build step: edit this file and rebuild runboxd.
'use strict';

const PAGE_TOKEN = document.querySelector('meta[name="runbox-page-token"]').content;
const LOG_MAX = 5000;          // console entries kept in the page
const POLL_MS = 3000;          // /health and the process list
const RANKS = { debug: 0, log: 1, info: 1, warn: 2, error: 3 };

const $ = (id) => document.getElementById(id);
let bearer = sessionStorage.getItem('runbox-token') || '';
let lastId = 0;                // the newest console id seen
let entries = [];              // console entries, oldest first
let stream = null;             // the EventSource or the fetch reader's AbortController
let pidFilter = null;
let procs = [];
const openOutput = new Set();  // pids whose output row is open

// ---- talking to runboxd ----

class NeedToken extends Error {}

function headers(extra = {}) {
  const h = { ...extra, 'X-Runbox-Page-Token': PAGE_TOKEN };
  if (bearer) h.Authorization = `Bearer ${bearer}`;
  return h;
}

async function api(path, body) {
  const init = body === undefined
    ? { headers: headers() }
    : { method: 'POST', headers: headers({ 'Content-Type': 'application/json' }),
        body: JSON.stringify(body) };
  const r = await fetch(path, init);
  if (r.status === 401) throw new NeedToken('runboxd wants its token');
  const j = await r.json();
  if (!r.ok && !j.error) throw new Error(`HTTP ${r.status}`);
  return j;
}

async function tool(name, args = {}) {
  const j = await api(`/tool/${name}`, args);
  if (!j.ok) throw new Error(j.error || 'the tool failed');
  return j.result;
}

// ---- small DOM helpers (text only: nothing from the daemon becomes HTML) ----

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function facts(dl, rows) {
  dl.replaceChildren(...rows.flatMap(([k, v, cls]) =>
    [el('dt', {}, k), el('dd', cls ? { class: cls } : {}, v)]));
}

function duration(ms) {
  if (ms === null || ms === undefined || ms < 0) return '';
  const s = Math.floor(ms / 1000);
  if (ms < 1000) return `${ms}ms`;
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`;
}

function setConn(state, text) {
  $('conn').dataset.state = state;
  $('conn').textContent = text || state;
}

// ---- the daemon, sandbox, network, MCP ----

function showHealth(h) {
  const sb = h.sandbox || {};
  $('daemon-line').textContent =
    `runboxd ${h.version} · pid ${h.pid} · up ${duration(h.uptime_ms)} · ${location.host}`;
  facts($('daemon-facts'), [
    ['version', h.version], ['pid', h.pid], ['uptime', duration(h.uptime_ms)],
    ['address', location.host], ['workspace', h.workspace],
    ['fsync', h.fsync ? 'on' : 'off'],
  ]);
  const lim = sb.limits || {};
  facts($('sandbox-facts'), [
    ['state', sb.available ? 'ready' : `not available: ${sb.reason || '?'}`,
     sb.available ? 'ok' : 'bad'],
    ['bubblewrap', sb.available ? `${sb.version} (${sb.bwrap})` : (sb.bwrap || 'not found')],
    ['limits', `memory and processes by ${sb.memory || '?'}`],
    ['timeout', lim.timeout_ms ? `${lim.timeout_ms / 1000} s (at most ${lim.timeout_max_ms / 1000} s)` : ''],
    ['memory', lim.memory_mb ? `${lim.memory_mb} MiB` : ''],
    ['at once', lim.concurrent_max ? `${lim.concurrent_max} commands, ${lim.background_max} in the background` : ''],
  ].filter((r) => r[1] !== ''));
  showNetwork(h);
  const m = h.mcp || {};
  facts($('mcp-facts'), [
    ['sessions', m.sessions ?? 0], ['streams', m.streams ?? 0], ['websockets', m.websockets ?? 0],
    ...Object.entries(h.calls || {}).map(([k, v]) => [`${k} calls`, `${v.in_use} of ${v.max}`]),
  ]);
  showStudio(h.studio || {});
}

function showNetwork(h) {
  const eg = (h.sandbox || {}).egress;
  const mode = eg ? eg.mode : (h.allow_network ? 'full' : 'none');
  const box = $('network');
  box.dataset.mode = mode;
  if (mode === 'none') {
    box.replaceChildren(el('p', {}, 'Commands have no network.'));
    return;
  }
  if (mode !== 'proxy') {
    box.replaceChildren(el('p', {}, 'Commands may use the network.'));
    return;
  }
  const rules = (eg.allow || []).map((r) => (typeof r === 'string' ? r : r.rule));
  // Right after runboxd starts, the registries npm and pip use may still be being read: they
  // join the list at a later refresh.
  const reading = ['resolving', 'waiting'].includes((eg.defaults || {}).state);
  box.dataset.defaults = (eg.defaults || {}).state || '';
  box.replaceChildren(
    el('p', {}, "Only through runboxd's egress proxy, to:"),
    ...(rules.length ? [el('ul', {}, ...rules.map((r) => el('li', { class: 'mono' }, r)))] : []),
    ...(reading ? [el('p', { class: 'muted' }, 'the registries npm and pip use (being read)')]
      : rules.length ? [] : [el('p', { class: 'muted' }, 'no host (the allow list is empty)')]));
}

// The external MCP servers: /health's summary ({"configured","ready","servers":{name: state}}),
// with each server's detail from GET /mcp-servers when runboxd has any.
function externalList(ext, detail) {
  if (detail && Array.isArray(detail.servers)) return detail.servers;
  const s = ext && ext.servers;
  if (Array.isArray(s)) return s;
  return s && typeof s === 'object'
    ? Object.entries(s).map(([name, state]) => ({ name, state })) : [];
}

function hasExternal(ext) {
  return !!ext && (ext.configured > 0 || externalList(ext, null).length > 0);
}

function showExternal(ext, detail) {
  const list = externalList(ext, detail);
  $('external').replaceChildren(...(list.length
    ? [el('h2', {}, 'External servers'),
       el('ul', {}, ...list.map((s) => el('li', { 'data-state': s.state || '' },
         el('span', { class: 'mono' }, s.name), ` ${s.state || ''}`,
         s.transport ? ` · ${s.transport}` : '',
         typeof s.tools === 'number' ? ` · ${s.tools} tool(s)` : '',
         s.config_error || s.last_error
           ? el('div', { class: 'muted' }, s.config_error || s.last_error) : '',
         ...[s.config_warning, s.warning].filter(Boolean)
           .map((w) => el('div', { class: 'muted' }, `warning: ${w}`)))))]
    : []));
}

function showStudio(st) {
  const insts = st.instances || [];
  $('studio-state').textContent = st.connected
    ? `${insts.length} instance(s), ${st.queue_depth || 0} command(s) queued`
    : 'not connected: install the Runbox plugin and press Connect';
  $('studio-table').hidden = insts.length === 0;
  $('studio-rows').replaceChildren(...insts.map((i) => el('tr', {},
    el('td', {}, i.active ? '●' : ''), el('td', {}, i.name || ''), el('td', {}, i.role || ''),
    el('td', { class: 'mono' }, i.place || ''), el('td', {}, `${duration(i.last_poll_ms_ago)} ago`))));
  const recent = st.recent || [];
  $('studio-recent').replaceChildren(...(recent.length
    ? [el('h2', {}, 'Last commands'),
       el('ul', {}, ...recent.map((r) =>
         el('li', { class: 'mono' },
            `${r.tool} → ${r.state} (${duration(r.duration_ms)}, ${duration(r.ms_ago)} ago)`)))]
    : []));
}

// ---- processes ----

async function refreshProcs() {
  const r = await tool('process_list');
  procs = r.processes || [];
  showProcs();
}

function outputOf(pid) {
  return entries.filter((e) => e.pid === pid).map((e) => e.message).join('\n');
}

function showProcs() {
  const running = procs.filter((p) => p.state === 'running').length;
  $('proc-count').textContent = `${running} running, ${procs.length} in all`;
  $('proc-empty').hidden = procs.length > 0;
  const ordered = [...procs].sort((a, b) =>
    (b.state === 'running') - (a.state === 'running') || b.pid - a.pid);
  const rows = [];
  for (const p of ordered) {
    const live = p.state === 'running';
    rows.push(el('tr', { 'data-pid': p.pid },
      el('td', { class: 'pid', title: 'show only its console entries',
                 onclick: () => { pidFilter = p.pid; rerender(); } }, p.pid),
      el('td', { class: live ? 'ok' : (p.exit_code ? 'bad' : '') }, p.state),
      el('td', {}, p.exit_code ?? ''),
      el('td', {}, duration(p.duration_ms)),
      el('td', { class: 'cmd' }, `${p.background ? '[bg] ' : ''}${p.command}`),
      el('td', {},
        el('button', { class: 'output', onclick: () => toggleOutput(p.pid) },
          openOutput.has(p.pid) ? 'hide output' : 'output'),
        ' ',
        live ? el('button', { class: 'kill', onclick: (ev) => kill(p.pid, ev.target) }, 'kill') : '')));
    if (openOutput.has(p.pid))
      rows.push(el('tr', { class: 'out', 'data-output-of': p.pid },
        el('td', { colspan: 6 }, el('pre', {}, outputOf(p.pid) || '(no output yet)'))));
  }
  $('proc-rows').replaceChildren(...rows);
}

function toggleOutput(pid) {
  if (openOutput.has(pid)) openOutput.delete(pid); else openOutput.add(pid);
  showProcs();
}

async function kill(pid, button) {
  button.disabled = true;
  try {
    await tool('kill', { pid });
  } catch (e) {
    alert(`kill ${pid}: ${e.message}`);
  }
  await refreshProcs().catch(() => {});
}

// ---- the console ----

function matches(e) {
  const rank = RANKS[e.level] ?? 0;
  if (rank < Number($('f-level').value)) return false;
  const src = $('f-source').value;
  if (src && e.source !== src) return false;
  if (pidFilter !== null && e.pid !== pidFilter) return false;
  const q = $('f-search').value.trim().toLowerCase();
  return !q || e.message.toLowerCase().includes(q);
}

function entryRow(e) {
  const t = (e.ts || '').slice(11, 23);
  return el('li', { class: `l-${e.level}`, 'data-id': e.id, 'data-level': e.level,
                    'data-source': e.source },
    el('span', { class: 'ts', title: e.ts }, t),
    el('span', { class: 'lvl' }, e.level),
    el('span', { class: 'src' }, e.pid ? `${e.source} ${e.pid}` : e.source),
    el('span', { class: 'msg' }, e.message));
}

function addEntries(list) {
  const log = $('log');
  const follow = $('f-follow').checked;
  const frag = document.createDocumentFragment();
  let touched = false;
  for (const e of list) {
    if (e.id <= lastId) continue;
    lastId = e.id;
    entries.push(e);
    if (e.pid && openOutput.has(e.pid)) touched = true;
    if (matches(e)) frag.append(entryRow(e));
  }
  log.append(frag);
  if (entries.length > LOG_MAX) {
    entries = entries.slice(-LOG_MAX);
    while (log.children.length > LOG_MAX) log.firstChild.remove();
  }
  $('log-count').textContent = `${entries.length} entries, newest #${lastId}`;
  if (follow) log.scrollTop = log.scrollHeight;
  if (touched) showProcs();
}

function rerender() {
  $('log').replaceChildren(...entries.filter(matches).map(entryRow));
  const chip = $('f-pid');
  chip.hidden = pidFilter === null;
  chip.textContent = pidFilter === null ? '' : `pid ${pidFilter} ×`;
}

async function readConsole() {
  // The newest entries first (console_logs without since_id), then everything after.
  const r = await tool('console_logs', { limit: 1000 });
  addEntries(r.entries || []);
}

// ---- following the event stream ----

function eventsUrl() {
  const uri = encodeURIComponent('runbox://process/list');
  return `/events?console=debug&since=${lastId}&uri=${uri}`;
}

function onEvent(type, data) {
  if (type === 'console') addEntries([JSON.parse(data)]);
  else if (type === 'ready') setConn('live');
  else if (type === 'resource_updated') refreshProcs().catch(() => {});
  else if (type === 'dropped') readConsoleAfter().catch(() => {});
}

async function readConsoleAfter() {
  const r = await tool('console_logs', { since_id: lastId, limit: 1000 });
  addEntries(r.entries || []);
}

function follow() {
  if (stream) return;
  if (!bearer) {
    // EventSource reconnects by itself, sending Last-Event-ID: the daemon replays what the
    // page missed.
    const es = new EventSource(eventsUrl());
    stream = es;
    es.onopen = () => setConn('live');
    es.onerror = () => setConn(es.readyState === EventSource.CLOSED ? 'down' : 'connecting',
                                es.readyState === EventSource.CLOSED ? 'stream closed' : 'reconnecting');
    for (const type of ['console', 'ready', 'resource_updated', 'dropped'])
      es.addEventListener(type, (ev) => onEvent(type, ev.data));
    return;
  }
  followWithToken();
}

// EventSource cannot send Authorization: with a token, the same stream is read with fetch.
async function followWithToken() {
  const ctl = new AbortController();
  stream = ctl;
  for (;;) {
    try {
      const r = await fetch(eventsUrl(), { headers: headers({ Accept: 'text/event-stream' }),
                                           signal: ctl.signal });
      if (r.status === 401) throw new NeedToken();
      setConn('live');
      await readSse(r.body.getReader());
    } catch (e) {
      if (e instanceof NeedToken) { stream = null; askToken(); return; }
      if (ctl.signal.aborted) return;
    }
    setConn('connecting', 'reconnecting');
    await new Promise((res) => setTimeout(res, 1000));
  }
}

async function readSse(reader) {
  const dec = new TextDecoder();
  let buf = '', type = 'message', data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let nl;
    while ((nl = buf.search(/\r?\n/)) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(buf[nl] === '\r' ? nl + 2 : nl + 1);
      if (line === '') {
        if (data.length) onEvent(type, data.join('\n'));
        type = 'message';
        data = [];
      } else if (line.startsWith('data:')) {
        data.push(line.slice(5).replace(/^ /, ''));
      } else if (line.startsWith('event:')) {
        type = line.slice(6).trim();
      }
    }
  }
}

// ---- the token ----

function askToken(message) {
  setConn('down', 'needs the token');
  $('auth').hidden = false;
  $('auth-error').textContent = message || '';
  $('auth-token').focus();
}

$('auth').addEventListener('submit', (ev) => {
  ev.preventDefault();
  bearer = $('auth-token').value.trim();
  sessionStorage.setItem('runbox-token', bearer);
  $('auth').hidden = true;
  start();
});

// ---- start ----

async function refresh() {
  try {
    const h = await api('/health');
    showHealth(h);
    showExternal(h.mcp_servers,
                 hasExternal(h.mcp_servers) ? await api('/mcp-servers').catch(() => null) : null);
    await refreshProcs();
    if ($('conn').dataset.state === 'down' && !stream) setConn('connecting');
  } catch (e) {
    if (e instanceof NeedToken) {
      askToken(bearer ? 'That token was refused.' : '');
      throw e;
    }
    setConn('down', 'runboxd is not answering');
  }
}

let timer = null;

async function start() {
  try {
    await refresh();
    await readConsole();
  } catch (e) {
    if (e instanceof NeedToken) return;
  }
  follow();
  if (!timer) timer = setInterval(() => refresh().catch(() => {}), POLL_MS);
}

for (const id of ['f-level', 'f-source', 'f-search']) $(id).addEventListener('input', rerender);
$('f-pid').addEventListener('click', () => { pidFilter = null; rerender(); });
start();
