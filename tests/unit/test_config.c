/* tests/unit/test_config.c - runboxd settings: defaults, the file, the environment, the flags,
 * their precedence and their error messages. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct config cfg;
static struct errinfo err;
static const struct config_env env_home = {.home = "/home/u"};

static void setup(void)
{
    memset(&err, 0, sizeof(err));
    ck_assert_int_eq(config_init(&cfg, &env_home, &err), 0);
}

static void teardown(void)
{
    config_cleanup(&cfg);
}

/* ---- defaults ---- */

START_TEST(test_config_defaults)
{
    ck_assert_int_eq(cfg.port, 7766);
    ck_assert_str_eq(cfg.bind, "127.0.0.1");
    ck_assert_str_eq(cfg.workspace, "/home/u/.local/share/runbox/workspace");
    ck_assert_str_eq(cfg.config_file, "/home/u/.config/runbox/config.json");
    ck_assert(cfg.fsync);
    ck_assert(cfg.cgroup);
    ck_assert(!cfg.allow_network);
    ck_assert_int_eq(cfg.log_level, LOG_WARN);
    ck_assert_ptr_null(cfg.token);
    ck_assert_ptr_null(cfg.user);
    ck_assert_int_eq(cfg.workspace_quota_mb, -1); /* the workspace's kind decides (quota.h) */
}
END_TEST

START_TEST(test_config_defaults_follow_xdg)
{
    struct config c;
    struct config_env env = {
        .home = "/home/u", .xdg_data_home = "/data", .xdg_config_home = "/conf"};

    ck_assert_int_eq(config_init(&c, &env, NULL), 0);
    ck_assert_str_eq(c.workspace, "/data/runbox/workspace");
    ck_assert_str_eq(c.config_file, "/conf/runbox/config.json");
    config_cleanup(&c);
    /* A relative XDG value is ignored, as the XDG spec says. */
    env.xdg_data_home = "rel";
    ck_assert_int_eq(config_init(&c, &env, NULL), 0);
    ck_assert_str_eq(c.workspace, "/home/u/.local/share/runbox/workspace");
    config_cleanup(&c);
}
END_TEST

START_TEST(test_config_no_home_needs_workspace)
{
    struct config c;
    struct config_env env = {0};

    ck_assert_int_eq(config_init(&c, &env, NULL), 0);
    ck_assert_ptr_null(c.workspace);
    ck_assert_int_eq(config_validate(&c, false, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "--workspace"));
    config_cleanup(&c);
}
END_TEST

/* ---- the file ---- */

START_TEST(test_config_file_sets_every_key)
{
    const char *text = "{\"port\": 8000, \"bind\": \"::1\", \"workspace\": \"/w\", "
                       "\"allow_network\": true, \"log_level\": \"debug\", \"user\": \"bob\", "
                       "\"fsync\": false, \"cgroup\": false, \"token_file\": \"~/tok\", "
                       "\"workspace_quota_mb\": 512}";

    ck_assert_int_eq(config_apply_file(&cfg, "/c.json", text, &err), 0);
    ck_assert_int_eq(cfg.port, 8000);
    ck_assert_str_eq(cfg.bind, "::1");
    ck_assert_str_eq(cfg.workspace, "/w");
    ck_assert(cfg.allow_network);
    ck_assert_int_eq(cfg.log_level, LOG_DEBUG);
    ck_assert_str_eq(cfg.user, "bob");
    ck_assert(!cfg.fsync);
    ck_assert(!cfg.cgroup);
    ck_assert_str_eq(cfg.token_file, "/home/u/tok"); /* "~/" expanded */
    ck_assert_int_eq(cfg.workspace_quota_mb, 512);
}
END_TEST

static const struct {
    const char *text;
    const char *want[3]; /* substrings the message must hold */
} bad_files[] = {
    {"{\"prot\": 1}",
     {"/c.json", "unknown key \"prot\"; did you mean \"port\"?", "--help lists every key"}},
    {"{\"zzzzzz\": 1}",
     {"/c.json", "unknown key \"zzzzzz\" (runboxd --help lists every key)", "zzzzzz"}},
    {"{\"port\": \"80\"}", {"/c.json", "\"port\"", "expected an integer 0-65535, got string"}},
    {"{\"port\": 65536}", {"/c.json", "\"port\"", "got 65536"}},
    {"{\"port\": 1.5}", {"/c.json", "\"port\"", "integer"}},
    {"{\"fsync\": \"no\"}", {"/c.json", "\"fsync\"", "expected true or false, got string"}},
    {"{\"cgroup\": 0}", {"/c.json", "\"cgroup\"", "expected true or false, got number"}},
    {"{\"bind\": \"example.com\"}", {"/c.json", "\"bind\"", "numeric IPv4 or IPv6"}},
    {"{\"log_level\": \"loud\"}", {"/c.json", "\"log_level\"", "error, warn, info"}},
    {"{\"workspace\": 3}", {"/c.json", "\"workspace\"", "expected a string, got number"}},
    {"{\"user\": \"\"}", {"/c.json", "\"user\"", "empty"}},
    {"{\"port\": 1,", {"/c.json", "invalid JSON at byte", "port"}},
    {"[]", {"/c.json", "expected a JSON object", "got array"}},
    {"{\"workspace_quota_mb\": -1}", {"/c.json", "\"workspace_quota_mb\"", "whole number 0-"}},
    {"{\"workspace_quota_mb\": \"1G\"}", {"/c.json", "\"workspace_quota_mb\"", "a whole number"}},
};

START_TEST(test_config_file_errors_name_file_key_and_rule)
{
    ck_assert_int_eq(config_apply_file(&cfg, "/c.json", bad_files[_i].text, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    for (int k = 0; k < 3; k++)
        ck_assert_msg(strstr(err.msg, bad_files[_i].want[k]), "\"%s\" lacks \"%s\"", err.msg,
                      bad_files[_i].want[k]);
}
END_TEST

/* ---- the environment and the flags ---- */

START_TEST(test_config_env_log_and_token)
{
    struct config_env env = {.runbox_log = "info", .runbox_token = "tok"};

    ck_assert_int_eq(config_apply_file(&cfg, "/c.json", "{\"token_file\": \"/t\"}", &err), 0);
    ck_assert_int_eq(config_apply_env(&cfg, &env, &err), 0);
    ck_assert_int_eq(cfg.log_level, LOG_INFO);
    ck_assert_str_eq(cfg.token, "tok");
    ck_assert_ptr_null(cfg.token_file); /* the environment beats the file */
    env.runbox_log = "shouting";        /* not a level: ignored (log_init warned) */
    ck_assert_int_eq(config_apply_env(&cfg, &env, &err), 0);
    ck_assert_int_eq(cfg.log_level, LOG_INFO);
}
END_TEST

START_TEST(test_config_args_forms)
{
    char *argv[] = {
        "runboxd",  "--port",          "0",           "--bind=localhost",       "--workspace",
        ":memory:", "--allow-network", "--no-fsync",  "--log-level=trace",      "--user",
        "u",        "--version",       "--no-cgroup", "--workspace-quota-mb=0", NULL};

    ck_assert_int_eq(config_apply_args(&cfg, 14, argv, &err), 0);
    ck_assert(!cfg.cgroup);
    ck_assert_int_eq(cfg.workspace_quota_mb, 0);
    ck_assert_int_eq(cfg.port, 0);
    ck_assert_str_eq(cfg.bind, "127.0.0.1");
    ck_assert_str_eq(cfg.workspace, ":memory:");
    ck_assert(cfg.allow_network);
    ck_assert(!cfg.fsync);
    ck_assert_int_eq(cfg.log_level, LOG_TRACE);
    ck_assert_str_eq(cfg.user, "u");
    ck_assert(cfg.show_version);
    ck_assert(!cfg.show_help);
}
END_TEST

static const struct {
    int argc;
    char *argv[4];
    const char *want;
} bad_args[] = {
    {3, {"runboxd", "--port", "x"}, "--port: expected a port number 0-65535"},
    {3, {"runboxd", "--port", "-1"}, "--port"},
    {2, {"runboxd", "--port=99999"}, "got \"99999\""},
    {2, {"runboxd", "--port"}, "--port needs a value"},
    {2, {"runboxd", "--verbose"}, "unknown option \"--verbose\""},
    {2, {"runboxd", "--no-fsync=1"}, "--no-fsync takes no value"},
    {2, {"runboxd", "--no-cgroup=yes"}, "--no-cgroup takes no value"},
    {3, {"runboxd", "--bind", "1.2.3"}, "--bind"},
    {3, {"runboxd", "--workspace", ""}, "--workspace: expected a directory or :memory:"},
    {2, {"runboxd", "port"}, "unknown option \"port\""},
    {3, {"runboxd", "--workspace-quota-mb", "lots"}, "--workspace-quota-mb: expected a whole"},
};

START_TEST(test_config_args_errors)
{
    ck_assert_int_eq(config_apply_args(&cfg, bad_args[_i].argc, bad_args[_i].argv, &err), -1);
    ck_assert_msg(strstr(err.msg, bad_args[_i].want), "\"%s\" lacks \"%s\"", err.msg,
                  bad_args[_i].want);
}
END_TEST

START_TEST(test_config_token_file_flag_beats_env)
{
    char *argv[] = {"runboxd", "--token-file", "/tf", NULL};
    struct config_env env = {.runbox_token = "envtok"};

    ck_assert_int_eq(config_apply_env(&cfg, &env, &err), 0);
    ck_assert_int_eq(config_apply_args(&cfg, 3, argv, &err), 0);
    ck_assert_ptr_null(cfg.token);
    ck_assert_str_eq(cfg.token_file, "/tf");
}
END_TEST

/* ---- the whole sequence ---- */

static char dir[64];

static void file_setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/test_config.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void file_teardown(void)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/c.json", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/tok", dir);
    unlink(path);
    rmdir(dir);
}

static void write_text(const char *name, const char *text)
{
    char path[128];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

START_TEST(test_config_load_precedence)
{
    char path[128];
    char *argv[] = {"runboxd", "--config", path, "--port", "9", NULL};
    struct config c;
    struct config_env env = {.home = "/h", .runbox_log = "debug"};

    snprintf(path, sizeof(path), "%s/c.json", dir);
    write_text("c.json", "{\"port\": 8, \"log_level\": \"error\", \"bind\": \"::1\"}");
    ck_assert_int_eq(config_load(&c, 5, argv, &env, &err), 0);
    ck_assert_int_eq(c.port, 9);              /* flag > file */
    ck_assert_int_eq(c.log_level, LOG_DEBUG); /* env > file */
    ck_assert_str_eq(c.bind, "::1");          /* file > default */
    ck_assert_str_eq(c.config_file, path);
    config_cleanup(&c);
}
END_TEST

START_TEST(test_config_load_missing_files)
{
    char path[128], xdg[128];
    char *argv[] = {"runboxd", "--config", path, NULL};
    struct config c;
    struct config_env env = {.home = "/h", .xdg_config_home = xdg};

    /* The default file may be missing ... */
    snprintf(xdg, sizeof(xdg), "%s/none", dir);
    ck_assert_int_eq(config_load(&c, 1, argv, &env, &err), 0);
    ck_assert_ptr_null(c.config_file);
    config_cleanup(&c);
    /* ... a named one may not. */
    snprintf(path, sizeof(path), "%s/absent.json", dir);
    ck_assert_int_eq(config_load(&c, 3, argv, &env, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "absent.json"));
    config_cleanup(&c);
}
END_TEST

START_TEST(test_config_read_token)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/tok", dir);
    write_text("tok", "abc123 \r\n\n");
    cfg.token_file = strdup(path);
    ck_assert_int_eq(config_read_token(&cfg, &err), 0);
    ck_assert_str_eq(cfg.token, "abc123");
    write_text("tok", "\n");
    ck_assert_int_eq(config_read_token(&cfg, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "empty"));
}
END_TEST

/* ---- validation ---- */

START_TEST(test_config_validate_bind_needs_token)
{
    snprintf(cfg.bind, sizeof(cfg.bind), "0.0.0.0");
    ck_assert_int_eq(config_validate(&cfg, false, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "token"));
    ck_assert_int_eq(config_validate(&cfg, true, NULL), 0);
    snprintf(cfg.bind, sizeof(cfg.bind), "127.0.0.2");
    ck_assert_int_eq(config_validate(&cfg, false, NULL), 0);
}
END_TEST

START_TEST(test_config_is_loopback)
{
    ck_assert(config_is_loopback("127.0.0.1"));
    ck_assert(config_is_loopback("127.1.2.3"));
    ck_assert(config_is_loopback("::1"));
    ck_assert(!config_is_loopback("0.0.0.0"));
    ck_assert(!config_is_loopback("::"));
    ck_assert(!config_is_loopback("10.0.0.1"));
    ck_assert(!config_is_loopback("localhost")); /* numeric only; the setter maps the name */
}
END_TEST

START_TEST(test_config_usage_lists_every_flag)
{
    static const char *const flags[] = {
        "--port",          "--bind",         "--workspace", "--config",
        "--allow-network", "--log-level",    "--user",      "--no-fsync",
        "--token-file",    "--version",      "--help",      "--no-cgroup",
        "--network",       "--allow-domain", "--cache-dir", "--workspace-quota-mb"};

    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
        ck_assert_ptr_nonnull(strstr(config_usage(), flags[i]));
}
END_TEST

START_TEST(test_config_network_flags_and_file)
{
    char *argv[] = {"runboxd",   "--allow-domain", "example.com", "--allow-domain=*.corp.test:8443",
                    "--network", "none",           "--cache-dir", "/c"};

    ck_assert_int_eq(cfg.net.mode, NETPOLICY_PROXY);
    ck_assert_int_eq(config_apply_file(&cfg, "c.json",
                                       "{\"network\": {\"allow\": [\"pkg.test\"], \"mode\": "
                                       "\"full\"}, \"cache_dir\": \"/k\"}",
                                       &err),
                     0);
    ck_assert_int_eq(cfg.net.mode, NETPOLICY_FULL);
    ck_assert(cfg.allow_network);
    ck_assert_str_eq(cfg.cache_dir, "/k");
    ck_assert_int_eq(config_apply_args(&cfg, 8, argv, &err), 0);
    ck_assert_int_eq(cfg.net.mode, NETPOLICY_NONE);
    ck_assert(!cfg.allow_network);
    ck_assert_uint_eq(cfg.net.n, 3);
    ck_assert_str_eq(cfg.net.rules[0].text, "pkg.test");
    ck_assert_int_eq(cfg.net.rules[0].origin, NETPOLICY_FROM_CONFIG);
    ck_assert_str_eq(cfg.net.rules[2].text, "*.corp.test:8443");
    ck_assert_int_eq(cfg.net.rules[2].origin, NETPOLICY_FROM_FLAG);
    ck_assert_str_eq(cfg.cache_dir, "/c");
}
END_TEST

START_TEST(test_config_network_errors_name_the_entry)
{
    char *argv[] = {"runboxd", "--allow-domain", "https://example.com/"};
    char *mode[] = {"runboxd", "--network", "on"};

    ck_assert_int_eq(config_apply_args(&cfg, 3, argv, &err), -1);
    ck_assert_str_eq(err.msg, "--allow-domain: invalid allow-list entry \"https://example.com/\": "
                              "give a host, not a URL; expected a host name (example.com), "
                              "*.domain, *, or an IP address, each with an optional :port "
                              "(1-65535)");
    errinfo_clear(&err);
    ck_assert_int_eq(config_apply_args(&cfg, 3, mode, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "--network: expected proxy"));
    errinfo_clear(&err);
    ck_assert_int_eq(
        config_apply_file(&cfg, "c.json", "{\"network\": {\"allow\": [\"ok.test\", 7]}}", &err),
        -1);
    ck_assert_str_eq(err.msg,
                     "c.json: network.allow[1]: expected a string (a host name); got number");
    errinfo_clear(&err);
    ck_assert_int_eq(
        config_apply_file(&cfg, "c.json", "{\"network\": {\"allow\": [\"a b\"]}}", &err), -1);
    ck_assert_ptr_nonnull(
        strstr(err.msg, "c.json: network.allow[0]: invalid allow-list entry \"a b\""));
    errinfo_clear(&err);
    ck_assert_int_eq(config_apply_file(&cfg, "c.json", "{\"network\": {\"alow\": []}}", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown key \"network.alow\""));
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("defaults");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_config_defaults);
    tcase_add_test(tc, test_config_defaults_follow_xdg);
    tcase_add_test(tc, test_config_no_home_needs_workspace);
    suite_add_tcase(s, tc);

    tc = tcase_create("file");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_config_file_sets_every_key);
    tcase_add_loop_test(tc, test_config_file_errors_name_file_key_and_rule, 0,
                        sizeof(bad_files) / sizeof(bad_files[0]));
    suite_add_tcase(s, tc);

    tc = tcase_create("env_and_args");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_config_env_log_and_token);
    tcase_add_test(tc, test_config_args_forms);
    tcase_add_loop_test(tc, test_config_args_errors, 0, sizeof(bad_args) / sizeof(bad_args[0]));
    tcase_add_test(tc, test_config_token_file_flag_beats_env);
    suite_add_tcase(s, tc);

    tc = tcase_create("load");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_checked_fixture(tc, file_setup, file_teardown);
    tcase_add_test(tc, test_config_load_precedence);
    tcase_add_test(tc, test_config_load_missing_files);
    tcase_add_test(tc, test_config_read_token);
    suite_add_tcase(s, tc);

    tc = tcase_create("validate");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_config_validate_bind_needs_token);
    tcase_add_test(tc, test_config_is_loopback);
    tcase_add_test(tc, test_config_usage_lists_every_flag);
    tcase_add_test(tc, test_config_network_flags_and_file);
    tcase_add_test(tc, test_config_network_errors_name_the_entry);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
