/* common/clocks.c - see clocks.h. */
#include "clocks.h"

static int64_t read_ms(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clocks_mono_ms(void)
{
    return read_ms(CLOCK_MONOTONIC);
}

int64_t clocks_wall_ms(void)
{
    return read_ms(CLOCK_REALTIME);
}

struct timespec clocks_at(int64_t mono_ms)
{
    return (struct timespec){.tv_sec = (time_t)(mono_ms / 1000),
                             .tv_nsec = (long)(mono_ms % 1000) * 1000000L};
}

struct timespec clocks_deadline(int64_t ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (ms <= 0)
        return ts;
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int clocks_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);

    if (rc != 0)
        return rc;
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}
