/* daemon/prompts.h - the MCP prompts the daemon serves: explain_file {path}, fix_error {} and
 * scaffold {type, name?}, with the texts of the Runbox reference guide.
 *
 * Failures: an unknown prompt, a missing required argument, an argument that is not a string,
 * an unknown argument or a value outside its choices are ERR_INVALID; a missing file for
 * explain_file is ERR_NOT_FOUND (both become -32602 for MCP clients).
 * Thread-safety: any thread (the services in tools_ctx are any-thread). */
#ifndef DAEMON_PROMPTS_H
#define DAEMON_PROMPTS_H

#include <cjson/cJSON.h>

#include "errinfo.h"

struct tools_ctx;

#define PROMPTS_FILE_MAX  (256u << 10) /* bytes of a file put into explain_file */
#define PROMPTS_ERRORS_OF 500          /* fix_error looks at this many newest console entries */

/* {"prompts":[{"name","title","description","arguments":[{"name","description","required"}]}]}:
 * the daemon's prompts, then those of the external MCP servers (ctx->registry; ctx may be
 * NULL). Owned (cJSON_Delete), or NULL when out of memory. */
cJSON *prompts_list(const struct tools_ctx *ctx);

/* prompts/get: {"description","messages":[{"role":"user","content":{"type":"text","text"}}]}.
 * A name of an external server's prompt is got from that server.
 * args is the arguments object (borrowed; NULL = none). Returns 0 with *out owned
 * (cJSON_Delete), or -1 with err set. */
int prompts_get(const struct tools_ctx *ctx, const char *name, const cJSON *args, cJSON **out,
                struct errinfo *err);

/* Pure: the text of a prompt from its parts, owned (free) or NULL when out of memory. */
char *prompts_explain_text(const char *path, const char *contents);
char *prompts_fix_error_text(const char *errors);
char *prompts_scaffold_text(const char *type, const char *name);

#endif /* DAEMON_PROMPTS_H */
