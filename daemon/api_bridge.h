/* daemon/api_bridge.h - the HTTP side of the Studio bridge: the plugin endpoints (GET /poll,
 * POST /result, POST /console, POST /disconnect) and the answer of a POST /tool/<name> whose
 * catalog route is "studio". api.c's route() calls these after its Host, Origin and token
 * checks; see docs/studio.md for the wire format.
 *
 * Thread-safety: any thread (the bridge and the console have their own locks). */
#ifndef DAEMON_API_BRIDGE_H
#define DAEMON_API_BRIDGE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

struct mg_connection;
struct tools_ctx;

/* The limit of a POST /console or /disconnect body. (/result has BRIDGE_RESULT_MAX.) */
#define API_BRIDGE_BODY_MAX (4u << 20)

/* A result body over BRIDGE_RESULT_MAX is still read (not kept) up to this many bytes to find
 * its command id, so that the call fails at once; past it the connection is closed unread. */
#define API_BRIDGE_DRAIN_MAX (64u << 20)

/* True when path is one of the plugin endpoints. */
bool api_bridge_is_path(const char *path);

/* Answers a plugin endpoint (path passed api_bridge_is_path) and returns the HTTP status. */
int api_bridge_handle(const struct tools_ctx *ctx, struct mg_connection *conn, const char *method,
                      const char *path);

#endif /* DAEMON_API_BRIDGE_H */
