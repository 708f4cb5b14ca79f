/* common/sse.c - the Server-Sent Events reader (see sse.h).
 *
 * Bytes are cut into lines (the unfinished one kept in `line`); each complete line is one field,
 * processed at once, so memory is the longest line plus the current event's data. */
#include "sse.h"

#include <stdlib.h>
#include <string.h>

void sse_init(struct sse_parser *p, size_t limit)
{
    memset(p, 0, sizeof(*p));
    p->limit = limit ? limit : SSE_EVENT_MAX;
}

void sse_cleanup(struct sse_parser *p)
{
    free(p->line);
    free(p->data);
    sse_init(p, p->limit);
}

static bool grow(char **buf, size_t *cap, size_t need)
{
    size_t c = *cap ? *cap : 256;
    char *nb;

    if (need <= *cap)
        return true;
    while (c < need)
        c *= 2;
    nb = realloc(*buf, c);
    if (!nb)
        return false;
    *buf = nb;
    *cap = c;
    return true;
}

static void reset_event(struct sse_parser *p)
{
    p->data_len = 0;
    p->has_data = false;
    p->too_long = false;
    p->event[0] = '\0';
}

/* One complete line (without its end). Returns false to stop. */
static bool on_line(struct sse_parser *p, const char *s, size_t n, sse_event_fn fn, void *ctx,
                    bool *failed)
{
    const char *colon, *value;
    size_t flen, vlen;

    if (n == 0) {
        bool go = true;

        if (p->too_long) {
            p->dropped++;
        } else if (p->has_data) {
            struct sse_event ev = {.event = p->event[0] ? p->event : "message",
                                   .data = p->data ? p->data : "",
                                   .data_len = p->data_len,
                                   .id = p->id};

            if (!p->data && !grow(&p->data, &p->data_cap, 1)) {
                *failed = true;
                return false;
            }
            p->data[p->data_len] = '\0';
            ev.data = p->data;
            go = fn(ctx, &ev);
        }
        reset_event(p);
        return go;
    }
    if (s[0] == ':')
        return true; /* a comment */
    colon = memchr(s, ':', n);
    flen = colon ? (size_t)(colon - s) : n;
    value = colon ? colon + 1 : s + n;
    vlen = n - (size_t)(value - s);
    if (vlen && value[0] == ' ') {
        value++;
        vlen--;
    }
    if (flen == 4 && memcmp(s, "data", 4) == 0) {
        size_t need = p->data_len + (p->has_data ? 1 : 0) + vlen;

        if (p->too_long || need > p->limit) {
            p->too_long = true;
            return true;
        }
        if (!grow(&p->data, &p->data_cap, need + 1)) {
            *failed = true;
            return false;
        }
        if (p->has_data)
            p->data[p->data_len++] = '\n';
        memcpy(p->data + p->data_len, value, vlen);
        p->data_len += vlen;
        p->has_data = true;
    } else if (flen == 5 && memcmp(s, "event", 5) == 0) {
        size_t k = vlen < sizeof(p->event) - 1 ? vlen : sizeof(p->event) - 1;

        memcpy(p->event, value, k);
        p->event[k] = '\0';
    } else if (flen == 2 && memcmp(s, "id", 2) == 0) {
        if (!memchr(value, '\0', vlen) && vlen < sizeof(p->id)) {
            memcpy(p->id, value, vlen);
            p->id[vlen] = '\0';
        }
    }
    return true;
}

bool sse_feed(struct sse_parser *p, const char *bytes, size_t len, sse_event_fn fn, void *ctx)
{
    bool failed = false;

    for (size_t i = 0; i < len;) {
        const char *start = bytes + i;
        size_t rest = len - i, k = 0;

        if (p->skip_lf) {
            p->skip_lf = false;
            if (*start == '\n') {
                i++;
                continue;
            }
        }
        while (k < rest && start[k] != '\n' && start[k] != '\r')
            k++;
        if (k == rest) {
            /* No line end yet: keep the piece (bounded by the limit plus a field name). */
            if (p->line_len + k > p->limit + 64) {
                p->too_long = true;
                p->line_len = 0;
            } else if (!grow(&p->line, &p->line_cap, p->line_len + k + 1)) {
                return false;
            } else {
                memcpy(p->line + p->line_len, start, k);
                p->line_len += k;
            }
            return true;
        }
        p->skip_lf = start[k] == '\r';
        if (p->line_len) {
            if (!grow(&p->line, &p->line_cap, p->line_len + k + 1))
                return false;
            memcpy(p->line + p->line_len, start, k);
            p->line_len += k;
            if (!on_line(p, p->line, p->line_len, fn, ctx, &failed)) {
                p->line_len = 0;
                return false;
            }
            p->line_len = 0;
        } else if (!on_line(p, start, k, fn, ctx, &failed)) {
            return false;
        }
        i += k + 1;
    }
    return !failed;
}
