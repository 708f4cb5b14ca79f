// E2E: capture_screenshot end to end with a fake plugin that answers as the real one does
// (RGBA8 pixels or Studio's own PNG, base64): runboxd encodes RGBA8 into a PNG; POST /tool
// answers it as JSON, and MCP clients get image content, through runbox (stdio) and through
// runboxd's /mcp, with the other facts as text and structuredContent; a bad picture is a tool
// error saying what was wrong.
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { request, startDaemon } from '../lib/daemon.mjs';
import { FakePlugin } from '../lib/fakeplugin.mjs';
import { startProxy } from '../lib/proxy.mjs';

const W = 3, H = 2;
const PIXELS = Buffer.from(Array.from({ length: W * H * 4 }, (_, i) => (i * 37 + 5) % 256));
const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let d, plugin;
let answer = () => ({ format: 'rgba8', width: W, height: H, originalWidth: 1200,
                      originalHeight: 800, data: PIXELS.toString('base64') });

before(async () => {
  d = await startDaemon();
  plugin = new FakePlugin(d.port, {
    instance: 'shot',
    handler: async (cmd) => (cmd.tool === 'capture_screenshot' ? { ok: true, result: answer(cmd) }
                                                                 : { ok: false, error: 'not here' }),
  });
  await plugin.waitRegistered();
});
after(async () => { await FakePlugin.cleanupAll(); await d.stop(); });

// The pixels a PNG holds (8-bit RGBA, filter none on every row, as runboxd writes it).
function decodePng(buf) {
  assert.deepEqual(buf.subarray(0, 8), SIGNATURE, 'PNG signature');
  let at = 8, width = 0, height = 0;
  const idat = [];
  while (at < buf.length) {
    const len = buf.readUInt32BE(at);
    const type = buf.toString('latin1', at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + len);
    if (type === 'IHDR') { width = data.readUInt32BE(0); height = data.readUInt32BE(4); }
    if (type === 'IDAT') idat.push(data);
    at += 12 + len;
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const rows = [];
  for (let y = 0; y < height; y++) {
    assert.equal(raw[y * (width * 4 + 1)], 0, 'filter none');
    rows.push(raw.subarray(y * (width * 4 + 1) + 1, (y + 1) * (width * 4 + 1)));
  }
  return { width, height, pixels: Buffer.concat(rows) };
}

function checkImageResult(res) {
  assert.equal(res.isError, false, JSON.stringify(res).slice(0, 300));
  const [img, txt] = res.content;
  assert.equal(img.type, 'image');
  assert.equal(img.mimeType, 'image/png');
  const png = decodePng(Buffer.from(img.data, 'base64'));
  assert.deepEqual([png.width, png.height], [W, H]);
  assert.deepEqual(png.pixels, PIXELS, 'the pixels the plugin sent');
  assert.equal(txt.type, 'text');
  const facts = JSON.parse(txt.text);
  assert.equal(facts.data, undefined, 'the picture is not repeated in the text');
  assert.deepEqual({ w: facts.width, h: facts.height, ow: facts.originalWidth, m: facts.mimeType },
                   { w: W, h: H, ow: 1200, m: 'image/png' });
  assert.deepEqual(res.structuredContent, facts);
}

test('POST /tool: the RGBA8 pixels come back as a PNG, base64, with its size', async () => {
  const r = await request(d.port, '/tool/capture_screenshot', {
    method: 'POST', body: '{"max_size":256}', headers: { 'Content-Type': 'application/json' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true, r.text);
  const res = r.body.result;
  assert.equal(res.mimeType, 'image/png');
  assert.equal(res.format, undefined, 'mimeType says the format');
  const png = Buffer.from(res.data, 'base64');
  assert.equal(res.bytes, png.length);
  assert.deepEqual(decodePng(png).pixels, PIXELS);
  assert.equal(plugin.received.at(-1).args.max_size, 256, 'the plugin is told max_size');
});

test('runbox: image content, the facts as text and structuredContent', async () => {
  const p = startProxy({ daemonUrl: d.url });
  await p.initialize();
  checkImageResult(await p.callTool('capture_screenshot', {}));
  await p.close();
});

test('/mcp: the same image content for an SDK client', async () => {
  const client = new Client({ name: 'shot-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`)));
  checkImageResult(await client.callTool({ name: 'capture_screenshot', arguments: {} }));
  await client.close();
});

test('Studio\'s own PNG is passed through; a picture that is not one is a tool error', async () => {
  const own = Buffer.concat([SIGNATURE, Buffer.from([0, 0, 0, 13]), Buffer.from('IHDR'),
                             Buffer.from([0, 0, 0, 7, 0, 0, 0, 5, 8, 6, 0, 0, 0]),
                             Buffer.alloc(4)]);
  answer = () => ({ format: 'png', width: 1, height: 1, data: own.toString('base64') });
  const p = startProxy({ daemonUrl: d.url });
  await p.initialize();
  const ok = await p.callTool('capture_screenshot', {});
  assert.equal(ok.isError, false);
  assert.equal(ok.content[0].data, own.toString('base64'));
  assert.deepEqual([ok.structuredContent.width, ok.structuredContent.height], [7, 5],
                   'the size is the PNG header\'s');
  answer = () => ({ format: 'png', width: 1, height: 1, data: Buffer.from('GIF89a').toString('base64') });
  const bad = await p.callTool('capture_screenshot', {});
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /not a PNG image/);
  answer = () => ({ format: 'rgba8', width: 4, height: 4, data: PIXELS.toString('base64') });
  const short = await p.callTool('capture_screenshot', {});
  assert.equal(short.isError, true);
  assert.match(short.content[0].text, /24 bytes of pixels do not make a 4x4 RGBA image/);
  await p.close();
});
