/* daemon/mcpclient_core.h - the state of one MCP client, shared by the files of its core:
 * mcpclient.c (its thread, requests and waiters, the connection's end), mcpclient_open.c (the
 * handshake and the lists) and mcpclient_receive.c (what the server sends, the reader's turn).
 * The transports do not include it: they see the core only through mcpclient_int.h. Locking
 * and threads: mcpclient.c's DESIGN comment; a function named *_locked is called with c->mu
 * held. */
#ifndef DAEMON_MCPCLIENT_CORE_H
#define DAEMON_MCPCLIENT_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"
#include "mcpclient.h"
#include "mcpclient_int.h"

struct call;
struct registry_spec;

struct pending {
    struct pending *next;
    uint64_t id;
    struct mcpclient *c;
    unsigned gen; /* the connection it was sent on */
    /* internal (the thread's own requests): */
    void (*cb)(struct mcpclient *c, struct pending *p, cJSON *result, const cJSON *error);
    int64_t deadline_ms; /* 0: none */
    cJSON *acc;          /* a list being read, page by page */
    int pages;
    uint64_t cursor_hash; /* of the cursor this page was asked with (0: the first page) */
    unsigned list;        /* MCPCLIENT_CHANGED_TOOLS, ... */
    /* a waiter (mcpclient_request): */
    bool waiter;
    pthread_cond_t cond;
    bool done, cancelled;
    cJSON *result;
    struct errinfo err;
    struct call *call;
    int delivering; /* progress reports being handed to the call */
};

struct outmsg {
    struct outmsg *next;
    char *data;
    size_t len;
};

/* A message a worker read for the client's thread (see mcpclient__receive_lent), or (msg NULL)
 * the id of an internal request whose answer could not be taken (over the size limit, JSON
 * runbox cannot read): why says what the server sent, why_kind what kind of failure it is. */
struct inmsg {
    struct inmsg *next;
    cJSON *msg;
    uint64_t bad_id;
    enum errinfo_kind why_kind;
    char *why;
};

/* Who holds the reader's turn on a stdio server's stdout (mcpclient_int.h). */
enum reader { RD_NONE, RD_THREAD, RD_WORKER };

struct mcpclient {
    struct mcpclient_options opt;
    const struct registry_spec *spec;
    const struct mcpclient_transport *tr;
    pthread_t thread;
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t stop_cond;
    struct pending *pending;
    uint64_t next_id;
    struct outmsg *out_head, *out_tail;
    size_t out_bytes;
    cJSON *tools, *prompts, *resources;
    cJSON *caps;       /* the server's capabilities */
    char *server_name; /* serverInfo */
    char *server_version;
    int64_t handshake_deadline;
    uint64_t gate_ticket; /* the start gate's slot while this connection starts, or 0 */
    int64_t started_at;   /* wall ms: this connection's attempt began (past the start gate) */
    int64_t last_error_at, ready_at;
    int64_t tokens_at;
    uint64_t stderr_dropped;
    double tokens;
    long pid; /* a stdio child, or 0 */
    enum mcpclient_state state;
    unsigned gen;           /* connection number */
    unsigned lists_pending; /* during the handshake */
    unsigned restarts;
    unsigned stderr_count;
    int hint; /* the transport's, across connections */
    int wake_fd;
    int direct_fd;    /* the stdio child's stdin while it is served, else -1 (see direct_send) */
    bool direct_busy; /* the transport is writing a message it took (mcpclient__next_out) */
    /* The reader's turn on a stdio server's stdout (see DESIGN): */
    int rd_fd; /* offered by the transport while it serves, else -1 */
    mcpclient_read_fn rd_fn;
    void *rd_arg;
    enum reader rd_owner;
    struct pending *rd_worker;       /* the waiter reading (RD_WORKER) */
    struct pending *rd_heir;         /* the waiter told to take the turn next */
    bool rd_want;                    /* a waiter asked the thread for the turn */
    bool rd_ended;                   /* a worker read the end of stdout */
    int64_t rd_idle_at;              /* when the turn was last left to no one */
    int rd_wake_fd;                  /* eventfd: wakes the reading worker (its cancel, the end) */
    pthread_cond_t rd_cond;          /* the reading worker let go (mcpclient__withdraw_reader) */
    struct inmsg *in_head, *in_tail; /* what workers read for the thread */
    size_t in_count;
    bool started;
    bool stopping;
    bool modern;
    bool handshake_failed;
    char protocol[16];
    char handshake_why[400];
    /* What this connection's server sent that was no message of the protocol (a log line on
     * stdout, {}, an answer without an id): how many, and the start of the last. The handshake's
     * timeout says it, since such a server never answers initialize. */
    unsigned ignored;
    char ignored_last[81];
    char last_error[1024];
    char stderr_tail[MCPCLIENT_STDERR_KEEP][240];
};

/* An internal request's answer (or error), on the client's thread. */
typedef void (*pending_cb)(struct mcpclient *c, struct pending *p, cJSON *result,
                           const cJSON *error);

/* ---- mcpclient.c ---- */

/* Wakes the client's thread (its eventfd). */
void mcpclient__wake(struct mcpclient *c);
/* Queues text (owned) for the server; -1 with err when the queue is full. */
int mcpclient__enqueue_locked(struct mcpclient *c, char *text, struct errinfo *err);

/* ---- mcpclient_open.c: messages, the handshake, the lists ---- */

char *mcpclient__request_text(struct mcpclient *c, uint64_t id, const char *method, cJSON *params,
                              bool progress);
char *mcpclient__notification_text(const char *method, cJSON *params);
void mcpclient__handshake_fail(struct mcpclient *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Tells the registry what changed (MCPCLIENT_CHANGED_*), without c->mu. */
void mcpclient__changed(struct mcpclient *c, unsigned what);
const char *mcpclient__list_method(unsigned list);
/* Reads one list (again), page by page from cursor (NULL: the first). */
void mcpclient__read_list(struct mcpclient *c, unsigned list, cJSON *acc, int pages,
                          const char *cursor);
/* Gives the start gate's slot back (once the server is ready, or the attempt ended). */
void mcpclient__leave_gate(struct mcpclient *c);

/* ---- mcpclient_receive.c: what arrives, the reader's turn ---- */

void mcpclient__unlink_pending_locked(struct mcpclient *c, struct pending *p);
void mcpclient__free_internal(struct pending *p);
void mcpclient__complete_waiter_locked(struct pending *p, cJSON *result, const cJSON *error);
void mcpclient__poke_reader(struct mcpclient *c);
void mcpclient__pass_turn_locked(struct mcpclient *c, const struct pending *except);
bool mcpclient__may_take_turn_locked(const struct mcpclient *c, const struct pending *p);
bool mcpclient__read_turn_locked(struct mcpclient *c, struct pending *p, int64_t until_ms);
struct inmsg *mcpclient__take_inbox_locked(struct mcpclient *c);

#endif /* DAEMON_MCPCLIENT_CORE_H */
