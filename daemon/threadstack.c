/* daemon/threadstack.c - threads whose stacks a fork does not copy (see threadstack.h). */
#include "threadstack.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

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

pid_t threadstack_fork(void)
{
#ifdef THREADSTACK_TSAN
    return fork();
#else
    return _Fork();
#endif
}

_Noreturn void threadstack_child_exit(int status)
{
    for (;;)
        syscall(SYS_exit_group, status);
}
