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
    hosttools_probe(&h, names, 3, dir, NULL);
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

/* How many times the fake program at dir/name was run (each run appends a line to dir/runs-name).
 */
static int runs_of(const char *dir, const char *name)
{
    char path[512], line[64];
    FILE *f;
    int n = 0;

    snprintf(path, sizeof(path), "%s/runs-%s", dir, name);
    f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f))
        n++;
    if (f)
        fclose(f);
    return n;
}

START_TEST(test_hosttools_probe_cache_skips_unchanged_programs)
{
    char dir[256], bin[300], cache[300], body[700];
    static const char *const names[] = {"node", "git"};
    struct hosttools h;

    testutil_mkdtemp(dir, sizeof(dir), "hosttools-");
    snprintf(bin, sizeof(bin), "%s/bin", dir);
    snprintf(cache, sizeof(cache), "%s/cache", dir);
    ck_assert_int_eq(mkdir(bin, 0755), 0);
    ck_assert_int_eq(mkdir(cache, 0700), 0);
    snprintf(body, sizeof(body), "echo x >> %s/runs-node; echo v1.0.0", dir);
    fake_program(bin, "node", body);
    snprintf(body, sizeof(body), "echo x >> %s/runs-git; echo 'git version 2.0.0'", dir);
    fake_program(bin, "git", body);

    hosttools_probe(&h, names, 2, bin, cache); /* the first start asks both */
    ck_assert_str_eq(h.e[0].version, "v1.0.0");
    ck_assert_str_eq(h.e[1].version, "2.0.0");
    ck_assert_int_eq(runs_of(dir, "node"), 1);
    ck_assert_int_eq(runs_of(dir, "git"), 1);

    hosttools_probe(&h, names, 2, bin, cache); /* nothing changed: nothing runs */
    ck_assert_str_eq(h.e[0].version, "v1.0.0");
    ck_assert_str_eq(h.e[1].version, "2.0.0");
    ck_assert_int_eq(runs_of(dir, "node"), 1);
    ck_assert_int_eq(runs_of(dir, "git"), 1);

    /* node is upgraded (a new file in its place): only node is asked, and says the new one. */
    /* A different size too: a file made within the same clock tick may get the same times. */
    snprintf(body, sizeof(body), "echo x >> %s/runs-node; echo v2.0.10", dir);
    snprintf(cache, sizeof(cache), "%s/bin/node", dir);
    ck_assert_int_eq(unlink(cache), 0);
    fake_program(bin, "node", body);
    snprintf(cache, sizeof(cache), "%s/cache", dir);
    hosttools_probe(&h, names, 2, bin, cache);
    ck_assert_str_eq(h.e[0].version, "v2.0.10");
    ck_assert_str_eq(h.e[1].version, "2.0.0");
    ck_assert_int_eq(runs_of(dir, "node"), 2);
    ck_assert_int_eq(runs_of(dir, "git"), 1);
    testutil_rm_rf(dir);
}
END_TEST

START_TEST(test_hosttools_probe_ignores_a_damaged_cache)
{
    char dir[256], bin[300], cache[300], file[400];
    static const char *const names[] = {"node"};
    struct hosttools h;
    FILE *f;

    testutil_mkdtemp(dir, sizeof(dir), "hosttools-");
    snprintf(bin, sizeof(bin), "%s/bin", dir);
    snprintf(cache, sizeof(cache), "%s/cache", dir);
    ck_assert_int_eq(mkdir(bin, 0755), 0);
    ck_assert_int_eq(mkdir(cache, 0700), 0);
    fake_program(bin, "node", "echo v3.1.4");
    snprintf(file, sizeof(file), "%s/hosttools.json", cache);
    f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"tools\": {\"node\": {\"path\": 7, \"version\": [", f);
    fclose(f);
    hosttools_probe(&h, names, 1, bin, cache);
    ck_assert_str_eq(h.e[0].version, "v3.1.4");
    hosttools_probe(&h, names, 1, bin, cache); /* from the rewritten cache */
    ck_assert_str_eq(h.e[0].version, "v3.1.4");
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
    tcase_add_test(tc, test_hosttools_probe_cache_skips_unchanged_programs);
    tcase_add_test(tc, test_hosttools_probe_ignores_a_damaged_cache);
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
