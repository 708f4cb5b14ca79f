/* daemon/proc_registry.c - process_list and kill over the exec engine's registry (see proc.h). */
#include "proc.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clocks.h"
#include "proc_int.h"

static const char *state_name(const struct job *j)
{
    switch (j->state) {
    case JOB_QUEUED:
        return "queued";
    case JOB_STARTING:
    case JOB_RUNNING:
        return "running";
    case JOB_EXITED:
        return "exited";
    case JOB_KILLED:
        return "killed";
    }
    return "exited";
}

static void iso_time(int64_t ms, char *out, size_t outsz)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (!gmtime_r(&t, &tm)) {
        snprintf(out, outsz, "1970-01-01T00:00:00.000Z");
        return;
    }
    snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

static cJSON *job_json(const struct job *j, int64_t now)
{
    cJSON *o = cJSON_CreateObject();
    char ts[64];
    bool ended = j->state == JOB_EXITED || j->state == JOB_KILLED;
    bool live = j->state == JOB_STARTING || j->state == JOB_RUNNING;
    int64_t dur = ended ? j->duration_ms : live ? now - j->start_mono : 0;

    iso_time(j->started_ms, ts, sizeof(ts));
    if (o && cJSON_AddNumberToObject(o, "pid", (double)j->id) &&
        cJSON_AddStringToObject(o, "command", j->command) &&
        cJSON_AddStringToObject(o, "state", state_name(j)) &&
        cJSON_AddBoolToObject(o, "background", j->background) &&
        cJSON_AddStringToObject(o, "started", ts) &&
        (ended ? cJSON_AddNumberToObject(o, "exit_code", j->exit_code) != NULL
               : cJSON_AddNullToObject(o, "exit_code") != NULL) &&
        cJSON_AddNumberToObject(o, "duration_ms", (double)dur))
        return o;
    cJSON_Delete(o);
    return NULL;
}

cJSON *proc_list_json(struct proc *p)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = root ? cJSON_AddArrayToObject(root, "processes") : NULL;
    int64_t now = clocks_mono_ms();
    bool ok = arr != NULL;

    pthread_mutex_lock(&p->lock);
    for (const struct job *j = p->jobs; ok && j; j = j->next) {
        cJSON *o = job_json(j, now);
        ok = o && cJSON_AddItemToArray(arr, o);
        if (!ok)
            cJSON_Delete(o);
    }
    pthread_mutex_unlock(&p->lock);
    if (ok)
        return root;
    cJSON_Delete(root);
    return NULL;
}

struct job *proc_find_job(struct proc *p, uint64_t id)
{
    for (struct job *j = p->jobs; j; j = j->next)
        if (j->id == id)
            return j;
    return NULL;
}

int proc_kill(struct proc *p, uint64_t pid, int sig, const char **state, struct errinfo *err)
{
    struct job *j;
    struct timespec until;
    int64_t deadline = clocks_mono_ms() + PROC_KILL_WAIT_MS_INT;

    pthread_mutex_lock(&p->lock);
    j = proc_find_job(p, pid);
    if (!j) {
        pthread_mutex_unlock(&p->lock);
        errinfo_set(err, ERR_NOT_FOUND,
                    "no process %" PRIu64 " (process_list shows the known ones)", pid);
        return -1;
    }
    if (j->state != JOB_RUNNING && j->state != JOB_STARTING) {
        errinfo_set(err, ERR_INVALID, "process %" PRIu64 " is not running (%s, exit code %d)", pid,
                    state_name(j), j->exit_code);
        pthread_mutex_unlock(&p->lock);
        return -1;
    }
    /* The supervisor carries it out (and SIGKILLs after a grace period); a SIGKILL asked for
     * earlier is not softened by a later TERM. */
    if (j->kill_sig != SIGKILL)
        j->kill_sig = sig;
    j->waiting++;
    proc_wake(p);
    until = clocks_at(deadline);
    while (!j->done && pthread_cond_timedwait(&p->cond, &p->lock, &until) != ETIMEDOUT)
        ;
    j->waiting--;
    if (state)
        *state = state_name(j);
    pthread_mutex_unlock(&p->lock);
    return 0;
}
