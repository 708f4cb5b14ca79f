/* daemon/connwatch.h - notices when an HTTP client goes away while its request is being served.
 *
 * civetweb hands a request to a worker thread and does not look at the connection again until
 * the handler returns, so a client that drops a long call (curl interrupted, the proxy aborting
 * a cancelled call, an MCP client closing the response stream) would leave the work running to
 * its end, with its side effects. A transport that starts a long call therefore registers the
 * connection's socket here (an epoll registration: no other thread is woken); one thread waits
 * for the peer's close of any of them (EPOLLRDHUP, EPOLLHUP, EPOLLERR) and then runs the entry's
 * callback once: the call is cancelled.
 *
 * civetweb does not expose a connection's socket, so connwatch_find_socket() finds it among the
 * process's descriptors by the connection's addresses, which identify a TCP connection. It costs
 * a scan of the open descriptors, so it is only done for calls that may run long, and each
 * thread remembers the socket it found last until the connection it serves closes
 * (connwatch_forget_socket): a kept-alive connection's later calls find it without a system
 * call.
 *
 * Thread-safety: any thread (internal lock). Callbacks run on the watcher's thread with the
 * watcher's lock held (lock order: connwatch, then what the callback takes: a call, then the
 * proc or bridge lock); they must not call back into the watcher. */
#ifndef DAEMON_CONNWATCH_H
#define DAEMON_CONNWATCH_H

#include "errinfo.h"

#define CONNWATCH_MAX 1024 /* sockets watched at once; more are simply not watched */

struct connwatch; /* opaque */

/* Starts the watcher thread. Returns an owned watcher (connwatch_free) or NULL with err set. */
struct connwatch *connwatch_new(struct errinfo *err);

/* Stops the thread and frees w. Nothing may be registered any more. NULL is a no-op. */
void connwatch_free(struct connwatch *w);

/* Watches fd (borrowed: it must stay open until connwatch_remove) until removed: when its peer
 * closes it or the connection breaks, fn(arg) runs once. Returns an entry id (>= 0) for
 * connwatch_remove, or -1 (err set: ERR_TOO_LARGE when CONNWATCH_MAX are watched). */
int connwatch_add(struct connwatch *w, int fd, void (*fn)(void *arg), void *arg,
                  struct errinfo *err);

/* Stops watching entry id. Once it returns, its callback neither runs nor will run. */
void connwatch_remove(struct connwatch *w, int id);

/* The descriptor of this process's TCP socket whose peer is peer_addr:peer_port (numeric, as
 * civetweb reports it) and whose local port is local_port, or -1 when there is none. The
 * calling thread remembers it: the same ports give the same descriptor, unchecked, until
 * connwatch_forget_socket() on this thread. */
int connwatch_find_socket(const char *peer_addr, int peer_port, int local_port);

/* The connection this thread serves is closing: the socket it found for it is forgotten. The
 * HTTP server's connection_close callback calls it (on the worker of that connection, before
 * the socket is closed and its number reused). */
void connwatch_forget_socket(void);

#endif /* DAEMON_CONNWATCH_H */
