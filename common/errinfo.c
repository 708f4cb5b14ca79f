/* common/errinfo.c - the first-failure-wins error record (see errinfo.h). */
#include "errinfo.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void errinfo_clear(struct errinfo *err)
{
    if (!err)
        return;
    err->kind = ERR_NONE;
    err->sys_errno = 0;
    err->msg[0] = '\0';
}

/* Messages are single lines: a CR or LF from a caller's string would break log and wire formats. */
static void flatten(char *s)
{
    for (; *s; s++) {
        if (*s == '\n' || *s == '\r')
            *s = ' ';
    }
}

static void vset(struct errinfo *err, enum errinfo_kind kind, int sys_errno, const char *fmt,
                 va_list ap) __attribute__((format(printf, 4, 0)));

static void vset(struct errinfo *err, enum errinfo_kind kind, int sys_errno, const char *fmt,
                 va_list ap)
{
    err->kind = kind;
    err->sys_errno = sys_errno;
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    flatten(err->msg);
}

void errinfo_set(struct errinfo *err, enum errinfo_kind kind, const char *fmt, ...)
{
    va_list ap;

    if (!err || err->kind != ERR_NONE)
        return;
    va_start(ap, fmt);
    vset(err, kind, 0, fmt, ap);
    va_end(ap);
}

static enum errinfo_kind kind_of_errno(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return ERR_NOT_FOUND;
    case EEXIST:
    case ENOTEMPTY:
    case EISDIR:
        return ERR_EXISTS;
    case EACCES:
    case EPERM:
    case ELOOP:
    case EXDEV:
        return ERR_DENIED;
    case ENOMEM:
        return ERR_NOMEM;
    case EFBIG:
    case ENAMETOOLONG:
    case ENOSPC:
    case EDQUOT:
        return ERR_TOO_LARGE;
    case ETIMEDOUT:
        return ERR_TIMEOUT;
    default:
        return ERR_IO;
    }
}

void errinfo_sys(struct errinfo *err, const char *fmt, ...)
{
    int saved = errno;
    va_list ap;
    size_t n;

    if (!err || err->kind != ERR_NONE) {
        errno = saved;
        return;
    }
    va_start(ap, fmt);
    vset(err, kind_of_errno(saved), saved, fmt, ap);
    va_end(ap);
    n = strlen(err->msg);
    if (n < sizeof(err->msg) - 1)
        snprintf(err->msg + n, sizeof(err->msg) - n, ": %s", strerror(saved));
    errno = saved;
}

bool errinfo_is_set(const struct errinfo *err)
{
    return err && err->kind != ERR_NONE;
}

const char *errinfo_kind_name(enum errinfo_kind kind)
{
    switch (kind) {
    case ERR_NONE:
        return "none";
    case ERR_INVALID:
        return "invalid";
    case ERR_NOT_FOUND:
        return "not_found";
    case ERR_EXISTS:
        return "exists";
    case ERR_DENIED:
        return "denied";
    case ERR_TOO_LARGE:
        return "too_large";
    case ERR_TIMEOUT:
        return "timeout";
    case ERR_UNAVAILABLE:
        return "unavailable";
    case ERR_IO:
        return "io";
    case ERR_NOMEM:
        return "nomem";
    case ERR_INTERNAL:
        return "internal";
    case ERR_CANCELLED:
        return "cancelled";
    }
    return "unknown";
}
