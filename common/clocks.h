/* common/clocks.h - the clocks Runbox reads, in milliseconds, and the deadlines of timed waits.
 *
 * Durations, timeouts and deadlines use the monotonic clock (it never jumps when the system
 * time is set); the wall clock is only for timestamps a person or a client reads. A timed
 * wait waits on a condition variable made by clocks_cond_init(), whose pthread_cond_timedwait
 * reads CLOCK_MONOTONIC, with a deadline from clocks_deadline(). */
#ifndef RUNBOX_CLOCKS_H
#define RUNBOX_CLOCKS_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in milliseconds: for durations and deadlines. */
int64_t clocks_mono_ms(void);

/* CLOCK_REALTIME in milliseconds since the epoch: for timestamps. */
int64_t clocks_wall_ms(void);

/* The CLOCK_MONOTONIC time at mono_ms (a clocks_mono_ms() reading), as the deadline of a
 * pthread_cond_timedwait on a condition made by clocks_cond_init(). */
struct timespec clocks_at(int64_t mono_ms);

/* The CLOCK_MONOTONIC time ms milliseconds from now (ms <= 0: now), as the deadline of a
 * pthread_cond_timedwait on a condition made by clocks_cond_init(). */
struct timespec clocks_deadline(int64_t ms);

/* pthread_cond_init() for a condition whose timed waits read CLOCK_MONOTONIC. Returns 0 or
 * the error number, as pthread_cond_init() does. */
int clocks_cond_init(pthread_cond_t *cond);

#endif
