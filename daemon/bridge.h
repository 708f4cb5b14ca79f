/* daemon/bridge.h - the Roblox Studio bridge: the queue of commands for the Studio plugin, the
 * plugin instances that long-poll for them, and the calls that wait for their results.
 *
 * A tool call (bridge_call) picks its target instance when it is queued, waits on its own
 * condition variable and fails by itself when its deadline passes or its target stops polling.
 * A poll (bridge_poll) registers or refreshes its instance and waits up to the poll window for a
 * command addressed to that instance; a command handed to one poll is never handed to another
 * (at-most-once). Results (bridge_result) are matched by command id; unknown, late and duplicate
 * ids are reported to the caller, who logs and ignores them.
 *
 * Routing: every command goes to the ACTIVE edit instance (the first edit instance to connect,
 * or the one chosen with bridge_set_active). The play-mode tools (bridge_tool_roles) go to the
 * play-mode server instance of the active window's test when one is connected: the server whose
 * parent (sent by the plugin for tests Runbox started) is the active edit instance, else one of
 * the same place that names no parent (a test the user started); otherwise to the active edit
 * instance. Unpublished places share a place id, so the parent keeps one window's commands out
 * of another's test. Client instances are registered and listed but receive nothing.
 *
 * Replacement: a reloaded plugin cannot be relied on to say goodbye (plugin.Unloading may not
 * get its /disconnect out). When an edit instance polls, another edit instance of the same
 * place and name that has no poll waiting and has not polled for BRIDGE_REPLACE_MS is taken as
 * the reloaded copy's old self and removed at once (its commands fail as disconnected), instead
 * of after stale_ms. A live window always has a poll waiting or starts the next one at once.
 *
 * Liveness: an instance is connected while it started a poll within the last stale_ms (20 s;
 * the poll window is 15 s, so a plugin that polls in a loop renews well before). A plugin must
 * keep polling while it runs commands: an instance holding a command that stops polling makes
 * that call fail with the "may have been applied" message.
 *
 * Thread-safety: every function may be called from any thread (one internal mutex; condition
 * variables on CLOCK_MONOTONIC). The pure helpers at the end touch no state. */
#ifndef DAEMON_BRIDGE_H
#define DAEMON_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

#define BRIDGE_POLL_WINDOW_MS 15000       /* a poll is held at most this long */
#define BRIDGE_STALE_MS       20000       /* no poll started for this long: the instance is gone */
#define BRIDGE_DEADLINE_MS    110000      /* per command, below the proxy's 120 s */
#define BRIDGE_PLAY_MARGIN_MS 30000       /* run_script_in_play_mode: its timeout + this */
#define BRIDGE_QUEUE_MAX      64          /* commands queued or running at once */
#define BRIDGE_INSTANCES_MAX  16          /* plugin instances known at once */
#define BRIDGE_RESULT_MAX     (16u << 20) /* a POST /result body: 16 MiB */
#define BRIDGE_ID_MAX         64          /* instance ids and command ids, bytes with the NUL */
#define BRIDGE_TEXT_MAX       200         /* place and name, bytes kept (longer ones are cut) */
#define BRIDGE_REPLACE_MS     3000        /* an edit instance idle this long yields to a new one */
#define BRIDGE_CLIENTS_MAX    64          /* clients whose turn (round robin) is remembered */

enum bridge_role { BRIDGE_ROLE_EDIT, BRIDGE_ROLE_SERVER, BRIDGE_ROLE_CLIENT };

/* Role masks for bridge_tool_roles(). */
#define BRIDGE_TO_EDIT   (1u << BRIDGE_ROLE_EDIT)
#define BRIDGE_TO_SERVER (1u << BRIDGE_ROLE_SERVER)

struct bridge_options {
    int poll_window_ms; /* 0 = BRIDGE_POLL_WINDOW_MS */
    int stale_ms;       /* 0 = BRIDGE_STALE_MS */
    int deadline_ms;    /* 0 = BRIDGE_DEADLINE_MS */
    size_t queue_max;   /* 0 = BRIDGE_QUEUE_MAX */
    /* A monotonic clock in milliseconds, for the unit tests (NULL = CLOCK_MONOTONIC). Waits
     * still sleep on the real clock; after moving a fake clock, call bridge_wake(). */
    int64_t (*clock_ms)(void *arg);
    void *clock_arg;
};

struct bridge; /* opaque */

/* Returns an owned bridge (free with bridge_free) or NULL with err set. opt may be NULL. */
struct bridge *bridge_new(const struct bridge_options *opt, struct errinfo *err);

/* Frees b. No poll or call may be running (call bridge_shutdown and let them return first).
 * NULL is a no-op. */
void bridge_free(struct bridge *b);

/* Ends every wait at once and refuses new ones: parked polls answer "no command", waiting calls
 * fail with ERR_UNAVAILABLE ("runboxd is shutting down"). For a quick daemon stop. */
void bridge_shutdown(struct bridge *b);

/* Wakes every waiter to re-check its deadline (after a fake clock moved). */
void bridge_wake(struct bridge *b);

struct bridge_instance_info {
    const char *id; /* 1..BRIDGE_ID_MAX-1 bytes of [A-Za-z0-9_.:{}-]; borrowed */
    enum bridge_role role;
    const char *place;  /* place id as sent, or NULL; copied (cut to BRIDGE_TEXT_MAX) */
    const char *name;   /* place name, or NULL; copied (cut) */
    const char *parent; /* a test server's edit instance id (from the plugin), or NULL; copied */
};

/* A command handed to a poll. Storage is the caller's; the strings are owned
 * (bridge_command_cleanup frees them). */
struct bridge_command {
    char id[BRIDGE_ID_MAX];
    char *tool;      /* owned */
    char *args_json; /* owned: the arguments object as compact JSON */
};

void bridge_command_cleanup(struct bridge_command *cmd); /* safe on a zeroed struct */

/* Registers or refreshes the instance, then waits up to the poll window for a command addressed
 * to it. Returns 1 with *out filled, 0 when the window ended (or the instance was disconnected,
 * or the bridge shut down) without one, -1 with err: ERR_INVALID for a bad id, ERR_TOO_LARGE
 * when BRIDGE_INSTANCES_MAX other instances are connected. */
int bridge_poll(struct bridge *b, const struct bridge_instance_info *inst,
                struct bridge_command *out, struct errinfo *err);

enum bridge_result_status {
    BRIDGE_RESULT_ACCEPTED, /* a waiting call got it */
    BRIDGE_RESULT_UNKNOWN,  /* no command ever had this id (in recent memory) */
    BRIDGE_RESULT_FINISHED, /* the call already ended (answered, timed out or failed) */
    BRIDGE_RESULT_NOT_SENT, /* the command is still queued: no poll took it */
};

/* The plugin's answer for command id. ok: data[0..len) is the result (JSON text when is_json,
 * else text); !ok: data is the error message (text). Copies data. Never fails: anything but
 * ACCEPTED is to be logged and ignored by the caller. */
enum bridge_result_status bridge_result(struct bridge *b, const char *id, bool ok, const char *data,
                                        size_t len, bool is_json);

/* What a call ended with. Storage is the caller's; data is owned (bridge_reply_cleanup). */
struct bridge_reply {
    bool ok;                /* the plugin answered ok:true */
    bool is_json;           /* ok: data is JSON text (else plain text) */
    enum errinfo_kind kind; /* !ok: ERR_INVALID for the plugin's own failure, ERR_TIMEOUT,
                               ERR_UNAVAILABLE (not connected, gone, queue full, shutdown),
                               ERR_CANCELLED (bridge_cancel) */
    char *data;             /* owned, NUL-terminated: the result, or the error message */
    size_t len;
};

void bridge_reply_cleanup(struct bridge_reply *r); /* safe on a zeroed struct */

/* Sends a command and waits for its result. Retry safety: when args has an "operation_id"
 * (a string), a call of the same tool with the same id within OPCACHE_WINDOW_MS (opcache.h) gets a
 * copy of the first call's answer (a JSON object answer gains "replayed": true) instead of being
 * sent again; while the first still runs, the repeat waits for it (up to the deadline). Only
 * answers the plugin gave are kept; a call that failed before or without one (not connected, timed
 * out, cancelled) may be repeated. The plugin never sees operation_id. When other commands for
 * the same Studio were queued or running ahead of it, a JSON object answer gains
 * "queue_ahead": N, the commands that ran or started before it while it waited. id is the
 * call id (copied; must pass bridge_id_ok), args the validated arguments object (borrowed;
 * copied as JSON). Fills *out
 * (the result, or why the call failed: no Studio connected, with how to connect; the target
 * disconnected or stopped polling; the queue is full; the deadline passed; the plugin's own
 * error message, uncut) and returns 0 when out->ok, else -1. Blocks the calling thread. */
int bridge_call(struct bridge *b, const char *id, const char *tool, const cJSON *args,
                struct bridge_reply *out);

/* bridge_call for a named client (the MCP session, the runbox process, ...; NULL or "" for a
 * caller that names none, and those share one turn; cut to BRIDGE_ID_MAX-1 bytes). Commands
 * for one Studio instance are handed out round robin between clients, in order within each:
 * two agents' calls take turns however many each has queued. */
int bridge_call_for(struct bridge *b, const char *id, const char *client, const char *tool,
                    const cJSON *args, struct bridge_reply *out);

/* Cancels the waiting call whose id is id: a command still queued is dropped (no poll will get
 * it), a command already sent is abandoned (its late answer is ignored), a repeat waiting for
 * its operation_id's first call stops waiting, and bridge_call returns at once with
 * ERR_CANCELLED and a message saying which happened. A call not begun yet is remembered
 * (the last few ids): when it comes, it fails as cancelled without sending anything. Returns
 * false when no call with that id is waiting. */
bool bridge_cancel(struct bridge *b, const char *id);

/* Forgets the instance at once and fails its unanswered commands. Returns how many commands
 * failed, or -1 when the instance was not known. */
int bridge_disconnect(struct bridge *b, const char *instance);

/* Makes instance the active edit instance. ERR_NOT_FOUND (listing the connected ones) when it is
 * not connected, ERR_INVALID when it is not an edit instance. */
int bridge_set_active(struct bridge *b, const char *instance, struct errinfo *err);

/* {"connected":bool,"active":id|null,"instances":[{"id","role","place","name",
 * "last_poll_ms_ago","active"}],"queue_depth":N} (connected instances, oldest first), what the
 * Studio state tools answer (their outputSchema). Owned (cJSON_Delete), or NULL when out of
 * memory. */
cJSON *bridge_status_json(struct bridge *b);

/* The same with "recent":[{"tool","instance","state","duration_ms","ms_ago"}]: the last 10
 * finished commands, newest first, state "ok", "failed", "timed out", "cancelled" or "not
 * delivered". For /health's "studio" (runbox status, the status page). */
cJSON *bridge_health_json(struct bridge *b);

/* ---- pure helpers (no state), shared with api_bridge.c and the unit test ---- */

/* The roles that may receive this tool: BRIDGE_TO_EDIT for every tool, plus BRIDGE_TO_SERVER
 * for the play-mode tools (run_script_in_play_mode, stop_play, get_studio_mode). */
unsigned bridge_tool_roles(const char *tool);

/* The deadline for one call of tool with args, in ms: deadline_ms, or for
 * run_script_in_play_mode its "timeout" argument (seconds) * 1000 + BRIDGE_PLAY_MARGIN_MS. */
int64_t bridge_deadline_for(const char *tool, const cJSON *args, int deadline_ms);

/* Parses "edit", "server" or "client"; -1 for anything else. */
int bridge_parse_role(const char *s);
const char *bridge_role_name(enum bridge_role role);

/* True when id is 1..BRIDGE_ID_MAX-1 bytes of [A-Za-z0-9_.:{}-]. */
bool bridge_id_ok(const char *id);

/* Roblox's JSONEncode writes bare inf, -inf and nan (and JSON has no such tokens). Copies
 * in[0..len) into an owned buffer (free()) with every such token OUTSIDE strings replaced by
 * null; text inside strings is never changed. Returns NULL when out of memory. *outlen gets the
 * new length. */
char *bridge_json_sanitize(const char *in, size_t len, size_t *outlen);

/* Finds the top-level "id" string of a JSON object fed in pieces, without keeping the text: for
 * a result body too large to keep, or one too deeply nested to parse. The first "id" member of
 * the first top-level value decides, as with cJSON_GetObjectItem on the parsed body: a later
 * "id" member, or anything after that value closed, changes nothing. Storage is the caller's;
 * zero it (or bridge_idscan_init) before the first piece. */
struct bridge_idscan {
    int depth;       /* nesting depth (1 = inside the top-level object) */
    int max_depth;   /* the deepest nesting seen so far */
    int state;       /* private */
    bool esc;        /* private: last char was a backslash inside a string */
    bool key_is_id;  /* private: the last key at depth 1 was "id" */
    bool expect_key; /* private: the next string at depth 1 is a key */
    bool id_seen;    /* private: the first "id" member's value was read (valid or not) */
    bool closed;     /* private: the first top-level value has ended */
    size_t klen;     /* private */
    char key[4];     /* private */
    char id[BRIDGE_ID_MAX];
    size_t idlen;
    bool found; /* id holds the top-level "id" value */
};

void bridge_idscan_init(struct bridge_idscan *s);
void bridge_idscan_feed(struct bridge_idscan *s, const char *p, size_t n);

#endif /* DAEMON_BRIDGE_H */
