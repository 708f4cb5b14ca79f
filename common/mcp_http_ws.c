/* common/mcp_http_ws.c - MCP over WebSocket (see runbox/mcp_http.h): subprotocol "mcp", one
 * JSON-RPC message per text frame, one session per connection.
 *
 * DESIGN: civetweb's worker reads the connection and calls the data handler for each frame;
 * that thread (the reader) feeds the engine. Messages from other threads (a long call answering,
 * a broadcast) are queued and written by a thread of the connection's own, so that nobody
 * sending waits for a client that does not read; a queue that passes stream_queue_max closes the
 * connection (1008), progress replacing the waiting progress of its token (mcp_http_queue.c). A
 * message the reader produces itself (the answer of a quick call) is written at once when nothing
 * waits or is being written, saving the hand-over to the writer; the reader may block on its own
 * client, which only delays that client's next frame. Fragmented messages are put together up to
 * body_max. A binary message (one frame or several) is answered with one JSON-RPC error; a message
 * too large closes the connection with 1009, and a fragment out of place (a data frame inside a
 * fragmented message, a continuation outside one) with 1002. Each close frame is queued behind what
 * is waiting for the client, so the error that explains it arrives first, and nothing follows it. A
 * client that closes the connection ends the session, which cancels its calls. */
#include "mcp_http_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <civetweb.h>

#include "jsonrpc.h"
#include "log.h"

#define WS_ONE_WRITE_MAX ((size_t)64 << 10) /* frames up to this size are sent in one write */

struct wsconn {
    struct mcp_http *h;
    struct hsess *hs;
    struct mg_connection *conn;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct mqueue q;
    bool stop;       /* the connection is closing: the writer ends */
    bool overflow;   /* the client stopped reading: close at once, unflushed */
    bool closing;    /* a close frame is queued: nothing more is sent */
    bool close_sent; /* the writer wrote it */
    char close_frame[32];
    size_t close_len;
    bool writer_started, admitted;
    unsigned writing; /* messages being written now (by the writer, or the reader directly) */
    pthread_t writer;
    pthread_t reader; /* civetweb's worker serving the connection */
    enum { FRAG_NONE, FRAG_TEXT, FRAG_SKIP } frag_state; /* a fragmented message under way */
    char *frag; /* the text message being put together (FRAG_TEXT) */
    size_t frag_len;
};

/* Writes one frame (final, unmasked, uncompressed: the frame mg_websocket_write makes) with one
 * mg_write, so it leaves in one segment: mg_websocket_write writes its header and its payload
 * apart, two sends, and the client woke for the header alone. A frame that does not fit the copy
 * (or no memory for it) goes through mg_websocket_write. */
static void ws_write(struct wsconn *w, int opcode, const char *data, size_t len)
{
    unsigned char head[10];
    size_t hlen = 2;
    char *one = len <= WS_ONE_WRITE_MAX ? malloc(sizeof(head) + len) : NULL;

    head[0] = (unsigned char)(0x80u | ((unsigned)opcode & 0x0fu));
    if (len < 126) {
        head[1] = (unsigned char)len;
    } else if (len <= 0xffff) {
        head[1] = 126;
        head[2] = (unsigned char)(len >> 8);
        head[3] = (unsigned char)len;
        hlen = 4;
    } else {
        head[1] = 127;
        for (int i = 0; i < 8; i++)
            head[2 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
        hlen = 10;
    }
    mg_lock_connection(w->conn);
    if (one) {
        memcpy(one, head, hlen);
        if (len)
            memcpy(one + hlen, data, len);
        mg_write(w->conn, one, hlen + len);
    } else {
        mg_websocket_write(w->conn, opcode, data, len);
    }
    mg_unlock_connection(w->conn);
    free(one);
}

/* True when the writer has something to do (w->mu held). */
static bool writer_has_work(const struct wsconn *w)
{
    return w->stop || w->overflow || (!w->close_sent && (w->q.head || w->closing));
}

static void *writer_main(void *arg)
{
    struct wsconn *w = arg;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        struct qmsg *m;

        while (!writer_has_work(w))
            pthread_cond_wait(&w->cond, &w->mu);
        if (w->stop)
            break;
        if (w->overflow || (w->closing && !w->q.head)) {
            /* An overflow closes at once: the client is not reading what waits. */
            char frame[sizeof(w->close_frame)];
            size_t len = w->close_len;

            memcpy(frame, w->close_frame, len);
            w->overflow = false;
            pthread_mutex_unlock(&w->mu);
            ws_write(w, MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE, frame, len);
            pthread_mutex_lock(&w->mu);
            w->close_sent = true;
            pthread_cond_broadcast(&w->cond);
            continue;
        }
        m = mcp_http__queue_pop(&w->q);
        w->writing++;
        pthread_mutex_unlock(&w->mu);
        ws_write(w, MG_WEBSOCKET_OPCODE_TEXT, m->text, m->len);
        free(m);
        pthread_mutex_lock(&w->mu);
        w->writing--;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* The reader writes its own message at once when nothing is queued or being written (the order
 * of its messages is kept: an earlier one is either written or still queued). True when it did. */
static bool reader_writes(struct wsconn *w, const char *json, size_t len)
{
    if (!pthread_equal(pthread_self(), w->reader) || w->q.head || w->writing)
        return false;
    w->writing++;
    pthread_mutex_unlock(&w->mu);
    ws_write(w, MG_WEBSOCKET_OPCODE_TEXT, json, len);
    pthread_mutex_lock(&w->mu);
    w->writing--;
    /* No broadcast: nobody waits for writing to fall (the writer waits for work, which this
     * adds none of), and waking the writer here cost a futile thread wake-up per answer. */
    return true;
}

void mcp_http__ws_send(struct hsess *hs, const char *json, size_t len, enum mcp_route_kind kind)
{
    struct wsconn *w = hs->ws;
    struct qmsg *m;

    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    if (w->stop || w->closing || reader_writes(w, json, len)) {
        pthread_mutex_unlock(&w->mu);
        return;
    }
    pthread_mutex_unlock(&w->mu);
    m = mcp_http__qmsg(json, len, kind);
    if (!m)
        return;
    pthread_mutex_lock(&w->mu);
    if (w->stop || w->closing) {
        pthread_mutex_unlock(&w->mu);
        free(m);
        return;
    }
    /* A progress notification replaces one for its token that still waits (as on a stream). */
    if (mcp_http__queue_push(&w->q, m, w->h->opt.stream_queue_max) < 0) {
        log_warn("mcp-http: a WebSocket client is not reading (%zu bytes waiting); closing it",
                 w->q.bytes);
        w->overflow = true;
        w->closing = true;
        memcpy(w->close_frame, "\x03\xf0too slow", 10); /* 1008 */
        w->close_len = 10;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->mu);
        return;
    }
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

void mcp_http__ws_free(void *arg)
{
    struct wsconn *w = arg;

    if (!w)
        return;
    mcp_http__queue_cleanup(&w->q);
    free(w->frag);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* ---- civetweb's handlers ---- */

struct ws_ctx {
    struct mcp_http *h;
    bool (*origin_ok)(void *ctx, const char *origin);
    void *origin_ctx;
};

static int on_connect(const struct mg_connection *conn, void *cbdata)
{
    struct ws_ctx *x = cbdata;
    const char *origin = mg_get_header(conn, "Origin");

    if (x->origin_ok && !x->origin_ok(x->origin_ctx, origin)) {
        log_info("mcp-http: a WebSocket upgrade from Origin %.100s was refused", origin);
        return 1; /* civetweb refuses the upgrade */
    }
    return 0;
}

static void on_ready(struct mg_connection *conn, void *cbdata)
{
    struct ws_ctx *x = cbdata;
    struct mcp_http *h = x->h;
    struct errinfo err = {0};
    struct wsconn *w = calloc(1, sizeof(*w));
    struct hsess *hs = NULL;

    if (w) {
        w->h = h;
        w->conn = conn;
        w->reader = pthread_self();
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cond, NULL);
        w->admitted = !h->opt.admit || h->opt.admit(h->opt.ctx, &err) == 0;
        hs = w->admitted ? mcp_http__session_new(h, HS_WS, MCP_SESSION_NO_BATCH, &err) : NULL;
    }
    if (hs) {
        hs->ws = w;
        w->hs = hs;
        if (mcp_http__session_list(h, hs, &err) < 0) {
            hs->ws = NULL;
            mcp_session_close(hs->ms);
            hs = NULL;
            w->hs = NULL;
        }
    }
    if (hs && pthread_create(&w->writer, NULL, writer_main, w) == 0) {
        w->writer_started = true;
        mg_set_user_connection_data(conn, w);
        return;
    }
    /* Refused (full, no memory): say why, then close. */
    {
        char *line = jsonrpc_build_error(NULL, MCP_INTERNAL_ERROR,
                                         err.msg[0] ? err.msg : "out of memory", NULL);

        if (line) {
            mg_websocket_write(conn, MG_WEBSOCKET_OPCODE_TEXT, line, strlen(line));
            free(line);
        }
        mg_websocket_write(conn, MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE,
                           "\x03\xf5"
                           "full",
                           6); /* 1013 */
    }
    if (hs)
        mcp_http__session_end(h, hs); /* frees w with the session */
    else if (w) {
        if (w->admitted && h->opt.release)
            h->opt.release(h->opt.ctx);
        mcp_http__ws_free(w);
    }
    mg_set_user_connection_data(conn, NULL);
}

/* Answers a frame the protocol has no use for with a JSON-RPC error (the session goes on). */
static void refuse_frame(struct wsconn *w, const char *why)
{
    char *line = jsonrpc_build_error(NULL, MCP_INVALID_REQUEST, why, NULL);

    if (line) {
        mcp_http__ws_send(w->hs, line, strlen(line), MCP_ROUTE_RESPONSE);
        free(line);
    }
}

/* Says why, then closes with this status (2 bytes + reason): both go through the writer, after
 * what waits for the client, and this returns once the close is written (or the client left).
 * Returns 0, for civetweb to end the connection. */
static int fail_connection(struct wsconn *w, const char *why, const char *status_reason, size_t len)
{
    refuse_frame(w, why);
    pthread_mutex_lock(&w->mu);
    if (!w->closing) {
        memcpy(w->close_frame, status_reason, len);
        w->close_len = len;
        w->closing = true;
        pthread_cond_broadcast(&w->cond);
    }
    while (!w->close_sent && !w->stop)
        pthread_cond_wait(&w->cond, &w->mu);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

/* A text or continuation frame of a message: puts fragments together, hands whole messages to
 * the engine. Returns what on_data returns. */
static int on_message_frame(struct wsconn *w, int opcode, bool fin, char *data, size_t len)
{
    size_t max = w->h->opt.body_max;

    if (opcode == MG_WEBSOCKET_OPCODE_CONTINUATION && w->frag_state == FRAG_NONE)
        return fail_connection(w, "a continuation frame came with no fragmented message under way",
                               "\x03\xea"
                               "stray continuation",
                               20); /* 1002 */
    if (opcode != MG_WEBSOCKET_OPCODE_CONTINUATION && w->frag_state != FRAG_NONE)
        return fail_connection(w, "a new message began before the fragmented one ended",
                               "\x03\xea"
                               "fragment expected",
                               19);   /* 1002 */
    if (w->frag_state == FRAG_SKIP) { /* the rest of a refused binary message */
        if (fin)
            w->frag_state = FRAG_NONE;
        return 1;
    }
    if (len > max || w->frag_len + len > max) {
        char why[160];

        snprintf(why, sizeof(why),
                 "a message of more than %zu bytes is over the limit; the connection is closed",
                 max);
        return fail_connection(w, why,
                               "\x03\xf1"
                               "too big",
                               9); /* 1009 */
    }
    if (fin && w->frag_state == FRAG_NONE) {
        mcp_session_handle(w->hs->ms, data, len, NULL);
        return 1;
    }
    {
        char *nb = realloc(w->frag, w->frag_len + len + 1);

        if (!nb)
            return 0;
        memcpy(nb + w->frag_len, data, len);
        w->frag = nb;
        w->frag_len += len;
        w->frag_state = FRAG_TEXT;
    }
    if (!fin)
        return 1;
    mcp_session_handle(w->hs->ms, w->frag, w->frag_len, NULL);
    free(w->frag);
    w->frag = NULL;
    w->frag_len = 0;
    w->frag_state = FRAG_NONE;
    return 1;
}

static int on_data(struct mg_connection *conn, int bits, char *data, size_t len, void *cbdata)
{
    struct wsconn *w = mg_get_user_connection_data(conn);
    int opcode = bits & 0x0f;
    bool fin = (bits & 0x80) != 0;

    (void)cbdata;
    if (!w || !w->hs)
        return 0;
    switch (opcode) {
    case MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE:
        return 0;
    case MG_WEBSOCKET_OPCODE_PING:
        ws_write(w, MG_WEBSOCKET_OPCODE_PONG, data, len);
        return 1;
    case MG_WEBSOCKET_OPCODE_PONG:
        return 1;
    case MG_WEBSOCKET_OPCODE_BINARY:
        if (w->frag_state != FRAG_NONE)
            break; /* out of place: on_message_frame says so */
        refuse_frame(w, "binary frames are not MCP messages: send each JSON-RPC message as one "
                        "text frame");
        if (!fin)
            w->frag_state = FRAG_SKIP;
        return 1;
    case MG_WEBSOCKET_OPCODE_TEXT:
    case MG_WEBSOCKET_OPCODE_CONTINUATION:
        break;
    default:
        return 1;
    }
    return on_message_frame(w, opcode, fin, data, len);
}

static void on_close(const struct mg_connection *conn, void *cbdata)
{
    struct wsconn *w = mg_get_user_connection_data(conn);
    struct mcp_http *h = ((struct ws_ctx *)cbdata)->h;

    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
    if (w->writer_started)
        pthread_join(w->writer, NULL);
    if (w->admitted && h->opt.release)
        h->opt.release(h->opt.ctx);
    mg_set_user_connection_data(conn, NULL);
    /* The session's calls are cancelled; w goes with the session (mcp_http__ws_free). */
    mcp_http__session_end(h, w->hs);
}

/* Works out ctx's keep-alive header line once for h's answers (mcp_http__keepalive_cached):
 * the first context attached keeps it. */
static void keep_keepalive(struct mcp_http *h, const struct mg_context *ctx)
{
    char buf[sizeof(h->ka_text)];

    pthread_mutex_lock(&h->mu);
    if (!atomic_load_explicit(&h->ka_ctx, memory_order_relaxed)) {
        snprintf(h->ka_text, sizeof(h->ka_text), "%s",
                 mcp_http__keepalive_of(ctx, buf, sizeof(buf)));
        atomic_store_explicit(&h->ka_ctx, ctx, memory_order_release);
    }
    pthread_mutex_unlock(&h->mu);
}

int mcp_http_attach_ws(struct mcp_http *h, struct mg_context *ctx,
                       bool (*origin_ok)(void *ctx, const char *origin), void *origin_ctx,
                       struct errinfo *err)
{
    static const char *protocols[] = {"mcp"};
    static struct mg_websocket_subprotocols subs = {1, protocols};
    struct ws_ctx *x;

    keep_keepalive(h, ctx);
    if (!h->ws_path)
        return 0;
    if (!mg_check_feature(MG_FEATURES_WEBSOCKET)) {
        errinfo_set(err, ERR_UNAVAILABLE, "this civetweb has no WebSocket support");
        return -1;
    }
    /* Freed with the transport (mcp_http_free), after civetweb stopped. */
    x = calloc(1, sizeof(*x));
    if (!x) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the WebSocket endpoint");
        return -1;
    }
    x->h = h;
    x->origin_ok = origin_ok;
    x->origin_ctx = origin_ctx;
    free(h->ws_ctx);
    h->ws_ctx = x;
    mg_set_websocket_handler_with_subprotocols(ctx, h->ws_path, &subs, on_connect, on_ready,
                                               on_data, on_close, x);
    return 0;
}
