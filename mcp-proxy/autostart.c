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
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
    int exec_fd;                /* read end of the exec-status pipe while it is open, else -1 */
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

/* In the forked child: becomes the session leader, forks the daemon and exits at once. The
 * grandchild execs runboxd with the log as stdout and stderr. Only async-signal-safe calls. */
static void __attribute__((noreturn))
run_child(const char *daemon, const char *port, int log_fd, int status_fd)
{
    char *const argv[] = {(char *)"runboxd", port ? (char *)"--port" : NULL, (char *)port, NULL};
    struct sigaction sa;
    sigset_t none;
    int null_fd, e;
    pid_t pid;

    setsid();
    pid = fork();
    if (pid != 0)
        _exit(pid < 0 ? 1 : 0);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL; /* runbox ignores SIGPIPE; the daemon starts with defaults */
    sigaction(SIGPIPE, &sa, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(log_fd, STDOUT_FILENO) < 0 ||
        dup2(log_fd, STDERR_FILENO) < 0)
        goto fail;
    /* Our sockets and pipes (libcurl's, the client's) must not leak into the daemon. */
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    execv(daemon, argv);
fail:
    e = errno;
    if (write(status_fd, &e, sizeof(e)) < 0)
        _exit(127);
    _exit(127);
}

static int spawn(struct autostart *as, struct errinfo *err)
{
    char daemon[PATH_MAX], port[8];
    int pipefd[2] = {-1, -1}, log_fd = -1, rc = -1, status;
    pid_t pid;

    if (autostart_find_daemon(as->self_exe, as->path_env, daemon, sizeof(daemon)) < 0) {
        errinfo_set(err, ERR_NOT_FOUND,
                    "runboxd was found neither beside runbox (%.200s) nor on PATH; install it "
                    "or start it yourself",
                    as->self_exe[0] ? as->self_exe : "unknown location");
        goto out;
    }
    /* The port we poll, given on the command line so a port in the user's config file cannot
     * make the daemon listen where runbox does not look. */
    autostart_url_port(upstream_base_url(as->up), port, sizeof(port));
    if (make_parent_dirs(as->log_path, err) < 0)
        goto out;
    log_fd = open(as->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (log_fd < 0) {
        errinfo_sys(err, "cannot open %s", as->log_path);
        goto out;
    }
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        errinfo_sys(err, "cannot create a pipe");
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        errinfo_sys(err, "cannot fork");
        goto out;
    }
    if (pid == 0)
        run_child(daemon, port[0] ? port : NULL, log_fd, pipefd[1]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ; /* the intermediate child exits right after its fork */
    close(pipefd[1]);
    pipefd[1] = -1;
    if (fcntl(pipefd[0], F_SETFL, O_NONBLOCK) < 0) {
        errinfo_sys(err, "cannot set up the exec-status pipe");
        goto out;
    }
    as->exec_fd = pipefd[0];
    pipefd[0] = -1;
    log_info("autostart: started %s (log %s)", daemon, as->log_path);
    rc = 0;
out:
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    if (log_fd >= 0)
        close(log_fd);
    return rc;
}

/* ---- waiting for /health ---- */

static void finish(struct autostart *as, bool ok, const char *reason)
{
    as->running = false;
    if (as->probe) {
        upstream_cancel(as->up, as->probe);
        as->probe = NULL;
    }
    if (as->exec_fd >= 0) {
        close(as->exec_fd);
        as->exec_fd = -1;
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
    /* Any HTTP answer means the daemon listens (it may want a token for /health). */
    if (reply->outcome == UPSTREAM_ANSWERED) {
        finish(as, true, NULL);
        return;
    }
    as->next_probe_ms = upstream_now_ms() + AUTOSTART_POLL_MS;
}

/* Returns true when exec failed (and finishes with the reason). */
static bool exec_failed(struct autostart *as)
{
    char reason[ERRINFO_MSG_MAX];
    int e = 0;
    ssize_t n;

    if (as->exec_fd < 0)
        return false;
    n = read(as->exec_fd, &e, sizeof(e));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return false;
    close(as->exec_fd);
    as->exec_fd = -1;
    if (n != (ssize_t)sizeof(e))
        return false; /* end of file: exec succeeded */
    snprintf(reason, sizeof(reason), "cannot run runboxd: %s", strerror(e));
    finish(as, false, reason);
    return true;
}

void autostart_tick(struct autostart *as, int64_t now_ms)
{
    struct errinfo err = {0};

    if (!as || !as->running || exec_failed(as))
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
    /* The exec-status pipe is not polled: look at it at least every poll interval. */
    if (as->exec_fd >= 0 && now_ms + AUTOSTART_POLL_MS < until)
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
    as->exec_fd = -1;
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
    if (as->exec_fd >= 0)
        close(as->exec_fd);
    free(as->path_env);
    free(as);
}
