/* common/mcp_session.c - one client session: parsing and dispatching messages, batches, the
 * legacy handshake and session state (initialize, ping, logging/setLevel, resources/subscribe),
 * cancellation, the client's answers to our input requests, and closing (see runbox/mcp.h).
 *
 * DESIGN
 * Each message is parsed once, outside any lock. A request is checked for an id already in
 * flight under the session's mutex, then either answered here (the legacy session methods) or
 * handed to mcp_lists.c, which turns it into a call: the call owns the whole parsed message, and
 * everything a handler reads is borrowed from that tree.
 *
 * Batches (2025-03-26 only): the array's members are detached one by one and handled like
 * single messages, except that their answers are appended to the batch's buffer. The batch
 * counts the answers it still owes, plus one while its members are being dispatched, so a call
 * answered inside its handler cannot complete the batch early; the array is sent when the count
 * reaches zero, and nothing is sent when no member was a request.
 *
 * A session lives while it is open or any call, broadcast or pending input holds a reference;
 * the last reference frees it and tells the transport (closed). */
#include "mcp_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clocks.h"
#include "jsonrpc.h"
#include "log.h"
#include "utf8.h"

#define MCP_BATCH_VERSION "2025-03-26"

static const char *const legacy_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18",
                                              "2025-11-25"};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- answering ---- */

/* Writes v in decimal at out (size >= 21) with no NUL; returns the length. */
static int put_int(char *out, size_t size, int64_t v)
{
    char rev[20];
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    int n = 0, len = 0;

    do {
        rev[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        out[len++] = '-';
    while (n > 0 && (size_t)len < size)
        out[len++] = rev[--n];
    return len;
}

void mcp__put_id(struct jsonbuf *b, const cJSON *id)
{
    char num[40];
    int n;

    if (cJSON_IsString(id)) {
        jsonbuf_put_json_string(b, id->valuestring, strlen(id->valuestring), NULL);
        return;
    }
    if (cJSON_IsRaw(id)) { /* a string id with a NUL: its exact JSON text */
        jsonbuf_puts(b, id->valuestring, NULL);
        return;
    }
    if (!cJSON_IsNumber(id)) {
        jsonbuf_put(b, "null", 4, NULL);
        return;
    }
    /* Integers print exactly; a huge one falls back to exponent form, still valid JSON. The
     * usual id, a whole number below 2^53 (not -0), is printed by hand: "%.0f" goes through
     * glibc's floating-point printer, a visible part of a quick call's time. */
    if (fabs(id->valuedouble) < 9007199254740992.0 &&
        id->valuedouble == (double)(int64_t)id->valuedouble &&
        !(id->valuedouble == 0 && signbit(id->valuedouble)))
        n = put_int(num, sizeof(num), (int64_t)id->valuedouble);
    else if (fabs(id->valuedouble) < 1e18)
        n = snprintf(num, sizeof(num), "%.0f", id->valuedouble);
    else
        n = snprintf(num, sizeof(num), "%.17g", id->valuedouble);
    if (n > 0 && (size_t)n < sizeof(num))
        jsonbuf_put(b, num, (size_t)n, NULL);
    else
        jsonbuf_put(b, "null", 4, NULL);
}

void mcp__send(struct mcp_session *s, const char *json, size_t len, const struct mcp_route *route)
{
    char *clean;
    size_t w = 0;

    if (utf8_valid_prefix(json, len) == len) {
        s->t->send(s->ctx, json, len, route);
        return;
    }
    clean = len <= SIZE_MAX / 3 ? malloc(3 * len) : NULL;
    if (!clean) {
        log_error("mcp: out of memory making a message UTF-8; not sent");
        return;
    }
    utf8_sanitize(clean, 3 * len, json, len, false, &w);
    s->t->send(s->ctx, clean, w, route);
    free(clean);
}

void mcp__emit(struct mcp_session *s, struct batch *batch, const char *json, size_t len,
               const struct mcp_route *route)
{
    pthread_mutex_lock(&s->mu);
    if (s->closing) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    if (batch) {
        jsonbuf_put(&batch->out, batch->answers ? "," : "[", 1, NULL);
        jsonbuf_put(&batch->out, json, len, NULL);
        batch->answers++;
        pthread_mutex_unlock(&s->mu);
        return;
    }
    pthread_mutex_unlock(&s->mu);
    mcp__send(s, json, len, route);
}

void mcp__emit_response(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                        const char *line, size_t len)
{
    struct jsonbuf idb = JSONBUF_INIT(MCP_ID_TEXT_MAX);
    struct mcp_route r = {.kind = MCP_ROUTE_RESPONSE, .origin = origin};

    if (id && !cJSON_IsNull(id)) {
        mcp__put_id(&idb, id);
        if (!idb.failed) { /* never a cut id: no id at all */
            r.id = idb.data;
            r.id_len = idb.len;
        }
    }
    mcp__emit(s, batch, line, len, &r);
    jsonbuf_cleanup(&idb);
}

void mcp__reply_error(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                      int code, cJSON *data, const char *fmt, ...)
{
    char msg[512], clean[3 * sizeof(msg)];
    size_t w = 0;
    char *line;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* The message may quote the client's bytes (a method name, a tool name): every byte we send
     * is UTF-8, so invalid ones become U+FFFD, and a character vsnprintf cut is dropped. */
    utf8_sanitize(clean, sizeof(clean) - 1, msg, utf8_cut(msg, strlen(msg)), false, &w);
    clean[w] = '\0';
    line = jsonrpc_build_error(id, code, clean, data);
    if (!line) {
        log_error("mcp: out of memory building the error \"%s\"", msg);
        return;
    }
    mcp__emit_response(s, batch, origin, id, line, strlen(line));
    free(line);
}

void mcp__reply_result(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                       cJSON *result)
{
    char *line = jsonrpc_build_result(id, result);

    if (!line) {
        mcp__reply_error(s, batch, origin, id, MCP_INTERNAL_ERROR, NULL,
                         "internal error: out of memory");
        return;
    }
    mcp__emit_response(s, batch, origin, id, line, strlen(line));
    free(line);
}

void mcp__batch_release(struct mcp_session *s, struct batch *b)
{
    struct mcp_route r = {.kind = MCP_ROUTE_RESPONSE, .origin = b->origin};
    size_t len = 0;
    char *line = NULL;
    bool done, send = false;

    pthread_mutex_lock(&s->mu);
    done = --b->pending == 0;
    if (done && b->answers && !s->closing) {
        jsonbuf_put(&b->out, "]", 1, NULL);
        line = jsonbuf_take(&b->out, &len);
        send = true;
    }
    pthread_mutex_unlock(&s->mu);
    if (!done)
        return;
    if (send && line)
        mcp__send(s, line, len, &r);
    else if (send)
        mcp__reply_error(s, NULL, b->origin, NULL, MCP_INTERNAL_ERROR, NULL,
                         "internal error: the batch response could not be built (out of memory or "
                         "larger than %zu bytes)",
                         MCP_RESPONSE_MAX);
    free(line);
    jsonbuf_cleanup(&b->out);
    free(b);
}

/* ---- life ---- */

static _Atomic uint64_t next_serial; /* sessions opened so far, for mcp_call_session_serial */

struct mcp_session *mcp_session_new(struct mcp_server *srv, const struct mcp_transport *t,
                                    void *ctx, unsigned flags, struct errinfo *err)
{
    struct mcp_session *s = calloc(1, sizeof(*s));

    if (!s || !(s->client_caps = cJSON_CreateObject()) || !(s->subscribed = cJSON_CreateArray())) {
        if (s) {
            cJSON_Delete(s->client_caps);
            free(s);
        }
        errinfo_set(err, ERR_NOMEM, "out of memory for an MCP session");
        return NULL;
    }
    s->srv = srv;
    s->t = t;
    s->ctx = ctx;
    s->flags = flags;
    s->serial = atomic_fetch_add(&next_serial, 1) + 1;
    s->log_level = -1;
    atomic_init(&s->refs, 1);
    pthread_mutex_init(&s->mu, NULL);
    clocks_cond_init(&s->cond);
    mcp__server_attach(srv, s);
    return s;
}

static void session_free(struct mcp_session *s)
{
    mcp__server_detach(s->srv, s);
    mcp__interest_unsubscribe_all(s->srv, s->subscribed);
    mcp__interest_log_level(s->srv, s, s->log_level, -1);
    while (s->inputs) {
        struct pending_input *p = s->inputs;

        s->inputs = p->next;
        free(p->key);
        free(p);
    }
    free(s->calls.buckets);
    cJSON_Delete(s->client_caps);
    cJSON_Delete(s->client_info);
    cJSON_Delete(s->subscribed);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
    if (s->t->closed)
        s->t->closed(s->ctx);
    free(s);
}

void mcp__session_unref(struct mcp_session *s)
{
    if (atomic_fetch_sub(&s->refs, 1) == 1)
        session_free(s);
}

/* Cancels every call for which pick(call, arg) is true (s->mu not held). Listen streams among
 * them are ended here (nothing is sent: they were cancelled). */
static void cancel_where(struct mcp_session *s, bool (*pick)(const struct mcp_call *, void *),
                         void *arg)
{
    for (;;) {
        struct mcp_call *victim = NULL;

        pthread_mutex_lock(&s->mu);
        for (size_t i = 0; i < s->calls.nbuckets && !victim; i++)
            for (struct mcp_call *c = s->calls.buckets[i]; c && !victim; c = c->next)
                if (!c->cancelled && !c->answered && pick(c, arg))
                    victim = c;
        if (victim)
            mcp__call_mark_cancelled(victim); /* victim stays while it is handled */
        pthread_mutex_unlock(&s->mu);
        if (!victim)
            return;
        mcp__call_cancelled(victim);
    }
}

static bool pick_all(const struct mcp_call *c, void *arg)
{
    (void)c;
    (void)arg;
    return true;
}

static bool pick_origin(const struct mcp_call *c, void *arg)
{
    return c->origin == arg;
}

void mcp_session_close(struct mcp_session *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->closing = true; /* from now on nothing is sent: not even a batch's partial answer */
    pthread_mutex_unlock(&s->mu);
    cancel_where(s, pick_all, NULL);
    mcp__session_unref(s);
}

/* True when a call of origin is being sent right now (s->mu held). */
static bool origin_sending(struct mcp_session *s, void *origin)
{
    for (size_t i = 0; i < s->calls.nbuckets; i++)
        for (struct mcp_call *c = s->calls.buckets[i]; c; c = c->next)
            if (c->origin == origin && c->sending)
                return true;
    return false;
}

void mcp_session_cancel_origin(struct mcp_session *s, void *origin)
{
    cancel_where(s, pick_origin, origin);
    pthread_mutex_lock(&s->mu);
    while (origin_sending(s, origin))
        pthread_cond_wait(&s->cond, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

const char *mcp_session_protocol(const struct mcp_session *s)
{
    return s->protocol;
}

size_t mcp_session_inflight(const struct mcp_session *s)
{
    size_t n;

    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    n = s->calls.count;
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
    return n;
}

/* ---- the legacy session methods ---- */

static void on_initialize(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                          const cJSON *params)
{
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(params, "capabilities");
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(params, "clientInfo");
    struct mcp_server *srv = s->srv;
    const char *chosen = MCP_PROTOCOL_LEGACY, *already;
    cJSON *res, *server;

    if (batch) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_REQUEST, NULL,
                         "initialize must not be part of a JSON-RPC batch");
        return;
    }
    if (!cJSON_IsString(want)) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                         "initialize: params.protocolVersion must be a string, e.g. \"%s\"",
                         MCP_PROTOCOL_LEGACY);
        return;
    }
    for (size_t i = 0; i < COUNT_OF(legacy_versions); i++)
        if (strcmp(want->valuestring, legacy_versions[i]) == 0)
            chosen = legacy_versions[i];
    pthread_mutex_lock(&s->mu);
    already = s->protocol;
    if (!already) {
        s->protocol = chosen;
        if (cJSON_IsObject(caps)) {
            cJSON_Delete(s->client_caps);
            s->client_caps = cJSON_Duplicate(caps, true);
            if (!s->client_caps)
                s->client_caps = cJSON_CreateObject();
        }
        if (cJSON_IsObject(info))
            s->client_info = cJSON_Duplicate(info, true);
    }
    pthread_mutex_unlock(&s->mu);
    if (already) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_REQUEST, NULL,
                         "already initialized (protocol version %s)", already);
        return;
    }
    res = cJSON_CreateObject();
    server = cJSON_AddObjectToObject(res, "serverInfo");
    if (!cJSON_AddStringToObject(res, "protocolVersion", chosen) ||
        !cJSON_AddItemToObject(res, "capabilities", mcp__capabilities(srv)) || !server ||
        !cJSON_AddStringToObject(server, "name", srv->name) ||
        (srv->title && !cJSON_AddStringToObject(server, "title", srv->title)) ||
        !cJSON_AddStringToObject(server, "version", srv->version) ||
        (srv->instructions && !cJSON_AddStringToObject(res, "instructions", srv->instructions))) {
        cJSON_Delete(res);
        mcp__reply_error(s, batch, origin, id, MCP_INTERNAL_ERROR, NULL,
                         "internal error: out of memory");
        return;
    }
    log_info("mcp: initialized with protocol %s (client asked for %.40s)", chosen,
             want->valuestring);
    mcp__reply_result(s, batch, origin, id, res);
}

static void on_set_level(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                         const cJSON *params)
{
    const cJSON *level = cJSON_GetObjectItemCaseSensitive(params, "level");
    int lv = cJSON_IsString(level) ? mcp__parse_log_level(level->valuestring) : -1;

    if (lv < 0) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                         "logging/setLevel: params.level must be one of debug, info, notice, "
                         "warning, error, critical, alert, emergency");
        return;
    }
    pthread_mutex_lock(&s->mu);
    mcp__interest_log_level(s->srv, s, s->log_level, lv);
    s->log_level = lv;
    pthread_mutex_unlock(&s->mu);
    mcp__reply_result(s, batch, origin, id, NULL);
}

/* resources/subscribe and resources/unsubscribe (legacy). */
static void on_subscribe(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                         const cJSON *params, bool subscribe)
{
    const cJSON *uri = cJSON_GetObjectItemCaseSensitive(params, "uri");
    const cJSON *u;
    struct errinfo err = {0};
    int at = -1, i = 0, rc = 0;

    if (!cJSON_IsString(uri) || !uri->valuestring[0]) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                         "%s: params.uri must be a non-empty string",
                         subscribe ? "resources/subscribe" : "resources/unsubscribe");
        return;
    }
    pthread_mutex_lock(&s->mu);
    cJSON_ArrayForEach(u, s->subscribed)
    {
        if (strcmp(u->valuestring, uri->valuestring) == 0)
            at = i;
        i++;
    }
    if (subscribe && at < 0) {
        cJSON *copy = cJSON_CreateString(uri->valuestring);

        rc = copy ? mcp__interest_subscribe(s->srv, uri->valuestring, &err) : -1;
        if (rc == 0)
            cJSON_AddItemToArray(s->subscribed, copy);
        else
            cJSON_Delete(copy);
    } else if (!subscribe && at >= 0) {
        cJSON_DeleteItemFromArray(s->subscribed, at);
        mcp__interest_unsubscribe(s->srv, uri->valuestring);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc < 0)
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL, "resources/subscribe: %s",
                         err.msg[0] ? err.msg : "out of memory");
    else
        mcp__reply_result(s, batch, origin, id, NULL);
}

/* ---- dispatch ---- */

static bool is_integer_number(const cJSON *v)
{
    return cJSON_IsNumber(v) && jsonrpc_is_whole(v->valuedouble);
}

/* The legacy-only methods, which a modern request may not use. */
static bool is_legacy_only(const char *m)
{
    static const char *const names[] = {"initialize", "ping", "logging/setLevel",
                                        "resources/subscribe", "resources/unsubscribe"};

    for (size_t i = 0; i < COUNT_OF(names); i++)
        if (strcmp(m, names[i]) == 0)
            return true;
    return false;
}

/* True when params is an object whose _meta names a protocol version (a modern request). */
static bool has_modern_meta(const cJSON *params)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");

    return cJSON_IsObject(meta) && cJSON_GetObjectItemCaseSensitive(meta, MCP_META_VERSION);
}

/* A modern request. Takes ownership of msg and id_text. */
static void on_modern(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                      char *id_text, size_t id_len, const char *method, bool nul_escape)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    struct modern_meta m;

    if (mcp__modern_check(s, batch, origin, id, params, &m) < 0)
        goto drop;
    if (is_legacy_only(method)) {
        mcp__reply_error(s, batch, origin, id, MCP_METHOD_NOT_FOUND, NULL,
                         "Method not found: %s is not part of protocol %s", method, m.version);
        goto drop;
    }
    mcp__start_request(s, batch, origin, msg, id_text, id_len, method, &m, nul_escape);
    return;
drop:
    free(id_text);
    cJSON_Delete(msg);
}

/* A legacy request. Takes ownership of msg and id_text. */
static void on_legacy(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                      char *id_text, size_t id_len, const char *method, bool nul_escape)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    const char *proto;

    if (s->flags & MCP_SESSION_MODERN_ONLY) {
        if (strcmp(method, "initialize") == 0)
            mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                             "initialize has no session here: start one on the MCP endpoint "
                             "itself, or send %s requests with params._meta",
                             MCP_PROTOCOL_MODERN);
        else
            mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                             "%.100s: params._meta must carry \"" MCP_META_VERSION
                             "\" and \"" MCP_META_CAPABILITIES
                             "\" (protocol %s), or send it in a session opened with initialize",
                             method, MCP_PROTOCOL_MODERN);
        goto drop;
    }
    pthread_mutex_lock(&s->mu);
    proto = s->protocol;
    pthread_mutex_unlock(&s->mu);
    if (strcmp(method, "initialize") == 0)
        on_initialize(s, batch, origin, id, params);
    else if (strcmp(method, "ping") == 0)
        mcp__reply_result(s, batch, origin, id, NULL);
    else if (!proto)
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_REQUEST, NULL,
                         "not initialized: send initialize first (got %.100s)", method);
    else if (strcmp(method, "logging/setLevel") == 0)
        on_set_level(s, batch, origin, id, params);
    else if (strcmp(method, "resources/subscribe") == 0 ||
             strcmp(method, "resources/unsubscribe") == 0)
        on_subscribe(s, batch, origin, id, params, method[10] == 's');
    else {
        mcp__start_request(s, batch, origin, msg, id_text, id_len, method, NULL, nul_escape);
        return;
    }
drop:
    free(id_text);
    cJSON_Delete(msg);
}

/* Handles a request. Takes ownership of msg. */
static void on_request(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                       bool nul_escape)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const char *method = cJSON_GetObjectItemCaseSensitive(msg, "method")->valuestring;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    struct jsonbuf idb = JSONBUF_INIT(MCP_ID_TEXT_MAX);
    size_t id_len = 0;
    char *id_text;
    bool dup;

    mcp__put_id(&idb, id);
    if (idb.failed) {
        mcp__reply_error(s, batch, origin, id, MCP_INTERNAL_ERROR, NULL,
                         "internal error: out of memory");
        jsonbuf_cleanup(&idb);
        cJSON_Delete(msg);
        return;
    }
    pthread_mutex_lock(&s->mu);
    dup = mcp_calls_find(&s->calls, idb.data, idb.len) != NULL;
    pthread_mutex_unlock(&s->mu);
    if (dup) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_REQUEST, NULL,
                         "request id %.*s is already in use by a request in flight; use a new id "
                         "for every request",
                         (int)(idb.len > 100 ? 100 : idb.len), idb.data);
        jsonbuf_cleanup(&idb);
        cJSON_Delete(msg);
        return;
    }
    if (params && !cJSON_IsObject(params)) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                         "%.100s: params must be an object", method);
        jsonbuf_cleanup(&idb);
        cJSON_Delete(msg);
        return;
    }
    id_text = jsonbuf_take(&idb, &id_len);
    log_debug("mcp: request %.64s %s", method, id_text ? id_text : "?");
    if (has_modern_meta(params))
        on_modern(s, batch, origin, msg, id_text, id_len, method, nul_escape);
    else
        on_legacy(s, batch, origin, msg, id_text, id_len, method, nul_escape);
}

static void on_cancelled(struct mcp_session *s, const cJSON *params)
{
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(params, "requestId");
    struct jsonbuf b = JSONBUF_INIT(MCP_ID_TEXT_MAX);
    struct mcp_call *c = NULL;
    bool tell = false;

    /* A raw requestId is a string id with a NUL (jsonrpc_keep_nul_ids). */
    if (!cJSON_IsString(rid) && !cJSON_IsRaw(rid) && !is_integer_number(rid)) {
        log_debug("mcp: notifications/cancelled without a usable requestId; ignored");
        return;
    }
    mcp__put_id(&b, rid);
    pthread_mutex_lock(&s->mu);
    if (!b.failed)
        c = mcp_calls_find(&s->calls, b.data, b.len);
    if (c && !c->cancelled && !c->answered) {
        mcp__call_mark_cancelled(c);
        /* The transport hears that no answer will come, counted as a send so that
         * mcp_session_cancel_origin() waits for it while the origin is still there. */
        tell = s->t->unanswered && !c->batch && !s->closing;
        if (tell)
            c->sending++;
    } else {
        c = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    if (!c) {
        /* Races are normal: the call may have just finished. */
        log_debug("mcp: cancel for %.*s, which is not in flight; ignored",
                  (int)(b.len > 100 ? 100 : b.len), b.data ? b.data : "");
        jsonbuf_cleanup(&b);
        return;
    }
    log_debug("mcp: request %s cancelled by the client", c->id_text);
    if (tell) {
        struct mcp_route r = {
            .kind = MCP_ROUTE_RESPONSE, .id = c->id_text, .id_len = c->id_len, .origin = c->origin};

        s->t->unanswered(s->ctx, &r);
        pthread_mutex_lock(&s->mu);
        c->sending--;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->mu);
    }
    mcp__call_cancelled(c);
    jsonbuf_cleanup(&b);
}

/* Handles a notification; never answered. */
static void on_notification(struct mcp_session *s, const cJSON *msg)
{
    const char *method = cJSON_GetObjectItemCaseSensitive(msg, "method")->valuestring;

    if (strcmp(method, "notifications/cancelled") == 0) {
        on_cancelled(s, cJSON_GetObjectItemCaseSensitive(msg, "params"));
    } else if (strcmp(method, "notifications/initialized") == 0) {
        pthread_mutex_lock(&s->mu);
        s->client_ready = true;
        pthread_mutex_unlock(&s->mu);
    } else {
        log_debug("mcp: notification %.64s ignored", method);
    }
}

/* A response from the client: the answer to one of our input requests, else ignored. */
static void on_response(struct mcp_session *s, cJSON *msg)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    cJSON *result = cJSON_DetachItemFromObjectCaseSensitive(msg, "result");
    cJSON *error = cJSON_DetachItemFromObjectCaseSensitive(msg, "error");

    if (cJSON_IsString(id))
        mcp__input_answered(s, id->valuestring, result, error);
    else {
        log_debug("mcp: a response from the client for an id we never used was ignored");
        cJSON_Delete(result);
        cJSON_Delete(error);
    }
}

/* Handles one message (not an array, or a member of a batch). Takes ownership of msg. */
static void handle_one(struct mcp_session *s, struct batch *batch, void *origin, cJSON *msg,
                       bool nul_escape)
{
    const char *why = "unknown";

    switch (jsonrpc_classify(msg, &why)) {
    case JSONRPC_KIND_REQUEST:
        on_request(s, batch, origin, msg, nul_escape);
        return;
    case JSONRPC_KIND_NOTIFICATION:
        on_notification(s, msg);
        break;
    case JSONRPC_KIND_RESPONSE:
        on_response(s, msg);
        break;
    case JSONRPC_KIND_BATCH:
        mcp__reply_error(s, batch, origin, NULL, MCP_INVALID_REQUEST, NULL,
                         "Invalid Request: a batch must not contain another batch");
        break;
    case JSONRPC_KIND_INVALID:
        mcp__reply_error(s, batch, origin, jsonrpc_usable_id(msg), MCP_INVALID_REQUEST, NULL,
                         "Invalid Request: %s", why);
        break;
    }
    cJSON_Delete(msg);
}

/* Handles a JSON array. Takes ownership of arr. */
static void handle_batch(struct mcp_session *s, void *origin, cJSON *arr, bool nul_escape)
{
    struct batch *b;
    const char *proto;

    pthread_mutex_lock(&s->mu);
    proto = s->protocol;
    pthread_mutex_unlock(&s->mu);
    if (!proto || strcmp(proto, MCP_BATCH_VERSION) != 0 || (s->flags & MCP_SESSION_NO_BATCH)) {
        if (proto)
            mcp__reply_error(s, NULL, origin, NULL, MCP_INVALID_REQUEST, NULL,
                             "JSON-RPC batches (arrays) are not supported with the negotiated "
                             "protocol version %s (only %s has them); send one message at a time",
                             proto, MCP_BATCH_VERSION);
        else
            mcp__reply_error(s, NULL, origin, NULL, MCP_INVALID_REQUEST, NULL,
                             "JSON-RPC batches (arrays) are not supported before initialize or in "
                             "protocol %s; send one message at a time",
                             MCP_PROTOCOL_MODERN);
        goto out;
    }
    if (!arr->child) {
        mcp__reply_error(s, NULL, origin, NULL, MCP_INVALID_REQUEST, NULL,
                         "Invalid Request: empty batch");
        goto out;
    }
    b = calloc(1, sizeof(*b));
    if (!b) {
        mcp__reply_error(s, NULL, origin, NULL, MCP_INTERNAL_ERROR, NULL,
                         "internal error: out of memory");
        goto out;
    }
    jsonbuf_init(&b->out, MCP_RESPONSE_MAX);
    b->pending = 1; /* held while dispatching */
    b->origin = origin;
    while (arr->child)
        handle_one(s, b, origin, cJSON_DetachItemViaPointer(arr, arr->child), nul_escape);
    mcp__batch_release(s, b);
out:
    cJSON_Delete(arr);
}

/* Parses a message that holds a \u0000 escape, which jsonrpc_parse() refuses as a whole; the
 * tree is needed to answer a tools/call with a tool error that says what to do instead. The
 * caller has checked the nesting depth. NULL when it is not valid JSON. */
static cJSON *parse_with_nul(const char *text, size_t len)
{
    const char *end = NULL;
    cJSON *msg = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    size_t off = msg ? (size_t)(end - text) : 0;

    while (msg && off < len &&
           (text[off] == ' ' || text[off] == '\t' || text[off] == '\r' || text[off] == '\n'))
        off++;
    if (msg && off < len) {
        cJSON_Delete(msg);
        msg = NULL;
    }
    return msg;
}

/* Handles a parsed message or batch. Takes ownership of msg. */
static void dispatch(struct mcp_session *s, cJSON *msg, void *origin, bool nul_escape)
{
    if (cJSON_IsArray(msg))
        handle_batch(s, origin, msg, nul_escape);
    else
        handle_one(s, NULL, origin, msg, nul_escape);
}

void mcp_session_handle(struct mcp_session *s, const char *text, size_t len, void *origin)
{
    struct errinfo err = {0};
    struct jsonrpc_scan scan;
    cJSON *msg = NULL;
    bool nul = false;

    /* cJSON cuts a string at \u0000 without a word; the scan tells us it is there. Ids get
     * their exact text back; a NUL anywhere else makes a tools/call a tool error. */
    jsonrpc_scan(text, len, &scan);
    if (scan.has_nul_escape && scan.max_depth <= JSONRPC_MAX_DEPTH) {
        msg = parse_with_nul(text, len);
        if (msg && jsonrpc_keep_nul_ids(msg, text, len, &nul) < 0)
            log_warn("mcp: out of memory restoring an id that holds \\u0000");
    }
    if (!msg)
        msg = jsonrpc_parse(text, len, &err);
    if (!msg) {
        if (err.kind == ERR_TOO_LARGE)
            mcp__reply_error(s, NULL, origin, NULL, MCP_INVALID_REQUEST, NULL,
                             "Invalid Request: %s", err.msg);
        else if (err.kind == ERR_NOMEM)
            mcp__reply_error(s, NULL, origin, NULL, MCP_INTERNAL_ERROR, NULL,
                             "internal error: out of memory");
        else
            mcp__reply_error(s, NULL, origin, NULL, MCP_PARSE_ERROR, NULL, "Parse error: %s",
                             err.msg);
        return;
    }
    dispatch(s, msg, origin, nul);
}

void mcp__session_handle_parsed(struct mcp_session *s, cJSON *msg, void *origin)
{
    dispatch(s, msg, origin, false);
}

void mcp_session_reject_oversized(struct mcp_session *s, size_t bytes, size_t limit)
{
    mcp__reply_error(s, NULL, NULL, NULL, MCP_INVALID_REQUEST, NULL,
                     "message of %zu bytes exceeds the limit of %zu bytes; nothing was done", bytes,
                     limit);
}

bool mcp_is_modern_request(const char *text, size_t len)
{
    cJSON *msg = jsonrpc_parse(text, len, NULL);
    bool modern = msg && cJSON_IsObject(msg) &&
                  has_modern_meta(cJSON_GetObjectItemCaseSensitive(msg, "params"));

    cJSON_Delete(msg);
    return modern;
}
