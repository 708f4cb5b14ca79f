/* common/http_conn.h - what civetweb does with a connection once an answer is written, so that
 * the answer can say so.
 *
 * civetweb (1.15, should_keep_alive) keeps a connection open after an answer when keep-alive is
 * enabled and: the client sent a Connection header that lists keep-alive, or it sent none and
 * speaks HTTP/1.1. Anything else closes it, HTTP/1.1 included ("Connection: TE" closes). An
 * answer that promised "Keep-Alive: timeout=5" on a connection civetweb then closed let a
 * client send its next request into the closing socket and get no answer, so every writer of
 * an answer head (the daemon's api.c and api_events.c, the MCP transport's mcp_http.c) asks
 * here and sends "Connection: close" instead.
 *
 * HTTP/1.0 has no chunked encoding: an event stream to such a client has no framing and ends
 * when the connection closes.
 *
 * Pure reads of the request civetweb parsed; any thread that has the connection. */
#ifndef COMMON_HTTP_CONN_H
#define COMMON_HTTP_CONN_H

#include <stdbool.h>

struct mg_connection;

/* True when civetweb, with keep-alive enabled, keeps conn open after this answer (the rule
 * above). The server's own reasons to close (an answer that says Connection: close, a guard
 * that cut the request) come on top. */
bool http_conn_keeps_alive(const struct mg_connection *conn);

/* True when conn's request is HTTP/1.1: its answer may be chunked. */
bool http_conn_is_http11(const struct mg_connection *conn);

#endif /* COMMON_HTTP_CONN_H */
