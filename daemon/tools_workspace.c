/* daemon/tools_workspace.c - the workspace tools: read_file, write_file, list_dir, remove,
 * search, as common/tools/workspace.json describes them, over the vfs.
 *
 * The vfs does the confinement and the file system work; this file shapes arguments into vfs
 * calls and vfs answers into what a model can use: text cut on UTF-8 character boundaries,
 * "[truncated: ...]" notes that say how to continue, base64 for bytes that are not text. */
#include "tools.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "call.h"
#include "log.h"
#include "quota.h"
#include "utf8.h"
#include "vfs.h"
#include "watch.h"

/* ---- arguments (already validated against the schema; these apply the defaults) ---- */

static const char *arg_str(const cJSON *args, const char *name, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

    return cJSON_IsString(v) ? v->valuestring : dflt;
}

static uint64_t arg_u64(const cJSON *args, const char *name, uint64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

    /* The schema guarantees a whole number >= 0; the cap keeps the cast defined. */
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0))
        return dflt;
    if (v->valuedouble >= 18446744073709549568.0)
        return UINT64_MAX;
    return (uint64_t)v->valuedouble;
}

static bool arg_bool(const cJSON *args, const char *name, bool dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

static bool arg_is_base64(const cJSON *args)
{
    return strcmp(arg_str(args, "encoding", "utf8"), "base64") == 0;
}

/* ---- results ---- */

static int set_text(struct tools_result *out, const char *a, size_t alen, const char *b,
                    size_t blen, struct errinfo *err)
{
    out->data = malloc(alen + blen + 1);
    if (!out->data) {
        errinfo_set(err, ERR_NOMEM, "out of memory for a %zu-byte result", alen + blen);
        return -1;
    }
    if (alen)
        memcpy(out->data, a, alen);
    if (blen)
        memcpy(out->data + alen, b, blen);
    out->data[alen + blen] = '\0';
    out->len = alen + blen;
    out->is_json = false;
    return 0;
}

/* Serializes and frees obj (NULL = it could not be built) into out. */
static int set_json(struct tools_result *out, cJSON *obj, struct errinfo *err)
{
    char *text = obj ? cJSON_PrintUnformatted(obj) : NULL;

    cJSON_Delete(obj);
    if (!text) {
        errinfo_set(err, ERR_NOMEM, "out of memory building the result");
        return -1;
    }
    out->data = text;
    out->len = strlen(text);
    out->is_json = true;
    return 0;
}

/* ---- base64 ---- */

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *tools_base64_encode(const void *data, size_t len, size_t *outlen)
{
    const unsigned char *in = data;
    size_t n = 4 * ((len + 2) / 3), o = 0, i = 0;
    char *out = malloc(n + 1);

    if (!out)
        return NULL;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64_alphabet[v >> 18];
        out[o++] = b64_alphabet[(v >> 12) & 63];
        out[o++] = b64_alphabet[(v >> 6) & 63];
        out[o++] = b64_alphabet[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = b64_alphabet[v >> 18];
        out[o++] = b64_alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? b64_alphabet[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
    if (outlen)
        *outlen = o;
    return out;
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

static int b64_fail(char *buf, struct errinfo *err, const char *what, size_t pos)
{
    free(buf);
    errinfo_set(err, ERR_INVALID, "content: %s at position %zu", what, pos);
    return -1;
}

int tools_base64_decode(const char *in, size_t len, char **out, size_t *outlen, struct errinfo *err)
{
    char *buf = malloc(len / 4 * 3 + 3);
    uint32_t acc = 0;
    size_t o = 0, nbits = 0, pad = 0, last = 0;

    if (!buf) {
        errinfo_set(err, ERR_NOMEM, "out of memory decoding %zu bytes of base64", len);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        int v = b64_value(c);

        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            last = i;
            continue;
        }
        if (v < 0 || pad)
            return b64_fail(
                buf, err, v < 0 ? "invalid base64 character" : "base64 data after the '=' padding",
                i);
        acc = acc << 6 | (uint32_t)v;
        nbits += 6;
        last = i;
        if (nbits >= 8) {
            nbits -= 8;
            buf[o++] = (char)(acc >> nbits);
            acc &= (1u << nbits) - 1;
        }
    }
    /* Left-over bits: 0 (complete), 2 (one byte in the last group) or 4 (two bytes); 6 means a
     * group of one character, which holds no byte. */
    if (nbits == 6 || pad > 2)
        return b64_fail(buf, err, "base64 ends with an incomplete group", last);
    *out = buf;
    *outlen = o;
    return 0;
}

/* ---- read_file ---- */

static int read_note(char *note, size_t size, uint64_t a, uint64_t b, uint64_t n)
{
    return snprintf(note, size,
                    "\n[truncated: showed bytes %" PRIu64 "-%" PRIu64 " of %" PRIu64
                    "; call read_file with offset=%" PRIu64 " to continue]",
                    a, b, n, b);
}

static int read_base64(const struct vfs_data *d, struct tools_result *out, struct errinfo *err)
{
    char note[200];
    int nl = 0;
    size_t blen = 0;
    char *b64 = tools_base64_encode(d->data, d->len, &blen);
    int rc;

    if (!b64) {
        errinfo_set(err, ERR_NOMEM, "out of memory encoding %zu bytes", d->len);
        return -1;
    }
    if (d->truncated)
        nl = read_note(note, sizeof(note), d->offset, d->offset + d->len, d->file_size);
    rc = set_text(out, b64, blen, note, (size_t)(nl > 0 ? nl : 0), err);
    free(b64);
    return rc;
}

/* The text of d as out's result; a whole file's buffer is handed over (d->data is then NULL)
 * instead of copied. */
static int read_text(const char *path, struct vfs_data *d, struct tools_result *out,
                     struct errinfo *err)
{
    size_t start = 0, end = d->len, bad;
    char note[200];
    int nl = 0;

    /* An offset in the middle of a character: start at the next character. */
    if (d->offset > 0)
        while (start < end && start < 3 && utf8_is_cont((unsigned char)d->data[start]))
            start++;
    /* A read cut short by length or the read cap: end before a split character. */
    if (d->truncated)
        end = start + utf8_cut(d->data + start, end - start);
    bad = start + utf8_valid_prefix(d->data + start, end - start);
    if (bad < end) {
        errinfo_set(err, ERR_INVALID,
                    "%.1024s is not UTF-8 text (%" PRIu64
                    " bytes; first bad byte at offset %" PRIu64
                    "); read it with encoding \"base64\"",
                    path, d->file_size, d->offset + bad);
        return -1;
    }
    if (start == end && d->len > 0 && d->truncated) {
        errinfo_set(err, ERR_INVALID,
                    "length is too small to hold the character at offset %" PRIu64
                    "; ask for at least 4 bytes",
                    d->offset + start);
        return -1;
    }
    if (d->offset + end < d->file_size)
        nl = read_note(note, sizeof(note), d->offset + start, d->offset + end, d->file_size);
    if (start == 0 && end == d->len && nl == 0) { /* vfs_read NUL-terminated it */
        out->data = d->data;
        d->data = NULL;
        out->len = d->len;
        out->is_json = false;
        return 0;
    }
    return set_text(out, d->data + start, end - start, note, (size_t)(nl > 0 ? nl : 0), err);
}

int tools_read_file(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                    struct tools_result *out, struct errinfo *err)
{
    const char *path = tools_workspace_alias(arg_str(args, "path", ""));
    uint64_t offset = arg_u64(args, "offset", 0);
    uint64_t length = arg_u64(args, "length", 0);
    struct vfs_data d = {0};
    int rc = -1;

    (void)call;
    if (length > SIZE_MAX)
        length = 0;
    if (vfs_read(ctx->vfs, path, offset, (size_t)length, &d, err) < 0)
        goto out;
    if (arg_is_base64(args))
        rc = read_base64(&d, out, err);
    else
        rc = read_text(path, &d, out, err);
out:
    vfs_data_cleanup(&d);
    return rc;
}

/* ---- write_file ---- */

int tools_write_file(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                     struct tools_result *out, struct errinfo *err)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(args, "content");
    const char *path = tools_workspace_alias(arg_str(args, "path", ""));
    char norm[VFS_PATH_MAX + 1];
    char *decoded = NULL;
    const char *data = cJSON_IsString(content) ? content->valuestring : "";
    size_t len = strlen(data);
    bool created = false, written;
    cJSON *res = NULL;
    int rc = -1;

    (void)call;
    if (vfs_normalize(path, norm, sizeof(norm), err) < 0)
        goto out;
    if (arg_is_base64(args)) {
        if (tools_base64_decode(data, len, &decoded, &len, err) < 0)
            goto out;
        data = decoded;
    }
    /* All of it: the old file and the new one both exist until the rename. */
    if (quota_reserve(ctx->quota, len, err) < 0)
        goto out;
    written = vfs_write(ctx->vfs, norm, data, len, &created, err) == 0;
    quota_release(ctx->quota, len, written);
    if (!written)
        goto out;
    if (created)
        watch_resources_changed(ctx->watch);
    res = cJSON_CreateObject();
    if (res && (!cJSON_AddStringToObject(res, "path", norm) ||
                !cJSON_AddNumberToObject(res, "bytes", (double)len) ||
                !cJSON_AddBoolToObject(res, "created", created))) {
        cJSON_Delete(res);
        res = NULL;
    }
    rc = set_json(out, res, err);
out:
    free(decoded);
    return rc;
}

/* ---- list_dir ---- */

static const char *type_name(enum vfs_type t)
{
    switch (t) {
    case VFS_FILE:
        return "file";
    case VFS_DIR:
        return "dir";
    case VFS_SYMLINK:
        return "symlink";
    case VFS_OTHER:
        break;
    }
    return "other";
}

/* ISO 8601 UTC with milliseconds: "2026-11-29T19:20:00.123Z". */
static void iso_time(int64_t ms, char *buf, size_t size)
{
    time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    int frac = (int)(ms - (int64_t)secs * 1000);
    struct tm tm;

    if (!gmtime_r(&secs, &tm)) {
        snprintf(buf, size, "1970-01-01T00:00:00.000Z");
        return;
    }
    if (snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac) >= (int)size)
        buf[0] = '\0'; /* cannot happen for years 0-9999 */
}

static cJSON *entry_json(const struct vfs_entry *e)
{
    cJSON *o = cJSON_CreateObject();
    char when[40];

    iso_time(e->mtime_ms, when, sizeof(when));
    if (!o || !cJSON_AddStringToObject(o, "name", e->name) ||
        !cJSON_AddStringToObject(o, "type", type_name(e->type)) ||
        !cJSON_AddNumberToObject(o, "size", (double)e->size) ||
        !cJSON_AddStringToObject(o, "mtime", when)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *listing_json(const char *path, const struct vfs_listing *l)
{
    cJSON *res = cJSON_CreateObject();
    cJSON *arr = NULL;

    if (!res || !cJSON_AddStringToObject(res, "path", path))
        goto fail;
    arr = cJSON_AddArrayToObject(res, "entries");
    if (!arr)
        goto fail;
    for (size_t i = 0; i < l->count; i++) {
        cJSON *e = entry_json(&l->entries[i]);

        if (!e)
            goto fail;
        cJSON_AddItemToArray(arr, e);
    }
    if (!cJSON_AddNumberToObject(res, "total", (double)l->total) ||
        !cJSON_AddBoolToObject(res, "truncated", l->truncated))
        goto fail;
    return res;
fail:
    cJSON_Delete(res);
    return NULL;
}

int tools_list_dir(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                   struct tools_result *out, struct errinfo *err)
{
    char norm[VFS_PATH_MAX + 1];
    struct vfs_listing l = {0};
    int rc = -1;

    (void)call;
    if (vfs_normalize(tools_workspace_alias(arg_str(args, "path", "/")), norm, sizeof(norm), err) <
        0)
        goto out;
    if (vfs_list(ctx->vfs, norm, 0, &l, err) < 0)
        goto out;
    rc = set_json(out, listing_json(norm, &l), err);
out:
    vfs_listing_cleanup(&l);
    return rc;
}

/* ---- remove ---- */

int tools_remove(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                 struct tools_result *out, struct errinfo *err)
{
    char norm[VFS_PATH_MAX + 1];
    uint64_t removed = 0;
    cJSON *res;

    (void)call;
    if (vfs_normalize(tools_workspace_alias(arg_str(args, "path", "")), norm, sizeof(norm), err) <
        0)
        return -1;
    if (vfs_remove(ctx->vfs, norm, arg_bool(args, "recursive", false), &removed, err) < 0)
        return -1;
    watch_resources_changed(ctx->watch);
    res = cJSON_CreateObject();
    if (res && (!cJSON_AddStringToObject(res, "path", norm) ||
                !cJSON_AddNumberToObject(res, "removed", (double)removed))) {
        cJSON_Delete(res);
        res = NULL;
    }
    return set_json(out, res, err);
}

/* ---- search ---- */

/* What the walk left out, as "; N directories deeper than 256 levels not searched (...)", or "". */
static void skipped_note(const struct vfs_search_result *r, char *buf, size_t size)
{
    int n = 0;

    buf[0] = '\0';
    if (r->dirs_too_deep)
        n = snprintf(buf, size,
                     "; %" PRIu64 " %s deeper than %d levels not searched (give a path inside "
                     "to search there)",
                     r->dirs_too_deep, r->dirs_too_deep == 1 ? "directory" : "directories",
                     VFS_SEARCH_DEPTH_MAX);
    if (r->too_long && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n,
                 "; %" PRIu64 " %s with a path over %d bytes left out (no tool can name them)",
                 r->too_long, r->too_long == 1 ? "entry" : "entries", VFS_PATH_MAX);
}

static int search_empty(const struct vfs_search_opts *o, const struct vfs_search_result *r,
                        struct tools_result *out, struct errinfo *err)
{
    char msg[1900], binary[64] = "", skipped[256];
    int n;

    if (r->binary_skipped)
        snprintf(binary, sizeof(binary), ", %" PRIu64 " binary skipped", r->binary_skipped);
    skipped_note(r, skipped, sizeof(skipped));
    n = snprintf(msg, sizeof(msg),
                 "no matches for \"%.1000s\" under %.200s (%" PRIu64 " %s searched%s%s)", o->query,
                 o->path, r->files_scanned, r->files_scanned == 1 ? "file" : "files", binary,
                 skipped);
    return set_text(out, msg, n > 0 ? strlen(msg) : 0, NULL, 0, err);
}

/* The search's cancel check: the call service's token. */
static bool search_cancelled(void *ctx)
{
    return call_is_cancelled(ctx);
}

int tools_search(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                 struct tools_result *out, struct errinfo *err)
{
    struct vfs_search_opts o = {.cancelled = search_cancelled, .cancel_ctx = call};
    struct vfs_search_result r = {0};
    char note[512], skipped[256];
    int nl = 0, rc = -1;
    size_t len;

    o.query = arg_str(args, "query", "");
    o.path = tools_workspace_alias(arg_str(args, "path", "/"));
    o.ext = arg_str(args, "ext", NULL);
    o.regex = arg_bool(args, "regex", false);
    o.case_sensitive = arg_bool(args, "case_sensitive", true);
    o.max_results = (size_t)arg_u64(args, "max_results", 200);
    if (vfs_search(ctx->vfs, &o, &r, err) < 0) {
        /* Nobody hears a cancelled call's answer: the log says that its work stopped. */
        if (err->kind == ERR_CANCELLED)
            log_info("search: call %s %s", call ? call_id(call) : "-", err->msg);
        goto out;
    }
    if (r.matches == 0) {
        rc = search_empty(&o, &r, out, err);
        goto out;
    }
    len = r.len;
    if (len > 0 && r.text[len - 1] == '\n')
        len--; /* the note (if any) brings its own line break */
    skipped_note(&r, skipped, sizeof(skipped));
    if (r.truncated)
        nl = snprintf(note, sizeof(note),
                      "\n[truncated: showing the first %zu matches; narrow path or raise "
                      "max_results]",
                      r.matches);
    else if (skipped[0])
        nl = snprintf(note, sizeof(note), "\n[not searched: %s]", skipped + 2);
    rc = set_text(out, r.text, len, note, (size_t)(nl > 0 ? nl : 0), err);
out:
    vfs_search_result_cleanup(&r);
    return rc;
}
