/* tests/unit/test_registry.c - the registry's config shapes and names (registry_config.c):
 * every shape a user brings, ${env:VAR}, and each bad entry kept with an error that names the
 * file and the key while the others are read; what a message may show of a value taken from
 * ${env:VAR} (registry_redact). Pure: no server is started. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "registry.h"

static struct registry_specs specs;

static const char *fake_env(const char *name)
{
    if (strcmp(name, "GITHUB_TOKEN") == 0)
        return "ghp_secret";
    if (strcmp(name, "EMPTY") == 0)
        return "";
    if (strcmp(name, "INJ") == 0)
        return "a\r\nX-Evil: injected";
    if (strcmp(name, "CTL") == 0)
        return "\x01";
    if (strcmp(name, "SPACE") == 0)
        return "a b";
    if (strcmp(name, "TAB") == 0)
        return "a\tb";
    if (strcmp(name, "TOK") == 0)
        return "s3cret";
    if (strcmp(name, "TOK_LONG") == 0)
        return "s3cret-and-more";
    if (strcmp(name, "HOST") == 0)
        return "internal.example";
    if (strcmp(name, "ONE") == 0)
        return "1";
    return NULL;
}

static void setup(void)
{
    memset(&specs, 0, sizeof(specs));
}

static void teardown(void)
{
    registry_specs_cleanup(&specs);
}

static void add_text(const char *path, const char *text)
{
    struct errinfo err = {0};

    ck_assert_int_eq(registry_specs_add_text(&specs, path, text, fake_env, &err), 0);
}

static const struct registry_spec *named(const char *name)
{
    for (size_t i = 0; i < specs.n; i++)
        if (strcmp(specs.v[i].name, name) == 0)
            return &specs.v[i];
    ck_abort_msg("no spec named %s", name);
    return NULL;
}

START_TEST(test_registry_reads_the_claude_desktop_shape)
{
    const struct registry_spec *fs, *gh;

    add_text("/c.json",
             "{\"mcpServers\": {"
             "\"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"server-fs\", \"/tmp\"]},"
             "\"gh\": {\"command\": \"gh-mcp\", \"env\": {\"GITHUB_TOKEN\": "
             "\"${env:GITHUB_TOKEN}\"}, \"cwd\": \"/srv\"}},"
             "\"globalShortcut\": \"x\"}");
    ck_assert_uint_eq(specs.n, 2);
    fs = named("fs");
    ck_assert_ptr_null(fs->error);
    ck_assert_int_eq(fs->transport, REGISTRY_STDIO);
    ck_assert_str_eq(fs->command, "npx");
    ck_assert_uint_eq(fs->args.n, 3);
    ck_assert_str_eq(fs->args.v[2], "/tmp");
    ck_assert(fs->enabled);
    ck_assert_int_eq(fs->timeout_ms, REGISTRY_TIMEOUT_DEFAULT);
    ck_assert_str_eq(fs->prefix, "fs");
    gh = named("gh");
    ck_assert_uint_eq(gh->env.n, 1);
    ck_assert_str_eq(gh->env.v[0], "GITHUB_TOKEN=ghp_secret");
    ck_assert_str_eq(gh->cwd, "/srv");
}
END_TEST

START_TEST(test_registry_chooses_the_transport_from_type_and_url)
{
    const char *text = "{\"servers\": {"
                       "\"a\": {\"url\": \"https://api.example.com/mcp\"},"
                       "\"b\": {\"url\": \"wss://x.example/ws\"},"
                       "\"c\": {\"url\": \"http://localhost:1/sse\", \"type\": \"sse\"},"
                       "\"d\": {\"url\": \"ws://localhost:2\", \"type\": \"websocket\"},"
                       "\"e\": {\"type\": \"stdio\", \"command\": \"x\"},"
                       "\"f\": {\"url\": \"http://h/mcp\", \"headers\": {\"Authorization\": "
                       "\"Bearer ${env:GITHUB_TOKEN}\"}}}}";

    add_text("/vscode.json", text);
    ck_assert_int_eq(named("a")->transport, REGISTRY_HTTP);
    ck_assert_int_eq(named("b")->transport, REGISTRY_WS);
    ck_assert_int_eq(named("c")->transport, REGISTRY_SSE);
    ck_assert_int_eq(named("d")->transport, REGISTRY_WS);
    ck_assert_int_eq(named("e")->transport, REGISTRY_STDIO);
    ck_assert_str_eq(named("f")->headers.v[0], "Authorization: Bearer ghp_secret");
    for (size_t i = 0; i < specs.n; i++)
        ck_assert_msg(!specs.v[i].error, "%s: %s", specs.v[i].name, specs.v[i].error);
}
END_TEST

START_TEST(test_registry_reads_the_list_form_and_per_server_keys)
{
    struct errinfo err = {0};
    cJSON *v = cJSON_Parse("[{\"name\": \"files\", \"transport\": {\"type\": \"stdio\", "
                           "\"command\": \"srv\", \"args\": [\"--x\"]}, \"enabled\": false, "
                           "\"timeout_ms\": 5000, \"tools\": [\"read\"], \"disabled_tools\": "
                           "[\"write\"], \"prefix\": \"my files!\", \"sandbox\": true},"
                           "{\"name\": \"api\", \"transport\": {\"type\": \"websocket\", "
                           "\"url\": \"ws://127.0.0.1:9/\"}}]");
    const struct registry_spec *f;

    ck_assert_int_eq(registry_specs_add(&specs, "/l.json", "mcpServers", v, fake_env, &err), 0);
    cJSON_Delete(v);
    f = named("files");
    ck_assert_ptr_null(f->error);
    ck_assert(!f->enabled);
    ck_assert(f->sandbox);
    ck_assert_int_eq(f->timeout_ms, 5000);
    ck_assert(f->has_allow);
    ck_assert_str_eq(f->allow.v[0], "read");
    ck_assert_str_eq(f->deny.v[0], "write");
    ck_assert_str_eq(f->prefix, "my_files_");
    ck_assert_int_eq(named("api")->transport, REGISTRY_WS);
    ck_assert(!named("api")->has_allow); /* no "tools": every tool */
}
END_TEST

/* Each bad entry: its error names the file and the key; the good one beside it is fine. */
static const struct {
    const char *entry, *error;
} bad[] = {
    {"{\"url\": \"http://h/\", \"type\": \"carrier-pigeon\"}",
     "/b.json: mcpServers.x.type: unknown type \"carrier-pigeon\"; expected stdio, http, sse or "
     "ws"},
    {"{}", "/b.json: mcpServers.x: needs \"command\" (a stdio server) or \"url\" (a remote one)"},
    {"{\"command\": 7}", "/b.json: mcpServers.x.command: expected a non-empty string, got integer"},
    {"{\"command\": \"c\", \"args\": \"-v\"}",
     "/b.json: mcpServers.x.args: expected an array of strings, got string"},
    {"{\"command\": \"c\", \"env\": {\"T\": \"${env:NOPE}\"}}",
     "/b.json: mcpServers.x.env.T: ${env:NOPE} is not set in runboxd's environment; set it, or "
     "put the value in the file"},
    {"{\"url\": \"ftp://h/\"}",
     "/b.json: mcpServers.x.url: an HTTP server's URL starts with http:// or https://"},
    {"{\"url\": \"http://h/\", \"type\": \"ws\"}",
     "/b.json: mcpServers.x.url: a WebSocket server's URL starts with ws:// or wss://"},
    {"{\"command\": \"c\", \"timeout_ms\": 5}",
     "/b.json: mcpServers.x.timeout_ms: expected a whole number of milliseconds 100-3600000"},
    {"{\"url\": \"http://h/\", \"sandbox\": true}",
     "/b.json: mcpServers.x.sandbox: only a stdio server runs in the sandbox"},
    {"{\"url\": \"http://h/\", \"headers\": {\"X\": \"a\\r\\nInjected: 1\"}}",
     "/b.json: mcpServers.x.headers.X: not a usable header value: it holds a line break or "
     "control character (${env:VAR} replaced), which a header cannot carry"},
    /* Checked once ${env:VAR} is replaced: the raw text is clean, the value is not. */
    {"{\"url\": \"http://h/\", \"headers\": {\"X-Inj\": \"${env:INJ}\"}}",
     "/b.json: mcpServers.x.headers.X-Inj: not a usable header value: it holds a line break or "
     "control character (${env:VAR} replaced), which a header cannot carry"},
    {"{\"url\": \"ws://h/\", \"headers\": {\"X\": \"Bearer ${env:CTL}\"}}",
     "/b.json: mcpServers.x.headers.X: not a usable header value: it holds a line break or "
     "control character (${env:VAR} replaced), which a header cannot carry"},
    {"{\"url\": \"http://h/\", \"headers\": {\"X Bad\": \"v\"}}",
     "/b.json: mcpServers.x.headers.X Bad: not a usable header name (letters, digits and "
     "!#$%&'*+-.^_`|~ only)"},
    {"{\"url\": \"http://h/\", \"headers\": {\"X:Y\": \"v\"}}",
     "/b.json: mcpServers.x.headers.X:Y: not a usable header name (letters, digits and "
     "!#$%&'*+-.^_`|~ only)"},
    {"{\"url\": \"http://h/mcp${env:INJ}\"}",
     "/b.json: mcpServers.x.url: holds a space, line break or control character (${env:VAR} "
     "replaced); write a space as %20"},
    {"{\"url\": \"ws://h/?q=${env:SPACE}\"}",
     "/b.json: mcpServers.x.url: holds a space, line break or control character (${env:VAR} "
     "replaced); write a space as %20"},
    {"\"npx server\"", "/b.json: mcpServers.x: expected an object, got string"},
    {"{\"command\": \"c\", \"args\": [\"--root\", \"${workspaceFolder}\"]}",
     "/b.json: mcpServers.x.args[1]: ${workspaceFolder} is not set in runboxd's environment; set "
     "it, or put the value in the file"},
    {"{\"url\": \"http://h/\", \"headers\": {\"Authorization\": \"Bearer ${input:tok}\"}}",
     "/b.json: mcpServers.x.headers.Authorization: ${input:tok} asks VS Code's user for a value, "
     "which runbox cannot do; put the value in the file, or in runboxd's environment as "
     "${env:VAR}"},
    {"{\"command\": \"c\", \"url\": \"http://h/\"}",
     "/b.json: mcpServers.x: has both \"command\" (a stdio server) and \"url\" (a remote one); "
     "keep one, or say which with \"type\""},
};

START_TEST(test_registry_keeps_a_bad_entry_with_its_error_and_reads_the_rest)
{
    char text[1024];

    snprintf(text, sizeof(text), "{\"mcpServers\": {\"x\": %s, \"ok\": {\"command\": \"c\"}}}",
             bad[_i].entry);
    add_text("/b.json", text);
    ck_assert_uint_eq(specs.n, 2);
    ck_assert_ptr_nonnull(named("x")->error);
    ck_assert_str_eq(named("x")->error, bad[_i].error);
    ck_assert_ptr_null(named("ok")->error);
}
END_TEST

/* A key runbox does not read is a warning naming it and the keys runbox reads; the entry runs.
 * Other clients' own keys (approvals) are let be; "type" decides when both command and url are
 * given. */
/* Claude Code's .mcp.json writes ${VAR} and ${VAR:-default}: both are read as it reads them;
 * what is no variable name stays as written. */
START_TEST(test_registry_reads_claude_codes_variables)
{
    const struct registry_spec *s;

    add_text("/mcp.json", "{\"mcpServers\": {\"x\": {\"command\": \"c\", \"args\": "
                          "[\"${GITHUB_TOKEN}\", \"${NOPE:-fallback}\", \"${ONE:-9}\", "
                          "\"${EMPTY:-x}\", \"${1a}\", \"${a b}\", \"$HOME\", \"${}\", "
                          "\"${NOPE:-}\"]}}}");
    s = named("x");
    ck_assert_msg(!s->error, "%s", s->error);
    ck_assert_uint_eq(s->args.n, 9);
    ck_assert_str_eq(s->args.v[0], "ghp_secret");
    ck_assert_str_eq(s->args.v[1], "fallback");
    ck_assert_str_eq(s->args.v[2], "1");
    ck_assert_str_eq(s->args.v[3], ""); /* set, if empty: the default is for unset */
    ck_assert_str_eq(s->args.v[4], "${1a}");
    ck_assert_str_eq(s->args.v[5], "${a b}");
    ck_assert_str_eq(s->args.v[6], "$HOME");
    ck_assert_str_eq(s->args.v[7], "${}");
    ck_assert_str_eq(s->args.v[8], "");
}
END_TEST

START_TEST(test_registry_an_unknown_key_is_a_warning)
{
    struct errinfo err = {0};
    cJSON *v = cJSON_Parse("[{\"name\": \"l\", \"transport\": {\"type\": \"stdio\", "
                           "\"command\": \"c\", \"argz\": []}}]");

    add_text("/k.json",
             "{\"mcpServers\": {"
             "\"a\": {\"comand\": \"c\", \"command\": \"c\", \"timeout\": 30},"
             "\"b\": {\"command\": \"c\", \"autoApprove\": [\"x\"], \"alwaysAllow\": []},"
             "\"c\": {\"type\": \"stdio\", \"command\": \"c\", \"url\": \"http://h/\"}}}");
    ck_assert_ptr_null(named("a")->error);
    ck_assert_str_eq(named("a")->ignored,
                     "/k.json: mcpServers.a: runbox does not know the keys \"comand\", \"timeout\" "
                     "and ignores them (it reads type, command, args, env, cwd, url, headers, "
                     "enabled, disabled, sandbox, timeout_ms, tools, disabled_tools, prefix)");
    ck_assert_ptr_null(named("b")->ignored);
    ck_assert_ptr_null(named("c")->error);
    ck_assert_int_eq(named("c")->transport, REGISTRY_STDIO);
    ck_assert_int_eq(registry_specs_add(&specs, "/l.json", "mcpServers", v, fake_env, &err), 0);
    cJSON_Delete(v);
    ck_assert_ptr_null(named("l")->error);
    ck_assert_str_eq(named("l")->ignored,
                     "/l.json: mcpServers.l.transport: runbox does not know the key \"argz\" and "
                     "ignores it (it reads type, command, args, env, cwd, url, headers)");
}
END_TEST

START_TEST(test_registry_a_header_value_may_hold_a_tab)
{
    add_text("/t.json", "{\"mcpServers\": {\"x\": {\"url\": \"http://h/\", \"headers\": "
                        "{\"X\": \"${env:TAB}\"}}}}");
    ck_assert_ptr_null(named("x")->error);
    ck_assert_str_eq(named("x")->headers.v[0], "X: a\tb");
}
END_TEST

START_TEST(test_registry_a_second_server_of_one_name_is_an_error)
{
    add_text("/one.json", "{\"mcpServers\": {\"dup\": {\"command\": \"a\"}}}");
    add_text("/two.json", "{\"mcpServers\": {\"dup\": {\"command\": \"b\"}}}");
    ck_assert_uint_eq(specs.n, 2);
    ck_assert_ptr_null(specs.v[0].error);
    ck_assert_str_eq(specs.v[1].error, "/two.json: mcpServers.dup: a second server named \"dup\" "
                                       "(the first is /one.json: mcpServers.dup); names must be "
                                       "unique");
}
END_TEST

START_TEST(test_registry_a_file_that_is_not_a_config_is_one_failed_entry)
{
    add_text("/broken.json", "{\"mcpServers\": {");
    add_text("/other.json", "{\"theme\": \"dark\"}");
    ck_assert_uint_eq(specs.n, 2);
    ck_assert_msg(strncmp(specs.v[0].error, "/broken.json: not a JSON config file", 36) == 0, "%s",
                  specs.v[0].error);
    ck_assert_str_eq(specs.v[1].error, "/other.json: has no \"mcpServers\" or \"servers\" object; "
                                       "no server was read from it");
}
END_TEST

/* What messages may show: the text as written, and registry_redact() for words that echo a value
 * (libcurl's host, a server's stderr). */
START_TEST(test_registry_keeps_the_text_as_written_for_messages)
{
    const struct registry_spec *r, *c;

    add_text("/s.json",
             "{\"mcpServers\": {"
             "\"r\": {\"url\": \"https://${env:HOST}/mcp?api_key=${env:TOK}\", \"headers\": "
             "{\"Authorization\": \"Bearer ${env:TOK_LONG}\"}, \"prefix\": \"p${env:TOK}\"},"
             "\"c\": {\"command\": \"/opt/${env:TOK}/srv\", \"args\": [\"--n\", \"${env:ONE}\"], "
             "\"cwd\": \"/srv/${env:TOK}\"}}}");
    r = named("r");
    ck_assert_ptr_null(r->error);
    ck_assert_str_eq(r->url, "https://internal.example/mcp?api_key=s3cret");
    ck_assert_str_eq(r->shown.url, "https://${env:HOST}/mcp?api_key=${env:TOK}");
    ck_assert_ptr_null(r->shown.command);
    /* The longest first; the prefix (shown by design) is not remembered. */
    ck_assert_uint_eq(r->secrets.n, 3);
    ck_assert_str_eq(r->secrets.v[0], "${env:HOST}internal.example");
    ck_assert_str_eq(r->secrets.v[1], "${env:TOK_LONG}s3cret-and-more");
    ck_assert_str_eq(r->secrets.v[2], "${env:TOK}s3cret");
    c = named("c");
    ck_assert_str_eq(c->command, "/opt/s3cret/srv");
    ck_assert_str_eq(c->shown.command, "/opt/${env:TOK}/srv");
    ck_assert_str_eq(c->shown.cwd, "/srv/${env:TOK}");
    ck_assert_uint_eq(c->secrets.n, 1); /* once, and "1" is too short to be a secret */
}
END_TEST

static const struct {
    const char *in, *out;
    size_t size;
} redacted[] = {
    {"Could not resolve host: internal.example", "Could not resolve host: ${env:HOST}", 256},
    {"token s3cret-and-more, again s3cret-and-more; s3cret",
     "token ${env:TOK_LONG}, again ${env:TOK_LONG}; ${env:TOK}", 256},
    {"port 1 of 1", "port 1 of 1", 256},
    {"no secret here", "no secret here", 256},
    /* Too long once replaced: cut, and no part of the value is left. */
    {"ab s3cret cd", "ab ${env:", 10},
    {"s3cret", "${env:TOK}", 11},
    {"s3cret", "${env:TO", 9},
    /* Cut before the whole value: its start is taken out too, down to REGISTRY_REDACT_MIN. */
    {"Could not resolve host: internal.exa", "Could not resolve host: ${env:HOST}", 256},
    {"host inte", "host ${env:HOST}", 256},
    {"abc s3c", "abc s3c", 256},
};

START_TEST(test_registry_redact_puts_the_variable_back)
{
    char buf[256];

    add_text(
        "/s.json",
        "{\"mcpServers\": {\"r\": {\"url\": \"https://${env:HOST}/?k=${env:TOK}&o=${env:ONE}\", "
        "\"headers\": {\"A\": \"${env:TOK_LONG}\"}}}}");
    snprintf(buf, sizeof(buf), "%s", redacted[_i].in);
    registry_redact(named("r"), buf, redacted[_i].size);
    ck_assert_str_eq(buf, redacted[_i].out);
}
END_TEST

/* A value from Claude Code's ${VAR} is put back as written too; a default is no secret. */
START_TEST(test_registry_redact_knows_claude_codes_variables)
{
    char buf[256] = "GET https://internal.example/?k=s3cret-and-more failed (fallback-host)";

    add_text("/c.json", "{\"mcpServers\": {\"r\": {\"url\": "
                        "\"https://${HOST}/?k=${TOK_LONG}\", \"headers\": {\"X\": "
                        "\"${NOPE:-fallback-host}\"}}}}");
    ck_assert_msg(!named("r")->error, "%s", named("r")->error);
    registry_redact(named("r"), buf, sizeof(buf));
    ck_assert_str_eq(buf, "GET https://${HOST}/?k=${TOK_LONG} failed (fallback-host)");
}
END_TEST

START_TEST(test_registry_served_names_fit_the_strictest_clients)
{
    char buf[REGISTRY_NAME_MAX + 1], again[REGISTRY_NAME_MAX + 1], other[REGISTRY_NAME_MAX + 1];
    const char *long_name = "a_tool_name_that_is_much_too_long_to_fit_after_any_prefix_at_all_x";

    registry_served_name("github", "create_issue", buf, sizeof(buf));
    ck_assert_str_eq(buf, "github__create_issue");
    registry_served_name("my server", "tools/run.v2", buf, sizeof(buf));
    ck_assert_str_eq(buf, "my_server__tools_run_v2");
    registry_served_name("s", long_name, buf, sizeof(buf));
    ck_assert_uint_eq(strlen(buf), REGISTRY_NAME_MAX);
    registry_served_name("s", long_name, again, sizeof(again));
    ck_assert_str_eq(buf, again); /* deterministic */
    registry_served_name("s", "a_tool_name_that_is_much_too_long_to_fit_after_any_prefix_at_all_y",
                         other, sizeof(other));
    ck_assert_str_ne(buf, other); /* the hash tells cut names apart */
    for (const char *p = buf; *p; p++)
        ck_assert(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", *p));
    registry_sanitize("", buf, sizeof(buf));
    ck_assert_str_eq(buf, "_");
    /* A character of several UTF-8 bytes is one '_', as a client counts characters. */
    registry_sanitize("\xc3\xa9t\xc3\xa9", buf, sizeof(buf));
    ck_assert_str_eq(buf, "_t_");
    registry_sanitize("\xf0\x9f\x93\x81 files.v2", buf, sizeof(buf));
    ck_assert_str_eq(buf, "__files_v2");
}
END_TEST

static Suite *registry_suite(void)
{
    Suite *s = suite_create("registry");
    TCase *shapes = tcase_create("shapes"), *errors = tcase_create("errors");
    TCase *names = tcase_create("names"), *shown = tcase_create("shown");

    tcase_add_checked_fixture(shapes, setup, teardown);
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(shapes, test_registry_reads_the_claude_desktop_shape);
    tcase_add_test(shapes, test_registry_chooses_the_transport_from_type_and_url);
    tcase_add_test(shapes, test_registry_reads_the_list_form_and_per_server_keys);
    tcase_add_loop_test(errors, test_registry_keeps_a_bad_entry_with_its_error_and_reads_the_rest,
                        0, sizeof(bad) / sizeof(bad[0]));
    tcase_add_test(errors, test_registry_a_second_server_of_one_name_is_an_error);
    tcase_add_test(errors, test_registry_a_file_that_is_not_a_config_is_one_failed_entry);
    tcase_add_test(errors, test_registry_a_header_value_may_hold_a_tab);
    tcase_add_test(errors, test_registry_an_unknown_key_is_a_warning);
    tcase_add_test(errors, test_registry_reads_claude_codes_variables);
    tcase_add_test(errors, test_registry_redact_knows_claude_codes_variables);
    tcase_add_checked_fixture(shown, setup, teardown);
    tcase_add_test(shown, test_registry_keeps_the_text_as_written_for_messages);
    tcase_add_loop_test(shown, test_registry_redact_puts_the_variable_back, 0,
                        sizeof(redacted) / sizeof(redacted[0]));
    tcase_add_test(names, test_registry_served_names_fit_the_strictest_clients);
    suite_add_tcase(s, shapes);
    suite_add_tcase(s, errors);
    suite_add_tcase(s, shown);
    suite_add_tcase(s, names);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(registry_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
