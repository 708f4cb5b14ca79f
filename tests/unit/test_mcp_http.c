/* tests/unit/test_mcp_http.c - the HTTP transport (runbox/mcp_http.h) through a real loopback
 * server (mcp_http_serve on a free port) and a raw HTTP/1.1 client, for the cases a real
 * client's timing found: the official conformance suite's SDK client deletes its session while
 * its GET stream is still open. And a client's queue (mcp_http_queue.c), which is pure. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runbox/mcp.h"
#include "runbox/mcp_http.h"

#include "mcp_http_int.h" /* the queue's pure functions */

static struct mcp_server *srv;
static struct mcp_http_server *http;
static int port;

static void tool_hello(void *arg, struct mcp_call *c)
{
    (void)arg;
    mcp_call_result_text(c, "hello", 5);
}

static void setup(void)
{
    static const struct mcp_server_info info = {.name = "http-test", .version = "1.0.0"};
    static const struct mcp_tool hello = {.name = "hello", .handler = tool_hello};
    struct mcp_http_options opt = {.mcp_path = "/mcp"};
    struct errinfo err = {0};

    srv = mcp_server_new(&info, NULL);
    ck_assert_ptr_nonnull(srv);
    ck_assert_int_eq(mcp_server_add_tool(srv, &hello, NULL), 0);
    opt.server = srv;
    http = mcp_http_serve(&opt, "127.0.0.1", 0, 8, &err);
    ck_assert_msg(http != NULL, "mcp_http_serve: %s", err.msg);
    port = mcp_http_server_port(http);
}

static void teardown(void)
{
    mcp_http_server_stop(http);
    mcp_server_free(srv);
}

static int dial(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ck_assert_int_ge(fd, 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* Sends a request: method, extra header lines (each ending in \r\n), body (may be ""). */
static void send_request(int fd, const char *method, const char *headers, const char *body)
{
    char req[4096];
    int n = snprintf(req, sizeof(req),
                     "%s /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sContent-Length: %zu\r\n\r\n%s",
                     method, port, headers, strlen(body), body);

    ck_assert_int_lt(n, (int)sizeof(req));
    ck_assert_int_eq(write(fd, req, (size_t)n), n);
}

/* Reads until the end of the response head (and what came with it) into buf; returns the
 * bytes read. */
static size_t read_head(int fd, char *buf, size_t size)
{
    size_t len = 0;

    while (len + 1 < size) {
        ssize_t n = read(fd, buf + len, size - 1 - len);

        ck_assert_int_gt(n, 0);
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n"))
            return len;
    }
    ck_abort_msg("response head too long");
    return 0;
}

/* The value of a response header (the first, case-sensitive name), copied into out. */
static void header_of(const char *head, const char *name, char *out, size_t size)
{
    const char *p = strstr(head, name);
    size_t n;

    ck_assert_msg(p != NULL, "no %s in: %s", name, head);
    p += strlen(name);
    while (*p == ':' || *p == ' ')
        p++;
    n = strcspn(p, "\r\n");
    ck_assert_uint_lt(n, size);
    memcpy(out, p, n);
    out[n] = '\0';
}

static const char accept_both[] = "Content-Type: application/json\r\n"
                                  "Accept: application/json, text/event-stream\r\n";

/* Opens a legacy session with initialize; returns its Mcp-Session-Id in sid. */
static void open_session(char *sid, size_t size)
{
    char head[4096];
    int fd = dial();

    send_request(fd, "POST", accept_both,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                 "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                 "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
    read_head(fd, head, sizeof(head));
    ck_assert_msg(strncmp(head, "HTTP/1.1 200", 12) == 0, "initialize: %s", head);
    header_of(head, "Mcp-Session-Id", sid, size);
    close(fd);
}

/* DELETE ends the session, and with it the session's GET stream: the stream's response ends
 * (its last chunk), and the session is freed only once that stream is done with it. (The
 * session used to be freed under the GET stream, which then used it: a use-after-free that
 * AddressSanitizer reported during the conformance suite.) */
START_TEST(test_mcp_http_delete_ends_the_get_stream)
{
    char sid[128], hdr[256], head[4096], tail[4096];
    int get_fd, del_fd;
    size_t len;

    open_session(sid, sizeof(sid));
    snprintf(hdr, sizeof(hdr), "Accept: text/event-stream\r\nMcp-Session-Id: %s\r\n", sid);
    get_fd = dial();
    send_request(get_fd, "GET", hdr, "");
    read_head(get_fd, head, sizeof(head));
    ck_assert_msg(strncmp(head, "HTTP/1.1 200", 12) == 0, "GET: %s", head);

    snprintf(hdr, sizeof(hdr), "Mcp-Session-Id: %s\r\n", sid);
    del_fd = dial();
    send_request(del_fd, "DELETE", hdr, "");
    read_head(del_fd, head, sizeof(head));
    ck_assert_msg(strncmp(head, "HTTP/1.1 200", 12) == 0, "DELETE: %s", head);
    close(del_fd);

    /* The GET stream ends: its chunked body's last chunk arrives. */
    len = 0;
    for (;;) {
        ssize_t n = read(get_fd, tail + len, sizeof(tail) - 1 - len);

        ck_assert_msg(n > 0, "the GET stream closed without its last chunk");
        len += (size_t)n;
        tail[len] = '\0';
        if (strstr(tail, "0\r\n\r\n"))
            break;
        if (len > sizeof(tail) / 2) { /* keep-alive comments: keep the end only */
            memmove(tail, tail + len - 16, 16);
            len = 16;
        }
    }
    close(get_fd);

    /* The session is gone for good. */
    del_fd = dial();
    send_request(del_fd, "DELETE", hdr, "");
    read_head(del_fd, head, sizeof(head));
    ck_assert_msg(strncmp(head, "HTTP/1.1 404", 12) == 0, "second DELETE: %s", head);
    close(del_fd);
}
END_TEST

/* Reads a whole response with a Content-Length body into buf. */
static void read_response(int fd, char *buf, size_t size)
{
    size_t len = read_head(fd, buf, size), want;
    char clen[32];
    const char *body;

    header_of(buf, "Content-Length", clen, sizeof(clen));
    body = strstr(buf, "\r\n\r\n") + 4;
    want = (size_t)(body - buf) + strtoul(clen, NULL, 10);
    ck_assert_uint_lt(want, size);
    while (len < want) {
        ssize_t n = read(fd, buf + len, want - len);

        ck_assert_int_gt(n, 0);
        len += (size_t)n;
    }
    buf[len] = '\0';
}

/* RFC 9110 section 5.5: a field value's leading and trailing whitespace is not part of it. The
 * 2026-07-28 headers are compared with the body after it is taken off (conformance
 * http-header-validation, sep-2243-server-accepts-whitespace-header-value). */
START_TEST(test_mcp_http_header_values_are_trimmed)
{
    char resp[8192];
    int fd = dial();

    send_request(fd, "POST",
                 "Content-Type: application/json\r\n"
                 "Accept: application/json, text/event-stream\r\n"
                 "MCP-Protocol-Version:   2026-07-28  \r\n"
                 "Mcp-Method: tools/call  \r\n"
                 "Mcp-Name:   hello  \r\n",
                 "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{"
                 "\"name\":\"hello\",\"_meta\":{"
                 "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                 "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    read_response(fd, resp, sizeof(resp));
    close(fd);
    ck_assert_msg(strncmp(resp, "HTTP/1.1 200", 12) == 0, "%s", resp);
    ck_assert_msg(strstr(resp, "\"text\":\"hello\"") != NULL, "%s", resp);
}
END_TEST

/* Every answer says how long the server keeps the idle connection (civetweb's
 * keep_alive_timeout_ms; mcp_http_serve() uses 5 s). Without it a client reused a connection
 * the server was closing at that very moment, and its request failed: the conformance suite's
 * "fetch failed" after a scenario that left a pooled connection idle for 500 ms. */
START_TEST(test_mcp_http_answers_say_how_long_idle_connections_live)
{
    char head[4096], sid[128];
    int fd = dial();

    send_request(fd, "POST", accept_both, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
    read_head(fd, head, sizeof(head));
    close(fd);
    ck_assert_msg(strstr(head, "\r\nKeep-Alive: timeout=5\r\n") != NULL, "%s", head);
    open_session(sid, sizeof(sid)); /* and a session's answer too */
}
END_TEST

/* ---- strict framing and deadlines (issue 12 §3, §4): the library's own server ---- */

/* Sends raw bytes on a fresh connection and reads everything until the server closes it (a
 * server that keeps it open fails the test by the tcase timeout). Returns the bytes read. */
static size_t exchange(const char *bytes, size_t n, char *buf, size_t size)
{
    int fd = dial();
    size_t len = 0;

    ck_assert_int_eq(write(fd, bytes, n), (ssize_t)n);
    for (;;) {
        ssize_t r = read(fd, buf + len, size - 1 - len);

        if (r <= 0)
            break;
        len += (size_t)r;
        ck_assert_uint_lt(len, size - 1);
    }
    buf[len] = '\0';
    close(fd);
    return len;
}

/* The framing cases: the request line, what follows the Host line (headers, body), the status
 * and words the JSON-RPC error must hold. */
static const struct {
    const char *line, *rest, *status, *words;
} framing[] = {
    {"POST /mcp HTTP/1.1",
     "Content-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
     "2f\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}\r\n0\r\n\r\n",
     "400", "both Content-Length and Transfer-Encoding"},
    {"POST /mcp HTTP/1.1",
     "Content-Type: application/json\r\nTransfer-Encoding : chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
     "400", "whitespace before its colon"},
    {"POST /mcp HTTP/1.1",
     "Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", "400",
     "two Content-Length headers"},
    {"GET /mcp HTTP/1.1", "Host: evil.example\r\n\r\n", "400", "two Host headers"},
    {"POST /mcp%00x HTTP/1.1", "Content-Length: 0\r\n\r\n", "400", "%00 (a NUL byte)"},
    {"POST /mcp HTTP/1.1",
     "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
     "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
     "400", "chunked request body is malformed"},
    {"BREW /mcp HTTP/1.1", "\r\n", "400", "the first line is METHOD"},
    {"GET /mcp HTTP/2.0", "\r\n", "505", "send HTTP/1.1"},
};

/* Each ambiguous request gets one JSON-RPC error answer naming the problem, and the connection
 * closes (nothing after it is read as a request). civetweb took all of them, or answered in
 * plain text. */
START_TEST(test_mcp_http_refuses_ambiguous_framing)
{
    char req[1024], resp[8192];
    int n = snprintf(req, sizeof(req), "%s\r\nHost: 127.0.0.1:%d\r\n%s", framing[_i].line, port,
                     framing[_i].rest);
    size_t len;

    ck_assert_int_lt(n, (int)sizeof(req));
    len = exchange(req, (size_t)n, resp, sizeof(resp));
    ck_assert_msg(len > 12 && strncmp(resp + 9, framing[_i].status, 3) == 0, "row %d: %s", _i,
                  resp);
    ck_assert_msg(strstr(resp, "Content-Type: application/json") != NULL, "row %d: %s", _i, resp);
    ck_assert_msg(strstr(resp, "\"error\":{\"code\":-32600") != NULL, "row %d: %s", _i, resp);
    ck_assert_msg(strstr(resp, framing[_i].words) != NULL, "row %d: %s", _i, resp);
    ck_assert_msg(strstr(resp, "\nHTTP/1.") == NULL && strstr(resp, "}HTTP/1.") == NULL,
                  "row %d: two answers: %s", _i, resp);
}
END_TEST

/* A head that stops coming is answered 408 and closed after the guard's head limit (10 s by
 * default), not civetweb's 30 s read timeout restarted at every byte. */
START_TEST(test_mcp_http_cuts_a_stalled_head)
{
    char req[128], resp[4096];
    int n = snprintf(req, sizeof(req), "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-A: b", port);

    exchange(req, (size_t)n, resp, sizeof(resp));
    ck_assert_msg(strncmp(resp, "HTTP/1.1 408", 12) == 0, "%s", resp);
    ck_assert_msg(strstr(resp, "request head did not arrive in time") != NULL, "%s", resp);
}
END_TEST

/* ---- a client's queue (mcp_http_queue.c) ---- */

static char *progress_text(const char *token, int value)
{
    static char buf[160];

    snprintf(buf, sizeof(buf),
             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
             "\"progressToken\":%s,\"progress\":%d}}",
             token, value);
    return buf;
}

static void push(struct mqueue *q, const char *text, enum mcp_route_kind kind)
{
    struct qmsg *m = mcp_http__qmsg(text, strlen(text), kind);

    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(mcp_http__queue_push(q, m, (size_t)1 << 20), 0);
}

/* Pops the next message and checks its text. */
static void pop_is(struct mqueue *q, const char *text)
{
    struct qmsg *m = mcp_http__queue_pop(q);

    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(m->text, text);
    free(m);
}

START_TEST(test_mcp_http_queue_finds_the_progress_token)
{
    static const struct {
        const char *token; /* NULL: the text is no progress notification */
        const char *text;
    } rows[] = {
        {"7", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
              "\"progressToken\":7,\"progress\":1}}"},
        {"\"a\\\",b\"", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
                        "\"progressToken\":\"a\\\",b\",\"progress\":1}}"},
        {NULL, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}"},
        {NULL, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
               "\"progressToken\":\"cut"},
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        size_t off = 0, len = 0;
        bool is = mcp_http__progress_token(rows[i].text, strlen(rows[i].text), &off, &len);

        ck_assert_msg(is == (rows[i].token != NULL), "row %zu", i);
        if (is)
            ck_assert_msg(len == strlen(rows[i].token) &&
                              memcmp(rows[i].text + off, rows[i].token, len) == 0,
                          "row %zu: %.*s", i, (int)len, rows[i].text + off);
    }
}
END_TEST

/* A newer progress for a token takes the waiting one's place; other tokens, logs and answers
 * keep theirs; once taken, the next progress of the token queues anew. */
START_TEST(test_mcp_http_queue_coalesces_progress_in_place)
{
    static const char log_line[] =
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}";
    static const char answer[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
    struct mqueue q = {0};
    char want[160];

    push(&q, progress_text("1", 1), MCP_ROUTE_REQUEST);
    push(&q, log_line, MCP_ROUTE_REQUEST);
    push(&q, progress_text("\"b\"", 1), MCP_ROUTE_REQUEST);
    for (int i = 2; i <= 1000; i++)
        push(&q, progress_text("1", i), MCP_ROUTE_REQUEST);
    push(&q, progress_text("\"b\"", 2), MCP_ROUTE_REQUEST);
    push(&q, progress_text("1", 1001), MCP_ROUTE_SESSION); /* not routed as a request's */
    push(&q, answer, MCP_ROUTE_RESPONSE);
    ck_assert_uint_eq(q.nslots, 2);
    snprintf(want, sizeof(want), "%s", progress_text("1", 1000));
    ck_assert_uint_eq(q.bytes, strlen(want) + strlen(log_line) + strlen(progress_text("\"b\"", 2)) +
                                   strlen(progress_text("1", 1001)) + strlen(answer));
    pop_is(&q, want);
    pop_is(&q, log_line);
    snprintf(want, sizeof(want), "%s", progress_text("\"b\"", 2));
    pop_is(&q, want);
    ck_assert_uint_eq(q.nslots, 0);
    push(&q, progress_text("1", 1002), MCP_ROUTE_REQUEST); /* after the answer: a new slot */
    snprintf(want, sizeof(want), "%s", progress_text("1", 1001));
    pop_is(&q, want);
    pop_is(&q, answer);
    snprintf(want, sizeof(want), "%s", progress_text("1", 1002));
    pop_is(&q, want);
    ck_assert_ptr_null(mcp_http__queue_pop(&q));
    ck_assert_uint_eq(q.bytes, 0);
    mcp_http__queue_cleanup(&q);
}
END_TEST

/* The limit still holds for what cannot be coalesced; a refused message leaves q as it was. */
START_TEST(test_mcp_http_queue_refuses_past_its_limit)
{
    struct mqueue q = {0};
    const char *p = progress_text("9", 1);
    size_t max = 2 * strlen(p);
    struct qmsg *m;

    for (int i = 0; i < 3; i++) {
        m = mcp_http__qmsg(p, strlen(p), MCP_ROUTE_SESSION);
        ck_assert_int_eq(mcp_http__queue_push(&q, m, max), i < 2 ? 0 : -1);
    }
    ck_assert_uint_eq(q.bytes, max);
    p = progress_text("9", 2);
    m = mcp_http__qmsg(p, strlen(p), MCP_ROUTE_REQUEST);
    ck_assert_int_eq(mcp_http__queue_push(&q, m, max), -1);
    ck_assert_uint_eq(q.bytes, max);
    mcp_http__queue_cleanup(&q); /* frees what waits */
    ck_assert_ptr_null(q.head);
}
END_TEST

static Suite *mcp_http_suite(void)
{
    Suite *suite = suite_create("mcp_http");
    TCase *tc = tcase_create("sessions");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mcp_http_delete_ends_the_get_stream);
    suite_add_tcase(suite, tc);
    tc = tcase_create("headers");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mcp_http_header_values_are_trimmed);
    tcase_add_test(tc, test_mcp_http_answers_say_how_long_idle_connections_live);
    suite_add_tcase(suite, tc);
    tc = tcase_create("strict");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_mcp_http_refuses_ambiguous_framing, 0,
                        (int)(sizeof(framing) / sizeof(framing[0])));
    tcase_add_test(tc, test_mcp_http_cuts_a_stalled_head);
    suite_add_tcase(suite, tc);
    tc = tcase_create("queue");
    tcase_add_test(tc, test_mcp_http_queue_finds_the_progress_token);
    tcase_add_test(tc, test_mcp_http_queue_coalesces_progress_in_place);
    tcase_add_test(tc, test_mcp_http_queue_refuses_past_its_limit);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void)
{
    SRunner *sr = srunner_create(mcp_http_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
