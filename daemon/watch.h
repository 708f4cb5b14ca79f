/* daemon/watch.h - resource watches: which resources clients are subscribed to, and finding out
 * when one changes, whoever changed it.
 *
 * A subscription counts: every client that subscribes to a URI adds one and removes one when it
 * unsubscribes or goes away; the URI is watched while the count is above zero. A change of a
 * watched resource is published on the event feed (events_publish_resource_updated), from where
 * every subscribed client hears it:
 * - file:///<path>: a workspace file, watched with inotify on its directory, so that a write by
 *   a tool, by an exec run, or by any program on the host is seen (a file replaced by rename, as
 *   the file tools write, too). A file that does not exist yet is announced when it is created;
 *   when its directory does not exist yet either, the nearest existing ancestor is watched and the
 *   watch moves down as the directories appear. Removal is a change.
 * - runbox://console/logs: changes with every console entry.
 * - runbox://process/list: changes when a run starts or ends (its console entries say so).
 * Changes of one resource are told at once, then at most every WATCH_COALESCE_MS while they go
 * on (an npm install rewriting a file thousands of times sends a few notifications, the last one
 * after the last change).
 *
 * Thread-safety: every function may be called from any thread. */
#ifndef DAEMON_WATCH_H
#define DAEMON_WATCH_H

#include <stddef.h>

#include "errinfo.h"

#define WATCH_COALESCE_MS 250
#define WATCH_MAX         4096 /* URIs watched at once */

struct watch; /* opaque */
struct events;
struct vfs;

/* Starts watching for ev (published to) in the workspace v (both borrowed; must outlive the
 * watch). Returns an owned watch (watch_free) or NULL with err. */
struct watch *watch_new(struct events *ev, struct vfs *v, struct errinfo *err);

/* Stops the watcher thread and frees everything. NULL is a no-op. */
void watch_free(struct watch *w);

/* Counts one more subscriber of uri. ERR_INVALID for a URI that names no resource of this
 * daemon (a path outside the workspace, an unknown scheme), ERR_TOO_LARGE past WATCH_MAX URIs. */
int watch_add(struct watch *w, const char *uri, struct errinfo *err);

/* Counts one subscriber of uri less (no-op for a URI not watched). */
void watch_remove(struct watch *w, const char *uri);

/* The list of workspace files may have changed (a tool created or removed a file, an exec run
 * ended): notifications/resources/list_changed, coalesced as above. NULL w: no-op. */
void watch_resources_changed(struct watch *w);

/* How many URIs are watched (for /health). */
size_t watch_count(struct watch *w);

#endif /* DAEMON_WATCH_H */
