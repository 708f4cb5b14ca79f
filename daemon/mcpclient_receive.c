/* daemon/mcpclient_receive.c - what an MCP client's server sends (mcpclient_core.h): answers
 * to waiters and to internal requests, the server's own requests, progress, log messages and
 * list changes; and the reader's turn on a stdio server's stdout (mcpclient.c's DESIGN), with
 * the inbox of what workers read for the thread and messages too large to keep. */
#include "mcpclient_core.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <poll.h>
#include <unistd.h>

#include "call.h"
#include "clocks.h"
#include "console.h"
#include "jsonrpc.h"
#include "log.h"
#include "registry.h"

#define READER_IDLE_MS 20   /* workers left stdout unread this long: the thread reads it again */
#define INBOX_MAX      1024 /* messages a reading worker queues for the thread; then it stops */

/* ---- what arrives ---- */

static struct pending *find_pending_locked(struct mcpclient *c, uint64_t id)
{
    for (struct pending *p = c->pending; p; p = p->next)
        if (p->id == id)
            return p;
    return NULL;
}

void mcpclient__unlink_pending_locked(struct mcpclient *c, struct pending *p)
{
    for (struct pending **pp = &c->pending; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            p->next = NULL;
            return;
        }
}

void mcpclient__free_internal(struct pending *p)
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
void mcpclient__complete_waiter_locked(struct pending *p, cJSON *result, const cJSON *error)
{
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(error, "message");

    if (error) {
        errinfo_set(&p->err, ERR_INVALID, "%s answered with an error: %.400s", p->c->spec->name,
                    cJSON_IsString(msg) ? msg->valuestring : "(no message)");
        registry_redact(p->c->spec, p->err.msg, sizeof(p->err.msg));
        cJSON_Delete(result);
    } else {
        p->result = result;
    }
    p->done = true;
    pthread_cond_broadcast(&p->cond);
}

/* The call waiting for request id, taken off the pending list; NULL when none waits (mu held). */
static struct pending *take_waiter_locked(struct mcpclient *c, uint64_t id)
{
    struct pending *p = find_pending_locked(c, id);

    if (!p || !p->waiter)
        return NULL;
    mcpclient__unlink_pending_locked(c, p);
    return p;
}

bool mcpclient__fail_waiter(struct mcpclient *c, uint64_t id, enum errinfo_kind kind,
                            const char *why)
{
    struct pending *p;

    pthread_mutex_lock(&c->mu);
    p = take_waiter_locked(c, id);
    if (!p) {
        pthread_mutex_unlock(&c->mu);
        return false;
    }
    errinfo_set(&p->err, kind, "%s: %.800s", c->spec->name, why);
    registry_redact(c->spec, p->err.msg, sizeof(p->err.msg));
    p->done = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&c->mu);
    return true;
}

/* Hands answer msg to the waiter of request id, if one waits for it: true when done so. */
static bool answer_waiter(struct mcpclient *c, cJSON *msg, uint64_t id)
{
    struct pending *p;

    pthread_mutex_lock(&c->mu);
    p = take_waiter_locked(c, id);
    if (!p) {
        pthread_mutex_unlock(&c->mu);
        return false;
    }
    mcpclient__complete_waiter_locked(p, cJSON_DetachItemFromObjectCaseSensitive(msg, "result"),
                                      cJSON_GetObjectItemCaseSensitive(msg, "error"));
    pthread_mutex_unlock(&c->mu);
    return true;
}

/* Counts a message that is no use (see mcpclient_core.h) and keeps its start, printable. */
static void note_ignored(struct mcpclient *c, const char *text, size_t len)
{
    size_t n = 0;

    pthread_mutex_lock(&c->mu);
    c->ignored++;
    for (size_t i = 0; i < len && n + 4 < sizeof(c->ignored_last); i++)
        c->ignored_last[n++] = (unsigned char)text[i] < 0x20 ? ' ' : text[i];
    if (len > n) { /* cut: say so (a cut UTF-8 sequence is made valid on the way out) */
        memcpy(c->ignored_last + n, "...", 3);
        n += 3;
    }
    c->ignored_last[n] = '\0';
    pthread_mutex_unlock(&c->mu);
}

static void note_ignored_json(struct mcpclient *c, const cJSON *msg)
{
    char *text = cJSON_PrintUnformatted(msg);

    if (text)
        note_ignored(c, text, strlen(text));
    cJSON_free(text);
}

static void on_response(struct mcpclient *c, cJSON *msg)
{
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(msg, "error");
    struct pending *p;
    cJSON *result;
    uint64_t id;

    if (!id_of(cJSON_GetObjectItemCaseSensitive(msg, "id"), &id)) {
        log_debug("mcp %s: an answer without a usable id is ignored", c->spec->name);
        note_ignored_json(c, msg);
        return;
    }
    if (answer_waiter(c, msg, id))
        return;
    pthread_mutex_lock(&c->mu);
    p = find_pending_locked(c, id);
    if (p)
        mcpclient__unlink_pending_locked(c, p);
    pthread_mutex_unlock(&c->mu);
    if (!p) {
        log_debug("mcp %s: an answer to request %" PRIu64 " that no one waits for", c->spec->name,
                  id);
        return;
    }
    result = cJSON_DetachItemFromObjectCaseSensitive(msg, "result");
    p->cb(c, p, result, error);
    cJSON_Delete(result);
    mcpclient__free_internal(p);
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
    mcpclient__enqueue_locked(c, cJSON_PrintUnformatted(reply), &err);
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
        mcpclient__read_list(c, MCPCLIENT_CHANGED_TOOLS, NULL, 0, NULL);
    else if (ready && strcmp(method, "notifications/prompts/list_changed") == 0)
        mcpclient__read_list(c, MCPCLIENT_CHANGED_PROMPTS, NULL, 0, NULL);
    else if (ready && strcmp(method, "notifications/resources/list_changed") == 0)
        mcpclient__read_list(c, MCPCLIENT_CHANGED_RESOURCES, NULL, 0, NULL);
    else
        log_trace("mcp %s: notification %s ignored", c->spec->name, method);
}

static void dispatch(struct mcpclient *c, cJSON *msg)
{
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");

    if (!cJSON_IsObject(msg)) {
        note_ignored_json(c, msg);
        return;
    }
    if (cJSON_IsString(method)) {
        if (id && !cJSON_IsNull(id))
            on_server_request(c, msg, method->valuestring);
        else
            on_notification(c, msg, method->valuestring);
        return;
    }
    on_response(c, msg);
}

static void unreadable(struct mcpclient *c, const char *json, size_t len, const char *why,
                       bool lent);

void mcpclient__receive(struct mcpclient *c, const char *json, size_t len)
{
    struct errinfo err = {0};
    cJSON *msg = jsonrpc_parse_peer(json, len, &err), *e;

    if (!msg) {
        unreadable(c, json, len, err.msg, false);
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

static void fail_id(struct mcpclient *c, uint64_t id, enum errinfo_kind kind, char *why, bool lent);

/* Wakes the worker holding the turn (its call was cancelled, or the turn is taken back). */
void mcpclient__poke_reader(struct mcpclient *c)
{
    uint64_t one = 1;

    if (write(c->rd_wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        log_debug("mcp %s: poke: %s", c->spec->name, strerror(errno));
}

/* Tells the next waiter (not except) to take the turn, which no one holds (mu held). */
void mcpclient__pass_turn_locked(struct mcpclient *c, const struct pending *except)
{
    c->rd_heir = NULL;
    for (struct pending *q = c->pending; q; q = q->next)
        if (q->waiter && q != except && !q->done && !q->cancelled) {
            c->rd_heir = q;
            pthread_cond_broadcast(&q->cond);
            return;
        }
}

bool mcpclient__may_take_turn_locked(const struct mcpclient *c, const struct pending *p)
{
    return c->rd_fd >= 0 && c->rd_owner == RD_NONE && !c->rd_ended && c->in_count < INBOX_MAX &&
           c->state == MCPCLIENT_READY && p->gen == c->gen;
}

/* p takes the turn: reads the server's stdout until p is answered, cancelled or out of time,
 * or the turn is taken back, and passes the turn on (mu held on entry and on return, not while
 * it waits or reads). True when p's time ran out. */
bool mcpclient__read_turn_locked(struct mcpclient *c, struct pending *p, int64_t until_ms)
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
        mcpclient__pass_turn_locked(c, p);
    if (rc != 0) {
        pthread_mutex_unlock(&c->mu);
        mcpclient__wake(c);
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

struct inmsg *mcpclient__take_inbox_locked(struct mcpclient *c)
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
            fail_id(c, in->bad_id, in->why_kind, in->why, false);
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
        mcpclient__poke_reader(c);
    pthread_mutex_lock(&c->mu);
    while (c->rd_owner == RD_WORKER)
        pthread_cond_wait(&c->rd_cond, &c->mu);
    c->rd_owner = RD_NONE;
    c->rd_heir = NULL;
    c->rd_want = c->rd_ended = false;
    in = mcpclient__take_inbox_locked(c);
    pthread_mutex_unlock(&c->mu);
    handle_inbox(c, in);
}

bool mcpclient__reader_turn(struct mcpclient *c, int *poll_ms, bool *ended)
{
    int64_t now = clocks_mono_ms(), wait = -1;
    struct inmsg *in;
    bool mine;

    pthread_mutex_lock(&c->mu);
    in = mcpclient__take_inbox_locked(c);
    *ended = c->rd_ended;
    if (c->rd_owner == RD_THREAD && c->rd_want) {
        c->rd_owner = RD_NONE;
        c->rd_idle_at = now;
        mcpclient__pass_turn_locked(c, NULL);
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

/* Queues msg (taken), or when NULL the answer to bad_id that could not be taken and why
 * (taken), for the client's thread: true when the thread must be woken for it. */
static bool queue_in(struct mcpclient *c, cJSON *msg, uint64_t bad_id, enum errinfo_kind why_kind,
                     char *why)
{
    struct inmsg *m = calloc(1, sizeof(*m));
    bool first;

    if (!m) {
        log_warn("mcp %s: out of memory: a message from the server is dropped", c->spec->name);
        cJSON_Delete(msg);
        free(why);
        return false;
    }
    m->msg = msg;
    m->bad_id = bad_id;
    m->why_kind = why_kind;
    m->why = why;
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

    if (!cJSON_IsObject(msg)) {
        note_ignored_json(c, msg); /* as dispatch() does */
        return true;
    }
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
    cJSON *msg = jsonrpc_parse_peer(json, len, &err), *e, *next;
    bool wake_thread = false;

    if (!msg) {
        unreadable(c, json, len, err.msg, true);
        return;
    }
    if (cJSON_IsArray(msg)) {
        for (e = msg->child; e; e = next) {
            next = e->next;
            if (!take_lent(c, e))
                wake_thread |= queue_in(c, cJSON_DetachItemViaPointer(msg, e), 0, ERR_NONE, NULL);
        }
        cJSON_Delete(msg);
    } else if (!take_lent(c, msg)) {
        wake_thread = queue_in(c, msg, 0, ERR_NONE, NULL);
    } else {
        cJSON_Delete(msg);
    }
    if (wake_thread)
        mcpclient__wake(c);
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

/* Fails what waits for answer id, which could not be taken: why (taken) says what the server
 * sent ("52428800 bytes, over ..."). A waiter fails at once; an internal request only on the
 * client's thread (its callbacks are the thread's): lent, a reading worker queues it for the
 * thread. */
static void fail_id(struct mcpclient *c, uint64_t id, enum errinfo_kind kind, char *why, bool lent)
{
    struct pending *p = NULL;

    pthread_mutex_lock(&c->mu);
    p = find_pending_locked(c, id);
    if (p && p->waiter) {
        mcpclient__unlink_pending_locked(c, p);
        errinfo_set(&p->err, kind, "%s answered with %s", c->spec->name, why ? why : "?");
        p->done = true;
        pthread_cond_broadcast(&p->cond);
        p = NULL;
    } else if (p && !lent) {
        mcpclient__unlink_pending_locked(c, p);
    }
    pthread_mutex_unlock(&c->mu);
    if (p && lent) {
        if (queue_in(c, NULL, id, kind, why))
            mcpclient__wake(c);
        return;
    }
    if (p) {
        mcpclient__handshake_fail(c, "answered %s with %s", mcpclient__list_method(p->list),
                                  why ? why : "?");
        mcpclient__free_internal(p);
    }
    free(why);
}

/* A whole message that does not parse (JSON nested deeper than runbox reads, broken JSON): the
 * request it answers, when its id can be found, fails now with what was wrong rather than at
 * its timeout. Anything else a server writes that is not JSON (a stray log line on a stdio
 * server's stdout) is dropped. */
static void unreadable(struct mcpclient *c, const char *json, size_t len, const char *why,
                       bool lent)
{
    unsigned long long id;
    char *text = NULL;

    if (!jsonrpc_find_id(json, len, &id)) {
        log_debug("mcp %s: a message that is not JSON is ignored (%s)", c->spec->name, why);
        note_ignored(c, json, len);
        return;
    }
    log_warn("mcp %s: the answer to request %llu is not JSON runbox can read (%s)", c->spec->name,
             id, why);
    if (asprintf(&text, "JSON runbox cannot read (%s)", why) < 0)
        text = NULL;
    fail_id(c, (uint64_t)id, ERR_INVALID, text, lent);
}

static void oversized(struct mcpclient *c, size_t bytes, const char *head, size_t head_len,
                      const char *tail, size_t tail_len, bool lent)
{
    uint64_t id;
    char *why = NULL;

    log_warn("mcp %s: dropped a message of %zu bytes (the limit is %u)", c->spec->name, bytes,
             MCPCLIENT_MESSAGE_MAX);
    if (!scan_id(tail, tail_len, &id) && !scan_id(head, head_len, &id))
        return;
    if (asprintf(&why, "%zu bytes, over runbox's limit of %u bytes for one message; ask for less",
                 bytes, MCPCLIENT_MESSAGE_MAX) < 0)
        why = NULL;
    fail_id(c, id, ERR_TOO_LARGE, why, lent);
}

void mcpclient__edges_add(struct mcpclient_edges *e, const char *p, size_t n)
{
    size_t take = e->head_len < MCPCLIENT_EDGE ? MCPCLIENT_EDGE - e->head_len : 0;

    if (take > n)
        take = n;
    memcpy(e->head + e->head_len, p, take);
    e->head_len += take;
    if (n >= MCPCLIENT_EDGE) {
        memcpy(e->tail, p + n - MCPCLIENT_EDGE, MCPCLIENT_EDGE);
        e->tail_len = MCPCLIENT_EDGE;
    } else {
        size_t keep = e->tail_len + n > MCPCLIENT_EDGE ? MCPCLIENT_EDGE - n : e->tail_len;

        memmove(e->tail, e->tail + e->tail_len - keep, keep);
        memcpy(e->tail + keep, p, n);
        e->tail_len = keep + n;
    }
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
