/* daemon/api_events.h - GET /events: the daemon's event feed (events.h) as Server-Sent Events,
 * for runbox (the stdio proxy forwards them to its MCP client), `runbox logs -f` and the status
 * page. Also the SSE writing that POST /tool/<name> uses for its progress stream.
 *
 * Query: console=<min level> (debug|log|info|warn|error|none; default debug = every entry; the
 * ranks are debug < log = info < warn < error), source=exec|studio|daemon (only that source),
 * since=<console id> (first replay the entries after that id still in the ring; the
 * Last-Event-ID header does the same), since_ts=<ms since the epoch> (replay the entries
 * written at or after that time; with since, both must hold), uri=<resource URI> (repeatable, up to
 * API_EVENTS_URIS_MAX: resource_updated events for those; the daemon watches them while the
 * stream is open).
 * Events: `console` (id: the console id; data: the entry as console_logs gives it), `ready`
 * ({"latest_id":N}, once, after the replay), `list_changed` ({"lists":[...]}),
 * `resource_updated` ({"uri":...}), `dropped` ({"count":N}: a reader that fell behind lost N
 * events; re-read with console_logs since_id), and a ": keepalive" comment every
 * API_EVENTS_KEEPALIVE_S seconds.
 * A stream holds a civetweb worker and draws from the call service's stream budget; a reader
 * that stops reading costs at most API_EVENTS_QUEUE_MAX bytes of queue (the rest is dropped and
 * counted). Thread-safety: any thread. */
#ifndef DAEMON_API_EVENTS_H
#define DAEMON_API_EVENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "errinfo.h"

#define API_EVENTS_URIS_MAX    64
#define API_EVENTS_KEEPALIVE_S 15
#define API_EVENTS_QUEUE_MAX   ((size_t)1 << 20)

struct mg_connection;
struct tools_ctx;
struct call_service;
struct connwatch;
struct watch;

struct api_events_options {
    const struct tools_ctx *tools; /* its events and console; borrowed */
    struct call_service *calls;    /* the stream budget; borrowed */
    struct connwatch *watch;       /* ends a stream whose reader went away; borrowed */
    struct watch *resources;       /* resource watches (uri=); borrowed, may be NULL */
};

struct api_events; /* opaque */

/* Returns an owned endpoint (api_events_free) or NULL with err. */
struct api_events *api_events_new(const struct api_events_options *opt, struct errinfo *err);

/* Ends every open stream (their handlers return soon after). For api_stop, before mg_stop. */
void api_events_shutdown(struct api_events *ae);

/* Frees it; every stream must have ended. NULL is a no-op. */
void api_events_free(struct api_events *ae);

/* Serves GET /events on a civetweb worker until the stream ends; returns the HTTP status. */
int api_events_handle(struct api_events *ae, struct mg_connection *conn, const char *method);

/* ---- Server-Sent Events on a civetweb connection (shared with POST /tool) ---- */

/* An event stream being written. On HTTP/1.1 its body is chunked, so its end is a last chunk
 * and the connection stays open for the client's next request. A body that ended only when the
 * connection closed never ended for a client that kept the connection: civetweb, which does not
 * see the head we write, waited for that next request until its keep-alive timer closed the
 * connection, 5 s after the answer. HTTP/1.0 has no chunks: there the body ends with the
 * connection, which civetweb closes (api_sse_can_end tells a handler whether a stream can end
 * before the client goes). */
struct api_sse {
    struct mg_connection *conn;
    bool chunked;
};

/* True when a stream on this request can end while the connection stays usable: HTTP/1.1
 * (chunked), or a connection civetweb closes after the answer anyway (HTTP/1.0 without
 * Connection: keep-alive; http_conn.h). POST /tool streams only then: an HTTP/1.0 client that
 * keeps its connection gets the plain answer. */
bool api_sse_can_end(struct mg_connection *conn);

/* Writes the 200 answer's head for an event stream on conn. -1 when the client is gone. */
int api_sse_begin(struct api_sse *sse, struct mg_connection *conn);

/* Writes one event: "event: <event>\n" ("id: <id>\n" when id), then data as "data:" lines
 * (data holds no newline when it is compact JSON), then the blank line. -1 when the client is
 * gone. */
int api_sse_event(struct api_sse *sse, const char *event, const char *id, const char *data,
                  size_t len);

/* Writes text that is already events or a ": comment\n\n" (as UTF-8, each bad byte U+FFFD).
 * -1 when the client is gone. */
int api_sse_write(struct api_sse *sse, const char *text, size_t len);

/* Ends the stream's body (the last chunk); the handler then returns. */
void api_sse_end(struct api_sse *sse);

#endif /* DAEMON_API_EVENTS_H */
