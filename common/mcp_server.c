/* common/mcp_server.c - the server: its tables of tools, resources, templates and prompts, its
 * capabilities, and the notifications it sends to every session (see runbox/mcp.h).
 *
 * DESIGN: tools keep the order they were added in (tools/list is deterministic) and a sorted
 * index of names for the binary search of every tools/call. Each tool's tools/list entry is
 * printed when it is added; the list's text joins them only when a tools/list asks for it after
 * a change (tools_gen), under its own mutex, so adding a hundred tools at start costs no hundred
 * rebuilds. A tool added as text is checked and compacted without a tree (json_compact.c) and
 * its schema parsed at its first call: runbox registers its whole catalog at every start.
 *
 * Broadcasts (list changes, resource updates, session logs) visit the list of sessions: each is
 * kept alive by a reference taken under sessions_mu, then asked, under its own mutex, what of it
 * the client wants; the messages are sent with no lock held. */
#include "mcp_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_compact.h"
#include "jsonrpc.h"
#include "log.h"
#include "schema.h"

#define MCP_NAME_MAX 128

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* A copy of s, or NULL when s is NULL; *failed when the copy could not be made. */
static char *copy_opt(const char *s, bool *failed)
{
    char *d = dup_or_null(s);

    if (s && !d)
        *failed = true;
    return d;
}

/* Grows an array of n items of size sz to hold one more; -1 when out of memory. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz)
{
    size_t ncap;
    void *p;

    if (n < *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 16;
    p = realloc(*arr, ncap * sz);
    if (!p)
        return -1;
    *arr = p;
    *cap = ncap;
    return 0;
}

static bool name_ok(const char *name)
{
    size_t n = 0;

    if (!name)
        return false;
    for (; name[n]; n++) {
        char ch = name[n];

        if (n >= MCP_NAME_MAX)
            return false;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '.' || ch == '-'))
            return false;
    }
    return n > 0;
}

/* ---- life ---- */

struct mcp_server *mcp_server_new(const struct mcp_server_info *info, struct errinfo *err)
{
    struct mcp_server *srv;
    bool failed = false;

    if (!info || !info->name || !info->version) {
        errinfo_set(err, ERR_INVALID, "mcp_server_new: the server info needs a name and a version");
        return NULL;
    }
    srv = calloc(1, sizeof(*srv));
    if (!srv) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the MCP server");
        return NULL;
    }
    srv->name = copy_opt(info->name, &failed);
    srv->version = copy_opt(info->version, &failed);
    srv->title = copy_opt(info->title, &failed);
    srv->instructions = copy_opt(info->instructions, &failed);
    srv->notifies = info->notifies;
    if (failed || pthread_rwlock_init(&srv->lock, NULL) != 0) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the MCP server");
        free(srv->name);
        free(srv->version);
        free(srv->title);
        free(srv->instructions);
        free(srv);
        return NULL;
    }
    pthread_mutex_init(&srv->schema_mu, NULL);
    pthread_mutex_init(&srv->tools_json_mu, NULL);
    pthread_mutex_init(&srv->sessions_mu, NULL);
    srv->tools_json_gen = (uint64_t)-1;
    return srv;
}

static void free_tool(struct srv_tool *t)
{
    free(t->name);
    free(t->entry);
    free(t->input_text);
    cJSON_Delete(atomic_load_explicit(&t->input_schema, memory_order_relaxed));
}

void mcp_server_free(struct mcp_server *srv)
{
    if (!srv)
        return;
    if (srv->sessions)
        log_error("mcp: mcp_server_free with sessions still open; they are leaked");
    for (size_t i = 0; i < srv->ntools; i++)
        free_tool(&srv->tools[i]);
    free(srv->tools);
    free(srv->tool_index);
    free(srv->tools_json);
    for (size_t i = 0; i < srv->nresources; i++) {
        struct srv_resource *r = &srv->resources[i];

        free(r->uri);
        free(r->name);
        free(r->title);
        free(r->description);
        free(r->mime_type);
    }
    free(srv->resources);
    for (size_t i = 0; i < srv->ntemplates; i++) {
        struct srv_template *t = &srv->templates[i];

        free(t->uri_template);
        free(t->name);
        free(t->title);
        free(t->description);
        free(t->mime_type);
    }
    free(srv->templates);
    for (size_t i = 0; i < srv->nprompts; i++) {
        free(srv->prompts[i].name);
        free(srv->prompts[i].title);
        free(srv->prompts[i].description);
        cJSON_Delete(srv->prompts[i].arguments);
    }
    free(srv->prompts);
    free(srv->name);
    free(srv->version);
    free(srv->title);
    free(srv->instructions);
    pthread_mutex_destroy(&srv->schema_mu);
    pthread_mutex_destroy(&srv->tools_json_mu);
    pthread_mutex_destroy(&srv->sessions_mu);
    pthread_rwlock_destroy(&srv->lock);
    free(srv);
}

/* ---- tools ---- */

/* Where name goes in the sorted index: the first entry not before it (srv->lock held). */
static size_t index_lower_bound(const struct mcp_server *srv, const char *name)
{
    size_t lo = 0, hi = srv->ntools;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (strcmp(srv->tools[srv->tool_index[mid]].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Gives the index room for as many tools as srv->tools has (after grow; srv->lock held for
 * writing): 0, or -1 (memory). glibc's realloc to the size a block has costs nothing. */
static int index_reserve(struct mcp_server *srv)
{
    size_t *idx = realloc(srv->tool_index, srv->tools_cap * sizeof(*idx));

    if (!idx)
        return -1;
    srv->tool_index = idx;
    return 0;
}

/* Enters tools[ntools] (just appended, not yet counted) in the sorted index, whose room
 * index_reserve made; one binary search and a move, not a sort of every name (a server
 * registering its 70 tools at start sorted 70 times). srv->lock held for writing. */
static void index_insert(struct mcp_server *srv)
{
    size_t at = index_lower_bound(srv, srv->tools[srv->ntools].name);

    memmove(&srv->tool_index[at + 1], &srv->tool_index[at],
            (srv->ntools - at) * sizeof(srv->tool_index[0]));
    srv->tool_index[at] = srv->ntools;
    srv->ntools++;
}

/* Takes tools[i] out of the index before the tools after it move down one (srv->lock held for
 * writing, ntools not yet decremented). */
static void index_remove(struct mcp_server *srv, size_t i)
{
    size_t k = 0;

    for (size_t j = 0; j < srv->ntools; j++) {
        size_t v = srv->tool_index[j];

        if (v != i)
            srv->tool_index[k++] = v > i ? v - 1 : v;
    }
}

const struct srv_tool *mcp__find_tool(const struct mcp_server *srv, const char *name)
{
    size_t lo = 0, hi = srv->ntools;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct srv_tool *t = &srv->tools[srv->tool_index[mid]];
        int c = strcmp(name, t->name);

        if (c == 0)
            return t;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* "sampling,roots" into MCP_NEEDS_* bits; -1 for an unknown name. */
static int parse_requires(const char *s)
{
    static const struct {
        const char *name;
        unsigned bit;
    } caps[] = {{"sampling", MCP_NEEDS_SAMPLING},
                {"elicitation", MCP_NEEDS_ELICITATION},
                {"roots", MCP_NEEDS_ROOTS}};
    unsigned bits = 0;

    while (s && *s) {
        size_t n = strcspn(s, ",");
        bool known = false;

        for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
            if (strlen(caps[i].name) == n && strncmp(s, caps[i].name, n) == 0) {
                bits |= caps[i].bit;
                known = true;
            }
        if (!known)
            return -1;
        s += n;
        if (*s == ',')
            s++;
    }
    return (int)bits;
}

/* A tool's schema or annotations given as text: checked and compacted into *out (owned) when
 * text is not NULL, which must then be a JSON object. */
static int compact_arg(const char *tool, const char *what, const char *text, char **out,
                       size_t *len, struct errinfo *err)
{
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);
    struct errinfo why = {0};
    size_t len_in;
    int first;

    *out = NULL;
    *len = 0;
    if (!text)
        return 0;
    len_in = strlen(text);
    /* The copy is at most as long: one allocation. */
    first = jsonbuf_reserve(&b, len_in, &why) < 0 ? -1 : json_compact(text, len_in, &b, &why);
    if (first != '{') {
        jsonbuf_cleanup(&b);
        if (first < 0 && why.kind != ERR_INVALID) {
            errinfo_set(err, why.kind, "tool %.128s: %s: %s", tool, what, why.msg);
            return -1;
        }
        if (first < 0)
            errinfo_set(err, ERR_INVALID, "tool %.128s: %s is %s", tool, what, why.msg);
        else
            errinfo_set(err, ERR_INVALID, "tool %.128s: %s is not a JSON object", tool, what);
        return -1;
    }
    *out = jsonbuf_take(&b, len);
    if (!*out) {
        errinfo_set(err, ERR_NOMEM, "out of memory adding tool %.128s", tool);
        return -1;
    }
    return 0;
}

/* Prints a tree into *out (owned), or leaves NULL for a NULL tree. */
static int print_arg(const char *tool, const cJSON *tree, char **out, size_t *len,
                     struct errinfo *err)
{
    *out = NULL;
    *len = 0;
    if (!tree)
        return 0;
    *out = cJSON_PrintUnformatted(tree);
    if (!*out) {
        errinfo_set(err, ERR_NOMEM, "out of memory adding tool %.128s", tool);
        return -1;
    }
    *len = strlen(*out);
    return 0;
}

/* The JSON texts of a tool's entry beside its name, title and description; each NULL (with
 * length 0) when the tool has none, but in. */
struct entry_parts {
    const char *in, *out, *ann, *extra;
    size_t in_len, out_len, ann_len, extra_len;
};

/* The members of mcp_tool.extra may not stand in for the fields the engine lists itself. */
static int check_extra(const char *tool, const char *text, size_t len, struct errinfo *err)
{
    static const char *const listed[] = {"name",        "title",        "description",
                                         "inputSchema", "outputSchema", "annotations"};
    cJSON *obj = cJSON_ParseWithLength(text, len);
    const cJSON *m;
    int rc = 0;

    if (!obj) {
        errinfo_set(err, ERR_NOMEM, "out of memory adding tool %.128s", tool);
        return -1;
    }
    cJSON_ArrayForEach(m, obj)
    {
        for (size_t i = 0; rc == 0 && i < sizeof(listed) / sizeof(listed[0]); i++)
            if (strcmp(m->string, listed[i]) == 0) {
                errinfo_set(err, ERR_INVALID,
                            "tool %.128s: extra has \"%s\", a field of its own in struct mcp_tool",
                            tool, listed[i]);
                rc = -1;
            }
    }
    cJSON_Delete(obj);
    return rc;
}

/* The compact text of tool->extra in *out (owned; NULL when there is none or it is {}). */
static int extra_arg(const struct mcp_tool *tool, char **out, size_t *len, struct errinfo *err)
{
    if (compact_arg(tool->name, "extra", tool->extra, out, len, err) < 0)
        return -1;
    if (*out && *len <= 2) { /* {} adds nothing */
        free(*out);
        *out = NULL;
        *len = 0;
    }
    if (*out && check_extra(tool->name, *out, *len, err) < 0) {
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* One tool's tools/list entry: its name, title and description, then the parts. Owned, or NULL
 * (memory). */
static char *make_entry(const struct mcp_tool *tool, const struct entry_parts *p, size_t *len)
{
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);
    size_t title = tool->title ? strlen(tool->title) : 0;
    size_t desc = tool->description ? strlen(tool->description) : 0;

    /* Room for all of it, escapes aside: one allocation for most tools. */
    jsonbuf_reserve(&b,
                    96 + strlen(tool->name) + title + desc + p->in_len + p->out_len + p->ann_len +
                        p->extra_len,
                    NULL);
    jsonbuf_puts(&b, "{\"name\":", NULL);
    jsonbuf_put_json_string(&b, tool->name, strlen(tool->name), NULL);
    if (tool->title) {
        jsonbuf_puts(&b, ",\"title\":", NULL);
        jsonbuf_put_json_string(&b, tool->title, strlen(tool->title), NULL);
    }
    if (tool->description) {
        jsonbuf_puts(&b, ",\"description\":", NULL);
        jsonbuf_put_json_string(&b, tool->description, strlen(tool->description), NULL);
    }
    jsonbuf_puts(&b, ",\"inputSchema\":", NULL);
    jsonbuf_put(&b, p->in, p->in_len, NULL);
    if (p->out) {
        jsonbuf_puts(&b, ",\"outputSchema\":", NULL);
        jsonbuf_put(&b, p->out, p->out_len, NULL);
    }
    if (p->ann) {
        jsonbuf_puts(&b, ",\"annotations\":", NULL);
        jsonbuf_put(&b, p->ann, p->ann_len, NULL);
    }
    if (p->extra) { /* its members, without the braces */
        jsonbuf_puts(&b, ",", NULL);
        jsonbuf_put(&b, p->extra + 1, p->extra_len - 2, NULL);
    }
    jsonbuf_puts(&b, "}", NULL);
    return jsonbuf_take(&b, len);
}

/* Checks what both ways of adding a tool share and adds t (whose entry and schema are made)
 * to the tables. Frees t's contents on failure. */
static int add_tool(struct mcp_server *srv, const struct mcp_tool *tool, struct srv_tool *t,
                    struct errinfo *err)
{
    bool failed = false;

    t->name = copy_opt(tool->name, &failed);
    t->handler = tool->handler;
    t->arg = tool->arg;
    if (failed) {
        free_tool(t);
        errinfo_set(err, ERR_NOMEM, "out of memory adding tool %s", tool->name);
        return -1;
    }
    pthread_rwlock_wrlock(&srv->lock);
    if (mcp__find_tool(srv, t->name)) {
        pthread_rwlock_unlock(&srv->lock);
        errinfo_set(err, ERR_EXISTS, "a tool named %s is already there", t->name);
        free_tool(t);
        return -1;
    }
    if (grow((void **)&srv->tools, &srv->tools_cap, srv->ntools, sizeof(*t)) < 0 ||
        index_reserve(srv) < 0) {
        pthread_rwlock_unlock(&srv->lock);
        free_tool(t);
        errinfo_set(err, ERR_NOMEM, "out of memory adding tool %s", tool->name);
        return -1;
    }
    srv->tools[srv->ntools] = *t;
    index_insert(srv);
    srv->tools_gen++;
    pthread_rwlock_unlock(&srv->lock);
    return 0;
}

/* The checks of a tool's name, handler and needs; -1 with err set. */
static int check_tool(const struct mcp_tool *tool, struct errinfo *err)
{
    if (!name_ok(tool->name)) {
        errinfo_set(err, ERR_INVALID, "tool name \"%.140s\" does not match [A-Za-z0-9_.-]{1,128}",
                    tool->name ? tool->name : "");
        return -1;
    }
    if (!tool->handler) {
        errinfo_set(err, ERR_INVALID, "tool %s has no handler", tool->name);
        return -1;
    }
    if (parse_requires(tool->requires) < 0) {
        errinfo_set(err, ERR_INVALID,
                    "tool %s: requires must name sampling, elicitation or roots, got \"%.60s\"",
                    tool->name, tool->requires);
        return -1;
    }
    return 0;
}

int mcp_server_add_tool(struct mcp_server *srv, const struct mcp_tool *tool, struct errinfo *err)
{
    struct srv_tool t = {0};
    char *out = NULL, *ann = NULL, *extra = NULL;
    struct entry_parts parts = {0};

    if (check_tool(tool, err) < 0)
        return -1;
    if (compact_arg(tool->name, "inputSchema",
                    tool->input_schema ? tool->input_schema : "{\"type\":\"object\"}",
                    &t.input_text, &parts.in_len, err) < 0 ||
        compact_arg(tool->name, "outputSchema", tool->output_schema, &out, &parts.out_len, err) <
            0 ||
        compact_arg(tool->name, "annotations", tool->annotations, &ann, &parts.ann_len, err) < 0 ||
        extra_arg(tool, &extra, &parts.extra_len, err) < 0) {
        free(t.input_text);
        free(out);
        free(ann);
        return -1;
    }
    parts.in = t.input_text;
    parts.out = out;
    parts.ann = ann;
    parts.extra = extra;
    t.entry = make_entry(tool, &parts, &t.entry_len);
    t.has_output_schema = out != NULL;
    t.requires = (unsigned)parse_requires(tool->requires);
    free(out);
    free(ann);
    free(extra);
    if (!t.entry) {
        free_tool(&t);
        errinfo_set(err, ERR_NOMEM, "out of memory adding tool %s", tool->name);
        return -1;
    }
    return add_tool(srv, tool, &t, err);
}

int mcp_server_add_tool_parsed(struct mcp_server *srv, const struct mcp_tool *tool,
                               cJSON *input_schema, cJSON *output_schema, cJSON *annotations,
                               struct errinfo *err)
{
    struct srv_tool t = {0};
    char *in = NULL, *out = NULL, *ann = NULL, *extra = NULL;
    struct entry_parts parts = {0};
    int rc = -1;

    if (check_tool(tool, err) < 0)
        goto out;
    if (!input_schema)
        input_schema = cJSON_Parse("{\"type\":\"object\"}");
    if (!cJSON_IsObject(input_schema) || (output_schema && !cJSON_IsObject(output_schema)) ||
        (annotations && !cJSON_IsObject(annotations))) {
        errinfo_set(err, input_schema ? ERR_INVALID : ERR_NOMEM,
                    "tool %s: inputSchema, outputSchema and annotations must be JSON objects",
                    tool->name);
        goto out;
    }
    if (print_arg(tool->name, input_schema, &in, &parts.in_len, err) < 0 ||
        print_arg(tool->name, output_schema, &out, &parts.out_len, err) < 0 ||
        print_arg(tool->name, annotations, &ann, &parts.ann_len, err) < 0 ||
        extra_arg(tool, &extra, &parts.extra_len, err) < 0)
        goto out;
    parts.in = in;
    parts.out = out;
    parts.ann = ann;
    parts.extra = extra;
    t.entry = make_entry(tool, &parts, &t.entry_len);
    if (!t.entry) {
        errinfo_set(err, ERR_NOMEM, "out of memory adding tool %s", tool->name);
        goto out;
    }
    atomic_init(&t.input_schema, input_schema);
    input_schema = NULL; /* the tool's now */
    t.has_output_schema = output_schema != NULL;
    t.requires = (unsigned)parse_requires(tool->requires);
    rc = add_tool(srv, tool, &t, err);
out:
    cJSON_free(in);
    cJSON_free(out);
    cJSON_free(ann);
    free(extra);
    cJSON_Delete(input_schema);
    cJSON_Delete(output_schema);
    cJSON_Delete(annotations);
    return rc;
}

const cJSON *mcp__tool_schema(struct mcp_server *srv, const struct srv_tool *t)
{
    struct srv_tool *tool = (struct srv_tool *)t; /* the parse is a cache, not a change */
    cJSON *schema = atomic_load_explicit(&tool->input_schema, memory_order_acquire);

    if (schema)
        return schema;
    pthread_mutex_lock(&srv->schema_mu);
    schema = atomic_load_explicit(&tool->input_schema, memory_order_relaxed);
    if (!schema && tool->input_text) {
        schema = cJSON_Parse(tool->input_text); /* checked when added: NULL means memory */
        if (schema) {
            atomic_store_explicit(&tool->input_schema, schema, memory_order_release);
            free(tool->input_text);
            tool->input_text = NULL;
        }
    }
    pthread_mutex_unlock(&srv->schema_mu);
    return schema;
}

int mcp_server_remove_tool(struct mcp_server *srv, const char *name, struct errinfo *err)
{
    size_t i;

    pthread_rwlock_wrlock(&srv->lock);
    for (i = 0; i < srv->ntools; i++)
        if (strcmp(srv->tools[i].name, name) == 0)
            break;
    if (i == srv->ntools) {
        pthread_rwlock_unlock(&srv->lock);
        errinfo_set(err, ERR_NOT_FOUND, "no tool named %.128s", name);
        return -1;
    }
    free_tool(&srv->tools[i]);
    index_remove(srv, i);
    memmove(&srv->tools[i], &srv->tools[i + 1], (srv->ntools - i - 1) * sizeof(srv->tools[0]));
    srv->ntools--;
    srv->tools_gen++;
    pthread_rwlock_unlock(&srv->lock);
    return 0;
}

size_t mcp_server_tool_count(const struct mcp_server *srv)
{
    size_t n;

    pthread_rwlock_rdlock((pthread_rwlock_t *)&srv->lock);
    n = srv->ntools;
    pthread_rwlock_unlock((pthread_rwlock_t *)&srv->lock);
    return n;
}

int mcp__put_tools_json(struct mcp_server *srv, struct jsonbuf *b)
{
    int rc = -1;

    pthread_rwlock_rdlock(&srv->lock);
    pthread_mutex_lock(&srv->tools_json_mu);
    if (srv->tools_json_gen != srv->tools_gen) {
        struct jsonbuf all = JSONBUF_INIT(MCP_RESPONSE_MAX);
        char *text;
        size_t len = 0, total = 2 + srv->ntools;

        for (size_t i = 0; i < srv->ntools; i++)
            total += srv->tools[i].entry_len;
        jsonbuf_reserve(&all, total, NULL);
        jsonbuf_put(&all, "[", 1, NULL);
        for (size_t i = 0; i < srv->ntools; i++) {
            if (i)
                jsonbuf_put(&all, ",", 1, NULL);
            jsonbuf_put(&all, srv->tools[i].entry, srv->tools[i].entry_len, NULL);
        }
        jsonbuf_put(&all, "]", 1, NULL);
        text = jsonbuf_take(&all, &len);
        if (text) {
            free(srv->tools_json);
            srv->tools_json = text;
            srv->tools_json_len = len;
            srv->tools_json_gen = srv->tools_gen;
        }
    }
    if (srv->tools_json_gen == srv->tools_gen)
        rc = jsonbuf_put(b, srv->tools_json, srv->tools_json_len, NULL);
    pthread_mutex_unlock(&srv->tools_json_mu);
    pthread_rwlock_unlock(&srv->lock);
    return rc;
}

/* ---- resources and templates ---- */

int mcp_server_add_resource(struct mcp_server *srv, const struct mcp_resource *r,
                            struct errinfo *err)
{
    struct srv_resource x = {0};
    bool failed = false;

    if (!r->uri || !r->uri[0] || !r->name || !r->read) {
        errinfo_set(err, ERR_INVALID, "a resource needs a uri, a name and a read handler");
        return -1;
    }
    x.uri = copy_opt(r->uri, &failed);
    x.name = copy_opt(r->name, &failed);
    x.title = copy_opt(r->title, &failed);
    x.description = copy_opt(r->description, &failed);
    x.mime_type = copy_opt(r->mime_type, &failed);
    x.size = r->size;
    x.read = r->read;
    x.arg = r->arg;
    pthread_rwlock_wrlock(&srv->lock);
    for (size_t i = 0; !failed && i < srv->nresources; i++)
        if (strcmp(srv->resources[i].uri, r->uri) == 0) {
            pthread_rwlock_unlock(&srv->lock);
            errinfo_set(err, ERR_EXISTS, "a resource %.200s is already there", r->uri);
            failed = true;
            goto undo;
        }
    if (failed ||
        grow((void **)&srv->resources, &srv->resources_cap, srv->nresources, sizeof(x)) < 0) {
        pthread_rwlock_unlock(&srv->lock);
        errinfo_set(err, ERR_NOMEM, "out of memory adding a resource");
        failed = true;
        goto undo;
    }
    srv->resources[srv->nresources++] = x;
    pthread_rwlock_unlock(&srv->lock);
    return 0;
undo:
    free(x.uri);
    free(x.name);
    free(x.title);
    free(x.description);
    free(x.mime_type);
    return -1;
}

int mcp_server_add_resource_template(struct mcp_server *srv, const struct mcp_resource_template *t,
                                     struct errinfo *err)
{
    struct srv_template x = {0};
    bool failed = false;

    if (!t->uri_template || !strchr(t->uri_template, '{') || !t->name || !t->read) {
        errinfo_set(err, ERR_INVALID,
                    "a resource template needs a uri_template with a {variable}, a name and a "
                    "read handler");
        return -1;
    }
    x.uri_template = copy_opt(t->uri_template, &failed);
    x.name = copy_opt(t->name, &failed);
    x.title = copy_opt(t->title, &failed);
    x.description = copy_opt(t->description, &failed);
    x.mime_type = copy_opt(t->mime_type, &failed);
    x.read = t->read;
    x.arg = t->arg;
    pthread_rwlock_wrlock(&srv->lock);
    if (failed ||
        grow((void **)&srv->templates, &srv->templates_cap, srv->ntemplates, sizeof(x)) < 0) {
        pthread_rwlock_unlock(&srv->lock);
        free(x.uri_template);
        free(x.name);
        free(x.title);
        free(x.description);
        free(x.mime_type);
        errinfo_set(err, ERR_NOMEM, "out of memory adding a resource template");
        return -1;
    }
    srv->templates[srv->ntemplates++] = x;
    pthread_rwlock_unlock(&srv->lock);
    return 0;
}

int mcp_server_set_resource_provider(struct mcp_server *srv, mcp_handler_fn list,
                                     mcp_handler_fn read, void *arg, struct errinfo *err)
{
    (void)err;
    pthread_rwlock_wrlock(&srv->lock);
    srv->res_list = list;
    srv->res_read = read;
    srv->res_arg = arg;
    pthread_rwlock_unlock(&srv->lock);
    return 0;
}

/* ---- prompts and completion ---- */

static cJSON *prompt_arguments(const struct mcp_prompt *p)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; arr && i < p->narguments; i++) {
        const struct mcp_prompt_argument *a = &p->arguments[i];
        cJSON *o = cJSON_CreateObject();

        if (!o || !cJSON_AddItemToArray(arr, o) || !a->name ||
            !cJSON_AddStringToObject(o, "name", a->name) ||
            (a->title && !cJSON_AddStringToObject(o, "title", a->title)) ||
            (a->description && !cJSON_AddStringToObject(o, "description", a->description)) ||
            !cJSON_AddBoolToObject(o, "required", a->required)) {
            if (o && !cJSON_IsArray(arr))
                cJSON_Delete(o);
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

int mcp_server_add_prompt(struct mcp_server *srv, const struct mcp_prompt *p, struct errinfo *err)
{
    struct srv_prompt x = {0};
    bool failed = false;

    if (!p->name || !p->name[0] || !p->get) {
        errinfo_set(err, ERR_INVALID, "a prompt needs a name and a get handler");
        return -1;
    }
    x.name = copy_opt(p->name, &failed);
    x.title = copy_opt(p->title, &failed);
    x.description = copy_opt(p->description, &failed);
    x.arguments = prompt_arguments(p);
    x.get = p->get;
    x.arg = p->arg;
    pthread_rwlock_wrlock(&srv->lock);
    for (size_t i = 0; !failed && i < srv->nprompts; i++)
        if (strcmp(srv->prompts[i].name, p->name) == 0) {
            pthread_rwlock_unlock(&srv->lock);
            errinfo_set(err, ERR_EXISTS, "a prompt named %.128s is already there", p->name);
            goto undo;
        }
    if (failed || !x.arguments ||
        grow((void **)&srv->prompts, &srv->prompts_cap, srv->nprompts, sizeof(x)) < 0) {
        pthread_rwlock_unlock(&srv->lock);
        errinfo_set(err, ERR_NOMEM,
                    "out of memory adding prompt %.128s (or an argument without "
                    "a name)",
                    p->name);
        goto undo;
    }
    srv->prompts[srv->nprompts++] = x;
    pthread_rwlock_unlock(&srv->lock);
    return 0;
undo:
    free(x.name);
    free(x.title);
    free(x.description);
    cJSON_Delete(x.arguments);
    return -1;
}

int mcp_server_set_prompt_provider(struct mcp_server *srv, mcp_handler_fn list, mcp_handler_fn get,
                                   void *arg, struct errinfo *err)
{
    (void)err;
    pthread_rwlock_wrlock(&srv->lock);
    srv->prompt_list = list;
    srv->prompt_get = get;
    srv->prompt_arg = arg;
    pthread_rwlock_unlock(&srv->lock);
    return 0;
}

void mcp_server_set_tool_resolver(struct mcp_server *srv, mcp_tool_resolver_fn fn, void *arg)
{
    pthread_rwlock_wrlock(&srv->lock);
    srv->resolve = fn;
    srv->resolve_arg = arg;
    pthread_rwlock_unlock(&srv->lock);
}

int mcp_server_set_completion(struct mcp_server *srv, mcp_handler_fn complete, void *arg,
                              struct errinfo *err)
{
    (void)err;
    pthread_rwlock_wrlock(&srv->lock);
    srv->complete = complete;
    srv->complete_arg = arg;
    pthread_rwlock_unlock(&srv->lock);
    return 0;
}

/* ---- interest ---- */

int mcp_server_set_interest(struct mcp_server *srv, const struct mcp_interest *in,
                            struct errinfo *err)
{
    (void)err;
    pthread_rwlock_wrlock(&srv->lock);
    srv->interest = *in;
    pthread_rwlock_unlock(&srv->lock);
    return 0;
}

int mcp__interest_subscribe(struct mcp_server *srv, const char *uri, struct errinfo *err)
{
    return srv->interest.subscribe ? srv->interest.subscribe(srv->interest.arg, uri, err) : 0;
}

void mcp__interest_unsubscribe(struct mcp_server *srv, const char *uri)
{
    if (srv->interest.unsubscribe)
        srv->interest.unsubscribe(srv->interest.arg, uri);
}

void mcp__interest_unsubscribe_all(struct mcp_server *srv, const cJSON *uris)
{
    const cJSON *u;

    cJSON_ArrayForEach(u, uris) if (cJSON_IsString(u))
        mcp__interest_unsubscribe(srv, u->valuestring);
}

void mcp__interest_log_level(struct mcp_server *srv, struct mcp_session *s, int old_level,
                             int level)
{
    if (old_level < 0 && level >= 0)
        atomic_fetch_add(&srv->log_sessions, 1);
    else if (old_level >= 0 && level < 0)
        atomic_fetch_sub(&srv->log_sessions, 1);
    if (srv->interest.log_level && old_level != level)
        srv->interest.log_level(srv->interest.arg, s, level);
}

/* ---- capabilities ---- */

cJSON *mcp__capabilities(struct mcp_server *srv)
{
    cJSON *caps = cJSON_CreateObject(), *o;
    bool ok = caps != NULL;

    pthread_rwlock_rdlock(&srv->lock);
    o = ok ? cJSON_AddObjectToObject(caps, "tools") : NULL;
    ok = o && (!(srv->notifies & MCP_NOTIFY_TOOLS) || cJSON_AddTrueToObject(o, "listChanged"));
    ok = ok && cJSON_AddObjectToObject(caps, "logging");
    if (ok && (srv->nresources || srv->ntemplates || srv->res_list || srv->res_read)) {
        o = cJSON_AddObjectToObject(caps, "resources");
        ok = o &&
             (!(srv->notifies & MCP_NOTIFY_UPDATES) || cJSON_AddTrueToObject(o, "subscribe")) &&
             (!(srv->notifies & MCP_NOTIFY_RESOURCES) || cJSON_AddTrueToObject(o, "listChanged"));
    }
    if (ok && (srv->nprompts || srv->prompt_list || srv->prompt_get)) {
        o = cJSON_AddObjectToObject(caps, "prompts");
        ok =
            o && (!(srv->notifies & MCP_NOTIFY_PROMPTS) || cJSON_AddTrueToObject(o, "listChanged"));
    }
    if (ok && srv->complete)
        ok = cJSON_AddObjectToObject(caps, "completions") != NULL;
    pthread_rwlock_unlock(&srv->lock);
    if (!ok) {
        cJSON_Delete(caps);
        return NULL;
    }
    return caps;
}

/* ---- sessions and broadcasts ---- */

void mcp__server_attach(struct mcp_server *srv, struct mcp_session *s)
{
    pthread_mutex_lock(&srv->sessions_mu);
    s->next = srv->sessions;
    srv->sessions = s;
    pthread_mutex_unlock(&srv->sessions_mu);
}

void mcp__server_detach(struct mcp_server *srv, struct mcp_session *s)
{
    pthread_mutex_lock(&srv->sessions_mu);
    for (struct mcp_session **pp = &srv->sessions; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    pthread_mutex_unlock(&srv->sessions_mu);
}

/* The open sessions, each with a reference taken (give it back with mcp__session_unref).
 * Returns an owned array (free) of *n sessions, or NULL. */
static struct mcp_session **snapshot_sessions(struct mcp_server *srv, size_t *n)
{
    struct mcp_session **arr = NULL;
    size_t count = 0, i = 0;

    pthread_mutex_lock(&srv->sessions_mu);
    for (struct mcp_session *s = srv->sessions; s; s = s->next)
        count++;
    if (count)
        arr = malloc(count * sizeof(*arr));
    for (struct mcp_session *s = srv->sessions; arr && s; s = s->next) {
        atomic_fetch_add(&s->refs, 1);
        arr[i++] = s;
    }
    pthread_mutex_unlock(&srv->sessions_mu);
    *n = arr ? i : 0;
    return arr;
}

/* One broadcast message: what and for whom. */
struct note {
    const char *method;
    unsigned list; /* enum mcp_list for a list change, 0 otherwise */
    const char *uri;
    cJSON *params; /* borrowed: copied for each delivery */
    int level;     /* for logs: the message's level; -1 otherwise */
};

/* True when a listen stream asked for n. */
static bool listen_wants(const struct listen *l, const struct note *n)
{
    const cJSON *u;

    if (n->list)
        return (l->lists & n->list) != 0;
    if (!n->uri)
        return false;
    cJSON_ArrayForEach(u, l->uris) if (cJSON_IsString(u) &&
                                       strcmp(u->valuestring, n->uri) == 0) return true;
    return false;
}

/* True when the legacy side of s wants n (s->mu held). */
static bool legacy_wants(const struct mcp_session *s, const struct note *n)
{
    const cJSON *u;

    if (!s->protocol)
        return false;
    if (n->level >= 0)
        return s->log_level >= 0 && n->level >= s->log_level;
    if (n->list)
        return true;
    cJSON_ArrayForEach(u, s->subscribed) if (cJSON_IsString(u) &&
                                             strcmp(u->valuestring, n->uri) == 0) return true;
    return false;
}

/* Builds "{jsonrpc, method, params}" with params copied and, when sub_id is set, tagged with the
 * subscription id. Owned or NULL. */
static char *note_text(const struct note *n, const char *sub_id)
{
    cJSON *params = n->params ? cJSON_Duplicate(n->params, true) : cJSON_CreateObject();
    cJSON *meta;
    char *line;

    if (!params)
        return NULL;
    if (sub_id) {
        meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
        if (!meta)
            meta = cJSON_AddObjectToObject(params, "_meta");
        if (!meta || !cJSON_AddItemToObject(meta, MCP_META_SUBSCRIPTION, cJSON_Parse(sub_id))) {
            cJSON_Delete(params);
            return NULL;
        }
    }
    line = jsonrpc_build_notification(n->method, params); /* takes params */
    return line;
}

/* Sends n to whoever in s wants it. */
static void deliver_note(struct mcp_session *s, const struct note *n)
{
    struct mcp_call *targets[32];
    size_t nt = 0;
    bool legacy;

    pthread_mutex_lock(&s->mu);
    if (s->closing) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    legacy = legacy_wants(s, n);
    for (struct listen *l = s->listens; l && nt < 32; l = l->next)
        if (n->level < 0 && listen_wants(l, n) && !l->call->cancelled) {
            l->call->sending++;
            targets[nt++] = l->call;
        }
    pthread_mutex_unlock(&s->mu);
    if (legacy) {
        char *line = note_text(n, NULL);
        struct mcp_route r = {.kind = MCP_ROUTE_SESSION};

        if (line)
            mcp__send(s, line, strlen(line), &r);
        free(line);
    }
    for (size_t i = 0; i < nt; i++) {
        struct mcp_call *c = targets[i];
        char *line = note_text(n, c->id_text);
        struct mcp_route r = {
            .kind = MCP_ROUTE_LISTEN, .id = c->id_text, .id_len = c->id_len, .origin = c->origin};

        if (line)
            mcp__send(s, line, strlen(line), &r);
        free(line);
        pthread_mutex_lock(&s->mu);
        c->sending--;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->mu);
    }
}

static void broadcast(struct mcp_server *srv, const struct note *n)
{
    size_t count;
    struct mcp_session **all = snapshot_sessions(srv, &count);

    for (size_t i = 0; i < count; i++) {
        deliver_note(all[i], n);
        mcp__session_unref(all[i]);
    }
    free(all);
}

void mcp_server_notify_list_changed(struct mcp_server *srv, unsigned lists)
{
    static const struct {
        unsigned bit;
        const char *method;
    } rows[] = {{MCP_LIST_TOOLS, "notifications/tools/list_changed"},
                {MCP_LIST_PROMPTS, "notifications/prompts/list_changed"},
                {MCP_LIST_RESOURCES, "notifications/resources/list_changed"}};

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct note n = {.method = rows[i].method, .list = rows[i].bit, .level = -1};

        if (lists & rows[i].bit)
            broadcast(srv, &n);
    }
}

void mcp_server_notify_resource_updated(struct mcp_server *srv, const char *uri)
{
    cJSON *params = cJSON_CreateObject();
    struct note n = {.method = "notifications/resources/updated", .uri = uri, .level = -1};

    if (!params || !cJSON_AddStringToObject(params, "uri", uri)) {
        cJSON_Delete(params);
        return;
    }
    n.params = params;
    broadcast(srv, &n);
    cJSON_Delete(params);
}

void mcp_server_log(struct mcp_server *srv, enum mcp_log_level level, const char *logger,
                    cJSON *data)
{
    cJSON *params;
    struct note n = {.method = "notifications/message", .level = (int)level};

    if (!atomic_load(&srv->log_sessions)) {
        cJSON_Delete(data); /* nobody asked for log messages */
        return;
    }
    params = cJSON_CreateObject();
    if (!params || !cJSON_AddStringToObject(params, "level", mcp__log_level_names[level]) ||
        (logger && !cJSON_AddStringToObject(params, "logger", logger)) ||
        !cJSON_AddItemToObject(params, "data", data ? data : cJSON_CreateNull())) {
        if (params && !cJSON_GetObjectItemCaseSensitive(params, "data"))
            cJSON_Delete(data);
        cJSON_Delete(params);
        return;
    }
    n.params = params;
    broadcast(srv, &n);
    cJSON_Delete(params);
}

const char *mcp_library_version(void)
{
    return "runbox-mcp " RUNBOX_VERSION;
}
