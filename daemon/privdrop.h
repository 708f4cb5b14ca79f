/* daemon/privdrop.h - a daemon started as root gives up root before it serves anything.
 *
 * The target account is --user / config "user", else the sudo caller (SUDO_UID/SUDO_GID), else
 * "nobody". privdrop_apply() hands the workspace root to that account (so the daemon can still
 * write there), sets the supplementary groups, the gid and the uid, and then proves that root
 * cannot be regained. Call it once, before any thread starts.
 * Thread-safety: startup only, single thread. */
#ifndef DAEMON_PRIVDROP_H
#define DAEMON_PRIVDROP_H

#include <stdbool.h>
#include <sys/types.h>

#include "errinfo.h"

struct privdrop_target {
    uid_t uid;
    gid_t gid;
    char name[64]; /* the account name, or "" when the uid has no passwd entry */
};

/* Picks the account. user (a name or a numeric uid) wins; else sudo_uid/sudo_gid (the SUDO_UID /
 * SUDO_GID values, may be NULL); else "nobody". An unknown user fails with ERR_NOT_FOUND, a
 * target that is root itself with ERR_INVALID. */
int privdrop_resolve(const char *user, const char *sudo_uid, const char *sudo_gid,
                     struct privdrop_target *out, struct errinfo *err);

/* Chowns the directory root_fd (the workspace root; an O_PATH fd works) to the target, then
 * drops to it: setgroups/initgroups, setgid, setuid, and checks that setuid(0) now fails.
 * Any failure leaves the process unfit to serve: the caller must exit. */
int privdrop_apply(const struct privdrop_target *t, int root_fd, struct errinfo *err);

#endif /* DAEMON_PRIVDROP_H */
