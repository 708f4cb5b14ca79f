/* daemon/checkpoint_int.h - what checkpoint.c and checkpoint_diff.c share (not part of the
 * checkpoint.h contract): the in-memory tree of a manifest or of the workspace, its lookup
 * table, and reading entries' contents. */
#ifndef DAEMON_CHECKPOINT_INT_H
#define DAEMON_CHECKPOINT_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"

#define CP_ENTRIES_MAX 1000000 /* entries in one workspace tree */
#define CP_DEPTH_MAX   256
#define CP_READ_MAX    (1u << 20) /* a text file larger than this is not diffed */

struct cp_ent {
    char type;     /* 'f' file, 'd' directory, 'l' symlink */
    unsigned mode; /* permission bits (07777) */
    uint64_t size, ino;
    int64_t mtime_ns, ctime_ns;
    char *path;   /* owned; relative to the root, no leading '/' */
    char *blob;   /* owned; "<id>/<n>" (files), else NULL */
    char *target; /* owned; a symlink's target, else NULL */
};

struct cp_tree {
    struct cp_ent *e;
    size_t n, cap;
    size_t *slots; /* open-addressing table of indexes + 1 (0 = empty), by path */
    size_t nslots;
};

struct checkpoint {
    pthread_mutex_t lock;
    int ws_fd, store_fd, blobs_fd, cp_fd;
    unsigned keep;
    bool fsync;
    uint64_t next_id;
    struct cp_tree index; /* the workspace as last saved or restored (stats and blobs) */
    bool index_valid;
};

void cp_tree_free(struct cp_tree *t);
/* Finds path in t (building the table on first use), or NULL. */
const struct cp_ent *cp_tree_find(struct cp_tree *t, const char *path);
/* Sorts t by path (the table is rebuilt on the next find). */
void cp_tree_sort(struct cp_tree *t);

/* Walks the workspace into t (entries without blobs). */
int cp_walk(int ws_fd, struct cp_tree *t, struct errinfo *err);

/* Loads manifest id into t (header, when not NULL, gets the parsed header: owned). ERR_NOT_FOUND
 * when there is none. */
int cp_load(struct checkpoint *c, const char *id, struct cp_tree *t, cJSON **header,
            struct errinfo *err);

/* Makes c->index valid: as it is, or (after a restart or a failed restore) the newest
 * manifest. */
void cp_load_index(struct checkpoint *c);

/* The newest checkpoint's id into buf, or "" when there is none. */
void cp_newest(struct checkpoint *c, char *buf, size_t bufsz);

/* The ids of every checkpoint, comma-separated (for messages). */
void cp_ids_text(struct checkpoint *c, char *buf, size_t bufsz);

/* An fd of a workspace file (O_RDONLY, no symlink followed anywhere), or -1 with errno. */
int cp_open_ws(int ws_fd, const char *path, int flags);

/* Reads up to CP_READ_MAX bytes of a file: a blob (blob != NULL) or a workspace path. Owned
 * (NUL-terminated) with *len, or NULL (too large: *too_large, or unreadable). */
char *cp_read(struct checkpoint *c, const char *blob, const char *path, size_t *len,
              bool *too_large);

#endif /* DAEMON_CHECKPOINT_INT_H */
