/* tests/unit/test_upstream.c - how runboxd's answers become tool results or failure messages
 * (upstream_map_answer), and the message for an unreachable daemon. Pure: no sockets. */
#include "upstream.h"
#include "clocks.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define URL "http://127.0.0.1:7766"

static struct upstream_answer ans;

static void teardown(void)
{
    upstream_answer_cleanup(&ans);
}

static void map_http(long status, const char *body)
{
    struct upstream_reply r = {.outcome = UPSTREAM_ANSWERED,
                               .status = status,
                               .body = body,
                               .body_len = strlen(body),
                               .error = "No error"};

    ck_assert_int_eq(upstream_map_answer(&r, URL, &ans), 0);
}

static void map_outcome(enum upstream_outcome outcome, int os_errno)
{
    struct upstream_reply r = {
        .outcome = outcome, .body = "", .os_errno = os_errno, .error = "Some curl message"};

    ck_assert_int_eq(upstream_map_answer(&r, URL, &ans), 0);
}

START_TEST(test_upstream_ok_string_result)
{
    map_http(200, "{\"ok\":true,\"id\":\"c1\",\"result\":\"hello\\nworld\"}");
    ck_assert(ans.ok);
    ck_assert(cJSON_IsString(ans.result));
    ck_assert_str_eq(ans.result->valuestring, "hello\nworld");
    ck_assert_ptr_null(ans.error);
}
END_TEST

START_TEST(test_upstream_ok_json_result)
{
    map_http(200, "{\"ok\":true,\"result\":{\"path\":\"/a\",\"bytes\":2,\"created\":true}}");
    ck_assert(ans.ok);
    ck_assert(cJSON_IsObject(ans.result));
    ck_assert_int_eq(cJSON_GetObjectItem(ans.result, "bytes")->valueint, 2);
}
END_TEST

START_TEST(test_upstream_ok_without_result_is_empty)
{
    map_http(200, "{\"ok\":true}");
    ck_assert(ans.ok);
    ck_assert_ptr_null(ans.result); /* the engine turns NULL into an empty text */
}
END_TEST

START_TEST(test_upstream_tool_failure_keeps_message_and_timeout)
{
    map_http(200, "{\"ok\":false,\"id\":\"c2\",\"error\":\"no such file: /x\"}");
    ck_assert(!ans.ok);
    ck_assert_str_eq(ans.error, "no such file: /x");
    ck_assert(!ans.timeout);
    upstream_answer_cleanup(&ans);
    map_http(200, "{\"ok\":false,\"error\":\"command timed out\",\"timeout\":true}");
    ck_assert_str_eq(ans.error, "command timed out");
    ck_assert(ans.timeout);
}
END_TEST

START_TEST(test_upstream_external_result_is_kept_whole)
{
    /* An external server's CallToolResult: kept beside the text, on a result and on isError. */
    map_http(200, "{\"ok\":true,\"result\":\"Echo: x\",\"mcp_result\":{\"content\":[{\"type\":"
                  "\"text\",\"text\":\"Echo: x\"}]}}");
    ck_assert(ans.ok);
    ck_assert(cJSON_IsArray(cJSON_GetObjectItem(ans.mcp_result, "content")));
    upstream_answer_cleanup(&ans);
    map_http(200, "{\"ok\":false,\"error\":\"w: failed\",\"mcp_result\":{\"content\":[],"
                  "\"isError\":true}}");
    ck_assert(!ans.ok);
    ck_assert_str_eq(ans.error, "w: failed");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(ans.mcp_result, "isError")));
    upstream_answer_cleanup(&ans);
    /* Not an object, or not a 200: not a result to pass on. */
    map_http(200, "{\"ok\":true,\"result\":\"a\",\"mcp_result\":\"text\"}");
    ck_assert_ptr_null(ans.mcp_result);
    upstream_answer_cleanup(&ans);
    map_http(503, "{\"ok\":false,\"error\":\"busy\",\"mcp_result\":{\"content\":[]}}");
    ck_assert_ptr_null(ans.mcp_result);
}
END_TEST

START_TEST(test_upstream_tool_failure_without_message)
{
    map_http(200, "{\"ok\":false}");
    ck_assert(!ans.ok);
    ck_assert_ptr_nonnull(strstr(ans.error, "without a message"));
}
END_TEST

START_TEST(test_upstream_200_with_garbage_body)
{
    map_http(200, "<html>oops</html>");
    ck_assert(!ans.ok);
    ck_assert_ptr_nonnull(strstr(ans.error, "HTTP 200"));
    ck_assert_ptr_nonnull(strstr(ans.error, "<html>oops</html>"));
}
END_TEST

START_TEST(test_upstream_400_joins_details)
{
    map_http(400, "{\"ok\":false,\"error\":\"invalid arguments\",\"details\":["
                  "\"arguments.path: required property is missing\","
                  "\"arguments.depth: expected integer, got string\"]}");
    ck_assert(!ans.ok);
    ck_assert_str_eq(ans.error, "invalid arguments: arguments.path: required property is "
                                "missing; arguments.depth: expected integer, got string");
    ck_assert(!ans.timeout);
}
END_TEST

START_TEST(test_upstream_400_without_details)
{
    map_http(400, "{\"ok\":false,\"error\":\"body is not JSON\"}");
    ck_assert_str_eq(ans.error, "body is not JSON");
}
END_TEST

START_TEST(test_upstream_other_status_names_it)
{
    map_http(404, "{\"ok\":false,\"error\":\"unknown tool: nope\"}");
    ck_assert_str_eq(ans.error, "runboxd answered HTTP 404: unknown tool: nope");
    upstream_answer_cleanup(&ans);
    map_http(500, "{\"ok\":false}");
    ck_assert_str_eq(ans.error, "runboxd answered HTTP 500: {\"ok\":false}");
}
END_TEST

/* A body runboxd never sends (not a JSON object with "ok") is another program on the port:
 * the message says so, quotes it, and says what to do (issue 13). */
START_TEST(test_upstream_foreign_server_is_named)
{
    map_http(501, "<!DOCTYPE HTML>\n<html><body>Unsupported method</body></html>");
    ck_assert_str_eq(ans.error, "something else answers on 127.0.0.1:7766 \xe2\x80\x94 not runboxd "
                                "(HTTP 501: <!DOCTYPE HTML> <html><body>Unsupported method</body>"
                                "</html>); stop it or set DAEMON_URL to where runboxd listens");
    upstream_answer_cleanup(&ans);
    map_http(200, "{\"result\":1}");
    ck_assert_ptr_nonnull(strstr(ans.error, "not runboxd (HTTP 200: {\"result\":1})"));
    upstream_answer_cleanup(&ans);
    map_http(502, "");
    ck_assert_ptr_nonnull(strstr(ans.error, "not runboxd (HTTP 502: (empty body))"));
    ck_assert(upstream_is_runboxd_body("{\"ok\":true,\"x\":1}", 17));
    ck_assert(upstream_is_runboxd_body("{\"ok\":false,\"error\":\"e\"}", 24));
    ck_assert(!upstream_is_runboxd_body("{\"ok\":1}", 8));
    ck_assert(!upstream_is_runboxd_body("<html>", 6));
}
END_TEST

/* Daemon text quoted in a message is cut and stays valid UTF-8. */
START_TEST(test_upstream_excerpt_is_cut_and_clean)
{
    char body[2000];

    memset(body, 'a', sizeof(body) - 1);
    body[sizeof(body) - 1] = '\0';
    body[10] = (char)0xff;            /* not UTF-8 */
    memcpy(body + 20, "\xc3\xa9", 2); /* é stays */
    map_http(503, body);
    ck_assert_uint_lt(strlen(ans.error), 300);
    ck_assert_ptr_nonnull(strstr(ans.error, "..."));
    ck_assert_ptr_null(strchr(ans.error, (char)0xff));
    ck_assert_ptr_nonnull(strstr(ans.error, "\xc3\xa9"));
}
END_TEST

START_TEST(test_upstream_refused_says_what_to_do)
{
    map_outcome(UPSTREAM_REFUSED, ECONNREFUSED);
    ck_assert(!ans.ok);
    ck_assert(!ans.timeout);
    ck_assert_str_eq(ans.error,
                     "runboxd is not reachable at " URL " (connection refused). Start it with "
                     "`runboxd` (or leave DAEMON_URL unset so runbox starts it), then retry.");
    upstream_answer_cleanup(&ans);
    map_outcome(UPSTREAM_REFUSED, EHOSTUNREACH);
    ck_assert_ptr_nonnull(strstr(ans.error, "(host unreachable)"));
}
END_TEST

START_TEST(test_upstream_timeout_is_flagged)
{
    map_outcome(UPSTREAM_TIMEOUT, 0);
    ck_assert(!ans.ok);
    ck_assert_str_eq(ans.error, "MCP proxy timeout");
    ck_assert(ans.timeout);
}
END_TEST

START_TEST(test_upstream_dropped_warns_call_may_be_applied)
{
    map_outcome(UPSTREAM_DROPPED, 0);
    ck_assert(!ans.timeout);
    ck_assert_ptr_nonnull(strstr(ans.error, "closed the connection before answering"));
    ck_assert_ptr_nonnull(strstr(ans.error, "may have been applied"));
}
END_TEST

START_TEST(test_upstream_too_large_and_failed)
{
    map_outcome(UPSTREAM_TOO_LARGE, 0);
    ck_assert_ptr_nonnull(strstr(ans.error, "64 MiB"));
    upstream_answer_cleanup(&ans);
    map_outcome(UPSTREAM_FAILED, 0);
    ck_assert_str_eq(ans.error, "the request to runboxd at " URL " failed: Some curl message");
}
END_TEST

START_TEST(test_upstream_new_validates_config)
{
    struct upstream_config cfg = {.base_url = "http://127.0.0.1:1///", .timeout_ms = 50};
    struct errinfo err = {0};
    struct upstream *up = upstream_new(&cfg, &err);
    char big[UPSTREAM_URL_MAX + 10];

    ck_assert_ptr_nonnull(up);
    ck_assert_str_eq(upstream_base_url(up), "http://127.0.0.1:1");
    ck_assert_uint_eq(upstream_inflight(up), 0);
    ck_assert_int_eq(upstream_timeout_ms(up, clocks_mono_ms()), -1); /* nothing to do */
    upstream_dispatch(up, NULL, 0, clocks_mono_ms()); /* harmless before any request */
    upstream_free(up);

    memset(big, 'h', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    cfg.base_url = big;
    ck_assert_ptr_null(upstream_new(&cfg, &err));
    ck_assert_int_eq(err.kind, ERR_INVALID);
}
END_TEST

/* A daemon of this revision is not named; an older one (or one that says no revision: 1) and a
 * newer one are, with both versions and what to do. */
START_TEST(test_upstream_wire_mismatch_names_the_older_side)
{
    const char *url = "http://127.0.0.1:7766";
    char *m;

    ck_assert_ptr_null(upstream_wire_mismatch(url, RUNBOX_VERSION, RUNBOX_WIRE));
    m = upstream_wire_mismatch(url, "0.0.9", RUNBOX_WIRE - 1);
    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_nonnull(strstr(m, "runboxd at http://127.0.0.1:7766 is older than this runbox"));
    ck_assert_ptr_nonnull(strstr(m, "runboxd 0.0.9 speaks revision"));
    ck_assert_ptr_nonnull(strstr(m, "Restart it (runbox restart)"));
    free(m);
    m = upstream_wire_mismatch(url, NULL, 0); /* said nothing: revision 1 */
    ck_assert_ptr_nonnull(strstr(m, "runboxd ? speaks revision 1,"));
    free(m);
    m = upstream_wire_mismatch(url, "9.0.0", RUNBOX_WIRE + 1);
    ck_assert_ptr_nonnull(strstr(m, "is newer than this runbox"));
    ck_assert_ptr_nonnull(strstr(m, "use the runbox installed beside that runboxd"));
    ck_assert_ptr_null(strchr(m, '\n'));
    free(m);
}
END_TEST

static Suite *upstream_suite(void)
{
    Suite *s = suite_create("upstream");
    TCase *http = tcase_create("http_answers");
    TCase *transport = tcase_create("transport_failures");
    TCase *setup = tcase_create("setup");

    tcase_add_checked_fixture(http, NULL, teardown);
    tcase_add_test(http, test_upstream_ok_string_result);
    tcase_add_test(http, test_upstream_ok_json_result);
    tcase_add_test(http, test_upstream_ok_without_result_is_empty);
    tcase_add_test(http, test_upstream_tool_failure_keeps_message_and_timeout);
    tcase_add_test(http, test_upstream_tool_failure_without_message);
    tcase_add_test(http, test_upstream_external_result_is_kept_whole);
    tcase_add_test(http, test_upstream_200_with_garbage_body);
    tcase_add_test(http, test_upstream_400_joins_details);
    tcase_add_test(http, test_upstream_400_without_details);
    tcase_add_test(http, test_upstream_other_status_names_it);
    tcase_add_test(http, test_upstream_foreign_server_is_named);
    tcase_add_test(http, test_upstream_excerpt_is_cut_and_clean);
    tcase_add_test(http, test_upstream_wire_mismatch_names_the_older_side);
    suite_add_tcase(s, http);

    tcase_add_checked_fixture(transport, NULL, teardown);
    tcase_add_test(transport, test_upstream_refused_says_what_to_do);
    tcase_add_test(transport, test_upstream_timeout_is_flagged);
    tcase_add_test(transport, test_upstream_dropped_warns_call_may_be_applied);
    tcase_add_test(transport, test_upstream_too_large_and_failed);
    suite_add_tcase(s, transport);

    tcase_add_test(setup, test_upstream_new_validates_config);
    suite_add_tcase(s, setup);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(upstream_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
