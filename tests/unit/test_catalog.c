/* tests/unit/test_catalog.c - the compiled-in catalog loads and every tool accepts arguments
 * built from its own schema; malformed catalogs are refused with a message naming the rule. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "catalog_data.h"
#include "jsonbuf.h"
#include "mcp_int.h"
#include "runbox/mcp.h"
#include "schema.h"

/* ---- a value generator: the smallest arguments a schema accepts ---- */

static cJSON *build_value(const cJSON *schema, bool all_properties);

static const char *first_type(const cJSON *schema)
{
    const cJSON *type = cJSON_GetObjectItem(schema, "type");

    if (cJSON_IsString(type))
        return type->valuestring;
    if (cJSON_IsArray(type) && cJSON_IsString(type->child))
        return type->child->valuestring;
    return "null";
}

static double number_for(const cJSON *schema, bool integer)
{
    const cJSON *min = cJSON_GetObjectItem(schema, "minimum");
    const cJSON *exmin = cJSON_GetObjectItem(schema, "exclusiveMinimum");
    const cJSON *max = cJSON_GetObjectItem(schema, "maximum");
    double d = 0;

    if (cJSON_IsNumber(min))
        d = min->valuedouble;
    else if (cJSON_IsNumber(exmin))
        d = integer ? floor(exmin->valuedouble) + 1 : exmin->valuedouble + 0.5;
    else if (cJSON_IsNumber(max) && max->valuedouble < 0)
        d = max->valuedouble;
    return integer ? ceil(d) : d;
}

static cJSON *build_object(const cJSON *schema, bool all_properties)
{
    const cJSON *props = cJSON_GetObjectItem(schema, "properties");
    const cJSON *required = cJSON_GetObjectItem(schema, "required");
    cJSON *obj = cJSON_CreateObject();
    const cJSON *p, *r;

    if (all_properties) {
        cJSON_ArrayForEach(p, props)
        {
            cJSON_AddItemToObject(obj, p->string, build_value(p, true));
        }
        return obj;
    }
    cJSON_ArrayForEach(r, required)
    {
        p = cJSON_GetObjectItem(props, r->valuestring);
        cJSON_AddItemToObject(obj, r->valuestring, p ? build_value(p, false) : cJSON_CreateNull());
    }
    return obj;
}

static cJSON *build_value(const cJSON *schema, bool all_properties)
{
    const cJSON *k;
    const char *type;
    char text[4097];
    int n;

    if (!cJSON_IsObject(schema))
        return cJSON_CreateNull();
    k = cJSON_GetObjectItem(schema, "const");
    if (k)
        return cJSON_Duplicate(k, true);
    k = cJSON_GetObjectItem(schema, "enum");
    if (cJSON_IsArray(k) && k->child)
        return cJSON_Duplicate(k->child, true);
    k = cJSON_GetObjectItem(schema, "oneOf");
    if (!k)
        k = cJSON_GetObjectItem(schema, "anyOf");
    if (cJSON_IsArray(k) && k->child)
        return build_value(k->child, all_properties);
    type = first_type(schema);
    if (strcmp(type, "object") == 0)
        return build_object(schema, all_properties);
    if (strcmp(type, "string") == 0) {
        k = cJSON_GetObjectItem(schema, "minLength");
        n = cJSON_IsNumber(k) ? k->valueint : 0;
        if (n < 1)
            n = 1;
        if (n > 4096)
            n = 4096;
        memset(text, 'a', (size_t)n);
        text[n] = '\0';
        return cJSON_CreateString(text);
    }
    if (strcmp(type, "integer") == 0 || strcmp(type, "number") == 0)
        return cJSON_CreateNumber(number_for(schema, strcmp(type, "integer") == 0));
    if (strcmp(type, "boolean") == 0)
        return cJSON_CreateFalse();
    if (strcmp(type, "array") == 0) {
        cJSON *arr = cJSON_CreateArray();
        const cJSON *items = cJSON_GetObjectItem(schema, "items");

        k = cJSON_GetObjectItem(schema, "minItems");
        for (int i = 0; cJSON_IsNumber(k) && i < k->valueint; i++)
            cJSON_AddItemToArray(arr, build_value(items, all_properties));
        return arr;
    }
    return cJSON_CreateNull();
}

/* ---- the built-in catalog ---- */

START_TEST(test_catalog_builtin_loads)
{
    const struct catalog *cat = catalog_builtin();
    size_t expected = 0;

    ck_assert_ptr_nonnull(cat);
    ck_assert_ptr_eq(catalog_builtin(), cat); /* built once */
    ck_assert_uint_gt(catalog_builtin_ndocs, 0);
    for (size_t i = 0; i < catalog_builtin_ndocs; i++) {
        cJSON *doc = cJSON_Parse(catalog_builtin_docs[i]);

        ck_assert_ptr_nonnull(doc);
        expected += (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(doc, "tools"));
        cJSON_Delete(doc);
    }
    ck_assert_uint_eq(catalog_count(cat), expected);
    ck_assert_ptr_nonnull(catalog_find(cat, "read_file"));
    ck_assert_str_eq(catalog_tool_group(catalog_find(cat, "read_file")), "workspace");
}
END_TEST

static void no_handler(void *arg, struct mcp_call *call)
{
    (void)arg;
    (void)call;
}

/* The tools/list text an engine makes of cat's tools. Owned. */
static char *engine_list(const struct catalog *cat)
{
    static const struct mcp_server_info info = {.name = "t", .version = "1"};
    struct errinfo err = {0};
    struct mcp_server *srv = mcp_server_new(&info, &err);
    struct jsonbuf b = JSONBUF_INIT(1 << 24);
    char *text;

    ck_assert_ptr_nonnull(srv);
    ck_assert_msg(catalog_register_tools(cat, srv, no_handler, NULL, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(mcp__put_tools_json(srv, &b), 0);
    text = jsonbuf_take(&b, NULL);
    mcp_server_free(srv);
    return text;
}

/* The built-in catalog is what the build printed of the documents (catalog_compile.c), which
 * it checked with catalog_new: here the documents get every check again, and the compiled
 * catalog must be the parsed one, tool by tool, in every text it gives out. */
START_TEST(test_catalog_builtin_docs_pass_every_check)
{
    const struct catalog *built = catalog_builtin();
    struct errinfo err;
    struct catalog *cat;
    char *a, *b;

    errinfo_clear(&err);
    cat = catalog_new(catalog_builtin_docs, catalog_builtin_ndocs, &err);
    ck_assert_msg(cat != NULL, "the compiled-in catalog fails a check: %s", err.msg);
    ck_assert_uint_eq(catalog_count(cat), catalog_count(built));
    for (size_t i = 0; i < catalog_count(cat); i++) {
        const struct catalog_tool *p = catalog_at(cat, i), *c = catalog_at(built, i);
        const char *name = catalog_tool_name(p);

        ck_assert_str_eq(catalog_tool_name(c), name);
        ck_assert_str_eq(catalog_tool_group(c), catalog_tool_group(p));
        ck_assert_int_eq(catalog_tool_route(c), catalog_tool_route(p));
        ck_assert_int_eq(catalog_tool_budget(c), catalog_tool_budget(p));
        ck_assert_int_eq(catalog_tool_is_read_only(c), catalog_tool_is_read_only(p));
        ck_assert_int_eq(catalog_tool_answers_image(c), catalog_tool_answers_image(p));
        ck_assert_msg(cJSON_Compare(catalog_tool_object(c), catalog_tool_object(p), true), "%s",
                      name);
        ck_assert_msg(
            cJSON_Compare(catalog_tool_input_schema(c), catalog_tool_input_schema(p), true), "%s",
            name);
        ck_assert_int_eq(catalog_tool_output_schema(c) != NULL,
                         catalog_tool_output_schema(p) != NULL);
        ck_assert(
            !catalog_tool_output_schema(p) ||
            cJSON_Compare(catalog_tool_output_schema(c), catalog_tool_output_schema(p), true));
        ck_assert_int_eq(catalog_tool_host_tools(c) != NULL, catalog_tool_host_tools(p) != NULL);
        ck_assert(!catalog_tool_host_tools(p) ||
                  cJSON_Compare(catalog_tool_host_tools(c), catalog_tool_host_tools(p), true));
    }
    ck_assert_str_eq(catalog_tools_json(cat), catalog_tools_json(built));
    ck_assert_str_eq(catalog_instructions(cat), catalog_instructions(built));
    a = engine_list(cat);
    b = engine_list(built);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    catalog_free(cat);
}
END_TEST

/* A built-in tool's object is parsed at the first ask, once, whichever thread asks first. */
static void *object_from_thread(void *arg)
{
    return (void *)catalog_tool_object(arg);
}

START_TEST(test_catalog_builtin_object_parsed_once_across_threads)
{
    struct catalog *view = catalog_select(catalog_builtin(), "workspace", NULL);
    const struct catalog_tool *t = catalog_find(catalog_builtin(), "write_file");
    pthread_t th[4];
    void *got[4];

    ck_assert_ptr_nonnull(view);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, object_from_thread, (void *)t), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_join(th[i], &got[i]), 0);
    for (int i = 1; i < 4; i++)
        ck_assert_ptr_eq(got[i], got[0]);
    ck_assert_ptr_nonnull(got[0]);
    /* a view of the catalog shares the parse */
    ck_assert_ptr_eq(catalog_tool_object(catalog_find(view, "write_file")), got[0]);
    catalog_free(view);
}
END_TEST

START_TEST(test_catalog_builtin_tools_are_sorted_and_found)
{
    const struct catalog *cat = catalog_builtin();

    for (size_t i = 0; i < catalog_count(cat); i++) {
        const struct catalog_tool *t = catalog_at(cat, i);

        ck_assert(catalog_is_valid_name(catalog_tool_name(t)));
        ck_assert_ptr_eq(catalog_find(cat, catalog_tool_name(t)), t);
        if (i > 0)
            ck_assert_int_lt(
                strcmp(catalog_tool_name(catalog_at(cat, i - 1)), catalog_tool_name(t)), 0);
    }
    ck_assert_ptr_null(catalog_find(cat, "no_such_tool"));
    ck_assert_ptr_null(catalog_find(cat, ""));
    ck_assert_ptr_null(catalog_find(cat, NULL));
}
END_TEST

/* Every tool accepts the smallest arguments its schema allows, and arguments with every
 * property set; an undeclared property is refused where additionalProperties is false. */
START_TEST(test_catalog_builtin_schemas_accept_built_arguments)
{
    const struct catalog *cat = catalog_builtin();

    for (size_t i = 0; i < catalog_count(cat); i++) {
        const struct catalog_tool *t = catalog_at(cat, i);
        const cJSON *schema = catalog_tool_input_schema(t);
        struct schema_report rep;
        struct errinfo err;
        cJSON *args;

        errinfo_clear(&err);
        ck_assert_msg(schema_check(schema, &err) == 0, "%s: %s", catalog_tool_name(t), err.msg);
        for (int all = 0; all < 2; all++) {
            args = build_value(schema, all);
            ck_assert_msg(schema_validate(schema, args, "arguments", &rep) == 0, "%s: %s",
                          catalog_tool_name(t), rep.msgs[0]);
            if (cJSON_IsFalse(cJSON_GetObjectItem(schema, "additionalProperties"))) {
                cJSON_AddNumberToObject(args, "__surely_not_declared", 1);
                ck_assert_int_eq(schema_validate(schema, args, "arguments", &rep), -1);
            }
            cJSON_Delete(args);
        }
    }
}
END_TEST

START_TEST(test_catalog_builtin_output_schemas_check)
{
    const struct catalog *cat = catalog_builtin();

    for (size_t i = 0; i < catalog_count(cat); i++) {
        const cJSON *out = catalog_tool_output_schema(catalog_at(cat, i));
        struct errinfo err;

        errinfo_clear(&err);
        if (out)
            ck_assert_msg(schema_check(out, &err) == 0, "%s", err.msg);
    }
}
END_TEST

/* Clients such as Gemini's take one JSON type per schema: a "type" must be one string, and a
 * value of several types is an anyOf with one type per branch. Walks every subschema. */
static void check_single_types(const cJSON *node, const char *tool, const char *where)
{
    const cJSON *m;

    if (cJSON_IsObject(node)) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(node, "type");

        ck_assert_msg(!type || cJSON_IsString(type),
                      "%s: %s has a \"type\" that is not one string (use anyOf branches)", tool,
                      where);
    }
    if (!cJSON_IsObject(node) && !cJSON_IsArray(node))
        return;
    cJSON_ArrayForEach(m, node)
    {
        /* enum, const and default hold values, not schemas. */
        if (m->string && (strcmp(m->string, "enum") == 0 || strcmp(m->string, "const") == 0 ||
                          strcmp(m->string, "default") == 0))
            continue;
        if (m->string &&
            (strcmp(m->string, "properties") == 0 || strcmp(m->string, "$defs") == 0)) {
            const cJSON *sub;

            /* A map from names to schemas: the map itself is no schema. */
            cJSON_ArrayForEach(sub, m)
            {
                check_single_types(sub, tool, where);
            }
            continue;
        }
        check_single_types(m, tool, where);
    }
}

START_TEST(test_catalog_builtin_types_are_single)
{
    const struct catalog *cat = catalog_builtin();

    for (size_t i = 0; i < catalog_count(cat); i++) {
        const struct catalog_tool *t = catalog_at(cat, i);

        check_single_types(catalog_tool_input_schema(t), catalog_tool_name(t), "inputSchema");
        if (catalog_tool_output_schema(t))
            check_single_types(catalog_tool_output_schema(t), catalog_tool_name(t), "outputSchema");
    }
}
END_TEST

START_TEST(test_catalog_tools_json_shape)
{
    const struct catalog *cat = catalog_builtin();
    const char *text = catalog_tools_json(cat);
    cJSON *arr = cJSON_Parse(text), *listed;
    const cJSON *tool;
    size_t i = 0;

    ck_assert_ptr_nonnull(arr);
    ck_assert(cJSON_IsArray(arr));
    ck_assert_ptr_null(strchr(text, '\n'));          /* compact */
    ck_assert_ptr_eq(catalog_tools_json(cat), text); /* built once */
    ck_assert_uint_eq((size_t)cJSON_GetArraySize(arr), catalog_count(cat));
    cJSON_ArrayForEach(tool, arr)
    {
        const struct catalog_tool *t = catalog_at(cat, i++);

        ck_assert_str_eq(cJSON_GetObjectItem(tool, "name")->valuestring, catalog_tool_name(t));
        ck_assert(cJSON_IsString(cJSON_GetObjectItem(tool, "title")));
        ck_assert(cJSON_IsString(cJSON_GetObjectItem(tool, "description")));
        listed = catalog_listed_schema(catalog_tool_input_schema(t));
        ck_assert(cJSON_Compare(cJSON_GetObjectItem(tool, "inputSchema"), listed, true));
        cJSON_Delete(listed);
        ck_assert_ptr_null(cJSON_GetObjectItem(tool, "route"));
        ck_assert_ptr_null(cJSON_GetObjectItem(tool, "group"));
        ck_assert_int_eq(cJSON_GetObjectItem(tool, "outputSchema") != NULL,
                         catalog_tool_output_schema(t) != NULL);
    }
    cJSON_Delete(arr);
}
END_TEST

/* The listed input schema leaves out what only validation needs, and keeps everything a model
 * reads: names, types, descriptions, enums, ranges, defaults, required, value schemas. */
START_TEST(test_catalog_listed_schema_drops_only_ceilings)
{
    cJSON *schema = cJSON_Parse(
        "{\"type\":\"object\",\"properties\":{"
        "\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1000,\"description\":\"P\"},"
        "\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5,\"default\":2},"
        "\"mode\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},"
        "\"list\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":9,\"items\":{\"type\":\"object\","
        "\"properties\":{\"k\":{\"type\":\"string\",\"maxLength\":3}},\"additionalProperties\":"
        "false}},"
        "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\",\"maxLength\":"
        "9}},"
        "\"v\":{\"anyOf\":[{\"type\":\"string\",\"maxLength\":4},{\"type\":\"number\"}]}},"
        "\"required\":[\"path\"],\"additionalProperties\":false}");
    cJSON *want =
        cJSON_Parse("{\"type\":\"object\",\"properties\":{"
                    "\"path\":{\"type\":\"string\",\"description\":\"P\"},"
                    "\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5,\"default\":2},"
                    "\"mode\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},"
                    "\"list\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
                    "\"properties\":{\"k\":{\"type\":\"string\"}}}},"
                    "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
                    "\"v\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"number\"}]}},"
                    "\"required\":[\"path\"]}");
    cJSON *listed = catalog_listed_schema(schema), *none = cJSON_Parse("{\"type\":\"object\","
                                                                       "\"properties\":{}}");
    cJSON *bare;

    ck_assert_ptr_nonnull(listed);
    ck_assert_msg(cJSON_Compare(listed, want, true), "%s", cJSON_PrintUnformatted(listed));
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(schema, "additionalProperties")); /* a copy */
    bare = catalog_listed_schema(none);
    ck_assert_ptr_null(cJSON_GetObjectItem(bare, "properties"));
    cJSON_Delete(bare);
    cJSON_Delete(none);
    cJSON_Delete(listed);
    cJSON_Delete(want);
    cJSON_Delete(schema);
}
END_TEST

/* tools/list shows an annotation only when it says something MCP's default does not. */
START_TEST(test_catalog_listing_leaves_out_default_hints)
{
    const struct catalog *cat = catalog_builtin();
    cJSON *arr = cJSON_Parse(catalog_tools_json(cat));
    const cJSON *tool;
    size_t i = 0;

    cJSON_ArrayForEach(tool, arr)
    {
        const cJSON *full =
            cJSON_GetObjectItem(catalog_tool_object(catalog_at(cat, i++)), "annotations");
        const cJSON *shown = cJSON_GetObjectItem(tool, "annotations"), *h;

        cJSON_ArrayForEach(h, full)
        {
            const cJSON *s = cJSON_GetObjectItem(shown, h->string);
            bool dflt = strcmp(h->string, "destructiveHint") == 0 ||
                        strcmp(h->string, "openWorldHint") == 0;

            if (cJSON_IsTrue(h) == dflt)
                ck_assert_msg(s == NULL, "%s shows a default %s",
                              catalog_tool_name(catalog_at(cat, i - 1)), h->string);
            else
                ck_assert_msg(cJSON_Compare(s, h, true), "%s lost %s",
                              catalog_tool_name(catalog_at(cat, i - 1)), h->string);
        }
    }
    cJSON_Delete(arr);
}
END_TEST

/* An image tool's answer becomes image content plus the other facts, as text and structured;
 * capture_screenshot is one, read_file is not; an answer without data or mimeType is refused. */
START_TEST(test_catalog_image_result)
{
    const struct catalog *cat = catalog_builtin();
    cJSON *answer = cJSON_Parse("{\"width\":2,\"height\":1,\"mimeType\":\"image/png\","
                                "\"data\":\"iVBORw0K\"}");
    cJSON *bad = cJSON_Parse("{\"width\":2,\"data\":\"iVBORw0K\"}");
    cJSON *res = catalog_image_result(answer);
    const cJSON *content = cJSON_GetObjectItem(res, "content"), *img, *txt;
    char *facts;

    ck_assert(catalog_tool_answers_image(catalog_find(cat, "capture_screenshot")));
    ck_assert(!catalog_tool_answers_image(catalog_find(cat, "read_file")));
    ck_assert_ptr_nonnull(res);
    ck_assert_int_eq(cJSON_GetArraySize(content), 2);
    img = cJSON_GetArrayItem(content, 0);
    txt = cJSON_GetArrayItem(content, 1);
    ck_assert_str_eq(cJSON_GetObjectItem(img, "type")->valuestring, "image");
    ck_assert_str_eq(cJSON_GetObjectItem(img, "data")->valuestring, "iVBORw0K");
    ck_assert_str_eq(cJSON_GetObjectItem(img, "mimeType")->valuestring, "image/png");
    ck_assert_str_eq(cJSON_GetObjectItem(txt, "type")->valuestring, "text");
    ck_assert_str_eq(cJSON_GetObjectItem(txt, "text")->valuestring,
                     "{\"width\":2,\"height\":1,\"mimeType\":\"image/png\"}");
    facts = cJSON_PrintUnformatted(cJSON_GetObjectItem(res, "structuredContent"));
    ck_assert_str_eq(facts, "{\"width\":2,\"height\":1,\"mimeType\":\"image/png\"}");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(res, "isError")));
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(answer, "data")); /* answer is borrowed */
    ck_assert_ptr_null(catalog_image_result(bad));
    ck_assert_ptr_null(catalog_image_result(NULL));
    cJSON_free(facts);
    cJSON_Delete(res);
    cJSON_Delete(bad);
    cJSON_Delete(answer);
}
END_TEST

/* ---- profiles ---- */

/* Every tool is sent to the model with every request: each profile's tools/list must stay
 * within the budget the profiles document gives it (issue 11: all 45 000, sandbox 12 000). */
START_TEST(test_catalog_profiles_fit_their_budgets)
{
    const struct catalog *cat = catalog_builtin();

    ck_assert_uint_ge(catalog_profile_count(cat), 4);
    for (size_t i = 0; i < catalog_profile_count(cat); i++) {
        struct errinfo err = {0};
        struct catalog *v = catalog_select(cat, catalog_profile_name(cat, i), &err);

        ck_assert_msg(v != NULL, "%s", err.msg);
        ck_assert_msg(catalog_list_chars(v) <= catalog_profile_budget(cat, i),
                      "profile %s: tools/list is %zu characters, over its budget of %zu",
                      catalog_profile_name(cat, i), catalog_list_chars(v),
                      catalog_profile_budget(cat, i));
        catalog_free(v);
    }
    ck_assert_uint_le(catalog_list_chars(cat), 45000);
}
END_TEST

static bool view_has(const struct catalog *v, const char *name)
{
    return catalog_find(v, name) != NULL;
}

START_TEST(test_catalog_select_profiles_and_groups)
{
    const struct catalog *cat = catalog_builtin();
    struct errinfo err = {0};
    struct catalog *sb = catalog_select(cat, "sandbox", &err);
    struct catalog *ro = catalog_select(cat, "readonly", &err);
    struct catalog *mix = catalog_select(cat, " sandbox , studio-scripts", &err);
    struct catalog *all = catalog_select(cat, NULL, &err);

    ck_assert_msg(sb && ro && mix && all, "%s", err.msg);
    ck_assert(view_has(sb, "exec") && view_has(sb, "read_file") && view_has(sb, "console_logs"));
    ck_assert(!view_has(sb, "get_file_tree") && !view_has(sb, "set_property"));
    for (size_t i = 0; i < catalog_count(ro); i++)
        ck_assert(catalog_tool_is_read_only(catalog_at(ro, i)));
    ck_assert(view_has(ro, "get_file_tree") && view_has(ro, "read_file"));
    ck_assert(view_has(mix, "exec") && view_has(mix, "set_script_source"));
    ck_assert(!view_has(mix, "set_property"));
    ck_assert_uint_eq(catalog_count(all), catalog_count(cat));
    ck_assert_str_eq(catalog_tools_json(all), catalog_tools_json(cat));
    /* A view lists, finds and validates only its tools. */
    ck_assert(strstr(catalog_tools_json(sb), "\"get_file_tree\"") == NULL);
    /* The Studio rules are said once, only where Studio tools are listed. */
    ck_assert(strstr(catalog_instructions(sb), "Instance paths") == NULL);
    ck_assert(strstr(catalog_instructions(sb), "/workspace") != NULL);
    ck_assert(strstr(catalog_instructions(mix), "Instance paths") != NULL);
    ck_assert(strstr(catalog_instructions(cat), "Instance paths") != NULL);
    catalog_free(sb);
    catalog_free(ro);
    catalog_free(mix);
    catalog_free(all);
}
END_TEST

static const struct {
    const char *spec;
    const char *msg;
} bad_specs[] = {
    {"sandbx", "unknown tool profile or group \"sandbx\""},
    {"sandbox,,studio", "empty or overlong item"},
    {",", "empty or overlong item"},
    {"sandbox, nope", "unknown tool profile or group \"nope\""},
};

START_TEST(test_catalog_select_refuses_unknown_items)
{
    struct errinfo err = {0};
    struct catalog *v = catalog_select(catalog_builtin(), bad_specs[_i].spec, &err);

    ck_assert_ptr_null(v);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_msg(strstr(err.msg, bad_specs[_i].msg) != NULL, "%s", err.msg);
    if (strstr(bad_specs[_i].msg, "unknown"))
        ck_assert_msg(strstr(err.msg, "sandbox") && strstr(err.msg, "workspace"),
                      "names what is accepted: %s", err.msg);
}
END_TEST

START_TEST(test_catalog_profiles_doc_is_checked)
{
    static const char *const docs[][2] = {
        {"{\"group\":\"g\",\"tools\":[]}",
         "{\"profiles\":{\"p\":{\"groups\":[\"nope\"],\"budget\":10}}}"},
        {"{\"group\":\"g\",\"tools\":[]}", "{\"profiles\":{\"p\":{\"budget\":0}}}"},
        {"{\"group\":\"g\",\"tools\":[]}", "{\"profiles\":{\"p\":{\"budget\":9,\"x\":1}}}"},
        {"{\"group\":\"g\",\"tools\":[]}", "{\"profiles\":{}, \"extra\":1}"},
    };

    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        const char *pair[2] = {docs[i][0], docs[i][1]};
        struct errinfo err = {0};
        struct catalog *c = catalog_new(pair, 2, &err);

        ck_assert_msg(c == NULL, "profiles document %zu was accepted", i);
        ck_assert_msg(strstr(err.msg, "catalog document 2") != NULL, "%s", err.msg);
    }
}
END_TEST

static void *builtin_from_thread(void *arg)
{
    (void)arg;
    return (void *)catalog_builtin();
}

START_TEST(test_catalog_builtin_once_across_threads)
{
    pthread_t th[4];
    void *got[4];

    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, builtin_from_thread, NULL), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_join(th[i], &got[i]), 0);
    for (int i = 1; i < 4; i++)
        ck_assert_ptr_eq(got[i], got[0]);
}
END_TEST

/* ---- custom documents ---- */

#define TOOL(name, extra)                                                                          \
    "{\"name\":\"" name "\",\"title\":\"T\",\"description\":\"D\","                                \
    "\"inputSchema\":{\"type\":\"object\"},\"route\":\"local\"" extra "}"
#define DOC(group, tools) "{\"group\":\"" group "\",\"tools\":[" tools "]}"

START_TEST(test_catalog_custom_accessors)
{
    const char *docs[] = {
        DOC("g1", TOOL("zeta", ",\"annotations\":{\"readOnlyHint\":true}") "," TOOL("alpha", "")),
        "{\"group\":\"studio-x\",\"tools\":[{\"name\":\"mid.tool-1\",\"title\":\"M\","
        "\"description\":\"D\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"a\":"
        "{\"type\":\"string\"}}},\"outputSchema\":{\"type\":\"object\"},\"route\":\"studio\","
        "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true}}]}",
    };
    struct errinfo err;
    struct catalog *cat;
    const struct catalog_tool *t;

    errinfo_clear(&err);
    cat = catalog_new(docs, 2, &err);
    ck_assert_msg(cat != NULL, "%s", err.msg);
    ck_assert_uint_eq(catalog_count(cat), 3);
    ck_assert_str_eq(catalog_tool_name(catalog_at(cat, 0)), "alpha");
    ck_assert_str_eq(catalog_tool_name(catalog_at(cat, 1)), "mid.tool-1");
    ck_assert_str_eq(catalog_tool_name(catalog_at(cat, 2)), "zeta");
    t = catalog_find(cat, "zeta");
    ck_assert(catalog_tool_is_read_only(t));
    ck_assert_int_eq(catalog_tool_route(t), CATALOG_ROUTE_LOCAL);
    ck_assert_str_eq(catalog_tool_group(t), "g1");
    ck_assert_ptr_null(catalog_tool_output_schema(t));
    t = catalog_find(cat, "mid.tool-1");
    ck_assert(!catalog_tool_is_read_only(t));
    ck_assert_int_eq(catalog_tool_route(t), CATALOG_ROUTE_STUDIO);
    ck_assert_str_eq(catalog_tool_group(t), "studio-x");
    ck_assert_ptr_nonnull(catalog_tool_output_schema(t));
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(catalog_tool_input_schema(t), "properties"));
    ck_assert(!catalog_tool_is_read_only(catalog_find(cat, "alpha"))); /* no annotations */
    ck_assert_str_eq(catalog_tools_json(cat),
                     "[{\"name\":\"alpha\",\"title\":\"T\",\"description\":\"D\","
                     "\"inputSchema\":{\"type\":\"object\"}},"
                     "{\"name\":\"mid.tool-1\",\"title\":\"M\",\"description\":\"D\","
                     "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
                     "\"string\"}}},\"outputSchema\":{\"type\":\"object\"}},"
                     "{\"name\":\"zeta\",\"title\":\"T\",\"description\":\"D\","
                     "\"inputSchema\":{\"type\":\"object\"},\"annotations\":{\"readOnlyHint\":"
                     "true}}]");
    catalog_free(cat);
    catalog_free(NULL);
}
END_TEST

START_TEST(test_catalog_empty_is_allowed)
{
    const char *docs[] = {DOC("empty", "")};
    struct catalog *cat = catalog_new(docs, 1, NULL);

    ck_assert_ptr_nonnull(cat);
    ck_assert_uint_eq(catalog_count(cat), 0);
    ck_assert_str_eq(catalog_tools_json(cat), "[]");
    ck_assert_ptr_null(catalog_find(cat, "x"));
    catalog_free(cat);
}
END_TEST

static const struct {
    const char *doc1, *doc2; /* doc2 may be NULL */
    const char *msg;
} rejects[] = {
    {DOC("g", TOOL("a", "") "," TOOL("a", "")), NULL,
     "catalog: tool \"a\" is defined twice (groups \"g\" and \"g\")"},
    {DOC("g", TOOL("a", "")), DOC("h", TOOL("a", "")),
     "catalog: tool \"a\" is defined twice (groups \"g\" and \"h\")"},
    {DOC("g", TOOL("bad name", "")), NULL,
     "catalog document 1 (\"g\"): name must be a string matching [A-Za-z0-9_.-]{1,128}"},
    {DOC("g", "{\"name\":\"a\",\"title\":\"T\",\"inputSchema\":{\"type\":\"object\"},"
              "\"route\":\"local\"}"),
     NULL,
     "catalog document 1 (\"g\"), tool \"a\": title and description must be non-empty strings"},
    {DOC("g", "{\"name\":\"a\",\"title\":\"\",\"description\":\"D\",\"inputSchema\":"
              "{\"type\":\"object\"},\"route\":\"local\"}"),
     NULL,
     "catalog document 1 (\"g\"), tool \"a\": title and description must be non-empty strings"},
    {DOC("g", "{\"name\":\"a\",\"title\":\"T\",\"description\":\"D\",\"inputSchema\":"
              "{\"type\":\"object\"},\"route\":\"remote\"}"),
     NULL, "catalog document 1 (\"g\"), tool \"a\": route must be \"local\" or \"studio\""},
    {DOC("g", "{\"name\":\"a\",\"title\":\"T\",\"description\":\"D\",\"inputSchema\":"
              "{\"type\":\"object\"}}"),
     NULL, "catalog document 1 (\"g\"), tool \"a\": route must be \"local\" or \"studio\""},
    {DOC("g", "{\"name\":\"a\",\"title\":\"T\",\"description\":\"D\",\"inputSchema\":"
              "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"int\"}}},"
              "\"route\":\"local\"}"),
     NULL,
     "catalog document 1 (\"g\"), tool \"a\": inputSchema: properties.n.type: unknown type "
     "\"int\""},
    {DOC("g", "{\"name\":\"a\",\"title\":\"T\",\"description\":\"D\",\"inputSchema\":"
              "{\"type\":\"object\",\"pattern\":\"x\"},\"route\":\"local\"}"),
     NULL,
     "catalog document 1 (\"g\"), tool \"a\": inputSchema: pattern: keyword not supported by "
     "this validator"},
    {DOC("g", "{\"name\":\"a\",\"title\":\"T\",\"description\":\"D\",\"inputSchema\":"
              "{\"type\":\"string\"},\"route\":\"local\"}"),
     NULL, "catalog document 1 (\"g\"), tool \"a\": inputSchema must have \"type\": \"object\""},
    {DOC("g", "{\"name\":\"a\",\"title\":\"T\",\"description\":\"D\",\"route\":\"local\"}"), NULL,
     "catalog document 1 (\"g\"), tool \"a\": inputSchema must be an object"},
    {DOC("g", TOOL("a", ",\"outputSchema\":{\"type\":\"object\",\"required\":5}")), NULL,
     "catalog document 1 (\"g\"), tool \"a\": outputSchema: required: must be an array of "
     "property names"},
    {DOC("g", TOOL("a", ",\"annotations\":{\"readOnly\":true}")), NULL,
     "catalog document 1 (\"g\"), tool \"a\": annotations.readOnly: unknown annotation (known: "
     "readOnlyHint, destructiveHint, idempotentHint, openWorldHint)"},
    {DOC("g", TOOL("a", ",\"answer\":\"video\"")), NULL,
     "catalog document 1 (\"g\"), tool \"a\": answer must be \"image\" (the tool answers a "
     "picture) or absent"},
    {DOC("g", TOOL("a", ",\"annotations\":{\"readOnlyHint\":\"yes\"}")), NULL,
     "catalog document 1 (\"g\"), tool \"a\": annotations.readOnlyHint: must be true or false"},
    {DOC("g", TOOL("a", ",\"annotations\":[]")), NULL,
     "catalog document 1 (\"g\"), tool \"a\": annotations must be an object"},
    {DOC("g", TOOL("a", ",\"inputschema\":{}")), NULL,
     "catalog document 1 (\"g\"), tool \"a\": unknown key \"inputschema\""},
    {DOC("g", TOOL("a", ",\"hostTools\":[\"Node\"]")), NULL,
     "catalog document 1 (\"g\"), tool \"a\": hostTools must be an array of program names "
     "([a-z0-9._+-]{1,32})"},
    {DOC("g", TOOL("a", ",\"hostTools\":[]")), NULL,
     "catalog document 1 (\"g\"), tool \"a\": hostTools must be an array of program names "
     "([a-z0-9._+-]{1,32})"},
    {DOC("g", "7"), NULL, "catalog document 1 (\"g\"): each tool must be an object"},
    {"{\"group\":\"g\",\"tools\":[],\"version\":1}", NULL,
     "catalog document 1 (\"g\"): unknown key \"version\""},
    {"{\"tools\":[]}", NULL,
     "catalog document 1: group must be a string matching [A-Za-z0-9_.-]{1,128}"},
    {"{\"group\":\"g\",\"tools\":{}}", NULL, "catalog document 1 (\"g\"): tools must be an array"},
    {"[]", NULL, "catalog document 1: must be an object {\"group\", \"tools\"}"},
    {DOC("g", ""), "{\"group\":\"h\",",
     "catalog document 2: invalid JSON at byte 13: unexpected "
     "end of input"},
};

START_TEST(test_catalog_builtin_amended_names_host_tools)
{
    struct errinfo err;
    struct catalog *cat;
    const struct catalog_tool *orig;
    const cJSON *list;

    errinfo_clear(&err);
    cat = catalog_builtin_amended("Installed: node v1.", &err);
    ck_assert_ptr_nonnull(cat);
    ck_assert_uint_eq(catalog_count(cat), catalog_count(catalog_builtin()));
    orig = catalog_find(catalog_builtin(), "exec");
    list = catalog_tool_host_tools(orig);
    ck_assert(cJSON_IsArray(list) && cJSON_GetArraySize(list) == 4);
    ck_assert_ptr_null(catalog_tool_host_tools(catalog_find(cat, "read_file")));
    /* the exec description gains the sentence; the others are unchanged; hostTools not shown */
    ck_assert_ptr_nonnull(strstr(catalog_tools_json(cat), "Installed: node v1.\""));
    ck_assert_ptr_null(strstr(catalog_tools_json(cat), "hostTools"));
    ck_assert_ptr_null(strstr(catalog_tools_json(catalog_builtin()), "Installed: node v1."));
    ck_assert_uint_eq(strlen(catalog_tools_json(cat)),
                      strlen(catalog_tools_json(catalog_builtin())) +
                          strlen(" Installed: node v1."));
    catalog_free(cat);
}
END_TEST

START_TEST(test_catalog_rejects_table)
{
    const char *docs[2] = {rejects[_i].doc1, rejects[_i].doc2};
    struct errinfo err;
    struct catalog *cat;

    errinfo_clear(&err);
    cat = catalog_new(docs, rejects[_i].doc2 ? 2 : 1, &err);
    ck_assert_ptr_null(cat);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_str_eq(err.msg, rejects[_i].msg);
}
END_TEST

static const struct {
    const char *name;
    bool valid;
} names[] = {
    {"a", true},           {"read_file", true}, {"a.b-c_D9", true},     {"", false},
    {"a b", false},        {"a/b", false},      {"caf\xc3\xa9", false}, {"a\n", false},
    {"tools/call", false},
};

START_TEST(test_catalog_name_rule_table)
{
    ck_assert_int_eq(catalog_is_valid_name(names[_i].name), names[_i].valid);
}
END_TEST

START_TEST(test_catalog_name_rule_length)
{
    char name[130];

    memset(name, 'n', sizeof(name));
    name[128] = '\0';
    ck_assert(catalog_is_valid_name(name));
    name[128] = 'n';
    name[129] = '\0';
    ck_assert(!catalog_is_valid_name(name));
    ck_assert(!catalog_is_valid_name(NULL));
}
END_TEST

/* External tools: what their servers wrote is kept (unknown keywords, $ref, no title), the
 * route and budget are "external", and validation checks only what it knows. */
START_TEST(test_catalog_external_is_lenient_and_routed_external)
{
    struct errinfo err = {0};
    cJSON *doc = cJSON_Parse(
        "{\"group\":\"external\",\"tools\":[{\"name\":\"gh__search\",\"inputSchema\":"
        "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"object\","
        "\"properties\":{\"q\":{\"type\":\"string\",\"pattern\":\"^[a-z]+$\",\"format\":"
        "\"x\"},\"n\":{\"$ref\":\"#/definitions/n\"}},\"required\":[\"q\"],"
        "\"definitions\":{\"n\":{\"type\":\"integer\"}}},\"annotations\":{\"title\":\"S\","
        "\"readOnlyHint\":true},\"route\":\"external\",\"_meta\":{\"runbox/server\":\"gh\"}}]}");
    struct catalog *cat = catalog_new_external(doc, &err);
    const struct catalog_tool *t;
    struct schema_report rep;
    cJSON *args;

    ck_assert_msg(cat != NULL, "%s", err.msg);
    t = catalog_find(cat, "gh__search");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(catalog_tool_route(t), CATALOG_ROUTE_EXTERNAL);
    ck_assert_int_eq(catalog_tool_budget(t), CATALOG_BUDGET_EXTERNAL);
    ck_assert(catalog_tool_is_read_only(t));
    ck_assert_ptr_nonnull(strstr(catalog_tools_json(cat), "\"_meta\":{\"runbox/server\":\"gh\"}"));
    args = cJSON_Parse("{\"q\":\"ABC\",\"n\":\"not checked: $ref is the server's\"}");
    ck_assert_int_eq(schema_validate(catalog_tool_input_schema(t), args, "arguments", &rep), 0);
    cJSON_Delete(args);
    args = cJSON_Parse("{\"q\":3}");
    ck_assert_int_eq(schema_validate(catalog_tool_input_schema(t), args, "arguments", &rep), -1);
    ck_assert_str_eq(rep.msgs[0], "arguments.q: expected string, got integer");
    cJSON_Delete(args);
    catalog_free(cat);
}
END_TEST

START_TEST(test_catalog_external_route_is_for_external_catalogs_only)
{
    static const char *const strict[] = {
        "{\"group\":\"g\",\"tools\":[{\"name\":\"t\",\"title\":\"T\",\"description\":\"d\","
        "\"inputSchema\":{\"type\":\"object\"},\"route\":\"external\"}]}"};
    struct errinfo err = {0};

    ck_assert_ptr_null(catalog_new(strict, 1, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "route must be"));
    errinfo_clear(&err);
    ck_assert_ptr_null(catalog_new_external(
        cJSON_Parse("{\"group\":\"e\",\"tools\":[{\"name\":\"t\",\"inputSchema\":{},"
                    "\"route\":\"local\"}]}"),
        &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "route must be \"external\""));
}
END_TEST

static Suite *catalog_suite(void)
{
    Suite *s = suite_create("catalog");
    TCase *tc;

    tc = tcase_create("builtin");
    tcase_add_test(tc, test_catalog_builtin_loads);
    tcase_add_test(tc, test_catalog_builtin_docs_pass_every_check);
    tcase_add_test(tc, test_catalog_builtin_tools_are_sorted_and_found);
    tcase_add_test(tc, test_catalog_builtin_schemas_accept_built_arguments);
    tcase_add_test(tc, test_catalog_builtin_output_schemas_check);
    tcase_add_test(tc, test_catalog_builtin_types_are_single);
    tcase_add_test(tc, test_catalog_tools_json_shape);
    tcase_add_test(tc, test_catalog_listed_schema_drops_only_ceilings);
    tcase_add_test(tc, test_catalog_listing_leaves_out_default_hints);
    tcase_add_test(tc, test_catalog_image_result);
    tcase_add_test(tc, test_catalog_builtin_once_across_threads);
    tcase_add_test(tc, test_catalog_builtin_object_parsed_once_across_threads);
    tcase_add_test(tc, test_catalog_profiles_fit_their_budgets);
    tcase_add_test(tc, test_catalog_select_profiles_and_groups);
    tcase_add_loop_test(tc, test_catalog_select_refuses_unknown_items, 0,
                        sizeof(bad_specs) / sizeof(bad_specs[0]));
    tcase_add_test(tc, test_catalog_profiles_doc_is_checked);
    suite_add_tcase(s, tc);

    tc = tcase_create("custom");
    tcase_add_test(tc, test_catalog_custom_accessors);
    tcase_add_test(tc, test_catalog_external_is_lenient_and_routed_external);
    tcase_add_test(tc, test_catalog_external_route_is_for_external_catalogs_only);
    tcase_add_test(tc, test_catalog_empty_is_allowed);
    tcase_add_test(tc, test_catalog_builtin_amended_names_host_tools);
    tcase_add_loop_test(tc, test_catalog_rejects_table, 0,
                        (int)(sizeof(rejects) / sizeof(rejects[0])));
    suite_add_tcase(s, tc);

    tc = tcase_create("names");
    tcase_add_loop_test(tc, test_catalog_name_rule_table, 0,
                        (int)(sizeof(names) / sizeof(names[0])));
    tcase_add_test(tc, test_catalog_name_rule_length);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(catalog_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
