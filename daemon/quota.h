/* daemon/quota.h - the workspace quota: how much disk the workspace may use, and what it uses.
 *
 * DESIGN: usage is the space the workspace's files and directories take on disk (st_blocks, as
 * du counts it; hard links once). Counting it means walking the whole tree, which is done only
 * when needed; in between, usage is estimated from the workspace file system's free space:
 *
 *     estimate = used at the last walk + (free space then - free space now) + reserved
 *
 * Whoever writes, the tools or commands writing directly in a sandbox, takes free space, so the
 * estimate follows them without any per-write bookkeeping; a delete gives the space back. Other
 * programs writing to the same file system make the estimate too high, never too low (unless
 * they free space at the same time), and a too-high estimate only costs a walk: whenever the
 * estimate reaches the quota, the tree is walked and the estimate starts again from the exact
 * figure. A write is refused, or a run stopped, only on an exact figure.
 *
 * write_file reserves its bytes before it writes (so concurrent writes cannot together pass the
 * quota) and releases them after, once the free space shows them. The exec watchdog checks the
 * quota while runs go on (proc_watch.c).
 *
 * Thread-safety: any thread (internal lock). The walk runs without the lock; one walk at a time,
 * and callers that need one while it runs wait for its result. */
#ifndef DAEMON_QUOTA_H
#define DAEMON_QUOTA_H

#include <stdbool.h>
#include <stdint.h>

#include "errinfo.h"

#define QUOTA_DEFAULT_MB        10240 /* a workspace on disk */
#define QUOTA_DEFAULT_MEMORY_MB 2048  /* a :memory: workspace, which takes RAM */
#define QUOTA_WRITE_EXTRA       4096  /* a reservation's room for the new name and inode */

struct quota; /* opaque */

/* A quota of limit_mb MiB (0: none) over the workspace whose root directory is root_fd
 * (borrowed; O_PATH is enough; it must outlive the quota). Walks nothing yet. Owned: quota_free.
 * NULL with err set when out of memory. */
struct quota *quota_new(int root_fd, uint64_t limit_mb, struct errinfo *err);

/* NULL is a no-op. */
void quota_free(struct quota *q);

/* The quota in MiB, 0 for none (also for q NULL). */
uint64_t quota_limit_mb(const struct quota *q);

/* Reserves bytes (and QUOTA_WRITE_EXTRA) for a write that is about to happen. Fails with
 * ERR_TOO_LARGE "workspace is full (quota N MiB, used M MiB): ..." when the workspace with them
 * would pass the quota (counted exactly). Release the reservation with quota_release(bytes) when
 * the write is over, whether it succeeded or not. q NULL or no quota: always 0. */
int quota_reserve(struct quota *q, uint64_t bytes, struct errinfo *err);
void quota_release(struct quota *q, uint64_t bytes);

/* The usage in bytes, exact when it is near or past the quota (the tree is walked when the
 * estimate reaches the quota), else the estimate. *over (may be NULL) tells whether it is past
 * the quota. Returns 0, or -1 when there is no quota or the workspace cannot be measured. */
int quota_usage(struct quota *q, uint64_t *used, bool *over);

/* The estimate alone, never walking (for /health): 0, or -1 when there is no quota or no walk
 * was made yet. */
int quota_peek(struct quota *q, uint64_t *used);

/* Walks the tree now and sets the estimate to the exact figure; the daemon does it once at start
 * from its watchdog thread. Returns 0, or -1 when the walk failed. */
int quota_rescan(struct quota *q);

/* ---- pure (unit-tested) ---- */

/* The estimate above: used at the walk, plus the free space given up since (0 when more is free
 * now), plus the reserved bytes. */
uint64_t quota_estimate(uint64_t walked, uint64_t free_then, uint64_t free_now, uint64_t reserved);

#endif /* DAEMON_QUOTA_H */
