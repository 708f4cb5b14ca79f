/* daemon/studio_answer.c - finishing a Studio tool's answer (see studio_answer.h). */
#include "studio_answer.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "png.h"
#include "schema.h"
#include "tools.h"

/* True when text[0..len) holds "[" then optional blanks then "]": the only way an empty table
 * can be written. Cheap, so answers without one are never parsed. */
static bool may_hold_empty_array(const char *text, size_t len)
{
    for (const char *p = memchr(text, '[', len); p; p = memchr(p, '[', len - (size_t)(p - text))) {
        const char *q = p + 1;

        while (q < text + len && (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t'))
            q++;
        if (q < text + len && *q == ']')
            return true;
        p++;
        if (p >= text + len)
            break;
    }
    return false;
}

/* The plugin's screenshot {format, width, height, data (base64), ...} with data made a PNG
 * (RGBA8 pixels are encoded here), mimeType and bytes added. 0, or -1 with err. */
static int finish_image(cJSON *doc, struct errinfo *err)
{
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(doc, "format");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(doc, "data");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(doc, "width");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(doc, "height");
    char *raw = NULL, *b64;
    unsigned char *png = NULL;
    size_t raw_len, png_len;
    uint32_t pw, ph;

    if (!cJSON_IsString(fmt) || !cJSON_IsString(data)) {
        errinfo_set(err, ERR_INVALID,
                    "Studio's screenshot answer has no format and data; update the Runbox plugin "
                    "(docs/plugin.md)");
        return -1;
    }
    if (tools_base64_decode(data->valuestring, strlen(data->valuestring), &raw, &raw_len, err) < 0)
        return -1;
    if (strcmp(fmt->valuestring, "rgba8") == 0) {
        if (!cJSON_IsNumber(w) || !cJSON_IsNumber(h) || w->valuedouble < 1 || h->valuedouble < 1 ||
            w->valuedouble > PNG_SIDE_MAX || h->valuedouble > PNG_SIDE_MAX) {
            free(raw);
            errinfo_set(err, ERR_INVALID,
                        "Studio's RGBA8 screenshot has no usable width and height");
            return -1;
        }
        pw = (uint32_t)w->valuedouble;
        ph = (uint32_t)h->valuedouble;
        if (png_encode_rgba((const unsigned char *)raw, raw_len, pw, ph, &png, &png_len, err) < 0) {
            free(raw);
            return -1;
        }
        free(raw);
    } else if (strcmp(fmt->valuestring, "png") == 0) {
        if (!png_header((const unsigned char *)raw, raw_len, &pw, &ph)) {
            free(raw);
            errinfo_set(err, ERR_INVALID, "Studio's screenshot is not a PNG image");
            return -1;
        }
        png = (unsigned char *)raw;
        png_len = raw_len;
    } else {
        free(raw);
        errinfo_set(err, ERR_INVALID,
                    "Studio's screenshot has format \"%.20s\" (png or rgba8 expected)",
                    fmt->valuestring);
        return -1;
    }
    b64 = tools_base64_encode(png, png_len, NULL);
    free(png);
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "format"); /* mimeType says it now */
    if (!b64 || !cJSON_ReplaceItemInObjectCaseSensitive(doc, "data", cJSON_CreateString(b64))) {
        free(b64);
        errinfo_set(err, ERR_NOMEM, "out of memory finishing Studio's screenshot");
        return -1;
    }
    free(b64);
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "width");
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "height");
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "mimeType");
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "bytes");
    if (!cJSON_AddNumberToObject(doc, "width", pw) || !cJSON_AddNumberToObject(doc, "height", ph) ||
        !cJSON_AddStringToObject(doc, "mimeType", "image/png") ||
        !cJSON_AddNumberToObject(doc, "bytes", (double)png_len)) {
        errinfo_set(err, ERR_NOMEM, "out of memory finishing Studio's screenshot");
        return -1;
    }
    return 0;
}

/* Replaces out's data by doc printed. 0, or -1 with err (out unchanged). */
static int replace_data(struct tools_result *out, const cJSON *doc, const struct catalog_tool *tool,
                        struct errinfo *err)
{
    char *text = cJSON_PrintUnformatted(doc);

    if (!text) {
        errinfo_set(err, ERR_NOMEM, "out of memory finishing Studio's answer for %s",
                    catalog_tool_name(tool));
        return -1;
    }
    free(out->data);
    out->data = text;
    out->len = strlen(text);
    return 0;
}

int studio_answer_finish(const struct catalog_tool *tool, struct tools_result *out,
                         struct errinfo *err)
{
    const cJSON *schema = catalog_tool_output_schema(tool);
    cJSON *doc;
    int n, rc;

    if (catalog_tool_answers_image(tool) && out->is_json && out->data) {
        doc = cJSON_ParseWithLength(out->data, out->len);
        if (!cJSON_IsObject(doc)) {
            cJSON_Delete(doc);
            errinfo_set(err, ERR_INVALID, "Studio's answer for %s is not a JSON object",
                        catalog_tool_name(tool));
            return -1;
        }
        rc = finish_image(doc, err) == 0 ? replace_data(out, doc, tool, err) : -1;
        cJSON_Delete(doc);
        return rc;
    }
    if (!schema || !out->is_json || !out->data || !may_hold_empty_array(out->data, out->len))
        return 0;
    doc = cJSON_ParseWithLength(out->data, out->len);
    if (!doc)
        return 0; /* not ours to judge: it goes out as the plugin sent it */
    n = schema_coerce_empty_objects(schema, &doc);
    if (n <= 0) {
        cJSON_Delete(doc);
        if (n == 0)
            return 0;
        errinfo_set(err, ERR_NOMEM, "out of memory finishing Studio's answer for %s",
                    catalog_tool_name(tool));
        return -1;
    }
    rc = replace_data(out, doc, tool, err);
    cJSON_Delete(doc);
    return rc;
}
