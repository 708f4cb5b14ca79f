// Integration: the exec tool names exactly the promised programs that are installed (issue 10,
// part 1). /health's sandbox.tools and the exec description in GET /tools agree with what the
// sandbox itself finds on its PATH, and each named version is the one the program prints there.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { startDaemon } from '../lib/daemon.mjs';

const PROMISED = ['node', 'npm', 'python3', 'git'];

describe('exec: the promised tools, truthfully', () => {
  let d;
  before(async () => { d = await startDaemon(); });
  after(async () => { await d.stop(); });

  test('/health lists each promised program with the version the sandbox sees', async () => {
    const h = await d.get('/health');
    const tools = h.body.sandbox.tools;
    assert.deepEqual(Object.keys(tools).sort(), [...PROMISED].sort());
    for (const name of PROMISED) {
      const r = await d.call('exec', { command: `command -v ${name} && ${name} --version` });
      const s = r.body.structured;
      if (tools[name] === null) {
        assert.notEqual(s.exit_code, 0, `${name} is listed as missing but the sandbox has it`);
        continue;
      }
      assert.equal(s.exit_code, 0, `${name} is listed but the sandbox cannot run it: ${s.stderr}`);
      const [path, version] = s.stdout.split('\n');
      assert.equal(path, tools[name].path);
      assert.ok(version.includes(tools[name].version), `${name}: ${version} vs ${tools[name].version}`);
    }
  });

  test('the exec description in GET /tools names the installed ones and only those', async () => {
    const h = await d.get('/health');
    const list = await d.get('/tools');
    const exec = list.body.tools.find((t) => t.name === 'exec');
    const tools = h.body.sandbox.tools;
    const installed = PROMISED.filter((n) => tools[n]);
    const missing = PROMISED.filter((n) => !tools[n]);
    const have = installed.map((n) => `${n} ${tools[n].version}`).join(', ');
    const want = missing.length ? `Installed: ${have}; not installed: ${missing.join(', ')}.`
                                : `Installed: ${have}.`;
    assert.ok(exec.description.endsWith(want), exec.description.slice(-200));
    assert.equal(exec.hostTools, undefined);
  });
});
