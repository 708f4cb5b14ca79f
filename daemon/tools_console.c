/* daemon/tools_console.c - the console tool: console_logs, as common/tools/console.json
 * describes it, over the console ring (console.h). */
#include "tools.h"

#include <stdlib.h>
#include <string.h>

#include "console.h"

int tools_console_logs(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                       struct tools_result *out, struct errinfo *err)
{
    const cJSON *level = cJSON_GetObjectItemCaseSensitive(args, "level");
    const cJSON *source = cJSON_GetObjectItemCaseSensitive(args, "source");
    const cJSON *since = cJSON_GetObjectItemCaseSensitive(args, "since_id");
    const cJSON *limit = cJSON_GetObjectItemCaseSensitive(args, "limit");
    struct console_query q = {.level = -1, .source = -1, .limit = 100};
    cJSON *res;

    (void)call;
    if (!ctx->console) {
        errinfo_set(err, ERR_UNAVAILABLE, "the console is not running in this daemon");
        return -1;
    }
    /* The schema checked types, enums and ranges; these apply the defaults. */
    if (cJSON_IsString(level))
        q.level = console_parse_level(level->valuestring);
    if (cJSON_IsString(source))
        q.source = console_parse_source(source->valuestring);
    if (cJSON_IsNumber(since) && since->valuedouble > 0)
        q.since_id =
            since->valuedouble >= 9007199254740992.0 ? UINT64_MAX : (uint64_t)since->valuedouble;
    if (cJSON_IsNumber(limit) && limit->valuedouble >= 1 && limit->valuedouble <= 1000)
        q.limit = (size_t)limit->valuedouble;
    res = console_query_json(ctx->console, &q);
    out->data = res ? cJSON_PrintUnformatted(res) : NULL;
    cJSON_Delete(res);
    if (!out->data) {
        errinfo_set(err, ERR_NOMEM, "console_logs: out of memory building the answer");
        return -1;
    }
    out->len = strlen(out->data);
    out->is_json = true;
    return 0;
}
