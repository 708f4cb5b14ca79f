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
 * schema_check() (schema_check.c) is the strict twin used on the catalog: it refuses unknown
 * keywords and malformed keyword values, so schema_validate() can assume a sane schema (it
 * still never crashes on a malformed one: a keyword whose value has the wrong type is
 * ignored). */
#include "schema.h"
#include "schema_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonbuf.h"
#include "jsonrpc.h"
#include "utf8.h"

#define MAX_SAFE_INT 9007199254740991.0 /* 2^53 - 1: the integers a double holds exactly */

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
    s[utf8_cut(s, strlen(s))] = '\0';
}

/* Appends src to dst (of size `size`, holding *len bytes) with JSON escapes, at most `max`
 * source bytes and never part of a character; returns false when src was cut. */
static bool append_escaped(char *dst, size_t size, size_t *len, const char *src, size_t max)
{
    const unsigned char *u = (const unsigned char *)src;
    size_t i = 0, slen = strnlen(src, max + 4); /* a sequence is at most 4 bytes */

    while (u[i]) {
        /* A character is kept whole; a byte that starts none goes alone. */
        size_t n = utf8_seq_len(src + i, slen - i);
        char tmp[8];
        const char *out = tmp;
        size_t outlen;

        if (n == 0)
            n = 1;
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
    else if (jsonrpc_is_whole(d) && fabs(d) < 1e15)
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
        if (!append_escaped(buf, size - 4, &len, v->valuestring, SCHEMA_VALUE_CUT)) {
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
    if (strlen(text) >= size && size > 4) { /* cut: say so, as schema_quoted does */
        buf[size - 4] = '\0';
        trim_utf8(buf);
        memcpy(buf + strlen(buf), "...", 4);
    }
    free(text);
}

const char *schema_quoted(const char *s, char *buf, size_t size)
{
    size_t len = 0;

    buf[0] = '\0';
    if (!append_escaped(buf, size - 3, &len, s, SCHEMA_VALUE_CUT)) {
        trim_utf8(buf);
        len = strlen(buf);
        memcpy(buf + len, "...", 4);
    }
    return buf;
}

bool schema_is_safe_whole(double d)
{
    return jsonrpc_is_whole(d) && fabs(d) <= MAX_SAFE_INT;
}

/* The type named in messages: like jsonrpc_type_name, but a whole number past 2^53 is a
 * "number" here, since "integer" accepts only the integers a double holds exactly. */
static const char *type_of(const cJSON *v)
{
    if (cJSON_IsNumber(v) && !schema_is_safe_whole(v->valuedouble))
        return "number";
    return jsonrpc_type_name(v);
}

unsigned schema_type_bit(const char *name)
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
        return schema_type_bit(type->valuestring);
    if (!cJSON_IsArray(type))
        return 0;
    cJSON_ArrayForEach(t, type)
    {
        if (cJSON_IsString(t))
            mask |= schema_type_bit(t->valuestring);
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
        if (schema_type_bit(type->valuestring))
            snprintf(buf, size, "%s", type->valuestring);
        return;
    }
    cJSON_ArrayForEach(t, type)
    {
        int n;

        /* Unknown names are skipped: they come from an unchecked schema and could hold
         * anything, newlines included. */
        if (!cJSON_IsString(t) || !schema_type_bit(t->valuestring))
            continue;
        n = snprintf(buf + len, size - len, "%s%s", len ? " or " : "", t->valuestring);
        if (n < 0 || (size_t)n >= size - len)
            break;
        len += (size_t)n;
    }
}

/* ---- the value path ---- */

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

size_t schema_path_push_key(struct schema_path *p, const char *key)
{
    size_t old = p->len;
    size_t len = p->len;

    if (is_plain_key(key) && strlen(key) <= SCHEMA_VALUE_CUT) {
        /* ".key", cut to fit (every call validates its arguments: no snprintf here). */
        size_t klen = strlen(key);

        if (len + 1 < sizeof(p->buf)) {
            size_t fit = sizeof(p->buf) - len - 2;

            p->buf[len] = '.';
            memcpy(p->buf + len + 1, key, klen < fit ? klen : fit);
            p->buf[len + 1 + (klen < fit ? klen : fit)] = '\0';
        } else {
            p->buf[sizeof(p->buf) - 1] = '\0';
        }
        p->len = len + 1 + klen;
    } else if (len + 8 < sizeof(p->buf)) {
        memcpy(p->buf + len, "[\"", 3);
        len += 2;
        if (!append_escaped(p->buf, sizeof(p->buf) - 5, &len, key, SCHEMA_VALUE_CUT)) {
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

/* Starts the path at root, cut to fit. */
static void path_start(struct schema_path *p, const char *root)
{
    size_t len = strlen(root);

    if (len >= sizeof(p->buf))
        len = sizeof(p->buf) - 1;
    memcpy(p->buf, root, len);
    p->buf[len] = '\0';
    p->len = len;
}

size_t schema_path_push_index(struct schema_path *p, size_t i)
{
    size_t old = p->len;
    int n = snprintf(p->buf + p->len, sizeof(p->buf) - p->len, "[%zu]", i);

    p->len = n < 0 ? old : p->len + (size_t)n;
    if (p->len >= sizeof(p->buf))
        p->len = sizeof(p->buf) - 1;
    return old;
}

void schema_path_pop(struct schema_path *p, size_t old)
{
    p->len = old;
    p->buf[old] = '\0';
}

#define PATH_SHOWN_MAX 160 /* longest path shown in a message (see schema_path_shown) */

const char *schema_path_shown(const struct schema_path *p, const char **prefix)
{
    const char *s = p->buf;

    *prefix = "";
    if (p->len > PATH_SHOWN_MAX) {
        s = p->buf + p->len - (PATH_SHOWN_MAX - 3);
        while (utf8_is_cont((unsigned char)*s))
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
    struct schema_path *path;
    int depth;
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
    where = schema_path_shown(c->path, &prefix);
    n = snprintf(dst, SCHEMA_MSG_MAX, "%s%s: ", prefix, where);
    if (n >= 0 && n < SCHEMA_MSG_MAX) {
        va_start(ap, fmt);
        vsnprintf(dst + n, SCHEMA_MSG_MAX - (size_t)n, fmt, ap);
        va_end(ap);
    }
    trim_utf8(dst);
}

static void validate(struct vctx *c, const cJSON *schema, const cJSON *v);

void schema_gather(const cJSON *schema, struct schema_keywords *kw)
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

        if (schema_is_safe_whole(d))
            return true;
        if (jsonrpc_is_whole(d)) {
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

/* Steps one enum or const check may take (a value node or a member-name comparison each). */
#define EQUAL_BUDGET (1L << 22)

/* b's member named name, or NULL; each name compared costs a step. */
static const cJSON *member_named(const cJSON *b, const char *name, long *budget)
{
    for (const cJSON *m = b->child; m && --*budget >= 0; m = m->next)
        if (m->string && strcmp(m->string, name) == 0)
            return m;
    return NULL;
}

/* Equality as enum and const mean it: numbers by value (1 equals 1.0), arrays in order, object
 * members in any order. cJSON_Compare checks two equal objects once from each side at every
 * level, which is 2^depth steps: an upstream schema with a const object 50 levels deep held a
 * worker for good. Here each value is compared once; members in another order cost name
 * lookups, and *budget bounds all steps. When it runs out the values count as equal: the
 * schema is then left to the server that owns the tool, which checks the call again. */
static bool json_equal(const cJSON *a, const cJSON *b, long *budget)
{
    const cJSON *x, *y;
    bool reordered = false;

    if (--*budget < 0)
        return true;
    if ((a->type & 0xFF) != (b->type & 0xFF))
        return false;
    switch (a->type & 0xFF) {
    case cJSON_Number:
        return a->valuedouble == b->valuedouble;
    case cJSON_String:
    case cJSON_Raw:
        return a->valuestring && b->valuestring && strcmp(a->valuestring, b->valuestring) == 0;
    case cJSON_Array:
        for (x = a->child, y = b->child; x && y; x = x->next, y = y->next)
            if (!json_equal(x, y, budget))
                return false;
        return !x && !y;
    case cJSON_Object:
        for (x = a->child, y = b->child; x && y; x = x->next, y = y->next)
            ;
        if (x || y)
            return false; /* not as many members */
        for (x = a->child, y = b->child; x; x = x->next, y = y ? y->next : NULL) {
            const cJSON *other = y;

            if (!x->string || !y || !y->string || strcmp(x->string, y->string) != 0) {
                reordered = true;
                other = x->string ? member_named(b, x->string, budget) : NULL;
            }
            if (*budget < 0)
                return true;
            if (!other || !json_equal(x, other, budget))
                return false;
        }
        /* With members in another order, a name twice in a could hide one of b's names. */
        for (y = b->child; reordered && y; y = y->next)
            if (!y->string || (!member_named(a, y->string, budget) && *budget >= 0))
                return false;
        return true;
    default: /* true, false, null */
        return true;
    }
}

static void check_enum(struct vctx *c, const cJSON *enumv, const cJSON *v)
{
    const cJSON *e;
    char list[SCHEMA_MSG_MAX], one[64], got[64];
    size_t len = 0;
    long budget = EQUAL_BUDGET;

    cJSON_ArrayForEach(e, enumv)
    {
        if (json_equal(e, v, &budget))
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
    long budget = EQUAL_BUDGET;

    if (json_equal(constv, v, &budget))
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
        if (!utf8_is_cont((unsigned char)*s))
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

static void validate_array(struct vctx *c, const struct schema_keywords *kw, const cJSON *v)
{
    const cJSON *e;
    size_t i = 0, old;

    if (kw->minitems || kw->maxitems)
        check_count(c, kw->minitems, kw->maxitems, (size_t)cJSON_GetArraySize(v), "have", "item");
    if (!kw->items)
        return;
    cJSON_ArrayForEach(e, v)
    {
        old = schema_path_push_index(c->path, i++);
        validate(c, kw->items, e);
        schema_path_pop(c->path, old);
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
        char name[2 * SCHEMA_VALUE_CUT];
        int n;

        if (!p->string) /* an unchecked schema may hold "properties": [...] */
            continue;
        n = snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
                     schema_quoted(p->string, name, sizeof(name)));
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
        old = schema_path_push_key(c->path, r->valuestring);
        violation(c, "required property is missing");
        schema_path_pop(c->path, old);
    }
}

/* One member: its declared schema, or additionalProperties. `seen` marks the first 64
 * declared properties already met, so a repeated name is refused (the daemon would read only
 * one of the two values). */
static void validate_member(struct vctx *c, const struct schema_keywords *kw, const cJSON *m,
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

static void validate_object(struct vctx *c, const struct schema_keywords *kw, const cJSON *v)
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
        old = schema_path_push_key(c->path, m->string);
        validate_member(c, kw, m, &seen);
        schema_path_pop(c->path, old);
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
    struct schema_keywords kw;

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
    schema_gather(schema, &kw);
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

int schema_first_violation(const cJSON *schema, const cJSON *type, const cJSON *v, const char *what,
                           char *msg)
{
    struct schema_path path;
    struct vctx sub;

    memset(&sub, 0, sizeof(sub));
    sub.path = &path;
    path_start(&path, what);
    if (type) {
        if (check_type(&sub, type, v))
            return 0;
    } else {
        validate(&sub, schema, v);
        if (!sub.count)
            return 0;
    }
    memcpy(msg, sub.first, SCHEMA_MSG_MAX);
    return -1;
}

int schema_validate(const cJSON *schema, const cJSON *value, const char *root,
                    struct schema_report *rep)
{
    struct schema_path path;
    struct vctx c;
    char want[96] = "object";
    const cJSON *type;

    memset(&c, 0, sizeof(c));
    c.rep = rep;
    c.path = &path;
    path_start(&path, root ? root : "value");
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

char *schema_report_text(const struct schema_report *rep)
{
    struct jsonbuf b = JSONBUF_INIT((size_t)SCHEMA_MAX_ERRORS * SCHEMA_MSG_MAX + 64);
    char more[64];

    for (size_t i = 0; i < rep->count && i < SCHEMA_MAX_ERRORS; i++) {
        if (i)
            jsonbuf_put(&b, "\n", 1, NULL);
        jsonbuf_puts(&b, rep->msgs[i], NULL);
    }
    if (rep->count > SCHEMA_MAX_ERRORS) {
        size_t n = rep->count - SCHEMA_MAX_ERRORS;

        snprintf(more, sizeof(more), "\n(%zu more problem%s)", n, n == 1 ? "" : "s");
        jsonbuf_puts(&b, more, NULL);
    }
    if (b.len == 0)
        jsonbuf_puts(&b, "the arguments do not match the tool's schema", NULL);
    return jsonbuf_take(&b, NULL);
}

/* True when schema asks for an object ("type": "object", alone or in a list). */
static bool wants_object(const cJSON *schema)
{
    const cJSON *type =
        cJSON_IsObject(schema) ? cJSON_GetObjectItemCaseSensitive(schema, "type") : NULL;
    const cJSON *t;

    if (cJSON_IsString(type))
        return strcmp(type->valuestring, "object") == 0;
    if (!cJSON_IsArray(type))
        return false;
    cJSON_ArrayForEach(t, type)
    {
        if (cJSON_IsString(t) && strcmp(t->valuestring, "object") == 0)
            return true;
    }
    return false;
}

static bool is_empty_array(const cJSON *v)
{
    return cJSON_IsArray(v) && !v->child;
}

/* The schema of member `name` of an object that schema describes, or NULL. */
static const cJSON *member_schema(const cJSON *schema, const char *name)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    const cJSON *sub = name ? cJSON_GetObjectItemCaseSensitive(props, name) : NULL;
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties");

    return sub ? sub : (cJSON_IsObject(extra) ? extra : NULL);
}

static int coerce_within(const cJSON *schema, cJSON *value, int depth)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items");
    cJSON *m, *next;
    int n = 0, k;

    if (!cJSON_IsObject(schema) || depth > 64)
        return 0;
    for (m = cJSON_IsObject(value) || cJSON_IsArray(value) ? value->child : NULL; m; m = next) {
        const cJSON *sub = cJSON_IsObject(value) ? member_schema(schema, m->string)
                                                 : (cJSON_IsObject(items) ? items : NULL);

        next = m->next;
        if (!sub)
            continue;
        if (is_empty_array(m) && wants_object(sub)) {
            cJSON *obj = cJSON_CreateObject();

            /* In an object the replacement needs the member's name (ViaPointer keeps none). */
            if (!obj || (cJSON_IsObject(value)
                             ? !cJSON_ReplaceItemInObjectCaseSensitive(value, m->string, obj)
                             : !cJSON_ReplaceItemViaPointer(value, m, obj))) {
                cJSON_Delete(obj);
                return -1;
            }
            n++;
            continue;
        }
        k = coerce_within(sub, m, depth + 1);
        if (k < 0)
            return -1;
        n += k;
    }
    return n;
}

int schema_coerce_empty_objects(const cJSON *schema, cJSON **value)
{
    if (!*value)
        return 0;
    if (is_empty_array(*value) && wants_object(schema)) {
        cJSON *obj = cJSON_CreateObject();

        if (!obj)
            return -1;
        cJSON_Delete(*value);
        *value = obj;
        return 1;
    }
    return coerce_within(schema, *value, 0);
}
