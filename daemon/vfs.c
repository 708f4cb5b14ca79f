/* daemon/vfs.c - the workspace: path normalization, confined open, read, atomic write, list,
 * remove, and opening and freeing the root (see vfs.h for the contract). Whole-tree work
 * (recursive remove, :memory: directories, reading a directory's names) is in vfs_tree.c.
 *
 * Design: a vfs is a root directory fd (O_PATH) plus immutable options, so any thread may use it
 * without a lock. Every tool path goes through vfs_normalize() (pure, lexical) and is then opened
 * with a single openat2(RESOLVE_IN_ROOT) from the root fd: the kernel resolves ".." and symlinks
 * as if the root were "/", which is what makes a planted "ln -s /etc x" harmless. Operations on
 * the final component (write, remove, stat) open its parent that way and then use *at() calls
 * with the bare name, which never follow a final symlink. Walks (list, recursive remove) use
 * O_NOFOLLOW at every step.
 *
 * Messages that reach a tool caller name VFS paths only, never the host path of the root. */
#include "vfs.h"
#include "vfs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "log.h"

#define OPEN_RETRIES 8 /* openat2 gives EAGAIN when a rename races RESOLVE_IN_ROOT */
#define TEMP_TRIES   16

struct vfs {
    int root_fd;     /* O_PATH|O_DIRECTORY */
    char *root_path; /* owned, absolute host path */
    bool memory;     /* a :memory: workspace, removed by vfs_free */
    int mem_lock_fd; /* :memory: only: holds the directory's flock while we live, or -1 */
    dev_t root_dev;  /* recursive removes stay on this file system */
    bool fsync;
    size_t read_cap;
};

/* ---- paths ---- */

/* One component start[0..len) of a tool path, unescaped into raw (VFS_NAME_MAX + 1 bytes).
 * Returns its raw length, or -1 with err set. */
static long component_raw(const char *in, const char *start, size_t len, char *raw,
                          struct errinfo *err)
{
    const char *bad = NULL;
    size_t n = vfs_unescape(start, len, raw, VFS_NAME_MAX + 1, &bad);

    if (n != VFS_ESCAPE_NOROOM)
        return (long)n;
    if (bad)
        errinfo_set(err, ERR_INVALID,
                    "path \"%.160s\" has a '\\' that starts no escape; workspace paths use '/', "
                    "and in a name \\\\ stands for a backslash and \\xHH for a byte (not 00 or "
                    "2f) that is not UTF-8",
                    in);
    else
        errinfo_set(err, ERR_INVALID, "path has a component longer than %d bytes: \"%.40s...\"",
                    VFS_NAME_MAX, start);
    return -1;
}

int vfs_normalize(const char *in, char *out, size_t outsz, struct errinfo *err)
{
    char raw[VFS_NAME_MAX + 1];
    size_t limit, n = 0;
    const char *p = in;

    if (!out || outsz < 2) {
        errinfo_set(err, ERR_INTERNAL, "vfs_normalize: output buffer too small");
        return -1;
    }
    if (!in || !*in) {
        errinfo_set(err, ERR_INVALID,
                    "path is empty; give an absolute workspace path such as \"/src/main.js\"");
        return -1;
    }
    limit = outsz - 1 < VFS_PATH_MAX ? outsz - 1 : VFS_PATH_MAX;
    while (*p) {
        const char *start;
        size_t len, esc;
        long rlen;

        while (*p == '/')
            p++;
        start = p;
        while (*p && *p != '/')
            p++;
        len = (size_t)(p - start);
        if (len == 0)
            continue;
        rlen = component_raw(in, start, len, raw, err);
        if (rlen < 0)
            return -1;
        if (rlen == 1 && raw[0] == '.')
            continue;
        if (rlen == 2 && raw[0] == '.' && raw[1] == '.') {
            /* ".." pops one component and stops at the root. */
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
            continue;
        }
        /* The canonical spelling of the name (escapes only where needed). */
        esc = n + 1 < limit ? vfs_escape(raw, (size_t)rlen, out + n + 1, limit - n) : 0;
        if (n + 1 >= limit || esc == VFS_ESCAPE_NOROOM) {
            errinfo_set(err, ERR_TOO_LARGE, "path is longer than %d bytes", VFS_PATH_MAX);
            return -1;
        }
        out[n] = '/';
        n += 1 + esc;
    }
    if (n == 0)
        out[n++] = '/';
    out[n] = '\0';
    return 0;
}

int vfs_raw_name(const char *name, char *raw)
{
    if (vfs_unescape(name, strlen(name), raw, VFS_NAME_MAX + 1, NULL) == VFS_ESCAPE_NOROOM) {
        errno = EINVAL; /* not from vfs_normalize */
        return -1;
    }
    return 0;
}

int vfs_open_in_root(const struct vfs *v, const char *norm, uint64_t flags)
{
    struct open_how how = {
        .flags = flags | O_CLOEXEC,
        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    };
    char raw[VFS_PATH_MAX + 1];
    const char *rel = norm[1] ? norm + 1 : ".";

    /* The kernel gets the bytes the escapes stand for. */
    if (strchr(norm, '\\')) {
        if (vfs_unescape(norm, strlen(norm), raw, sizeof(raw), NULL) == VFS_ESCAPE_NOROOM) {
            errno = EINVAL; /* not from vfs_normalize */
            return -1;
        }
        rel = raw[1] ? raw + 1 : ".";
    }

    for (int i = 0; i < OPEN_RETRIES; i++) {
        long fd = syscall(SYS_openat2, v->root_fd, rel, &how, sizeof(how));

        if (fd >= 0)
            return (int)fd;
        if (errno != EAGAIN && errno != EINTR)
            return -1;
    }
    return -1;
}

int vfs_open_dir(struct vfs *v, const char *norm, struct errinfo *err)
{
    int fd = vfs_open_in_root(v, norm, O_PATH | O_DIRECTORY);

    if (fd < 0)
        vfs_path_error(err, norm, errno);
    return fd;
}

void vfs_path_error(struct errinfo *err, const char *vpath, int e)
{
    bool fresh = err && err->kind == ERR_NONE;

    switch (e) {
    case ENOENT:
        errinfo_set(err, ERR_NOT_FOUND, VFS_VP ": no such file or directory", vpath);
        break;
    case ENOTDIR:
        errinfo_set(err, ERR_NOT_FOUND, VFS_VP ": no such file or directory (a parent is a file)",
                    vpath);
        break;
    case ELOOP:
        errinfo_set(err, ERR_INVALID, VFS_VP ": too many levels of symbolic links", vpath);
        break;
    case ENAMETOOLONG:
        errinfo_set(err, ERR_TOO_LARGE, VFS_VP ": path too long", vpath);
        break;
    case EACCES:
    case EPERM:
        errinfo_set(err, ERR_DENIED, VFS_VP ": permission denied", vpath);
        break;
    case ENOSPC:
    case EDQUOT:
        errinfo_set(err, ERR_TOO_LARGE, VFS_VP ": the workspace's disk is full", vpath);
        break;
    case EXDEV:
        errinfo_set(err, ERR_DENIED, VFS_VP ": leads outside the workspace", vpath);
        break;
    case ENXIO:
        errinfo_set(err, ERR_INVALID, VFS_VP ": is a socket or device, not a regular file", vpath);
        break;
    default:
        errno = e;
        errinfo_sys(err, VFS_VP, vpath);
        break;
    }
    if (fresh)
        err->sys_errno = e;
}

static enum vfs_type type_of_mode(mode_t m)
{
    if (S_ISREG(m))
        return VFS_FILE;
    if (S_ISDIR(m))
        return VFS_DIR;
    if (S_ISLNK(m))
        return VFS_SYMLINK;
    return VFS_OTHER;
}

static int64_t mtime_ms_of(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

/* The last component of a normalized path other than "/". */
static const char *base_name(const char *norm)
{
    return strrchr(norm, '/') + 1;
}

/* Copies the parent of the normalized path norm (not "/") into parent. */
static void parent_of(const char *norm, char *parent)
{
    size_t plen = (size_t)(base_name(norm) - norm) - 1;

    if (plen == 0)
        plen = 1; /* the parent is the root */
    memcpy(parent, norm, plen);
    parent[plen] = '\0';
}

/* ---- the root: create, :memory:, open, free ---- */

/* mkdir -p with mode for the missing components of the host path dir. */
static int mkdir_p(const char *dir, mode_t mode, struct errinfo *err)
{
    char *buf = strdup(dir);
    int rc = -1;

    if (!buf) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        char c = *p;

        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) < 0 && errno != EEXIST) {
            errinfo_sys(err, "cannot create the workspace directory %s", buf);
            goto out;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    rc = 0;
out:
    free(buf);
    return rc;
}

static int open_root(struct vfs *v, const char *dir, struct errinfo *err)
{
    struct stat st;
    int fd;

    if (v->memory) {
        v->root_path = vfs_make_memory_dir(&v->mem_lock_fd, err);
        if (!v->root_path)
            return -1;
    } else {
        if (mkdir_p(dir, 0700, err) < 0)
            return -1;
        v->root_path = realpath(dir, NULL);
        if (!v->root_path) {
            errinfo_sys(err, "cannot resolve the workspace directory %s", dir);
            return -1;
        }
    }
    v->root_fd = open(v->root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (v->root_fd < 0 || fstat(v->root_fd, &st) < 0) {
        errinfo_sys(err, "cannot open the workspace directory %s", v->root_path);
        return -1;
    }
    v->root_dev = st.st_dev;
    /* Probe openat2 now, so an old kernel is a clear start-up error rather than a failing tool. */
    fd = vfs_open_in_root(v, "/", O_PATH | O_DIRECTORY);
    if (fd < 0) {
        if (errno == ENOSYS || errno == EPERM)
            errinfo_set(err, ERR_UNAVAILABLE,
                        "the workspace needs the openat2 system call (Linux 5.6 or newer), "
                        "which this kernel or its seccomp filter does not provide");
        else
            errinfo_sys(err, "cannot open the workspace directory %s", v->root_path);
        return -1;
    }
    close(fd);
    return 0;
}

struct vfs *vfs_open(const char *dir, const struct vfs_options *opt, struct errinfo *err)
{
    struct vfs *v;

    if (!dir || !*dir) {
        errinfo_set(err, ERR_INVALID, "no workspace directory given");
        return NULL;
    }
    v = calloc(1, sizeof(*v));
    if (!v) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return NULL;
    }
    v->root_fd = -1;
    v->mem_lock_fd = -1;
    v->fsync = opt ? opt->fsync : true;
    v->read_cap = opt && opt->read_cap ? opt->read_cap : VFS_READ_CAP;
    v->memory = strcmp(dir, VFS_MEMORY) == 0;
    if (open_root(v, dir, err) < 0) {
        vfs_free(v);
        return NULL;
    }
    log_debug("vfs: workspace at %s%s", v->root_path, v->memory ? " (memory)" : "");
    return v;
}

void vfs_free(struct vfs *v)
{
    if (!v)
        return;
    if (v->root_fd >= 0)
        close(v->root_fd);
    if (v->memory && v->root_path)
        vfs_remove_memory_dir(v->root_path, v->root_dev);
    if (v->mem_lock_fd >= 0)
        close(v->mem_lock_fd);
    free(v->root_path);
    free(v);
}

const char *vfs_root_path(const struct vfs *v)
{
    return v->root_path;
}

int vfs_root_fd(const struct vfs *v)
{
    return v->root_fd;
}

/* ---- stat, read ---- */

int vfs_stat(struct vfs *v, const char *path, struct vfs_stat *st, struct errinfo *err)
{
    char norm[VFS_PATH_MAX + 1];
    struct stat s;
    int fd;

    if (vfs_normalize(path, norm, sizeof(norm), err) < 0)
        return -1;
    /* O_PATH|O_NOFOLLOW gives an fd for a final symlink itself, so fstat does not follow it. */
    fd = vfs_open_in_root(v, norm, O_PATH | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &s) < 0) {
        vfs_path_error(err, norm, errno);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    st->type = type_of_mode(s.st_mode);
    st->size = S_ISREG(s.st_mode) ? (uint64_t)s.st_size : 0;
    st->mtime_ms = mtime_ms_of(&s);
    return 0;
}

/* Fails with the read_file advice when st is not a regular file. */
static int need_regular(const struct stat *st, const char *norm, struct errinfo *err)
{
    if (S_ISREG(st->st_mode))
        return 0;
    if (S_ISDIR(st->st_mode))
        errinfo_set(err, ERR_INVALID, VFS_VP " is a directory; use list_dir to see what is inside",
                    norm);
    else
        errinfo_set(err, ERR_INVALID, VFS_VP " is not a regular file", norm);
    return -1;
}

int vfs_read(struct vfs *v, const char *path, uint64_t offset, size_t length, struct vfs_data *out,
             struct errinfo *err)
{
    char norm[VFS_PATH_MAX + 1];
    struct stat st;
    size_t want, got = 0;
    uint64_t size;
    int fd, rc = -1;

    memset(out, 0, sizeof(*out));
    if (vfs_normalize(path, norm, sizeof(norm), err) < 0)
        return -1;
    /* O_NONBLOCK: opening a FIFO that a sandboxed command planted must not hang the caller. */
    fd = vfs_open_in_root(v, norm, O_RDONLY | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        vfs_path_error(err, norm, errno);
        return -1;
    }
    if (fstat(fd, &st) < 0) {
        vfs_path_error(err, norm, errno);
        goto out;
    }
    if (need_regular(&st, norm, err) < 0)
        goto out;
    size = (uint64_t)st.st_size;
    want = length && length < v->read_cap ? length : v->read_cap;
    if (offset >= size)
        want = 0;
    else if (want > size - offset)
        want = (size_t)(size - offset);
    out->data = malloc(want + 1);
    if (!out->data) {
        errinfo_set(err, ERR_NOMEM, VFS_VP ": out of memory for %zu bytes", norm, want);
        goto out;
    }
    while (got < want) {
        ssize_t n = pread(fd, out->data + got, want - got, (off_t)(offset + got));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            vfs_path_error(err, norm, errno);
            vfs_data_cleanup(out);
            goto out;
        }
        if (n == 0) {
            size = offset + got; /* the file shrank since fstat */
            break;
        }
        got += (size_t)n;
    }
    out->data[got] = '\0';
    out->len = got;
    out->file_size = size;
    out->offset = offset;
    out->truncated = offset + got < size;
    rc = 0;
out:
    close(fd);
    return rc;
}

void vfs_data_cleanup(struct vfs_data *d)
{
    if (!d)
        return;
    free(d->data);
    memset(d, 0, sizeof(*d));
}

/* ---- write ---- */

/* Opens (O_RDONLY|O_DIRECTORY) the parent parent of target, creating missing directories: each
 * prefix "/a", "/a/b", ... is opened from the root (so a symlinked component resolves inside the
 * root) and, when missing, made with mkdirat in the prefix before it. parent is modified while
 * walking and restored. Returns an owned fd or -1 with err set. */
static int make_parents(const struct vfs *v, char *parent, const char *target, struct errinfo *err)
{
    int dfd = vfs_open_in_root(v, "/", O_RDONLY | O_DIRECTORY);
    char *p = parent + 1;

    if (dfd < 0) {
        vfs_path_error(err, "/", errno);
        return -1;
    }
    for (;;) {
        char *slash = strchr(p, '/');
        int cfd;

        if (slash)
            *slash = '\0';
        cfd = vfs_open_in_root(v, parent, O_RDONLY | O_DIRECTORY);
        if (cfd < 0 && errno == ENOENT) {
            char raw[VFS_NAME_MAX + 1];

            if (vfs_raw_name(p, raw) < 0 || (mkdirat(dfd, raw, 0777) < 0 && errno != EEXIST)) {
                vfs_path_error(err, parent, errno);
                break;
            }
            cfd = vfs_open_in_root(v, parent, O_RDONLY | O_DIRECTORY);
        }
        if (cfd < 0) {
            if (errno == ENOTDIR)
                errinfo_set(err, ERR_INVALID, VFS_VP ": a parent (%.60s) is a file", target,
                            parent);
            else
                vfs_path_error(err, parent, errno);
            break;
        }
        close(dfd);
        dfd = cfd;
        if (!slash)
            return dfd;
        *slash = '/';
        p = slash + 1;
    }
    close(dfd);
    return -1;
}

static int open_parent_dir(const struct vfs *v, const char *norm, struct errinfo *err)
{
    char parent[VFS_PATH_MAX + 1];
    int fd;

    parent_of(norm, parent);
    fd = vfs_open_in_root(v, parent, O_RDONLY | O_DIRECTORY);
    if (fd >= 0)
        return fd;
    if (errno != ENOENT && errno != ENOTDIR) {
        vfs_path_error(err, parent, errno);
        return -1;
    }
    return make_parents(v, parent, norm, err);
}

bool vfs_is_temp_name(const char *name, size_t len)
{
    /* '.' + at least one byte + ".rbx-" + six letters or digits */
    if (len < 13 || name[0] != '.' || memcmp(name + len - 11, ".rbx-", 5) != 0)
        return false;
    for (size_t i = len - 6; i < len; i++) {
        char c = name[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

/* Creates ".<name>.rbx-XXXXXX" with O_EXCL in dfd. Returns an owned fd, tmp holds its name. */
static int make_temp(int dfd, const char *name, mode_t mode, char *tmp, size_t tmpsz)
{
    static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    /* Keep the temp name within NAME_MAX: '.' + name + ".rbx-" + 6 characters. */
    int keep = (int)strnlen(name, VFS_NAME_MAX - 12);

    for (int i = 0; i < TEMP_TRIES; i++) {
        unsigned char rnd[6];
        char suffix[7];
        int fd;

        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
            return -1;
        for (size_t k = 0; k < sizeof(rnd); k++)
            suffix[k] = chars[rnd[k] % (sizeof(chars) - 1)];
        suffix[6] = '\0';
        snprintf(tmp, tmpsz, ".%.*s.rbx-%s", keep, name, suffix);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;

    while (len > 0) {
        ssize_t n = write(fd, p, len < (1u << 30) ? len : (1u << 30));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Writes data into a new temp file in dfd and renames it over name. */
static int replace_at(const struct vfs *v, int dfd, const char *name, const struct stat *old,
                      const void *data, size_t len, const char *norm, struct errinfo *err)
{
    char tmp[VFS_NAME_MAX + 1];
    int fd = make_temp(dfd, name, 0666, tmp, sizeof(tmp));

    if (fd < 0) {
        vfs_path_error(err, norm, errno);
        return -1;
    }
    /* A replaced regular file keeps its permission bits (a script stays executable). */
    if (old && fchmod(fd, old->st_mode & 0777) < 0)
        goto fail;
    if (write_all(fd, data, len) < 0 || (v->fsync && fsync(fd) < 0))
        goto fail;
    if (close(fd) < 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (renameat(dfd, tmp, dfd, name) < 0) {
        if (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)
            errinfo_set(err, ERR_INVALID, VFS_VP " is a directory; write to a file path inside it",
                        norm);
        goto fail;
    }
    if (v->fsync && fsync(dfd) < 0) {
        vfs_path_error(err, norm, errno);
        return -1; /* the new file is in place; only its durability is in doubt */
    }
    return 0;
fail:
    vfs_path_error(err, norm, errno); /* a no-op when a message is already set */
    if (fd >= 0)
        close(fd);
    unlinkat(dfd, tmp, 0);
    return -1;
}

int vfs_write(struct vfs *v, const char *path, const void *data, size_t len, bool *created,
              struct errinfo *err)
{
    char norm[VFS_PATH_MAX + 1], name[VFS_NAME_MAX + 1];
    struct stat st;
    bool keep_mode = false;
    int dfd, rc = -1;

    if (created)
        *created = false;
    if (vfs_normalize(path, norm, sizeof(norm), err) < 0)
        return -1;
    if (!strcmp(norm, "/")) {
        errinfo_set(
            err, ERR_INVALID,
            "/ is the workspace root, a directory; give a file path such as \"/notes.txt\"");
        return -1;
    }
    if (vfs_raw_name(base_name(norm), name) < 0) {
        vfs_path_error(err, norm, errno);
        return -1;
    }
    dfd = open_parent_dir(v, norm, err);
    if (dfd < 0)
        return -1;
    /* A final symlink is not followed: the rename replaces the link itself. */
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISDIR(st.st_mode)) {
            errinfo_set(err, ERR_INVALID, VFS_VP " is a directory; write to a file path inside it",
                        norm);
            goto out;
        }
        keep_mode = S_ISREG(st.st_mode);
    } else if (errno == ENOENT) {
        if (created)
            *created = true;
    } else {
        vfs_path_error(err, norm, errno);
        goto out;
    }
    rc = replace_at(v, dfd, name, keep_mode ? &st : NULL, data, len, norm, err);
out:
    close(dfd);
    return rc;
}

/* ---- list ---- */

/* Fills e for the raw name (borrowed); e->name gets its escaped copy (owned). -1 when out of
 * memory. */
static int fill_entry(int dfd, const char *name, struct vfs_entry *e)
{
    struct stat st;

    e->name = vfs_escape_dup(name);
    if (!e->name)
        return -1;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        e->type = VFS_OTHER; /* removed since readdir */
        return 0;
    }
    e->type = type_of_mode(st.st_mode);
    e->size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    e->mtime_ms = mtime_ms_of(&st);
    return 0;
}

/* Sets the right message for a list_dir path that could not be opened as a directory. */
static void list_open_error(struct vfs *v, const char *norm, int e, struct errinfo *err)
{
    struct vfs_stat st;

    if (e == ENOTDIR && vfs_stat(v, norm, &st, NULL) == 0) {
        if (st.type == VFS_FILE)
            errinfo_set(err, ERR_INVALID, VFS_VP " is a file; use read_file", norm);
        else
            errinfo_set(err, ERR_INVALID, VFS_VP " is not a directory", norm);
        return;
    }
    vfs_path_error(err, norm, e);
}

int vfs_list(struct vfs *v, const char *path, size_t max, struct vfs_listing *out,
             struct errinfo *err)
{
    char norm[VFS_PATH_MAX + 1];
    struct vfs_namelist l = {0};
    int dfd, rc = -1;

    memset(out, 0, sizeof(*out));
    if (vfs_normalize(path, norm, sizeof(norm), err) < 0)
        return -1;
    if (!max)
        max = VFS_LIST_CAP;
    dfd = vfs_open_in_root(v, norm, O_RDONLY | O_DIRECTORY);
    if (dfd < 0) {
        list_open_error(v, norm, errno, err);
        return -1;
    }
    if (vfs_read_names(dfd, max, true, &l, &out->total) < 0) {
        vfs_path_error(err, norm, errno);
        goto out;
    }
    out->entries = calloc(l.n ? l.n : 1, sizeof(*out->entries));
    if (!out->entries) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < l.n; i++) {
        if (fill_entry(dfd, l.names[i], &out->entries[i]) < 0) {
            out->count = i;
            vfs_listing_cleanup(out);
            errinfo_set(err, ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    out->count = l.n;
    out->truncated = out->count < out->total;
    rc = 0;
out:
    if (rc < 0)
        out->total = 0;
    vfs_namelist_free(&l);
    close(dfd);
    return rc;
}

void vfs_listing_cleanup(struct vfs_listing *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++)
        free(l->entries[i].name);
    free(l->entries);
    memset(l, 0, sizeof(*l));
}

/* ---- remove ---- */

int vfs_remove(struct vfs *v, const char *path, bool recursive, uint64_t *removed,
               struct errinfo *err)
{
    char norm[VFS_PATH_MAX + 1], parent[VFS_PATH_MAX + 1], name[VFS_NAME_MAX + 1];
    struct vfs_rm c = {.dev = v->root_dev, .err = err};
    struct stat st;
    int pfd = -1, rc = -1;

    if (removed)
        *removed = 0;
    if (vfs_normalize(path, norm, sizeof(norm), err) < 0)
        return -1;
    if (!strcmp(norm, "/")) {
        errinfo_set(err, ERR_DENIED,
                    "refusing to remove the workspace root /; remove the entries inside it");
        return -1;
    }
    c.top = norm;
    parent_of(norm, parent);
    if (vfs_raw_name(base_name(norm), name) == 0)
        pfd = vfs_open_in_root(v, parent, O_PATH | O_DIRECTORY);
    if (pfd < 0 || fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        vfs_path_error(err, norm, errno);
        goto out;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (unlinkat(pfd, name, 0) < 0) {
            vfs_path_error(err, norm, errno);
            goto out;
        }
        c.removed = 1;
    } else if (unlinkat(pfd, name, AT_REMOVEDIR) == 0) {
        c.removed = 1;
    } else if (errno != ENOTEMPTY && errno != EEXIST) {
        vfs_path_error(err, norm, errno);
        goto out;
    } else if (!recursive) {
        errinfo_set(err, ERR_INVALID,
                    VFS_VP " is not empty; pass recursive: true to remove it and "
                           "everything inside",
                    norm);
        goto out;
    } else if (vfs_rm_tree_at(pfd, name, &c) < 0) {
        goto out;
    }
    rc = 0;
out:
    if (removed)
        *removed = c.removed;
    if (pfd >= 0)
        close(pfd);
    return rc;
}
