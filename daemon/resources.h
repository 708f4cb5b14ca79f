/* daemon/resources.h - MCP resources served by the daemon: the console, the process list and
 * every workspace file, listed a page at a time and read by URI.
 *
 * URIs: runbox://console/logs and runbox://process/list (application/json), and
 * file:///<path> for each regular file (the path percent-encoded where RFC 3986 wants it; the
 * name is the file name, the MIME type comes from the extension, or from the first bytes when
 * the extension says nothing). resources/list pages are RESOURCES_PAGE_SIZE entries, the two
 * runbox resources first, then the files in path order; nextCursor is opaque. resources/read
 * gives text, or blob (base64) for binary files, up to RESOURCES_READ_MAX bytes.
 *
 * Failures: a bad cursor, an unknown URI scheme or resource, a file over the cap are
 * ERR_INVALID; a missing file is ERR_NOT_FOUND (both become -32602 for MCP clients).
 * Thread-safety: any thread (the services in tools_ctx are any-thread). */
#ifndef DAEMON_RESOURCES_H
#define DAEMON_RESOURCES_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

struct tools_ctx;

#define RESOURCES_PAGE_SIZE     100
#define RESOURCES_READ_MAX      (1u << 20) /* bytes of one file read as a resource */
#define RESOURCES_URI_CONSOLE   "runbox://console/logs"
#define RESOURCES_URI_PROCESSES "runbox://process/list"

/* One page of resources/list: {"resources":[...],"nextCursor"?}. cursor is NULL or "" for the
 * first page, else a nextCursor given before. Returns 0 with *out owned (cJSON_Delete), or -1
 * with err set. */
int resources_list(const struct tools_ctx *ctx, const char *cursor, cJSON **out,
                   struct errinfo *err);

/* resources/read: {"contents":[{"uri","mimeType","text"|"blob"}]}. As resources_list. */
int resources_read(const struct tools_ctx *ctx, const char *uri, cJSON **out, struct errinfo *err);

/* ---- pure helpers, shared with the unit test ---- */

/* The MIME type for a file name's extension (case-insensitive), or NULL when unknown. *binary
 * (may be NULL) tells whether content of that type is never text. */
const char *resources_mime_for_name(const char *name, bool *binary);

/* True when data[0..len) looks like text: valid UTF-8 (a character cut at the end allowed when
 * cut is true) and no NUL. */
bool resources_is_text(const char *data, size_t len, bool cut);

/* The file:/// URI of a VFS path (escaped, vfs.h): the name's bytes %-encoded. Returns an owned
 * string (free) or NULL (no memory). */
char *resources_file_uri(const char *path);

/* The VFS path a file:/// URI names, percent-decoded and then escaped as VFS paths are (vfs.h,
 * Names), into path (size >= 4097). ERR_INVALID for anything else, or for a path whose escaped
 * form does not fit. */
int resources_uri_path(const char *uri, char *path, size_t size, struct errinfo *err);

/* The opaque cursor that resumes after the VFS path `after`. Owned (free) or NULL. */
char *resources_cursor_encode(const char *after);

/* The VFS path a cursor resumes after, into after (size >= 4097). ERR_INVALID when the cursor
 * was not made by resources_cursor_encode. */
int resources_cursor_decode(const char *cursor, char *after, size_t size, struct errinfo *err);

#endif /* DAEMON_RESOURCES_H */
