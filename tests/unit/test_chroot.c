/* tests/unit/test_chroot.c - reading /proc/self/mountinfo for a mount at "/". */
#include <check.h>
#include <stdlib.h>

#include "chroot.h"

static const struct {
    const char *mountinfo;
    bool has_root;
} rows[] = {
    /* The host, and a root entered with pivot_root: a mount at "/". */
    {"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
     "23 22 0:21 / /proc rw,nosuid shared:12 - proc proc rw\n",
     true},
    {"40 39 254:0 /work/debian12-root / rw,relatime - ext4 /dev/vda rw\n", true},
    {"23 22 0:21 / /proc rw - proc proc rw\n22 1 254:0 / / rw - ext4 /dev/vda rw", true},
    /* A chroot into a plain directory: only the mounts under it, none at "/". */
    {"501 22 0:21 / /proc rw,relatime - proc proc rw\n"
     "502 22 0:48 / /tmp rw,relatime - tmpfs tmpfs rw\n"
     "503 22 254:0 /usr /usr rw,relatime - ext4 /dev/vda rw\n",
     false},
    {"", false},
    /* "/" must be the whole fifth field, and a field of its own line. */
    {"30 22 0:21 / /proc rw - proc proc rw\n", false},
    {"30 22 0:21 /x /root rw - ext4 /dev/vda rw\n", false},
    {"30 22 0:21\n/ / rw\n", false},
};

START_TEST(test_chroot_mountinfo_has_root)
{
    ck_assert_msg(chroot_mountinfo_has_root(rows[_i].mountinfo) == rows[_i].has_root, "row %d", _i);
}
END_TEST

START_TEST(test_chroot_detect_on_this_host)
{
    /* The tests never run chrooted (exec_chroot.test.mjs checks the chrooted case for real). */
    ck_assert(!chroot_detect());
}
END_TEST

static Suite *chroot_suite(void)
{
    Suite *s = suite_create("chroot");
    TCase *tc = tcase_create("mountinfo");

    tcase_add_loop_test(tc, test_chroot_mountinfo_has_root, 0, sizeof(rows) / sizeof(rows[0]));
    tcase_add_test(tc, test_chroot_detect_on_this_host);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(chroot_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
