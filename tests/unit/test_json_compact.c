/* tests/unit/test_json_compact.c - checking and compacting JSON text without a tree, and its
 * agreement with cJSON: whatever json_compact accepts, cJSON parses to the same value. */
#include "json_compact.h"

#include <check.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *in, *out;
} good[] = {
    {"{}", "{}"},
    {" { } ", "{}"},
    {"[ ]", "[]"},
    {"{\"type\": \"object\",\n  \"properties\": {\"a\": {\"type\": \"integer\", \"minimum\": "
     "-1.5e3}}}",
     "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":-1.5e3}}}"},
    {"[1, 0, -0, 0.25, 1E+2, 3e-1, true, false, null]", "[1,0,-0,0.25,1E+2,3e-1,true,false,null]"},
    {"\"a b\\n\\\" \\u00e9 \\ud83d\\ude00 \\/ caf\xc3\xa9\"",
     "\"a b\\n\\\" \\u00e9 \\ud83d\\ude00 \\/ caf\xc3\xa9\""},
    {"{\"k\" : [ {\"x\" :\t[ ] } , { } ] }", "{\"k\":[{\"x\":[]},{}]}"},
    {"\t\r\n42\n", "42"},
    {"{\"dup\":1,\"dup\":2}", "{\"dup\":1,\"dup\":2}"}, /* cJSON keeps both too */
};

static const struct {
    const char *in, *why;
} bad_cases[] = {
    {"", "empty"},
    {"   ", "empty"},
    {"{", "ends inside"},
    {"{\"a\"}", "expected ':'"},
    {"{\"a\":}", "expected a value"},
    {"{\"a\":1,}", "member name"},
    {"[1,]", "expected a value"},
    {"[1 2]", "expected ',' or ']'"},
    {"{\"a\":1 \"b\":2}", "expected ',' or '}'"},
    {"{} {}", "more text"},
    {"01", "more text"},
    {"1.", "decimal point"},
    {"-", "'-'"},
    {"1e", "exponent"},
    {"tru", "true, false or null"},
    {"nul", "true, false or null"},
    {"'a'", "expected a value"},
    {"\"abc", "not closed"},
    {"\"a\tb\"", "control character"},
    {"\"\\x\"", "unknown escape"},
    {"\"\\u12\"", "four hex digits"},
    {"\"\\udc00\"", "low surrogate"},
    {"\"\\ud800\"", "high surrogate"},
    {"\"\\ud800\\u0041\"", "high surrogate"},
    {"{\"a\":[1,2}", "expected ',' or ']'"},
    {"1234567890123456789012345678901234567890123456789012345678901234", "longer than 63"},
};

/* cJSON's compact print of a text, or NULL when cJSON does not parse it. Owned. */
static char *cjson_print(const char *text, size_t len)
{
    cJSON *v = cJSON_ParseWithLength(text, len);
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;

    cJSON_Delete(v);
    return s;
}

START_TEST(test_json_compact_good)
{
    struct jsonbuf b = JSONBUF_INIT(1 << 16);
    struct errinfo err = {0};
    const char *in = good[_i].in;
    char *want, *got;
    int first = json_compact(in, strlen(in), &b, &err);

    ck_assert_msg(first > 0, "%s: %s", in, err.msg);
    ck_assert_int_eq(first, (unsigned char)good[_i].out[0]);
    ck_assert_str_eq(b.data, good[_i].out);
    /* the copy means what the text meant */
    want = cjson_print(in, strlen(in));
    got = cjson_print(b.data, b.len);
    ck_assert_ptr_nonnull(want);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want);
    cJSON_free(want);
    cJSON_free(got);
    jsonbuf_cleanup(&b);
}
END_TEST

START_TEST(test_json_compact_bad)
{
    struct jsonbuf b = JSONBUF_INIT(1 << 16);
    struct errinfo err = {0};
    const char *in = bad_cases[_i].in;

    ck_assert_int_eq(json_compact(in, strlen(in), &b, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_msg(strstr(err.msg, bad_cases[_i].why), "%s: got \"%s\", want \"%s\"", in, err.msg,
                  bad_cases[_i].why);
    ck_assert_msg(strstr(err.msg, "at byte "), "%s: %s", in, err.msg);
    jsonbuf_cleanup(&b);
}
END_TEST

/* The length bound is the caller's: a NUL inside is a byte like any other. */
START_TEST(test_json_compact_reads_only_len_bytes)
{
    struct jsonbuf b = JSONBUF_INIT(64);
    struct errinfo err = {0};

    ck_assert_int_eq(json_compact("[1][2]", 3, &b, &err), '[');
    ck_assert_str_eq(b.data, "[1]");
    jsonbuf_cleanup(&b);
    ck_assert_int_eq(json_compact("\"a\0b\"", 5, &b, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "control character"));
    jsonbuf_cleanup(&b);
}
END_TEST

/* Nesting: the deepest text cJSON parses is accepted, one level more is refused by both. */
START_TEST(test_json_compact_depth_agrees_with_cjson)
{
    size_t n = JSON_COMPACT_DEPTH + 1;
    char *text = malloc(2 * n + 1);
    struct errinfo err = {0};

    ck_assert_ptr_nonnull(text);
    for (size_t levels = JSON_COMPACT_DEPTH; levels <= n; levels++) {
        struct jsonbuf b = JSONBUF_INIT(1 << 16);
        cJSON *v;
        int rc;

        memset(text, '[', levels);
        memset(text + levels, ']', levels);
        text[2 * levels] = '\0';
        rc = json_compact(text, 2 * levels, &b, &err);
        v = cJSON_Parse(text);
        ck_assert_msg((rc == '[') == (v != NULL), "%zu levels: json_compact %d, cJSON %s", levels,
                      rc, v ? "parses" : "refuses");
        if (levels == n)
            ck_assert_ptr_nonnull(strstr(err.msg, "1000 levels"));
        cJSON_Delete(v);
        jsonbuf_cleanup(&b);
    }
    free(text);
}
END_TEST

START_TEST(test_json_compact_ceiling)
{
    struct jsonbuf b = JSONBUF_INIT(4);
    struct errinfo err = {0};

    ck_assert_int_eq(json_compact("[1, 2, 3]", 9, &b, &err), -1);
    ck_assert_int_eq(err.kind, ERR_TOO_LARGE);
    jsonbuf_cleanup(&b);
}
END_TEST

static Suite *json_compact_suite(void)
{
    Suite *s = suite_create("json_compact");
    TCase *tc = tcase_create("text");

    tcase_add_loop_test(tc, test_json_compact_good, 0, (int)(sizeof(good) / sizeof(good[0])));
    tcase_add_loop_test(tc, test_json_compact_bad, 0,
                        (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
    tcase_add_test(tc, test_json_compact_reads_only_len_bytes);
    tcase_add_test(tc, test_json_compact_depth_agrees_with_cjson);
    tcase_add_test(tc, test_json_compact_ceiling);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(json_compact_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
