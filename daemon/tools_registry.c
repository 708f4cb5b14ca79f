/* daemon/tools_registry.c - the mcp_servers tool: the state of the external MCP servers
 * (registry.h), the same as GET /mcp-servers. Read-only by design: no tool can add, change or
 * start a server. */
#include "tools.h"

#include <string.h>

#include "registry.h"

int tools_mcp_servers(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                      struct tools_result *out, struct errinfo *err)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(args, "name");
    cJSON *st, *servers, *s, *next;

    (void)call;
    if (!ctx->registry) {
        errinfo_set(err, ERR_UNAVAILABLE, "no registry of external MCP servers runs here");
        return -1;
    }
    st = registry_status_json(ctx->registry);
    servers = cJSON_GetObjectItemCaseSensitive(st, "servers");
    if (cJSON_IsString(name)) {
        for (s = servers ? servers->child : NULL; s; s = next) {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(s, "name");

            next = s->next;
            if (!cJSON_IsString(n) || strcmp(n->valuestring, name->valuestring) != 0)
                cJSON_Delete(cJSON_DetachItemViaPointer(servers, s));
        }
        if (!cJSON_GetArraySize(servers)) {
            cJSON_Delete(st);
            errinfo_set(err, ERR_NOT_FOUND,
                        "no MCP server is named %.100s; call mcp_servers without a name to list "
                        "them",
                        name->valuestring);
            return -1;
        }
    }
    out->data = st ? cJSON_PrintUnformatted(st) : NULL;
    cJSON_Delete(st);
    if (!out->data) {
        errinfo_set(err, ERR_NOMEM, "out of memory for mcp_servers");
        return -1;
    }
    out->len = strlen(out->data);
    out->is_json = true;
    return 0;
}
