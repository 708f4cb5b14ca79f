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
#include "log.h"
#include "schema.h"
#include "tools.h"

struct call_service {
    const struct catalog *cat;
    const struct tools_ctx *tools;
    int max[CALL_BUDGET_COUNT];
    atomic_int in_use[CALL_BUDGET_COUNT];
    char id_prefix[32];
    atomic_uint_fast64_t next_id;
};

struct call {
    struct call_service *svc;
    const struct catalog_tool *tool;
    const cJSON *args; /* borrowed */
    int budget;        /* the row it holds, or -1 */
    char id[48];
    pthread_mutex_t mu;
    bool cancelled;
    void (*hook)(void *arg);
    void *hook_arg;
    call_progress_fn progress;
    void *progress_ctx;
};

static const char *const budget_names[CALL_BUDGET_COUNT] = {"long", "search", "stream"};
static const int budget_defaults[CALL_BUDGET_COUNT] = {
    CALL_LONG_MAX_DEFAULT, CALL_SEARCH_MAX_DEFAULT, CALL_STREAM_MAX_DEFAULT};
static const char *const budget_what[CALL_BUDGET_COUNT] = {
    "calls that can take long (exec, kill, Studio tools)", "searches of the workspace",
    "open streams (SSE, WebSocket)"};

/* ---- the service ---- */

struct call_service *call_service_new(const struct call_service_options *opt, struct errinfo *err)
{
    struct call_service *svc = calloc(1, sizeof(*svc));

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
    return svc;
}

void call_service_free(struct call_service *svc)
{
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

void call_service_mint_id(struct call_service *svc, char *buf, size_t size)
{
    snprintf(buf, size, "%s-%" PRIuFAST64, svc->id_prefix,
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
    case CATALOG_BUDGET_NONE:
        break;
    }
    return -1;
}

struct call *call_begin(struct call_service *svc, const char *name, const cJSON *args,
                        unsigned flags, struct schema_report *rep, struct errinfo *err)
{
    const struct catalog_tool *tool = catalog_find(svc->cat, name);
    struct schema_report local;
    struct call *c;
    int row;

    if (!tool) {
        if (catalog_find(catalog_builtin(), name))
            errinfo_set(err, ERR_NOT_FOUND,
                        "tool %.128s is not served: runboxd runs with a --tools profile without "
                        "it; GET /tools lists the tools it serves",
                        name);
        else
            errinfo_set(err, ERR_NOT_FOUND, "unknown tool: %.128s; GET /tools lists the tools",
                        name);
        return NULL;
    }
    if (!(flags & CALL_PREVALIDATED)) {
        if (!rep)
            rep = &local;
        if (schema_validate(catalog_tool_input_schema(tool), args, "arguments", rep) < 0) {
            errinfo_set(err, ERR_INVALID, "invalid arguments for %s: %s", name,
                        rep->count ? rep->msgs[0] : "rejected by the schema");
            return NULL;
        }
    }
    row = budget_row(tool);
    if (row >= 0 && call_service_admit(svc, (enum call_budget)row, err) < 0)
        return NULL;
    c = calloc(1, sizeof(*c));
    if (!c || pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        if (row >= 0)
            call_service_release(svc, (enum call_budget)row);
        errinfo_set(err, ERR_NOMEM, "out of memory starting a call of %s", name);
        return NULL;
    }
    c->svc = svc;
    c->tool = tool;
    c->args = args;
    c->budget = row;
    call_service_mint_id(svc, c->id, sizeof(c->id));
    return c;
}

void call_end(struct call *c)
{
    if (!c)
        return;
    if (c->budget >= 0)
        call_service_release(c->svc, (enum call_budget)c->budget);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const char *call_id(const struct call *c)
{
    return c->id;
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

bool call_wants_progress(const struct call *c)
{
    return c && c->progress;
}

void call_progress(struct call *c, double progress, double total, const char *message)
{
    if (c && c->progress && !call_is_cancelled(c))
        c->progress(c->progress_ctx, progress, total, message);
}

/* ---- running ---- */

static void bridge_cancel_hook(void *arg)
{
    struct call *c = arg;

    bridge_cancel(c->svc->tools->bridge, c->id);
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
    bridge_call(b, c->id, catalog_tool_name(c->tool), c->args, &rep);
    call_off_cancel(c);
    if (!rep.data) {
        errinfo_set(err, ERR_NOMEM, "out of memory waiting for Studio");
        return -1;
    }
    if (rep.ok) {
        out->data = rep.data;
        out->len = rep.len;
        out->is_json = rep.is_json;
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
        return -1;
    }
    switch (catalog_tool_route(c->tool)) {
    case CATALOG_ROUTE_STUDIO:
        rc = run_studio(c, out, err);
        break;
    case CATALOG_ROUTE_LOCAL:
    default:
        rc = tools_call(c->svc->tools, c, name, c->args, out, err);
        break;
    }
    if (rc < 0 && call_is_cancelled(c) && err && err->kind != ERR_CANCELLED)
        log_debug("call: %s %s ended after its cancellation: %s", c->id, name, err->msg);
    return rc;
}
