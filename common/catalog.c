/* common/catalog.c - the tool catalog (see catalog.h).
 *
 * A catalog keeps the parsed documents alive and points into them: each tool's name, group
 * and schemas are borrowed from its document's cJSON tree. Tools are sorted by name once, so
 * catalog_find() is a binary search, and the tools/list text is printed once, when it is first
 * asked for.
 *
 * Validation is strict on purpose: the catalog is data written by hand and compiled in, so a
 * typo ("requried", an unknown route, a schema keyword we do not implement) must fail the
 * build rather than make a tool silently accept what it should refuse. The build checks the
 * documents (catalog_compile.c runs catalog_new on them) and prints what a start needs, so the
 * built-in catalog (catalog_builtin.c) parses nothing at start: a built-in tool's object is
 * parsed when an accessor first needs it. */
#include "catalog.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_int.h"
#include "jsonbuf.h"
#include "jsonrpc.h"
#include "schema.h"
#include "strfmt.h"

static const char *const annotation_names[] = {"readOnlyHint", "destructiveHint", "idempotentHint",
                                               "openWorldHint"};

bool catalog_is_valid_name(const char *name)
{
    size_t n = 0;

    if (!name)
        return false;
    for (; name[n]; n++) {
        char ch = name[n];
        if (n >= CATALOG_NAME_MAX)
            return false;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '.' || ch == '-'))
            return false;
    }
    return n > 0;
}

/* Where a problem is, for messages: 'catalog document 1 ("workspace"), tool "read_file"'. */
struct where {
    size_t doc;
    const char *group;
    const char *tool;
};

static void fail(struct errinfo *err, const struct where *w, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(struct errinfo *err, const struct where *w, const char *fmt, ...)
{
    char rule[ERRINFO_MSG_MAX];
    char place[ERRINFO_MSG_MAX];
    va_list ap;
    int n;

    va_start(ap, fmt);
    vsnprintf(rule, sizeof(rule), fmt, ap);
    va_end(ap);
    n = snprintf(place, sizeof(place), "catalog document %zu", w->doc + 1);
    if (w->group && n > 0 && (size_t)n < sizeof(place))
        n += snprintf(place + n, sizeof(place) - (size_t)n, " (\"%.40s\")", w->group);
    if (w->tool && n > 0 && (size_t)n < sizeof(place))
        snprintf(place + n, sizeof(place) - (size_t)n, ", tool \"%.40s\"", w->tool);
    errinfo_set(err, ERR_INVALID, "%s: %s", place, rule);
}

static bool is_nonempty_string(const cJSON *v)
{
    return cJSON_IsString(v) && v->valuestring[0] != '\0';
}

/* An unknown member name in obj, or NULL; known is a NULL-terminated list. */
static const char *unknown_key(const cJSON *obj, const char *const *known)
{
    const cJSON *m;

    cJSON_ArrayForEach(m, obj)
    {
        size_t i;

        for (i = 0; known[i]; i++) {
            if (strcmp(m->string, known[i]) == 0)
                break;
        }
        if (!known[i])
            return m->string;
    }
    return NULL;
}

static int check_annotations(const cJSON *ann, const struct where *w, struct errinfo *err)
{
    const cJSON *m;
    size_t i;

    if (!cJSON_IsObject(ann)) {
        fail(err, w, "annotations must be an object");
        return -1;
    }
    cJSON_ArrayForEach(m, ann)
    {
        for (i = 0; i < sizeof(annotation_names) / sizeof(annotation_names[0]); i++) {
            if (strcmp(m->string, annotation_names[i]) == 0)
                break;
        }
        if (i == sizeof(annotation_names) / sizeof(annotation_names[0])) {
            fail(err, w,
                 "annotations.%.40s: unknown annotation (known: readOnlyHint, destructiveHint, "
                 "idempotentHint, openWorldHint)",
                 m->string);
            return -1;
        }
        if (!cJSON_IsBool(m)) {
            fail(err, w, "annotations.%s: must be true or false", m->string);
            return -1;
        }
    }
    return 0;
}

/* inputSchema / outputSchema: an object schema that passes schema_check. */
static int check_tool_schema(const cJSON *schema, const char *key, const struct where *w,
                             struct errinfo *err)
{
    struct errinfo sub;
    const cJSON *type;

    if (!cJSON_IsObject(schema)) {
        fail(err, w, "%s must be an object", key);
        return -1;
    }
    type = cJSON_GetObjectItemCaseSensitive(schema, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "object") != 0) {
        fail(err, w, "%s must have \"type\": \"object\"", key);
        return -1;
    }
    errinfo_clear(&sub);
    if (schema_check(schema, &sub) != 0) {
        fail(err, w, "%s: %s", key, sub.msg);
        return -1;
    }
    return 0;
}

/* The built-in catalog routes "local" or "studio"; an external one only "external". */
static int parse_route(const cJSON *route, bool external, enum catalog_route *out)
{
    if (!cJSON_IsString(route))
        return -1;
    if (external)
        *out = CATALOG_ROUTE_EXTERNAL;
    else if (strcmp(route->valuestring, "local") == 0)
        *out = CATALOG_ROUTE_LOCAL;
    else if (strcmp(route->valuestring, "studio") == 0)
        *out = CATALOG_ROUTE_STUDIO;
    else
        return -1;
    return external && strcmp(route->valuestring, "external") != 0 ? -1 : 0;
}

/* "budget": absent (a Studio tool is long, an external one external, any other none), "long",
 * "search" or "external". */
static int parse_budget(const cJSON *budget, enum catalog_route route, enum catalog_budget *out)
{
    *out = route == CATALOG_ROUTE_STUDIO     ? CATALOG_BUDGET_LONG
           : route == CATALOG_ROUTE_EXTERNAL ? CATALOG_BUDGET_EXTERNAL
                                             : CATALOG_BUDGET_NONE;
    if (!budget)
        return 0;
    if (!cJSON_IsString(budget))
        return -1;
    if (strcmp(budget->valuestring, "long") == 0)
        *out = CATALOG_BUDGET_LONG;
    else if (strcmp(budget->valuestring, "search") == 0)
        *out = CATALOG_BUDGET_SEARCH;
    else if (strcmp(budget->valuestring, "external") == 0)
        *out = CATALOG_BUDGET_EXTERNAL;
    else
        return -1;
    return 0;
}

/* "hostTools": the programs whose presence and version the daemon adds to the description. */
static bool host_tools_ok(const cJSON *arr)
{
    const cJSON *it;

    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1 || cJSON_GetArraySize(arr) > 16)
        return false;
    cJSON_ArrayForEach(it, arr)
    {
        size_t n = cJSON_IsString(it) ? strlen(it->valuestring) : 0;

        if (n < 1 || n > 32 ||
            strspn(it->valuestring, "abcdefghijklmnopqrstuvwxyz0123456789._+-") != n)
            return false;
    }
    return true;
}

/* An external tool (catalog_new_external): what an MCP client needs is checked, what the
 * server chose (annotation names, schema keywords) is kept as it is. */
static int load_external_tool(const cJSON *obj, struct where *w, struct catalog_tool *t,
                              struct errinfo *err)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
    const cJSON *ann;

    if (!cJSON_IsObject(obj) || !cJSON_IsString(name) ||
        !catalog_is_valid_name(name->valuestring)) {
        fail(err, w, "each tool must be an object whose name matches [A-Za-z0-9_.-]{1,128}");
        return -1;
    }
    w->tool = name->valuestring;
    t->name = name->valuestring;
    t->group = w->group;
    t->tool = obj;
    t->input_schema = cJSON_GetObjectItemCaseSensitive(obj, "inputSchema");
    t->output_schema = cJSON_GetObjectItemCaseSensitive(obj, "outputSchema");
    if (!cJSON_IsObject(t->input_schema)) {
        fail(err, w, "inputSchema must be an object");
        return -1;
    }
    if (t->output_schema && !cJSON_IsObject(t->output_schema))
        t->output_schema = NULL;
    ann = cJSON_GetObjectItemCaseSensitive(obj, "annotations");
    t->read_only = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ann, "readOnlyHint"));
    if (parse_route(cJSON_GetObjectItemCaseSensitive(obj, "route"), true, &t->route) != 0) {
        fail(err, w, "route must be \"external\"");
        return -1;
    }
    if (parse_budget(cJSON_GetObjectItemCaseSensitive(obj, "budget"), t->route, &t->budget) != 0) {
        fail(err, w, "budget must be \"long\", \"search\" or \"external\"");
        return -1;
    }
    return 0;
}

/* Checks one tool object and fills *t (borrowing from the document). */
static int load_tool(const cJSON *obj, struct where *w, struct catalog_tool *t, struct errinfo *err)
{
    static const char *const known[] = {"name",        "title",        "description", "inputSchema",
                                        "annotations", "outputSchema", "route",       "budget",
                                        "hostTools",   "answer",       NULL};
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
    const cJSON *ann, *ro, *answer;
    const char *extra;

    if (!cJSON_IsObject(obj)) {
        fail(err, w, "each tool must be an object");
        return -1;
    }
    if (!cJSON_IsString(name) || !catalog_is_valid_name(name->valuestring)) {
        fail(err, w, "name must be a string matching [A-Za-z0-9_.-]{1,128}");
        return -1;
    }
    w->tool = name->valuestring;
    extra = unknown_key(obj, known);
    if (extra) {
        fail(err, w, "unknown key \"%.40s\"", extra);
        return -1;
    }
    if (!is_nonempty_string(cJSON_GetObjectItemCaseSensitive(obj, "title")) ||
        !is_nonempty_string(cJSON_GetObjectItemCaseSensitive(obj, "description"))) {
        fail(err, w, "title and description must be non-empty strings");
        return -1;
    }
    t->name = name->valuestring;
    t->group = w->group;
    t->tool = obj;
    t->input_schema = cJSON_GetObjectItemCaseSensitive(obj, "inputSchema");
    t->output_schema = cJSON_GetObjectItemCaseSensitive(obj, "outputSchema");
    if (check_tool_schema(t->input_schema, "inputSchema", w, err) != 0 ||
        (t->output_schema && check_tool_schema(t->output_schema, "outputSchema", w, err) != 0))
        return -1;
    ann = cJSON_GetObjectItemCaseSensitive(obj, "annotations");
    if (ann && check_annotations(ann, w, err) != 0)
        return -1;
    ro = ann ? cJSON_GetObjectItemCaseSensitive(ann, "readOnlyHint") : NULL;
    t->read_only = cJSON_IsTrue(ro);
    if (parse_route(cJSON_GetObjectItemCaseSensitive(obj, "route"), false, &t->route) != 0) {
        fail(err, w, "route must be \"local\" or \"studio\"");
        return -1;
    }
    if (parse_budget(cJSON_GetObjectItemCaseSensitive(obj, "budget"), t->route, &t->budget) != 0) {
        fail(err, w, "budget must be \"long\", \"search\" or \"external\"");
        return -1;
    }
    if (t->budget == CATALOG_BUDGET_EXTERNAL) {
        fail(err, w, "budget \"external\" is for the tools of external MCP servers only");
        return -1;
    }
    answer = cJSON_GetObjectItemCaseSensitive(obj, "answer");
    if (answer && !(cJSON_IsString(answer) && strcmp(answer->valuestring, "image") == 0)) {
        fail(err, w, "answer must be \"image\" (the tool answers a picture) or absent");
        return -1;
    }
    t->image = answer != NULL;
    t->host_tools = cJSON_GetObjectItemCaseSensitive(obj, "hostTools");
    if (t->host_tools && !host_tools_ok(t->host_tools)) {
        fail(err, w, "hostTools must be an array of program names ([a-z0-9._+-]{1,32})");
        return -1;
    }
    return 0;
}

/* Checks one document's shape; returns its tools array. */
static const cJSON *load_doc_shape(const cJSON *doc, struct where *w, struct errinfo *err)
{
    static const char *const known[] = {"group", "tools", NULL};
    const cJSON *group = cJSON_GetObjectItemCaseSensitive(doc, "group");
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(doc, "tools");
    const char *extra;

    if (!cJSON_IsObject(doc)) {
        fail(err, w, "must be an object {\"group\", \"tools\"}");
        return NULL;
    }
    if (!cJSON_IsString(group) || !catalog_is_valid_name(group->valuestring)) {
        fail(err, w, "group must be a string matching [A-Za-z0-9_.-]{1,128}");
        return NULL;
    }
    w->group = group->valuestring;
    extra = unknown_key(doc, known);
    if (extra) {
        fail(err, w, "unknown key \"%.40s\"", extra);
        return NULL;
    }
    if (!cJSON_IsArray(tools)) {
        fail(err, w, "tools must be an array");
        return NULL;
    }
    return tools;
}

static int compare_tools(const void *a, const void *b)
{
    return strcmp(((const struct catalog_tool *)a)->name, ((const struct catalog_tool *)b)->name);
}

/* Removes what only validation needs from a copy of a schema (see catalog_listed_schema):
 * length and item ceilings, additionalProperties: false and empty properties, at every
 * depth. */
static void strip_ceilings(cJSON *schema)
{
    static const char *const ceilings[] = {"minLength", "maxLength", "minItems", "maxItems"};
    cJSON *child;

    if (!cJSON_IsObject(schema))
        return;
    for (size_t i = 0; i < sizeof(ceilings) / sizeof(ceilings[0]); i++)
        cJSON_DeleteItemFromObjectCaseSensitive(schema, ceilings[i]);
    if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties")))
        cJSON_DeleteItemFromObjectCaseSensitive(schema, "additionalProperties");
    child = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    if (cJSON_IsObject(child) && !child->child) /* no arguments: {"type":"object"} says it */
        cJSON_DeleteItemFromObjectCaseSensitive(schema, "properties");
    cJSON_ArrayForEach(child, schema)
    {
        cJSON *sub;

        if (!child->string)
            continue;
        if (strcmp(child->string, "properties") == 0 || strcmp(child->string, "anyOf") == 0 ||
            strcmp(child->string, "oneOf") == 0) {
            cJSON_ArrayForEach(sub, child)
            {
                strip_ceilings(sub);
            }
        } else if (strcmp(child->string, "items") == 0 ||
                   strcmp(child->string, "additionalProperties") == 0) {
            strip_ceilings(child);
        }
    }
}

cJSON *catalog_listed_schema(const cJSON *schema)
{
    cJSON *copy = cJSON_Duplicate(schema, true);

    strip_ceilings(copy);
    return copy;
}

/* A copy of annotations without the hints that say what the MCP default says anyway
 * (readOnlyHint false, destructiveHint true, idempotentHint false, openWorldHint true): a client
 * reads the same thing from fewer characters. */
int catalog__listed_annotations(const cJSON *ann, cJSON **out)
{
    static const struct {
        const char *name;
        bool dflt;
    } defaults[] = {{"readOnlyHint", false},
                    {"destructiveHint", true},
                    {"idempotentHint", false},
                    {"openWorldHint", true}};
    cJSON *copy;

    *out = NULL;
    if (!ann)
        return 0;
    copy = cJSON_Duplicate(ann, true);
    if (!copy)
        return -1;
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(copy, defaults[i].name);

        if (cJSON_IsBool(v) && cJSON_IsTrue(v) == defaults[i].dflt)
            cJSON_DeleteItemFromObjectCaseSensitive(copy, defaults[i].name);
    }
    if (!copy->child) { /* every hint is MCP's default: no annotations */
        cJSON_Delete(copy);
        return 0;
    }
    *out = copy;
    return 0;
}

cJSON *catalog__tool_entry(const struct catalog_tool *t)
{
    static const char *const shown[] = {"name",        "title",        "description", "inputSchema",
                                        "annotations", "outputSchema", "_meta",       "icons"};
    cJSON *obj = cJSON_CreateObject();

    for (size_t k = 0; obj && k < sizeof(shown) / sizeof(shown[0]); k++) {
        cJSON *item = cJSON_GetObjectItemCaseSensitive(t->tool, shown[k]);
        bool is_input = item && item == t->input_schema;
        cJSON *listed;

        if (!item)
            continue;
        /* An external server's definitions are shown as it gave them (as /mcp shows them, and
         * runbox validates with what it lists). */
        if ((!is_input && strcmp(shown[k], "annotations") != 0) ||
            t->route == CATALOG_ROUTE_EXTERNAL) {
            if (!cJSON_AddItemReferenceToObject(obj, shown[k], item))
                goto fail;
            continue;
        }
        if (is_input)
            listed = catalog_listed_schema(item);
        else if (catalog__listed_annotations(item, &listed) < 0)
            goto fail;
        else if (!listed)
            continue; /* only MCP's defaults */
        if (!listed)
            goto fail;
        if (!cJSON_AddItemToObject(obj, shown[k], listed)) {
            cJSON_Delete(listed);
            goto fail;
        }
    }
    return obj;
fail:
    cJSON_Delete(obj); /* the listed copies, and references: the document keeps its items */
    return NULL;
}

/* Joins each tool's entry into one array: a compiled tool's as the build printed it, any
 * other's printed from its document. */
char *catalog__tools_json(const struct catalog *cat)
{
    struct jsonbuf b = JSONBUF_INIT(CATALOG_TOOLS_JSON_MAX);

    jsonbuf_put(&b, "[", 1, NULL);
    for (size_t i = 0; i < cat->ntools && !b.failed; i++) {
        const struct catalog_tool *t = &cat->tools[i];
        cJSON *entry = t->compiled ? NULL : catalog__tool_entry(t);
        char *text = entry ? cJSON_PrintUnformatted(entry) : NULL;

        cJSON_Delete(entry);
        if (i)
            jsonbuf_put(&b, ",", 1, NULL);
        if (t->compiled)
            jsonbuf_puts(&b, t->compiled->entry, NULL);
        else if (text)
            jsonbuf_puts(&b, text, NULL);
        else
            b.failed = true;
        cJSON_free(text);
    }
    jsonbuf_put(&b, "]", 1, NULL);
    return jsonbuf_take(&b, NULL);
}

/* The profiles document is the one with a "profiles" member (see catalog.h). */
static bool is_profiles_doc(const cJSON *doc)
{
    return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "profiles"));
}

/* Parses every document and loads its tools into cat->tools (unsorted). *profiles gets the
 * index of the profiles document, or n when there is none. */
static int load_docs(struct catalog *cat, const char *const *docs, size_t n, size_t *profiles,
                     struct errinfo *err)
{
    struct where w;
    struct errinfo perr;
    const cJSON *tools, *t;
    size_t total = 0;

    *profiles = n;
    for (size_t i = 0; i < n; i++) {
        memset(&w, 0, sizeof(w));
        w.doc = i;
        errinfo_clear(&perr);
        cat->docs[i] = jsonrpc_parse(docs[i], strlen(docs[i]), &perr);
        if (!cat->docs[i]) {
            fail(err, &w, "%s", perr.msg);
            return -1;
        }
        cat->ndocs = i + 1;
        if (is_profiles_doc(cat->docs[i])) {
            if (*profiles != n) {
                fail(err, &w, "a second profiles document (the first is document %zu)",
                     *profiles + 1);
                return -1;
            }
            *profiles = i;
            continue;
        }
        tools = load_doc_shape(cat->docs[i], &w, err);
        if (!tools)
            return -1;
        total += (size_t)cJSON_GetArraySize(tools);
    }
    cat->tools = calloc(total ? total : 1, sizeof(*cat->tools));
    if (!cat->tools) {
        errinfo_set(err, ERR_NOMEM, "catalog: out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (i == *profiles)
            continue;
        memset(&w, 0, sizeof(w));
        w.doc = i;
        tools = load_doc_shape(cat->docs[i], &w, err);
        cJSON_ArrayForEach(t, tools)
        {
            if (load_tool(t, &w, &cat->tools[cat->ntools], err) != 0)
                return -1;
            cat->ntools++;
            w.tool = NULL;
        }
    }
    return 0;
}

static int sort_and_check(struct catalog *cat, struct errinfo *err)
{
    qsort(cat->tools, cat->ntools, sizeof(*cat->tools), compare_tools);
    for (size_t i = 1; i < cat->ntools; i++) {
        if (strcmp(cat->tools[i - 1].name, cat->tools[i].name) == 0) {
            errinfo_set(err, ERR_INVALID,
                        "catalog: tool \"%s\" is defined twice (groups \"%s\" and \"%s\")",
                        cat->tools[i].name, cat->tools[i - 1].group, cat->tools[i].group);
            return -1;
        }
    }
    return 0;
}

struct catalog *catalog__alloc(void)
{
    struct catalog *cat = calloc(1, sizeof(*cat));

    if (cat)
        pthread_mutex_init(&cat->json_mu, NULL);
    return cat;
}

struct catalog *catalog_new(const char *const *docs, size_t n, struct errinfo *err)
{
    struct catalog *cat = catalog__alloc();
    size_t profiles;

    if (cat)
        cat->docs = calloc(n ? n : 1, sizeof(*cat->docs));
    if (!cat || !cat->docs) {
        errinfo_set(err, ERR_NOMEM, "catalog: out of memory");
        goto fail;
    }
    if (load_docs(cat, docs, n, &profiles, err) != 0)
        goto fail;
    if (sort_and_check(cat, err) != 0)
        goto fail;
    if (profiles < n && catalog__load_profiles(cat, cat->docs[profiles], profiles, err) != 0)
        goto fail;
    if (catalog__build_instructions(cat, err) != 0)
        goto fail;
    return cat;
fail:
    catalog_free(cat);
    return NULL;
}

struct catalog *catalog_new_external(cJSON *doc, struct errinfo *err)
{
    struct catalog *cat = catalog__alloc();
    const cJSON *group = cJSON_GetObjectItemCaseSensitive(doc, "group");
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(doc, "tools"), *t;
    struct where w = {0};

    if (cat)
        cat->docs = calloc(1, sizeof(*cat->docs));
    if (!cat || !cat->docs) {
        catalog_free(cat);
        cJSON_Delete(doc);
        errinfo_set(err, ERR_NOMEM, "catalog: out of memory");
        return NULL;
    }
    cat->docs[0] = doc;
    cat->ndocs = 1;
    if (!cJSON_IsString(group) || !cJSON_IsArray(tools)) {
        fail(err, &w, "must be an object {\"group\": string, \"tools\": array}");
        goto fail;
    }
    w.group = group->valuestring;
    cat->tools = calloc((size_t)cJSON_GetArraySize(tools) + 1, sizeof(*cat->tools));
    if (!cat->tools) {
        errinfo_set(err, ERR_NOMEM, "catalog: out of memory");
        goto fail;
    }
    cJSON_ArrayForEach(t, tools)
    {
        if (load_external_tool(t, &w, &cat->tools[cat->ntools], err) != 0)
            goto fail;
        cat->ntools++;
        w.tool = NULL;
    }
    if (sort_and_check(cat, err) != 0)
        goto fail;
    return cat;
fail:
    catalog_free(cat);
    return NULL;
}

void catalog_free(struct catalog *cat)
{
    if (!cat)
        return;
    for (size_t i = 0; i < cat->ndocs; i++)
        cJSON_Delete(cat->docs[i]);
    free(cat->docs);
    free(cat->tools);
    free(cat->tools_json);
    free(cat->profiles);
    free(cat->instructions);
    pthread_mutex_destroy(&cat->json_mu);
    free(cat);
}

size_t catalog_count(const struct catalog *cat)
{
    return cat->ntools;
}

const struct catalog_tool *catalog_at(const struct catalog *cat, size_t i)
{
    return i < cat->ntools ? &cat->tools[i] : NULL;
}

const struct catalog_tool *catalog_find(const struct catalog *cat, const char *name)
{
    struct catalog_tool key;

    if (!name)
        return NULL;
    key.name = name;
    return bsearch(&key, cat->tools, cat->ntools, sizeof(*cat->tools), compare_tools);
}

const char *catalog_tool_name(const struct catalog_tool *tool)
{
    return tool->name;
}

const char *catalog_tool_group(const struct catalog_tool *tool)
{
    return tool->group;
}

enum catalog_route catalog_tool_route(const struct catalog_tool *tool)
{
    return tool->route;
}

enum catalog_budget catalog_tool_budget(const struct catalog_tool *tool)
{
    return tool->budget;
}

/* A compiled tool's object, parsed at the first ask (any thread: the first parse to finish is
 * kept, the others are dropped). The text was printed by the build from a checked tree, so only
 * memory can fail it, and a catalog without its schemas cannot go on. */
static const cJSON *compiled_object(const struct catalog_tool *t)
{
    cJSON *tree = atomic_load_explicit(t->tree, memory_order_acquire);
    cJSON *mine;

    if (tree)
        return tree;
    mine = cJSON_Parse(t->compiled->object);
    if (!mine) {
        fprintf(stderr, "runbox: out of memory reading the tool catalog (%s)\n", t->name);
        abort();
    }
    if (atomic_compare_exchange_strong_explicit(t->tree, &tree, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    cJSON_Delete(mine);
    return tree;
}

const cJSON *catalog_tool_input_schema(const struct catalog_tool *tool)
{
    if (tool->compiled)
        return cJSON_GetObjectItemCaseSensitive(compiled_object(tool), "inputSchema");
    return tool->input_schema;
}

const cJSON *catalog_tool_output_schema(const struct catalog_tool *tool)
{
    if (tool->compiled)
        return tool->compiled->output
                   ? cJSON_GetObjectItemCaseSensitive(compiled_object(tool), "outputSchema")
                   : NULL;
    return tool->output_schema;
}

const cJSON *catalog_tool_object(const struct catalog_tool *tool)
{
    return tool->compiled ? compiled_object(tool) : tool->tool;
}

bool catalog_tool_is_read_only(const struct catalog_tool *tool)
{
    return tool->read_only;
}

const char *catalog_tools_json(const struct catalog *cat)
{
    /* The text is the catalog's, built at the first ask: json_mu makes the build once. */
    struct catalog *c = (struct catalog *)cat;
    char *text;

    pthread_mutex_lock(&c->json_mu);
    if (!c->tools_json)
        c->tools_json = catalog__tools_json(c);
    text = c->tools_json;
    pthread_mutex_unlock(&c->json_mu);
    return text;
}

bool catalog_tool_answers_image(const struct catalog_tool *tool)
{
    return tool && tool->image; /* NULL: an external server's tool, which has no catalog entry */
}

const cJSON *catalog_tool_host_tools(const struct catalog_tool *tool)
{
    if (tool->compiled)
        return tool->compiled->host_tools
                   ? cJSON_GetObjectItemCaseSensitive(compiled_object(tool), "hostTools")
                   : NULL;
    return tool->host_tools;
}
