/* mcp-proxy/proxy_follow.c - runboxd's GET /events as MCP notifications to runbox's client
 * (see proxy.h).
 *
 * DESIGN
 * One stream at a time, opened from the loop (proxy_follow_tick), never from libcurl's
 * callbacks: a change of what the client wants only marks the follower dirty, and the next turn
 * cancels the stream and opens one with the new query, with since=<the last console id seen>
 * so that no entry is lost or repeated across the switch. After a failure (the daemon went
 * away) the stream is reopened without since: a restarted daemon counts its ids from 1 again.
 * Console levels map to MCP levels as on runboxd's own /mcp (log and info are info, warn is
 * warning); the engine then sends each entry to the session if it is at the client's level. */
#include "proxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clocks.h"
#include "jsonbuf.h"
#include "log.h"
#include "runbox/mcp.h"
#include "sse.h"
#include "upstream.h"

#define RETRY_MIN_MS 250
#define URL_MAX      ((size_t)256 << 10)

void proxy_follow_init(struct proxy_follow *f, struct upstream *up, struct mcp_server *srv)
{
    memset(f, 0, sizeof(*f));
    f->up = up;
    f->srv = srv;
    f->level = -1;
    f->backoff_ms = RETRY_MIN_MS;
}

static void close_stream(struct proxy_follow *f)
{
    if (f->req)
        upstream_cancel(f->up, f->req);
    f->req = NULL;
    if (f->sse) {
        sse_cleanup(f->sse);
        free(f->sse);
        f->sse = NULL;
    }
}

void proxy_follow_cleanup(struct proxy_follow *f)
{
    close_stream(f);
    for (size_t i = 0; i < f->nuris; i++)
        free(f->uris[i]);
    f->nuris = 0;
}

/* ---- what the client wants ---- */

void proxy_follow_want(struct proxy_follow *f)
{
    if (!f->wanted) {
        f->wanted = true;
        f->dirty = true;
    }
}

/* The resources runboxd serves: its two runbox:// resources and file:/// paths ('/' only). */
static bool is_daemon_uri(const char *uri)
{
    return strcmp(uri, "runbox://console/logs") == 0 || strcmp(uri, "runbox://process/list") == 0 ||
           (strncmp(uri, "file:///", 8) == 0 && uri[8] && !strchr(uri, '\\'));
}

int proxy_follow_subscribe(struct proxy_follow *f, const char *uri, struct errinfo *err)
{
    if (!is_daemon_uri(uri)) {
        errinfo_set(err, ERR_INVALID,
                    "%.200s names no resource of runboxd: it serves file:///<path>, "
                    "runbox://console/logs and runbox://process/list",
                    uri);
        return -1;
    }
    if (f->nuris == PROXY_FOLLOW_URIS_MAX) {
        errinfo_set(err, ERR_TOO_LARGE,
                    "at most %d resource subscriptions at once; unsubscribe from some first",
                    PROXY_FOLLOW_URIS_MAX);
        return -1;
    }
    f->uris[f->nuris] = strdup(uri);
    if (!f->uris[f->nuris]) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return -1;
    }
    f->nuris++;
    f->wanted = f->dirty = true;
    return 0;
}

void proxy_follow_unsubscribe(struct proxy_follow *f, const char *uri)
{
    for (size_t i = 0; i < f->nuris; i++)
        if (strcmp(f->uris[i], uri) == 0) {
            free(f->uris[i]);
            f->uris[i] = f->uris[--f->nuris];
            f->dirty = true;
            return;
        }
}

void proxy_follow_set_level(struct proxy_follow *f, int level)
{
    if (level == f->level)
        return;
    /* Entries written from now on are the client's, even those that reach runboxd before the
     * stream does (a call sent right after setLevel). */
    if (f->level < 0 && !f->req)
        f->since_ts = clocks_wall_ms();
    f->level = level;
    f->dirty = true;
    if (level >= 0)
        f->wanted = true;
}

void proxy_follow_kick(struct proxy_follow *f)
{
    f->retry_at = 0;
    f->backoff_ms = RETRY_MIN_MS;
}

/* ---- the stream ---- */

/* The console's name for the lowest level that reaches the client at MCP level `level`. */
static const char *console_min(int level)
{
    if (level < 0)
        return "none";
    if (level <= MCP_LOG_DEBUG)
        return "debug";
    if (level <= MCP_LOG_NOTICE)
        return "info";
    if (level <= MCP_LOG_WARNING)
        return "warn";
    return "error";
}

static enum mcp_log_level mcp_level(const char *console_level)
{
    if (strcmp(console_level, "debug") == 0)
        return MCP_LOG_DEBUG;
    if (strcmp(console_level, "warn") == 0)
        return MCP_LOG_WARNING;
    if (strcmp(console_level, "error") == 0)
        return MCP_LOG_ERROR;
    return MCP_LOG_INFO;
}

/* A console entry as runboxd's /mcp sends it: data {id, source, pid?, instance?, message}. */
static void on_console(struct proxy_follow *f, cJSON *entry)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(entry, "id");
    const cJSON *level = cJSON_GetObjectItemCaseSensitive(entry, "level");
    const cJSON *source = cJSON_GetObjectItemCaseSensitive(entry, "source");
    enum mcp_log_level lv;

    if (!cJSON_IsNumber(id) || !cJSON_IsString(level) || !cJSON_IsString(source))
        return;
    f->last_id = (uint64_t)id->valuedouble;
    lv = mcp_level(level->valuestring);
    /* The level is the notification's own; the data is what runboxd's /mcp sends. */
    cJSON_DeleteItemFromObjectCaseSensitive(entry, "ts");
    cJSON_DeleteItemFromObjectCaseSensitive(entry, "level");
    mcp_server_log(f->srv, lv, source->valuestring, cJSON_Duplicate(entry, true));
}

static bool on_event(void *ctx, const struct sse_event *ev)
{
    struct proxy_follow *f = ctx;
    cJSON *doc = cJSON_ParseWithLength(ev->data, ev->data_len);

    if (strcmp(ev->event, "console") == 0 && doc) {
        on_console(f, doc);
    } else if (strcmp(ev->event, "list_changed") == 0 && doc) {
        const cJSON *lists = cJSON_GetObjectItemCaseSensitive(doc, "lists"), *l;
        unsigned bits = 0;

        cJSON_ArrayForEach(l, lists) if (cJSON_IsString(l))
        {
            if (strcmp(l->valuestring, "tools") == 0)
                bits |= MCP_LIST_TOOLS;
            else if (strcmp(l->valuestring, "prompts") == 0)
                bits |= MCP_LIST_PROMPTS;
            else if (strcmp(l->valuestring, "resources") == 0)
                bits |= MCP_LIST_RESOURCES;
        }
        if ((bits & MCP_LIST_TOOLS) && f->tools_changed) {
            bits &= ~(unsigned)MCP_LIST_TOOLS;
            f->tools_changed(f->tools_arg);
        }
        if (bits)
            mcp_server_notify_list_changed(f->srv, bits);
    } else if (strcmp(ev->event, "resource_updated") == 0 && doc) {
        const cJSON *uri = cJSON_GetObjectItemCaseSensitive(doc, "uri");

        if (cJSON_IsString(uri))
            mcp_server_notify_resource_updated(f->srv, uri->valuestring);
    } else if (strcmp(ev->event, "ready") == 0) {
        const cJSON *latest = cJSON_GetObjectItemCaseSensitive(doc, "latest_id");
        const cJSON *wire = cJSON_GetObjectItemCaseSensitive(doc, "wire");
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(doc, "version");
        int w = cJSON_IsNumber(wire) && wire->valuedouble >= 1 && wire->valuedouble < 1e6
                    ? (int)wire->valuedouble
                    : 1;
        char *mismatch =
            w == f->warned_wire
                ? NULL
                : upstream_wire_mismatch(upstream_base_url(f->up),
                                         cJSON_IsString(version) ? version->valuestring : NULL, w);

        /* Once for each daemon revision met: a restarted daemon of the same install is quiet. */
        if (mismatch) {
            log_warn("proxy: %s", mismatch);
            free(mismatch);
        }
        f->warned_wire = w == RUNBOX_WIRE ? 0 : w;

        f->had_ready = true;
        f->backoff_ms = RETRY_MIN_MS;
        if (f->tools_changed) /* what changed before the stream began is not missed */
            f->tools_changed(f->tools_arg);
        /* Live from here: a switch continues after what the daemon had when it began. */
        if (cJSON_IsNumber(latest) && (uint64_t)latest->valuedouble > f->last_id)
            f->last_id = (uint64_t)latest->valuedouble;
    } else if (strcmp(ev->event, "dropped") == 0) {
        log_warn("proxy: runboxd's event stream dropped events (%.*s): this reader fell behind",
                 (int)ev->data_len, ev->data);
    }
    cJSON_Delete(doc);
    return true;
}

static void on_chunk(void *ctx, const char *data, size_t len)
{
    struct proxy_follow *f = ctx;

    if (f->sse && !sse_feed(f->sse, data, len, on_event, f))
        log_warn("proxy: runboxd's event stream could not be read (out of memory)");
}

static void on_done(void *ctx, const struct upstream_reply *reply)
{
    struct proxy_follow *f = ctx;
    int64_t now = clocks_mono_ms();

    f->req = NULL;
    if (f->sse) {
        sse_cleanup(f->sse);
        free(f->sse);
        f->sse = NULL;
    }
    if (reply->outcome == UPSTREAM_ANSWERED && reply->status != 200)
        log_warn("proxy: runboxd refused its event stream (HTTP %ld): %.300s", reply->status,
                 reply->body);
    else
        log_debug("proxy: runboxd's event stream ended (%s); it is reopened", reply->error);
    /* A stream that worked and then ended (the daemon restarted) is retried soon; one that
     * never started backs off. Its console ids are not continued: a new daemon starts at 1. */
    f->last_id = 0;
    f->since_ts = clocks_wall_ms(); /* what the (maybe new) daemon writes from now on is replayed */
    f->retry_at = now + f->backoff_ms;
    if (!f->had_ready && f->backoff_ms < PROXY_FOLLOW_RETRY_MAX_MS)
        f->backoff_ms *= 2;
    f->had_ready = false;
}

static char *build_url(const struct proxy_follow *f, bool since)
{
    struct jsonbuf b = JSONBUF_INIT(URL_MAX);
    char num[48];

    jsonbuf_puts(&b, "/events?console=", NULL);
    jsonbuf_puts(&b, console_min(f->level), NULL);
    if (since && f->last_id) {
        snprintf(num, sizeof(num), "&since=%llu", (unsigned long long)f->last_id);
        jsonbuf_puts(&b, num, NULL);
    } else if (!since && f->since_ts && f->level >= 0) {
        snprintf(num, sizeof(num), "&since_ts=%lld", (long long)f->since_ts);
        jsonbuf_puts(&b, num, NULL);
    }
    for (size_t i = 0; i < f->nuris; i++) {
        jsonbuf_puts(&b, "&uri=", NULL);
        proxy_url_escape(&b, f->uris[i]);
    }
    return jsonbuf_take(&b, NULL);
}

int proxy_follow_tick(struct proxy_follow *f, int64_t now_ms)
{
    struct errinfo err = {0};
    bool since;
    char *url;

    if (!f->wanted)
        return -1;
    if (f->req && !f->dirty)
        return -1;
    since = f->req != NULL; /* a switch continues where the open stream was */
    if (!f->req && f->retry_at > now_ms)
        return (int)(f->retry_at - now_ms);
    close_stream(f);
    f->dirty = false;
    f->had_ready = false;
    url = build_url(f, since);
    f->sse = calloc(1, sizeof(*f->sse));
    if (!url || !f->sse) {
        free(url);
        free(f->sse);
        f->sse = NULL;
        f->retry_at = now_ms + PROXY_FOLLOW_RETRY_MAX_MS;
        return PROXY_FOLLOW_RETRY_MAX_MS;
    }
    sse_init(f->sse, 0);
    if (!since)
        f->last_id = 0;
    f->req = upstream_get_stream(f->up, url, on_chunk, on_done, f, &err);
    free(url);
    if (!f->req) {
        log_warn("proxy: cannot open runboxd's event stream: %s", err.msg);
        sse_cleanup(f->sse);
        free(f->sse);
        f->sse = NULL;
        f->retry_at = now_ms + PROXY_FOLLOW_RETRY_MAX_MS;
        return PROXY_FOLLOW_RETRY_MAX_MS;
    }
    return -1;
}
