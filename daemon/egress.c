/* daemon/egress.c - the egress proxy (see egress.h for the design). */
#include "egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clocks.h"
#include "console.h"
#include "log.h"
#include "netio.h"
#include "registries.h"
#include "strfmt.h"

#define HEAD_TIMEOUT_MS    30000
#define CONNECT_TIMEOUT_MS 10000
#define DEFAULTS_WAIT_MS   20000
#define LOCAL_ADDRS_MAX    64
#define EGRESS_NOTE_RUNS   64 /* runs whose denials are remembered */

struct listener {
    uint64_t run;
    int fd;
};

struct conn {
    struct conn *next;
    struct egress *e;
    uint64_t run;
    int fd, up; /* the sandbox's side, the upstream (-1 until connected) */
};

struct note {
    struct note *next;
    uint64_t run;
    unsigned n;
    char text[EGRESS_NOTES_MAX][320];
    bool taken[EGRESS_NOTES_MAX];
};

struct egress {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* broadcast: defaults ready, a connection ended */
    struct netpolicy policy;
    bool defaults_ready;
    struct registries reg;
    bool want_defaults;
    bool discover_go; /* the discovery may start (egress_discover_now, a sandbox's need) */
    bool discovering; /* it has started (the deferral, if any, is over) */
    int defer_ms;
    char tools_path[512];
    struct console *console;
    struct listener *ls;
    size_t nls, capls;
    struct conn *conns;
    unsigned nconns;
    uint64_t served, denied;
    struct note *notes;
    struct sockaddr_storage local[LOCAL_ADDRS_MAX];
    size_t nlocal;
    int wake[2];
    bool stopping;
    pthread_t acceptor, discoverer;
    bool acceptor_started, discoverer_started;
};

/* ---- the request head (pure) ---- */

static int head_fail(char *why, size_t whysz, const char *msg)
{
    snprintf(why, whysz, "%s", msg);
    return -1;
}

/* "host:port", "[v6]:port" or (def_port != 0) "host" -> host, port. */
static int split_authority(const char *a, size_t n, uint16_t def_port, char *host, size_t hostsz,
                           uint16_t *port)
{
    const char *h = a, *colon = NULL;
    size_t hl;

    if (n && a[0] == '[') {
        const char *end = memchr(a, ']', n);
        if (!end)
            return -1;
        h = a + 1;
        hl = (size_t)(end - h);
        if ((size_t)(end - a) + 1 < n) {
            if (end[1] != ':')
                return -1;
            colon = end + 1;
        }
    } else {
        colon = memchr(a, ':', n);
        hl = colon ? (size_t)(colon - a) : n;
    }
    if (hl == 0 || hl >= hostsz)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (colon) {
        size_t pl = n - (size_t)(colon + 1 - a);
        unsigned long v = 0;

        if (pl == 0 || pl > 5)
            return -1;
        for (size_t i = 0; i < pl; i++) {
            if (colon[1 + i] < '0' || colon[1 + i] > '9')
                return -1;
            v = v * 10 + (unsigned long)(colon[1 + i] - '0');
        }
        if (v < 1 || v > 65535)
            return -1;
        *port = (uint16_t)v;
    } else if (def_port) {
        *port = def_port;
    } else {
        return -1;
    }
    for (size_t i = 0; i < hl; i++)
        if ((unsigned char)host[i] <= ' ' || host[i] == '/' || host[i] == '@')
            return -1;
    return 0;
}

int egress_parse_head(const char *head, size_t len, bool *connect, char *host, size_t hostsz,
                      uint16_t *port, size_t *target_off, size_t *target_len, char *why,
                      size_t whysz)
{
    const char *eol = memchr(head, '\n', len), *sp1, *sp2, *t;
    size_t line, tl;

    if (!eol)
        return head_fail(why, whysz, "no request line");
    line = (size_t)(eol - head);
    if (line && head[line - 1] == '\r')
        line--;
    sp1 = memchr(head, ' ', line);
    sp2 = sp1 ? memchr(sp1 + 1, ' ', line - (size_t)(sp1 + 1 - head)) : NULL;
    if (!sp1 || !sp2 || sp1 == head || sp2 == sp1 + 1 || (size_t)(head + line - sp2) != 9 ||
        memcmp(sp2 + 1, "HTTP/1.", 7) != 0)
        return head_fail(why, whysz,
                         "not an HTTP request line (\"CONNECT host:port HTTP/1.1\" or \"GET "
                         "http://host/path HTTP/1.1\")");
    for (const char *p = head; p < sp1; p++)
        if (*p < 'A' || *p > 'Z')
            return head_fail(why, whysz, "the method must be upper-case letters");
    t = sp1 + 1;
    tl = (size_t)(sp2 - t);
    *target_off = (size_t)(t - head);
    *target_len = tl;
    *connect = (size_t)(sp1 - head) == 7 && memcmp(head, "CONNECT", 7) == 0;
    if (*connect) {
        if (split_authority(t, tl, 0, host, hostsz, port) < 0)
            return head_fail(why, whysz, "CONNECT needs host:port");
        return 0;
    }
    if (tl >= 8 && strncasecmp(t, "https://", 8) == 0)
        return head_fail(why, whysz, "https:// goes through CONNECT, not a plain request");
    if (tl < 7 || strncasecmp(t, "http://", 7) != 0)
        return head_fail(why, whysz,
                         "this is a proxy: the request target must be an absolute http:// URL "
                         "(or use CONNECT)");
    {
        const char *a = t + 7;
        size_t al = 0;

        while (7 + al < tl && a[al] != '/' && a[al] != '?' && a[al] != '#')
            al++;
        if (split_authority(a, al, 80, host, hostsz, port) < 0)
            return head_fail(why, whysz, "the URL has no valid host[:port]");
        /* The origin-form target is what follows the authority ("/" when nothing does). */
        *target_off = (size_t)(a + al - head);
        *target_len = tl - 7 - al;
    }
    return 0;
}

/* ---- helpers ---- */

/* Answers the sandbox with an error status and closes nothing (the caller does). */
static void answer(int fd, int status, const char *reason, const char *msg)
{
    char *r = strfmt_alloc("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                           "X-Runbox-Denied: %s\r\nContent-Length: %zu\r\nConnection: close\r\n"
                           "\r\n%s\n",
                           status, reason, msg, strlen(msg) + 1, msg);

    if (r)
        (void)netio_write_all(fd, r, strlen(r));
    free(r);
}

static void add_note(struct egress *e, uint64_t run, const char *text)
{
    struct note *n;

    for (n = e->notes; n && n->run != run; n = n->next)
        ;
    if (!n) {
        unsigned count = 0;

        /* Runs nobody asks about (background ones) are forgotten, oldest first. */
        for (struct note **pp = &e->notes; *pp; pp = &(*pp)->next)
            if (++count >= EGRESS_NOTE_RUNS) {
                struct note *old = *pp;
                *pp = NULL;
                while (old) {
                    struct note *next = old->next;
                    free(old);
                    old = next;
                }
                break;
            }
        n = calloc(1, sizeof(*n));
        if (!n)
            return;
        n->run = run;
        n->next = e->notes;
        e->notes = n;
    }
    for (unsigned i = 0; i < n->n; i++)
        if (strcmp(n->text[i], text) == 0) {
            n->taken[i] = false;
            return;
        }
    if (n->n < EGRESS_NOTES_MAX)
        snprintf(n->text[n->n++], sizeof(n->text[0]), "%s", text);
}

/* A denial: the answer to the sandbox, the console entry with the run's pid, and the note for
 * the run's result. */
static void deny(struct conn *c, int status, const char *what, const char *why, const char *fix)
{
    struct egress *e = c->e;
    char msg[700], note[320];

    snprintf(msg, sizeof(msg), "runbox network policy: %s denied: %s%s%s", what, why,
             fix[0] ? "; " : "", fix);
    snprintf(note, sizeof(note), "[network: %s denied: %s%s%s]", what, why, fix[0] ? "; " : "",
             fix);
    /* Noted before the answer goes out: the command may end the moment it reads it, and its
     * result takes the notes then. */
    pthread_mutex_lock(&e->lock);
    e->denied++;
    add_note(e, c->run, note);
    pthread_mutex_unlock(&e->lock);
    if (e->console)
        console_appendf(e->console, CONSOLE_WARN, CONSOLE_SRC_EXEC, c->run, "process %llu: %s",
                        (unsigned long long)c->run, msg);
    answer(c->fd, status, status == 403 ? "Forbidden by runbox network policy" : "Bad Gateway",
           msg);
    log_info("egress: run %llu: %s", (unsigned long long)c->run, msg);
}

static bool same_addr(const struct sockaddr *a, const struct sockaddr_storage *b)
{
    if (a->sa_family != b->ss_family)
        return false;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                  &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
}

static void load_local_addrs(struct egress *e)
{
    struct ifaddrs *ifs = NULL;

    if (getifaddrs(&ifs) < 0)
        return;
    for (struct ifaddrs *i = ifs; i && e->nlocal < LOCAL_ADDRS_MAX; i = i->ifa_next)
        if (i->ifa_addr &&
            (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6))
            memcpy(&e->local[e->nlocal++], i->ifa_addr,
                   i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                                     : sizeof(struct sockaddr_in6));
    freeifaddrs(ifs);
}

/* Connects to addr within CONNECT_TIMEOUT_MS; the socket (blocking again), or -1 with errno. */
static int connect_to(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct pollfd pf;
    int soerr = 0;
    socklen_t sl = sizeof(soerr);

    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)
        goto fail;
    pf = (struct pollfd){.fd = fd, .events = POLLOUT};
    if (poll(&pf, 1, CONNECT_TIMEOUT_MS) <= 0) {
        errno = ETIMEDOUT;
        goto fail;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
        errno = soerr ? soerr : errno;
        goto fail;
    }
    fcntl(fd, F_SETFL, 0);
    return fd;
fail : {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}
}

/* The rules' texts for a message: "a, b, c" (cut to fit). */
static void rules_text(const struct netpolicy *p, char *out, size_t outsz)
{
    size_t n = 0;

    out[0] = '\0';
    for (size_t i = 0; i < p->n && n + 1 < outsz; i++) {
        int w = snprintf(out + n, outsz - n, "%s%s", i ? ", " : "", p->rules[i].text);
        if (w < 0 || (size_t)w >= outsz - n) {
            snprintf(out + (n > outsz - 5 ? outsz - 5 : n), 5, "...");
            return;
        }
        n += (size_t)w;
    }
    if (!p->n)
        snprintf(out, outsz, "none");
}

/* ---- one connection ---- */

/* Someone waits for the default rules: a discovery that was deferred starts now (e->lock). */
static void need_defaults(struct egress *e)
{
    if (!e->discover_go) {
        e->discover_go = true;
        pthread_cond_broadcast(&e->cond);
    }
}

/* Waits (bounded) until the default rules are known, then checks host:port. */
static const struct netpolicy_rule *match(struct egress *e, const char *host, uint16_t port,
                                          struct netpolicy_rule *copy, char *rules, size_t rulessz)
{
    const struct netpolicy_rule *r;
    struct timespec ts = clocks_deadline(DEFAULTS_WAIT_MS);

    pthread_mutex_lock(&e->lock);
    need_defaults(e);
    while (!e->defaults_ready && !e->stopping)
        if (pthread_cond_timedwait(&e->cond, &e->lock, &ts) == ETIMEDOUT)
            break;
    r = netpolicy_match(&e->policy, host, port);
    if (r)
        *copy = *r;
    rules_text(&e->policy, rules, rulessz);
    pthread_mutex_unlock(&e->lock);
    return r ? copy : NULL;
}

/* Picks the first resolved address the rule may reach; NULL with *refused set to the class of
 * the first refused one. */
static const struct addrinfo *pick(struct egress *e, const struct addrinfo *res, bool exact,
                                   enum netpolicy_addr *refused, char *shown, size_t shownsz)
{
    *refused = NETPOLICY_ADDR_PUBLIC;
    shown[0] = '\0';
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        enum netpolicy_addr c = netpolicy_classify(ai->ai_addr);
        bool own = false;

        for (size_t i = 0; i < e->nlocal && !own; i++)
            own = same_addr(ai->ai_addr, &e->local[i]);
        own = own && c == NETPOLICY_ADDR_PUBLIC;
        if (own)
            c = NETPOLICY_ADDR_PRIVATE; /* the host's own public address is the host */
        if (c == NETPOLICY_ADDR_PUBLIC || exact)
            return ai;
        if (!shown[0]) {
            *refused = c;
            getnameinfo(ai->ai_addr, ai->ai_addrlen, shown, (socklen_t)shownsz, NULL, 0,
                        NI_NUMERICHOST);
            if (own)
                snprintf(shown + strlen(shown), shownsz - strlen(shown), ", this host's own");
        }
    }
    return NULL;
}

/* Resolves host for a connection to port. "localhost" and names under ".localhost" are the
 * loopback addresses without asking any resolver (RFC 6761 6.3): a host without an /etc/hosts
 * entry for them (a bare debootstrap root has no /etc/hosts at all) would otherwise fail them. */
static int resolve(const char *host, const char *portstr, struct addrinfo **res)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    size_t n = strlen(host);
    bool loopback = strcasecmp(host, "localhost") == 0 ||
                    (n > 10 && strcasecmp(host + n - 10, ".localhost") == 0);

    /* With no node and no AI_PASSIVE, getaddrinfo gives the loopback addresses. */
    return getaddrinfo(loopback ? NULL : host, portstr, &hints, res);
}

static void serve(struct conn *c)
{
    struct egress *e = c->e;
    char *buf = malloc(EGRESS_HEAD_MAX + 1), host[NETPOLICY_HOST_MAX + 1], what[320];
    char why[700], fix[400], rules[300], shown[120], portstr[8];
    const char *rwhy = NULL;
    struct netpolicy_rule copy;
    const struct netpolicy_rule *rule;
    struct addrinfo *res = NULL;
    const struct addrinfo *ai;
    enum netpolicy_addr refused;
    size_t got = 0, toff = 0, tlen = 0;
    ssize_t hl;
    uint16_t port = 0;
    bool is_connect = false;
    int gai, up, cerr = 0;

    if (!buf)
        return;
    hl = netio_read_head(c->fd, buf, EGRESS_HEAD_MAX + 1, HEAD_TIMEOUT_MS, &got, &rwhy);
    if (hl < 0) {
        if (rwhy)
            answer(c->fd, 400, "Bad Request", rwhy);
        goto out;
    }
    if (egress_parse_head(buf, (size_t)hl, &is_connect, host, sizeof(host), &port, &toff, &tlen,
                          why, sizeof(why)) < 0) {
        char msg[760];
        snprintf(msg, sizeof(msg), "runbox egress proxy: %s", why);
        answer(c->fd, 400, "Bad Request", msg);
        goto out;
    }
    snprintf(what, sizeof(what), "%s %s%s%s:%u", is_connect ? "CONNECT" : "HTTP",
             strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", (unsigned)port);
    if (e->policy.mode == NETPOLICY_NONE) {
        deny(c, 403, what, "runboxd runs with --network none",
             "start runboxd without it (the default allows the package registries) to allow "
             "listed hosts");
        goto out;
    }
    rule = match(e, host, port, &copy, rules, sizeof(rules));
    if (!rule) {
        bool ip = netpolicy_is_ip(host);
        snprintf(why, sizeof(why), "%s%s%s is not on the network allow list (%s)",
                 ip ? "the IP address " : "", host,
                 port == 80 || port == 443 ? "" : " with this port", rules);
        snprintf(fix, sizeof(fix),
                 "allow it with --allow-domain %s%s%s%s%.0u or \"network\": {\"allow\": "
                 "[\"...\"]} in runboxd's config.json",
                 strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
                 port == 80 || port == 443 ? "" : ":", port == 80 || port == 443 ? 0u : port);
        deny(c, 403, what, why, fix);
        goto out;
    }
    snprintf(portstr, sizeof(portstr), "%u", (unsigned)port);
    gai = resolve(host, portstr, &res);
    if (gai != 0) {
        snprintf(why, sizeof(why), "cannot resolve %s: %s", host, gai_strerror(gai));
        deny(c, 502, what, why, "");
        goto out;
    }
    /* Exact rules (flags, config, a registry named by npm or pip) may name local addresses;
     * wildcards never reach them. */
    ai = pick(e, res, !copy.wildcard, &refused, shown, sizeof(shown));
    if (!ai) {
        snprintf(why, sizeof(why), "%s resolves to %s (%s), which the sandbox may not reach", host,
                 shown, netpolicy_addr_name(refused));
        snprintf(fix, sizeof(fix), "name it exactly to allow it: --allow-domain %s:%u", host,
                 (unsigned)port);
        deny(c, 403, what, why, fix);
        goto out;
    }
    /* Each address the rule allows, in the resolver's order, until one answers: a name with an
     * IPv6 address on a host without an IPv6 route, or a server listening on 127.0.0.1 only
     * while localhost is ::1 first. */
    for (up = -1; ai && up < 0;) {
        up = connect_to(ai);
        if (up < 0)
            cerr = errno;
        ai = ai->ai_next ? pick(e, ai->ai_next, !copy.wildcard, &refused, shown, sizeof(shown))
                         : NULL;
    }
    if (up < 0) {
        snprintf(why, sizeof(why), "cannot connect to %s:%u: %s", host, (unsigned)port,
                 strerror(cerr));
        deny(c, 502, what, why, "");
        goto out;
    }
    pthread_mutex_lock(&e->lock);
    c->up = up;
    e->served++;
    pthread_mutex_unlock(&e->lock);
    if (is_connect) {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        if (netio_write_all(c->fd, ok, sizeof(ok) - 1) < 0 ||
            netio_write_all(up, buf + hl, got - (size_t)hl) < 0)
            goto out;
    } else {
        /* Origin-form request line, the headers minus Proxy-*, and one request per
         * connection (Connection: close), so the next request is checked on its own. */
        char *line_end = strstr(buf, "\r\n");
        size_t mlen = (size_t)(strchr(buf, ' ') - buf);
        char *hdr = line_end + 2, *stop = buf + hl - 2;
        bool slash = tlen && buf[toff] == '/';
        char *out = strfmt_alloc("%.*s %s%.*s %.8s\r\n", (int)mlen, buf, slash ? "" : "/",
                                 (int)tlen, buf + toff, line_end - 8);

        if (!out || netio_write_all(up, out, strlen(out)) < 0) {
            free(out);
            goto out;
        }
        free(out);
        while (hdr < stop) {
            char *nl = strstr(hdr, "\r\n");
            size_t n = (size_t)(nl - hdr) + 2;

            if (strncasecmp(hdr, "Proxy-", 6) != 0 && strncasecmp(hdr, "Connection:", 11) != 0 &&
                netio_write_all(up, hdr, n) < 0)
                goto out;
            hdr = nl + 2;
        }
        if (netio_write_all(up, "Connection: close\r\n\r\n", 21) < 0 ||
            netio_write_all(up, buf + hl, got - (size_t)hl) < 0)
            goto out;
    }
    free(buf);
    buf = NULL;
    netio_relay(c->fd, up);
out:
    if (res)
        freeaddrinfo(res);
    free(buf);
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    struct egress *e = c->e;

    serve(c);
    pthread_mutex_lock(&e->lock);
    for (struct conn **pp = &e->conns; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    e->nconns--;
    close(c->fd);
    if (c->up >= 0)
        close(c->up);
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
    free(c);
    return NULL;
}

/* ---- accepting ---- */

static void start_conn(struct egress *e, uint64_t run, int fd)
{
    struct conn *c = calloc(1, sizeof(*c));
    pthread_attr_t at;
    pthread_t t;
    bool ok = false;

    pthread_mutex_lock(&e->lock);
    if (c && e->nconns < EGRESS_CONN_MAX && !e->stopping) {
        *c = (struct conn){.next = e->conns, .e = e, .run = run, .fd = fd, .up = -1};
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 256 << 10);
        ok = pthread_create(&t, &at, conn_main, c) == 0;
        pthread_attr_destroy(&at);
        if (ok) {
            e->conns = c;
            e->nconns++;
        }
    }
    pthread_mutex_unlock(&e->lock);
    if (!ok) {
        answer(fd, 503, "Service Unavailable",
               "runbox egress proxy: too many connections at once (256); try again");
        close(fd);
        free(c);
    }
}

static void *accept_main(void *arg)
{
    struct egress *e = arg;
    struct pollfd *pf = NULL;
    uint64_t *runs = NULL;
    size_t cap = 0;

    for (;;) {
        size_t n;

        pthread_mutex_lock(&e->lock);
        if (e->stopping) {
            pthread_mutex_unlock(&e->lock);
            break;
        }
        if (cap < e->nls + 1) {
            cap = e->nls + 16;
            free(pf);
            free(runs);
            pf = calloc(cap, sizeof(*pf));
            runs = calloc(cap, sizeof(*runs));
        }
        n = 0;
        if (pf && runs) {
            pf[n++] = (struct pollfd){.fd = e->wake[0], .events = POLLIN};
            for (size_t i = 0; i < e->nls; i++) {
                runs[n] = e->ls[i].run;
                pf[n++] = (struct pollfd){.fd = e->ls[i].fd, .events = POLLIN};
            }
        }
        pthread_mutex_unlock(&e->lock);
        if (!n || poll(pf, n, -1) < 0) {
            if (!n || errno != EINTR)
                break;
            continue;
        }
        if (pf[0].revents) {
            char drain[64];
            while (read(e->wake[0], drain, sizeof(drain)) > 0)
                ;
            continue; /* the set changed: rebuild it (the fds may be closed by now) */
        }
        for (size_t i = 1; i < n; i++) {
            if (!(pf[i].revents & POLLIN))
                continue;
            int fd = accept4(pf[i].fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0)
                start_conn(e, runs[i], fd);
        }
    }
    free(pf);
    free(runs);
    return NULL;
}

static void wake(struct egress *e)
{
    (void)!write(e->wake[1], "x", 1);
}

static void *discover_main(void *arg)
{
    struct egress *e = arg;
    struct registries *r = malloc(sizeof(*r));
    char tools_path[512];
    struct timespec until = clocks_deadline(e->defer_ms);
    bool stop;

    pthread_mutex_lock(&e->lock);
    while (!e->discover_go && !e->stopping)
        if (pthread_cond_timedwait(&e->cond, &e->lock, &until) == ETIMEDOUT)
            break;
    stop = e->stopping;
    e->discovering = true;
    snprintf(tools_path, sizeof(tools_path), "%s", e->tools_path);
    pthread_mutex_unlock(&e->lock);
    if (r && !stop)
        registries_discover(r, tools_path[0] ? tools_path : NULL);
    else if (r)
        memset(r, 0, sizeof(*r)); /* stopping before it began: no defaults */
    pthread_mutex_lock(&e->lock);
    if (r) {
        e->reg = *r;
        for (size_t i = 0; i < r->nnpm + r->npip; i++) {
            bool npm = i < r->nnpm;
            const char *text = npm ? r->npm[i] : r->pip[i - r->nnpm];
            struct netpolicy_rule rule;

            if (netpolicy_parse_rule(text, npm ? "npm config" : "pip config",
                                     npm ? NETPOLICY_FROM_NPM : NETPOLICY_FROM_PIP, &rule,
                                     NULL) == 0)
                (void)netpolicy_add(&e->policy, &rule, NULL);
        }
    }
    e->defaults_ready = true;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
    free(r);
    return NULL;
}

struct egress *egress_new(const struct egress_options *opt, struct errinfo *err)
{
    struct egress *e = calloc(1, sizeof(*e));

    if (!e) {
        errinfo_set(err, ERR_NOMEM, "egress: out of memory");
        return NULL;
    }
    e->wake[0] = e->wake[1] = -1;
    pthread_mutex_init(&e->lock, NULL);
    clocks_cond_init(&e->cond);
    e->policy = *opt->policy;
    e->console = opt->console;
    e->want_defaults = opt->defaults && opt->policy->mode == NETPOLICY_PROXY;
    e->defaults_ready = !e->want_defaults;
    e->defer_ms = opt->defer_ms > 0 ? opt->defer_ms : 0;
    e->discover_go = e->defer_ms == 0;
    if (opt->tools_path)
        snprintf(e->tools_path, sizeof(e->tools_path), "%s", opt->tools_path);
    load_local_addrs(e);
    if (pipe2(e->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        errinfo_sys(err, "egress: cannot create a pipe");
        goto fail;
    }
    if (pthread_create(&e->acceptor, NULL, accept_main, e) != 0) {
        errinfo_set(err, ERR_INTERNAL, "egress: cannot start the accept thread");
        goto fail;
    }
    e->acceptor_started = true;
    if (e->want_defaults) {
        if (pthread_create(&e->discoverer, NULL, discover_main, e) != 0)
            e->defaults_ready = true; /* no defaults then; the user's rules still hold */
        else
            e->discoverer_started = true;
    }
    return e;
fail:
    egress_free(e);
    return NULL;
}

void egress_discover_now(struct egress *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    need_defaults(e);
    pthread_mutex_unlock(&e->lock);
}

void egress_free(struct egress *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    e->stopping = true;
    for (struct conn *c = e->conns; c; c = c->next) {
        shutdown(c->fd, SHUT_RDWR);
        if (c->up >= 0)
            shutdown(c->up, SHUT_RDWR);
    }
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->lock);
    if (e->wake[1] >= 0)
        wake(e);
    if (e->acceptor_started)
        pthread_join(e->acceptor, NULL);
    if (e->discoverer_started)
        pthread_join(e->discoverer, NULL);
    pthread_mutex_lock(&e->lock);
    while (e->nconns)
        pthread_cond_wait(&e->cond, &e->lock);
    pthread_mutex_unlock(&e->lock);
    for (size_t i = 0; i < e->nls; i++)
        close(e->ls[i].fd);
    free(e->ls);
    while (e->notes) {
        struct note *n = e->notes;
        e->notes = n->next;
        free(n);
    }
    if (e->wake[0] >= 0)
        close(e->wake[0]);
    if (e->wake[1] >= 0)
        close(e->wake[1]);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

int egress_attach(struct egress *e, uint64_t run, int listen_fd, struct errinfo *err)
{
    int rc = -1;

    pthread_mutex_lock(&e->lock);
    if (e->nls == e->capls) {
        size_t cap = e->capls ? e->capls * 2 : 16;
        struct listener *ls = realloc(e->ls, cap * sizeof(*ls));
        if (ls) {
            e->ls = ls;
            e->capls = cap;
        }
    }
    if (e->nls < e->capls && !e->stopping) {
        fcntl(listen_fd, F_SETFL, O_NONBLOCK);
        e->ls[e->nls++] = (struct listener){.run = run, .fd = listen_fd};
        listen_fd = -1;
        rc = 0;
    }
    pthread_mutex_unlock(&e->lock);
    if (rc < 0) {
        errinfo_set(err, ERR_NOMEM, "egress: cannot serve another sandbox");
        close(listen_fd);
        return -1;
    }
    wake(e);
    return 0;
}

void egress_detach(struct egress *e, uint64_t run)
{
    int fd = -1;

    pthread_mutex_lock(&e->lock);
    for (size_t i = 0; i < e->nls; i++)
        if (e->ls[i].run == run) {
            fd = e->ls[i].fd;
            e->ls[i] = e->ls[--e->nls];
            break;
        }
    for (struct conn *c = e->conns; c; c = c->next)
        if (c->run == run) {
            shutdown(c->fd, SHUT_RDWR);
            if (c->up >= 0)
                shutdown(c->up, SHUT_RDWR);
        }
    /* The run's notes stay: a foreground run's result takes them after the run ended. */
    /* Closed under the lock: the accept thread copies the set under it, and wakes below to
     * rebuild before it could poll a reused fd number (poll on a closed fd only reports
     * POLLNVAL, which it ignores). */
    if (fd >= 0)
        close(fd);
    pthread_mutex_unlock(&e->lock);
    wake(e);
}

size_t egress_sandbox_env(struct egress *e, struct exec_env *out, size_t max)
{
    struct timespec ts = clocks_deadline(DEFAULTS_WAIT_MS);
    size_t n = 0;

    pthread_mutex_lock(&e->lock);
    need_defaults(e);
    while (!e->defaults_ready && !e->stopping)
        if (pthread_cond_timedwait(&e->cond, &e->lock, &ts) == ETIMEDOUT)
            break;
    /* e->reg is written once, before defaults_ready, and never again. */
    if (e->defaults_ready && e->want_defaults) {
        if (e->reg.npm_url[0] && n < max)
            out[n++] = (struct exec_env){"npm_config_registry", e->reg.npm_url};
        if (e->reg.pip_index[0] && n < max)
            out[n++] = (struct exec_env){"PIP_INDEX_URL", e->reg.pip_index};
        if (e->reg.pip_extra[0] && n < max)
            out[n++] = (struct exec_env){"PIP_EXTRA_INDEX_URL", e->reg.pip_extra};
    }
    pthread_mutex_unlock(&e->lock);
    return n;
}

char *egress_take_notes(struct egress *e, uint64_t run)
{
    char *out = NULL;
    size_t len = 0;

    pthread_mutex_lock(&e->lock);
    for (struct note *n = e->notes; n; n = n->next) {
        if (n->run != run)
            continue;
        for (unsigned i = 0; i < n->n; i++) {
            size_t l = strlen(n->text[i]);
            char *grown;

            if (n->taken[i] || !(grown = realloc(out, len + l + 2)))
                continue;
            out = grown;
            memcpy(out + len, n->text[i], l);
            out[len + l] = '\n';
            len += l + 1;
            out[len] = '\0';
            n->taken[i] = true;
        }
    }
    pthread_mutex_unlock(&e->lock);
    return out;
}

cJSON *egress_json(struct egress *e)
{
    cJSON *j = cJSON_CreateObject(), *allow = NULL, *d = NULL;
    bool ok = j != NULL;

    pthread_mutex_lock(&e->lock);
    ok = ok && cJSON_AddStringToObject(j, "mode", netpolicy_mode_name(e->policy.mode));
    ok = ok && (e->policy.mode == NETPOLICY_PROXY
                    ? cJSON_AddStringToObject(j, "proxy", "http://127.0.0.1:3128") != NULL
                    : cJSON_AddNullToObject(j, "proxy") != NULL);
    ok = ok && (allow = cJSON_AddArrayToObject(j, "allow")) != NULL;
    for (size_t i = 0; ok && i < e->policy.n; i++) {
        cJSON *r = cJSON_CreateObject();
        ok = r && cJSON_AddStringToObject(r, "rule", e->policy.rules[i].text) &&
             cJSON_AddStringToObject(r, "from", netpolicy_origin_name(e->policy.rules[i].origin));
        if (!ok || !cJSON_AddItemToArray(allow, r)) {
            cJSON_Delete(r);
            ok = false;
        }
    }
    ok = ok && (d = cJSON_AddObjectToObject(j, "defaults")) != NULL &&
         cJSON_AddStringToObject(d, "state",
                                 !e->want_defaults   ? "off"
                                 : e->defaults_ready ? "ready"
                                 : e->discovering    ? "resolving"
                                                     : "waiting") &&
         (e->reg.npm_note[0] ? cJSON_AddStringToObject(d, "npm", e->reg.npm_note) != NULL
                             : cJSON_AddNullToObject(d, "npm") != NULL) &&
         (e->reg.pip_note[0] ? cJSON_AddStringToObject(d, "pip", e->reg.pip_note) != NULL
                             : cJSON_AddNullToObject(d, "pip") != NULL) &&
         cJSON_AddNumberToObject(j, "connections", e->nconns) &&
         cJSON_AddNumberToObject(j, "served", (double)e->served) &&
         cJSON_AddNumberToObject(j, "denied", (double)e->denied);
    pthread_mutex_unlock(&e->lock);
    if (ok)
        return j;
    cJSON_Delete(j);
    return NULL;
}
