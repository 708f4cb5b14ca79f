/* mcp-proxy/cli_args.c - a tool's arguments from the command line (see cli_int.h). Pure. */
#include "cli_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonbuf.h"
#include "catalog.h"
#include "schema.h"

#define KEY_MAX 128

/* The "type" a property's schema names, or NULL (no schema, anyOf, several). */
static const char *prop_type(const cJSON *schema, const char *key)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(props, key);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "type");

    return cJSON_IsString(t) ? t->valuestring : NULL;
}

/* The value of key=value as the property's type reads it. Owned, or NULL when out of memory. */
static cJSON *typed_value(const char *type, const char *text)
{
    cJSON *v;

    if (type && strcmp(type, "string") == 0)
        return cJSON_CreateString(text);
    v = cJSON_Parse(text);
    if (v && type) {
        bool fits = (strcmp(type, "integer") == 0 || strcmp(type, "number") == 0)
                        ? cJSON_IsNumber(v)
                    : strcmp(type, "boolean") == 0 ? cJSON_IsBool(v)
                    : strcmp(type, "array") == 0   ? cJSON_IsArray(v)
                    : strcmp(type, "object") == 0  ? cJSON_IsObject(v)
                    : strcmp(type, "null") == 0    ? cJSON_IsNull(v)
                                                   : true;

        if (!fits) {
            cJSON_Delete(v);
            v = NULL;
        }
    }
    /* Not readable as its type: keep the text, and the validator says what is expected, in
     * the words the MCP server uses. */
    return v ? v : cJSON_CreateString(text);
}

static cJSON *parse_object(const char *text, struct errinfo *err)
{
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithOpts(text, &end, 1);

    if (!doc) {
        errinfo_set(err, ERR_INVALID,
                    "the arguments are not valid JSON (near byte %zu); give one JSON object, "
                    "e.g. '{\"path\":\"/a.txt\"}', or key=value pairs",
                    end ? (size_t)(end - text) : 0);
        return NULL;
    }
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        errinfo_set(err, ERR_INVALID,
                    "the arguments must be a JSON object, e.g. '{\"path\":\"/a\"}'");
        return NULL;
    }
    return doc;
}

cJSON *cli_args_parse(const cJSON *schema, int argc, char **argv, struct errinfo *err)
{
    cJSON *args;

    if (argc == 1 && argv[0][strspn(argv[0], " \t\n")] == '{')
        return parse_object(argv[0], err);
    args = cJSON_CreateObject();
    if (!args) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return NULL;
    }
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        bool raw = eq && eq > argv[i] && eq[-1] == ':';
        size_t klen = eq ? (size_t)(eq - argv[i]) - (raw ? 1 : 0) : 0;
        char key[KEY_MAX];
        cJSON *v;

        if (!eq || klen == 0 || klen >= sizeof(key)) {
            errinfo_set(err, ERR_INVALID,
                        "'%.100s' is not key=value; write e.g. path=/a.txt, depth=2, "
                        "env:='{\"A\":\"1\"}' (:= for JSON), or one JSON object",
                        argv[i]);
            goto fail;
        }
        memcpy(key, argv[i], klen);
        key[klen] = '\0';
        if (cJSON_GetObjectItemCaseSensitive(args, key)) {
            errinfo_set(err, ERR_INVALID, "'%s' is given twice", key);
            goto fail;
        }
        if (raw) {
            v = cJSON_Parse(eq + 1);
            if (!v) {
                errinfo_set(err, ERR_INVALID, "%s:= takes JSON; '%.100s' is not JSON", key, eq + 1);
                goto fail;
            }
        } else {
            v = typed_value(prop_type(schema, key), eq + 1);
        }
        if (!v || !cJSON_AddItemToObject(args, key, v)) {
            cJSON_Delete(v);
            errinfo_set(err, ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    return args;
fail:
    cJSON_Delete(args);
    return NULL;
}

char *cli_args_check(const cJSON *schema, const cJSON *args)
{
    struct schema_report rep;
    cJSON *listed = catalog_listed_schema(schema);
    int rc;

    /* As the MCP server checks a call: the engine with the schema tools/list shows, then
     * runbox with the whole one (length ceilings, unknown arguments), so that the first
     * check's messages are the only ones when it fails. */
    rc = schema_validate(listed ? listed : schema, args, "arguments", &rep);
    cJSON_Delete(listed);
    if (rc == 0)
        rc = schema_validate(schema, args, "arguments", &rep);
    return rc == 0 ? NULL : schema_report_text(&rep);
}

/* ---- printing JSON for people ---- */

static bool is_scalar_array(const cJSON *v)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, v) if (cJSON_IsObject(it) || cJSON_IsArray(it)) return false;
    return true;
}

static void pretty(struct jsonbuf *b, const cJSON *v, int depth)
{
    const cJSON *it;
    bool first = true, obj = cJSON_IsObject(v);

    if (!obj && !cJSON_IsArray(v)) {
        char *t = cJSON_PrintUnformatted(v);

        jsonbuf_puts(b, t ? t : "null", NULL);
        cJSON_free(t);
        return;
    }
    if (!v->child) {
        jsonbuf_puts(b, obj ? "{}" : "[]", NULL);
        return;
    }
    if (!obj && is_scalar_array(v)) {
        jsonbuf_puts(b, "[", NULL);
        cJSON_ArrayForEach(it, v)
        {
            jsonbuf_puts(b, first ? "" : ", ", NULL);
            pretty(b, it, depth + 1);
            first = false;
        }
        jsonbuf_puts(b, "]", NULL);
        return;
    }
    jsonbuf_puts(b, obj ? "{" : "[", NULL);
    cJSON_ArrayForEach(it, v)
    {
        jsonbuf_puts(b, first ? "\n" : ",\n", NULL);
        for (int k = 0; k <= depth; k++)
            jsonbuf_puts(b, "  ", NULL);
        if (obj) {
            jsonbuf_put_json_string(b, it->string, strlen(it->string), NULL);
            jsonbuf_puts(b, ": ", NULL);
        }
        pretty(b, it, depth + 1);
        first = false;
    }
    jsonbuf_puts(b, "\n", NULL);
    for (int k = 0; k < depth; k++)
        jsonbuf_puts(b, "  ", NULL);
    jsonbuf_puts(b, obj ? "}" : "]", NULL);
}

char *cli_json_pretty(const cJSON *v)
{
    struct jsonbuf b = JSONBUF_INIT((size_t)256 << 20);

    pretty(&b, v, 0);
    return jsonbuf_take(&b, NULL);
}

void cli_print_json(const cJSON *v)
{
    char *t = cli_json_pretty(v);

    printf("%s\n", t ? t : "null");
    free(t);
}
