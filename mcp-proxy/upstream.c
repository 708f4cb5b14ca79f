/* mcp-proxy/upstream.c - the HTTP client from runbox to runboxd (see upstream.h).
 *
 * DESIGN
 * One curl multi handle, driven through its socket and timer callbacks: curl tells us which
 * sockets to watch (kept in `socks`) and when its next timer is due (`deadline_ms`); the caller's
 * poll() loop watches them next to stdin and hands back what became ready. The multi handle keeps
 * the connection cache, so a request reuses an idle keep-alive connection whichever easy handle
 * carries it; finished easy handles go to a free list with their options still set, so a request
 * costs a URL, a body pointer and an add_handle. Cancelling removes the easy handle from the
 * multi, which closes its connection: the daemon sees the request aborted.
 *
 * Answers are mapped to MCP terms in upstream_answer.c. */
#include "upstream.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "clocks.h"
#include "dynlib.h"
#include "log.h"

#define FREE_MAX       32                  /* idle easy handles kept for reuse */
#define MAX_CONNECTS   32                  /* idle connections kept alive (16 in flight and more) */
#define RESP_KEEP      ((size_t)64 * 1024) /* a larger response buffer is freed on recycling */
#define CONNECT_MAX_MS 10000L              /* connecting never takes longer than this */

struct upstream_req {
    struct upstream *up;
    CURL *easy;
    upstream_done_fn done;
    void *ctx;
    char *resp; /* owned: the response body, NUL-terminated */
    size_t resp_len;
    size_t resp_cap;
    bool too_large;
    upstream_chunk_fn chunk;          /* a stream request: event-stream bodies go here */
    int sse;                          /* -1 not known yet, 0 no (gathered), 1 yes (to chunk) */
    struct upstream_req *prev, *next; /* in the active list, or next in the free list */
    char errbuf[CURL_ERROR_SIZE];
};

struct upstream_sock {
    curl_socket_t fd;
    short events;
};

struct upstream {
    CURLM *multi;
    char *base_url; /* owned */
    char *token;    /* owned, or NULL */
    long timeout_ms;
    struct curl_slist *post_headers;     /* owned */
    struct curl_slist *get_headers;      /* owned */
    struct curl_slist *post_sse_headers; /* owned: the same asking for text/event-stream */
    struct curl_slist *get_sse_headers;  /* owned */
    struct upstream_req *active;         /* requests in flight (doubly linked) */
    size_t nactive;
    struct upstream_req *free_list; /* idle requests (singly linked through next) */
    size_t nfree;
    struct upstream_sock *socks; /* owned: what curl wants watched */
    size_t nsocks, socks_cap;
    int64_t deadline_ms; /* curl's next timer, or -1 */
};

/* libcurl is opened with dlopen() when the first request starts, not by the dynamic loader at
 * exec (common/dynlib.h): runbox must answer initialize about as fast as a process that has
 * none of its thirty libraries. */
static const struct dynlib_curl *const cu = &dynlib_curl;

/* ---- curl callbacks ---- */

/* True when the answer's Content-Type is text/event-stream (known once the body begins). */
static bool is_event_stream(struct upstream_req *r)
{
    char *ctype = NULL;

    if (cu->easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ctype) != CURLE_OK || !ctype)
        return false;
    return strncasecmp(ctype, "text/event-stream", 17) == 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userp)
{
    struct upstream_req *r = userp;
    size_t n = size * nmemb;

    if (r->chunk) {
        if (r->sse < 0)
            r->sse = is_event_stream(r) ? 1 : 0;
        if (r->sse) {
            r->chunk(r->ctx, data, n);
            return n;
        }
    }
    if (n > UPSTREAM_MAX_BODY - r->resp_len) {
        r->too_large = true;
        return 0; /* makes curl stop with CURLE_WRITE_ERROR */
    }
    if (r->resp_len + n + 1 > r->resp_cap) {
        size_t cap = r->resp_cap ? r->resp_cap : 4096;
        char *nb;

        while (cap < r->resp_len + n + 1)
            cap *= 2;
        nb = realloc(r->resp, cap);
        if (!nb)
            return 0;
        r->resp = nb;
        r->resp_cap = cap;
    }
    memcpy(r->resp + r->resp_len, data, n);
    r->resp_len += n;
    r->resp[r->resp_len] = '\0';
    return n;
}

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    struct upstream *up = userp;
    size_t i;

    (void)easy;
    (void)socketp;
    for (i = 0; i < up->nsocks && up->socks[i].fd != s; i++)
        ;
    if (what == CURL_POLL_REMOVE) {
        if (i < up->nsocks)
            up->socks[i] = up->socks[--up->nsocks];
        return 0;
    }
    if (i == up->nsocks) {
        if (up->nsocks == up->socks_cap) {
            size_t cap = up->socks_cap ? up->socks_cap * 2 : 8;
            struct upstream_sock *ns = realloc(up->socks, cap * sizeof(*ns));

            if (!ns)
                return -1;
            up->socks = ns;
            up->socks_cap = cap;
        }
        up->socks[up->nsocks++].fd = s;
    }
    up->socks[i].events =
        (short)(((what & CURL_POLL_IN) ? POLLIN : 0) | ((what & CURL_POLL_OUT) ? POLLOUT : 0));
    return 0;
}

/* curl's timer is one-shot: it is cleared when it fires and curl sets the next one. */
static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
    struct upstream *up = userp;

    (void)multi;
    up->deadline_ms = timeout_ms < 0 ? -1 : clocks_mono_ms() + timeout_ms;
    return 0;
}

/* ---- requests ---- */

static void req_destroy(struct upstream_req *r)
{
    if (!r)
        return;
    cu->easy_cleanup(r->easy);
    free(r->resp);
    free(r);
}

/* Options that stay the same for every request an easy handle carries. */
static int req_setup(struct upstream_req *r)
{
    CURL *e = r->easy;
    CURLcode rc = CURLE_OK;

#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (rc == CURLE_OK)                                                                        \
            rc = cu->easy_setopt(e, opt, val);                                                     \
    } while (0)
    SET(CURLOPT_PRIVATE, r);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, r);
    SET(CURLOPT_ERRORBUFFER, r->errbuf);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_TCP_NODELAY, 1L);
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    SET(CURLOPT_PROXY, ""); /* the daemon is never reached through an http_proxy */
    SET(CURLOPT_CONNECTTIMEOUT_MS, CONNECT_MAX_MS);
#undef SET
    return rc == CURLE_OK ? 0 : -1;
}

static struct upstream_req *req_get(struct upstream *up, struct errinfo *err)
{
    struct upstream_req *r = up->free_list;

    if (r) {
        up->free_list = r->next;
        up->nfree--;
        r->next = NULL;
        return r;
    }
    r = calloc(1, sizeof(*r));
    if (!r)
        goto fail;
    r->up = up;
    r->easy = cu->easy_init();
    if (!r->easy || req_setup(r) < 0)
        goto fail;
    return r;
fail:
    req_destroy(r);
    errinfo_set(err, ERR_NOMEM, "upstream: cannot create a libcurl handle");
    return NULL;
}

static void req_put(struct upstream *up, struct upstream_req *r)
{
    r->done = NULL;
    r->ctx = NULL;
    r->chunk = NULL;
    r->resp_len = 0;
    r->too_large = false;
    r->errbuf[0] = '\0';
    r->prev = NULL;
    if (r->resp_cap > RESP_KEEP) {
        free(r->resp);
        r->resp = NULL;
        r->resp_cap = 0;
    }
    if (up->nfree >= FREE_MAX) {
        req_destroy(r);
        return;
    }
    r->next = up->free_list;
    up->free_list = r;
    up->nfree++;
}

static void active_link(struct upstream *up, struct upstream_req *r)
{
    r->prev = NULL;
    r->next = up->active;
    if (up->active)
        up->active->prev = r;
    up->active = r;
    up->nactive++;
}

static void active_unlink(struct upstream *up, struct upstream_req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        up->active = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
    up->nactive--;
}

static int ensure_ready(struct upstream *up, struct errinfo *err);

static struct upstream_req *start(struct upstream *up, const char *path, const char *body,
                                  size_t len, long timeout_ms, upstream_chunk_fn chunk,
                                  upstream_done_fn done, void *ctx, struct errinfo *err)
{
    char url[UPSTREAM_URL_MAX + 512];
    struct upstream_req *r;
    CURLcode rc;
    int n = snprintf(url, sizeof(url), "%s%s", up->base_url, path);

    if (n < 0 || (size_t)n >= sizeof(url)) {
        errinfo_set(err, ERR_TOO_LARGE, "upstream: URL for %.64s is too long", path);
        return NULL;
    }
    if (ensure_ready(up, err) < 0)
        return NULL;
    r = req_get(up, err);
    if (!r)
        return NULL;
    rc = cu->easy_setopt(r->easy, CURLOPT_URL, url);
    if (rc == CURLE_OK)
        rc = cu->easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    if (rc == CURLE_OK && body) {
        rc = cu->easy_setopt(r->easy, CURLOPT_HTTPHEADER,
                             chunk ? up->post_sse_headers : up->post_headers);
        if (rc == CURLE_OK)
            rc = cu->easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
        if (rc == CURLE_OK)
            rc = cu->easy_setopt(r->easy, CURLOPT_POSTFIELDS, body);
    } else if (rc == CURLE_OK) {
        rc = cu->easy_setopt(r->easy, CURLOPT_HTTPHEADER,
                             chunk ? up->get_sse_headers : up->get_headers);
        if (rc == CURLE_OK)
            rc = cu->easy_setopt(r->easy, CURLOPT_HTTPGET, 1L);
    }
    if (rc != CURLE_OK || cu->multi_add_handle(up->multi, r->easy) != CURLM_OK) {
        errinfo_set(err, ERR_INTERNAL, "upstream: cannot start the request to %.200s: %s", url,
                    cu->easy_strerror(rc));
        req_put(up, r);
        return NULL;
    }
    r->done = done;
    r->ctx = ctx;
    r->chunk = chunk;
    r->sse = -1;
    active_link(up, r);
    log_trace("upstream: %s %s", body ? "POST" : "GET", url);
    return r;
}

struct upstream_req *upstream_post(struct upstream *up, const char *path, const char *body,
                                   size_t len, upstream_done_fn done, void *ctx,
                                   struct errinfo *err)
{
    return start(up, path, body ? body : "", body ? len : 0, up->timeout_ms, NULL, done, ctx, err);
}

struct upstream_req *upstream_post_stream(struct upstream *up, const char *path, const char *body,
                                          size_t len, upstream_chunk_fn chunk,
                                          upstream_done_fn done, void *ctx, struct errinfo *err)
{
    return start(up, path, body ? body : "", body ? len : 0, up->timeout_ms, chunk, done, ctx, err);
}

struct upstream_req *upstream_get_stream(struct upstream *up, const char *path,
                                         upstream_chunk_fn chunk, upstream_done_fn done, void *ctx,
                                         struct errinfo *err)
{
    return start(up, path, NULL, 0, 0, chunk, done, ctx, err);
}

struct upstream_req *upstream_get(struct upstream *up, const char *path, long timeout_ms,
                                  upstream_done_fn done, void *ctx, struct errinfo *err)
{
    return start(up, path, NULL, 0, timeout_ms > 0 ? timeout_ms : up->timeout_ms, NULL, done, ctx,
                 err);
}

void upstream_cancel(struct upstream *up, struct upstream_req *req)
{
    if (!req)
        return;
    cu->multi_remove_handle(up->multi, req->easy);
    active_unlink(up, req);
    req_put(up, req);
}

size_t upstream_inflight(const struct upstream *up)
{
    return up->nactive;
}

const char *upstream_base_url(const struct upstream *up)
{
    return up->base_url;
}

/* ---- completion ---- */

static enum upstream_outcome classify(CURLcode rc, bool too_large)
{
    if (rc == CURLE_OK)
        return UPSTREAM_ANSWERED;
    if (rc == CURLE_COULDNT_CONNECT)
        return UPSTREAM_REFUSED;
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return UPSTREAM_TIMEOUT;
    if (rc == CURLE_GOT_NOTHING || rc == CURLE_RECV_ERROR || rc == CURLE_PARTIAL_FILE ||
        rc == CURLE_SEND_ERROR)
        return UPSTREAM_DROPPED;
    if (rc == CURLE_WRITE_ERROR && too_large)
        return UPSTREAM_TOO_LARGE;
    return UPSTREAM_FAILED;
}

static void finish(struct upstream *up, struct upstream_req *r, CURLcode rc)
{
    struct upstream_reply rep;
    long status = 0, os_errno = 0;

    memset(&rep, 0, sizeof(rep));
    rep.outcome = classify(rc, r->too_large);
    if (rep.outcome == UPSTREAM_ANSWERED)
        cu->easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    else
        cu->easy_getinfo(r->easy, CURLINFO_OS_ERRNO, &os_errno);
    if (rep.outcome == UPSTREAM_REFUSED) {
        long sent = 0;

        /* curl retries a request whose reused connection died before any answer came; when
         * that retry is refused, the request had still reached the daemon once. */
        cu->easy_getinfo(r->easy, CURLINFO_REQUEST_SIZE, &sent);
        if (sent > 0)
            rep.outcome = UPSTREAM_DROPPED;
    }
    rep.status = status;
    rep.os_errno = (int)os_errno;
    rep.body = r->resp ? r->resp : "";
    rep.body_len = r->resp_len;
    rep.error = r->errbuf[0] ? r->errbuf : cu->easy_strerror(rc);
    if (rep.outcome != UPSTREAM_ANSWERED)
        log_debug("upstream: request ended without an answer: %s (curl %d)", rep.error, (int)rc);
    r->done(r->ctx, &rep);
    req_put(up, r);
}

static void collect_done(struct upstream *up)
{
    for (;;) {
        int left = 0;
        CURLMsg *m = cu->multi_info_read(up->multi, &left);
        struct upstream_req *r = NULL;
        CURLcode rc;
        CURL *easy;

        if (!m)
            break;
        if (m->msg != CURLMSG_DONE)
            continue;
        easy = m->easy_handle;
        rc = m->data.result; /* m is invalid after the next multi call */
        cu->easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
        cu->multi_remove_handle(up->multi, easy);
        active_unlink(up, r);
        finish(up, r, rc);
    }
}

size_t upstream_pollfds(const struct upstream *up, struct pollfd *fds, size_t max)
{
    for (size_t i = 0; i < up->nsocks && i < max; i++) {
        fds[i].fd = up->socks[i].fd;
        fds[i].events = up->socks[i].events;
        fds[i].revents = 0;
    }
    return up->nsocks;
}

int upstream_timeout_ms(const struct upstream *up, int64_t now_ms)
{
    if (up->deadline_ms < 0)
        return -1;
    if (up->deadline_ms <= now_ms)
        return 0;
    return up->deadline_ms - now_ms > 60000 ? 60000 : (int)(up->deadline_ms - now_ms);
}

void upstream_dispatch(struct upstream *up, const struct pollfd *fds, size_t n, int64_t now_ms)
{
    int running = 0;

    if (!up->multi)
        return; /* no request was ever started: libcurl is not even loaded */
    for (size_t i = 0; i < n; i++) {
        int ev = 0;

        if (!fds[i].revents)
            continue;
        if (fds[i].revents & (POLLIN | POLLHUP))
            ev |= CURL_CSELECT_IN;
        if (fds[i].revents & POLLOUT)
            ev |= CURL_CSELECT_OUT;
        if (fds[i].revents & (POLLERR | POLLNVAL))
            ev |= CURL_CSELECT_ERR;
        cu->multi_socket_action(up->multi, fds[i].fd, ev, &running);
    }
    if (up->deadline_ms >= 0 && up->deadline_ms <= now_ms) {
        up->deadline_ms = -1;
        cu->multi_socket_action(up->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
    collect_done(up);
}

/* ---- setup ---- */

/* Appends lines[0..n) and, when auth is set, auth to *list. Returns false when out of memory. */
static bool append_headers(struct curl_slist **list, const char *const *lines, size_t n,
                           const char *auth)
{
    for (size_t i = 0; i <= n; i++) {
        const char *h = i < n ? lines[i] : auth;
        struct curl_slist *l;

        if (!h)
            continue;
        l = cu->slist_append(*list, h);
        if (!l)
            return false;
        *list = l;
    }
    return true;
}

static int build_headers(struct upstream *up, const char *token, struct errinfo *err)
{
    /* "Expect:": no 100-continue wait for bodies over 1 KiB (civetweb never sends one).
     * X-Runbox-Client names this runbox process (pid and start time), so that runboxd serves
     * Studio calls from several runbox processes in turn (docs/http-api.md). */
    char client[80];
    const char *const post[] = {"Content-Type: application/json", "Accept: application/json",
                                "Expect:", client};
    const char *const post_sse[] = {"Content-Type: application/json", "Accept: text/event-stream",
                                    "Expect:", client};
    static const char *const get[] = {"Accept: application/json"};
    static const char *const get_sse[] = {"Accept: text/event-stream"};
    char auth[UPSTREAM_TOKEN_MAX + 32];
    const char *a = NULL;

    static unsigned long started; /* the first build's time: the name stays across rebuilds */

    if (!started)
        started = (unsigned long)time(NULL);
    snprintf(client, sizeof(client), "X-Runbox-Client: runbox-%ld-%lx", (long)getpid(), started);

    if (token && *token) {
        int n = snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);

        if (n < 0 || (size_t)n >= sizeof(auth)) {
            errinfo_set(err, ERR_INVALID, "RUNBOX_TOKEN is too long");
            return -1;
        }
        a = auth;
    }
    if (!append_headers(&up->post_headers, post, 4, a) ||
        !append_headers(&up->post_sse_headers, post_sse, 4, a) ||
        !append_headers(&up->get_headers, get, 1, a) ||
        !append_headers(&up->get_sse_headers, get_sse, 1, a)) {
        errinfo_set(err, ERR_NOMEM, "upstream: out of memory for HTTP headers");
        return -1;
    }
    return 0;
}

static int setup_multi(struct upstream *up)
{
    CURLMcode mc = CURLM_OK;

#define MSET(opt, val)                                                                             \
    do {                                                                                           \
        if (mc == CURLM_OK)                                                                        \
            mc = cu->multi_setopt(up->multi, opt, val);                                            \
    } while (0)
    MSET(CURLMOPT_SOCKETFUNCTION, on_socket);
    MSET(CURLMOPT_SOCKETDATA, up);
    MSET(CURLMOPT_TIMERFUNCTION, on_timer);
    MSET(CURLMOPT_TIMERDATA, up);
    MSET(CURLMOPT_MAXCONNECTS, (long)MAX_CONNECTS);
#undef MSET
    return mc == CURLM_OK ? 0 : -1;
}

/* Loads libcurl and creates the multi handle on the first request. On failure nothing is kept,
 * so the next request tries again. */
static int ensure_ready(struct upstream *up, struct errinfo *err)
{
    if (up->multi)
        return 0;
    if (dynlib_load_curl(err) < 0)
        return -1;
    up->multi = cu->multi_init();
    if (!up->multi) {
        errinfo_set(err, ERR_NOMEM, "upstream: cannot create the libcurl multi handle");
        goto fail;
    }
    if (setup_multi(up) < 0) {
        errinfo_set(err, ERR_INTERNAL, "upstream: libcurl refused the multi options");
        goto fail;
    }
    if (build_headers(up, up->token, err) < 0)
        goto fail;
    return 0;
fail:
    cu->slist_free_all(up->post_headers);
    cu->slist_free_all(up->get_headers);
    cu->slist_free_all(up->post_sse_headers);
    cu->slist_free_all(up->get_sse_headers);
    up->post_headers = up->get_headers = up->post_sse_headers = up->get_sse_headers = NULL;
    if (up->multi)
        cu->multi_cleanup(up->multi);
    up->multi = NULL;
    return -1;
}

struct upstream *upstream_new(const struct upstream_config *cfg, struct errinfo *err)
{
    struct upstream *up = calloc(1, sizeof(*up));
    size_t len = strlen(cfg->base_url);

    if (!up) {
        errinfo_set(err, ERR_NOMEM, "upstream: out of memory");
        return NULL;
    }
    up->deadline_ms = -1;
    up->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 120000;
    while (len > 0 && cfg->base_url[len - 1] == '/')
        len--;
    if (len == 0 || len > UPSTREAM_URL_MAX) {
        errinfo_set(err, ERR_INVALID, "DAEMON_URL must be a URL of 1 to %d characters",
                    UPSTREAM_URL_MAX);
        goto fail;
    }
    if (cfg->token && strlen(cfg->token) > UPSTREAM_TOKEN_MAX) {
        errinfo_set(err, ERR_INVALID, "RUNBOX_TOKEN is too long (at most %d bytes)",
                    UPSTREAM_TOKEN_MAX);
        goto fail;
    }
    up->base_url = strndup(cfg->base_url, len);
    up->token = cfg->token && *cfg->token ? strdup(cfg->token) : NULL;
    if (!up->base_url || (cfg->token && *cfg->token && !up->token)) {
        errinfo_set(err, ERR_NOMEM, "upstream: out of memory");
        goto fail;
    }
    return up;
fail:
    upstream_free(up);
    return NULL;
}

void upstream_free(struct upstream *up)
{
    if (!up)
        return;
    while (up->active) {
        struct upstream_req *r = up->active;

        cu->multi_remove_handle(up->multi, r->easy);
        active_unlink(up, r);
        req_destroy(r);
    }
    while (up->free_list) {
        struct upstream_req *r = up->free_list;

        up->free_list = r->next;
        req_destroy(r);
    }
    if (up->multi) {
        cu->multi_cleanup(up->multi);
        cu->slist_free_all(up->post_headers);
        cu->slist_free_all(up->get_headers);
        cu->slist_free_all(up->post_sse_headers);
        cu->slist_free_all(up->get_sse_headers);
    }
    free(up->socks);
    free(up->base_url);
    free(up->token);
    free(up);
}
