/* daemon/proc_watch.c - the exec watchdog: the memory limit of a run as a whole where no cgroup
 * gives one, and the workspace quota while runs write to the workspace (see proc.h, quota.h).
 *
 * DESIGN
 * Without a memory cgroup, RLIMIT_DATA bounds each process alone: four processes of one run may
 * hold four times the limit, and tmpfs, memfd and shared memory count against no rlimit. So while
 * runs go on, this thread measures each one every PROC_WATCH_MS (memusage.h: its processes, its
 * /tmp and /dev/shm, the shared memory it holds) and asks the supervisor to SIGKILL a run past
 * the limit, as the OOM killer would in a cgroup; the run is then reported "[killed: memory
 * limit]" and the console says how much it held. The sizes of /tmp and /dev/shm (exec.c) and the
 * System V limits (proc_spawn.c) keep what a run can hold between two readings bounded too.
 *
 * The same rounds check the workspace quota (quota_usage: the file system's free space against
 * the last walk, a walk when that reaches the quota) and stop the runs that pushed the workspace
 * past it: "[killed: workspace is full (quota N MiB, used M MiB)]".
 *
 * The thread holds the lock only to copy the running jobs' ids and pids and to leave requests
 * (kill_memory, kill_quota); it measures with no lock held. It sleeps on its own condition variable
 * while no run needs watching, woken when a run starts and when the daemon stops. */
#include "proc_int.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "cgroup.h"
#include "clocks.h"
#include "log.h"
#include "memusage.h"
#include "quota.h"

#define PROC_WATCH_MS 100

struct target {
    uint64_t id;
    pid_t pid, agent;
    uint64_t held; /* bytes, when over the limit */
    bool over;
    bool watch_memory; /* no memory cgroup: the watchdog bounds it */
};

/* The running jobs to watch (lock held); false when there are none or no room. */
static bool collect(struct proc *p, struct target **t, size_t *n, size_t *cap)
{
    bool memory = !cgroup_has_memory(p->cg); /* else the cgroup bounds every run */

    *n = 0;
    if (!memory && !quota_limit_mb(p->quota))
        return false;
    for (struct job *j = p->jobs; j; j = j->next) {
        if (j->state != JOB_RUNNING || j->kill_memory || j->kill_quota)
            continue;
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 16;
            struct target *g = realloc(*t, c * sizeof(*g));

            if (!g)
                break;
            *t = g;
            *cap = c;
        }
        (*t)[(*n)++] =
            (struct target){.id = j->id, .pid = j->pid, .agent = j->agent, .watch_memory = memory};
    }
    return *n > 0;
}

/* Measures one run: the quick reading first, the exact one only past the limit. */
static void measure(struct target *t, uint64_t limit)
{
    struct memusage u;

    if (memusage_measure(t->pid, t->agent, false, &u) < 0 || u.total <= limit)
        return;
    if (memusage_measure(t->pid, t->agent, true, &u) < 0 || u.total <= limit)
        return;
    t->over = true;
    t->held = u.total;
    log_info("exec: process %" PRIu64 " holds %" PRIu64 " MiB (%u processes %" PRIu64
             " MiB, tmpfs %" PRIu64 " MiB, open shared memory %" PRIu64
             " MiB), past the memory limit; killing it",
             t->id, u.total >> 20, u.nprocs, u.processes >> 20, u.tmpfs >> 20, u.shm_fds >> 20);
}

/* Leaves a kill request for every run found over the memory limit that still runs (lock held).
 * With the workspace at used bytes, over its quota when over_quota: a run is stopped when the
 * workspace was under the quota when the watchdog first saw it, or has grown since, so a run
 * that frees space in a full workspace (rm) is left to do it. */
static void request_kills(struct proc *p, const struct target *t, size_t n, bool measured,
                          uint64_t used, bool over_quota)
{
    uint64_t quota = quota_limit_mb(p->quota) << 20;

    for (size_t i = 0; i < n; i++) {
        struct job *j = proc_find_job(p, t[i].id);

        if (!j || j->state != JOB_RUNNING || j->kill_memory || j->kill_quota)
            continue;
        if (t[i].over) {
            j->kill_memory = true;
            j->memory_seen = t[i].held;
            proc_wake(p);
        } else if (measured && !j->ws_seen) {
            j->ws_seen = true;
            j->ws_start = used;
        } else if (measured && over_quota && (j->ws_start <= quota || used > j->ws_start)) {
            j->kill_quota = true;
            j->quota_seen = used;
            proc_wake(p);
        }
    }
}

static void sleep_until(struct proc *p, int64_t ms)
{
    struct timespec until = clocks_at(ms);

    pthread_cond_timedwait(&p->watch_cond, &p->lock, &until);
}

void *proc_watchdog(void *arg)
{
    struct proc *p = arg;
    uint64_t limit = (uint64_t)p->lim.memory_mb << 20;
    struct target *t = NULL;
    size_t n = 0, cap = 0;
    uint64_t used = 0;
    bool measured, over_quota = false;

    /* The workspace's first walk, off the start-up path. */
    quota_rescan(p->quota);
    pthread_mutex_lock(&p->lock);
    while (!p->stopping) {
        if (!collect(p, &t, &n, &cap)) {
            pthread_cond_wait(&p->watch_cond, &p->lock);
            continue;
        }
        pthread_mutex_unlock(&p->lock);
        for (size_t i = 0; i < n; i++)
            if (t[i].watch_memory)
                measure(&t[i], limit);
        measured = quota_usage(p->quota, &used, &over_quota) == 0;
        pthread_mutex_lock(&p->lock);
        request_kills(p, t, n, measured, used, over_quota);
        if (!p->stopping)
            sleep_until(p, clocks_mono_ms() + PROC_WATCH_MS);
    }
    pthread_mutex_unlock(&p->lock);
    free(t);
    return NULL;
}
