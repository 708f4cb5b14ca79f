/* daemon/api_bridge.c - the Studio plugin's HTTP endpoints and the answer of Studio tool calls
 * (see api_bridge.h and docs/studio.md).
 *
 * Every plugin endpoint wants the header "X-Runbox-Plugin: 1" on top of api.c's checks: a web
 * page cannot send a custom header without a CORS preflight, which runboxd never grants.
 * Bodies from the plugin are passed through bridge_json_sanitize() first (Roblox's JSONEncode
 * writes bare inf/-inf/nan), and an empty array stands for an empty object wherever an object is
 * expected (JSONEncode cannot tell {} from []). Garbage never fails anyone's command: an invalid
 * body is a 400 for the sender only. A result body over BRIDGE_RESULT_MAX is read without being
 * kept, its command id is found by bridge_idscan, and that call fails with a clear message (413
 * for the plugin). */
#include "api_bridge.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <civetweb.h>

#include "api.h"
#include "bridge.h"
#include "http_guard.h"
#include "console.h"
#include "jsonbuf.h"
#include "log.h"
#include "tools.h"

#define READ_CHUNK (64u << 10)

/* ---- answers ---- */

/* One complete response (api_send_json); close ends the connection after it. */
static int reply(struct mg_connection *conn, int status, const char *body, size_t len, bool close)
{
    return api_send_json(conn, status, body, len, close ? "Connection" : NULL, "close");
}

static int reply_str(struct mg_connection *conn, int status, const char *body)
{
    return reply(conn, status, body, strlen(body), false);
}

/* {"ok":false,"error":msg}; close ends the connection after it. */
static int reply_error(struct mg_connection *conn, int status, const char *msg, bool close)
{
    return api_send_error(conn, status, msg, close ? "Connection" : NULL, "close");
}

/* ---- bodies ---- */

struct body {
    char *data;                /* owned, NUL-terminated; NULL when the body was over the limit */
    size_t len;                /* bytes read (also when not kept) */
    bool over;                 /* longer than the limit */
    bool drained;              /* every byte was read (keep-alive is safe) */
    struct bridge_idscan scan; /* fed when over, to find the command id */
    struct errinfo err;        /* why reading failed (read_body returned -2) */
};

/* Reads the body: kept up to max bytes; past it (for /result) scanned for the id up to
 * API_BRIDGE_DRAIN_MAX. Returns 0, -1 when out of memory, or -2 when the body could not be read
 * (bd->err: it did not arrive in time, or its chunks are malformed). */
static int read_body(struct mg_connection *conn, size_t max, struct body *bd)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    long long clen = ri->content_length;
    size_t cap = 0;
    char chunk[READ_CHUNK];

    memset(bd, 0, sizeof(*bd));
    bridge_idscan_init(&bd->scan);
    if (clen > (long long)API_BRIDGE_DRAIN_MAX) {
        bd->over = true;
        bd->len = (size_t)clen;
        return 0;
    }
    for (;;) {
        int n = http_guard_read(conn, chunk, sizeof(chunk), &bd->err);

        if (n < 0) {
            free(bd->data);
            bd->data = NULL;
            return -2;
        }
        if (n == 0)
            break;
        if (!bd->over && bd->len + (size_t)n > max) {
            char *kept = bd->data; /* owned; scanned, then freed */

            bd->over = true;
            bd->data = NULL;
            bridge_idscan_feed(&bd->scan, kept ? kept : "", kept ? bd->len : 0);
            free(kept);
        }
        if (bd->over) {
            bridge_idscan_feed(&bd->scan, chunk, (size_t)n);
        } else {
            if (bd->len + (size_t)n + 1 > cap) {
                size_t ncap = cap ? cap * 2 : (size_t)n + 1 + (clen > 0 ? (size_t)clen : 0);
                char *p;

                while (ncap < bd->len + (size_t)n + 1)
                    ncap *= 2;
                p = realloc(bd->data, ncap);
                if (!p) {
                    free(bd->data);
                    bd->data = NULL;
                    return -1;
                }
                bd->data = p;
                cap = ncap;
            }
            memcpy(bd->data + bd->len, chunk, (size_t)n);
        }
        bd->len += (size_t)n;
        if (bd->len > API_BRIDGE_DRAIN_MAX)
            return 0; /* not drained: the caller closes the connection */
    }
    bd->drained = true;
    if (!bd->over && !bd->data)
        bd->data = calloc(1, 1);
    if (bd->data)
        bd->data[bd->len] = '\0';
    return bd->over || bd->data ? 0 : -1;
}

/* Sanitizes and parses a plugin body that must be an object ([] counts as {}). Returns an owned
 * object, or NULL with msg filled. */
static cJSON *parse_object(const char *text, size_t len, char *msg, size_t msgsize)
{
    size_t clean_len;
    char *clean = bridge_json_sanitize(text, len, &clean_len);
    const char *end = NULL;
    cJSON *j;

    if (!clean) {
        snprintf(msg, msgsize, "out of memory");
        return NULL;
    }
    j = cJSON_ParseWithLengthOpts(clean, clean_len + 1, &end, true); /* with the NUL */
    if (!j) {
        snprintf(msg, msgsize, "invalid JSON from the plugin near byte %zu; nothing was changed",
                 end ? (size_t)(end - clean) : (size_t)0);
    } else if (cJSON_IsArray(j) && cJSON_GetArraySize(j) == 0) {
        cJSON_Delete(j);
        j = cJSON_CreateObject();
    } else if (!cJSON_IsObject(j)) {
        snprintf(msg, msgsize, "the body must be a JSON object");
        cJSON_Delete(j);
        j = NULL;
    }
    free(clean);
    return j;
}

/* The answer to a read_body() failure: rc -2 (the body did not come: 408 or 400) or -1. */
static int refuse_unread(struct mg_connection *conn, const struct body *bd, int rc)
{
    if (rc == -2)
        return reply_error(conn, bd->err.kind == ERR_TIMEOUT ? 408 : 400, bd->err.msg, true);
    return reply_error(conn, 503, "out of memory reading the body", false);
}

/* The checks every plugin POST shares, then the body. Returns 0 with *out (owned), else the
 * status already answered. */
static int read_plugin_object(struct mg_connection *conn, size_t max, cJSON **out)
{
    struct body bd;
    char msg[200];
    int status = 0, rc;

    if (!api_content_type_ok(mg_get_header(conn, "Content-Type")))
        return reply_error(conn, 415, "send Content-Type: application/json", false);
    rc = read_body(conn, max, &bd);
    if (rc < 0)
        return refuse_unread(conn, &bd, rc);
    if (bd.over) {
        snprintf(msg, sizeof(msg), "body of %zu bytes is over the limit of %zu bytes", bd.len, max);
        status = reply_error(conn, 413, msg, !bd.drained);
    } else {
        *out = parse_object(bd.data, bd.len, msg, sizeof(msg));
        if (!*out)
            status = reply_error(conn, 400, msg, false);
    }
    free(bd.data);
    return status;
}

/* ---- GET /poll ---- */

static int handle_poll(const struct tools_ctx *ctx, struct mg_connection *conn)
{
    const char *qs = mg_get_request_info(conn)->query_string;
    size_t qlen = qs ? strlen(qs) : 0;
    char id[BRIDGE_ID_MAX] = "default", role[16] = "edit", place[BRIDGE_TEXT_MAX] = "",
         name[BRIDGE_TEXT_MAX] = "", parent[BRIDGE_ID_MAX] = "";
    struct bridge_instance_info inst;
    struct bridge_command cmd;
    struct errinfo err = {0};
    struct jsonbuf b = JSONBUF_INIT((size_t)64 << 20);
    int r, status;

    /* The reference plugin sends no parameters: it is then one edit instance named "default". */
    if (qs && (mg_get_var(qs, qlen, "instance", id, sizeof(id)) == -2 ||
               mg_get_var(qs, qlen, "role", role, sizeof(role)) == -2))
        return reply_error(conn, 400, "instance or role is too long", false);
    if (qs) {
        (void)mg_get_var(qs, qlen, "place", place, sizeof(place));
        (void)mg_get_var(qs, qlen, "name", name, sizeof(name));
        /* A parent that is not an id (too long, odd bytes) is dropped, not refused. */
        if (mg_get_var(qs, qlen, "parent", parent, sizeof(parent)) < 0)
            parent[0] = '\0';
    }
    inst = (struct bridge_instance_info){
        .id = id, .place = place, .name = name, .parent = parent[0] ? parent : NULL};
    r = bridge_parse_role(role);
    if (r < 0)
        return reply_error(conn, 400, "role must be edit, server or client", false);
    inst.role = (enum bridge_role)r;
    r = bridge_poll(ctx->bridge, &inst, &cmd, &err);
    if (r < 0)
        return reply_error(conn, api_status_for(err.kind), err.msg, false);
    if (r == 0)
        return reply_str(conn, 200, "{\"hasCommand\":false}");
    jsonbuf_puts(&b, "{\"hasCommand\":true,\"id\":\"", NULL);
    jsonbuf_puts(&b, cmd.id, NULL); /* bridge_id_ok: nothing to escape */
    jsonbuf_puts(&b, "\",\"tool\":\"", NULL);
    jsonbuf_puts(&b, cmd.tool, NULL); /* a catalog name: nothing to escape */
    jsonbuf_puts(&b, "\",\"args\":", NULL);
    jsonbuf_puts(&b, cmd.args_json, NULL);
    jsonbuf_puts(&b, "}", NULL);
    if (b.failed) {
        /* The command was taken and cannot be offered again: fail its call now. */
        bridge_result(ctx->bridge, cmd.id, false, "out of memory sending the command", 33, false);
        status = reply_error(conn, 503, "out of memory", false);
    } else {
        status = reply(conn, 200, b.data, b.len, false);
    }
    jsonbuf_cleanup(&b);
    bridge_command_cleanup(&cmd);
    return status;
}

/* ---- POST /result ---- */

/* The outcome of a result object: *ok, and the text to hand over in an owned buffer. */
static char *result_payload(const cJSON *o, bool *ok, bool *is_json)
{
    const cJSON *okj = cJSON_GetObjectItemCaseSensitive(o, "ok");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "result");

    /* {"ok":bool,...} is ours; the reference sends {"id","result"} or {"id","error"}. */
    *ok = cJSON_IsBool(okj) ? cJSON_IsTrue(okj) : (!e || cJSON_IsNull(e));
    *is_json = false;
    if (!*ok) {
        if (cJSON_IsString(e) && e->valuestring[0])
            return strdup(e->valuestring);
        if (e && !cJSON_IsNull(e))
            return cJSON_PrintUnformatted(e);
        return strdup("Studio reported a failure without a message");
    }
    if (cJSON_IsString(r))
        return strdup(r->valuestring);
    *is_json = true;
    return r ? cJSON_PrintUnformatted(r) : strdup("null");
}

static const char *const ignored_reason[] = {
    [BRIDGE_RESULT_UNKNOWN] = "unknown id",
    [BRIDGE_RESULT_FINISHED] = "the call already ended (answered, failed or timed out)",
    [BRIDGE_RESULT_NOT_SENT] = "that command was not sent to any plugin yet",
};

static int answer_result_status(struct mg_connection *conn, const char *id,
                                enum bridge_result_status st)
{
    char body[300];

    if (st == BRIDGE_RESULT_ACCEPTED)
        return reply_str(conn, 200, "{\"ok\":true}");
    log_info("bridge: result for %s ignored: %s", id, ignored_reason[st]);
    snprintf(body, sizeof(body), "{\"ok\":true,\"ignored\":true,\"reason\":\"%s\"}",
             ignored_reason[st]);
    return reply_str(conn, 200, body);
}

/* A result too large to keep: fails its call (when the id was found) and answers 413. */
static int refuse_result(const struct tools_ctx *ctx, struct mg_connection *conn,
                         const struct body *bd)
{
    char msg[300];

    snprintf(msg, sizeof(msg),
             "Studio's answer was %zu bytes, over the limit of %u bytes (16 MiB); nothing of it "
             "was kept. Ask for less (a smaller limit, depth or range) and retry",
             bd->len, BRIDGE_RESULT_MAX);
    if (bd->scan.found) {
        enum bridge_result_status st =
            bridge_result(ctx->bridge, bd->scan.id, false, msg, strlen(msg), false);

        log_warn("bridge: result for %s refused: %zu bytes%s", bd->scan.id, bd->len,
                 st == BRIDGE_RESULT_ACCEPTED ? "; the call failed" : "");
    } else {
        log_warn("bridge: result of %zu bytes refused; no command id found in it", bd->len);
    }
    return reply_error(conn, 413, msg, !bd->drained);
}

/* A result that could not be parsed (msg says why). One nested past cJSON's limit is valid JSON
 * we cannot read: when its command's id is found, that command fails now with the reason
 * instead of waiting for its deadline (the plugin does not resend after a 400). Other invalid
 * JSON fails nobody's command. Answers 400. */
static int refuse_unparsed(const struct tools_ctx *ctx, struct mg_connection *conn,
                           const struct body *bd, const char *msg)
{
    struct bridge_idscan sc;
    char why[300];

    bridge_idscan_init(&sc);
    bridge_idscan_feed(&sc, bd->data, bd->len);
    if (sc.max_depth <= CJSON_NESTING_LIMIT) {
        log_info("bridge: POST /result: %s", msg);
        return reply_error(conn, 400, msg, false);
    }
    snprintf(why, sizeof(why),
             "Studio's answer is nested %d levels deep, past the limit of %d; nothing of it was "
             "kept. Ask for less depth and retry",
             sc.max_depth, CJSON_NESTING_LIMIT);
    if (sc.found) {
        enum bridge_result_status st =
            bridge_result(ctx->bridge, sc.id, false, why, strlen(why), false);

        log_warn("bridge: result for %s refused: nested %d levels deep%s", sc.id, sc.max_depth,
                 st == BRIDGE_RESULT_ACCEPTED ? "; the call failed" : "");
    } else {
        log_warn("bridge: result nested %d levels deep refused; no command id found in it",
                 sc.max_depth);
    }
    return reply_error(conn, 400, why, false);
}

static int handle_result(const struct tools_ctx *ctx, struct mg_connection *conn)
{
    struct body bd;
    char msg[200];
    cJSON *o = NULL;
    const cJSON *idj;
    char *payload = NULL;
    bool ok, is_json;
    int status;

    if (!api_content_type_ok(mg_get_header(conn, "Content-Type")))
        return reply_error(conn, 415, "send Content-Type: application/json", false);
    status = read_body(conn, BRIDGE_RESULT_MAX, &bd);
    if (status < 0)
        return refuse_unread(conn, &bd, status);
    if (bd.over)
        return refuse_result(ctx, conn, &bd);
    o = parse_object(bd.data, bd.len, msg, sizeof(msg));
    if (!o) {
        status = refuse_unparsed(ctx, conn, &bd, msg);
        free(bd.data);
        return status;
    }
    free(bd.data);
    idj = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (!cJSON_IsString(idj) || !bridge_id_ok(idj->valuestring)) {
        cJSON_Delete(o);
        return reply_error(conn, 400, "a result needs the command's \"id\" (a string)", false);
    }
    payload = result_payload(o, &ok, &is_json);
    if (!payload)
        status = reply_error(conn, 503, "out of memory", false);
    else
        status = answer_result_status(
            conn, idj->valuestring,
            bridge_result(ctx->bridge, idj->valuestring, ok, payload, strlen(payload), is_json));
    free(payload);
    cJSON_Delete(o);
    return status;
}

/* ---- POST /console and /disconnect ---- */

/* Roblox's MessageType names and ours to a console level. */
static enum console_level level_of(const cJSON *l)
{
    const char *s = cJSON_IsString(l) ? l->valuestring : "";
    int lv = console_parse_level(s);

    if (lv >= 0)
        return (enum console_level)lv;
    if (strcasestr(s, "warn"))
        return CONSOLE_WARN;
    if (strcasestr(s, "err"))
        return CONSOLE_ERROR;
    if (strcasestr(s, "info"))
        return CONSOLE_INFO;
    return CONSOLE_LOG;
}

/* ts in ms since the epoch; seconds (os.time(), tick()) are recognized by their size. */
static int64_t ts_of(const cJSON *t)
{
    if (!cJSON_IsNumber(t) || !(t->valuedouble > 0) || t->valuedouble > 1e15)
        return 0;
    return t->valuedouble < 1e11 ? (int64_t)(t->valuedouble * 1000) : (int64_t)t->valuedouble;
}

static int handle_console(const struct tools_ctx *ctx, struct mg_connection *conn)
{
    cJSON *o = NULL;
    const cJSON *inst, *entries, *e;
    char body[120];
    size_t n = 0;
    int status = read_plugin_object(conn, API_BRIDGE_BODY_MAX, &o);

    if (status)
        return status;
    inst = cJSON_GetObjectItemCaseSensitive(o, "instance");
    entries = cJSON_GetObjectItemCaseSensitive(o, "entries");
    if (!cJSON_IsArray(entries) && !(cJSON_IsObject(entries) && !entries->child)) {
        cJSON_Delete(o);
        return reply_error(conn, 400, "\"entries\" must be an array of {level, message, ts}",
                           false);
    }
    cJSON_ArrayForEach(e, entries)
    {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");

        if (!cJSON_IsString(m) || !ctx->console)
            continue;
        console_append(ctx->console, level_of(cJSON_GetObjectItemCaseSensitive(e, "level")),
                       CONSOLE_SRC_STUDIO, 0, cJSON_IsString(inst) ? inst->valuestring : NULL,
                       ts_of(cJSON_GetObjectItemCaseSensitive(e, "ts")), m->valuestring,
                       strlen(m->valuestring));
        n++;
    }
    cJSON_Delete(o);
    snprintf(body, sizeof(body), "{\"ok\":true,\"accepted\":%zu%s}", n,
             ctx->console ? "" : ",\"ignored\":true");
    return reply_str(conn, 200, body);
}

static int handle_disconnect(const struct tools_ctx *ctx, struct mg_connection *conn)
{
    cJSON *o = NULL;
    const cJSON *inst;
    char body[120];
    int failed, status = read_plugin_object(conn, API_BRIDGE_BODY_MAX, &o);

    if (status)
        return status;
    inst = cJSON_GetObjectItemCaseSensitive(o, "instance");
    if (!cJSON_IsString(inst)) {
        cJSON_Delete(o);
        return reply_error(conn, 400, "a disconnect needs \"instance\" (a string)", false);
    }
    failed = bridge_disconnect(ctx->bridge, inst->valuestring);
    if (failed >= 0)
        log_info("bridge: Studio instance %s disconnected; %d command(s) failed", inst->valuestring,
                 failed);
    cJSON_Delete(o);
    snprintf(body, sizeof(body), "{\"ok\":true,\"known\":%s,\"failed\":%d}",
             failed >= 0 ? "true" : "false", failed >= 0 ? failed : 0);
    return reply_str(conn, 200, body);
}

/* ---- routing ---- */

static const struct {
    const char *path;
    bool get;
} endpoints[] = {
    {"/poll", true},
    {"/result", false},
    {"/console", false},
    {"/disconnect", false},
};

bool api_bridge_is_path(const char *path)
{
    for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++)
        if (strcmp(path, endpoints[i].path) == 0)
            return true;
    return false;
}

int api_bridge_handle(const struct tools_ctx *ctx, struct mg_connection *conn, const char *method,
                      const char *path)
{
    const char *hdr = mg_get_header(conn, "X-Runbox-Plugin");
    bool get = strcmp(path, "/poll") == 0;
    char msg[120];

    if (!hdr || strcmp(hdr, "1") != 0)
        return reply_error(conn, 403,
                           "the Studio plugin endpoints need the header X-Runbox-Plugin: 1 "
                           "(the Runbox Studio plugin sends it)",
                           false);
    if (strcmp(method, get ? "GET" : "POST") != 0) {
        snprintf(msg, sizeof(msg), "%.16s %s is not allowed; use %s", method, path,
                 get ? "GET" : "POST");
        return api_send_error(conn, 405, msg, "Allow", get ? "GET" : "POST");
    }
    if (!ctx || !ctx->bridge)
        return reply_error(conn, 503, "the Studio bridge is not running in this runboxd", false);
    if (get)
        return handle_poll(ctx, conn);
    if (strcmp(path, "/result") == 0)
        return handle_result(ctx, conn);
    if (strcmp(path, "/console") == 0)
        return handle_console(ctx, conn);
    return handle_disconnect(ctx, conn);
}
