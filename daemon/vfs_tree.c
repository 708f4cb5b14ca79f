/* daemon/vfs_tree.c - whole directory trees: reading a directory's names, recursive removal,
 * and the lifecycle of :memory: workspace directories (see vfs_int.h).
 *
 * Every walk here is fd-based with O_NOFOLLOW at each step and stays on the file system it
 * started on, so a planted symlink or mount point cannot widen what is removed. */
#include "vfs_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define MEM_PREFIX       "runbox-mem-"
#define REMOVE_DEPTH_MAX 256 /* a recursive remove holds one fd per level */

/* ---- directory names ---- */

void vfs_namelist_free(struct vfs_namelist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof(*l));
}

static int namelist_push(struct vfs_namelist *l, const char *name)
{
    char *copy;

    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        char **grown = realloc(l->names, cap * sizeof(*grown));

        if (!grown)
            return -1;
        l->names = grown;
        l->cap = cap;
    }
    copy = strdup(name);
    if (!copy)
        return -1;
    l->names[l->n++] = copy;
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts l and keeps its first keep names. */
static void namelist_sort_keep(struct vfs_namelist *l, size_t keep)
{
    if (l->n > 1) /* qsort(NULL, 0, ...) is undefined behaviour */
        qsort(l->names, l->n, sizeof(*l->names), cmp_name);
    while (l->n > keep)
        free(l->names[--l->n]);
}

int vfs_read_names(int dfd, size_t keep, bool hide_temps, struct vfs_namelist *l, size_t *total)
{
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    int rc = -1;

    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    rewinddir(d);
    for (;;) {
        struct dirent *de;

        errno = 0;
        de = readdir(d);
        if (!de)
            break;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (hide_temps && vfs_is_temp_name(de->d_name, strlen(de->d_name)))
            continue;
        if (total)
            (*total)++;
        if (namelist_push(l, de->d_name) < 0)
            goto out;
        if (keep && l->n >= 2 * keep)
            namelist_sort_keep(l, keep);
    }
    if (errno)
        goto out;
    if (keep)
        namelist_sort_keep(l, keep);
    rc = 0;
out:
    closedir(d);
    return rc;
}

/* ---- the sweep of stale write temporaries ---- */

struct sweep {
    dev_t dev;
    time_t before;
    size_t removed;
};

static void sweep_dir(int dfd, struct sweep *sw, int depth)
{
    struct vfs_namelist l = {0};

    if (depth > REMOVE_DEPTH_MAX || vfs_read_names(dfd, 0, false, &l, NULL) < 0)
        goto out;
    for (size_t i = 0; i < l.n; i++) {
        const char *name = l.names[i];
        struct stat st;
        int sub;

        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != sw->dev)
            continue;
        if (S_ISREG(st.st_mode) && vfs_is_temp_name(name, strlen(name))) {
            if (st.st_mtime < sw->before && unlinkat(dfd, name, 0) == 0)
                sw->removed++;
            continue;
        }
        if (!S_ISDIR(st.st_mode))
            continue;
        sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0)
            continue;
        sweep_dir(sub, sw, depth + 1);
        close(sub);
    }
out:
    vfs_namelist_free(&l);
}

size_t vfs_sweep_temps(struct vfs *v, time_t before)
{
    struct sweep sw = {.before = before};
    struct stat st;
    int fd = openat(vfs_root_fd(v), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0)
        return 0;
    if (fstat(fd, &st) == 0) {
        sw.dev = st.st_dev;
        sweep_dir(fd, &sw, 0);
    }
    close(fd);
    return sw.removed;
}

/* ---- recursive removal (also used for :memory: roots) ---- */

static int rm_fail(struct vfs_rm *c, const char *name, const char *why)
{
    if (why)
        errinfo_set(c->err, ERR_DENIED, VFS_VP ": cannot remove \"%.60s\" inside: %s", c->top, name,
                    why);
    else
        errinfo_sys(c->err, VFS_VP ": cannot remove \"%.60s\" inside", c->top, name);
    return -1;
}

/* Removes everything inside the directory dfd (borrowed), depth levels below the top. Never
 * follows a symlink (each step is an *at() call on a bare name with O_NOFOLLOW) and never
 * enters a directory on another file system. */
static int rm_contents(int dfd, struct vfs_rm *c, int depth)
{
    struct vfs_namelist l = {0};
    int rc = -1;

    if (vfs_read_names(dfd, 0, false, &l, NULL) < 0) {
        errinfo_sys(c->err, VFS_VP ": cannot read a directory inside", c->top);
        goto out;
    }
    for (size_t i = 0; i < l.n; i++) {
        const char *name = l.names[i];
        struct stat st;
        int cfd;

        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
                continue;
            rm_fail(c, name, NULL);
            goto out;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT) {
                rm_fail(c, name, NULL);
                goto out;
            }
            c->removed++;
            continue;
        }
        if (depth >= REMOVE_DEPTH_MAX) {
            rm_fail(c, name, "directories nested too deep");
            goto out;
        }
        cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0) {
            rm_fail(c, name, NULL);
            goto out;
        }
        /* Checked on the opened fd, so a swap after fstatat cannot lead into a mount. */
        if (fstat(cfd, &st) < 0 || st.st_dev != c->dev) {
            close(cfd);
            rm_fail(c, name, "it is a mount point of another file system");
            goto out;
        }
        if (rm_contents(cfd, c, depth + 1) < 0) {
            close(cfd);
            goto out;
        }
        close(cfd);
        if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
            rm_fail(c, name, NULL);
            goto out;
        }
        c->removed++;
    }
    rc = 0;
out:
    vfs_namelist_free(&l);
    return rc;
}

int vfs_rm_tree_at(int pfd, const char *name, struct vfs_rm *c)
{
    struct stat st;
    int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (dfd < 0) {
        vfs_path_error(c->err, c->top, errno);
        return -1;
    }
    if (fstat(dfd, &st) < 0 || st.st_dev != c->dev) {
        close(dfd);
        errinfo_set(c->err, ERR_DENIED,
                    VFS_VP " is a mount point of another file system; not removing", c->top);
        return -1;
    }
    if (rm_contents(dfd, c, 1) < 0) {
        close(dfd);
        return -1;
    }
    close(dfd);
    if (unlinkat(pfd, name, AT_REMOVEDIR) < 0) {
        vfs_path_error(c->err, c->top, errno);
        return -1;
    }
    c->removed++;
    return 0;
}

/* ---- :memory: workspace directories ---- */

/* True when the directory base/name is held by a live daemon: its shared flock (taken by
 * vfs_make_memory_dir) blocks our exclusive one. Such a daemon may run in another pid
 * namespace (a container sharing /dev/shm), where its pid in the name is no process of ours.
 * A directory made in the last minute counts as live too: its daemon may not hold the lock
 * yet. */
static bool memory_dir_in_use(int bfd, const char *name, const struct stat *st)
{
    int fd;
    bool busy;

    if (st->st_mtime > time(NULL) - 60)
        return true;
    fd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return true;
    busy = flock(fd, LOCK_EX | LOCK_NB) < 0;
    close(fd); /* releases our lock, if we got it */
    return busy;
}

/* Removes runbox-mem-<pid>-* directories under base left by daemons that no longer run (killed
 * before vfs_free): the pid is not running here and no daemon holds the directory's lock. The
 * walk is fd-based with O_NOFOLLOW and stays on one file system, so a planted symlink cannot
 * widen what is removed. */
static void remove_stale_memory_dirs(const char *base)
{
    size_t plen = strlen(MEM_PREFIX);
    struct vfs_namelist l = {0};
    int bfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (bfd < 0)
        return;
    if (vfs_read_names(bfd, 0, false, &l, NULL) < 0)
        goto out;
    for (size_t i = 0; i < l.n; i++) {
        const char *name = l.names[i];
        struct vfs_rm c = {.top = name};
        struct stat st;
        char *end;
        long pid;

        if (strncmp(name, MEM_PREFIX, plen) != 0)
            continue;
        errno = 0;
        pid = strtol(name + plen, &end, 10);
        if (errno || end == name + plen || *end != '-' || pid <= 0 || pid == getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        /* Root may take any owner's: a daemon started as root hands its directory to the user
         * it drops to, so its leftovers belong to that user. */
        if (fstatat(bfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
            (st.st_uid != geteuid() && geteuid() != 0) || memory_dir_in_use(bfd, name, &st))
            continue;
        c.dev = st.st_dev;
        if (vfs_rm_tree_at(bfd, name, &c) == 0)
            log_info("vfs: removed the stale memory workspace %s/%s of dead pid %ld", base, name,
                     pid);
        else
            log_warn("vfs: cannot remove the stale memory workspace %s/%s", base, name);
    }
out:
    vfs_namelist_free(&l);
    close(bfd);
}

char *vfs_make_memory_dir(int *lock_fd, struct errinfo *err)
{
    const char *tmp = getenv("TMPDIR");
    const char *bases[] = {"/dev/shm", tmp && *tmp == '/' ? tmp : "/tmp", "/tmp"};
    char path[VFS_PATH_MAX];

    for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
        struct stat st;
        int n;

        if (stat(bases[i], &st) < 0 || !S_ISDIR(st.st_mode) || access(bases[i], W_OK) < 0)
            continue;
        remove_stale_memory_dirs(bases[i]);
        n = snprintf(path, sizeof(path), "%s/" MEM_PREFIX "%ld-XXXXXX", bases[i], (long)getpid());
        if (n < 0 || (size_t)n >= sizeof(path))
            continue;
        if (mkdtemp(path)) {
            char *dup = strdup(path);
            int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

            if (!dup || fd < 0 || flock(fd, LOCK_SH) < 0) {
                errinfo_sys(err, "cannot hold the :memory: workspace %s", path);
                if (fd >= 0)
                    close(fd);
                rmdir(path);
                free(dup);
                return NULL;
            }
            *lock_fd = fd;
            return dup;
        }
    }
    errinfo_sys(err, "cannot create a :memory: workspace under /dev/shm, $TMPDIR or /tmp");
    return NULL;
}

void vfs_remove_memory_dir(char *path, dev_t dev)
{
    char *slash = strrchr(path, '/');
    struct vfs_rm c = {.dev = dev, .top = path};
    struct errinfo err = {0};
    int bfd;

    if (!slash || slash == path)
        return;
    *slash = '\0';
    bfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    *slash = '/';
    c.err = &err;
    if (bfd < 0 || vfs_rm_tree_at(bfd, slash + 1, &c) < 0)
        log_warn("vfs: cannot remove the memory workspace %s: %s", path,
                 bfd < 0 ? strerror(errno) : err.msg);
    if (bfd >= 0)
        close(bfd);
}
