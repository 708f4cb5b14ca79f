/* daemon/connwatch.c - notices clients that go away (see connwatch.h).
 *
 * DESIGN: a fixed table of entries and one thread. The thread copies the live entries' fds into
 * a pollfd array under the lock, polls them (plus an eventfd that add/remove write to, so the
 * set is rebuilt at once) without the lock, then takes the lock again and runs the callback of
 * every entry whose socket reported a close, if the entry is still the one it polled (same
 * generation). Because callbacks run under the lock, connwatch_remove() returning means the
 * callback is done and will not run: the caller may free what it points to.
 *
 * Only the peer's close is asked for (POLLRDHUP; POLLHUP and POLLERR always come), not POLLIN:
 * a client that sends its next request early (pipelining) is not a client that left, and
 * readable data would wake the thread again and again. */
#include "connwatch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"

struct entry {
    int fd;
    void (*fn)(void *arg);
    void *arg;
    uint32_t gen;
    bool used, fired;
};

struct connwatch {
    pthread_mutex_t mu;
    pthread_t thread;
    int wake_fd;
    bool stop;
    struct entry e[CONNWATCH_MAX];
    /* The watch thread's poll set, here rather than thread-local: every thread of the process
     * gets a copy of each _Thread_local object, and runboxd has 320 of them. */
    struct pollfd fds[CONNWATCH_MAX + 1];
    struct watched {
        int idx;
        uint32_t gen;
    } who[CONNWATCH_MAX];
};

static void wake(struct connwatch *w)
{
    uint64_t one = 1;

    (void)!write(w->wake_fd, &one, sizeof(one));
}

static void *watch_thread(void *arg)
{
    struct connwatch *w = arg;
    struct pollfd *fds = w->fds;
    struct watched *who = w->who;

    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        nfds_t n = 1;
        uint64_t drain;

        fds[0] = (struct pollfd){.fd = w->wake_fd, .events = POLLIN};
        for (int i = 0; i < CONNWATCH_MAX; i++) {
            if (!w->e[i].used || w->e[i].fired)
                continue;
            who[n - 1].idx = i;
            who[n - 1].gen = w->e[i].gen;
            fds[n++] = (struct pollfd){.fd = w->e[i].fd, .events = POLLRDHUP};
        }
        pthread_mutex_unlock(&w->mu);
        if (poll(fds, n, -1) < 0 && errno != EINTR)
            log_warn("connwatch: poll failed: %s", strerror(errno));
        if (fds[0].revents & POLLIN)
            (void)!read(w->wake_fd, &drain, sizeof(drain));
        pthread_mutex_lock(&w->mu);
        for (nfds_t k = 1; k < n; k++) {
            struct entry *e = &w->e[who[k - 1].idx];

            if (!(fds[k].revents & (POLLRDHUP | POLLHUP | POLLERR)))
                continue;
            if (!e->used || e->fired || e->gen != who[k - 1].gen)
                continue; /* removed (its fd may even be another connection's now) */
            e->fired = true;
            e->fn(e->arg);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

struct connwatch *connwatch_new(struct errinfo *err)
{
    struct connwatch *w = calloc(1, sizeof(*w));

    if (!w) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the connection watcher");
        return NULL;
    }
    w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->wake_fd < 0) {
        errinfo_sys(err, "connwatch: eventfd");
        free(w);
        return NULL;
    }
    pthread_mutex_init(&w->mu, NULL);
    if (pthread_create(&w->thread, NULL, watch_thread, w) != 0) {
        errinfo_set(err, ERR_INTERNAL, "cannot start the connection watcher's thread");
        pthread_mutex_destroy(&w->mu);
        close(w->wake_fd);
        free(w);
        return NULL;
    }
    return w;
}

void connwatch_free(struct connwatch *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_mutex_unlock(&w->mu);
    wake(w);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    close(w->wake_fd);
    free(w);
}

int connwatch_add(struct connwatch *w, int fd, void (*fn)(void *arg), void *arg,
                  struct errinfo *err)
{
    int id = -1;

    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < CONNWATCH_MAX && id < 0; i++) {
        struct entry *e = &w->e[i];

        if (e->used)
            continue;
        e->fd = fd;
        e->fn = fn;
        e->arg = arg;
        e->gen++;
        e->used = true;
        e->fired = false;
        id = i;
    }
    pthread_mutex_unlock(&w->mu);
    if (id < 0) {
        errinfo_set(err, ERR_TOO_LARGE, "already watching %d connections", CONNWATCH_MAX);
        return -1;
    }
    wake(w);
    return id;
}

void connwatch_remove(struct connwatch *w, int id)
{
    if (id < 0 || id >= CONNWATCH_MAX)
        return;
    pthread_mutex_lock(&w->mu);
    w->e[id].used = false;
    pthread_mutex_unlock(&w->mu);
    wake(w);
}

/* ---- finding a connection's socket ---- */

static int port_of(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)ss)->sin_port);
    if (ss->ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    return -1;
}

/* True when ss is the address text addr (IPv4, IPv6, or IPv4 mapped into IPv6). */
static bool addr_is(const struct sockaddr_storage *ss, const char *addr)
{
    struct in_addr a4;
    struct in6_addr a6;

    if (ss->ss_family == AF_INET)
        return inet_pton(AF_INET, addr, &a4) == 1 &&
               memcmp(&((const struct sockaddr_in *)ss)->sin_addr, &a4, sizeof(a4)) == 0;
    if (ss->ss_family != AF_INET6)
        return false;
    if (inet_pton(AF_INET6, addr, &a6) == 1)
        return memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr, &a6, sizeof(a6)) == 0;
    return IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)ss)->sin6_addr) &&
           inet_pton(AF_INET, addr, &a4) == 1 &&
           memcmp(((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr + 12, &a4, 4) == 0;
}

int connwatch_find_socket(const char *peer_addr, int peer_port, int local_port)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    int found = -1;

    if (!d)
        return -1;
    while (found < 0 && (de = readdir(d)) != NULL) {
        struct sockaddr_storage ss = {0}; /* zeroed: clang-tidy cannot see getpeername fill it */
        socklen_t sl = sizeof(ss);
        char *end;
        long fd = strtol(de->d_name, &end, 10);

        if (*end || end == de->d_name || fd == dirfd(d))
            continue;
        if (getpeername((int)fd, (struct sockaddr *)&ss, &sl) < 0 || port_of(&ss) != peer_port ||
            !addr_is(&ss, peer_addr))
            continue;
        sl = sizeof(ss);
        if (getsockname((int)fd, (struct sockaddr *)&ss, &sl) == 0 && port_of(&ss) == local_port)
            found = (int)fd;
    }
    closedir(d);
    return found;
}
