/* daemon/vfs_int.h - what vfs.c, vfs_tree.c and vfs_search.c share; not for other modules.
 *
 * Both files resolve tool paths the same way: vfs_normalize() first, then one openat2() call
 * relative to the root fd with RESOLVE_IN_ROOT, so a symlink can never lead out of the root. */
#ifndef DAEMON_VFS_INT_H
#define DAEMON_VFS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "errinfo.h"
#include "vfs.h"

/* Opens the normalized VFS path norm (as made by vfs_normalize) inside the root with openat2
 * flags (O_CLOEXEC is added); its escapes become the bytes they stand for. "/" opens the root
 * itself. Retries the EAGAIN that openat2 gives when a rename raced the resolution. Returns an
 * owned fd, or -1 with errno set. */
int vfs_open_in_root(const struct vfs *v, const char *norm, uint64_t flags);

/* The raw bytes of one escaped component name of a normalized path (for the *at() calls) into
 * raw, of VFS_NAME_MAX + 1 bytes. 0, or -1 (errno EINVAL) for a name vfs_normalize did not
 * make. */
int vfs_raw_name(const char *name, char *raw);

/* Fills err for the failure errno e of an operation on the VFS path vpath, in words a model can
 * act on ("/a/b: no such file or directory"). Never names a host path. */
void vfs_path_error(struct errinfo *err, const char *vpath, int e);

/* printf format for a VFS path in a message, leaving room for the advice after it. */
#define VFS_VP "%.180s"

/* ---- vfs_tree.c ---- */

/* A list of directory entry names; zero it to start, free with vfs_namelist_free. */
struct vfs_namelist {
    char **names; /* owned, each owned */
    size_t n, cap;
};

void vfs_namelist_free(struct vfs_namelist *l); /* frees the names; the list is reusable */

/* Reads the names in the directory dfd (borrowed), "." and ".." left out (and with hide_temps,
 * the names vfs_is_temp_name() flags), appending them to l.
 * With keep > 0 only the keep smallest names are kept (sorted) and *total (may be NULL) counts
 * all of them; the list is compacted whenever it doubles, so memory stays bounded by 2 * keep
 * names. Returns 0, or -1 with errno set. */
int vfs_read_names(int dfd, size_t keep, bool hide_temps, struct vfs_namelist *l, size_t *total);

/* One recursive removal: what it may touch and what it did. */
struct vfs_rm {
    dev_t dev;           /* the file system it stays on */
    uint64_t removed;    /* entries removed so far */
    const char *top;     /* borrowed: the VFS path named in messages */
    struct errinfo *err; /* may be NULL */
};

/* Removes the directory name in pfd (borrowed) and everything in it, never following a
 * symlink nor crossing onto another file system. -1 with c->err set on failure (what was
 * removed by then stays removed and is counted in c->removed). */
int vfs_rm_tree_at(int pfd, const char *name, struct vfs_rm *c);

/* Creates a private directory for a :memory: workspace under /dev/shm, $TMPDIR or /tmp,
 * first removing the ones left there by dead daemons. Returns its owned path (free with
 * free()) or NULL with err set. *lock_fd gets an owned fd of the directory holding a shared
 * flock for the daemon's life (close it after removing the directory): the mark of a live
 * daemon that another daemon sees even from another pid namespace, where our pid means
 * nothing. */
char *vfs_make_memory_dir(int *lock_fd, struct errinfo *err);

/* Removes the :memory: workspace directory path (a host path; modified during the call and
 * restored) and everything in it on file system dev; a failure is logged, not returned. */
void vfs_remove_memory_dir(char *path, dev_t dev);

/* ---- vfs_regex.c ---- */

/* Finds the longest byte string that every match of the PCRE2 pattern re (compiled in UTF mode,
 * caseless when icase) must contain. best and cur are caller buffers of strlen(re) + 1 bytes
 * each; the literal is left in best, NUL-terminated. Returns its length (0 when there is none,
 * e.g. with a top-level '|', an inline option such as (?i) or a verb such as (*CR)). */
size_t vfs_regex_literal(const char *re, bool icase, char *best, char *cur);

/* Splits the PCRE2 pattern q at its top-level '|' into alternatives (starts[i], lens[i];
 * borrowed from q), which hold max entries. Returns their count, or 0 when there are more than
 * max. */
size_t vfs_regex_split(const char *q, const char **starts, size_t *lens, size_t max);

/* ---- vfs_search_rx.c ---- */

#define VFS_LITS_MAX 8 /* most alternatives of a regex that get a prefilter literal */

/* A literal search looks for, with the position of its next occurrence in the current region
 * cached, so that several can be searched for in one pass (the earliest wins). */
struct vfs_lit {
    char *s; /* owned */
    size_t n;
    const char *hit; /* next occurrence at or after the last search start, if known */
    bool known;      /* hit (or its absence, hit == NULL) is valid for this region */
};

/* A compiled search regex (PCRE2, UTF mode, multiline; caseless when icase) with its match
 * budget. NULL with err set: ERR_INVALID "search: bad regex ..." or ERR_NOMEM. Owned:
 * vfs_rx_free (NULL is a no-op). Owner thread only (it holds match data). */
struct vfs_rx;
struct vfs_rx *vfs_rx_new(const char *q, bool icase, struct errinfo *err);
void vfs_rx_free(struct vfs_rx *rx);

/* Matches rx in b[from..to) with the subject b[subj..to) (so "^" and lookbehinds see no further
 * back than subj): 1 with the match in *so and *eo (offsets into b), 0 for none, -1 when the
 * match used up its backtracking budget. */
int vfs_rx_match(struct vfs_rx *rx, const char *b, size_t subj, size_t from, size_t to, size_t *so,
                 size_t *eo);

/* The prefilter literals of the regex q: one per top-level alternative (at most VFS_LITS_MAX)
 * into lits, or none when one alternative has none usable (shorter than 2 bytes, not ASCII when
 * caseless, holding a newline). *fold is set when they must be matched ASCII-folded (the caller
 * folds them). Returns their count, 0 for none, -1 when out of memory. */
int vfs_regex_prefilter(const char *q, bool icase, struct vfs_lit *lits, bool *fold);

#endif /* DAEMON_VFS_INT_H */
