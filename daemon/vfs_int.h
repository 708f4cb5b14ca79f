/* daemon/vfs_int.h - what vfs.c shares with vfs_search.c; not for other modules.
 *
 * Both files resolve tool paths the same way: vfs_normalize() first, then one openat2() call
 * relative to the root fd with RESOLVE_IN_ROOT, so a symlink can never lead out of the root. */
#ifndef DAEMON_VFS_INT_H
#define DAEMON_VFS_INT_H

#include <stdint.h>

#include "vfs.h"

/* Opens the normalized VFS path norm (as made by vfs_normalize) inside the root with openat2
 * flags (O_CLOEXEC is added). "/" opens the root itself. Retries the EAGAIN that openat2 gives
 * when a rename raced the resolution. Returns an owned fd, or -1 with errno set. */
int vfs_open_in_root(const struct vfs *v, const char *norm, uint64_t flags);

/* Fills err for the failure errno e of an operation on the VFS path vpath, in words a model can
 * act on ("/a/b: no such file or directory"). Never names a host path. */
void vfs_path_error(struct errinfo *err, const char *vpath, int e);

#endif /* DAEMON_VFS_INT_H */
