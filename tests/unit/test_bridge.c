/* tests/unit/test_bridge.c - the Studio bridge: the pure helpers (sanitizer, id scanner, routing
 * table, deadlines) and the queue and instance logic under a fake clock, with the blocking calls
 * on their own threads. */
#include "bridge.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the sanitizer ---- */

static const struct {
    const char *in, *out;
} sanitize_rows[] = {
    {"[inf,-inf,nan]", "[null,null,null]"},
    {"{\"a\":inf}", "{\"a\":null}"},
    {"{\"a\": -nan , \"b\":1}", "{\"a\": null , \"b\":1}"},
    {"[Infinity,-Infinity,NaN]", "[null,null,null]"},
    {"{\"a\":\"inf nan -inf\"}", "{\"a\":\"inf nan -inf\"}"},
    {"{\"a\":\"x\\\"inf\"}", "{\"a\":\"x\\\"inf\"}"},
    {"{\"inf\":\"nan\"}", "{\"inf\":\"nan\"}"},
    {"[1e5,-2,0.5,true,false,null]", "[1e5,-2,0.5,true,false,null]"},
    {"[info]", "[info]"},
    {"{\"a\":\"\\\\\",\"b\":inf}", "{\"a\":\"\\\\\",\"b\":null}"},
    {"inf", "null"},
    {"", ""},
};

START_TEST(test_bridge_sanitize_replaces_nonfinite_outside_strings)
{
    const char *in = sanitize_rows[_i].in;
    size_t n = 0;
    char *out = bridge_json_sanitize(in, strlen(in), &n);

    ck_assert_ptr_nonnull(out);
    ck_assert_str_eq(out, sanitize_rows[_i].out);
    ck_assert_uint_eq(n, strlen(sanitize_rows[_i].out));
    free(out);
}
END_TEST

/* ---- the id scanner ---- */

static const struct {
    const char *in;
    const char *id; /* NULL: not found */
} scan_rows[] = {
    {"{\"id\":\"abc-1\",\"ok\":true,\"result\":\"x\"}", "abc-1"},
    {"{\"ok\":true,\"result\":{\"id\":\"inner\",\"s\":\"\\\"id\\\":\\\"no\\\"\"},\"id\":\"outer\"}",
     "outer"},
    {"{\"result\":[{\"id\":\"a\"},{\"id\":\"b\"}],\"id\":\"c\"}", "c"},
    {"{\"result\":\"id\",\"x\":\"id\"}", NULL},
    {"{\"i\\u0064\":\"z\"}", NULL},
    {"{\"id\":12}", NULL},
    {"[\"id\",\"x\"]", NULL},
    {"{ \"id\" : \"spaced\" }", "spaced"},
    /* The first "id" member decides, as cJSON_GetObjectItem does on a parsed body. */
    {"{\"id\":\"first\",\"ok\":true,\"id\":\"second\"}", "first"},
    {"{\"id\":\"a\",\"id\":"
     "\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"}",
     "a"},
    {"{\"id\":\"bad id\",\"id\":\"good\"}", NULL},
    {"{\"id\":12,\"id\":\"good\"}", NULL},
    {"{\"id\" : [\"x\"], \"id\":\"good\"}", NULL},
    {"{\"id\":null,\"ok\":true,\"id\":\"good\"}", NULL},
    /* Only the first top-level value is the result. */
    {"{\"id\":\"a\"}{\"id\":\"b\"}", "a"},
    {"{\"ok\":true}{\"id\":\"b\"}", NULL},
    {"{\"ok\":true},{\"id\":\"b\"}", NULL},
};

START_TEST(test_bridge_idscan_finds_top_level_id)
{
    const char *in = scan_rows[_i].in;
    struct bridge_idscan whole, bytes;

    bridge_idscan_init(&whole);
    bridge_idscan_feed(&whole, in, strlen(in));
    bridge_idscan_init(&bytes);
    for (size_t k = 0; in[k]; k++)
        bridge_idscan_feed(&bytes, in + k, 1);
    ck_assert(whole.found == (scan_rows[_i].id != NULL));
    ck_assert(bytes.found == whole.found);
    if (scan_rows[_i].id) {
        ck_assert_str_eq(whole.id, scan_rows[_i].id);
        ck_assert_str_eq(bytes.id, scan_rows[_i].id);
    }
}
END_TEST

/* ---- the routing table, deadlines, names ---- */

START_TEST(test_bridge_routing_table)
{
    ck_assert_uint_eq(bridge_tool_roles("run_script_in_play_mode"),
                      BRIDGE_TO_EDIT | BRIDGE_TO_SERVER);
    ck_assert_uint_eq(bridge_tool_roles("stop_play"), BRIDGE_TO_EDIT | BRIDGE_TO_SERVER);
    ck_assert_uint_eq(bridge_tool_roles("get_studio_mode"), BRIDGE_TO_EDIT | BRIDGE_TO_SERVER);
    ck_assert_uint_eq(bridge_tool_roles("set_property"), BRIDGE_TO_EDIT);
    ck_assert_uint_eq(bridge_tool_roles("start_play"), BRIDGE_TO_EDIT);
    ck_assert_uint_eq(bridge_tool_roles(""), BRIDGE_TO_EDIT);
}
END_TEST

START_TEST(test_bridge_deadline_for_play_mode_uses_timeout)
{
    cJSON *args = cJSON_Parse("{\"code\":\"print(1)\",\"timeout\":30}");
    cJSON *none = cJSON_Parse("{\"code\":\"print(1)\"}");
    cJSON *bad = cJSON_Parse("{\"timeout\":-5}");

    ck_assert_int_eq(bridge_deadline_for("run_script_in_play_mode", args, 110000),
                     30000 + BRIDGE_PLAY_MARGIN_MS);
    ck_assert_int_eq(bridge_deadline_for("run_script_in_play_mode", none, 110000), 110000);
    ck_assert_int_eq(bridge_deadline_for("run_script_in_play_mode", bad, 110000), 110000);
    ck_assert_int_eq(bridge_deadline_for("execute_luau", args, 110000), 110000);
    ck_assert_int_eq(bridge_deadline_for("run_script_in_play_mode", NULL, 5000), 5000);
    cJSON_Delete(args);
    cJSON_Delete(none);
    cJSON_Delete(bad);
}
END_TEST

START_TEST(test_bridge_names_and_ids)
{
    ck_assert_int_eq(bridge_parse_role("edit"), BRIDGE_ROLE_EDIT);
    ck_assert_int_eq(bridge_parse_role("server"), BRIDGE_ROLE_SERVER);
    ck_assert_int_eq(bridge_parse_role("client"), BRIDGE_ROLE_CLIENT);
    ck_assert_int_eq(bridge_parse_role("Edit"), -1);
    ck_assert_int_eq(bridge_parse_role(NULL), -1);
    ck_assert_str_eq(bridge_role_name(BRIDGE_ROLE_SERVER), "server");
    ck_assert(bridge_id_ok("{8F2C-aa}.x_1:2"));
    ck_assert(!bridge_id_ok(""));
    ck_assert(!bridge_id_ok("a b"));
    ck_assert(!bridge_id_ok("a\"b"));
    ck_assert(!bridge_id_ok(NULL));
    char long_id[BRIDGE_ID_MAX + 1];
    memset(long_id, 'a', BRIDGE_ID_MAX);
    long_id[BRIDGE_ID_MAX] = '\0';
    ck_assert(!bridge_id_ok(long_id));
    long_id[BRIDGE_ID_MAX - 1] = '\0';
    ck_assert(bridge_id_ok(long_id));
}
END_TEST

/* ---- the queue under a fake clock ---- */

static _Atomic int64_t fake_now;
static const char *place_of_polls = "1"; /* the place poll_until_command reports */
static struct bridge *b;

static int64_t fake_clock(void *arg)
{
    (void)arg;
    return atomic_load(&fake_now);
}

#define STALE    20000
#define DEADLINE 110000

static void setup(void)
{
    struct bridge_options opt = {.poll_window_ms = 100, /* fake ms, slept for real */
                                 .stale_ms = STALE,
                                 .deadline_ms = DEADLINE,
                                 .queue_max = 3,
                                 .clock_ms = fake_clock};

    atomic_store(&fake_now, 1000000);
    place_of_polls = "1";
    b = bridge_new(&opt, NULL);
    ck_assert_ptr_nonnull(b);
}

static void teardown(void)
{
    bridge_shutdown(b);
    bridge_free(b);
    b = NULL;
}

static void advance(int64_t ms)
{
    atomic_fetch_add(&fake_now, ms);
    bridge_wake(b);
}

struct call {
    pthread_t tid;
    const char *id, *tool;
    const char *client; /* NULL: unnamed */
    atomic_bool done;   /* call_thread returned */
    cJSON *args;
    struct bridge_reply rep;
    int rc;
};

static void *call_thread(void *arg)
{
    struct call *c = arg;

    c->rc = bridge_call_for(b, c->id, c->client, c->tool, c->args, &c->rep);
    atomic_store(&c->done, true);
    return NULL;
}

static void start_call(struct call *c, const char *id, const char *tool)
{
    memset(c, 0, sizeof(*c));
    c->id = id;
    c->tool = tool;
    c->args = cJSON_Parse("{\"path\":\"Workspace\"}");
    ck_assert_int_eq(pthread_create(&c->tid, NULL, call_thread, c), 0);
}

static void end_call(struct call *c)
{
    pthread_join(c->tid, NULL);
    cJSON_Delete(c->args);
}

/* One poll by inst (role edit unless given); returns what bridge_poll returned. */
static int poll_as(const char *inst, enum bridge_role role, const char *place,
                   struct bridge_command *cmd)
{
    struct bridge_instance_info info = {.id = inst, .role = role, .place = place, .name = "P"};

    return bridge_poll(b, &info, cmd, NULL);
}

/* Polls as inst until a command arrives (the call thread may not have queued it yet). */
static void poll_until_command(const char *inst, enum bridge_role role, struct bridge_command *cmd)
{
    for (int i = 0; i < 20; i++)
        if (poll_as(inst, role, place_of_polls, cmd) == 1)
            return;
    ck_abort_msg("no command arrived for %s", inst);
}

static int queue_depth(void)
{
    cJSON *st = bridge_status_json(b);
    int d = cJSON_GetObjectItem(st, "queue_depth")->valueint;

    cJSON_Delete(st);
    return d;
}

/* Waits until the queue holds want commands, however long the other thread takes on a loaded
 * machine (ctest's timeout bounds a hang). */
static void wait_depth(int want)
{
    while (queue_depth() != want)
        usleep(1000);
}

START_TEST(test_bridge_call_without_studio_fails_at_once)
{
    struct bridge_reply rep;

    ck_assert_int_eq(bridge_call(b, "c1", "get_place_info", NULL, &rep), -1);
    ck_assert(!rep.ok);
    ck_assert_int_eq(rep.kind, ERR_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(rep.data, "click Connect"));
    ck_assert_ptr_nonnull(strstr(rep.data, "docs/plugin.md"));
    bridge_reply_cleanup(&rep);
}
END_TEST

START_TEST(test_bridge_round_trip_and_at_most_once)
{
    struct bridge_command cmd, again;
    struct call c;

    ck_assert_int_eq(poll_as("A", BRIDGE_ROLE_EDIT, "1", &cmd), 0); /* registers; window ends */
    start_call(&c, "c1", "get_instance_children");
    poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd);
    ck_assert_str_eq(cmd.id, "c1");
    ck_assert_str_eq(cmd.tool, "get_instance_children");
    ck_assert_str_eq(cmd.args_json, "{\"path\":\"Workspace\"}");
    /* Never handed out twice. */
    ck_assert_int_eq(poll_as("A", BRIDGE_ROLE_EDIT, "1", &again), 0);
    ck_assert_int_eq(bridge_result(b, "c1", true, "[1,2]", 5, true), BRIDGE_RESULT_ACCEPTED);
    end_call(&c);
    ck_assert_int_eq(c.rc, 0);
    ck_assert(c.rep.ok);
    ck_assert(c.rep.is_json);
    ck_assert_str_eq(c.rep.data, "[1,2]");
    /* The same answer again, and one nobody asked for, are ignored. */
    ck_assert_int_eq(bridge_result(b, "c1", true, "[1,2]", 5, true), BRIDGE_RESULT_FINISHED);
    ck_assert_int_eq(bridge_result(b, "nope", true, "1", 1, true), BRIDGE_RESULT_UNKNOWN);
    ck_assert_int_eq(queue_depth(), 0);
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);
}
END_TEST

static void start_call_args(struct call *c, const char *id, const char *tool, const char *args)
{
    memset(c, 0, sizeof(*c));
    c->id = id;
    c->tool = tool;
    c->args = cJSON_Parse(args);
    ck_assert_int_eq(pthread_create(&c->tid, NULL, call_thread, c), 0);
}

/* Retry safety: a repeat with the same operation_id gets the first answer (marked replayed)
 * without reaching the plugin again; the plugin never sees operation_id; the plugin's own
 * failure is kept too; another tool with the same id is another operation. */
START_TEST(test_bridge_operation_id_answers_a_repeat_without_applying_it)
{
    struct bridge_command cmd, none;
    struct call c;
    struct bridge_reply rep;
    cJSON *args = cJSON_Parse("{\"path\":\"Workspace.P\",\"operation_id\":\"op-1\"}");

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &none);
    start_call_args(&c, "c1", "delete_object",
                    "{\"path\":\"Workspace.P\",\"operation_id\":\"op-1\"}");
    poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd);
    ck_assert_str_eq(cmd.args_json, "{\"path\":\"Workspace.P\"}");
    bridge_result(b, "c1", true, "{\"deleted\":\"Workspace.P\"}", 25, true);
    end_call(&c);
    ck_assert_int_eq(c.rc, 0);
    ck_assert_str_eq(c.rep.data, "{\"deleted\":\"Workspace.P\"}");
    bridge_reply_cleanup(&c.rep);
    bridge_command_cleanup(&cmd);
    /* The repeat: answered at once, nothing queued for the plugin. */
    ck_assert_int_eq(bridge_call(b, "c2", "delete_object", args, &rep), 0);
    ck_assert_str_eq(rep.data, "{\"replayed\":true,\"deleted\":\"Workspace.P\"}");
    ck_assert_int_eq(queue_depth(), 0);
    bridge_reply_cleanup(&rep);
    /* Another tool with the same id is not a repeat. */
    start_call_args(&c, "c3", "set_property",
                    "{\"path\":\"Workspace.P\",\"operation_id\":\"op-1\"}");
    poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd);
    bridge_result(b, "c3", false, "no such property", 16, false);
    end_call(&c);
    ck_assert_int_eq(c.rc, -1);
    bridge_reply_cleanup(&c.rep);
    bridge_command_cleanup(&cmd);
    cJSON_Delete(args);
    args = cJSON_Parse("{\"path\":\"Workspace.P\",\"operation_id\":\"op-1\"}");
    ck_assert_int_eq(bridge_call(b, "c4", "set_property", args, &rep), -1);
    ck_assert_str_eq(rep.data, "no such property"); /* the plugin's answer, kept */
    bridge_reply_cleanup(&rep);
    cJSON_Delete(args);
}
END_TEST

/* A failure without the plugin's answer (nobody connected) is not remembered: the repeat runs. */
START_TEST(test_bridge_operation_id_failed_unanswered_may_be_repeated)
{
    struct bridge_command cmd, none;
    struct bridge_reply rep;
    struct call c;
    cJSON *args = cJSON_Parse("{\"operation_id\":\"op-9\"}");

    ck_assert_int_eq(bridge_call(b, "c1", "undo", args, &rep), -1);
    ck_assert_ptr_nonnull(strstr(rep.data, "not connected"));
    bridge_reply_cleanup(&rep);
    poll_as("A", BRIDGE_ROLE_EDIT, "1", &none);
    start_call_args(&c, "c2", "undo", "{\"operation_id\":\"op-9\"}");
    poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd);
    ck_assert_str_eq(cmd.id, "c2");
    bridge_result(b, "c2", true, "{}", 2, true);
    end_call(&c);
    ck_assert_str_eq(c.rep.data, "{}");
    bridge_reply_cleanup(&c.rep);
    bridge_command_cleanup(&cmd);
    cJSON_Delete(args);
}
END_TEST

/* Calls that wait behind others for the same Studio say how many came first. */
START_TEST(test_bridge_answer_says_how_many_calls_were_ahead)
{
    struct bridge_command first, second, none;
    struct call a, c;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &none);
    start_call(&a, "c1", "set_property");
    wait_depth(1);
    start_call(&c, "c2", "set_property");
    wait_depth(2);
    poll_until_command("A", BRIDGE_ROLE_EDIT, &first);
    poll_until_command("A", BRIDGE_ROLE_EDIT, &second);
    ck_assert_str_eq(first.id, "c1");
    bridge_result(b, "c1", true, "{\"x\":1}", 7, true);
    bridge_result(b, "c2", true, "{\"x\":2}", 7, true);
    end_call(&a);
    end_call(&c);
    ck_assert_str_eq(a.rep.data, "{\"x\":1}");
    ck_assert_str_eq(c.rep.data, "{\"queue_ahead\":1,\"x\":2}");
    bridge_reply_cleanup(&a.rep);
    bridge_reply_cleanup(&c.rep);
    bridge_command_cleanup(&first);
    bridge_command_cleanup(&second);
}
END_TEST

static void start_call_from(struct call *c, const char *id, const char *client)
{
    memset(c, 0, sizeof(*c));
    c->id = id;
    c->tool = "set_property";
    c->client = client;
    c->args = cJSON_Parse("{\"path\":\"Workspace\"}");
    ck_assert_int_eq(pthread_create(&c->tid, NULL, call_thread, c), 0);
}

/* Two clients, one Studio: client b's one call goes before client a's second, though it came
 * after it (round robin between clients, not first come first served); queue_ahead counts the
 * calls that actually went first. */
START_TEST(test_bridge_clients_take_turns)
{
    struct bridge_command cmd[3], none;
    struct call a1, a2, b1;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &none);
    start_call_from(&a1, "a1", "mcp:1");
    wait_depth(1);
    start_call_from(&a2, "a2", "mcp:1");
    wait_depth(2);
    start_call_from(&b1, "b1", "mcp:2");
    wait_depth(3);
    for (int i = 0; i < 3; i++)
        poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd[i]);
    ck_assert_str_eq(cmd[0].id, "a1");
    ck_assert_str_eq(cmd[1].id, "b1");
    ck_assert_str_eq(cmd[2].id, "a2");
    for (int i = 0; i < 3; i++) {
        bridge_result(b, cmd[i].id, true, "{}", 2, true);
        bridge_command_cleanup(&cmd[i]);
    }
    end_call(&a1);
    end_call(&a2);
    end_call(&b1);
    ck_assert_str_eq(a1.rep.data, "{}");
    ck_assert_str_eq(b1.rep.data, "{\"queue_ahead\":1}");
    ck_assert_str_eq(a2.rep.data, "{\"queue_ahead\":2}");
    bridge_reply_cleanup(&a1.rep);
    bridge_reply_cleanup(&a2.rep);
    bridge_reply_cleanup(&b1.rep);
}
END_TEST

/* Unnamed callers (NULL and "") share one turn: a named client's call goes between them. */
START_TEST(test_bridge_unnamed_callers_share_a_turn)
{
    struct bridge_command cmd[3], none;
    struct call u1, u2, n1;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &none);
    start_call_from(&u1, "u1", NULL);
    wait_depth(1);
    start_call_from(&u2, "u2", "");
    wait_depth(2);
    start_call_from(&n1, "n1", "http:runbox-1");
    wait_depth(3);
    for (int i = 0; i < 3; i++)
        poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd[i]);
    ck_assert_str_eq(cmd[0].id, "u1");
    ck_assert_str_eq(cmd[1].id, "n1");
    ck_assert_str_eq(cmd[2].id, "u2");
    for (int i = 0; i < 3; i++) {
        bridge_result(b, cmd[i].id, true, "{}", 2, true);
        bridge_command_cleanup(&cmd[i]);
    }
    end_call(&u1);
    end_call(&u2);
    end_call(&n1);
    bridge_reply_cleanup(&u1.rep);
    bridge_reply_cleanup(&u2.rep);
    bridge_reply_cleanup(&n1.rep);
}
END_TEST

/* A repeat that waits behind its operation_id's first call (still running in Studio) ends at
 * once when it is cancelled, sending nothing; the first call still gets its answer. */
START_TEST(test_bridge_cancel_ends_a_waiting_repeat)
{
    struct bridge_command cmd, none;
    struct call first, repeat;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &none);
    start_call_args(&first, "c1", "delete_object", "{\"path\":\"W.P\",\"operation_id\":\"op-7\"}");
    poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd);
    start_call_args(&repeat, "c2", "delete_object", "{\"path\":\"W.P\",\"operation_id\":\"op-7\"}");
    /* The repeat waits in the operation table, not in the queue: cancel it once it waits (a
     * cancel that comes first is kept too, so either way the repeat must end cancelled). A
     * cancel before the claim returns false and is remembered; the loop then ends when the
     * repeat has ended (cancelled at its claim). */
    while (!bridge_cancel(b, "c2") && !atomic_load(&repeat.done))
        usleep(1000);
    end_call(&repeat);
    ck_assert_int_eq(repeat.rc, -1);
    ck_assert_int_eq(repeat.rep.kind, ERR_CANCELLED);
    ck_assert_ptr_nonnull(strstr(repeat.rep.data, "cancelled while waiting"));
    ck_assert_ptr_nonnull(strstr(repeat.rep.data, "op-7"));
    ck_assert_int_eq(queue_depth(), 1); /* only the first call's command */
    bridge_result(b, "c1", true, "{\"deleted\":true}", 16, true);
    end_call(&first);
    ck_assert_str_eq(first.rep.data, "{\"deleted\":true}");
    bridge_reply_cleanup(&first.rep);
    bridge_reply_cleanup(&repeat.rep);
    bridge_command_cleanup(&cmd);
}
END_TEST

/* A cancel that comes before its call reached the bridge (the cancel hook ran first) is not
 * lost: the call fails as cancelled and nothing is queued. */
START_TEST(test_bridge_cancel_before_the_call_is_kept)
{
    struct bridge_command none;
    struct bridge_reply rep;
    cJSON *args = cJSON_Parse("{\"path\":\"Workspace\"}");

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &none);
    ck_assert(!bridge_cancel(b, "c5"));
    ck_assert_int_eq(bridge_call(b, "c5", "set_property", args, &rep), -1);
    ck_assert_int_eq(rep.kind, ERR_CANCELLED);
    ck_assert_ptr_nonnull(strstr(rep.data, "nothing was sent"));
    ck_assert_int_eq(queue_depth(), 0);
    ck_assert_int_eq(poll_as("A", BRIDGE_ROLE_EDIT, "1", &none), 0);
    bridge_reply_cleanup(&rep);
    cJSON_Delete(args);
}
END_TEST

START_TEST(test_bridge_plugin_error_is_passed_uncut)
{
    struct bridge_command cmd;
    struct call c;
    char msg[600];

    memset(msg, 'x', sizeof(msg) - 1);
    msg[sizeof(msg) - 1] = '\0';
    memcpy(msg, "Workspace.Nope: no child", 24);
    poll_as("A", BRIDGE_ROLE_EDIT, "1", &cmd);
    start_call(&c, "c1", "delete_object");
    poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd);
    ck_assert_int_eq(bridge_result(b, "c1", false, msg, strlen(msg), false),
                     BRIDGE_RESULT_ACCEPTED);
    end_call(&c);
    ck_assert_int_eq(c.rc, -1);
    ck_assert_int_eq(c.rep.kind, ERR_INVALID);
    ck_assert_str_eq(c.rep.data, msg);
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);
}
END_TEST

START_TEST(test_bridge_result_for_queued_command_is_not_accepted)
{
    struct bridge_command cmd;
    struct call c;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &cmd);
    start_call(&c, "c1", "get_selection");
    wait_depth(1);
    ck_assert_int_eq(bridge_result(b, "c1", true, "1", 1, true), BRIDGE_RESULT_NOT_SENT);
    poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd);
    ck_assert_int_eq(bridge_result(b, "c1", true, "2", 1, true), BRIDGE_RESULT_ACCEPTED);
    end_call(&c);
    ck_assert_str_eq(c.rep.data, "2");
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);
}
END_TEST

START_TEST(test_bridge_holder_that_stops_polling_fails_the_call)
{
    struct bridge_command cmd;
    struct call c;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &cmd);
    start_call(&c, "c1", "set_property");
    poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd);
    advance(STALE - 1); /* still alive: the call waits on */
    usleep(20000);
    ck_assert_int_eq(queue_depth(), 1);
    advance(1);
    end_call(&c);
    ck_assert_int_eq(c.rc, -1);
    ck_assert_int_eq(c.rep.kind, ERR_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(c.rep.data, "sent to Studio, no answer"));
    ck_assert_ptr_nonnull(strstr(c.rep.data, "it may have been applied; read back before"));
    /* The instance is gone: the next call fails at once. */
    bridge_reply_cleanup(&c.rep);
    ck_assert_int_eq(bridge_call(b, "c2", "set_property", NULL, &c.rep), -1);
    ck_assert_ptr_nonnull(strstr(c.rep.data, "not connected"));
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);
}
END_TEST

START_TEST(test_bridge_polling_keeps_the_holder_alive)
{
    struct bridge_command cmd, none;
    struct call c;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &cmd);
    start_call(&c, "c1", "execute_luau");
    poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd);
    for (int i = 0; i < 5; i++) { /* 75 s of a busy plugin that keeps polling */
        advance(15000);
        ck_assert_int_eq(poll_as("A", BRIDGE_ROLE_EDIT, "1", &none), 0);
    }
    ck_assert_int_eq(queue_depth(), 1);
    ck_assert_int_eq(bridge_result(b, "c1", true, "done", 4, false), BRIDGE_RESULT_ACCEPTED);
    end_call(&c);
    ck_assert_int_eq(c.rc, 0);
    ck_assert(!c.rep.is_json);
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);
}
END_TEST

START_TEST(test_bridge_deadline_passes)
{
    struct bridge_command cmd, none;
    struct call c;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &cmd);
    start_call(&c, "c1", "insert_model");
    poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd);
    for (int64_t t = 0; t < DEADLINE; t += 10000) {
        advance(10000);
        poll_as("A", BRIDGE_ROLE_EDIT, "1", &none);
    }
    end_call(&c);
    ck_assert_int_eq(c.rc, -1);
    ck_assert_int_eq(c.rep.kind, ERR_TIMEOUT);
    ck_assert_ptr_nonnull(strstr(c.rep.data, "no answer within 110 s"));
    ck_assert_int_eq(bridge_result(b, "c1", true, "1", 1, true), BRIDGE_RESULT_FINISHED);
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);
}
END_TEST

START_TEST(test_bridge_queued_command_of_a_vanished_instance_was_not_sent)
{
    struct bridge_command cmd;
    struct call c;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &cmd);
    start_call(&c, "c1", "get_tags");
    wait_depth(1);
    advance(STALE);
    end_call(&c);
    ck_assert_int_eq(c.rc, -1);
    ck_assert_ptr_nonnull(strstr(c.rep.data, "nothing was sent"));
    bridge_reply_cleanup(&c.rep);
}
END_TEST

START_TEST(test_bridge_disconnect_fails_commands_at_once)
{
    struct bridge_command cmd;
    struct call c;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &cmd);
    start_call(&c, "c1", "create_object");
    poll_until_command("A", BRIDGE_ROLE_EDIT, &cmd);
    ck_assert_int_eq(bridge_disconnect(b, "A"), 1);
    end_call(&c);
    ck_assert_int_eq(c.rc, -1);
    ck_assert_ptr_nonnull(strstr(c.rep.data, "disconnected"));
    ck_assert_ptr_nonnull(strstr(c.rep.data, "may have been applied"));
    ck_assert_int_eq(bridge_disconnect(b, "A"), -1);
    ck_assert_int_eq(bridge_result(b, "c1", true, "1", 1, true), BRIDGE_RESULT_FINISHED);
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);
}
END_TEST

START_TEST(test_bridge_poll_right_after_disconnect_does_not_register)
{
    struct bridge_command none;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &none);
    ck_assert_int_eq(bridge_disconnect(b, "A"), 0);
    /* A poll sent before the disconnect but served after it: held, not registered. */
    ck_assert_int_eq(poll_as("A", BRIDGE_ROLE_EDIT, "1", &none), 0);
    cJSON *st = bridge_status_json(b);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "instances")), 0);
    cJSON_Delete(st);
    advance(2000); /* reconnecting later works */
    poll_as("A", BRIDGE_ROLE_EDIT, "1", &none);
    st = bridge_status_json(b);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "instances")), 1);
    cJSON_Delete(st);
}
END_TEST

START_TEST(test_bridge_queue_is_capped)
{
    struct bridge_command cmd;
    struct call c[3];
    struct bridge_reply rep;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &cmd);
    start_call(&c[0], "c0", "get_tags");
    start_call(&c[1], "c1", "get_tags");
    start_call(&c[2], "c2", "get_tags");
    wait_depth(3);
    ck_assert_int_eq(bridge_call(b, "c3", "get_tags", NULL, &rep), -1);
    ck_assert_ptr_nonnull(strstr(rep.data, "queue is full"));
    bridge_reply_cleanup(&rep);
    ck_assert_int_eq(bridge_disconnect(b, "A"), 3);
    for (int i = 0; i < 3; i++) {
        end_call(&c[i]);
        ck_assert_ptr_nonnull(strstr(c[i].rep.data, "nothing was sent"));
        bridge_reply_cleanup(&c[i].rep);
    }
}
END_TEST

START_TEST(test_bridge_first_edit_is_active_and_can_be_switched)
{
    struct bridge_command cmd, none;
    struct errinfo err = {0};
    struct call c;
    cJSON *st;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &none);
    poll_as("B", BRIDGE_ROLE_EDIT, "2", &none);
    poll_as("S", BRIDGE_ROLE_SERVER, "1", &none);
    st = bridge_status_json(b);
    ck_assert_str_eq(cJSON_GetObjectItem(st, "active")->valuestring, "A");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "instances")), 3);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(st, "connected")));
    cJSON_Delete(st);

    ck_assert_int_eq(bridge_set_active(b, "B", &err), 0);
    start_call(&c, "c1", "get_place_info");
    wait_depth(1);
    ck_assert_int_eq(poll_as("A", BRIDGE_ROLE_EDIT, "1", &none), 0);
    ck_assert_int_eq(poll_as("S", BRIDGE_ROLE_SERVER, "1", &none), 0);
    poll_until_command("B", BRIDGE_ROLE_EDIT, &cmd);
    ck_assert_str_eq(cmd.id, "c1");
    bridge_result(b, "c1", true, "1", 1, true);
    end_call(&c);
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);

    ck_assert_int_eq(bridge_set_active(b, "S", &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    errinfo_clear(&err);
    ck_assert_int_eq(bridge_set_active(b, "Z", &err), -1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(err.msg, "A (edit)"));
}
END_TEST

START_TEST(test_bridge_active_moves_on_when_it_goes)
{
    struct bridge_command none;
    cJSON *st;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &none);
    advance(10000);
    poll_as("B", BRIDGE_ROLE_EDIT, "2", &none);
    advance(STALE - 5000); /* A is stale, B is not */
    st = bridge_status_json(b);
    ck_assert_str_eq(cJSON_GetObjectItem(st, "active")->valuestring, "B");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(st, "instances")), 1);
    cJSON_Delete(st);
    advance(10000);
    st = bridge_status_json(b);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(st, "active")));
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(st, "connected")));
    cJSON_Delete(st);
}
END_TEST

START_TEST(test_bridge_play_tools_go_to_the_play_server)
{
    struct bridge_command cmd, none;
    struct call c;

    place_of_polls = "7";
    poll_as("E", BRIDGE_ROLE_EDIT, "7", &none);
    poll_as("C", BRIDGE_ROLE_CLIENT, "7", &none);
    /* No play test: stop_play goes to the edit instance. */
    start_call(&c, "c1", "stop_play");
    poll_until_command("E", BRIDGE_ROLE_EDIT, &cmd);
    bridge_result(b, "c1", true, "1", 1, true);
    end_call(&c);
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);
    /* A play test of the same place runs: its server takes play tools, the edit the rest. */
    poll_as("S", BRIDGE_ROLE_SERVER, "7", &none);
    start_call(&c, "c2", "run_script_in_play_mode");
    wait_depth(1);
    ck_assert_int_eq(poll_as("E", BRIDGE_ROLE_EDIT, "7", &none), 0);
    ck_assert_int_eq(poll_as("C", BRIDGE_ROLE_CLIENT, "7", &none), 0);
    poll_until_command("S", BRIDGE_ROLE_SERVER, &cmd);
    ck_assert_str_eq(cmd.id, "c2");
    bridge_result(b, "c2", true, "1", 1, true);
    end_call(&c);
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);
    start_call(&c, "c3", "set_property");
    wait_depth(1);
    ck_assert_int_eq(poll_as("S", BRIDGE_ROLE_SERVER, "7", &none), 0);
    poll_until_command("E", BRIDGE_ROLE_EDIT, &cmd);
    bridge_result(b, "c3", true, "1", 1, true);
    end_call(&c);
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);
}
END_TEST

/* One poll with a parent (a test server of the edit window `parent`). */
static int poll_child(const char *inst, const char *place, const char *parent,
                      struct bridge_command *cmd)
{
    struct bridge_instance_info info = {
        .id = inst, .role = BRIDGE_ROLE_SERVER, .place = place, .name = "P", .parent = parent};

    return bridge_poll(b, &info, cmd, NULL);
}

/* F16: two unpublished windows share place id 0; window B's test server must not get window
 * A's play-mode commands. */
START_TEST(test_bridge_play_tools_follow_the_parent_window)
{
    struct bridge_command cmd, none;
    struct call c;
    struct errinfo err = {0};

    place_of_polls = "0";
    poll_as("A", BRIDGE_ROLE_EDIT, "0", &none);
    poll_as("B", BRIDGE_ROLE_EDIT, "0", &none);
    poll_child("SB", "0", "B", &none); /* B's test server connected first */
    poll_child("SA", "0", "A", &none);
    start_call(&c, "c1", "stop_play"); /* A is active (first) */
    wait_depth(1);
    ck_assert_int_eq(poll_child("SB", "0", "B", &none), 0);
    for (int i = 0; i < 20 && poll_child("SA", "0", "A", &cmd) != 1; i++)
        ;
    ck_assert_str_eq(cmd.id, "c1");
    bridge_result(b, "c1", true, "1", 1, true);
    end_call(&c);
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);
    ck_assert_int_eq(bridge_set_active(b, "B", &err), 0);
    start_call(&c, "c2", "get_studio_mode");
    wait_depth(1);
    ck_assert_int_eq(poll_child("SA", "0", "A", &none), 0);
    for (int i = 0; i < 20 && poll_child("SB", "0", "B", &cmd) != 1; i++)
        ;
    ck_assert_str_eq(cmd.id, "c2");
    bridge_result(b, "c2", true, "1", 1, true);
    end_call(&c);
    bridge_command_cleanup(&cmd);
    bridge_reply_cleanup(&c.rep);
}
END_TEST

static bool listed(const char *id)
{
    cJSON *st = bridge_status_json(b);
    const cJSON *in;
    bool found = false;

    cJSON_ArrayForEach(in, cJSON_GetObjectItem(st, "instances"))
    {
        found = found || strcmp(cJSON_GetObjectItem(in, "id")->valuestring, id) == 0;
    }
    cJSON_Delete(st);
    return found;
}

/* F15: a reloaded plugin's old instance (same place and name, idle) is replaced by the new one
 * at once, and the commands it held fail as disconnected; a live window of the same place
 * (a poll waiting, or one that just ended) is left alone. */
START_TEST(test_bridge_new_instance_replaces_its_idle_old_self)
{
    struct bridge_command cmd, none;
    struct call c;

    place_of_polls = "5";
    poll_as("OLD", BRIDGE_ROLE_EDIT, "5", &none);
    start_call(&c, "c1", "set_property");
    poll_until_command("OLD", BRIDGE_ROLE_EDIT, &cmd); /* it took a command, then went away */
    bridge_command_cleanup(&cmd);
    poll_as("NEW", BRIDGE_ROLE_EDIT, "5", &none); /* right away: OLD polled just now */
    ck_assert(listed("OLD"));
    advance(BRIDGE_REPLACE_MS);
    poll_as("NEW", BRIDGE_ROLE_EDIT, "5", &none);
    ck_assert(!listed("OLD"));
    end_call(&c);
    ck_assert_int_eq(c.rc, -1);
    ck_assert_ptr_nonnull(strstr(c.rep.data, "replaced by a new plugin instance"));
    bridge_reply_cleanup(&c.rep);
    /* Another place's window is never replaced. */
    poll_as("OTHER", BRIDGE_ROLE_EDIT, "6", &none);
    advance(BRIDGE_REPLACE_MS);
    poll_as("NEW", BRIDGE_ROLE_EDIT, "5", &none);
    ck_assert(listed("OTHER") && listed("NEW"));
}
END_TEST

START_TEST(test_bridge_only_play_instances_get_nothing_for_edit_tools)
{
    struct bridge_command none;
    struct bridge_reply rep;

    poll_as("S", BRIDGE_ROLE_SERVER, "7", &none);
    ck_assert_int_eq(bridge_call(b, "c1", "set_property", NULL, &rep), -1);
    ck_assert_ptr_nonnull(strstr(rep.data, "not connected"));
    bridge_reply_cleanup(&rep);
}
END_TEST

START_TEST(test_bridge_shutdown_ends_waits)
{
    struct bridge_command cmd;
    struct call c;

    poll_as("A", BRIDGE_ROLE_EDIT, "1", &cmd);
    start_call(&c, "c1", "get_tags");
    wait_depth(1);
    bridge_shutdown(b);
    end_call(&c);
    ck_assert_int_eq(c.rc, -1);
    ck_assert_ptr_nonnull(strstr(c.rep.data, "shutting down"));
    ck_assert_int_eq(poll_as("A", BRIDGE_ROLE_EDIT, "1", &cmd), 0);
    bridge_reply_cleanup(&c.rep);
}
END_TEST

START_TEST(test_bridge_poll_rejects_bad_ids_and_too_many_instances)
{
    struct bridge_command none;
    struct errinfo err = {0};
    struct bridge_instance_info bad = {.id = "a b", .role = BRIDGE_ROLE_EDIT};
    char id[16];

    ck_assert_int_eq(bridge_poll(b, &bad, &none, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    for (int i = 0; i < BRIDGE_INSTANCES_MAX; i++) {
        snprintf(id, sizeof(id), "i%d", i);
        struct bridge_instance_info ok = {.id = id, .role = BRIDGE_ROLE_CLIENT};
        /* A client never gets a command, so this only registers it (and waits the window). */
        ck_assert_int_eq(bridge_poll(b, &ok, &none, NULL), 0);
    }
    errinfo_clear(&err);
    struct bridge_instance_info more = {.id = "more", .role = BRIDGE_ROLE_EDIT};
    ck_assert_int_eq(bridge_poll(b, &more, &none, &err), -1);
    ck_assert_int_eq(err.kind, ERR_TOO_LARGE);
}
END_TEST

static Suite *bridge_suite(void)
{
    Suite *s = suite_create("bridge");
    TCase *pure = tcase_create("pure");
    TCase *queue = tcase_create("queue");
    TCase *route = tcase_create("routing");

    tcase_add_loop_test(pure, test_bridge_sanitize_replaces_nonfinite_outside_strings, 0,
                        (int)(sizeof(sanitize_rows) / sizeof(sanitize_rows[0])));
    tcase_add_loop_test(pure, test_bridge_idscan_finds_top_level_id, 0,
                        (int)(sizeof(scan_rows) / sizeof(scan_rows[0])));
    tcase_add_test(pure, test_bridge_routing_table);
    tcase_add_test(pure, test_bridge_deadline_for_play_mode_uses_timeout);
    tcase_add_test(pure, test_bridge_names_and_ids);
    suite_add_tcase(s, pure);

    tcase_add_checked_fixture(queue, setup, teardown);
    tcase_add_test(queue, test_bridge_call_without_studio_fails_at_once);
    tcase_add_test(queue, test_bridge_round_trip_and_at_most_once);
    tcase_add_test(queue, test_bridge_plugin_error_is_passed_uncut);
    tcase_add_test(queue, test_bridge_operation_id_answers_a_repeat_without_applying_it);
    tcase_add_test(queue, test_bridge_operation_id_failed_unanswered_may_be_repeated);
    tcase_add_test(queue, test_bridge_answer_says_how_many_calls_were_ahead);
    tcase_add_test(queue, test_bridge_clients_take_turns);
    tcase_add_test(queue, test_bridge_unnamed_callers_share_a_turn);
    tcase_add_test(queue, test_bridge_cancel_ends_a_waiting_repeat);
    tcase_add_test(queue, test_bridge_cancel_before_the_call_is_kept);
    tcase_add_test(queue, test_bridge_result_for_queued_command_is_not_accepted);
    tcase_add_test(queue, test_bridge_holder_that_stops_polling_fails_the_call);
    tcase_add_test(queue, test_bridge_polling_keeps_the_holder_alive);
    tcase_add_test(queue, test_bridge_deadline_passes);
    tcase_add_test(queue, test_bridge_queued_command_of_a_vanished_instance_was_not_sent);
    tcase_add_test(queue, test_bridge_disconnect_fails_commands_at_once);
    tcase_add_test(queue, test_bridge_queue_is_capped);
    tcase_add_test(queue, test_bridge_poll_right_after_disconnect_does_not_register);
    tcase_add_test(queue, test_bridge_shutdown_ends_waits);
    tcase_add_test(queue, test_bridge_poll_rejects_bad_ids_and_too_many_instances);
    suite_add_tcase(s, queue);

    tcase_add_checked_fixture(route, setup, teardown);
    tcase_add_test(route, test_bridge_first_edit_is_active_and_can_be_switched);
    tcase_add_test(route, test_bridge_active_moves_on_when_it_goes);
    tcase_add_test(route, test_bridge_play_tools_go_to_the_play_server);
    tcase_add_test(route, test_bridge_only_play_instances_get_nothing_for_edit_tools);
    tcase_add_test(route, test_bridge_play_tools_follow_the_parent_window);
    tcase_add_test(route, test_bridge_new_instance_replaces_its_idle_old_self);
    suite_add_tcase(s, route);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(bridge_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
