/* daemon/bridge_int.h - private to the Studio bridge's files (bridge.c, bridge_ops.c,
 * bridge_json.c) and its unit test. */
#ifndef DAEMON_BRIDGE_INT_H
#define DAEMON_BRIDGE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "bridge.h"

/* ---- retry safety (bridge_ops.c) ----
 * The answers of recent calls that carried an operation_id, by tool and id, kept for
 * BRIDGE_OP_WINDOW_MS: a repeated call gets the first answer instead of being applied twice.
 * Thread-safety: any thread (an internal lock); never called with the bridge's lock held. */
struct bridge_ops;

struct bridge_ops *bridge_ops__new(void); /* owned (bridge_ops__free) or NULL */
void bridge_ops__free(struct bridge_ops *o);

enum bridge_op_claim {
    BRIDGE_OP_RUN,       /* first call with this id: run it, then bridge_ops__finish */
    BRIDGE_OP_REPLAY,    /* *out holds (a copy of) the first call's answer */
    BRIDGE_OP_BUSY,      /* the first call is still running after wait_ms; *out says so */
    BRIDGE_OP_CANCELLED, /* the wait was cancelled (bridge_ops__cancel); *out says so */
};

/* Looks the operation up; waits up to wait_ms while its first call runs, unless the call
 * call_id (the one claiming) is cancelled meanwhile or was just before. */
enum bridge_op_claim bridge_ops__claim(struct bridge_ops *o, const char *tool, const char *op,
                                       const char *call_id, int64_t wait_ms,
                                       struct bridge_reply *out);

/* Ends the wait of the claim made for call_id, if one waits; else remembers call_id (the last
 * few) so that its claim, should it come, is cancelled at once. True when one waited. */
bool bridge_ops__cancel(struct bridge_ops *o, const char *call_id);

/* Ends a call that bridge_ops__claim said to run: keeps a copy of rep when keep (the plugin
 * answered, so the outcome is known), else forgets the id (a retry runs again). */
void bridge_ops__finish(struct bridge_ops *o, const char *tool, const char *op,
                        const struct bridge_reply *rep, bool keep);

/* ---- answers (bridge_json.c) ---- */

/* Adds "name":value_json as the first member of r's result when it is a JSON object (ok and
 * is_json); anything else is left alone. Returns 0, or -1 when out of memory (r unchanged). */
int bridge__add_member(struct bridge_reply *r, const char *name, const char *value_json);

#endif /* DAEMON_BRIDGE_INT_H */
