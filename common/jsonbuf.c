/* common/jsonbuf.c - a growable output buffer with a ceiling (see jsonbuf.h). */
#include "jsonbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "utf8.h"

#define JSONBUF_FIRST_CAP 64 /* first allocation; doubles from there */

void jsonbuf_init(struct jsonbuf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void jsonbuf_cleanup(struct jsonbuf *b)
{
    size_t max = b->max;

    free(b->data);
    jsonbuf_init(b, max);
}

/* Records a failure once: the first one carries the message, later calls just fail. */
static int fail(struct jsonbuf *b)
{
    b->failed = true;
    return -1;
}

int jsonbuf_reserve(struct jsonbuf *b, size_t extra, struct errinfo *err)
{
    size_t cap;
    char *p;

    if (b->failed)
        return -1;
    if (extra > b->max || b->len + extra > b->max) {
        errinfo_set(err, ERR_TOO_LARGE, "response larger than %zu bytes", b->max);
        return fail(b);
    }
    if (b->len + extra < b->cap) /* room for the NUL too */
        return 0;
    cap = b->cap ? b->cap : JSONBUF_FIRST_CAP;
    while (cap <= b->len + extra)
        cap *= 2;
    p = realloc(b->data, cap);
    if (!p) {
        errinfo_set(err, ERR_NOMEM, "out of memory for a %zu-byte response", cap);
        return fail(b);
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int jsonbuf_put(struct jsonbuf *b, const char *s, size_t n, struct errinfo *err)
{
    if (jsonbuf_reserve(b, n, err) < 0)
        return -1;
    if (n)
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int jsonbuf_puts(struct jsonbuf *b, const char *s, struct errinfo *err)
{
    return jsonbuf_put(b, s, strlen(s), err);
}

/* True when any of the 8 bytes at p is a control character, non-ASCII, '"' or '\\'. Uses the
 * exact "some byte is below n" test (v - n*0x01..) & ~v & 0x80.., for n = 0x20 on the bytes
 * and n = 1 (some byte is zero) on the bytes xor'ed with '"' and with '\\'. */
static bool word_needs_escape(const unsigned char *p)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t x, quote, bslash;

    memcpy(&x, p, 8);
    quote = x ^ (ones * '"');
    bslash = x ^ (ones * '\\');
    return ((x | ((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) |
             ((bslash - ones) & ~bslash)) &
            highs) != 0;
}

#if defined(__SSE2__)
/* The offset of the first of the 16 bytes at p that is a control character, non-ASCII, '"' or
 * '\\', or 16 when there is none. Signed compares: a byte of 0x80 or more is negative, so
 * "below 0x20" catches both ranges at once. */
static unsigned first_special16(const unsigned char *p)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i m = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                             _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                          _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
    unsigned bits = (unsigned)_mm_movemask_epi8(m);

    return bits ? (unsigned)__builtin_ctz(bits) : 16;
}
#endif

/* Writes the escape for byte c (a control character, '"', '\\', or a byte that does not begin
 * well-formed UTF-8, which becomes U+FFFD) at out, which has room for 6 bytes. Returns the
 * new end. */
static char *put_escape(char *out, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";

    *out++ = '\\';
    if (c == '"' || c == '\\') {
        *out++ = (char)c;
    } else if (c == '\n') {
        *out++ = 'n';
    } else if (c == '\r') {
        *out++ = 'r';
    } else if (c == '\t') {
        *out++ = 't';
    } else if (c >= 0x80) {
        memcpy(out, "ufffd", 5);
        out += 5;
    } else {
        memcpy(out, "u00", 3);
        out[3] = hex[c >> 4];
        out[4] = hex[c & 0xF];
        out += 5;
    }
    return out;
}

/* This is the proxy's hottest loop (every tool result passes through it). The invariant that
 * keeps it tight: before each input byte the buffer has room for all remaining input plus the
 * closing quote (and the NUL), so bytes copied as they are need no check; only an escape,
 * which grows the output, reserves again. */
int jsonbuf_put_json_string(struct jsonbuf *b, const char *str, size_t n, struct errinfo *err)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, k;
    char *out;

    if (jsonbuf_reserve(b, n + 2, err) < 0)
        return -1;
    out = b->data + b->len;
    *out++ = '"';
    while (i < n) {
        unsigned char c;

#if defined(__SSE2__)
        /* Sixteen bytes at a time, up to the first that needs a look: all 16 are copied (room
         * for them is guaranteed, see above), and what follows that byte is written again. */
        while (n - i >= 16) {
            unsigned plain = first_special16(s + i);

            memcpy(out, s + i, 16);
            out += plain;
            i += plain;
            if (plain < 16)
                break;
        }
#endif
        /* Eight plain ASCII bytes at a time (room for them is guaranteed, see above). */
        while (n - i >= 8 && !word_needs_escape(s + i)) {
            memcpy(out, s + i, 8);
            out += 8;
            i += 8;
        }
        if (i >= n)
            break;
        c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            *out++ = (char)c;
            i++;
            continue;
        }
        if (c >= 0x80 && (k = utf8_seq_len(str + i, n - i)) != 0) {
            memcpy(out, s + i, k);
            out += k;
            i += k;
            continue;
        }
        b->len = (size_t)(out - b->data);
        if (jsonbuf_reserve(b, 6 + (n - i) + 1, err) < 0)
            return -1;
        out = put_escape(b->data + b->len, c);
        i++;
    }
    *out++ = '"';
    b->len = (size_t)(out - b->data);
    b->data[b->len] = '\0';
    return 0;
}

char *jsonbuf_take(struct jsonbuf *b, size_t *len)
{
    char *p = NULL;

    if (!b->failed && jsonbuf_reserve(b, 0, NULL) == 0) {
        b->data[b->len] = '\0';
        p = b->data;
        b->data = NULL;
        if (len)
            *len = b->len;
    }
    jsonbuf_cleanup(b);
    return p;
}
