/* daemon/tools.c - the dispatch table of local tools (see tools.h). The handlers live in one
 * file per tool group (tools_workspace.c); adding a group adds rows here. */
#include "tools.h"

#include <stdlib.h>
#include <string.h>

struct tool_row {
    const char *name;
    tools_fn fn;
};

/* Every name here is a catalog tool with route "local"; test_tools checks both directions. */
static const struct tool_row tool_table[] = {
    {"list_dir", tools_list_dir},
    {"read_file", tools_read_file},
    {"remove", tools_remove},
    {"search", tools_search},
    {"write_file", tools_write_file},
    {"console_logs", tools_console_logs},
    {"exec", tools_exec},
    {"process_list", tools_process_list},
    {"kill", tools_kill},
    {"expose_port", tools_expose_port},
    {"checkpoint", tools_checkpoint},
    {"list_checkpoints", tools_list_checkpoints},
    {"diff", tools_diff},
    {"restore_checkpoint", tools_restore_checkpoint},
    {"list_studios", tools_list_studios},
    {"set_active_studio", tools_set_active_studio},
    {"get_studio_state", tools_get_studio_state},
    {"get_console_output", tools_get_console_output},
    {"clear_console_output", tools_clear_console_output},
    {"mcp_servers", tools_mcp_servers},
};

static tools_fn find(const char *name)
{
    for (size_t i = 0; i < sizeof(tool_table) / sizeof(tool_table[0]); i++)
        if (strcmp(tool_table[i].name, name) == 0)
            return tool_table[i].fn;
    return NULL;
}

bool tools_has(const char *name)
{
    return find(name) != NULL;
}

int tools_call(const struct tools_ctx *ctx, struct call *call, const char *name, const cJSON *args,
               struct tools_result *out, struct errinfo *err)
{
    tools_fn fn = find(name);

    memset(out, 0, sizeof(*out));
    if (!fn) {
        errinfo_set(err, ERR_NOT_FOUND, "tool %.128s is not available in this daemon", name);
        return -1;
    }
    if (fn(ctx, call, args, out, err) < 0) {
        tools_result_cleanup(out);
        return -1;
    }
    return 0;
}

void tools_result_cleanup(struct tools_result *r)
{
    free(r->data);
    r->data = NULL;
    free(r->structured);
    r->structured = NULL;
    free(r->call_result);
    r->call_result = NULL;
    r->len = 0;
    r->is_json = false;
}
