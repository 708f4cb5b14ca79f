/* daemon/proc_spawn.c - starting one sandbox: the forked child's setup before it becomes bwrap,
 * and the host facts the sandbox needs (see proc.h for the design).
 *
 * The daemon is multithreaded, so between fork and exec the child calls only async-signal-safe
 * functions, on strings prepared before the fork. A failing step writes {step, errno} to a
 * close-on-exec pipe; the parent reads it (or EOF once bwrap runs).
 *
 * With cgroups on, the child is made by clone3(CLONE_INTO_CGROUP) straight into the run's cgroup:
 * no migration afterwards (writing cgroup.procs costs milliseconds), and no moment in which a
 * process of the run is outside its limits. */
#include "proc_int.h"

#include <linux/sched.h>
#include <net/if.h>
#include <netinet/in.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "egress.h"
#include "chroot.h"
#include "log.h"
#include "netpolicy.h"
#include "threadstack.h"

enum step {
    STEP_PDEATHSIG = 1,
    STEP_STDIO,
    STEP_CHDIR,
    STEP_RLIMIT,
    STEP_USERNS,
    STEP_IDMAP,
    STEP_MOUNT,
    STEP_NET,
    STEP_EXEC
};

static const char *step_name(int step)
{
    switch (step) {
    case STEP_PDEATHSIG:
        return "prctl(PR_SET_PDEATHSIG)";
    case STEP_STDIO:
        return "setting up stdin/stdout/stderr";
    case STEP_CHDIR:
        return "entering the workspace";
    case STEP_RLIMIT:
        return "setting the resource limits";
    case STEP_USERNS:
        return "creating a user namespace (unshare)";
    case STEP_IDMAP:
        return "writing the user namespace's uid/gid map";
    case STEP_MOUNT:
        return "binding the workspace";
    case STEP_NET:
        return "setting up the sandbox's network (loopback, proxy listener, agent)";
    case STEP_EXEC:
        return "starting bwrap";
    default:
        return "setting up the sandbox";
    }
}

/* ---- in the child (async-signal-safe only) ---- */

static _Noreturn void child_fail(int step)
{
    int e[2] = {step, errno};

    (void)!write(3, e, sizeof(e));
    threadstack_child_exit(127);
}

static int write_str(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = write(fd, s, strlen(s));
    close(fd);
    return n == (ssize_t)strlen(s) ? 0 : -1;
}

struct child_fds {
    int in, out, err, status; /* the child's ends; in = -1 for /dev/null */
    int ctl;                  /* the child's end of the network agent socket, or -1 */
};

#define CHILD_CTL_FD 4 /* where the agent socket sits in the child */

static void child_stdio(const struct child_fds *f)
{
    int in = f->in >= 0 ? f->in : open("/dev/null", O_RDONLY | O_CLOEXEC);

    /* Every source fd is above 2 (proc_new makes sure 0-2 are taken), so the order is safe. */
    if (in < 0 || dup2(in, 0) < 0 || dup2(f->out, 1) < 0 || dup2(f->err, 2) < 0)
        child_fail(STEP_STDIO);
    if (f->status != 3 && dup2(f->status, 3) < 0)
        threadstack_child_exit(127);
    if (fcntl(3, F_SETFD, FD_CLOEXEC) < 0)
        threadstack_child_exit(127);
    if (f->ctl >= 0 && ((f->ctl != CHILD_CTL_FD && dup2(f->ctl, CHILD_CTL_FD) < 0) ||
                        fcntl(CHILD_CTL_FD, F_SETFD, FD_CLOEXEC) < 0))
        threadstack_child_exit(127);
    /* Nothing else of the daemon's may reach the sandbox. */
    unsigned first = f->ctl >= 0 ? CHILD_CTL_FD + 1 : CHILD_CTL_FD;
    if (syscall(SYS_close_range, first, ~0u, 0u) < 0)
        for (int fd = (int)first; fd < 1024; fd++)
            close(fd);
}

/* Sends fd (or none when -1) with the data word over the agent socket. */
static int send_fd(int sock, int fd, int32_t word)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = &word, .iov_len = sizeof(word)};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};

    if (fd >= 0) {
        struct cmsghdr *c;

        memset(cbuf, 0, sizeof(cbuf));
        m.msg_control = cbuf;
        m.msg_controllen = sizeof(cbuf);
        c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    return sendmsg(sock, &m, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

/* The agent: lives in the sandbox's network namespace (outside bwrap's other namespaces) and
 * makes sockets there for the daemon, until the daemon closes its end or bwrap ends.
 *
 * It shares the memory of the setup process (CLONE_VM), which is a copy of the daemon's: a fork
 * would copy its page tables once more (0.6 ms of each run). When the setup process execs bwrap
 * it gets a memory of its own, and the old one stays with the agent alone. Until then both run
 * in one memory, so the agent touches nothing but its own stack (agent_stack, in the copy) and
 * the setup process nothing of the agent's; they share the thread's errno, which only the
 * agent's own failing calls, after bwrap started, write. */
/* ThreadSanitizer's runtime does not survive a CLONE_VM child that is not a thread (the agent
 * died at its first instruction, SEGV at pc 0, and port forwards found no one to make their
 * sockets): a TSan build forks the agent instead (THREADSTACK_TSAN, threadstack.h). */
#ifndef THREADSTACK_TSAN
#define AGENT_STACK_SIZE (32u << 10)

static _Alignas(64) char agent_stack[AGENT_STACK_SIZE];
static pid_t agent_parent; /* the setup process, set before the agent starts (in the copy) */
#endif

static _Noreturn void agent_main(pid_t parent)
{
    for (int fd = 0; fd < CHILD_CTL_FD; fd++)
        close(fd); /* above all the status pipe: its EOF tells the daemon bwrap started */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        threadstack_child_exit(0);
    for (;;) {
        unsigned char req;
        ssize_t n = recv(CHILD_CTL_FD, &req, 1, 0);
        int sock;

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            threadstack_child_exit(0);
        sock = socket(req == '6' ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (send_fd(CHILD_CTL_FD, sock, sock < 0 ? errno : 0) < 0)
            threadstack_child_exit(0);
        if (sock >= 0)
            close(sock);
    }
}

#ifndef THREADSTACK_TSAN
static int agent_entry(void *unused)
{
    (void)unused;
    agent_main(agent_parent);
}
#endif

/* In the new network namespace: loopback up, the proxy listener (mode proxy) and the agent;
 * one message to the daemon: the agent's pid, with the listener. */
static void child_net(const struct proc *p)
{
    struct ifreq ifr;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), l = -1, one = 1;
    pid_t self = getpid(), agent;

    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, "lo", 3);
    if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
        child_fail(STEP_NET);
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
        child_fail(STEP_NET);
    close(s);
    if (p->net.mode == NETPOLICY_PROXY) {
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons(EGRESS_PORT),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

        l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 128) < 0)
            child_fail(STEP_NET);
    }
#ifdef THREADSTACK_TSAN
    /* _Fork, not threadstack_fork: this process is a clone3 copy of a threaded daemon, in which
     * TSan's own locks may be held by threads that do not exist here; fork()'s interceptor
     * would wait for them for good. */
    agent = _Fork();
    if (agent == 0)
        agent_main(self);
#else
    agent_parent = self;
    agent = clone(agent_entry, agent_stack + sizeof(agent_stack), CLONE_VM | SIGCHLD, NULL);
#endif
    if (agent < 0)
        child_fail(STEP_NET);
    if (send_fd(CHILD_CTL_FD, l, (int32_t)agent) < 0)
        child_fail(STEP_NET);
    if (l >= 0)
        close(l);
    close(CHILD_CTL_FD);
}

/* Lowers a limit (never raises it past what the daemon itself may have: that would fail). */
static int lower_limit(int resource, rlim_t soft, rlim_t hard)
{
    struct rlimit cur, want = {soft, hard};

    if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY) {
        if (want.rlim_max > cur.rlim_max)
            want.rlim_max = cur.rlim_max;
        if (want.rlim_cur > want.rlim_max)
            want.rlim_cur = want.rlim_max;
    }
    return setrlimit(resource, &want);
}

static void child_limits(const struct exec_limits *l)
{
    if (lower_limit(RLIMIT_CPU, l->cpu_s, (rlim_t)l->cpu_s + 5) < 0 ||
        lower_limit(RLIMIT_FSIZE, (rlim_t)l->file_size_mb << 20, (rlim_t)l->file_size_mb << 20) <
            0 ||
        lower_limit(RLIMIT_CORE, 0, 0) < 0 || lower_limit(RLIMIT_NOFILE, 1024, 1024) < 0)
        child_fail(STEP_RLIMIT);
}

/* System V shared memory of the sandbox (its IPC namespace is this one): at most the memory
 * limit, and a segment goes when its last process detaches (shm_rmid_forced), so none can hold
 * memory that no process maps and the memory watchdog cannot see. The IPC sysctls are the
 * namespace owner's to set, which is us as uid 0 here (uid_map maps 0 to the daemon's user).
 * A kernel that does not let them be set leaves the defaults: the sandbox check says so. */
static void child_ipc_limits(const struct proc *p)
{
    (void)!write_str("/proc/sys/kernel/shmmax", p->shm_max);
    (void)!write_str("/proc/sys/kernel/shmall", p->shm_all);
    (void)!write_str("/proc/sys/kernel/shm_rmid_forced", "1");
}

static _Noreturn void child_main(const struct proc *p, char **argv, const struct child_fds *f,
                                 bool memory_rlimit)
{
    static char *const no_env[] = {NULL};
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigset_t none;

    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    sigaction(SIGPIPE, &dfl, NULL);
    /* The cwd follows the unshare into the new mount namespace, which an fd does not: this is
     * how the workspace is named without traversing its host path. */
    if (fchdir(p->ws_fd) < 0)
        child_fail(STEP_CHDIR);
    child_stdio(f);
    child_limits(&p->lim);
    /* After dropping root the process is not dumpable, which makes /proc/self/uid_map root's. */
    prctl(PR_SET_DUMPABLE, 1);
    /* The user namespace is made first, so it owns the mount, IPC and network namespaces. */
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | (f->ctl >= 0 ? CLONE_NEWNET : 0)) < 0)
        child_fail(STEP_USERNS);
    if (write_str("/proc/self/setgroups", "deny") < 0 ||
        write_str("/proc/self/uid_map", p->uid_map) < 0 ||
        write_str("/proc/self/gid_map", p->gid_map) < 0)
        child_fail(STEP_IDMAP);
    child_ipc_limits(p);
    /* Only now: entering the user namespace changed the credentials, which clears the
     * parent-death signal. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        child_fail(STEP_PDEATHSIG);
    if (getppid() != p->self)
        threadstack_child_exit(127); /* the daemon is already gone */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount(".", p->mnt, NULL, MS_BIND | MS_REC, NULL) < 0 || chdir("/") < 0)
        child_fail(STEP_MOUNT);
    if (f->ctl >= 0)
        child_net(p);
    /* Set only now: the user namespace above records the limit in force when it was made, and
     * counting from here on covers this sandbox's processes alone. */
    if (lower_limit(RLIMIT_NPROC, p->lim.procs, p->lim.procs) < 0)
        child_fail(STEP_RLIMIT);
    /* Where the cgroup does not limit memory, RLIMIT_DATA does (per process), also set only
     * now: the network agent above is runboxd's, not the command's, and under ThreadSanitizer
     * this copy of runboxd still maps memory of its own until the exec (with the limit set
     * before, a TSan build's child died "failed to allocate ... of clock allocator"). */
    if (memory_rlimit && lower_limit(RLIMIT_DATA, (rlim_t)p->lim.memory_mb << 20,
                                     (rlim_t)p->lim.memory_mb << 20) < 0)
        child_fail(STEP_RLIMIT);
    execve(argv[0], argv, no_env);
    child_fail(STEP_EXEC);
}

/* ---- in the supervisor ---- */

static int make_pipe(int fds[2], bool parent_reads, struct errinfo *err)
{
    if (pipe2(fds, O_CLOEXEC) < 0) {
        errinfo_sys(err, "exec: cannot create a pipe");
        return -1;
    }
    /* Only the daemon's end is non-blocking; the command's end stays a normal pipe. */
    fcntl(fds[parent_reads ? 0 : 1], F_SETFL, O_NONBLOCK);
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Reads the child's status pipe: 0 once bwrap was exec'd, -1 with err for a failed step. */
static int read_status(int fd, pid_t pid, struct errinfo *err)
{
    int e[2] = {0, 0};
    bool chrooted;
    ssize_t n;

    do
        n = read(fd, e, sizeof(e));
    while (n < 0 && errno == EINTR);
    if (n == 0)
        return 0;
    waitpid(pid, NULL, 0);
    if (n != (ssize_t)sizeof(e)) {
        errinfo_set(err, ERR_IO, "exec: the sandbox helper ended before starting bwrap");
        return -1;
    }
    /* chroot_detect() first: it may change errno, which errinfo_sys() reports. */
    chrooted = e[0] == STEP_USERNS && e[1] == EPERM && chroot_detect();
    errno = e[1];
    if (chrooted)
        errinfo_sys(err,
                    "exec: %s failed: runboxd runs in a chroot, where the kernel refuses user "
                    "namespaces; run it on the host, in a container or in a root entered with "
                    "pivot_root (docs/install.md#chroots)",
                    step_name(e[0]));
    else if (e[0] == STEP_USERNS || e[0] == STEP_IDMAP)
        errinfo_sys(err,
                    "exec: %s failed: user namespaces are not available to this user; enable "
                    "them (sysctl user.max_user_namespaces=15000, and on Ubuntu "
                    "kernel.apparmor_restrict_unprivileged_userns=0)",
                    step_name(e[0]));
    else
        errinfo_sys(err, "exec: %s failed", step_name(e[0]));
    err->kind = ERR_UNAVAILABLE;
    return -1;
}

/* fork() into the run's cgroup, with a pidfd: clone3(CLONE_INTO_CGROUP | CLONE_PIDFD). The
 * child returns 0 like fork's and, as after fork, may only call async-signal-safe functions. */
static pid_t clone_into(int cg_fd, int *pidfd)
{
    struct clone_args a = {
        .flags = CLONE_INTO_CGROUP | CLONE_PIDFD,
        .pidfd = (uint64_t)(uintptr_t)pidfd,
        .exit_signal = SIGCHLD,
        .cgroup = (uint64_t)cg_fd,
    };

    return (pid_t)syscall(SYS_clone3, &a, sizeof(a));
}

/* Starts the child: in the run's cgroup when cgroups are on (turning them off for good when the
 * kernel or a seccomp filter refuses clone3), else with fork. */
static pid_t start_child(struct proc *p, struct job *j, const struct child_fds *f,
                         struct errinfo *err)
{
    pid_t pid;

    if (cgroup_is_on(p->cg)) {
        j->cg_fd =
            cgroup_run_create(p->cg, j->id, (uint64_t)p->lim.memory_mb << 20, p->lim.procs, err);
        if (j->cg_fd < 0)
            return -1;
        pid = clone_into(j->cg_fd, &j->pidfd);
        if (pid == 0)
            child_main(p, j->argv, f, !cgroup_has_memory(p->cg));
        if (pid > 0)
            return pid;
        if (errno != ENOSYS && errno != EPERM && errno != EACCES && errno != EINVAL &&
            errno != E2BIG) {
            errinfo_sys(err, "exec: cannot start the sandbox (clone3)");
            return -1;
        }
        char why[160];
        snprintf(why, sizeof(why), "starting a sandbox in its cgroup failed (clone3: %s)",
                 strerror(errno));
        log_warn("cgroup: %s; turning cgroups off", why);
        cgroup_run_end(p->cg, j->id, j->cg_fd);
        j->cg_fd = -1;
        pthread_mutex_lock(&p->lock);
        cgroup_disable(p->cg, why);
        pthread_mutex_unlock(&p->lock);
    }
    pid = threadstack_fork();
    if (pid == 0)
        child_main(p, j->argv, f, true);
    if (pid < 0) {
        errinfo_sys(err, "exec: cannot fork");
        return -1;
    }
    j->pidfd = pidfd_open(pid, 0);
    if (j->pidfd < 0) {
        errinfo_sys(err, "exec: pidfd_open");
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

/* Undoes a start whose child failed before bwrap ran (the child was reaped). */
static void unstart(struct proc *p, struct job *j)
{
    if (j->pidfd >= 0)
        close(j->pidfd);
    j->pidfd = -1;
    cgroup_run_end(p->cg, j->id, j->cg_fd);
    j->cg_fd = -1;
}

/* The setup process's one message: the agent's pid and (mode proxy) the proxy listener. It was
 * sent before bwrap started, so it is already queued. */
static int recv_net(int sock, pid_t *agent, int *listen_fd)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    int32_t word = 0;
    struct iovec iov = {.iov_base = &word, .iov_len = sizeof(word)};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    struct cmsghdr *c;

    *listen_fd = -1;
    if (recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(word))
        return -1;
    c = CMSG_FIRSTHDR(&m);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        memcpy(listen_fd, CMSG_DATA(c), sizeof(int));
    *agent = (pid_t)word;
    return 0;
}

int proc_spawn(struct proc *p, struct job *j, struct errinfo *err)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1}, st[2] = {-1, -1};
    int ctl[2] = {-1, -1}, lfd = -1;
    struct child_fds f;
    pid_t pid;
    int rc = -1;

    if ((j->in_data && make_pipe(in, false, err) < 0) || make_pipe(out, true, err) < 0 ||
        make_pipe(er, true, err) < 0 || make_pipe(st, false, err) < 0)
        goto out;
    fcntl(st[1], F_SETFL, 0);
    if (p->net.mode != NETPOLICY_FULL &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0) {
        errinfo_sys(err, "exec: cannot create the sandbox's agent socket");
        goto out;
    }
    f = (struct child_fds){
        .in = in[0], .out = out[1], .err = er[1], .status = st[1], .ctl = ctl[1]};
    pid = start_child(p, j, &f, err);
    if (pid < 0) {
        unstart(p, j);
        goto out;
    }
    close_fd(&st[1]);
    close_fd(&ctl[1]);
    if (read_status(st[0], pid, err) < 0) {
        unstart(p, j);
        goto out;
    }
    if (ctl[0] >= 0 && recv_net(ctl[0], &j->agent, &lfd) < 0)
        log_warn("exec: process %llu: the sandbox's network agent did not report",
                 (unsigned long long)j->id);
    if (p->net.started) {
        p->net.started(p->net.ctx, j->id, lfd, ctl[0]);
        ctl[0] = lfd = -1;
    }
    j->pid = pid;
    j->in_fd = in[1];
    in[1] = -1;
    j->s[0].fd = out[0];
    out[0] = -1;
    j->s[1].fd = er[0];
    er[0] = -1;
    rc = 0;
out:
    close_fd(&in[0]);
    close_fd(&in[1]);
    close_fd(&out[0]);
    close_fd(&out[1]);
    close_fd(&er[0]);
    close_fd(&er[1]);
    close_fd(&st[0]);
    close_fd(&st[1]);
    close_fd(&ctl[0]);
    close_fd(&ctl[1]);
    close_fd(&lfd);
    return rc;
}

/* " S 1234 ...", the part of /proc/PID/stat after the command's ')': the state, then the parent
 * pid. Returns 0 with *ppid, or -1. */
static int parse_stat_ppid(const char *s, int *ppid)
{
    char *end = NULL;
    long v;

    while (*s == ' ')
        s++;
    if (!*s || s[1] != ' ')
        return -1;
    errno = 0;
    v = strtol(s + 2, &end, 10);
    if (errno || end == s + 2 || v < 0 || v > INT_MAX)
        return -1;
    *ppid = (int)v;
    return 0;
}

pid_t proc_child_of(pid_t parent, pid_t skip)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = -1;

    if (!d)
        return -1;
    while (found < 0 && (e = readdir(d)) != NULL) {
        char path[300], buf[512];
        const char *rp;
        int fd, ppid = 0;
        ssize_t n;

        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = '\0';
        /* "pid (comm) state ppid ...": comm may hold anything, so parse after the last ')'. */
        rp = strrchr(buf, ')');
        if (rp && parse_stat_ppid(rp + 1, &ppid) == 0 && ppid == parent)
            found = (pid_t)strtol(e->d_name, NULL, 10);
        if (found == skip)
            found = -1;
    }
    closedir(d);
    return found;
}

/* ---- host facts ---- */

static char *find_on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[4096];

    if (!path || !path[0])
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *sep = strchr(path, ':');
        size_t n = sep ? (size_t)(sep - path) : strlen(path);
        int w = snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog);

        if (n > 0 && w > 0 && (size_t)w < sizeof(buf) && access(buf, X_OK) == 0)
            return strdup(buf);
        path += n;
        if (*path == ':')
            path++;
    }
    return NULL;
}

/* "bubblewrap 0.8.0" -> "0.8.0" into out; "" when it cannot be run. */
static void bwrap_version(const char *bwrap, char *out, size_t outsz)
{
    posix_spawn_file_actions_t fa;
    char *const argv[] = {(char *)bwrap, "--version", NULL};
    char buf[128];
    int fds[2];
    pid_t pid;
    ssize_t n = 0;

    out[0] = '\0';
    if (pipe2(fds, O_CLOEXEC) < 0)
        return;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    if (posix_spawn(&pid, bwrap, &fa, NULL, argv, (char *[]){NULL}) == 0) {
        close(fds[1]);
        fds[1] = -1;
        n = read(fds[0], buf, sizeof(buf) - 1);
        waitpid(pid, NULL, 0);
    }
    posix_spawn_file_actions_destroy(&fa);
    close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    if (n > 0) {
        const char *v;

        buf[n] = '\0';
        buf[strcspn(buf, "\r\n")] = '\0';
        v = strrchr(buf, ' ');
        snprintf(out, outsz, "%.60s", v ? v + 1 : buf);
    }
}

void proc_probe_host(struct proc *p, const char *bwrap)
{
    static const char *const mounts[] = {"/mnt", "/media", "/srv", "/opt", "/home", "/var"};
    static const char *const sysdirs[4] = {"/bin", "/lib", "/lib64", "/sbin"};
    struct stat st;

    for (size_t i = 0; i < 4; i++) {
        p->sysdir[i] = EXEC_SYSDIR_ABSENT;
        if (lstat(sysdirs[i], &st) == 0)
            p->sysdir[i] = S_ISLNK(st.st_mode)   ? EXEC_SYSDIR_SYMLINK
                           : S_ISDIR(st.st_mode) ? EXEC_SYSDIR_DIR
                                                 : EXEC_SYSDIR_ABSENT;
    }
    for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]) && !p->mnt; i++)
        if (lstat(mounts[i], &st) == 0 && S_ISDIR(st.st_mode))
            p->mnt = mounts[i];
    p->bwrap = bwrap ? strdup(bwrap) : find_on_path("bwrap");
    p->uid = getuid();
    p->gid = getgid();
    /* Root in the child's namespace is the daemon's user: it may then set the IPC limits; bwrap
     * maps the command's ids onto it in a namespace of its own. */
    snprintf(p->uid_map, sizeof(p->uid_map), "0 %u 1\n", (unsigned)p->uid);
    snprintf(p->gid_map, sizeof(p->gid_map), "0 %u 1\n", (unsigned)p->gid);
    snprintf(p->shm_max, sizeof(p->shm_max), "%llu\n", (unsigned long long)p->lim.memory_mb << 20);
    snprintf(p->shm_all, sizeof(p->shm_all), "%llu\n",
             ((unsigned long long)p->lim.memory_mb << 20) /
                 (unsigned long long)sysconf(_SC_PAGESIZE));
    p->available = false;
    if (!p->bwrap || access(p->bwrap, X_OK) < 0) {
        errinfo_set(&p->why, ERR_UNAVAILABLE,
                    "exec is unavailable: bubblewrap (bwrap) is not installed%s; install it "
                    "(Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
                    "bubblewrap) and restart runboxd",
                    bwrap ? " at the configured path" : " or not on PATH");
        return;
    }
    bwrap_version(p->bwrap, p->version, sizeof(p->version));
    if (p->uid == 0) {
        errinfo_set(&p->why, ERR_UNAVAILABLE,
                    "exec is unavailable: runboxd runs as root, and commands never run as "
                    "root; start it as root so it drops to --user, or as a normal user");
        return;
    }
    if (!p->mnt) {
        errinfo_set(&p->why, ERR_UNAVAILABLE,
                    "exec is unavailable: none of /mnt, /media, /srv, /opt, /home, /var exists "
                    "to stage the workspace on; create /mnt");
        return;
    }
    p->available = true;
}

void proc_kill_job(struct job *j)
{
    cgroup_run_kill(j->cg_fd);
    proc_kill_sandbox(j->pid, j->agent);
}

bool proc_signal_command(pid_t bwrap, pid_t agent, int sig)
{
    pid_t init = proc_child_of(bwrap, agent);
    pid_t cmd = init > 0 ? proc_child_of(init, 0) : -1;

    if (cmd <= 0)
        return false;
    return kill(-cmd, sig) == 0 || kill(cmd, sig) == 0;
}

void proc_kill_sandbox(pid_t bwrap, pid_t agent)
{
    pid_t init;

    if (bwrap <= 0)
        return;
    init = proc_child_of(bwrap, agent);
    kill(bwrap, SIGKILL);
    if (init > 0)
        kill(init, SIGKILL);
    /* The agent is not killed by pid (it may be gone and its pid reused): bwrap's death sends
     * it SIGKILL (its parent-death signal), and the run's cgroup.kill reaches it too. */
}
