/* tests/unit/test_setup.c - `runbox setup`'s pure parts: the clients' paths on the three
 * systems, the JSON splice editor (comments, trailing commas, replacing, nesting, refusals), the
 * Codex TOML editor and the diff. (tests/e2e/setup.test.mjs checks the results with each
 * format's own parser.) */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "setup.h"

static const char *const K2[] = {"mcpServers", "runbox"};

static cJSON *entry(void)
{
    return cJSON_Parse("{\"command\":\"/usr/bin/runbox\",\"args\":[]}");
}

static char *put(const char *text, struct errinfo *err)
{
    cJSON *e = entry();
    char *out = setup_json_put(text, strlen(text), K2, 2, e, err);

    cJSON_Delete(e);
    return out;
}

/* ---- paths ---- */

START_TEST(test_setup_paths_per_system)
{
    static const struct {
        const char *client;
        enum setup_os os;
        const char *want;
    } rows[] = {
        {"claude-desktop", SETUP_MACOS,
         "/Users/u/Library/Application Support/Claude/claude_desktop_config.json"},
        {"claude-desktop", SETUP_WINDOWS,
         "C:\\Users\\u\\AppData\\Roaming\\Claude\\claude_desktop_config.json"},
        {"claude-desktop", SETUP_LINUX, "/home/u/.config/Claude/claude_desktop_config.json"},
        {"vscode", SETUP_LINUX, "/home/u/.config/Code/User/mcp.json"},
        {"vscode", SETUP_MACOS, "/Users/u/Library/Application Support/Code/User/mcp.json"},
        {"vscode", SETUP_WINDOWS, "C:\\Users\\u\\AppData\\Roaming\\Code\\User\\mcp.json"},
        {"cursor", SETUP_WINDOWS, "C:\\Users\\u\\.cursor\\mcp.json"},
        {"zed", SETUP_MACOS, "/Users/u/.config/zed/settings.json"},
        {"zed", SETUP_WINDOWS, "C:\\Users\\u\\AppData\\Roaming\\Zed\\settings.json"},
        {"windsurf", SETUP_LINUX, "/home/u/.codeium/windsurf/mcp_config.json"},
        {"codex", SETUP_LINUX, "/home/u/.codex/config.toml"},
        {"opencode", SETUP_LINUX, "/home/u/.config/opencode/opencode.json"},
        {"gemini-cli", SETUP_WINDOWS, "C:\\Users\\u\\.gemini\\settings.json"},
        {"continue", SETUP_LINUX, "/home/u/.continue/mcpServers/runbox.json"},
        {"claude-code", SETUP_MACOS, "/Users/u/.claude.json"},
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct setup_env env = {0};
        char out[SETUP_PATH_MAX];
        struct errinfo err = {0};

        env.home = rows[i].os == SETUP_WINDOWS ? "C:/Users/u"
                   : rows[i].os == SETUP_MACOS ? "/Users/u"
                                               : "/home/u";
        if (rows[i].os == SETUP_WINDOWS)
            env.appdata = "C:/Users/u/AppData/Roaming";
        ck_assert_int_eq(setup_config_path(setup_client_find(rows[i].client), rows[i].os, &env, out,
                                           sizeof(out), &err),
                         0);
        ck_assert_str_eq(out, rows[i].want);
    }
}
END_TEST

START_TEST(test_setup_paths_follow_the_environment)
{
    struct setup_env env = {.home = "/home/u", .xdg_config_home = "/x/cfg", .codex_home = "/c"};
    char out[SETUP_PATH_MAX];
    struct errinfo err = {0};

    setup_config_path(setup_client_find("zed"), SETUP_LINUX, &env, out, sizeof(out), &err);
    ck_assert_str_eq(out, "/x/cfg/zed/settings.json");
    setup_config_path(setup_client_find("codex"), SETUP_LINUX, &env, out, sizeof(out), &err);
    ck_assert_str_eq(out, "/c/config.toml");
    env.xdg_config_home = "relative"; /* XDG: ignored */
    setup_config_path(setup_client_find("zed"), SETUP_LINUX, &env, out, sizeof(out), &err);
    ck_assert_str_eq(out, "/home/u/.config/zed/settings.json");
    env.home = NULL;
    ck_assert_int_eq(
        setup_config_path(setup_client_find("cursor"), SETUP_LINUX, &env, out, sizeof(out), &err),
        -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "HOME is not set"));
}
END_TEST

/* ---- JSON ---- */

START_TEST(test_setup_json_new_file)
{
    struct errinfo err = {0};
    char *out = put("  \n", &err);

    ck_assert_str_eq(out, "{\n  \"mcpServers\": {\n    \"runbox\": {\n      \"command\": "
                          "\"/usr/bin/runbox\",\n      \"args\": []\n    }\n  }\n}\n");
    free(out);
}
END_TEST

START_TEST(test_setup_json_keeps_everything_else)
{
    static const char in[] = "{\n"
                             "    // my servers\n"
                             "    \"theme\": \"dark\", /* why */\n"
                             "    \"mcpServers\": {\n"
                             "        \"other\": {\"command\": \"x\"} // keep\n"
                             "    }\n"
                             "}\n";
    struct errinfo err = {0};
    char *out = put(in, &err);

    ck_assert_ptr_nonnull(out);
    ck_assert_str_eq(out, "{\n"
                          "    // my servers\n"
                          "    \"theme\": \"dark\", /* why */\n"
                          "    \"mcpServers\": {\n"
                          "        \"other\": {\"command\": \"x\"}, // keep\n"
                          "        \"runbox\": {\n"
                          "            \"command\": \"/usr/bin/runbox\",\n"
                          "            \"args\": []\n"
                          "        }\n"
                          "    }\n"
                          "}\n");
    free(out);
}
END_TEST

START_TEST(test_setup_json_replaces_and_is_idempotent)
{
    static const char in[] = "{\"mcpServers\": {\"runbox\": {\"command\": \"/old\"}, \"b\": 1}}";
    struct errinfo err = {0};
    char *once = put(in, &err), *twice;

    ck_assert_ptr_nonnull(strstr(once, "/usr/bin/runbox"));
    ck_assert_ptr_null(strstr(once, "/old"));
    ck_assert_ptr_nonnull(strstr(once, "\"b\": 1}}"));
    twice = put(once, &err);
    ck_assert_str_eq(once, twice);
    free(once);
    free(twice);
}
END_TEST

START_TEST(test_setup_json_trailing_comma_and_empty_object)
{
    struct errinfo err = {0};
    char *out = put("{\n  \"a\": 1,\n}", &err);

    ck_assert_ptr_nonnull(strstr(out, "\"a\": 1,\n  \"mcpServers\": {"));
    ck_assert_ptr_nonnull(strstr(out, "},\n}")); /* the file's style: a trailing comma */
    free(out);
    out = put("{\"mcpServers\": {}}", &err);
    ck_assert_str_eq(out, "{\"mcpServers\": {\n  \"runbox\": {\n    \"command\": "
                          "\"/usr/bin/runbox\",\n    \"args\": []\n  }\n}}");
    free(out);
}
END_TEST

START_TEST(test_setup_json_refusals_name_the_place)
{
    static const struct {
        const char *text, *want;
    } rows[] = {
        {"{\"mcpServers\": 3}", "line 1, column 16: mcpServers is not an object"},
        {"{\n\"a\": [1,", "line 2, column 9: an array is not closed"},
        {"[1]", "not a JSON object"},
        {"{\"a\": 1} x", "something follows"},
        {"{\"a\": /* open", "comment is not closed"},
        {"{\"a\": \"x\ny\"}", "past the end of its line"},
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct errinfo err = {0};

        ck_assert_ptr_null(put(rows[i].text, &err));
        ck_assert_msg(strstr(err.msg, rows[i].want), "%s -> %s", rows[i].text, err.msg);
    }
}
END_TEST

START_TEST(test_setup_json_shapes)
{
    const char *keys[4];
    struct setup_entry e = {.name = "runbox", .command = "/r"};
    const char *ek[] = {"DAEMON_URL"}, *ev[] = {"http://127.0.0.1:7800"};
    cJSON *j;
    char *t;

    j = setup_entry_json(setup_client_find("opencode"), &e);
    t = cJSON_PrintUnformatted(j);
    ck_assert_str_eq(t, "{\"type\":\"local\",\"command\":[\"/r\"],\"enabled\":true}");
    cJSON_free(t);
    cJSON_Delete(j);
    e.env_keys = ek;
    e.env_values = ev;
    e.nenv = 1;
    j = setup_entry_json(setup_client_find("vscode"), &e);
    t = cJSON_PrintUnformatted(j);
    ck_assert_str_eq(t, "{\"type\":\"stdio\",\"command\":\"/r\",\"args\":[],\"env\":{"
                        "\"DAEMON_URL\":\"http://127.0.0.1:7800\"}}");
    cJSON_free(t);
    cJSON_Delete(j);
    ck_assert_uint_eq(setup_client_json_path(setup_client_find("zed"), "", 0, "runbox", keys), 2);
    ck_assert_str_eq(keys[0], "context_servers");
    /* opencode's newer nesting is followed when the file has it. */
    ck_assert_uint_eq(setup_client_json_path(setup_client_find("opencode"),
                                             "{\"mcp\":{\"servers\":{}}}", 22, "runbox", keys),
                      3);
    ck_assert_str_eq(keys[1], "servers");
    ck_assert_uint_eq(
        setup_client_json_path(setup_client_find("opencode"), "{\"mcp\":{}}", 10, "runbox", keys),
        2);
}
END_TEST

START_TEST(test_setup_cli_hints)
{
    struct setup_entry e = {.name = "runbox", .command = "/opt/my tools/runbox"};
    char *h = setup_client_cli_hint(setup_client_find("claude-code"), &e);

    ck_assert_str_eq(h, "claude mcp add --scope user runbox -- '/opt/my tools/runbox'");
    free(h);
    ck_assert_ptr_null(setup_client_cli_hint(setup_client_find("cursor"), &e));
}
END_TEST

/* ---- TOML ---- */

START_TEST(test_setup_toml_appends_then_replaces)
{
    static const char in[] = "# mine\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"y\"\n";
    const char *ek[] = {"A"}, *ev[] = {"1 \"q\""};
    struct setup_entry e = {
        .name = "runbox", .command = "/r", .env_keys = ek, .env_values = ev, .nenv = 1};
    struct errinfo err = {0};
    char *once = setup_toml_put(in, strlen(in), &e, &err), *again;

    ck_assert_str_eq(once, "# mine\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"y\"\n\n"
                           "[mcp_servers.runbox]\ncommand = \"/r\"\nargs = []\n\n"
                           "[mcp_servers.runbox.env]\nA = \"1 \\\"q\\\"\"\n");
    e.nenv = 0;
    again = setup_toml_put(once, strlen(once), &e, &err);
    ck_assert_str_eq(again, "# mine\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"y\"\n\n"
                            "[mcp_servers.runbox]\ncommand = \"/r\"\nargs = []\n");
    free(once);
    free(again);
}
END_TEST

START_TEST(test_setup_toml_block_in_the_middle)
{
    static const char in[] = "[mcp_servers.runbox]\ncommand = \"/old\"\n\n[mcp_servers.runbox.env]"
                             "\nX = \"1\"\n\n[profiles.p]\nmodel = \"m\"\n";
    struct setup_entry e = {.name = "runbox", .command = "/r"};
    struct errinfo err = {0};
    char *out = setup_toml_put(in, strlen(in), &e, &err);

    ck_assert_str_eq(out, "[mcp_servers.runbox]\ncommand = \"/r\"\nargs = []\n\n"
                          "[profiles.p]\nmodel = \"m\"\n");
    free(out);
}
END_TEST

START_TEST(test_setup_toml_refuses_other_definitions)
{
    static const char *const bad[] = {"mcp_servers.runbox.command = \"x\"\n",
                                      "mcp_servers = { runbox = { command = \"x\" } }\n",
                                      "[mcp_servers]\nrunbox = { command = \"x\" }\n"};
    struct setup_entry e = {.name = "runbox", .command = "/r"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct errinfo err = {0};

        ck_assert_ptr_null(setup_toml_put(bad[i], strlen(bad[i]), &e, &err));
        ck_assert_ptr_nonnull(strstr(err.msg, "by hand"));
    }
}
END_TEST

START_TEST(test_setup_toml_headers_in_strings_are_text)
{
    static const char in[] = "note = \"\"\"\n[mcp_servers.runbox]\n\"\"\"\n";
    struct setup_entry e = {.name = "runbox", .command = "/r"};
    struct errinfo err = {0};
    char *out = setup_toml_put(in, strlen(in), &e, &err);

    ck_assert_ptr_nonnull(out);
    ck_assert_ptr_nonnull(strstr(out, "note = \"\"\"\n[mcp_servers.runbox]\n\"\"\"\n\n"
                                      "[mcp_servers.runbox]\ncommand"));
    free(out);
}
END_TEST

START_TEST(test_setup_diff_shows_the_change)
{
    static const char a[] = "1\n2\n3\n4\n5\n6\n7\n", b[] = "1\n2\n3\n4\nnew\n5\n6\n7\n";
    char *d = setup_diff(a, strlen(a), b, strlen(b));

    ck_assert_str_eq(d, " 2\n 3\n 4\n+new\n 5\n 6\n 7\n");
    free(d);
}
END_TEST

static Suite *setup_suite(void)
{
    Suite *s = suite_create("setup");
    TCase *paths = tcase_create("paths"), *json = tcase_create("json"),
          *toml = tcase_create("toml");

    tcase_add_test(paths, test_setup_paths_per_system);
    tcase_add_test(paths, test_setup_paths_follow_the_environment);
    tcase_add_test(json, test_setup_json_new_file);
    tcase_add_test(json, test_setup_json_keeps_everything_else);
    tcase_add_test(json, test_setup_json_replaces_and_is_idempotent);
    tcase_add_test(json, test_setup_json_trailing_comma_and_empty_object);
    tcase_add_test(json, test_setup_json_refusals_name_the_place);
    tcase_add_test(json, test_setup_json_shapes);
    tcase_add_test(json, test_setup_cli_hints);
    tcase_add_test(toml, test_setup_toml_appends_then_replaces);
    tcase_add_test(toml, test_setup_toml_block_in_the_middle);
    tcase_add_test(toml, test_setup_toml_refuses_other_definitions);
    tcase_add_test(toml, test_setup_toml_headers_in_strings_are_text);
    tcase_add_test(toml, test_setup_diff_shows_the_change);
    suite_add_tcase(s, paths);
    suite_add_tcase(s, json);
    suite_add_tcase(s, toml);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(setup_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
