/* daemon/mcpclient.h - runboxd as the client of one external MCP server (one entry of the
 * registry): the connection over its transport (a child over stdio, Streamable HTTP, legacy
 * SSE, WebSocket), the handshake, the server's lists, and requests from any thread.
 *
 * Each client has one thread of its own. It connects, initializes (server/discover first, for
 * a server of the 2026-07-28 revision; initialize with the newest legacy version otherwise),
 * reads the tools, prompts and resources lists (every page), and then moves messages both ways
 * until the connection ends; then it fails every request still waiting, waits (exponential
 * back-off from MCPCLIENT_BACKOFF_MIN_MS to MCPCLIENT_BACKOFF_MAX_MS) and connects again, until
 * mcpclient_stop(). A list_changed notification from the server re-reads that list.
 *
 * A request (mcpclient_request) is made from the caller's thread and waits for its answer, its
 * deadline, its call's cancellation (sent upstream as notifications/cancelled) or the end of
 * the connection, whichever comes first; it never waits past its deadline. Progress the server
 * reports for it reaches the call's progress sink.
 *
 * Thread-safety: every function may be called from any thread (internal lock). The changed
 * callback runs on the client's thread without its lock. Lock order: a call's lock (call.h),
 * then the client's; the client never calls into the call service while it holds its lock. */
#ifndef DAEMON_MCPCLIENT_H
#define DAEMON_MCPCLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

struct call;
struct console;
struct registry_spec;

#define MCPCLIENT_MESSAGE_MAX    (16u << 20) /* a message from a server larger is refused */
#define MCPCLIENT_QUEUE_MAX      (64u << 20) /* bytes waiting to be sent to one server */
#define MCPCLIENT_LIST_MAX       4096        /* tools, prompts or resources kept per server */
#define MCPCLIENT_BACKOFF_MIN_MS 250
#define MCPCLIENT_BACKOFF_MAX_MS 30000
#define MCPCLIENT_STDERR_KEEP    8   /* last stderr lines quoted in errors */
#define MCPCLIENT_STDERR_RATE    200 /* stderr lines per second into the console (burst 10x) */

enum mcpclient_state {
    MCPCLIENT_DISABLED,   /* "enabled": false, or a config error: never started */
    MCPCLIENT_CONNECTING, /* starting, connecting or initializing */
    MCPCLIENT_READY,      /* initialized and its lists read */
    MCPCLIENT_FAILED      /* the last attempt failed; another comes after the back-off */
};

/* What changed, for the changed callback. */
#define MCPCLIENT_CHANGED_STATE     1u
#define MCPCLIENT_CHANGED_TOOLS     2u
#define MCPCLIENT_CHANGED_PROMPTS   4u
#define MCPCLIENT_CHANGED_RESOURCES 8u

struct mcpclient;

struct mcpclient_options {
    const struct registry_spec *spec; /* borrowed; outlives the client */
    struct console *console;          /* stderr lines and log messages go here; borrowed */
    const char *bwrap;                /* bwrap, for a spec with sandbox (or NULL) */
    bool allow_network;               /* the exec network policy, for the sandbox */
    struct startgate *gate;           /* a stdio server's start waits for a slot; NULL: none */
    void (*changed)(void *arg, struct mcpclient *c, unsigned what);
    void *arg;
};

/* Returns an owned client (mcpclient_free) or NULL with err. It does not connect yet. */
struct mcpclient *mcpclient_new(const struct mcpclient_options *opt, struct errinfo *err);

/* Starts the client's thread (a disabled spec starts nothing). 0 or -1 with err. */
int mcpclient_start(struct mcpclient *c, struct errinfo *err);

/* Tells the thread to end the connection (a child is terminated, then killed) and returns at
 * once, so that many servers stop in parallel. */
void mcpclient_stop_begin(struct mcpclient *c);

/* mcpclient_stop_begin, then waits for the thread (what waited has failed). Idempotent. */
void mcpclient_stop(struct mcpclient *c);

void mcpclient_free(struct mcpclient *c); /* stops it first; NULL is a no-op */

const char *mcpclient_name(const struct mcpclient *c); /* the spec's name; borrowed */
enum mcpclient_state mcpclient_state(struct mcpclient *c);
const char *mcpclient_state_name(enum mcpclient_state s); /* "connecting", ... */

/* Copies of the server's lists as it last gave them ([] before it is ready). Owned. */
cJSON *mcpclient_tools(struct mcpclient *c);
cJSON *mcpclient_prompts(struct mcpclient *c);
cJSON *mcpclient_resources(struct mcpclient *c);

/* Sends request `method` with params (taken; NULL for none) and waits for its result (owned,
 * into *result). call (may be NULL) gives the cancel token and the progress sink. timeout_ms
 * <= 0 is the spec's timeout. -1 with err: the server's JSON-RPC error (ERR_INVALID, its
 * message), ERR_TIMEOUT, ERR_CANCELLED, ERR_UNAVAILABLE (not ready, or the connection ended:
 * the message names the server and says what happened, with its last stderr lines), or
 * ERR_TOO_LARGE (its answer was over MCPCLIENT_MESSAGE_MAX). */
int mcpclient_request(struct mcpclient *c, const char *method, cJSON *params, struct call *call,
                      int timeout_ms, cJSON **result, struct errinfo *err);

/* {name, state, transport, url|command, protocol, server {name, version}, tools, prompts,
 * resources, last_error, last_error_at, restarts, ready_at} for /mcp-servers. Owned. */
cJSON *mcpclient_status_json(struct mcpclient *c);

#endif /* DAEMON_MCPCLIENT_H */
