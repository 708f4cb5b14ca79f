/* common/jsonrpc_nul.c - JSON text that holds U+0000 (see jsonrpc.h): request ids kept exact,
 * and NULs in what a server or runboxd answers turned into U+FFFD.
 *
 * cJSON keeps strings NUL-terminated, so "a\u0000b" parses as "a", and an answer would carry an
 * id the client never sent. For a message the scan flagged (jsonrpc_scan's has_nul_escape) we
 * read each id again from the text and, where cJSON cut it, put in its place a raw item holding
 * the id's exact JSON text in one canonical spelling. The text was already accepted by cJSON,
 * so the walk below can take its syntax as valid; it still never reads past len. */
#include "jsonrpc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonbuf.h"

static size_t skip_ws(const char *t, size_t len, size_t i)
{
    while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || t[i] == '\n'))
        i++;
    return i;
}

/* t[i] is the opening quote; returns the index just past the closing one. */
static size_t skip_string(const char *t, size_t len, size_t i)
{
    for (i++; i < len; i++) {
        if (t[i] == '\\')
            i++;
        else if (t[i] == '"')
            return i + 1;
    }
    return len;
}

/* Returns the index just past the value that starts at t[i]. */
static size_t skip_value(const char *t, size_t len, size_t i)
{
    int depth = 0;

    if (i < len && t[i] == '"')
        return skip_string(t, len, i);
    for (; i < len; i++) {
        char c = t[i];

        if (c == '"') {
            i = skip_string(t, len, i) - 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth <= 0)
                return depth == 0 ? i + 1 : i;
        } else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
            return i;
        }
    }
    return len;
}

static int hex4(const char *p)
{
    int v = 0;

    for (int k = 0; k < 4; k++) {
        char c = p[k];

        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the JSON string t[i..end) (quotes included) into an owned buffer of *n bytes, NULs
 * kept. A lone surrogate becomes U+FFFD, as cJSON would refuse it anyway. NULL when out of
 * memory. */
static char *decode_string(const char *t, size_t i, size_t end, size_t *n)
{
    char *out = malloc(end - i + 1); /* the decoded form is never longer than the text */
    size_t o = 0;

    if (!out)
        return NULL;
    for (i++; i + 1 < end; i++) {
        int cp;

        if (t[i] != '\\') {
            out[o++] = t[i];
            continue;
        }
        i++;
        switch (t[i]) {
        case 'b':
            out[o++] = '\b';
            break;
        case 'f':
            out[o++] = '\f';
            break;
        case 'n':
            out[o++] = '\n';
            break;
        case 'r':
            out[o++] = '\r';
            break;
        case 't':
            out[o++] = '\t';
            break;
        case 'u':
            cp = i + 4 < end ? hex4(t + i + 1) : -1;
            i += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 < end && t[i + 1] == '\\' &&
                t[i + 2] == 'u') {
                int lo = hex4(t + i + 3);

                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            if (cp < 0 || (cp >= 0xD800 && cp <= 0xDFFF))
                cp = 0xFFFD;
            o += put_utf8(out + o, (uint32_t)cp);
            break;
        default:
            out[o++] = t[i];
            break; /* \" \\ \/ */
        }
    }
    *n = o;
    return out;
}

/* The value of member `key` of the object at t[i] == '{' (the first one of that name, as
 * cJSON_GetObjectItem finds): its start in *vs. False when there is none. */
static bool find_member(const char *t, size_t len, size_t i, const char *key, size_t *vs)
{
    size_t klen = strlen(key);

    for (i = skip_ws(t, len, i + 1); i < len && t[i] == '"';) {
        size_t kend = skip_string(t, len, i), n = 0;
        char *k = decode_string(t, i, kend, &n);
        bool match = k && n == klen && memcmp(k, key, klen) == 0;

        free(k);
        i = skip_ws(t, len, kend);
        if (i >= len || t[i] != ':')
            return false;
        i = skip_ws(t, len, i + 1);
        if (match) {
            *vs = i;
            return true;
        }
        i = skip_ws(t, len, skip_value(t, len, i));
        if (i >= len || t[i] != ',')
            return false;
        i = skip_ws(t, len, i + 1);
    }
    return false;
}

/* The \u0000 escapes of the JSON string t[i..end). */
static size_t count_nul(const char *t, size_t i, size_t end)
{
    size_t n = 0;

    for (i++; i + 1 < end; i++) {
        if (t[i] != '\\')
            continue;
        i++;
        if (t[i] == 'u' && i + 4 < end && memcmp(t + i + 1, "0000", 4) == 0)
            n++;
    }
    return n;
}

/* Every \u0000 escape in the text's strings. */
static size_t count_all_nul(const char *t, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        if (t[i] == '"') {
            size_t end = skip_string(t, len, i);

            n += count_nul(t, i, end);
            i = end - 1;
        }
    }
    return n;
}

/* holder.key, a string in the object at t[obj] == '{', gets its exact text back when cJSON cut
 * it at a NUL; *kept counts the NULs it now holds. */
static int restore(cJSON *holder, const char *key, const char *t, size_t len, size_t obj,
                   size_t *kept)
{
    cJSON *item = cJSON_GetObjectItemCaseSensitive(holder, key), *raw;
    struct jsonbuf b = JSONBUF_INIT(len * 6 + 16);
    size_t vs, n = 0;
    char *bytes, *text;

    if (!cJSON_IsString(item) || !find_member(t, len, obj, key, &vs) || vs >= len || t[vs] != '"')
        return 0;
    bytes = decode_string(t, vs, skip_string(t, len, vs), &n);
    if (!bytes)
        return -1;
    *kept += count_nul(t, vs, skip_string(t, len, vs));
    if (n == strlen(item->valuestring)) {
        free(bytes);
        return 0; /* nothing was cut */
    }
    jsonbuf_put_json_string(&b, bytes, n, NULL);
    free(bytes);
    text = jsonbuf_take(&b, NULL);
    jsonbuf_cleanup(&b);
    raw = text ? cJSON_CreateRaw(text) : NULL;
    free(text);
    if (!raw || !cJSON_ReplaceItemInObjectCaseSensitive(holder, key, raw)) {
        cJSON_Delete(raw);
        return -1;
    }
    return 0;
}

/* One message object at t[obj]: its "id", and the "requestId" of its params (cancellation). */
static int restore_message(cJSON *msg, const char *t, size_t len, size_t obj, size_t *kept)
{
    cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    size_t ps;

    if (restore(msg, "id", t, len, obj, kept) < 0)
        return -1;
    if (cJSON_IsObject(params) && find_member(t, len, obj, "params", &ps) && ps < len &&
        t[ps] == '{')
        return restore(params, "requestId", t, len, ps, kept);
    return 0;
}

static int restore_all(cJSON *msg, const char *text, size_t len, size_t *kept)
{
    size_t i = skip_ws(text, len, 0);
    cJSON *el;

    if (cJSON_IsObject(msg))
        return i < len && text[i] == '{' ? restore_message(msg, text, len, i, kept) : 0;
    if (!cJSON_IsArray(msg) || i >= len || text[i] != '[')
        return 0;
    i = skip_ws(text, len, i + 1);
    cJSON_ArrayForEach(el, msg)
    {
        if (i >= len)
            break;
        if (cJSON_IsObject(el) && text[i] == '{' && restore_message(el, text, len, i, kept) < 0)
            return -1;
        i = skip_ws(text, len, skip_value(text, len, i));
        if (i < len && text[i] == ',')
            i = skip_ws(text, len, i + 1);
    }
    return 0;
}

int jsonrpc_keep_nul_ids(cJSON *msg, const char *text, size_t len, bool *nul_elsewhere)
{
    size_t kept = 0;
    int rc = restore_all(msg, text, len, &kept);

    *nul_elsewhere = rc < 0 || count_all_nul(text, len) > kept;
    return rc;
}

/* Escapes count only inside strings, as in jsonrpc.c's scan(). */
size_t jsonrpc_nul_escapes_to_replacement(char *text, size_t len)
{
    bool in_string = false;
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        if (!in_string) {
            in_string = text[i] == '"';
        } else if (text[i] == '"') {
            in_string = false;
        } else if (text[i] == '\\' && i + 1 < len) {
            i++;
            if (text[i] == 'u' && len - i > 4 && memcmp(text + i + 1, "0000", 4) == 0) {
                memcpy(text + i + 1, "fffd", 4);
                n++;
            }
        }
    }
    return n;
}

int jsonrpc_without_nul(const char *text, size_t len, char **copy)
{
    *copy = NULL;
    if (!text || !memmem(text, len, "\\u0000", 6))
        return 0;
    *copy = malloc(len ? len : 1);
    if (!*copy)
        return -1;
    memcpy(*copy, text, len);
    jsonrpc_nul_escapes_to_replacement(*copy, len);
    return 0;
}

cJSON *jsonrpc_parse_peer(const char *text, size_t len, struct errinfo *err)
{
    char *copy;
    cJSON *root;

    if (jsonrpc_without_nul(text, len, &copy) < 0) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return NULL;
    }
    root = jsonrpc_parse(copy ? copy : text, len, err);
    free(copy);
    return root;
}
