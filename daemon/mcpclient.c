/* daemon/mcpclient.c - the MCP client of one external server (see mcpclient.h): its thread, its
 * requests and their waiters, the connection's end. The handshake and the lists are in
 * mcpclient_open.c, what the server sends and the reader's turn in mcpclient_receive.c, the
 * state they share in mcpclient_core.h; the transports in mcpclient_{stdio,http,ws}.c.
 *
 * DESIGN: everything about the protocol happens in these files, on the client's thread, except
 * waiting: a request from a worker thread puts its message on the outgoing queue, wakes the
 * thread (an eventfd the transport polls) and sleeps on its own condition variable until the thread
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
#include "mcpclient_core.h"
#include "mcpclient_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "call.h"
#include "console.h"
#include "log.h"
#include "registry.h"
#include "startgate.h"
#include "utf8.h"

#define READY_STABLE_MS 10000 /* ready this long: the next failure starts the back-off anew */
/* ---- small helpers ---- */

void mcpclient__wake(struct mcpclient *c)
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

int mcpclient__enqueue_locked(struct mcpclient *c, char *text, struct errinfo *err)
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

/* ---- the transports' other needs ---- */

bool mcpclient__should_end(struct mcpclient *c, struct errinfo *why)
{
    bool end;

    pthread_mutex_lock(&c->mu);
    if (!c->handshake_failed && c->handshake_deadline &&
        clocks_mono_ms() >= c->handshake_deadline) {
        if (c->ignored)
            snprintf(c->handshake_why, sizeof(c->handshake_why),
                     "did not finish initializing within %d ms (timeout_ms); it wrote %u "
                     "message%s that %s no JSON-RPC runbox could use, the last: %s",
                     c->spec->timeout_ms, c->ignored, c->ignored == 1 ? "" : "s",
                     c->ignored == 1 ? "was" : "were", c->ignored_last);
        else
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
    char shown[4096 + 1024]; /* a line cut at 4 KiB, with room for "${env:VAR}" */
    size_t written = 0;

    while (len && (line[len - 1] == '\r' || line[len - 1] == '\n'))
        len--;
    /* The console and last_error (which quotes the last lines) show "${env:VAR}", not a token
     * runboxd gave the server and the server prints (its arguments, its environment). */
    utf8_sanitize(shown, 4096, line, len, false, &written); /* a NUL is U+FFFD: one string */
    shown[written] = '\0';
    registry_redact(c->spec, shown, sizeof(shown));
    pthread_mutex_lock(&c->mu);
    snprintf(c->stderr_tail[c->stderr_count++ % MCPCLIENT_STDERR_KEEP], sizeof(c->stderr_tail[0]),
             "%.*s", (int)strlen(shown), shown);
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
    console_append(c->opt.console, CONSOLE_WARN, CONSOLE_SRC_MCP, 0, c->spec->name, 0, shown,
                   strlen(shown));
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
            mcpclient__free_internal(p);
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
        /* libcurl's, a resolver's or the server's own words may echo a token from ${env:}. */
        registry_redact(c->spec, c->last_error, sizeof(c->last_error));
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
    c->ignored = 0;
    c->pid = 0;
    pthread_mutex_unlock(&c->mu);
    while (internal) {
        p = internal;
        internal = p->next;
        mcpclient__free_internal(p);
    }
    if (why->kind != ERR_CANCELLED)
        log_warn("%s", c->last_error);
    mcpclient__changed(c, MCPCLIENT_CHANGED_STATE |
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
        mcpclient__changed(c, MCPCLIENT_CHANGED_STATE);
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
        mcpclient__leave_gate(c);
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
 * answer under mu (mcpclient__complete_waiter_locked) and lets go of it at once, and a waiter woken
 * by that would otherwise go back to sleep on mu for those few instructions - a second wake-up on
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
    mcpclient__wake(c);
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
    for (struct inmsg *in = mcpclient__take_inbox_locked(c), *next; in; in = next) {
        next = in->next;
        cJSON_Delete(in->msg);
        free(in->why);
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
        mcpclient__poke_reader(p->c); /* a stale poke only wakes the next reader once for nothing */
}

/* The waiter gave up (deadline, cancellation): tells the server, on the same connection only
 * (mu held). */
static void abandon_locked(struct mcpclient *c, struct pending *p, const char *reason)
{
    cJSON *params = cJSON_CreateObject();
    struct errinfo ignored = {0};

    mcpclient__unlink_pending_locked(c, p);
    if (p->gen != c->gen || c->state != MCPCLIENT_READY) {
        cJSON_Delete(params);
        return;
    }
    cJSON_AddNumberToObject(params, "requestId", (double)p->id);
    cJSON_AddStringToObject(params, "reason", reason);
    mcpclient__enqueue_locked(c, mcpclient__notification_text("notifications/cancelled", params),
                              &ignored);
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
        if (mcpclient__may_take_turn_locked(c, p)) {
            timed_out = mcpclient__read_turn_locked(c, p, until_ms);
            continue;
        }
        if (c->rd_fd >= 0 && c->rd_owner == RD_THREAD && !c->rd_want &&
            c->state == MCPCLIENT_READY) {
            c->rd_want = true; /* the thread lets go of the turn at its next look */
            pthread_mutex_unlock(&c->mu);
            mcpclient__wake(c);
            pthread_mutex_lock(&c->mu);
            continue;
        }
        timed_out = pthread_cond_timedwait(&p->cond, &c->mu, &until) == ETIMEDOUT;
    }
    if (c->rd_heir == p) { /* told to take the turn, and leaving without it */
        c->rd_heir = NULL;
        if (c->rd_owner == RD_NONE && c->rd_fd >= 0)
            mcpclient__pass_turn_locked(c, p);
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
        mcpclient__wake(c); /* the cancellation goes out now */
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
    text = mcpclient__request_text(c, p->id, method, params, call_wants_progress(call));
    sent = text && direct_send(c, text);
    if (sent) {
        free(text);
    } else if (mcpclient__enqueue_locked(c, text, err) < 0) {
        pthread_mutex_unlock(&c->mu);
        rc = -1;
        goto out;
    }
    p->next = c->pending;
    c->pending = p;
    pthread_mutex_unlock(&c->mu);
    if (!sent)
        mcpclient__wake(c);
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
    /* What it speaks: "sse" once "http" fell back to legacy SSE. */
    cJSON_AddStringToObject(o, "transport",
                            c->spec->transport == REGISTRY_HTTP && c->hint == MCPCLIENT_HINT_SSE
                                ? "sse"
                                : transports[c->spec->transport]);
    if (c->spec->transport == REGISTRY_STDIO) {
        cJSON_AddStringToObject(o, "command", c->spec->shown.command ? c->spec->shown.command : "");
        cJSON_AddBoolToObject(o, "sandbox", c->spec->sandbox);
        if (c->pid)
            cJSON_AddNumberToObject(o, "pid", (double)c->pid);
    } else {
        cJSON_AddStringToObject(o, "url", c->spec->shown.url ? c->spec->shown.url : "");
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
