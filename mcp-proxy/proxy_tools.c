/* mcp-proxy/proxy_tools.c - the external MCP servers' tools, as runboxd lists them, served by
 * runbox beside its own (see proxy.h).
 *
 * DESIGN
 * runboxd's GET /tools lists its own tools and then the outbound registry's, each of those with
 * _meta {"runbox/server", "runbox/tool"}. runbox serves its own tools from the compiled-in
 * catalog (its RUNBOX_TOOLS profile), so it takes only the external entries, builds a catalog of
 * them (catalog_new_external: lenient, since an external server wrote them) and makes the
 * engine's external tools match it: what went or changed is removed, what came or changed is
 * added, and the client hears notifications/tools/list_changed when anything did. A call of one
 * goes to POST /tool/<served name> like any other (proxy.c); the engine checks its arguments
 * with the upstream's schema first, as runboxd's /mcp does.
 *
 * When: the first request of the client that concerns tools (tools/list, tools/call) starts the
 * first GET /tools, and that line and every later one wait until it ends, so the first list
 * already has the external tools (initialize, pings and notifications before it are handled at
 * once: runbox still answers initialize without loading libcurl), FIRST_WAIT_MS (30 s) at
 * most: a daemon that never answers holds nobody up for good. After that a GET /tools runs
 * whenever runboxd says its tools changed (list_changed on GET /events, which is followed from
 * the first answer on), whenever that stream (re)starts (a restarted daemon may serve other
 * tools; a change between the first GET /tools and the stream is caught too), when autostart
 * brought the daemon up, and when a daemon that was not reachable first answers a request.
 * Fetches never overlap: a change during one fetches again after it.
 *
 * Names: "<server>__<tool>" is the served name itself. "<server>/<tool>" and a bare tool name
 * that exactly one external server has are aliases the engine resolves through resolve_alias,
 * as on /mcp; a built-in tool's name is never an alias (even one the profile leaves out).
 * Everything runs on the loop's thread. */
#include "proxy.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "log.h"
#include "runbox/mcp.h"
#include "upstream.h"

#define FETCH_TIMEOUT_MS 30000L /* one GET /tools */
/* How long the client's lines wait for the first list at most: as long as the request may
 * take, so that a daemon slow to answer (a loaded machine) is still waited for, while one that
 * never answers holds nobody up for good. */
#define FIRST_WAIT_MS  ((int)FETCH_TIMEOUT_MS)
#define CANDIDATES_MAX 400 /* bytes of an ambiguous name's candidate list */

enum { TOOLS_IDLE, TOOLS_FIRST, TOOLS_LIVE };

struct held_line {
    struct held_line *next;
    size_t len;
    char text[]; /* len bytes, not NUL-terminated */
};

void proxy_tools_init(struct proxy_tools *t, const struct proxy_tools_config *cfg)
{
    memset(t, 0, sizeof(*t));
    t->cfg = *cfg;
    t->state = TOOLS_IDLE;
    mcp_server_set_tool_resolver(cfg->srv, proxy_tools_resolve, t);
}

void proxy_tools_cleanup(struct proxy_tools *t)
{
    struct held_line *h = t->held;

    if (t->req)
        upstream_cancel(t->cfg.up, t->req);
    t->req = NULL;
    while (h) {
        struct held_line *next = h->next;

        free(h);
        h = next;
    }
    t->held = t->held_tail = NULL;
    catalog_free(t->ext);
    t->ext = NULL;
    cJSON_Delete(t->served);
    t->served = NULL;
}

/* ---- the lines that wait for the first list ---- */

/* True when the JSON-RPC message (or a batch) has a method beginning with "tools/". */
static bool concerns_tools(const char *line, size_t len)
{
    cJSON *doc = cJSON_ParseWithLength(line, len);
    const cJSON *m = cJSON_IsArray(doc) ? doc->child : doc;
    bool yes = false;

    for (; m && !yes; m = cJSON_IsArray(doc) ? m->next : NULL) {
        const cJSON *method = cJSON_GetObjectItemCaseSensitive(m, "method");

        yes = cJSON_IsString(method) && strncmp(method->valuestring, "tools/", 6) == 0;
    }
    cJSON_Delete(doc);
    return yes;
}

static bool keep_line(struct proxy_tools *t, const char *line, size_t len)
{
    struct held_line *h = malloc(sizeof(*h) + len);

    if (!h) {
        log_warn("proxy: out of memory holding a request until runboxd's tools are known; it "
                 "is handled now");
        return false;
    }
    h->next = NULL;
    h->len = len;
    memcpy(h->text, line, len);
    if (t->held_tail)
        t->held_tail->next = h;
    else
        t->held = h;
    t->held_tail = h;
    return true;
}

bool proxy_tools_hold(struct proxy_tools *t, const char *line, size_t len)
{
    if (t->state == TOOLS_IDLE) {
        if (!concerns_tools(line, len))
            return false;
        t->state = TOOLS_FIRST;
        t->due = true;
    }
    if (t->state == TOOLS_FIRST || t->held)
        return keep_line(t, line, len);
    return false;
}

bool proxy_tools_holding(const struct proxy_tools *t)
{
    return t->held != NULL;
}

/* ---- the served tools ---- */

/* The engine's form of an external tool (catalog_register_external copies its fields). */
static void add_tool(struct proxy_tools *t, const struct catalog_tool *ct)
{
    struct errinfo err = {0};

    if (catalog_register_external(ct, t->cfg.srv, t->cfg.handler, t->cfg.handler_arg, &err) < 0)
        log_warn("proxy: external tool %s is not served: %s", catalog_tool_name(ct), err.msg);
}

/* The external entries of GET /tools's "tools" as a catalog document, or NULL. */
static cJSON *external_doc(const cJSON *tools)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *arr = doc ? cJSON_AddArrayToObject(doc, "tools") : NULL;
    const cJSON *e;

    if (!arr || !cJSON_AddStringToObject(doc, "group", "external")) {
        cJSON_Delete(doc);
        return NULL;
    }
    cJSON_ArrayForEach(e, tools)
    {
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(e, "_meta");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        cJSON *copy;

        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(meta, "runbox/server")) ||
            !cJSON_IsString(name) || catalog_find(catalog_builtin(), name->valuestring))
            continue;
        copy = cJSON_Duplicate(e, true);
        if (!copy || !cJSON_AddStringToObject(copy, "route", "external")) {
            cJSON_Delete(copy);
            cJSON_Delete(doc);
            return NULL;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "budget"); /* runboxd's business */
        cJSON_AddItemToArray(arr, copy);
    }
    return doc;
}

/* Makes the engine's external tools those of cat (taken). Returns whether anything changed. */
static bool sync_tools(struct proxy_tools *t, struct catalog *cat)
{
    cJSON *now = cJSON_CreateObject(), *old;
    bool changed = false;

    for (size_t i = 0; now && i < catalog_count(cat); i++) {
        const struct catalog_tool *ct = catalog_at(cat, i);
        char *text = cJSON_PrintUnformatted(catalog_tool_object(ct));

        if (!text || !cJSON_AddStringToObject(now, catalog_tool_name(ct), text)) {
            cJSON_Delete(now);
            now = NULL;
        }
        cJSON_free(text);
    }
    if (!now) {
        log_warn("proxy: out of memory updating the external tools; the old list stays");
        catalog_free(cat);
        return false;
    }
    cJSON_ArrayForEach(old, t->served)
    {
        const cJSON *same = cJSON_GetObjectItemCaseSensitive(now, old->string);

        if (!same || strcmp(same->valuestring, old->valuestring) != 0) {
            mcp_server_remove_tool(t->cfg.srv, old->string, NULL);
            changed = true;
        }
    }
    for (size_t i = 0; i < catalog_count(cat); i++) {
        const struct catalog_tool *ct = catalog_at(cat, i);
        const cJSON *was = cJSON_GetObjectItemCaseSensitive(t->served, catalog_tool_name(ct));
        const cJSON *is = cJSON_GetObjectItemCaseSensitive(now, catalog_tool_name(ct));

        if (!was || strcmp(was->valuestring, is->valuestring) != 0) {
            add_tool(t, ct);
            changed = true;
        }
    }
    cJSON_Delete(t->served);
    t->served = now;
    catalog_free(t->ext);
    t->ext = cat;
    return changed;
}

/* GET /tools answered 200: serve its external tools. False when the answer is not a list. */
static bool apply_list(struct proxy_tools *t, const char *body, size_t len)
{
    cJSON *doc = cJSON_ParseWithLength(body, len), *ext;
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(doc, "tools");
    struct errinfo err = {0};
    struct catalog *cat;

    if (!cJSON_IsArray(tools)) {
        log_warn("proxy: runboxd's GET /tools is not {\"tools\":[...]}; the external tools "
                 "stay as they were");
        cJSON_Delete(doc);
        return false;
    }
    ext = external_doc(tools);
    cJSON_Delete(doc);
    cat = ext ? catalog_new_external(ext, &err) : NULL; /* takes ext */
    if (!cat) {
        log_warn("proxy: the external tools of runboxd's GET /tools cannot be served: %s",
                 ext ? err.msg : "out of memory");
        return true;
    }
    log_debug("proxy: runboxd serves %zu external tools", catalog_count(cat));
    /* Before the client's first list there is nobody to tell. */
    if (sync_tools(t, cat) && t->state == TOOLS_LIVE)
        mcp_server_notify_list_changed(t->cfg.srv, MCP_LIST_TOOLS);
    return true;
}

static void on_list(void *ctx, const struct upstream_reply *reply)
{
    struct proxy_tools *t = ctx;

    t->req = NULL;
    if (reply->outcome == UPSTREAM_ANSWERED && reply->status == 200) {
        t->reached = true;
        /* From now on runboxd says when its tools change. */
        if (apply_list(t, reply->body, reply->body_len))
            proxy_follow_want(t->cfg.follow);
        /* The list's parse (about 180 KiB of cJSON for the catalog) and libcurl's start, just
         * before it, leave free heap behind: give it back (proxy-mem.mjs: 1448 -> 1250 KiB of
         * heap after 2000 calls). This runs once per tools change, not per call. */
        malloc_trim(0);
    } else if (reply->outcome == UPSTREAM_ANSWERED) {
        t->reached = true;
        log_warn("proxy: runboxd refused GET /tools (HTTP %ld): %.300s; only runbox's own tools "
                 "are listed",
                 reply->status, reply->body);
    } else {
        log_debug("proxy: GET /tools did not reach runboxd (%s); only runbox's own tools are "
                  "listed until it answers",
                  reply->error);
    }
    if (t->state == TOOLS_FIRST)
        t->state = TOOLS_LIVE;
}

void proxy_tools_refresh(struct proxy_tools *t)
{
    if (t->state != TOOLS_IDLE)
        t->due = true;
}

void proxy_tools_contact(struct proxy_tools *t)
{
    if (!t->reached && t->state == TOOLS_LIVE) {
        t->reached = true; /* once: a failing fetch is not repeated for every call */
        t->due = true;
    }
}

int proxy_tools_tick(struct proxy_tools *t, int64_t now_ms)
{
    if (t->state == TOOLS_FIRST && !t->first_deadline)
        t->first_deadline = now_ms + FIRST_WAIT_MS;
    if (t->state == TOOLS_FIRST && now_ms >= t->first_deadline) {
        /* A daemon that does not answer holds nobody up: the list comes when it does, with
         * notifications/tools/list_changed. */
        log_warn("proxy: runboxd did not list its tools within %d ms; going on with runbox's "
                 "own",
                 FIRST_WAIT_MS);
        t->state = TOOLS_LIVE;
    }
    if (t->due && !t->req) {
        struct errinfo err = {0};

        t->due = false;
        t->req = upstream_get(t->cfg.up, "/tools", FETCH_TIMEOUT_MS, on_list, t, &err);
        if (!t->req) {
            log_warn("proxy: cannot ask runboxd for its tools: %s", err.msg);
            if (t->state == TOOLS_FIRST)
                t->state = TOOLS_LIVE;
        }
    }
    if (t->state != TOOLS_FIRST) {
        /* The waiting lines, in their order; a line handled here may hold none. */
        while (t->held) {
            struct held_line *h = t->held;

            t->held = h->next;
            if (!t->held)
                t->held_tail = NULL;
            t->cfg.replay(t->cfg.replay_ctx, h->text, h->len);
            free(h);
        }
    }
    return t->state == TOOLS_FIRST ? (int)(t->first_deadline - now_ms) : -1;
}

/* ---- aliases ---- */

static const char *meta_of(const struct catalog_tool *ct, const char *key)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(catalog_tool_object(ct), "_meta");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, key);

    return cJSON_IsString(v) ? v->valuestring : "";
}

/* Whether ct is <server>/<tool>: its server by name, or by the prefix of its served name. */
/* True when ct is tool of the server named server[0..slen) or, by_prefix, of the server whose
 * served names begin with that prefix. */
static bool is_server_tool(const struct catalog_tool *ct, const char *server, size_t slen,
                           const char *tool, bool by_prefix)
{
    const char *served = catalog_tool_name(ct);

    if (strcmp(meta_of(ct, "runbox/tool"), tool) != 0)
        return false;
    if (!by_prefix)
        return strlen(meta_of(ct, "runbox/server")) == slen &&
               strncmp(meta_of(ct, "runbox/server"), server, slen) == 0;
    return strncmp(served, server, slen) == 0 && strncmp(served + slen, "__", 2) == 0 &&
           strcmp(served + slen + 2, tool) == 0;
}

int proxy_tools_resolve(void *arg, const char *name, char *canonical, size_t size, char *why,
                        size_t why_size)
{
    struct proxy_tools *t = arg;
    const char *slash = strchr(name, '/');
    const struct catalog_tool *found = NULL;
    char list[CANDIDATES_MAX] = "";
    size_t matches = 0, used = 0;

    if (!t->ext || catalog_find(catalog_builtin(), name))
        return 0;
    /* <server>/<tool>: server is a server's name; only when no server has that name, a prefix
     * (as runboxd resolves it: the other server's tool must never be the one called). */
    for (int by_prefix = 0; by_prefix < 2 && matches == 0; by_prefix++)
        for (size_t i = 0; i < catalog_count(t->ext); i++) {
            const struct catalog_tool *ct = catalog_at(t->ext, i);
            bool hit = slash
                           ? is_server_tool(ct, name, (size_t)(slash - name), slash + 1, by_prefix)
                           : !by_prefix && strcmp(meta_of(ct, "runbox/tool"), name) == 0;
            int n;

            if (!hit)
                continue;
            found = ct;
            matches++;
            n = snprintf(list + used, sizeof(list) - used, "%s%s", used ? ", " : "",
                         catalog_tool_name(ct));
            if (n > 0 && used + (size_t)n < sizeof(list))
                used += (size_t)n;
            else
                list[used] = '\0'; /* the list says as many as fit */
        }
    if (matches == 1) {
        snprintf(canonical, size, "%s", catalog_tool_name(found));
        return 1;
    }
    if (matches > 1) {
        snprintf(why, why_size,
                 "tool name %.100s is ambiguous: %zu servers have it; call one of %s", name,
                 matches, list);
        return -1;
    }
    return 0;
}
