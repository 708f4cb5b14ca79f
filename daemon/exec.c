/* daemon/exec.c - the pure parts of the exec engine (see exec.h). */
#include "exec.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonbuf.h"

/* ---- limits ---- */

struct limit_row {
    const char *key;
    size_t offset;
    uint32_t min, max, dflt;
};

#define LIMIT(k, lo, hi, d)                                                                        \
    {                                                                                              \
#k, offsetof(struct exec_limits, k), lo, hi, d                                             \
    }

static const struct limit_row limit_rows[] = {
    LIMIT(timeout_ms, 100, 86400000, 60000),
    LIMIT(timeout_max_ms, 100, 86400000, 110000),
    LIMIT(cpu_s, 1, 86400, 600),
    LIMIT(memory_mb, 16, 1048576, 2048),
    LIMIT(procs, 8, 65536, 256),
    LIMIT(file_size_mb, 1, 1048576, 256),
    LIMIT(output_bytes, 1024, 256u << 20, 1u << 20),
    LIMIT(tmp_mb, 1, 1048576, 512),
    LIMIT(background_max, 0, 1024, 8),
    LIMIT(concurrent_max, 1, 1024, 8),
};

#define NLIMITS (sizeof(limit_rows) / sizeof(limit_rows[0]))

static uint32_t *limit_field(struct exec_limits *l, const struct limit_row *r)
{
    return (uint32_t *)((char *)l + r->offset);
}

static const struct limit_row *find_limit(const char *key)
{
    for (size_t i = 0; i < NLIMITS; i++)
        if (strcmp(limit_rows[i].key, key) == 0)
            return &limit_rows[i];
    return NULL;
}

void exec_limits_default(struct exec_limits *l)
{
    memset(l, 0, sizeof(*l));
    for (size_t i = 0; i < NLIMITS; i++)
        *limit_field(l, &limit_rows[i]) = limit_rows[i].dflt;
}

const char *exec_limits_keys(void)
{
    return "timeout_ms, timeout_max_ms, cpu_s, memory_mb, procs, file_size_mb, output_bytes, "
           "tmp_mb, background_max, concurrent_max";
}

bool exec_limits_has(const char *key)
{
    return find_limit(key) != NULL;
}

int exec_limits_set_number(struct exec_limits *l, const char *src, const char *key, double v,
                           struct errinfo *err)
{
    const struct limit_row *r = find_limit(key);

    if (!r) {
        errinfo_set(err, ERR_INVALID, "%s: unknown exec limit \"%.60s\" (known: %s)", src, key,
                    exec_limits_keys());
        return -1;
    }
    if (!(v >= r->min && v <= r->max) || v != (double)(uint32_t)v) {
        errinfo_set(err, ERR_INVALID, "%s: expected a whole number %" PRIu32 "-%" PRIu32 "; got %g",
                    src, r->min, r->max, v);
        return -1;
    }
    *limit_field(l, r) = (uint32_t)v;
    return 0;
}

int exec_limits_set(struct exec_limits *l, const char *src, const char *key, const char *text,
                    struct errinfo *err)
{
    const struct limit_row *r = find_limit(key);
    char *end = NULL;
    unsigned long long n;

    if (!r)
        return exec_limits_set_number(l, src, key, 0, err);
    errno = 0;
    n = strtoull(text, &end, 10);
    if (!text[0] || text[0] == '-' || errno || *end || n > r->max || n < r->min) {
        errinfo_set(err, ERR_INVALID,
                    "%s: expected a whole number %" PRIu32 "-%" PRIu32 "; got \"%.40s\"", src,
                    r->min, r->max, text);
        return -1;
    }
    *limit_field(l, r) = (uint32_t)n;
    return 0;
}

bool exec_env_name_ok(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > EXEC_ENV_NAME_MAX || (name[0] >= '0' && name[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

/* ---- the bwrap command line ---- */

/* Files and directories of /etc a toolchain needs (name lookup, TLS roots, the dynamic linker,
 * git and npm defaults); the rest of /etc, where secrets may live, stays out. */
static const char *const etc_files[] = {
    "/etc/passwd",        "/etc/group",           "/etc/hosts",
    "/etc/nsswitch.conf", "/etc/resolv.conf",     "/etc/localtime",
    "/etc/ssl",           "/etc/ca-certificates", "/etc/ca-certificates.conf",
    "/etc/alternatives",  "/etc/ld.so.cache",     "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",  "/etc/gitconfig",       "/etc/mime.types",
    "/etc/os-release",    "/etc/debian_version",  "/etc/profile",
    "/etc/protocols",     "/etc/services",
};

static const char *const sysdirs[4] = {"bin", "lib", "lib64", "sbin"};

#define ARGV_MAX (256 + 3 * EXEC_ROOT_LINKS_MAX)

/* The entries of the sandbox's root that layout B makes; a workspace entry of the same name is
 * reachable as /workspace/<name> only. Sorted. */
static const char *const root_reserved[] = {"bin",    "dev",  "etc",  "lib", "lib32", "lib64",
                                            "libx32", "proc", "sbin", "tmp", "usr",   "workspace"};

bool exec_root_name_ok(const char *name)
{
    if (!name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/'))
        return false;
    for (size_t i = 0; i < sizeof(root_reserved) / sizeof(root_reserved[0]); i++)
        if (strcmp(name, root_reserved[i]) == 0)
            return false;
    return true;
}

struct argv_build {
    const char *v[ARGV_MAX];
    size_t n;
    bool overflow;
    char nums[4][24];          /* formatted numbers (tmp size, uid, gid, shm size) */
    char paths[4][16];         /* "/bin" ... */
    char chdir[32 + 4096 + 8]; /* /workspace/<cwd> */
    char *links;               /* owned: "workspace/<name>\0/<name>\0" for each root link */
};

static void add(struct argv_build *b, const char *s)
{
    if (b->n + 1 >= ARGV_MAX) {
        b->overflow = true;
        return;
    }
    b->v[b->n++] = s;
}

static void add3(struct argv_build *b, const char *a, const char *c, const char *d)
{
    add(b, a);
    add(b, c);
    add(b, d);
}

/* /x -> workspace/x for each top-level entry: a link, not a bind, so the name always means the
 * workspace's current file (a rename over /workspace/x is seen through /x at once), and bwrap
 * makes it in its own tmpfs root, so the workspace gains nothing. */
static void add_root_links(struct argv_build *b, const struct exec_spec *s)
{
    size_t bytes = 0, linked = 0;
    char *p;

    for (size_t i = 0; i < s->nroot; i++)
        bytes += 2 * strlen(s->root_names[i]) + sizeof("workspace/") + 2;
    if (!bytes)
        return;
    b->links = malloc(bytes);
    if (!b->links) {
        b->overflow = true;
        return;
    }
    p = b->links;
    for (size_t i = 0; i < s->nroot && linked < EXEC_ROOT_LINKS_MAX; i++) {
        const char *name = s->root_names[i];
        size_t n = strlen(name);

        if (!exec_root_name_ok(name))
            continue;
        add(b, "--symlink");
        add(b, p);
        memcpy(p, "workspace/", 10);
        memcpy(p + 10, name, n + 1);
        p += 10 + n + 1;
        add(b, p);
        p[0] = '/';
        memcpy(p + 1, name, n + 1);
        p += n + 2;
        linked++;
    }
}

static void add_filesystem(struct argv_build *b, const struct exec_spec *s)
{
    add3(b, "--ro-bind", "/usr", "/usr");
    for (size_t i = 0; i < 4; i++) {
        snprintf(b->paths[i], sizeof(b->paths[i]), "/%s", sysdirs[i]);
        if (s->sysdir[i] == EXEC_SYSDIR_SYMLINK) {
            /* usr-merged host: the same relative link the host has. */
            static const char *const targets[4] = {"usr/bin", "usr/lib", "usr/lib64", "usr/sbin"};
            add3(b, "--symlink", targets[i], b->paths[i]);
        } else if (s->sysdir[i] == EXEC_SYSDIR_DIR) {
            add3(b, "--ro-bind-try", b->paths[i], b->paths[i]);
        }
    }
    for (size_t i = 0; i < sizeof(etc_files) / sizeof(etc_files[0]); i++)
        add3(b, "--ro-bind-try", etc_files[i], etc_files[i]);
    add(b, "--proc");
    add(b, "/proc");
    /* /dev is bwrap's tmpfs of device nodes: read-only, with a /dev/shm of its own size, so no
     * tmpfs a command can write is unbounded (an unsized one takes up to half the RAM). */
    add(b, "--dev");
    add(b, "/dev");
    /* tmpfs takes size 0 for "no limit": a zero in the spec is 1 MiB instead. */
    snprintf(b->nums[3], sizeof(b->nums[3]), "%llu",
             (unsigned long long)(s->shm_mb ? s->shm_mb : 1) << 20);
    add3(b, "--size", b->nums[3], "--tmpfs");
    add(b, "/dev/shm");
    add(b, "--remount-ro");
    add(b, "/dev");
    snprintf(b->nums[0], sizeof(b->nums[0]), "%llu",
             (unsigned long long)(s->tmp_mb ? s->tmp_mb : 1) << 20);
    add3(b, "--size", b->nums[0], "--tmpfs");
    add(b, "/tmp");
    /* The package caches persist outside the workspace; HOME is /tmp, so these are where npm
     * and pip look by default. */
    if (s->npm_cache)
        add3(b, "--bind", s->npm_cache, "/tmp/.npm");
    if (s->pip_cache)
        add3(b, "--bind", s->pip_cache, "/tmp/.cache/pip");
    add3(b, "--bind", s->ws_source, EXEC_WORKSPACE);
    add_root_links(b, s);
    /* Writes outside /workspace and /tmp fail loudly (EROFS) instead of landing in the
     * throwaway root. */
    add(b, "--remount-ro");
    add(b, "/");
}

static const char *const default_env[][2] = {
    {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
    {"HOME", "/tmp"},
    {"LANG", "C.UTF-8"},
    {"TERM", "dumb"},
    {"npm_config_cache", "/tmp/.npm"},
    {"npm_config_update_notifier", "false"},
    {"GIT_AUTHOR_NAME", "Runbox"},
    {"GIT_AUTHOR_EMAIL", "runbox@localhost"},
    {"GIT_COMMITTER_NAME", "Runbox"},
    {"GIT_COMMITTER_EMAIL", "runbox@localhost"},
};

/* Every spelling the usual tools read: curl, git, pip and python (lower and upper case), npm
 * (its own keys), node tools that use proxy-from-env. Loopback stays direct: a command's own
 * servers are inside the sandbox. */
static const char *const proxy_env[][2] = {
    {"http_proxy", EXEC_PROXY_URL},          {"https_proxy", EXEC_PROXY_URL},
    {"HTTP_PROXY", EXEC_PROXY_URL},          {"HTTPS_PROXY", EXEC_PROXY_URL},
    {"no_proxy", "localhost,127.0.0.1,::1"}, {"NO_PROXY", "localhost,127.0.0.1,::1"},
    {"npm_config_proxy", EXEC_PROXY_URL},    {"npm_config_https_proxy", EXEC_PROXY_URL},
    {"PIP_PROXY", EXEC_PROXY_URL},           {"GIT_CONFIG_COUNT", "1"},
    {"GIT_CONFIG_KEY_0", "http.proxy"},      {"GIT_CONFIG_VALUE_0", EXEC_PROXY_URL},
};

static void add_env(struct argv_build *b, const struct exec_spec *s)
{
    add(b, "--clearenv");
    for (size_t i = 0; i < sizeof(default_env) / sizeof(default_env[0]); i++)
        add3(b, "--setenv", default_env[i][0], default_env[i][1]);
    for (size_t i = 0; s->proxy && i < sizeof(proxy_env) / sizeof(proxy_env[0]); i++)
        add3(b, "--setenv", proxy_env[i][0], proxy_env[i][1]);
    for (size_t i = 0; i < s->nnet_env; i++)
        add3(b, "--setenv", s->net_env[i].name, s->net_env[i].value);
    for (size_t i = 0; i < s->nenv; i++)
        add3(b, "--setenv", s->env[i].name, s->env[i].value);
}

/* Copies the collected pointers and their strings into one allocation. */
static char **pack(const struct argv_build *b, struct errinfo *err)
{
    size_t bytes = (b->n + 1) * sizeof(char *);
    char **out;
    char *p;

    for (size_t i = 0; i < b->n; i++)
        bytes += strlen(b->v[i]) + 1;
    out = malloc(bytes);
    if (!out) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the sandbox command line");
        return NULL;
    }
    p = (char *)(out + b->n + 1);
    for (size_t i = 0; i < b->n; i++) {
        size_t len = strlen(b->v[i]) + 1;
        memcpy(p, b->v[i], len);
        out[i] = p;
        p += len;
    }
    out[b->n] = NULL;
    return out;
}

char **exec_build_argv(const struct exec_spec *s, struct errinfo *err)
{
    struct argv_build *b = calloc(1, sizeof(*b));
    char **out = NULL;
    int n;

    if (!b) {
        errinfo_set(err, ERR_NOMEM, "out of memory for the sandbox command line");
        return NULL;
    }
    add(b, s->bwrap);
    add_filesystem(b, s);
    n = snprintf(b->chdir, sizeof(b->chdir), "%s%s", EXEC_WORKSPACE,
                 strcmp(s->cwd, "/") == 0 ? "" : s->cwd);
    if (n < 0 || (size_t)n >= sizeof(b->chdir) || s->cwd[0] != '/') {
        errinfo_set(err, ERR_INVALID, "cwd %.100s is not a normalized workspace path", s->cwd);
        goto out;
    }
    /* Every namespace of --unshare-all but IPC, which the daemon's child made before bwrap
     * started, with System V shared memory bounded (proc_spawn.c). */
    add3(b, "--chdir", b->chdir, "--unshare-pid");
    add3(b, "--unshare-uts", "--unshare-cgroup-try",
         s->allow_network ? "--share-net" : "--unshare-net");
    snprintf(b->nums[1], sizeof(b->nums[1]), "%u", s->uid);
    snprintf(b->nums[2], sizeof(b->nums[2]), "%u", s->gid);
    add3(b, "--unshare-user", "--uid", b->nums[1]);
    add3(b, "--gid", b->nums[2], "--hostname");
    add3(b, "sandbox", "--die-with-parent", "--new-session");
    add3(b, "--cap-drop", "ALL", "--disable-userns");
    add_env(b, s);
    add3(b, "--", "/bin/sh", "-c");
    add(b, s->command);
    if (b->overflow) {
        errinfo_set(err, ERR_INVALID, "too many arguments for the sandbox command line");
        goto out;
    }
    out = pack(b, err);
out:
    free(b->links);
    free(b);
    return out;
}

/* ---- results ---- */

const char *exec_signal_name(const struct exec_outcome *o)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {
        {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
        {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
        {SIGKILL, "SIGKILL"}, {SIGSEGV, "SIGSEGV"}, {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"},
        {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},
    };

    if (o->exit_code <= 128 || o->exit_code > 128 + 64)
        return NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].sig == o->exit_code - 128)
            return names[i].name;
    return NULL;
}

/* Why the command was stopped, for the "[killed: ...]" note, or NULL. */
static const char *kill_reason(const struct exec_outcome *o)
{
    const char *sig = exec_signal_name(o);

    if (o->memory_limit)
        return "memory limit";
    if (o->quota_exceeded)
        return "workspace quota";
    if (o->output_limit)
        return "output limit (it kept printing far past the limit)";
    if (o->timed_out)
        return NULL; /* "[timed out ...]" says it */
    if (o->cancelled)
        return "the call was cancelled";
    if (o->killed)
        return "stopped by kill or by the daemon stopping";
    if (sig && strcmp(sig, "SIGXCPU") == 0)
        return "CPU time limit";
    if (sig && strcmp(sig, "SIGXFSZ") == 0)
        return "file size limit";
    return NULL;
}

char *exec_format_text(const struct exec_outcome *o, size_t *len)
{
    struct jsonbuf b = JSONBUF_INIT(SIZE_MAX / 2);
    const char *reason = kill_reason(o);
    const char *sig = exec_signal_name(o);
    char note[160];

    if (o->out_len)
        jsonbuf_put(&b, o->out, o->out_len, NULL);
    if (o->err_len) {
        if (b.len && b.data[b.len - 1] != '\n')
            jsonbuf_put(&b, "\n", 1, NULL);
        jsonbuf_puts(&b, "[stderr]\n", NULL);
        jsonbuf_put(&b, o->err, o->err_len, NULL);
    }
#define NOTE(...)                                                                                  \
    do {                                                                                           \
        if (b.len && b.data[b.len - 1] != '\n')                                                    \
            jsonbuf_put(&b, "\n", 1, NULL);                                                        \
        snprintf(note, sizeof(note), __VA_ARGS__);                                                 \
        jsonbuf_puts(&b, note, NULL);                                                              \
        jsonbuf_put(&b, "\n", 1, NULL);                                                            \
    } while (0)
    if (o->timed_out)
        NOTE("[timed out after %" PRIu32 " ms]", o->timeout_ms);
    else if (o->exit_code != 0 && sig)
        NOTE("[exit code %d (%s)]", o->exit_code, sig);
    else if (o->exit_code != 0)
        NOTE("[exit code %d]", o->exit_code);
    if (o->out_dropped || o->err_dropped)
        NOTE("[output truncated]");
    if (reason && o->quota_exceeded && !o->memory_limit)
        NOTE("[killed: workspace is full (quota %" PRIu64 " MiB, used %" PRIu64 " MiB)]",
             o->quota_mb, o->quota_used_mb);
    else if (reason)
        NOTE("[killed: %s]", reason);
#undef NOTE
    jsonbuf_put(&b, "", 0, NULL); /* an empty result is "" rather than NULL */
    return jsonbuf_take(&b, len);
}

cJSON *exec_outcome_json(const struct exec_outcome *o)
{
    cJSON *j = cJSON_CreateObject();
    const char *sig = exec_signal_name(o);
    const char *reason = kill_reason(o);
    char *out = malloc(o->out_len + 1), *errs = malloc(o->err_len + 1);
    bool ok = j && out && errs;

    if (ok) {
        memcpy(out, o->out ? o->out : "", o->out_len);
        out[o->out_len] = '\0';
        memcpy(errs, o->err ? o->err : "", o->err_len);
        errs[o->err_len] = '\0';
    }
    ok = ok && cJSON_AddNumberToObject(j, "pid", (double)o->pid) &&
         cJSON_AddNumberToObject(j, "exit_code", o->exit_code) &&
         cJSON_AddStringToObject(j, "stdout", out) && cJSON_AddStringToObject(j, "stderr", errs) &&
         cJSON_AddNumberToObject(j, "duration_ms", (double)o->duration_ms) &&
         cJSON_AddBoolToObject(j, "timed_out", o->timed_out) &&
         cJSON_AddBoolToObject(j, "truncated", o->out_dropped || o->err_dropped) &&
         (sig ? cJSON_AddStringToObject(j, "signal", sig) != NULL
              : cJSON_AddNullToObject(j, "signal") != NULL) &&
         (reason ? cJSON_AddStringToObject(j, "killed", reason) != NULL
                 : cJSON_AddNullToObject(j, "killed") != NULL);
    free(out);
    free(errs);
    if (!ok) {
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

int exec_parse_signal(const char *name)
{
    static const struct {
        const char *name;
        int sig;
    } sigs[] = {{"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT}, {"HUP", SIGHUP}};

    if (strncasecmp(name, "SIG", 3) == 0)
        name += 3;
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        if (strcasecmp(name, sigs[i].name) == 0)
            return sigs[i].sig;
    return -1;
}
