/* common/mcp_calls.c - the table of tools/call requests in flight (see mcp_int.h).
 *
 * A chained hash table keyed by the compact JSON text of a request id, FNV-1a hashed; the
 * bucket count is a power of two and doubles when the calls outnumber the buckets. The calls
 * themselves are the chain links, so adding and removing allocate nothing but buckets. */
#include "mcp_int.h"

#include <stdlib.h>
#include <string.h>

uint32_t mcp_calls_hash(const char *p, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 16777619u;
    }
    return h;
}

struct mcp_call *mcp_calls_find(const struct mcp_calls *t, const char *id, size_t len)
{
    struct mcp_call *c;

    if (!t->nbuckets)
        return NULL;
    c = t->buckets[mcp_calls_hash(id, len) & (t->nbuckets - 1)];
    for (; c; c = c->next)
        if (c->id_len == len && memcmp(c->id_text, id, len) == 0)
            return c;
    return NULL;
}

static int calls_grow(struct mcp_calls *t)
{
    size_t n = t->nbuckets ? t->nbuckets * 2 : 16;
    struct mcp_call **nb = calloc(n, sizeof(*nb));

    if (!nb)
        return -1;
    for (size_t i = 0; i < t->nbuckets; i++) {
        while (t->buckets[i]) {
            struct mcp_call *c = t->buckets[i];

            t->buckets[i] = c->next;
            c->next = nb[c->hash & (n - 1)];
            nb[c->hash & (n - 1)] = c;
        }
    }
    free(t->buckets);
    t->buckets = nb;
    t->nbuckets = n;
    return 0;
}

int mcp_calls_add(struct mcp_calls *t, struct mcp_call *c)
{
    struct mcp_call **slot;

    if (t->count >= t->nbuckets && calls_grow(t) < 0 && !t->nbuckets)
        return -1; /* a failed grow with buckets present just makes chains longer */
    slot = &t->buckets[c->hash & (t->nbuckets - 1)];
    c->next = *slot;
    *slot = c;
    t->count++;
    return 0;
}

void mcp_calls_remove(struct mcp_calls *t, struct mcp_call *c)
{
    struct mcp_call **pp = &t->buckets[c->hash & (t->nbuckets - 1)];

    for (; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            t->count--;
            return;
        }
    }
}
