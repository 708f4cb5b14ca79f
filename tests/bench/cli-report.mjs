// tests/bench/cli-report.mjs - the "CLI and the status page" section of docs/performance.md
// from cli-bench.mjs's JSON lines ({"bench":"cli", "measure", "value", "target", "met"}), for
// cli-bench.mjs itself and for report.mjs (tests/bench/run.sh), so both write the same text.
export function cliSection(rows, { command, load } = {}) {
  const out = [];
  const p = (s = '') => out.push(s);
  p('## The CLI and the status page (issue 13)');
  p();
  p('Measured by `tests/bench/cli-bench.mjs` in one run against one runboxd' +
    (command ? `: \`${command}\`` : '') + '. The runbox runs, `runbox status` and the floor');
  p('are interleaved; the page loads use a new browser context each. Absolute times move with the');
  p("machine's load" + (load ? ` (load average ${load} during this run)` : '') +
    '; the ratios to the floors measured beside them are what to read.');
  p();
  p('| measure | this run | target |  |');
  p('| --- | ---: | ---: | --- |');
  for (const r of rows)
    p(`| ${r.measure} | ${r.value} | ${r.target ?? ''} | ${r.met === undefined ? '' : (r.met ? 'met' : '**missed**')} |`);
  p();
  p('- `runbox call` and `runbox status` are fast because the subcommands do not load libcurl');
  p('  (`mcp-proxy/cli_http.c` speaks HTTP/1.1 over one socket): a program that only loads libcurl');
  p('  and calls `curl_global_init` takes 13.5 ms here against 1.9 ms without (measured while');
  p('  writing it), which alone would leave little of the 15 ms.');
  p("- The Inspector CLI's time is mostly its own start (node, its bundle), then the same call");
  p('  through `runbox` over stdio.');
  p('- The page is one response (its style and script are in the HTML), with the first `/health`,');
  p('  `process_list` and `console_logs` answers counted in the bytes. The browser floor is a');
  p("  one-line page from node's http server, loaded the same way in the same run.");
  p("- The console line's time is from the daemon's console timestamp to the page seeing the entry,");
  p("  both on this machine's clock.");
  return out;
}
