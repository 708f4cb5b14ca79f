/* daemon/proc_int.h - what the proc module's files share (not part of the proc.h contract).
 *
 * Who may touch what (proc_super.c has the design): the fields of struct proc and struct job
 * marked "lock" are read and written with proc->lock held; those marked "supervisor" belong to
 * the supervisor thread, which reads and writes them without the lock, and which a handler reads
 * only once the job is done (the lock that publishes `done` orders them); "immutable" ones are
 * set before the job is submitted. */
#ifndef DAEMON_PROC_INT_H
#define DAEMON_PROC_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "errinfo.h"
#include "exec.h"
#include "proc.h"

#define PROC_LINE_MAX 4096 /* a longer console line is split */
#define PROC_TAIL     1024 /* last stderr bytes kept for the console's error entry */
/* The console takes a run's output lines from a bucket of PROC_CONSOLE_BURST lines refilled at
 * PROC_CONSOLE_RATE lines a second; lines past that are counted, not sent, and one entry says
 * how many were left out. A flood (`yes`) then costs a count per line instead of a console
 * entry, and cannot push every other entry out of the ring. */
#define PROC_CONSOLE_BURST     1000
#define PROC_CONSOLE_RATE      200
#define PROC_KILL_GRACE_MS_INT 2000 /* TERM/INT/HUP, then SIGKILL after this */
#define PROC_KILL_WAIT_MS_INT  3000 /* how long kill waits to report the end */

struct proc_stream {
    int fd;     /* read end, -1 when closed */
    char *buf;  /* owned: kept bytes (foreground runs) */
    size_t len; /* bytes kept */
    uint64_t dropped;
    char line[PROC_LINE_MAX]; /* the partial line not yet sent to the console */
    size_t line_len;
};

/* QUEUED -> STARTING (the supervisor is forking it) -> RUNNING -> EXITED or KILLED. */
enum job_state { JOB_QUEUED, JOB_STARTING, JOB_RUNNING, JOB_EXITED, JOB_KILLED };

struct job {
    struct job *next; /* lock */
    uint64_t id;      /* lock (set at submit) */
    char *command;    /* immutable, owned */
    char **argv;      /* immutable until started, owned (one allocation) */
    bool background;  /* immutable */
    uint32_t timeout_ms;
    char *in_data; /* immutable, owned copy of stdin, or NULL */
    /* lock: */
    enum job_state state;
    int64_t started_ms; /* wall clock, ms since the epoch */
    int64_t start_mono; /* monotonic ms */
    int exit_code;
    int64_t duration_ms;
    int kill_sig;         /* a handler's request (SIGKILL, SIGTERM...), 0 = none */
    bool kill_memory;     /* the watchdog's request: the run is past the memory limit */
    uint64_t memory_seen; /* bytes the watchdog saw it hold then */
    bool kill_quota;      /* the watchdog's request: the workspace passed its quota */
    uint64_t quota_seen;  /* the workspace's usage in bytes then */
    bool ws_seen;         /* ws_start is set */
    uint64_t ws_start;    /* the workspace's usage as the run started (else at the watchdog's
                             first look, when there was no estimate yet) */
    bool cancelled;       /* its caller cancelled the call (proc_cancel) */
    unsigned waiting;     /* callers still reading this job (it is not freed meanwhile) */
    bool done;
    char recent_pub[PROC_RECENT_MAX]; /* recent as of the last publish, for progress reports */
    size_t recent_pub_len;
    /* supervisor: */
    size_t in_len, in_off;
    int in_fd; /* write end of stdin, -1 when closed */
    pid_t pid; /* bwrap's pid */
    int pidfd;
    int cg_fd;               /* the run's cgroup directory, or -1 */
    pid_t agent;             /* the network agent (a child of bwrap), or 0 */
    struct proc_stream s[2]; /* stdout, stderr */
    char tail[PROC_TAIL];
    size_t tail_len;
    char recent[PROC_RECENT_MAX]; /* the latest output of both streams, for progress reports */
    size_t recent_len;
    bool recent_new;                     /* recent changed since the last publish */
    int64_t deadline, kill_at, end_mono; /* monotonic ms; 0 = none */
    int act_sig;                         /* a request taken over, not yet carried out */
    int end_status;                      /* bwrap's wait status once reaped */
    uint64_t memory_held;                /* memory_seen, taken over with kill_memory */
    bool quota_exceeded;                 /* kill_quota, taken over */
    uint64_t quota_used;                 /* quota_seen, taken over with it */
    bool spawned, reaped;
    bool timed_out, killed, output_limit, memory_limit;
    uint32_t console_tokens;   /* lines the console may take now (see PROC_CONSOLE_BURST) */
    int64_t console_refill_ms; /* monotonic ms the bucket was last refilled */
    uint64_t console_dropped;  /* lines left out since the last note */
    bool console_muted;        /* the bucket ran dry and is not yet half full again */
    struct errinfo spawn_err;  /* set when the sandbox could not start */
};

struct proc {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* CLOCK_MONOTONIC; broadcast when a job starts or ends */
    pthread_t thread;
    bool thread_started;
    pthread_cond_t watch_cond; /* CLOCK_MONOTONIC; the watchdog waits on it (proc_watch.c) */
    pthread_t watch_thread;
    bool watch_started;
    int wake[2]; /* the supervisor polls wake[0] */
    /* lock: */
    struct job *jobs, *last;
    uint64_t next_id;
    unsigned running_fg, running_bg, queued; /* running: STARTING and RUNNING jobs */
    bool stopping, stopped;
    /* Written once by the sandbox check (check_main, under the lock) before it sets checked,
     * never after; read after wait_checked (proc.c). bwrap and version are immutable. */
    bool checked;
    bool available;
    bool sysv_bounded; /* the sandbox check saw the System V limits take */
    struct errinfo why;
    pthread_t check_thread;
    bool check_started;
    /* Immutable after proc_new: */
    char *bwrap;
    char version[64];
    const char *mnt; /* where the child binds the workspace before bwrap starts */
    int ws_fd;
    bool allow_network;
    struct proc_net net;
    char *npm_cache, *pip_cache;
    struct exec_limits lim;
    struct console *console;
    struct quota *quota; /* the workspace quota (internal lock), or NULL */
    struct cgroup *cg;   /* its run functions are called by the supervisor only; cgroup_disable
                          with the lock held (proc_sandbox_json reads it so) */
    const struct hosttools *tools;
    unsigned char sysdir[4];
    uid_t uid;
    gid_t gid;
    pid_t self;
    char uid_map[32], gid_map[32];
    char shm_max[24], shm_all[24]; /* the sandbox's kernel.shmmax and kernel.shmall */
};

/* proc_super.c: the supervisor thread's function (arg: the proc). */
void *proc_supervisor(void *arg);

/* proc_watch.c: the watchdog thread's function (arg: the proc). */
void *proc_watchdog(void *arg);

/* proc.c: frees a job and what it owns. */
void proc_free_job(struct job *j);

/* proc_spawn.c: forks bwrap for j (argv built), filling pid, pidfd, in_fd and the stream fds.
 * Called by the supervisor without the lock (it takes it only to turn cgroups off). -1 with err
 * set when the sandbox did not start. */
int proc_spawn(struct proc *p, struct job *j, struct errinfo *err);

/* proc_spawn.c: the pid of a child process of parent other than skip (a /proc scan), or -1. */
pid_t proc_child_of(pid_t parent, pid_t skip);

/* proc_spawn.c: SIGKILLs every process of a running job: its cgroup at once when it has one,
 * then bwrap and the sandbox's init (proc_kill_sandbox). */
void proc_kill_job(struct job *j);

/* proc_spawn.c: delivers a polite signal to the command's process group inside the sandbox of
 * bwrap (--new-session makes the command a session and group leader). False when the command
 * cannot be found. */
bool proc_signal_command(pid_t bwrap, pid_t agent, int sig);

/* proc_spawn.c: SIGKILLs a sandbox: bwrap (our child) and the init process of its pid namespace,
 * whose death takes every process of the sandbox with it. bwrap's --die-with-parent does not
 * reach that init once it has changed credentials inside the user namespace (which clears the
 * parent-death signal), so it is found and killed here, before bwrap dies and it is re-parented. */
void proc_kill_sandbox(pid_t bwrap, pid_t agent);

/* proc_spawn.c: fills p's sandbox facts (bwrap path and version, mount point, system dirs) and
 * sets available/why for everything that can be checked without running anything. */
void proc_probe_host(struct proc *p, const char *bwrap);

/* proc_registry.c: the job with this registry id, or NULL (lock held). */
struct job *proc_find_job(struct proc *p, uint64_t id);

/* proc.c: wakes the supervisor (to start queued jobs, recompute deadlines). Any thread. */
void proc_wake(struct proc *p);

#endif /* DAEMON_PROC_INT_H */
