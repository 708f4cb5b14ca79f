/* daemon/mcpclient_ws.c - the WebSocket transport of the MCP client (see mcpclient_int.h): an
 * RFC 6455 client, subprotocol "mcp", one JSON-RPC message per text frame.
 *
 * Written here rather than taken from a library: Debian's libcurl 7.88 has no WebSocket
 * support, and civetweb's WebSocket client cannot send request headers (the config's
 * Authorization) or ask for a subprotocol, and reads on a thread of its own. The client is
 * small: a handshake (with the config's headers, nothing else), masked frames out, frames in
 * (fragments joined, ping answered, close honoured). wss:// is TLS through OpenSSL, verified
 * against the system's CAs and the URL's host name. */
#include "mcpclient_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dynlib.h"
#include "log.h"
#include "registry.h"
#include "tools.h"

/* OpenSSL's entry points: valid once run() has loaded it. */
static const struct dynlib_ssl *const ossl = &dynlib_ssl;

#define HEAD_MAX  (16u << 10)
#define READ_SIZE ((size_t)64 << 10)
#define KEEP_EDGE 1024
#define WS_GUID   "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

struct ws {
    struct mcpclient *c;
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    char host[256], path[2048];
    int port;
    bool tls;
    unsigned char *in; /* bytes read, not yet parsed */
    size_t ilen, icap;
    char *msg; /* the message being joined from fragments */
    size_t mlen, mcap;
    bool in_msg, over;
    size_t over_bytes;
    char head[KEEP_EDGE];
    size_t head_len;
    uint64_t skip_left; /* bytes of a frame too large to keep, still to come */
    uint64_t skip_total;
    bool skip_fin;
    char tail[KEEP_EDGE];
    size_t tail_len;
    unsigned char *out; /* frames waiting to be written */
    size_t olen, ooff, ocap;
};

/* ---- I/O over the socket or TLS ---- */

static ssize_t io_read(struct ws *w, void *buf, size_t n)
{
    int r;

    if (!w->ssl)
        return read(w->fd, buf, n);
    r = ossl->read(w->ssl, buf, (int)(n > INT32_MAX ? INT32_MAX : n));
    if (r > 0)
        return r;
    switch (ossl->get_error(w->ssl, r)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    default:
        errno = EIO;
        return -1;
    }
}

static ssize_t io_write(struct ws *w, const void *buf, size_t n)
{
    int r;

    if (!w->ssl)
        return send(w->fd, buf, n, MSG_NOSIGNAL);
    r = ossl->write(w->ssl, buf, (int)(n > INT32_MAX ? INT32_MAX : n));
    if (r > 0)
        return r;
    errno = ossl->get_error(w->ssl, r) == SSL_ERROR_WANT_WRITE ||
                    ossl->get_error(w->ssl, r) == SSL_ERROR_WANT_READ
                ? EAGAIN
                : EIO;
    return -1;
}

/* Waits until fd is ready for events or ms passes; 0 when ready. */
static int wait_fd(int fd, short events, int ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    int r;

    do
        r = poll(&p, 1, ms);
    while (r < 0 && errno == EINTR);
    return r > 0 ? 0 : -1;
}

/* ---- connecting ---- */

/* ws[s]://host[:port]/path into w; shown is the URL as the config file writes it, for the
 * message. */
static int parse_url(struct ws *w, const char *url, const char *shown, struct errinfo *why)
{
    const char *p = url + (strncmp(url, "wss://", 6) == 0 ? 6 : 5), *end, *colon;
    size_t hl;

    w->tls = strncmp(url, "wss://", 6) == 0;
    w->port = w->tls ? 443 : 80;
    end = p + strcspn(p, "/?#");
    colon = memchr(p, ':', (size_t)(end - p));
    if (*p == '[') { /* [::1]:port */
        const char *rb = memchr(p, ']', (size_t)(end - p));

        colon = rb && rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
        hl = rb ? (size_t)(rb - p - 1) : 0;
        if (rb)
            snprintf(w->host, sizeof(w->host), "%.*s", (int)hl, p + 1);
    } else {
        hl = (size_t)((colon ? colon : end) - p);
        snprintf(w->host, sizeof(w->host), "%.*s", (int)hl, p);
    }
    if (colon)
        w->port = (int)strtol(colon + 1, NULL, 10);
    snprintf(w->path, sizeof(w->path), "%s", *end == '/' ? end : "/");
    if (*end == '?')
        snprintf(w->path, sizeof(w->path), "/%s", end);
    if (!w->host[0] || w->port <= 0 || w->port > 65535) {
        errinfo_set(why, ERR_INVALID, "cannot read the host and port of %.200s", shown);
        return -1;
    }
    return 0;
}

static int tcp_connect(struct ws *w, int timeout_ms, struct errinfo *why)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL, *a;
    char port[16];
    int rc, err = 0;

    snprintf(port, sizeof(port), "%d", w->port);
    rc = getaddrinfo(w->host, port, &hints, &res);
    if (rc != 0) {
        errinfo_set(why, ERR_UNAVAILABLE, "cannot resolve %s: %s", w->host, gai_strerror(rc));
        return -1;
    }
    for (a = res; a; a = a->ai_next) {
        socklen_t sl = sizeof(err);

        w->fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (w->fd < 0)
            continue;
        if (connect(w->fd, a->ai_addr, a->ai_addrlen) == 0 ||
            (errno == EINPROGRESS && wait_fd(w->fd, POLLOUT, timeout_ms) == 0 &&
             getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &err, &sl) == 0 && err == 0))
            break;
        err = err ? err : errno;
        close(w->fd);
        w->fd = -1;
    }
    freeaddrinfo(res);
    if (w->fd < 0) {
        errno = err ? err : ETIMEDOUT;
        errinfo_sys(why, "cannot connect to %s port %d", w->host, w->port);
        return -1;
    }
    return 0;
}

static int tls_start(struct ws *w, int timeout_ms, struct errinfo *why)
{
    int r;

    w->ctx = ossl->ctx_new(ossl->tls_client_method());
    if (!w->ctx || ossl->ctx_set_default_verify_paths(w->ctx) != 1) {
        errinfo_set(why, ERR_INTERNAL, "TLS: cannot set up OpenSSL");
        return -1;
    }
    ossl->ctx_set_verify(w->ctx, SSL_VERIFY_PEER, NULL);
    w->ssl = ossl->ssl_new(w->ctx);
    if (!w->ssl || ossl->set_fd(w->ssl, w->fd) != 1 ||
        ossl->ctrl(w->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, w->host) != 1 ||
        ossl->set1_host(w->ssl, w->host) != 1) {
        errinfo_set(why, ERR_INTERNAL, "TLS: cannot set up the connection to %s", w->host);
        return -1;
    }
    while ((r = ossl->connect(w->ssl)) != 1) {
        int e = ossl->get_error(w->ssl, r);

        if ((e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) ||
            wait_fd(w->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, timeout_ms) < 0) {
            char buf[200];

            ossl->err_error_string_n(ossl->err_get_error(), buf, sizeof(buf));
            errinfo_set(why, ERR_UNAVAILABLE, "TLS with %s failed: %s", w->host, buf);
            return -1;
        }
    }
    return 0;
}

static int write_all(struct ws *w, const char *p, size_t n, int timeout_ms, struct errinfo *why)
{
    while (n) {
        ssize_t k = io_write(w, p, n);

        if (k < 0 && errno == EAGAIN && wait_fd(w->fd, POLLOUT, timeout_ms) == 0)
            continue;
        if (k <= 0) {
            errinfo_sys(why, "writing to %s", w->host);
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static const char *header_in(const char *head, const char *name, size_t *len)
{
    size_t nl = strlen(name);

    for (const char *p = strstr(head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        if (strncasecmp(p + 2, name, nl) == 0 && p[2 + nl] == ':') {
            const char *v = p + 3 + nl;

            while (*v == ' ')
                v++;
            *len = strcspn(v, "\r\n");
            return v;
        }
    }
    return NULL;
}

static int handshake(struct ws *w, const struct registry_spec *s, struct errinfo *why)
{
    unsigned char nonce[16], digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    char *key = NULL, *accept = NULL, *req = NULL, head[HEAD_MAX + 1] = "", src[128];
    size_t hl = 0, klen, vlen;
    const char *v;
    int rc = -1;
    long status;

    if (getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce)) {
        errinfo_sys(why, "getrandom");
        return -1;
    }
    key = tools_base64_encode(nonce, sizeof(nonce), &klen);
    if (!key)
        goto nomem;
    {
        size_t cap = 1024 + strlen(w->path) + strlen(w->host);
        size_t n;

        for (size_t i = 0; i < s->headers.n; i++)
            cap += strlen(s->headers.v[i]) + 2;
        req = malloc(cap);
        if (!req)
            goto nomem;
        n = (size_t)snprintf(req, cap,
                             "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                             "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                             "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mcp\r\n"
                             "User-Agent: runbox/" RUNBOX_VERSION "\r\n",
                             w->path, w->host, w->port, key);
        for (size_t i = 0; i < s->headers.n && n < cap; i++)
            n += (size_t)snprintf(req + n, cap - n, "%s\r\n", s->headers.v[i]);
        if (n + 3 > cap)
            goto nomem;
        memcpy(req + n, "\r\n", 3);
    }
    if (write_all(w, req, strlen(req), s->timeout_ms, why) < 0)
        goto out;
    while (!strstr(head, "\r\n\r\n") || hl == 0) {
        ssize_t n;

        if (hl >= HEAD_MAX) {
            errinfo_set(why, ERR_UNAVAILABLE, "%s sent a handshake answer over 16 KiB", w->host);
            goto out;
        }
        n = io_read(w, head + hl, 1); /* byte by byte: frames may follow the head */
        if (n < 0 && errno == EAGAIN && wait_fd(w->fd, POLLIN, s->timeout_ms) == 0)
            continue;
        if (n <= 0) {
            errinfo_set(why, ERR_UNAVAILABLE,
                        n == 0 ? "%s closed the connection during the WebSocket handshake"
                               : "%s did not answer the WebSocket handshake",
                        s->shown.url);
            goto out;
        }
        hl++;
        head[hl] = '\0';
    }
    status = strtol(strchr(head, ' ') ? strchr(head, ' ') : head, NULL, 10);
    if (status != 101) {
        v = header_in(head, "Content-Type", &vlen);
        errinfo_set(why, ERR_UNAVAILABLE, "%s answered the WebSocket upgrade with HTTP %ld%s",
                    s->shown.url, status,
                    v && vlen >= 9 && strncasecmp(v, "text/html", 9) == 0
                        ? " and an HTML page: is the URL the server's WebSocket endpoint?"
                        : "");
        goto out;
    }
    snprintf(src, sizeof(src), "%s" WS_GUID, key);
    ossl->evp_digest(src, strlen(src), digest, &dlen, ossl->evp_sha1(), NULL);
    accept = tools_base64_encode(digest, dlen, &klen);
    v = header_in(head, "Sec-WebSocket-Accept", &vlen);
    if (!accept || !v || vlen != strlen(accept) || strncmp(v, accept, vlen) != 0) {
        errinfo_set(why, ERR_UNAVAILABLE,
                    "%s answered the upgrade without the right Sec-WebSocket-Accept", s->shown.url);
        goto out;
    }
    rc = 0;
    goto out;
nomem:
    errinfo_set(why, ERR_NOMEM, "out of memory for the WebSocket handshake");
out:
    free(key);
    free(accept);
    free(req);
    return rc;
}

/* ---- frames ---- */

static int queue_frame(struct ws *w, int opcode, const void *data, size_t len)
{
    unsigned char hdr[14], mask[4];
    size_t hl = 2, need;
    const unsigned char *d = data;

    if (getrandom(mask, sizeof(mask), 0) != (ssize_t)sizeof(mask))
        return -1;
    hdr[0] = (unsigned char)(0x80 | opcode);
    if (len < 126) {
        hdr[1] = (unsigned char)(0x80 | len);
    } else if (len < 65536) {
        hdr[1] = 0x80 | 126;
        hdr[2] = (unsigned char)(len >> 8);
        hdr[3] = (unsigned char)len;
        hl = 4;
    } else {
        hdr[1] = 0x80 | 127;
        for (int i = 0; i < 8; i++)
            hdr[2 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
        hl = 10;
    }
    memcpy(hdr + hl, mask, 4);
    hl += 4;
    need = w->olen + hl + len;
    if (need > w->ocap) {
        size_t cap = w->ocap ? w->ocap : 4096;
        unsigned char *grown;

        while (cap < need)
            cap *= 2;
        grown = realloc(w->out, cap);
        if (!grown)
            return -1;
        w->out = grown;
        w->ocap = cap;
    }
    memcpy(w->out + w->olen, hdr, hl);
    for (size_t i = 0; i < len; i++)
        w->out[w->olen + hl + i] = d[i] ^ mask[i & 3];
    w->olen += hl + len;
    return 0;
}

/* Writes what the socket takes; -1 when it is broken. */
static int flush_out(struct ws *w)
{
    while (w->ooff < w->olen) {
        ssize_t n = io_write(w, w->out + w->ooff, w->olen - w->ooff);

        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        w->ooff += (size_t)n;
    }
    w->olen = w->ooff = 0;
    return 0;
}

static void message_part(struct ws *w, const unsigned char *p, size_t n, bool fin)
{
    if (!w->over && w->mlen + n > MCPCLIENT_MESSAGE_MAX) {
        w->over = true;
        w->over_bytes = w->mlen;
        w->head_len = w->mlen < KEEP_EDGE ? w->mlen : KEEP_EDGE;
        memcpy(w->head, w->msg, w->head_len);
    }
    if (w->over) {
        w->over_bytes += n;
    } else {
        if (w->mlen + n + 1 > w->mcap) {
            size_t cap = w->mcap ? w->mcap : 4096;
            char *grown;

            while (cap < w->mlen + n + 1)
                cap *= 2;
            grown = realloc(w->msg, cap);
            if (!grown)
                return;
            w->msg = grown;
            w->mcap = cap;
        }
        memcpy(w->msg + w->mlen, p, n);
        w->mlen += n;
    }
    if (!fin)
        return;
    if (w->over)
        mcpclient__oversized(w->c, w->over_bytes, w->head, w->head_len,
                             n > KEEP_EDGE ? (const char *)p + n - KEEP_EDGE : (const char *)p,
                             n > KEEP_EDGE ? KEEP_EDGE : n);
    else if (w->mlen)
        mcpclient__receive(w->c, w->msg, w->mlen);
    w->mlen = 0;
    w->in_msg = w->over = false;
}

/* Drops what has come of a frame too large to keep (w->skip_left), keeping its first and
 * last bytes for the id; reports it when it is over. Returns 0. */
static int skip_bytes(struct ws *w)
{
    size_t n = w->ilen < w->skip_left ? w->ilen : (size_t)w->skip_left;

    if (w->head_len < KEEP_EDGE) {
        size_t k = KEEP_EDGE - w->head_len < n ? KEEP_EDGE - w->head_len : n;

        memcpy(w->head + w->head_len, w->in, k);
        w->head_len += k;
    }
    if (n >= KEEP_EDGE) {
        memcpy(w->tail, w->in + n - KEEP_EDGE, KEEP_EDGE);
        w->tail_len = KEEP_EDGE;
    } else if (n) {
        size_t keep = w->tail_len + n > KEEP_EDGE ? KEEP_EDGE - n : w->tail_len;

        memmove(w->tail, w->tail + w->tail_len - keep, keep);
        memcpy(w->tail + keep, w->in, n);
        w->tail_len = keep + n;
    }
    memmove(w->in, w->in + n, w->ilen - n);
    w->ilen -= n;
    w->skip_left -= n;
    if (w->skip_left == 0 && w->skip_fin) {
        mcpclient__oversized(w->c, (size_t)w->skip_total, w->head, w->head_len, w->tail,
                             w->tail_len);
        w->mlen = 0;
        w->in_msg = w->over = false;
    } else if (w->skip_left == 0) {
        w->over = true; /* the rest of the message is dropped too */
        w->over_bytes = (size_t)w->skip_total;
    }
    return 0;
}

/* Parses the frames in w->in. 1 when the server closed, -1 on a protocol error, 0 else. A
 * frame is handled once it is whole: a large message arrives as fragments or whole frames of
 * at most MCPCLIENT_MESSAGE_MAX plus a little; a longer single frame is refused. */
static int parse_frames(struct ws *w, struct errinfo *why)
{
    size_t off = 0;
    int rc = 0;

    while (rc == 0 && w->ilen - off >= 2) {
        const unsigned char *f = w->in + off;
        int opcode = f[0] & 0x0f;
        bool fin = f[0] & 0x80, masked = f[1] & 0x80;
        uint64_t len = f[1] & 0x7f;
        size_t hl = 2;

        if (len == 126) {
            if (w->ilen - off < 4)
                break;
            len = (uint64_t)f[2] << 8 | f[3];
            hl = 4;
        } else if (len == 127) {
            if (w->ilen - off < 10)
                break;
            len = 0;
            for (int i = 0; i < 8; i++)
                len = len << 8 | f[2 + i];
            hl = 10;
        }
        if (masked)
            hl += 4;
        if (len > MCPCLIENT_MESSAGE_MAX && !masked && (opcode == 0 || opcode == 1 || opcode == 2)) {
            /* Too large to keep: its bytes are counted and dropped as they come, so the
             * connection (and every other call on it) goes on. */
            w->skip_left = len;
            w->skip_total = w->mlen + len;
            w->skip_fin = fin;
            w->head_len = 0;
            w->tail_len = 0;
            off += hl;
            memmove(w->in, w->in + off, w->ilen - off);
            w->ilen -= off;
            off = 0;
            skip_bytes(w);
            if (w->skip_left)
                return 0;
            continue;
        }
        if (w->ilen - off < hl + len)
            break;
        if (masked) /* servers must not mask; undo it anyway */
            for (uint64_t i = 0; i < len; i++)
                ((unsigned char *)f)[hl + i] ^= f[hl - 4 + (i & 3)];
        switch (opcode) {
        case 0x0: /* continuation */
        case 0x1: /* text */
        case 0x2: /* binary: taken as text too */
            w->in_msg = true;
            message_part(w, f + hl, (size_t)len, fin);
            break;
        case 0x8:
            queue_frame(w, 0x8, f + hl, len >= 2 ? 2 : 0);
            errinfo_set(why, ERR_UNAVAILABLE, "the server closed the WebSocket (code %d)",
                        len >= 2 ? (f[hl] << 8 | f[hl + 1]) : 1005);
            rc = 1;
            break;
        case 0x9:
            queue_frame(w, 0xA, f + hl, (size_t)len);
            break;
        default:
            break;
        }
        off += hl + (size_t)len;
    }
    memmove(w->in, w->in + off, w->ilen - off);
    w->ilen -= off;
    return rc;
}

static int read_some(struct ws *w, struct errinfo *why)
{
    for (int rounds = 0; rounds < 64; rounds++) {
        ssize_t n;
        int rc;

        if (w->icap - w->ilen < READ_SIZE) {
            unsigned char *grown = realloc(w->in, w->icap + READ_SIZE * 2);

            if (!grown)
                return -1;
            w->in = grown;
            w->icap += READ_SIZE * 2;
        }
        n = io_read(w, w->in + w->ilen, READ_SIZE);
        if (n == 0) {
            errinfo_set(why, ERR_UNAVAILABLE, "the server closed the connection");
            return 1;
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return 0;
            errinfo_sys(why, "reading from %s", w->host);
            return -1;
        }
        w->ilen += (size_t)n;
        if (w->skip_left)
            skip_bytes(w);
        rc = w->skip_left ? 0 : parse_frames(w, why);
        if (rc)
            return rc;
        if (!w->ssl || !ossl->pending(w->ssl))
            if ((size_t)n < READ_SIZE)
                return 0;
    }
    return 0;
}

static void serve(struct ws *w, struct errinfo *why)
{
    mcpclient__opened(w->c);
    for (;;) {
        struct pollfd p[2] = {{.fd = mcpclient__wake_fd(w->c), .events = POLLIN},
                              {.fd = w->fd, .events = POLLIN}};
        size_t len;
        char *msg;

        if (mcpclient__should_end(w->c, why))
            return;
        while ((msg = mcpclient__next_out(w->c, &len)) != NULL) {
            int rc = queue_frame(w, 0x1, msg, len);

            free(msg);
            if (rc < 0) {
                errinfo_set(why, ERR_NOMEM, "out of memory for a WebSocket frame");
                return;
            }
        }
        if (flush_out(w) < 0) {
            errinfo_sys(why, "writing to %s", w->host);
            return;
        }
        if (w->olen > w->ooff)
            p[1].events |= POLLOUT;
        if (poll(p, 2, mcpclient__poll_ms(w->c)) < 0 && errno != EINTR) {
            errinfo_sys(why, "poll");
            return;
        }
        if (p[0].revents & POLLIN)
            mcpclient__drain_wake(w->c);
        if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && read_some(w, why) != 0) {
            flush_out(w); /* the close frame's answer */
            return;
        }
    }
}

static void run(struct mcpclient *c, struct errinfo *why)
{
    const struct registry_spec *s = mcpclient__spec(c);
    struct ws w = {.c = c, .fd = -1};

    /* OpenSSL is loaded by the first WebSocket server (common/dynlib.h): even ws:// needs its
     * SHA-1 for the handshake. One that cannot stays down with the reason. */
    if (dynlib_load_ssl(why) < 0)
        return;
    if (parse_url(&w, s->url, s->shown.url, why) == 0 && tcp_connect(&w, s->timeout_ms, why) == 0 &&
        (!w.tls || tls_start(&w, s->timeout_ms, why) == 0) && handshake(&w, s, why) == 0)
        serve(&w, why);
    if (w.ssl) {
        ossl->shutdown(w.ssl);
        ossl->ssl_free(w.ssl);
    }
    ossl->ctx_free(w.ctx);
    if (w.fd >= 0)
        close(w.fd);
    free(w.in);
    free(w.out);
    free(w.msg);
}

const struct mcpclient_transport mcpclient__ws = {.name = "ws", .run = run};
