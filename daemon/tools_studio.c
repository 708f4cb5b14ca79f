/* daemon/tools_studio.c - the Studio tools the daemon answers itself, without a plugin round
 * trip (catalog route "local"): list_studios, set_active_studio, get_console_output,
 * clear_console_output, and get_studio_state, which joins what the daemon knows (the connected
 * windows and their test servers) with the plugin's get_studio_mode. The other Studio tools
 * (route "studio") go to the plugin through bridge_call (call.c). */
#include "tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"
#include "call.h"
#include "console.h"

#define STUDIO_CONSOLE_LIMIT 100 /* get_console_output without limit */

static int json_result(cJSON *j, struct tools_result *out, struct errinfo *err)
{
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;

    cJSON_Delete(j);
    if (!text) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return -1;
    }
    out->data = text;
    out->len = strlen(text);
    out->is_json = true;
    return 0;
}

static int need_bridge(const struct tools_ctx *ctx, struct errinfo *err)
{
    if (ctx->bridge)
        return 0;
    errinfo_set(err, ERR_UNAVAILABLE, "the Studio bridge is not running in this runboxd");
    return -1;
}

static int need_console(const struct tools_ctx *ctx, struct errinfo *err)
{
    if (ctx->console)
        return 0;
    errinfo_set(err, ERR_UNAVAILABLE, "the console is not running in this runboxd");
    return -1;
}

/* The bridge's state as the Studio tools answer it: without "recent" (the last finished commands,
 * for /health and the status page: a person's view, not in the tools' output schemas). */
static cJSON *studio_status(struct bridge *b)
{
    cJSON *st = bridge_status_json(b);

    cJSON_DeleteItemFromObjectCaseSensitive(st, "recent");
    return st;
}

int tools_list_studios(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                       struct tools_result *out, struct errinfo *err)
{
    (void)call;
    (void)args;
    if (need_bridge(ctx, err) < 0)
        return -1;
    return json_result(studio_status(ctx->bridge), out, err);
}

int tools_set_active_studio(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                            struct tools_result *out, struct errinfo *err)
{
    const cJSON *inst = cJSON_GetObjectItemCaseSensitive(args, "instance");

    (void)call;
    if (need_bridge(ctx, err) < 0)
        return -1;
    if (!cJSON_IsString(inst)) {
        errinfo_set(err, ERR_INVALID, "arguments.instance: expected string");
        return -1;
    }
    if (bridge_set_active(ctx->bridge, inst->valuestring, err) < 0)
        return -1;
    return json_result(studio_status(ctx->bridge), out, err);
}

static uint64_t uint_arg(const cJSON *args, const char *name, uint64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0))
        return dflt;
    return (uint64_t)v->valuedouble;
}

/* Cuts the query's one extra entry (asked for to learn whether more are waiting) and says so:
 * after since_id the newest is cut (it comes next time), else the oldest. */
static void cut_extra(cJSON *res, size_t limit, bool after_since)
{
    cJSON *entries = cJSON_GetObjectItemCaseSensitive(res, "entries");
    int n = cJSON_GetArraySize(entries);
    bool cut = n > 0 && (size_t)n > limit;
    cJSON *last, *next = cJSON_GetObjectItemCaseSensitive(res, "next_since_id");

    if (cut)
        cJSON_DeleteItemFromArray(entries, after_since ? n - 1 : 0);
    last = cJSON_GetArrayItem(entries, cJSON_GetArraySize(entries) - 1);
    if (cut && last && cJSON_IsNumber(next))
        cJSON_SetNumberValue(next, cJSON_GetObjectItemCaseSensitive(last, "id")->valuedouble);
    cJSON_AddBoolToObject(res, "truncated", cut);
}

int tools_get_console_output(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                             struct tools_result *out, struct errinfo *err)
{
    struct console_query q = {.level = -1, .source = CONSOLE_SRC_STUDIO};
    size_t limit;
    cJSON *res;

    (void)call;
    if (need_console(ctx, err) < 0)
        return -1;
    q.since_id = uint_arg(args, "since_id", 0);
    limit = (size_t)uint_arg(args, "limit", STUDIO_CONSOLE_LIMIT);
    if (limit == 0 || limit > 1000)
        limit = STUDIO_CONSOLE_LIMIT;
    q.limit = limit + 1;
    res = console_query_json(ctx->console, &q);
    if (res)
        cut_extra(res, limit, q.since_id > 0);
    return json_result(res, out, err);
}

int tools_clear_console_output(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                               struct tools_result *out, struct errinfo *err)
{
    cJSON *j;
    size_t n;

    (void)call;
    (void)args;
    if (need_console(ctx, err) < 0)
        return -1;
    n = console_clear(ctx->console, CONSOLE_SRC_STUDIO);
    j = cJSON_CreateObject();
    if (j && (!cJSON_AddNumberToObject(j, "cleared", (double)n) ||
              !cJSON_AddNumberToObject(j, "latest_id", (double)console_latest_id(ctx->console)))) {
        cJSON_Delete(j);
        j = NULL;
    }
    return json_result(j, out, err);
}

/* ---- get_studio_state ---- */

/* The command get_studio_state sends on its own behalf; the call's cancel reaches it. */
struct state_cmd {
    struct bridge *bridge;
    char id[BRIDGE_ID_MAX];
};

static void state_cancel_hook(void *arg)
{
    const struct state_cmd *sc = arg;

    bridge_cancel(sc->bridge, sc->id);
}

/* The plugin's get_studio_mode answer as an object, or NULL with *why (owned) set. */
static cJSON *plugin_mode(const struct tools_ctx *ctx, struct call *call, char **why)
{
    struct state_cmd sc = {.bridge = ctx->bridge};
    struct bridge_reply rep;
    cJSON *args = cJSON_CreateObject(), *mode = NULL;

    snprintf(sc.id, sizeof(sc.id), "%.50s-state", call ? call_id(call) : "state");
    if (call)
        call_on_cancel(call, state_cancel_hook, &sc);
    bridge_call(ctx->bridge, sc.id, "get_studio_mode", args, &rep);
    if (call)
        call_off_cancel(call);
    cJSON_Delete(args);
    if (rep.ok && rep.is_json)
        mode = cJSON_ParseWithLength(rep.data, rep.len);
    if (!cJSON_IsObject(mode)) {
        cJSON_Delete(mode);
        mode = NULL;
        *why = rep.data ? strdup(rep.data) : NULL;
    }
    bridge_reply_cleanup(&rep);
    return mode;
}

int tools_get_studio_state(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                           struct tools_result *out, struct errinfo *err)
{
    cJSON *st, *res, *mode = NULL;
    char *why = NULL;

    (void)args;
    if (need_bridge(ctx, err) < 0)
        return -1;
    st = bridge_status_json(ctx->bridge);
    res = cJSON_CreateObject();
    if (!st || !res) {
        cJSON_Delete(st);
        cJSON_Delete(res);
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return -1;
    }
    /* A state question is answered even with no Studio: connected false, no windows. */
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(st, "active")))
        mode = plugin_mode(ctx, call, &why);
    if (mode) {
        cJSON *m;

        cJSON_ArrayForEach(m, mode)
        {
            cJSON_AddItemToObject(res, m->string, cJSON_Duplicate(m, true));
        }
        cJSON_Delete(mode);
    } else if (why) {
        cJSON_AddStringToObject(res, "mode_error", why);
    }
    free(why);
    cJSON_AddItemToObject(res, "connected",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(st, "connected"), true));
    cJSON_AddItemToObject(res, "active",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(st, "active"), true));
    cJSON_AddItemToObject(res, "windows", cJSON_DetachItemFromObjectCaseSensitive(st, "instances"));
    cJSON_Delete(st);
    return json_result(res, out, err);
}
