/* mcp-proxy/cli_setup.c - `runbox setup CLIENT`: reads the client's config file, puts the runbox
 * entry in (setup.h), keeps a backup of the old file beside it and writes the new one
 * atomically (a temporary file in the same folder, fsync, rename). A file that does not parse
 * is left as it is, with the line and column of the problem. */
#include "cli_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "setup.h"

#define ENV_MAX 32

static const char setup_help[] =
    "usage: runbox setup CLIENT [--dry-run] [--config FILE] [--name NAME] [--env KEY=VALUE ...]\n"
    "       runbox setup --list\n"
    "\n"
    "Adds runbox to an MCP client's configuration, in that client's own file and shape, keeping\n"
    "every other entry and setting (and the comments, where the format has them). Running it\n"
    "again changes nothing; the old file is kept as FILE.bak.\n"
    "\n"
    "clients: claude-desktop, claude-code, cursor, vscode, windsurf, zed, continue, opencode,\n"
    "         codex, gemini-cli\n"
    "\n"
    "  --dry-run        print the change instead of making it\n"
    "  --config FILE    edit FILE instead of the client's user-wide file (e.g. a project's\n"
    "                   .cursor/mcp.json or .vscode/mcp.json)\n"
    "  --name NAME      the entry's name (default runbox)\n"
    "  --env KEY=VALUE  an environment variable for runbox (DAEMON_URL, RUNBOX_TOKEN, ...)\n"
    "  --list           where each client's file is on this machine\n"
    "\n"
    "exit: 0 done (or nothing to do), 1 the file could not be read, parsed or written,\n"
    "      2 bad usage\n";

static enum setup_os this_os(void)
{
#if defined(__APPLE__)
    return SETUP_MACOS;
#elif defined(_WIN32)
    return SETUP_WINDOWS;
#else
    return SETUP_LINUX;
#endif
}

static void env_now(struct setup_env *e)
{
    e->home = getenv("HOME");
    e->xdg_config_home = getenv("XDG_CONFIG_HOME");
    e->appdata = getenv("APPDATA");
    e->codex_home = getenv("CODEX_HOME");
}

/* Reads the whole file. *text NULL with 0 when it does not exist. Returns 0 or -1 (printed). */
static int read_file(struct cli *c, const char *path, char **text, size_t *len, mode_t *mode)
{
    struct stat st;
    FILE *f;
    size_t got;

    *text = NULL;
    *len = 0;
    *mode = 0600;
    if (stat(path, &st) < 0) {
        if (errno == ENOENT)
            return 0;
        cli_err(c, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        cli_err(c, "cannot read %s: it is not a regular file; nothing was changed", path);
        return -1;
    }
    if ((size_t)st.st_size > SETUP_FILE_MAX) {
        cli_err(c, "%s is larger than %zu MiB; is it the right file?", path, SETUP_FILE_MAX >> 20);
        return -1;
    }
    *mode = st.st_mode & 07777;
    f = fopen(path, "rbe");
    if (!f) {
        cli_err(c, "cannot read %s: %s; nothing was changed", path, strerror(errno));
        return -1;
    }
    *text = malloc((size_t)st.st_size + 1);
    got = *text ? fread(*text, 1, (size_t)st.st_size, f) : 0;
    if (!*text || ferror(f)) {
        cli_err(c, "cannot read %s: %s; nothing was changed", path, strerror(errno));
        fclose(f);
        free(*text);
        *text = NULL;
        return -1;
    }
    fclose(f);
    (*text)[got] = '\0';
    *len = got;
    return 0;
}

static int mkdirs(const char *path)
{
    char buf[PATH_MAX];

    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -1;
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return 0;
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Writes text to path atomically, keeping the old file as path.bak. Returns 0 or -1 (printed). */
static int write_file(struct cli *c, const char *path, const char *old, size_t olen,
                      const char *text, mode_t mode)
{
    char tmp[PATH_MAX], bak[PATH_MAX];
    int fd = -1, rc = -1;

    if (snprintf(tmp, sizeof(tmp), "%s.runbox-tmp", path) >= (int)sizeof(tmp) ||
        snprintf(bak, sizeof(bak), "%s.bak", path) >= (int)sizeof(bak)) {
        cli_err(c, "the path %s is too long", path);
        return -1;
    }
    if (mkdirs(path) < 0) {
        cli_err(c, "cannot create the folder of %s: %s", path, strerror(errno));
        return -1;
    }
    if (old) {
        fd = open(bak, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0 || write_all(fd, old, olen) < 0 || fsync(fd) < 0) {
            cli_err(c, "cannot write the backup %s: %s; nothing was changed", bak, strerror(errno));
            goto out;
        }
        close(fd);
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0 || fchmod(fd, mode) < 0) {
        cli_err(c, "cannot write %s: %s; nothing was changed", tmp, strerror(errno));
        goto out;
    }
    close(fd);
    fd = -1;
    if (rename(tmp, path) < 0) {
        cli_err(c, "cannot replace %s: %s; nothing was changed", path, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        unlink(tmp);
    return rc;
}

static int list_clients(struct cli *c)
{
    struct setup_env env;
    char path[SETUP_PATH_MAX];
    struct errinfo err = {0};

    env_now(&env);
    for (size_t i = 0; i < setup_client_count(); i++) {
        const struct setup_client *sc = setup_client_at(i);

        errinfo_clear(&err);
        if (setup_config_path(sc, this_os(), &env, path, sizeof(path), &err) < 0)
            snprintf(path, sizeof(path), "(%s)", err.msg);
        printf("%-15s %-15s %s%s\n", setup_client_name(sc), setup_client_title(sc), path,
               access(path, F_OK) == 0 ? "" : "  (not there yet)");
    }
    (void)c;
    return CLI_EXIT_OK;
}

/* The new text of the file for entry e. Owned, or NULL (printed). */
static char *edit(struct cli *c, const struct setup_client *sc, const char *path, const char *text,
                  size_t len, const struct setup_entry *e)
{
    struct errinfo err = {0};
    char *out;

    if (setup_client_format(sc) == SETUP_TOML) {
        out = setup_toml_put(text, len, e, &err);
    } else {
        const char *keys[4];
        size_t n = setup_client_json_path(sc, text, len, e->name, keys);
        cJSON *entry = setup_entry_json(sc, e);

        out = entry ? setup_json_put(text, len, keys, n, entry, &err) : NULL;
        cJSON_Delete(entry);
    }
    if (!out)
        cli_err(c,
                "%s: %s; nothing was changed (fix the file, or move it away and run setup "
                "again)",
                path, err.msg[0] ? err.msg : "out of memory");
    return out;
}

static void print_hint(const struct setup_client *sc, const struct setup_entry *e)
{
    char *hint = setup_client_cli_hint(sc, e);

    if (hint)
        printf("%s's own command does the same: %s\n", setup_client_title(sc), hint);
    free(hint);
}

int cli_setup(struct cli *c, int argc, char **argv)
{
    const char *client = NULL, *config = NULL, *keys[ENV_MAX], *vals[ENV_MAX];
    char self[PATH_MAX], path[SETUP_PATH_MAX], envbuf[ENV_MAX][512];
    struct setup_entry e = {.name = "runbox", .env_keys = keys, .env_values = vals};
    const struct setup_client *sc;
    struct setup_env env;
    struct errinfo err = {0};
    bool dry = false;
    char *text = NULL, *out = NULL;
    size_t len;
    mode_t mode;
    ssize_t n;
    int rc = CLI_EXIT_FAILED;

    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (cli_help(a, setup_help))
            return CLI_EXIT_OK;
        if (strcmp(a, "--list") == 0)
            return list_clients(c);
        if (strcmp(a, "--dry-run") == 0 || strcmp(a, "-n") == 0) {
            dry = true;
        } else if (strcmp(a, "--config") == 0 && v) {
            config = argv[++i];
        } else if (strcmp(a, "--name") == 0 && v) {
            e.name = argv[++i];
            if (!*e.name || strspn(e.name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                           "0123456789_-") != strlen(e.name)) {
                cli_err(c, "--name takes letters, digits, '_' and '-' (clients refuse others)");
                return CLI_EXIT_USAGE;
            }
        } else if (strcmp(a, "--env") == 0 && v) {
            const char *eq = strchr(v, '=');

            if (!eq || eq == v || e.nenv >= ENV_MAX || (size_t)(eq - v) >= sizeof(envbuf[0])) {
                cli_err(c, "--env takes KEY=VALUE (at most %d); got '%.60s'", ENV_MAX, v);
                return CLI_EXIT_USAGE;
            }
            snprintf(envbuf[e.nenv], sizeof(envbuf[0]), "%.*s", (int)(eq - v), v);
            keys[e.nenv] = envbuf[e.nenv];
            vals[e.nenv++] = eq + 1;
            i++;
        } else if (a[0] != '-' && !client) {
            client = a;
        } else {
            cli_err(c, "unexpected '%s'\n\n%s", a, setup_help);
            return CLI_EXIT_USAGE;
        }
    }
    if (!client) {
        cli_err(c, "which client?\n\n%s", setup_help);
        return CLI_EXIT_USAGE;
    }
    sc = setup_client_find(client);
    if (!sc) {
        cli_err(c,
                "unknown client '%s'; known: claude-desktop, claude-code, cursor, vscode, "
                "windsurf, zed, continue, opencode, codex, gemini-cli",
                client);
        return CLI_EXIT_USAGE;
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        cli_err(c, "cannot find runbox's own path (/proc/self/exe): %s", strerror(errno));
        return CLI_EXIT_FAILED;
    }
    self[n] = '\0';
    e.command = self;
    env_now(&env);
    if (config)
        snprintf(path, sizeof(path), "%s", config);
    else if (setup_config_path(sc, this_os(), &env, path, sizeof(path), &err) < 0) {
        cli_err(c, "%s", err.msg);
        return CLI_EXIT_FAILED;
    }
    if (read_file(c, path, &text, &len, &mode) < 0)
        goto out;
    out = edit(c, sc, path, text ? text : "", len, &e);
    if (!out)
        goto out;
    rc = CLI_EXIT_OK;
    if (text && strcmp(out, text) == 0) {
        printf("%s already has this runbox entry in %s; nothing to change\n",
               setup_client_title(sc), path);
    } else if (dry) {
        char *d = setup_diff(text ? text : "", len, out, strlen(out));

        printf("would %s %s:\n%s", text ? "change" : "create", path, d ? d : "");
        free(d);
    } else if (write_file(c, path, text, len, out, mode) < 0) {
        rc = CLI_EXIT_FAILED;
    } else {
        printf("wrote the %s entry into %s%s%s%s\n", e.name, path,
               text ? " (the old file is kept as " : "", text ? path : "", text ? ".bak)" : "");
        printf("%s\n", setup_client_next_step(sc));
    }
    if (rc == CLI_EXIT_OK)
        print_hint(sc, &e);
out:
    free(text);
    free(out);
    return rc;
}
