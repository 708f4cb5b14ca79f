/* mcp-proxy/setup_clients.c - the MCP clients `runbox setup` knows: where each keeps its
 * user-wide configuration on Linux, macOS and Windows, and the shape of a stdio server's entry
 * there. docs/clients.md gives, for each, the documentation these facts come from. Pure. */
#include "setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strfmt.h"

/* Where a path starts. */
enum base {
    B_HOME,       /* ~ (USERPROFILE on Windows) */
    B_XDG_CONFIG, /* $XDG_CONFIG_HOME, else ~/.config */
    B_MAC_APPSUP, /* ~/Library/Application Support */
    B_APPDATA,    /* %APPDATA% */
    B_CODEX,      /* $CODEX_HOME, else ~/.codex */
};

struct place {
    enum base base;
    const char *rest; /* with '/' separators; turned into '\' on Windows */
};

enum shape {
    SHAPE_MCPSERVERS,  /* "mcpServers": {name: {command, args, env}} (Claude Desktop, ...) */
    SHAPE_CLAUDE_CODE, /* the same with "type": "stdio" */
    SHAPE_VSCODE,      /* "servers": {name: {type: "stdio", command, args, env}} */
    SHAPE_ZED,         /* "context_servers": {name: {source: "custom", command, args, env}} */
    SHAPE_OPENCODE,    /* "mcp": {name: {type: "local", command: [..], enabled, environment}} */
    SHAPE_CODEX,       /* [mcp_servers.name] command, args, [mcp_servers.name.env] */
};

/* The client's own command for adding a server, when it has one. */
enum hint { HINT_NONE, HINT_CLAUDE, HINT_CODEX, HINT_GEMINI, HINT_VSCODE };

struct setup_client {
    const char *name, *title;
    enum setup_format format;
    enum shape shape;
    struct place linux_, macos, windows;
    const char *next; /* what to do after the change */
    enum hint hint;
};

static const struct setup_client clients[] = {
    {"claude-desktop",
     "Claude Desktop",
     SETUP_JSON,
     SHAPE_MCPSERVERS,
     {B_XDG_CONFIG, "Claude/claude_desktop_config.json"},
     {B_MAC_APPSUP, "Claude/claude_desktop_config.json"},
     {B_APPDATA, "Claude/claude_desktop_config.json"},
     "Quit Claude Desktop completely and start it again; runbox's tools appear in the chat's "
     "tools menu.",
     HINT_NONE},
    {"claude-code",
     "Claude Code",
     SETUP_JSON,
     SHAPE_CLAUDE_CODE,
     {B_HOME, ".claude.json"},
     {B_HOME, ".claude.json"},
     {B_HOME, ".claude.json"},
     "Start a new Claude Code session; /mcp shows runbox (user scope: every project).",
     HINT_CLAUDE},
    {"cursor",
     "Cursor",
     SETUP_JSON,
     SHAPE_MCPSERVERS,
     {B_HOME, ".cursor/mcp.json"},
     {B_HOME, ".cursor/mcp.json"},
     {B_HOME, ".cursor/mcp.json"},
     "In Cursor's settings, under MCP, check that runbox is listed and switched on.",
     HINT_NONE},
    {"vscode",
     "VS Code",
     SETUP_JSON,
     SHAPE_VSCODE,
     {B_XDG_CONFIG, "Code/User/mcp.json"},
     {B_MAC_APPSUP, "Code/User/mcp.json"},
     {B_APPDATA, "Code/User/mcp.json"},
     "In VS Code, run \"MCP: List Servers\" and start runbox; its tools are in Copilot Chat's "
     "agent mode.",
     HINT_VSCODE},
    {"windsurf",
     "Windsurf",
     SETUP_JSON,
     SHAPE_MCPSERVERS,
     {B_HOME, ".codeium/windsurf/mcp_config.json"},
     {B_HOME, ".codeium/windsurf/mcp_config.json"},
     {B_HOME, ".codeium/windsurf/mcp_config.json"},
     "In Windsurf, open Cascade's MCP panel and press Refresh.",
     HINT_NONE},
    {"zed",
     "Zed",
     SETUP_JSON,
     SHAPE_ZED,
     {B_XDG_CONFIG, "zed/settings.json"},
     {B_HOME, ".config/zed/settings.json"},
     {B_APPDATA, "Zed/settings.json"},
     "Zed reloads its settings by itself; the Agent Panel's settings list runbox.",
     HINT_NONE},
    {"continue",
     "Continue",
     SETUP_JSON,
     SHAPE_MCPSERVERS,
     {B_HOME, ".continue/mcpServers/runbox.json"},
     {B_HOME, ".continue/mcpServers/runbox.json"},
     {B_HOME, ".continue/mcpServers/runbox.json"},
     "Reload the editor window; runbox's tools are used in Continue's agent mode.",
     HINT_NONE},
    {"opencode",
     "OpenCode",
     SETUP_JSON,
     SHAPE_OPENCODE,
     {B_XDG_CONFIG, "opencode/opencode.json"},
     {B_HOME, ".config/opencode/opencode.json"},
     {B_HOME, ".config/opencode/opencode.json"},
     "Start opencode again; `opencode mcp list` shows whether runbox connected.",
     HINT_NONE},
    {"codex",
     "Codex",
     SETUP_TOML,
     SHAPE_CODEX,
     {B_CODEX, "config.toml"},
     {B_CODEX, "config.toml"},
     {B_CODEX, "config.toml"},
     "Start Codex again; /mcp shows runbox.",
     HINT_CODEX},
    {"gemini-cli",
     "Gemini CLI",
     SETUP_JSON,
     SHAPE_MCPSERVERS,
     {B_HOME, ".gemini/settings.json"},
     {B_HOME, ".gemini/settings.json"},
     {B_HOME, ".gemini/settings.json"},
     "Start Gemini CLI again; /mcp shows runbox.",
     HINT_GEMINI},
};

#define NCLIENTS (sizeof(clients) / sizeof(clients[0]))

const struct setup_client *setup_client_find(const char *name)
{
    for (size_t i = 0; i < NCLIENTS; i++)
        if (strcmp(clients[i].name, name) == 0)
            return &clients[i];
    return NULL;
}

size_t setup_client_count(void)
{
    return NCLIENTS;
}

const struct setup_client *setup_client_at(size_t i)
{
    return i < NCLIENTS ? &clients[i] : NULL;
}

const char *setup_client_name(const struct setup_client *c)
{
    return c->name;
}

const char *setup_client_title(const struct setup_client *c)
{
    return c->title;
}

enum setup_format setup_client_format(const struct setup_client *c)
{
    return c->format;
}

const char *setup_client_next_step(const struct setup_client *c)
{
    return c->next;
}

/* ---- paths ---- */

static bool set(const char *s)
{
    return s && *s;
}

int setup_config_path(const struct setup_client *c, enum setup_os os, const struct setup_env *env,
                      char *out, size_t n, struct errinfo *err)
{
    const struct place *p = os == SETUP_LINUX   ? &c->linux_
                            : os == SETUP_MACOS ? &c->macos
                                                : &c->windows;
    const char *home = env->home;
    char sep = os == SETUP_WINDOWS ? '\\' : '/';
    int len = -1;

    if (!set(home) && !(p->base == B_APPDATA && set(env->appdata)) &&
        !(p->base == B_XDG_CONFIG && set(env->xdg_config_home)) &&
        !(p->base == B_CODEX && set(env->codex_home))) {
        errinfo_set(err, ERR_INVALID, "%s is not set; it says where %s keeps its configuration",
                    os == SETUP_WINDOWS ? "USERPROFILE" : "HOME", c->title);
        return -1;
    }
    switch (p->base) {
    case B_HOME:
        len = snprintf(out, n, "%s/%s", home, p->rest);
        break;
    case B_XDG_CONFIG:
        /* XDG says a relative XDG_CONFIG_HOME is to be ignored. */
        if (set(env->xdg_config_home) && env->xdg_config_home[0] == '/')
            len = snprintf(out, n, "%s/%s", env->xdg_config_home, p->rest);
        else
            len = snprintf(out, n, "%s/.config/%s", home, p->rest);
        break;
    case B_MAC_APPSUP:
        len = snprintf(out, n, "%s/Library/Application Support/%s", home, p->rest);
        break;
    case B_APPDATA:
        if (set(env->appdata))
            len = snprintf(out, n, "%s/%s", env->appdata, p->rest);
        else
            len = snprintf(out, n, "%s/AppData/Roaming/%s", home, p->rest);
        break;
    case B_CODEX:
        if (set(env->codex_home))
            len = snprintf(out, n, "%s/%s", env->codex_home, p->rest);
        else
            len = snprintf(out, n, "%s/.codex/%s", home, p->rest);
        break;
    }
    if (len < 0 || (size_t)len >= n) {
        errinfo_set(err, ERR_TOO_LARGE, "the path of %s's configuration is too long", c->title);
        return -1;
    }
    if (sep == '\\')
        for (char *s = out; *s; s++)
            if (*s == '/')
                *s = '\\';
    return 0;
}

/* ---- the entry ---- */

static cJSON *env_object(const struct setup_entry *e)
{
    cJSON *o = cJSON_CreateObject();

    for (size_t i = 0; o && i < e->nenv; i++)
        cJSON_AddStringToObject(o, e->env_keys[i], e->env_values[i]);
    return o;
}

cJSON *setup_entry_json(const struct setup_client *c, const struct setup_entry *e)
{
    cJSON *o = cJSON_CreateObject(), *cmd;

    if (!o)
        return NULL;
    switch (c->shape) {
    case SHAPE_OPENCODE:
        cJSON_AddStringToObject(o, "type", "local");
        cmd = cJSON_AddArrayToObject(o, "command");
        cJSON_AddItemToArray(cmd, cJSON_CreateString(e->command));
        cJSON_AddBoolToObject(o, "enabled", true);
        if (e->nenv)
            cJSON_AddItemToObject(o, "environment", env_object(e));
        return o;
    case SHAPE_VSCODE:
    case SHAPE_CLAUDE_CODE:
        cJSON_AddStringToObject(o, "type", "stdio");
        break;
    case SHAPE_ZED:
        cJSON_AddStringToObject(o, "source", "custom");
        break;
    case SHAPE_MCPSERVERS:
    case SHAPE_CODEX:
        break;
    }
    cJSON_AddStringToObject(o, "command", e->command);
    cJSON_AddArrayToObject(o, "args");
    if (e->nenv || c->shape == SHAPE_ZED)
        cJSON_AddItemToObject(o, "env", env_object(e));
    return o;
}

size_t setup_client_json_path(const struct setup_client *c, const char *text, size_t len,
                              const char *name, const char **keys)
{
    switch (c->shape) {
    case SHAPE_VSCODE:
        keys[0] = "servers";
        break;
    case SHAPE_ZED:
        keys[0] = "context_servers";
        break;
    case SHAPE_OPENCODE: {
        /* Newer opencode nests servers one level deeper, under mcp.servers: follow the file when
         * it already does. */
        const char *const v2[2] = {"mcp", "servers"};

        keys[0] = "mcp";
        if (setup_json_has_object(text, len, v2, 2)) {
            keys[1] = "servers";
            keys[2] = name;
            return 3;
        }
        break;
    }
    case SHAPE_MCPSERVERS:
    case SHAPE_CLAUDE_CODE:
    case SHAPE_CODEX:
        keys[0] = "mcpServers";
        break;
    }
    keys[1] = name;
    return 2;
}

/* A word for a POSIX shell: as is when safe, else in single quotes. Owned. */
static char *shell_word(const char *s)
{
    size_t n = strlen(s), extra = 0;
    char *out, *p;

    if (n &&
        strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-=:@,+") == n)
        return strdup(s);
    for (size_t i = 0; i < n; i++)
        extra += s[i] == '\'' ? 3 : 0;
    out = malloc(n + extra + 3);
    if (!out)
        return NULL;
    p = out;
    *p++ = '\'';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'') {
            memcpy(p, "'\\''", 4);
            p += 4;
        } else {
            *p++ = s[i];
        }
    }
    *p++ = '\'';
    *p = '\0';
    return out;
}

char *setup_client_cli_hint(const struct setup_client *c, const struct setup_entry *e)
{
    char *cmd = shell_word(e->command), *name = shell_word(e->name), *envs = strdup(""), *out;
    const char *flag = c->hint == HINT_CLAUDE ? "-e" : "--env";

    for (size_t i = 0; envs && i < e->nenv; i++) {
        char *kv = strfmt_alloc("%s=%s", e->env_keys[i], e->env_values[i]);
        char *w = kv ? shell_word(kv) : NULL;
        char *next = w ? strfmt_alloc("%s%s %s ", envs, flag, w) : NULL;

        free(kv);
        free(w);
        free(envs);
        envs = next;
    }
    out = NULL;
    if (cmd && name && envs) {
        switch (c->hint) {
        case HINT_CLAUDE:
            out = strfmt_alloc("claude mcp add --scope user %s%s -- %s", envs, name, cmd);
            break;
        case HINT_CODEX:
            out = strfmt_alloc("codex mcp add %s%s -- %s", envs, name, cmd);
            break;
        case HINT_GEMINI:
            out = strfmt_alloc("gemini mcp add --scope user %s%s %s", envs, name, cmd);
            break;
        case HINT_VSCODE: {
            cJSON *o = setup_entry_json(c, e);
            char *json, *w;

            cJSON_AddStringToObject(o, "name", e->name);
            json = cJSON_PrintUnformatted(o);
            w = json ? shell_word(json) : NULL;
            out = w ? strfmt_alloc("code --add-mcp %s", w) : NULL;
            free(w);
            cJSON_free(json);
            cJSON_Delete(o);
            break;
        }
        case HINT_NONE:
            break;
        }
    }
    free(cmd);
    free(name);
    free(envs);
    return out;
}
