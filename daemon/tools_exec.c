/* daemon/tools_exec.c - the exec tools: exec, process_list, kill, as common/tools/exec.json
 * describes them, over the exec engine (proc.h). This file turns arguments into a proc_request
 * (checking what the schema cannot: the cwd, the env names, the timeout cap) and outcomes into
 * the result text plus the same facts as structured JSON. */
#include "tools.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "egress.h"
#include "events.h"
#include "exec.h"
#include "proc.h"
#include "vfs.h"

const char *tools_workspace_alias(const char *path)
{
    size_t n = strlen(EXEC_WORKSPACE);

    if (strncmp(path, EXEC_WORKSPACE, n) != 0)
        return path;
    if (path[n] == '\0')
        return "/";
    return path[n] == '/' ? path + n : path;
}

static int need_proc(const struct tools_ctx *ctx, struct errinfo *err)
{
    if (ctx->proc)
        return 0;
    errinfo_set(err, ERR_UNAVAILABLE, "exec is not available in this daemon");
    return -1;
}

/* The working directory: a workspace path that must be an existing directory. */
static int check_cwd(const struct tools_ctx *ctx, const char *cwd, char *norm, size_t normsz,
                     struct errinfo *err)
{
    struct vfs_stat st;
    struct errinfo serr = {0};

    if (vfs_normalize(tools_workspace_alias(cwd), norm, normsz, err) < 0)
        return -1;
    if (strcmp(norm, "/") == 0)
        return 0;
    if (vfs_stat(ctx->vfs, norm, &st, &serr) < 0) {
        errinfo_set(err, serr.kind == ERR_NOT_FOUND ? ERR_NOT_FOUND : serr.kind, "cwd %s: %s", norm,
                    serr.kind == ERR_NOT_FOUND ? "no such directory in the workspace" : serr.msg);
        return -1;
    }
    if (st.type != VFS_DIR) {
        errinfo_set(err, ERR_INVALID, "cwd %s is not a directory", norm);
        return -1;
    }
    return 0;
}

static int parse_env(const cJSON *env, struct exec_env *out, size_t *n, struct errinfo *err)
{
    *n = 0;
    for (const cJSON *v = env ? env->child : NULL; v; v = v->next) {
        if (*n == EXEC_ENV_MAX) {
            errinfo_set(err, ERR_INVALID, "arguments.env: at most %d variables", EXEC_ENV_MAX);
            return -1;
        }
        if (!exec_env_name_ok(v->string)) {
            errinfo_set(err, ERR_INVALID,
                        "arguments.env: \"%.60s\" is not a variable name (letters, digits and _, "
                        "not starting with a digit, at most %d bytes)",
                        v->string, EXEC_ENV_NAME_MAX);
            return -1;
        }
        if (!cJSON_IsString(v)) {
            errinfo_set(err, ERR_INVALID, "arguments.env.%.60s: expected a string", v->string);
            return -1;
        }
        out[*n].name = v->string;
        out[(*n)++].value = v->valuestring;
    }
    return 0;
}

static int set_result(struct tools_result *out, char *text, size_t len, cJSON *structured,
                      struct errinfo *err)
{
    char *js = structured ? cJSON_PrintUnformatted(structured) : NULL;

    cJSON_Delete(structured);
    if (!text || !js) {
        free(text);
        free(js);
        errinfo_set(err, ERR_NOMEM, "out of memory building the result");
        return -1;
    }
    out->data = text;
    out->len = len;
    out->is_json = false;
    out->structured = js;
    return 0;
}

static int run_background(const struct tools_ctx *ctx, const struct proc_request *r,
                          const cJSON *ports, struct tools_result *out, struct errinfo *err)
{
    uint64_t pid = 0;
    char *text = malloc(2048), notes[1400] = "";
    cJSON *j, *urls = NULL;

    if (!text || proc_start(ctx->proc, r, &pid, err) < 0) {
        if (!text)
            errinfo_set(err, ERR_NOMEM, "out of memory");
        free(text);
        return -1;
    }
    if (ports && cJSON_GetArraySize(ports) > 0)
        urls = tools_ports_expose_all(ctx, pid, ports, notes, sizeof(notes));
    snprintf(text, 2048,
             "[started in the background as process %" PRIu64 "]\n%s"
             "Its output goes to the console (console_logs with source \"exec\"); process_list "
             "shows its state; stop it with kill {\"pid\": %" PRIu64 "}.\n",
             pid, notes, pid);
    j = cJSON_CreateObject();
    if (j && (!cJSON_AddNumberToObject(j, "pid", (double)pid) ||
              !cJSON_AddBoolToObject(j, "background", true) ||
              !cJSON_AddStringToObject(j, "state", "running") ||
              (urls && !cJSON_AddItemToObject(j, "urls", urls)))) {
        cJSON_Delete(j);
        j = NULL;
    } else {
        urls = NULL;
    }
    cJSON_Delete(urls);
    return set_result(out, text, strlen(text), j, err);
}

/* What a foreground run needs to be cancelled and to report progress while it goes on. */
struct exec_watch {
    struct proc *proc;
    struct proc_ticket ticket;
    struct call *call;
};

static void exec_cancel_hook(void *arg)
{
    struct exec_watch *w = arg;

    proc_cancel(w->proc, &w->ticket);
}

/* About once a second: "running for N s" and the latest output lines. */
static void exec_progress(void *ctx, int64_t elapsed_ms, const char *recent)
{
    struct exec_watch *w = ctx;
    char msg[PROC_RECENT_MAX + 64];

    snprintf(msg, sizeof(msg), "running for %" PRId64 " s%s%s", elapsed_ms / 1000,
             recent[0] ? "; latest output:\n" : "", recent);
    call_progress(w->call, (double)elapsed_ms / 1000.0, 0, msg);
}

/* A foreground run that the call's cancellation kills and whose progress the call reports. */
static int run_foreground(const struct tools_ctx *ctx, struct call *call, struct proc_request *r,
                          struct proc_result *res, struct errinfo *err)
{
    struct exec_watch w = {.proc = ctx->proc, .call = call};
    int rc;

    r->ticket = &w.ticket;
    if (call_wants_progress(call)) {
        r->progress = exec_progress;
        r->progress_ctx = &w;
        call_reports_progress(call);
    }
    call_on_cancel(call, exec_cancel_hook, &w);
    call_follow_run(call, &w.ticket.id);
    rc = proc_run(ctx->proc, r, res, err);
    if (call_wants_log(call))
        events_flush(ctx->events); /* the run's last lines reach the log before the answer */
    call_unfollow_run(call);
    call_off_cancel(call);
    if (rc == 0 && res->o.cancelled) {
        errinfo_set(err, ERR_CANCELLED, "exec was cancelled; process %" PRIu64 " was killed",
                    res->o.pid);
        proc_result_cleanup(res);
        return -1;
    }
    return rc;
}

int tools_exec(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
               struct tools_result *out, struct errinfo *err)
{
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(args, "command");
    const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(args, "cwd");
    const cJSON *tmo = cJSON_GetObjectItemCaseSensitive(args, "timeout_ms");
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(args, "stdin");
    const cJSON *ports = cJSON_GetObjectItemCaseSensitive(args, "ports");
    struct exec_env env[EXEC_ENV_MAX];
    struct proc_request r = {0};
    struct proc_result res = {0};
    char norm[VFS_PATH_MAX + 1], raw_cwd[VFS_PATH_MAX + 1];
    const struct exec_limits *lim;
    size_t len = 0;
    char *text, *notes;
    cJSON *structured;

    if (need_proc(ctx, err) < 0 || !proc_sandbox_ok(ctx->proc, err))
        return -1;
    lim = proc_limits(ctx->proc);
    if (!cJSON_IsString(cmd) || !cmd->valuestring[0]) {
        errinfo_set(err, ERR_INVALID, "arguments.command: expected a non-empty string");
        return -1;
    }
    if (check_cwd(ctx, cJSON_IsString(cwd) ? cwd->valuestring : "/", norm, sizeof(norm), err) < 0)
        return -1;
    if (cJSON_IsNumber(tmo) && tmo->valuedouble > lim->timeout_max_ms) {
        errinfo_set(err, ERR_INVALID,
                    "arguments.timeout_ms: %.0f is over this daemon's maximum of %" PRIu32
                    " ms (--exec-timeout-max-ms)",
                    tmo->valuedouble, lim->timeout_max_ms);
        return -1;
    }
    if (parse_env(cJSON_GetObjectItemCaseSensitive(args, "env"), env, &r.nenv, err) < 0)
        return -1;
    if (tools_ports_check(ports, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "background")),
                          err) < 0)
        return -1;
    r.command = cmd->valuestring;
    /* bwrap changes into the bytes the escapes stand for (vfs.h, Names). */
    if (vfs_unescape(norm, strlen(norm), raw_cwd, sizeof(raw_cwd), NULL) == VFS_ESCAPE_NOROOM) {
        errinfo_set(err, ERR_INVALID, "cwd %.200s is not a normalized workspace path", norm);
        return -1;
    }
    r.cwd = raw_cwd;
    r.timeout_ms = cJSON_IsNumber(tmo) ? (uint32_t)tmo->valuedouble : 0;
    r.env = env;
    if (cJSON_IsString(in)) {
        r.stdin_data = in->valuestring;
        r.stdin_len = strlen(in->valuestring);
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "background")))
        return run_background(ctx, &r, ports, out, err);
    if (run_foreground(ctx, call, &r, &res, err) < 0)
        return -1;
    if (proc_result_as_text(&res) < 0) {
        proc_result_cleanup(&res);
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return -1;
    }
    text = exec_format_text(&res.o, &len);
    structured = exec_outcome_json(&res.o);
    notes = ctx->egress ? egress_take_notes(ctx->egress, res.o.pid) : NULL;
    if (notes && text) {
        /* What the network policy refused, after the command's own notes: the host, the rule
         * and the flag that would allow it. */
        size_t nl = strlen(notes);
        bool sep = len && text[len - 1] != '\n';
        char *t = realloc(text, len + sep + nl + 1);
        if (t) {
            if (sep)
                t[len++] = '\n';
            memcpy(t + len, notes, nl + 1);
            text = t;
            len += nl;
        }
        if (structured)
            cJSON_AddStringToObject(structured, "network", notes);
    }
    free(notes);
    if (set_result(out, text, len, structured, err) < 0) {
        proc_result_cleanup(&res);
        return -1;
    }
    proc_result_cleanup(&res);
    return 0;
}

int tools_process_list(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                       struct tools_result *out, struct errinfo *err)
{
    cJSON *list;
    char *js;

    (void)call;
    (void)args;
    if (need_proc(ctx, err) < 0)
        return -1;
    list = proc_list_json(ctx->proc);
    js = list && tools_ports_add_urls(ctx, list) == 0 ? cJSON_PrintUnformatted(list) : NULL;
    cJSON_Delete(list);
    if (!js) {
        errinfo_set(err, ERR_NOMEM, "out of memory building the process list");
        return -1;
    }
    out->data = js;
    out->len = strlen(js);
    out->is_json = true;
    return 0;
}

int tools_kill(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
               struct tools_result *out, struct errinfo *err)
{
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(args, "pid");
    const cJSON *sig = cJSON_GetObjectItemCaseSensitive(args, "signal");
    const char *signame = cJSON_IsString(sig) ? sig->valuestring : "TERM";
    const char *state = NULL;
    int signo = exec_parse_signal(signame);
    cJSON *j;
    char *js;

    (void)call;
    if (need_proc(ctx, err) < 0)
        return -1;
    if (!cJSON_IsNumber(pid) || pid->valuedouble < 1 || signo < 0) {
        errinfo_set(err, ERR_INVALID,
                    "arguments: pid must be a process id and signal one of "
                    "TERM, KILL, INT, HUP");
        return -1;
    }
    if (proc_kill(ctx->proc, (uint64_t)pid->valuedouble, signo, &state, err) < 0)
        return -1;
    j = cJSON_CreateObject();
    if (j && cJSON_AddNumberToObject(j, "pid", pid->valuedouble) &&
        cJSON_AddStringToObject(j, "signal",
                                signo == SIGKILL  ? "KILL"
                                : signo == SIGINT ? "INT"
                                : signo == SIGHUP ? "HUP"
                                                  : "TERM") &&
        cJSON_AddStringToObject(j, "state", state ? state : "running"))
        js = cJSON_PrintUnformatted(j);
    else
        js = NULL;
    cJSON_Delete(j);
    if (!js) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return -1;
    }
    out->data = js;
    out->len = strlen(js);
    out->is_json = true;
    return 0;
}
