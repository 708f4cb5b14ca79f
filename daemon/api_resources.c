/* daemon/api_resources.c - GET /resources, GET /resource, GET /prompts, POST /prompt/<name>
 * and POST /complete (see api_resources.h): parameters out of the request, resources.c and
 * prompts.c do the work, the MCP result object goes back wrapped in {"ok":true,"result":...}. */
#include "api_resources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <civetweb.h>

#include "api.h"
#include "complete.h"
#include "http_guard.h"
#include "jsonbuf.h"
#include "jsonrpc.h"
#include "log.h"
#include "prompts.h"
#include "resources.h"
#include "tools.h"
#include "vfs.h"

#define RESULT_MAX ((size_t)64 << 20)
#define PARAM_MAX  (3 * VFS_PATH_MAX + 64) /* a percent-encoded URI or cursor */

bool api_resources_is_path(const char *path)
{
    return strcmp(path, "/resources") == 0 || strcmp(path, "/resource") == 0 ||
           strcmp(path, "/prompts") == 0 || strncmp(path, "/prompt/", 8) == 0 ||
           strcmp(path, "/complete") == 0;
}

static int send_body(struct mg_connection *conn, int status, const char *body, size_t len,
                     const char *allow)
{
    return api_send_json(conn, status, body, len, allow ? "Allow" : NULL, allow);
}

static int send_fail(struct mg_connection *conn, int status, const char *msg, const char *allow)
{
    return api_send_error(conn, status, msg, allow ? "Allow" : NULL, allow);
}

/* Sends {"ok":true,"result":result} (takes ownership of result), or the failure in err. */
static int send_result(struct mg_connection *conn, int rc, cJSON *result, const struct errinfo *err)
{
    struct jsonbuf b = JSONBUF_INIT(RESULT_MAX);
    char *text;
    int status;

    if (rc < 0) {
        cJSON_Delete(result);
        return send_fail(conn, api_status_for(err->kind), err->msg, NULL);
    }
    text = cJSON_PrintUnformatted(result);
    cJSON_Delete(result);
    jsonbuf_puts(&b, "{\"ok\":true,\"result\":", NULL);
    if (text)
        jsonbuf_puts(&b, text, NULL);
    jsonbuf_puts(&b, "}", NULL);
    cJSON_free(text);
    if (!text || b.failed)
        status = send_fail(conn, 503, "out of memory building the answer", NULL);
    else
        status = send_body(conn, 200, b.data, b.len, NULL);
    jsonbuf_cleanup(&b);
    return status;
}

/* The query parameter `name` into buf: 1 when present, 0 when absent, -1 (answered) when too
 * long. */
static int query_param(struct mg_connection *conn, const char *name, char *buf, size_t size)
{
    const char *qs = mg_get_request_info(conn)->query_string;
    int n;

    if (!qs)
        return 0;
    n = mg_get_var(qs, strlen(qs), name, buf, size);
    if (n == -1)
        return 0;
    if (n < 0) {
        char msg[96];

        snprintf(msg, sizeof(msg), "the %s parameter is too long (at most %zu bytes)", name,
                 size - 1);
        send_fail(conn, 400, msg, NULL);
        return -1;
    }
    return 1;
}

/* Reads the JSON arguments object of a POST /prompt/<name>; NULL body = none. Returns 0 with
 * *args owned (or NULL), or the status after answering. */
static int read_args(struct mg_connection *conn, cJSON **args)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    struct errinfo err = {0};
    char *buf;
    size_t len = 0;
    int n = 0;

    *args = NULL;
    if (ri->content_length == 0 ||
        (ri->content_length < 0 && !mg_get_header(conn, "Transfer-Encoding")))
        return 0;
    if (!api_content_type_ok(mg_get_header(conn, "Content-Type")))
        return send_fail(conn, 415, "POST bodies must be JSON: send Content-Type: application/json",
                         NULL);
    if (ri->content_length > (long long)API_PROMPT_BODY_MAX)
        return send_fail(conn, 413, "prompt arguments are limited to 64 KiB", NULL);
    buf = malloc(API_PROMPT_BODY_MAX + 1);
    if (!buf)
        return send_fail(conn, 503, "out of memory", NULL);
    while (len <= API_PROMPT_BODY_MAX &&
           (n = http_guard_read(conn, buf + len, API_PROMPT_BODY_MAX + 1 - len, &err)) > 0)
        len += (size_t)n;
    if (n < 0) {
        free(buf);
        return api_send_error(conn, err.kind == ERR_TIMEOUT ? 408 : 400, err.msg, "Connection",
                              "close");
    }
    if (len > API_PROMPT_BODY_MAX) {
        free(buf);
        return send_fail(conn, 413, "prompt arguments are limited to 64 KiB", NULL);
    }
    *args = len ? jsonrpc_parse(buf, len, &err) : NULL;
    free(buf);
    if (len && !*args) {
        char msg[ERRINFO_MSG_MAX + 40];

        snprintf(msg, sizeof(msg), "the body is not JSON: %s", err.msg);
        return send_fail(conn, 400, msg, NULL);
    }
    return 0;
}

static int handle_prompt(const struct tools_ctx *ctx, struct mg_connection *conn, const char *name)
{
    struct errinfo err = {0};
    cJSON *args = NULL, *res = NULL;
    int status = read_args(conn, &args), rc;

    if (status)
        return status;
    if (args && !cJSON_IsObject(args)) {
        cJSON_Delete(args);
        return send_fail(conn, 400, "the body must be the prompt's arguments as a JSON object",
                         NULL);
    }
    rc = prompts_get(ctx, name, args, &res, &err);
    cJSON_Delete(args);
    return send_result(conn, rc, res, &err);
}

/* POST /complete: the body is completion/complete's params. */
static int handle_complete(const struct tools_ctx *ctx, struct mg_connection *conn)
{
    struct errinfo err = {0};
    cJSON *params = NULL, *res = NULL;
    int status = read_args(conn, &params), rc;

    if (status)
        return status;
    if (!cJSON_IsObject(params)) {
        cJSON_Delete(params);
        return send_fail(conn, 400,
                         "the body must be completion/complete's params: {\"ref\":{...},"
                         "\"argument\":{\"name\",\"value\"}}",
                         NULL);
    }
    rc = complete_answer(ctx, params, &res, &err);
    cJSON_Delete(params);
    return send_result(conn, rc, res, &err);
}

int api_resources_handle(const struct tools_ctx *ctx, struct mg_connection *conn,
                         const char *method, const char *path)
{
    bool get = strcmp(method, "GET") == 0;
    struct errinfo err = {0};
    char *param = NULL;
    cJSON *res = NULL;
    int rc, have;

    if (strcmp(path, "/complete") == 0) {
        if (strcmp(method, "POST") != 0)
            return send_fail(conn, 405, "use POST with completion/complete's params as the body",
                             "POST");
        return handle_complete(ctx, conn);
    }
    if (strncmp(path, "/prompt/", 8) == 0) {
        if (strcmp(method, "POST") != 0)
            return send_fail(conn, 405, "use POST with the prompt's arguments as a JSON object",
                             "POST");
        return handle_prompt(ctx, conn, path + 8);
    }
    if (!get)
        return send_fail(conn, 405, "use GET", "GET");
    if (strcmp(path, "/prompts") == 0) {
        res = prompts_list(ctx);
        err.kind = ERR_NOMEM;
        snprintf(err.msg, sizeof(err.msg), "out of memory");
        return send_result(conn, res ? 0 : -1, res, &err);
    }
    param = malloc(PARAM_MAX + 1);
    if (!param)
        return send_fail(conn, 503, "out of memory", NULL);
    have = query_param(conn, path[9] ? "cursor" : "uri", param, PARAM_MAX + 1);
    if (have < 0) {
        rc = 400;
    } else if (path[9]) { /* /resources */
        rc = resources_list(ctx, have ? param : NULL, &res, &err);
        rc = send_result(conn, rc, res, &err);
    } else if (!have) {
        rc = send_fail(conn, 400, "GET /resource needs ?uri=<resource URI>", NULL);
    } else {
        rc = resources_read(ctx, param, &res, &err);
        rc = send_result(conn, rc, res, &err);
    }
    free(param);
    return rc;
}
