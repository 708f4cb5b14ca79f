/* common/mcp_http_checks.c - the checks a local MCP server makes on every HTTP request (see
 * runbox/mcp_http.h): its Host must name it, and no browser page may call it (Origin). Pure:
 * no I/O, no state. They stop DNS rebinding (a page on evil.example whose name resolves to
 * 127.0.0.1 sends Host: evil.example) and cross-site requests (a page sends its own Origin).
 *
 * And the framing checks of RFC 9112 that civetweb 1.15 does not make (it reads Content-Length
 * when Transfer-Encoding is there too, takes "Transfer-Encoding :" as the real thing, uses the
 * first of two Content-Length headers, and decodes %00 in the path into a NUL that cuts it):
 * a request that could be read two ways is refused before any handler sees it. */
#include "mcp_http_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <civetweb.h>

static bool is_wildcard(const char *bind)
{
    return strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "::") == 0;
}

/* True when name (the host part of Host, brackets kept for IPv6) is one of our names. */
static bool host_name_ok(const char *name, size_t len, const char *bind)
{
    static const char *const loop[] = {"127.0.0.1", "localhost", "[::1]"};
    size_t blen = strlen(bind);

    for (size_t i = 0; i < sizeof(loop) / sizeof(loop[0]); i++)
        if (strlen(loop[i]) == len && strncasecmp(name, loop[i], len) == 0)
            return true;
    if (strchr(bind, ':')) /* IPv6: Host carries it in brackets */
        return len == blen + 2 && name[0] == '[' && strncasecmp(name + 1, bind, blen) == 0;
    return len == blen && strncmp(name, bind, len) == 0;
}

bool mcp_http_host_ok(const char *host, int port, const char *bind)
{
    const char *colon;
    size_t nlen;
    char *end = NULL;
    long p;

    if (!host || !host[0])
        return false;
    if (is_wildcard(bind))
        return true; /* reachable under any name; the embedder must require a token */
    if (host[0] == '[') {
        const char *close = strchr(host, ']');

        if (!close)
            return false;
        nlen = (size_t)(close - host) + 1;
        colon = close[1] == ':' ? close + 1 : NULL;
        if (!colon && close[1])
            return false;
    } else {
        colon = strchr(host, ':');
        nlen = colon ? (size_t)(colon - host) : strlen(host);
    }
    if (!host_name_ok(host, nlen, bind))
        return false;
    if (!colon)
        return true;
    /* The port is decimal digits only (RFC 3986): strtol alone would take " 7766" or "+7766". */
    if (colon[1] < '0' || colon[1] > '9')
        return false;
    errno = 0;
    p = strtol(colon + 1, &end, 10);
    return !errno && !*end && p == port;
}

bool mcp_http_origin_ok(const char *origin, int port, const char *bind)
{
    char want[32];

    if (!origin)
        return true;
    if (strncasecmp(origin, "http://", 7) != 0)
        return false;
    /* The rule of Host for the part after "http://", but the port is mandatory: a browser always
     * sends it for a port other than 80. */
    snprintf(want, sizeof(want), ":%d", port);
    if (strlen(origin) < 7 + strlen(want) ||
        strcmp(origin + strlen(origin) - strlen(want), want) != 0)
        return false;
    if (is_wildcard(bind))
        return false; /* no page on any host should be calling us */
    return mcp_http_host_ok(origin + 7, port, bind);
}

/* ---- the framing of a request (RFC 9112), as civetweb 1.15 parsed it ---- */

/* Headers that may appear once. A second Content-Length or Transfer-Encoding is how a request
 * is smuggled past a server that reads the other one; for the others, mg_get_header() returns
 * the first, so a check would read one value while a later reader might see another. */
enum { ONE_HOST, ONE_ORIGIN, ONE_LENGTH, ONE_ENCODING, ONE_TYPE, ONE_AUTH, ONE_N };
static const char *const singletons[ONE_N] = {
    [ONE_HOST] = "Host",
    [ONE_ORIGIN] = "Origin",
    [ONE_LENGTH] = "Content-Length",
    [ONE_ENCODING] = "Transfer-Encoding",
    [ONE_TYPE] = "Content-Type",
    [ONE_AUTH] = "Authorization",
};

/* True when the header name was followed by whitespace before its colon. civetweb overwrites
 * such spaces with NUL bytes, as it does the colon, and keeps the spaces after the colon: so
 * between the end of the name and the start of the value there is exactly one NUL byte for a
 * well-formed field and more for "Name : value". Both pointers point into civetweb's request
 * buffer, the value after the name. */
static bool space_before_colon(const struct mg_header *h)
{
    const char *p = h->name + strlen(h->name);
    int nuls = 0;

    while (p < h->value && *p == '\0') {
        nuls++;
        p++;
    }
    return nuls > 1;
}

/* The length of v without trailing spaces (civetweb drops the leading ones). */
static size_t trimmed_len(const char *v)
{
    size_t n = strlen(v);

    while (n && v[n - 1] == ' ')
        n--;
    return n;
}

static int check_headers(const struct mg_request_info *ri, const char **te, const char **cl,
                         struct errinfo *err)
{
    int seen[ONE_N] = {0};

    if (ri->num_headers >= MG_MAX_HEADERS) {
        errinfo_set(err, ERR_INVALID,
                    "the request has %d or more header lines, and the server reads no more; "
                    "send at most %d",
                    MG_MAX_HEADERS, MG_MAX_HEADERS - 1);
        return -1;
    }
    for (int i = 0; i < ri->num_headers; i++) {
        const struct mg_header *h = &ri->http_headers[i];

        if (space_before_colon(h)) {
            errinfo_set(err, ERR_INVALID,
                        "the header \"%.64s\" has whitespace before its colon, which HTTP "
                        "forbids; write \"%.64s: value\"",
                        h->name, h->name);
            return -1;
        }
        for (int k = 0; k < ONE_N; k++) {
            if (strcasecmp(h->name, singletons[k]) != 0)
                continue;
            if (seen[k]++) {
                errinfo_set(err, ERR_INVALID, "the request has two %s headers; send exactly one",
                            singletons[k]);
                return -1;
            }
            if (k == ONE_LENGTH)
                *cl = h->value;
            else if (k == ONE_ENCODING)
                *te = h->value;
        }
    }
    return 0;
}

static int check_body_framing(const struct mg_request_info *ri, const char *te, const char *cl,
                              struct errinfo *err)
{
    if (te && cl) {
        errinfo_set(err, ERR_INVALID,
                    "the request has both Content-Length and Transfer-Encoding; send one of "
                    "them (Content-Length, or Transfer-Encoding: chunked)");
        return -1;
    }
    if (te && (trimmed_len(te) != 7 || strncasecmp(te, "chunked", 7) != 0)) {
        errinfo_set(err, ERR_INVALID,
                    "Transfer-Encoding \"%.40s\" is not supported; the only one accepted is "
                    "exactly \"chunked\"",
                    te);
        return -1;
    }
    if (te && (!ri->http_version || strcmp(ri->http_version, "1.1") != 0)) {
        errinfo_set(err, ERR_INVALID,
                    "Transfer-Encoding needs HTTP/1.1; an HTTP/1.0 request sends "
                    "Content-Length");
        return -1;
    }
    if (cl) {
        size_t n = trimmed_len(cl);
        bool digits = n > 0 && n <= 19;

        for (size_t i = 0; digits && i < n; i++)
            digits = cl[i] >= '0' && cl[i] <= '9';
        if (!digits) {
            errinfo_set(err, ERR_INVALID,
                        "Content-Length \"%.40s\" is not a number of bytes; send the body's "
                        "length in decimal digits",
                        cl);
            return -1;
        }
    }
    return 0;
}

/* %00 in the path or the query would become a NUL byte when decoded, which ends the string
 * there: "/tool/read_file%00x" would run read_file, a URI would lose its tail. */
static int check_target(const struct mg_request_info *ri, struct errinfo *err)
{
    const char *path = ri->local_uri_raw ? ri->local_uri_raw : "";
    const char *q = ri->query_string;

    if (ri->request_uri && ri->request_uri[0] != '/') {
        errinfo_set(err, ERR_INVALID,
                    "the request target must be a path such as /health, not \"%.60s\"",
                    ri->request_uri);
        return -1;
    }
    if (strstr(path, "%00") || (q && strstr(q, "%00"))) {
        errinfo_set(err, ERR_INVALID,
                    "the request target holds %%00 (a NUL byte), which no path, tool name or "
                    "URI may contain");
        return -1;
    }
    for (const char *p = path; (p = strchr(p, '%')) != NULL; p += 3) {
        if (!isxdigit((unsigned char)p[1]) || !isxdigit((unsigned char)p[2])) {
            errinfo_set(err, ERR_INVALID,
                        "the path has a malformed %%-escape at \"%.8s\"; write %%25 for a "
                        "literal %%",
                        p);
            return -1;
        }
    }
    return 0;
}

int mcp_http__check_fields(const struct mg_request_info *ri, struct errinfo *err)
{
    const char *te = NULL, *cl = NULL;

    if (check_headers(ri, &te, &cl, err) < 0)
        return -1;
    return check_body_framing(ri, te, cl, err);
}

int mcp_http_check_head(const struct mg_request_info *ri, struct errinfo *err)
{
    if (mcp_http__check_fields(ri, err) < 0)
        return -1;
    return check_target(ri, err);
}

static int hexval(char c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

void mcp_http_decode_path(char *path)
{
    char *w = path;

    for (const char *r = path; *r; w++) {
        if (r[0] == '%' && isxdigit((unsigned char)r[1]) && isxdigit((unsigned char)r[2])) {
            *w = (char)(hexval(r[1]) << 4 | hexval(r[2]));
            r += 3;
        } else {
            *w = *r++;
        }
    }
    *w = '\0';
}

int mcp_http_check_request(struct mg_connection *conn, struct errinfo *err)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);
    const char *decode = mg_get_option(mg_get_context(conn), "decode_url");

    if (mcp_http_check_head(ri, err) < 0)
        return -1;
    /* civetweb decodes the path in place itself unless decode_url is "no", and then %00 has
     * already cut it; a server that wants the check starts civetweb with decode_url "no" and
     * the path is decoded here, after the check. The buffer is civetweb's, writable, and the
     * decoded path is never longer. */
    if (ri->local_uri_raw && decode && strcmp(decode, "no") == 0)
        mcp_http_decode_path((char *)ri->local_uri_raw);
    return 0;
}
