/* tests/fuzz/fuzz_vfs_path.c - libFuzzer target for vfs_normalize, the lexical half of the
 * workspace confinement. Any accepted input must come out canonical: one leading '/', no empty,
 * "." or ".." components, no trailing '/', valid UTF-8 without control characters, a backslash
 * only in an escape (\\ or \xHH, vfs.h Names), components (unescaped) and length within the
 * limits, and normalizing the result again must give the same string. */
#include "vfs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

static void check(int ok)
{
    if (!ok)
        abort();
}

static void check_canonical(const char *out)
{
    size_t len = strlen(out);
    const char *p = out + 1;
    char raw[VFS_NAME_MAX + 1];

    check(out[0] == '/');
    check(len <= VFS_PATH_MAX);
    check(utf8_valid_prefix(out, len) == len);
    for (size_t i = 0; i < len; i++)
        check((unsigned char)out[i] >= 0x20 && out[i] != 0x7F);
    if (len == 1)
        return;
    check(out[len - 1] != '/');
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        size_t rn = vfs_unescape(p, n, raw, sizeof(raw), NULL);

        check(n > 0 && rn != VFS_ESCAPE_NOROOM && rn > 0 && rn <= VFS_NAME_MAX);
        check(!(rn == 1 && raw[0] == '.'));
        check(!(rn == 2 && raw[0] == '.' && raw[1] == '.'));
        /* Escaping the raw name again gives the same spelling: the form is canonical. */
        {
            char esc[4 * VFS_NAME_MAX + 1];

            check(vfs_escape(raw, rn, esc, sizeof(esc)) == n && memcmp(esc, p, n) == 0);
        }
        p += n;
        if (*p == '/')
            p++;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char out[VFS_PATH_MAX + 1], again[VFS_PATH_MAX + 1];
    struct errinfo err = {0};
    char *in = malloc(size + 1);

    if (!in)
        return 0;
    memcpy(in, data, size);
    in[size] = '\0'; /* tool paths are C strings: an embedded NUL ends the path */
    if (vfs_normalize(in, out, sizeof(out), &err) == 0) {
        check(err.kind == ERR_NONE);
        check_canonical(out);
        check(vfs_normalize(out, again, sizeof(again), &err) == 0);
        check(strcmp(out, again) == 0);
    } else {
        check(err.kind == ERR_INVALID || err.kind == ERR_TOO_LARGE);
        check(err.msg[0] != '\0');
    }
    free(in);
    return 0;
}
