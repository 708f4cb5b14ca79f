/* daemon/checkpoint_diff.c - what changed between two checkpoints, or a checkpoint and the
 * workspace now: lists of added, removed and changed paths, and a unified diff of text files
 * (Myers' O(ND) algorithm on lines, at most DIFF_EDITS_MAX edits per file), capped. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint_int.h"
#include "strfmt.h"

#define DIFF_EDITS_MAX 2000
#define DIFF_CONTEXT   3

/* ---- reading contents ---- */

char *cp_read(struct checkpoint *c, const char *blob, const char *path, size_t *len,
              bool *too_large)
{
    int fd = blob ? openat(c->blobs_fd, blob, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                  : cp_open_ws(c->ws_fd, path, O_RDONLY);
    struct stat st;
    char *buf = NULL;
    size_t n = 0;

    *too_large = false;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return NULL;
    }
    if ((uint64_t)st.st_size > CP_READ_MAX) {
        *too_large = true;
        close(fd);
        return NULL;
    }
    buf = malloc((size_t)st.st_size + 1);
    while (buf && n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

/* ---- the unified diff (pure) ---- */

struct lines {
    const char **p; /* line starts */
    size_t *len;    /* lengths, with the newline */
    size_t n;
};

static bool split(const char *s, size_t n, struct lines *l)
{
    size_t cap = 16;

    l->n = 0;
    l->p = malloc(cap * sizeof(*l->p));
    l->len = malloc(cap * sizeof(*l->len));
    for (size_t i = 0; l->p && l->len && i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - s) + 1 : n;

        if (l->n == cap) {
            cap *= 2;
            const char **np = realloc(l->p, cap * sizeof(*np));
            size_t *nlen = np ? realloc(l->len, cap * sizeof(*nlen)) : NULL;
            if (np)
                l->p = np;
            if (!nlen)
                return false;
            l->len = nlen;
        }
        l->p[l->n] = s + i;
        l->len[l->n++] = e - i;
        i = e;
    }
    return l->p && l->len;
}

static bool same_line(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
    return a->len[i] == b->len[j] && memcmp(a->p[i], b->p[j], a->len[i]) == 0;
}

/* Myers' greedy forward search keeping each step's V, then a backtrack into an edit script:
 * ops[k] is '=' (both), '-' (a only) or '+' (b only). Returns the number of ops, or -1 past
 * DIFF_EDITS_MAX edits or out of memory. */
static long edit_script(const struct lines *a, const struct lines *b, char **ops_out)
{
    long n = (long)a->n, m = (long)b->n, max = n + m,
         dmax = max < DIFF_EDITS_MAX ? max : DIFF_EDITS_MAX;
    long off = dmax + 1, w = 2 * dmax + 3, d, found = -1;
    long *trace = NULL, *v = calloc((size_t)w, sizeof(long));
    char *ops = NULL;
    long nops = 0, x, y;

    if (!v)
        return -1;
    trace = malloc((size_t)(dmax + 1) * (size_t)w * sizeof(long));
    if (!trace)
        goto fail;
    for (d = 0; d <= dmax && found < 0; d++) {
        for (long k = -d; k <= d; k += 2) {
            if (k == -d || (k != d && v[off + k - 1] < v[off + k + 1]))
                x = v[off + k + 1];
            else
                x = v[off + k - 1] + 1;
            y = x - k;
            while (x < n && y < m && same_line(a, (size_t)x, b, (size_t)y))
                x++, y++;
            v[off + k] = x;
            if (x >= n && y >= m) {
                found = d;
                break;
            }
        }
        /* Only diagonals -d..d were written at this step, so only they are kept. */
        memcpy(trace + d * w + off - d, v + off - d, (size_t)(2 * d + 1) * sizeof(long));
    }
    if (found < 0)
        goto fail;
    ops = malloc((size_t)(n + m + 1));
    if (!ops)
        goto fail;
    /* Backtrack from (n, m), writing ops in reverse. */
    x = n;
    y = m;
    for (d = found; d > 0; d--) {
        const long *pv = trace + (d - 1) * w;
        long k = x - y, pk, px, py;

        if (k == -d || (k != d && pv[off + k - 1] < pv[off + k + 1]))
            pk = k + 1;
        else
            pk = k - 1;
        px = pv[off + pk];
        py = px - pk;
        while (x > px && y > py) {
            ops[nops++] = '=';
            x--, y--;
        }
        ops[nops++] = pk == k + 1 ? '+' : '-';
        if (pk == k + 1)
            y--;
        else
            x--;
    }
    while (x > 0 && y > 0) {
        ops[nops++] = '=';
        x--, y--;
    }
    for (long i = 0; i < nops / 2; i++) {
        char t = ops[i];
        ops[i] = ops[nops - 1 - i];
        ops[nops - 1 - i] = t;
    }
    free(trace);
    free(v);
    *ops_out = ops;
    return nops;
fail:
    free(trace);
    free(v);
    free(ops);
    return -1;
}

struct out {
    char *buf;
    size_t len, max;
    bool truncated;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->truncated)
        return;
    if (o->len + n > o->max) {
        o->truncated = true;
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

static void putf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(struct out *o, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        put(o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void put_line(struct out *o, char mark, const char *p, size_t n)
{
    put(o, &mark, 1);
    put(o, p, n);
    if (!n || p[n - 1] != '\n')
        put(o, "\n\\ No newline at end of file\n", sizeof("\n\\ No newline at end of file\n") - 1);
}

long checkpoint_unified_diff(const char *a, size_t alen, const char *b, size_t blen,
                             const char *name_a, const char *name_b, char **out, size_t max,
                             bool *truncated)
{
    struct lines la = {0}, lb = {0};
    struct out o = {.buf = malloc(max + 1), .max = max};
    char *ops = NULL;
    long nops, changed = 0;

    *out = NULL;
    *truncated = false;
    if (!o.buf || !split(a, alen, &la) || !split(b, blen, &lb) ||
        (nops = edit_script(&la, &lb, &ops)) < 0) {
        free(la.p);
        free(la.len);
        free(lb.p);
        free(lb.len);
        free(o.buf);
        return -1;
    }
    o.buf[0] = '\0';
    putf(&o, "--- %s\n+++ %s\n", name_a, name_b);
    /* Hunks: runs of changes with DIFF_CONTEXT lines around, merged when close. */
    for (long i = 0; i < nops;) {
        long start, end, ai = 0, bi = 0, hs_a, hs_b, ca = 0, cb = 0;

        if (ops[i] == '=') {
            i++;
            continue;
        }
        start = i > DIFF_CONTEXT ? i - DIFF_CONTEXT : 0;
        end = i;
        while (end < nops) {
            long run = 0;
            while (end + run < nops && ops[end + run] == '=')
                run++;
            if (end + run >= nops || run > 2L * DIFF_CONTEXT) {
                end += run < DIFF_CONTEXT ? run : DIFF_CONTEXT;
                break;
            }
            end += run;
            while (end < nops && ops[end] != '=')
                end++;
        }
        for (long k = 0; k < start; k++) {
            ai += ops[k] != '+';
            bi += ops[k] != '-';
        }
        hs_a = ai;
        hs_b = bi;
        for (long k = start; k < end; k++) {
            ca += ops[k] != '+';
            cb += ops[k] != '-';
        }
        putf(&o, "@@ -%ld,%ld +%ld,%ld @@\n", ca ? hs_a + 1 : hs_a, ca, cb ? hs_b + 1 : hs_b, cb);
        for (long k = start; k < end; k++) {
            /* ops was made from la and lb, so the indices stay inside them; said here so that
             * no later change can read past a line table. */
            if ((ops[k] != '+' && (size_t)ai >= la.n) || (ops[k] != '-' && (size_t)bi >= lb.n))
                break;
            if (ops[k] == '=') {
                put_line(&o, ' ', la.p[ai], la.len[ai]);
                ai++, bi++;
            } else if (ops[k] == '-') {
                put_line(&o, '-', la.p[ai], la.len[ai]);
                ai++, changed++;
            } else {
                put_line(&o, '+', lb.p[bi], lb.len[bi]);
                bi++, changed++;
            }
        }
        i = end;
    }
    free(ops);
    free(la.p);
    free(la.len);
    free(lb.p);
    free(lb.len);
    *truncated = o.truncated;
    *out = o.buf;
    return changed;
}

/* ---- the diff of two trees ---- */

static bool is_text(const char *s, size_t n)
{
    return memchr(s, '\0', n < 8192 ? n : 8192) == NULL;
}

/* Whether two file entries differ in content (reading them when their blobs do not say). */
static bool content_differs(struct checkpoint *c, const struct cp_ent *f, const struct cp_ent *t,
                            bool t_now, const struct cp_ent *idx)
{
    size_t la = 0, lb = 0;
    bool big_a, big_b, differ;
    char *a, *b;

    if (!t_now && strcmp(f->blob, t->blob) == 0)
        return false;
    /* Now: a file whose stat is what the index recorded for the same blob is unchanged. */
    if (idx && idx->blob && strcmp(idx->blob, f->blob) == 0 && idx->size == t->size &&
        idx->mtime_ns == t->mtime_ns && idx->ctime_ns == t->ctime_ns && idx->ino == t->ino)
        return false;
    if (f->size != t->size)
        return true;
    a = cp_read(c, f->blob, NULL, &la, &big_a);
    b = t_now ? cp_read(c, NULL, t->path, &lb, &big_b) : cp_read(c, t->blob, NULL, &lb, &big_b);
    differ = big_a || big_b || !a || !b || la != lb || memcmp(a, b, la) != 0;
    free(a);
    free(b);
    return differ;
}

static void add_name(cJSON *arr, const struct cp_ent *e)
{
    char *s = strfmt_alloc("/%s%s", e->path, e->type == 'd' ? "/" : "");

    if (s)
        cJSON_AddItemToArray(arr, cJSON_CreateString(s));
    free(s);
}

int checkpoint_diff(struct checkpoint *c, const char *from, const char *to, char **text,
                    cJSON **json, struct errinfo *err)
{
    struct cp_tree ft = {0}, tt = {0};
    char fid[32], label_f[48], label_t[48];
    bool now = !to, truncated = false;
    struct out o = {.buf = malloc(CHECKPOINT_DIFF_MAX + 1), .max = CHECKPOINT_DIFF_MAX};
    cJSON *j = cJSON_CreateObject(), *added = cJSON_CreateArray(), *removed = cJSON_CreateArray(),
          *changed = cJSON_CreateArray();
    int rc = -1;

    *text = NULL;
    *json = NULL;
    pthread_mutex_lock(&c->lock);
    if (!o.buf || !j || !added || !removed || !changed) {
        errinfo_set(err, ERR_NOMEM, "diff: out of memory");
        goto out;
    }
    o.buf[0] = '\0';
    if (!from) {
        cp_newest(c, fid, sizeof(fid));
        if (!fid[0]) {
            errinfo_set(err, ERR_NOT_FOUND,
                        "diff: there is no checkpoint yet; make one with "
                        "checkpoint");
            goto out;
        }
        from = fid;
    }
    if (cp_load(c, from, &ft, NULL, err) < 0 || (to && cp_load(c, to, &tt, NULL, err) < 0) ||
        (now && cp_walk(c->ws_fd, &tt, err) < 0))
        goto out;
    cp_tree_sort(&ft);
    cp_tree_sort(&tt);
    if (now)
        cp_load_index(c);
    snprintf(label_f, sizeof(label_f), "checkpoint %s", from);
    snprintf(label_t, sizeof(label_t), "%s%s", to ? "checkpoint " : "now", to ? to : "");
    for (size_t i = 0; i < tt.n; i++)
        if (!cp_tree_find(&ft, tt.e[i].path)) {
            add_name(added, &tt.e[i]);
            putf(&o, "A /%s%s\n", tt.e[i].path, tt.e[i].type == 'd' ? "/" : "");
        }
    for (size_t i = 0; i < ft.n; i++)
        if (!cp_tree_find(&tt, ft.e[i].path)) {
            add_name(removed, &ft.e[i]);
            putf(&o, "D /%s%s\n", ft.e[i].path, ft.e[i].type == 'd' ? "/" : "");
        }
    for (size_t i = 0; i < ft.n; i++) {
        const struct cp_ent *f = &ft.e[i], *t = cp_tree_find(&tt, f->path);
        bool type = t && t->type != f->type, mode = t && t->mode != f->mode;
        bool body = t && !type && f->type == 'f' &&
                    content_differs(c, f, t, now, now ? cp_tree_find(&c->index, f->path) : NULL);
        bool link = t && !type && f->type == 'l' && strcmp(f->target, t->target) != 0;

        if (!t || !(type || mode || body || link))
            continue;
        add_name(changed, f);
        putf(&o, "M /%s", f->path);
        if (type)
            putf(&o, " (%s -> %s)",
                 f->type == 'f'   ? "file"
                 : f->type == 'd' ? "folder"
                                  : "symlink",
                 t->type == 'f'   ? "file"
                 : t->type == 'd' ? "folder"
                                  : "symlink");
        if (mode)
            putf(&o, " (mode %o -> %o)", f->mode, t->mode);
        if (link)
            putf(&o, " (symlink %s -> %s)", f->target, t->target);
        put(&o, "\n", 1);
    }
    /* The unified diffs of the changed text files. */
    for (size_t i = 0; i < ft.n && !o.truncated; i++) {
        const struct cp_ent *f = &ft.e[i], *t = cp_tree_find(&tt, f->path);
        size_t la = 0, lb = 0;
        bool big_a = false, big_b = false, cut = false;
        char *a, *b, *d = NULL, na[4200], nb[4200];

        if (!t || f->type != 'f' || t->type != 'f' || !(now ? true : strcmp(f->blob, t->blob)))
            continue;
        a = cp_read(c, f->blob, NULL, &la, &big_a);
        b = now ? cp_read(c, NULL, t->path, &lb, &big_b) : cp_read(c, t->blob, NULL, &lb, &big_b);
        if (a && b && la == lb && memcmp(a, b, la) == 0) {
            free(a);
            free(b);
            continue;
        }
        snprintf(na, sizeof(na), "a/%s (%s)", f->path, label_f);
        snprintf(nb, sizeof(nb), "b/%s (%s)", t->path, label_t);
        if (!a || !b || !is_text(a, la) || !is_text(b, lb))
            putf(&o, "Binary or large files %s and %s differ\n", na, nb);
        else if (checkpoint_unified_diff(a, la, b, lb, na, nb, &d, o.max - o.len, &cut) < 0)
            putf(&o, "[/%s: too many differences to show]\n", f->path);
        else
            put(&o, d, strlen(d));
        if (cut)
            o.truncated = true;
        free(d);
        free(a);
        free(b);
    }
    truncated = o.truncated;
    if (truncated) {
        o.truncated = false;
        o.max += 128;
        putf(&o, "[diff truncated at %u KiB]\n", CHECKPOINT_DIFF_MAX >> 10);
    }
    {
        char *head = strfmt_alloc("%s -> %s: %d added, %d removed, %d changed\n", label_f, label_t,
                                  cJSON_GetArraySize(added), cJSON_GetArraySize(removed),
                                  cJSON_GetArraySize(changed));
        *text = head ? strfmt_alloc("%s%s", head, o.buf) : NULL;
        free(head);
    }
    cJSON_AddStringToObject(j, "from", from);
    if (to)
        cJSON_AddStringToObject(j, "to", to);
    else
        cJSON_AddStringToObject(j, "to", "now");
    cJSON_AddItemToObject(j, "added", added);
    cJSON_AddItemToObject(j, "removed", removed);
    cJSON_AddItemToObject(j, "changed", changed);
    added = removed = changed = NULL;
    cJSON_AddBoolToObject(j, "truncated", truncated);
    if (!*text) {
        errinfo_set(err, ERR_NOMEM, "diff: out of memory");
        goto out;
    }
    *json = j;
    j = NULL;
    rc = 0;
out:
    pthread_mutex_unlock(&c->lock);
    cp_tree_free(&ft);
    cp_tree_free(&tt);
    cJSON_Delete(j);
    cJSON_Delete(added);
    cJSON_Delete(removed);
    cJSON_Delete(changed);
    free(o.buf);
    return rc;
}
