/* daemon/vfs_regex.c - what a search regex says about its matches, for the memmem prefilter
 * of vfs_search.c (see vfs_int.h).
 *
 * Pure string analysis of a POSIX extended regex, without compiling it: the caller has
 * already checked it with regcomp(). Conservative by design: whatever is not plainly a literal
 * ends a run, so a literal found here may be shorter than possible but is never wrong. */
#include "vfs_int.h"

#include <stdbool.h>
#include <string.h>

#include "utf8.h"

/* Skips the bracket expression that starts at p ('['); returns the byte after its ']'. */
static const char *skip_bracket(const char *p)
{
    p++;
    if (*p == '^')
        p++;
    if (*p == ']')
        p++;
    while (*p && *p != ']') {
        if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
            const char *close = strchr(p + 2, p[1]);

            while (close && close[1] != ']')
                close = strchr(close + 1, p[1]);
            if (!close)
                return p + strlen(p);
            p = close + 2;
            continue;
        }
        p++;
    }
    return *p ? p + 1 : p;
}

/* Skips the group that starts at p ('('); returns the byte after its ')'. */
static const char *skip_group(const char *p)
{
    int depth = 0;

    while (*p) {
        if (*p == '\\' && p[1]) {
            p += 2;
            continue;
        }
        if (*p == '[') {
            p = skip_bracket(p);
            continue;
        }
        if (*p == '(')
            depth++;
        else if (*p == ')' && --depth == 0)
            return p + 1;
        p++;
    }
    return p;
}

struct litrun {
    char *best; /* the longest run so far (caller's buffer) */
    size_t best_len;
    char *cur; /* the run being built (caller's buffer) */
    size_t cur_len;
};

static void run_end(struct litrun *r)
{
    if (r->cur_len > r->best_len) {
        memcpy(r->best, r->cur, r->cur_len);
        r->best_len = r->cur_len;
    }
    r->cur_len = 0;
}

/* A quantifier that allows zero makes the run's last character optional: drop it (the whole
 * UTF-8 character) and end the run. */
static void run_drop_last(struct litrun *r)
{
    while (r->cur_len > 0 && utf8_is_cont((unsigned char)r->cur[r->cur_len - 1]))
        r->cur_len--;
    if (r->cur_len > 0)
        r->cur_len--;
    run_end(r);
}

size_t vfs_regex_literal(const char *re, char *best, char *cur)
{
    struct litrun r = {.best = best, .cur = cur};

    for (const char *p = re; *p;) {
        if (*p == '\\') {
            /* Escaped punctuation is literal; \w, \b, \<, \1 and the like are not. */
            if (p[1] && strchr(".[]()*+?{}|^$\\/", p[1])) {
                r.cur[r.cur_len++] = p[1];
                p += 2;
            } else {
                run_end(&r);
                p += p[1] ? 2 : 1;
            }
        } else if (*p == '|') {
            return 0; /* a top-level alternative need not contain any run */
        } else if (*p == '[') {
            run_end(&r);
            p = skip_bracket(p);
        } else if (*p == '(') {
            run_end(&r);
            p = skip_group(p);
        } else if (*p == '*' || *p == '?' || *p == '{') {
            const char *close = *p == '{' ? strchr(p, '}') : NULL;

            run_drop_last(&r);
            p = close ? close + 1 : p + 1;
        } else if (strchr("+.^$)", *p)) {
            run_end(&r);
            p++;
        } else {
            r.cur[r.cur_len++] = *p++;
        }
    }
    run_end(&r);
    best[r.best_len] = '\0';
    return r.best_len;
}

size_t vfs_regex_split(const char *q, const char **starts, size_t *lens, size_t max)
{
    const char *a = q, *p = q;
    size_t n = 0;

    for (;;) {
        if (*p == '\0' || *p == '|') {
            if (n == max)
                return 0;
            starts[n] = a;
            lens[n++] = (size_t)(p - a);
            if (!*p)
                return n;
            a = ++p;
        } else if (*p == '\\' && p[1]) {
            p += 2;
        } else if (*p == '[') {
            p = skip_bracket(p);
        } else if (*p == '(') {
            p = skip_group(p);
        } else {
            p++;
        }
    }
}
