/* daemon/status_page_int.h - private to status_page.c and the generated status_assets.c. */
#ifndef DAEMON_STATUS_PAGE_INT_H
#define DAEMON_STATUS_PAGE_INT_H

#include <stddef.h>

/* One file of daemon/status/, compiled in. */
struct status_page_asset {
    const char *path; /* "/index.html", "/status.js", ... */
    const char *data; /* NUL-terminated */
    size_t len;
};

extern const struct status_page_asset status_page_assets[];
extern const size_t status_page_nassets;

#endif /* DAEMON_STATUS_PAGE_INT_H */
