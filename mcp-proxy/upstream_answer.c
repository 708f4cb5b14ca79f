/* mcp-proxy/upstream_answer.c - what runboxd's answers mean to the client (see upstream.h).
 *
 * Pure functions: a reply in, a tool result or a one-line failure message out. The messages
 * say what happened and what to do, since the client's user (often an AI model) reads them and
 * decides whether to retry. Quoted daemon text is cut and kept valid UTF-8. */
#include "upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonbuf.h"
#include "jsonrpc.h"
#include "strfmt.h"
#include "utf8.h"

#define EXCERPT_MAX 200         /* bytes of an unexpected body quoted in a message */
#define DETAILS_MAX 4096        /* bytes of a 400 answer's details joined into its message */
#define MESSAGE_MAX (64u << 10) /* ceiling of a message buffer: far above what the caps allow */

static const char dropped_msg[] =
    "runboxd closed the connection before answering (it may have stopped or crashed); "
    "the call may have been applied — check before repeating";

/* Appends at most `max` bytes of text as one clean line: control characters become spaces,
 * bytes that are not UTF-8 become '?', and a cut is marked with "...". */
static void put_excerpt(struct jsonbuf *b, const char *text, size_t len, size_t max)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;

    while (i < len) {
        size_t k = utf8_seq_len(text + i, len - i);

        if (b->len >= max && i < len) {
            jsonbuf_puts(b, "...", NULL);
            return;
        }
        if (k == 0) {
            jsonbuf_put(b, "?", 1, NULL);
            k = 1;
        } else if (k == 1 && (s[i] < 0x20 || s[i] == 0x7F)) {
            jsonbuf_put(b, " ", 1, NULL);
        } else {
            jsonbuf_put(b, text + i, k, NULL);
        }
        i += k;
    }
}

char *upstream_unreachable_message(const char *base_url, int os_errno)
{
    const char *why;

    if (os_errno == EHOSTUNREACH || os_errno == ENETUNREACH)
        why = "host unreachable";
    else if (os_errno == ECONNREFUSED || os_errno == 0)
        why = "connection refused";
    else
        why = strerror(os_errno);
    return strfmt_alloc("runboxd is not reachable at %s (%s). Start it with `runboxd` (or leave "
                        "DAEMON_URL unset so runbox starts it), then retry.",
                        base_url, why);
}

static const char *error_string(const cJSON *doc)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");

    return cJSON_IsString(e) && e->valuestring[0] ? e->valuestring : NULL;
}

/* "<error>: <detail>; <detail>" for a 400 answer; details may be strings or any JSON. */
static char *bad_request_message(const cJSON *doc, const char *body, size_t len)
{
    const char *error = error_string(doc);
    const cJSON *details = cJSON_GetObjectItemCaseSensitive(doc, "details");
    const cJSON *list = cJSON_IsArray(details) ? details : NULL;
    const cJSON *d;
    struct jsonbuf b = JSONBUF_INIT(MESSAGE_MAX);
    bool first = true;

    if (!error) {
        jsonbuf_puts(&b, "runboxd answered HTTP 400: ", NULL);
        put_excerpt(&b, body, len, b.len + EXCERPT_MAX);
        return jsonbuf_take(&b, NULL);
    }
    put_excerpt(&b, error, strlen(error), DETAILS_MAX);
    cJSON_ArrayForEach(d, list)
    {
        char *text = cJSON_IsString(d) ? NULL : cJSON_PrintUnformatted(d);
        const char *s = cJSON_IsString(d) ? d->valuestring : text;

        if (s) {
            jsonbuf_puts(&b, first ? ": " : "; ", NULL);
            put_excerpt(&b, s, strlen(s), DETAILS_MAX);
            first = false;
        }
        cJSON_free(text);
        if (b.len >= DETAILS_MAX)
            break;
    }
    return jsonbuf_take(&b, NULL);
}

static char *status_message(long status, const cJSON *doc, const char *body, size_t len)
{
    const char *error = error_string(doc);
    struct jsonbuf b = JSONBUF_INIT(MESSAGE_MAX);
    char head[64];

    snprintf(head, sizeof(head), "runboxd answered HTTP %ld: ", status);
    jsonbuf_puts(&b, head, NULL);
    if (error)
        put_excerpt(&b, error, strlen(error), b.len + DETAILS_MAX);
    else if (len > 0)
        put_excerpt(&b, body, len, b.len + EXCERPT_MAX);
    else
        jsonbuf_puts(&b, "(empty body)", NULL);
    return jsonbuf_take(&b, NULL);
}

cJSON *upstream_parse(const char *text, size_t len)
{
    char *copy;
    cJSON *doc;

    if (jsonrpc_without_nul(text, len, &copy) < 0)
        return NULL;
    doc = cJSON_ParseWithLength(copy ? copy : text, len);
    free(copy);
    return doc;
}

char *upstream_wire_mismatch(const char *base_url, const char *version, int wire)
{
    char *msg = NULL;
    int n;

    if (wire < 1)
        wire = 1;
    if (!version)
        version = "?";
    if (wire == RUNBOX_WIRE)
        return NULL;
    if (wire < RUNBOX_WIRE)
        n = asprintf(&msg,
                     "runboxd at %s is older than this runbox (runboxd %s speaks revision %d, "
                     "runbox %s revision %d): it was started before runbox was updated. Restart "
                     "it (runbox restart) so that both come from the same install; until then "
                     "some calls may not behave as documented (a call that reports progress may "
                     "end seconds late)",
                     base_url, version, wire, RUNBOX_VERSION, RUNBOX_WIRE);
    else
        n = asprintf(&msg,
                     "runboxd at %s is newer than this runbox (runboxd %s speaks revision %d, "
                     "runbox %s revision %d): this runbox comes from an older install; use the "
                     "runbox installed beside that runboxd",
                     base_url, version, wire, RUNBOX_VERSION, RUNBOX_WIRE);
    return n < 0 ? NULL : msg;
}

bool upstream_is_runboxd_body(const char *body, size_t len)
{
    cJSON *doc = cJSON_ParseWithLength(body, len);
    bool yes = cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(doc, "ok"));

    cJSON_Delete(doc);
    return yes;
}

char *upstream_foreign_message(const char *base_url, long status, const char *body, size_t len)
{
    struct jsonbuf b = JSONBUF_INIT(MESSAGE_MAX);
    const char *hostport = strstr(base_url, "://");
    char head[64];

    jsonbuf_puts(&b, "something else answers on ", NULL);
    jsonbuf_puts(&b, hostport ? hostport + 3 : base_url, NULL);
    snprintf(head, sizeof(head), " \xe2\x80\x94 not runboxd (HTTP %ld: ", status);
    jsonbuf_puts(&b, head, NULL);
    if (len > 0)
        put_excerpt(&b, body, len, b.len + EXCERPT_MAX / 2);
    else
        jsonbuf_puts(&b, "(empty body)", NULL);
    jsonbuf_puts(&b, "); stop it or set DAEMON_URL to where runboxd listens", NULL);
    /* An HTML page's indentation says nothing: one space for each run of them. */
    for (size_t r = 0, w = 0; b.data && r <= b.len; r++)
        if (!(b.data[r] == ' ' && w > 0 && b.data[w - 1] == ' '))
            b.data[w++] = b.data[r];
    if (b.data)
        b.len = strlen(b.data);
    return jsonbuf_take(&b, NULL);
}

static int map_http(const struct upstream_reply *r, const char *base_url,
                    struct upstream_answer *out)
{
    cJSON *doc = upstream_parse(r->body, r->body_len);
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(doc, "ok");

    if (r->status == 200 && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "mcp_result")))
        out->mcp_result = cJSON_DetachItemFromObjectCaseSensitive(doc, "mcp_result");
    if (!cJSON_IsBool(ok)) {
        /* Every answer of runboxd's is a JSON object with "ok": anything else came from
         * another program on the port (or a proxy in between). */
        out->error = upstream_foreign_message(base_url, r->status, r->body, r->body_len);
    } else if (r->status == 200 && cJSON_IsTrue(ok)) {
        out->ok = true;
        out->result = cJSON_DetachItemFromObjectCaseSensitive(doc, "result");
        out->structured = cJSON_DetachItemFromObjectCaseSensitive(doc, "structured");
    } else if (r->status == 200 && cJSON_IsFalse(ok)) {
        const char *error = error_string(doc);

        out->error = strdup(error ? error : "runboxd reported a failure without a message");
        out->timeout = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "timeout"));
    } else if (r->status == 400 && cJSON_IsObject(doc)) {
        out->error = bad_request_message(doc, r->body, r->body_len);
    } else {
        out->error =
            status_message(r->status, cJSON_IsObject(doc) ? doc : NULL, r->body, r->body_len);
    }
    cJSON_Delete(doc);
    return out->ok || out->error ? 0 : -1;
}

int upstream_map_answer(const struct upstream_reply *reply, const char *base_url,
                        struct upstream_answer *out)
{
    memset(out, 0, sizeof(*out));
    switch (reply->outcome) {
    case UPSTREAM_ANSWERED:
        return map_http(reply, base_url, out);
    case UPSTREAM_REFUSED:
        out->error = upstream_unreachable_message(base_url, reply->os_errno);
        break;
    case UPSTREAM_TIMEOUT:
        out->error = strdup("MCP proxy timeout");
        out->timeout = true;
        break;
    case UPSTREAM_DROPPED:
        out->error = strdup(dropped_msg);
        break;
    case UPSTREAM_TOO_LARGE:
        out->error = strfmt_alloc("runboxd's answer is larger than the %zu MiB runbox accepts",
                                  UPSTREAM_MAX_BODY >> 20);
        break;
    case UPSTREAM_FAILED:
        out->error = strfmt_alloc("the request to runboxd at %s failed: %s", base_url,
                                  reply->error ? reply->error : "unknown error");
        break;
    }
    return out->error ? 0 : -1;
}

void upstream_answer_cleanup(struct upstream_answer *a)
{
    if (!a)
        return;
    cJSON_Delete(a->result);
    cJSON_Delete(a->structured);
    cJSON_Delete(a->mcp_result);
    free(a->error);
    memset(a, 0, sizeof(*a));
}
