/* common/strfmt.c - a formatted string in memory of its own (see strfmt.h). */
#include "strfmt.h"

#include <stdarg.h>
#include <stdio.h>

char *strfmt_alloc(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}
