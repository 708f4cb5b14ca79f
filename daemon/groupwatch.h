/* daemon/groupwatch.h - a process that kills the stdio servers' process groups when runboxd
 * dies, whatever kills it.
 *
 * PR_SET_PDEATHSIG takes the server runboxd started along when runboxd is killed with -9, but it
 * is not inherited across fork: behind a wrapper (sh -c, npx, uvx) the real server is a
 * grandchild, and one that ignores the end of its stdin outlived runboxd. So runboxd forks one
 * small watcher at start, while it has a single thread. The watcher holds one end of a unix
 * socket pair and runboxd (only runboxd: its end is close-on-exec, and no child keeps it past its
 * exec) the other; each server's group is added as it starts and forgotten once runboxd has
 * killed it. When its read sees the end of the socket, runboxd is gone, and the watcher sends
 * SIGKILL to every group it was not told is gone, then exits. A group is forgotten only after
 * runboxd's last kill of it, so a pgid the system hands out again later is never killed.
 *
 * The watcher runs as runboxd's account (it starts after root is dropped), in a process group
 * of its own (a kill of runboxd's group does not take it first), and ignores the stop signals:
 * it ends when runboxd does. Without it (the fork failed) the servers have PDEATHSIG alone.
 * Thread-safety: groupwatch_start() before any thread exists; the rest from any thread, and
 * from a child between its clone and its execve (system calls only). */
#ifndef RUNBOX_GROUPWATCH_H
#define RUNBOX_GROUPWATCH_H

#include <sys/types.h>

struct errinfo;

/* Forks the watcher. Call it once, while the process has one thread. 0, or -1 with err set
 * (nothing is watched then). */
int groupwatch_start(struct errinfo *err);

/* The process group pgid is live: the watcher kills it should runboxd die. Async-signal-safe
 * (one send(2)); a no-op without a watcher. */
void groupwatch_add(pid_t pgid);

/* The process group pgid was killed and its leader reaped: the watcher forgets it.
 * Async-signal-safe; a no-op without a watcher. */
void groupwatch_forget(pid_t pgid);

/* runboxd ends normally (its servers are stopped): the watcher kills what is left, if anything,
 * and ends, and this waits for it (up to 2 s), so that it is gone when runboxd is (a cgroup
 * emptied for removal, a test counting processes). Call it once no other thread uses the
 * watcher; a no-op without one. */
void groupwatch_stop(void);

#endif
