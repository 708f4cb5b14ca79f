// tests/lib/sse.mjs - read a Server-Sent Events stream from runboxd as a test needs it.
//
//   const s = await openSse(port, '/events?since=0', { method, headers, body });
//   s.status, s.headers                        // the answer's head
//   const ev = await s.next((e) => e.event === 'console' && e.json.message === 'hi');
//   s.events                                   // every event so far: {event, id, data, json}
//   await s.done();                            // resolves once the server has ended the answer
//   s.text                                     // the whole body so far (a plain JSON answer too)
//   s.close();
//
// next() resolves with the first event (seen already or still to come) that the predicate
// accepts and that no earlier next() took, however long that takes (ctest's per-test timeout
// bounds a hang); it rejects when the stream ends first, with the events seen, so a failure
// says what did arrive.
import http from 'node:http';

export function openSse(port, urlPath, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(body);
    const h = { Accept: 'text/event-stream', ...headers };
    if (payload) h['Content-Length'] = payload.length;
    const req = http.request({ host: '127.0.0.1', port, path: urlPath, method, headers: h,
                               agent: false }, (res) => {
      let endedNow;
      const endedP = new Promise((r) => { endedNow = r; });
      const s = {
        done: () => endedP,
        status: res.statusCode,
        headers: res.headers,
        events: [],
        ended: false,
        text: '',
        taken: new Set(),
        waiters: [],
        close() { req.destroy(); res.destroy(); },
        next(pred = () => true) {
          const found = s.events.findIndex((e, i) => !s.taken.has(i) && pred(e));
          if (found >= 0) {
            s.taken.add(found);
            return Promise.resolve(s.events[found]);
          }
          if (s.ended) return Promise.reject(new Error(`the stream ended; events: ${dump(s)}`));
          return new Promise((res2, rej2) => {
            s.waiters.push({ pred, res: res2, rej: rej2 });
          });
        },
      };
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        s.text += chunk;
        buf += chunk;
        for (;;) {
          const end = buf.indexOf('\n\n');
          if (end < 0) break;
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const ev = parseBlock(block);
          if (!ev) continue;
          const i = s.events.push(ev) - 1;
          const w = s.waiters.find((x) => x.pred(ev));
          if (w) {
            s.taken.add(i);
            s.waiters.splice(s.waiters.indexOf(w), 1);
            w.res(ev);
          }
        }
      });
      res.on('end', () => {
        s.ended = true;
        endedNow();
        for (const w of s.waiters.splice(0)) {
          w.rej(new Error(`the stream ended; events: ${dump(s)}`));
        }
      });
      res.on('error', () => {});
      resolve(s);
    });
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

function parseBlock(block) {
  let event = 'message', id = null;
  const data = [];
  let any = false;
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue; // a comment (keepalive)
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    any = true;
    if (field === 'event') event = value;
    else if (field === 'id') id = value;
    else if (field === 'data') data.push(value);
  }
  if (!any) return null;
  const text = data.join('\n');
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { event, id, data: text, json };
}

function dump(s) {
  return JSON.stringify(s.events.map((e) => ({ event: e.event, data: e.data.slice(0, 200) })));
}
