/* common/log.c - leveled logging to stderr (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

_Atomic enum log_level log_threshold = LOG_WARN;

static const char *log_program = "runbox";

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

void log_set_level(enum log_level level)
{
    atomic_store_explicit(&log_threshold, level, memory_order_relaxed);
}

int log_parse_level(const char *s, enum log_level *out)
{
    if (!s)
        return -1;
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    if (strcasecmp(s, "warning") == 0) {
        *out = LOG_WARN;
        return 0;
    }
    return -1;
}

const char *log_level_name(enum log_level level)
{
    if ((unsigned)level < sizeof(level_names) / sizeof(level_names[0]))
        return level_names[level];
    return "?";
}

void log_init(const char *program)
{
    const char *env = getenv("RUNBOX_LOG");
    enum log_level level;

    if (program)
        log_program = program;
    if (!env || !*env)
        return;
    if (log_parse_level(env, &level) == 0)
        log_set_level(level);
    else
        log_warn("log: RUNBOX_LOG=%.40s is not a level; use error, warn, info, debug or trace "
                 "(keeping warn)",
                 env);
}

void log_write(enum log_level level, const char *fmt, ...)
{
    char line[2048];
    struct timespec ts;
    struct tm tm;
    va_list ap;
    int n, m;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    n = snprintf(line, sizeof(line),
                 "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, log_program,
                 log_level_name(level));
    if (n < 0)
        return;
    va_start(ap, fmt);
    m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    n += m;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2; /* long lines are cut, never split */
    line[n++] = '\n';
    /* One write(2) per line keeps lines from different threads whole. The result is ignored:
     * there is nowhere left to report a failing stderr. */
    if (write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}
