/* daemon/proc.c - the exec engine's public side (see proc.h): making, submitting and waiting for
 * jobs, the sandbox check at start-up and the facts for /health. The supervisor thread that runs
 * the jobs is proc_super.c.
 *
 * Handlers append jobs and wait on p->cond; only the supervisor starts, reads, signals, reaps and
 * frees jobs. Nothing here calls the console or does I/O with the lock held. */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "clocks.h"
#include "console.h"
#include "hosttools.h"
#include "log.h"
#include "netpolicy.h"
#include "proc_int.h"
#include "quota.h"
#include "utf8.h"

#define PROC_QUEUE_MAX 64 /* foreground runs waiting for a slot */

void proc_wake(struct proc *p)
{
    char c = 1;

    (void)!write(p->wake[1], &c, 1);
}

void proc_free_job(struct job *j)
{
    free(j->command);
    free(j->argv);
    free(j->in_data);
    free(j->s[0].buf);
    free(j->s[1].buf);
    free(j);
}

/* ---- public API ---- */

static int ensure_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd)
            return -1;
    return 0;
}

static int make_job(struct proc *p, const struct proc_request *r, bool background, struct job **out,
                    struct errinfo *err);

static int run_fg(struct proc *p, const struct proc_request *r, struct proc_result *out,
                  struct errinfo *err);

/* Runs a first command in the sandbox: the cause of a failure becomes the sandbox's reason. It
 * reads the sandbox's kernel.shm_rmid_forced with shell builtins only (no binary it might lack):
 * "1" says the System V limits of proc_spawn.c took. Publishes the verdict under the lock and
 * sets p->checked. */
static void probe_sandbox(struct proc *p)
{
    struct proc_request r = {
        .command = "{ read x </proc/sys/kernel/shm_rmid_forced; } 2>/dev/null; echo \"shm=$x\"",
        .cwd = "/",
        .timeout_ms = 20000,
        .no_registry_env = true};
    struct proc_result res = {0};
    struct errinfo err = {0}, why = {0};
    bool sysv = false;

    if (run_fg(p, &r, &res, &err) < 0) {
        why = err;
    } else if (res.o.exit_code != 0) {
        int n = (int)(res.o.err_len > 300 ? 300 : res.o.err_len);

        while (n > 0 && res.o.err[n - 1] == '\n')
            n--;
        errinfo_set(&why, ERR_UNAVAILABLE,
                    "exec is unavailable: the sandbox check (a first command in bwrap) failed "
                    "with exit "
                    "code %d: %.*s%s",
                    res.o.exit_code, n, res.o.err ? res.o.err : "",
                    strstr(res.o.err ? res.o.err : "", "namespace")
                        ? "; user namespaces look disabled: enable them (sysctl "
                          "user.max_user_namespaces=15000; on Ubuntu "
                          "kernel.apparmor_restrict_unprivileged_userns=0)"
                        : "");
    } else {
        sysv = res.o.out && strncmp(res.o.out, "shm=1", 5) == 0;
        if (!sysv)
            log_warn("exec: this kernel does not let runboxd bound System V shared memory in a "
                     "sandbox (kernel.shmall, shm_rmid_forced); it is bounded by cgroups only");
    }
    proc_result_cleanup(&res);
    pthread_mutex_lock(&p->lock);
    if (why.kind != ERR_NONE) {
        p->available = false;
        p->why = why;
    }
    p->sysv_bounded = sysv;
    p->checked = true;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

/* Says what the sandbox check found, once it is known (see proc_new). */
static void report_check(struct proc *p)
{
    if (!p->available) {
        log_warn("%s", p->why.msg);
        if (p->console)
            console_appendf(p->console, CONSOLE_WARN, CONSOLE_SRC_DAEMON, 0, "%s", p->why.msg);
    } else {
        log_info("exec: sandbox ready (bwrap %s at %s)", p->version, p->bwrap);
    }
}

/* The sandbox check's thread: the HTTP listener starts while it runs. */
static void *check_main(void *arg)
{
    struct proc *p = arg;

    probe_sandbox(p);
    report_check(p); /* available and why no longer change */
    return NULL;
}

/* Returns once the sandbox check has decided (or the engine stops): available, why and
 * sysv_bounded are final then. Lock held. */
static void wait_checked(struct proc *p)
{
    while (!p->checked && !p->stopping)
        pthread_cond_wait(&p->cond, &p->lock);
}

struct proc *proc_new(const struct proc_options *opt, struct errinfo *err)
{
    struct proc *p = calloc(1, sizeof(*p));

    if (!p) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return NULL;
    }
    p->wake[0] = p->wake[1] = -1;
    p->ws_fd = opt->ws_fd;
    p->allow_network = opt->allow_network;
    p->net = opt->net;
    if (p->allow_network)
        p->net.mode = NETPOLICY_FULL;
    p->npm_cache = opt->npm_cache ? strdup(opt->npm_cache) : NULL;
    p->pip_cache = opt->pip_cache ? strdup(opt->pip_cache) : NULL;
    p->lim = opt->limits;
    p->console = opt->console;
    p->cg = opt->cgroup;
    p->tools = opt->tools;
    p->quota = opt->quota;
    p->self = getpid();
    p->next_id = 1;
    pthread_mutex_init(&p->lock, NULL);
    clocks_cond_init(&p->cond);
    clocks_cond_init(&p->watch_cond);
    if (ensure_std_fds() < 0 || pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        errinfo_sys(err, "exec: cannot set up the supervisor's pipes");
        goto fail;
    }
    proc_probe_host(p, opt->bwrap);
    if (pthread_create(&p->thread, NULL, proc_supervisor, p) != 0) {
        errinfo_set(err, ERR_INTERNAL, "exec: cannot start the supervisor thread");
        goto fail;
    }
    p->thread_started = true;
    if (pthread_create(&p->watch_thread, NULL, proc_watchdog, p) != 0) {
        errinfo_set(err, ERR_INTERNAL, "exec: cannot start the watchdog thread");
        goto fail;
    }
    p->watch_started = true;
    /* The first run takes 10-20 ms: the daemon goes on starting meanwhile, and whatever needs
     * the verdict waits for it (wait_checked). */
    if (!p->available) {
        p->checked = true;
        report_check(p);
    } else if (pthread_create(&p->check_thread, NULL, check_main, p) == 0) {
        p->check_started = true;
    } else {
        probe_sandbox(p);
        report_check(p);
    }
    return p;
fail:
    proc_free(p);
    return NULL;
}

void proc_shutdown(struct proc *p)
{
    if (!p || !p->thread_started)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_signal(&p->watch_cond);
    proc_wake(p);
    while (!p->stopped)
        pthread_cond_wait(&p->cond, &p->lock);
    /* Queued runs never start; their callers are told so. */
    for (struct job *j = p->jobs; j; j = j->next)
        if (j->state == JOB_QUEUED) {
            j->state = JOB_KILLED;
            j->killed = true;
            j->done = true;
            errinfo_set(&j->spawn_err, ERR_UNAVAILABLE, "exec: the daemon is stopping");
        }
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    if (p->check_started) /* its run has ended (killed or never started) */
        pthread_join(p->check_thread, NULL);
    p->check_started = false;
    pthread_join(p->thread, NULL);
    p->thread_started = false;
    if (p->watch_started)
        pthread_join(p->watch_thread, NULL);
    p->watch_started = false;
}

void proc_free(struct proc *p)
{
    if (!p)
        return;
    proc_shutdown(p);
    /* Handlers may still be collecting results: wait until none waits. */
    pthread_mutex_lock(&p->lock);
    for (bool busy = true; busy;) {
        busy = false;
        for (struct job *j = p->jobs; j; j = j->next)
            busy = busy || j->waiting;
        if (busy)
            pthread_cond_wait(&p->cond, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    while (p->jobs) {
        struct job *j = p->jobs;
        p->jobs = j->next;
        proc_free_job(j);
    }
    if (p->wake[0] >= 0)
        close(p->wake[0]);
    if (p->wake[1] >= 0)
        close(p->wake[1]);
    pthread_cond_destroy(&p->cond);
    pthread_cond_destroy(&p->watch_cond);
    pthread_mutex_destroy(&p->lock);
    free(p->bwrap);
    free(p->npm_cache);
    free(p->pip_cache);
    free(p);
}

const struct exec_limits *proc_limits(const struct proc *p)
{
    return &p->lim;
}

bool proc_sandbox_ok(struct proc *p, struct errinfo *why)
{
    bool ok;

    pthread_mutex_lock(&p->lock);
    wait_checked(p);
    ok = p->available;
    if (!ok && why)
        *why = p->why;
    pthread_mutex_unlock(&p->lock);
    return ok;
}

bool proc_wait_checked(struct proc *p, int timeout_ms)
{
    struct timespec until = clocks_deadline(timeout_ms);
    bool done;

    pthread_mutex_lock(&p->lock);
    while (!p->checked && !p->stopping)
        if (pthread_cond_timedwait(&p->cond, &p->lock, &until) == ETIMEDOUT)
            break;
    done = p->checked;
    pthread_mutex_unlock(&p->lock);
    return done;
}

const char *proc_bwrap_path(const struct proc *p)
{
    return p->bwrap;
}

static bool add_nullable(cJSON *obj, const char *key, const char *s)
{
    return s ? cJSON_AddStringToObject(obj, key, s) != NULL
             : cJSON_AddNullToObject(obj, key) != NULL;
}

static bool add_cgroup_json(cJSON *parent, const struct cgroup *cg)
{
    cJSON *c = cJSON_AddObjectToObject(parent, "cgroup");

    return c && add_nullable(c, "path", cgroup_path(cg)) &&
           add_nullable(c, "reason", cgroup_reason(cg));
}

cJSON *proc_sandbox_json(struct proc *p)
{
    cJSON *j = cJSON_CreateObject(), *l = cJSON_CreateObject();
    bool ok = j && l;

    /* The supervisor may turn cgroups off (under the lock). */
    pthread_mutex_lock(&p->lock);
    wait_checked(p);
    ok = ok && cJSON_AddBoolToObject(j, "available", p->available) &&
         (p->bwrap ? cJSON_AddStringToObject(j, "bwrap", p->bwrap) != NULL
                   : cJSON_AddNullToObject(j, "bwrap") != NULL) &&
         (p->version[0] ? cJSON_AddStringToObject(j, "version", p->version) != NULL
                        : cJSON_AddNullToObject(j, "version") != NULL) &&
         (p->available ? cJSON_AddNullToObject(j, "reason") != NULL
                       : cJSON_AddStringToObject(j, "reason", p->why.msg) != NULL) &&
         cJSON_AddBoolToObject(j, "network", p->net.mode == NETPOLICY_FULL) &&
         cJSON_AddStringToObject(j, "memory", cgroup_has_memory(p->cg) ? "cgroup" : "watchdog") &&
         cJSON_AddStringToObject(j, "procs", cgroup_has_pids(p->cg) ? "cgroup" : "rlimit") &&
         cJSON_AddBoolToObject(j, "sysv_shm_bounded", p->sysv_bounded) &&
         add_cgroup_json(j, p->cg) && cJSON_AddNumberToObject(l, "timeout_ms", p->lim.timeout_ms) &&
         cJSON_AddNumberToObject(l, "timeout_max_ms", p->lim.timeout_max_ms) &&
         cJSON_AddNumberToObject(l, "cpu_s", p->lim.cpu_s) &&
         cJSON_AddNumberToObject(l, "memory_mb", p->lim.memory_mb) &&
         cJSON_AddNumberToObject(l, "procs", p->lim.procs) &&
         cJSON_AddNumberToObject(l, "file_size_mb", p->lim.file_size_mb) &&
         cJSON_AddNumberToObject(l, "output_bytes", p->lim.output_bytes) &&
         cJSON_AddNumberToObject(l, "tmp_mb", p->lim.tmp_mb) &&
         cJSON_AddNumberToObject(l, "background_max", p->lim.background_max) &&
         cJSON_AddNumberToObject(l, "concurrent_max", p->lim.concurrent_max);
    pthread_mutex_unlock(&p->lock);
    if (ok) {
        cJSON *c = cJSON_AddObjectToObject(j, "caches");
        ok = c && add_nullable(c, "npm", p->npm_cache) && add_nullable(c, "pip", p->pip_cache);
    }
    if (ok && p->net.status) {
        cJSON *n = p->net.status(p->net.ctx);
        ok = n && cJSON_AddItemToObject(j, "egress", n);
        if (!ok)
            cJSON_Delete(n);
    }
    if (ok && p->tools) {
        cJSON *t = hosttools_json(p->tools);
        ok = t && cJSON_AddItemToObject(j, "tools", t);
        if (!ok)
            cJSON_Delete(t);
    }
    if (ok && cJSON_AddItemToObject(j, "limits", l))
        return j;
    cJSON_Delete(l);
    cJSON_Delete(j);
    return NULL;
}

/* The names of the workspace's top-level entries that get a link at the sandbox's root, read
 * when the command is submitted. Owned: one allocation (free()) holding the array and the
 * strings; *n = 0 and NULL when the workspace is empty or cannot be read. */
static char **root_entries(int ws_fd, size_t *n)
{
    size_t cap = 0, used = 0, bytes = 0, *offs = NULL;
    char *text = NULL, **out = NULL;
    struct dirent *e;
    int fd = openat(ws_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

    *n = 0;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    while (used < EXEC_ROOT_LINKS_MAX && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name) + 1;
        char *nt;

        if (!exec_root_name_ok(e->d_name))
            continue;
        if (used == cap) {
            size_t *no = realloc(offs, (cap = cap ? cap * 2 : 32) * sizeof(*offs));
            if (!no)
                break;
            offs = no;
        }
        nt = realloc(text, bytes + len);
        if (!nt)
            break;
        text = nt;
        memcpy(text + bytes, e->d_name, len);
        offs[used++] = bytes; /* an offset: text may still move */
        bytes += len;
    }
    closedir(d);
    if (used && (out = malloc(used * sizeof(*out) + bytes)) != NULL) {
        char *base = (char *)(out + used);

        memcpy(base, text, bytes);
        for (size_t i = 0; i < used; i++)
            out[i] = base + offs[i];
        *n = used;
    }
    free(offs);
    free(text);
    return out;
}

static int make_job(struct proc *p, const struct proc_request *r, bool background, struct job **out,
                    struct errinfo *err)
{
    size_t nroot = 0;
    char **root = root_entries(p->ws_fd, &nroot);
    struct exec_env net_env[4];
    size_t nnet = p->net.env && p->net.mode == NETPOLICY_PROXY && !r->no_registry_env
                      ? p->net.env(p->net.ctx, net_env, 4)
                      : 0;
    struct exec_spec spec = {
        .bwrap = p->bwrap,
        .ws_source = p->mnt,
        .cwd = r->cwd ? r->cwd : "/",
        .command = r->command,
        .env = r->env,
        .nenv = r->nenv,
        /* Mode full shares the host's network; in the others the setup process already made
         * the sandbox's own namespace, which bwrap keeps. */
        .allow_network = true,
        .proxy = p->net.mode == NETPOLICY_PROXY,
        .npm_cache = p->npm_cache,
        .pip_cache = p->pip_cache,
        .tmp_mb = p->lim.tmp_mb,
        .shm_mb = p->lim.memory_mb,
        .uid = (unsigned)p->uid,
        .gid = (unsigned)p->gid,
        .net_env = net_env,
        .nnet_env = nnet,
        .root_names = (const char *const *)root,
        .nroot = nroot,
    };
    struct job *j = calloc(1, sizeof(*j));

    memcpy(spec.sysdir, p->sysdir, sizeof(spec.sysdir));
    if (!j || !(j->command = strdup(r->command)) ||
        (r->stdin_data && !(j->in_data = malloc(r->stdin_len + 1)))) {
        errinfo_set(err, ERR_NOMEM, "exec: out of memory");
        goto fail;
    }
    j->argv = exec_build_argv(&spec, err);
    free(root);
    root = NULL;
    if (!j->argv)
        goto fail;
    if (j->in_data)
        memcpy(j->in_data, r->stdin_data, r->stdin_len);
    j->in_len = r->stdin_len;
    j->in_fd = j->pidfd = j->cg_fd = j->s[0].fd = j->s[1].fd = -1;
    j->background = background;
    j->timeout_ms = r->timeout_ms ? r->timeout_ms : background ? 0 : p->lim.timeout_ms;
    j->started_ms = clocks_wall_ms();
    *out = j;
    return 0;
fail:
    free(root);
    if (j)
        proc_free_job(j);
    return -1;
}

/* Appends j (state QUEUED) under the lock, after the checks that may refuse it. */
static int submit(struct proc *p, struct job *j, struct errinfo *err)
{
    if (p->stopping) {
        errinfo_set(err, ERR_UNAVAILABLE, "exec: the daemon is stopping");
        return -1;
    }
    if (j->background && p->running_bg >= p->lim.background_max) {
        errinfo_set(err, ERR_UNAVAILABLE,
                    "exec: %u background processes already run (the limit, "
                    "--exec-background-max); stop one with kill first (see process_list)",
                    p->running_bg);
        return -1;
    }
    if (!j->background && p->queued >= PROC_QUEUE_MAX) {
        errinfo_set(err, ERR_UNAVAILABLE,
                    "exec: %u commands are already waiting for one of the %u slots "
                    "(--exec-concurrent-max); try again when they are done",
                    p->queued, p->lim.concurrent_max);
        return -1;
    }
    j->id = p->next_id++;
    j->state = JOB_QUEUED;
    p->queued++;
    if (p->last)
        p->last->next = j;
    else
        p->jobs = j;
    p->last = j;
    proc_wake(p);
    return 0;
}

void proc_result_cleanup(struct proc_result *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof(*r));
}

/* Replaces *buf (*len bytes, owned) by its text: valid UTF-8 without NULs. */
static int as_text(char **buf, size_t *len)
{
    char *copy;
    size_t n;

    if (!*buf)
        return 0;
    if (utf8_make_valid(*buf, *len, &copy, &n) < 0)
        return -1;
    if (copy) {
        free(*buf);
        *buf = copy;
        *len = n;
    }
    return 0;
}

int proc_result_as_text(struct proc_result *r)
{
    if (as_text(&r->out, &r->o.out_len) < 0 || as_text(&r->err, &r->o.err_len) < 0)
        return -1;
    r->o.out = r->out;
    r->o.err = r->err;
    return 0;
}

/* Stops j because its caller cancelled (lock held): a queued run is finished without starting,
 * a running one is killed. */
static void cancel_job(struct proc *p, struct job *j)
{
    if (j->done || j->cancelled)
        return;
    j->cancelled = true;
    if (j->state == JOB_QUEUED) {
        j->killed = true;
        p->queued--;
        j->state = JOB_KILLED;
        j->exit_code = -1;
        j->done = true;
        pthread_cond_broadcast(&p->cond);
        return;
    }
    /* A started run: the supervisor kills it (never a handler, see proc_super.c). */
    j->kill_sig = SIGKILL;
    proc_wake(p);
}

/* The latest complete lines of j's output, as the supervisor last published them, into buf
 * (lock held). */
static void recent_lines(const struct job *j, char *buf, size_t size)
{
    const char *t = j->recent_pub, *end = j->recent_pub + j->recent_pub_len;
    const char *nl;
    size_t n;

    /* Start after the first newline when the start was cut, and end at the last one. */
    if (j->recent_pub_len == sizeof(j->recent_pub)) {
        nl = memchr(t, '\n', j->recent_pub_len);
        if (nl)
            t = nl + 1;
    }
    while (end > t && end[-1] != '\n')
        end--;
    n = (size_t)(end - t);
    if (n >= size)
        n = size - 1;
    memcpy(buf, t, n);
    buf[n] = '\0';
}

/* Waits until j is done (lock held), reporting progress about once a second when r asks. */
static void wait_run(struct proc *p, struct job *j, const struct proc_request *r)
{
    char recent[PROC_RECENT_MAX + 1];
    int64_t next = clocks_mono_ms() + 1000;

    while (!j->done) {
        struct timespec until;
        int64_t now;

        if (!r->progress) {
            pthread_cond_wait(&p->cond, &p->lock);
            continue;
        }
        until = clocks_at(next);
        pthread_cond_timedwait(&p->cond, &p->lock, &until);
        now = clocks_mono_ms();
        if (j->done || now < next)
            continue;
        next = now + 1000;
        recent_lines(j, recent, sizeof(recent));
        pthread_mutex_unlock(&p->lock);
        r->progress(r->progress_ctx, j->start_mono ? now - j->start_mono : 0, recent);
        pthread_mutex_lock(&p->lock);
    }
}

/* Moves j's outcome into out (under the lock). */
static void collect(struct job *j, const struct quota *quota, struct proc_result *out)
{
    out->out = j->s[0].buf;
    out->err = j->s[1].buf;
    j->s[0].buf = j->s[1].buf = NULL;
    out->o = (struct exec_outcome){
        .pid = j->id,
        .exit_code = j->exit_code,
        .duration_ms = j->duration_ms,
        .timed_out = j->timed_out,
        .timeout_ms = j->timeout_ms,
        .killed = j->killed,
        .output_limit = j->output_limit,
        .memory_limit = j->memory_limit,
        .cancelled = j->cancelled,
        .quota_exceeded = j->quota_exceeded,
        .quota_mb = quota_limit_mb(quota),
        .quota_used_mb = (j->quota_used + (1u << 19)) >> 20,
        .out = out->out,
        .err = out->err,
        .out_len = j->s[0].len,
        .err_len = j->s[1].len,
        .out_dropped = j->s[0].dropped,
        .err_dropped = j->s[1].dropped,
    };
}

int proc_run(struct proc *p, const struct proc_request *r, struct proc_result *out,
             struct errinfo *err)
{
    bool ok;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&p->lock);
    wait_checked(p);
    ok = p->available || !p->thread_started || p->why.kind == ERR_NONE;
    if (!ok)
        *err = p->why;
    pthread_mutex_unlock(&p->lock);
    return ok ? run_fg(p, r, out, err) : -1;
}

/* proc_run without waiting for the sandbox check (which is such a run itself). */
static int run_fg(struct proc *p, const struct proc_request *r, struct proc_result *out,
                  struct errinfo *err)
{
    struct job *j = NULL;
    int rc = -1;

    memset(out, 0, sizeof(*out));
    if (make_job(p, r, false, &j, err) < 0)
        return -1;
    j->waiting++;
    pthread_mutex_lock(&p->lock);
    if (submit(p, j, err) < 0) {
        pthread_mutex_unlock(&p->lock);
        proc_free_job(j);
        return -1;
    }
    if (r->ticket) {
        r->ticket->id = j->id;
        if (r->ticket->cancelled)
            cancel_job(p, j);
    }
    wait_run(p, j, r);
    if (j->spawn_err.kind != ERR_NONE) {
        *err = j->spawn_err;
    } else {
        collect(j, p->quota, out);
        rc = 0;
    }
    j->waiting--;
    pthread_cond_broadcast(&p->cond); /* proc_free may wait for this */
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void proc_cancel(struct proc *p, struct proc_ticket *t)
{
    pthread_mutex_lock(&p->lock);
    t->cancelled = true;
    if (t->id) {
        struct job *j = proc_find_job(p, t->id);

        if (j)
            cancel_job(p, j);
    }
    pthread_mutex_unlock(&p->lock);
}

int proc_start(struct proc *p, const struct proc_request *r, uint64_t *pid, struct errinfo *err)
{
    struct job *j = NULL;

    if (!proc_sandbox_ok(p, err))
        return -1;
    if (make_job(p, r, true, &j, err) < 0)
        return -1;
    pthread_mutex_lock(&p->lock);
    if (submit(p, j, err) < 0) {
        pthread_mutex_unlock(&p->lock);
        proc_free_job(j);
        return -1;
    }
    /* Wait until it started, so a failure to start is reported here. */
    j->waiting++;
    while ((j->state == JOB_QUEUED || j->state == JOB_STARTING) && !j->done)
        pthread_cond_wait(&p->cond, &p->lock);
    j->waiting--;
    *pid = j->id;
    if (j->spawn_err.kind != ERR_NONE) {
        *err = j->spawn_err;
        pthread_mutex_unlock(&p->lock);
        return -1;
    }
    pthread_mutex_unlock(&p->lock);
    return 0;
}
