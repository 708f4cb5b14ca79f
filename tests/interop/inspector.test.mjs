// Interop with the MCP Inspector CLI (@modelcontextprotocol/inspector --cli, installed in
// tests/node_modules by `npm ci`): it spawns the real `runbox` (env RUNBOX) against a real
// `runboxd` started here, lists the tools and calls them. Each run is a separate MCP session,
// so this also covers a client that connects, does one thing and disconnects.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDaemon } from '../lib/daemon.mjs';

const RUNBOX = process.env.RUNBOX;
// npx --no-install looks for the package in node_modules above its cwd: tests/.
const TESTS_DIR = dirname(dirname(fileURLToPath(import.meta.url)));

let daemon;
let home;

before(async () => {
    assert.ok(RUNBOX, 'env RUNBOX must name the runbox binary (ctest sets it)');
    daemon = await startDaemon({ workspace: ':memory:' });
    // The Inspector may keep state under ~/.mcp-inspector: give it a throwaway HOME.
    home = await mkdtemp(join(tmpdir(), 'runbox-inspector-home-'));
});

after(async () => {
    await daemon?.stop();
    if (home) await rm(home, { recursive: true, force: true });
});

// Runs the Inspector CLI against runbox; resolves {code, stdout, stderr}, never rejects.
function inspector(args) {
    const argv = [
        '--no-install',
        '@modelcontextprotocol/inspector',
        '--cli',
        '-q',
        '--format',
        'json',
        // The Inspector hands a stdio server only a few variables unless told with -e.
        '-e',
        `DAEMON_URL=${daemon.url}`,
        RUNBOX,
        ...args,
    ];
    const env = {
        ...process.env,
        HOME: home,
        npm_config_update_notifier: 'false',
        DAEMON_URL: daemon.url,
    };
    return new Promise((resolve) => {
        execFile(
            'npx',
            argv,
            { cwd: TESTS_DIR, env, maxBuffer: 16 << 20 },
            (err, stdout, stderr) => {
                const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
                resolve({ code, stdout, stderr });
            },
        );
    });
}

// The payload of a successful run: --format json wraps it as {"result": ...}.
function payload(run) {
    assert.equal(run.code, 0, `inspector exited ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
    let doc;
    assert.doesNotThrow(() => {
        doc = JSON.parse(run.stdout);
    }, `stdout is one JSON document: ${run.stdout}`);
    return doc.result ?? doc;
}

function textOf(result) {
    return result.content
        .filter((c) => c.type === 'text')
        .map((c) => c.text)
        .join('');
}

test('tools/list: the five workspace tools', async () => {
    const result = payload(await inspector(['--method', 'tools/list']));
    const names = result.tools.map((t) => t.name);
    for (const name of ['read_file', 'write_file', 'list_dir', 'remove', 'search']) {
        assert.ok(names.includes(name), `tools/list has ${name} (got ${names.join(', ')})`);
    }
    const write = result.tools.find((t) => t.name === 'write_file');
    assert.equal(write.inputSchema.type, 'object');
    assert.ok(write.inputSchema.properties.content, 'write_file has a content argument');
});

test('tools/call write_file (--tool-args-json) then read_file (--tool-arg)', async () => {
    const content = 'written by the MCP Inspector\n';
    const written = payload(
        await inspector([
            '--method',
            'tools/call',
            '--tool-name',
            'write_file',
            '--tool-args-json',
            JSON.stringify({ path: '/inspector/note.txt', content }),
        ]),
    );
    assert.notEqual(written.isError, true, JSON.stringify(written));
    assert.equal(written.structuredContent?.bytes, Buffer.byteLength(content));

    const read = payload(
        await inspector([
            '--method',
            'tools/call',
            '--tool-name',
            'read_file',
            '--tool-arg',
            'path=/inspector/note.txt',
        ]),
    );
    assert.notEqual(read.isError, true, JSON.stringify(read));
    assert.equal(textOf(read), content);
});

test('a bad argument is a tool error (exit 5) naming the argument', async () => {
    const run = await inspector([
        '--method',
        'tools/call',
        '--tool-name',
        'read_file',
        '--tool-args-json',
        '{"path":7}',
    ]);
    assert.equal(run.code, 5, `exit code (stdout: ${run.stdout}, stderr: ${run.stderr})`);
    assert.match(run.stdout + run.stderr, /path/);
});

test('an unknown tool fails the call (exit 5)', async () => {
    const run = await inspector(['--method', 'tools/call', '--tool-name', 'no_such_tool']);
    assert.equal(run.code, 5, `exit code (stdout: ${run.stdout}, stderr: ${run.stderr})`);
    assert.match(run.stdout + run.stderr, /no_such_tool/);
});
