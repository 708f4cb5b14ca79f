/* daemon/quota.h - the workspace quota: how much disk the workspace may use, and what it uses.
 *
 * DESIGN: usage is the space the workspace's files and directories take on disk (st_blocks, as
 * du counts it; hard links once). Counting it means walking the whole tree, which is done only
 * when needed; in between, usage is estimated:
 *
 *     estimate = used at the last walk + grown since + reserved
 *
 * where grown adds up every drop of the workspace file system's free space seen between two
 * samples (free space that comes back is not subtracted), plus the bytes each write_file wrote.
 * Whoever writes, the tools or commands writing directly in a sandbox, takes free space, so the
 * estimate follows them without any per-write bookkeeping. It errs high: other programs writing
 * to the same file system, and deletes, are not told apart; a too-high estimate only costs a
 * walk. Whenever the estimate reaches the quota the tree is walked and the estimate starts again
 * from the exact figure; a write is refused, or a run stopped, only on a walked figure. The
 * samples are taken by write_file, /health and, ten times a second while runs go on, the exec
 * watchdog (proc_watch.c): a command's writes could be missed only when, between two samples,
 * as much space is freed elsewhere on the disk as it wrote.
 *
 * write_file reserves its bytes before it writes (so concurrent writes cannot together pass the
 * quota) and releases them after.
 *
 * Thread-safety: any thread (internal lock, held only to copy; the walk and statfs run without
 * it). One walk at a time; a caller that needs a walk waits for one that started after it asked. */
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
void quota_release(struct quota *q, uint64_t bytes, bool written); /* written: it took place */

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

/* One sample of the free space (now bytes) added to grown: a drop since *last_free counts, space
 * that came back does not; *last_free becomes now. Returns the new grown. */
uint64_t quota_grow(uint64_t grown, uint64_t *last_free, uint64_t now);

#endif /* DAEMON_QUOTA_H */
