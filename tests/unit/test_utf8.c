/* tests/unit/test_utf8.c - UTF-8 sequence checks, cutting and sanitizing (common/utf8.h). */
#include "utf8.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* ---- utf8_seq_len ---- */

static const struct {
    const char *name, *s;
    size_t n, want;
} seq_cases[] = {
    {"ascii", "A", 1, 1},
    {"nul is ascii", "\0", 1, 1},
    {"2-byte", "\xc3\xa9", 2, 2},
    {"2-byte lowest", "\xc2\x80", 2, 2},
    {"3-byte", "\xe2\x82\xac", 3, 3},
    {"3-byte lowest", "\xe0\xa0\x80", 3, 3},
    {"3-byte before surrogates", "\xed\x9f\xbf", 3, 3},
    {"3-byte after surrogates", "\xee\x80\x80", 3, 3},
    {"U+FFFD", "\xef\xbf\xbd", 3, 3},
    {"4-byte", "\xf0\x9f\x98\x80", 4, 4},
    {"U+10FFFF", "\xf4\x8f\xbf\xbf", 4, 4},
    {"stray continuation", "\x80", 1, 0},
    {"overlong 2-byte C0", "\xc0\xaf", 2, 0},
    {"overlong 2-byte C1", "\xc1\xbf", 2, 0},
    {"overlong 3-byte", "\xe0\x80\xaf", 3, 0},
    {"overlong 4-byte", "\xf0\x8f\xbf\xbf", 4, 0},
    {"surrogate low end", "\xed\xa0\x80", 3, 0},
    {"surrogate high end", "\xed\xbf\xbf", 3, 0},
    {"past U+10FFFF", "\xf4\x90\x80\x80", 4, 0},
    {"lead F5", "\xf5\x80\x80\x80", 4, 0},
    {"lead FF", "\xff", 1, 0},
    {"truncated 2-byte", "\xc3", 1, 0},
    {"truncated 3-byte", "\xe2\x82", 2, 0},
    {"truncated 4-byte", "\xf0\x9f\x98", 3, 0},
    {"bad continuation", "\xe2\x28\xa1", 3, 0},
    {"bad last continuation", "\xf0\x9f\x98\x41", 4, 0},
    {"n cuts a valid sequence", "\xe2\x82\xac", 2, 0},
};

START_TEST(test_utf8_seq_len)
{
    ck_assert_msg(utf8_seq_len(seq_cases[_i].s, seq_cases[_i].n) == seq_cases[_i].want,
                  "%s: got %zu, want %zu", seq_cases[_i].name,
                  utf8_seq_len(seq_cases[_i].s, seq_cases[_i].n), seq_cases[_i].want);
}
END_TEST

/* ---- utf8_valid_prefix ---- */

static const struct {
    const char *s;
    size_t len, want;
} prefix_cases[] = {
    {"plain", 5, 5},
    {"", 0, 0},
    {"\xc3\xa9", 2, 2},
    {"\xf0\x9f\x98\x80", 4, 4},
    {"a\xc3", 2, 1},            /* cut short */
    {"a\xc0\xaf", 3, 1},        /* overlong */
    {"ab\xed\xa0\x80", 5, 2},   /* surrogate */
    {"\xf4\x90\x80\x80", 4, 0}, /* past U+10FFFF */
    {"\xe0\x80\xaf", 3, 0},     /* overlong 3-byte */
    {"x\x80", 2, 1},            /* stray continuation */
    {"\xef\xbf\xbd!", 4, 4},    /* U+FFFD itself is fine */
    {"a\0b", 3, 3},             /* NUL is valid UTF-8 */
    {"\xc3\xa9\xe2\x82\xac\xff", 6, 5},
    /* Past the first eight bytes, where runs of ASCII are checked a word at a time. */
    {"abcdefghijklmnop\xff", 17, 16},
    {"abcdefg\xc3\xa9hijklmnopq", 19, 19},        /* a character across a word's edge */
    {"abcdefgh\xe2\x82", 10, 8},                  /* cut short after a whole word */
    {"0123456789abcde\x80xyz", 19, 15},           /* stray continuation in the second word */
    {"0123456789abcdef0123456789abcdef", 32, 32}, /* words only */
    {"0123456789abcdef0123456\xed\xa0\x80", 26, 23},
};

START_TEST(test_utf8_valid_prefix)
{
    ck_assert_uint_eq(utf8_valid_prefix(prefix_cases[_i].s, prefix_cases[_i].len),
                      prefix_cases[_i].want);
}
END_TEST

/* ---- utf8_cut ---- */

static const struct {
    const char *s;
    size_t len, want;
} cut_cases[] = {
    {"abc", 3, 3},
    {"", 0, 0},
    {"a\xc3\xa9", 3, 3},            /* whole 2-byte */
    {"a\xc3\xa9", 2, 1},            /* lead only */
    {"a\xe2\x82\xac", 3, 1},        /* 2 of 3 */
    {"a\xe2\x82\xac", 2, 1},        /* 1 of 3 */
    {"a\xf0\x9f\x98\x80", 4, 1},    /* 3 of 4 */
    {"a\xf0\x9f\x98\x80", 5, 5},    /* whole 4-byte */
    {"\x80\x80\x80", 3, 3},         /* continuation only: nothing to cut at */
    {"a\x80\x80\x80\x80", 5, 5},    /* more than 3 continuations: invalid, not cut */
    {"a\xff", 2, 2},                /* invalid lead: left for validation */
    {"a\xc0", 2, 2},                /* C0 never starts a character */
    {"\xe2\x82\xac\xe2\x82", 5, 3}, /* a whole one, then a cut one */
};

START_TEST(test_utf8_cut)
{
    ck_assert_uint_eq(utf8_cut(cut_cases[_i].s, cut_cases[_i].len), cut_cases[_i].want);
}
END_TEST

/* ---- utf8_sanitize ---- */

static const struct {
    const char *in;
    size_t n, max;
    bool no_ctl;
    const char *want;
    size_t consumed;
} san_cases[] = {
    {"hello", 5, 100, false, "hello", 5},
    {"caf\xc3\xa9", 5, 100, false, "caf\xc3\xa9", 5},
    {"a\xff"
     "b",
     3, 100, false,
     "a\xef\xbf\xbd"
     "b",
     3},
    {"a\0b", 3, 100, false,
     "a\xef\xbf\xbd"
     "b",
     3},
    {"\xed\xa0\x80", 3, 100, false, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 3},
    {"\xe2\x82", 2, 100, false, "\xef\xbf\xbd\xef\xbf\xbd", 2},
    {"a\tb\x7f", 4, 100, false, "a\tb\x7f", 4},
    {"a\tb\x7f", 4, 100, true,
     "a\xef\xbf\xbd"
     "b\xef\xbf\xbd",
     4},
    {"abcdef", 6, 4, false, "abcd", 4},
    {"ab\xe2\x82\xac", 5, 4, false, "ab", 2}, /* never half a character */
    {"ab\xff", 3, 4, false, "ab", 2},         /* nor half a replacement */
    {"", 0, 10, false, "", 0},
};

START_TEST(test_utf8_sanitize)
{
    char out[128];
    size_t written = 99;
    size_t used = utf8_sanitize(out, san_cases[_i].max, san_cases[_i].in, san_cases[_i].n,
                                san_cases[_i].no_ctl, &written);

    ck_assert_uint_eq(used, san_cases[_i].consumed);
    ck_assert_uint_eq(written, strlen(san_cases[_i].want));
    ck_assert(memcmp(out, san_cases[_i].want, written) == 0);
    ck_assert_uint_eq(utf8_valid_prefix(out, written), written);
}
END_TEST

START_TEST(test_utf8_lead_len)
{
    static const struct {
        unsigned char c;
        size_t want;
    } cases[] = {{0x00, 1}, {'a', 1},  {0x7F, 1}, {0x80, 0}, {0xBF, 0},
                 {0xC0, 0}, {0xC1, 0}, {0xC2, 2}, {0xDF, 2}, {0xE0, 3},
                 {0xEF, 3}, {0xF0, 4}, {0xF4, 4}, {0xF5, 0}, {0xFF, 0}};

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ck_assert_msg(utf8_lead_len(cases[i].c) == cases[i].want, "lead 0x%02x", cases[i].c);
}
END_TEST

START_TEST(test_utf8_is_cont)
{
    ck_assert(utf8_is_cont(0x80));
    ck_assert(utf8_is_cont(0xBF));
    ck_assert(!utf8_is_cont(0x7F));
    ck_assert(!utf8_is_cont(0xC0));
    ck_assert(!utf8_is_cont('a'));
}
END_TEST

static Suite *utf8_suite(void)
{
    Suite *s = suite_create("utf8");
    TCase *tc = tcase_create("decode");

    tcase_add_loop_test(tc, test_utf8_seq_len, 0, (int)(sizeof(seq_cases) / sizeof(seq_cases[0])));
    tcase_add_loop_test(tc, test_utf8_valid_prefix, 0,
                        (int)(sizeof(prefix_cases) / sizeof(prefix_cases[0])));
    tcase_add_test(tc, test_utf8_lead_len);
    tcase_add_test(tc, test_utf8_is_cont);
    suite_add_tcase(s, tc);

    tc = tcase_create("cut");
    tcase_add_loop_test(tc, test_utf8_cut, 0, (int)(sizeof(cut_cases) / sizeof(cut_cases[0])));
    suite_add_tcase(s, tc);

    tc = tcase_create("sanitize");
    tcase_add_loop_test(tc, test_utf8_sanitize, 0, (int)(sizeof(san_cases) / sizeof(san_cases[0])));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(utf8_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
