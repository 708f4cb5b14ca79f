/* daemon/resources.c - MCP resources over the console, the process registry and the
 * workspace (see resources.h).
 *
 * A page of resources/list is one bounded walk of the workspace (vfs_walk_files) from the
 * cursor's path, so the cost of a page does not grow with the files before it. The cursor is
 * the hex of "f:" and the last path given: opaque to clients, checked when it comes back. */
#include "resources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "console.h"
#include "proc.h"
#include "registry.h"
#include "tools.h"
#include "utf8.h"
#include "vfs.h"

#define SNIFF_BYTES 1024 /* bytes read to tell text from binary when the extension says nothing */

/* ---- MIME types ---- */

static const struct {
    const char *ext, *mime;
    bool binary;
} mime_table[] = {
    {"js", "text/javascript", false},
    {"mjs", "text/javascript", false},
    {"cjs", "text/javascript", false},
    {"jsx", "text/javascript", false},
    {"ts", "text/x-typescript", false},
    {"tsx", "text/x-typescript", false},
    {"mts", "text/x-typescript", false},
    {"json", "application/json", false},
    {"html", "text/html", false},
    {"htm", "text/html", false},
    {"css", "text/css", false},
    {"md", "text/markdown", false},
    {"py", "text/x-python", false},
    {"lua", "text/x-lua", false},
    {"luau", "text/x-luau", false},
    {"txt", "text/plain", false},
    {"csv", "text/csv", false},
    {"xml", "application/xml", false},
    {"yaml", "application/yaml", false},
    {"yml", "application/yaml", false},
    {"toml", "application/toml", false},
    {"svg", "image/svg+xml", false},
    {"sh", "application/x-sh", false},
    {"c", "text/x-c", false},
    {"h", "text/x-c", false},
    {"cpp", "text/x-c++", false},
    {"rs", "text/x-rust", false},
    {"go", "text/x-go", false},
    {"java", "text/x-java", false},
    {"rb", "text/x-ruby", false},
    {"sql", "application/sql", false},
    {"png", "image/png", true},
    {"jpg", "image/jpeg", true},
    {"jpeg", "image/jpeg", true},
    {"gif", "image/gif", true},
    {"webp", "image/webp", true},
    {"ico", "image/x-icon", true},
    {"bmp", "image/bmp", true},
    {"wasm", "application/wasm", true},
    {"pdf", "application/pdf", true},
    {"zip", "application/zip", true},
    {"gz", "application/gzip", true},
    {"tar", "application/x-tar", true},
    {"mp3", "audio/mpeg", true},
    {"wav", "audio/wav", true},
    {"mp4", "video/mp4", true},
    {"woff", "font/woff", true},
    {"woff2", "font/woff2", true},
    {"ttf", "font/ttf", true},
    {"rbxm", "application/octet-stream", true},
    {"rbxl", "application/octet-stream", true},
};

const char *resources_mime_for_name(const char *name, bool *binary)
{
    const char *slash = strrchr(name, '/'), *dot;

    name = slash ? slash + 1 : name;
    dot = strrchr(name, '.');
    if (binary)
        *binary = false;
    if (!dot || dot == name) /* no extension, or a dot file such as ".env" */
        return NULL;
    for (size_t i = 0; i < sizeof(mime_table) / sizeof(mime_table[0]); i++) {
        if (strcasecmp(dot + 1, mime_table[i].ext) == 0) {
            if (binary)
                *binary = mime_table[i].binary;
            return mime_table[i].mime;
        }
    }
    return NULL;
}

bool resources_is_text(const char *data, size_t len, bool cut)
{
    size_t ok = utf8_valid_prefix(data, len);

    if (ok < len && !(cut && len - ok < 4 && utf8_cut(data, len) == ok))
        return false;
    return memchr(data, '\0', len) == NULL;
}

/* The type of a file whose extension says nothing: text/plain when its first bytes are text. */
static const char *sniff_mime(struct vfs *v, const char *path)
{
    struct vfs_data d = {0};
    const char *mime = "application/octet-stream";

    if (vfs_read(v, path, 0, SNIFF_BYTES, &d, NULL) == 0 &&
        resources_is_text(d.data, d.len, d.truncated))
        mime = "text/plain";
    vfs_data_cleanup(&d);
    return mime;
}

/* ---- URIs and cursors ---- */

static bool uri_char_ok(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("-._~/!$&'()*+,;=:@", c));
}

char *resources_file_uri(const char *vpath)
{
    static const char hex[] = "0123456789ABCDEF";
    char path[VFS_PATH_MAX + 1];
    size_t n = vfs_unescape(vpath, strlen(vpath), path, sizeof(path), NULL);
    char *out, *o;

    /* A URI holds the name's bytes, %-encoded: the VFS path's escapes are undone first. */
    if (n == VFS_ESCAPE_NOROOM)
        return NULL;
    out = malloc(7 + 3 * n + 1);
    if (!out)
        return NULL;
    memcpy(out, "file://", 7);
    o = out + 7;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)path[i];

        if (uri_char_ok(c)) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = '\0';
    return out;
}

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

int resources_uri_path(const char *uri, char *path, size_t size, struct errinfo *err)
{
    char raw[VFS_PATH_MAX + 1];
    const char *s;
    size_t o = 0;

    if (strncmp(uri, "file:///", 8) != 0) {
        errinfo_set(err, ERR_INVALID,
                    "unknown resource URI %.200s: resources are " RESOURCES_URI_CONSOLE
                    ", " RESOURCES_URI_PROCESSES " and file:///<path> (resources/list lists them)",
                    uri);
        return -1;
    }
    for (s = uri + 7; *s; s++) {
        int c = (unsigned char)*s;

        if (c == '%') {
            int hi = hexval(s[1]), lo = hi < 0 ? -1 : hexval(s[2]);

            if (lo < 0 || (hi == 0 && lo == 0)) {
                errinfo_set(err, ERR_INVALID, "resource URI %.200s has a bad %%-escape", uri);
                return -1;
            }
            c = hi * 16 + lo;
            s += 2;
        } else if (c == '?' || c == '#') {
            break; /* a query or fragment names nothing in a file */
        }
        if (o + 1 >= sizeof(raw)) {
            errinfo_set(err, ERR_INVALID, "resource URI %.100s...: the path is too long", uri);
            return -1;
        }
        raw[o++] = (char)c;
    }
    /* The bytes as a VFS path: escaped where they are not UTF-8 text (vfs.h, Names). */
    if (vfs_escape(raw, o, path, size) == VFS_ESCAPE_NOROOM) {
        errinfo_set(err, ERR_INVALID, "resource URI %.100s...: the path is too long", uri);
        return -1;
    }
    return 0;
}

char *resources_cursor_encode(const char *after)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = strlen(after);
    char *out = malloc(4 + 2 * n + 1);

    if (!out)
        return NULL;
    memcpy(out, "6633", 4); /* "f:" */
    for (size_t i = 0; i < n; i++) {
        out[4 + 2 * i] = hex[(unsigned char)after[i] >> 4];
        out[5 + 2 * i] = hex[(unsigned char)after[i] & 15];
    }
    out[4 + 2 * n] = '\0';
    return out;
}

int resources_cursor_decode(const char *cursor, char *after, size_t size, struct errinfo *err)
{
    size_t n = strlen(cursor), o = 0;

    if (n < 6 || n % 2 || strncmp(cursor, "66332f", 6) != 0 || (n - 4) / 2 >= size)
        goto bad;
    for (size_t i = 4; i < n; i += 2) {
        int hi = hexval(cursor[i]), lo = hexval(cursor[i + 1]);

        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
            goto bad;
        after[o++] = (char)(hi * 16 + lo);
    }
    after[o] = '\0';
    return 0;
bad:
    errinfo_set(err, ERR_INVALID,
                "invalid cursor: pass the nextCursor of the previous resources/list answer "
                "unchanged, or no cursor for the first page");
    return -1;
}

/* ---- resources/list ---- */

struct page {
    struct vfs *v;
    cJSON *arr;
    char last[VFS_PATH_MAX + 1];
    bool failed;
};

static cJSON *describe(const char *uri, const char *name, const char *desc, const char *mime)
{
    cJSON *o = cJSON_CreateObject();

    if (!cJSON_AddStringToObject(o, "uri", uri) || !cJSON_AddStringToObject(o, "name", name) ||
        (desc && !cJSON_AddStringToObject(o, "description", desc)) ||
        !cJSON_AddStringToObject(o, "mimeType", mime)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int add_file(void *ctx, const char *path, const struct vfs_stat *st)
{
    struct page *pg = ctx;
    const char *mime = resources_mime_for_name(path, NULL);
    char *uri = resources_file_uri(path);
    cJSON *o =
        uri ? describe(uri, strrchr(path, '/') + 1, NULL, mime ? mime : sniff_mime(pg->v, path))
            : NULL;

    free(uri);
    if (!o || !cJSON_AddNumberToObject(o, "size", (double)st->size) ||
        !cJSON_AddItemToArray(pg->arr, o)) {
        cJSON_Delete(o);
        pg->failed = true;
        return 1;
    }
    snprintf(pg->last, sizeof(pg->last), "%s", path);
    return 0;
}

static int add_builtin(cJSON *arr)
{
    cJSON *a = describe(RESOURCES_URI_CONSOLE, "Console logs",
                        "All console entries from the sandbox", "application/json");
    cJSON *b =
        describe(RESOURCES_URI_PROCESSES, "Process list",
                 "The processes started with exec: running, exited and killed", "application/json");

    if (!a || !b || !cJSON_AddItemToArray(arr, a)) {
        cJSON_Delete(a);
        cJSON_Delete(b);
        return -1;
    }
    if (!cJSON_AddItemToArray(arr, b)) {
        cJSON_Delete(b);
        return -1;
    }
    return 0;
}

int resources_list(const struct tools_ctx *ctx, const char *cursor, cJSON **out,
                   struct errinfo *err)
{
    struct page pg = {.v = ctx->vfs};
    char after[VFS_PATH_MAX + 1] = "";
    cJSON *res = cJSON_CreateObject();
    char *next = NULL;
    size_t room = RESOURCES_PAGE_SIZE;
    bool more = false;

    *out = NULL;
    if (cursor && *cursor && resources_cursor_decode(cursor, after, sizeof(after), err) < 0)
        goto fail;
    pg.arr = cJSON_AddArrayToObject(res, "resources");
    if (!pg.arr || (!after[0] && add_builtin(pg.arr) < 0))
        goto nomem;
    /* The external servers' resources come with the first page (each server's list is
     * bounded: MCPCLIENT_LIST_MAX). */
    if (!after[0] && ctx->registry)
        registry_list_resources(ctx->registry, pg.arr);
    if (!after[0])
        room -= 2;
    if (ctx->vfs && vfs_walk_files(ctx->vfs, after, room, add_file, &pg, &more, err) < 0)
        goto fail;
    if (pg.failed)
        goto nomem;
    if (more) {
        next = resources_cursor_encode(pg.last);
        if (!next || !cJSON_AddStringToObject(res, "nextCursor", next))
            goto nomem;
    }
    free(next);
    *out = res;
    return 0;
nomem:
    errinfo_set(err, ERR_NOMEM, "resources/list: out of memory");
fail:
    free(next);
    cJSON_Delete(res);
    return -1;
}

/* ---- resources/read ---- */

/* {"contents":[{"uri","mimeType", key: value}]}; takes ownership of value. */
static cJSON *contents(const char *uri, const char *mime, const char *key, cJSON *value)
{
    cJSON *res = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(res, "contents");
    cJSON *o = cJSON_CreateObject();

    if (!arr || !o || !cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        goto fail;
    }
    if (!cJSON_AddStringToObject(o, "uri", uri) || !cJSON_AddStringToObject(o, "mimeType", mime) ||
        !value || !cJSON_AddItemToObject(o, key, value))
        goto fail;
    return res;
fail:
    cJSON_Delete(value);
    cJSON_Delete(res);
    return NULL;
}

/* A JSON document as the text of a resource; takes ownership of doc. */
static cJSON *json_contents(const char *uri, cJSON *doc)
{
    char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;
    cJSON *res = text ? contents(uri, "application/json", "text", cJSON_CreateString(text)) : NULL;

    cJSON_free(text);
    cJSON_Delete(doc);
    return res;
}

static cJSON *process_doc(const struct tools_ctx *ctx)
{
    cJSON *list = ctx->proc ? proc_list_json(ctx->proc) : NULL;
    cJSON *doc;

    if (cJSON_IsObject(list))
        return list;
    doc = cJSON_CreateObject();
    if (!list)
        list = cJSON_CreateArray();
    if (!doc || !list || !cJSON_AddItemToObject(doc, "processes", list)) {
        cJSON_Delete(list);
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}

static cJSON *read_file_contents(struct vfs *v, const char *uri, const char *path,
                                 struct errinfo *err)
{
    struct vfs_data d = {0};
    struct errinfo rerr = {0};
    bool binary = false;
    const char *mime;
    cJSON *res = NULL;
    char *b64 = NULL;

    if (vfs_read(v, path, 0, RESOURCES_READ_MAX, &d, &rerr) < 0) {
        errinfo_set(err, rerr.kind, "resource %.200s: %s", uri, rerr.msg);
        goto out;
    }
    if (d.truncated) {
        errinfo_set(err, ERR_INVALID,
                    "%.200s is %llu bytes, over the %u-byte limit of resources/read; read it in "
                    "parts with the read_file tool (offset, length)",
                    uri, (unsigned long long)d.file_size, RESOURCES_READ_MAX);
        goto out;
    }
    mime = resources_mime_for_name(path, &binary);
    if (!binary && resources_is_text(d.data, d.len, false)) {
        res = contents(uri, mime ? mime : "text/plain", "text", cJSON_CreateString(d.data));
    } else {
        b64 = tools_base64_encode(d.data, d.len, NULL);
        res = b64 ? contents(uri, mime ? mime : "application/octet-stream", "blob",
                             cJSON_CreateString(b64))
                  : NULL;
    }
    if (!res)
        errinfo_set(err, ERR_NOMEM, "resources/read: out of memory for %.200s", uri);
out:
    free(b64);
    vfs_data_cleanup(&d);
    return res;
}

int resources_read(const struct tools_ctx *ctx, const char *uri, cJSON **out, struct errinfo *err)
{
    char path[VFS_PATH_MAX + 1];

    *out = NULL;
    if (ctx->registry) {
        int rc = registry_read_resource(ctx->registry, uri, out, err);

        if (rc != 0)
            return rc < 0 ? -1 : 0;
    }
    if (strcmp(uri, RESOURCES_URI_CONSOLE) == 0) {
        struct console_query q = {.level = -1, .source = -1, .limit = (size_t)-1};

        if (!ctx->console) {
            errinfo_set(err, ERR_UNAVAILABLE, "the console is not running in this daemon");
            return -1;
        }
        *out = json_contents(uri, console_query_json(ctx->console, &q));
    } else if (strcmp(uri, RESOURCES_URI_PROCESSES) == 0) {
        *out = json_contents(uri, process_doc(ctx));
    } else {
        if (resources_uri_path(uri, path, sizeof(path), err) < 0)
            return -1;
        if (!ctx->vfs) {
            errinfo_set(err, ERR_UNAVAILABLE, "the workspace is not open in this daemon");
            return -1;
        }
        /* file:///workspace/x is /x, as for the file tools (what exec's commands see). */
        *out = read_file_contents(ctx->vfs, uri, tools_workspace_alias(path), err);
        return *out ? 0 : -1;
    }
    if (!*out) {
        errinfo_set(err, ERR_NOMEM, "resources/read: out of memory for %.200s", uri);
        return -1;
    }
    return 0;
}
