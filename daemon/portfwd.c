/* daemon/portfwd.c - port forwards into the sandboxes (see portfwd.h for the design). */
#include "portfwd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api.h"
#include "log.h"
#include "netio.h"
#include "strfmt.h"

#define HEAD_TIMEOUT_MS    30000
#define CONNECT_TIMEOUT_MS 5000

struct fwd {
    uint16_t port, host_port;
    int fd; /* the host listener */
};

struct att { /* a running sandbox */
    struct att *next;
    uint64_t run;
    int agent;                  /* -1: the host's network */
    pthread_mutex_t agent_lock; /* one request at a time on the agent socket */
    unsigned refs;              /* connections using agent; freed at 0 once detached */
    bool detached;
    struct fwd fwd[PORTFWD_PER_RUN];
    size_t nfwd;
};

struct conn {
    struct conn *next;
    struct portfwd *pf;
    struct att *att;
    uint16_t port, host_port;
    int fd, up;
};

struct portfwd {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct att *atts;
    struct conn *conns;
    unsigned nconns;
    int wake[2];
    bool stopping;
    pthread_t acceptor;
    bool started;
};

static void wake(struct portfwd *pf)
{
    (void)!write(pf->wake[1], "x", 1);
}

static void att_unref(struct att *a) /* with pf->lock held */
{
    if (--a->refs || !a->detached)
        return;
    if (a->agent >= 0)
        close(a->agent);
    pthread_mutex_destroy(&a->agent_lock);
    free(a);
}

/* ---- connecting into the sandbox ---- */

/* A fresh TCP socket of the sandbox's network namespace, from its agent; -1 with errno. */
static int agent_socket(struct att *a)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    int32_t word = 0;
    struct iovec iov = {.iov_base = &word, .iov_len = sizeof(word)};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    struct cmsghdr *c;
    int fd = -1;
    ssize_t n;

    pthread_mutex_lock(&a->agent_lock);
    if (send(a->agent, "4", 1, MSG_NOSIGNAL) != 1) {
        pthread_mutex_unlock(&a->agent_lock);
        return -1;
    }
    do
        n = recvmsg(a->agent, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    pthread_mutex_unlock(&a->agent_lock);
    if (n != (ssize_t)sizeof(word)) {
        errno = n == 0 ? ECONNRESET : errno;
        return -1;
    }
    c = CMSG_FIRSTHDR(&m);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
    if (fd < 0)
        errno = word ? word : EIO;
    return fd;
}

/* Connects to 127.0.0.1:port inside the sandbox; the socket, or -1 with errno (and *no_agent
 * when the sandbox's network agent could not make the socket: it is gone). */
static int connect_in(struct att *a, uint16_t port, bool *no_agent)
{
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = a->agent >= 0 ? agent_socket(a) : socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct pollfd p;
    int soerr = 0, e;
    socklen_t sl = sizeof(soerr);

    *no_agent = fd < 0 && a->agent >= 0;
    if (fd < 0)
        return -1;
    fcntl(fd, F_SETFL, O_NONBLOCK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS)
        goto fail;
    p = (struct pollfd){.fd = fd, .events = POLLOUT};
    if (poll(&p, 1, CONNECT_TIMEOUT_MS) <= 0) {
        errno = ETIMEDOUT;
        goto fail;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
        errno = soerr ? soerr : errno;
        goto fail;
    }
    fcntl(fd, F_SETFL, 0);
    return fd;
fail:
    e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* ---- one connection ---- */

static void answer(int fd, int status, const char *reason, const char *title, const char *text)
{
    char *body = strfmt_alloc("<!doctype html><html><head><meta charset=\"utf-8\"><title>%s</title>"
                              "</head><body><h1>%s</h1><p>%s</p><p><small>runbox port forward"
                              "</small></p></body></html>\n",
                              title, title, text);
    char *r = body ? strfmt_alloc("HTTP/1.1 %d %s\r\nContent-Type: text/html; charset=utf-8\r\n"
                                  "Content-Length: %zu\r\nCache-Control: no-store\r\n"
                                  "Connection: close\r\n\r\n%s",
                                  status, reason, strlen(body), body)
                   : NULL;

    if (r)
        (void)netio_write_all(fd, r, strlen(r));
    free(r);
    free(body);
}

/* The Host header's value in a request head (bounded copy into out), or false. */
static bool find_host(const char *head, char *out, size_t outsz)
{
    const char *p = strstr(head, "\r\n");
    bool found = false;

    while (p && p[2] != '\r') {
        const char *line = p + 2, *end = strstr(line, "\r\n");

        if (!end)
            break;
        if (strncasecmp(line, "Host:", 5) == 0) {
            const char *v = line + 5;
            size_t n;

            if (found)
                return false; /* two Host headers: refuse, as the daemon does */
            while (*v == ' ' || *v == '\t')
                v++;
            n = (size_t)(end - v);
            while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
                n--;
            if (n == 0 || n >= outsz)
                return false;
            memcpy(out, v, n);
            out[n] = '\0';
            found = true;
        }
        p = end;
    }
    return found;
}

static void serve(struct conn *c)
{
    char *buf = malloc(NETIO_HEAD_MAX + 1), host[300], text[600];
    const char *why = NULL;
    size_t got = 0;
    ssize_t hl;
    bool no_agent = false;
    int up;

    if (!buf)
        return;
    hl = netio_read_head(c->fd, buf, NETIO_HEAD_MAX + 1, HEAD_TIMEOUT_MS, &got, &why);
    if (hl < 0) {
        if (why)
            answer(c->fd, 400, "Bad Request", "Bad request", why);
        goto out;
    }
    if (!find_host(buf, host, sizeof(host)) || !api_host_ok(host, c->host_port, "127.0.0.1")) {
        snprintf(text, sizeof(text),
                 "This forward answers requests for 127.0.0.1:%u or localhost:%u only (the Host "
                 "header names another site, or is missing or repeated).",
                 (unsigned)c->host_port, (unsigned)c->host_port);
        answer(c->fd, 403, "Forbidden", "Host not allowed", text);
        goto out;
    }
    up = connect_in(c->att, c->port, &no_agent);
    if (up < 0 && no_agent) {
        snprintf(text, sizeof(text),
                 "The sandbox of process %llu can no longer make connections: its network agent "
                 "is gone (%s). Start the process again (exec with ports) to get a new forward.",
                 (unsigned long long)c->att->run, strerror(errno));
        answer(c->fd, 502, "Bad Gateway", "The sandbox's network is gone", text);
        goto out;
    }
    if (up < 0) {
        snprintf(text, sizeof(text),
                 "Process %llu is not listening on port %u in its sandbox yet (%s). Reload once "
                 "it listens; its output is in the console (console_logs with pid %llu).",
                 (unsigned long long)c->att->run, (unsigned)c->port, strerror(errno),
                 (unsigned long long)c->att->run);
        answer(c->fd, 502, "Bad Gateway", "Nothing is listening yet", text);
        goto out;
    }
    pthread_mutex_lock(&c->pf->lock);
    c->up = up;
    pthread_mutex_unlock(&c->pf->lock);
    if (netio_write_all(up, buf, got) < 0)
        goto out;
    free(buf);
    buf = NULL;
    netio_relay(c->fd, up);
out:
    free(buf);
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    struct portfwd *pf = c->pf;

    serve(c);
    pthread_mutex_lock(&pf->lock);
    for (struct conn **pp = &pf->conns; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    pf->nconns--;
    close(c->fd);
    if (c->up >= 0)
        close(c->up);
    att_unref(c->att);
    pthread_cond_broadcast(&pf->cond);
    pthread_mutex_unlock(&pf->lock);
    free(c);
    return NULL;
}

static void start_conn(struct portfwd *pf, uint64_t run, uint16_t host_port, int fd)
{
    struct conn *c = calloc(1, sizeof(*c));
    pthread_attr_t at;
    pthread_t t;
    bool ok = false;

    pthread_mutex_lock(&pf->lock);
    for (struct att *a = pf->atts; c && a && !ok; a = a->next)
        for (size_t i = 0; a->run == run && !a->detached && i < a->nfwd && !ok; i++) {
            if (a->fwd[i].host_port != host_port || pf->nconns >= PORTFWD_CONN_MAX)
                continue;
            *c = (struct conn){.next = pf->conns,
                               .pf = pf,
                               .att = a,
                               .port = a->fwd[i].port,
                               .host_port = host_port,
                               .fd = fd,
                               .up = -1};
            pthread_attr_init(&at);
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            pthread_attr_setstacksize(&at, 256 << 10);
            ok = pthread_create(&t, &at, conn_main, c) == 0;
            pthread_attr_destroy(&at);
            if (ok) {
                a->refs++;
                pf->conns = c;
                pf->nconns++;
            }
        }
    pthread_mutex_unlock(&pf->lock);
    if (!ok) {
        answer(fd, 503, "Service Unavailable", "Busy",
               "Too many connections through runbox's port forwards at once; try again.");
        close(fd);
        free(c);
    }
}

struct slot {
    uint64_t run;
    uint16_t host_port;
};

static void *accept_main(void *arg)
{
    struct portfwd *pf = arg;
    struct pollfd *fds = NULL;
    struct slot *slots = NULL;
    size_t cap = 0;

    for (;;) {
        size_t n = 0, want = 1;

        pthread_mutex_lock(&pf->lock);
        if (pf->stopping) {
            pthread_mutex_unlock(&pf->lock);
            break;
        }
        for (struct att *a = pf->atts; a; a = a->next)
            want += a->nfwd;
        if (want > cap) {
            cap = want + 16;
            free(fds);
            free(slots);
            fds = calloc(cap, sizeof(*fds));
            slots = calloc(cap, sizeof(*slots));
        }
        if (fds && slots) {
            fds[n++] = (struct pollfd){.fd = pf->wake[0], .events = POLLIN};
            for (struct att *a = pf->atts; a; a = a->next)
                for (size_t i = 0; !a->detached && i < a->nfwd; i++) {
                    slots[n] = (struct slot){a->run, a->fwd[i].host_port};
                    fds[n++] = (struct pollfd){.fd = a->fwd[i].fd, .events = POLLIN};
                }
        }
        pthread_mutex_unlock(&pf->lock);
        if (!n || poll(fds, n, -1) < 0) {
            if (!n || errno != EINTR)
                break;
            continue;
        }
        if (fds[0].revents) {
            char drain[64];
            while (read(pf->wake[0], drain, sizeof(drain)) > 0)
                ;
            continue; /* the set changed: rebuild it before touching its fds */
        }
        for (size_t i = 1; i < n; i++) {
            int fd;

            /* A listener that detach shut down reports a hang-up; its number may already name
             * another socket, so the set is rebuilt before any accept. */
            if (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL))
                break;
            if (!(fds[i].revents & POLLIN))
                continue;
            fd = accept4(fds[i].fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0)
                start_conn(pf, slots[i].run, slots[i].host_port, fd);
        }
    }
    free(fds);
    free(slots);
    return NULL;
}

/* ---- the API ---- */

struct portfwd *portfwd_new(struct errinfo *err)
{
    struct portfwd *pf = calloc(1, sizeof(*pf));

    if (!pf) {
        errinfo_set(err, ERR_NOMEM, "portfwd: out of memory");
        return NULL;
    }
    pthread_mutex_init(&pf->lock, NULL);
    pthread_cond_init(&pf->cond, NULL);
    pf->wake[0] = pf->wake[1] = -1;
    if (pipe2(pf->wake, O_CLOEXEC | O_NONBLOCK) < 0 ||
        pthread_create(&pf->acceptor, NULL, accept_main, pf) != 0) {
        errinfo_sys(err, "portfwd: cannot start");
        portfwd_free(pf);
        return NULL;
    }
    pf->started = true;
    return pf;
}

/* Stops a run's listeners and connections (pf->lock held). */
static void close_run(struct portfwd *pf, struct att *a)
{
    /* The accept thread may be in poll() on these listeners, and poll holds each socket open
     * until it returns: after close() alone the kernel would go on taking connections there and
     * reset them later. shutdown() takes a listener out of listening at once, so a client that
     * connects once detach has returned is refused. */
    for (size_t i = 0; i < a->nfwd; i++) {
        shutdown(a->fwd[i].fd, SHUT_RDWR);
        close(a->fwd[i].fd);
    }
    a->nfwd = 0;
    for (struct conn *c = pf->conns; c; c = c->next)
        if (c->att == a) {
            shutdown(c->fd, SHUT_RDWR);
            if (c->up >= 0)
                shutdown(c->up, SHUT_RDWR);
        }
}

void portfwd_free(struct portfwd *pf)
{
    if (!pf)
        return;
    pthread_mutex_lock(&pf->lock);
    pf->stopping = true;
    for (struct att *a = pf->atts; a; a = a->next)
        close_run(pf, a);
    pthread_mutex_unlock(&pf->lock);
    if (pf->started) {
        wake(pf);
        pthread_join(pf->acceptor, NULL);
    }
    pthread_mutex_lock(&pf->lock);
    while (pf->nconns)
        pthread_cond_wait(&pf->cond, &pf->lock);
    while (pf->atts) {
        struct att *a = pf->atts;
        pf->atts = a->next;
        a->detached = true;
        a->refs++;
        att_unref(a);
    }
    pthread_mutex_unlock(&pf->lock);
    if (pf->wake[0] >= 0)
        close(pf->wake[0]);
    if (pf->wake[1] >= 0)
        close(pf->wake[1]);
    pthread_cond_destroy(&pf->cond);
    pthread_mutex_destroy(&pf->lock);
    free(pf);
}

void portfwd_attach(struct portfwd *pf, uint64_t run, int agent_fd)
{
    struct att *a = calloc(1, sizeof(*a));

    if (!a) {
        if (agent_fd >= 0)
            close(agent_fd);
        return;
    }
    a->run = run;
    a->agent = agent_fd;
    pthread_mutex_init(&a->agent_lock, NULL);
    pthread_mutex_lock(&pf->lock);
    a->next = pf->atts;
    pf->atts = a;
    pthread_mutex_unlock(&pf->lock);
}

void portfwd_detach(struct portfwd *pf, uint64_t run)
{
    pthread_mutex_lock(&pf->lock);
    for (struct att **pp = &pf->atts; *pp; pp = &(*pp)->next) {
        struct att *a = *pp;

        if (a->run != run)
            continue;
        *pp = a->next;
        close_run(pf, a);
        a->detached = true;
        a->refs++; /* the list's reference, dropped now */
        att_unref(a);
        break;
    }
    pthread_mutex_unlock(&pf->lock);
    wake(pf);
}

static int listen_on(uint16_t port, uint16_t *bound, struct errinfo *err)
{
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;

    if (fd < 0) {
        errinfo_sys(err, "expose_port: cannot make a socket");
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 512) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        if (e == EADDRINUSE)
            errinfo_set(err, ERR_EXISTS,
                        "127.0.0.1:%u is already in use on this host; pick another host_port, or "
                        "leave it out for a free one",
                        (unsigned)port);
        else
            errinfo_sys(err, "expose_port: cannot listen on 127.0.0.1:%u", (unsigned)port);
        return -1;
    }
    *bound = ntohs(sa.sin_port);
    return fd;
}

int portfwd_expose(struct portfwd *pf, uint64_t run, uint16_t port, uint16_t host_port, char *url,
                   size_t urlsz, struct errinfo *err)
{
    struct att *a;
    uint16_t bound = 0;
    int fd = -1, rc = -1;

    pthread_mutex_lock(&pf->lock);
    for (a = pf->atts; a && a->run != run; a = a->next)
        ;
    if (!a) {
        errinfo_set(err, ERR_NOT_FOUND,
                    "process %llu is not running, so it has no port to expose (process_list "
                    "shows the running ones; start a server with exec background: true)",
                    (unsigned long long)run);
        goto out;
    }
    for (size_t i = 0; i < a->nfwd; i++)
        if (a->fwd[i].port == port) {
            errinfo_set(err, ERR_EXISTS,
                        "port %u of process %llu is already exposed at http://127.0.0.1:%u/",
                        (unsigned)port, (unsigned long long)run, (unsigned)a->fwd[i].host_port);
            goto out;
        }
    if (a->nfwd >= PORTFWD_PER_RUN) {
        errinfo_set(err, ERR_TOO_LARGE, "process %llu already has %d exposed ports (the most)",
                    (unsigned long long)run, PORTFWD_PER_RUN);
        goto out;
    }
    fd = listen_on(host_port, &bound, err);
    if (fd < 0)
        goto out;
    a->fwd[a->nfwd++] = (struct fwd){.port = port, .host_port = bound, .fd = fd};
    snprintf(url, urlsz, "http://127.0.0.1:%u/", (unsigned)bound);
    log_info("portfwd: process %llu port %u at %s", (unsigned long long)run, (unsigned)port, url);
    rc = 0;
out:
    pthread_mutex_unlock(&pf->lock);
    if (rc == 0)
        wake(pf);
    return rc;
}

cJSON *portfwd_urls_json(struct portfwd *pf, uint64_t run)
{
    cJSON *arr = cJSON_CreateArray();

    pthread_mutex_lock(&pf->lock);
    for (struct att *a = pf->atts; arr && a; a = a->next)
        for (size_t i = 0; a->run == run && i < a->nfwd; i++) {
            char url[64];
            cJSON *o = cJSON_CreateObject();

            snprintf(url, sizeof(url), "http://127.0.0.1:%u/", (unsigned)a->fwd[i].host_port);
            if (!o || !cJSON_AddNumberToObject(o, "port", a->fwd[i].port) ||
                !cJSON_AddStringToObject(o, "url", url) || !cJSON_AddItemToArray(arr, o))
                cJSON_Delete(o);
        }
    pthread_mutex_unlock(&pf->lock);
    return arr;
}
