/* common/mcp_int.h - what the engine's files share (mcp_server.c, mcp_session.c, mcp_call.c,
 * mcp_lists.c, mcp_modern.c, mcp_calls.c); not for other modules, except that the HTTP
 * transport of the same library (mcp_http.c) calls mcp__session_handle_parsed(). Functions
 * named mcp__* are private to the engine.
 *
 * Locks (see runbox/mcp.h for the contract): srv->lock (rwlock) guards the server's tables;
 * srv->sessions_mu guards the list of sessions; s->mu guards one session and its calls' state;
 * c->hook_mu serializes a call's cancel hook with its removal. Order: s->mu, then srv->lock or
 * srv->sessions_mu; c->hook_mu is taken with no other engine lock held. Nothing is held while a
 * handler, a hook or the transport's send runs. */
#ifndef COMMON_MCP_INT_H
#define COMMON_MCP_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonbuf.h"
#include "jsonrpc.h"
#include "runbox/mcp.h"

/* Ceiling for any one message the engine builds (a tool result, a batch answer, a list). Tool
 * results are capped far below this by the tools themselves; past it the client gets -32603. */
#define MCP_RESPONSE_MAX ((size_t)64 << 20)

#define MCP_META_VERSION      "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_CLIENT_INFO  "io.modelcontextprotocol/clientInfo"
#define MCP_META_LOG_LEVEL    "io.modelcontextprotocol/logLevel"
#define MCP_META_SERVER_INFO  "io.modelcontextprotocol/serverInfo"
#define MCP_META_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"

/* Client capabilities a tool can need (struct mcp_tool.requires). */
enum { MCP_NEEDS_SAMPLING = 1, MCP_NEEDS_ELICITATION = 2, MCP_NEEDS_ROOTS = 4 };

/* ---- the server's tables (mcp_server.c) ---- */

/* A tool as the server keeps it: its tools/list entry, printed once when it is added, and the
 * input schema its arguments are checked against. A tool added as JSON text
 * (mcp_server_add_tool) keeps its schema as checked, compacted text and parses it at its first
 * call (mcp__tool_schema): a program that registers many tools pays no parse for the ones
 * never called. */
struct srv_tool {
    char *name;
    char *entry; /* owned: the tools/list entry, compact JSON text */
    size_t entry_len;
    char *input_text;              /* owned: the schema's text until it is parsed, else NULL */
    _Atomic(cJSON *) input_schema; /* owned: the parsed schema, NULL until the first need */
    bool has_output_schema;
    unsigned requires;
    mcp_handler_fn handler;
    void *arg;
};

struct srv_resource {
    char *uri, *name, *title, *description, *mime_type;
    int64_t size;
    mcp_handler_fn read;
    void *arg;
};

struct srv_template {
    char *uri_template, *name, *title, *description, *mime_type;
    mcp_handler_fn read;
    void *arg;
};

struct srv_prompt {
    char *name, *title, *description;
    cJSON *arguments; /* owned: the prompts/list "arguments" array */
    mcp_handler_fn get;
    void *arg;
};

struct mcp_server {
    pthread_rwlock_t lock;
    char *name, *version, *title, *instructions;
    unsigned notifies; /* MCP_NOTIFY_* */

    struct srv_tool *tools; /* in the order added */
    size_t ntools, tools_cap;
    size_t *tool_index;        /* indexes into tools, sorted by name (binary search) */
    uint64_t tools_gen;        /* bumped by every change of the tools */
    pthread_mutex_t schema_mu; /* makes a text tool's schema parse once (mcp__tool_schema) */
    pthread_mutex_t tools_json_mu;
    char *tools_json; /* the tools/list "tools" array, built for tools_json_gen */
    size_t tools_json_len;
    uint64_t tools_json_gen;

    struct srv_resource *resources;
    size_t nresources, resources_cap;
    struct srv_template *templates;
    size_t ntemplates, templates_cap;
    mcp_handler_fn res_list, res_read;
    void *res_arg;

    struct srv_prompt *prompts;
    size_t nprompts, prompts_cap;
    mcp_handler_fn prompt_list, prompt_get;
    void *prompt_arg;

    mcp_handler_fn complete;
    void *complete_arg;

    mcp_tool_resolver_fn resolve; /* a tools/call name no tool has (mcp_server_set_tool_resolver) */
    void *resolve_arg;

    pthread_mutex_t sessions_mu;
    struct mcp_session *sessions; /* every open session, for the notifications */

    struct mcp_interest interest; /* set before sessions open; read without the lock */
    atomic_int log_sessions;      /* sessions with a log level: none, and logs cost nothing */
};

/* The interest hooks (mcp_server.c); s->mu held by the caller. */
int mcp__interest_subscribe(struct mcp_server *srv, const char *uri, struct errinfo *err);
void mcp__interest_unsubscribe(struct mcp_server *srv, const char *uri);
/* Every URI of a listen's list (a cJSON array of strings, or NULL). */
void mcp__interest_unsubscribe_all(struct mcp_server *srv, const cJSON *uris);
void mcp__interest_log_level(struct mcp_server *srv, struct mcp_session *s, int old_level,
                             int level);

/* A copy of a tool's call-time facts, taken under the server's lock. */
struct tool_facts {
    mcp_handler_fn handler;
    void *arg;
    bool has_output_schema;
    unsigned requires;
};

/* Looks name up (srv->lock held for reading); NULL when there is none. */
const struct srv_tool *mcp__find_tool(const struct mcp_server *srv, const char *name);

/* The schema a tool's arguments are checked against (srv->lock held for reading): parsed from
 * its text at the first ask (under srv->schema_mu), then kept. NULL only when memory ran out. */
const cJSON *mcp__tool_schema(struct mcp_server *srv, const struct srv_tool *t);

/* The tools/list "tools" array text appended to b (takes the locks it needs). */
int mcp__put_tools_json(struct mcp_server *srv, struct jsonbuf *b);

/* The server's capabilities object for initialize and server/discover. Owned. */
cJSON *mcp__capabilities(struct mcp_server *srv);

/* Adds s to / removes s from the server's list of sessions. */
void mcp__server_attach(struct mcp_server *srv, struct mcp_session *s);
void mcp__server_detach(struct mcp_server *srv, struct mcp_session *s);

/* ---- sessions and calls ---- */

struct batch {
    size_t pending;     /* answers still owed, plus one while the members are being dispatched */
    size_t answers;     /* answers already in out */
    struct jsonbuf out; /* "[a,b,..." */
    void *origin;
};

/* A modern subscriptions/listen stream of a session. */
struct listen {
    struct listen *next;
    struct mcp_call *call; /* the listen request, kept in flight while the stream lives */
    unsigned lists;        /* enum mcp_list bits asked for */
    cJSON *uris;           /* owned array of resource URIs (strings), or NULL */
};

/* A request this engine sent to a legacy client for a call's input (elicitation, sampling,
 * roots). */
struct pending_input {
    struct pending_input *next;
    char id[40]; /* our request id (a string, "rbx-in-<n>") */
    struct mcp_call *call;
    char *key; /* the inputRequests key it answers */
};

struct mcp_call {
    struct mcp_session *s;
    struct mcp_call *next; /* hash chain */
    struct batch *batch;   /* borrowed, or NULL */
    void *origin;
    cJSON *msg; /* owned: the whole request; the borrowed pointers below point into it */
    const cJSON *id;
    const cJSON *params;
    const cJSON *arguments;
    const cJSON *progress_token; /* or NULL */
    const char *method;
    const char *name;
    char *id_text; /* owned, compact JSON of id */
    size_t id_len;
    uint32_t hash;
    cJSON *uri_vars; /* owned, or NULL */

    bool modern;
    const char *protocol;     /* static storage */
    const cJSON *client_caps; /* borrowed: the request's _meta, or the session's initialize */
    const cJSON *client_info; /* borrowed or NULL */
    int log_level;            /* the lowest level the client wants, or -1 for none */
    bool cacheable;           /* the result gets ttlMs and cacheScope (modern lists, reads) */
    bool is_tool;             /* tools/call: the answer helpers shape a CallToolResult */
    struct tool_facts tool;   /* for tools/call */
    mcp_handler_fn handler;   /* who answers it (called again after legacy input) */
    void *handler_arg;
    bool is_listen; /* a subscriptions/listen stream */

    /* Guarded by s->mu. */
    unsigned refs; /* 1 until answered, plus one per cancel being handled (mcp__call_hold) */
    bool registered;
    bool cancelled;
    bool answered;
    unsigned sending; /* messages of this call being sent right now */
    double last_progress;
    bool has_progress;
    size_t inputs_pending;        /* legacy input requests still unanswered */
    cJSON *input_responses;       /* owned: legacy answers gathered so far, or the retry's own */
    char *request_state;          /* owned copy of the state given with the last input request */
    const cJSON *retry_responses; /* borrowed from msg: a modern retry's inputResponses */

    void *data;
    pthread_mutex_t hook_mu;
    void (*hook)(struct mcp_call *c, void *arg);
    void *hook_arg;
};

/* The calls in flight of one session, by id. Zero it to start; free buckets when done. */
struct mcp_calls {
    struct mcp_call **buckets; /* owned array; the calls are chained through their next */
    size_t nbuckets;           /* a power of two, or 0 before the first call */
    size_t count;              /* calls in the table */
};

struct mcp_session {
    struct mcp_server *srv;
    const struct mcp_transport *t;
    void *ctx;
    unsigned flags;
    uint64_t serial;          /* 1, 2, ... in the order sessions were opened (process-wide) */
    struct mcp_session *next; /* in the server's list (srv->sessions_mu) */

    pthread_mutex_t mu;
    pthread_cond_t cond; /* a send of some call ended (mcp_session_cancel_origin waits) */
    atomic_uint refs;    /* 1 until closed, plus one per call in flight and per broadcast */
    bool closing;

    /* legacy state */
    const char *protocol; /* negotiated with initialize, static storage; NULL before */
    bool client_ready;    /* notifications/initialized seen */
    cJSON *client_caps;   /* owned: initialize's capabilities ({} until then) */
    cJSON *client_info;   /* owned or NULL */
    int log_level;        /* logging/setLevel; -1 until the client asks */
    cJSON *subscribed;    /* owned array of URIs (resources/subscribe) */
    struct pending_input *inputs;
    uint64_t next_input_id;

    struct listen *listens; /* modern subscriptions/listen streams */
    struct mcp_calls calls; /* in flight, by id */
};

/* mcp_calls.c */
uint32_t mcp_calls_hash(const char *id_text, size_t len);
struct mcp_call *mcp_calls_find(const struct mcp_calls *t, const char *id, size_t len);
int mcp_calls_add(struct mcp_calls *t, struct mcp_call *c);
void mcp_calls_remove(struct mcp_calls *t, struct mcp_call *c);

/* ---- answering (mcp_session.c) ---- */

/* Hands one message to the transport: every send goes through here. Bytes that are not UTF-8
 * (a client's bytes quoted in an error, a handler's text) become U+FFFD on the way, so every
 * byte a client receives is UTF-8; JSON's structure is ASCII and stays as it is. */
void mcp__send(struct mcp_session *s, const char *json, size_t len, const struct mcp_route *route);

/* Delivers json (len bytes) with this route, or adds it to the batch being answered. Takes and
 * drops no engine lock; the caller holds none. */
void mcp__emit(struct mcp_session *s, struct batch *batch, const char *json, size_t len,
               const struct mcp_route *route);

/* Sends the response line[0..len) to request id, its route computed from id (no id in the route
 * when id's text does not fit: never a cut one). */
void mcp__emit_response(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                        const char *line, size_t len);

/* A JSON-RPC error answering the request with this id (borrowed; NULL -> null), routed as a
 * response with origin. data (may be NULL) is owned. */
void mcp__reply_error(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                      int code, cJSON *data, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* A result for a request that never became a call; takes ownership of result (NULL -> {}). */
void mcp__reply_result(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                       cJSON *result);

/* The most an id's compact JSON takes wherever it is kept (a call's record, a route): a string
 * id of JSONRPC_MAX_ID_BYTES, each byte escaped as \u00XX at worst, and its quotes. */
#define MCP_ID_TEXT_MAX 4096
_Static_assert(6 * JSONRPC_MAX_ID_BYTES + 2 <= MCP_ID_TEXT_MAX,
               "the longest string id's JSON text fits MCP_ID_TEXT_MAX");

/* Appends the JSON text of a request id: a string, an integer number, or null. */
void mcp__put_id(struct jsonbuf *b, const cJSON *id);

/* Lets a batch go on after one of its answers (s->mu not held). */
void mcp__batch_release(struct mcp_session *s, struct batch *b);

/* Drops the session's reference held by a finished call (s->mu not held). */
void mcp__session_unref(struct mcp_session *s);

/* mcp_session_handle() for a message the caller already parsed with jsonrpc_parse(), which
 * refuses a \u0000 escape, so the tree is the one mcp_session_handle() would build from the
 * text: the Streamable HTTP transport parses a POST's body to route it, and the engine need not
 * parse it again. Takes ownership of msg. */
void mcp__session_handle_parsed(struct mcp_session *s, cJSON *msg, void *origin);

/* ---- calls (mcp_call.c) ---- */

/* A new call for request msg (takes ownership of msg and id_text). NULL when out of memory (msg
 * and id_text then freed). */
struct mcp_call *mcp__call_new(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                               char *id_text, size_t id_len);

/* Registers c in the session's table (s->mu held) and takes a session reference; -1 when out of
 * memory. */
int mcp__call_register(struct mcp_call *c);

/* Hands c to its handler (no lock held). */
void mcp__call_dispatch(struct mcp_call *c);

/* Answers c with the complete message text (the response line), then frees it. */
void mcp__call_answer_text(struct mcp_call *c, struct jsonbuf *b);

/* Frees a call that was never registered. */
void mcp__call_discard(struct mcp_call *c);

/* Marks c cancelled and takes a reference for the caller (s->mu held). The caller then runs
 * mcp__call_cancelled() with no lock held, which runs the hook, ends what only the engine can
 * end (a listen stream, a wait for legacy input) and drops the reference. */
void mcp__call_mark_cancelled(struct mcp_call *c);
void mcp__call_cancelled(struct mcp_call *c);

/* Sends a message about c that is not its answer (progress, a log, an input request, a listen
 * acknowledgement), unless c is cancelled or answered. No lock held. */
void mcp__call_send(struct mcp_call *c, const char *line, size_t len, enum mcp_route_kind kind);

/* c was cancelled while it waited for a legacy client's input: forgets the requests and ends
 * the call (its answer is dropped). No lock held. */
void mcp__call_abandon_inputs(struct mcp_call *c);

/* A legacy client answered one of our input requests (s->mu not held). Takes ownership of
 * result (or error, one of them NULL). */
void mcp__input_answered(struct mcp_session *s, const char *id, cJSON *result, cJSON *error);

struct modern_meta;

/* ---- the methods (mcp_lists.c) ---- */

/* Starts the request msg for method (validated id, not in flight): every method the engine
 * answers or hands to a handler, for both eras (modern: the request's checked _meta, or NULL for
 * a legacy request). nul_escape: the text held a \u0000 escape. Takes ownership of msg and
 * id_text. */
void mcp__start_request(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                        char *id_text, size_t id_len, const char *method,
                        const struct modern_meta *modern, bool nul_escape);

/* ---- the 2026-07-28 revision (mcp_modern.c) ---- */

/* The modern request's _meta facts. */
struct modern_meta {
    const char *version; /* one the server speaks (static storage) */
    const cJSON *caps;   /* clientCapabilities (an object) */
    const cJSON *client_info;
    int log_level; /* -1: none */
};

/* Checks a modern request's _meta. Returns 0 with *m filled, or answers the request with the
 * error it deserves (-32602 missing/invalid _meta, -32022 unsupported version) and returns -1. */
int mcp__modern_check(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                      const cJSON *params, struct modern_meta *m);

/* Adds what a modern result carries (resultType "complete", the serverInfo _meta, ttlMs and
 * cacheScope when cacheable) unless it has them. */
int mcp__modern_decorate(struct mcp_server *srv, cJSON *result, bool cacheable);

/* Answers server/discover. */
void mcp__modern_discover(struct mcp_call *c);

/* subscriptions/listen: registers the stream and acknowledges it. */
void mcp__modern_listen(struct mcp_call *c);

/* Removes the listen stream of call c (s->mu held), if c is one. */
void mcp__listen_forget(struct mcp_session *s, struct mcp_call *c);

/* requestState with a keyed tag (owned, or NULL), and back: 0 with *out the handler's own state
 * (owned), -1 when the tag does not match (the client altered it). */
char *mcp__state_seal(const char *state);
int mcp__state_unseal(const char *sealed, char **out);

/* The versions a request may name in its _meta, newest first: server/discover's
 * supportedVersions and -32022's data.supported. Owned array. */
cJSON *mcp__supported_versions(void);

/* Log level names (enum mcp_log_level order) and parsing: -1 for an unknown name. */
extern const char *const mcp__log_level_names[8];
int mcp__parse_log_level(const char *s);

#endif /* COMMON_MCP_INT_H */
