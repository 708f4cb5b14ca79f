/* tests/unit/test_quota.c - the workspace quota: the estimate, the walk (blocks as du counts
 * them, hard links once, any depth), and reservations that refuse with the usage. */
#include "quota.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static char dir[256];
static int root_fd = -1;

static void setup(void)
{
    testutil_mkdtemp(dir, sizeof(dir), "quota-");
    root_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(root_fd, 0);
}

static void teardown(void)
{
    close(root_fd);
    testutil_rm_rf(dir);
}

/* A file of n MiB of real (not sparse) data. */
static void put_mib(const char *rel, size_t n)
{
    char *buf = malloc(n << 20);

    ck_assert_ptr_nonnull(buf);
    memset(buf, 'q', n << 20);
    testutil_put(testutil_path(dir, rel), buf, n << 20);
    free(buf);
}

static uint64_t used_mib(struct quota *q)
{
    uint64_t used = 0;

    ck_assert_int_eq(quota_rescan(q), 0);
    ck_assert_int_eq(quota_peek(q, &used), 0);
    return used >> 20;
}

START_TEST(test_quota_grows_with_every_drop_of_free_space)
{
    uint64_t last = 100u << 20, grown = 0;

    /* 3 MiB less free: grown 3. More free again (a delete, here or elsewhere): still 3, and the
     * next drop counts from the new level, so a write hidden behind a delete is not lost. */
    grown = quota_grow(grown, &last, 97u << 20);
    ck_assert_uint_eq(grown, 3u << 20);
    grown = quota_grow(grown, &last, 120u << 20);
    ck_assert_uint_eq(grown, 3u << 20);
    ck_assert_uint_eq(last, 120u << 20);
    grown = quota_grow(grown, &last, 110u << 20);
    ck_assert_uint_eq(grown, 13u << 20);
}
END_TEST

START_TEST(test_quota_walk_counts_blocks_and_hard_links_once)
{
    struct quota *q = quota_new(root_fd, 100, NULL);

    ck_assert_uint_le(used_mib(q), 1);
    put_mib("a.bin", 4);
    ck_assert_uint_ge(used_mib(q), 4);
    ck_assert_uint_le(used_mib(q), 5);
    ck_assert_int_eq(link(testutil_path(dir, "a.bin"), testutil_path(dir, "b.bin")), 0);
    ck_assert_uint_le(used_mib(q), 5);
    /* A sparse file takes no blocks. */
    ck_assert_int_eq(truncate(testutil_path(dir, "a.bin"), 0), 0);
    ck_assert_int_eq(truncate(testutil_path(dir, "a.bin"), 1L << 30), 0);
    ck_assert_uint_le(used_mib(q), 1);
    quota_free(q);
}
END_TEST

/* Deeper than any fd budget a walk could hold: the file at the bottom still counts. */
START_TEST(test_quota_walk_reaches_any_depth)
{
    struct quota *q = quota_new(root_fd, 100, NULL);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char *buf = malloc(3u << 20);

    ck_assert_ptr_nonnull(buf);
    memset(buf, 'q', 3u << 20);
    /* 600 levels (paths past PATH_MAX are fine: each step is relative to the last). */
    for (int i = 0; i < 600; i++) {
        int next;

        ck_assert_int_eq(mkdirat(fd, "d", 0755), 0);
        next = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(next, 0);
        close(fd);
        fd = next;
    }
    {
        int f = openat(fd, "deep.bin", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

        ck_assert_int_ge(f, 0);
        ck_assert_int_eq(write(f, buf, 3u << 20), 3u << 20);
        close(f);
    }
    close(fd);
    free(buf);
    ck_assert_uint_ge(used_mib(q), 3);
    quota_free(q);
}
END_TEST

START_TEST(test_quota_reserve_refuses_past_the_quota)
{
    struct errinfo err = {0};
    struct quota *q = quota_new(root_fd, 8, &err);

    put_mib("a.bin", 6);
    ck_assert_int_eq(quota_reserve(q, 1u << 20, &err), 0);
    quota_release(q, 1u << 20, false);
    ck_assert_int_eq(quota_reserve(q, 3u << 20, &err), -1);
    ck_assert_int_eq(err.kind, ERR_TOO_LARGE);
    ck_assert_msg(strstr(err.msg, "workspace is full (quota 8 MiB, used 6 MiB)"), "%s", err.msg);
    quota_free(q);
}
END_TEST

/* Two writes under way cannot together pass the quota before either lands on disk. */
START_TEST(test_quota_reservations_add_up)
{
    struct errinfo err = {0};
    struct quota *q = quota_new(root_fd, 8, &err);

    ck_assert_int_eq(quota_reserve(q, 5u << 20, &err), 0);
    ck_assert_int_eq(quota_reserve(q, 5u << 20, &err), -1);
    quota_release(q, 5u << 20, false);
    ck_assert_int_eq(quota_reserve(q, 5u << 20, &err), 0);
    quota_release(q, 5u << 20, false);
    quota_free(q);
}
END_TEST

START_TEST(test_quota_usage_says_when_over)
{
    struct quota *q = quota_new(root_fd, 2, NULL);
    uint64_t used = 0;
    bool over = false;

    ck_assert_int_eq(quota_usage(q, &used, &over), 0);
    ck_assert(!over);
    put_mib("a.bin", 3);
    ck_assert_int_eq(quota_usage(q, &used, &over), 0);
    ck_assert(over);
    ck_assert_uint_ge(used, 3u << 20);
    quota_free(q);
}
END_TEST

START_TEST(test_quota_none)
{
    struct quota *q = quota_new(root_fd, 0, NULL);
    uint64_t used;

    put_mib("a.bin", 1);
    ck_assert_int_eq(quota_reserve(q, UINT64_MAX / 2, NULL), 0);
    ck_assert_int_eq(quota_usage(q, &used, NULL), -1);
    ck_assert_int_eq(quota_peek(q, &used), -1);
    ck_assert_uint_eq(quota_limit_mb(q), 0);
    ck_assert_int_eq(quota_reserve(NULL, 1, NULL), 0);
    quota_free(q);
}
END_TEST

static Suite *quota_suite(void)
{
    Suite *s = suite_create("quota");
    TCase *est = tcase_create("estimate"), *walk = tcase_create("walk");
    TCase *res = tcase_create("reserve");

    tcase_add_test(est, test_quota_grows_with_every_drop_of_free_space);
    suite_add_tcase(s, est);
    /* Not a speed bound: 600 directory levels made and removed take seconds on a busy machine
     * (Check's default of 4 s cut it off under test.sh's load). */
    tcase_set_timeout(walk, 120);
    tcase_set_timeout(res, 60);
    tcase_add_checked_fixture(walk, setup, teardown);
    tcase_add_test(walk, test_quota_walk_counts_blocks_and_hard_links_once);
    tcase_add_test(walk, test_quota_walk_reaches_any_depth);
    suite_add_tcase(s, walk);
    tcase_add_checked_fixture(res, setup, teardown);
    tcase_add_test(res, test_quota_reserve_refuses_past_the_quota);
    tcase_add_test(res, test_quota_reservations_add_up);
    tcase_add_test(res, test_quota_usage_says_when_over);
    tcase_add_test(res, test_quota_none);
    suite_add_tcase(s, res);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(quota_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
