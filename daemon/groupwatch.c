/* daemon/groupwatch.c - the watcher that kills the stdio servers' process groups when runboxd
 * dies (see groupwatch.h).
 *
 * A message is one int32_t: +pgid when the group starts, -pgid once it is gone. SOCK_SEQPACKET
 * keeps each whole, and a send of 4 bytes from any thread or child is one atomic record; the
 * watcher's recv() answers 0 once every copy of runboxd's end is closed, that is when runboxd
 * has ended (its children close their copies before, or at, their execve). */
#include "groupwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errinfo.h"
#include "threadstack.h"

/* Groups watched at once: REGISTRY_SERVERS_MAX (64) servers, each with one live group. A group
 * past this is left to PDEATHSIG alone. */
#define GROUPWATCH_MAX 1024
#define WATCH_FD       3 /* the watcher's end, in the watcher */

/* runboxd's end, or -1 without a watcher. Written once by groupwatch_start(), before any
 * thread exists; only read after. */
static int watch_fd = -1;
static pid_t watcher_pid = -1;

/* The watcher: only its end of the socket (as fd 3) and stderr stay open, so it holds nothing
 * of runboxd's or of runboxd's parent; stdin and stdout are /dev/null. */
static void watcher_setup(int fd)
{
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    sigset_t none;

    setpgid(0, 0);
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    (void)prctl(PR_SET_NAME, "runboxd-groups");
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
    }
    if (fd != WATCH_FD && dup2(fd, WATCH_FD) < 0)
        threadstack_child_exit(1);
    if (syscall(SYS_close_range, WATCH_FD + 1u, ~0u, 0u) < 0)
        for (int i = WATCH_FD + 1; i < 1024; i++)
            close(i);
}

/* Reads messages until runboxd's end closes, then kills every group still live. System calls
 * only: it is a _Fork() child (threadstack.h). */
static _Noreturn void watcher_main(int fd)
{
    pid_t live[GROUPWATCH_MAX];
    size_t n = 0;

    watcher_setup(fd);
    for (;;) {
        int32_t word;
        ssize_t got = recv(WATCH_FD, &word, sizeof(word), 0);

        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break; /* 0: runboxd is gone */
        if (got != (ssize_t)sizeof(word) || word == 0 || word == INT32_MIN)
            continue;
        if (word > 0) {
            if (n < GROUPWATCH_MAX)
                live[n++] = word;
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            if (live[i] == -word) {
                live[i] = live[--n];
                break;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        kill(-live[i], SIGKILL);
    threadstack_child_exit(0);
}

int groupwatch_start(struct errinfo *err)
{
    int sv[2];
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        errinfo_sys(err, "groupwatch: socketpair");
        return -1;
    }
    pid = threadstack_fork();
    if (pid == 0) {
        close(sv[0]);
        watcher_main(sv[1]);
    }
    if (pid < 0) {
        errinfo_sys(err, "groupwatch: fork");
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    close(sv[1]);
    watch_fd = sv[0];
    watcher_pid = pid;
    return 0;
}

void groupwatch_stop(void)
{
    if (watch_fd < 0)
        return;
    /* The end of the socket itself, not of this descriptor: a child that still holds a copy
     * must not keep the watcher waiting. */
    (void)shutdown(watch_fd, SHUT_RDWR);
    close(watch_fd);
    watch_fd = -1;
    for (int waited = 0; waited < 2000; waited += 5) {
        pid_t got = waitpid(watcher_pid, NULL, WNOHANG);

        if (got == watcher_pid || (got < 0 && errno != EINTR))
            break; /* gone (ECHILD: another waiter reaped it) */
        usleep(5000);
    }
    watcher_pid = -1;
}

static void tell(int32_t word)
{
    if (watch_fd < 0)
        return;
    /* Blocking: the watcher reads at once. Without it (it died) this fails with EPIPE, and
     * MSG_NOSIGNAL keeps that from being a SIGPIPE, which in a child before execve would be
     * pending, blocked, and kill the server once it unblocks its signals. */
    while (send(watch_fd, &word, sizeof(word), MSG_NOSIGNAL) < 0 && errno == EINTR)
        ;
}

void groupwatch_add(pid_t pgid)
{
    if (pgid > 0)
        tell((int32_t)pgid);
}

void groupwatch_forget(pid_t pgid)
{
    if (pgid > 0)
        tell(-(int32_t)pgid);
}
