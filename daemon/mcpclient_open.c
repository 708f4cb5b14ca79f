/* daemon/mcpclient_open.c - an MCP client's side of opening a session (mcpclient_core.h): the
 * messages it sends, its internal requests (answered by a callback on the client's thread),
 * server/discover with its fall-back to initialize, and reading the tools, prompts and resources
 * lists, page by page, until the server is ready. */
#include "mcpclient_core.h"

#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clocks.h"
#include "log.h"
#include "registry.h"
#include "startgate.h"

#define LIST_PAGES_MAX 100

static const char *const legacy_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                              "2024-11-05"};
#define MODERN_VERSION "2026-07-28"

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
char *mcpclient__request_text(struct mcpclient *c, uint64_t id, const char *method, cJSON *params,
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

char *mcpclient__notification_text(const char *method, cJSON *params)
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

void mcpclient__handshake_fail(struct mcpclient *c, const char *fmt, ...)
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
        mcpclient__handshake_fail(c, "out of memory");
        return NULL;
    }
    p->c = c;
    p->cb = cb;
    p->deadline_ms = deadline_ms;
    pthread_mutex_lock(&c->mu);
    p->id = c->next_id++;
    p->gen = c->gen;
    if (mcpclient__enqueue_locked(c, mcpclient__request_text(c, p->id, method, params, false),
                                  &err) < 0) {
        pthread_mutex_unlock(&c->mu);
        free(p);
        mcpclient__handshake_fail(c, "%s", err.msg);
        return NULL;
    }
    p->next = c->pending;
    c->pending = p;
    pthread_mutex_unlock(&c->mu);
    mcpclient__wake(c);
    return p;
}

static void send_notification(struct mcpclient *c, const char *method, cJSON *params)
{
    struct errinfo err = {0};

    pthread_mutex_lock(&c->mu);
    mcpclient__enqueue_locked(c, mcpclient__notification_text(method, params), &err);
    pthread_mutex_unlock(&c->mu);
    mcpclient__wake(c);
}

void mcpclient__changed(struct mcpclient *c, unsigned what)
{
    if (c->opt.changed)
        c->opt.changed(c->opt.arg, c, what);
}

const char *mcpclient__list_method(unsigned list)
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

/* The start gate's slot goes back once the server is ready or the attempt ended. */
void mcpclient__leave_gate(struct mcpclient *c)
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
    mcpclient__leave_gate(c);
    log_info("mcp %s: ready (%s)", c->spec->name, c->protocol);
    mcpclient__changed(c, MCPCLIENT_CHANGED_STATE | MCPCLIENT_CHANGED_TOOLS |
                              MCPCLIENT_CHANGED_PROMPTS | MCPCLIENT_CHANGED_RESOURCES);
}

/* FNV-1a of a cursor; never 0, which stands for "no cursor". */
static uint64_t cursor_hash(const char *cursor)
{
    uint64_t h = 1469598103934665603ULL;

    for (const unsigned char *p = (const unsigned char *)cursor; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h ? h : 1;
}

/* True when acc already has an item with its name (a resource: its uri): a server whose pages
 * repeat themselves. */
static bool listed_already(const cJSON *acc, const cJSON *it, const char *key)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(it, key), *e;

    if (!cJSON_IsString(k))
        return false;
    cJSON_ArrayForEach(e, acc)
    {
        const cJSON *ek = cJSON_GetObjectItemCaseSensitive(e, key);

        if (cJSON_IsString(ek) && strcmp(ek->valuestring, k->valuestring) == 0)
            return true;
    }
    return false;
}

/* One page of a list arrived: keep it, read the next or install the whole list. A page that
 * repeats an item already read, or a cursor that repeats the one asked with, is a server going
 * round in circles: the repeats are left out and the list ends there. */
static void on_list_page(struct mcpclient *c, struct pending *p, cJSON *result, const cJSON *error)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(result, list_key(p->list));
    const cJSON *next = cJSON_GetObjectItemCaseSensitive(result, "nextCursor");
    cJSON *acc = p->acc, *it, **slot;
    const char *key = p->list == MCPCLIENT_CHANGED_RESOURCES ? "uri" : "name";
    bool handshake, repeats = false, more;
    int dropped = 0;

    p->acc = NULL;
    if (error || !cJSON_IsArray(items)) {
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(error, "message");

        cJSON_Delete(acc);
        if (c->state != MCPCLIENT_READY)
            mcpclient__handshake_fail(c, "%s failed: %.200s", mcpclient__list_method(p->list),
                                      cJSON_IsString(msg) ? msg->valuestring
                                                          : "the answer has no array of items");
        else
            log_warn("mcp %s: %s failed after a list change: %s", c->spec->name,
                     mcpclient__list_method(p->list),
                     cJSON_IsString(msg) ? msg->valuestring : "bad answer");
        return;
    }
    while ((it = cJSON_DetachItemFromArray((cJSON *)items, 0)) != NULL) {
        if (cJSON_GetArraySize(acc) >= MCPCLIENT_LIST_MAX) {
            cJSON_Delete(it);
            dropped++;
            continue;
        }
        if (listed_already(acc, it, key)) {
            repeats = true;
            cJSON_Delete(it);
            continue;
        }
        cJSON_AddItemToArray(acc, it);
    }
    if (cJSON_IsString(next) && next->valuestring[0] && p->cursor_hash &&
        cursor_hash(next->valuestring) == p->cursor_hash)
        repeats = true;
    if (repeats)
        log_warn("mcp %s: %s repeats itself (an item or the cursor it was asked with): the "
                 "repeats are left out and the list ends at page %d",
                 c->spec->name, mcpclient__list_method(p->list), p->pages + 1);
    more = !repeats && cJSON_IsString(next) && next->valuestring[0];
    if (more && p->pages + 1 < LIST_PAGES_MAX && cJSON_GetArraySize(acc) < MCPCLIENT_LIST_MAX) {
        mcpclient__read_list(c, p->list, acc, p->pages + 1, next->valuestring);
        return;
    }
    if (dropped || more) /* a limit, not the server, ended the list */
        log_warn("mcp %s: %s has more than runbox keeps (%d items, %d pages): %s", c->spec->name,
                 mcpclient__list_method(p->list), MCPCLIENT_LIST_MAX, LIST_PAGES_MAX,
                 dropped ? "the items past the limit are left out"
                         : "the pages past the limit are not read");
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
        mcpclient__changed(c, p->list);
    else if (!c->lists_pending)
        become_ready(c);
}

void mcpclient__read_list(struct mcpclient *c, unsigned list, cJSON *acc, int pages,
                          const char *cursor)
{
    cJSON *params = cJSON_CreateObject();
    struct pending *p;

    if (cursor)
        cJSON_AddStringToObject(params, "cursor", cursor);
    if (!acc)
        acc = cJSON_CreateArray();
    p = send_internal(c, mcpclient__list_method(list), params, on_list_page,
                      c->state == MCPCLIENT_READY ? clocks_mono_ms() + c->spec->timeout_ms : 0);
    if (!p) {
        cJSON_Delete(acc);
        return;
    }
    pthread_mutex_lock(&c->mu);
    p->acc = acc;
    p->pages = pages;
    p->cursor_hash = cursor ? cursor_hash(cursor) : 0;
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
            mcpclient__read_list(c, lists[i], NULL, 0, NULL);
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

        mcpclient__handshake_fail(c, "initialize failed: %.300s",
                                  cJSON_IsString(msg) ? msg->valuestring
                                                      : "an error without a message");
        return;
    }
    for (size_t i = 0; cJSON_IsString(version) && i < 4; i++)
        known |= strcmp(version->valuestring, legacy_versions[i]) == 0;
    if (!known) {
        mcpclient__handshake_fail(
            c,
            "answered initialize with protocolVersion %.40s, which runbox does not "
            "speak (it speaks %s ... %s)",
            cJSON_IsString(version) ? version->valuestring : "(none)", legacy_versions[3],
            legacy_versions[0]);
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
