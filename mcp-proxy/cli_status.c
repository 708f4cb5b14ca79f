/* mcp-proxy/cli_status.c - `runbox status`, `ps`, `kill` and `logs`: what the daemon is doing,
 * read from GET /health, the process_list and console_logs tools, and GET /events. */
#include "cli_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonbuf.h"
#include "strfmt.h"
#include "upstream.h"

static const char status_help[] =
    "usage: runbox status [--json]\n"
    "\n"
    "Shows whether runboxd answers at DAEMON_URL (default " CLI_DEFAULT_URL "): its version,\n"
    "pid and uptime, the workspace, the sandbox and network policy, the processes, the Studio\n"
    "instances and their queue, the MCP sessions and the external servers.\n"
    "\n"
    "exit: 0 healthy, 1 not running, 2 unhealthy (it answers, but exec cannot run, it wants\n"
    "      a token, or the program there is not runboxd)\n";

static const char ps_help[] = "usage: runbox ps [--json]\n"
                              "\n"
                              "Lists the commands exec ran, running ones first (process_list).\n";

static const char kill_help[] =
    "usage: runbox kill [--signal TERM|KILL|INT|HUP] PID\n"
    "\n"
    "Stops a process that exec started (the PID that `runbox ps` shows).\n"
    "exit: 0 signalled, 1 no such process, 2 bad usage, 3 runboxd is not reachable\n";

static const char logs_help[] =
    "usage: runbox logs [-f] [--level L] [--source S] [--since ID] [-n N] [--json]\n"
    "\n"
    "Prints the console: exec output, Studio output, the daemon's own events.\n"
    "  -f, --follow   keep printing new entries as they happen (GET /events)\n"
    "  --level L      at least this level: debug, log, info, warn, error\n"
    "  --source S     only exec, studio or daemon\n"
    "  --since ID     only entries after this id\n"
    "  -n N           the last N entries (default 20; with --since: the first N)\n"
    "  --json         one JSON entry per line\n";

/* ---- reading JSON ---- */

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_of(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static bool is_true(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static void print_json(const cJSON *doc)
{
    cli_print_json(doc);
}

/* ---- runbox status ---- */

static void print_sandbox(const cJSON *sb)
{
    const cJSON *cg = cJSON_GetObjectItemCaseSensitive(sb, "cgroup");

    if (!is_true(sb, "available")) {
        printf("sandbox     NOT AVAILABLE: %s\n",
               str_of(sb, "reason") ? str_of(sb, "reason") : "(no reason given)");
        return;
    }
    printf("sandbox     ready: bubblewrap %s (%s); memory and process limits by %s\n",
           str_of(sb, "version") ? str_of(sb, "version") : "?",
           str_of(sb, "bwrap") ? str_of(sb, "bwrap") : "?",
           str_of(sb, "memory") ? str_of(sb, "memory") : "?");
    if (str_of(cg, "reason") &&
        strcmp(str_of(sb, "memory") ? str_of(sb, "memory") : "", "cgroup") != 0)
        printf("            (no cgroup: %.160s%s)\n", str_of(cg, "reason"),
               strlen(str_of(cg, "reason")) > 160 ? "..." : "");
}

static void print_network(const cJSON *h)
{
    const cJSON *sb = cJSON_GetObjectItemCaseSensitive(h, "sandbox");
    const cJSON *eg = cJSON_GetObjectItemCaseSensitive(sb, "egress");
    const cJSON *allow = cJSON_GetObjectItemCaseSensitive(eg, "allow"), *r;
    const char *mode = str_of(eg, "mode"), *state;
    int n = 0;

    if (!mode)
        mode = is_true(h, "allow_network") ? "full" : "none";
    if (strcmp(mode, "none") == 0) {
        printf("network     none for commands\n");
        return;
    }
    if (strcmp(mode, "proxy") != 0) {
        printf("network     %s: commands may use the network\n", mode);
        return;
    }
    printf("network     only through runboxd's egress proxy, to");
    cJSON_ArrayForEach(r, allow)
    {
        const char *rule = cJSON_IsString(r) ? r->valuestring : str_of(r, "rule");

        if (rule)
            printf("%s%s", n++ ? ", " : " ", rule);
        if (n >= 12) {
            printf(", ...");
            break;
        }
    }
    /* Right after start the defaults (the registries npm and pip use) may still be being read. */
    state = str_of(cJSON_GetObjectItemCaseSensitive(eg, "defaults"), "state");
    if (state && (strcmp(state, "resolving") == 0 || strcmp(state, "waiting") == 0))
        printf("%s\n", n ? ", and the registries npm and pip use (being read)"
                         : " the registries npm and pip use (being read)");
    else
        printf("%s\n", n ? "" : " no host (the allow list is empty)");
}

static void print_processes(const cJSON *procs)
{
    const cJSON *p;
    int running = 0, total = 0;

    cJSON_ArrayForEach(p, procs)
    {
        total++;
        running += str_of(p, "state") && strcmp(str_of(p, "state"), "running") == 0;
    }
    printf("processes   %d running, %d in all\n", running, total);
    cJSON_ArrayForEach(p, procs)
    {
        char d[32];

        if (!str_of(p, "state") || strcmp(str_of(p, "state"), "running") != 0)
            continue;
        cli_format_duration((long long)num_of(p, "duration_ms", -1), d, sizeof(d));
        printf("            %-5.0f %-8s %s%s  %.80s\n", num_of(p, "pid", 0), d,
               is_true(p, "background") ? "bg " : "", "", str_of(p, "command"));
    }
}

static void print_recent(const cJSON *st)
{
    const cJSON *recent = cJSON_GetObjectItemCaseSensitive(st, "recent"), *r;
    int n = 0;

    cJSON_ArrayForEach(r, recent)
    {
        char d[32], ago[32];

        if (n++ == 5)
            break;
        cli_format_duration((long long)num_of(r, "duration_ms", -1), d, sizeof(d));
        cli_format_duration((long long)num_of(r, "ms_ago", -1), ago, sizeof(ago));
        printf("            %s %-28s %s in %s, %s ago\n", n == 1 ? "last:" : "     ",
               str_of(r, "tool") ? str_of(r, "tool") : "?",
               str_of(r, "state") ? str_of(r, "state") : "?", d, ago);
    }
}

static void print_studio(const cJSON *st)
{
    const cJSON *insts = cJSON_GetObjectItemCaseSensitive(st, "instances"), *i;

    if (!is_true(st, "connected")) {
        printf("studio      not connected (install the Runbox plugin and press Connect; "
               "docs/plugin.md)\n");
        return;
    }
    printf("studio      %d instance(s), %.0f command(s) queued\n", cJSON_GetArraySize(insts),
           num_of(st, "queue_depth", 0));
    cJSON_ArrayForEach(i, insts)
    {
        printf("            %s %-6s %s (place %s)\n", is_true(i, "active") ? "*" : " ",
               str_of(i, "role") ? str_of(i, "role") : "?",
               str_of(i, "name") ? str_of(i, "name") : "",
               str_of(i, "place") ? str_of(i, "place") : "?");
    }
    print_recent(st);
}

/* The external MCP servers as a list of {"name","state",...}: GET /mcp-servers's detail when
 * there is one, else /health's summary, whose "servers" maps each name to its state. Owned. */
static cJSON *external_list(const cJSON *h, const cJSON *detail)
{
    const cJSON *ext = cJSON_GetObjectItemCaseSensitive(h, "mcp_servers");
    const cJSON *servers = cJSON_GetObjectItemCaseSensitive(ext, "servers");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(detail, "servers"), *s;
    cJSON *list;

    if (cJSON_IsArray(d))
        return cJSON_Duplicate(d, 1);
    if (cJSON_IsArray(servers))
        return cJSON_Duplicate(servers, 1);
    list = cJSON_CreateArray();
    if (!cJSON_IsObject(servers))
        return list;
    cJSON_ArrayForEach(s, servers)
    {
        cJSON *o = cJSON_CreateObject();

        cJSON_AddStringToObject(o, "name", s->string ? s->string : "?");
        cJSON_AddStringToObject(o, "state", cJSON_IsString(s) ? s->valuestring : "?");
        cJSON_AddItemToArray(list, o);
    }
    return list;
}

static bool has_external(const cJSON *h)
{
    const cJSON *ext = cJSON_GetObjectItemCaseSensitive(h, "mcp_servers");
    const cJSON *servers = cJSON_GetObjectItemCaseSensitive(ext, "servers");

    return num_of(ext, "configured", 0) > 0 || cJSON_GetArraySize(servers) > 0;
}

static void print_external(const cJSON *h, const cJSON *detail)
{
    cJSON *list = external_list(h, detail);
    const cJSON *s;
    int ready = 0;

    if (cJSON_GetArraySize(list) > 0) {
        cJSON_ArrayForEach(s, list) ready +=
            str_of(s, "state") && strcmp(str_of(s, "state"), "ready") == 0;
        printf("external    %d MCP server(s), %d ready\n", cJSON_GetArraySize(list), ready);
    }
    cJSON_ArrayForEach(s, list)
    {
        const char *err = str_of(s, "last_error");

        printf("            %-16s %-10s", str_of(s, "name") ? str_of(s, "name") : "?",
               str_of(s, "state") ? str_of(s, "state") : "");
        if (str_of(s, "transport"))
            printf(" %-6s", str_of(s, "transport"));
        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(s, "tools")))
            printf(" %.0f tool(s)", num_of(s, "tools", 0));
        printf("\n");
        /* Why it is not ready: a config error (it never runs) or its last error; and what
         * runs but was ignored or is missing (config_warning, warning). */
        if (str_of(s, "config_error"))
            printf("            %-16s config error: %.300s\n", "", str_of(s, "config_error"));
        else if (err && strcmp(str_of(s, "state") ? str_of(s, "state") : "", "ready") != 0)
            printf("            %-16s last error: %.300s\n", "", err);
        if (str_of(s, "config_warning"))
            printf("            %-16s warning: %.300s\n", "", str_of(s, "config_warning"));
        if (str_of(s, "warning"))
            printf("            %-16s warning: %.300s\n", "", str_of(s, "warning"));
    }
    cJSON_Delete(list);
}

/* A daemon from another install than this runbox's says so first. */
static void print_wire(const struct cli *c, const cJSON *h)
{
    char *mismatch =
        upstream_wire_mismatch(c->target.base_url, str_of(h, "version"), (int)num_of(h, "wire", 1));

    if (mismatch)
        printf("warning     %s\n", mismatch);
    free(mismatch);
}

static void print_status(const struct cli *c, const cJSON *h, const cJSON *procs,
                         const cJSON *external)
{
    const cJSON *mcp = cJSON_GetObjectItemCaseSensitive(h, "mcp");
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(h, "calls"), *b;
    char up[32];
    int n = 0;

    cli_format_duration((long long)num_of(h, "uptime_ms", -1), up, sizeof(up));
    printf("runboxd %s at %s: pid %.0f, up %s\n", str_of(h, "version") ? str_of(h, "version") : "?",
           c->target.base_url, num_of(h, "pid", 0), up);
    print_wire(c, h);
    printf("workspace   %s\n", str_of(h, "workspace") ? str_of(h, "workspace") : "?");
    print_sandbox(cJSON_GetObjectItemCaseSensitive(h, "sandbox"));
    print_network(h);
    if (procs)
        print_processes(procs);
    print_studio(cJSON_GetObjectItemCaseSensitive(h, "studio"));
    if (cJSON_IsObject(mcp))
        printf("mcp         %.0f session(s), %.0f stream(s), %.0f websocket(s)\n",
               num_of(mcp, "sessions", 0), num_of(mcp, "streams", 0), num_of(mcp, "websockets", 0));
    print_external(h, external);
    if (cJSON_IsObject(calls)) {
        printf("calls      ");
        cJSON_ArrayForEach(b, calls) printf("%s %s %.0f/%.0f", n++ ? "," : "", b->string,
                                            num_of(b, "in_use", 0), num_of(b, "max", 0));
        printf("  (in use / most at once)\n");
    }
}

int cli_status(struct cli *c, int argc, char **argv)
{
    bool json = false;
    cJSON *h = NULL, *out = NULL, *ext = NULL;
    struct upstream_answer pa = {0};
    struct cli_http_reply rep;
    struct cli_http_req q = {.method = "GET", .path = "/health", .timeout_ms = CLI_QUICK_MS};
    char *problem = NULL;
    int rc;

    for (int i = 0; i < argc; i++) {
        if (cli_help(argv[i], status_help))
            return 0;
        if (strcmp(argv[i], "--json") != 0) {
            cli_err(c, "unexpected '%s'\n\n%s", argv[i], status_help);
            return CLI_EXIT_USAGE;
        }
        json = true;
    }
    if (cli_need_target(c))
        return CLI_EXIT_USAGE;
    cli_http_do(&c->target, &q, &rep);
    if (rep.r.outcome == UPSTREAM_REFUSED) {
        rc = 1;
        if (json) {
            out = cJSON_CreateObject();
            cJSON_AddBoolToObject(out, "running", false);
            cJSON_AddStringToObject(out, "url", c->target.base_url);
            print_json(out);
        } else
            printf("runboxd is not running at %s; start it with `runbox start`\n",
                   c->target.base_url);
        goto out;
    }
    problem = cli_reply_problem(c, &rep);
    if (!problem && rep.r.status == 401)
        problem = strdup("runboxd wants a token: set RUNBOX_TOKEN to the daemon's token");
    h = problem ? NULL : cJSON_ParseWithLength(rep.r.body, rep.r.body_len);
    if (!problem && (rep.r.status != 200 || !is_true(h, "ok")))
        problem = strfmt_alloc("runboxd answered GET /health with HTTP %ld", rep.r.status);
    if (problem) {
        rc = 2;
        if (json) {
            out = cJSON_CreateObject();
            cJSON_AddBoolToObject(out, "running", true);
            cJSON_AddBoolToObject(out, "healthy", false);
            cJSON_AddStringToObject(out, "url", c->target.base_url);
            cJSON_AddStringToObject(out, "problem", problem);
            print_json(out);
        }
        cli_err(c, "%s", problem);
        goto out;
    }
    if (cli_tool(c, "process_list", "{}", &pa) != 0)
        memset(&pa, 0, sizeof(pa));
    if (has_external(h))
        ext = cli_get_json_quiet(c, "/mcp-servers");
    rc = is_true(cJSON_GetObjectItemCaseSensitive(h, "sandbox"), "available") ? 0 : 2;
    if (json) {
        out = cJSON_CreateObject();
        cJSON_AddBoolToObject(out, "running", true);
        cJSON_AddBoolToObject(out, "healthy", rc == 0);
        cJSON_AddStringToObject(out, "url", c->target.base_url);
        cJSON_AddItemToObject(out, "health", cJSON_Duplicate(h, 1));
        cJSON_AddItemToObject(
            out, "processes",
            pa.ok ? cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(pa.result, "processes"), 1)
                  : cJSON_CreateNull());
        cJSON_AddItemToObject(out, "mcp_servers",
                              has_external(h) ? external_list(h, ext) : cJSON_CreateArray());
        print_json(out);
    } else {
        print_status(c, h, pa.ok ? cJSON_GetObjectItemCaseSensitive(pa.result, "processes") : NULL,
                     ext);
        if (rc == 2)
            printf("\nunhealthy: exec cannot run commands (see sandbox above)\n");
    }
out:
    free(problem);
    cJSON_Delete(h);
    cJSON_Delete(out);
    cJSON_Delete(ext);
    upstream_answer_cleanup(&pa);
    cli_http_reply_cleanup(&rep);
    return rc;
}

/* ---- runbox ps, runbox kill ---- */

int cli_ps(struct cli *c, int argc, char **argv)
{
    bool json = false;
    struct upstream_answer a;
    const cJSON *procs, *p;
    int rc;

    for (int i = 0; i < argc; i++) {
        if (cli_help(argv[i], ps_help))
            return 0;
        if (strcmp(argv[i], "--json") != 0) {
            cli_err(c, "unexpected '%s'\n\n%s", argv[i], ps_help);
            return CLI_EXIT_USAGE;
        }
        json = true;
    }
    rc = cli_need_target(c);
    if (rc == 0)
        rc = cli_tool(c, "process_list", "{}", &a);
    if (rc)
        return rc;
    if (!a.ok) {
        cli_err(c, "%s", a.error);
        upstream_answer_cleanup(&a);
        return CLI_EXIT_FAILED;
    }
    procs = cJSON_GetObjectItemCaseSensitive(a.result, "processes");
    if (json) {
        print_json(procs);
    } else if (cJSON_GetArraySize(procs) == 0) {
        printf("no processes (exec has run nothing yet)\n");
    } else {
        printf("%-6s %-8s %-5s %-8s %s\n", "PID", "STATE", "EXIT", "TIME", "COMMAND");
        cJSON_ArrayForEach(p, procs)
        {
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(p, "exit_code");
            char d[32], ex[16];

            cli_format_duration((long long)num_of(p, "duration_ms", -1), d, sizeof(d));
            snprintf(ex, sizeof(ex), "%s", "-");
            if (cJSON_IsNumber(code))
                snprintf(ex, sizeof(ex), "%d", code->valueint);
            printf("%-6.0f %-8s %-5s %-8s %s%.200s\n", num_of(p, "pid", 0),
                   str_of(p, "state") ? str_of(p, "state") : "?", ex, d,
                   is_true(p, "background") ? "[bg] " : "",
                   str_of(p, "command") ? str_of(p, "command") : "");
        }
    }
    upstream_answer_cleanup(&a);
    return CLI_EXIT_OK;
}

int cli_kill(struct cli *c, int argc, char **argv)
{
    const char *sig = NULL, *pid = NULL;
    struct upstream_answer a;
    char body[96], *end = NULL;
    long n;
    int rc;

    for (int i = 0; i < argc; i++) {
        if (cli_help(argv[i], kill_help))
            return 0;
        if ((strcmp(argv[i], "--signal") == 0 || strcmp(argv[i], "-s") == 0) && i + 1 < argc) {
            sig = argv[++i];
        } else if (argv[i][0] != '-' && !pid) {
            pid = argv[i];
        } else {
            cli_err(c, "unexpected '%s'\n\n%s", argv[i], kill_help);
            return CLI_EXIT_USAGE;
        }
    }
    errno = 0;
    n = pid ? strtol(pid, &end, 10) : 0;
    if (!pid || errno || *end || n < 1 || n > 1000000000) {
        cli_err(c, "%s\n\n%s", pid ? "PID must be a process id from `runbox ps`" : "which PID?",
                kill_help);
        return CLI_EXIT_USAGE;
    }
    if (sig && strspn(sig, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(sig)) {
        cli_err(c, "--signal takes TERM, KILL, INT or HUP; got '%.20s'", sig);
        return CLI_EXIT_USAGE;
    }
    snprintf(body, sizeof(body), "{\"pid\":%ld%s%.8s%s}", n, sig ? ",\"signal\":\"" : "",
             sig ? sig : "", sig ? "\"" : "");
    rc = cli_need_target(c);
    if (rc == 0)
        rc = cli_tool(c, "kill", body, &a);
    if (rc)
        return rc;
    if (!a.ok) {
        cli_err(c, "%s", a.error);
        rc = CLI_EXIT_FAILED;
    } else if (cJSON_IsString(a.result)) {
        fputs(a.result->valuestring, stdout);
        if (!*a.result->valuestring ||
            a.result->valuestring[strlen(a.result->valuestring) - 1] != '\n')
            fputc('\n', stdout);
    } else {
        const cJSON *r = a.structured ? a.structured : a.result;

        printf("process %.0f: SIG%s sent, now %s\n", num_of(r, "pid", (double)n),
               str_of(r, "signal") ? str_of(r, "signal") : "TERM",
               str_of(r, "state") ? str_of(r, "state") : "?");
    }
    upstream_answer_cleanup(&a);
    return rc;
}

/* ---- runbox logs ---- */

struct logs {
    struct cli *c;
    int min_rank; /* entries below are not printed */
    const char *source;
    bool json;
    unsigned long long last_id;
    struct cli_sse sse;
    struct errinfo err;
    bool ended; /* the stream said something that ends following */
};

/* debug 0 < log = info 1 < warn 2 < error 3; -1 for an unknown name. */
static int level_rank(const char *l)
{
    static const char *const names[] = {"debug", "log", "info", "warn", "error"};
    static const int ranks[] = {0, 1, 1, 2, 3};

    for (size_t i = 0; l && i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(l, names[i]) == 0)
            return ranks[i];
    return -1;
}

#define LOG_INDENT 32 /* "    12 10:39:03.459 warn  exec   " */

static void print_entry(struct logs *lg, const cJSON *e)
{
    const char *ts = str_of(e, "ts"), *t;
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(e, "pid");
    const char *inst = str_of(e, "instance");
    unsigned long long id = (unsigned long long)num_of(e, "id", 0);
    char who[96] = "";

    if (id > lg->last_id)
        lg->last_id = id;
    if (level_rank(str_of(e, "level")) < lg->min_rank)
        return;
    if (lg->source && (!str_of(e, "source") || strcmp(str_of(e, "source"), lg->source) != 0))
        return;
    if (lg->json) {
        char *text = cJSON_PrintUnformatted(e);

        printf("%s\n", text ? text : "{}");
        cJSON_free(text);
        fflush(stdout);
        return;
    }
    /* "2026-12-01T10:39:03.459Z" -> "10:39:03.459" */
    t = ts && strlen(ts) >= 23 ? ts + 11 : (ts ? ts : "");
    if (cJSON_IsNumber(pid))
        snprintf(who, sizeof(who), " [pid %d]", pid->valueint);
    else if (inst)
        snprintf(who, sizeof(who), " [%.60s]", inst);
    printf("%6llu %.12s %-5s %-6s%s ", id, t, str_of(e, "level") ? str_of(e, "level") : "?",
           str_of(e, "source") ? str_of(e, "source") : "?", who);
    /* A message of several lines keeps its later lines under the first, so that every line
     * of the output that starts with an id starts an entry. */
    for (const char *m = str_of(e, "message") ? str_of(e, "message") : "", *nl; *m; m = nl + 1) {
        nl = strchr(m, '\n');
        if (!nl) {
            fputs(m, stdout);
            break;
        }
        printf("%.*s\n%*s", (int)(nl - m), m, LOG_INDENT, "");
    }
    putchar('\n');
    fflush(stdout);
}

/* Prints entries read with console_logs after since (the last `tail` when since is 0). */
static int read_console(struct logs *lg, unsigned long long since, int tail)
{
    struct upstream_answer a;
    const cJSON *entries, *e;
    char body[96];
    int rc, n, skip;

    snprintf(body, sizeof(body), "{\"since_id\":%llu,\"limit\":1000%s%s%s}", since,
             lg->source ? ",\"source\":\"" : "", lg->source ? lg->source : "",
             lg->source ? "\"" : "");
    rc = cli_tool(lg->c, "console_logs", body, &a);
    if (rc)
        return rc;
    if (!a.ok) {
        cli_err(lg->c, "%s", a.error);
        upstream_answer_cleanup(&a);
        return CLI_EXIT_FAILED;
    }
    entries = cJSON_GetObjectItemCaseSensitive(a.result, "entries");
    lg->last_id = (unsigned long long)num_of(a.result, "latest_id", (double)lg->last_id);
    n = 0;
    cJSON_ArrayForEach(e, entries) n += level_rank(str_of(e, "level")) >= lg->min_rank;
    /* -n N: the last N of what matches, or the first N after --since. */
    skip = since == 0 && n > tail ? n - tail : 0;
    cJSON_ArrayForEach(e, entries)
    {
        if (level_rank(str_of(e, "level")) < lg->min_rank)
            continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        if (since != 0 && tail-- <= 0)
            break;
        print_entry(lg, e);
    }
    upstream_answer_cleanup(&a);
    return 0;
}

static int on_log_event(void *ctx, const struct cli_sse_event *ev)
{
    struct logs *lg = ctx;
    cJSON *doc = cJSON_ParseWithLength(ev->data, ev->data_len);

    if (strcmp(ev->event, "console") == 0 && cJSON_IsObject(doc)) {
        print_entry(lg, doc);
    } else if (strcmp(ev->event, "dropped") == 0) {
        /* This reader was too slow: the entries it lost are still in the console. */
        fprintf(stderr, "runbox logs: %.0f event(s) were dropped; reading them back\n",
                num_of(doc, "count", 0));
        if (read_console(lg, lg->last_id, 1000) != 0)
            lg->ended = true;
    }
    cJSON_Delete(doc);
    return lg->ended;
}

static int on_log_body(void *ctx, const char *buf, size_t n)
{
    struct logs *lg = ctx;

    return cli_sse_feed(&lg->sse, buf, n, &lg->err) != 0;
}

static int follow(struct logs *lg, const char *level)
{
    struct cli_http_req q = {.method = "GET", .accept = "text/event-stream", .ctx = lg};
    struct cli_http_reply rep;
    struct jsonbuf path = JSONBUF_INIT(512);
    char buf[160], *problem;
    int rc = CLI_EXIT_DOWN;

    snprintf(buf, sizeof(buf), "/events?console=%s&since=%llu%s%s", level ? level : "debug",
             lg->last_id, lg->source ? "&source=" : "", lg->source ? lg->source : "");
    jsonbuf_puts(&path, buf, NULL);
    q.path = path.data;
    q.on_body = on_log_body;
    q.stream_type = "text/event-stream";
    cli_sse_init(&lg->sse, on_log_event, lg);
    cli_http_do(&lg->c->target, &q, &rep);
    problem = cli_reply_problem(lg->c, &rep);
    if (problem) {
        cli_err(lg->c, "%s", problem);
    } else if (rep.r.outcome == UPSTREAM_ANSWERED &&
               strncmp(rep.content_type, "text/event-stream", 17) != 0) {
        cJSON *doc = cJSON_ParseWithLength(rep.r.body, rep.r.body_len);

        if (rep.r.status == 404)
            cli_err(lg->c, "this runboxd has no event stream (GET /events answered 404); "
                           "update runboxd, or read without -f");
        else
            cli_err(lg->c, "GET /events: HTTP %ld: %s", rep.r.status,
                    str_of(doc, "error") ? str_of(doc, "error") : "(no message)");
        cJSON_Delete(doc);
    } else if (lg->err.msg[0]) {
        cli_err(lg->c, "%s", lg->err.msg);
    } else if (!lg->ended) {
        cli_err(lg->c, "runboxd closed the event stream (it stopped?)");
    }
    free(problem);
    cli_sse_cleanup(&lg->sse);
    cli_http_reply_cleanup(&rep);
    jsonbuf_cleanup(&path);
    return rc;
}

int cli_logs(struct cli *c, int argc, char **argv)
{
    struct logs lg = {.c = c};
    const char *level = NULL;
    bool follow_it = false;
    unsigned long long since = 0;
    long tail = 20;
    int rc;

    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;

        if (cli_help(a, logs_help))
            return 0;
        if (strcmp(a, "-f") == 0 || strcmp(a, "--follow") == 0) {
            follow_it = true;
        } else if (strcmp(a, "--json") == 0) {
            lg.json = true;
        } else if (strcmp(a, "--level") == 0 && v) {
            level = argv[++i];
            if (level_rank(level) < 0) {
                cli_err(c, "--level takes debug, log, info, warn or error; got '%.20s'", level);
                return CLI_EXIT_USAGE;
            }
        } else if (strcmp(a, "--source") == 0 && v) {
            lg.source = argv[++i];
            if (strcmp(lg.source, "exec") != 0 && strcmp(lg.source, "studio") != 0 &&
                strcmp(lg.source, "daemon") != 0) {
                cli_err(c, "--source takes exec, studio or daemon; got '%.20s'", lg.source);
                return CLI_EXIT_USAGE;
            }
        } else if ((strcmp(a, "--since") == 0 || strcmp(a, "-n") == 0) && v) {
            errno = 0;
            unsigned long long x = strtoull(v, &end, 10);

            if (errno || *end || !*v || v[0] == '-' || (a[1] == 'n' && (x < 1 || x > 1000))) {
                cli_err(c, "%s takes %s; got '%.20s'", a,
                        a[1] == 'n' ? "a number from 1 to 1000" : "a console id", v);
                return CLI_EXIT_USAGE;
            }
            if (a[1] == 'n')
                tail = (long)x;
            else
                since = x;
            i++;
        } else {
            cli_err(c, "unexpected '%s'\n\n%s", a, logs_help);
            return CLI_EXIT_USAGE;
        }
    }
    lg.min_rank = level ? level_rank(level) : 0;
    rc = cli_need_target(c);
    if (rc == 0)
        rc = read_console(&lg, since, (int)tail);
    if (rc == 0 && follow_it)
        rc = follow(&lg, level);
    return rc;
}
