/* common/mcp_http.c - MCP over HTTP (see runbox/mcp_http.h): the transport's sessions, response
 * streams, Streamable HTTP (POST, GET, DELETE) and the legacy HTTP+SSE pair.
 *
 * DESIGN
 * Every HTTP request is served by the civetweb worker that read it, and only that thread writes
 * to its connection (the stream's owner). A message for a stream that comes from another thread
 * (a handler answering later, a broadcast) is queued on the stream and the owner, which waits
 * on the stream's condition variable, writes it. A message the owner produces itself (a
 * synchronous handler running inside mcp_session_handle) is written at once, so progress of a
 * long call reaches the client while the call runs.
 *
 * A POST's answer starts as nothing: the first message decides. Its answer alone makes an
 * application/json response (with the HTTP status the revision wants for an error); anything
 * before it (progress, a log, a server request) turns the response into a text/event-stream,
 * which ends with the answer. Streams that live long (a GET stream, a legacy /sse stream, a
 * subscriptions/listen answer) get an SSE comment every keepalive_ms, which is also how a
 * client that left is found when nothing watches its connection; a stream whose queue passes
 * stream_queue_max (a client that stopped reading) is closed.
 *
 * The engine's sessions: a legacy Streamable HTTP session (initialize without Mcp-Session-Id)
 * is listed by its random id; a modern request, and a request that has neither a session nor
 * the modern _meta, gets a session of its own for just that POST (MCP_SESSION_MODERN_ONLY), so
 * the engine gives the errors; a legacy /sse stream is a session too. */
#include "mcp_http_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <civetweb.h>

#include "clocks.h"
#include "http_guard.h"
#include "http_conn.h"
#include "jsonbuf.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp_int.h"

#define BODY_MAX_DEFAULT     ((size_t)32 << 20)
#define SESSION_MAX_DEFAULT  256
#define IDLE_MS_DEFAULT      (60 * 60 * 1000)
#define QUEUE_MAX_DEFAULT    ((size_t)8 << 20)
#define KEEPALIVE_MS_DEFAULT 15000
#define BODY_CHUNK           ((size_t)64 << 10)
#define ANSWER_COPY_MAX      ((size_t)64 << 10) /* answers up to this size are sent in one write */

static const char *const legacy_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18",
                                              "2025-11-25"};

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

/* Writes a complete response: status, Content-Type, exact length, and the session id when set.
 * An answer whose extra headers close the connection does not also say how long it stays. ka is
 * the keep-alive header line (mcp_http__keepalive_cached), or NULL to work it out here. */
static int write_answer(struct mg_connection *conn, int status, const char *ctype, const char *body,
                        size_t len, const char *session_id, const char *extra, const char *ka)
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

/* A JSON-RPC error answer (id null) with this HTTP status. */
static int http_error(struct mg_connection *conn, int status, int code, const char *extra,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int http_error(struct mg_connection *conn, int status, int code, const char *extra,
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
        write_answer(conn, status, "application/json", line, strlen(line), NULL, extra, NULL);
        free(line);
    }
    return status;
}

/* Writes a, b and c (each may be empty) as one piece of st's event stream: one chunk, or the
 * bare bytes when the stream is not chunked (HTTP/1.0). */
static int write_piece(const struct hstream *st, const char *a, size_t alen, const char *b,
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

static void stream_init(struct hstream *st, struct mcp_http *h, struct mg_connection *conn,
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

static void stream_destroy(struct hstream *st)
{
    while (st->head) {
        struct qmsg *m = st->head;

        st->head = m->next;
        free(m);
    }
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

/* The head of an event stream. HTTP/1.0 has no chunks: there the stream ends with the
 * connection, which civetweb then closes even for a client that asked to keep it. */
static int start_sse(struct hstream *st)
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
        if (st->mode == ST_UNSTARTED && start_sse(st) < 0)
            return -1;
        return end_stream(st);
    }
    if (st->mode == ST_UNSTARTED && final) {
        st->mode = ST_JSON;
        st->done = true;
        return write_answer(st->conn, answer_status(st, json, len), "application/json", json, len,
                            st->session_header, NULL, st->keepalive);
    }
    if (st->mode == ST_UNSTARTED && start_sse(st) < 0)
        return -1;
    if (write_piece(st, "event: message\ndata: ", 21, json, len, "\n\n", 2) < 0)
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
    m->next = NULL;
    m->kind = kind;
    m->len = len;
    if (len)
        memcpy(m->text, json, len);
    m->text[len] = '\0';
    return m;
}

/* A message for stream st (the engine's send, any thread). */
static void stream_deliver(struct hstream *st, const char *json, size_t len,
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
    if (st->queued + len > st->queue_max) {
        log_warn("mcp-http: a stream's client is not reading (%zu bytes waiting); the stream is "
                 "closed",
                 st->queued);
        st->dead = true;
        pthread_cond_broadcast(&st->cond);
        pthread_mutex_unlock(&st->mu);
        free(m);
        return;
    }
    if (st->tail)
        st->tail->next = m;
    else
        st->head = m;
    st->tail = m;
    st->queued += len;
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

/* Starts watching st's client, once (owner thread). */
static void stream_watch(struct mcp_http *h, struct hstream *st)
{
    if (st->watch < 0 && h->opt.watch)
        st->watch = h->opt.watch(h->opt.ctx, st->conn, on_client_gone, st);
}

/* Lists st in h->open (once), where the session's end finds it (owner thread). */
static void stream_list(struct mcp_http *h, struct hstream *st)
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

/* Stops watching st's client: on_client_gone neither runs nor will run (owner thread). */
static void stream_unwatch(struct mcp_http *h, struct hstream *st)
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
    stream_unwatch(h, st);
    if (st->mode == ST_SSE && !st->done && !st->dead)
        (void)end_stream(st);
    else if (st->mode == ST_UNSTARTED && st->session_ended && !st->done && !st->dead)
        http_error(st->conn, 404, -32001, NULL,
                   "Session not found: the session ended while this request was served (its "
                   "calls are cancelled)");
}

static void stream_run(struct mcp_http *h, struct hstream *st, bool long_lived)
{
    int keepalive = h->opt.keepalive_ms;
    int64_t next_ping;
    bool over;

    /* A request answered while it was handled (every quick tool) is over: no watching of its
     * connection (the embedder's watch may cost a scan of the open descriptors), no listing. */
    pthread_mutex_lock(&st->mu);
    over = !long_lived && !st->head && (st->done || st->dead || st->session_ended);
    pthread_mutex_unlock(&st->mu);
    if (over) { /* perhaps after a handler answered at length, inline (hsess_may_block) */
        stream_end(h, st);
        return;
    }
    next_ping = clocks_mono_ms() + keepalive;
    stream_watch(h, st);
    stream_list(h, st);
    pthread_mutex_lock(&st->mu);
    for (;;) {
        struct qmsg *m;
        struct timespec ts;
        int64_t now;

        if (st->head) {
            m = st->head;
            st->head = m->next;
            if (!st->head)
                st->tail = NULL;
            st->queued -= m->len;
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
            if ((st->mode == ST_UNSTARTED && start_sse(st) < 0) ||
                write_piece(st, ":\n\n", 3, NULL, 0, NULL, 0) < 0)
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

/* ---- sessions ---- */

/* Keeps a message for the session's next stream (hs->mu held): the newest MCP_HTTP_HELD_MAX
 * bytes, the oldest dropped first. */
static void hold(struct hsess *hs, const char *json, size_t len, enum mcp_route_kind kind)
{
    struct qmsg *m = len <= MCP_HTTP_HELD_MAX ? mcp_http__qmsg(json, len, kind) : NULL;

    if (!m) {
        log_debug("mcp-http: a message for session %s, which has no stream open, was dropped",
                  hs->id);
        return;
    }
    while (hs->held && hs->held_bytes + len > MCP_HTTP_HELD_MAX) {
        struct qmsg *old = hs->held;

        hs->held = old->next;
        hs->held_bytes -= old->len;
        free(old);
        log_debug("mcp-http: session %s has no stream open: its oldest held message was dropped",
                  hs->id);
    }
    if (!hs->held)
        hs->held_tail = NULL;
    if (hs->held_tail)
        hs->held_tail->next = m;
    else
        hs->held = m;
    hs->held_tail = m;
    hs->held_bytes += len;
}

/* Hands the session's held messages to st, its new stream, ahead of anything else (hs->mu
 * held; st is not started yet, so only its queue is touched). */
static void give_held(struct hsess *hs, struct hstream *st)
{
    if (!hs->held)
        return;
    pthread_mutex_lock(&st->mu);
    hs->held_tail->next = st->head;
    if (!st->head)
        st->tail = hs->held_tail;
    st->head = hs->held;
    st->queued += hs->held_bytes;
    pthread_mutex_unlock(&st->mu);
    hs->held = hs->held_tail = NULL;
    hs->held_bytes = 0;
}

static void hsess_send(void *ctx, const char *json, size_t len, const struct mcp_route *route)
{
    struct hsess *hs = ctx;
    enum mcp_route_kind kind;

    if (route->origin) {
        stream_deliver(route->origin, json, len, route->kind);
        return;
    }
    if (hs->kind == HS_WS) {
        mcp_http__ws_send(hs, json, len);
        return;
    }
    kind = route->kind == MCP_ROUTE_RESPONSE ? MCP_ROUTE_SESSION /* never ends the stream */
                                             : route->kind;
    pthread_mutex_lock(&hs->mu);
    if (hs->out)
        stream_deliver(hs->out, json, len, kind);
    else
        hold(hs, json, len, kind);
    pthread_mutex_unlock(&hs->mu);
}

/* A request of the session will not be answered (cancelled): its POST's stream ends. */
static void hsess_unanswered(void *ctx, const struct mcp_route *route)
{
    (void)ctx;
    if (route->origin)
        stream_deliver(route->origin, NULL, 0, MCP_ROUTE_RESPONSE);
}

static void hsess_closed(void *ctx)
{
    struct hsess *hs = ctx;

    while (hs->held) {
        struct qmsg *m = hs->held;

        hs->held = m->next;
        free(m);
    }
    if (hs->ws)
        mcp_http__ws_free(hs->ws);
    pthread_mutex_destroy(&hs->mu);
    free(hs);
}

/* A request of a POST, on the worker that serves the POST (which waits for the answer anyway):
 * its handler may answer here however long it takes, the client watched meanwhile. */
static bool hsess_may_block(void *ctx, void *origin)
{
    struct hsess *hs = ctx;
    struct hstream *st = origin;

    if (!st->ends_at_answer || !pthread_equal(pthread_self(), st->owner))
        return false;
    stream_watch(hs->h, st);
    pthread_mutex_lock(&st->mu);
    st->inline_hs = hs;
    pthread_mutex_unlock(&st->mu);
    stream_list(hs->h, st); /* so that the session's end cancels it (mcp_http__session_end) */
    return true;
}

static const struct mcp_transport hsess_transport = {.send = hsess_send,
                                                     .closed = hsess_closed,
                                                     .unanswered = hsess_unanswered,
                                                     .may_block = hsess_may_block};

static void random_id(char out[MCP_HTTP_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[MCP_HTTP_ID_LEN / 2];

    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        /* No kernel randomness (which should not happen): time and address still differ. */
        uint64_t t = (uint64_t)clocks_mono_ms() ^ (uint64_t)(uintptr_t)out;

        for (size_t i = 0; i < sizeof(raw); i++)
            raw[i] = (unsigned char)(t >> ((i % 8) * 8)) ^ (unsigned char)(i * 37);
    }
    for (size_t i = 0; i < sizeof(raw); i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[MCP_HTTP_ID_LEN] = '\0';
}

struct hsess *mcp_http__session_new(struct mcp_http *h, enum hs_kind kind, unsigned mflags,
                                    struct errinfo *err)
{
    struct hsess *hs = calloc(1, sizeof(*hs));

    if (!hs) {
        errinfo_set(err, ERR_NOMEM, "out of memory for an MCP session");
        return NULL;
    }
    hs->h = h;
    hs->kind = kind;
    random_id(hs->id);
    hs->last_used_ms = clocks_mono_ms();
    pthread_mutex_init(&hs->mu, NULL);
    hs->ms = mcp_session_new(h->opt.server, &hsess_transport, hs, mflags, err);
    if (!hs->ms) {
        pthread_mutex_destroy(&hs->mu);
        free(hs);
        return NULL;
    }
    return hs;
}

/* Ends the sessions nobody used for session_idle_ms (h->mu held); returns them to close. */
static struct hsess *take_expired(struct mcp_http *h, int64_t now)
{
    struct hsess *expired = NULL;

    for (struct hsess **pp = &h->sessions; *pp;) {
        struct hsess *hs = *pp;

        if (hs->kind != HS_STREAMABLE || hs->busy || hs->out ||
            now - hs->last_used_ms < h->opt.session_idle_ms) {
            pp = &hs->next;
            continue;
        }
        *pp = hs->next;
        hs->listed = false;
        h->nsessions--;
        hs->next = expired;
        expired = hs;
    }
    return expired;
}

static void close_list(struct hsess *list)
{
    while (list) {
        struct hsess *next = list->next;

        log_info("mcp-http: session %s expired (unused)", list->id);
        mcp_session_close(list->ms);
        list = next;
    }
}

/* When the table is full (h->mu held): unlists the Streamable session used least recently among
 * those with no request being served (so no stream open either: a GET stream holds the session
 * busy) and returns it to close, or NULL when every session is in use. Clients that exit without
 * DELETE (the TypeScript SDK's close() sends none) would otherwise hold their slot until it
 * expires, and a client that runs the Inspector's CLI in a loop would fill the table in minutes. */
static struct hsess *take_least_used(struct mcp_http *h)
{
    struct hsess **lru = NULL;

    for (struct hsess **pp = &h->sessions; *pp; pp = &(*pp)->next) {
        const struct hsess *hs = *pp;

        if (hs->kind == HS_STREAMABLE && !hs->busy && !hs->ending &&
            (!lru || hs->last_used_ms < (*lru)->last_used_ms))
            lru = pp;
    }
    if (!lru)
        return NULL;
    {
        struct hsess *hs = *lru;

        *lru = hs->next;
        hs->next = NULL;
        hs->listed = false;
        h->nsessions--;
        return hs;
    }
}

int mcp_http__session_list(struct mcp_http *h, struct hsess *hs, struct errinfo *err)
{
    struct hsess *expired, *evicted = NULL;
    int64_t now = clocks_mono_ms();
    int rc = 0;

    pthread_mutex_lock(&h->mu);
    expired = take_expired(h, now);
    if (!h->closing && h->nsessions >= h->opt.session_max)
        evicted = take_least_used(h);
    if (h->closing || h->nsessions >= h->opt.session_max) {
        errinfo_set(err, ERR_UNAVAILABLE,
                    "the server has %d MCP sessions open, the most it serves (%s); end one (DELETE "
                    "with its Mcp-Session-Id) or raise %s",
                    h->nsessions, h->limit_name, h->limit_name);
        rc = -1;
    } else {
        hs->next = h->sessions;
        h->sessions = hs;
        hs->listed = true;
        h->nsessions++;
        if (hs->kind == HS_WS)
            h->nws++;
    }
    pthread_mutex_unlock(&h->mu);
    close_list(expired);
    if (evicted) {
        log_info("mcp-http: session %s, unused for %lld s and with no stream, was ended to make "
                 "room for a new one (%d sessions at most: %s)",
                 evicted->id, (long long)((now - evicted->last_used_ms) / 1000), h->opt.session_max,
                 h->limit_name);
        mcp_session_close(evicted->ms);
    }
    return rc;
}

void mcp_http__session_end(struct mcp_http *h, struct hsess *hs)
{
    struct hstream *inl[16]; /* streams whose handler answers at length on their owner thread */
    size_t ninl = 0;
    bool now;

    pthread_mutex_lock(&h->mu);
    if (hs->listed) {
        for (struct hsess **pp = &h->sessions; *pp; pp = &(*pp)->next)
            if (*pp == hs) {
                *pp = hs->next;
                break;
            }
        hs->listed = false;
        h->nsessions--;
        if (hs->kind == HS_WS)
            h->nws--;
    }
    now = hs->busy == 0;
    if (!now) {
        /* Requests of it are being served: their streams end now (a POST waiting for a call's
         * answer, the GET stream), and the last session_put() closes the session. */
        hs->ending = true;
        for (struct hstream *st = h->open; st; st = st->next_open) {
            if (st->sess != hs)
                continue;
            pthread_mutex_lock(&st->mu);
            st->session_ended = true;
            if (st->inline_hs && ninl < sizeof(inl) / sizeof(inl[0]))
                inl[ninl++] = st;
            pthread_cond_broadcast(&st->cond);
            pthread_mutex_unlock(&st->mu);
        }
    }
    pthread_mutex_unlock(&h->mu);
    /* An inline handler is not waiting on its stream: its call is cancelled here (st is only
     * compared: the session has no other calls of that origin even if st has gone since). */
    for (size_t i = 0; i < ninl; i++)
        mcp_session_cancel_origin(hs->ms, inl[i]);
    if (now)
        mcp_session_close(hs->ms); /* hs is freed when the engine's session is gone */
}

/* The listed Streamable session with this id, marked busy; NULL when there is none. */
static struct hsess *session_get(struct mcp_http *h, const char *id)
{
    struct hsess *found = NULL, *expired;
    int64_t now = clocks_mono_ms();

    pthread_mutex_lock(&h->mu);
    expired = take_expired(h, now);
    for (struct hsess *hs = h->sessions; hs && !found; hs = hs->next)
        if (hs->kind == HS_STREAMABLE && strcmp(hs->id, id) == 0)
            found = hs;
    if (found) {
        found->busy++;
        found->last_used_ms = now;
    }
    pthread_mutex_unlock(&h->mu);
    close_list(expired);
    return found;
}

/* Ends one request's use of hs; hs may be gone once this returns. */
static void session_put(struct mcp_http *h, struct hsess *hs)
{
    bool close;

    pthread_mutex_lock(&h->mu);
    hs->busy--;
    hs->last_used_ms = clocks_mono_ms();
    close = hs->busy == 0 && hs->ending;
    pthread_mutex_unlock(&h->mu);
    if (close)
        mcp_session_close(hs->ms);
}

/* A legacy /sse session by id (for POST /message); NULL when there is none. */
static struct hsess *sse_session_get(struct mcp_http *h, const char *id)
{
    struct hsess *found = NULL;

    pthread_mutex_lock(&h->mu);
    for (struct hsess *hs = h->sessions; hs && !found; hs = hs->next)
        if (hs->kind == HS_SSE && strcmp(hs->id, id) == 0)
            found = hs;
    if (found)
        found->busy++;
    pthread_mutex_unlock(&h->mu);
    return found;
}

/* ---- reading a request ---- */

static bool accepts(const char *accept, const char *type)
{
    return accept && (strcasestr(accept, type) || strstr(accept, "*/*"));
}

static bool is_json_type(const char *ctype)
{
    static const char want[] = "application/json";

    if (!ctype)
        return false;
    while (*ctype == ' ')
        ctype++;
    if (strncasecmp(ctype, want, sizeof(want) - 1) != 0)
        return false;
    ctype += sizeof(want) - 1;
    while (*ctype == ' ')
        ctype++;
    return !*ctype || *ctype == ';';
}

/* True when the client waits for "100 Continue" before it sends the body (curl does for bodies
 * over 1 MiB, and waits a second for it otherwise): civetweb sends it only for its own uploads. */
static bool expects_continue(const struct mg_connection *conn)
{
    const char *expect = mg_get_header(conn, "Expect");
    const char *version = mg_get_request_info(conn)->http_version;

    return expect && strcasecmp(expect, "100-continue") == 0 && version &&
           strcmp(version, "1.1") == 0;
}

/* 413 for a chunked body that grew past max; what follows is drained briefly (a lingering
 * close), then the connection closes. */
static int body_too_large(struct mg_connection *conn, size_t max)
{
    http_error(conn, 413, MCP_INVALID_REQUEST, "Connection: close\r\n",
               "the request body is over the limit of %zu bytes", max);
    http_guard_drain(conn);
    return 413;
}

/* Reads the body (at most max bytes, Content-Length or chunked) into an owned NUL-terminated
 * buffer. Answers and returns the status on failure, else 0. A chunked body is read into a
 * buffer of at most max + 2 bytes: one byte past the limit tells an over-long body apart from
 * one of exactly max bytes. */
static int read_body(struct mg_connection *conn, size_t max, char **out, size_t *outlen)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    long long clen = ri->content_length;
    size_t cap = clen >= 0 ? (size_t)clen + 1 : BODY_CHUNK, len = 0;
    struct errinfo err = {0};
    char *buf;

    if (clen > (long long)max) {
        http_error(conn, 413, MCP_INVALID_REQUEST, "Connection: close\r\n",
                   "the request body is %lld bytes, over the limit of %zu bytes", clen, max);
        http_guard_drain(conn);
        return 413;
    }
    if (cap > max + 2)
        cap = max + 2;
    if (expects_continue(conn))
        mg_write(conn, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    buf = malloc(cap);
    if (!buf)
        return http_error(conn, 503, MCP_INTERNAL_ERROR, NULL, "out of memory for the body");
    for (;;) {
        int n;

        if (len + 1 == cap) {
            char *nb;
            size_t ncap = cap * 2 > max + 2 ? max + 2 : cap * 2;

            if (clen >= 0)
                break;
            if (len > max) {
                free(buf);
                return body_too_large(conn, max);
            }
            nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return http_error(conn, 503, MCP_INTERNAL_ERROR, NULL,
                                  "out of memory for the body");
            }
            buf = nb;
            cap = ncap;
        }
        n = http_guard_read(conn, buf + len, cap - 1 - len, &err);
        if (n < 0) {
            free(buf);
            return http_error(conn, err.kind == ERR_TIMEOUT ? 408 : 400, MCP_INVALID_REQUEST,
                              "Connection: close\r\n", "%s", err.msg);
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (len > max) {
        free(buf);
        return body_too_large(conn, max);
    }
    if (clen >= 0 && len != (size_t)clen) {
        free(buf);
        return http_error(conn, 400, MCP_INVALID_REQUEST, NULL,
                          "the request body ended after %zu of %lld bytes", len, clen);
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return 0;
}

/* The value of a query parameter (URL-decoded) into out; false when absent. */
static bool query_param(const struct mg_connection *conn, const char *name, char *out, size_t size)
{
    const char *q = mg_get_request_info(conn)->query_string;

    return q && mg_get_var(q, strlen(q), name, out, size) > 0;
}

/* ---- the 2026-07-28 headers ---- */

/* A header value without the whitespace around it (RFC 9110 section 5.5: it is not part of
 * the value; civetweb drops only the leading part): *len bytes from the returned pointer. */
static const char *trim_ows(const char *h, size_t *len)
{
    size_t n;

    while (*h == ' ' || *h == '\t')
        h++;
    n = strlen(h);
    while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    *len = n;
    return h;
}

/* True when header value h, trimmed, is exactly want. */
static bool header_is(const char *h, const char *want)
{
    size_t n;

    h = trim_ows(h, &n);
    return strlen(want) == n && memcmp(h, want, n) == 0;
}

/* Decodes a header value that may be "=?base64?...?=" into out (NUL-terminated), after taking
 * off the whitespace around it. */
static bool header_value(const char *h, char *out, size_t size)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n, o = 0;
    unsigned acc = 0;
    int bits = 0;

    h = trim_ows(h, &n);
    if (n < 11 || strncmp(h, "=?base64?", 9) != 0 || strncmp(h + n - 2, "?=", 2) != 0) {
        if (n >= size)
            return false;
        memcpy(out, h, n);
        out[n] = '\0';
        return true;
    }
    for (const char *p = h + 9; p < h + n - 2; p++) {
        const char *at;

        if (*p == '=')
            break;
        at = strchr(tbl, *p);
        if (!at || !*p)
            return false;
        acc = (acc << 6) | (unsigned)(at - tbl);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o + 1 >= size)
                return false;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[o] = '\0';
    return true;
}

/* Checks a modern request's headers against its body; answers 400 -32020 and returns the status
 * when they differ, else 0. */
static int check_modern_headers(struct mg_connection *conn, const cJSON *msg)
{
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    const cJSON *ver =
        cJSON_GetObjectItemCaseSensitive(meta, "io.modelcontextprotocol/protocolVersion");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    const char *hv = mg_get_header(conn, "MCP-Protocol-Version");
    const char *hm = mg_get_header(conn, "Mcp-Method");
    const char *hn = mg_get_header(conn, "Mcp-Name");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const char *want_name = NULL;
    char decoded[2048];
    char *line;
    char why[400] = "";

    if (cJSON_IsString(method) && (strcmp(method->valuestring, "tools/call") == 0 ||
                                   strcmp(method->valuestring, "prompts/get") == 0)) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(params, "name");

        want_name = cJSON_IsString(n) ? n->valuestring : "";
    } else if (cJSON_IsString(method) && strcmp(method->valuestring, "resources/read") == 0) {
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(params, "uri");

        want_name = cJSON_IsString(u) ? u->valuestring : "";
    }
    if (!hv)
        snprintf(why, sizeof(why), "the MCP-Protocol-Version header is missing");
    else if (!cJSON_IsString(ver) || !header_is(hv, ver->valuestring))
        snprintf(why, sizeof(why),
                 "the MCP-Protocol-Version header %.40s does not match the body's protocol "
                 "version",
                 hv);
    else if (!hm)
        snprintf(why, sizeof(why), "the Mcp-Method header is missing");
    else if (!cJSON_IsString(method) || !header_is(hm, method->valuestring))
        snprintf(why, sizeof(why), "the Mcp-Method header %.60s does not match the body's method",
                 hm);
    else if (want_name && !hn)
        snprintf(why, sizeof(why), "the Mcp-Name header is missing (it names %.60s)",
                 method->valuestring);
    else if (want_name &&
             (!header_value(hn, decoded, sizeof(decoded)) || strcmp(decoded, want_name) != 0))
        snprintf(why, sizeof(why), "the Mcp-Name header does not match the body's %s",
                 strcmp(method->valuestring, "resources/read") == 0 ? "uri" : "name");
    if (!why[0])
        return 0;
    line = jsonrpc_build_error(id, MCP_HEADER_MISMATCH, why, NULL);
    if (line) {
        write_answer(conn, 400, "application/json", line, strlen(line), NULL, NULL, NULL);
        free(line);
    }
    return 400;
}

/* ---- POST ---- */

/* What a POST body holds. */
struct body_kind {
    bool has_request; /* a request (or a batch with one) that will be answered */
    bool modern;
    bool initialize;
};

static void classify(const cJSON *msg, struct body_kind *k)
{
    const cJSON *m;

    memset(k, 0, sizeof(*k));
    if (cJSON_IsArray(msg)) {
        cJSON_ArrayForEach(m, msg) if (cJSON_GetObjectItemCaseSensitive(m, "method") &&
                                       cJSON_GetObjectItemCaseSensitive(m, "id")) k->has_request =
            true;
        return;
    }
    m = cJSON_GetObjectItemCaseSensitive(msg, "method");
    k->has_request = cJSON_IsString(m) && cJSON_GetObjectItemCaseSensitive(msg, "id");
    k->initialize = k->has_request && strcmp(m->valuestring, "initialize") == 0;
    {
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(msg, "params"), "_meta");

        k->modern = cJSON_IsObject(meta) && cJSON_GetObjectItemCaseSensitive(
                                                meta, "io.modelcontextprotocol/protocolVersion");
    }
    /* Anything malformed is handed to the engine, which answers what it deserves. */
    if (!cJSON_IsString(m) && !cJSON_GetObjectItemCaseSensitive(msg, "result") &&
        !cJSON_GetObjectItemCaseSensitive(msg, "error"))
        k->has_request = true;
}

static bool legacy_version_ok(const char *v)
{
    for (size_t i = 0; i < sizeof(legacy_versions) / sizeof(legacy_versions[0]); i++)
        if (header_is(v, legacy_versions[i]))
            return true;
    return false;
}

/* Feeds the parsed body (takes ownership of msg) to hs on stream st and serves the answer.
 * Returns the HTTP status. */
static int serve_post(struct mcp_http *h, struct mg_connection *conn, struct hsess *hs,
                      struct hstream *st, cJSON *msg, bool answered)
{
    mcp__session_handle_parsed(hs->ms, msg, st);
    if (!answered) {
        /* Notifications and responses: 202, unless the engine had something to say about it. */
        pthread_mutex_lock(&st->mu);
        answered = st->head || st->mode != ST_UNSTARTED;
        pthread_mutex_unlock(&st->mu);
        if (!answered) {
            mcp_session_cancel_origin(hs->ms, st);
            stream_unwatch(h, st);
            write_answer(conn, 202, "application/json", "", 0, NULL, NULL, st->keepalive);
            return 202;
        }
    }
    stream_run(h, st, false);
    mcp_session_cancel_origin(hs->ms, st);
    return 200;
}

static int on_post(struct mcp_http *h, struct mg_connection *conn)
{
    const char *sid = mg_get_header(conn, "Mcp-Session-Id");
    const char *pv = mg_get_header(conn, "MCP-Protocol-Version");
    struct hsess *hs = NULL;
    struct hstream st;
    struct body_kind k;
    struct errinfo err = {0};
    char *body = NULL;
    size_t len = 0;
    cJSON *msg;
    int status;
    bool listed = false;

    if (!accepts(mg_get_header(conn, "Accept"), "application/json") ||
        !accepts(mg_get_header(conn, "Accept"), "text/event-stream"))
        return http_error(conn, 406, MCP_INVALID_REQUEST, NULL,
                          "send Accept: application/json, text/event-stream (the answer is one "
                          "of the two)");
    if (!is_json_type(mg_get_header(conn, "Content-Type")))
        return http_error(conn, 415, MCP_INVALID_REQUEST, NULL,
                          "POST bodies must be JSON: send Content-Type: application/json");
    status = read_body(conn, h->opt.body_max, &body, &len);
    if (status)
        return status;
    msg = jsonrpc_parse(body, len, &err);
    free(body); /* the engine gets the tree (mcp__session_handle_parsed), not the text */
    if (!msg)
        return http_error(
            conn, 400, err.kind == ERR_TOO_LARGE ? MCP_INVALID_REQUEST : MCP_PARSE_ERROR, NULL,
            "%s: %s", err.kind == ERR_TOO_LARGE ? "Invalid Request" : "Parse error", err.msg);
    classify(msg, &k);
    if (k.modern && check_modern_headers(conn, msg)) {
        cJSON_Delete(msg);
        return 400;
    }
    stream_init(&st, h, conn, k.modern);
    st.ends_at_answer = true;
    if (!k.modern && sid) {
        hs = session_get(h, sid);
        if (!hs) {
            cJSON_Delete(msg);
            stream_destroy(&st);
            return http_error(conn, 404, -32001, NULL,
                              "Session not found: no MCP session %.40s (it ended or expired); "
                              "send initialize again without Mcp-Session-Id",
                              sid);
        }
        listed = true;
        st.sess = hs;
        if (pv && !legacy_version_ok(pv)) {
            session_put(h, hs);
            cJSON_Delete(msg);
            stream_destroy(&st);
            return http_error(conn, 400, MCP_INVALID_REQUEST, NULL,
                              "unsupported MCP-Protocol-Version %.40s; this session speaks %s", pv,
                              mcp_session_protocol(hs->ms) ? mcp_session_protocol(hs->ms)
                                                           : "no version yet");
        }
    } else if (!k.modern && k.initialize) {
        hs = mcp_http__session_new(h, HS_STREAMABLE, 0, &err);
        if (hs && mcp_http__session_list(h, hs, &err) < 0) {
            mcp_session_close(hs->ms);
            hs = NULL;
        }
        if (!hs) {
            cJSON_Delete(msg);
            stream_destroy(&st);
            return http_error(conn, 503, MCP_INTERNAL_ERROR, NULL, "%s", err.msg);
        }
        pthread_mutex_lock(&h->mu);
        hs->busy++;
        pthread_mutex_unlock(&h->mu);
        listed = true;
        st.sess = hs;
        memcpy(st.session_header, hs->id, sizeof(st.session_header));
    } else {
        /* A modern request, or one with neither a session nor the modern _meta (whose error
         * the engine gives): a session for this POST alone. */
        hs = mcp_http__session_new(h, HS_STATELESS, MCP_SESSION_MODERN_ONLY, &err);
        if (!hs) {
            cJSON_Delete(msg);
            stream_destroy(&st);
            return http_error(conn, 503, MCP_INTERNAL_ERROR, NULL, "%s", err.msg);
        }
        st.modern = true;
    }
    status = serve_post(h, conn, hs, &st, msg, k.has_request);
    if (listed) {
        /* An initialize the engine refused leaves no session behind. */
        if (k.initialize && !mcp_session_protocol(hs->ms))
            mcp_http__session_end(h, hs);
        session_put(h, hs); /* hs may be gone after this */
    } else {
        mcp_session_close(hs->ms);
    }
    stream_destroy(&st);
    return status;
}

/* ---- GET and DELETE ---- */

static int on_get(struct mcp_http *h, struct mg_connection *conn)
{
    const char *sid = mg_get_header(conn, "Mcp-Session-Id");
    struct errinfo err = {0};
    struct hsess *hs;
    struct hstream st;
    bool busy;

    if (!sid)
        return http_error(conn, 405, MCP_INVALID_REQUEST, "Allow: POST, DELETE\r\n",
                          "GET on the MCP endpoint needs the Mcp-Session-Id of a session opened "
                          "with initialize; 2026-07-28 clients open a stream with "
                          "subscriptions/listen instead");
    if (!accepts(mg_get_header(conn, "Accept"), "text/event-stream"))
        return http_error(conn, 406, MCP_INVALID_REQUEST, NULL,
                          "the GET stream is text/event-stream: send Accept: text/event-stream");
    hs = session_get(h, sid);
    if (!hs)
        return http_error(conn, 404, -32001, NULL, "Session not found: no MCP session %.40s", sid);
    pthread_mutex_lock(&hs->mu);
    busy = hs->out != NULL;
    pthread_mutex_unlock(&hs->mu);
    if (busy) {
        int status =
            http_error(conn, 409, MCP_INVALID_REQUEST, NULL,
                       "session %s already has its GET stream open; one at a time", hs->id);

        session_put(h, hs);
        return status;
    }
    if (h->opt.admit && h->opt.admit(h->opt.ctx, &err) < 0) {
        session_put(h, hs);
        return http_error(conn, 503, MCP_INTERNAL_ERROR, NULL, "%s", err.msg);
    }
    stream_init(&st, h, conn, false);
    st.sess = hs;
    pthread_mutex_lock(&h->mu);
    h->nstreams++;
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_lock(&hs->mu);
    hs->out = &st;
    give_held(hs, &st);
    pthread_mutex_unlock(&hs->mu);
    if (start_sse(&st) == 0)
        stream_run(h, &st, true);
    pthread_mutex_lock(&hs->mu);
    hs->out = NULL;
    pthread_mutex_unlock(&hs->mu);
    pthread_mutex_lock(&h->mu);
    h->nstreams--;
    pthread_mutex_unlock(&h->mu);
    if (h->opt.release)
        h->opt.release(h->opt.ctx);
    session_put(h, hs);
    stream_destroy(&st);
    return 200;
}

static int on_delete(struct mcp_http *h, struct mg_connection *conn)
{
    const char *sid = mg_get_header(conn, "Mcp-Session-Id");
    struct hsess *hs;

    if (!sid)
        return http_error(conn, 400, MCP_INVALID_REQUEST, NULL,
                          "DELETE ends a session: send its Mcp-Session-Id");
    hs = session_get(h, sid);
    if (!hs)
        return http_error(conn, 404, -32001, NULL, "Session not found: no MCP session %.40s", sid);
    mcp_http__session_end(h, hs); /* its requests being served end now */
    session_put(h, hs);           /* the last one out closes it */
    write_answer(conn, 200, "application/json", "{}", 2, NULL, NULL, NULL);
    return 200;
}

/* ---- the legacy HTTP+SSE transport (2024-11-05) ---- */

static int on_sse(struct mcp_http *h, struct mg_connection *conn)
{
    struct errinfo err = {0};
    struct hsess *hs;
    struct hstream st;
    char event[512];
    int n;

    if (h->opt.admit && h->opt.admit(h->opt.ctx, &err) < 0)
        return http_error(conn, 503, MCP_INTERNAL_ERROR, NULL, "%s", err.msg);
    hs = mcp_http__session_new(h, HS_SSE, 0, &err);
    if (hs && mcp_http__session_list(h, hs, &err) < 0) {
        mcp_session_close(hs->ms);
        hs = NULL;
    }
    if (!hs) {
        if (h->opt.release)
            h->opt.release(h->opt.ctx);
        return http_error(conn, 503, MCP_INTERNAL_ERROR, NULL, "%s", err.msg);
    }
    stream_init(&st, h, conn, false);
    pthread_mutex_lock(&h->mu);
    h->nstreams++;
    pthread_mutex_unlock(&h->mu);
    n = snprintf(event, sizeof(event), "event: endpoint\ndata: %s?sessionId=%s\n\n",
                 h->message_path, hs->id);
    pthread_mutex_lock(&hs->mu);
    hs->out = &st;
    pthread_mutex_unlock(&hs->mu);
    if (start_sse(&st) == 0 && write_piece(&st, event, (size_t)n, NULL, 0, NULL, 0) == 0)
        stream_run(h, &st, true);
    pthread_mutex_lock(&hs->mu);
    hs->out = NULL;
    pthread_mutex_unlock(&hs->mu);
    mcp_http__session_end(h, hs); /* the stream is the session: it ends with it */
    pthread_mutex_lock(&h->mu);
    h->nstreams--;
    pthread_mutex_unlock(&h->mu);
    if (h->opt.release)
        h->opt.release(h->opt.ctx);
    stream_destroy(&st);
    return 200;
}

static int on_message(struct mcp_http *h, struct mg_connection *conn)
{
    char id[MCP_HTTP_ID_LEN + 8];
    struct hsess *hs;
    char *body = NULL;
    size_t len = 0;
    int status;

    if (!query_param(conn, "sessionId", id, sizeof(id)))
        return http_error(conn, 400, MCP_INVALID_REQUEST, NULL,
                          "POST %s needs ?sessionId= from the endpoint event of GET %s",
                          h->message_path, h->sse_path);
    if (!is_json_type(mg_get_header(conn, "Content-Type")))
        return http_error(conn, 415, MCP_INVALID_REQUEST, NULL,
                          "POST bodies must be JSON: send Content-Type: application/json");
    hs = sse_session_get(h, id);
    if (!hs)
        return http_error(conn, 404, -32001, NULL,
                          "no SSE session %.40s: its GET %s stream is closed; open a new one", id,
                          h->sse_path);
    status = read_body(conn, h->opt.body_max, &body, &len);
    if (status == 0) {
        mcp_session_handle(hs->ms, body, len, NULL); /* answers go to the session's stream */
        write_answer(conn, 202, "text/plain", "Accepted", 8, NULL, NULL, NULL);
        status = 202;
    }
    free(body);
    session_put(h, hs);
    return status;
}

/* ---- the transport ---- */

static char *dup_path(const char *p, bool *failed)
{
    char *d = p ? strdup(p) : NULL;

    if (p && !d)
        *failed = true;
    return d;
}

struct mcp_http *mcp_http_new(const struct mcp_http_options *opt, struct errinfo *err)
{
    struct mcp_http *h = calloc(1, sizeof(*h));
    bool failed = false;

    if (!h || !opt->server) {
        free(h);
        errinfo_set(err, opt->server ? ERR_NOMEM : ERR_INVALID,
                    opt->server ? "out of memory for the MCP HTTP transport"
                                : "mcp_http_new needs a server");
        return NULL;
    }
    h->opt = *opt;
    h->mcp_path = dup_path(opt->mcp_path, &failed);
    h->sse_path = dup_path(opt->sse_path, &failed);
    h->message_path = dup_path(
        opt->message_path ? opt->message_path : (opt->sse_path ? "/message" : NULL), &failed);
    h->ws_path = dup_path(opt->ws_path, &failed);
    h->limit_name =
        dup_path(opt->session_max_name ? opt->session_max_name : "session_max", &failed);
    if (failed) {
        mcp_http_free(h);
        errinfo_set(err, ERR_NOMEM, "out of memory for the MCP HTTP transport");
        return NULL;
    }
    h->opt.mcp_path = h->mcp_path;
    h->opt.sse_path = h->sse_path;
    h->opt.message_path = h->message_path;
    h->opt.ws_path = h->ws_path;
    if (!h->opt.body_max)
        h->opt.body_max = BODY_MAX_DEFAULT;
    if (h->opt.session_max <= 0)
        h->opt.session_max = SESSION_MAX_DEFAULT;
    if (h->opt.session_idle_ms <= 0)
        h->opt.session_idle_ms = IDLE_MS_DEFAULT;
    if (!h->opt.stream_queue_max)
        h->opt.stream_queue_max = QUEUE_MAX_DEFAULT;
    if (h->opt.keepalive_ms <= 0)
        h->opt.keepalive_ms = KEEPALIVE_MS_DEFAULT;
    pthread_mutex_init(&h->mu, NULL);
    return h;
}

void mcp_http_shutdown(struct mcp_http *h)
{
    pthread_mutex_lock(&h->mu);
    atomic_store(&h->closing, true);
    for (struct hstream *st = h->open; st; st = st->next_open) {
        pthread_mutex_lock(&st->mu);
        pthread_cond_broadcast(&st->cond);
        pthread_mutex_unlock(&st->mu);
    }
    pthread_mutex_unlock(&h->mu);
}

void mcp_http_free(struct mcp_http *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->closing = true;
    while (h->sessions) {
        struct hsess *hs = h->sessions;

        h->sessions = hs->next;
        hs->listed = false;
        pthread_mutex_unlock(&h->mu);
        mcp_session_close(hs->ms);
        pthread_mutex_lock(&h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_destroy(&h->mu);
    free(h->mcp_path);
    free(h->sse_path);
    free(h->message_path);
    free(h->ws_path);
    free(h->limit_name);
    free(h->ws_ctx);
    free(h);
}

bool mcp_http_is_path(const struct mcp_http *h, const char *path)
{
    return (h->mcp_path && strcmp(path, h->mcp_path) == 0) ||
           (h->sse_path && strcmp(path, h->sse_path) == 0) ||
           (h->message_path && h->sse_path && strcmp(path, h->message_path) == 0);
}

int mcp_http_handle(struct mcp_http *h, struct mg_connection *conn)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    const char *path = ri->local_uri_raw ? ri->local_uri_raw : "";
    const char *m = ri->request_method;

    if (h->mcp_path && strcmp(path, h->mcp_path) == 0) {
        if (strcmp(m, "POST") == 0)
            return on_post(h, conn);
        if (strcmp(m, "GET") == 0)
            return on_get(h, conn);
        if (strcmp(m, "DELETE") == 0)
            return on_delete(h, conn);
        return http_error(conn, 405, MCP_INVALID_REQUEST, "Allow: POST, GET, DELETE\r\n",
                          "%.16s %s is not allowed: use POST, GET or DELETE", m, path);
    }
    if (h->sse_path && strcmp(path, h->sse_path) == 0) {
        if (strcmp(m, "GET") == 0)
            return on_sse(h, conn);
        return http_error(conn, 405, MCP_INVALID_REQUEST, "Allow: GET\r\n",
                          "%.16s %s is not allowed: GET opens the legacy SSE stream; messages go "
                          "to POST %s?sessionId=",
                          m, path, h->message_path);
    }
    if (h->message_path && strcmp(path, h->message_path) == 0) {
        if (strcmp(m, "POST") == 0)
            return on_message(h, conn);
        return http_error(conn, 405, MCP_INVALID_REQUEST, "Allow: POST\r\n",
                          "%.16s %s is not allowed: use POST", m, path);
    }
    return http_error(conn, 404, MCP_INVALID_REQUEST, NULL, "no MCP endpoint at %.200s", path);
}

cJSON *mcp_http_status_json(struct mcp_http *h)
{
    cJSON *o = cJSON_CreateObject();

    pthread_mutex_lock(&h->mu);
    if (o && (!cJSON_AddNumberToObject(o, "sessions", h->nsessions - h->nws) ||
              !cJSON_AddNumberToObject(o, "streams", h->nstreams) ||
              !cJSON_AddNumberToObject(o, "websockets", h->nws) ||
              !cJSON_AddNumberToObject(o, "max", h->opt.session_max))) {
        cJSON_Delete(o);
        o = NULL;
    }
    pthread_mutex_unlock(&h->mu);
    return o;
}
