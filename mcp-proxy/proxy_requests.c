/* mcp-proxy/proxy_requests.c - MCP resources/prompts requests as runboxd HTTP requests, and
 * runboxd's answers as JSON-RPC results or errors (see proxy.h). Pure apart from answering. */
#include "proxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonbuf.h"
#include "jsonrpc.h"
#include "runbox/mcp.h"
#include "upstream.h"

#define URL_MAX ((size_t)64 << 10)

/* Appends s percent-encoded: everything but RFC 3986's unreserved characters. */
static void put_escaped(struct jsonbuf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            *c == '-' || *c == '.' || *c == '_' || *c == '~') {
            jsonbuf_put(b, (const char *)c, 1, NULL);
        } else {
            char e[3] = {'%', hex[*c >> 4], hex[*c & 15]};

            jsonbuf_put(b, e, 3, NULL);
        }
    }
}

static const char *param_str(const cJSON *params, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int proxy_request_http(const char *method, const cJSON *params, char **url, bool *get, char **body)
{
    struct jsonbuf b = JSONBUF_INIT(URL_MAX);
    const cJSON *args;
    const char *v;

    *get = strcmp(method, "prompts/get") != 0;
    *body = NULL;
    if (strcmp(method, "resources/list") == 0) {
        jsonbuf_puts(&b, "/resources", NULL);
        v = param_str(params, "cursor");
        if (v) {
            jsonbuf_puts(&b, "?cursor=", NULL);
            put_escaped(&b, v);
        }
    } else if (strcmp(method, "resources/read") == 0) {
        jsonbuf_puts(&b, "/resource?uri=", NULL);
        put_escaped(&b, param_str(params, "uri") ? param_str(params, "uri") : "");
    } else if (strcmp(method, "prompts/list") == 0) {
        jsonbuf_puts(&b, "/prompts", NULL);
    } else {
        jsonbuf_puts(&b, "/prompt/", NULL);
        put_escaped(&b, param_str(params, "name") ? param_str(params, "name") : "");
        args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
        *body = cJSON_IsObject(args) ? cJSON_PrintUnformatted(args) : strdup("{}");
    }
    *url = jsonbuf_take(&b, NULL);
    if (!*url || (!*get && !*body)) {
        free(*url);
        free(*body);
        *url = *body = NULL;
        return -1;
    }
    return 0;
}

void proxy_answer_request(struct mcp_call *req, const struct upstream_reply *reply,
                          const char *base_url)
{
    struct upstream_answer a;
    cJSON *doc = NULL;
    const cJSON *e;

    if (reply->outcome == UPSTREAM_ANSWERED && reply->status >= 400 && reply->status < 500)
        doc = cJSON_ParseWithLength(reply->body, reply->body_len);
    e = cJSON_GetObjectItemCaseSensitive(doc, "error");
    if (cJSON_IsString(e) && e->valuestring[0]) {
        mcp_call_error(req, JSONRPC_INVALID_PARAMS, e->valuestring, NULL);
        cJSON_Delete(doc);
        return;
    }
    cJSON_Delete(doc);
    upstream_map_answer(reply, base_url, &a);
    if (a.ok && cJSON_IsObject(a.result)) {
        mcp_call_result(req, a.result);
        a.result = NULL;
    } else if (reply->outcome == UPSTREAM_ANSWERED && reply->status >= 400 && reply->status < 500) {
        mcp_call_error(req, JSONRPC_INVALID_PARAMS, a.error ? a.error : "runboxd refused it", NULL);
    } else {
        mcp_call_error(req, JSONRPC_INTERNAL_ERROR,
                       a.error ? a.error : "runboxd answered with something that is not a result",
                       NULL);
    }
    upstream_answer_cleanup(&a);
}
