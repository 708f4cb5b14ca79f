/* tests/unit/test_mcp.c - the MCP engine against a fake back end.
 *
 * The fake records every message the engine sends (each checked to be one line of valid JSON)
 * and every call it is given; a test chooses whether calls are finished inside call_tool or
 * later by the test itself. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "catalog.h"
#include "jsonrpc.h"
#include "mcp_int.h"
#include "runbox/mcp.h"

#define MAX_SENT  1024
#define MAX_CALLS 1024

enum fake_mode { FAKE_LATER, FAKE_SYNC_TEXT, FAKE_SYNC_FAIL };

struct fake {
    enum fake_mode mode;
    cJSON *sent[MAX_SENT]; /* parsed messages, in order */
    struct mcp_route routes[MAX_SENT];
    size_t nsent;
    struct mcp_call *calls[MAX_CALLS]; /* calls given to the tool handler, in order */
    size_t ncalls;
    struct mcp_call *cancelled[MAX_CALLS];
    size_t ncancelled;
    char last_args[512];              /* compact JSON of the last call's arguments */
    char last_text[512];              /* the last message sent, as sent (cut to fit) */
    struct mcp_call *reqs[MAX_CALLS]; /* resources/prompts calls, in order */
    size_t nreqs;
    struct mcp_call *req_cancelled[MAX_CALLS];
    size_t nreq_cancelled;
    bool req_sync; /* answer requests inside the handler with {"method","echo":params} */
    bool closed;   /* the transport's closed callback ran */
};

static struct fake fk;
static struct catalog *cat;
static struct mcp_server *srv;
static struct mcp_session *s;

static const struct mcp_server_info info = {"runbox-test", "9.9.9", NULL, "Use the tools.",
                                            MCP_NOTIFY_TOOLS};

static const char test_catalog[] =
    "{\"group\":\"test\",\"tools\":["
    "{\"name\":\"echo\",\"title\":\"Echo\",\"description\":\"Echoes text.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},"
    "\"n\":{\"type\":\"integer\",\"minimum\":1}},\"required\":[\"text\"],"
    "\"additionalProperties\":false},\"annotations\":{\"readOnlyHint\":true},"
    "\"route\":\"local\"},"
    "{\"name\":\"stat\",\"title\":\"Stat\",\"description\":\"Structured.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{}},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":\"integer\"}}},"
    "\"route\":\"local\"},"
    "{\"name\":\"many\",\"title\":\"Many\",\"description\":\"Ten required arguments.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"},"
    "\"d\":{\"type\":\"string\"},\"e\":{\"type\":\"string\"},\"f\":{\"type\":\"string\"},"
    "\"g\":{\"type\":\"string\"},\"h\":{\"type\":\"string\"},\"i\":{\"type\":\"string\"},"
    "\"j\":{\"type\":\"string\"}},"
    "\"required\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\",\"j\"]},"
    "\"route\":\"local\"}]}";

/* ---- the fake transport and handlers ---- */

static void fake_send(void *ctx, const char *json, size_t len, const struct mcp_route *route)
{
    struct fake *f = ctx;
    cJSON *m;

    ck_assert_ptr_null(memchr(json, '\n', len)); /* stdio framing: one message per line */
    snprintf(f->last_text, sizeof(f->last_text), "%.*s", (int)len, json);
    m = cJSON_ParseWithLength(json, len);
    ck_assert_msg(m != NULL, "sent invalid JSON: %.*s", (int)len, json);
    ck_assert_uint_lt(f->nsent, MAX_SENT);
    f->routes[f->nsent] = *route;
    f->sent[f->nsent++] = m;
}

static void fake_closed(void *ctx)
{
    ((struct fake *)ctx)->closed = true;
}

static const struct mcp_transport fake_transport = {.send = fake_send, .closed = fake_closed};

/* A cancelled call records itself and answers (the engine drops that answer). */
static void fake_cancel_call(struct mcp_call *call, void *arg)
{
    struct fake *f = arg;

    ck_assert_uint_lt(f->ncancelled, MAX_CALLS);
    f->cancelled[f->ncancelled++] = call;
    mcp_call_tool_error(call, "cancelled");
}

static void fake_call_tool(void *arg, struct mcp_call *call)
{
    struct fake *f = arg;
    char *args = cJSON_PrintUnformatted(mcp_call_arguments(call));

    ck_assert_uint_lt(f->ncalls, MAX_CALLS);
    f->calls[f->ncalls++] = call;
    snprintf(f->last_args, sizeof(f->last_args), "%s", args);
    cJSON_free(args);
    if (f->mode == FAKE_SYNC_TEXT)
        mcp_call_result_text(call, "done", 4);
    else if (f->mode == FAKE_SYNC_FAIL)
        mcp_call_tool_error(call, "boom");
    else
        mcp_call_on_cancel(call, fake_cancel_call, f);
}

static void fake_cancel_request(struct mcp_call *call, void *arg)
{
    struct fake *f = arg;

    ck_assert_uint_lt(f->nreq_cancelled, MAX_CALLS);
    f->req_cancelled[f->nreq_cancelled++] = call;
    mcp_call_error(call, -32603, "cancelled", NULL);
}

static void fake_request(void *arg, struct mcp_call *req)
{
    struct fake *f = arg;
    cJSON *res;

    ck_assert_uint_lt(f->nreqs, MAX_CALLS);
    f->reqs[f->nreqs++] = req;
    if (f->req_sync) {
        res = cJSON_CreateObject();
        cJSON_AddStringToObject(res, "method", mcp_call_method(req));
        cJSON_AddItemToObject(res, "echo",
                              mcp_call_params(req) ? cJSON_Duplicate(mcp_call_params(req), true)
                                                   : cJSON_CreateObject());
        mcp_call_result(req, res);
        return;
    }
    mcp_call_on_cancel(req, fake_cancel_request, f);
}

/* A server with the test catalog's tools; with_resources adds the resources and prompts
 * providers and the file:///{path} template. */
static struct mcp_server *make_server(const struct mcp_server_info *si, bool with_resources)
{
    static const struct mcp_resource_template files = {.uri_template = "file:///{path}",
                                                       .name = "Workspace file",
                                                       .read = fake_request,
                                                       .arg = &fk};
    struct errinfo err = {0};
    struct mcp_server *x = mcp_server_new(si, &err);

    ck_assert_msg(x != NULL, "%s", err.msg);
    ck_assert_int_eq(catalog_register_tools(cat, x, fake_call_tool, &fk, &err), 0);
    if (with_resources) {
        ck_assert_int_eq(mcp_server_add_resource_template(x, &files, &err), 0);
        ck_assert_int_eq(mcp_server_set_resource_provider(x, fake_request, fake_request, &fk, &err),
                         0);
        ck_assert_int_eq(mcp_server_set_prompt_provider(x, fake_request, fake_request, &fk, &err),
                         0);
    }
    return x;
}

/* ---- helpers ---- */

static void feed(const char *line)
{
    mcp_session_handle(s, line, strlen(line), NULL);
}

static cJSON *last(void)
{
    ck_assert_uint_gt(fk.nsent, 0);
    return fk.sent[fk.nsent - 1];
}

/* Answers a tool call with a text result. */
static void finish_text(struct mcp_call *c, const char *text)
{
    mcp_call_result_text(c, text, strlen(text));
}

static void clear_sent(void)
{
    for (size_t i = 0; i < fk.nsent; i++)
        cJSON_Delete(fk.sent[i]);
    fk.nsent = 0;
}

static cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static void init_version(const char *version)
{
    char line[256];

    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
             "{\"protocolVersion\":\"%s\",\"capabilities\":{},"
             "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
             version);
    feed(line);
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    ck_assert_uint_eq(fk.nsent, 1);
    ck_assert_str_eq(mcp_session_protocol(s), version);
    clear_sent();
}

static void init(void)
{
    init_version("2025-11-25");
}

/* Asserts that m is a JSON-RPC error with this code whose message contains part. id < 0
 * means the id must be null. */
static void assert_error(const cJSON *m, int code, double id, const char *part)
{
    const cJSON *err = get(m, "error");
    const cJSON *msg = get(err, "message");

    ck_assert_msg(err != NULL, "not an error response");
    ck_assert_int_eq(get(err, "code")->valueint, code);
    if (id < 0)
        ck_assert(cJSON_IsNull(get(m, "id")));
    else
        ck_assert_double_eq(get(m, "id")->valuedouble, id);
    ck_assert(cJSON_IsString(msg));
    ck_assert_msg(strstr(msg->valuestring, part) != NULL, "message \"%s\" lacks \"%s\"",
                  msg->valuestring, part);
}

/* The text block of a tool result; asserts the isError flag. */
static const char *tool_text(const cJSON *m, bool is_error)
{
    const cJSON *res = get(m, "result");
    const cJSON *content = get(res, "content");
    const cJSON *block = cJSON_GetArrayItem(content, 0);

    ck_assert_msg(res != NULL, "not a result");
    ck_assert_int_eq(cJSON_GetArraySize(content), 1);
    ck_assert_str_eq(get(block, "type")->valuestring, "text");
    ck_assert(cJSON_IsBool(get(res, "isError")));
    ck_assert_int_eq(cJSON_IsTrue(get(res, "isError")), is_error);
    return get(block, "text")->valuestring;
}

static void call_echo(int id, const char *text)
{
    char line[512];

    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":"
             "{\"name\":\"echo\",\"arguments\":{\"text\":\"%s\"}}}",
             id, text);
    feed(line);
}

static void setup_catalog(void)
{
    const char *docs[] = {test_catalog};
    struct errinfo err = {0};

    cat = catalog_new(docs, 1, &err);
    ck_assert_msg(cat != NULL, "test catalog: %s", err.msg);
}

static void teardown_catalog(void)
{
    catalog_free(cat);
}

static void setup(void)
{
    memset(&fk, 0, sizeof(fk));
    srv = make_server(&info, true);
    s = mcp_session_new(srv, &fake_transport, &fk, 0, NULL);
    ck_assert_ptr_nonnull(s);
}

static void teardown(void)
{
    if (s)
        mcp_session_close(s);
    ck_assert(fk.closed); /* every call was answered, so the session is gone */
    mcp_server_free(srv);
    clear_sent();
}

/* ---- adding tools ---- */

/* mcp_server_add_tool_parsed takes the trees it is given, on failure too (the ASan stage finds
 * a leak), and refuses what the text form refuses. */
START_TEST(test_mcp_add_tool_parsed_takes_the_trees)
{
    struct errinfo err = {0};
    struct mcp_server *x = mcp_server_new(&info, &err);
    struct mcp_tool t = {.name = "parsed", .handler = fake_call_tool, .arg = &fk};
    size_t before;

    ck_assert_ptr_nonnull(x);
    before = mcp_server_tool_count(x);
    ck_assert_int_eq(mcp_server_add_tool_parsed(x, &t, cJSON_Parse("{\"type\":\"object\"}"), NULL,
                                                cJSON_Parse("{\"readOnlyHint\":true}"), &err),
                     0);
    ck_assert_uint_eq(mcp_server_tool_count(x), before + 1);
    /* the same name again: ERR_EXISTS, and its trees are freed */
    errinfo_clear(&err);
    ck_assert_int_eq(mcp_server_add_tool_parsed(x, &t, cJSON_Parse("{\"type\":\"object\"}"),
                                                cJSON_Parse("{\"type\":\"object\"}"), NULL, &err),
                     -1);
    ck_assert_int_eq(err.kind, ERR_EXISTS);
    /* a schema that is not an object: ERR_INVALID */
    t.name = "parsed_array";
    errinfo_clear(&err);
    ck_assert_int_eq(mcp_server_add_tool_parsed(x, &t, cJSON_Parse("[1]"), NULL, NULL, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "parsed_array"));
    /* a bad name: ERR_INVALID, the trees freed */
    t.name = "bad name";
    errinfo_clear(&err);
    ck_assert_int_eq(mcp_server_add_tool_parsed(x, &t, cJSON_Parse("{}"), NULL, NULL, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    /* no input schema: {"type":"object"}, as with the text form */
    t.name = "parsed_default";
    ck_assert_int_eq(mcp_server_add_tool_parsed(x, &t, NULL, NULL, NULL, &err), 0);
    ck_assert_uint_eq(mcp_server_tool_count(x), before + 2);
    /* removing one keeps the others findable (the sorted index follows) */
    ck_assert_int_eq(mcp_server_remove_tool(x, "parsed", &err), 0);
    ck_assert_int_eq(mcp_server_remove_tool(x, "parsed", &err), -1);
    ck_assert_int_eq(mcp_server_remove_tool(x, "parsed_default", &err), 0);
    ck_assert_uint_eq(mcp_server_tool_count(x), before);
    mcp_server_free(x);
}
END_TEST

/* A tool given as text is listed as the same tool given parsed (compact, the same bytes), and
 * its schema is parsed only when a call first needs it. Bad text is refused with the tool, the
 * field and the byte. */
START_TEST(test_mcp_add_tool_text_is_listed_as_parsed)
{
    static const char in[] = "{ \"type\" : \"object\",\n  \"properties\": {\"n\": "
                             "{\"type\": \"integer\", \"minimum\": 1}}}";
    static const char out[] = "{\"type\": \"object\"}";
    static const char ann[] = "{\"readOnlyHint\": true}";
    struct errinfo err = {0};
    struct mcp_tool t = {.name = "t",
                         .title = "T\n",
                         .description = "d \"q\" caf\xc3\xa9",
                         .input_schema = in,
                         .output_schema = out,
                         .annotations = ann,
                         .handler = fake_call_tool,
                         .arg = &fk};
    struct mcp_server *x = mcp_server_new(&info, &err), *y = mcp_server_new(&info, &err);
    struct jsonbuf a = JSONBUF_INIT(1 << 20), b = JSONBUF_INIT(1 << 20);
    const struct srv_tool *tool;
    const cJSON *schema;

    ck_assert_int_eq(mcp_server_add_tool(x, &t, &err), 0);
    ck_assert_int_eq(mcp_server_add_tool_parsed(y, &t, cJSON_Parse(in), cJSON_Parse(out),
                                                cJSON_Parse(ann), &err),
                     0);
    ck_assert_int_eq(mcp__put_tools_json(x, &a), 0);
    ck_assert_int_eq(mcp__put_tools_json(y, &b), 0);
    ck_assert_str_eq(a.data, b.data);
    ck_assert_ptr_nonnull(strstr(a.data, "\"inputSchema\":{\"type\":\"object\",\"properties\":"));
    pthread_rwlock_rdlock(&x->lock);
    tool = mcp__find_tool(x, "t");
    ck_assert_ptr_null(atomic_load(&tool->input_schema)); /* not parsed yet */
    schema = mcp__tool_schema(x, tool);
    ck_assert(cJSON_IsObject(schema));
    ck_assert_ptr_eq(mcp__tool_schema(x, tool), schema); /* parsed once */
    ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(schema, "properties"));
    pthread_rwlock_unlock(&x->lock);

    t.name = "bad";
    t.input_schema = "{\"type\": object}";
    ck_assert_int_eq(mcp_server_add_tool(x, &t, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "tool bad: inputSchema is not valid JSON at byte 9"), "%s",
                  err.msg);
    t.input_schema = NULL;
    t.annotations = "[true]";
    errinfo_clear(&err);
    ck_assert_int_eq(mcp_server_add_tool(x, &t, &err), -1);
    ck_assert_msg(strstr(err.msg, "tool bad: annotations is not a JSON object"), "%s", err.msg);
    ck_assert_uint_eq(mcp_server_tool_count(x), 1);
    jsonbuf_cleanup(&a);
    jsonbuf_cleanup(&b);
    mcp_server_free(x);
    mcp_server_free(y);
}
END_TEST

/* extra's members are listed after the engine's own fields, the same given as text or parsed;
 * {} adds nothing; a member that would stand in for one of the engine's fields, or text that is
 * not an object, is refused with the tool's name. */
START_TEST(test_mcp_add_tool_extra_is_listed)
{
    struct errinfo err = {0};
    struct mcp_tool t = {.name = "t",
                         .description = "d",
                         .extra = "{ \"_meta\": {\"ui\": {\"resourceUri\": \"ui://t\"}},\n"
                                  "  \"icons\": [{\"src\": \"https://x/i.png\"}] }",
                         .handler = fake_call_tool,
                         .arg = &fk};
    struct mcp_server *x = mcp_server_new(&info, &err), *y = mcp_server_new(&info, &err);
    struct jsonbuf a = JSONBUF_INIT(1 << 20), b = JSONBUF_INIT(1 << 20);
    static const char *const refused[] = {"{\"title\":\"x\"}", "{\"inputSchema\":{}}", "[1]",
                                          "{\"_meta\":"};

    ck_assert_int_eq(mcp_server_add_tool(x, &t, &err), 0);
    ck_assert_int_eq(mcp_server_add_tool_parsed(y, &t, NULL, NULL, NULL, &err), 0);
    t.name = "plain";
    t.extra = "{}";
    ck_assert_int_eq(mcp_server_add_tool(x, &t, &err), 0);
    ck_assert_int_eq(mcp_server_add_tool_parsed(y, &t, NULL, NULL, NULL, &err), 0);
    ck_assert_int_eq(mcp__put_tools_json(x, &a), 0);
    ck_assert_int_eq(mcp__put_tools_json(y, &b), 0);
    ck_assert_str_eq(a.data, b.data);
    ck_assert_str_eq(a.data, "[{\"name\":\"t\",\"description\":\"d\",\"inputSchema\":{\"type\":"
                             "\"object\"},\"_meta\":{\"ui\":{\"resourceUri\":\"ui://t\"}},"
                             "\"icons\":[{\"src\":\"https://x/i.png\"}]},{\"name\":\"plain\","
                             "\"description\":\"d\",\"inputSchema\":{\"type\":\"object\"}}]");
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        t.name = "bad";
        t.extra = refused[i];
        errinfo_clear(&err);
        ck_assert_int_eq(mcp_server_add_tool(x, &t, &err), -1);
        ck_assert_int_eq(err.kind, ERR_INVALID);
        ck_assert_msg(strstr(err.msg, "tool bad: extra"), "%s", err.msg);
        errinfo_clear(&err);
        ck_assert_int_eq(mcp_server_add_tool_parsed(y, &t, NULL, NULL, NULL, &err), -1);
        ck_assert_int_eq(err.kind, ERR_INVALID);
    }
    ck_assert_uint_eq(mcp_server_tool_count(x), 2);
    ck_assert_uint_eq(mcp_server_tool_count(y), 2);
    jsonbuf_cleanup(&a);
    jsonbuf_cleanup(&b);
    mcp_server_free(x);
    mcp_server_free(y);
}
END_TEST

/* ---- lifecycle ---- */

static const struct {
    const char *asked, *answered;
} versions[] = {
    {"2024-11-05", "2024-11-05"}, {"2025-03-26", "2025-03-26"}, {"2025-06-18", "2025-06-18"},
    {"2025-11-25", "2025-11-25"}, {"2099-01-01", "2025-11-25"}, {"", "2025-11-25"},
};

START_TEST(test_mcp_negotiates_version)
{
    char line[256];
    const cJSON *res, *caps;

    snprintf(line, sizeof(line),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
             "{\"protocolVersion\":\"%s\",\"capabilities\":{}}}",
             versions[_i].asked);
    ck_assert_ptr_null(mcp_session_protocol(s));
    feed(line);
    ck_assert_uint_eq(fk.nsent, 1);
    res = get(last(), "result");
    ck_assert_int_eq(get(last(), "id")->valueint, 1);
    ck_assert_str_eq(get(res, "protocolVersion")->valuestring, versions[_i].answered);
    ck_assert_str_eq(mcp_session_protocol(s), versions[_i].answered);
    caps = get(res, "capabilities");
    ck_assert(cJSON_IsTrue(get(get(caps, "tools"), "listChanged")));
    ck_assert(cJSON_IsObject(get(caps, "logging")));
    ck_assert(cJSON_IsObject(get(caps, "resources")));
    ck_assert(cJSON_IsObject(get(caps, "prompts")));
    ck_assert_str_eq(get(get(res, "serverInfo"), "name")->valuestring, "runbox-test");
    ck_assert_str_eq(get(get(res, "serverInfo"), "version")->valuestring, "9.9.9");
    ck_assert_str_eq(get(res, "instructions")->valuestring, "Use the tools.");
}
END_TEST

START_TEST(test_mcp_initialize_without_instructions)
{
    static const struct mcp_server_info bare = {"x", "1", NULL, NULL, 0};
    struct mcp_server *srv2 = make_server(&bare, false);
    struct mcp_session *s2 = mcp_session_new(srv2, &fake_transport, &fk, 0, NULL);
    const char *line = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                       "\"params\":{\"protocolVersion\":\"2025-06-18\"}}";

    mcp_session_handle(s2, line, strlen(line), NULL);
    ck_assert_ptr_null(get(get(last(), "result"), "instructions"));
    mcp_session_close(s2);
    mcp_server_free(srv2);
}
END_TEST

START_TEST(test_mcp_initialize_needs_version_string)
{
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
         "{\"protocolVersion\":20251125}}");
    assert_error(last(), -32602, 1, "protocolVersion");
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\"}");
    assert_error(last(), -32602, 2, "protocolVersion");
    ck_assert_ptr_null(mcp_session_protocol(s));
}
END_TEST

START_TEST(test_mcp_rejects_second_initialize)
{
    init_version("2025-06-18");
    feed("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"initialize\",\"params\":"
         "{\"protocolVersion\":\"2024-11-05\"}}");
    assert_error(last(), -32600, 9, "already initialized");
    ck_assert_str_eq(mcp_session_protocol(s), "2025-06-18");
}
END_TEST

START_TEST(test_mcp_requests_before_initialize)
{
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    assert_error(last(), -32600, 1, "not initialized: send initialize first (got tools/list)");
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
         "\"arguments\":{\"text\":\"x\"}}}");
    assert_error(last(), -32600, 2, "(got tools/call)");
    ck_assert_uint_eq(fk.ncalls, 0);
    feed("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
    ck_assert(cJSON_IsObject(get(last(), "result")));
    ck_assert_uint_eq(fk.nsent, 3);
}
END_TEST

START_TEST(test_mcp_tolerates_requests_before_initialized_notification)
{
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
         "{\"protocolVersion\":\"2025-11-25\"}}");
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
    ck_assert_uint_eq(fk.nsent, 2);
    ck_assert(cJSON_IsArray(get(get(last(), "result"), "tools")));
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    ck_assert_uint_eq(fk.nsent, 2);
}
END_TEST

/* ---- utilities and dispatch ---- */

START_TEST(test_mcp_ping_answers_empty_object)
{
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"method\":\"ping\"}");
    ck_assert_uint_eq(fk.nsent, 1);
    ck_assert_str_eq(get(last(), "id")->valuestring, "p1");
    ck_assert_str_eq(get(last(), "jsonrpc")->valuestring, "2.0");
    ck_assert(cJSON_IsObject(get(last(), "result")));
    ck_assert_ptr_null(get(last(), "result")->child);
}
END_TEST

START_TEST(test_mcp_set_level)
{
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\",\"params\":"
         "{\"level\":\"warning\"}}");
    ck_assert(cJSON_IsObject(get(last(), "result")));
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"logging/setLevel\",\"params\":"
         "{\"level\":\"loud\"}}");
    assert_error(last(), -32602, 2, "emergency");
    feed("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"logging/setLevel\",\"params\":{}}");
    assert_error(last(), -32602, 3, "level");
}
END_TEST

START_TEST(test_mcp_unknown_method)
{
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"foo/bar\"}");
    assert_error(last(), -32601, 1, "Method not found: foo/bar");
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"server/discover\"}");
    assert_error(last(), -32601, 2, "server/discover"); /* modern only: it needs _meta */
}
END_TEST

/* An error that quotes the client's bytes is still UTF-8 (found by fuzz_mcp_session). */
START_TEST(test_mcp_error_quoting_invalid_utf8_is_utf8)
{
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"in\xfftialize\"}");
    ck_assert_ptr_nonnull(strstr(fk.last_text, "Method not found: in\xef\xbf\xbdtialize"));
    ck_assert_ptr_null(strstr(fk.last_text, "\xff"));
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
         "{\"name\":\"n\xc3x\"}}");
    ck_assert_ptr_nonnull(strstr(fk.last_text, "Unknown tool: n\xef\xbf\xbdx"));
}
END_TEST

START_TEST(test_mcp_notifications_never_answered)
{
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}");
    init();
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}");
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\"}"); /* a known method, but no id */
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
         "{\"requestId\":42}}");
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}");
    feed("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}"); /* a response from the client */
    ck_assert_uint_eq(fk.nsent, 0);
}
END_TEST

START_TEST(test_mcp_malformed_json_then_good_message)
{
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":");
    ck_assert_uint_eq(fk.nsent, 1);
    assert_error(last(), -32700, -1, "Parse error");
    ck_assert_uint_gt(strlen(get(get(last(), "error"), "message")->valuestring),
                      strlen("Parse error: "));
    feed("not json at all");
    assert_error(last(), -32700, -1, "");
    feed("");
    assert_error(last(), -32700, -1, "");
    ck_assert_uint_eq(fk.nsent, 3);
    clear_sent();
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
    ck_assert_int_eq(get(last(), "id")->valueint, 2);
    ck_assert(cJSON_IsObject(get(last(), "result")));
}
END_TEST

START_TEST(test_mcp_too_deep_is_invalid_request)
{
    char line[400];
    size_t n = 0;

    n += (size_t)snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":");
    for (int i = 0; i < 100; i++)
        line[n++] = '[';
    for (int i = 0; i < 100; i++)
        line[n++] = ']';
    line[n++] = '}';
    line[n] = '\0';
    feed(line);
    assert_error(last(), -32600, -1, "");
}
END_TEST

START_TEST(test_mcp_invalid_request_keeps_usable_id)
{
    init();
    feed("{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}");
    assert_error(last(), -32600, 3, "");
    feed("{\"jsonrpc\":\"2.0\",\"id\":{\"x\":1},\"method\":\"ping\"}");
    assert_error(last(), -32600, -1, "");
    feed("42");
    assert_error(last(), -32600, -1, "");
    ck_assert_uint_eq(fk.nsent, 3);
}
END_TEST

/* An id longer than JSONRPC_MAX_ID_BYTES is refused with a reason, answered with id null and a
 * route without an id: never "out of memory", never a route whose id text is cut. 512 bytes of
 * \u0010 (6 bytes of JSON each) still work and come back whole. */
START_TEST(test_mcp_long_id_is_invalid_request)
{
    char id[JSONRPC_MAX_ID_BYTES * 6 + 1], line[sizeof(id) + 100];
    const cJSON *got;

    init();
    memset(id, 'x', JSONRPC_MAX_ID_BYTES + 1);
    id[JSONRPC_MAX_ID_BYTES + 1] = '\0';
    snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"ping\"}", id);
    feed(line);
    assert_error(last(), -32600, -1, "id is longer than 512 bytes; use a number or a short string");
    ck_assert_ptr_null(fk.routes[fk.nsent - 1].id);
    id[0] = '\0';
    for (int i = 0; i < JSONRPC_MAX_ID_BYTES; i++)
        strcat(id, "\\u0010");
    snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"ping\"}", id);
    feed(line);
    got = get(last(), "id");
    ck_assert(cJSON_IsString(got));
    ck_assert_uint_eq(strlen(got->valuestring), JSONRPC_MAX_ID_BYTES);
    ck_assert(cJSON_IsObject(get(last(), "result")));
    ck_assert_uint_eq(fk.routes[fk.nsent - 1].id_len, JSONRPC_MAX_ID_BYTES * 6 + 2);
}
END_TEST

START_TEST(test_mcp_oversized_message)
{
    mcp_session_reject_oversized(s, 52428800, 16777216);
    assert_error(last(), -32600, -1,
                 "message of 52428800 bytes exceeds the limit of 16777216 bytes; nothing was "
                 "done");
}
END_TEST

/* ---- batches ---- */

START_TEST(test_mcp_batch_refused_outside_2025_03_26)
{
    feed("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
    assert_error(last(), -32600, -1, "one message at a time");
    clear_sent();
    init_version("2025-06-18");
    feed("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
    ck_assert_uint_eq(fk.nsent, 1);
    assert_error(last(), -32600, -1, "2025-06-18");
    assert_error(last(), -32600, -1, "one message at a time");
    feed("[]");
    assert_error(last(), -32600, -1, "2025-06-18");
}
END_TEST

START_TEST(test_mcp_batch_answered_as_one_array)
{
    const cJSON *arr;

    init_version("2025-03-26");
    feed("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"},"
         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nope\"},"
         "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":"
         "{\"protocolVersion\":\"2025-03-26\"}},"
         "7]");
    ck_assert_uint_eq(fk.nsent, 1);
    arr = last();
    ck_assert(cJSON_IsArray(arr));
    ck_assert_int_eq(cJSON_GetArraySize(arr), 5);
    ck_assert_int_eq(get(cJSON_GetArrayItem(arr, 0), "id")->valueint, 1);
    ck_assert(cJSON_IsObject(get(cJSON_GetArrayItem(arr, 0), "result")));
    ck_assert(cJSON_IsArray(get(get(cJSON_GetArrayItem(arr, 1), "result"), "tools")));
    assert_error(cJSON_GetArrayItem(arr, 2), -32601, 3, "nope");
    assert_error(cJSON_GetArrayItem(arr, 3), -32600, 4, "batch");
    assert_error(cJSON_GetArrayItem(arr, 4), -32600, -1, "");
}
END_TEST

START_TEST(test_mcp_batch_of_notifications_sends_nothing)
{
    init_version("2025-03-26");
    feed("[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
         "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
         "{\"requestId\":1}}]");
    ck_assert_uint_eq(fk.nsent, 0);
    feed("[]");
    assert_error(last(), -32600, -1, "empty batch");
}
END_TEST

START_TEST(test_mcp_batch_waits_for_async_calls)
{
    const cJSON *arr;

    init_version("2025-03-26");
    feed("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
         "\"arguments\":{\"text\":\"a\"}}},"
         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"},"
         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
         "\"arguments\":{\"text\":\"b\"}}}]");
    ck_assert_uint_eq(fk.ncalls, 2);
    ck_assert_uint_eq(fk.nsent, 0);
    finish_text(fk.calls[1], "second");
    ck_assert_uint_eq(fk.nsent, 0);
    mcp_call_tool_error(fk.calls[0], "first failed");
    ck_assert_uint_eq(fk.nsent, 1);
    arr = last();
    ck_assert_int_eq(cJSON_GetArraySize(arr), 3);
    ck_assert_int_eq(get(cJSON_GetArrayItem(arr, 0), "id")->valueint, 2);
    ck_assert_int_eq(get(cJSON_GetArrayItem(arr, 1), "id")->valueint, 3);
    ck_assert_str_eq(tool_text(cJSON_GetArrayItem(arr, 1), false), "second");
    ck_assert_int_eq(get(cJSON_GetArrayItem(arr, 2), "id")->valueint, 1);
    tool_text(cJSON_GetArrayItem(arr, 2), true);
}
END_TEST

START_TEST(test_mcp_batch_with_sync_calls)
{
    init_version("2025-03-26");
    fk.mode = FAKE_SYNC_TEXT;
    feed("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
         "\"arguments\":{\"text\":\"a\"}}},"
         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]");
    ck_assert_uint_eq(fk.nsent, 1);
    ck_assert_int_eq(cJSON_GetArraySize(last()), 2);
    ck_assert_str_eq(tool_text(cJSON_GetArrayItem(last(), 0), false), "done");
    ck_assert_uint_eq(mcp_session_inflight(s), 0);
}
END_TEST

START_TEST(test_mcp_batch_member_cancelled)
{
    init_version("2025-03-26");
    feed("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
         "\"arguments\":{\"text\":\"a\"}}},"
         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
         "\"arguments\":{\"text\":\"b\"}}}]");
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
         "{\"requestId\":1}}");
    ck_assert_uint_eq(fk.nsent, 0);
    finish_text(fk.calls[1], "");
    ck_assert_uint_eq(fk.nsent, 1);
    ck_assert_int_eq(cJSON_GetArraySize(last()), 1);
    ck_assert_int_eq(get(cJSON_GetArrayItem(last(), 0), "id")->valueint, 2);
    /* A batch whose only call is cancelled owes nothing and sends nothing. */
    clear_sent();
    feed("[{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
         "\"arguments\":{\"text\":\"a\"}}}]");
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
         "{\"requestId\":5}}");
    ck_assert_uint_eq(fk.nsent, 0);
}
END_TEST

/* ---- tools/list ---- */

START_TEST(test_mcp_tools_list_is_the_catalog)
{
    cJSON *want = cJSON_Parse(catalog_tools_json(cat));
    const cJSON *res;

    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}");
    res = get(last(), "result");
    ck_assert(cJSON_Compare(get(res, "tools"), want, true));
    ck_assert_int_eq(cJSON_GetArraySize(get(res, "tools")), 3);
    ck_assert_ptr_null(get(res, "nextCursor"));
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
    ck_assert(cJSON_Compare(get(get(last(), "result"), "tools"), want, true));
    cJSON_Delete(want);
}
END_TEST

START_TEST(test_mcp_tools_list_cursor)
{
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":"
         "{\"cursor\":\"abc\"}}");
    assert_error(last(), -32602, 1, "invalid cursor");
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"cursor\":5}}");
    assert_error(last(), -32602, 2, "cursor");
}
END_TEST

/* ---- tools/call: rejection before the back end ---- */

START_TEST(test_mcp_unknown_tool)
{
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
         "{\"name\":\"nope\",\"arguments\":{}}}");
    assert_error(last(), -32602, 1, "Unknown tool: nope");
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":7}}");
    assert_error(last(), -32602, 2, "name");
    feed("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\"}");
    assert_error(last(), -32602, 3, "name");
    ck_assert_uint_eq(fk.ncalls, 0);
}
END_TEST

START_TEST(test_mcp_arguments_must_be_object)
{
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
         "{\"name\":\"echo\",\"arguments\":[1,2]}}");
    ck_assert_str_eq(tool_text(last(), true), "arguments: expected object, got array");
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
         "{\"name\":\"echo\",\"arguments\":\"text\"}}");
    ck_assert_str_eq(tool_text(last(), true), "arguments: expected object, got string");
    ck_assert_uint_eq(fk.ncalls, 0);
}
END_TEST

START_TEST(test_mcp_missing_arguments_are_empty_object)
{
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"stat\"}}");
    ck_assert_uint_eq(fk.ncalls, 1);
    ck_assert_str_eq(fk.last_args, "{}");
    ck_assert_uint_eq(fk.nsent, 0);
    /* For a tool with a required argument the missing one is named. */
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}");
    ck_assert_ptr_nonnull(strstr(tool_text(last(), true), "arguments.text"));
    ck_assert_uint_eq(fk.ncalls, 1);
}
END_TEST

START_TEST(test_mcp_validation_error_names_argument)
{
    const char *text;

    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
         "{\"name\":\"echo\",\"arguments\":{\"text\":5,\"n\":0,\"colour\":\"red\"}}}");
    ck_assert_uint_eq(fk.ncalls, 0);
    ck_assert_int_eq(get(last(), "id")->valueint, 1);
    text = tool_text(last(), true);
    ck_assert_ptr_nonnull(strstr(text, "arguments.text"));
    ck_assert_ptr_nonnull(strstr(text, "arguments.n"));
    /* An unknown argument is not the listed schema's business (catalog_listed_schema): the
     * back end checks the catalog's whole schema (runbox before any HTTP, runboxd always). */
    ck_assert_ptr_null(strstr(text, "arguments.colour"));
    ck_assert_ptr_nonnull(strchr(text, '\n')); /* one problem per line */
    ck_assert_ptr_null(strstr(text, "more problem"));
}
END_TEST

START_TEST(test_mcp_validation_counts_extra_problems)
{
    const char *text;
    int lines = 1;

    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
         "{\"name\":\"many\",\"arguments\":{}}}");
    text = tool_text(last(), true);
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    ck_assert_int_eq(lines, 9); /* 8 kept messages + the count line */
    ck_assert_ptr_nonnull(strstr(text, "\n(2 more problems)"));
    ck_assert_ptr_nonnull(strstr(text, "arguments.a"));
}
END_TEST

START_TEST(test_mcp_nul_escape_is_tool_error)
{
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
         "{\"name\":\"echo\",\"arguments\":{\"text\":\"a\\u0000b\"}}}");
    ck_assert_uint_eq(fk.ncalls, 0);
    ck_assert_str_eq(tool_text(last(), true),
                     "arguments contain a NUL character (\\u0000), which no path or text "
                     "argument may hold; send binary data with encoding \"base64\"");
    /* The flag is per message: the next one goes through. */
    call_echo(2, "ab");
    ck_assert_uint_eq(fk.ncalls, 1);
}
END_TEST

/* cJSON cuts strings at \u0000; ids must still come back exactly as sent. */
START_TEST(test_mcp_nul_in_id_round_trips)
{
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"ping\"}");
    ck_assert_str_eq(fk.last_text, "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"result\":{}}");
    /* Another spelling of the same id comes back in the canonical one. */
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":\"\\u0061\\u0000\\n\"}");
    ck_assert_ptr_nonnull(strstr(fk.last_text, "\"id\":\"a\\u0000\\n\""));
    /* A tool call's answer, and "a" and "a\u0000b" are two ids in flight. */
    call_echo(0, "x"); /* id 0 */
    feed("{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"tools/call\",\"params\":"
         "{\"name\":\"echo\",\"arguments\":{\"text\":\"q\"}}}");
    feed("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\",\"params\":"
         "{\"name\":\"echo\",\"arguments\":{\"text\":\"r\"}}}");
    ck_assert_uint_eq(fk.ncalls, 3);
    finish_text(fk.calls[1], "done");
    ck_assert_ptr_nonnull(strstr(fk.last_text, "\"id\":\"a\\u0000b\","));
    /* The client cancels the NUL id by its exact text: only that call is cancelled. */
    feed("{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000c\",\"method\":\"tools/call\",\"params\":"
         "{\"name\":\"echo\",\"arguments\":{\"text\":\"s\"}}}");
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
         "{\"requestId\":\"a\\u0000c\"}}");
    ck_assert_uint_eq(fk.ncancelled, 1);
    ck_assert_ptr_eq(fk.cancelled[0], fk.calls[3]);
}
END_TEST

START_TEST(test_mcp_nul_in_batch_ids_round_trips)
{
    init_version("2025-03-26");
    feed("[{\"jsonrpc\":\"2.0\",\"id\":\"x\\u0000\",\"method\":\"ping\"},"
         " {\"id\":\"y\",\"jsonrpc\":\"2.0\",\"method\":\"ping\"},"
         "{\"method\":\"ping\",\"jsonrpc\":\"2.0\",\"id\":\"\\u0000z\"}]");
    ck_assert_ptr_nonnull(strstr(fk.last_text, "\"id\":\"x\\u0000\""));
    ck_assert_ptr_nonnull(strstr(fk.last_text, "\"id\":\"y\""));
    ck_assert_ptr_nonnull(strstr(fk.last_text, "\"id\":\"\\u0000z\""));
}
END_TEST

START_TEST(test_mcp_duplicate_id_in_flight)
{
    init();
    call_echo(5, "a");
    ck_assert_uint_eq(fk.ncalls, 1);
    call_echo(5, "b");
    assert_error(last(), -32600, 5, "already in use");
    ck_assert_uint_eq(fk.ncalls, 1);
    feed("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}");
    assert_error(last(), -32600, 5, "already in use");
    /* A string id "5" is a different id. */
    feed("{\"jsonrpc\":\"2.0\",\"id\":\"5\",\"method\":\"ping\"}");
    ck_assert(cJSON_IsObject(get(last(), "result")));
    finish_text(fk.calls[0], "ok");
    call_echo(5, "c"); /* free again once answered */
    ck_assert_uint_eq(fk.ncalls, 2);
}
END_TEST

/* ---- tools/call: answers from the back end ---- */

START_TEST(test_mcp_call_accessors)
{
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"tools/call\",\"params\":"
         "{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\",\"n\":3}}}");
    ck_assert_uint_eq(fk.ncalls, 1);
    ck_assert_str_eq(mcp_call_name(fk.calls[0]), "echo");
    ck_assert_str_eq(get(mcp_call_arguments(fk.calls[0]), "text")->valuestring, "hi");
    ck_assert_str_eq(mcp_call_id_text(fk.calls[0]), "\"abc\"");
    ck_assert_ptr_null(mcp_call_get_data(fk.calls[0]));
    mcp_call_set_data(fk.calls[0], &fk);
    ck_assert_ptr_eq(mcp_call_get_data(fk.calls[0]), &fk);
    ck_assert_uint_eq(mcp_session_inflight(s), 1);
    finish_text(fk.calls[0], "x");
    ck_assert_str_eq(get(last(), "id")->valuestring, "abc");
    ck_assert_uint_eq(mcp_session_inflight(s), 0);
}
END_TEST

START_TEST(test_mcp_finish_with_string)
{
    init();
    call_echo(1, "a");
    ck_assert_uint_eq(fk.nsent, 0);
    finish_text(fk.calls[0], "hello \"world\"\n\t\x01 \xc3\xa9");
    ck_assert_uint_eq(fk.nsent, 1);
    ck_assert_int_eq(get(last(), "id")->valueint, 1);
    ck_assert_str_eq(tool_text(last(), false), "hello \"world\"\n\t\x01 \xc3\xa9");
    ck_assert_ptr_null(get(get(last(), "result"), "structuredContent"));
}
END_TEST

START_TEST(test_mcp_finish_replaces_invalid_utf8)
{
    init();
    call_echo(1, "a");
    finish_text(fk.calls[0], "a\xff"
                             "b\xed\xa0\x80"
                             "c\xe2\x82");
    ck_assert_str_eq(tool_text(last(), false), "a\xef\xbf\xbd"
                                               "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                               "c\xef\xbf\xbd\xef\xbf\xbd");
}
END_TEST

/* Every special byte at every offset of a longer string: the 8-bytes-at-a-time path and the
 * byte path must agree, and the text must come back exactly. */
START_TEST(test_mcp_finish_text_round_trips)
{
    static const char *const specials[] = {
        "\"", "\\", "\n", "\x01", "\x1f", "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};
    char text[64];
    int id = 1;

    init();
    for (size_t k = 0; k < sizeof(specials) / sizeof(specials[0]); k++) {
        for (size_t pos = 0; pos < 24; pos++) {
            size_t sl = strlen(specials[k]);

            memset(text, 'a' + (int)(pos % 26), sizeof(text));
            memcpy(text + pos, specials[k], sl);
            text[pos + sl + 17] = '\0';
            call_echo(id, "x");
            finish_text(fk.calls[fk.ncalls - 1], text);
            ck_assert_int_eq(get(last(), "id")->valueint, id);
            ck_assert_str_eq(tool_text(last(), false), text);
            clear_sent();
            id++;
        }
    }
}
END_TEST

START_TEST(test_mcp_finish_with_null_is_empty_text)
{
    init();
    call_echo(1, "a");
    finish_text(fk.calls[0], "");
    ck_assert_str_eq(tool_text(last(), false), "");
}
END_TEST

START_TEST(test_mcp_finish_with_object_and_output_schema)
{
    cJSON *obj = cJSON_Parse("{\"size\":12,\"name\":\"a\\\"b\"}");
    cJSON *want = cJSON_Duplicate(obj, true);
    char *printed = cJSON_PrintUnformatted(obj);
    cJSON *text;

    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"stat\"}}");
    mcp_call_result_text_structured(fk.calls[0], printed, strlen(printed), obj);
    text = cJSON_Parse(tool_text(last(), false));
    ck_assert(cJSON_Compare(text, want, true));
    ck_assert(cJSON_Compare(get(get(last(), "result"), "structuredContent"), want, true));
    cJSON_Delete(text);
    cJSON_Delete(want);
    cJSON_free(printed);
}
END_TEST

START_TEST(test_mcp_finish_structured_keeps_text_and_adds_facts)
{
    cJSON *want = cJSON_Parse("{\"exit_code\":0,\"stdout\":\"hi\\n\"}");

    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"stat\"}}");
    mcp_call_result_text_structured(fk.calls[0], "hi\n", 3, cJSON_Duplicate(want, 1));
    ck_assert_str_eq(tool_text(last(), false), "hi\n");
    ck_assert(cJSON_Compare(get(get(last(), "result"), "structuredContent"), want, true));
    /* Without an outputSchema the facts are dropped and the text stays. */
    call_echo(2, "a");
    mcp_call_result_text_structured(fk.calls[1], "t", 1, cJSON_Duplicate(want, 1));
    ck_assert_str_eq(tool_text(last(), false), "t");
    ck_assert_ptr_null(get(get(last(), "result"), "structuredContent"));
    cJSON_Delete(want);
}
END_TEST

START_TEST(test_mcp_structured_content_only_for_objects_with_schema)
{
    init();
    call_echo(1, "a"); /* echo has no outputSchema */
    mcp_call_result_text_structured(fk.calls[0], "{\"size\":1}", 10, cJSON_Parse("{\"size\":1}"));
    ck_assert_str_eq(tool_text(last(), false), "{\"size\":1}");
    ck_assert_ptr_null(get(get(last(), "result"), "structuredContent"));
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"stat\"}}");
    /* stat has one, but the facts are not an object */
    mcp_call_result_text_structured(fk.calls[1], "[1,2]", 5, cJSON_Parse("[1,2]"));
    ck_assert_str_eq(tool_text(last(), false), "[1,2]");
    ck_assert_ptr_null(get(get(last(), "result"), "structuredContent"));
}
END_TEST

START_TEST(test_mcp_tool_error_keeps_the_message)
{
    init();
    call_echo(1, "a");
    call_echo(2, "b");
    mcp_call_tool_error(fk.calls[0], "no \"such\" file\n");
    ck_assert_int_eq(get(last(), "id")->valueint, 1);
    ck_assert_str_eq(tool_text(last(), true), "no \"such\" file\n");
    mcp_call_tool_error(fk.calls[1], NULL);
    ck_assert_str_eq(tool_text(last(), true), "the tool failed without saying why");
}
END_TEST

START_TEST(test_mcp_finish_inside_call_tool)
{
    init();
    fk.mode = FAKE_SYNC_TEXT;
    call_echo(1, "a");
    ck_assert_uint_eq(fk.nsent, 1);
    ck_assert_str_eq(tool_text(last(), false), "done");
    fk.mode = FAKE_SYNC_FAIL;
    call_echo(2, "a");
    ck_assert_uint_eq(fk.nsent, 2);
    ck_assert_ptr_nonnull(strstr(tool_text(last(), true), "boom"));
    ck_assert_uint_eq(mcp_session_inflight(s), 0);
}
END_TEST

START_TEST(test_mcp_many_calls_in_flight)
{
    enum { N = 600 };

    init();
    for (int i = 0; i < N; i++)
        call_echo(1000 + i, "x");
    ck_assert_uint_eq(fk.ncalls, N);
    ck_assert_uint_eq(mcp_session_inflight(s), N);
    ck_assert_uint_eq(fk.nsent, 0);
    for (int i = N - 1; i >= 0; i -= 2) { /* answer half, newest first */
        char want[16];

        snprintf(want, sizeof(want), "r%d", i);
        finish_text(fk.calls[i], want);
        ck_assert_int_eq(get(last(), "id")->valueint, 1000 + i);
        ck_assert_str_eq(tool_text(last(), false), want);
    }
    ck_assert_uint_eq(mcp_session_inflight(s), N / 2);
    /* The other half is found by id for cancellation. */
    for (int i = 0; i < N; i += 2) {
        char line[160];

        snprintf(line, sizeof(line),
                 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
                 "{\"requestId\":%d}}",
                 1000 + i);
        feed(line);
        ck_assert_ptr_eq(fk.cancelled[fk.ncancelled - 1], fk.calls[i]);
    }
    ck_assert_uint_eq(fk.ncancelled, N / 2);
    ck_assert_uint_eq(mcp_session_inflight(s), 0);
    ck_assert_uint_eq(fk.nsent, N / 2);
}
END_TEST

/* ---- progress ---- */

START_TEST(test_mcp_progress_with_token)
{
    const cJSON *p;

    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
         "\"arguments\":{\"text\":\"a\"},\"_meta\":{\"progressToken\":\"tok\"}}}");
    mcp_call_progress(fk.calls[0], 1, 4, "step one");
    ck_assert_uint_eq(fk.nsent, 1);
    ck_assert_str_eq(get(last(), "method")->valuestring, "notifications/progress");
    ck_assert_ptr_null(get(last(), "id"));
    p = get(last(), "params");
    ck_assert_str_eq(get(p, "progressToken")->valuestring, "tok");
    ck_assert_double_eq(get(p, "progress")->valuedouble, 1);
    ck_assert_double_eq(get(p, "total")->valuedouble, 4);
    ck_assert_str_eq(get(p, "message")->valuestring, "step one");
    mcp_call_progress(fk.calls[0], 1, 4, NULL); /* not increasing: dropped */
    ck_assert_uint_eq(fk.nsent, 1);
    mcp_call_progress(fk.calls[0], 2, 0, NULL);
    p = get(last(), "params");
    ck_assert_uint_eq(fk.nsent, 2);
    ck_assert_ptr_null(get(p, "total"));
    ck_assert_ptr_null(get(p, "message"));
    finish_text(fk.calls[0], "");
    ck_assert_uint_eq(fk.nsent, 3);
}
END_TEST

START_TEST(test_mcp_progress_integer_token)
{
    init();
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
         "\"arguments\":{\"text\":\"a\"},\"_meta\":{\"progressToken\":77}}}");
    mcp_call_progress(fk.calls[0], 0.5, 1, NULL);
    ck_assert_int_eq(get(get(last(), "params"), "progressToken")->valueint, 77);
}
END_TEST

START_TEST(test_mcp_progress_without_token)
{
    init();
    call_echo(1, "a");
    mcp_call_progress(fk.calls[0], 1, 2, "x");
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
         "\"arguments\":{\"text\":\"a\"},\"_meta\":{\"progressToken\":{\"bad\":1}}}}");
    mcp_call_progress(fk.calls[1], 1, 2, "x");
    ck_assert_uint_eq(fk.nsent, 0);
}
END_TEST

/* ---- cancellation and teardown ---- */

START_TEST(test_mcp_cancel_in_flight_call)
{
    init();
    call_echo(1, "a");
    call_echo(2, "b");
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
         "{\"requestId\":1,\"reason\":\"user\"}}");
    ck_assert_uint_eq(fk.ncancelled, 1);
    ck_assert_ptr_eq(fk.cancelled[0], fk.calls[0]);
    ck_assert_uint_eq(mcp_session_inflight(s), 1);
    ck_assert_uint_eq(fk.nsent, 0);
    /* Again, or for an unknown id, or with the wrong id type: nothing happens. */
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
         "{\"requestId\":1}}");
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
         "{\"requestId\":\"2\"}}");
    ck_assert_uint_eq(fk.ncancelled, 1);
    /* The id is free again and the other call still answers. */
    call_echo(1, "c");
    ck_assert_uint_eq(fk.ncalls, 3);
    finish_text(fk.calls[1], "two");
    ck_assert_uint_eq(fk.nsent, 1);
    ck_assert_int_eq(get(last(), "id")->valueint, 2);
}
END_TEST

START_TEST(test_mcp_cancel_initialize_ignored)
{
    feed("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
         "{\"protocolVersion\":\"2025-11-25\"}}");
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
         "{\"requestId\":0}}");
    ck_assert_uint_eq(fk.nsent, 1);
    ck_assert_uint_eq(fk.ncancelled, 0);
    ck_assert_str_eq(mcp_session_protocol(s), "2025-11-25");
}
END_TEST

START_TEST(test_mcp_close_cancels_in_flight)
{
    init_version("2025-03-26");
    call_echo(1, "a");
    call_echo(2, "b");
    feed("[{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
         "\"arguments\":{\"text\":\"c\"}}},{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}]");
    ck_assert_uint_eq(mcp_session_inflight(s), 3);
    mcp_session_close(s);
    s = NULL;
    ck_assert_uint_eq(fk.ncancelled, 3);
    ck_assert_uint_eq(fk.nsent, 0);
    ck_assert(fk.closed);
}
END_TEST

/* ---- resources and prompts ---- */

static void setup_ready(void)
{
    setup();
    init();
}

START_TEST(test_mcp_no_providers_means_no_capabilities)
{
    struct mcp_server *srv2 = make_server(&info, false);
    struct mcp_session *s2 = mcp_session_new(srv2, &fake_transport, &fk, 0, NULL);
    const char *line = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                       "\"params\":{\"protocolVersion\":\"2025-06-18\"}}";
    const char *list = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/list\"}";
    const char *prompts = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"prompts/list\"}";

    mcp_session_handle(s2, line, strlen(line), NULL);
    ck_assert_ptr_null(get(get(get(last(), "result"), "capabilities"), "resources"));
    ck_assert_ptr_null(get(get(get(last(), "result"), "capabilities"), "prompts"));
    mcp_session_handle(s2, list, strlen(list), NULL);
    assert_error(last(), -32601, 2, "resources/list");
    mcp_session_handle(s2, prompts, strlen(prompts), NULL);
    assert_error(last(), -32601, 3, "prompts/list");
    mcp_session_close(s2);
    mcp_server_free(srv2);
}
END_TEST

START_TEST(test_mcp_requests_reach_back_end_with_params)
{
    fk.req_sync = true;
    feed("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\","
         "\"params\":{\"uri\":\"file:///a.js\"}}");
    ck_assert_uint_eq(fk.nreqs, 1);
    ck_assert_str_eq(get(get(last(), "result"), "method")->valuestring, "resources/read");
    ck_assert_str_eq(get(get(get(last(), "result"), "echo"), "uri")->valuestring, "file:///a.js");
    feed("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"prompts/list\"}");
    ck_assert(cJSON_IsObject(get(get(last(), "result"), "echo"))); /* {} when params absent */
    feed("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"prompts/get\","
         "\"params\":{\"name\":\"scaffold\",\"arguments\":{\"type\":\"bun-api\"}}}");
    ck_assert_str_eq(get(get(get(get(last(), "result"), "echo"), "arguments"), "type")->valuestring,
                     "bun-api");
    feed("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"resources/list\","
         "\"params\":{\"cursor\":\"abc\"}}");
    ck_assert_str_eq(get(get(get(last(), "result"), "echo"), "cursor")->valuestring, "abc");
    ck_assert_uint_eq(mcp_session_inflight(s), 0);
}
END_TEST

static const struct {
    const char *line, *part;
} bad_params[] = {
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\"}", "params.uri"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":7}}",
     "params.uri"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\",\"params\":{\"cursor\":1}}",
     "params.cursor"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\",\"params\":{}}", "params.name"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\",\"params\":{\"name\":\"a\","
     "\"arguments\":[1]}}",
     "params.arguments must be an object"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\",\"params\":{\"name\":\"a\","
     "\"arguments\":{\"path\":3}}}",
     "params.arguments.path must be a string"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/templates/list\","
     "\"params\":{\"cursor\":\"x\"}}",
     "invalid cursor"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\",\"params\":[1]}",
     "params must be an object"},
};

START_TEST(test_mcp_request_params_checked)
{
    feed(bad_params[_i].line);
    ck_assert_uint_eq(fk.nreqs, 0);
    assert_error(last(), -32602, 1, bad_params[_i].part);
}
END_TEST

START_TEST(test_mcp_templates_answered_by_engine)
{
    const cJSON *t;

    feed("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"resources/templates/list\"}");
    ck_assert_uint_eq(fk.nreqs, 0);
    t = cJSON_GetArrayItem(get(get(last(), "result"), "resourceTemplates"), 0);
    ck_assert_str_eq(get(t, "uriTemplate")->valuestring, "file:///{path}");
    ck_assert_str_eq(get(t, "name")->valuestring, "Workspace file");
}
END_TEST

START_TEST(test_mcp_request_finished_later_and_failed)
{
    feed("{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"resources/read\","
         "\"params\":{\"uri\":\"file:///x\"}}");
    feed("{\"jsonrpc\":\"2.0\",\"id\":\"r2\",\"method\":\"prompts/list\"}");
    ck_assert_uint_eq(fk.nsent, 0);
    ck_assert_uint_eq(mcp_session_inflight(s), 2);
    ck_assert_str_eq(mcp_call_id_text(fk.reqs[0]), "\"r1\"");
    /* The same id again while in flight is refused. */
    feed("{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"prompts/list\"}");
    ck_assert_int_eq(get(get(last(), "error"), "code")->valueint, -32600);
    mcp_call_error(fk.reqs[0], -32602, "resource file:///x: no such file", NULL);
    ck_assert_str_eq(get(last(), "id")->valuestring, "r1");
    ck_assert_int_eq(get(get(last(), "error"), "code")->valueint, -32602);
    ck_assert_str_eq(get(get(last(), "error"), "message")->valuestring,
                     "resource file:///x: no such file");
    mcp_call_result(fk.reqs[1], NULL);
    ck_assert_str_eq(get(last(), "id")->valuestring, "r2");
    ck_assert(cJSON_IsObject(get(last(), "result")));
    ck_assert_uint_eq(mcp_session_inflight(s), 0);
}
END_TEST

START_TEST(test_mcp_request_cancelled)
{
    feed("{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"resources/list\"}");
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
         "\"params\":{\"requestId\":12}}");
    ck_assert_uint_eq(fk.nreq_cancelled, 1);
    ck_assert_ptr_eq(fk.req_cancelled[0], fk.reqs[0]);
    ck_assert_uint_eq(mcp_session_inflight(s), 0);
    ck_assert_uint_eq(fk.nsent, 0);
    /* And free cancels the ones still in flight. */
    feed("{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"prompts/list\"}");
    mcp_session_close(s);
    s = NULL;
    ck_assert_uint_eq(fk.nreq_cancelled, 2);
}
END_TEST

START_TEST(test_mcp_request_in_batch)
{
    mcp_session_close(s);
    s = mcp_session_new(srv, &fake_transport, &fk, 0, NULL);
    init_version("2025-03-26");
    feed("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"prompts/list\"}]");
    ck_assert_uint_eq(fk.nsent, 0); /* waits for the request */
    mcp_call_result(fk.reqs[0], cJSON_CreateObject());
    ck_assert_uint_eq(fk.nsent, 1);
    ck_assert_int_eq(cJSON_GetArraySize(last()), 2);
}
END_TEST

/* ---- interest: what clients want to hear ---- */

static struct {
    char log[2048]; /* "+uri;" "-uri;" "L<level>;" in order */
    bool refuse;
} in_rec;

static int rec_subscribe(void *arg, const char *uri, struct errinfo *err)
{
    size_t n = strlen(in_rec.log);

    (void)arg;
    if (in_rec.refuse) {
        errinfo_set(err, ERR_INVALID, "%s names no resource here", uri);
        return -1;
    }
    snprintf(in_rec.log + n, sizeof(in_rec.log) - n, "+%s;", uri);
    return 0;
}

static void rec_unsubscribe(void *arg, const char *uri)
{
    size_t n = strlen(in_rec.log);

    (void)arg;
    snprintf(in_rec.log + n, sizeof(in_rec.log) - n, "-%s;", uri);
}

static void rec_level(void *arg, struct mcp_session *x, int level)
{
    size_t n = strlen(in_rec.log);

    (void)arg;
    ck_assert_ptr_eq(x, s);
    snprintf(in_rec.log + n, sizeof(in_rec.log) - n, "L%d;", level);
}

static void setup_interest(void)
{
    const struct mcp_interest in = {
        .subscribe = rec_subscribe, .unsubscribe = rec_unsubscribe, .log_level = rec_level};
    struct mcp_server_info si = info;

    memset(&fk, 0, sizeof(fk));
    memset(&in_rec, 0, sizeof(in_rec));
    si.notifies |= MCP_NOTIFY_UPDATES;
    srv = make_server(&si, true);
    ck_assert_int_eq(mcp_server_set_interest(srv, &in, NULL), 0);
    s = mcp_session_new(srv, &fake_transport, &fk, 0, NULL);
    ck_assert_ptr_nonnull(s);
    init();
}

START_TEST(test_mcp_interest_subscriptions_balance)
{
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/subscribe\",\"params\":"
         "{\"uri\":\"file:///a\"}}");
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/subscribe\",\"params\":"
         "{\"uri\":\"file:///a\"}}"); /* again: no second count */
    feed("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/subscribe\",\"params\":"
         "{\"uri\":\"file:///b\"}}");
    feed("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/unsubscribe\",\"params\":"
         "{\"uri\":\"file:///a\"}}");
    feed("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/unsubscribe\",\"params\":"
         "{\"uri\":\"file:///zzz\"}}"); /* never subscribed: nothing */
    ck_assert_str_eq(in_rec.log, "+file:///a;+file:///b;-file:///a;");
    mcp_session_close(s);
    s = NULL;
    ck_assert_str_eq(in_rec.log, "+file:///a;+file:///b;-file:///a;-file:///b;");
}
END_TEST

START_TEST(test_mcp_interest_refusal_is_invalid_params)
{
    in_rec.refuse = true;
    feed("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/subscribe\",\"params\":"
         "{\"uri\":\"https://x/\"}}");
    assert_error(last(), MCP_INVALID_PARAMS, 7, "https://x/ names no resource here");
    in_rec.refuse = false;
    /* A refused subscription is not kept: unsubscribing it tells the embedder nothing. */
    feed("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"resources/unsubscribe\",\"params\":"
         "{\"uri\":\"https://x/\"}}");
    ck_assert_str_eq(in_rec.log, "");
}
END_TEST

START_TEST(test_mcp_interest_log_level_and_close)
{
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\",\"params\":"
         "{\"level\":\"warning\"}}");
    feed("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"logging/setLevel\",\"params\":"
         "{\"level\":\"warning\"}}"); /* the same: not told twice */
    feed("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"logging/setLevel\",\"params\":"
         "{\"level\":\"debug\"}}");
    ck_assert_str_eq(in_rec.log, "L3;L0;");
    mcp_session_close(s);
    s = NULL;
    ck_assert_str_eq(in_rec.log, "L3;L0;L-1;");
}
END_TEST

START_TEST(test_mcp_server_log_reaches_only_sessions_that_asked)
{
    mcp_server_log(srv, MCP_LOG_ERROR, "exec", cJSON_CreateString("before"));
    ck_assert_uint_eq(fk.nsent, 0); /* no level set: nothing */
    feed("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"logging/setLevel\",\"params\":"
         "{\"level\":\"warning\"}}");
    clear_sent();
    mcp_server_log(srv, MCP_LOG_INFO, "exec", cJSON_CreateString("quiet"));
    mcp_server_log(srv, MCP_LOG_ERROR, "exec", cJSON_CreateString("loud"));
    ck_assert_uint_eq(fk.nsent, 1);
    ck_assert_str_eq(get(last(), "method")->valuestring, "notifications/message");
    ck_assert_str_eq(get(get(last(), "params"), "data")->valuestring, "loud");
    ck_assert_str_eq(get(get(last(), "params"), "level")->valuestring, "error");
    ck_assert_int_eq(fk.routes[0].kind, MCP_ROUTE_SESSION);
}
END_TEST

START_TEST(test_mcp_interest_listen_subscribes_and_ends)
{
    feed("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"subscriptions/listen\",\"params\":{"
         "\"notifications\":{\"resourceSubscriptions\":[\"file:///x\",\"file:///y\"]},"
         "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
         "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    ck_assert_str_eq(in_rec.log, "+file:///x;+file:///y;");
    mcp_server_notify_resource_updated(srv, "file:///y");
    ck_assert_str_eq(get(last(), "method")->valuestring, "notifications/resources/updated");
    feed("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
         "{\"requestId\":9}}");
    ck_assert_str_eq(in_rec.log, "+file:///x;+file:///y;-file:///x;-file:///y;");
}
END_TEST

START_TEST(test_mcp_interest_listen_refused_unwinds)
{
    in_rec.refuse = true;
    feed("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"subscriptions/listen\",\"params\":{"
         "\"notifications\":{\"resourceSubscriptions\":[\"file:///x\"]},"
         "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
         "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    assert_error(last(), MCP_INVALID_PARAMS, 9,
                 "resourceSubscriptions: file:///x names no resource");
    ck_assert_str_eq(in_rec.log, "");
}
END_TEST

static Suite *mcp_suite(void)
{
    Suite *su = suite_create("mcp");
    TCase *tc;

    tc = tcase_create("lifecycle");
    tcase_add_unchecked_fixture(tc, setup_catalog, teardown_catalog);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_mcp_negotiates_version, 0,
                        (int)(sizeof(versions) / sizeof(versions[0])));
    tcase_add_test(tc, test_mcp_initialize_without_instructions);
    tcase_add_test(tc, test_mcp_initialize_needs_version_string);
    tcase_add_test(tc, test_mcp_rejects_second_initialize);
    tcase_add_test(tc, test_mcp_requests_before_initialize);
    tcase_add_test(tc, test_mcp_tolerates_requests_before_initialized_notification);
    suite_add_tcase(su, tc);

    tc = tcase_create("adding tools");
    tcase_add_test(tc, test_mcp_add_tool_parsed_takes_the_trees);
    tcase_add_test(tc, test_mcp_add_tool_text_is_listed_as_parsed);
    tcase_add_test(tc, test_mcp_add_tool_extra_is_listed);
    suite_add_tcase(su, tc);

    tc = tcase_create("dispatch");
    tcase_add_unchecked_fixture(tc, setup_catalog, teardown_catalog);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mcp_ping_answers_empty_object);
    tcase_add_test(tc, test_mcp_set_level);
    tcase_add_test(tc, test_mcp_unknown_method);
    tcase_add_test(tc, test_mcp_error_quoting_invalid_utf8_is_utf8);
    tcase_add_test(tc, test_mcp_notifications_never_answered);
    tcase_add_test(tc, test_mcp_malformed_json_then_good_message);
    tcase_add_test(tc, test_mcp_too_deep_is_invalid_request);
    tcase_add_test(tc, test_mcp_invalid_request_keeps_usable_id);
    tcase_add_test(tc, test_mcp_long_id_is_invalid_request);
    tcase_add_test(tc, test_mcp_oversized_message);
    suite_add_tcase(su, tc);

    tc = tcase_create("batch");
    tcase_add_unchecked_fixture(tc, setup_catalog, teardown_catalog);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mcp_batch_refused_outside_2025_03_26);
    tcase_add_test(tc, test_mcp_batch_answered_as_one_array);
    tcase_add_test(tc, test_mcp_batch_of_notifications_sends_nothing);
    tcase_add_test(tc, test_mcp_batch_waits_for_async_calls);
    tcase_add_test(tc, test_mcp_batch_with_sync_calls);
    tcase_add_test(tc, test_mcp_batch_member_cancelled);
    suite_add_tcase(su, tc);

    tc = tcase_create("tools_list");
    tcase_add_unchecked_fixture(tc, setup_catalog, teardown_catalog);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mcp_tools_list_is_the_catalog);
    tcase_add_test(tc, test_mcp_tools_list_cursor);
    suite_add_tcase(su, tc);

    tc = tcase_create("call_rejected");
    tcase_add_unchecked_fixture(tc, setup_catalog, teardown_catalog);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mcp_unknown_tool);
    tcase_add_test(tc, test_mcp_arguments_must_be_object);
    tcase_add_test(tc, test_mcp_missing_arguments_are_empty_object);
    tcase_add_test(tc, test_mcp_validation_error_names_argument);
    tcase_add_test(tc, test_mcp_validation_counts_extra_problems);
    tcase_add_test(tc, test_mcp_nul_escape_is_tool_error);
    tcase_add_test(tc, test_mcp_nul_in_id_round_trips);
    tcase_add_test(tc, test_mcp_nul_in_batch_ids_round_trips);
    tcase_add_test(tc, test_mcp_duplicate_id_in_flight);
    suite_add_tcase(su, tc);

    tc = tcase_create("call_answered");
    tcase_add_unchecked_fixture(tc, setup_catalog, teardown_catalog);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mcp_call_accessors);
    tcase_add_test(tc, test_mcp_finish_with_string);
    tcase_add_test(tc, test_mcp_finish_replaces_invalid_utf8);
    tcase_add_test(tc, test_mcp_finish_text_round_trips);
    tcase_add_test(tc, test_mcp_finish_with_null_is_empty_text);
    tcase_add_test(tc, test_mcp_finish_with_object_and_output_schema);
    tcase_add_test(tc, test_mcp_finish_structured_keeps_text_and_adds_facts);
    tcase_add_test(tc, test_mcp_structured_content_only_for_objects_with_schema);
    tcase_add_test(tc, test_mcp_tool_error_keeps_the_message);
    tcase_add_test(tc, test_mcp_finish_inside_call_tool);
    tcase_add_test(tc, test_mcp_many_calls_in_flight);
    suite_add_tcase(su, tc);

    tc = tcase_create("progress");
    tcase_add_unchecked_fixture(tc, setup_catalog, teardown_catalog);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mcp_progress_with_token);
    tcase_add_test(tc, test_mcp_progress_integer_token);
    tcase_add_test(tc, test_mcp_progress_without_token);
    suite_add_tcase(su, tc);

    tc = tcase_create("cancel");
    tcase_add_unchecked_fixture(tc, setup_catalog, teardown_catalog);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_mcp_cancel_in_flight_call);
    tcase_add_test(tc, test_mcp_cancel_initialize_ignored);
    tcase_add_test(tc, test_mcp_close_cancels_in_flight);
    suite_add_tcase(su, tc);

    tc = tcase_create("resources_prompts");
    tcase_add_unchecked_fixture(tc, setup_catalog, teardown_catalog);
    tcase_add_checked_fixture(tc, setup_ready, teardown);
    tcase_add_test(tc, test_mcp_no_providers_means_no_capabilities);
    tcase_add_test(tc, test_mcp_requests_reach_back_end_with_params);
    tcase_add_loop_test(tc, test_mcp_request_params_checked, 0,
                        (int)(sizeof(bad_params) / sizeof(bad_params[0])));
    tcase_add_test(tc, test_mcp_templates_answered_by_engine);
    tcase_add_test(tc, test_mcp_request_finished_later_and_failed);
    tcase_add_test(tc, test_mcp_request_cancelled);
    tcase_add_test(tc, test_mcp_request_in_batch);
    suite_add_tcase(su, tc);

    tc = tcase_create("interest");
    tcase_add_unchecked_fixture(tc, setup_catalog, teardown_catalog);
    tcase_add_checked_fixture(tc, setup_interest, teardown);
    tcase_add_test(tc, test_mcp_interest_subscriptions_balance);
    tcase_add_test(tc, test_mcp_interest_refusal_is_invalid_params);
    tcase_add_test(tc, test_mcp_interest_log_level_and_close);
    tcase_add_test(tc, test_mcp_server_log_reaches_only_sessions_that_asked);
    tcase_add_test(tc, test_mcp_interest_listen_subscribes_and_ends);
    tcase_add_test(tc, test_mcp_interest_listen_refused_unwinds);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(mcp_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
