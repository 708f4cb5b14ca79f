/* common/errinfo.h - one error convention for every module.
 *
 * A function that can fail returns int (0 ok, -1 failure) or a pointer (NULL on failure) and takes
 * `struct errinfo *err` as its last parameter; err may be NULL. Only the FIRST failure is recorded
 * (the root cause); later calls to errinfo_set() on the same err are ignored.
 * Thread-safety: an errinfo belongs to one caller; the functions keep no state. */
#ifndef COMMON_ERRINFO_H
#define COMMON_ERRINFO_H

#include <stdbool.h>

enum errinfo_kind {
    ERR_NONE,
    ERR_INVALID,     /* the caller's input is wrong */
    ERR_NOT_FOUND,   /* no such file, tool, id */
    ERR_EXISTS,      /* something is in the way */
    ERR_DENIED,      /* refused: outside the workspace, forbidden origin */
    ERR_TOO_LARGE,   /* over a size, depth or count limit */
    ERR_TIMEOUT,     /* a deadline passed */
    ERR_UNAVAILABLE, /* a peer or facility is not there (daemon down, sandbox missing) */
    ERR_IO,          /* the system said no for another reason */
    ERR_NOMEM,
    ERR_INTERNAL, /* a bug */
    ERR_CANCELLED /* the caller cancelled the work (MCP cancellation, a dropped connection) */
};

#define ERRINFO_MSG_MAX 256

struct errinfo {
    enum errinfo_kind kind;    /* ERR_NONE until the first failure */
    int sys_errno;             /* errno at the failure, or 0 */
    char msg[ERRINFO_MSG_MAX]; /* one line, no CR/LF */
};

/* Resets err to "no error". err may be NULL. */
void errinfo_clear(struct errinfo *err);

/* Records the first failure only; err may be NULL. Newlines in the message become spaces. */
void errinfo_set(struct errinfo *err, enum errinfo_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like errinfo_set(), and also saves errno and appends ": <strerror(errno)>". The kind is taken
 * from errno (ENOENT -> ERR_NOT_FOUND, EEXIST/ENOTEMPTY -> ERR_EXISTS, EACCES/EPERM -> ERR_DENIED,
 * ENOMEM -> ERR_NOMEM, EFBIG/ENAMETOOLONG/ENOSPC -> ERR_TOO_LARGE, else ERR_IO). errno is
 * preserved. */
void errinfo_sys(struct errinfo *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* True when err is non-NULL and holds a failure. */
bool errinfo_is_set(const struct errinfo *err);

/* A stable lower-case name for the kind: "invalid", "not_found", ... */
const char *errinfo_kind_name(enum errinfo_kind kind);

#endif /* COMMON_ERRINFO_H */
