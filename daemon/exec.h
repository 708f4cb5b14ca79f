/* daemon/exec.h - the pure parts of the exec engine: the limits and their settings, the bwrap
 * command line, the environment given to commands, and the result of a run as text and JSON.
 *
 * Nothing here does I/O, so the unit test drives every path; proc.c runs what this builds.
 * Thread-safety: pure functions; a struct belongs to its caller. */
#ifndef DAEMON_EXEC_H
#define DAEMON_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

#define EXEC_ENV_MAX       64          /* most variables in the env argument */
#define EXEC_ENV_NAME_MAX  128         /* bytes of one variable name */
#define EXEC_ENV_VALUE_MAX (32u << 10) /* bytes of one value */
#define EXEC_WORKSPACE     "/workspace"
#define EXEC_PROXY_URL     "http://127.0.0.1:3128"
/* Most top-level workspace entries linked at the sandbox's root (/hello.js -> workspace/hello.js);
 * entries past this are reachable only under /workspace. */
#define EXEC_ROOT_LINKS_MAX 1024

/* The limits of every run. Each has a default, a daemon flag "--exec-<key>" (with '-' for '_')
 * and a config file key "exec_<key>"; exec_limits_keys() lists the keys. */
struct exec_limits {
    uint32_t timeout_ms;     /* timeout_ms: wall clock of a run without timeout_ms (60 s) */
    uint32_t timeout_max_ms; /* timeout_max_ms: the most a call may ask for (110 s: below the
                                proxy's 120 s per call) */
    uint32_t cpu_s;          /* cpu_s: CPU seconds per process (RLIMIT_CPU) */
    uint32_t memory_mb;      /* memory_mb: data memory per process (RLIMIT_DATA) */
    uint32_t procs;          /* procs: processes (and threads) in one sandbox */
    uint32_t file_size_mb;   /* file_size_mb: largest file a command may write (RLIMIT_FSIZE) */
    uint32_t output_bytes;   /* output_bytes: kept per stream (stdout, stderr) of a run */
    uint32_t tmp_mb;         /* tmp_mb: size of the private /tmp */
    uint32_t background_max; /* background_max: background processes running at once */
    uint32_t concurrent_max; /* concurrent_max: foreground runs at once (more wait in line) */
};

/* Fills the defaults. */
void exec_limits_default(struct exec_limits *l);

/* The comma-separated list of keys, for messages and --help. Static storage. */
const char *exec_limits_keys(void);

/* Sets the limit named key (e.g. "timeout_ms") from text (a whole decimal number). src names
 * the setting in messages ("--exec-timeout-ms", "config.json: key \"exec_timeout_ms\"").
 * Unknown key, not a number or out of range: ERR_INVALID. */
int exec_limits_set(struct exec_limits *l, const char *src, const char *key, const char *text,
                    struct errinfo *err);

/* The same from a JSON number. */
int exec_limits_set_number(struct exec_limits *l, const char *src, const char *key, double v,
                           struct errinfo *err);

/* True when key names a limit. */
bool exec_limits_has(const char *key);

/* One environment variable for the command. */
struct exec_env {
    const char *name;  /* borrowed */
    const char *value; /* borrowed */
};

/* Checks a name: [A-Za-z_][A-Za-z0-9_]*, at most EXEC_ENV_NAME_MAX bytes. */
bool exec_env_name_ok(const char *name);

enum { EXEC_SYSDIR_ABSENT, EXEC_SYSDIR_SYMLINK, EXEC_SYSDIR_DIR };

/* What to run and how (all strings borrowed). */
struct exec_spec {
    const char *bwrap;          /* bwrap's path */
    const char *ws_source;      /* where the workspace is visible when bwrap starts */
    const char *cwd;            /* normalized workspace path of the working directory ("/") */
    const char *command;        /* run as /bin/sh -c command */
    const struct exec_env *env; /* the call's variables (already checked), after the defaults */
    size_t nenv;
    const struct exec_env *net_env; /* the network's (registries), before the call's */
    size_t nnet_env;
    bool allow_network; /* keep the network namespace bwrap starts in (--share-net) */
    bool proxy;         /* set the proxy variables (the egress proxy at 127.0.0.1:3128) */
    const char *npm_cache, *pip_cache; /* host dirs bound at /tmp/.npm, /tmp/.cache/pip; or NULL */
    uint32_t tmp_mb;                   /* size of /tmp */
    uint32_t shm_mb;                   /* size of /dev/shm (the memory limit) */
    /* How /bin, /lib, /lib64 and /sbin exist on the host: EXEC_SYSDIR_* each. */
    unsigned char sysdir[4];
    unsigned uid, gid; /* the ids the command sees */
    /* Top-level workspace entries to reach at the root too (/x -> workspace/x); names that
     * exec_root_name_ok() refuses are skipped, and at most EXEC_ROOT_LINKS_MAX are linked. */
    const char *const *root_names;
    size_t nroot;
};

/* True when a top-level workspace entry called name gets a link at the sandbox's root: not "."
 * or "..", and not one of the root's own entries (bin dev etc lib lib32 lib64 libx32 proc sbin
 * tmp usr workspace), which keep the system's meaning. Pure. */
bool exec_root_name_ok(const char *name);

/* Builds bwrap's argv (layout B: tmpfs root, read-only system dirs, a curated /etc, a read-only
 * /dev with a /dev/shm of shm_mb, a /tmp of tmp_mb, the workspace read-write at /workspace and the
 * cwd there; every namespace new but IPC, which the caller makes; and a symlink at the root for
 * each of root_names, so /x is the workspace's /x as for the file tools). Returns an owned
 * NULL-terminated array whose strings live in the same allocation (free the array with free()), or
 * NULL with err set (ERR_NOMEM, or ERR_INVALID for a cwd that does not fit). */
char **exec_build_argv(const struct exec_spec *s, struct errinfo *err);

/* How a run ended, and what it printed. */
struct exec_outcome {
    uint64_t pid;  /* the registry id */
    int exit_code; /* the command's exit status (128+N: ended by signal N), or -1 */
    int64_t duration_ms;
    bool timed_out;        /* the wall-clock limit stopped it */
    uint32_t timeout_ms;   /* that limit */
    bool killed;           /* stopped by kill or by the daemon stopping */
    bool output_limit;     /* stopped because it printed far past the output limit */
    const char *out, *err; /* borrowed; what was kept of stdout and stderr */
    size_t out_len, err_len;
    uint64_t out_dropped, err_dropped; /* bytes over the limit that were dropped */
    bool memory_limit;                 /* the memory limit killed it (cgroup OOM) */
    bool cancelled;                    /* its caller cancelled the call (proc_cancel) */
    bool quota_exceeded;               /* stopped because the workspace passed its quota */
    uint64_t quota_mb, quota_used_mb;  /* that quota, and the usage then */
};

/* The signal that ended the command, as "SIGKILL" etc., or NULL (a normal exit, or a status
 * 129-192 that no signal explains). Pure. */
const char *exec_signal_name(const struct exec_outcome *o);

/* The result text: stdout, then "[stderr]" and stderr when there is any, then the notes
 * "[exit code N]", "[timed out after N ms]", "[output truncated]", "[killed: ...]" ("[killed:
 * workspace is full (quota N MiB, used M MiB)]" for the quota), each on a line of its own. Returns
 * an owned NUL-terminated string (free()) and its length, or NULL. */
char *exec_format_text(const struct exec_outcome *o, size_t *len);

/* The same facts as JSON: {pid, exit_code, stdout, stderr, duration_ms, timed_out, truncated,
 * signal, killed}. Owned (cJSON_Delete) or NULL. */
cJSON *exec_outcome_json(const struct exec_outcome *o);

/* Parses a kill signal name ("TERM", "SIGTERM", "KILL", "INT", "HUP"; any case), or -1. */
int exec_parse_signal(const char *name);

#endif /* DAEMON_EXEC_H */
