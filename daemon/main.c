/* daemon/main.c - runboxd: settings, the workspace, dropping root, the HTTP server, and a clean
 * shutdown on SIGTERM/SIGINT.
 *
 * Startup order matters: the settings and the token are read while we may still be root (the
 * files may be root's), then the workspace is opened and handed to the target user, the
 * sandboxes' cgroups are made and delegated to it (this moves the daemon, so no thread may exist
 * yet), then root is dropped, and only then does any thread start or any socket accept. Exit
 * status: 0 after a signal, 1 when the port is taken or the workspace or server cannot start, 2 for
 * a bad setting. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "bridge.h"
#include "call.h"
#include "catalog.h"
#include "checkpoint.h"
#include "cgroup.h"
#include "config.h"
#include "console.h"
#include "dynlib.h"
#include "egress.h"
#include "errinfo.h"
#include "events.h"
#include "groupwatch.h"
#include "hosttools.h"
#include "log.h"
#include "portfwd.h"
#include "privdrop.h"
#include "proc.h"
#include "quota.h"
#include "resources.h"
#include "strfmt.h"
#include "registry.h"
#include "tools.h"
#include "vfs.h"
#include "watch.h"

static int fail(int status, const struct errinfo *err)
{
    fprintf(stderr, "runboxd: %s\n", err->msg);
    return status;
}

/* "<cache_dir>/<leaf>", made (0700) and, when runboxd still runs as root, handed to uid/gid.
 * NULL (no cache for that tool) when it cannot be made; the log says why. */
static char *cache_subdir(const char *base, const char *leaf, uid_t uid, gid_t gid)
{
    char *path = base ? strfmt_alloc("%s/%s", base, leaf) : NULL;

    if (!path)
        return NULL;
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            (void)mkdir(path, 0755);
            *p = '/';
        }
    if ((mkdir(path, 0700) < 0 && errno != EEXIST) ||
        (geteuid() == 0 && chown(path, uid, gid) < 0)) {
        log_warn("runboxd: no %s cache: %s: %s", leaf, path, strerror(errno));
        free(path);
        return NULL;
    }
    return path;
}

/* npm's and pip's caches for exec (owned), and the daemon's own (the host programs' versions,
 * hosttools.h), made before root is dropped; and the checkpoint store, opened then too (as
 * root, its path may lie under a home the account cannot traverse: the daemon keeps the
 * directory fd). */
struct caches {
    char *npm, *pip, *own;
    int store_fd;    /* the checkpoint store, or -1 */
    char *store_tmp; /* owned: a :memory: workspace's store, removed at exit */
};

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    (void)remove(path); /* what cannot be removed stays; the walk goes on */
    return 0;
}

/* Makes dir and its parents (0700); the last one handed to uid/gid when root. */
static int mkdirs(char *dir, uid_t uid, gid_t gid)
{
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            (void)mkdir(dir, 0700);
            *p = '/';
        }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -1;
    if (geteuid() == 0 && chown(dir, uid, gid) < 0)
        return -1;
    return 0;
}

/* A :memory: workspace's store: STORE_TMP_PREFIX + 6 random characters in /dev/shm (else /tmp).
 * runboxd removes it when it stops; one it could not remove (it was SIGKILLed, it crashed) is
 * swept by the next runboxd that starts. Each runboxd holds an flock on its own store for as
 * long as it runs (on the open directory, which dies with the process), so a store whose lock
 * can be taken has no owner left. The store is made under a dot name and renamed only once
 * locked: a sweep never sees one that is still being set up. */
#define STORE_TMP_PREFIX "runbox-checkpoints-"

static const char *const store_tmp_parents[] = {"/dev/shm", "/tmp"};

static void sweep_dead_stores(uid_t uid)
{
    for (size_t i = 0; i < sizeof(store_tmp_parents) / sizeof(store_tmp_parents[0]); i++) {
        DIR *d = opendir(store_tmp_parents[i]);
        struct dirent *e;

        while (d && (e = readdir(d)) != NULL) {
            char path[PATH_MAX];
            struct stat st;
            int fd;

            if (strncmp(e->d_name, STORE_TMP_PREFIX, strlen(STORE_TMP_PREFIX)) != 0 ||
                snprintf(path, sizeof(path), "%s/%s", store_tmp_parents[i], e->d_name) >=
                    (int)sizeof(path))
                continue;
            fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0)
                continue;
            if (fstat(fd, &st) == 0 && st.st_uid == uid && flock(fd, LOCK_EX | LOCK_NB) == 0) {
                nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
                log_info("runboxd: removed %s, the checkpoint store of a runboxd that did not "
                         "stop (killed or crashed)",
                         path);
            }
            close(fd);
        }
        if (d)
            closedir(d);
    }
}

/* Makes, locks and names a :memory: workspace's store; its path (owned) or NULL. */
static char *store_tmp_make(struct caches *c, uid_t uid, gid_t gid)
{
    for (size_t i = 0; i < sizeof(store_tmp_parents) / sizeof(store_tmp_parents[0]); i++) {
        char tmpl[64], final[64];
        int fd;

        snprintf(tmpl, sizeof(tmpl), "%s/." STORE_TMP_PREFIX "XXXXXX", store_tmp_parents[i]);
        if (!mkdtemp(tmpl))
            continue;
        fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        snprintf(final, sizeof(final), "%s/%s", store_tmp_parents[i], strrchr(tmpl, '/') + 2);
        if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 || rename(tmpl, final) < 0) {
            if (fd >= 0)
                close(fd);
            (void)rmdir(tmpl);
            continue;
        }
        if (geteuid() == 0 && fchown(fd, uid, gid) < 0)
            log_warn("runboxd: cannot hand %s to the account it serves as: %s", final,
                     strerror(errno));
        c->store_fd = fd;
        return strdup(final);
    }
    return NULL;
}

static void store_open(struct caches *c, const struct config *cfg, uid_t uid, gid_t gid)
{
    struct config_env env;
    char *dir = NULL;

    c->store_fd = -1;
    config_env_from_process(&env);
    sweep_dead_stores(uid);
    if (cfg->checkpoint_dir) {
        dir = strdup(cfg->checkpoint_dir);
    } else if (strcmp(cfg->workspace, VFS_MEMORY) == 0) {
        c->store_tmp = store_tmp_make(c, uid, gid);
        if (!c->store_tmp)
            log_warn("runboxd: no checkpoints: cannot make a store in /dev/shm or /tmp: %s",
                     strerror(errno));
        return;
    } else {
        dir = config_checkpoint_dir(&env, cfg->workspace);
    }
    if (!dir || mkdirs(dir, uid, gid) < 0 ||
        (c->store_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        log_warn("runboxd: no checkpoints: cannot open the store %s: %s",
                 dir ? dir : "(no data home)", strerror(errno));
    free(dir);
}

static void store_close(struct caches *c)
{
    if (c->store_fd >= 0)
        close(c->store_fd);
    if (c->store_tmp)
        nftw(c->store_tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(c->store_tmp);
}

static void caches_make(struct caches *c, const struct config *cfg, uid_t uid, gid_t gid)
{
    c->npm = cache_subdir(cfg->cache_dir, "npm", uid, gid);
    c->pip = cache_subdir(cfg->cache_dir, "pip", uid, gid);
    c->own = cache_subdir(cfg->cache_dir, "runboxd", uid, gid);
    store_open(c, cfg, uid, gid);
}

/* Settings, token and their checks. Returns -1 to go on, else the exit status. */
static int setup_config(struct config *cfg, int argc, char *argv[])
{
    struct config_env env;
    struct errinfo err = {0};

    config_env_from_process(&env);
    if (config_load(cfg, argc, argv, &env, &err) < 0)
        return fail(2, &err);
    if (cfg->show_help) {
        fputs(config_usage(), stdout);
        return 0;
    }
    if (cfg->show_version) {
        printf("runboxd %s\n", RUNBOX_VERSION);
        return 0;
    }
    log_set_level(cfg->log_level);
    if (config_read_token(cfg, &err) < 0 || config_validate(cfg, cfg->token != NULL, &err) < 0 ||
        api_check_bind(cfg->bind, api_have_ipv6(), &err) < 0)
        return fail(2, &err);
    return -1;
}

/* Makes the sandboxes' cgroups (*cg) for the account the daemon serves as. When root: picks
 * that account (exit 2 when unknown), hands it the workspace and the cgroups, and drops to it.
 * Returns -1 to go on, else the exit status. */
static int drop_root(const struct config *cfg, struct vfs *v, struct cgroup **cg,
                     struct caches *caches)
{
    struct privdrop_target t;
    struct errinfo err = {0};

    if (geteuid() != 0) {
        if (cfg->user)
            log_info("runboxd: not root, so --user %s is not needed and ignored", cfg->user);
        *cg = cgroup_setup(getuid(), getgid(), cfg->cgroup);
        caches_make(caches, cfg, getuid(), getgid());
        return -1;
    }
    if (privdrop_resolve(cfg->user, getenv("SUDO_UID"), getenv("SUDO_GID"), &t, &err) < 0)
        return fail(2, &err);
    *cg = cgroup_setup(t.uid, t.gid, cfg->cgroup);
    caches_make(caches, cfg, t.uid, t.gid);
    if (privdrop_apply(&t, vfs_root_fd(v), &err) < 0)
        return fail(1, &err);
    log_info("runboxd: started as root; now serving as user %s (uid %u, gid %u)",
             t.name[0] ? t.name : "(no name)", (unsigned)t.uid, (unsigned)t.gid);
    return -1;
}

/* Checks the target account before the workspace is touched, so an unknown --user does not
 * create directories first. */
static int check_user(const struct config *cfg)
{
    struct privdrop_target t;
    struct errinfo err = {0};

    if (geteuid() != 0)
        return -1;
    if (privdrop_resolve(cfg->user, getenv("SUDO_UID"), getenv("SUDO_GID"), &t, &err) < 0)
        return fail(2, &err);
    return -1;
}

/* Probes the programs the catalog's "hostTools" name (their versions kept in cache_dir, which
 * may be NULL) and builds the daemon's catalog, whose exec description names what is
 * installed. NULL (the compiled-in catalog is served) only when memory runs out. */
static struct catalog *probe_tools(struct hosttools *ht, const char *cache_dir)
{
    const struct catalog *cat = catalog_builtin();
    const char *names[HOSTTOOLS_MAX];
    size_t n = 0;
    struct catalog *own;
    char *note;

    for (size_t i = 0; i < catalog_count(cat); i++) {
        const cJSON *list = catalog_tool_host_tools(catalog_at(cat, i)), *it;

        cJSON_ArrayForEach(it, list)
        {
            bool seen = false;

            for (size_t k = 0; k < n; k++)
                seen = seen || strcmp(names[k], it->valuestring) == 0;
            if (!seen && n < HOSTTOOLS_MAX)
                names[n++] = it->valuestring;
        }
    }
    hosttools_probe(ht, names, n, NULL, cache_dir);
    note = hosttools_sentence(ht);
    own = note ? catalog_builtin_amended(note, NULL) : NULL;
    if (note)
        log_info("runboxd: %s", note);
    free(note);
    return own;
}

/* The services that hear of every run starting and ending, joined to the exec engine's
 * hooks: the sandboxes' network (egress, port forwards) and the resource watches (the process
 * list changed; the run may have made or removed files). */
struct netglue {
    struct egress *egress;
    struct portfwd *portfwd;
    struct events *events;
    struct watch *watch;
};

static void net_started(void *ctx, uint64_t run, int listen_fd, int agent_fd)
{
    struct netglue *g = ctx;

    if (listen_fd >= 0 && g->egress)
        (void)egress_attach(g->egress, run, listen_fd, NULL);
    else if (listen_fd >= 0)
        close(listen_fd);
    if (g->portfwd)
        portfwd_attach(g->portfwd, run, agent_fd);
    else if (agent_fd >= 0)
        close(agent_fd);
    events_publish_resource_updated(g->events, RESOURCES_URI_PROCESSES);
}

static void net_ended(void *ctx, uint64_t run)
{
    struct netglue *g = ctx;

    if (g->egress)
        egress_detach(g->egress, run);
    if (g->portfwd)
        portfwd_detach(g->portfwd, run);
    events_publish_resource_updated(g->events, RESOURCES_URI_PROCESSES);
    watch_resources_changed(g->watch);
}

static size_t net_env(void *ctx, struct exec_env *out, size_t max)
{
    struct netglue *g = ctx;

    return g->egress ? egress_sandbox_env(g->egress, out, max) : 0;
}

static cJSON *net_status(void *ctx)
{
    struct netglue *g = ctx;

    return g->egress ? egress_json(g->egress) : NULL;
}

/* --workspace-quota-mb, or the default for the kind of workspace. */
static uint64_t quota_mb(const struct config *cfg)
{
    if (cfg->workspace_quota_mb >= 0)
        return (uint64_t)cfg->workspace_quota_mb;
    return strcmp(cfg->workspace, VFS_MEMORY) == 0 ? QUOTA_DEFAULT_MEMORY_MB : QUOTA_DEFAULT_MB;
}

static struct proc *start_exec(const struct config *cfg, struct vfs *v, struct console *console,
                               struct cgroup *cg, const struct hosttools *ht, struct netglue *net,
                               const struct caches *caches, struct quota *quota,
                               struct errinfo *err)
{
    const char *npm = caches->npm, *pip = caches->pip;
    struct proc_options popt = {
        .ws_fd = vfs_root_fd(v),
        .allow_network = cfg->allow_network,
        .net = {.mode = (int)cfg->net.mode,
                .ctx = net,
                .started = net_started,
                .ended = net_ended,
                .env = net_env,
                .status = net_status},
        .npm_cache = npm,
        .pip_cache = pip,
        .limits = cfg->exec,
        .console = console,
        .cgroup = cg,
        .tools = ht,
        .quota = quota,
    };
    struct proc *p;

    p = proc_new(&popt, err);
    return p;
}

#define MCP_CONFIG_MAX (1u << 20)

/* How long the npm and pip registries' discovery waits for the external servers to start. */
#define DISCOVER_DEFER_MS 5000

static const char *env_lookup(const char *name)
{
    return getenv(name);
}

/* The text of an --mcp-config file (owned), or NULL with why (owned) saying what failed. */
static char *read_mcp_config(const char *path, char **why)
{
    FILE *f = fopen(path, "rb");
    char *buf = f ? malloc(MCP_CONFIG_MAX + 1) : NULL;
    size_t n = 0;

    *why = NULL;
    if (buf)
        n = fread(buf, 1, MCP_CONFIG_MAX + 1, f);
    if (!f || !buf || ferror(f) || n > MCP_CONFIG_MAX) {
        *why = strfmt_alloc("--mcp-config %s: %s; no server was read from it", path,
                            !f                   ? strerror(errno)
                            : n > MCP_CONFIG_MAX ? "larger than 1 MiB"
                                                 : "cannot read it");
        free(buf);
        buf = NULL;
    } else {
        buf[n] = '\0';
    }
    if (f)
        fclose(f);
    return buf;
}

/* The external MCP servers: the config file's, then each --mcp-config file's. A bad entry is
 * logged and listed as failed; the daemon starts with the rest. */
static int collect_specs(const struct config *cfg, struct registry_specs *specs,
                         struct errinfo *err)
{
    const cJSON *v;

    cJSON_ArrayForEach(v, cfg->mcp_servers)
    {
        if (registry_specs_add(specs, cfg->config_file ? cfg->config_file : "config", v->string, v,
                               env_lookup, err) < 0)
            return -1;
    }
    for (size_t i = 0; i < cfg->nmcp_configs; i++) {
        char *why, *text = read_mcp_config(cfg->mcp_configs[i], &why);
        int rc = 0;

        /* A file that cannot be read is listed like one that is not JSON (and logged). */
        if (text) {
            rc = registry_specs_add_text(specs, cfg->mcp_configs[i], text, env_lookup, err);
        } else if (why) {
            rc = registry_specs_add_unread(specs, cfg->mcp_configs[i], why, err);
        } else {
            errinfo_set(err, ERR_NOMEM, "out of memory reading %s", cfg->mcp_configs[i]);
            rc = -1;
        }
        free(text);
        free(why);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static struct registry *start_registry(const struct config *cfg, struct tools_ctx *tools,
                                       const struct catalog *cat, struct errinfo *err)
{
    struct registry_specs specs = {0};
    struct registry_options ro = {.specs = &specs,
                                  .builtin = cat ? cat : catalog_builtin(),
                                  .console = tools->console,
                                  .events = tools->events,
                                  .proc = tools->proc,
                                  .bwrap = proc_bwrap_path(tools->proc),
                                  .allow_network = cfg->allow_network,
                                  .parallel_starts = (unsigned)cfg->mcp_parallel_starts};
    struct registry *r = NULL;

    if (collect_specs(cfg, &specs, err) == 0)
        r = registry_new(&ro, err);
    registry_specs_cleanup(&specs);
    return r;
}

static void publish_console(void *arg, const struct console_entry_view *e)
{
    events_publish_console(arg, e);
}

/* Waits while the external servers start (at most DISCOVER_DEFER_MS). True when a stop signal
 * came meanwhile (*sig says which). */
static bool wait_servers_started(struct registry *r, const sigset_t *stop, int *sig)
{
    const struct timespec step = {.tv_sec = 0, .tv_nsec = 20 * 1000000L};

    for (int waited = 0; r && waited < DISCOVER_DEFER_MS && registry_connecting(r) > 0;
         waited += 20) {
        int s = sigtimedwait(stop, NULL, &step);

        if (s > 0) {
            *sig = s;
            return true;
        }
    }
    return false;
}

/* cat: the --tools view of the built-in catalog (NULL: all of it). The daemon serves the same
 * view of its own catalog, whose exec description names the installed programs. */
static int serve(const struct config *cfg, const struct catalog *cat, struct vfs *v,
                 struct console *console, struct cgroup *cg, const struct caches *caches,
                 struct quota *quota, const sigset_t *stop)
{
    /* Without a bridge (out of memory) the Studio tools say it is not running. */
    struct tools_ctx tools = {
        .vfs = v, .console = console, .bridge = bridge_new(NULL, NULL), .quota = quota};
    struct api_options opt = {
        .bind = cfg->bind,
        .port = cfg->port,
        .token = cfg->token,
        .workspace = strcmp(cfg->workspace, VFS_MEMORY) == 0 ? VFS_MEMORY : vfs_root_path(v),
        .fsync = cfg->fsync,
        .allow_network = cfg->allow_network,
        .tools = &tools,
        .threads = cfg->http_threads,
        .head_timeout_ms = cfg->http_head_timeout_ms,
        .body_timeout_ms = cfg->http_body_timeout_ms,
        .mcp_sessions = cfg->mcp_sessions,
        .mcp_session_idle_s = cfg->mcp_session_idle_s,
    };
    struct call_service_options copt = {.tools = &tools};
    struct errinfo err = {0};
    struct api *a = NULL;
    struct hosttools ht;
    struct catalog *own = probe_tools(&ht, caches->own), *view = NULL;
    struct egress_options eopt = {
        .policy = &cfg->net, .defaults = true, .console = console, .defer_ms = DISCOVER_DEFER_MS};
    struct netglue net = {0};
    int sig = 0;

    /* The same --tools view, of the catalog that names what is installed. */
    view = own ? catalog_select(own, cfg->tools, NULL) : NULL;
    opt.catalog = view ? view : cat;
    copt.cat = opt.catalog ? opt.catalog : catalog_builtin();
    /* Every open stream holds a worker: leave 64 for requests (24 long calls, 16 Studio polls,
     * the rest for quick requests and kept-alive connections), or half of a smaller pool. A
     * budget of 64 streams with fewer workers let streams take every worker, and then no
     * request was answered at all. */
    copt.max[CALL_BUDGET_STREAM] =
        cfg->http_threads > 128 ? cfg->http_threads - 64 : cfg->http_threads / 2;
    net.egress = cfg->net.mode == NETPOLICY_FULL ? NULL : egress_new(&eopt, &err);
    tools.egress = net.egress;
    net.portfwd = portfwd_new(&err);
    tools.portfwd = net.portfwd;
    if (caches->store_fd >= 0) {
        struct checkpoint_options kopt = {.ws_fd = vfs_root_fd(v),
                                          .store_fd = fcntl(caches->store_fd, F_DUPFD_CLOEXEC, 3),
                                          .keep = cfg->checkpoint_keep,
                                          .fsync = cfg->fsync};
        struct errinfo kerr = {0};

        tools.checkpoints = kopt.store_fd >= 0 ? checkpoint_new(&kopt, &kerr) : NULL;
        if (!tools.checkpoints)
            log_warn("runboxd: no checkpoints: %s", kerr.msg);
    }
    /* The event feed's dispatcher and the exec engine's supervisor start here, after root was
     * dropped. */
    tools.events = events_new(&err);
    if (tools.events)
        console_set_listener(console, publish_console, tools.events);
    tools.watch = tools.events ? watch_new(tools.events, v, &err) : NULL;
    net.events = tools.events;
    net.watch = tools.watch;
    tools.proc = tools.watch && (cfg->net.mode == NETPOLICY_FULL || net.egress) && net.portfwd
                     ? start_exec(cfg, v, console, cg, &ht, &net, caches, quota, &err)
                     : NULL;
    tools.registry = tools.proc ? start_registry(cfg, &tools, opt.catalog, &err) : NULL;
    opt.calls = tools.registry ? call_service_new(&copt, &err) : NULL;
    a = opt.calls ? api_start(&opt, &err) : NULL;
    if (!a) {
        call_service_free(opt.calls);
        registry_free(tools.registry);
        proc_free(tools.proc);
        checkpoint_free(tools.checkpoints);
        portfwd_free(net.portfwd);
        egress_free(net.egress);
        watch_free(tools.watch);
        console_set_listener(console, NULL, NULL);
        events_free(tools.events);
        bridge_free(tools.bridge);
        catalog_free(view);
        catalog_free(own);
        return fail(1, &err);
    }
    printf("runboxd: listening on http://%s%s%s:%d\n", strchr(cfg->bind, ':') ? "[" : "", cfg->bind,
           strchr(cfg->bind, ':') ? "]" : "", api_port(a));
    fflush(stdout);
    log_info("runboxd: workspace %s, fsync %s, network %s, token %s", opt.workspace,
             cfg->fsync ? "on" : "off", cfg->allow_network ? "allowed" : "off",
             cfg->token ? "required" : "none");
    console_appendf(console, CONSOLE_INFO, CONSOLE_SRC_DAEMON, 0,
                    "runboxd %s started: workspace %s, port %d", RUNBOX_VERSION, opt.workspace,
                    api_port(a));
    /* The sandbox check (10-20 ms, on its own thread) is what a first GET /health waits for;
     * ten Node servers starting beside it on two cores made it take ten times as long. The
     * servers start once it is done (or after a second, should it hang). */
    (void)proc_wait_checked(tools.proc, 1000);
    registry_start(tools.registry); /* in the background: nothing above waits for a server */
    /* Then the host's npm and pip registries are read (egress.h: a Node and a Python start),
     * once the external servers have started or DISCOVER_DEFER_MS passed: on two cores, reading
     * them beside ten Node servers made the last server ready ~0.3 s later. */
    if (!wait_servers_started(tools.registry, stop, &sig)) {
        egress_discover_now(net.egress);
        while (sigwait(stop, &sig) != 0)
            ;
    }
    log_info("runboxd: %s received, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    console_appendf(console, CONSOLE_INFO, CONSOLE_SRC_DAEMON, 0, "runboxd shutting down (%s)",
                    sig == SIGINT ? "SIGINT" : "SIGTERM");
    bridge_shutdown(tools.bridge);     /* parked polls and waiting calls end now, not in 15 s */
    proc_shutdown(tools.proc);         /* every sandbox is killed; running execs answer now */
    registry_shutdown(tools.registry); /* servers stop; calls waiting on them answer now */
    api_stop(a);
    call_service_free(opt.calls);
    registry_free(tools.registry);
    proc_free(tools.proc);
    checkpoint_free(tools.checkpoints);
    portfwd_free(net.portfwd);
    egress_free(net.egress);
    watch_free(tools.watch);
    console_set_listener(console, NULL, NULL);
    events_free(tools.events);
    bridge_free(tools.bridge);
    catalog_free(view);
    catalog_free(own);
    return 0;
}

int main(int argc, char *argv[])
{
    struct config cfg;
    struct vfs_options vopt = {0};
    struct errinfo err = {0};
    struct vfs *v = NULL;
    struct console *console = NULL;
    struct cgroup *cg = NULL;
    struct caches caches = {.store_fd = -1};
    struct catalog *cat = NULL;
    struct quota *quota = NULL;
    sigset_t stop;
    int status;

    log_init("runboxd");
    status = setup_config(&cfg, argc, argv);
    if (status < 0) {
        /* The tools served: a --tools profile of the built-in catalog. */
        cat = catalog_select(catalog_builtin(), cfg.tools, &err);
        if (!cat) {
            fprintf(stderr, "runboxd: --tools %s: %s\n", cfg.tools ? cfg.tools : "", err.msg);
            status = 2;
        }
    }
    if (status < 0)
        status = check_user(&cfg);
    if (status >= 0)
        goto out;
    /* Few arenas and a fixed mmap threshold keep the peak RSS low with 32 worker threads:
     * large bodies go to mmap and return to the system when freed. */
    mallopt(M_ARENA_MAX, 2);
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    vopt.fsync = cfg.fsync;
    v = vfs_open(cfg.workspace, &vopt, &err);
    if (!v) {
        status = fail(1, &err);
        goto out;
    }
    if (strcmp(cfg.workspace, VFS_MEMORY) != 0) {
        /* Writes killed with the daemon (kill -9) leave their temporary files behind. */
        size_t swept = vfs_sweep_temps(v, time(NULL) - VFS_TEMP_STALE_S);

        if (swept)
            log_info("vfs: removed %zu temporary file%s left by writes that never finished", swept,
                     swept == 1 ? "" : "s");
    }
    status = drop_root(&cfg, v, &cg, &caches);
    if (status >= 0)
        goto out;
    /* Now: one thread still, and the account the servers run as (groupwatch.h). */
    if (groupwatch_start(&err) < 0) {
        log_warn("runboxd: %s; a stdio server's children may outlive a runboxd killed with -9",
                 err.msg);
        err = (struct errinfo){0};
    }
    /* The workers inherit this mask, so only sigwait() below sees the stop signals. */
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Default bounds (CONSOLE_ENTRIES_DEFAULT entries, CONSOLE_BYTES_DEFAULT bytes). */
    console = console_new(0, 0, &err);
    if (!console) {
        status = fail(1, &err);
        goto out;
    }
    /* The workspace quota; its first walk runs on the exec watchdog's thread, not here. */
    quota = quota_new(vfs_root_fd(v), quota_mb(&cfg), &err);
    if (!quota) {
        status = fail(1, &err);
        goto out;
    }
    status = serve(&cfg, cat, v, console, cg, &caches, quota, &stop);
out:
    groupwatch_stop(); /* the servers are stopped: it ends now, not after runboxd */
    quota_free(quota);
    catalog_free(cat);
    free(caches.npm);
    free(caches.pip);
    free(caches.own);
    store_close(&caches);
    cgroup_free(cg);
    console_free(console);
    vfs_free(v);
    config_cleanup(&cfg);
    dynlib_cleanup(); /* libcurl, if an external server over HTTP loaded it */
    return status;
}
