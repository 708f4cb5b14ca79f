/* common/mcp_http_session.c - the HTTP transport's sessions (see mcp_http.c's DESIGN): the
 * engine session behind each, messages held for a stream that is not there yet, the table of
 * listed sessions with its limit, idle expiry and the end of a session. */
#include "mcp_http_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "clocks.h"
#include "log.h"
#include "mcp_int.h"

/* ---- sessions ---- */

/* Keeps a message for the session's next stream (hs->mu held): the newest MCP_HTTP_HELD_MAX
 * bytes, the oldest dropped first. */
static void hold(struct hsess *hs, const char *json, size_t len, enum mcp_route_kind kind)
{
    struct qmsg *m = len <= MCP_HTTP_HELD_MAX ? mcp_http__qmsg(json, len, kind) : NULL;

    if (!m) {
        log_debug("mcp-http: a message for session %s, which has no stream open, was dropped",
                  hs->id);
        return;
    }
    while (hs->held && hs->held_bytes + len > MCP_HTTP_HELD_MAX) {
        struct qmsg *old = hs->held;

        hs->held = old->next;
        hs->held_bytes -= old->len;
        free(old);
        log_debug("mcp-http: session %s has no stream open: its oldest held message was dropped",
                  hs->id);
    }
    if (!hs->held)
        hs->held_tail = NULL;
    if (hs->held_tail)
        hs->held_tail->next = m;
    else
        hs->held = m;
    hs->held_tail = m;
    hs->held_bytes += len;
}

void mcp_http__give_held(struct hsess *hs, struct hstream *st)
{
    if (!hs->held)
        return;
    pthread_mutex_lock(&st->mu);
    mcp_http__queue_prepend(&st->q, hs->held, hs->held_tail, hs->held_bytes);
    pthread_mutex_unlock(&st->mu);
    hs->held = hs->held_tail = NULL;
    hs->held_bytes = 0;
}

static void hsess_send(void *ctx, const char *json, size_t len, const struct mcp_route *route)
{
    struct hsess *hs = ctx;
    enum mcp_route_kind kind;

    if (route->origin) {
        mcp_http__stream_deliver(route->origin, json, len, route->kind);
        return;
    }
    if (hs->kind == HS_WS) {
        mcp_http__ws_send(hs, json, len, route->kind);
        return;
    }
    kind = route->kind == MCP_ROUTE_RESPONSE ? MCP_ROUTE_SESSION /* never ends the stream */
                                             : route->kind;
    pthread_mutex_lock(&hs->mu);
    if (hs->out)
        mcp_http__stream_deliver(hs->out, json, len, kind);
    else
        hold(hs, json, len, kind);
    pthread_mutex_unlock(&hs->mu);
}

/* A request of the session will not be answered (cancelled): its POST's stream ends. */
static void hsess_unanswered(void *ctx, const struct mcp_route *route)
{
    (void)ctx;
    if (route->origin)
        mcp_http__stream_deliver(route->origin, NULL, 0, MCP_ROUTE_RESPONSE);
}

static void hsess_closed(void *ctx)
{
    struct hsess *hs = ctx;

    while (hs->held) {
        struct qmsg *m = hs->held;

        hs->held = m->next;
        free(m);
    }
    if (hs->ws)
        mcp_http__ws_free(hs->ws);
    pthread_mutex_destroy(&hs->mu);
    free(hs);
}

/* A request of a POST, on the worker that serves the POST (which waits for the answer anyway):
 * its handler may answer here however long it takes, the client watched meanwhile. */
static bool hsess_may_block(void *ctx, void *origin)
{
    struct hsess *hs = ctx;
    struct hstream *st = origin;

    if (!st->ends_at_answer || !pthread_equal(pthread_self(), st->owner))
        return false;
    mcp_http__stream_watch(hs->h, st);
    pthread_mutex_lock(&st->mu);
    st->inline_hs = hs;
    pthread_mutex_unlock(&st->mu);
    mcp_http__stream_list(hs->h,
                          st); /* so that the session's end cancels it (mcp_http__session_end) */
    return true;
}

static const struct mcp_transport hsess_transport = {.send = hsess_send,
                                                     .closed = hsess_closed,
                                                     .unanswered = hsess_unanswered,
                                                     .may_block = hsess_may_block};

static void random_id(char out[MCP_HTTP_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[MCP_HTTP_ID_LEN / 2];

    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        /* No kernel randomness (which should not happen): time and address still differ. */
        uint64_t t = (uint64_t)clocks_mono_ms() ^ (uint64_t)(uintptr_t)out;

        for (size_t i = 0; i < sizeof(raw); i++)
            raw[i] = (unsigned char)(t >> ((i % 8) * 8)) ^ (unsigned char)(i * 37);
    }
    for (size_t i = 0; i < sizeof(raw); i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[MCP_HTTP_ID_LEN] = '\0';
}

struct hsess *mcp_http__session_new(struct mcp_http *h, enum hs_kind kind, unsigned mflags,
                                    struct errinfo *err)
{
    struct hsess *hs = calloc(1, sizeof(*hs));

    if (!hs) {
        errinfo_set(err, ERR_NOMEM, "out of memory for an MCP session");
        return NULL;
    }
    hs->h = h;
    hs->kind = kind;
    random_id(hs->id);
    hs->last_used_ms = clocks_mono_ms();
    pthread_mutex_init(&hs->mu, NULL);
    hs->ms = mcp_session_new(h->opt.server, &hsess_transport, hs, mflags, err);
    if (!hs->ms) {
        pthread_mutex_destroy(&hs->mu);
        free(hs);
        return NULL;
    }
    return hs;
}

/* Ends the sessions nobody used for session_idle_ms (h->mu held); returns them to close. */
static struct hsess *take_expired(struct mcp_http *h, int64_t now)
{
    struct hsess *expired = NULL;

    for (struct hsess **pp = &h->sessions; *pp;) {
        struct hsess *hs = *pp;

        if (hs->kind != HS_STREAMABLE || hs->busy || hs->out ||
            now - hs->last_used_ms < h->opt.session_idle_ms) {
            pp = &hs->next;
            continue;
        }
        *pp = hs->next;
        hs->listed = false;
        h->nsessions--;
        hs->next = expired;
        expired = hs;
    }
    return expired;
}

static void close_list(struct hsess *list)
{
    while (list) {
        struct hsess *next = list->next;

        log_info("mcp-http: session %s expired (unused)", list->id);
        mcp_session_close(list->ms);
        list = next;
    }
}

/* When the table is full (h->mu held): unlists the Streamable session used least recently among
 * those with no request being served (so no stream open either: a GET stream holds the session
 * busy) and returns it to close, or NULL when every session is in use. Clients that exit without
 * DELETE (the TypeScript SDK's close() sends none) would otherwise hold their slot until it
 * expires, and a client that runs the Inspector's CLI in a loop would fill the table in minutes. */
static struct hsess *take_least_used(struct mcp_http *h)
{
    struct hsess **lru = NULL;

    for (struct hsess **pp = &h->sessions; *pp; pp = &(*pp)->next) {
        const struct hsess *hs = *pp;

        if (hs->kind == HS_STREAMABLE && !hs->busy && !hs->ending &&
            (!lru || hs->last_used_ms < (*lru)->last_used_ms))
            lru = pp;
    }
    if (!lru)
        return NULL;
    {
        struct hsess *hs = *lru;

        *lru = hs->next;
        hs->next = NULL;
        hs->listed = false;
        h->nsessions--;
        return hs;
    }
}

int mcp_http__session_list(struct mcp_http *h, struct hsess *hs, struct errinfo *err)
{
    struct hsess *expired, *evicted = NULL;
    int64_t now = clocks_mono_ms();
    int rc = 0;

    pthread_mutex_lock(&h->mu);
    expired = take_expired(h, now);
    if (!h->closing && h->nsessions >= h->opt.session_max)
        evicted = take_least_used(h);
    if (h->closing || h->nsessions >= h->opt.session_max) {
        errinfo_set(err, ERR_UNAVAILABLE,
                    "the server has %d MCP sessions open, the most it serves (%s); end one (DELETE "
                    "with its Mcp-Session-Id) or raise %s",
                    h->nsessions, h->limit_name, h->limit_name);
        rc = -1;
    } else {
        hs->next = h->sessions;
        h->sessions = hs;
        hs->listed = true;
        h->nsessions++;
        if (hs->kind == HS_WS)
            h->nws++;
    }
    pthread_mutex_unlock(&h->mu);
    close_list(expired);
    if (evicted) {
        log_info("mcp-http: session %s, unused for %lld s and with no stream, was ended to make "
                 "room for a new one (%d sessions at most: %s)",
                 evicted->id, (long long)((now - evicted->last_used_ms) / 1000), h->opt.session_max,
                 h->limit_name);
        mcp_session_close(evicted->ms);
    }
    return rc;
}

void mcp_http__session_end(struct mcp_http *h, struct hsess *hs)
{
    struct hstream *inl[16]; /* streams whose handler answers at length on their owner thread */
    size_t ninl = 0;
    bool now;

    pthread_mutex_lock(&h->mu);
    if (hs->listed) {
        for (struct hsess **pp = &h->sessions; *pp; pp = &(*pp)->next)
            if (*pp == hs) {
                *pp = hs->next;
                break;
            }
        hs->listed = false;
        h->nsessions--;
        if (hs->kind == HS_WS)
            h->nws--;
    }
    now = hs->busy == 0;
    if (!now) {
        /* Requests of it are being served: their streams end now (a POST waiting for a call's
         * answer, the GET stream), and the last mcp_http__session_put() closes the session. */
        hs->ending = true;
        for (struct hstream *st = h->open; st; st = st->next_open) {
            if (st->sess != hs)
                continue;
            pthread_mutex_lock(&st->mu);
            st->session_ended = true;
            if (st->inline_hs && ninl < sizeof(inl) / sizeof(inl[0]))
                inl[ninl++] = st;
            pthread_cond_broadcast(&st->cond);
            pthread_mutex_unlock(&st->mu);
        }
    }
    pthread_mutex_unlock(&h->mu);
    /* An inline handler is not waiting on its stream: its call is cancelled here (st is only
     * compared: the session has no other calls of that origin even if st has gone since). */
    for (size_t i = 0; i < ninl; i++)
        mcp_session_cancel_origin(hs->ms, inl[i]);
    if (now)
        mcp_session_close(hs->ms); /* hs is freed when the engine's session is gone */
}

struct hsess *mcp_http__session_get(struct mcp_http *h, const char *id)
{
    struct hsess *found = NULL, *expired;
    int64_t now = clocks_mono_ms();

    pthread_mutex_lock(&h->mu);
    expired = take_expired(h, now);
    for (struct hsess *hs = h->sessions; hs && !found; hs = hs->next)
        if (hs->kind == HS_STREAMABLE && strcmp(hs->id, id) == 0)
            found = hs;
    if (found) {
        found->busy++;
        found->last_used_ms = now;
    }
    pthread_mutex_unlock(&h->mu);
    close_list(expired);
    return found;
}

void mcp_http__session_put(struct mcp_http *h, struct hsess *hs)
{
    bool close;

    pthread_mutex_lock(&h->mu);
    hs->busy--;
    hs->last_used_ms = clocks_mono_ms();
    close = hs->busy == 0 && hs->ending;
    pthread_mutex_unlock(&h->mu);
    if (close)
        mcp_session_close(hs->ms);
}

struct hsess *mcp_http__sse_session_get(struct mcp_http *h, const char *id)
{
    struct hsess *found = NULL;

    pthread_mutex_lock(&h->mu);
    for (struct hsess *hs = h->sessions; hs && !found; hs = hs->next)
        if (hs->kind == HS_SSE && strcmp(hs->id, id) == 0)
            found = hs;
    if (found)
        found->busy++;
    pthread_mutex_unlock(&h->mu);
    return found;
}
