/* daemon/watch.c - resource watches (see watch.h).
 *
 * DESIGN
 * A table of watched URIs (at most WATCH_MAX, scanned linearly: an inotify event is matched
 * against the entries on its watch descriptor) under one mutex, and one thread that reads the
 * inotify descriptor and sends the coalesced notifications. A workspace file is watched through
 * its directory (a file the tools replace by rename gets a new inode, so a watch on the file
 * itself would go deaf after the first write). The directory is opened inside the workspace
 * root by the vfs (openat2 RESOLVE_IN_ROOT) and handed to inotify as /proc/self/fd/N, so that a
 * symlink in the workspace cannot make the daemon watch a host directory. inotify gives one
 * descriptor per directory inode however often it is added, so descriptors are shared: one is
 * removed when no entry uses it any more.
 *
 * When the file's directory is missing, the deepest existing ancestor is watched and `next`
 * names the component that must appear; its creation re-resolves the entry. When a watched
 * directory goes away (IN_IGNORED), every entry on it re-resolves.
 *
 * Coalescing: a change is published at once when the last one for that entry was published
 * WATCH_COALESCE_MS ago or more; otherwise the entry is marked pending and the thread publishes
 * it when the interval is over. */
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "clocks.h"
#include "events.h"
#include "log.h"
#include "resources.h"
#include "vfs.h"

#define DIR_MASK                                                                                   \
    (IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM |              \
     IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

enum entry_kind { ENTRY_FILE, ENTRY_CONSOLE, ENTRY_PROCESSES };

struct entry {
    char *uri; /* owned: as the subscribers spelled it */
    enum entry_kind kind;
    unsigned refs;
    /* ENTRY_FILE */
    char *path;         /* owned: the normalized workspace path */
    int wd;             /* the inotify descriptor watched, or -1 */
    size_t watched_len; /* the watched directory is path[0..watched_len) ("/" is length 1) */
    const char *next;   /* into path: the component that must appear next in the watched dir */
    size_t next_len;    /* its length */
    /* coalescing */
    bool pending;
    int64_t last_ms;
};

struct watch {
    struct events *ev;
    struct vfs *vfs;
    int ino;     /* the inotify descriptor */
    int wake[2]; /* a pipe: a pending change or stop wakes the thread */
    int listen;  /* the event feed listener (console entries), or -1 */
    atomic_uint console_refs;
    pthread_mutex_t mu; /* guards entries, count and stop */
    struct entry *entries[WATCH_MAX];
    size_t count;
    bool stop;
    bool list_pending; /* the resources list changed; not told yet */
    int64_t list_last_ms;
    pthread_t thread;
};

static void wake(struct watch *w)
{
    char c = 1;
    ssize_t n = write(w->wake[1], &c, 1);

    (void)n; /* a full pipe already wakes the thread */
}

/* ---- resolving a file's watch (w->mu held) ---- */

static bool wd_in_use(const struct watch *w, int wd, const struct entry *besides)
{
    for (size_t i = 0; i < w->count; i++)
        if (w->entries[i] != besides && w->entries[i]->wd == wd)
            return true;
    return false;
}

static void unwatch_dir(struct watch *w, struct entry *e)
{
    if (e->wd >= 0 && !wd_in_use(w, e->wd, e))
        inotify_rm_watch(w->ino, e->wd);
    e->wd = -1;
}

/* Watches the deepest existing directory on e's path, once (see resolve). */
static int resolve_once(struct watch *w, struct entry *e, struct errinfo *err)
{
    size_t len = strlen(e->path);
    char dir[VFS_PATH_MAX + 1];

    unwatch_dir(w, e);
    /* The file's own directory first, then each ancestor up to the root. */
    for (;;) {
        char proc[64];
        struct errinfo oerr = {0};
        int fd, wd;

        while (len > 1 && e->path[len - 1] != '/')
            len--;
        /* path[0..len) ends at a '/': the directory is that without it (the root keeps "/"). */
        memcpy(dir, e->path, len > 1 ? len - 1 : 1);
        dir[len > 1 ? len - 1 : 1] = '\0';
        fd = vfs_open_dir(w->vfs, dir, &oerr);
        if (fd >= 0) {
            snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
            wd = inotify_add_watch(w->ino, proc, DIR_MASK);
            close(fd);
            if (wd < 0) {
                errinfo_set(err, errno == ENOSPC ? ERR_TOO_LARGE : ERR_IO, "cannot watch %s: %s%s",
                            dir, strerror(errno),
                            errno == ENOSPC ? " (the host's fs.inotify.max_user_watches is "
                                              "reached; raise it with sysctl)"
                                            : "");
                return -1;
            }
            e->wd = wd;
            e->watched_len = len > 1 ? len - 1 : 1;
            e->next = e->path + len;
            e->next_len = strcspn(e->next, "/");
            return 0;
        }
        if (len <= 1) {
            errinfo_set(err, ERR_IO, "cannot watch the workspace root: %s", oerr.msg);
            return -1;
        }
        len--; /* step over the '/' to the parent */
    }
}

/* True when the directory e waits for (e->next, not the file itself) exists already. */
static bool next_dir_exists(struct watch *w, const struct entry *e)
{
    char dir[VFS_PATH_MAX + 1];
    size_t n = (size_t)(e->next - e->path) + e->next_len;
    struct errinfo oerr = {0};
    int fd;

    if (e->next[e->next_len] == '\0' || n > VFS_PATH_MAX)
        return false;
    memcpy(dir, e->path, n);
    dir[n] = '\0';
    fd = vfs_open_dir(w->vfs, dir, &oerr);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

/* Watches the deepest existing directory on e's path. Returns 0, or -1 with err when even the
 * workspace root cannot be watched (the inotify limit).
 *
 * The directory waited for may appear between the look that found it missing and the watch of
 * its parent (mkdir -p a/b/c runs while we look): its creation then came before the watch, and
 * no event will tell. So once the parent is watched, its next directory is looked for again;
 * one that is there now is moved into (any later creation has an event). */
static int resolve(struct watch *w, struct entry *e, struct errinfo *err)
{
    for (size_t depth = 0; depth <= VFS_PATH_MAX / 2; depth++) {
        if (resolve_once(w, e, err) < 0)
            return -1;
        if (!next_dir_exists(w, e))
            return 0;
    }
    return 0; /* a path that keeps appearing and vanishing: the watch stays where it is */
}

/* ---- publishing ---- */

/* A change of e: published now, or marked for the thread (w->mu held). */
static void changed(struct watch *w, struct entry *e, int64_t now)
{
    if (now - e->last_ms >= WATCH_COALESCE_MS) {
        e->last_ms = now;
        e->pending = false;
        events_publish_resource_updated(w->ev, e->uri);
    } else {
        e->pending = true;
    }
}

/* The resources list changed: told now, or marked for the thread (w->mu held). */
static void list_changed(struct watch *w, int64_t now)
{
    if (now - w->list_last_ms >= WATCH_COALESCE_MS) {
        w->list_last_ms = now;
        w->list_pending = false;
        events_publish_list_changed(w->ev, EVENTS_LIST_RESOURCES);
    } else {
        w->list_pending = true;
    }
}

/* Publishes what is due; returns the ms until the next pending entry is due, or -1. */
static int flush_pending(struct watch *w, int64_t now)
{
    int64_t next = -1;

    if (w->list_pending) {
        if (w->list_last_ms + WATCH_COALESCE_MS <= now)
            list_changed(w, now);
        else
            next = w->list_last_ms + WATCH_COALESCE_MS - now;
    }

    for (size_t i = 0; i < w->count; i++) {
        struct entry *e = w->entries[i];
        int64_t due = e->last_ms + WATCH_COALESCE_MS;

        if (!e->pending)
            continue;
        if (due <= now) {
            changed(w, e, now);
            continue;
        }
        if (next < 0 || due - now < next)
            next = due - now;
    }
    return (int)next;
}

static bool is_next(const struct entry *e, const struct inotify_event *ie)
{
    return ie->len && strlen(ie->name) == e->next_len &&
           memcmp(ie->name, e->next, e->next_len) == 0;
}

/* One inotify event (w->mu held). */
static void on_inotify(struct watch *w, const struct inotify_event *ie, int64_t now)
{
    for (size_t i = 0; i < w->count; i++) {
        struct entry *e = w->entries[i];
        bool at_file_dir;

        if (e->kind != ENTRY_FILE || e->wd != ie->wd)
            continue;
        at_file_dir = e->next[e->next_len] == '\0';
        if (ie->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
            /* The directory went away: the file with it. Watch what is left. */
            if (ie->mask & IN_IGNORED)
                e->wd = -1;
            resolve(w, e, NULL);
            changed(w, e, now);
            continue;
        }
        if (!is_next(e, ie))
            continue;
        if (at_file_dir) {
            changed(w, e, now);
        } else if (ie->mask & (IN_CREATE | IN_MOVED_TO)) {
            /* A directory on the way appeared: move the watch down; the file may be there
             * already (mkdir -p a/b && echo > a/b/c). */
            resolve(w, e, NULL);
            if (e->next[e->next_len] == '\0') {
                struct vfs_stat st;

                if (vfs_stat(w->vfs, e->path, &st, NULL) == 0)
                    changed(w, e, now);
            }
        }
    }
}

static void *watch_thread(void *arg)
{
    struct watch *w = arg;
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    int timeout = -1;

    for (;;) {
        struct pollfd pfd[2] = {{.fd = w->ino, .events = POLLIN},
                                {.fd = w->wake[0], .events = POLLIN}};
        int64_t now;

        if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
            break;
        if (pfd[1].revents & POLLIN) {
            char sink[64];

            while (read(w->wake[0], sink, sizeof(sink)) > 0)
                ;
        }
        pthread_mutex_lock(&w->mu);
        if (w->stop) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        now = clocks_mono_ms();
        if (pfd[0].revents & POLLIN) {
            ssize_t n;

            while ((n = read(w->ino, buf, sizeof(buf))) > 0)
                for (char *p = buf; p < buf + n;) {
                    const struct inotify_event *ie = (const struct inotify_event *)p;

                    if (ie->mask & IN_Q_OVERFLOW) {
                        /* Events were lost: every file may have changed. */
                        for (size_t i = 0; i < w->count; i++)
                            if (w->entries[i]->kind == ENTRY_FILE)
                                changed(w, w->entries[i], now);
                    } else {
                        on_inotify(w, ie, now);
                    }
                    p += sizeof(*ie) + ie->len;
                }
        }
        timeout = flush_pending(w, now);
        pthread_mutex_unlock(&w->mu);
    }
    return NULL;
}

/* The console's entries change runbox://console/logs. */
static void on_console(void *arg, const struct events_event *ev)
{
    struct watch *w = arg;

    if (ev->kind != EVENTS_CONSOLE || !atomic_load_explicit(&w->console_refs, memory_order_relaxed))
        return;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->count; i++)
        if (w->entries[i]->kind == ENTRY_CONSOLE) {
            int64_t now = clocks_mono_ms();
            bool was = w->entries[i]->pending;

            changed(w, w->entries[i], now);
            if (w->entries[i]->pending && !was)
                wake(w);
        }
    pthread_mutex_unlock(&w->mu);
}

/* ---- the table ---- */

static struct entry *find(const struct watch *w, const char *uri, size_t *at)
{
    for (size_t i = 0; i < w->count; i++)
        if (strcmp(w->entries[i]->uri, uri) == 0) {
            if (at)
                *at = i;
            return w->entries[i];
        }
    return NULL;
}

static void entry_free(struct entry *e)
{
    if (!e)
        return;
    free(e->uri);
    free(e->path);
    free(e);
}

int watch_add(struct watch *w, const char *uri, struct errinfo *err)
{
    char path[VFS_PATH_MAX + 1], norm[VFS_PATH_MAX + 1];
    enum entry_kind kind;
    struct entry *e;

    if (strcmp(uri, RESOURCES_URI_CONSOLE) == 0) {
        kind = ENTRY_CONSOLE;
    } else if (strcmp(uri, RESOURCES_URI_PROCESSES) == 0) {
        kind = ENTRY_PROCESSES;
    } else {
        kind = ENTRY_FILE;
        if (resources_uri_path(uri, path, sizeof(path), err) < 0 ||
            vfs_normalize(path, norm, sizeof(norm), err) < 0)
            return -1;
        if (strcmp(norm, "/") == 0) {
            errinfo_set(err, ERR_INVALID, "%s is the workspace root, not a file", uri);
            return -1;
        }
    }
    pthread_mutex_lock(&w->mu);
    e = find(w, uri, NULL);
    if (e) {
        e->refs++;
        pthread_mutex_unlock(&w->mu);
        return 0;
    }
    if (w->count >= WATCH_MAX) {
        pthread_mutex_unlock(&w->mu);
        errinfo_set(err, ERR_TOO_LARGE,
                    "%d resources are watched already, the most; unsubscribe from some first",
                    WATCH_MAX);
        return -1;
    }
    e = calloc(1, sizeof(*e));
    if (!e || !(e->uri = strdup(uri)) || (kind == ENTRY_FILE && !(e->path = strdup(norm)))) {
        pthread_mutex_unlock(&w->mu);
        entry_free(e);
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return -1;
    }
    e->kind = kind;
    e->refs = 1;
    e->wd = -1;
    e->last_ms = INT64_MIN / 2;
    if (kind == ENTRY_FILE && resolve(w, e, err) < 0) {
        pthread_mutex_unlock(&w->mu);
        entry_free(e);
        return -1;
    }
    w->entries[w->count++] = e;
    if (kind == ENTRY_CONSOLE)
        atomic_fetch_add(&w->console_refs, 1);
    pthread_mutex_unlock(&w->mu);
    log_debug("watch: %s is watched", uri);
    return 0;
}

void watch_remove(struct watch *w, const char *uri)
{
    size_t at;
    struct entry *e;

    pthread_mutex_lock(&w->mu);
    e = find(w, uri, &at);
    if (!e || --e->refs) {
        pthread_mutex_unlock(&w->mu);
        return;
    }
    unwatch_dir(w, e);
    w->entries[at] = w->entries[--w->count];
    if (e->kind == ENTRY_CONSOLE)
        atomic_fetch_sub(&w->console_refs, 1);
    pthread_mutex_unlock(&w->mu);
    log_debug("watch: %s is no longer watched", uri);
    entry_free(e);
}

void watch_resources_changed(struct watch *w)
{
    bool was;

    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    was = w->list_pending;
    list_changed(w, clocks_mono_ms());
    if (w->list_pending && !was)
        wake(w);
    pthread_mutex_unlock(&w->mu);
}

size_t watch_count(struct watch *w)
{
    size_t n;

    pthread_mutex_lock(&w->mu);
    n = w->count;
    pthread_mutex_unlock(&w->mu);
    return n;
}

/* ---- life ---- */

struct watch *watch_new(struct events *ev, struct vfs *v, struct errinfo *err)
{
    struct watch *w = calloc(1, sizeof(*w));

    if (!w) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return NULL;
    }
    w->ev = ev;
    w->vfs = v;
    w->listen = -1;
    w->wake[0] = w->wake[1] = -1;
    w->list_last_ms = INT64_MIN / 2;
    pthread_mutex_init(&w->mu, NULL);
    w->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->ino < 0 || pipe2(w->wake, O_NONBLOCK | O_CLOEXEC) < 0) {
        errinfo_set(err, ERR_IO, "resource watches: %s", strerror(errno));
        goto fail;
    }
    w->listen = events_listen(ev, EVENTS_CONSOLE, on_console, w, err);
    if (w->listen < 0)
        goto fail;
    if (pthread_create(&w->thread, NULL, watch_thread, w) != 0) {
        errinfo_set(err, ERR_IO, "resource watches: no thread");
        goto fail;
    }
    return w;
fail:
    events_unlisten(ev, w->listen);
    if (w->ino >= 0)
        close(w->ino);
    if (w->wake[0] >= 0) {
        close(w->wake[0]);
        close(w->wake[1]);
    }
    pthread_mutex_destroy(&w->mu);
    free(w);
    return NULL;
}

void watch_free(struct watch *w)
{
    if (!w)
        return;
    events_unlisten(w->ev, w->listen);
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_mutex_unlock(&w->mu);
    wake(w);
    pthread_join(w->thread, NULL);
    for (size_t i = 0; i < w->count; i++)
        entry_free(w->entries[i]);
    close(w->ino);
    close(w->wake[0]);
    close(w->wake[1]);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
