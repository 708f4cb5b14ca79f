/* common/mcp_call.c - one request in flight: what a handler reads, how it answers, progress and
 * log messages about it, cancellation, and input from the client (see runbox/mcp.h).
 *
 * DESIGN
 * A call is registered in its session's table from dispatch to answer. Its state flags
 * (cancelled, answered, sending) are guarded by the session's mutex; a message about the call is
 * sent with `sending` counted up, so mcp_session_cancel_origin() can wait until no send for an
 * origin is under way. The answer builds the whole response line first (tool text is escaped
 * straight into one buffer, the proxy's hot path), then marks the call answered, waits for a
 * message about it that another thread is sending (so its progress never follows its answer),
 * unregisters it and sends, unless it was cancelled: a cancelled call's answer is dropped.
 *
 * Input: a modern request is answered with an InputRequiredResult and the client retries it as
 * a new request. A legacy session gets each input request as a JSON-RPC request of ours; the
 * answers are gathered on the call, and when the last one is in, the call goes back to its
 * handler, whose mcp_call_input_response() then finds them. */
#include "mcp_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"

const char *const mcp__log_level_names[8] = {"debug", "info",     "notice", "warning",
                                             "error", "critical", "alert",  "emergency"};

int mcp__parse_log_level(const char *s)
{
    for (int i = 0; i < 8; i++)
        if (strcmp(s, mcp__log_level_names[i]) == 0)
            return i;
    return -1;
}

/* ---- life ---- */

struct mcp_call *mcp__call_new(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                               char *id_text, size_t id_len)
{
    struct mcp_call *c = calloc(1, sizeof(*c));

    if (!c) {
        cJSON_Delete(msg);
        free(id_text);
        return NULL;
    }
    c->s = s;
    c->batch = batch;
    c->origin = origin;
    c->msg = msg;
    c->id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    c->method = cJSON_GetObjectItemCaseSensitive(msg, "method")->valuestring;
    c->params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    c->id_text = id_text;
    c->id_len = id_len;
    c->hash = mcp_calls_hash(id_text, id_len);
    c->log_level = -1;
    c->refs = 1;
    pthread_mutex_init(&c->hook_mu, NULL);
    return c;
}

static void call_free(struct mcp_call *c)
{
    cJSON_Delete(c->msg);
    cJSON_Delete(c->uri_vars);
    cJSON_Delete(c->input_responses);
    free(c->request_state);
    free(c->id_text);
    pthread_mutex_destroy(&c->hook_mu);
    free(c);
}

void mcp__call_discard(struct mcp_call *c)
{
    call_free(c);
}

int mcp__call_register(struct mcp_call *c)
{
    struct mcp_session *s = c->s;

    if (mcp_calls_add(&s->calls, c) < 0)
        return -1;
    c->registered = true;
    atomic_fetch_add(&s->refs, 1);
    if (c->batch)
        c->batch->pending++;
    return 0;
}

void mcp__call_dispatch(struct mcp_call *c)
{
    c->handler(c->handler_arg, c);
}

/* Drops a reference to c; the last one frees it and gives back its session reference. */
static void call_unref(struct mcp_call *c)
{
    struct mcp_session *s = c->s;
    bool last, registered;

    pthread_mutex_lock(&s->mu);
    last = --c->refs == 0;
    registered = c->registered;
    pthread_mutex_unlock(&s->mu);
    if (!last)
        return;
    call_free(c);
    if (registered)
        mcp__session_unref(s);
}

/* The answer is out (or dropped): unregisters c, lets its batch go on, drops its first
 * reference. A message about c that another thread is sending right now (a list change on a
 * listen stream, a progress report) uses c and its origin: c stays registered until that send
 * is over, so mcp_session_cancel_origin() waits for it and c is not freed under it. */
static void call_done(struct mcp_call *c)
{
    struct mcp_session *s = c->s;
    struct batch *batch = c->batch;

    pthread_mutex_lock(&s->mu);
    while (c->sending > 0)
        pthread_cond_wait(&s->cond, &s->mu);
    mcp_calls_remove(&s->calls, c);
    if (c->is_listen)
        mcp__listen_forget(s, c);
    pthread_mutex_unlock(&s->mu);
    if (batch)
        mcp__batch_release(s, batch);
    call_unref(c);
}

/* Sends a message about c (not its answer) unless c is cancelled or answered. */
void mcp__call_send(struct mcp_call *c, const char *line, size_t len, enum mcp_route_kind kind)
{
    struct mcp_session *s = c->s;
    struct mcp_route r = {.kind = kind, .id = c->id_text, .id_len = c->id_len, .origin = c->origin};
    bool go;

    pthread_mutex_lock(&s->mu);
    go = !c->cancelled && !c->answered && !s->closing;
    if (go)
        c->sending++;
    pthread_mutex_unlock(&s->mu);
    if (!go)
        return;
    mcp__send(s, line, len, &r);
    pthread_mutex_lock(&s->mu);
    c->sending--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
}

void mcp__call_answer_text(struct mcp_call *c, struct jsonbuf *b)
{
    struct mcp_session *s = c->s;
    struct mcp_route r = {
        .kind = MCP_ROUTE_RESPONSE, .id = c->id_text, .id_len = c->id_len, .origin = c->origin};
    size_t len = 0, want = b->len;
    char *line = jsonbuf_take(b, &len);
    bool go;

    if (!line) {
        log_error("mcp: could not build the answer to %s (%zu bytes so far)", c->id_text, want);
        line = jsonrpc_build_error(c->id, MCP_INTERNAL_ERROR,
                                   "internal error: the response could not be built (out of "
                                   "memory, or larger than 64 MiB)",
                                   NULL);
        len = line ? strlen(line) : 0;
    }
    pthread_mutex_lock(&s->mu);
    if (c->answered) { /* a second answer (a cancel racing the engine's own end of it) */
        pthread_mutex_unlock(&s->mu);
        free(line);
        return;
    }
    c->answered = true; /* no progress or log message about c starts from now on */
    /* One already on its way (another thread's) goes out first: a client never sees a call's
     * progress after its answer. */
    while (c->sending > 0)
        pthread_cond_wait(&s->cond, &s->mu);
    go = !c->cancelled && !s->closing;
    if (go)
        c->sending++;
    pthread_mutex_unlock(&s->mu);
    if (go && line) {
        if (c->batch)
            mcp__emit(s, c->batch, line, len, &r);
        else
            mcp__send(s, line, len, &r);
    }
    if (go) {
        pthread_mutex_lock(&s->mu);
        c->sending--;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->mu);
    } else {
        log_debug("mcp: the answer to %s was dropped (cancelled)", c->id_text);
    }
    free(line);
    call_done(c);
}

/* ---- cancellation ---- */

void mcp__call_mark_cancelled(struct mcp_call *c)
{
    c->cancelled = true;
    c->refs++;
}

void mcp__call_cancelled(struct mcp_call *c)
{
    bool listen;

    pthread_mutex_lock(&c->hook_mu);
    if (c->hook)
        c->hook(c, c->hook_arg); /* may answer c: the reference keeps it */
    c->hook = NULL;
    pthread_mutex_unlock(&c->hook_mu);
    pthread_mutex_lock(&c->s->mu);
    listen = c->is_listen && !c->answered;
    pthread_mutex_unlock(&c->s->mu);
    if (listen)
        mcp_call_result(c, NULL); /* a cancelled listen stream just ends (nothing is sent) */
    else
        mcp__call_abandon_inputs(c);
    call_unref(c);
}

void mcp_call_on_cancel(struct mcp_call *c, void (*fn)(struct mcp_call *c, void *arg), void *arg)
{
    bool now;

    pthread_mutex_lock(&c->hook_mu);
    pthread_mutex_lock(&c->s->mu);
    now = fn && c->cancelled;
    if (now)
        c->refs++; /* fn may answer c */
    pthread_mutex_unlock(&c->s->mu);
    c->hook = now ? NULL : fn;
    c->hook_arg = now ? NULL : arg;
    if (now)
        fn(c, arg);
    pthread_mutex_unlock(&c->hook_mu);
    if (now)
        call_unref(c);
}

bool mcp_call_is_cancelled(const struct mcp_call *c)
{
    bool v;

    pthread_mutex_lock(&c->s->mu);
    v = c->cancelled;
    pthread_mutex_unlock(&c->s->mu);
    return v;
}

/* ---- what the request asks ---- */

const char *mcp_call_method(const struct mcp_call *c)
{
    return c->method;
}

const char *mcp_call_name(const struct mcp_call *c)
{
    return c->name;
}

const cJSON *mcp_call_params(const struct mcp_call *c)
{
    return c->params;
}

const cJSON *mcp_call_arguments(const struct mcp_call *c)
{
    return c->arguments;
}

const cJSON *mcp_call_uri_vars(const struct mcp_call *c)
{
    return c->uri_vars;
}

const char *mcp_call_id_text(const struct mcp_call *c)
{
    return c->id_text;
}

const char *mcp_call_protocol(const struct mcp_call *c)
{
    return c->protocol;
}

bool mcp_call_is_modern(const struct mcp_call *c)
{
    return c->modern;
}

uint64_t mcp_call_session_serial(const struct mcp_call *c)
{
    return c->s->serial;
}

const cJSON *mcp_call_client_capabilities(const struct mcp_call *c)
{
    return c->client_caps;
}

const cJSON *mcp_call_client_info(const struct mcp_call *c)
{
    return c->client_info;
}

void mcp_call_set_data(struct mcp_call *c, void *data)
{
    c->data = data;
}

void *mcp_call_get_data(const struct mcp_call *c)
{
    return c->data;
}

/* ---- progress and log messages ---- */

bool mcp_call_wants_progress(const struct mcp_call *c)
{
    return c->progress_token != NULL;
}

bool mcp_call_may_block(const struct mcp_call *c)
{
    return !c->batch && c->origin && c->s->t->may_block && c->s->t->may_block(c->s->ctx, c->origin);
}

void mcp_call_progress(struct mcp_call *c, double progress, double total, const char *message)
{
    struct mcp_session *s = c->s;
    cJSON *params;
    char *line;

    if (!c->progress_token || !isfinite(progress))
        return;
    /* The spec wants progress to increase; a report that repeats itself is not forwarded. */
    pthread_mutex_lock(&s->mu);
    if (c->has_progress && !(progress > c->last_progress)) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    c->has_progress = true;
    c->last_progress = progress;
    pthread_mutex_unlock(&s->mu);
    params = cJSON_CreateObject();
    if (!cJSON_AddItemToObject(params, "progressToken",
                               cJSON_Duplicate(c->progress_token, false)) ||
        !cJSON_AddNumberToObject(params, "progress", progress) ||
        (total > 0 && !cJSON_AddNumberToObject(params, "total", total)) ||
        (message && !cJSON_AddStringToObject(params, "message", message))) {
        cJSON_Delete(params);
        log_warn("mcp: %s: out of memory building a progress notification", c->id_text);
        return;
    }
    line = jsonrpc_build_notification("notifications/progress", params);
    if (line)
        mcp__call_send(c, line, strlen(line), MCP_ROUTE_REQUEST);
    free(line);
}

int mcp_call_log_level(const struct mcp_call *c)
{
    int want = c->log_level;

    if (!c->modern) {
        pthread_mutex_lock(&c->s->mu);
        want = c->s->log_level;
        pthread_mutex_unlock(&c->s->mu);
    }
    return want;
}

void mcp_call_log(struct mcp_call *c, enum mcp_log_level level, const char *logger, cJSON *data)
{
    int want = mcp_call_log_level(c);
    cJSON *params;
    char *line;

    if (want < 0 || (int)level < want) {
        cJSON_Delete(data);
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
    line = jsonrpc_build_notification("notifications/message", params);
    if (line)
        mcp__call_send(c, line, strlen(line), MCP_ROUTE_REQUEST);
    free(line);
}

/* ---- answers ---- */

/* The start of a response: {"jsonrpc":"2.0","id":<id>,"result": */
static void put_head(struct jsonbuf *b, const struct mcp_call *c)
{
    jsonbuf_puts(b, "{\"jsonrpc\":\"2.0\",\"id\":", NULL);
    jsonbuf_put(b, c->id_text, c->id_len, NULL);
    jsonbuf_puts(b, ",\"result\":", NULL);
}

/* A modern result's tail: ,"resultType":"complete","_meta":{serverInfo} (before the last }). */
static void put_modern_tail(struct jsonbuf *b, const struct mcp_call *c)
{
    struct mcp_server *srv = c->s->srv;

    jsonbuf_puts(
        b, ",\"resultType\":\"complete\",\"_meta\":{\"" MCP_META_SERVER_INFO "\":{\"name\":", NULL);
    jsonbuf_put_json_string(b, srv->name, strlen(srv->name), NULL);
    jsonbuf_puts(b, ",\"version\":", NULL);
    jsonbuf_put_json_string(b, srv->version, strlen(srv->version), NULL);
    jsonbuf_puts(b, "}}", NULL);
}

/* The CallToolResult of one text block, escaped straight into b. */
static void put_tool_text(struct jsonbuf *b, const struct mcp_call *c, const char *text, size_t len,
                          bool is_error, const char *structured, size_t slen)
{
    jsonbuf_reserve(b, 160 + c->id_len + len + len / 16 + slen, NULL);
    put_head(b, c);
    jsonbuf_puts(b, "{\"content\":[{\"type\":\"text\",\"text\":", NULL);
    jsonbuf_put_json_string(b, text, len, NULL);
    jsonbuf_puts(b, "}]", NULL);
    if (structured) {
        jsonbuf_puts(b, ",\"structuredContent\":", NULL);
        jsonbuf_put(b, structured, slen, NULL);
    }
    jsonbuf_puts(b, is_error ? ",\"isError\":true" : ",\"isError\":false", NULL);
    if (c->modern)
        put_modern_tail(b, c);
    jsonbuf_puts(b, "}}", NULL);
}

void mcp_call_result_text_structured(struct mcp_call *c, const char *text, size_t len,
                                     cJSON *structured)
{
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);
    char *sc = NULL;

    if (structured && cJSON_IsObject(structured) && c->tool.has_output_schema) {
        sc = cJSON_PrintUnformatted(structured);
        if (!sc)
            b.failed = true;
    }
    if (!b.failed)
        put_tool_text(&b, c, text ? text : "", text ? len : 0, false, sc, sc ? strlen(sc) : 0);
    cJSON_free(sc);
    cJSON_Delete(structured);
    mcp__call_answer_text(c, &b);
}

void mcp_call_result_text(struct mcp_call *c, const char *text, size_t len)
{
    mcp_call_result_text_structured(c, text, len, NULL);
}

void mcp_call_tool_error(struct mcp_call *c, const char *message)
{
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);

    if (!message)
        message = "the tool failed without saying why";
    put_tool_text(&b, c, message, strlen(message), true, NULL, 0);
    mcp__call_answer_text(c, &b);
}

void mcp_call_result(struct mcp_call *c, cJSON *result)
{
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);
    char *text;

    if (!result)
        result = cJSON_CreateObject();
    if (c->modern && result && c->is_listen) {
        cJSON *meta = cJSON_AddObjectToObject(result, "_meta");

        if (meta)
            cJSON_AddItemToObject(meta, MCP_META_SUBSCRIPTION, cJSON_Parse(c->id_text));
    }
    if (c->modern && result && mcp__modern_decorate(c->s->srv, result, c->cacheable) < 0)
        b.failed = true;
    text = result && !b.failed ? cJSON_PrintUnformatted(result) : NULL;
    if (!text) {
        b.failed = true;
    } else {
        put_head(&b, c);
        jsonbuf_puts(&b, text, NULL);
        jsonbuf_puts(&b, "}", NULL);
    }
    cJSON_free(text);
    cJSON_Delete(result);
    mcp__call_answer_text(c, &b);
}

void mcp_call_error(struct mcp_call *c, int code, const char *message, cJSON *data)
{
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);
    char *line = jsonrpc_build_error(c->id, code, message ? message : "error", data);

    if (line)
        jsonbuf_puts(&b, line, NULL);
    else
        b.failed = true;
    free(line);
    mcp__call_answer_text(c, &b);
}

/* ---- input from the client ---- */

const cJSON *mcp_call_input_response(const struct mcp_call *c, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->retry_responses, key);

    if (!v)
        v = cJSON_GetObjectItemCaseSensitive(c->input_responses, key);
    return v;
}

const char *mcp_call_request_state(const struct mcp_call *c)
{
    return c->request_state;
}

/* The client capability an input request needs, by its method; NULL for an unknown method. */
static const char *input_capability(const char *method)
{
    if (strcmp(method, "elicitation/create") == 0)
        return "elicitation";
    if (strcmp(method, "sampling/createMessage") == 0)
        return "sampling";
    if (strcmp(method, "roots/list") == 0)
        return "roots";
    return NULL;
}

/* Checks every input request: a known method and a capability the client declared. Returns 0,
 * or answers c with the error and returns -1. */
static int check_inputs(struct mcp_call *c, const cJSON *reqs)
{
    const cJSON *r;

    if (!cJSON_IsObject(reqs) || !reqs->child) {
        mcp_call_error(c, MCP_INTERNAL_ERROR,
                       "internal error: the tool asked for input without saying which", NULL);
        return -1;
    }
    cJSON_ArrayForEach(r, reqs)
    {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "method");
        const char *cap = cJSON_IsString(m) ? input_capability(m->valuestring) : NULL;
        cJSON *data, *need;

        if (!cap) {
            mcp_call_error(c, MCP_INTERNAL_ERROR,
                           "internal error: input request has an unknown method", NULL);
            return -1;
        }
        if (cJSON_GetObjectItemCaseSensitive(c->client_caps, cap))
            continue;
        data = cJSON_CreateObject();
        need = data ? cJSON_AddObjectToObject(data, "requiredCapabilities") : NULL;
        if (need)
            cJSON_AddObjectToObject(need, cap);
        if (c->modern)
            mcp_call_error(c, MCP_MISSING_CAPABILITY, "Missing required client capability", data);
        else {
            cJSON_Delete(data);
            mcp_call_error(c, MCP_INVALID_PARAMS,
                           "this tool needs the client capability it did not declare in "
                           "initialize",
                           NULL);
        }
        return -1;
    }
    return 0;
}

/* Modern: the InputRequiredResult. */
static void input_required_modern(struct mcp_call *c, cJSON *reqs, const char *state)
{
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);
    cJSON *res = cJSON_CreateObject();
    char *sealed = state ? mcp__state_seal(state) : NULL;
    char *text;

    if (!res || (state && !sealed) ||
        !cJSON_AddStringToObject(res, "resultType", "input_required") ||
        !cJSON_AddItemToObject(res, "inputRequests", reqs) ||
        (sealed && !cJSON_AddStringToObject(res, "requestState", sealed))) {
        free(sealed);
        if (!cJSON_GetObjectItemCaseSensitive(res, "inputRequests"))
            cJSON_Delete(reqs);
        cJSON_Delete(res);
        mcp_call_error(c, MCP_INTERNAL_ERROR, "internal error: out of memory", NULL);
        return;
    }
    free(sealed);
    text = cJSON_PrintUnformatted(res);
    cJSON_Delete(res);
    if (!text) {
        b.failed = true;
    } else {
        put_head(&b, c);
        jsonbuf_puts(&b, text, NULL);
        jsonbuf_puts(&b, "}", NULL);
    }
    cJSON_free(text);
    mcp__call_answer_text(c, &b);
}

/* Legacy: one JSON-RPC request of ours per input request; the call waits for the answers. */
static void input_required_legacy(struct mcp_call *c, cJSON *reqs, const char *state)
{
    struct mcp_session *s = c->s;
    cJSON *r;
    size_t n = 0;

    pthread_mutex_lock(&s->mu);
    free(c->request_state);
    c->request_state = state ? strdup(state) : NULL;
    cJSON_Delete(c->input_responses);
    c->input_responses = cJSON_CreateObject();
    cJSON_ArrayForEach(r, reqs) n++;
    c->inputs_pending = n;
    pthread_mutex_unlock(&s->mu);
    cJSON_ArrayForEach(r, reqs)
    {
        struct pending_input *p = calloc(1, sizeof(*p));
        cJSON *params = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(r, "params"), true);
        cJSON *msg = cJSON_CreateObject();
        char *line = NULL;

        if (p && msg && (p->key = strdup(r->string))) {
            pthread_mutex_lock(&s->mu);
            snprintf(p->id, sizeof(p->id), "rbx-in-%llu", (unsigned long long)++s->next_input_id);
            p->call = c;
            p->next = s->inputs;
            s->inputs = p;
            pthread_mutex_unlock(&s->mu);
            cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
            cJSON_AddStringToObject(msg, "id", p->id);
            cJSON_AddStringToObject(msg, "method",
                                    cJSON_GetObjectItemCaseSensitive(r, "method")->valuestring);
            if (params)
                cJSON_AddItemToObject(msg, "params", params);
            params = NULL;
            line = cJSON_PrintUnformatted(msg);
            p = NULL;
        }
        if (line)
            mcp__call_send(c, line, strlen(line), MCP_ROUTE_REQUEST);
        else
            log_error("mcp: %s: out of memory sending an input request", c->id_text);
        cJSON_free(line);
        cJSON_Delete(msg);
        cJSON_Delete(params);
        if (p) {
            free(p->key);
            free(p);
        }
    }
    cJSON_Delete(reqs);
}

void mcp_call_input_required(struct mcp_call *c, cJSON *input_requests, const char *request_state)
{
    if (check_inputs(c, input_requests) < 0) {
        cJSON_Delete(input_requests);
        return;
    }
    if (c->modern)
        input_required_modern(c, input_requests, request_state);
    else
        input_required_legacy(c, input_requests, request_state);
}

/* Forgets every pending input request of c; returns how many answers it still waited for
 * (0: nothing was pending, someone else ends the call). */
static size_t forget_inputs(struct mcp_session *s, struct mcp_call *c)
{
    size_t had;

    pthread_mutex_lock(&s->mu);
    for (struct pending_input **pp = &s->inputs; *pp;) {
        struct pending_input *p = *pp;

        if (p->call != c) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        free(p->key);
        free(p);
    }
    had = c->inputs_pending;
    c->inputs_pending = 0;
    pthread_mutex_unlock(&s->mu);
    return had;
}

void mcp__input_answered(struct mcp_session *s, const char *id, cJSON *result, cJSON *error)
{
    struct pending_input **pp, *p = NULL;
    struct mcp_call *c = NULL;
    bool ready = false, cancelled = false;

    pthread_mutex_lock(&s->mu);
    for (pp = &s->inputs; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->id, id) == 0) {
            p = *pp;
            *pp = p->next;
            break;
        }
    if (p) {
        c = p->call;
        cancelled = c->cancelled;
        if (!error && result)
            cJSON_AddItemToObject(c->input_responses, p->key, result);
        else
            cJSON_Delete(result);
        result = NULL;
        ready = --c->inputs_pending == 0;
    }
    pthread_mutex_unlock(&s->mu);
    cJSON_Delete(result);
    if (!p) {
        log_debug("mcp: an answer to %.60s, which we never asked, was ignored", id);
        cJSON_Delete(error);
        return;
    }
    free(p->key);
    free(p);
    if (error) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(error, "message");
        char msg[300];

        snprintf(msg, sizeof(msg), "the client refused the tool's input request: %s",
                 cJSON_IsString(m) ? m->valuestring : "(no message)");
        cJSON_Delete(error);
        /* The other requests of this call are forgotten: their answers will be ignored. */
        if (!ready && forget_inputs(s, c) == 0)
            return; /* abandoned meanwhile by a cancel, which ends the call */
        mcp_call_error(c, MCP_INTERNAL_ERROR, msg, NULL);
        return;
    }
    (void)cancelled;
    if (ready)
        mcp__call_dispatch(c); /* the handler runs again, now with every answer */
}

void mcp__call_abandon_inputs(struct mcp_call *c)
{
    if (forget_inputs(c->s, c) > 0) /* nobody else will answer c */
        mcp_call_error(c, MCP_INTERNAL_ERROR, "cancelled while waiting for the client's input",
                       NULL); /* dropped: the call is cancelled */
}
