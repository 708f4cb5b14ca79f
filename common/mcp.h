/* common/mcp.h - the MCP protocol engine: one client session over any message transport.
 *
 * The engine reads JSON-RPC messages (one per call of mcp_session_handle), negotiates the
 * protocol version, answers initialize, ping, tools/list, logging/setLevel itself, validates
 * every tools/call against the catalog, and hands valid calls to a back end. It does not know
 * whether the back end is an HTTP client (the proxy) or local code (the daemon's /mcp).
 *
 * Versions: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25. A supported requested version is
 * echoed; anything else is answered with the newest. JSON-RPC batches are accepted only after
 * 2025-03-26 was negotiated (answered as one array when every member is done); otherwise an
 * array is -32600. Requests other than initialize and ping before initialize are -32600.
 *
 * tools/call: an unknown tool is JSON-RPC -32602; arguments that fail the schema are a tool
 * result with isError:true whose text lists the violations (2025-11-25 rule). A back end's
 * answer becomes {"content":[{"type":"text","text":...}],"isError":false} (JSON results are
 * serialized into the text and also given as structuredContent when the tool has an
 * outputSchema); a failure becomes isError:true with {"error":...,"timeout":bool} as the text.
 * notifications/cancelled for a call in flight calls the back end's cancel_call and no
 * response is ever sent for that id.
 *
 * Resources and prompts: when the back end has a request op, initialize declares "resources"
 * and "prompts", resources/templates/list is answered here, and resources/list|read and
 * prompts/list|get are checked (-32602 for bad params) and handed to the back end as a
 * struct mcp_request, answered with a result or any JSON-RPC error (mcp_requests.c).
 *
 * Thread-safety: a session and its calls belong to one thread (the transport's loop). */
#ifndef COMMON_MCP_H
#define COMMON_MCP_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "catalog.h"

#define MCP_PROTOCOL_LATEST "2025-11-25"

struct mcp_session; /* opaque */
struct mcp_call;    /* opaque: one tools/call in flight */
struct mcp_request; /* opaque: one resources/prompts request in flight */

struct mcp_server_info {
    const char *name;         /* serverInfo.name, e.g. "runbox" */
    const char *version;      /* serverInfo.version */
    const char *instructions; /* InitializeResult.instructions, or NULL */
};

struct mcp_backend {
    /* Starts a validated tools/call. The back end answers exactly once, later or at once
     * (even from inside this function), with mcp_call_finish() or mcp_call_fail(). */
    void (*call_tool)(void *ctx, struct mcp_call *call);
    /* The call was cancelled by the client, or the session is being freed: stop the work.
     * After this returns the back end must not touch call again nor finish it. */
    void (*cancel_call)(void *ctx, struct mcp_call *call);
    /* Delivers one message to the client: compact JSON of len bytes, no newline, not
     * NUL-terminated necessarily. */
    void (*send)(void *ctx, const char *json, size_t len);
    /* Starts a resources/list, resources/read, prompts/list or prompts/get whose params the
     * engine checked (cursor a string; uri a string; name a string and arguments an object of
     * strings). The back end answers exactly once with mcp_request_finish() or
     * mcp_request_fail(), as for calls. NULL: the server has no resources and prompts (the
     * capabilities are not declared and these methods are -32601). resources/templates/list
     * is answered by the engine (file:///{path}, "Workspace file"). */
    void (*request)(void *ctx, struct mcp_request *req);
    /* As cancel_call, for a request. Required when request is set. */
    void (*cancel_request)(void *ctx, struct mcp_request *req);
};

/* Creates a session. cat, be and info are borrowed and must outlive the session; ctx is
 * passed to every back-end callback. Returns an owned session (free with mcp_session_free)
 * or NULL on allocation failure. */
struct mcp_session *mcp_session_new(const struct catalog *cat, const struct mcp_backend *be,
                                    void *ctx, const struct mcp_server_info *info);

/* Cancels every call in flight (cancel_call for each) and frees the session. NULL is a no-op. */
void mcp_session_free(struct mcp_session *s);

/* Handles one message from the client: text[0..len), without the newline. Malformed JSON is
 * answered with -32700 (id null) and the session goes on. Responses are sent through the back
 * end's send(), possibly before this returns. */
void mcp_session_handle(struct mcp_session *s, const char *text, size_t len);

/* The transport dropped a message of `bytes` bytes because it exceeds `limit`: answers
 * -32600 (id null) with a message that says so. */
void mcp_session_reject_oversized(struct mcp_session *s, size_t bytes, size_t limit);

/* The negotiated protocol version, or NULL before initialize. Borrowed. */
const char *mcp_session_protocol(const struct mcp_session *s);

/* How many tools/call are in flight. */
size_t mcp_session_inflight(const struct mcp_session *s);

/* ---- for the back end, while a call is in flight ---- */

const struct catalog_tool *mcp_call_tool(const struct mcp_call *call); /* borrowed */
const cJSON *mcp_call_args(const struct mcp_call *call); /* the arguments object, borrowed */
/* The request id as compact JSON text ("7" or "\"abc\""), for logs. Borrowed. */
const char *mcp_call_id_text(const struct mcp_call *call);
void mcp_call_set_data(struct mcp_call *call, void *data); /* the back end's own handle */
void *mcp_call_get_data(const struct mcp_call *call);

/* Sends notifications/progress when the request carried _meta.progressToken (else nothing).
 * progress must increase from one call to the next; total <= 0 means unknown; message may be
 * NULL. */
void mcp_call_progress(struct mcp_call *call, double progress, double total, const char *message);

/* Answers the call with the tool's result (a string, or any other JSON value); takes ownership
 * of result (NULL means an empty string). The call is freed: do not use it afterwards. */
void mcp_call_finish(struct mcp_call *call, cJSON *result);

/* Like mcp_call_finish(), for a tool that answers with text plus the same facts as an object
 * (exec): the text content is result's, and structured (when an object and the tool has an
 * outputSchema) becomes structuredContent. Takes ownership of both (either may be NULL). */
void mcp_call_finish_structured(struct mcp_call *call, cJSON *result, cJSON *structured);

/* Answers the call as a tool failure: isError with {"error":error,"timeout":timeout} as the
 * text. error is copied. The call is freed: do not use it afterwards. */
void mcp_call_fail(struct mcp_call *call, const char *error, bool timeout);

/* ---- for the back end, while a request is in flight ---- */

/* The method, e.g. "resources/read". Borrowed. */
const char *mcp_request_method(const struct mcp_request *req);
/* The params object (an empty object when the client sent none). Borrowed. */
const cJSON *mcp_request_params(const struct mcp_request *req);
const char *mcp_request_id_text(const struct mcp_request *req); /* as mcp_call_id_text */
void mcp_request_set_data(struct mcp_request *req, void *data);
void *mcp_request_get_data(const struct mcp_request *req);

/* Answers with result (an object; takes ownership; NULL means {}). req is freed. */
void mcp_request_finish(struct mcp_request *req, cJSON *result);

/* Answers with the JSON-RPC error code and message (copied). req is freed. */
void mcp_request_fail(struct mcp_request *req, int code, const char *message);

#endif /* COMMON_MCP_H */
