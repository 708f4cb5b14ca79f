/* daemon/vfs_regex.c - what a search regex says about its matches, for the memmem prefilter
 * of vfs_search.c (see vfs_int.h).
 *
 * Pure string analysis of a PCRE2 pattern, without compiling it: the caller has already
 * compiled it. Conservative by design: whatever is not plainly a literal ends a run, and
 * whatever could change what a literal means (inline options such as (?i) or (?x), verbs such
 * as (*CR)) gives up on the pattern, so a literal found here may be shorter than possible but is
 * never wrong. */
#include "vfs_int.h"

#include <stdbool.h>
#include <string.h>

#include "utf8.h"

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alnum(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_xdigit(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The bytes of the character at p (1 for a byte that starts none). */
static size_t char_len(const char *p)
{
    size_t n = utf8_lead_len((unsigned char)*p);

    if (n <= 1 || strnlen(p, n) < n)
        return 1;
    return n;
}

/* The byte after the closing c of the delimited argument at p (p[0] opens it). */
static const char *skip_to(const char *p, char c)
{
    const char *close = strchr(p + 1, c);

    return close ? close + 1 : p + strlen(p);
}

/* The byte after "\Q...\E" (p is just past "\Q"); quoted text runs to the end without \E. */
static const char *skip_quoted(const char *p)
{
    const char *e = strstr(p, "\\E");

    return e ? e + 2 : p + strlen(p);
}

/* The byte after the escape at p ("\\" and more). For an escape that stands for one literal
 * character (a backslash before anything but a letter or digit), *lit and *litlen give it;
 * else *litlen is 0 (\d, \b, \x41, \1, \p{L}: classes, assertions, numbered characters and
 * back references are not plain literals). */
static const char *skip_escape(const char *p, const char **lit, size_t *litlen)
{
    char c = p[1];

    *litlen = 0;
    if (!c)
        return p + 1;
    if (!is_alnum(c)) {
        *lit = p + 1;
        *litlen = char_len(p + 1);
        return p + 1 + *litlen;
    }
    p += 2;
    switch (c) {
    case 'x':
        if (*p == '{')
            return skip_to(p, '}');
        for (int i = 0; i < 2 && is_xdigit(*p); i++)
            p++;
        return p;
    case 'o':
    case 'N':
        return *p == '{' ? skip_to(p, '}') : p;
    case 'p':
    case 'P':
        return *p == '{' ? skip_to(p, '}') : *p ? p + char_len(p) : p;
    case 'c':
        return *p ? p + char_len(p) : p;
    case 'g':
    case 'k':
        if (*p == '{')
            return skip_to(p, '}');
        if (*p == '<')
            return skip_to(p, '>');
        if (*p == '\'')
            return skip_to(p, '\'');
        while (*p == '+' || *p == '-' || is_digit(*p))
            p++;
        return p;
    case 'Q':
        return skip_quoted(p);
    default:
        while (is_digit(c) && is_digit(*p))
            p++; /* a back reference or an octal character */
        return p;
    }
}

/* The ":]" (or ".]", "=]") that ends the POSIX class name after "[:" at p (p[0] is ':', '.' or
 * '='), or NULL when the "[" is a plain member: as PCRE2 decides it, a "]" or another "[:"
 * before the terminator means no POSIX name ("[[:a]x" is the class of '[', ':' and 'a'). */
static const char *posix_end(const char *p)
{
    char t = *p++;

    for (; p[0] && p[1]; p++) {
        if (p[0] == '\\' && (p[1] == ']' || p[1] == '\\'))
            p++;
        else if ((p[0] == '[' && p[1] == t) || p[0] == ']')
            return NULL;
        else if (p[0] == t && p[1] == ']')
            return p;
    }
    return NULL;
}

/* Skips the character class that starts at p ('['); returns the byte after its ']'. */
static const char *skip_bracket(const char *p)
{
    bool negated = false;

    /* As PCRE2 reads a class's start: "\E" and "\Q\E" are nothing there, and one '^' among
     * them negates; the ']' that comes first after them is a member ("[\E]x]" is ']' or 'x'). */
    for (p++;;) {
        if (p[0] == '\\' && p[1] == 'E') {
            p += 2;
        } else if (strncmp(p, "\\Q\\E", 4) == 0) {
            p += 4;
        } else if (*p == '^' && !negated) {
            negated = true;
            p++;
        } else {
            break;
        }
    }
    if (*p == ']')
        p++;
    while (*p && *p != ']') {
        if (*p == '\\') {
            const char *lit;
            size_t n;

            /* An escape's argument may be a ']' ("\c]" is the character 0x1d, "\Q]\E" a ']'). */
            p = skip_escape(p, &lit, &n);
        } else if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
            const char *close = posix_end(p + 1);

            p = close ? close + 2 : p + 1;
        } else {
            p++;
        }
    }
    return *p ? p + 1 : p;
}

/* Skips the group that starts at p ('('); returns the byte after its ')'. */
static const char *skip_group(const char *p)
{
    int depth = 0;

    while (*p) {
        const char *lit;
        size_t n;

        if (*p == '\\') {
            p = skip_escape(p, &lit, &n);
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

static const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* True when p ('{') may start a counted repeat: {n}, {n,} or {n,m}, and since PCRE2 10.43 also
 * {,m} and spaces or tabs after '{', before '}' and around the comma. Both readings count (a
 * literal "{,2}" taken for a repeat only shortens a literal), so the prefilter stays right
 * whichever PCRE2 the build links. Anything else: '{' is a literal. */
static bool is_repeat(const char *p)
{
    bool digits = false;

    p = skip_blanks(p + 1);
    for (; is_digit(*p); p++)
        digits = true;
    p = skip_blanks(p);
    if (*p == ',') {
        p = skip_blanks(p + 1);
        for (; is_digit(*p); p++)
            digits = true;
        p = skip_blanks(p);
    }
    return digits && *p == '}';
}

struct litrun {
    char *best; /* the longest run so far (caller's buffer) */
    size_t best_len;
    char *cur; /* the run being built (caller's buffer) */
    size_t cur_len;
    bool icase; /* the pattern is caseless */
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

/* Adds the character s[0..n) to the run. Caseless and in UTF mode, k and s also match the
 * Kelvin sign (U+212A) and the long s (U+017F), which an ASCII-folded memmem would miss: they
 * end the run instead. */
static void run_add(struct litrun *r, const char *s, size_t n)
{
    if (r->icase && n == 1 && strchr("kKsS", *s)) {
        run_end(r);
        return;
    }
    memcpy(r->cur + r->cur_len, s, n);
    r->cur_len += n;
}

/* The run of quoted text "\Q...\E" (p just past "\Q"); returns the byte after it. */
static const char *add_quoted(struct litrun *r, const char *p)
{
    while (*p && !(p[0] == '\\' && p[1] == 'E')) {
        size_t n = char_len(p);

        run_add(r, p, n);
        p += n;
    }
    return *p ? p + 2 : p;
}

size_t vfs_regex_literal(const char *re, bool icase, char *best, char *cur)
{
    struct litrun r = {.best = best, .cur = cur, .icase = icase};

    for (const char *p = re; *p;) {
        const char *lit;
        size_t n;

        if (p[0] == '\\' && p[1] == 'Q') {
            p = add_quoted(&r, p + 2);
        } else if (p[0] == '\\' && p[1] == 'E') {
            p += 2; /* a lone \E is nothing: in "ab\E?" the '?' makes the 'b' optional */
        } else if (*p == '\\') {
            p = skip_escape(p, &lit, &n);
            if (n)
                run_add(&r, lit, n);
            else
                run_end(&r);
        } else if (*p == '|') {
            return 0; /* a top-level alternative need not contain any run */
        } else if (*p == '[') {
            run_end(&r);
            p = skip_bracket(p);
        } else if (*p == '(') {
            if (p[1] == '?' || p[1] == '*')
                return 0; /* an option setting or a verb may change what follows means */
            run_end(&r);
            p = skip_group(p);
        } else if (*p == '*' || *p == '?' || (*p == '{' && is_repeat(p))) {
            run_drop_last(&r);
            p = *p == '{' ? skip_to(p, '}') : p + 1;
        } else if (strchr("+.^$)", *p)) {
            run_end(&r);
            p++;
        } else {
            n = char_len(p);
            run_add(&r, p, n);
            p += n;
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
        const char *lit;
        size_t len;

        if (*p == '\0' || *p == '|') {
            if (n == max)
                return 0;
            starts[n] = a;
            lens[n++] = (size_t)(p - a);
            if (!*p)
                return n;
            a = ++p;
        } else if (*p == '\\') {
            p = skip_escape(p, &lit, &len);
        } else if (*p == '[') {
            p = skip_bracket(p);
        } else if (*p == '(') {
            p = skip_group(p);
        } else {
            p++;
        }
    }
}
