/* mcp-proxy/cli_daemon.c - `runbox start`, `stop` and `restart`: the daemon at DAEMON_URL's
 * port, started detached with its log in $XDG_STATE_HOME/runbox/runboxd.log (autostart.h),
 * stopped with SIGTERM to the pid its /health reports, after checking that pid is a runboxd
 * of this machine. */
#include "cli_int.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "autostart.h"
#include "clocks.h"
#include "upstream.h"

static const char start_help[] =
    "usage: runbox start [-- RUNBOXD-OPTIONS...]\n"
    "\n"
    "Starts runboxd in the background on DAEMON_URL's port (default 7766), waits until it\n"
    "answers, and says where its log is ($XDG_STATE_HOME/runbox/runboxd.log). Options after\n"
    "-- go to runboxd, e.g. `runbox start -- --workspace ~/proj --allow-network`.\n"
    "exit: 0 running (also when it already was), 1 it did not start (the reason and the end of\n"
    "      its log are printed), 2 bad usage, 3 something else holds the port\n";

static const char stop_help[] =
    "usage: runbox stop\n"
    "\n"
    "Stops the runboxd at DAEMON_URL (SIGTERM) and waits until it has exited: its commands\n"
    "are killed and its Studio connections closed first.\n"
    "exit: 0 stopped (also when it was not running), 1 it did not stop or may not be stopped\n"
    "      from here, 3 something else holds the port\n";

static const char restart_help[] =
    "usage: runbox restart [-- RUNBOXD-OPTIONS...]\n"
    "\n"
    "Stops runboxd and starts it again with the options it was started with (or those after\n"
    "--). Exit codes as for start.\n";

/* ---- what answers ---- */

enum probe { PROBE_NONE, PROBE_RUNBOXD, PROBE_FOREIGN, PROBE_FAILED };

/* GET /health: who answers at the target. *pid is runboxd's pid when it said. */
static enum probe probe(const struct cli *c, long timeout_ms, long *pid, char **problem)
{
    struct cli_http_req q = {.method = "GET", .path = "/health", .timeout_ms = timeout_ms};
    struct cli_http_reply rep;
    enum probe p = PROBE_FAILED;
    cJSON *doc;

    *pid = 0;
    if (problem)
        *problem = NULL;
    cli_http_do(&c->target, &q, &rep);
    if (rep.r.outcome == UPSTREAM_REFUSED) {
        p = PROBE_NONE;
    } else if (rep.r.outcome == UPSTREAM_ANSWERED &&
               upstream_is_runboxd_body(rep.r.body, rep.r.body_len)) {
        const cJSON *v;

        doc = cJSON_ParseWithLength(rep.r.body, rep.r.body_len);
        v = cJSON_GetObjectItemCaseSensitive(doc, "pid");
        *pid = cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
        cJSON_Delete(doc);
        p = PROBE_RUNBOXD;
    } else {
        if (rep.r.outcome == UPSTREAM_ANSWERED)
            p = PROBE_FOREIGN;
        if (problem)
            *problem = cli_reply_problem(c, &rep);
    }
    cli_http_reply_cleanup(&rep);
    return p;
}

static bool is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "localhost") == 0 ||
           strcmp(host, "::1") == 0;
}

/* ---- start ---- */

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void print_log_tail(const struct autostart_launch *l)
{
    char tail[CLI_LOG_TAIL_BYTES];

    if (autostart_log_tail(l->log_path, l->log_offset, CLI_LOG_TAIL_LINES, "\n    ", tail,
                           sizeof(tail)) > 0)
        fprintf(stderr, "the end of its log (%s):\n    %s\n", l->log_path, tail);
    else
        fprintf(stderr, "it wrote nothing to its log (%s)\n", l->log_path);
}

/* The log's path, as autostart uses it. */
static void log_path(char *out, size_t n)
{
    if (autostart_log_path_for(getenv("XDG_STATE_HOME"), getenv("HOME"), out, n) < 0)
        snprintf(out, n, "/tmp/runboxd-%u.log", (unsigned)getuid());
}

/* Starts daemon with args and waits for it. */
static int launch_and_wait(struct cli *c, const char *daemon, const char *const *args)
{
    struct autostart_launch l;
    struct errinfo err = {0};
    char lp[PATH_MAX], how[96];
    int64_t until = clocks_mono_ms() + CLI_START_WAIT_MS;
    long pid = 0;
    int value, st;

    log_path(lp, sizeof(lp));
    if (autostart_launch(daemon, args, lp, &l, &err) < 0) {
        cli_err(c, "cannot start %s: %s", daemon, err.msg);
        return CLI_EXIT_FAILED;
    }
    for (;;) {
        enum probe p;

        st = autostart_launch_poll(&l, 25, &value);
        if (st != AUTOSTART_LAUNCH_RUNNING)
            break;
        p = probe(c, 500, &pid, NULL);
        if (p == PROBE_RUNBOXD) {
            autostart_launch_release(&l);
            printf("runboxd started at %s (pid %ld); log: %s\n", c->target.base_url, pid, lp);
            return CLI_EXIT_OK;
        }
        if (clocks_mono_ms() > until) {
            autostart_launch_release(&l);
            cli_err(c, "runboxd was started but did not answer at %s within %ld s",
                    c->target.base_url, CLI_START_WAIT_MS / 1000);
            print_log_tail(&l);
            return CLI_EXIT_FAILED;
        }
    }
    autostart_launch_release(&l);
    if (st == AUTOSTART_LAUNCH_EXEC_FAILED) {
        cli_err(c, "cannot run %s: %s", daemon, strerror(value));
    } else {
        autostart_format_exit(value, how, sizeof(how));
        cli_err(c, "runboxd %s right after it was started", how);
        print_log_tail(&l);
    }
    return CLI_EXIT_FAILED;
}

/* The runboxd to start: beside our own binary, else on PATH. */
static int find_daemon(struct cli *c, char *out, size_t n)
{
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

    self[len > 0 ? len : 0] = '\0';
    if (autostart_find_daemon(self, getenv("PATH"), out, n) == 0)
        return 0;
    cli_err(c, "runboxd was found neither beside runbox (%s) nor on PATH; install it",
            self[0] ? self : "?");
    return -1;
}

/* argv for runboxd: --port from DAEMON_URL, --bind when it names another loopback address,
 * then extra (without their own --port). Pointers into port/extra; NULL-terminated. */
static int build_args(const struct cli *c, char *const *extra, int nextra, const char **args,
                      char *port, size_t portn)
{
    int n = 0;

    snprintf(port, portn, "%d", c->target.port);
    args[n++] = "--port";
    args[n++] = port;
    if (strcmp(c->target.host, "127.0.0.1") != 0 && strcmp(c->target.host, "localhost") != 0) {
        args[n++] = "--bind";
        args[n++] = c->target.host;
    }
    for (int i = 0; i < nextra && n < AUTOSTART_ARGS_MAX; i++) {
        if (strcmp(extra[i], "--port") == 0 || strcmp(extra[i], "--bind") == 0) {
            i++; /* DAEMON_URL says where it listens */
            continue;
        }
        if (strncmp(extra[i], "--port=", 7) == 0 || strncmp(extra[i], "--bind=", 7) == 0)
            continue;
        args[n++] = extra[i];
    }
    args[n] = NULL;
    return n;
}

static int do_start(struct cli *c, char *const *extra, int nextra, const char *daemon_hint)
{
    const char *args[AUTOSTART_ARGS_MAX + 1];
    char daemon[PATH_MAX], port[8], *problem = NULL;
    long pid;
    enum probe p;

    if (!is_loopback(c->target.host)) {
        cli_err(c,
                "DAEMON_URL names %s; runbox starts runboxd on this machine's loopback "
                "address only",
                c->target.hostport);
        return CLI_EXIT_USAGE;
    }
    p = probe(c, CLI_QUICK_MS, &pid, &problem);
    if (p == PROBE_RUNBOXD) {
        printf("runboxd is already running at %s (pid %ld)\n", c->target.base_url, pid);
        return CLI_EXIT_OK;
    }
    if (p != PROBE_NONE) {
        cli_err(c, "%s", problem ? problem : "the port does not answer as runboxd would");
        free(problem);
        return CLI_EXIT_DOWN;
    }
    if (daemon_hint)
        snprintf(daemon, sizeof(daemon), "%s", daemon_hint);
    else if (find_daemon(c, daemon, sizeof(daemon)) < 0)
        return CLI_EXIT_FAILED;
    build_args(c, extra, nextra, args, port, sizeof(port));
    return launch_and_wait(c, daemon, args);
}

/* Options: nothing, or -- and runboxd's options. Returns the index of those, or -1 (printed). */
static int parse_passthrough(struct cli *c, int argc, char **argv, const char *help)
{
    for (int i = 0; i < argc; i++) {
        if (cli_help(argv[i], help))
            return -2;
        if (strcmp(argv[i], "--") == 0)
            return i + 1;
        cli_err(c, "unexpected '%s' (runboxd's options go after --)\n\n%s", argv[i], help);
        return -1;
    }
    return argc;
}

int cli_start(struct cli *c, int argc, char **argv)
{
    int first = parse_passthrough(c, argc, argv, start_help);

    if (first < 0)
        return first == -2 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (cli_need_target(c))
        return CLI_EXIT_USAGE;
    return do_start(c, argv + first, argc - first, NULL);
}

/* ---- stop ---- */

/* True when pid is a process named runboxd here. */
static bool is_runboxd(long pid)
{
    char path[64], comm[32] = "";
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
    f = fopen(path, "re");
    if (!f)
        return false;
    if (!fgets(comm, sizeof(comm), f))
        comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    return strcmp(comm, "runboxd") == 0;
}

/* Waits until pid has exited: a pidfd when the kernel has them, else kill(pid, 0) polling. */
static bool wait_gone(long pid, long timeout_ms)
{
    int64_t until = clocks_mono_ms() + timeout_ms;
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);

    if (fd >= 0) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n;

        do
            n = poll(&pfd, 1, (int)timeout_ms);
        while (n < 0 && errno == EINTR);
        close(fd);
        return n > 0;
    }
    while (kill((pid_t)pid, 0) == 0 || errno == EPERM) {
        if (clocks_mono_ms() > until)
            return false;
        sleep_ms(20);
    }
    return true;
}

/* Reads the old daemon's arguments (after argv[0]) from /proc/<pid>/cmdline into buf, with
 * pointers in args. Returns how many. */
static int old_args(long pid, char *buf, size_t n, char **args, int max)
{
    char path[64];
    FILE *f;
    size_t len;
    int k = 0;

    snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
    f = fopen(path, "re");
    if (!f)
        return 0;
    len = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[len] = '\0';
    for (size_t i = strlen(buf) + 1; i < len && k < max; i += strlen(buf + i) + 1)
        args[k++] = buf + i;
    return k;
}

/* Stops the daemon. *was_pid is its pid (0 when none ran). */
static int do_stop(struct cli *c, long *was_pid, bool quiet)
{
    char *problem = NULL;
    long pid;
    enum probe p = probe(c, CLI_QUICK_MS, &pid, &problem);

    *was_pid = 0;
    if (p == PROBE_NONE) {
        if (!quiet)
            printf("runboxd is not running at %s\n", c->target.base_url);
        return CLI_EXIT_OK;
    }
    if (p != PROBE_RUNBOXD) {
        cli_err(c, "%s", problem ? problem : "no answer");
        free(problem);
        return CLI_EXIT_DOWN;
    }
    if (pid <= 1 || !is_runboxd(pid)) {
        cli_err(c,
                "the runboxd at %s says its pid is %ld, which is no runboxd process here (it "
                "runs in another container or pid namespace?); stop it where it runs",
                c->target.base_url, pid);
        return CLI_EXIT_FAILED;
    }
    if (kill((pid_t)pid, SIGTERM) < 0) {
        cli_err(c, "cannot signal runboxd (pid %ld): %s%s", pid, strerror(errno),
                errno == EPERM ? " (it runs as another user: stop it as that user, or with sudo)"
                               : "");
        return CLI_EXIT_FAILED;
    }
    if (!wait_gone(pid, CLI_STOP_WAIT_MS)) {
        cli_err(c,
                "runboxd (pid %ld) did not exit within %ld s of SIGTERM; `kill -KILL %ld` "
                "ends it at once",
                pid, CLI_STOP_WAIT_MS / 1000, pid);
        return CLI_EXIT_FAILED;
    }
    *was_pid = pid;
    if (!quiet)
        printf("runboxd (pid %ld) stopped\n", pid);
    return CLI_EXIT_OK;
}

int cli_stop(struct cli *c, int argc, char **argv)
{
    long pid;

    for (int i = 0; i < argc; i++) {
        if (cli_help(argv[i], stop_help))
            return CLI_EXIT_OK;
        cli_err(c, "unexpected '%s'\n\n%s", argv[i], stop_help);
        return CLI_EXIT_USAGE;
    }
    if (cli_need_target(c))
        return CLI_EXIT_USAGE;
    return do_stop(c, &pid, false);
}

int cli_restart(struct cli *c, int argc, char **argv)
{
    int first = parse_passthrough(c, argc, argv, restart_help), n, rc;
    char cmdline[8192], exe[PATH_MAX], link[64], *args[AUTOSTART_ARGS_MAX];
    const char *daemon = NULL;
    long pid = 0;
    ssize_t len;
    char *problem = NULL;

    if (first < 0)
        return first == -2 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (cli_need_target(c))
        return CLI_EXIT_USAGE;
    /* The old daemon's binary and arguments, read before it goes. */
    n = 0;
    if (probe(c, CLI_QUICK_MS, &pid, &problem) == PROBE_RUNBOXD && pid > 1 && is_runboxd(pid)) {
        n = old_args(pid, cmdline, sizeof(cmdline), args, AUTOSTART_ARGS_MAX);
        snprintf(link, sizeof(link), "/proc/%ld/exe", pid);
        len = readlink(link, exe, sizeof(exe) - 1);
        exe[len > 0 ? len : 0] = '\0';
        if (len > 0 && access(exe, X_OK) == 0)
            daemon = exe; /* not when it was replaced (" (deleted)") */
    }
    free(problem);
    rc = do_stop(c, &pid, false);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (first < argc)
        return do_start(c, argv + first, argc - first, daemon);
    return do_start(c, args, n, daemon);
}
