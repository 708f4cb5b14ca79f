/* daemon/events.h - the daemon's event feed: what changed, in order, for whoever listens.
 *
 * Producers publish and never wait: a console entry (console.c, through its listener), a list
 * change (tools, prompts, resources), a resource update (a workspace file, the console, the
 * process list changed). Each event is copied into a bounded queue; one dispatcher thread hands
 * them, in publication order, to every listener that asked for their kind. The listeners are
 * the MCP sessions of /mcp, /sse and /ws (api_mcp.c) and the GET /events streams of runbox and
 * the status page (api_events.c).
 *
 * A listener is called on the dispatcher thread, one event at a time, and must not block for
 * long (copy what it needs into its own bounded queue); it may publish, but must not call
 * events_listen/events_unlisten. When the dispatcher falls more than EVENTS_QUEUE_MAX events
 * behind, the oldest are dropped and every listener gets one EVENTS_DROPPED event with their
 * count before the next event, so that a follower knows to re-read (console_logs since_id).
 *
 * Thread-safety: every function may be called from any thread. */
#ifndef DAEMON_EVENTS_H
#define DAEMON_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "console.h"
#include "errinfo.h"

#define EVENTS_QUEUE_MAX     8192
#define EVENTS_LISTENERS_MAX 1024

enum events_kind {
    EVENTS_CONSOLE = 1,          /* a console entry: console, json = the entry as console_logs
                                    gives it */
    EVENTS_LIST_CHANGED = 2,     /* lists (enum events_list bits) changed */
    EVENTS_RESOURCE_UPDATED = 4, /* the resource uri changed */
    EVENTS_DROPPED = 8           /* count events were lost (always delivered) */
};

/* The same bits as the MCP engine's enum mcp_list. */
enum events_list { EVENTS_LIST_TOOLS = 1, EVENTS_LIST_PROMPTS = 2, EVENTS_LIST_RESOURCES = 4 };

struct events_event {
    enum events_kind kind;
    uint64_t seq; /* 1, 2, ... in publication order, also across drops */
    /* The event's data as compact JSON: a console entry {"id","ts","level","source",
     * "message","pid"?,"instance"?}; {"lists":["tools",...]}; {"uri":"..."}; {"count":N}. */
    const char *json;
    size_t json_len;
    const struct console_entry_view *console; /* EVENTS_CONSOLE */
    unsigned lists;                           /* EVENTS_LIST_CHANGED */
    const char *uri;                          /* EVENTS_RESOURCE_UPDATED */
    uint64_t dropped;                         /* EVENTS_DROPPED */
};

typedef void (*events_fn)(void *arg, const struct events_event *ev);

struct events; /* opaque */

/* Starts the feed and its dispatcher thread. Returns an owned feed (events_free) or NULL with
 * err. */
struct events *events_new(struct errinfo *err);

/* Stops the dispatcher (events still queued are delivered first) and frees the feed. Every
 * listener must be gone. NULL is a no-op. */
void events_free(struct events *ev);

/* Calls fn(arg, event) for every event of these kinds (an OR of enum events_kind) published
 * from now on. Returns a handle >= 0 for events_unlisten, or -1 with err (ERR_TOO_LARGE when
 * EVENTS_LISTENERS_MAX listen already). */
int events_listen(struct events *ev, unsigned kinds, events_fn fn, void *arg, struct errinfo *err);

/* Removes a listener; when it returns, fn is not running and is not called again. Must not be
 * called from a listener. A negative handle is a no-op. */
void events_unlisten(struct events *ev, int handle);

/* The producers. Each copies what it is given and returns at once; a NULL feed is a no-op. */
void events_publish_console(struct events *ev, const struct console_entry_view *entry);
void events_publish_list_changed(struct events *ev, unsigned lists);
void events_publish_resource_updated(struct events *ev, const char *uri);

/* Waits until every event published before the call has been delivered (for tests and for an
 * orderly stop). */
void events_flush(struct events *ev);

#endif /* DAEMON_EVENTS_H */
