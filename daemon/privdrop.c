/* daemon/privdrop.c - dropping root before serving (see privdrop.h). */
#include "privdrop.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Parses a whole decimal id; -1 when s is not one. */
static long parse_id(const char *s)
{
    char *end = NULL;
    long n;

    if (!s || !s[0])
        return -1;
    errno = 0;
    n = strtol(s, &end, 10);
    if (errno || *end || n < 0 || n > 0x7fffffffL)
        return -1;
    return n;
}

static void fill_from_pw(struct privdrop_target *out, const struct passwd *pw)
{
    out->uid = pw->pw_uid;
    out->gid = pw->pw_gid;
    snprintf(out->name, sizeof(out->name), "%s", pw->pw_name);
}

static int resolve_user(const char *user, struct privdrop_target *out, struct errinfo *err)
{
    const struct passwd *pw = getpwnam(user);
    long id;

    if (pw) {
        fill_from_pw(out, pw);
        return 0;
    }
    id = parse_id(user);
    if (id >= 0) {
        pw = getpwuid((uid_t)id);
        if (pw) {
            fill_from_pw(out, pw);
        } else {
            /* A bare uid with no account: its own number as the group, no name. */
            out->uid = (uid_t)id;
            out->gid = (gid_t)id;
            out->name[0] = '\0';
        }
        return 0;
    }
    errinfo_set(err, ERR_NOT_FOUND,
                "user \"%.60s\" does not exist; pass --user with an "
                "existing unprivileged account (runboxd never serves as root)",
                user);
    return -1;
}

int privdrop_resolve(const char *user, const char *sudo_uid, const char *sudo_gid,
                     struct privdrop_target *out, struct errinfo *err)
{
    long uid = parse_id(sudo_uid), gid = parse_id(sudo_gid);

    memset(out, 0, sizeof(*out));
    if (user) {
        if (resolve_user(user, out, err) < 0)
            return -1;
    } else if (uid > 0) {
        const struct passwd *pw = getpwuid((uid_t)uid);

        if (pw)
            fill_from_pw(out, pw);
        out->uid = (uid_t)uid;
        if (gid >= 0)
            out->gid = (gid_t)gid;
        else if (!pw)
            out->gid = (gid_t)uid;
    } else if (resolve_user("nobody", out, err) < 0) {
        return -1;
    }
    if (out->uid == 0) {
        errinfo_set(err, ERR_INVALID,
                    "user \"%s\" is root; runboxd never serves as root: pass "
                    "--user with an unprivileged account",
                    out->name[0] ? out->name : "0");
        return -1;
    }
    return 0;
}

static int set_groups(const struct privdrop_target *t, struct errinfo *err)
{
    if (t->name[0]) {
        if (initgroups(t->name, t->gid) < 0) {
            errinfo_sys(err, "initgroups(%s)", t->name);
            return -1;
        }
        return 0;
    }
    if (setgroups(1, &t->gid) < 0) {
        errinfo_sys(err, "setgroups");
        return -1;
    }
    return 0;
}

int privdrop_apply(const struct privdrop_target *t, int root_fd, struct errinfo *err)
{
    if (fchownat(root_fd, "", t->uid, t->gid, AT_EMPTY_PATH) < 0) {
        errinfo_sys(err, "cannot hand the workspace to uid %u", (unsigned)t->uid);
        return -1;
    }
    if (set_groups(t, err) < 0)
        return -1;
    if (setgid(t->gid) < 0) {
        errinfo_sys(err, "setgid(%u)", (unsigned)t->gid);
        return -1;
    }
    if (setuid(t->uid) < 0) {
        errinfo_sys(err, "setuid(%u)", (unsigned)t->uid);
        return -1;
    }
    /* Trust but verify: if root can be regained, something (a capability, a setuid quirk) kept
     * privileges, and serving would be unsafe. */
    if (setuid(0) == 0 || geteuid() == 0 || getuid() == 0 || getegid() != t->gid) {
        errinfo_set(err, ERR_INTERNAL,
                    "still privileged after dropping to uid %u; refusing "
                    "to serve",
                    (unsigned)t->uid);
        return -1;
    }
    return 0;
}
