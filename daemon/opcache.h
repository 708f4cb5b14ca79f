/* daemon/opcache.h - retry safety: the answers of recent calls that carried an operation_id,
 * by tool and id, kept for OPCACHE_WINDOW_MS, so that a repeated call gets the first answer
 * instead of applying a change twice (a client that lost an answer, or retried after a
 * timeout of its own, can repeat safely). The Studio bridge keeps one for Studio tools
 * (bridge_call), the call service one for the daemon's own tools (call_run).
 *
 * A call claims its operation first: the first call with an id runs and then finishes it (its
 * answer is kept when its outcome is known); a repeat gets a copy of that answer, or waits
 * while the first still runs, until it is answered, the wait runs out, or the repeat is
 * cancelled (opcache_cancel, by call id; a cancel that comes before the claim is remembered).
 *
 * Thread-safety: any thread (an internal lock); never call it with a lock the cancel path
 * takes. */
#ifndef DAEMON_OPCACHE_H
#define DAEMON_OPCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errinfo.h"

#define OPCACHE_WINDOW_MS 600000 /* an operation_id's answer is replayed this long */
#define OPCACHE_MAX       64     /* operation_ids remembered at once */

/* An answer. Storage is the caller's; data and structured are owned (opcache_answer_cleanup). */
struct opcache_answer {
    bool ok;                /* the call succeeded */
    bool is_json;           /* ok: data is JSON text (else plain text) */
    enum errinfo_kind kind; /* !ok: why */
    char *data;             /* NUL-terminated: the result, or the error message */
    size_t len;
    char *structured; /* or NULL: JSON text of the structured result beside a text one */
};

void opcache_answer_cleanup(struct opcache_answer *a); /* safe on a zeroed struct */

struct opcache; /* opaque */

struct opcache *opcache_new(void); /* owned (opcache_free) or NULL */
void opcache_free(struct opcache *o);

enum opcache_claim {
    OPCACHE_RUN,       /* first call with this id: run it, then opcache_finish */
    OPCACHE_REPLAY,    /* *out holds (a copy of) the first call's answer */
    OPCACHE_BUSY,      /* the first call is still running after wait_ms; *out says so */
    OPCACHE_CANCELLED, /* the wait was cancelled (opcache_cancel); *out says so */
};

/* Looks operation op of tool up for the call call_id; waits up to wait_ms while its first call
 * runs, unless call_id is cancelled meanwhile or was just before. *out is filled for REPLAY,
 * BUSY (ERR_UNAVAILABLE) and CANCELLED (ERR_CANCELLED); its data is NULL when out of memory. */
enum opcache_claim opcache_claim(struct opcache *o, const char *tool, const char *op,
                                 const char *call_id, int64_t wait_ms, struct opcache_answer *out);

/* Ends the wait of the claim made for call_id, if one waits; else remembers call_id (the last
 * few) so that its claim, should it come, is cancelled at once. True when one waited. */
bool opcache_cancel(struct opcache *o, const char *call_id);

/* Ends a call that opcache_claim said to run: keeps a copy of ans (borrowed) when keep (the
 * outcome is known), else forgets the id (a retry runs again). */
void opcache_finish(struct opcache *o, const char *tool, const char *op,
                    const struct opcache_answer *ans, bool keep);

#endif /* DAEMON_OPCACHE_H */
