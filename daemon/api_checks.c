/* daemon/api_checks.c - the pure parts of the HTTP API (see api.h): the errinfo-to-status table,
 * the Host/Origin/Content-Type/token checks, and the bounded JSON response buffer. No I/O, no
 * state: the unit test drives them directly. */
#include "api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools.h"

/* ---- the one table: request-level errinfo kinds to HTTP statuses ---- */

static const struct {
    enum errinfo_kind kind;
    int status;
} status_table[] = {
    {ERR_INVALID, 400},   {ERR_NOT_FOUND, 404}, {ERR_EXISTS, 409},      {ERR_DENIED, 403},
    {ERR_TOO_LARGE, 413}, {ERR_TIMEOUT, 504},   {ERR_UNAVAILABLE, 503}, {ERR_IO, 500},
    {ERR_NOMEM, 503},     {ERR_INTERNAL, 500},  {ERR_NONE, 500},
};

int api_status_for(enum errinfo_kind kind)
{
    for (size_t i = 0; i < sizeof(status_table) / sizeof(status_table[0]); i++)
        if (status_table[i].kind == kind)
            return status_table[i].status;
    return 500;
}

/* ---- buffers and JSON strings ---- */

void api_buf_cleanup(struct api_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int api_buf_reserve(struct api_buf *b, size_t extra, struct errinfo *err)
{
    size_t need = b->len + extra + 1, cap;
    char *p;

    if (extra > b->max || b->len + extra > b->max) {
        errinfo_set(err, ERR_TOO_LARGE, "response larger than %zu bytes", b->max);
        return -1;
    }
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    p = realloc(b->data, cap);
    if (!p) {
        errinfo_set(err, ERR_NOMEM, "out of memory for a %zu-byte response", cap);
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int api_buf_add(struct api_buf *b, const char *s, size_t slen, struct errinfo *err)
{
    if (api_buf_reserve(b, slen, err) < 0)
        return -1;
    memcpy(b->data + b->len, s, slen);
    b->len += slen;
    b->data[b->len] = '\0';
    return 0;
}

/* Bytes of the valid UTF-8 sequence at s[0..n) (n > 0, s[0] >= 0x80), or 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t want = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : 2;

    if (tools_utf8_valid_prefix((const char *)s, want <= n ? want : n) == 0)
        return 0;
    return want <= n ? want : 0;
}

/* The JSON escape of an ASCII byte that cannot appear raw in a string; returns its length. */
static size_t escape_ascii(unsigned char c, char esc[8])
{
    static const char hex[] = "0123456789abcdef";

    esc[0] = '\\';
    switch (c) {
    case '"':
        esc[1] = '"';
        return 2;
    case '\\':
        esc[1] = '\\';
        return 2;
    case '\n':
        esc[1] = 'n';
        return 2;
    case '\r':
        esc[1] = 'r';
        return 2;
    case '\t':
        esc[1] = 't';
        return 2;
    default:
        memcpy(esc + 1, "u00", 3);
        esc[4] = hex[c >> 4];
        esc[5] = hex[c & 15];
        return 6;
    }
}

int api_buf_add_json_string(struct api_buf *b, const char *str, size_t slen, struct errinfo *err)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;

    /* Room for the common case up front; a miss only means more growing below. */
    if (slen + slen / 8 + 2 <= b->max - b->len)
        (void)api_buf_reserve(b, slen + slen / 8 + 2, NULL);
    if (api_buf_add(b, "\"", 1, err) < 0)
        return -1;
    while (i < slen) {
        size_t run = i, n;
        char esc[8];

        /* Copy runs of bytes that need no escaping in one go. */
        while (run < slen && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\')
            run++;
        if (run > i && api_buf_add(b, str + i, run - i, err) < 0)
            return -1;
        i = run;
        if (i >= slen)
            break;
        if (s[i] >= 0x80) {
            n = utf8_seq(s + i, slen - i);
            if (n == 0) {
                if (api_buf_add(b, "\\ufffd", 6, err) < 0)
                    return -1;
                i++;
            } else {
                if (api_buf_add(b, str + i, n, err) < 0)
                    return -1;
                i += n;
            }
            continue;
        }
        n = escape_ascii((unsigned char)str[i], esc);
        if (api_buf_add(b, esc, n, err) < 0)
            return -1;
        i++;
    }
    return api_buf_add(b, "\"", 1, err);
}

/* ---- the checks (pure) ---- */

bool api_is_wildcard(const char *bind)
{
    return strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "::") == 0;
}

/* True when name (host part of Host, brackets kept for IPv6) is one of our names. */
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

bool api_host_ok(const char *host, int port, const char *bind)
{
    const char *colon;
    size_t nlen;
    char *end = NULL;
    long p;

    if (!host || !host[0])
        return false;
    if (api_is_wildcard(bind))
        return true; /* reachable under any name; the mandatory token protects it */
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
    errno = 0;
    p = strtol(colon + 1, &end, 10);
    return colon[1] && !errno && !*end && p == port;
}

bool api_origin_ok(const char *origin, int port, const char *bind)
{
    char want[128];

    if (!origin)
        return true;
    if (strncasecmp(origin, "http://", 7) != 0)
        return false;
    /* The same rule as Host, for the part after "http://" - but the port is mandatory:
     * a browser always sends it for a non-default port. */
    snprintf(want, sizeof(want), ":%d", port);
    if (strlen(origin) < 7 + strlen(want) ||
        strcmp(origin + strlen(origin) - strlen(want), want) != 0)
        return false;
    if (api_is_wildcard(bind))
        return false; /* no page on any host should be calling us */
    return api_host_ok(origin + 7, port, bind);
}

bool api_content_type_ok(const char *ctype)
{
    static const char want[] = "application/json";
    size_t n = sizeof(want) - 1;

    if (!ctype)
        return false;
    while (*ctype == ' ' || *ctype == '\t')
        ctype++;
    if (strncasecmp(ctype, want, n) != 0)
        return false;
    ctype += n;
    while (*ctype == ' ' || *ctype == '\t')
        ctype++;
    return *ctype == '\0' || *ctype == ';';
}

bool api_token_ok(const char *authorization, const char *token)
{
    size_t tlen = strlen(token), plen;
    unsigned diff = 0;

    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return false;
    authorization += 7;
    while (*authorization == ' ')
        authorization++;
    plen = strlen(authorization);
    /* The loop runs over the token's length whatever was presented, so the time taken says
     * nothing about how much of the token matched. */
    for (size_t i = 0; i < tlen; i++)
        diff |= (unsigned char)token[i] ^ (unsigned char)(i < plen ? authorization[i] : 0);
    return diff == 0 && plen == tlen;
}
