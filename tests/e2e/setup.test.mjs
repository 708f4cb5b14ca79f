// tests/e2e/setup.test.mjs - `runbox setup CLIENT` for every client against fixture config
// files at their real places under a temporary HOME: existing entries and settings are kept
// (comments too, where the format has them), a missing file is created, a second run changes
// nothing, the old file is kept as .bak, --dry-run writes nothing, and an unreadable or broken
// file is left alone with a clear error. Each result is checked with that format's own parser:
// JSON.parse for JSON, Microsoft's jsonc-parser (VS Code's) for JSON with comments, Python's
// tomllib for Codex's TOML.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync,
         writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { parse as parseJsonc } from 'jsonc-parser';

import { runboxPath, runRunbox } from '../lib/proxy.mjs';

let home;
let env;
const RUNBOX = realpathSync(runboxPath());

before(() => {
  home = mkdtempSync(path.join(os.tmpdir(), 'runbox-setup-'));
  env = { HOME: home, XDG_CONFIG_HOME: '', APPDATA: '', CODEX_HOME: '' };
});
after(() => rmSync(home, { recursive: true, force: true }));

const setup = (args, extra = {}) => runRunbox(['setup', ...args], { env: { ...env, ...extra } });

function strictJson(text) {
  return JSON.parse(text);
}

function jsonc(text) {
  const errors = [];
  const v = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
  assert.deepEqual(errors, [], `jsonc-parser found errors in:\n${text}`);
  return v;
}

function toml(file) {
  const r = spawnSync('python3', ['-c',
    'import json, sys, tomllib; print(json.dumps(tomllib.load(open(sys.argv[1], "rb"))))', file],
  { encoding: 'utf8' });
  assert.equal(r.status, 0, `tomllib: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// client, its file under HOME, the fixture (null: no file yet), the parser, and what the
// result must hold: the runbox entry and the old content.
const cases = [
  {
    client: 'claude-desktop', file: '.config/Claude/claude_desktop_config.json',
    fixture: '{\n  "globalShortcut": "Ctrl+Space",\n  "mcpServers": {\n    "fs": {"command": "npx", "args": ["-y", "fs"]}\n  }\n}\n',
    parse: strictJson,
    check: (v) => {
      assert.deepEqual(v.mcpServers.runbox, { command: RUNBOX, args: [] });
      assert.deepEqual(v.mcpServers.fs, { command: 'npx', args: ['-y', 'fs'] });
      assert.equal(v.globalShortcut, 'Ctrl+Space');
    },
  },
  {
    client: 'claude-code', file: '.claude.json',
    fixture: '{"numStartups":5,"projects":{"/p":{"mcpServers":{}}},"mcpServers":{"other":{"type":"stdio","command":"o"}}}',
    parse: strictJson,
    check: (v) => {
      assert.deepEqual(v.mcpServers.runbox, { type: 'stdio', command: RUNBOX, args: [] });
      assert.equal(v.mcpServers.other.command, 'o');
      assert.deepEqual(v.projects, { '/p': { mcpServers: {} } });
      assert.equal(v.numStartups, 5);
    },
    hint: /claude mcp add --scope user runbox -- /,
  },
  {
    client: 'cursor', file: '.cursor/mcp.json',
    fixture: '{\n\t"mcpServers": {\n\t\t"a": {\n\t\t\t"command": "a"\n\t\t}\n\t}\n}\n',
    parse: strictJson,
    check: (v) => {
      assert.deepEqual(v.mcpServers.runbox, { command: RUNBOX, args: [] });
      assert.equal(v.mcpServers.a.command, 'a');
    },
  },
  {
    client: 'vscode', file: '.config/Code/User/mcp.json',
    fixture: '{\n    // my servers\n    "servers": {\n        "other": {"type": "stdio", "command": "x"}, // keep me\n    },\n    "inputs": [],\n}\n',
    parse: jsonc,
    comments: ['// my servers', '// keep me'],
    check: (v) => {
      assert.deepEqual(v.servers.runbox, { type: 'stdio', command: RUNBOX, args: [] });
      assert.equal(v.servers.other.command, 'x');
      assert.deepEqual(v.inputs, []);
    },
    hint: /code --add-mcp '\{"type":"stdio",/,
  },
  {
    client: 'windsurf', file: '.codeium/windsurf/mcp_config.json', fixture: '{"mcpServers": {}}',
    parse: strictJson,
    check: (v) => assert.deepEqual(v, { mcpServers: { runbox: { command: RUNBOX, args: [] } } }),
  },
  {
    client: 'zed', file: '.config/zed/settings.json',
    fixture: '// Zed settings\n{\n  "theme": "One Dark", /* mine */\n  "buffer_font_size": 15\n}\n',
    parse: jsonc,
    comments: ['// Zed settings', '/* mine */'],
    check: (v) => {
      assert.deepEqual(v.context_servers.runbox,
                       { source: 'custom', command: RUNBOX, args: [], env: {} });
      assert.equal(v.theme, 'One Dark');
      assert.equal(v.buffer_font_size, 15);
    },
  },
  {
    client: 'continue', file: '.continue/mcpServers/runbox.json', fixture: null,
    parse: strictJson,
    check: (v) => assert.deepEqual(v, { mcpServers: { runbox: { command: RUNBOX, args: [] } } }),
  },
  {
    client: 'opencode', file: '.config/opencode/opencode.json',
    fixture: '{\n  "$schema": "https://opencode.ai/config.json",\n  // models\n  "model": "anthropic/x",\n  "mcp": {\n    "other": {"type": "remote", "url": "https://e.example/mcp"}\n  }\n}\n',
    parse: jsonc,
    comments: ['// models'],
    check: (v) => {
      assert.deepEqual(v.mcp.runbox, { type: 'local', command: [RUNBOX], enabled: true });
      assert.equal(v.mcp.other.url, 'https://e.example/mcp');
      assert.equal(v.model, 'anthropic/x');
    },
  },
  {
    client: 'codex', file: '.codex/config.toml',
    fixture: '# Codex\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "npx"\nargs = ["-y", "docs"]\n\n[profiles.fast]\nmodel = "o4-mini"\n',
    toml: true,
    comments: ['# Codex'],
    check: (v) => {
      assert.deepEqual(v.mcp_servers.runbox, { command: RUNBOX, args: [] });
      assert.deepEqual(v.mcp_servers.docs, { command: 'npx', args: ['-y', 'docs'] });
      assert.equal(v.profiles.fast.model, 'o4-mini');
      assert.equal(v.model, 'o3');
    },
    hint: /codex mcp add runbox -- /,
  },
  {
    client: 'gemini-cli', file: '.gemini/settings.json',
    fixture: '{\n  "theme": "Dracula",\n  "mcpServers": {\n    "git": {"command": "uvx", "args": ["mcp-server-git"]}\n  }\n}\n',
    parse: strictJson,
    check: (v) => {
      assert.deepEqual(v.mcpServers.runbox, { command: RUNBOX, args: [] });
      assert.equal(v.mcpServers.git.command, 'uvx');
      assert.equal(v.theme, 'Dracula');
    },
    hint: /gemini mcp add --scope user runbox /,
  },
];

describe('runbox setup CLIENT', () => {
  for (const c of cases) {
    test(`${c.client}: ${c.fixture === null ? 'a new file' : 'an existing file'} at its real place`, async () => {
      const file = path.join(home, c.file);
      mkdirSync(path.dirname(file), { recursive: true });
      if (c.fixture !== null) writeFileSync(file, c.fixture);

      const dry = await setup([c.client, '--dry-run']);
      assert.equal(dry.code, 0, dry.stderr);
      assert.match(dry.stdout, new RegExp(`would ${c.fixture === null ? 'create' : 'change'} ${file}`));
      assert.match(dry.stdout, /^\+.*runbox/m);
      assert.equal(existsSync(file) ? readFileSync(file, 'utf8') : null, c.fixture,
                   '--dry-run writes nothing');

      const r = await setup([c.client]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`wrote the runbox entry into ${file}`));
      if (c.hint) assert.match(r.stdout, c.hint);
      const text = readFileSync(file, 'utf8');
      c.check(c.toml ? toml(file) : c.parse(text));
      for (const comment of c.comments || []) assert.ok(text.includes(comment), comment);
      if (c.fixture !== null) assert.equal(readFileSync(`${file}.bak`, 'utf8'), c.fixture);

      const again = await setup([c.client]);
      assert.equal(again.code, 0);
      assert.match(again.stdout, /already has this runbox entry .*nothing to change/);
      assert.equal(readFileSync(file, 'utf8'), text, 'a second run changes nothing');
    });
  }

  test('--env and --name go into the entry; a changed entry is replaced, not added', async () => {
    const file = path.join(home, '.cursor/mcp.json');
    const r = await setup(['cursor', '--env', 'DAEMON_URL=http://127.0.0.1:7800', '--name', 'rb']);
    assert.equal(r.code, 0, r.stderr);
    let v = JSON.parse(readFileSync(file, 'utf8'));
    assert.deepEqual(v.mcpServers.rb,
                     { command: RUNBOX, args: [], env: { DAEMON_URL: 'http://127.0.0.1:7800' } });
    await setup(['cursor', '--name', 'rb']);
    v = JSON.parse(readFileSync(file, 'utf8'));
    assert.deepEqual(v.mcpServers.rb, { command: RUNBOX, args: [] });
    assert.ok(v.mcpServers.runbox && v.mcpServers.a, 'the other entries stay');
  });

  test('--config edits another file, e.g. a project\'s', async () => {
    const file = path.join(home, 'proj/.vscode/mcp.json');
    const r = await setup(['vscode', '--config', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(jsonc(readFileSync(file, 'utf8')).servers.runbox.command, RUNBOX);
  });

  test('XDG_CONFIG_HOME moves the files that live under ~/.config', async () => {
    const xdg = path.join(home, 'xdg');
    const r = await setup(['zed'], { XDG_CONFIG_HOME: xdg });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(existsSync(path.join(xdg, 'zed/settings.json')));
  });

  test('a file that does not parse is left alone, with the line and column', async () => {
    const file = path.join(home, '.gemini/settings.json');
    const broken = '{\n  "theme": "x",\n  "mcpServers": {\n';
    writeFileSync(file, broken);
    const r = await setup(['gemini-cli']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /settings\.json: line 4, column 1: an object is not closed; nothing was changed/);
    assert.equal(readFileSync(file, 'utf8'), broken);
    writeFileSync(file, '{"mcpServers": []}');
    const r2 = await setup(['gemini-cli']);
    assert.equal(r2.code, 1);
    assert.match(r2.stderr, /mcpServers is not an object/);
  });

  test('an unreadable file is left alone and named', async () => {
    const asDir = path.join(home, '.codeium/windsurf/mcp_config.json');
    rmSync(asDir, { force: true });
    mkdirSync(asDir, { recursive: true });
    let r = await setup(['windsurf']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot read .*mcp_config\.json: it is not a regular file; nothing was changed/);
    rmSync(asDir, { recursive: true });

    // A file its user may not read. Root reads anything, so then runbox runs as nobody.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'runbox-setup-perm-'));
    const file = path.join(dir, 'mcp.json');
    writeFileSync(file, '{"mcpServers": {}}');
    chmodSync(file, 0o000);
    chmodSync(dir, 0o777);
    try {
      const asRoot = process.getuid() === 0;
      const cmd = asRoot ? 'setpriv' : RUNBOX;
      const args = asRoot ? ['--reuid=nobody', '--regid=nogroup', '--clear-groups', RUNBOX,
                             'setup', 'cursor', '--config', file]
                          : ['setup', 'cursor', '--config', file];
      r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, HOME: dir } });
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, /cannot read .*mcp\.json: Permission denied; nothing was changed/);
      chmodSync(file, 0o600);
      assert.equal(readFileSync(file, 'utf8'), '{"mcpServers": {}}');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('--list shows where each client\'s file is; bad usage is named', async () => {
    const r = await setup(['--list']);
    assert.equal(r.code, 0);
    assert.equal(r.stdout.trim().split('\n').length, cases.length);
    assert.match(r.stdout, new RegExp(`^codex +Codex +${home}/\\.codex/config\\.toml`, 'm'));
    const bad = await setup(['emacs']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /unknown client 'emacs'; known: claude-desktop/);
    const none = await setup([]);
    assert.equal(none.code, 2);
  });
});
