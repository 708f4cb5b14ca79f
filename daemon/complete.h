/* daemon/complete.h - completion/complete for runboxd's prompt and resource-template arguments:
 * scaffold's `type` (bun-api, python-script, fullstack), explain_file's `path` and the file
 * template's `{path}` (workspace entries that begin with what was typed; directories end with
 * '/'). Answered on /mcp, /sse, /ws and, for runbox, at POST /complete.
 *
 * Thread-safety: any thread. */
#ifndef DAEMON_COMPLETE_H
#define DAEMON_COMPLETE_H

#include <cjson/cJSON.h>

#include "errinfo.h"

#define COMPLETE_MAX 100 /* values one answer holds (total counts them all) */

struct tools_ctx;

/* params: the request's {"ref":{"type","name"|"uri"},"argument":{"name","value"},"context"?}.
 * Returns 0 with *out = {"completion":{"values":[...],"total":N,"hasMore":bool}} (owned), or
 * -1 with err: ERR_INVALID naming what params lack. An argument with nothing to offer is an
 * empty list, not an error. */
int complete_answer(const struct tools_ctx *t, const cJSON *params, cJSON **out,
                    struct errinfo *err);

#endif /* DAEMON_COMPLETE_H */
