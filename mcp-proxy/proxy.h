/* mcp-proxy/proxy.h - runbox's stdio front-end: one event loop over stdin, stdout and the
 * HTTP connections to runboxd, with the MCP engine (common/mcp.h) in the middle.
 *
 * proxy.c is the loop and the engine's back end (a tools/call becomes POST /tool/<name>);
 * proxy_lines.c is the stdin framing (one JSON-RPC message per line), kept apart so that it is
 * pure and unit-tested on its own.
 *
 * Thread-safety: everything here belongs to the one thread that runs the loop. */
#ifndef MCP_PROXY_PROXY_H
#define MCP_PROXY_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

/* The longest stdin line (one message) the proxy accepts, without its newline. */
#define PROXY_LINE_MAX ((size_t)32 << 20)

/* ---- the loop ---- */

struct catalog;

struct proxy_config {
    const char *daemon_url; /* base URL of runboxd, e.g. "http://127.0.0.1:7766" */
    const char *token;      /* sent as "Authorization: Bearer <token>", or NULL */
    long timeout_ms;        /* per tools/call; past it the call fails with "MCP proxy timeout" */
    bool autostart;         /* start runboxd when nothing listens at daemon_url */
    const struct catalog *catalog; /* the tools served (a RUNBOX_TOOLS profile; borrowed), or
                                      NULL for the whole built-in catalog */
};

/* Serves MCP on in_fd (requests) and out_fd (responses) until in_fd reaches end of file or
 * out_fd is closed by the reader; calls still in flight are then cancelled. in_fd is switched to
 * non-blocking mode for the run and restored afterwards. Returns 0, or -1 with err set when the
 * proxy could not be set up (out of memory, libcurl failure). cfg is borrowed for the call. */
int proxy_run(const struct proxy_config *cfg, int in_fd, int out_fd, struct errinfo *err);

/* ---- stdin framing (proxy_lines.c): pure, no I/O ---- */

/* Splits a byte stream into lines on '\n'. A '\r' before the '\n' is stripped and empty lines are
 * skipped. A line longer than `limit` bytes is never stored whole: its bytes are counted and
 * dropped up to its newline, and then reported once through `oversized`. The buffer grows with
 * the longest pending line (at most limit plus one read) and shrinks back after a long one.
 * The fields are private to proxy_lines.c. */
struct proxy_lines {
    char *buf;        /* owned: pending bytes of an unfinished line */
    size_t len;       /* bytes held in buf */
    size_t cap;       /* allocated size of buf */
    size_t scanned;   /* buf[0..scanned) is known to hold no '\n' */
    size_t limit;     /* longest accepted line */
    size_t discarded; /* bytes dropped so far of the oversized line being skipped */
    bool discarding;  /* inside an oversized line: drop everything up to the next '\n' */
};

struct proxy_lines_sink {
    /* One complete line without '\n' (and without a trailing '\r'), never empty. line is
     * borrowed until the callback returns and is not NUL-terminated. */
    void (*line)(void *ctx, const char *line, size_t len);
    /* A line of `bytes` bytes (more than the limit) was dropped. */
    void (*oversized)(void *ctx, size_t bytes);
    void *ctx;
};

/* Prepares pl (storage provided by the caller; nothing is allocated yet). */
void proxy_lines_init(struct proxy_lines *pl, size_t limit);

/* Frees the buffer. pl may be reused after proxy_lines_init(). */
void proxy_lines_cleanup(struct proxy_lines *pl);

/* Room to read at least `want` more bytes into: returns a pointer to the free space and its size
 * in *avail, or NULL with err set (ERR_NOMEM). Fill it, then call proxy_lines_commit(). */
char *proxy_lines_space(struct proxy_lines *pl, size_t want, size_t *avail, struct errinfo *err);

/* Takes n bytes just written into the space from proxy_lines_space() and delivers every line
 * they complete to sink. */
void proxy_lines_commit(struct proxy_lines *pl, size_t n, const struct proxy_lines_sink *sink);

/* Copies data[0..n) in and delivers the lines it completes (space + commit in one).
 * Returns 0, or -1 with err set (ERR_NOMEM). */
int proxy_lines_feed(struct proxy_lines *pl, const char *data, size_t n,
                     const struct proxy_lines_sink *sink, struct errinfo *err);

/* End of input: a last line without a newline is delivered (or reported as oversized). */
void proxy_lines_finish(struct proxy_lines *pl, const struct proxy_lines_sink *sink);

/* Bytes of an unfinished line currently held (0 while an oversized line is being skipped). */
size_t proxy_lines_pending(const struct proxy_lines *pl);

/* Allocated buffer size, for tests that check the buffer shrinks again. */
size_t proxy_lines_capacity(const struct proxy_lines *pl);

/* ---- resources and prompts (proxy_requests.c) ---- */

struct mcp_call;
struct upstream_reply;

struct jsonbuf;

/* Appends s percent-encoded: everything but RFC 3986's unreserved characters. */
void proxy_url_escape(struct jsonbuf *b, const char *s);

/* Pure. The HTTP request for an MCP resources/prompts/completion request: *url (owned) is the
 * path and query ("/resources?cursor=...", "/resource?uri=...", "/prompts", "/prompt/<name>",
 * "/complete"), *get whether it is a GET, *body (owned, or NULL for a GET) the JSON body of a
 * POST. Parameters are percent-encoded. Returns 0, or -1 when out of memory (nothing is left
 * allocated). */
int proxy_request_http(const char *method, const cJSON *params, char **url, bool *get, char **body);

/* Answers req from runboxd's reply: 200 {"ok":true,"result":R} -> R; a 4xx -> -32602 with the
 * daemon's message; anything else (unreachable, timeout, 5xx) -> -32603 with the same texts as
 * tool calls get. */
void proxy_answer_request(struct mcp_call *req, const struct upstream_reply *reply,
                          const char *base_url);

/* ---- following runboxd's events (proxy_follow.c) ---- */

/* The notifications runbox's client asked for, fed from runboxd's GET /events: console entries
 * at the client's logging/setLevel as notifications/message, notifications/resources/updated
 * for its subscriptions, and the daemon's list changes. The stream is opened once the client
 * wants something (a log level, a subscription, or it listed or read resources) and the daemon
 * answers; it is reopened, continuing after the last console entry it carried, when what the
 * client wants changes, and retried with back-off (PROXY_FOLLOW_RETRY_MAX_MS at most) while the
 * daemon is away. Owner thread only; the fields are private. */
#define PROXY_FOLLOW_URIS_MAX     64
#define PROXY_FOLLOW_RETRY_MAX_MS 8000

struct upstream;
struct upstream_req;
struct mcp_server;
struct sse_parser;

struct proxy_follow {
    /* Called (inside libcurl: it may only note what to do) when the stream says runboxd's
     * tools changed and whenever a stream starts; that list change is then not forwarded, its
     * owner tells the client once it has the new list. NULL: forwarded as it comes. */
    void (*tools_changed)(void *arg);
    void *tools_arg;
    struct upstream *up;      /* borrowed */
    struct mcp_server *srv;   /* borrowed: where notifications go */
    struct upstream_req *req; /* the stream, or NULL */
    struct sse_parser *sse;   /* owned, while a stream is open */
    int level;                /* the client's enum mcp_log_level, or -1 */
    char *uris[PROXY_FOLLOW_URIS_MAX];
    size_t nuris;
    bool wanted;      /* the client wants something */
    bool dirty;       /* what it wants changed since the stream opened */
    bool had_ready;   /* the open stream said ready */
    uint64_t last_id; /* the last console id the stream carried (0: none) */
    int64_t since_ts; /* a stream opened afresh replays the entries since then (ms since the
                         epoch: when the client set its level, or when the last stream ended) */
    int64_t retry_at; /* when to (re)open, or 0 for now */
    int backoff_ms;
    int warned_wire; /* the daemon's revision last warned about (upstream_wire_mismatch), or 0 */
};

void proxy_follow_init(struct proxy_follow *f, struct upstream *up, struct mcp_server *srv);
void proxy_follow_cleanup(struct proxy_follow *f);

/* What the client wants (the engine's interest hooks and the resources requests call these). */
int proxy_follow_subscribe(struct proxy_follow *f, const char *uri, struct errinfo *err);
void proxy_follow_unsubscribe(struct proxy_follow *f, const char *uri);
void proxy_follow_set_level(struct proxy_follow *f, int level);
void proxy_follow_want(struct proxy_follow *f);

/* The daemon was just started (autostart): try at once rather than after the back-off. */
void proxy_follow_kick(struct proxy_follow *f);

/* Each turn of the loop, outside libcurl's callbacks: opens or reopens the stream when due.
 * Returns the milliseconds until it wants the next turn, or -1. */
int proxy_follow_tick(struct proxy_follow *f, int64_t now_ms);

/* ---- the external MCP servers' tools (proxy_tools.c) ----
 * runboxd's GET /tools lists the tools of the external servers of its registry beside its own
 * (with _meta "runbox/server" and "runbox/tool"); runbox serves them too, fetching the list
 * before it handles the client's first tools/ request and again whenever runboxd says it
 * changed, and tells its client with notifications/tools/list_changed. Owner thread only; the
 * fields are private. */

struct proxy_tools_config {
    struct upstream *up;         /* borrowed */
    struct mcp_server *srv;      /* borrowed: the external tools are added to it */
    struct proxy_follow *follow; /* borrowed: wanted once runboxd answered GET /tools */
    void (*handler)(void *arg, struct mcp_call *call); /* runs a call of an external tool */
    void *handler_arg;
    /* Handles a line that waited for the first list (mcp_session_handle). */
    void (*replay)(void *ctx, const char *line, size_t len);
    void *replay_ctx;
};

struct held_line;
struct proxy_tools {
    struct proxy_tools_config cfg;
    struct catalog *ext;      /* owned: the external tools served now, or NULL */
    cJSON *served;            /* owned: served name -> the entry's JSON text, as registered */
    struct upstream_req *req; /* GET /tools in flight, or NULL */
    struct held_line *held, *held_tail; /* owned: lines waiting for the first list */
    int state;                          /* idle (no tools/ request yet), first (lines wait), live */
    int64_t first_deadline;             /* when the lines stop waiting for the first list (or 0) */
    bool due;                           /* a GET /tools is to be started */
    bool reached;                       /* runboxd answered a GET /tools (or, later, any request) */
};

/* Also sets srv's tool resolver (proxy_tools_resolve). cfg is copied. */
void proxy_tools_init(struct proxy_tools *t, const struct proxy_tools_config *cfg);
void proxy_tools_cleanup(struct proxy_tools *t);

/* For every stdin line before the engine sees it: true when the line was kept, to be handled
 * (through cfg.replay) once the first list is in; the first tools/ request starts that list. */
bool proxy_tools_hold(struct proxy_tools *t, const char *line, size_t len);

/* Lines are waiting (the loop must not end yet). */
bool proxy_tools_holding(const struct proxy_tools *t);

/* Asks for the list again (runboxd's tools changed, its event stream started, autostart
 * brought it up). Safe inside libcurl's callbacks: the fetch starts in the next tick. */
void proxy_tools_refresh(struct proxy_tools *t);

/* runboxd answered a request: when no list ever reached it, fetch one now. */
void proxy_tools_contact(struct proxy_tools *t);

/* Each turn of the loop, outside libcurl's callbacks: starts a due fetch, hands over the lines
 * that waited once the first list is in (or after a few seconds without it). Returns the
 * milliseconds until it wants the next turn, or -1. */
int proxy_tools_tick(struct proxy_tools *t, int64_t now_ms);

/* The engine's resolver for "<server>/<tool>" and unambiguous bare names (mcp.h). */
int proxy_tools_resolve(void *arg, const char *name, char *canonical, size_t size, char *why,
                        size_t why_size);

#endif /* MCP_PROXY_PROXY_H */
