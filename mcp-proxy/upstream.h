/* mcp-proxy/upstream.h - the HTTP client from runbox to runboxd.
 *
 * libcurl's multi interface driven by the caller's poll() loop (socket and timer callbacks):
 * many requests in flight on keep-alive connections that are reused from call to call, easy
 * handles recycled through a free list. The module knows HTTP, not MCP: a request ends in one
 * call of its done callback with an upstream_reply, and upstream_map_answer() turns a reply
 * from POST /tool/<name> into a tool result or a failure message (pure, unit-tested).
 *
 * Thread-safety: owner thread only (the loop's). */
#ifndef MCP_PROXY_UPSTREAM_H
#define MCP_PROXY_UPSTREAM_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

#define UPSTREAM_MAX_BODY  ((size_t)64 << 20) /* longest answer accepted from the daemon */
#define UPSTREAM_URL_MAX   1024               /* longest base URL */
#define UPSTREAM_TOKEN_MAX 1024               /* longest bearer token */

enum upstream_outcome {
    UPSTREAM_ANSWERED,  /* an HTTP response arrived, whatever its status */
    UPSTREAM_REFUSED,   /* nothing listens there (connection refused, host unreachable) */
    UPSTREAM_TIMEOUT,   /* the request's timeout passed */
    UPSTREAM_DROPPED,   /* the connection closed before the whole answer arrived */
    UPSTREAM_TOO_LARGE, /* the answer is longer than UPSTREAM_MAX_BODY */
    UPSTREAM_FAILED,    /* anything else; error says what */
};

struct upstream_reply {
    enum upstream_outcome outcome;
    long status;       /* HTTP status (UPSTREAM_ANSWERED), else 0 */
    const char *body;  /* the answer's body, NUL-terminated; borrowed for the callback */
    size_t body_len;   /* bytes in body */
    int os_errno;      /* the socket error behind REFUSED/FAILED, or 0 */
    const char *error; /* libcurl's message (never NULL); borrowed for the callback */
};

struct upstream;     /* opaque */
struct upstream_req; /* opaque: one request in flight */

/* Called once when a request ends (never for a cancelled one). reply is borrowed for the
 * call. The callback may start and cancel other requests; the request itself is gone when the
 * callback is called. */
typedef void (*upstream_done_fn)(void *ctx, const struct upstream_reply *reply);

struct upstream_config {
    const char *base_url; /* e.g. "http://127.0.0.1:7766"; a trailing '/' is dropped; copied */
    const char *token;    /* bearer token or NULL; copied */
    long timeout_ms;      /* default timeout of each request (> 0) */
};

/* Creates a client. Returns an owned client (free with upstream_free) or NULL with err set.
 * Nothing touches the network yet, and libcurl is only loaded (dlopen of libcurl.so.4, then
 * curl_global_init) when the first request starts; a request that cannot load it fails with
 * err set. */
struct upstream *upstream_new(const struct upstream_config *cfg, struct errinfo *err);

/* Aborts every request in flight (no callbacks), closes the connections, frees. NULL is a no-op. */
void upstream_free(struct upstream *up);

/* The base URL without a trailing '/'. Borrowed. */
const char *upstream_base_url(const struct upstream *up);

/* Starts POST <base><path> with a JSON body. body is borrowed and must stay valid until done
 * is called or the request is cancelled. Returns the request (borrowed handle, valid until
 * then) or NULL with err set; done is then never called. */
struct upstream_req *upstream_post(struct upstream *up, const char *path, const char *body,
                                   size_t len, upstream_done_fn done, void *ctx,
                                   struct errinfo *err);

/* Starts GET <base><path> with its own timeout (<= 0: the default). As upstream_post(). */
struct upstream_req *upstream_get(struct upstream *up, const char *path, long timeout_ms,
                                  upstream_done_fn done, void *ctx, struct errinfo *err);

/* An event-stream answer, a piece at a time, as it arrives (not cut at event boundaries; feed
 * it to an sse_parser). Called only once the answer's Content-Type is text/event-stream; any
 * other answer (an error before the call started) is gathered and handed to done as usual,
 * while for a stream done gets an empty body. The callback must not start or cancel requests
 * (it runs inside libcurl); it may note what to do and act after upstream_dispatch. */
typedef void (*upstream_chunk_fn)(void *ctx, const char *data, size_t len);

/* As upstream_post, with "Accept: text/event-stream" (POST /tool/<name> then answers with its
 * progress events and the answer event). */
struct upstream_req *upstream_post_stream(struct upstream *up, const char *path, const char *body,
                                          size_t len, upstream_chunk_fn chunk,
                                          upstream_done_fn done, void *ctx, struct errinfo *err);

/* GET <base><path> with "Accept: text/event-stream" and no timeout (GET /events): chunk gets
 * the stream until it ends or is cancelled. */
struct upstream_req *upstream_get_stream(struct upstream *up, const char *path,
                                         upstream_chunk_fn chunk, upstream_done_fn done, void *ctx,
                                         struct errinfo *err);

/* Aborts a request in flight (its connection is closed); done is never called for it. */
void upstream_cancel(struct upstream *up, struct upstream_req *req);

/* How many requests are in flight. */
size_t upstream_inflight(const struct upstream *up);

/* ---- driving it from a poll() loop ---- */

/* Every now_ms below is clocks_mono_ms() (common/clocks.h). */

/* Writes the sockets to watch into fds[0..max) (revents cleared) and returns how many there
 * are; when that is more than max, call again with a larger array. */
size_t upstream_pollfds(const struct upstream *up, struct pollfd *fds, size_t max);

/* Milliseconds until libcurl's next timer (0 = now), or -1 when none is set. now_ms is
 * CLOCK_MONOTONIC in milliseconds. */
int upstream_timeout_ms(const struct upstream *up, int64_t now_ms);

/* After poll(): hands the ready sockets among fds[0..n) to libcurl, runs a timer that is due
 * and calls the done callback of every request that ended. fds may be NULL with n == 0 to run
 * timers only (which is what starts newly added requests). */
void upstream_dispatch(struct upstream *up, const struct pollfd *fds, size_t n, int64_t now_ms);

/* ---- answers of POST /tool/<name> (pure) ---- */

struct upstream_answer {
    bool ok;           /* true: result holds the tool's result */
    cJSON *result;     /* owned (cJSON_Delete) when ok; NULL means an empty string */
    cJSON *structured; /* owned when ok: the answer's "structured" object (exec), or NULL */
    char *error;       /* owned (free) when !ok: the message for the client */
    bool timeout;      /* !ok: the failure was a timeout */
    cJSON *mcp_result; /* owned, or NULL: an external server's whole CallToolResult (the
                          answer's "mcp_result"), on a result and on an isError failure alike */
};

/* Maps a reply as DESIGN §3 says: 200 ok:true -> the result; 200 ok:false -> its error and
 * timeout flag; 400 -> error and details joined; other statuses -> "runboxd answered HTTP
 * <status>: ..."; a body that is not runboxd's (no JSON "ok") -> upstream_foreign_message();
 * REFUSED -> how to start runboxd; TIMEOUT -> "MCP proxy timeout"; DROPPED -> "the call may have
 * been applied". base_url names the daemon in messages. Fills *out; returns 0, or -1 on allocation
 * failure (then out->ok is false and out->error is NULL). Release with upstream_answer_cleanup().
 */
int upstream_map_answer(const struct upstream_reply *reply, const char *base_url,
                        struct upstream_answer *out);

/* Parses JSON that runboxd sent (an answer's body, an event's data): a \u0000 inside a string
 * (a file or an output that holds a NUL) becomes U+FFFD, since cJSON would end the string there
 * and lose the rest. NULL when it is not JSON. Pure. */
cJSON *upstream_parse(const char *text, size_t len);

/* NULL when a runboxd that says it is version/wire (from GET /health or its event stream's
 * "ready"; wire < 1 for one that did not say: revision 1) speaks this runbox's revision
 * (RUNBOX_WIRE); otherwise an owned message for the user: which side is older, both versions,
 * and what to do ("... was started before runbox was updated: restart it (runbox restart)").
 * base_url names the daemon. Pure. */
char *upstream_wire_mismatch(const char *base_url, const char *version, int wire);

/* True when body is what runboxd answers with: a JSON object with a boolean "ok". Pure. */
bool upstream_is_runboxd_body(const char *body, size_t len);

/* The message for an HTTP answer that did not come from runboxd: "something else answers on
 * HOST:PORT - not runboxd (HTTP <status>: <excerpt>); stop it or set DAEMON_URL ...". Returns an
 * owned string (free) or NULL. */
char *upstream_foreign_message(const char *base_url, long status, const char *body, size_t len);

/* Frees what an answer owns; NULL is a no-op. */
void upstream_answer_cleanup(struct upstream_answer *a);

/* The message for a daemon that does not listen at base_url; os_errno picks the reason
 * (ECONNREFUSED, EHOSTUNREACH, ...). Returns an owned string (free) or NULL. */
char *upstream_unreachable_message(const char *base_url, int os_errno);

#endif /* MCP_PROXY_UPSTREAM_H */
