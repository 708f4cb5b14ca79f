/* tests/unit/test_errinfo.c - the first-failure-wins error record. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errinfo.h"

START_TEST(test_errinfo_clear_resets)
{
    struct errinfo err;

    memset(&err, 0x7f, sizeof(err));
    errinfo_clear(&err);
    ck_assert_int_eq(err.kind, ERR_NONE);
    ck_assert_int_eq(err.sys_errno, 0);
    ck_assert_str_eq(err.msg, "");
    ck_assert(!errinfo_is_set(&err));
}
END_TEST

START_TEST(test_errinfo_set_formats)
{
    struct errinfo err;

    errinfo_clear(&err);
    errinfo_set(&err, ERR_NOT_FOUND, "no tool \"%s\" (%d)", "x", 3);
    ck_assert(errinfo_is_set(&err));
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
    ck_assert_int_eq(err.sys_errno, 0);
    ck_assert_str_eq(err.msg, "no tool \"x\" (3)");
}
END_TEST

START_TEST(test_errinfo_first_failure_wins)
{
    struct errinfo err;

    errinfo_clear(&err);
    errinfo_set(&err, ERR_INVALID, "root cause");
    errinfo_set(&err, ERR_INTERNAL, "later");
    errno = ENOENT;
    errinfo_sys(&err, "even later");
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_int_eq(err.sys_errno, 0);
    ck_assert_str_eq(err.msg, "root cause");
    /* After a clear, the next failure is recorded again. */
    errinfo_clear(&err);
    errinfo_set(&err, ERR_TIMEOUT, "second");
    ck_assert_int_eq(err.kind, ERR_TIMEOUT);
    ck_assert_str_eq(err.msg, "second");
}
END_TEST

START_TEST(test_errinfo_null_err_is_accepted)
{
    errinfo_clear(NULL);
    errinfo_set(NULL, ERR_INVALID, "x %d", 1);
    errno = EACCES;
    errinfo_sys(NULL, "y");
    ck_assert_int_eq(errno, EACCES); /* preserved even with nothing to record */
    ck_assert(!errinfo_is_set(NULL));
}
END_TEST

START_TEST(test_errinfo_newlines_are_flattened)
{
    struct errinfo err;

    errinfo_clear(&err);
    errinfo_set(&err, ERR_INVALID, "line1\nline2\r\nline3%s", "\n");
    ck_assert_str_eq(err.msg, "line1 line2  line3 ");
    ck_assert_ptr_null(strchr(err.msg, '\n'));
    ck_assert_ptr_null(strchr(err.msg, '\r'));
}
END_TEST

START_TEST(test_errinfo_long_message_is_cut)
{
    struct errinfo err;
    char big[1000];

    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    errinfo_clear(&err);
    errinfo_set(&err, ERR_INVALID, "%s", big);
    ck_assert_uint_eq(strlen(err.msg), ERRINFO_MSG_MAX - 1);
    errinfo_clear(&err);
    errno = ENOENT;
    errinfo_sys(&err, "%s", big); /* no room left for the suffix: still terminated */
    ck_assert_uint_eq(strlen(err.msg), ERRINFO_MSG_MAX - 1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
}
END_TEST

static const struct {
    int e;
    enum errinfo_kind kind;
} errno_kinds[] = {
    {ENOENT, ERR_NOT_FOUND}, {ENOTDIR, ERR_NOT_FOUND}, {EEXIST, ERR_EXISTS},
    {ENOTEMPTY, ERR_EXISTS}, {EISDIR, ERR_EXISTS},     {EACCES, ERR_DENIED},
    {EPERM, ERR_DENIED},     {ELOOP, ERR_DENIED},      {EXDEV, ERR_DENIED},
    {ENOMEM, ERR_NOMEM},     {EFBIG, ERR_TOO_LARGE},   {ENAMETOOLONG, ERR_TOO_LARGE},
    {ENOSPC, ERR_TOO_LARGE}, {EDQUOT, ERR_TOO_LARGE},  {ETIMEDOUT, ERR_TIMEOUT},
    {EIO, ERR_IO},           {EINVAL, ERR_IO},         {EBADF, ERR_IO},
};

START_TEST(test_errinfo_sys_kind_from_errno)
{
    struct errinfo err;
    char want[ERRINFO_MSG_MAX];
    int e = errno_kinds[_i].e;

    errinfo_clear(&err);
    errno = e;
    errinfo_sys(&err, "open %s", "/a");
    ck_assert_int_eq(errno, e); /* preserved */
    ck_assert_int_eq(err.kind, errno_kinds[_i].kind);
    ck_assert_int_eq(err.sys_errno, e);
    snprintf(want, sizeof(want), "open /a: %s", strerror(e));
    ck_assert_str_eq(err.msg, want);
}
END_TEST

START_TEST(test_errinfo_kind_names)
{
    static const struct {
        enum errinfo_kind kind;
        const char *name;
    } names[] = {
        {ERR_NONE, "none"},       {ERR_INVALID, "invalid"},         {ERR_NOT_FOUND, "not_found"},
        {ERR_EXISTS, "exists"},   {ERR_DENIED, "denied"},           {ERR_TOO_LARGE, "too_large"},
        {ERR_TIMEOUT, "timeout"}, {ERR_UNAVAILABLE, "unavailable"}, {ERR_IO, "io"},
        {ERR_NOMEM, "nomem"},     {ERR_INTERNAL, "internal"},       {ERR_CANCELLED, "cancelled"},
    };

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        ck_assert_str_eq(errinfo_kind_name(names[i].kind), names[i].name);
    ck_assert_str_eq(errinfo_kind_name((enum errinfo_kind)999), "unknown");
}
END_TEST

static Suite *errinfo_suite(void)
{
    Suite *s = suite_create("errinfo");
    TCase *tc;

    tc = tcase_create("record");
    tcase_add_test(tc, test_errinfo_clear_resets);
    tcase_add_test(tc, test_errinfo_set_formats);
    tcase_add_test(tc, test_errinfo_first_failure_wins);
    tcase_add_test(tc, test_errinfo_null_err_is_accepted);
    tcase_add_test(tc, test_errinfo_newlines_are_flattened);
    tcase_add_test(tc, test_errinfo_long_message_is_cut);
    suite_add_tcase(s, tc);

    tc = tcase_create("errno");
    tcase_add_loop_test(tc, test_errinfo_sys_kind_from_errno, 0,
                        (int)(sizeof(errno_kinds) / sizeof(errno_kinds[0])));
    tcase_add_test(tc, test_errinfo_kind_names);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(errinfo_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
