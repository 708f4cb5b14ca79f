/* common/mcp_http_serve.c - a whole MCP HTTP server for embedders that have no HTTP server of
 * their own (see runbox/mcp_http.h): civetweb on a loopback address serving only the MCP
 * endpoints, behind the local server's Host and Origin checks, the strict framing checks, and
 * deadlines for request heads and bodies (common/http_guard.h). Every error answer is a JSON-RPC
 * error object, civetweb's own ones too (its http_error callback). */
#include "mcp_http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <civetweb.h>

#include "http_guard.h"
#include "jsonrpc.h"
#include "log.h"

struct mcp_http_server {
    struct mcp_http *h;
    struct mg_context *mg;
    struct http_guard *guard; /* owned */
    char bind[64];
    int port;
};

/* A JSON-RPC error answer; close: the connection ends after it. */
static void refuse_ex(struct mg_connection *conn, int status, const char *msg, bool close)
{
    char *line = jsonrpc_build_error(NULL, MCP_INVALID_REQUEST, msg, NULL);
    char head[256], ka[48];
    size_t len = line ? strlen(line) : 0;
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Cache-Control: no-store\r\n%s\r\n",
                     status, mg_get_response_code_text(conn, status), len,
                     close ? "Connection: close\r\n"
                           : mcp_http__keepalive_header(conn, ka, sizeof(ka)));

    mg_write(conn, head, (size_t)n);
    if (line)
        mg_write(conn, line, len);
    free(line);
}

static void refuse(struct mg_connection *conn, int status, const char *msg)
{
    refuse_ex(conn, status, msg, false);
}

static int on_request(struct mg_connection *conn)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    struct mcp_http_server *s = ri->user_data;
    const char *path = ri->local_uri_raw ? ri->local_uri_raw : "";
    struct errinfo err = {0};

    if (http_guard_begin(s->guard, conn, &err) < 0) {
        int status = err.kind == ERR_TIMEOUT ? 408 : 400;

        refuse_ex(conn, status, err.msg, true);
        http_guard_drain(conn);
        return status;
    }
    if (!mcp_http_host_ok(mg_get_header(conn, "Host"), s->port, s->bind)) {
        refuse(conn, 403,
               "forbidden Host header: this server answers only requests addressed "
               "to localhost, 127.0.0.1 or [::1] with its port");
        return 403;
    }
    if (!mcp_http_origin_ok(mg_get_header(conn, "Origin"), s->port, s->bind)) {
        refuse(conn, 403, "forbidden Origin: this server does not answer web pages");
        return 403;
    }
    if (s->h->ws_path && strcmp(path, s->h->ws_path) == 0)
        return 0; /* civetweb's WebSocket handler takes it */
    if (mcp_http_is_path(s->h, path))
        return mcp_http_handle(s->h, conn);
    refuse(conn, 404, "no such endpoint");
    return 404;
}

static bool ws_origin_ok(void *ctx, const char *origin)
{
    struct mcp_http_server *s = ctx;

    return mcp_http_origin_ok(origin, s->port, s->bind);
}

static int on_log(const struct mg_connection *conn, const char *message)
{
    (void)conn;
    log_debug("mcp-http: civetweb: %s", message);
    return 1;
}

/* civetweb's own error answers (a malformed head, an unknown method, ...), as JSON. */
static int on_http_error(struct mg_connection *conn, int status, const char *msg)
{
    char text[256];

    status = http_guard_error_text(conn, status, msg, text, sizeof(text));
    refuse_ex(conn, status, text, true);
    return 0;
}

static int on_conn_open(const struct mg_connection *conn, void **data)
{
    struct mcp_http_server *s = mg_get_user_data(mg_get_context(conn));

    (void)data;
    http_guard_conn_open(s->guard, conn);
    return 0;
}

static void on_end_request(const struct mg_connection *conn, int status)
{
    struct mcp_http_server *s = mg_get_user_data(mg_get_context(conn));

    (void)status;
    http_guard_request_done(s->guard, (struct mg_connection *)conn);
}

static void on_conn_close(const struct mg_connection *conn)
{
    struct mcp_http_server *s = mg_get_user_data(mg_get_context(conn));

    http_guard_conn_close(s->guard);
}

struct mcp_http_server *mcp_http_serve(const struct mcp_http_options *opt, const char *bind,
                                       int port, int threads, struct errinfo *err)
{
    struct mcp_http_server *s = calloc(1, sizeof(*s));
    struct mg_callbacks cb;
    struct mg_server_port ports[2];
    char listen[96], nthreads[16], text[256] = "";
    int workers = threads > 0 ? threads : 64;
    unsigned code = 0;
    struct mg_error_data edata = {.code = &code, .text = text, .text_buffer_size = sizeof(text)};
    /* Idle keep-alive connections live 5 s; each response says so (Keep-Alive: timeout=5), and
     * a client that honours it (undici keeps 2 s in reserve) stops reusing one before then.
     * decode_url "no": the path is decoded by mcp_http_check_request(), after %00 is refused;
     * no auth domain check: an absolute-form request reaches on_request (and is refused there
     * with an answer rather than closed without one). */
    /* clang-format off */
    const char *options[] = {
        "listening_ports", listen,
        "num_threads", nthreads,
        "enable_keep_alive", "yes",
        "keep_alive_timeout_ms", "5000",
        "tcp_nodelay", "1",
        "websocket_timeout_ms", "3600000",
        "decode_url", "no",
        "enable_auth_domain_check", "no",
        NULL};
    /* clang-format on */
    struct mg_init_data init = {.callbacks = &cb, .user_data = s, .configuration_options = options};

    if (!s) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the MCP HTTP server");
        return NULL;
    }
    snprintf(s->bind, sizeof(s->bind), "%s", bind ? bind : "127.0.0.1");
    s->h = mcp_http_new(opt, err);
    if (!s->h) {
        free(s);
        return NULL;
    }
    {
        struct http_guard_options gopt = {.keepalive_ms = 5000, .workers = workers};

        s->guard = http_guard_new(&gopt, err);
        if (!s->guard) {
            mcp_http_server_stop(s);
            return NULL;
        }
    }
    snprintf(listen, sizeof(listen), strchr(s->bind, ':') ? "[%s]:%d" : "%s:%d", s->bind, port);
    snprintf(nthreads, sizeof(nthreads), "%d", workers);
    memset(&cb, 0, sizeof(cb));
    cb.begin_request = on_request;
    cb.log_message = on_log;
    cb.http_error = on_http_error;
    cb.init_connection = on_conn_open;
    cb.end_request = on_end_request;
    cb.connection_close = on_conn_close;
    mg_init_library(MG_FEATURES_WEBSOCKET);
    s->mg = mg_start2(&init, &edata);
    if (!s->mg || mg_get_server_ports(s->mg, 2, ports) < 1) {
        errinfo_set(err, ERR_IO, "cannot serve MCP on %s: %s", listen,
                    text[0] ? text : "no listening port");
        mcp_http_server_stop(s);
        return NULL;
    }
    s->port = ports[0].port;
    if (mcp_http_attach_ws(s->h, s->mg, ws_origin_ok, s, err) < 0) {
        mcp_http_server_stop(s);
        return NULL;
    }
    return s;
}

int mcp_http_server_port(const struct mcp_http_server *s)
{
    return s->port;
}

void mcp_http_server_stop(struct mcp_http_server *s)
{
    if (!s)
        return;
    if (s->mg) {
        mcp_http_shutdown(s->h); /* streams end instead of waiting for their clients */
        mg_stop(s->mg);
        mg_exit_library();
    }
    mcp_http_free(s->h);
    http_guard_free(s->guard);
    free(s);
}
