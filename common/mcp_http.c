/* common/mcp_http.c - MCP over HTTP (see runbox/mcp_http.h): reading requests, Streamable HTTP
 * (POST, GET, DELETE), the legacy HTTP+SSE pair and the transport itself. The response streams
 * are in mcp_http_stream.c, the sessions in mcp_http_session.c.
 *
 * DESIGN
 * Every HTTP request is served by the civetweb worker that read it, and only that thread writes
 * to its connection (the stream's owner). A message for a stream that comes from another thread
 * (a handler answering later, a broadcast) is queued on the stream and the owner, which waits
 * on the stream's condition variable, writes it. A message the owner produces itself (a
 * synchronous handler running inside mcp_session_handle) is written at once, so progress of a
 * long call reaches the client while the call runs.
 *
 * A POST's answer starts as nothing: the first message decides. Its answer alone makes an
 * application/json response (with the HTTP status the revision wants for an error); anything
 * before it (progress, a log, a server request) turns the response into a text/event-stream,
 * which ends with the answer. Streams that live long (a GET stream, a legacy /sse stream, a
 * subscriptions/listen answer) get an SSE comment every keepalive_ms, which is also how a
 * client that left is found when nothing watches its connection; a stream whose queue passes
 * stream_queue_max (a client that stopped reading) is closed. Progress does not add up there: a
 * newer progress notification replaces the waiting one for its token (mcp_http_queue.c).
 *
 * The engine's sessions: a legacy Streamable HTTP session (initialize without Mcp-Session-Id)
 * is listed by its random id; a modern request, and a request that has neither a session nor
 * the modern _meta, gets a session of its own for just that POST (MCP_SESSION_MODERN_ONLY), so
 * the engine gives the errors; a legacy /sse stream is a session too. */
#include "mcp_http_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <civetweb.h>

#include "http_guard.h"
#include "jsonrpc.h"
#include "mcp_int.h"

#define BODY_MAX_DEFAULT     ((size_t)32 << 20)
#define SESSION_MAX_DEFAULT  256
#define IDLE_MS_DEFAULT      (60 * 60 * 1000)
#define QUEUE_MAX_DEFAULT    ((size_t)8 << 20)
#define KEEPALIVE_MS_DEFAULT 15000
#define BODY_CHUNK           ((size_t)64 << 10)

static const char *const legacy_versions[] = {"2024-11-05", "2025-03-26", "2025-06-18",
                                              "2025-11-25"};

/* ---- reading a request ---- */

static bool accepts(const char *accept, const char *type)
{
    return accept && (strcasestr(accept, type) || strstr(accept, "*/*"));
}

static bool is_json_type(const char *ctype)
{
    static const char want[] = "application/json";

    if (!ctype)
        return false;
    while (*ctype == ' ')
        ctype++;
    if (strncasecmp(ctype, want, sizeof(want) - 1) != 0)
        return false;
    ctype += sizeof(want) - 1;
    while (*ctype == ' ')
        ctype++;
    return !*ctype || *ctype == ';';
}

/* True when the client waits for "100 Continue" before it sends the body (curl does for bodies
 * over 1 MiB, and waits a second for it otherwise): civetweb sends it only for its own uploads. */
static bool expects_continue(const struct mg_connection *conn)
{
    const char *expect = mg_get_header(conn, "Expect");
    const char *version = mg_get_request_info(conn)->http_version;

    return expect && strcasecmp(expect, "100-continue") == 0 && version &&
           strcmp(version, "1.1") == 0;
}

/* 413 for a chunked body that grew past max; what follows is drained briefly (a lingering
 * close), then the connection closes. */
static int body_too_large(struct mg_connection *conn, size_t max)
{
    mcp_http__http_error(conn, 413, MCP_INVALID_REQUEST, "Connection: close\r\n",
                         "the request body is over the limit of %zu bytes", max);
    http_guard_drain(conn);
    return 413;
}

/* Reads the body (at most max bytes, Content-Length or chunked) into an owned NUL-terminated
 * buffer. Answers and returns the status on failure, else 0. A chunked body is read into a
 * buffer of at most max + 2 bytes: one byte past the limit tells an over-long body apart from
 * one of exactly max bytes. */
static int read_body(struct mg_connection *conn, size_t max, char **out, size_t *outlen)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    long long clen = ri->content_length;
    size_t cap = clen >= 0 ? (size_t)clen + 1 : BODY_CHUNK, len = 0;
    struct errinfo err = {0};
    char *buf;

    if (clen > (long long)max) {
        mcp_http__http_error(conn, 413, MCP_INVALID_REQUEST, "Connection: close\r\n",
                             "the request body is %lld bytes, over the limit of %zu bytes", clen,
                             max);
        http_guard_drain(conn);
        return 413;
    }
    if (cap > max + 2)
        cap = max + 2;
    if (expects_continue(conn))
        mg_write(conn, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    buf = malloc(cap);
    if (!buf)
        return mcp_http__http_error(conn, 503, MCP_INTERNAL_ERROR, NULL,
                                    "out of memory for the body");
    for (;;) {
        int n;

        if (len + 1 == cap) {
            char *nb;
            size_t ncap = cap * 2 > max + 2 ? max + 2 : cap * 2;

            if (clen >= 0)
                break;
            if (len > max) {
                free(buf);
                return body_too_large(conn, max);
            }
            nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return mcp_http__http_error(conn, 503, MCP_INTERNAL_ERROR, NULL,
                                            "out of memory for the body");
            }
            buf = nb;
            cap = ncap;
        }
        n = http_guard_read(conn, buf + len, cap - 1 - len, &err);
        if (n < 0) {
            free(buf);
            return mcp_http__http_error(conn, err.kind == ERR_TIMEOUT ? 408 : 400,
                                        MCP_INVALID_REQUEST, "Connection: close\r\n", "%s",
                                        err.msg);
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (len > max) {
        free(buf);
        return body_too_large(conn, max);
    }
    if (clen >= 0 && len != (size_t)clen) {
        free(buf);
        return mcp_http__http_error(conn, 400, MCP_INVALID_REQUEST, NULL,
                                    "the request body ended after %zu of %lld bytes", len, clen);
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return 0;
}

/* The value of a query parameter (URL-decoded) into out; false when absent. */
static bool query_param(const struct mg_connection *conn, const char *name, char *out, size_t size)
{
    const char *q = mg_get_request_info(conn)->query_string;

    return q && mg_get_var(q, strlen(q), name, out, size) > 0;
}

/* ---- the 2026-07-28 headers ---- */

/* A header value without the whitespace around it (RFC 9110 section 5.5: it is not part of
 * the value; civetweb drops only the leading part): *len bytes from the returned pointer. */
static const char *trim_ows(const char *h, size_t *len)
{
    size_t n;

    while (*h == ' ' || *h == '\t')
        h++;
    n = strlen(h);
    while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    *len = n;
    return h;
}

/* True when header value h, trimmed, is exactly want. */
static bool header_is(const char *h, const char *want)
{
    size_t n;

    h = trim_ows(h, &n);
    return strlen(want) == n && memcmp(h, want, n) == 0;
}

/* Decodes a header value that may be "=?base64?...?=" into out (NUL-terminated), after taking
 * off the whitespace around it. */
static bool header_value(const char *h, char *out, size_t size)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n, o = 0;
    unsigned acc = 0;
    int bits = 0;

    h = trim_ows(h, &n);
    if (n < 11 || strncmp(h, "=?base64?", 9) != 0 || strncmp(h + n - 2, "?=", 2) != 0) {
        if (n >= size)
            return false;
        memcpy(out, h, n);
        out[n] = '\0';
        return true;
    }
    for (const char *p = h + 9; p < h + n - 2; p++) {
        const char *at;

        if (*p == '=')
            break;
        at = strchr(tbl, *p);
        if (!at || !*p)
            return false;
        acc = (acc << 6) | (unsigned)(at - tbl);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o + 1 >= size)
                return false;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[o] = '\0';
    return true;
}

/* Checks a modern request's headers against its body; answers 400 -32020 and returns the status
 * when they differ, else 0. */
static int check_modern_headers(struct mg_connection *conn, const cJSON *msg)
{
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    const cJSON *ver =
        cJSON_GetObjectItemCaseSensitive(meta, "io.modelcontextprotocol/protocolVersion");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    const char *hv = mg_get_header(conn, "MCP-Protocol-Version");
    const char *hm = mg_get_header(conn, "Mcp-Method");
    const char *hn = mg_get_header(conn, "Mcp-Name");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const char *want_name = NULL;
    char decoded[2048];
    char *line;
    char why[400] = "";

    if (cJSON_IsString(method) && (strcmp(method->valuestring, "tools/call") == 0 ||
                                   strcmp(method->valuestring, "prompts/get") == 0)) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(params, "name");

        want_name = cJSON_IsString(n) ? n->valuestring : "";
    } else if (cJSON_IsString(method) && strcmp(method->valuestring, "resources/read") == 0) {
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(params, "uri");

        want_name = cJSON_IsString(u) ? u->valuestring : "";
    }
    if (!hv)
        snprintf(why, sizeof(why), "the MCP-Protocol-Version header is missing");
    else if (!cJSON_IsString(ver) || !header_is(hv, ver->valuestring))
        snprintf(why, sizeof(why),
                 "the MCP-Protocol-Version header %.40s does not match the body's protocol "
                 "version",
                 hv);
    else if (!hm)
        snprintf(why, sizeof(why), "the Mcp-Method header is missing");
    else if (!cJSON_IsString(method) || !header_is(hm, method->valuestring))
        snprintf(why, sizeof(why), "the Mcp-Method header %.60s does not match the body's method",
                 hm);
    else if (want_name && !hn)
        snprintf(why, sizeof(why), "the Mcp-Name header is missing (it names %.60s)",
                 method->valuestring);
    else if (want_name &&
             (!header_value(hn, decoded, sizeof(decoded)) || strcmp(decoded, want_name) != 0))
        snprintf(why, sizeof(why), "the Mcp-Name header does not match the body's %s",
                 strcmp(method->valuestring, "resources/read") == 0 ? "uri" : "name");
    if (!why[0])
        return 0;
    line = jsonrpc_build_error(id, MCP_HEADER_MISMATCH, why, NULL);
    if (line) {
        mcp_http__write_answer(conn, 400, "application/json", line, strlen(line), NULL, NULL, NULL);
        free(line);
    }
    return 400;
}

/* ---- POST ---- */

/* What a POST body holds. */
struct body_kind {
    bool has_request; /* a request (or a batch with one) that will be answered */
    bool modern;
    bool initialize;
};

static void classify(const cJSON *msg, struct body_kind *k)
{
    const cJSON *m;

    memset(k, 0, sizeof(*k));
    if (cJSON_IsArray(msg)) {
        cJSON_ArrayForEach(m, msg) if (cJSON_GetObjectItemCaseSensitive(m, "method") &&
                                       cJSON_GetObjectItemCaseSensitive(m, "id")) k->has_request =
            true;
        return;
    }
    m = cJSON_GetObjectItemCaseSensitive(msg, "method");
    k->has_request = cJSON_IsString(m) && cJSON_GetObjectItemCaseSensitive(msg, "id");
    k->initialize = k->has_request && strcmp(m->valuestring, "initialize") == 0;
    {
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(msg, "params"), "_meta");

        k->modern = cJSON_IsObject(meta) && cJSON_GetObjectItemCaseSensitive(
                                                meta, "io.modelcontextprotocol/protocolVersion");
    }
    /* Anything malformed is handed to the engine, which answers what it deserves. */
    if (!cJSON_IsString(m) && !cJSON_GetObjectItemCaseSensitive(msg, "result") &&
        !cJSON_GetObjectItemCaseSensitive(msg, "error"))
        k->has_request = true;
}

static bool legacy_version_ok(const char *v)
{
    for (size_t i = 0; i < sizeof(legacy_versions) / sizeof(legacy_versions[0]); i++)
        if (header_is(v, legacy_versions[i]))
            return true;
    return false;
}

/* Feeds the parsed body (takes ownership of msg) to hs on stream st and serves the answer.
 * Returns the HTTP status. */
static int serve_post(struct mcp_http *h, struct mg_connection *conn, struct hsess *hs,
                      struct hstream *st, cJSON *msg, bool answered)
{
    mcp__session_handle_parsed(hs->ms, msg, st);
    if (!answered) {
        /* Notifications and responses: 202, unless the engine had something to say about it. */
        pthread_mutex_lock(&st->mu);
        answered = st->q.head || st->mode != ST_UNSTARTED;
        pthread_mutex_unlock(&st->mu);
        if (!answered) {
            mcp_session_cancel_origin(hs->ms, st);
            mcp_http__stream_unwatch(h, st);
            mcp_http__write_answer(conn, 202, "application/json", "", 0, NULL, NULL, st->keepalive);
            return 202;
        }
    }
    mcp_http__stream_run(h, st, false);
    mcp_session_cancel_origin(hs->ms, st);
    return 200;
}

static int on_post(struct mcp_http *h, struct mg_connection *conn)
{
    const char *sid = mg_get_header(conn, "Mcp-Session-Id");
    const char *pv = mg_get_header(conn, "MCP-Protocol-Version");
    struct hsess *hs = NULL;
    struct hstream st;
    struct body_kind k;
    struct errinfo err = {0};
    char *body = NULL;
    size_t len = 0;
    cJSON *msg;
    int status;
    bool listed = false;

    if (!accepts(mg_get_header(conn, "Accept"), "application/json") ||
        !accepts(mg_get_header(conn, "Accept"), "text/event-stream"))
        return mcp_http__http_error(
            conn, 406, MCP_INVALID_REQUEST, NULL,
            "send Accept: application/json, text/event-stream (the answer is one "
            "of the two)");
    if (!is_json_type(mg_get_header(conn, "Content-Type")))
        return mcp_http__http_error(
            conn, 415, MCP_INVALID_REQUEST, NULL,
            "POST bodies must be JSON: send Content-Type: application/json");
    status = read_body(conn, h->opt.body_max, &body, &len);
    if (status)
        return status;
    msg = jsonrpc_parse(body, len, &err);
    free(body); /* the engine gets the tree (mcp__session_handle_parsed), not the text */
    if (!msg)
        return mcp_http__http_error(
            conn, 400, err.kind == ERR_TOO_LARGE ? MCP_INVALID_REQUEST : MCP_PARSE_ERROR, NULL,
            "%s: %s", err.kind == ERR_TOO_LARGE ? "Invalid Request" : "Parse error", err.msg);
    classify(msg, &k);
    if (k.modern && check_modern_headers(conn, msg)) {
        cJSON_Delete(msg);
        return 400;
    }
    mcp_http__stream_init(&st, h, conn, k.modern);
    st.ends_at_answer = true;
    if (!k.modern && sid) {
        hs = mcp_http__session_get(h, sid);
        if (!hs) {
            cJSON_Delete(msg);
            mcp_http__stream_destroy(&st);
            return mcp_http__http_error(
                conn, 404, -32001, NULL,
                "Session not found: no MCP session %.40s (it ended or expired); "
                "send initialize again without Mcp-Session-Id",
                sid);
        }
        listed = true;
        st.sess = hs;
        if (pv && !legacy_version_ok(pv)) {
            mcp_http__session_put(h, hs);
            cJSON_Delete(msg);
            mcp_http__stream_destroy(&st);
            return mcp_http__http_error(
                conn, 400, MCP_INVALID_REQUEST, NULL,
                "unsupported MCP-Protocol-Version %.40s; this session speaks %s", pv,
                mcp_session_protocol(hs->ms) ? mcp_session_protocol(hs->ms) : "no version yet");
        }
    } else if (!k.modern && k.initialize) {
        hs = mcp_http__session_new(h, HS_STREAMABLE, 0, &err);
        if (hs && mcp_http__session_list(h, hs, &err) < 0) {
            mcp_session_close(hs->ms);
            hs = NULL;
        }
        if (!hs) {
            cJSON_Delete(msg);
            mcp_http__stream_destroy(&st);
            return mcp_http__http_error(conn, 503, MCP_INTERNAL_ERROR, NULL, "%s", err.msg);
        }
        pthread_mutex_lock(&h->mu);
        hs->busy++;
        pthread_mutex_unlock(&h->mu);
        listed = true;
        st.sess = hs;
        memcpy(st.session_header, hs->id, sizeof(st.session_header));
    } else {
        /* A modern request, or one with neither a session nor the modern _meta (whose error
         * the engine gives): a session for this POST alone. */
        hs = mcp_http__session_new(h, HS_STATELESS, MCP_SESSION_MODERN_ONLY, &err);
        if (!hs) {
            cJSON_Delete(msg);
            mcp_http__stream_destroy(&st);
            return mcp_http__http_error(conn, 503, MCP_INTERNAL_ERROR, NULL, "%s", err.msg);
        }
        st.modern = true;
    }
    status = serve_post(h, conn, hs, &st, msg, k.has_request);
    if (listed) {
        /* An initialize the engine refused leaves no session behind. */
        if (k.initialize && !mcp_session_protocol(hs->ms))
            mcp_http__session_end(h, hs);
        mcp_http__session_put(h, hs); /* hs may be gone after this */
    } else {
        mcp_session_close(hs->ms);
    }
    mcp_http__stream_destroy(&st);
    return status;
}

/* ---- GET and DELETE ---- */

static int on_get(struct mcp_http *h, struct mg_connection *conn)
{
    const char *sid = mg_get_header(conn, "Mcp-Session-Id");
    struct errinfo err = {0};
    struct hsess *hs;
    struct hstream st;
    bool busy;

    if (!sid)
        return mcp_http__http_error(
            conn, 405, MCP_INVALID_REQUEST, "Allow: POST, DELETE\r\n",
            "GET on the MCP endpoint needs the Mcp-Session-Id of a session opened "
            "with initialize; 2026-07-28 clients open a stream with "
            "subscriptions/listen instead");
    if (!accepts(mg_get_header(conn, "Accept"), "text/event-stream"))
        return mcp_http__http_error(
            conn, 406, MCP_INVALID_REQUEST, NULL,
            "the GET stream is text/event-stream: send Accept: text/event-stream");
    hs = mcp_http__session_get(h, sid);
    if (!hs)
        return mcp_http__http_error(conn, 404, -32001, NULL,
                                    "Session not found: no MCP session %.40s", sid);
    pthread_mutex_lock(&hs->mu);
    busy = hs->out != NULL;
    pthread_mutex_unlock(&hs->mu);
    if (busy) {
        int status = mcp_http__http_error(
            conn, 409, MCP_INVALID_REQUEST, NULL,
            "session %s already has its GET stream open; one at a time", hs->id);

        mcp_http__session_put(h, hs);
        return status;
    }
    if (h->opt.admit && h->opt.admit(h->opt.ctx, &err) < 0) {
        mcp_http__session_put(h, hs);
        return mcp_http__http_error(conn, 503, MCP_INTERNAL_ERROR, NULL, "%s", err.msg);
    }
    mcp_http__stream_init(&st, h, conn, false);
    st.sess = hs;
    pthread_mutex_lock(&h->mu);
    h->nstreams++;
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_lock(&hs->mu);
    hs->out = &st;
    mcp_http__give_held(hs, &st);
    pthread_mutex_unlock(&hs->mu);
    if (mcp_http__start_sse(&st) == 0)
        mcp_http__stream_run(h, &st, true);
    pthread_mutex_lock(&hs->mu);
    hs->out = NULL;
    pthread_mutex_unlock(&hs->mu);
    pthread_mutex_lock(&h->mu);
    h->nstreams--;
    pthread_mutex_unlock(&h->mu);
    if (h->opt.release)
        h->opt.release(h->opt.ctx);
    mcp_http__session_put(h, hs);
    mcp_http__stream_destroy(&st);
    return 200;
}

static int on_delete(struct mcp_http *h, struct mg_connection *conn)
{
    const char *sid = mg_get_header(conn, "Mcp-Session-Id");
    struct hsess *hs;

    if (!sid)
        return mcp_http__http_error(conn, 400, MCP_INVALID_REQUEST, NULL,
                                    "DELETE ends a session: send its Mcp-Session-Id");
    hs = mcp_http__session_get(h, sid);
    if (!hs)
        return mcp_http__http_error(conn, 404, -32001, NULL,
                                    "Session not found: no MCP session %.40s", sid);
    mcp_http__session_end(h, hs); /* its requests being served end now */
    mcp_http__session_put(h, hs); /* the last one out closes it */
    mcp_http__write_answer(conn, 200, "application/json", "{}", 2, NULL, NULL, NULL);
    return 200;
}

/* ---- the legacy HTTP+SSE transport (2024-11-05) ---- */

static int on_sse(struct mcp_http *h, struct mg_connection *conn)
{
    struct errinfo err = {0};
    struct hsess *hs;
    struct hstream st;
    char event[512];
    int n;

    if (h->opt.admit && h->opt.admit(h->opt.ctx, &err) < 0)
        return mcp_http__http_error(conn, 503, MCP_INTERNAL_ERROR, NULL, "%s", err.msg);
    hs = mcp_http__session_new(h, HS_SSE, 0, &err);
    if (hs && mcp_http__session_list(h, hs, &err) < 0) {
        mcp_session_close(hs->ms);
        hs = NULL;
    }
    if (!hs) {
        if (h->opt.release)
            h->opt.release(h->opt.ctx);
        return mcp_http__http_error(conn, 503, MCP_INTERNAL_ERROR, NULL, "%s", err.msg);
    }
    mcp_http__stream_init(&st, h, conn, false);
    pthread_mutex_lock(&h->mu);
    h->nstreams++;
    pthread_mutex_unlock(&h->mu);
    n = snprintf(event, sizeof(event), "event: endpoint\ndata: %s?sessionId=%s\n\n",
                 h->message_path, hs->id);
    pthread_mutex_lock(&hs->mu);
    hs->out = &st;
    pthread_mutex_unlock(&hs->mu);
    if (mcp_http__start_sse(&st) == 0 &&
        mcp_http__write_piece(&st, event, (size_t)n, NULL, 0, NULL, 0) == 0)
        mcp_http__stream_run(h, &st, true);
    pthread_mutex_lock(&hs->mu);
    hs->out = NULL;
    pthread_mutex_unlock(&hs->mu);
    mcp_http__session_end(h, hs); /* the stream is the session: it ends with it */
    pthread_mutex_lock(&h->mu);
    h->nstreams--;
    pthread_mutex_unlock(&h->mu);
    if (h->opt.release)
        h->opt.release(h->opt.ctx);
    mcp_http__stream_destroy(&st);
    return 200;
}

static int on_message(struct mcp_http *h, struct mg_connection *conn)
{
    char id[MCP_HTTP_ID_LEN + 8];
    struct hsess *hs;
    char *body = NULL;
    size_t len = 0;
    int status;

    if (!query_param(conn, "sessionId", id, sizeof(id)))
        return mcp_http__http_error(conn, 400, MCP_INVALID_REQUEST, NULL,
                                    "POST %s needs ?sessionId= from the endpoint event of GET %s",
                                    h->message_path, h->sse_path);
    if (!is_json_type(mg_get_header(conn, "Content-Type")))
        return mcp_http__http_error(
            conn, 415, MCP_INVALID_REQUEST, NULL,
            "POST bodies must be JSON: send Content-Type: application/json");
    hs = mcp_http__sse_session_get(h, id);
    if (!hs)
        return mcp_http__http_error(
            conn, 404, -32001, NULL,
            "no SSE session %.40s: its GET %s stream is closed; open a new one", id, h->sse_path);
    status = read_body(conn, h->opt.body_max, &body, &len);
    if (status == 0) {
        mcp_session_handle(hs->ms, body, len, NULL); /* answers go to the session's stream */
        mcp_http__write_answer(conn, 202, "text/plain", "Accepted", 8, NULL, NULL, NULL);
        status = 202;
    }
    free(body);
    mcp_http__session_put(h, hs);
    return status;
}

/* ---- the transport ---- */

static char *dup_path(const char *p, bool *failed)
{
    char *d = p ? strdup(p) : NULL;

    if (p && !d)
        *failed = true;
    return d;
}

struct mcp_http *mcp_http_new(const struct mcp_http_options *opt, struct errinfo *err)
{
    struct mcp_http *h = calloc(1, sizeof(*h));
    bool failed = false;

    if (!h || !opt->server) {
        free(h);
        errinfo_set(err, opt->server ? ERR_NOMEM : ERR_INVALID,
                    opt->server ? "out of memory for the MCP HTTP transport"
                                : "mcp_http_new needs a server");
        return NULL;
    }
    h->opt = *opt;
    h->mcp_path = dup_path(opt->mcp_path, &failed);
    h->sse_path = dup_path(opt->sse_path, &failed);
    h->message_path = dup_path(
        opt->message_path ? opt->message_path : (opt->sse_path ? "/message" : NULL), &failed);
    h->ws_path = dup_path(opt->ws_path, &failed);
    h->limit_name =
        dup_path(opt->session_max_name ? opt->session_max_name : "session_max", &failed);
    if (failed) {
        mcp_http_free(h);
        errinfo_set(err, ERR_NOMEM, "out of memory for the MCP HTTP transport");
        return NULL;
    }
    h->opt.mcp_path = h->mcp_path;
    h->opt.sse_path = h->sse_path;
    h->opt.message_path = h->message_path;
    h->opt.ws_path = h->ws_path;
    if (!h->opt.body_max)
        h->opt.body_max = BODY_MAX_DEFAULT;
    if (h->opt.session_max <= 0)
        h->opt.session_max = SESSION_MAX_DEFAULT;
    if (h->opt.session_idle_ms <= 0)
        h->opt.session_idle_ms = IDLE_MS_DEFAULT;
    if (!h->opt.stream_queue_max)
        h->opt.stream_queue_max = QUEUE_MAX_DEFAULT;
    if (h->opt.keepalive_ms <= 0)
        h->opt.keepalive_ms = KEEPALIVE_MS_DEFAULT;
    pthread_mutex_init(&h->mu, NULL);
    return h;
}

void mcp_http_shutdown(struct mcp_http *h)
{
    pthread_mutex_lock(&h->mu);
    atomic_store(&h->closing, true);
    for (struct hstream *st = h->open; st; st = st->next_open) {
        pthread_mutex_lock(&st->mu);
        pthread_cond_broadcast(&st->cond);
        pthread_mutex_unlock(&st->mu);
    }
    pthread_mutex_unlock(&h->mu);
}

void mcp_http_free(struct mcp_http *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->closing = true;
    while (h->sessions) {
        struct hsess *hs = h->sessions;

        h->sessions = hs->next;
        hs->listed = false;
        pthread_mutex_unlock(&h->mu);
        mcp_session_close(hs->ms);
        pthread_mutex_lock(&h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_destroy(&h->mu);
    free(h->mcp_path);
    free(h->sse_path);
    free(h->message_path);
    free(h->ws_path);
    free(h->limit_name);
    free(h->ws_ctx);
    free(h);
}

bool mcp_http_is_path(const struct mcp_http *h, const char *path)
{
    return (h->mcp_path && strcmp(path, h->mcp_path) == 0) ||
           (h->sse_path && strcmp(path, h->sse_path) == 0) ||
           (h->message_path && h->sse_path && strcmp(path, h->message_path) == 0);
}

int mcp_http_handle(struct mcp_http *h, struct mg_connection *conn)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    const char *path = ri->local_uri_raw ? ri->local_uri_raw : "";
    const char *m = ri->request_method;

    if (h->mcp_path && strcmp(path, h->mcp_path) == 0) {
        if (strcmp(m, "POST") == 0)
            return on_post(h, conn);
        if (strcmp(m, "GET") == 0)
            return on_get(h, conn);
        if (strcmp(m, "DELETE") == 0)
            return on_delete(h, conn);
        return mcp_http__http_error(conn, 405, MCP_INVALID_REQUEST, "Allow: POST, GET, DELETE\r\n",
                                    "%.16s %s is not allowed: use POST, GET or DELETE", m, path);
    }
    if (h->sse_path && strcmp(path, h->sse_path) == 0) {
        if (strcmp(m, "GET") == 0)
            return on_sse(h, conn);
        return mcp_http__http_error(
            conn, 405, MCP_INVALID_REQUEST, "Allow: GET\r\n",
            "%.16s %s is not allowed: GET opens the legacy SSE stream; messages go "
            "to POST %s?sessionId=",
            m, path, h->message_path);
    }
    if (h->message_path && strcmp(path, h->message_path) == 0) {
        if (strcmp(m, "POST") == 0)
            return on_message(h, conn);
        return mcp_http__http_error(conn, 405, MCP_INVALID_REQUEST, "Allow: POST\r\n",
                                    "%.16s %s is not allowed: use POST", m, path);
    }
    return mcp_http__http_error(conn, 404, MCP_INVALID_REQUEST, NULL, "no MCP endpoint at %.200s",
                                path);
}

cJSON *mcp_http_status_json(struct mcp_http *h)
{
    cJSON *o = cJSON_CreateObject();

    pthread_mutex_lock(&h->mu);
    if (o && (!cJSON_AddNumberToObject(o, "sessions", h->nsessions - h->nws) ||
              !cJSON_AddNumberToObject(o, "streams", h->nstreams) ||
              !cJSON_AddNumberToObject(o, "websockets", h->nws) ||
              !cJSON_AddNumberToObject(o, "max", h->opt.session_max))) {
        cJSON_Delete(o);
        o = NULL;
    }
    pthread_mutex_unlock(&h->mu);
    return o;
}
