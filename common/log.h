/* common/log.h - leveled logging to stderr, chosen by RUNBOX_LOG.
 *
 * One line per event, no trailing newline in the format, starting with the module
 * ("vfs: ...") and the linking id (call id, pid, instance). stdout is never used: the proxy's
 * stdout carries protocol only. The level test sits in the macro, so arguments of a
 * suppressed message are not evaluated.
 * Thread-safety: any thread; each line is written with one write(2). */
#ifndef COMMON_LOG_H
#define COMMON_LOG_H

#include <stdatomic.h>
#include <stdbool.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG, LOG_TRACE };

/* The current threshold; read by the macros on any thread while another may change it with
 * log_set_level(), hence atomic (relaxed: it orders nothing else). */
extern _Atomic enum log_level log_threshold;

/* Sets the program name shown in each line and the level from RUNBOX_LOG (default warn).
 * An unknown RUNBOX_LOG value keeps the default and logs a warning naming the accepted values. */
void log_init(const char *program);

void log_set_level(enum log_level level);

/* Parses "error", "warn", "info", "debug" or "trace" (case-insensitive; "warning" too).
 * Returns 0 and sets *out, or -1 for anything else. */
int log_parse_level(const char *s, enum log_level *out);

const char *log_level_name(enum log_level level);

/* Writes one line "<time> <program> <level>: <message>\n" to stderr. Use the macros. */
void log_write(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LOG_AT(level, ...)                                                                         \
    do {                                                                                           \
        if ((level) <= atomic_load_explicit(&log_threshold, memory_order_relaxed))                 \
            log_write((level), __VA_ARGS__);                                                       \
    } while (0)
#define log_error(...) LOG_AT(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  LOG_AT(LOG_WARN, __VA_ARGS__)
#define log_info(...)  LOG_AT(LOG_INFO, __VA_ARGS__)
#define log_debug(...) LOG_AT(LOG_DEBUG, __VA_ARGS__)
#define log_trace(...) LOG_AT(LOG_TRACE, __VA_ARGS__)

#endif /* COMMON_LOG_H */
