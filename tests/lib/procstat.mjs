// tests/lib/procstat.mjs - one process's (or thread's) line of /proc/PID/stat, parsed.
//
//   import { procStat } from '../lib/procstat.mjs';
//   const s = procStat(pid);        // { pid, comm, state, ppid, utime, stime } or null
//   const t = procStat(pid, tid);   // the thread tid of pid (/proc/PID/task/TID/stat)
//
// The command name sits in parentheses and may itself hold spaces and ')', so the fields are
// counted from the last ')'. state is one letter (R, S, D, T, Z, ...); utime and stime are in
// clock ticks (CLK_TCK, 100 on Linux). null when the process (or thread) is gone.
import { readFileSync } from 'node:fs';

export const CLK_TCK = 100;

export function procStat(pid, tid) {
  let text;
  try {
    text = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`,
                        'utf8');
  } catch {
    return null;
  }
  const close = text.lastIndexOf(')');
  const f = text.slice(close + 2).split(' '); // f[0] is field 3 (state)
  return {
    pid: Number(text.slice(0, text.indexOf(' '))),
    comm: text.slice(text.indexOf('(') + 1, close),
    state: f[0],
    ppid: Number(f[1]),
    utime: Number(f[11]),
    stime: Number(f[12]),
  };
}
