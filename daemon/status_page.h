/* daemon/status_page.h - the status page at GET /: runboxd's state for a person, in a browser.
 *
 * The page is three files (daemon/status/index.html, status.css, status.js) compiled into the
 * binary and served as one; the page reads the daemon through its own API (GET /health, POST
 * /tool/..., GET /events), from its own origin.
 *
 * Browser rules (docs/security.md), on top of the Host and Origin checks every request passes:
 * - A request that a browser marks as coming from another site (Sec-Fetch-Site: cross-site or
 *   same-site) is refused, whatever it asks for: no other page can read or embed ours, not even
 *   with no-cors requests, which carry no Origin. A top-level navigation to GET / is the one
 *   exception (following a link to the page is fine; the page then runs on its own origin).
 * - A tool call from a browser (POST /tool/<name> with an Origin, which must already be our own)
 *   must also carry X-Runbox-Page-Token with this daemon's page token, which only the page's own
 *   HTML holds. The MCP endpoints keep the MCP rule: an Origin of our own is accepted.
 * - The page is served without the bearer token (RUNBOX_TOKEN); everything it then asks for
 *   needs it as any other request does, and the page asks the user for it.
 * The page is one response: status.css and status.js are put into index.html at start-up,
 * allowed by a CSP nonce made then.
 *
 * Thread-safety: the page is immutable after status_page_new(); any thread. */
#ifndef DAEMON_STATUS_PAGE_H
#define DAEMON_STATUS_PAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "errinfo.h"

#define STATUS_PAGE_TOKEN_HEADER "X-Runbox-Page-Token"
#define STATUS_PAGE_TOKEN_LEN    32 /* hex characters (128 random bits) */

struct status_page; /* opaque */
struct mg_connection;

/* Makes the page with a fresh random token. Returns it owned (status_page_free) or NULL with
 * err. */
struct status_page *status_page_new(struct errinfo *err);

void status_page_free(struct status_page *p); /* NULL is a no-op */

/* The token the page's HTML carries. Borrowed. */
const char *status_page_token(const struct status_page *p);

/* True for the page's path, "/". Pure. */
bool status_page_is_path(const char *path);

/* Serves the page (GET and HEAD; anything else is 405). Returns the HTTP status. */
int status_page_handle(const struct status_page *p, struct mg_connection *conn, const char *method,
                       const char *path);

/* The browser headers of one request, as the checks above need them (NULL when absent). */
struct status_page_request {
    const char *method, *path;
    const char *origin;
    const char *fetch_site, *fetch_mode, *fetch_dest; /* Sec-Fetch-Site, -Mode, -Dest */
    const char *page_token;                           /* X-Runbox-Page-Token */
};

/* NULL when the request may go on, else the message of its 403. Pure (constant time in the
 * token). */
const char *status_page_refusal(const struct status_page *p, const struct status_page_request *r);

/* Reads the headers of conn and applies status_page_refusal(). */
const char *status_page_check(const struct status_page *p, const struct mg_connection *conn);

#endif /* DAEMON_STATUS_PAGE_H */
