/* daemon/chroot.h - is runboxd inside a chroot? The kernel refuses new user namespaces to a
 * chrooted process (unshare(CLONE_NEWUSER) fails with EPERM, whatever the sysctls say), so the
 * sandbox cannot work there, and the fix is another way in (a container, or pivot_root), not a
 * sysctl. Thread-safety: any thread (no state). */
#ifndef DAEMON_CHROOT_H
#define DAEMON_CHROOT_H

#include <stdbool.h>

/* True when some line of the /proc/PID/mountinfo text has "/" as its mount point (the fifth
 * field). A chroot into a directory that is not itself a mount point sees none: the mount its
 * root lies on is out of its reach, and the kernel leaves it out. Pure. */
bool chroot_mountinfo_has_root(const char *mountinfo);

/* True when this process looks chrooted: "/" is not init's root (when /proc/1/root may be
 * read), or no mount is seen at "/". False when it cannot tell (no /proc). A chroot into a
 * directory that is a mount point of its own, under an init that is chrooted too, goes unseen. */
bool chroot_detect(void);

#endif /* DAEMON_CHROOT_H */
