/* daemon/mcpclient_int.h - private to the MCP client (mcpclient.c and its transports
 * mcpclient_stdio.c, mcpclient_http.c, mcpclient_ws.c): the transport table and what the core
 * offers the transports. A transport only moves whole JSON-RPC messages; the core knows the
 * protocol. Every function here runs on the client's own thread, except where it says
 * otherwise. */
#ifndef DAEMON_MCPCLIENT_INT_H
#define DAEMON_MCPCLIENT_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "errinfo.h"
#include "mcpclient.h"

struct registry_spec;

/* A transport is one function: run one connection to its end. It opens the connection (spawns
 * the child, connects the socket), calls mcpclient__opened(), and then, until the connection
 * ends or mcpclient__should_end() says so: sends what mcpclient__next_out() gives, hands every
 * message that arrives to mcpclient__receive(), and waits (poll) on its own descriptors plus
 * mcpclient__wake_fd() for at most mcpclient__poll_ms(). It closes all it opened and returns,
 * with why set to what ended the connection (a message naming the cause). */
struct mcpclient_transport {
    const char *name; /* "stdio", "http", "sse", "ws" */
    void (*run)(struct mcpclient *c, struct errinfo *why);
};

extern const struct mcpclient_transport mcpclient__stdio;
extern const struct mcpclient_transport mcpclient__http; /* Streamable HTTP and legacy SSE */
extern const struct mcpclient_transport mcpclient__ws;

const struct registry_spec *mcpclient__spec(const struct mcpclient *c);
const struct mcpclient_options *mcpclient__options(const struct mcpclient *c);

int mcpclient__wake_fd(const struct mcpclient *c); /* readable when there is work */
void mcpclient__drain_wake(struct mcpclient *c);
void mcpclient__opened(struct mcpclient *c); /* the connection is up: the handshake starts */
void mcpclient__receive(struct mcpclient *c, const char *json, size_t len);

/* A request that will get no answer (its transfer failed): the call waiting for request id
 * fails now with "<server>: why" (why redacted, registry_redact). False when no call waits for
 * id: an internal request (the handshake's), which the transport answers as the server would. */
bool mcpclient__fail_waiter(struct mcpclient *c, uint64_t id, enum errinfo_kind kind,
                            const char *why);

/* A message too large to keep (bytes long): head and tail are its first and last bytes, where
 * an id may be found, so that the request it answers fails at once with ERR_TOO_LARGE. */
void mcpclient__oversized(struct mcpclient *c, size_t bytes, const char *head, size_t head_len,
                          const char *tail, size_t tail_len);

/* The first and last bytes of a message too large to keep, which mcpclient__oversized looks in
 * for its id: bytes go in with mcpclient__edges_add as they arrive, in order. */
#define MCPCLIENT_EDGE 1024
struct mcpclient_edges {
    char head[MCPCLIENT_EDGE], tail[MCPCLIENT_EDGE];
    size_t head_len, tail_len;
};
void mcpclient__edges_add(struct mcpclient_edges *e, const char *p, size_t n);

/* The next message to send (owned, *len bytes, no newline), or NULL when none waits. */
char *mcpclient__next_out(struct mcpclient *c, size_t *len);

/* The stdio child's stdin (non-blocking), while the connection serves it; -1 before the
 * transport closes it. Requests from other threads are then written to it at once when
 * nothing is queued and the transport is not writing a message it took (it asks
 * mcpclient__next_out for the next one only once the last one is written). */
void mcpclient__set_direct_fd(struct mcpclient *c, int fd);

/* Leader/follower reading of a stdio server's stdout: a worker waiting in mcpclient_request
 * reads the server's answers itself instead of being woken by the client's thread, one
 * wake-up and a hand-over fewer per call. One thread at a time holds the reader's turn: the
 * client's thread while no call waits (it needs stdout for notifications and the end of the
 * connection), else one waiting worker, which hands the turn to the next waiter when its own
 * answer is in. read_fn(c, arg) reads what fd has and hands each line to
 * mcpclient__receive_lent(); it returns 0, 1 at the end of the file, -1 on an error, and runs
 * only on the thread holding the turn, so what it reads into needs no lock of its own.
 *
 * The transport offers fd once the connection serves (mcpclient__offer_reader), asks at each
 * turn of its loop whether it reads fd itself (mcpclient__reader_turn), and withdraws fd
 * before it closes it (mcpclient__withdraw_reader, which waits until no worker reads it). */
typedef int (*mcpclient_read_fn)(struct mcpclient *c, void *arg);
void mcpclient__offer_reader(struct mcpclient *c, int fd, mcpclient_read_fn fn, void *arg);
void mcpclient__withdraw_reader(struct mcpclient *c);

/* The client's thread, at each turn of its loop: handles what workers read for it, and says
 * whether it polls and reads fd itself now (true) or leaves it to the workers; *poll_ms is
 * lowered to when it must ask again. *ended: a worker read the end of fd (or an error). */
bool mcpclient__reader_turn(struct mcpclient *c, int *poll_ms, bool *ended);

/* mcpclient__receive and mcpclient__oversized on a worker holding the reader's turn: answers to
 * waiters and progress are handled at once; anything else goes to the client's thread. */
void mcpclient__receive_lent(struct mcpclient *c, const char *json, size_t len);
void mcpclient__oversized_lent(struct mcpclient *c, size_t bytes, const char *head, size_t head_len,
                               const char *tail, size_t tail_len);

/* Puts a message taken with mcpclient__next_out back at the front (the transport could not
 * send it yet). Takes ownership. */
void mcpclient__unsend(struct mcpclient *c, char *msg, size_t len);

/* True when the connection must end now (mcpclient_stop, or the handshake failed or timed
 * out); why says so. Also expires the handshake's deadline. */
bool mcpclient__should_end(struct mcpclient *c, struct errinfo *why);

/* How long the transport may wait in poll() (ms): until the handshake's deadline, at most
 * 1000. */
int mcpclient__poll_ms(struct mcpclient *c);

/* One line of the server's stderr (stdio): into the console (rate-bounded) and the tail kept
 * for error messages. */
void mcpclient__stderr_line(struct mcpclient *c, const char *line, size_t len);

/* The protocol version the session negotiated, or NULL before initialize answered. */
const char *mcpclient__protocol(struct mcpclient *c);

/* The stdio child's pid (0 when it is gone), for the status. */
void mcpclient__set_pid(struct mcpclient *c, long pid);

/* The handshake starts over on another wire (Streamable HTTP falling back to legacy SSE):
 * the internal requests and the queue are dropped; call mcpclient__opened() again. */
void mcpclient__reset(struct mcpclient *c);

/* A transport's memory across connections (which wire a URL speaks): 0 until set. */
#define MCPCLIENT_HINT_SSE 1 /* "type": "http" fell back to legacy SSE: the URL speaks that */
int mcpclient__hint(struct mcpclient *c);
void mcpclient__set_hint(struct mcpclient *c, int hint);

/* Waits up to ms for mcpclient_stop (the back-off and transports' retry waits): true when
 * stopping. */
bool mcpclient__sleep(struct mcpclient *c, int ms);

#endif /* DAEMON_MCPCLIENT_INT_H */
