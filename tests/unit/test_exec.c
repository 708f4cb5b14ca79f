/* tests/unit/test_exec.c - the pure parts of the exec engine: limits and their parsing (also
 * through the daemon's config), the bwrap command line, the result text and JSON, signal and
 * variable names, and the /workspace path alias of the file tools. */
#include "exec.h"

#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "tools.h"

static struct errinfo err;

static void setup(void)
{
    memset(&err, 0, sizeof(err));
}

/* ---- limits ---- */

START_TEST(test_exec_limits_defaults)
{
    struct exec_limits l;

    exec_limits_default(&l);
    ck_assert_uint_eq(l.timeout_ms, 60000);
    ck_assert_uint_eq(l.output_bytes, 1u << 20);
    ck_assert_uint_eq(l.procs, 256);
    ck_assert_uint_eq(l.memory_mb, 2048);
    ck_assert_uint_eq(l.background_max, 8);
    ck_assert(exec_limits_has("cpu_s"));
    ck_assert(!exec_limits_has("cpu"));
}
END_TEST

START_TEST(test_exec_limits_parse)
{
    struct exec_limits l;

    exec_limits_default(&l);
    ck_assert_int_eq(exec_limits_set(&l, "--exec-timeout-ms", "timeout_ms", "1500", &err), 0);
    ck_assert_uint_eq(l.timeout_ms, 1500);
    ck_assert_int_eq(exec_limits_set(&l, "--exec-timeout-ms", "timeout_ms", "12x", &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "--exec-timeout-ms: expected a whole number 100-"));
    memset(&err, 0, sizeof(err));
    ck_assert_int_eq(exec_limits_set(&l, "x", "procs", "-5", &err), -1);
    memset(&err, 0, sizeof(err));
    ck_assert_int_eq(exec_limits_set(&l, "x", "procs", "7", &err), -1); /* below the minimum */
    memset(&err, 0, sizeof(err));
    ck_assert_int_eq(exec_limits_set(&l, "x", "nope", "7", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown exec limit"));
    memset(&err, 0, sizeof(err));
    ck_assert_int_eq(exec_limits_set_number(&l, "f", "memory_mb", 512, &err), 0);
    ck_assert_uint_eq(l.memory_mb, 512);
    ck_assert_int_eq(exec_limits_set_number(&l, "f", "memory_mb", 51.5, &err), -1);
    ck_assert_uint_eq(l.timeout_ms, 1500); /* failures change nothing */
}
END_TEST

START_TEST(test_exec_limits_from_config)
{
    struct config cfg;
    struct config_env env = {.home = "/home/u"};
    char *argv[] = {"runboxd", "--exec-procs", "64", "--exec-output-bytes=4096", NULL};
    const char *file = "{\"exec_timeout_ms\": 5000, \"exec_procs\": 32}";

    ck_assert_int_eq(config_init(&cfg, &env, &err), 0);
    ck_assert_int_eq(config_apply_file(&cfg, "c.json", file, &err), 0);
    ck_assert_uint_eq(cfg.exec.timeout_ms, 5000);
    ck_assert_uint_eq(cfg.exec.procs, 32);
    ck_assert_int_eq(config_apply_args(&cfg, 4, argv, &err), 0);
    ck_assert_uint_eq(cfg.exec.procs, 64); /* the flag wins */
    ck_assert_uint_eq(cfg.exec.output_bytes, 4096);
    ck_assert_int_eq(config_apply_file(&cfg, "c.json", "{\"exec_procs\": \"9\"}", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "exec_procs"));
    ck_assert_ptr_nonnull(strstr(config_usage(), "--exec-timeout-ms"));
    config_cleanup(&cfg);
}
END_TEST

/* ---- the command line ---- */

static const char *find_after(char **argv, const char *flag, int nth)
{
    for (size_t i = 0; argv[i]; i++)
        if (strcmp(argv[i], flag) == 0 && nth-- == 0)
            return argv[i + 1];
    return NULL;
}

static bool has(char **argv, const char *s)
{
    for (size_t i = 0; argv[i]; i++)
        if (strcmp(argv[i], s) == 0)
            return true;
    return false;
}

START_TEST(test_exec_argv_layout)
{
    struct exec_env env[] = {{"NODE_ENV", "test"}, {"PATH", "/custom"}};
    struct exec_spec s = {
        .bwrap = "/usr/bin/bwrap",
        .ws_source = "/mnt",
        .cwd = "/src/app",
        .command = "echo hi",
        .env = env,
        .nenv = 2,
        .tmp_mb = 64,
        .shm_mb = 128,
        .uid = 1000,
        .gid = 1001,
        .sysdir = {EXEC_SYSDIR_SYMLINK, EXEC_SYSDIR_SYMLINK, EXEC_SYSDIR_ABSENT, EXEC_SYSDIR_DIR}};
    char **argv = exec_build_argv(&s, &err);
    size_t n = 0;

    ck_assert_ptr_nonnull(argv);
    while (argv[n])
        n++;
    ck_assert_str_eq(argv[0], "/usr/bin/bwrap");
    ck_assert_str_eq(argv[n - 3], "/bin/sh");
    ck_assert_str_eq(argv[n - 2], "-c");
    ck_assert_str_eq(argv[n - 1], "echo hi");
    ck_assert_str_eq(find_after(argv, "--chdir", 0), "/workspace/src/app");
    ck_assert_str_eq(find_after(argv, "--bind", 0), "/mnt");
    /* Every tmpfs a command can write has a size: /dev/shm the memory limit, /tmp its own; /dev
     * itself is read-only. */
    ck_assert_str_eq(find_after(argv, "--size", 0), "134217728");
    ck_assert_str_eq(find_after(argv, "--tmpfs", 0), "/dev/shm");
    ck_assert_str_eq(find_after(argv, "--size", 1), "67108864");
    ck_assert_str_eq(find_after(argv, "--tmpfs", 1), "/tmp");
    ck_assert_ptr_null(find_after(argv, "--tmpfs", 2));
    ck_assert_str_eq(find_after(argv, "--uid", 0), "1000");
    ck_assert_str_eq(find_after(argv, "--gid", 0), "1001");
    ck_assert_str_eq(find_after(argv, "--remount-ro", 0), "/dev");
    ck_assert_str_eq(find_after(argv, "--remount-ro", 1), "/");
    /* usr-merged dirs are links, a real /sbin is bound, a missing /lib64 is left out */
    ck_assert_str_eq(find_after(argv, "--symlink", 0), "usr/bin");
    ck_assert_str_eq(find_after(argv, "--symlink", 1), "usr/lib");
    ck_assert_ptr_null(find_after(argv, "--symlink", 2));
    ck_assert(!has(argv, "/lib64"));
    ck_assert(has(argv, "/sbin"));
    ck_assert(has(argv, "/etc/passwd") && !has(argv, "/etc/shadow") && !has(argv, "/etc"));
    static const char *const flags[] = {"--unshare-user",   "--unshare-pid",     "--unshare-net",
                                        "--unshare-uts",    "--die-with-parent", "--new-session",
                                        "--disable-userns", "--clearenv"};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        ck_assert_msg(has(argv, flags[i]), "%s missing", flags[i]);
    /* IPC is the daemon's child's namespace (with System V memory bounded), not bwrap's. */
    ck_assert(!has(argv, "--unshare-all") && !has(argv, "--unshare-ipc"));
    ck_assert_str_eq(find_after(argv, "--cap-drop", 0), "ALL");
    ck_assert(!has(argv, "--share-net"));
    /* the defaults first, then the call's variables, so the call's win */
    ck_assert_str_eq(find_after(argv, "--setenv", 0), "PATH");
    ck_assert_str_eq(find_after(argv, "--setenv", 1), "HOME");
    ck_assert(has(argv, "GIT_AUTHOR_NAME") && has(argv, "npm_config_cache"));
    ck_assert(has(argv, "NODE_ENV") && has(argv, "/custom"));
    free(argv);
}
END_TEST

START_TEST(test_exec_argv_network_and_root_cwd)
{
    struct exec_spec s = {.bwrap = "bwrap",
                          .ws_source = "/mnt",
                          .cwd = "/",
                          .command = "x",
                          .allow_network = true,
                          .tmp_mb = 1};
    char **argv = exec_build_argv(&s, &err);

    ck_assert_ptr_nonnull(argv);
    ck_assert(has(argv, "--share-net") && !has(argv, "--unshare-net"));
    ck_assert_str_eq(find_after(argv, "--chdir", 0), "/workspace");
    free(argv);
    s.cwd = "relative";
    ck_assert_ptr_null(exec_build_argv(&s, &err));
    ck_assert_int_eq(err.kind, ERR_INVALID);
}
END_TEST

START_TEST(test_exec_argv_root_links)
{
    static const char *const names[] = {"hello.js", "usr", "src", "workspace", "..", "tmp", ".git"};
    struct exec_spec s = {.bwrap = "bwrap",
                          .ws_source = "/mnt",
                          .cwd = "/",
                          .command = "x",
                          .tmp_mb = 1,
                          .root_names = names,
                          .nroot = sizeof(names) / sizeof(names[0])};
    char **argv = exec_build_argv(&s, &err);

    ck_assert_ptr_nonnull(argv);
    /* each kept name is a link at the root into the workspace, after the workspace bind */
    ck_assert_str_eq(find_after(argv, "--symlink", 0), "workspace/hello.js");
    ck_assert(has(argv, "/hello.js"));
    ck_assert_str_eq(find_after(argv, "--symlink", 1), "workspace/src");
    ck_assert_str_eq(find_after(argv, "--symlink", 2), "workspace/.git");
    ck_assert_ptr_null(find_after(argv, "--symlink", 3));
    /* system names keep the system's meaning */
    ck_assert(!has(argv, "workspace/usr") && !has(argv, "workspace/tmp") &&
              !has(argv, "workspace/workspace") && !has(argv, "workspace/.."));
    free(argv);
    ck_assert(exec_root_name_ok("hello.js") && exec_root_name_ok("node_modules"));
    ck_assert(!exec_root_name_ok("lib64") && !exec_root_name_ok("proc") &&
              !exec_root_name_ok(".") && !exec_root_name_ok("") && !exec_root_name_ok("a/b"));
}
END_TEST

/* ---- results ---- */

static char *text_of(const struct exec_outcome *o)
{
    size_t len = 0;
    char *t = exec_format_text(o, &len);

    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(len, strlen(t));
    return t;
}

START_TEST(test_exec_text_plain_and_stderr)
{
    struct exec_outcome o = {.out = "hi\n", .out_len = 3};
    char *t = text_of(&o);

    ck_assert_str_eq(t, "hi\n");
    free(t);
    o = (struct exec_outcome){
        .out = "partial", .out_len = 7, .err = "bad\n", .err_len = 4, .exit_code = 2};
    t = text_of(&o);
    ck_assert_str_eq(t, "partial\n[stderr]\nbad\n[exit code 2]\n");
    free(t);
    o = (struct exec_outcome){0};
    t = text_of(&o);
    ck_assert_str_eq(t, "");
    free(t);
}
END_TEST

START_TEST(test_exec_text_limits)
{
    struct exec_outcome o = {.exit_code = 137, .timed_out = true, .timeout_ms = 500};
    char *t = text_of(&o);

    ck_assert_str_eq(t, "[timed out after 500 ms]\n");
    free(t);
    o = (struct exec_outcome){
        .out = "y\n", .out_len = 2, .out_dropped = 10, .exit_code = 137, .output_limit = true};
    t = text_of(&o);
    ck_assert_str_eq(t, "y\n[exit code 137 (SIGKILL)]\n[output truncated]\n"
                        "[killed: output limit (it kept printing far past the limit)]\n");
    free(t);
    o = (struct exec_outcome){.exit_code = 128 + SIGXFSZ};
    t = text_of(&o);
    ck_assert_str_eq(t, "[exit code 153 (SIGXFSZ)]\n[killed: file size limit]\n");
    free(t);
    o = (struct exec_outcome){.exit_code = 128 + SIGXCPU, .memory_limit = false};
    t = text_of(&o);
    ck_assert_ptr_nonnull(strstr(t, "[killed: CPU time limit]"));
    free(t);
    o = (struct exec_outcome){.exit_code = 137, .memory_limit = true};
    t = text_of(&o);
    ck_assert_ptr_nonnull(strstr(t, "[killed: memory limit]"));
    free(t);
    o = (struct exec_outcome){
        .exit_code = 137, .quota_exceeded = true, .quota_mb = 24, .quota_used_mb = 30};
    t = text_of(&o);
    ck_assert_str_eq(t, "[exit code 137 (SIGKILL)]\n"
                        "[killed: workspace is full (quota 24 MiB, used 30 MiB)]\n");
    free(t);
    {
        cJSON *j = exec_outcome_json(&o);

        ck_assert_str_eq(cJSON_GetObjectItem(j, "killed")->valuestring, "workspace quota");
        cJSON_Delete(j);
    }
    o = (struct exec_outcome){.exit_code = 200};
    ck_assert_ptr_null(exec_signal_name(&o));
    o.exit_code = 130;
    ck_assert_str_eq(exec_signal_name(&o), "SIGINT");
}
END_TEST

START_TEST(test_exec_outcome_json)
{
    struct exec_outcome o = {.pid = 4,
                             .out = "a",
                             .out_len = 1,
                             .err = "b",
                             .err_len = 1,
                             .exit_code = 128 + SIGXCPU,
                             .duration_ms = 12,
                             .err_dropped = 3};
    cJSON *j = exec_outcome_json(&o);

    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(cJSON_GetObjectItem(j, "pid")->valueint, 4);
    ck_assert_int_eq(cJSON_GetObjectItem(j, "exit_code")->valueint, 152);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "stdout")->valuestring, "a");
    ck_assert_str_eq(cJSON_GetObjectItem(j, "stderr")->valuestring, "b");
    ck_assert_int_eq(cJSON_GetObjectItem(j, "duration_ms")->valueint, 12);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "timed_out")));
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "truncated")));
    ck_assert_str_eq(cJSON_GetObjectItem(j, "signal")->valuestring, "SIGXCPU");
    ck_assert_str_eq(cJSON_GetObjectItem(j, "killed")->valuestring, "CPU time limit");
    cJSON_Delete(j);
    o = (struct exec_outcome){0};
    j = exec_outcome_json(&o);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "signal")));
    ck_assert_str_eq(cJSON_GetObjectItem(j, "stdout")->valuestring, "");
    cJSON_Delete(j);
}
END_TEST

/* ---- names ---- */

START_TEST(test_exec_names)
{
    ck_assert_int_eq(exec_parse_signal("TERM"), SIGTERM);
    ck_assert_int_eq(exec_parse_signal("sigkill"), SIGKILL);
    ck_assert_int_eq(exec_parse_signal("INT"), SIGINT);
    ck_assert_int_eq(exec_parse_signal("HUP"), SIGHUP);
    ck_assert_int_eq(exec_parse_signal("STOP"), -1);
    ck_assert(exec_env_name_ok("NODE_ENV"));
    ck_assert(exec_env_name_ok("_x9"));
    ck_assert(!exec_env_name_ok("9x"));
    ck_assert(!exec_env_name_ok("A-B"));
    ck_assert(!exec_env_name_ok("A=B"));
    ck_assert(!exec_env_name_ok(""));
}
END_TEST

START_TEST(test_exec_workspace_alias)
{
    ck_assert_str_eq(tools_workspace_alias("/workspace"), "/");
    ck_assert_str_eq(tools_workspace_alias("/workspace/src/a.js"), "/src/a.js");
    ck_assert_str_eq(tools_workspace_alias("/workspaces/a"), "/workspaces/a");
    ck_assert_str_eq(tools_workspace_alias("/src"), "/src");
    ck_assert_str_eq(tools_workspace_alias("workspace/a"), "workspace/a");
}
END_TEST

static Suite *exec_suite(void)
{
    Suite *s = suite_create("exec");
    TCase *tc = tcase_create("limits");

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_exec_limits_defaults);
    tcase_add_test(tc, test_exec_limits_parse);
    tcase_add_test(tc, test_exec_limits_from_config);
    suite_add_tcase(s, tc);
    tc = tcase_create("argv");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_exec_argv_layout);
    tcase_add_test(tc, test_exec_argv_network_and_root_cwd);
    tcase_add_test(tc, test_exec_argv_root_links);
    suite_add_tcase(s, tc);
    tc = tcase_create("result");
    tcase_add_test(tc, test_exec_text_plain_and_stderr);
    tcase_add_test(tc, test_exec_text_limits);
    tcase_add_test(tc, test_exec_outcome_json);
    suite_add_tcase(s, tc);
    tc = tcase_create("names");
    tcase_add_test(tc, test_exec_names);
    tcase_add_test(tc, test_exec_workspace_alias);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(exec_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
