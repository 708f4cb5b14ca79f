/* daemon/proc_watch.c - the exec watchdog: the memory limit of a run as a whole where no cgroup
 * gives one (see proc.h).
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
 * The thread holds the lock only to copy the running jobs' ids and pids and to leave requests
 * (kill_memory); it measures with no lock held. It sleeps on its own condition variable while no
 * run needs watching, woken when a run starts and when the daemon stops. */
#include "proc_int.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "cgroup.h"
#include "log.h"
#include "memusage.h"

#define PROC_WATCH_MS 100

struct target {
    uint64_t id;
    pid_t pid, agent;
    uint64_t held; /* bytes, when over the limit */
    bool over;
};

/* The running jobs to watch (lock held); false when there are none or no room. */
static bool collect(struct proc *p, struct target **t, size_t *n, size_t *cap)
{
    *n = 0;
    if (cgroup_has_memory(p->cg))
        return false; /* the cgroup bounds every run */
    for (struct job *j = p->jobs; j; j = j->next) {
        if (j->state != JOB_RUNNING || j->kill_memory)
            continue;
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 16;
            struct target *g = realloc(*t, c * sizeof(*g));

            if (!g)
                break;
            *t = g;
            *cap = c;
        }
        (*t)[(*n)++] = (struct target){.id = j->id, .pid = j->pid, .agent = j->agent};
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

/* Leaves a kill request for every run found over the limit that still runs (lock held). */
static void request_kills(struct proc *p, const struct target *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct job *j = t[i].over ? proc_find_job(p, t[i].id) : NULL;

        if (!j || j->state != JOB_RUNNING || j->kill_memory)
            continue;
        j->kill_memory = true;
        j->memory_seen = t[i].held;
        proc_wake(p);
    }
}

static void sleep_until(struct proc *p, int64_t ms)
{
    struct timespec until = {.tv_sec = (time_t)(ms / 1000),
                             .tv_nsec = (long)(ms % 1000) * 1000000L};

    pthread_cond_timedwait(&p->watch_cond, &p->lock, &until);
}

void *proc_watchdog(void *arg)
{
    struct proc *p = arg;
    uint64_t limit = (uint64_t)p->lim.memory_mb << 20;
    struct target *t = NULL;
    size_t n = 0, cap = 0;

    pthread_mutex_lock(&p->lock);
    while (!p->stopping) {
        if (!collect(p, &t, &n, &cap)) {
            pthread_cond_wait(&p->watch_cond, &p->lock);
            continue;
        }
        pthread_mutex_unlock(&p->lock);
        for (size_t i = 0; i < n; i++)
            measure(&t[i], limit);
        pthread_mutex_lock(&p->lock);
        request_kills(p, t, n);
        if (!p->stopping)
            sleep_until(p, proc_mono_ms() + PROC_WATCH_MS);
    }
    pthread_mutex_unlock(&p->lock);
    free(t);
    return NULL;
}
