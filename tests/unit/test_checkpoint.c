/* tests/unit/test_checkpoint.c - checkpoints without a daemon: the unified diff, and save /
 * change / restore on a temporary workspace (contents, modes, symlinks, removals, names that
 * need care), the cost of an unchanged file (no copy), and retention. */
#include "checkpoint.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static const struct {
    const char *a, *b, *want;
    long changed;
} diffs[] = {
    {"a\nb\nc\n", "a\nB\nc\n", "--- A\n+++ B\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", 2},
    {"", "x\n", "--- A\n+++ B\n@@ -0,0 +1,1 @@\n+x\n", 1},
    {"x\n", "", "--- A\n+++ B\n@@ -1,1 +0,0 @@\n-x\n", 1},
    {"a\nb", "a\nb\n", "--- A\n+++ B\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
     2},
    {"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
     "--- A\n+++ B\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n "
     "10\n-11\n+Y\n 12\n",
     4},
    {"same\n", "same\n", "--- A\n+++ B\n", 0},
};

START_TEST(test_checkpoint_unified_diff)
{
    char *out = NULL;
    bool cut = true;
    long n = checkpoint_unified_diff(diffs[_i].a, strlen(diffs[_i].a), diffs[_i].b,
                                     strlen(diffs[_i].b), "A", "B", &out, 4096, &cut);

    ck_assert_int_eq(n, diffs[_i].changed);
    ck_assert_str_eq(out, diffs[_i].want);
    ck_assert(!cut);
    free(out);
}
END_TEST

START_TEST(test_checkpoint_unified_diff_caps)
{
    char a[2400], b[2400], *out = NULL;
    bool cut = false;

    for (int i = 0; i < 1200; i++) {
        a[i * 2] = 'a';
        b[i * 2] = 'b';
        a[i * 2 + 1] = b[i * 2 + 1] = '\n';
    }
    /* 2000 edits is the most computed: 1200 lines all different are 2400 */
    ck_assert_int_eq(checkpoint_unified_diff(a, 2400, b, 2400, "A", "B", &out, 1 << 20, &cut), -1);
    ck_assert_int_eq(checkpoint_unified_diff(a, 2000, b, 1998, "A", "B", &out, 1 << 20, &cut),
                     1999);
    free(out);
    ck_assert_int_eq(checkpoint_unified_diff(a, 200, b, 200, "A", "B", &out, 64, &cut), 200);
    ck_assert(cut);
    ck_assert_uint_le(strlen(out), 64);
    free(out);
}
END_TEST

static char ws[256], store[256];
static int ws_fd = -1;

static void setup(void)
{
    testutil_mkdtemp(ws, sizeof(ws), "cp-ws-");
    testutil_mkdtemp(store, sizeof(store), "cp-store-");
    ws_fd = open(ws, O_RDONLY | O_DIRECTORY);
}

static void teardown(void)
{
    close(ws_fd);
    testutil_rm_rf(ws);
    testutil_rm_rf(store);
}

static struct checkpoint *open_store(unsigned keep)
{
    struct checkpoint_options o = {
        .ws_fd = ws_fd, .store_fd = open(store, O_RDONLY | O_DIRECTORY), .keep = keep};
    struct errinfo err;
    struct checkpoint *c;

    errinfo_clear(&err);
    c = checkpoint_new(&o, &err);
    ck_assert_msg(c != NULL, "%s", err.msg);
    return c;
}

static char *slurp(const char *rel)
{
    FILE *f = fopen(testutil_path(ws, rel), "rb");
    static char buf[4096];
    size_t n;

    if (!f)
        return NULL;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static double num(const cJSON *j, const char *k)
{
    return cJSON_GetObjectItem(j, k)->valuedouble;
}

START_TEST(test_checkpoint_save_change_restore)
{
    struct checkpoint *c = open_store(0);
    struct errinfo err;
    cJSON *j = NULL;
    struct stat st;
    char link[64];
    ssize_t n;

    errinfo_clear(&err);
    testutil_mkdir(testutil_path(ws, "d"));
    testutil_put(testutil_path(ws, "d/a.txt"), "alpha\n", 6);
    testutil_put(testutil_path(ws, " lead space"), "s", 1);
    testutil_put(testutil_path(ws, "new\nline"), "nl", 2);
    ck_assert_int_eq(chmod(testutil_path(ws, "d/a.txt"), 0751), 0);
    ck_assert_int_eq(symlink("d/a.txt", testutil_path(ws, "ln")), 0);
    ck_assert_int_eq(checkpoint_save(c, "one", &j, &err), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "id")->valuestring, "1");
    ck_assert_int_eq(num(j, "files"), 3);
    ck_assert_int_eq(num(j, "copied_files"), 3);
    cJSON_Delete(j);
    /* unchanged files are not copied again */
    testutil_put(testutil_path(ws, "d/b.txt"), "beta\n", 5);
    ck_assert_int_eq(checkpoint_save(c, "two", &j, &err), 0);
    ck_assert_int_eq(num(j, "copied_files"), 1);
    cJSON_Delete(j);
    /* change everything, then go back to 1 */
    testutil_put(testutil_path(ws, "d/a.txt"), "changed\n", 8);
    ck_assert_int_eq(unlink(testutil_path(ws, "ln")), 0);
    ck_assert_int_eq(mkdir(testutil_path(ws, "ln"), 0755), 0);
    testutil_put(testutil_path(ws, "ln/inside"), "x", 1);
    ck_assert_int_eq(unlink(testutil_path(ws, " lead space")), 0);
    ck_assert_int_eq(checkpoint_restore(c, "1", &j, &err), 0);
    cJSON_Delete(j);
    ck_assert_str_eq(slurp("d/a.txt"), "alpha\n");
    ck_assert_str_eq(slurp(" lead space"), "s");
    ck_assert_str_eq(slurp("new\nline"), "nl");
    ck_assert_ptr_null(slurp("d/b.txt")); /* made after checkpoint 1: removed */
    ck_assert_int_eq(stat(testutil_path(ws, "d/a.txt"), &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0751);
    n = readlink(testutil_path(ws, "ln"), link, sizeof(link) - 1);
    ck_assert_int_eq(n, 7);
    link[n] = '\0';
    ck_assert_str_eq(link, "d/a.txt");
    /* unknown ids */
    errinfo_clear(&err);
    ck_assert_int_eq(checkpoint_restore(c, "7", &j, &err), -1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
    ck_assert_str_eq(err.msg, "no checkpoint \"7\" (the checkpoints are: 1, 2)");
    checkpoint_free(c);
}
END_TEST

START_TEST(test_checkpoint_retention_and_reopen)
{
    struct checkpoint *c = open_store(2);
    struct errinfo err;
    cJSON *j = NULL, *list;
    char name[16];

    errinfo_clear(&err);
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "f%d", i);
        testutil_put(testutil_path(ws, name), name, strlen(name));
        ck_assert_int_eq(checkpoint_save(c, name, &j, &err), 0);
        cJSON_Delete(j);
    }
    checkpoint_free(c);
    /* a new daemon sees the same store; ids go on after the newest */
    c = open_store(2);
    list = checkpoint_list(c, &err);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(list, "checkpoints")), 2);
    ck_assert_str_eq(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(list, "checkpoints"), 0), "id")
            ->valuestring,
        "2");
    cJSON_Delete(list);
    ck_assert_int_eq(checkpoint_save(c, "after reopen", &j, &err), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "id")->valuestring, "4");
    /* f0 was first saved by the dropped checkpoint 1, and is still restorable from 4 */
    cJSON_Delete(j);
    ck_assert_int_eq(unlink(testutil_path(ws, "f0")), 0);
    ck_assert_int_eq(checkpoint_restore(c, "4", &j, &err), 0);
    cJSON_Delete(j);
    ck_assert_str_eq(slurp("f0"), "f0");
    checkpoint_free(c);
}
END_TEST

static Suite *checkpoint_suite(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("diff");

    tcase_add_loop_test(tc, test_checkpoint_unified_diff, 0,
                        (int)(sizeof(diffs) / sizeof(diffs[0])));
    tcase_add_test(tc, test_checkpoint_unified_diff_caps);
    suite_add_tcase(s, tc);
    tc = tcase_create("store");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_checkpoint_save_change_restore);
    tcase_add_test(tc, test_checkpoint_retention_and_reopen);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(checkpoint_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
