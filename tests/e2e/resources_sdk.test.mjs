// tests/e2e/resources_sdk.test.mjs - the official TypeScript SDK client reads resources and
// prompts through the real runbox; the SDK checks every answer against its schemas.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { startDaemon } from '../lib/daemon.mjs';

let daemon, client;

before(async () => {
  daemon = await startDaemon({ workspace: ':memory:' });
  await daemon.call('write_file', { path: '/app/index.ts', content: 'export const x = 1;\n' });
  client = new Client({ name: 'runbox-resources-sdk', version: '1.0.0' });
  await client.connect(new StdioClientTransport({
    command: process.env.RUNBOX, args: [],
    env: { ...getDefaultEnvironment(), DAEMON_URL: daemon.url, RUNBOX_LOG: 'warn' },
  }));
});

after(async () => {
  await client.close();
  await daemon.stop();
});

test('the SDK lists and reads resources', async () => {
  const caps = client.getServerCapabilities();
  assert.ok(caps.resources && caps.prompts);
  const { resources } = await client.listResources();
  assert.ok(resources.some((r) => r.uri === 'file:///app/index.ts' && r.mimeType === 'text/x-typescript'));
  const { contents } = await client.readResource({ uri: 'file:///app/index.ts' });
  assert.equal(contents[0].text, 'export const x = 1;\n');
  const { resourceTemplates } = await client.listResourceTemplates();
  assert.equal(resourceTemplates[0].uriTemplate, 'file:///{path}');
});

test('the SDK lists and gets prompts, and sees -32602 for a bad one', async () => {
  const { prompts } = await client.listPrompts();
  assert.equal(prompts.length, 3);
  const r = await client.getPrompt({ name: 'explain_file', arguments: { path: '/app/index.ts' } });
  assert.match(r.messages[0].content.text, /export const x = 1;/);
  await assert.rejects(client.getPrompt({ name: 'nope' }), (e) => e instanceof McpError && e.code === -32602);
});
