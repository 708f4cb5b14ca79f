/* tests/unit/test_api.c - the HTTP layer's pure parts (status table, Host/Origin/Content-Type/
 * token checks, the bounded JSON buffer) and one real request through api_start on a free port. */
#include "api.h"
#include "call.h"
#include "catalog.h"
#include "tools.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vfs.h"
#include "testutil.h"

START_TEST(test_api_status_table)
{
    ck_assert_int_eq(api_status_for(ERR_INVALID), 400);
    ck_assert_int_eq(api_status_for(ERR_NOT_FOUND), 404);
    ck_assert_int_eq(api_status_for(ERR_DENIED), 403);
    ck_assert_int_eq(api_status_for(ERR_TOO_LARGE), 413);
    ck_assert_int_eq(api_status_for(ERR_UNAVAILABLE), 503);
    ck_assert_int_eq(api_status_for(ERR_INTERNAL), 500);
    ck_assert_int_eq(api_status_for((enum errinfo_kind)999), 500);
}
END_TEST

static const struct {
    const char *host;
    int port;
    const char *bind;
    bool ok;
} hosts[] = {
    {"127.0.0.1:7766", 7766, "127.0.0.1", true},
    {"localhost:7766", 7766, "127.0.0.1", true},
    {"LocalHost", 7766, "127.0.0.1", true},
    {"[::1]:7766", 7766, "127.0.0.1", true},
    {"[::1]", 7766, "127.0.0.1", true},
    {"127.0.0.1", 7766, "127.0.0.1", true},
    {"127.0.0.1:7767", 7766, "127.0.0.1", false},
    {"127.0.0.1:", 7766, "127.0.0.1", false},
    {"127.0.0.1:+7766", 7766, "127.0.0.1", false}, /* digits only (found by fuzz_http_checks) */
    {"127.0.0.1: 7766", 7766, "127.0.0.1", false},
    {"127.0.0.1:-0", 0, "127.0.0.1", false},
    {"127.0.0.1:7766x", 7766, "127.0.0.1", false},
    {"evil.com", 7766, "127.0.0.1", false},
    {"evil.com:7766", 7766, "127.0.0.1", false},
    {"localhost.evil.com:7766", 7766, "127.0.0.1", false},
    {"127.0.0.1.nip.io:7766", 7766, "127.0.0.1", false},
    {"[::1]x", 7766, "127.0.0.1", false},
    {"[::2]:7766", 7766, "127.0.0.1", false},
    {"", 7766, "127.0.0.1", false},
    {NULL, 7766, "127.0.0.1", false},
    {"192.168.1.5:80", 80, "192.168.1.5", true}, /* the bound non-loopback address */
    {"192.168.1.6:80", 80, "192.168.1.5", false},
    {"[fe80::1]:80", 80, "fe80::1", true},
    {"anything:1", 80, "0.0.0.0", true}, /* wildcard: the mandatory token protects it */
};

START_TEST(test_api_host_check)
{
    ck_assert_msg(api_host_ok(hosts[_i].host, hosts[_i].port, hosts[_i].bind) == hosts[_i].ok,
                  "Host %s", hosts[_i].host ? hosts[_i].host : "(none)");
}
END_TEST

static const struct {
    const char *origin;
    bool ok;
} origins[] = {
    {NULL, true},
    {"http://localhost:7766", true},
    {"http://127.0.0.1:7766", true},
    {"http://[::1]:7766", true},
    {"HTTP://LOCALHOST:7766", true},
    {"http://localhost", false},
    {"http://localhost:7767", false},
    {"https://localhost:7766", false},
    {"http://evil.com:7766", false},
    {"null", false},
    {"", false},
    {"http://localhost:7766/", false},
};

START_TEST(test_api_origin_check)
{
    ck_assert_msg(api_origin_ok(origins[_i].origin, 7766, "127.0.0.1") == origins[_i].ok,
                  "Origin %s", origins[_i].origin ? origins[_i].origin : "(none)");
}
END_TEST

START_TEST(test_api_content_type_check)
{
    ck_assert(api_content_type_ok("application/json"));
    ck_assert(api_content_type_ok("Application/JSON; charset=utf-8"));
    ck_assert(api_content_type_ok(" application/json ;charset=UTF-8"));
    ck_assert(!api_content_type_ok(NULL));
    ck_assert(!api_content_type_ok("text/plain"));
    ck_assert(!api_content_type_ok("application/jsonp"));
    ck_assert(!api_content_type_ok("application/x-www-form-urlencoded"));
    ck_assert(!api_content_type_ok("multipart/form-data; boundary=x"));
}
END_TEST

START_TEST(test_api_token_check)
{
    ck_assert(api_token_ok("Bearer abc", "abc"));
    ck_assert(api_token_ok("bearer  abc", "abc"));
    ck_assert(!api_token_ok("Bearer abd", "abc"));
    ck_assert(!api_token_ok("Bearer ab", "abc"));
    ck_assert(!api_token_ok("Bearer abcd", "abc"));
    ck_assert(!api_token_ok("Basic abc", "abc"));
    ck_assert(!api_token_ok("abc", "abc"));
    ck_assert(!api_token_ok(NULL, "abc"));
}
END_TEST

START_TEST(test_api_bind_needs_ipv6_for_ipv6)
{
    struct errinfo err = {0};

    ck_assert_int_eq(api_check_bind("127.0.0.1", false, &err), 0);
    ck_assert_int_eq(api_check_bind("0.0.0.0", false, &err), 0);
    ck_assert_int_eq(api_check_bind("::1", true, &err), 0);
    ck_assert_int_eq(err.kind, ERR_NONE);
    ck_assert_int_eq(api_check_bind("::1", false, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_str_eq(err.msg, "--bind ::1: this runboxd's HTTP server (civetweb, as Debian 12 "
                              "builds it) has no IPv6; bind to an IPv4 address such as 127.0.0.1");
}
END_TEST

/* ---- one real round trip ---- */

static char root[64];
static struct vfs *v;

static void server_setup(void)
{
    struct vfs_options opt = {.fsync = false};

    testutil_mkdtemp(root, sizeof(root), "test_api.");
    v = vfs_open(root, &opt, NULL);
    ck_assert_ptr_nonnull(v);
}

static void server_teardown(void)
{
    vfs_free(v);
    testutil_rm_rf(root);
}

/* Sends req to 127.0.0.1:port and returns the whole answer (owned) once it holds a body. */
static char *roundtrip(int port, const char *req)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    char *buf = calloc(1, 65536);
    size_t len = 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    while (len < 65535) {
        ssize_t n = read(fd, buf + len, 65535 - len);
        char *body;

        if (n <= 0)
            break;
        len += (size_t)n;
        body = strstr(buf, "\r\n\r\n");
        if (body && strrchr(body, '}'))
            break;
    }
    close(fd);
    return buf;
}

START_TEST(test_api_serves_a_tool_call)
{
    struct tools_ctx tools = {.vfs = v};
    struct call_service_options copt = {.cat = catalog_builtin(), .tools = &tools};
    struct errinfo e = {0};
    struct call_service *calls = call_service_new(&copt, &e);
    struct api_options opt = {.bind = "127.0.0.1",
                              .port = 0,
                              .workspace = ":memory:",
                              .fsync = false,
                              .tools = &tools,
                              .calls = calls};
    struct api *a = api_start(&opt, &e);
    char req[512];
    char *ans;
    int port;

    ck_assert_msg(a != NULL, "api_start: %s", e.msg);
    port = api_port(a);
    ck_assert_int_gt(port, 0);
    snprintf(req, sizeof(req),
             "POST /tool/write_file HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: "
             "application/json\r\nContent-Length: 32\r\nConnection: close\r\n\r\n"
             "{\"path\":\"/u.txt\",\"content\":\"hi\"}",
             port);
    ans = roundtrip(port, req);
    ck_assert_msg(strstr(ans, "HTTP/1.1 200") && strstr(ans, "\"ok\":true") &&
                      strstr(ans, "\"created\":true"),
                  "%s", ans);
    free(ans);
    snprintf(req, sizeof(req),
             "GET /health HTTP/1.1\r\nHost: evil.example:%d\r\nConnection: close\r\n\r\n", port);
    ans = roundtrip(port, req);
    ck_assert_msg(strstr(ans, "HTTP/1.1 403") && strstr(ans, "\"ok\":false"), "%s", ans);
    free(ans);
    api_stop(a);
    call_service_free(calls);
}
END_TEST

static Suite *api_suite(void)
{
    Suite *s = suite_create("api");
    TCase *tc = tcase_create("checks");

    tcase_add_test(tc, test_api_status_table);
    tcase_add_loop_test(tc, test_api_host_check, 0, sizeof(hosts) / sizeof(hosts[0]));
    tcase_add_loop_test(tc, test_api_origin_check, 0, sizeof(origins) / sizeof(origins[0]));
    tcase_add_test(tc, test_api_content_type_check);
    tcase_add_test(tc, test_api_token_check);
    tcase_add_test(tc, test_api_bind_needs_ipv6_for_ipv6);
    suite_add_tcase(s, tc);

    tc = tcase_create("json");
    suite_add_tcase(s, tc);

    tc = tcase_create("server");
    tcase_add_checked_fixture(tc, server_setup, server_teardown);
    tcase_add_test(tc, test_api_serves_a_tool_call);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(api_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
