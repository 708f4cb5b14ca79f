/* daemon/api_tool.c - POST /tool/<name> (see api.h): the body read and checked, the call run
 * through the call service, and its answer as JSON or, when the client accepts it, as an event
 * stream with progress and the console's lines. */
#include "api_int.h"

#include "api_events.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <civetweb.h>

#include "call.h"
#include "catalog.h"
#include "connwatch.h"
#include "console.h"
#include "http_guard.h"
#include "jsonbuf.h"
#include "jsonrpc.h"
#include "log.h"
#include "schema.h"
#include "tools.h"
#include "watch.h"

#define API_RESPONSE_MAX (256u << 20) /* far above any tool's capped output */
#define API_CHUNK        (64u << 10)

/* Grows buf for a body of unknown length (chunked), up to one byte past the limit so that an
 * over-long body can be told apart from one of exactly API_BODY_MAX bytes. */
static int grow_body(char **buf, size_t *cap, size_t len, struct errinfo *err)
{
    size_t ncap = *cap * 2 > API_BODY_MAX + 2u ? API_BODY_MAX + 2u : *cap * 2;
    char *p;

    if (len > API_BODY_MAX) {
        errinfo_set(err, ERR_TOO_LARGE, "request body is over the limit of %u bytes (32 MiB)",
                    API_BODY_MAX);
        return -1;
    }
    p = realloc(*buf, ncap);
    if (!p) {
        errinfo_set(err, ERR_NOMEM, "out of memory for a %zu-byte body", ncap);
        return -1;
    }
    *buf = p;
    *cap = ncap;
    return 0;
}

/* Reads the whole body (at most API_BODY_MAX bytes, Content-Length or chunked) into an owned
 * NUL-terminated buffer. A declared length over the limit fails before anything is read. */
static int read_body(struct mg_connection *conn, long long clen, char **out, size_t *outlen,
                     struct errinfo *err)
{
    size_t cap = clen >= 0 ? (size_t)clen + 1 : API_CHUNK, len = 0;
    char *buf;

    if (clen > (long long)API_BODY_MAX) {
        errinfo_set(err, ERR_TOO_LARGE,
                    "request body is %lld bytes; the limit is %u bytes (32 MiB)", clen,
                    API_BODY_MAX);
        return -1;
    }
    buf = malloc(cap);
    if (!buf) {
        errinfo_set(err, ERR_NOMEM, "out of memory for a %zu-byte body", cap);
        return -1;
    }
    for (;;) {
        int n;

        if (len + 1 == cap && (clen >= 0 || grow_body(&buf, &cap, len, err) < 0))
            break;
        n = http_guard_read(conn, buf + len, cap - 1 - len, err);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    if (!errinfo_is_set(err) && clen >= 0 && len != (size_t)clen)
        errinfo_set(err, ERR_INVALID, "request body ended after %zu of %lld bytes", len, clen);
    if (errinfo_is_set(err)) {
        free(buf);
        return -1;
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return 0;
}

/* Parses and checks the arguments; on failure answers and returns the status, else 0. */
static int parse_args(struct mg_connection *conn, const char *body, size_t len, cJSON **out)
{
    struct errinfo err = {0};
    struct jsonrpc_scan scan;
    cJSON *args;

    if (memchr(body, '\0', len))
        return api__send_error(conn, 400, "request body contains a NUL byte; send JSON text");
    args = jsonrpc_parse(body, len, &err);
    if (!args) {
        err.kind = ERR_INVALID; /* too deep is a bad request here, not a size problem */
        return api__send_errinfo(conn, &err);
    }
    if (!cJSON_IsObject(args)) {
        cJSON_Delete(args);
        return api__send_error(conn, 400,
                               "request body must be a JSON object of arguments ({} when "
                               "the tool takes none)");
    }
    jsonrpc_scan(body, len, &scan);
    if (scan.has_nul_escape) {
        cJSON_Delete(args);
        return api__send_error(conn, 400,
                               "arguments contain a NUL character (\\u0000), which no path "
                               "or text here may hold");
    }
    *out = args;
    return 0;
}

/* The body of a tool answer: {"ok":true,"id","result","structured"?,"mcp_result"?} for a
 * result (res without error), or {"ok":false,"id","error","timeout"?,"mcp_result"?} for a
 * failure (error set). mcp_result is an external server's whole CallToolResult (res given), also
 * on a failure when the server said isError, so that runbox can pass it on as /mcp does.
 * Returns 0 or -1 with err. */
static int build_tool_answer(struct jsonbuf *b, const char *id, const struct tools_result *res,
                             const char *error, bool timeout, struct errinfo *err)
{
    bool ok = res && !error;
    int rc = 0;

    jsonbuf_init(b, API_RESPONSE_MAX);
    if (jsonbuf_reserve(b, (res ? res->len + res->len / 16 : 256) + 64, err) < 0)
        return -1;
    rc |= jsonbuf_put(b, ok ? "{\"ok\":true,\"id\":\"" : "{\"ok\":false,\"id\":\"", ok ? 17 : 18,
                      err);
    rc |= jsonbuf_put(b, id, strlen(id), err);
    if (ok) {
        rc |= jsonbuf_put(b, "\",\"result\":", 11, err);
        if (res->is_json)
            rc |= jsonbuf_put(b, res->data, res->len, err);
        else
            rc |= jsonbuf_put_json_string(b, res->data, res->len, err);
        if (res->structured) {
            rc |= jsonbuf_put(b, ",\"structured\":", 14, err);
            rc |= jsonbuf_puts(b, res->structured, err);
        }
        if (res->call_result) { /* an external server's whole CallToolResult */
            rc |= jsonbuf_puts(b, ",\"mcp_result\":", err);
            rc |= jsonbuf_puts(b, res->call_result, err);
        }
    } else {
        rc |= jsonbuf_put(b, "\",\"error\":", 10, err);
        rc |= jsonbuf_put_json_string(b, error, strlen(error), err);
        if (timeout)
            rc |= jsonbuf_put(b, ",\"timeout\":true", 15, err);
        if (res && res->call_result) {
            rc |= jsonbuf_puts(b, ",\"mcp_result\":", err);
            rc |= jsonbuf_puts(b, res->call_result, err);
        }
    }
    rc |= jsonbuf_put(b, "}", 1, err);
    return rc ? -1 : 0;
}

static int send_tool_answer(struct mg_connection *conn, const char *id,
                            const struct tools_result *res, const char *error, bool timeout)
{
    struct jsonbuf b;
    struct errinfo err = {0};

    if (build_tool_answer(&b, id, res, error, timeout, &err) < 0) {
        jsonbuf_cleanup(&b);
        return api__send_errinfo(conn, &err);
    }
    api_send_json(conn, 200, b.data, b.len, NULL, NULL);
    jsonbuf_cleanup(&b);
    return 200;
}

/* ---- POST /tool/<name> as an event stream (Accept: text/event-stream) ---- */

/* A call answered on an event stream: its progress as it goes, then the answer. The progress
 * sink may run on the ticker's thread while the worker waits in call_run, hence the lock. */
struct tool_stream {
    struct api_sse sse;
    pthread_mutex_t mu;
    bool broken; /* a write failed: the client is gone */
};

static void stream_progress(void *ctx, double progress, double total, const char *message)
{
    struct tool_stream *ts = ctx;
    struct jsonbuf b = JSONBUF_INIT((size_t)1 << 20);
    char num[96];

    if (total > 0)
        snprintf(num, sizeof(num), "{\"progress\":%.15g,\"total\":%.15g", progress, total);
    else
        snprintf(num, sizeof(num), "{\"progress\":%.15g", progress);
    jsonbuf_puts(&b, num, NULL);
    if (message) {
        jsonbuf_puts(&b, ",\"message\":", NULL);
        jsonbuf_put_json_string(&b, message, strlen(message), NULL);
    }
    jsonbuf_puts(&b, "}", NULL);
    pthread_mutex_lock(&ts->mu);
    if (!b.failed && !ts->broken && api_sse_event(&ts->sse, "progress", NULL, b.data, b.len) < 0)
        ts->broken = true;
    pthread_mutex_unlock(&ts->mu);
    jsonbuf_cleanup(&b);
}

/* The console entries of the call's own run at or above the rank asked for (?log=<level>):
 * "log" events carrying {"id","level","source","message","pid"}. */
struct tool_stream_log {
    struct tool_stream *ts;
    int min_rank;
};

static int console_rank(int level)
{
    return level == CONSOLE_DEBUG ? 0 : level == CONSOLE_WARN ? 2 : level == CONSOLE_ERROR ? 3 : 1;
}

static void stream_log(void *ctx, const struct console_entry_view *e)
{
    struct tool_stream_log *lg = ctx;
    struct jsonbuf b = JSONBUF_INIT((size_t)1 << 20);
    char head[96];

    if (console_rank(e->level) < lg->min_rank)
        return;
    snprintf(head, sizeof(head), "{\"id\":%llu,\"pid\":%llu,\"level\":\"%s\",\"source\":\"%s\",",
             (unsigned long long)e->id, (unsigned long long)e->pid, console_level_name(e->level),
             console_source_name(e->source));
    jsonbuf_puts(&b, head, NULL);
    jsonbuf_puts(&b, "\"message\":", NULL);
    jsonbuf_put_json_string(&b, e->message, e->len, NULL);
    jsonbuf_puts(&b, "}", NULL);
    pthread_mutex_lock(&lg->ts->mu);
    if (!b.failed && !lg->ts->broken && api_sse_event(&lg->ts->sse, "log", NULL, b.data, b.len) < 0)
        lg->ts->broken = true;
    pthread_mutex_unlock(&lg->ts->mu);
    jsonbuf_cleanup(&b);
}

/* ?log=<console level> on a streamed call: its rank, or -1 (none, or not a level). */
static int log_rank_of(struct mg_connection *conn)
{
    const char *qs = mg_get_request_info(conn)->query_string;
    char v[16];
    int level;

    if (!qs || mg_get_var(qs, strlen(qs), "log", v, sizeof(v)) < 0)
        return -1;
    level = console_parse_level(v);
    return level < 0 ? -1 : console_rank(level);
}

/* The last event: {"status":200,"body":<the answer a plain request gets>}. */
static int stream_answer(struct tool_stream *ts, const char *id, const struct tools_result *res,
                         const char *error, bool timeout)
{
    struct jsonbuf body, ev = JSONBUF_INIT(API_RESPONSE_MAX + 64);
    struct errinfo err = {0};
    int status = 200;

    if (build_tool_answer(&body, id, res, error, timeout, &err) < 0) {
        jsonbuf_cleanup(&body);
        status = api_status_for(err.kind);
        jsonbuf_init(&body, 1u << 20);
        jsonbuf_puts(&body, "{\"ok\":false,\"error\":", NULL);
        jsonbuf_put_json_string(&body, err.msg, strlen(err.msg), NULL);
        jsonbuf_puts(&body, "}", NULL);
    }
    {
        char head[40];

        snprintf(head, sizeof(head), "{\"status\":%d,\"body\":", status);
        jsonbuf_puts(&ev, head, NULL);
    }
    jsonbuf_put(&ev, body.data ? body.data : "{}", body.data ? body.len : 2, NULL);
    jsonbuf_puts(&ev, "}", NULL);
    pthread_mutex_lock(&ts->mu);
    if (!ev.failed && !ts->broken && api_sse_event(&ts->sse, "answer", NULL, ev.data, ev.len) == 0)
        api_sse_end(&ts->sse);
    pthread_mutex_unlock(&ts->mu);
    jsonbuf_cleanup(&body);
    jsonbuf_cleanup(&ev);
    return status;
}

/* True when the client asked for an event stream (Accept names text/event-stream) and the
 * stream can end without closing the connection (not an HTTP/1.0 keep-alive one, which gets
 * the plain answer). */
static bool wants_stream(struct mg_connection *conn)
{
    const char *accept = mg_get_header(conn, "Accept");

    return accept && strstr(accept, "text/event-stream") != NULL && api_sse_can_end(conn);
}

static void cancel_call_cb(void *arg)
{
    call_cancel(arg);
}

/* Cancels c when the client closes the connection while it runs. Only calls that draw from a
 * budget are watched: they are the ones that may run long, and finding the socket costs a scan
 * of the open descriptors. Returns the watch entry, or -1 when not watched. */
static int watch_client(struct api *a, struct mg_connection *conn, struct call *c)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    int fd;

    if (catalog_tool_budget(call_tool(c)) == CATALOG_BUDGET_NONE)
        return -1;
    fd = connwatch_find_socket(ri->remote_addr, ri->remote_port, ri->server_port);
    if (fd < 0) {
        log_debug("api: call %s: the client's socket was not found; it is not watched", call_id(c));
        return -1;
    }
    return connwatch_add(a->watch, fd, cancel_call_cb, c, NULL);
}

#define CLIENT_NAME_MAX 48 /* X-Runbox-Client: bytes */

/* True when v is a usable X-Runbox-Client: 1..CLIENT_NAME_MAX of [A-Za-z0-9_.:-]. */
static bool client_name_ok(const char *v)
{
    size_t n = strlen(v);

    if (n == 0 || n > CLIENT_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)v[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '.' || ch == ':' || ch == '-'))
            return false;
    }
    return true;
}

/* Runs one tool call through the call service and answers it. */
static int run_tool(struct api *a, struct mg_connection *conn, const char *name, cJSON *args)
{
    struct schema_report rep;
    struct errinfo err = {0};
    struct tools_result res = {0};
    const char *client = mg_get_header(conn, "X-Runbox-Client");
    struct call *c;
    char who[CLIENT_NAME_MAX + 8];
    struct tool_stream ts = {0};
    struct tool_stream_log lg = {.ts = &ts};
    char id[48];
    int watch, status;
    bool streaming;

    if (client && !client_name_ok(client))
        return api__send_error(
            conn, 400,
            "X-Runbox-Client must be 1 to 48 characters of letters, digits and _.:- "
            "(it names the client, so that Studio serves clients in turn); leave "
            "it out to be served as an unnamed client");
    c = call_begin(a->calls, name, args, &rep, &err);
    if (!c) {
        if (err.kind == ERR_NOT_FOUND)
            return api__send_error(conn, 404, err.msg);
        if (err.kind == ERR_INVALID)
            return api__send_error_ex(conn, 400, err.msg, &rep, NULL, NULL);
        call_service_mint_id(a->calls, id, sizeof(id)); /* busy: a tool answer, with an id */
        return send_tool_answer(conn, id, NULL, err.msg, false);
    }
    if (client) {
        snprintf(who, sizeof(who), "http:%s", client);
        call_set_client(c, who);
    }
    watch = watch_client(a, conn, c);
    /* Errors found before the call started are answered as plain JSON either way. */
    streaming = wants_stream(conn) && api_sse_begin(&ts.sse, conn) == 0;
    if (streaming) {
        pthread_mutex_init(&ts.mu, NULL);
        call_set_progress(c, stream_progress, &ts);
        lg.min_rank = log_rank_of(conn);
        if (lg.min_rank >= 0)
            call_set_log(c, stream_log, &lg);
    }
    if (call_run(c, &res, &err) < 0) {
        log_debug("api: call %s %s failed: %s", call_id(c), name, err.msg);
        status = streaming ? stream_answer(&ts, call_id(c), NULL, res.data ? res.data : err.msg,
                                           err.kind == ERR_TIMEOUT)
                           : send_tool_answer(conn, call_id(c), NULL, res.data ? res.data : err.msg,
                                              err.kind == ERR_TIMEOUT);
    } else if (res.call_result && res.is_error) {
        /* An external server said isError: a tool failure, with its text as the error. */
        status = streaming ? stream_answer(&ts, call_id(c), &res, res.data, false)
                           : send_tool_answer(conn, call_id(c), &res, res.data, false);
    } else {
        status = streaming ? stream_answer(&ts, call_id(c), &res, NULL, false)
                           : send_tool_answer(conn, call_id(c), &res, NULL, false);
    }
    if (streaming)
        pthread_mutex_destroy(&ts.mu);
    connwatch_remove(a->watch, watch);
    tools_result_cleanup(&res);
    call_end(c);
    return status;
}

/* Answers 413 and ends the connection, since the rest of the body is never read. Closing a socket
 * with unread data makes the kernel reset it, and the reset can destroy the answer before the
 * client reads it; so what the client sends next is read and dropped for a moment first, as a
 * "lingering close" (http_guard_drain: until the client pauses, 2 s and 32 MiB at most). */
static int refuse_body(struct mg_connection *conn, const char *msg)
{
    api__send_error_ex(conn, 413, msg, NULL, "Connection", "close");
    http_guard_drain(conn);
    return 413;
}

static bool expects_continue(const struct mg_connection *conn)
{
    const char *expect = mg_get_header(conn, "Expect");
    const char *version = mg_get_request_info(conn)->http_version;

    return expect && strcasecmp(expect, "100-continue") == 0 && version &&
           strcmp(version, "1.1") == 0;
}

/* True when the request has no body: no Content-Length (or 0) and no chunked encoding. */
static bool is_bodyless(struct mg_connection *conn, const struct mg_request_info *ri)
{
    return ri->content_length <= 0 && !mg_get_header(conn, "Transfer-Encoding");
}

int api__handle_tool(struct api *a, struct mg_connection *conn, const char *name)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    struct errinfo err = {0};
    char *body = NULL;
    size_t len = 0;
    cJSON *args = NULL;
    int status;

    /* A POST without a body carries nothing to type: `curl -X POST .../tool/list_dir` runs
     * the tool with {}. Any body must be declared JSON, which no cross-site form can do. */
    if (!(is_bodyless(conn, ri) && !mg_get_header(conn, "Content-Type")) &&
        !api_content_type_ok(mg_get_header(conn, "Content-Type")))
        return api__send_error(conn, 415,
                               "POST bodies must be JSON: send Content-Type: "
                               "application/json");
    /* civetweb answers "Expect: 100-continue" only for its own file uploads; without the
     * interim answer curl waits a second before sending bodies over 1 MiB. A body over the
     * limit gets its 413 instead, before the client sends it. */
    if (ri->content_length <= (long long)API_BODY_MAX && expects_continue(conn))
        mg_write(conn, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    if (read_body(conn, ri->content_length, &body, &len, &err) < 0) {
        if (err.kind == ERR_TOO_LARGE)
            return refuse_body(conn, err.msg);
        /* The body could not be read: the connection cannot carry another request. */
        return api__send_error_ex(conn, err.kind == ERR_TIMEOUT ? 408 : api_status_for(err.kind),
                                  err.msg, NULL, "Connection", "close");
    }
    /* An empty body is the empty arguments object. */
    status = parse_args(conn, len ? body : "{}", len ? len : 2, &args);
    free(body);
    if (status)
        return status;
    status = run_tool(a, conn, name, args);
    cJSON_Delete(args);
    return status;
}
