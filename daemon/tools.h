/* daemon/tools.h - the tools the daemon runs itself (route "local"): a dispatch table from the
 * catalog name to a handler.
 *
 * A handler receives arguments that already passed schema_validate() against the tool's
 * catalog schema (types, required, enums, ranges are known good) and its call (call.h), whose
 * cancel token a long handler obeys and whose progress it reports; it applies the schema's
 * defaults for what is missing, and produces either a result (text, or serialized JSON) or a
 * tool failure in err, which the HTTP layer answers as 200 {"ok":false,"error":...}.
 * Thread-safety: any thread; handlers share only the vfs (itself any-thread). */
#ifndef DAEMON_TOOLS_H
#define DAEMON_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

struct vfs;
struct console;
struct proc;
struct bridge;
struct quota;
struct call;
struct events;
struct watch;
struct egress;
struct portfwd;
struct checkpoint;
struct registry;

/* The daemon's services, borrowed by every handler for the daemon's lifetime. A service that
 * this daemon does not run is NULL, and its tools fail with ERR_UNAVAILABLE. */
struct tools_ctx {
    struct vfs *vfs;         /* the workspace */
    struct console *console; /* the console ring (exec, Studio and daemon output) */
    struct proc *proc;       /* the exec engine and process registry */
    struct bridge *bridge;   /* the Roblox Studio bridge */
    struct events *events;   /* the event feed (events.h): what changed, for listeners */
    struct watch *watch;     /* resource watches (watch.h): subscribed resources */
    struct egress *egress;   /* the sandboxes' egress proxy (denials noted in exec results) */
    struct portfwd *portfwd; /* port forwards into the sandboxes (expose_port, exec ports) */
    struct checkpoint *checkpoints; /* the workspace's checkpoint store */
    struct registry *registry;      /* the external MCP servers (registry.h), or NULL */
    struct quota *quota;            /* the workspace quota, or NULL for none */
};

struct tools_result {
    char *data;        /* owned (free with tools_result_cleanup); NUL-terminated */
    size_t len;        /* bytes in data */
    bool is_json;      /* data is serialized JSON (else plain text, to be sent as a JSON string) */
    char *structured;  /* owned, or NULL: serialized JSON object with the same facts as a text
                          result (MCP structuredContent); the HTTP answer carries it as
                          "structured" beside "result" */
    char *call_result; /* owned, or NULL: an external server's whole CallToolResult (JSON), which
                          MCP clients get as it is (content of every type, structuredContent);
                          data is then its text, or the same JSON */
    bool is_error;     /* with call_result: the server said isError (a tool failure) */
};

void tools_result_cleanup(struct tools_result *r); /* safe on a zeroed struct */

typedef int (*tools_fn)(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                        struct tools_result *out, struct errinfo *err);

/* True when the daemon has a handler for this tool name. */
bool tools_has(const char *name);

/* Runs the tool. call is the call service's call (call.h: cancel token, progress), or NULL when
 * the tool runs outside it (unit tests); args is the validated arguments object (borrowed).
 * Returns 0 with *out filled, or -1 with err set (the tool failed; *out is left empty). An
 * unknown name is ERR_NOT_FOUND. */
int tools_call(const struct tools_ctx *ctx, struct call *call, const char *name, const cJSON *args,
               struct tools_result *out, struct errinfo *err);

/* ---- for tools_workspace.c and the unit test ---- */

/* The workspace tool handlers (tools_workspace.c). */
int tools_read_file(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                    struct tools_result *out, struct errinfo *err);
int tools_write_file(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                     struct tools_result *out, struct errinfo *err);
int tools_list_dir(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                   struct tools_result *out, struct errinfo *err);
int tools_remove(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                 struct tools_result *out, struct errinfo *err);
int tools_search(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                 struct tools_result *out, struct errinfo *err);

/* The exec tool handlers (tools_exec.c). */
int tools_exec(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
               struct tools_result *out, struct errinfo *err);
int tools_process_list(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                       struct tools_result *out, struct errinfo *err);
int tools_expose_port(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                      struct tools_result *out, struct errinfo *err);
/* tools_ports.c, for tools_exec.c: checks exec's "ports" (background only, no duplicates);
 * exposes each for a started process, returning [{port, url}] (owned) and one note line per
 * port in notes; adds "urls" to every entry of a process_list answer (-1: out of memory). */
int tools_ports_check(const cJSON *ports, bool background, struct errinfo *err);
cJSON *tools_ports_expose_all(const struct tools_ctx *ctx, uint64_t pid, const cJSON *ports,
                              char *notes, size_t notessz);
int tools_ports_add_urls(const struct tools_ctx *ctx, cJSON *list);
/* tools_checkpoints.c */
int tools_checkpoint(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                     struct tools_result *out, struct errinfo *err);
int tools_list_checkpoints(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                           struct tools_result *out, struct errinfo *err);
int tools_diff(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
               struct tools_result *out, struct errinfo *err);
int tools_restore_checkpoint(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                             struct tools_result *out, struct errinfo *err);
int tools_kill(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
               struct tools_result *out, struct errinfo *err);

/* Pure. The workspace as commands see it is /workspace: "/workspace" and "/workspace/x" name
 * "/" and "/x". Returns path itself, a pointer into it, or a static "/" (tools_exec.c). */
const char *tools_workspace_alias(const char *path);

/* The console tool handler (tools_console.c). */
int tools_console_logs(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                       struct tools_result *out, struct errinfo *err);

/* The Studio tools the daemon answers itself (tools_studio.c). */
int tools_list_studios(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                       struct tools_result *out, struct errinfo *err);
int tools_set_active_studio(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                            struct tools_result *out, struct errinfo *err);
int tools_get_studio_state(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                           struct tools_result *out, struct errinfo *err);
int tools_get_console_output(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                             struct tools_result *out, struct errinfo *err);
int tools_clear_console_output(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                               struct tools_result *out, struct errinfo *err);

/* The registry's tool (tools_registry.c): the external MCP servers' state. */
int tools_mcp_servers(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                      struct tools_result *out, struct errinfo *err);

/* Pure. Base64 (RFC 4648, padding optional, whitespace ignored) into an owned buffer
 * (free with free()); fails with ERR_INVALID naming the position of the first bad character. */
int tools_base64_decode(const char *in, size_t len, char **out, size_t *outlen,
                        struct errinfo *err);

/* Pure. Base64 with padding into an owned NUL-terminated buffer, or NULL (no memory). */
char *tools_base64_encode(const void *data, size_t len, size_t *outlen);

#endif /* DAEMON_TOOLS_H */
