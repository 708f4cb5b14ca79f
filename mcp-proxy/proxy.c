/* mcp-proxy/proxy.c - the proxy's event loop and the MCP engine's HTTP back end (see proxy.h).
 *
 * DESIGN
 * One thread, one poll(): stdin plus the sockets libcurl wants watched (upstream.h). Each turn
 * runs curl's due timers (which starts requests added since), advances an autostart under way,
 * flushes the responses gathered so far to stdout, and then waits. Waking up, it reads what
 * stdin has (every complete line goes to the engine at once, so a burst of requests is all in
 * flight before the next wait) and hands ready sockets to curl, whose finished requests answer
 * their calls. Nothing blocks except the wait itself and writing to a client that does not read.
 *
 * A tools/call becomes a `struct pcall`: the request body (the validated arguments as JSON),
 * the upstream request in flight, or a place in the queue of calls waiting for runboxd to be
 * started. notifications/cancelled runs the call's cancel hook, which drops the request (curl
 * closes its connection, and runboxd cancels the work when it sees that) or the queue entry; the
 * engine then never answers that id. Resources and prompts requests travel the same way. */
#include "proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autostart.h"
#include "catalog.h"
#include "clocks.h"
#include "jsonbuf.h"
#include "log.h"
#include "runbox/mcp.h"
#include "schema.h"
#include "sse.h"
#include "upstream.h"

#define READ_CHUNK   ((size_t)64 * 1024)   /* room offered to each read() of stdin */
#define READ_BUDGET  ((size_t)1024 * 1024) /* stdin bytes taken per turn before curl's turn */
#define OUT_FLUSH_AT ((size_t)256 * 1024)  /* flush early past this many pending bytes */
#define OUT_KEEP     ((size_t)64 * 1024)   /* a larger output buffer is freed after a flush */

#define TOOL_PATH_MAX (sizeof("/tool/") + 128 + sizeof("?log=debug"))

static volatile sig_atomic_t stop_signal; /* SIGTERM or SIGINT received */

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

struct proxy;

struct pcall {
    struct proxy *p;
    struct mcp_call *call;    /* borrowed from the engine until it is answered */
    bool is_request;          /* a resources/prompts request (else a tools/call) */
    char *url;                /* owned: the request's path and query, or NULL (a call) */
    bool get;                 /* url is fetched with GET (else POSTed with body) */
    struct upstream_req *req; /* the request in flight, or NULL while queued */
    char *body;               /* owned: the arguments object as compact JSON */
    size_t body_len;
    bool queued;               /* waiting for runboxd to come up */
    struct pcall *prev, *next; /* in the waiting queue */
    char path[TOOL_PATH_MAX];  /* "/tool/<name>" (with "?log=<level>" for a request's log) */
    /* A tool call whose progress or log the client asked for goes as an event stream. */
    bool stream;
    struct sse_parser *sse; /* owned while the stream is read */
    char *answer;           /* owned: the body of the stream's answer event, or NULL */
    long answer_status;
};

struct proxy {
    const struct proxy_config *cfg;
    struct mcp_server *srv;
    struct mcp_session *session;
    struct upstream *up;
    struct autostart *as; /* NULL when autostart is off */
    int in_fd, out_fd;
    bool in_eof, out_closed;
    struct proxy_lines lines;
    struct proxy_lines_sink sink;
    char *out; /* owned: responses not yet written */
    size_t out_len, out_cap;
    struct pcall *wait_head, *wait_tail;
    const struct catalog *cat; /* the tools served (borrowed); calls are checked against it */
    struct pollfd *fds;        /* owned: stdin, then curl's sockets */
    size_t fds_cap;
    struct proxy_follow follow; /* runboxd's events as notifications */
    struct proxy_tools tools;   /* the external servers' tools (proxy_tools.c) */
};

static const char oom_msg[] = "runbox is out of memory";

/* ---- output ---- */

static void flush_output(struct proxy *p)
{
    size_t off = 0;

    while (off < p->out_len && !p->out_closed) {
        ssize_t n = write(p->out_fd, p->out + off, p->out_len - off);

        if (n > 0) {
            off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pf = {.fd = p->out_fd, .events = POLLOUT};

            poll(&pf, 1, -1); /* stdout was left non-blocking by someone: wait for room */
        } else {
            if (errno != EPIPE)
                log_warn("proxy: writing stdout: %s", strerror(errno));
            else
                log_info("proxy: the client closed stdout");
            p->out_closed = true;
        }
    }
    p->out_len = 0;
    if (p->out_cap > OUT_KEEP) {
        free(p->out);
        p->out = NULL;
        p->out_cap = 0;
    }
}

static bool out_reserve(struct proxy *p, size_t more)
{
    size_t cap;
    char *nb;

    if (p->out_len + more <= p->out_cap)
        return true;
    cap = p->out_cap ? p->out_cap : 4096;
    while (cap < p->out_len + more)
        cap *= 2;
    nb = realloc(p->out, cap);
    if (!nb)
        return false;
    p->out = nb;
    p->out_cap = cap;
    return true;
}

static void be_send(void *ctx, const char *json, size_t len, const struct mcp_route *route)
{
    struct proxy *p = ctx;

    (void)route; /* stdio is one stream: every message goes to stdout in order */
    if (p->out_closed)
        return;
    if (!out_reserve(p, len + 1)) {
        log_error("proxy: out of memory for a %zu-byte response; it is dropped", len);
        return;
    }
    memcpy(p->out + p->out_len, json, len);
    p->out[p->out_len + len] = '\n';
    p->out_len += len + 1;
    if (p->out_len >= OUT_FLUSH_AT)
        flush_output(p);
}

/* ---- calls ---- */

static void pcall_free(struct pcall *pc)
{
    if (!pc)
        return;
    if (pc->sse) {
        sse_cleanup(pc->sse);
        free(pc->sse);
    }
    free(pc->answer);
    free(pc->body);
    free(pc->url);
    free(pc);
}

static void enqueue(struct proxy *p, struct pcall *pc)
{
    pc->queued = true;
    pc->next = NULL;
    pc->prev = p->wait_tail;
    if (p->wait_tail)
        p->wait_tail->next = pc;
    else
        p->wait_head = pc;
    p->wait_tail = pc;
}

static void dequeue(struct proxy *p, struct pcall *pc)
{
    if (pc->prev)
        pc->prev->next = pc->next;
    else
        p->wait_head = pc->next;
    if (pc->next)
        pc->next->prev = pc->prev;
    else
        p->wait_tail = pc->prev;
    pc->prev = pc->next = NULL;
    pc->queued = false;
}

/* Answers a tools/call as a failed tool: isError with {"error":msg,"timeout":timeout}. */
static void tool_failed(struct mcp_call *call, const char *msg, bool timeout)
{
    struct jsonbuf b = JSONBUF_INIT((size_t)64 << 20);
    char *text;

    jsonbuf_puts(&b, "{\"error\":", NULL);
    jsonbuf_put_json_string(&b, msg, strlen(msg), NULL);
    jsonbuf_puts(&b, timeout ? ",\"timeout\":true}" : ",\"timeout\":false}", NULL);
    text = jsonbuf_take(&b, NULL);
    mcp_call_tool_error(call, text ? text : oom_msg);
    free(text);
}

/* Answers the call as failed and forgets it. */
static void fail_call(struct pcall *pc, const char *msg, bool timeout)
{
    struct mcp_call *call = pc->call;
    bool is_request = pc->is_request;

    mcp_call_on_cancel(call, NULL, NULL);
    pcall_free(pc);
    if (is_request)
        mcp_call_error(call, MCP_INTERNAL_ERROR, msg, NULL);
    else
        tool_failed(call, msg, timeout);
}

static void on_answer(void *ctx, const struct upstream_reply *reply);

/* One event of a tool call's stream: progress and log go to the client now, the answer is
 * kept for on_answer. */
static bool on_call_event(void *ctx, const struct sse_event *ev)
{
    struct pcall *pc = ctx;
    cJSON *doc = upstream_parse(ev->data, ev->data_len);

    if (!doc)
        return true;
    if (strcmp(ev->event, "progress") == 0) {
        const cJSON *pr = cJSON_GetObjectItemCaseSensitive(doc, "progress");
        const cJSON *total = cJSON_GetObjectItemCaseSensitive(doc, "total");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(doc, "message");

        if (cJSON_IsNumber(pr))
            mcp_call_progress(pc->call, pr->valuedouble,
                              cJSON_IsNumber(total) ? total->valuedouble : 0,
                              cJSON_IsString(msg) ? msg->valuestring : NULL);
    } else if (strcmp(ev->event, "log") == 0) {
        const cJSON *level = cJSON_GetObjectItemCaseSensitive(doc, "level");
        const cJSON *source = cJSON_GetObjectItemCaseSensitive(doc, "source");
        const char *lv = cJSON_IsString(level) ? level->valuestring : "log";
        enum mcp_log_level l = strcmp(lv, "debug") == 0   ? MCP_LOG_DEBUG
                               : strcmp(lv, "warn") == 0  ? MCP_LOG_WARNING
                               : strcmp(lv, "error") == 0 ? MCP_LOG_ERROR
                                                          : MCP_LOG_INFO;
        char *logger = cJSON_IsString(source) ? strdup(source->valuestring) : NULL;

        cJSON_DeleteItemFromObjectCaseSensitive(doc, "level");
        mcp_call_log(pc->call, l, logger ? logger : "exec", doc);
        free(logger);
        return true; /* doc went to the engine */
    } else if (strcmp(ev->event, "answer") == 0) {
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(doc, "status");
        const cJSON *body = cJSON_GetObjectItemCaseSensitive(doc, "body");

        free(pc->answer);
        pc->answer = body ? cJSON_PrintUnformatted(body) : NULL;
        pc->answer_status = cJSON_IsNumber(status) ? (long)status->valuedouble : 0;
    }
    cJSON_Delete(doc);
    return true;
}

static void on_call_chunk(void *ctx, const char *data, size_t len)
{
    struct pcall *pc = ctx;

    if (!pc->sse) {
        pc->sse = calloc(1, sizeof(*pc->sse));
        if (!pc->sse)
            return;
        sse_init(pc->sse, UPSTREAM_MAX_BODY + 1024);
    }
    sse_feed(pc->sse, data, len, on_call_event, pc);
}

static void submit(struct proxy *p, struct pcall *pc)
{
    struct errinfo err = {0};

    if (pc->get)
        pc->req = upstream_get(p->up, pc->url, 0, on_answer, pc, &err);
    else if (pc->stream)
        pc->req = upstream_post_stream(p->up, pc->path, pc->body, pc->body_len, on_call_chunk,
                                       on_answer, pc, &err);
    else
        pc->req = upstream_post(p->up, pc->url ? pc->url : pc->path, pc->body, pc->body_len,
                                on_answer, pc, &err);
    if (!pc->req)
        fail_call(pc, err.msg, false);
}

/* Nothing listens and autostart is on: start runboxd and let the call wait for it. */
static void wait_for_daemon(struct proxy *p, struct pcall *pc)
{
    struct errinfo err = {0};
    char msg[ERRINFO_MSG_MAX + 4200];

    if (autostart_begin(p->as, clocks_mono_ms(), &err) == 0) {
        enqueue(p, pc);
        return;
    }
    snprintf(msg, sizeof(msg), "could not start runboxd: %s; see %s", err.msg,
             autostart_log_path(p->as));
    fail_call(pc, msg, false);
}

/* A tool's result: a string is the text; other JSON is printed into the text and is the
 * structured result too (when it is an object), unless the daemon sent one of its own. Takes
 * ownership of result and structured. */
static void answer_tool(struct mcp_call *call, cJSON *result, cJSON *structured)
{
    char *printed = NULL;
    const char *text = "";

    if (cJSON_IsString(result)) {
        text = result->valuestring;
    } else if (result) {
        printed = cJSON_PrintUnformatted(result);
        text = printed ? printed : "";
        if (!structured && cJSON_IsObject(result)) {
            structured = result;
            result = NULL;
        }
    }
    if (result && !printed && !cJSON_IsString(result)) {
        cJSON_Delete(result);
        cJSON_Delete(structured);
        tool_failed(call, oom_msg, false);
        return;
    }
    mcp_call_result_text_structured(call, text, strlen(text), structured);
    cJSON_free(printed);
    cJSON_Delete(result);
}

static void on_answer(void *ctx, const struct upstream_reply *reply)
{
    struct pcall *pc = ctx;
    struct proxy *p = pc->p;
    struct upstream_answer a;
    struct mcp_call *call = pc->call;
    const struct catalog_tool *tool;

    pc->req = NULL;
    if (reply->outcome == UPSTREAM_REFUSED && p->as) {
        wait_for_daemon(p, pc);
        return;
    }
    mcp_call_on_cancel(call, NULL, NULL); /* from here on the answer is ours to give */
    if (reply->outcome == UPSTREAM_ANSWERED)
        proxy_tools_contact(&p->tools);
    if (pc->is_request) {
        pcall_free(pc);
        proxy_answer_request(call, reply, upstream_base_url(p->up));
        return;
    }
    if (pc->stream && reply->outcome == UPSTREAM_ANSWERED && pc->sse) {
        /* The answer came as the stream's last event; no answer event means the daemon went
         * away mid-call. */
        struct upstream_reply streamed = *reply;

        if (pc->answer) {
            streamed.status = pc->answer_status;
            streamed.body = pc->answer;
            streamed.body_len = strlen(pc->answer);
        } else {
            streamed.outcome = UPSTREAM_DROPPED;
            streamed.error = "the event stream ended before the answer";
        }
        upstream_map_answer(&streamed, upstream_base_url(p->up), &a);
    } else {
        upstream_map_answer(reply, upstream_base_url(p->up), &a);
    }
    pcall_free(pc);
    tool = catalog_find(p->cat, mcp_call_name(call));
    if (a.mcp_result) {
        /* An external server's result goes to the client as the server gave it (as on /mcp). */
        mcp_call_result(call, a.mcp_result);
        a.mcp_result = NULL;
    } else if (a.ok && tool && catalog_tool_answers_image(tool) && cJSON_IsObject(a.result)) {
        /* A picture (capture_screenshot): image content, the other facts as text. */
        cJSON *result = catalog_image_result(a.result);

        if (result)
            mcp_call_result(call, result);
        else
            tool_failed(call, "runboxd's image answer has no data and mimeType", false);
    } else if (a.ok) {
        answer_tool(call, a.result, a.structured);
        a.result = NULL;
        a.structured = NULL;
    } else {
        log_debug("proxy: call %s failed: %s", mcp_call_id_text(call), a.error ? a.error : "");
        tool_failed(call, a.error ? a.error : oom_msg, a.timeout);
    }
    upstream_answer_cleanup(&a);
}

static void on_daemon_started(void *ctx, bool ok, const char *reason)
{
    struct proxy *p = ctx;
    struct pcall *pc = p->wait_head;
    char msg[ERRINFO_MSG_MAX + 4200];

    p->wait_head = p->wait_tail = NULL;
    if (ok) {
        proxy_follow_kick(&p->follow);
        proxy_tools_refresh(&p->tools);
    } else
        snprintf(msg, sizeof(msg), "could not start runboxd: %s; see %s", reason,
                 autostart_log_path(p->as));
    while (pc) {
        struct pcall *next = pc->next;

        pc->queued = false;
        pc->prev = pc->next = NULL;
        if (ok)
            submit(p, pc);
        else
            fail_call(pc, msg, false);
        pc = next;
    }
}

/* The call was cancelled: drop its request or queue entry; the answer is dropped anyway. */
static void on_call_cancel(struct mcp_call *call, void *arg)
{
    struct pcall *pc = arg;
    struct proxy *p = pc->p;
    bool is_request = pc->is_request;

    log_debug("proxy: call %s cancelled", mcp_call_id_text(call));
    if (pc->req)
        upstream_cancel(p->up, pc->req);
    if (pc->queued)
        dequeue(p, pc);
    pcall_free(pc);
    if (is_request)
        mcp_call_error(call, MCP_INTERNAL_ERROR, "cancelled", NULL);
    else
        mcp_call_tool_error(call, "cancelled");
}

/* Sends pc now, or queues it while runboxd is being started. */
static void start(struct proxy *p, struct pcall *pc)
{
    mcp_call_on_cancel(pc->call, on_call_cancel, pc);
    if (p->as && autostart_is_running(p->as))
        enqueue(p, pc);
    else
        submit(p, pc);
}

static void on_tool(void *arg, struct mcp_call *call)
{
    struct proxy *p = arg;
    const cJSON *args = mcp_call_arguments(call);
    struct pcall *pc = calloc(1, sizeof(*pc));
    const struct catalog_tool *tool;
    struct schema_report rep;

    if (!pc) {
        tool_failed(call, oom_msg, false);
        return;
    }
    /* The engine checked the listed schema (catalog_listed_schema); the whole one (length
     * ceilings, unknown arguments) is checked here, before any HTTP. */
    tool = catalog_find(p->cat, mcp_call_name(call));
    if (tool && schema_validate(catalog_tool_input_schema(tool), args, "arguments", &rep) < 0) {
        char *text = schema_report_text(&rep);

        free(pc);
        mcp_call_tool_error(call, text ? text : oom_msg);
        free(text);
        return;
    }
    pc->p = p;
    pc->call = call;
    snprintf(pc->path, sizeof(pc->path), "/tool/%s", mcp_call_name(call));
    /* Progress, and a modern request's own log, come on an event stream. (A legacy session's
     * log comes through the follower, like every console entry.) */
    pc->stream = mcp_call_wants_progress(call) ||
                 (mcp_call_is_modern(call) && mcp_call_log_level(call) >= 0);
    if (mcp_call_is_modern(call) && mcp_call_log_level(call) >= 0) {
        size_t n = strlen(pc->path);

        snprintf(pc->path + n, sizeof(pc->path) - n, "?log=%s",
                 mcp_call_log_level(call) <= MCP_LOG_DEBUG     ? "debug"
                 : mcp_call_log_level(call) <= MCP_LOG_NOTICE  ? "info"
                 : mcp_call_log_level(call) <= MCP_LOG_WARNING ? "warn"
                                                               : "error");
    }
    pc->body = args ? cJSON_PrintUnformatted(args) : strdup("{}");
    if (!pc->body) {
        fail_call(pc, oom_msg, false);
        return;
    }
    pc->body_len = strlen(pc->body);
    start(p, pc);
}

/* ---- input ---- */

static void handle_line(void *ctx, const char *line, size_t len)
{
    struct proxy *p = ctx;

    mcp_session_handle(p->session, line, len, NULL);
}

static void on_line(void *ctx, const char *line, size_t len)
{
    struct proxy *p = ctx;

    if (!proxy_tools_hold(&p->tools, line, len)) /* else it waits for the external tools */
        handle_line(p, line, len);
}

static void on_oversized(void *ctx, size_t bytes)
{
    struct proxy *p = ctx;

    log_warn("proxy: dropped a %zu-byte stdin line (the limit is %zu bytes)", bytes,
             PROXY_LINE_MAX);
    mcp_session_reject_oversized(p->session, bytes, PROXY_LINE_MAX);
}

static void read_input(struct proxy *p)
{
    size_t total = 0;

    while (total < READ_BUDGET) {
        struct errinfo err = {0};
        size_t avail;
        char *space = proxy_lines_space(&p->lines, READ_CHUNK, &avail, &err);
        ssize_t n;

        if (!space) {
            log_error("%s", err.msg);
            p->in_eof = true;
            return;
        }
        n = read(p->in_fd, space, avail);
        if (n > 0) {
            proxy_lines_commit(&p->lines, (size_t)n, &p->sink);
            total += (size_t)n;
            if ((size_t)n < avail)
                return; /* drained for now; poll() says when there is more */
        } else if (n == 0) {
            proxy_lines_finish(&p->lines, &p->sink);
            p->in_eof = true;
            return;
        } else if (errno != EINTR) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                log_error("proxy: reading stdin: %s", strerror(errno));
                p->in_eof = true;
            }
            return;
        }
    }
}

/* ---- the loop ---- */

static size_t build_pollfds(struct proxy *p)
{
    size_t want = 1 + upstream_pollfds(p->up, NULL, 0);

    if (want > p->fds_cap) {
        size_t cap = want < 16 ? 16 : want * 2;
        struct pollfd *nf = realloc(p->fds, cap * sizeof(*nf));

        if (!nf)
            want = p->fds_cap; /* watch what fits; curl's timers still drive the rest */
        else {
            p->fds = nf;
            p->fds_cap = cap;
        }
    }
    p->fds[0].fd = p->in_eof ? -1 : p->in_fd; /* poll() skips a negative fd */
    p->fds[0].events = POLLIN;
    p->fds[0].revents = 0;
    upstream_pollfds(p->up, p->fds + 1, want - 1);
    return want;
}

static int min_timeout(int a, int b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    return a < b ? a : b;
}

/* Waits up to timeout_ms (-1: no limit) for the fds, with the stop signals unblocked only
 * meanwhile. Returns what ppoll() returns. */
static int wait_events(struct proxy *p, size_t nfds, int timeout_ms, const sigset_t *wait_mask)
{
    struct timespec ts;

    if (timeout_ms < 0)
        return ppoll(p->fds, nfds, NULL, wait_mask);
    ts.tv_sec = timeout_ms / 1000;
    ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
    return ppoll(p->fds, nfds, &ts, wait_mask);
}

static void run_loop(struct proxy *p, const sigset_t *wait_mask)
{
    for (;;) {
        int64_t now = clocks_mono_ms();
        size_t nfds;
        int timeout, follow_ms, tools_ms;

        upstream_dispatch(p->up, NULL, 0, now);
        autostart_tick(p->as, now);
        tools_ms = proxy_tools_tick(&p->tools, now);
        follow_ms = proxy_follow_tick(&p->follow, now);
        upstream_dispatch(p->up, NULL, 0, now); /* starts a stream the follower opened */
        flush_output(p);
        /* After stdin ends, the calls already asked for are still answered (a client that
         * pipes requests in wants their answers); clients that want to stop at once send
         * SIGTERM after closing stdin, as the MCP lifecycle describes. */
        if (p->out_closed ||
            (p->in_eof && mcp_session_inflight(p->session) == 0 && !proxy_tools_holding(&p->tools)))
            return;
        if (stop_signal) {
            log_info("proxy: %s received; stopping", strsignal(stop_signal));
            return;
        }
        nfds = build_pollfds(p);
        now = clocks_mono_ms(); /* writing stdout may have taken a while */
        timeout = min_timeout(upstream_timeout_ms(p->up, now), autostart_timeout_ms(p->as, now));
        timeout = min_timeout(min_timeout(timeout, follow_ms), tools_ms);
        if (wait_events(p, nfds, timeout, wait_mask) < 0) {
            if (errno == EINTR)
                continue;
            log_error("proxy: poll: %s", strerror(errno));
            return;
        }
        if (!p->in_eof && p->fds[0].revents)
            read_input(p);
        upstream_dispatch(p->up, p->fds + 1, nfds - 1, clocks_mono_ms());
    }
}

/* ---- resources and prompts: a request becomes GET /resources, GET /resource, GET /prompts
 * or POST /prompt/<name> (proxy_requests.c builds the path and maps the answer) ---- */

static void on_request(void *arg, struct mcp_call *call)
{
    struct proxy *p = arg;
    struct pcall *pc;

    /* runboxd's prompts fit one page: no cursor is valid. */
    if (strcmp(mcp_call_method(call), "prompts/list") == 0 &&
        cJSON_IsString(cJSON_GetObjectItemCaseSensitive(mcp_call_params(call), "cursor"))) {
        mcp_call_error(call, MCP_INVALID_PARAMS,
                       "prompts/list: invalid cursor (everything fits one page; send no cursor)",
                       NULL);
        return;
    }
    /* A client that lists or reads resources hears when the list changes. */
    if (strncmp(mcp_call_method(call), "resources/", 10) == 0)
        proxy_follow_want(&p->follow);
    pc = calloc(1, sizeof(*pc));
    if (!pc) {
        mcp_call_error(call, MCP_INTERNAL_ERROR, oom_msg, NULL);
        return;
    }
    pc->p = p;
    pc->call = call;
    pc->is_request = true;
    if (proxy_request_http(mcp_call_method(call), mcp_call_params(call), &pc->url, &pc->get,
                           &pc->body) < 0) {
        fail_call(pc, oom_msg, false);
        return;
    }
    pc->body_len = pc->body ? strlen(pc->body) : 0;
    start(p, pc);
}

/* ---- what the client wants to hear (the engine's interest hooks) ---- */

static int on_subscribe(void *arg, const char *uri, struct errinfo *err)
{
    struct proxy *p = arg;

    return proxy_follow_subscribe(&p->follow, uri, err);
}

static void on_unsubscribe(void *arg, const char *uri)
{
    struct proxy *p = arg;

    proxy_follow_unsubscribe(&p->follow, uri);
}

static void on_log_level(void *arg, struct mcp_session *s, int level)
{
    struct proxy *p = arg;

    (void)s; /* stdio has one session */
    proxy_follow_set_level(&p->follow, level);
}

/* runboxd's tools changed or its event stream started: fetch the list again. */
static void on_tools_changed(void *arg)
{
    struct proxy *p = arg;

    proxy_tools_refresh(&p->tools);
}

static const struct mcp_transport stdio_transport = {.send = be_send};

/* Installs the SIGTERM/SIGINT handler and blocks both; *wait_mask is the mask to wait with
 * (both unblocked), *saved the mask to restore at the end. */
static void block_stop_signals(sigset_t *saved, sigset_t *wait_mask)
{
    struct sigaction sa;
    sigset_t stops;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigprocmask(SIG_BLOCK, &stops, saved);
    *wait_mask = *saved;
    sigdelset(wait_mask, SIGTERM);
    sigdelset(wait_mask, SIGINT);
}

/* The server runbox offers: the catalog's tools, the workspace's files as a template, and the
 * daemon's resources and prompts, all answered by runboxd. */
static struct mcp_server *make_server(struct proxy *p, struct errinfo *err)
{
    static const struct mcp_resource_template files = {
        .uri_template = "file:///{path}",
        .name = "Workspace file",
        .description = "A file of the workspace by its path, e.g. file:///src/main.js; text, or "
                       "base64 blob for binary files",
        .read = on_request,
    };
    struct mcp_resource_template t = files;
    const struct catalog *cat = p->cfg->catalog ? p->cfg->catalog : catalog_builtin();
    /* The rules the listed tools share (paths, values) are said once, in the instructions. */
    struct mcp_server_info info = {.name = "runbox",
                                   .version = RUNBOX_VERSION,
                                   .instructions = catalog_instructions(cat),
                                   .notifies = MCP_NOTIFY_TOOLS | MCP_NOTIFY_RESOURCES |
                                               MCP_NOTIFY_UPDATES};
    const struct mcp_interest in = {.subscribe = on_subscribe,
                                    .unsubscribe = on_unsubscribe,
                                    .log_level = on_log_level,
                                    .arg = p};
    struct mcp_server *srv = mcp_server_new(&info, err); /* copies info */

    t.arg = p;
    p->cat = cat;
    if (!srv)
        return NULL;
    if (catalog_register_tools(cat, srv, on_tool, p, err) < 0 ||
        mcp_server_add_resource_template(srv, &t, err) < 0 ||
        mcp_server_set_resource_provider(srv, on_request, on_request, p, err) < 0 ||
        mcp_server_set_prompt_provider(srv, on_request, on_request, p, err) < 0 ||
        mcp_server_set_completion(srv, on_request, p, err) < 0 ||
        mcp_server_set_interest(srv, &in, err) < 0) {
        mcp_server_free(srv);
        return NULL;
    }
    return srv;
}

static void proxy_cleanup(struct proxy *p)
{
    /* Closes the session first: it cancels every call in flight through its cancel hook. */
    if (p->session)
        mcp_session_close(p->session);
    proxy_tools_cleanup(&p->tools);
    proxy_follow_cleanup(&p->follow);
    mcp_server_free(p->srv);
    autostart_free(p->as);
    upstream_free(p->up);
    proxy_lines_cleanup(&p->lines);
    free(p->out);
    free(p->fds);
}

int proxy_run(const struct proxy_config *cfg, int in_fd, int out_fd, struct errinfo *err)
{
    struct upstream_config ucfg = {
        .base_url = cfg->daemon_url, .token = cfg->token, .timeout_ms = cfg->timeout_ms};
    struct proxy p;
    sigset_t saved_mask, wait_mask;
    int in_flags = fcntl(in_fd, F_GETFL);
    int rc = -1;

    memset(&p, 0, sizeof(p));
    p.cfg = cfg;
    p.in_fd = in_fd;
    p.out_fd = out_fd;
    proxy_lines_init(&p.lines, PROXY_LINE_MAX);
    p.sink = (struct proxy_lines_sink){.line = on_line, .oversized = on_oversized, .ctx = &p};
    signal(SIGPIPE, SIG_IGN); /* a closed stdout shows up as EPIPE and ends the loop */
    block_stop_signals(&saved_mask, &wait_mask);
    p.up = upstream_new(&ucfg, err);
    if (!p.up)
        goto out;
    if (cfg->autostart) {
        p.as = autostart_new(p.up, on_daemon_started, &p, err);
        if (!p.as)
            goto out;
    }
    p.fds_cap = 16;
    p.fds = calloc(p.fds_cap, sizeof(*p.fds));
    p.srv = p.fds ? make_server(&p, err) : NULL;
    proxy_follow_init(&p.follow, p.up, p.srv);
    if (p.srv) {
        const struct proxy_tools_config tcfg = {.up = p.up,
                                                .srv = p.srv,
                                                .follow = &p.follow,
                                                .handler = on_tool,
                                                .handler_arg = &p,
                                                .replay = handle_line,
                                                .replay_ctx = &p};

        proxy_tools_init(&p.tools, &tcfg);
        p.follow.tools_changed = on_tools_changed;
        p.follow.tools_arg = &p;
    }
    p.session = p.srv ? mcp_session_new(p.srv, &stdio_transport, &p, 0, err) : NULL;
    if (!p.fds || !p.session) {
        errinfo_set(err, ERR_NOMEM, "proxy: cannot create the MCP session");
        goto out;
    }
    if (in_flags >= 0)
        fcntl(in_fd, F_SETFL, in_flags | O_NONBLOCK);
    log_debug("proxy: serving MCP on stdio; runboxd at %s%s", upstream_base_url(p.up),
              cfg->autostart ? " (started on demand)" : "");
    run_loop(&p, &wait_mask);
    rc = 0;
out:
    flush_output(&p);
    proxy_cleanup(&p);
    if (in_flags >= 0)
        fcntl(in_fd, F_SETFL, in_flags);
    sigprocmask(SIG_SETMASK, &saved_mask, NULL);
    return rc;
}
