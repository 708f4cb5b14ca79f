/* tests/unit/test_schema.c - the JSON Schema subset: every keyword and its message, paths,
 * alternatives, the integer rule, UTF-8 lengths, the error cap, and schema_check. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schema.h"

/* Validates value (JSON text) against schema (JSON text) with root "arguments". */
static int run(const char *schema_text, const char *value_text, struct schema_report *rep)
{
    cJSON *schema = cJSON_Parse(schema_text);
    cJSON *value = cJSON_Parse(value_text);
    int rc;

    ck_assert_msg(schema != NULL, "bad schema text %s", schema_text);
    ck_assert_msg(value != NULL, "bad value text %s", value_text);
    rc = schema_validate(schema, value, "arguments", rep);
    cJSON_Delete(schema);
    cJSON_Delete(value);
    return rc;
}

/* ---- one violation per row: schema, value, the exact message ---- */

static const struct {
    const char *schema;
    const char *value;
    const char *msg;
} one_error[] = {
    /* type */
    {"{\"type\":\"object\"}", "[]", "arguments: expected object, got array"},
    {"{\"properties\":{\"depth\":{\"type\":\"integer\"}}}", "{\"depth\":\"3\"}",
     "arguments.depth: expected integer, got string"},
    {"{\"properties\":{\"d\":{\"type\":\"integer\"}}}", "{\"d\":2.5}",
     "arguments.d: expected integer, got number"},
    {"{\"properties\":{\"d\":{\"type\":\"integer\"}}}", "{\"d\":1e300}",
     "arguments.d: integer out of range (at most 9007199254740991 in magnitude); got 1e+300"},
    {"{\"properties\":{\"s\":{\"type\":\"string\"}}}", "{\"s\":7}",
     "arguments.s: expected string, got integer"},
    {"{\"properties\":{\"s\":{\"type\":\"string\"}}}", "{\"s\":null}",
     "arguments.s: expected string, got null"},
    {"{\"properties\":{\"b\":{\"type\":\"boolean\"}}}", "{\"b\":\"true\"}",
     "arguments.b: expected boolean, got string"},
    {"{\"properties\":{\"n\":{\"type\":\"number\"}}}", "{\"n\":{}}",
     "arguments.n: expected number, got object"},
    {"{\"properties\":{\"a\":{\"type\":\"array\"}}}", "{\"a\":false}",
     "arguments.a: expected array, got boolean"},
    {"{\"properties\":{\"z\":{\"type\":\"null\"}}}", "{\"z\":0}",
     "arguments.z: expected null, got integer"},
    {"{\"properties\":{\"x\":{\"type\":[\"string\",\"null\"]}}}", "{\"x\":1.5}",
     "arguments.x: expected string or null, got number"},
    /* required and additionalProperties */
    {"{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},\"required\":[\"path\"]"
     "}",
     "{}", "arguments.path: required property is missing"},
    {"{\"type\":\"object\",\"properties\":{\"path\":{},\"content\":{},\"encoding\":{}},"
     "\"additionalProperties\":false}",
     "{\"colour\":1}", "arguments.colour: unexpected property (allowed: path, content, encoding)"},
    {"{\"type\":\"object\",\"additionalProperties\":false}", "{\"a\":1}",
     "arguments.a: unexpected property (no properties are allowed)"},
    {"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}", "{\"k\":1}",
     "arguments.k: expected string, got integer"},
    {"{\"properties\":{\"p\":{\"type\":\"string\"}}}", "{\"p\":\"a\",\"p\":\"b\"}",
     "arguments.p: duplicate property"},
    {"{\"additionalProperties\":false}", "{\"a b\":1}",
     "arguments[\"a b\"]: unexpected property (no properties are allowed)"},
    {"{\"properties\":{\"a\\nb\":{}},\"additionalProperties\":false}", "{\"x\":1}",
     "arguments.x: unexpected property (allowed: a\\nb)"}, /* names from the schema are escaped */
    {"{\"properties\":{\"x\":{\"type\":[\"bogus\\n\",\"null\"]}}}", "{\"x\":1}",
     "arguments.x: expected null, got integer"}, /* unknown type names are not echoed */
    {"{\"additionalProperties\":false}",
     "{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":1}",
     "arguments[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\"]: unexpected property (no "
     "properties are allowed)"}, /* long names are cut */
    /* enum and const */
    {"{\"properties\":{\"encoding\":{\"enum\":[\"utf8\",\"base64\"]}}}", "{\"encoding\":\"hex\"}",
     "arguments.encoding: must be one of \"utf8\", \"base64\"; got \"hex\""},
    {"{\"properties\":{\"e\":{\"enum\":[1,2,null]}}}", "{\"e\":[1]}",
     "arguments.e: must be one of 1, 2, null; got an array"},
    {"{\"properties\":{\"t\":{\"const\":\"Vector3\"}}}", "{\"t\":\"Vector2\"}",
     "arguments.t: must be \"Vector3\"; got \"Vector2\""},
    {"{\"const\":{\"a\":1,\"b\":2}}", "{\"b\":2,\"c\":1}",
     "arguments: must be {\"a\":1,\"b\":2}; got an object"},
    {"{\"const\":{\"a\":1,\"b\":2}}", "{\"a\":1,\"a\":1}",
     "arguments: must be {\"a\":1,\"b\":2}; got an object"},
    {"{\"const\":{\"a\":1}}", "{\"a\":1,\"b\":2}", "arguments: must be {\"a\":1}; got an object"},
    {"{\"const\":[1,2]}", "[2,1]", "arguments: must be [1,2]; got an array"},
    {"{\"enum\":[[1,2],{\"k\":true}]}", "{\"k\":false}",
     "arguments: must be one of [1,2], {\"k\":true}; got an object"},
    /* numbers */
    {"{\"properties\":{\"max_results\":{\"minimum\":1}}}", "{\"max_results\":0}",
     "arguments.max_results: must be >= 1; got 0"},
    {"{\"properties\":{\"m\":{\"maximum\":10000}}}", "{\"m\":10001}",
     "arguments.m: must be <= 10000; got 10001"},
    {"{\"properties\":{\"m\":{\"exclusiveMinimum\":0}}}", "{\"m\":0}",
     "arguments.m: must be > 0; got 0"},
    {"{\"properties\":{\"m\":{\"exclusiveMaximum\":1.5}}}", "{\"m\":1.5}",
     "arguments.m: must be < 1.5; got 1.5"},
    {"{\"properties\":{\"m\":{\"minimum\":-0.25}}}", "{\"m\":-0.5}",
     "arguments.m: must be >= -0.25; got -0.5"},
    /* strings, counted in code points */
    {"{\"properties\":{\"s\":{\"minLength\":1}}}", "{\"s\":\"\"}",
     "arguments.s: must be at least 1 character; got 0"},
    {"{\"properties\":{\"s\":{\"minLength\":3}}}", "{\"s\":\"\xc3\xa9\xc3\xa9\"}",
     "arguments.s: must be at least 3 characters; got 2"},
    {"{\"properties\":{\"s\":{\"maxLength\":2}}}", "{\"s\":\"a\xf0\x9f\x98\x80z\"}",
     "arguments.s: must be at most 2 characters; got 3"},
    /* arrays, nested paths with indices */
    {"{\"properties\":{\"items\":{\"items\":{\"properties\":{\"name\":{\"maxLength\":64}}}}}}",
     "{\"items\":[{\"name\":\"a\"},{},{\"name\":"
     "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}]}",
     "arguments.items[2].name: must be at most 64 characters; got 70"},
    {"{\"properties\":{\"l\":{\"minItems\":1}}}", "{\"l\":[]}",
     "arguments.l: must have at least 1 item; got 0"},
    {"{\"properties\":{\"l\":{\"maxItems\":2}}}", "{\"l\":[1,2,3]}",
     "arguments.l: must have at most 2 items; got 3"},
    {"{\"items\":{\"items\":{\"type\":\"number\"}}}", "[[1],[2,\"x\"]]",
     "arguments[1][1]: expected number, got string"},
    /* boolean schemas */
    {"{\"properties\":{\"never\":false}}", "{\"never\":1}",
     "arguments.never: no value is allowed here"},
    /* alternatives */
    {"{\"properties\":{\"v\":{\"oneOf\":["
     "{\"type\":\"object\",\"properties\":{\"type\":{\"const\":\"Vector3\"},"
     "\"value\":{\"type\":\"array\",\"minItems\":3}},\"required\":[\"type\",\"value\"]},"
     "{\"type\":\"object\",\"properties\":{\"type\":{\"const\":\"Color3\"},"
     "\"value\":{\"type\":\"array\"}},\"required\":[\"type\",\"value\"]}]}}}",
     "{\"v\":{\"type\":\"Vector3\",\"value\":[1,2]}}",
     "arguments.v: matches none of the 2 alternatives; closest: arguments.v.value: must have at "
     "least 3 items; got 2"},
    {"{\"properties\":{\"v\":{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}}}",
     "{\"v\":2}", "arguments.v: matches 2 of the 2 alternatives; must match exactly one"},
    {"{\"properties\":{\"v\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"boolean\"}]}}}",
     "{\"v\":2}",
     "arguments.v: matches none of the 2 alternatives; closest: arguments.v: expected string, "
     "got integer"},
};

START_TEST(test_schema_one_error_table)
{
    struct schema_report rep;

    ck_assert_int_eq(run(one_error[_i].schema, one_error[_i].value, &rep), -1);
    ck_assert_msg(rep.count == 1, "row %d: %zu violations, first: %s", _i, rep.count, rep.msgs[0]);
    ck_assert_str_eq(rep.msgs[0], one_error[_i].msg);
}
END_TEST

/* ---- valid values ---- */

static const struct {
    const char *schema;
    const char *value;
} valid[] = {
    {"{\"type\":\"integer\"}", "2"},
    {"{\"type\":\"integer\"}", "2.0"}, /* a whole number, whatever its spelling */
    {"{\"type\":\"integer\"}", "1e2"},
    {"{\"type\":\"integer\"}", "-9007199254740991"},
    {"{\"type\":\"number\"}", "2"},
    {"{\"type\":[\"string\",\"null\"]}", "null"},
    {"{\"type\":\"string\",\"maxLength\":1}", "\"\xf0\x9f\x98\x80\""},
    {"{\"type\":\"string\",\"minLength\":2,\"maxLength\":2}", "\"\xc3\xa9\xc3\xa9\""},
    {"{\"enum\":[\"a\",{\"k\":[1]}]}", "{\"k\":[1]}"},
    {"{\"const\":null}", "null"},
    {"{\"const\":{\"b\":[1,{\"c\":null}],\"a\":1.0}}", "{\"a\":1,\"b\":[1,{\"c\":null}]}"},
    {"{\"enum\":[\"x\",[1,[2]]]}", "[1,[2.0]]"},
    {"{\"minimum\":1,\"maximum\":1}", "1"},
    {"{\"exclusiveMinimum\":0}", "0.001"},
    {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"default\":\"x\"}},"
     "\"required\":[\"a\"],\"additionalProperties\":false}",
     "{\"a\":\"\"}"},
    {"{\"type\":\"object\"}", "{\"anything\":[1,{\"b\":null}]}"},
    {"{\"additionalProperties\":true}", "{\"x\":1}"},
    {"{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "3"},
    {"{\"anyOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "3"},
    {"{\"items\":{\"type\":\"integer\"},\"minItems\":0,\"maxItems\":3}", "[1,2,3]"},
    {"true", "{\"x\":1}"},
    {"{\"title\":\"t\",\"description\":\"d\",\"examples\":[1],\"format\":\"uri\"}", "\"x\""},
    {"{\"minimum\":5}", "\"strings are not numbers\""}, /* keywords apply to their own type */
};

START_TEST(test_schema_valid_table)
{
    struct schema_report rep;

    memset(&rep, 0x55, sizeof(rep));
    ck_assert_msg(run(valid[_i].schema, valid[_i].value, &rep) == 0, "row %d: %s", _i, rep.msgs[0]);
    ck_assert_uint_eq(rep.count, 0);
}
END_TEST

/* ---- behaviours beyond one message ---- */

START_TEST(test_schema_reports_every_violation)
{
    struct schema_report rep;
    const char *schema = "{\"type\":\"object\",\"properties\":{"
                         "\"path\":{\"type\":\"string\"},\"depth\":{\"type\":\"integer\"},"
                         "\"mode\":{\"enum\":[\"a\",\"b\"]}},"
                         "\"required\":[\"path\",\"name\"],\"additionalProperties\":false}";

    ck_assert_int_eq(run(schema, "{\"depth\":\"x\",\"mode\":\"c\",\"extra\":true}", &rep), -1);
    ck_assert_uint_eq(rep.count, 5);
    ck_assert_str_eq(rep.msgs[0], "arguments.path: required property is missing");
    ck_assert_str_eq(rep.msgs[1], "arguments.name: required property is missing");
    ck_assert_str_eq(rep.msgs[2], "arguments.depth: expected integer, got string");
    ck_assert_str_eq(rep.msgs[3], "arguments.mode: must be one of \"a\", \"b\"; got \"c\"");
    ck_assert_str_eq(rep.msgs[4],
                     "arguments.extra: unexpected property (allowed: path, depth, mode)");
}
END_TEST

START_TEST(test_schema_error_count_is_capped)
{
    struct schema_report rep;
    char value[512];
    size_t len = 0;

    len += (size_t)snprintf(value + len, sizeof(value) - len, "{");
    for (int i = 0; i < 20; i++)
        len +=
            (size_t)snprintf(value + len, sizeof(value) - len, "%s\"k%d\":%d", i ? "," : "", i, i);
    snprintf(value + len, sizeof(value) - len, "}");
    ck_assert_int_eq(run("{\"additionalProperties\":false}", value, &rep), -1);
    ck_assert_uint_eq(rep.count, 20);
    ck_assert_str_eq(rep.msgs[0], "arguments.k0: unexpected property (no properties are allowed)");
    ck_assert_str_eq(rep.msgs[SCHEMA_MAX_ERRORS - 1],
                     "arguments.k7: unexpected property (no properties are allowed)");
}
END_TEST

/* const and enum compare each value once: cJSON_Compare, which they used, took 2^depth steps
 * for an equal object (an upstream's const 50 levels deep held a worker for good). */
static char *nested(int depth, const char *bottom)
{
    size_t n = (size_t)depth * 6 + strlen(bottom) + 1;
    char *s = malloc(n), *at = s;

    ck_assert_ptr_nonnull(s);
    for (int i = 0; i < depth; i++)
        at += sprintf(at, "{\"a\":");
    at += sprintf(at, "%s", bottom);
    for (int i = 0; i < depth; i++)
        *at++ = '}';
    *at = '\0';
    return s;
}

START_TEST(test_schema_deep_const_is_linear)
{
    struct schema_report rep;
    char *value = nested(60, "[1,{\"b\":2,\"c\":3}]"), *same = nested(60, "[1,{\"c\":3,\"b\":2}]");
    char *other = nested(60, "[1,{\"b\":2,\"c\":4}]");
    char *schema = malloc(strlen(value) + 32), *enums = malloc(strlen(value) * 2 + 32);

    ck_assert_ptr_nonnull(schema);
    ck_assert_ptr_nonnull(enums);
    sprintf(schema, "{\"const\":%s}", value);
    sprintf(enums, "{\"enum\":[%s,%s]}", other, value);
    ck_assert_int_eq(run(schema, same, &rep), 0);
    ck_assert_int_eq(run(enums, same, &rep), 0);
    ck_assert_int_eq(run(schema, other, &rep), -1);
    ck_assert_str_eq(
        rep.msgs[0],
        "arguments: must be {\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":"
        "{\"a\":{\"a\":{\"a\":...; got an object");
    free(value);
    free(same);
    free(other);
    free(schema);
    free(enums);
}
END_TEST

START_TEST(test_schema_null_value)
{
    struct schema_report rep;
    cJSON *schema = cJSON_Parse("{\"type\":\"object\"}");

    ck_assert_int_eq(schema_validate(schema, NULL, "arguments", &rep), -1);
    ck_assert_uint_eq(rep.count, 1);
    ck_assert_str_eq(rep.msgs[0], "arguments: expected object, got nothing");
    cJSON_Delete(schema);
}
END_TEST

START_TEST(test_schema_root_name_is_used)
{
    struct schema_report rep;
    cJSON *schema = cJSON_Parse("{\"type\":\"string\"}");
    cJSON *value = cJSON_CreateNumber(1);

    ck_assert_int_eq(schema_validate(schema, value, "result", &rep), -1);
    ck_assert_str_eq(rep.msgs[0], "result: expected string, got integer");
    cJSON_Delete(schema);
    cJSON_Delete(value);
}
END_TEST

START_TEST(test_schema_long_values_are_cut_to_one_line)
{
    struct schema_report rep;
    char value[2200];
    size_t len = 0;
    char *msg;

    /* A long value with newlines and multi-byte characters: the message stays one line, below
     * SCHEMA_MSG_MAX, and does not end inside a UTF-8 sequence. */
    len += (size_t)snprintf(value + len, sizeof(value) - len, "{\"e\":\"");
    for (int i = 0; i < 500; i++)
        len += (size_t)snprintf(value + len, sizeof(value) - len, "%s", i % 2 ? "\\n" : "\xc3\xa9");
    snprintf(value + len, sizeof(value) - len, "\"}");
    ck_assert_int_eq(run("{\"properties\":{\"e\":{\"enum\":[\"a\"]}}}", value, &rep), -1);
    msg = rep.msgs[0];
    ck_assert_uint_lt(strlen(msg), SCHEMA_MSG_MAX);
    ck_assert_ptr_null(strchr(msg, '\n'));
    ck_assert_ptr_nonnull(strstr(msg, "...\""));
    ck_assert_ptr_nonnull(strstr(msg, "\\n"));
    ck_assert_int_eq(strncmp(msg, "arguments.e: must be one of \"a\"; got \"", 38), 0);
}
END_TEST

START_TEST(test_schema_long_path_is_cut_safely)
{
    struct schema_report rep;
    char schema[8192], value[8192], key[64];
    size_t sl = 0, vl = 0;
    int depth = 40;

    /* 40 levels of 30-character property names: the path is far longer than a message. */
    memset(key, 'k', 30);
    key[30] = '\0';
    for (int i = 0; i < depth; i++) {
        sl += (size_t)snprintf(schema + sl, sizeof(schema) - sl, "{\"properties\":{\"%s\":", key);
        vl += (size_t)snprintf(value + vl, sizeof(value) - vl, "{\"%s\":", key);
    }
    sl += (size_t)snprintf(schema + sl, sizeof(schema) - sl, "{\"type\":\"string\"}");
    vl += (size_t)snprintf(value + vl, sizeof(value) - vl, "1");
    for (int i = 0; i < depth; i++) {
        sl += (size_t)snprintf(schema + sl, sizeof(schema) - sl, "}}");
        vl += (size_t)snprintf(value + vl, sizeof(value) - vl, "}");
    }
    ck_assert_int_eq(run(schema, value, &rep), -1);
    ck_assert_uint_eq(rep.count, 1);
    ck_assert_uint_lt(strlen(rep.msgs[0]), SCHEMA_MSG_MAX);
    /* The tail of the path (the failing member) and the whole rule survive. */
    ck_assert_int_eq(strncmp(rep.msgs[0], "...", 3), 0);
    ck_assert_ptr_nonnull(strstr(rep.msgs[0], "kkkk: expected string, got integer"));
}
END_TEST

START_TEST(test_schema_type_failure_stops_other_keywords)
{
    struct schema_report rep;

    /* A wrong type gives one message, not one per keyword of the right type. */
    ck_assert_int_eq(run("{\"type\":\"string\",\"enum\":[\"a\"],\"minLength\":3}", "5", &rep), -1);
    ck_assert_uint_eq(rep.count, 1);
    ck_assert_str_eq(rep.msgs[0], "arguments: expected string, got integer");
}
END_TEST

START_TEST(test_schema_validate_is_fast)
{
    /* The proxy validates every tools/call: a small object must take microseconds. The bound
     * is loose (sanitizer builds run this too): 20 000 validations in under 2 s of this
     * thread's own CPU time, which other processes loading the machine do not add to (wall
     * time did: this failed with both cores busy). */
    cJSON *schema = cJSON_Parse(
        "{\"type\":\"object\",\"properties\":{"
        "\"query\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1000},"
        "\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"default\":\"/\"},"
        "\"ext\":{\"type\":\"string\"},\"regex\":{\"type\":\"boolean\"},"
        "\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000}},"
        "\"required\":[\"query\"],\"additionalProperties\":false}");
    cJSON *value =
        cJSON_Parse("{\"query\":\"TODO\",\"path\":\"/src\",\"regex\":false,\"max_results\":50}");
    struct schema_report rep;
    struct timespec a, b;
    double secs;

    ck_assert_int_eq(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a), 0);
    for (int i = 0; i < 20000; i++)
        ck_assert_int_eq(schema_validate(schema, value, "arguments", &rep), 0);
    ck_assert_int_eq(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b), 0);
    secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    ck_assert_msg(secs < 2.0, "20000 validations took %.3f s of CPU", secs);
    cJSON_Delete(schema);
    cJSON_Delete(value);
}
END_TEST

/* ---- schema_check ---- */

static const struct {
    const char *schema;
    const char *msg; /* NULL: the schema is fine */
} check_cases[] = {
    {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"],"
     "\"additionalProperties\":false}",
     NULL},
    {"true", NULL},
    {"{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"null\"}],\"$comment\":\"c\"}", NULL},
    {"{\"type\":[\"string\",\"integer\"],\"enum\":[\"a\",1]}", NULL},
    {"{\"properties\":{\"depth\":{\"type\":\"int\"}}}",
     "properties.depth.type: unknown type \"int\""},
    {"{\"type\":\"strnig\"}", "type: unknown type \"strnig\""},
    {"{\"type\":[]}", "type: must be a type name or a non-empty array of type names"},
    {"{\"type\":[\"string\",\"string\"]}", "type: type \"string\" is listed twice"},
    {"{\"type\":7}", "type: must be a type name or a non-empty array of type names"},
    {"{\"requried\":[\"a\"]}", "requried: unknown keyword"},
    {"{\"properties\":{\"n\":{\"pattern\":\"^a\"}}}",
     "properties.n.pattern: keyword not supported by this validator"},
    {"{\"allOf\":[]}", "allOf: keyword not supported by this validator"},
    {"{\"properties\":[]}", "properties: must be an object mapping names to schemas"},
    {"{\"properties\":{\"a\":{},\"a\":{}}}", "properties: property \"a\" is declared twice"},
    {"{\"properties\":{\"a\":5}}", "properties.a: must be a schema (an object or a boolean)"},
    {"{\"required\":\"a\"}", "required: must be an array of property names"},
    {"{\"required\":[\"a\",\"a\"]}", "required: \"a\" is listed twice"},
    {"{\"additionalProperties\":\"no\"}",
     "additionalProperties: must be a schema (an object or a boolean)"},
    {"{\"enum\":[]}", "enum: must be a non-empty array"},
    {"{\"minimum\":\"1\"}", "minimum: must be a number"},
    {"{\"maxLength\":-1}", "maxLength: must be a non-negative integer"},
    {"{\"minItems\":1.5}", "minItems: must be a non-negative integer"},
    {"{\"items\":[{}]}", "items: must be a schema (an object or a boolean)"},
    {"{\"items\":{\"type\":\"nope\"}}", "items.type: unknown type \"nope\""},
    {"{\"oneOf\":[]}", "oneOf: must be a non-empty array of schemas"},
    {"{\"anyOf\":[{\"type\":\"string\"},{\"minimum\":\"x\"}]}",
     "anyOf[1].minimum: must be a number"},
    {"{\"title\":5}", "title: must be a string"},
    {"{\"deprecated\":\"yes\"}", "deprecated: must be true or false"},
    {"{\"examples\":{}}", "examples: must be an array"},
    {"{\"type\":\"string\",\"type\":\"integer\"}", "schema: keyword \"type\" appears twice"},
    {"5", "schema: must be a schema (an object or a boolean)"},
    {"{\"minLength\":5,\"maxLength\":2}", "schema: minLength is greater than maxLength"},
    {"{\"properties\":{\"n\":{\"minimum\":5,\"maximum\":2}}}",
     "properties.n: minimum is greater than maximum"},
    {"{\"properties\":{},\"required\":[\"a\"],\"additionalProperties\":false}",
     "schema: required property \"a\" is not declared in properties, and additionalProperties "
     "is false"},
    {"{\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":1,\"default\":0}}}",
     "properties.n: default: must be >= 1; got 0"},
    {"{\"properties\":{\"e\":{\"type\":\"string\",\"enum\":[\"a\",2]}}}",
     "properties.e: enum[1]: expected string, got integer"},
};

/* Roblox writes {} as []: replaced exactly where the schema wants an object. */
START_TEST(test_schema_coerce_empty_objects)
{
    cJSON *schema = cJSON_Parse(
        "{\"type\":\"object\",\"properties\":{\"attributes\":{\"type\":\"object\"},"
        "\"tags\":{\"type\":\"array\"},\"any\":{},\"list\":{\"type\":\"array\",\"items\":"
        "{\"type\":\"object\",\"properties\":{\"props\":{\"type\":\"object\"}}}},"
        "\"map\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"object\"}}}}");
    cJSON *v = cJSON_Parse("{\"attributes\":[],\"tags\":[],\"any\":[],\"list\":[{\"props\":[]},"
                           "[]],\"map\":{\"a\":[],\"b\":[1]},\"extra\":[]}");
    cJSON *top = cJSON_Parse("[]");
    char *text;

    ck_assert_int_eq(schema_coerce_empty_objects(schema, &v), 4);
    text = cJSON_PrintUnformatted(v);
    ck_assert_str_eq(text, "{\"attributes\":{},\"tags\":[],\"any\":[],\"list\":[{\"props\":{}},{}],"
                           "\"map\":{\"a\":{},\"b\":[1]},\"extra\":[]}");
    cJSON_free(text);
    ck_assert_int_eq(schema_coerce_empty_objects(schema, &top), 1);
    ck_assert(cJSON_IsObject(top));
    ck_assert_int_eq(schema_coerce_empty_objects(schema, &v), 0); /* nothing left to do */
    cJSON_Delete(top);
    cJSON_Delete(v);
    cJSON_Delete(schema);
}
END_TEST

START_TEST(test_schema_report_text_joins_lines)
{
    struct schema_report rep;
    cJSON *schema = cJSON_Parse("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},"
                                "\"b\":{\"type\":\"integer\"}},\"additionalProperties\":false}");
    cJSON *v =
        cJSON_Parse("{\"a\":1,\"b\":\"x\",\"c\":1,\"d\":2,\"e\":3,\"f\":4,\"g\":5,\"h\":6,\"i\":7,"
                    "\"j\":8}");
    char *text;

    ck_assert_int_eq(schema_validate(schema, v, "arguments", &rep), -1);
    text = schema_report_text(&rep);
    ck_assert_ptr_nonnull(strstr(text, "arguments.a: expected string"));
    ck_assert_ptr_nonnull(strstr(text, "\narguments.b: expected integer"));
    ck_assert_ptr_nonnull(strstr(text, "\n(2 more problems)"));
    free(text);
    cJSON_Delete(v);
    cJSON_Delete(schema);
}
END_TEST

START_TEST(test_schema_check_table)
{
    cJSON *schema = cJSON_Parse(check_cases[_i].schema);
    struct errinfo err;
    int rc;

    ck_assert_ptr_nonnull(schema);
    errinfo_clear(&err);
    rc = schema_check(schema, &err);
    if (!check_cases[_i].msg) {
        ck_assert_msg(rc == 0, "row %d: %s", _i, err.msg);
    } else {
        ck_assert_int_eq(rc, -1);
        ck_assert_int_eq(err.kind, ERR_INVALID);
        ck_assert_str_eq(err.msg, check_cases[_i].msg);
    }
    cJSON_Delete(schema);
}
END_TEST

START_TEST(test_schema_check_depth_limit)
{
    char text[4096];
    size_t len = 0;
    cJSON *schema;
    struct errinfo err;

    for (int i = 0; i < 70; i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "{\"items\":");
    len += (size_t)snprintf(text + len, sizeof(text) - len, "{}");
    for (int i = 0; i < 70; i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "}");
    schema = cJSON_Parse(text);
    errinfo_clear(&err);
    ck_assert_int_eq(schema_check(schema, &err), -1);
    ck_assert_msg(strstr(err.msg, "schema nests deeper than 64 levels") != NULL, "%s", err.msg);
    cJSON_Delete(schema);
}
END_TEST

START_TEST(test_schema_check_null)
{
    struct errinfo err;

    errinfo_clear(&err);
    ck_assert_int_eq(schema_check(NULL, &err), -1);
    ck_assert(errinfo_is_set(&err));
    ck_assert_int_eq(schema_check(NULL, NULL), -1); /* err may be NULL */
}
END_TEST

static Suite *schema_suite(void)
{
    Suite *s = suite_create("schema");
    TCase *tc;

    tc = tcase_create("messages");
    tcase_add_loop_test(tc, test_schema_one_error_table, 0,
                        (int)(sizeof(one_error) / sizeof(one_error[0])));
    tcase_add_test(tc, test_schema_reports_every_violation);
    tcase_add_test(tc, test_schema_error_count_is_capped);
    tcase_add_test(tc, test_schema_null_value);
    tcase_add_test(tc, test_schema_deep_const_is_linear);
    tcase_add_test(tc, test_schema_root_name_is_used);
    tcase_add_test(tc, test_schema_long_values_are_cut_to_one_line);
    tcase_add_test(tc, test_schema_long_path_is_cut_safely);
    tcase_add_test(tc, test_schema_type_failure_stops_other_keywords);
    suite_add_tcase(s, tc);

    tc = tcase_create("valid");
    tcase_add_loop_test(tc, test_schema_valid_table, 0, (int)(sizeof(valid) / sizeof(valid[0])));
    tcase_add_test(tc, test_schema_validate_is_fast);
    suite_add_tcase(s, tc);

    tc = tcase_create("check");
    tcase_add_loop_test(tc, test_schema_check_table, 0,
                        (int)(sizeof(check_cases) / sizeof(check_cases[0])));
    tcase_add_test(tc, test_schema_check_depth_limit);
    tcase_add_test(tc, test_schema_check_null);
    tcase_add_test(tc, test_schema_coerce_empty_objects);
    tcase_add_test(tc, test_schema_report_text_joins_lines);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(schema_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
