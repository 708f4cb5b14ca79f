/* daemon/opcache.c - retry safety (see opcache.h).
 *
 * DESIGN: a small ring of OPCACHE_MAX entries under one mutex; an entry is RUNNING from the
 * claim until finish, then DONE with a copy of the answer until the window passes or the ring
 * needs the slot (the oldest DONE entry goes first; a RUNNING one is never reused). A second
 * call while the first runs waits on the ring's condition variable (CLOCK_MONOTONIC), listed as
 * a waiter that opcache_cancel() can end. */
#include "opcache.h"
#include "clocks.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEY_MAX 200 /* tool + '\n' + operation id (tools are 128 bytes at most, ids 64) */
#define ID_MAX  64  /* call ids, bytes with the NUL */

enum op_state { OP_FREE, OP_RUNNING, OP_DONE };

struct op {
    enum op_state state;
    char key[KEY_MAX];
    int64_t done_ms; /* monotonic, when it became DONE */
    struct opcache_answer ans;
};

#define EARLY_RING 16 /* ids cancelled before their claim came */

/* A claim waiting for the first call of its operation (on the claimer's stack). */
struct waiter {
    struct waiter *next;
    const char *call_id;
    bool cancelled;
};

struct opcache {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    struct op ops[OPCACHE_MAX];
    struct waiter *waiters;
    char early[EARLY_RING][ID_MAX];
    size_t early_next;
};

struct opcache *opcache_new(void)
{
    struct opcache *o = calloc(1, sizeof(*o));
    int rc;

    if (!o)
        return NULL;
    rc = clocks_cond_init(&o->cond);
    if (rc != 0 || pthread_mutex_init(&o->mu, NULL) != 0) {
        if (rc == 0)
            pthread_cond_destroy(&o->cond);
        free(o);
        return NULL;
    }
    return o;
}

void opcache_free(struct opcache *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < OPCACHE_MAX; i++)
        opcache_answer_cleanup(&o->ops[i].ans);
    pthread_cond_destroy(&o->cond);
    pthread_mutex_destroy(&o->mu);
    free(o);
}

static void make_key(char *key, const char *tool, const char *op)
{
    snprintf(key, KEY_MAX, "%s\n%s", tool, op);
}

/* The entry for key (mu held), forgetting DONE entries past the window on the way. */
static struct op *find(struct opcache *o, const char *key, int64_t now)
{
    struct op *hit = NULL;

    for (size_t i = 0; i < OPCACHE_MAX; i++) {
        struct op *e = &o->ops[i];

        if (e->state == OP_DONE && now - e->done_ms >= OPCACHE_WINDOW_MS) {
            opcache_answer_cleanup(&e->ans);
            e->state = OP_FREE;
        }
        if (e->state != OP_FREE && strcmp(e->key, key) == 0)
            hit = e;
    }
    return hit;
}

/* A slot for a new entry (mu held): a free one, else the oldest DONE one; NULL when every
 * slot runs. */
static struct op *slot(struct opcache *o)
{
    struct op *best = NULL;

    for (size_t i = 0; i < OPCACHE_MAX; i++) {
        struct op *e = &o->ops[i];

        if (e->state == OP_FREE)
            return e;
        if (e->state == OP_DONE && (!best || e->done_ms < best->done_ms))
            best = e;
    }
    if (best)
        opcache_answer_cleanup(&best->ans);
    return best;
}

void opcache_answer_cleanup(struct opcache_answer *a)
{
    free(a->data);
    free(a->structured);
    memset(a, 0, sizeof(*a));
}

static int copy_answer(struct opcache_answer *dst, const struct opcache_answer *src)
{
    *dst = *src;
    dst->structured = NULL;
    dst->data = malloc(src->len + 1);
    if (!dst->data)
        return -1;
    memcpy(dst->data, src->data, src->len);
    dst->data[src->len] = '\0';
    if (src->structured && !(dst->structured = strdup(src->structured))) {
        opcache_answer_cleanup(dst);
        return -1;
    }
    return 0;
}

static void busy_reply(struct opcache_answer *out, const char *op)
{
    char msg[300];

    snprintf(msg, sizeof(msg),
             "operation_id %.64s is still running (its first call has not been answered); wait "
             "for that answer or read back before repeating",
             op);
    memset(out, 0, sizeof(*out));
    out->kind = ERR_UNAVAILABLE;
    out->data = strdup(msg);
    out->len = out->data ? strlen(out->data) : 0;
}

static void cancelled_reply(struct opcache_answer *out, const char *op)
{
    char msg[300];

    snprintf(msg, sizeof(msg),
             "cancelled while waiting for the first call with operation_id %.64s (it still "
             "runs); this call did nothing",
             op);
    memset(out, 0, sizeof(*out));
    out->kind = ERR_CANCELLED;
    out->data = strdup(msg);
    out->len = out->data ? strlen(out->data) : 0;
}

/* True when call_id was cancelled before its claim came (mu held). */
static bool cancelled_early(const struct opcache *o, const char *call_id)
{
    for (size_t i = 0; i < EARLY_RING; i++)
        if (strcmp(o->early[i], call_id) == 0)
            return true;
    return false;
}

static void unlink_waiter(struct opcache *o, const struct waiter *w)
{
    for (struct waiter **pp = &o->waiters; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            return;
        }
}

enum opcache_claim opcache_claim(struct opcache *o, const char *tool, const char *op,
                                 const char *call_id, int64_t wait_ms, struct opcache_answer *out)
{
    char key[KEY_MAX];
    int64_t until = clocks_mono_ms() + wait_ms;
    enum opcache_claim res = OPCACHE_RUN;
    struct waiter me = {.call_id = call_id};
    bool listed = false;

    make_key(key, tool, op);
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&o->mu);
    for (;;) {
        int64_t now = clocks_mono_ms();
        struct op *e = find(o, key, now);
        struct timespec ts;

        if (!e) {
            e = slot(o);
            if (e) { /* with every slot running, the call runs unprotected */
                e->state = OP_RUNNING;
                memcpy(e->key, key, sizeof(e->key));
            }
            break;
        }
        if (e->state == OP_DONE) {
            res = copy_answer(out, &e->ans) == 0 ? OPCACHE_REPLAY : OPCACHE_BUSY;
            break;
        }
        if (me.cancelled || (!listed && cancelled_early(o, call_id))) {
            res = OPCACHE_CANCELLED;
            break;
        }
        if (now >= until) {
            res = OPCACHE_BUSY;
            break;
        }
        if (!listed) {
            me.next = o->waiters;
            o->waiters = &me;
            listed = true;
        }
        ts = clocks_at(until);
        (void)pthread_cond_timedwait(&o->cond, &o->mu, &ts);
    }
    if (listed)
        unlink_waiter(o, &me);
    pthread_mutex_unlock(&o->mu);
    if (res == OPCACHE_BUSY)
        busy_reply(out, op);
    else if (res == OPCACHE_CANCELLED)
        cancelled_reply(out, op);
    return res;
}

bool opcache_cancel(struct opcache *o, const char *call_id)
{
    struct waiter *w;

    pthread_mutex_lock(&o->mu);
    for (w = o->waiters; w; w = w->next)
        if (strcmp(w->call_id, call_id) == 0)
            break;
    if (w) {
        w->cancelled = true;
        pthread_cond_broadcast(&o->cond);
    } else {
        snprintf(o->early[o->early_next], ID_MAX, "%s", call_id);
        o->early_next = (o->early_next + 1) % EARLY_RING;
    }
    pthread_mutex_unlock(&o->mu);
    return w != NULL;
}

void opcache_finish(struct opcache *o, const char *tool, const char *op,
                    const struct opcache_answer *rep, bool keep)
{
    char key[KEY_MAX];
    struct op *e;

    make_key(key, tool, op);
    pthread_mutex_lock(&o->mu);
    e = find(o, key, clocks_mono_ms());
    if (e && e->state == OP_RUNNING) {
        if (keep && rep->data && copy_answer(&e->ans, rep) == 0) {
            e->state = OP_DONE;
            e->done_ms = clocks_mono_ms();
        } else {
            e->state = OP_FREE;
        }
    }
    pthread_cond_broadcast(&o->cond);
    pthread_mutex_unlock(&o->mu);
}
