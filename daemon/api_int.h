/* daemon/api_int.h - what the files of runboxd's HTTP API share (api.c: answers, routing, the
 * civetweb callbacks, start and stop; api_status.c: GET /health, /tools and /mcp-servers;
 * api_tool.c: POST /tool/<name>); not for other modules. Functions named api__* are private to
 * the API. */
#ifndef DAEMON_API_INT_H
#define DAEMON_API_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "api.h"

struct errinfo;
struct schema_report;

struct api {
    struct mg_context *mg;
    char bind[64];
    _Atomic int port;
    char *token; /* owned, or NULL */
    char *workspace;
    bool fsync, allow_network;
    const struct tools_ctx *tools; /* borrowed */
    const struct catalog *cat;
    char *tools_json; /* owned: {"tools":[...]} */
    size_t tools_len;
    bool lib_ready;             /* mg_init_library was called */
    struct call_service *calls; /* borrowed: every tool call goes through it */
    struct connwatch *watch;    /* owned: cancels long calls whose client went away */
    struct api_mcp *mcp;        /* owned: /mcp, /sse, /message, /ws */
    struct api_events *events;  /* owned: GET /events */
    struct http_guard *guard;   /* owned: deadlines for request heads and bodies */
    struct status_page *page;   /* owned: GET / and its browser rules */
    int threads;                /* civetweb workers */
    int64_t started_ms;         /* clocks_mono_ms() at api_start, for /health's uptime_ms */
};

/* ---- api.c ---- */

/* {"ok":false,"error":msg[,"details":[...]]} with this status. */
int api__send_error_ex(struct mg_connection *conn, int status, const char *msg,
                       const struct schema_report *rep, const char *hname, const char *hval);

/* {"ok":false,"error":msg} with this status. */
int api__send_error(struct mg_connection *conn, int status, const char *msg);

/* A request-level failure: the table picks the status. */
int api__send_errinfo(struct mg_connection *conn, const struct errinfo *err);

/* ---- api_status.c ---- */

/* GET /health: the daemon, its sandbox, workspace, Studio, budgets, HTTP, MCP and external
 * servers (http-api.md). */
int api__handle_health(struct api *a, struct mg_connection *conn);

/* GET /tools: the catalog's tools, then the external servers' (their snapshot now). */
int api__handle_tools(struct api *a, struct mg_connection *conn);

/* GET /mcp-servers: every external server's state. */
int api__handle_mcp_servers(struct api *a, struct mg_connection *conn);

/* ---- api_tool.c ---- */

/* POST /tool/<name>: reads the arguments, runs the call through the call service and answers
 * with its result, as JSON or (Accept: text/event-stream) as an event stream. */
int api__handle_tool(struct api *a, struct mg_connection *conn, const char *name);

#endif /* DAEMON_API_INT_H */
