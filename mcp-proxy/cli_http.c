/* mcp-proxy/cli_http.c - the subcommands' blocking HTTP/1.1 client (see cli_http.h).
 *
 * One connection per request, closed by both sides at the end (Connection: close), so the end
 * of a body without a length is the end of the connection. Every wait is a poll() on the one
 * socket with what is left of the request's time. */
#include "cli_http.h"
#include "clocks.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK ((size_t)64 << 10)

/* ---- the target ---- */

int cli_target_parse(struct cli_target *t, const char *url, const char *token, struct errinfo *err)
{
    const char *h, *end, *colon = NULL, *rest;
    size_t hlen, ulen = strlen(url);
    char *pend = NULL;
    long port = 80;

    memset(t, 0, sizeof(*t));
    t->token = token && *token ? token : NULL;
    if (strncasecmp(url, "http://", 7) != 0) {
        errinfo_set(err, ERR_INVALID,
                    "DAEMON_URL=%.200s: runbox talks to runboxd over http:// only (e.g. "
                    "http://127.0.0.1:7766)",
                    url);
        return -1;
    }
    h = url + 7;
    if (*h == '[') {
        end = strchr(h, ']');
        if (!end)
            goto bad;
        hlen = (size_t)(end - h - 1);
        memcpy(t->host, h + 1, hlen < sizeof(t->host) ? hlen : 0);
        rest = end + 1;
    } else {
        end = h + strcspn(h, ":/?#");
        hlen = (size_t)(end - h);
        if (hlen >= sizeof(t->host))
            goto bad;
        memcpy(t->host, h, hlen);
        rest = end;
    }
    if (hlen == 0 || hlen >= sizeof(t->host))
        goto bad;
    t->host[hlen] = '\0';
    if (*rest == ':') {
        colon = rest;
        errno = 0;
        port = strtol(colon + 1, &pend, 10);
        if (errno || pend == colon + 1 || port < 1 || port > 65535)
            goto bad;
        rest = pend;
    }
    if (!(*rest == '\0' || (rest[0] == '/' && rest[1] == '\0')))
        goto bad;
    t->port = (int)port;
    if (ulen >= sizeof(t->base_url))
        goto bad;
    memcpy(t->base_url, url, ulen + 1);
    if (ulen > 0 && t->base_url[ulen - 1] == '/')
        t->base_url[ulen - 1] = '\0';
    snprintf(t->hostport, sizeof(t->hostport), "%s%s%s:%d", strchr(t->host, ':') ? "[" : "",
             t->host, strchr(t->host, ':') ? "]" : "", t->port);
    return 0;
bad:
    errinfo_set(err, ERR_INVALID,
                "DAEMON_URL=%.200s is not a URL runbox can use; write it as http://HOST:PORT "
                "(e.g. http://127.0.0.1:7766)",
                url);
    return -1;
}

/* ---- Server-Sent Events ---- */

void cli_sse_init(struct cli_sse *p, cli_sse_fn fn, void *ctx)
{
    memset(p, 0, sizeof(*p));
    p->fn = fn;
    p->ctx = ctx;
}

void cli_sse_cleanup(struct cli_sse *p)
{
    free(p->line);
    free(p->data);
    memset(p, 0, sizeof(*p));
}

static int grow(char **buf, size_t *cap, size_t need, struct errinfo *err)
{
    size_t ncap = *cap ? *cap : 256;
    char *nb;

    if (need <= *cap)
        return 0;
    if (need > CLI_SSE_FIELD_MAX + 2) {
        errinfo_set(err, ERR_TOO_LARGE, "an event of the stream is larger than %zu MiB",
                    CLI_SSE_FIELD_MAX >> 20);
        return -1;
    }
    while (ncap < need)
        ncap *= 2;
    nb = realloc(*buf, ncap);
    if (!nb) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return -1;
    }
    *buf = nb;
    *cap = ncap;
    return 0;
}

static void copy_field(char *dst, size_t n, const char *v, size_t len)
{
    if (len >= n)
        len = n - 1;
    memcpy(dst, v, len);
    dst[len] = '\0';
}

/* Dispatches the event read so far (at a blank line). */
static int sse_dispatch(struct cli_sse *p, struct errinfo *err)
{
    struct cli_sse_event ev;
    int rc;

    if (!p->has_data) {
        p->event[0] = '\0';
        return 0;
    }
    if (grow(&p->data, &p->data_cap, p->data_len + 1, err) < 0)
        return -1;
    p->data[p->data_len] = '\0';
    ev.event = p->event[0] ? p->event : "message";
    ev.id = p->id;
    ev.data = p->data;
    ev.data_len = p->data_len;
    rc = p->fn(p->ctx, &ev);
    p->data_len = 0;
    p->has_data = false;
    p->event[0] = '\0';
    return rc ? 1 : 0;
}

static int sse_line(struct cli_sse *p, const char *line, size_t len, struct errinfo *err)
{
    const char *colon = memchr(line, ':', len);
    size_t nlen = colon ? (size_t)(colon - line) : len;
    const char *v = colon ? colon + 1 : line + len;
    size_t vlen = (size_t)(line + len - v);

    if (len == 0)
        return sse_dispatch(p, err);
    if (nlen == 0)
        return 0; /* a comment */
    if (vlen > 0 && *v == ' ') {
        v++;
        vlen--;
    }
    if (nlen == 4 && memcmp(line, "data", 4) == 0) {
        size_t sep = p->has_data ? 1 : 0;

        if (grow(&p->data, &p->data_cap, p->data_len + sep + vlen + 1, err) < 0)
            return -1;
        if (sep)
            p->data[p->data_len++] = '\n';
        memcpy(p->data + p->data_len, v, vlen);
        p->data_len += vlen;
        p->has_data = true;
    } else if (nlen == 5 && memcmp(line, "event", 5) == 0) {
        copy_field(p->event, sizeof(p->event), v, vlen);
    } else if (nlen == 2 && memcmp(line, "id", 2) == 0) {
        copy_field(p->id, sizeof(p->id), v, vlen);
    }
    return 0;
}

int cli_sse_feed(struct cli_sse *p, const char *buf, size_t n, struct errinfo *err)
{
    for (size_t i = 0; i < n; i++) {
        char c = buf[i];
        int rc;

        if (c == '\n' && p->cr) {
            p->cr = false; /* the LF of a CRLF: the line ended at the CR */
            continue;
        }
        p->cr = c == '\r';
        if (c == '\r' || c == '\n') {
            rc = sse_line(p, p->line ? p->line : "", p->line_len, err);
            p->line_len = 0;
            if (rc)
                return rc;
            continue;
        }
        if (grow(&p->line, &p->line_cap, p->line_len + 1, err) < 0)
            return -1;
        p->line[p->line_len++] = c;
    }
    return 0;
}

/* ---- the exchange ---- */

struct conn {
    int fd;
    int64_t deadline; /* CLOCK_MONOTONIC ms, or 0 for none */
    struct cli_http_reply *out;
};

/* Records the first failure: what (a phrase) and an optional detail after it. */
static void fail(struct cli_http_reply *out, enum upstream_outcome o, int e, const char *what,
                 const char *detail)
{
    if (out->r.outcome != UPSTREAM_ANSWERED || out->errbuf[0])
        return; /* keep the first */
    out->r.outcome = o;
    out->r.os_errno = e;
    snprintf(out->errbuf, sizeof(out->errbuf), "%s%s", what, detail ? detail : "");
}

/* Waits for events on the socket; 0 when ready, -1 (failure recorded) on timeout or error. */
static int wait_fd(struct conn *c, short events)
{
    struct pollfd pfd = {.fd = c->fd, .events = events};

    for (;;) {
        int left = -1, n;

        if (c->deadline) {
            int64_t d = c->deadline - clocks_mono_ms();

            if (d <= 0) {
                fail(c->out, UPSTREAM_TIMEOUT, 0, "timed out", NULL);
                return -1;
            }
            left = d > INT32_MAX ? INT32_MAX : (int)d;
        }
        n = poll(&pfd, 1, left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR) {
            fail(c->out, UPSTREAM_FAILED, errno, "poll: ", strerror(errno));
            return -1;
        }
    }
}

static int connect_one(struct conn *c, const struct addrinfo *ai)
{
    int e = 0;
    socklen_t elen = sizeof(e);

    c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (c->fd < 0)
        return errno;
    if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) == 0)
        return 0;
    if (errno == EINPROGRESS && wait_fd(c, POLLOUT) < 0)
        e = ETIMEDOUT;
    else if (errno != EINPROGRESS || getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0)
        e = errno;
    if (e) {
        close(c->fd);
        c->fd = -1;
    }
    return e;
}

static int open_conn(struct conn *c, const struct cli_target *t)
{
    struct addrinfo hints = {0}, *res = NULL;
    char port[8];
    int e = ECONNREFUSED, g;

    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
    snprintf(port, sizeof(port), "%d", t->port);
    g = getaddrinfo(t->host, port, &hints, &res);
    if (g != 0) {
        fail(c->out, UPSTREAM_FAILED, 0, "cannot resolve the daemon's host: ", gai_strerror(g));
        return -1;
    }
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        e = connect_one(c, ai);
        if (e == 0 || c->out->r.outcome == UPSTREAM_TIMEOUT)
            break;
    }
    freeaddrinfo(res);
    if (c->fd >= 0)
        return 0;
    if (c->out->r.outcome == UPSTREAM_TIMEOUT)
        return -1;
    if (e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH || e == EADDRNOTAVAIL)
        fail(c->out, UPSTREAM_REFUSED, e, "", strerror(e));
    else
        fail(c->out, UPSTREAM_FAILED, e, "cannot connect: ", strerror(e));
    return -1;
}

static int send_all(struct conn *c, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = send(c->fd, buf, n, MSG_NOSIGNAL);

        if (w > 0) {
            buf += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_fd(c, POLLOUT) < 0)
                return -1;
            continue;
        }
        fail(c->out, UPSTREAM_DROPPED, errno, "sending the request: ", strerror(errno));
        return -1;
    }
    return 0;
}

/* Reads what is there: > 0 bytes, 0 at end of file, -1 on failure (recorded). */
static ssize_t recv_some(struct conn *c, char *buf, size_t n)
{
    for (;;) {
        ssize_t r = recv(c->fd, buf, n, 0);

        if (r >= 0)
            return r;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (wait_fd(c, POLLIN) < 0)
                return -1;
            continue;
        }
        fail(c->out, errno == ECONNRESET ? UPSTREAM_DROPPED : UPSTREAM_FAILED, errno,
             "reading the answer: ", strerror(errno));
        return -1;
    }
}

static int send_request(struct conn *c, const struct cli_target *t, const struct cli_http_req *q)
{
    char head[2048 + UPSTREAM_TOKEN_MAX];
    int n;

    n = snprintf(head, sizeof(head),
                 "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nUser-Agent: runbox/%s\r\n"
                 "%s%s%s%s%s%s",
                 q->method, q->path, t->hostport, RUNBOX_VERSION, q->accept ? "Accept: " : "",
                 q->accept ? q->accept : "", q->accept ? "\r\n" : "",
                 t->token ? "Authorization: Bearer " : "", t->token ? t->token : "",
                 t->token ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof(head) - 128) {
        fail(c->out, UPSTREAM_FAILED, 0, "the request is too long", NULL);
        return -1;
    }
    if (q->body)
        n += snprintf(head + n, sizeof(head) - (size_t)n,
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n", q->body_len);
    n += snprintf(head + n, sizeof(head) - (size_t)n, "\r\n");
    if (send_all(c, head, (size_t)n) < 0)
        return -1;
    return q->body ? send_all(c, q->body, q->body_len) : 0;
}

/* ---- the response ---- */

enum chunk_state { CH_SIZE, CH_EXT, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILER, CH_DONE };

struct body {
    bool chunked;
    long long length; /* Content-Length, or -1 */
    long long seen;
    enum chunk_state cs;
    unsigned long long chunk_left;
    bool size_digits;
    bool trailer_blank; /* the trailer line being read is empty so far */
    const struct cli_http_req *q;
    struct cli_http_reply *out;
    size_t cap;
    bool stream; /* the body goes to q->on_body */
    bool stopped;
};

static int deliver(struct body *b, const char *buf, size_t n)
{
    struct cli_http_reply *out = b->out;

    if (n == 0 || b->stopped)
        return 0;
    if (b->stream) {
        if (b->q->on_body(b->q->ctx, buf, n) != 0)
            b->stopped = true;
        return 0;
    }
    if (out->r.body_len + n > CLI_HTTP_BODY_MAX) {
        fail(out, UPSTREAM_TOO_LARGE, 0, "the answer is too large", NULL);
        return -1;
    }
    if (out->r.body_len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 4096;
        char *nb;

        while (ncap < out->r.body_len + n + 1)
            ncap *= 2;
        nb = realloc(out->body_owned, ncap);
        if (!nb) {
            fail(out, UPSTREAM_FAILED, ENOMEM, "out of memory", NULL);
            return -1;
        }
        out->body_owned = nb;
        b->cap = ncap;
    }
    memcpy(out->body_owned + out->r.body_len, buf, n);
    out->r.body_len += n;
    out->body_owned[out->r.body_len] = '\0';
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes chunked framing; returns 0, or -1 on a framing error (recorded). */
static int dechunk(struct body *b, const char *buf, size_t n)
{
    size_t i = 0;

    while (i < n && b->cs != CH_DONE) {
        char c = buf[i];

        switch (b->cs) {
        case CH_SIZE:
            if (hexval(c) >= 0 && b->chunk_left < (1ull << 40)) {
                b->chunk_left = b->chunk_left * 16 + (unsigned)hexval(c);
                b->size_digits = true;
            } else if (c == ';' || c == ' ' || c == '\r') {
                b->cs = CH_EXT;
            } else if (c == '\n' && b->size_digits) {
                b->cs = b->chunk_left ? CH_DATA : CH_TRAILER;
                b->trailer_blank = true;
            } else {
                goto bad;
            }
            i++;
            break;
        case CH_EXT:
            if (c == '\n') {
                if (!b->size_digits)
                    goto bad;
                b->cs = b->chunk_left ? CH_DATA : CH_TRAILER;
                b->trailer_blank = true;
            }
            i++;
            break;
        case CH_DATA: {
            size_t take = n - i;

            if (take > b->chunk_left)
                take = (size_t)b->chunk_left;
            if (deliver(b, buf + i, take) < 0)
                return -1;
            i += take;
            b->chunk_left -= take;
            if (b->chunk_left == 0)
                b->cs = CH_DATA_CR;
            break;
        }
        case CH_DATA_CR:
            if (c == '\r') {
                b->cs = CH_DATA_LF;
                i++;
                break;
            }
            /* A bare LF is tolerated. */
            __attribute__((fallthrough));
        case CH_DATA_LF:
            if (c != '\n')
                goto bad;
            b->cs = CH_SIZE;
            b->size_digits = false;
            i++;
            break;
        case CH_TRAILER:
            if (c == '\n') {
                if (b->trailer_blank)
                    b->cs = CH_DONE;
                b->trailer_blank = true;
            } else if (c != '\r') {
                b->trailer_blank = false;
            }
            i++;
            break;
        case CH_DONE:
            break;
        }
    }
    return 0;
bad:
    fail(b->out, UPSTREAM_FAILED, 0, "the answer's chunked framing is broken", NULL);
    return -1;
}

static bool body_done(const struct body *b)
{
    if (b->stopped)
        return true;
    if (b->chunked)
        return b->cs == CH_DONE;
    return b->length >= 0 && b->seen >= b->length;
}

static int body_feed(struct body *b, const char *buf, size_t n)
{
    if (b->chunked)
        return dechunk(b, buf, n);
    if (b->length >= 0 && (long long)n > b->length - b->seen)
        n = (size_t)(b->length - b->seen);
    b->seen += (long long)n;
    return deliver(b, buf, n);
}

/* The value of header name in head[0..len) (a copy, at most n-1 bytes), or false. */
static bool header(const char *head, size_t len, const char *name, char *val, size_t n)
{
    size_t nl = strlen(name);
    const char *p = memchr(head, '\n', len), *end = head + len;

    while (p && p + 1 < end) {
        const char *line = p + 1, *eol = memchr(line, '\n', (size_t)(end - line));

        if (!eol)
            eol = end;
        if ((size_t)(eol - line) > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
            const char *v = line + nl + 1;
            size_t vl;

            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            vl = (size_t)(eol - v);
            while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
                vl--;
            copy_field(val, n, v, vl);
            return true;
        }
        p = eol < end ? eol : NULL;
    }
    return false;
}

static int parse_head(struct body *b, const char *head, size_t len)
{
    struct cli_http_reply *out = b->out;
    char val[64];
    int status = 0;

    for (size_t i = 9; len >= 12 && i < 12 && head[i] >= '0' && head[i] <= '9'; i++)
        status = status * 10 + (head[i] - '0');
    if (len < 12 || strncmp(head, "HTTP/1.", 7) != 0 || status < 100) {
        fail(out, UPSTREAM_FAILED, 0, "the answer is not HTTP", NULL);
        return -1;
    }
    out->r.status = status;
    header(head, len, "Content-Type", out->content_type, sizeof(out->content_type));
    b->stream = b->q->on_body &&
                (!b->q->stream_type ||
                 strncasecmp(out->content_type, b->q->stream_type, strlen(b->q->stream_type)) == 0);
    b->length = -1;
    if (header(head, len, "Transfer-Encoding", val, sizeof(val)) && strcasestr(val, "chunked"))
        b->chunked = true;
    else if (header(head, len, "Content-Length", val, sizeof(val)))
        b->length = strtoll(val, NULL, 10);
    if (status == 204 || status == 304 || strcmp(b->q->method, "HEAD") == 0)
        b->length = 0;
    return 0;
}

static void read_response(struct conn *c, const struct cli_http_req *q)
{
    struct cli_http_reply *out = c->out;
    struct body b = {.q = q, .out = out, .length = -1};
    char *buf = malloc(READ_CHUNK);
    size_t have = 0;
    const char *eoh = NULL;
    ssize_t r;

    if (!buf) {
        fail(out, UPSTREAM_FAILED, ENOMEM, "out of memory", NULL);
        return;
    }
    while (!eoh) { /* the head */
        if (have == READ_CHUNK) {
            fail(out, UPSTREAM_FAILED, 0, "the answer's head is too long", NULL);
            goto out;
        }
        r = recv_some(c, buf + have, READ_CHUNK - have);
        if (r < 0)
            goto out;
        if (r == 0) {
            fail(out, UPSTREAM_DROPPED, 0, "closed before answering", NULL);
            goto out;
        }
        have += (size_t)r;
        eoh = memmem(buf, have, "\r\n\r\n", 4);
    }
    if (parse_head(&b, buf, (size_t)(eoh + 4 - buf)) < 0)
        goto out;
    out->r.outcome = UPSTREAM_ANSWERED;
    if (body_feed(&b, eoh + 4, have - (size_t)(eoh + 4 - buf)) < 0)
        goto out;
    while (!body_done(&b)) {
        r = recv_some(c, buf, READ_CHUNK);
        if (r < 0)
            goto out;
        if (r == 0) {
            if (b.chunked || b.length >= 0)
                fail(out, UPSTREAM_DROPPED, 0, "closed in the middle of the answer", NULL);
            break;
        }
        if (body_feed(&b, buf, (size_t)r) < 0)
            goto out;
    }
out:
    free(buf);
}

void cli_http_do(const struct cli_target *t, const struct cli_http_req *q,
                 struct cli_http_reply *out)
{
    struct conn c = {.fd = -1, .out = out};

    memset(out, 0, sizeof(*out));
    out->r.outcome = UPSTREAM_ANSWERED; /* until a failure says otherwise */
    if (q->timeout_ms > 0)
        c.deadline = clocks_mono_ms() + q->timeout_ms;
    if (open_conn(&c, t) == 0 && send_request(&c, t, q) == 0)
        read_response(&c, q);
    if (c.fd >= 0)
        close(c.fd);
    if (out->errbuf[0] && out->r.outcome == UPSTREAM_ANSWERED && out->r.status == 0)
        out->r.outcome = UPSTREAM_FAILED;
    if (out->r.outcome != UPSTREAM_ANSWERED)
        out->r.status = 0;
    out->r.body = out->body_owned ? out->body_owned : "";
    out->r.error = out->errbuf;
}

void cli_http_reply_cleanup(struct cli_http_reply *out)
{
    if (!out)
        return;
    free(out->body_owned);
    out->body_owned = NULL;
    out->r.body = "";
    out->r.body_len = 0;
}
