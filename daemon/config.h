/* daemon/config.h - runboxd's settings: command-line flags, environment, the JSON config file and
 * the defaults, merged with the precedence flags > environment > file > defaults.
 *
 * The parsing functions are pure (no I/O; the environment and the file text are passed in) so
 * the unit test can drive every path. config_load() is the one function that reads the file.
 * A config error is ERR_INVALID with a one-line message that names the source (the flag, or the
 * file and key) and what is accepted; runboxd prints it and exits 2.
 * Thread-safety: a struct config belongs to its caller. */
#ifndef DAEMON_CONFIG_H
#define DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "errinfo.h"
#include "exec.h"
#include "log.h"
#include "netpolicy.h"

#define CONFIG_DEFAULT_PORT 7766
#define CONFIG_DEFAULT_BIND "127.0.0.1"
#define CONFIG_BIND_MAX     64

/* The environment variables runboxd looks at, captured by the caller (any may be NULL). */
struct config_env {
    const char *runbox_log;      /* RUNBOX_LOG */
    const char *runbox_token;    /* RUNBOX_TOKEN: the token itself, never logged */
    const char *xdg_data_home;   /* XDG_DATA_HOME */
    const char *xdg_config_home; /* XDG_CONFIG_HOME */
    const char *xdg_cache_home;  /* XDG_CACHE_HOME */
    bool root;                   /* runboxd runs as root (geteuid() == 0) */
    const char *home;            /* HOME */
};

/* Fills env from getenv(). The pointers are borrowed from the process environment. */
void config_env_from_process(struct config_env *env);

struct config {
    int port;                   /* 0 = any free port */
    char bind[CONFIG_BIND_MAX]; /* a numeric IPv4 or IPv6 address */
    char *workspace;            /* owned: a host directory or ":memory:" */
    char *config_file;          /* owned: the file the settings were read from, or NULL */
    bool allow_network;         /* net.mode == NETPOLICY_FULL */
    struct netpolicy net;       /* --network, --allow-domain, "network": {"mode", "allow"} */
    char *cache_dir;            /* owned: npm's and pip's caches for exec (npm/, pip/), or NULL */
    char *checkpoint_dir;       /* owned: the checkpoint store, or NULL for the default
                                   (config_checkpoint_dir) */
    unsigned checkpoint_keep;   /* most checkpoints kept (--checkpoint-keep, default 50) */
    enum log_level log_level;
    char *user;       /* owned: the account to drop to when started as root, or NULL */
    bool fsync;       /* fsync on write (default true; --no-fsync turns it off) */
    bool cgroup;      /* cgroups for the sandboxes (default true; --no-cgroup turns it off) */
    char *token_file; /* owned, or NULL */
    char *token;      /* owned: from RUNBOX_TOKEN (when no --token-file); never logged */
    char *tools;      /* owned: the tool profile (--tools, "tools"), or NULL for every tool */
    bool show_help;   /* --help: print config_usage() and exit 0 */
    bool show_version;
    const char *home;        /* borrowed from config_init's env: expands "~/" in the file's paths */
    struct exec_limits exec; /* --exec-<key> flags, "exec_<key>" file keys (exec.h) */
    /* The HTTP server and its MCP endpoints (--http-threads, --http-head-timeout-ms,
     * --http-body-timeout-ms, --mcp-sessions, --mcp-session-idle-s; file keys the same with
     * underscores). */
    int http_threads;         /* civetweb workers: every open stream holds one */
    int http_head_timeout_ms; /* a request's head must arrive within (--http-head-timeout-ms) */
    int http_body_timeout_ms; /* its body within, after the head (--http-body-timeout-ms) */
    int mcp_sessions;         /* MCP sessions open at once (Streamable HTTP, SSE, WebSocket) */
    int mcp_session_idle_s;   /* an unused Streamable HTTP session expires after this */
    int mcp_parallel_starts; /* stdio MCP servers starting at once; 0: one per core (startgate.h) */
    /* External MCP servers (registry.h): the file's "mcpServers" and "servers" values as they
     * were (checked by the registry, which skips a bad entry and starts the rest), and the
     * --mcp-config files (Claude Desktop, Cursor, VS Code configs, read as they are). */
    cJSON *mcp_servers; /* owned: {"mcpServers": ..., "servers": ...}, or NULL */
    char **mcp_configs; /* owned paths */
    size_t nmcp_configs;
    /* --workspace-quota-mb, file key workspace_quota_mb: MiB the workspace may take on disk;
     * 0 = no quota; -1 (unset) = the default for the kind of workspace (quota.h). */
    int workspace_quota_mb;
};

#define CONFIG_HTTP_THREADS_DEFAULT         320
#define CONFIG_HTTP_HEAD_TIMEOUT_MS_DEFAULT 10000
#define CONFIG_HTTP_BODY_TIMEOUT_MS_DEFAULT 30000
#define CONFIG_MCP_SESSIONS_DEFAULT         256
#define CONFIG_MCP_IDLE_S_DEFAULT           3600

/* Sets the defaults (workspace from env, config file path from env). Cannot fail except for
 * memory; returns 0 or -1 (ERR_NOMEM). Release with config_cleanup(). */
int config_init(struct config *cfg, const struct config_env *env, struct errinfo *err);

/* Frees the owned strings; safe on a zeroed or cleaned struct. */
void config_cleanup(struct config *cfg);

/* Pure. Applies the settings in the JSON text of a config file (named path in messages) onto cfg.
 * Unknown keys, wrong types and malformed JSON fail with ERR_INVALID. */
int config_apply_file(struct config *cfg, const char *path, const char *text, struct errinfo *err);

/* Pure. Applies the environment (RUNBOX_LOG, RUNBOX_TOKEN) onto cfg. A RUNBOX_LOG that is not a
 * level is ignored here (log_init() already warned about it). */
int config_apply_env(struct config *cfg, const struct config_env *env, struct errinfo *err);

/* Pure. Applies argv[1..argc) onto cfg ("--port N" and "--port=N" both work). */
int config_apply_args(struct config *cfg, int argc, char *const argv[], struct errinfo *err);

/* Pure. Finds the config file argv names (--config FILE), or NULL. Borrowed from argv. Fails
 * only when --config has no value. */
int config_find_file_arg(int argc, char *const argv[], const char **out, struct errinfo *err);

/* Pure. Checks the merged settings (e.g. a non-loopback bind needs a token). */
int config_validate(const struct config *cfg, bool has_token, struct errinfo *err);

/* True when addr (as in cfg->bind) is a loopback address (127.0.0.0/8 or ::1). Pure. */
bool config_is_loopback(const char *addr);

/* The whole sequence: defaults, the file (the --config FILE, which must exist, or the default
 * path, which may be missing), the environment, the flags. Reads one file; otherwise pure. */
int config_load(struct config *cfg, int argc, char *const argv[], const struct config_env *env,
                struct errinfo *err);

/* Reads the token from cfg->token_file into cfg->token when a token file is set (it wins over
 * RUNBOX_TOKEN only when it came from a flag; see config_load). Trailing whitespace is dropped;
 * an empty or unreadable file fails with ERR_INVALID naming the file. */
int config_read_token(struct config *cfg, struct errinfo *err);

/* Pure. The default checkpoint store of a workspace: "<data>/runbox/checkpoints/<name>-<hash>",
 * <name> the workspace's last component and <hash> 16 hex digits of its whole path, so two
 * workspaces never share a store. Owned, or NULL without XDG_DATA_HOME and HOME. */
char *config_checkpoint_dir(const struct config_env *env, const char *workspace);

/* The --help text. Static storage. */
const char *config_usage(void);

#endif /* DAEMON_CONFIG_H */
