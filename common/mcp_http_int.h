/* common/mcp_http_int.h - what the HTTP transport's files share (mcp_http.c: requests,
 * Streamable HTTP and legacy SSE; mcp_http_stream.c: response streams; mcp_http_session.c:
 * sessions; mcp_http_queue.c: a client's queue; mcp_http_ws.c: WebSocket; mcp_http_serve.c: the
 * standalone server); not for other modules. Functions named mcp_http__* are private to the
 * transport.
 *
 * Locks: h->mu guards the session table and the counters; st->mu guards one stream's queue and
 * flags; hs->mu one session's stream pointers. Order: h->mu, then hs->mu, then st->mu. Nothing
 * is held while writing to a connection or calling into the engine. */
#ifndef COMMON_MCP_HTTP_INT_H
#define COMMON_MCP_HTTP_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runbox/mcp_http.h"

#define MCP_HTTP_ID_LEN 32 /* session ids: 32 lowercase hex digits (128 random bits) */

enum hs_kind { HS_STREAMABLE, HS_STATELESS, HS_SSE, HS_WS };

#define MCP_HTTP_HELD_MAX ((size_t)16 << 10) /* bytes of a session's messages held for a stream */

#define MCP_HTTP_QUEUE_SLOTS 64 /* progress tokens a queue coalesces at once (mcp_http_queue.c) */

/* One queued message. The fields after next are mcp_http_queue.c's. */
struct qmsg {
    struct qmsg *next;
    struct qmsg *newer;     /* a waiting progress notification (a slot): the newest one for its
                               token, written in its place (owned), or NULL */
    struct qmsg *next_slot; /* the next slot in its queue's slots */
    enum mcp_route_kind kind;
    size_t token_off, token_len; /* a progress notification: its progressToken in text; else 0 */
    size_t len;
    char text[]; /* len bytes + NUL */
};

/* The messages waiting for one client (a response stream, a WebSocket connection), guarded by
 * its owner's lock. A progress notification replaces one for the same token that still waits
 * (mcp_http_queue.c's DESIGN). Zero-initialised storage is an empty queue. */
struct mqueue {
    struct qmsg *head, *tail;
    struct qmsg *slots; /* the waiting progress notifications, one per token */
    unsigned nslots;    /* at most MCP_HTTP_QUEUE_SLOTS */
    size_t bytes;       /* what waits: the text that will be written */
};

enum st_mode { ST_UNSTARTED, ST_JSON, ST_SSE };

/* A response stream: one POST's answer, a GET stream, a legacy /sse stream. Only the owner
 * thread (the civetweb worker serving it) writes to its connection; other threads queue. */
struct hstream {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct mg_connection *conn;
    pthread_t owner;
    enum st_mode mode;
    bool modern; /* answers map JSON-RPC errors to HTTP statuses */
    /* Written by the owner, the connection's watcher (on_client_gone) and deliverers on other
     * threads, read by all of them, some without st->mu (the owner's writes): atomic. Waiters
     * still test them under mu, where every writer that wakes a waiter sets them. */
    atomic_bool done;    /* the final message was written (the request's answer) */
    atomic_bool dead;    /* the client went away or a write failed */
    bool ends_at_answer; /* a POST stream: it ends with its request's answer */
    bool session_ended;  /* its session ended (DELETE, the /sse stream closed) while it ran */
    struct hsess *sess;  /* the session it serves, or NULL (h->mu, while in h->open) */
    struct mqueue q;
    struct hstream *next_open; /* in h->open (h->mu), while stream_run or an inline handler
                                  (hsess_may_block) serves it */
    bool in_open;              /* listed in h->open (h->mu) */
    size_t queue_max;          /* bytes q may hold */
    int watch;                 /* the embedder's watch of the client (opt.watch), or -1 */
    struct hsess *inline_hs;   /* set (owner) when a handler answers at length on the owner
                                  thread (hsess_may_block): a client that leaves cancels it */
    char session_header[MCP_HTTP_ID_LEN + 1]; /* Mcp-Session-Id to send with the first bytes */
    const char *keepalive; /* the keep-alive header line of its answers: h's copy, keepalive_buf
                              or a literal (mcp_http__keepalive_cached) */
    bool chunked;          /* HTTP/1.1: an event stream is chunked (else it ends at the close) */
    char keepalive_buf[48];
};

/* A session of the transport: the engine's session plus how its messages reach the client. */
struct hsess {
    struct hsess *next; /* in h->sessions */
    struct mcp_http *h;
    enum hs_kind kind;
    char id[MCP_HTTP_ID_LEN + 1];
    struct mcp_session *ms;
    pthread_mutex_t mu;
    struct hstream *out; /* where origin-less messages go: the GET stream (Streamable), the /sse
                            stream (SSE); NULL when there is none now */
    /* Origin-less messages sent while no stream was open (a list change just after initialize,
     * before the client's GET arrived): the next stream starts with them. The newest
     * MCP_HTTP_HELD_MAX bytes are kept (hs->mu). */
    struct qmsg *held, *held_tail;
    size_t held_bytes;
    int64_t last_used_ms;
    unsigned busy; /* requests of it being served now (h->mu) */
    bool listed;   /* in h->sessions */
    bool ending;   /* ended while busy: the last request served closes it (h->mu) */
    void *ws;      /* HS_WS: the WebSocket connection state (mcp_http_ws.c) */
};

struct mcp_http {
    struct mcp_http_options opt; /* the strings point into the copies below */
    char *mcp_path, *sse_path, *message_path, *ws_path, *limit_name;
    pthread_mutex_t mu;
    struct hsess *sessions;
    struct hstream *open; /* the streams being served now, to wake them at shutdown */
    int nsessions;        /* listed sessions (Streamable, SSE, WebSocket) */
    int nstreams;         /* long-lived streams open now */
    int nws;
    atomic_bool closing;
    void *ws_ctx; /* owned: civetweb's WebSocket handler data (mcp_http_ws.c) */
    /* mcp_http__keepalive_header() of the context mcp_http_attach_ws() was given, worked out
     * there once (civetweb looks each option up by name); written once, before ka_ctx is
     * published, and never again. Another context's requests work it out each time. */
    _Atomic(const struct mg_context *) ka_ctx;
    char ka_text[48];
};

/* ---- mcp_http_stream.c ---- */

/* Writes a complete response: status, Content-Type, exact length, and the session id when set.
 * An answer whose extra headers close the connection does not also say how long it stays. ka is
 * the keep-alive header line (mcp_http__keepalive_cached), or NULL to work it out here. */
int mcp_http__write_answer(struct mg_connection *conn, int status, const char *ctype,
                           const char *body, size_t len, const char *session_id, const char *extra,
                           const char *ka);

/* A JSON-RPC error answer (id null) with this HTTP status. */
int mcp_http__http_error(struct mg_connection *conn, int status, int code, const char *extra,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Writes a, b and c (each may be empty) as one piece of st's event stream: one chunk, or the
 * bare bytes when the stream is not chunked (HTTP/1.0). */
int mcp_http__write_piece(const struct hstream *st, const char *a, size_t alen, const char *b,
                          size_t blen, const char *c, size_t clen);

/* Sets up st for the request conn is serving; its owner is the calling thread. */
void mcp_http__stream_init(struct hstream *st, struct mcp_http *h, struct mg_connection *conn,
                           bool modern);

/* Frees what st holds (its queue), once no thread can reach it. */
void mcp_http__stream_destroy(struct hstream *st);

/* The head of an event stream. HTTP/1.0 has no chunks: there the stream ends with the
 * connection, which civetweb then closes even for a client that asked to keep it. */
int mcp_http__start_sse(struct hstream *st);

/* A message for stream st (the engine's send, any thread). */
void mcp_http__stream_deliver(struct hstream *st, const char *json, size_t len,
                              enum mcp_route_kind kind);

/* Starts watching st's client, once (owner thread). */
void mcp_http__stream_watch(struct mcp_http *h, struct hstream *st);

/* Lists st in h->open (once), where the session's end finds it (owner thread). */
void mcp_http__stream_list(struct mcp_http *h, struct hstream *st);

/* Stops watching st's client: on_client_gone neither runs nor will run (owner thread). */
void mcp_http__stream_unwatch(struct mcp_http *h, struct hstream *st);

/* The owner's loop: writes what others queue on st until its answer is written (a POST's
 * stream), or until the client leaves, the session ends or the transport shuts down (long_lived:
 * a GET or /sse stream, with an SSE comment every keepalive_ms). */
void mcp_http__stream_run(struct mcp_http *h, struct hstream *st, bool long_lived);

/* The header line that tells the client how long the server keeps an idle connection
 * ("Keep-Alive: timeout=S\r\n", from civetweb's keep_alive_timeout_ms), or that it closes it
 * after this answer ("Connection: close\r\n": keep-alive is off, or civetweb closes this
 * connection, http_conn.h). Without it a client reuses a connection the server is closing at
 * that moment, and its next request fails ("fetch failed" in undici). Returns buf or a literal. */
const char *mcp_http__keepalive_header(const struct mg_connection *conn, char *buf, size_t size);

/* The same for a context, for connections that civetweb keeps; mcp_http_attach_ws() keeps
 * ctx's in h (ka_ctx, ka_text). */
const char *mcp_http__keepalive_of(const struct mg_context *ctx, char *buf, size_t size);

/* mcp_http__keepalive_header() by way of h's copy when conn is of the context it was made for:
 * the copy, or buf filled in. */
const char *mcp_http__keepalive_cached(struct mcp_http *h, const struct mg_connection *conn,
                                       char *buf, size_t size);

/* A queued message holding a copy of json[0..len) (NUL-terminated), next NULL; NULL when out
 * of memory. Free with free() (one that was in an mqueue: as mcp_http__queue_pop returns it). */
struct qmsg *mcp_http__qmsg(const char *json, size_t len, enum mcp_route_kind kind);

/* ---- mcp_http_queue.c (pure: no lock, no I/O) ---- */

/* True when json is a progress notification as the engine builds it; *off and *tlen are then
 * where its progressToken's JSON text is in json. */
bool mcp_http__progress_token(const char *json, size_t len, size_t *off, size_t *tlen);

/* Queues m at q's end, or, when m is a progress notification (kind MCP_ROUTE_REQUEST) and one
 * for its token waits in q, in that one's place. Takes ownership of m. -1 when q would then hold
 * more than max bytes: q is unchanged and m freed. */
int mcp_http__queue_push(struct mqueue *q, struct qmsg *m, size_t max);

/* Takes q's first message: owned, free with free(); NULL when q is empty. */
struct qmsg *mcp_http__queue_pop(struct mqueue *q);

/* Puts the list head..tail (bytes long, of plain mcp_http__qmsg() messages) before what waits
 * in q; takes ownership of it. */
void mcp_http__queue_prepend(struct mqueue *q, struct qmsg *head, struct qmsg *tail, size_t bytes);

/* Frees what waits in q and leaves it empty. */
void mcp_http__queue_cleanup(struct mqueue *q);

/* ---- mcp_http_session.c ---- */

/* Hands the session's held messages to st, its new stream, ahead of anything else (hs->mu
 * held; st is not started yet, so only its queue is touched). */
void mcp_http__give_held(struct hsess *hs, struct hstream *st);

/* The listed Streamable session with this id, marked busy; NULL when there is none. */
struct hsess *mcp_http__session_get(struct mcp_http *h, const char *id);

/* Ends one request's use of hs; hs may be gone once this returns. */
void mcp_http__session_put(struct mcp_http *h, struct hsess *hs);

/* A legacy /sse session by id (for POST /message); NULL when there is none. */
struct hsess *mcp_http__sse_session_get(struct mcp_http *h, const char *id);

/* A new session of kind (not yet listed), with its engine session. NULL with err. */
struct hsess *mcp_http__session_new(struct mcp_http *h, enum hs_kind kind, unsigned mflags,
                                    struct errinfo *err);

/* Lists hs (it counts against session_max). When the table is full, the Streamable session used
 * least recently with no request being served (and so no stream) is ended to make room; -1 with
 * err (503 text) when every session is in use. */
int mcp_http__session_list(struct mcp_http *h, struct hsess *hs, struct errinfo *err);

/* Unlists and closes hs: the engine session is closed (its calls are cancelled) and hs freed once
 * it is gone. While requests of hs are being served (busy), their streams end at once and the
 * close waits for the last of them, which still uses hs. */
void mcp_http__session_end(struct mcp_http *h, struct hsess *hs);

/* ---- mcp_http_checks.c ---- */

struct mg_request_info;

/* The header part of mcp_http_check_head() (not the target): safe on a request civetweb parsed
 * but refused, whose path fields may be stale. */
int mcp_http__check_fields(const struct mg_request_info *ri, struct errinfo *err);

/* ---- mcp_http_ws.c ---- */

/* Sends one message on a WebSocket session (any thread); kind as the engine routed it. */
void mcp_http__ws_send(struct hsess *hs, const char *json, size_t len, enum mcp_route_kind kind);

/* Frees the WebSocket state of a session that is gone. */
void mcp_http__ws_free(void *ws);

#endif /* COMMON_MCP_HTTP_INT_H */
