/* common/catalog.h - the tool catalog: every tool's name, title, description, input schema,
 * annotations, optional output schema and route, from the JSON documents in common/tools/,
 * compiled into both binaries. The single source of truth for tool names and schemas.
 *
 * A catalog document is {"group": "<name>", "tools": [ {tool}, ... ]} where a tool is
 *   {"name", "title", "description", "inputSchema", "annotations"?, "outputSchema"?,
 *    "route": "local" | "studio", "budget": "long" | "search" (optional)}.
 * Names follow the MCP rule [A-Za-z0-9_.-]{1,128} and are unique across documents.
 *
 * Thread-safety: a catalog is immutable once built; every accessor may be called from any
 * thread. catalog_builtin() builds the compiled-in catalog once (pthread_once). */
#ifndef COMMON_CATALOG_H
#define COMMON_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

enum catalog_route { CATALOG_ROUTE_LOCAL, CATALOG_ROUTE_STUDIO };

/* Which admission budget a call of the tool draws from (the call service's table): a quick call
 * from none; "long" for calls that may hold their worker for minutes (a foreground exec, kill,
 * every tool routed to Studio, which waits for the plugin); "search" for walks of the whole
 * workspace. Catalog key "budget": "long" | "search"; a Studio-routed tool is "long" unless it
 * says otherwise. */
enum catalog_budget { CATALOG_BUDGET_NONE, CATALOG_BUDGET_LONG, CATALOG_BUDGET_SEARCH };

struct catalog;      /* opaque */
struct catalog_tool; /* opaque; borrowed from its catalog, valid as long as the catalog */

/* Builds a catalog from n JSON documents (each NUL-terminated text). Every document, tool and
 * input/output schema is checked (schema_check); the first problem fails the whole build with
 * err naming the document, the tool and the rule. Returns an owned catalog (free with
 * catalog_free) or NULL. */
struct catalog *catalog_new(const char *const *docs, size_t n, struct errinfo *err);

void catalog_free(struct catalog *cat); /* NULL is a no-op */

/* The compiled-in catalog (the JSON files in common/tools/). Never NULL: a broken compiled-in
 * catalog is a build bug, reported by the unit tests, and aborts with a message here. Never freed.
 */
const struct catalog *catalog_builtin(void);

size_t catalog_count(const struct catalog *cat);
const struct catalog_tool *catalog_at(const struct catalog *cat, size_t i); /* i < count */

/* The tool with this exact name, or NULL. O(log n). */
const struct catalog_tool *catalog_find(const struct catalog *cat, const char *name);

const char *catalog_tool_name(const struct catalog_tool *tool);
const char *catalog_tool_group(const struct catalog_tool *tool);
enum catalog_route catalog_tool_route(const struct catalog_tool *tool);
enum catalog_budget catalog_tool_budget(const struct catalog_tool *tool);
const cJSON *catalog_tool_input_schema(const struct catalog_tool *tool);  /* borrowed */
const cJSON *catalog_tool_output_schema(const struct catalog_tool *tool); /* borrowed or NULL */
bool catalog_tool_is_read_only(const struct catalog_tool *tool); /* annotations.readOnlyHint */
/* "hostTools": the programs the daemon probes for and names in the tool's description (an
 * array of strings), or NULL. Borrowed. */
const cJSON *catalog_tool_host_tools(const struct catalog_tool *tool);

/* An owned copy of the compiled-in catalog (catalog_free) in which the description of every
 * tool with "hostTools" ends with " <note>" (copied): the daemon's catalog, which names the
 * programs actually installed. NULL with err set (ERR_NOMEM). */
struct catalog *catalog_builtin_amended(const char *note, struct errinfo *err);

/* The MCP tools/list "tools" array as compact JSON text: each tool with name, title,
 * description, inputSchema, annotations and outputSchema (when present); route and group are
 * not shown. Built once, borrowed for the catalog's lifetime. */
const char *catalog_tools_json(const struct catalog *cat);

/* True when name follows [A-Za-z0-9_.-]{1,128}. Pure. */
bool catalog_is_valid_name(const char *name);

#endif /* COMMON_CATALOG_H */
