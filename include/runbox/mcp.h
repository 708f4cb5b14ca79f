/* runbox/mcp.h - Runbox's MCP server engine, as a C library (librunbox-mcp).
 *
 * An embedder describes a server (struct mcp_server): its tools, resources, resource templates,
 * prompts and completion, each with a handler callback. A transport opens one session per client
 * connection (struct mcp_session) with a send callback, feeds it the client's messages one at a
 * time (mcp_session_handle) and delivers what the engine hands to send. The engine does no I/O.
 *
 * Both eras of the protocol, per request:
 * - legacy (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25): the client opens with initialize;
 *   the engine negotiates the version (a supported one is echoed, any other gets the newest
 *   legacy one), keeps the session's state (log level, resource subscriptions), answers ping,
 *   logging/setLevel and resources/subscribe|unsubscribe itself, and accepts JSON-RPC batches
 *   only after negotiating 2025-03-26;
 * - modern (2026-07-28): a request whose params._meta carries "io.modelcontextprotocol/
 *   protocolVersion" is served statelessly: no initialize, the version and the client's
 *   capabilities come with every request, server/discover and subscriptions/listen are answered,
 *   every result carries resultType (and ttlMs/cacheScope on lists and reads), servers send no
 *   requests (a handler that needs input answers mcp_call_input_required), and a removed method
 *   (initialize, ping, logging/setLevel, resources/subscribe) is -32601.
 * One session may carry both: a stdio client that starts with initialize is served the legacy
 * way, and any modern request on the same session is served statelessly.
 *
 * Calls: every request the engine does not answer itself (tools/call, resources/read, prompts/get,
 * completion/complete, and lists that have a provider) becomes a struct mcp_call handed to the
 * handler registered for it. The handler answers it exactly once, at once or later, from any
 * thread (mcp_call_result*, mcp_call_tool_error, mcp_call_error, mcp_call_input_required), also
 * when the call was cancelled (the answer is then dropped). Until it answers it may report
 * progress and log messages. The engine checks tools/call arguments against the tool's input
 * schema first: a violation is a tool result with isError:true naming the argument and the rule,
 * an unknown tool is JSON-RPC -32602.
 *
 * THREADING: a server may be used from any thread; its tables are guarded by one read-write
 * lock (adding or removing a tool takes it for writing). Each session has one mutex: messages
 * for one session may be handled from several threads at once (the engine serializes its own
 * state), and handlers run without any engine lock held, so a handler may block (a synchronous
 * back end runs the tool inside the handler) and may answer from another thread. The send
 * callback is called without engine locks too, from whichever thread produced the message, so
 * calls for one session can overlap: a transport that writes to one stream serializes itself.
 * Lock order: a session's mutex, then the server's lock; nothing in the engine holds either while
 * calling out.
 *
 * Errors of the set-up functions: 0 or a pointer on success; -1 or NULL with err (may be NULL)
 * naming the problem (see runbox/errinfo.h). */
#ifndef RUNBOX_MCP_H
#define RUNBOX_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCP_PROTOCOL_MODERN "2026-07-28"
#define MCP_PROTOCOL_LEGACY "2025-11-25" /* the newest legacy version */

/* JSON-RPC and MCP error codes. */
#define MCP_PARSE_ERROR         (-32700)
#define MCP_INVALID_REQUEST     (-32600)
#define MCP_METHOD_NOT_FOUND    (-32601)
#define MCP_INVALID_PARAMS      (-32602)
#define MCP_INTERNAL_ERROR      (-32603)
#define MCP_RESOURCE_NOT_FOUND  (-32002) /* legacy; modern uses MCP_INVALID_PARAMS */
#define MCP_HEADER_MISMATCH     (-32020) /* modern, HTTP: a header does not match the body */
#define MCP_MISSING_CAPABILITY  (-32021) /* modern: the request needs a client capability */
#define MCP_UNSUPPORTED_VERSION (-32022) /* modern: data.supported lists the versions */

struct mcp_server;  /* opaque: what a server offers */
struct mcp_session; /* opaque: one client connection */
struct mcp_call;    /* opaque: one request in flight, handed to a handler */

/* ======================================================================================
 * The server
 * ====================================================================================== */

/* The notifications a server promises to send (struct mcp_server_info.notifies): each becomes
 * its capability flag (tools.listChanged, prompts.listChanged, resources.listChanged,
 * resources.subscribe). Promise only what the embedder will really call the mcp_server_notify_*
 * functions for. */
#define MCP_NOTIFY_TOOLS     1u
#define MCP_NOTIFY_PROMPTS   2u
#define MCP_NOTIFY_RESOURCES 4u /* the resources list */
#define MCP_NOTIFY_UPDATES   8u /* resources/subscribe and notifications/resources/updated */

struct mcp_server_info {
    const char *name;         /* serverInfo.name (required) */
    const char *version;      /* serverInfo.version (required) */
    const char *title;        /* serverInfo.title, or NULL */
    const char *instructions; /* instructions for the model, or NULL */
    unsigned notifies;        /* MCP_NOTIFY_* bits */
};

/* Creates a server; copies info. Returns an owned server (mcp_server_free) or NULL. */
struct mcp_server *mcp_server_new(const struct mcp_server_info *info, struct errinfo *err);

/* Frees the server. Every session must be closed and gone. NULL is a no-op. */
void mcp_server_free(struct mcp_server *srv);

/* A handler: answers call (now or later, exactly once). arg is the pointer given at
 * registration. */
typedef void (*mcp_handler_fn)(void *arg, struct mcp_call *call);

/* ---- tools ---- */

struct mcp_tool {
    const char *name;          /* [A-Za-z0-9_.-]{1,128}, unique */
    const char *title;         /* or NULL */
    const char *description;   /* or NULL */
    const char *input_schema;  /* JSON text of an object schema; NULL = {"type":"object"} */
    const char *output_schema; /* JSON text, or NULL; results then carry structuredContent */
    const char *annotations;   /* JSON text ({"readOnlyHint":true,...}), or NULL */
    /* JSON text of an object whose members are listed with the tool as they are, after the
     * fields above ("_meta", "icons", ...), or NULL. A member named like one of the fields above
     * is ERR_INVALID. */
    const char *extra;
    /* Client capabilities the tool needs ("sampling", "elicitation", "roots"), comma-separated,
     * or NULL. A modern request from a client that lacks one is answered -32021 before the
     * handler runs; a legacy client is checked the same way against its initialize. */
    const char *requires;
    mcp_handler_fn handler;
    void *arg;
};

/* Adds a tool (copies every field). Names are listed in the order added. ERR_EXISTS for a name
 * already there, ERR_INVALID for a bad name or schema text. Sessions hear
 * notifications/tools/list_changed when mcp_server_notify_list_changed() is called. */
int mcp_server_add_tool(struct mcp_server *srv, const struct mcp_tool *tool, struct errinfo *err);

/* mcp_server_add_tool() for a program that holds the schemas parsed already (no print and parse
 * again): input_schema (NULL = {"type":"object"}), output_schema and annotations (each an
 * object, or NULL) become the server's, on failure too; tool's input_schema, output_schema and
 * annotations are not read (its extra is). ERR_INVALID when one is not an object. */
int mcp_server_add_tool_parsed(struct mcp_server *srv, const struct mcp_tool *tool,
                               cJSON *input_schema, cJSON *output_schema, cJSON *annotations,
                               struct errinfo *err);

/* Removes a tool; ERR_NOT_FOUND when there is none by that name. Calls in flight finish. */
int mcp_server_remove_tool(struct mcp_server *srv, const char *name, struct errinfo *err);

/* How many tools the server has. */
size_t mcp_server_tool_count(const struct mcp_server *srv);

/* Another spelling of a tool's name (an alias): given a tools/call name that no tool has, a
 * resolver writes the name of the tool it means into canonical (size bytes) and returns 1, or
 * returns 0 when it knows none (the call is then -32602 "Unknown tool"), or -1 with a message
 * for the client in why (why_size bytes; e.g. an ambiguous name and its candidates), which is
 * sent as the -32602 error's message. Called without engine locks, on the thread that handles
 * the request; it must not add or remove tools. */
typedef int (*mcp_tool_resolver_fn)(void *arg, const char *name, char *canonical, size_t size,
                                    char *why, size_t why_size);

/* Sets the server's resolver (NULL removes it). */
void mcp_server_set_tool_resolver(struct mcp_server *srv, mcp_tool_resolver_fn fn, void *arg);

/* ---- resources ---- */

struct mcp_resource {
    const char *uri;         /* unique */
    const char *name;        /* required */
    const char *title;       /* or NULL */
    const char *description; /* or NULL */
    const char *mime_type;   /* or NULL */
    int64_t size;            /* bytes, or -1 when unknown */
    mcp_handler_fn read;     /* answers resources/read with {"contents":[...]} */
    void *arg;
};

struct mcp_resource_template {
    const char *uri_template; /* RFC 6570 level 1: "test://template/{id}/data" */
    const char *name;
    const char *title;
    const char *description;
    const char *mime_type;
    mcp_handler_fn read; /* mcp_call_uri_vars() has the variables */
    void *arg;
};

int mcp_server_add_resource(struct mcp_server *srv, const struct mcp_resource *r,
                            struct errinfo *err);
int mcp_server_add_resource_template(struct mcp_server *srv, const struct mcp_resource_template *t,
                                     struct errinfo *err);

/* A provider answers for resources that are not registered one by one (a workspace's files):
 * list (may be NULL) answers resources/list in full, with pages of its own (params.cursor);
 * read (may be NULL) answers resources/read of a URI no registered resource or template
 * matches. Without a provider, resources/list lists the registered resources and an unknown URI
 * is "resource not found". */
int mcp_server_set_resource_provider(struct mcp_server *srv, mcp_handler_fn list,
                                     mcp_handler_fn read, void *arg, struct errinfo *err);

/* ---- prompts ---- */

struct mcp_prompt_argument {
    const char *name;
    const char *title;       /* or NULL */
    const char *description; /* or NULL */
    bool required;
};

struct mcp_prompt {
    const char *name;
    const char *title;
    const char *description;
    const struct mcp_prompt_argument *arguments; /* narguments of them; copied */
    size_t narguments;
    mcp_handler_fn get; /* answers prompts/get with {"description"?, "messages":[...]} */
    void *arg;
};

/* Adds a prompt. prompts/get checks that the required arguments are there (-32602) before the
 * handler runs. */
int mcp_server_add_prompt(struct mcp_server *srv, const struct mcp_prompt *p, struct errinfo *err);

/* A provider for prompts not registered one by one: list answers prompts/list in full, get
 * answers prompts/get of an unknown name. Either may be NULL. */
int mcp_server_set_prompt_provider(struct mcp_server *srv, mcp_handler_fn list, mcp_handler_fn get,
                                   void *arg, struct errinfo *err);

/* ---- completion ---- */

/* Answers completion/complete ({"ref","argument","context"?} in params) with
 * {"completion":{"values":[...],"total"?,"hasMore"?}}; declares the "completions" capability. */
int mcp_server_set_completion(struct mcp_server *srv, mcp_handler_fn complete, void *arg,
                              struct errinfo *err);

/* ---- notifications to every session ---- */

enum mcp_list { MCP_LIST_TOOLS = 1, MCP_LIST_PROMPTS = 2, MCP_LIST_RESOURCES = 4 };

/* Tells every session whose client can hear it that these lists changed (legacy: a
 * notifications/<list>/list_changed on the session; modern: on the subscriptions/listen streams
 * that asked for it). lists is an OR of enum mcp_list. */
void mcp_server_notify_list_changed(struct mcp_server *srv, unsigned lists);

/* Tells the sessions subscribed to uri (legacy resources/subscribe, modern listen with
 * resourceSubscriptions) that the resource changed: notifications/resources/updated. */
void mcp_server_notify_resource_updated(struct mcp_server *srv, const char *uri);

/* ---- what clients want to hear ---- */

/* For an embedder that watches only what someone listens to (a file watcher for subscribed
 * resources, a log feed opened at the level asked for). Every member may be NULL. */
struct mcp_interest {
    /* A session subscribed to uri (legacy resources/subscribe, or a modern subscriptions/listen
     * naming it in resourceSubscriptions). Return 0, or -1 with err to refuse: the client gets
     * -32602 with err's message (e.g. a URI that names no resource). Every 0 is matched by
     * exactly one unsubscribe(uri) later: on resources/unsubscribe, when the listen stream
     * ends, or when the session closes. Counting subscribers per URI is the embedder's. */
    int (*subscribe)(void *arg, const char *uri, struct errinfo *err);
    void (*unsubscribe)(void *arg, const char *uri);
    /* A legacy session set its log level with logging/setLevel (level: an enum mcp_log_level),
     * or closed after setting one (level -1). */
    void (*log_level)(void *arg, struct mcp_session *s, int level);
    void *arg;
};

/* Sets the hooks (copied). They may run with the session's lock held, so they must be quick
 * and must not call into the engine. Set them before the first session opens. */
int mcp_server_set_interest(struct mcp_server *srv, const struct mcp_interest *in,
                            struct errinfo *err);

/* Log levels (RFC 5424, as MCP names them). */
enum mcp_log_level {
    MCP_LOG_DEBUG,
    MCP_LOG_INFO,
    MCP_LOG_NOTICE,
    MCP_LOG_WARNING,
    MCP_LOG_ERROR,
    MCP_LOG_CRITICAL,
    MCP_LOG_ALERT,
    MCP_LOG_EMERGENCY
};

/* Sends notifications/message {level, logger, data} to every legacy session that asked for this
 * level with logging/setLevel (none is sent before a client asks). Modern clients get log
 * messages only about their own requests (mcp_call_log). Takes ownership of data (any JSON). */
void mcp_server_log(struct mcp_server *srv, enum mcp_log_level level, const char *logger,
                    cJSON *data);

/* ======================================================================================
 * Sessions: the transport side
 * ====================================================================================== */

/* What a message belongs to, so that a transport can pick its stream (Streamable HTTP puts a
 * response and the request's notifications on the stream of the POST that carried it). */
enum mcp_route_kind {
    MCP_ROUTE_RESPONSE, /* the answer to request `id`: the last message for it */
    MCP_ROUTE_REQUEST,  /* about request `id` before its answer: progress, log, a legacy
                           server-to-client request made for it */
    MCP_ROUTE_SESSION,  /* not about a request: list changes, resource updates, session logs */
    MCP_ROUTE_LISTEN    /* on the subscriptions/listen stream opened by request `id` */
};

struct mcp_route {
    enum mcp_route_kind kind;
    const char *id; /* compact JSON of the request id ("7", "\"a\""); NULL for SESSION, for a
                       batch's answer and for an error answering a message without a usable id */
    size_t id_len;
    void *origin; /* the origin given to mcp_session_handle with the message this is about (the
                     request, the batch, the bad message); NULL for SESSION */
};

struct mcp_transport {
    /* Delivers one message: compact JSON text, len bytes, no newline, not NUL-terminated. */
    void (*send)(void *ctx, const char *json, size_t len, const struct mcp_route *route);
    /* The last reference to the session is gone (mcp_session_close was called and every call
     * finished): the transport may free ctx. May be NULL. */
    void (*closed)(void *ctx);
    /* Request `route->id` will get no answer: the client cancelled it (notifications/cancelled),
     * and a cancelled request is not answered. A transport that holds something open for the
     * answer (Streamable HTTP: the POST that carried the request) can end it now. Called at most
     * once per request, before the call's handler hears of the cancel; never for a request in a
     * batch. May be NULL. */
    void (*unanswered)(void *ctx, const struct mcp_route *route);
    /* True when a handler may take its time answering a request of origin on the thread it was
     * called on: that thread handed the message in and waits for the answer anyway (a
     * Streamable HTTP POST's worker), and the transport looks after the client meanwhile (one
     * that leaves cancels the request). Called by mcp_call_may_block on the handler's thread.
     * May be NULL (never). */
    bool (*may_block)(void *ctx, void *origin);
};

/* Options of a session. */
#define MCP_SESSION_MODERN_ONLY                                                                    \
    1u                          /* a stateless request stream (a Streamable HTTP POST without      \
                                   a session): initialize and other legacy-only messages are       \
                                   refused with -32601, as a modern-only server does */
#define MCP_SESSION_NO_BATCH 2u /* the transport has no JSON-RPC batches (WebSocket) */

/* Opens a session on srv; t and ctx are the transport's (t is borrowed and must outlive the
 * session). Returns the session or NULL. Close it with mcp_session_close(). */
struct mcp_session *mcp_session_new(struct mcp_server *srv, const struct mcp_transport *t,
                                    void *ctx, unsigned flags, struct errinfo *err);

/* Handles one message from the client (text[0..len), without the newline). Anything that is not
 * a usable message is answered with the JSON-RPC error it deserves; the session goes on. origin
 * is the transport's own token for where the message came from (the HTTP POST that carried it);
 * every message about it is routed with that origin. Any thread. */
void mcp_session_handle(struct mcp_session *s, const char *text, size_t len, void *origin);

/* The stream of origin is gone (the client closed an HTTP response stream): cancels every call
 * that came from it, and returns once nothing more is being sent or will be sent with that
 * origin, so the transport may free it. */
void mcp_session_cancel_origin(struct mcp_session *s, void *origin);

/* The client went away or the transport ends: cancels every call in flight (their handlers'
 * cancel hooks run) and sends nothing more. The session is freed, and t->closed called, once
 * the last handler has answered. Do not use s afterwards. */
void mcp_session_close(struct mcp_session *s);

/* The transport dropped a message of `bytes` bytes because it exceeds `limit`: answers -32600
 * (id null) saying so. */
void mcp_session_reject_oversized(struct mcp_session *s, size_t bytes, size_t limit);

/* The protocol version negotiated with initialize, or NULL (not initialized, or only modern
 * requests so far). Borrowed (static storage). */
const char *mcp_session_protocol(const struct mcp_session *s);

/* How many calls are in flight. */
size_t mcp_session_inflight(const struct mcp_session *s);

/* True when request text[0..len) is a modern request (params._meta names a protocol
 * version). For transports that must decide before handling (Streamable HTTP). Pure. */
bool mcp_is_modern_request(const char *text, size_t len);

/* ======================================================================================
 * Calls: the handler side
 * ====================================================================================== */

/* What the request asks. Every pointer is borrowed until the call is answered. */
const char *mcp_call_method(const struct mcp_call *c);     /* "tools/call", "resources/read", ... */
const char *mcp_call_name(const struct mcp_call *c);       /* tool or prompt name, or the URI */
const cJSON *mcp_call_params(const struct mcp_call *c);    /* the params object */
const cJSON *mcp_call_arguments(const struct mcp_call *c); /* tool or prompt arguments: object */
const cJSON *mcp_call_uri_vars(const struct mcp_call *c);  /* template read: {"id":"123"} */
const char *mcp_call_id_text(const struct mcp_call *c);    /* compact JSON of the request id */
const char *mcp_call_protocol(const struct mcp_call *c);   /* the version this request speaks */
bool mcp_call_is_modern(const struct mcp_call *c);
/* The session the request came on, as a number unique in the process (1, 2, ... in the order
 * sessions were opened): a name for the client, e.g. to serve several clients in turn. A
 * stateless modern request has a session of its own. */
uint64_t mcp_call_session_serial(const struct mcp_call *c);
const cJSON *mcp_call_client_capabilities(const struct mcp_call *c); /* {} when none */
const cJSON *mcp_call_client_info(const struct mcp_call *c);         /* or NULL */

/* The handler's own pointer for this call (for cancel hooks and asynchronous answers). */
void mcp_call_set_data(struct mcp_call *c, void *data);
void *mcp_call_get_data(const struct mcp_call *c);

/* Cancellation: the client cancelled (notifications/cancelled, or its stream closed) or the
 * session closed. fn(c, arg) runs once, on the cancelling thread, without engine locks, if the
 * call is cancelled while the hook is set; if it already was, at once. The handler still answers
 * (the answer is dropped). mcp_call_on_cancel(c, NULL, NULL) removes the hook; once that returns
 * the hook neither runs nor will run. */
void mcp_call_on_cancel(struct mcp_call *c, void (*fn)(struct mcp_call *c, void *arg), void *arg);
bool mcp_call_is_cancelled(const struct mcp_call *c);

/* True when the request asked for progress (params._meta.progressToken). */
bool mcp_call_wants_progress(const struct mcp_call *c);

/* True when the handler, running now on the thread that handed the request in, may answer it
 * there however long that takes instead of handing it to a thread of its own: the request is
 * not part of a batch and its transport says that thread waits for the answer anyway
 * (mcp_transport.may_block). Saves a thread and two hand-overs per call. Messages about the
 * request that other threads send meanwhile (progress, logs) wait until the handler returns,
 * so a handler whose work reports from other threads should not block. */
bool mcp_call_may_block(const struct mcp_call *c);

/* Sends notifications/progress for this request when it asked for progress. progress must grow
 * from one report to the next (a repeat is not sent); total <= 0 means unknown; message may be
 * NULL. */
void mcp_call_progress(struct mcp_call *c, double progress, double total, const char *message);

/* The lowest level of log messages the client wants about this request (legacy: the session's
 * logging/setLevel; modern: the request's own logLevel), or -1 for none. */
int mcp_call_log_level(const struct mcp_call *c);

/* Sends notifications/message about this request when the client wants this level: legacy, the
 * session's logging/setLevel; modern, the request's own "io.modelcontextprotocol/logLevel" (no
 * level, no messages). Takes ownership of data. */
void mcp_call_log(struct mcp_call *c, enum mcp_log_level level, const char *logger, cJSON *data);

/* ---- answers (each frees the call: do not use c afterwards) ---- */

/* tools/call: a text result (content [{"type":"text","text":...}], isError false). */
void mcp_call_result_text(struct mcp_call *c, const char *text, size_t len);

/* tools/call: a text result plus the same facts as an object, given as structuredContent when
 * the tool has an output schema. Takes ownership of structured (may be NULL). */
void mcp_call_result_text_structured(struct mcp_call *c, const char *text, size_t len,
                                     cJSON *structured);

/* tools/call: a failure the model should see (isError true, the message as the text). */
void mcp_call_tool_error(struct mcp_call *c, const char *message);

/* Any method: the whole result object (for tools/call a CallToolResult: content,
 * structuredContent?, isError?). The engine adds resultType and, where the revision wants them,
 * ttlMs and cacheScope, unless the object has them. Takes ownership of result (NULL -> {}). */
void mcp_call_result(struct mcp_call *c, cJSON *result);

/* Any method: a JSON-RPC error. data (may be NULL) is owned and becomes error.data. */
void mcp_call_error(struct mcp_call *c, int code, const char *message, cJSON *data);

/* ---- input from the client (elicitation, sampling, roots) ---- */

/* The client's answer to input request `key` (from an earlier mcp_call_input_required), or
 * NULL. Borrowed. */
const cJSON *mcp_call_input_response(const struct mcp_call *c, const char *key);

/* The requestState the handler gave with its last mcp_call_input_required, as the client sent it
 * back, or NULL. The engine checks it was not altered (a tampered state is -32602). */
const char *mcp_call_request_state(const struct mcp_call *c);

/* The handler needs input before it can answer: input_requests is an object
 * {"key": {"method": "elicitation/create" | "sampling/createMessage" | "roots/list",
 *          "params": {...}}, ...} (owned). A modern request is answered with an
 * InputRequiredResult and the client retries it with the responses; a legacy session sends each
 * as a request to the client, and when every answer is in, the handler is called again with the
 * same call, mcp_call_input_response() then giving the answers. request_state (may be NULL) is
 * opaque to the client and comes back in mcp_call_request_state(). A client that lacks the
 * capability a request needs is answered -32021 (modern) or -32602 (legacy). */
void mcp_call_input_required(struct mcp_call *c, cJSON *input_requests, const char *request_state);

/* ---- the library ---- */

/* "runbox-mcp <version>". */
const char *mcp_library_version(void);

#ifdef __cplusplus
}
#endif

#endif /* RUNBOX_MCP_H */
