/* tests/unit/test_cli.c - the pure parts of runbox's subcommands: DAEMON_URL parsing, the SSE
 * parser, arguments from the command line, the validator's joined messages, durations. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cli_int.h"

/* ---- DAEMON_URL ---- */

START_TEST(test_cli_target_parses_http_urls)
{
    struct cli_target t;
    struct errinfo err = {0};

    ck_assert_int_eq(cli_target_parse(&t, "http://127.0.0.1:7766", "tok", &err), 0);
    ck_assert_str_eq(t.host, "127.0.0.1");
    ck_assert_int_eq(t.port, 7766);
    ck_assert_str_eq(t.hostport, "127.0.0.1:7766");
    ck_assert_str_eq(t.token, "tok");
    ck_assert_int_eq(cli_target_parse(&t, "http://localhost:8000/", NULL, &err), 0);
    ck_assert_str_eq(t.base_url, "http://localhost:8000");
    ck_assert_ptr_null(t.token);
    ck_assert_int_eq(cli_target_parse(&t, "http://[::1]:9000", "", &err), 0);
    ck_assert_str_eq(t.host, "::1");
    ck_assert_str_eq(t.hostport, "[::1]:9000");
    ck_assert_ptr_null(t.token);
    ck_assert_int_eq(cli_target_parse(&t, "http://example", NULL, &err), 0);
    ck_assert_int_eq(t.port, 80);
}
END_TEST

START_TEST(test_cli_target_refuses_what_it_cannot_use)
{
    static const char *const bad[] = {
        "https://127.0.0.1:7766", "127.0.0.1:7766", "http://:7766",       "http://h:0",
        "http://h:70000",         "http://h:12x",   "http://h:7766/path", "http://[::1"};
    struct cli_target t;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct errinfo err = {0};

        ck_assert_msg(cli_target_parse(&t, bad[i], NULL, &err) == -1, "%s", bad[i]);
        ck_assert_ptr_nonnull(strstr(err.msg, "DAEMON_URL="));
    }
}
END_TEST

/* ---- SSE ---- */

struct seen {
    int n;
    char event[8][32], id[8][32], data[8][64];
    int stop_after;
};

static int on_ev(void *ctx, const struct cli_sse_event *ev)
{
    struct seen *s = ctx;

    if (s->n < 8) {
        snprintf(s->event[s->n], 32, "%s", ev->event);
        snprintf(s->id[s->n], 32, "%s", ev->id);
        snprintf(s->data[s->n], 64, "%.*s", (int)ev->data_len, ev->data);
    }
    s->n++;
    return s->stop_after && s->n >= s->stop_after;
}

START_TEST(test_cli_sse_events_split_anywhere)
{
    static const char stream[] = ": keepalive\n\nevent: console\nid: 7\ndata: {\"a\":1}\n\n"
                                 "data: one\r\ndata:two\r\n\r\n"
                                 "event: ready\ndata: {}\n\n";
    size_t len = sizeof(stream) - 1;

    /* Every split point gives the same events: the parser keeps state between feeds. */
    for (size_t cut = 0; cut <= len; cut++) {
        struct seen s = {0};
        struct cli_sse p;
        struct errinfo err = {0};

        cli_sse_init(&p, on_ev, &s);
        ck_assert_int_eq(cli_sse_feed(&p, stream, cut, &err), 0);
        ck_assert_int_eq(cli_sse_feed(&p, stream + cut, len - cut, &err), 0);
        ck_assert_int_eq(s.n, 3);
        ck_assert_str_eq(s.event[0], "console");
        ck_assert_str_eq(s.id[0], "7");
        ck_assert_str_eq(s.data[0], "{\"a\":1}");
        ck_assert_str_eq(s.event[1], "message");
        ck_assert_str_eq(s.data[1], "one\ntwo");
        ck_assert_str_eq(s.event[2], "ready");
        cli_sse_cleanup(&p);
    }
}
END_TEST

START_TEST(test_cli_sse_callback_can_stop)
{
    static const char stream[] = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
    struct seen s = {.stop_after = 2};
    struct cli_sse p;
    struct errinfo err = {0};

    cli_sse_init(&p, on_ev, &s);
    ck_assert_int_eq(cli_sse_feed(&p, stream, sizeof(stream) - 1, &err), 1);
    ck_assert_int_eq(s.n, 2);
    cli_sse_cleanup(&p);
}
END_TEST

/* ---- arguments ---- */

static const cJSON *schema_of(const char *tool)
{
    return catalog_tool_input_schema(catalog_find(catalog_builtin(), tool));
}

START_TEST(test_cli_args_typed_by_schema)
{
    char *argv[] = {"path=/a b.txt", "offset=10", "encoding=base64"};
    struct errinfo err = {0};
    cJSON *a = cli_args_parse(schema_of("read_file"), 3, argv, &err);
    char *text;

    ck_assert_ptr_nonnull(a);
    text = cJSON_PrintUnformatted(a);
    ck_assert_str_eq(text, "{\"path\":\"/a b.txt\",\"offset\":10,\"encoding\":\"base64\"}");
    cJSON_free(text);
    cJSON_Delete(a);
}
END_TEST

START_TEST(test_cli_args_string_property_keeps_digits_as_text)
{
    char *argv[] = {"path=/x", "content=123"};
    struct errinfo err = {0};
    cJSON *a = cli_args_parse(schema_of("write_file"), 2, argv, &err);

    ck_assert(cJSON_IsString(cJSON_GetObjectItem(a, "content")));
    ck_assert_str_eq(cJSON_GetObjectItem(a, "content")->valuestring, "123");
    cJSON_Delete(a);
}
END_TEST

START_TEST(test_cli_args_json_forms)
{
    char *one[] = {"{\"command\":\"ls\",\"background\":true}"};
    char *raw[] = {"command=ls", "env:={\"A\":\"1\"}"};
    struct errinfo err = {0};
    cJSON *a = cli_args_parse(schema_of("exec"), 1, one, &err);

    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(a, "background")));
    cJSON_Delete(a);
    a = cli_args_parse(schema_of("exec"), 2, raw, &err);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "env"), "A")->valuestring, "1");
    cJSON_Delete(a);
}
END_TEST

START_TEST(test_cli_args_mistakes_are_named)
{
    char *noeq[] = {"path"};
    char *twice[] = {"path=/a", "path=/b"};
    char *badjson[] = {"{\"path\":"};
    char *rawbad[] = {"env:={nope"};
    struct errinfo err = {0};

    ck_assert_ptr_null(cli_args_parse(schema_of("read_file"), 1, noeq, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "'path' is not key=value"));
    errinfo_clear(&err);
    ck_assert_ptr_null(cli_args_parse(schema_of("read_file"), 2, twice, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "'path' is given twice"));
    errinfo_clear(&err);
    ck_assert_ptr_null(cli_args_parse(schema_of("read_file"), 1, badjson, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "not valid JSON"));
    errinfo_clear(&err);
    ck_assert_ptr_null(cli_args_parse(schema_of("exec"), 1, rawbad, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "env:= takes JSON"));
}
END_TEST

/* A value that is not of its type stays text, so the validator names the rule. As the MCP
 * server does, the schema tools/list shows is checked first: an unknown argument (a rule of the
 * whole schema only) is named only when the rest passes. */
START_TEST(test_cli_args_check_names_the_rule)
{
    char *argv[] = {"path=/a", "length=abc", "offset=x", "colour=red"};
    char *argv2[] = {"path=/a", "colour=red"};
    struct errinfo err = {0};
    cJSON *a = cli_args_parse(schema_of("read_file"), 4, argv, &err);
    cJSON *b = cli_args_parse(schema_of("read_file"), 2, argv2, &err);
    char *why = cli_args_check(schema_of("read_file"), a);
    char *why2 = cli_args_check(schema_of("read_file"), b);

    ck_assert_ptr_nonnull(why);
    ck_assert_ptr_nonnull(strstr(why, "arguments.length: expected integer, got string"));
    ck_assert_ptr_nonnull(strstr(why, "arguments.offset: expected integer, got string"));
    ck_assert_ptr_nonnull(strchr(why, '\n'));
    ck_assert_ptr_null(strstr(why, "colour"));
    ck_assert_ptr_nonnull(why2);
    ck_assert_str_eq(why2, "arguments.colour: unexpected property (allowed: path, offset, length, "
                           "encoding)");
    free(why);
    free(why2);
    cJSON_Delete(a);
    cJSON_Delete(b);
}
END_TEST

START_TEST(test_cli_format_duration)
{
    static const struct {
        long long ms;
        const char *want;
    } rows[] = {{0, "0ms"},         {850, "850ms"},      {12000, "12s"}, {185000, "3m05s"},
                {3720000, "1h02m"}, {90000000, "1d01h"}, {-1, "?"}};
    char out[32];

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        cli_format_duration(rows[i].ms, out, sizeof(out));
        ck_assert_str_eq(out, rows[i].want);
    }
}
END_TEST

START_TEST(test_cli_json_pretty)
{
    cJSON *v = cJSON_Parse("{\"a\":[1,2],\"b\":{\"c\":\"x\"},\"d\":[],\"e\":[{\"f\":null}]}");
    char *t = cli_json_pretty(v);

    ck_assert_str_eq(t, "{\n  \"a\": [1, 2],\n  \"b\": {\n    \"c\": \"x\"\n  },\n  \"d\": [],\n"
                        "  \"e\": [\n    {\n      \"f\": null\n    }\n  ]\n}");
    free(t);
    cJSON_Delete(v);
}
END_TEST

static Suite *cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *url = tcase_create("daemon_url"), *sse = tcase_create("sse");
    TCase *args = tcase_create("arguments"), *fmt = tcase_create("formatting");

    tcase_add_test(url, test_cli_target_parses_http_urls);
    tcase_add_test(url, test_cli_target_refuses_what_it_cannot_use);
    tcase_add_test(sse, test_cli_sse_events_split_anywhere);
    tcase_add_test(sse, test_cli_sse_callback_can_stop);
    tcase_add_test(args, test_cli_args_typed_by_schema);
    tcase_add_test(args, test_cli_args_string_property_keeps_digits_as_text);
    tcase_add_test(args, test_cli_args_json_forms);
    tcase_add_test(args, test_cli_args_mistakes_are_named);
    tcase_add_test(args, test_cli_args_check_names_the_rule);
    tcase_add_test(fmt, test_cli_format_duration);
    tcase_add_test(fmt, test_cli_json_pretty);
    suite_add_tcase(s, url);
    suite_add_tcase(s, sse);
    suite_add_tcase(s, args);
    suite_add_tcase(s, fmt);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cli_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
