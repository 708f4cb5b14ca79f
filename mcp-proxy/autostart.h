/* mcp-proxy/autostart.h - starting runboxd when nothing answers at the default address.
 *
 * Only used with the default DAEMON_URL and without --no-autostart. On the first refused
 * connection the proxy calls autostart_begin(): runboxd (beside our own binary, else on PATH)
 * is started with --port <the URL's port>, detached (double fork, setsid, stdin /dev/null, stdout
 * and stderr appended to $XDG_STATE_HOME/runbox/runboxd.log), then GET /health is polled every
 * AUTOSTART_POLL_MS through the proxy's own upstream, never blocking the loop, for at most
 * AUTOSTART_WAIT_MS. The outcome is reported once through the done callback. At most one start per
 * AUTOSTART_RETRY_MS: a later attempt inside that window fails at once with the last reason.
 *
 * Thread-safety: owner thread only (the loop's). */
#ifndef MCP_PROXY_AUTOSTART_H
#define MCP_PROXY_AUTOSTART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errinfo.h"

#define AUTOSTART_POLL_MS  25
#define AUTOSTART_WAIT_MS  2000
#define AUTOSTART_RETRY_MS 10000

struct upstream;
struct autostart; /* opaque */

/* ok: runboxd answered /health. Otherwise reason says why it could not be started (one line,
 * borrowed for the call). */
typedef void (*autostart_done_fn)(void *ctx, bool ok, const char *reason);

/* Creates the starter. up is borrowed and must outlive it. Reads HOME, XDG_STATE_HOME and PATH
 * now. Returns an owned starter (free with autostart_free) or NULL with err set. */
struct autostart *autostart_new(struct upstream *up, autostart_done_fn done, void *ctx,
                                struct errinfo *err);

/* Stops waiting (done is not called) and frees. The started daemon keeps running. NULL: no-op. */
void autostart_free(struct autostart *as);

/* Starts runboxd and begins waiting for /health; done is called later. Returns 0 when a start
 * is under way (also when one already was), or -1 with err set when no start was made: the
 * binary was not found, the log could not be opened, fork failed, or a start was already tried
 * less than AUTOSTART_RETRY_MS ago (err then repeats that attempt's outcome). */
int autostart_begin(struct autostart *as, int64_t now_ms, struct errinfo *err);

bool autostart_is_running(const struct autostart *as);

/* The daemon's log file. Borrowed. */
const char *autostart_log_path(const struct autostart *as);

/* Milliseconds until autostart_tick() has work, or -1 when nothing is under way. */
int autostart_timeout_ms(const struct autostart *as, int64_t now_ms);

/* Advances the wait: notices an exec failure, sends the next /health probe, gives up after
 * AUTOSTART_WAIT_MS. Call it on every turn of the loop. */
void autostart_tick(struct autostart *as, int64_t now_ms);

/* ---- launching runboxd (autostart and `runbox start`) ---- */

#define AUTOSTART_ARGS_MAX   32   /* arguments given to runboxd */
#define AUTOSTART_TAIL_BYTES 8192 /* most of the log read for its last lines */

enum { AUTOSTART_LAUNCH_RUNNING, AUTOSTART_LAUNCH_EXEC_FAILED, AUTOSTART_LAUNCH_EXITED };

/* A daemon being started. The fields are private to autostart.c, but for log_path and
 * log_offset (read-only). */
struct autostart_launch {
    int status_fd;        /* exec errno or the daemon's exit status arrive here */
    int hold_fd;          /* the watcher process stays while this is open */
    int watcher;          /* pid of the watcher (our child), or 0 */
    long long log_offset; /* the log's size before the start: what this run wrote follows */
    char log_path[4096];
};

/* Starts daemon (a path) as runboxd with args (NULL-terminated, at most AUTOSTART_ARGS_MAX;
 * may be NULL) detached: its own session, stdin /dev/null, stdout and stderr appended to
 * log_path (its folders are made, mode 0700). A watcher process reports, until
 * autostart_launch_release(), whether exec failed or the daemon exited. Returns 0 with *l set,
 * or -1 with err set. */
int autostart_launch(const char *daemon, const char *const *args, const char *log_path,
                     struct autostart_launch *l, struct errinfo *err);

/* Has the launch failed? Waits up to timeout_ms (0: just looks). Returns
 * AUTOSTART_LAUNCH_RUNNING (no news), AUTOSTART_LAUNCH_EXEC_FAILED (*value = errno) or
 * AUTOSTART_LAUNCH_EXITED (*value = the wait status). */
int autostart_launch_poll(struct autostart_launch *l, int timeout_ms, int *value);

/* Stops watching: the daemon runs on by itself; the watcher is reaped. */
void autostart_launch_release(struct autostart_launch *l);

/* "exited with status 2", "was killed by signal 11 (Segmentation fault)". */
void autostart_format_exit(int wstatus, char *out, size_t n);

/* The last `lines` non-empty lines (at most 64) the file has after byte offset, joined with sep,
 * into out (cut to fit). Returns how many non-empty lines there were, or -1 when the file cannot
 * be read. */
int autostart_log_tail(const char *path, long long offset, int lines, const char *sep, char *out,
                       size_t n);

/* ---- pure helpers (unit-tested) ---- */

/* The log path: <xdg_state_home>/runbox/runboxd.log when xdg_state_home is an absolute path,
 * else <home>/.local/state/runbox/runboxd.log. Returns 0, or -1 when neither is usable or out
 * is too small. */
int autostart_log_path_for(const char *xdg_state_home, const char *home, char *out, size_t n);

/* Finds runboxd: <dirname of self_exe>/runboxd when that is an executable file, else the first
 * executable runboxd in path_env (a ':'-separated list; empty entries are skipped). Returns 0
 * with the path in out, or -1. self_exe and path_env may be NULL. */
int autostart_find_daemon(const char *self_exe, const char *path_env, char *out, size_t n);

/* The explicit port of an http URL ("7766" of "http://127.0.0.1:7766/"), as text in out.
 * Returns 0, or -1 (out empty) when the URL names no port. */
int autostart_url_port(const char *url, char *out, size_t n);

#endif /* MCP_PROXY_AUTOSTART_H */
