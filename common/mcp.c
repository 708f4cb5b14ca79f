/* common/mcp.c - the MCP protocol engine (see mcp.h).
 *
 * DESIGN
 * Each message is parsed once. Requests the engine answers itself (initialize, ping,
 * logging/setLevel, tools/list) are answered at once and their tree freed. A valid tools/call
 * becomes a struct mcp_call that takes ownership of the whole parsed message: the arguments
 * handed to the back end are borrowed from that tree, so nothing is copied on the way in.
 * On the way out a tool result is written straight into one buffer (the text escaped in one
 * pass, UTF-8 checked on the way), which is the hot path of the proxy.
 *
 * Calls in flight sit in a small chained hash table (mcp_calls.c) keyed by the compact JSON
 * text of their request id ("7" and "\"7\"" are different ids), so notifications/cancelled
 * and the duplicate-id check are O(1) with hundreds in flight.
 *
 * Batches (2025-03-26 only): the array's members are detached one by one and handled like
 * single messages, except that their answers are appended to the batch's buffer. The batch
 * counts the answers it still owes, plus one while its members are being dispatched, so a
 * call that the back end finishes inside call_tool cannot complete the batch early; the array
 * is sent when the count reaches zero, and nothing is sent when no member was a request. */
#include "mcp.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errinfo.h"
#include "jsonbuf.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp_int.h"
#include "schema.h"

#define MCP_BATCH_VERSION "2025-03-26"

static const char *const protocol_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18",
                                                "2025-11-25"};

static const char *const client_log_levels[] = {"debug", "info",     "notice", "warning",
                                                "error", "critical", "alert",  "emergency"};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Appends the JSON text of a request id: a string, an integer number, or null. */
void mcp_put_id(struct jsonbuf *b, const cJSON *id)
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
    /* Integers print exactly; a huge one falls back to exponent form, still valid JSON. */
    if (fabs(id->valuedouble) < 1e18)
        n = snprintf(num, sizeof(num), "%.0f", id->valuedouble);
    else
        n = snprintf(num, sizeof(num), "%.17g", id->valuedouble);
    if (n > 0 && (size_t)n < sizeof(num))
        jsonbuf_put(b, num, (size_t)n, NULL);
    else
        jsonbuf_put(b, "null", 4, NULL);
}

static bool is_integer_number(const cJSON *v)
{
    return cJSON_IsNumber(v) && jsonrpc_is_whole(v->valuedouble);
}

/* ---- session, calls, batches ---- */

/* Sends json (len bytes) to the client, or adds it to the batch being answered. */
static void emit(struct mcp_session *s, struct batch *batch, const char *json, size_t len)
{
    if (s->closing)
        return;
    if (!batch) {
        s->be->send(s->ctx, json, len);
        return;
    }
    jsonbuf_put(&batch->out, batch->answers ? "," : "[", 1, NULL);
    jsonbuf_put(&batch->out, json, len, NULL);
    batch->answers++;
}

void mcp_reply_error(struct mcp_session *s, struct batch *batch, const cJSON *id, int code,
                     const char *fmt, ...)
{
    char msg[512];
    char *line;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    line = jsonrpc_build_error(id, code, msg, NULL);
    if (!line) {
        log_error("mcp: out of memory building the error \"%s\"", msg);
        return;
    }
    emit(s, batch, line, strlen(line));
    free(line);
}

/* Answers with a result; takes ownership of result (NULL -> {}). */
void mcp_reply_result(struct mcp_session *s, struct batch *batch, const cJSON *id, cJSON *result)
{
    char *line = jsonrpc_build_result(id, result);

    if (!line) {
        mcp_reply_error(s, batch, id, JSONRPC_INTERNAL_ERROR, "internal error: out of memory");
        return;
    }
    emit(s, batch, line, strlen(line));
    free(line);
}

/* Sends a response built in b (which is consumed), or -32603 when building it failed. */
static void reply_built(struct mcp_session *s, struct batch *batch, const cJSON *id,
                        struct jsonbuf *b)
{
    size_t len = 0, want = b->len;
    char *line = jsonbuf_take(b, &len);

    if (!line) {
        log_error("mcp: could not build the response to a request (%zu bytes so far)", want);
        mcp_reply_error(s, batch, id, JSONRPC_INTERNAL_ERROR,
                        "internal error: the response could not be built (out of memory or larger "
                        "than %zu bytes)",
                        MCP_RESPONSE_MAX);
        return;
    }
    emit(s, batch, line, len);
    free(line);
}

/* Writes a complete tools/call response into b: text is escaped into the one text block;
 * structured (raw JSON text, or NULL) becomes structuredContent. */
static void build_tool_result(struct jsonbuf *b, const cJSON *id, const char *id_text,
                              size_t id_len, const char *text, size_t text_len, bool is_error,
                              const char *structured, size_t structured_len)
{
    /* Most text needs no escapes: reserve once for the common case. */
    jsonbuf_reserve(b, 96 + id_len + text_len + text_len / 16 + structured_len, NULL);
    jsonbuf_puts(b, "{\"jsonrpc\":\"2.0\",\"id\":", NULL);
    if (id_text)
        jsonbuf_put(b, id_text, id_len, NULL);
    else
        mcp_put_id(b, id);
    jsonbuf_puts(b, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":", NULL);
    jsonbuf_put_json_string(b, text, text_len, NULL);
    jsonbuf_puts(b, "}]", NULL);
    if (structured) {
        jsonbuf_puts(b, ",\"structuredContent\":", NULL);
        jsonbuf_put(b, structured, structured_len, NULL);
    }
    jsonbuf_puts(b, is_error ? ",\"isError\":true}}" : ",\"isError\":false}}", NULL);
}

/* Answers a request that never became a call with an isError tool result. */
static void reply_tool_error(struct mcp_session *s, struct batch *batch, const cJSON *id,
                             const char *text, size_t len)
{
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);

    build_tool_result(&b, id, NULL, 0, text, len, true, NULL, 0);
    reply_built(s, batch, id, &b);
}

static void batch_release(struct mcp_session *s, struct batch *b)
{
    size_t len = 0;
    char *line;

    if (--b->pending)
        return;
    if (b->answers && !s->closing) {
        jsonbuf_put(&b->out, "]", 1, NULL);
        line = jsonbuf_take(&b->out, &len);
        if (line)
            s->be->send(s->ctx, line, len);
        else
            mcp_reply_error(s, NULL, NULL, JSONRPC_INTERNAL_ERROR,
                            "internal error: the batch response could not be built (out of memory "
                            "or larger than %zu bytes)",
                            MCP_RESPONSE_MAX);
        free(line);
    }
    jsonbuf_cleanup(&b->out);
    free(b);
}

/* Unregisters and frees a call, then lets its batch go on. */
void mcp_call_done(struct mcp_call *call)
{
    struct mcp_session *s = call->s;
    struct batch *batch = call->batch;

    mcp_calls_remove(&s->calls, call);
    cJSON_Delete(call->msg);
    free(call->id_text);
    free(call);
    if (batch)
        batch_release(s, batch);
}

/* Stops a call in flight without answering it. */
static void call_cancel(struct mcp_call *call)
{
    call->cancelling = true;
    if (call->method)
        call->s->be->cancel_request(call->s->ctx, (struct mcp_request *)call);
    else
        call->s->be->cancel_call(call->s->ctx, call);
    mcp_call_done(call);
}

/* ---- the engine's own requests ---- */

static void on_initialize(struct mcp_session *s, struct batch *batch, const cJSON *id,
                          const cJSON *params)
{
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
    const struct mcp_server_info *info = s->info;
    const char *chosen = MCP_PROTOCOL_LATEST;
    cJSON *res, *caps, *server;

    if (batch) {
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_REQUEST,
                        "initialize must not be part of a JSON-RPC batch");
        return;
    }
    if (s->protocol) {
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_REQUEST,
                        "already initialized (protocol version %s)", s->protocol);
        return;
    }
    if (!cJSON_IsString(want)) {
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS,
                        "initialize: params.protocolVersion must be a string, e.g. \"%s\"",
                        MCP_PROTOCOL_LATEST);
        return;
    }
    for (size_t i = 0; i < COUNT_OF(protocol_versions); i++)
        if (strcmp(want->valuestring, protocol_versions[i]) == 0)
            chosen = protocol_versions[i];

    res = cJSON_CreateObject();
    caps = cJSON_AddObjectToObject(res, "capabilities");
    server = cJSON_AddObjectToObject(res, "serverInfo");
    if (!cJSON_AddStringToObject(res, "protocolVersion", chosen) || !caps || !server ||
        !cJSON_AddFalseToObject(cJSON_AddObjectToObject(caps, "tools"), "listChanged") ||
        !cJSON_AddObjectToObject(caps, "logging") ||
        (s->be->request && (!cJSON_AddObjectToObject(caps, "resources") ||
                            !cJSON_AddObjectToObject(caps, "prompts"))) ||
        !cJSON_AddStringToObject(server, "name", info && info->name ? info->name : "runbox") ||
        !cJSON_AddStringToObject(server, "version",
                                 info && info->version ? info->version : RUNBOX_VERSION) ||
        (info && info->instructions &&
         !cJSON_AddStringToObject(res, "instructions", info->instructions))) {
        cJSON_Delete(res);
        mcp_reply_error(s, batch, id, JSONRPC_INTERNAL_ERROR, "internal error: out of memory");
        return;
    }
    s->protocol = chosen;
    log_info("mcp: initialized with protocol %s (client asked for %.40s)", chosen,
             want->valuestring);
    mcp_reply_result(s, batch, id, res);
}

static void on_set_level(struct mcp_session *s, struct batch *batch, const cJSON *id,
                         const cJSON *params)
{
    const cJSON *level = cJSON_GetObjectItemCaseSensitive(params, "level");

    for (size_t i = 0; cJSON_IsString(level) && i < COUNT_OF(client_log_levels); i++) {
        if (strcmp(level->valuestring, client_log_levels[i]) == 0) {
            s->client_log_level = i;
            mcp_reply_result(s, batch, id, NULL);
            return;
        }
    }
    mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS,
                    "logging/setLevel: params.level must be one of debug, info, notice, warning, "
                    "error, critical, alert, emergency");
}

static void on_tools_list(struct mcp_session *s, struct batch *batch, const cJSON *id,
                          const cJSON *params)
{
    const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(params, "cursor");
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);

    if (cursor && !cJSON_IsNull(cursor) && !cJSON_IsString(cursor)) {
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS,
                        "tools/list: params.cursor must be a string, got %s",
                        jsonrpc_type_name(cursor));
        return;
    }
    /* Everything fits one page and no nextCursor is ever given, so no cursor is valid. */
    if (cJSON_IsString(cursor)) {
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS, "invalid cursor");
        return;
    }
    /* The tools array is prebuilt text: splice it in rather than build a tree. */
    jsonbuf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":", NULL);
    mcp_put_id(&b, id);
    jsonbuf_puts(&b, ",\"result\":{\"tools\":", NULL);
    jsonbuf_puts(&b, catalog_tools_json(s->cat), NULL);
    jsonbuf_puts(&b, "}}", NULL);
    reply_built(s, batch, id, &b);
}

/* ---- tools/call ---- */

/* Checks the arguments of a known tool. Returns 0 when the call may go on; otherwise the
 * request was answered with an isError result. May add an empty "arguments" to params. */
static int check_arguments(struct mcp_session *s, struct batch *batch, const cJSON *id,
                           cJSON *params, const struct catalog_tool *tool, bool nul_escape,
                           const cJSON **args_out)
{
    static const char nul_msg[] =
        "arguments contain a NUL character (\\u0000), which no path or text argument may hold; "
        "send binary data with encoding \"base64\"";
    cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
    struct schema_report rep;
    struct jsonbuf text = JSONBUF_INIT(MCP_RESPONSE_MAX);
    char line[80];

    if (nul_escape) {
        reply_tool_error(s, batch, id, nul_msg, sizeof(nul_msg) - 1);
        return -1;
    }
    if (!args || cJSON_IsNull(args)) {
        cJSON_DeleteItemFromObjectCaseSensitive(params, "arguments");
        args = cJSON_AddObjectToObject(params, "arguments");
        if (!args) {
            mcp_reply_error(s, batch, id, JSONRPC_INTERNAL_ERROR, "internal error: out of memory");
            return -1;
        }
    }
    if (!cJSON_IsObject(args)) {
        snprintf(line, sizeof(line), "arguments: expected object, got %s", jsonrpc_type_name(args));
        reply_tool_error(s, batch, id, line, strlen(line));
        return -1;
    }
    if (schema_validate(catalog_tool_input_schema(tool), args, "arguments", &rep) == 0) {
        *args_out = args;
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
    reply_tool_error(s, batch, id, text.data ? text.data : "", text.len);
    jsonbuf_cleanup(&text);
    return -1;
}

/* The request's _meta.progressToken when it is a string or an integer, else NULL. */
static const cJSON *progress_token(const cJSON *params)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");

    return cJSON_IsString(tok) || is_integer_number(tok) ? tok : NULL;
}

/* Registers a validated call and hands it to the back end. Takes ownership of msg and of
 * id_text (compact JSON of the id, id_len bytes). Returns -1 (owning nothing) when out of
 * memory. */
static int call_start(struct mcp_session *s, struct batch *batch, cJSON *msg, char *id_text,
                      size_t id_len, const struct catalog_tool *tool, const cJSON *args)
{
    struct mcp_call *call = calloc(1, sizeof(*call));

    if (!call)
        return -1;
    call->s = s;
    call->batch = batch;
    call->msg = msg;
    call->id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    call->args = args;
    call->tool = tool;
    call->progress_token = progress_token(cJSON_GetObjectItemCaseSensitive(msg, "params"));
    call->id_text = id_text;
    call->id_len = id_len;
    call->hash = mcp_calls_hash(id_text, id_len);
    if (mcp_calls_add(&s->calls, call) < 0) {
        free(call);
        return -1;
    }
    if (batch)
        batch->pending++;
    log_debug("mcp: call %s %s started", id_text, catalog_tool_name(tool));
    /* The back end may finish the call before this returns: do not touch call after it. */
    s->be->call_tool(s->ctx, call);
    return 0;
}

/* Handles tools/call. Takes ownership of msg (the call keeps it while in flight). */
static void on_tools_call(struct mcp_session *s, struct batch *batch, cJSON *msg, const cJSON *id,
                          bool nul_escape)
{
    cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
    const cJSON *args = NULL;
    const struct catalog_tool *tool;
    struct jsonbuf idb = JSONBUF_INIT(MCP_RESPONSE_MAX);
    size_t id_len;
    char *id_text;

    mcp_put_id(&idb, id);
    if (idb.failed) {
        mcp_reply_error(s, batch, id, JSONRPC_INTERNAL_ERROR, "internal error: out of memory");
        goto out;
    }
    if (mcp_calls_find(&s->calls, idb.data, idb.len)) {
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_REQUEST,
                        "request id %.*s is already in use by a call in flight; use a new id for "
                        "every request",
                        (int)(idb.len > 100 ? 100 : idb.len), idb.data);
        goto out;
    }
    if (!cJSON_IsObject(params) || !cJSON_IsString(name)) {
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS,
                        "tools/call: params.name must be a string (the tool's name)");
        goto out;
    }
    tool = catalog_find(s->cat, name->valuestring);
    if (!tool) {
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS, "Unknown tool: %.200s",
                        name->valuestring);
        goto out;
    }
    if (check_arguments(s, batch, id, params, tool, nul_escape, &args) < 0)
        goto out;
    id_text = jsonbuf_take(&idb, &id_len);
    if (id_text && call_start(s, batch, msg, id_text, id_len, tool, args) == 0)
        return; /* msg and id_text now belong to the call */
    free(id_text);
    mcp_reply_error(s, batch, id, JSONRPC_INTERNAL_ERROR, "internal error: out of memory");
out:
    jsonbuf_cleanup(&idb);
    cJSON_Delete(msg);
}

/* ---- dispatch ---- */

static bool id_in_flight(const struct mcp_session *s, const cJSON *id)
{
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);
    bool found;

    if (!s->calls.count)
        return false;
    mcp_put_id(&b, id);
    found = !b.failed && mcp_calls_find(&s->calls, b.data, b.len);
    jsonbuf_cleanup(&b);
    return found;
}

/* Handles a request. Takes ownership of msg. */
static void on_request(struct mcp_session *s, struct batch *batch, cJSON *msg, bool nul_escape)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const char *method = cJSON_GetObjectItemCaseSensitive(msg, "method")->valuestring;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");

    if (strcmp(method, "tools/call") == 0 && s->protocol) {
        on_tools_call(s, batch, msg, id, nul_escape);
        return;
    }
    log_debug("mcp: request %.64s", method);
    if (id_in_flight(s, id))
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_REQUEST,
                        "request id is already in use by a call in flight; use a new id for every "
                        "request");
    else if (strcmp(method, "initialize") == 0)
        on_initialize(s, batch, id, params);
    else if (strcmp(method, "ping") == 0)
        mcp_reply_result(s, batch, id, NULL);
    else if (!s->protocol)
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_REQUEST,
                        "not initialized: send initialize first (got %.100s)", method);
    else if (strcmp(method, "tools/list") == 0)
        on_tools_list(s, batch, id, params);
    else if (strcmp(method, "logging/setLevel") == 0)
        on_set_level(s, batch, id, params);
    else if (s->be->request && strcmp(method, "resources/templates/list") == 0)
        mcp_requests_templates(s, batch, id, params);
    else if (s->be->request && mcp_requests_is_backend(method)) {
        mcp_requests_start(s, batch, msg, id, method);
        return; /* msg was handed on */
    } else
        mcp_reply_error(s, batch, id, JSONRPC_METHOD_NOT_FOUND, "Method not found: %.100s", method);
    cJSON_Delete(msg);
}

static void on_cancelled(struct mcp_session *s, const cJSON *params)
{
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(params, "requestId");
    struct mcp_call *call = NULL;
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);

    /* A raw requestId is a string id with a NUL (jsonrpc_keep_nul_ids). */
    if (!cJSON_IsString(rid) && !cJSON_IsRaw(rid) && !is_integer_number(rid)) {
        log_debug("mcp: notifications/cancelled without a usable requestId; ignored");
        return;
    }
    mcp_put_id(&b, rid);
    if (!b.failed)
        call = mcp_calls_find(&s->calls, b.data, b.len);
    if (call) {
        log_debug("mcp: call %s cancelled by the client", call->id_text);
        call_cancel(call);
    } else {
        /* Races are normal: the call may have just finished. */
        log_debug("mcp: cancel for %.*s, which is not in flight; ignored",
                  (int)(b.len > 100 ? 100 : b.len), b.data ? b.data : "");
    }
    jsonbuf_cleanup(&b);
}

/* Handles a notification; never answered. */
static void on_notification(struct mcp_session *s, const cJSON *msg)
{
    const char *method = cJSON_GetObjectItemCaseSensitive(msg, "method")->valuestring;

    if (strcmp(method, "notifications/cancelled") == 0)
        on_cancelled(s, cJSON_GetObjectItemCaseSensitive(msg, "params"));
    else if (strcmp(method, "notifications/initialized") == 0)
        s->client_ready = true;
    else
        log_debug("mcp: notification %.64s ignored", method);
}

/* Handles one message (not an array, or a member of a batch). Takes ownership of msg. */
static void handle_one(struct mcp_session *s, struct batch *batch, cJSON *msg, bool nul_escape)
{
    const char *why = "unknown";

    switch (jsonrpc_classify(msg, &why)) {
    case JSONRPC_KIND_REQUEST:
        on_request(s, batch, msg, nul_escape);
        return;
    case JSONRPC_KIND_NOTIFICATION:
        on_notification(s, msg);
        break;
    case JSONRPC_KIND_RESPONSE:
        log_debug("mcp: a response from the client was ignored (we send no requests)");
        break;
    case JSONRPC_KIND_BATCH:
        mcp_reply_error(s, batch, NULL, JSONRPC_INVALID_REQUEST,
                        "Invalid Request: a batch must not contain another batch");
        break;
    case JSONRPC_KIND_INVALID:
        mcp_reply_error(s, batch, jsonrpc_usable_id(msg), JSONRPC_INVALID_REQUEST,
                        "Invalid Request: %s", why);
        break;
    }
    cJSON_Delete(msg);
}

/* Handles a JSON array. Takes ownership of arr. */
static void handle_batch(struct mcp_session *s, cJSON *arr, bool nul_escape)
{
    struct batch *b;

    if (!s->protocol || strcmp(s->protocol, MCP_BATCH_VERSION) != 0) {
        if (s->protocol)
            mcp_reply_error(s, NULL, NULL, JSONRPC_INVALID_REQUEST,
                            "JSON-RPC batches (arrays) are not supported with the negotiated "
                            "protocol version %s (only %s has them); send one message per line",
                            s->protocol, MCP_BATCH_VERSION);
        else
            mcp_reply_error(s, NULL, NULL, JSONRPC_INVALID_REQUEST,
                            "JSON-RPC batches (arrays) are not supported before initialize; send "
                            "one message per line");
        goto out;
    }
    if (!arr->child) {
        mcp_reply_error(s, NULL, NULL, JSONRPC_INVALID_REQUEST, "Invalid Request: empty batch");
        goto out;
    }
    b = calloc(1, sizeof(*b));
    if (!b) {
        mcp_reply_error(s, NULL, NULL, JSONRPC_INTERNAL_ERROR, "internal error: out of memory");
        goto out;
    }
    jsonbuf_init(&b->out, MCP_RESPONSE_MAX);
    b->pending = 1; /* held while dispatching */
    while (arr->child)
        handle_one(s, b, cJSON_DetachItemViaPointer(arr, arr->child), nul_escape);
    batch_release(s, b);
out:
    cJSON_Delete(arr);
}

/* ---- public API ---- */

struct mcp_session *mcp_session_new(const struct catalog *cat, const struct mcp_backend *be,
                                    void *ctx, const struct mcp_server_info *info)
{
    struct mcp_session *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    s->cat = cat;
    s->be = be;
    s->ctx = ctx;
    s->info = info;
    s->client_log_level = 1; /* info, until the client says otherwise */
    return s;
}

void mcp_session_free(struct mcp_session *s)
{
    if (!s)
        return;
    s->closing = true;
    for (size_t i = 0; i < s->calls.nbuckets; i++)
        while (s->calls.buckets[i])
            /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): call_cancel unlinks the call. */
            call_cancel(s->calls.buckets[i]);
    free(s->calls.buckets);
    free(s);
}

/* Parses a message that holds a \u0000 escape, which jsonrpc_parse() refuses as a whole; we
 * need the tree to answer a tools/call with a tool error that says what to do instead. The
 * caller has checked the nesting depth with jsonrpc_scan(). NULL when it is not valid JSON. */
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

void mcp_session_handle(struct mcp_session *s, const char *text, size_t len)
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
            mcp_reply_error(s, NULL, NULL, JSONRPC_INVALID_REQUEST, "Invalid Request: %s", err.msg);
        else if (err.kind == ERR_NOMEM)
            mcp_reply_error(s, NULL, NULL, JSONRPC_INTERNAL_ERROR, "internal error: out of memory");
        else
            mcp_reply_error(s, NULL, NULL, JSONRPC_PARSE_ERROR, "Parse error: %s", err.msg);
        return;
    }
    if (cJSON_IsArray(msg))
        handle_batch(s, msg, nul);
    else
        handle_one(s, NULL, msg, nul);
}

void mcp_session_reject_oversized(struct mcp_session *s, size_t bytes, size_t limit)
{
    mcp_reply_error(s, NULL, NULL, JSONRPC_INVALID_REQUEST,
                    "message of %zu bytes exceeds the limit of %zu bytes; nothing was done", bytes,
                    limit);
}

const char *mcp_session_protocol(const struct mcp_session *s)
{
    return s->protocol;
}

size_t mcp_session_inflight(const struct mcp_session *s)
{
    return s->calls.count;
}

const struct catalog_tool *mcp_call_tool(const struct mcp_call *call)
{
    return call->tool;
}

const cJSON *mcp_call_args(const struct mcp_call *call)
{
    return call->args;
}

const char *mcp_call_id_text(const struct mcp_call *call)
{
    return call->id_text;
}

void mcp_call_set_data(struct mcp_call *call, void *data)
{
    call->data = data;
}

void *mcp_call_get_data(const struct mcp_call *call)
{
    return call->data;
}

void mcp_call_progress(struct mcp_call *call, double progress, double total, const char *message)
{
    cJSON *params;
    char *line;

    if (!call->progress_token || call->cancelling || call->s->closing || !isfinite(progress))
        return;
    /* The spec wants progress to increase; a back end that repeats itself is not forwarded. */
    if (call->has_progress && !(progress > call->last_progress)) {
        log_debug("mcp: call %s progress %g not above %g; not sent", call->id_text, progress,
                  call->last_progress);
        return;
    }
    params = cJSON_CreateObject();
    if (!cJSON_AddItemToObject(params, "progressToken",
                               cJSON_Duplicate(call->progress_token, false)) ||
        !cJSON_AddNumberToObject(params, "progress", progress) ||
        (total > 0 && !cJSON_AddNumberToObject(params, "total", total)) ||
        (message && !cJSON_AddStringToObject(params, "message", message))) {
        cJSON_Delete(params);
        log_warn("mcp: call %s: out of memory building a progress notification", call->id_text);
        return;
    }
    line = jsonrpc_build_notification("notifications/progress", params);
    if (!line)
        return;
    call->has_progress = true;
    call->last_progress = progress;
    call->s->be->send(call->s->ctx, line, strlen(line));
    free(line);
}

void mcp_call_finish(struct mcp_call *call, cJSON *result)
{
    mcp_call_finish_structured(call, result, NULL);
}

void mcp_call_finish_structured(struct mcp_call *call, cJSON *result, cJSON *structured)
{
    struct jsonbuf b = JSONBUF_INIT(MCP_RESPONSE_MAX);
    char *printed = NULL, *printed_sc = NULL;
    const char *text = "", *sc = NULL;
    size_t text_len = 0, sc_len = 0;
    bool has_schema = catalog_tool_output_schema(call->tool) != NULL;

    if (call->cancelling) { /* finished from inside cancel_call: the call is being dropped */
        cJSON_Delete(result);
        cJSON_Delete(structured);
        return;
    }
    if (cJSON_IsString(result)) {
        text = result->valuestring;
        text_len = strlen(text);
    } else if (result) {
        printed = cJSON_PrintUnformatted(result);
        if (!printed) {
            b.failed = true;
        } else {
            text = printed;
            text_len = strlen(printed);
            if (cJSON_IsObject(result) && has_schema && !structured) {
                sc = printed;
                sc_len = text_len;
            }
        }
    }
    if (cJSON_IsObject(structured) && has_schema) {
        printed_sc = cJSON_PrintUnformatted(structured);
        if (!printed_sc)
            b.failed = true;
        sc = printed_sc;
        sc_len = printed_sc ? strlen(printed_sc) : 0;
    }
    if (!b.failed)
        build_tool_result(&b, call->id, call->id_text, call->id_len, text, text_len, false, sc,
                          sc_len);
    log_debug("mcp: call %s finished (%zu bytes of text)", call->id_text, text_len);
    reply_built(call->s, call->batch, call->id, &b);
    cJSON_free(printed);
    cJSON_free(printed_sc);
    cJSON_Delete(result);
    cJSON_Delete(structured);
    mcp_call_done(call);
}

void mcp_call_fail(struct mcp_call *call, const char *error, bool timeout)
{
    struct jsonbuf inner = JSONBUF_INIT(MCP_RESPONSE_MAX), b = JSONBUF_INIT(MCP_RESPONSE_MAX);

    if (call->cancelling)
        return;
    if (!error)
        error = "the tool failed without saying why";
    jsonbuf_puts(&inner, "{\"error\":", NULL);
    jsonbuf_put_json_string(&inner, error, strlen(error), NULL);
    jsonbuf_puts(&inner, timeout ? ",\"timeout\":true}" : ",\"timeout\":false}", NULL);
    if (inner.failed)
        b.failed = true;
    else
        build_tool_result(&b, call->id, call->id_text, call->id_len, inner.data, inner.len, true,
                          NULL, 0);
    log_debug("mcp: call %s failed%s: %.200s", call->id_text, timeout ? " (timeout)" : "", error);
    reply_built(call->s, call->batch, call->id, &b);
    jsonbuf_cleanup(&inner);
    mcp_call_done(call);
}
