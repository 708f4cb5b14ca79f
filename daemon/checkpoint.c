/* daemon/checkpoint.c - saving and restoring the workspace (see checkpoint.h for the design). */
#include "checkpoint.h"

#include <linux/openat2.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint_int.h"
#include "log.h"
#include "strfmt.h"

#define COPY_TRIES 3

/* ---- trees ---- */

void cp_tree_free(struct cp_tree *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->e[i].path);
        free(t->e[i].blob);
        free(t->e[i].target);
    }
    free(t->e);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static bool build_slots(struct cp_tree *t)
{
    size_t n = 16;

    while (n < t->n * 2 + 1)
        n *= 2;
    free(t->slots);
    t->slots = calloc(n, sizeof(*t->slots));
    t->nslots = t->slots ? n : 0;
    if (!t->slots)
        return false;
    for (size_t i = 0; i < t->n; i++) {
        size_t s = hash(t->e[i].path) & (n - 1);
        while (t->slots[s])
            s = (s + 1) & (n - 1);
        t->slots[s] = i + 1;
    }
    return true;
}

const struct cp_ent *cp_tree_find(struct cp_tree *t, const char *path)
{
    size_t s;

    if (!t->slots && !build_slots(t))
        return NULL;
    for (s = hash(path) & (t->nslots - 1); t->slots[s]; s = (s + 1) & (t->nslots - 1))
        if (strcmp(t->e[t->slots[s] - 1].path, path) == 0)
            return &t->e[t->slots[s] - 1];
    return NULL;
}

static int cmp_ent(const void *a, const void *b)
{
    return strcmp(((const struct cp_ent *)a)->path, ((const struct cp_ent *)b)->path);
}

void cp_tree_sort(struct cp_tree *t)
{
    if (t->n > 1)
        qsort(t->e, t->n, sizeof(*t->e), cmp_ent);
    free(t->slots);
    t->slots = NULL;
}

static struct cp_ent *tree_add(struct cp_tree *t, struct errinfo *err)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        struct cp_ent *e = t->n >= CP_ENTRIES_MAX ? NULL : realloc(t->e, cap * sizeof(*e));

        if (!e) {
            errinfo_set(err, t->n >= CP_ENTRIES_MAX ? ERR_TOO_LARGE : ERR_NOMEM,
                        "checkpoint: the workspace has more than %d entries, or memory ran out",
                        CP_ENTRIES_MAX);
            return NULL;
        }
        t->e = e;
        t->cap = cap;
    }
    memset(&t->e[t->n], 0, sizeof(t->e[0]));
    free(t->slots);
    t->slots = NULL;
    return &t->e[t->n++];
}

static void from_stat(struct cp_ent *e, const struct stat *st)
{
    e->mode = st->st_mode & 07777;
    e->size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
    e->ino = st->st_ino;
    e->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    e->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

/* ---- the workspace ---- */

int cp_open_ws(int ws_fd, const char *path, int flags)
{
    struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
                           .resolve =
                               RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};

    return (int)syscall(SYS_openat2, ws_fd, path[0] ? path : ".", &how, sizeof(how));
}

/* A symlink's target, read into a buffer of its own size (lstat's st_size; PATH_MAX when that
 * is not plausible). Kept out of walk_dir, whose frame is on the stack once per folder level:
 * a path buffer there made 256 levels overflow a worker's stack. A link replaced meanwhile by
 * a longer one is cut to the size lstat saw. NULL only when out of memory. */
static char *link_target(int dfd, const char *name, off_t size)
{
    size_t cap = size > 0 && size < PATH_MAX ? (size_t)size + 1 : PATH_MAX;
    char *buf = malloc(cap);
    ssize_t n;

    if (!buf)
        return NULL;
    n = readlinkat(dfd, name, buf, cap - 1);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static int walk_dir(int dfd, const char *rel, int depth, struct cp_tree *t, struct errinfo *err)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;
    int rc = 0;

    if (!d) {
        if (fd >= 0)
            close(fd);
        errinfo_sys(err, "checkpoint: cannot read the folder /%s", rel);
        return -1;
    }
    if (depth > CP_DEPTH_MAX) {
        closedir(d);
        /* What to do comes before the path, which can be longer than a message holds. */
        errinfo_set(err, ERR_TOO_LARGE,
                    "checkpoint: folders nest deeper than %d levels, more than a checkpoint "
                    "saves; move or remove the deepest, then try again: /%s",
                    CP_DEPTH_MAX, rel);
        return -1;
    }
    while (rc == 0 && (de = readdir(d)) != NULL) {
        struct stat st;
        struct cp_ent *e;
        char *path;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone meanwhile */
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
            continue; /* fifos, sockets, devices: not workspace content */
        path = rel[0] ? strfmt_alloc("%s/%s", rel, de->d_name) : strdup(de->d_name);
        e = path ? tree_add(t, err) : NULL;
        if (!e) {
            if (!path)
                errinfo_set(err, ERR_NOMEM, "checkpoint: out of memory");
            free(path);
            rc = -1;
            break;
        }
        e->path = path;
        from_stat(e, &st);
        e->type = S_ISREG(st.st_mode) ? 'f' : S_ISDIR(st.st_mode) ? 'd' : 'l';
        if (e->type == 'l') {
            e->target = link_target(dirfd(d), de->d_name, st.st_size);
            if (!e->target) {
                errinfo_set(err, ERR_NOMEM, "checkpoint: out of memory");
                rc = -1;
            }
        } else if (e->type == 'd') {
            int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            char *own = strdup(path); /* t->e may move while recursing */

            if (sub < 0 || !own) {
                free(own);
                if (sub >= 0)
                    close(sub);
                continue; /* replaced meanwhile: what is there is listed as found */
            }
            rc = walk_dir(sub, own, depth + 1, t, err);
            close(sub);
            free(own);
        }
    }
    closedir(d);
    return rc;
}

int cp_walk(int ws_fd, struct cp_tree *t, struct errinfo *err)
{
    int fd = openat(ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc;

    if (fd < 0) {
        errinfo_sys(err, "checkpoint: cannot open the workspace");
        return -1;
    }
    rc = walk_dir(fd, "", 0, t, err);
    close(fd);
    return rc;
}

/* ---- manifests ---- */

static int write_all_fd(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void iso_time(char *buf, size_t n)
{
    struct timespec ts;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ts.tv_nsec / 1000000));
}

/* The manifest text: header line, then records. Owned, *len. */
static char *manifest_text(const cJSON *header, const struct cp_tree *t, size_t *len)
{
    char *h = cJSON_PrintUnformatted(header);
    size_t cap = (h ? strlen(h) : 0) + 2 + 1, n = 0;
    char *out;

    for (size_t i = 0; i < t->n; i++)
        cap += 128 + strlen(t->e[i].path) + (t->e[i].blob ? strlen(t->e[i].blob) : 1) +
               (t->e[i].target ? strlen(t->e[i].target) + 1 : 0);
    out = h ? malloc(cap) : NULL;
    if (!out) {
        cJSON_free(h);
        return NULL;
    }
    n = (size_t)snprintf(out, cap, "%s\n", h);
    cJSON_free(h);
    for (size_t i = 0; i < t->n; i++) {
        const struct cp_ent *e = &t->e[i];
        int w = snprintf(out + n, cap - n,
                         "%c %o %" PRIu64 " %" PRId64 " %" PRId64 " %" PRIu64 " %s %s", e->type,
                         e->mode, e->size, e->mtime_ns, e->ctime_ns, e->ino,
                         e->blob ? e->blob : "-", e->path);
        n += (size_t)w + 1; /* the NUL that snprintf wrote ends the record */
        if (e->target) {
            size_t tl = strlen(e->target) + 1;
            memcpy(out + n, e->target, tl);
            n += tl;
        }
    }
    *len = n;
    return out;
}

/* One record, "t mode size mtime ctime ino blob path": the path is everything after the one
 * space that follows the blob (it may itself start with a space). */
static int parse_record(const char *p, struct cp_ent *e, char *blob, size_t blobsz,
                        const char **path)
{
    unsigned long long u[3]; /* mode, size, inode */
    long long sgn[2];        /* mtime, ctime */
    char *endp;
    size_t bl;

    if (!p[0] || p[1] != ' ')
        return -1;
    e->type = p[0];
    p += 2;
    for (int i = 0; i < 5; i++) {
        errno = 0;
        if (i == 2 || i == 3)
            sgn[i - 2] = strtoll(p, &endp, 10);
        else
            u[i < 2 ? i : i - 2] = strtoull(p, &endp, i == 0 ? 8 : 10);
        if (errno || endp == p || *endp != ' ')
            return -1;
        p = endp + 1;
    }
    e->mode = (unsigned)(u[0] & 07777);
    e->size = u[1];
    e->mtime_ns = sgn[0];
    e->ctime_ns = sgn[1];
    e->ino = u[2];
    bl = strcspn(p, " ");
    if (bl == 0 || bl >= blobsz || p[bl] != ' ')
        return -1;
    memcpy(blob, p, bl);
    blob[bl] = '\0';
    *path = p + bl + 1;
    return 0;
}

static int parse_manifest(char *text, size_t len, struct cp_tree *t, cJSON **header,
                          struct errinfo *err)
{
    char *nl = memchr(text, '\n', len), *p, *end = text + len;

    if (!nl) {
        errinfo_set(err, ERR_IO, "checkpoint: a manifest has no header");
        return -1;
    }
    *nl = '\0';
    if (header && !(*header = cJSON_Parse(text))) {
        errinfo_set(err, ERR_IO, "checkpoint: a manifest's header is not JSON");
        return -1;
    }
    for (p = nl + 1; p < end;) {
        char *rec_end = memchr(p, '\0', (size_t)(end - p)), blob[64];
        const char *path;
        struct cp_ent *e;

        if (!rec_end)
            break;
        e = tree_add(t, err);
        if (!e)
            return -1;
        if (parse_record(p, e, blob, sizeof(blob), &path) < 0) {
            t->n--;
            errinfo_set(err, ERR_IO, "checkpoint: a manifest record is damaged");
            return -1;
        }
        e->path = strdup(path);
        e->blob = strcmp(blob, "-") ? strdup(blob) : NULL;
        p = rec_end + 1;
        if (e->type == 'l' && p < end) {
            char *te = memchr(p, '\0', (size_t)(end - p));
            if (!te)
                break;
            e->target = strdup(p);
            p = te + 1;
        }
    }
    return 0;
}

static bool id_ok(const char *id)
{
    size_t n = strlen(id);

    return n > 0 && n < 20 && strspn(id, "0123456789") == n;
}

int cp_load(struct checkpoint *c, const char *id, struct cp_tree *t, cJSON **header,
            struct errinfo *err)
{
    int fd = id_ok(id) ? openat(c->cp_fd, id, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    char *text = NULL;
    int rc = -1;

    if (fd < 0) {
        char ids[600];

        cp_ids_text(c, ids, sizeof(ids));
        errinfo_set(err, ERR_NOT_FOUND, "no checkpoint \"%.40s\" (the checkpoints are: %s)", id,
                    ids[0] ? ids : "none yet; make one with checkpoint");
        return -1;
    }
    if (fstat(fd, &st) < 0 || !(text = malloc((size_t)st.st_size + 1)) ||
        pread(fd, text, (size_t)st.st_size, 0) != st.st_size) {
        errinfo_sys(err, "checkpoint: cannot read checkpoint %s", id);
        goto out;
    }
    text[st.st_size] = '\0';
    rc = parse_manifest(text, (size_t)st.st_size, t, header, err);
out:
    free(text);
    close(fd);
    return rc;
}

/* Every checkpoint id, ascending. Owned array of numbers, *n. */
static uint64_t *list_ids(struct checkpoint *c, size_t *n)
{
    int fd = openat(c->cp_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    uint64_t *ids = NULL;
    size_t cap = 0;
    struct dirent *e;

    *n = 0;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    while ((e = readdir(d)) != NULL) {
        if (!id_ok(e->d_name))
            continue;
        if (*n == cap) {
            uint64_t *g = realloc(ids, (cap = cap ? cap * 2 : 32) * sizeof(*ids));
            if (!g)
                break;
            ids = g;
        }
        ids[(*n)++] = strtoull(e->d_name, NULL, 10);
    }
    closedir(d);
    for (size_t i = 1; i < *n; i++) /* few: insertion sort */
        for (size_t k = i; k > 0 && ids[k - 1] > ids[k]; k--) {
            uint64_t x = ids[k];
            ids[k] = ids[k - 1];
            ids[k - 1] = x;
        }
    return ids;
}

void cp_newest(struct checkpoint *c, char *buf, size_t bufsz)
{
    size_t n;
    uint64_t *ids = list_ids(c, &n);

    buf[0] = '\0';
    if (n)
        snprintf(buf, bufsz, "%" PRIu64, ids[n - 1]);
    free(ids);
}

void cp_ids_text(struct checkpoint *c, char *buf, size_t bufsz)
{
    size_t n, len = 0;
    uint64_t *ids = list_ids(c, &n);

    buf[0] = '\0';
    for (size_t i = 0; i < n && len + 24 < bufsz; i++)
        len += (size_t)snprintf(buf + len, bufsz - len, "%s%" PRIu64, i ? ", " : "", ids[i]);
    free(ids);
}

/* ---- blobs ---- */

static bool same_stat(const struct cp_ent *a, const struct cp_ent *b)
{
    return a->type == b->type && a->size == b->size && a->mtime_ns == b->mtime_ns &&
           a->ctime_ns == b->ctime_ns && a->ino == b->ino;
}

static int copy_fd(int from, int to)
{
    char buf[1 << 16];

    for (;;) {
        ssize_t r = copy_file_range(from, NULL, to, NULL, 1 << 30, 0);

        if (r == 0)
            return 0;
        if (r > 0)
            continue;
        if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
            return -1;
        break; /* another file system: plain reads and writes */
    }
    for (;;) {
        ssize_t r = read(from, buf, sizeof(buf));

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return (int)r;
        if (write_all_fd(to, buf, (size_t)r) < 0)
            return -1;
    }
}

/* Copies workspace file e->path into blobs/<id>/<n> and sets e's blob and stat (what was copied).
 * A file that changes while it is copied is tried COPY_TRIES times. */
static int save_blob(struct checkpoint *c, int dir_fd, const char *id, size_t n, struct cp_ent *e,
                     struct errinfo *err)
{
    char name[32], tmp[40];

    snprintf(name, sizeof(name), "%zu", n);
    snprintf(tmp, sizeof(tmp), "%zu.tmp", n);
    for (int attempt = 0; attempt < COPY_TRIES; attempt++) {
        int src = cp_open_ws(c->ws_fd, e->path, O_RDONLY), dst = -1;
        struct stat before, after;
        struct cp_ent b = {0}, a = {0};
        int rc = -1;

        if (src < 0) {
            errinfo_sys(err, "checkpoint: cannot read /%s", e->path);
            return -1;
        }
        dst = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0400);
        if (dst < 0 || fstat(src, &before) < 0 || !S_ISREG(before.st_mode) ||
            copy_fd(src, dst) < 0 || (c->fsync && fsync(dst) < 0) || fstat(src, &after) < 0) {
            errinfo_sys(err, "checkpoint: cannot save /%s", e->path);
            goto next;
        }
        from_stat(&b, &before);
        from_stat(&a, &after);
        b.type = a.type = 'f';
        if (!same_stat(&a, &b)) {
            rc = 1; /* changed while copied: again */
            goto next;
        }
        if (renameat(dir_fd, tmp, dir_fd, name) < 0) {
            errinfo_sys(err, "checkpoint: cannot save /%s", e->path);
            goto next;
        }
        from_stat(e, &after);
        e->blob = strfmt_alloc("%s/%s", id, name);
        rc = e->blob ? 0 : -1;
        if (rc < 0)
            errinfo_set(err, ERR_NOMEM, "checkpoint: out of memory");
    next:
        if (dst >= 0)
            close(dst);
        close(src);
        if (rc != 1) {
            if (rc < 0)
                unlinkat(dir_fd, tmp, 0);
            return rc;
        }
        unlinkat(dir_fd, tmp, 0);
    }
    errinfo_set(err, ERR_IO,
                "checkpoint: /%s changed while it was being saved, %d times (a command is still "
                "writing it?); nothing was saved: try again when it is done",
                e->path, COPY_TRIES);
    return -1;
}

static void remove_dir_at(int parent, const char *name)
{
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *e;

    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..") != 0))
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    unlinkat(parent, name, AT_REMOVEDIR);
}

/* ---- retention ---- */

/* Drops the oldest checkpoints past keep, then every blob directory no manifest refers to. */
static cJSON *retain(struct checkpoint *c)
{
    size_t n;
    uint64_t *ids = list_ids(c, &n);
    cJSON *dropped = cJSON_CreateArray();
    char name[32];

    if (!ids || n <= c->keep) {
        free(ids);
        return dropped;
    }
    for (size_t i = 0; i + c->keep < n; i++) {
        snprintf(name, sizeof(name), "%" PRIu64, ids[i]);
        if (unlinkat(c->cp_fd, name, 0) == 0 && dropped)
            cJSON_AddItemToArray(dropped, cJSON_CreateString(name));
    }
    /* A blob directory is named by the checkpoint that first saved its blobs; it stays while a
     * kept manifest refers to any of them. */
    bool *used = calloc(n, sizeof(*used));
    for (size_t k = n - c->keep; used && k < n; k++) {
        struct cp_tree t = {0};

        snprintf(name, sizeof(name), "%" PRIu64, ids[k]);
        if (cp_load(c, name, &t, NULL, NULL) == 0)
            for (size_t e = 0; e < t.n; e++) {
                uint64_t owner = t.e[e].blob ? strtoull(t.e[e].blob, NULL, 10) : 0;
                for (size_t i = 0; owner && i + c->keep < n; i++)
                    if (ids[i] == owner)
                        used[i] = true;
            }
        cp_tree_free(&t);
    }
    for (size_t i = 0; used && i + c->keep < n; i++)
        if (!used[i]) {
            snprintf(name, sizeof(name), "%" PRIu64, ids[i]);
            remove_dir_at(c->blobs_fd, name);
        }
    free(used);
    free(ids);
    return dropped;
}

/* ---- the API ---- */

struct checkpoint *checkpoint_new(const struct checkpoint_options *opt, struct errinfo *err)
{
    struct checkpoint *c = calloc(1, sizeof(*c));
    size_t n;
    uint64_t *ids;

    if (!c) {
        close(opt->store_fd);
        errinfo_set(err, ERR_NOMEM, "checkpoint: out of memory");
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->ws_fd = opt->ws_fd;
    c->store_fd = opt->store_fd;
    c->keep = opt->keep ? opt->keep : CHECKPOINT_KEEP_DEFAULT;
    c->fsync = opt->fsync;
    mkdirat(c->store_fd, "blobs", 0700);
    mkdirat(c->store_fd, "cp", 0700);
    c->blobs_fd = openat(c->store_fd, "blobs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    c->cp_fd = openat(c->store_fd, "cp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (c->blobs_fd < 0 || c->cp_fd < 0) {
        errinfo_sys(err, "checkpoint: cannot open the checkpoint store");
        checkpoint_free(c);
        return NULL;
    }
    ids = list_ids(c, &n);
    c->next_id = n ? ids[n - 1] + 1 : 1;
    free(ids);
    /* Blob directories of a checkpoint that failed before its manifest: never reused. */
    {
        int fd = openat(c->blobs_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *e;

        while (d && (e = readdir(d)) != NULL)
            if (id_ok(e->d_name) && strtoull(e->d_name, NULL, 10) >= c->next_id)
                c->next_id = strtoull(e->d_name, NULL, 10) + 1;
        if (d)
            closedir(d);
        else if (fd >= 0)
            close(fd);
    }
    return c;
}

void checkpoint_free(struct checkpoint *c)
{
    if (!c)
        return;
    cp_tree_free(&c->index);
    if (c->blobs_fd >= 0)
        close(c->blobs_fd);
    if (c->cp_fd >= 0)
        close(c->cp_fd);
    if (c->store_fd >= 0)
        close(c->store_fd);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* The index: what the workspace was at the last save or restore (after a daemon restart, the
 * newest manifest). */
void cp_load_index(struct checkpoint *c)
{
    char id[32];

    if (c->index_valid)
        return;
    cp_tree_free(&c->index);
    cp_newest(c, id, sizeof(id));
    if (id[0] && cp_load(c, id, &c->index, NULL, NULL) < 0)
        cp_tree_free(&c->index);
    c->index_valid = true;
}

static int save_locked(struct checkpoint *c, const char *message, cJSON **out, struct errinfo *err)
{
    struct cp_tree cur = {0};
    char id[32], created[96], tmp[48];
    uint64_t bytes = 0, copied_bytes = 0;
    size_t files = 0, dirs = 0, links = 0, copied = 0;
    int dir_fd = -1, fd = -1, rc = -1;
    cJSON *h = NULL;
    char *text = NULL;
    size_t len = 0;

    snprintf(id, sizeof(id), "%" PRIu64, c->next_id++);
    if (cp_walk(c->ws_fd, &cur, err) < 0)
        goto out;
    cp_tree_sort(&cur);
    cp_load_index(c);
    for (size_t i = 0; i < cur.n; i++) {
        struct cp_ent *e = &cur.e[i];
        const struct cp_ent *old;

        files += e->type == 'f';
        dirs += e->type == 'd';
        links += e->type == 'l';
        if (e->type != 'f')
            continue;
        old = cp_tree_find(&c->index, e->path);
        if (old && old->blob && same_stat(old, e)) {
            e->blob = strdup(old->blob);
            if (!e->blob) {
                errinfo_set(err, ERR_NOMEM, "checkpoint: out of memory");
                goto out;
            }
        } else {
            if (dir_fd < 0) {
                if (mkdirat(c->blobs_fd, id, 0700) < 0 && errno != EEXIST) {
                    errinfo_sys(err, "checkpoint: cannot write to the checkpoint store");
                    goto out;
                }
                dir_fd = openat(c->blobs_fd, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dir_fd < 0) {
                    errinfo_sys(err, "checkpoint: cannot write to the checkpoint store");
                    goto out;
                }
            }
            if (save_blob(c, dir_fd, id, copied, e, err) < 0)
                goto out;
            copied++;
            copied_bytes += e->size;
        }
        bytes += e->size;
    }
    iso_time(created, sizeof(created));
    h = cJSON_CreateObject();
    if (!h || !cJSON_AddStringToObject(h, "id", id) ||
        !cJSON_AddStringToObject(h, "message", message ? message : "") ||
        !cJSON_AddStringToObject(h, "created", created) ||
        !cJSON_AddNumberToObject(h, "files", (double)files) ||
        !cJSON_AddNumberToObject(h, "dirs", (double)dirs) ||
        !cJSON_AddNumberToObject(h, "symlinks", (double)links) ||
        !cJSON_AddNumberToObject(h, "bytes", (double)bytes) ||
        !(text = manifest_text(h, &cur, &len))) {
        errinfo_set(err, ERR_NOMEM, "checkpoint: out of memory");
        goto out;
    }
    snprintf(tmp, sizeof(tmp), ".tmp-%s", id);
    fd = openat(c->cp_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write_all_fd(fd, text, len) < 0 || (c->fsync && fsync(fd) < 0) ||
        renameat(c->cp_fd, tmp, c->cp_fd, id) < 0) {
        errinfo_sys(err, "checkpoint: cannot write checkpoint %s", id);
        unlinkat(c->cp_fd, tmp, 0);
        goto out;
    }
    if (c->fsync)
        fsync(c->cp_fd);
    /* Listed from here on. */
    cp_tree_free(&c->index);
    c->index = cur;
    memset(&cur, 0, sizeof(cur));
    c->index_valid = true;
    cJSON_AddNumberToObject(h, "copied_files", (double)copied);
    cJSON_AddNumberToObject(h, "copied_bytes", (double)copied_bytes);
    cJSON_AddItemToObject(h, "removed_old", retain(c));
    *out = h;
    h = NULL;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (dir_fd >= 0)
        close(dir_fd);
    if (rc < 0 && dir_fd >= 0)
        remove_dir_at(c->blobs_fd, id); /* no half checkpoint stays behind */
    cp_tree_free(&cur);
    cJSON_Delete(h);
    free(text);
    return rc;
}

int checkpoint_save(struct checkpoint *c, const char *message, cJSON **out, struct errinfo *err)
{
    int rc;

    *out = NULL;
    pthread_mutex_lock(&c->lock);
    rc = save_locked(c, message, out, err);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

cJSON *checkpoint_list(struct checkpoint *c, struct errinfo *err)
{
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "checkpoints");
    size_t n;
    uint64_t *ids;

    if (!arr) {
        cJSON_Delete(root);
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_lock(&c->lock);
    ids = list_ids(c, &n);
    for (size_t i = 0; i < n; i++) {
        char name[32], line[4096];
        int fd;
        ssize_t r;

        snprintf(name, sizeof(name), "%" PRIu64, ids[i]);
        fd = openat(c->cp_fd, name, O_RDONLY | O_CLOEXEC);
        r = fd >= 0 ? pread(fd, line, sizeof(line) - 1, 0) : -1;
        if (fd >= 0)
            close(fd);
        if (r > 0) {
            char *nl;
            cJSON *h;

            line[r] = '\0';
            nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            h = cJSON_Parse(line);
            cJSON_DeleteItemFromObject(h, "dirs");
            cJSON_DeleteItemFromObject(h, "symlinks");
            if (h)
                cJSON_AddItemToArray(arr, h);
        }
    }
    pthread_mutex_unlock(&c->lock);
    free(ids);
    return root;
}

/* ---- restore ---- */

/* The parent directory of path (an fd, no symlink followed) and the last component. */
static int parent_of(int ws_fd, const char *path, const char **leaf)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    int fd;

    *leaf = slash ? slash + 1 : path;
    if (!slash)
        return cp_open_ws(ws_fd, "", O_RDONLY | O_DIRECTORY);
    dir = strndup(path, (size_t)(slash - path));
    fd = dir ? cp_open_ws(ws_fd, dir, O_RDONLY | O_DIRECTORY) : -1;
    free(dir);
    return fd;
}

static int remove_path(int ws_fd, const struct cp_ent *e)
{
    const char *leaf;
    int pfd = parent_of(ws_fd, e->path, &leaf), rc;

    if (pfd < 0)
        return errno == ENOENT ? 0 : -1;
    rc = unlinkat(pfd, leaf, e->type == 'd' ? AT_REMOVEDIR : 0);
    if (rc < 0 && errno == ENOENT)
        rc = 0;
    close(pfd);
    return rc;
}

/* Writes blob t->blob to t->path (a temporary name, then rename), with its mode and mtime, and
 * records the new file's stat in t (for the index). */
static int write_file(struct checkpoint *c, struct cp_ent *t, size_t seq)
{
    const char *leaf;
    char tmp[64];
    int pfd = parent_of(c->ws_fd, t->path, &leaf), src = -1, dst = -1, rc = -1;
    struct timespec times[2] = {
        {.tv_nsec = UTIME_OMIT},
        {.tv_sec = t->mtime_ns / 1000000000, .tv_nsec = t->mtime_ns % 1000000000}};

    snprintf(tmp, sizeof(tmp), ".runbox-restore-%ld-%zu", (long)getpid(), seq);
    if (pfd < 0)
        return -1;
    src = openat(c->blobs_fd, t->blob, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    dst = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (src >= 0 && dst >= 0 && copy_fd(src, dst) == 0 && fchmod(dst, t->mode) == 0 &&
        futimens(dst, times) == 0 && (!c->fsync || fsync(dst) == 0) &&
        renameat(pfd, tmp, pfd, leaf) == 0) {
        struct stat st;

        rc = 0;
        if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0)
            from_stat(t, &st);
    }
    if (rc < 0 && dst >= 0) {
        int e = errno;
        unlinkat(pfd, tmp, 0);
        errno = e;
    }
    if (src >= 0)
        close(src);
    if (dst >= 0)
        close(dst);
    close(pfd);
    return rc;
}

/* Makes t exist as saved. A file's entry gets the stat it has now (for the new index); a
 * folder's mode is set later (*dir_mode_needed). */
static int create_entry(struct checkpoint *c, struct cp_ent *t, const struct cp_ent *cur,
                        size_t seq, size_t *written, size_t *unchanged, bool *dir_mode_needed)
{
    const char *leaf;
    int pfd, rc = 0;

    *dir_mode_needed = t->type == 'd' && (!cur || cur->mode != t->mode);
    if (t->type == 'f') {
        const struct cp_ent *idx = cur ? cp_tree_find(&c->index, t->path) : NULL;

        if (cur && cur->type == 'f' && idx && idx->blob && strcmp(idx->blob, t->blob) == 0 &&
            same_stat(idx, cur)) {
            (*unchanged)++;
            t->size = cur->size;
            t->ino = cur->ino;
            t->mtime_ns = cur->mtime_ns;
            t->ctime_ns = cur->ctime_ns;
            if (cur->mode == t->mode)
                return 0;
            pfd = parent_of(c->ws_fd, t->path, &leaf);
            rc = pfd >= 0 ? fchmodat(pfd, leaf, t->mode, 0) : -1;
            if (rc == 0) {
                struct stat st;
                if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0)
                    from_stat(t, &st); /* chmod changed its ctime */
            }
            if (pfd >= 0)
                close(pfd);
            return rc;
        }
        (*written)++;
        return write_file(c, t, seq);
    }
    if (cur && cur->type == t->type &&
        (t->type == 'd' || (cur->target && t->target && strcmp(cur->target, t->target) == 0))) {
        (*unchanged)++;
        return 0;
    }
    (*written)++;
    pfd = parent_of(c->ws_fd, t->path, &leaf);
    if (pfd < 0)
        return -1;
    if (t->type == 'd')
        rc = mkdirat(pfd, leaf, 0700);
    else if (t->type == 'l')
        rc =
            (unlinkat(pfd, leaf, 0) == 0 || errno == ENOENT) ? symlinkat(t->target, pfd, leaf) : -1;
    close(pfd);
    return rc;
}

static int restore_locked(struct checkpoint *c, const char *id, cJSON **out, struct errinfo *err)
{
    struct cp_tree target = {0}, cur = {0};
    size_t written = 0, removed = 0, unchanged = 0;
    bool *mode_needed = NULL;
    int rc = -1;

    if (cp_load(c, id, &target, NULL, err) < 0)
        goto out;
    if (cp_walk(c->ws_fd, &cur, err) < 0)
        goto out;
    cp_tree_sort(&target);
    cp_tree_sort(&cur);
    cp_load_index(c);
    /* Removals first, children before their folders (descending order). */
    for (size_t i = cur.n; i-- > 0;) {
        const struct cp_ent *e = &cur.e[i], *t = cp_tree_find(&target, e->path);

        if (t && t->type == e->type)
            continue;
        if (remove_path(c->ws_fd, e) < 0) {
            errinfo_sys(err, "restore: cannot remove /%s", e->path);
            goto out;
        }
        removed++;
    }
    /* Then the checkpoint's entries, folders before what they hold (ascending order). */
    mode_needed = calloc(target.n + 1, sizeof(*mode_needed));
    if (!mode_needed) {
        errinfo_set(err, ERR_NOMEM, "restore: out of memory");
        goto out;
    }
    for (size_t i = 0; i < target.n; i++) {
        struct cp_ent *t = &target.e[i];
        const struct cp_ent *e = cp_tree_find(&cur, t->path);

        if (e && e->type != t->type)
            e = NULL; /* removed above */
        if (create_entry(c, t, e, i, &written, &unchanged, &mode_needed[i]) < 0) {
            errinfo_sys(err, "restore: cannot restore /%s", t->path);
            goto out;
        }
    }
    /* Folder modes last, deepest first, so a read-only folder is filled before it closes. */
    for (size_t i = target.n; i-- > 0;) {
        const struct cp_ent *t = &target.e[i];
        const char *leaf;
        int pfd;

        if (t->type != 'd' || !mode_needed[i])
            continue;
        pfd = parent_of(c->ws_fd, t->path, &leaf);
        if (pfd < 0 || fchmodat(pfd, leaf, t->mode, 0) < 0) {
            errinfo_sys(err, "restore: cannot set the mode of /%s", t->path);
            if (pfd >= 0)
                close(pfd);
            goto out;
        }
        close(pfd);
    }
    /* The new index: the checkpoint's entries with the stats their files have now. */
    cp_tree_free(&c->index);
    c->index = target;
    memset(&target, 0, sizeof(target));
    *out = cJSON_CreateObject();
    if (*out) {
        cJSON_AddStringToObject(*out, "id", id);
        cJSON_AddNumberToObject(*out, "written", (double)written);
        cJSON_AddNumberToObject(*out, "removed", (double)removed);
        cJSON_AddNumberToObject(*out, "unchanged", (double)unchanged);
    }
    rc = 0;
out:
    if (rc < 0)
        c->index_valid = false; /* partly restored: trust no stat */
    cp_tree_free(&target);
    cp_tree_free(&cur);
    free(mode_needed);
    return rc;
}

int checkpoint_restore(struct checkpoint *c, const char *id, cJSON **out, struct errinfo *err)
{
    int rc;

    *out = NULL;
    pthread_mutex_lock(&c->lock);
    rc = restore_locked(c, id, out, err);
    pthread_mutex_unlock(&c->lock);
    return rc;
}
