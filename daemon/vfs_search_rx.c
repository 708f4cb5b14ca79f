/* daemon/vfs_search_rx.c - search's regexes: PCRE2 compiled as search needs it, matched with a
 * backtracking budget, and the choice of prefilter literals (see vfs_int.h).
 *
 * UTF mode: "." is a character and caseless matching is Unicode's; invalid UTF-8 in a file is
 * simply never matched (PCRE2_MATCH_INVALID_UTF) instead of failing the search; \C (one byte)
 * would break UTF and is refused. The JIT is used where the library has one. The budget of one
 * match is what a catastrophic pattern such as (a*)*\1\1b uses up in about 2 ms with the JIT (the
 * interpreter is about 100 times slower per step, so it gets a tenth). */
#define PCRE2_CODE_UNIT_WIDTH 8

#include "vfs_int.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#define MATCH_LIMIT_JIT 1000000
#define MATCH_LIMIT     100000
#define DEPTH_LIMIT     10000
#define HEAP_LIMIT_KIB  (20u << 10)
#define JIT_STACK_MAX   (512u << 10)
#define LIT_MIN         2 /* a 1-byte literal filters too little to pay for regex calls */

struct vfs_rx {
    pcre2_code *code;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit_stack; /* NULL without the JIT */
};

void vfs_rx_free(struct vfs_rx *rx)
{
    if (!rx)
        return;
    pcre2_code_free(rx->code);
    pcre2_match_data_free(rx->md);
    pcre2_match_context_free(rx->mctx);
    pcre2_jit_stack_free(rx->jit_stack);
    free(rx);
}

/* The match limits, and the JIT where the library has one, with a stack big enough for sane
 * patterns (one that needs more gets PCRE2_ERROR_JIT_STACKLIMIT: "too complex"). */
static int set_limits(struct vfs_rx *rx)
{
    bool jit = pcre2_jit_compile(rx->code, PCRE2_JIT_COMPLETE) == 0;

    rx->md = pcre2_match_data_create_from_pattern(rx->code, NULL);
    rx->mctx = pcre2_match_context_create(NULL);
    if (!rx->md || !rx->mctx)
        return -1;
    pcre2_set_match_limit(rx->mctx, jit ? MATCH_LIMIT_JIT : MATCH_LIMIT);
    pcre2_set_depth_limit(rx->mctx, DEPTH_LIMIT);
    pcre2_set_heap_limit(rx->mctx, HEAP_LIMIT_KIB);
    if (jit) {
        rx->jit_stack = pcre2_jit_stack_create(32u << 10, JIT_STACK_MAX, NULL);
        if (!rx->jit_stack)
            return -1;
        pcre2_jit_stack_assign(rx->mctx, NULL, rx->jit_stack);
    }
    return 0;
}

struct vfs_rx *vfs_rx_new(const char *q, bool icase, struct errinfo *err)
{
    uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_MULTILINE |
                    PCRE2_NEVER_BACKSLASH_C | (icase ? PCRE2_CASELESS : 0);
    struct vfs_rx *rx = calloc(1, sizeof(*rx));
    PCRE2_SIZE at = 0;
    int code = 0;

    if (!rx) {
        errinfo_set(err, ERR_NOMEM, "search: out of memory");
        return NULL;
    }
    rx->code = pcre2_compile((PCRE2_SPTR)q, strlen(q), opts, &code, &at, NULL);
    if (!rx->code) {
        PCRE2_UCHAR msg[160];

        pcre2_get_error_message(code, msg, sizeof(msg));
        errinfo_set(err, ERR_INVALID, "search: bad regex \"%.60s\": %s at offset %zu", q,
                    (const char *)msg, (size_t)at);
        vfs_rx_free(rx);
        return NULL;
    }
    if (set_limits(rx) < 0) {
        errinfo_set(err, ERR_NOMEM, "search: out of memory");
        vfs_rx_free(rx);
        return NULL;
    }
    return rx;
}

int vfs_rx_match(struct vfs_rx *rx, const char *b, size_t subj, size_t from, size_t to, size_t *so,
                 size_t *eo)
{
    int rc =
        pcre2_match(rx->code, (PCRE2_SPTR)(b + subj), to - subj, from - subj, 0, rx->md, rx->mctx);
    PCRE2_SIZE *ov;

    if (rc >= 0) {
        ov = pcre2_get_ovector_pointer(rx->md);
        *so = subj + ov[0];
        *eo = subj + ov[1];
        return 1;
    }
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
        rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT)
        return -1;
    return 0; /* no match (or an error no subject can cause: invalid UTF-8 is allowed) */
}

/* ---- the prefilter ---- */

static bool has_ascii_letter(const char *p)
{
    for (; *p; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
            return true;
    return false;
}

static bool is_ascii(const char *p)
{
    for (; *p; p++)
        if ((unsigned char)*p >= 0x80)
            return false;
    return true;
}

static void free_lits(struct vfs_lit *lits, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(lits[i].s);
        lits[i].s = NULL;
    }
}

/* Fills lits from the alternatives of q, with alt, best and cur buffers of strlen(q) + 1. */
static int choose(const char *q, bool icase, struct vfs_lit *lits, bool *fold, char *alt,
                  char *best, char *cur)
{
    const char *starts[VFS_LITS_MAX];
    size_t lens[VFS_LITS_MAX], n = vfs_regex_split(q, starts, lens, VFS_LITS_MAX);

    for (size_t i = 0; i < n; i++) {
        size_t len;

        memcpy(alt, starts[i], lens[i]);
        alt[lens[i]] = '\0';
        len = vfs_regex_literal(alt, icase, best, cur);
        /* Too short, not ASCII when caseless (only ASCII folds the same way here as in the
         * regex), or holding a newline (a match could span lines): no prefilter at all. */
        if (len < LIT_MIN || (icase && !is_ascii(best)) || memchr(best, '\n', len)) {
            free_lits(lits, i);
            *fold = false;
            return 0;
        }
        lits[i] = (struct vfs_lit){.s = strndup(best, len), .n = len};
        if (!lits[i].s) {
            free_lits(lits, i);
            return -1;
        }
        if (icase && has_ascii_letter(best))
            *fold = true;
    }
    return (int)n;
}

int vfs_regex_prefilter(const char *q, bool icase, struct vfs_lit *lits, bool *fold)
{
    size_t qlen = strlen(q);
    char *alt = malloc(qlen + 1), *best = malloc(qlen + 1), *cur = malloc(qlen + 1);
    int n = alt && best && cur ? choose(q, icase, lits, fold, alt, best, cur) : -1;

    free(alt);
    free(best);
    free(cur);
    return n;
}
