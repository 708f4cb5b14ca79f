/* mcp-proxy/cli_call.c - `runbox call TOOL ...` and `runbox tools`.
 *
 * A call is validated here with the catalog's schema and the MCP server's messages before
 * anything is sent, then goes to POST /tool/<name>. A tool whose catalog budget is "long" (exec,
 * kill, the Studio tools) is asked for with Accept: text/event-stream, so that the daemon's
 * progress events (for exec: the latest output lines) reach the terminal while it runs; the
 * stream ends with the answer the plain request would have had. */
#include "cli_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "jsonbuf.h"
#include "upstream.h"

static const char call_help[] =
    "usage: runbox call [--json] [--quiet] TOOL [JSON | key=value ...]\n"
    "\n"
    "Calls one tool of runboxd and prints its result: text as it is, JSON pretty-printed.\n"
    "The arguments are one JSON object, or key=value pairs read by the tool's schema (a string\n"
    "stays text; numbers, booleans, arrays and objects are JSON); key:=JSON is always JSON.\n"
    "They are checked before anything is sent, with the MCP server's messages.\n"
    "\n"
    "  --json     print the MCP result object ({\"content\":[...],\"isError\":...})\n"
    "  --quiet    do not show exec's output on stderr while it runs\n"
    "\n"
    "examples:\n"
    "  runbox call write_file path=/hello.txt content=hi\n"
    "  runbox call read_file '{\"path\":\"/hello.txt\"}'\n"
    "  runbox call exec command='npm test' timeout_ms=90000\n"
    "\n"
    "exit: 0 done, 1 the tool failed (isError), 2 bad usage or arguments (nothing sent),\n"
    "      3 runboxd is not reachable\n";

static const char tools_help[] =
    "usage: runbox tools [--json] [GROUP | PROFILE | external]\n"
    "\n"
    "Lists the tools runbox serves (RUNBOX_TOOLS), grouped, one line each, then, when runboxd\n"
    "runs, the tools of its external MCP servers (group external). A group (workspace, exec,\n"
    "console, studio-scripts, ...) or a profile (sandbox, studio, readonly) narrows the list.\n"
    "--json prints {\"groups\":[{\"group\",\"tools\":[{name,title,description}]}]}.\n"
    "The built-in tools need no daemon.\n";

/* ---- printing a result ---- */

/* The MCP tools/call result, as the stdio server builds it (proxy.c, mcp_call.c). Owned. */
static cJSON *mcp_result(bool has_output_schema, const struct upstream_answer *a)
{
    cJSON *res = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(res, "content");
    cJSON *item = cJSON_CreateObject();
    char *text = NULL;
    const cJSON *structured = a->structured;

    cJSON_AddItemToArray(content, item);
    cJSON_AddStringToObject(item, "type", "text");
    if (!a->ok) {
        cJSON *e = cJSON_CreateObject();

        cJSON_AddStringToObject(e, "error", a->error ? a->error : "");
        cJSON_AddBoolToObject(e, "timeout", a->timeout);
        text = cJSON_PrintUnformatted(e);
        cJSON_Delete(e);
    } else if (cJSON_IsString(a->result)) {
        text = strdup(a->result->valuestring);
    } else if (a->result) {
        text = cJSON_PrintUnformatted(a->result);
        if (!structured && cJSON_IsObject(a->result))
            structured = a->result;
    }
    cJSON_AddStringToObject(item, "text", text ? text : "");
    free(text);
    cJSON_AddBoolToObject(res, "isError", !a->ok);
    if (a->ok && cJSON_IsObject(structured) && has_output_schema)
        cJSON_AddItemToObject(res, "structuredContent", cJSON_Duplicate(structured, 1));
    return res;
}

/* The tool being called: from the catalog, or one runboxd lists beside it (GET /tools: an
 * external MCP server's), known by its tools/list entry only. */
struct called {
    const char *name;
    const cJSON *input_schema; /* borrowed */
    bool has_output_schema;
    bool stream; /* ask for progress events (catalog budget "long") */
};

static int print_answer(struct cli *c, const struct called *tool, const struct upstream_answer *a,
                        bool json)
{
    if (json) {
        cJSON *res = mcp_result(tool->has_output_schema, a);

        cli_print_json(res);
        cJSON_Delete(res);
    } else if (!a->ok) {
        cli_err(c, "%s: %s", tool->name, a->error ? a->error : "failed");
    } else if (cJSON_IsString(a->result)) {
        size_t n = strlen(a->result->valuestring);

        fputs(a->result->valuestring, stdout);
        if (n == 0 || a->result->valuestring[n - 1] != '\n')
            fputc('\n', stdout);
    } else if (a->result) {
        cli_print_json(a->result);
    }
    return a->ok ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

/* ---- the streamed call ---- */

#define SHOWN_MAX 256 /* output lines remembered to tell new ones from repeated ones */

struct stream {
    struct cli *c;
    struct cli_sse sse;
    bool quiet;
    bool answered;
    long status;
    char *body;             /* owned: the answer's body as JSON text */
    char *shown[SHOWN_MAX]; /* owned: the last output lines shown, oldest first */
    size_t nshown;
    struct errinfo err;
};

static void remember(struct stream *s, const char *line, size_t len)
{
    if (s->nshown == SHOWN_MAX) {
        free(s->shown[0]);
        memmove(s->shown, s->shown + 1, (SHOWN_MAX - 1) * sizeof(s->shown[0]));
        s->nshown--;
    }
    s->shown[s->nshown++] = strndup(line, len);
}

static void forget_all(struct stream *s)
{
    for (size_t i = 0; i < s->nshown; i++)
        free(s->shown[i]);
    s->nshown = 0;
}

/* exec's progress says "running for N s; latest output:\n<the last lines>": a window over the
 * output that moves on. The lines shown already are the longest end of what was shown that
 * starts the window; the rest is new and goes to stderr. */
static void show_progress(struct stream *s, const char *data, size_t len)
{
    cJSON *doc = cJSON_ParseWithLength(data, len);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(doc, "message");
    const char *out = cJSON_IsString(m) ? strstr(m->valuestring, "latest output:\n") : NULL;
    const char *lines[SHOWN_MAX];
    size_t lens[SHOWN_MAX], n = 0, k;

    if (s->quiet || !out)
        goto done;
    for (const char *p = out + 15; *p && n < SHOWN_MAX;) {
        const char *nl = strchr(p, '\n');

        lines[n] = p;
        lens[n++] = nl ? (size_t)(nl - p) : strlen(p);
        p = nl ? nl + 1 : p + strlen(p);
    }
    for (k = n < s->nshown ? n : s->nshown; k > 0; k--) {
        size_t i = 0;

        while (i < k && strlen(s->shown[s->nshown - k + i]) == lens[i] &&
               memcmp(s->shown[s->nshown - k + i], lines[i], lens[i]) == 0)
            i++;
        if (i == k)
            break;
    }
    for (size_t i = k; i < n; i++) {
        fprintf(stderr, "%.*s\n", (int)lens[i], lines[i]);
        remember(s, lines[i], lens[i]);
    }
    fflush(stderr);
done:
    cJSON_Delete(doc);
}

static int on_event(void *ctx, const struct cli_sse_event *ev)
{
    struct stream *s = ctx;
    cJSON *doc;
    const cJSON *st, *body;

    if (strcmp(ev->event, "progress") == 0) {
        show_progress(s, ev->data, ev->data_len);
        return 0;
    }
    if (strcmp(ev->event, "answer") != 0)
        return 0;
    doc = upstream_parse(ev->data, ev->data_len);
    st = cJSON_GetObjectItemCaseSensitive(doc, "status");
    body = cJSON_GetObjectItemCaseSensitive(doc, "body");
    if (cJSON_IsNumber(st) && body) {
        s->status = (long)st->valuedouble;
        s->body = cJSON_PrintUnformatted(body);
        s->answered = s->body != NULL;
    }
    cJSON_Delete(doc);
    return 1;
}

static int on_stream_body(void *ctx, const char *buf, size_t n)
{
    struct stream *s = ctx;

    return cli_sse_feed(&s->sse, buf, n, &s->err) != 0;
}

/* POST /tool/<name> as a stream; falls back to a plain answer when the daemon sends JSON. */
static int call_streamed(struct cli *c, const char *name, const char *args, bool quiet,
                         struct upstream_answer *a)
{
    struct stream s = {.c = c, .quiet = quiet};
    struct cli_http_req q = {.method = "POST",
                             .body = args,
                             .body_len = strlen(args),
                             .accept = "text/event-stream, application/json",
                             .timeout_ms = c->call_timeout_ms,
                             .ctx = &s};
    struct cli_http_reply rep;
    struct upstream_reply r;
    char path[200], *problem = NULL;
    int rc = 0;

    snprintf(path, sizeof(path), "/tool/%s", name);
    q.path = path;
    q.on_body = on_stream_body;
    q.stream_type = "text/event-stream";
    memset(a, 0, sizeof(*a));
    cli_sse_init(&s.sse, on_event, &s);
    cli_http_do(&c->target, &q, &rep);
    if (rep.r.outcome == UPSTREAM_ANSWERED &&
        strncmp(rep.content_type, "text/event-stream", 17) != 0) {
        /* A plain answer (a daemon that does not stream, or a refusal before the call). */
        problem = cli_reply_problem(c, &rep);
        if (problem) {
            cli_err(c, "%s", problem);
            rc = CLI_EXIT_DOWN;
        } else if (upstream_map_answer(&rep.r, c->target.base_url, a) < 0) {
            rc = CLI_EXIT_FAILED;
        }
    } else if (s.answered) {
        memset(&r, 0, sizeof(r));
        r.outcome = UPSTREAM_ANSWERED;
        r.status = s.status;
        r.body = s.body;
        r.body_len = strlen(s.body);
        r.error = "";
        if (upstream_map_answer(&r, c->target.base_url, a) < 0)
            rc = CLI_EXIT_FAILED;
    } else if (rep.r.outcome == UPSTREAM_TIMEOUT) {
        upstream_map_answer(&rep.r, c->target.base_url, a);
    } else {
        problem = cli_reply_problem(c, &rep);
        if (!problem && rep.r.outcome == UPSTREAM_ANSWERED) {
            if (s.err.msg[0])
                problem = strdup(s.err.msg);
            else
                problem = strdup("runboxd's stream ended before its answer; the call may have "
                                 "been applied - check before repeating");
        }
        if (problem) {
            cli_err(c, "%s", problem);
            rc = CLI_EXIT_DOWN;
        }
    }
    free(problem);
    free(s.body);
    forget_all(&s);
    cli_sse_cleanup(&s.sse);
    cli_http_reply_cleanup(&rep);
    return rc;
}

/* ---- runbox call ---- */

/* The entry of name in runboxd's GET /tools that the built-in catalog does not have (a tool of
 * an external MCP server), or NULL. *doc holds the answer (owned; NULL when runboxd did not
 * give one). */
static const cJSON *daemon_tool(const struct cli *c, const char *name, cJSON **doc)
{
    const cJSON *t;

    *doc = catalog_is_valid_name(name) ? cli_get_json_quiet(c, "/tools") : NULL;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(*doc, "tools"))
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "name");

        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0 &&
            !catalog_find(catalog_builtin(), name))
            return t;
    }
    return NULL;
}

/* Finds the tool: in the RUNBOX_TOOLS view of the catalog, else among the tools runboxd lists
 * beside it. Returns 0, or CLI_EXIT_USAGE with the message printed. */
static int find_called(const struct cli *c, const char *name, struct called *out, cJSON **doc)
{
    const struct catalog_tool *tool = catalog_find(c->cat, name);
    const cJSON *entry;

    *doc = NULL;
    if (tool) {
        out->name = catalog_tool_name(tool);
        out->input_schema = catalog_tool_input_schema(tool);
        out->has_output_schema = catalog_tool_output_schema(tool) != NULL;
        out->stream = catalog_tool_budget(tool) == CATALOG_BUDGET_LONG;
        return 0;
    }
    if (catalog_find(catalog_builtin(), name)) {
        cli_err(c, "unknown tool: %s; `runbox tools` lists the tools (RUNBOX_TOOLS leaves it out)",
                name);
        return CLI_EXIT_USAGE;
    }
    entry = daemon_tool(c, name, doc);
    if (!entry) {
        cli_err(c, "unknown tool: %s; `runbox tools` lists the tools%s", name,
                *doc ? "" : " (runboxd did not answer, so only the built-in ones are known)");
        return CLI_EXIT_USAGE;
    }
    out->name = name;
    out->input_schema = cJSON_GetObjectItemCaseSensitive(entry, "inputSchema");
    out->has_output_schema =
        cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(entry, "outputSchema"));
    out->stream = false;
    return 0;
}

int cli_call(struct cli *c, int argc, char **argv)
{
    bool json = false, quiet = false, builtin;
    struct called tool;
    struct upstream_answer a;
    struct errinfo err = {0};
    cJSON *args, *listed = NULL;
    char *why, *body;
    int i = 0, rc;

    for (; i < argc && argv[i][0] == '-'; i++) {
        if (cli_help(argv[i], call_help))
            return CLI_EXIT_OK;
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0) {
            quiet = true;
        } else {
            cli_err(c, "unknown option '%s'\n\n%s", argv[i], call_help);
            return CLI_EXIT_USAGE;
        }
    }
    if (i >= argc) {
        cli_err(c, "which tool? `runbox tools` lists them\n\n%s", call_help);
        return CLI_EXIT_USAGE;
    }
    rc = find_called(c, argv[i], &tool, &listed);
    if (rc != 0) {
        cJSON_Delete(listed);
        return rc;
    }
    builtin = listed == NULL;
    args = cli_args_parse(tool.input_schema, argc - i - 1, argv + i + 1, &err);
    if (!args) {
        cli_err(c, "%s", err.msg);
        cJSON_Delete(listed);
        return CLI_EXIT_USAGE;
    }
    /* A built-in tool's arguments are checked here with the MCP server's messages; an external
     * server's schema may use what our validator does not know, so runboxd checks those. */
    why = builtin ? cli_args_check(tool.input_schema, args) : NULL;
    if (why) {
        cli_err(c, "%s: invalid arguments:\n%s", argv[i], why);
        free(why);
        cJSON_Delete(args);
        return CLI_EXIT_USAGE;
    }
    body = cJSON_PrintUnformatted(args);
    cJSON_Delete(args);
    rc = cli_need_target(c);
    if (rc == 0 && !body)
        rc = CLI_EXIT_FAILED;
    if (rc == 0)
        rc = tool.stream ? call_streamed(c, tool.name, body, quiet, &a)
                         : cli_tool(c, tool.name, body, &a);
    cJSON_free(body);
    if (rc == 0) {
        rc = print_answer(c, &tool, &a, json);
        upstream_answer_cleanup(&a);
    }
    cJSON_Delete(listed);
    return rc;
}

/* ---- runbox tools ---- */

/* The first sentence of a description (up to ". " or the end), at most n-1 bytes. */
static void first_sentence(const char *d, char *out, size_t n)
{
    const char *end = strstr(d, ". ");
    size_t len = end ? (size_t)(end - d) + 1 : strlen(d);

    if (len >= n)
        len = n - 1;
    memcpy(out, d, len);
    out[len] = '\0';
}

static const char *tool_text(const struct catalog_tool *t, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(catalog_tool_object(t), key);

    return cJSON_IsString(v) ? v->valuestring : "";
}

/* The groups of cat in order of first appearance. */
static size_t groups_of(const struct catalog *cat, const struct catalog *within,
                        const char **groups, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; cat && i < catalog_count(cat); i++) {
        const char *g = catalog_tool_group(catalog_at(cat, i));
        size_t k = 0;

        if (!catalog_find(within, catalog_tool_name(catalog_at(cat, i))))
            continue;
        while (k < n && strcmp(groups[k], g) != 0)
            k++;
        if (k == n && n < max)
            groups[n++] = g;
    }
    return n;
}

/* The tools runboxd lists beside the catalog (external MCP servers'), as group "external",
 * after the catalog's groups: printed, or added to garr (--json). */
static void print_external_tools(const cJSON *listed, cJSON *garr, bool first)
{
    const cJSON *t;
    cJSON *tarr = NULL;
    bool headed = false;
    char line[160];

    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(listed, "tools"))
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(t, "description");
        const cJSON *title = cJSON_GetObjectItemCaseSensitive(t, "title");

        if (!cJSON_IsString(name) || catalog_find(catalog_builtin(), name->valuestring))
            continue;
        if (garr) {
            cJSON *o = cJSON_CreateObject();

            if (!tarr) {
                cJSON *g = cJSON_CreateObject();

                cJSON_AddItemToArray(garr, g);
                cJSON_AddStringToObject(g, "group", "external");
                tarr = cJSON_AddArrayToObject(g, "tools");
            }
            cJSON_AddStringToObject(o, "name", name->valuestring);
            cJSON_AddStringToObject(o, "title", cJSON_IsString(title) ? title->valuestring : "");
            cJSON_AddStringToObject(o, "description",
                                    cJSON_IsString(desc) ? desc->valuestring : "");
            cJSON_AddItemToArray(tarr, o);
            continue;
        }
        if (!headed)
            printf("%sexternal (runboxd's MCP servers)\n", first ? "" : "\n");
        headed = true;
        first_sentence(cJSON_IsString(desc) ? desc->valuestring : "", line, sizeof(line));
        printf("  %-26s %s\n", name->valuestring, line);
    }
}

/* Prints the tools of cat that within (the RUNBOX_TOOLS view) serves too, then those of listed
 * (runboxd's GET /tools, or NULL) that the catalog does not have. */
static void print_tools(const struct catalog *cat, const struct catalog *within,
                        const cJSON *listed, bool json)
{
    const char *groups[64];
    size_t ng = groups_of(cat, within, groups, 64);
    cJSON *doc = json ? cJSON_CreateObject() : NULL;
    cJSON *garr = json ? cJSON_AddArrayToObject(doc, "groups") : NULL;
    char line[160];

    for (size_t g = 0; g < ng; g++) {
        cJSON *gobj = NULL, *tarr = NULL;

        if (json) {
            gobj = cJSON_CreateObject();
            cJSON_AddItemToArray(garr, gobj);
            cJSON_AddStringToObject(gobj, "group", groups[g]);
            tarr = cJSON_AddArrayToObject(gobj, "tools");
        } else {
            printf("%s%s\n", g ? "\n" : "", groups[g]);
        }
        for (size_t i = 0; i < catalog_count(cat); i++) {
            const struct catalog_tool *t = catalog_at(cat, i);

            if (strcmp(catalog_tool_group(t), groups[g]) != 0 ||
                !catalog_find(within, catalog_tool_name(t)))
                continue;
            if (json) {
                cJSON *o = cJSON_CreateObject();

                cJSON_AddStringToObject(o, "name", catalog_tool_name(t));
                cJSON_AddStringToObject(o, "title", tool_text(t, "title"));
                cJSON_AddStringToObject(o, "description", tool_text(t, "description"));
                cJSON_AddItemToArray(tarr, o);
                continue;
            }
            first_sentence(tool_text(t, "description"), line, sizeof(line));
            printf("  %-26s %s\n", catalog_tool_name(t), line);
        }
    }
    print_external_tools(listed, garr, ng == 0);
    if (json) {
        cli_print_json(doc);
        cJSON_Delete(doc);
    }
}

int cli_tools(struct cli *c, int argc, char **argv)
{
    bool json = false, names = false, only_external;
    const char *which = NULL;
    struct catalog *sel = NULL;
    cJSON *listed;
    struct errinfo err = {0};

    for (int i = 0; i < argc; i++) {
        if (cli_help(argv[i], tools_help))
            return CLI_EXIT_OK;
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--names") == 0) {
            names = true; /* for the shell completions */
        } else if (argv[i][0] != '-' && !which) {
            which = argv[i];
        } else {
            cli_err(c, "unexpected '%s'\n\n%s", argv[i], tools_help);
            return CLI_EXIT_USAGE;
        }
    }
    only_external = which && strcmp(which, "external") == 0;
    if (which && !only_external) {
        sel = catalog_select(catalog_builtin(), which, &err);
        if (!sel) {
            cli_err(c, "%s (or external: the tools of runboxd's MCP servers)", err.msg);
            return CLI_EXIT_USAGE;
        }
    }
    if (names) {
        const struct catalog *cat = sel ? sel : c->cat;

        for (size_t i = 0; i < catalog_count(cat) && !only_external; i++)
            if (catalog_find(c->cat, catalog_tool_name(catalog_at(cat, i))))
                printf("%s\n", catalog_tool_name(catalog_at(cat, i)));
    } else {
        /* The external servers' tools come from runboxd, when it runs; a group or profile
         * of the catalog leaves them out. */
        listed = !which || only_external ? cli_get_json_quiet(c, "/tools") : NULL;
        print_tools(only_external ? NULL : sel ? sel : c->cat, c->cat, listed, json);
        cJSON_Delete(listed);
    }
    catalog_free(sel);
    return CLI_EXIT_OK;
}
