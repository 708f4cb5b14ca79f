/* daemon/bridge.c - the Studio bridge's queue, instances and waits (see bridge.h).
 *
 * DESIGN: one mutex `mu` guards the whole struct: the instance table, the command list, the
 * ring of finished ids and the closing flag. A command lives in the list from bridge_call until
 * its own caller unlinks it; its state goes QUEUED -> SENT (a poll took it) -> DONE (result,
 * failure or deadline), and only the thread that moves it to DONE writes its outcome. Each call
 * waits on the command's own condition variable; polls wait on the shared `poll_cond`, which
 * every new command broadcasts (few instances, so a broadcast costs little).
 *
 * Lock rules: `mu` is held only to copy in or out and to change state; nothing under it logs,
 * allocates large buffers, or does I/O (log lines are built from copies after unlocking). Every
 * condition wait sits in a loop that re-checks its predicate and the clock. There is no other
 * lock in this module, so there is no lock order to keep; callers must not hold a lock of their
 * own across bridge_call or bridge_poll, which block.
 *
 * Instances are pruned lazily: every operation first drops the instances that have not started
 * a poll within stale_ms and fails the commands addressed to them.
 *
 * Fairness: each command carries its caller's client name (bridge_call_for). A poll takes, of
 * the commands queued for its instance, the oldest one of the client served least recently
 * (clients[]: when each was last handed a command), so several clients' calls to one Studio
 * take turns (round robin) instead of the first client's burst going first. */
#include "bridge.h"
#include "bridge_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clocks.h"
#include "log.h"
#include "opcache.h"

#define FINISHED_RING 128  /* recently finished command ids, to tell late answers from unknown */
#define TOMBS         8    /* recently disconnected instances */
#define TOMB_MS       2000 /* how long a disconnected instance's polls are not registered */
#define RECENT_MAX    10   /* finished commands /health lists ("recent"), newest first */
#define CANCEL_RING   16   /* ids cancelled before their command was queued */

static const char connect_help[] =
    "Roblox Studio is not connected: no Studio plugin has polled runboxd in the last 20 s. In "
    "Studio, install the Runbox plugin, allow its HTTP requests, and click Connect in the Runbox "
    "widget (see docs/plugin.md).";

enum cmd_state { CMD_QUEUED, CMD_SENT, CMD_DONE };

struct cmd {
    struct cmd *next;
    char id[BRIDGE_ID_MAX];
    char target[BRIDGE_ID_MAX]; /* the instance it is addressed to */
    char client[BRIDGE_ID_MAX]; /* the caller's client name ("" when it gave none) */
    char *tool;                 /* owned */
    char *args_json;            /* owned; handed to the poll that takes it */
    enum cmd_state state;
    int64_t deadline_ms; /* bridge clock */
    int64_t budget_ms;   /* deadline_ms - the time it was queued */
    size_t ahead;        /* commands for the same instance running when it came, plus those
                            handed over while it waited */
    pthread_cond_t cond;
    struct bridge_reply reply; /* written by whoever moves the state to DONE */
};

/* A ring of finished commands, newest at next - 1. */
struct recent {
    struct {
        char tool[BRIDGE_TEXT_MAX];
        char target[BRIDGE_ID_MAX];
        enum errinfo_kind kind; /* ERR_NONE: the plugin answered ok */
        int64_t done_ms, duration_ms;
    } item[RECENT_MAX];
    size_t next, n;
};

struct instance {
    int64_t last_poll_ms; /* when it last started a poll */
    int64_t last_end_ms;  /* when its last poll ended */
    uint64_t order;       /* registration order: the oldest edit instance becomes active */
    enum bridge_role role;
    int waiting; /* its polls waiting now */
    char id[BRIDGE_ID_MAX];
    char place[BRIDGE_TEXT_MAX];
    char name[BRIDGE_TEXT_MAX];
    char parent[BRIDGE_ID_MAX]; /* a test server's edit instance, or "" */
};

struct bridge {
    pthread_mutex_t mu;
    pthread_cond_t poll_cond;
    struct instance inst[BRIDGE_INSTANCES_MAX];
    size_t ninst;
    uint64_t next_order;
    char active[BRIDGE_ID_MAX]; /* "" when there is no edit instance */
    struct cmd *head, *tail;
    size_t depth; /* commands not DONE */
    char finished[FINISHED_RING][BRIDGE_ID_MAX];
    size_t fin_next;
    /* A poll the plugin sent just before its /disconnect may be served after it; it must not
     * register the instance again (it would linger as a ghost for stale_ms). */
    struct {
        char id[BRIDGE_ID_MAX];
        int64_t until;
    } tombs[TOMBS];
    size_t tomb_next;
    bool closing;
    int poll_window_ms, stale_ms, deadline_ms;
    size_t queue_max;
    int64_t (*clock_ms)(void *arg);
    void *clock_arg;
    struct opcache *ops;  /* operation_id answers (own lock; never used under mu) */
    struct recent recent; /* the last commands that finished, for /health and the status page */
    /* Round robin: when each client was last handed a command (serve_seq at that time). */
    struct {
        char name[BRIDGE_ID_MAX];
        uint64_t served;
    } clients[BRIDGE_CLIENTS_MAX];
    uint64_t serve_seq;
    /* Calls cancelled before their command was queued (the cancel hook ran first): their
     * command is refused when it comes. */
    char cancelled[CANCEL_RING][BRIDGE_ID_MAX];
    size_t cancel_next;
};

/* ---- time ---- */

static int64_t mono_ms(void *arg)
{
    (void)arg;
    return clocks_mono_ms();
}

static int64_t now_ms(const struct bridge *b)
{
    return b->clock_ms(b->clock_arg);
}

/* Waits on cond (mu held) until it is signalled or `until` (bridge clock) passes. The wait
 * itself always runs on the real CLOCK_MONOTONIC, for the distance left on the bridge clock.
 * Returns true when that real wait ran out (so a fake clock that stands still cannot hold a
 * poll forever). */
static bool wait_until(struct bridge *b, pthread_cond_t *cond, int64_t until)
{
    int64_t left = until - now_ms(b);
    struct timespec ts;

    if (left <= 0)
        return true;
    ts = clocks_deadline(left);
    return pthread_cond_timedwait(cond, &b->mu, &ts) == ETIMEDOUT;
}

/* ---- life ---- */

struct bridge *bridge_new(const struct bridge_options *opt, struct errinfo *err)
{
    struct bridge *b = calloc(1, sizeof(*b));

    if (!b) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the Studio bridge");
        return NULL;
    }
    b->poll_window_ms =
        opt && opt->poll_window_ms > 0 ? opt->poll_window_ms : BRIDGE_POLL_WINDOW_MS;
    b->stale_ms = opt && opt->stale_ms > 0 ? opt->stale_ms : BRIDGE_STALE_MS;
    b->deadline_ms = opt && opt->deadline_ms > 0 ? opt->deadline_ms : BRIDGE_DEADLINE_MS;
    b->queue_max = opt && opt->queue_max > 0 ? opt->queue_max : BRIDGE_QUEUE_MAX;
    b->clock_ms = opt && opt->clock_ms ? opt->clock_ms : mono_ms;
    b->clock_arg = opt ? opt->clock_arg : NULL;
    if (pthread_mutex_init(&b->mu, NULL) != 0) {
        free(b);
        errinfo_set(err, ERR_INTERNAL, "cannot create the Studio bridge's lock");
        return NULL;
    }
    if (clocks_cond_init(&b->poll_cond) != 0) {
        pthread_mutex_destroy(&b->mu);
        free(b);
        errinfo_set(err, ERR_INTERNAL, "cannot create the Studio bridge's condition variable");
        return NULL;
    }
    b->ops = opcache_new();
    if (!b->ops) {
        pthread_cond_destroy(&b->poll_cond);
        pthread_mutex_destroy(&b->mu);
        free(b);
        errinfo_set(err, ERR_NOMEM, "out of memory for the Studio bridge");
        return NULL;
    }
    return b;
}

void bridge_free(struct bridge *b)
{
    if (!b)
        return;
    /* Every command belongs to a running bridge_call, and none may run now. */
    opcache_free(b->ops);
    pthread_cond_destroy(&b->poll_cond);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

void bridge_reply_cleanup(struct bridge_reply *r)
{
    free(r->data);
    memset(r, 0, sizeof(*r));
}

void bridge_command_cleanup(struct bridge_command *cmd)
{
    free(cmd->tool);
    free(cmd->args_json);
    memset(cmd, 0, sizeof(*cmd));
}

/* ---- state changes (mu held) ---- */

static struct instance *find_instance(struct bridge *b, const char *id)
{
    for (size_t i = 0; i < b->ninst; i++)
        if (strcmp(b->inst[i].id, id) == 0)
            return &b->inst[i];
    return NULL;
}

/* Moves cmd to DONE with an error and wakes its caller. The message is cut to fit a line. */
static void finish_error(struct cmd *c, enum errinfo_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void finish_error(struct cmd *c, enum errinfo_kind kind, const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    c->state = CMD_DONE;
    c->reply.ok = false;
    c->reply.kind = kind;
    c->reply.data = strdup(buf); /* NULL (no memory) is reported by bridge_call */
    c->reply.len = c->reply.data ? strlen(buf) : 0;
    pthread_cond_signal(&c->cond);
}

/* Fails the commands addressed to an instance that is gone; why is "disconnected" or
 * "stopped polling". */
static void fail_commands_of(struct bridge *b, const char *inst, const char *why)
{
    for (struct cmd *c = b->head; c; c = c->next) {
        if (c->state == CMD_DONE || strcmp(c->target, inst) != 0)
            continue;
        b->depth--;
        if (c->state == CMD_SENT)
            finish_error(c, ERR_UNAVAILABLE,
                         "sent to Studio, no answer — it may have been applied; read back before "
                         "repeating (Studio instance %s %s while running %s)",
                         inst, why, c->tool);
        else
            finish_error(c, ERR_UNAVAILABLE,
                         "Studio instance %s %s before it took %s; nothing was sent, so it is "
                         "safe to retry once the plugin is connected again",
                         inst, why, c->tool);
    }
}

/* Picks the oldest edit instance as active when the active one is gone. */
static void fix_active(struct bridge *b)
{
    const struct instance *best = NULL;

    if (b->active[0] && find_instance(b, b->active))
        return;
    for (size_t i = 0; i < b->ninst; i++)
        if (b->inst[i].role == BRIDGE_ROLE_EDIT && (!best || b->inst[i].order < best->order))
            best = &b->inst[i];
    snprintf(b->active, sizeof(b->active), "%s", best ? best->id : "");
}

static void remove_instance(struct bridge *b, size_t i, const char *why)
{
    char id[BRIDGE_ID_MAX];

    memcpy(id, b->inst[i].id, sizeof(id));
    b->inst[i] = b->inst[--b->ninst];
    fail_commands_of(b, id, why);
    fix_active(b);
}

/* Drops the instances that have not started a poll within stale_ms. */
static void prune(struct bridge *b, int64_t now)
{
    for (size_t i = 0; i < b->ninst;) {
        if (now - b->inst[i].last_poll_ms >= b->stale_ms)
            remove_instance(b, i, "stopped polling");
        else
            i++;
    }
}

static void remember_finished(struct bridge *b, const char *id)
{
    snprintf(b->finished[b->fin_next], BRIDGE_ID_MAX, "%s", id);
    b->fin_next = (b->fin_next + 1) % FINISHED_RING;
}

static bool was_finished(const struct bridge *b, const char *id)
{
    for (size_t i = 0; i < FINISHED_RING; i++)
        if (strcmp(b->finished[i], id) == 0)
            return true;
    return false;
}

static void unlink_cmd(struct bridge *b, struct cmd *c)
{
    struct cmd **pp = &b->head, *prev = NULL;

    while (*pp && *pp != c) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    *pp = c->next;
    if (b->tail == c)
        b->tail = prev;
}

void bridge_shutdown(struct bridge *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    b->closing = true;
    for (struct cmd *c = b->head; c; c = c->next) {
        if (c->state == CMD_DONE)
            continue;
        b->depth--;
        finish_error(c, ERR_UNAVAILABLE, "runboxd is shutting down; %s was %s", c->tool,
                     c->state == CMD_SENT ? "sent to Studio and may have been applied"
                                          : "not sent to Studio");
    }
    pthread_cond_broadcast(&b->poll_cond);
    pthread_mutex_unlock(&b->mu);
}

void bridge_wake(struct bridge *b)
{
    pthread_mutex_lock(&b->mu);
    pthread_cond_broadcast(&b->poll_cond);
    for (struct cmd *c = b->head; c; c = c->next)
        pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&b->mu);
}

/* ---- polls ---- */

static void copy_text(char *dst, const char *src)
{
    snprintf(dst, BRIDGE_TEXT_MAX, "%s", src ? src : "");
}

/* Registers or refreshes inst (mu held). Returns the entry or NULL when the table is full. */
static struct instance *touch_instance(struct bridge *b, const struct bridge_instance_info *inst,
                                       int64_t now, bool *is_new)
{
    struct instance *in = find_instance(b, inst->id);

    *is_new = false;
    if (!in) {
        if (b->ninst == BRIDGE_INSTANCES_MAX)
            return NULL;
        in = &b->inst[b->ninst++];
        memset(in, 0, sizeof(*in));
        snprintf(in->id, sizeof(in->id), "%s", inst->id);
        in->order = b->next_order++;
        *is_new = true;
    }
    in->role = inst->role;
    copy_text(in->place, inst->place);
    copy_text(in->name, inst->name);
    snprintf(in->parent, sizeof(in->parent), "%s",
             inst->parent && bridge_id_ok(inst->parent) ? inst->parent : "");
    in->last_poll_ms = now;
    fix_active(b);
    return in;
}

/* Removes the edit instances that a newly polling edit instance `in` replaces: same place and
 * name, no poll waiting, last poll ended BRIDGE_REPLACE_MS ago (mu held). Returns how many. */
static int replace_old_selves(struct bridge *b, const struct instance *in, int64_t now)
{
    char id[BRIDGE_ID_MAX];
    int n = 0;

    if (in->role != BRIDGE_ROLE_EDIT)
        return 0;
    memcpy(id, in->id, sizeof(id));
    for (size_t i = 0; i < b->ninst;) {
        const struct instance *o = &b->inst[i];

        if (strcmp(o->id, id) != 0 && o->role == BRIDGE_ROLE_EDIT && o->waiting == 0 &&
            now - o->last_end_ms >= BRIDGE_REPLACE_MS && strcmp(o->place, in->place) == 0 &&
            strcmp(o->name, in->name) == 0) {
            remove_instance(b, i, "was replaced by a new plugin instance of the same place");
            n++;
        } else {
            i++;
        }
    }
    return n;
}

/* When client was last handed a command (0: never, or forgotten) (mu held). */
static uint64_t served_of(const struct bridge *b, const char *client)
{
    for (size_t i = 0; i < BRIDGE_CLIENTS_MAX; i++)
        if (b->clients[i].served && strcmp(b->clients[i].name, client) == 0)
            return b->clients[i].served;
    return 0;
}

/* Notes that client was handed a command now (mu held); with the table full, the client served
 * longest ago is forgotten (it then counts as never served, which only moves it forward). */
static void note_served(struct bridge *b, const char *client)
{
    size_t slot = 0;

    for (size_t i = 0; i < BRIDGE_CLIENTS_MAX; i++) {
        if (b->clients[i].served && strcmp(b->clients[i].name, client) == 0) {
            slot = i;
            break;
        }
        if (b->clients[i].served < b->clients[slot].served)
            slot = i;
    }
    memcpy(b->clients[slot].name, client, sizeof(b->clients[slot].name));
    b->clients[slot].served = ++b->serve_seq;
}

/* The next command for inst (mu held), or NULL: of the commands queued for it, the oldest one
 * of the client served least recently (round robin between clients; FIFO within one). */
static struct cmd *next_for(struct bridge *b, const char *inst)
{
    struct cmd *best = NULL;
    uint64_t best_served = 0;

    for (struct cmd *c = b->head; c; c = c->next) {
        uint64_t served;

        if (c->state != CMD_QUEUED || strcmp(c->target, inst) != 0)
            continue;
        served = served_of(b, c->client);
        if (!best || served < best_served) {
            best = c;
            best_served = served;
            if (served == 0)
                break; /* a client never served: nobody comes before it */
        }
    }
    return best;
}

/* Hands c to the poll (mu held): the args text moves to out, so it is never copied twice. The
 * commands still queued for the same instance count one more call ahead of them. */
static void hand_over(struct bridge *b, struct cmd *c, struct bridge_command *out)
{
    for (struct cmd *o = b->head; o; o = o->next)
        if (o != c && o->state == CMD_QUEUED && strcmp(o->target, c->target) == 0)
            o->ahead++;
    note_served(b, c->client);
    c->state = CMD_SENT;
    memcpy(out->id, c->id, sizeof(out->id));
    out->tool = strdup(c->tool);
    out->args_json = c->args_json;
    c->args_json = NULL;
}

/* When inst was disconnected within TOMB_MS: the time that ends, else 0 (mu held). */
static int64_t tomb_until(const struct bridge *b, const char *inst, int64_t now)
{
    for (size_t i = 0; i < TOMBS; i++)
        if (b->tombs[i].until > now && strcmp(b->tombs[i].id, inst) == 0)
            return b->tombs[i].until;
    return 0;
}

/* Holds a poll of a just-disconnected instance until its tomb ends (mu held), without
 * registering it, so that the plugin does not spin. */
static void wait_tomb(struct bridge *b, int64_t until)
{
    while (!b->closing && now_ms(b) < until)
        if (wait_until(b, &b->poll_cond, until))
            break;
}

int bridge_poll(struct bridge *b, const struct bridge_instance_info *inst,
                struct bridge_command *out, struct errinfo *err)
{
    int64_t now, until;
    bool is_new, timed_out = false;
    struct instance *me;
    int got = 0, replaced;

    memset(out, 0, sizeof(*out));
    if (!bridge_id_ok(inst->id)) {
        errinfo_set(err, ERR_INVALID,
                    "instance must be 1 to %d characters of letters, digits and _.:{}-",
                    BRIDGE_ID_MAX - 1);
        return -1;
    }
    pthread_mutex_lock(&b->mu);
    now = now_ms(b);
    prune(b, now);
    until = tomb_until(b, inst->id, now);
    if (until) {
        wait_tomb(b, until);
        pthread_mutex_unlock(&b->mu);
        return 0;
    }
    me = touch_instance(b, inst, now, &is_new);
    if (!me) {
        pthread_mutex_unlock(&b->mu);
        errinfo_set(err, ERR_TOO_LARGE,
                    "too many Studio instances are connected (%d); close or disconnect one",
                    BRIDGE_INSTANCES_MAX);
        return -1;
    }
    replaced = replace_old_selves(b, me, now);
    me = find_instance(b, inst->id); /* removal moves entries */
    if (me)
        me->waiting++;
    until = now + b->poll_window_ms;
    for (;;) {
        struct cmd *c;

        /* A disconnect during the wait removes the instance: end this poll empty. */
        if (b->closing || !find_instance(b, inst->id))
            break;
        c = next_for(b, inst->id);
        if (c) {
            hand_over(b, c, out);
            got = 1;
            break;
        }
        if (now_ms(b) >= until || timed_out)
            break;
        timed_out = wait_until(b, &b->poll_cond, until);
    }
    me = find_instance(b, inst->id);
    if (me) {
        me->waiting--;
        me->last_end_ms = now_ms(b);
    }
    pthread_mutex_unlock(&b->mu);
    if (replaced)
        log_info("bridge: Studio instance %s replaced %d idle instance(s) of the same place",
                 inst->id, replaced);
    if (is_new)
        log_info("bridge: Studio instance %s (%s, place %s) connected", inst->id,
                 bridge_role_name(inst->role), inst->place ? inst->place : "?");
    if (got && !out->tool) {
        /* The command is SENT and cannot be offered again; its call fails by its deadline. */
        free(out->args_json);
        out->args_json = NULL;
        errinfo_set(err, ERR_NOMEM, "out of memory handing over command %s", out->id);
        return -1;
    }
    if (got)
        log_debug("bridge: command %s %s sent to %s", out->id, out->tool, inst->id);
    return got;
}

/* ---- results ---- */

enum bridge_result_status bridge_result(struct bridge *b, const char *id, bool ok, const char *data,
                                        size_t len, bool is_json)
{
    enum bridge_result_status st = BRIDGE_RESULT_UNKNOWN;
    char *copy = malloc(len + 1);
    struct cmd *c;

    if (copy) {
        memcpy(copy, data, len);
        copy[len] = '\0';
    }
    pthread_mutex_lock(&b->mu);
    for (c = b->head; c; c = c->next)
        if (strcmp(c->id, id) == 0)
            break;
    if (!c)
        st = was_finished(b, id) ? BRIDGE_RESULT_FINISHED : BRIDGE_RESULT_UNKNOWN;
    else if (c->state == CMD_DONE)
        st = BRIDGE_RESULT_FINISHED;
    else if (c->state == CMD_QUEUED)
        st = BRIDGE_RESULT_NOT_SENT;
    else {
        st = BRIDGE_RESULT_ACCEPTED;
        b->depth--;
        c->state = CMD_DONE;
        c->reply.ok = ok && copy;
        c->reply.is_json = ok && is_json;
        c->reply.kind = copy ? ERR_INVALID : ERR_NOMEM;
        c->reply.data = copy ? copy : strdup("out of memory for Studio's answer");
        c->reply.len = c->reply.data ? strlen(c->reply.data) : 0;
        if (copy)
            c->reply.len = len;
        copy = NULL;
        pthread_cond_signal(&c->cond);
    }
    pthread_mutex_unlock(&b->mu);
    free(copy);
    return st;
}

/* ---- calls ---- */

/* The instance a new command for tool goes to (mu held), or NULL: for play-mode tools the
 * test server of the active window (its parent), else a server of the same place that names
 * no parent (a test the user started); the active edit instance otherwise. */
static const struct instance *pick_target(struct bridge *b, const char *tool)
{
    const struct instance *edit = b->active[0] ? find_instance(b, b->active) : NULL;

    if (bridge_tool_roles(tool) & BRIDGE_TO_SERVER) {
        const struct instance *same_place = NULL;

        for (size_t i = 0; i < b->ninst; i++) {
            const struct instance *in = &b->inst[i];

            if (in->role != BRIDGE_ROLE_SERVER)
                continue;
            if (in->parent[0]) {
                if (!edit || strcmp(in->parent, edit->id) == 0)
                    return in;
            } else if (!same_place && (!edit || strcmp(in->place, edit->place) == 0)) {
                same_place = in;
            }
        }
        if (same_place)
            return same_place;
    }
    return edit;
}

static struct cmd *new_cmd(const char *id, const char *client, const char *tool, const cJSON *args)
{
    struct cmd *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    snprintf(c->id, sizeof(c->id), "%s", id);
    snprintf(c->client, sizeof(c->client), "%s", client ? client : "");
    c->tool = strdup(tool);
    c->args_json = args ? cJSON_PrintUnformatted(args) : strdup("{}");
    if (!c->tool || !c->args_json || clocks_cond_init(&c->cond) != 0) {
        free(c->tool);
        free(c->args_json);
        free(c);
        return NULL;
    }
    return c;
}

static void free_cmd(struct cmd *c)
{
    free(c->tool);
    free(c->args_json);
    pthread_cond_destroy(&c->cond);
    free(c);
}

/* True when bridge_cancel named id before its command came (mu held). */
static bool cancelled_early(const struct bridge *b, const char *id)
{
    for (size_t i = 0; i < CANCEL_RING; i++)
        if (strcmp(b->cancelled[i], id) == 0)
            return true;
    return false;
}

/* Queues c for the right instance (mu held); 0, or -1 with c finished (not queued). */
static int enqueue(struct bridge *b, struct cmd *c, const cJSON *args)
{
    const struct instance *t;
    int64_t now = now_ms(b);

    prune(b, now);
    c->state = CMD_QUEUED;
    if (b->closing) {
        finish_error(c, ERR_UNAVAILABLE, "runboxd is shutting down");
        return -1;
    }
    if (cancelled_early(b, c->id)) {
        finish_error(c, ERR_CANCELLED,
                     "cancelled before Studio took %s; nothing was sent to Studio", c->tool);
        return -1;
    }
    t = pick_target(b, c->tool);
    if (!t) {
        finish_error(c, ERR_UNAVAILABLE, "%s", connect_help);
        return -1;
    }
    if (b->depth >= b->queue_max) {
        finish_error(c, ERR_UNAVAILABLE,
                     "the Studio queue is full (%zu commands waiting or running); wait for some "
                     "to finish and retry",
                     b->queue_max);
        return -1;
    }
    memcpy(c->target, t->id, sizeof(c->target));
    c->ahead = 0; /* the running ones; hand_over counts those that go first while it waits */
    for (const struct cmd *o = b->head; o; o = o->next)
        if (o->state == CMD_SENT && strcmp(o->target, t->id) == 0)
            c->ahead++;
    c->budget_ms = bridge_deadline_for(c->tool, args, b->deadline_ms);
    c->deadline_ms = now + c->budget_ms;
    c->next = NULL;
    if (b->tail)
        b->tail->next = c;
    else
        b->head = c;
    b->tail = c;
    b->depth++;
    pthread_cond_broadcast(&b->poll_cond);
    return 0;
}

/* Waits until c is DONE (mu held), failing it at its deadline or when its target is gone. */
static void wait_done(struct bridge *b, struct cmd *c)
{
    while (c->state != CMD_DONE) {
        int64_t now = now_ms(b), until = c->deadline_ms;
        const struct instance *t;

        prune(b, now); /* fails c when its target stopped polling */
        if (c->state == CMD_DONE)
            break;
        if (now >= c->deadline_ms) {
            b->depth--;
            if (c->state == CMD_SENT)
                finish_error(c, ERR_TIMEOUT,
                             "sent to Studio, no answer within %" PRId64 " s — it may have been "
                             "applied; read back before repeating (%s)",
                             c->budget_ms / 1000, c->tool);
            else
                finish_error(c, ERR_TIMEOUT,
                             "Studio did not take %s within %" PRId64 " s; nothing was sent",
                             c->tool, c->budget_ms / 1000);
            break;
        }
        t = find_instance(b, c->target);
        if (t && t->last_poll_ms + b->stale_ms < until)
            until = t->last_poll_ms + b->stale_ms;
        wait_until(b, &c->cond, until);
    }
}

/* Notes a finished command for bridge_status_json (mu held). */
static void remember_recent(struct bridge *b, const struct cmd *c)
{
    struct recent *r = &b->recent;
    size_t k = r->next;
    int64_t now = now_ms(b);

    snprintf(r->item[k].tool, sizeof(r->item[k].tool), "%s", c->tool);
    memcpy(r->item[k].target, c->target, sizeof(r->item[k].target));
    r->item[k].kind = c->reply.ok ? ERR_NONE : c->reply.kind;
    r->item[k].done_ms = now;
    r->item[k].duration_ms = now - (c->deadline_ms - c->budget_ms);
    r->next = (k + 1) % RECENT_MAX;
    if (r->n < RECENT_MAX)
        r->n++;
}

/* Sends c and waits for it (the lock is taken here). */
static void run_cmd(struct bridge *b, struct cmd *c, const cJSON *args)
{
    pthread_mutex_lock(&b->mu);
    if (enqueue(b, c, args) == 0) {
        wait_done(b, c);
        unlink_cmd(b, c);
        remember_finished(b, c->id);
        remember_recent(b, c);
    }
    pthread_mutex_unlock(&b->mu);
}

/* Moves an operation's answer into a reply (the data changes hands). */
static void reply_of(struct bridge_reply *out, struct opcache_answer *ans)
{
    memset(out, 0, sizeof(*out));
    out->ok = ans->ok;
    out->is_json = ans->is_json;
    out->kind = ans->data ? ans->kind : ERR_NOMEM;
    out->data = ans->data;
    out->len = ans->len;
    ans->data = NULL;
    opcache_answer_cleanup(ans);
}

/* The call's operation_id, or NULL. */
static const char *operation_of(const cJSON *args)
{
    const cJSON *op = args ? cJSON_GetObjectItemCaseSensitive(args, "operation_id") : NULL;

    return cJSON_IsString(op) && op->valuestring[0] ? op->valuestring : NULL;
}

int bridge_call(struct bridge *b, const char *id, const char *tool, const cJSON *args,
                struct bridge_reply *out)
{
    return bridge_call_for(b, id, NULL, tool, args, out);
}

int bridge_call_for(struct bridge *b, const char *id, const char *client, const char *tool,
                    const cJSON *args, struct bridge_reply *out)
{
    const char *op = operation_of(args);
    cJSON *sent = NULL; /* args without operation_id */
    struct cmd *c = NULL;
    size_t ahead;
    int64_t t0 = now_ms(b);

    memset(out, 0, sizeof(*out));
    out->kind = ERR_NOMEM;
    if (op) {
        struct opcache_answer ans;
        enum opcache_claim cl = opcache_claim(b->ops, tool, op, id, b->deadline_ms, &ans);
        static const char *const said[] = {
            [OPCACHE_REPLAY] = "answered again",
            [OPCACHE_BUSY] = "still running",
            [OPCACHE_CANCELLED] = "waited for; this call was cancelled",
        };

        if (cl != OPCACHE_RUN) {
            reply_of(out, &ans);
            if (cl == OPCACHE_REPLAY)
                (void)bridge__add_member(out, "replayed", "true");
            log_debug("bridge: call %s %s: operation_id %s %s", id, tool, op, said[cl]);
            if (!out->data)
                goto nomem;
            return out->ok ? 0 : -1;
        }
        sent = cJSON_Duplicate(args, true);
        if (sent)
            cJSON_DeleteItemFromObjectCaseSensitive(sent, "operation_id");
    }
    c = (!op || sent) ? new_cmd(id, client, tool, sent ? sent : args) : NULL;
    if (!c)
        goto nomem;
    run_cmd(b, c, args);
    *out = c->reply;
    ahead = c->ahead;
    memset(&c->reply, 0, sizeof(c->reply));
    free_cmd(c);
    cJSON_Delete(sent);
    sent = NULL;
    if (op) /* kept when the plugin answered: ok, or its own failure */
        opcache_finish(b->ops, tool, op,
                       &(struct opcache_answer){.ok = out->ok,
                                                .is_json = out->is_json,
                                                .kind = out->kind,
                                                .data = out->data,
                                                .len = out->len},
                       out->ok || out->kind == ERR_INVALID);
    if (!out->data)
        goto nomem;
    if (ahead > 0) {
        char n[24];

        snprintf(n, sizeof(n), "%zu", ahead);
        (void)bridge__add_member(out, "queue_ahead", n);
    }
    log_debug("bridge: call %s %s %s after %" PRId64 " ms", id, tool, out->ok ? "ok" : "failed",
              now_ms(b) - t0);
    return out->ok ? 0 : -1;
nomem:
    if (op && !c)
        opcache_finish(b->ops, tool, op, &(struct opcache_answer){0}, false);
    cJSON_Delete(sent);
    bridge_reply_cleanup(out);
    out->kind = ERR_NOMEM;
    out->data = NULL;
    return -1;
}

bool bridge_cancel(struct bridge *b, const char *id)
{
    struct cmd *c;

    pthread_mutex_lock(&b->mu);
    for (c = b->head; c; c = c->next)
        if (c->state != CMD_DONE && strcmp(c->id, id) == 0)
            break;
    if (c) {
        b->depth--;
        if (c->state == CMD_SENT)
            finish_error(c, ERR_CANCELLED,
                         "cancelled after %s was sent to Studio; it may have been applied — read "
                         "back before repeating",
                         c->tool);
        else
            finish_error(c, ERR_CANCELLED,
                         "cancelled before Studio took %s; nothing was sent to Studio", c->tool);
    } else {
        /* Not queued (yet): its command, if it still comes, is refused (cancelled_early). */
        snprintf(b->cancelled[b->cancel_next], BRIDGE_ID_MAX, "%s", id);
        b->cancel_next = (b->cancel_next + 1) % CANCEL_RING;
    }
    pthread_mutex_unlock(&b->mu);
    if (c)
        return true;
    /* A repeat waiting for its operation_id's first call ends too (ops lock, not under mu). */
    return opcache_cancel(b->ops, id);
}

/* ---- instances ---- */

int bridge_disconnect(struct bridge *b, const char *instance)
{
    int failed = -1;

    pthread_mutex_lock(&b->mu);
    prune(b, now_ms(b));
    /* Also for an unknown instance: its first poll may still be on the way. */
    snprintf(b->tombs[b->tomb_next].id, BRIDGE_ID_MAX, "%s", instance);
    b->tombs[b->tomb_next].until = now_ms(b) + TOMB_MS;
    b->tomb_next = (b->tomb_next + 1) % TOMBS;
    for (size_t i = 0; i < b->ninst; i++) {
        if (strcmp(b->inst[i].id, instance) != 0)
            continue;
        failed = (int)b->depth;
        remove_instance(b, i, "disconnected");
        failed -= (int)b->depth;
        pthread_cond_broadcast(&b->poll_cond); /* its parked polls end */
        break;
    }
    pthread_mutex_unlock(&b->mu);
    return failed;
}

/* "a (edit), b (edit)" into buf (mu held). */
static void list_ids(const struct bridge *b, char *buf, size_t size)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < b->ninst && used < size; i++) {
        int n = snprintf(buf + used, size - used, "%s%s (%s)", i ? ", " : "", b->inst[i].id,
                         bridge_role_name(b->inst[i].role));
        if (n < 0)
            break;
        used += (size_t)n;
    }
    if (!buf[0])
        snprintf(buf, size, "none");
}

int bridge_set_active(struct bridge *b, const char *instance, struct errinfo *err)
{
    const struct instance *in;
    char ids[160];
    int rc = -1;

    pthread_mutex_lock(&b->mu);
    prune(b, now_ms(b));
    in = find_instance(b, instance);
    if (!in)
        list_ids(b, ids, sizeof(ids));
    else if (in->role != BRIDGE_ROLE_EDIT)
        errinfo_set(err, ERR_INVALID,
                    "Studio instance %.64s is a play-mode %s copy; only edit instances can be "
                    "active",
                    instance, bridge_role_name(in->role));
    else {
        memcpy(b->active, in->id, sizeof(b->active));
        rc = 0;
    }
    pthread_mutex_unlock(&b->mu);
    if (!in)
        errinfo_set(err, ERR_NOT_FOUND,
                    "no connected Studio instance %.64s; connected: %s (list_studios shows them)",
                    instance, ids);
    return rc;
}

/* One instance as JSON; a NULL return means out of memory. */
static cJSON *instance_json(const struct instance *in, int64_t now, bool active)
{
    cJSON *o = cJSON_CreateObject();

    if (!o)
        return NULL;
    if (!cJSON_AddStringToObject(o, "id", in->id) ||
        !cJSON_AddStringToObject(o, "role", bridge_role_name(in->role)) ||
        !cJSON_AddStringToObject(o, "place", in->place) ||
        !cJSON_AddStringToObject(o, "name", in->name) ||
        (in->parent[0] && !cJSON_AddStringToObject(o, "parent", in->parent)) ||
        !cJSON_AddNumberToObject(o, "last_poll_ms_ago", (double)(now - in->last_poll_ms)) ||
        !cJSON_AddBoolToObject(o, "active", active)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The outcome of a finished command in a word. */
static const char *outcome_name(enum errinfo_kind kind)
{
    switch (kind) {
    case ERR_NONE:
        return "ok";
    case ERR_TIMEOUT:
        return "timed out";
    case ERR_CANCELLED:
        return "cancelled";
    case ERR_UNAVAILABLE:
        return "not delivered";
    case ERR_INVALID:
    case ERR_NOT_FOUND:
    case ERR_EXISTS:
    case ERR_DENIED:
    case ERR_TOO_LARGE:
    case ERR_IO:
    case ERR_NOMEM:
    case ERR_INTERNAL:
        break;
    }
    return "failed";
}

/* ,"recent":[...] of the copied ring, newest first. */
static int add_recent(cJSON *o, const struct recent *r, int64_t now)
{
    cJSON *arr = cJSON_AddArrayToObject(o, "recent");

    for (size_t i = 0; arr && i < r->n; i++) {
        size_t k = (r->next + RECENT_MAX - 1 - i) % RECENT_MAX;
        cJSON *it = cJSON_CreateObject();

        if (!it || !cJSON_AddItemToArray(arr, it)) {
            cJSON_Delete(it);
            return -1;
        }
        if (!cJSON_AddStringToObject(it, "tool", r->item[k].tool) ||
            !cJSON_AddStringToObject(it, "instance", r->item[k].target) ||
            !cJSON_AddStringToObject(it, "state", outcome_name(r->item[k].kind)) ||
            !cJSON_AddNumberToObject(it, "duration_ms", (double)r->item[k].duration_ms) ||
            !cJSON_AddNumberToObject(it, "ms_ago", (double)(now - r->item[k].done_ms)))
            return -1;
    }
    return arr ? 0 : -1;
}

static cJSON *status_json(struct bridge *b, bool with_recent)
{
    struct instance snap[BRIDGE_INSTANCES_MAX];
    char active[BRIDGE_ID_MAX];
    size_t n, depth;
    int64_t now;
    cJSON *o = cJSON_CreateObject(), *arr = NULL;
    struct recent recent;

    /* Copy out under the lock; build the JSON after it. */
    pthread_mutex_lock(&b->mu);
    now = now_ms(b);
    prune(b, now);
    n = b->ninst;
    memcpy(snap, b->inst, n * sizeof(snap[0]));
    memcpy(active, b->active, sizeof(active));
    depth = b->depth;
    recent = b->recent;
    pthread_mutex_unlock(&b->mu);
    if (!o)
        return NULL;
    /* Oldest first, so the listing is stable. */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && snap[j].order < snap[j - 1].order; j--) {
            struct instance t = snap[j];

            snap[j] = snap[j - 1];
            snap[j - 1] = t;
        }
    if (!cJSON_AddBoolToObject(o, "connected", n > 0) ||
        !(active[0] ? cJSON_AddStringToObject(o, "active", active)
                    : cJSON_AddNullToObject(o, "active")) ||
        !(arr = cJSON_AddArrayToObject(o, "instances")))
        goto fail;
    for (size_t i = 0; i < n; i++) {
        cJSON *it = instance_json(&snap[i], now, strcmp(snap[i].id, active) == 0);

        if (!it || !cJSON_AddItemToArray(arr, it)) {
            cJSON_Delete(it);
            goto fail;
        }
    }
    if (!cJSON_AddNumberToObject(o, "queue_depth", (double)depth) ||
        (with_recent && add_recent(o, &recent, now) < 0))
        goto fail;
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

cJSON *bridge_status_json(struct bridge *b)
{
    return status_json(b, false);
}

cJSON *bridge_health_json(struct bridge *b)
{
    return status_json(b, true);
}
