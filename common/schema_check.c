/* common/schema_check.c - schema_check(), the strict check of a schema itself (see schema.h).
 *
 * Used on the catalog at start-up: unknown keywords, malformed keyword values, duplicate
 * member names and contradictions (minimum above maximum, a default the schema itself
 * refuses) are errors, so schema_validate() can assume a sane schema. Messages name the
 * schema path and keyword, built with the path helpers shared through schema_int.h. */
#include "schema.h"
#include "schema_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum kw_kind {
    KW_TYPE,
    KW_PROPERTIES,
    KW_REQUIRED,
    KW_SCHEMA, /* a schema: an object or a boolean */
    KW_ENUM,
    KW_ANY,
    KW_NUMBER,
    KW_COUNT, /* a non-negative integer */
    KW_SCHEMA_LIST,
    KW_STRING,
    KW_BOOL,
    KW_ARRAY,
    KW_UNSUPPORTED,
};

static const struct {
    const char *name;
    enum kw_kind kind;
} keyword_table[] = {
    {"type", KW_TYPE},
    {"properties", KW_PROPERTIES},
    {"required", KW_REQUIRED},
    {"additionalProperties", KW_SCHEMA},
    {"items", KW_SCHEMA},
    {"enum", KW_ENUM},
    {"const", KW_ANY},
    {"default", KW_ANY},
    {"minimum", KW_NUMBER},
    {"maximum", KW_NUMBER},
    {"exclusiveMinimum", KW_NUMBER},
    {"exclusiveMaximum", KW_NUMBER},
    {"minLength", KW_COUNT},
    {"maxLength", KW_COUNT},
    {"minItems", KW_COUNT},
    {"maxItems", KW_COUNT},
    {"oneOf", KW_SCHEMA_LIST},
    {"anyOf", KW_SCHEMA_LIST},
    {"title", KW_STRING},
    {"description", KW_STRING},
    {"$comment", KW_STRING},
    {"$schema", KW_STRING},
    {"$id", KW_STRING},
    {"format", KW_STRING},
    {"deprecated", KW_BOOL},
    {"readOnly", KW_BOOL},
    {"writeOnly", KW_BOOL},
    {"examples", KW_ARRAY},
    /* Real JSON Schema keywords this validator does not implement: a schema using one would
     * silently accept what its author meant to refuse, so it is refused instead. */
    {"pattern", KW_UNSUPPORTED},
    {"patternProperties", KW_UNSUPPORTED},
    {"allOf", KW_UNSUPPORTED},
    {"not", KW_UNSUPPORTED},
    {"$ref", KW_UNSUPPORTED},
    {"$defs", KW_UNSUPPORTED},
    {"definitions", KW_UNSUPPORTED},
    {"if", KW_UNSUPPORTED},
    {"then", KW_UNSUPPORTED},
    {"else", KW_UNSUPPORTED},
    {"prefixItems", KW_UNSUPPORTED},
    {"uniqueItems", KW_UNSUPPORTED},
    {"multipleOf", KW_UNSUPPORTED},
    {"propertyNames", KW_UNSUPPORTED},
    {"dependentRequired", KW_UNSUPPORTED},
    {"dependentSchemas", KW_UNSUPPORTED},
    {"minProperties", KW_UNSUPPORTED},
    {"maxProperties", KW_UNSUPPORTED},
    {"contains", KW_UNSUPPORTED},
    {"unevaluatedProperties", KW_UNSUPPORTED},
    {"unevaluatedItems", KW_UNSUPPORTED},
};

#define N_KEYWORDS (sizeof(keyword_table) / sizeof(keyword_table[0]))

struct cctx {
    struct schema_path path; /* ".properties.depth.type"; shown without the leading dot */
    struct errinfo *err;
    int depth;
};

static int check_fail(struct cctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int check_fail(struct cctx *c, const char *fmt, ...)
{
    char rule[SCHEMA_MSG_MAX];
    const char *prefix;
    const char *where = c->path.len ? schema_path_shown(&c->path, &prefix) : "schema";
    va_list ap;

    if (!c->path.len)
        prefix = "";
    if (where[0] == '.' && !prefix[0])
        where++;
    va_start(ap, fmt);
    vsnprintf(rule, sizeof(rule), fmt, ap);
    va_end(ap);
    errinfo_set(c->err, ERR_INVALID, "%s%s: %s", prefix, where, rule);
    return -1;
}

static int check_schema(struct cctx *c, const cJSON *schema);

/* The first member name that occurs twice in obj, or NULL. Schemas are small: O(n^2). */
static const char *duplicate_key(const cJSON *obj)
{
    for (const cJSON *a = obj->child; a; a = a->next) {
        for (const cJSON *b = a->next; b; b = b->next) {
            if (a->string && b->string && strcmp(a->string, b->string) == 0)
                return a->string;
        }
    }
    return NULL;
}

static int check_type_keyword(struct cctx *c, const cJSON *k)
{
    unsigned seen = 0, bit;
    const cJSON *t;
    char q[2 * SCHEMA_VALUE_CUT];

    if (cJSON_IsString(k)) {
        if (!schema_type_bit(k->valuestring))
            return check_fail(c, "unknown type \"%s\"",
                              schema_quoted(k->valuestring, q, sizeof(q)));
        return 0;
    }
    if (!cJSON_IsArray(k) || !k->child)
        return check_fail(c, "must be a type name or a non-empty array of type names");
    cJSON_ArrayForEach(t, k)
    {
        if (!cJSON_IsString(t))
            return check_fail(c, "must be a type name or a non-empty array of type names");
        bit = schema_type_bit(t->valuestring);
        if (!bit)
            return check_fail(c, "unknown type \"%s\"",
                              schema_quoted(t->valuestring, q, sizeof(q)));
        if (seen & bit)
            return check_fail(c, "type \"%s\" is listed twice", t->valuestring);
        seen |= bit;
    }
    return 0;
}

static int check_properties(struct cctx *c, const cJSON *k)
{
    const cJSON *p;
    size_t old;
    char q[2 * SCHEMA_VALUE_CUT];

    if (!cJSON_IsObject(k))
        return check_fail(c, "must be an object mapping names to schemas");
    if (duplicate_key(k))
        return check_fail(c, "property \"%s\" is declared twice",
                          schema_quoted(duplicate_key(k), q, sizeof(q)));
    cJSON_ArrayForEach(p, k)
    {
        old = schema_path_push_key(&c->path, p->string);
        if (check_schema(c, p) != 0)
            return -1;
        schema_path_pop(&c->path, old);
    }
    return 0;
}

static int check_required_keyword(struct cctx *c, const cJSON *k)
{
    const cJSON *r, *q;
    char name[2 * SCHEMA_VALUE_CUT];

    if (!cJSON_IsArray(k))
        return check_fail(c, "must be an array of property names");
    cJSON_ArrayForEach(r, k)
    {
        if (!cJSON_IsString(r))
            return check_fail(c, "must be an array of property names");
        for (q = r->next; q; q = q->next) {
            if (cJSON_IsString(q) && strcmp(q->valuestring, r->valuestring) == 0)
                return check_fail(c, "\"%s\" is listed twice",
                                  schema_quoted(r->valuestring, name, sizeof(name)));
        }
    }
    return 0;
}

static int check_schema_list(struct cctx *c, const cJSON *k)
{
    const cJSON *alt;
    size_t i = 0, old;

    if (!cJSON_IsArray(k) || !k->child)
        return check_fail(c, "must be a non-empty array of schemas");
    cJSON_ArrayForEach(alt, k)
    {
        old = schema_path_push_index(&c->path, i++);
        if (check_schema(c, alt) != 0)
            return -1;
        schema_path_pop(&c->path, old);
    }
    return 0;
}

static int check_keyword(struct cctx *c, const cJSON *k)
{
    size_t i;

    for (i = 0; i < N_KEYWORDS; i++) {
        if (strcmp(k->string, keyword_table[i].name) == 0)
            break;
    }
    if (i == N_KEYWORDS)
        return check_fail(c, "unknown keyword");
    switch (keyword_table[i].kind) {
    case KW_TYPE:
        return check_type_keyword(c, k);
    case KW_PROPERTIES:
        return check_properties(c, k);
    case KW_REQUIRED:
        return check_required_keyword(c, k);
    case KW_SCHEMA:
        if (!cJSON_IsBool(k) && !cJSON_IsObject(k))
            return check_fail(c, "must be a schema (an object or a boolean)");
        return check_schema(c, k);
    case KW_ENUM:
        if (!cJSON_IsArray(k) || !k->child)
            return check_fail(c, "must be a non-empty array");
        return 0;
    case KW_ANY:
        return 0;
    case KW_NUMBER:
        return cJSON_IsNumber(k) && isfinite(k->valuedouble) ? 0
                                                             : check_fail(c, "must be a number");
    case KW_COUNT:
        if (!cJSON_IsNumber(k) || !schema_is_safe_whole(k->valuedouble) || k->valuedouble < 0)
            return check_fail(c, "must be a non-negative integer");
        return 0;
    case KW_SCHEMA_LIST:
        return check_schema_list(c, k);
    case KW_STRING:
        return cJSON_IsString(k) ? 0 : check_fail(c, "must be a string");
    case KW_BOOL:
        return cJSON_IsBool(k) ? 0 : check_fail(c, "must be true or false");
    case KW_ARRAY:
        return cJSON_IsArray(k) ? 0 : check_fail(c, "must be an array");
    case KW_UNSUPPORTED:
        return check_fail(c, "keyword not supported by this validator");
    }
    return check_fail(c, "unknown keyword");
}

static int check_order(struct cctx *c, const cJSON *lo, const cJSON *hi)
{
    if (lo && hi && lo->valuedouble > hi->valuedouble)
        return check_fail(c, "%s is greater than %s", lo->string, hi->string);
    return 0;
}

/* A value the schema itself names must pass it: the default entirely, an enum member (when
 * type is given) its type. */
static int check_own_value(struct cctx *c, const cJSON *schema, const cJSON *v, const char *what,
                           const cJSON *type)
{
    char first[SCHEMA_MSG_MAX];

    if (schema_first_violation(schema, type, v, what, first) < 0)
        return check_fail(c, "%s", first);
    return 0;
}

static int check_consistency(struct cctx *c, const cJSON *schema)
{
    struct schema_keywords kw;
    const cJSON *r, *e, *def;
    size_t i = 0;
    char what[32], q[2 * SCHEMA_VALUE_CUT];

    schema_gather(schema, &kw);
    if (check_order(c, kw.minimum, kw.maximum) || check_order(c, kw.minlen, kw.maxlen) ||
        check_order(c, kw.minitems, kw.maxitems))
        return -1;
    if (cJSON_IsFalse(kw.additional) && kw.required) {
        cJSON_ArrayForEach(r, kw.required)
        {
            if (!cJSON_GetObjectItemCaseSensitive(kw.properties, r->valuestring))
                return check_fail(c,
                                  "required property \"%s\" is not declared in properties, "
                                  "and additionalProperties is false",
                                  schema_quoted(r->valuestring, q, sizeof(q)));
        }
    }
    if (kw.enumv && kw.type) {
        cJSON_ArrayForEach(e, kw.enumv)
        {
            snprintf(what, sizeof(what), "enum[%zu]", i++);
            if (check_own_value(c, schema, e, what, kw.type) != 0)
                return -1;
        }
    }
    def = cJSON_GetObjectItemCaseSensitive(schema, "default");
    if (def)
        return check_own_value(c, schema, def, "default", NULL);
    return 0;
}

static int check_schema(struct cctx *c, const cJSON *schema)
{
    const cJSON *k;
    size_t old;
    int rc = 0;
    char q[2 * SCHEMA_VALUE_CUT];

    if (cJSON_IsBool(schema))
        return 0;
    if (!cJSON_IsObject(schema))
        return check_fail(c, "must be a schema (an object or a boolean)");
    if (c->depth >= SCHEMA_MAX_DEPTH)
        return check_fail(c, "schema nests deeper than %d levels", SCHEMA_MAX_DEPTH);
    if (duplicate_key(schema))
        return check_fail(c, "keyword \"%s\" appears twice",
                          schema_quoted(duplicate_key(schema), q, sizeof(q)));
    c->depth++;
    cJSON_ArrayForEach(k, schema)
    {
        old = schema_path_push_key(&c->path, k->string);
        rc = check_keyword(c, k);
        if (rc != 0)
            break;
        schema_path_pop(&c->path, old);
    }
    if (rc == 0)
        rc = check_consistency(c, schema);
    c->depth--;
    return rc;
}

int schema_check(const cJSON *schema, struct errinfo *err)
{
    struct cctx c;

    memset(&c, 0, sizeof(c));
    c.err = err;
    if (!schema) {
        errinfo_set(err, ERR_INVALID, "schema: missing");
        return -1;
    }
    return check_schema(&c, schema);
}
