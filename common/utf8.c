/* common/utf8.c - UTF-8 validation, cutting and sanitizing (see utf8.h; the one decoder,
 * utf8_seq_len, is inline there so that hot loops in other files pay no call for it). */
#include "utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t utf8_valid_prefix(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;

    while (i < len) {
        size_t n;
        uint64_t w;

        /* The common case, runs of ASCII: eight bytes at a time while none has its high bit
         * set (a 4 KiB read_file answer is checked twice on its way out; this was 9 % of
         * runboxd's CPU per call with one byte at a time). */
        while (len - i >= 8) {
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080u)
                break;
            i += 8;
        }
        if (i == len)
            break;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        n = utf8_seq_len(str + i, len - i);
        if (n == 0)
            return i;
        i += n;
    }
    return len;
}

size_t utf8_cut(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = len;

    while (i > 0 && len - i < 3 && utf8_is_cont(s[i - 1]))
        i--;
    if (i == 0)
        return len;
    i--; /* s[i] is the candidate lead byte */
    if (utf8_lead_len(s[i]) > len - i)
        return i;
    return len;
}

size_t utf8_sanitize(char *dst, size_t max, const char *src, size_t n, bool no_ctl, size_t *written)
{
    static const char repl[] = "\xEF\xBF\xBD";
    const unsigned char *p = (const unsigned char *)src;
    size_t i = 0, used = 0;

    while (i < n) {
        unsigned char c = p[i];
        size_t len;
        bool bad;

        /* Printable ASCII, the bulk of any text, needs no decoding. */
        if (c >= 0x20 && c < 0x7F) {
            if (used + 1 > max)
                break;
            dst[used++] = (char)c;
            i++;
            continue;
        }
        len = utf8_seq_len(src + i, n - i);
        bad = len == 0 || c == 0 || (no_ctl && (c < 0x20 || c == 0x7F));
        if (bad) {
            if (used + 3 > max)
                break;
            memcpy(dst + used, repl, 3);
            used += 3;
            i++;
        } else {
            if (used + len > max)
                break;
            memcpy(dst + used, p + i, len);
            used += len;
            i += len;
        }
    }
    *written = used;
    return i;
}

int utf8_make_valid(const char *s, size_t n, char **copy, size_t *copylen)
{
    size_t used = 0;

    *copy = NULL;
    *copylen = 0;
    if (utf8_valid_prefix(s, n) == n && !memchr(s, '\0', n))
        return 0;
    if (n > SIZE_MAX / 3)
        return -1;
    *copy = malloc(3 * n + 1);
    if (!*copy)
        return -1;
    utf8_sanitize(*copy, 3 * n, s, n, false, &used);
    (*copy)[used] = '\0';
    *copylen = used;
    return 0;
}
