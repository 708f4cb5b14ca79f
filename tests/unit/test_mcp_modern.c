/* tests/unit/test_mcp_modern.c - the engine's 2026-07-28 (stateless) paths, through the public
 * library only: a server of its own (no catalog) and a transport that records what is sent.
 * The cases come from what the official conformance suite found; each names the check. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "runbox/mcp.h"

#define MAX_SENT 64

struct rec {
    cJSON *sent[MAX_SENT]; /* parsed messages, in order */
    size_t nsent;
    /* A send of a listen stream's list_changed can be held until the test lets it go. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool hold_listen; /* hold such a send */
    bool in_send;     /* one is being held */
    bool release;     /* let it go */
    bool cancel_done; /* mcp_session_cancel_origin returned */
};

static struct rec rec;
static struct mcp_server *srv;
static struct mcp_session *s;

static void rec_send(void *ctx, const char *json, size_t len, const struct mcp_route *route)
{
    struct rec *r = ctx;
    cJSON *m = cJSON_ParseWithLength(json, len);

    pthread_mutex_lock(&r->mu);
    if (r->hold_listen && route->kind == MCP_ROUTE_LISTEN && strstr(json, "list_changed")) {
        r->in_send = true;
        pthread_cond_broadcast(&r->cv);
        while (!r->release)
            pthread_cond_wait(&r->cv, &r->mu);
    }
    if (m && r->nsent < MAX_SENT)
        r->sent[r->nsent++] = m;
    else
        cJSON_Delete(m); /* checked by the tests that read what was sent */
    pthread_mutex_unlock(&r->mu);
}

static const struct mcp_transport rec_transport = {.send = rec_send};

static void tool_hello(void *arg, struct mcp_call *c)
{
    (void)arg;
    mcp_call_result_text(c, "hello", 5);
}

static void setup(void)
{
    static const struct mcp_server_info info = {
        .name = "modern-test", .version = "1.2.3", .notifies = MCP_NOTIFY_TOOLS};
    static const struct mcp_tool hello = {.name = "hello", .handler = tool_hello};

    memset(&rec, 0, sizeof(rec));
    pthread_mutex_init(&rec.mu, NULL);
    pthread_cond_init(&rec.cv, NULL);
    srv = mcp_server_new(&info, NULL);
    ck_assert_ptr_nonnull(srv);
    ck_assert_int_eq(mcp_server_add_tool(srv, &hello, NULL), 0);
    s = mcp_session_new(srv, &rec_transport, &rec, MCP_SESSION_MODERN_ONLY, NULL);
    ck_assert_ptr_nonnull(s);
}

static void teardown(void)
{
    mcp_session_close(s);
    mcp_server_free(srv);
    for (size_t i = 0; i < rec.nsent; i++)
        cJSON_Delete(rec.sent[i]);
    pthread_cond_destroy(&rec.cv);
    pthread_mutex_destroy(&rec.mu);
}

/* Sends one request whose params._meta names `version` and carries no capabilities; params_extra
 * is more of params as JSON text ("" for none). */
static void send_modern(int id, const char *method, const char *version, const char *params_extra)
{
    char line[2048];

    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":{%s%s\"_meta\":{"
             "\"io.modelcontextprotocol/protocolVersion\":\"%s\","
             "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
             id, method, params_extra, params_extra[0] ? "," : "", version);
    mcp_session_handle(s, line, strlen(line), NULL);
}

/* The last message sent; it must answer id. Borrowed. */
static const cJSON *last_answer(int id)
{
    const cJSON *m, *got;

    ck_assert_uint_gt(rec.nsent, 0);
    m = rec.sent[rec.nsent - 1];
    got = cJSON_GetObjectItemCaseSensitive(m, "id");
    ck_assert_msg(cJSON_IsNumber(got) && got->valueint == id, "expected the answer to %d", id);
    return m;
}

/* True when the array of strings arr holds s. */
static bool has_string(const cJSON *arr, const char *str)
{
    const cJSON *v;

    cJSON_ArrayForEach(v,
                       arr) if (cJSON_IsString(v) && strcmp(v->valuestring, str) == 0) return true;
    return false;
}

/* conformance server-stateless, sep-2575-server-unsupported-version-error: the versions an
 * UnsupportedProtocolVersionError lists are ones server/discover lists too (a client retries
 * with one of them, per request), and the error echoes the version asked for. */
START_TEST(test_mcp_modern_unsupported_lists_discovered_versions)
{
    const cJSON *discovered, *err, *data, *v;

    send_modern(1, "server/discover", MCP_PROTOCOL_MODERN, "");
    discovered = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(last_answer(1), "result"), "supportedVersions");
    ck_assert(cJSON_IsArray(discovered));
    ck_assert(has_string(discovered, MCP_PROTOCOL_MODERN));

    send_modern(2, "server/discover", "v999.0.0", "");
    err = cJSON_GetObjectItemCaseSensitive(last_answer(2), "error");
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(err, "code")->valueint,
                     MCP_UNSUPPORTED_VERSION);
    data = cJSON_GetObjectItemCaseSensitive(err, "data");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(data, "requested")->valuestring, "v999.0.0");
    ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(data, "supported")), 0);
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(data, "supported"))
        ck_assert_msg(has_string(discovered, v->valuestring),
                      "-32022 lists %s, which server/discover does not", v->valuestring);
}
END_TEST

/* A legacy version in _meta is not served per request either: the error says so and lists only
 * what is. */
START_TEST(test_mcp_modern_legacy_version_in_meta_is_unsupported)
{
    const cJSON *err;

    send_modern(3, "tools/list", MCP_PROTOCOL_LEGACY, "");
    err = cJSON_GetObjectItemCaseSensitive(last_answer(3), "error");
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(err, "code")->valueint,
                     MCP_UNSUPPORTED_VERSION);
    ck_assert(!has_string(cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(err, "data"), "supported"),
                          MCP_PROTOCOL_LEGACY));
}
END_TEST

static void *notify_tools(void *arg)
{
    (void)arg;
    mcp_server_notify_list_changed(srv, MCP_LIST_TOOLS);
    return NULL;
}

static int listen_origin; /* the origin token of the listen stream's request */

static void *cancel_listen(void *arg)
{
    (void)arg;
    mcp_session_cancel_origin(s, &listen_origin);
    pthread_mutex_lock(&rec.mu);
    rec.cancel_done = true;
    pthread_cond_broadcast(&rec.cv);
    pthread_mutex_unlock(&rec.mu);
    return NULL;
}

/* conformance server-stateless under load (ASan: heap-use-after-free in deliver_note): a list
 * change was being sent on a listen stream while the client closed that stream. The cancel
 * freed the listen call under the send, and mcp_session_cancel_origin() returned while the
 * send still used the transport's origin. It must wait for the send instead. */
START_TEST(test_mcp_modern_cancel_origin_waits_for_a_listen_delivery)
{
    static const char listen[] =
        "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"subscriptions/listen\",\"params\":{"
        "\"notifications\":{\"toolsListChanged\":true},\"_meta\":{"
        "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    pthread_t notifier, canceller;
    struct timespec until;
    bool early;

    mcp_session_handle(s, listen, strlen(listen), &listen_origin);
    ck_assert_uint_eq(rec.nsent, 1); /* the acknowledgement */
    rec.hold_listen = true;
    ck_assert_int_eq(pthread_create(&notifier, NULL, notify_tools, NULL), 0);
    pthread_mutex_lock(&rec.mu);
    while (!rec.in_send)
        pthread_cond_wait(&rec.cv, &rec.mu);
    pthread_mutex_unlock(&rec.mu);

    ck_assert_int_eq(pthread_create(&canceller, NULL, cancel_listen, NULL), 0);
    /* The cancel must not return while the send is held. Give a wrong one time to show (a
     * slow machine only makes this weaker, never makes a correct engine fail). */
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 200 * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&rec.mu);
    while (!rec.cancel_done && pthread_cond_timedwait(&rec.cv, &rec.mu, &until) != ETIMEDOUT)
        ;
    early = rec.cancel_done;
    rec.release = true;
    pthread_cond_broadcast(&rec.cv);
    pthread_mutex_unlock(&rec.mu);
    pthread_join(notifier, NULL);
    pthread_join(canceller, NULL);
    ck_assert_msg(!early, "mcp_session_cancel_origin returned while a send for it was running");
    ck_assert_uint_eq(mcp_session_inflight(s), 0);
}
END_TEST

static Suite *mcp_modern_suite(void)
{
    Suite *suite = suite_create("mcp_modern");
    TCase *tc = tcase_create("versions");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mcp_modern_unsupported_lists_discovered_versions);
    tcase_add_test(tc, test_mcp_modern_legacy_version_in_meta_is_unsupported);
    suite_add_tcase(suite, tc);
    tc = tcase_create("listen");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mcp_modern_cancel_origin_waits_for_a_listen_delivery);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void)
{
    SRunner *sr = srunner_create(mcp_modern_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
