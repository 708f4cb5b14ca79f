/* daemon/mcpclient_stdio.c - the stdio transport of the MCP client (see mcpclient_int.h): the
 * server is a child of runboxd, JSON-RPC messages are lines on its stdin and stdout, and its
 * stderr goes to the console (source "mcp:<name>").
 *
 * The child is started with threadstack_spawn (posix_spawn's way, sharing runboxd's memory
 * until it execs, but our own child code: it must ask for PR_SET_PDEATHSIG, so that a runboxd
 * killed with -9 takes its servers along) into a process group of its own, which it tells the
 * watcher of groupwatch.h (PDEATHSIG does not reach what a wrapper such as sh -c or npx forks),
 * with the signals runboxd blocks unblocked, SIGPIPE back to its default and no descriptor but
 * 0, 1 and 2; a failure before exec reaches the parent as an errno on a close-on-exec pipe.
 * Its environment is runboxd's, less RUNBOX_TOKEN, plus the config's "env". It is stopped the
 * way the MCP spec asks: stdin closed, then SIGTERM to its group, then SIGKILL. With "sandbox":
 * true it runs under bubblewrap: the host's files read-only, a private /tmp, no home
 * directories, and no network unless the exec network policy allows it. */
#include "mcpclient_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "groupwatch.h"
#include "log.h"
#include "registry.h"
#include "threadstack.h"

extern char **environ;

#define READ_CHUNK      (64u << 10)
#define STDERR_LINE_MAX 4096
#define STOP_STDIN_MS   500  /* after stdin is closed, before SIGTERM */
#define STOP_TERM_MS    1000 /* after SIGTERM, before SIGKILL */

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1u << 2) /* linux/close_range.h */
#endif

/* A growing line of stdout (or stderr), and what is kept of one too long to hold. */
struct linebuf {
    char *data;
    size_t len, cap, max;
    bool discarding; /* the line is over max: only its size, head and tail are kept */
    size_t dropped;
    struct mcpclient_edges edges; /* of a line too long to hold: where its id may be */
};

struct child {
    pid_t pid;
    int in, out, err; /* our ends; -1 when closed */
    int pidfd;
    char *wbuf; /* what is being written to stdin */
    size_t wlen, woff;
    /* stdout's line and read buffer belong to the thread holding the reader's turn
     * (mcpclient_int.h): the client's thread or a waiting worker; stderr's to the client's. */
    struct linebuf lo, le;
    char *obuf; /* READ_CHUNK bytes, on the heap: a worker's stack is kept small */
    int status;
    bool reaped;
};

/* ---- building the command ---- */

/* The full path of cmd on PATH (or cmd itself when it has a '/'). Owned, or NULL. */
static char *find_command(const char *cmd, const char *path)
{
    const char *p = path && path[0] ? path : "/usr/local/bin:/usr/bin:/bin";

    if (strchr(cmd, '/'))
        return access(cmd, X_OK) == 0 ? strdup(cmd) : NULL;
    while (*p) {
        size_t n = strcspn(p, ":");
        char full[4096];

        if (n && (size_t)snprintf(full, sizeof(full), "%.*s/%s", (int)n, p, cmd) < sizeof(full) &&
            access(full, X_OK) == 0)
            return strdup(full);
        p += n;
        if (*p == ':')
            p++;
    }
    return NULL;
}

/* The value of NAME in the config's env, else in runboxd's, or NULL. */
static const char *env_value(const struct registry_spec *s, const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; i < s->env.n; i++)
        if (strncmp(s->env.v[i], name, n) == 0 && s->env.v[i][n] == '=')
            return s->env.v[i] + n + 1;
    return getenv(name);
}

/* runboxd's environment without RUNBOX_TOKEN and the names the config sets, then the
 * config's. Owned array (its strings borrowed), or NULL. */
static char **build_env(const struct registry_spec *s)
{
    size_t n = 0, k = 0;
    char **envp;

    while (environ[n])
        n++;
    envp = calloc(n + s->env.n + 1, sizeof(*envp));
    if (!envp)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        size_t nl = strcspn(e, "=");
        bool overridden = strncmp(e, "RUNBOX_TOKEN=", 13) == 0;

        for (size_t j = 0; j < s->env.n && !overridden; j++)
            overridden = strncmp(s->env.v[j], e, nl + 1) == 0;
        if (!overridden)
            envp[k++] = environ[i];
    }
    for (size_t j = 0; j < s->env.n; j++)
        envp[k++] = s->env.v[j];
    return envp;
}

/* argv: the command and its args, under bwrap when the spec asks for the sandbox. Owned array
 * (strings borrowed from the spec, the literals and *path). */
static char **build_argv(const struct mcpclient_options *o, const struct registry_spec *s,
                         const char *path)
{
    static const char *const sandbox[] = {"--die-with-parent",
                                          "--new-session",
                                          "--unshare-user",
                                          "--unshare-pid",
                                          "--unshare-ipc",
                                          "--unshare-uts",
                                          "--ro-bind",
                                          "/",
                                          "/",
                                          "--dev",
                                          "/dev",
                                          "--proc",
                                          "/proc",
                                          "--tmpfs",
                                          "/tmp",
                                          "--tmpfs",
                                          "/home",
                                          "--tmpfs",
                                          "/root",
                                          "--cap-drop",
                                          "ALL"};
    size_t ns = sizeof(sandbox) / sizeof(sandbox[0]);
    char **argv = calloc(s->args.n + ns + 8, sizeof(*argv));
    size_t k = 0;

    if (!argv)
        return NULL;
    if (s->sandbox) {
        argv[k++] = (char *)o->bwrap;
        for (size_t i = 0; i < ns; i++)
            argv[k++] = (char *)sandbox[i];
        if (!o->allow_network)
            argv[k++] = "--unshare-net";
        argv[k++] = "--chdir";
        argv[k++] = s->cwd ? s->cwd : "/tmp";
        argv[k++] = "--";
    }
    argv[k++] = (char *)path;
    for (size_t i = 0; i < s->args.n; i++)
        argv[k++] = s->args.v[i];
    return argv;
}

/* ---- the child ---- */

/* What the child needs before it execs: all of it is the spawning thread's, which sleeps until
 * the child has exec'd (threadstack_spawn). */
struct exec_args {
    const char *file;
    char **argv, **envp;
    const char *cwd;
    int in, out, err, report; /* the pipes' child ends; report gets the errno of a failure */
    pid_t parent;
};

/* Marks every descriptor above 2 close-on-exec: the server gets stdin, stdout and stderr only,
 * not what runboxd's own parent left open without O_CLOEXEC (`exec 7>file; runboxd`), which
 * bubblewrap too would pass on. Marked, not closed: the report pipe must work until execve.
 * CLOSE_RANGE_CLOEXEC is Linux 5.11; before it, each descriptor under the limit is marked. */
static int close_above_stdio(void)
{
    struct rlimit lim;

    if (syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) == 0)
        return 0;
    if (getrlimit(RLIMIT_NOFILE, &lim) < 0)
        return -1;
    for (rlim_t fd = 3; fd < lim.rlim_cur && fd < (1u << 20); fd++)
        (void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
    return 0;
}

/* The child, in runboxd's memory until execve: system calls only (threadstack.h). Every signal
 * stays blocked until just before execve. */
static int child_exec(void *arg)
{
    const struct exec_args *x = arg;
    sigset_t none;
    int e;

    if (setpgid(0, 0) < 0)
        goto fail;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != x->parent)
        threadstack_child_exit(127);
    /* Before execve, so that nothing the server starts is ever out of the watcher's sight;
     * should runboxd die right now, the watcher still reads this, then kills the group. */
    groupwatch_add(getpid());
    signal(SIGPIPE, SIG_DFL); /* this process's own table: no CLONE_SIGHAND */
    if (dup2(x->in, 0) < 0 || dup2(x->out, 1) < 0 || dup2(x->err, 2) < 0)
        goto fail;
    if (close_above_stdio() < 0)
        goto fail;
    if (x->cwd && chdir(x->cwd) < 0)
        goto fail;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(x->file, x->argv, x->envp);
fail:
    e = errno;
    if (write(x->report, &e, sizeof(e)) < 0)
        threadstack_child_exit(127);
    threadstack_child_exit(127);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static int spawn(struct mcpclient *c, struct child *ch, struct errinfo *why)
{
    const struct registry_spec *s = mcpclient__spec(c);
    const struct mcpclient_options *o = mcpclient__options(c);
    int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1}, rep[2] = {-1, -1};
    char *path = find_command(s->command, env_value(s, "PATH"));
    char **argv = NULL, **envp = NULL;
    char shown[1024];
    int rc = -1, e = 0;
    ssize_t n;

    if (!path) {
        errinfo_set(why, ERR_NOT_FOUND, "command \"%.200s\" was not found (PATH: %.300s)",
                    s->shown.command, env_value(s, "PATH") ? env_value(s, "PATH") : "(unset)");
        return -1;
    }
    if (s->sandbox && !o->bwrap) {
        errinfo_set(why, ERR_UNAVAILABLE,
                    "\"sandbox\": true needs bubblewrap, which this runboxd does not have");
        goto out;
    }
    argv = build_argv(o, s, path);
    envp = build_env(s);
    if (!argv || !envp || pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 ||
        pipe2(perr, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0) {
        errinfo_sys(why, "cannot start %s", s->shown.command);
        goto out;
    }
    {
        struct exec_args x = {.file = argv[0],
                              .argv = argv,
                              .envp = envp,
                              .cwd = s->sandbox ? NULL : s->cwd,
                              .in = pin[0],
                              .out = pout[1],
                              .err = perr[1],
                              .report = rep[1],
                              .parent = getpid()};

        ch->pid = threadstack_spawn(child_exec, &x);
    }
    if (ch->pid < 0) {
        errinfo_sys(why, "cannot start a process for %s", s->shown.command);
        goto out;
    }
    close_fd(&rep[1]);
    do
        n = read(rep[0], &e, sizeof(e));
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof(e)) {
        waitpid(ch->pid, NULL, 0);
        groupwatch_forget(ch->pid); /* it had started nothing */
        ch->pid = -1;
        errno = e;
        errinfo_sys(why, "cannot run \"%s\"%s%s", path, s->cwd ? " in " : "",
                    s->cwd ? s->shown.cwd : "");
        goto out;
    }
    ch->in = pin[1];
    ch->out = pout[0];
    ch->err = perr[0];
    pin[1] = pout[0] = perr[0] = -1;
    fcntl(ch->in, F_SETFL, O_NONBLOCK);
    fcntl(ch->out, F_SETFL, O_NONBLOCK);
    fcntl(ch->err, F_SETFL, O_NONBLOCK);
    ch->pidfd = (int)syscall(SYS_pidfd_open, ch->pid, 0);
    mcpclient__set_pid(c, (long)ch->pid);
    snprintf(shown, sizeof(shown), "%s", path); /* the path found may come from ${env:} */
    registry_redact(s, shown, sizeof(shown));
    log_info("mcp %s: started %s (pid %ld)", s->name, shown, (long)ch->pid);
    rc = 0;
out:
    close_fd(&pin[0]);
    close_fd(&pin[1]);
    close_fd(&pout[0]);
    close_fd(&pout[1]);
    close_fd(&perr[0]);
    close_fd(&perr[1]);
    close_fd(&rep[0]);
    close_fd(&rep[1]);
    free(argv);
    free(envp);
    free(path);
    return rc;
}

/* ---- lines ---- */

enum line_kind {
    LINE_ERR,     /* stderr, on the client's thread */
    LINE_OUT,     /* stdout, on the client's thread */
    LINE_OUT_LENT /* stdout, on a worker holding the reader's turn */
};

static void line_end(struct mcpclient *c, struct linebuf *b, enum line_kind kind)
{
    bool is_out = kind != LINE_ERR;

    if (b->discarding) {
        if (kind == LINE_OUT_LENT)
            mcpclient__oversized_lent(c, b->dropped, b->edges.head, b->edges.head_len,
                                      b->edges.tail, b->edges.tail_len);
        else if (is_out)
            mcpclient__oversized(c, b->dropped, b->edges.head, b->edges.head_len, b->edges.tail,
                                 b->edges.tail_len);
        else
            mcpclient__stderr_line(c, b->edges.head, b->edges.head_len);
    } else if (is_out) {
        size_t n = b->len;

        while (n && b->data[n - 1] == '\r')
            n--;
        if (n && kind == LINE_OUT_LENT)
            mcpclient__receive_lent(c, b->data, n);
        else if (n)
            mcpclient__receive(c, b->data, n);
    } else {
        mcpclient__stderr_line(c, b->data ? b->data : "", b->len);
    }
    b->len = 0;
    b->discarding = false;
    b->dropped = b->edges.head_len = b->edges.tail_len = 0;
}

/* Appends part of a line; past b->max the line is only counted (head and tail kept). */
static int line_add(struct linebuf *b, const char *p, size_t n)
{
    if (!b->discarding && b->len + n > b->max) {
        b->discarding = true;
        b->dropped = b->len;
        mcpclient__edges_add(&b->edges, b->data ? b->data : "", b->len);
        b->len = 0;
    }
    if (b->discarding) {
        b->dropped += n;
        mcpclient__edges_add(&b->edges, p, n);
        return 0;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *grown;

        while (cap < b->len + n + 1)
            cap *= 2;
        grown = realloc(b->data, cap);
        if (!grown)
            return -1;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/* Reads what fd has into buf (READ_CHUNK bytes); 1 at EOF, -1 on error, 0 otherwise (fd is
 * non-blocking and polled: what arrives later wakes the poll). */
static int read_lines(struct mcpclient *c, int fd, struct linebuf *b, enum line_kind kind,
                      char *buf)
{
    for (int rounds = 0; rounds < 64; rounds++) {
        ssize_t n = read(fd, buf, READ_CHUNK);
        size_t start = 0;

        if (n == 0)
            return 1;
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        for (size_t i = 0; i < (size_t)n; i++) {
            if (buf[i] != '\n')
                continue;
            if (line_add(b, buf + start, i - start) < 0)
                return -1;
            line_end(c, b, kind);
            start = i + 1;
        }
        if (start < (size_t)n && line_add(b, buf + start, (size_t)n - start) < 0)
            return -1;
        /* A short read emptied the pipe: the read that would say EAGAIN is left to the next
         * poll, which is one system call fewer on every answer. */
        if ((size_t)n < READ_CHUNK)
            break;
    }
    return 0;
}

/* stderr, on the client thread's stack (8 MiB): a _Thread_local buffer would be copied into
 * every thread of runboxd, 64 KiB times its 320 workers. */
static int read_err(struct mcpclient *c, struct child *ch)
{
    char buf[READ_CHUNK];

    return read_lines(c, ch->err, &ch->le, LINE_ERR, buf);
}

/* The reader's turn on stdout, on a waiting worker (mcpclient_read_fn). */
static int read_out_lent(struct mcpclient *c, void *arg)
{
    struct child *ch = arg;

    return read_lines(c, ch->out, &ch->lo, LINE_OUT_LENT, ch->obuf);
}

/* ---- the connection ---- */

/* Moves queued messages into the write buffer and writes what stdin takes. -1: stdin is
 * closed (the child is gone). */
static int pump_stdin(struct mcpclient *c, struct child *ch)
{
    for (;;) {
        if (ch->woff == ch->wlen) {
            size_t len;
            char *msg = mcpclient__next_out(c, &len);
            char *line;

            free(ch->wbuf);
            ch->wbuf = NULL;
            ch->wlen = ch->woff = 0;
            if (!msg)
                return 0;
            line = realloc(msg, len + 1);
            if (!line) {
                free(msg);
                return 0;
            }
            line[len] = '\n';
            ch->wbuf = line;
            ch->wlen = len + 1;
        }
        while (ch->woff < ch->wlen) {
            ssize_t n = write(ch->in, ch->wbuf + ch->woff, ch->wlen - ch->woff);

            if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -1;
            ch->woff += (size_t)n;
        }
    }
}

static bool child_exited(struct child *ch, int wait_ms)
{
    if (ch->reaped)
        return true;
    if (ch->pidfd >= 0 && wait_ms > 0) {
        struct pollfd p = {.fd = ch->pidfd, .events = POLLIN};

        while (poll(&p, 1, wait_ms) < 0 && errno == EINTR)
            ;
    }
    if (waitpid(ch->pid, &ch->status, WNOHANG) == ch->pid)
        ch->reaped = true;
    return ch->reaped;
}

/* Stops the child: stdin closed, SIGTERM, SIGKILL, each after a grace period; reaps it. */
static void stop_child(struct child *ch)
{
    close_fd(&ch->in);
    if (ch->pid <= 0)
        return;
    if (!child_exited(ch, STOP_STDIN_MS)) {
        kill(-ch->pid, SIGTERM);
        if (!child_exited(ch, STOP_TERM_MS)) {
            kill(-ch->pid, SIGKILL);
            waitpid(ch->pid, &ch->status, 0);
            ch->reaped = true;
        }
    }
    kill(-ch->pid, SIGKILL); /* whatever the server left running in its group */
    groupwatch_forget(ch->pid);
}

static void describe_exit(const struct child *ch, struct errinfo *why)
{
    if (!ch->reaped)
        errinfo_set(why, ERR_UNAVAILABLE, "closed its stdout");
    else if (WIFEXITED(ch->status))
        errinfo_set(why, ERR_UNAVAILABLE, "exited with status %d", WEXITSTATUS(ch->status));
    else if (WIFSIGNALED(ch->status))
        errinfo_set(why, ERR_UNAVAILABLE, "was killed by signal %d (%s)", WTERMSIG(ch->status),
                    strsignal(WTERMSIG(ch->status)));
}

/* stdout ended (or failed): stderr may still hold the reason, so what is there is read. */
static void out_ended(struct mcpclient *c, struct child *ch, struct errinfo *why)
{
    if (ch->err >= 0)
        read_err(c, ch);
    if (ch->le.len)
        line_end(c, &ch->le, LINE_ERR);
    child_exited(ch, STOP_STDIN_MS);
    describe_exit(ch, why);
}

static void serve(struct mcpclient *c, struct child *ch, struct errinfo *why)
{
    mcpclient__opened(c);
    mcpclient__set_direct_fd(c, ch->in);
    mcpclient__offer_reader(c, ch->out, read_out_lent, ch);
    for (;;) {
        struct pollfd p[4] = {{.fd = mcpclient__wake_fd(c), .events = POLLIN},
                              {.fd = -1, .events = POLLIN},
                              {.fd = ch->err, .events = POLLIN},
                              {.fd = -1, .events = POLLOUT}};
        int r, wait;
        bool ended;

        if (mcpclient__should_end(c, why))
            return;
        wait = mcpclient__poll_ms(c);
        /* stdout is polled only while this thread holds the reader's turn. */
        if (mcpclient__reader_turn(c, &wait, &ended))
            p[1].fd = ch->out;
        if (ended) {
            out_ended(c, ch, why);
            return;
        }
        if (pump_stdin(c, ch) < 0) {
            child_exited(ch, STOP_STDIN_MS);
            describe_exit(ch, why);
            if (!errinfo_is_set(why))
                errinfo_set(why, ERR_UNAVAILABLE, "closed its stdin");
            return;
        }
        p[3].fd = ch->woff < ch->wlen ? ch->in : -1;
        r = poll(p, 4, wait);
        if (r < 0 && errno != EINTR) {
            errinfo_sys(why, "poll");
            return;
        }
        if (p[0].revents & POLLIN)
            mcpclient__drain_wake(c);
        if (ch->err >= 0 && (p[2].revents & (POLLIN | POLLHUP)) && read_err(c, ch) != 0) {
            if (ch->le.len)
                line_end(c, &ch->le, LINE_ERR);
            close_fd(&ch->err);
        }
        if ((p[1].revents & (POLLIN | POLLHUP)) &&
            read_lines(c, ch->out, &ch->lo, LINE_OUT, ch->obuf) != 0) {
            out_ended(c, ch, why);
            return;
        }
    }
}

static void run(struct mcpclient *c, struct errinfo *why)
{
    struct child ch = {.pid = -1, .in = -1, .out = -1, .err = -1, .pidfd = -1};

    ch.lo.max = MCPCLIENT_MESSAGE_MAX;
    ch.le.max = STDERR_LINE_MAX;
    ch.obuf = malloc(READ_CHUNK);
    if (!ch.obuf) {
        errinfo_set(why, ERR_NOMEM, "out of memory for its output");
    } else if (spawn(c, &ch, why) == 0) {
        serve(c, &ch, why);
        mcpclient__withdraw_reader(c); /* before stop_child closes them */
        mcpclient__set_direct_fd(c, -1);
        stop_child(&ch);
    }
    mcpclient__set_pid(c, 0);
    close_fd(&ch.in);
    close_fd(&ch.out);
    close_fd(&ch.err);
    close_fd(&ch.pidfd);
    free(ch.wbuf);
    free(ch.obuf);
    free(ch.lo.data);
    free(ch.le.data);
}

const struct mcpclient_transport mcpclient__stdio = {.name = "stdio", .run = run};
