/* daemon/api_events.c - GET /events (see api_events.h).
 *
 * DESIGN
 * Each stream is a queue of ready-to-write SSE texts filled by its event-feed listener (on the
 * feed's dispatcher thread) and drained by the civetweb worker that serves the request, which
 * is the only thread that writes to the connection. The listener never blocks: past
 * API_EVENTS_QUEUE_MAX queued bytes it only counts, and the worker writes one `dropped` event
 * when it gets to it.
 *
 * Replay without gaps or repeats: the listener is registered first, then the console ring is
 * read from since_id on; live console events whose id the replay already sent are skipped when
 * the queue is drained. */
#include "api_events.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <civetweb.h>

#include "api.h"
#include "call.h"
#include "clocks.h"
#include "connwatch.h"
#include "console.h"
#include "events.h"
#include "http_conn.h"
#include "jsonbuf.h"
#include "utf8.h"
#include "log.h"
#include "tools.h"
#include "watch.h"

#define URI_MAX     (3 * 4096 + 64)
#define REPLAY_PAGE 1000

struct item {
    struct item *next;
    uint64_t console_id; /* 0 for events that are not console entries */
    size_t len;
    char text[]; /* the whole SSE event */
};

struct stream {
    struct api_events *ae;
    struct stream *next; /* in ae->streams */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct item *head, *tail;
    size_t bytes;
    uint64_t dropped;
    bool gone; /* the reader closed the connection */

    /* filters, fixed before the listener is registered */
    int min_rank; /* console entries of this rank or more; -1: none */
    int source;   /* enum console_source, or -1 for all */
    char *uris[API_EVENTS_URIS_MAX];
    size_t nuris;
};

struct api_events {
    const struct tools_ctx *tools;
    struct call_service *calls;
    struct connwatch *watch;
    struct watch *resources;
    pthread_mutex_t mu; /* guards streams */
    struct stream *streams;
    atomic_bool stopping;
};

/* ---- SSE writing ---- */

bool api_sse_can_end(struct mg_connection *conn)
{
    return http_conn_is_http11(conn) || !http_conn_keeps_alive(conn);
}

int api_sse_begin(struct api_sse *sse, struct mg_connection *conn)
{
    static const char head[] = "HTTP/1.1 200 OK\r\n"
                               "Content-Type: text/event-stream\r\n"
                               "Cache-Control: no-store\r\n"
                               "X-Content-Type-Options: nosniff\r\n";
    char out[sizeof(head) + 64];
    int n;

    sse->conn = conn;
    sse->chunked = http_conn_is_http11(conn);
    /* Unchunked, the close is the stream's end: civetweb must not keep the connection even for
     * an HTTP/1.0 client that asked it to (GET /events). A chunked stream is followed by the
     * client's next request, unless civetweb closes the connection anyway (http_conn.h). */
    if (!sse->chunked)
        mg_disable_connection_keep_alive(conn);
    n = snprintf(out, sizeof(out), "%s%s%s\r\n", head,
                 sse->chunked ? "Transfer-Encoding: chunked\r\n" : "",
                 sse->chunked ? api_conn_line(conn) : "Connection: close\r\n");
    return mg_write(conn, out, (size_t)n) == n ? 0 : -1;
}

/* Appends one event's text to b. */
static int put_event(struct jsonbuf *b, const char *event, const char *id, const char *data,
                     size_t len)
{
    int rc = 0;

    rc |= jsonbuf_puts(b, "event: ", NULL);
    rc |= jsonbuf_puts(b, event, NULL);
    if (id) {
        rc |= jsonbuf_puts(b, "\nid: ", NULL);
        rc |= jsonbuf_puts(b, id, NULL);
    }
    /* Compact JSON has no raw newline; any other text is split into data: lines. */
    for (size_t i = 0, start = 0; i <= len; i++)
        if (i == len || data[i] == '\n') {
            rc |= jsonbuf_puts(b, "\ndata: ", NULL);
            rc |= jsonbuf_put(b, data + start, i - start, NULL);
            start = i + 1;
        }
    rc |= jsonbuf_puts(b, "\n\n", NULL);
    return rc ? -1 : 0;
}

int api_sse_write(struct api_sse *sse, const char *text, size_t len)
{
    char *valid = NULL, *framed;
    size_t vlen = 0;
    int n, rc;

    if (len == 0)
        return 0; /* an empty chunk would end the body */
    if (utf8_make_valid(text, len, &valid, &vlen) < 0)
        return -1;
    if (valid) {
        text = valid;
        len = vlen;
    }
    if (!sse->chunked) {
        rc = mg_write(sse->conn, text, len) == (int)len ? 0 : -1;
        free(valid);
        return rc;
    }
    /* One chunk in one write: its size line, the text, CRLF. */
    framed = malloc(len + 24);
    if (!framed) {
        free(valid);
        return -1;
    }
    n = snprintf(framed, 24, "%zx\r\n", len);
    memcpy(framed + n, text, len);
    memcpy(framed + n + len, "\r\n", 2);
    rc = mg_write(sse->conn, framed, (size_t)n + len + 2) == (int)((size_t)n + len + 2) ? 0 : -1;
    free(framed);
    free(valid);
    return rc;
}

int api_sse_event(struct api_sse *sse, const char *event, const char *id, const char *data,
                  size_t len)
{
    struct jsonbuf b = JSONBUF_INIT(len * 2 + 256);
    int rc = put_event(&b, event, id, data, len);

    if (rc == 0)
        rc = api_sse_write(sse, b.data, b.len);
    jsonbuf_cleanup(&b);
    return rc;
}

void api_sse_end(struct api_sse *sse)
{
    if (sse->chunked)
        mg_write(sse->conn, "0\r\n\r\n", 5);
}

/* ---- filters ---- */

/* debug < log = info < warn < error. */
static int level_rank(int level)
{
    switch (level) {
    case CONSOLE_DEBUG:
        return 0;
    case CONSOLE_WARN:
        return 2;
    case CONSOLE_ERROR:
        return 3;
    default:
        return 1;
    }
}

static bool wants_console(const struct stream *s, int level, int source)
{
    return s->min_rank >= 0 && level_rank(level) >= s->min_rank &&
           (s->source < 0 || s->source == source);
}

static bool wants_uri(const struct stream *s, const char *uri)
{
    for (size_t i = 0; i < s->nuris; i++)
        if (strcmp(s->uris[i], uri) == 0)
            return true;
    return false;
}

/* ---- the listener ---- */

static void enqueue(struct stream *s, const char *event, uint64_t console_id, const char *data,
                    size_t len)
{
    struct jsonbuf b = JSONBUF_INIT(len * 2 + 256);
    char id[32];
    struct item *it = NULL;

    if (console_id)
        snprintf(id, sizeof(id), "%" PRIu64, console_id);
    if (put_event(&b, event, console_id ? id : NULL, data, len) == 0)
        it = malloc(sizeof(*it) + b.len);
    pthread_mutex_lock(&s->mu);
    if (!it || s->bytes + b.len > API_EVENTS_QUEUE_MAX) {
        s->dropped++;
        free(it);
    } else {
        it->next = NULL;
        it->console_id = console_id;
        it->len = b.len;
        memcpy(it->text, b.data, b.len);
        if (s->tail)
            s->tail->next = it;
        else
            s->head = it;
        s->tail = it;
        s->bytes += b.len;
    }
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->mu);
    jsonbuf_cleanup(&b);
}

static void on_event(void *arg, const struct events_event *ev)
{
    struct stream *s = arg;

    switch (ev->kind) {
    case EVENTS_CONSOLE:
        if (wants_console(s, ev->console->level, ev->console->source))
            enqueue(s, "console", ev->console->id, ev->json, ev->json_len);
        break;
    case EVENTS_LIST_CHANGED:
        enqueue(s, "list_changed", 0, ev->json, ev->json_len);
        break;
    case EVENTS_RESOURCE_UPDATED:
        if (wants_uri(s, ev->uri))
            enqueue(s, "resource_updated", 0, ev->json, ev->json_len);
        break;
    case EVENTS_DROPPED:
        pthread_mutex_lock(&s->mu);
        s->dropped += ev->dropped;
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->mu);
        break;
    }
}

static void on_gone(void *arg)
{
    struct stream *s = arg;

    pthread_mutex_lock(&s->mu);
    s->gone = true;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->mu);
}

/* ---- one stream ---- */

static void stream_free(struct stream *s)
{
    for (struct item *it = s->head, *next; it; it = next) {
        next = it->next;
        free(it);
    }
    for (size_t i = 0; i < s->nuris; i++) {
        if (s->ae->resources)
            watch_remove(s->ae->resources, s->uris[i]);
        free(s->uris[i]);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cond);
    free(s);
}

/* Reads the query into s's filters and *since. Returns 0, or an HTTP status with msg. */
static int parse_query(struct api_events *ae, struct mg_connection *conn, struct stream *s,
                       bool *has_since, uint64_t *since, int64_t *since_ts, char *msg, size_t msgsz)
{
    const char *qs = mg_get_request_info(conn)->query_string;
    const char *last = mg_get_header(conn, "Last-Event-ID");
    size_t qlen = qs ? strlen(qs) : 0;
    char val[64], *uri = NULL;
    int n;

    s->min_rank = 0;
    s->source = -1;
    *since = 0;
    *has_since = false;
    if (qs && (n = mg_get_var(qs, qlen, "console", val, sizeof(val))) != -1) {
        int level = console_parse_level(val);

        if (n >= 0 && strcmp(val, "none") == 0) {
            s->min_rank = -1;
        } else if (n < 0 || level < 0) {
            snprintf(msg, msgsz,
                     "console=%.32s: expected a level (debug, log, info, warn, error) or none",
                     n < 0 ? "..." : val);
            return 400;
        } else {
            s->min_rank = level_rank(level);
        }
    }
    if (qs && (n = mg_get_var(qs, qlen, "source", val, sizeof(val))) != -1) {
        s->source = n < 0 ? -1 : console_parse_source(val);
        if (s->source < 0) {
            snprintf(msg, msgsz, "source=%.32s: expected exec, studio or daemon",
                     n < 0 ? "..." : val);
            return 400;
        }
    }
    if (qs && (n = mg_get_var(qs, qlen, "since", val, sizeof(val))) != -1)
        last = n < 0 ? "x" : val;
    if (last) {
        char *end;
        unsigned long long v = strtoull(last, &end, 10);

        if (!*last || *end || last[0] == '-') {
            snprintf(msg, msgsz, "since=%.32s: expected a console id (a whole number)", last);
            return 400;
        }
        *since = v;
        *has_since = true;
    }
    *since_ts = 0;
    if (qs && (n = mg_get_var(qs, qlen, "since_ts", val, sizeof(val))) != -1) {
        char *end;
        long long v = n < 0 ? -1 : strtoll(val, &end, 10);

        if (n < 0 || !val[0] || *end || v < 0) {
            snprintf(msg, msgsz, "since_ts=%.32s: expected a time in ms since the epoch",
                     n < 0 ? "..." : val);
            return 400;
        }
        *since_ts = v;
        *has_since = true;
    }
    uri = malloc(URI_MAX);
    if (!uri) {
        snprintf(msg, msgsz, "out of memory");
        return 503;
    }
    for (int i = 0; qs; i++) {
        struct errinfo err = {0};

        n = mg_get_var2(qs, qlen, "uri", uri, URI_MAX, i);
        if (n == -1)
            break;
        if (n < 0 || s->nuris == API_EVENTS_URIS_MAX) {
            snprintf(msg, msgsz,
                     n < 0 ? "uri: a URI is longer than %d bytes"
                           : "uri: at most %d URIs per stream; open another stream for more",
                     n < 0 ? URI_MAX : API_EVENTS_URIS_MAX);
            free(uri);
            return 400;
        }
        if (!ae->resources) {
            snprintf(msg, msgsz, "uri: resource updates are not available in this runboxd");
            free(uri);
            return 400;
        }
        if (watch_add(ae->resources, uri, &err) < 0) {
            snprintf(msg, msgsz, "uri=%.200s: %s", uri, err.msg);
            free(uri);
            return api_status_for(err.kind);
        }
        s->uris[s->nuris] = strdup(uri);
        if (!s->uris[s->nuris]) {
            watch_remove(ae->resources, uri);
            snprintf(msg, msgsz, "out of memory");
            free(uri);
            return 503;
        }
        s->nuris++;
    }
    free(uri);
    return 0;
}

/* Writes the console entries after since that the filters pass. Returns the last id written
 * (or since), or UINT64_MAX when the client is gone. */
static uint64_t replay(struct api_events *ae, struct api_sse *sse, struct stream *s, uint64_t since,
                       int64_t since_ts)
{
    uint64_t at = since, oldest = console_oldest_id(ae->tools->console);

    /* since_id 0 means "the newest" to the console: start before the oldest kept instead. */
    if (at == 0 && oldest > 1)
        at = oldest - 1;
    for (;;) {
        struct console_query q = {.level = -1,
                                  .source = s->source,
                                  .since_id = at,
                                  .since_ts_ms = since_ts,
                                  .limit = REPLAY_PAGE};
        cJSON *page = console_query_json(ae->tools->console, &q);
        const cJSON *entries = cJSON_GetObjectItemCaseSensitive(page, "entries"), *e;
        size_t count = 0;

        cJSON_ArrayForEach(e, entries)
        {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
            const cJSON *lv = cJSON_GetObjectItemCaseSensitive(e, "level");
            char idtext[32], *text;
            int rc = 0;

            count++;
            if (!cJSON_IsNumber(id))
                continue;
            at = (uint64_t)id->valuedouble;
            if (!wants_console(s, cJSON_IsString(lv) ? console_parse_level(lv->valuestring) : 1,
                               s->source < 0 ? 0 : s->source))
                continue;
            text = cJSON_PrintUnformatted(e);
            snprintf(idtext, sizeof(idtext), "%" PRIu64, at);
            if (text)
                rc = api_sse_event(sse, "console", idtext, text, strlen(text));
            cJSON_free(text);
            if (rc < 0) {
                cJSON_Delete(page);
                return UINT64_MAX;
            }
        }
        cJSON_Delete(page);
        if (count < REPLAY_PAGE)
            return at;
    }
}

/* Drains s's queue to the connection until the reader goes or the daemon stops. */
static void pump(struct api_events *ae, struct api_sse *sse, struct stream *s, uint64_t replayed)
{
    pthread_mutex_lock(&s->mu);
    for (;;) {
        struct item *batch;
        uint64_t dropped;
        struct timespec until;
        bool stopping;
        int rc = 0;

        until = clocks_deadline((int64_t)API_EVENTS_KEEPALIVE_S * 1000);
        for (;;) {
            stopping = atomic_load(&ae->stopping);
            if (s->head || s->dropped || s->gone || stopping)
                break;
            if (pthread_cond_timedwait(&s->cond, &s->mu, &until) != 0)
                break; /* time for a keepalive */
        }
        if (s->gone || stopping)
            break;
        batch = s->head;
        dropped = s->dropped;
        s->head = s->tail = NULL;
        s->bytes = 0;
        s->dropped = 0;
        pthread_mutex_unlock(&s->mu);

        if (dropped) {
            char data[48];

            snprintf(data, sizeof(data), "{\"count\":%" PRIu64 "}", dropped);
            rc = api_sse_event(sse, "dropped", NULL, data, strlen(data));
        }
        if (!batch && !dropped && rc == 0)
            rc = api_sse_write(sse, ": keepalive\n\n", 13);
        for (struct item *it = batch, *next; it; it = next) {
            next = it->next;
            if (rc == 0 && !(it->console_id && it->console_id <= replayed))
                rc = api_sse_write(sse, it->text, it->len);
            free(it);
        }
        pthread_mutex_lock(&s->mu);
        if (rc < 0)
            break;
    }
    pthread_mutex_unlock(&s->mu);
}

int api_events_handle(struct api_events *ae, struct mg_connection *conn, const char *method)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    struct stream *s;
    struct errinfo err = {0};
    char msg[512], ready[128];
    struct api_sse sse;
    uint64_t since, replayed;
    int64_t since_ts;
    bool has_since;
    int status, listen = -1, watch = -1, fd;
    unsigned kinds;

    if (strcmp(method, "GET") != 0) {
        snprintf(msg, sizeof(msg), "%.16s /events is not allowed; use GET", method);
        return api_send_error(conn, 405, msg, "Allow", "GET");
    }
    if (!ae->tools->events || !ae->tools->console)
        return api_send_error(conn, 503, "the event feed is not running in this runboxd", NULL,
                              NULL);
    s = calloc(1, sizeof(*s));
    if (!s)
        return api_send_error(conn, 503, "out of memory", NULL, NULL);
    s->ae = ae;
    pthread_mutex_init(&s->mu, NULL);
    clocks_cond_init(&s->cond);
    status = parse_query(ae, conn, s, &has_since, &since, &since_ts, msg, sizeof(msg));
    if (status) {
        stream_free(s);
        return api_send_error(conn, status, msg, NULL, NULL);
    }
    if (call_service_admit(ae->calls, CALL_BUDGET_STREAM, &err) < 0) {
        stream_free(s);
        return api_send_error(conn, 503, err.msg, NULL, NULL);
    }
    kinds = EVENTS_LIST_CHANGED | (s->min_rank >= 0 ? EVENTS_CONSOLE : 0) |
            (s->nuris ? EVENTS_RESOURCE_UPDATED : 0);
    listen = events_listen(ae->tools->events, kinds, on_event, s, &err);
    if (listen < 0) {
        call_service_release(ae->calls, CALL_BUDGET_STREAM);
        stream_free(s);
        return api_send_error(conn, 503, err.msg, NULL, NULL);
    }
    pthread_mutex_lock(&ae->mu);
    s->next = ae->streams;
    ae->streams = s;
    pthread_mutex_unlock(&ae->mu);
    fd = connwatch_find_socket(ri->remote_addr, ri->remote_port, ri->server_port);
    if (fd >= 0)
        watch = connwatch_add(ae->watch, fd, on_gone, s, NULL);

    if (api_sse_begin(&sse, conn) == 0) {
        /* Without since, the stream starts now: nothing is replayed or skipped. */
        replayed = s->min_rank >= 0 && has_since ? replay(ae, &sse, s, since, since_ts) : 0;
        if (replayed != UINT64_MAX) {
            snprintf(ready, sizeof(ready),
                     "{\"latest_id\":%" PRIu64 ",\"version\":\"" RUNBOX_VERSION "\",\"wire\":%d}",
                     console_latest_id(ae->tools->console), RUNBOX_WIRE);
            if (api_sse_event(&sse, "ready", NULL, ready, strlen(ready)) == 0)
                pump(ae, &sse, s, replayed);
        }
        api_sse_end(&sse); /* the daemon stops; when the client left, this write just fails */
    }

    connwatch_remove(ae->watch, watch);
    events_unlisten(ae->tools->events, listen);
    pthread_mutex_lock(&ae->mu);
    for (struct stream **pp = &ae->streams; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    pthread_mutex_unlock(&ae->mu);
    call_service_release(ae->calls, CALL_BUDGET_STREAM);
    stream_free(s);
    return 200;
}

/* ---- life ---- */

struct api_events *api_events_new(const struct api_events_options *opt, struct errinfo *err)
{
    struct api_events *ae = calloc(1, sizeof(*ae));

    if (!ae) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return NULL;
    }
    ae->tools = opt->tools;
    ae->calls = opt->calls;
    ae->watch = opt->watch;
    ae->resources = opt->resources;
    pthread_mutex_init(&ae->mu, NULL);
    return ae;
}

void api_events_shutdown(struct api_events *ae)
{
    if (!ae)
        return;
    atomic_store(&ae->stopping, true);
    pthread_mutex_lock(&ae->mu);
    for (struct stream *s = ae->streams; s; s = s->next) {
        pthread_mutex_lock(&s->mu);
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&ae->mu);
}

void api_events_free(struct api_events *ae)
{
    if (!ae)
        return;
    pthread_mutex_destroy(&ae->mu);
    free(ae);
}
