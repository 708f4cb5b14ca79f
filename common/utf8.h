/* common/utf8.h - UTF-8 sequence checks, cutting and sanitizing (RFC 3629).
 *
 * "Valid" everywhere here means well-formed per RFC 3629: no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF, no truncated sequence. Pure functions: no state,
 * no allocation, safe from any thread. Lengths are byte counts; no input needs a NUL. */
#ifndef COMMON_UTF8_H
#define COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* True for a continuation byte (10xxxxxx), which never starts a character. */
static inline bool utf8_is_cont(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

/* The sequence length that lead byte c announces: 1 for ASCII, 2..4, or 0 for a byte that
 * can never start a character (a continuation byte; C0/C1, which only make overlong forms;
 * F5..FF, which exceed U+10FFFF). */
static inline size_t utf8_lead_len(unsigned char c)
{
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return 2;
    if (c >= 0xE0 && c <= 0xEF)
        return 3;
    if (c >= 0xF0 && c <= 0xF4)
        return 4;
    return 0;
}

/* Length of the valid sequence at s[0..n) (n > 0): 1 for an ASCII byte (NUL included), 2..4
 * for a well-formed multi-byte character, 0 when the bytes there are not one (a stray or
 * invalid lead byte, a bad continuation, an overlong form, a surrogate, > U+10FFFF, or a
 * sequence cut short by n). Reads at most 4 bytes and never past the first bad one.
 *
 * Inline because it sits in hot loops (the JSON escaper, search output). The second byte's
 * allowed range excludes overlong forms (E0), surrogates (ED) and code points above U+10FFFF
 * (F4) without computing the code point (the table in RFC 3629, section 4). */
static inline size_t utf8_seq_len(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t len = utf8_lead_len(c);

    if (len <= 1)
        return len;
    if (n < len)
        return 0;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (!utf8_is_cont(s[i]))
            return 0;
    return len;
}

/* Bytes of s[0..len) that are valid UTF-8 from the start: len when all of it is, else the
 * offset of the first byte that does not begin a valid character. */
size_t utf8_valid_prefix(const char *s, size_t len);

/* Where to cut s[0..len) so that no character is split: len, or the offset of the lead byte
 * of a last sequence that len left incomplete. Only looks at the last 4 bytes; bytes that are
 * invalid anyway are not cut (utf8_valid_prefix reports them). */
size_t utf8_cut(const char *s, size_t len);

/* Copies src[0..n) to dst as valid UTF-8: each byte that does not begin a valid character,
 * and each NUL, becomes U+FFFD (3 bytes); with no_ctl, control characters (< 0x20, 0x7F)
 * also do. Writes at most max bytes to dst (which has room for max) and never half a
 * character. Returns the number of src bytes consumed (n unless max ran out) and stores the
 * bytes written in *written. dst is not NUL-terminated. */
size_t utf8_sanitize(char *dst, size_t max, const char *src, size_t n, bool no_ctl,
                     size_t *written);

/* Makes s[0..n) valid UTF-8 for sending: 0 with *copy NULL when it is valid already (nothing is
 * copied: send s), or 0 with *copy an owned copy (free()) in which each byte that does not begin
 * a valid character, and each NUL, is U+FFFD, and *copylen its length; -1 when out of memory. */
int utf8_make_valid(const char *s, size_t n, char **copy, size_t *copylen);

#endif /* COMMON_UTF8_H */
