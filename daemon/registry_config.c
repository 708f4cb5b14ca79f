/* daemon/registry_config.c - the external servers of the config files (see registry.h): the
 * Claude Desktop shape {"mcpServers": {name: entry}}, VS Code's {"servers": {...}}, and the list
 * form [{"name", "transport": {"type", ...}}], with ${env:VAR} in any string.
 *
 * Nothing here fails the daemon: an entry that cannot run is kept with its error, so that the
 * daemon starts with the rest, logs what it skipped, and lists the entry as failed in
 * /mcp-servers with the message that names the file and the key. Pure: no I/O. */
#include "registry.h"

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

/* An owned copy of text with every ${env:VAR} replaced; NULL with the spec's error set. */
static char *expand(struct ctx *x, const char *key, const char *text)
{
    size_t cap = strlen(text) + 1, len = 0;
    char *out = malloc(cap);
    const char *p = text;

    while (out && *p) {
        const char *end, *val;
        char var[256];
        size_t vl;

        if (strncmp(p, "${env:", 6) != 0 || !(end = strchr(p + 6, '}'))) {
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
        snprintf(var, sizeof(var), "%.*s", (int)(end - p - 6), p + 6);
        val = x->getenv_fn ? x->getenv_fn(var) : NULL;
        if (!val) {
            set_error(x->s,
                      ".%s: ${env:%s} is not set in runboxd's environment; set it, or put "
                      "the value in the file",
                      key, var);
            free(out);
            return NULL;
        }
        vl = strnlen(val, ENV_VALUE_MAX);
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

/* An object of strings ("env" as NAME=value, "headers" as "Name: value"). */
static void get_pairs(struct ctx *x, const cJSON *obj, const char *key, const char *sep,
                      struct registry_strv *sv)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key), *e;

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
        if (!e->string[0] || strpbrk(e->string, sep[0] == '=' ? "=" : ":\r\n") ||
            strpbrk(e->valuestring, "\r\n")) {
            set_error(x->s, ".%s: not a usable %s", sub, sep[0] == '=' ? "variable" : "header");
            return;
        }
        val = expand(x, sub, e->valuestring);
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
    get_strings(x, obj, "args", &s->args);
    get_pairs(x, obj, "env", "=", &s->env);
    s->cwd = get_string(x, obj, "cwd", true);
    s->url = get_string(x, obj, "url", true);
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
    } else if (s->url) {
        s->transport = strncmp(s->url, "ws://", 5) == 0 || strncmp(s->url, "wss://", 6) == 0
                           ? REGISTRY_WS
                           : REGISTRY_HTTP;
    } else {
        s->transport = REGISTRY_STDIO;
    }
    if (s->error)
        return;
    if (s->transport == REGISTRY_STDIO && !s->command)
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
    } else {
        parse_transport(&x, entry, "type");
    }
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
        strv_free(&s->allow);
        strv_free(&s->deny);
        free(s->error);
    }
    free(specs->v);
    specs->v = NULL;
    specs->n = 0;
}
