/* tests/fuzz/fuzz_config.c - runboxd's settings on arbitrary input: the bytes before the first
 * NUL are a config file's text, the rest are command-line arguments, one per line; both are
 * applied onto the defaults, file first, as config_load does, then validated. Contracts checked,
 * aborting when one breaks:
 *   - a failure says so with exactly one error: a non-empty one-line message that names its
 *     source (the file, or the flag);
 *   - a success leaves settings runboxd can use: a port 0-65535, a numeric bind address that
 *     fits, a workspace, and a log level that has a name. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define ARGS_MAX 64

static void require(bool ok)
{
    if (!ok)
        abort();
}

static void check_failure(const struct errinfo *err)
{
    size_t n = strnlen(err->msg, sizeof(err->msg));

    require(err->kind != ERR_NONE);
    require(n > 0 && n < sizeof(err->msg));
    require(strchr(err->msg, '\n') == NULL && strchr(err->msg, '\r') == NULL);
}

static void check_usable(const struct config *cfg)
{
    unsigned char buf[16];

    require(cfg->port >= 0 && cfg->port <= 65535);
    require(strnlen(cfg->bind, sizeof(cfg->bind)) < sizeof(cfg->bind));
    require(inet_pton(AF_INET, cfg->bind, buf) == 1 || inet_pton(AF_INET6, cfg->bind, buf) == 1);
    require(cfg->workspace != NULL && cfg->workspace[0] != '\0');
    require(log_level_name(cfg->log_level) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct config_env env = {.home = "/home/u", .xdg_config_home = "/home/u/.config"};
    const char *nul = memchr(data, '\0', size);
    size_t flen = nul ? (size_t)(nul - (const char *)data) : size;
    char *file = malloc(flen + 1), *args = NULL, *argv[ARGS_MAX + 1];
    struct errinfo err = {0};
    struct config cfg;
    int argc = 0, rc;

    require(file != NULL);
    memcpy(file, data, flen);
    file[flen] = '\0';
    argv[argc++] = "runboxd";
    if (nul) {
        size_t alen = size - flen - 1;

        args = malloc(alen + 1);
        require(args != NULL);
        memcpy(args, nul + 1, alen);
        args[alen] = '\0';
        for (char *a = args; a && argc < ARGS_MAX;) {
            char *nl = strchr(a, '\n');

            if (nl)
                *nl = '\0';
            argv[argc++] = a;
            a = nl ? nl + 1 : NULL;
        }
    }
    argv[argc] = NULL;

    require(config_init(&cfg, &env, &err) == 0);
    rc = flen ? config_apply_file(&cfg, "/home/u/.config/runbox/config.json", file, &err) : 0;
    if (rc < 0) {
        check_failure(&err);
        require(strstr(err.msg, "config.json") != NULL);
    } else {
        rc = config_apply_args(&cfg, argc, argv, &err);
        if (rc < 0)
            check_failure(&err);
    }
    if (rc == 0) {
        require(err.kind == ERR_NONE);
        check_usable(&cfg);
        if (config_validate(&cfg, data[0] % 2 == 0, &err) < 0)
            check_failure(&err);
    }
    config_cleanup(&cfg);
    free(file);
    free(args);
    return 0;
}
