/* common/jsonrpc.c - JSON-RPC 2.0 framing (see jsonrpc.h).
 *
 * Parsing is two passes over the text: a byte scan that measures nesting and finds \u0000
 * escapes and raw control bytes in strings, then cJSON. The scan comes first so that a hostile
 * message (a 50 MB line of '[') is refused before cJSON recurses into it, and so that a string
 * cJSON would silently cut at a NUL ("/a.txt\u0000.png" becoming "/a.txt") is refused instead
 * of reaching a tool. JSON forbids raw control bytes in strings anyway; cJSON does not check.
 *
 * Building wraps the caller's value in a small object whose "jsonrpc", "id" and "message"
 * members borrow the caller's strings (cJSON string references), prints it once and deletes
 * the wrapper: one print, no copy of the (possibly large) result tree. */
#include "jsonrpc.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Integers beyond 2^53 cannot be held exactly by cJSON's double, so such ids could not be
 * echoed back verbatim; they are treated like any other unusable id. */
#define JSONRPC_MAX_SAFE_INT 9007199254740991.0

#define STR_(x) #x
#define STR(x)  STR_(x)
#define LONG_ID_WHY                                                                                \
    "id is longer than " STR(JSONRPC_MAX_ID_BYTES) " bytes; use a number or a short string"

/* Without libm's floor: below 2^52 a round trip through long long is exact. */
bool jsonrpc_is_whole(double d)
{
    if (!isfinite(d))
        return false;
    return fabs(d) >= 4503599627370496.0 || d == (double)(long long)d;
}

const char *jsonrpc_type_name(const cJSON *v)
{
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsBool(v))
        return "boolean";
    if (cJSON_IsObject(v))
        return "object";
    if (cJSON_IsArray(v))
        return "array";
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsNumber(v))
        return jsonrpc_is_whole(v->valuedouble) ? "integer" : "number";
    return "nothing";
}

struct scan_state {
    int max_depth;
    size_t nul_at;  /* offset of the first \u0000 escape, or SIZE_MAX */
    size_t ctrl_at; /* offset of the first raw control character inside a string, or SIZE_MAX */
    bool unclosed;  /* the text ends inside a string, an array or an object */
    size_t open_string_at; /* where the unterminated string at the end starts, or SIZE_MAX */
};

/* One pass over the text, tracking whether we are inside a string so that brackets and
 * escapes are only counted where they mean something. */
static void scan(const char *text, size_t len, struct scan_state *st)
{
    int depth = 0;
    bool in_string = false;
    size_t string_at = 0;

    st->max_depth = 0;
    st->nul_at = SIZE_MAX;
    st->ctrl_at = SIZE_MAX;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];

        if (in_string) {
            if ((unsigned char)c < 0x20) {
                /* JSON forbids these unescaped; cJSON lets them through, and a raw NUL
                 * would cut the string just like \u0000. */
                if (st->ctrl_at == SIZE_MAX)
                    st->ctrl_at = i;
            } else if (c == '"') {
                in_string = false;
            } else if (c == '\\' && i + 1 < len) {
                /* The escaped character is consumed here, so "\\u0000" (an escaped backslash
                 * followed by the letters u0000) is not taken for a NUL escape. */
                i++;
                if (text[i] == 'u' && st->nul_at == SIZE_MAX && len - i > 4 &&
                    memcmp(text + i + 1, "0000", 4) == 0)
                    st->nul_at = i - 1;
            }
            continue;
        }
        switch (c) {
        case '"':
            in_string = true;
            string_at = i;
            break;
        case '[':
        case '{':
            depth++;
            if (depth > st->max_depth)
                st->max_depth = depth;
            break;
        case ']':
        case '}':
            if (depth > 0)
                depth--;
            break;
        default:
            break;
        }
    }
    st->unclosed = in_string || depth > 0;
    st->open_string_at = in_string ? string_at : SIZE_MAX;
}

void jsonrpc_scan(const char *text, size_t len, struct jsonrpc_scan *out)
{
    struct scan_state st;

    scan(text, len, &st);
    out->max_depth = st.max_depth;
    out->has_nul_escape = st.nul_at != SIZE_MAX;
}

static bool is_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Describes the byte where parsing stopped, for the error message. */
static void describe_at(const char *text, size_t len, size_t off, char *buf, size_t size)
{
    unsigned char c;

    if (off >= len) {
        snprintf(buf, size, "unexpected end of input");
        return;
    }
    c = (unsigned char)text[off];
    if (c >= 0x21 && c < 0x7f)
        snprintf(buf, size, "unexpected '%c'", c);
    else
        snprintf(buf, size, "unexpected byte 0x%02x", c);
}

/* Explains why cJSON failed; end is where it stopped. */
static void syntax_error(const char *text, size_t len, const struct scan_state *st, const char *end,
                         struct errinfo *err)
{
    size_t off = end ? (size_t)(end - text) : 0;
    char what[48];

    /* cJSON reports the last byte when it ran off the end of the input; an unclosed string or
     * bracket tells that case apart from a bad last byte ("[1,]"). */
    if (off + 1 >= len && (st->unclosed || is_json_space(text[len - 1])))
        off = len;
    if (st->open_string_at != SIZE_MAX && off > st->open_string_at) {
        errinfo_set(err, ERR_INVALID, "invalid JSON at byte %zu: unterminated string",
                    st->open_string_at);
        return;
    }
    describe_at(text, len, off, what, sizeof(what));
    errinfo_set(err, ERR_INVALID, "invalid JSON at byte %zu: %s", off, what);
}

/* Valid JSON that cJSON would mangle: a string cut at a raw control byte or at \u0000.
 * Returns -1 with err set when the scan found one. */
static int refuse_cut_strings(const char *text, const struct scan_state *st, struct errinfo *err)
{
    if (st->ctrl_at != SIZE_MAX && st->ctrl_at < st->nul_at) {
        errinfo_set(err, ERR_INVALID,
                    "invalid JSON at byte %zu: control character 0x%02x inside a string must be "
                    "escaped",
                    st->ctrl_at, (unsigned char)text[st->ctrl_at]);
        return -1;
    }
    if (st->nul_at != SIZE_MAX) {
        errinfo_set(err, ERR_INVALID,
                    "invalid JSON at byte %zu: \\u0000 (NUL) inside a string is not supported",
                    st->nul_at);
        return -1;
    }
    return 0;
}

cJSON *jsonrpc_parse(const char *text, size_t len, struct errinfo *err)
{
    struct scan_state st;
    const char *end = NULL;
    size_t off;
    cJSON *root;

    scan(text, len, &st);
    if (st.max_depth > JSONRPC_MAX_DEPTH) {
        errinfo_set(err, ERR_TOO_LARGE, "JSON nests deeper than %d levels", JSONRPC_MAX_DEPTH);
        return NULL;
    }
    if (len == 0) {
        errinfo_set(err, ERR_INVALID, "invalid JSON at byte 0: empty input");
        return NULL;
    }
    /* require_null_terminated is off: text need not be NUL-terminated, and trailing bytes
     * are checked below against len instead. return_parse_end is per call, unlike
     * cJSON_GetErrorPtr(), which reads a global shared by every thread. */
    root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        syntax_error(text, len, &st, end, err);
        return NULL;
    }
    off = (size_t)(end - text);
    while (off < len && is_json_space(text[off]))
        off++;
    if (off < len) {
        cJSON_Delete(root);
        errinfo_set(err, ERR_INVALID, "invalid JSON at byte %zu: unexpected data after the value",
                    off);
        return NULL;
    }
    if (refuse_cut_strings(text, &st, err) != 0) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

bool jsonrpc_find_id(const char *text, size_t len, unsigned long long *id)
{
    size_t i = 0, key_at = 0;
    int depth = 0;
    bool in_string = false, want_key = false, key_is_id = false;

    while (i < len && is_json_space(text[i]))
        i++;
    if (i == len || text[i] != '{')
        return false;
    for (; i < len; i++) {
        char c = text[i];

        if (in_string) {
            if (c == '\\') {
                i++;
            } else if (c == '"') {
                in_string = false;
                /* A member name of the outermost object ends here. */
                key_is_id = key_at && i - key_at == 2 && memcmp(text + key_at, "id", 2) == 0;
                key_at = 0;
            }
            continue;
        }
        switch (c) {
        case '"':
            in_string = true;
            if (depth == 1 && want_key)
                key_at = i + 1;
            want_key = false;
            break;
        case '{':
        case '[':
            depth++;
            want_key = depth == 1;
            break;
        case '}':
        case ']':
            depth--;
            if (depth <= 0)
                return false;
            break;
        case ',':
            want_key = depth == 1;
            break;
        case ':':
            if (depth == 1 && key_is_id) {
                unsigned long long v = 0;
                size_t k = i + 1, digits = 0;

                while (k < len && is_json_space(text[k]))
                    k++;
                for (; k < len && text[k] >= '0' && text[k] <= '9' && digits < 19; k++, digits++)
                    v = v * 10 + (unsigned long long)(text[k] - '0');
                /* The number must end there: "7.5", "7e0" and a text cut after "12" of
                 * "123" are no id of ours. */
                if (digits == 0 || k == len ||
                    !(is_json_space(text[k]) || text[k] == ',' || text[k] == '}'))
                    return false;
                *id = v;
                return true;
            }
            break;
        default:
            break;
        }
        if (c != '"')
            key_is_id = key_is_id && is_json_space(c);
    }
    return false;
}

static bool is_long_id(const cJSON *id)
{
    return (cJSON_IsString(id) || cJSON_IsRaw(id)) &&
           strnlen(id->valuestring, JSONRPC_MAX_ID_BYTES + 1) > JSONRPC_MAX_ID_BYTES;
}

static bool is_usable_id(const cJSON *id)
{
    double d;

    if (cJSON_IsString(id) || cJSON_IsRaw(id)) /* raw: a string id with a NUL */
        return !is_long_id(id);
    if (!cJSON_IsNumber(id))
        return false;
    d = id->valuedouble;
    return jsonrpc_is_whole(d) && fabs(d) <= JSONRPC_MAX_SAFE_INT;
}

const cJSON *jsonrpc_usable_id(const cJSON *msg)
{
    const cJSON *id;

    if (!cJSON_IsObject(msg))
        return NULL;
    id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    return is_usable_id(id) ? id : NULL;
}

/* A response: exactly one of result and error, a well-formed error, and an id (null is
 * allowed only for errors, which is how a peer answers a message it could not read). */
static enum jsonrpc_kind classify_response(const cJSON *msg, const cJSON *result,
                                           const cJSON *error, const char **why)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const cJSON *code, *message;

    if (result && error) {
        *why = "a response has \"result\" or \"error\", not both";
        return JSONRPC_KIND_INVALID;
    }
    if (error) {
        code = cJSON_GetObjectItemCaseSensitive(error, "code");
        message = cJSON_GetObjectItemCaseSensitive(error, "message");
        if (!cJSON_IsObject(error) || !cJSON_IsNumber(code) ||
            !jsonrpc_is_whole(code->valuedouble) || !cJSON_IsString(message)) {
            *why = "\"error\" must be an object with an integer \"code\" and a string \"message\"";
            return JSONRPC_KIND_INVALID;
        }
        if (cJSON_IsNull(id))
            return JSONRPC_KIND_RESPONSE;
    }
    if (!id) {
        *why = "a response needs an \"id\"";
        return JSONRPC_KIND_INVALID;
    }
    if (!is_usable_id(id)) {
        *why = is_long_id(id) ? LONG_ID_WHY : "id must be a string or an integer";
        return JSONRPC_KIND_INVALID;
    }
    return JSONRPC_KIND_RESPONSE;
}

static enum jsonrpc_kind classify_object(const cJSON *msg, const char **why)
{
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    const cJSON *params, *id, *result, *error;

    if (!cJSON_IsString(version) || strcmp(version->valuestring, "2.0") != 0) {
        *why = "\"jsonrpc\" must be \"2.0\"";
        return JSONRPC_KIND_INVALID;
    }
    if (!method) {
        result = cJSON_GetObjectItemCaseSensitive(msg, "result");
        error = cJSON_GetObjectItemCaseSensitive(msg, "error");
        if (result || error)
            return classify_response(msg, result, error, why);
        *why = "a message needs \"method\" (a request) or \"result\"/\"error\" (a response)";
        return JSONRPC_KIND_INVALID;
    }
    if (!cJSON_IsString(method)) {
        *why = "\"method\" must be a string";
        return JSONRPC_KIND_INVALID;
    }
    params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    if (params && !cJSON_IsObject(params) && !cJSON_IsArray(params)) {
        *why = "\"params\" must be an object or an array";
        return JSONRPC_KIND_INVALID;
    }
    id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    if (!id)
        return JSONRPC_KIND_NOTIFICATION;
    if (!is_usable_id(id)) {
        *why = is_long_id(id) ? LONG_ID_WHY : "id must be a string or an integer";
        return JSONRPC_KIND_INVALID;
    }
    return JSONRPC_KIND_REQUEST;
}

enum jsonrpc_kind jsonrpc_classify(const cJSON *msg, const char **why)
{
    const char *dummy;

    if (!why)
        why = &dummy;
    if (cJSON_IsArray(msg)) {
        /* JSON-RPC answers an empty array with one -32600 error, like any invalid message. */
        if (!msg->child) {
            *why = "an empty batch is not a valid request";
            return JSONRPC_KIND_INVALID;
        }
        return JSONRPC_KIND_BATCH;
    }
    if (!cJSON_IsObject(msg)) {
        *why = "a message must be a JSON object";
        return JSONRPC_KIND_INVALID;
    }
    return classify_object(msg, why);
}

/* ---- building ---- */

/* The id as a member of the wrapper: strings are borrowed (printed before the wrapper dies),
 * numbers are printed exactly ("%.0f" for whole numbers, which cJSON would print as 1e+15). */
static cJSON *id_item(const cJSON *id)
{
    char num[64];
    double d;

    if (cJSON_IsString(id))
        return cJSON_CreateStringReference(id->valuestring);
    if (cJSON_IsRaw(id)) /* a string id with a NUL, as jsonrpc_keep_nul_ids() kept it */
        return cJSON_CreateRaw(id->valuestring);
    if (!cJSON_IsNumber(id) || !isfinite(id->valuedouble))
        return cJSON_CreateNull();
    d = id->valuedouble;
    if (jsonrpc_is_whole(d) && fabs(d) < 1e17)
        snprintf(num, sizeof(num), "%.0f", d);
    else
        snprintf(num, sizeof(num), "%.17g", d);
    return cJSON_CreateRaw(num);
}

/* Adds item to obj under the constant key; on failure deletes item. Returns false then. */
static bool add_owned(cJSON *obj, const char *key, cJSON *item)
{
    if (!item)
        return false;
    if (!cJSON_AddItemToObjectCS(obj, key, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

/* Starts {"jsonrpc":"2.0"[,"id":id]}; NULL on allocation failure. */
static cJSON *envelope(const cJSON *id, bool with_id)
{
    cJSON *obj = cJSON_CreateObject();

    if (!obj)
        return NULL;
    if (!add_owned(obj, "jsonrpc", cJSON_CreateStringReference("2.0")) ||
        (with_id && !add_owned(obj, "id", id_item(id)))) {
        cJSON_Delete(obj);
        return NULL;
    }
    return obj;
}

/* Prints and frees the wrapper. The result comes from cJSON's default allocator (malloc), so
 * callers free it with free(). */
static char *finish(cJSON *obj)
{
    char *out = cJSON_PrintUnformatted(obj);

    cJSON_Delete(obj);
    return out;
}

char *jsonrpc_build_result(const cJSON *id, cJSON *result)
{
    cJSON *obj = envelope(id, true);

    if (!result)
        result = cJSON_CreateObject();
    if (!obj) {
        cJSON_Delete(result);
        return NULL;
    }
    if (!add_owned(obj, "result", result)) {
        cJSON_Delete(obj);
        return NULL;
    }
    return finish(obj);
}

char *jsonrpc_build_error(const cJSON *id, int code, const char *message, cJSON *data)
{
    cJSON *obj = envelope(id, true);
    cJSON *error;
    bool ok;

    if (!obj)
        goto fail;
    error = cJSON_CreateObject();
    if (!add_owned(obj, "error", error) || !add_owned(error, "code", cJSON_CreateNumber(code)) ||
        !add_owned(error, "message", cJSON_CreateStringReference(message ? message : "")))
        goto fail;
    if (data) {
        ok = add_owned(error, "data", data);
        data = NULL; /* attached, or deleted by add_owned */
        if (!ok)
            goto fail;
    }
    return finish(obj);
fail:
    cJSON_Delete(obj);
    cJSON_Delete(data);
    return NULL;
}

char *jsonrpc_build_notification(const char *method, cJSON *params)
{
    cJSON *obj = envelope(NULL, false);

    if (!obj || !add_owned(obj, "method", cJSON_CreateStringReference(method ? method : ""))) {
        cJSON_Delete(obj);
        cJSON_Delete(params);
        return NULL;
    }
    if (params && !add_owned(obj, "params", params)) {
        cJSON_Delete(obj);
        return NULL;
    }
    return finish(obj);
}
