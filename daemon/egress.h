/* daemon/egress.h - the egress proxy: the only way out of a sandbox in network mode "proxy".
 *
 * DESIGN: each sandbox has a network namespace of its own with only loopback. Before bwrap
 * starts, the sandbox's setup process (proc_spawn.c) opens a TCP listener on 127.0.0.1:3128
 * *inside* that namespace and hands the listening socket to the daemon (SCM_RIGHTS), which
 * attaches it here. A command's proxy connections therefore arrive straight at runboxd: no relay
 * process runs in the sandbox and no host port is opened. Each listener belongs to one run, so
 * every denial is attributed to that run (console entry with its pid, a note in its result).
 *
 * A connection carries one proxy request: "CONNECT host:port" (a tunnel, for HTTPS and
 * anything else) or a plain HTTP request with an absolute URI ("GET http://host/path"). The
 * host must match the allow list (netpolicy.h); its addresses are resolved here, and loopback,
 * link-local, private, reserved and the host's own addresses are refused unless an exact rule
 * (not a wildcard, not a default) names the host. The connection is made to the address that
 * was checked, so a name that changes its answer cannot slip past the check. A denial answers
 * at once (403, reason in the status line, the X-Runbox-Denied header and the body).
 *
 * The default allow list is the registries the host's npm and pip use (registries.h), learnt
 * by a background thread at start; a request that arrives before that is done waits for it.
 *
 * Threads: one accept thread (poll over every listener), one thread per connection (at most
 * EGRESS_CONN_MAX), one discovery thread at start. Thread-safety: any thread (internal lock). */
#ifndef DAEMON_EGRESS_H
#define DAEMON_EGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"
#include "exec.h"
#include "netpolicy.h"

#define EGRESS_PORT      3128 /* the proxy's address inside every sandbox: 127.0.0.1:3128 */
#define EGRESS_CONN_MAX  256  /* connections at once, all sandboxes together */
#define EGRESS_HEAD_MAX  16384
#define EGRESS_NOTES_MAX 8 /* distinct denials remembered per run */

struct console;

struct egress_options {
    const struct netpolicy *policy; /* the mode and the user's rules (flags, config); copied */
    bool defaults;                  /* add the registries of the host's npm and pip */
    const char *tools_path;         /* where npm and python3 are looked up; NULL = the sandbox's */
    /* The defaults' discovery (a Node and a Python start, ~0.5 CPU-seconds) waits until
     * egress_discover_now(), a sandbox that needs the rules, or defer_ms (0: it starts at once):
     * runboxd defers it while its external servers start, which it slowed by a quarter. */
    int defer_ms;
    struct console *console; /* borrowed, may be NULL; outlives the egress */
};

struct egress; /* opaque */

/* Starts the accept thread (and the discovery thread when opt->defaults). Owned (egress_free)
 * or NULL with err set. */
struct egress *egress_new(const struct egress_options *opt, struct errinfo *err);

/* Starts the discovery of the defaults now, if it waits (egress_options.defer_ms). Any thread;
 * NULL is a no-op. */
void egress_discover_now(struct egress *e);

/* Closes every listener and connection, waits for the threads and frees. NULL is a no-op. */
void egress_free(struct egress *e);

/* Serves the listening socket of run (process registry id). Takes ownership of listen_fd (it
 * is closed on failure too). */
int egress_attach(struct egress *e, uint64_t run, int listen_fd, struct errinfo *err);

/* The run ended: its listener and its open connections are closed, its notes dropped. */
void egress_detach(struct egress *e, uint64_t run);

/* The variables that point the sandbox's npm and pip at the registries the host's use
 * (npm_config_registry, PIP_INDEX_URL, PIP_EXTRA_INDEX_URL), into out (at most max; the strings
 * are borrowed for the egress's lifetime). Waits (bounded) until the defaults are known.
 * Returns how many. */
size_t egress_sandbox_env(struct egress *e, struct exec_env *out, size_t max);

/* The denials of run since the last call, one "[network: ...]" line each (with a final
 * newline), or NULL when there were none. Owned (free()). */
char *egress_take_notes(struct egress *e, uint64_t run);

/* {"mode","proxy","allow":[{"rule","from"}...],"defaults":{"state":"ready"|"resolving"|
 * "waiting"|"off","npm":null|"why not","pip":...},"connections":N,"denied":N} for /health
 * ("waiting": the discovery is deferred, egress_options.defer_ms). Owned or NULL. */
cJSON *egress_json(struct egress *e);

/* Pure, for the unit test. Parses a proxy request head (up to and including the blank line):
 * *connect is true for CONNECT; host (no brackets) and port from the authority; for a plain
 * request, *path_off is the offset of the origin-form path in the request target. -1 with a
 * message in why (for the 400 answer) when it is not a proxy request. */
int egress_parse_head(const char *head, size_t len, bool *connect, char *host, size_t hostsz,
                      uint16_t *port, size_t *target_off, size_t *target_len, char *why,
                      size_t whysz);

#endif /* DAEMON_EGRESS_H */
