/* daemon/threadstack.c - threads whose stacks a fork does not copy (see threadstack.h). */
#include "threadstack.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* See threadstack.h: before main, whose frame alone is larger than 64 KiB. */
__attribute__((constructor)) static void stack_floor(void)
{
    struct rlimit rl;
    pthread_attr_t a;
    size_t size = 0;

    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < THREADSTACK_MAIN_MIN) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= THREADSTACK_MAIN_MIN
                          ? THREADSTACK_MAIN_MIN
                          : rl.rlim_max;
        if (setrlimit(RLIMIT_STACK, &rl) < 0 || rl.rlim_cur < THREADSTACK_MIN) {
            /* main would overflow its stack at its first line: say why instead */
            static const char msg[] = "runboxd: the stack limit (ulimit -s) is too small and its "
                                      "hard limit does not let it grow to 1 MiB; start runboxd "
                                      "with ulimit -s 8192\n";

            (void)!write(2, msg, sizeof(msg) - 1);
            _exit(2);
        }
    }
    if (pthread_getattr_default_np(&a) != 0)
        return;
    if (pthread_attr_getstacksize(&a, &size) == 0 && size < THREADSTACK_MIN &&
        pthread_attr_setstacksize(&a, THREADSTACK_MIN) == 0)
        (void)pthread_setattr_default_np(&a);
    pthread_attr_destroy(&a);
}

void threadstack_skip_forks(bool skip)
{
#ifdef THREADSTACK_TSAN
    (void)skip;
#else
    pthread_attr_t a;
    void *low;
    size_t size;

    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    /* The range glibc reports: the usable stack with the thread's descriptor and TLS at its top,
     * without the guard page below. */
    if (pthread_attr_getstack(&a, &low, &size) == 0)
        (void)madvise(low, size, skip ? MADV_DONTFORK : MADV_DOFORK);
    pthread_attr_destroy(&a);
#endif
}

#ifdef THREADSTACK_TSAN
/* ThreadSanitizer asks for suppressions at start (built in: they also hold in a chroot and for
 * anyone running a TSan build). Only the children of threadstack_fork and threadstack_spawn,
 * between fork() and execve(): the child keeps TSan's record of the parent's other threads without
 * the threads, and TSan then reports its own descriptor calls as racing with the parent's (a run's
 * setup process's open() of /dev/null "raced" the main thread's epoll_create1, in another process's
 * descriptor table); the report's exit code, 66, failed the run. __tsan_ignore_thread_begin()
 * in the child does not cover TSan's descriptor records, so the child's entry points are
 * suppressed by name. Nothing in them runs in runboxd itself. */
const char *__tsan_default_suppressions(void);

const char *__tsan_default_suppressions(void)
{
    return "race:child_main\n"  /* proc_spawn.c: a run's setup process */
           "race:child_exec\n"; /* mcpclient_stdio.c: an external MCP server's */
}
#endif

pid_t threadstack_fork(void)
{
#ifdef THREADSTACK_TSAN
    return fork();
#else
    return _Fork();
#endif
}

/* The child's stack: its system calls and child_exec's locals need far less. Below it, a page
 * that faults: should the child ever need more, it dies of SIGSEGV instead of writing into
 * whatever lies under its stack in runboxd's memory, which it shares until it execs. */
#define SPAWN_STACK_SIZE (64u << 10)
#define SPAWN_GUARD_SIZE ((size_t)4096)

pid_t threadstack_spawn(int (*child)(void *), void *arg)
{
#ifdef THREADSTACK_TSAN
    pid_t pid = fork();

    if (pid == 0)
        threadstack_child_exit(child(arg));
    return pid;
#else
    size_t size = SPAWN_GUARD_SIZE + SPAWN_STACK_SIZE;
    /* PROT_NONE, then the stack above the guard made usable: the guard is never accessible. */
    char *map = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    sigset_t all, old;
    pid_t pid;
    int e;

    if (map == MAP_FAILED)
        return -1;
    if (mprotect(map + SPAWN_GUARD_SIZE, SPAWN_STACK_SIZE, PROT_READ | PROT_WRITE) != 0) {
        e = errno;
        munmap(map, size);
        errno = e;
        return -1;
    }
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = clone(child, map + size, CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
    e = errno; /* the child's calls wrote this thread's errno */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    munmap(map, size); /* the child has exec'd or ended: the stack is no one's now */
    errno = e;
    return pid;
#endif
}

_Noreturn void threadstack_child_exit(int status)
{
    for (;;)
        syscall(SYS_exit_group, status);
}
