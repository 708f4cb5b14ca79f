/* daemon/main.c - runboxd: settings, the workspace, dropping root, the HTTP server, and a clean
 * shutdown on SIGTERM/SIGINT.
 *
 * Startup order matters: the settings and the token are read while we may still be root (the
 * files may be root's), then the workspace is opened and handed to the target user, the
 * sandboxes' cgroups are made and delegated to it (this moves the daemon, so no thread may exist
 * yet), then root is dropped, and only then does any thread start or any socket accept. Exit
 * status: 0 after a signal, 1 when the port is taken or the workspace or server cannot start, 2 for
 * a bad setting. */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "bridge.h"
#include "call.h"
#include "catalog.h"
#include "cgroup.h"
#include "config.h"
#include "console.h"
#include "errinfo.h"
#include "events.h"
#include "log.h"
#include "privdrop.h"
#include "proc.h"
#include "tools.h"
#include "vfs.h"
#include "watch.h"

static int fail(int status, const struct errinfo *err)
{
    fprintf(stderr, "runboxd: %s\n", err->msg);
    return status;
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
static int drop_root(const struct config *cfg, struct vfs *v, struct cgroup **cg)
{
    struct privdrop_target t;
    struct errinfo err = {0};

    if (geteuid() != 0) {
        if (cfg->user)
            log_info("runboxd: not root, so --user %s is not needed and ignored", cfg->user);
        *cg = cgroup_setup(getuid(), getgid(), cfg->cgroup);
        return -1;
    }
    if (privdrop_resolve(cfg->user, getenv("SUDO_UID"), getenv("SUDO_GID"), &t, &err) < 0)
        return fail(2, &err);
    *cg = cgroup_setup(t.uid, t.gid, cfg->cgroup);
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

static struct proc *start_exec(const struct config *cfg, struct vfs *v, struct console *console,
                               struct cgroup *cg, struct errinfo *err)
{
    struct proc_options popt = {
        .ws_fd = vfs_root_fd(v),
        .allow_network = cfg->allow_network,
        .limits = cfg->exec,
        .console = console,
        .cgroup = cg,
    };

    return proc_new(&popt, err);
}

static void publish_console(void *arg, const struct console_entry_view *e)
{
    events_publish_console(arg, e);
}

static int serve(const struct config *cfg, const struct catalog *cat, struct vfs *v,
                 struct console *console, struct cgroup *cg, const sigset_t *stop)
{
    /* Without a bridge (out of memory) the Studio tools say it is not running. */
    struct tools_ctx tools = {.vfs = v, .console = console, .bridge = bridge_new(NULL, NULL)};
    struct api_options opt = {
        .bind = cfg->bind,
        .port = cfg->port,
        .token = cfg->token,
        .workspace = strcmp(cfg->workspace, VFS_MEMORY) == 0 ? VFS_MEMORY : vfs_root_path(v),
        .fsync = cfg->fsync,
        .allow_network = cfg->allow_network,
        .tools = &tools,
        .threads = cfg->http_threads,
        .mcp_sessions = cfg->mcp_sessions,
        .mcp_session_idle_s = cfg->mcp_session_idle_s,
        .catalog = cat,
    };
    struct call_service_options copt = {.cat = cat ? cat : catalog_builtin(), .tools = &tools};

    /* Every open stream holds a worker: leave 64 for requests (24 long calls, 16 Studio polls,
     * the rest for quick requests and kept-alive connections), or half of a smaller pool. A
     * budget of 64 streams with fewer workers let streams take every worker, and then no
     * request was answered at all. */
    copt.max[CALL_BUDGET_STREAM] =
        cfg->http_threads > 128 ? cfg->http_threads - 64 : cfg->http_threads / 2;
    struct errinfo err = {0};
    struct api *a = NULL;
    int sig = 0;

    /* The event feed's dispatcher and the exec engine's supervisor start here, after root was
     * dropped. */
    tools.events = events_new(&err);
    if (tools.events)
        console_set_listener(console, publish_console, tools.events);
    tools.watch = tools.events ? watch_new(tools.events, v, &err) : NULL;
    tools.proc = tools.watch ? start_exec(cfg, v, console, cg, &err) : NULL;
    opt.calls = tools.proc ? call_service_new(&copt, &err) : NULL;
    a = opt.calls ? api_start(&opt, &err) : NULL;
    if (!a) {
        call_service_free(opt.calls);
        proc_free(tools.proc);
        bridge_free(tools.bridge);
        watch_free(tools.watch);
        console_set_listener(console, NULL, NULL);
        events_free(tools.events);
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
    while (sigwait(stop, &sig) != 0)
        ;
    log_info("runboxd: %s received, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    console_appendf(console, CONSOLE_INFO, CONSOLE_SRC_DAEMON, 0, "runboxd shutting down (%s)",
                    sig == SIGINT ? "SIGINT" : "SIGTERM");
    bridge_shutdown(tools.bridge); /* parked polls and waiting calls end now, not in 15 s */
    proc_shutdown(tools.proc);     /* every sandbox is killed; running execs answer now */
    api_stop(a);
    call_service_free(opt.calls);
    proc_free(tools.proc);
    bridge_free(tools.bridge);
    watch_free(tools.watch);
    console_set_listener(console, NULL, NULL);
    events_free(tools.events);
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
    struct catalog *cat = NULL;
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
    status = drop_root(&cfg, v, &cg);
    if (status >= 0)
        goto out;
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
    status = serve(&cfg, cat, v, console, cg, &stop);
out:
    catalog_free(cat);
    cgroup_free(cg);
    console_free(console);
    vfs_free(v);
    config_cleanup(&cfg);
    return status;
}
