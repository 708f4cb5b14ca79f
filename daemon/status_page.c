/* daemon/status_page.c - the status page's files and its browser rules (see status_page.h). */
#include "status_page.h"
#include "status_page_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include <civetweb.h>

#include "api.h"
#include "jsonbuf.h"

#define HTML_MAX ((size_t)1 << 20) /* the page with its style and script in */

/* The page is one response: index.html with status.css and status.js put in (one round trip
 * instead of three), allowed by a CSP nonce, and the page token. */
struct status_page {
    char token[STATUS_PAGE_TOKEN_LEN + 1];
    char nonce[STATUS_PAGE_TOKEN_LEN + 1];
    char *html; /* owned */
    size_t html_len;
};

static const struct status_page_asset *asset(const char *name)
{
    for (size_t i = 0; i < status_page_nassets; i++)
        if (strcmp(status_page_assets[i].path, name) == 0)
            return &status_page_assets[i];
    return NULL;
}

bool status_page_is_path(const char *path)
{
    return strcmp(path, "/") == 0;
}

static int random_hex(char *out, struct errinfo *err)
{
    unsigned char raw[STATUS_PAGE_TOKEN_LEN / 2];

    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        errinfo_sys(err, "status page: no random bytes for its token");
        return -1;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

/* index.html with each {{NAME}} replaced. Returns 0, or -1 with err (a mark with no value, a
 * script that would end its own element, no memory). */
static int build_html(struct status_page *p, struct errinfo *err)
{
    const struct status_page_asset *html = asset("/index.html"), *css = asset("/status.css"),
                                   *js = asset("/status.js");
    const struct {
        const char *mark, *value;
    } vals[] = {{"{{PAGE_TOKEN}}", p->token},
                {"{{NONCE}}", p->nonce},
                {"{{STYLE}}", css ? css->data : NULL},
                {"{{SCRIPT}}", js ? js->data : NULL}};
    struct jsonbuf b = JSONBUF_INIT(HTML_MAX);
    const char *s;

    if (!html || !css || !js || strstr(js->data, "</script") || strstr(css->data, "</style")) {
        errinfo_set(err, ERR_INTERNAL,
                    "status page: daemon/status/ is incomplete or its "
                    "script or style would end its own element");
        return -1;
    }
    for (s = html->data; *s;) {
        const char *open = strstr(s, "{{");
        size_t k = 0;

        if (!open) {
            jsonbuf_puts(&b, s, NULL);
            break;
        }
        jsonbuf_put(&b, s, (size_t)(open - s), NULL);
        while (k < sizeof(vals) / sizeof(vals[0]) &&
               strncmp(open, vals[k].mark, strlen(vals[k].mark)) != 0)
            k++;
        if (k == sizeof(vals) / sizeof(vals[0])) {
            jsonbuf_cleanup(&b);
            errinfo_set(err, ERR_INTERNAL, "status page: unknown mark %.20s in index.html", open);
            return -1;
        }
        jsonbuf_puts(&b, vals[k].value, NULL);
        s = open + strlen(vals[k].mark);
    }
    if (b.failed) {
        jsonbuf_cleanup(&b);
        errinfo_set(err, ERR_NOMEM, "status page: out of memory");
        return -1;
    }
    p->html = jsonbuf_take(&b, &p->html_len);
    return p->html ? 0 : -1;
}

struct status_page *status_page_new(struct errinfo *err)
{
    struct status_page *p = calloc(1, sizeof(*p));

    if (!p) {
        errinfo_set(err, ERR_NOMEM, "status page: out of memory");
        return NULL;
    }
    if (random_hex(p->token, err) < 0 || random_hex(p->nonce, err) < 0 || build_html(p, err) < 0) {
        free(p->html);
        free(p);
        return NULL;
    }
    return p;
}

void status_page_free(struct status_page *p)
{
    if (!p)
        return;
    free(p->html);
    free(p);
}

const char *status_page_token(const struct status_page *p)
{
    return p->token;
}

int status_page_handle(const struct status_page *p, struct mg_connection *conn, const char *method,
                       const char *path)
{
    char head[1024];
    int n;

    (void)path;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return api_send_error(conn, 405, "the status page is read with GET", "Allow", "GET");
    /* Same-origin only, in every way a browser can be told: no framing, no embedding by other
     * sites, no sniffing, no referrer, and scripts and connections only from here. */
    n = snprintf(head, sizeof(head),
                 "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                 "Content-Length: %zu\r\nCache-Control: no-store\r\n"
                 "Content-Security-Policy: default-src 'none'; script-src 'nonce-%s'; style-src "
                 "'nonce-%s'; img-src data:; connect-src 'self'; frame-ancestors 'none'; "
                 "base-uri 'none'; form-action 'none'\r\n"
                 "X-Frame-Options: DENY\r\nX-Content-Type-Options: nosniff\r\n"
                 "Referrer-Policy: no-referrer\r\nCross-Origin-Resource-Policy: same-origin\r\n"
                 "Cross-Origin-Opener-Policy: same-origin\r\n%s\r\n",
                 p->html_len, p->nonce, p->nonce, api_conn_line(conn));
    if (n < 0 || (size_t)n >= sizeof(head))
        return api_send_error(conn, 500, "status page: header too long", NULL, NULL);
    mg_write(conn, head, (size_t)n);
    if (strcmp(method, "GET") == 0)
        mg_write(conn, p->html, p->html_len);
    return 200;
}

/* ---- the browser rules ---- */

static bool token_ok(const char *have, const char *want)
{
    size_t hl = have ? strlen(have) : 0;
    unsigned diff = hl == STATUS_PAGE_TOKEN_LEN ? 0 : 1;

    for (size_t i = 0; i < STATUS_PAGE_TOKEN_LEN; i++)
        diff |= (unsigned char)want[i] ^ (unsigned char)(i < hl ? have[i] : 0);
    return diff == 0;
}

const char *status_page_refusal(const struct status_page *p, const struct status_page_request *r)
{
    const char *site = r->fetch_site;

    if (site && strcasecmp(site, "same-origin") != 0 && strcasecmp(site, "none") != 0) {
        bool follows_link = strcmp(r->method, "GET") == 0 && strcmp(r->path, "/") == 0 &&
                            r->fetch_mode && strcasecmp(r->fetch_mode, "navigate") == 0 &&
                            r->fetch_dest && strcasecmp(r->fetch_dest, "document") == 0;

        if (!follows_link)
            return "forbidden: this request comes from another site (Sec-Fetch-Site); runboxd "
                   "answers only its own page";
    }
    /* The page acts through POST /tool/<name>; the MCP endpoints keep MCP's rule (an Origin
     * of our own is accepted), which the MCP conformance suite checks. */
    if (r->origin && strcmp(r->method, "POST") == 0 && strncmp(r->path, "/tool/", 6) == 0 &&
        !token_ok(r->page_token, p->token))
        return "forbidden: a browser's tool call needs the status page's token "
               "(" STATUS_PAGE_TOKEN_HEADER "), which only the page at / has";
    return NULL;
}

const char *status_page_check(const struct status_page *p, const struct mg_connection *conn)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    struct mg_connection *c = (struct mg_connection *)conn; /* mg_get_header is not const */
    struct status_page_request r = {
        .method = ri->request_method,
        .path = ri->local_uri_raw ? ri->local_uri_raw : "",
        .origin = mg_get_header(c, "Origin"),
        .fetch_site = mg_get_header(c, "Sec-Fetch-Site"),
        .fetch_mode = mg_get_header(c, "Sec-Fetch-Mode"),
        .fetch_dest = mg_get_header(c, "Sec-Fetch-Dest"),
        .page_token = mg_get_header(c, STATUS_PAGE_TOKEN_HEADER),
    };

    return status_page_refusal(p, &r);
}
