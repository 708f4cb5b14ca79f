/* mcp-proxy/cli_http.h - the blocking HTTP/1.1 client of the runbox subcommands.
 *
 * The subcommands (cli.h) make one or two requests and exit, so they do not load libcurl: its
 * dlopen and global init cost about 12 ms, which is most of the 15 ms a `runbox call` may take
 * (docs/performance.md). This client speaks just what runboxd speaks: http:// URLs, one request
 * per connection (Connection: close), bodies framed by Content-Length, chunked encoding or the
 * end of the connection, and Server-Sent Events read as they arrive. The SSE parser is pure and
 * unit-tested (test_cli).
 *
 * Thread-safety: none needed; every function works on the caller's storage. */
#ifndef MCP_PROXY_CLI_HTTP_H
#define MCP_PROXY_CLI_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "errinfo.h"
#include "upstream.h"

#define CLI_HTTP_HEAD_MAX  ((size_t)64 << 10) /* longest response head */
#define CLI_HTTP_BODY_MAX  UPSTREAM_MAX_BODY  /* longest response body kept */
#define CLI_HTTP_HOST_MAX  256
#define CLI_SSE_FIELD_MAX  ((size_t)8 << 20) /* longest data of one event */
#define CLI_HTTP_CTYPE_MAX 128

/* Where the daemon is: parsed from DAEMON_URL. */
struct cli_target {
    char base_url[UPSTREAM_URL_MAX];      /* without a trailing '/' */
    char host[CLI_HTTP_HOST_MAX];         /* as in the URL, brackets of an IPv6 literal removed */
    char hostport[CLI_HTTP_HOST_MAX + 8]; /* for the Host header and messages: "127.0.0.1:7766" */
    int port;
    const char *token; /* borrowed bearer token, or NULL */
};

/* Parses an http:// URL (an optional trailing '/' and no path). Pure. Returns 0, or -1 with err
 * (ERR_INVALID) saying what is wrong. */
int cli_target_parse(struct cli_target *t, const char *url, const char *token, struct errinfo *err);

/* ---- Server-Sent Events (pure) ---- */

/* One event: the lines up to a blank line. Fields are borrowed until the callback returns. */
struct cli_sse_event {
    const char *event; /* "message" when the stream named none */
    const char *id;    /* "" when none */
    const char *data;  /* the data lines joined with '\n' */
    size_t data_len;
};

typedef int (*cli_sse_fn)(void *ctx, const struct cli_sse_event *ev); /* non-zero stops */

/* Parser state (storage provided by the caller). Fields private to cli_http.c. */
struct cli_sse {
    char *line; /* owned: the line being read */
    size_t line_len, line_cap;
    char *data; /* owned: the event's data so far */
    size_t data_len, data_cap;
    char event[64];
    char id[64];
    bool has_data;
    bool cr; /* the last byte was '\r' */
    cli_sse_fn fn;
    void *ctx;
};

void cli_sse_init(struct cli_sse *p, cli_sse_fn fn, void *ctx);
void cli_sse_cleanup(struct cli_sse *p);

/* Feeds bytes; calls fn for every complete event. Comments (": keepalive") are skipped. Returns
 * 0, 1 when fn asked to stop, or -1 with err (a line or an event over CLI_SSE_FIELD_MAX, no
 * memory). */
int cli_sse_feed(struct cli_sse *p, const char *buf, size_t n, struct errinfo *err);

/* ---- requests ---- */

/* Receives the body as it arrives (after de-chunking). Non-zero stops reading. */
typedef int (*cli_http_body_fn)(void *ctx, const char *buf, size_t n);

struct cli_http_req {
    const char *method; /* "GET" or "POST" */
    const char *path;   /* "/health", "/tool/exec", ... */
    const char *body;   /* JSON for a POST, or NULL */
    size_t body_len;
    const char *accept;       /* Accept header value, or NULL */
    long timeout_ms;          /* for the whole exchange; <= 0: no limit (streams) */
    cli_http_body_fn on_body; /* NULL: the body is kept in the reply */
    const char *stream_type;  /* with on_body: only a body of this Content-Type (a prefix, e.g.
                                 "text/event-stream") goes to on_body; any other is kept in the
                                 reply. NULL: every body goes to on_body */
    void *ctx;
};

struct cli_http_reply {
    struct upstream_reply r; /* outcome, status, body (owned here), errno, message */
    char content_type[CLI_HTTP_CTYPE_MAX];
    char *body_owned; /* the body behind r.body; freed by cleanup */
    char errbuf[ERRINFO_MSG_MAX];
};

/* Makes one request. Always fills *out (release with cli_http_reply_cleanup): the outcome says
 * what happened, as for the proxy's requests (upstream.h), so upstream_map_answer() can turn a
 * tool call's reply into the same result or message the MCP server gives. */
void cli_http_do(const struct cli_target *t, const struct cli_http_req *req,
                 struct cli_http_reply *out);

void cli_http_reply_cleanup(struct cli_http_reply *out);

#endif /* MCP_PROXY_CLI_HTTP_H */
