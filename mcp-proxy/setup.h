/* mcp-proxy/setup.h - `runbox setup CLIENT`: the runbox entry in an MCP client's own config
 * file, in that client's shape, keeping everything else the file holds.
 *
 * setup_clients.c knows the clients: where each keeps its file on Linux, macOS and Windows and
 * the shape of its entry (docs/clients.md cites where each came from). setup_edit.c changes a
 * file's text in place: for the JSON family (JSON with comments and trailing commas, as VS Code,
 * Zed and opencode allow) it finds the object the entry belongs in and splices the new entry in,
 * so that every other byte (comments, order, indentation) stays as it was; for Codex's TOML it
 * replaces or appends the entry's table. Both are pure and unit-tested (test_setup); the I/O
 * (reading, the backup, the atomic write) is in cli_setup.c.
 *
 * Thread-safety: pure functions; any thread. */
#ifndef MCP_PROXY_SETUP_H
#define MCP_PROXY_SETUP_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

#define SETUP_FILE_MAX ((size_t)16 << 20) /* the largest config file we edit */
#define SETUP_PATH_MAX 4096

enum setup_format { SETUP_JSON, SETUP_TOML };
enum setup_os { SETUP_LINUX, SETUP_MACOS, SETUP_WINDOWS };

struct setup_client; /* opaque; the table is static */

/* The client named name ("claude-desktop", "vscode", ...), or NULL. */
const struct setup_client *setup_client_find(const char *name);
size_t setup_client_count(void);
const struct setup_client *setup_client_at(size_t i);
const char *setup_client_name(const struct setup_client *c);  /* "vscode" */
const char *setup_client_title(const struct setup_client *c); /* "VS Code" */
enum setup_format setup_client_format(const struct setup_client *c);

/* The environment the paths are made of (any may be NULL or ""). */
struct setup_env {
    const char *home;            /* HOME (USERPROFILE on Windows) */
    const char *xdg_config_home; /* XDG_CONFIG_HOME */
    const char *appdata;         /* %APPDATA% */
    const char *codex_home;      /* CODEX_HOME */
};

/* The client's user-wide config file on os, into out. Returns 0, or -1 with err when the
 * environment lacks what the path needs (HOME, APPDATA) or out is too small. Pure. */
int setup_config_path(const struct setup_client *c, enum setup_os os, const struct setup_env *env,
                      char *out, size_t n, struct errinfo *err);

/* What the entry says. */
struct setup_entry {
    const char *name;    /* the entry's key, "runbox" */
    const char *command; /* absolute path of runbox */
    const char *const *env_keys;
    const char *const *env_values;
    size_t nenv;
};

/* The entry in c's shape: the JSON value put under the path setup_client_json_path() gives, or
 * for TOML the table's lines. Owned (cJSON_Delete / free). */
cJSON *setup_entry_json(const struct setup_client *c, const struct setup_entry *e);

/* The command the client's own CLI offers for the same change, or NULL when it has none.
 * Owned (free). */
char *setup_client_cli_hint(const struct setup_client *c, const struct setup_entry *e);

/* What to tell the user after the change ("Restart Cursor..."). Borrowed. */
const char *setup_client_next_step(const struct setup_client *c);

/* ---- editing (setup_edit.c) ---- */

/* Returns the new text of a JSON-family config file (text of len bytes; empty or only
 * whitespace means a new file) with entry as the value at keys[0].keys[1]...keys[n-1], made
 * where missing, replacing what was there, all else untouched. Comments and trailing commas
 * are accepted. Owned (free), or NULL with err: a syntax error (with line and column), or a
 * value on the way that is not an object. */
char *setup_json_put(const char *text, size_t len, const char *const *keys, size_t n,
                     const cJSON *entry, struct errinfo *err);

/* True when the file's text holds an object at keys[0].keys[1]... (false also when the text
 * does not parse). */
bool setup_json_has_object(const char *text, size_t len, const char *const *keys, size_t n);

/* The object path the entry goes to in this file's text: the client's usual one, or the one
 * the file already uses (opencode's newer "mcp" -> "servers" nesting). keys gets at most 4
 * borrowed names; returns how many. */
size_t setup_client_json_path(const struct setup_client *c, const char *text, size_t len,
                              const char *name, const char **keys);

/* The same for Codex's config.toml: the [mcp_servers.<name>] table (and its sub-tables)
 * replaced, or appended. Refuses (err) a file that defines the server another way (an inline
 * table or dotted keys) rather than produce a duplicate key. Owned (free), or NULL with err. */
char *setup_toml_put(const char *text, size_t len, const struct setup_entry *e,
                     struct errinfo *err);

/* A short line diff of old and new (the changed lines with "-" and "+", a few lines of context
 * with " "), for --dry-run. Owned (free). */
char *setup_diff(const char *old, size_t olen, const char *new_, size_t nlen);

#endif /* MCP_PROXY_SETUP_H */
