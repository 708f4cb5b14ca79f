/* tests/unit/test_hosttools.c - probing the programs exec promises: version parsing, the
 * description sentence, and a real probe of fake programs on a PATH of the test's own. */
#include "hosttools.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static const struct {
    const char *text, *want;
} versions[] = {
    {"v20.20.2\n", "v20.20.2"},
    {"Python 3.11.2\n", "3.11.2"},
    {"git version 2.39.5\n", "2.39.5"},
    {"9.2.0", "9.2.0"},
    {"no version here\n3.0 on the next line\n", ""},
    {"", ""},
    {"value 7", "7"},
};

START_TEST(test_hosttools_parse_version)
{
    char out[64];

    hosttools_parse_version(versions[_i].text, out, sizeof(out));
    ck_assert_str_eq(out, versions[_i].want);
}
END_TEST

START_TEST(test_hosttools_sentence_names_only_what_is_there)
{
    struct hosttools h = {.n = 3};
    char *s;

    snprintf(h.e[0].name, sizeof(h.e[0].name), "node");
    snprintf(h.e[0].path, sizeof(h.e[0].path), "/usr/bin/node");
    snprintf(h.e[0].version, sizeof(h.e[0].version), "v20.1.0");
    snprintf(h.e[1].name, sizeof(h.e[1].name), "python3");
    snprintf(h.e[2].name, sizeof(h.e[2].name), "git");
    snprintf(h.e[2].path, sizeof(h.e[2].path), "/usr/bin/git");
    s = hosttools_sentence(&h);
    ck_assert_str_eq(s, "Installed: node v20.1.0, git; not installed: python3.");
    free(s);
    h.n = 1;
    s = hosttools_sentence(&h);
    ck_assert_str_eq(s, "Installed: node v20.1.0.");
    free(s);
}
END_TEST

static void fake_program(const char *dir, const char *name, const char *body)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    ck_assert_int_eq(chmod(path, 0755), 0);
}

START_TEST(test_hosttools_probe_finds_and_asks)
{
    char dir[256];
    static const char *const names[] = {"node", "python3", "git"};
    struct hosttools h;
    cJSON *j;
    char *s;

    testutil_mkdtemp(dir, sizeof(dir), "hosttools-");
    fake_program(dir, "node", "echo v99.1.2");
    fake_program(dir, "git", "echo 'git version 9.8.7'");
    hosttools_probe(&h, names, 3, dir);
    ck_assert_uint_eq(h.n, 3);
    ck_assert_str_eq(h.e[0].version, "v99.1.2");
    ck_assert_str_eq(h.e[1].path, "");
    ck_assert_str_eq(h.e[2].version, "9.8.7");
    s = hosttools_sentence(&h);
    ck_assert_str_eq(s, "Installed: node v99.1.2, git 9.8.7; not installed: python3.");
    free(s);
    j = hosttools_json(&h);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "python3")));
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "git"), "version")->valuestring,
                     "9.8.7");
    cJSON_Delete(j);
    testutil_rm_rf(dir);
}
END_TEST

static Suite *hosttools_suite(void)
{
    Suite *s = suite_create("hosttools");
    TCase *tc = tcase_create("pure");

    tcase_add_loop_test(tc, test_hosttools_parse_version, 0,
                        (int)(sizeof(versions) / sizeof(versions[0])));
    tcase_add_test(tc, test_hosttools_sentence_names_only_what_is_there);
    suite_add_tcase(s, tc);
    tc = tcase_create("probe");
    tcase_add_test(tc, test_hosttools_probe_finds_and_asks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hosttools_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
