/* daemon/api_mcp.h - runboxd's MCP endpoints: Streamable HTTP on /mcp, the legacy HTTP+SSE pair
 * (GET /sse, POST /message) and WebSocket on /ws, served by the engine library
 * (runbox/mcp_http.h) for an MCP server whose tools are the call service's (call.h) and whose
 * resources, prompts and completions are the daemon's own.
 *
 * A tool call from an MCP client takes the same path as POST /tool/<name>: the call service
 * admits it from the same budget table, its cancel token is the MCP call's (notifications/
 * cancelled, a closed response stream or WebSocket, a dropped connection), and its progress
 * becomes notifications/progress when the client asked for it. A quick tool runs on the thread
 * that read the request; a tool from the "long" or "search" budget runs on a thread of its own,
 * so that the WebSocket or SSE session it came in on goes on reading (a cancellation, say).
 *
 * Every open stream holds a civetweb worker and a slot of the call service's "stream" budget;
 * the number of sessions is bounded by --mcp-sessions.
 *
 * Thread-safety: any thread. */
#ifndef DAEMON_API_MCP_H
#define DAEMON_API_MCP_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

struct call_service;
struct connwatch;
struct mg_connection;
struct mg_context;
struct tools_ctx;

struct api_mcp_options {
    const struct tools_ctx *tools; /* borrowed */
    struct call_service *calls;    /* borrowed */
    struct connwatch *watch;       /* borrowed: cancels calls whose client went away */
    const struct catalog *catalog; /* the tools served (--tools); borrowed */
    int sessions_max;              /* --mcp-sessions */
    int session_idle_s;            /* --mcp-session-idle-s */
};

struct api_mcp; /* opaque */

/* Returns an owned set of endpoints (api_mcp_free) or NULL with err. */
struct api_mcp *api_mcp_new(const struct api_mcp_options *opt, struct errinfo *err);

/* Registers /ws on ctx; origin_ok vets a WebSocket upgrade's Origin. */
int api_mcp_attach_ws(struct api_mcp *m, struct mg_context *ctx,
                      bool (*origin_ok)(void *ctx, const char *origin), void *origin_ctx,
                      struct errinfo *err);

/* True for /mcp, /sse and /message. */
bool api_mcp_is_path(const struct api_mcp *m, const char *path);

/* True for /ws. */
bool api_mcp_is_ws_path(const struct api_mcp *m, const char *path);

/* Serves a request for /mcp, /sse or /message (the security checks are done). */
int api_mcp_handle(struct api_mcp *m, struct mg_connection *conn);

/* Ends every open stream: the daemon is stopping. */
void api_mcp_shutdown(struct api_mcp *m);

/* After civetweb stopped. NULL is a no-op. */
void api_mcp_free(struct api_mcp *m);

/* {"sessions","streams","websockets","max"} for /health. Owned or NULL. */
cJSON *api_mcp_status_json(struct api_mcp *m);

#endif /* DAEMON_API_MCP_H */
