/* mcp-proxy/main.c - runbox: the stdio MCP server that forwards tool calls to runboxd.
 *
 * Reads the options and the environment, then runs the proxy loop on stdin/stdout. stdout
 * carries protocol only (or the output of --list-tools, --version, --help); logs go to stderr. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "catalog.h"
#include "cli.h"
#include "errinfo.h"
#include "log.h"
#include "proxy.h"

#define DEFAULT_DAEMON_URL "http://127.0.0.1:7766"
#define DEFAULT_TIMEOUT_MS 120000L
#define MAX_TIMEOUT_MS     (24L * 3600 * 1000)

static const char usage[] =
    "usage: runbox [--no-autostart] | --list-tools | --version | --help\n"
    "       runbox SUBCOMMAND [--help | ...]\n"
    "\n"
    "The Runbox MCP server for stdio clients (Claude Desktop, Claude Code, Cursor, ...): it\n"
    "answers MCP on stdin/stdout and forwards each tool call to runboxd over HTTP.\n"
    "\n"
    "subcommands, for people (docs/cli.md):\n"
    "  status            is runboxd running, and what is it doing\n"
    "  call TOOL ARGS    call a tool: runbox call read_file path=/a.txt\n"
    "  tools [GROUP]     list the tools\n"
    "  logs [-f]         print (and follow) the console\n"
    "  ps, kill PID      the processes exec started\n"
    "  start, stop, restart   the daemon, in the background\n"
    "  setup CLIENT      add runbox to an MCP client's configuration (claude-desktop,\n"
    "                    claude-code, cursor, vscode, windsurf, zed, continue, opencode,\n"
    "                    codex, gemini-cli)\n"
    "\n"
    "options:\n"
    "  --list-tools    print the tools (RUNBOX_TOOLS) as {\"tools\":[...]} and exit (no daemon)\n"
    "  --no-autostart  never start runboxd; fail calls while it is not running\n"
    "  --version       print the version and exit\n"
    "  --help          print this text and exit\n"
    "\n"
    "environment:\n"
    "  DAEMON_URL         runboxd's address (default " DEFAULT_DAEMON_URL "). When it is unset\n"
    "                     and nothing answers there, runbox starts runboxd itself (found beside\n"
    "                     runbox or on PATH; its log goes to $XDG_STATE_HOME/runbox/runboxd.log).\n"
    "  RUNBOX_TOKEN       sent to runboxd as \"Authorization: Bearer <token>\"\n"
    "  RUNBOX_TIMEOUT_MS  how long one tool call may take (default 120000)\n"
    "  RUNBOX_TOOLS       the tools to list: all (default), sandbox, studio, readonly, or a\n"
    "                     comma list of these and of groups (e.g. sandbox,studio-scripts)\n"
    "  RUNBOX_LOG         error|warn|info|debug|trace (default warn), written to stderr\n";

static long timeout_from_env(void)
{
    const char *s = getenv("RUNBOX_TIMEOUT_MS");
    char *end = NULL;
    long v;

    if (!s || !*s)
        return DEFAULT_TIMEOUT_MS;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || v <= 0 || v > MAX_TIMEOUT_MS) {
        log_warn("runbox: RUNBOX_TIMEOUT_MS=%.40s is not a number of milliseconds from 1 to "
                 "%ld; using %ld",
                 s, MAX_TIMEOUT_MS, DEFAULT_TIMEOUT_MS);
        return DEFAULT_TIMEOUT_MS;
    }
    return v;
}

/* The tools runbox serves: the RUNBOX_TOOLS profile of the built-in catalog. NULL (with the
 * message printed) when RUNBOX_TOOLS names no profile or group. Owned, freed at exit. */
static struct catalog *tool_profile(void)
{
    const char *spec = getenv("RUNBOX_TOOLS");
    struct errinfo err = {0};
    struct catalog *cat = catalog_select(catalog_builtin(), spec, &err);

    if (!cat)
        log_error("runbox: RUNBOX_TOOLS=%.60s: %s", spec ? spec : "", err.msg);
    return cat;
}

static int list_tools(const struct catalog *cat)
{
    const char *tools = catalog_tools_json(cat);

    if (!tools) {
        log_error("runbox: out of memory for the tools list");
        return 1;
    }
    if (printf("{\"tools\":%s}\n", tools) < 0 || fflush(stdout) != 0) {
        log_error("runbox: cannot write to stdout");
        return 1;
    }
    return 0;
}

static int serve(const struct catalog *cat, bool autostart)
{
    const char *url = getenv("DAEMON_URL");
    const char *token = getenv("RUNBOX_TOKEN");
    bool url_default = !url || !*url;
    struct proxy_config cfg;
    struct errinfo err = {0};
    int rc;

    cfg.daemon_url = url_default ? DEFAULT_DAEMON_URL : url;
    cfg.token = token && *token ? token : NULL;
    cfg.timeout_ms = timeout_from_env();
    cfg.autostart = autostart && url_default;
    cfg.catalog = cat;
    /* libcurl is loaded by the first tool call (upstream.c), not here: initialize is answered
     * before any of it is paid for. */
    rc = proxy_run(&cfg, 0, 1, &err);
    if (rc < 0) {
        log_error("runbox: %s", err.msg);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    bool help = false, version = false, list = false, autostart = true;
    struct catalog *cat;
    int rc;

    log_init("runbox");
    if (argc > 1 && cli_is_subcommand(argv[1]))
        return cli_main(argc - 1, argv + 1);
    if (argc > 1 && argv[1][0] != '-') {
        fprintf(stderr, "runbox: unknown subcommand '%s'; `runbox --help` lists them\n", argv[1]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help = true;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            version = true;
        } else if (strcmp(a, "--list-tools") == 0) {
            list = true;
        } else if (strcmp(a, "--no-autostart") == 0) {
            autostart = false;
        } else {
            fprintf(stderr, "runbox: unknown option '%s'\n\n%s", a, usage);
            return 2;
        }
    }
    if (help) {
        fputs(usage, stdout);
        return 0;
    }
    if (version) {
        printf("runbox %s\n", RUNBOX_VERSION);
        return 0;
    }
    cat = tool_profile();
    if (!cat)
        return 2;
    if (!list && isatty(STDIN_FILENO))
        /* A person typed `runbox`: say what it is doing instead of waiting in silence. */
        fputs("runbox: this is the Runbox MCP server; it reads MCP (JSON-RPC) on stdin, for "
              "clients such as Claude or Cursor.\n"
              "runbox: for a person: `runbox status`, `runbox call TOOL key=value ...`, "
              "`runbox --help`. Ctrl+D ends it.\n",
              stderr);
    rc = list ? list_tools(cat) : serve(cat, autostart);
    catalog_free(cat);
    return rc;
}
