/* mcp-proxy/cli.h - runbox's subcommands, for the person at the keyboard:
 *
 *   runbox status | call TOOL ... | tools | logs | ps | kill PID | start | stop | restart |
 *          setup CLIENT
 *
 * Each talks to runboxd at DAEMON_URL (default http://127.0.0.1:7766) through the small blocking
 * client of cli_http.h and exits; with no subcommand runbox stays the stdio MCP server (main.c).
 * docs/cli.md describes every subcommand, its output and its exit codes.
 *
 * Thread-safety: single-threaded programs only. */
#ifndef MCP_PROXY_CLI_H
#define MCP_PROXY_CLI_H

#include <stdbool.h>

/* Exit codes shared by the subcommands (status has its own: 0 healthy, 1 not running, 2
 * unhealthy). */
#define CLI_EXIT_OK     0
#define CLI_EXIT_FAILED 1 /* the tool or action failed (isError, kill of an unknown pid) */
#define CLI_EXIT_USAGE  2 /* bad usage or arguments; nothing was sent */
#define CLI_EXIT_DOWN   3 /* runboxd is not reachable, or something else answers there */

/* True when name is one of the subcommands. */
bool cli_is_subcommand(const char *name);

/* Runs the subcommand argv[0] with its arguments argv[1..argc). Returns the exit code. */
int cli_main(int argc, char **argv);

#endif /* MCP_PROXY_CLI_H */
