/* daemon/console.c - the console ring (see console.h).
 *
 * DESIGN
 * A circular array of max_entries slots (allocated at once; the pages are only touched as
 * entries arrive) holding entries oldest first from `head`. Each entry owns its message
 * (and instance) copy, so the byte bound is the sum of message lengths. An append first drops
 * from the head until both bounds leave room, then writes the next slot.
 *
 * `dropped_max` is the highest id ever dropped (by the bounds or by console_clear); it answers
 * "were entries after since_id lost?" exactly, also when a per-source clear left holes.
 *
 * Queries build their cJSON under the lock: the JSON is the copy-out (at most limit entries of
 * at most CONSOLE_MSG_MAX bytes), and it keeps one consistent view of ids and entries. */
#include "console.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clocks.h"
#include "jsonbuf.h"
#include "utf8.h"

#define QUERY_LIMIT_DEFAULT 100

struct entry {
    uint64_t id;
    int64_t ts_ms;
    uint64_t pid;
    char *msg;      /* owned, NUL-terminated valid UTF-8 */
    size_t len;     /* bytes in msg */
    char *instance; /* owned, or NULL */
    unsigned char level, source;
};

struct console {
    pthread_mutex_t lock; /* guards everything below */
    struct entry *ring;   /* owned: max_entries slots */
    size_t max_entries, max_bytes;
    size_t head;  /* slot of the oldest entry */
    size_t count; /* entries kept */
    size_t bytes; /* message bytes kept */
    uint64_t next_id;
    uint64_t dropped_max; /* highest id dropped so far, 0 = none */

    void (*listener)(void *arg, const struct console_entry_view *e);
    void *listener_arg;
};

static const char *const level_names[] = {"log", "info", "warn", "error", "debug"};
static const char *const source_names[] = {"exec", "studio", "daemon", "mcp"};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

const char *console_level_name(enum console_level level)
{
    return (unsigned)level < COUNT_OF(level_names) ? level_names[level] : "log";
}

const char *console_source_name(enum console_source src)
{
    return (unsigned)src < COUNT_OF(source_names) ? source_names[src] : "daemon";
}

int console_parse_level(const char *s)
{
    for (size_t i = 0; s && i < COUNT_OF(level_names); i++)
        if (strcmp(s, level_names[i]) == 0)
            return (int)i;
    return -1;
}

const char *console_source_label(enum console_source src, const char *instance, char *buf,
                                 size_t size)
{
    if (src == CONSOLE_SRC_MCP && instance)
        snprintf(buf, size, "mcp:%s", instance);
    else
        snprintf(buf, size, "%s", console_source_name(src));
    return buf;
}

int console_parse_source(const char *s)
{
    for (size_t i = 0; s && i < COUNT_OF(source_names); i++)
        if (strcmp(s, source_names[i]) == 0)
            return (int)i;
    return -1;
}

struct console *console_new(size_t max_entries, size_t max_bytes, struct errinfo *err)
{
    struct console *c = calloc(1, sizeof(*c));

    if (!c)
        goto nomem;
    c->max_entries = max_entries ? max_entries : CONSOLE_ENTRIES_DEFAULT;
    c->max_bytes = max_bytes ? max_bytes : CONSOLE_BYTES_DEFAULT;
    c->ring = calloc(c->max_entries, sizeof(*c->ring));
    if (!c->ring)
        goto nomem;
    c->next_id = 1;
    pthread_mutex_init(&c->lock, NULL);
    return c;
nomem:
    if (c)
        free(c);
    errinfo_set(err, ERR_NOMEM, "console: cannot allocate a ring of %zu entries",
                max_entries ? max_entries : CONSOLE_ENTRIES_DEFAULT);
    return NULL;
}

static void entry_clear(struct entry *e)
{
    free(e->msg);
    free(e->instance);
    memset(e, 0, sizeof(*e));
}

static struct entry *slot(struct console *c, size_t i) /* i-th oldest; lock held */
{
    return &c->ring[(c->head + i) % c->max_entries];
}

void console_free(struct console *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->count; i++)
        entry_clear(slot(c, i));
    free(c->ring);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Drops the oldest entry; lock held, count > 0. */
static void drop_oldest(struct console *c)
{
    struct entry *e = slot(c, 0);

    c->bytes -= e->len;
    if (e->id > c->dropped_max)
        c->dropped_max = e->id;
    entry_clear(e);
    c->head = (c->head + 1) % c->max_entries;
    c->count--;
}

/* An owned, valid UTF-8 copy of msg[0..len), cut past CONSOLE_MSG_MAX bytes with a note. The
 * copy is as long as its text: an entry must cost what the byte bound counts, not the
 * CONSOLE_MSG_MAX-sized buffer a message is cleaned in (that made the daemon's RSS grow by a
 * page per exec until the ring was full: ~150 MB for 10 000 short entries). */
static char *clean_copy(const char *msg, size_t len, size_t *out_len)
{
    char note[48], *buf, *fit;
    size_t written = 0, used;

    if (!msg) {
        msg = "";
        len = 0;
    }
    /* The usual message (short, valid, no NUL) is copied as it is. */
    if (len <= CONSOLE_MSG_MAX && utf8_valid_prefix(msg, len) == len && !memchr(msg, '\0', len)) {
        buf = malloc(len + 1);
        if (!buf)
            return NULL;
        memcpy(buf, msg, len);
        buf[len] = '\0';
        *out_len = len;
        return buf;
    }
    buf = malloc(CONSOLE_MSG_MAX + sizeof(note));
    if (!buf)
        return NULL;
    used = utf8_sanitize(buf, CONSOLE_MSG_MAX, msg, len, false, &written);
    if (used < len) {
        int n = snprintf(note, sizeof(note), "\xE2\x80\xA6[cut %zu bytes]", len - used);

        memcpy(buf + written, note, (size_t)n);
        written += (size_t)n;
    }
    buf[written] = '\0';
    *out_len = written;
    fit = realloc(buf, written + 1);
    return fit ? fit : buf;
}

uint64_t console_append(struct console *c, enum console_level level, enum console_source src,
                        uint64_t pid, const char *instance, int64_t ts_ms, const char *msg,
                        size_t len)
{
    struct entry e = {.level = (unsigned char)level, .source = (unsigned char)src, .pid = pid};
    uint64_t id;

    if (!c)
        return 0;
    /* Copy and clean outside the lock; only the ring update is serialized. */
    e.msg = clean_copy(msg, len, &e.len);
    e.instance = instance ? strdup(instance) : NULL;
    e.ts_ms = ts_ms ? ts_ms : clocks_wall_ms();
    pthread_mutex_lock(&c->lock);
    id = c->next_id++;
    if (!e.msg || (instance && !e.instance)) {
        /* Out of memory: the id is spent so that ids stay strictly increasing. */
        if (id > c->dropped_max)
            c->dropped_max = id;
        pthread_mutex_unlock(&c->lock);
        free(e.msg);
        free(e.instance);
        return id;
    }
    while (c->count && (c->count >= c->max_entries || c->bytes + e.len > c->max_bytes))
        drop_oldest(c);
    e.id = id;
    *slot(c, c->count) = e;
    c->count++;
    c->bytes += e.len;
    if (c->listener) {
        const struct console_entry_view v = {.id = id,
                                             .ts_ms = e.ts_ms,
                                             .level = (enum console_level)e.level,
                                             .source = (enum console_source)e.source,
                                             .pid = e.pid,
                                             .instance = e.instance,
                                             .message = e.msg,
                                             .len = e.len};

        c->listener(c->listener_arg, &v);
    }
    pthread_mutex_unlock(&c->lock);
    return id;
}

void console_set_listener(struct console *c,
                          void (*fn)(void *arg, const struct console_entry_view *e), void *arg)
{
    pthread_mutex_lock(&c->lock);
    c->listener = fn;
    c->listener_arg = arg;
    pthread_mutex_unlock(&c->lock);
}

uint64_t console_appendf(struct console *c, enum console_level level, enum console_source src,
                         uint64_t pid, const char *fmt, ...)
{
    char small[512], *big = NULL;
    const char *text = small;
    va_list ap;
    int n;
    size_t len;
    uint64_t id;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(small)) {
        va_start(ap, fmt);
        if (vasprintf(&big, fmt, ap) >= 0)
            text = big;
        else
            n = (int)sizeof(small) - 1;
        va_end(ap);
    }
    len = (size_t)n;
    if (len && text[len - 1] == '\n')
        len--;
    id = console_append(c, level, src, pid, NULL, 0, text, len);
    free(big);
    return id;
}

/* ---- queries ---- */

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

static bool matches(const struct entry *e, const struct console_query *q)
{
    return e->id > q->since_id && e->ts_ms >= q->since_ts_ms &&
           (q->level < 0 || e->level == q->level) && (q->source < 0 || e->source == q->source) &&
           (!q->pid || e->pid == q->pid);
}

static cJSON *entry_json(const struct entry *e)
{
    cJSON *o = cJSON_CreateObject();
    char ts[40], src[96];
    bool mcp = e->source == CONSOLE_SRC_MCP;

    format_ts(e->ts_ms, ts, sizeof(ts));
    console_source_label(e->source, e->instance, src, sizeof(src));
    if (!cJSON_AddNumberToObject(o, "id", (double)e->id) || !cJSON_AddStringToObject(o, "ts", ts) ||
        !cJSON_AddStringToObject(o, "level", level_names[e->level]) ||
        !cJSON_AddStringToObject(o, "source", src) ||
        !cJSON_AddStringToObject(o, "message", e->msg) ||
        (e->pid && !cJSON_AddNumberToObject(o, "pid", (double)e->pid)) ||
        (e->instance && !mcp && !cJSON_AddStringToObject(o, "instance", e->instance))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The slot range [from, to) of the entries to return; lock held. When since_id is 0 the
 * newest `limit` matches are wanted (scan backwards), else the oldest after since_id. Sets
 * *hit_limit when matching entries remain beyond the range. */
static void select_range(struct console *c, const struct console_query *q, size_t limit,
                         size_t *from, size_t *to, bool *hit_limit)
{
    size_t n = 0, i;

    *hit_limit = false;
    if (q->since_id == 0) {
        for (i = c->count; i > 0 && n < limit; i--)
            if (matches(slot(c, i - 1), q))
                n++;
        *from = i;
        *to = c->count;
        return;
    }
    for (i = 0; i < c->count && slot(c, i)->id <= q->since_id; i++)
        ;
    *from = i;
    for (; i < c->count; i++) {
        if (!matches(slot(c, i), q))
            continue;
        if (n == limit) {
            *hit_limit = true;
            break;
        }
        n++;
    }
    *to = i;
}

cJSON *console_query_json(struct console *c, const struct console_query *q)
{
    cJSON *res = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(res, "entries");
    size_t limit = q->limit ? q->limit : QUERY_LIMIT_DEFAULT, from, to;
    uint64_t next = q->since_id, last = 0;
    bool hit_limit, ok = arr != NULL;

    pthread_mutex_lock(&c->lock);
    select_range(c, q, limit, &from, &to, &hit_limit);
    for (size_t i = from; ok && i < to; i++) {
        const struct entry *e = slot(c, i);
        cJSON *o;

        if (!matches(e, q))
            continue;
        o = entry_json(e);
        ok = o && cJSON_AddItemToArray(arr, o);
        if (!ok)
            cJSON_Delete(o);
        last = e->id;
    }
    /* Everything up to the newest entry was looked at unless the limit stopped us. */
    if (hit_limit)
        next = last;
    else if (c->next_id - 1 > next)
        next = c->next_id - 1;
    ok = ok && cJSON_AddNumberToObject(res, "next_since_id", (double)next) &&
         cJSON_AddBoolToObject(res, "dropped", c->dropped_max > q->since_id) &&
         cJSON_AddNumberToObject(res, "oldest_id", c->count ? (double)slot(c, 0)->id : 0) &&
         cJSON_AddNumberToObject(res, "latest_id", (double)(c->next_id - 1));
    pthread_mutex_unlock(&c->lock);
    if (!ok) {
        cJSON_Delete(res);
        return NULL;
    }
    return res;
}

char *console_recent_errors(struct console *c, size_t limit)
{
    struct jsonbuf b = JSONBUF_INIT((size_t)64 << 20);
    size_t from;
    char ts[40], src[96];

    pthread_mutex_lock(&c->lock);
    from = c->count > limit ? c->count - limit : 0;
    for (size_t i = from; i < c->count; i++) {
        const struct entry *e = slot(c, i);

        if (e->level != CONSOLE_ERROR)
            continue;
        format_ts(e->ts_ms, ts, sizeof(ts));
        if (b.len)
            jsonbuf_put(&b, "\n", 1, NULL);
        jsonbuf_puts(&b, "[", NULL);
        jsonbuf_puts(&b, ts, NULL);
        jsonbuf_puts(&b, "] [", NULL);
        jsonbuf_puts(&b, console_source_label(e->source, e->instance, src, sizeof(src)), NULL);
        jsonbuf_puts(&b, "] ", NULL);
        jsonbuf_put(&b, e->msg, e->len, NULL);
    }
    pthread_mutex_unlock(&c->lock);
    if (!b.len) {
        jsonbuf_cleanup(&b);
        return NULL;
    }
    return jsonbuf_take(&b, NULL);
}

size_t console_clear(struct console *c, int source)
{
    size_t dropped = 0, kept = 0;

    pthread_mutex_lock(&c->lock);
    /* Compact in place: kept entries move towards the head, keeping their order. */
    for (size_t i = 0; i < c->count; i++) {
        struct entry *e = slot(c, i);

        if (source < 0 || e->source == source) {
            c->bytes -= e->len;
            if (e->id > c->dropped_max)
                c->dropped_max = e->id;
            entry_clear(e);
            dropped++;
            continue;
        }
        if (kept != i) {
            *slot(c, kept) = *e;
            memset(e, 0, sizeof(*e));
        }
        kept++;
    }
    c->count = kept;
    pthread_mutex_unlock(&c->lock);
    return dropped;
}

uint64_t console_latest_id(struct console *c)
{
    uint64_t id;

    pthread_mutex_lock(&c->lock);
    id = c->next_id - 1;
    pthread_mutex_unlock(&c->lock);
    return id;
}

uint64_t console_oldest_id(struct console *c)
{
    uint64_t id;

    pthread_mutex_lock(&c->lock);
    id = c->count ? slot(c, 0)->id : 0;
    pthread_mutex_unlock(&c->lock);
    return id;
}
