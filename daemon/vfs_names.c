/* daemon/vfs_names.c - names that are not UTF-8: the escaped form in which VFS paths travel
 * (see vfs.h, "Names").
 *
 * A Linux file name is any bytes but '/' and NUL, and a command can make one that is not UTF-8
 * (or holds a newline); what Runbox sends must be UTF-8. So a VFS path is text: each byte that is
 * not part of a valid UTF-8 character, each control character and the backslash are written as
 * an escape, \xHH or \\, and vfs_normalize turns any path with escapes into this one canonical
 * form. The bytes are restored only where a name meets the kernel (vfs_open_in_root and the *at
 * calls on a last component). */
#include "vfs.h"

#include <stdlib.h>
#include <string.h>

#include "utf8.h"

static const char hex[] = "0123456789abcdef";

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t vfs_escape(const char *name, size_t n, char *out, size_t outsz)
{
    size_t o = 0;

    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)name[i];
        size_t len = c >= 0x80 ? utf8_seq_len(name + i, n - i) : 1;
        bool esc = c == '\\' || c < 0x20 || c == 0x7F || len == 0;
        size_t need = esc ? (c == '\\' ? 2 : 4) : len;

        if (o + need + 1 > outsz)
            return VFS_ESCAPE_NOROOM;
        if (c == '\\') {
            out[o++] = '\\';
            out[o++] = '\\';
        } else if (esc) {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        } else {
            memcpy(out + o, name + i, len);
            o += len;
        }
        i += esc ? 1 : len;
    }
    if (o + 1 > outsz)
        return VFS_ESCAPE_NOROOM;
    out[o] = '\0';
    return o;
}

char *vfs_escape_dup(const char *name)
{
    size_t n = strlen(name), cap = 4 * n + 1;
    char *out = malloc(cap);

    if (out && vfs_escape(name, n, out, cap) == VFS_ESCAPE_NOROOM) {
        free(out);
        out = NULL;
    }
    return out;
}

size_t vfs_unescape(const char *s, size_t n, char *out, size_t outsz, const char **bad)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        char c = s[i];

        if (c == '\\') {
            int hi = i + 3 < n && s[i + 1] == 'x' ? hexval(s[i + 2]) : -1;
            int lo = hi >= 0 ? hexval(s[i + 3]) : -1;

            if (i + 1 < n && s[i + 1] == '\\') {
                i++;
            } else if (lo >= 0 && (hi || lo) && (hi << 4 | lo) != '/') {
                c = (char)(hi << 4 | lo);
                i += 3;
            } else {
                if (bad)
                    *bad = s + i;
                return VFS_ESCAPE_NOROOM;
            }
        }
        if (o + 1 >= outsz) {
            if (bad)
                *bad = NULL;
            return VFS_ESCAPE_NOROOM;
        }
        out[o++] = c;
    }
    if (o >= outsz)
        return VFS_ESCAPE_NOROOM;
    out[o] = '\0';
    return o;
}
