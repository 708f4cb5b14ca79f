/* daemon/quota.c - the workspace quota (see quota.h for the design).
 *
 * The walk holds one directory fd at a time, whatever the depth (a command can nest directories
 * far deeper than any fd budget): it reads a directory's names, descends into each subdirectory
 * with openat(O_NOFOLLOW), and climbs back with openat("..") checked against the device and inode
 * it came from. A tree that changes under it (a directory moved meanwhile) makes the walk start
 * again, at most WALK_TRIES times. */
#include "quota.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "log.h"

#define WALK_TRIES 3

struct quota {
    pthread_mutex_t lock;
    pthread_cond_t walked_cond; /* broadcast when a walk ends */
    int root_fd;                /* borrowed */
    uint64_t limit;             /* bytes; 0 = no quota */
    /* lock: */
    bool known;         /* a walk has been made */
    bool walking;       /* a walk runs now (without the lock) */
    uint64_t starts;    /* walks started so far */
    uint64_t done;      /* the number (in starts) of the last walk that ended */
    uint64_t walked;    /* bytes the last walk counted */
    uint64_t grown;     /* bytes added since: drops of free space, and the tools' writes */
    uint64_t last_free; /* the file system's free bytes when last sampled */
    uint64_t reserved;  /* bytes of writes under way */
};

uint64_t quota_grow(uint64_t grown, uint64_t *last_free, uint64_t now)
{
    if (now < *last_free)
        grown += *last_free - now;
    *last_free = now;
    return grown;
}

/* ---- the walk ---- */

/* Hard links are counted once: the (dev, ino) of every file with more than one link. */
struct seen {
    struct {
        dev_t dev;
        ino_t ino;
    } * v;
    size_t n, cap; /* cap is a power of two; open addressing, half full at most */
};

static size_t slot_of(const struct seen *s, dev_t dev, ino_t ino)
{
    size_t h = (size_t)(ino * 0x9E3779B97F4A7C15ull ^ dev) & (s->cap - 1);

    while (s->v[h].ino && (s->v[h].ino != ino || s->v[h].dev != dev))
        h = (h + 1) & (s->cap - 1);
    return h;
}

/* True when (dev, ino) was seen already; records it otherwise. Out of memory: false (the file is
 * then counted again, which errs towards the quota). */
static bool seen_before(struct seen *s, dev_t dev, ino_t ino)
{
    size_t h;

    if (2 * (s->n + 1) > s->cap) {
        struct seen g = {.cap = s->cap ? s->cap * 2 : 64};

        g.v = calloc(g.cap, sizeof(*g.v));
        if (!g.v)
            return false;
        for (size_t i = 0; i < s->cap; i++)
            if (s->v[i].ino) {
                size_t k = slot_of(&g, s->v[i].dev, s->v[i].ino);
                g.v[k] = s->v[i];
            }
        g.n = s->n;
        free(s->v);
        *s = g;
    }
    h = slot_of(s, dev, ino);
    if (s->v[h].ino)
        return true;
    s->v[h].dev = dev;
    s->v[h].ino = ino ? ino : 1;
    s->n++;
    return false;
}

/* One directory on the way down: its names (NUL-separated), the next one to visit, and who it
 * is (to check the climb back). */
struct frame {
    char *names;
    size_t len, off;
    dev_t dev;
    ino_t ino;
};

/* Reads the names in dfd (borrowed), "." and ".." left out, into f->names. */
static int read_names(int dfd, struct frame *f)
{
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    size_t cap = 0;
    struct dirent *e;

    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    f->names = NULL;
    f->len = f->off = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name) + 1;

        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (f->len + n > cap) {
            size_t c = cap ? cap * 2 : 4096;
            char *g;

            while (c < f->len + n)
                c *= 2;
            g = realloc(f->names, c);
            if (!g) {
                closedir(d);
                return -1;
            }
            f->names = g;
            cap = c;
        }
        memcpy(f->names + f->len, e->d_name, n);
        f->len += n;
    }
    closedir(d);
    return 0;
}

struct walk {
    struct frame *stack;
    size_t depth, cap;
    struct seen seen;
    dev_t dev; /* the workspace's file system: nothing on another is counted */
    uint64_t bytes;
};

static int push(struct walk *w, int dfd, const struct stat *st)
{
    if (w->depth == w->cap) {
        size_t c = w->cap ? w->cap * 2 : 32;
        struct frame *g = realloc(w->stack, c * sizeof(*g));

        if (!g)
            return -1;
        w->stack = g;
        w->cap = c;
    }
    if (read_names(dfd, &w->stack[w->depth]) < 0)
        return -1;
    w->stack[w->depth].dev = st->st_dev;
    w->stack[w->depth].ino = st->st_ino;
    w->depth++;
    return 0;
}

/* Counts one entry of the directory *cur; a directory is entered (*cur becomes its fd). */
static int visit(struct walk *w, int *cur, const char *name)
{
    struct stat st, cst;
    int cfd;

    if (fstatat(*cur, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != w->dev)
        return 0; /* gone meanwhile, or a mount of something else */
    if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 && seen_before(&w->seen, st.st_dev, st.st_ino))
        return 0;
    w->bytes += (uint64_t)st.st_blocks * 512;
    if (!S_ISDIR(st.st_mode))
        return 0;
    cfd = openat(*cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (cfd < 0)
        return 0;
    if (fstat(cfd, &cst) < 0 || cst.st_ino != st.st_ino || cst.st_dev != st.st_dev ||
        push(w, cfd, &cst) < 0) {
        close(cfd);
        return 0; /* swapped meanwhile, or no memory for its names: not counted */
    }
    close(*cur);
    *cur = cfd;
    return 0;
}

/* Climbs from *cur to its parent, which must be the frame now on top. */
static int climb(struct walk *w, int *cur)
{
    const struct frame *top = &w->stack[w->depth - 1];
    struct stat st;
    int pfd = openat(*cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (pfd < 0 || fstat(pfd, &st) < 0 || st.st_dev != top->dev || st.st_ino != top->ino) {
        if (pfd >= 0)
            close(pfd);
        errno = EAGAIN; /* the directory moved while it was walked */
        return -1;
    }
    close(*cur);
    *cur = pfd;
    return 0;
}

/* Walks the tree under root_fd once; *bytes gets its usage. -1 with errno (EAGAIN: try again). */
static int walk_once(int root_fd, uint64_t *bytes)
{
    struct walk w = {0};
    struct stat st;
    int cur = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = -1;

    if (cur < 0 || fstat(cur, &st) < 0)
        goto out;
    w.dev = st.st_dev;
    w.bytes = (uint64_t)st.st_blocks * 512;
    if (push(&w, cur, &st) < 0)
        goto out;
    while (w.depth > 0) {
        struct frame *f = &w.stack[w.depth - 1];

        if (f->off < f->len) {
            const char *name = f->names + f->off;

            f->off += strlen(name) + 1;
            visit(&w, &cur, name);
            continue;
        }
        free(f->names);
        w.depth--;
        if (w.depth > 0 && climb(&w, &cur) < 0)
            goto out;
    }
    *bytes = w.bytes;
    rc = 0;
out:
    for (size_t i = 0; i < w.depth; i++)
        free(w.stack[i].names);
    free(w.stack);
    free(w.seen.v);
    if (cur >= 0)
        close(cur);
    return rc;
}

/* ---- the estimate ---- */

static int free_bytes(int fd, uint64_t *out)
{
    struct statfs sf;

    if (fstatfs(fd, &sf) < 0)
        return -1;
    *out = (uint64_t)sf.f_bfree * (uint64_t)sf.f_bsize;
    return 0;
}

struct quota *quota_new(int root_fd, uint64_t limit_mb, struct errinfo *err)
{
    struct quota *q = calloc(1, sizeof(*q));

    if (!q) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return NULL;
    }
    q->root_fd = root_fd;
    q->limit = limit_mb << 20;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->walked_cond, NULL);
    return q;
}

void quota_free(struct quota *q)
{
    if (!q)
        return;
    pthread_cond_destroy(&q->walked_cond);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

uint64_t quota_limit_mb(const struct quota *q)
{
    return q ? q->limit >> 20 : 0;
}

/* Walks the tree and restarts the estimate from it (lock held; released during the walk). The
 * figure must come from a walk that started after the call: one under way is waited for, then
 * another is made unless someone else started it meanwhile. */
static int rescan_locked(struct quota *q)
{
    uint64_t need = q->starts + 1;
    int rc = 0;

    while (q->done < need && rc == 0) {
        uint64_t before = 0, bytes = 0, mine;

        if (q->walking) {
            pthread_cond_wait(&q->walked_cond, &q->lock);
            continue;
        }
        q->walking = true;
        mine = ++q->starts;
        pthread_mutex_unlock(&q->lock);
        /* The free space first: what is written during the walk is then counted again (as
         * grown) rather than not at all. */
        rc = free_bytes(q->root_fd, &before);
        for (int i = 0; i < WALK_TRIES && rc == 0; i++) {
            rc = walk_once(q->root_fd, &bytes);
            if (rc == 0 || errno != EAGAIN)
                break;
            rc = 0;
        }
        if (rc < 0)
            log_warn("quota: cannot measure the workspace: %s", strerror(errno));
        pthread_mutex_lock(&q->lock);
        if (rc == 0) {
            q->known = true;
            q->walked = bytes;
            q->grown = 0;
            q->last_free = before;
        }
        q->done = mine;
        q->walking = false;
        pthread_cond_broadcast(&q->walked_cond);
    }
    return rc;
}

/* Samples the free space (read before the lock was taken) into the estimate (lock held). */
static void sample_locked(struct quota *q, uint64_t now)
{
    q->grown = quota_grow(q->grown, &q->last_free, now);
}

/* The usage on disk now, walking when the estimate (with extra more bytes) reaches the quota or
 * nothing was walked yet (lock held). */
static int current(struct quota *q, uint64_t extra, uint64_t *used)
{
    uint64_t now = 0;

    if (!q->known && rescan_locked(q) < 0)
        return -1;
    pthread_mutex_unlock(&q->lock);
    if (free_bytes(q->root_fd, &now) < 0) {
        pthread_mutex_lock(&q->lock);
        return -1;
    }
    pthread_mutex_lock(&q->lock);
    sample_locked(q, now);
    *used = q->walked + q->grown;
    if (*used + q->reserved + extra <= q->limit)
        return 0;
    if (rescan_locked(q) < 0)
        return -1;
    *used = q->walked + q->grown;
    return 0;
}

int quota_rescan(struct quota *q)
{
    int rc;

    if (!q || !q->limit)
        return 0;
    pthread_mutex_lock(&q->lock);
    rc = rescan_locked(q);
    pthread_mutex_unlock(&q->lock);
    return rc;
}

static uint64_t mib_round(uint64_t bytes)
{
    return (bytes + (1u << 19)) >> 20;
}

int quota_reserve(struct quota *q, uint64_t bytes, struct errinfo *err)
{
    uint64_t used = 0, need = bytes + QUOTA_WRITE_EXTRA;

    if (!q || !q->limit)
        return 0;
    pthread_mutex_lock(&q->lock);
    if (current(q, need, &used) == 0 && used + q->reserved + need > q->limit) {
        pthread_mutex_unlock(&q->lock);
        errinfo_set(err, ERR_TOO_LARGE,
                    "workspace is full (quota %llu MiB, used %llu MiB): %llu more bytes do not "
                    "fit; remove files (the remove tool, or rm with exec) or raise "
                    "--workspace-quota-mb",
                    (unsigned long long)(q->limit >> 20), (unsigned long long)mib_round(used),
                    (unsigned long long)bytes);
        return -1;
    }
    /* A workspace that cannot be measured is not held against the write. */
    q->reserved += need;
    pthread_mutex_unlock(&q->lock);
    return 0;
}

void quota_release(struct quota *q, uint64_t bytes, bool written)
{
    uint64_t need = bytes + QUOTA_WRITE_EXTRA;

    if (!q || !q->limit)
        return;
    pthread_mutex_lock(&q->lock);
    q->reserved = q->reserved > need ? q->reserved - need : 0;
    /* Counted for sure, even if a drop of free space that shows it is hidden by space freed
     * elsewhere on the disk at the same time (counted twice otherwise: too high is safe). */
    if (written)
        q->grown += bytes;
    pthread_mutex_unlock(&q->lock);
}

int quota_usage(struct quota *q, uint64_t *used, bool *over)
{
    int rc;

    if (!q || !q->limit)
        return -1;
    pthread_mutex_lock(&q->lock);
    rc = current(q, 0, used);
    pthread_mutex_unlock(&q->lock);
    if (rc == 0 && over)
        *over = *used > q->limit;
    return rc;
}

int quota_peek(struct quota *q, uint64_t *used)
{
    uint64_t now = 0;
    int rc = -1;

    if (!q || !q->limit)
        return -1;
    if (free_bytes(q->root_fd, &now) < 0)
        return -1;
    pthread_mutex_lock(&q->lock);
    if (q->known) {
        sample_locked(q, now);
        *used = q->walked + q->grown;
        rc = 0;
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}
