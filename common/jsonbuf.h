/* common/jsonbuf.h - a growable output buffer with a ceiling (STYLE §5), for building JSON
 * text: raw appends plus a fast JSON string escaper.
 *
 * Storage for struct jsonbuf is the caller's (stack or embedded); the bytes are malloc'd.
 * Failure is sticky: after the first failed append (over the ceiling, out of memory) every
 * later call fails too, so a builder may append unchecked and test once (jsonbuf_take
 * returns NULL). Thread-safety: owner thread only (no lock). */
#ifndef COMMON_JSONBUF_H
#define COMMON_JSONBUF_H

#include <stdbool.h>
#include <stddef.h>

#include "errinfo.h"

/* Fields are readable (data is NUL-terminated whenever it is non-NULL and the buffer has not
 * failed); change them only through jsonbuf_* functions, except that a builder may set
 * failed to abandon the content (jsonbuf_take then returns NULL). */
struct jsonbuf {
    char *data;  /* owned; NULL until the first append */
    size_t len;  /* bytes held, not counting the NUL */
    size_t cap;  /* bytes allocated */
    size_t max;  /* the ceiling: most bytes the buffer may hold (not counting the NUL) */
    bool failed; /* an append failed: the content is unusable */
};

/* An initializer for a declaration: struct jsonbuf b = JSONBUF_INIT(1 << 20); the same as
 * jsonbuf_init(&b, max). */
#define JSONBUF_INIT(max_)                                                                         \
    {                                                                                              \
        .data = NULL, .len = 0, .cap = 0, .max = (max_), .failed = false                           \
    }

/* Starts an empty buffer that may hold at most max bytes. Allocates nothing. */
void jsonbuf_init(struct jsonbuf *b, size_t max);

/* Frees the bytes and resets to an empty buffer with the same ceiling; safe on a zeroed
 * struct and after jsonbuf_take. */
void jsonbuf_cleanup(struct jsonbuf *b);

/* Makes room for extra more bytes (and the NUL). -1 with ERR_TOO_LARGE when len + extra
 * would pass max, ERR_NOMEM when realloc fails, and -1 (err untouched) once failed. */
int jsonbuf_reserve(struct jsonbuf *b, size_t extra, struct errinfo *err);

/* Appends s[0..n) (copies it). -1 as jsonbuf_reserve. */
int jsonbuf_put(struct jsonbuf *b, const char *s, size_t n, struct errinfo *err);

/* Appends the NUL-terminated s (copies it). -1 as jsonbuf_reserve. */
int jsonbuf_puts(struct jsonbuf *b, const char *s, struct errinfo *err);

/* Appends s[0..n) as a JSON string, quotes included: '"', '\\', \n, \r, \t get their short
 * escapes, other control characters \u00XX (lower-case hex), and each byte that does not
 * begin a well-formed UTF-8 character \ufffd, so the output is always valid JSON text even
 * when s is not UTF-8. -1 as jsonbuf_reserve (the buffer is then failed). */
int jsonbuf_put_json_string(struct jsonbuf *b, const char *s, size_t n, struct errinfo *err);

/* Hands over the content: returns it NUL-terminated (owned, free with free()) and its length
 * in *len (len may be NULL), or NULL when the buffer failed. The buffer is reset to empty
 * either way (the ceiling stays). An empty, never-failed buffer yields "". */
char *jsonbuf_take(struct jsonbuf *b, size_t *len);

#endif /* COMMON_JSONBUF_H */
