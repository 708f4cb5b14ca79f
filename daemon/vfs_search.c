/* daemon/vfs_search.c - search: lines of workspace files that contain a literal or match a
 * PCRE2 regex, reported as "path:line: text" (see vfs.h).
 *
 * Design, for speed (the benchmark compares it with grep -rn):
 * - The walk reads each directory with getdents64 into one arena, sorts the names so that the
 *   output is in full-path byte order (a directory sorts as "name/"), and opens every entry with
 *   openat(O_NOFOLLOW) relative to its parent: symlinks are never followed and no path is
 *   resolved twice.
 * - A file is read into one reused buffer (whole, up to CHUNK_MAX; bigger files in chunks that
 *   end at a newline). The matcher runs over the whole buffer, not line by line: memmem for
 *   literals (over an ASCII-folded copy when case-insensitive), PCRE2 (JIT-compiled where the
 *   library can) for regexes. Line bounds are found only around a hit, and line numbers are
 *   counted with a word-at-a-time newline count from the previous hit.
 * - A regex runs over the whole region when it has no literal to prefilter with; a match that
 *   spans lines is checked again on its first line alone, so a line matches exactly when the
 *   regex matches within it. Each match has a backtracking budget (match, depth and heap limits):
 *   a region that uses it up is searched again line by line, and a single line that uses it up
 *   ends the search with "pattern too complex", in milliseconds rather than the minutes a
 *   catastrophic pattern such as (a*)*\1\1b would take.
 * - The search polls its cancel check between files and every few thousand lines.
 * - Output text is made valid UTF-8 (invalid bytes become U+FFFD) and cut to max_line bytes on a
 *   character boundary, showing the part of a long line where the match is. */
#include "vfs.h"
#include "vfs_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "utf8.h"

#define DEFAULT_MAX_RESULTS 200
#define DEFAULT_MAX_LINE    300
#define BINARY_PROBE        8192                 /* a NUL in this many first bytes means binary */
#define CHUNK_MIN           (64u << 10)          /* smallest read buffer */
#define CHUNK_MAX           (1u << 20)           /* files up to this size are read whole */
#define LINE_BUF_MAX        (4u << 20)           /* a longer line is searched in pieces */
#define DEPTH_MAX           VFS_SEARCH_DEPTH_MAX /* the walk holds one fd per level */
#define DENTS_BUF           (32u << 10)
#define REGEX_META          ".[]()*+?{}|^$\\"
#define CANCEL_LINES        4096 /* lines searched between two polls of the cancel check */

/* One directory entry of a walk: its name lives in the list's arena. */
struct dent {
    size_t off;
    unsigned char type; /* DT_DIR, DT_REG, ... (never DT_UNKNOWN after collection) */
};

struct dirlist {
    char *arena;
    size_t alen, acap;
    struct dent *ents;
    size_t n, cap;
};

struct search {
    struct vfs_search_result *r;
    struct errinfo *err;
    size_t max_results, max_line;
    const char *ext; /* without a leading dot, or NULL */
    size_t ext_len;
    struct vfs_rx *rx; /* the regex, or NULL for a literal search */
    const char *query; /* borrowed, for messages */
    bool (*cancelled)(void *ctx);
    void *cancel_ctx;
    unsigned lines_since_poll;
    uint64_t line0; /* the number of the line the region being scanned starts with */
    struct vfs_lit lits[VFS_LITS_MAX]; /* the literal query, or the regex's prefilter literals */
    size_t nlits;                      /* 0: a regex without a usable prefilter */
    bool fold;        /* the literals are ASCII-folded and matched against a folded copy */
    char *buf, *fbuf; /* file data and its folded copy (owned, reused) */
    size_t cap;       /* bytes of data either holds; buf has one more */
    size_t out_cap;   /* capacity of r->text */
    char path[VFS_PATH_MAX + 1];
    size_t plen;
    uint64_t dents[DENTS_BUF / 8]; /* getdents64 records; a level is read before descending */
    bool stop;                     /* max_results reached and one more match seen, or failed */
    bool failed;                   /* out of memory: the search fails */
};

/* ---- small helpers ---- */

static int out_reserve(struct search *s, size_t more)
{
    struct vfs_search_result *r = s->r;
    size_t need = r->len + more + 1;
    char *grown;
    size_t cap;

    if (need <= s->out_cap)
        return 0;
    cap = s->out_cap ? s->out_cap : 4096;
    while (cap < need)
        cap *= 2;
    grown = realloc(r->text, cap);
    if (!grown) {
        errinfo_set(s->err, ERR_NOMEM, "search: out of memory for results");
        s->stop = s->failed = true;
        return -1;
    }
    r->text = grown;
    s->out_cap = cap;
    return 0;
}

static void out_put(struct search *s, const void *p, size_t n)
{
    memcpy(s->r->text + s->r->len, p, n);
    s->r->len += n;
}

/* Folds ASCII A-Z to a-z, eight bytes at a time: for each byte below 0x80, adding 0x80-'A'
 * sets its top bit when it is >= 'A', adding 0x80-'Z'-1 when it is > 'Z'. */
static void fold_ascii(char *dst, const char *src, size_t n)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t x, low, ge_a, gt_z;

        memcpy(&x, src + i, 8);
        low = x & ~high;
        ge_a = low + ones * (0x80 - 'A');
        gt_z = low + ones * (0x80 - 'Z' - 1);
        x |= ((ge_a & ~gt_z & ~x & high) >> 2);
        memcpy(dst + i, &x, 8);
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)src[i];

        dst[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
}

/* Counts '\n' in [p, end), eight bytes at a time. */
static uint64_t count_newlines(const char *p, const char *end)
{
    const uint64_t ones = 0x0101010101010101ull, low7 = 0x7f7f7f7f7f7f7f7full;
    uint64_t n = 0;

    for (; p + 8 <= end; p += 8) {
        uint64_t x, t;

        memcpy(&x, p, 8);
        x ^= ones * '\n';
        /* A zero byte of x (a newline) is the only one whose top bit stays clear. */
        t = ((x & low7) + low7) | x;
        t = (~t >> 7) & ones;
        n += (t * ones) >> 56;
    }
    for (; p < end; p++)
        n += *p == '\n';
    return n;
}

/* ---- output: one "path:line: text\n" ---- */

/* Appends src[0..n) as valid UTF-8 (U+FFFD for each invalid byte and NUL; with no_ctl, also
 * for control characters) using at most max output bytes; returns the number of input bytes
 * consumed. The caller reserved max bytes. */
static size_t put_utf8(struct search *s, const char *src, size_t n, size_t max, bool no_ctl)
{
    size_t used, i = utf8_sanitize(s->r->text + s->r->len, max, src, n, no_ctl, &used);

    s->r->len += used;
    return i;
}

/* Moves back from p to the start of a UTF-8 character, at most 3 bytes and not before lo. */
static const char *char_start(const char *lo, const char *p)
{
    for (int k = 0; k < 3 && p > lo && utf8_is_cont((unsigned char)*p); k++)
        p--;
    return p;
}

static void emit(struct search *s, uint64_t line, const char *ls, const char *le, const char *m,
                 size_t mlen)
{
    static const char ell[] = "\xe2\x80\xa6";
    char num[24];
    int nn = snprintf(num, sizeof(num), ":%llu: ", (unsigned long long)line);
    size_t max = s->max_line;
    size_t text_len;

    if (le > ls && le[-1] == '\r')
        le--;
    text_len = (size_t)(le - ls);
    if (out_reserve(s, 3 * s->plen + (size_t)nn + 3 * max + 16) < 0)
        return;
    put_utf8(s, s->path, s->plen, 3 * s->plen, true);
    out_put(s, num, (size_t)nn);
    /* A long line is shown from a little before the match when the match lies past the cut. */
    if (text_len > max && (size_t)(m - ls) + mlen > max) {
        ls = char_start(ls, m - (m - ls > (ptrdiff_t)(max / 4) ? max / 4 : (size_t)(m - ls)));
        out_put(s, ell, 3);
        text_len = (size_t)(le - ls);
    }
    if (put_utf8(s, ls, text_len, max, false) < text_len)
        out_put(s, ell, 3);
    out_put(s, "\n", 1);
    s->r->text[s->r->len] = '\0';
    s->r->matches++;
}

/* ---- matching ---- */

/* The first occurrence of l in [pos, end) of the buffer b, or NULL. */
static const char *find_one(const struct search *s, const struct vfs_lit *l, const char *b,
                            const char *pos, const char *end)
{
    const char *f;

    if (!s->fold)
        return memmem(pos, (size_t)(end - pos), l->s, l->n);
    f = memmem(s->fbuf + (pos - b), (size_t)(end - pos), l->s, l->n);
    return f ? b + (f - s->fbuf) : NULL;
}

/* The first occurrence of any literal in [pos, end). Each literal is
 * searched again only when its cached hit lies before pos, so the buffer is scanned about once
 * per literal however many candidates there are. */
static const char *find_any(struct search *s, const char *b, const char *pos, const char *end)
{
    const char *best = NULL;

    for (size_t i = 0; i < s->nlits; i++) {
        struct vfs_lit *l = &s->lits[i];

        if (!l->known || (l->hit && l->hit < pos)) {
            l->hit = find_one(s, l, b, pos, end);
            l->known = true;
        }
        if (l->hit && (!best || l->hit < best))
            best = l->hit;
    }
    return best;
}

/* True (and the search stops, failing with ERR_CANCELLED) once the caller's cancel check says
 * so. */
static bool poll_cancel(struct search *s)
{
    if (s->stop || !s->cancelled || !s->cancelled(s->cancel_ctx))
        return s->stop;
    errinfo_set(s->err, ERR_CANCELLED,
                "search: cancelled after %" PRIu64 " %s (%" PRIu64 " MiB read)",
                s->r->files_scanned, s->r->files_scanned == 1 ? "file" : "files",
                s->r->bytes_scanned >> 20);
    s->stop = s->failed = true;
    return true;
}

/* The search fails: the pattern used up a match's budget on the line at ls in the current file. */
static void too_complex(struct search *s, const char *b, const char *ls)
{
    char where[48];
    uint64_t line = s->line0 + count_newlines(b, ls);

    snprintf(where, sizeof(where), ":%" PRIu64, line);
    errinfo_set(s->err, ERR_INVALID,
                "search: pattern too complex: \"%.60s\" needs more backtracking than allowed on "
                "%.180s%s; simplify it (nested repeats such as (a*)* or (a+)+ are the usual "
                "cause), or search for a literal",
                s->query, s->path, where);
    s->stop = s->failed = true;
}

static int regex_at(struct search *s, const char *b, size_t subj, size_t from, size_t to,
                    size_t *so, size_t *eo)
{
    return vfs_rx_match(s->rx, b, subj, from, to, so, eo);
}

/* The bounds [*ls, *le) of the line of [pos, end) that holds at (pos is a line start). */
static void line_around(const char *pos, const char *end, const char *at, const char **ls,
                        const char **le)
{
    const char *nl = at > pos ? memrchr(pos, '\n', (size_t)(at - pos)) : NULL;

    *ls = nl ? nl + 1 : pos;
    nl = memchr(at, '\n', (size_t)(end - at));
    *le = nl ? nl : end;
}

/* The regex within the one line [ls, le) of b: 1 with the match at *at (*mlen bytes), 0 when
 * the line does not match, -1 when the line used up the budget (the search has then failed). */
static int match_line(struct search *s, const char *b, const char *ls, const char *le,
                      const char **at, size_t *mlen)
{
    size_t so, eo;
    int rc = regex_at(s, b, (size_t)(ls - b), (size_t)(ls - b), (size_t)(le - b), &so, &eo);

    if (rc < 0)
        too_complex(s, b, ls);
    if (rc > 0) {
        *at = b + so;
        *mlen = eo - so;
    }
    return rc < 0 ? -1 : rc > 0;
}

/* The first line in [pos, end) that the regex matches within, line by line; NULL when none, or
 * when a line uses up the budget (the search then fails). */
static const char *find_by_lines(struct search *s, const char *b, const char *pos, const char *end,
                                 size_t *mlen)
{
    while (pos < end && !s->stop) {
        const char *le = memchr(pos, '\n', (size_t)(end - pos)), *at;
        int rc;

        if (++s->lines_since_poll >= CANCEL_LINES) {
            s->lines_since_poll = 0;
            if (poll_cancel(s))
                return NULL;
        }
        le = le ? le : end;
        rc = match_line(s, b, pos, le, &at, mlen);
        if (rc != 0)
            return rc > 0 ? at : NULL;
        pos = le + 1;
    }
    return NULL;
}

/* The first match of the regex over [pos, end) at once (pos is a line start). A match that runs
 * past its first line's end is checked on that line alone; a region that uses up the budget is
 * searched line by line. */
static const char *find_in_region(struct search *s, const char *b, const char *pos, const char *end,
                                  size_t *mlen)
{
    while (pos < end) {
        size_t so, eo;
        const char *ls, *le, *at;
        int rc = regex_at(s, b, 0, (size_t)(pos - b), (size_t)(end - b), &so, &eo);

        if (rc < 0)
            return find_by_lines(s, b, pos, end, mlen);
        if (rc == 0)
            return NULL;
        line_around(pos, end, b + so, &ls, &le);
        if (b + eo <= le) {
            *mlen = eo - so;
            return b + so;
        }
        /* It spans lines: the line matches only if the regex matches within it. */
        rc = match_line(s, b, ls, le, &at, mlen);
        if (rc != 0)
            return rc > 0 ? at : NULL;
        pos = le + 1;
    }
    return NULL;
}

/* The first match in [pos, end) of the buffer b (pos is a line start); NULL when none. */
static const char *find(struct search *s, const char *b, const char *pos, const char *end,
                        size_t *mlen)
{
    if (!s->rx) {
        *mlen = s->lits[0].n;
        return find_any(s, b, pos, end);
    }
    if (!s->nlits)
        return find_in_region(s, b, pos, end, mlen);
    /* Prefiltered: run the regex only on lines that hold one of its required literals. */
    while (pos < end && !s->stop) {
        const char *c = find_any(s, b, pos, end), *ls, *le, *at;
        int rc;

        if (!c)
            return NULL;
        line_around(pos, end, c, &ls, &le);
        rc = match_line(s, b, ls, le, &at, mlen);
        if (rc != 0)
            return rc > 0 ? at : NULL;
        pos = le + 1;
    }
    return NULL;
}

/* Reports the matching lines of b[0..n), which holds whole lines; *line is the number of the
 * line at b[0] and becomes that of b[n] when more follows. */
static void scan_region(struct search *s, const char *b, size_t n, uint64_t *line, bool more)
{
    const char *pos = b, *end = b + n, *counted = b;
    uint64_t ln = *line;

    s->line0 = ln;
    if (poll_cancel(s))
        return;
    s->r->bytes_scanned += n;
    if (s->fold)
        fold_ascii(s->fbuf, b, n);
    for (size_t i = 0; i < s->nlits; i++)
        s->lits[i].known = false; /* the cached hits belong to the previous region */
    while (pos < end && !s->stop) {
        size_t mlen = 0;
        const char *m = find(s, b, pos, end, &mlen);
        const char *ls, *le;

        if (!m)
            break;
        if (s->r->matches >= s->max_results) {
            s->r->truncated = true;
            s->stop = true;
            break;
        }
        ls = m > pos ? memrchr(pos, '\n', (size_t)(m - pos)) : NULL;
        ls = ls ? ls + 1 : pos;
        le = memchr(m, '\n', (size_t)(end - m));
        if (!le)
            le = end;
        ln += count_newlines(counted, ls);
        counted = ls;
        emit(s, ln, ls, le, m, mlen);
        pos = le + 1;
    }
    if (more)
        *line = ln + count_newlines(counted, end);
}

/* Makes room for cap bytes in the file buffer (plus one for a terminating NUL) and its folded
 * copy. A failure leaves the search unusable; the caller stops. */
static int buf_reserve(struct search *s, size_t cap)
{
    char *grown;

    if (cap <= s->cap)
        return 0;
    grown = realloc(s->buf, cap + 1);
    if (!grown)
        return -1;
    s->buf = grown;
    if (s->fold) {
        grown = realloc(s->fbuf, cap);
        if (!grown)
            return -1;
        s->fbuf = grown;
    }
    s->cap = cap;
    return 0;
}

/* Reads until the buffer is full or the file ends; returns bytes now held, or -1. */
static ssize_t fill(struct search *s, int fd, size_t have, uint64_t *done, uint64_t size, bool *eof)
{
    while (!*eof && have < s->cap) {
        ssize_t n = read(fd, s->buf + have, s->cap - have);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        have += (size_t)n;
        *done += (size_t)n;
        /* Stopping at the size fstat gave saves the read that would return 0. */
        if (n == 0 || *done >= size)
            *eof = true;
    }
    return (ssize_t)have;
}

/* Searches the open regular file fd of size bytes (s->path names it). */
static void scan_fd(struct search *s, int fd, uint64_t size)
{
    size_t have = 0, end;
    uint64_t done = 0, line = 1;
    bool eof = false, first = true;

    if (buf_reserve(s, size < CHUNK_MAX ? (size < CHUNK_MIN ? CHUNK_MIN : size + 1) : CHUNK_MAX) <
        0)
        goto nomem;
    for (;;) {
        ssize_t got = fill(s, fd, have, &done, size, &eof);

        if (got < 0)
            return; /* unreadable now (removed, I/O error): skip it like grep -s */
        have = (size_t)got;
        if (first) {
            first = false;
            if (memchr(s->buf, '\0', have < BINARY_PROBE ? have : BINARY_PROBE)) {
                s->r->binary_skipped++;
                return;
            }
        }
        end = have;
        if (!eof) {
            const char *nl = memrchr(s->buf, '\n', have);

            if (!nl && s->cap < LINE_BUF_MAX) {
                if (buf_reserve(s, s->cap * 2) < 0)
                    goto nomem;
                continue; /* one line fills the buffer: read more of it */
            }
            if (nl)
                end = (size_t)(nl - s->buf) + 1;
        }
        scan_region(s, s->buf, end, &line, !eof);
        if (s->stop || (eof && end == have))
            return;
        memmove(s->buf, s->buf + end, have - end);
        have -= end;
    }
nomem:
    errinfo_set(s->err, ERR_NOMEM, "search: out of memory reading %.180s", s->path);
    s->stop = s->failed = true;
}

/* ---- the walk ---- */

static void dirlist_free(struct dirlist *l)
{
    free(l->arena);
    free(l->ents);
}

static int dirlist_add(struct dirlist *l, const char *name, size_t len, unsigned char type)
{
    if (l->alen + len + 1 > l->acap) {
        size_t cap = l->acap ? l->acap * 2 : 4096;
        char *grown;

        while (cap < l->alen + len + 1)
            cap *= 2;
        grown = realloc(l->arena, cap);
        if (!grown)
            return -1;
        l->arena = grown;
        l->acap = cap;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct dent *grown = realloc(l->ents, cap * sizeof(*grown));

        if (!grown)
            return -1;
        l->ents = grown;
        l->cap = cap;
    }
    memcpy(l->arena + l->alen, name, len + 1);
    l->ents[l->n].off = l->alen;
    l->ents[l->n].type = type;
    l->n++;
    l->alen += len + 1;
    return 0;
}

/* Orders names as their full paths compare bytewise: a directory sorts as "name/". */
static int cmp_dent(const void *a, const void *b, void *arena)
{
    const struct dent *x = a, *y = b;
    const unsigned char *p = (const unsigned char *)arena + x->off;
    const unsigned char *q = (const unsigned char *)arena + y->off;
    int cp, cq;

    while (*p && *p == *q) {
        p++;
        q++;
    }
    cp = *p ? *p : (x->type == DT_DIR ? '/' : 0);
    cq = *q ? *q : (y->type == DT_DIR ? '/' : 0);
    return cp - cq;
}

static bool wanted_file(const struct search *s, const char *name, size_t len)
{
    if (!s->ext)
        return true;
    return len > s->ext_len + 1 && name[len - s->ext_len - 1] == '.' &&
           strcasecmp(name + len - s->ext_len, s->ext) == 0;
}

/* Collects the entries of the directory dfd (borrowed) that the walk visits: directories, and
 * regular files that pass the ext filter. Symlinks and special files are left out. */
static int collect(const struct search *s, int dfd, struct dirlist *l)
{
    char *dents = (char *)s->dents;

    for (;;) {
        long n = syscall(SYS_getdents64, dfd, dents, sizeof(s->dents));

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return (int)n;
        for (long off = 0; off < n;) {
            struct dirent64 *de = (struct dirent64 *)(dents + off);
            const char *name = de->d_name;
            size_t len = strlen(name);
            unsigned char type = de->d_type;
            struct stat st;

            off += de->d_reclen;
            if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
                continue;
            if (vfs_is_temp_name(name, len))
                continue; /* a write's temporary, maybe left by a kill -9 */
            if (type == DT_UNKNOWN) {
                if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                    continue;
                type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
            }
            if (type != DT_DIR && (type != DT_REG || !wanted_file(s, name, len)))
                continue;
            if (dirlist_add(l, name, len, type) < 0)
                return -1;
        }
    }
}

static void scan_file_at(struct search *s, int dfd, const char *name)
{
    struct stat st;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

    if (poll_cancel(s))
        return;
    if (fd < 0)
        return;
    /* fstat on the opened fd: the entry may have been swapped for a FIFO since getdents. */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        s->r->files_scanned++;
        scan_fd(s, fd, (uint64_t)st.st_size);
    }
    close(fd);
}

/* Searches the directory dfd (borrowed), whose VFS path is s->path. */
static void walk(struct search *s, int dfd, int depth)
{
    struct dirlist l = {0};
    size_t plen = s->plen;

    if (collect(s, dfd, &l) < 0) {
        if (errno == ENOMEM) {
            errinfo_set(s->err, ERR_NOMEM, "search: out of memory listing %.180s", s->path);
            s->stop = s->failed = true;
        }
        goto out;
    }
    if (l.n > 1) /* qsort_r(NULL, 0, ...) is undefined behaviour */
        qsort_r(l.ents, l.n, sizeof(*l.ents), cmp_dent, l.arena);
    for (size_t i = 0; i < l.n && !s->stop; i++) {
        const char *name = l.arena + l.ents[i].off;
        size_t sep = plen > 1 ? 1 : 0, len = VFS_ESCAPE_NOROOM;

        /* The path as the tools name it: escaped (vfs.h, Names). */
        if (plen + sep < VFS_PATH_MAX)
            len =
                vfs_escape(name, strlen(name), s->path + plen + sep, VFS_PATH_MAX + 1 - plen - sep);
        if (len == VFS_ESCAPE_NOROOM) {
            s->path[plen] = '\0';
            s->r->too_long++; /* no tool could address it either */
            continue;
        }
        if (sep)
            s->path[plen] = '/';
        s->plen = plen + sep + len;
        if (l.ents[i].type == DT_REG) {
            scan_file_at(s, dfd, name);
        } else if (depth >= DEPTH_MAX) {
            s->r->dirs_too_deep++;
        } else {
            int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

            if (cfd >= 0) {
                walk(s, cfd, depth + 1);
                close(cfd);
            }
        }
        s->plen = plen;
        s->path[plen] = '\0';
    }
out:
    dirlist_free(&l);
}

/* ---- entry point ---- */

static bool has_ascii_letter(const char *p)
{
    for (; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
            return true;
    }
    return false;
}

static bool is_ascii(const char *p)
{
    for (; *p; p++) {
        if ((unsigned char)*p >= 0x80)
            return false;
    }
    return true;
}

static void free_lits(struct search *s)
{
    for (size_t i = 0; i < s->nlits; i++)
        free(s->lits[i].s);
    s->nlits = 0;
}

static int compile_regex(struct search *s, const char *q, bool icase, struct errinfo *err)
{
    int n;

    s->rx = vfs_rx_new(q, icase, err);
    if (!s->rx)
        return -1;
    n = vfs_regex_prefilter(q, icase, s->lits, &s->fold);
    if (n < 0) {
        errinfo_set(err, ERR_NOMEM, "search: out of memory");
        return -1;
    }
    s->nlits = (size_t)n;
    for (size_t i = 0; s->fold && i < s->nlits; i++)
        fold_ascii(s->lits[i].s, s->lits[i].s, s->lits[i].n);
    return 0;
}

/* Chooses the matcher: a regex without metacharacters runs as a literal. */
static int prepare(struct search *s, const struct vfs_search_opts *o, struct errinfo *err)
{
    const char *q = o->query;
    bool icase = !o->case_sensitive;

    if (!q || !*q) {
        errinfo_set(err, ERR_INVALID, "search: query is empty");
        return -1;
    }
    if (o->regex && (q[strcspn(q, REGEX_META)] != '\0' || (icase && !is_ascii(q))))
        return compile_regex(s, q, icase, err);
    s->lits[0].s = strdup(q);
    if (!s->lits[0].s) {
        errinfo_set(err, ERR_NOMEM, "search: out of memory");
        return -1;
    }
    s->lits[0].n = strlen(q);
    s->nlits = 1;
    s->fold = icase && has_ascii_letter(q);
    if (s->fold)
        fold_ascii(s->lits[0].s, s->lits[0].s, s->lits[0].n);
    return 0;
}

static void set_limits(struct search *s, const struct vfs_search_opts *o)
{
    s->max_results = o->max_results ? o->max_results : DEFAULT_MAX_RESULTS;
    s->max_line = o->max_line ? o->max_line : DEFAULT_MAX_LINE;
    if (s->max_line > VFS_PATH_MAX)
        s->max_line = VFS_PATH_MAX; /* keeps each reserve in emit() bounded */
    if (o->ext && *o->ext) {
        s->ext = o->ext[0] == '.' ? o->ext + 1 : o->ext;
        s->ext_len = strlen(s->ext);
        if (!s->ext_len)
            s->ext = NULL;
    }
}

/* Searches the start path s->path: a directory is walked, a regular file searched alone. */
static int search_start(struct vfs *v, struct search *s, struct errinfo *err)
{
    struct stat st;
    int fd = vfs_open_in_root(v, s->path, O_RDONLY | O_NONBLOCK | O_NOCTTY);

    if (fd < 0) {
        vfs_path_error(err, s->path, errno);
        return -1;
    }
    if (fstat(fd, &st) < 0) {
        vfs_path_error(err, s->path, errno);
        close(fd);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        walk(s, fd, 0);
    } else if (S_ISREG(st.st_mode)) {
        s->r->files_scanned++;
        scan_fd(s, fd, (uint64_t)st.st_size);
    } else {
        errinfo_set(err, ERR_INVALID, "%.180s is not a directory or a regular file", s->path);
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

int vfs_search(struct vfs *v, const struct vfs_search_opts *opts, struct vfs_search_result *out,
               struct errinfo *err)
{
    struct search *s = calloc(1, sizeof(*s)); /* ~37 KiB: too big for a worker's stack */
    int rc = -1;

    memset(out, 0, sizeof(*out));
    if (!s) {
        errinfo_set(err, ERR_NOMEM, "search: out of memory");
        return -1;
    }
    s->r = out;
    s->err = err;
    s->query = opts->query;
    s->cancelled = opts->cancelled;
    s->cancel_ctx = opts->cancel_ctx;
    set_limits(s, opts);
    if (vfs_normalize(opts->path ? opts->path : "/", s->path, sizeof(s->path), err) < 0)
        goto out;
    s->plen = strlen(s->path);
    if (prepare(s, opts, err) < 0 || out_reserve(s, 0) < 0)
        goto out;
    out->text[0] = '\0';
    if (search_start(v, s, err) < 0 || s->failed)
        goto out;
    rc = 0;
out:
    if (rc < 0)
        vfs_search_result_cleanup(out);
    vfs_rx_free(s->rx);
    free_lits(s);
    free(s->buf);
    free(s->fbuf);
    free(s);
    return rc;
}

void vfs_search_result_cleanup(struct vfs_search_result *r)
{
    if (!r)
        return;
    free(r->text);
    memset(r, 0, sizeof(*r));
}
