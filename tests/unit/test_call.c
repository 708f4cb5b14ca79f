/* tests/unit/test_call.c - the call service: lookup, validation, the budget table, the cancel
 * hook's contract, and routing to a local handler. No exec engine and no Studio: the budget rows
 * are driven with quick tools that the catalog marks, and the hook with a counter. */
#include "call.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "schema.h"
#include "tools.h"

static struct call_service *svc;
static struct tools_ctx tools;

static void setup(void)
{
    struct call_service_options opt = {.cat = catalog_builtin(), .tools = &tools};
    struct errinfo err = {0};

    opt.max[CALL_BUDGET_LONG] = 2;
    opt.max[CALL_BUDGET_STREAM] = 1;
    svc = call_service_new(&opt, &err);
    ck_assert_msg(svc != NULL, "%s", err.msg);
}

static void teardown(void)
{
    call_service_free(svc);
}

static cJSON *args_of(const char *json)
{
    cJSON *a = cJSON_Parse(json);

    ck_assert_ptr_nonnull(a);
    return a;
}

START_TEST(test_call_unknown_tool_is_not_found)
{
    struct errinfo err = {0};
    cJSON *a = args_of("{}");

    ck_assert_ptr_null(call_begin(svc, "no_such_tool", a, NULL, &err));
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
    ck_assert_str_eq(err.msg, "unknown tool: no_such_tool; GET /tools lists the tools");
    cJSON_Delete(a);
}
END_TEST

START_TEST(test_call_invalid_arguments_name_the_rule)
{
    struct errinfo err = {0};
    struct schema_report rep;
    cJSON *a = args_of("{\"path\": 7}");

    ck_assert_ptr_null(call_begin(svc, "read_file", a, &rep, &err));
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_str_eq(err.msg, "invalid arguments for read_file: arguments.path: expected string, "
                              "got integer");
    ck_assert_uint_ge(rep.count, 1);
    cJSON_Delete(a);
}
END_TEST

START_TEST(test_call_knows_its_tool_and_services)
{
    struct errinfo err = {0};
    cJSON *a = args_of("{\"path\": \"/x\"}");
    struct call *c = call_begin(svc, "read_file", a, NULL, &err);

    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(catalog_tool_name(call_tool(c)), "read_file");
    ck_assert_ptr_eq(call_tools_ctx(c), &tools);
    call_end(c);
    cJSON_Delete(a);
}
END_TEST

/* exec and kill draw from the long row (2 here); a third waits for neither: it is refused. */
START_TEST(test_call_long_row_is_bounded_and_released)
{
    struct errinfo err = {0};
    cJSON *a = args_of("{\"command\": \"true\"}");
    cJSON *k = args_of("{\"pid\": 1}");
    struct call *c1 = call_begin(svc, "exec", a, NULL, &err);
    struct call *c2 = call_begin(svc, "kill", k, NULL, &err);
    struct call *c3;
    cJSON *j;

    ck_assert_ptr_nonnull(c1);
    ck_assert_ptr_nonnull(c2);
    ck_assert_ptr_null(call_begin(svc, "exec", a, NULL, &err));
    ck_assert_int_eq(err.kind, ERR_UNAVAILABLE);
    ck_assert_msg(strstr(err.msg, "runboxd is busy: 2 calls that can take long"), "%s", err.msg);
    /* A quick tool takes no slot. */
    c3 = call_begin(svc, "list_dir", a = (cJSON_Delete(a), args_of("{}")), NULL, NULL);
    ck_assert_ptr_nonnull(c3);
    call_end(c3);
    j = call_service_budget_json(svc);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "long"), "in_use")->valueint, 2);
    cJSON_Delete(j);
    call_end(c1);
    errinfo_clear(&err);
    c1 = call_begin(svc, "kill", k, NULL, &err);
    ck_assert_msg(c1 != NULL, "the slot came back: %s", err.msg);
    call_end(c1);
    call_end(c2);
    cJSON_Delete(a);
    cJSON_Delete(k);
}
END_TEST

START_TEST(test_call_stream_row_admits_and_releases)
{
    struct errinfo err = {0};

    ck_assert_int_eq(call_service_admit(svc, CALL_BUDGET_STREAM, &err), 0);
    ck_assert_int_eq(call_service_admit(svc, CALL_BUDGET_STREAM, &err), -1);
    ck_assert_msg(strstr(err.msg, "1 open streams"), "%s", err.msg);
    call_service_release(svc, CALL_BUDGET_STREAM);
    ck_assert_int_eq(call_service_admit(svc, CALL_BUDGET_STREAM, NULL), 0);
    call_service_release(svc, CALL_BUDGET_STREAM);
}
END_TEST

static int hook_runs;

static void count_hook(void *arg)
{
    (*(int *)arg)++;
}

START_TEST(test_call_cancel_runs_the_hook_once)
{
    cJSON *a = args_of("{}");
    struct call *c = call_begin(svc, "list_dir", a, NULL, NULL);

    hook_runs = 0;
    ck_assert(!call_is_cancelled(c));
    call_on_cancel(c, count_hook, &hook_runs);
    call_cancel(c);
    call_cancel(c);
    ck_assert_int_eq(hook_runs, 1);
    ck_assert(call_is_cancelled(c));
    call_off_cancel(c);
    call_end(c);
    cJSON_Delete(a);
}
END_TEST

START_TEST(test_call_hook_registered_after_cancel_runs_at_once)
{
    cJSON *a = args_of("{}");
    struct call *c = call_begin(svc, "list_dir", a, NULL, NULL);

    hook_runs = 0;
    call_cancel(c);
    call_on_cancel(c, count_hook, &hook_runs);
    ck_assert_int_eq(hook_runs, 1);
    call_off_cancel(c);
    call_end(c);
    cJSON_Delete(a);
}
END_TEST

START_TEST(test_call_removed_hook_never_runs)
{
    cJSON *a = args_of("{}");
    struct call *c = call_begin(svc, "list_dir", a, NULL, NULL);

    hook_runs = 0;
    call_on_cancel(c, count_hook, &hook_runs);
    call_off_cancel(c);
    call_cancel(c);
    ck_assert_int_eq(hook_runs, 0);
    call_end(c);
    cJSON_Delete(a);
}
END_TEST

/* A NULL call (a handler run outside the service) is never cancelled and takes no progress. */
START_TEST(test_call_null_is_inert)
{
    ck_assert(!call_is_cancelled(NULL));
    ck_assert(!call_wants_progress(NULL));
    call_progress(NULL, 1, 0, "x");
    call_on_cancel(NULL, count_hook, &hook_runs);
    call_off_cancel(NULL);
}
END_TEST

static double seen_progress;
static char seen_message[64];

static void sink(void *ctx, double progress, double total, const char *message)
{
    (void)ctx;
    (void)total;
    seen_progress = progress;
    snprintf(seen_message, sizeof(seen_message), "%s", message ? message : "");
}

START_TEST(test_call_progress_reaches_the_sink_until_cancelled)
{
    cJSON *a = args_of("{}");
    struct call *c = call_begin(svc, "list_dir", a, NULL, NULL);

    ck_assert(!call_wants_progress(c));
    call_set_progress(c, sink, NULL);
    ck_assert(call_wants_progress(c));
    call_progress(c, 2, 0, "two");
    ck_assert(seen_progress == 2);
    ck_assert_str_eq(seen_message, "two");
    call_cancel(c);
    call_progress(c, 3, 0, "three");
    ck_assert_str_eq(seen_message, "two"); /* nothing is reported for a cancelled call */
    call_end(c);
    cJSON_Delete(a);
}
END_TEST

START_TEST(test_call_run_of_a_cancelled_call_does_not_start)
{
    struct errinfo err = {0};
    struct tools_result res;
    cJSON *a = args_of("{}");
    struct call *c = call_begin(svc, "list_dir", a, NULL, NULL);

    call_cancel(c);
    ck_assert_int_eq(call_run(c, &res, &err), -1);
    ck_assert_int_eq(err.kind, ERR_CANCELLED);
    ck_assert_str_eq(err.msg, "list_dir was cancelled before it started");
    tools_result_cleanup(&res);
    call_end(c);
    cJSON_Delete(a);
}
END_TEST

/* A Studio tool without a bridge fails as the bridge being unavailable. */
START_TEST(test_call_studio_route_without_a_bridge)
{
    struct errinfo err = {0};
    struct tools_result res;
    cJSON *a = args_of("{}");
    struct call *c = call_begin(svc, "get_selection", a, NULL, &err);

    ck_assert_msg(c != NULL, "%s", err.msg);
    ck_assert_int_eq(call_run(c, &res, &err), -1);
    ck_assert_int_eq(err.kind, ERR_UNAVAILABLE);
    ck_assert_str_eq(err.msg, "the Studio bridge is not running in this runboxd");
    tools_result_cleanup(&res);
    call_end(c);
    cJSON_Delete(a);
}
END_TEST

static Suite *call_suite(void)
{
    Suite *s = suite_create("call");
    TCase *tc = tcase_create("begin");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_call_unknown_tool_is_not_found);
    tcase_add_test(tc, test_call_invalid_arguments_name_the_rule);
    tcase_add_test(tc, test_call_knows_its_tool_and_services);
    suite_add_tcase(s, tc);

    tc = tcase_create("budget");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_call_long_row_is_bounded_and_released);
    tcase_add_test(tc, test_call_stream_row_admits_and_releases);
    suite_add_tcase(s, tc);

    tc = tcase_create("cancel");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_call_cancel_runs_the_hook_once);
    tcase_add_test(tc, test_call_hook_registered_after_cancel_runs_at_once);
    tcase_add_test(tc, test_call_removed_hook_never_runs);
    tcase_add_test(tc, test_call_null_is_inert);
    tcase_add_test(tc, test_call_progress_reaches_the_sink_until_cancelled);
    tcase_add_test(tc, test_call_run_of_a_cancelled_call_does_not_start);
    tcase_add_test(tc, test_call_studio_route_without_a_bridge);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(call_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
