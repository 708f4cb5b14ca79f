/* daemon/studio_answer.c - finishing a Studio tool's answer (see studio_answer.h). */
#include "studio_answer.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

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

int studio_answer_finish(const struct catalog_tool *tool, struct tools_result *out,
                         struct errinfo *err)
{
    const cJSON *schema = catalog_tool_output_schema(tool);
    cJSON *doc;
    char *text;
    int n;

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
    text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
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
