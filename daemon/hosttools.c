/* daemon/hosttools.c - probing the programs the exec tool promises (see hosttools.h). */
#include "hosttools.h"

#include <ctype.h>
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clocks.h"
#include "log.h"
#include "strfmt.h"

#define PROBE_TIMEOUT_MS 5000
#define PROBE_OUTPUT_MAX 512
#define CACHE_MAX        (16u << 10) /* the cache file; larger is ignored */

void hosttools_parse_version(const char *text, char *out, size_t outsz)
{
    const char *p = text;

    out[0] = '\0';
    while (*p && *p != '\n') {
        const char *w = p;
        size_t n;

        while (*p && *p != '\n' && !isspace((unsigned char)*p))
            p++;
        n = (size_t)(p - w);
        if (n && (isdigit((unsigned char)w[0]) ||
                  (n > 1 && w[0] == 'v' && isdigit((unsigned char)w[1])))) {
            snprintf(out, outsz, "%.*s", (int)n, w);
            return;
        }
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
    }
}

static bool find_program(const char *name, const char *path, char *out, size_t outsz)
{
    while (*path) {
        size_t n = strcspn(path, ":");
        int w = snprintf(out, outsz, "%.*s/%s", (int)n, path, name);

        if (n && w > 0 && (size_t)w < outsz && access(out, X_OK) == 0)
            return true;
        path += n;
        if (*path == ':')
            path++;
    }
    out[0] = '\0';
    return false;
}

/* One "prog --version" in flight: its pid, the read end of its output pipe, what it printed. */
struct version_run {
    struct hosttools_entry *e;
    pid_t pid;
    int fd;
    size_t len;
    char out[PROBE_OUTPUT_MAX];
};

/* Starts "prog --version" with a clean environment, its stdout and stderr into a pipe. */
static void start_version(struct version_run *r)
{
    char *const argv[] = {r->e->path, "--version", NULL};
    static char path_env[] = "PATH=" HOSTTOOLS_PATH;
    char *const envp[] = {path_env, "LANG=C.UTF-8", "HOME=/tmp", "npm_config_update_notifier=false",
                          NULL};
    posix_spawn_file_actions_t fa;
    int fds[2];

    r->pid = -1;
    r->fd = -1;
    r->len = 0;
    if (pipe2(fds, O_CLOEXEC) < 0)
        return;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    if (posix_spawn(&r->pid, r->e->path, &fa, NULL, argv, envp) != 0)
        r->pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (r->pid > 0)
        r->fd = fds[0];
    else
        close(fds[0]);
}

/* Reads what is there; closes the pipe at its end or when the buffer is full. */
static void read_version(struct version_run *r)
{
    ssize_t got = read(r->fd, r->out + r->len, sizeof(r->out) - 1 - r->len);

    if (got < 0 && errno == EINTR)
        return;
    if (got > 0)
        r->len += (size_t)got;
    if (got <= 0 || r->len + 1 >= sizeof(r->out)) {
        close(r->fd);
        r->fd = -1;
    }
}

/* Runs every "--version" of runs[0..n) at once (at most PROBE_TIMEOUT_MS in all) and parses
 * each answer into its entry: the slowest program, not their sum, is what a probe costs. */
static void run_versions(struct version_run *runs, size_t n)
{
    int64_t end = clocks_mono_ms() + PROBE_TIMEOUT_MS;

    for (size_t i = 0; i < n; i++)
        start_version(&runs[i]);
    for (;;) {
        struct pollfd pf[HOSTTOOLS_MAX];
        size_t idx[HOSTTOOLS_MAX], m = 0;
        int64_t left = end - clocks_mono_ms();

        for (size_t i = 0; i < n; i++)
            if (runs[i].fd >= 0) {
                pf[m] = (struct pollfd){.fd = runs[i].fd, .events = POLLIN};
                idx[m++] = i;
            }
        if (!m || left <= 0)
            break;
        if (poll(pf, m, (int)left) < 0 && errno != EINTR)
            break;
        for (size_t k = 0; k < m; k++)
            if (pf[k].revents)
                read_version(&runs[idx[k]]);
    }
    for (size_t i = 0; i < n; i++) {
        struct version_run *r = &runs[i];

        if (r->fd >= 0)
            close(r->fd);
        if (r->pid > 0) {
            kill(r->pid, SIGKILL); /* it has answered (or never will); do not wait on it */
            waitpid(r->pid, NULL, 0);
        }
        r->out[r->len] = '\0';
        hosttools_parse_version(r->out, r->e->version, sizeof(r->e->version));
    }
}

/* npm's version is in the package.json beside its script: reading it costs no node start. */
static bool npm_version(const char *prog, char *out, size_t outsz)
{
    char real[PATH_MAX], pkg[PATH_MAX + 32], text[4096];
    char *slash, *v;
    ssize_t n;
    int fd;

    if (!realpath(prog, real))
        return false;
    slash = strrchr(real, '/'); /* .../npm/bin/npm-cli.js */
    if (!slash)
        return false;
    *slash = '\0';
    slash = strrchr(real, '/');
    if (!slash || strcmp(slash, "/bin") != 0)
        return false;
    *slash = '\0';
    snprintf(pkg, sizeof(pkg), "%s/package.json", real);
    fd = open(pkg, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0)
        return false;
    text[n] = '\0';
    v = strstr(text, "\"version\"");
    if (!v || !(v = strchr(v + 9, '"')))
        return false;
    v++;
    snprintf(out, outsz, "%.*s", (int)strcspn(v, "\""), v);
    return strstr(text, "\"name\": \"npm\"") || strstr(text, "\"name\":\"npm\"");
}

/* "<device>:<inode>:<size>:<mtime ns>:<ctime ns>" of the file path resolves to: replacing or
 * rewriting the program changes it (ctime moves even when mtime is set back). False when the
 * file cannot be read. */
static bool identity(const char *path, char *out, size_t outsz)
{
    char real[PATH_MAX];
    struct stat st;

    if (!realpath(path, real) || stat(real, &st) < 0)
        return false;
    snprintf(out, outsz, "%ju:%ju:%jd:%jd.%09ld:%jd.%09ld", (uintmax_t)st.st_dev,
             (uintmax_t)st.st_ino, (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec,
             st.st_mtim.tv_nsec, (intmax_t)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
    return true;
}

/* The cache file's document (owned), or NULL when there is none or it is unreadable. */
static cJSON *cache_read(const char *file)
{
    char text[CACHE_MAX + 1];
    int fd = file ? open(file, O_RDONLY | O_CLOEXEC) : -1;
    ssize_t n = fd >= 0 ? read(fd, text, CACHE_MAX) : -1;

    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return NULL;
    text[n] = '\0';
    return cJSON_Parse(text);
}

/* The version the cache holds for e (borrowed from doc), when it was learnt from the same file
 * (path and id); else NULL. */
static const char *cache_lookup(const cJSON *doc, const struct hosttools_entry *e, const char *id)
{
    const cJSON *t =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "tools"), e->name);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(t, "path");
    const cJSON *i = cJSON_GetObjectItemCaseSensitive(t, "id");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, "version");

    if (cJSON_IsString(p) && strcmp(p->valuestring, e->path) == 0 && cJSON_IsString(i) &&
        strcmp(i->valuestring, id) == 0 && cJSON_IsString(v) && v->valuestring[0] &&
        strlen(v->valuestring) < sizeof(e->version))
        return v->valuestring;
    return NULL;
}

/* Writes the versions learnt by running programs (ids[i] "" = not cacheable) to file, through
 * a temporary file and a rename, so a reader never sees half of it. A failure only costs the
 * next start a probe; the log says why. */
static void cache_write(const char *file, const struct hosttools *h, char ids[][96])
{
    cJSON *doc = cJSON_CreateObject(), *tools = cJSON_AddObjectToObject(doc, "tools");
    char *text = NULL, *tmp = strfmt_alloc("%s.%ld.tmp", file, (long)getpid());
    bool ok = tools && tmp;
    int fd = -1;

    for (size_t i = 0; ok && i < h->n; i++) {
        const struct hosttools_entry *e = &h->e[i];
        cJSON *t;

        if (!ids[i][0] || !e->version[0]) /* no answer: ask again next time */
            continue;
        t = cJSON_AddObjectToObject(tools, e->name);
        ok = t && cJSON_AddStringToObject(t, "path", e->path) &&
             cJSON_AddStringToObject(t, "id", ids[i]) &&
             cJSON_AddStringToObject(t, "version", e->version);
    }
    text = ok ? cJSON_PrintUnformatted(doc) : NULL;
    if (text)
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || close(fd) < 0 ||
        rename(tmp, file) < 0) {
        log_info("hosttools: the versions are not kept for the next start: %s: %s", file,
                 text ? strerror(errno) : "out of memory");
        if (tmp)
            unlink(tmp);
    }
    cJSON_free(text);
    cJSON_Delete(doc);
    free(tmp);
}

void hosttools_probe(struct hosttools *h, const char *const *names, size_t n, const char *path,
                     const char *cache_dir)
{
    struct version_run runs[HOSTTOOLS_MAX];
    char ids[HOSTTOOLS_MAX][96];
    char *file = cache_dir ? strfmt_alloc("%s/hosttools.json", cache_dir) : NULL;
    cJSON *doc = cache_read(file);
    size_t nrun = 0;

    memset(h, 0, sizeof(*h));
    for (size_t i = 0; i < n && h->n < HOSTTOOLS_MAX; i++) {
        struct hosttools_entry *e = &h->e[h->n];
        const char *cached = NULL;

        ids[h->n++][0] = '\0';
        snprintf(e->name, sizeof(e->name), "%s", names[i]);
        if (!find_program(names[i], path ? path : HOSTTOOLS_PATH, e->path, sizeof(e->path)))
            continue;
        if (strcmp(e->name, "npm") == 0 && npm_version(e->path, e->version, sizeof(e->version)))
            continue;
        if (identity(e->path, ids[h->n - 1], sizeof(ids[0])))
            cached = cache_lookup(doc, e, ids[h->n - 1]);
        if (cached)
            snprintf(e->version, sizeof(e->version), "%s", cached);
        else
            runs[nrun++].e = e;
    }
    if (nrun) {
        run_versions(runs, nrun);
        if (file)
            cache_write(file, h, ids);
    }
    cJSON_Delete(doc);
    free(file);
}

char *hosttools_sentence(const struct hosttools *h)
{
    char have[1024] = "", miss[512] = "";
    size_t hl = 0, ml = 0;

    for (size_t i = 0; i < h->n; i++) {
        const struct hosttools_entry *e = &h->e[i];
        int w;

        if (e->path[0])
            w = snprintf(have + hl, sizeof(have) - hl, "%s%s%s%s", hl ? ", " : "", e->name,
                         e->version[0] ? " " : "", e->version);
        else
            w = snprintf(miss + ml, sizeof(miss) - ml, "%s%s", ml ? ", " : "", e->name);
        if (w > 0 && e->path[0] && (size_t)w < sizeof(have) - hl)
            hl += (size_t)w;
        else if (w > 0 && !e->path[0] && (size_t)w < sizeof(miss) - ml)
            ml += (size_t)w;
    }
    if (hl && ml)
        return strfmt_alloc("Installed: %s; not installed: %s.", have, miss);
    if (hl)
        return strfmt_alloc("Installed: %s.", have);
    return strfmt_alloc("Not installed: %s.", ml ? miss : "(none probed)");
}

cJSON *hosttools_json(const struct hosttools *h)
{
    cJSON *j = cJSON_CreateObject();

    for (size_t i = 0; j && i < h->n; i++) {
        const struct hosttools_entry *e = &h->e[i];
        cJSON *o;

        if (!e->path[0]) {
            if (!cJSON_AddNullToObject(j, e->name))
                goto fail;
            continue;
        }
        o = cJSON_AddObjectToObject(j, e->name);
        if (!o || !cJSON_AddStringToObject(o, "path", e->path) ||
            !(e->version[0] ? cJSON_AddStringToObject(o, "version", e->version)
                            : cJSON_AddNullToObject(o, "version")))
            goto fail;
    }
    return j;
fail:
    cJSON_Delete(j);
    return NULL;
}
