// tests/lib/slowclients.mjs - the slow and many clients of issue 12 §3, against a real runboxd:
// used by tests/integration/http_slow.test.mjs (behaviour) and tests/bench/slow-clients.mjs
// (the probe figures).
//
//   const s = slowloris(port, 100);   // 100 connections trickling header bytes, reconnecting
//   const p = parkedPolls(port, 60);  // 60 Studio long polls kept parked (12 instances x 5)
//   const k = keepAliveClients(port, 64, { path: '/health' }); // 64 clients, busy, kept alive
//   s.stats() / p.stats() / k.stats()  // counters so far
//   await Promise.all([s.stop(), p.stop(), k.stop()]);
//   const r = await probe(port, '/health'); // {ms, status} of one fresh-connection request
import http from 'node:http';
import net from 'node:net';

// n connections that each send a request head one byte every `byteMs`, never ending it, and
// reconnect at once whenever the daemon closes one. stats(): {opened, closed, answered408}.
export function slowloris(port, n, { byteMs = 200 } = {}) {
  const st = { opened: 0, closed: 0, answered408: 0 };
  let running = true;
  const socks = new Set();
  const head = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
    Array.from({ length: 400 }, (_, i) => `X-Slow-${i}: ${'a'.repeat(20)}\r\n`).join('');
  const open = () => {
    if (!running) return;
    const sock = net.connect(port, '127.0.0.1');
    let i = 0;
    let got = '';
    socks.add(sock);
    st.opened++;
    const timer = setInterval(() => {
      if (i < head.length) sock.write(head[i++]);
    }, byteMs);
    sock.on('data', (c) => { got += c; });
    sock.on('error', () => {});
    sock.on('close', () => {
      clearInterval(timer);
      socks.delete(sock);
      st.closed++;
      if (/^HTTP\/1\.1 408 /.test(got)) st.answered408++;
      setImmediate(open);
    });
  };
  for (let k = 0; k < n; k++) open();
  return {
    stats: () => ({ ...st, open: socks.size }),
    stop: async () => {
      running = false;
      for (const s of socks) s.destroy();
    },
  };
}

// n Studio long polls (GET /poll, held up to 15 s by the daemon), re-sent as each returns.
// 12 instances share them (the daemon knows at most 16). stats(): {sent, answered, failed,
// parked (now), maxParked (the most at once so far)}.
export function parkedPolls(port, n, { instances = 12 } = {}) {
  const st = { sent: 0, answered: 0, failed: 0, maxParked: 0 };
  let running = true;
  const reqs = new Set();
  const one = (k) => {
    if (!running) return;
    const inst = k % instances;
    const q = new URLSearchParams({ instance: `slow-studio-${inst}`, role: 'edit', place: `${9000 + inst}`,
                                    name: `Slow ${inst}` });
    st.sent++;
    const req = http.get({ host: '127.0.0.1', port, path: `/poll?${q}`, agent: false,
                           headers: { 'X-Runbox-Plugin': '1' } }, (res) => {
      res.resume();
      res.on('end', () => {
        reqs.delete(req);
        if (res.statusCode === 200) st.answered++;
        else st.failed++;
        setImmediate(() => one(k));
      });
    });
    reqs.add(req);
    st.maxParked = Math.max(st.maxParked, reqs.size);
    req.on('error', () => { reqs.delete(req); if (running) { st.failed++; setTimeout(() => one(k), 100); } });
  };
  for (let k = 0; k < n; k++) one(k);
  return {
    stats: () => ({ ...st, parked: reqs.size }),
    stop: async () => {
      running = false;
      for (const r of reqs) r.destroy();
    },
  };
}

// n clients, each on its own kept-alive connection, sending GET `path` one after another with
// `pauseMs` between answers (0: at once). stats(): {requests, answered, failed}.
export function keepAliveClients(port, n, { path = '/health', pauseMs = 0 } = {}) {
  const st = { requests: 0, answered: 0, failed: 0 };
  let running = true;
  const agents = [];
  const loop = async (agent) => {
    while (running) {
      st.requests++;
      const ok = await new Promise((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 200));
          res.on('error', () => resolve(false));
        });
        req.on('error', () => resolve(false));
      });
      if (!running) break;
      if (ok) st.answered++;
      else st.failed++;
      if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
    }
  };
  const done = [];
  for (let k = 0; k < n; k++) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    done.push(loop(agent));
  }
  return {
    stats: () => ({ ...st }),
    stop: async () => {
      running = false;
      for (const a of agents) a.destroy();
      await Promise.all(done);
    },
  };
}

// One request on a fresh connection; resolves {ms, status, body} (status 0: no answer, with
// error). opts: {method, body, headers, timeoutMs (give up: default 60 s)}.
export function probe(port, path, { method = 'GET', body, headers = {}, timeoutMs = 60000 } = {}) {
  const t0 = process.hrtime.bigint();
  const ms = () => Number(process.hrtime.bigint() - t0) / 1e6;
  return new Promise((resolve) => {
    const h = { ...headers };
    if (body !== undefined) {
      h['Content-Type'] = 'application/json';
      h['Content-Length'] = Buffer.byteLength(body);
    }
    const req = http.request({ host: '127.0.0.1', port, path, method, agent: false, headers: h }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        let parsed = null;
        try { parsed = JSON.parse(Buffer.concat(chunks).toString()); } catch { /* not JSON */ }
        resolve({ ms: ms(), status: res.statusCode, body: parsed });
      });
    });
    // A deadline on the whole exchange (a socket timeout would restart at every byte).
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', (e) => resolve({ ms: ms(), status: 0, error: e.message }));
    if (body !== undefined) req.write(body);
    req.end();
  });
}
