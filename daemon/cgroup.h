/* daemon/cgroup.h - the sandboxes' cgroups (cgroup v2): memory and process limits that hold for a
 * whole sandbox, an OOM kill reported as such, and cgroup.kill to end every process of a run.
 *
 * DESIGN: at start-up, while the daemon may still be root and before any thread exists,
 * cgroup_setup() finds the daemon's own cgroup D in the unified hierarchy. When D may be written,
 * it creates R = D/runboxd-<pid>, moves the daemon into the leaf R/daemon (processes may only
 * live in leaves once controllers are enabled, and starting a sandbox in R/exec-<id> needs write
 * access to the common ancestor R), enables memory and pids for R's children as far as D offers
 * them, and hands R to the account root is dropped to (cgroup v2 delegation). Each run gets
 * R/exec-<id> with memory.max (no swap) and pids.max; the sandbox starts inside it atomically
 * (clone3 with CLONE_INTO_CGROUP, so nothing is migrated), and when it ends memory.events says
 * whether the OOM killer struck. A controller D does not offer falls back to an rlimit
 * (RLIMIT_DATA, RLIMIT_NPROC); without any usable cgroup every limit is an rlimit.
 *
 * Directories left by a daemon that died (R of a pid no longer running) are removed by the next
 * cgroup_setup(); a daemon that dropped root cannot remove its own R and R/daemon on exit, so
 * those two empty directories wait for the next start.
 *
 * Thread-safety: cgroup_setup on the main thread before any other thread; cgroup_run_create,
 * cgroup_run_end, cgroup_tidy and cgroup_disable from one thread (the exec supervisor);
 * cgroup_run_kill and the getters from any thread; cgroup_free after the supervisor stopped. */
#ifndef DAEMON_CGROUP_H
#define DAEMON_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "errinfo.h"

#define CGROUP_PATH_MAX 512

struct cgroup; /* opaque */

/* Creates the daemon's cgroups, owned by uid/gid (the account root is dropped to; the current
 * ids when not root). enabled false: cgroups stay off ("turned off by --no-cgroup"). Never fails
 * for a host reason: the returned cgroup is then off or partial and cgroup_reason() says why.
 * NULL only when out of memory (treat as off). Owned: cgroup_free. */
struct cgroup *cgroup_setup(uid_t uid, gid_t gid, bool enabled);

/* Removes the runs' directories still pending and closes R. NULL is a no-op. */
void cgroup_free(struct cgroup *cg);

/* True when runs get a cgroup of their own (cgroup.kill); false for NULL. */
bool cgroup_is_on(const struct cgroup *cg);

/* True when that cgroup limits memory (memory.max) / processes (pids.max). */
bool cgroup_has_memory(const struct cgroup *cg);
bool cgroup_has_pids(const struct cgroup *cg);

/* R's path, or NULL when off. Borrowed. */
const char *cgroup_path(const struct cgroup *cg);

/* Why cgroups are off or lack a controller (one line naming the fix), or NULL when all is on.
 * Borrowed, valid until cgroup_disable or cgroup_free. */
const char *cgroup_reason(const struct cgroup *cg);

/* Turns cgroups off for the rest of the daemon's life (e.g. clone3 is refused by a seccomp
 * filter); why is kept as the reason. */
void cgroup_disable(struct cgroup *cg, const char *why);

/* Creates R/exec-<id> with memory_bytes (memory.max, memory.swap.max 0) and pids (pids.max),
 * each only when that controller is on. Returns the directory's fd (for CLONE_INTO_CGROUP,
 * cgroup_run_kill and cgroup_run_end), or -1 with err set (ERR_IO): a run must then not start,
 * since it would run without its memory limit. */
int cgroup_run_create(struct cgroup *cg, uint64_t id, uint64_t memory_bytes, uint32_t pids,
                      struct errinfo *err);

/* SIGKILLs every process in the run's cgroup (cgroup.kill). fd < 0 is a no-op. */
void cgroup_run_kill(int fd);

/* After the run's first process was reaped: kills what is left, closes fd and queues R/exec-<id>
 * for cgroup_tidy. Returns true when the OOM killer killed a process of the run (memory.events
 * oom_kill). fd < 0 is a no-op returning false. */
bool cgroup_run_end(struct cgroup *cg, uint64_t id, int fd);

/* Removes the queued runs' directories. A cgroup stays busy for a moment after its last process
 * was reaped, so the exec supervisor calls this after it handed the results over (outside its
 * lock); true when some are still busy (call again soon). NULL: false. */
bool cgroup_tidy(struct cgroup *cg);

/* ---- pure helpers (unit-tested) ---- */

/* The value of the line "key N" in a flat-keyed file such as memory.events; 0 when absent or
 * not a number. */
uint64_t cgroup_parse_key(const char *text, const char *key);

/* True when the space-separated list (cgroup.controllers) holds word. */
bool cgroup_has_word(const char *list, const char *word);

/* The directory of the process's cgroup v2 from the texts of /proc/self/cgroup and
 * /proc/self/mountinfo: the "0::<path>" line joined to the cgroup2 mount that holds it (a mount
 * whose root is a prefix of that path; octal escapes in the mount point decoded). -1 when there
 * is no cgroup v2 line or mount, or the result does not fit in outsz. */
int cgroup_own_dir(const char *proc_cgroup, const char *mountinfo, char *out, size_t outsz);

#endif /* DAEMON_CGROUP_H */
