/* runbox/mcp_http.h - MCP over HTTP with civetweb (part of librunbox-mcp): Streamable HTTP
 * (2025-03-26 to 2025-11-25 with sessions, 2026-07-28 stateless), the legacy HTTP+SSE pair of
 * 2024-11-05, and MCP over WebSocket (subprotocol "mcp", one message per text frame).
 *
 * An embedder with its own civetweb server routes requests for the MCP paths to
 * mcp_http_handle() after its own checks (Host, Origin, token), and registers the WebSocket
 * endpoint with mcp_http_attach_ws(). One without (the conformance fixture) calls
 * mcp_http_serve(), which runs civetweb on a loopback address and does the local server's checks
 * itself (mcp_http_host_ok, mcp_http_origin_ok).
 *
 * Streamable HTTP (POST, GET, DELETE on mcp_path):
 * - POST carries one message (or, after negotiating 2025-03-26, a batch). Accept must list
 *   application/json and text/event-stream (406), Content-Type must be application/json (415),
 *   the body is at most body_max bytes (413), and must be JSON (400, -32700).
 * - A modern request (2026-07-28 _meta) is served statelessly: the MCP-Protocol-Version,
 *   Mcp-Method and Mcp-Name headers must match the body (400, -32020); its errors map to 400
 *   (-32602, -32020, -32021, -32022) and 404 (-32601). Mcp-Session-Id is ignored.
 * - initialize without Mcp-Session-Id opens a legacy session; its answer carries the new
 *   Mcp-Session-Id (random, visible ASCII). Every later request of the session must carry it
 *   (400 without, 404 for an unknown or expired one); DELETE ends it; GET opens its stream of
 *   server notifications (one at a time: 409).
 * - A request is answered as application/json, or as text/event-stream when a message about it
 *   (progress, a log, a server request) comes before its answer. Notifications and responses
 *   are answered 202.
 * - The client closing a response stream cancels its request.
 * At session_max sessions, a new one takes the place of the Streamable session used least
 * recently that has no request being served and no stream open (clients that exit without
 * DELETE leave such sessions); when every session is in use, it is refused with 503 naming the
 * limit. A session unused for session_idle_ms expires. A stream whose client stops reading is
 * closed once stream_queue_max bytes wait for it.
 *
 * Thread-safety: any thread. mcp_http_handle() blocks its caller (a civetweb worker) for as long
 * as the request's answer takes, or for the life of a stream. */
#ifndef RUNBOX_MCP_HTTP_H
#define RUNBOX_MCP_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "errinfo.h"
#include "mcp.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mg_connection;
struct mg_context;

struct mcp_http_options {
    struct mcp_server *server; /* borrowed; outlives the transport */
    const char *mcp_path;      /* Streamable HTTP, e.g. "/mcp"; NULL: none */
    const char *sse_path;      /* legacy stream, e.g. "/sse"; NULL: no legacy HTTP+SSE */
    const char *message_path;  /* legacy POST endpoint, e.g. "/message" (with sse_path) */
    const char *ws_path;       /* WebSocket, e.g. "/ws"; NULL: none */
    size_t body_max;           /* largest POST body; 0: 32 MiB */
    int session_max;           /* open sessions at most (Streamable, SSE and WebSocket); 0: 256 */
    int session_idle_ms;       /* a Streamable HTTP session unused this long expires; 0: 1 h */
    size_t stream_queue_max;   /* bytes waiting for one slow stream; 0: 8 MiB */
    int keepalive_ms;          /* an idle stream gets an SSE comment this often; 0: 15 s */
    /* Optional hooks of the embedder. admit/release bound the long-lived streams (a GET
     * stream, an SSE response held open, a legacy /sse stream, a WebSocket): admit returns -1
     * with err to refuse one (503 with err's message). watch starts watching a connection for
     * the client going away (fn(arg) then runs once, from any thread) and returns a handle for
     * unwatch, or -1; without it, a client that leaves is noticed when a write to it fails. */
    int (*admit)(void *ctx, struct errinfo *err);
    void (*release)(void *ctx);
    int (*watch)(void *ctx, struct mg_connection *conn, void (*fn)(void *arg), void *arg);
    void (*unwatch)(void *ctx, int handle);
    /* The names the session limit and idle time go by for users ("--mcp-sessions"), for the 503
     * message; NULL: "session_max". */
    const char *session_max_name;
    void *ctx;
};

struct mcp_http; /* opaque */

/* Copies opt (the strings too). Returns an owned transport (mcp_http_free) or NULL with err. */
struct mcp_http *mcp_http_new(const struct mcp_http_options *opt, struct errinfo *err);

/* Ends every stream being served at once (their requests return), and makes new ones end at
 * once: for a server about to stop. Any thread. */
void mcp_http_shutdown(struct mcp_http *h);

/* Closes every session. Call it after civetweb stopped serving. NULL is a no-op. */
void mcp_http_free(struct mcp_http *h);

/* True when path (no query) is one of h's HTTP endpoints (not the WebSocket one). */
bool mcp_http_is_path(const struct mcp_http *h, const char *path);

/* Serves one request for an MCP endpoint. The caller did its own checks. Returns the HTTP status
 * it answered with (for the caller's logs). */
int mcp_http_handle(struct mcp_http *h, struct mg_connection *conn);

/* Registers the WebSocket endpoint (ws_path) on ctx, before serving. origin_ok (may be NULL)
 * vets the upgrade request's Origin header (NULL header = no Origin); a refused one is 403. */
int mcp_http_attach_ws(struct mcp_http *h, struct mg_context *ctx,
                       bool (*origin_ok)(void *ctx, const char *origin), void *origin_ctx,
                       struct errinfo *err);

/* {"sessions":N,"streams":N,"websockets":N} for a health report. Owned or NULL. */
cJSON *mcp_http_status_json(struct mcp_http *h);

/* ---- a whole server, for embedders without one ---- */

struct mcp_http_server; /* opaque */

/* Runs civetweb on bind:port (port 0: any free one) serving only the endpoints of opt (Host must
 * name the loopback address with the port, a browser Origin is refused: 403). threads: civetweb
 * workers (0: 64). Returns an owned server or NULL with err. */
struct mcp_http_server *mcp_http_serve(const struct mcp_http_options *opt, const char *bind,
                                       int port, int threads, struct errinfo *err);

int mcp_http_server_port(const struct mcp_http_server *srv);

/* Stops serving and frees. NULL is a no-op. */
void mcp_http_server_stop(struct mcp_http_server *srv);

/* ---- the checks of a local server (pure) ---- */

/* True when a Host header value names this server: localhost, 127.0.0.1 or [::1] (any case)
 * with port or none; bind (the bound address) too when it is not loopback; any host when bind
 * is 0.0.0.0 or ::. */
bool mcp_http_host_ok(const char *host, int port, const char *bind);

/* True when an Origin header value is absent (NULL) or http:// + one of those names + :port. */
bool mcp_http_origin_ok(const char *origin, int port, const char *bind);

/* ---- strict framing (RFC 9112), for a server on civetweb 1.15 ---- */

struct mg_request_info;

/* Refuses a request whose framing or target could be read two ways, which civetweb accepts:
 * Content-Length together with Transfer-Encoding; a Transfer-Encoding other than exactly
 * "chunked" (or on HTTP/1.0); a Content-Length that is not decimal digits; a second Host, Origin,
 * Content-Length, Transfer-Encoding, Content-Type or Authorization header; whitespace between a
 * header name and its colon; MG_MAX_HEADERS header lines or more (civetweb ignores the rest);
 * an absolute-form target; %00 in the path or the query, or a malformed %-escape in the path.
 * Returns 0, or -1 with err (ERR_INVALID: answer 400 and close the connection) naming the
 * problem and what to send instead. Pure: it reads ri, whose header strings must lie in
 * civetweb's request buffer as civetweb left them (a space before a colon is told by the NUL
 * bytes civetweb wrote over it), and whose path must not be decoded yet. */
int mcp_http_check_head(const struct mg_request_info *ri, struct errinfo *err);

/* mcp_http_check_head() on conn's request, then the path's %XX escapes decoded in place when
 * civetweb runs with decode_url "no" (which it must, for %00 to be seen before it cuts the path;
 * mcp_http_serve does). Call it first in begin_request. Returns 0 or -1 with err as above. */
int mcp_http_check_request(struct mg_connection *conn, struct errinfo *err);

/* Decodes the %XX escapes of path in place (a malformed one is kept as it is). */
void mcp_http_decode_path(char *path);

#ifdef __cplusplus
}
#endif

#endif /* RUNBOX_MCP_HTTP_H */
