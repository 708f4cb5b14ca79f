/* daemon/vfs_walk.c - vfs_walk_files(): the workspace's regular files in path order, from a
 * resume point, a page at a time (for resources/list).
 *
 * DESIGN
 * Each directory is read whole (readdir, with d_type so that most entries need no stat) and
 * sorted; the walk descends depth-first. A resume point "/a/b/c" is followed component by
 * component: in each directory the names before the cursor's component are skipped without
 * being opened, so a page costs the directories on the way to it, not the files before it.
 * Subdirectories are opened with openat(O_NOFOLLOW) relative to their parent's fd, one name at
 * a time, starting from the root fd: nothing can lead out of the root, and symlinks are
 * neither followed nor listed. */
#include "vfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vfs_int.h"

#define WALK_DEPTH_MAX 128

struct walk_name {
    char *name;
    unsigned char d_type;
};

struct walk {
    vfs_walk_fn cb;
    void *ctx;
    size_t limit, given;
    bool more, stop;
    char path[VFS_PATH_MAX + 2]; /* the VFS path of the directory being walked */
    size_t path_len;
    struct errinfo *err;
};

static int name_cmp(const void *a, const void *b)
{
    return strcmp(((const struct walk_name *)a)->name, ((const struct walk_name *)b)->name);
}

static void names_free(struct walk_name *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i].name);
    free(names);
}

/* Reads and sorts the names in dfd (borrowed). Returns 0, or -1 with errno set. */
static int read_sorted(int dfd, struct walk_name **out, size_t *count)
{
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct walk_name *names = NULL, *nn;
    size_t n = 0, cap = 0;
    struct dirent *de;

    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    for (errno = 0; (de = readdir(d)) != NULL; errno = 0) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (vfs_is_temp_name(de->d_name, strlen(de->d_name)))
            continue; /* a write's temporary, maybe left by a kill -9 */
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            nn = realloc(names, cap * sizeof(*names));
            if (!nn)
                goto fail;
            names = nn;
        }
        names[n].name = strdup(de->d_name);
        if (!names[n].name)
            goto fail;
        names[n++].d_type = de->d_type;
    }
    if (errno)
        goto fail;
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), name_cmp);
    *out = names;
    *count = n;
    return 0;
fail:
    closedir(d);
    names_free(names, n);
    errno = errno ? errno : ENOMEM;
    return -1;
}

/* The entry's type without following a symlink: d_type, or fstatat when the file system did
 * not say. Fills st for regular files. */
static enum vfs_type entry_type(int dfd, const struct walk_name *e, struct vfs_stat *st)
{
    struct stat sb;

    memset(st, 0, sizeof(*st));
    if (e->d_type == DT_DIR)
        return VFS_DIR;
    if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN)
        return e->d_type == DT_LNK ? VFS_SYMLINK : VFS_OTHER;
    if (fstatat(dfd, e->name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return VFS_OTHER; /* gone meanwhile */
    if (S_ISDIR(sb.st_mode))
        return VFS_DIR;
    if (!S_ISREG(sb.st_mode))
        return S_ISLNK(sb.st_mode) ? VFS_SYMLINK : VFS_OTHER;
    st->type = VFS_FILE;
    st->size = (uint64_t)sb.st_size;
    st->mtime_ms = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
    return VFS_FILE;
}

/* Appends "/name", escaped (vfs.h, Names), to w->path; false when the path would be too long
 * (the entry is skipped). */
static bool path_push(struct walk *w, const char *name, size_t *saved)
{
    size_t room = VFS_PATH_MAX - w->path_len, n;

    *saved = w->path_len;
    if (room < 2)
        return false;
    n = vfs_escape(name, strlen(name), w->path + w->path_len + 1, room);
    if (n == VFS_ESCAPE_NOROOM) {
        w->path[w->path_len] = '\0';
        return false;
    }
    w->path[w->path_len] = '/';
    w->path_len += 1 + n;
    return true;
}

static void path_pop(struct walk *w, size_t saved)
{
    w->path_len = saved;
    w->path[saved] = '\0';
}

static void walk_dir(struct walk *w, int dfd, const char *after, int depth);

/* One entry of a directory; after is the rest of the resume point below it, or NULL. */
static void walk_entry(struct walk *w, int dfd, const struct walk_name *e, const char *after,
                       int depth)
{
    struct vfs_stat st;
    enum vfs_type t = entry_type(dfd, e, &st);
    size_t saved;
    int cfd;

    if (t != VFS_FILE && t != VFS_DIR)
        return;
    if (!path_push(w, e->name, &saved))
        return;
    if (t == VFS_FILE && !after) {
        if (w->limit && w->given == w->limit) {
            w->more = w->stop = true;
        } else {
            w->given++;
            if (w->cb(w->ctx, w->path, &st) != 0)
                w->stop = true;
        }
    } else if (t == VFS_DIR && depth < WALK_DEPTH_MAX) {
        cfd = openat(dfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd >= 0) {
            walk_dir(w, cfd, after, depth + 1);
            close(cfd);
        }
    }
    path_pop(w, saved);
}

/* Walks the directory dfd (borrowed) whose VFS path is w->path. after is the part of the
 * resume point inside it ("b/c"), or NULL to give everything. */
static void walk_dir(struct walk *w, int dfd, const char *after, int depth)
{
    struct walk_name *names = NULL;
    size_t n = 0, first_len = 0;
    const char *rest = NULL;

    if (read_sorted(dfd, &names, &n) < 0)
        return; /* unreadable: skipped, like a file that vanished */
    if (after) {
        const char *slash = strchr(after, '/');

        first_len = slash ? (size_t)(slash - after) : strlen(after);
        rest = slash ? slash + 1 : NULL;
    }
    for (size_t i = 0; i < n && !w->stop; i++) {
        if (after) {
            int c = strncmp(names[i].name, after, first_len);

            if (c == 0 && names[i].name[first_len] != '\0')
                c = 1; /* a longer name sorts after the cursor's component */
            if (c < 0)
                continue;
            if (c == 0) {
                /* The cursor entry itself is done; inside it, resume after the rest. */
                if (rest && *rest)
                    walk_entry(w, dfd, &names[i], rest, depth);
                continue;
            }
            after = NULL; /* past the cursor: everything from here on */
        }
        walk_entry(w, dfd, &names[i], NULL, depth);
    }
    names_free(names, n);
}

int vfs_walk_files(struct vfs *v, const char *after, size_t limit, vfs_walk_fn cb, void *ctx,
                   bool *more, struct errinfo *err)
{
    struct walk w = {.cb = cb, .ctx = ctx, .limit = limit, .err = err};
    char norm[VFS_PATH_MAX + 1], raw[VFS_PATH_MAX + 1];
    int rfd;

    if (more)
        *more = false;
    if (after && *after) {
        /* The cursor is compared with the raw names the directories hold. */
        if (vfs_normalize(after, norm, sizeof(norm), err) < 0 ||
            vfs_unescape(norm, strlen(norm), raw, sizeof(raw), NULL) == VFS_ESCAPE_NOROOM)
            return -1;
        after = strcmp(raw, "/") == 0 ? NULL : raw + 1;
    } else {
        after = NULL;
    }
    rfd = vfs_open_in_root(v, "/", O_RDONLY | O_DIRECTORY);
    if (rfd < 0) {
        vfs_path_error(err, "/", errno);
        return -1;
    }
    walk_dir(&w, rfd, after, 0);
    close(rfd);
    if (more)
        *more = w.more;
    return 0;
}
