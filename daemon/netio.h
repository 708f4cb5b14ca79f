/* daemon/netio.h - the byte plumbing the egress proxy and the port forwards share: writing all
 * of a buffer, reading an HTTP request head with a deadline, and relaying two sockets until
 * both directions are done.
 * Thread-safety: the functions touch only their arguments. */
#ifndef DAEMON_NETIO_H
#define DAEMON_NETIO_H

#include <stddef.h>
#include <sys/types.h>

#define NETIO_HEAD_MAX 16384

/* Writes all n bytes (MSG_NOSIGNAL). 0, or -1 when the peer is gone. */
int netio_write_all(int fd, const char *p, size_t n);

/* Reads from fd into buf (cap bytes, NUL-terminated) until a blank line ends a request head.
 * Returns the head's length (through the "\r\n\r\n"), with every byte read in *got (the head
 * and what followed it); -1 when the peer closed (*why NULL), or it took over timeout_ms, was
 * over cap - 1 bytes or held a NUL byte (*why says which). */
ssize_t netio_read_head(int fd, char *buf, size_t cap, int timeout_ms, size_t *got,
                        const char **why);

/* Copies a -> b and b -> a until both directions have ended: an end of stream is passed on as a
 * half-close (shutdown SHUT_WR); an error ends both. Sets TCP_NODELAY on both (TCP sockets). */
void netio_relay(int a, int b);

#endif /* DAEMON_NETIO_H */
