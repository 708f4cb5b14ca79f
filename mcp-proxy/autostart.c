/* mcp-proxy/autostart.c - starting runboxd when nothing answers at the default address
 * (see autostart.h).
 *
 * The daemon is started as a grandchild in its own session, so it is not our child (no zombie,
 * no SIGCHLD to reap), survives the client closing runbox, and never gets a controlling
 * terminal. Whether exec worked is learned through a CLOEXEC pipe: it reaches end of file when
 * exec succeeds and carries errno when it fails. Readiness is learned by polling GET /health
 * through the proxy's upstream, so the loop goes on answering the client meanwhile. */
#include "autostart.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clocks.h"
#include "log.h"
#include "upstream.h"

#define PROBE_TIMEOUT_MS 500L

struct autostart {
    struct upstream *up; /* borrowed */
    autostart_done_fn done;
    void *ctx;
    char log_path[PATH_MAX];
    char self_exe[PATH_MAX]; /* "" when /proc/self/exe is unreadable */
    char *path_env;          /* owned copy of PATH, or NULL */
    bool running;
    int64_t started_ms;
    int64_t next_probe_ms;
    bool attempted;
    int64_t attempt_ms;
    bool last_ok;
    char last_reason[ERRINFO_MSG_MAX];
    struct autostart_launch launch; /* the daemon being started, while launched */
    bool launched;
    struct upstream_req *probe; /* the /health request in flight, or NULL */
};

/* ---- pure helpers ---- */

int autostart_log_path_for(const char *xdg_state_home, const char *home, char *out, size_t n)
{
    int len;

    if (xdg_state_home && xdg_state_home[0] == '/')
        len = snprintf(out, n, "%s/runbox/runboxd.log", xdg_state_home);
    else if (home && home[0] == '/')
        len = snprintf(out, n, "%s/.local/state/runbox/runboxd.log", home);
    else
        return -1;
    return len < 0 || (size_t)len >= n ? -1 : 0;
}

static bool is_executable_file(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static bool try_dir(const char *dir, size_t dirlen, char *out, size_t n)
{
    int len = snprintf(out, n, "%.*s/runboxd", (int)dirlen, dir);

    return len > 0 && (size_t)len < n && is_executable_file(out);
}

int autostart_find_daemon(const char *self_exe, const char *path_env, char *out, size_t n)
{
    const char *slash = self_exe ? strrchr(self_exe, '/') : NULL;
    const char *p = path_env;

    if (slash && try_dir(self_exe, (size_t)(slash - self_exe), out, n))
        return 0;
    while (p && *p) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);

        if (len > 0 && try_dir(p, len, out, n))
            return 0;
        p = colon ? colon + 1 : NULL;
    }
    if (n > 0)
        out[0] = '\0';
    return -1;
}

int autostart_url_port(const char *url, char *out, size_t n)
{
    const char *host = strstr(url, "://");
    const char *colon, *end;
    size_t len;

    if (n > 0)
        out[0] = '\0';
    host = host ? host + 3 : url;
    end = host + strcspn(host, "/?#");
    colon = memchr(host, ']', (size_t)(end - host)); /* skip an IPv6 literal */
    colon = memchr(colon ? colon : host, ':', (size_t)(end - (colon ? colon : host)));
    if (!colon)
        return -1;
    len = (size_t)(end - colon - 1);
    if (len == 0 || len >= n || len > 5 || strspn(colon + 1, "0123456789") < len)
        return -1;
    memcpy(out, colon + 1, len);
    out[len] = '\0';
    return 0;
}

/* ---- starting ---- */

/* mkdir -p for the directory part of path, mode 0700 for what it creates. */
static int make_parent_dirs(const char *path, struct errinfo *err)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);

    if (len >= sizeof(buf)) {
        errinfo_set(err, ERR_TOO_LARGE, "log path is too long");
        return -1;
    }
    memcpy(buf, path, len + 1);
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(buf, 0700) < 0 && errno != EEXIST) {
            errinfo_sys(err, "cannot create %s", buf);
            return -1;
        }
        *s = '/';
    }
    return 0;
}

/* ---- launching ----
 *
 * The forked child becomes a session leader, forks the daemon and stays as its watcher while
 * the hold pipe is open: when the daemon exits first, the watcher reaps it and writes its wait
 * status to the status pipe, so that a daemon that exits at once (a bad config, the port taken)
 * is reported with its exit status instead of a silent timeout. When the hold pipe closes (the
 * starter is done, or gone), the watcher exits and the daemon is left to init. The daemon
 * itself writes errno to the same pipe when exec fails (the pipe is CLOEXEC). */

struct launch_msg {
    int kind; /* LAUNCH_EXEC_FAILED (value: errno) or LAUNCH_EXITED (value: wait status) */
    int value;
};

enum { LAUNCH_EXEC_FAILED = 1, LAUNCH_EXITED = 2 };

#define WATCH_POLL_MS 20

static void __attribute__((noreturn)) watch_daemon(pid_t daemon, int hold_fd, int status_fd)
{
    struct pollfd pfd = {.fd = hold_fd, .events = POLLIN};
    struct launch_msg m = {.kind = LAUNCH_EXITED};

    for (;;) {
        int n = poll(&pfd, 1, WATCH_POLL_MS);

        if (n > 0)
            _exit(0); /* the starter closed the hold pipe: the daemon goes on alone */
        if (waitpid(daemon, &m.value, WNOHANG) == daemon) {
            if (write(status_fd, &m, sizeof(m)) < 0)
                _exit(1);
            _exit(0);
        }
    }
}

/* In the forked child. Only async-signal-safe calls. */
static void __attribute__((noreturn))
run_child(const char *daemon, char *const *argv, int log_fd, int status_fd, int hold_fd)
{
    struct launch_msg m = {.kind = LAUNCH_EXEC_FAILED};
    struct sigaction sa;
    sigset_t none;
    int null_fd;
    pid_t pid;

    setsid();
    pid = fork();
    if (pid < 0)
        _exit(1);
    if (pid > 0)
        watch_daemon(pid, hold_fd, status_fd);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL; /* runbox ignores SIGPIPE; the daemon starts with defaults */
    sigaction(SIGPIPE, &sa, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(log_fd, STDOUT_FILENO) < 0 ||
        dup2(log_fd, STDERR_FILENO) < 0)
        goto fail;
    /* Our sockets and pipes (libcurl's, the client's, the hold pipe) must not leak into the
     * daemon. */
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    execv(daemon, argv);
fail:
    m.value = errno;
    if (write(status_fd, &m, sizeof(m)) < 0)
        _exit(127);
    _exit(127);
}

int autostart_launch(const char *daemon, const char *const *args, const char *log_path,
                     struct autostart_launch *l, struct errinfo *err)
{
    char *argv[AUTOSTART_ARGS_MAX + 2];
    int spipe[2] = {-1, -1}, hpipe[2] = {-1, -1}, log_fd = -1, rc = -1;
    struct stat st;
    size_t n = 0;
    pid_t pid;

    memset(l, 0, sizeof(*l));
    l->status_fd = l->hold_fd = -1;
    argv[n++] = (char *)"runboxd";
    for (; args && args[n - 1] && n <= AUTOSTART_ARGS_MAX; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    if (make_parent_dirs(log_path, err) < 0)
        goto out;
    log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (log_fd < 0) {
        errinfo_sys(err, "cannot open %s", log_path);
        goto out;
    }
    l->log_offset = fstat(log_fd, &st) == 0 ? (long long)st.st_size : 0;
    snprintf(l->log_path, sizeof(l->log_path), "%s", log_path);
    if (pipe2(spipe, O_CLOEXEC) < 0 || pipe2(hpipe, O_CLOEXEC) < 0) {
        errinfo_sys(err, "cannot create a pipe");
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        errinfo_sys(err, "cannot fork");
        goto out;
    }
    if (pid == 0) {
        close(hpipe[1]);
        run_child(daemon, argv, log_fd, spipe[1], hpipe[0]);
    }
    if (fcntl(spipe[0], F_SETFL, O_NONBLOCK) < 0) {
        errinfo_sys(err, "cannot set up the exec-status pipe");
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        goto out;
    }
    l->watcher = pid;
    l->status_fd = spipe[0];
    spipe[0] = -1;
    l->hold_fd = hpipe[1];
    hpipe[1] = -1;
    rc = 0;
out:
    for (int i = 0; i < 2; i++) {
        if (spipe[i] >= 0)
            close(spipe[i]);
        if (hpipe[i] >= 0)
            close(hpipe[i]);
    }
    if (log_fd >= 0)
        close(log_fd);
    return rc;
}

void autostart_format_exit(int wstatus, char *out, size_t n)
{
    if (WIFEXITED(wstatus))
        snprintf(out, n, "exited with status %d", WEXITSTATUS(wstatus));
    else if (WIFSIGNALED(wstatus))
        snprintf(out, n, "was killed by signal %d (%s)", WTERMSIG(wstatus),
                 strsignal(WTERMSIG(wstatus)));
    else
        snprintf(out, n, "stopped (wait status %d)", wstatus);
}

int autostart_launch_poll(struct autostart_launch *l, int timeout_ms, int *value)
{
    struct pollfd pfd = {.fd = l->status_fd, .events = POLLIN};
    struct launch_msg m;
    ssize_t n;

    if (l->status_fd < 0)
        return AUTOSTART_LAUNCH_RUNNING;
    if (timeout_ms > 0 && poll(&pfd, 1, timeout_ms) <= 0)
        return AUTOSTART_LAUNCH_RUNNING;
    n = read(l->status_fd, &m, sizeof(m));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return AUTOSTART_LAUNCH_RUNNING;
    if (n != (ssize_t)sizeof(m)) {
        /* End of file: the watcher is gone without a word (killed); nothing more to learn. */
        close(l->status_fd);
        l->status_fd = -1;
        return AUTOSTART_LAUNCH_RUNNING;
    }
    *value = m.value;
    return m.kind == LAUNCH_EXEC_FAILED ? AUTOSTART_LAUNCH_EXEC_FAILED : AUTOSTART_LAUNCH_EXITED;
}

void autostart_launch_release(struct autostart_launch *l)
{
    if (l->hold_fd >= 0)
        close(l->hold_fd); /* the watcher sees it at once and exits */
    if (l->status_fd >= 0)
        close(l->status_fd);
    if (l->watcher > 0)
        while (waitpid(l->watcher, NULL, 0) < 0 && errno == EINTR)
            ;
    l->hold_fd = l->status_fd = -1;
    l->watcher = 0;
}

int autostart_log_tail(const char *path, long long offset, int lines, const char *sep, char *out,
                       size_t n)
{
    char buf[AUTOSTART_TAIL_BYTES + 1];
    const char *starts[64];
    int fd = open(path, O_RDONLY | O_CLOEXEC), k = 0, first;
    struct stat st;
    ssize_t got;
    size_t len = 0;

    if (n > 0)
        out[0] = '\0';
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) == 0 && st.st_size - offset > AUTOSTART_TAIL_BYTES)
        offset = st.st_size - AUTOSTART_TAIL_BYTES;
    got = pread(fd, buf, AUTOSTART_TAIL_BYTES, offset < 0 ? 0 : offset);
    close(fd);
    if (got <= 0)
        return got < 0 ? -1 : 0;
    buf[got] = '\0';
    if (lines > 64)
        lines = 64;
    /* The starts of the non-empty lines, the last `lines` of them kept in a ring. */
    for (char *s = buf; *s;) {
        char *nl = strchr(s, '\n');

        if (nl)
            *nl = '\0';
        if (*s)
            starts[k++ % lines] = s;
        s = nl ? nl + 1 : s + strlen(s);
    }
    first = k > lines ? k - lines : 0;
    for (int i = first; i < k; i++) {
        int w = snprintf(out + len, n - len, "%s%s", i > first ? sep : "", starts[i % lines]);

        if (w < 0 || (size_t)w >= n - len)
            break; /* cut: snprintf wrote what fits */
        len += (size_t)w;
    }
    return k;
}

static int spawn(struct autostart *as, struct errinfo *err)
{
    char daemon[PATH_MAX], port[8];
    const char *args[3] = {NULL, NULL, NULL};

    if (autostart_find_daemon(as->self_exe, as->path_env, daemon, sizeof(daemon)) < 0) {
        errinfo_set(err, ERR_NOT_FOUND,
                    "runboxd was found neither beside runbox (%.200s) nor on PATH; install it "
                    "or start it yourself",
                    as->self_exe[0] ? as->self_exe : "unknown location");
        return -1;
    }
    /* The port we poll, given on the command line so a port in the user's config file cannot
     * make the daemon listen where runbox does not look. */
    if (autostart_url_port(upstream_base_url(as->up), port, sizeof(port)) == 0) {
        args[0] = "--port";
        args[1] = port;
    }
    if (autostart_launch(daemon, args, as->log_path, &as->launch, err) < 0)
        return -1;
    as->launched = true;
    log_info("autostart: started %s (log %s)", daemon, as->log_path);
    return 0;
}

/* ---- waiting for /health ---- */

static void finish(struct autostart *as, bool ok, const char *reason)
{
    as->running = false;
    if (as->probe) {
        upstream_cancel(as->up, as->probe);
        as->probe = NULL;
    }
    if (as->launched) {
        autostart_launch_release(&as->launch);
        as->launched = false;
    }
    as->last_ok = ok;
    snprintf(as->last_reason, sizeof(as->last_reason), "%s", ok ? "" : reason);
    if (ok)
        log_info("autostart: runboxd is up");
    else
        log_warn("autostart: could not start runboxd: %s", reason);
    as->done(as->ctx, ok, reason);
}

static void on_health(void *ctx, const struct upstream_reply *reply)
{
    struct autostart *as = ctx;

    as->probe = NULL;
    /* Any answer of runboxd's means it listens (it may want a token for /health); an answer
     * of another program's means the port is not ours to use. */
    if (reply->outcome == UPSTREAM_ANSWERED) {
        char *msg = upstream_is_runboxd_body(reply->body, reply->body_len)
                        ? NULL
                        : upstream_foreign_message(upstream_base_url(as->up), reply->status,
                                                   reply->body, reply->body_len);

        finish(as, msg == NULL, msg);
        free(msg);
        return;
    }
    as->next_probe_ms = clocks_mono_ms() + AUTOSTART_POLL_MS;
}

/* Returns true when the daemon could not be run or has exited (and finishes with the reason:
 * the exit status and the last lines it logged). */
static bool launch_failed(struct autostart *as)
{
    char reason[ERRINFO_MSG_MAX], how[64], tail[120];
    int value = 0, st;

    if (!as->launched)
        return false;
    st = autostart_launch_poll(&as->launch, 0, &value);
    if (st == AUTOSTART_LAUNCH_RUNNING)
        return false;
    if (st == AUTOSTART_LAUNCH_EXEC_FAILED) {
        snprintf(reason, sizeof(reason), "cannot run runboxd: %s", strerror(value));
    } else {
        autostart_format_exit(value, how, sizeof(how));
        autostart_log_tail(as->launch.log_path, as->launch.log_offset, 2, " | ", tail,
                           sizeof(tail));
        snprintf(reason, sizeof(reason), "runboxd %s right after it was started%s%s", how,
                 tail[0] ? "; its log says: " : " and logged nothing", tail);
    }
    finish(as, false, reason);
    return true;
}

void autostart_tick(struct autostart *as, int64_t now_ms)
{
    struct errinfo err = {0};

    if (!as || !as->running || launch_failed(as))
        return;
    if (now_ms - as->started_ms >= AUTOSTART_WAIT_MS) {
        finish(as, false, "runboxd was started but did not answer GET /health within 2 s");
        return;
    }
    if (as->probe || now_ms < as->next_probe_ms)
        return;
    as->probe = upstream_get(as->up, "/health", PROBE_TIMEOUT_MS, on_health, as, &err);
    if (!as->probe)
        finish(as, false, err.msg);
}

int autostart_timeout_ms(const struct autostart *as, int64_t now_ms)
{
    int64_t until;

    if (!as || !as->running)
        return -1;
    until = as->started_ms + AUTOSTART_WAIT_MS;
    if (!as->probe && as->next_probe_ms < until)
        until = as->next_probe_ms;
    /* The launch's status pipe is not polled: look at it at least every poll interval. */
    if (as->launched && now_ms + AUTOSTART_POLL_MS < until)
        until = now_ms + AUTOSTART_POLL_MS;
    return until <= now_ms ? 0 : (int)(until - now_ms);
}

int autostart_begin(struct autostart *as, int64_t now_ms, struct errinfo *err)
{
    if (as->running)
        return 0;
    if (as->attempted && now_ms - as->attempt_ms < AUTOSTART_RETRY_MS) {
        if (as->last_ok)
            errinfo_set(err, ERR_UNAVAILABLE,
                        "runboxd was started less than %d s ago and stopped answering",
                        AUTOSTART_RETRY_MS / 1000);
        else
            errinfo_set(err, ERR_UNAVAILABLE, "%s", as->last_reason);
        return -1;
    }
    as->attempted = true;
    as->attempt_ms = now_ms;
    if (spawn(as, err) < 0) {
        as->last_ok = false;
        snprintf(as->last_reason, sizeof(as->last_reason), "%s", err ? err->msg : "failed");
        log_warn("autostart: could not start runboxd: %s", as->last_reason);
        return -1;
    }
    as->running = true;
    as->started_ms = now_ms;
    as->next_probe_ms = now_ms; /* a refused probe costs microseconds: start at once */
    return 0;
}

bool autostart_is_running(const struct autostart *as)
{
    return as && as->running;
}

const char *autostart_log_path(const struct autostart *as)
{
    return as->log_path;
}

/* ---- setup ---- */

static void find_log_path(struct autostart *as)
{
    const char *home = getenv("HOME");
    struct passwd *pw;

    if (autostart_log_path_for(getenv("XDG_STATE_HOME"), home, as->log_path,
                               sizeof(as->log_path)) == 0)
        return;
    pw = getpwuid(getuid());
    if (pw && autostart_log_path_for(NULL, pw->pw_dir, as->log_path, sizeof(as->log_path)) == 0)
        return;
    snprintf(as->log_path, sizeof(as->log_path), "/tmp/runboxd-%u.log", (unsigned)getuid());
}

struct autostart *autostart_new(struct upstream *up, autostart_done_fn done, void *ctx,
                                struct errinfo *err)
{
    struct autostart *as = calloc(1, sizeof(*as));
    const char *path = getenv("PATH");
    ssize_t n;

    if (!as) {
        errinfo_set(err, ERR_NOMEM, "autostart: out of memory");
        return NULL;
    }
    as->up = up;
    as->done = done;
    as->ctx = ctx;
    n = readlink("/proc/self/exe", as->self_exe, sizeof(as->self_exe) - 1);
    as->self_exe[n > 0 ? n : 0] = '\0';
    if (path) {
        as->path_env = strdup(path);
        if (!as->path_env) {
            free(as);
            errinfo_set(err, ERR_NOMEM, "autostart: out of memory");
            return NULL;
        }
    }
    find_log_path(as);
    return as;
}

void autostart_free(struct autostart *as)
{
    if (!as)
        return;
    if (as->probe)
        upstream_cancel(as->up, as->probe);
    if (as->launched)
        autostart_launch_release(&as->launch);
    free(as->path_env);
    free(as);
}
