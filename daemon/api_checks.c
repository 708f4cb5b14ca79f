/* daemon/api_checks.c - the pure parts of the HTTP API (see api.h): the errinfo-to-status table,
 * and the Host/Origin/Content-Type/token checks. No I/O, no state: the unit test drives them
 * directly. (Response bodies are built with common/jsonbuf.h.) */
#include "api.h"

#include "runbox/mcp_http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the one table: request-level errinfo kinds to HTTP statuses ---- */

static const struct {
    enum errinfo_kind kind;
    int status;
} status_table[] = {
    {ERR_INVALID, 400},   {ERR_NOT_FOUND, 404}, {ERR_EXISTS, 409},      {ERR_DENIED, 403},
    {ERR_TOO_LARGE, 413}, {ERR_TIMEOUT, 504},   {ERR_UNAVAILABLE, 503}, {ERR_IO, 500},
    {ERR_NOMEM, 503},     {ERR_INTERNAL, 500},  {ERR_CANCELLED, 499},   {ERR_NONE, 500},
};

int api_status_for(enum errinfo_kind kind)
{
    for (size_t i = 0; i < sizeof(status_table) / sizeof(status_table[0]); i++)
        if (status_table[i].kind == kind)
            return status_table[i].status;
    return 500;
}

/* ---- the checks (pure) ---- */

int api_check_bind(const char *bind, bool have_ipv6, struct errinfo *err)
{
    if (!strchr(bind, ':') || have_ipv6)
        return 0;
    errinfo_set(err, ERR_INVALID,
                "--bind %s: this runboxd's HTTP server (civetweb, as Debian 12 builds it) has no "
                "IPv6; bind to an IPv4 address such as 127.0.0.1",
                bind);
    return -1;
}

bool api_is_wildcard(const char *bind)
{
    return strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "::") == 0;
}

/* The library's checks (common/mcp_http_checks.c) are the daemon's too: one rule for /tool and
 * for the MCP endpoints. */
bool api_host_ok(const char *host, int port, const char *bind)
{
    return mcp_http_host_ok(host, port, bind);
}

bool api_origin_ok(const char *origin, int port, const char *bind)
{
    return mcp_http_origin_ok(origin, port, bind);
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
