/* daemon/startgate.c - how many stdio MCP servers start at once (see startgate.h).
 *
 * Each slot has a generation; a ticket is the slot's index and its generation when taken, so
 * leaving with a ticket whose slot was taken back (and perhaps given to another server since)
 * does nothing. A waiter that finds every slot held sleeps until the first of them reaches its
 * hold time, takes that one back, and goes on looking. */
#include "startgate.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "clocks.h"

struct slot {
    uint32_t gen; /* bumped at every take; tickets carry it */
    bool held;
    int64_t until; /* mono ms when a held slot is taken back */
};

struct startgate {
    pthread_mutex_t mu;
    pthread_cond_t cond; /* a slot was given back, or the gate closed */
    bool closed;
    int hold_ms;
    unsigned n;
    struct slot slots[];
};

struct startgate *startgate_new(unsigned slots, int hold_ms, struct errinfo *err)
{
    struct startgate *g;

    if (slots < 1)
        slots = 1;
    g = calloc(1, sizeof(*g) + slots * sizeof(g->slots[0]));
    if (!g) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the MCP servers' start gate");
        return NULL;
    }
    pthread_mutex_init(&g->mu, NULL);
    clocks_cond_init(&g->cond);
    g->hold_ms = hold_ms;
    g->n = slots;
    return g;
}

void startgate_free(struct startgate *g)
{
    if (!g)
        return;
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

uint64_t startgate_enter(struct startgate *g)
{
    uint64_t ticket = 0;

    pthread_mutex_lock(&g->mu);
    while (!g->closed) {
        int64_t now = clocks_mono_ms(), first = INT64_MAX;
        unsigned pick = g->n;

        for (unsigned i = 0; i < g->n && pick == g->n; i++) {
            if (g->slots[i].held && g->slots[i].until <= now)
                g->slots[i].held = false; /* held too long: taken back */
            if (!g->slots[i].held)
                pick = i;
            else if (g->slots[i].until < first)
                first = g->slots[i].until;
        }
        if (pick < g->n) {
            struct slot *s = &g->slots[pick];

            s->held = true;
            s->gen++;
            s->until = now + g->hold_ms;
            ticket = ((uint64_t)s->gen << 32) | (pick + 1);
            break;
        }
        {
            struct timespec until = clocks_deadline(first - now);

            pthread_cond_timedwait(&g->cond, &g->mu, &until);
        }
    }
    pthread_mutex_unlock(&g->mu);
    return ticket;
}

void startgate_leave(struct startgate *g, uint64_t ticket)
{
    uint32_t index = (uint32_t)ticket, gen = (uint32_t)(ticket >> 32);

    if (!g || index == 0 || index > g->n)
        return;
    pthread_mutex_lock(&g->mu);
    if (g->slots[index - 1].held && g->slots[index - 1].gen == gen) {
        g->slots[index - 1].held = false;
        pthread_cond_signal(&g->cond);
    }
    pthread_mutex_unlock(&g->mu);
}

void startgate_close(struct startgate *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->closed = true;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->mu);
}

unsigned startgate_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    return n < 2 ? 2 : n > 1024 ? 1024 : (unsigned)n;
}
