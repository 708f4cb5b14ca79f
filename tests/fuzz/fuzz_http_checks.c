/* tests/fuzz/fuzz_http_checks.c - the checks every HTTP request passes before a handler runs
 * (daemon/api_checks.c): Host, Origin, Content-Type and the bearer token, on arbitrary header
 * values. Each check is compared with a plain restatement of its documented rule (docs/
 * security.md), both ways, aborting on any disagreement:
 *   - Host: one of 127.0.0.1, localhost, [::1] or the bound address (any case), then nothing or
 *     ':' and decimal digits naming our port; anything goes on a wildcard bind;
 *   - Origin: none, or "http://" and a Host as above with ":<port>" as a browser writes it
 *     (no leading zeros), never on a wildcard bind;
 *   - Content-Type: application/json (any case), optionally spaced, then nothing or ';' and
 *     parameters;
 *   - Authorization: "Bearer " (any case), spaces, then exactly the token.
 * The input: a byte choosing the bind address, two bytes of port, then the values, one a line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api.h"

static void require(bool ok)
{
    if (!ok)
        abort();
}

static bool digits_equal(const char *s, int port)
{
    long v = 0;

    if (!*s)
        return false;
    while (s[0] == '0' && s[1]) /* leading zeros name the same port (RFC 3986: *DIGIT) */
        s++;
    if (strlen(s) > 9)
        return false;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
    }
    return v == port;
}

static bool name_is_ours(const char *name, size_t len, const char *bind)
{
    static const char *const loop[] = {"127.0.0.1", "localhost", "[::1]"};
    char b[80];

    for (int i = 0; i < 3; i++)
        if (strlen(loop[i]) == len && strncasecmp(name, loop[i], len) == 0)
            return true;
    snprintf(b, sizeof(b), strchr(bind, ':') ? "[%s]" : "%s", bind);
    return strlen(b) == len && strncasecmp(name, b, len) == 0;
}

static bool host_rule(const char *host, int port, const char *bind, bool port_required)
{
    const char *rest;
    size_t nlen;

    if (!*host)
        return false;
    if (host[0] == '[') {
        const char *close = strchr(host, ']');

        if (!close)
            return false;
        nlen = (size_t)(close - host) + 1;
    } else {
        nlen = strcspn(host, ":");
    }
    if (!name_is_ours(host, nlen, bind))
        return false;
    rest = host + nlen;
    if (!*rest)
        return !port_required;
    if (port_required) { /* an Origin: the port exactly as a browser writes it */
        char want[16];

        snprintf(want, sizeof(want), ":%d", port);
        return strcmp(rest, want) == 0;
    }
    return rest[0] == ':' && digits_equal(rest + 1, port);
}

static bool ctype_rule(const char *c)
{
    c += strspn(c, " \t");
    if (strncasecmp(c, "application/json", 16) != 0)
        return false;
    c += 16;
    c += strspn(c, " \t");
    return *c == '\0' || *c == ';';
}

static bool token_rule(const char *auth, const char *token)
{
    if (strncasecmp(auth, "Bearer ", 7) != 0)
        return false;
    auth += 7;
    auth += strspn(auth, " ");
    return strcmp(auth, token) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const binds[] = {"127.0.0.1", "::1", "0.0.0.0", "::", "192.168.7.9"};
    char *buf, *field[5] = {"", "", "", "", "x"};
    const char *bind;
    int port, nf = 0;
    bool wild;

    if (size < 3)
        return 0;
    bind = binds[data[0] % 5];
    wild = api_is_wildcard(bind);
    port = (data[1] << 8 | data[2]) % 65536;
    buf = malloc(size - 2);
    require(buf != NULL);
    memcpy(buf, data + 3, size - 3);
    buf[size - 3] = '\0';
    for (char *p = buf; p && nf < 5;) {
        char *nl = strchr(p, '\n');

        if (nl)
            *nl = '\0';
        field[nf++] = p;
        p = nl ? nl + 1 : NULL;
    }
    if (!*field[4])
        field[4] = "x"; /* runboxd never has an empty token */

    require(api_host_ok(field[0], port, bind) ==
            (wild ? *field[0] != '\0' : host_rule(field[0], port, bind, false)));
    require(api_host_ok(NULL, port, bind) == false);
    require(api_origin_ok(field[1], port, bind) ==
            (!wild && strncasecmp(field[1], "http://", 7) == 0 &&
             host_rule(field[1] + 7, port, bind, true)));
    require(api_origin_ok(NULL, port, bind));
    require(api_content_type_ok(field[2]) == ctype_rule(field[2]));
    require(!api_content_type_ok(NULL));
    require(api_token_ok(field[3], field[4]) == token_rule(field[3], field[4]));
    require(!api_token_ok(NULL, field[4]));
    free(buf);
    return 0;
}
