/* daemon/events.c - the event feed (see events.h).
 *
 * DESIGN
 * A ring of queued events under `qmu`, bounded by count (EVENTS_QUEUE_MAX) and by bytes
 * (QUEUE_BYTES_MAX, since a console entry may hold 16 KiB); a publisher that finds it full drops
 * the oldest and counts them. The dispatcher thread takes one event at a time out of the ring
 * (ownership moves with it), then calls the listeners under `lmu`; events_unlisten takes `lmu`
 * too, which is what guarantees that a removed listener is not running. Lock order: lmu, then
 * qmu (a listener may publish); publishers take only qmu.
 *
 * An event's JSON is built by the publisher, so listeners share one text. */
#include "events.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "console.h"
#include "jsonbuf.h"
#include "log.h"

#define QUEUE_BYTES_MAX ((size_t)4 << 20)

struct qevent {
    enum events_kind kind;
    uint64_t seq;
    char *json; /* owned */
    size_t json_len;
    struct console_entry_view console; /* message and instance owned (EVENTS_CONSOLE) */
    unsigned lists;
    char *uri; /* owned (EVENTS_RESOURCE_UPDATED) */
};

struct listener {
    unsigned kinds; /* 0: a free slot */
    events_fn fn;
    void *arg;
};

struct events {
    pthread_mutex_t qmu;    /* guards the ring, the counters and stopping */
    pthread_cond_t qcond;   /* an event arrived, or stop */
    pthread_cond_t flushed; /* delivered grew */
    struct qevent ring[EVENTS_QUEUE_MAX];
    size_t head, count, bytes;
    uint64_t next_seq;  /* the seq of the next event published */
    uint64_t delivered; /* events up to this seq were delivered (or dropped) */
    uint64_t dropped;   /* dropped since the last EVENTS_DROPPED event */
    bool stopping;

    pthread_mutex_t lmu; /* guards listeners; held while they run */
    struct listener listeners[EVENTS_LISTENERS_MAX];
    size_t nlisteners; /* slots in use or once used */

    pthread_t thread;
};

static void qevent_cleanup(struct qevent *q)
{
    free(q->json);
    free((char *)q->console.message);
    free((char *)q->console.instance);
    free(q->uri);
    memset(q, 0, sizeof(*q));
}

static size_t qevent_bytes(const struct qevent *q)
{
    return q->json_len + q->console.len + sizeof(*q);
}

/* ---- the dispatcher ---- */

static void deliver(struct events *ev, const struct events_event *e)
{
    pthread_mutex_lock(&ev->lmu);
    for (size_t i = 0; i < ev->nlisteners; i++)
        if (ev->listeners[i].kinds & e->kind)
            ev->listeners[i].fn(ev->listeners[i].arg, e);
    pthread_mutex_unlock(&ev->lmu);
}

static void deliver_dropped(struct events *ev, uint64_t count, uint64_t seq)
{
    char json[48];
    struct events_event e = {.kind = EVENTS_DROPPED, .seq = seq, .dropped = count, .json = json};

    e.json_len =
        (size_t)snprintf(json, sizeof(json), "{\"count\":%llu}", (unsigned long long)count);
    deliver(ev, &e);
}

static void *dispatch(void *arg)
{
    struct events *ev = arg;

    pthread_mutex_lock(&ev->qmu);
    for (;;) {
        struct qevent q;
        uint64_t dropped, dropped_seq;

        while (!ev->count && !ev->dropped && !ev->stopping)
            pthread_cond_wait(&ev->qcond, &ev->qmu);
        if (!ev->count && !ev->dropped)
            break; /* stopping, and everything was delivered */
        dropped = ev->dropped;
        ev->dropped = 0;
        memset(&q, 0, sizeof(q));
        if (ev->count) {
            q = ev->ring[ev->head];
            memset(&ev->ring[ev->head], 0, sizeof(ev->ring[0]));
            ev->head = (ev->head + 1) % EVENTS_QUEUE_MAX;
            ev->count--;
            ev->bytes -= qevent_bytes(&q);
        }
        dropped_seq = q.seq ? q.seq : ev->next_seq;
        pthread_mutex_unlock(&ev->qmu);

        if (dropped)
            deliver_dropped(ev, dropped, dropped_seq);
        if (q.seq) {
            struct events_event e = {.kind = q.kind,
                                     .seq = q.seq,
                                     .json = q.json,
                                     .json_len = q.json_len,
                                     .console = q.kind == EVENTS_CONSOLE ? &q.console : NULL,
                                     .lists = q.lists,
                                     .uri = q.uri};

            deliver(ev, &e);
        }

        pthread_mutex_lock(&ev->qmu);
        if (q.seq && q.seq > ev->delivered)
            ev->delivered = q.seq;
        if (!ev->count)
            ev->delivered = ev->next_seq - 1;
        pthread_cond_broadcast(&ev->flushed);
        pthread_mutex_unlock(&ev->qmu);
        qevent_cleanup(&q);
        pthread_mutex_lock(&ev->qmu);
    }
    pthread_mutex_unlock(&ev->qmu);
    return NULL;
}

/* ---- publishing ---- */

/* Queues q (taking what it owns), dropping the oldest events while the ring is full. */
static void enqueue(struct events *ev, struct qevent *q)
{
    size_t bytes = qevent_bytes(q);

    pthread_mutex_lock(&ev->qmu);
    if (ev->stopping) {
        pthread_mutex_unlock(&ev->qmu);
        qevent_cleanup(q);
        return;
    }
    while (ev->count && (ev->count >= EVENTS_QUEUE_MAX || ev->bytes + bytes > QUEUE_BYTES_MAX)) {
        struct qevent *old = &ev->ring[ev->head];

        ev->bytes -= qevent_bytes(old);
        qevent_cleanup(old);
        ev->head = (ev->head + 1) % EVENTS_QUEUE_MAX;
        ev->count--;
        ev->dropped++;
    }
    q->seq = ev->next_seq++;
    ev->ring[(ev->head + ev->count) % EVENTS_QUEUE_MAX] = *q;
    ev->count++;
    ev->bytes += bytes;
    pthread_cond_signal(&ev->qcond);
    pthread_mutex_unlock(&ev->qmu);
}

static void format_ts(int64_t ms, char *out, size_t size)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    size_t n;

    if (!gmtime_r(&secs, &tm)) {
        snprintf(out, size, "1970-01-01T00:00:00.000Z");
        return;
    }
    n = strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, size - n, ".%03dZ", (int)(ms % 1000));
}

void events_publish_console(struct events *ev, const struct console_entry_view *entry)
{
    struct jsonbuf b = JSONBUF_INIT((size_t)CONSOLE_MSG_MAX * 8);
    struct qevent q = {.kind = EVENTS_CONSOLE, .console = *entry};
    char ts[40], num[64], src[96];
    int rc = 0;

    if (!ev)
        return;
    format_ts(entry->ts_ms, ts, sizeof(ts));
    snprintf(num, sizeof(num), "{\"id\":%llu,\"ts\":\"", (unsigned long long)entry->id);
    rc |= jsonbuf_puts(&b, num, NULL);
    rc |= jsonbuf_puts(&b, ts, NULL);
    rc |= jsonbuf_puts(&b, "\",\"level\":\"", NULL);
    rc |= jsonbuf_puts(&b, console_level_name(entry->level), NULL);
    rc |= jsonbuf_puts(&b, "\",\"source\":\"", NULL);
    rc |= jsonbuf_puts(&b, console_source_label(entry->source, entry->instance, src, sizeof(src)),
                       NULL);
    rc |= jsonbuf_puts(&b, "\",\"message\":", NULL);
    rc |= jsonbuf_put_json_string(&b, entry->message, entry->len, NULL);
    if (entry->pid) {
        snprintf(num, sizeof(num), ",\"pid\":%llu", (unsigned long long)entry->pid);
        rc |= jsonbuf_puts(&b, num, NULL);
    }
    if (entry->instance && entry->source != CONSOLE_SRC_MCP) {
        rc |= jsonbuf_puts(&b, ",\"instance\":", NULL);
        rc |= jsonbuf_put_json_string(&b, entry->instance, strlen(entry->instance), NULL);
    }
    rc |= jsonbuf_puts(&b, "}", NULL);
    q.console.message = NULL;
    q.console.instance = NULL;
    q.json = rc ? NULL : jsonbuf_take(&b, &q.json_len);
    q.console.message = q.json ? strndup(entry->message, entry->len) : NULL;
    q.console.instance = entry->instance && q.json ? strdup(entry->instance) : NULL;
    jsonbuf_cleanup(&b);
    if (!q.json || !q.console.message || (entry->instance && !q.console.instance)) {
        qevent_cleanup(&q);
        pthread_mutex_lock(&ev->qmu);
        ev->dropped++; /* out of memory: listeners hear that something was lost */
        pthread_cond_signal(&ev->qcond);
        pthread_mutex_unlock(&ev->qmu);
        return;
    }
    enqueue(ev, &q);
}

void events_publish_list_changed(struct events *ev, unsigned lists)
{
    static const char *const names[] = {"tools", "prompts", "resources"};
    struct jsonbuf b = JSONBUF_INIT(256);
    struct qevent q = {.kind = EVENTS_LIST_CHANGED, .lists = lists};
    bool first = true;

    if (!ev || !lists)
        return;
    jsonbuf_puts(&b, "{\"lists\":[", NULL);
    for (unsigned i = 0; i < 3; i++)
        if (lists & (1u << i)) {
            jsonbuf_puts(&b, first ? "\"" : ",\"", NULL);
            jsonbuf_puts(&b, names[i], NULL);
            jsonbuf_puts(&b, "\"", NULL);
            first = false;
        }
    jsonbuf_puts(&b, "]}", NULL);
    q.json = jsonbuf_take(&b, &q.json_len);
    if (!q.json)
        return;
    enqueue(ev, &q);
}

void events_publish_resource_updated(struct events *ev, const char *uri)
{
    struct jsonbuf b = JSONBUF_INIT((size_t)64 << 10);
    struct qevent q = {.kind = EVENTS_RESOURCE_UPDATED};

    if (!ev || !uri)
        return;
    jsonbuf_puts(&b, "{\"uri\":", NULL);
    jsonbuf_put_json_string(&b, uri, strlen(uri), NULL);
    jsonbuf_puts(&b, "}", NULL);
    q.json = jsonbuf_take(&b, &q.json_len);
    q.uri = q.json ? strdup(uri) : NULL;
    if (!q.uri) {
        qevent_cleanup(&q);
        return;
    }
    enqueue(ev, &q);
}

void events_flush(struct events *ev)
{
    uint64_t target;

    if (!ev)
        return;
    pthread_mutex_lock(&ev->qmu);
    target = ev->next_seq - 1;
    while (ev->delivered < target && !(ev->stopping && !ev->count))
        pthread_cond_wait(&ev->flushed, &ev->qmu);
    pthread_mutex_unlock(&ev->qmu);
}

/* ---- listeners ---- */

int events_listen(struct events *ev, unsigned kinds, events_fn fn, void *arg, struct errinfo *err)
{
    int handle = -1;

    pthread_mutex_lock(&ev->lmu);
    for (size_t i = 0; i < ev->nlisteners && handle < 0; i++)
        if (!ev->listeners[i].kinds)
            handle = (int)i;
    if (handle < 0 && ev->nlisteners < EVENTS_LISTENERS_MAX)
        handle = (int)ev->nlisteners++;
    if (handle >= 0)
        ev->listeners[handle] =
            (struct listener){.kinds = kinds | EVENTS_DROPPED, .fn = fn, .arg = arg};
    pthread_mutex_unlock(&ev->lmu);
    if (handle < 0)
        errinfo_set(err, ERR_TOO_LARGE, "the event feed has %d listeners, its most",
                    EVENTS_LISTENERS_MAX);
    return handle;
}

void events_unlisten(struct events *ev, int handle)
{
    if (!ev || handle < 0)
        return;
    pthread_mutex_lock(&ev->lmu);
    if ((size_t)handle < ev->nlisteners)
        ev->listeners[handle].kinds = 0;
    while (ev->nlisteners && !ev->listeners[ev->nlisteners - 1].kinds)
        ev->nlisteners--;
    pthread_mutex_unlock(&ev->lmu);
}

/* ---- life ---- */

struct events *events_new(struct errinfo *err)
{
    struct events *ev = calloc(1, sizeof(*ev));

    if (!ev) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return NULL;
    }
    ev->next_seq = 1;
    pthread_mutex_init(&ev->qmu, NULL);
    pthread_mutex_init(&ev->lmu, NULL);
    pthread_cond_init(&ev->qcond, NULL);
    pthread_cond_init(&ev->flushed, NULL);
    if (pthread_create(&ev->thread, NULL, dispatch, ev) != 0) {
        errinfo_set(err, ERR_IO, "the event feed: no thread for its dispatcher");
        pthread_mutex_destroy(&ev->qmu);
        pthread_mutex_destroy(&ev->lmu);
        pthread_cond_destroy(&ev->qcond);
        pthread_cond_destroy(&ev->flushed);
        free(ev);
        return NULL;
    }
    return ev;
}

void events_free(struct events *ev)
{
    if (!ev)
        return;
    pthread_mutex_lock(&ev->qmu);
    ev->stopping = true;
    pthread_cond_broadcast(&ev->qcond);
    pthread_mutex_unlock(&ev->qmu);
    pthread_join(ev->thread, NULL);
    if (ev->nlisteners)
        log_warn("events: freed with %zu listener slots in use", ev->nlisteners);
    for (size_t i = 0; i < ev->count; i++)
        qevent_cleanup(&ev->ring[(ev->head + i) % EVENTS_QUEUE_MAX]);
    pthread_mutex_destroy(&ev->qmu);
    pthread_mutex_destroy(&ev->lmu);
    pthread_cond_destroy(&ev->qcond);
    pthread_cond_destroy(&ev->flushed);
    free(ev);
}
