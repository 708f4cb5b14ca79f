/* mcp-proxy/cli.c - the subcommands' dispatch and what they share (see cli.h): the target from
 * DAEMON_URL, the messages for a daemon that is down or is not runboxd, and tool calls over
 * POST /tool/<name> mapped exactly as the MCP server maps them. */
#include "cli.h"
#include "cli_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog.h"
#include "strfmt.h"
#include "upstream.h"

static const struct {
    const char *name;
    int (*fn)(struct cli *c, int argc, char **argv);
} commands[] = {
    {"status", cli_status},   {"call", cli_call},   {"tools", cli_tools}, {"logs", cli_logs},
    {"ps", cli_ps},           {"kill", cli_kill},   {"start", cli_start}, {"stop", cli_stop},
    {"restart", cli_restart}, {"setup", cli_setup},
};

bool cli_is_subcommand(const char *name)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(name, commands[i].name) == 0)
            return true;
    return false;
}

void cli_err(const struct cli *c, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "runbox %s: ", c->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

bool cli_help(const char *arg, const char *text)
{
    if (strcmp(arg, "-h") != 0 && strcmp(arg, "--help") != 0)
        return false;
    fputs(text, stdout);
    return true;
}

int cli_need_target(const struct cli *c)
{
    if (c->url_ok)
        return 0;
    cli_err(c, "%s", c->url_err);
    return CLI_EXIT_USAGE;
}

char *cli_reply_problem(const struct cli *c, const struct cli_http_reply *rep)
{
    const char *url = c->target.base_url;

    switch (rep->r.outcome) {
    case UPSTREAM_ANSWERED:
        if (upstream_is_runboxd_body(rep->r.body, rep->r.body_len))
            return NULL;
        /* An SSE answer of runboxd's is not JSON, but says what it is. */
        if (strncmp(rep->content_type, "text/event-stream", 17) == 0)
            return NULL;
        return upstream_foreign_message(url, rep->r.status, rep->r.body, rep->r.body_len);
    case UPSTREAM_REFUSED:
        return strfmt_alloc("runboxd is not running at %s (%s); start it with `runbox start`%s",
                            url, rep->r.error[0] ? rep->r.error : "connection refused",
                            c->url_default ? "" : " or check DAEMON_URL");
    case UPSTREAM_TIMEOUT:
        return strfmt_alloc("runboxd at %s did not answer in time", url);
    case UPSTREAM_DROPPED:
        return strfmt_alloc("runboxd at %s closed the connection before answering (%s); it may "
                            "have stopped",
                            url, rep->r.error);
    case UPSTREAM_TOO_LARGE:
        return strfmt_alloc("runboxd's answer is larger than the %zu MiB runbox accepts",
                            (size_t)(CLI_HTTP_BODY_MAX >> 20));
    case UPSTREAM_FAILED:
        break;
    }
    return strfmt_alloc("the request to runboxd at %s failed: %s", url, rep->r.error);
}

int cli_fetch_json(const struct cli *c, const char *method, const char *path, const char *body,
                   long timeout_ms, cJSON **doc, long *status)
{
    struct cli_http_req q = {.method = method,
                             .path = path,
                             .body = body,
                             .body_len = body ? strlen(body) : 0,
                             .timeout_ms = timeout_ms};
    struct cli_http_reply rep;
    char *problem;

    *doc = NULL;
    cli_http_do(&c->target, &q, &rep);
    problem = cli_reply_problem(c, &rep);
    if (problem) {
        cli_err(c, "%s", problem);
        free(problem);
        cli_http_reply_cleanup(&rep);
        return CLI_EXIT_DOWN;
    }
    *status = rep.r.status;
    *doc = upstream_parse(rep.r.body, rep.r.body_len);
    cli_http_reply_cleanup(&rep);
    return 0;
}

cJSON *cli_get_json_quiet(const struct cli *c, const char *path)
{
    struct cli_http_req q = {.method = "GET", .path = path, .timeout_ms = CLI_QUICK_MS};
    struct cli_http_reply rep;
    cJSON *doc = NULL;

    if (!c->url_ok)
        return NULL;
    cli_http_do(&c->target, &q, &rep);
    if (rep.r.outcome == UPSTREAM_ANSWERED && rep.r.status == 200 &&
        strncasecmp(rep.content_type, "application/json", 16) == 0)
        doc = cJSON_ParseWithLength(rep.r.body, rep.r.body_len);
    cli_http_reply_cleanup(&rep);
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        doc = NULL;
    }
    return doc;
}

int cli_tool(const struct cli *c, const char *tool, const char *args, struct upstream_answer *a)
{
    struct cli_http_req q = {
        .method = "POST", .body = args, .body_len = strlen(args), .timeout_ms = c->call_timeout_ms};
    struct cli_http_reply rep;
    char path[200], *problem;
    int rc = 0;

    snprintf(path, sizeof(path), "/tool/%s", tool);
    q.path = path;
    memset(a, 0, sizeof(*a));
    cli_http_do(&c->target, &q, &rep);
    problem = rep.r.outcome == UPSTREAM_TIMEOUT ? NULL : cli_reply_problem(c, &rep);
    if (problem) {
        cli_err(c, "%s", problem);
        rc = CLI_EXIT_DOWN;
    } else if (upstream_map_answer(&rep.r, c->target.base_url, a) < 0) {
        cli_err(c, "out of memory");
        rc = CLI_EXIT_FAILED;
    }
    free(problem);
    cli_http_reply_cleanup(&rep);
    return rc;
}

/* ---- durations ---- */

void cli_format_duration(long long ms, char *out, size_t n)
{
    long long s = ms / 1000;

    if (ms < 0)
        snprintf(out, n, "?");
    else if (ms < 1000)
        snprintf(out, n, "%lldms", ms);
    else if (s < 60)
        snprintf(out, n, "%llds", s);
    else if (s < 3600)
        snprintf(out, n, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(out, n, "%lldh%02lldm", s / 3600, (s / 60) % 60);
    else
        snprintf(out, n, "%lldd%02lldh", s / 86400, (s / 3600) % 24);
}

/* ---- the dispatch ---- */

static long timeout_from_env(void)
{
    const char *s = getenv("RUNBOX_TIMEOUT_MS");
    char *end = NULL;
    long v;

    if (!s || !*s)
        return CLI_CALL_MS;
    errno = 0;
    v = strtol(s, &end, 10);
    return errno || *end || v <= 0 ? CLI_CALL_MS : v;
}

int cli_main(int argc, char **argv)
{
    const char *url = getenv("DAEMON_URL");
    struct cli c = {.name = argv[0]};
    struct errinfo err = {0};
    struct catalog *cat;
    int rc = CLI_EXIT_USAGE;

    c.url_default = !url || !*url;
    c.url_ok = cli_target_parse(&c.target, c.url_default ? CLI_DEFAULT_URL : url,
                                getenv("RUNBOX_TOKEN"), &err) == 0;
    snprintf(c.url_err, sizeof(c.url_err), "%s", err.msg);
    c.call_timeout_ms = timeout_from_env();
    errinfo_clear(&err);
    cat = catalog_select(catalog_builtin(), getenv("RUNBOX_TOOLS"), &err);
    if (!cat) {
        cli_err(&c, "RUNBOX_TOOLS: %s", err.msg);
        return CLI_EXIT_USAGE;
    }
    c.cat = cat;
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[0], commands[i].name) == 0)
            rc = commands[i].fn(&c, argc - 1, argv + 1);
    fflush(stdout);
    catalog_free(cat);
    return rc;
}
