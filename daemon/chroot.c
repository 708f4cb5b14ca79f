/* daemon/chroot.c - is runboxd inside a chroot (see chroot.h). */
#include "chroot.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MOUNTINFO_READ_MAX (1u << 20)

bool chroot_mountinfo_has_root(const char *mountinfo)
{
    for (const char *line = mountinfo; line && *line;) {
        const char *p = line, *end = strchr(line, '\n');

        /* Skip four fields: mount id, parent id, major:minor, root. */
        for (int f = 0; f < 4 && p; f++) {
            p = strchr(p, ' ');
            if (p && (!end || p < end))
                p++;
            else
                p = NULL;
        }
        if (p && p[0] == '/' && (p[1] == ' ' || p[1] == '\n' || p[1] == '\0'))
            return true;
        line = end ? end + 1 : NULL;
    }
    return false;
}

/* The whole of a /proc file, NUL-terminated (owned), or NULL. */
static char *read_all(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t len = 0, cap = 8192;
    char *buf = NULL;

    if (fd < 0)
        return NULL;
    buf = malloc(cap);
    while (buf) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);

        if (n <= 0)
            break;
        len += (size_t)n;
        if (len + 1 == cap) {
            char *nb = cap < MOUNTINFO_READ_MAX ? realloc(buf, cap * 2) : NULL;

            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
    }
    close(fd);
    if (buf)
        buf[len] = '\0';
    return buf;
}

bool chroot_detect(void)
{
    struct stat root, init_root;
    char *mi;
    bool has_root;

    /* Init's root differs from ours: chrooted (as root; others may not look at pid 1). The
     * same root proves nothing, as init may be chrooted too (a pid namespace inside a chroot). */
    if (stat("/", &root) == 0 && stat("/proc/1/root/", &init_root) == 0 &&
        (root.st_dev != init_root.st_dev || root.st_ino != init_root.st_ino))
        return true;
    mi = read_all("/proc/self/mountinfo");
    if (!mi)
        return false;
    has_root = chroot_mountinfo_has_root(mi);
    free(mi);
    return !has_root;
}
