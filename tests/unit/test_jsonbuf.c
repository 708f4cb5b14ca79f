/* tests/unit/test_jsonbuf.c - the growable JSON output buffer with a ceiling. */
#include "jsonbuf.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

START_TEST(test_jsonbuf_put_appends_and_terminates)
{
    struct jsonbuf b;
    char *out;
    size_t len = 0;

    jsonbuf_init(&b, 1024);
    ck_assert_int_eq(jsonbuf_put(&b, "ab", 2, NULL), 0);
    ck_assert_int_eq(jsonbuf_puts(&b, "cd", NULL), 0);
    ck_assert_str_eq(b.data, "abcd");
    out = jsonbuf_take(&b, &len);
    ck_assert_str_eq(out, "abcd");
    ck_assert_uint_eq(len, 4);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.len, 0);
    ck_assert_uint_eq(b.max, 1024);
    free(out);
}
END_TEST

START_TEST(test_jsonbuf_take_empty_is_empty_string)
{
    struct jsonbuf b = JSONBUF_INIT(16);
    char *out = jsonbuf_take(&b, NULL);

    ck_assert_str_eq(out, "");
    free(out);
}
END_TEST

START_TEST(test_jsonbuf_grows_past_first_allocation)
{
    struct jsonbuf b = JSONBUF_INIT(1 << 20);
    char chunk[100];

    memset(chunk, 'x', sizeof(chunk));
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(jsonbuf_put(&b, chunk, sizeof(chunk), NULL), 0);
    ck_assert_uint_eq(b.len, 100000);
    ck_assert_uint_eq(strlen(b.data), 100000);
    jsonbuf_cleanup(&b);
}
END_TEST

START_TEST(test_jsonbuf_ceiling_fails_sticky)
{
    struct jsonbuf b;
    struct errinfo e = {0};

    jsonbuf_init(&b, 8);
    ck_assert_int_eq(jsonbuf_put(&b, "12345678", 8, &e), 0);
    ck_assert_int_eq(jsonbuf_put(&b, "9", 1, &e), -1);
    ck_assert_int_eq(e.kind, ERR_TOO_LARGE);
    ck_assert_str_eq(e.msg, "response larger than 8 bytes");
    ck_assert(b.failed);
    ck_assert_str_eq(b.data, "12345678"); /* what was there stays readable */
    ck_assert_int_eq(jsonbuf_put(&b, "", 0, NULL), -1);
    ck_assert_ptr_null(jsonbuf_take(&b, NULL));
    ck_assert(!b.failed); /* take resets */
    ck_assert_int_eq(jsonbuf_put(&b, "ok", 2, NULL), 0);
    jsonbuf_cleanup(&b);
}
END_TEST

START_TEST(test_jsonbuf_reserve_over_ceiling)
{
    struct jsonbuf b = JSONBUF_INIT(100);
    struct errinfo e = {0};

    ck_assert_int_eq(jsonbuf_reserve(&b, 100, &e), 0);
    ck_assert_int_eq(jsonbuf_reserve(&b, 101, &e), -1);
    ck_assert_int_eq(e.kind, ERR_TOO_LARGE);
    jsonbuf_cleanup(&b);
    ck_assert(!b.failed);
    ck_assert_uint_eq(b.max, 100);
}
END_TEST

static const struct {
    const char *in;
    size_t n;
    const char *want;
} esc_cases[] = {
    {"plain", 5, "\"plain\""},
    {"", 0, "\"\""},
    {"a\"b\\c", 5, "\"a\\\"b\\\\c\""},
    {"\n\r\t", 3, "\"\\n\\r\\t\""},
    {"\x01\x1f", 2, "\"\\u0001\\u001f\""},
    {"\x7f", 1, "\"\x7f\""},
    {"a\0b", 3, "\"a\\u0000b\""},
    {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""},
    {"\xff", 1, "\"\\ufffd\""},
    {"\xe2\x82 end", 6, "\"\\ufffd\\ufffd end\""},
    {"\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\""},
    {"\xc0\xaf", 2, "\"\\ufffd\\ufffd\""},
    /* (moved from test_api.c, where the daemon's own buffer used to live) */
    {"a\"b\\c\n\t\x01 \xc3\xa9 \xff \xe2\x82 end", 20,
     "\"a\\\"b\\\\c\\n\\t\\u0001 \xc3\xa9 \\ufffd \\ufffd\\ufffd end\""},
    /* Long enough for the eight-byte fast path, with an escape in the middle of a word. */
    {"0123456789abcdef\"0123456789abcdef", 33, "\"0123456789abcdef\\\"0123456789abcdef\""},
    {"0123456\xc3\xa9"
     "89abcdef",
     17,
     "\"0123456\xc3\xa9"
     "89abcdef\""},
};

START_TEST(test_jsonbuf_json_string_escapes)
{
    struct jsonbuf b = JSONBUF_INIT(1024);

    ck_assert_int_eq(jsonbuf_put_json_string(&b, esc_cases[_i].in, esc_cases[_i].n, NULL), 0);
    ck_assert_str_eq(b.data, esc_cases[_i].want);
    ck_assert_uint_eq(b.len, strlen(esc_cases[_i].want));
    jsonbuf_cleanup(&b);
}
END_TEST

START_TEST(test_jsonbuf_json_string_many_escapes_grow)
{
    struct jsonbuf b = JSONBUF_INIT(1 << 20);
    char in[1000];

    memset(in, '\x01', sizeof(in)); /* each byte grows sixfold */
    ck_assert_int_eq(jsonbuf_put_json_string(&b, in, sizeof(in), NULL), 0);
    ck_assert_uint_eq(b.len, 6 * sizeof(in) + 2);
    ck_assert_uint_eq(utf8_valid_prefix(b.data, b.len), b.len);
    jsonbuf_cleanup(&b);
}
END_TEST

START_TEST(test_jsonbuf_json_string_over_ceiling)
{
    struct jsonbuf b = JSONBUF_INIT(20);
    struct errinfo e = {0};

    /* Fits raw (10 + 2) but not escaped (60 + 2). */
    ck_assert_int_eq(
        jsonbuf_put_json_string(&b, "\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01", 10, &e), -1);
    ck_assert_int_eq(e.kind, ERR_TOO_LARGE);
    ck_assert_ptr_null(jsonbuf_take(&b, NULL));
}
END_TEST

static Suite *jsonbuf_suite(void)
{
    Suite *s = suite_create("jsonbuf");
    TCase *tc = tcase_create("buffer");

    tcase_add_test(tc, test_jsonbuf_put_appends_and_terminates);
    tcase_add_test(tc, test_jsonbuf_take_empty_is_empty_string);
    tcase_add_test(tc, test_jsonbuf_grows_past_first_allocation);
    tcase_add_test(tc, test_jsonbuf_ceiling_fails_sticky);
    tcase_add_test(tc, test_jsonbuf_reserve_over_ceiling);
    suite_add_tcase(s, tc);

    tc = tcase_create("json_string");
    tcase_add_loop_test(tc, test_jsonbuf_json_string_escapes, 0,
                        (int)(sizeof(esc_cases) / sizeof(esc_cases[0])));
    tcase_add_test(tc, test_jsonbuf_json_string_many_escapes_grow);
    tcase_add_test(tc, test_jsonbuf_json_string_over_ceiling);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(jsonbuf_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
