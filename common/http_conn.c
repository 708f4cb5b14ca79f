/* common/http_conn.c - what civetweb does with a connection after an answer (see http_conn.h). */
#include "http_conn.h"

#include <string.h>
#include <strings.h>

#include <civetweb.h>

/* True when the Connection header value lists keep-alive the way civetweb reads it: its
 * comma-separated options, blanks around each trimmed and "=value" cut off, compared case-blind
 * over each option's own length (header_has_option: so "keep", even "=x", counts as keep-alive
 * too). Mirrored quirks and all, since the point is to say what civetweb will do. */
static bool lists_keep_alive(const char *v)
{
    static const char want[] = "keep-alive";

    while (*v) {
        const char *end = strchr(v, ','), *next = end ? end + 1 : v + strlen(v);
        size_t n;

        if (!end)
            end = next;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        n = (size_t)(end - v);
        while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
            n--;
        if (n > 0) { /* an empty option is skipped; "=x" is one of length 0, and matches */
            const char *eq = memchr(v, '=', n);

            if (eq)
                n = (size_t)(eq - v);
            if (n <= sizeof(want) - 1 && strncasecmp(want, v, n) == 0)
                return true;
        }
        v = next;
    }
    return false;
}

bool http_conn_is_http11(const struct mg_connection *conn)
{
    const struct mg_request_info *ri = mg_get_request_info(conn);

    return ri && ri->http_version && strcmp(ri->http_version, "1.1") == 0;
}

bool http_conn_keeps_alive(const struct mg_connection *conn)
{
    const char *c = mg_get_header(conn, "Connection");

    return c ? lists_keep_alive(c) : http_conn_is_http11(conn);
}
