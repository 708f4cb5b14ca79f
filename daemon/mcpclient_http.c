/* daemon/mcpclient_http.c - the HTTP transports of the MCP client (see mcpclient_int.h), on
 * libcurl's multi interface in the client's thread:
 *
 * - Streamable HTTP (2025-03-26 on): every message is a POST to the URL; the answer is one
 *   JSON message, an SSE stream of messages, or 202. After initialize the session id
 *   (Mcp-Session-Id) and MCP-Protocol-Version go with every request, and a GET stream carries
 *   what the server sends unasked (list changes); a server without one answers 405. A request
 *   of the 2026-07-28 revision also carries Mcp-Method and Mcp-Name.
 * - legacy HTTP+SSE (2024-11-05): a GET stream whose first event, "endpoint", names the URL to
 *   POST messages to; every answer comes on the stream.
 *
 * "type": "http" starts with Streamable HTTP and falls back to legacy SSE when the server
 * answers the initialize POST with 404 or 405, as the SDK clients do; the fallback is
 * remembered for reconnections. A POST that fails (HTTP 4xx/5xx, an HTML page, a refused
 * connection) fails the request it carried with what happened; one whose connection could not
 * be made at all ends the connection, so the server is connected afresh after the back-off.
 * Only the headers the config names are sent to the server. Messages name the URL as the
 * config file writes it (spec->shown.url) and go through registry_redact(), since libcurl's
 * words may echo a host or path that came from ${env:VAR}. */
#include "mcpclient_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "clocks.h"
#include "dynlib.h"
#include "jsonrpc.h"
#include "log.h"
#include "registry.h"
#include "strfmt.h"

#define ERROR_BODY_KEEP 300  /* bytes of an error answer quoted */
#define GET_RETRY_MS    2000 /* a dropped GET stream is opened again after this */
#define DELETE_WAIT_MS  1000

/* libcurl's entry points: valid once run() has loaded it. */
static const struct dynlib_curl *const cu = &dynlib_curl;

enum xkind { X_POST, X_GET, X_SSE, X_DELETE };

/* An SSE parser: lines into events, each event's data handed on. */
struct sse {
    char *line;
    size_t len, cap;
    char *data;
    size_t dlen, dcap;
    bool over;      /* the event is over the message limit: only counted */
    bool line_over; /* the line being read is: its bytes are counted as they come */
    size_t over_bytes;
    struct mcpclient_edges edges; /* of an event over the limit, for its id */
    char event[32];
};

struct xfer {
    struct xfer *next;
    enum xkind kind;
    CURL *h;
    struct curl_slist *hdrs;
    char *body; /* the POST's message (owned) */
    bool has_id;
    double id;
    char method[64];
    long status;
    char ctype[128];
    char *resp; /* a JSON answer, or the start of an error answer */
    size_t rlen, rcap;
    bool too_big;                 /* the answer is over the message limit: only counted */
    size_t rtotal;                /* bytes of the answer received */
    struct mcpclient_edges edges; /* of an answer over the limit, for its id */
    struct sse sse;
    bool sse_mode;
    char errbuf[CURL_ERROR_SIZE];
};

struct conn {
    struct mcpclient *c;
    const struct registry_spec *spec;
    CURLM *multi;
    struct xfer *xfers;
    char session[256]; /* Mcp-Session-Id */
    bool legacy_sse;
    char *post_url; /* owned: legacy SSE's endpoint */
    bool sse_open;  /* legacy: the stream is up and gave its endpoint */
    bool get_open, get_refused;
    long get_retry_at;
    bool opened;
    bool fallback; /* switch to legacy SSE now */
    struct errinfo *why;
    bool ended;
};

static void end_conn(struct conn *k, enum errinfo_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void end_conn(struct conn *k, enum errinfo_kind kind, const char *fmt, ...)
{
    char msg[ERRINFO_MSG_MAX];
    va_list ap;

    if (k->ended)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    registry_redact(k->spec, msg, sizeof(msg));
    errinfo_set(k->why, kind, "%s", msg);
    k->ended = true;
}

/* ---- SSE ---- */

static void sse_dispatch(struct conn *k, struct xfer *x)
{
    struct sse *s = &x->sse;

    if (s->over) {
        mcpclient__oversized(k->c, s->over_bytes, s->edges.head, s->edges.head_len, s->edges.tail,
                             s->edges.tail_len);
    } else if (strcmp(s->event, "endpoint") == 0 && x->kind == X_SSE) {
        CURLU *u = cu->url();
        char *full = NULL;

        if (u && s->data && cu->url_set(u, CURLUPART_URL, k->spec->url, 0) == CURLUE_OK &&
            cu->url_set(u, CURLUPART_URL, s->data, 0) == CURLUE_OK &&
            cu->url_get(u, CURLUPART_URL, &full, 0) == CURLUE_OK) {
            free(k->post_url);
            k->post_url = strdup(full);
            k->sse_open = true;
        }
        cu->free(full);
        cu->url_cleanup(u);
    } else if ((!s->event[0] || strcmp(s->event, "message") == 0) && s->dlen) {
        mcpclient__receive(k->c, s->data, s->dlen);
    }
    s->dlen = 0;
    s->over = false;
    s->over_bytes = 0;
    s->edges.head_len = s->edges.tail_len = 0;
    s->event[0] = '\0';
}

/* n more bytes of the event (p) are over the limit: counted, and its edges kept. At the first,
 * the data kept so far goes first. */
static void sse_overflow(struct sse *s, const char *p, size_t n)
{
    if (!s->over) {
        s->over = true;
        s->over_bytes = s->dlen;
        mcpclient__edges_add(&s->edges, s->data ? s->data : "", s->dlen);
    }
    s->over_bytes += n;
    mcpclient__edges_add(&s->edges, p, n);
}

static int grow(char **buf, size_t *cap, size_t need)
{
    size_t n = *cap ? *cap : 1024;
    char *p;

    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    p = realloc(*buf, n);
    if (!p)
        return -1;
    *buf = p;
    *cap = n;
    return 0;
}

static void sse_line(struct conn *k, struct xfer *x, char *line, size_t len)
{
    struct sse *s = &x->sse;
    const char *v;
    size_t vl;

    if (s->line_over) { /* counted as it came (sse_feed) */
        s->line_over = false;
        return;
    }
    if (len && line[len - 1] == '\r')
        len--;
    if (len == 0) {
        sse_dispatch(k, x);
        return;
    }
    if (line[0] == ':')
        return;
    v = memchr(line, ':', len);
    vl = v ? len - (size_t)(v - line) - 1 : 0;
    if (v) {
        v++;
        if (vl && *v == ' ')
            v++, vl--;
    }
    if (v && (size_t)(v - line) >= 6 && strncmp(line, "event:", 6) == 0) {
        snprintf(s->event, sizeof(s->event), "%.*s", (int)vl, v);
    } else if (v && strncmp(line, "data:", 5) == 0) {
        size_t need = s->dlen + vl + 2;

        if (s->over || need > MCPCLIENT_MESSAGE_MAX) {
            sse_overflow(s, v, vl);
            return;
        }
        if (grow(&s->data, &s->dcap, need) < 0)
            return;
        if (s->dlen)
            s->data[s->dlen++] = '\n';
        memcpy(s->data + s->dlen, v, vl);
        s->dlen += vl;
        s->data[s->dlen] = '\0';
    }
}

/* Appends p[0..n) (no newline) to the line being read. A line may be 1 MiB long, a data line
 * MCPCLIENT_MESSAGE_MAX; past that the line is only counted, and its event dropped. */
static void sse_add(struct sse *s, const char *p, size_t n)
{
    size_t limit, room;

    if (s->line_over) {
        sse_overflow(s, p, n);
        return;
    }
    /* The first 5 bytes say whether it is a data line, whose limit is a message's. */
    if (s->len < 5) {
        size_t first = 5 - s->len < n ? 5 - s->len : n;

        if (grow(&s->line, &s->cap, s->len + first + 1) < 0)
            return;
        memcpy(s->line + s->len, p, first);
        s->len += first;
        p += first;
        n -= first;
        if (n == 0)
            return;
    }
    limit = strncmp(s->line, "data:", 5) == 0 ? MCPCLIENT_MESSAGE_MAX : (size_t)1 << 20;
    room = s->len < limit ? limit - s->len : 0;
    if (room > n)
        room = n;
    if (room) {
        if (grow(&s->line, &s->cap, s->len + room + 1) < 0)
            return;
        memcpy(s->line + s->len, p, room);
        s->len += room;
    }
    if (room < n) {
        s->line_over = true;
        sse_overflow(s, s->line, s->len);
        sse_overflow(s, p + room, n - room);
    }
}

static void sse_feed(struct conn *k, struct xfer *x, const char *p, size_t n)
{
    struct sse *s = &x->sse;

    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t seg = nl ? (size_t)(nl - p) : n;

        sse_add(s, p, seg);
        if (nl) {
            sse_line(k, x, s->line, s->len);
            s->len = 0;
            seg++;
        }
        p += seg;
        n -= seg;
    }
}

/* ---- transfers ---- */

static struct conn *conn_of(CURL *h)
{
    struct conn *k = NULL;

    cu->easy_getinfo(h, CURLINFO_PRIVATE, (char **)&k);
    return k;
}

static struct xfer *xfer_of(struct conn *k, CURL *h)
{
    for (struct xfer *x = k->xfers; x; x = x->next)
        if (x->h == h)
            return x;
    return NULL;
}

static size_t on_header(char *buf, size_t size, size_t n, void *arg)
{
    struct xfer *x = arg;
    size_t len = size * n;
    struct conn *k = conn_of(x->h);

    if (len > 5 && strncmp(buf, "HTTP/", 5) == 0) {
        x->status = strtol(memchr(buf, ' ', len) ? (char *)memchr(buf, ' ', len) : buf, NULL, 10);
        x->ctype[0] = '\0';
    } else if (len > 13 && strncasecmp(buf, "content-type:", 13) == 0) {
        snprintf(x->ctype, sizeof(x->ctype), "%.*s", (int)(len - 13), buf + 13);
    } else if (len > 15 && strncasecmp(buf, "mcp-session-id:", 15) == 0 && k) {
        const char *v = buf + 15;
        size_t vl = len - 15;

        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        if (vl && vl < sizeof(k->session))
            snprintf(k->session, sizeof(k->session), "%.*s", (int)vl, v);
    }
    return len;
}

static size_t on_body(char *buf, size_t size, size_t n, void *arg)
{
    struct xfer *x = arg;
    size_t len = size * n;
    struct conn *k = conn_of(x->h);

    if (!x->sse_mode && x->rlen == 0 && x->status >= 200 && x->status < 300 &&
        strstr(x->ctype, "text/event-stream"))
        x->sse_mode = true;
    if (x->sse_mode) {
        sse_feed(k, x, buf, len);
        return len;
    }
    x->rtotal += len;
    if (x->too_big || x->rlen + len > MCPCLIENT_MESSAGE_MAX) {
        if (!x->too_big) { /* what came so far is the answer's head */
            x->too_big = true;
            mcpclient__edges_add(&x->edges, x->resp ? x->resp : "", x->rlen);
        }
        mcpclient__edges_add(&x->edges, buf, len);
        return len;
    }
    if (grow(&x->resp, &x->rcap, x->rlen + len + 1) < 0)
        return 0;
    memcpy(x->resp + x->rlen, buf, len);
    x->rlen += len;
    x->resp[x->rlen] = '\0';
    return len;
}

static void xfer_free(struct xfer *x)
{
    if (x->h)
        cu->easy_cleanup(x->h);
    cu->slist_free_all(x->hdrs);
    free(x->body);
    free(x->resp);
    free(x->sse.line);
    free(x->sse.data);
    free(x);
}

static void add_header(struct xfer *x, const char *name, const char *value)
{
    char *line = strfmt_alloc("%s: %s", name, value);
    struct curl_slist *l = line ? cu->slist_append(x->hdrs, line) : NULL;

    if (l)
        x->hdrs = l;
    free(line);
}

/* Mcp-Name carries a name or URI; one that is not plain printable ASCII is left out. */
static bool header_safe(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return false;
    return true;
}

static struct xfer *start(struct conn *k, enum xkind kind, const char *url, char *body)
{
    struct xfer *x = calloc(1, sizeof(*x));
    const struct registry_spec *s = k->spec;

    if (!x || !(x->h = cu->easy_init())) {
        free(x);
        free(body);
        return NULL;
    }
    x->kind = kind;
    x->body = body;
    for (size_t i = 0; i < s->headers.n; i++) {
        struct curl_slist *l = cu->slist_append(x->hdrs, s->headers.v[i]);

        if (l)
            x->hdrs = l;
    }
    if (kind == X_POST) {
        cJSON *msg = cJSON_Parse(body);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
        const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
        const cJSON *ver =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(params, "_meta"),
                                             "io.modelcontextprotocol/protocolVersion");

        x->has_id = cJSON_IsNumber(id) && cJSON_IsString(method);
        x->id = x->has_id ? id->valuedouble : 0;
        snprintf(x->method, sizeof(x->method), "%s",
                 cJSON_IsString(method) ? method->valuestring : "a message");
        add_header(x, "Content-Type", "application/json");
        add_header(x, "Accept", "application/json, text/event-stream");
        if (cJSON_IsString(ver)) {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(params, "name");
            const cJSON *u = cJSON_GetObjectItemCaseSensitive(params, "uri");

            add_header(x, "MCP-Protocol-Version", ver->valuestring);
            add_header(x, "Mcp-Method", x->method);
            if (cJSON_IsString(n) && header_safe(n->valuestring))
                add_header(x, "Mcp-Name", n->valuestring);
            else if (cJSON_IsString(u) && header_safe(u->valuestring))
                add_header(x, "Mcp-Name", u->valuestring);
        } else if (mcpclient__protocol(k->c) && !k->legacy_sse) {
            add_header(x, "MCP-Protocol-Version", mcpclient__protocol(k->c));
        }
        cJSON_Delete(msg);
        cu->easy_setopt(x->h, CURLOPT_POSTFIELDS, x->body);
        cu->easy_setopt(x->h, CURLOPT_POSTFIELDSIZE, (long)strlen(x->body));
    } else if (kind == X_DELETE) {
        cu->easy_setopt(x->h, CURLOPT_CUSTOMREQUEST, "DELETE");
        cu->easy_setopt(x->h, CURLOPT_TIMEOUT_MS, (long)DELETE_WAIT_MS);
    } else {
        add_header(x, "Accept", "text/event-stream");
        if (mcpclient__protocol(k->c) && kind == X_GET)
            add_header(x, "MCP-Protocol-Version", mcpclient__protocol(k->c));
    }
    if (k->session[0] && !k->legacy_sse)
        add_header(x, "Mcp-Session-Id", k->session);
    cu->easy_setopt(x->h, CURLOPT_URL, url);
    cu->easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
    cu->easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
    cu->easy_setopt(x->h, CURLOPT_HEADERDATA, x);
    cu->easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
    cu->easy_setopt(x->h, CURLOPT_WRITEDATA, x);
    cu->easy_setopt(x->h, CURLOPT_PRIVATE, (char *)k);
    cu->easy_setopt(x->h, CURLOPT_ERRORBUFFER, x->errbuf);
    cu->easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L);
    cu->easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT_MS, (long)s->timeout_ms);
    cu->easy_setopt(x->h, CURLOPT_USERAGENT, "runbox/" RUNBOX_VERSION);
    /* Redirects would carry the configured headers (tokens) to another host: none. */
    cu->easy_setopt(x->h, CURLOPT_FOLLOWLOCATION, 0L);
    cu->easy_setopt(x->h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (cu->multi_add_handle(k->multi, x->h) != CURLM_OK) {
        xfer_free(x);
        return NULL;
    }
    x->next = k->xfers;
    k->xfers = x;
    return x;
}

static void unlink_xfer(struct conn *k, struct xfer *x)
{
    for (struct xfer **pp = &k->xfers; *pp; pp = &(*pp)->next)
        if (*pp == x) {
            *pp = x->next;
            return;
        }
}

/* Fails the request a POST carried: its waiting call fails with what happened; an internal
 * request gets an error answer with its id, as if the server sent it. */
static void fail_request(struct conn *k, struct xfer *x, const char *what)
{
    cJSON *msg, *e;
    char *text, shown[1024];

    if (!x->has_id || mcpclient__fail_waiter(k->c, (uint64_t)x->id, ERR_UNAVAILABLE, what))
        return;
    snprintf(shown, sizeof(shown), "%s", what);
    registry_redact(k->spec, shown, sizeof(shown));
    msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
    cJSON_AddNumberToObject(msg, "id", x->id);
    e = cJSON_AddObjectToObject(msg, "error");
    cJSON_AddNumberToObject(e, "code", -32000);
    cJSON_AddStringToObject(e, "message", shown);
    text = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    if (text)
        mcpclient__receive(k->c, text, strlen(text));
    free(text);
}

/* The start of an error answer's body, as one line. */
static void body_excerpt(const struct xfer *x, char *buf, size_t size)
{
    size_t n = 0;

    for (size_t i = 0; x->resp && i < x->rlen && n + 1 < size && n < ERROR_BODY_KEEP; i++)
        buf[n++] = x->resp[i] == '\n' || x->resp[i] == '\r' ? ' ' : x->resp[i];
    buf[n] = '\0';
}

static void post_done(struct conn *k, struct xfer *x, CURLcode rc)
{
    char what[700], ex[ERROR_BODY_KEEP + 1];
    bool html = strstr(x->ctype, "text/html") != NULL;

    if (rc != CURLE_OK) {
        /* Whether the server may have the request: it had, unless the connection or the
         * sending failed (a server killed mid-call had it). */
        bool unsent = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
                      rc == CURLE_COULDNT_RESOLVE_PROXY || rc == CURLE_SEND_ERROR;

        snprintf(what, sizeof(what),
                 unsent ? "%s could not be sent to %s: %s"
                        : "%s was sent to %s, but no answer came back: %s",
                 x->method, k->spec->shown.url, x->errbuf[0] ? x->errbuf : cu->easy_strerror(rc));
        fail_request(k, x, what);
        if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
            rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR ||
            rc == CURLE_GOT_NOTHING)
            end_conn(k, ERR_UNAVAILABLE, "%s", what);
        return;
    }
    if (x->too_big) {
        mcpclient__oversized(k->c, x->rtotal, x->edges.head, x->edges.head_len, x->edges.tail,
                             x->edges.tail_len);
        return;
    }
    if ((x->status == 404 || x->status == 405) && strcmp(x->method, "initialize") == 0 &&
        k->spec->transport == REGISTRY_HTTP && !k->legacy_sse) {
        log_info("mcp %s: %s answered initialize with HTTP %ld: trying the legacy SSE transport",
                 k->spec->name, k->spec->shown.url, x->status);
        k->fallback = true;
        return;
    }
    if (x->status == 404 && k->session[0] && strcmp(x->method, "initialize") != 0) {
        end_conn(k, ERR_UNAVAILABLE, "the server forgot the session (HTTP 404); connecting anew");
        return;
    }
    body_excerpt(x, ex, sizeof(ex));
    if (x->status >= 300 || html) {
        if (html)
            snprintf(what, sizeof(what),
                     "%s answered %s with an HTML page (HTTP %ld), not MCP: is the URL the "
                     "server's MCP endpoint?",
                     k->spec->shown.url, x->method, x->status);
        else
            snprintf(what, sizeof(what), "%s answered %s with HTTP %ld: %s", k->spec->shown.url,
                     x->method, x->status, ex[0] ? ex : "(no body)");
        /* A JSON-RPC error with the request's id is the server's own answer. */
        if (x->resp && strstr(x->ctype, "json") && strstr(x->resp, "\"error\"")) {
            cJSON *m = cJSON_Parse(x->resp);

            if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(m, "id"))) {
                cJSON_Delete(m);
                mcpclient__receive(k->c, x->resp, x->rlen);
                return;
            }
            cJSON_Delete(m);
        }
        fail_request(k, x, what);
        return;
    }
    if (!x->sse_mode && x->rlen && x->status != 202)
        mcpclient__receive(k->c, x->resp, x->rlen);
    else if (x->sse_mode && x->sse.dlen)
        sse_dispatch(k, x);
}

static void get_done(struct conn *k, struct xfer *x, CURLcode rc)
{
    if (x->kind == X_SSE) {
        char ex[ERROR_BODY_KEEP + 1];

        body_excerpt(x, ex, sizeof(ex));
        if (rc != CURLE_OK)
            end_conn(k, ERR_UNAVAILABLE, "the SSE stream of %s: %s", k->spec->shown.url,
                     x->errbuf[0] ? x->errbuf : cu->easy_strerror(rc));
        else if (strstr(x->ctype, "text/html"))
            end_conn(k, ERR_UNAVAILABLE,
                     "%s answered with an HTML page (HTTP %ld), not an MCP SSE stream: is the "
                     "URL the server's SSE endpoint?",
                     k->spec->shown.url, x->status);
        else if (x->status >= 300)
            end_conn(k, ERR_UNAVAILABLE, "%s answered the SSE stream with HTTP %ld: %s",
                     k->spec->shown.url, x->status, ex[0] ? ex : "(no body)");
        else
            end_conn(k, ERR_UNAVAILABLE, "the server closed its SSE stream");
        return;
    }
    k->get_open = false;
    if (x->status == 405 || x->status == 404 || x->status == 400) {
        k->get_refused = true; /* no stream for unasked messages: fine */
        return;
    }
    k->get_retry_at = clocks_mono_ms() + GET_RETRY_MS;
}

static void reap(struct conn *k)
{
    CURLMsg *m;
    int left;

    while ((m = cu->multi_info_read(k->multi, &left)) != NULL) {
        struct xfer *x;

        if (m->msg != CURLMSG_DONE)
            continue;
        x = xfer_of(k, m->easy_handle);
        if (!x)
            continue;
        cu->easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->status);
        cu->multi_remove_handle(k->multi, x->h);
        unlink_xfer(k, x);
        if (x->kind == X_POST)
            post_done(k, x, m->data.result);
        else if (x->kind != X_DELETE)
            get_done(k, x, m->data.result);
        xfer_free(x);
    }
}

static void drop_all(struct conn *k)
{
    while (k->xfers) {
        struct xfer *x = k->xfers;

        k->xfers = x->next;
        cu->multi_remove_handle(k->multi, x->h);
        xfer_free(x);
    }
}

/* Sends what waits: Streamable HTTP at once, legacy SSE once the endpoint is known. */
static void send_queued(struct conn *k)
{
    const char *url = k->legacy_sse ? k->post_url : k->spec->url;
    size_t len;
    char *msg;

    if (!url)
        return;
    while ((msg = mcpclient__next_out(k->c, &len)) != NULL)
        start(k, X_POST, url, msg);
}

static void loop(struct conn *k)
{
    while (!k->ended && !k->fallback) {
        struct curl_waitfd w = {.fd = mcpclient__wake_fd(k->c), .events = CURL_WAIT_POLLIN};
        int running;

        if (mcpclient__should_end(k->c, k->why)) {
            k->ended = true;
            break;
        }
        if (k->legacy_sse && k->sse_open && !k->opened) {
            k->opened = true;
            mcpclient__opened(k->c);
        }
        send_queued(k);
        if (!k->legacy_sse && k->session[0] && !k->get_open && !k->get_refused &&
            mcpclient__protocol(k->c) && clocks_mono_ms() >= k->get_retry_at) {
            k->get_open = start(k, X_GET, k->spec->url, NULL) != NULL;
        }
        cu->multi_perform(k->multi, &running);
        reap(k);
        if (k->ended || k->fallback)
            break;
        cu->multi_poll(k->multi, &w, 1, mcpclient__poll_ms(k->c), NULL);
        if (w.revents & CURL_WAIT_POLLIN)
            mcpclient__drain_wake(k->c);
    }
}

static void run(struct mcpclient *c, struct errinfo *why)
{
    struct conn k = {.c = c, .spec = mcpclient__spec(c), .why = why};

    /* The first server over HTTP loads libcurl (common/dynlib.h); one that cannot stays down
     * with the reason, retried after the back-off like any other failure to connect. */
    if (dynlib_load_curl(why) < 0)
        return;
    k.multi = cu->multi_init();
    if (!k.multi) {
        errinfo_set(why, ERR_NOMEM, "no libcurl handle");
        return;
    }
    k.legacy_sse = k.spec->transport == REGISTRY_SSE || mcpclient__hint(c) == MCPCLIENT_HINT_SSE;
    for (;;) {
        if (k.legacy_sse) {
            start(&k, X_SSE, k.spec->url, NULL);
        } else {
            k.opened = true;
            mcpclient__opened(c);
        }
        loop(&k);
        if (!k.fallback)
            break;
        /* Legacy SSE on the same URL, from a fresh handshake. */
        drop_all(&k);
        mcpclient__reset(c);
        mcpclient__set_hint(c, MCPCLIENT_HINT_SSE);
        k.fallback = false;
        k.legacy_sse = true;
        k.opened = false;
        k.session[0] = '\0';
    }
    drop_all(&k);
    if (k.session[0] && !k.legacy_sse) {
        /* Tell the server the session is over (best effort, bounded). */
        int running = 1;
        long until = clocks_mono_ms() + DELETE_WAIT_MS;

        start(&k, X_DELETE, k.spec->url, NULL);
        while (running && clocks_mono_ms() < until) {
            cu->multi_perform(k.multi, &running);
            if (running)
                cu->multi_poll(k.multi, NULL, 0, 100, NULL);
        }
        drop_all(&k);
    }
    free(k.post_url);
    cu->multi_cleanup(k.multi);
}

const struct mcpclient_transport mcpclient__http = {.name = "http", .run = run};
