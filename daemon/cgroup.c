/* daemon/cgroup.c - the sandboxes' cgroups (see cgroup.h for the design). */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define CGROUP_PENDING_MAX 64 /* runs' directories still to remove */
#define MOUNTINFO_MAX      (1u << 20)

struct cgroup {
    bool on, memory, pids;
    int base_fd;                /* R, or -1 */
    char path[CGROUP_PATH_MAX]; /* R */
    char reason[400];           /* "" when everything is on */
    uint64_t pending[CGROUP_PENDING_MAX];
    size_t npending;
};

/* ---- pure helpers ---- */

uint64_t cgroup_parse_key(const char *text, const char *key)
{
    size_t klen = strlen(key);

    for (const char *line = text; line && *line;) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
            const char *v = line + klen + 1;
            char *end;
            unsigned long long n;

            errno = 0;
            n = strtoull(v, &end, 10);
            if (end != v && errno == 0 && (*end == '\n' || *end == '\0'))
                return (uint64_t)n;
            return 0;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return 0;
}

bool cgroup_has_word(const char *list, const char *word)
{
    size_t wlen = strlen(word);

    for (const char *s = list + strspn(list, " \t\n"); *s;) {
        size_t n = strcspn(s, " \t\n");

        if (n == wlen && strncmp(s, word, n) == 0)
            return true;
        s += n;
        s += strspn(s, " \t\n");
    }
    return false;
}

/* Copies the n bytes of a mountinfo field into out, decoding "\ooo" escapes; false when it does
 * not fit. */
static bool unescape_field(const char *s, size_t n, char *out, size_t outsz)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        char c = s[i];

        if (c == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
            s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            c = (char)((s[i + 1] - '0') << 6 | (s[i + 2] - '0') << 3 | (s[i + 3] - '0'));
            i += 3;
        }
        if (o + 1 >= outsz)
            return false;
        out[o++] = c;
    }
    out[o] = '\0';
    return true;
}

/* The i-th space-separated field of line (up to its end); NULL when there are fewer. */
static const char *field(const char *line, const char *end, int i, size_t *len)
{
    const char *s = line;

    for (int k = 0; s < end; k++) {
        const char *e = memchr(s, ' ', (size_t)(end - s));

        if (!e)
            e = end;
        if (k == i) {
            *len = (size_t)(e - s);
            return s;
        }
        s = e + 1;
    }
    return NULL;
}

/* For one mountinfo line: when it is a cgroup2 mount whose root holds path, writes the
 * directory into out and returns true. */
static bool mount_holds(const char *line, const char *end, const char *path, char *out,
                        size_t outsz)
{
    char root[CGROUP_PATH_MAX], point[CGROUP_PATH_MAX];
    const char *sep = NULL, *f;
    size_t len, rlen;
    int w;

    for (const char *s = line; s + 3 <= end; s++)
        if (memcmp(s, " - ", 3) == 0) {
            sep = s + 3;
            break;
        }
    if (!sep || !(f = field(sep, end, 0, &len)) || len != 7 || memcmp(f, "cgroup2", 7) != 0)
        return false;
    if (!(f = field(line, end, 3, &len)) || !unescape_field(f, len, root, sizeof(root)) ||
        !(f = field(line, end, 4, &len)) || !unescape_field(f, len, point, sizeof(point)))
        return false;
    rlen = strcmp(root, "/") == 0 ? 0 : strlen(root);
    if (strncmp(path, root, rlen) != 0 || (path[rlen] != '/' && path[rlen] != '\0'))
        return false;
    path += rlen;
    if (strcmp(path, "/") == 0)
        path = "";
    /* point + path, without a doubled '/' when the mount point is "/". */
    w = snprintf(out, outsz, "%s%s", strcmp(point, "/") == 0 && path[0] ? "" : point, path);
    return w > 0 && (size_t)w < outsz;
}

int cgroup_own_dir(const char *proc_cgroup, const char *mountinfo, char *out, size_t outsz)
{
    char path[CGROUP_PATH_MAX];
    const char *line;

    for (line = proc_cgroup; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
        if (strncmp(line, "0::", 3) == 0)
            break;
    if (!line || line[3] != '/')
        return -1;
    line += 3;
    if (strcspn(line, "\n") >= sizeof(path))
        return -1;
    snprintf(path, sizeof(path), "%.*s", (int)strcspn(line, "\n"), line);
    for (const char *s = mountinfo; s && *s;) {
        const char *end = strchr(s, '\n');

        if (!end)
            end = s + strlen(s);
        if (mount_holds(s, end, path, out, outsz))
            return 0;
        s = *end ? end + 1 : NULL;
    }
    return -1;
}

/* ---- file access (relative to a cgroup directory fd) ---- */

static int write_at(int dirfd, const char *file, const char *s)
{
    int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC);
    size_t len = strlen(s);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = write(fd, s, len);
    if (n < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    close(fd);
    return (size_t)n == len ? 0 : -1;
}

static int read_at(int dirfd, const char *file, char *buf, size_t bufsz)
{
    int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = read(fd, buf, bufsz - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return 0;
}

/* Reads a whole /proc file into an owned NUL-terminated buffer, or NULL. */
static char *read_proc(const char *path)
{
    size_t cap = 16384, len = 0;
    char *buf = malloc(cap);
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (!buf || fd < 0)
        goto fail;
    for (;;) {
        ssize_t n;

        if (len + 1 == cap) {
            char *bigger = cap >= MOUNTINFO_MAX ? NULL : realloc(buf, cap * 2);
            if (!bigger)
                goto fail;
            buf = bigger;
            cap *= 2;
        }
        n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            goto fail;
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return buf;
fail:
    if (fd >= 0)
        close(fd);
    free(buf);
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Kills what is in dirfd/name and removes it, retrying for up to tries * 5 ms while the killed
 * processes go away. */
static int kill_and_remove(int dirfd, const char *name, int tries)
{
    for (int i = 0; i < tries; i++) {
        int fd;

        if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            return -1;
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
            write_at(fd, "cgroup.kill", "1");
            close(fd);
        }
        sleep_ms(5);
    }
    return -1;
}

/* The directory dirfd/name opened for readdir, or NULL. */
static DIR *opendir_at(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

    if (!d && fd >= 0)
        close(fd);
    return d;
}

/* Removes R of a daemon that is gone: its runs' directories, its daemon leaf, itself. */
static void remove_stale(int dfd, const char *name)
{
    DIR *d = opendir_at(dfd, name);
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d)) != NULL)
        if (e->d_type == DT_DIR && e->d_name[0] != '.')
            kill_and_remove(dirfd(d), e->d_name, 20);
    closedir(d);
    if (kill_and_remove(dfd, name, 20) == 0)
        log_info("cgroup: removed %s, left by a runboxd that is gone", name);
}

/* True when D/name/daemon, the leaf a daemon lives in, holds a process. The kernel counts
 * every process there, whatever pid namespace it is in. */
static bool leaf_populated(int dfd, const char *name)
{
    char path[CGROUP_PATH_MAX], buf[256];

    if (snprintf(path, sizeof(path), "%s/daemon/cgroup.events", name) >= (int)sizeof(path))
        return false;
    return read_at(dfd, path, buf, sizeof(buf)) == 0 && cgroup_parse_key(buf, "populated") != 0;
}

/* Every runboxd-<pid> in D whose daemon no longer runs. A daemon in another pid namespace
 * (a container that shares the host's cgroup tree) has a pid that means nothing here, or
 * another process's: its daemon leaf still holds it, so that R is left alone. */
static void sweep_stale(int dfd)
{
    DIR *d = opendir_at(dfd, ".");
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid;

        if (strncmp(e->d_name, "runboxd-", 8) != 0)
            continue;
        errno = 0;
        pid = strtol(e->d_name + 8, &end, 10);
        if (errno || *end || pid <= 0 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno == EPERM)
            continue; /* still running */
        if (leaf_populated(dfd, e->d_name))
            continue; /* still running, in a pid namespace we do not see */
        remove_stale(dfd, e->d_name);
    }
    closedir(d);
}

/* ---- start-up ---- */

static void add_reason(struct cgroup *cg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add_reason(struct cgroup *cg, const char *fmt, ...)
{
    size_t n = strlen(cg->reason);
    va_list ap;

    if (n && n + 2 < sizeof(cg->reason)) {
        memcpy(cg->reason + n, "; ", 3);
        n += 2;
    }
    va_start(ap, fmt);
    vsnprintf(cg->reason + n, sizeof(cg->reason) - n, fmt, ap);
    va_end(ap);
}

/* Turns everything off; the reason is the formatted text alone. */
static struct cgroup *off(struct cgroup *cg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static struct cgroup *off(struct cgroup *cg, const char *fmt, ...)
{
    va_list ap;

    cg->on = cg->memory = cg->pids = false;
    va_start(ap, fmt);
    vsnprintf(cg->reason, sizeof(cg->reason), fmt, ap);
    va_end(ap);
    log_info("cgroup: off: %s", cg->reason);
    return cg;
}

/* Enables ctl ("memory", "pids") for the children of D and of R; a reason when it cannot be. */
static bool enable(struct cgroup *cg, int dfd, const char *own, int rfd, const char *ctl)
{
    char buf[512], plus[32];

    snprintf(plus, sizeof(plus), "+%s", ctl);
    if (read_at(dfd, "cgroup.controllers", buf, sizeof(buf)) < 0 || !cgroup_has_word(buf, ctl)) {
        add_reason(cg,
                   "%s does not offer the %s controller (a hybrid host keeps it in cgroup v1; "
                   "boot with systemd.unified_cgroup_hierarchy=1 or delegate it to runboxd)",
                   own, ctl);
        return false;
    }
    if ((read_at(dfd, "cgroup.subtree_control", buf, sizeof(buf)) < 0 ||
         !cgroup_has_word(buf, ctl)) &&
        write_at(dfd, "cgroup.subtree_control", plus) < 0) {
        if (errno == EBUSY)
            add_reason(cg,
                       "%s holds other processes, so its children cannot get the %s "
                       "controller; run runboxd in a cgroup of its own (systemd: Delegate=yes)",
                       own, ctl);
        else
            add_reason(cg, "cannot enable the %s controller in %s (%s)", ctl, own, strerror(errno));
        return false;
    }
    if (write_at(rfd, "cgroup.subtree_control", plus) < 0) {
        add_reason(cg, "cannot enable the %s controller in %s (%s)", ctl, cg->path,
                   strerror(errno));
        return false;
    }
    return true;
}

/* Hands R and the daemon's leaf to uid/gid: what cgroup v2 delegation needs (making children,
 * moving processes between R's descendants). */
static int delegate(int rfd, uid_t uid, gid_t gid)
{
    static const char *const files[] = {
        "",       "cgroup.procs",        "cgroup.threads",       "cgroup.subtree_control",
        "daemon", "daemon/cgroup.procs", "daemon/cgroup.threads"};

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        if (fchownat(rfd, files[i], uid, gid, files[i][0] ? 0 : AT_EMPTY_PATH) < 0 &&
            errno != ENOENT)
            return -1;
    return 0;
}

/* Undoes a half-made setup: the daemon back into D, R removed. */
static void undo(int dfd, int rfd, const char *name)
{
    write_at(dfd, "cgroup.procs", "0");
    if (rfd >= 0) {
        unlinkat(rfd, "daemon", AT_REMOVEDIR);
        close(rfd);
    }
    unlinkat(dfd, name, AT_REMOVEDIR);
}

static bool find_own(char *own, size_t ownsz)
{
    char *pc = read_proc("/proc/self/cgroup"), *mi = read_proc("/proc/self/mountinfo");
    bool ok = pc && mi && cgroup_own_dir(pc, mi, own, ownsz) == 0;

    free(pc);
    free(mi);
    return ok;
}

/* Everything after finding D: R, the daemon's leaf, controllers, delegation. */
static void setup_in(struct cgroup *cg, int dfd, const char *own, uid_t uid, gid_t gid)
{
    char name[32];
    int rfd = -1;

    sweep_stale(dfd);
    snprintf(name, sizeof(name), "runboxd-%ld", (long)getpid());
    snprintf(cg->path, sizeof(cg->path), "%s/%s", own, name);
    if (mkdirat(dfd, name, 0755) < 0 && errno != EEXIST) {
        off(cg, "cannot create a cgroup in %s (%s): limits are rlimits", own, strerror(errno));
        return;
    }
    rfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* cgroup.kill exists in every cgroup but the root one since Linux 5.14. */
    if (rfd >= 0 && faccessat(rfd, "cgroup.kill", F_OK, 0) < 0) {
        undo(dfd, rfd, name);
        off(cg, "%s has no cgroup.kill (Linux before 5.14): limits are rlimits", own);
        return;
    }
    if (rfd < 0 || (mkdirat(rfd, "daemon", 0755) < 0 && errno != EEXIST) ||
        write_at(rfd, "daemon/cgroup.procs", "0") < 0) {
        undo(dfd, rfd, name);
        off(cg, "cannot move runboxd into a cgroup of its own under %s: limits are rlimits", own);
        return;
    }
    if ((uid != geteuid() || gid != getegid()) && delegate(rfd, uid, gid) < 0) {
        undo(dfd, rfd, name);
        off(cg, "cannot hand the cgroup %s to runboxd's user: limits are rlimits", cg->path);
        return;
    }
    cg->on = true;
    cg->base_fd = rfd;
    cg->memory = enable(cg, dfd, own, rfd, "memory");
    cg->pids = enable(cg, dfd, own, rfd, "pids");
    if (cg->reason[0])
        add_reason(cg, "%s",
                   !cg->memory && !cg->pids ? "memory and process limits are rlimits"
                   : !cg->memory            ? "the memory limit is an rlimit"
                                            : "the process limit is an rlimit");
    log_info("cgroup: runs get cgroups under %s (memory %s, pids %s)", cg->path,
             cg->memory ? "cgroup" : "rlimit", cg->pids ? "cgroup" : "rlimit");
}

struct cgroup *cgroup_setup(uid_t uid, gid_t gid, bool enabled)
{
    struct cgroup *cg = calloc(1, sizeof(*cg));
    char own[CGROUP_PATH_MAX - 32];
    int dfd;

    if (!cg)
        return NULL;
    cg->base_fd = -1;
    if (!enabled)
        return off(cg, "turned off by --no-cgroup (or \"cgroup\": false)");
    if (!find_own(own, sizeof(own)))
        return off(cg, "runboxd is in no cgroup v2 hierarchy (a cgroup v1 host): memory and "
                       "process limits are rlimits");
    dfd = open(own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return off(cg, "cannot open %s (%s): limits are rlimits", own, strerror(errno));
    if (faccessat(dfd, ".", W_OK, AT_EACCESS) < 0 ||
        faccessat(dfd, "cgroup.procs", W_OK, AT_EACCESS) < 0) {
        close(dfd);
        return off(cg,
                   "runboxd may not create cgroups in %s: give it a delegated cgroup "
                   "(systemd: Delegate=yes in its unit, or systemd-run --user --scope -p "
                   "Delegate=yes runboxd); until then limits are rlimits",
                   own);
    }
    setup_in(cg, dfd, own, uid, gid);
    close(dfd);
    return cg;
}

/* ---- getters ---- */

bool cgroup_is_on(const struct cgroup *cg)
{
    return cg && cg->on;
}

bool cgroup_has_memory(const struct cgroup *cg)
{
    return cg && cg->on && cg->memory;
}

bool cgroup_has_pids(const struct cgroup *cg)
{
    return cg && cg->on && cg->pids;
}

const char *cgroup_path(const struct cgroup *cg)
{
    return cg && cg->on ? cg->path : NULL;
}

const char *cgroup_reason(const struct cgroup *cg)
{
    if (!cg)
        return "runboxd uses no cgroups: limits are rlimits";
    return cg->reason[0] ? cg->reason : NULL;
}

void cgroup_disable(struct cgroup *cg, const char *why)
{
    if (!cg || !cg->on)
        return;
    off(cg, "%s: limits are rlimits from now on", why);
}

/* ---- runs ---- */

static void run_name(uint64_t id, char *out, size_t outsz)
{
    snprintf(out, outsz, "exec-%" PRIu64, id);
}

int cgroup_run_create(struct cgroup *cg, uint64_t id, uint64_t memory_bytes, uint32_t pids,
                      struct errinfo *err)
{
    char name[32], num[32];
    int fd;

    run_name(id, name, sizeof(name));
    if (mkdirat(cg->base_fd, name, 0755) < 0 && errno != EEXIST) {
        errinfo_sys(err, "exec: cannot create the cgroup %s/%s", cg->path, name);
        return -1;
    }
    fd = openat(cg->base_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        errinfo_sys(err, "exec: cannot open the cgroup %s/%s", cg->path, name);
        goto fail;
    }
    snprintf(num, sizeof(num), "%" PRIu64, memory_bytes);
    if (cg->memory && (write_at(fd, "memory.max", num) < 0 ||
                       (write_at(fd, "memory.swap.max", "0") < 0 && errno != ENOENT))) {
        errinfo_sys(err, "exec: cannot set the memory limit of the cgroup %s/%s", cg->path, name);
        goto fail;
    }
    snprintf(num, sizeof(num), "%" PRIu32, pids);
    if (cg->pids && write_at(fd, "pids.max", num) < 0) {
        errinfo_sys(err, "exec: cannot set the process limit of the cgroup %s/%s", cg->path, name);
        goto fail;
    }
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    unlinkat(cg->base_fd, name, AT_REMOVEDIR);
    err->kind = ERR_IO;
    return -1;
}

void cgroup_run_kill(int fd)
{
    if (fd >= 0)
        write_at(fd, "cgroup.kill", "1");
}

bool cgroup_tidy(struct cgroup *cg)
{
    char name[32];
    size_t keep = 0;

    if (!cg)
        return false;
    for (size_t i = 0; i < cg->npending; i++) {
        run_name(cg->pending[i], name, sizeof(name));
        if (unlinkat(cg->base_fd, name, AT_REMOVEDIR) < 0 && errno == EBUSY)
            cg->pending[keep++] = cg->pending[i];
    }
    cg->npending = keep;
    return keep > 0;
}

bool cgroup_run_end(struct cgroup *cg, uint64_t id, int fd)
{
    char buf[512], name[32];
    bool oom = false;

    if (fd < 0)
        return false;
    if (cg->memory && read_at(fd, "memory.events", buf, sizeof(buf)) == 0)
        oom = cgroup_parse_key(buf, "oom_kill") > 0;
    if (read_at(fd, "cgroup.events", buf, sizeof(buf)) < 0 || cgroup_parse_key(buf, "populated"))
        write_at(fd, "cgroup.kill", "1");
    close(fd);
    if (cg->npending < CGROUP_PENDING_MAX) {
        cg->pending[cg->npending++] = id;
        return oom;
    }
    /* Too many pending (they would have to be stuck): try this one now, once. */
    run_name(id, name, sizeof(name));
    if (unlinkat(cg->base_fd, name, AT_REMOVEDIR) < 0 && errno == EBUSY)
        log_warn("cgroup: %s/%s is still busy and too many are pending; it stays", cg->path, name);
    return oom;
}

void cgroup_free(struct cgroup *cg)
{
    if (!cg)
        return;
    for (int i = 0; i < 200 && cg->base_fd >= 0 && cgroup_tidy(cg); i++)
        sleep_ms(5);
    if (cg->npending)
        log_warn("cgroup: %zu run cgroups under %s could not be removed", cg->npending, cg->path);
    if (cg->base_fd >= 0)
        close(cg->base_fd);
    free(cg);
}
