/* daemon/proc_super.c - the exec engine's supervisor thread (see proc.h for the design).
 *
 * DESIGN
 * The supervisor owns every started job's fds, streams, deadlines and signals; a handler never
 * touches a running sandbox itself, it leaves a request (kill_sig) under the lock and wakes the
 * supervisor. Each round of the loop holds the lock once, only to copy:
 *  - publish: what the last round found becomes visible: a started job is RUNNING (or done with
 *    its spawn_err), an ended one gets its exit code and state and is done; waiters are woken;
 *  - take: kill requests are taken over, queued jobs that fit a slot become STARTING, old
 *    finished jobs are pruned, and the live jobs are copied into the round's own arrays.
 * Everything slow happens unlocked between two rounds: fork and the wait for bwrap's exec,
 * signals and the /proc scans they need, reading pipes, feeding stdin, console entries, cgroup
 * work, reaping. Only the supervisor frees jobs, so the pointers in a round stay valid.
 *
 * A job moves QUEUED -> STARTING -> RUNNING -> EXITED or KILLED. Fields the supervisor alone
 * writes may be read by it without the lock; fields a handler reads before the job is done
 * (state, exit_code, duration_ms, start times) are written under the lock, and the rest of the
 * outcome is written before `done` is published, which orders it for the handler. */
#include "proc_int.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "clocks.h"
#include "console.h"
#include "log.h"
#include "quota.h"

#define PROC_KEEP_FINISHED 100 /* finished runs process_list still shows */
#define PROC_READ_CHUNK    (64u << 10)

/* ---- output ---- */

/* Takes one line from the run's console bucket (PROC_CONSOLE_BURST, PROC_CONSOLE_RATE). Once
 * the bucket runs dry the run stays muted until it is half full again, so a steady flood gives
 * one note every few seconds rather than a note per refilled line. */
static bool console_admit(struct job *j, int64_t now)
{
    if (j->console_tokens >= PROC_CONSOLE_BURST) {
        j->console_refill_ms = now; /* full: the time spent full earns nothing */
    } else {
        int64_t earned = (now - j->console_refill_ms) * PROC_CONSOLE_RATE / 1000;

        if (earned > 0) {
            j->console_tokens = earned >= PROC_CONSOLE_BURST - j->console_tokens
                                    ? PROC_CONSOLE_BURST
                                    : j->console_tokens + (uint32_t)earned;
            j->console_refill_ms = now;
        }
    }
    if (j->console_muted && j->console_tokens < PROC_CONSOLE_BURST / 2) {
        j->console_dropped++;
        return false;
    }
    j->console_muted = false;
    if (!j->console_tokens) {
        j->console_muted = true;
        j->console_dropped++;
        return false;
    }
    j->console_tokens--;
    return true;
}

/* The entry that says how many lines the bucket left out, once per gap. */
static void console_dropped_note(struct proc *p, struct job *j)
{
    if (j->console_dropped && p->console)
        console_appendf(p->console, CONSOLE_WARN, CONSOLE_SRC_EXEC, j->id,
                        "[process %" PRIu64 ": %" PRIu64 " output lines not shown here (more than "
                        "%d lines a second); the command's own result has its output]",
                        j->id, j->console_dropped, PROC_CONSOLE_RATE);
    j->console_dropped = 0;
}

static void console_line(struct proc *p, struct job *j, int idx, const char *s, size_t n,
                         int64_t now)
{
    if (!p->console || !console_admit(j, now))
        return;
    console_dropped_note(p, j);
    console_append(p->console, idx == 0 ? CONSOLE_LOG : CONSOLE_WARN, CONSOLE_SRC_EXEC, j->id, NULL,
                   0, s, n);
}

/* Sends the complete lines of data to the console, keeping a partial last line. */
static void stream_lines(struct proc *p, struct job *j, int idx, const char *data, size_t n,
                         int64_t now)
{
    struct proc_stream *s = &j->s[idx];

    for (size_t i = 0; i < n; i++) {
        if (data[i] == '\n' || s->line_len == sizeof(s->line)) {
            console_line(p, j, idx, s->line, s->line_len, now);
            s->line_len = 0;
            if (data[i] == '\n')
                continue;
        }
        s->line[s->line_len++] = data[i];
    }
}

static void stream_flush(struct proc *p, struct job *j, int idx)
{
    if (j->s[idx].line_len)
        console_line(p, j, idx, j->s[idx].line, j->s[idx].line_len, clocks_mono_ms());
    j->s[idx].line_len = 0;
}

/* Keeps the last cap bytes of everything appended to buf (*len bytes used). */
static void keep_last(char *buf, size_t cap, size_t *len, const char *data, size_t n)
{
    if (n >= cap) {
        memcpy(buf, data + n - cap, cap);
        *len = cap;
        return;
    }
    if (*len + n > cap) {
        size_t drop = *len + n - cap;
        memmove(buf, buf + drop, *len - drop);
        *len -= drop;
    }
    memcpy(buf + *len, data, n);
    *len += n;
}

/* Keeps what fits under the output limit (foreground runs), drops the rest, and stops a run that
 * goes on printing long after the limit (`yes`), so it does not spin until its timeout. */
static void stream_keep(struct proc *p, struct job *j, int idx, const char *data, size_t n)
{
    struct proc_stream *s = &j->s[idx];
    size_t limit = p->lim.output_bytes, room = s->len < limit ? limit - s->len : 0;
    size_t take = n < room ? n : room;

    if (take && !s->buf)
        s->buf = malloc(limit);
    if (take && s->buf) {
        memcpy(s->buf + s->len, data, take);
        s->len += take;
    }
    s->dropped += n - take;
    /* Not once reaped: the pid may already belong to someone else. */
    if (s->dropped > 4 * (uint64_t)limit && !j->output_limit && j->pid > 0 && !j->reaped) {
        j->output_limit = true;
        proc_kill_job(j);
    }
}

/* Reads what is there; returns false at EOF or error (the fd is then closed). */
static bool stream_read(struct proc *p, struct job *j, int idx)
{
    char buf[PROC_READ_CHUNK];
    struct proc_stream *s = &j->s[idx];
    int64_t now = clocks_mono_ms();

    for (int rounds = 0; rounds < 16; rounds++) {
        ssize_t n = read(s->fd, buf, sizeof(buf));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return true;
        if (n <= 0) {
            close(s->fd);
            s->fd = -1;
            return false;
        }
        if (!j->background)
            stream_keep(p, j, idx, buf, (size_t)n);
        if (idx == 1)
            keep_last(j->tail, sizeof(j->tail), &j->tail_len, buf, (size_t)n);
        keep_last(j->recent, sizeof(j->recent), &j->recent_len, buf, (size_t)n);
        j->recent_new = true;
        stream_lines(p, j, idx, buf, (size_t)n, now);
    }
    return true;
}

static void feed_stdin(struct job *j)
{
    while (j->in_fd >= 0 && j->in_off < j->in_len) {
        ssize_t n = write(j->in_fd, j->in_data + j->in_off, j->in_len - j->in_off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n < 0)
            break; /* EPIPE: the command stopped reading */
        j->in_off += (size_t)n;
    }
    if (j->in_fd >= 0)
        close(j->in_fd);
    j->in_fd = -1;
}

/* ---- starting and ending (unlocked) ---- */

/* The console's error entry: the last stderr lines (at most the tail) after a headline. */
static void console_failure(struct proc *p, struct job *j, int exit_code)
{
    const char *t = j->tail;
    size_t n = j->tail_len;

    /* Start at a line boundary when the tail was cut. */
    if (n == PROC_TAIL) {
        const char *nl = memchr(t, '\n', n);
        if (nl && (size_t)(nl - t) + 1 < n) {
            n -= (size_t)(nl - t) + 1;
            t = nl + 1;
        }
    }
    while (n && t[n - 1] == '\n')
        n--;
    if (j->timed_out)
        console_appendf(p->console, CONSOLE_ERROR, CONSOLE_SRC_EXEC, j->id,
                        "process %" PRIu64 " timed out after %" PRIu32 " ms%s%.*s", j->id,
                        j->timeout_ms, n ? ":\n" : "", (int)n, t);
    else if (j->memory_limit && j->memory_held)
        console_appendf(p->console, CONSOLE_ERROR, CONSOLE_SRC_EXEC, j->id,
                        "process %" PRIu64 ": the run held %" PRIu64
                        " MiB (its processes, /tmp, /dev/shm and shared memory together), past "
                        "the memory limit (%" PRIu32 " MiB), and was killed%s%.*s",
                        j->id, j->memory_held >> 20, p->lim.memory_mb, n ? ":\n" : "", (int)n, t);
    else if (j->memory_limit)
        console_appendf(p->console, CONSOLE_ERROR, CONSOLE_SRC_EXEC, j->id,
                        "process %" PRIu64 ": a command hit the memory limit (%" PRIu32
                        " MiB) and was killed; exit code %d%s%.*s",
                        j->id, p->lim.memory_mb, exit_code, n ? ":\n" : "", (int)n, t);
    else
        console_appendf(p->console, CONSOLE_ERROR, CONSOLE_SRC_EXEC, j->id,
                        "process %" PRIu64 " failed with exit code %d%s%.*s", j->id, exit_code,
                        n ? ":\n" : "", (int)n, t);
}

/* Forks the sandbox of a STARTING job; publish() makes it RUNNING or done. */
static void start_job(struct proc *p, struct job *j)
{
    j->console_tokens = PROC_CONSOLE_BURST;
    j->console_refill_ms = j->start_mono;
    if (p->console)
        console_appendf(p->console, CONSOLE_INFO, CONSOLE_SRC_EXEC, j->id, "$ %s%s", j->command,
                        j->background ? "   (background)" : "");
    /* The workspace's usage as the run starts, for the quota's rule (proc_watch.c: a run is
     * stopped when it made the workspace pass the quota): taken here, not at the watchdog's
     * first look, which may come after the run has already written past it. */
    if (quota_limit_mb(p->quota) && quota_peek(p->quota, &j->ws_start) == 0)
        j->ws_seen = true;
    if (proc_spawn(p, j, &j->spawn_err) < 0) {
        log_warn("exec: process %" PRIu64 " could not start: %s", j->id, j->spawn_err.msg);
        if (p->console)
            console_appendf(p->console, CONSOLE_ERROR, CONSOLE_SRC_DAEMON, j->id, "%s",
                            j->spawn_err.msg);
        return;
    }
    j->spawned = true;
    if (j->timeout_ms)
        j->deadline = j->start_mono + j->timeout_ms;
    feed_stdin(j);
}

/* bwrap was reaped with status: takes the rest of the output, ends the cgroup, closes the fds
 * and writes the console's entries; publish() makes the job done. */
static void end_job(struct proc *p, struct job *j, int status)
{
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

    j->reaped = true;
    j->end_status = status;
    j->end_mono = clocks_mono_ms();
    for (int i = 0; i < 2; i++) {
        /* What is buffered now is the end of it: a writer that outlived bwrap (it should not)
         * must not keep the supervisor here. */
        if (j->s[i].fd >= 0 && stream_read(p, j, i) && j->s[i].fd >= 0) {
            close(j->s[i].fd);
            j->s[i].fd = -1;
        }
        stream_flush(p, j, i);
    }
    console_dropped_note(p, j);
    if (j->in_fd >= 0)
        close(j->in_fd);
    j->in_fd = -1;
    close(j->pidfd);
    j->pidfd = -1;
    /* Whatever the first process left behind goes now; the OOM killer's count is final. */
    if (cgroup_run_end(p->cg, j->id, j->cg_fd))
        j->memory_limit = true;
    j->cg_fd = -1;
    if (p->net.ended)
        p->net.ended(p->net.ctx, j->id);
    if (!p->console)
        return;
    if (j->quota_exceeded && !j->killed)
        console_appendf(p->console, CONSOLE_ERROR, CONSOLE_SRC_EXEC, j->id,
                        "process %" PRIu64 ": the workspace passed its quota (%" PRIu64
                        " MiB, used %" PRIu64 " MiB) while it ran, and it was stopped; remove "
                        "files or raise --workspace-quota-mb",
                        j->id, quota_limit_mb(p->quota), (j->quota_used + (1u << 19)) >> 20);
    else if ((code != 0 || j->memory_limit) && !j->killed)
        console_failure(p, j, code);
    else if (j->background)
        console_appendf(p->console, CONSOLE_INFO, CONSOLE_SRC_EXEC, j->id,
                        "process %" PRIu64 " %s (exit code %d)", j->id,
                        j->killed ? "was killed" : "exited", code);
}

/* Carries out a kill request taken from a handler: SIGKILL, or a polite signal to the command's
 * process group with SIGKILL after a grace period (at once when the command is gone). */
static void act_on_signal(struct job *j)
{
    int sig = j->act_sig;

    j->act_sig = 0;
    if (sig == SIGKILL || !proc_signal_command(j->pid, j->agent, sig)) {
        proc_kill_job(j);
        j->kill_at = 0;
    } else if (!j->kill_at) {
        j->kill_at = clocks_mono_ms() + PROC_KILL_GRACE_MS_INT;
    }
}

static void check_deadlines(struct job *j, int64_t now)
{
    if (j->deadline && now >= j->deadline) {
        j->timed_out = true;
        j->deadline = 0;
        proc_kill_job(j);
    }
    if (j->kill_at && now >= j->kill_at) {
        j->kill_at = 0;
        proc_kill_job(j);
    }
}

/* ---- one round's snapshot ---- */

struct round {
    struct job **live; /* STARTING and RUNNING jobs at take() */
    size_t nlive, livecap;
    struct pollfd *fds;
    struct job **owner;
    int *what; /* 0, 1: stream; 2: stdin; 3: pidfd; -1: the wake pipe */
    size_t n, cap;
    bool failed; /* out of memory: the round polls nothing but the wake pipe and retries */
};

static bool grow(void **arr, size_t *cap, size_t need, size_t size)
{
    size_t c = *cap ? *cap : 32;
    void *g;

    if (need <= *cap)
        return true;
    while (c < need)
        c *= 2;
    g = realloc(*arr, c * size);
    if (!g)
        return false;
    *arr = g;
    *cap = c;
    return true;
}

static void pollset_add(struct round *r, int fd, short events, struct job *j, int what)
{
    size_t cap = r->cap;

    if (r->n == r->cap) {
        size_t c1 = cap, c2 = cap, c3 = cap;

        if (!grow((void **)&r->fds, &c1, r->n + 1, sizeof(*r->fds)) ||
            !grow((void **)&r->owner, &c2, r->n + 1, sizeof(*r->owner)) ||
            !grow((void **)&r->what, &c3, r->n + 1, sizeof(*r->what))) {
            r->failed = true; /* out of memory: this fd waits for a later round */
            return;
        }
        r->cap = c1;
    }
    r->fds[r->n] = (struct pollfd){.fd = fd, .events = events};
    r->owner[r->n] = j;
    r->what[r->n++] = what;
}

static void round_free(struct round *r)
{
    free(r->live);
    free(r->fds);
    free(r->owner);
    free(r->what);
}

/* ---- the locked moments ---- */

/* Makes what the unlocked part of the last round did visible to handlers. Lock held. */
static void publish(struct proc *p, struct round *r)
{
    bool changed = false;

    for (size_t i = 0; i < r->nlive; i++) {
        struct job *j = r->live[i];
        int st = j->end_status;

        if (j->recent_new) {
            memcpy(j->recent_pub, j->recent, j->recent_len);
            j->recent_pub_len = j->recent_len;
            j->recent_new = false;
        }
        if (j->state == JOB_STARTING && !j->spawned) {
            j->state = JOB_EXITED;
            j->exit_code = -1;
            j->done = true;
        } else if (j->state == JOB_STARTING) {
            j->state = JOB_RUNNING;
            changed = true;
            pthread_cond_signal(&p->watch_cond);
        }
        if (j->reaped && !j->done) {
            j->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            j->duration_ms = j->end_mono - j->start_mono;
            j->state =
                j->killed || j->timed_out || j->output_limit || j->memory_limit || j->quota_exceeded
                    ? JOB_KILLED
                    : JOB_EXITED;
            j->done = true;
        }
        if (j->done) {
            if (j->background)
                p->running_bg--;
            else
                p->running_fg--;
            changed = true;
        }
    }
    r->nlive = 0;
    if (changed)
        pthread_cond_broadcast(&p->cond);
}

/* Frees the oldest finished jobs past PROC_KEEP_FINISHED that nobody waits for. Lock held. */
static void prune(struct proc *p)
{
    size_t finished = 0;
    struct job **link = &p->jobs;

    for (struct job *j = p->jobs; j; j = j->next)
        finished += j->done && !j->waiting;
    while (*link && finished > PROC_KEEP_FINISHED) {
        struct job *j = *link;

        if (j->done && !j->waiting) {
            *link = j->next;
            if (p->last == j)
                p->last = NULL;
            proc_free_job(j);
            finished--;
            continue;
        }
        link = &j->next;
    }
    if (!p->last)
        for (struct job *j = p->jobs; j; j = j->next)
            p->last = j;
}

/* Takes the kill requests of job j into the supervisor's hands. Lock held. */
static void take_requests(struct proc *p, struct job *j)
{
    if (p->stopping && !j->kill_sig && !j->killed)
        j->kill_sig = SIGKILL;
    if (j->kill_quota && !j->quota_exceeded) {
        j->quota_exceeded = true;
        j->quota_used = j->quota_seen;
        j->act_sig = SIGKILL;
    }
    if (j->kill_memory && !j->memory_limit) {
        /* Not "killed": the limit stopped it, as the OOM killer does in a cgroup. */
        j->memory_limit = true;
        j->memory_held = j->memory_seen;
        j->act_sig = SIGKILL;
    }
    if (!j->kill_sig)
        return;
    j->killed = true;
    if (j->act_sig != SIGKILL)
        j->act_sig = j->kill_sig;
    j->kill_sig = 0;
}

/* Picks the jobs to start and copies the live ones into r. Lock held. */
static void take(struct proc *p, struct round *r)
{
    int64_t now = clocks_mono_ms();

    r->n = r->nlive = 0;
    r->failed = false;
    for (struct job *j = p->jobs; j; j = j->next) {
        if (!grow((void **)&r->live, &r->livecap, r->nlive + 1, sizeof(*r->live))) {
            r->failed = true; /* out of memory: the rest waits for a later round */
            break;
        }
        if (j->state == JOB_QUEUED && !p->stopping &&
            (j->background || p->running_fg < p->lim.concurrent_max)) {
            p->queued--;
            j->state = JOB_STARTING;
            j->start_mono = now;
            j->started_ms = clocks_wall_ms();
            if (j->background)
                p->running_bg++;
            else
                p->running_fg++;
        }
        if (j->state != JOB_STARTING && j->state != JOB_RUNNING)
            continue;
        r->live[r->nlive++] = j;
        take_requests(p, j);
    }
    prune(p);
}

static void build_pollset(struct proc *p, struct round *r)
{
    pollset_add(r, p->wake[0], POLLIN, NULL, -1);
    for (size_t i = 0; i < r->nlive; i++) {
        struct job *j = r->live[i];

        if (!j->spawned || j->reaped)
            continue;
        for (int k = 0; k < 2; k++)
            if (j->s[k].fd >= 0)
                pollset_add(r, j->s[k].fd, POLLIN, j, k);
        if (j->in_fd >= 0)
            pollset_add(r, j->in_fd, POLLOUT, j, 2);
        pollset_add(r, j->pidfd, POLLIN, j, 3);
    }
}

static int poll_timeout(const struct round *r, int64_t now)
{
    int64_t next = -1;

    if (r->failed)
        return 10;
    for (size_t i = 0; i < r->nlive; i++) {
        const struct job *j = r->live[i];

        if (j->deadline && (next < 0 || j->deadline < next))
            next = j->deadline;
        if (j->kill_at && (next < 0 || j->kill_at < next))
            next = j->kill_at;
    }
    if (next < 0)
        return -1;
    return next <= now ? 0 : (int)(next - now > 60000 ? 60000 : next - now);
}

/* ---- the unlocked part ---- */

static void handle_events(struct proc *p, struct round *r)
{
    char drain[64];

    for (size_t i = 0; i < r->n; i++) {
        struct job *j = r->owner[i];
        int status = 0;

        if (!r->fds[i].revents)
            continue;
        if (r->what[i] < 0) {
            while (read(p->wake[0], drain, sizeof(drain)) > 0)
                ;
        } else if (j->reaped) {
            continue;
        } else if (r->what[i] < 2) {
            if (j->s[r->what[i]].fd >= 0)
                stream_read(p, j, r->what[i]);
        } else if (r->what[i] == 2) {
            feed_stdin(j);
        } else if (waitpid(j->pid, &status, WNOHANG) == j->pid) {
            end_job(p, j, status);
        }
    }
}

/* Starts, signals, polls, reads and reaps: everything a round does without the lock. */
static void work(struct proc *p, struct round *r)
{
    bool started = false;
    int timeout;

    for (size_t i = 0; i < r->nlive; i++) {
        struct job *j = r->live[i];

        if (j->state == JOB_STARTING) {
            start_job(p, j);
            started = true;
        }
        if (j->spawned && j->act_sig)
            act_on_signal(j);
    }
    build_pollset(p, r);
    /* A job just started is made RUNNING (and its proc_start answered) first. */
    timeout = started ? 0 : poll_timeout(r, clocks_mono_ms());
    /* The cgroups of the runs that just ended, now that their waiters were woken; one still busy
     * for a moment is retried soon. */
    if (cgroup_tidy(p->cg) && (timeout < 0 || timeout > 1))
        timeout = 1;
    if (poll(r->fds, r->n, timeout) < 0 && errno != EINTR)
        usleep(10000);
    handle_events(p, r);
    for (size_t i = 0; i < r->nlive; i++)
        if (r->live[i]->spawned && !r->live[i]->reaped)
            check_deadlines(r->live[i], clocks_mono_ms());
}

void *proc_supervisor(void *arg)
{
    struct proc *p = arg;
    struct round r = {0};

    pthread_mutex_lock(&p->lock);
    for (;;) {
        publish(p, &r);
        take(p, &r);
        if (p->stopping && !r.nlive && !p->running_fg && !p->running_bg)
            break;
        pthread_mutex_unlock(&p->lock);
        work(p, &r);
        pthread_mutex_lock(&p->lock);
    }
    p->stopped = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    round_free(&r);
    return NULL;
}
