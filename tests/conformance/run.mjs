// tests/conformance/run.mjs - runs the official MCP conformance suite (the pinned
// @modelcontextprotocol/conformance of tests/package.json) against a server started here, and
// compares each scenario's result with the committed list of expected results.
//
//   node tests/conformance/run.mjs --server fixture --requirements 2025-11-25
//   node tests/conformance/run.mjs --server runboxd --requirements 2026-07-28
//
// --server fixture runs $CONFORMANCE_FIXTURE (tests/conformance/fixture.c) with --port 0;
// --server runboxd runs $RUNBOXD through tests/lib/daemon.mjs. Either way the server takes a
// free port and the URL is read back from its "listening on" line. The suite runs exactly the
// scenarios of the requirement set (`conformance server --url URL --requirements REV`), at the
// revision's own wire (2025-11-25: initialize and a session; 2026-07-28: stateless _meta).
//
// expected/<server>-<rev>.txt lists every scenario the run reports, one per line:
// "<scenario> pass|fail [# why]". The test fails when a scenario that should pass fails (a
// regression), when one listed as failing passes (update the list and docs/conformance.md), or
// when a scenario is missing from the list or from the run. --update rewrites the list from the
// run. The failed checks of every scenario that went the wrong way are printed, and the suite's
// whole output is kept in a temporary directory named in the output.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const suiteDir = path.join(here, '..', 'node_modules', '@modelcontextprotocol', 'conformance');

function usage(msg) {
  console.error(`run.mjs: ${msg}`);
  console.error('usage: node run.mjs --server fixture|runboxd --requirements REV [--update]');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { update: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--server') o.server = argv[++i];
    else if (argv[i] === '--requirements') o.requirements = argv[++i];
    else if (argv[i] === '--update') o.update = true;
    else usage(`unknown argument ${argv[i]}`);
  }
  if (!['fixture', 'runboxd'].includes(o.server)) usage('--server must be fixture or runboxd');
  if (!/^\d{4}-\d{2}-\d{2}$/.test(o.requirements || '')) usage('--requirements needs a revision');
  return o;
}

// Starts the fixture; resolves { url, stop() } once it printed its listening line.
function startFixture() {
  const bin = process.env.CONFORMANCE_FIXTURE;
  if (!bin) usage('CONFORMANCE_FIXTURE is not set: point it at the fixture (ctest sets it)');
  const child = spawn(bin, ['--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) =>
    resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const m = /^listening on (http:\/\/\S+)$/.exec(line);
      if (!m) return;
      resolve({
        url: m[1],
        stop: async () => {
          child.kill('SIGTERM');
          return exited;
        },
      });
    });
    exited.then(({ code, signal }) =>
      reject(new Error(`the fixture exited before serving (code ${code}, signal ${signal})`)));
  });
}

async function startRunboxd() {
  const { startDaemon } = await import('../lib/daemon.mjs');
  const d = await startDaemon({ workspace: ':memory:' });
  return { url: `${d.url}/mcp`, stop: () => d.stop() };
}

// Runs the suite; resolves { code, out } with its whole stdout and stderr.
function runSuite(url, requirements, outDir) {
  const pkg = JSON.parse(readFileSync(path.join(suiteDir, 'package.json'), 'utf8'));
  const cli = path.join(suiteDir, pkg.bin.conformance);
  const args = [cli, 'server', '--url', url, '--requirements', requirements, '-o', outDir];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'],
                                                  env: { ...process.env, NO_COLOR: '1' } });
    let out = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { out += c; });
    child.on('exit', (code) => resolve({ code, out, version: pkg.version }));
  });
}

// The summary lines: "✓ tools-list: 3 passed, 0 failed" -> Map(scenario -> {pass, passed, failed})
function parseSummary(out) {
  const plain = out.replace(/\x1b\[[0-9;]*m/g, '');
  const at = plain.lastIndexOf('=== SUMMARY ===');
  const results = new Map();
  if (at < 0) return results;
  for (const line of plain.slice(at).split('\n')) {
    const m = /^([✓✗]) (\S+): (\d+) passed, (\d+) failed$/.exec(line.trim());
    if (m) results.set(m[2], { pass: m[1] === '✓', passed: +m[3], failed: +m[4] });
  }
  return results;
}

// expected/<server>-<rev>.txt -> Map(scenario -> {pass, why})
function readExpected(file) {
  const map = new Map();
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return map;
  }
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) continue;
    const [scenario, verdict] = line.split(/\s+/);
    if (verdict !== 'pass' && verdict !== 'fail')
      throw new Error(`${file}: "${raw}": the verdict must be pass or fail`);
    map.set(scenario, { pass: verdict === 'pass', why: (/#\s*(.*)$/.exec(raw) || [])[1] });
  }
  return map;
}

function writeExpected(file, results, old, header) {
  const lines = [header];
  for (const [scenario, r] of results) {
    const why = old.get(scenario)?.why;
    lines.push(`${scenario} ${r.pass ? 'pass' : 'fail'}${why ? `  # ${why}` : ''}`);
  }
  writeFileSync(file, lines.join('\n') + '\n');
}

// The failed checks of a scenario, from its checks.json in the suite's output directory.
function failedChecks(outDir, scenario) {
  const dirs = readdirSync(outDir).filter((d) => d.startsWith(`server-${scenario}-`));
  const lines = [];
  for (const d of dirs) {
    let checks = [];
    try {
      checks = JSON.parse(readFileSync(path.join(outDir, d, 'checks.json'), 'utf8'));
    } catch {
      continue;
    }
    for (const c of checks)
      if (c.status === 'FAILURE')
        lines.push(`      ${c.id}: ${c.errorMessage || c.description}`);
  }
  return lines;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const expectedFile = path.join(here, 'expected', `${o.server}-${o.requirements}.txt`);
  const expected = readExpected(expectedFile);
  const outDir = mkdtempSync(path.join(os.tmpdir(), `conformance-${o.server}-`));
  const server = await (o.server === 'fixture' ? startFixture() : startRunboxd());
  let run, exit;
  try {
    console.log(`conformance: ${o.server} at ${server.url}, requirements ${o.requirements}`);
    run = await runSuite(server.url, o.requirements, outDir);
  } finally {
    exit = await server.stop();
  }
  const results = parseSummary(run.out);
  if (results.size === 0) {
    console.log(run.out);
    console.log(`conformance: the suite printed no summary (exit ${run.code}); output above`);
    process.exit(1);
  }
  if (o.update) {
    writeExpected(expectedFile, results, expected,
                  `# ${o.server}, conformance ${run.version} --requirements ${o.requirements}: ` +
                  'scenario pass|fail [# why] (tests/conformance/run.mjs)');
    console.log(`conformance: wrote ${expectedFile}`);
  }
  const problems = [];
  let passed = 0;
  // A server that crashed (or was killed by a sanitizer) mid-run must not hide behind the
  // scenarios that ran before it died.
  if (exit.code !== 0)
    problems.push(`the ${o.server} did not stop cleanly on SIGTERM: exit code ${exit.code}, ` +
                  `signal ${exit.signal} (its stderr is above)`);
  for (const [scenario, r] of results) {
    const want = expected.get(scenario);
    const line = `  ${r.pass ? 'pass' : 'FAIL'} ${scenario} (${r.passed} checks passed, ` +
                 `${r.failed} failed)`;
    console.log(line);
    if (r.pass) passed++;
    if (o.update) continue;
    if (!want) problems.push(`${scenario}: not in ${path.basename(expectedFile)}`);
    else if (want.pass && !r.pass)
      problems.push(`${scenario}: REGRESSION, expected to pass\n` +
                    failedChecks(outDir, scenario).join('\n'));
    else if (!want.pass && r.pass)
      problems.push(`${scenario}: passes now, but the list says fail: update ` +
                    `${path.basename(expectedFile)} and docs/conformance.md (run.mjs --update)`);
  }
  if (!o.update)
    for (const scenario of expected.keys())
      if (!results.has(scenario)) problems.push(`${scenario}: listed, but the suite did not run it`);
  console.log(`conformance ${run.version}: ${passed} of ${results.size} scenarios passed ` +
              `(suite exit ${run.code})`);
  if (problems.length) {
    console.log(`\n${problems.length} unexpected result(s):\n- ${problems.join('\n- ')}`);
    console.log(`\nthe suite's results: ${outDir}`);
    process.exit(1);
  }
  rmSync(outDir, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(`conformance: ${e.stack || e}`);
  process.exit(1);
});
