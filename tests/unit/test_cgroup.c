/* tests/unit/test_cgroup.c - the pure parts of the sandboxes' cgroups: finding the daemon's own
 * cgroup v2 directory from /proc/self/cgroup and mountinfo, reading memory.events counters,
 * finding controllers in a list, and a cgroup that is off (NULL or --no-cgroup) doing nothing.
 * The real hierarchy is exercised by tests/integration/exec.test.mjs and tests/vm/. */
#include "cgroup.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* ---- finding the daemon's own cgroup ---- */

/* A mountinfo line for a cgroup2 mount of root at point. */
#define V2_LINE(root, point)                                                                       \
    "35 24 0:30 " root " " point " rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "    \
    "rw,nsdelegate,memory_recursiveprot\n"
#define OTHER_LINES                                                                                \
    "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"                                    \
    "24 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"

static const char *own(const char *proc_cgroup, const char *mountinfo, char *buf, size_t sz)
{
    return cgroup_own_dir(proc_cgroup, mountinfo, buf, sz) == 0 ? buf : NULL;
}

START_TEST(test_cgroup_own_dir_pure_v2)
{
    char buf[CGROUP_PATH_MAX];
    const char *mi = OTHER_LINES V2_LINE("/", "/sys/fs/cgroup");

    ck_assert_str_eq(own("0::/system.slice/runboxd.service\n", mi, buf, sizeof(buf)),
                     "/sys/fs/cgroup/system.slice/runboxd.service");
    /* The root cgroup is the mount point itself. */
    ck_assert_str_eq(own("0::/\n", mi, buf, sizeof(buf)), "/sys/fs/cgroup");
}
END_TEST

START_TEST(test_cgroup_own_dir_hybrid)
{
    char buf[CGROUP_PATH_MAX];
    const char *pc = "12:pids:/user.slice\n4:memory:/user.slice/x\n1:name=systemd:/user.slice\n"
                     "0::/user.slice/user-1000.slice/session-2.scope\n";
    const char *mi = OTHER_LINES
        "30 24 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" V2_LINE(
            "/", "/sys/fs/cgroup/unified");

    ck_assert_str_eq(own(pc, mi, buf, sizeof(buf)),
                     "/sys/fs/cgroup/unified/user.slice/user-1000.slice/session-2.scope");
}
END_TEST

START_TEST(test_cgroup_own_dir_mount_root_not_slash)
{
    char buf[CGROUP_PATH_MAX];
    /* A container's view: the host's /docker/abc mounted at /sys/fs/cgroup. */
    const char *mi = OTHER_LINES V2_LINE("/docker/abc", "/sys/fs/cgroup");

    ck_assert_str_eq(own("0::/docker/abc/app\n", mi, buf, sizeof(buf)), "/sys/fs/cgroup/app");
    ck_assert_str_eq(own("0::/docker/abc\n", mi, buf, sizeof(buf)), "/sys/fs/cgroup");
    /* A sibling whose name only starts like the root is not under it. */
    ck_assert_ptr_null(own("0::/docker/abcdef\n", mi, buf, sizeof(buf)));
    ck_assert_ptr_null(own("0::/other\n", mi, buf, sizeof(buf)));
}
END_TEST

START_TEST(test_cgroup_own_dir_escaped_mount_point)
{
    char buf[CGROUP_PATH_MAX];
    const char *mi = V2_LINE("/", "/mnt/my\\040cgroups");

    ck_assert_str_eq(own("0::/a\n", mi, buf, sizeof(buf)), "/mnt/my cgroups/a");
    /* A backslash that starts no escape, and one at the very end, stay as they are. */
    ck_assert_str_eq(own("0::/\n", V2_LINE("/", "/mnt/a\\9b\\"), buf, sizeof(buf)), "/mnt/a\\9b\\");
    /* Mounted at "/" itself. */
    ck_assert_str_eq(own("0::/x\n", V2_LINE("/", "/"), buf, sizeof(buf)), "/x");
    ck_assert_str_eq(own("0::/\n", V2_LINE("/", "/"), buf, sizeof(buf)), "/");
}
END_TEST

START_TEST(test_cgroup_own_dir_missing)
{
    char buf[CGROUP_PATH_MAX];

    /* cgroup v1 only: no "0::" line, no cgroup2 mount. */
    ck_assert_ptr_null(own("4:memory:/x\n1:name=systemd:/\n",
                           OTHER_LINES "30 24 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw\n",
                           buf, sizeof(buf)));
    /* A "0::" line but no cgroup2 mount visible (e.g. /sys/fs/cgroup not mounted). */
    ck_assert_ptr_null(own("0::/a\n", OTHER_LINES, buf, sizeof(buf)));
    /* Not a path. */
    ck_assert_ptr_null(own("0::\n", V2_LINE("/", "/sys/fs/cgroup"), buf, sizeof(buf)));
    ck_assert_ptr_null(own("", "", buf, sizeof(buf)));
}
END_TEST

START_TEST(test_cgroup_own_dir_too_long)
{
    char small[16];

    ck_assert_int_eq(
        cgroup_own_dir("0::/a/long/path\n", V2_LINE("/", "/sys/fs/cgroup"), small, sizeof(small)),
        -1);
}
END_TEST

/* ---- counters ---- */

START_TEST(test_cgroup_parse_memory_events)
{
    const char *ev = "low 0\nhigh 0\nmax 17\noom 2\noom_kill 1\noom_group_kill 0\n";

    ck_assert_uint_eq(cgroup_parse_key(ev, "oom_kill"), 1);
    ck_assert_uint_eq(cgroup_parse_key(ev, "oom"), 2);
    ck_assert_uint_eq(cgroup_parse_key(ev, "max"), 17);
    ck_assert_uint_eq(cgroup_parse_key(ev, "oom_group_kill"), 0);
    ck_assert_uint_eq(cgroup_parse_key("populated 1\nfrozen 0\n", "populated"), 1);
}
END_TEST

START_TEST(test_cgroup_parse_missing_or_bad)
{
    ck_assert_uint_eq(cgroup_parse_key("", "max"), 0);
    ck_assert_uint_eq(cgroup_parse_key("max", "max"), 0);
    ck_assert_uint_eq(cgroup_parse_key("max x\n", "max"), 0);
    ck_assert_uint_eq(cgroup_parse_key("max 12abc\n", "max"), 0);
    ck_assert_uint_eq(cgroup_parse_key("xmax 5\nmax 4", "max"), 4); /* last line without \n */
    ck_assert_uint_eq(cgroup_parse_key("max 18446744073709551615\n", "max"), UINT64_MAX);
    /* "oom_kill_disable" starts like "oom_kill" but is another key. */
    ck_assert_uint_eq(cgroup_parse_key("oom_kill_disable 1\n", "oom_kill"), 0);
}
END_TEST

/* ---- controllers ---- */

START_TEST(test_cgroup_has_word)
{
    ck_assert(cgroup_has_word("cpuset cpu io memory hugetlb pids rdma misc\n", "memory"));
    ck_assert(cgroup_has_word("cpuset cpu io memory hugetlb pids rdma misc\n", "pids"));
    ck_assert(cgroup_has_word(" pids", "pids"));
    ck_assert(!cgroup_has_word("hugetlb\n", "memory"));
    ck_assert(!cgroup_has_word("memory_x pidsy", "memory"));
    ck_assert(!cgroup_has_word("", "pids"));
    ck_assert(!cgroup_has_word("memor", "memory"));
}
END_TEST

/* ---- off ---- */

START_TEST(test_cgroup_null_is_off)
{
    struct errinfo err = {0};

    ck_assert(!cgroup_is_on(NULL));
    ck_assert(!cgroup_has_memory(NULL));
    ck_assert(!cgroup_has_pids(NULL));
    ck_assert_ptr_null(cgroup_path(NULL));
    ck_assert_ptr_nonnull(strstr(cgroup_reason(NULL), "rlimits"));
    ck_assert(!cgroup_run_end(NULL, 1, -1));
    ck_assert(!cgroup_tidy(NULL));
    cgroup_run_kill(-1);
    cgroup_disable(NULL, "x");
    cgroup_free(NULL);
    ck_assert_int_eq(err.kind, ERR_NONE);
}
END_TEST

START_TEST(test_cgroup_turned_off)
{
    /* enabled = false touches no hierarchy and says how it was turned off. */
    struct cgroup *cg = cgroup_setup(0, 0, false);

    ck_assert_ptr_nonnull(cg);
    ck_assert(!cgroup_is_on(cg));
    ck_assert(!cgroup_has_memory(cg));
    ck_assert_ptr_null(cgroup_path(cg));
    ck_assert_ptr_nonnull(strstr(cgroup_reason(cg), "--no-cgroup"));
    ck_assert(!cgroup_tidy(cg));
    cgroup_free(cg);
}
END_TEST

static Suite *cgroup_suite(void)
{
    Suite *s = suite_create("cgroup");
    TCase *tc = tcase_create("own_dir");

    tcase_add_test(tc, test_cgroup_own_dir_pure_v2);
    tcase_add_test(tc, test_cgroup_own_dir_hybrid);
    tcase_add_test(tc, test_cgroup_own_dir_mount_root_not_slash);
    tcase_add_test(tc, test_cgroup_own_dir_escaped_mount_point);
    tcase_add_test(tc, test_cgroup_own_dir_missing);
    tcase_add_test(tc, test_cgroup_own_dir_too_long);
    suite_add_tcase(s, tc);
    tc = tcase_create("counters");
    tcase_add_test(tc, test_cgroup_parse_memory_events);
    tcase_add_test(tc, test_cgroup_parse_missing_or_bad);
    tcase_add_test(tc, test_cgroup_has_word);
    suite_add_tcase(s, tc);
    tc = tcase_create("off");
    tcase_add_test(tc, test_cgroup_null_is_off);
    tcase_add_test(tc, test_cgroup_turned_off);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cgroup_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
