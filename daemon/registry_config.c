/* daemon/registry_config.c - the external servers of the config files (see registry.h): the
 * Claude Desktop shape {"mcpServers": {name: entry}}, VS Code's {"servers": {...}}, and the list
 * form [{"name", "transport": {"type", ...}}], with ${env:VAR} in any string.
 *
 * A value taken from ${env:VAR} is often a token: the transport's values keep their text as
 * written beside the replaced one (registry_spec.shown), and the values taken are remembered so
 * that registry_redact() can put "${env:VAR}" back into any message that echoes one. Checks
 * that guard what goes upstream (a header's characters, the URL's) look at the replaced text.
 *
 * Nothing here fails the daemon: an entry that cannot run is kept with its error, so that the
 * daemon starts with the rest, logs what it skipped, and lists the entry as failed in
 * /mcp-servers with the message that names the file and the key. Pure: no I/O. */
#include "registry.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "strfmt.h"

#define ENV_VALUE_MAX (64u << 10)

void registry_sanitize(const char *in, char *buf, size_t size)
{
    size_t n = 0;

    for (; in && *in && n + 1 < size; in++) {
        char ch = *in;

        if (((unsigned char)ch & 0xC0) == 0x80)
            continue; /* UTF-8: a character becomes one '_', from its first byte */
        buf[n++] = ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')
                       ? ch
                       : '_';
    }
    if (n == 0 && size > 1)
        buf[n++] = '_';
    if (size)
        buf[n] = '\0';
}

/* FNV-1a: stable across runs and builds, so a cut name stays the same name. */
static uint32_t fnv1a(const char *a, const char *b)
{
    uint32_t h = 2166136261u;

    for (; *a; a++)
        h = (h ^ (unsigned char)*a) * 16777619u;
    h = (h ^ 0) * 16777619u;
    for (; *b; b++)
        h = (h ^ (unsigned char)*b) * 16777619u;
    return h;
}

void registry_served_name(const char *prefix, const char *name, char *buf, size_t size)
{
    char whole[2 * 256 + 4], p[256], t[256];

    registry_sanitize(prefix, p, sizeof(p));
    registry_sanitize(name, t, sizeof(t));
    snprintf(whole, sizeof(whole), "%s__%s", p, t);
    if (strlen(whole) > REGISTRY_NAME_MAX || strlen(prefix) >= sizeof(p) - 1 ||
        strlen(name) >= sizeof(t) - 1)
        snprintf(whole + REGISTRY_NAME_MAX - 9, sizeof(whole) - (REGISTRY_NAME_MAX - 9), "_%08x",
                 (unsigned)fnv1a(prefix, name));
    snprintf(buf, size, "%s", whole);
}

/* ---- one entry ---- */

struct ctx {
    struct registry_spec *s;
    registry_getenv_fn getenv_fn;
    bool remember; /* the transport's keys: values taken from ${env:VAR} go into s->secrets */
};

static void set_error(struct registry_spec *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_error(struct registry_spec *s, const char *fmt, ...)
{
    char rule[512];
    va_list ap;

    if (s->error)
        return; /* the first problem is the one to fix first */
    va_start(ap, fmt);
    vsnprintf(rule, sizeof(rule), fmt, ap);
    va_end(ap);
    s->error = strfmt_alloc("%s%s", s->where, rule);
}

static const char *type_name(const cJSON *v)
{
    return jsonrpc_type_name(v);
}

/* The value part of a secrets entry "${env:VAR}value" (VAR has no '}'). */
static const char *secret_value(const char *entry)
{
    return strchr(entry, '}') + 1;
}

/* Keeps label ("${env:VAR}") and the value it was replaced with in s->secrets, the longest
 * value first (so that a value inside a longer one is not taken out of it first). */
static int remember(struct ctx *x, const char *label, size_t ll, const char *val, size_t vl)
{
    struct registry_strv *sv = &x->s->secrets;
    char *entry, **grown;
    size_t at = 0;

    if (!x->remember || vl < REGISTRY_REDACT_MIN)
        return 0;
    entry = strfmt_alloc("%.*s%.*s", (int)ll, label, (int)vl, val);
    if (!entry)
        return -1;
    for (size_t i = 0; i < sv->n; i++)
        if (strcmp(sv->v[i], entry) == 0) {
            free(entry);
            return 0;
        }
    while (at < sv->n && strlen(secret_value(sv->v[at])) >= vl)
        at++;
    grown = realloc(sv->v, (sv->n + 1) * sizeof(*sv->v));
    if (!grown) {
        free(entry);
        return -1;
    }
    sv->v = grown;
    memmove(sv->v + at + 1, sv->v + at, (sv->n - at) * sizeof(*sv->v));
    sv->v[at] = entry;
    sv->n++;
    return 0;
}

/* Replaces the n bytes at at, in the string in buf (size bytes), with text (tl bytes), cutting
 * off what no longer fits; returns where the string goes on after text. */
static char *splice(char *buf, size_t size, char *at, size_t n, const char *text, size_t tl)
{
    size_t room = size - 1 - (size_t)(at - buf), tail = strlen(at + n);

    if (tl > room)
        tl = room;
    if (tail > room - tl)
        tail = room - tl;
    memmove(at + tl, at + n, tail);
    memcpy(at, text, tl);
    at[tl + tail] = '\0';
    return at + tl;
}

void registry_redact(const struct registry_spec *s, char *buf, size_t size)
{
    if (!buf || !size)
        return;
    for (size_t i = 0; i < s->secrets.n; i++) {
        const char *label = s->secrets.v[i], *val = secret_value(label);
        size_t vl = strlen(val);
        char *at = buf;

        while ((at = strstr(at, val)) != NULL)
            at = splice(buf, size, at, vl, label, (size_t)(val - label));
    }
    /* Then a message cut off in a value ends in the start of it. */
    for (size_t i = 0; i < s->secrets.n; i++) {
        const char *label = s->secrets.v[i], *val = secret_value(label);
        size_t vl = strlen(val), len = strlen(buf);

        for (size_t k = vl - 1 < len ? vl - 1 : len; k >= REGISTRY_REDACT_MIN; k--)
            if (memcmp(buf + len - k, val, k) == 0) {
                splice(buf, size, buf + len - k, k, label, (size_t)(val - label));
                return;
            }
    }
}

/* What a "${...}" at p names: the variable (into var) and its default (into *def, or NULL), or
 * 0 when it is none of runbox's forms: ${env:VAR} (Cursor's, VS Code's), and ${VAR} and
 * ${VAR:-default} (Claude Code's .mcp.json). ${input:id}, VS Code's prompt for a value, is -1.
 * *end gets the closing brace. */
static int parse_var(const char *p, char *var, size_t size, const char **def, const char **end)
{
    const char *in = p + 2, *name = in, *n;

    *def = NULL;
    *end = NULL;
    if (strncmp(p, "${", 2) != 0 || !(*end = strchr(in, '}')))
        return 0;
    if (strncmp(in, "input:", 6) == 0)
        return -1;
    if (strncmp(in, "env:", 4) == 0) {
        snprintf(var, size, "%.*s", (int)(*end - in - 4), in + 4);
        return 1;
    }
    for (n = name; n < *end && (*n == '_' || isalnum((unsigned char)*n)); n++)
        ;
    if (n == name || isdigit((unsigned char)*name) ||
        (n != *end && strncmp(n, ":-", 2) != 0)) /* not a name: the text as it is */
        return 0;
    if (n != *end)
        *def = n + 2;
    snprintf(var, size, "%.*s", (int)(n - name), name);
    return 1;
}

/* An owned copy of text with every ${env:VAR}, ${VAR} and ${VAR:-default} replaced; NULL with
 * the spec's error set. */
static char *expand(struct ctx *x, const char *key, const char *text)
{
    size_t cap = strlen(text) + 1, len = 0;
    char *out = malloc(cap);
    const char *p = text;

    while (out && *p) {
        const char *end, *val, *def;
        char var[256];
        size_t vl;
        int form = parse_var(p, var, sizeof(var), &def, &end);

        if (form < 0) {
            set_error(x->s,
                      ".%s: %.*s asks VS Code's user for a value, which runbox cannot do; put "
                      "the value in the file, or in runboxd's environment as ${env:VAR}",
                      key, (int)(end + 1 - p), p);
            free(out);
            return NULL;
        }
        if (form == 0) {
            if (len + 2 > cap) {
                char *grown = realloc(out, cap * 2);

                if (!grown)
                    break;
                out = grown;
                cap *= 2;
            }
            out[len++] = *p++;
            continue;
        }
        val = x->getenv_fn ? x->getenv_fn(var) : NULL;
        vl = val ? strnlen(val, ENV_VALUE_MAX) : def ? (size_t)(end - def) : 0;
        if (!val && !def) {
            set_error(x->s,
                      ".%s: %.*s is not set in runboxd's environment; set it, or put "
                      "the value in the file",
                      key, (int)(end + 1 - p), p);
            free(out);
            return NULL;
        }
        if (!val)
            val = def;
        else if (remember(x, p, (size_t)(end + 1 - p), val, vl) < 0)
            break;
        if (len + vl + 1 > cap) {
            char *grown = realloc(out, len + vl + cap);

            if (!grown)
                break;
            out = grown;
            cap = len + vl + cap;
        }
        memcpy(out + len, val, vl);
        len += vl;
        p = end + 1;
    }
    if (!out || *p) {
        free(out);
        set_error(x->s, ": out of memory");
        return NULL;
    }
    out[len] = '\0';
    return out;
}

static char *get_string(struct ctx *x, const cJSON *obj, const char *key, bool nonempty)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!v)
        return NULL;
    if (!cJSON_IsString(v) || (nonempty && !v->valuestring[0])) {
        set_error(x->s, ".%s: expected a non-empty string, got %s", key,
                  cJSON_IsString(v) ? "an empty string" : type_name(v));
        return NULL;
    }
    return expand(x, key, v->valuestring);
}

static int strv_push(struct registry_strv *sv, char *s)
{
    char **grown;

    if (!s)
        return -1;
    grown = realloc(sv->v, (sv->n + 1) * sizeof(*sv->v));
    if (!grown) {
        free(s);
        return -1;
    }
    sv->v = grown;
    sv->v[sv->n++] = s;
    return 0;
}

static void strv_free(struct registry_strv *sv)
{
    for (size_t i = 0; i < sv->n; i++)
        free(sv->v[i]);
    free(sv->v);
    sv->v = NULL;
    sv->n = 0;
}

/* An array of strings ("args", "tools", "disabled_tools"). */
static void get_strings(struct ctx *x, const cJSON *obj, const char *key, struct registry_strv *sv)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key), *e;
    size_t i = 0;

    if (!v)
        return;
    if (!cJSON_IsArray(v)) {
        set_error(x->s, ".%s: expected an array of strings, got %s", key, type_name(v));
        return;
    }
    cJSON_ArrayForEach(e, v)
    {
        char sub[64];

        snprintf(sub, sizeof(sub), "%s[%zu]", key, i++);
        if (!cJSON_IsString(e)) {
            set_error(x->s, ".%s: expected a string, got %s", sub, type_name(e));
            return;
        }
        if (strv_push(sv, expand(x, sub, e->valuestring)) < 0)
            return;
    }
}

/* The text of key as written in the file, for messages, when its replaced value is there. */
static char *get_shown(struct ctx *x, const cJSON *obj, const char *key, const char *value)
{
    char *copy;

    if (!value)
        return NULL;
    copy = strdup(cJSON_GetObjectItemCaseSensitive(obj, key)->valuestring);
    if (!copy)
        set_error(x->s, ": out of memory");
    return copy;
}

/* RFC 9110's token: what a header's name may be. */
static bool is_token(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *s)))
            return false;
    return true;
}

/* True when s has a control character (CR, LF, DEL...), a tab unless tab, or a space unless
 * space: what would end a header line or a request line early. */
static bool has_control(const char *s, bool tab, bool space)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == 0x7f || (ch < 0x20 && !(tab && ch == '\t')) || (ch == ' ' && !space))
            return true;
    }
    return false;
}

/* An object of strings ("env" as NAME=value, "headers" as "Name: value"). */
static void get_pairs(struct ctx *x, const cJSON *obj, const char *key, const char *sep,
                      struct registry_strv *sv)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key), *e;
    bool env = sep[0] == '=';

    if (!v)
        return;
    if (!cJSON_IsObject(v)) {
        set_error(x->s, ".%s: expected an object of strings, got %s", key, type_name(v));
        return;
    }
    cJSON_ArrayForEach(e, v)
    {
        char sub[300];
        char *val;

        snprintf(sub, sizeof(sub), "%s.%.200s", key, e->string);
        if (!cJSON_IsString(e)) {
            set_error(x->s, ".%s: expected a string, got %s", sub, type_name(e));
            return;
        }
        if (env && (!e->string[0] || strchr(e->string, '=') || strpbrk(e->valuestring, "\r\n"))) {
            set_error(x->s, ".%s: not a usable variable", sub);
            return;
        }
        if (!env && !is_token(e->string)) {
            set_error(x->s,
                      ".%s: not a usable header name (letters, digits and !#$%%&'*+-.^_`|~ "
                      "only)",
                      sub);
            return;
        }
        val = expand(x, sub, e->valuestring);
        /* Checked once replaced: a CR LF from ${env:VAR} would start a header of its own. */
        if (val && !env && has_control(val, true, true)) {
            set_error(x->s,
                      ".%s: not a usable header value: it holds a line break or control "
                      "character (${env:VAR} replaced), which a header cannot carry",
                      sub);
            free(val);
            return;
        }
        if (!val || strv_push(sv, strfmt_alloc("%s%s%s", e->string, sep, val)) < 0) {
            free(val);
            return;
        }
        free(val);
    }
}

static int parse_type(const char *t, enum registry_transport *out)
{
    static const struct {
        const char *name;
        enum registry_transport tr;
    } types[] = {{"stdio", REGISTRY_STDIO},
                 {"http", REGISTRY_HTTP},
                 {"streamable-http", REGISTRY_HTTP},
                 {"streamableHttp", REGISTRY_HTTP},
                 {"sse", REGISTRY_SSE},
                 {"ws", REGISTRY_WS},
                 {"websocket", REGISTRY_WS}};

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(t, types[i].name) == 0) {
            *out = types[i].tr;
            return 0;
        }
    return -1;
}

/* The transport's own keys (command, args, env, cwd, url, headers, type) from obj. */
static void parse_transport(struct ctx *x, const cJSON *obj, const char *type_key)
{
    struct registry_spec *s = x->s;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(obj, "type");

    s->command = get_string(x, obj, "command", true);
    s->shown.command = get_shown(x, obj, "command", s->command);
    get_strings(x, obj, "args", &s->args);
    get_pairs(x, obj, "env", "=", &s->env);
    s->cwd = get_string(x, obj, "cwd", true);
    s->shown.cwd = get_shown(x, obj, "cwd", s->cwd);
    s->url = get_string(x, obj, "url", true);
    s->shown.url = get_shown(x, obj, "url", s->url);
    get_pairs(x, obj, "headers", ": ", &s->headers);
    if (type && !cJSON_IsString(type)) {
        set_error(s, ".%s: expected a string, got %s", type_key, type_name(type));
        return;
    }
    if (type) {
        if (parse_type(type->valuestring, &s->transport) < 0) {
            set_error(s, ".%s: unknown type \"%.40s\"; expected stdio, http, sse or ws", type_key,
                      type->valuestring);
            return;
        }
    } else if (s->url && s->command) {
        set_error(s,
                  ": has both \"command\" (a stdio server) and \"url\" (a remote one); keep "
                  "one, or say which with \"%s\"",
                  type_key);
        return;
    } else if (s->url) {
        s->transport = strncmp(s->url, "ws://", 5) == 0 || strncmp(s->url, "wss://", 6) == 0
                           ? REGISTRY_WS
                           : REGISTRY_HTTP;
    } else {
        s->transport = REGISTRY_STDIO;
    }
    if (s->error)
        return;
    if (s->url && has_control(s->url, false, false))
        set_error(s, ".url: holds a space, line break or control character (${env:VAR} "
                     "replaced); write a space as %%20");
    else if (s->transport == REGISTRY_STDIO && !s->command)
        set_error(s, ": needs \"command\" (a stdio server) or \"url\" (a remote one)");
    else if (s->transport != REGISTRY_STDIO && !s->url)
        set_error(s, ": type %s needs \"url\"", type->valuestring);
    else if (s->transport == REGISTRY_WS && strncmp(s->url, "ws://", 5) != 0 &&
             strncmp(s->url, "wss://", 6) != 0)
        set_error(s, ".url: a WebSocket server's URL starts with ws:// or wss://");
    else if ((s->transport == REGISTRY_HTTP || s->transport == REGISTRY_SSE) &&
             strncmp(s->url, "http://", 7) != 0 && strncmp(s->url, "https://", 8) != 0)
        set_error(s, ".url: an HTTP server's URL starts with http:// or https://");
}

/* The keys of every entry, whichever shape it came in. */
static void parse_common(struct ctx *x, const cJSON *obj)
{
    struct registry_spec *s = x->s;
    const cJSON *v;
    char *prefix;

    v = cJSON_GetObjectItemCaseSensitive(obj, "enabled");
    if (v && !cJSON_IsBool(v))
        set_error(s, ".enabled: expected true or false, got %s", type_name(v));
    s->enabled = !v || cJSON_IsTrue(v);
    v = cJSON_GetObjectItemCaseSensitive(obj, "disabled"); /* Cline's and mcp-hub's spelling */
    if (v && !cJSON_IsBool(v))
        set_error(s, ".disabled: expected true or false, got %s", type_name(v));
    if (cJSON_IsTrue(v))
        s->enabled = false;
    v = cJSON_GetObjectItemCaseSensitive(obj, "sandbox");
    if (v && !cJSON_IsBool(v))
        set_error(s, ".sandbox: expected true or false, got %s", type_name(v));
    s->sandbox = cJSON_IsTrue(v);
    v = cJSON_GetObjectItemCaseSensitive(obj, "timeout_ms");
    s->timeout_ms = REGISTRY_TIMEOUT_DEFAULT;
    if (v && (!cJSON_IsNumber(v) || v->valuedouble < 100 || v->valuedouble > 3600000 ||
              v->valuedouble != (double)(int)v->valuedouble))
        set_error(s, ".timeout_ms: expected a whole number of milliseconds 100-3600000");
    else if (v)
        s->timeout_ms = (int)v->valuedouble;
    get_strings(x, obj, "tools", &s->allow);
    s->has_allow = cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(obj, "tools"));
    get_strings(x, obj, "disabled_tools", &s->deny);
    prefix = get_string(x, obj, "prefix", true);
    free(s->prefix);
    s->prefix = malloc(REGISTRY_NAME_MAX + 1);
    if (s->prefix)
        registry_sanitize(prefix ? prefix : s->name, s->prefix, REGISTRY_NAME_MAX - 3);
    free(prefix);
    if (s->sandbox && s->transport != REGISTRY_STDIO)
        set_error(s, ".sandbox: only a stdio server runs in the sandbox");
}

/* The keys runbox reads: a map entry's (the transport's and the common ones together), a list
 * entry's, and a list entry's "transport". Other clients' own keys (Cline's approvals) are let
 * be; any other key is a warning, since a misspelt one is otherwise lost without a word. */
static const char *const transport_keys[] = {"type", "command", "args",    "env",
                                             "cwd",  "url",     "headers", NULL};
static const char *const common_keys[] = {"enabled", "disabled",       "sandbox", "timeout_ms",
                                          "tools",   "disabled_tools", "prefix",  NULL};
static const char *const list_keys[] = {"name", "transport", NULL};
static const char *const foreign_keys[] = {"autoApprove", "alwaysAllow", "description", NULL};

static bool in_keys(const char *const *keys, const char *k)
{
    for (; *keys; keys++)
        if (strcmp(*keys, k) == 0)
            return true;
    return false;
}

static void put_keys(char *buf, size_t size, const char *const *keys)
{
    for (; *keys; keys++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", buf[0] ? ", " : "", *keys);
}

/* Notes in s->ignored the keys of obj that none of the tables know ("where" names obj). */
static void note_unknown_keys(struct registry_spec *s, const cJSON *obj, const char *where,
                              const char *const *a, const char *const *b)
{
    char unknown[256] = "", known[400] = "";
    const cJSON *m;
    size_t n = 0;

    cJSON_ArrayForEach(m, obj)
    {
        if (in_keys(a, m->string) || (b && in_keys(b, m->string)) ||
            in_keys(foreign_keys, m->string))
            continue;
        n++;
        snprintf(unknown + strlen(unknown), sizeof(unknown) - strlen(unknown), "%s\"%.40s\"",
                 unknown[0] ? ", " : "", m->string);
    }
    if (!n || s->ignored)
        return;
    put_keys(known, sizeof(known), a);
    if (b)
        put_keys(known, sizeof(known), b);
    s->ignored =
        strfmt_alloc("%s%s: runbox does not know the key%s %s and ignores %s (it reads "
                     "%s)",
                     s->where, where, n == 1 ? "" : "s", unknown, n == 1 ? "it" : "them", known);
}

static struct registry_spec *add_spec(struct registry_specs *specs, const char *path,
                                      const char *key, const char *name)
{
    struct registry_spec *grown, *s;

    grown = realloc(specs->v, (specs->n + 1) * sizeof(*specs->v));
    if (!grown)
        return NULL;
    specs->v = grown;
    s = &specs->v[specs->n];
    memset(s, 0, sizeof(*s));
    s->name = strdup(name);
    s->where = strfmt_alloc("%s: %s%s%.200s", path, key, name[0] ? "." : "", name);
    s->enabled = true;
    s->timeout_ms = REGISTRY_TIMEOUT_DEFAULT;
    if (!s->name || !s->where) {
        free(s->name);
        free(s->where);
        return NULL;
    }
    specs->n++;
    return s;
}

/* Checks the name against those before it (in every file). */
static void check_name(const struct registry_specs *specs, struct registry_spec *s)
{
    if (!s->name[0]) {
        set_error(s, ": a server needs a non-empty name");
        return;
    }
    for (size_t i = 0; i + 1 < specs->n; i++)
        if (&specs->v[i] != s && strcmp(specs->v[i].name, s->name) == 0) {
            set_error(s,
                      ": a second server named \"%.60s\" (the first is %s); names must be "
                      "unique",
                      s->name, specs->v[i].where);
            return;
        }
    if (specs->n > REGISTRY_SERVERS_MAX)
        set_error(s, ": more than %d servers are configured; this one is skipped",
                  REGISTRY_SERVERS_MAX);
}

static int add_entry(struct registry_specs *specs, const char *path, const char *key,
                     const char *name, const cJSON *entry, bool list_form,
                     registry_getenv_fn getenv_fn)
{
    struct registry_spec *s = add_spec(specs, path, key, name);
    struct ctx x = {.s = s, .getenv_fn = getenv_fn};
    const cJSON *transport;

    if (!s)
        return -1;
    check_name(specs, s);
    if (!cJSON_IsObject(entry)) {
        set_error(s, ": expected an object, got %s", type_name(entry));
        return 0;
    }
    x.remember = true;
    if (list_form) {
        transport = cJSON_GetObjectItemCaseSensitive(entry, "transport");
        if (!cJSON_IsObject(transport)) {
            set_error(s,
                      ".transport: expected an object {\"type\": \"stdio\"|\"http\"|\"sse\"|"
                      "\"websocket\", ...}, got %s",
                      transport ? type_name(transport) : "nothing");
            return 0;
        }
        parse_transport(&x, transport, "transport.type");
        note_unknown_keys(s, transport, ".transport", transport_keys, NULL);
        note_unknown_keys(s, entry, "", list_keys, common_keys);
    } else {
        parse_transport(&x, entry, "type");
        note_unknown_keys(s, entry, "", transport_keys, common_keys);
    }
    x.remember = false; /* a prefix or a tool name from ${env:VAR} is shown by design */
    parse_common(&x, entry);
    return s->prefix ? 0 : -1;
}

int registry_specs_add(struct registry_specs *specs, const char *path, const char *key,
                       const cJSON *value, registry_getenv_fn getenv_fn, struct errinfo *err)
{
    const cJSON *e;
    size_t i = 0;
    int rc = 0;

    if (cJSON_IsObject(value)) {
        cJSON_ArrayForEach(e, value)
        {
            if (add_entry(specs, path, key, e->string, e, false, getenv_fn) < 0)
                rc = -1;
        }
    } else if (cJSON_IsArray(value)) {
        cJSON_ArrayForEach(e, value)
        {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
            char fallback[64];

            snprintf(fallback, sizeof(fallback), "[%zu]", i++);
            if (add_entry(specs, path, key,
                          cJSON_IsString(name) && name->valuestring[0] ? name->valuestring
                                                                       : fallback,
                          e, true, getenv_fn) < 0)
                rc = -1;
        }
    } else {
        struct registry_spec *s = add_spec(specs, path, key, "");

        if (!s)
            rc = -1;
        else
            set_error(s,
                      ": expected an object {name: server} or a list [{\"name\", "
                      "\"transport\"}], got %s",
                      type_name(value));
    }
    if (rc < 0)
        errinfo_set(err, ERR_NOMEM, "out of memory reading the servers of %s", path);
    return rc;
}

int registry_specs_add_text(struct registry_specs *specs, const char *path, const char *text,
                            registry_getenv_fn getenv_fn, struct errinfo *err)
{
    struct errinfo perr = {0};
    cJSON *root = jsonrpc_parse(text, strlen(text), &perr);
    const cJSON *v;
    int rc;

    v = cJSON_GetObjectItemCaseSensitive(root, "mcpServers");
    if (!v)
        v = cJSON_GetObjectItemCaseSensitive(root, "servers");
    if (!v) {
        struct registry_spec *s = add_spec(specs, path, "", "");

        cJSON_Delete(root);
        if (!s) {
            errinfo_set(err, ERR_NOMEM, "out of memory reading %s", path);
            return -1;
        }
        s->error = root || !perr.msg[0]
                       ? strfmt_alloc("%s: has no \"mcpServers\" or \"servers\" object; no "
                                      "server was read from it",
                                      path)
                       : strfmt_alloc("%s: not a JSON config file (%s); no server was read from "
                                      "it",
                                      path, perr.msg);
        return 0;
    }
    rc = registry_specs_add(specs, path, v->string, v, getenv_fn, err);
    cJSON_Delete(root);
    return rc;
}

int registry_specs_add_unread(struct registry_specs *specs, const char *path, const char *why,
                              struct errinfo *err)
{
    struct registry_spec *s = add_spec(specs, path, "", "");

    if (s)
        s->error = strdup(why);
    if (!s || !s->error) {
        errinfo_set(err, ERR_NOMEM, "out of memory reading %s", path);
        return -1;
    }
    return 0;
}

void registry_specs_cleanup(struct registry_specs *specs)
{
    for (size_t i = 0; i < specs->n; i++) {
        struct registry_spec *s = &specs->v[i];

        free(s->name);
        free(s->prefix);
        free(s->where);
        free(s->command);
        strv_free(&s->args);
        for (size_t k = 0; k < s->env.n; k++) /* tokens: do not leave them in freed memory */
            memset(s->env.v[k], 0, strlen(s->env.v[k]));
        strv_free(&s->env);
        free(s->cwd);
        free(s->url);
        for (size_t k = 0; k < s->headers.n; k++)
            memset(s->headers.v[k], 0, strlen(s->headers.v[k]));
        strv_free(&s->headers);
        free(s->shown.command);
        free(s->shown.cwd);
        free(s->shown.url);
        for (size_t k = 0; k < s->secrets.n; k++)
            memset(s->secrets.v[k], 0, strlen(s->secrets.v[k]));
        strv_free(&s->secrets);
        strv_free(&s->allow);
        strv_free(&s->deny);
        free(s->error);
        free(s->ignored);
    }
    free(specs->v);
    specs->v = NULL;
    specs->n = 0;
}
