/* daemon/prompts.c - the MCP prompts (see prompts.h).
 *
 * A small table describes each prompt and its arguments; prompts_get checks the arguments
 * against it (strictly: unknown names are refused, so a typo does not silently give a
 * different prompt) and then renders the one user message. */
#include "prompts.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"
#include "registry.h"
#include "strfmt.h"
#include "tools.h"
#include "utf8.h"
#include "vfs.h"

struct prompt_arg {
    const char *name, *description;
    bool required;
};

struct prompt {
    const char *name, *title, *description;
    struct prompt_arg args[2];
    size_t nargs;
};

static const char *const scaffold_types[] = {"bun-api", "python-script", "fullstack"};

static const struct prompt prompt_table[] = {
    {"explain_file",
     "Explain a file",
     "Explain the purpose and structure of a workspace file.",
     {{"path", "Absolute workspace path of the file, e.g. \"/src/main.js\".", true}},
     1},
    {"fix_error",
     "Fix the recent errors",
     "Analyze the error-level entries of the sandbox console and propose a fix.",
     {{0}},
     0},
    {"scaffold",
     "Scaffold a project",
     "Create a new project of a given stack in the workspace.",
     {{"type", "The stack: bun-api, python-script or fullstack.", true},
      {"name", "The project's name (default: my-<type>).", false}},
     2},
};

#define N_PROMPTS (sizeof(prompt_table) / sizeof(prompt_table[0]))

/* ---- texts (pure) ---- */

char *prompts_explain_text(const char *path, const char *contents)
{
    return strfmt_alloc("The user wants an explanation of the following file:\n\n--- %s ---\n%s\n"
                        "---\n\nExplain the purpose and structure of this file clearly.",
                        path, contents);
}

char *prompts_fix_error_text(const char *errors)
{
    return strfmt_alloc("The following errors appeared in the sandbox console:\n\n%s\n\n"
                        "Analyze the root cause and propose a concrete fix.",
                        errors);
}

char *prompts_scaffold_text(const char *type, const char *name)
{
    return strfmt_alloc("Scaffold a new %s project named %s.\nCreate the directory structure, "
                        "config files, and a basic entry point.\nUse best practices for the "
                        "chosen stack.",
                        type, name);
}

/* ---- list ---- */

static cJSON *prompt_json(const struct prompt *p)
{
    cJSON *o = cJSON_CreateObject(), *arr;

    if (!cJSON_AddStringToObject(o, "name", p->name) ||
        !cJSON_AddStringToObject(o, "title", p->title) ||
        !cJSON_AddStringToObject(o, "description", p->description))
        goto fail;
    arr = cJSON_AddArrayToObject(o, "arguments");
    for (size_t i = 0; arr && i < p->nargs; i++) {
        cJSON *a = cJSON_CreateObject();

        if (!cJSON_AddItemToArray(arr, a)) {
            cJSON_Delete(a);
            goto fail;
        }
        if (!cJSON_AddStringToObject(a, "name", p->args[i].name) ||
            !cJSON_AddStringToObject(a, "description", p->args[i].description) ||
            !cJSON_AddBoolToObject(a, "required", p->args[i].required))
            goto fail;
    }
    if (arr)
        return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

cJSON *prompts_list(const struct tools_ctx *ctx)
{
    cJSON *res = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(res, "prompts");

    for (size_t i = 0; arr && i < N_PROMPTS; i++) {
        cJSON *p = prompt_json(&prompt_table[i]);

        if (!p || !cJSON_AddItemToArray(arr, p)) {
            cJSON_Delete(p);
            arr = NULL;
        }
    }
    if (!arr) {
        cJSON_Delete(res);
        return NULL;
    }
    if (ctx && ctx->registry)
        registry_list_prompts(ctx->registry, arr);
    return res;
}

/* ---- get ---- */

/* Checks args against p: every member a known argument with a string value, every required
 * one present. */
static int check_args(const struct prompt *p, const cJSON *args, struct errinfo *err)
{
    const cJSON *a;

    if (args && !cJSON_IsObject(args)) {
        errinfo_set(err, ERR_INVALID, "prompt %s: arguments must be an object of strings", p->name);
        return -1;
    }
    cJSON_ArrayForEach(a, args)
    {
        size_t i = 0;

        while (i < p->nargs && strcmp(p->args[i].name, a->string) != 0)
            i++;
        if (i == p->nargs) {
            errinfo_set(err, ERR_INVALID, "prompt %s has no argument \"%.64s\"%s%s%s", p->name,
                        a->string, p->nargs ? " (it takes: " : " (it takes none)",
                        p->nargs ? p->args[0].name : "",
                        p->nargs == 2 ? ", name)" : (p->nargs ? ")" : ""));
            return -1;
        }
        if (!cJSON_IsString(a)) {
            errinfo_set(err, ERR_INVALID, "prompt %s: argument %s must be a string", p->name,
                        a->string);
            return -1;
        }
    }
    for (size_t i = 0; i < p->nargs; i++) {
        if (p->args[i].required && !cJSON_GetObjectItemCaseSensitive(args, p->args[i].name)) {
            errinfo_set(err, ERR_INVALID, "prompt %s: missing required argument %s (%s)", p->name,
                        p->args[i].name, p->args[i].description);
            return -1;
        }
    }
    return 0;
}

static const char *arg(const cJSON *args, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static char *explain_file(const struct tools_ctx *ctx, const cJSON *args, struct errinfo *err)
{
    const char *path = arg(args, "path");
    struct vfs_data d = {0};
    char *text = NULL, *body = NULL;

    if (!ctx->vfs) {
        errinfo_set(err, ERR_UNAVAILABLE, "the workspace is not open in this daemon");
        return NULL;
    }
    if (vfs_read(ctx->vfs, path, 0, PROMPTS_FILE_MAX, &d, err) < 0)
        return NULL;
    if (memchr(d.data, '\0', d.len) || utf8_valid_prefix(d.data, d.len) < utf8_cut(d.data, d.len)) {
        errinfo_set(err, ERR_INVALID,
                    "explain_file: %.200s is not a text file (it is not UTF-8); explain_file "
                    "takes source and text files",
                    path);
        goto out;
    }
    d.data[utf8_cut(d.data, d.len)] = '\0';
    if (d.truncated)
        body = strfmt_alloc("%s\n[... the file goes on: %llu bytes in all, the first %u shown]",
                            d.data, (unsigned long long)d.file_size, PROMPTS_FILE_MAX);
    text = prompts_explain_text(path, body ? body : d.data);
    if (!text)
        errinfo_set(err, ERR_NOMEM, "explain_file: out of memory");
out:
    free(body);
    vfs_data_cleanup(&d);
    return text;
}

static char *fix_error(const struct tools_ctx *ctx, struct errinfo *err)
{
    char *errors = ctx->console ? console_recent_errors(ctx->console, PROMPTS_ERRORS_OF) : NULL;
    char *text =
        prompts_fix_error_text(errors ? errors : "(no error-level entries in the console)");

    free(errors);
    if (!text)
        errinfo_set(err, ERR_NOMEM, "fix_error: out of memory");
    return text;
}

static char *scaffold(const cJSON *args, struct errinfo *err)
{
    const char *type = arg(args, "type"), *name = arg(args, "name");
    char dflt[32];
    char *text;
    size_t i = 0;

    while (i < sizeof(scaffold_types) / sizeof(scaffold_types[0]) &&
           strcmp(type, scaffold_types[i]) != 0)
        i++;
    if (i == sizeof(scaffold_types) / sizeof(scaffold_types[0])) {
        errinfo_set(err, ERR_INVALID,
                    "scaffold: type must be one of bun-api, python-script, fullstack (got "
                    "\"%.64s\")",
                    type);
        return NULL;
    }
    if (!name || !*name) {
        snprintf(dflt, sizeof(dflt), "my-%s", type);
        name = dflt;
    }
    text = prompts_scaffold_text(type, name);
    if (!text)
        errinfo_set(err, ERR_NOMEM, "scaffold: out of memory");
    return text;
}

/* {"description","messages":[one user text message]}; takes ownership of text. */
static cJSON *prompt_result(const struct prompt *p, char *text)
{
    cJSON *res = cJSON_CreateObject(), *msgs = cJSON_AddArrayToObject(res, "messages");
    cJSON *m = cJSON_CreateObject(), *content;

    if (!cJSON_AddStringToObject(res, "description", p->description) || !msgs || !m ||
        !cJSON_AddItemToArray(msgs, m)) {
        cJSON_Delete(m);
        goto fail;
    }
    content = cJSON_AddObjectToObject(m, "content");
    if (!cJSON_AddStringToObject(m, "role", "user") || !content ||
        !cJSON_AddStringToObject(content, "type", "text") ||
        !cJSON_AddStringToObject(content, "text", text))
        goto fail;
    free(text);
    return res;
fail:
    free(text);
    cJSON_Delete(res);
    return NULL;
}

int prompts_get(const struct tools_ctx *ctx, const char *name, const cJSON *args, cJSON **out,
                struct errinfo *err)
{
    const struct prompt *p = NULL;
    char *text;

    *out = NULL;
    for (size_t i = 0; i < N_PROMPTS; i++)
        if (strcmp(prompt_table[i].name, name) == 0)
            p = &prompt_table[i];
    if (!p && ctx && ctx->registry) {
        int rc = registry_get_prompt(ctx->registry, name, args, out, err);

        if (rc != 0)
            return rc < 0 ? -1 : 0;
    }
    if (!p) {
        errinfo_set(err, ERR_INVALID,
                    "unknown prompt \"%.100s\"; the prompts are explain_file, fix_error and "
                    "scaffold (prompts/list describes them)",
                    name);
        return -1;
    }
    if (check_args(p, args, err) < 0)
        return -1;
    if (p == &prompt_table[0])
        text = explain_file(ctx, args, err);
    else if (p == &prompt_table[1])
        text = fix_error(ctx, err);
    else
        text = scaffold(args, err);
    if (!text)
        return -1;
    *out = prompt_result(p, text);
    if (!*out) {
        errinfo_set(err, ERR_NOMEM, "prompts/get: out of memory");
        return -1;
    }
    return 0;
}
