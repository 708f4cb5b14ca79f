/* daemon/call.h - the call service: the one path from every way into runboxd (POST /tool/<name>,
 * MCP over /mcp, /sse and /ws) to a tool.
 *
 * A transport turns its request into call_begin() (look the tool up, validate the arguments,
 * mint the call id, admit the call from the budget table), runs it with call_run() (routed by
 * the tool's catalog route: a handler in daemon/tools*.c, the Studio bridge, or an external MCP
 * server through the registry, daemon/registry.h), and ends it
 * with call_end(). While it runs, any thread may call_cancel() it: the client sent
 * notifications/cancelled, closed its connection, or the session ended. Cancelling reaches the
 * work itself through the one cancel hook the work registered (call_on_cancel): the exec engine
 * kills the run, the Studio bridge drops a queued command or abandons a sent one, search stops.
 * A cancelled call returns from call_run promptly, so its admission slot is free again.
 *
 * The budget table bounds what may hold a worker thread for long (see enum call_budget); which
 * budget a tool uses is a catalog attribute ("budget"), and streams (SSE, WebSocket) take a slot
 * of their own with call_service_admit(). Nothing here knows HTTP: the transports map the
 * errinfo kinds to their own answers.
 *
 * Thread-safety: every function may be called from any thread. A call is used by one transport
 * thread between call_begin and call_end; call_cancel, call_is_cancelled and call_progress may
 * come from others. Lock order: a call's own lock is taken before anything its cancel hook takes
 * (the proc lock, the bridge lock); the hooks never call back into the call service. */
#ifndef DAEMON_CALL_H
#define DAEMON_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "catalog.h"
#include "errinfo.h"

struct tools_ctx;
struct tools_result;
struct schema_report;

/* The budget table's rows. A quick tool (CATALOG_BUDGET_NONE) takes no slot. */
enum call_budget {
    CALL_BUDGET_LONG,     /* exec, kill, Studio tools: may wait minutes for a command or a plugin */
    CALL_BUDGET_SEARCH,   /* search: walks and reads the whole workspace */
    CALL_BUDGET_STREAM,   /* an open SSE stream or WebSocket: held for the stream's life */
    CALL_BUDGET_EXTERNAL, /* a call to an external MCP server (the registry): its own row, so a
                             slow upstream cannot take the slots exec and Studio need */
    CALL_BUDGET_COUNT
};

#define CALL_LONG_MAX_DEFAULT     24
#define CALL_SEARCH_MAX_DEFAULT   8
#define CALL_STREAM_MAX_DEFAULT   512
#define CALL_EXTERNAL_MAX_DEFAULT 64

struct call_service_options {
    const struct catalog *cat;     /* borrowed; outlives the service */
    const struct tools_ctx *tools; /* the daemon's services (its event feed carries the
                                      console entries that call_set_log sinks get); borrowed */
    int max[CALL_BUDGET_COUNT];    /* 0 = the default of each row */
};

struct call_service; /* opaque */
struct call;         /* opaque: one call in flight */

/* Returns an owned service (call_service_free) or NULL with err set. */
struct call_service *call_service_new(const struct call_service_options *opt, struct errinfo *err);

/* No call may be in flight. NULL is a no-op. */
void call_service_free(struct call_service *svc);

/* Takes one slot of budget b for something that is not a tool call (a stream); ERR_UNAVAILABLE
 * naming the limit when the row is full. Give it back with call_service_release(). */
int call_service_admit(struct call_service *svc, enum call_budget b, struct errinfo *err);
void call_service_release(struct call_service *svc, enum call_budget b);

/* {"long":{"in_use":N,"max":M},"search":{...},"stream":{...}} for /health. Owned or NULL. */
cJSON *call_service_budget_json(struct call_service *svc);

/* Writes a new call id ("c<start><pid>-<n>") into buf, for an answer to a call that could not
 * begin (busy) but still carries an id. */
void call_service_mint_id(struct call_service *svc, char *buf, size_t size);

/* The tool by name, or NULL. Borrowed from the service's catalog. */
const struct catalog_tool *call_service_find(const struct call_service *svc, const char *name);

/* Starts a call of tool `name` with `args` (borrowed: must outlive the call). A name the
 * catalog does not have is looked up in the registry of external servers (its exact name,
 * "<server>/<tool>", or a bare tool name only one server has; the call holds the registry's
 * tool until call_end). Fails with ERR_NOT_FOUND for an unknown tool or an ambiguous bare name
 * (the message lists the candidates), ERR_INVALID for arguments the schema refuses (rep, when
 * not NULL, gets every violation; err the first), ERR_UNAVAILABLE when the tool's budget row is
 * full ("runboxd is busy: ..."). Returns an owned call (end it with call_end) or NULL. */
struct call *call_begin(struct call_service *svc, const char *name, const cJSON *args,
                        struct schema_report *rep, struct errinfo *err);

/* Runs the call to its end in the calling thread (it blocks as long as the tool does). Returns 0
 * with *out filled, or -1 with err: the tool's own failure, ERR_TIMEOUT when it ran out of time,
 * ERR_CANCELLED when it was cancelled. On -1, out->data may hold the failure's whole message
 * when it is longer than err's one line (a Studio plugin's error): prefer it. Either way free
 * *out with tools_result_cleanup(). Run it once. */
int call_run(struct call *c, struct tools_result *out, struct errinfo *err);

/* Cancels the call: marks it and runs its cancel hook (at most once). Any thread; idempotent;
 * a call that already finished is only marked. */
void call_cancel(struct call *c);

/* Gives back the budget slot and frees c. After call_run returned (or instead of it). NULL is a
 * no-op. */
void call_end(struct call *c);

const char *call_id(const struct call *c);                    /* "c<start><pid>-<n>" */
const struct catalog_tool *call_tool(const struct call *c);   /* borrowed */
const struct tools_ctx *call_tools_ctx(const struct call *c); /* borrowed */

/* Names the client the call comes from (copied, cut to 63 bytes; NULL or "" for none), before
 * call_run: "mcp:<session>" for an MCP session, "http:<X-Runbox-Client>" for POST /tool (runbox
 * sends its own). Studio commands are served round robin between clients (bridge_call_for);
 * unnamed calls share one turn. */
void call_set_client(struct call *c, const char *client);
const char *call_client(const struct call *c); /* "" when unnamed */

/* ---- for the work a call runs (handlers, the bridge, the exec engine's waits) ---- */

/* True once the call was cancelled. NULL (a handler run outside the call service) is never
 * cancelled. */
bool call_is_cancelled(const struct call *c);

/* Registers the work's cancel hook: fn(arg) runs once, on the cancelling thread, when the call
 * is cancelled; if it already was, it runs at once, before this returns. One hook at a time;
 * call_off_cancel() removes it, and once that returns the hook neither runs nor will run. The
 * hook must be quick and must not call back into the call service. NULL c: no-op. */
void call_on_cancel(struct call *c, void (*fn)(void *arg), void *arg);
void call_off_cancel(struct call *c);

/* The transport's progress sink; the call reports through call_progress(). */
typedef void (*call_progress_fn)(void *ctx, double progress, double total, const char *message);
void call_set_progress(struct call *c, call_progress_fn fn, void *ctx);

/* The work says it reports progress itself at least once a second (the exec engine does), so
 * the ticker below leaves the call alone. NULL c: no-op. */
void call_reports_progress(struct call *c);

/* True when someone listens to this call's progress (a transport set a sink). */
bool call_wants_progress(const struct call *c);

/* Reports progress (progress grows from one report to the next; total <= 0: unknown; message
 * may be NULL). Goes to the sink, if any, on the calling thread. NULL c: no-op.
 * A call that draws from a budget (a long call, a search) and has a sink also hears from the
 * service's ticker, on the ticker's thread, once a second while its work reports nothing
 * ("<tool>: running for N s", "waiting for Studio's answer for N s"); the sink is never called
 * by two threads at once, and not after call_run returned. */
void call_progress(struct call *c, double progress, double total, const char *message);

/* ---- the console entries of the call's own work (request-scoped logs) ---- */

struct console_entry_view;

/* The transport's log sink: gets the console entries of the runs this call follows
 * (call_follow_run), on the event feed's thread, while the call is in flight. Set it before
 * call_run; the service must have been made with an event feed. */
typedef void (*call_log_fn)(void *ctx, const struct console_entry_view *e);
void call_set_log(struct call *c, call_log_fn fn, void *ctx);

/* True when a transport set a log sink. */
bool call_wants_log(const struct call *c);

/* The work says which exec run does this call's work: *run_id is the run's registry id, 0
 * until the engine assigned it (the exec engine stores it there). Until call_unfollow_run,
 * that run's console entries go to the log sink. NULL c: no-op. */
void call_follow_run(struct call *c, const _Atomic uint64_t *run_id);
void call_unfollow_run(struct call *c);

#endif /* DAEMON_CALL_H */
