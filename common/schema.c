/* common/schema.c - the JSON Schema (2020-12 subset) validator for tool arguments (see
 * schema.h).
 *
 * Validation walks the schema and the value together. The path of the value being checked
 * ("arguments.items[2].name") lives in one fixed buffer that grows and shrinks as the walk
 * goes down and up, so a valid call allocates nothing. Every violation is counted; the first
 * SCHEMA_MAX_ERRORS are formatted. oneOf/anyOf alternatives are tried in a counting-only
 * context that keeps just its first message, so a failed match can name the closest
 * alternative's problem.
 *
 * schema_check() is the strict twin used on the catalog: it refuses unknown keywords and
 * malformed keyword values, so schema_validate() can assume a sane schema (it still never
 * crashes on a malformed one: a keyword whose value has the wrong type is ignored). */
#include "schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA_MAX_DEPTH 64                 /* schema nesting accepted by schema_check */
#define VALUE_CUT        40                 /* bytes of a string value quoted in a message */
#define MAX_SAFE_INT     9007199254740991.0 /* 2^53 - 1: the integers a double holds exactly */

/* Whole-number tests without libm (the binaries do not link it): every double of magnitude
 * 2^52 or more is whole, and below that a round trip through long long is exact. */
static double magnitude(double d)
{
    return d < 0 ? -d : d;
}

static bool is_whole(double d)
{
    if (!isfinite(d))
        return false;
    return magnitude(d) >= 4503599627370496.0 || d == (double)(long long)d;
}

enum type_bit {
    T_NULL = 1 << 0,
    T_BOOLEAN = 1 << 1,
    T_OBJECT = 1 << 2,
    T_ARRAY = 1 << 3,
    T_NUMBER = 1 << 4,
    T_STRING = 1 << 5,
    T_INTEGER = 1 << 6,
};

static const struct {
    const char *name;
    unsigned bit;
} type_names[] = {
    {"null", T_NULL},     {"boolean", T_BOOLEAN}, {"object", T_OBJECT},   {"array", T_ARRAY},
    {"number", T_NUMBER}, {"string", T_STRING},   {"integer", T_INTEGER},
};

#define N_TYPES (sizeof(type_names) / sizeof(type_names[0]))

/* ---- small text helpers ---- */

/* Cuts a trailing, incomplete UTF-8 sequence (left by snprintf truncation). */
static void trim_utf8(char *s)
{
    size_t len = strlen(s);
    size_t k = 0, need;
    unsigned char lead;

    while (k < len && k < 3 && ((unsigned char)s[len - 1 - k] & 0xC0) == 0x80)
        k++;
    if (k == len)
        return;
    lead = (unsigned char)s[len - 1 - k];
    if (lead < 0x80)
        return;
    need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (need > k + 1)
        s[len - 1 - k] = '\0';
}

/* The length of the UTF-8 sequence starting at s: 1 for ASCII and for stray bytes, else
 * the lead byte's length as far as continuation bytes follow. */
static size_t utf8_seq_len(const unsigned char *s)
{
    size_t want = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 1;
    size_t n = 1;

    while (n < want && (s[n] & 0xC0) == 0x80)
        n++;
    return n;
}

/* Appends src to dst (of size `size`, holding *len bytes) with JSON escapes, at most `max`
 * source bytes and never part of a character; returns false when src was cut. */
static bool append_escaped(char *dst, size_t size, size_t *len, const char *src, size_t max)
{
    const unsigned char *u = (const unsigned char *)src;
    size_t i = 0;

    while (u[i]) {
        size_t n = utf8_seq_len(u + i);
        char tmp[8];
        const char *out = tmp;
        size_t outlen;

        if (u[i] == '"' || u[i] == '\\')
            snprintf(tmp, sizeof(tmp), "\\%c", u[i]);
        else if (u[i] == '\n')
            snprintf(tmp, sizeof(tmp), "\\n");
        else if (u[i] == '\t')
            snprintf(tmp, sizeof(tmp), "\\t");
        else if (u[i] == '\r')
            snprintf(tmp, sizeof(tmp), "\\r");
        else if (u[i] < 0x20 || u[i] == 0x7f)
            snprintf(tmp, sizeof(tmp), "\\u%04x", u[i]);
        else
            out = src + i;
        outlen = out == tmp ? strlen(tmp) : n;
        if (i + n > max || *len + outlen + 1 > size)
            return false;
        memcpy(dst + *len, out, outlen);
        *len += outlen;
        dst[*len] = '\0';
        i += n;
    }
    return true;
}

/* A number as JSON would spell it, shortest round-trip form. */
static void format_number(double d, char *buf, size_t size)
{
    if (isnan(d))
        snprintf(buf, size, "NaN");
    else if (isinf(d)) /* 1e400 parses to infinity */
        snprintf(buf, size, "%s", d > 0 ? "Infinity" : "-Infinity");
    else if (is_whole(d) && magnitude(d) < 1e15)
        snprintf(buf, size, "%.0f", d);
    else {
        snprintf(buf, size, "%.15g", d);
        if (strtod(buf, NULL) != d)
            snprintf(buf, size, "%.17g", d);
    }
}

/* A short, one-line rendering of a value for messages: strings quoted, escaped and cut;
 * containers are only named (a 50 MB argument is never printed). */
static void describe_value(const cJSON *v, char *buf, size_t size)
{
    size_t len = 1;

    if (cJSON_IsString(v)) {
        buf[0] = '"';
        buf[1] = '\0';
        if (!append_escaped(buf, size - 4, &len, v->valuestring, VALUE_CUT)) {
            trim_utf8(buf);
            len = strlen(buf);
            memcpy(buf + len, "...", 4);
            len += 3;
        }
        snprintf(buf + len, size - len, "\"");
    } else if (cJSON_IsNumber(v)) {
        format_number(v->valuedouble, buf, size);
    } else if (cJSON_IsBool(v)) {
        snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
    } else if (cJSON_IsNull(v)) {
        snprintf(buf, size, "null");
    } else if (cJSON_IsArray(v)) {
        snprintf(buf, size, "an array");
    } else {
        snprintf(buf, size, "an object");
    }
}

/* Like describe_value, but prints small containers (schema values: enum members, const). */
static void describe_schema_value(const cJSON *v, char *buf, size_t size)
{
    char *text;

    if (!cJSON_IsArray(v) && !cJSON_IsObject(v)) {
        describe_value(v, buf, size);
        return;
    }
    text = cJSON_PrintUnformatted(v);
    if (!text) {
        describe_value(v, buf, size);
        return;
    }
    snprintf(buf, size, "%s", text);
    trim_utf8(buf);
    free(text);
}

/* A name from a schema or a value, escaped and cut for a message (without quotes). */
static const char *quoted(const char *s, char *buf, size_t size)
{
    size_t len = 0;

    buf[0] = '\0';
    if (!append_escaped(buf, size - 3, &len, s, VALUE_CUT)) {
        trim_utf8(buf);
        len = strlen(buf);
        memcpy(buf + len, "...", 4);
    }
    return buf;
}

static bool is_safe_whole(double d)
{
    return is_whole(d) && magnitude(d) <= MAX_SAFE_INT;
}

static const char *type_of(const cJSON *v)
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
        return is_safe_whole(v->valuedouble) ? "integer" : "number";
    return "nothing";
}

static unsigned type_bit_of_name(const char *name)
{
    for (size_t i = 0; i < N_TYPES; i++) {
        if (strcmp(name, type_names[i].name) == 0)
            return type_names[i].bit;
    }
    return 0;
}

/* The set of types a "type" keyword allows; 0 when the keyword is malformed (no check). */
static unsigned type_mask(const cJSON *type)
{
    unsigned mask = 0;
    const cJSON *t;

    if (cJSON_IsString(type))
        return type_bit_of_name(type->valuestring);
    if (!cJSON_IsArray(type))
        return 0;
    cJSON_ArrayForEach(t, type)
    {
        if (cJSON_IsString(t))
            mask |= type_bit_of_name(t->valuestring);
    }
    return mask;
}

/* "string or null", in the keyword's own order. */
static void type_text(const cJSON *type, char *buf, size_t size)
{
    size_t len = 0;
    const cJSON *t;

    buf[0] = '\0';
    if (cJSON_IsString(type)) {
        if (type_bit_of_name(type->valuestring))
            snprintf(buf, size, "%s", type->valuestring);
        return;
    }
    cJSON_ArrayForEach(t, type)
    {
        int n;

        /* Unknown names are skipped: they come from an unchecked schema and could hold
         * anything, newlines included. */
        if (!cJSON_IsString(t) || !type_bit_of_name(t->valuestring))
            continue;
        n = snprintf(buf + len, size - len, "%s%s", len ? " or " : "", t->valuestring);
        if (n < 0 || (size_t)n >= size - len)
            break;
        len += (size_t)n;
    }
}

/* ---- the value path ---- */

/* Longer than a message: a deep path is shown by its tail (see shown_path), so the tail
 * must be kept. 64 levels (the parser's limit) of 40-byte names fit. */
#define PATH_BUF_MAX 4096

struct path {
    char buf[PATH_BUF_MAX];
    size_t len;
};

static bool is_plain_key(const char *key)
{
    if (!*key)
        return false;
    for (; *key; key++) {
        char ch = *key;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '$'))
            return false;
    }
    return true;
}

/* Appends ".key" (or ["odd key"], escaped and cut) and returns the previous length for
 * path_pop(). A path that no longer fits is cut. */
static size_t path_push_key(struct path *p, const char *key)
{
    size_t old = p->len;
    size_t len = p->len;

    if (is_plain_key(key) && strlen(key) <= VALUE_CUT) {
        int n = snprintf(p->buf + len, sizeof(p->buf) - len, ".%s", key);
        p->len = n < 0 ? len : len + (size_t)n;
    } else if (len + 8 < sizeof(p->buf)) {
        memcpy(p->buf + len, "[\"", 3);
        len += 2;
        if (!append_escaped(p->buf, sizeof(p->buf) - 5, &len, key, VALUE_CUT)) {
            memcpy(p->buf + len, "...", 4);
            len += 3;
        }
        memcpy(p->buf + len, "\"]", 3);
        p->len = len + 2;
    }
    if (p->len >= sizeof(p->buf))
        p->len = sizeof(p->buf) - 1;
    return old;
}

static size_t path_push_index(struct path *p, size_t i)
{
    size_t old = p->len;
    int n = snprintf(p->buf + p->len, sizeof(p->buf) - p->len, "[%zu]", i);

    p->len = n < 0 ? old : p->len + (size_t)n;
    if (p->len >= sizeof(p->buf))
        p->len = sizeof(p->buf) - 1;
    return old;
}

static void path_pop(struct path *p, size_t old)
{
    p->len = old;
    p->buf[old] = '\0';
}

/* The path as shown in a message: a path too long to leave room for the rule keeps its
 * tail (the part that names the failing member), cut on a character boundary. */
#define PATH_SHOWN_MAX 160

static const char *shown_path(const struct path *p, const char **prefix)
{
    const char *s = p->buf;

    *prefix = "";
    if (p->len > PATH_SHOWN_MAX) {
        s = p->buf + p->len - (PATH_SHOWN_MAX - 3);
        while (((unsigned char)*s & 0xC0) == 0x80)
            s++;
        *prefix = "...";
    }
    return s;
}

/* ---- validation ---- */

struct vctx {
    struct schema_report *rep; /* NULL: counting only (an oneOf/anyOf alternative) */
    size_t count;
    char first[SCHEMA_MSG_MAX]; /* counting only: the first message */
    struct path *path;
    int depth;
};

/* The keywords of one schema object, gathered in one pass. */
struct keywords {
    const cJSON *type, *properties, *required, *additional, *enumv, *constv;
    const cJSON *minimum, *maximum, *exmin, *exmax, *minlen, *maxlen;
    const cJSON *items, *minitems, *maxitems, *oneof, *anyof;
};

static bool wants_message(const struct vctx *c)
{
    return c->rep ? c->count < SCHEMA_MAX_ERRORS : c->count == 0;
}

static void violation(struct vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void violation(struct vctx *c, const char *fmt, ...)
{
    const char *where, *prefix;
    char *dst;
    va_list ap;
    int n;

    if (!wants_message(c)) {
        c->count++;
        return;
    }
    dst = c->rep ? c->rep->msgs[c->count] : c->first;
    c->count++;
    where = shown_path(c->path, &prefix);
    n = snprintf(dst, SCHEMA_MSG_MAX, "%s%s: ", prefix, where);
    if (n >= 0 && n < SCHEMA_MSG_MAX) {
        va_start(ap, fmt);
        vsnprintf(dst + n, SCHEMA_MSG_MAX - (size_t)n, fmt, ap);
        va_end(ap);
    }
    trim_utf8(dst);
}

static void validate(struct vctx *c, const cJSON *schema, const cJSON *v);

static void gather(const cJSON *schema, struct keywords *kw)
{
    const cJSON *k;

    memset(kw, 0, sizeof(*kw));
    cJSON_ArrayForEach(k, schema)
    {
        const char *s = k->string;

        if (!s)
            continue;
        if (strcmp(s, "type") == 0)
            kw->type = k;
        else if (strcmp(s, "properties") == 0)
            kw->properties = k;
        else if (strcmp(s, "required") == 0)
            kw->required = k;
        else if (strcmp(s, "additionalProperties") == 0)
            kw->additional = k;
        else if (strcmp(s, "enum") == 0)
            kw->enumv = k;
        else if (strcmp(s, "const") == 0)
            kw->constv = k;
        else if (strcmp(s, "minimum") == 0)
            kw->minimum = k;
        else if (strcmp(s, "maximum") == 0)
            kw->maximum = k;
        else if (strcmp(s, "exclusiveMinimum") == 0)
            kw->exmin = k;
        else if (strcmp(s, "exclusiveMaximum") == 0)
            kw->exmax = k;
        else if (strcmp(s, "minLength") == 0)
            kw->minlen = k;
        else if (strcmp(s, "maxLength") == 0)
            kw->maxlen = k;
        else if (strcmp(s, "items") == 0)
            kw->items = k;
        else if (strcmp(s, "minItems") == 0)
            kw->minitems = k;
        else if (strcmp(s, "maxItems") == 0)
            kw->maxitems = k;
        else if (strcmp(s, "oneOf") == 0)
            kw->oneof = k;
        else if (strcmp(s, "anyOf") == 0)
            kw->anyof = k;
    }
}

/* Returns false (after reporting) when the value's type is not allowed. */
static bool check_type(struct vctx *c, const cJSON *type, const cJSON *v)
{
    unsigned mask = type_mask(type);
    char want[96] = "";

    if (!mask)
        return true;
    if (cJSON_IsNull(v) && (mask & T_NULL))
        return true;
    if (cJSON_IsBool(v) && (mask & T_BOOLEAN))
        return true;
    if (cJSON_IsObject(v) && (mask & T_OBJECT))
        return true;
    if (cJSON_IsArray(v) && (mask & T_ARRAY))
        return true;
    if (cJSON_IsString(v) && (mask & T_STRING))
        return true;
    if (cJSON_IsNumber(v) && (mask & T_NUMBER))
        return true;
    if (cJSON_IsNumber(v) && (mask & T_INTEGER)) {
        double d = v->valuedouble;

        if (is_safe_whole(d))
            return true;
        if (is_whole(d)) {
            char got[48];

            format_number(d, got, sizeof(got));
            violation(c, "integer out of range (at most 9007199254740991 in magnitude); got %s",
                      got);
            return false;
        }
    }
    if (wants_message(c))
        type_text(type, want, sizeof(want));
    violation(c, "expected %s, got %s", want, type_of(v));
    return false;
}

static void check_enum(struct vctx *c, const cJSON *enumv, const cJSON *v)
{
    const cJSON *e;
    char list[SCHEMA_MSG_MAX], one[64], got[64];
    size_t len = 0;

    cJSON_ArrayForEach(e, enumv)
    {
        if (cJSON_Compare(e, v, true))
            return;
    }
    if (!wants_message(c)) {
        c->count++;
        return;
    }
    list[0] = '\0';
    cJSON_ArrayForEach(e, enumv)
    {
        int n;

        describe_schema_value(e, one, sizeof(one));
        n = snprintf(list + len, sizeof(list) - len, "%s%s", len ? ", " : "", one);
        if (n < 0 || (size_t)n >= sizeof(list) - len)
            break;
        len += (size_t)n;
    }
    describe_value(v, got, sizeof(got));
    violation(c, "must be one of %s; got %s", list, got);
}

static void check_const(struct vctx *c, const cJSON *constv, const cJSON *v)
{
    char want[64] = "", got[64] = "";

    if (cJSON_Compare(constv, v, true))
        return;
    if (wants_message(c)) {
        describe_schema_value(constv, want, sizeof(want));
        describe_value(v, got, sizeof(got));
    }
    violation(c, "must be %s; got %s", want, got);
}

static void check_bound(struct vctx *c, const cJSON *bound, double d, const char *op)
{
    bool ok;
    char want[48], got[48];

    if (!cJSON_IsNumber(bound))
        return;
    if (op[0] == '>')
        ok = op[1] == '=' ? d >= bound->valuedouble : d > bound->valuedouble;
    else
        ok = op[1] == '=' ? d <= bound->valuedouble : d < bound->valuedouble;
    if (ok)
        return;
    format_number(bound->valuedouble, want, sizeof(want));
    format_number(d, got, sizeof(got));
    violation(c, "must be %s %s; got %s", op, want, got);
}

static size_t count_code_points(const char *s)
{
    size_t n = 0;

    for (; *s; s++) {
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    }
    return n;
}

/* A non-negative integer keyword value, or -1 when absent or malformed. */
static double limit_of(const cJSON *k)
{
    if (!cJSON_IsNumber(k) || k->valuedouble < 0)
        return -1;
    return k->valuedouble;
}

static void check_count(struct vctx *c, const cJSON *minv, const cJSON *maxv, size_t n,
                        const char *verb, const char *unit)
{
    double lo = limit_of(minv), hi = limit_of(maxv);

    if (lo >= 0 && (double)n < lo)
        violation(c, "must %s at least %.0f %s%s; got %zu", verb, lo, unit, lo == 1 ? "" : "s", n);
    if (hi >= 0 && (double)n > hi)
        violation(c, "must %s at most %.0f %s%s; got %zu", verb, hi, unit, hi == 1 ? "" : "s", n);
}

static void validate_array(struct vctx *c, const struct keywords *kw, const cJSON *v)
{
    const cJSON *e;
    size_t i = 0, old;

    if (kw->minitems || kw->maxitems)
        check_count(c, kw->minitems, kw->maxitems, (size_t)cJSON_GetArraySize(v), "have", "item");
    if (!kw->items)
        return;
    cJSON_ArrayForEach(e, v)
    {
        old = path_push_index(c->path, i++);
        validate(c, kw->items, e);
        path_pop(c->path, old);
    }
}

/* The declared property names, for the "unexpected property" message. */
static void allowed_list(const cJSON *props, char *buf, size_t size)
{
    const cJSON *p;
    size_t len = 0;

    buf[0] = '\0';
    cJSON_ArrayForEach(p, props)
    {
        char name[2 * VALUE_CUT];
        int n = snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
                         quoted(p->string, name, sizeof(name)));
        if (n < 0 || (size_t)n >= size - len)
            break;
        len += (size_t)n;
    }
}

static void check_required(struct vctx *c, const cJSON *required, const cJSON *v)
{
    const cJSON *r;
    size_t old;

    cJSON_ArrayForEach(r, required)
    {
        if (!cJSON_IsString(r) || cJSON_GetObjectItemCaseSensitive(v, r->valuestring))
            continue;
        old = path_push_key(c->path, r->valuestring);
        violation(c, "required property is missing");
        path_pop(c->path, old);
    }
}

/* One member: its declared schema, or additionalProperties. `seen` marks the first 64
 * declared properties already met, so a repeated name is refused (the daemon would read only
 * one of the two values). */
static void validate_member(struct vctx *c, const struct keywords *kw, const cJSON *m,
                            uint64_t *seen)
{
    const cJSON *p = NULL;
    char allowed[SCHEMA_MSG_MAX];
    unsigned idx = 0;

    if (cJSON_IsObject(kw->properties)) {
        for (p = kw->properties->child; p; p = p->next, idx++) {
            if (p->string && strcmp(p->string, m->string) == 0)
                break;
        }
    }
    if (p) {
        if (idx < 64 && (*seen & (UINT64_C(1) << idx))) {
            violation(c, "duplicate property");
            return;
        }
        if (idx < 64)
            *seen |= UINT64_C(1) << idx;
        validate(c, p, m);
    } else if (cJSON_IsFalse(kw->additional)) {
        if (!wants_message(c)) {
            c->count++;
            return;
        }
        allowed_list(kw->properties, allowed, sizeof(allowed));
        if (allowed[0])
            violation(c, "unexpected property (allowed: %s)", allowed);
        else
            violation(c, "unexpected property (no properties are allowed)");
    } else if (cJSON_IsObject(kw->additional)) {
        validate(c, kw->additional, m);
    }
}

static void validate_object(struct vctx *c, const struct keywords *kw, const cJSON *v)
{
    const cJSON *m;
    uint64_t seen = 0;
    size_t old;

    if (cJSON_IsArray(kw->required))
        check_required(c, kw->required, v);
    if (!kw->properties && !kw->additional)
        return;
    cJSON_ArrayForEach(m, v)
    {
        if (!m->string)
            continue;
        old = path_push_key(c->path, m->string);
        validate_member(c, kw, m, &seen);
        path_pop(c->path, old);
    }
}

/* oneOf (exactly one alternative) or anyOf (at least one). */
static void validate_alternatives(struct vctx *c, const cJSON *alts, const cJSON *v, bool one)
{
    struct vctx sub;
    const cJSON *alt;
    size_t n = 0, matched = 0, best_count = SIZE_MAX;
    char best[SCHEMA_MSG_MAX] = "";

    cJSON_ArrayForEach(alt, alts)
    {
        n++;
        memset(&sub, 0, sizeof(sub));
        sub.path = c->path;
        sub.depth = c->depth;
        validate(&sub, alt, v);
        if (sub.count == 0) {
            matched++;
            if (!one)
                return;
        } else if (sub.count < best_count) {
            best_count = sub.count;
            memcpy(best, sub.first, sizeof(best));
        }
    }
    if (n == 0)
        return;
    if (matched == 0)
        violation(c, "matches none of the %zu alternatives; closest: %s", n, best);
    else if (one && matched > 1)
        violation(c, "matches %zu of the %zu alternatives; must match exactly one", matched, n);
}

static void validate(struct vctx *c, const cJSON *schema, const cJSON *v)
{
    struct keywords kw;

    if (cJSON_IsTrue(schema))
        return;
    if (cJSON_IsFalse(schema)) {
        violation(c, "no value is allowed here");
        return;
    }
    if (!cJSON_IsObject(schema))
        return;
    if (c->depth >= 2 * SCHEMA_MAX_DEPTH) {
        violation(c, "value nests too deeply");
        return;
    }
    c->depth++;
    gather(schema, &kw);
    if (kw.type && !check_type(c, kw.type, v))
        goto out;
    if (kw.enumv && cJSON_IsArray(kw.enumv))
        check_enum(c, kw.enumv, v);
    if (kw.constv)
        check_const(c, kw.constv, v);
    if (cJSON_IsNumber(v)) {
        check_bound(c, kw.minimum, v->valuedouble, ">=");
        check_bound(c, kw.maximum, v->valuedouble, "<=");
        check_bound(c, kw.exmin, v->valuedouble, ">");
        check_bound(c, kw.exmax, v->valuedouble, "<");
    } else if (cJSON_IsString(v) && (kw.minlen || kw.maxlen)) {
        check_count(c, kw.minlen, kw.maxlen, count_code_points(v->valuestring), "be", "character");
    } else if (cJSON_IsArray(v)) {
        validate_array(c, &kw, v);
    } else if (cJSON_IsObject(v)) {
        validate_object(c, &kw, v);
    }
    if (cJSON_IsArray(kw.oneof))
        validate_alternatives(c, kw.oneof, v, true);
    if (cJSON_IsArray(kw.anyof))
        validate_alternatives(c, kw.anyof, v, false);
out:
    c->depth--;
}

int schema_validate(const cJSON *schema, const cJSON *value, const char *root,
                    struct schema_report *rep)
{
    struct path path;
    struct vctx c;
    char want[96] = "object";
    const cJSON *type;

    memset(&c, 0, sizeof(c));
    c.rep = rep;
    c.path = &path;
    path.len = (size_t)snprintf(path.buf, sizeof(path.buf), "%s", root ? root : "value");
    if (path.len >= sizeof(path.buf))
        path.len = sizeof(path.buf) - 1;
    rep->count = 0;
    if (!value) {
        type = cJSON_IsObject(schema) ? cJSON_GetObjectItemCaseSensitive(schema, "type") : NULL;
        if (type_mask(type))
            type_text(type, want, sizeof(want));
        violation(&c, "expected %s, got nothing", want);
    } else {
        validate(&c, schema, value);
    }
    rep->count = c.count;
    return c.count ? -1 : 0;
}

/* ---- schema_check ---- */

enum kw_kind {
    KW_TYPE,
    KW_PROPERTIES,
    KW_REQUIRED,
    KW_SCHEMA, /* a schema: an object or a boolean */
    KW_ENUM,
    KW_ANY,
    KW_NUMBER,
    KW_COUNT, /* a non-negative integer */
    KW_SCHEMA_LIST,
    KW_STRING,
    KW_BOOL,
    KW_ARRAY,
    KW_UNSUPPORTED,
};

static const struct {
    const char *name;
    enum kw_kind kind;
} keyword_table[] = {
    {"type", KW_TYPE},
    {"properties", KW_PROPERTIES},
    {"required", KW_REQUIRED},
    {"additionalProperties", KW_SCHEMA},
    {"items", KW_SCHEMA},
    {"enum", KW_ENUM},
    {"const", KW_ANY},
    {"default", KW_ANY},
    {"minimum", KW_NUMBER},
    {"maximum", KW_NUMBER},
    {"exclusiveMinimum", KW_NUMBER},
    {"exclusiveMaximum", KW_NUMBER},
    {"minLength", KW_COUNT},
    {"maxLength", KW_COUNT},
    {"minItems", KW_COUNT},
    {"maxItems", KW_COUNT},
    {"oneOf", KW_SCHEMA_LIST},
    {"anyOf", KW_SCHEMA_LIST},
    {"title", KW_STRING},
    {"description", KW_STRING},
    {"$comment", KW_STRING},
    {"$schema", KW_STRING},
    {"$id", KW_STRING},
    {"format", KW_STRING},
    {"deprecated", KW_BOOL},
    {"readOnly", KW_BOOL},
    {"writeOnly", KW_BOOL},
    {"examples", KW_ARRAY},
    /* Real JSON Schema keywords this validator does not implement: a schema using one would
     * silently accept what its author meant to refuse, so it is refused instead. */
    {"pattern", KW_UNSUPPORTED},
    {"patternProperties", KW_UNSUPPORTED},
    {"allOf", KW_UNSUPPORTED},
    {"not", KW_UNSUPPORTED},
    {"$ref", KW_UNSUPPORTED},
    {"$defs", KW_UNSUPPORTED},
    {"definitions", KW_UNSUPPORTED},
    {"if", KW_UNSUPPORTED},
    {"then", KW_UNSUPPORTED},
    {"else", KW_UNSUPPORTED},
    {"prefixItems", KW_UNSUPPORTED},
    {"uniqueItems", KW_UNSUPPORTED},
    {"multipleOf", KW_UNSUPPORTED},
    {"propertyNames", KW_UNSUPPORTED},
    {"dependentRequired", KW_UNSUPPORTED},
    {"dependentSchemas", KW_UNSUPPORTED},
    {"minProperties", KW_UNSUPPORTED},
    {"maxProperties", KW_UNSUPPORTED},
    {"contains", KW_UNSUPPORTED},
    {"unevaluatedProperties", KW_UNSUPPORTED},
    {"unevaluatedItems", KW_UNSUPPORTED},
};

#define N_KEYWORDS (sizeof(keyword_table) / sizeof(keyword_table[0]))

struct cctx {
    struct path path; /* ".properties.depth.type"; shown without the leading dot */
    struct errinfo *err;
    int depth;
};

static int check_fail(struct cctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int check_fail(struct cctx *c, const char *fmt, ...)
{
    char rule[SCHEMA_MSG_MAX];
    const char *prefix;
    const char *where = c->path.len ? shown_path(&c->path, &prefix) : "schema";
    va_list ap;

    if (!c->path.len)
        prefix = "";
    if (where[0] == '.' && !prefix[0])
        where++;
    va_start(ap, fmt);
    vsnprintf(rule, sizeof(rule), fmt, ap);
    va_end(ap);
    errinfo_set(c->err, ERR_INVALID, "%s%s: %s", prefix, where, rule);
    return -1;
}

static int check_schema(struct cctx *c, const cJSON *schema);

/* The first member name that occurs twice in obj, or NULL. Schemas are small: O(n^2). */
static const char *duplicate_key(const cJSON *obj)
{
    for (const cJSON *a = obj->child; a; a = a->next) {
        for (const cJSON *b = a->next; b; b = b->next) {
            if (a->string && b->string && strcmp(a->string, b->string) == 0)
                return a->string;
        }
    }
    return NULL;
}

static int check_type_keyword(struct cctx *c, const cJSON *k)
{
    unsigned seen = 0, bit;
    const cJSON *t;
    char q[2 * VALUE_CUT];

    if (cJSON_IsString(k)) {
        if (!type_bit_of_name(k->valuestring))
            return check_fail(c, "unknown type \"%s\"", quoted(k->valuestring, q, sizeof(q)));
        return 0;
    }
    if (!cJSON_IsArray(k) || !k->child)
        return check_fail(c, "must be a type name or a non-empty array of type names");
    cJSON_ArrayForEach(t, k)
    {
        if (!cJSON_IsString(t))
            return check_fail(c, "must be a type name or a non-empty array of type names");
        bit = type_bit_of_name(t->valuestring);
        if (!bit)
            return check_fail(c, "unknown type \"%s\"", quoted(t->valuestring, q, sizeof(q)));
        if (seen & bit)
            return check_fail(c, "type \"%s\" is listed twice", t->valuestring);
        seen |= bit;
    }
    return 0;
}

static int check_properties(struct cctx *c, const cJSON *k)
{
    const cJSON *p;
    size_t old;
    char q[2 * VALUE_CUT];

    if (!cJSON_IsObject(k))
        return check_fail(c, "must be an object mapping names to schemas");
    if (duplicate_key(k))
        return check_fail(c, "property \"%s\" is declared twice",
                          quoted(duplicate_key(k), q, sizeof(q)));
    cJSON_ArrayForEach(p, k)
    {
        old = path_push_key(&c->path, p->string);
        if (check_schema(c, p) != 0)
            return -1;
        path_pop(&c->path, old);
    }
    return 0;
}

static int check_required_keyword(struct cctx *c, const cJSON *k)
{
    const cJSON *r, *q;
    char name[2 * VALUE_CUT];

    if (!cJSON_IsArray(k))
        return check_fail(c, "must be an array of property names");
    cJSON_ArrayForEach(r, k)
    {
        if (!cJSON_IsString(r))
            return check_fail(c, "must be an array of property names");
        for (q = r->next; q; q = q->next) {
            if (cJSON_IsString(q) && strcmp(q->valuestring, r->valuestring) == 0)
                return check_fail(c, "\"%s\" is listed twice",
                                  quoted(r->valuestring, name, sizeof(name)));
        }
    }
    return 0;
}

static int check_schema_list(struct cctx *c, const cJSON *k)
{
    const cJSON *alt;
    size_t i = 0, old;

    if (!cJSON_IsArray(k) || !k->child)
        return check_fail(c, "must be a non-empty array of schemas");
    cJSON_ArrayForEach(alt, k)
    {
        old = path_push_index(&c->path, i++);
        if (check_schema(c, alt) != 0)
            return -1;
        path_pop(&c->path, old);
    }
    return 0;
}

static int check_keyword(struct cctx *c, const cJSON *k)
{
    size_t i;

    for (i = 0; i < N_KEYWORDS; i++) {
        if (strcmp(k->string, keyword_table[i].name) == 0)
            break;
    }
    if (i == N_KEYWORDS)
        return check_fail(c, "unknown keyword");
    switch (keyword_table[i].kind) {
    case KW_TYPE:
        return check_type_keyword(c, k);
    case KW_PROPERTIES:
        return check_properties(c, k);
    case KW_REQUIRED:
        return check_required_keyword(c, k);
    case KW_SCHEMA:
        if (!cJSON_IsBool(k) && !cJSON_IsObject(k))
            return check_fail(c, "must be a schema (an object or a boolean)");
        return check_schema(c, k);
    case KW_ENUM:
        if (!cJSON_IsArray(k) || !k->child)
            return check_fail(c, "must be a non-empty array");
        return 0;
    case KW_ANY:
        return 0;
    case KW_NUMBER:
        return cJSON_IsNumber(k) && isfinite(k->valuedouble) ? 0
                                                             : check_fail(c, "must be a number");
    case KW_COUNT:
        if (!cJSON_IsNumber(k) || !is_safe_whole(k->valuedouble) || k->valuedouble < 0)
            return check_fail(c, "must be a non-negative integer");
        return 0;
    case KW_SCHEMA_LIST:
        return check_schema_list(c, k);
    case KW_STRING:
        return cJSON_IsString(k) ? 0 : check_fail(c, "must be a string");
    case KW_BOOL:
        return cJSON_IsBool(k) ? 0 : check_fail(c, "must be true or false");
    case KW_ARRAY:
        return cJSON_IsArray(k) ? 0 : check_fail(c, "must be an array");
    case KW_UNSUPPORTED:
        return check_fail(c, "keyword not supported by this validator");
    }
    return check_fail(c, "unknown keyword");
}

static int check_order(struct cctx *c, const cJSON *lo, const cJSON *hi)
{
    if (lo && hi && lo->valuedouble > hi->valuedouble)
        return check_fail(c, "%s is greater than %s", lo->string, hi->string);
    return 0;
}

/* A value the schema itself names must pass it: the default entirely, an enum member (when
 * type is given) its type. */
static int check_own_value(struct cctx *c, const cJSON *schema, const cJSON *v, const char *what,
                           const cJSON *type)
{
    struct path path;
    struct vctx sub;

    memset(&sub, 0, sizeof(sub));
    sub.path = &path;
    path.len = (size_t)snprintf(path.buf, sizeof(path.buf), "%s", what);
    if (type) {
        if (!check_type(&sub, type, v))
            return check_fail(c, "%s", sub.first);
        return 0;
    }
    validate(&sub, schema, v);
    if (sub.count)
        return check_fail(c, "%s", sub.first);
    return 0;
}

static int check_consistency(struct cctx *c, const cJSON *schema)
{
    struct keywords kw;
    const cJSON *r, *e, *def;
    size_t i = 0;
    char what[32], q[2 * VALUE_CUT];

    gather(schema, &kw);
    if (check_order(c, kw.minimum, kw.maximum) || check_order(c, kw.minlen, kw.maxlen) ||
        check_order(c, kw.minitems, kw.maxitems))
        return -1;
    if (cJSON_IsFalse(kw.additional) && kw.required) {
        cJSON_ArrayForEach(r, kw.required)
        {
            if (!cJSON_GetObjectItemCaseSensitive(kw.properties, r->valuestring))
                return check_fail(c,
                                  "required property \"%s\" is not declared in properties, "
                                  "and additionalProperties is false",
                                  quoted(r->valuestring, q, sizeof(q)));
        }
    }
    if (kw.enumv && kw.type) {
        cJSON_ArrayForEach(e, kw.enumv)
        {
            snprintf(what, sizeof(what), "enum[%zu]", i++);
            if (check_own_value(c, schema, e, what, kw.type) != 0)
                return -1;
        }
    }
    def = cJSON_GetObjectItemCaseSensitive(schema, "default");
    if (def)
        return check_own_value(c, schema, def, "default", NULL);
    return 0;
}

static int check_schema(struct cctx *c, const cJSON *schema)
{
    const cJSON *k;
    size_t old;
    int rc = 0;
    char q[2 * VALUE_CUT];

    if (cJSON_IsBool(schema))
        return 0;
    if (!cJSON_IsObject(schema))
        return check_fail(c, "must be a schema (an object or a boolean)");
    if (c->depth >= SCHEMA_MAX_DEPTH)
        return check_fail(c, "schema nests deeper than %d levels", SCHEMA_MAX_DEPTH);
    if (duplicate_key(schema))
        return check_fail(c, "keyword \"%s\" appears twice",
                          quoted(duplicate_key(schema), q, sizeof(q)));
    c->depth++;
    cJSON_ArrayForEach(k, schema)
    {
        old = path_push_key(&c->path, k->string);
        rc = check_keyword(c, k);
        if (rc != 0)
            break;
        path_pop(&c->path, old);
    }
    if (rc == 0)
        rc = check_consistency(c, schema);
    c->depth--;
    return rc;
}

int schema_check(const cJSON *schema, struct errinfo *err)
{
    struct cctx c;

    memset(&c, 0, sizeof(c));
    c.err = err;
    if (!schema) {
        errinfo_set(err, ERR_INVALID, "schema: missing");
        return -1;
    }
    return check_schema(&c, schema);
}
