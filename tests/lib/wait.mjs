// tests/lib/wait.mjs - waiting for a condition, not for a time.
//
//   import { until, sleep } from '../lib/wait.mjs';
//   const pid = await until('the run is listed', async () => (await list()).find(...));
//
// until(what, cond, { every }) calls cond() (sync or async) every `every` ms (default 20) until
// it returns a truthy value, and resolves with that value. It has no deadline: a loaded machine
// or a sanitizer build is only slower, never a failure, and a condition that never comes is
// bounded by ctest's per-test timeout. So that such a hang still says what it waited for, it
// writes "still waiting for <what>" (with how long so far, and describe()'s text when given)
// to stderr every 30 s; that line is never a verdict.
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function until(what, cond, { every = 20, describe } = {}) {
  const t0 = Date.now();
  let told = t0;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() - told >= 30000) {
      told = Date.now();
      const more = describe ? `: ${await describe()}` : '';
      process.stderr.write(`still waiting for ${what} (${Math.round((told - t0) / 1000)} s)${more}\n`);
    }
    await sleep(every);
  }
}
