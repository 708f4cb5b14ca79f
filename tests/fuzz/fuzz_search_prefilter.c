/* tests/fuzz/fuzz_search_prefilter.c - libFuzzer target for the literal prefilter of search
 * (vfs_regex.c): the literals it takes from a PCRE2 pattern must never hide a matching line.
 *
 * Input: a flags byte (bit 0: caseless), then a pattern, a NUL, and a subject. When the pattern
 * compiles as search compiles it and vfs_regex_prefilter gives literals for it, a line of the
 * subject that the regex matches within must contain one of those literals (ASCII case folded
 * when it says so), or search would miss it. */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vfs_int.h"

static void check(int ok)
{
    if (!ok)
        abort();
}

static char fold(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

/* True when lit[0..n) occurs in s[0..len), folded when icase. */
static int contains(const char *s, size_t len, const char *lit, size_t n, int icase)
{
    for (size_t i = 0; i + n <= len; i++) {
        size_t k = 0;

        while (k < n && (icase ? fold(s[i + k]) == fold(lit[k]) : s[i + k] == lit[k]))
            k++;
        if (k == n)
            return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vfs_lit lits[VFS_LITS_MAX];
    bool fold = false;
    int n;
    size_t plen;
    const char *pat, *subj, *end;
    int icase, code;
    PCRE2_SIZE at;
    pcre2_code *re;
    pcre2_match_data *md;
    pcre2_match_context *mc;

    if (size < 2 || size > 1000)
        return 0;
    icase = data[0] & 1;
    pat = (const char *)data + 1;
    plen = strnlen(pat, size - 1);
    if (plen == size - 1)
        return 0; /* no NUL: no subject */
    subj = pat + plen + 1;
    end = (const char *)data + size;
    /* The literals search prefilters with (vfs_regex_prefilter, as vfs_search calls it). */
    n = vfs_regex_prefilter(pat, icase != 0, lits, &fold);
    if (n <= 0)
        return 0;
    re = pcre2_compile((PCRE2_SPTR)pat, plen,
                       PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_MULTILINE |
                           PCRE2_NEVER_BACKSLASH_C | (icase ? PCRE2_CASELESS : 0),
                       &code, &at, NULL);
    if (!re) {
        for (int i = 0; i < n; i++)
            free(lits[i].s);
        return 0;
    }
    md = pcre2_match_data_create_from_pattern(re, NULL);
    mc = pcre2_match_context_create(NULL);
    pcre2_set_match_limit(mc, 10000);
    pcre2_set_depth_limit(mc, 1000);
    for (const char *ls = subj; ls <= end;) {
        const char *le = memchr(ls, '\n', (size_t)(end - ls));
        size_t llen;

        le = le ? le : end;
        llen = (size_t)(le - ls);
        if (pcre2_match(re, (PCRE2_SPTR)ls, llen, 0, 0, md, mc) >= 0) {
            int found = 0;

            for (int i = 0; i < n && !found; i++)
                found = contains(ls, llen, lits[i].s, lits[i].n, fold);
            check(found);
        }
        ls = le + 1;
    }
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    for (int i = 0; i < n; i++)
        free(lits[i].s);
    return 0;
}
