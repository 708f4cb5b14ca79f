/* common/strfmt.h - a formatted string in memory of its own.
 * Thread-safety: pure; safe from any thread. */
#ifndef COMMON_STRFMT_H
#define COMMON_STRFMT_H

/* printf into a new string of exactly the needed size. Returns it owned (free()), or NULL when
 * out of memory. */
char *strfmt_alloc(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* COMMON_STRFMT_H */
