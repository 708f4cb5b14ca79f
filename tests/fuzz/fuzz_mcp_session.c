/* tests/fuzz/fuzz_mcp_session.c - whole MCP sessions: the input is a sequence of messages, one
 * per line, fed to one session of a server with the real tool catalog (and resources and prompts
 * providers), the way runbox's stdio loop and runboxd's transports feed it. The back end answers
 * each call at once or later (text, structured, tool error, JSON-RPC error, or never until the
 * session closes), as the input's last byte of each line decides, so calls overlap, batches wait,
 * and cancellations and closes meet calls in flight. Contracts checked on every message the
 * engine sends, aborting when one breaks:
 *   - compact JSON that parses, one line, valid UTF-8, an object (or an array: a batch answer)
 *     whose members are JSON-RPC 2.0 messages;
 *   - an answer carries exactly one of result and error, and an error a whole-number code and a
 *     string message;
 *   - a message routed as the answer or a notice of request id I carries an "id" of the same
 *     value as I.
 * Every call is answered exactly once, and each input's session is freed at its end, so ASan
 * sees a call answered twice, a leak or a use after close. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <runbox/mcp.h>

#include "catalog.h"
#include "utf8.h"

#define PENDING_MAX 64

static void require(bool ok)
{
    if (!ok)
        abort();
}

struct fuzz {
    struct mcp_call *pending[PENDING_MAX];
    size_t npending;
    unsigned char mode; /* how the next call is answered (from the current line) */
    bool closed;        /* the session is closed; transport callbacks after closed() are bugs */
    bool gone;
};

static void check_member(const cJSON *m)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "jsonrpc");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(m, "result");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(m, "error");

    require(cJSON_IsObject(m));
    require(cJSON_IsString(v) && strcmp(v->valuestring, "2.0") == 0);
    if (cJSON_GetObjectItemCaseSensitive(m, "method"))
        return; /* a notification or a request of ours */
    require((res != NULL) != (err != NULL));
    if (err) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(err, "message");

        require(cJSON_IsNumber(code) && code->valuedouble == (double)(long)code->valuedouble);
        require(cJSON_IsString(msg));
    }
}

static void on_send(void *ctx, const char *json, size_t len, const struct mcp_route *route)
{
    struct fuzz *f = ctx;
    cJSON *m;

    require(!f->gone);
    require(len > 0 && memchr(json, '\n', len) == NULL && memchr(json, '\0', len) == NULL);
    require(utf8_valid_prefix(json, len) == len);
    m = cJSON_ParseWithLength(json, len);
    require(m != NULL);
    if (cJSON_IsArray(m)) {
        const cJSON *el;

        require(cJSON_GetArraySize(m) > 0);
        cJSON_ArrayForEach(el, m) check_member(el);
    } else {
        check_member(m);
    }
    if (route && route->id && !cJSON_IsArray(m) &&
        (route->kind == MCP_ROUTE_RESPONSE || route->kind == MCP_ROUTE_REQUEST) &&
        !cJSON_GetObjectItemCaseSensitive(m, "method")) {
        /* The answer names the request its route says: the same id value (the route's text
         * is the id's canonical JSON; the message may spell it otherwise, "\b" for "\u0008"). */
        cJSON *rid = cJSON_ParseWithLength(route->id, route->id_len);

        require(rid != NULL);
        require(cJSON_Compare(cJSON_GetObjectItemCaseSensitive(m, "id"), rid, true));
        cJSON_Delete(rid);
    }
    cJSON_Delete(m);
}

static void on_closed(void *ctx)
{
    struct fuzz *f = ctx;

    require(f->closed && !f->gone);
    f->gone = true;
}

/* Answers c now, the way mode says. */
static void answer(struct mcp_call *c, unsigned char mode)
{
    const char *method = mcp_call_method(c);

    switch (mode % 6) {
    case 0:
        if (strcmp(method, "tools/call") == 0)
            mcp_call_result_text(c, "ok \xc3\xa9\xff", 6); /* one invalid byte on purpose */
        else
            mcp_call_result(c, cJSON_CreateObject());
        break;
    case 1:
        if (strcmp(method, "tools/call") == 0)
            mcp_call_result_text_structured(c, "{\"a\":1}", 7, cJSON_Parse("{\"a\":1}"));
        else if (strcmp(method, "resources/list") == 0)
            mcp_call_result(
                c, cJSON_Parse("{\"resources\":[{\"uri\":\"file:///a\",\"name\":\"a\"}]}"));
        else if (strcmp(method, "prompts/list") == 0)
            mcp_call_result(c, cJSON_Parse("{\"prompts\":[{\"name\":\"p\"}]}"));
        else
            mcp_call_result(c, cJSON_Parse("{\"contents\":[],\"messages\":[]}"));
        break;
    case 2:
        if (strcmp(method, "tools/call") == 0)
            mcp_call_tool_error(c, "it failed \xe2\x82");
        else
            mcp_call_error(c, MCP_RESOURCE_NOT_FOUND, "not found", NULL);
        break;
    case 3:
        mcp_call_error(c, MCP_INTERNAL_ERROR, "internal", cJSON_CreateString("d"));
        break;
    default: /* progress, then text */
        mcp_call_progress(c, 1, 2, "half");
        mcp_call_progress(c, 1, 2, "not above the last: dropped");
        mcp_call_result_text(c, "done", 4);
        break;
    }
}

static void handler(void *arg, struct mcp_call *c)
{
    struct fuzz *f = arg;

    /* Modes 6 and up hold the call; it is answered after a later line or at the end. */
    if ((f->mode % 9) >= 6 && f->npending < PENDING_MAX) {
        f->pending[f->npending++] = c;
        return;
    }
    answer(c, f->mode);
}

/* Answers held calls: the oldest ones, as many as the line's byte says. */
static void release(struct fuzz *f, unsigned char how)
{
    size_t n = f->npending < (size_t)(how % 4) ? f->npending : (size_t)(how % 4);

    for (size_t i = 0; i < n; i++)
        answer(f->pending[i], (unsigned char)(how + i));
    memmove(f->pending, f->pending + n, (f->npending - n) * sizeof(f->pending[0]));
    f->npending -= n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct mcp_transport t = {.send = on_send, .closed = on_closed};
    static const struct mcp_server_info info = {"fuzz", "1", NULL, "Use the tools.",
                                                MCP_NOTIFY_TOOLS | MCP_NOTIFY_UPDATES};
    static struct fuzz f;
    static struct mcp_server *srv;
    struct mcp_session *s;
    const char *p = (const char *)data, *end = p + size;
    unsigned flags = size > 0 ? data[0] % 4 : 0;

    /* One server for every input (registering the catalog's tools is the slow part); a fresh
     * session per input. */
    if (!srv) {
        srv = mcp_server_new(&info, NULL);
        require(srv != NULL);
        require(catalog_register_tools(catalog_builtin(), srv, handler, &f, NULL) == 0);
        require(mcp_server_set_resource_provider(srv, handler, handler, &f, NULL) == 0);
        require(mcp_server_set_prompt_provider(srv, handler, handler, &f, NULL) == 0);
    }
    memset(&f, 0, sizeof(f));
    s = mcp_session_new(srv, &t, &f, flags & (MCP_SESSION_MODERN_ONLY | MCP_SESSION_NO_BATCH),
                        NULL);
    require(s != NULL);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

        f.mode = len ? (unsigned char)p[len - 1] : 0;
        mcp_session_handle(s, p, len, (void *)(uintptr_t)(1 + (p - (const char *)data) % 3));
        release(&f, (unsigned char)(f.mode >> 2));
        if ((f.mode & 0x3f) == 0x3f) /* now and then a transport stream goes away */
            mcp_session_cancel_origin(s, (void *)(uintptr_t)(1 + f.mode % 3));
        p += len + (nl ? 1 : 0);
    }
    f.closed = true;
    mcp_session_close(s);
    /* Calls still held are answered after the close: the answers are dropped. */
    for (size_t i = 0; i < f.npending; i++)
        answer(f.pending[i], (unsigned char)i);
    require(f.gone);
    return 0;
}
