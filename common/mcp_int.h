/* common/mcp_int.h - what mcp.c shares with mcp_calls.c and mcp_requests.c; not for other
 * modules.
 * Thread-safety: as the session (owner thread only). */
#ifndef COMMON_MCP_INT_H
#define COMMON_MCP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jsonbuf.h"
#include "mcp.h"

/* Ceiling for any one message the engine builds (a tool result, a batch answer). Tool
 * results are capped far below this by the tools themselves; past it the client gets -32603. */
#define MCP_RESPONSE_MAX ((size_t)64 << 20)

struct batch {
    size_t pending;     /* answers still owed, plus one while the members are being dispatched */
    size_t answers;     /* answers already in out */
    struct jsonbuf out; /* "[a,b,..." */
};

/* One tools/call in flight (mcp.h keeps it opaque). */
struct mcp_call {
    struct mcp_session *s;
    struct mcp_call *next; /* hash chain */
    struct batch *batch;   /* borrowed, or NULL */
    cJSON *msg;            /* owned: the whole request; everything below is borrowed from it */
    const cJSON *id;
    const cJSON *args;
    const cJSON *progress_token; /* or NULL */
    const struct catalog_tool *tool;
    char *id_text; /* owned, compact JSON of id */
    size_t id_len;
    uint32_t hash;
    void *data;
    double last_progress;
    bool has_progress;
    bool cancelling;    /* cancel_call is running: a late finish is dropped */
    const char *method; /* a resources/prompts request (borrowed from msg), NULL for a call */
};

/* A resources/prompts request: a call without a tool, so that it shares the table of ids in
 * flight, cancellation and batches. (mcp.h keeps it opaque.) */
struct mcp_request {
    struct mcp_call call; /* first: a request is converted to and from its call */
};

/* The calls in flight of one session, by id. Zero it to start; free buckets when done. */
struct mcp_calls {
    struct mcp_call **buckets; /* owned array; the calls are chained through their next */
    size_t nbuckets;           /* a power of two, or 0 before the first call */
    size_t count;              /* calls in the table */
};

/* One client session (mcp.h keeps it opaque). */
struct mcp_session {
    const struct catalog *cat;
    const struct mcp_backend *be;
    void *ctx;
    const struct mcp_server_info *info;
    const char *protocol;    /* one of protocol_versions, NULL before initialize */
    bool client_ready;       /* notifications/initialized seen */
    bool closing;            /* mcp_session_free is running: send nothing */
    size_t client_log_level; /* index into client_log_levels (logging/setLevel) */
    struct mcp_calls calls;  /* in flight, by id */
};

/* The hash of an id's compact JSON text; store it in the call's hash before mcp_calls_add. */
uint32_t mcp_calls_hash(const char *id_text, size_t len);

/* The call whose id text is id[0..len) (borrowed), or NULL. */
struct mcp_call *mcp_calls_find(const struct mcp_calls *t, const char *id, size_t len);

/* Links c (borrowed: the table does not own its calls) in. -1 only when no bucket could be
 * allocated at all; a failed grow just makes the chains longer. */
int mcp_calls_add(struct mcp_calls *t, struct mcp_call *c);

/* Unlinks c, which mcp_calls_add linked in. */
void mcp_calls_remove(struct mcp_calls *t, struct mcp_call *c);

/* ---- mcp.c: answering ---- */

/* Answers with a JSON-RPC error. id is borrowed (NULL -> null); the message is formatted. */
void mcp_reply_error(struct mcp_session *s, struct batch *batch, const cJSON *id, int code,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Answers with a result; takes ownership of result (NULL -> {}). */
void mcp_reply_result(struct mcp_session *s, struct batch *batch, const cJSON *id, cJSON *result);

/* Appends the JSON text of a request id: a string, an integer number, or null. */
void mcp_put_id(struct jsonbuf *b, const cJSON *id);

/* Unregisters and frees a call (or request), then lets its batch go on. */
void mcp_call_done(struct mcp_call *call);

/* ---- mcp_requests.c ---- */

/* True for resources/list, resources/read, prompts/list and prompts/get. */
bool mcp_requests_is_backend(const char *method);

/* Answers resources/templates/list. */
void mcp_requests_templates(struct mcp_session *s, struct batch *batch, const cJSON *id,
                            const cJSON *params);

/* Checks the params of a back-end method and hands it to the back end. Takes ownership of msg. */
void mcp_requests_start(struct mcp_session *s, struct batch *batch, cJSON *msg, const cJSON *id,
                        const char *method);

#endif /* COMMON_MCP_INT_H */
