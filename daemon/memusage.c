/* daemon/memusage.c - one sandbox's memory, read from /proc (see memusage.h).
 *
 * The walk: bwrap's child is the init of the sandbox's pid namespace; every process of the
 * sandbox descends from it (orphans are re-parented to it), so the children lists
 * (/proc/<pid>/task/<tid>/children, for each thread) reach them all without scanning /proc. A
 * process that ends during the walk is skipped; one that forks during it is seen next time. */
#include "memusage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/magic.h>

#define STATUS_MAX (8u << 10)  /* /proc/<pid>/status is about 1.5 KiB */
#define SMAPS_MAX  (64u << 20) /* a larger smaps is read in part: what it shows still counts */

/* ---- pure parsers ---- */

uint64_t memusage_status_bytes(const char *status, const char *key)
{
    size_t klen = strlen(key);

    for (const char *p = status; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
            unsigned long long kib = strtoull(p + klen + 1, NULL, 10);

            return (uint64_t)kib << 10;
        }
    }
    return 0;
}

/* One mapping's header: "start-end perms offset MM:mm inode [path]". */
struct vma {
    bool shared;
    dev_t dev;
    uint64_t ino;
};

/* The next space-separated field of *p (advanced past it); NULL at the end of the line. */
static const char *field(const char **p, size_t *len)
{
    const char *s = *p;

    while (*s == ' ')
        s++;
    if (!*s)
        return NULL;
    *len = strcspn(s, " ");
    *p = s + *len;
    return s;
}

static bool parse_header(const char *line, struct vma *v)
{
    const char *p = line, *f[5];
    size_t len[5];
    char *end;
    unsigned long maj, mi;

    for (int i = 0; i < 5; i++) {
        f[i] = field(&p, &len[i]);
        if (!f[i])
            return false;
    }
    if (len[1] < 4 || !memchr(f[0], '-', len[0]))
        return false;
    maj = strtoul(f[3], &end, 16);
    if (*end != ':')
        return false;
    mi = strtoul(end + 1, &end, 16);
    if (end != f[3] + len[3])
        return false;
    v->ino = strtoull(f[4], &end, 10);
    if (end != f[4] + len[4])
        return false;
    v->shared = f[1][3] == 's';
    v->dev = makedev(maj, mi);
    return true;
}

static bool is_held(uint64_t ino, const uint64_t *held, size_t nheld)
{
    for (size_t i = 0; i < nheld; i++)
        if (held[i] == ino)
            return true;
    return false;
}

/* The bytes one mapping adds, given its "Pss:" and "Anonymous:" values. */
static uint64_t vma_bytes(const struct vma *v, uint64_t pss, uint64_t anon, dev_t shm_dev,
                          const uint64_t *held, size_t nheld)
{
    if (v->shared)
        return v->dev == shm_dev && !is_held(v->ino, held, nheld) ? pss : 0;
    return v->ino == 0 ? pss : anon;
}

uint64_t memusage_smaps_bytes(const char *text, size_t len, dev_t shm_dev, const uint64_t *held,
                              size_t nheld)
{
    const char *p = text, *end = text + len;
    struct vma v = {0};
    bool in_vma = false;
    uint64_t total = 0, pss = 0, anon = 0;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        char line[160];
        size_t n = (size_t)(le - p) < sizeof(line) - 1 ? (size_t)(le - p) : sizeof(line) - 1;

        memcpy(line, p, n);
        line[n] = '\0';
        p = nl ? nl + 1 : end;
        if (strncmp(line, "Pss:", 4) == 0) {
            pss = strtoull(line + 4, NULL, 10) << 10;
        } else if (strncmp(line, "Anonymous:", 10) == 0) {
            anon = strtoull(line + 10, NULL, 10) << 10;
        } else if (line[0] && strchr(line, '-') && strchr(line, ':') &&
                   ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f'))) {
            struct vma next;

            /* A field line is "Name:   value"; only a header starts with a hex address. */
            if (!parse_header(line, &next))
                continue;
            if (in_vma)
                total += vma_bytes(&v, pss, anon, shm_dev, held, nheld);
            v = next;
            in_vma = true;
            pss = anon = 0;
        }
    }
    if (in_vma)
        total += vma_bytes(&v, pss, anon, shm_dev, held, nheld);
    return total;
}

/* ---- reading /proc ---- */

/* The device of the kernel's internal shm mount, where memfds, System V segments and shared
 * anonymous mappings live: a memfd's st_dev, probed once. */
static dev_t shm_dev;
static pthread_once_t shm_once = PTHREAD_ONCE_INIT;

static void probe_shm_dev(void)
{
    struct stat st;
    int fd = memfd_create("runboxd-shm-probe", MFD_CLOEXEC);

    if (fd >= 0 && fstat(fd, &st) == 0)
        shm_dev = st.st_dev;
    if (fd >= 0)
        close(fd);
}

/* Reads the file path into buf (at most cap - 1 bytes, NUL-terminated). Returns the length,
 * or -1. */
static ssize_t read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t got = 0;

    if (fd < 0)
        return -1;
    while (got + 1 < cap) {
        ssize_t n = read(fd, buf + got, cap - 1 - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

/* The processes of one walk, and the shm objects found open. */
struct walk {
    pid_t *pids;
    size_t n, cap;
    uint64_t *held; /* inodes of shm objects held by a descriptor */
    size_t nheld, heldcap;
    uint64_t held_bytes;
    char *buf; /* smaps text */
    size_t bufcap;
};

static bool push(void **arr, size_t *cap, size_t n, size_t size)
{
    size_t c = *cap ? *cap * 2 : 64;
    void *g;

    if (n < *cap)
        return true;
    g = realloc(*arr, c * size);
    if (!g)
        return false;
    *arr = g;
    *cap = c;
    return true;
}

static void add_pid(struct walk *w, pid_t pid)
{
    if (w->n < MEMUSAGE_PROCS_MAX && push((void **)&w->pids, &w->cap, w->n, sizeof(*w->pids)))
        w->pids[w->n++] = pid;
}

/* Appends the children of every thread of pid. */
static void add_children(struct walk *w, pid_t pid)
{
    char path[64], text[4096];
    struct dirent *e;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    d = opendir(path);
    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)pid, e->d_name);
        if (read_file(path, text, sizeof(text)) <= 0)
            continue;
        for (char *p = text, *end; *p;) {
            long c = strtol(p, &end, 10);

            if (end == p)
                break;
            if (c > 0)
                add_pid(w, (pid_t)c);
            p = end;
        }
    }
    closedir(d);
}

/* Records the shm objects pid holds open (each inode once). */
static void scan_fds(struct walk *w, pid_t pid)
{
    char path[64];
    struct dirent *e;
    DIR *d;

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    d = opendir(path);
    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        struct stat st;

        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        /* Following the link stats the open file itself. */
        if (fstatat(dirfd(d), e->d_name, &st, 0) < 0 || st.st_dev != shm_dev ||
            is_held((uint64_t)st.st_ino, w->held, w->nheld))
            continue;
        if (!push((void **)&w->held, &w->heldcap, w->nheld, sizeof(*w->held)))
            continue;
        w->held[w->nheld++] = (uint64_t)st.st_ino;
        w->held_bytes += (uint64_t)st.st_blocks * 512;
    }
    closedir(d);
}

static uint64_t quick_bytes(pid_t pid)
{
    char path[64], text[STATUS_MAX];

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (read_file(path, text, sizeof(text)) <= 0)
        return 0;
    return memusage_status_bytes(text, "RssAnon") + memusage_status_bytes(text, "RssShmem");
}

/* Doubles the smaps buffer, up to SMAPS_MAX. */
static bool grow_buf(struct walk *w)
{
    size_t cap = w->bufcap ? w->bufcap * 2 : (256u << 10);
    char *g = cap <= SMAPS_MAX ? realloc(w->buf, cap) : NULL;

    if (!g)
        return false;
    w->buf = g;
    w->bufcap = cap;
    return true;
}

static uint64_t exact_bytes(struct walk *w, pid_t pid)
{
    char path[64];
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
    if (!w->buf && !grow_buf(w))
        return 0;
    for (;;) {
        n = read_file(path, w->buf, w->bufcap);
        if (n < 0)
            return 0;
        /* It fits, or cannot be given more room: what was read counts. */
        if ((size_t)n + 1 < w->bufcap || !grow_buf(w))
            break;
    }
    return memusage_smaps_bytes(w->buf, (size_t)n, shm_dev, w->held, w->nheld);
}

/* True once init lives in the sandbox's root: until bwrap has pivoted, its root is still ours
 * and its /tmp the host's. */
static bool in_sandbox_root(pid_t init)
{
    char path[64];
    struct stat ours, theirs;

    snprintf(path, sizeof(path), "/proc/%d/root", (int)init);
    return stat("/", &ours) == 0 && stat(path, &theirs) == 0 &&
           (ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino);
}

/* What the tmpfs mount at /proc/<init>/root<dir> holds. */
static uint64_t tmpfs_bytes(pid_t init, const char *dir)
{
    char path[96];
    struct statfs sf;

    snprintf(path, sizeof(path), "/proc/%d/root%s", (int)init, dir);
    if (statfs(path, &sf) < 0 || sf.f_type != TMPFS_MAGIC || sf.f_blocks < sf.f_bfree)
        return 0;
    return (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize;
}

int memusage_measure(pid_t bwrap, pid_t agent, bool exact, struct memusage *out)
{
    struct walk w = {0};
    pid_t init = 0;

    memset(out, 0, sizeof(*out));
    pthread_once(&shm_once, probe_shm_dev);
    add_children(&w, bwrap);
    /* bwrap's children: the pid namespace's init, and the network agent when there is one. */
    for (size_t i = 0; i < w.n && !init; i++)
        if (w.pids[i] != agent)
            init = w.pids[i];
    if (!init) {
        free(w.pids);
        return -1;
    }
    /* The agent is the daemon's: a fork of it that holds the daemon's own pages (all of them
     * under a sanitizer's shadow memory), which no command can add to. It is left out. */
    for (size_t i = 0, k = 0, n = w.n; i < n; i++) {
        if (agent > 0 && w.pids[i] == agent) {
            w.n--;
            continue;
        }
        w.pids[k++] = w.pids[i];
    }
    add_pid(&w, bwrap);
    /* w.pids grows while it is walked: each process adds its children at the end. */
    for (size_t i = 0; i < w.n; i++) {
        if (w.pids[i] != bwrap)
            add_children(&w, w.pids[i]);
        scan_fds(&w, w.pids[i]);
    }
    for (size_t i = 0; i < w.n; i++)
        out->processes += exact ? exact_bytes(&w, w.pids[i]) : quick_bytes(w.pids[i]);
    if (in_sandbox_root(init))
        out->tmpfs = tmpfs_bytes(init, "/tmp") + tmpfs_bytes(init, "/dev/shm");
    out->shm_fds = w.held_bytes;
    out->total = out->processes + out->tmpfs + out->shm_fds;
    out->nprocs = (unsigned)w.n;
    out->exact = exact;
    free(w.pids);
    free(w.held);
    free(w.buf);
    return 0;
}
