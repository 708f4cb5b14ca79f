/* daemon/api.h - runboxd's HTTP API over civetweb: POST /tool/<name>, GET /tools, GET /health.
 *
 * Every request passes, in this order: the Host check (loopback names with our port, plus the
 * bound address when it is not loopback), the Origin check (only our own loopback origins; a
 * browser page elsewhere gets 403), the bearer token (when one is set), the route (404/405),
 * then for POST: Content-Type application/json (415), the body limit (413, the connection is
 * closed without reading the body), JSON syntax and depth (400), an object (400), no NUL
 * characters (400), a known tool (404) and valid arguments (400 with "details").
 * Request-level failures are JSON {"ok":false,"error":...}; one table maps errinfo_kind to the
 * HTTP status. Tool results are 200 {"ok":true|false,"id":...}.
 *
 * Thread-safety: api_start/api_stop on the main thread; requests run on civetweb's workers and
 * share only immutable state, the vfs (any thread) and an atomic call counter. */
#ifndef DAEMON_API_H
#define DAEMON_API_H

#include <stdbool.h>
#include <stddef.h>

#include "errinfo.h"

struct tools_ctx;
struct call_service;

#define API_BODY_MAX (32u << 20) /* request body limit: 32 MiB */
#define API_THREADS  320         /* civetweb workers; a keep-alive connection or stream keeps one */
/* Idle keep-alive connections are closed after this. undici (Node's fetch) reuses a connection
 * only when the server promises more than 2 s. */
#define API_KEEPALIVE_S  5
#define API_KEEPALIVE_MS (API_KEEPALIVE_S * 1000)

struct catalog;

struct api_options {
    const char *bind;              /* numeric address to listen on; copied */
    int port;                      /* 0 = any free port */
    const char *token;             /* bearer token or NULL; copied (never logged) */
    const char *workspace;         /* shown in /health: the host path or ":memory:"; copied */
    bool fsync;                    /* shown in /health */
    bool allow_network;            /* shown in /health */
    const struct tools_ctx *tools; /* the daemon's services; borrowed, must outlive the api */
    struct call_service *calls;    /* the call service every tool call goes through; borrowed */
    int threads;                   /* civetweb workers (0: API_THREADS); a stream holds one */
    int head_timeout_ms;           /* a request head must arrive within (0: 10 s, http_guard.h) */
    int body_timeout_ms;           /* a request body must arrive within (0: 30 s) */
    int mcp_sessions;              /* MCP sessions at once (0: the library's default) */
    int mcp_session_idle_s;        /* an unused /mcp session expires (0: the default) */
    const struct catalog *catalog; /* the tools served (--tools); borrowed, must outlive the
                                      api; NULL for the whole built-in catalog */
};

struct api; /* opaque */
struct catalog;

/* Starts listening and serving. The port being taken is ERR_EXISTS with a message saying what
 * to do. Returns an owned api (stop and free with api_stop) or NULL with err set. */
struct api *api_start(const struct api_options *opt, struct errinfo *err);

/* The port actually listened on (the real one when opt->port was 0). */
int api_port(const struct api *a);

/* Stops serving (waits for the workers) and frees a. NULL is a no-op. */
void api_stop(struct api *a);

/* ---- answers, shared by the endpoint files (api.c, api_bridge.c, api_resources.c) ---- */

struct mg_connection;

/* Writes one complete JSON response: status, Content-Type application/json, an exact
 * Content-Length, Date, Cache-Control: no-store, and one extra header when hname is non-NULL
 * (e.g. "Allow", "Connection: close"). Returns status. */
int api_send_json(struct mg_connection *conn, int status, const char *body, size_t len,
                  const char *hname, const char *hval);

/* The header line that says what happens to conn after this answer: "Keep-Alive: timeout=5\r\n"
 * when civetweb keeps it, else "Connection: close\r\n" (common/http_conn.h). Every answer
 * written by hand carries it. */
const char *api_conn_line(const struct mg_connection *conn);

/* Writes {"ok":false,"error":msg} with this status (503 if memory runs out), plus the optional
 * extra header as above. Returns status. */
int api_send_error(struct mg_connection *conn, int status, const char *msg, const char *hname,
                   const char *hval);

/* ---- pure helpers, shared with the unit test ---- */

/* The HTTP status for a request-level failure of this kind (the one table). */
int api_status_for(enum errinfo_kind kind);

/* True when a Host header value is acceptable for a server on port (see the top comment).
 * bind is the bound address (a non-loopback one is allowed too; a wildcard allows any host). */
bool api_host_ok(const char *host, int port, const char *bind);

/* Checks that the HTTP server can listen on bind (a numeric address, as config checked):
 * an IPv6 address needs a civetweb built with IPv6 (have_ipv6; Debian's has none). Returns 0,
 * or -1 with err (ERR_INVALID) saying what to bind to instead. */
int api_check_bind(const char *bind, bool have_ipv6, struct errinfo *err);

/* True when the civetweb runboxd is linked with can listen on IPv6. */
bool api_have_ipv6(void);

/* True for the wildcard addresses 0.0.0.0 and ::. */
bool api_is_wildcard(const char *bind);

/* True when an Origin header value is one of our own origins (NULL = no header = fine). */
bool api_origin_ok(const char *origin, int port, const char *bind);

/* True when a Content-Type header value is application/json (parameters allowed). */
bool api_content_type_ok(const char *ctype);

/* True when the Authorization header carries "Bearer <token>"; constant time in the token. */
bool api_token_ok(const char *authorization, const char *token);

#endif /* DAEMON_API_H */
