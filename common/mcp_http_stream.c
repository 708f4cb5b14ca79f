/* common/mcp_http_stream.c - the HTTP transport's response streams (see mcp_http.c's DESIGN):
 * writing answer heads and event-stream pieces, a stream's queue, delivery from other threads,
 * and the owner's loop that writes what is queued, pings long streams and notices a client that
 * left. */
#include "mcp_http_int.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <civetweb.h>

#include "clocks.h"
#include "http_conn.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp_int.h"

#define ANSWER_COPY_MAX ((size_t)64 << 10) /* answers up to this size are sent in one write */

/* ---- writing HTTP ---- */

const char *mcp_http__keepalive_of(const struct mg_context *ctx, char *buf, size_t size)
{
    const char *on = mg_get_option(ctx, "enable_keep_alive");
    const char *ms = mg_get_option(ctx, "keep_alive_timeout_ms");

    if (!on || strcmp(on, "yes") != 0)
        return "Connection: close\r\n";
    snprintf(buf, size, "Keep-Alive: timeout=%ld\r\n", ms ? strtol(ms, NULL, 10) / 1000 : 0);
    return buf;
}

static const char close_line[] = "Connection: close\r\n";

const char *mcp_http__keepalive_header(const struct mg_connection *conn, char *buf, size_t size)
{
    if (!http_conn_keeps_alive(conn))
        return close_line;
    return mcp_http__keepalive_of(mg_get_context(conn), buf, size);
}

const char *mcp_http__keepalive_cached(struct mcp_http *h, const struct mg_connection *conn,
                                       char *buf, size_t size)
{
    const struct mg_context *ctx = mg_get_context(conn);

    if (!http_conn_keeps_alive(conn))
        return close_line;
    if (ctx && atomic_load_explicit(&h->ka_ctx, memory_order_acquire) == ctx)
        return h->ka_text;
    return mcp_http__keepalive_of(ctx, buf, size);
}

/* Appends s (n bytes) at *at when it fits before end; false when it does not. */
static bool put_bytes(char **at, const char *end, const char *s, size_t n)
{
    if ((size_t)(end - *at) < n)
        return false;
    memcpy(*at, s, n);
    *at += n;
    return true;
}

static bool put_text(char **at, const char *end, const char *s)
{
    return put_bytes(at, end, s, strlen(s));
}

/* Appends v in decimal. */
static bool put_decimal(char **at, const char *end, size_t v)
{
    char rev[24];
    size_t n = 0;

    do {
        rev[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if ((size_t)(end - *at) < n)
        return false;
    while (n)
        *(*at)++ = rev[--n];
    return true;
}

/* The head of write_answer's response at out (size bytes); its length, or -1 when it does not
 * fit. Put together by hand: every answer to a POST has one (no snprintf on that path). */
static int answer_head(char *out, size_t size, struct mg_connection *conn, int status,
                       const char *ctype, size_t len, const char *session_id, const char *extra,
                       const char *ka)
{
    char *at = out;
    const char *end = out + size;
    bool ok = put_text(&at, end, "HTTP/1.1 ") && status >= 100 && status <= 999 &&
              put_decimal(&at, end, (size_t)status) && put_bytes(&at, end, " ", 1) &&
              put_text(&at, end, mg_get_response_code_text(conn, status)) &&
              put_text(&at, end, "\r\nContent-Type: ") && put_text(&at, end, ctype) &&
              put_text(&at, end, "\r\nContent-Length: ") && put_decimal(&at, end, len) &&
              put_text(&at, end, "\r\nCache-Control: no-store\r\n") && put_text(&at, end, ka);

    if (ok && session_id && session_id[0])
        ok = put_text(&at, end, "Mcp-Session-Id: ") && put_text(&at, end, session_id) &&
             put_bytes(&at, end, "\r\n", 2);
    if (ok && extra)
        ok = put_text(&at, end, extra);
    ok = ok && put_bytes(&at, end, "\r\n", 2);
    return ok ? (int)(at - out) : -1;
}

int mcp_http__write_answer(struct mg_connection *conn, int status, const char *ctype,
                           const char *body, size_t len, const char *session_id, const char *extra,
                           const char *ka)
{
    char head[1024], kabuf[48];
    bool closing = extra && strstr(extra, "Connection: close\r\n");
    int n;

    if (closing)
        ka = "";
    else if (!ka)
        ka = mcp_http__keepalive_header(conn, kabuf, sizeof(kabuf));
    n = answer_head(head, sizeof(head), conn, status, ctype, len, session_id, extra, ka);
    if (n < 0)
        return -1;
    /* A small answer leaves in one write: one segment with TCP_NODELAY, one read for the
     * client (a head and a body written apart are two of each). */
    if ((size_t)n + len <= ANSWER_COPY_MAX) {
        char *one = malloc((size_t)n + len);

        if (one) {
            int rc;

            memcpy(one, head, (size_t)n);
            if (len)
                memcpy(one + n, body, len);
            rc = mg_write(conn, one, (size_t)n + len) > 0 ? 0 : -1;
            free(one);
            return rc;
        }
    }
    if (mg_write(conn, head, (size_t)n) <= 0 || (len && mg_write(conn, body, len) <= 0))
        return -1;
    return 0;
}

int mcp_http__http_error(struct mg_connection *conn, int status, int code, const char *extra,
                         const char *fmt, ...)
{
    char msg[600];
    char *line;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    line = jsonrpc_build_error(NULL, code, msg, NULL);
    if (line) {
        mcp_http__write_answer(conn, status, "application/json", line, strlen(line), NULL, extra,
                               NULL);
        free(line);
    }
    return status;
}

int mcp_http__write_piece(const struct hstream *st, const char *a, size_t alen, const char *b,
                          size_t blen, const char *c, size_t clen)
{
    struct mg_connection *conn = st->conn;
    char head[24];
    int n = snprintf(head, sizeof(head), "%zx\r\n", alen + blen + clen);

    if ((st->chunked && mg_write(conn, head, (size_t)n) <= 0) ||
        (alen && mg_write(conn, a, alen) <= 0) || (blen && mg_write(conn, b, blen) <= 0) ||
        (clen && mg_write(conn, c, clen) <= 0) || (st->chunked && mg_write(conn, "\r\n", 2) <= 0))
        return -1;
    return 0;
}

/* Ends st's event stream: its last chunk; an unchunked one ends when civetweb closes the
 * connection (start_sse told it to). Returns -1 when the client is gone. */
static int end_stream(const struct hstream *st)
{
    return !st->chunked || mg_write(st->conn, "0\r\n\r\n", 5) > 0 ? 0 : -1;
}

/* ---- streams ---- */

void mcp_http__stream_init(struct hstream *st, struct mcp_http *h, struct mg_connection *conn,
                           bool modern)
{
    size_t queue_max = h->opt.stream_queue_max;

    memset(st, 0, sizeof(*st));
    st->keepalive =
        mcp_http__keepalive_cached(h, conn, st->keepalive_buf, sizeof(st->keepalive_buf));
    st->chunked = http_conn_is_http11(conn);
    pthread_mutex_init(&st->mu, NULL);
    clocks_cond_init(&st->cond);
    st->conn = conn;
    st->owner = pthread_self();
    st->modern = modern;
    st->queue_max = queue_max;
    st->watch = -1;
}

void mcp_http__stream_destroy(struct hstream *st)
{
    mcp_http__queue_cleanup(&st->q);
    pthread_cond_destroy(&st->cond);
    pthread_mutex_destroy(&st->mu);
}

/* True when json is a result: the engine's answers begin {"jsonrpc":"2.0","id":<id>, and then
 * "result" or "error". Lets answer_status skip its search of a result's text (4 KiB and more for
 * a file read), where an "error" member of the result itself is no JSON-RPC error either. */
static bool is_result(const char *json, size_t len)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":", tail[] = ",\"result\":";
    size_t i = sizeof(head) - 1;

    if (len < i || memcmp(json, head, i) != 0)
        return false;
    if (i < len && json[i] == '"') { /* a string id: to its closing quote */
        for (i++; i < len && json[i] != '"'; i++)
            if (json[i] == '\\')
                i++;
        i++;
    } else { /* a number or null */
        while (i < len && json[i] != ',' && json[i] != '}')
            i++;
    }
    return i <= len && len - i >= sizeof(tail) - 1 && memcmp(json + i, tail, sizeof(tail) - 1) == 0;
}

/* The HTTP status for a JSON answer: a modern error's own, 400 for a parse error, else 200. */
static int answer_status(const struct hstream *st, const char *json, size_t len)
{
    static const char key[] = "\"error\":{\"code\":";
    const char *p = is_result(json, len) ? NULL : memmem(json, len, key, sizeof(key) - 1);
    long code;

    if (!p)
        return 200;
    code = strtol(p + sizeof(key) - 1, NULL, 10);
    if (code == MCP_PARSE_ERROR)
        return 400;
    if (!st->modern)
        return 200;
    switch (code) {
    case MCP_INVALID_PARAMS:
    case MCP_HEADER_MISMATCH:
    case MCP_MISSING_CAPABILITY:
    case MCP_UNSUPPORTED_VERSION:
    case MCP_INVALID_REQUEST:
        return 400;
    case MCP_METHOD_NOT_FOUND:
        return 404;
    default:
        return 200;
    }
}

int mcp_http__start_sse(struct hstream *st)
{
    char head[512], ka[48];
    const char *conn_line = st->keepalive;
    int n;

    if (!st->chunked) {
        mg_disable_connection_keep_alive(st->conn);
        conn_line = close_line;
    } else if (!conn_line) {
        conn_line = mcp_http__keepalive_header(st->conn, ka, sizeof(ka));
    }
    n = snprintf(head, sizeof(head),
                 "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: "
                 "no-store\r\nX-Accel-Buffering: no\r\n%s%s%s%s%s\r\n",
                 st->chunked ? "Transfer-Encoding: chunked\r\n" : "", conn_line,
                 st->session_header[0] ? "Mcp-Session-Id: " : "", st->session_header,
                 st->session_header[0] ? "\r\n" : "");
    st->mode = ST_SSE;
    return mg_write(st->conn, head, (size_t)n) > 0 ? 0 : -1;
}

/* Writes one message (owner thread, no lock). Returns -1 when the client is gone. */
static int owner_write(struct hstream *st, const char *json, size_t len, enum mcp_route_kind kind)
{
    bool final = kind == MCP_ROUTE_RESPONSE && st->ends_at_answer;

    if (kind == MCP_ROUTE_RESPONSE && len == 0) {
        /* No answer will come (the request was cancelled): a POST's stream ends without one,
         * as an event stream with nothing in it when nothing was sent yet. */
        if (!st->ends_at_answer)
            return 0;
        st->done = true;
        if (st->mode == ST_UNSTARTED && mcp_http__start_sse(st) < 0)
            return -1;
        return end_stream(st);
    }
    if (st->mode == ST_UNSTARTED && final) {
        st->mode = ST_JSON;
        st->done = true;
        return mcp_http__write_answer(st->conn, answer_status(st, json, len), "application/json",
                                      json, len, st->session_header, NULL, st->keepalive);
    }
    if (st->mode == ST_UNSTARTED && mcp_http__start_sse(st) < 0)
        return -1;
    if (mcp_http__write_piece(st, "event: message\ndata: ", 21, json, len, "\n\n", 2) < 0)
        return -1;
    if (final) {
        st->done = true;
        if (end_stream(st) < 0)
            return -1;
    }
    return 0;
}

struct qmsg *mcp_http__qmsg(const char *json, size_t len, enum mcp_route_kind kind)
{
    struct qmsg *m = malloc(sizeof(*m) + len + 1);

    if (!m)
        return NULL;
    m->next = m->newer = m->next_slot = NULL;
    m->kind = kind;
    m->token_off = m->token_len = 0;
    m->len = len;
    if (len)
        memcpy(m->text, json, len);
    m->text[len] = '\0';
    return m;
}

void mcp_http__stream_deliver(struct hstream *st, const char *json, size_t len,
                              enum mcp_route_kind kind)
{
    struct qmsg *m;

    if (pthread_equal(pthread_self(), st->owner)) {
        if (st->dead || st->done)
            return;
        if (owner_write(st, json, len, kind) < 0) {
            pthread_mutex_lock(&st->mu);
            st->dead = true;
            pthread_mutex_unlock(&st->mu);
        }
        return;
    }
    m = mcp_http__qmsg(json, len, kind);
    pthread_mutex_lock(&st->mu);
    if (!m || st->dead || st->done) {
        pthread_mutex_unlock(&st->mu);
        free(m);
        return;
    }
    /* A progress notification replaces one for its token that still waits: a flood of progress
     * holds one message, and cannot push out the answer that follows it. */
    if (mcp_http__queue_push(&st->q, m, st->queue_max) < 0) {
        log_warn("mcp-http: a stream's client is not reading (%zu bytes waiting); the stream is "
                 "closed",
                 st->q.bytes);
        st->dead = true;
        pthread_cond_broadcast(&st->cond);
        pthread_mutex_unlock(&st->mu);
        return;
    }
    pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->mu);
}

/* The watcher's thread: the client of st left. A handler answering on st's owner thread is
 * cancelled now (nobody else would notice before it ends); a stream_run wakes up. */
static void on_client_gone(void *arg)
{
    struct hstream *st = arg;
    struct hsess *hs;

    pthread_mutex_lock(&st->mu);
    st->dead = true;
    hs = st->inline_hs;
    pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->mu);
    if (hs)
        mcp_session_cancel_origin(hs->ms, st);
}

void mcp_http__stream_watch(struct mcp_http *h, struct hstream *st)
{
    if (st->watch < 0 && h->opt.watch)
        st->watch = h->opt.watch(h->opt.ctx, st->conn, on_client_gone, st);
}

void mcp_http__stream_list(struct mcp_http *h, struct hstream *st)
{
    pthread_mutex_lock(&h->mu);
    if (!st->in_open) {
        st->next_open = h->open;
        h->open = st;
        st->in_open = true;
    }
    if (st->sess && st->sess->ending) { /* it ended before this stream was listed */
        pthread_mutex_lock(&st->mu);
        st->session_ended = true;
        pthread_mutex_unlock(&st->mu);
    }
    pthread_mutex_unlock(&h->mu);
}

static void stream_unlist(struct mcp_http *h, struct hstream *st)
{
    pthread_mutex_lock(&h->mu);
    for (struct hstream **pp = &h->open; st->in_open && *pp; pp = &(*pp)->next_open)
        if (*pp == st) {
            *pp = st->next_open;
            break;
        }
    st->in_open = false;
    pthread_mutex_unlock(&h->mu);
}

void mcp_http__stream_unwatch(struct mcp_http *h, struct hstream *st)
{
    if (st->watch >= 0)
        h->opt.unwatch(h->opt.ctx, st->watch);
    st->watch = -1;
}

/* Serves st until it is done (its answer written) or dead, writing what others queue. long_lived
 * streams get keep-alive comments. */
/* The end of serving st (owner thread): no longer listed or watched. A stream that ends without
 * its answer: the SSE body still needs its last chunk; a POST whose session ended before
 * anything was sent says so. */
static void stream_end(struct mcp_http *h, struct hstream *st)
{
    stream_unlist(h, st);
    mcp_http__stream_unwatch(h, st);
    if (st->mode == ST_SSE && !st->done && !st->dead)
        (void)end_stream(st);
    else if (st->mode == ST_UNSTARTED && st->session_ended && !st->done && !st->dead)
        mcp_http__http_error(
            st->conn, 404, -32001, NULL,
            "Session not found: the session ended while this request was served (its "
            "calls are cancelled)");
}

void mcp_http__stream_run(struct mcp_http *h, struct hstream *st, bool long_lived)
{
    int keepalive = h->opt.keepalive_ms;
    int64_t next_ping;
    bool over;

    /* A request answered while it was handled (every quick tool) is over: no watching of its
     * connection (the embedder's watch may cost a scan of the open descriptors), no listing. */
    pthread_mutex_lock(&st->mu);
    over = !long_lived && !st->q.head && (st->done || st->dead || st->session_ended);
    pthread_mutex_unlock(&st->mu);
    if (over) { /* perhaps after a handler answered at length, inline (hsess_may_block) */
        stream_end(h, st);
        return;
    }
    next_ping = clocks_mono_ms() + keepalive;
    mcp_http__stream_watch(h, st);
    mcp_http__stream_list(h, st);
    pthread_mutex_lock(&st->mu);
    for (;;) {
        struct qmsg *m;
        struct timespec ts;
        int64_t now;

        m = mcp_http__queue_pop(&st->q);
        if (m) {
            if (m->kind == MCP_ROUTE_RESPONSE && !m->len && st->session_ended) {
                /* Cancelled because its session ended (an inline handler's call): the end
                 * below says so. */
                free(m);
                continue;
            }
            pthread_mutex_unlock(&st->mu);
            if (!st->done && !st->dead && owner_write(st, m->text, m->len, m->kind) < 0) {
                pthread_mutex_lock(&st->mu);
                st->dead = true;
                pthread_mutex_unlock(&st->mu);
            }
            free(m);
            pthread_mutex_lock(&st->mu);
            continue;
        }
        if (st->done || st->dead || st->session_ended || atomic_load(&h->closing))
            break;
        now = clocks_mono_ms();
        /* Every SSE stream gets comments while it idles: a client that left shows up as a
         * failed write even where nothing watches its connection. */
        if ((long_lived || st->mode == ST_SSE) && now >= next_ping) {
            pthread_mutex_unlock(&st->mu);
            if ((st->mode == ST_UNSTARTED && mcp_http__start_sse(st) < 0) ||
                mcp_http__write_piece(st, ":\n\n", 3, NULL, 0, NULL, 0) < 0)
                st->dead = true;
            next_ping = now + keepalive;
            pthread_mutex_lock(&st->mu);
            continue;
        }
        ts = clocks_at(next_ping);
        pthread_cond_timedwait(&st->cond, &st->mu, &ts);
    }
    pthread_mutex_unlock(&st->mu);
    stream_end(h, st);
}
