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

/* Where a call goes: the daemon's own handler, the Studio plugin, or an external MCP server of
 * the outbound registry (daemon/registry.h), whose tools only catalog_new_external() builds. */
enum catalog_route { CATALOG_ROUTE_LOCAL, CATALOG_ROUTE_STUDIO, CATALOG_ROUTE_EXTERNAL };

/* Which admission budget a call of the tool draws from (the call service's table): a quick call
 * from none; "long" for calls that may hold their worker for minutes (a foreground exec, kill,
 * every tool routed to Studio, which waits for the plugin); "search" for walks of the whole
 * workspace; "external" for calls to an external MCP server (a row of their own, so that one
 * slow upstream cannot starve exec). Catalog key "budget": "long" | "search" | "external"; a
 * Studio-routed tool is "long" and an external one "external" unless it says otherwise. */
enum catalog_budget {
    CATALOG_BUDGET_NONE,
    CATALOG_BUDGET_LONG,
    CATALOG_BUDGET_SEARCH,
    CATALOG_BUDGET_EXTERNAL
};

struct catalog;      /* opaque */
struct catalog_tool; /* opaque; borrowed from its catalog, valid as long as the catalog */

/* Builds a catalog from n JSON documents (each NUL-terminated text). Every document, tool and
 * input/output schema is checked (schema_check); the first problem fails the whole build with
 * err naming the document, the tool and the rule. Returns an owned catalog (free with
 * catalog_free) or NULL. */
struct catalog *catalog_new(const char *const *docs, size_t n, struct errinfo *err);

void catalog_free(struct catalog *cat); /* NULL is a no-op */

/* Builds a catalog of external tools (the outbound registry's, or the ones GET /tools lists
 * beside the built-in catalog) from one document {"group", "tools":[...]}, whose tools have
 * route "external". Lenient where catalog_new() is strict, because an external server wrote
 * these: title and description may be missing, annotations and schemas are kept as they are
 * (schema_validate() checks what it knows and ignores the rest), and a tool may carry "_meta".
 * Takes ownership of doc (freed on failure too). Returns an owned catalog or NULL with err. */
struct catalog *catalog_new_external(cJSON *doc, struct errinfo *err);

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
bool catalog_tool_is_read_only(const struct catalog_tool *tool);   /* annotations.readOnlyHint */
const cJSON *catalog_tool_object(const struct catalog_tool *tool); /* the whole entry; borrowed */
/* "hostTools": the programs the daemon probes for and names in the tool's description (an
 * array of strings), or NULL. Borrowed. */
const cJSON *catalog_tool_host_tools(const struct catalog_tool *tool);

/* True when the tool answers a picture ("answer": "image"): its JSON answer carries the image
 * as "data" (base64) and "mimeType", and MCP clients get it as image content
 * (catalog_image_result). */
bool catalog_tool_answers_image(const struct catalog_tool *tool);

/* The CallToolResult for an image tool's JSON answer (borrowed): content [{"type":"image",
 * "data", "mimeType"}, {"type":"text", the other members as JSON}], structuredContent the other
 * members. Owned (cJSON_Delete), or NULL when answer is not an object with string data and
 * mimeType, or out of memory. */
cJSON *catalog_image_result(const cJSON *answer);

/* An owned copy of the compiled-in catalog (catalog_free) in which the description of every
 * tool with "hostTools" ends with " <note>" (copied): the daemon's catalog, which names the
 * programs actually installed. NULL with err set (ERR_NOMEM). */
struct catalog *catalog_builtin_amended(const char *note, struct errinfo *err);

/* The input schema as clients are shown it: a copy of schema without what only validation
 * needs (minLength, maxLength, minItems, maxItems, and additionalProperties: false, at every
 * depth), which keeps tools/list within its budget. runboxd checks every call against the
 * whole schema (catalog_tool_input_schema) and names the rule a call breaks. Owned
 * (cJSON_Delete), or NULL when out of memory. */
cJSON *catalog_listed_schema(const cJSON *schema);

/* The MCP tools/list "tools" array as compact JSON text: each tool with name, title,
 * description, inputSchema (its listed form, catalog_listed_schema; an external tool's as its
 * server gave it), annotations, outputSchema, _meta and icons (when present); route and group are
 * not shown. Built at the first call (any thread), borrowed for the catalog's lifetime; NULL only
 * when that build ran out of memory (a later call tries again). */
const char *catalog_tools_json(const struct catalog *cat);

struct mcp_server;
struct mcp_call;

/* Adds every tool of cat to srv (runbox/mcp.h), in the catalog's order (by name), each with
 * handler fn(arg, call); mcp_call_name() then names the tool (catalog_find gives it back). A Studio
 * tool is declared as needing nothing of the client. The engine gets the listed input schema
 * (catalog_listed_schema), so it lists what tools/list shows and checks calls against that; the
 * handler must check the whole schema (runboxd's call_begin does). Returns 0, or -1 with err (a
 * name already there, no memory). */
int catalog_register_tools(const struct catalog *cat, struct mcp_server *srv,
                           void (*fn)(void *arg, struct mcp_call *call), void *arg,
                           struct errinfo *err);

/* Adds one tool of a catalog_new_external() catalog to srv, as its server gave it: title,
 * description, schemas and annotations unchanged, and its "_meta" (object) and "icons" (array)
 * beside them; other fields ("execution": runbox does not run tasks) are not listed. Handler
 * fn(arg, call). Returns 0, or -1 with err (a name already there, no memory). */
int catalog_register_external(const struct catalog_tool *t, struct mcp_server *srv,
                              void (*fn)(void *arg, struct mcp_call *call), void *arg,
                              struct errinfo *err);

/* True when name follows [A-Za-z0-9_.-]{1,128}. Pure. */
bool catalog_is_valid_name(const char *name);

/* ---- tool profiles ----
 * One optional document, {"instructions": text, "profiles": {name: profile, ...}}, names the
 * profiles (common/tools/profiles.json). A profile is {"groups": [group, ...]?, "readOnly":
 * bool?, "budget": N, "rules": text?}: it lists the tools of its groups (of every group when
 * it names none), only those with readOnlyHint when readOnly is true; budget is the most
 * characters its tools/list result {"tools":[...]} may have (the unit test holds every
 * profile to it); rules are what its tools share (path syntax, value encoding), said once in
 * the server's instructions instead of in every description. */

/* Builds the view of base that spec selects: NULL or "" is every tool; otherwise a comma list
 * of profile names ("all", "sandbox", "studio", "readonly") and group names ("workspace",
 * "studio-scripts", ...), whose tools are listed together. Returns an owned catalog that
 * borrows base's documents (base must outlive it; free with catalog_free), or NULL with
 * ERR_INVALID naming the unknown item and what is accepted. */
struct catalog *catalog_select(const struct catalog *base, const char *spec, struct errinfo *err);

/* The MCP instructions for a server that lists cat's tools: the profiles document's
 * "instructions", then the rules of every profile one of whose groups has a tool in cat.
 * Borrowed for the catalog's lifetime; NULL when there is nothing to say. */
const char *catalog_instructions(const struct catalog *cat);

/* Characters of the tools/list result {"tools":[...]} for cat, as a client receives it
 * (SIZE_MAX when its text cannot be built: out of memory). */
size_t catalog_list_chars(const struct catalog *cat);

/* The profiles of the profiles document, in its order: name (borrowed) and budget. */
size_t catalog_profile_count(const struct catalog *cat);
const char *catalog_profile_name(const struct catalog *cat, size_t i); /* i < count */
size_t catalog_profile_budget(const struct catalog *cat, size_t i);    /* i < count */

#endif /* COMMON_CATALOG_H */
