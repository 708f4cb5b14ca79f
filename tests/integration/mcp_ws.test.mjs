// Integration: MCP over WebSocket (/ws) with frames no SDK sends: binary frames, fragmented
// messages (with a ping in the middle), a 100 MB frame, a close in the middle of a long call,
// and 1 000 connections opened and closed in a loop. Each gets a clear answer; the session (or
// the daemon) goes on; nothing leaks (threads, descriptors, memory come back).
//
// civetweb reads a frame whole before our handler sees it: a 100 MB frame costs 100 MB of the
// daemon's memory while it arrives (freed at once after; frames over 0x7FFF0000 bytes are
// refused by civetweb before any allocation). The test reports the peak it saw.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';
import { WS_BINARY, WS_CLOSE, WS_CONT, WS_PING, WS_PONG, WS_TEXT, WsClient, fdCount,
         isSanitized, memoryOf, until } from '../lib/mcp.mjs';

let d;

before(async () => {
  d = await startDaemon({ workspace: ':memory:' });
});

after(async () => {
  await d?.stop();
});

const init = { jsonrpc: '2.0', id: 'init', method: 'initialize',
               params: { protocolVersion: '2025-11-25', capabilities: {},
                         clientInfo: { name: 'raw-ws', version: '1.0.0' } } };

async function session() {
  const ws = await WsClient.open(d.port);
  assert.ok(!ws.refused, `upgrade refused: ${ws.head}`);
  assert.match(ws.head, /Sec-WebSocket-Protocol: mcp/i);
  await ws.sendJson(init);
  assert.equal((await ws.answer('init')).result.protocolVersion, '2025-11-25');
  await ws.sendJson({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return ws;
}

async function ping(ws, id) {
  await ws.sendJson({ jsonrpc: '2.0', id, method: 'ping' });
  assert.deepEqual(await ws.answer(id), { jsonrpc: '2.0', id, result: {} });
}

const errorsOf = (ws) => ws.messages().filter((m) => m.error && m.id === null);

async function mcpStatus() {
  return (await d.get('/health')).body.mcp;
}

describe('frames', () => {
  test('a binary frame is refused with a JSON-RPC error; the session goes on', async () => {
    const ws = await session();
    await ws.send(WS_BINARY, Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1,
                                                           method: 'ping' })));
    await ping(ws, 2);
    const errs = errorsOf(ws);
    assert.equal(errs.length, 1, JSON.stringify(ws.messages()));
    assert.equal(errs[0].error.code, -32600);
    assert.match(errs[0].error.message, /binary frames are not MCP messages/);
    assert.equal(ws.messages().filter((m) => m.id === 1).length, 0, 'the binary one unanswered');
    ws.destroy();
  });

  test('a fragmented binary message is refused once, its continuations are not parsed',
       async () => {
    const ws = await session();
    const m = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    await ws.send(WS_BINARY, m.slice(0, 6), false);
    await ws.send(WS_CONT, m.slice(6, 12), false);
    await ws.send(WS_CONT, m.slice(12), true);
    await ping(ws, 2);
    const errs = errorsOf(ws);
    assert.equal(errs.length, 1, JSON.stringify(ws.messages()));
    assert.match(errs[0].error.message, /binary frames/);
    ws.destroy();
  });

  test('a message in three fragments with a ping between them is one request', async () => {
    const ws = await session();
    const m = JSON.stringify({ jsonrpc: '2.0', id: 'frag', method: 'tools/call',
                               params: { name: 'write_file',
                                         arguments: { path: '/frag.txt', content: 'ü'.repeat(50) } } });
    const b = Buffer.from(m);
    await ws.send(WS_TEXT, b.subarray(0, 7), false);
    await ws.send(WS_PING, 'between');
    await ws.send(WS_CONT, b.subarray(7, 90), false); // cuts a 'ü' in two: bytes, not chars
    await ws.send(WS_CONT, b.subarray(90), true);
    const a = await ws.answer('frag');
    assert.equal(a.result.isError, false, JSON.stringify(a));
    const pong = await ws.waitFrame((f) => f.opcode === WS_PONG);
    assert.equal(pong.data.toString(), 'between');
    assert.equal(errorsOf(ws).length, 0, JSON.stringify(ws.messages()));
    ws.destroy();
  });

  test('a data frame inside a fragmented message, or a stray continuation, fails the ' +
       'connection with 1002', async () => {
    for (const bad of [[WS_TEXT, false, WS_TEXT], [WS_CONT, true, null]]) {
      const ws = await session();
      await ws.send(bad[0], '{"jsonrpc":', bad[1]);
      if (bad[2] !== null) await ws.send(bad[2], '"2.0","id":1,"method":"ping"}');
      await ws.closed;
      const close = ws.frames.find((f) => f.opcode === WS_CLOSE);
      assert.ok(close, JSON.stringify(ws.frames.map((f) => f.opcode)));
      assert.equal(close.data.readUInt16BE(0), 1002);
      assert.match(errorsOf(ws)[0]?.error.message ?? '', /fragment|continuation/);
      assert.equal(ws.messages().filter((m) => m.id === 1).length, 0);
    }
  });

  test('a message over 32 MiB: the error, then close 1009, always in that order', async () => {
    const big = Buffer.alloc((32 << 20) + 1, 0x20);
    for (let i = 0; i < 10; i++) {
      const ws = await WsClient.open(d.port);
      ws.send(WS_TEXT, big);
      await ws.closed;
      assert.deepEqual(ws.frames.map((f) => f.opcode), [WS_TEXT, WS_CLOSE], `run ${i}`);
      assert.match(ws.messages()[0].error.message, /more than 33554432 bytes/);
      assert.equal(ws.frames[1].data.readUInt16BE(0), 1009);
    }
  });

  test('a 100 MB frame costs its size while it arrives, then the memory comes back', async () => {
    const bystander = await session();
    const before = memoryOf(d.pid);
    const ws = await WsClient.open(d.port);
    ws.send(WS_TEXT, Buffer.alloc(100 << 20, 0x20));
    await ws.closed;
    assert.equal(ws.frames.at(-1).data.readUInt16BE(0), 1009);
    const peak = memoryOf(d.pid).hwmKiB;
    await ping(bystander, 'after-100MB');
    const afterMem = memoryOf(d.pid);
    console.log(`# 100 MB frame: RSS ${before.rssKiB} KiB before, peak ${peak} KiB, ` +
                `${afterMem.rssKiB} KiB after`);
    if (!isSanitized())
      assert.ok(afterMem.rssKiB < before.rssKiB + 16 * 1024,
                `RSS back near ${before.rssKiB} KiB: ${afterMem.rssKiB} KiB`);
    assert.equal((await d.get('/health')).status, 200);
    bystander.destroy();
  });
});

describe('connections', () => {
  test('a close in the middle of a long exec cancels it: the run is killed', async () => {
    const marker = `8${process.pid % 1000}.375`;
    const ws = await session();
    await ws.sendJson({ jsonrpc: '2.0', id: 'long', method: 'tools/call',
                        params: { name: 'exec', arguments: { command: `sleep ${marker}`,
                                                             timeout_ms: 100000 },
                                  _meta: { progressToken: 'p' } } });
    await ws.waitFrame((f) => f.opcode === WS_TEXT &&
                              JSON.parse(f.data).method === 'notifications/progress');
    const procs = async () => (await d.call('process_list', {})).body.result.processes
      .filter((p) => p.command.includes(marker));
    assert.equal((await procs())[0]?.state, 'running');
    await ws.send(WS_CLOSE, Buffer.from([0x03, 0xe8])); // 1000, normal closure
    await ws.closed;
    await until('the run killed', async () => (await procs())[0]?.state === 'killed');
    await until('the long budget free', async () =>
      (await d.get('/health')).body.calls.long.in_use === 0);
    await until('the session gone', async () => (await mcpStatus()).websockets === 0);
  });

  test('a client that vanishes (no close frame) mid-call: the same', async () => {
    const marker = `8${process.pid % 1000}.625`;
    const ws = await session();
    await ws.sendJson({ jsonrpc: '2.0', id: 'long', method: 'tools/call',
                        params: { name: 'exec', arguments: { command: `sleep ${marker}`,
                                                             timeout_ms: 100000 },
                                  _meta: { progressToken: 'p' } } });
    await ws.waitFrame((f) => f.opcode === WS_TEXT &&
                              JSON.parse(f.data).method === 'notifications/progress');
    ws.destroy();
    await until('the run killed', async () =>
      (await d.call('process_list', {})).body.result.processes
        .find((p) => p.command.includes(marker))?.state === 'killed');
  });

  test('1 000 connects and disconnects: threads, descriptors and memory come back', async () => {
    // Half close properly after initialize, half just drop the socket.
    const loop = async (n) => {
      for (let i = 0; i < n; i++) {
        const ws = await WsClient.open(d.port);
        if (i % 2) {
          await ws.sendJson(init);
          await ws.answer('init');
          await ws.send(WS_CLOSE, Buffer.from([0x03, 0xe8]));
          await ws.closed;
        } else {
          ws.destroy();
        }
      }
      await until('no websockets', async () => (await mcpStatus()).websockets === 0);
    };
    // A first round touches what every worker and the thread-stack cache keep for good (each
    // connection's writer thread is a new thread); the second is measured.
    await loop(1000);
    const base = { ...memoryOf(d.pid), fds: fdCount(d.pid) };
    await loop(1000);
    await until('threads back', () => memoryOf(d.pid).threads <= base.threads);
    await until('descriptors back', () => fdCount(d.pid) <= base.fds);
    const end = memoryOf(d.pid);
    console.log(`# 1000 WebSocket connections: RSS ${base.rssKiB} -> ${end.rssKiB} KiB, ` +
                `threads ${base.threads} -> ${end.threads}, fds ${base.fds} -> ${fdCount(d.pid)}`);
    if (!isSanitized())
      assert.ok(end.rssKiB < base.rssKiB + 2048, `RSS ${base.rssKiB} -> ${end.rssKiB} KiB`);
    const ws = await session();
    await ping(ws, 'still');
    ws.destroy();
  });
});
