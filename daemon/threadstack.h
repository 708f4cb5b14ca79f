/* daemon/threadstack.h - threads whose stacks a fork does not copy.
 *
 * Every exec run starts with a fork of runboxd (proc_spawn.c), and fork copies the page tables of
 * every mapping. runboxd has over 320 threads, whose stacks are some 650 of its ~880 mappings:
 * copying them was 1.7 ms of each run (measured: perf sched events around clone3), and the
 * sandbox's network agent, forked from that child, paid it again. The child of such a fork runs
 * on the forking thread's stack alone, so a thread that never forks marks its own stack
 * MADV_DONTFORK when it starts: the child has no such mapping at all. It unmarks it before it
 * ends, because glibc keeps the stacks of ended threads for new ones, which may fork.
 *
 * The rule that makes this safe: runboxd never calls fork() (glibc's fork walks the descriptors
 * of all threads in the child, and those live on their stacks), only _Fork() or clone3, whose
 * children run async-signal-safe code on the forking thread's stack until they exec; and it
 * forks only from threads that are not marked (the exec supervisor, the MCP client threads). */
#ifndef RUNBOX_THREADSTACK_H
#define RUNBOX_THREADSTACK_H

#include <stdbool.h>
#include <sys/types.h>

/* ThreadSanitizer keeps locks of its own, which its fork() interceptor makes usable in the child
 * and which its _exit() takes (a _Fork child whose fork caught one held hung in _exit). So in a
 * TSan build no stack is marked, children come from fork(), and the rest of this is moot. */
#if defined(__SANITIZE_THREAD__)
#define THREADSTACK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define THREADSTACK_TSAN 1
#endif
#endif

/* Marks (skip = true) or unmarks the calling thread's stack; a failure leaves it as it was
 * (forks then copy it, which costs time only). */
void threadstack_skip_forks(bool skip);

/* Forks the calling thread for a child that runs only async-signal-safe code until it execs or
 * ends with threadstack_child_exit(): _Fork(), or fork() in a TSan build. */
pid_t threadstack_fork(void);

/* Ends such a child (or one made by clone3) at once: the exit_group system call, past every
 * interposed _exit. */
_Noreturn void threadstack_child_exit(int status);

#endif
