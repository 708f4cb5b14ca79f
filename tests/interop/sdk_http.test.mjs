// Interop with the official TypeScript SDK straight to runboxd, with no runbox in between: its
// Client over StreamableHTTPClientTransport (/mcp), SSEClientTransport (/sse + /message) and
// WebSocketClientTransport (/ws). On each: tools (text, structured, isError), resources (list,
// read, templates), prompts, completion, progress of a multi-second exec (the messages arrive
// while it runs) and cancellation with an AbortSignal (the run is killed, process_list says so,
// and the budget slot is free again). The SDK checks every answer against its own schemas.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { startDaemon } from '../lib/daemon.mjs';
import { TRANSPORTS, sdkClient, until } from '../lib/mcp.mjs';

let d;

before(async () => {
  d = await startDaemon({ workspace: ':memory:' });
});

after(async () => {
  await d?.stop();
});

function textOf(result) {
  return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
}

async function processes() {
  const r = await d.call('process_list', {});
  assert.equal(r.body.ok, true, r.text);
  return r.body.result.processes;
}

async function longInUse() {
  return (await d.get('/health')).body.calls.long.in_use;
}

for (const kind of TRANSPORTS) {
  describe(`the SDK client over ${kind}`, () => {
    let c;
    const dir = `/sdk-${kind}`;

    before(async () => {
      c = await sdkClient(d, kind);
    });
    after(async () => {
      await c?.close();
    });

    test('initialize: server info, instructions and capabilities', () => {
      assert.equal(c.getServerVersion().name, 'runboxd');
      const caps = c.getServerCapabilities();
      for (const k of ['tools', 'resources', 'prompts', 'completions', 'logging'])
        assert.ok(caps[k], `capability ${k}`);
      assert.match(c.getInstructions(), /workspace/);
    });

    test('tools/list: the catalog, with schemas and annotations', async () => {
      const { tools } = await c.listTools();
      const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
      for (const n of ['read_file', 'write_file', 'list_dir', 'exec', 'process_list'])
        assert.ok(byName[n], `tools/list has ${n}`);
      assert.deepEqual(byName.read_file.inputSchema.required, ['path']);
      assert.equal(byName.read_file.annotations.readOnlyHint, true);
      assert.equal(byName.list_dir.outputSchema.type, 'object');
    });

    test('tools/call: text, structured content, and isError', async () => {
      const w = await c.callTool({ name: 'write_file',
                                   arguments: { path: `${dir}/a.txt`, content: 'héllo ✓\n' } });
      assert.equal(w.isError, false, JSON.stringify(w));
      const r = await c.callTool({ name: 'read_file', arguments: { path: `${dir}/a.txt` } });
      assert.equal(r.isError, false);
      assert.equal(textOf(r), 'héllo ✓\n');
      // list_dir has an outputSchema: the SDK validates structuredContent against it.
      const l = await c.callTool({ name: 'list_dir', arguments: { path: dir } });
      assert.equal(l.isError, false);
      assert.deepEqual(l.structuredContent.entries.map((e) => e.name), ['a.txt']);
      assert.deepEqual(JSON.parse(textOf(l)), l.structuredContent);
      const missing = await c.callTool({ name: 'read_file', arguments: { path: `${dir}/nope` } });
      assert.equal(missing.isError, true);
      assert.match(JSON.parse(textOf(missing)).error, /no such file/);
      const bad = await c.callTool({ name: 'read_file', arguments: { path: 7 } });
      assert.equal(bad.isError, true);
      assert.match(textOf(bad), /arguments\.path: expected string, got (number|integer)/);
      await assert.rejects(c.callTool({ name: 'no_such_tool', arguments: {} }),
                           (e) => e.code === -32602);
    });

    test('resources: list, read, templates', async () => {
      await c.callTool({ name: 'write_file', arguments: { path: `${dir}/r.json`, content: '{}' } });
      const all = [];
      let cursor;
      do {
        const page = await c.listResources(cursor ? { cursor } : {});
        all.push(...page.resources);
        cursor = page.nextCursor;
      } while (cursor);
      const uris = all.map((r) => r.uri);
      assert.ok(uris.includes('runbox://console/logs'));
      assert.ok(uris.includes(`file://${dir}/r.json`), uris.join(' '));
      const read = await c.readResource({ uri: `file://${dir}/a.txt` });
      assert.equal(read.contents[0].text, 'héllo ✓\n');
      assert.equal(read.contents[0].mimeType, 'text/plain');
      await assert.rejects(c.readResource({ uri: `file://${dir}/absent` }),
                           (e) => e.code === -32002 || e.code === -32602);
      const { resourceTemplates } = await c.listResourceTemplates();
      assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), ['file:///{path}']);
    });

    test('prompts: list and get', async () => {
      const { prompts } = await c.listPrompts();
      assert.deepEqual(prompts.map((p) => p.name).sort(), ['explain_file', 'fix_error', 'scaffold']);
      const p = await c.getPrompt({ name: 'explain_file', arguments: { path: `${dir}/a.txt` } });
      assert.equal(p.messages[0].role, 'user');
      assert.match(p.messages[0].content.text, /a\.txt/);
      await assert.rejects(c.getPrompt({ name: 'nope', arguments: {} }), (e) => e.code === -32602);
    });

    test('completion: a prompt argument and a resource template argument', async () => {
      const t = await c.complete({ ref: { type: 'ref/prompt', name: 'scaffold' },
                                   argument: { name: 'type', value: 'f' } });
      assert.deepEqual(t.completion.values, ['fullstack']);
      const p = await c.complete({ ref: { type: 'ref/prompt', name: 'explain_file' },
                                   argument: { name: 'path', value: `${dir}/a` } });
      assert.deepEqual(p.completion.values, [`${dir}/a.txt`]);
      const r = await c.complete({ ref: { type: 'ref/resource', uri: 'file:///{path}' },
                                   argument: { name: 'path', value: `${dir.slice(1)}/r` } });
      assert.deepEqual(r.completion.values, [`${dir.slice(1)}/r.json`]);
    });

    test('progress: a three-second exec reports while it runs', async () => {
      const seen = [];
      let done = false;
      const r = await c.callTool(
        { name: 'exec',
          arguments: { command: 'for i in 1 2 3; do echo "tick $i"; sleep 1; done' } },
        undefined,
        { onprogress: (p) => seen.push({ ...p, before_answer: !done }) });
      done = true;
      assert.equal(r.isError, false, JSON.stringify(r));
      assert.equal(r.structuredContent.stdout, 'tick 1\ntick 2\ntick 3\n');
      assert.ok(seen.length >= 2, `progress notifications: ${JSON.stringify(seen)}`);
      assert.ok(seen.every((p) => p.before_answer));
      for (let i = 1; i < seen.length; i++)
        assert.ok(seen[i].progress > seen[i - 1].progress, 'progress grows');
      // The message carries the latest output: a later one has a later tick.
      assert.ok(seen.some((p) => /tick [12]/.test(p.message ?? '')), JSON.stringify(seen));
    });

    test('cancellation: an aborted exec is killed and gives its slot back', async () => {
      const marker = `7${process.pid % 1000}.${TRANSPORTS.indexOf(kind) + 1}25`;
      const ac = new AbortController();
      let progressed;
      const started = new Promise((r) => { progressed = r; });
      const call = c.callTool(
        { name: 'exec', arguments: { command: `echo started; sleep ${marker}`,
                                     timeout_ms: 100000 } },
        undefined,
        { signal: ac.signal, onprogress: () => progressed() });
      const outcome = call.then(() => 'answered', (e) => e);
      await started; // the run is going: its first progress came
      const running = (await processes()).find((p) => p.command.includes(marker));
      assert.equal(running?.state, 'running', JSON.stringify(running));
      assert.ok((await longInUse()) >= 1);
      ac.abort('the test cancels');
      const e = await outcome;
      assert.notEqual(e, 'answered');
      await until('the run killed', async () =>
        (await processes()).find((p) => p.command.includes(marker))?.state === 'killed');
      await until('the long budget free again', async () => (await longInUse()) === 0);
      // The session goes on.
      const r = await c.callTool({ name: 'exec', arguments: { command: 'echo after' } });
      assert.equal(textOf(r), 'after\n');
    });
  });
}
