/* daemon/api_resources.h - the HTTP side of MCP resources, prompts and completion: GET
 * /resources [?cursor=C], GET /resource?uri=U, GET /prompts, POST /prompt/<name> (body: the
 * arguments object, or none) and POST /complete (body: completion/complete's params). api.c's
 * route() calls these after its Host, Origin and token checks.
 *
 * Answers: 200 {"ok":true,"result":<the MCP result object>}; a bad cursor, URI, prompt name or
 * argument is 400 and a missing file 404, as {"ok":false,"error":"<message for the client>"};
 * the proxy turns every 4xx into JSON-RPC -32602 with that message.
 * Thread-safety: any thread. */
#ifndef DAEMON_API_RESOURCES_H
#define DAEMON_API_RESOURCES_H

#include <stdbool.h>

struct mg_connection;
struct tools_ctx;

#define API_PROMPT_BODY_MAX (64u << 10) /* the arguments of a POST /prompt/<name> */

/* True when path is one of the endpoints above. */
bool api_resources_is_path(const char *path);

/* Answers one of them (path passed api_resources_is_path) and returns the HTTP status. */
int api_resources_handle(const struct tools_ctx *ctx, struct mg_connection *conn,
                         const char *method, const char *path);

#endif /* DAEMON_API_RESOURCES_H */
