/* tests/unit/testutil.c - host-side fixture helpers (see testutil.h). */
#include "testutil.h"

#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void testutil_mkdtemp(char *buf, size_t size, const char *prefix)
{
    int n = snprintf(buf, size, "/tmp/%sXXXXXX", prefix);

    ck_assert(n > 0 && (size_t)n < size);
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void testutil_rm_rf(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *testutil_path(const char *base, const char *rel)
{
    static char bufs[4][1024];
    static int next;
    char *b = bufs[next++ % 4];

    snprintf(b, sizeof(bufs[0]), "%s/%s", base, rel);
    return b;
}

void testutil_put(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
}

void testutil_mkdir(const char *path)
{
    ck_assert_int_eq(mkdir(path, 0755), 0);
}
