/* daemon/api_status.c - runboxd's read-only status endpoints (see api.h): GET /health, GET /tools
 * and GET /mcp-servers. */
#include "api_int.h"

#include "api_mcp.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <civetweb.h>

#include "call.h"
#include "catalog.h"
#include "clocks.h"
#include "http_guard.h"
#include "jsonbuf.h"
#include "proc.h"
#include "registry.h"
#include "quota.h"
#include "tools.h"
#include "watch.h"
#include "bridge.h"

/* The bridge's status ({"connected":false,...} when it is not running). */
static int put_studio_status(struct api *a, struct jsonbuf *b)
{
    cJSON *st = a->tools && a->tools->bridge ? bridge_health_json(a->tools->bridge) : NULL;
    char *text = st ? cJSON_PrintUnformatted(st) : NULL;
    int rc;

    cJSON_Delete(st);
    if (text)
        rc = jsonbuf_put(b, text, strlen(text), NULL);
    else
        rc = jsonbuf_puts(b,
                          "{\"connected\":false,\"active\":null,\"instances\":[],"
                          "\"queue_depth\":0}",
                          NULL);
    free(text);
    return rc;
}

/* The exec engine's sandbox facts (proc.h), or what is known without it. */
static int put_sandbox_status(struct api *a, struct jsonbuf *b)
{
    cJSON *j = a->tools && a->tools->proc ? proc_sandbox_json(a->tools->proc) : NULL;
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    int rc = 0;

    cJSON_Delete(j);
    if (text) {
        rc = jsonbuf_puts(b, text, NULL);
        free(text);
        return rc;
    }
    /* Only a daemon built without the exec engine (the unit test) gets here. */
    return jsonbuf_puts(b,
                        "{\"available\":false,\"bwrap\":null,"
                        "\"reason\":\"exec is not running in this daemon\"}",
                        NULL);
}

/* ,"<key>":<j as compact JSON> (null when j is NULL); takes j. */
static int put_member(struct jsonbuf *b, const char *key, cJSON *j)
{
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    int rc;

    cJSON_Delete(j);
    rc = jsonbuf_puts(b, ",\"", NULL);
    rc |= jsonbuf_puts(b, key, NULL);
    rc |= jsonbuf_puts(b, "\":", NULL);
    rc |= jsonbuf_puts(b, text ? text : "null", NULL);
    free(text);
    return rc;
}

/* ,"calls":{...}: the call service's budget table (call.h). */
static int put_calls_status(struct api *a, struct jsonbuf *b)
{
    return put_member(b, "calls", call_service_budget_json(a->calls));
}

/* ,"http":{...}: the workers and the deadlines for slow requests (http_guard.h). */
static int put_http_status(struct api *a, struct jsonbuf *b)
{
    return put_member(b, "http", http_guard_status_json(a->guard));
}

/* ,"mcp":{...}: the MCP endpoints' sessions and streams. */
static int put_mcp_status(struct api *a, struct jsonbuf *b)
{
    return put_member(b, "mcp", a->mcp ? api_mcp_status_json(a->mcp) : NULL);
}

/* ,"mcp_servers":{...}: the external servers' states (registry.h), or null. */
static int put_registry_status(struct api *a, struct jsonbuf *b)
{
    return put_member(b, "mcp_servers",
                      a->tools && a->tools->registry ? registry_health_json(a->tools->registry)
                                                     : NULL);
}

int api__handle_mcp_servers(struct api *a, struct mg_connection *conn)
{
    cJSON *j = a->tools && a->tools->registry ? registry_status_json(a->tools->registry)
                                              : cJSON_Parse("{\"servers\":[]}");
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    int status = text ? api_send_json(conn, 200, text, strlen(text), NULL, NULL)
                      : api__send_error(conn, 503, "out of memory");

    cJSON_Delete(j);
    free(text);
    return status;
}

int api__handle_tools(struct api *a, struct mg_connection *conn)
{
    struct registry_hold *hold = NULL;
    const struct catalog *ext =
        a->tools && a->tools->registry ? registry_tools(a->tools->registry, &hold) : NULL;
    const char *more = ext && catalog_count(ext) ? catalog_tools_json(ext) : NULL;
    struct jsonbuf b;
    int status;

    if (ext && catalog_count(ext) && !more) {
        registry_unhold(hold);
        return api__send_error(conn, 503, "out of memory for the external servers' tools list");
    }
    if (!more) {
        registry_unhold(hold);
        return api_send_json(conn, 200, a->tools_json, a->tools_len, NULL, NULL);
    }
    jsonbuf_init(&b, 64u << 20);
    /* {"tools":[<built-in>] + "," + <external array without its '['>. */
    if (jsonbuf_put(&b, a->tools_json, a->tools_len - 2, NULL) < 0 ||
        jsonbuf_puts(&b, a->tools_len > 12 ? "," : "", NULL) < 0 ||
        jsonbuf_puts(&b, more + 1, NULL) < 0 || jsonbuf_puts(&b, "}", NULL) < 0)
        status = api__send_error(conn, 503, "out of memory");
    else
        status = api_send_json(conn, 200, b.data, b.len, NULL, NULL);
    jsonbuf_cleanup(&b);
    registry_unhold(hold);
    return status;
}

/* ,"workspace_quota":{"quota_mb":N,"used_mb":M} (M null until the first walk), or null. */
static int put_quota_status(struct api *a, struct jsonbuf *b)
{
    struct quota *q = a->tools ? a->tools->quota : NULL;
    uint64_t used = 0;
    char text[128];
    int n;

    if (!quota_limit_mb(q))
        return jsonbuf_puts(b, ",\"workspace_quota\":null", NULL);
    if (quota_peek(q, &used) == 0)
        n = snprintf(
            text, sizeof(text), ",\"workspace_quota\":{\"quota_mb\":%llu,\"used_mb\":%llu}",
            (unsigned long long)quota_limit_mb(q), (unsigned long long)((used + (1u << 19)) >> 20));
    else
        n = snprintf(text, sizeof(text),
                     ",\"workspace_quota\":{\"quota_mb\":%llu,\"used_mb\":null}",
                     (unsigned long long)quota_limit_mb(q));
    return jsonbuf_put(b, text, (size_t)n, NULL);
}

int api__handle_health(struct api *a, struct mg_connection *conn)
{
    struct jsonbuf b;
    char head[192];
    int n, rc = 0;

    jsonbuf_init(&b, 1u << 16);
    n = snprintf(head, sizeof(head),
                 "{\"ok\":true,\"service\":\"runboxd\",\"version\":\"%s\",\"wire\":%d,"
                 "\"pid\":%ld,\"port\":%d,\"uptime_ms\":%lld,\"workspace\":",
                 RUNBOX_VERSION, RUNBOX_WIRE, (long)getpid(), atomic_load(&a->port),
                 (long long)(clocks_mono_ms() - a->started_ms));
    rc |= jsonbuf_put(&b, head, (size_t)n, NULL);
    rc |= jsonbuf_put_json_string(&b, a->workspace, strlen(a->workspace), NULL);
    n = snprintf(head, sizeof(head),
                 ",\"fsync\":%s,\"allow_network\":%s,\"sandbox\":", a->fsync ? "true" : "false",
                 a->allow_network ? "true" : "false");
    rc |= jsonbuf_put(&b, head, (size_t)n, NULL);
    rc |= put_sandbox_status(a, &b);
    rc |= put_quota_status(a, &b);
    rc |= jsonbuf_put(&b, ",\"studio\":", 10, NULL);
    rc |= put_studio_status(a, &b);
    rc |= put_calls_status(a, &b);
    rc |= put_http_status(a, &b);
    rc |= put_mcp_status(a, &b);
    n = snprintf(head, sizeof(head), ",\"watches\":%zu",
                 a->tools->watch ? watch_count(a->tools->watch) : (size_t)0);
    rc |= jsonbuf_put(&b, head, (size_t)n, NULL);
    rc |= put_registry_status(a, &b);
    rc |= jsonbuf_put(&b, "}", 1, NULL);
    if (rc)
        n = api__send_error(conn, 503, "out of memory");
    else
        n = api_send_json(conn, 200, b.data, b.len, NULL, NULL);
    jsonbuf_cleanup(&b);
    return n;
}
