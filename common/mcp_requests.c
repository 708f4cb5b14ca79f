/* common/mcp_requests.c - the engine's resources and prompts requests (see mcp.h): the params
 * checks, resources/templates/list (answered here), and the hand-over of resources/list|read and
 * prompts/list|get to the back end as a struct mcp_request, which is a call without a tool so
 * that it shares the table of ids in flight, cancellation and batches with tools/call. */
#include "mcp.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jsonbuf.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp_int.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- resources and prompts ---- */

static const char *const backend_methods[] = {"resources/list", "resources/read", "prompts/list",
                                              "prompts/get"};

bool mcp_requests_is_backend(const char *method)
{
    for (size_t i = 0; i < COUNT_OF(backend_methods); i++)
        if (strcmp(method, backend_methods[i]) == 0)
            return true;
    return false;
}

/* Answers -32602 when a cursor is present but not a string (or any string, when the list
 * always fits one page); returns -1 then. */
static int check_cursor(struct mcp_session *s, struct batch *batch, const cJSON *id,
                        const char *method, const cJSON *params, bool paginated)
{
    const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(params, "cursor");

    if (!cursor || cJSON_IsNull(cursor) || (paginated && cJSON_IsString(cursor)))
        return 0;
    if (!cJSON_IsString(cursor))
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS,
                        "%s: params.cursor must be a string, got %s", method,
                        jsonrpc_type_name(cursor));
    else
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS,
                        "%s: invalid cursor (everything fits one page; send no cursor)", method);
    return -1;
}

void mcp_requests_templates(struct mcp_session *s, struct batch *batch, const cJSON *id,
                            const cJSON *params)
{
    cJSON *res, *arr, *t;

    if (check_cursor(s, batch, id, "resources/templates/list", params, false) < 0)
        return;
    res = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(res, "resourceTemplates");
    t = cJSON_CreateObject();
    if (!arr || !t || !cJSON_AddItemToArray(arr, t)) {
        cJSON_Delete(t);
        t = NULL;
    }
    if (!t || !cJSON_AddStringToObject(t, "uriTemplate", "file:///{path}") ||
        !cJSON_AddStringToObject(t, "name", "Workspace file") ||
        !cJSON_AddStringToObject(t, "description",
                                 "A file of the workspace by its path, e.g. file:///src/main.js; "
                                 "text, or base64 blob for binary files")) {
        cJSON_Delete(res);
        mcp_reply_error(s, batch, id, JSONRPC_INTERNAL_ERROR, "internal error: out of memory");
        return;
    }
    mcp_reply_result(s, batch, id, res);
}

/* Checks a back-end request's params as mcp.h promises; answers -32602 and returns -1 when
 * they are wrong. */
static int check_request_params(struct mcp_session *s, struct batch *batch, const cJSON *id,
                                const char *method, const cJSON *params)
{
    const cJSON *v;

    if (strcmp(method, "resources/list") == 0 || strcmp(method, "prompts/list") == 0)
        return check_cursor(s, batch, id, method, params, method[0] == 'r');
    if (strcmp(method, "resources/read") == 0) {
        v = cJSON_GetObjectItemCaseSensitive(params, "uri");
        if (cJSON_IsString(v) && v->valuestring[0])
            return 0;
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS,
                        "resources/read: params.uri must be a string (the resource's URI, e.g. "
                        "file:///src/main.js; resources/list lists them)");
        return -1;
    }
    v = cJSON_GetObjectItemCaseSensitive(params, "name");
    if (!cJSON_IsString(v)) {
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS,
                        "prompts/get: params.name must be a string (the prompt's name; "
                        "prompts/list lists them)");
        return -1;
    }
    v = cJSON_GetObjectItemCaseSensitive(params, "arguments");
    if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v)) {
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS,
                        "prompts/get: params.arguments must be an object of strings, got %s",
                        jsonrpc_type_name(v));
        return -1;
    }
    for (const cJSON *a = cJSON_IsObject(v) ? v->child : NULL; a; a = a->next) {
        if (!cJSON_IsString(a)) {
            mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS,
                            "prompts/get: params.arguments.%.64s must be a string, got %s",
                            a->string, jsonrpc_type_name(a));
            return -1;
        }
    }
    return 0;
}

/* Hands a resources/prompts request to the back end. Takes ownership of msg. */
void mcp_requests_start(struct mcp_session *s, struct batch *batch, cJSON *msg, const cJSON *id,
                        const char *method)
{
    cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    struct jsonbuf idb = JSONBUF_INIT(MCP_RESPONSE_MAX);
    struct mcp_request *req = NULL;
    char *id_text = NULL;
    size_t id_len = 0;

    if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params)) {
        mcp_reply_error(s, batch, id, JSONRPC_INVALID_PARAMS, "%s: params must be an object",
                        method);
        goto out;
    }
    if (!cJSON_IsObject(params)) {
        cJSON_DeleteItemFromObjectCaseSensitive(msg, "params");
        params = cJSON_AddObjectToObject(msg, "params");
    }
    if (params && check_request_params(s, batch, id, method, params) < 0)
        goto out;
    mcp_put_id(&idb, id);
    id_text = jsonbuf_take(&idb, &id_len);
    req = calloc(1, sizeof(*req));
    if (!params || !id_text || !req) {
        mcp_reply_error(s, batch, id, JSONRPC_INTERNAL_ERROR, "internal error: out of memory");
        goto out;
    }
    req->call =
        (struct mcp_call){.s = s,
                          .batch = batch,
                          .msg = msg,
                          .args = params,
                          .id = cJSON_GetObjectItemCaseSensitive(msg, "id"),
                          .method = cJSON_GetObjectItemCaseSensitive(msg, "method")->valuestring,
                          .id_text = id_text,
                          .id_len = id_len,
                          .hash = mcp_calls_hash(id_text, id_len)};
    if (mcp_calls_add(&s->calls, &req->call) < 0) {
        mcp_reply_error(s, batch, id, JSONRPC_INTERNAL_ERROR, "internal error: out of memory");
        goto out;
    }
    if (batch)
        batch->pending++;
    log_debug("mcp: request %s %s started", id_text, method);
    s->be->request(s->ctx, req); /* may answer before it returns */
    return;
out:
    free(req);
    free(id_text);
    jsonbuf_cleanup(&idb);
    cJSON_Delete(msg);
}

const char *mcp_request_method(const struct mcp_request *req)
{
    return req->call.method;
}

const cJSON *mcp_request_params(const struct mcp_request *req)
{
    return req->call.args;
}

const char *mcp_request_id_text(const struct mcp_request *req)
{
    return req->call.id_text;
}

void mcp_request_set_data(struct mcp_request *req, void *data)
{
    req->call.data = data;
}

void *mcp_request_get_data(const struct mcp_request *req)
{
    return req->call.data;
}

void mcp_request_finish(struct mcp_request *req, cJSON *result)
{
    struct mcp_call *call = &req->call;

    if (call->cancelling) {
        cJSON_Delete(result);
        return;
    }
    log_debug("mcp: request %s %s finished", call->id_text, call->method);
    mcp_reply_result(call->s, call->batch, call->id, result ? result : cJSON_CreateObject());
    mcp_call_done(call);
}

void mcp_request_fail(struct mcp_request *req, int code, const char *message)
{
    struct mcp_call *call = &req->call;

    if (call->cancelling)
        return;
    log_debug("mcp: request %s %s failed (%d): %.200s", call->id_text, call->method, code,
              message ? message : "");
    mcp_reply_error(call->s, call->batch, call->id, code, "%s",
                    message ? message : "the request failed without saying why");
    mcp_call_done(call);
}
