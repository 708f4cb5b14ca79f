/* common/mcp_lists.c - the server's methods, both eras: tools/list and tools/call, the
 * resources and prompts methods, completion, and the modern server/discover and
 * subscriptions/listen (handed to mcp_modern.c). Each request either is answered here from the
 * server's tables or becomes a call handed to the handler registered for it.
 *
 * tools/call is the hot path: the tool's schema is used under the server's read lock, the call
 * keeps only a copy of the facts it needs (handler, output schema, needed capabilities), so a
 * tool removed meanwhile cannot pull anything from under a call in flight. */
#include "mcp_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "schema.h"

/* ---- shared checks ---- */

/* -32602 when params.cursor is there but not a string (or any string, when the list is one
 * page). Returns -1 after answering. */
static int check_cursor(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                        const char *method, const cJSON *params, bool paginated)
{
    const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(params, "cursor");

    if (!cursor || cJSON_IsNull(cursor) || (paginated && cJSON_IsString(cursor)))
        return 0;
    if (!cJSON_IsString(cursor))
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                         "%s: params.cursor must be a string, got %s", method,
                         jsonrpc_type_name(cursor));
    else
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                         "%s: invalid cursor (everything fits one page; send no cursor)", method);
    return -1;
}

/* The answer to a request that never becomes a call: decorated for a modern request. */
static void reply_list(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                       const struct modern_meta *modern, cJSON *result, bool cacheable)
{
    if (modern && result && mcp__modern_decorate(s->srv, result, cacheable) < 0) {
        cJSON_Delete(result);
        result = NULL;
    }
    if (!result) {
        mcp__reply_error(s, batch, origin, id, MCP_INTERNAL_ERROR, NULL,
                         "internal error: out of memory");
        return;
    }
    mcp__reply_result(s, batch, origin, id, result);
}

/* ---- calls ---- */

/* Unseals a modern retry's requestState into c (0), or -1 when it was tampered with. */
static int state_error(struct mcp_call *c, const cJSON *state)
{
    if (!state)
        return 0;
    if (!cJSON_IsString(state))
        return -1;
    return mcp__state_unseal(state->valuestring, &c->request_state);
}

/* Makes a call of msg for handler and hands it over, or answers the error. Takes ownership of
 * msg and id_text. Returns the call (already dispatched: do not touch) or NULL. */
static void start_call(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                       char *id_text, size_t id_len, const struct modern_meta *modern,
                       const char *name, const cJSON *arguments, mcp_handler_fn handler, void *arg,
                       const struct tool_facts *tool, bool cacheable, cJSON *uri_vars)
{
    struct mcp_call *c = mcp__call_new(s, batch, origin, msg, id_text, id_len);
    const cJSON *params;
    bool dup;

    if (!c) {
        cJSON_Delete(uri_vars);
        mcp__reply_error(s, batch, origin, NULL, MCP_INTERNAL_ERROR, NULL,
                         "internal error: out of memory");
        return;
    }
    params = c->params;
    if (modern && state_error(c, cJSON_GetObjectItemCaseSensitive(params, "requestState")) < 0) {
        cJSON_Delete(uri_vars);
        mcp__reply_error(s, batch, origin, c->id, MCP_INVALID_PARAMS, NULL,
                         "params.requestState was altered or does not belong to this server; "
                         "send it back exactly as the server gave it, or start the request again "
                         "without it");
        mcp__call_discard(c);
        return;
    }
    c->name = name;
    c->arguments = arguments;
    c->uri_vars = uri_vars;
    c->handler = handler;
    c->handler_arg = arg;
    c->cacheable = cacheable;
    if (tool) {
        c->is_tool = true;
        c->tool = *tool;
    }
    c->progress_token = NULL;
    {
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
        const cJSON *tok = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");

        if (cJSON_IsString(tok) || (cJSON_IsNumber(tok) && jsonrpc_is_whole(tok->valuedouble)))
            c->progress_token = tok;
    }
    pthread_mutex_lock(&s->mu);
    if (modern) {
        c->modern = true;
        c->protocol = modern->version;
        c->client_caps = modern->caps;
        c->client_info = modern->client_info;
        c->log_level = modern->log_level;
        c->retry_responses = cJSON_GetObjectItemCaseSensitive(params, "inputResponses");
        if (c->retry_responses || c->request_state)
            c->cacheable = false; /* a retry's result depends on what the client gave */
    } else {
        c->protocol = s->protocol;
        c->client_caps = s->client_caps;
        c->client_info = s->client_info;
    }
    dup = mcp_calls_find(&s->calls, c->id_text, c->id_len) != NULL;
    if (!dup && mcp__call_register(c) < 0)
        dup = true;
    pthread_mutex_unlock(&s->mu);
    if (dup) {
        mcp__reply_error(s, batch, origin, c->id, MCP_INVALID_REQUEST, NULL,
                         "request id %s is already in use by a request in flight, or memory ran "
                         "out; use a new id for every request",
                         c->id_text);
        mcp__call_discard(c);
        return;
    }
    mcp__call_dispatch(c);
}

/* ---- tools ---- */

static void on_tools_list(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                          const cJSON *params, const struct modern_meta *modern)
{
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);
    cJSON *res, *tools;
    char *arr;
    size_t len = 0;

    if (check_cursor(s, batch, origin, id, "tools/list", params, false) < 0)
        return;
    if (!modern) {
        /* The legacy answer is the prebuilt array spliced into the response: no tree. */
        struct jsonbuf line = JSONBUF_INIT(MCP_RESPONSE_MAX);

        jsonbuf_puts(&line, "{\"jsonrpc\":\"2.0\",\"id\":", NULL);
        mcp__put_id(&line, id);
        jsonbuf_puts(&line, ",\"result\":{\"tools\":", NULL);
        mcp__put_tools_json(s->srv, &line);
        jsonbuf_puts(&line, "}}", NULL);
        if (line.failed) {
            mcp__reply_error(s, batch, origin, id, MCP_INTERNAL_ERROR, NULL,
                             "internal error: the tool list could not be built");
        } else {
            mcp__emit_response(s, batch, origin, id, line.data, line.len);
        }
        jsonbuf_cleanup(&line);
        return;
    }
    if (mcp__put_tools_json(s->srv, &b) < 0 || !(arr = jsonbuf_take(&b, &len))) {
        jsonbuf_cleanup(&b);
        mcp__reply_error(s, batch, origin, id, MCP_INTERNAL_ERROR, NULL,
                         "internal error: the tool list could not be built");
        return;
    }
    tools = cJSON_ParseWithLength(arr, len);
    free(arr);
    res = cJSON_CreateObject();
    if (!tools || !res || !cJSON_AddItemToObject(res, "tools", tools)) {
        cJSON_Delete(tools);
        cJSON_Delete(res);
        res = NULL;
    }
    reply_list(s, batch, origin, id, modern, res, true);
}

/* The capabilities a tool needs and the client lacks, as {"sampling":{},...}, or NULL. */
static cJSON *missing_caps(unsigned requires, const cJSON *caps)
{
    static const struct {
        unsigned bit;
        const char *name;
    } rows[] = {{MCP_NEEDS_SAMPLING, "sampling"},
                {MCP_NEEDS_ELICITATION, "elicitation"},
                {MCP_NEEDS_ROOTS, "roots"}};
    cJSON *need = NULL;

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (!(requires & rows[i].bit) || cJSON_GetObjectItemCaseSensitive(caps, rows[i].name))
            continue;
        if (!need)
            need = cJSON_CreateObject();
        cJSON_AddObjectToObject(need, rows[i].name);
    }
    return need;
}

/* An isError tool result for a request that never became a call. */
static void reply_tool_error(struct mcp_session *s, struct batch *batch, void *origin,
                             const cJSON *id, const struct modern_meta *modern, const char *text)
{
    cJSON *res = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(res, "content");
    cJSON *item = cJSON_CreateObject();

    if (!content || !item || !cJSON_AddItemToArray(content, item) ||
        !cJSON_AddStringToObject(item, "type", "text") ||
        !cJSON_AddStringToObject(item, "text", text) || !cJSON_AddTrueToObject(res, "isError")) {
        if (item && !cJSON_IsArray(content))
            cJSON_Delete(item);
        cJSON_Delete(res);
        res = NULL;
    }
    reply_list(s, batch, origin, id, modern, res, false);
}

/* Validates the arguments (srv->lock held: the schema is the server's). Returns 0 with *out set,
 * or -1 with *why the text of the isError result (owned; NULL when memory ran out). May add an
 * empty "arguments" object to params. Sends nothing. */
static int check_arguments(cJSON *params, const cJSON *schema, bool nul_escape, const cJSON **out,
                           char **why)
{
    static const char nul_msg[] =
        "arguments contain a NUL character (\\u0000), which no path or text argument may hold; "
        "send binary data with encoding \"base64\"";
    cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
    struct schema_report rep;
    struct jsonbuf text = JSONBUF_INIT(MCP_RESPONSE_MAX);
    char line[80];

    *why = NULL;
    if (nul_escape) {
        *why = strdup(nul_msg);
        return -1;
    }
    if (!args || cJSON_IsNull(args)) {
        cJSON_DeleteItemFromObjectCaseSensitive(params, "arguments");
        args = cJSON_AddObjectToObject(params, "arguments");
        if (!args)
            return -1;
    }
    if (!cJSON_IsObject(args)) {
        snprintf(line, sizeof(line), "arguments: expected object, got %s", jsonrpc_type_name(args));
        *why = strdup(line);
        return -1;
    }
    if (schema_validate(schema, args, "arguments", &rep) == 0) {
        *out = args;
        return 0;
    }
    for (size_t i = 0; i < rep.count && i < SCHEMA_MAX_ERRORS; i++) {
        if (i)
            jsonbuf_put(&text, "\n", 1, NULL);
        jsonbuf_puts(&text, rep.msgs[i], NULL);
    }
    if (rep.count > SCHEMA_MAX_ERRORS) {
        size_t more = rep.count - SCHEMA_MAX_ERRORS;

        snprintf(line, sizeof(line), "\n(%zu more problem%s)", more, more == 1 ? "" : "s");
        jsonbuf_puts(&text, line, NULL);
    }
    *why = jsonbuf_take(&text, NULL);
    return -1;
}

static void on_tools_call(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                          char *id_text, size_t id_len, const struct modern_meta *modern,
                          bool nul_escape)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
    const cJSON *args = NULL;
    const struct srv_tool *t;
    struct tool_facts facts;
    char *why = NULL;
    cJSON *need;
    int ok = -1;

    if (!cJSON_IsObject(params) || !cJSON_IsString(name)) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                         "tools/call: params.name must be a string (the tool's name)");
        goto drop;
    }
    pthread_rwlock_rdlock(&s->srv->lock);
    t = mcp__find_tool(s->srv, name->valuestring);
    if (!t && s->srv->resolve) {
        /* An alias: the resolver runs unlocked, then its answer is looked up as usual. */
        mcp_tool_resolver_fn resolve = s->srv->resolve;
        void *rarg = s->srv->resolve_arg;
        char canonical[256], rwhy[512] = "";
        int found;

        pthread_rwlock_unlock(&s->srv->lock);
        found = resolve(rarg, name->valuestring, canonical, sizeof(canonical), rwhy, sizeof(rwhy));
        if (found < 0) {
            mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL, "%s", rwhy);
            goto drop;
        }
        pthread_rwlock_rdlock(&s->srv->lock);
        if (found > 0) {
            t = mcp__find_tool(s->srv, canonical);
            if (t)
                cJSON_SetValuestring((cJSON *)name, canonical);
        }
    }
    if (t) {
        const cJSON *schema = mcp__tool_schema(s->srv, t);

        facts = (struct tool_facts){.handler = t->handler,
                                    .arg = t->arg,
                                    .has_output_schema = t->has_output_schema,
                                    .requires = t->requires};
        ok = schema ? check_arguments(params, schema, nul_escape, &args, &why) : -1;
    }
    pthread_rwlock_unlock(&s->srv->lock);
    if (!t) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL, "Unknown tool: %.200s",
                         name->valuestring);
        goto drop;
    }
    if (ok < 0) {
        if (why)
            reply_tool_error(s, batch, origin, id, modern, why);
        else
            mcp__reply_error(s, batch, origin, id, MCP_INTERNAL_ERROR, NULL,
                             "internal error: out of memory");
        free(why);
        goto drop;
    }
    need = missing_caps(facts.requires, modern ? modern->caps : (const cJSON *)s->client_caps);
    if (need) {
        if (modern) {
            cJSON *data = cJSON_CreateObject();

            cJSON_AddItemToObject(data, "requiredCapabilities", need);
            mcp__reply_error(s, batch, origin, id, MCP_MISSING_CAPABILITY, data,
                             "Missing required client capability: %s needs %s", name->valuestring,
                             need->child ? need->child->string : "?");
        } else {
            mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                             "%s needs the client capability \"%s\", which initialize did not "
                             "declare",
                             name->valuestring, need->child ? need->child->string : "?");
            cJSON_Delete(need);
        }
        goto drop;
    }
    start_call(s, batch, origin, msg, id_text, id_len, modern, name->valuestring, args,
               facts.handler, facts.arg, &facts, false, NULL);
    return;
drop:
    free(id_text);
    cJSON_Delete(msg);
}

/* ---- resources ---- */

static cJSON *resource_json(const struct srv_resource *r)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || !cJSON_AddStringToObject(o, "uri", r->uri) ||
        !cJSON_AddStringToObject(o, "name", r->name) ||
        (r->title && !cJSON_AddStringToObject(o, "title", r->title)) ||
        (r->description && !cJSON_AddStringToObject(o, "description", r->description)) ||
        (r->mime_type && !cJSON_AddStringToObject(o, "mimeType", r->mime_type)) ||
        (r->size >= 0 && !cJSON_AddNumberToObject(o, "size", (double)r->size))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *template_json(const struct srv_template *t)
{
    cJSON *o = cJSON_CreateObject();

    if (!o || !cJSON_AddStringToObject(o, "uriTemplate", t->uri_template) ||
        !cJSON_AddStringToObject(o, "name", t->name) ||
        (t->title && !cJSON_AddStringToObject(o, "title", t->title)) ||
        (t->description && !cJSON_AddStringToObject(o, "description", t->description)) ||
        (t->mime_type && !cJSON_AddStringToObject(o, "mimeType", t->mime_type))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* {"<key>":[items built by make(i)]}, under the server's read lock. */
static cJSON *list_of(struct mcp_server *srv, const char *key, size_t n,
                      cJSON *(*make)(const struct mcp_server *, size_t))
{
    cJSON *res = cJSON_CreateObject(), *arr = res ? cJSON_AddArrayToObject(res, key) : NULL;

    for (size_t i = 0; arr && i < n; i++) {
        cJSON *o = make(srv, i);

        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            arr = NULL;
        }
    }
    if (!arr) {
        cJSON_Delete(res);
        return NULL;
    }
    return res;
}

static cJSON *make_resource(const struct mcp_server *srv, size_t i)
{
    return resource_json(&srv->resources[i]);
}

static cJSON *make_template(const struct mcp_server *srv, size_t i)
{
    return template_json(&srv->templates[i]);
}

/* Matches uri against an RFC 6570 level-1 template ("a/{x}/b"); fills vars. A variable matches
 * at least one character up to the template's next literal character (or the end). */
static bool template_match(const char *tpl, const char *uri, cJSON *vars)
{
    while (*tpl) {
        if (*tpl == '{') {
            const char *close = strchr(tpl, '}');
            char name[64], *val;
            const char *stop, *next;
            size_t nlen, vlen;

            if (!close)
                return false;
            nlen = (size_t)(close - tpl - 1);
            if (nlen == 0 || nlen >= sizeof(name))
                return false;
            memcpy(name, tpl + 1, nlen);
            name[nlen] = '\0';
            next = close + 1;
            stop = *next ? strchr(uri, *next) : uri + strlen(uri);
            if (!stop || stop == uri)
                return false;
            vlen = (size_t)(stop - uri);
            val = strndup(uri, vlen);
            if (!val || !cJSON_AddStringToObject(vars, name, val)) {
                free(val);
                return false;
            }
            free(val);
            uri = stop;
            tpl = next;
            continue;
        }
        if (*tpl != *uri)
            return false;
        tpl++;
        uri++;
    }
    return *uri == '\0';
}

static void not_found(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                      const struct modern_meta *modern, const char *uri)
{
    cJSON *data = cJSON_CreateObject();

    cJSON_AddStringToObject(data, "uri", uri);
    mcp__reply_error(s, batch, origin, id, modern ? MCP_INVALID_PARAMS : MCP_RESOURCE_NOT_FOUND,
                     data, "Resource not found: %.300s", uri);
}

static void on_resources_read(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                              char *id_text, size_t id_len, const struct modern_meta *modern)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    const cJSON *uri = cJSON_GetObjectItemCaseSensitive(params, "uri");
    struct mcp_server *srv = s->srv;
    mcp_handler_fn fn = NULL;
    void *arg = NULL;
    cJSON *vars = NULL;

    if (!cJSON_IsString(uri) || !uri->valuestring[0]) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                         "resources/read: params.uri must be a non-empty string");
        goto drop;
    }
    pthread_rwlock_rdlock(&srv->lock);
    for (size_t i = 0; !fn && i < srv->nresources; i++)
        if (strcmp(srv->resources[i].uri, uri->valuestring) == 0) {
            fn = srv->resources[i].read;
            arg = srv->resources[i].arg;
        }
    for (size_t i = 0; !fn && i < srv->ntemplates; i++) {
        cJSON *v = cJSON_CreateObject();

        if (v && template_match(srv->templates[i].uri_template, uri->valuestring, v)) {
            fn = srv->templates[i].read;
            arg = srv->templates[i].arg;
            vars = v;
        } else {
            cJSON_Delete(v);
        }
    }
    if (!fn && srv->res_read) {
        fn = srv->res_read;
        arg = srv->res_arg;
    }
    pthread_rwlock_unlock(&srv->lock);
    if (!fn) {
        not_found(s, batch, origin, id, modern, uri->valuestring);
        goto drop;
    }
    start_call(s, batch, origin, msg, id_text, id_len, modern, uri->valuestring, NULL, fn, arg,
               NULL, true, vars);
    return;
drop:
    free(id_text);
    cJSON_Delete(msg);
}

/* ---- prompts ---- */

static cJSON *make_prompt(const struct mcp_server *srv, size_t i)
{
    const struct srv_prompt *p = &srv->prompts[i];
    cJSON *o = cJSON_CreateObject();

    if (!o || !cJSON_AddStringToObject(o, "name", p->name) ||
        (p->title && !cJSON_AddStringToObject(o, "title", p->title)) ||
        (p->description && !cJSON_AddStringToObject(o, "description", p->description)) ||
        !cJSON_AddItemReferenceToObject(o, "arguments", p->arguments)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Every prompts/get argument is a string. Returns 0, or -1 with msg filled. */
static int check_prompt_strings(const cJSON *args, char *msg, size_t size)
{
    const cJSON *a;

    cJSON_ArrayForEach(a, args) if (!cJSON_IsString(a))
    {
        snprintf(msg, size, "prompts/get: params.arguments.%.60s must be a string", a->string);
        return -1;
    }
    return 0;
}

/* Checks prompts/get arguments: an object of strings with every required one (srv->lock held).
 * Returns 0, or -1 with msg filled. Sends nothing. */
static int check_prompt_args(const struct srv_prompt *p, const cJSON *args, char *msg, size_t size)
{
    const cJSON *a;

    if (args && !cJSON_IsObject(args)) {
        snprintf(msg, size, "prompts/get: params.arguments must be an object of strings");
        return -1;
    }
    if (check_prompt_strings(args, msg, size) < 0)
        return -1;
    cJSON_ArrayForEach(a, p->arguments)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(a, "name");

        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "required")) && cJSON_IsString(n) &&
            !cJSON_GetObjectItemCaseSensitive(args, n->valuestring)) {
            snprintf(msg, size, "prompts/get: prompt %.128s needs the argument %.128s", p->name,
                     n->valuestring);
            return -1;
        }
    }
    return 0;
}

static void on_prompts_get(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                           char *id_text, size_t id_len, const struct modern_meta *modern)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
    struct mcp_server *srv = s->srv;
    mcp_handler_fn fn = NULL;
    void *arg = NULL;
    char msgbuf[400];
    int bad = 0;

    if (!cJSON_IsString(name)) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                         "prompts/get: params.name must be a string (the prompt's name)");
        goto drop;
    }
    pthread_rwlock_rdlock(&srv->lock);
    for (size_t i = 0; !fn && i < srv->nprompts; i++)
        if (strcmp(srv->prompts[i].name, name->valuestring) == 0) {
            bad = check_prompt_args(&srv->prompts[i], args, msgbuf, sizeof(msgbuf));
            fn = srv->prompts[i].get;
            arg = srv->prompts[i].arg;
        }
    if (!fn && srv->prompt_get) {
        fn = srv->prompt_get;
        arg = srv->prompt_arg;
        if (args && !cJSON_IsObject(args)) {
            snprintf(msgbuf, sizeof(msgbuf),
                     "prompts/get: params.arguments must be an object of strings");
            bad = -1;
        } else {
            bad = check_prompt_strings(args, msgbuf, sizeof(msgbuf));
        }
    }
    pthread_rwlock_unlock(&srv->lock);
    if (bad < 0) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL, "%s", msgbuf);
        goto drop;
    }
    if (!fn) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL, "Unknown prompt: %.200s",
                         name->valuestring);
        goto drop;
    }
    start_call(s, batch, origin, msg, id_text, id_len, modern, name->valuestring, args, fn, arg,
               NULL, false, NULL);
    return;
drop:
    free(id_text);
    cJSON_Delete(msg);
}

/* ---- dispatch ---- */

static void discover_handler(void *arg, struct mcp_call *c)
{
    (void)arg;
    mcp__modern_discover(c);
}

static void listen_handler(void *arg, struct mcp_call *c)
{
    (void)arg;
    mcp__modern_listen(c);
}

/* A list answered from the tables unless a provider answers it. */
static void on_list(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                    char *id_text, size_t id_len, const struct modern_meta *modern,
                    const char *method)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    struct mcp_server *srv = s->srv;
    bool resources = strcmp(method, "resources/list") == 0;
    bool templates = strcmp(method, "resources/templates/list") == 0;
    mcp_handler_fn provider;
    void *arg;
    bool offered;
    cJSON *res = NULL;

    pthread_rwlock_rdlock(&srv->lock);
    provider = templates ? NULL : resources ? srv->res_list : srv->prompt_list;
    arg = resources ? srv->res_arg : srv->prompt_arg;
    offered = resources || templates
                  ? srv->nresources || srv->ntemplates || srv->res_list || srv->res_read
                  : srv->nprompts || srv->prompt_list || srv->prompt_get;
    if (!offered) {
        pthread_rwlock_unlock(&srv->lock);
        mcp__reply_error(s, batch, origin, id, MCP_METHOD_NOT_FOUND, NULL,
                         "Method not found: %s (this server has no %s)", method,
                         resources || templates ? "resources" : "prompts");
        goto drop;
    }
    if (!provider) {
        if (resources)
            res = list_of(srv, "resources", srv->nresources, make_resource);
        else if (templates)
            res = list_of(srv, "resourceTemplates", srv->ntemplates, make_template);
        else
            res = list_of(srv, "prompts", srv->nprompts, make_prompt);
        if (!res)
            res = cJSON_CreateNull(); /* marks "out of memory" below */
    }
    pthread_rwlock_unlock(&srv->lock);
    if (provider) {
        if (check_cursor(s, batch, origin, id, method, params, true) < 0)
            goto drop;
        start_call(s, batch, origin, msg, id_text, id_len, modern, NULL, NULL, provider, arg, NULL,
                   true, NULL);
        return;
    }
    if (check_cursor(s, batch, origin, id, method, params, false) < 0) {
        cJSON_Delete(res);
        goto drop;
    }
    if (cJSON_IsNull(res)) {
        cJSON_Delete(res);
        res = NULL;
    }
    reply_list(s, batch, origin, id, modern, res, true);
drop:
    free(id_text);
    cJSON_Delete(msg);
}

void mcp__start_request(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                        char *id_text, size_t id_len, const char *method,
                        const struct modern_meta *modern, bool nul_escape)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    struct mcp_server *srv = s->srv;
    mcp_handler_fn complete;
    void *carg;

    if (strcmp(method, "tools/call") == 0) {
        on_tools_call(s, batch, origin, msg, id_text, id_len, modern, nul_escape);
        return;
    }
    if (strcmp(method, "resources/read") == 0) {
        on_resources_read(s, batch, origin, msg, id_text, id_len, modern);
        return;
    }
    if (strcmp(method, "prompts/get") == 0) {
        on_prompts_get(s, batch, origin, msg, id_text, id_len, modern);
        return;
    }
    if (strcmp(method, "resources/list") == 0 || strcmp(method, "prompts/list") == 0 ||
        strcmp(method, "resources/templates/list") == 0) {
        on_list(s, batch, origin, msg, id_text, id_len, modern, method);
        return;
    }
    if (strcmp(method, "completion/complete") == 0) {
        pthread_rwlock_rdlock(&srv->lock);
        complete = srv->complete;
        carg = srv->complete_arg;
        pthread_rwlock_unlock(&srv->lock);
        if (complete) {
            const cJSON *ref = cJSON_GetObjectItemCaseSensitive(params, "ref");
            const cJSON *argument = cJSON_GetObjectItemCaseSensitive(params, "argument");

            if (!cJSON_IsObject(ref) || !cJSON_IsObject(argument)) {
                mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                                 "completion/complete: params.ref and params.argument must be "
                                 "objects");
                goto drop;
            }
            start_call(s, batch, origin, msg, id_text, id_len, modern, NULL, NULL, complete, carg,
                       NULL, false, NULL);
            return;
        }
    }
    if (modern && strcmp(method, "server/discover") == 0) {
        start_call(s, batch, origin, msg, id_text, id_len, modern, NULL, NULL, discover_handler,
                   NULL, NULL, true, NULL);
        return;
    }
    if (modern && strcmp(method, "subscriptions/listen") == 0) {
        start_call(s, batch, origin, msg, id_text, id_len, modern, NULL, NULL, listen_handler, NULL,
                   NULL, false, NULL);
        return;
    }
    if (strcmp(method, "tools/list") == 0)
        on_tools_list(s, batch, origin, id, params, modern);
    else
        mcp__reply_error(s, batch, origin, id, MCP_METHOD_NOT_FOUND, NULL,
                         "Method not found: %.100s", method);
drop:
    free(id_text);
    cJSON_Delete(msg);
}
