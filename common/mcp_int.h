/* common/mcp_int.h - what mcp.c shares with mcp_calls.c; not for other modules.
 * Thread-safety: as the session (owner thread only). */
#ifndef COMMON_MCP_INT_H
#define COMMON_MCP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcp.h"

struct batch;

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
    bool cancelling; /* cancel_call is running: a late finish is dropped */
};

/* The calls in flight of one session, by id. Zero it to start; free buckets when done. */
struct mcp_calls {
    struct mcp_call **buckets; /* owned array; the calls are chained through their next */
    size_t nbuckets;           /* a power of two, or 0 before the first call */
    size_t count;              /* calls in the table */
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

#endif /* COMMON_MCP_INT_H */
