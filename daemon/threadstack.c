/* daemon/threadstack.c - threads whose stacks a fork does not copy (see threadstack.h). */
#include "threadstack.h"

#include <pthread.h>
#include <sys/mman.h>

void threadstack_skip_forks(bool skip)
{
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
}
