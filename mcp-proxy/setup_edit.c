/* mcp-proxy/setup_edit.c - changing a client's config file in place (see setup.h).
 *
 * DESIGN
 * A config file belongs to its user: reformatting it (as re-serializing a parsed document
 * would) loses comments, key order and layout. So the JSON editor only scans the text, the way
 * the client's own lenient parser reads it (comments, trailing commas), to find byte offsets:
 * where the object that gets the entry starts and ends, and where its last member ends. The
 * change is one or two splices at those offsets; every other byte is copied. The TOML editor
 * works on lines: it replaces the [mcp_servers.<name>] table (and its sub-tables) or appends
 * one. Both are pure. */
#include "setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonbuf.h"

#define DEPTH_MAX 256
#define CONTEXT   3 /* lines of context in a diff */
#define KEYS_MAX  8
#define OUT_MAX   (SETUP_FILE_MAX + ((size_t)1 << 20))

/* ---- scanning JSON with comments ---- */

struct scan {
    const char *s;
    size_t n, i;
    struct errinfo *err;
};

static void where(const struct scan *sc, size_t at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t k = 0; k < at && k < sc->n; k++) {
        if (sc->s[k] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static int syntax(struct scan *sc, const char *what)
{
    int line, col;

    where(sc, sc->i, &line, &col);
    errinfo_set(sc->err, ERR_INVALID, "line %d, column %d: %s", line, col, what);
    return -1;
}

/* Skips whitespace and comments. */
static int skip_ws(struct scan *sc)
{
    while (sc->i < sc->n) {
        char c = sc->s[sc->i];

        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            sc->i++;
        } else if (c == '/' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '/') {
            while (sc->i < sc->n && sc->s[sc->i] != '\n')
                sc->i++;
        } else if (c == '/' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '*') {
            const char *end = memmem(sc->s + sc->i + 2, sc->n - sc->i - 2, "*/", 2);

            if (!end)
                return syntax(sc, "a /* comment is not closed");
            sc->i = (size_t)(end - sc->s) + 2;
        } else {
            break;
        }
    }
    return 0;
}

/* At '"': skips the string; *out (when asked) gets its decoded text. */
static int scan_string(struct scan *sc, char **out)
{
    size_t start = sc->i;
    cJSON *v;
    char *raw;

    sc->i++;
    while (sc->i < sc->n && sc->s[sc->i] != '"') {
        if (sc->s[sc->i] == '\\')
            sc->i++;
        if (sc->s[sc->i] == '\n')
            return syntax(sc, "a string runs past the end of its line");
        sc->i++;
    }
    if (sc->i >= sc->n)
        return syntax(sc, "a string is not closed");
    sc->i++;
    if (!out)
        return 0;
    raw = strndup(sc->s + start, sc->i - start);
    v = raw ? cJSON_Parse(raw) : NULL;
    free(raw);
    if (!cJSON_IsString(v)) {
        cJSON_Delete(v);
        sc->i = start;
        return syntax(sc, "a string has a bad escape");
    }
    *out = strdup(v->valuestring);
    cJSON_Delete(v);
    return *out ? 0 : syntax(sc, "out of memory");
}

static int skip_value(struct scan *sc, int depth);

/* At '{' or '[': skips the container. */
static int skip_container(struct scan *sc, int depth)
{
    char close = sc->s[sc->i] == '{' ? '}' : ']';
    bool obj = close == '}';

    if (depth > DEPTH_MAX)
        return syntax(sc, "nested too deeply");
    sc->i++;
    for (;;) {
        if (skip_ws(sc) < 0)
            return -1;
        if (sc->i >= sc->n)
            return syntax(sc, obj ? "an object is not closed" : "an array is not closed");
        if (sc->s[sc->i] == close) {
            sc->i++;
            return 0;
        }
        if (obj) {
            if (sc->s[sc->i] != '"')
                return syntax(sc, "expected a \"key\"");
            if (scan_string(sc, NULL) < 0 || skip_ws(sc) < 0)
                return -1;
            if (sc->i >= sc->n || sc->s[sc->i] != ':')
                return syntax(sc, "expected ':' after a key");
            sc->i++;
        }
        if (skip_value(sc, depth + 1) < 0 || skip_ws(sc) < 0)
            return -1;
        if (sc->i < sc->n && sc->s[sc->i] == ',')
            sc->i++;
        else if (sc->i < sc->n && sc->s[sc->i] != close)
            return syntax(sc, "expected ',' or the end of the object or array");
    }
}

static int skip_value(struct scan *sc, int depth)
{
    char c;

    if (skip_ws(sc) < 0)
        return -1;
    if (sc->i >= sc->n)
        return syntax(sc, "expected a value");
    c = sc->s[sc->i];
    if (c == '{' || c == '[')
        return skip_container(sc, depth);
    if (c == '"')
        return scan_string(sc, NULL);
    if (strchr("-0123456789tfn", c)) {
        size_t start = sc->i;

        while (sc->i < sc->n && strchr("+-.0123456789eEtruefalsn", sc->s[sc->i]))
            sc->i++;
        if (sc->i > start)
            return 0;
    }
    return syntax(sc, "expected a value");
}

/* One object, as far as the editor needs it. */
struct object {
    size_t open, close; /* offsets of '{' and '}' */
    size_t nmembers;
    size_t last_key, last_end; /* the last member: where its key starts, where its value ends */
    bool last_comma;           /* a ',' follows the last member (JSONC's trailing comma) */
    size_t last_comma_at;
    bool found;                               /* the key asked for is a member */
    size_t found_key, found_start, found_end; /* its key and value (the last one of that name) */
};

/* At '{': reads the object, noting where member `key` is (when non-NULL). */
static int scan_object(struct scan *sc, const char *key, struct object *o)
{
    memset(o, 0, sizeof(*o));
    o->open = sc->i++;
    for (;;) {
        size_t kstart, vstart;
        char *name = NULL;

        if (skip_ws(sc) < 0)
            return -1;
        if (sc->i >= sc->n)
            return syntax(sc, "an object is not closed");
        if (sc->s[sc->i] == '}') {
            o->close = sc->i++;
            return 0;
        }
        if (sc->s[sc->i] != '"')
            return syntax(sc, "expected a \"key\"");
        kstart = sc->i;
        if (scan_string(sc, &name) < 0)
            return -1;
        if (skip_ws(sc) < 0 || sc->i >= sc->n || sc->s[sc->i] != ':') {
            free(name);
            return sc->err && sc->err->kind ? -1 : syntax(sc, "expected ':' after a key");
        }
        sc->i++;
        if (skip_ws(sc) < 0) {
            free(name);
            return -1;
        }
        vstart = sc->i;
        if (skip_value(sc, 1) < 0) {
            free(name);
            return -1;
        }
        if (key && strcmp(name, key) == 0) {
            o->found = true;
            o->found_key = kstart;
            o->found_start = vstart;
            o->found_end = sc->i;
        }
        free(name);
        o->nmembers++;
        o->last_key = kstart;
        o->last_end = sc->i;
        o->last_comma = false;
        if (skip_ws(sc) < 0)
            return -1;
        if (sc->i < sc->n && sc->s[sc->i] == ',') {
            o->last_comma = true;
            o->last_comma_at = sc->i++;
        } else if (sc->i < sc->n && sc->s[sc->i] != '}') {
            return syntax(sc, "expected ',' or '}'");
        }
    }
}

/* ---- rendering ---- */

/* The indentation of the line that holds offset at. */
static void line_indent(const char *s, size_t at, char *out, size_t n)
{
    size_t b = at, k = 0;

    while (b > 0 && s[b - 1] != '\n')
        b--;
    while (b < at && (s[b] == ' ' || s[b] == '\t') && k + 1 < n)
        out[k++] = s[b++];
    out[k] = '\0';
}

/* The file's indentation unit: that of its first indented line, else two spaces. */
static void indent_unit(const char *s, size_t n, char *out, size_t outn)
{
    const char *nl = memchr(s, '\n', n);

    snprintf(out, outn, "  ");
    while (nl && (size_t)(nl - s) + 1 < n) {
        const char *p = nl + 1;
        size_t k = 0;

        while (p + k < s + n && (p[k] == ' ' || p[k] == '\t'))
            k++;
        if (k > 0 && k < outn && p + k < s + n && p[k] != '\n' && p[k] != '\r') {
            memcpy(out, p, k);
            out[k] = '\0';
            return;
        }
        nl = memchr(p, '\n', (size_t)(s + n - p));
    }
}

static void put_json_string(struct jsonbuf *b, const char *s)
{
    jsonbuf_put_json_string(b, s, strlen(s), NULL);
}

/* Pretty JSON for v: objects one member a line at base + unit, arrays of scalars on one line. */
static void render(struct jsonbuf *b, const cJSON *v, const char *base, const char *unit)
{
    char inner[256];
    const cJSON *it;
    bool first = true;

    snprintf(inner, sizeof(inner), "%s%s", base, unit);
    if (cJSON_IsObject(v)) {
        if (!v->child) {
            jsonbuf_puts(b, "{}", NULL);
            return;
        }
        jsonbuf_puts(b, "{", NULL);
        cJSON_ArrayForEach(it, v)
        {
            jsonbuf_puts(b, first ? "\n" : ",\n", NULL);
            jsonbuf_puts(b, inner, NULL);
            put_json_string(b, it->string);
            jsonbuf_puts(b, ": ", NULL);
            render(b, it, inner, unit);
            first = false;
        }
        jsonbuf_puts(b, "\n", NULL);
        jsonbuf_puts(b, base, NULL);
        jsonbuf_puts(b, "}", NULL);
    } else if (cJSON_IsArray(v)) {
        jsonbuf_puts(b, "[", NULL);
        cJSON_ArrayForEach(it, v)
        {
            if (!first)
                jsonbuf_puts(b, ", ", NULL);
            render(b, it, inner, unit);
            first = false;
        }
        jsonbuf_puts(b, "]", NULL);
    } else {
        char *t = cJSON_PrintUnformatted(v);

        jsonbuf_puts(b, t ? t : "null", NULL);
        cJSON_free(t);
    }
}

/* {keys[0]: {keys[1]: ... entry}}: the value made for the missing part of the path. Owned. */
static cJSON *nest(const char *const *keys, size_t n, const cJSON *entry)
{
    cJSON *v = cJSON_Duplicate(entry, 1);

    for (size_t k = n; v && k-- > 0;) {
        cJSON *o = cJSON_CreateObject();

        if (!o || !cJSON_AddItemToObject(o, keys[k], v)) {
            cJSON_Delete(o);
            cJSON_Delete(v);
            return NULL;
        }
        v = o;
    }
    return v;
}

/* ---- putting the entry ---- */

struct splice {
    size_t at, cut; /* replace text[at, at + cut) */
    char *with;     /* owned */
};

static char *apply(const char *text, size_t len, struct splice *sp, size_t nsp)
{
    struct jsonbuf out = JSONBUF_INIT(OUT_MAX);
    size_t pos = 0;

    for (size_t k = 0; k < nsp; k++) { /* in increasing order of at */
        jsonbuf_put(&out, text + pos, sp[k].at - pos, NULL);
        jsonbuf_puts(&out, sp[k].with ? sp[k].with : "", NULL);
        pos = sp[k].at + sp[k].cut;
    }
    jsonbuf_put(&out, text + pos, len - pos, NULL);
    return jsonbuf_take(&out, NULL);
}

/* The member `"key": value` inserted into object o. Fills sp[0..*nsp). */
static int insert_member(const struct scan *sc, const struct object *o, const char *key,
                         const cJSON *value, const char *unit, struct splice *sp, size_t *nsp)
{
    struct jsonbuf m = JSONBUF_INIT(OUT_MAX);
    char ind[160], pind[128];
    const char *s = sc->s;
    size_t eol, anchor;

    line_indent(s, o->open, pind, sizeof(pind));
    if (o->nmembers > 0)
        line_indent(s, o->last_key, ind, sizeof(ind));
    else
        snprintf(ind, sizeof(ind), "%s%s", pind, unit);
    jsonbuf_puts(&m, "\n", NULL);
    jsonbuf_puts(&m, ind, NULL);
    put_json_string(&m, key);
    jsonbuf_puts(&m, ": ", NULL);
    render(&m, value, ind, unit);
    *nsp = 0;
    if (o->nmembers == 0) {
        bool blank = true;

        for (size_t k = o->open + 1; k < o->close; k++)
            blank = blank && strchr(" \t\r\n", s[k]);
        if (blank) {
            jsonbuf_puts(&m, "\n", NULL);
            jsonbuf_puts(&m, pind, NULL);
            sp[0] = (struct splice){o->open + 1, o->close - o->open - 1, jsonbuf_take(&m, NULL)};
        } else {
            sp[0] = (struct splice){o->open + 1, 0, jsonbuf_take(&m, NULL)};
        }
        *nsp = 1;
        return sp[0].with ? 0 : -1;
    }
    /* After the last member (and its trailing comma, JSONC's, when it has one), but a
     * "// comment" on the rest of that line stays with that member: the new one goes after
     * the comment, and the comma the last member needs goes right after its value. */
    anchor = o->last_comma ? o->last_comma_at + 1 : o->last_end;
    eol = anchor;
    while (eol < o->close && (s[eol] == ' ' || s[eol] == '\t'))
        eol++;
    if (eol + 1 < o->close && s[eol] == '/' && s[eol + 1] == '/') {
        while (eol < o->close && s[eol] != '\n')
            eol++;
        if (eol > anchor && s[eol - 1] == '\r')
            eol--;
    } else {
        eol = anchor;
    }
    if (o->last_comma)
        jsonbuf_puts(&m, ",", NULL); /* keep the style */
    else
        sp[(*nsp)++] = (struct splice){o->last_end, 0, strdup(",")};
    sp[*nsp] = (struct splice){eol, 0, jsonbuf_take(&m, NULL)};
    (*nsp)++;
    return sp[0].with && sp[*nsp - 1].with ? 0 : -1;
}

static bool blank(const char *s, size_t n)
{
    struct scan sc = {s, n, 0, NULL};

    return skip_ws(&sc) == 0 && sc.i == n;
}

/* Walks keys from the root object. Stops at the first missing key (*depth = its index) or at
 * the last one; o is the object scanned last. */
static int walk(struct scan *sc, const char *const *keys, size_t n, struct object *o, size_t *depth)
{
    size_t start;

    if (skip_ws(sc) < 0)
        return -1;
    if (sc->i >= sc->n || sc->s[sc->i] != '{')
        return syntax(sc, "the file is not a JSON object");
    start = sc->i;
    if (skip_value(sc, 0) < 0 || skip_ws(sc) < 0)
        return -1;
    if (sc->i != sc->n)
        return syntax(sc, "something follows the end of the JSON object");
    sc->i = start;
    for (size_t k = 0; k < n; k++) {
        if (scan_object(sc, keys[k], o) < 0)
            return -1;
        *depth = k;
        if (!o->found || k == n - 1)
            break;
        sc->i = o->found_start;
        if (sc->s[sc->i] != '{') {
            char path[256] = "";
            int line, col;

            for (size_t j = 0; j <= k; j++)
                snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s%s", j ? "." : "",
                         keys[j]);
            where(sc, sc->i, &line, &col);
            errinfo_set(sc->err, ERR_INVALID,
                        "line %d, column %d: %s is not an object, so the entry cannot go in it",
                        line, col, path);
            return -1;
        }
    }
    return 0;
}

bool setup_json_has_object(const char *text, size_t len, const char *const *keys, size_t n)
{
    struct scan sc = {text, len, 0, NULL};
    struct object o;
    size_t depth = 0;

    if (blank(text, len) || walk(&sc, keys, n, &o, &depth) < 0)
        return false;
    return depth == n - 1 && o.found && text[o.found_start] == '{';
}

char *setup_json_put(const char *text, size_t len, const char *const *keys, size_t n,
                     const cJSON *entry, struct errinfo *err)
{
    struct scan sc = {text, len, 0, err};
    struct splice sp[2] = {{0}};
    struct object o;
    size_t depth = 0, nsp = 0;
    char unit[16], *out = NULL;
    cJSON *value = NULL;

    if (n == 0 || n > KEYS_MAX || !entry) {
        errinfo_set(err, ERR_INTERNAL, "setup_json_put: bad arguments");
        return NULL;
    }
    if (blank(text, len)) {
        struct jsonbuf b = JSONBUF_INIT(OUT_MAX);

        value = nest(keys, n, entry);
        render(&b, value, "", "  ");
        jsonbuf_puts(&b, "\n", NULL);
        cJSON_Delete(value);
        return jsonbuf_take(&b, NULL);
    }
    indent_unit(text, len, unit, sizeof(unit));
    if (walk(&sc, keys, n, &o, &depth) < 0)
        return NULL;
    if (o.found) { /* the last key: replace its value */
        struct jsonbuf b = JSONBUF_INIT(OUT_MAX);
        char ind[128];

        line_indent(text, o.found_key, ind, sizeof(ind));
        render(&b, entry, ind, unit);
        sp[0] = (struct splice){o.found_start, o.found_end - o.found_start, jsonbuf_take(&b, NULL)};
        nsp = 1;
    } else {
        value = depth + 1 < n ? nest(keys + depth + 1, n - depth - 1, entry)
                              : cJSON_Duplicate(entry, 1);
        if (!value || insert_member(&sc, &o, keys[depth], value, unit, sp, &nsp) < 0) {
            errinfo_set(err, ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    out = apply(text, len, sp, nsp);
    if (!out)
        errinfo_set(err, ERR_NOMEM, "out of memory");
out:
    cJSON_Delete(value);
    for (size_t k = 0; k < 2; k++)
        free(sp[k].with);
    return out;
}

/* ---- TOML (Codex) ---- */

/* A TOML bare key, or a basic string. */
static void toml_key(struct jsonbuf *b, const char *k)
{
    size_t n = strlen(k);

    if (n && strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == n)
        jsonbuf_puts(b, k, NULL);
    else
        put_json_string(b, k); /* JSON's escapes are TOML basic-string escapes */
}

static void toml_block(struct jsonbuf *b, const struct setup_entry *e)
{
    jsonbuf_puts(b, "[mcp_servers.", NULL);
    toml_key(b, e->name);
    jsonbuf_puts(b, "]\ncommand = ", NULL);
    put_json_string(b, e->command);
    jsonbuf_puts(b, "\nargs = []\n", NULL);
    if (!e->nenv)
        return;
    jsonbuf_puts(b, "\n[mcp_servers.", NULL);
    toml_key(b, e->name);
    jsonbuf_puts(b, ".env]\n", NULL);
    for (size_t i = 0; i < e->nenv; i++) {
        toml_key(b, e->env_keys[i]);
        jsonbuf_puts(b, " = ", NULL);
        put_json_string(b, e->env_values[i]);
        jsonbuf_puts(b, "\n", NULL);
    }
}

/* Splits a header's dotted key ("mcp_servers . \"x\"") into parts; returns how many (at most
 * max), or -1 when it is not a plain table header. */
static int header_parts(const char *line, size_t len, char parts[][128], int max)
{
    size_t i = 0;
    int n = 0;

    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i >= len || line[i] != '[' || (i + 1 < len && line[i + 1] == '['))
        return -1;
    i++;
    for (;;) {
        size_t k = 0;

        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i < len && (line[i] == '"' || line[i] == '\'')) {
            char q = line[i++];

            while (i < len && line[i] != q && k + 1 < 128) {
                if (q == '"' && line[i] == '\\' && i + 1 < len)
                    i++;
                parts[n][k++] = line[i++];
            }
            i++;
        } else {
            while (i < len &&
                   strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                          "0123456789_-",
                          line[i]) &&
                   line[i] && k + 1 < 128)
                parts[n][k++] = line[i++];
        }
        parts[n][k] = '\0';
        if (n < max)
            n++;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i < len && line[i] == '.') {
            i++;
            continue;
        }
        return i < len && line[i] == ']' && n <= max ? n : -1;
    }
}

/* True when a key line (in table `table`) defines mcp_servers.<name> another way. */
static bool other_definition(const char *line, size_t len, bool in_mcp_servers, bool top,
                             const char *name)
{
    char want[160];
    size_t i = 0, wl;

    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (top) {
        if (len - i >= 11 && strncmp(line + i, "mcp_servers", 11) == 0) {
            size_t j = i + 11;

            while (j < len && (line[j] == ' ' || line[j] == '\t'))
                j++;
            return j < len && (line[j] == '=' || line[j] == '.');
        }
        return false;
    }
    if (!in_mcp_servers)
        return false;
    snprintf(want, sizeof(want), "%s", name);
    wl = strlen(want);
    if (line[i] == '"' || line[i] == '\'')
        i++;
    return len - i >= wl && strncmp(line + i, want, wl) == 0 &&
           (i + wl == len || strchr(" \t=.\"'", line[i + wl]));
}

char *setup_toml_put(const char *text, size_t len, const struct setup_entry *e, struct errinfo *err)
{
    struct jsonbuf out = JSONBUF_INIT(OUT_MAX), block = JSONBUF_INIT((size_t)1 << 20);
    size_t pos = 0, lineno = 0;
    bool in_ours = false, placed = false, in_mcp = false, top = true, in_multi = false;
    size_t keep_end = 0; /* text kept up to here (exclusive) before our block was cut */
    char *blk;

    toml_block(&block, e);
    blk = jsonbuf_take(&block, NULL);
    if (!blk) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return NULL;
    }
    while (pos < len) {
        const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - line) : len - pos, next = pos + ll + (nl ? 1 : 0);
        char parts[4][128];
        int np;

        lineno++;
        /* Lines inside a multi-line string are no headers: an odd number of triple quotes on
         * a line opens or closes one. */
        bool was_multi = in_multi;

        for (size_t k = 0; k + 3 <= ll; k++)
            if ((line[k] == '"' || line[k] == '\'') && line[k + 1] == line[k] &&
                line[k + 2] == line[k]) {
                in_multi = !in_multi;
                k += 2;
            }
        np = was_multi ? -1 : header_parts(line, ll, parts, 4);
        if (np > 0) {
            bool ours =
                np >= 2 && strcmp(parts[0], "mcp_servers") == 0 && strcmp(parts[1], e->name) == 0;

            top = false;
            in_mcp = np == 1 && strcmp(parts[0], "mcp_servers") == 0;
            if (ours && !in_ours) {
                jsonbuf_put(&out, text + keep_end, pos - keep_end, NULL);
                if (!placed)
                    jsonbuf_puts(&out, blk, NULL);
                placed = true;
                in_ours = true;
            } else if (!ours && in_ours) {
                in_ours = false;
                keep_end = pos;
                if (out.len && out.data[out.len - 1] == '\n')
                    jsonbuf_puts(&out, "\n", NULL); /* a blank line before the next table */
            }
        } else if (!was_multi && ll > 0 && line[0] == '[' && ll > 1 && line[1] == '[' &&
                   strstr(line, "mcp_servers") &&
                   (size_t)(strstr(line, "mcp_servers") - line) < ll) {
            errinfo_set(err, ERR_INVALID,
                        "line %zu: mcp_servers is an array of tables here; edit it by hand",
                        lineno);
            goto fail;
        } else if (!was_multi && !in_ours && other_definition(line, ll, in_mcp, top, e->name)) {
            errinfo_set(err, ERR_INVALID,
                        "line %zu defines mcp_servers.%s with dotted keys or an inline table; "
                        "change or remove it by hand (a second definition would be invalid TOML)",
                        lineno, e->name);
            goto fail;
        }
        pos = next;
    }
    if (!in_ours)
        jsonbuf_put(&out, text + keep_end, len - keep_end, NULL);
    if (!placed) {
        if (out.len && out.data[out.len - 1] != '\n')
            jsonbuf_puts(&out, "\n", NULL);
        if (out.len)
            jsonbuf_puts(&out, "\n", NULL);
        jsonbuf_puts(&out, blk, NULL);
    }
    free(blk);
    return jsonbuf_take(&out, NULL);
fail:
    free(blk);
    jsonbuf_cleanup(&out);
    return NULL;
}

/* ---- diff ---- */

static size_t split_lines(const char *s, size_t n, const char ***out)
{
    size_t count = 0, cap = 64;
    const char **v = malloc(cap * sizeof(*v));

    for (size_t i = 0; v && i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);

        if (count + 2 > cap) {
            const char **nv = realloc(v, (cap *= 2) * sizeof(*v));

            if (!nv) {
                free(v);
                return 0;
            }
            v = nv;
        }
        v[count++] = s + i;
        i = nl ? (size_t)(nl - s) + 1 : n;
    }
    if (v)
        v[count] = s + n;
    *out = v;
    return v ? count : 0;
}

static size_t line_len(const char *const *v, size_t k)
{
    size_t l = (size_t)(v[k + 1] - v[k]);

    return l && v[k][l - 1] == '\n' ? l - 1 : l;
}

static bool same(const char *const *a, size_t i, const char *const *b, size_t j)
{
    return line_len(a, i) == line_len(b, j) && memcmp(a[i], b[j], line_len(a, i)) == 0;
}

char *setup_diff(const char *old, size_t olen, const char *new_, size_t nlen)
{
    const char **a = NULL, **b = NULL;
    size_t na = split_lines(old, olen, &a), nb = split_lines(new_, nlen, &b), pre = 0, suf = 0;
    struct jsonbuf d = JSONBUF_INIT(OUT_MAX * 2);

    while (pre < na && pre < nb && same(a, pre, b, pre))
        pre++;
    while (suf < na - pre && suf < nb - pre && same(a, na - 1 - suf, b, nb - 1 - suf))
        suf++;
    for (size_t k = pre > CONTEXT ? pre - CONTEXT : 0; k < pre; k++) {
        jsonbuf_puts(&d, " ", NULL);
        jsonbuf_put(&d, a[k], line_len(a, k), NULL);
        jsonbuf_puts(&d, "\n", NULL);
    }
    for (size_t k = pre; k < na - suf; k++) {
        jsonbuf_puts(&d, "-", NULL);
        jsonbuf_put(&d, a[k], line_len(a, k), NULL);
        jsonbuf_puts(&d, "\n", NULL);
    }
    for (size_t k = pre; k < nb - suf; k++) {
        jsonbuf_puts(&d, "+", NULL);
        jsonbuf_put(&d, b[k], line_len(b, k), NULL);
        jsonbuf_puts(&d, "\n", NULL);
    }
    for (size_t k = na - suf; k < na && k < na - suf + CONTEXT; k++) {
        jsonbuf_puts(&d, " ", NULL);
        jsonbuf_put(&d, a[k], line_len(a, k), NULL);
        jsonbuf_puts(&d, "\n", NULL);
    }
    free(a);
    free(b);
    return jsonbuf_take(&d, NULL);
}
