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

/* Marks (skip = true) or unmarks the calling thread's stack; a failure leaves it as it was
 * (forks then copy it, which costs time only). */
void threadstack_skip_forks(bool skip);

#endif
