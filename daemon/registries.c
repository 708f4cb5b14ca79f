/* daemon/registries.c - the host's npm and pip registries (see registries.h). */
#include "registries.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clocks.h"
#include "hosttools.h"

#define OUTPUT_MAX (64u << 10)

extern char **environ;

/* pip's configuration as pip itself loads it (files and PIP_* variables); without an index
 * URL, pip's built-in index and the host its files come from. One URL or host per line. */
static const char pip_probe[] =
    "import sys\n"
    "try:\n"
    "    from pip._internal.configuration import Configuration\n"
    "    c = Configuration(isolated=False)\n"
    "    c.load()\n"
    "    urls = []\n"
    "    for k, v in c.items():\n"
    "        if k.endswith('.index-url') or k.endswith('.extra-index-url'):\n"
    "            urls += str(v).split()\n"
    "    if not urls:\n"
    "        from pip._internal.models.index import PyPI\n"
    "        urls = [PyPI.simple_url, PyPI.file_storage_domain]\n"
    "    print('\\n'.join(urls))\n"
    "except Exception as e:\n"
    "    sys.stderr.write('pip configuration unreadable: %s' % e)\n"
    "    sys.exit(3)\n";

/* Runs argv with the daemon's environment; returns its exit status (-1: could not run or timed
 * out) and its stdout (owned, NUL-terminated) in *out. */
static int run(char *const argv[], char **out)
{
    posix_spawn_file_actions_t fa;
    size_t len = 0;
    char *buf = malloc(OUTPUT_MAX + 1);
    int fds[2], status = -1;
    pid_t pid = -1;
    int64_t end = clocks_mono_ms() + REGISTRIES_TIMEOUT_MS;

    *out = NULL;
    if (!buf || pipe2(fds, O_CLOEXEC) < 0) {
        free(buf);
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addchdir_np(&fa, "/");
    if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
        pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    while (pid > 0 && len < OUTPUT_MAX) {
        struct pollfd pf = {.fd = fds[0], .events = POLLIN};
        int64_t left = end - clocks_mono_ms();
        ssize_t r;

        if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
            break;
        r = read(fds[0], buf + len, OUTPUT_MAX - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fds[0]);
    buf[len] = '\0';
    if (pid > 0) {
        int st;

        if (clocks_mono_ms() >= end)
            kill(pid, SIGKILL);
        if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
            status = WEXITSTATUS(st);
    }
    *out = buf;
    return status;
}

static bool find(const char *name, const char *path, char *out, size_t outsz)
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
    return false;
}

static size_t add_unique(char out[][300], size_t n, size_t max, const char *rule)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(out[i], rule) == 0)
            return n;
    if (n < max)
        snprintf(out[n++], 300, "%s", rule);
    return n;
}

size_t registries_parse_npm(const char *json, char out[][300], size_t max)
{
    cJSON *root = cJSON_Parse(json);
    const cJSON *it;
    size_t n = 0;

    cJSON_ArrayForEach(it, root)
    {
        size_t kl = it->string ? strlen(it->string) : 0;
        char rule[300];

        if (!cJSON_IsString(it) ||
            !(strcmp(it->string, "registry") == 0 ||
              (kl > 9 && it->string[0] == '@' && strcmp(it->string + kl - 9, ":registry") == 0)))
            continue;
        if (netpolicy_rule_from_url(it->valuestring, rule, sizeof(rule)) == 0)
            n = add_unique(out, n, max, rule);
    }
    cJSON_Delete(root);
    return n;
}

size_t registries_parse_lines(const char *text, char out[][300], size_t max)
{
    size_t n = 0;

    while (*text) {
        size_t len = strcspn(text, "\r\n");
        char line[300], rule[300];

        if (len && len < sizeof(line)) {
            memcpy(line, text, len);
            line[len] = '\0';
            if (netpolicy_rule_from_url(line, rule, sizeof(rule)) == 0)
                n = add_unique(out, n, max, rule);
            else if (!strstr(line, "://") && !strchr(line, '/'))
                n = add_unique(out, n, max, line); /* a bare host (pip's file host) */
        }
        text += len;
        while (*text == '\r' || *text == '\n')
            text++;
    }
    return n;
}

/* The probe's URL lines: the first is pip's index-url, the rest extra ones. */
static void index_urls(const char *text, struct registries *r)
{
    while (*text) {
        size_t len = strcspn(text, "\r\n");

        if (len > 8 && (strncmp(text, "https://", 8) == 0 || strncmp(text, "http://", 7) == 0)) {
            if (!r->pip_index[0] && len < sizeof(r->pip_index)) {
                memcpy(r->pip_index, text, len);
                r->pip_index[len] = '\0';
            } else if (r->pip_index[0]) {
                size_t n = strlen(r->pip_extra);
                if (n + len + 2 < sizeof(r->pip_extra))
                    snprintf(r->pip_extra + n, sizeof(r->pip_extra) - n, "%s%.*s", n ? " " : "",
                             (int)len, text);
            }
        }
        text += len;
        while (*text == '\r' || *text == '\n')
            text++;
    }
}

void registries_discover(struct registries *r, const char *path)
{
    char prog[512], *out = NULL;
    int st;

    memset(r, 0, sizeof(*r));
    if (!path)
        path = HOSTTOOLS_PATH;
    if (!find("npm", path, prog, sizeof(prog))) {
        snprintf(r->npm_note, sizeof(r->npm_note), "npm is not installed");
    } else {
        char *const argv[] = {prog, "config", "list", "--json", NULL};
        st = run(argv, &out);
        if (st == 0) {
            cJSON *root = cJSON_Parse(out);
            const cJSON *reg = cJSON_GetObjectItemCaseSensitive(root, "registry");

            r->nnpm = registries_parse_npm(out, r->npm, REGISTRIES_MAX);
            if (cJSON_IsString(reg) && strlen(reg->valuestring) < sizeof(r->npm_url))
                snprintf(r->npm_url, sizeof(r->npm_url), "%s", reg->valuestring);
            cJSON_Delete(root);
        }
        if (!r->nnpm)
            snprintf(r->npm_note, sizeof(r->npm_note), "npm config list --json %s",
                     st == 0 ? "named no registry" : "failed");
        free(out);
        out = NULL;
    }
    if (!find("python3", path, prog, sizeof(prog))) {
        snprintf(r->pip_note, sizeof(r->pip_note), "python3 is not installed");
        return;
    }
    char *const argv[] = {prog, "-c", (char *)pip_probe, NULL};
    st = run(argv, &out);
    if (st == 0) {
        r->npip = registries_parse_lines(out, r->pip, REGISTRIES_MAX);
        index_urls(out, r);
    }
    if (!r->npip)
        snprintf(r->pip_note, sizeof(r->pip_note), "%s",
                 st == 3 ? "pip is not installed or its configuration is unreadable"
                         : "asking pip for its index failed");
    free(out);
}
