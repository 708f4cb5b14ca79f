// Interop with the official TypeScript SDK: its Client + StdioClientTransport spawn the real
// `runbox` (env RUNBOX) against a real `runboxd` started here on a free port, and use the
// workspace tools the way an MCP host does. The SDK checks every answer against its own
// schemas (and structuredContent against each tool's outputSchema), so a protocol slip
// anywhere fails here.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
    StdioClientTransport,
    getDefaultEnvironment,
} from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { startDaemon } from '../lib/daemon.mjs';

const RUNBOX = process.env.RUNBOX;
const WORKSPACE_TOOLS = ['list_dir', 'read_file', 'remove', 'search', 'write_file'];

let daemon;
let client;

before(async () => {
    assert.ok(RUNBOX, 'env RUNBOX must name the runbox binary (ctest sets it)');
    daemon = await startDaemon({ workspace: ':memory:' });
    client = new Client({ name: 'runbox-interop-sdk', version: '1.0.0' });
    const transport = new StdioClientTransport({
        command: RUNBOX,
        args: [],
        // The SDK passes only a few variables (PATH, HOME, ...) through by default.
        env: { ...getDefaultEnvironment(), DAEMON_URL: daemon.url },
        stderr: 'inherit',
    });
    await client.connect(transport);
});

after(async () => {
    await client?.close();
    await daemon?.stop();
});

function textOf(result) {
    assert.ok(Array.isArray(result.content), 'result has a content array');
    const texts = result.content.filter((c) => c.type === 'text').map((c) => c.text);
    assert.ok(texts.length > 0, 'result has a text block');
    return texts.join('');
}

test('initialize: the server names itself and offers tools', () => {
    const info = client.getServerVersion();
    assert.equal(typeof info?.name, 'string');
    assert.ok(info.name.length > 0);
    assert.equal(typeof info.version, 'string');
    assert.ok(client.getServerCapabilities()?.tools, 'capabilities.tools is present');
});

test('tools/list: the five workspace tools with their input schemas', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    for (const name of WORKSPACE_TOOLS) {
        assert.ok(names.includes(name), `tools/list has ${name} (got ${names.join(', ')})`);
    }
    for (const tool of tools.filter((t) => WORKSPACE_TOOLS.includes(t.name))) {
        assert.equal(tool.inputSchema.type, 'object', `${tool.name} inputSchema.type`);
        assert.equal(typeof tool.inputSchema.properties, 'object', `${tool.name} properties`);
        assert.ok(tool.description.length > 0, `${tool.name} has a description`);
        assert.equal(typeof tool.annotations, 'object', `${tool.name} annotations`);
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.deepEqual(byName.read_file.inputSchema.required, ['path']);
    assert.deepEqual([...byName.write_file.inputSchema.required].sort(), ['content', 'path']);
    // Hints that equal MCP's defaults are left out: read them as a client must.
    const hint = (t, name, dflt) => byName[t].annotations?.[name] ?? dflt;
    assert.equal(hint('read_file', 'readOnlyHint', false), true);
    assert.equal(hint('remove', 'readOnlyHint', false), false);
    assert.equal(hint('remove', 'destructiveHint', true), true);
    assert.equal(hint('read_file', 'openWorldHint', true), false);
    assert.equal(byName.list_dir.outputSchema?.type, 'object', 'list_dir has an outputSchema');
});

test('write_file then read_file returns the same text', async () => {
    const content = 'héllo from the SDK\nsecond line ✓\n';
    const written = await client.callTool({
        name: 'write_file',
        arguments: { path: '/interop/sdk/hello.txt', content },
    });
    assert.notEqual(written.isError, true, `write_file failed: ${JSON.stringify(written)}`);
    assert.equal(written.structuredContent?.path, '/interop/sdk/hello.txt');
    assert.equal(written.structuredContent?.bytes, Buffer.byteLength(content));
    assert.equal(written.structuredContent?.created, true);

    const read = await client.callTool({
        name: 'read_file',
        arguments: { path: '/interop/sdk/hello.txt' },
    });
    assert.notEqual(read.isError, true, `read_file failed: ${JSON.stringify(read)}`);
    assert.equal(textOf(read), content);
});

test('list_dir returns structuredContent matching its outputSchema', async () => {
    await client.callTool({
        name: 'write_file',
        arguments: { path: '/interop/list/a.txt', content: 'abc' },
    });
    const listed = await client.callTool({ name: 'list_dir', arguments: { path: '/interop/list' } });
    assert.notEqual(listed.isError, true, `list_dir failed: ${JSON.stringify(listed)}`);
    const sc = listed.structuredContent;
    assert.ok(sc, 'structuredContent is present');
    assert.ok(Array.isArray(sc.entries));
    const entry = sc.entries.find((e) => e.name === 'a.txt');
    assert.ok(entry, `a.txt is listed: ${JSON.stringify(sc.entries)}`);
    assert.equal(entry.type, 'file');
    assert.equal(entry.size, 3);
    assert.equal(sc.truncated, false);
    // The text block carries the same JSON for clients that ignore structuredContent.
    assert.deepEqual(JSON.parse(textOf(listed)), sc);
});

test('search finds the line, remove deletes the tree (structuredContent)', async () => {
    await client.callTool({
        name: 'write_file',
        arguments: { path: '/interop/find/deep/x.js', content: 'one\nneedle here\nthree\n' },
    });
    const found = await client.callTool({
        name: 'search',
        arguments: { query: 'needle', path: '/interop/find', ext: 'js' },
    });
    assert.notEqual(found.isError, true, JSON.stringify(found));
    assert.equal(textOf(found), '/interop/find/deep/x.js:2: needle here');

    const removed = await client.callTool({
        name: 'remove',
        arguments: { path: '/interop/find', recursive: true },
    });
    assert.notEqual(removed.isError, true, JSON.stringify(removed));
    assert.deepEqual(removed.structuredContent, { path: '/interop/find', removed: 3 });

    const gone = await client.callTool({ name: 'list_dir', arguments: { path: '/interop/find' } });
    assert.equal(gone.isError, true, 'the removed directory is gone');
    assert.match(textOf(gone), /no such file or directory/);
});

test('parallel calls each get their own answer', async () => {
    const n = 16;
    await Promise.all(
        Array.from({ length: n }, (_, i) =>
            client.callTool({
                name: 'write_file',
                arguments: { path: `/interop/par/${i}.txt`, content: `file ${i}` },
            }),
        ),
    );
    const reads = await Promise.all(
        Array.from({ length: n }, (_, i) =>
            client.callTool({ name: 'read_file', arguments: { path: `/interop/par/${i}.txt` } }),
        ),
    );
    reads.forEach((r, i) => assert.equal(textOf(r), `file ${i}`));
});

test('bad arguments come back as isError naming the argument', async () => {
    const wrongType = await client.callTool({ name: 'read_file', arguments: { path: 42 } });
    assert.equal(wrongType.isError, true);
    assert.match(textOf(wrongType), /path/);

    const missing = await client.callTool({ name: 'write_file', arguments: { path: '/x.txt' } });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /content/);

    const unexpected = await client.callTool({
        name: 'read_file',
        arguments: { path: '/x.txt', bogus_arg: 1 },
    });
    assert.equal(unexpected.isError, true);
    assert.match(textOf(unexpected), /bogus_arg/);
});

test('an unknown tool is JSON-RPC error -32602', async () => {
    await assert.rejects(
        client.callTool({ name: 'no_such_tool', arguments: {} }),
        (err) => {
            assert.ok(err instanceof McpError, `expected McpError, got ${err}`);
            assert.equal(err.code, ErrorCode.InvalidParams);
            assert.equal(err.code, -32602);
            return true;
        },
    );
});

test('the session keeps working after the errors', async () => {
    const read = await client.callTool({
        name: 'read_file',
        arguments: { path: '/interop/sdk/hello.txt' },
    });
    assert.notEqual(read.isError, true);
    assert.match(textOf(read), /héllo from the SDK/);
    await client.ping();
});
