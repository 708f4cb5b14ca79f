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

#define TOKEN_MARK "{{PAGE_TOKEN}}"

struct status_page {
    char token[STATUS_PAGE_TOKEN_LEN + 1];
    char *html; /* owned: index.html with the token in */
    size_t html_len;
};

static const struct status_page_asset *asset(const char *path)
{
    if (strcmp(path, "/") == 0)
        path = "/index.html";
    for (size_t i = 0; i < status_page_nassets; i++)
        if (strcmp(status_page_assets[i].path, path) == 0)
            return &status_page_assets[i];
    return NULL;
}

bool status_page_is_path(const char *path)
{
    return strcmp(path, "/") == 0 || (strcmp(path, "/index.html") != 0 && asset(path) != NULL);
}

struct status_page *status_page_new(struct errinfo *err)
{
    struct status_page *p = calloc(1, sizeof(*p));
    const struct status_page_asset *a = asset("/");
    unsigned char raw[STATUS_PAGE_TOKEN_LEN / 2];
    const char *mark;
    size_t pre;

    if (!p) {
        errinfo_set(err, ERR_NOMEM, "status page: out of memory");
        return NULL;
    }
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        errinfo_sys(err, "status page: no random bytes for its token");
        free(p);
        return NULL;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(p->token + 2 * i, 3, "%02x", raw[i]);
    mark = a ? strstr(a->data, TOKEN_MARK) : NULL;
    if (!mark) {
        errinfo_set(err, ERR_INTERNAL, "status page: index.html has no %s", TOKEN_MARK);
        free(p);
        return NULL;
    }
    pre = (size_t)(mark - a->data);
    p->html_len = a->len - strlen(TOKEN_MARK) + STATUS_PAGE_TOKEN_LEN;
    p->html = malloc(p->html_len + 1);
    if (!p->html) {
        errinfo_set(err, ERR_NOMEM, "status page: out of memory");
        free(p);
        return NULL;
    }
    memcpy(p->html, a->data, pre);
    memcpy(p->html + pre, p->token, STATUS_PAGE_TOKEN_LEN);
    memcpy(p->html + pre + STATUS_PAGE_TOKEN_LEN, mark + strlen(TOKEN_MARK),
           a->len - pre - strlen(TOKEN_MARK));
    p->html[p->html_len] = '\0';
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

static const char *content_type(const char *path)
{
    const char *dot = strrchr(path, '.');

    if (!dot || strcmp(path, "/") == 0 || strcmp(dot, ".html") == 0)
        return "text/html; charset=utf-8";
    if (strcmp(dot, ".css") == 0)
        return "text/css; charset=utf-8";
    if (strcmp(dot, ".js") == 0)
        return "text/javascript; charset=utf-8";
    if (strcmp(dot, ".svg") == 0)
        return "image/svg+xml";
    return "application/octet-stream";
}

int status_page_handle(const struct status_page *p, struct mg_connection *conn, const char *method,
                       const char *path)
{
    const struct status_page_asset *a = asset(path);
    const char *body;
    size_t len;
    char head[1024];
    int n;

    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return api_send_error(conn, 405, "the status page is read with GET", "Allow", "GET");
    if (!a)
        return api_send_error(conn, 404, "no such file of the status page", NULL, NULL);
    body = strcmp(path, "/") == 0 ? p->html : a->data;
    len = strcmp(path, "/") == 0 ? p->html_len : a->len;
    /* Same-origin only, in every way a browser can be told: no framing, no embedding by other
     * sites, no sniffing, no referrer, and scripts and connections only from here. */
    n = snprintf(head, sizeof(head),
                 "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                 "Cache-Control: no-store\r\n"
                 "Content-Security-Policy: default-src 'none'; script-src 'self'; style-src "
                 "'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "
                 "base-uri 'none'; form-action 'none'\r\n"
                 "X-Frame-Options: DENY\r\nX-Content-Type-Options: nosniff\r\n"
                 "Referrer-Policy: no-referrer\r\nCross-Origin-Resource-Policy: same-origin\r\n"
                 "Cross-Origin-Opener-Policy: same-origin\r\n\r\n",
                 content_type(path), len);
    if (n < 0 || (size_t)n >= sizeof(head))
        return api_send_error(conn, 500, "status page: header too long", NULL, NULL);
    mg_write(conn, head, (size_t)n);
    if (strcmp(method, "GET") == 0)
        mg_write(conn, body, len);
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
    if (r->origin && strcmp(r->method, "POST") == 0 && !token_ok(r->page_token, p->token))
        return "forbidden: a browser's POST needs the status page's token "
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
