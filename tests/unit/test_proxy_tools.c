/* tests/unit/test_proxy_tools.c - runbox's side of the external tools (proxy_tools.c) without a
 * daemon: which stdin lines wait for the first GET /tools and that they come back in order,
 * and how "<server>/<tool>" and bare names resolve (as runboxd's registry resolves them). The
 * whole path against a real runboxd is tests/e2e/proxy_registry.test.mjs. */
#include "proxy.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "runbox/mcp.h"
#include "upstream.h"

#define MAX_SEEN 8

static struct mcp_server *srv;
static struct upstream *up;
static struct proxy_follow follow;
static struct proxy_tools tools;
static char *replayed[MAX_SEEN];
static size_t nreplayed;

static void on_replay(void *ctx, const char *line, size_t len)
{
    (void)ctx;
    ck_assert_uint_lt(nreplayed, MAX_SEEN);
    replayed[nreplayed++] = strndup(line, len);
}

static void on_call(void *arg, struct mcp_call *call)
{
    (void)arg;
    (void)call;
}

static void setup(void)
{
    struct mcp_server_info info = {.name = "runbox", .version = "test"};
    /* Port 9 (discard) on loopback: nothing is sent, since no test runs the loop. */
    struct upstream_config ucfg = {.base_url = "http://127.0.0.1:9", .timeout_ms = 1000};
    struct errinfo err = {0};
    struct proxy_tools_config cfg;

    srv = mcp_server_new(&info, &err);
    ck_assert_ptr_nonnull(srv);
    up = upstream_new(&ucfg, &err);
    ck_assert_ptr_nonnull(up);
    proxy_follow_init(&follow, up, srv);
    cfg = (struct proxy_tools_config){
        .up = up, .srv = srv, .follow = &follow, .handler = on_call, .replay = on_replay};
    proxy_tools_init(&tools, &cfg);
    nreplayed = 0;
}

static void teardown(void)
{
    proxy_tools_cleanup(&tools);
    proxy_follow_cleanup(&follow);
    upstream_free(up);
    mcp_server_free(srv);
    for (size_t i = 0; i < nreplayed; i++)
        free(replayed[i]);
}

static bool hold(const char *line)
{
    return proxy_tools_hold(&tools, line, strlen(line));
}

START_TEST(test_proxy_tools_lines_wait_from_the_first_tools_request)
{
    ck_assert(!hold("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}"));
    ck_assert(!hold("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
    ck_assert(!hold("not json at all"));
    ck_assert(!proxy_tools_holding(&tools));
    /* A batch with a tools/ request in it starts the list, and is the first to wait. */
    ck_assert(hold("[{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"},"
                   "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}]"));
    ck_assert(hold("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}"));
    ck_assert(proxy_tools_holding(&tools));
    /* The first turn starts GET /tools and says when the lines stop waiting without it. */
    ck_assert_int_eq(proxy_tools_tick(&tools, 1000), 30000);
    ck_assert_uint_eq(nreplayed, 0);
    ck_assert_int_eq(proxy_tools_tick(&tools, 21000), 10000);
    ck_assert_uint_eq(nreplayed, 0);
    /* No answer within the wait: the lines go on, in their order. */
    ck_assert_int_eq(proxy_tools_tick(&tools, 31000), -1);
    ck_assert_uint_eq(nreplayed, 2);
    ck_assert_ptr_nonnull(strstr(replayed[0], "tools/list"));
    ck_assert_ptr_nonnull(strstr(replayed[1], "\"id\":4"));
    ck_assert(!proxy_tools_holding(&tools));
    ck_assert(!hold("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}"));
}
END_TEST

/* Adds an external tool as runboxd's GET /tools lists it. */
static void add(cJSON *arr, const char *served, const char *server, const char *tool)
{
    cJSON *t = cJSON_CreateObject(), *meta;

    cJSON_AddStringToObject(t, "name", served);
    cJSON_AddItemToObject(t, "inputSchema", cJSON_Parse("{\"type\":\"object\"}"));
    cJSON_AddStringToObject(t, "route", "external");
    meta = cJSON_AddObjectToObject(t, "_meta");
    cJSON_AddStringToObject(meta, "runbox/server", server);
    cJSON_AddStringToObject(meta, "runbox/tool", tool);
    cJSON_AddItemToArray(arr, t);
}

/* Serves five tools as the external ones (what a GET /tools answer leaves behind). */
static void serve(void)
{
    cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "tools");
    struct errinfo err = {0};

    cJSON_AddStringToObject(doc, "group", "external");
    add(arr, "ev__echo", "ev", "echo");
    add(arr, "w__echo", "w", "echo");
    add(arr, "gh__create_issue", "github.com", "create_issue");
    add(arr, "fs__read_file", "fs", "read_file");
    add(arr, "fs__read_text_file", "fs", "read_text_file");
    tools.ext = catalog_new_external(doc, &err);
    ck_assert_msg(tools.ext != NULL, "%s", err.msg);
}

static int resolve(const char *name, char *canonical, char *why)
{
    return proxy_tools_resolve(&tools, name, canonical, 256, why, 512);
}

START_TEST(test_proxy_tools_aliases)
{
    char canonical[256] = "", why[512] = "";

    ck_assert_int_eq(resolve("ev/echo", canonical, why), 0); /* nothing served yet */
    serve();
    ck_assert_int_eq(resolve("ev/echo", canonical, why), 1);
    ck_assert_str_eq(canonical, "ev__echo");
    ck_assert_int_eq(resolve("w/echo", canonical, why), 1);
    ck_assert_str_eq(canonical, "w__echo");
    /* The server by its config name or by the prefix of its served names. */
    ck_assert_int_eq(resolve("github.com/create_issue", canonical, why), 1);
    ck_assert_str_eq(canonical, "gh__create_issue");
    ck_assert_int_eq(resolve("gh/create_issue", canonical, why), 1);
    ck_assert_str_eq(canonical, "gh__create_issue");
    /* A bare name one server has; one that several have is refused with the candidates. */
    ck_assert_int_eq(resolve("read_text_file", canonical, why), 1);
    ck_assert_str_eq(canonical, "fs__read_text_file");
    ck_assert_int_eq(resolve("echo", canonical, why), -1);
    ck_assert_str_eq(why, "tool name echo is ambiguous: 2 servers have it; call one of ev__echo, "
                          "w__echo");
    /* Runbox's own tool names are never aliases, even where a server has the tool. */
    ck_assert_int_eq(resolve("read_file", canonical, why), 0);
    ck_assert_int_eq(resolve("nope/echo", canonical, why), 0);
    ck_assert_int_eq(resolve("ev/nope", canonical, why), 0);
    ck_assert_int_eq(resolve("nothing", canonical, why), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proxy_tools");
    TCase *tc = tcase_create("proxy_tools");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_proxy_tools_lines_wait_from_the_first_tools_request);
    tcase_add_test(tc, test_proxy_tools_aliases);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
