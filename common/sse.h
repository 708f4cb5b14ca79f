/* common/sse.h - reading Server-Sent Events (the text/event-stream format of the HTML
 * standard) from a byte stream that arrives in pieces: runbox reads runboxd's progress and event
 * streams with it, and an MCP client reads a server's SSE answers.
 *
 * Fields: "event" names the event ("message" when absent), "data" lines are joined with '\n',
 * "id" sets the last event id (kept across events, as the standard says; an id with a NUL is
 * ignored), "retry" and unknown fields are ignored, lines starting with ':' are comments. Lines
 * end with "\n", "\r\n" or "\r". An event is dispatched at a blank line when it has data; an
 * event longer than the parser's limit is dropped whole and counted in `dropped`.
 *
 * Pure: no I/O, no threads; one parser per stream. */
#ifndef COMMON_SSE_H
#define COMMON_SSE_H

#include <stdbool.h>
#include <stddef.h>

#define SSE_EVENT_MAX ((size_t)64 << 20) /* the default limit of one event's data */

struct sse_event {
    const char *event; /* NUL-terminated; "message" when the stream named none */
    const char *data;  /* NUL-terminated (data may hold NUL bytes too: use data_len) */
    size_t data_len;
    const char *id; /* the last event id so far, "" when none */
};

/* One event, borrowed for the call. Return false to stop: sse_feed then returns at once. */
typedef bool (*sse_event_fn)(void *ctx, const struct sse_event *ev);

/* Fields are private. */
struct sse_parser {
    char *line; /* owned: the unfinished line */
    size_t line_len, line_cap;
    char *data; /* owned: the data of the event being read */
    size_t data_len, data_cap;
    char event[64];
    char id[256];
    bool has_data, too_long, skip_lf;
    size_t limit;
    size_t dropped; /* events dropped for being over the limit */
};

/* Prepares p; limit is the longest event data kept (0 = SSE_EVENT_MAX). Allocates nothing. */
void sse_init(struct sse_parser *p, size_t limit);

/* Frees p's buffers; p may be reused after sse_init(). */
void sse_cleanup(struct sse_parser *p);

/* Takes the next len bytes of the stream and dispatches every event they complete. Returns
 * false when a callback stopped it, or when memory ran out (the stream is then broken). */
bool sse_feed(struct sse_parser *p, const char *bytes, size_t len, sse_event_fn fn, void *ctx);

#endif /* COMMON_SSE_H */
