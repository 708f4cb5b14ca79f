/* tests/unit/test_autostart.c - where runbox looks for runboxd and where its log goes, and
 * that a start that cannot happen fails at once and is not retried within 10 s. */
#include "autostart.h"

#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "upstream.h"

static char tmp[256]; /* short, so paths built from it always fit in PATH_MAX */

static void make_file(const char *dir, const char *name, mode_t mode)
{
    char path[2 * PATH_MAX];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "#!/bin/sh\n", 10), 10);
    close(fd);
    ck_assert_int_eq(chmod(path, mode), 0);
}

static void make_dir(const char *name)
{
    char path[PATH_MAX];

    snprintf(path, sizeof(path), "%s/%s", tmp, name);
    ck_assert_int_eq(mkdir(path, 0700), 0);
}

static void setup(void)
{
    snprintf(tmp, sizeof(tmp), "%.200s/test_autostart.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_autostart_log_path_prefers_xdg_state_home)
{
    char out[256];

    ck_assert_int_eq(autostart_log_path_for("/x/state", "/home/u", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/x/state/runbox/runboxd.log");
    ck_assert_int_eq(autostart_log_path_for(NULL, "/home/u", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/home/u/.local/state/runbox/runboxd.log");
    /* The XDG spec says relative values are invalid and must be ignored. */
    ck_assert_int_eq(autostart_log_path_for("rel/state", "/home/u", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "/home/u/.local/state/runbox/runboxd.log");
    ck_assert_int_eq(autostart_log_path_for("", "", out, sizeof(out)), -1);
    ck_assert_int_eq(autostart_log_path_for("/x", NULL, out, 8), -1); /* too small */
}
END_TEST

START_TEST(test_autostart_finds_daemon_beside_own_binary_first)
{
    char self[PATH_MAX], path_env[PATH_MAX], out[PATH_MAX], want[PATH_MAX];

    make_dir("bin");
    make_dir("path");
    snprintf(self, sizeof(self), "%s/bin/runbox", tmp);
    snprintf(path_env, sizeof(path_env), "%s/path", tmp);
    make_file(path_env, "runboxd", 0755);
    snprintf(want, sizeof(want), "%s/bin", tmp);
    make_file(want, "runboxd", 0755);
    ck_assert_int_eq(autostart_find_daemon(self, path_env, out, sizeof(out)), 0);
    snprintf(want, sizeof(want), "%s/bin/runboxd", tmp);
    ck_assert_str_eq(out, want);
}
END_TEST

START_TEST(test_autostart_falls_back_to_path)
{
    char self[PATH_MAX], path_env[PATH_MAX], dir[PATH_MAX], out[PATH_MAX], want[PATH_MAX];

    make_dir("bin");
    make_dir("p1");
    make_dir("p2");
    snprintf(self, sizeof(self), "%s/bin/runbox", tmp);
    snprintf(dir, sizeof(dir), "%s/bin", tmp);
    make_file(dir, "runboxd", 0644); /* not executable: skipped */
    snprintf(dir, sizeof(dir), "%s/p1", tmp);
    make_dir("p1/runboxd"); /* a directory: skipped */
    snprintf(dir, sizeof(dir), "%s/p2", tmp);
    make_file(dir, "runboxd", 0755);
    snprintf(path_env, sizeof(path_env), "::%s/none:%s/p1:%s/p2:", tmp, tmp, tmp);
    ck_assert_int_eq(autostart_find_daemon(self, path_env, out, sizeof(out)), 0);
    snprintf(want, sizeof(want), "%s/p2/runboxd", tmp);
    ck_assert_str_eq(out, want);
}
END_TEST

START_TEST(test_autostart_not_found)
{
    char self[PATH_MAX], out[PATH_MAX];

    snprintf(self, sizeof(self), "%s/runbox", tmp);
    ck_assert_int_eq(autostart_find_daemon(self, tmp, out, sizeof(out)), -1);
    ck_assert_int_eq(autostart_find_daemon(NULL, NULL, out, sizeof(out)), -1);
    ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_autostart_url_port)
{
    char out[8];

    ck_assert_int_eq(autostart_url_port("http://127.0.0.1:7766", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "7766");
    ck_assert_int_eq(autostart_url_port("http://localhost:80/x:9", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "80");
    ck_assert_int_eq(autostart_url_port("http://[::1]:7000", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "7000");
    ck_assert_int_eq(autostart_url_port("http://[::1]/", out, sizeof(out)), -1);
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(autostart_url_port("http://host", out, sizeof(out)), -1);
    ck_assert_int_eq(autostart_url_port("http://host:12a", out, sizeof(out)), -1);
    ck_assert_int_eq(autostart_url_port("http://host:123456", out, sizeof(out)), -1);
}
END_TEST

static int done_calls;

static void on_done(void *ctx, bool ok, const char *reason)
{
    (void)ctx;
    (void)ok;
    (void)reason;
    done_calls++;
}

/* With no runboxd anywhere, begin fails at once with a reason, never calls done, and a second
 * try inside the retry window repeats the reason without looking again. */
START_TEST(test_autostart_begin_fails_fast_and_is_rate_limited)
{
    struct upstream_config cfg = {.base_url = "http://127.0.0.1:1", .timeout_ms = 100};
    struct upstream *up = upstream_new(&cfg, NULL);
    struct autostart *as;
    struct errinfo err = {0};
    char state[PATH_MAX];

    char *saved_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");

    snprintf(state, sizeof(state), "%s/state", tmp);
    setenv("PATH", tmp, 1); /* read once, by autostart_new */
    setenv("XDG_STATE_HOME", state, 1);
    as = autostart_new(up, on_done, NULL, NULL);
    setenv("PATH", saved_path, 1);
    free(saved_path);
    ck_assert_ptr_nonnull(as);
    ck_assert_ptr_nonnull(strstr(autostart_log_path(as), "/state/runbox/runboxd.log"));
    /* The test binary's own directory has no runboxd either. */
    ck_assert_int_eq(autostart_begin(as, 1000, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "found neither beside runbox"));
    ck_assert(!autostart_is_running(as));
    ck_assert_int_eq(autostart_timeout_ms(as, 1000), -1);

    errinfo_clear(&err);
    ck_assert_int_eq(autostart_begin(as, 1000 + AUTOSTART_RETRY_MS - 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "found neither beside runbox"));
    ck_assert_int_eq(done_calls, 0);
    autostart_free(as);
    upstream_free(up);
}
END_TEST

static Suite *autostart_suite(void)
{
    Suite *s = suite_create("autostart");
    TCase *paths = tcase_create("paths");
    TCase *begin = tcase_create("begin");

    tcase_add_test(paths, test_autostart_log_path_prefers_xdg_state_home);
    tcase_add_test(paths, test_autostart_url_port);
    tcase_add_checked_fixture(paths, setup, teardown);
    tcase_add_test(paths, test_autostart_finds_daemon_beside_own_binary_first);
    tcase_add_test(paths, test_autostart_falls_back_to_path);
    tcase_add_test(paths, test_autostart_not_found);
    suite_add_tcase(s, paths);

    tcase_add_checked_fixture(begin, setup, teardown);
    tcase_add_test(begin, test_autostart_begin_fails_fast_and_is_rate_limited);
    suite_add_tcase(s, begin);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(autostart_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
