/* common/mcp_http_checks.c - the checks a local MCP server makes on every HTTP request (see
 * runbox/mcp_http.h): its Host must name it, and no browser page may call it (Origin). Pure:
 * no I/O, no state. They stop DNS rebinding (a page on evil.example whose name resolves to
 * 127.0.0.1 sends Host: evil.example) and cross-site requests (a page sends its own Origin). */
#include "runbox/mcp_http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
