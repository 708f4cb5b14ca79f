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
 * forks only from threads that are not marked (the exec supervisor). A child that needs no
 * copy at all (an external MCP server) comes from threadstack_spawn, which copies nothing. */
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

/* Runs child(arg) in a new process that shares the caller's memory until it execs or ends
 * (CLONE_VM | CLONE_VFORK, what posix_spawn does), and returns its pid, or -1 with errno set.
 * Nothing is copied: no page tables, and no page is copied on write afterwards, in the child
 * or in runboxd. A fork of runboxd took 5 to 27 ms of a 2-core VM's time while ten external
 * servers started at once, and its copied-on-write pages slowed the whole daemon after it.
 * The calling thread sleeps until the child has called execve or ended; child runs on a stack
 * of its own (64 KiB, over a guard page: past it the child dies of SIGSEGV), with every signal
 * blocked (so no handler of runboxd's runs in it), and must only
 * make system calls and write its own locals until then: the memory, errno included, is the
 * caller's. It ends with threadstack_child_exit(). In a TSan build it is a fork(). */
pid_t threadstack_spawn(int (*child)(void *), void *arg);

/* Ends such a child (or one made by clone3) at once: the exit_group system call, past every
 * interposed _exit. */
_Noreturn void threadstack_child_exit(int status);

/* The stacks under a small `ulimit -s`: with 64 KiB, runboxd crashed at once (main's frame alone
 * is larger, and glibc gives every thread made without attributes RLIMIT_STACK's size). Before
 * main, a constructor in threadstack.c raises the soft RLIMIT_STACK to THREADSTACK_MAIN_MIN, or
 * as far as the hard limit allows (the main thread's stack may grow that far; children, which
 * inherit it, get the common default); below THREADSTACK_MIN it says so and exits with 2. It
 * also makes THREADSTACK_MIN the least a thread's default stack is. A larger limit is kept. */
#define THREADSTACK_MAIN_MIN (8u << 20)
#define THREADSTACK_MIN      (1u << 20)

#endif
