/* common/http_guard.h - deadlines for the parts of an HTTP exchange that civetweb leaves to the
 * client: how long it may take to send a request's head, and its body.
 *
 * civetweb serves each connection on one worker thread from accept to close, and while it waits
 * for a head or a body that worker serves no one else. Its own limit (request_timeout_ms) is
 * checked only when a read returns, so a client that trickles a byte now and then keeps a worker
 * for as long as it likes: 40 such clients once left /health unanswered. The guard gives every
 * connection a deadline for the phase it is in:
 *
 *   HEAD  from the moment a worker takes the connection (or the end of the previous answer on a
 *         kept-alive connection, plus its keep-alive time) to the end of the request's head;
 *   BODY  from the end of the head to the end of its body (when the request has one);
 *   none  while a handler works, streams or waits: those have their own limits.
 *
 * When the workers run out (all but 1/16 of them hold a connection), a connection's first head
 * must arrive within HTTP_GUARD_BUSY_HEAD_MS of the worker taking it: a real client sends its
 * head in one go right after connecting, so what is still waiting then is a slow client, and its
 * worker goes to the next connection in civetweb's queue ("heads_shed"). Kept-alive
 * connections waiting for their next request are left alone (closing one could race a request
 * the client is sending).
 *
 * One watchdog thread sleeps until the earliest deadline. When one passes, it marks the
 * connection's slot expired and interrupts the worker's wait with a signal (civetweb gives no
 * handle on the socket; see http_guard.c): civetweb takes the failed poll for a broken
 * connection, its error callback or the body reader below learns that the guard cut it (408),
 * and the connection closes. Nothing is written by the watchdog itself.
 *
 * The server forwards four civetweb callbacks (init_connection, begin_request through
 * http_guard_begin, end_request, connection_close) and reads request bodies with
 * http_guard_read(). Every hook runs on the worker thread that serves the connection: the
 * guard keeps that worker's slot in a thread-local, which is how http_guard_read() finds it
 * without being given the guard (so the library's own transport code is guarded when its server
 * is, and runs as before when it is not).
 *
 * Thread-safety: any thread (internal lock); the hooks on the connection's worker thread only.
 * Lock order: civetweb's connection lock (held around connection_close), then the guard's. */
#ifndef COMMON_HTTP_GUARD_H
#define COMMON_HTTP_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

#define HTTP_GUARD_HEAD_MS        10000       /* a request's head, by default */
#define HTTP_GUARD_BODY_MS        30000       /* a request's body, by default */
#define HTTP_GUARD_BUSY_HEAD_MS   1000        /* a first head, while the workers run out */
#define HTTP_GUARD_DRAIN_MS       2000        /* what follows a refused body is read this long */
#define HTTP_GUARD_DRAIN_QUIET_MS 250         /* or until nothing came for this long */
#define HTTP_GUARD_DRAIN_MAX      (32u << 20) /* and at most this much */

struct mg_connection;

struct http_guard_options {
    int head_ms;      /* a head must arrive within this; 0: HTTP_GUARD_HEAD_MS */
    int body_ms;      /* a body must arrive within this after its head; 0: HTTP_GUARD_BODY_MS */
    int keepalive_ms; /* civetweb's keep_alive_timeout_ms (added to the next head's deadline) */
    int workers;      /* civetweb's num_threads: one slot each */
};

struct http_guard; /* opaque */

/* Starts the watchdog. Returns an owned guard (http_guard_free) or NULL with err. */
struct http_guard *http_guard_new(const struct http_guard_options *opt, struct errinfo *err);

/* Stops the watchdog and frees g. Call it after civetweb has stopped. NULL is a no-op. */
void http_guard_free(struct http_guard *g);

/* ---- the civetweb callbacks, forwarded by the server ---- */

/* init_connection: a worker took a new connection; its head's deadline starts. */
void http_guard_conn_open(struct http_guard *g, const struct mg_connection *conn);

/* The first thing begin_request does: the head has arrived. Returns 0 (and the body's deadline
 * starts when the request has one), or -1 with err: ERR_TIMEOUT when the guard cut the head
 * (answer 408), ERR_INVALID when its framing is unsound (mcp_http_check_request(): answer 400).
 * Either way the connection is already marked to close after the answer. */
int http_guard_begin(struct http_guard *g, struct mg_connection *conn, struct errinfo *err);

/* end_request: the answer is out; a kept-alive connection's next head gets its deadline. */
void http_guard_request_done(struct http_guard *g, struct mg_connection *conn);

/* connection_close: the connection ends (waits while the watchdog is busy with its socket). */
void http_guard_conn_close(struct http_guard *g);

/* ---- for handlers ---- */

/* mg_read() for a request body. Returns the bytes read (> 0), 0 at the end of the body, or -1
 * with err: ERR_TIMEOUT when the body did not arrive within its deadline (answer 408),
 * ERR_INVALID when a chunked body is malformed or the client closed the connection in the middle
 * (answer 400). After -1 the connection closes after the answer. Without a guard on this
 * thread it is mg_read() with those errors. */
int http_guard_read(struct mg_connection *conn, void *buf, size_t len, struct errinfo *err);

/* After answering a body that is not read (413, 400): reads and drops what the client sends, so
 * that the kernel does not reset the connection under the answer, and marks the connection to
 * close. It stops when the client stops sending (no 8 KiB read, civetweb's unit here, within
 * HTTP_GUARD_DRAIN_QUIET_MS: a client waiting for "100 Continue" sends nothing), after
 * HTTP_GUARD_DRAIN_MS, or after HTTP_GUARD_DRAIN_MAX bytes, whichever comes first. */
void http_guard_drain(struct mg_connection *conn);

/* For civetweb's http_error callback (the errors it finds before any handler: a malformed
 * head, an unknown method, a bad version, ...): writes the message to answer with into out (what
 * was wrong and what to send instead) and returns the status (408 when the head was cut). */
int http_guard_error_text(const struct mg_connection *conn, int status, const char *civetweb_msg,
                          char *out, size_t size);

/* {"workers","open","head_timeout_ms","body_timeout_ms","heads_cut","bodies_cut","heads_shed"}
 * for a health report. Owned (cJSON_Delete) or NULL. */
cJSON *http_guard_status_json(struct http_guard *g);

#endif /* COMMON_HTTP_GUARD_H */
