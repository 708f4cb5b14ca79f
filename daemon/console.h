/* daemon/console.h - the console: a bounded ring of everything that ran or was printed (exec
 * output, Studio output, daemon events), each entry with a strictly increasing id.
 *
 * The ring is bounded by entries and by bytes of message text; when either bound is reached the
 * oldest entries are dropped. Ids start at 1 and never repeat or go back, also across drops and
 * console_clear(); console_oldest_id() tells what is still kept. Messages longer than
 * CONSOLE_MSG_MAX bytes are cut (on a UTF-8 boundary, with "…[cut N bytes]") and invalid UTF-8 is
 * replaced, so every entry is valid text.
 *
 * Thread-safety: every function may be called from any thread (internal lock). */
#ifndef DAEMON_CONSOLE_H
#define DAEMON_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

#define CONSOLE_ENTRIES_DEFAULT 10000
#define CONSOLE_BYTES_DEFAULT   (8u << 20) /* message bytes kept */
#define CONSOLE_MSG_MAX         (16u << 10)

enum console_level { CONSOLE_LOG, CONSOLE_INFO, CONSOLE_WARN, CONSOLE_ERROR, CONSOLE_DEBUG };
/* CONSOLE_SRC_MCP: the stderr of an external MCP server (registry.h); its entries carry the
 * server's name as their instance and are shown with the source "mcp:<name>". */
enum console_source { CONSOLE_SRC_EXEC, CONSOLE_SRC_STUDIO, CONSOLE_SRC_DAEMON, CONSOLE_SRC_MCP };

struct console; /* opaque */

/* A ring holding at most max_entries entries and max_bytes bytes of message text (0 = the
 * defaults). Returns an owned console (free with console_free) or NULL with err set. */
struct console *console_new(size_t max_entries, size_t max_bytes, struct errinfo *err);
void console_free(struct console *c); /* NULL is a no-op */

/* Appends one entry; msg[0..len) is copied (cut and sanitized as above). pid is the process id
 * of the run it belongs to, or 0 for none; instance the Studio instance id or NULL (copied).
 * ts_ms is the entry's time (ms since the epoch), or 0 for now. Returns the new id. */
uint64_t console_append(struct console *c, enum console_level level, enum console_source src,
                        uint64_t pid, const char *instance, int64_t ts_ms, const char *msg,
                        size_t len);

/* A console entry as a listener sees it: borrowed for the call only. */
struct console_entry_view {
    uint64_t id;
    int64_t ts_ms;
    enum console_level level;
    enum console_source source;
    uint64_t pid;         /* 0 for none */
    const char *instance; /* or NULL */
    const char *message;  /* valid UTF-8 */
    size_t len;
};

/* Calls fn(arg, entry) for every entry appended from now on, in id order, with the console's
 * lock held: fn must be quick and must not call into the console (events_publish_console is
 * the listener the daemon uses). One listener; fn NULL removes it. Set it before other threads
 * append. */
void console_set_listener(struct console *c,
                          void (*fn)(void *arg, const struct console_entry_view *e), void *arg);

/* Formatted append (one line; a trailing newline is dropped). Returns the new id. */
uint64_t console_appendf(struct console *c, enum console_level level, enum console_source src,
                         uint64_t pid, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

struct console_query {
    int level;           /* an enum console_level, or -1 for all */
    int source;          /* an enum console_source, or -1 for all */
    uint64_t since_id;   /* only entries with id > since_id (0 = from the oldest kept) */
    int64_t since_ts_ms; /* only entries with ts_ms >= this (0 = any time) */
    uint64_t pid;        /* only entries of this run (0 = all) */
    size_t limit;        /* most entries returned (0 = 100); the NEWEST matching ones when
                            since_id is 0, else the oldest after since_id */
};

/* The matching entries as a JSON object {"entries":[{"id","ts","level","source","message",
 * "pid"?,"instance"?}],"next_since_id":N,"dropped":bool,"oldest_id":N,"latest_id":N}:
 * next_since_id is the id to pass as since_id to continue; dropped says whether entries after
 * since_id were already dropped from the ring. Returns an owned cJSON (cJSON_Delete) or NULL on
 * allocation failure. ts is ISO 8601 UTC with milliseconds. */
cJSON *console_query_json(struct console *c, const struct console_query *q);

/* The error-level entries among the last `limit`, oldest first, as text lines
 * "[<ts>] [<source>] <message>", or NULL when there are none. Owned (free()). For prompts. */
char *console_recent_errors(struct console *c, size_t limit);

/* Drops every entry (of one source only when source >= 0). Ids keep increasing. Returns how
 * many entries were dropped. */
size_t console_clear(struct console *c, int source);

uint64_t console_latest_id(struct console *c); /* 0 when nothing was ever appended */
uint64_t console_oldest_id(struct console *c); /* 0 when the ring is empty */

/* Pure: names and parsing of levels and sources ("log", "info", "warn", "error", "debug";
 * "exec", "studio", "daemon", "mcp"). The parsers return -1 for an unknown name. */
const char *console_level_name(enum console_level level);
const char *console_source_name(enum console_source src);
int console_parse_level(const char *s);
int console_parse_source(const char *s);

/* Pure: an entry's source as shown ("exec", ..., "mcp:<server>") into buf; returns buf. */
const char *console_source_label(enum console_source src, const char *instance, char *buf,
                                 size_t size);

#endif /* DAEMON_CONSOLE_H */
