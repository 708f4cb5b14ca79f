/* daemon/call.c - the call service (see call.h).
 *
 * DESIGN: the budget table is three atomic counters with their limits; admission is a
 * fetch_add that is undone when it overshoots, so it never blocks. A call holds at most one
 * slot, taken in call_begin and given back in call_end.
 *
 * Cancellation is a flag plus one hook under the call's own mutex. The mutex is held while the
 * hook runs, so call_off_cancel() (which takes it too) cannot return while the hook is running:
 * the work may free what the hook touches as soon as call_off_cancel() returns. The hooks only
 * take leaf locks (proc, bridge), which never call back here. */
#include "call.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bridge.h"
#include "clocks.h"
#include "console.h"
#include "events.h"
#include "log.h"
#include "opcache.h"
#include "registry.h"
#include "schema.h"
#include "studio_answer.h"
#include "tools.h"

struct call_service {
    const struct catalog *cat;
    const struct tools_ctx *tools;
    int max[CALL_BUDGET_COUNT];
    atomic_int in_use[CALL_BUDGET_COUNT];
    char id_prefix[32];
    atomic_uint_fast64_t next_id;

    /* Calls with a log sink that follow a run, for the console listener. */
    pthread_mutex_t logs_mu;
    struct call *logging; /* chained through call.next_logging */
    atomic_int nlogging;
    int listen; /* the event feed listener, or -1 */

    /* The ticker: progress once a second for long calls whose work reports none itself. */
    pthread_mutex_t tick_mu;
    pthread_cond_t tick_cond;
    struct call *ticking; /* chained through call.next_ticking */
    bool tick_stop, tick_started;
    pthread_t tick_thread;

    struct opcache *ops; /* operation_id answers of the daemon's own tools (run_local) */
};

struct call {
    struct call_service *svc;
    const struct catalog_tool *tool;
    const cJSON *args;          /* borrowed */
    struct registry_hold *hold; /* an external tool: keeps it alive until call_end */
    int budget;                 /* the row it holds, or -1 */
    char id[48];
    char client[64]; /* who asked (call_set_client), "" when unnamed */
    pthread_mutex_t mu;
    bool cancelled;
    void (*hook)(void *arg);
    void *hook_arg;
    call_progress_fn progress;
    void *progress_ctx;

    call_log_fn log;
    void *log_ctx;
    const _Atomic uint64_t *run_id; /* guarded by svc->logs_mu; NULL: follows no run */
    struct call *next_logging;

    /* guarded by svc->tick_mu */
    int64_t started_ms, reported_ms; /* when it started; when its work last reported progress */
    bool ticking;
    bool self_reporting; /* its work reports at least once a second itself */
    struct call *next_ticking;
};

static const char *const budget_names[CALL_BUDGET_COUNT] = {"long", "search", "stream", "external"};
static const int budget_defaults[CALL_BUDGET_COUNT] = {
    CALL_LONG_MAX_DEFAULT, CALL_SEARCH_MAX_DEFAULT, CALL_STREAM_MAX_DEFAULT,
    CALL_EXTERNAL_MAX_DEFAULT};
static const char *const budget_what[CALL_BUDGET_COUNT] = {
    "calls that can take long (exec, kill, Studio tools)", "searches of the workspace",
    "open streams (SSE, WebSocket)", "calls to external MCP servers"};

/* ---- request-scoped logs ---- */

/* Every console entry: handed to the calls that follow its run. */
static void on_console(void *arg, const struct events_event *ev)
{
    struct call_service *svc = arg;

    if (!ev->console || !ev->console->pid || !atomic_load(&svc->nlogging))
        return;
    pthread_mutex_lock(&svc->logs_mu);
    for (struct call *c = svc->logging; c; c = c->next_logging)
        if (c->run_id && atomic_load(c->run_id) == ev->console->pid)
            c->log(c->log_ctx, ev->console);
    pthread_mutex_unlock(&svc->logs_mu);
}

void call_set_log(struct call *c, call_log_fn fn, void *ctx)
{
    c->log = fn;
    c->log_ctx = ctx;
}

bool call_wants_log(const struct call *c)
{
    return c && c->log;
}

void call_follow_run(struct call *c, const _Atomic uint64_t *run_id)
{
    struct call_service *svc;

    if (!c || !c->log || c->svc->listen < 0)
        return;
    svc = c->svc;
    pthread_mutex_lock(&svc->logs_mu);
    if (!c->run_id) {
        c->next_logging = svc->logging;
        svc->logging = c;
        atomic_fetch_add(&svc->nlogging, 1);
    }
    c->run_id = run_id;
    pthread_mutex_unlock(&svc->logs_mu);
}

void call_unfollow_run(struct call *c)
{
    struct call_service *svc;

    if (!c || !c->run_id)
        return;
    svc = c->svc;
    pthread_mutex_lock(&svc->logs_mu);
    for (struct call **pp = &svc->logging; *pp; pp = &(*pp)->next_logging)
        if (*pp == c) {
            *pp = c->next_logging;
            atomic_fetch_sub(&svc->nlogging, 1);
            break;
        }
    c->run_id = NULL;
    pthread_mutex_unlock(&svc->logs_mu);
}

/* ---- the progress ticker ---- */

/* Once a second, every ticking call that its work did not report on for a second hears how
 * long it has been going. The sink runs under tick_mu, so that tick_remove() waits for it. */
static void *ticker(void *arg)
{
    struct call_service *svc = arg;
    struct timespec until;

    pthread_mutex_lock(&svc->tick_mu);
    while (!svc->tick_stop) {
        int64_t now = clocks_mono_ms();

        for (struct call *c = svc->ticking; c; c = c->next_ticking) {
            char msg[160];
            int64_t secs = (now - c->started_ms) / 1000;

            if (c->self_reporting || now - c->reported_ms < 1000 || call_is_cancelled(c))
                continue;
            snprintf(msg, sizeof(msg), "%s: %s for %" PRId64 " s", catalog_tool_name(c->tool),
                     catalog_tool_route(c->tool) == CATALOG_ROUTE_STUDIO
                         ? "waiting for Studio's answer"
                         : "running",
                     secs);
            c->progress(c->progress_ctx, (double)secs, 0, msg);
            c->reported_ms = now;
        }
        until = clocks_deadline(1000);
        pthread_cond_timedwait(&svc->tick_cond, &svc->tick_mu, &until);
    }
    pthread_mutex_unlock(&svc->tick_mu);
    return NULL;
}

static void tick_add(struct call *c)
{
    struct call_service *svc = c->svc;

    pthread_mutex_lock(&svc->tick_mu);
    if (!svc->tick_started && !svc->tick_stop)
        svc->tick_started = pthread_create(&svc->tick_thread, NULL, ticker, svc) == 0;
    c->started_ms = c->reported_ms = clocks_mono_ms();
    c->ticking = true;
    c->next_ticking = svc->ticking;
    svc->ticking = c;
    pthread_mutex_unlock(&svc->tick_mu);
}

static void tick_remove(struct call *c)
{
    struct call_service *svc = c->svc;

    pthread_mutex_lock(&svc->tick_mu);
    for (struct call **pp = &svc->ticking; *pp; pp = &(*pp)->next_ticking)
        if (*pp == c) {
            *pp = c->next_ticking;
            break;
        }
    c->ticking = false;
    pthread_mutex_unlock(&svc->tick_mu);
}

/* ---- the service ---- */

struct call_service *call_service_new(const struct call_service_options *opt, struct errinfo *err)
{
    struct call_service *svc = calloc(1, sizeof(*svc));

    if (svc && !(svc->ops = opcache_new())) {
        free(svc);
        svc = NULL;
    }
    if (!svc) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the call service");
        return NULL;
    }
    svc->cat = opt->cat;
    svc->tools = opt->tools;
    for (int i = 0; i < CALL_BUDGET_COUNT; i++) {
        svc->max[i] = opt->max[i] > 0 ? opt->max[i] : budget_defaults[i];
        atomic_init(&svc->in_use[i], 0);
    }
    /* Call ids: unique across restarts (start time) and within a run (the counter). */
    snprintf(svc->id_prefix, sizeof(svc->id_prefix), "c%lx%x", (unsigned long)time(NULL),
             (unsigned)getpid() & 0xffff);
    atomic_init(&svc->next_id, 1);
    pthread_mutex_init(&svc->logs_mu, NULL);
    pthread_mutex_init(&svc->tick_mu, NULL);
    clocks_cond_init(&svc->tick_cond);
    svc->listen = -1;
    if (opt->tools && opt->tools->events) {
        svc->listen = events_listen(opt->tools->events, EVENTS_CONSOLE, on_console, svc, err);
        if (svc->listen < 0) {
            pthread_mutex_destroy(&svc->logs_mu);
            pthread_mutex_destroy(&svc->tick_mu);
            pthread_cond_destroy(&svc->tick_cond);
            opcache_free(svc->ops);
            free(svc);
            return NULL;
        }
    }
    return svc;
}

void call_service_free(struct call_service *svc)
{
    if (!svc)
        return;
    if (svc->tools)
        events_unlisten(svc->tools->events, svc->listen);
    pthread_mutex_lock(&svc->tick_mu);
    svc->tick_stop = true;
    pthread_cond_signal(&svc->tick_cond);
    pthread_mutex_unlock(&svc->tick_mu);
    if (svc->tick_started)
        pthread_join(svc->tick_thread, NULL);
    pthread_mutex_destroy(&svc->logs_mu);
    pthread_mutex_destroy(&svc->tick_mu);
    pthread_cond_destroy(&svc->tick_cond);
    opcache_free(svc->ops);
    free(svc);
}

int call_service_admit(struct call_service *svc, enum call_budget b, struct errinfo *err)
{
    if (atomic_fetch_add(&svc->in_use[b], 1) < svc->max[b])
        return 0;
    atomic_fetch_sub(&svc->in_use[b], 1);
    errinfo_set(err, ERR_UNAVAILABLE,
                "runboxd is busy: %d %s are in progress, the most it serves at once; try again "
                "when some have finished",
                svc->max[b], budget_what[b]);
    return -1;
}

void call_service_release(struct call_service *svc, enum call_budget b)
{
    atomic_fetch_sub(&svc->in_use[b], 1);
}

cJSON *call_service_budget_json(struct call_service *svc)
{
    cJSON *o = cJSON_CreateObject();

    for (int i = 0; o && i < CALL_BUDGET_COUNT; i++) {
        cJSON *row = cJSON_AddObjectToObject(o, budget_names[i]);

        if (!row || !cJSON_AddNumberToObject(row, "in_use", atomic_load(&svc->in_use[i])) ||
            !cJSON_AddNumberToObject(row, "max", svc->max[i])) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

/* Writes "<prefix>-<n>" at buf (size bytes), cut to fit as snprintf would: every call mints
 * one, and this is the quick path of a quick call. */
static void put_id(char *buf, size_t size, const char *prefix, uint_fast64_t n)
{
    char digits[24];
    size_t nd = 0, len = strlen(prefix), at;

    do {
        digits[nd++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    if (size == 0)
        return;
    at = len < size - 1 ? len : size - 1;
    memcpy(buf, prefix, at);
    if (at < size - 1)
        buf[at++] = '-';
    while (nd > 0 && at < size - 1)
        buf[at++] = digits[--nd];
    buf[at] = '\0';
}

void call_service_mint_id(struct call_service *svc, char *buf, size_t size)
{
    put_id(buf, size, svc->id_prefix,
           atomic_fetch_add_explicit(&svc->next_id, 1, memory_order_relaxed));
}

const struct catalog_tool *call_service_find(const struct call_service *svc, const char *name)
{
    return catalog_find(svc->cat, name);
}

/* ---- one call ---- */

static int budget_row(const struct catalog_tool *tool)
{
    switch (catalog_tool_budget(tool)) {
    case CATALOG_BUDGET_LONG:
        return CALL_BUDGET_LONG;
    case CATALOG_BUDGET_SEARCH:
        return CALL_BUDGET_SEARCH;
    case CATALOG_BUDGET_EXTERNAL:
        return CALL_BUDGET_EXTERNAL;
    case CATALOG_BUDGET_NONE:
        break;
    }
    return -1;
}

/* A name the catalog does not serve: an external tool, or the error that says why not. */
static const struct catalog_tool *find_external(struct call_service *svc, const char *name,
                                                struct registry_hold **hold, struct errinfo *err)
{
    struct registry *reg = svc->tools ? svc->tools->registry : NULL;
    struct errinfo rerr = {0};
    const struct catalog_tool *tool;

    if (reg && !catalog_find(catalog_builtin(), name)) {
        tool = registry_find_tool(reg, name, hold, &rerr);
        if (tool)
            return tool;
        if (rerr.kind != ERR_NOT_FOUND || rerr.msg[0]) {
            errinfo_set(err, rerr.kind, "%s", rerr.msg);
            return NULL;
        }
    }
    if (catalog_find(catalog_builtin(), name))
        errinfo_set(err, ERR_NOT_FOUND,
                    "tool %.128s is not served: runboxd runs with a --tools profile without "
                    "it; GET /tools lists the tools it serves",
                    name);
    else
        errinfo_set(err, ERR_NOT_FOUND, "unknown tool: %.128s; GET /tools lists the tools", name);
    return NULL;
}

struct call *call_begin(struct call_service *svc, const char *name, const cJSON *args,
                        struct schema_report *rep, struct errinfo *err)
{
    const struct catalog_tool *tool = catalog_find(svc->cat, name);
    struct registry_hold *hold = NULL;
    struct schema_report local;
    struct call *c;
    int row;

    if (!tool) {
        tool = find_external(svc, name, &hold, err);
        if (!tool)
            return NULL;
    }
    if (!rep)
        rep = &local;
    if (schema_validate(catalog_tool_input_schema(tool), args, "arguments", rep) < 0) {
        errinfo_set(err, ERR_INVALID, "invalid arguments for %s: %s", name,
                    rep->count ? rep->msgs[0] : "rejected by the schema");
        registry_unhold(hold);
        return NULL;
    }
    row = budget_row(tool);
    if (row >= 0 && call_service_admit(svc, (enum call_budget)row, err) < 0) {
        registry_unhold(hold);
        return NULL;
    }
    c = calloc(1, sizeof(*c));
    if (!c || pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        if (row >= 0)
            call_service_release(svc, (enum call_budget)row);
        registry_unhold(hold);
        errinfo_set(err, ERR_NOMEM, "out of memory starting a call of %s", name);
        return NULL;
    }
    c->svc = svc;
    c->tool = tool;
    c->hold = hold;
    c->args = args;
    c->budget = row;
    call_service_mint_id(svc, c->id, sizeof(c->id));
    return c;
}

void call_end(struct call *c)
{
    if (!c)
        return;
    call_unfollow_run(c);
    if (c->budget >= 0)
        call_service_release(c->svc, (enum call_budget)c->budget);
    registry_unhold(c->hold);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const char *call_id(const struct call *c)
{
    return c->id;
}

void call_set_client(struct call *c, const char *client)
{
    size_t len;

    if (!c)
        return;
    len = client ? strnlen(client, sizeof(c->client) - 1) : 0;
    if (len)
        memcpy(c->client, client, len);
    c->client[len] = '\0';
}

const char *call_client(const struct call *c)
{
    return c->client;
}

const struct catalog_tool *call_tool(const struct call *c)
{
    return c->tool;
}

const struct tools_ctx *call_tools_ctx(const struct call *c)
{
    return c->svc->tools;
}

/* ---- cancellation ---- */

void call_cancel(struct call *c)
{
    pthread_mutex_lock(&c->mu);
    if (!c->cancelled) {
        c->cancelled = true;
        if (c->hook)
            c->hook(c->hook_arg);
    }
    pthread_mutex_unlock(&c->mu);
}

bool call_is_cancelled(const struct call *c)
{
    bool v;

    if (!c)
        return false;
    pthread_mutex_lock((pthread_mutex_t *)&c->mu);
    v = c->cancelled;
    pthread_mutex_unlock((pthread_mutex_t *)&c->mu);
    return v;
}

void call_on_cancel(struct call *c, void (*fn)(void *arg), void *arg)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->hook = fn;
    c->hook_arg = arg;
    if (c->cancelled)
        fn(arg);
    pthread_mutex_unlock(&c->mu);
}

void call_off_cancel(struct call *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->hook = NULL;
    c->hook_arg = NULL;
    pthread_mutex_unlock(&c->mu);
}

/* ---- progress ---- */

void call_set_progress(struct call *c, call_progress_fn fn, void *ctx)
{
    c->progress = fn;
    c->progress_ctx = ctx;
}

void call_reports_progress(struct call *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->svc->tick_mu);
    c->self_reporting = true;
    pthread_mutex_unlock(&c->svc->tick_mu);
}

bool call_wants_progress(const struct call *c)
{
    return c && c->progress;
}

void call_progress(struct call *c, double progress, double total, const char *message)
{
    if (!c || !c->progress || call_is_cancelled(c))
        return;
    if (c->ticking) {
        /* Serialized with the ticker's reports: the sink sees one report at a time. */
        pthread_mutex_lock(&c->svc->tick_mu);
        c->reported_ms = clocks_mono_ms();
        c->progress(c->progress_ctx, progress, total, message);
        pthread_mutex_unlock(&c->svc->tick_mu);
        return;
    }
    c->progress(c->progress_ctx, progress, total, message);
}

/* ---- running ---- */

static void bridge_cancel_hook(void *arg)
{
    struct call *c = arg;

    bridge_cancel(c->svc->tools->bridge, c->id);
}

/* ---- the daemon's own tools, with retry safety ---- */

#define OP_WAIT_MS 120000 /* a repeat waits this long for its first call (exec runs 110 s) */

/* The call's operation_id (the catalog declares one on tools whose repeat would act twice),
 * or NULL. */
static const char *operation_of(const cJSON *args)
{
    const cJSON *op = args ? cJSON_GetObjectItemCaseSensitive(args, "operation_id") : NULL;

    return cJSON_IsString(op) && op->valuestring[0] ? op->valuestring : NULL;
}

static void op_cancel_hook(void *arg)
{
    struct call *c = arg;

    opcache_cancel(c->svc->ops, c->id);
}

/* text (owned, JSON) with "replayed":true as its first member when it is an object; the text is
 * left alone otherwise or when out of memory. */
static void mark_replayed(char **text, size_t *len)
{
    static const char member[] = "\"replayed\":true";
    size_t at = 0, after, n;
    char *out;

    while (at < *len && strchr(" \n\r\t", (*text)[at]))
        at++;
    if (at >= *len || (*text)[at] != '{')
        return;
    after = ++at; /* just past the brace */
    while (at < *len && strchr(" \n\r\t", (*text)[at]))
        at++;
    out = malloc(*len + sizeof(member) + 1);
    if (!out)
        return;
    memcpy(out, *text, after);
    memcpy(out + after, member, sizeof(member) - 1);
    n = after + sizeof(member) - 1;
    if (at < *len && (*text)[at] != '}')
        out[n++] = ','; /* members follow */
    memcpy(out + n, *text + after, *len - after);
    n += *len - after;
    out[n] = '\0';
    free(*text);
    *text = out;
    *len = n;
}

/* A repeat's answer (from the claim) as the call's outcome. */
static int replayed(struct call *c, struct opcache_answer *ans, bool replay,
                    struct tools_result *out, struct errinfo *err)
{
    if (!ans->data) {
        opcache_answer_cleanup(ans);
        errinfo_set(err, ERR_NOMEM, "out of memory replaying %s", catalog_tool_name(c->tool));
        return -1;
    }
    if (ans->ok) {
        out->data = ans->data;
        out->len = ans->len;
        out->is_json = ans->is_json;
        out->structured = ans->structured;
        if (out->is_json)
            mark_replayed(&out->data, &out->len);
        if (out->structured) {
            size_t slen = strlen(out->structured);

            mark_replayed(&out->structured, &slen);
        }
        return 0;
    }
    errinfo_set(err, ans->kind, "%s", ans->data);
    if (replay && (ans->len >= sizeof(err->msg) || memchr(ans->data, '\n', ans->len))) {
        out->data = ans->data; /* the whole message, as the first call gave it */
        out->len = ans->len;
        ans->data = NULL;
    }
    opcache_answer_cleanup(ans);
    return -1;
}

/* A tool of the daemon. With an operation_id, a repeat within OPCACHE_WINDOW_MS gets the first
 * call's answer (marked "replayed") instead of running again; the answer is kept when the
 * outcome is known: success, or the tool's own refusal (not a timeout, a cancel, a busy daemon
 * or no memory, after which a retry runs). */
static int run_local(struct call *c, struct tools_result *out, struct errinfo *err)
{
    const char *name = catalog_tool_name(c->tool);
    const char *op = operation_of(c->args);
    struct opcache_answer ans;
    enum opcache_claim cl;
    struct errinfo mine = {0};
    int rc;
    bool keep;

    if (!op)
        return tools_call(c->svc->tools, c, name, c->args, out, err);
    call_on_cancel(c, op_cancel_hook, c);
    cl = opcache_claim(c->svc->ops, name, op, c->id, OP_WAIT_MS, &ans);
    call_off_cancel(c);
    if (cl != OPCACHE_RUN) {
        log_debug("call: %s %s: operation_id %s %s", c->id, name, op,
                  cl == OPCACHE_REPLAY ? "answered again" : "not run");
        return replayed(c, &ans, cl == OPCACHE_REPLAY, out, err);
    }
    if (!err)
        err = &mine;
    if (call_is_cancelled(c)) { /* a cancel that came while it claimed */
        opcache_finish(c->svc->ops, name, op, &(struct opcache_answer){0}, false);
        errinfo_set(err, ERR_CANCELLED, "%s was cancelled before it started", name);
        return -1;
    }
    rc = tools_call(c->svc->tools, c, name, c->args, out, err);
    keep = rc == 0 || (err->kind != ERR_CANCELLED && err->kind != ERR_TIMEOUT &&
                       err->kind != ERR_UNAVAILABLE && err->kind != ERR_NOMEM);
    opcache_finish(c->svc->ops, name, op,
                   &(struct opcache_answer){
                       .ok = rc == 0,
                       .is_json = rc == 0 && out->is_json,
                       .kind = rc == 0 ? ERR_NONE : err->kind,
                       .data = rc == 0 || out->data ? out->data : err->msg,
                       .len = rc == 0 || out->data ? out->len : strlen(err->msg),
                       .structured = rc == 0 ? out->structured : NULL,
                   },
                   keep && (rc != 0 || out->data));
    return rc;
}

/* A Studio tool: the command goes to the plugin and the call waits for its answer. */
static int run_studio(struct call *c, struct tools_result *out, struct errinfo *err)
{
    struct bridge *b = c->svc->tools ? c->svc->tools->bridge : NULL;
    struct bridge_reply rep;

    if (!b) {
        errinfo_set(err, ERR_UNAVAILABLE, "the Studio bridge is not running in this runboxd");
        return -1;
    }
    call_on_cancel(c, bridge_cancel_hook, c);
    bridge_call_for(b, c->id, c->client, catalog_tool_name(c->tool), c->args, &rep);
    call_off_cancel(c);
    if (!rep.data) {
        errinfo_set(err, ERR_NOMEM, "out of memory waiting for Studio");
        return -1;
    }
    if (rep.ok) {
        out->data = rep.data;
        out->len = rep.len;
        out->is_json = rep.is_json;
        if (studio_answer_finish(c->tool, out, err) < 0) {
            tools_result_cleanup(out); /* on -1, out->data would be taken for the message */
            return -1;
        }
        return 0;
    }
    errinfo_set(err, rep.kind, "%s", rep.data);
    /* The plugin's own message is kept whole, however long (errinfo holds one line). */
    if (rep.len >= sizeof(err->msg) || memchr(rep.data, '\n', rep.len)) {
        out->data = rep.data;
        out->len = rep.len;
    } else {
        free(rep.data);
    }
    return -1;
}

int call_run(struct call *c, struct tools_result *out, struct errinfo *err)
{
    const char *name = catalog_tool_name(c->tool);
    int rc;

    memset(out, 0, sizeof(*out));
    if (call_is_cancelled(c)) {
        errinfo_set(err, ERR_CANCELLED, "%s was cancelled before it started", name);
        log_info("call: %s %s", c->id, err->msg); /* nobody hears the answer: the log does */
        return -1;
    }
    if (c->progress && c->budget >= 0)
        tick_add(c);
    switch (catalog_tool_route(c->tool)) {
    case CATALOG_ROUTE_STUDIO:
        rc = run_studio(c, out, err);
        break;
    case CATALOG_ROUTE_EXTERNAL:
        if (c->svc->tools && c->svc->tools->registry) {
            rc = registry_run(c->svc->tools->registry, c, c->tool, c->args, out, err);
        } else {
            errinfo_set(err, ERR_UNAVAILABLE, "no registry of external MCP servers runs here");
            rc = -1;
        }
        break;
    case CATALOG_ROUTE_LOCAL:
    default:
        rc = run_local(c, out, err);
        break;
    }
    if (c->ticking)
        tick_remove(c);
    if (rc < 0 && call_is_cancelled(c) && err && err->kind != ERR_CANCELLED)
        log_debug("call: %s %s ended after its cancellation: %s", c->id, name, err->msg);
    return rc;
}
