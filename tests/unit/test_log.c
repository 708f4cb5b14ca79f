/* tests/unit/test_log.c - levels, the suppressed-argument rule, and the line format. A
 * fixture resets the global threshold, RUNBOX_LOG and stderr around each test, so the tests
 * also pass with CK_FORK=no. */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static const struct {
    const char *text;
    int rc;
    enum log_level level;
} parse_cases[] = {
    {"error", 0, LOG_ERROR},    {"warn", 0, LOG_WARN},    {"info", 0, LOG_INFO},
    {"debug", 0, LOG_DEBUG},    {"trace", 0, LOG_TRACE},  {"WARNING", 0, LOG_WARN},
    {"Debug", 0, LOG_DEBUG},    {"warning", 0, LOG_WARN}, {"", -1, LOG_ERROR},
    {"verbose", -1, LOG_ERROR}, {"info ", -1, LOG_ERROR}, {"2", -1, LOG_ERROR},
};

START_TEST(test_log_parse_level_table)
{
    enum log_level out = (enum log_level)99;
    int rc = log_parse_level(parse_cases[_i].text, &out);

    ck_assert_int_eq(rc, parse_cases[_i].rc);
    if (rc == 0)
        ck_assert_int_eq(out, parse_cases[_i].level);
    else
        ck_assert_int_eq(out, 99); /* untouched on failure */
}
END_TEST

START_TEST(test_log_parse_level_null)
{
    enum log_level out = LOG_INFO;

    ck_assert_int_eq(log_parse_level(NULL, &out), -1);
    ck_assert_int_eq(out, LOG_INFO);
}
END_TEST

START_TEST(test_log_level_names)
{
    ck_assert_str_eq(log_level_name(LOG_ERROR), "error");
    ck_assert_str_eq(log_level_name(LOG_WARN), "warn");
    ck_assert_str_eq(log_level_name(LOG_INFO), "info");
    ck_assert_str_eq(log_level_name(LOG_DEBUG), "debug");
    ck_assert_str_eq(log_level_name(LOG_TRACE), "trace");
    ck_assert_str_eq(log_level_name((enum log_level)42), "?");
}
END_TEST

static int evaluations;
static int saved_stderr = -1;

static void setup(void)
{
    saved_stderr = dup(STDERR_FILENO);
    unsetenv("RUNBOX_LOG");
    log_set_level(LOG_WARN);
}

static void teardown(void)
{
    if (saved_stderr >= 0) {
        dup2(saved_stderr, STDERR_FILENO);
        close(saved_stderr);
        saved_stderr = -1;
    }
    unsetenv("RUNBOX_LOG");
    log_set_level(LOG_WARN);
}

static int counted(void)
{
    return ++evaluations;
}

/* Sends stderr to a temporary file; returns its descriptor for read_back(). */
static int capture_stderr(void)
{
    char path[] = "/tmp/test_log_XXXXXX";
    int fd = mkstemp(path);

    ck_assert_int_ge(fd, 0);
    unlink(path);
    ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
    return fd;
}

static size_t read_back(int fd, char *buf, size_t size)
{
    ssize_t n = pread(fd, buf, size - 1, 0);

    ck_assert_int_ge(n, 0);
    buf[n] = '\0';
    return (size_t)n;
}

START_TEST(test_log_suppressed_args_not_evaluated)
{
    int fd = capture_stderr();
    char buf[256];

    log_set_level(LOG_WARN);
    evaluations = 0;
    log_info("x %d", counted());
    log_debug("x %d", counted());
    log_trace("x %d", counted());
    ck_assert_int_eq(evaluations, 0);
    ck_assert_uint_eq(read_back(fd, buf, sizeof(buf)), 0);
    log_warn("x %d", counted());
    log_error("x %d", counted());
    ck_assert_int_eq(evaluations, 2);
    log_set_level(LOG_TRACE);
    log_trace("x %d", counted());
    ck_assert_int_eq(evaluations, 3);
    close(fd);
}
END_TEST

START_TEST(test_log_line_format)
{
    int fd = capture_stderr();
    char buf[512];
    size_t n;

    log_init("unit");
    log_set_level(LOG_INFO);
    log_info("vfs: read %s (%d bytes)", "/a.txt", 12);
    n = read_back(fd, buf, sizeof(buf));
    /* "2026-01-02T03:04:05.678Z unit info: vfs: read /a.txt (12 bytes)\n" */
    ck_assert_uint_gt(n, 25);
    ck_assert_int_eq(buf[4], '-');
    ck_assert_int_eq(buf[10], 'T');
    ck_assert_int_eq(buf[23], 'Z');
    ck_assert_str_eq(buf + 24, " unit info: vfs: read /a.txt (12 bytes)\n");
    close(fd);
}
END_TEST

START_TEST(test_log_long_line_is_cut_not_split)
{
    int fd = capture_stderr();
    char *big = malloc(5000);
    char *buf = malloc(8192);
    size_t n;

    memset(big, 'x', 4999);
    big[4999] = '\0';
    log_set_level(LOG_ERROR);
    log_error("%s", big);
    n = read_back(fd, buf, 8192);
    ck_assert_uint_le(n, 2048);
    ck_assert_int_eq(buf[n - 1], '\n');
    ck_assert_ptr_eq(strchr(buf, '\n'), buf + n - 1); /* exactly one line */
    free(big);
    free(buf);
    close(fd);
}
END_TEST

START_TEST(test_log_init_reads_env)
{
    setenv("RUNBOX_LOG", "debug", 1);
    log_init("unit");
    ck_assert_int_eq(log_threshold, LOG_DEBUG);
}
END_TEST

START_TEST(test_log_init_bad_env_keeps_warn)
{
    int fd = capture_stderr();
    char buf[512];

    setenv("RUNBOX_LOG", "loud", 1);
    log_init("unit");
    ck_assert_int_eq(log_threshold, LOG_WARN);
    read_back(fd, buf, sizeof(buf));
    ck_assert_ptr_nonnull(strstr(buf, "RUNBOX_LOG=loud is not a level"));
    close(fd);
}
END_TEST

START_TEST(test_log_init_empty_env_keeps_default)
{
    setenv("RUNBOX_LOG", "", 1);
    log_init("unit");
    ck_assert_int_eq(log_threshold, LOG_WARN);
    unsetenv("RUNBOX_LOG");
    log_init(NULL);
    ck_assert_int_eq(log_threshold, LOG_WARN);
}
END_TEST

static void *toggle_level(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20000; i++)
        log_set_level(i % 2 ? LOG_ERROR : LOG_WARN);
    return NULL;
}

/* One thread changes the level while another logs (logging/setLevel does so in the proxy and
 * the daemon). Under ThreadSanitizer a plain or volatile threshold is a data race and fails. */
START_TEST(test_log_level_changes_while_another_thread_logs)
{
    pthread_t t;

    evaluations = 0;
    ck_assert_int_eq(pthread_create(&t, NULL, toggle_level, NULL), 0);
    for (int i = 0; i < 20000; i++)
        log_info("never at warn or error %d", counted());
    pthread_join(t, NULL);
    ck_assert_int_eq(evaluations, 0);
}
END_TEST

static Suite *log_suite(void)
{
    Suite *s = suite_create("log");
    TCase *tc;

    tc = tcase_create("levels");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_log_parse_level_table, 0,
                        (int)(sizeof(parse_cases) / sizeof(parse_cases[0])));
    tcase_add_test(tc, test_log_parse_level_null);
    tcase_add_test(tc, test_log_level_names);
    tcase_add_test(tc, test_log_init_reads_env);
    tcase_add_test(tc, test_log_init_bad_env_keeps_warn);
    tcase_add_test(tc, test_log_init_empty_env_keeps_default);
    suite_add_tcase(s, tc);

    tc = tcase_create("output");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_log_suppressed_args_not_evaluated);
    tcase_add_test(tc, test_log_line_format);
    tcase_add_test(tc, test_log_long_line_is_cut_not_split);
    tcase_add_test(tc, test_log_level_changes_while_another_thread_logs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(log_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
