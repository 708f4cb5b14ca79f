/* daemon/vfs.h - the workspace: one directory tree that tools address with absolute paths
 * ("/src/main.js", "/" is the root).
 *
 * Confinement: every path is normalized lexically first ("." and ".." are resolved, ".." never
 * climbs above "/"), then opened relative to the root's directory fd with
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), so a symlink that a sandboxed command
 * planted resolves inside the root ("/etc/passwd" as a link target means <root>/etc/passwd),
 * never outside it. Directory walks (list, search, recursive remove) never follow symlinks.
 * Writes go to a temp file in the target's directory, are fsync'ed (unless the vfs was opened
 * with fsync off) and renamed over the target, so a crash never leaves a torn file.
 *
 * Thread-safety: any thread; a vfs holds only immutable state after vfs_open. Two writers of the
 * same file race as rename(2) does: the last rename wins, and neither file is ever torn. */
#ifndef DAEMON_VFS_H
#define DAEMON_VFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "errinfo.h"

#define VFS_PATH_MAX 4096 /* bytes of a normalized path */
#define VFS_NAME_MAX 255  /* bytes of one path component */
#define VFS_MEMORY   ":memory:"
#define VFS_READ_CAP (1u << 20) /* default most bytes one vfs_read returns */
#define VFS_LIST_CAP 10000      /* default most entries one vfs_list returns */

struct vfs; /* opaque */

/* ---- Names (vfs_names.c) ----
 * A file name is any bytes but '/' and NUL; what the tools send is UTF-8. So a VFS path, as every
 * function here takes and gives it, is text in which a byte that is not part of a valid UTF-8
 * character and a control character (U+0000-U+001F, U+007F) are written \xHH (two hex digits,
 * lower case) and a backslash is written \\. A file named "caf" + byte 0xE9 is "/caf\xe9", one
 * named "a\b" is "/a\\b", one holding a newline "/a\x0ab". vfs_normalize reads any path with
 * these escapes (hex digits in either case) and gives the canonical one, so such a file can be
 * read, written and removed with the name a listing showed. \x00 and \x2f are refused (no name
 * holds NUL or '/'), as is a backslash before anything else. */

#define VFS_ESCAPE_NOROOM ((size_t)-1)

/* Pure. Writes name[0..n) (raw bytes) escaped into out, NUL-terminated, in at most outsz bytes
 * (4 * n + 1 always suffice). Returns the length, or VFS_ESCAPE_NOROOM. */
size_t vfs_escape(const char *name, size_t n, char *out, size_t outsz);

/* The same into an owned string (free()), or NULL when out of memory. */
char *vfs_escape_dup(const char *name);

/* Pure. Writes the raw bytes of the escaped text s[0..n) into out, NUL-terminated, in at most
 * outsz bytes (n + 1 always suffice). Returns the length, or VFS_ESCAPE_NOROOM for a bad escape
 * (then *bad, when bad is not NULL, points at its backslash) or no room (*bad NULL). */
size_t vfs_unescape(const char *s, size_t n, char *out, size_t outsz, const char **bad);

struct vfs_options {
    bool fsync;      /* fsync files and directories on write (default true) */
    size_t read_cap; /* 0 = VFS_READ_CAP */
};

/* Opens (creating it and its parents with mode 0700 if missing) the workspace at dir, or a
 * private RAM-backed directory when dir is VFS_MEMORY (removed by vfs_free; stale ones left by a
 * crashed daemon are removed at the next :memory: open). opt may be NULL for the defaults.
 * Fails with ERR_UNAVAILABLE when the kernel lacks openat2 (Linux < 5.6).
 * Returns an owned vfs (free with vfs_free) or NULL with err set. */
struct vfs *vfs_open(const char *dir, const struct vfs_options *opt, struct errinfo *err);

/* Closes the root; for a :memory: workspace also deletes its tree. NULL is a no-op. */
void vfs_free(struct vfs *v);

/* The root's host path (absolute). Borrowed for the vfs's lifetime. */
const char *vfs_root_path(const struct vfs *v);

/* The root directory fd (O_PATH|O_DIRECTORY), borrowed for the vfs's lifetime. */
int vfs_root_fd(const struct vfs *v);

/* Opens the workspace directory at the normalized path norm, resolved inside the root (a
 * symlink cannot lead out), as an O_PATH|O_DIRECTORY fd the caller closes; for watching it
 * (inotify through /proc/self/fd). -1 with err: ERR_NOT_FOUND when it is missing, ERR_INVALID
 * when it is not a directory. */
int vfs_open_dir(struct vfs *v, const char *norm, struct errinfo *err);

/* Pure. Normalizes a tool path into out ("/a/b": one leading slash, no trailing slash, no "."
 * or ".." components, no empty components, escapes in their canonical form (see Names); the
 * root is "/"). A relative path is taken from the root. Idempotent. Fails with ERR_INVALID for
 * an empty path (a NUL-free check is the caller's: C strings), a backslash that starts no escape
 * ("paths use '/'"), an escaped NUL or '/', a component over VFS_NAME_MAX bytes once unescaped,
 * or with ERR_TOO_LARGE for a result over VFS_PATH_MAX bytes. outsz must be at least
 * VFS_PATH_MAX + 1. */
int vfs_normalize(const char *in, char *out, size_t outsz, struct errinfo *err);

enum vfs_type { VFS_FILE, VFS_DIR, VFS_SYMLINK, VFS_OTHER };

struct vfs_stat {
    enum vfs_type type;
    uint64_t size;
    int64_t mtime_ms; /* modification time, ms since the epoch */
};

/* Stats path without following a final symlink. ERR_NOT_FOUND when missing. */
int vfs_stat(struct vfs *v, const char *path, struct vfs_stat *st, struct errinfo *err);

struct vfs_data {
    char *data;         /* owned (free with vfs_data_cleanup); NUL-terminated for convenience */
    size_t len;         /* bytes in data */
    uint64_t file_size; /* size of the whole file */
    uint64_t offset;    /* where data starts in the file */
    bool truncated;     /* the file goes on past offset + len */
};

/* Reads up to length bytes (0 = up to read_cap; never more than read_cap) from offset of the
 * regular file at path. ERR_NOT_FOUND when missing, ERR_INVALID for a directory ("... is a
 * directory; use list_dir") or anything not a regular file. An offset past the end gives 0
 * bytes, not an error. */
int vfs_read(struct vfs *v, const char *path, uint64_t offset, size_t length, struct vfs_data *out,
             struct errinfo *err);
void vfs_data_cleanup(struct vfs_data *d); /* frees d->data; safe on a zeroed struct */

/* Atomically replaces (or creates) the regular file at path with data[0..len), creating missing
 * parent directories. ERR_INVALID when path is "/" or names a directory ("... is a directory"),
 * or when a parent component is a file. The new file has mode 0644 (0666 & ~umask).
 * *created (may be NULL) tells whether the file did not exist before. */
int vfs_write(struct vfs *v, const char *path, const void *data, size_t len, bool *created,
              struct errinfo *err);

struct vfs_entry {
    char *name; /* owned by the listing */
    enum vfs_type type;
    uint64_t size; /* files: bytes; others 0 */
    int64_t mtime_ms;
};

struct vfs_listing {
    struct vfs_entry *entries; /* owned; sorted by name (bytewise) */
    size_t count;
    size_t total;   /* entries in the directory (count < total when capped) */
    bool truncated; /* count < total */
};

/* True for the name of a write's temporary file, ".<name>.rbx-XXXXXX" (six letters or digits).
 * A write that is killed (kill -9) leaves one behind; the tools never show such names (list_dir,
 * search, resources/list) and vfs_sweep_temps() removes the stale ones. Pure. */
bool vfs_is_temp_name(const char *name, size_t len);

/* Removes, in the whole workspace, every regular file with a temporary file's name whose last
 * change is before `before` (a write in flight, say of another runboxd sharing the workspace,
 * is newer). Does not follow symlinks, stays on the workspace's file system, goes 256
 * directories deep. Returns how many it removed. Call before serving (it takes a while on a
 * big tree). */
size_t vfs_sweep_temps(struct vfs *v, time_t before);

/* A temporary file unchanged for this long is no write in flight: runboxd sweeps older ones. */
#define VFS_TEMP_STALE_S 60

/* Lists the directory at path, at most max entries (0 = VFS_LIST_CAP), "." and ".." and write
 * temporaries left out; names are escaped (see Names), sorted by their raw bytes. ERR_NOT_FOUND
 * when missing, ERR_INVALID when path is a file ("... is a file; use read_file"). */
int vfs_list(struct vfs *v, const char *path, size_t max, struct vfs_listing *out,
             struct errinfo *err);
void vfs_listing_cleanup(struct vfs_listing *l); /* safe on a zeroed struct */

/* Removes the file, symlink (the link itself) or directory at path. A non-empty directory needs
 * recursive ("... is not empty; pass recursive: true"); the walk never follows symlinks and
 * stays on the workspace's file system. "/" is refused with ERR_DENIED. *removed (may be NULL)
 * counts the entries removed. */
int vfs_remove(struct vfs *v, const char *path, bool recursive, uint64_t *removed,
               struct errinfo *err);

struct vfs_search_opts {
    const char *query; /* literal text, or a PCRE2 regex (UTF mode) when regex is true */
    const char *path;  /* directory or file to search; NULL = "/" */
    const char *ext;   /* only files whose name ends in "." ext (ext without the dot), or NULL */
    bool regex;
    bool case_sensitive;
    size_t max_results; /* most matching lines reported (0 = 200) */
    size_t max_line;    /* longest line text shown, in bytes (0 = 300; longer lines are cut with
                           "…") */
    /* Polled between files and every few thousand lines; true stops the search, which then
     * fails with ERR_CANCELLED. NULL: never. Called on the searching thread. */
    bool (*cancelled)(void *ctx);
    void *cancel_ctx;
};

struct vfs_search_result {
    char *text; /* owned: "path:line: text\n" per match; NUL-terminated */
    size_t len;
    size_t matches; /* lines reported */
    uint64_t files_scanned;
    uint64_t bytes_scanned;  /* file data searched */
    uint64_t binary_skipped; /* files skipped because they look binary (a NUL in the first 8 KiB) */
    uint64_t
        dirs_too_deep; /* directories not entered: more than VFS_SEARCH_DEPTH_MAX levels down */
    uint64_t too_long; /* entries left out: their path is over VFS_PATH_MAX bytes */
    bool truncated;    /* stopped at max_results */
};

#define VFS_SEARCH_DEPTH_MAX 256 /* directory levels below opts->path that search enters */

/* Searches every regular file under opts->path (symlinks are not followed; files that look
 * binary are skipped) for lines that match, in path order. A bad regex is ERR_INVALID with
 * PCRE2's message; a regex that uses up its backtracking budget on a line is ERR_INVALID
 * "search: pattern too complex: ..."; a cancelled search is ERR_CANCELLED. */
int vfs_search(struct vfs *v, const struct vfs_search_opts *opts, struct vfs_search_result *out,
               struct errinfo *err);
void vfs_search_result_cleanup(struct vfs_search_result *r); /* safe on a zeroed struct */

/* ---- vfs_walk.c ---- */

/* Called for each regular file of a walk: path is its VFS path (escaped, see Names), borrowed for
 * the call. A non-zero return stops the walk. */
typedef int (*vfs_walk_fn)(void *ctx, const char *path, const struct vfs_stat *st);

/* Gives every regular file of the workspace to cb in path order (components compared
 * bytewise, so "/a/z" comes before "/a.txt"), starting strictly after the VFS path `after`
 * (NULL or "" = from the start), at most limit files (0 = no limit). Symlinks are never
 * followed nor given; unreadable directories are skipped. *more (may be NULL) tells whether
 * files remain after the last one given. Returns 0, or -1 with err set. */
int vfs_walk_files(struct vfs *v, const char *after, size_t limit, vfs_walk_fn cb, void *ctx,
                   bool *more, struct errinfo *err);

#endif /* DAEMON_VFS_H */
