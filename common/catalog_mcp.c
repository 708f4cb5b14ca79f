/* common/catalog_mcp.c - the catalog's tools as tools of an MCP server (see catalog.h): the one
 * place where runbox's catalog meets the engine library, so the library knows nothing of it. */
#include "catalog.h"

#include <stdlib.h>

#include "catalog_int.h"

#include "runbox/mcp.h"

/* Compact JSON of a tool's member, or NULL when the tool has none. Owned (cJSON_free). */
static char *member_text(const cJSON *tool, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(tool, key);

    return v ? cJSON_PrintUnformatted(v) : NULL;
}

int catalog_register_tools(const struct catalog *cat, struct mcp_server *srv,
                           void (*fn)(void *arg, struct mcp_call *call), void *arg,
                           struct errinfo *err)
{
    for (size_t i = 0; i < catalog_count(cat); i++) {
        const struct catalog_tool *t = catalog_at(cat, i);
        const cJSON *obj = catalog_tool_object(t);
        cJSON *listed = catalog_listed_schema(catalog_tool_input_schema(t));
        char *in = listed ? cJSON_PrintUnformatted(listed) : NULL;
        char *out = member_text(obj, "outputSchema");
        const cJSON *ann_obj = cJSON_GetObjectItemCaseSensitive(obj, "annotations");
        cJSON *ann_listed = ann_obj ? catalog__listed_annotations(ann_obj) : NULL;
        char *ann = ann_listed && ann_listed->child ? cJSON_PrintUnformatted(ann_listed) : NULL;
        const cJSON *title = cJSON_GetObjectItemCaseSensitive(obj, "title");
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(obj, "description");
        struct mcp_tool mt = {
            .name = catalog_tool_name(t),
            .title = cJSON_IsString(title) ? title->valuestring : NULL,
            .description = cJSON_IsString(desc) ? desc->valuestring : NULL,
            .input_schema = in,
            .output_schema = out,
            .annotations = ann,
            .handler = fn,
            .arg = arg,
        };
        int rc = (in && (!cJSON_GetObjectItemCaseSensitive(obj, "outputSchema") || out) &&
                  (!ann_obj || (ann_listed && (!ann_listed->child || ann))))
                     ? mcp_server_add_tool(srv, &mt, err)
                     : -1;

        if (rc < 0 && !errinfo_is_set(err))
            errinfo_set(err, ERR_NOMEM, "out of memory registering tool %s", mt.name);
        cJSON_Delete(listed);
        cJSON_Delete(ann_listed);
        cJSON_free(in);
        cJSON_free(out);
        cJSON_free(ann);
        if (rc < 0)
            return -1;
    }
    return 0;
}
