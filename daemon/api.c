/* daemon/api.c - runboxd's HTTP API (see api.h).
 *
 * DESIGN: one civetweb begin_request callback takes every request, so civetweb itself never
 * serves anything (there is no document root). The request path is kept lean because the proxy
 * sends every tool call through it: the checks are string compares on headers civetweb already
 * parsed, the body is read once into one buffer, and the answer is written with an exact
 * Content-Length so the connection stays alive. Nothing above debug is logged per request. */
#include "api.h"
#include "api_resources.h"
#include "api_bridge.h"
#include "api_events.h"
#include "api_mcp.h"
#include "status_page.h"

#include <arpa/inet.h>
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <civetweb.h>

#include "call.h"
#include "catalog.h"
#include "clocks.h"
#include "connwatch.h"
#include "console.h"
#include "http_conn.h"
#include "http_guard.h"
#include "jsonbuf.h"
#include "jsonrpc.h"
#include "log.h"
#include "schema.h"
#include "proc.h"
#include "registry.h"
#include "quota.h"
#include "utf8.h"
#include "threadstack.h"
#include "tools.h"
#include "watch.h"
#include "bridge.h"
#include "vfs.h"

#define API_RESPONSE_MAX (256u << 20) /* far above any tool's capped output */
#define API_CHUNK        (64u << 10)

struct api {
    struct mg_context *mg;
    char bind[64];
    _Atomic int port;
    char *token; /* owned, or NULL */
    char *workspace;
    bool fsync, allow_network;
    const struct tools_ctx *tools; /* borrowed */
    const struct catalog *cat;
    char *tools_json; /* owned: {"tools":[...]} */
    size_t tools_len;
    bool lib_ready;             /* mg_init_library was called */
    struct call_service *calls; /* borrowed: every tool call goes through it */
    struct connwatch *watch;    /* owned: cancels long calls whose client went away */
    struct api_mcp *mcp;        /* owned: /mcp, /sse, /message, /ws */
    struct api_events *events;  /* owned: GET /events */
    struct http_guard *guard;   /* owned: deadlines for request heads and bodies */
    struct status_page *page;   /* owned: GET / and its browser rules */
    int threads;                /* civetweb workers */
    int64_t started_ms;         /* clocks_mono_ms() at api_start, for /health's uptime_ms */
};

/* ---- responses ---- */

/* The Date header's value, formatted once a second for all workers and copied into out (at
 * least API_DATE_SIZE bytes). Not per thread: any thread-local storage of ours is reserved at
 * the top of each of the 320 workers' stacks, and 48 bytes of it was what pushed an idle
 * worker's deepest frame (glibc's vfprintf under civetweb's thread naming) onto a third page. */
#define API_DATE_SIZE 40

static void http_date(char *out)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static char buf[API_DATE_SIZE]; /* mu */
    static time_t last = -1;        /* mu */
    time_t now = time(NULL);
    bool fresh;
    struct tm tm;

    pthread_mutex_lock(&mu);
    fresh = now == last;
    if (fresh)
        memcpy(out, buf, sizeof(buf));
    pthread_mutex_unlock(&mu);
    if (fresh)
        return;
    /* The first answer of this second formats it (outside the lock) for the others. */
    if (!gmtime_r(&now, &tm) || !strftime(out, API_DATE_SIZE, "%a, %d %b %Y %H:%M:%S GMT", &tm))
        out[0] = '\0'; /* cannot happen for a clock of this century */
    pthread_mutex_lock(&mu);
    memcpy(buf, out, sizeof(buf));
    last = now;
    pthread_mutex_unlock(&mu);
}

#define API_STR_(x) #x
#define API_STR(x)  API_STR_(x)

const char *api_conn_line(const struct mg_connection *conn)
{
    return http_conn_keeps_alive(conn) ? "Keep-Alive: timeout=" API_STR(API_KEEPALIVE_S) "\r\n"
                                       : "Connection: close\r\n";
}

/* True when the answer itself says Connection: close (refuse_body()). */
static bool says_close(const char *extra_name, const char *extra_value)
{
    return extra_name && strcasecmp(extra_name, "Connection") == 0 && extra_value &&
           strcasecmp(extra_value, "close") == 0;
}

/* Sends one complete response; extra_name/extra_value add one header (may be NULL).
 * The head is written by hand rather than with mg_response_header_*(): a small answer then
 * leaves in one write (one segment with TCP_NODELAY), and the head may follow the interim
 * "100 Continue", after which civetweb's header functions send nothing. (civetweb would also
 * format Date with gmtime(), whose shared buffer races between workers.) An answer on a
 * connection that stays open says for how long it may sit idle (Keep-Alive: timeout=S,
 * civetweb's keep_alive_timeout_ms): a client that keeps connections (Node's http.Agent with a
 * timeout, undici) then stops reusing one before runboxd closes it, instead of sending a request
 * into a connection that is being closed and getting no answer ("socket hang up"). One that
 * civetweb closes after it (http_conn.h) says Connection: close. */
int api_send_json(struct mg_connection *conn, int status, const char *body, size_t len,
                  const char *extra_name, const char *extra_value)
{
    static const char oom[] = "{\"ok\":false,\"error\":\"out of memory\"}";
    char out[8192], date[API_DATE_SIZE], *valid = NULL;
    const char *ka = says_close(extra_name, extra_value) ? "" : api_conn_line(conn);
    size_t vlen = 0;
    int n;

    /* Every byte sent is UTF-8: a command's output or a file name may not be, and cJSON passes
     * such bytes through. Each bad byte becomes U+FFFD (names were escaped before, vfs.h). */
    if (utf8_make_valid(body, len, &valid, &vlen) < 0) {
        status = 503;
        body = oom;
        len = sizeof(oom) - 1;
    } else if (valid) {
        body = valid;
        len = vlen;
    }
    http_date(date);
    n = snprintf(out, sizeof(out),
                 "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                 "Date: %s\r\nCache-Control: no-store\r\n%s%s%s%s%s\r\n",
                 status, mg_get_response_code_text(conn, status), len, date, ka,
                 extra_name ? extra_name : "", extra_name ? ": " : "",
                 extra_name ? extra_value : "", extra_name ? "\r\n" : "");
    if (n >= 0 && (size_t)n < sizeof(out) && (size_t)n + len <= sizeof(out)) {
        memcpy(out + n, body, len);
        mg_write(conn, out, (size_t)n + len);
    } else if (n >= 0 && (size_t)n < sizeof(out)) {
        mg_write(conn, out, (size_t)n);
        mg_write(conn, body, len);
    } /* else cannot happen: every part of the head is short */
    free(valid);
    return status;
}

/* {"ok":false,"error":msg[,"details":[...]]} with this status. */
static int send_error_ex(struct mg_connection *conn, int status, const char *msg,
                         const struct schema_report *rep, const char *hname, const char *hval)
{
    struct jsonbuf b;
    static const char oom[] = "{\"ok\":false,\"error\":\"out of memory\"}";
    int rc = 0;

    jsonbuf_init(&b, 1u << 20);
    rc |= jsonbuf_put(&b, "{\"ok\":false,\"error\":", 20, NULL);
    rc |= jsonbuf_put_json_string(&b, msg, strlen(msg), NULL);
    if (rep) {
        size_t n = rep->count < SCHEMA_MAX_ERRORS ? rep->count : SCHEMA_MAX_ERRORS;

        rc |= jsonbuf_put(&b, ",\"details\":[", 12, NULL);
        for (size_t i = 0; i < n; i++) {
            if (i)
                rc |= jsonbuf_put(&b, ",", 1, NULL);
            rc |= jsonbuf_put_json_string(&b, rep->msgs[i], strlen(rep->msgs[i]), NULL);
        }
        rc |= jsonbuf_put(&b, "]", 1, NULL);
    }
    rc |= jsonbuf_put(&b, "}", 1, NULL);
    if (rc)
        api_send_json(conn, 503, oom, sizeof(oom) - 1, NULL, NULL);
    else
        api_send_json(conn, status, b.data, b.len, hname, hval);
    jsonbuf_cleanup(&b);
    return status;
}

int api_send_error(struct mg_connection *conn, int status, const char *msg, const char *hname,
                   const char *hval)
{
    return send_error_ex(conn, status, msg, NULL, hname, hval);
}

static int send_error(struct mg_connection *conn, int status, const char *msg)
{
    return send_error_ex(conn, status, msg, NULL, NULL, NULL);
}

/* A request-level failure: the table picks the status. */
static int send_errinfo(struct mg_connection *conn, const struct errinfo *err)
{
    return send_error(conn, api_status_for(err->kind), err->msg);
}

/* ---- the endpoints ---- */

/* The bridge's status ({"connected":false,...} when it is not running). */
static int put_studio_status(struct api *a, struct jsonbuf *b)
{
    cJSON *st = a->tools && a->tools->bridge ? bridge_health_json(a->tools->bridge) : NULL;
    char *text = st ? cJSON_PrintUnformatted(st) : NULL;
    int rc;

    cJSON_Delete(st);
    if (text)
        rc = jsonbuf_put(b, text, strlen(text), NULL);
    else
        rc = jsonbuf_puts(b,
                          "{\"connected\":false,\"active\":null,\"instances\":[],"
                          "\"queue_depth\":0}",
                          NULL);
    free(text);
    return rc;
}

/* The exec engine's sandbox facts (proc.h), or what is known without it. */
static int put_sandbox_status(struct api *a, struct jsonbuf *b)
{
    cJSON *j = a->tools && a->tools->proc ? proc_sandbox_json(a->tools->proc) : NULL;
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    int rc = 0;

    cJSON_Delete(j);
    if (text) {
        rc = jsonbuf_puts(b, text, NULL);
        free(text);
        return rc;
    }
    /* Only a daemon built without the exec engine (the unit test) gets here. */
    return jsonbuf_puts(b,
                        "{\"available\":false,\"bwrap\":null,"
                        "\"reason\":\"exec is not running in this daemon\"}",
                        NULL);
}

/* ,"<key>":<j as compact JSON> (null when j is NULL); takes j. */
static int put_member(struct jsonbuf *b, const char *key, cJSON *j)
{
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    int rc;

    cJSON_Delete(j);
    rc = jsonbuf_puts(b, ",\"", NULL);
    rc |= jsonbuf_puts(b, key, NULL);
    rc |= jsonbuf_puts(b, "\":", NULL);
    rc |= jsonbuf_puts(b, text ? text : "null", NULL);
    free(text);
    return rc;
}

/* ,"calls":{...}: the call service's budget table (call.h). */
static int put_calls_status(struct api *a, struct jsonbuf *b)
{
    return put_member(b, "calls", call_service_budget_json(a->calls));
}

/* ,"http":{...}: the workers and the deadlines for slow requests (http_guard.h). */
static int put_http_status(struct api *a, struct jsonbuf *b)
{
    return put_member(b, "http", http_guard_status_json(a->guard));
}

/* ,"mcp":{...}: the MCP endpoints' sessions and streams. */
static int put_mcp_status(struct api *a, struct jsonbuf *b)
{
    return put_member(b, "mcp", a->mcp ? api_mcp_status_json(a->mcp) : NULL);
}

/* ,"mcp_servers":{...}: the external servers' states (registry.h), or null. */
static int put_registry_status(struct api *a, struct jsonbuf *b)
{
    return put_member(b, "mcp_servers",
                      a->tools && a->tools->registry ? registry_health_json(a->tools->registry)
                                                     : NULL);
}

/* GET /mcp-servers: every external server's state. */
static int handle_mcp_servers(struct api *a, struct mg_connection *conn)
{
    cJSON *j = a->tools && a->tools->registry ? registry_status_json(a->tools->registry)
                                              : cJSON_Parse("{\"servers\":[]}");
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    int status = text ? api_send_json(conn, 200, text, strlen(text), NULL, NULL)
                      : send_error(conn, 503, "out of memory");

    cJSON_Delete(j);
    free(text);
    return status;
}

/* GET /tools: the catalog's tools, then the external servers' (their snapshot now). */
static int handle_tools(struct api *a, struct mg_connection *conn)
{
    struct registry_hold *hold = NULL;
    const struct catalog *ext =
        a->tools && a->tools->registry ? registry_tools(a->tools->registry, &hold) : NULL;
    const char *more = ext && catalog_count(ext) ? catalog_tools_json(ext) : NULL;
    struct jsonbuf b;
    int status;

    if (ext && catalog_count(ext) && !more) {
        registry_unhold(hold);
        return send_error(conn, 503, "out of memory for the external servers' tools list");
    }
    if (!more) {
        registry_unhold(hold);
        return api_send_json(conn, 200, a->tools_json, a->tools_len, NULL, NULL);
    }
    jsonbuf_init(&b, 64u << 20);
    /* {"tools":[<built-in>] + "," + <external array without its '['>. */
    if (jsonbuf_put(&b, a->tools_json, a->tools_len - 2, NULL) < 0 ||
        jsonbuf_puts(&b, a->tools_len > 12 ? "," : "", NULL) < 0 ||
        jsonbuf_puts(&b, more + 1, NULL) < 0 || jsonbuf_puts(&b, "}", NULL) < 0)
        status = send_error(conn, 503, "out of memory");
    else
        status = api_send_json(conn, 200, b.data, b.len, NULL, NULL);
    jsonbuf_cleanup(&b);
    registry_unhold(hold);
    return status;
}

/* ,"workspace_quota":{"quota_mb":N,"used_mb":M} (M null until the first walk), or null. */
static int put_quota_status(struct api *a, struct jsonbuf *b)
{
    struct quota *q = a->tools ? a->tools->quota : NULL;
    uint64_t used = 0;
    char text[128];
    int n;

    if (!quota_limit_mb(q))
        return jsonbuf_puts(b, ",\"workspace_quota\":null", NULL);
    if (quota_peek(q, &used) == 0)
        n = snprintf(
            text, sizeof(text), ",\"workspace_quota\":{\"quota_mb\":%llu,\"used_mb\":%llu}",
            (unsigned long long)quota_limit_mb(q), (unsigned long long)((used + (1u << 19)) >> 20));
    else
        n = snprintf(text, sizeof(text),
                     ",\"workspace_quota\":{\"quota_mb\":%llu,\"used_mb\":null}",
                     (unsigned long long)quota_limit_mb(q));
    return jsonbuf_put(b, text, (size_t)n, NULL);
}

static int handle_health(struct api *a, struct mg_connection *conn)
{
    struct jsonbuf b;
    char head[192];
    int n, rc = 0;

    jsonbuf_init(&b, 1u << 16);
    n = snprintf(head, sizeof(head),
                 "{\"ok\":true,\"service\":\"runboxd\",\"version\":\"%s\",\"wire\":%d,"
                 "\"pid\":%ld,\"port\":%d,\"uptime_ms\":%lld,\"workspace\":",
                 RUNBOX_VERSION, RUNBOX_WIRE, (long)getpid(), atomic_load(&a->port),
                 (long long)(clocks_mono_ms() - a->started_ms));
    rc |= jsonbuf_put(&b, head, (size_t)n, NULL);
    rc |= jsonbuf_put_json_string(&b, a->workspace, strlen(a->workspace), NULL);
    n = snprintf(head, sizeof(head),
                 ",\"fsync\":%s,\"allow_network\":%s,\"sandbox\":", a->fsync ? "true" : "false",
                 a->allow_network ? "true" : "false");
    rc |= jsonbuf_put(&b, head, (size_t)n, NULL);
    rc |= put_sandbox_status(a, &b);
    rc |= put_quota_status(a, &b);
    rc |= jsonbuf_put(&b, ",\"studio\":", 10, NULL);
    rc |= put_studio_status(a, &b);
    rc |= put_calls_status(a, &b);
    rc |= put_http_status(a, &b);
    rc |= put_mcp_status(a, &b);
    n = snprintf(head, sizeof(head), ",\"watches\":%zu",
                 a->tools->watch ? watch_count(a->tools->watch) : (size_t)0);
    rc |= jsonbuf_put(&b, head, (size_t)n, NULL);
    rc |= put_registry_status(a, &b);
    rc |= jsonbuf_put(&b, "}", 1, NULL);
    if (rc)
        n = send_error(conn, 503, "out of memory");
    else
        n = api_send_json(conn, 200, b.data, b.len, NULL, NULL);
    jsonbuf_cleanup(&b);
    return n;
}

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
        return send_error(conn, 400, "request body contains a NUL byte; send JSON text");
    args = jsonrpc_parse(body, len, &err);
    if (!args) {
        err.kind = ERR_INVALID; /* too deep is a bad request here, not a size problem */
        return send_errinfo(conn, &err);
    }
    if (!cJSON_IsObject(args)) {
        cJSON_Delete(args);
        return send_error(conn, 400,
                          "request body must be a JSON object of arguments ({} when "
                          "the tool takes none)");
    }
    jsonrpc_scan(body, len, &scan);
    if (scan.has_nul_escape) {
        cJSON_Delete(args);
        return send_error(conn, 400,
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
        return send_errinfo(conn, &err);
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
        return send_error(conn, 400,
                          "X-Runbox-Client must be 1 to 48 characters of letters, digits and _.:- "
                          "(it names the client, so that Studio serves clients in turn); leave "
                          "it out to be served as an unnamed client");
    c = call_begin(a->calls, name, args, &rep, &err);
    if (!c) {
        if (err.kind == ERR_NOT_FOUND)
            return send_error(conn, 404, err.msg);
        if (err.kind == ERR_INVALID)
            return send_error_ex(conn, 400, err.msg, &rep, NULL, NULL);
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
    send_error_ex(conn, 413, msg, NULL, "Connection", "close");
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

static int handle_tool(struct api *a, struct mg_connection *conn, const char *name)
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
        return send_error(conn, 415,
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
        return send_error_ex(conn, err.kind == ERR_TIMEOUT ? 408 : api_status_for(err.kind),
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

static const char endpoints[] =
    "the endpoints are GET / (the status page), POST /tool/<name>, GET /tools, GET /health, "
    "GET /mcp-servers, GET /events, GET /resources, GET /resource?uri=..., GET /prompts, "
    "POST /prompt/<name>, POST /complete, MCP on /mcp, /sse (with POST "
    "/message) and /ws, and the Studio plugin's GET /poll, POST /result, POST /console and "
    "POST /disconnect";

static int route(struct api *a, struct mg_connection *conn, const char *method, const char *path)
{
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    char msg[768];

    if (strcmp(path, "/health") == 0 || strcmp(path, "/tools") == 0) {
        if (!get) {
            snprintf(msg, sizeof(msg), "%.16s %s is not allowed; use GET", method, path);
            return send_error_ex(conn, 405, msg, NULL, "Allow", "GET");
        }
        if (path[1] == 'h')
            return handle_health(a, conn);
        return handle_tools(a, conn);
    }
    if (strcmp(path, "/mcp-servers") == 0) {
        if (!get)
            return send_error_ex(conn, 405, "/mcp-servers is read-only; use GET", NULL, "Allow",
                                 "GET");
        return handle_mcp_servers(a, conn);
    }
    if (strncmp(path, "/tool/", 6) == 0 && path[6]) {
        if (!post) {
            snprintf(msg, sizeof(msg),
                     "%.16s %.200s is not allowed; use POST with the "
                     "arguments as a JSON object",
                     method, path);
            return send_error_ex(conn, 405, msg, NULL, "Allow", "POST");
        }
        return handle_tool(a, conn, path + 6);
    }
    if (api_resources_is_path(path))
        return api_resources_handle(a->tools, conn, method, path);
    if (api_bridge_is_path(path))
        return api_bridge_handle(a->tools, conn, method, path);
    if (a->mcp && api_mcp_is_path(a->mcp, path))
        return api_mcp_handle(a->mcp, conn);
    if (strcmp(path, "/events") == 0)
        return api_events_handle(a->events, conn, method);
    if (status_page_is_path(path))
        return status_page_handle(a->page, conn, method, path);
    snprintf(msg, sizeof(msg), "no such endpoint: %.200s; %s", path, endpoints);
    return send_error(conn, 404, msg);
}

static int on_request(struct mg_connection *conn)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    struct api *a = ri->user_data;
    int port = atomic_load_explicit(&a->port, memory_order_relaxed);
    const char *path = ri->local_uri_raw;
    struct errinfo err = {0};
    const char *refusal;

    /* First: the head came in time and can be read only one way (else 408 or 400, and the
     * connection closes); the path is decoded here. */
    if (http_guard_begin(a->guard, conn, &err) < 0) {
        int status = err.kind == ERR_TIMEOUT ? 408 : 400;

        send_error_ex(conn, status, err.msg, NULL, "Connection", "close");
        http_guard_drain(conn);
        return status;
    }
    if (!api_host_ok(mg_get_header(conn, "Host"), port, a->bind))
        return send_error(conn, 403,
                          "forbidden Host header: runboxd answers only requests "
                          "addressed to localhost, 127.0.0.1 or [::1] with its port");
    if (!api_origin_ok(mg_get_header(conn, "Origin"), port, a->bind))
        return send_error(conn, 403, "forbidden Origin: runboxd does not answer web pages");
    refusal = status_page_check(a->page, conn);
    if (refusal)
        return send_error(conn, 403, refusal);
    /* The page's own files carry no data: a browser gets them without the token, and the page
     * asks its user for the token. */
    if (a->token && !(path && status_page_is_path(path)) &&
        !api_token_ok(mg_get_header(conn, "Authorization"), a->token))
        return send_error_ex(conn, 401,
                             "missing or wrong token: send Authorization: Bearer "
                             "<token> (the daemon's RUNBOX_TOKEN or token file)",
                             NULL, "WWW-Authenticate", "Bearer");
    if (!path)
        return send_error(conn, 404, "no such endpoint");
    log_trace("api: %s %s", ri->request_method, path);
    if (a->mcp && api_mcp_is_ws_path(a->mcp, path))
        return 0; /* the checks passed: civetweb's WebSocket handler takes the upgrade */
    return route(a, conn, ri->request_method, path);
}

static int on_log(const struct mg_connection *conn, const char *message)
{
    (void)conn;
    log_debug("http: %s", message);
    return 1;
}

/* The errors civetweb finds before on_request (a malformed head, an unknown method, a bad
 * version, a head that did not arrive in time), answered as JSON like every other error. */
static int on_http_error(struct mg_connection *conn, int status, const char *msg)
{
    char text[256];

    status = http_guard_error_text(conn, status, msg, text, sizeof(text));
    send_error_ex(conn, status, text, NULL, "Connection", "close");
    return 0;
}

static int on_conn_open(const struct mg_connection *conn, void **data)
{
    struct api *a = mg_get_user_data(mg_get_context(conn));

    (void)data;
    http_guard_conn_open(a->guard, conn);
    return 0;
}

/* civetweb hands end_request a const connection, but the guard may have to mark it to close
 * (its deadline passed while the answer went out); the connection is the worker's own. */
static void on_end_request(const struct mg_connection *conn, int status)
{
    struct api *a = mg_get_user_data(mg_get_context(conn));

    (void)status;
    http_guard_request_done(a->guard, (struct mg_connection *)conn);
}

static void on_conn_close(const struct mg_connection *conn)
{
    struct api *a = mg_get_user_data(mg_get_context(conn));

    http_guard_conn_close(a->guard);
    connwatch_forget_socket(); /* its socket's number is free for another connection now */
}

/* civetweb's threads (its master and over 320 workers) never fork: their stacks stay out of the
 * fork that starts each exec run (threadstack.h). */
static void *on_thread_start(const struct mg_context *ctx, int thread_type)
{
    (void)ctx;
    (void)thread_type;
    threadstack_skip_forks(true);
    return NULL;
}

static void on_thread_end(const struct mg_context *ctx, int thread_type, void *user)
{
    (void)ctx;
    (void)thread_type;
    (void)user;
    threadstack_skip_forks(false);
}

/* ---- start and stop ---- */

/* Debian's civetweb is built with USE_STACK_SIZE=102400: every worker thread gets a 100 KiB
 * stack, and civetweb offers no option to change it (1.15's configuration has no stack
 * setting; the size is a compile-time constant handed to pthread_attr_setstacksize). Our
 * handlers walk directory trees up to 256 levels deep and run regexec, which does not fit in
 * 100 KiB (a deep search crashed the daemon). So this definition in our program, which the
 * dynamic linker prefers for libcivetweb's calls, raises any smaller request to API_STACK_MIN.
 * Only touched stack pages cost memory: 33 such stacks hold about 1 MiB of RSS in all
 * (daemon_server.test.mjs checks that the workers get them and that they stay cheap). */
#define API_STACK_MIN (1u << 20)

static int (*real_setstacksize)(pthread_attr_t *, size_t);
static pthread_once_t setstacksize_once = PTHREAD_ONCE_INIT;

static void find_setstacksize(void)
{
    *(void **)&real_setstacksize = dlsym(RTLD_NEXT, "pthread_attr_setstacksize");
}

int pthread_attr_setstacksize(pthread_attr_t *attr, size_t size)
{
    pthread_once(&setstacksize_once, find_setstacksize);
    if (!real_setstacksize)
        return ENOSYS;
    return real_setstacksize(attr, size < API_STACK_MIN ? API_STACK_MIN : size);
}

static void port_in_use(int port, struct errinfo *err)
{
    errinfo_set(err, ERR_EXISTS,
                "port %d is in use; is another runboxd running? (GET /health) "
                "or pick --port",
                port);
}

/* Tells "port taken" apart from other failures before civetweb tries, so the message can say
 * what to do. The probe socket is closed at once; the race with another process is harmless
 * (civetweb's bind then fails with its own message). */
/* Fills ss/sl for a numeric address and port; -1 when addr is not numeric. */
static int sockaddr_for(const char *addr, int port, struct sockaddr_storage *ss, socklen_t *sl)
{
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

    memset(ss, 0, sizeof(*ss));
    if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        *sl = sizeof(*s4);
        return 0;
    }
    if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        *sl = sizeof(*s6);
        return 0;
    }
    return -1;
}

/* Tells "port taken" apart from other failures before civetweb tries, so the message can say
 * what to do. The probe socket is closed at once; the race with another process is harmless
 * (civetweb's bind then fails with its own message). */
static int probe_port(const char *bind_addr, int port, struct errinfo *err)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    int fd, one = 1, rc = 0;

    if (sockaddr_for(bind_addr, port, &ss, &sl) < 0) {
        errinfo_set(err, ERR_INVALID, "--bind %s is not a numeric address", bind_addr);
        return -1;
    }
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0; /* let civetweb report it */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0) {
        if (errno == EADDRINUSE)
            port_in_use(port, err);
        else
            errinfo_sys(err, "cannot listen on %s port %d", bind_addr, port);
        rc = -1;
    }
    close(fd);
    return rc;
}

bool api_have_ipv6(void)
{
    return mg_check_feature(MG_FEATURES_IPV6) != 0;
}

static int build_tools_json(struct api *a, struct errinfo *err)
{
    struct jsonbuf b;
    const char *arr = catalog_tools_json(a->cat);

    if (!arr) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the tools list");
        return -1;
    }
    jsonbuf_init(&b, 64u << 20);
    if (jsonbuf_put(&b, "{\"tools\":", 9, err) < 0 || jsonbuf_put(&b, arr, strlen(arr), err) < 0 ||
        jsonbuf_put(&b, "}", 1, err) < 0) {
        jsonbuf_cleanup(&b);
        return -1;
    }
    a->tools_json = b.data;
    a->tools_len = b.len;
    return 0;
}

static int start_civetweb(struct api *a, int port, struct errinfo *err)
{
    struct mg_callbacks cb;
    struct mg_server_port ports[4];
    char listen[96], threads[16], keepalive[16], text[256] = "";
    unsigned code = 0;
    struct mg_error_data edata = {.code = &code, .text = text, .text_buffer_size = sizeof(text)};
    /* The CORS options are emptied so that civetweb never grants a preflight by itself (its
     * default is "*"); every request reaches on_request first anyway. decode_url "no": the
     * path is decoded in on_request, after the check for %00 (civetweb would decode it into a
     * NUL that cuts the path short). No auth domain check: an absolute-form request then
     * reaches on_request and is refused with an answer instead of closed without one.
     * request_timeout_ms bounds a stalled write (and civetweb's own reads, which the guard's
     * shorter deadlines cut first). */
    /* clang-format off */
    const char *options[] = {
        "listening_ports", listen,
        "num_threads", threads,
        "enable_keep_alive", "yes",
        "keep_alive_timeout_ms", keepalive,
        "tcp_nodelay", "1",
        "request_timeout_ms", "30000",
        "access_control_allow_origin", "",
        "access_control_allow_methods", "",
        "access_control_allow_headers", "",
        "decode_url", "no",
        "enable_auth_domain_check", "no",
        NULL};
    /* clang-format on */
    struct mg_init_data init = {.callbacks = &cb, .user_data = a, .configuration_options = options};

    snprintf(listen, sizeof(listen), strchr(a->bind, ':') ? "[%s]:%d" : "%s:%d", a->bind, port);
    snprintf(threads, sizeof(threads), "%d", a->threads);
    snprintf(keepalive, sizeof(keepalive), "%d", API_KEEPALIVE_MS);
    memset(&cb, 0, sizeof(cb));
    cb.begin_request = on_request;
    cb.log_message = on_log;
    cb.http_error = on_http_error;
    cb.init_connection = on_conn_open;
    cb.end_request = on_end_request;
    cb.connection_close = on_conn_close;
    cb.init_thread = on_thread_start;
    cb.exit_thread = on_thread_end;
    a->mg = mg_start2(&init, &edata);
    if (!a->mg) {
        if (strstr(text, "in use") || strstr(text, "(98)"))
            port_in_use(port, err);
        else
            errinfo_set(err, ERR_IO, "cannot start the HTTP server on %s: %s", listen,
                        text[0] ? text : "unknown error");
        return -1;
    }
    if (mg_get_server_ports(a->mg, 4, ports) < 1) {
        errinfo_set(err, ERR_INTERNAL, "the HTTP server reports no listening port");
        return -1;
    }
    atomic_store(&a->port, ports[0].port);
    return 0;
}

/* civetweb's listener thread sleeps in poll() for up to 2 s between checks of its stop flag;
 * a connection wakes it. So while mg_stop() waits, a helper thread knocks on our own port. */
struct knock {
    struct sockaddr_storage ss;
    socklen_t sl;
    atomic_bool done;
};

static void *knock_thread(void *arg)
{
    struct knock *k = arg;

    while (!atomic_load(&k->done)) {
        int fd = socket(k->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd >= 0) {
            (void)connect(fd, (struct sockaddr *)&k->ss, k->sl);
            close(fd);
        }
        usleep(20 * 1000);
    }
    return NULL;
}

static void stop_civetweb(struct api *a)
{
    struct knock k = {.sl = 0};
    const char *addr =
        api_is_wildcard(a->bind) ? (strchr(a->bind, ':') ? "::1" : "127.0.0.1") : a->bind;
    pthread_t tid;
    bool knocking;

    atomic_init(&k.done, false);
    knocking = sockaddr_for(addr, atomic_load(&a->port), &k.ss, &k.sl) == 0 &&
               pthread_create(&tid, NULL, knock_thread, &k) == 0;
    mg_stop(a->mg);
    a->mg = NULL;
    atomic_store(&k.done, true);
    if (knocking)
        pthread_join(tid, NULL);
}

/* A WebSocket upgrade went through on_request's checks already; this is the second look. */
static bool ws_origin_ok(void *ctx, const char *origin)
{
    struct api *a = ctx;

    return api_origin_ok(origin, atomic_load(&a->port), a->bind);
}

struct api *api_start(const struct api_options *opt, struct errinfo *err)
{
    struct api *a = calloc(1, sizeof(*a));

    if (!a) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return NULL;
    }
    snprintf(a->bind, sizeof(a->bind), "%s", opt->bind);
    a->started_ms = clocks_mono_ms();
    atomic_init(&a->port, opt->port);
    a->token = opt->token ? strdup(opt->token) : NULL;
    a->workspace = strdup(opt->workspace);
    a->fsync = opt->fsync;
    a->allow_network = opt->allow_network;
    a->tools = opt->tools;
    assert(opt->calls); /* every tool call goes through the call service */
    a->cat = opt->catalog ? opt->catalog : catalog_builtin();
    a->calls = opt->calls;
    if (!a->workspace || (opt->token && !a->token)) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        goto fail;
    }
    a->threads = opt->threads > 0 ? opt->threads : API_THREADS;
    a->page = status_page_new(err);
    if (!a->page)
        goto fail;
    a->watch = connwatch_new(err);
    if (!a->watch)
        goto fail;
    {
        struct api_mcp_options mopt = {.tools = opt->tools,
                                       .calls = opt->calls,
                                       .watch = a->watch,
                                       .catalog = a->cat,
                                       .sessions_max = opt->mcp_sessions,
                                       .session_idle_s = opt->mcp_session_idle_s};

        struct api_events_options eopt = {.tools = opt->tools,
                                          .calls = opt->calls,
                                          .watch = a->watch,
                                          .resources = opt->tools->watch};

        a->mcp = api_mcp_new(&mopt, err);
        if (!a->mcp)
            goto fail;
        a->events = api_events_new(&eopt, err);
        if (!a->events)
            goto fail;
    }
    if (build_tools_json(a, err) < 0)
        goto fail;
    {
        struct http_guard_options gopt = {.head_ms = opt->head_timeout_ms,
                                          .body_ms = opt->body_timeout_ms,
                                          .keepalive_ms = API_KEEPALIVE_MS,
                                          .workers = a->threads};

        a->guard = http_guard_new(&gopt, err);
        if (!a->guard)
            goto fail;
    }
    if (opt->port != 0 && probe_port(a->bind, opt->port, err) < 0)
        goto fail;
    mg_init_library(MG_FEATURES_WEBSOCKET);
    a->lib_ready = true;
    if (start_civetweb(a, opt->port, err) < 0 ||
        api_mcp_attach_ws(a->mcp, a->mg, ws_origin_ok, a, err) < 0)
        goto fail;
    return a;
fail:
    api_stop(a);
    return NULL;
}

int api_port(const struct api *a)
{
    return atomic_load(&a->port);
}

void api_stop(struct api *a)
{
    if (!a)
        return;
    api_mcp_shutdown(a->mcp); /* open streams end now, so the workers can stop */
    api_events_shutdown(a->events);
    if (a->mg)
        stop_civetweb(a);
    if (a->lib_ready)
        mg_exit_library();
    api_mcp_free(a->mcp);
    api_events_free(a->events);
    http_guard_free(a->guard);
    connwatch_free(a->watch);
    status_page_free(a->page);
    if (a->token)
        memset(a->token, 0, strlen(a->token));
    free(a->token);
    free(a->workspace);
    free(a->tools_json);
    free(a);
}
