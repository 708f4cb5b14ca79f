/* daemon/registry.c - the outbound registry (see registry.h): the servers, the served names,
 * the snapshot of their tools, prompts and resources, and calls.
 *
 * DESIGN: what the daemon serves from its external servers is one immutable snapshot (a
 * catalog of external tools, the served prompts and resources), rebuilt whenever a server's
 * state or one of its lists changes, and swapped in under the lock. Readers take a reference
 * (a "hold"), so a call keeps the tool it found even when the server's list changes under it.
 * Rebuilds are serialized by build_mu and run on the changing server's thread; the listener
 * (the MCP endpoints' tool table) and the event feed are told after the swap, still under
 * build_mu so that they hear the changes in order. Lock order: build_mu, then a client's lock
 * (reading its lists), then mu; mu is only held to swap or take a hold. */
#include "registry.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "call.h"
#include "catalog.h"
#include "console.h"
#include "events.h"
#include "log.h"
#include "mcpclient.h"
#include "startgate.h"
#include "strfmt.h"
#include "tools.h"

struct served {
    char *name; /* served name (prompt) or URI (resource) */
    size_t server;
    char *orig; /* the server's own name or URI */
};

/* A name set: the names given out in one rebuild, to find collisions; the warnings said. */
struct names {
    char **v;
    size_t n, cap;
};

struct registry_hold {
    atomic_int refs;
    struct catalog *cat; /* the external tools */
    bool *ready;         /* per server: ready when this snapshot was built (its tools are in) */
    struct served *prompts;
    size_t nprompts;
    cJSON *prompt_list; /* served prompts/list entries */
    struct served *resources;
    size_t nresources;
    cJSON *resource_list;
};

struct server {
    struct registry_spec spec; /* owned (moved from the options) */
    struct mcpclient *mc;
    char warnings[512]; /* about its lists (an allow list naming a missing tool), or "" */
};

struct registry {
    struct server *servers;
    size_t n;
    const struct catalog *builtin;
    struct console *console;
    struct events *events;
    struct startgate *gate;   /* how many stdio servers start at once; owned */
    pthread_mutex_t build_mu; /* serializes rebuilds */
    struct names said;        /* what rebuilds logged already (build_mu): each is said once */
    pthread_mutex_t mu;       /* guards snap and the warnings */
    struct registry_hold *snap;
    void (*listener)(void *arg, unsigned lists);
    void *listener_arg;
    bool shut;
};

/* ---- holds ---- */

static void hold_free(struct registry_hold *h)
{
    catalog_free(h->cat);
    free(h->ready);
    for (size_t i = 0; i < h->nprompts; i++) {
        free(h->prompts[i].name);
        free(h->prompts[i].orig);
    }
    for (size_t i = 0; i < h->nresources; i++) {
        free(h->resources[i].name);
        free(h->resources[i].orig);
    }
    free(h->prompts);
    free(h->resources);
    cJSON_Delete(h->prompt_list);
    cJSON_Delete(h->resource_list);
    free(h);
}

void registry_unhold(struct registry_hold *h)
{
    if (h && atomic_fetch_sub(&h->refs, 1) == 1)
        hold_free(h);
}

static struct registry_hold *take_hold(struct registry *r)
{
    struct registry_hold *h;

    pthread_mutex_lock(&r->mu);
    h = r->snap;
    atomic_fetch_add(&h->refs, 1);
    pthread_mutex_unlock(&r->mu);
    return h;
}

/* ---- names ---- */

static bool names_has(const struct names *ns, const char *s)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i], s) == 0)
            return true;
    return false;
}

static int names_add(struct names *ns, const char *s)
{
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 64;
        char **grown = realloc(ns->v, cap * sizeof(*ns->v));

        if (!grown)
            return -1;
        ns->v = grown;
        ns->cap = cap;
    }
    ns->v[ns->n] = strdup(s);
    return ns->v[ns->n] ? (int)(ns->n++, 0) : -1;
}

#define SAID_MAX 1024 /* distinct warnings a registry remembers having logged */

/* Logs what a rebuild found once: rebuilds come with every state change of every server (each
 * retry of one that fails), and said it again each time. build_mu held. */
static void say_once(struct registry *r, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say_once(struct registry *r, enum log_level level, const char *fmt, ...)
{
    char msg[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (names_has(&r->said, msg) || r->said.n >= SAID_MAX || names_add(&r->said, msg) < 0)
        return;
    log_write(level, "%s", msg);
}

static void names_free(struct names *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->v[i]);
    free(ns->v);
}

/* The served name of a server's tool or prompt: prefix__name, made unique against what is
 * taken (earlier servers' names of the same kind; for a tool, the built-in tools too) with
 * "_2", "_3", ... Tools and prompts are apart: a prompt may have a tool's name. */
static void unique_name(struct registry *r, const struct names *taken, const char *prefix,
                        const char *orig, const char *what, char *out, size_t size)
{
    const struct catalog *builtin = strcmp(what, "tool") == 0 ? r->builtin : NULL;
    char base[REGISTRY_NAME_MAX + 1];

    registry_served_name(prefix, orig, base, sizeof(base));
    snprintf(out, size, "%s", base);
    for (int k = 2; names_has(taken, out) || (builtin && catalog_find(builtin, out)); k++) {
        char suffix[16];
        int sl = snprintf(suffix, sizeof(suffix), "_%d", k);
        size_t keep = strlen(base);

        if (keep + (size_t)sl > REGISTRY_NAME_MAX)
            keep = REGISTRY_NAME_MAX - (size_t)sl;
        snprintf(out, size, "%.*s%s", (int)keep, base, suffix);
        if (k == 2)
            say_once(r, LOG_WARN, "registry: %s %s of server %s is served as %s: %s was taken",
                     what, orig, prefix, out, base);
    }
    if (strlen(out) > REGISTRY_NAME_WARN)
        say_once(r, LOG_WARN,
                 "registry: %s name %s is %zu characters; Claude Code's mcp__<server>__ prefix "
                 "takes the whole past 64 (set a shorter \"prefix\")",
                 what, out, strlen(out));
}

static bool listed(const struct registry_strv *sv, const char *name)
{
    for (size_t i = 0; i < sv->n; i++)
        if (strcmp(sv->v[i], name) == 0)
            return true;
    return false;
}

/* ---- the snapshot ---- */

/* One external tool as a catalog entry (see catalog_new_external): what a client is shown of
 * it ("execution" is not: runbox runs no tasks, and calls each tool as a plain call). */
static cJSON *tool_entry(const cJSON *t, const char *served, const struct server *s,
                         const char *orig)
{
    cJSON *e = cJSON_CreateObject(), *meta;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(t, "inputSchema");
    const cJSON *own_meta = cJSON_GetObjectItemCaseSensitive(t, "_meta");
    const cJSON *icons = cJSON_GetObjectItemCaseSensitive(t, "icons");
    static const char *const copied[] = {"title", "description", "outputSchema", "annotations"};

    cJSON_AddStringToObject(e, "name", served);
    for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, copied[i]);
        bool ok = i < 2 ? cJSON_IsString(v) : cJSON_IsObject(v);

        if (ok)
            cJSON_AddItemToObject(e, copied[i], cJSON_Duplicate(v, 1));
    }
    /* A tool without a usable schema takes any object (the server checks it). */
    cJSON_AddItemToObject(e, "inputSchema",
                          cJSON_IsObject(in) ? cJSON_Duplicate(in, 1) : cJSON_CreateObject());
    cJSON_AddStringToObject(e, "route", "external");
    if (cJSON_IsArray(icons))
        cJSON_AddItemToObject(e, "icons", cJSON_Duplicate(icons, 1));
    /* The server's own _meta (an MCP App's ui.resourceUri) is passed on, with where the tool
     * comes from beside it (a key of the server's by the same name gives way). */
    meta = cJSON_IsObject(own_meta) ? cJSON_Duplicate(own_meta, 1) : cJSON_CreateObject();
    cJSON_AddItemToObject(e, "_meta", meta);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "runbox/server");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "runbox/tool");
    cJSON_AddStringToObject(meta, "runbox/server", s->spec.name);
    cJSON_AddStringToObject(meta, "runbox/tool", orig);
    return e;
}

static void add_tools(struct registry *r, size_t si, cJSON *tools, struct names *taken, cJSON *out)
{
    struct server *s = &r->servers[si];
    cJSON *list = mcpclient_tools(s->mc), *t;
    char missing[400] = "";

    cJSON_ArrayForEach(t, list)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
        char served[REGISTRY_NAME_MAX + 16];

        if (!cJSON_IsString(name) || !name->valuestring[0])
            continue;
        if ((s->spec.has_allow && !listed(&s->spec.allow, name->valuestring)) ||
            listed(&s->spec.deny, name->valuestring))
            continue;
        unique_name(r, taken, s->spec.prefix, name->valuestring, "tool", served, sizeof(served));
        if (names_add(taken, served) < 0)
            continue;
        if (r->builtin && catalog_find(r->builtin, name->valuestring))
            say_once(r, LOG_INFO,
                     "registry: %s's tool %s has the name of one of runbox's own tools: the bare "
                     "name calls runbox's; %s calls the server's",
                     s->spec.name, name->valuestring, served);
        cJSON_AddItemToArray(out, tool_entry(t, served, s, name->valuestring));
    }
    /* An allow list naming what the server does not have is a config mistake: say so. */
    for (size_t i = 0; cJSON_GetArraySize(list) && i < s->spec.allow.n; i++) {
        bool found = false;

        cJSON_ArrayForEach(t, list)
        {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");

            found |= cJSON_IsString(name) && strcmp(name->valuestring, s->spec.allow.v[i]) == 0;
        }
        if (!found && strlen(missing) + strlen(s->spec.allow.v[i]) + 4 < sizeof(missing))
            snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
                     missing[0] ? ", " : "", s->spec.allow.v[i]);
    }
    pthread_mutex_lock(&r->mu);
    if (missing[0])
        snprintf(s->warnings, sizeof(s->warnings),
                 "%s.tools names %s, which the server does not have", s->spec.where, missing);
    else if (cJSON_GetArraySize(list))
        s->warnings[0] = '\0';
    pthread_mutex_unlock(&r->mu);
    if (missing[0])
        say_once(r, LOG_WARN, "registry: %s", s->warnings);
    cJSON_Delete(list);
    (void)tools;
}

static int push_served(struct served **v, size_t *n, const char *name, size_t server,
                       const char *orig)
{
    struct served *grown = realloc(*v, (*n + 1) * sizeof(**v));

    if (!grown)
        return -1;
    *v = grown;
    grown[*n].name = strdup(name);
    grown[*n].orig = strdup(orig);
    grown[*n].server = server;
    if (!grown[*n].name || !grown[*n].orig) {
        free(grown[*n].name);
        free(grown[*n].orig);
        return -1;
    }
    (*n)++;
    return 0;
}

static void add_prompts(struct registry *r, size_t si, struct registry_hold *h, struct names *taken)
{
    struct server *s = &r->servers[si];
    cJSON *list = mcpclient_prompts(s->mc), *p;

    cJSON_ArrayForEach(p, list)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
        char served[REGISTRY_NAME_MAX + 16];
        cJSON *e;

        if (!cJSON_IsString(name) || !name->valuestring[0])
            continue;
        unique_name(r, taken, s->spec.prefix, name->valuestring, "prompt", served, sizeof(served));
        if (names_add(taken, served) < 0 ||
            push_served(&h->prompts, &h->nprompts, served, si, name->valuestring) < 0)
            continue;
        e = cJSON_Duplicate(p, 1);
        cJSON_ReplaceItemInObjectCaseSensitive(e, "name", cJSON_CreateString(served));
        cJSON_AddItemToArray(h->prompt_list, e);
    }
    cJSON_Delete(list);
}

/* Resources keep their URIs; one that another server (or runbox itself: file:///, runbox://)
 * already serves gets "<prefix>+" in front. */
static void add_resources(struct registry *r, size_t si, struct registry_hold *h,
                          struct names *uris)
{
    struct server *s = &r->servers[si];
    cJSON *list = mcpclient_resources(s->mc), *res;

    cJSON_ArrayForEach(res, list)
    {
        const cJSON *uri = cJSON_GetObjectItemCaseSensitive(res, "uri");
        char *served;
        cJSON *e;

        if (!cJSON_IsString(uri) || !uri->valuestring[0])
            continue;
        if (names_has(uris, uri->valuestring) || strncmp(uri->valuestring, "file:", 5) == 0 ||
            strncmp(uri->valuestring, "runbox:", 7) == 0)
            served = strfmt_alloc("%s+%s", s->spec.prefix, uri->valuestring);
        else
            served = strdup(uri->valuestring);
        if (!served || names_has(uris, served) || names_add(uris, served) < 0 ||
            push_served(&h->resources, &h->nresources, served, si, uri->valuestring) < 0) {
            free(served);
            continue;
        }
        e = cJSON_Duplicate(res, 1);
        cJSON_ReplaceItemInObjectCaseSensitive(e, "uri", cJSON_CreateString(served));
        cJSON_AddItemToArray(h->resource_list, e);
        free(served);
    }
    cJSON_Delete(list);
}

static struct registry_hold *build(struct registry *r)
{
    struct registry_hold *h = calloc(1, sizeof(*h));
    struct names taken = {0}, prompts = {0}, uris = {0};
    struct errinfo err = {0};
    cJSON *doc = cJSON_CreateObject(), *tools;

    if (h)
        h->ready = calloc(r->n + 1, sizeof(*h->ready));
    if (!h || !doc || !h->ready) {
        if (h)
            free(h->ready);
        free(h);
        cJSON_Delete(doc);
        return NULL;
    }
    atomic_init(&h->refs, 1);
    h->prompt_list = cJSON_CreateArray();
    h->resource_list = cJSON_CreateArray();
    cJSON_AddStringToObject(doc, "group", "external");
    tools = cJSON_AddArrayToObject(doc, "tools");
    for (size_t i = 0; i < r->n; i++) {
        if (!r->servers[i].mc || mcpclient_state(r->servers[i].mc) != MCPCLIENT_READY)
            continue;
        h->ready[i] = true;
        add_tools(r, i, tools, &taken, tools);
        add_prompts(r, i, h, &prompts);
        add_resources(r, i, h, &uris);
    }
    names_free(&taken);
    names_free(&prompts);
    names_free(&uris);
    h->cat = catalog_new_external(doc, &err);
    if (!h->cat) {
        log_error("registry: the external tools could not be served: %s", err.msg);
        hold_free(h);
        return NULL;
    }
    return h;
}

static void rebuild(struct registry *r, unsigned what)
{
    struct registry_hold *h, *old;
    unsigned lists = 0;

    pthread_mutex_lock(&r->build_mu);
    h = build(r);
    if (!h) {
        pthread_mutex_unlock(&r->build_mu);
        return;
    }
    pthread_mutex_lock(&r->mu);
    old = r->snap;
    r->snap = h;
    pthread_mutex_unlock(&r->mu);
    if (what & MCPCLIENT_CHANGED_TOOLS)
        lists |= EVENTS_LIST_TOOLS;
    if (what & MCPCLIENT_CHANGED_PROMPTS)
        lists |= EVENTS_LIST_PROMPTS;
    if (what & MCPCLIENT_CHANGED_RESOURCES)
        lists |= EVENTS_LIST_RESOURCES;
    if (lists && r->listener)
        r->listener(r->listener_arg, lists);
    if (lists)
        events_publish_list_changed(r->events, lists);
    pthread_mutex_unlock(&r->build_mu);
    registry_unhold(old);
}

static void on_changed(void *arg, struct mcpclient *mc, unsigned what)
{
    struct registry *r = arg;

    (void)mc;
    rebuild(r, what);
}

/* ---- life ---- */

/* A stdio command that is not there is a config error found at start, with the key. */
static void check_command(struct registry_spec *s)
{
    const char *path = getenv("PATH");
    char full[4096], msg[1024];
    bool found = false;

    if (s->error || s->transport != REGISTRY_STDIO || !s->command)
        return;
    for (size_t i = 0; i < s->env.n; i++)
        if (strncmp(s->env.v[i], "PATH=", 5) == 0)
            path = s->env.v[i] + 5;
    if (strchr(s->command, '/')) {
        found = access(s->command, X_OK) == 0;
    } else {
        for (const char *p = path ? path : ""; *p && !found;) {
            size_t n = strcspn(p, ":");

            found = n &&
                    (size_t)snprintf(full, sizeof(full), "%.*s/%s", (int)n, p, s->command) <
                        sizeof(full) &&
                    access(full, X_OK) == 0;
            p += n;
            if (*p == ':')
                p++;
        }
    }
    if (found)
        return;
    /* The command as written; a PATH from the entry's "env" may hold a ${env:VAR} value. */
    snprintf(msg, sizeof(msg),
             "%s.command: \"%.200s\" was not found%s%.300s; install it or give its full path",
             s->where, s->shown.command, strchr(s->command, '/') ? "" : " on PATH ",
             strchr(s->command, '/') ? "" : (path ? path : "(unset)"));
    registry_redact(s, msg, sizeof(msg));
    s->error = strdup(msg);
}

struct registry *registry_new(const struct registry_options *opt, struct errinfo *err)
{
    struct registry *r = calloc(1, sizeof(*r));
    size_t n = opt->specs ? opt->specs->n : 0;

    if (!r || !(r->servers = calloc(n ? n : 1, sizeof(*r->servers)))) {
        free(r);
        errinfo_set(err, ERR_NOMEM, "out of memory for the registry");
        return NULL;
    }
    pthread_mutex_init(&r->build_mu, NULL);
    pthread_mutex_init(&r->mu, NULL);
    r->builtin = opt->builtin;
    r->console = opt->console;
    r->events = opt->events;
    r->gate = startgate_new(opt->parallel_starts ? opt->parallel_starts : startgate_cores(),
                            STARTGATE_HOLD_MS, err);
    if (!r->gate) {
        registry_free(r);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        struct server *s = &r->servers[i];
        struct mcpclient_options mo = {.console = opt->console,
                                       .bwrap = opt->bwrap,
                                       .allow_network = opt->allow_network,
                                       .gate = r->gate,
                                       .changed = on_changed,
                                       .arg = r};

        s->spec = opt->specs->v[i]; /* moved: the caller's entry is emptied below */
        memset(&opt->specs->v[i], 0, sizeof(opt->specs->v[i]));
        r->n++;
        check_command(&s->spec);
        if (s->spec.ignored)
            log_warn("registry: %s", s->spec.ignored);
        if (s->spec.error)
            log_error("registry: %s; the server is skipped, the daemon goes on without it",
                      s->spec.error);
        else if (!s->spec.enabled)
            log_info("registry: %s is disabled (\"enabled\": false)", s->spec.where);
        mo.spec = &s->spec;
        s->mc = mcpclient_new(&mo, err);
        if (!s->mc) {
            registry_free(r);
            return NULL;
        }
    }
    r->snap = build(r);
    if (!r->snap) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the registry");
        registry_free(r);
        return NULL;
    }
    return r;
}

void registry_start(struct registry *r)
{
    for (size_t i = 0; i < r->n; i++) {
        struct errinfo err = {0};

        if (mcpclient_start(r->servers[i].mc, &err) < 0)
            log_error("registry: %s", err.msg);
    }
}

void registry_shutdown(struct registry *r)
{
    if (!r || r->shut)
        return;
    r->shut = true;
    startgate_close(r->gate); /* servers waiting for their turn to start give up */
    for (size_t i = 0; i < r->n; i++)
        mcpclient_stop_begin(r->servers[i].mc);
    for (size_t i = 0; i < r->n; i++)
        mcpclient_stop(r->servers[i].mc);
}

void registry_free(struct registry *r)
{
    struct registry_specs specs;

    if (!r)
        return;
    registry_shutdown(r);
    for (size_t i = 0; i < r->n; i++)
        mcpclient_free(r->servers[i].mc);
    /* The specs were moved in one by one: give them back to their cleanup as one array. */
    specs.n = r->n;
    specs.v = calloc(r->n ? r->n : 1, sizeof(*specs.v));
    for (size_t i = 0; specs.v && i < r->n; i++)
        specs.v[i] = r->servers[i].spec;
    if (specs.v)
        registry_specs_cleanup(&specs);
    free(r->servers);
    if (r->snap)
        registry_unhold(r->snap);
    startgate_free(r->gate);
    names_free(&r->said);
    pthread_mutex_destroy(&r->build_mu);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

void registry_set_listener(struct registry *r, void (*fn)(void *arg, unsigned lists), void *arg)
{
    pthread_mutex_lock(&r->build_mu);
    r->listener = fn;
    r->listener_arg = arg;
    pthread_mutex_unlock(&r->build_mu);
}

const struct catalog *registry_tools(struct registry *r, struct registry_hold **hold)
{
    *hold = take_hold(r);
    return (*hold)->cat;
}

/* ---- finding a tool ---- */

/* The server named name[0..len), or when none is, the one whose prefix it is: what a client
 * means by <server>/<tool>. A prefix may be another server's name (x with "prefix": "y" beside
 * y), and then the name wins. */
static const struct server *server_named(const struct registry *r, const char *name, size_t len)
{
    for (int by_prefix = 0; by_prefix < 2; by_prefix++)
        for (size_t i = 0; i < r->n; i++) {
            const struct registry_spec *s = &r->servers[i].spec;
            const char *key = by_prefix ? s->prefix : s->name;

            if (key && strlen(key) == len && strncmp(key, name, len) == 0)
                return &r->servers[i];
        }
    return NULL;
}

static const char *meta_of(const struct catalog_tool *t, const char *key)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(catalog_tool_object(t), "_meta");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, key);

    return cJSON_IsString(v) ? v->valuestring : "";
}

/* The server a name "<server>__<tool>" or "<server>/<tool>" starts with, or NULL; a server's
 * name or prefix may hold "__" itself, so each "__" is tried in turn. */
static const struct server *server_in_name(const struct registry *r, const char *name)
{
    const char *slash = strchr(name, '/');

    for (const char *sep = strstr(name, "__"); sep; sep = strstr(sep + 1, "__")) {
        const struct server *s = server_named(r, name, (size_t)(sep - name));

        if (s)
            return s;
    }
    return slash ? server_named(r, name, (size_t)(slash - name)) : NULL;
}

/* Why a name that looks like a server's tool is not served: its server is not ready. */
static void explain_missing(struct registry *r, const char *name, struct errinfo *err)
{
    const struct server *s = server_in_name(r, name);
    cJSON *st;

    if (!s || mcpclient_state(s->mc) == MCPCLIENT_READY) {
        errinfo_set(err, ERR_NOT_FOUND, "%s", "");
        return;
    }
    st = mcpclient_status_json(s->mc);
    errinfo_set(err, ERR_NOT_FOUND, "%.128s: MCP server %s is %s%s%.300s", name, s->spec.name,
                mcpclient_state_name(mcpclient_state(s->mc)),
                cJSON_IsString(cJSON_GetObjectItem(st, "last_error")) ? ": " : "",
                cJSON_IsString(cJSON_GetObjectItem(st, "last_error"))
                    ? cJSON_GetObjectItem(st, "last_error")->valuestring
                    : "");
    cJSON_Delete(st);
}

const struct catalog_tool *registry_find_tool(struct registry *r, const char *name,
                                              struct registry_hold **hold, struct errinfo *err)
{
    struct registry_hold *h = take_hold(r);
    const struct catalog_tool *t = catalog_find(h->cat, name), *found = NULL;
    const char *slash = strchr(name, '/');
    char list[400] = "";
    size_t matches = 0;

    if (!t) {
        const struct server *s = slash ? server_named(r, name, (size_t)(slash - name)) : NULL;

        for (size_t i = 0; i < catalog_count(h->cat) && (!slash || s); i++) {
            const struct catalog_tool *c = catalog_at(h->cat, i);

            if (strcmp(meta_of(c, "runbox/tool"), slash ? slash + 1 : name) != 0 ||
                (slash && strcmp(meta_of(c, "runbox/server"), s->spec.name) != 0))
                continue;
            found = c;
            matches++;
            if (strlen(list) + strlen(catalog_tool_name(c)) + 4 < sizeof(list))
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
                         list[0] ? ", " : "", catalog_tool_name(c));
        }
        if (matches == 1)
            t = found;
    }
    if (t) {
        *hold = h;
        return t;
    }
    registry_unhold(h);
    *hold = NULL;
    if (matches > 1)
        errinfo_set(err, ERR_NOT_FOUND,
                    "tool name %.100s is ambiguous: %zu servers have it; call one of %s", name,
                    matches, list);
    else
        explain_missing(r, name, err);
    return NULL;
}

/* ---- calls ---- */

/* The server that serves t: the one whose name its _meta carries, never one whose prefix is
 * that name. */
static struct server *server_of(struct registry *r, const struct catalog_tool *t)
{
    const char *name = meta_of(t, "runbox/server");

    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->servers[i].spec.name, name) == 0)
            return &r->servers[i];
    return NULL;
}

/* The text of a CallToolResult's text content, joined (owned), or NULL when it has other
 * content or structuredContent (then the whole result is the answer). */
static char *plain_text(const cJSON *result)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content"), *c;
    size_t len = 0;
    char *out;

    if (cJSON_GetObjectItemCaseSensitive(result, "structuredContent") || !cJSON_IsArray(content))
        return NULL;
    cJSON_ArrayForEach(c, content)
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(c, "text");

        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 ||
            !cJSON_IsString(text))
            return NULL;
        len += strlen(text->valuestring) + 1;
    }
    out = calloc(1, len + 1);
    len = 0;
    cJSON_ArrayForEach(c, content)
    {
        const char *text = cJSON_GetObjectItemCaseSensitive(c, "text")->valuestring;
        size_t tl = strlen(text);

        if (!out)
            break;
        if (len)
            out[len++] = '\n';
        memcpy(out + len, text, tl); /* the sizes were counted above */
        len += tl;
    }
    return out;
}

int registry_run(struct registry *r, struct call *c, const struct catalog_tool *tool,
                 const cJSON *args, struct tools_result *out, struct errinfo *err)
{
    struct server *s = server_of(r, tool);
    cJSON *params = cJSON_CreateObject(), *result = NULL;
    const char *orig = meta_of(tool, "runbox/tool");
    char *text;

    if (!s) {
        cJSON_Delete(params);
        errinfo_set(err, ERR_UNAVAILABLE, "%s: its MCP server is no longer configured",
                    catalog_tool_name(tool));
        return -1;
    }
    cJSON_AddStringToObject(params, "name", orig);
    cJSON_AddItemToObject(params, "arguments",
                          args ? cJSON_Duplicate(args, 1) : cJSON_CreateObject());
    if (mcpclient_request(s->mc, "tools/call", params, c, 0, &result, err) < 0)
        return -1;
    if (!cJSON_IsObject(result) || !cJSON_IsArray(cJSON_GetObjectItem(result, "content"))) {
        cJSON_Delete(result);
        errinfo_set(err, ERR_INVALID, "%s answered tools/call %s without a content array",
                    s->spec.name, orig);
        return -1;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(result, "_meta");
    cJSON_DeleteItemFromObjectCaseSensitive(result, "resultType");
    out->call_result = cJSON_PrintUnformatted(result);
    text = plain_text(result);
    if (text) {
        out->data = text;
        out->len = strlen(text);
    } else {
        out->data = strdup(out->call_result ? out->call_result : "{}");
        out->len = out->data ? strlen(out->data) : 0;
        out->is_json = true;
    }
    out->is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError"));
    cJSON_Delete(result);
    if (!out->data || !out->call_result) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the answer of %s", s->spec.name);
        return -1;
    }
    return 0;
}

/* ---- state ---- */

/* A server's state as clients may rely on it: "ready" only once the snapshot serves its tools
 * (between its handshake and the rebuild that follows, it is still connecting). */
static enum mcpclient_state served_state(struct registry *r, const struct registry_hold *h,
                                         size_t i)
{
    enum mcpclient_state st = mcpclient_state(r->servers[i].mc);

    if (r->servers[i].spec.error)
        return MCPCLIENT_FAILED;
    return st == MCPCLIENT_READY && !h->ready[i] ? MCPCLIENT_CONNECTING : st;
}

size_t registry_connecting(struct registry *r)
{
    struct registry_hold *h = take_hold(r);
    size_t n = 0;

    for (size_t i = 0; i < r->n; i++)
        n += served_state(r, h, i) == MCPCLIENT_CONNECTING;
    registry_unhold(h);
    return n;
}

cJSON *registry_status_json(struct registry *r)
{
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "servers");
    struct registry_hold *h = take_hold(r);

    for (size_t i = 0; i < r->n; i++) {
        cJSON *st = mcpclient_status_json(r->servers[i].mc);

        if (!st)
            continue;
        if (served_state(r, h, i) == MCPCLIENT_CONNECTING)
            cJSON_ReplaceItemInObjectCaseSensitive(st, "state", cJSON_CreateString("connecting"));
        if (r->servers[i].spec.error)
            cJSON_ReplaceItemInObjectCaseSensitive(st, "state", cJSON_CreateString("failed"));
        if (r->servers[i].spec.error)
            cJSON_AddStringToObject(st, "config_error", r->servers[i].spec.error);
        if (r->servers[i].spec.ignored)
            cJSON_AddStringToObject(st, "config_warning", r->servers[i].spec.ignored);
        pthread_mutex_lock(&r->mu);
        if (r->servers[i].warnings[0])
            cJSON_AddStringToObject(st, "warning", r->servers[i].warnings);
        pthread_mutex_unlock(&r->mu);
        cJSON_AddItemToArray(arr, st);
    }
    registry_unhold(h);
    return o;
}

cJSON *registry_health_json(struct registry *r)
{
    cJSON *o = cJSON_CreateObject(), *servers = cJSON_CreateObject();
    struct registry_hold *h = take_hold(r);
    size_t ready = 0;

    for (size_t i = 0; i < r->n; i++) {
        enum mcpclient_state st = served_state(r, h, i);

        ready += st == MCPCLIENT_READY;
        /* A second entry of a name is a config error (GET /mcp-servers lists it): one key. */
        if (!cJSON_GetObjectItemCaseSensitive(servers, r->servers[i].spec.name))
            cJSON_AddStringToObject(servers, r->servers[i].spec.name, mcpclient_state_name(st));
    }
    cJSON_AddNumberToObject(o, "configured", (double)r->n);
    cJSON_AddNumberToObject(o, "ready", (double)ready);
    cJSON_AddItemToObject(o, "servers", servers);
    registry_unhold(h);
    return o;
}

/* ---- prompts and resources ---- */

void registry_list_prompts(struct registry *r, cJSON *arr)
{
    struct registry_hold *h = take_hold(r);
    const cJSON *p;

    cJSON_ArrayForEach(p, h->prompt_list) cJSON_AddItemToArray(arr, cJSON_Duplicate(p, 1));
    registry_unhold(h);
}

void registry_list_resources(struct registry *r, cJSON *arr)
{
    struct registry_hold *h = take_hold(r);
    const cJSON *p;

    cJSON_ArrayForEach(p, h->resource_list) cJSON_AddItemToArray(arr, cJSON_Duplicate(p, 1));
    registry_unhold(h);
}

/* The server of the served prompt or resource called name in list (held), or NULL; *orig gets a
 * copy of the name its server gives it (NULL when out of memory: callers then use name). */
static struct server *find_served(struct registry *r, const struct served *list, size_t n,
                                  const char *name, char **orig)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i].name, name) == 0) {
            *orig = strdup(list[i].orig);
            return &r->servers[list[i].server];
        }
    return NULL;
}
int registry_get_prompt(struct registry *r, const char *name, const cJSON *args, cJSON **out,
                        struct errinfo *err)
{
    struct registry_hold *h = take_hold(r);
    char *orig = NULL;
    struct server *s = find_served(r, h->prompts, h->nprompts, name, &orig);
    cJSON *params;
    int rc;

    registry_unhold(h);
    if (!s) {
        free(orig); /* NULL: nothing was found */
        return 0;
    }
    params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "name", orig ? orig : name);
    if (cJSON_IsObject(args))
        cJSON_AddItemToObject(params, "arguments", cJSON_Duplicate(args, 1));
    free(orig);
    rc = mcpclient_request(s->mc, "prompts/get", params, NULL, 0, out, err);
    if (rc == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(*out, "_meta");
        cJSON_DeleteItemFromObjectCaseSensitive(*out, "resultType");
    }
    return rc < 0 ? -1 : 1;
}

int registry_read_resource(struct registry *r, const char *uri, cJSON **out, struct errinfo *err)
{
    struct registry_hold *h = take_hold(r);
    char *orig = NULL;
    struct server *s = find_served(r, h->resources, h->nresources, uri, &orig);
    cJSON *params, *c;
    int rc;

    registry_unhold(h);
    if (!s) {
        free(orig); /* NULL: nothing was found */
        return 0;
    }
    params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "uri", orig ? orig : uri);
    rc = mcpclient_request(s->mc, "resources/read", params, NULL, 0, out, err);
    if (rc == 0) {
        cJSON_DeleteItemFromObjectCaseSensitive(*out, "_meta");
        cJSON_DeleteItemFromObjectCaseSensitive(*out, "resultType");
        cJSON_DeleteItemFromObjectCaseSensitive(*out, "ttlMs");
        cJSON_DeleteItemFromObjectCaseSensitive(*out, "cacheScope");
        /* The contents name the URI the client asked for. */
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(*out, "contents"))
        {
            const cJSON *cu = cJSON_GetObjectItemCaseSensitive(c, "uri");

            if (cJSON_IsString(cu) && orig && strcmp(cu->valuestring, orig) == 0)
                cJSON_ReplaceItemInObjectCaseSensitive(c, "uri", cJSON_CreateString(uri));
        }
    }
    free(orig);
    return rc < 0 ? -1 : 1;
}
