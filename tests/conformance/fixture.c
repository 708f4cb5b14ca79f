/* tests/conformance/fixture.c - the server the official MCP conformance suite tests
 * (@modelcontextprotocol/conformance, "conformance server --url ..."), built only on the public
 * library: runbox/mcp.h and runbox/mcp_http.h, linked against librunbox-mcp.
 *
 * It offers every tool, resource, resource template and prompt the suite's server scenarios
 * call, with the names, arguments and answers the scenarios check (src/scenarios/server/ of the
 * suite; the suite's own reference server, examples/servers/typescript/everything-server.ts,
 * offers the same). One server serves both requirement sets: a client that starts with
 * initialize gets the 2025-11-25 behaviour, a request with the 2026-07-28 _meta is served
 * statelessly; the library decides which, the handlers below do not care, except where a
 * scenario asks about the client's declared capabilities.
 *
 * Input from the client (elicitation, sampling, roots) goes through mcp_call_input_required()
 * on both eras: a modern request is answered with an InputRequiredResult and comes back with
 * inputResponses; a legacy session gets real server requests and the handler runs again with
 * the answers. So each such handler is written once: "if the answer is here, finish; else ask".
 *
 * Usage: fixture [--port N]   (N = 0, the default, takes a free port)
 * Prints "listening on http://127.0.0.1:PORT/mcp" once it serves, and stops on SIGTERM or
 * SIGINT. Also serves the legacy HTTP+SSE pair (/sse, /message) and WebSocket (/ws). */
#define _POSIX_C_SOURCE 200809L /* sigwait, pthread_sigmask, strdup */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <runbox/mcp.h>
#include <runbox/mcp_http.h>

/* A 1x1 red PNG and a minimal WAV, as the suite's reference server sends them. */
#define TEST_IMAGE_BASE64                                                                          \
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJg" \
    "gg"                                                                                           \
    "=="
#define TEST_AUDIO_BASE64 "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

#define NO_ARGS "{\"type\":\"object\",\"properties\":{}}"

/* What the handlers share: the server (for the list-change hooks) and the fixture's own state. */
struct fixture {
    struct mcp_server *srv;
    pthread_mutex_t mu;
    bool dynamic_tool;   /* test_dynamic_tool is listed (test_trigger_tool_change toggles it) */
    bool dynamic_prompt; /* test_dynamic_prompt was added (test_trigger_prompt_change) */
    unsigned watched;    /* how often test://watched-resource changed */
};

static struct fixture fx = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- building answers ---- */

static cJSON *text_block(const char *text)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "type", "text");
    cJSON_AddStringToObject(o, "text", text);
    return o;
}

static cJSON *media_block(const char *type, const char *data, const char *mime)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "type", type);
    cJSON_AddStringToObject(o, "data", data);
    cJSON_AddStringToObject(o, "mimeType", mime);
    return o;
}

static cJSON *resource_block(const char *uri, const char *mime, const char *text)
{
    cJSON *o = cJSON_CreateObject(), *r = cJSON_CreateObject();

    cJSON_AddStringToObject(r, "uri", uri);
    cJSON_AddStringToObject(r, "mimeType", mime);
    cJSON_AddStringToObject(r, "text", text);
    cJSON_AddStringToObject(o, "type", "resource");
    cJSON_AddItemToObject(o, "resource", r);
    return o;
}

/* Answers a tool call with these content blocks (a NULL-terminated list; takes them). */
static void answer_blocks(struct mcp_call *c, cJSON *first, ...)
{
    cJSON *res = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(res, "content");
    va_list ap;

    va_start(ap, first);
    for (cJSON *b = first; b; b = va_arg(ap, cJSON *))
        cJSON_AddItemToArray(content, b);
    va_end(ap);
    mcp_call_result(c, res);
}

/* Answers with one text block made with printf. */
static void answer_textf(struct mcp_call *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void answer_textf(struct mcp_call *c, const char *fmt, ...)
{
    char text[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    mcp_call_result_text(c, text, strlen(text));
}

/* A compact JSON text of v for a message ("{}" when v is NULL). Owned (free). */
static char *json_text(const cJSON *v)
{
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;

    return s ? s : strdup("{}");
}

/* ---- input requests and their answers ---- */

/* {"method":"elicitation/create","params":{"message","requestedSchema"}}; schema is JSON text. */
static cJSON *ask_elicit(const char *message, const char *schema)
{
    cJSON *r = cJSON_CreateObject(), *p = cJSON_AddObjectToObject(r, "params");

    cJSON_AddStringToObject(r, "method", "elicitation/create");
    cJSON_AddStringToObject(p, "message", message);
    cJSON_AddItemToObject(p, "requestedSchema", cJSON_Parse(schema));
    return r;
}

static cJSON *ask_sampling(const char *prompt, int max_tokens)
{
    cJSON *r = cJSON_CreateObject(), *p = cJSON_AddObjectToObject(r, "params");
    cJSON *msgs = cJSON_AddArrayToObject(p, "messages"), *m = cJSON_CreateObject();

    cJSON_AddStringToObject(r, "method", "sampling/createMessage");
    cJSON_AddStringToObject(m, "role", "user");
    cJSON_AddItemToObject(m, "content", text_block(prompt));
    cJSON_AddItemToArray(msgs, m);
    cJSON_AddNumberToObject(p, "maxTokens", max_tokens);
    return r;
}

static cJSON *ask_roots(void)
{
    cJSON *r = cJSON_CreateObject();

    cJSON_AddStringToObject(r, "method", "roots/list");
    cJSON_AddObjectToObject(r, "params");
    return r;
}

/* The client's answer to input `key` when it is an object, else NULL (none yet, or malformed:
 * the handler then asks again). Borrowed. */
static const cJSON *answer_of(const struct mcp_call *c, const char *key)
{
    const cJSON *v = mcp_call_input_response(c, key);

    return cJSON_IsObject(v) ? v : NULL;
}

/* An accepted elicitation's content.field when it is a string, else NULL. Borrowed. */
static const char *elicited_string(const struct mcp_call *c, const char *key, const char *field)
{
    const cJSON *a = answer_of(c, key);
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "content"), field);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A sampling answer's content.text, or NULL. Borrowed. */
static const char *sampled_text(const struct mcp_call *c, const char *key)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(answer_of(c, key), "content");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(content, "text");

    return cJSON_IsString(t) ? t->valuestring : NULL;
}

/* How many roots a roots/list answer holds, or -1 when it is not one. */
static int roots_count(const struct mcp_call *c, const char *key)
{
    const cJSON *roots = cJSON_GetObjectItemCaseSensitive(answer_of(c, key), "roots");

    return cJSON_IsArray(roots) ? cJSON_GetArraySize(roots) : -1;
}

/* Asks for one input: {key: req}. */
static void ask_one(struct mcp_call *c, const char *key, cJSON *req, const char *state)
{
    cJSON *reqs = cJSON_CreateObject();

    cJSON_AddItemToObject(reqs, key, req);
    mcp_call_input_required(c, reqs, state);
}

/* ---- the content tools ---- */

static void tool_simple_text(void *arg, struct mcp_call *c)
{
    (void)arg;
    answer_textf(c, "This is a simple text response for testing.");
}

static void tool_image(void *arg, struct mcp_call *c)
{
    (void)arg;
    answer_blocks(c, media_block("image", TEST_IMAGE_BASE64, "image/png"), NULL);
}

static void tool_audio(void *arg, struct mcp_call *c)
{
    (void)arg;
    answer_blocks(c, media_block("audio", TEST_AUDIO_BASE64, "audio/wav"), NULL);
}

static void tool_embedded(void *arg, struct mcp_call *c)
{
    (void)arg;
    answer_blocks(c,
                  resource_block("test://embedded-resource", "text/plain",
                                 "This is an embedded resource content."),
                  NULL);
}

static void tool_mixed(void *arg, struct mcp_call *c)
{
    (void)arg;
    answer_blocks(c, text_block("Multiple content types test:"),
                  media_block("image", TEST_IMAGE_BASE64, "image/png"),
                  resource_block("test://mixed-content-resource", "application/json",
                                 "{\"test\":\"data\",\"value\":123}"),
                  NULL);
}

static void tool_error(void *arg, struct mcp_call *c)
{
    (void)arg;
    mcp_call_tool_error(c, "This tool intentionally returns an error for testing");
}

/* ---- notifications during a call ---- */

static void tool_logging(void *arg, struct mcp_call *c)
{
    static const char *const steps[] = {"Tool execution started", "Tool processing data",
                                        "Tool execution completed"};

    (void)arg;
    for (size_t i = 0; i < 3; i++)
        mcp_call_log(c, MCP_LOG_INFO, "conformance-fixture", cJSON_CreateString(steps[i]));
    answer_textf(c, "Tool with logging executed successfully");
}

static void tool_progress(void *arg, struct mcp_call *c)
{
    char msg[64];

    (void)arg;
    for (int step = 0; step <= 100; step += 50) {
        snprintf(msg, sizeof(msg), "Completed step %d of 100", step);
        mcp_call_progress(c, step, 100, msg);
    }
    answer_textf(c, "Progress reported: 0, 50, 100 of 100");
}

/* 2026-07-28: a request that set no _meta log level hears no log message. */
static void tool_logging_probe(void *arg, struct mcp_call *c)
{
    (void)arg;
    mcp_call_log(c, MCP_LOG_INFO, "conformance-fixture",
                 cJSON_CreateString("Diagnostic trace logging activated"));
    answer_textf(c, "Logging evaluated");
}

/* 2026-07-28: what a call streams before its answer is notifications, never requests. */
static void tool_streaming(void *arg, struct mcp_call *c)
{
    (void)arg;
    mcp_call_progress(c, 50, 100, "half way");
    answer_textf(c, "Streaming complete");
}

static void tool_missing_capability(void *arg, struct mcp_call *c)
{
    (void)arg;
    /* The library refuses the call (-32021, or -32602 on a legacy session) unless the client
     * declared sampling: the tool says so with .requires. */
    answer_textf(c, "Success");
}

/* ---- list changes ---- */

static void tool_dynamic(void *arg, struct mcp_call *c)
{
    (void)arg;
    answer_textf(c, "This tool comes and goes with test_trigger_tool_change.");
}

static const struct mcp_tool dynamic_tool = {
    .name = "test_dynamic_tool",
    .description = "Listed only while test_trigger_tool_change last added it",
    .input_schema = NO_ARGS,
    .handler = tool_dynamic,
};

/* Adds or removes test_dynamic_tool, then tells every listener that the tools changed. */
static void tool_trigger_tools(void *arg, struct mcp_call *c)
{
    struct fixture *f = arg;
    struct errinfo err = {0};
    bool added;
    int rc;

    pthread_mutex_lock(&f->mu);
    added = !f->dynamic_tool;
    rc = added ? mcp_server_add_tool(f->srv, &dynamic_tool, &err)
               : mcp_server_remove_tool(f->srv, dynamic_tool.name, &err);
    if (rc == 0)
        f->dynamic_tool = added;
    pthread_mutex_unlock(&f->mu);
    if (rc < 0) {
        mcp_call_tool_error(c, err.msg);
        return;
    }
    mcp_server_notify_list_changed(f->srv, MCP_LIST_TOOLS);
    answer_textf(c, "Mutation triggered: test_dynamic_tool %s", added ? "added" : "removed");
}

static void prompt_dynamic(void *arg, struct mcp_call *c)
{
    cJSON *res = cJSON_CreateObject(), *msgs = cJSON_AddArrayToObject(res, "messages");
    cJSON *m = cJSON_CreateObject();

    (void)arg;
    cJSON_AddStringToObject(m, "role", "user");
    cJSON_AddItemToObject(m, "content",
                          text_block("A prompt added by test_trigger_prompt_change."));
    cJSON_AddItemToArray(msgs, m);
    mcp_call_result(c, res);
}

/* Adds test_dynamic_prompt the first time (the library cannot remove a prompt), then tells
 * every listener that the prompts changed. */
static void tool_trigger_prompts(void *arg, struct mcp_call *c)
{
    static const struct mcp_prompt p = {.name = "test_dynamic_prompt",
                                        .description = "Added by test_trigger_prompt_change",
                                        .get = prompt_dynamic};
    struct fixture *f = arg;
    struct errinfo err = {0};
    int rc = 0;

    pthread_mutex_lock(&f->mu);
    if (!f->dynamic_prompt) {
        rc = mcp_server_add_prompt(f->srv, &p, &err);
        f->dynamic_prompt = rc == 0;
    }
    pthread_mutex_unlock(&f->mu);
    if (rc < 0) {
        mcp_call_tool_error(c, err.msg);
        return;
    }
    mcp_server_notify_list_changed(f->srv, MCP_LIST_PROMPTS);
    answer_textf(c, "Mutation triggered: prompts changed");
}

/* Changes test://watched-resource and tells its subscribers. */
static void tool_update_watched(void *arg, struct mcp_call *c)
{
    struct fixture *f = arg;
    unsigned n;

    pthread_mutex_lock(&f->mu);
    n = ++f->watched;
    pthread_mutex_unlock(&f->mu);
    mcp_server_notify_resource_updated(f->srv, "test://watched-resource");
    answer_textf(c, "test://watched-resource is now at version %u", n);
}

/* ---- tools that ask the client (both eras) ---- */

static void tool_sampling(void *arg, struct mcp_call *c)
{
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(mcp_call_arguments(c), "prompt");
    const char *reply = sampled_text(c, "llm");

    (void)arg;
    if (!answer_of(c, "llm")) {
        ask_one(c, "llm", ask_sampling(prompt->valuestring, 100), NULL);
        return;
    }
    answer_textf(c, "LLM response: %s", reply ? reply : "(no text)");
}

static const char elicit_user_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"username\":{\"type\":\"string\",\"description\":\"User's response\"},"
    "\"email\":{\"type\":\"string\",\"description\":\"User's email address\"}},"
    "\"required\":[\"username\",\"email\"]}";

static const char elicit_defaults_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\",\"description\":\"User name\",\"default\":\"John Doe\"},"
    "\"age\":{\"type\":\"integer\",\"description\":\"User age\",\"default\":30},"
    "\"score\":{\"type\":\"number\",\"description\":\"User score\",\"default\":95.5},"
    "\"status\":{\"type\":\"string\",\"description\":\"User status\","
    "\"enum\":[\"active\",\"inactive\",\"pending\"],\"default\":\"active\"},"
    "\"verified\":{\"type\":\"boolean\",\"description\":\"Verification status\","
    "\"default\":true}},\"required\":[]}";

static const char elicit_enums_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"untitledSingle\":{\"type\":\"string\",\"description\":\"Select one option\","
    "\"enum\":[\"option1\",\"option2\",\"option3\"]},"
    "\"titledSingle\":{\"type\":\"string\",\"description\":\"Select one option with titles\","
    "\"oneOf\":[{\"const\":\"value1\",\"title\":\"First Option\"},"
    "{\"const\":\"value2\",\"title\":\"Second Option\"},"
    "{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
    "\"legacyEnum\":{\"type\":\"string\",\"description\":\"Select one option (legacy)\","
    "\"enum\":[\"opt1\",\"opt2\",\"opt3\"],"
    "\"enumNames\":[\"Option One\",\"Option Two\",\"Option Three\"]},"
    "\"untitledMulti\":{\"type\":\"array\",\"description\":\"Select multiple options\","
    "\"minItems\":1,\"maxItems\":3,"
    "\"items\":{\"type\":\"string\",\"enum\":[\"option1\",\"option2\",\"option3\"]}},"
    "\"titledMulti\":{\"type\":\"array\",\"description\":\"Select multiple options with titles\","
    "\"minItems\":1,\"maxItems\":3,\"items\":{\"anyOf\":["
    "{\"const\":\"value1\",\"title\":\"First Choice\"},"
    "{\"const\":\"value2\",\"title\":\"Second Choice\"},"
    "{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}},"
    "\"required\":[]}";

/* One elicitation, then its result as text: "<prefix>: action=..., content={...}". */
static void elicit_and_report(struct mcp_call *c, const char *message, const char *schema,
                              const char *prefix)
{
    const cJSON *a = answer_of(c, "form");
    const cJSON *action = cJSON_GetObjectItemCaseSensitive(a, "action");
    char *content;

    if (!a || !cJSON_IsString(action)) {
        ask_one(c, "form", ask_elicit(message, schema), NULL);
        return;
    }
    content = json_text(cJSON_GetObjectItemCaseSensitive(a, "content"));
    answer_textf(c, "%s: action=%s, content=%s", prefix, action->valuestring, content);
    free(content);
}

static void tool_elicitation(void *arg, struct mcp_call *c)
{
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(mcp_call_arguments(c), "message");

    (void)arg;
    elicit_and_report(c, msg->valuestring, elicit_user_schema, "User response");
}

static void tool_elicitation_defaults(void *arg, struct mcp_call *c)
{
    (void)arg;
    elicit_and_report(c, "Please review and update the form fields with defaults",
                      elicit_defaults_schema, "Elicitation completed");
}

static void tool_elicitation_enums(void *arg, struct mcp_call *c)
{
    (void)arg;
    elicit_and_report(c, "Please select options from the enum fields", elicit_enums_schema,
                      "Elicitation completed");
}

/* ---- the InputRequiredResult (SEP-2322) tools ---- */

static const char name_schema[] = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
                                  "\"string\"}},\"required\":[\"name\"]}";
static const char ok_schema[] = "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":"
                                "\"boolean\"}},\"required\":[\"ok\"]}";

static void tool_irr_elicitation(void *arg, struct mcp_call *c)
{
    const char *name = elicited_string(c, "user_name", "name");

    (void)arg;
    if (!name) { /* none yet, a wrong key, or a malformed answer: ask (again) */
        ask_one(c, "user_name", ask_elicit("What is your name?", name_schema), NULL);
        return;
    }
    answer_textf(c, "Hello, %s!", name);
}

static void tool_irr_sampling(void *arg, struct mcp_call *c)
{
    const char *text = sampled_text(c, "capital_question");

    (void)arg;
    if (!text) {
        ask_one(c, "capital_question", ask_sampling("What is the capital of France?", 100), NULL);
        return;
    }
    answer_textf(c, "Sampling result: %s", text);
}

static void tool_irr_roots(void *arg, struct mcp_call *c)
{
    int n = roots_count(c, "client_roots");

    (void)arg;
    if (n < 0) {
        ask_one(c, "client_roots", ask_roots(), NULL);
        return;
    }
    answer_textf(c, "Found %d root(s)", n);
}

static void tool_irr_request_state(void *arg, struct mcp_call *c)
{
    const char *state = mcp_call_request_state(c);
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(answer_of(c, "confirm"), "content"), "ok");

    (void)arg;
    if (state && strcmp(state, "request-state") == 0 && cJSON_IsTrue(ok)) {
        answer_textf(c, "state-ok: requestState validated");
        return;
    }
    ask_one(c, "confirm", ask_elicit("Please confirm", ok_schema), "request-state");
}

static void tool_irr_multiple(void *arg, struct mcp_call *c)
{
    const char *state = mcp_call_request_state(c);
    const char *name = elicited_string(c, "user_name", "name");
    const char *greeting = sampled_text(c, "greeting");
    int roots = roots_count(c, "client_roots");
    cJSON *reqs;

    (void)arg;
    if (state && strcmp(state, "multiple-inputs") == 0 && name && greeting && roots >= 0) {
        answer_textf(c, "Name: %s; Greeting: %s; Roots: %d", name, greeting, roots);
        return;
    }
    reqs = cJSON_CreateObject();
    cJSON_AddItemToObject(reqs, "user_name", ask_elicit("What is your name?", name_schema));
    cJSON_AddItemToObject(reqs, "greeting", ask_sampling("Generate a greeting", 50));
    cJSON_AddItemToObject(reqs, "client_roots", ask_roots());
    mcp_call_input_required(c, reqs, "multiple-inputs");
}

/* Three rounds: a name (state "round1"), a colour (state "round2:<name>"), then the answer. The
 * state is all the server keeps between rounds; the library seals it against tampering. */
static void tool_irr_multi_round(void *arg, struct mcp_call *c)
{
    static const char color_schema[] = "{\"type\":\"object\",\"properties\":{\"color\":{\"type\":"
                                       "\"string\"}},\"required\":[\"color\"]}";
    const char *state = mcp_call_request_state(c);
    const char *name = elicited_string(c, "step1", "name");
    const char *color = elicited_string(c, "step2", "color");
    char next[300];

    (void)arg;
    if (state && strcmp(state, "round1") == 0 && name) {
        snprintf(next, sizeof(next), "round2:%.200s", name);
        ask_one(c, "step2", ask_elicit("Step 2: What is your favorite color?", color_schema), next);
        return;
    }
    if (state && strncmp(state, "round2:", 7) == 0 && color) {
        answer_textf(c, "Multi-round complete for %s who likes %s", state + 7, color);
        return;
    }
    ask_one(c, "step1", ask_elicit("Step 1: What is your name?", name_schema), "round1");
}

static void tool_irr_tampered(void *arg, struct mcp_call *c)
{
    const char *state = mcp_call_request_state(c);

    (void)arg;
    /* A tampered state never reaches this handler: the library refuses it (-32602). */
    if (state && strcmp(state, "tamper-test") == 0 && answer_of(c, "confirm")) {
        answer_textf(c, "integrity-ok: state verified");
        return;
    }
    ask_one(c, "confirm", ask_elicit("Please confirm", ok_schema), "tamper-test");
}

/* Asks only for what the client declared it can give. */
static void tool_irr_capabilities(void *arg, struct mcp_call *c)
{
    static const char value_schema[] = "{\"type\":\"object\",\"properties\":{\"value\":{\"type\":"
                                       "\"string\"}},\"required\":[\"value\"]}";
    const cJSON *caps = mcp_call_client_capabilities(c);
    const cJSON *got[2] = {answer_of(c, "elicit_input"), answer_of(c, "sample_input")};
    cJSON *reqs;

    (void)arg;
    if (got[0] || got[1]) {
        answer_textf(c, "capabilities-ok: received %s%s%s", got[0] ? "elicit_input" : "",
                     got[0] && got[1] ? "," : "", got[1] ? "sample_input" : "");
        return;
    }
    reqs = cJSON_CreateObject();
    if (cJSON_GetObjectItemCaseSensitive(caps, "elicitation"))
        cJSON_AddItemToObject(reqs, "elicit_input", ask_elicit("Elicitation input", value_schema));
    if (cJSON_GetObjectItemCaseSensitive(caps, "sampling"))
        cJSON_AddItemToObject(reqs, "sample_input", ask_sampling("Sample request", 50));
    if (!reqs->child) {
        cJSON_Delete(reqs);
        answer_textf(c, "No supported capabilities declared");
        return;
    }
    mcp_call_input_required(c, reqs, "capabilities-test");
}

/* ---- JSON Schema 2020-12 preservation (SEP-1613, SEP-2106) ---- */

static const char schema_2020_12[] =
    "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
    "\"$defs\":{\"address\":{\"$anchor\":\"addressDef\",\"type\":\"object\",\"properties\":{"
    "\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},"
    "\"properties\":{\"name\":{\"type\":\"string\"},\"address\":{\"$ref\":\"#/$defs/address\"},"
    "\"contactMethod\":{\"type\":\"string\",\"enum\":[\"phone\",\"email\"]},"
    "\"phone\":{\"type\":\"string\"},\"email\":{\"type\":\"string\"}},"
    "\"allOf\":[{\"anyOf\":[{\"required\":[\"phone\"]},{\"required\":[\"email\"]}]}],"
    "\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}},"
    "\"required\":[\"contactMethod\"]},"
    "\"then\":{\"required\":[\"phone\"]},\"else\":{\"required\":[\"email\"]},"
    "\"additionalProperties\":false}";

static void tool_schema_2020_12(void *arg, struct mcp_call *c)
{
    char *args = json_text(mcp_call_arguments(c));

    (void)arg;
    answer_textf(c, "JSON Schema 2020-12 tool called with: %s", args);
    free(args);
}

/* ---- the tool table ---- */

static const struct mcp_tool tools[] = {
    {.name = "test_simple_text",
     .description = "Tests simple text content response",
     .handler = tool_simple_text},
    {.name = "test_image_content",
     .description = "Tests image content response",
     .handler = tool_image},
    {.name = "test_audio_content",
     .description = "Tests audio content response",
     .handler = tool_audio},
    {.name = "test_embedded_resource",
     .description = "Tests embedded resource content response",
     .handler = tool_embedded},
    {.name = "test_multiple_content_types",
     .description = "Tests response with multiple content types (text, image, resource)",
     .handler = tool_mixed},
    {.name = "test_tool_with_logging",
     .description = "Tests tool that emits log messages during execution",
     .handler = tool_logging},
    {.name = "test_tool_with_progress",
     .description = "Tests tool that reports progress notifications",
     .handler = tool_progress},
    {.name = "test_error_handling",
     .description = "Tests error response handling",
     .handler = tool_error},
    {.name = "test_sampling",
     .description = "Tests server-initiated sampling (LLM completion request)",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\","
                     "\"description\":\"The prompt to send to the LLM\"}},"
                     "\"required\":[\"prompt\"]}",
     .requires = "sampling",
     .handler = tool_sampling},
    {.name = "test_elicitation",
     .description = "Tests server-initiated elicitation (user input request)",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\","
                     "\"description\":\"The message to show the user\"}},"
                     "\"required\":[\"message\"]}",
     .requires = "elicitation",
     .handler = tool_elicitation},
    {.name = "test_elicitation_sep1034_defaults",
     .description = "Tests elicitation with default values per SEP-1034",
     .requires = "elicitation",
     .handler = tool_elicitation_defaults},
    {.name = "test_elicitation_sep1330_enums",
     .description = "Tests elicitation with enum schema improvements per SEP-1330",
     .requires = "elicitation",
     .handler = tool_elicitation_enums},
    {.name = "test_missing_capability",
     .description = "Needs the client's sampling capability; refused (-32021) without it",
     .requires = "sampling",
     .handler = tool_missing_capability},
    {.name = "test_streaming_elicitation",
     .description = "Streams a notification before its answer, never a request",
     .requires = "elicitation",
     .handler = tool_streaming},
    {.name = "test_logging_tool",
     .description = "Logs at info: heard only by a request that set a log level",
     .handler = tool_logging_probe},
    {.name = "test_trigger_tool_change",
     .description = "Adds or removes test_dynamic_tool and notifies tools list changes",
     .handler = tool_trigger_tools,
     .arg = &fx},
    {.name = "test_trigger_prompt_change",
     .description = "Changes the prompts and notifies prompts list changes",
     .handler = tool_trigger_prompts,
     .arg = &fx},
    {.name = "test_update_watched_resource",
     .description = "Changes test://watched-resource and notifies its subscribers",
     .handler = tool_update_watched,
     .arg = &fx},
    {.name = "test_input_required_result_elicitation",
     .description = "MRTR: returns InputRequiredResult with elicitation request",
     .handler = tool_irr_elicitation},
    {.name = "test_input_required_result_sampling",
     .description = "MRTR: returns InputRequiredResult with sampling request",
     .handler = tool_irr_sampling},
    {.name = "test_input_required_result_list_roots",
     .description = "MRTR: returns InputRequiredResult with roots/list request",
     .handler = tool_irr_roots},
    {.name = "test_input_required_result_request_state",
     .description = "MRTR: returns InputRequiredResult with requestState",
     .handler = tool_irr_request_state},
    {.name = "test_input_required_result_multiple_inputs",
     .description = "MRTR: returns InputRequiredResult with multiple input requests",
     .handler = tool_irr_multiple},
    {.name = "test_input_required_result_multi_round",
     .description = "MRTR: multi-round InputRequiredResult workflow",
     .handler = tool_irr_multi_round},
    {.name = "test_input_required_result_tampered_state",
     .description = "MRTR: integrity-protected requestState",
     .handler = tool_irr_tampered},
    {.name = "test_input_required_result_capabilities",
     .description = "MRTR: respects client capabilities in inputRequests",
     .handler = tool_irr_capabilities},
    {.name = "json_schema_2020_12_tool",
     .description = "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
     .input_schema = schema_2020_12,
     .handler = tool_schema_2020_12},
};

/* ---- resources ---- */

/* {"contents":[{uri, mimeType, <key>: value}]}. */
static void answer_contents(struct mcp_call *c, const char *uri, const char *mime, const char *key,
                            const char *value)
{
    cJSON *res = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(res, "contents");
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "uri", uri);
    cJSON_AddStringToObject(o, "mimeType", mime);
    cJSON_AddStringToObject(o, key, value);
    cJSON_AddItemToArray(arr, o);
    mcp_call_result(c, res);
}

static void read_static_text(void *arg, struct mcp_call *c)
{
    (void)arg;
    answer_contents(c, "test://static-text", "text/plain", "text",
                    "This is the content of the static text resource.");
}

static void read_static_binary(void *arg, struct mcp_call *c)
{
    (void)arg;
    answer_contents(c, "test://static-binary", "image/png", "blob", TEST_IMAGE_BASE64);
}

static void read_watched(void *arg, struct mcp_call *c)
{
    struct fixture *f = arg;
    char text[64];
    unsigned n;

    pthread_mutex_lock(&f->mu);
    n = f->watched;
    pthread_mutex_unlock(&f->mu);
    if (n == 0)
        snprintf(text, sizeof(text), "Watched resource content");
    else
        snprintf(text, sizeof(text), "Watched resource content (version %u)", n);
    answer_contents(c, "test://watched-resource", "text/plain", "text", text);
}

static void read_template(void *arg, struct mcp_call *c)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(mcp_call_uri_vars(c), "id");
    cJSON *body = cJSON_CreateObject();
    char data[300], *text;

    (void)arg;
    snprintf(data, sizeof(data), "Data for ID: %.200s", id->valuestring);
    cJSON_AddStringToObject(body, "id", id->valuestring);
    cJSON_AddTrueToObject(body, "templateTest");
    cJSON_AddStringToObject(body, "data", data);
    text = json_text(body);
    cJSON_Delete(body);
    answer_contents(c, mcp_call_name(c), "application/json", "text", text);
    free(text);
}

static const struct mcp_resource resources[] = {
    {.uri = "test://static-text",
     .name = "static-text",
     .title = "Static Text Resource",
     .description = "A static text resource for testing",
     .mime_type = "text/plain",
     .size = -1,
     .read = read_static_text},
    {.uri = "test://static-binary",
     .name = "static-binary",
     .title = "Static Binary Resource",
     .description = "A static binary resource (image) for testing",
     .mime_type = "image/png",
     .size = -1,
     .read = read_static_binary},
    {.uri = "test://watched-resource",
     .name = "watched-resource",
     .title = "Watched Resource",
     .description = "A resource that changes when test_update_watched_resource is called",
     .mime_type = "text/plain",
     .size = -1,
     .read = read_watched,
     .arg = &fx},
};

static const struct mcp_resource_template templates[] = {
    {.uri_template = "test://template/{id}/data",
     .name = "template",
     .title = "Resource Template",
     .description = "A resource template with parameter substitution",
     .mime_type = "application/json",
     .read = read_template},
};

/* ---- prompts ---- */

/* Adds {"role":"user","content":content} to a messages array. */
static void add_message(cJSON *msgs, cJSON *content)
{
    cJSON *m = cJSON_CreateObject();

    cJSON_AddStringToObject(m, "role", "user");
    cJSON_AddItemToObject(m, "content", content);
    cJSON_AddItemToArray(msgs, m);
}

/* A prompt's string argument (checked present by the library when required). */
static const char *prompt_arg(const struct mcp_call *c, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(mcp_call_arguments(c), name);

    return cJSON_IsString(v) ? v->valuestring : "";
}

static void prompt_simple(void *arg, struct mcp_call *c)
{
    cJSON *res = cJSON_CreateObject();

    (void)arg;
    add_message(cJSON_AddArrayToObject(res, "messages"),
                text_block("This is a simple prompt for testing."));
    mcp_call_result(c, res);
}

static void prompt_with_args(void *arg, struct mcp_call *c)
{
    cJSON *res = cJSON_CreateObject();
    char text[600];

    (void)arg;
    snprintf(text, sizeof(text), "Prompt with arguments: arg1='%.250s', arg2='%.250s'",
             prompt_arg(c, "arg1"), prompt_arg(c, "arg2"));
    add_message(cJSON_AddArrayToObject(res, "messages"), text_block(text));
    mcp_call_result(c, res);
}

static void prompt_embedded(void *arg, struct mcp_call *c)
{
    cJSON *res = cJSON_CreateObject(), *msgs = cJSON_AddArrayToObject(res, "messages");

    (void)arg;
    add_message(msgs, resource_block(prompt_arg(c, "resourceUri"), "text/plain",
                                     "Embedded resource content for testing."));
    add_message(msgs, text_block("Please process the embedded resource above."));
    mcp_call_result(c, res);
}

static void prompt_image(void *arg, struct mcp_call *c)
{
    cJSON *res = cJSON_CreateObject(), *msgs = cJSON_AddArrayToObject(res, "messages");

    (void)arg;
    add_message(msgs, media_block("image", TEST_IMAGE_BASE64, "image/png"));
    add_message(msgs, text_block("Please analyze the image above."));
    mcp_call_result(c, res);
}

/* InputRequiredResult on a request other than tools/call. */
static void prompt_irr(void *arg, struct mcp_call *c)
{
    static const char schema[] = "{\"type\":\"object\",\"properties\":{\"context\":{\"type\":"
                                 "\"string\"}},\"required\":[\"context\"]}";
    const char *context = elicited_string(c, "user_context", "context");
    cJSON *res;
    char text[300];

    (void)arg;
    if (!context) {
        ask_one(c, "user_context", ask_elicit("What context should the prompt use?", schema), NULL);
        return;
    }
    res = cJSON_CreateObject();
    snprintf(text, sizeof(text), "Prompt with context: %.250s", context);
    add_message(cJSON_AddArrayToObject(res, "messages"), text_block(text));
    mcp_call_result(c, res);
}

static const struct mcp_prompt_argument args_two[] = {
    {.name = "arg1", .description = "First test argument", .required = true},
    {.name = "arg2", .description = "Second test argument", .required = true},
};

static const struct mcp_prompt_argument args_uri[] = {
    {.name = "resourceUri", .description = "URI of the resource to embed", .required = true},
};

static const struct mcp_prompt prompts[] = {
    {.name = "test_simple_prompt",
     .title = "Simple Test Prompt",
     .description = "A simple prompt without arguments",
     .get = prompt_simple},
    {.name = "test_prompt_with_arguments",
     .title = "Prompt With Arguments",
     .description = "A prompt with required arguments",
     .arguments = args_two,
     .narguments = 2,
     .get = prompt_with_args},
    {.name = "test_prompt_with_embedded_resource",
     .title = "Prompt With Embedded Resource",
     .description = "A prompt that includes an embedded resource",
     .arguments = args_uri,
     .narguments = 1,
     .get = prompt_embedded},
    {.name = "test_prompt_with_image",
     .title = "Prompt With Image",
     .description = "A prompt that includes image content",
     .get = prompt_image},
    {.name = "test_input_required_result_prompt",
     .title = "Prompt Needing Input",
     .description = "MRTR: prompt that requires elicitation input",
     .get = prompt_irr},
};

/* ---- completion ---- */

/* Suggestions for an argument: the candidates that start with what the user typed. */
static void complete(void *arg, struct mcp_call *c)
{
    static const struct {
        const char *ref; /* a prompt name or a template */
        const char *arg;
        const char *values[4];
    } rows[] = {
        {"test_prompt_with_arguments", "arg1", {"paris", "park", "party", NULL}},
        {"test_prompt_with_arguments", "arg2", {"testValue1", "testValue2", NULL}},
        {"test_prompt_with_embedded_resource",
         "resourceUri",
         {"test://static-text", "test://static-binary", "test://watched-resource", NULL}},
        {"test://template/{id}/data", "id", {"1", "2", "3", "123"}},
    };
    const cJSON *params = mcp_call_params(c);
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(params, "ref");
    const cJSON *argument = cJSON_GetObjectItemCaseSensitive(params, "argument");
    const cJSON *rname = cJSON_GetObjectItemCaseSensitive(ref, "name");
    const cJSON *ruri = cJSON_GetObjectItemCaseSensitive(ref, "uri");
    const cJSON *aname = cJSON_GetObjectItemCaseSensitive(argument, "name");
    const cJSON *aval = cJSON_GetObjectItemCaseSensitive(argument, "value");
    const char *which = cJSON_IsString(rname)  ? rname->valuestring
                        : cJSON_IsString(ruri) ? ruri->valuestring
                                               : "";
    const char *typed = cJSON_IsString(aval) ? aval->valuestring : "";
    cJSON *res = cJSON_CreateObject(), *comp = cJSON_AddObjectToObject(res, "completion");
    cJSON *values = cJSON_AddArrayToObject(comp, "values");
    int n = 0;

    (void)arg;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (strcmp(rows[i].ref, which) != 0 || !cJSON_IsString(aname) ||
            strcmp(rows[i].arg, aname->valuestring) != 0)
            continue;
        for (size_t j = 0; j < 4 && rows[i].values[j]; j++)
            if (strncmp(rows[i].values[j], typed, strlen(typed)) == 0) {
                cJSON_AddItemToArray(values, cJSON_CreateString(rows[i].values[j]));
                n++;
            }
    }
    cJSON_AddNumberToObject(comp, "total", n);
    cJSON_AddFalseToObject(comp, "hasMore");
    mcp_call_result(c, res);
}

/* ---- main ---- */

static int register_all(struct mcp_server *srv, struct errinfo *err)
{
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
        if (mcp_server_add_tool(srv, &tools[i], err) < 0)
            return -1;
    for (size_t i = 0; i < sizeof(resources) / sizeof(resources[0]); i++)
        if (mcp_server_add_resource(srv, &resources[i], err) < 0)
            return -1;
    for (size_t i = 0; i < sizeof(templates) / sizeof(templates[0]); i++)
        if (mcp_server_add_resource_template(srv, &templates[i], err) < 0)
            return -1;
    for (size_t i = 0; i < sizeof(prompts) / sizeof(prompts[0]); i++)
        if (mcp_server_add_prompt(srv, &prompts[i], err) < 0)
            return -1;
    return mcp_server_set_completion(srv, complete, NULL, err);
}

static int parse_port(int argc, char **argv, int *port)
{
    char *end;
    long v;

    *port = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--port") != 0 || i + 1 >= argc) {
            fprintf(stderr, "usage: %s [--port N]   (0, the default, takes a free port)\n",
                    argv[0]);
            return -1;
        }
        errno = 0;
        v = strtol(argv[++i], &end, 10);
        if (errno || *end || v < 0 || v > 65535) {
            fprintf(stderr, "fixture: --port needs a number from 0 to 65535, not %s\n", argv[i]);
            return -1;
        }
        *port = (int)v;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct mcp_server_info info = {
        .name = "runbox-conformance-fixture",
        .version = "1.0.0",
        .title = "Runbox conformance fixture",
        .instructions = "The tools, resources and prompts of the MCP conformance suite.",
        .notifies =
            MCP_NOTIFY_TOOLS | MCP_NOTIFY_PROMPTS | MCP_NOTIFY_RESOURCES | MCP_NOTIFY_UPDATES,
    };
    struct mcp_http_options opt = {
        .mcp_path = "/mcp", .sse_path = "/sse", .message_path = "/message", .ws_path = "/ws"};
    struct mcp_http_server *http = NULL;
    struct errinfo err = {0};
    sigset_t stop;
    int port, sig = 0, rc = 1;

    if (parse_port(argc, argv, &port) < 0)
        return 2;
    /* Block the stop signals before any thread starts, so every thread inherits the mask and
     * only sigwait below takes them. */
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    fx.srv = mcp_server_new(&info, &err);
    if (!fx.srv || register_all(fx.srv, &err) < 0)
        goto out;
    opt.server = fx.srv;
    http = mcp_http_serve(&opt, "127.0.0.1", port, 0, &err);
    if (!http)
        goto out;
    printf("listening on http://127.0.0.1:%d/mcp\n", mcp_http_server_port(http));
    fflush(stdout);
    sigwait(&stop, &sig);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "fixture: %s\n", err.msg[0] ? err.msg : "failed to start");
    mcp_http_server_stop(http);
    mcp_server_free(fx.srv);
    return rc;
}
