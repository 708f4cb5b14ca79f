/* tests/unit/test_strfmt.c - strfmt_alloc: the formatted text, in a string of its own. */
#include "strfmt.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_strfmt_formats)
{
    char *s = strfmt_alloc("%s-%d-%.2f-%%", "a", 42, 1.5);

    ck_assert_str_eq(s, "a-42-1.50-%");
    free(s);
    s = strfmt_alloc("%s", "");
    ck_assert_str_eq(s, "");
    free(s);
}
END_TEST

START_TEST(test_strfmt_long)
{
    /* Longer than any fixed first guess: the whole text, of exactly its length. */
    char big[20000];
    char *s;

    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    s = strfmt_alloc("<%s>", big);
    ck_assert_uint_eq(strlen(s), sizeof(big) + 1);
    ck_assert_int_eq(s[0], '<');
    ck_assert_int_eq(s[sizeof(big)], '>');
    free(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("strfmt");
    TCase *tc = tcase_create("alloc");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_strfmt_formats);
    tcase_add_test(tc, test_strfmt_long);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
