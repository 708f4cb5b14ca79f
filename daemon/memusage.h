/* daemon/memusage.h - how much memory one sandbox holds, read from /proc: what the exec
 * watchdog (proc_watch.c) compares with the memory limit where no cgroup bounds a run.
 *
 * What counts is what a memory cgroup would charge the run: its processes' private (anonymous)
 * memory; the shared memory they map or hold open, which lives on the kernel's internal shm
 * mount whatever made it (memfd_create, System V segments, MAP_SHARED|MAP_ANONYMOUS); and what
 * the sandbox's own tmpfs mounts (/tmp, /dev/shm) hold. Page cache of files on disk does not
 * count (the kernel can drop it).
 *
 * Two readings. The quick one adds RssAnon and RssShmem of /proc/<pid>/status for every process
 * (counters, no page-table walk); a page shared by several processes counts once for each, so it
 * is never below the exact one. The exact one reads /proc/<pid>/smaps, where a shared page is
 * split among the processes that map it (Pss); the watchdog asks for it only when the quick one
 * passes the limit. Both add the tmpfs mounts (statfs through /proc/<init>/root) and the shm
 * objects held open by a file descriptor (each once, by its allocated blocks); the exact reading
 * counts such an object's mapped pages only there.
 *
 * Not seen: pages of a shared object that no process maps any more while a mapping of another
 * part of it lives on, and descriptors in flight in a unix socket. A cgroup sees those too;
 * docs/security.md says so.
 *
 * Thread-safety: no shared state but a process-wide probe made once; any thread. */
#ifndef DAEMON_MEMUSAGE_H
#define DAEMON_MEMUSAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MEMUSAGE_PROCS_MAX 65536 /* most processes one reading walks */

struct memusage {
    uint64_t total;     /* bytes: processes + tmpfs + shm_fds */
    uint64_t processes; /* their private and mapped shared memory */
    uint64_t tmpfs;     /* what /tmp and /dev/shm hold */
    uint64_t shm_fds;   /* shm objects held open and not counted as mapped */
    unsigned nprocs;    /* processes read */
    bool exact;         /* the smaps reading */
};

/* Measures the sandbox whose bwrap (the daemon's child) is bwrap: every descendant process, and
 * the tmpfs mounts of its pid namespace's init, the child of bwrap other than agent (the network
 * agent, or 0: a fork of the daemon, not counted). exact chooses the reading. Returns 0, or -1
 * when bwrap has no such child (the sandbox is gone or not yet up). */
int memusage_measure(pid_t bwrap, pid_t agent, bool exact, struct memusage *out);

/* ---- pure parsers (unit-tested) ---- */

/* The kB value of the line "key: N kB" in a /proc/<pid>/status text, in bytes; 0 when absent. */
uint64_t memusage_status_bytes(const char *status, const char *key);

/* What one process's smaps text (len bytes) adds to a sandbox: Pss of private anonymous
 * mappings, "Anonymous" of private file mappings (their copied-on-write pages), and Pss of
 * shared mappings on the shm mount shm_dev whose inode is not in held[0..nheld) (those are
 * counted by their descriptors). Shared mappings of other files are page cache and do not
 * count. */
uint64_t memusage_smaps_bytes(const char *text, size_t len, dev_t shm_dev, const uint64_t *held,
                              size_t nheld);

#endif /* DAEMON_MEMUSAGE_H */
