/* daemon/connwatch.c - notices clients that go away (see connwatch.h).
 *
 * DESIGN: a fixed table of entries, an epoll set and one thread. connwatch_add registers the
 * entry's socket in the epoll set itself (one epoll_ctl, no wake-up of the thread: a long call
 * is watched for the price of two system calls, which matters because every call of an
 * external MCP server's tool is one), with the entry's index and generation as the event's
 * data, one-shot. The thread waits in epoll_wait without the lock, then takes the lock and
 * runs the callback of every entry whose socket reported a close, if the entry is still the
 * one registered (same generation). connwatch_remove takes the socket out of the set under the
 * lock; because callbacks run under the lock, its return means the callback is done and will
 * not run: the caller may free what it points to.
 *
 * Only the peer's close is asked for (EPOLLRDHUP; EPOLLHUP and EPOLLERR always come), not
 * EPOLLIN: a client that sends its next request early (pipelining) is not a client that left.
 * A socket that is already in the set (two watches of one connection) is registered through a
 * duplicate of its descriptor, which epoll tells apart. */
#include "connwatch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"

#define WAKE_DATA UINT64_MAX /* the event of the stop eventfd */

struct entry {
    int fd;     /* the caller's */
    int own_fd; /* a duplicate registered instead (closed at remove), or -1 */
    void (*fn)(void *arg);
    void *arg;
    uint32_t gen;
    bool used, fired;
};

struct connwatch {
    pthread_mutex_t mu;
    pthread_t thread;
    int ep;      /* the epoll set */
    int wake_fd; /* in the set: written once, by connwatch_free */
    bool stop;
    struct entry e[CONNWATCH_MAX];
};

static uint64_t data_of(int idx, uint32_t gen)
{
    return (uint64_t)gen << 32 | (uint32_t)idx;
}

static void *watch_thread(void *arg)
{
    struct connwatch *w = arg;
    struct epoll_event ev[64];

    for (;;) {
        int n = epoll_wait(w->ep, ev, 64, -1);

        if (n < 0 && errno != EINTR)
            log_warn("connwatch: epoll_wait failed: %s", strerror(errno));
        pthread_mutex_lock(&w->mu);
        if (w->stop) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        for (int k = 0; k < n; k++) {
            uint64_t d = ev[k].data.u64;
            struct entry *e = d == WAKE_DATA ? NULL : &w->e[(uint32_t)d % CONNWATCH_MAX];

            if (!e || !(ev[k].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
                continue;
            if (!e->used || e->fired || e->gen != (uint32_t)(d >> 32))
                continue; /* removed meanwhile (its fd may even be another connection's now) */
            e->fired = true;
            e->fn(e->arg);
        }
        pthread_mutex_unlock(&w->mu);
    }
    return NULL;
}

struct connwatch *connwatch_new(struct errinfo *err)
{
    struct connwatch *w = calloc(1, sizeof(*w));
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = WAKE_DATA};

    if (!w) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the connection watcher");
        return NULL;
    }
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->ep < 0 || w->wake_fd < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, w->wake_fd, &ev) < 0) {
        errinfo_sys(err, "connwatch: epoll");
        goto fail;
    }
    pthread_mutex_init(&w->mu, NULL);
    if (pthread_create(&w->thread, NULL, watch_thread, w) != 0) {
        errinfo_set(err, ERR_INTERNAL, "cannot start the connection watcher's thread");
        pthread_mutex_destroy(&w->mu);
        goto fail;
    }
    return w;
fail:
    if (w->ep >= 0)
        close(w->ep);
    if (w->wake_fd >= 0)
        close(w->wake_fd);
    free(w);
    return NULL;
}

void connwatch_free(struct connwatch *w)
{
    uint64_t one = 1;

    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_mutex_unlock(&w->mu);
    (void)!write(w->wake_fd, &one, sizeof(one));
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    close(w->wake_fd);
    close(w->ep);
    free(w);
}

int connwatch_add(struct connwatch *w, int fd, void (*fn)(void *arg), void *arg,
                  struct errinfo *err)
{
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLONESHOT};
    bool full = true;
    int id = -1;

    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < CONNWATCH_MAX && full; i++) {
        struct entry *e = &w->e[i];
        int rc;

        if (e->used)
            continue;
        full = false;
        e->fd = fd;
        e->own_fd = -1;
        e->fn = fn;
        e->arg = arg;
        e->gen++;
        e->fired = false;
        ev.data.u64 = data_of(i, e->gen);
        rc = epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev);
        if (rc < 0 && errno == EEXIST) {
            e->own_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
            rc = e->own_fd < 0 ? -1 : epoll_ctl(w->ep, EPOLL_CTL_ADD, e->own_fd, &ev);
        }
        if (rc < 0) {
            errinfo_sys(err, "connwatch: cannot watch socket %d", fd);
            if (e->own_fd >= 0)
                close(e->own_fd);
            e->own_fd = -1;
            break;
        }
        e->used = true;
        id = i;
    }
    pthread_mutex_unlock(&w->mu);
    if (full)
        errinfo_set(err, ERR_TOO_LARGE, "already watching %d connections", CONNWATCH_MAX);
    return id;
}

void connwatch_remove(struct connwatch *w, int id)
{
    struct entry *e;

    if (id < 0 || id >= CONNWATCH_MAX)
        return;
    pthread_mutex_lock(&w->mu);
    e = &w->e[id];
    if (e->used) {
        /* Fired (one-shot) or not, it is still in the set until it is taken out. */
        (void)epoll_ctl(w->ep, EPOLL_CTL_DEL, e->own_fd >= 0 ? e->own_fd : e->fd, NULL);
        if (e->own_fd >= 0)
            close(e->own_fd);
        e->own_fd = -1;
    }
    e->used = false;
    pthread_mutex_unlock(&w->mu);
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

/* True when fd is the TCP connection from peer_addr:peer_port to local_port. */
static bool socket_is(int fd, const char *peer_addr, int peer_port, int local_port)
{
    struct sockaddr_storage ss = {0}; /* zeroed: clang-tidy cannot see getpeername fill it */
    socklen_t sl = sizeof(ss);

    if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0 || port_of(&ss) != peer_port ||
        !addr_is(&ss, peer_addr))
        return false;
    sl = sizeof(ss);
    return getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 && port_of(&ss) == local_port;
}

/* The socket the last lookup on this thread found, and the ports it was found by: a civetweb
 * worker serves one connection at a time, and a kept-alive one asks for it at every long call.
 * It is taken without a system call until connwatch_forget_socket() (civetweb's
 * connection_close, on this worker, before it closes the socket); the ports are compared in
 * case a close was not told. 12 bytes per thread; fd_plus1 0 is "none", so it is zeroed. */
static _Thread_local struct {
    int fd_plus1;
    int peer_port, local_port;
} last_found;

void connwatch_forget_socket(void)
{
    last_found.fd_plus1 = 0;
}

int connwatch_find_socket(const char *peer_addr, int peer_port, int local_port)
{
    DIR *d;
    struct dirent *de;
    int found = -1;

    if (last_found.fd_plus1 > 0 && last_found.peer_port == peer_port &&
        last_found.local_port == local_port)
        return last_found.fd_plus1 - 1;
    d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (found < 0 && (de = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(de->d_name, &end, 10);

        if (*end || end == de->d_name || fd == dirfd(d))
            continue;
        if (socket_is((int)fd, peer_addr, peer_port, local_port))
            found = (int)fd;
    }
    closedir(d);
    last_found.fd_plus1 = found + 1;
    last_found.peer_port = peer_port;
    last_found.local_port = local_port;
    return found;
}
