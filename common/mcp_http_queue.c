/* common/mcp_http_queue.c - the queue of messages waiting for one client of the HTTP transport
 * (a response stream, a WebSocket connection): pure list work, no lock (its owner's) and no I/O.
 *
 * DESIGN
 * Progress is a "latest value" signal, so a notifications/progress queued while an earlier one
 * for the same progress token still waits does not add to the queue: it takes the waiting one's
 * place (its slot) and is written there, in the queue position of the one it replaced. A flood
 * of progress (an upstream server reporting 200 000 steps faster than the client reads) then
 * holds one message per token, and cannot fill the queue up to its limit and get the stream
 * closed before the answer comes. What the client sees stays right: the progress of a token is
 * written in the order it was queued, every value newer than the last, and a replacement moves
 * earlier in the queue, never behind an answer queued after it. Other messages (logs, answers,
 * requests to the client) are never dropped or reordered; they are what the limit is for.
 *
 * A slot is a waiting progress notification, listed in q->slots; the newest text for its token
 * hangs off it (m->newer) until the owner takes it. At most MCP_HTTP_QUEUE_SLOTS tokens wait at
 * once (a stream serves one request, a session's stream the few in flight): past that progress
 * is queued as it comes, so that a search of the slots stays short. */
#include "mcp_http_int.h"

#include <stdlib.h>
#include <string.h>

/* The start of every progress notification the engine builds (mcp_call_progress()): compact
 * JSON, its members in this order, the token next. */
static const char progress_head[] =
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":";

bool mcp_http__progress_token(const char *json, size_t len, size_t *off, size_t *tlen)
{
    size_t start = sizeof(progress_head) - 1, i = start;

    if (len <= start || memcmp(json, progress_head, start) != 0)
        return false;
    if (json[i] == '"') { /* a string: to its closing quote */
        for (i++; i < len && json[i] != '"'; i++)
            if (json[i] == '\\')
                i++;
        if (i >= len)
            return false;
        i++;
    } else { /* a number */
        while (i < len && json[i] != ',' && json[i] != '}')
            i++;
    }
    if (i == start || i >= len)
        return false;
    *off = start;
    *tlen = i - start;
    return true;
}

/* The slot waiting for m's progress token, or NULL. */
static struct qmsg *slot_of(const struct mqueue *q, const struct qmsg *m)
{
    for (struct qmsg *s = q->slots; s; s = s->next_slot)
        if (s->token_len == m->token_len &&
            memcmp(s->text + s->token_off, m->text + m->token_off, m->token_len) == 0)
            return s;
    return NULL;
}

/* The length of what slot s will write. */
static size_t slot_len(const struct qmsg *s)
{
    return s->newer ? s->newer->len : s->len;
}

int mcp_http__queue_push(struct mqueue *q, struct qmsg *m, size_t max)
{
    struct qmsg *s = NULL;
    size_t was = 0;

    m->next = m->newer = m->next_slot = NULL;
    m->token_len = 0;
    if (m->kind == MCP_ROUTE_REQUEST &&
        mcp_http__progress_token(m->text, m->len, &m->token_off, &m->token_len)) {
        s = slot_of(q, m);
        was = s ? slot_len(s) : 0;
    }
    if (q->bytes - was + m->len > max) {
        free(m);
        return -1;
    }
    q->bytes = q->bytes - was + m->len;
    if (s) { /* the newer value waits in the older one's place */
        free(s->newer);
        s->newer = m;
        return 0;
    }
    if (m->token_len && q->nslots < MCP_HTTP_QUEUE_SLOTS) {
        m->next_slot = q->slots;
        q->slots = m;
        q->nslots++;
    }
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
    return 0;
}

struct qmsg *mcp_http__queue_pop(struct mqueue *q)
{
    struct qmsg *m = q->head;

    if (!m)
        return NULL;
    q->head = m->next;
    if (!q->head)
        q->tail = NULL;
    m->next = NULL;
    for (struct qmsg **pp = &q->slots; m->token_len && *pp; pp = &(*pp)->next_slot)
        if (*pp == m) {
            *pp = m->next_slot;
            q->nslots--;
            break;
        }
    q->bytes -= slot_len(m);
    if (m->newer) {
        struct qmsg *n = m->newer;

        free(m);
        m = n;
    }
    m->next_slot = NULL;
    return m;
}

void mcp_http__queue_prepend(struct mqueue *q, struct qmsg *head, struct qmsg *tail, size_t bytes)
{
    if (!head)
        return;
    tail->next = q->head;
    if (!q->head)
        q->tail = tail;
    q->head = head;
    q->bytes += bytes;
}

void mcp_http__queue_cleanup(struct mqueue *q)
{
    while (q->head) {
        struct qmsg *m = q->head;

        q->head = m->next;
        free(m->newer);
        free(m);
    }
    memset(q, 0, sizeof(*q));
}
