/* daemon/mcpclient.c - the MCP client of one external server (see mcpclient.h): its thread, the
 * handshake, the lists, requests and what the server sends.
 *
 * DESIGN: everything about the protocol happens here, on the client's thread, except waiting:
 * a request from a worker thread puts its message on the outgoing queue, wakes the thread
 * (an eventfd the transport polls) and sleeps on its own condition variable until the thread
 * hands it the answer, its deadline passes, its call is cancelled or the connection ends. To a
 * stdio server with nothing queued, the worker writes a short request itself (direct_send,
 * one non-blocking write of a whole line, under c->mu): no wake-up of the thread. The
 * handshake and the list reads are "internal" requests whose answers run a callback on the
 * thread, so the thread never blocks on the server. Everything shared is under c->mu, which is
 * held only to copy in or out: callbacks into the call service (progress) and the changed
 * callback run without it.
 *
 * A stdio server's answers are read by a waiting worker itself (leader/follower), not by the
 * thread, which would have to wake the worker again: the "reader's turn" on its stdout is held
 * by one thread at a time. The thread holds it while no call waits; the first waiter asks for
 * it (rd_want, one wake of the thread) and the thread lets go at its next look. A waiter that
 * finds the turn free takes it and polls stdout (and rd_wake_fd, poked by its cancellation or
 * the connection's end) until its own answer is in; it completes every waiter's answer and
 * hands on progress as it reads, queues anything else for the thread (the inbox: the thread's
 * callbacks stay on the thread), and passes the turn to the next waiter (rd_heir). The thread
 * takes the turn back once it has been left to no one for READER_IDLE_MS, and looks that
 * often meanwhile, so a notification or the server's exit between calls is seen within it;
 * back-to-back calls keep it with the workers. A worker that reads the end of stdout tells the
 * thread (rd_ended), which ends the connection after withdrawing the descriptor from the
 * workers (mcpclient__withdraw_reader waits for the one reading to let go). */
#include "mcpclient.h"
#include "clocks.h"
#include "mcpclient_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "call.h"
#include "console.h"
#include "jsonrpc.h"
#include "log.h"
#include "registry.h"
#include "startgate.h"
#include "strfmt.h"

#define LIST_PAGES_MAX  100
#define READY_STABLE_MS 10000 /* ready this long: the next failure starts the back-off anew */
#define READER_IDLE_MS  20    /* workers left stdout unread this long: the thread reads it again */
#define INBOX_MAX       1024  /* messages a reading worker queues for the thread; then it stops */

static const char *const legacy_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                              "2024-11-05"};
#define MODERN_VERSION "2026-07-28"

struct pending {
    struct pending *next;
    uint64_t id;
    struct mcpclient *c;
    unsigned gen; /* the connection it was sent on */
    /* internal (the thread's own requests): */
    void (*cb)(struct mcpclient *c, struct pending *p, cJSON *result, const cJSON *error);
    int64_t deadline_ms; /* 0: none */
    cJSON *acc;          /* a list being read, page by page */
    int pages;
    unsigned list; /* MCPCLIENT_CHANGED_TOOLS, ... */
    /* a waiter (mcpclient_request): */
    bool waiter;
    pthread_cond_t cond;
    bool done, cancelled;
    cJSON *result;
    struct errinfo err;
    struct call *call;
    int delivering; /* progress reports being handed to the call */
};

struct outmsg {
    struct outmsg *next;
    char *data;
    size_t len;
};

/* A message a worker read for the client's thread (see mcpclient__receive_lent), or (msg NULL)
 * the id of an internal request whose answer was over the limit. */
struct inmsg {
    struct inmsg *next;
    cJSON *msg;
    uint64_t over_id;
    size_t over_bytes;
};

/* Who holds the reader's turn on a stdio server's stdout (mcpclient_int.h). */
enum reader { RD_NONE, RD_THREAD, RD_WORKER };

struct mcpclient {
    struct mcpclient_options opt;
    const struct registry_spec *spec;
    const struct mcpclient_transport *tr;
    pthread_t thread;
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t stop_cond;
    struct pending *pending;
    uint64_t next_id;
    struct outmsg *out_head, *out_tail;
    size_t out_bytes;
    cJSON *tools, *prompts, *resources;
    cJSON *caps;       /* the server's capabilities */
    char *server_name; /* serverInfo */
    char *server_version;
    int64_t handshake_deadline;
    uint64_t gate_ticket; /* the start gate's slot while this connection starts, or 0 */
    int64_t started_at;   /* wall ms: this connection's attempt began (past the start gate) */
    int64_t last_error_at, ready_at;
    int64_t tokens_at;
    uint64_t stderr_dropped;
    double tokens;
    long pid; /* a stdio child, or 0 */
    enum mcpclient_state state;
    unsigned gen;           /* connection number */
    unsigned lists_pending; /* during the handshake */
    unsigned restarts;
    unsigned stderr_count;
    int hint; /* the transport's, across connections */
    int wake_fd;
    int direct_fd;    /* the stdio child's stdin while it is served, else -1 (see direct_send) */
    bool direct_busy; /* the transport is writing a message it took (mcpclient__next_out) */
    /* The reader's turn on a stdio server's stdout (see DESIGN): */
    int rd_fd; /* offered by the transport while it serves, else -1 */
    mcpclient_read_fn rd_fn;
    void *rd_arg;
    enum reader rd_owner;
    struct pending *rd_worker;       /* the waiter reading (RD_WORKER) */
    struct pending *rd_heir;         /* the waiter told to take the turn next */
    bool rd_want;                    /* a waiter asked the thread for the turn */
    bool rd_ended;                   /* a worker read the end of stdout */
    int64_t rd_idle_at;              /* when the turn was last left to no one */
    int rd_wake_fd;                  /* eventfd: wakes the reading worker (its cancel, the end) */
    pthread_cond_t rd_cond;          /* the reading worker let go (mcpclient__withdraw_reader) */
    struct inmsg *in_head, *in_tail; /* what workers read for the thread */
    size_t in_count;
    bool started;
    bool stopping;
    bool modern;
    bool handshake_failed;
    char protocol[16];
    char handshake_why[400];
    char last_error[1024];
    char stderr_tail[MCPCLIENT_STDERR_KEEP][240];
};

/* ---- small helpers ---- */

static void wake(struct mcpclient *c)
{
    uint64_t one = 1;

    if (write(c->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        log_debug("mcp %s: wake: %s", c->spec->name, strerror(errno));
}

const struct registry_spec *mcpclient__spec(const struct mcpclient *c)
{
    return c->spec;
}

const struct mcpclient_options *mcpclient__options(const struct mcpclient *c)
{
    return &c->opt;
}

int mcpclient__wake_fd(const struct mcpclient *c)
{
    return c->wake_fd;
}

void mcpclient__drain_wake(struct mcpclient *c)
{
    uint64_t n;

    if (read(c->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
        log_debug("mcp %s: drain: %s", c->spec->name, strerror(errno));
}

const char *mcpclient_name(const struct mcpclient *c)
{
    return c->spec->name;
}

const char *mcpclient_state_name(enum mcpclient_state s)
{
    switch (s) {
    case MCPCLIENT_DISABLED:
        return "disabled";
    case MCPCLIENT_CONNECTING:
        return "connecting";
    case MCPCLIENT_READY:
        return "ready";
    case MCPCLIENT_FAILED:
        return "failed";
    }
    return "failed";
}

/* ---- the outgoing queue (mu held) ---- */

static int enqueue_locked(struct mcpclient *c, char *text, struct errinfo *err)
{
    struct outmsg *m;
    size_t len;

    if (!text) {
        errinfo_set(err, ERR_NOMEM, "%s: out of memory for a request", c->spec->name);
        return -1;
    }
    len = strlen(text);
    if (c->out_bytes + len > MCPCLIENT_QUEUE_MAX) {
        free(text);
        errinfo_set(err, ERR_UNAVAILABLE,
                    "%s is not reading its input: %zu bytes wait to be sent to it already",
                    c->spec->name, c->out_bytes);
        return -1;
    }
    m = calloc(1, sizeof(*m));
    if (!m) {
        free(text);
        errinfo_set(err, ERR_NOMEM, "%s: out of memory for a request", c->spec->name);
        return -1;
    }
    m->data = text;
    m->len = len;
    if (c->out_tail)
        c->out_tail->next = m;
    else
        c->out_head = m;
    c->out_tail = m;
    c->out_bytes += len;
    return 0;
}

char *mcpclient__next_out(struct mcpclient *c, size_t *len)
{
    struct outmsg *m;
    char *data = NULL;

    pthread_mutex_lock(&c->mu);
    m = c->out_head;
    if (m) {
        c->out_head = m->next;
        if (!c->out_head)
            c->out_tail = NULL;
        c->out_bytes -= m->len;
        data = m->data;
        *len = m->len;
        free(m);
    }
    /* The transport asks again only once the last one is written. */
    c->direct_busy = data != NULL;
    pthread_mutex_unlock(&c->mu);
    return data;
}

void mcpclient__set_direct_fd(struct mcpclient *c, int fd)
{
    pthread_mutex_lock(&c->mu);
    c->direct_fd = fd;
    c->direct_busy = false;
    pthread_mutex_unlock(&c->mu);
}

/* Writes text and a newline to the stdio child's stdin from the requesting thread (mu held),
 * when nothing is queued or being written before it: the client's thread is then not woken to
 * write it, which is one hand-over fewer per call. Only a line of at most PIPE_BUF bytes is
 * written so: a pipe takes it whole or not at all (EAGAIN), so no half line is left behind.
 * False: nothing was written; queue it. */
static bool direct_send(struct mcpclient *c, const char *text)
{
    size_t len = strlen(text);
    struct iovec iov[2] = {{.iov_base = (void *)text, .iov_len = len},
                           {.iov_base = (void *)"\n", .iov_len = 1}};

    if (c->direct_fd < 0 || c->direct_busy || c->out_head || len + 1 > PIPE_BUF)
        return false;
    return writev(c->direct_fd, iov, 2) == (ssize_t)(len + 1);
}

void mcpclient__unsend(struct mcpclient *c, char *msg, size_t len)
{
    struct outmsg *m = calloc(1, sizeof(*m));

    if (!m) {
        free(msg);
        return;
    }
    m->data = msg;
    m->len = len;
    pthread_mutex_lock(&c->mu);
    m->next = c->out_head;
    c->out_head = m;
    if (!c->out_tail)
        c->out_tail = m;
    c->out_bytes += len;
    pthread_mutex_unlock(&c->mu);
}

static void clear_queue_locked(struct mcpclient *c)
{
    while (c->out_head) {
        struct outmsg *m = c->out_head;

        c->out_head = m->next;
        free(m->data);
        free(m);
    }
    c->out_tail = NULL;
    c->out_bytes = 0;
}

/* ---- building messages ---- */

/* The modern revision's per-request facts, in params._meta. */
static void add_modern_meta(cJSON *params)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    cJSON *info;

    if (!meta)
        meta = cJSON_AddObjectToObject(params, "_meta");
    if (!meta)
        return;
    cJSON_AddStringToObject(meta, "io.modelcontextprotocol/protocolVersion", MODERN_VERSION);
    cJSON_AddObjectToObject(meta, "io.modelcontextprotocol/clientCapabilities");
    info = cJSON_AddObjectToObject(meta, "io.modelcontextprotocol/clientInfo");
    cJSON_AddStringToObject(info, "name", "runbox");
    cJSON_AddStringToObject(info, "version", RUNBOX_VERSION);
}

/* {"jsonrpc":"2.0","id":id,"method":m,"params":params} (params taken; NULL for none). */
static char *request_text(struct mcpclient *c, uint64_t id, const char *method, cJSON *params,
                          bool progress)
{
    cJSON *msg = cJSON_CreateObject();
    char *text;

    if (!params)
        params = cJSON_CreateObject();
    if (progress) {
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");

        if (!meta)
            meta = cJSON_AddObjectToObject(params, "_meta");
        cJSON_DeleteItemFromObjectCaseSensitive(meta, "progressToken");
        cJSON_AddNumberToObject(meta, "progressToken", (double)id);
    }
    if (c->modern && strcmp(method, "server/discover") != 0)
        add_modern_meta(params);
    cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
    cJSON_AddNumberToObject(msg, "id", (double)id);
    cJSON_AddStringToObject(msg, "method", method);
    if (!cJSON_AddItemToObject(msg, "params", params))
        cJSON_Delete(params);
    text = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    return text;
}

static char *notification_text(const char *method, cJSON *params)
{
    cJSON *msg = cJSON_CreateObject();
    char *text;

    cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
    cJSON_AddStringToObject(msg, "method", method);
    if (params && !cJSON_AddItemToObject(msg, "params", params))
        cJSON_Delete(params);
    text = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    return text;
}

/* ---- internal requests (the client's thread) ---- */

typedef void (*pending_cb)(struct mcpclient *c, struct pending *p, cJSON *result,
                           const cJSON *error);

static void handshake_fail(struct mcpclient *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void handshake_fail(struct mcpclient *c, const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&c->mu);
    if (!c->handshake_failed) {
        va_start(ap, fmt);
        vsnprintf(c->handshake_why, sizeof(c->handshake_why), fmt, ap);
        va_end(ap);
        c->handshake_failed = true;
    }
    pthread_mutex_unlock(&c->mu);
}

/* Sends an internal request; its answer runs cb on the thread. */
static struct pending *send_internal(struct mcpclient *c, const char *method, cJSON *params,
                                     pending_cb cb, int64_t deadline_ms)
{
    struct pending *p = calloc(1, sizeof(*p));
    struct errinfo err = {0};

    if (!p) {
        cJSON_Delete(params);
        handshake_fail(c, "out of memory");
        return NULL;
    }
    p->c = c;
    p->cb = cb;
    p->deadline_ms = deadline_ms;
    pthread_mutex_lock(&c->mu);
    p->id = c->next_id++;
    p->gen = c->gen;
    if (enqueue_locked(c, request_text(c, p->id, method, params, false), &err) < 0) {
        pthread_mutex_unlock(&c->mu);
        free(p);
        handshake_fail(c, "%s", err.msg);
        return NULL;
    }
    p->next = c->pending;
    c->pending = p;
    pthread_mutex_unlock(&c->mu);
    wake(c);
    return p;
}

static void send_notification(struct mcpclient *c, const char *method, cJSON *params)
{
    struct errinfo err = {0};

    pthread_mutex_lock(&c->mu);
    enqueue_locked(c, notification_text(method, params), &err);
    pthread_mutex_unlock(&c->mu);
    wake(c);
}

static void changed(struct mcpclient *c, unsigned what)
{
    if (c->opt.changed)
        c->opt.changed(c->opt.arg, c, what);
}

static const char *list_method(unsigned list)
{
    return list == MCPCLIENT_CHANGED_TOOLS     ? "tools/list"
           : list == MCPCLIENT_CHANGED_PROMPTS ? "prompts/list"
                                               : "resources/list";
}

static const char *list_key(unsigned list)
{
    return list == MCPCLIENT_CHANGED_TOOLS     ? "tools"
           : list == MCPCLIENT_CHANGED_PROMPTS ? "prompts"
                                               : "resources";
}

static void read_list(struct mcpclient *c, unsigned list, cJSON *acc, int pages,
                      const char *cursor);

/* The start gate's slot goes back once the server is ready or the attempt ended. */
static void leave_gate(struct mcpclient *c)
{
    uint64_t ticket;

    pthread_mutex_lock(&c->mu);
    ticket = c->gate_ticket;
    c->gate_ticket = 0;
    pthread_mutex_unlock(&c->mu);
    startgate_leave(c->opt.gate, ticket);
}

static void become_ready(struct mcpclient *c)
{
    pthread_mutex_lock(&c->mu);
    c->state = MCPCLIENT_READY;
    c->ready_at = clocks_wall_ms();
    c->handshake_deadline = 0;
    pthread_mutex_unlock(&c->mu);
    leave_gate(c);
    log_info("mcp %s: ready (%s)", c->spec->name, c->protocol);
    changed(c, MCPCLIENT_CHANGED_STATE | MCPCLIENT_CHANGED_TOOLS | MCPCLIENT_CHANGED_PROMPTS |
                   MCPCLIENT_CHANGED_RESOURCES);
}

/* One page of a list arrived: keep it, read the next or install the whole list. */
static void on_list_page(struct mcpclient *c, struct pending *p, cJSON *result, const cJSON *error)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(result, list_key(p->list));
    const cJSON *next = cJSON_GetObjectItemCaseSensitive(result, "nextCursor");
    cJSON *acc = p->acc, *it, **slot;
    bool handshake;

    p->acc = NULL;
    if (error || !cJSON_IsArray(items)) {
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(error, "message");

        cJSON_Delete(acc);
        if (c->state != MCPCLIENT_READY)
            handshake_fail(c, "%s failed: %.200s", list_method(p->list),
                           cJSON_IsString(msg) ? msg->valuestring
                                               : "the answer has no array of items");
        else
            log_warn("mcp %s: %s failed after a list change: %s", c->spec->name,
                     list_method(p->list), cJSON_IsString(msg) ? msg->valuestring : "bad answer");
        return;
    }
    while ((it = cJSON_DetachItemFromArray((cJSON *)items, 0)) != NULL) {
        if (cJSON_GetArraySize(acc) >= MCPCLIENT_LIST_MAX) {
            cJSON_Delete(it);
            continue;
        }
        cJSON_AddItemToArray(acc, it);
    }
    if (cJSON_IsString(next) && next->valuestring[0] && p->pages + 1 < LIST_PAGES_MAX &&
        cJSON_GetArraySize(acc) < MCPCLIENT_LIST_MAX) {
        read_list(c, p->list, acc, p->pages + 1, next->valuestring);
        return;
    }
    pthread_mutex_lock(&c->mu);
    slot = p->list == MCPCLIENT_CHANGED_TOOLS     ? &c->tools
           : p->list == MCPCLIENT_CHANGED_PROMPTS ? &c->prompts
                                                  : &c->resources;
    cJSON_Delete(*slot);
    *slot = acc;
    handshake = c->state != MCPCLIENT_READY;
    if (handshake)
        c->lists_pending &= ~p->list;
    pthread_mutex_unlock(&c->mu);
    if (!handshake)
        changed(c, p->list);
    else if (!c->lists_pending)
        become_ready(c);
}

static void read_list(struct mcpclient *c, unsigned list, cJSON *acc, int pages, const char *cursor)
{
    cJSON *params = cJSON_CreateObject();
    struct pending *p;

    if (cursor)
        cJSON_AddStringToObject(params, "cursor", cursor);
    if (!acc)
        acc = cJSON_CreateArray();
    p = send_internal(c, list_method(list), params, on_list_page,
                      c->state == MCPCLIENT_READY ? clocks_mono_ms() + c->spec->timeout_ms : 0);
    if (!p) {
        cJSON_Delete(acc);
        return;
    }
    pthread_mutex_lock(&c->mu);
    p->acc = acc;
    p->pages = pages;
    p->list = list;
    pthread_mutex_unlock(&c->mu);
}

/* After the version is agreed: read every list the server has. */
static void start_lists(struct mcpclient *c)
{
    static const unsigned lists[] = {MCPCLIENT_CHANGED_TOOLS, MCPCLIENT_CHANGED_PROMPTS,
                                     MCPCLIENT_CHANGED_RESOURCES};
    unsigned want = 0;

    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < 3; i++)
        if (cJSON_GetObjectItemCaseSensitive(c->caps, list_key(lists[i])))
            want |= lists[i];
    c->lists_pending = want;
    pthread_mutex_unlock(&c->mu);
    if (!want) {
        become_ready(c);
        return;
    }
    for (size_t i = 0; i < 3; i++)
        if (want & lists[i])
            read_list(c, lists[i], NULL, 0, NULL);
}

static void take_server_facts(struct mcpclient *c, const cJSON *caps, const cJSON *info,
                              const char *version, bool modern)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(info, "name");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(info, "version");

    pthread_mutex_lock(&c->mu);
    cJSON_Delete(c->caps);
    c->caps = cJSON_IsObject(caps) ? cJSON_Duplicate(caps, 1) : cJSON_CreateObject();
    free(c->server_name);
    free(c->server_version);
    c->server_name = cJSON_IsString(n) ? strdup(n->valuestring) : NULL;
    c->server_version = cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
    snprintf(c->protocol, sizeof(c->protocol), "%s", version);
    c->modern = modern;
    pthread_mutex_unlock(&c->mu);
}

static void on_initialize(struct mcpclient *c, struct pending *p, cJSON *result, const cJSON *error)
{
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(result, "protocolVersion");
    bool known = false;

    (void)p;
    if (error) {
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(error, "message");

        handshake_fail(c, "initialize failed: %.300s",
                       cJSON_IsString(msg) ? msg->valuestring : "an error without a message");
        return;
    }
    for (size_t i = 0; cJSON_IsString(version) && i < 4; i++)
        known |= strcmp(version->valuestring, legacy_versions[i]) == 0;
    if (!known) {
        handshake_fail(c,
                       "answered initialize with protocolVersion %.40s, which runbox does not "
                       "speak (it speaks %s ... %s)",
                       cJSON_IsString(version) ? version->valuestring : "(none)",
                       legacy_versions[3], legacy_versions[0]);
        return;
    }
    take_server_facts(c, cJSON_GetObjectItemCaseSensitive(result, "capabilities"),
                      cJSON_GetObjectItemCaseSensitive(result, "serverInfo"), version->valuestring,
                      false);
    send_notification(c, "notifications/initialized", NULL);
    start_lists(c);
}

static void send_initialize(struct mcpclient *c)
{
    cJSON *params = cJSON_CreateObject(), *info;

    cJSON_AddStringToObject(params, "protocolVersion", legacy_versions[0]);
    cJSON_AddObjectToObject(params, "capabilities");
    info = cJSON_AddObjectToObject(params, "clientInfo");
    cJSON_AddStringToObject(info, "name", "runbox");
    cJSON_AddStringToObject(info, "version", RUNBOX_VERSION);
    send_internal(c, "initialize", params, on_initialize, 0);
}

static void on_listen(struct mcpclient *c, struct pending *p, cJSON *result, const cJSON *error)
{
    (void)p;
    (void)result;
    if (error)
        log_info("mcp %s: subscriptions/listen ended; list changes are not followed",
                 c->spec->name);
}

/* server/discover answered: a 2026-07-28 server is spoken to statelessly; any error (a legacy
 * server does not know the method, or wants initialize first) falls back to initialize. */
static void on_discover(struct mcpclient *c, struct pending *p, cJSON *result, const cJSON *error)
{
    const cJSON *versions = cJSON_GetObjectItemCaseSensitive(result, "supportedVersions"), *v;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(result, "_meta");
    bool modern = false;
    cJSON *params, *filter;

    (void)p;
    cJSON_ArrayForEach(v, versions) modern |=
        cJSON_IsString(v) && strcmp(v->valuestring, MODERN_VERSION) == 0;
    if (error || !modern) {
        send_initialize(c);
        return;
    }
    take_server_facts(c, cJSON_GetObjectItemCaseSensitive(result, "capabilities"),
                      cJSON_GetObjectItemCaseSensitive(meta, "io.modelcontextprotocol/serverInfo"),
                      MODERN_VERSION, true);
    params = cJSON_CreateObject();
    filter = cJSON_AddObjectToObject(params, "filter");
    cJSON_AddBoolToObject(filter, "toolsListChanged", true);
    cJSON_AddBoolToObject(filter, "promptsListChanged", true);
    cJSON_AddBoolToObject(filter, "resourcesListChanged", true);
    send_internal(c, "subscriptions/listen", params, on_listen, 0);
    start_lists(c);
}

void mcpclient__opened(struct mcpclient *c)
{
    cJSON *params = cJSON_CreateObject();

    pthread_mutex_lock(&c->mu);
    c->handshake_deadline = clocks_mono_ms() + c->spec->timeout_ms;
    pthread_mutex_unlock(&c->mu);
    add_modern_meta(params);
    send_internal(c, "server/discover", params, on_discover, 0);
}

/* ---- what arrives ---- */

static struct pending *find_pending_locked(struct mcpclient *c, uint64_t id)
{
    for (struct pending *p = c->pending; p; p = p->next)
        if (p->id == id)
            return p;
    return NULL;
}

static void unlink_pending_locked(struct mcpclient *c, struct pending *p)
{
    for (struct pending **pp = &c->pending; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            p->next = NULL;
            return;
        }
}

static void free_internal(struct pending *p)
{
    cJSON_Delete(p->acc);
    free(p);
}

static bool id_of(const cJSON *id, uint64_t *out)
{
    if (cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble < 9007199254740992.0) {
        *out = (uint64_t)id->valuedouble;
        return (double)*out == id->valuedouble;
    }
    if (cJSON_IsString(id)) { /* a server that echoes ids as strings */
        char *end;

        errno = 0;
        *out = strtoull(id->valuestring, &end, 10);
        return !errno && *end == '\0' && id->valuestring[0];
    }
    return false;
}

/* Hands a waiter its outcome (mu held). */
static void complete_waiter_locked(struct pending *p, cJSON *result, const cJSON *error)
{
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(error, "message");

    if (error) {
        errinfo_set(&p->err, ERR_INVALID, "%s answered with an error: %.400s", p->c->spec->name,
                    cJSON_IsString(msg) ? msg->valuestring : "(no message)");
        cJSON_Delete(result);
    } else {
        p->result = result;
    }
    p->done = true;
    pthread_cond_broadcast(&p->cond);
}

/* Hands answer msg to the waiter of request id, if one waits for it: true when done so. */
static bool answer_waiter(struct mcpclient *c, cJSON *msg, uint64_t id)
{
    struct pending *p;

    pthread_mutex_lock(&c->mu);
    p = find_pending_locked(c, id);
    if (!p || !p->waiter) {
        pthread_mutex_unlock(&c->mu);
        return false;
    }
    unlink_pending_locked(c, p);
    complete_waiter_locked(p, cJSON_DetachItemFromObjectCaseSensitive(msg, "result"),
                           cJSON_GetObjectItemCaseSensitive(msg, "error"));
    pthread_mutex_unlock(&c->mu);
    return true;
}

static void on_response(struct mcpclient *c, cJSON *msg)
{
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(msg, "error");
    struct pending *p;
    cJSON *result;
    uint64_t id;

    if (!id_of(cJSON_GetObjectItemCaseSensitive(msg, "id"), &id)) {
        log_debug("mcp %s: an answer without a usable id is ignored", c->spec->name);
        return;
    }
    if (answer_waiter(c, msg, id))
        return;
    pthread_mutex_lock(&c->mu);
    p = find_pending_locked(c, id);
    if (p)
        unlink_pending_locked(c, p);
    pthread_mutex_unlock(&c->mu);
    if (!p) {
        log_debug("mcp %s: an answer to request %" PRIu64 " that no one waits for", c->spec->name,
                  id);
        return;
    }
    result = cJSON_DetachItemFromObjectCaseSensitive(msg, "result");
    p->cb(c, p, result, error);
    cJSON_Delete(result);
    free_internal(p);
}

/* A request from the server (sampling, elicitation, roots, ping). */
static void on_server_request(struct mcpclient *c, const cJSON *msg, const char *method)
{
    cJSON *reply = cJSON_CreateObject(), *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    struct errinfo err = {0};

    cJSON_AddStringToObject(reply, "jsonrpc", "2.0");
    cJSON_AddItemToObject(reply, "id", cJSON_Duplicate(id, 1));
    if (strcmp(method, "ping") == 0) {
        cJSON_AddObjectToObject(reply, "result");
    } else {
        cJSON *e = cJSON_AddObjectToObject(reply, "error");
        char text[300];

        snprintf(text, sizeof(text),
                 "%.60s is not supported by runbox: runboxd connects this server for several "
                 "clients and does not route requests back to them",
                 method);
        cJSON_AddNumberToObject(e, "code", -32601);
        cJSON_AddStringToObject(e, "message", text);
        log_info("mcp %s: refused its %s request (not supported by runbox)", c->spec->name, method);
    }
    pthread_mutex_lock(&c->mu);
    enqueue_locked(c, cJSON_PrintUnformatted(reply), &err);
    pthread_mutex_unlock(&c->mu);
    cJSON_Delete(reply);
}

static void on_progress(struct mcpclient *c, const cJSON *params)
{
    const cJSON *token = cJSON_GetObjectItemCaseSensitive(params, "progressToken");
    const cJSON *prog = cJSON_GetObjectItemCaseSensitive(params, "progress");
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(params, "total");
    const cJSON *message = cJSON_GetObjectItemCaseSensitive(params, "message");
    struct pending *p;
    uint64_t id;

    if (!id_of(token, &id) || !cJSON_IsNumber(prog))
        return;
    pthread_mutex_lock(&c->mu);
    p = find_pending_locked(c, id);
    if (!p || !p->waiter || !p->call || p->done || p->cancelled) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    p->delivering++;
    pthread_mutex_unlock(&c->mu);
    call_progress(p->call, prog->valuedouble, cJSON_IsNumber(total) ? total->valuedouble : 0,
                  cJSON_IsString(message) ? message->valuestring : NULL);
    pthread_mutex_lock(&c->mu);
    p->delivering--;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&c->mu);
}

/* notifications/message: into the console, as the server's own line. */
static void on_log_message(struct mcpclient *c, const cJSON *params)
{
    const cJSON *level = cJSON_GetObjectItemCaseSensitive(params, "level");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(params, "data");
    const char *lv = cJSON_IsString(level) ? level->valuestring : "info";
    enum console_level cl = CONSOLE_INFO;
    char *text;

    if (!c->opt.console)
        return;
    if (strcmp(lv, "debug") == 0)
        cl = CONSOLE_DEBUG;
    else if (strcmp(lv, "warning") == 0 || strcmp(lv, "notice") == 0)
        cl = CONSOLE_WARN;
    else if (strcmp(lv, "error") == 0 || strcmp(lv, "critical") == 0 || strcmp(lv, "alert") == 0 ||
             strcmp(lv, "emergency") == 0)
        cl = CONSOLE_ERROR;
    text = cJSON_IsString(data) ? strdup(data->valuestring) : cJSON_PrintUnformatted(data);
    if (text)
        console_append(c->opt.console, cl, CONSOLE_SRC_MCP, 0, c->spec->name, 0, text,
                       strlen(text));
    free(text);
}

static void on_notification(struct mcpclient *c, const cJSON *msg, const char *method)
{
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    bool ready;

    pthread_mutex_lock(&c->mu);
    ready = c->state == MCPCLIENT_READY;
    pthread_mutex_unlock(&c->mu);
    if (strcmp(method, "notifications/progress") == 0)
        on_progress(c, params);
    else if (strcmp(method, "notifications/message") == 0)
        on_log_message(c, params);
    else if (ready && strcmp(method, "notifications/tools/list_changed") == 0)
        read_list(c, MCPCLIENT_CHANGED_TOOLS, NULL, 0, NULL);
    else if (ready && strcmp(method, "notifications/prompts/list_changed") == 0)
        read_list(c, MCPCLIENT_CHANGED_PROMPTS, NULL, 0, NULL);
    else if (ready && strcmp(method, "notifications/resources/list_changed") == 0)
        read_list(c, MCPCLIENT_CHANGED_RESOURCES, NULL, 0, NULL);
    else
        log_trace("mcp %s: notification %s ignored", c->spec->name, method);
}

static void dispatch(struct mcpclient *c, cJSON *msg)
{
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");

    if (!cJSON_IsObject(msg))
        return;
    if (cJSON_IsString(method)) {
        if (id && !cJSON_IsNull(id))
            on_server_request(c, msg, method->valuestring);
        else
            on_notification(c, msg, method->valuestring);
        return;
    }
    on_response(c, msg);
}

void mcpclient__receive(struct mcpclient *c, const char *json, size_t len)
{
    struct errinfo err = {0};
    cJSON *msg = jsonrpc_parse(json, len, &err), *e;

    if (!msg) {
        log_debug("mcp %s: a message that is not JSON is ignored (%s)", c->spec->name, err.msg);
        return;
    }
    if (cJSON_IsArray(msg)) {
        cJSON_ArrayForEach(e, msg) dispatch(c, e);
    } else {
        dispatch(c, msg);
    }
    cJSON_Delete(msg);
}

/* ---- the reader's turn (leader/follower on a stdio server's stdout) ---- */

static void oversized_id(struct mcpclient *c, uint64_t id, size_t bytes, bool lent);

/* Wakes the worker holding the turn (its call was cancelled, or the turn is taken back). */
static void poke_reader(struct mcpclient *c)
{
    uint64_t one = 1;

    if (write(c->rd_wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        log_debug("mcp %s: poke: %s", c->spec->name, strerror(errno));
}

/* Tells the next waiter (not except) to take the turn, which no one holds (mu held). */
static void pass_turn_locked(struct mcpclient *c, const struct pending *except)
{
    c->rd_heir = NULL;
    for (struct pending *q = c->pending; q; q = q->next)
        if (q->waiter && q != except && !q->done && !q->cancelled) {
            c->rd_heir = q;
            pthread_cond_broadcast(&q->cond);
            return;
        }
}

static bool may_take_turn_locked(const struct mcpclient *c, const struct pending *p)
{
    return c->rd_fd >= 0 && c->rd_owner == RD_NONE && !c->rd_ended && c->in_count < INBOX_MAX &&
           c->state == MCPCLIENT_READY && p->gen == c->gen;
}

/* p takes the turn: reads the server's stdout until p is answered, cancelled or out of time,
 * or the turn is taken back, and passes the turn on (mu held on entry and on return, not while
 * it waits or reads). True when p's time ran out. */
static bool read_turn_locked(struct mcpclient *c, struct pending *p, int64_t until_ms)
{
    struct pollfd pf[2] = {{.fd = c->rd_fd, .events = POLLIN},
                           {.fd = c->rd_wake_fd, .events = POLLIN}};
    mcpclient_read_fn fn = c->rd_fn;
    void *arg = c->rd_arg;
    bool timed_out = false;
    int rc = 0;

    c->rd_owner = RD_WORKER;
    c->rd_worker = p;
    if (c->rd_heir == p)
        c->rd_heir = NULL;
    while (!p->done && !p->cancelled && c->rd_fd >= 0 && c->in_count < INBOX_MAX) {
        int64_t left = until_ms - clocks_mono_ms();
        int r;

        if (left <= 0) {
            timed_out = true;
            break;
        }
        pthread_mutex_unlock(&c->mu);
        r = poll(pf, 2, left > INT_MAX ? INT_MAX : (int)left);
        if (r > 0 && (pf[1].revents & POLLIN)) {
            uint64_t n;

            if (read(c->rd_wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
                log_debug("mcp %s: poke: %s", c->spec->name, strerror(errno));
        }
        if (r > 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
            rc = fn(c, arg);
        pthread_mutex_lock(&c->mu);
        if (rc != 0) {
            c->rd_ended = true; /* the thread ends the connection */
            break;
        }
    }
    c->rd_owner = RD_NONE;
    c->rd_worker = NULL;
    c->rd_idle_at = clocks_mono_ms();
    if (c->rd_fd < 0)
        pthread_cond_broadcast(&c->rd_cond);
    else if (rc == 0)
        pass_turn_locked(c, p);
    if (rc != 0) {
        pthread_mutex_unlock(&c->mu);
        wake(c);
        pthread_mutex_lock(&c->mu);
    }
    return timed_out;
}

void mcpclient__offer_reader(struct mcpclient *c, int fd, mcpclient_read_fn fn, void *arg)
{
    pthread_mutex_lock(&c->mu);
    c->rd_fd = fd;
    c->rd_fn = fn;
    c->rd_arg = arg;
    c->rd_owner = RD_THREAD;
    c->rd_worker = c->rd_heir = NULL;
    c->rd_want = c->rd_ended = false;
    pthread_mutex_unlock(&c->mu);
}

static struct inmsg *take_inbox_locked(struct mcpclient *c)
{
    struct inmsg *in = c->in_head;

    c->in_head = c->in_tail = NULL;
    c->in_count = 0;
    return in;
}

/* Handles, on the client's thread, what workers read for it. */
static void handle_inbox(struct mcpclient *c, struct inmsg *in)
{
    while (in) {
        struct inmsg *next = in->next;

        if (in->msg)
            dispatch(c, in->msg);
        else
            oversized_id(c, in->over_id, in->over_bytes, false);
        cJSON_Delete(in->msg);
        free(in);
        in = next;
    }
}

void mcpclient__withdraw_reader(struct mcpclient *c)
{
    struct inmsg *in;
    bool poke;

    pthread_mutex_lock(&c->mu);
    c->rd_fd = -1;
    poke = c->rd_owner == RD_WORKER;
    pthread_mutex_unlock(&c->mu);
    if (poke)
        poke_reader(c);
    pthread_mutex_lock(&c->mu);
    while (c->rd_owner == RD_WORKER)
        pthread_cond_wait(&c->rd_cond, &c->mu);
    c->rd_owner = RD_NONE;
    c->rd_heir = NULL;
    c->rd_want = c->rd_ended = false;
    in = take_inbox_locked(c);
    pthread_mutex_unlock(&c->mu);
    handle_inbox(c, in);
}

bool mcpclient__reader_turn(struct mcpclient *c, int *poll_ms, bool *ended)
{
    int64_t now = clocks_mono_ms(), wait = -1;
    struct inmsg *in;
    bool mine;

    pthread_mutex_lock(&c->mu);
    in = take_inbox_locked(c);
    *ended = c->rd_ended;
    if (c->rd_owner == RD_THREAD && c->rd_want) {
        c->rd_owner = RD_NONE;
        c->rd_idle_at = now;
        pass_turn_locked(c, NULL);
    } else if (c->rd_owner == RD_NONE && now - c->rd_idle_at >= READER_IDLE_MS) {
        c->rd_owner = RD_THREAD; /* no waiter took it: notifications must still be read */
    }
    c->rd_want = false;
    /* Not reading: look again when the turn may be idle long enough to take back. */
    if (c->rd_owner == RD_WORKER)
        wait = READER_IDLE_MS;
    else if (c->rd_owner == RD_NONE)
        wait = READER_IDLE_MS - (now - c->rd_idle_at);
    mine = c->rd_owner == RD_THREAD;
    pthread_mutex_unlock(&c->mu);
    if (wait >= 0 && wait < *poll_ms)
        *poll_ms = wait < 1 ? 1 : (int)wait;
    handle_inbox(c, in);
    return mine;
}

/* Queues msg (taken), or when NULL the oversized answer to over_id, for the client's thread:
 * true when the thread must be woken for it. */
static bool queue_in(struct mcpclient *c, cJSON *msg, uint64_t over_id, size_t over_bytes)
{
    struct inmsg *m = calloc(1, sizeof(*m));
    bool first;

    if (!m) {
        log_warn("mcp %s: out of memory: a message from the server is dropped", c->spec->name);
        cJSON_Delete(msg);
        return false;
    }
    m->msg = msg;
    m->over_id = over_id;
    m->over_bytes = over_bytes;
    pthread_mutex_lock(&c->mu);
    first = !c->in_head;
    if (c->in_tail)
        c->in_tail->next = m;
    else
        c->in_head = m;
    c->in_tail = m;
    c->in_count++;
    pthread_mutex_unlock(&c->mu);
    return first;
}

/* What a reading worker handles itself: an answer to a waiter, and progress (in the order the
 * server sent them, so that a call's progress comes before its answer). */
static bool take_lent(struct mcpclient *c, cJSON *msg)
{
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    uint64_t n;

    if (!cJSON_IsObject(msg))
        return true; /* dispatch() ignores it too */
    if (cJSON_IsString(method)) {
        if ((id && !cJSON_IsNull(id)) || strcmp(method->valuestring, "notifications/progress") != 0)
            return false;
        on_progress(c, cJSON_GetObjectItemCaseSensitive(msg, "params"));
        return true;
    }
    return id_of(id, &n) && answer_waiter(c, msg, n);
}

void mcpclient__receive_lent(struct mcpclient *c, const char *json, size_t len)
{
    struct errinfo err = {0};
    cJSON *msg = jsonrpc_parse(json, len, &err), *e, *next;
    bool wake_thread = false;

    if (!msg) {
        log_debug("mcp %s: a message that is not JSON is ignored (%s)", c->spec->name, err.msg);
        return;
    }
    if (cJSON_IsArray(msg)) {
        for (e = msg->child; e; e = next) {
            next = e->next;
            if (!take_lent(c, e))
                wake_thread |= queue_in(c, cJSON_DetachItemViaPointer(msg, e), 0, 0);
        }
        cJSON_Delete(msg);
    } else if (!take_lent(c, msg)) {
        wake_thread = queue_in(c, msg, 0, 0);
    } else {
        cJSON_Delete(msg);
    }
    if (wake_thread)
        wake(c);
}

/* Finds "id": N in text (the head or the tail of a message too large to parse). */
static bool scan_id(const char *text, size_t len, uint64_t *out)
{
    for (size_t i = 0; i + 5 < len; i++) {
        size_t k = i + 5;

        if (memcmp(text + i, "\"id\":", 5) != 0)
            continue;
        while (k < len && text[k] == ' ')
            k++;
        if (k < len && text[k] >= '0' && text[k] <= '9') {
            uint64_t v = 0;

            while (k < len && text[k] >= '0' && text[k] <= '9')
                v = v * 10 + (uint64_t)(text[k++] - '0');
            *out = v;
            return true;
        }
    }
    return false;
}

/* Fails what waits for answer id, which was bytes long: a waiter at once, an internal request
 * only on the client's thread (its callbacks are the thread's): lent, a reading worker queues it
 * for the thread. */
static void oversized_id(struct mcpclient *c, uint64_t id, size_t bytes, bool lent)
{
    struct pending *p = NULL;

    pthread_mutex_lock(&c->mu);
    p = find_pending_locked(c, id);
    if (p && p->waiter) {
        unlink_pending_locked(c, p);
        errinfo_set(&p->err, ERR_TOO_LARGE,
                    "%s answered with %zu bytes, over runbox's limit of %u bytes for one "
                    "message; ask for less",
                    c->spec->name, bytes, MCPCLIENT_MESSAGE_MAX);
        p->done = true;
        pthread_cond_broadcast(&p->cond);
        p = NULL;
    } else if (p && !lent) {
        unlink_pending_locked(c, p);
    }
    pthread_mutex_unlock(&c->mu);
    if (p && lent) {
        if (queue_in(c, NULL, id, bytes))
            wake(c);
    } else if (p) {
        handshake_fail(c, "answered %s with %zu bytes, over the limit", list_method(p->list),
                       bytes);
        free_internal(p);
    }
}

static void oversized(struct mcpclient *c, size_t bytes, const char *head, size_t head_len,
                      const char *tail, size_t tail_len, bool lent)
{
    uint64_t id;

    log_warn("mcp %s: dropped a message of %zu bytes (the limit is %u)", c->spec->name, bytes,
             MCPCLIENT_MESSAGE_MAX);
    if (scan_id(tail, tail_len, &id) || scan_id(head, head_len, &id))
        oversized_id(c, id, bytes, lent);
}

void mcpclient__oversized(struct mcpclient *c, size_t bytes, const char *head, size_t head_len,
                          const char *tail, size_t tail_len)
{
    oversized(c, bytes, head, head_len, tail, tail_len, false);
}

void mcpclient__oversized_lent(struct mcpclient *c, size_t bytes, const char *head, size_t head_len,
                               const char *tail, size_t tail_len)
{
    oversized(c, bytes, head, head_len, tail, tail_len, true);
}

/* ---- the transports' other needs ---- */

bool mcpclient__should_end(struct mcpclient *c, struct errinfo *why)
{
    bool end;

    pthread_mutex_lock(&c->mu);
    if (!c->handshake_failed && c->handshake_deadline &&
        clocks_mono_ms() >= c->handshake_deadline) {
        snprintf(c->handshake_why, sizeof(c->handshake_why),
                 "did not finish initializing within %d ms (timeout_ms)", c->spec->timeout_ms);
        c->handshake_failed = true;
    }
    for (struct pending *p = c->pending; p && !c->handshake_failed; p = p->next) {
        if (!p->waiter && p->deadline_ms && clocks_mono_ms() >= p->deadline_ms) {
            log_warn("mcp %s: a list read took longer than %d ms", c->spec->name,
                     c->spec->timeout_ms);
            p->deadline_ms = 0;
        }
    }
    end = c->stopping || c->handshake_failed;
    if (c->stopping)
        errinfo_set(why, ERR_CANCELLED, "runboxd is stopping");
    else if (c->handshake_failed)
        errinfo_set(why, ERR_UNAVAILABLE, "%s", c->handshake_why);
    pthread_mutex_unlock(&c->mu);
    return end;
}

int mcpclient__poll_ms(struct mcpclient *c)
{
    int64_t left = 1000;

    pthread_mutex_lock(&c->mu);
    if (c->handshake_deadline) {
        left = c->handshake_deadline - clocks_mono_ms();
        if (left < 0)
            left = 0;
        if (left > 1000)
            left = 1000;
    }
    pthread_mutex_unlock(&c->mu);
    return (int)left;
}

const char *mcpclient__protocol(struct mcpclient *c)
{
    return c->protocol[0] ? c->protocol : NULL;
}

void mcpclient__stderr_line(struct mcpclient *c, const char *line, size_t len)
{
    int64_t t = clocks_mono_ms();
    bool keep;
    uint64_t dropped = 0;

    while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
        len--;
    pthread_mutex_lock(&c->mu);
    snprintf(c->stderr_tail[c->stderr_count++ % MCPCLIENT_STDERR_KEEP], sizeof(c->stderr_tail[0]),
             "%.*s", (int)len, line);
    /* A token bucket: a flood of stderr cannot push everything else out of the console. */
    c->tokens += (double)(t - c->tokens_at) * MCPCLIENT_STDERR_RATE / 1000.0;
    if (c->tokens > MCPCLIENT_STDERR_RATE * 10)
        c->tokens = MCPCLIENT_STDERR_RATE * 10;
    c->tokens_at = t;
    keep = c->tokens >= 1;
    if (keep) {
        c->tokens -= 1;
        dropped = c->stderr_dropped;
        c->stderr_dropped = 0;
    } else {
        c->stderr_dropped++;
    }
    pthread_mutex_unlock(&c->mu);
    if (!keep || !c->opt.console)
        return;
    if (dropped)
        console_appendf(c->opt.console, CONSOLE_WARN, CONSOLE_SRC_DAEMON, 0,
                        "mcp %s: %" PRIu64 " lines of its stderr were not kept (over %d a second)",
                        c->spec->name, dropped, MCPCLIENT_STDERR_RATE);
    console_append(c->opt.console, CONSOLE_WARN, CONSOLE_SRC_MCP, 0, c->spec->name, 0, line,
                   len > 4096 ? 4096 : len);
}

void mcpclient__set_pid(struct mcpclient *c, long pid)
{
    pthread_mutex_lock(&c->mu);
    c->pid = pid;
    pthread_mutex_unlock(&c->mu);
}

void mcpclient__reset(struct mcpclient *c)
{
    struct pending *keep = NULL, *p;

    pthread_mutex_lock(&c->mu);
    while (c->pending) {
        p = c->pending;
        c->pending = p->next;
        if (p->waiter) {
            p->next = keep;
            keep = p;
        } else {
            free_internal(p);
        }
    }
    c->pending = keep;
    clear_queue_locked(c);
    c->handshake_failed = false;
    c->protocol[0] = '\0';
    c->modern = false;
    pthread_mutex_unlock(&c->mu);
}

int mcpclient__hint(struct mcpclient *c)
{
    int h;

    pthread_mutex_lock(&c->mu);
    h = c->hint;
    pthread_mutex_unlock(&c->mu);
    return h;
}

void mcpclient__set_hint(struct mcpclient *c, int hint)
{
    pthread_mutex_lock(&c->mu);
    c->hint = hint;
    pthread_mutex_unlock(&c->mu);
}

bool mcpclient__sleep(struct mcpclient *c, int ms)
{
    struct timespec ts = clocks_deadline(ms);
    bool stopping;

    pthread_mutex_lock(&c->mu);
    while (!c->stopping && pthread_cond_timedwait(&c->stop_cond, &c->mu, &ts) != ETIMEDOUT)
        ;
    stopping = c->stopping;
    pthread_mutex_unlock(&c->mu);
    return stopping;
}

/* ---- the connection's end ---- */

/* " | "-joined last stderr lines, for the error of a stdio server; mu held. */
static void stderr_summary_locked(struct mcpclient *c, char *buf, size_t size)
{
    unsigned n = c->stderr_count < MCPCLIENT_STDERR_KEEP ? c->stderr_count : MCPCLIENT_STDERR_KEEP;
    size_t len = 0;

    buf[0] = '\0';
    for (unsigned i = c->stderr_count - n; i < c->stderr_count && len + 4 < size; i++) {
        int w = snprintf(buf + len, size - len, "%s%s", len ? " | " : "",
                         c->stderr_tail[i % MCPCLIENT_STDERR_KEEP]);

        if (w < 0)
            break;
        len += (size_t)w < size - len ? (size_t)w : size - len - 1;
    }
}

/* Fails every request of the ended connection and forgets its lists. */
static void connection_ended(struct mcpclient *c, const struct errinfo *why)
{
    struct pending *internal = NULL, *p;
    char tail[600];
    bool was_ready;

    pthread_mutex_lock(&c->mu);
    was_ready = c->state == MCPCLIENT_READY;
    stderr_summary_locked(c, tail, sizeof(tail));
    if (why->kind != ERR_CANCELLED) {
        if (tail[0] && c->spec->transport == REGISTRY_STDIO)
            snprintf(c->last_error, sizeof(c->last_error), "%s: %s; its last stderr lines: %s",
                     c->spec->name, why->msg, tail);
        else
            snprintf(c->last_error, sizeof(c->last_error), "%s: %s", c->spec->name, why->msg);
        c->last_error_at = clocks_wall_ms();
    }
    while (c->pending) {
        p = c->pending;
        c->pending = p->next;
        if (p->waiter) {
            errinfo_set(&p->err, ERR_UNAVAILABLE, "%s",
                        why->kind == ERR_CANCELLED ? "runboxd is stopping" : c->last_error);
            p->done = true;
            pthread_cond_broadcast(&p->cond);
        } else {
            p->next = internal;
            internal = p;
        }
    }
    clear_queue_locked(c);
    cJSON_Delete(c->tools);
    cJSON_Delete(c->prompts);
    cJSON_Delete(c->resources);
    c->tools = c->prompts = c->resources = NULL;
    c->state = MCPCLIENT_FAILED;
    c->protocol[0] = '\0';
    c->modern = false;
    c->handshake_deadline = 0;
    c->pid = 0;
    pthread_mutex_unlock(&c->mu);
    while (internal) {
        p = internal;
        internal = p->next;
        free_internal(p);
    }
    if (why->kind != ERR_CANCELLED)
        log_warn("%s", c->last_error);
    changed(c, MCPCLIENT_CHANGED_STATE |
                   (was_ready ? MCPCLIENT_CHANGED_TOOLS | MCPCLIENT_CHANGED_PROMPTS |
                                    MCPCLIENT_CHANGED_RESOURCES
                              : 0));
}

static void *thread_main(void *arg)
{
    struct mcpclient *c = arg;
    int backoff = MCPCLIENT_BACKOFF_MIN_MS;

    for (;;) {
        struct errinfo why = {0};
        int64_t ready_for;
        uint64_t ticket = 0; /* the start gate's slot, for a stdio server */
        int delay;

        pthread_mutex_lock(&c->mu);
        if (c->stopping) {
            pthread_mutex_unlock(&c->mu);
            break;
        }
        c->state = MCPCLIENT_CONNECTING;
        c->handshake_failed = false;
        c->gen++;
        c->stderr_count = 0;
        pthread_mutex_unlock(&c->mu);
        changed(c, MCPCLIENT_CHANGED_STATE);
        if (c->opt.gate && c->spec->transport == REGISTRY_STDIO) {
            ticket = startgate_enter(c->opt.gate);
            if (!ticket)
                break; /* the daemon stops */
        }
        pthread_mutex_lock(&c->mu);
        c->gate_ticket = ticket;
        c->started_at = clocks_wall_ms();
        pthread_mutex_unlock(&c->mu);
        c->tr->run(c, &why);
        leave_gate(c);
        if (!errinfo_is_set(&why))
            errinfo_set(&why, ERR_UNAVAILABLE, "the connection ended");
        pthread_mutex_lock(&c->mu);
        ready_for = c->state == MCPCLIENT_READY ? clocks_wall_ms() - c->ready_at : -1;
        pthread_mutex_unlock(&c->mu);
        connection_ended(c, &why);
        if (ready_for >= READY_STABLE_MS)
            backoff = MCPCLIENT_BACKOFF_MIN_MS;
        delay = backoff;
        backoff = backoff * 2 > MCPCLIENT_BACKOFF_MAX_MS ? MCPCLIENT_BACKOFF_MAX_MS : backoff * 2;
        if (mcpclient__sleep(c, delay))
            break;
        pthread_mutex_lock(&c->mu);
        c->restarts++;
        pthread_mutex_unlock(&c->mu);
        log_info("mcp %s: connecting again (restart %u)", c->spec->name, c->restarts);
    }
    return NULL;
}

/* ---- the public side ---- */

/* c->mu as a mutex that spins a moment before it sleeps: the client thread hands a waiter its
 * answer under mu (complete_waiter_locked) and lets go of it at once, and a waiter woken by that
 * would otherwise go back to sleep on mu for those few instructions - a second wake-up on
 * every call to the server. */
static void mutex_init_adaptive(pthread_mutex_t *mu)
{
    pthread_mutexattr_t attr;

    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(mu, &attr);
    pthread_mutexattr_destroy(&attr);
}

struct mcpclient *mcpclient_new(const struct mcpclient_options *opt, struct errinfo *err)
{
    struct mcpclient *c = calloc(1, sizeof(*c));

    if (!c) {
        errinfo_set(err, ERR_NOMEM, "out of memory for an MCP client");
        return NULL;
    }
    c->opt = *opt;
    c->spec = opt->spec;
    c->tr = c->spec->transport == REGISTRY_STDIO ? &mcpclient__stdio
            : c->spec->transport == REGISTRY_WS  ? &mcpclient__ws
                                                 : &mcpclient__http;
    c->next_id = 1;
    c->state = MCPCLIENT_DISABLED;
    c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    c->rd_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    c->direct_fd = -1;
    c->rd_fd = -1;
    mutex_init_adaptive(&c->mu);
    clocks_cond_init(&c->stop_cond);
    pthread_cond_init(&c->rd_cond, NULL);
    if (c->wake_fd < 0 || c->rd_wake_fd < 0) {
        errinfo_sys(err, "eventfd for MCP server %s", c->spec->name);
        mcpclient_free(c);
        return NULL;
    }
    if (c->spec->error)
        snprintf(c->last_error, sizeof(c->last_error), "%s", c->spec->error);
    return c;
}

int mcpclient_start(struct mcpclient *c, struct errinfo *err)
{
    int rc;

    if (c->spec->error || !c->spec->enabled || c->started)
        return 0;
    /* Under the lock: other servers' threads and HTTP handlers read the state meanwhile. */
    pthread_mutex_lock(&c->mu);
    c->state = MCPCLIENT_CONNECTING;
    c->started = true; /* before the thread runs: it reads the flags beside this one */
    pthread_mutex_unlock(&c->mu);
    rc = pthread_create(&c->thread, NULL, thread_main, c);
    if (rc != 0) {
        errno = rc;
        errinfo_sys(err, "no thread for MCP server %s", c->spec->name);
        pthread_mutex_lock(&c->mu);
        c->state = MCPCLIENT_FAILED;
        c->started = false;
        pthread_mutex_unlock(&c->mu);
        return -1;
    }
    return 0;
}

void mcpclient_stop_begin(struct mcpclient *c)
{
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_cond_broadcast(&c->stop_cond);
    pthread_mutex_unlock(&c->mu);
    wake(c);
}

void mcpclient_stop(struct mcpclient *c)
{
    if (!c)
        return;
    mcpclient_stop_begin(c);
    if (c->started) {
        pthread_join(c->thread, NULL);
        c->started = false;
    }
}

void mcpclient_free(struct mcpclient *c)
{
    if (!c)
        return;
    mcpclient_stop(c);
    clear_queue_locked(c);
    cJSON_Delete(c->tools);
    cJSON_Delete(c->prompts);
    cJSON_Delete(c->resources);
    cJSON_Delete(c->caps);
    free(c->server_name);
    free(c->server_version);
    for (struct inmsg *in = take_inbox_locked(c), *next; in; in = next) {
        next = in->next;
        cJSON_Delete(in->msg);
        free(in);
    }
    if (c->wake_fd >= 0)
        close(c->wake_fd);
    if (c->rd_wake_fd >= 0)
        close(c->rd_wake_fd);
    pthread_cond_destroy(&c->rd_cond);
    pthread_cond_destroy(&c->stop_cond);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

enum mcpclient_state mcpclient_state(struct mcpclient *c)
{
    enum mcpclient_state s;

    pthread_mutex_lock(&c->mu);
    s = c->state;
    pthread_mutex_unlock(&c->mu);
    return s;
}

static cJSON *copy_list(struct mcpclient *c, cJSON *const *slot)
{
    cJSON *out;

    pthread_mutex_lock(&c->mu);
    out = *slot && c->state == MCPCLIENT_READY ? cJSON_Duplicate(*slot, 1) : cJSON_CreateArray();
    pthread_mutex_unlock(&c->mu);
    return out;
}

cJSON *mcpclient_tools(struct mcpclient *c)
{
    return copy_list(c, &c->tools);
}

cJSON *mcpclient_prompts(struct mcpclient *c)
{
    return copy_list(c, &c->prompts);
}

cJSON *mcpclient_resources(struct mcpclient *c)
{
    return copy_list(c, &c->resources);
}

static void cancel_hook(void *arg)
{
    struct pending *p = arg;
    bool reading;

    pthread_mutex_lock(&p->c->mu);
    p->cancelled = true;
    pthread_cond_broadcast(&p->cond);
    reading = p->c->rd_worker == p;
    pthread_mutex_unlock(&p->c->mu);
    if (reading)
        poke_reader(p->c); /* a stale poke only wakes the next reader once for nothing */
}

/* The waiter gave up (deadline, cancellation): tells the server, on the same connection only
 * (mu held). */
static void abandon_locked(struct mcpclient *c, struct pending *p, const char *reason)
{
    cJSON *params = cJSON_CreateObject();
    struct errinfo ignored = {0};

    unlink_pending_locked(c, p);
    if (p->gen != c->gen || c->state != MCPCLIENT_READY) {
        cJSON_Delete(params);
        return;
    }
    cJSON_AddNumberToObject(params, "requestId", (double)p->id);
    cJSON_AddStringToObject(params, "reason", reason);
    enqueue_locked(c, notification_text("notifications/cancelled", params), &ignored);
}

/* Waits for p's outcome: as the reader of the server's stdout when the turn is free (see
 * DESIGN), else on p's condition until the reader or the client's thread hands it over. */
static int wait_for(struct mcpclient *c, struct pending *p, const char *method, int timeout_ms,
                    cJSON **result, struct errinfo *err)
{
    int64_t until_ms = clocks_mono_ms() + timeout_ms;
    struct timespec until = clocks_at(until_ms);
    bool abandoned = false, timed_out = false;
    int rc = -1;

    pthread_mutex_lock(&c->mu);
    while (!p->done && !p->cancelled && !timed_out) {
        if (may_take_turn_locked(c, p)) {
            timed_out = read_turn_locked(c, p, until_ms);
            continue;
        }
        if (c->rd_fd >= 0 && c->rd_owner == RD_THREAD && !c->rd_want &&
            c->state == MCPCLIENT_READY) {
            c->rd_want = true; /* the thread lets go of the turn at its next look */
            pthread_mutex_unlock(&c->mu);
            wake(c);
            pthread_mutex_lock(&c->mu);
            continue;
        }
        timed_out = pthread_cond_timedwait(&p->cond, &c->mu, &until) == ETIMEDOUT;
    }
    if (c->rd_heir == p) { /* told to take the turn, and leaving without it */
        c->rd_heir = NULL;
        if (c->rd_owner == RD_NONE && c->rd_fd >= 0)
            pass_turn_locked(c, p);
    }
    if (!p->done) {
        abandon_locked(c, p, p->cancelled ? "the client cancelled the call" : "timed out");
        abandoned = true;
        if (p->cancelled)
            errinfo_set(err, ERR_CANCELLED, "%s: %s was cancelled", c->spec->name, method);
        else
            errinfo_set(err, ERR_TIMEOUT,
                        "%s did not answer %s within %d ms (its timeout_ms); the request was "
                        "cancelled upstream",
                        c->spec->name, method, timeout_ms);
    } else if (errinfo_is_set(&p->err)) {
        *err = p->err;
    } else {
        *result = p->result;
        p->result = NULL;
        rc = 0;
    }
    while (p->delivering)
        pthread_cond_wait(&p->cond, &c->mu);
    pthread_mutex_unlock(&c->mu);
    if (abandoned)
        wake(c); /* the cancellation goes out now */
    return rc;
}

int mcpclient_request(struct mcpclient *c, const char *method, cJSON *params, struct call *call,
                      int timeout_ms, cJSON **result, struct errinfo *err)
{
    struct pending *p = calloc(1, sizeof(*p));
    char *text;
    bool sent;
    int rc;

    *result = NULL;
    if (!p) {
        cJSON_Delete(params);
        errinfo_set(err, ERR_NOMEM, "out of memory for a request to %s", c->spec->name);
        return -1;
    }
    if (timeout_ms <= 0)
        timeout_ms = c->spec->timeout_ms;
    clocks_cond_init(&p->cond);
    p->c = c;
    p->waiter = true;
    p->call = call;
    pthread_mutex_lock(&c->mu);
    if (c->state != MCPCLIENT_READY) {
        if (c->last_error[0])
            errinfo_set(err, ERR_UNAVAILABLE, "%s is %s: %s", c->spec->name,
                        mcpclient_state_name(c->state), c->last_error);
        else
            errinfo_set(err, ERR_UNAVAILABLE, "%s is %s; try again once it is ready", c->spec->name,
                        mcpclient_state_name(c->state));
        pthread_mutex_unlock(&c->mu);
        cJSON_Delete(params);
        rc = -1;
        goto out;
    }
    p->id = c->next_id++;
    p->gen = c->gen;
    text = request_text(c, p->id, method, params, call_wants_progress(call));
    sent = text && direct_send(c, text);
    if (sent) {
        free(text);
    } else if (enqueue_locked(c, text, err) < 0) {
        pthread_mutex_unlock(&c->mu);
        rc = -1;
        goto out;
    }
    p->next = c->pending;
    c->pending = p;
    pthread_mutex_unlock(&c->mu);
    if (!sent)
        wake(c);
    call_on_cancel(call, cancel_hook, p);
    rc = wait_for(c, p, method, timeout_ms, result, err);
    call_off_cancel(call); /* after this the hook cannot be running: p may go */
out:
    cJSON_Delete(p->result);
    pthread_cond_destroy(&p->cond);
    free(p);
    return rc;
}

static void add_time(cJSON *o, const char *key, int64_t ms)
{
    char buf[40];
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (!ms || !gmtime_r(&t, &tm)) {
        cJSON_AddNullToObject(o, key);
        return;
    }
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%03dZ", (int)(ms % 1000));
    cJSON_AddStringToObject(o, key, buf);
}

cJSON *mcpclient_status_json(struct mcpclient *c)
{
    static const char *const transports[] = {"stdio", "http", "sse", "ws"};
    cJSON *o = cJSON_CreateObject(), *srv;

    if (!o)
        return NULL;
    pthread_mutex_lock(&c->mu);
    cJSON_AddStringToObject(o, "name", c->spec->name);
    cJSON_AddStringToObject(o, "state", mcpclient_state_name(c->state));
    cJSON_AddStringToObject(o, "transport", transports[c->spec->transport]);
    if (c->spec->transport == REGISTRY_STDIO) {
        cJSON_AddStringToObject(o, "command", c->spec->command ? c->spec->command : "");
        cJSON_AddBoolToObject(o, "sandbox", c->spec->sandbox);
        if (c->pid)
            cJSON_AddNumberToObject(o, "pid", (double)c->pid);
    } else {
        cJSON_AddStringToObject(o, "url", c->spec->url ? c->spec->url : "");
    }
    cJSON_AddStringToObject(o, "prefix", c->spec->prefix ? c->spec->prefix : "");
    if (c->protocol[0])
        cJSON_AddStringToObject(o, "protocol", c->protocol);
    else
        cJSON_AddNullToObject(o, "protocol");
    srv = cJSON_AddObjectToObject(o, "server");
    if (c->server_name)
        cJSON_AddStringToObject(srv, "name", c->server_name);
    if (c->server_version)
        cJSON_AddStringToObject(srv, "version", c->server_version);
    cJSON_AddNumberToObject(o, "tools", c->tools ? cJSON_GetArraySize(c->tools) : 0);
    cJSON_AddNumberToObject(o, "prompts", c->prompts ? cJSON_GetArraySize(c->prompts) : 0);
    cJSON_AddNumberToObject(o, "resources", c->resources ? cJSON_GetArraySize(c->resources) : 0);
    if (c->last_error[0])
        cJSON_AddStringToObject(o, "last_error", c->last_error);
    else
        cJSON_AddNullToObject(o, "last_error");
    add_time(o, "last_error_at", c->last_error_at);
    cJSON_AddNumberToObject(o, "restarts", c->restarts);
    add_time(o, "started_at", c->started_at);
    add_time(o, "ready_at", c->state == MCPCLIENT_READY ? c->ready_at : 0);
    pthread_mutex_unlock(&c->mu);
    return o;
}
