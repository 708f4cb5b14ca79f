/* daemon/api_mcp.c - runboxd's MCP endpoints (see api_mcp.h): the engine's server for the
 * daemon's tools, resources, prompts and completions, and the HTTP transport under it.
 *
 * A tools/call's handler begins a call in the call service (the engine already validated the
 * arguments), ties the two cancellations together (the MCP call's hook cancels the service's
 * call), hands the progress of the service's call to notifications/progress, runs it, and
 * answers: a result as the text (JSON printed) with structuredContent where the tool has an
 * output schema, a failure as isError with {"error":...,"timeout":...}, the same shape runbox
 * gives over stdio. */
#include "api_mcp.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <civetweb.h>

#include "call.h"
#include "catalog.h"
#include "complete.h"
#include "console.h"
#include "events.h"
#include "connwatch.h"
#include "jsonbuf.h"
#include "log.h"
#include "prompts.h"
#include "registry.h"
#include "resources.h"
#include "runbox/mcp.h"
#include "runbox/mcp_http.h"
#include "tools.h"
#include "vfs.h"
#include "watch.h"

struct api_mcp {
    const struct tools_ctx *tools;
    struct call_service *calls;
    struct connwatch *watch;
    const struct catalog *cat; /* the tools served */
    int listen;                /* the event feed listener, or -1 */
    struct mcp_server *srv;
    struct mcp_http *http;
    pthread_mutex_t ext_mu; /* guards ext: the external tools registered with srv */
    cJSON *ext;             /* {served name: its tools/list entry as text} */
};

/* ---- tools ---- */

/* One MCP tools/call on its way through the call service. */
struct mcall {
    struct mcp_call *mc;
    struct call *c;
};

static void cancel_hook(struct mcp_call *mc, void *arg)
{
    (void)mc;
    call_cancel(arg);
}

static void progress_sink(void *ctx, double progress, double total, const char *message)
{
    mcp_call_progress(ctx, progress, total, message);
}

/* A console level as an MCP log level: a run's stdout lines ("log") are info. */
static enum mcp_log_level mcp_level_of(int console_level)
{
    switch (console_level) {
    case CONSOLE_DEBUG:
        return MCP_LOG_DEBUG;
    case CONSOLE_WARN:
        return MCP_LOG_WARNING;
    case CONSOLE_ERROR:
        return MCP_LOG_ERROR;
    default:
        return MCP_LOG_INFO;
    }
}

/* The console entry as the data of notifications/message. Owned or NULL. */
static cJSON *entry_data(const struct console_entry_view *e)
{
    cJSON *d = cJSON_CreateObject();

    if (!d || !cJSON_AddNumberToObject(d, "id", (double)e->id) ||
        !cJSON_AddStringToObject(d, "source", console_source_name(e->source)) ||
        (e->pid && !cJSON_AddNumberToObject(d, "pid", (double)e->pid)) ||
        (e->instance && !cJSON_AddStringToObject(d, "instance", e->instance)) ||
        !cJSON_AddItemToObject(d, "message", cJSON_CreateString(e->message))) {
        cJSON_Delete(d);
        return NULL;
    }
    return d;
}

/* A modern request's own log (its run's console entries at its logLevel). */
static void log_sink(void *ctx, const struct console_entry_view *e)
{
    mcp_call_log(ctx, mcp_level_of(e->level), console_source_name(e->source), entry_data(e));
}

/* isError with {"error":msg,"timeout":timeout}, as runbox answers a failed call. */
static void tool_failed(struct mcp_call *mc, const char *msg, bool timeout)
{
    struct jsonbuf b = JSONBUF_INIT((size_t)64 << 20);
    char *text;

    jsonbuf_puts(&b, "{\"error\":", NULL);
    jsonbuf_put_json_string(&b, msg, strlen(msg), NULL);
    jsonbuf_puts(&b, timeout ? ",\"timeout\":true}" : ",\"timeout\":false}", NULL);
    text = jsonbuf_take(&b, NULL);
    mcp_call_tool_error(mc, text ? text : "out of memory");
    free(text);
}

/* Answers mc with the call's outcome and ends the call. */
static void finish(struct mcall *m)
{
    struct tools_result res = {0};
    struct errinfo err = {0};
    struct mcp_call *mc = m->mc;
    cJSON *structured = NULL;

    if (call_run(m->c, &res, &err) < 0) {
        mcp_call_on_cancel(mc, NULL, NULL);
        tool_failed(mc, res.data ? res.data : err.msg, err.kind == ERR_TIMEOUT);
    } else if (res.call_result) {
        /* An external server's result goes to the client as the server gave it. */
        mcp_call_on_cancel(mc, NULL, NULL);
        mcp_call_result(mc, cJSON_Parse(res.call_result));
    } else if (catalog_tool_answers_image(call_tool(m->c)) && res.is_json) {
        /* A picture (capture_screenshot): image content, the other facts as text. */
        cJSON *doc = cJSON_ParseWithLength(res.data, res.len);
        cJSON *result = catalog_image_result(doc);

        cJSON_Delete(doc);
        mcp_call_on_cancel(mc, NULL, NULL);
        if (result)
            mcp_call_result(mc, result);
        else
            tool_failed(mc, "runboxd could not build the image result (out of memory)", false);
    } else {
        mcp_call_on_cancel(mc, NULL, NULL);
        if (res.structured)
            structured = cJSON_Parse(res.structured);
        else if (res.is_json)
            structured = cJSON_ParseWithLength(res.data, res.len);
        mcp_call_result_text_structured(mc, res.data ? res.data : "", res.len, structured);
    }
    tools_result_cleanup(&res);
    call_end(m->c);
    free(m);
}

static void *finish_thread(void *arg)
{
    finish(arg);
    return NULL;
}

static void on_tool(void *arg, struct mcp_call *mc)
{
    struct api_mcp *a = arg;
    struct errinfo err = {0};
    struct mcall *m = calloc(1, sizeof(*m));
    pthread_attr_t attr;
    pthread_t t;
    bool long_call, logs;
    char client[32];

    if (!m) {
        tool_failed(mc, "runboxd is out of memory", false);
        return;
    }
    m->mc = mc;
    /* The engine checked the listed schema only (catalog_listed_schema): the call service
     * checks the whole one, ceilings included. */
    m->c = call_begin(a->calls, mcp_call_name(mc), mcp_call_arguments(mc), NULL, &err);
    if (!m->c) {
        free(m);
        tool_failed(mc, err.msg, false);
        return;
    }
    /* Each session is a client of its own: Studio serves clients in turn (bridge_call_for). */
    snprintf(client, sizeof(client), "mcp:%" PRIu64, mcp_call_session_serial(mc));
    call_set_client(m->c, client);
    if (mcp_call_wants_progress(mc))
        call_set_progress(m->c, progress_sink, mc);
    /* Legacy sessions hear every console entry at their level (on_event); a modern request
     * hears only about its own work. */
    logs = mcp_call_is_modern(mc) && mcp_call_log_level(mc) >= 0;
    if (logs)
        call_set_log(m->c, log_sink, mc);
    mcp_call_on_cancel(mc, cancel_hook, m->c);
    long_call = catalog_tool_budget(call_tool(m->c)) != CATALOG_BUDGET_NONE;
    /* A POST's worker waits for the answer anyway: a long call runs there too (no thread to
     * start, two hand-overs fewer), its client watched by the transport; not one whose
     * progress or log other threads report (the worker could not send them while it waits). */
    if (!long_call || (!mcp_call_wants_progress(mc) && !logs && mcp_call_may_block(mc))) {
        finish(m);
        return;
    }
    /* Elsewhere (WebSocket, legacy SSE, a batch) a long call gets a thread of its own: the
     * session it came on goes on reading. */
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, finish_thread, m) != 0) {
        log_warn("api-mcp: no thread for call %s; it runs on the request's thread", call_id(m->c));
        finish(m);
    }
    pthread_attr_destroy(&attr);
}

/* ---- the external tools (registry.h) ---- */

/* Registers one external tool with the engine. */
static void add_external(struct api_mcp *a, const struct catalog_tool *t)
{
    struct errinfo err = {0};

    if (catalog_register_external(t, a->srv, on_tool, a, &err) < 0)
        log_warn("api-mcp: external tool %s is not served on /mcp: %s", catalog_tool_name(t),
                 err.msg);
}

/* Makes the engine's external tools those of the registry's snapshot: removes what went or
 * changed, adds what came or changed, so an unchanged tool is never missing for a moment. */
static void sync_external(struct api_mcp *a)
{
    struct registry_hold *hold;
    const struct catalog *ext = registry_tools(a->tools->registry, &hold);
    cJSON *now = cJSON_CreateObject(), *old;

    pthread_mutex_lock(&a->ext_mu);
    for (size_t i = 0; now && i < catalog_count(ext); i++) {
        const struct catalog_tool *t = catalog_at(ext, i);
        char *text = cJSON_PrintUnformatted(catalog_tool_object(t));

        if (text)
            cJSON_AddStringToObject(now, catalog_tool_name(t), text);
        cJSON_free(text);
    }
    cJSON_ArrayForEach(old, a->ext)
    {
        const cJSON *same = cJSON_GetObjectItemCaseSensitive(now, old->string);

        if (!same || strcmp(same->valuestring, old->valuestring) != 0)
            mcp_server_remove_tool(a->srv, old->string, NULL);
    }
    for (size_t i = 0; now && i < catalog_count(ext); i++) {
        const struct catalog_tool *t = catalog_at(ext, i);
        const cJSON *was = cJSON_GetObjectItemCaseSensitive(a->ext, catalog_tool_name(t));
        const cJSON *is = cJSON_GetObjectItemCaseSensitive(now, catalog_tool_name(t));

        if (!was || !is || strcmp(was->valuestring, is->valuestring) != 0)
            add_external(a, t);
    }
    cJSON_Delete(a->ext);
    a->ext = now;
    pthread_mutex_unlock(&a->ext_mu);
    registry_unhold(hold);
}

/* The registry's lists changed (on a server's thread, before the change goes on the event
 * feed, whose list_changed reaches the sessions through on_event): the tool table first. */
static void on_registry_change(void *arg, unsigned lists)
{
    struct api_mcp *a = arg;

    if (lists & EVENTS_LIST_TOOLS)
        sync_external(a);
}

/* "<server>/<tool>" and bare names of external tools: the call service finds them. */
static int resolve_alias(void *arg, const char *name, char *canonical, size_t size, char *why,
                         size_t why_size)
{
    struct api_mcp *a = arg;
    struct registry_hold *hold = NULL;
    struct errinfo err = {0};
    const struct catalog_tool *t;

    if (catalog_find(a->cat, name) || catalog_find(catalog_builtin(), name))
        return 0;
    t = registry_find_tool(a->tools->registry, name, &hold, &err);
    if (t)
        snprintf(canonical, size, "%s", catalog_tool_name(t));
    registry_unhold(hold);
    if (t)
        return 1;
    if (err.msg[0]) {
        snprintf(why, why_size, "%s", err.msg);
        return -1;
    }
    return 0;
}

/* ---- resources ---- */

static void resource_error(struct mcp_call *mc, const struct errinfo *err)
{
    cJSON *data = NULL;

    if (err->kind == ERR_NOT_FOUND) {
        data = cJSON_CreateObject();
        cJSON_AddStringToObject(data, "uri", mcp_call_name(mc) ? mcp_call_name(mc) : "");
        mcp_call_error(mc, mcp_call_is_modern(mc) ? MCP_INVALID_PARAMS : MCP_RESOURCE_NOT_FOUND,
                       err->msg, data);
        return;
    }
    mcp_call_error(mc, err->kind == ERR_INVALID ? MCP_INVALID_PARAMS : MCP_INTERNAL_ERROR, err->msg,
                   NULL);
}

static void on_resources_list(void *arg, struct mcp_call *mc)
{
    struct api_mcp *a = arg;
    const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(mcp_call_params(mc), "cursor");
    struct errinfo err = {0};
    cJSON *out = NULL;

    if (resources_list(a->tools, cJSON_IsString(cursor) ? cursor->valuestring : NULL, &out, &err) <
        0)
        resource_error(mc, &err);
    else
        mcp_call_result(mc, out);
}

static void on_resources_read(void *arg, struct mcp_call *mc)
{
    struct api_mcp *a = arg;
    struct errinfo err = {0};
    cJSON *out = NULL;

    if (resources_read(a->tools, mcp_call_name(mc), &out, &err) < 0)
        resource_error(mc, &err);
    else
        mcp_call_result(mc, out);
}

/* ---- prompts ---- */

static void on_prompts_list(void *arg, struct mcp_call *mc)
{
    struct api_mcp *a = arg;
    cJSON *out = prompts_list(a->tools);

    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(mcp_call_params(mc), "cursor"))) {
        cJSON_Delete(out);
        mcp_call_error(mc, MCP_INVALID_PARAMS,
                       "prompts/list: invalid cursor (everything fits one page; send no cursor)",
                       NULL);
        return;
    }
    if (!out)
        mcp_call_error(mc, MCP_INTERNAL_ERROR, "out of memory", NULL);
    else
        mcp_call_result(mc, out);
}

static void on_prompts_get(void *arg, struct mcp_call *mc)
{
    struct api_mcp *a = arg;
    struct errinfo err = {0};
    cJSON *out = NULL;

    if (prompts_get(a->tools, mcp_call_name(mc), mcp_call_arguments(mc), &out, &err) < 0)
        mcp_call_error(mc, err.kind == ERR_NOMEM ? MCP_INTERNAL_ERROR : MCP_INVALID_PARAMS, err.msg,
                       NULL);
    else
        mcp_call_result(mc, out);
}

/* ---- completion ---- */

static void on_complete(void *arg, struct mcp_call *mc)
{
    struct api_mcp *a = arg;
    struct errinfo err = {0};
    cJSON *out = NULL;

    if (complete_answer(a->tools, mcp_call_params(mc), &out, &err) < 0)
        mcp_call_error(mc, err.kind == ERR_NOMEM ? MCP_INTERNAL_ERROR : MCP_INVALID_PARAMS, err.msg,
                       NULL);
    else
        mcp_call_result(mc, out);
}

/* ---- the transport's hooks ---- */

static int admit_stream(void *ctx, struct errinfo *err)
{
    struct api_mcp *a = ctx;

    return call_service_admit(a->calls, CALL_BUDGET_STREAM, err);
}

static void release_stream(void *ctx)
{
    struct api_mcp *a = ctx;

    call_service_release(a->calls, CALL_BUDGET_STREAM);
}

static int watch_conn(void *ctx, struct mg_connection *conn, void (*fn)(void *arg), void *arg)
{
    struct api_mcp *a = ctx;
    const struct mg_request_info *ri = mg_get_request_info(conn);
    int fd = connwatch_find_socket(ri->remote_addr, ri->remote_port, ri->server_port);

    return fd < 0 ? -1 : connwatch_add(a->watch, fd, fn, arg, NULL);
}

static void unwatch_conn(void *ctx, int handle)
{
    struct api_mcp *a = ctx;

    connwatch_remove(a->watch, handle);
}

/* ---- notifications ---- */

static void on_event(void *arg, const struct events_event *ev)
{
    struct api_mcp *a = arg;

    switch (ev->kind) {
    case EVENTS_CONSOLE:
        mcp_server_log(a->srv, mcp_level_of(ev->console->level),
                       console_source_name(ev->console->source), entry_data(ev->console));
        break;
    case EVENTS_LIST_CHANGED:
        mcp_server_notify_list_changed(a->srv, ev->lists); /* the same bits as enum mcp_list */
        break;
    case EVENTS_RESOURCE_UPDATED:
        mcp_server_notify_resource_updated(a->srv, ev->uri);
        break;
    case EVENTS_DROPPED:
        break;
    }
}

static int on_subscribe(void *arg, const char *uri, struct errinfo *err)
{
    struct api_mcp *a = arg;

    if (!a->tools->watch) {
        errinfo_set(err, ERR_UNAVAILABLE, "resource updates are not available in this runboxd");
        return -1;
    }
    return watch_add(a->tools->watch, uri, err);
}

static void on_unsubscribe(void *arg, const char *uri)
{
    struct api_mcp *a = arg;

    if (a->tools->watch)
        watch_remove(a->tools->watch, uri);
}

/* ---- set-up ---- */

static const char instructions[] =
    "Runbox gives you a workspace of files, a sandbox that runs node, npm, python3, git and sh "
    "in it, a console of everything that ran, and tools for a connected Roblox Studio. Paths are "
    "absolute inside the workspace (\"/\" is its root).";

static int add_content(struct api_mcp *a, struct errinfo *err)
{
    const struct mcp_resource_template files = {
        .uri_template = "file:///{path}",
        .name = "Workspace file",
        .description = "A file of the workspace by its path, e.g. file:///src/main.js; text, or "
                       "base64 blob for binary files",
        .read = on_resources_read,
        .arg = a,
    };

    return catalog_register_tools(a->cat, a->srv, on_tool, a, err) < 0 ||
                   mcp_server_add_resource_template(a->srv, &files, err) < 0 ||
                   mcp_server_set_resource_provider(a->srv, on_resources_list, on_resources_read, a,
                                                    err) < 0 ||
                   mcp_server_set_prompt_provider(a->srv, on_prompts_list, on_prompts_get, a, err) <
                       0 ||
                   mcp_server_set_completion(a->srv, on_complete, a, err) < 0
               ? -1
               : 0;
}

struct api_mcp *api_mcp_new(const struct api_mcp_options *opt, struct errinfo *err)
{
    /* List changes of resources and updates of subscribed ones are told (watch.c); the tools
     * and prompts lists do not change. */
    struct mcp_server_info info = {.name = "runboxd",
                                   .version = RUNBOX_VERSION,
                                   .instructions = instructions,
                                   .notifies = opt->tools && opt->tools->watch
                                                   ? MCP_NOTIFY_RESOURCES | MCP_NOTIFY_UPDATES
                                                   : 0};
    struct api_mcp *a = calloc(1, sizeof(*a));
    struct mcp_http_options hopt = {
        .mcp_path = "/mcp",
        .sse_path = "/sse",
        .message_path = "/message",
        .ws_path = "/ws",
        .session_max = opt->sessions_max,
        .session_idle_ms = opt->session_idle_s * 1000,
        .session_max_name = "--mcp-sessions",
        .admit = admit_stream,
        .release = release_stream,
        .watch = watch_conn,
        .unwatch = unwatch_conn,
    };

    if (!a) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the MCP endpoints");
        return NULL;
    }
    a->tools = opt->tools;
    a->calls = opt->calls;
    a->cat = opt->catalog ? opt->catalog : catalog_builtin();
    a->watch = opt->watch;
    a->listen = -1;
    pthread_mutex_init(&a->ext_mu, NULL);
    if (a->tools && a->tools->registry)
        info.notifies |= MCP_NOTIFY_TOOLS | MCP_NOTIFY_PROMPTS | MCP_NOTIFY_RESOURCES;
    a->srv = mcp_server_new(&info, err);
    if (!a->srv || add_content(a, err) < 0)
        goto fail;
    {
        const struct mcp_interest in = {
            .subscribe = on_subscribe, .unsubscribe = on_unsubscribe, .arg = a};

        if (mcp_server_set_interest(a->srv, &in, err) < 0)
            goto fail;
    }
    if (a->tools && a->tools->events) {
        a->listen = events_listen(a->tools->events,
                                  EVENTS_CONSOLE | EVENTS_LIST_CHANGED | EVENTS_RESOURCE_UPDATED,
                                  on_event, a, err);
        if (a->listen < 0)
            goto fail;
    }
    /* External servers' lists change while clients are connected: the event feed tells the
     * sessions (on_event); the tool table follows the registry first (on_registry_change). */
    if (a->tools && a->tools->registry) {
        mcp_server_set_tool_resolver(a->srv, resolve_alias, a);
        registry_set_listener(a->tools->registry, on_registry_change, a);
        sync_external(a);
    }
    hopt.server = a->srv;
    hopt.ctx = a;
    a->http = mcp_http_new(&hopt, err);
    if (!a->http)
        goto fail;
    return a;
fail:
    api_mcp_free(a);
    return NULL;
}

int api_mcp_attach_ws(struct api_mcp *m, struct mg_context *ctx,
                      bool (*origin_ok)(void *ctx, const char *origin), void *origin_ctx,
                      struct errinfo *err)
{
    return mcp_http_attach_ws(m->http, ctx, origin_ok, origin_ctx, err);
}

bool api_mcp_is_path(const struct api_mcp *m, const char *path)
{
    return mcp_http_is_path(m->http, path);
}

bool api_mcp_is_ws_path(const struct api_mcp *m, const char *path)
{
    (void)m;
    return strcmp(path, "/ws") == 0;
}

int api_mcp_handle(struct api_mcp *m, struct mg_connection *conn)
{
    return mcp_http_handle(m->http, conn);
}

void api_mcp_shutdown(struct api_mcp *m)
{
    if (m && m->http)
        mcp_http_shutdown(m->http);
}

void api_mcp_free(struct api_mcp *m)
{
    if (!m)
        return;
    if (m->tools)
        events_unlisten(m->tools->events, m->listen);
    if (m->tools && m->tools->registry)
        registry_set_listener(m->tools->registry, NULL, NULL);
    mcp_http_free(m->http);
    mcp_server_free(m->srv);
    cJSON_Delete(m->ext);
    pthread_mutex_destroy(&m->ext_mu);
    free(m);
}

cJSON *api_mcp_status_json(struct api_mcp *m)
{
    return mcp_http_status_json(m->http);
}
