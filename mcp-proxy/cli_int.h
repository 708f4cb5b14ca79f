/* mcp-proxy/cli_int.h - private to the cli_*.c files and their unit test (test_cli.c). */
#ifndef MCP_PROXY_CLI_INT_H
#define MCP_PROXY_CLI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "cli_http.h"
#include "errinfo.h"

#define CLI_DEFAULT_URL    "http://127.0.0.1:7766"
#define CLI_QUICK_MS       5000L   /* /health and the quick tools */
#define CLI_CALL_MS        120000L /* a tool call, as the MCP server (RUNBOX_TIMEOUT_MS) */
#define CLI_STOP_WAIT_MS   30000L  /* how long `stop` waits for the daemon to exit */
#define CLI_START_WAIT_MS  10000L  /* how long `start` waits for /health */
#define CLI_LOG_TAIL_LINES 8       /* lines of the daemon's log quoted when it failed */
#define CLI_LOG_TAIL_BYTES 4096

struct catalog;

/* What every subcommand shares. */
struct cli {
    const char *name; /* the subcommand, for messages */
    struct cli_target target;
    bool url_default; /* DAEMON_URL was not set */
    bool url_ok;      /* DAEMON_URL parsed (else url_err says why) */
    char url_err[ERRINFO_MSG_MAX];
    long call_timeout_ms;      /* RUNBOX_TIMEOUT_MS */
    const struct catalog *cat; /* the RUNBOX_TOOLS view of the catalog (borrowed) */
};

/* ---- cli.c ---- */

/* "runbox NAME: message" on stderr. */
void cli_err(const struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* True when arg is -h or --help; then prints text to stdout. */
bool cli_help(const char *arg, const char *text);

/* Checks the target is usable; else prints why. Returns 0 or CLI_EXIT_USAGE. */
int cli_need_target(const struct cli *c);

/* The one-line message for a reply that is not a usable runboxd answer: not reachable (with
 * what to do), a timeout, a drop, or something other than runboxd on the port. NULL when the
 * reply came from runboxd (whatever its status). Owned (free). */
char *cli_reply_problem(const struct cli *c, const struct cli_http_reply *rep);

/* GET or POST path and parse the JSON answer. Returns 0 with *doc owned (cJSON_Delete) and
 * *status the HTTP status; or CLI_EXIT_DOWN with the problem printed. */
int cli_fetch_json(const struct cli *c, const char *method, const char *path, const char *body,
                   long timeout_ms, cJSON **doc, long *status);

/* GET path; the JSON object of a 200 answer, else NULL, printing nothing (for what a
 * subcommand shows when the daemon has it: GET /tools, GET /mcp-servers). Owned. */
cJSON *cli_get_json_quiet(const struct cli *c, const char *path);

/* Calls a tool over POST /tool/<name> (args is the JSON text of the arguments object) and
 * maps the answer as the MCP server does (upstream_map_answer). Returns 0 with *a filled
 * (release with upstream_answer_cleanup), or CLI_EXIT_DOWN with the problem printed. */
int cli_tool(const struct cli *c, const char *tool, const char *args, struct upstream_answer *a);

/* ---- cli_args.c (pure) ---- */

/* Builds a tool's arguments object from the command line: one JSON object, or key=value
 * pairs, each value read as the property's schema type says (a string stays text; integer,
 * number, boolean, array, object and null are read as JSON, and a value that does not read
 * stays a string so that the validator names the rule it breaks); key:=JSON is always JSON.
 * Returns an owned object (cJSON_Delete) or NULL with err (ERR_INVALID) saying what to write. */
cJSON *cli_args_parse(const cJSON *schema, int argc, char **argv, struct errinfo *err);

/* The validator's messages for args against a catalog tool's schema, as the MCP server gives
 * them for an isError result: first against the schema tools/list shows (what the engine
 * checks), then, when that passes, against the whole one; one message per line, "(N more
 * problems)" past SCHEMA_MAX_ERRORS. NULL when args are valid; owned (free) otherwise. */
char *cli_args_check(const cJSON *schema, const cJSON *args);

/* JSON for people: two-space indentation, arrays of scalars on one line. Owned (free). */
char *cli_json_pretty(const cJSON *v);

/* cli_json_pretty() and a newline on stdout. */
void cli_print_json(const cJSON *v);

/* "1h02m", "3m05s", "12s", "850ms". Pure. */
void cli_format_duration(long long ms, char *out, size_t n);

/* ---- the subcommands ---- */

int cli_status(struct cli *c, int argc, char **argv);
int cli_call(struct cli *c, int argc, char **argv);
int cli_tools(struct cli *c, int argc, char **argv);
int cli_logs(struct cli *c, int argc, char **argv);
int cli_ps(struct cli *c, int argc, char **argv);
int cli_kill(struct cli *c, int argc, char **argv);
int cli_start(struct cli *c, int argc, char **argv);
int cli_stop(struct cli *c, int argc, char **argv);
int cli_restart(struct cli *c, int argc, char **argv);
int cli_setup(struct cli *c, int argc, char **argv);

#endif /* MCP_PROXY_CLI_INT_H */
