/* daemon/portfwd.h - port forwards: a loopback port of the host that reaches a port a sandboxed
 * background process listens on (a dev server a person opens in the browser).
 *
 * DESIGN: each sandbox in network mode proxy or none has its own network namespace, which the
 * daemon cannot enter (setns needs privileges it does not have). Its setup process leaves an
 * agent in that namespace (proc.h): on request it makes a TCP socket there and passes it back
 * (SCM_RIGHTS). A socket's namespace is fixed when it is made, so the daemon then connects it to
 * 127.0.0.1:<port> itself and that connection lands inside the sandbox. In mode full the
 * sandbox shares the host's network and the forward connects on the host.
 *
 * A forward listens on 127.0.0.1 (a free port, or the one asked for). For each connection it
 * reads the first request head and checks its Host header as the daemon checks its own
 * (api_host_ok): a web page on another origin that rebinds a name to 127.0.0.1 is refused (403).
 * Then it connects into the sandbox; nothing listening there yet answers 502 with a page saying
 * so. After that the bytes are relayed both ways untouched (keep-alive, WebSockets). A forward
 * ends with its process (portfwd_detach) or with the daemon.
 *
 * Threads: one accept thread, one thread per connection (at most PORTFWD_CONN_MAX).
 * Thread-safety: any thread (internal lock; lock order: proc, then portfwd, then console). */
#ifndef DAEMON_PORTFWD_H
#define DAEMON_PORTFWD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

#define PORTFWD_PER_RUN  8   /* forwards of one process */
#define PORTFWD_CONN_MAX 512 /* connections through all forwards at once */

struct portfwd; /* opaque */

/* Starts the accept thread. Owned (portfwd_free) or NULL with err set. */
struct portfwd *portfwd_new(struct errinfo *err);

/* Ends every forward and connection and frees. NULL is a no-op. */
void portfwd_free(struct portfwd *pf);

/* Run (a process registry id) has a sandbox: agent_fd is its network agent (taken over), or -1
 * when it shares the host's network. */
void portfwd_attach(struct portfwd *pf, uint64_t run, int agent_fd);

/* Run ended: its forwards stop listening, their connections are closed. */
void portfwd_detach(struct portfwd *pf, uint64_t run);

/* Forwards 127.0.0.1:host_port (0 = a free one) to port inside run's sandbox and writes the URL
 * ("http://127.0.0.1:41234/") into url. ERR_NOT_FOUND: run is not running; ERR_EXISTS: port is
 * already exposed (the message has its URL) or host_port is taken; ERR_TOO_LARGE: the run has
 * PORTFWD_PER_RUN forwards. */
int portfwd_expose(struct portfwd *pf, uint64_t run, uint16_t port, uint16_t host_port, char *url,
                   size_t urlsz, struct errinfo *err);

/* [{"port": 3000, "url": "http://127.0.0.1:41234/"}, ...] for run (empty when none). Owned or
 * NULL. */
cJSON *portfwd_urls_json(struct portfwd *pf, uint64_t run);

#endif /* DAEMON_PORTFWD_H */
