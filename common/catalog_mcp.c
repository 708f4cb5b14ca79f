/* common/catalog_mcp.c - the catalog's tools as tools of an MCP server (see catalog.h): the one
 * place where runbox's catalog meets the engine library, so the library knows nothing of it. */
#include "catalog.h"

#include <stdlib.h>

#include "catalog_int.h"

#include "runbox/mcp.h"

typedef void (*tool_fn)(void *arg, struct mcp_call *call);

/* A built-in tool: the build printed what the engine lists, which takes the texts as they are
 * and parses the schema at the tool's first call. */
static int register_compiled(const struct catalog_compiled_tool *c, struct mcp_server *srv,
                             tool_fn fn, void *arg, struct errinfo *err)
{
    struct mcp_tool mt = {.name = c->name,
                          .title = c->title,
                          .description = c->description,
                          .input_schema = c->input,
                          .output_schema = c->output,
                          .annotations = c->annotations,
                          .handler = fn,
                          .arg = arg};

    return mcp_server_add_tool(srv, &mt, err);
}

/* A tool of a parsed catalog: copies of its listed trees, handed to the server (which frees
 * them) without a print and a parse. */
static int register_parsed(const struct catalog_tool *t, struct mcp_server *srv, tool_fn fn,
                           void *arg, struct errinfo *err)
{
    const cJSON *obj = catalog_tool_object(t);
    const cJSON *out_obj = catalog_tool_output_schema(t);
    const cJSON *ann_obj = cJSON_GetObjectItemCaseSensitive(obj, "annotations");
    const cJSON *title = cJSON_GetObjectItemCaseSensitive(obj, "title");
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(obj, "description");
    cJSON *in = catalog_listed_schema(catalog_tool_input_schema(t));
    cJSON *out = out_obj ? cJSON_Duplicate(out_obj, true) : NULL;
    cJSON *ann = NULL;
    bool made = in && (!out_obj || out) && catalog__listed_annotations(ann_obj, &ann) == 0;
    struct mcp_tool mt = {
        .name = catalog_tool_name(t),
        .title = cJSON_IsString(title) ? title->valuestring : NULL,
        .description = cJSON_IsString(desc) ? desc->valuestring : NULL,
        .handler = fn,
        .arg = arg,
    };

    if (!made) {
        cJSON_Delete(in);
        cJSON_Delete(out);
        cJSON_Delete(ann);
        errinfo_set(err, ERR_NOMEM, "out of memory registering tool %s", mt.name);
        return -1;
    }
    return mcp_server_add_tool_parsed(srv, &mt, in, out, ann, err);
}

int catalog_register_external(const struct catalog_tool *t, struct mcp_server *srv, tool_fn fn,
                              void *arg, struct errinfo *err)
{
    const cJSON *obj = catalog_tool_object(t);
    const cJSON *title = cJSON_GetObjectItemCaseSensitive(obj, "title");
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(obj, "description");
    const cJSON *annv = cJSON_GetObjectItemCaseSensitive(obj, "annotations");
    const cJSON *metav = cJSON_GetObjectItemCaseSensitive(obj, "_meta");
    const cJSON *iconsv = cJSON_GetObjectItemCaseSensitive(obj, "icons");
    const cJSON *outv = catalog_tool_output_schema(t);
    cJSON *extrav = cJSON_CreateObject();
    char *in = cJSON_PrintUnformatted(catalog_tool_input_schema(t));
    char *out = outv ? cJSON_PrintUnformatted(outv) : NULL;
    char *ann = cJSON_IsObject(annv) ? cJSON_PrintUnformatted(annv) : NULL;
    char *extra = NULL;
    bool made = extrav && in && (!outv || out) && (!cJSON_IsObject(annv) || ann);
    int rc = -1;

    /* The server's own _meta (an MCP App's ui.resourceUri, runbox/server beside it) and icons
     * are the client's to read; references, so nothing is copied twice. */
    if (made && cJSON_IsObject(metav))
        made = cJSON_AddItemReferenceToObject(extrav, "_meta", (cJSON *)metav);
    if (made && cJSON_IsArray(iconsv))
        made = cJSON_AddItemReferenceToObject(extrav, "icons", (cJSON *)iconsv);
    if (made && extrav->child)
        made = (extra = cJSON_PrintUnformatted(extrav)) != NULL;
    if (!made) {
        errinfo_set(err, ERR_NOMEM, "out of memory registering tool %s", catalog_tool_name(t));
    } else {
        struct mcp_tool mt = {.name = catalog_tool_name(t),
                              .title = cJSON_IsString(title) ? title->valuestring : NULL,
                              .description = cJSON_IsString(desc) ? desc->valuestring : NULL,
                              .input_schema = in,
                              .output_schema = out,
                              .annotations = ann,
                              .extra = extra,
                              .handler = fn,
                              .arg = arg};

        rc = mcp_server_add_tool(srv, &mt, err);
    }
    cJSON_Delete(extrav); /* references only */
    cJSON_free(in);
    cJSON_free(out);
    cJSON_free(ann);
    cJSON_free(extra);
    return rc;
}

int catalog_register_tools(const struct catalog *cat, struct mcp_server *srv, tool_fn fn, void *arg,
                           struct errinfo *err)
{
    for (size_t i = 0; i < catalog_count(cat); i++) {
        const struct catalog_tool *t = catalog_at(cat, i);
        int rc = t->compiled ? register_compiled(t->compiled, srv, fn, arg, err)
                             : register_parsed(t, srv, fn, arg, err);

        if (rc < 0)
            return -1;
    }
    return 0;
}

cJSON *catalog_image_result(const cJSON *answer)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(answer, "data");
    const cJSON *mime = cJSON_GetObjectItemCaseSensitive(answer, "mimeType");
    cJSON *res, *content, *img, *txt, *facts;
    char *text;

    if (!cJSON_IsObject(answer) || !cJSON_IsString(data) || !cJSON_IsString(mime))
        return NULL;
    facts = cJSON_Duplicate(answer, true);
    if (facts)
        cJSON_DeleteItemFromObjectCaseSensitive(facts, "data"); /* the picture is content */
    text = facts ? cJSON_PrintUnformatted(facts) : NULL;
    res = cJSON_CreateObject();
    content = cJSON_AddArrayToObject(res, "content");
    img = cJSON_CreateObject();
    if (img && !cJSON_AddItemToArray(content, img)) { /* content NULL: img is not held */
        cJSON_Delete(img);
        img = NULL;
    }
    txt = cJSON_CreateObject();
    if (txt && !cJSON_AddItemToArray(content, txt)) {
        cJSON_Delete(txt);
        txt = NULL;
    }
    if (!text || !img || !txt || !cJSON_AddStringToObject(img, "type", "image") ||
        !cJSON_AddStringToObject(img, "data", data->valuestring) ||
        !cJSON_AddStringToObject(img, "mimeType", mime->valuestring) ||
        !cJSON_AddStringToObject(txt, "type", "text") ||
        !cJSON_AddStringToObject(txt, "text", text) ||
        !cJSON_AddItemToObject(res, "structuredContent", facts) ||
        !cJSON_AddFalseToObject(res, "isError")) {
        if (!cJSON_GetObjectItemCaseSensitive(res, "structuredContent"))
            cJSON_Delete(facts);
        cJSON_Delete(res);
        cJSON_free(text);
        return NULL;
    }
    cJSON_free(text);
    return res;
}
