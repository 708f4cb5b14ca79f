/* daemon/api.c - runboxd's HTTP API (see api.h).
 *
 * DESIGN: one civetweb begin_request callback takes every request, so civetweb itself never
 * serves anything (there is no document root). The request path is kept lean because the proxy
 * sends every tool call through it: the checks are string compares on headers civetweb already
 * parsed, the body is read once into one buffer, and the answer is written with an exact
 * Content-Length so the connection stays alive. Nothing above debug is logged per request. */
#include "api.h"
#include "api_int.h"
#include "api_resources.h"
#include "api_bridge.h"
#include "api_events.h"
#include "api_mcp.h"
#include "status_page.h"

#include <arpa/inet.h>
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
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

#include "catalog.h"
#include "clocks.h"
#include "connwatch.h"
#include "http_conn.h"
#include "http_guard.h"
#include "jsonbuf.h"
#include "log.h"
#include "schema.h"
#include "utf8.h"
#include "threadstack.h"
#include "tools.h"
#include "watch.h"
#include "bridge.h"

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

int api__send_error_ex(struct mg_connection *conn, int status, const char *msg,
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
    return api__send_error_ex(conn, status, msg, NULL, hname, hval);
}

int api__send_error(struct mg_connection *conn, int status, const char *msg)
{
    return api__send_error_ex(conn, status, msg, NULL, NULL, NULL);
}

int api__send_errinfo(struct mg_connection *conn, const struct errinfo *err)
{
    return api__send_error(conn, api_status_for(err->kind), err->msg);
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
            return api__send_error_ex(conn, 405, msg, NULL, "Allow", "GET");
        }
        if (path[1] == 'h')
            return api__handle_health(a, conn);
        return api__handle_tools(a, conn);
    }
    if (strcmp(path, "/mcp-servers") == 0) {
        if (!get)
            return api__send_error_ex(conn, 405, "/mcp-servers is read-only; use GET", NULL,
                                      "Allow", "GET");
        return api__handle_mcp_servers(a, conn);
    }
    if (strncmp(path, "/tool/", 6) == 0 && path[6]) {
        if (!post) {
            snprintf(msg, sizeof(msg),
                     "%.16s %.200s is not allowed; use POST with the "
                     "arguments as a JSON object",
                     method, path);
            return api__send_error_ex(conn, 405, msg, NULL, "Allow", "POST");
        }
        return api__handle_tool(a, conn, path + 6);
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
    return api__send_error(conn, 404, msg);
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

        api__send_error_ex(conn, status, err.msg, NULL, "Connection", "close");
        http_guard_drain(conn);
        return status;
    }
    if (!api_host_ok(mg_get_header(conn, "Host"), port, a->bind))
        return api__send_error(conn, 403,
                               "forbidden Host header: runboxd answers only requests "
                               "addressed to localhost, 127.0.0.1 or [::1] with its port");
    if (!api_origin_ok(mg_get_header(conn, "Origin"), port, a->bind))
        return api__send_error(conn, 403, "forbidden Origin: runboxd does not answer web pages");
    refusal = status_page_check(a->page, conn);
    if (refusal)
        return api__send_error(conn, 403, refusal);
    /* The page's own files carry no data: a browser gets them without the token, and the page
     * asks its user for the token. */
    if (a->token && !(path && status_page_is_path(path)) &&
        !api_token_ok(mg_get_header(conn, "Authorization"), a->token))
        return api__send_error_ex(conn, 401,
                                  "missing or wrong token: send Authorization: Bearer "
                                  "<token> (the daemon's RUNBOX_TOKEN or token file)",
                                  NULL, "WWW-Authenticate", "Bearer");
    if (!path)
        return api__send_error(conn, 404, "no such endpoint");
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
    api__send_error_ex(conn, status, text, NULL, "Connection", "close");
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
