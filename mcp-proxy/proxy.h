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

/* Pure. The HTTP request for an MCP resources/prompts request: *url (owned) is the path and
 * query ("/resources?cursor=...", "/resource?uri=...", "/prompts", "/prompt/<name>"), *get
 * whether it is a GET, *body (owned, or NULL for a GET) the JSON body of a POST. Parameters are
 * percent-encoded. Returns 0, or -1 when out of memory (nothing is left allocated). */
int proxy_request_http(const char *method, const cJSON *params, char **url, bool *get, char **body);

/* Answers req from runboxd's reply: 200 {"ok":true,"result":R} -> R; a 4xx -> -32602 with the
 * daemon's message; anything else (unreachable, timeout, 5xx) -> -32603 with the same texts as
 * tool calls get. */
void proxy_answer_request(struct mcp_call *req, const struct upstream_reply *reply,
                          const char *base_url);

#endif /* MCP_PROXY_PROXY_H */
