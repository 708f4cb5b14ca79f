/* daemon/config.c - runboxd's settings (see config.h).
 *
 * Every setting has one setter that validates a textual or JSON value; the flag table and the
 * file-key table both lead to it, so "--port x" and {"port":"x"} fail with the same rule. The
 * order of application gives the precedence: defaults, then the file, then the environment,
 * then the flags, each overwriting what came before. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#define CONFIG_FILE_MAX (1u << 20) /* a config file larger than this is surely a mistake */
#define TOKEN_FILE_MAX  4096

static const char *const file_keys =
    "port, bind, workspace, allow_network, log_level, user, fsync, cgroup, token_file, "
    "tools, http_threads, http_head_timeout_ms, http_body_timeout_ms, mcp_sessions, "
    "mcp_session_idle_s, mcp_parallel_starts, network, cache_dir, "
    "checkpoint_dir, checkpoint_keep, workspace_quota_mb, exec_<limit>, mcpServers, servers";

/* The numeric server settings: a flag and a file key each, with their range. */
static const struct num_setting {
    const char *key, *flag;
    int min, max;
    size_t off;
} num_settings[] = {
    {"http_threads", "--http-threads", 16, 8192, offsetof(struct config, http_threads)},
    {"http_head_timeout_ms", "--http-head-timeout-ms", 100, 600000,
     offsetof(struct config, http_head_timeout_ms)},
    {"http_body_timeout_ms", "--http-body-timeout-ms", 100, 3600000,
     offsetof(struct config, http_body_timeout_ms)},
    {"mcp_sessions", "--mcp-sessions", 1, 8192, offsetof(struct config, mcp_sessions)},
    {"mcp_session_idle_s", "--mcp-session-idle-s", 10, 7 * 86400,
     offsetof(struct config, mcp_session_idle_s)},
    {"mcp_parallel_starts", "--mcp-parallel-starts", 0, 1024,
     offsetof(struct config, mcp_parallel_starts)},
    {"workspace_quota_mb", "--workspace-quota-mb", 0, 1 << 30,
     offsetof(struct config, workspace_quota_mb)},
};

static const struct num_setting *find_num(const char *name, bool by_flag)
{
    for (size_t i = 0; i < sizeof(num_settings) / sizeof(num_settings[0]); i++)
        if (strcmp(by_flag ? num_settings[i].flag : num_settings[i].key, name) == 0)
            return &num_settings[i];
    return NULL;
}

static int set_num(struct config *cfg, const struct num_setting *ns, const char *src, double d,
                   struct errinfo *err)
{
    if (!(d >= ns->min && d <= ns->max) || d != (double)(long)d) {
        errinfo_set(err, ERR_INVALID, "%s: expected a whole number %d-%d; got %g", src, ns->min,
                    ns->max, d);
        return -1;
    }
    *(int *)((char *)cfg + ns->off) = (int)d;
    return 0;
}

static int set_str(char **dst, const char *value, struct errinfo *err)
{
    char *copy = strdup(value);

    if (!copy) {
        errinfo_set(err, ERR_NOMEM, "config: out of memory");
        return -1;
    }
    free(*dst);
    *dst = copy;
    return 0;
}

/* Joins a and b into an owned string. */
static char *join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);

    if (!s)
        return NULL;
    memcpy(s, a, la);
    memcpy(s + la, b, lb + 1);
    return s;
}

void config_env_from_process(struct config_env *env)
{
    env->runbox_log = getenv("RUNBOX_LOG");
    env->runbox_token = getenv("RUNBOX_TOKEN");
    env->xdg_data_home = getenv("XDG_DATA_HOME");
    env->xdg_config_home = getenv("XDG_CONFIG_HOME");
    env->xdg_cache_home = getenv("XDG_CACHE_HOME");
    env->root = geteuid() == 0;
    env->home = getenv("HOME");
}

/* Owned "<xdg>/runbox/<leaf>" or "<home>/<fallback>/runbox/<leaf>", or NULL when neither is set
 * (XDG says a relative XDG_* value is to be ignored). */
static char *xdg_path(const char *xdg, const char *home, const char *fallback, const char *leaf)
{
    char buf[4096];
    int n;

    if (xdg && xdg[0] == '/')
        n = snprintf(buf, sizeof(buf), "%s/runbox/%s", xdg, leaf);
    else if (home && home[0])
        n = snprintf(buf, sizeof(buf), "%s/%s/runbox/%s", home, fallback, leaf);
    else
        return NULL;
    if (n < 0 || (size_t)n >= sizeof(buf))
        return NULL;
    return strdup(buf);
}

int config_init(struct config *cfg, const struct config_env *env, struct errinfo *err)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->port = CONFIG_DEFAULT_PORT;
    snprintf(cfg->bind, sizeof(cfg->bind), "%s", CONFIG_DEFAULT_BIND);
    cfg->log_level = LOG_WARN;
    cfg->fsync = true;
    cfg->cgroup = true;
    cfg->home = env->home;
    exec_limits_default(&cfg->exec);
    cfg->http_threads = CONFIG_HTTP_THREADS_DEFAULT;
    cfg->http_head_timeout_ms = CONFIG_HTTP_HEAD_TIMEOUT_MS_DEFAULT;
    cfg->http_body_timeout_ms = CONFIG_HTTP_BODY_TIMEOUT_MS_DEFAULT;
    cfg->mcp_sessions = CONFIG_MCP_SESSIONS_DEFAULT;
    cfg->workspace_quota_mb = -1;
    cfg->mcp_session_idle_s = CONFIG_MCP_IDLE_S_DEFAULT;
    /* With neither XDG_DATA_HOME nor HOME there is no default workspace; config_validate says so
     * unless a flag or the file names one. */
    cfg->workspace = xdg_path(env->xdg_data_home, env->home, ".local/share", "workspace");
    cfg->config_file = xdg_path(env->xdg_config_home, env->home, ".config", "config.json");
    /* As root the daemon serves as another account, which must reach the caches: a system
     * directory, not root's home. */
    cfg->cache_dir = env->root ? strdup("/var/cache/runbox")
                               : xdg_path(env->xdg_cache_home, env->home, ".cache", "cache");
    cfg->net.mode = NETPOLICY_PROXY;
    cfg->checkpoint_keep = 50;
    (void)err;
    return 0;
}

void config_cleanup(struct config *cfg)
{
    free(cfg->workspace);
    free(cfg->config_file);
    free(cfg->user);
    free(cfg->tools);
    free(cfg->token_file);
    free(cfg->cache_dir);
    cfg->cache_dir = NULL;
    free(cfg->checkpoint_dir);
    cfg->checkpoint_dir = NULL;
    if (cfg->token)
        memset(cfg->token, 0, strlen(cfg->token)); /* do not leave the secret in freed memory */
    free(cfg->token);
    cfg->workspace = cfg->config_file = cfg->user = cfg->token_file = cfg->token = NULL;
    cfg->tools = NULL;
    cJSON_Delete(cfg->mcp_servers);
    cfg->mcp_servers = NULL;
    for (size_t i = 0; i < cfg->nmcp_configs; i++)
        free(cfg->mcp_configs[i]);
    free(cfg->mcp_configs);
    cfg->mcp_configs = NULL;
    cfg->nmcp_configs = 0;
}

bool config_is_loopback(const char *addr)
{
    struct in_addr a4;
    struct in6_addr a6;

    if (inet_pton(AF_INET, addr, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, addr, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

/* ---- the setters: src names where the value came from, for messages ("--port", "file: key
 * \"port\"") ---- */

static int set_port(struct config *cfg, const char *src, const char *v, struct errinfo *err)
{
    char *end = NULL;
    long n;

    errno = 0;
    n = strtol(v, &end, 10);
    if (!v[0] || errno || *end || n < 0 || n > 65535) {
        errinfo_set(err, ERR_INVALID,
                    "%s: expected a port number 0-65535 (0 = any free port); "
                    "got \"%.40s\"",
                    src, v);
        return -1;
    }
    cfg->port = (int)n;
    return 0;
}

static int set_bind(struct config *cfg, const char *src, const char *v, struct errinfo *err)
{
    unsigned char buf[sizeof(struct in6_addr)];

    if (strcasecmp(v, "localhost") == 0)
        v = "127.0.0.1";
    if (strlen(v) >= sizeof(cfg->bind) ||
        (inet_pton(AF_INET, v, buf) != 1 && inet_pton(AF_INET6, v, buf) != 1)) {
        errinfo_set(err, ERR_INVALID,
                    "%s: expected a numeric IPv4 or IPv6 address such as "
                    "127.0.0.1 or ::1; got \"%.60s\"",
                    src, v);
        return -1;
    }
    snprintf(cfg->bind, sizeof(cfg->bind), "%s", v);
    return 0;
}

static int set_nonempty(char **dst, const char *src, const char *what, const char *v,
                        struct errinfo *err)
{
    if (!v[0]) {
        errinfo_set(err, ERR_INVALID, "%s: expected %s; got an empty string", src, what);
        return -1;
    }
    return set_str(dst, v, err);
}

static int set_log_level(struct config *cfg, const char *src, const char *v, struct errinfo *err)
{
    if (log_parse_level(v, &cfg->log_level) < 0) {
        errinfo_set(err, ERR_INVALID,
                    "%s: expected one of error, warn, info, debug, trace; "
                    "got \"%.40s\"",
                    src, v);
        return -1;
    }
    return 0;
}

/* A path from the config file: "~/x" means $HOME/x (JSON has no shell to expand it). */
static int set_file_path(struct config *cfg, char **dst, const char *src, const char *v,
                         struct errinfo *err)
{
    char *joined;

    if (strncmp(v, "~/", 2) != 0 || !cfg->home || !cfg->home[0])
        return set_nonempty(dst, src, "a path", v, err);
    joined = join(cfg->home, v + 1);
    if (!joined) {
        errinfo_set(err, ERR_NOMEM, "config: out of memory");
        return -1;
    }
    free(*dst);
    *dst = joined;
    return 0;
}

/* ---- the file ---- */

static const char *json_type_name(const cJSON *v)
{
    if (cJSON_IsBool(v))
        return "boolean";
    if (cJSON_IsNumber(v))
        return "number";
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsArray(v))
        return "array";
    if (cJSON_IsObject(v))
        return "object";
    return "null";
}

static int file_type_error(const char *path, const char *key, const char *want, const cJSON *v,
                           struct errinfo *err)
{
    errinfo_set(err, ERR_INVALID, "%s: key \"%s\": expected %s, got %s", path, key, want,
                json_type_name(v));
    return -1;
}

static int file_string(struct config *cfg, const char *path, const cJSON *item, struct errinfo *err)
{
    const char *key = item->string;
    char src[300];

    snprintf(src, sizeof(src), "%s: key \"%s\"", path, key);
    if (!cJSON_IsString(item))
        return file_type_error(path, key, "a string", item, err);
    if (strcmp(key, "bind") == 0)
        return set_bind(cfg, src, item->valuestring, err);
    if (strcmp(key, "workspace") == 0)
        return set_file_path(cfg, &cfg->workspace, src, item->valuestring, err);
    if (strcmp(key, "token_file") == 0)
        return set_file_path(cfg, &cfg->token_file, src, item->valuestring, err);
    if (strcmp(key, "log_level") == 0)
        return set_log_level(cfg, src, item->valuestring, err);
    if (strcmp(key, "tools") == 0)
        return set_nonempty(&cfg->tools, src, "a tool profile", item->valuestring, err);
    return set_nonempty(&cfg->user, src, "a user name", item->valuestring, err); /* "user" */
}

static int set_mode(struct config *cfg, const char *src, const char *v, struct errinfo *err)
{
    int m = netpolicy_parse_mode(v);

    if (m < 0) {
        errinfo_set(err, ERR_INVALID,
                    "%s: expected proxy (the default: out through the egress proxy, by the allow "
                    "list), none or full (the host's network); got \"%.40s\"",
                    src, v);
        return -1;
    }
    cfg->net.mode = (enum netpolicy_mode)m;
    cfg->allow_network = m == NETPOLICY_FULL;
    return 0;
}

static int add_rule(struct config *cfg, const char *src, enum netpolicy_origin origin,
                    const char *v, struct errinfo *err)
{
    struct netpolicy_rule r;

    if (netpolicy_parse_rule(v, src, origin, &r, err) < 0)
        return -1;
    return netpolicy_add(&cfg->net, &r, err);
}

/* "network": {"mode": "proxy"|"none"|"full", "allow": ["host", ...]} */
static int file_network(struct config *cfg, const char *path, const cJSON *item,
                        struct errinfo *err)
{
    const cJSON *m, *allow, *it;
    char src[300];
    int i = 0;

    if (!cJSON_IsObject(item))
        return file_type_error(path, "network", "an object {\"mode\", \"allow\"}", item, err);
    cJSON_ArrayForEach(it, item)
    {
        if (strcmp(it->string, "mode") != 0 && strcmp(it->string, "allow") != 0) {
            errinfo_set(err, ERR_INVALID,
                        "%s: unknown key \"network.%.40s\" (accepted: network.mode, "
                        "network.allow)",
                        path, it->string);
            return -1;
        }
    }
    m = cJSON_GetObjectItemCaseSensitive(item, "mode");
    if (m) {
        snprintf(src, sizeof(src), "%s: key \"network.mode\"", path);
        if (!cJSON_IsString(m))
            return file_type_error(path, "network.mode", "\"proxy\", \"none\" or \"full\"", m, err);
        if (set_mode(cfg, src, m->valuestring, err) < 0)
            return -1;
    }
    allow = cJSON_GetObjectItemCaseSensitive(item, "allow");
    if (allow && !cJSON_IsArray(allow))
        return file_type_error(path, "network.allow", "an array of host names", allow, err);
    cJSON_ArrayForEach(it, allow)
    {
        snprintf(src, sizeof(src), "%s: network.allow[%d]", path, i++);
        if (!cJSON_IsString(it)) {
            errinfo_set(err, ERR_INVALID, "%s: expected a string (a host name); got %s", src,
                        json_type_name(it));
            return -1;
        }
        if (add_rule(cfg, src, NETPOLICY_FROM_CONFIG, it->valuestring, err) < 0)
            return -1;
    }
    return 0;
}

/* "mcpServers" / "servers": kept as they are for the registry, which checks each entry and
 * skips only a bad one. */
static int file_servers(struct config *cfg, const cJSON *item, struct errinfo *err)
{
    cJSON *copy = cJSON_Duplicate(item, 1);

    if (!cfg->mcp_servers)
        cfg->mcp_servers = cJSON_CreateObject();
    if (!copy || !cfg->mcp_servers) {
        cJSON_Delete(copy);
        errinfo_set(err, ERR_NOMEM, "config: out of memory");
        return -1;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(cfg->mcp_servers, item->string);
    cJSON_AddItemToObject(cfg->mcp_servers, item->string, copy);
    return 0;
}

/* Edit distance between a and b (insertions, deletions, substitutions), or 99 when either is
 * longer than 32 bytes. */
static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int row[33];

    if (la > 32 || lb > 32)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];

        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);

            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

/* "unknown key", with the nearest accepted key when one is within two edits. The whole list is
 * longer than a message holds; --help prints it. */
static void unknown_key(const char *path, const char *key, struct errinfo *err)
{
    char best[40] = "", one[40];
    int best_d = 3;

    for (const char *at = file_keys; *at;) {
        size_t n = strcspn(at, ",");
        int d;

        snprintf(one, sizeof(one), "%.*s", (int)(n < sizeof(one) ? n : sizeof(one) - 1), at);
        d = distance(key, one);
        if (d < best_d) {
            best_d = d;
            snprintf(best, sizeof(best), "%s", one);
        }
        at += n;
        at += strspn(at, ", ");
    }
    if (best[0])
        errinfo_set(err, ERR_INVALID,
                    "%s: unknown key \"%.60s\"; did you mean \"%s\"? (runboxd --help lists every "
                    "key)",
                    path, key, best);
    else
        errinfo_set(err, ERR_INVALID, "%s: unknown key \"%.60s\" (runboxd --help lists every key)",
                    path, key);
}

static int file_item(struct config *cfg, const char *path, const cJSON *item, struct errinfo *err)
{
    const char *key = item->string;
    static const char *const string_keys[] = {"bind",      "workspace", "token_file",
                                              "log_level", "user",      "tools"};

    if (strcmp(key, "mcpServers") == 0 || strcmp(key, "servers") == 0)
        return file_servers(cfg, item, err);
    if (strcmp(key, "port") == 0) {
        double d = item->valuedouble;

        if (!cJSON_IsNumber(item))
            return file_type_error(path, key, "an integer 0-65535", item, err);
        if (!(d >= 0 && d <= 65535) || d != (double)(int)d) {
            errinfo_set(err, ERR_INVALID, "%s: key \"port\": expected an integer 0-65535; got %g",
                        path, d);
            return -1;
        }
        cfg->port = (int)d;
        return 0;
    }
    if (strcmp(key, "allow_network") == 0 || strcmp(key, "fsync") == 0 ||
        strcmp(key, "cgroup") == 0) {
        if (!cJSON_IsBool(item))
            return file_type_error(path, key, "true or false", item, err);
        *(key[0] == 'a'   ? &cfg->allow_network
          : key[0] == 'f' ? &cfg->fsync
                          : &cfg->cgroup) = cJSON_IsTrue(item);
        if (key[0] == 'a')
            cfg->net.mode = cfg->allow_network ? NETPOLICY_FULL : NETPOLICY_PROXY;
        return 0;
    }
    if (strcmp(key, "network") == 0)
        return file_network(cfg, path, item, err);
    if (strcmp(key, "checkpoint_dir") == 0) {
        if (!cJSON_IsString(item) || !item->valuestring[0])
            return file_type_error(path, key, "a directory", item, err);
        return set_file_path(cfg, &cfg->checkpoint_dir, path, item->valuestring, err);
    }
    if (strcmp(key, "checkpoint_keep") == 0) {
        double d = item->valuedouble;

        if (!cJSON_IsNumber(item) || !(d >= 1 && d <= 100000) || d != (double)(int)d) {
            errinfo_set(err, ERR_INVALID,
                        "%s: key \"checkpoint_keep\": expected a whole number 1-100000", path);
            return -1;
        }
        cfg->checkpoint_keep = (unsigned)d;
        return 0;
    }
    if (strcmp(key, "cache_dir") == 0) {
        if (!cJSON_IsString(item) || !item->valuestring[0])
            return file_type_error(path, key, "a directory", item, err);
        return set_file_path(cfg, &cfg->cache_dir, path, item->valuestring, err);
    }
    for (size_t i = 0; i < sizeof(string_keys) / sizeof(string_keys[0]); i++)
        if (strcmp(key, string_keys[i]) == 0)
            return file_string(cfg, path, item, err);
    if (find_num(key, false)) {
        char src[300];

        snprintf(src, sizeof(src), "%s: key \"%s\"", path, key);
        if (!cJSON_IsNumber(item))
            return file_type_error(path, key, "a whole number", item, err);
        return set_num(cfg, find_num(key, false), src, item->valuedouble, err);
    }
    if (strncmp(key, "exec_", 5) == 0 && exec_limits_has(key + 5)) {
        char src[300];

        snprintf(src, sizeof(src), "%s: key \"%s\"", path, key);
        if (!cJSON_IsNumber(item))
            return file_type_error(path, key, "a whole number", item, err);
        return exec_limits_set_number(&cfg->exec, src, key + 5, item->valuedouble, err);
    }
    unknown_key(path, key, err);
    return -1;
}

int config_apply_file(struct config *cfg, const char *path, const char *text, struct errinfo *err)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    int rc = -1;

    if (!root) {
        size_t off = end ? (size_t)(end - text) : 0;
        errinfo_set(err, ERR_INVALID,
                    "%s: invalid JSON at byte %zu; expected an object with "
                    "keys %s",
                    path, off, file_keys);
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        /* What it got first: the list of keys is long enough to be cut off. */
        errinfo_set(err, ERR_INVALID, "%s: got %s, expected a JSON object with keys %s", path,
                    json_type_name(root), file_keys);
        goto out;
    }
    for (const cJSON *item = root->child; item; item = item->next)
        if (file_item(cfg, path, item, err) < 0)
            goto out;
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}

/* ---- the environment ---- */

int config_apply_env(struct config *cfg, const struct config_env *env, struct errinfo *err)
{
    enum log_level level;

    if (env->runbox_log && env->runbox_log[0] && log_parse_level(env->runbox_log, &level) == 0)
        cfg->log_level = level;
    if (env->runbox_token && env->runbox_token[0]) {
        /* The environment beats a token_file from the config file. */
        if (set_str(&cfg->token, env->runbox_token, err) < 0)
            return -1;
        free(cfg->token_file);
        cfg->token_file = NULL;
    }
    return 0;
}

/* ---- the flags ---- */

enum opt_id {
    OPT_PORT,
    OPT_BIND,
    OPT_WORKSPACE,
    OPT_CONFIG,
    OPT_ALLOW_NETWORK,
    OPT_LOG_LEVEL,
    OPT_USER,
    OPT_NO_FSYNC,
    OPT_NO_CGROUP,
    OPT_NETWORK,
    OPT_ALLOW_DOMAIN,
    OPT_CACHE_DIR,
    OPT_CHECKPOINT_DIR,
    OPT_CHECKPOINT_KEEP,
    OPT_TOKEN_FILE,
    OPT_TOOLS,
    OPT_MCP_CONFIG,
    OPT_VERSION,
    OPT_HELP
};

struct opt {
    const char *name;
    enum opt_id id;
    bool has_value;
};

static const struct opt opts[] = {
    {"--port", OPT_PORT, true},
    {"--bind", OPT_BIND, true},
    {"--workspace", OPT_WORKSPACE, true},
    {"--config", OPT_CONFIG, true},
    {"--allow-network", OPT_ALLOW_NETWORK, false},
    {"--log-level", OPT_LOG_LEVEL, true},
    {"--user", OPT_USER, true},
    {"--no-fsync", OPT_NO_FSYNC, false},
    {"--no-cgroup", OPT_NO_CGROUP, false},
    {"--network", OPT_NETWORK, true},
    {"--allow-domain", OPT_ALLOW_DOMAIN, true},
    {"--cache-dir", OPT_CACHE_DIR, true},
    {"--checkpoint-dir", OPT_CHECKPOINT_DIR, true},
    {"--checkpoint-keep", OPT_CHECKPOINT_KEEP, true},
    {"--token-file", OPT_TOKEN_FILE, true},
    {"--tools", OPT_TOOLS, true},
    {"--mcp-config", OPT_MCP_CONFIG, true},
    {"--version", OPT_VERSION, false},
    {"--help", OPT_HELP, false},
    {"-h", OPT_HELP, false},
};

/* Finds the option argv[*i] names; sets *value for options that take one (from "=value" or
 * the next argument, advancing *i). */
static const struct opt *match_opt(int argc, char *const argv[], int *i, const char **value,
                                   struct errinfo *err)
{
    const char *arg = argv[*i];
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);

    for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++) {
        if (strlen(opts[k].name) != len || strncmp(arg, opts[k].name, len) != 0)
            continue;
        *value = NULL;
        if (!opts[k].has_value) {
            if (eq) {
                errinfo_set(err, ERR_INVALID, "%s takes no value; see runboxd --help",
                            opts[k].name);
                return NULL;
            }
        } else if (eq) {
            *value = eq + 1;
        } else if (*i + 1 < argc) {
            *value = argv[++*i];
        } else {
            errinfo_set(err, ERR_INVALID, "%s needs a value; see runboxd --help", opts[k].name);
            return NULL;
        }
        return &opts[k];
    }
    errinfo_set(err, ERR_INVALID, "unknown option \"%.60s\"; see runboxd --help", arg);
    return NULL;
}

static int apply_opt(struct config *cfg, const struct opt *o, const char *v, struct errinfo *err)
{
    switch (o->id) {
    case OPT_PORT:
        return set_port(cfg, o->name, v, err);
    case OPT_BIND:
        return set_bind(cfg, o->name, v, err);
    case OPT_WORKSPACE:
        return set_nonempty(&cfg->workspace, o->name, "a directory or :memory:", v, err);
    case OPT_CONFIG:
        return set_nonempty(&cfg->config_file, o->name, "a file", v, err);
    case OPT_ALLOW_NETWORK:
        cfg->allow_network = true;
        cfg->net.mode = NETPOLICY_FULL;
        return 0;
    case OPT_NETWORK:
        return set_mode(cfg, o->name, v, err);
    case OPT_ALLOW_DOMAIN:
        return add_rule(cfg, o->name, NETPOLICY_FROM_FLAG, v, err);
    case OPT_CACHE_DIR:
        return set_nonempty(&cfg->cache_dir, o->name, "a directory", v, err);
    case OPT_CHECKPOINT_DIR:
        return set_nonempty(&cfg->checkpoint_dir, o->name, "a directory", v, err);
    case OPT_CHECKPOINT_KEEP: {
        char *end;
        long n;

        errno = 0;
        n = strtol(v, &end, 10);
        if (errno || *end || !v[0] || n < 1 || n > 100000) {
            errinfo_set(err, ERR_INVALID, "%s: expected a whole number 1-100000; got \"%.40s\"",
                        o->name, v);
            return -1;
        }
        cfg->checkpoint_keep = (unsigned)n;
        return 0;
    }
    case OPT_LOG_LEVEL:
        return set_log_level(cfg, o->name, v, err);
    case OPT_USER:
        return set_nonempty(&cfg->user, o->name, "a user name", v, err);
    case OPT_NO_FSYNC:
        cfg->fsync = false;
        return 0;
    case OPT_NO_CGROUP:
        cfg->cgroup = false;
        return 0;
    case OPT_TOKEN_FILE:
        /* The flag beats RUNBOX_TOKEN. */
        if (set_nonempty(&cfg->token_file, o->name, "a file", v, err) < 0)
            return -1;
        free(cfg->token);
        cfg->token = NULL;
        return 0;
    case OPT_TOOLS:
        return set_nonempty(&cfg->tools, o->name, "a tool profile", v, err);
    case OPT_MCP_CONFIG: {
        char **grown;

        if (!v[0]) {
            errinfo_set(err, ERR_INVALID, "--mcp-config: expected a file; got an empty string");
            return -1;
        }
        grown = realloc(cfg->mcp_configs, (cfg->nmcp_configs + 1) * sizeof(*grown));
        if (!grown || !(grown[cfg->nmcp_configs] = strdup(v))) {
            if (grown)
                cfg->mcp_configs = grown;
            errinfo_set(err, ERR_NOMEM, "config: out of memory");
            return -1;
        }
        cfg->mcp_configs = grown;
        cfg->nmcp_configs++;
        return 0;
    }
    case OPT_VERSION:
        cfg->show_version = true;
        return 0;
    case OPT_HELP:
        cfg->show_help = true;
        return 0;
    }
    return 0;
}

/* "--exec-<key> N" or "--exec-<key>=N" (key with '-' for '_'): 1 when argv[*i] was one (and
 * applied), 0 when it is another option, -1 on error. */
static int apply_exec_flag(struct config *cfg, int argc, char *const argv[], int *i,
                           struct errinfo *err)
{
    const char *arg = argv[*i], *eq = strchr(arg, '='), *value;
    char key[64], flag[80];
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);

    if (strncmp(arg, "--exec-", 7) != 0 || n - 7 >= sizeof(key))
        return 0;
    for (size_t k = 7; k < n; k++)
        key[k - 7] = arg[k] == '-' ? '_' : arg[k];
    key[n - 7] = '\0';
    if (!exec_limits_has(key))
        return 0;
    snprintf(flag, sizeof(flag), "%.*s", (int)n, arg);
    if (eq) {
        value = eq + 1;
    } else if (*i + 1 < argc) {
        value = argv[++*i];
    } else {
        errinfo_set(err, ERR_INVALID, "%s needs a value; see runboxd --help", flag);
        return -1;
    }
    return exec_limits_set(&cfg->exec, flag, key, value, err) < 0 ? -1 : 1;
}

/* A numeric server setting's flag ("--http-threads N" or "=N"): 1 when argv[*i] was one (and
 * applied), 0 when it is another option, -1 on error. */
static int apply_num_flag(struct config *cfg, int argc, char *const argv[], int *i,
                          struct errinfo *err)
{
    const char *arg = argv[*i], *eq = strchr(arg, '='), *value;
    char flag[64], *end;
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    const struct num_setting *ns;
    double d;

    if (n >= sizeof(flag))
        return 0;
    snprintf(flag, sizeof(flag), "%.*s", (int)n, arg);
    ns = find_num(flag, true);
    if (!ns)
        return 0;
    if (eq) {
        value = eq + 1;
    } else if (*i + 1 < argc) {
        value = argv[++*i];
    } else {
        errinfo_set(err, ERR_INVALID, "%s needs a value; see runboxd --help", flag);
        return -1;
    }
    errno = 0;
    d = strtod(value, &end);
    if (errno || end == value || *end) {
        errinfo_set(err, ERR_INVALID, "%s: expected a whole number %d-%d; got \"%.40s\"", flag,
                    ns->min, ns->max, value);
        return -1;
    }
    return set_num(cfg, ns, flag, d, err) < 0 ? -1 : 1;
}

int config_apply_args(struct config *cfg, int argc, char *const argv[], struct errinfo *err)
{
    for (int i = 1; i < argc; i++) {
        const char *value = NULL;
        const struct opt *o;
        int done = apply_num_flag(cfg, argc, argv, &i, err);

        if (done == 0)
            done = apply_exec_flag(cfg, argc, argv, &i, err);

        if (done < 0)
            return -1;
        if (done)
            continue;
        o = match_opt(argc, argv, &i, &value, err);
        if (!o || apply_opt(cfg, o, value, err) < 0)
            return -1;
    }
    return 0;
}

int config_find_file_arg(int argc, char *const argv[], const char **out, struct errinfo *err)
{
    *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *value = NULL;
        struct errinfo ignored = {0};
        const struct opt *o = match_opt(argc, argv, &i, &value, &ignored);

        /* Unknown options are config_apply_args' business; only --config matters here. */
        if (!o && strncmp(argv[i], "--config", 8) == 0 && (!argv[i][8] || argv[i][8] == '=')) {
            errinfo_set(err, ERR_INVALID, "--config needs a value; see runboxd --help");
            return -1;
        }
        if (o && o->id == OPT_CONFIG)
            *out = value;
    }
    return 0;
}

int config_validate(const struct config *cfg, bool has_token, struct errinfo *err)
{
    if (!cfg->workspace) {
        errinfo_set(err, ERR_INVALID,
                    "no workspace: HOME and XDG_DATA_HOME are unset; pass "
                    "--workspace DIR or --workspace :memory:");
        return -1;
    }
    if (!config_is_loopback(cfg->bind) && !has_token) {
        errinfo_set(err, ERR_INVALID,
                    "--bind %s is not a loopback address: anyone who can reach "
                    "it could use the workspace; set a token (RUNBOX_TOKEN or --token-file) or "
                    "bind to 127.0.0.1",
                    cfg->bind);
        return -1;
    }
    return 0;
}

/* Reads a whole small file into an owned NUL-terminated string. */
static char *slurp(const char *path, size_t max, struct errinfo *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n;

    if (!f) {
        errinfo_sys(err, "%s: cannot open", path);
        return NULL;
    }
    buf = malloc(max + 1);
    if (!buf) {
        errinfo_set(err, ERR_NOMEM, "config: out of memory");
        goto out;
    }
    n = fread(buf, 1, max + 1, f);
    if (ferror(f) || n > max) {
        if (ferror(f))
            errinfo_sys(err, "%s: cannot read", path);
        else
            errinfo_set(err, ERR_INVALID, "%s: larger than %zu bytes", path, max);
        free(buf);
        buf = NULL;
        goto out;
    }
    buf[n] = '\0';
out:
    fclose(f);
    return buf;
}

int config_load(struct config *cfg, int argc, char *const argv[], const struct config_env *env,
                struct errinfo *err)
{
    const char *file_arg = NULL;
    char *text = NULL;
    int rc = -1;

    if (config_init(cfg, env, err) < 0 || config_find_file_arg(argc, argv, &file_arg, err) < 0)
        goto out;
    if (file_arg && set_str(&cfg->config_file, file_arg, err) < 0)
        goto out;
    if (cfg->config_file) {
        struct errinfo ferr = {0};

        text = slurp(cfg->config_file, CONFIG_FILE_MAX, &ferr);
        if (!text && (file_arg || ferr.kind != ERR_NOT_FOUND)) {
            /* Only the default file may be missing. */
            errinfo_set(err, ERR_INVALID, "%s", ferr.msg);
            goto out;
        }
        if (!text) {
            free(cfg->config_file);
            cfg->config_file = NULL;
        }
    }
    if (text && config_apply_file(cfg, cfg->config_file, text, err) < 0)
        goto out;
    if (config_apply_env(cfg, env, err) < 0 || config_apply_args(cfg, argc, argv, err) < 0)
        goto out;
    rc = 0;
out:
    free(text);
    return rc;
}

int config_read_token(struct config *cfg, struct errinfo *err)
{
    char *text;
    size_t n;

    if (!cfg->token_file)
        return 0;
    text = slurp(cfg->token_file, TOKEN_FILE_MAX, err);
    if (!text)
        return -1;
    n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ' ||
                     text[n - 1] == '\t'))
        text[--n] = '\0';
    if (n == 0) {
        free(text);
        errinfo_set(err, ERR_INVALID,
                    "%s: the token file is empty; put the token on its first "
                    "line",
                    cfg->token_file);
        return -1;
    }
    free(cfg->token);
    cfg->token = text;
    return 0;
}

char *config_checkpoint_dir(const struct config_env *env, const char *workspace)
{
    const char *name = strrchr(workspace, '/');
    uint64_t h = 1469598103934665603ull;
    char leaf[300];

    for (const char *p = workspace; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    name = name && name[1] ? name + 1 : "workspace";
    snprintf(leaf, sizeof(leaf), "checkpoints/%.200s-%016llx", name, (unsigned long long)h);
    return xdg_path(env->xdg_data_home, env->home, ".local/share", leaf);
}

const char *config_usage(void)
{
    return "Usage: runboxd [options]\n"
           "Runbox daemon: serves the workspace, exec, console and Roblox Studio tools over\n"
           "HTTP on a loopback address.\n"
           "\n"
           "Options:\n"
           "  --port N            port to listen on (default 7766; 0 = any free port, printed\n"
           "                      in the ready line)\n"
           "  --bind ADDR         address to listen on (default 127.0.0.1); a non-loopback\n"
           "                      address needs a token; IPv6 needs a civetweb built with it\n"
           "  --workspace DIR     the workspace directory, or :memory: for a private one that\n"
           "                      disappears with the daemon (default\n"
           "                      $XDG_DATA_HOME/runbox/workspace, i.e.\n"
           "                      ~/.local/share/runbox/workspace)\n"
           "  --workspace-quota-mb N  MiB the workspace may take on disk; past it write_file\n"
           "                      fails and an exec run is stopped (default 10240, or 2048\n"
           "                      for :memory:; 0 = no quota)\n"
           "  --config FILE       JSON config file (default $XDG_CONFIG_HOME/runbox/config.json;\n"
           "                      a missing default file is fine)\n"
           "  --network MODE      exec's network: proxy (default: only through runboxd's\n"
           "                      egress proxy, to the hosts on the allow list), none, or\n"
           "                      full (the host's network, as --allow-network)\n"
           "  --allow-domain RULE add a host to the allow list (repeatable): example.com,\n"
           "                      *.example.com, *, an IP address; optional :port (else 80\n"
           "                      and 443). The list starts with the registries the host's\n"
           "                      npm and pip use\n"
           "  --allow-network     give exec the host's network (same as --network full)\n"
           "  --cache-dir DIR     npm's and pip's caches for exec, kept between runs (default\n"
           "                      $XDG_CACHE_HOME/runbox/cache; /var/cache/runbox as root)\n"
           "  --checkpoint-dir DIR  where the workspace's checkpoints are kept (default\n"
           "                      $XDG_DATA_HOME/runbox/checkpoints/<workspace>-<hash>)\n"
           "  --checkpoint-keep N the most checkpoints kept; older ones go (default 50)\n"
           "  --log-level LEVEL   error, warn, info, debug or trace (default: RUNBOX_LOG, else\n"
           "                      warn); logs go to stderr\n"
           "  --user NAME         the account to run as when started as root (default: the\n"
           "                      sudo caller, else nobody)\n"
           "  --no-fsync          do not fsync written files (faster, less durable)\n"
           "  --no-cgroup         no cgroups for exec: memory and process limits become\n"
           "                      rlimits (default: a cgroup v2 per run when runboxd may\n"
           "                      create them)\n"
           "  --token-file FILE   require \"Authorization: Bearer <token>\" with the token in\n"
           "                      FILE (RUNBOX_TOKEN sets the token directly)\n"
           "  --tools PROFILE     the tools served: all (default), sandbox, studio, readonly,\n"
           "                      or a comma list of these and of groups (docs/tools.md)\n"
           "  --mcp-config FILE   also connect the MCP servers of FILE, a Claude Desktop,\n"
           "                      Cursor or VS Code config read as it is (\"mcpServers\" or\n"
           "                      \"servers\"); may be given more than once (docs/registry.md)\n"
           "  --mcp-parallel-starts N  stdio MCP servers starting at once (0: one per core)\n"
           "  --http-threads N    HTTP workers (320); every open MCP stream (SSE, WebSocket)\n"
           "                      holds one, and the rest serve requests\n"
           "  --http-head-timeout-ms N  a request's head must arrive within N ms (10000)\n"
           "  --http-body-timeout-ms N  its body within N ms after the head (30000)\n"
           "  --mcp-sessions N    MCP sessions open at once on /mcp, /sse and /ws (256)\n"
           "  --mcp-session-idle-s N  an unused /mcp session expires after N s (3600)\n"
           "  --exec-timeout-ms N       exec: default wall-clock limit (60000)\n"
           "  --exec-timeout-max-ms N   exec: most a call may ask for (110000)\n"
           "  --exec-cpu-s N            exec: CPU seconds per process (600)\n"
           "  --exec-memory-mb N        exec: memory of one run as a whole (its processes,\n"
           "                            /tmp, /dev/shm), MiB (2048)\n"
           "  --exec-procs N            exec: processes in one sandbox (256)\n"
           "  --exec-file-size-mb N     exec: largest file a command may write, MiB (256)\n"
           "  --exec-output-bytes N     exec: output kept per stream (1048576)\n"
           "  --exec-tmp-mb N           exec: size of the private /tmp, MiB (512)\n"
           "  --exec-background-max N   exec: background processes at once (8)\n"
           "  --exec-concurrent-max N   exec: commands running at once; more wait (8)\n"
           "  --version           print the version and exit\n"
           "  --help              print this help and exit\n"
           "\n"
           "The config file takes the same settings as JSON keys: port, bind, workspace,\n"
           "allow_network, log_level, user, fsync, cgroup, token_file, tools, http_threads,\n"
           "http_head_timeout_ms, http_body_timeout_ms, mcp_sessions, mcp_session_idle_s,\n"
           "mcp_parallel_starts, network ({\"mode\", \"allow\": [...]}), cache_dir,\n"
           "checkpoint_dir, checkpoint_keep, workspace_quota_mb, and exec_<limit> (e.g.\n"
           "\"exec_timeout_ms\": 90000). Flags beat the environment, which beats the file. Its\n"
           "\"mcpServers\" (or \"servers\") object names external MCP servers whose tools\n"
           "runboxd serves as <server>__<tool>; a bad entry is skipped with an error, the rest\n"
           "start.\n"
           "\n"
           "Endpoints: POST /tool/<name> (JSON arguments), GET /tools, GET /health,\n"
           "GET /mcp-servers (the external servers' state),\n"
           "GET /resources, GET /resource?uri=..., GET /prompts, POST /prompt/<name>, MCP\n"
           "over Streamable HTTP (/mcp), legacy SSE (GET /sse, POST /message) and WebSocket\n"
           "(/ws), and the Studio plugin's GET /poll, POST /result, POST /console,\n"
           "POST /disconnect.\n"
           "Exit status: 0 on SIGTERM/SIGINT, 1 when the port is taken or the workspace\n"
           "cannot be opened, 2 for a configuration error.\n";
}
