// tests/lib/fakeplugin.mjs - a fake Roblox Studio plugin for tests: it long-polls a real runboxd
// the way the real plugin does (GET /poll with X-Runbox-Plugin: 1, keeps polling while commands
// run) and answers each command with a handler function.
//
//   const p = new FakePlugin(d.port, { instance: 'studio-1', role: 'edit', place: '42',
//                                      name: 'Test Place', handler: async (cmd) => ({ ok: true, result: 1 }) });
//   p.start();                       // the poll loop runs until stop()/die()/disconnect()
//   await p.waitPolling();           // resolves once a poll was sent
//   await p.waitRegistered();        // resolves once GET /health lists this instance
//   await p.waitAnswers(n);          // resolves once n POST /result answers came back
//   await FakePlugin.cleanupAll();   // disconnects and kills every fake still alive (afterEach)
//   const cmd = await p.nextCommand(); // the next command received {id, tool, args}
//   await p.stop();                  // no new polls; the parked poll is dropped
//   p.die();                         // every socket is cut at once, nothing more is sent
//   await p.disconnect();            // POST /disconnect, then stop
//   await p.post('/result', '{"id":', { raw: true });  // any body (garbage tests)
//   p.polls                          // polls started so far
//   p.pollSentAt                     // Date.now() taken just before the latest poll was sent
//
// handler(cmd) returns {ok: true, result} | {ok: false, error} (sent as POST /result), or
// FakePlugin.NO_ANSWER to hold the command forever, or a string: the raw /result body to send.
// A handler that throws answers {ok: false, error: message}.
import http from 'node:http';

export class FakePlugin {
  static NO_ANSWER = Symbol('no answer');
  static live = new Set();

  static async cleanupAll() {
    for (const p of [...FakePlugin.live]) {
      if (!p.dead) await p.post('/disconnect', JSON.stringify({ instance: p.instance })).catch(() => {});
      p.die();
    }
  }

  constructor(port, { instance = 'fake-studio', role = 'edit', place = '1', name = 'Place',
                      parent = null, handler = null, token = null, header = true } = {}) {
    this.port = port;
    this.instance = instance;
    this.role = role;
    this.place = place;
    this.name = name;
    this.parent = parent; // a test server's edit instance (sent as parent=)
    this.handler = handler || (async () => ({ ok: true, result: null }));
    this.token = token;
    this.header = header;
    // timeout: Node's agent heeds runboxd's Keep-Alive: timeout=5 only when it has a timeout of
    // its own, and then lets an idle socket go before runboxd closes it; without one it may
    // send a /result into a connection runboxd is closing ("socket hang up"). 60 s is above
    // any held /poll (15 s).
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 8, timeout: 60000 });
    this.running = false;
    this.dead = false;
    this.polls = 0;
    this.parked = false;
    this.received = [];
    this.answers = [];      // bodies of POST /result answers: {status, body}
    this.inflight = new Set();
    this._cmdWaiters = [];
    this._pollWaiters = [];
    this._loopDone = null;
    FakePlugin.live.add(this);
  }

  headers(extra = {}) {
    const h = { ...extra };
    if (this.header) h['X-Runbox-Plugin'] = '1';
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    return h;
  }

  // One HTTP request; resolves {status, text, body}. Rejects when the socket is cut.
  request(method, path, body, headers = {}) {
    return new Promise((resolve, reject) => {
      const buf = body === undefined ? undefined : Buffer.from(body);
      const h = this.headers(headers);
      if (buf !== undefined) {
        h['Content-Type'] = h['Content-Type'] || 'application/json';
        h['Content-Length'] = buf.length;
      }
      const req = http.request({ host: '127.0.0.1', port: this.port, path, method, headers: h,
                                 agent: this.agent }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          this.inflight.delete(req);
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed = null;
          try { parsed = JSON.parse(text); } catch { /* not JSON */ }
          resolve({ status: res.statusCode, headers: res.headers, text, body: parsed });
        });
        res.on('error', (e) => { this.inflight.delete(req); reject(e); });
      });
      this.inflight.add(req);
      req.on('error', (e) => { this.inflight.delete(req); reject(e); });
      if (buf !== undefined) req.write(buf);
      req.end();
    });
  }

  pollPath() {
    const q = new URLSearchParams({ instance: this.instance, role: this.role, place: this.place,
                                    name: this.name });
    if (this.parent) q.set('parent', this.parent);
    return `/poll?${q}`;
  }

  // One poll; resolves the parsed answer.
  async pollOnce() {
    this.polls++;
    this.parked = true;
    this.pollSentAt = Date.now(); // before the request leaves: see p.pollSentAt above
    for (const w of this._pollWaiters.splice(0)) w();
    try {
      return await this.request('GET', this.pollPath());
    } finally {
      this.parked = false;
    }
  }

  start() {
    if (this.running) return this;
    this.running = true;
    this._loopDone = this._loop();
    return this;
  }

  async _loop() {
    while (this.running && !this.dead) {
      let res;
      try {
        res = await this.pollOnce();
      } catch {
        if (!this.running || this.dead) break;
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      if (!this.running || this.dead) break;
      const m = res.body;
      if (res.status === 200 && m && m.hasCommand === true) {
        const cmd = { id: m.id, tool: m.tool, args: m.args };
        this.received.push(cmd);
        for (const w of this._cmdWaiters.splice(0)) w(cmd);
        this._run(cmd); // not awaited: keep polling while it runs, like the real plugin
      } else if (res.status !== 200) {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async _run(cmd) {
    let answer;
    try {
      answer = await this.handler(cmd);
    } catch (e) {
      answer = { ok: false, error: String(e && e.message ? e.message : e) };
    }
    if (answer === FakePlugin.NO_ANSWER || this.dead) return;
    const body = typeof answer === 'string' ? answer : JSON.stringify({ id: cmd.id, ...answer });
    try {
      const r = await this.request('POST', '/result', body);
      this.answers.push(r);
    } catch { /* died meanwhile */ }
  }

  waitPolling() {
    if (this.parked) return Promise.resolve();
    return new Promise((resolve) => this._pollWaiters.push(resolve));
  }

  // Starts the loop if needed and waits until the daemon lists this instance in /health, however
  // long that takes (ctest's per-test timeout bounds a hang).
  async waitRegistered() {
    this.start();
    for (;;) {
      const r = await new Promise((resolve) => {
        const req = http.request({ host: '127.0.0.1', port: this.port, path: '/health',
                                   headers: this.headers() }, (res) => {
          let t = '';
          res.on('data', (c) => { t += c; });
          res.on('end', () => { try { resolve(JSON.parse(t)); } catch { resolve(null); } });
        });
        req.on('error', () => resolve(null));
        req.end();
      });
      if (r && r.studio && r.studio.instances.some((i) => i.id === this.instance)) return;
      if (this.dead) throw new Error(`instance ${this.instance} died before /health listed it`);
      await new Promise((res) => setTimeout(res, 5));
    }
  }

  // The next command received (after this call), however long it takes.
  nextCommand() {
    return new Promise((resolve) => { this._cmdWaiters.push(resolve); });
  }

  // Resolves once n answers (POST /result) have come back from the daemon: a call may end
  // before its plugin has read the daemon's answer to the result it sent.
  async waitAnswers(n) {
    while (this.answers.length < n) await new Promise((res) => setTimeout(res, 5));
  }

  // Stops polling: the parked poll's socket is cut, nothing new is sent.
  async stop() {
    this.running = false;
    for (const req of this.inflight) req.destroy();
    this.inflight.clear();
    if (this._loopDone) await this._loopDone;
    this.agent.destroy();
  }

  // Dies at once: like Studio crashing, no answer for anything held.
  die() {
    FakePlugin.live.delete(this);
    this.dead = true;
    this.running = false;
    for (const req of this.inflight) req.destroy();
    this.inflight.clear();
    this.agent.destroy();
  }

  async disconnect() {
    this.running = false;
    const r = await this.request('POST', '/disconnect', JSON.stringify({ instance: this.instance }));
    await this.stop();
    return r;
  }

  // Any POST (raw body text) with the plugin's headers.
  post(path, body, headers = {}) {
    return this.request('POST', path, body, headers);
  }
}
