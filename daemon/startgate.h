/* daemon/startgate.h - how many stdio MCP servers start at once.
 *
 * Starting a server is mostly CPU: a Node server is about a quarter of a second of it. Ten
 * started together on two cores are all ready only after the ten quarters, the first as late as
 * the last, and meanwhile the daemon's own answers wait for a core too. Through the gate at most
 * `slots` start at once (by default as many as there are cores), so the first are ready after
 * their own start time and the rest follow; the last is ready no later than before. A slot is
 * given back when its server is ready, when the attempt ends, or after hold_ms however it goes:
 * a server that waits on the network at start (npx fetching a package) or hangs in initialize
 * holds the next ones back by hold_ms at most.
 *
 * Thread-safety: any thread (internal lock). */
#ifndef DAEMON_STARTGATE_H
#define DAEMON_STARTGATE_H

#include <stdint.h>

#include "errinfo.h"

#define STARTGATE_HOLD_MS 1000 /* the longest a starting server keeps its slot */

struct startgate; /* opaque */

/* slots: servers starting at once (>= 1); hold_ms: how long one may keep its slot. Owned
 * (startgate_free) or NULL with err. */
struct startgate *startgate_new(unsigned slots, int hold_ms, struct errinfo *err);

void startgate_free(struct startgate *g); /* after startgate_close and every leave; NULL: no-op */

/* Waits for a slot. Returns a ticket for startgate_leave (never 0), or 0 once the gate is
 * closed. */
uint64_t startgate_enter(struct startgate *g);

/* Gives the ticket's slot back; a ticket whose slot was taken back already (hold_ms passed) or
 * 0 does nothing, so each place that may end a start can call it. */
void startgate_leave(struct startgate *g, uint64_t ticket);

/* Wakes every waiter with 0 and lets no one in any more (the daemon stops). */
void startgate_close(struct startgate *g);

/* The number of slots for "as many as there are cores": the online CPUs, at least 2. */
unsigned startgate_cores(void);

#endif /* DAEMON_STARTGATE_H */
