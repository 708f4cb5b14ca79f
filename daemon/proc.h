/* daemon/proc.h - the exec engine: runs commands in the bubblewrap sandbox and keeps the process
 * registry (process_list, kill).
 *
 * DESIGN: one supervisor thread owns every child. Handlers submit a run and (foreground) wait on
 * a condition variable; the supervisor forks, feeds stdin, reads the pipes with caps, enforces
 * the deadlines, delivers kills and reaps (pidfds in one poll loop). Children therefore always
 * have the same long-lived parent thread, which matters because PR_SET_PDEATHSIG fires when the
 * forking *thread* exits. If the daemon dies, the kernel kills the sandboxes (PDEATHSIG on bwrap,
 * --die-with-parent inside, and the pid namespace takes every grandchild with it).
 *
 * Each child enters a user and mount namespace of its own before bwrap starts: there it binds
 * the workspace (through the daemon's directory fd, so a workspace under a path the daemon's
 * user cannot traverse still works) onto a directory bwrap can name, and its process limit
 * counts only the processes of that sandbox (RLIMIT_NPROC is per user namespace). Where runboxd
 * has cgroups (cgroup.h), each run starts inside a cgroup of its own, which limits the memory and
 * processes of the whole sandbox, reports an OOM kill, and is how a run is killed (cgroup.kill).
 *
 * Thread-safety: any thread (internal lock), except proc_new/proc_shutdown/proc_free (the main
 * thread). Lock order: the proc lock is a leaf; the console is called without holding it. */
#ifndef DAEMON_PROC_H
#define DAEMON_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"
#include "exec.h"

struct cgroup;
struct console;
struct hosttools;
struct quota;

/* The sandboxes' network (netpolicy.h modes). In "proxy" and "none" each sandbox gets a network
 * namespace of its own, made by its setup process, which also leaves behind a tiny agent in
 * that namespace: on request (one byte on the agent socket, '4' or '6') it answers with a new
 * unconnected TCP socket of that namespace (SCM_RIGHTS), which is how the daemon connects into
 * the sandbox (port forwards). In "proxy" the setup process also hands over a listener on the
 * namespace's 127.0.0.1:3128 (egress.h). The hooks are called by the supervisor without the
 * proc lock (the callee's lock, then the console, may be taken). */
struct proc_net {
    int mode; /* enum netpolicy_mode */
    void *ctx;
    /* A run's sandbox started (every run, in every mode). listen_fd (-1 unless mode proxy) and
     * agent_fd (-1 in mode full) are owned by the callee from here on. NULL = close them. */
    void (*started)(void *ctx, uint64_t run, int listen_fd, int agent_fd);
    /* A run ended (its processes are gone). May be NULL. */
    void (*ended)(void *ctx, uint64_t run);
    /* Variables every command gets (after the defaults, before the call's own), into out;
     * returns how many (strings borrowed for the proc's lifetime). May block briefly. May be
     * NULL. */
    size_t (*env)(void *ctx, struct exec_env *out, size_t max);
    /* The network's state for /health (sandbox.egress), owned by the caller; may be NULL. */
    cJSON *(*status)(void *ctx);
};

struct proc_options {
    const char *bwrap;  /* bwrap's path; NULL = look it up on PATH */
    int ws_fd;          /* the workspace root directory fd; borrowed, outlives the proc */
    bool allow_network; /* share the host network with commands (net.mode full) */
    struct proc_net net;
    /* Host directories bound read-write at /tmp/.npm and /tmp/.cache/pip (npm's and pip's
     * caches, kept between runs), or NULL. Copied. */
    const char *npm_cache, *pip_cache;
    struct exec_limits limits;
    struct console *console;       /* borrowed, may be NULL */
    struct cgroup *cgroup;         /* borrowed, may be NULL (rlimits only); outlives the proc */
    const struct hosttools *tools; /* borrowed, may be NULL; shown in /health (sandbox.tools) */
    struct quota *quota;           /* borrowed, may be NULL (no quota); outlives the proc */
};

struct proc; /* opaque */

/* Starts the supervisor and checks the sandbox once: bwrap --version here, then a first real run
 * on a thread of its own, so the caller goes on starting meanwhile; proc_run, proc_start,
 * proc_sandbox_ok and proc_sandbox_json wait for that run's verdict (10-20 ms). An unusable
 * sandbox does not fail here: runs then fail with ERR_UNAVAILABLE naming the cause and the fix,
 * and proc_sandbox_json says so. Returns an owned proc (proc_free) or NULL with err set (no
 * memory, no thread). */
struct proc *proc_new(const struct proc_options *opt, struct errinfo *err);

/* Kills every sandbox (SIGKILL), wakes every waiter and stops accepting runs; returns when no
 * child is left. Idempotent. */
void proc_shutdown(struct proc *p);

/* proc_shutdown, then frees. NULL is a no-op. */
void proc_free(struct proc *p);

/* True when commands can run; otherwise fills why (may be NULL) with the cause and the fix.
 * Waits for the sandbox check. */
bool proc_sandbox_ok(struct proc *p, struct errinfo *why);

/* Waits at most timeout_ms for the sandbox check's verdict; true when it is in. */
bool proc_wait_checked(struct proc *p, int timeout_ms);

/* bwrap's path, or NULL when it is not installed. Does not wait; borrowed for the proc's
 * lifetime. */
const char *proc_bwrap_path(const struct proc *p);

/* The limits in force (immutable; borrowed for the proc's lifetime). */
const struct exec_limits *proc_limits(const struct proc *p);

/* {"available","bwrap","version","reason","network","memory","procs","cgroup":{"path","reason"},
 * "tools":{...} (hosttools_json), "limits":{...}} for /health ("memory" and "procs": "cgroup" or
 * "rlimit"). Waits for the sandbox check. Owned or NULL. */
cJSON *proc_sandbox_json(struct proc *p);

/* A foreground run's handle, for cancelling it from another thread (proc_cancel). Storage is the
 * caller's: zero it before proc_run. The fields are private (guarded by the proc lock). */
struct proc_ticket {
    _Atomic uint64_t id; /* the run's registry id once it was submitted, else 0 (may be read
                            without the lock, e.g. by call_follow_run) */
    bool cancelled;      /* private */
};

#define PROC_RECENT_MAX 512 /* bytes of the latest output lines a progress report carries */

struct proc_request {
    const char *command;        /* borrowed */
    const char *cwd;            /* normalized workspace path (the caller checked it is a dir) */
    uint32_t timeout_ms;        /* 0 = the default (background: none) */
    const struct exec_env *env; /* checked names; borrowed */
    size_t nenv;
    const char *stdin_data; /* borrowed; NULL = /dev/null */
    size_t stdin_len;
    /* Foreground runs only, both optional. ticket: lets proc_cancel() stop this run. progress:
     * called about once a second while the run goes on, on proc_run's thread with no lock held,
     * with the time since it started and its latest output lines (both streams, complete lines,
     * at most PROC_RECENT_MAX bytes, NUL-terminated; "" before any). */
    struct proc_ticket *ticket;
    void (*progress)(void *ctx, int64_t elapsed_ms, const char *recent);
    void *progress_ctx;
    /* The daemon's own sandbox check: no npm/pip registry variables, so the run does not wait
     * until the egress proxy has asked npm and pip for them (a node start, ~300 ms). */
    bool no_registry_env;
};

/* The end of a foreground run: o's strings point into the owned buffers. */
struct proc_result {
    struct exec_outcome o;
    char *out, *err; /* owned */
};
void proc_result_cleanup(struct proc_result *r); /* safe on a zeroed struct */

/* Makes r's output text a result can carry: each NUL and each byte that does not begin a valid
 * UTF-8 character becomes U+FFFD (a JSON string in runbox ends at a NUL, which cut a command's
 * output short there). -1 when out of memory (r is left as it was). */
int proc_result_as_text(struct proc_result *r);

/* Runs a command and waits for it (waiting in line when concurrent_max runs are busy). A
 * command that fails is still 0 here (see out->o.exit_code); -1 with err means it could not
 * run: ERR_UNAVAILABLE (no sandbox, too many waiting, the daemon stopping) or ERR_IO. */
int proc_run(struct proc *p, const struct proc_request *r, struct proc_result *out,
             struct errinfo *err);

/* Stops the foreground run of ticket t: a run still waiting for a slot never starts, a running
 * one is killed at once as by SIGKILL, and proc_run returns its outcome marked cancelled. Does
 * not wait. Safe before the run was submitted (it is stopped as soon as it is) and after it
 * ended (then it does nothing). */
void proc_cancel(struct proc *p, struct proc_ticket *t);

/* Starts a background command and returns at once with its registry id. Refused with
 * ERR_UNAVAILABLE when background_max of them already run. */
int proc_start(struct proc *p, const struct proc_request *r, uint64_t *pid, struct errinfo *err);

/* The registry: {"processes":[{"pid","command","state","background","started","exit_code",
 * "duration_ms"}]} (running ones and the most recent finished ones). Owned or NULL. */
cJSON *proc_list_json(struct proc *p);

/* Sends sig (SIGTERM, SIGINT, SIGHUP: to the command's process group, then SIGKILL to the
 * whole sandbox after a grace period; SIGKILL: the whole sandbox at once) and waits up to a few
 * seconds for it to end. *state (may be NULL) gets "killed" or "running". ERR_NOT_FOUND for an
 * unknown id, ERR_INVALID when the process is no longer running. */
int proc_kill(struct proc *p, uint64_t pid, int sig, const char **state, struct errinfo *err);

#endif /* DAEMON_PROC_H */
