/* daemon/registry.h - the outbound registry: the external MCP servers named in the user's
 * config file, each connected in the background (daemon/mcpclient.h), their tools, resources
 * and prompts served beside the daemon's own under namespaced names.
 *
 * Names: a tool is served as "<prefix>__<tool>" (the prefix is the server's name unless the
 * config sets "prefix"), every character outside [A-Za-z0-9_-] replaced by '_', at most 64
 * characters (a longer name is cut and ends in a hash of the whole), collisions resolved in a
 * fixed order (a built-in tool keeps its name; the later server's tool gets "_2", "_3"...) and
 * logged. The original name is what goes upstream. A call may also say "<server>/<tool>" or the
 * bare tool name when exactly one server has it. Prompts are named the same way; resources keep
 * their URIs, and a URI two servers share is served as "<prefix>+<uri>" for the later one.
 *
 * Only the config file adds servers: nothing here is reachable from a tool, an MCP method or an
 * HTTP endpoint that could add, change or start one.
 *
 * Thread-safety: every function may be called from any thread (internal lock). The listener
 * runs on a server's own thread with no registry lock held. */
#ifndef DAEMON_REGISTRY_H
#define DAEMON_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

struct catalog;
struct catalog_tool;
struct call;
struct console;
struct events;
struct proc;
struct tools_result;

#define REGISTRY_NAME_MAX        64    /* a served tool or prompt name */
#define REGISTRY_NAME_WARN       45    /* longer names break Claude Code's mcp__runbox__ prefix */
#define REGISTRY_SERVERS_MAX     64    /* servers one daemon connects */
#define REGISTRY_TIMEOUT_DEFAULT 60000 /* ms a request may take (per server "timeout_ms") */
#define REGISTRY_REDACT_MIN      4     /* shorter ${env:VAR} values are not taken out of messages */

/* ---- the config: pure parsing (registry_config.c) ---- */

enum registry_transport {
    REGISTRY_STDIO, /* a child process, JSON-RPC lines on its stdin/stdout */
    REGISTRY_HTTP,  /* Streamable HTTP; falls back to legacy SSE like the SDK clients */
    REGISTRY_SSE,   /* legacy HTTP+SSE (2024-11-05) */
    REGISTRY_WS     /* WebSocket, subprotocol "mcp", one message per text frame */
};

struct registry_strv {
    char **v; /* owned strings */
    size_t n;
};

struct registry_spec {
    char *name;   /* the config's name (owned) */
    char *prefix; /* owned: the sanitized prefix of its tool and prompt names */
    char *where;  /* owned: "<file>: mcpServers.<name>", for messages */
    enum registry_transport transport;
    bool enabled;
    bool sandbox; /* stdio: run inside the exec sandbox with the exec network policy */
    int timeout_ms;
    /* The transport's values with ${env:VAR} replaced: only for starting and connecting. A
     * message, a log line or a state shows the "shown" text and goes through registry_redact(),
     * never these (they may hold tokens). */
    char *command;                /* stdio */
    struct registry_strv args;    /* stdio */
    struct registry_strv env;     /* stdio: "NAME=value" */
    char *cwd;                    /* stdio, or NULL */
    char *url;                    /* remote; no space or control character */
    struct registry_strv headers; /* remote: "Name: value", a token and no control character */
    struct {
        char *command, *cwd, *url; /* owned: as written in the file, ${env:VAR} not replaced */
    } shown;
    struct registry_strv secrets; /* "${env:VAR}value" (VAR has no '}') of each ${env:VAR}
                                     replaced in the transport's keys whose value has
                                     REGISTRY_REDACT_MIN bytes or more, the longest first */
    struct registry_strv allow;   /* "tools": only these, when has_allow */
    bool has_allow;               /* "tools" was given: [] serves no tool */
    struct registry_strv deny;    /* "disabled_tools" */
    char *error;                  /* owned: why this entry cannot run (it is listed as failed), or
                                     NULL */
    char *ignored; /* owned: what of the entry runbox does not know and ignores ("comand"), as a
                      warning naming the keys it knows, or NULL; logged and listed */
};

struct registry_specs {
    struct registry_spec *v; /* owned */
    size_t n;
};

/* Looks up an environment variable for ${env:VAR} (getenv in the daemon, a table in tests). */
typedef const char *(*registry_getenv_fn)(const char *name);

/* Adds the servers of one config value: key is "mcpServers" or "servers" (an object of
 * name -> entry) or the list form [{"name", "transport":{"type",...}, ...}], as read from file
 * path. A bad entry is added with its error set (and logged by the caller); a bad value as a
 * whole (not an object or array) is one entry named after the key. Never fails except for
 * memory (-1, ERR_NOMEM). ${env:VAR} in any string is replaced with getenv_fn(VAR). */
int registry_specs_add(struct registry_specs *specs, const char *path, const char *key,
                       const cJSON *value, registry_getenv_fn getenv_fn, struct errinfo *err);

/* Adds the servers of a whole file's text (a Claude Desktop, Cursor or VS Code config: its
 * "mcpServers" or "servers" member; other members are ignored). A file that is not JSON, or has
 * neither member, is one entry with the error. Memory is the only failure. */
int registry_specs_add_text(struct registry_specs *specs, const char *path, const char *text,
                            registry_getenv_fn getenv_fn, struct errinfo *err);

/* A file that could not be read at all (missing, unreadable, too large): one entry with the
 * error why, as for a file that is not JSON. Memory is the only failure. */
int registry_specs_add_unread(struct registry_specs *specs, const char *path, const char *why,
                              struct errinfo *err);

void registry_specs_cleanup(struct registry_specs *specs);

/* Pure: replaces, in the string in buf (size bytes), every value s took from ${env:VAR} for its
 * transport with the text "${env:VAR}", so that a message about the server (an error of
 * libcurl or of the server's stderr that echoes a host, a path or an argument) shows what the
 * file says, not the token; so is the start of a value (REGISTRY_REDACT_MIN bytes or more) that
 * ends the string, where a message was cut. What no longer fits in size is cut off. */
void registry_redact(const struct registry_spec *s, char *buf, size_t size);

/* Pure: the served form of a name part: [A-Za-z0-9_-] kept, any other character '_' (one for a
 * character of several UTF-8 bytes); an empty result is "_". Writes at most size-1 bytes into
 * buf. */
void registry_sanitize(const char *in, char *buf, size_t size);

/* Pure: "<prefix>__<name>" sanitized and, when over REGISTRY_NAME_MAX, cut and ended with an
 * 8-hex-digit hash of the whole, into buf (at least REGISTRY_NAME_MAX + 1 bytes). */
void registry_served_name(const char *prefix, const char *name, char *buf, size_t size);

/* ---- the running registry ---- */

struct registry_options {
    struct registry_specs *specs;  /* taken: its entries are moved out (left empty) */
    const struct catalog *builtin; /* the daemon's own tools: their names win */
    struct console *console;       /* stderr of stdio servers; borrowed */
    struct events *events;         /* list changes are published here; borrowed */
    struct proc *proc;             /* the exec sandbox, for "sandbox": true; borrowed */
    const char *bwrap;             /* the bwrap binary, or NULL */
    bool allow_network;            /* the exec network policy, for sandboxed servers */
    unsigned parallel_starts;      /* stdio servers starting at once; 0: one per core */
};

struct registry;      /* opaque */
struct registry_hold; /* a held snapshot of the served external tools */

/* Returns an owned registry (registry_free) or NULL with err. Nothing connects yet. */
struct registry *registry_new(const struct registry_options *opt, struct errinfo *err);

/* Starts every enabled server's connection, each on its own thread, in parallel (stdio servers
 * through a start gate, startgate.h); returns at once. */
void registry_start(struct registry *r);

/* Stops every server (children are terminated) and fails what waits on them. Idempotent. */
void registry_shutdown(struct registry *r);

void registry_free(struct registry *r); /* after registry_shutdown; NULL is a no-op */

/* fn(arg, lists) runs after the external tools (EVENTS_LIST_TOOLS), prompts or resources
 * changed, before the change is published on the event feed. One listener. */
void registry_set_listener(struct registry *r, void (*fn)(void *arg, unsigned lists), void *arg);

/* The external tool a call names (exact, "<server>/<tool>", or bare when unambiguous), with a
 * hold on it (registry_unhold when the call ends). NULL with ERR_NOT_FOUND and an empty message
 * when nothing matches; ERR_NOT_FOUND with a message for an ambiguous bare name or a server that
 * is not ready. */
const struct catalog_tool *registry_find_tool(struct registry *r, const char *name,
                                              struct registry_hold **hold, struct errinfo *err);

/* The served external tools now, held (registry_unhold). Never NULL while r lives. */
const struct catalog *registry_tools(struct registry *r, struct registry_hold **hold);

void registry_unhold(struct registry_hold *h); /* NULL is a no-op */

/* Runs an external tool for call c (cancel and progress reach the upstream). 0 with *out (the
 * result as JSON: the upstream's CallToolResult, out->is_json), or -1 with err naming the
 * server and what happened. */
int registry_run(struct registry *r, struct call *c, const struct catalog_tool *tool,
                 const cJSON *args, struct tools_result *out, struct errinfo *err);

/* How many enabled servers are connecting (starting, or between their handshake and the first
 * snapshot that serves their tools): 0 once every one is ready or failed. */
size_t registry_connecting(struct registry *r);

/* {"servers":[{name, state, transport, protocol, tools, resources, prompts, last_error,
 * last_error_at, restarts, ...}]} for GET /mcp-servers and the mcp_servers tool. Owned. */
cJSON *registry_status_json(struct registry *r);

/* {"configured":N,"ready":N,"servers":{name:state,...}} for /health. Owned. */
cJSON *registry_health_json(struct registry *r);

/* ---- resources and prompts of the external servers ---- */

/* Appends the external prompts to arr (prompts/list entries, served names). */
void registry_list_prompts(struct registry *r, cJSON *arr);

/* prompts/get of a served prompt name: 1 with *out (owned result) or -1 with err when the
 * registry has the name, 0 when it does not. */
int registry_get_prompt(struct registry *r, const char *name, const cJSON *args, cJSON **out,
                        struct errinfo *err);

/* Appends the external resources to arr (served URIs). */
void registry_list_resources(struct registry *r, cJSON *arr);

/* resources/read of a served URI: 1 with *out, -1 with err, 0 when no server has it. */
int registry_read_resource(struct registry *r, const char *uri, cJSON **out, struct errinfo *err);

#endif /* DAEMON_REGISTRY_H */
