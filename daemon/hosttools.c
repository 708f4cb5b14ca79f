/* daemon/hosttools.c - probing the programs the exec tool promises (see hosttools.h). */
#include "hosttools.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "strfmt.h"

#define PROBE_TIMEOUT_MS 5000
#define PROBE_OUTPUT_MAX 512

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

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs "prog --version" with a clean environment and reads its first bytes. */
static void run_version(const char *prog, char *buf, size_t bufsz)
{
    char *const argv[] = {(char *)prog, "--version", NULL};
    static char path_env[] = "PATH=" HOSTTOOLS_PATH;
    char *const envp[] = {path_env, "LANG=C.UTF-8", "HOME=/tmp", "npm_config_update_notifier=false",
                          NULL};
    posix_spawn_file_actions_t fa;
    size_t len = 0;
    int fds[2];
    pid_t pid = -1;
    int64_t end = mono_ms() + PROBE_TIMEOUT_MS;

    buf[0] = '\0';
    if (pipe2(fds, O_CLOEXEC) < 0)
        return;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    if (posix_spawn(&pid, prog, &fa, NULL, argv, envp) != 0)
        pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    while (pid > 0 && len + 1 < bufsz) {
        struct pollfd pf = {.fd = fds[0], .events = POLLIN};
        int64_t left = end - mono_ms();
        ssize_t r;

        if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
            break;
        r = read(fds[0], buf + len, bufsz - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    close(fds[0]);
    if (pid > 0) {
        kill(pid, SIGKILL); /* it has answered (or never will); do not wait on it */
        waitpid(pid, NULL, 0);
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

void hosttools_probe(struct hosttools *h, const char *const *names, size_t n, const char *path)
{
    memset(h, 0, sizeof(*h));
    for (size_t i = 0; i < n && h->n < HOSTTOOLS_MAX; i++) {
        struct hosttools_entry *e = &h->e[h->n++];
        char out[PROBE_OUTPUT_MAX];

        snprintf(e->name, sizeof(e->name), "%s", names[i]);
        if (!find_program(names[i], path ? path : HOSTTOOLS_PATH, e->path, sizeof(e->path)))
            continue;
        if (strcmp(e->name, "npm") == 0 && npm_version(e->path, e->version, sizeof(e->version)))
            continue;
        run_version(e->path, out, sizeof(out));
        hosttools_parse_version(out, e->version, sizeof(e->version));
    }
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
