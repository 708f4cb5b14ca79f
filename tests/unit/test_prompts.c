/* tests/unit/test_prompts.c - the MCP prompts: the list, the exact texts of the guide, and
 * every way arguments can be wrong. */
#include "prompts.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"
#include "testutil.h"
#include "tools.h"
#include "vfs.h"

static char root[64];
static struct vfs *v;
static struct console *con;
static struct tools_ctx ctx;

static void setup(void)
{
    struct vfs_options opt = {.fsync = false};
    struct errinfo err = {0};

    testutil_mkdtemp(root, sizeof(root), "test_prompts.");
    v = vfs_open(root, &opt, &err);
    ck_assert_msg(v != NULL, "vfs_open: %s", err.msg);
    con = console_new(0, 0, &err);
    ctx = (struct tools_ctx){.vfs = v, .console = con};
}

static void teardown(void)
{
    vfs_free(v);
    console_free(con);
    testutil_rm_rf(root);
}

/* Runs prompts/get with args as JSON text (NULL = none); returns the one message's text
 * (owned) or NULL with err set. */
static char *get_text(const char *name, const char *args_json, struct errinfo *err)
{
    cJSON *args = args_json ? cJSON_Parse(args_json) : NULL, *res = NULL;
    const cJSON *msgs, *m;
    char *text = NULL;

    if (prompts_get(&ctx, name, args, &res, err) == 0) {
        msgs = cJSON_GetObjectItem(res, "messages");
        ck_assert_int_eq(cJSON_GetArraySize(msgs), 1);
        m = cJSON_GetArrayItem(msgs, 0);
        ck_assert_str_eq(cJSON_GetObjectItem(m, "role")->valuestring, "user");
        ck_assert_str_eq(
            cJSON_GetObjectItem(cJSON_GetObjectItem(m, "content"), "type")->valuestring, "text");
        text = strdup(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "content"), "text")->valuestring);
        ck_assert(cJSON_IsString(cJSON_GetObjectItem(res, "description")));
    }
    cJSON_Delete(res);
    cJSON_Delete(args);
    return text;
}

START_TEST(test_prompts_list_names_and_arguments)
{
    cJSON *l = prompts_list(NULL);
    const cJSON *arr = cJSON_GetObjectItem(l, "prompts"), *scaffold;

    ck_assert_int_eq(cJSON_GetArraySize(arr), 3);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "name")->valuestring,
                     "explain_file");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(
        cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "arguments"), 0),
        "required")));
    ck_assert_int_eq(
        cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 1), "arguments")), 0);
    scaffold = cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 2), "arguments");
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(scaffold, 1), "name")->valuestring,
                     "name");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(scaffold, 1), "required")));
    cJSON_Delete(l);
}
END_TEST

START_TEST(test_prompts_explain_file_text)
{
    struct errinfo err = {0};
    char *t;

    testutil_put(testutil_path(root, "x.js"), "let a = 1;\n", 11);
    t = get_text("explain_file", "{\"path\":\"/x.js\"}", &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert_str_eq(t, "The user wants an explanation of the following file:\n\n--- /x.js ---\n"
                        "let a = 1;\n\n---\n\nExplain the purpose and structure of this file "
                        "clearly.");
    free(t);
}
END_TEST

START_TEST(test_prompts_explain_file_refuses_binary_and_missing)
{
    struct errinfo err = {0};

    testutil_put(testutil_path(root, "b.bin"), "\x00\xff", 2);
    ck_assert_ptr_null(get_text("explain_file", "{\"path\":\"/b.bin\"}", &err));
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a text file"));
    memset(&err, 0, sizeof(err));
    ck_assert_ptr_null(get_text("explain_file", "{\"path\":\"/none\"}", &err));
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
}
END_TEST

START_TEST(test_prompts_fix_error_uses_recent_errors)
{
    struct errinfo err = {0};
    char *t;

    t = get_text("fix_error", NULL, &err);
    ck_assert_ptr_nonnull(strstr(t, "(no error-level entries in the console)"));
    free(t);
    console_append(con, CONSOLE_ERROR, CONSOLE_SRC_EXEC, 0, NULL, 1000000000123LL,
                   "TypeError: x is undefined", 25);
    console_append(con, CONSOLE_LOG, CONSOLE_SRC_EXEC, 0, NULL, 0, "fine", 4);
    t = get_text("fix_error", "{}", &err);
    ck_assert_str_eq(t, "The following errors appeared in the sandbox console:\n\n"
                        "[2001-09-09T01:46:40.123Z] [exec] TypeError: x is undefined\n\n"
                        "Analyze the root cause and propose a concrete fix.");
    free(t);
}
END_TEST

START_TEST(test_prompts_scaffold_text_and_default_name)
{
    struct errinfo err = {0};
    char *t = get_text("scaffold", "{\"type\":\"fullstack\",\"name\":\"shop\"}", &err);

    ck_assert_str_eq(t, "Scaffold a new fullstack project named shop.\nCreate the directory "
                        "structure, config files, and a basic entry point.\nUse best practices "
                        "for the chosen stack.");
    free(t);
    t = get_text("scaffold", "{\"type\":\"bun-api\"}", &err);
    ck_assert_ptr_nonnull(strstr(t, "named my-bun-api."));
    free(t);
}
END_TEST

static const struct {
    const char *name, *args, *part;
} bad[] = {
    {"nope", NULL, "unknown prompt"},
    {"explain_file", NULL, "missing required argument path"},
    {"explain_file", "{}", "missing required argument path"},
    {"explain_file", "{\"path\":1}", "must be a string"},
    {"explain_file", "{\"path\":\"/a\",\"extra\":\"1\"}", "no argument \"extra\""},
    {"fix_error", "{\"x\":\"1\"}", "it takes none"},
    {"scaffold", "{}", "missing required argument type"},
    {"scaffold", "{\"type\":\"rails\"}", "type must be one of"},
    {"scaffold", "[]", "must be an object"},
};

START_TEST(test_prompts_bad_arguments_are_invalid)
{
    struct errinfo err = {0};

    ck_assert_ptr_null(get_text(bad[_i].name, bad[_i].args, &err));
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_msg(strstr(err.msg, bad[_i].part) != NULL, "\"%s\" lacks \"%s\"", err.msg,
                  bad[_i].part);
}
END_TEST

static Suite *prompts_suite(void)
{
    Suite *s = suite_create("prompts");
    TCase *tc = tcase_create("render"), *args = tcase_create("arguments");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_prompts_list_names_and_arguments);
    tcase_add_test(tc, test_prompts_explain_file_text);
    tcase_add_test(tc, test_prompts_explain_file_refuses_binary_and_missing);
    tcase_add_test(tc, test_prompts_fix_error_uses_recent_errors);
    tcase_add_test(tc, test_prompts_scaffold_text_and_default_name);
    suite_add_tcase(s, tc);
    tcase_add_checked_fixture(args, setup, teardown);
    tcase_add_loop_test(args, test_prompts_bad_arguments_are_invalid, 0,
                        (int)(sizeof(bad) / sizeof(bad[0])));
    suite_add_tcase(s, args);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(prompts_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
