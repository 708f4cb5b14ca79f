/* mcp-proxy/proxy_lines.c - stdin framing for the proxy: bytes in, complete lines out.
 *
 * The buffer only ever holds the unfinished tail of the stream. Lines are delivered straight
 * from the buffer (no copy), and the remainder is moved to the front once per commit. A line
 * that outgrows the limit is not kept: the buffer is dropped and only its length is counted
 * until its newline arrives, so a 50 MB line costs at most limit + one read of memory. */
#include "proxy.h"

#include <stdlib.h>
#include <string.h>

/* A buffer larger than this is given back once the long line it held is done. Large enough
 * for a read of 64 KiB plus a typical pending message. */
#define LINES_KEEP ((size_t)128 * 1024)

void proxy_lines_init(struct proxy_lines *pl, size_t limit)
{
    memset(pl, 0, sizeof(*pl));
    pl->limit = limit;
}

void proxy_lines_cleanup(struct proxy_lines *pl)
{
    free(pl->buf);
    memset(pl, 0, sizeof(*pl));
}

size_t proxy_lines_pending(const struct proxy_lines *pl)
{
    return pl->len;
}

size_t proxy_lines_capacity(const struct proxy_lines *pl)
{
    return pl->cap;
}

char *proxy_lines_space(struct proxy_lines *pl, size_t want, size_t *avail, struct errinfo *err)
{
    size_t need = pl->len + want;

    if (need > pl->cap) {
        size_t cap = pl->cap ? pl->cap * 2 : LINES_KEEP;
        size_t ceiling = pl->limit + 1 + want; /* more is never held (see commit) */
        char *nb;

        if (cap > ceiling)
            cap = ceiling;
        if (cap < need)
            cap = need;
        nb = realloc(pl->buf, cap);
        if (!nb) {
            errinfo_set(err, ERR_NOMEM, "proxy: no memory for a %zu-byte stdin buffer", cap);
            return NULL;
        }
        pl->buf = nb;
        pl->cap = cap;
    }
    *avail = pl->cap - pl->len;
    return pl->buf + pl->len;
}

static void deliver(const struct proxy_lines *pl, const char *line, size_t len,
                    const struct proxy_lines_sink *sink)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len == 0)
        return;
    if (len > pl->limit) {
        sink->oversized(sink->ctx, len);
        return;
    }
    sink->line(sink->ctx, line, len);
}

/* Gives memory back after a long line, so one huge message does not stay resident. */
static void maybe_shrink(struct proxy_lines *pl)
{
    char *nb;

    if (pl->cap <= LINES_KEEP || pl->len > LINES_KEEP / 2)
        return;
    if (pl->len == 0) {
        free(pl->buf);
        pl->buf = NULL;
        pl->cap = 0;
        return;
    }
    nb = realloc(pl->buf, LINES_KEEP);
    if (nb) { /* on failure the larger buffer simply stays */
        pl->buf = nb;
        pl->cap = LINES_KEEP;
    }
}

/* While skipping an oversized line the buffer holds only new bytes (len was 0 before them).
 * Returns where normal lines start in buf, or len when the newline has not come yet. */
static size_t skip_oversized(struct proxy_lines *pl, const struct proxy_lines_sink *sink)
{
    const char *nl = memchr(pl->buf, '\n', pl->len);
    size_t skip;

    if (!nl) {
        pl->discarded += pl->len;
        return pl->len;
    }
    skip = (size_t)(nl - pl->buf);
    pl->discarded += skip;
    if (skip > 0 && pl->buf[skip - 1] == '\r')
        pl->discarded--; /* report the line as deliver() would measure it */
    sink->oversized(sink->ctx, pl->discarded);
    pl->discarding = false;
    pl->discarded = 0;
    return skip + 1;
}

void proxy_lines_commit(struct proxy_lines *pl, size_t n, const struct proxy_lines_sink *sink)
{
    size_t start = 0, pos, rest;

    pl->len += n;
    if (pl->discarding) {
        start = skip_oversized(pl, sink);
        pos = start;
    } else {
        pos = pl->scanned;
    }
    while (!pl->discarding && pos < pl->len) {
        const char *nl = memchr(pl->buf + pos, '\n', pl->len - pos);
        size_t end;

        if (!nl)
            break;
        end = (size_t)(nl - pl->buf);
        deliver(pl, pl->buf + start, end - start, sink);
        start = end + 1;
        pos = start;
    }
    rest = pl->discarding ? 0 : pl->len - start;
    /* limit + 1 leaves room for the '\r' of a line of exactly limit bytes. */
    if (rest > pl->limit + 1) {
        pl->discarding = true;
        pl->discarded = rest;
        rest = 0;
    } else if (start > 0 && rest > 0) {
        memmove(pl->buf, pl->buf + start, rest);
    }
    pl->len = rest;
    pl->scanned = rest;
    maybe_shrink(pl);
}

int proxy_lines_feed(struct proxy_lines *pl, const char *data, size_t n,
                     const struct proxy_lines_sink *sink, struct errinfo *err)
{
    while (n > 0) {
        size_t chunk = n < LINES_KEEP / 2 ? n : LINES_KEEP / 2;
        size_t avail;
        char *space = proxy_lines_space(pl, chunk, &avail, err);

        if (!space)
            return -1;
        memcpy(space, data, chunk);
        proxy_lines_commit(pl, chunk, sink);
        data += chunk;
        n -= chunk;
    }
    return 0;
}

void proxy_lines_finish(struct proxy_lines *pl, const struct proxy_lines_sink *sink)
{
    if (pl->discarding) {
        sink->oversized(sink->ctx, pl->discarded);
    } else if (pl->len > 0) {
        deliver(pl, pl->buf, pl->len, sink);
    }
    pl->discarding = false;
    pl->discarded = 0;
    pl->len = 0;
    pl->scanned = 0;
    maybe_shrink(pl);
}
