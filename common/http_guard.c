/* common/http_guard.c - deadlines for request heads and bodies (see http_guard.h).
 *
 * DESIGN: a fixed array of slots, one per civetweb worker, claimed by each worker thread the
 * first time it opens a connection and remembered in a thread-local. A slot holds the phase
 * (HEAD, BODY or none) and its deadline, changed under g->mu by the owner thread.
 *
 * How a worker blocked in civetweb's read is made to stop: civetweb gives no handle on a
 * connection's socket (and before the first request not even its addresses), but a worker
 * waits in poll(), which a signal interrupts (poll is never restarted, whatever SA_RESTART
 * says), and civetweb takes a failed poll for a broken connection: it stops reading, answers
 * through its error callback if it had bytes, and closes. So the watchdog marks the slot
 * expired and sends the worker a signal whose handler does nothing; the worker's own code then
 * sees "expired" (every hook checks it) and answers 408. Because the signal may land while the
 * worker is between two reads, it is sent again every HTTP_GUARD_KICK_MS until the worker
 * acknowledges (any hook on its thread). The signal is sent under g->mu while the slot is open,
 * so the thread is alive (its connection_close hook, which it runs before it can exit, takes
 * g->mu). Once expired, a request never reaches a handler's work: it is answered 408 and its
 * connection closes, so a late signal can only disturb that answer. */
#include "http_guard.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <civetweb.h>

#include "clocks.h"
#include "log.h"
#include "mcp_http_int.h"

#define HTTP_GUARD_KICK_MS 50 /* the worker is signalled again this often until it reacts */

/* Busy: this many workers or fewer are left without a connection (at least 1). */
static int busy_reserve(int workers)
{
    return workers / 16 > 1 ? workers / 16 : 1;
}

enum phase { PH_NONE, PH_HEAD, PH_BODY, PH_DRAIN };

struct slot {
    struct http_guard *g;
    pthread_t thread;    /* the worker that owns the slot */
    enum phase phase;    /* g->mu */
    int64_t deadline;    /* g->mu: CLOCK_MONOTONIC ms, when phase != PH_NONE */
    int64_t since;       /* g->mu: when the phase began */
    int64_t kicked;      /* g->mu: when the worker was last signalled */
    atomic_bool expired; /* set by the watchdog (under g->mu), read by the owner */
    atomic_bool shed;    /* expired because the server was busy (HTTP_GUARD_BUSY_HEAD_MS) */
    bool open;           /* g->mu: a connection is being served */
    bool first;          /* g->mu: its first request's head is awaited (none answered yet) */
    unsigned requests;   /* requests served on this connection (owner) */
    long long body_left; /* owner: bytes of a Content-Length body not read yet; -1 chunked */
};

struct http_guard {
    struct http_guard_options opt;
    unsigned id;
    pthread_mutex_t mu;
    pthread_cond_t wake; /* the watchdog waits on it (CLOCK_MONOTONIC) */
    pthread_t thread;
    bool started, stop;
    int64_t next_wake; /* g->mu: when the watchdog means to look again (INT64_MAX: never) */
    atomic_int claimed;
    int open_n;                                      /* g->mu: slots open */
    unsigned long heads_cut, bodies_cut, heads_shed; /* g->mu */
    struct slot slots[];
};

static atomic_uint guard_ids;

/* Which slot this worker claimed, and of which guard (its id, so that a slot of a guard since
 * freed is never looked at): a small record behind a pthread key rather than _Thread_local.
 * Thread-local storage would be reserved on top of every worker's stack, idle or not (see
 * daemon/api.c's http_date); the record exists only in workers that served a request. */
struct claim {
    unsigned guard_id;
    struct slot *slot;
};

static pthread_key_t claim_key;
static pthread_once_t claim_once = PTHREAD_ONCE_INIT;
static bool claim_ok;

static int kick_signal; /* the real-time signal that interrupts a worker's read; 0: none */
static pthread_once_t kick_once = PTHREAD_ONCE_INIT;

static void on_kick(int sig)
{
    (void)sig; /* its only work is to interrupt the poll() the worker waits in */
}

/* Takes the highest real-time signal nobody handles, for the whole process. */
static void install_kick(void)
{
    for (int sig = SIGRTMAX; sig > SIGRTMIN + 2; sig--) {
        struct sigaction old, sa = {.sa_handler = on_kick, .sa_flags = SA_RESTART};

        if (sigaction(sig, NULL, &old) < 0 || old.sa_handler != SIG_DFL)
            continue;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sig, &sa, NULL) == 0) {
            kick_signal = sig;
            return;
        }
    }
    log_warn("http: no free real-time signal; slow requests are bounded only by civetweb's "
             "request_timeout_ms");
}

static void make_key(void)
{
    claim_ok = pthread_key_create(&claim_key, free) == 0;
    if (!claim_ok)
        log_warn("http: no thread keys left; requests have no deadlines");
}

/* This worker's claim, or NULL when it has none. */
static struct claim *own_claim(void)
{
    pthread_once(&claim_once, make_key);
    return claim_ok ? pthread_getspecific(claim_key) : NULL;
}

/* The slot this worker claimed last, or NULL. */
static struct slot *tls_slot(void)
{
    struct claim *c = own_claim();

    return c ? c->slot : NULL;
}

/* This worker's slot of g, claimed on first use; NULL past the number of workers (or without
 * memory for the claim). */
static struct slot *own_slot(struct http_guard *g)
{
    struct claim *c = own_claim();
    int i;

    if (c && c->guard_id == g->id)
        return c->slot;
    if (!c) {
        c = claim_ok ? calloc(1, sizeof(*c)) : NULL;
        if (!c || pthread_setspecific(claim_key, c) != 0) {
            free(c);
            return NULL;
        }
    }
    i = atomic_fetch_add(&g->claimed, 1);
    c->guard_id = g->id;
    c->slot = i < g->opt.workers ? &g->slots[i] : NULL;
    if (c->slot)
        c->slot->thread = pthread_self();
    else
        log_warn("http: more worker threads than the %d the guard was told of; this one's "
                 "requests have no deadlines",
                 g->opt.workers);
    return c->slot;
}

/* Puts s in phase ph until deadline (g->mu held); wakes the watchdog if it would sleep past it. */
static void arm(struct slot *s, enum phase ph, int64_t now, int64_t deadline)
{
    s->phase = ph;
    s->since = now;
    s->deadline = deadline;
    if (ph != PH_NONE && deadline < s->g->next_wake)
        pthread_cond_signal(&s->g->wake);
}

/* The owner noticed that its slot expired (g->mu not held): no more signals. */
static void acknowledge(struct slot *s)
{
    pthread_mutex_lock(&s->g->mu);
    s->phase = PH_NONE;
    pthread_mutex_unlock(&s->g->mu);
}

/* ---- the watchdog ---- */

/* Marks the slots whose deadline passed and signals their workers, again those that have not
 * reacted yet (g->mu held). Returns when to look next. */
static int64_t sweep(struct http_guard *g, int64_t now)
{
    int64_t next = INT64_MAX;
    bool busy = g->open_n >= g->opt.workers - busy_reserve(g->opt.workers);

    for (int i = 0; i < g->opt.workers; i++) {
        struct slot *s = &g->slots[i];
        int64_t due, deadline;

        if (!s->open || s->phase == PH_NONE)
            continue;
        if (!atomic_load(&s->expired)) {
            /* When the workers run out, a new connection's first head gets a short deadline:
             * a real client sends its head at once, a slow one gives its worker back. */
            deadline = s->deadline;
            if (busy && s->phase == PH_HEAD && s->first &&
                s->since + HTTP_GUARD_BUSY_HEAD_MS < deadline)
                deadline = s->since + HTTP_GUARD_BUSY_HEAD_MS;
            if (deadline > now) {
                next = deadline < next ? deadline : next;
                continue;
            }
            atomic_store(&s->expired, true);
            if (deadline < s->deadline) {
                atomic_store(&s->shed, true);
                g->heads_shed++;
            }
            if (s->phase == PH_HEAD)
                g->heads_cut++;
            else if (s->phase == PH_BODY)
                g->bodies_cut++;
            if (s->phase != PH_DRAIN)
                log_debug("http: a request %s did not arrive within %lld ms%s; cutting it",
                          s->phase == PH_HEAD ? "head" : "body", (long long)(deadline - s->since),
                          deadline < s->deadline ? " while every worker was taken" : "");
            s->kicked = now - HTTP_GUARD_KICK_MS;
        }
        due = s->kicked + HTTP_GUARD_KICK_MS;
        if (due <= now && kick_signal) {
            /* Under the lock: while the slot is open its thread is alive (see DESIGN). */
            (void)pthread_kill(s->thread, kick_signal);
            s->kicked = now;
            due = now + HTTP_GUARD_KICK_MS;
        }
        next = due < next ? due : next;
    }
    return next;
}

static void wait_until(struct http_guard *g, int64_t when)
{
    struct timespec ts;

    g->next_wake = when;
    if (when == INT64_MAX) {
        pthread_cond_wait(&g->wake, &g->mu);
    } else {
        ts = clocks_at(when);
        pthread_cond_timedwait(&g->wake, &g->mu, &ts);
    }
    g->next_wake = INT64_MAX;
}

static void *watchdog(void *arg)
{
    struct http_guard *g = arg;

    pthread_mutex_lock(&g->mu);
    while (!g->stop)
        wait_until(g, sweep(g, clocks_mono_ms()));
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* ---- life ---- */

struct http_guard *http_guard_new(const struct http_guard_options *opt, struct errinfo *err)
{
    int workers = opt->workers > 0 ? opt->workers : 1;
    struct http_guard *g = calloc(1, sizeof(*g) + (size_t)workers * sizeof(struct slot));

    if (!g) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the HTTP deadlines");
        return NULL;
    }
    pthread_once(&kick_once, install_kick);
    g->opt = *opt;
    g->opt.workers = workers;
    g->opt.head_ms = opt->head_ms > 0 ? opt->head_ms : HTTP_GUARD_HEAD_MS;
    g->opt.body_ms = opt->body_ms > 0 ? opt->body_ms : HTTP_GUARD_BODY_MS;
    g->id = atomic_fetch_add(&guard_ids, 1) + 1;
    g->next_wake = INT64_MAX;
    for (int i = 0; i < workers; i++)
        g->slots[i].g = g;
    pthread_mutex_init(&g->mu, NULL);
    clocks_cond_init(&g->wake);
    if (pthread_create(&g->thread, NULL, watchdog, g) != 0) {
        errinfo_set(err, ERR_NOMEM, "cannot start the HTTP deadline thread");
        http_guard_free(g);
        return NULL;
    }
    g->started = true;
    return g;
}

void http_guard_free(struct http_guard *g)
{
    if (!g)
        return;
    if (g->started) {
        pthread_mutex_lock(&g->mu);
        g->stop = true;
        pthread_cond_signal(&g->wake);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->thread, NULL);
    }
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* ---- the hooks ---- */

void http_guard_conn_open(struct http_guard *g, const struct mg_connection *conn)
{
    struct slot *s = own_slot(g);
    int64_t now = clocks_mono_ms();

    (void)conn; /* civetweb tells nothing about it yet (mg_get_request_info() is NULL) */
    if (!s)
        return;
    s->requests = 0;
    s->body_left = 0;
    pthread_mutex_lock(&g->mu);
    s->open = true;
    s->first = true;
    g->open_n++;
    atomic_store(&s->expired, false);
    atomic_store(&s->shed, false);
    arm(s, PH_HEAD, now, now + g->opt.head_ms);
    /* The workers just ran out: the watchdog shortens the first heads' deadlines. */
    if (g->open_n >= g->opt.workers - busy_reserve(g->opt.workers) &&
        now + HTTP_GUARD_BUSY_HEAD_MS < g->next_wake)
        pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->mu);
}

int http_guard_begin(struct http_guard *g, struct mg_connection *conn, struct errinfo *err)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    struct slot *s = own_slot(g);
    bool chunked = mg_get_header(conn, "Transfer-Encoding") != NULL;
    int64_t now = clocks_mono_ms();
    bool late = false;

    if (s) {
        s->body_left = chunked ? -1 : ri->content_length > 0 ? ri->content_length : 0;
        pthread_mutex_lock(&g->mu);
        late = atomic_load(&s->expired);
        arm(s, !late && s->body_left ? PH_BODY : PH_NONE, now, now + g->opt.body_ms);
        pthread_mutex_unlock(&g->mu);
    }
    if (late) {
        errinfo_set(err, ERR_TIMEOUT,
                    "the request head did not arrive within %d ms; send it at once",
                    g->opt.head_ms);
    } else if (mcp_http_check_request(conn, err) == 0) {
        return 0;
    }
    mg_disable_connection_keep_alive(conn);
    return -1;
}

void http_guard_request_done(struct http_guard *g, struct mg_connection *conn)
{
    struct slot *s = own_slot(g);
    int64_t now = clocks_mono_ms();
    bool expired;

    if (!s)
        return;
    s->requests++;
    s->body_left = 0;
    pthread_mutex_lock(&g->mu);
    s->first = false;
    expired = atomic_load(&s->expired);
    arm(s, expired ? PH_NONE : PH_HEAD, now, now + g->opt.keepalive_ms + g->opt.head_ms);
    pthread_mutex_unlock(&g->mu);
    if (expired)
        mg_disable_connection_keep_alive(conn);
}

void http_guard_conn_close(struct http_guard *g)
{
    struct slot *s = own_slot(g);

    if (!s)
        return;
    pthread_mutex_lock(&g->mu);
    if (s->open)
        g->open_n--;
    s->open = false;
    s->phase = PH_NONE;
    pthread_mutex_unlock(&g->mu);
}

/* ---- bodies ---- */

/* The body is all read: its deadline no longer applies. If the deadline passed in the instant
 * between the last read and here, the body still came whole: the cut is taken back. (The
 * watchdog signalled under g->mu, so by the time this thread holds it the signal has been
 * handled, and it interrupted nothing: the thread was between two reads.) */
static void body_done(struct slot *s)
{
    pthread_mutex_lock(&s->g->mu);
    if (s->phase == PH_BODY) {
        s->phase = PH_NONE;
        if (atomic_load(&s->expired)) {
            atomic_store(&s->expired, false);
            s->g->bodies_cut--;
        }
    }
    pthread_mutex_unlock(&s->g->mu);
}

static int read_failed(struct mg_connection *conn, struct slot *s, struct errinfo *err)
{
    bool chunked = mg_get_header(conn, "Transfer-Encoding") != NULL;

    if (s)
        acknowledge(s);
    if (s && atomic_load(&s->expired))
        errinfo_set(err, ERR_TIMEOUT,
                    "the request body did not arrive within %d ms of its head; the connection "
                    "is closed",
                    s->g->opt.body_ms);
    else if (chunked)
        errinfo_set(err, ERR_INVALID,
                    "the chunked request body is malformed or was cut off (each chunk is a hex "
                    "size, CRLF, the bytes, CRLF; the last is 0 CRLF CRLF; no extensions)");
    else
        errinfo_set(err, ERR_INVALID,
                    "the request body was cut off: the connection closed before "
                    "Content-Length bytes arrived");
    mg_disable_connection_keep_alive(conn);
    return -1;
}

int http_guard_read(struct mg_connection *conn, void *buf, size_t len, struct errinfo *err)
{
    struct slot *s = tls_slot();
    int n;

    if (s && atomic_load(&s->expired))
        return read_failed(conn, s, err);
    n = mg_read(conn, buf, len);
    if (n < 0 || (s && atomic_load(&s->expired)))
        return read_failed(conn, s, err);
    if (!s)
        return n;
    if (n == 0) {
        body_done(s);
    } else if (s->body_left > 0) {
        s->body_left -= n;
        if (s->body_left <= 0)
            body_done(s);
    }
    return n;
}

/* The drain's deadline (g->mu held): HTTP_GUARD_DRAIN_QUIET_MS after the last bytes came, and
 * never past HTTP_GUARD_DRAIN_MS after it began (or the body's own deadline, if sooner). */
static void arm_drain(struct slot *s, int64_t now, int64_t end)
{
    int64_t quiet = now + HTTP_GUARD_DRAIN_QUIET_MS;

    arm(s, PH_DRAIN, now, quiet < end ? quiet : end);
}

void http_guard_drain(struct mg_connection *conn)
{
    struct slot *s = tls_slot();
    char sink[8192];
    size_t drained = 0;
    int64_t end = 0;

    mg_disable_connection_keep_alive(conn);
    if (s) {
        int64_t now = clocks_mono_ms();

        end = now + HTTP_GUARD_DRAIN_MS;
        pthread_mutex_lock(&s->g->mu);
        if (s->phase == PH_BODY && s->deadline < end)
            end = s->deadline;
        if (!atomic_load(&s->expired))
            arm_drain(s, now, end);
        pthread_mutex_unlock(&s->g->mu);
    }
    while (drained < HTTP_GUARD_DRAIN_MAX && !(s && atomic_load(&s->expired))) {
        int n = mg_read(conn, sink, sizeof(sink));

        if (n <= 0)
            break;
        drained += (size_t)n;
        if (s) {
            pthread_mutex_lock(&s->g->mu);
            if (!atomic_load(&s->expired))
                arm_drain(s, clocks_mono_ms(), end);
            pthread_mutex_unlock(&s->g->mu);
        }
    }
    if (s)
        acknowledge(s);
}

/* ---- civetweb's own errors ---- */

int http_guard_error_text(const struct mg_connection *conn, int status, const char *msg, char *out,
                          size_t size)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    const char *max = mg_get_option(mg_get_context(conn), "max_request_size");
    struct slot *s = tls_slot();
    struct errinfo err = {0};
    int64_t waited = s ? clocks_mono_ms() - s->since : 0;

    if (!msg)
        msg = "";
    if (s)
        acknowledge(s);
    if (status == 400 && strcmp(msg, "Malformed message") == 0) {
        /* What civetweb says when a head is cut off: by the guard, by its own keep-alive
         * limit, by the client closing, or at a byte it does not accept. */
        if (s && atomic_load(&s->shed)) {
            snprintf(out, size,
                     "every worker is taken and the request head did not arrive within %d ms; "
                     "send it at once; the connection is closed",
                     HTTP_GUARD_BUSY_HEAD_MS);
            return 408;
        }
        if (s &&
            (atomic_load(&s->expired) || waited >= s->g->opt.head_ms ||
             (s->requests > 0 && s->g->opt.keepalive_ms && waited >= s->g->opt.keepalive_ms))) {
            snprintf(out, size,
                     "the request head did not arrive in time (%d ms); send it at once; the "
                     "connection is closed",
                     s->g->opt.head_ms);
            return 408;
        }
        snprintf(out, size,
                 "malformed request head: a control character (NUL, tab, ...), more than %s "
                 "bytes, or no empty line at its end before the client stopped sending",
                 max ? max : "16384");
        return 400;
    }
    /* A head civetweb parsed but refused (Transfer-Encoding, Content-Length): the same
     * checks as on every request say which and why. */
    if ((status == 400 || status == 411) && ri->http_version && ri->num_headers > 0 &&
        mcp_http__check_fields(ri, &err) < 0) {
        snprintf(out, size, "%s", err.msg);
        return 400;
    }
    if (status == 411) {
        snprintf(out, size, "Content-Length is not a number of bytes; send decimal digits");
        return 400;
    }
    if (status == 505) {
        snprintf(out, size, "HTTP/%.16s is not supported; send HTTP/1.1",
                 ri->http_version ? ri->http_version : "?");
        return 505;
    }
    if (status == 400 && strcmp(msg, "Invalid URI") == 0) {
        snprintf(out, size, "the request target must be a path such as /health");
        return 400;
    }
    if (status == 400 && strncmp(msg, "Bad request", 11) == 0) {
        snprintf(out, size,
                 "malformed request: the first line is METHOD /path HTTP/1.1 (GET, POST, "
                 "DELETE, ...), each header line is Name: value");
        return 400;
    }
    if (status == 413) {
        snprintf(out, size, "the request head is over %s bytes", max ? max : "16384");
        return 431;
    }
    snprintf(out, size, "%.200s", msg[0] ? msg : mg_get_response_code_text(conn, status));
    return status;
}

cJSON *http_guard_status_json(struct http_guard *g)
{
    cJSON *o = cJSON_CreateObject();
    int open = 0;
    unsigned long heads, bodies, shed;

    pthread_mutex_lock(&g->mu);
    for (int i = 0; i < g->opt.workers; i++)
        open += g->slots[i].open;
    heads = g->heads_cut;
    bodies = g->bodies_cut;
    shed = g->heads_shed;
    pthread_mutex_unlock(&g->mu);
    if (o && (!cJSON_AddNumberToObject(o, "workers", g->opt.workers) ||
              !cJSON_AddNumberToObject(o, "open", open) ||
              !cJSON_AddNumberToObject(o, "head_timeout_ms", g->opt.head_ms) ||
              !cJSON_AddNumberToObject(o, "body_timeout_ms", g->opt.body_ms) ||
              !cJSON_AddNumberToObject(o, "heads_cut", (double)heads) ||
              !cJSON_AddNumberToObject(o, "bodies_cut", (double)bodies) ||
              !cJSON_AddNumberToObject(o, "heads_shed", (double)shed))) {
        cJSON_Delete(o);
        o = NULL;
    }
    return o;
}
