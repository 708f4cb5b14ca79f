/* common/catalog_int.h - private to the catalog module (catalog.c, catalog_profile.c) and its
 * unit test: the layout of a catalog and the helpers its two files share. */
#ifndef COMMON_CATALOG_INT_H
#define COMMON_CATALOG_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "catalog.h"

#define CATALOG_NAME_MAX       128
#define CATALOG_TOOLS_JSON_MAX ((size_t)64 << 20) /* the tools/list text of one catalog */

/* A tool of the built-in catalog as the build prepared it (catalog_compile.c writes the table,
 * catalog_compiled.c): its facts, and its JSON as compact text, so that a start parses nothing.
 * The texts are what catalog.c would make of the tool at run time. */
struct catalog_compiled_tool {
    const char *name, *group, *title, *description;
    enum catalog_route route;
    enum catalog_budget budget;
    bool read_only, image, host_tools;
    const char *object;      /* the tool's object in its document */
    const char *input;       /* its listed input schema (catalog_listed_schema) */
    const char *output;      /* its output schema, or NULL */
    const char *annotations; /* its listed annotations (catalog__listed_annotations), or NULL */
    const char *entry;       /* its element of catalog_tools_json (catalog__tool_entry) */
};

/* catalog_compiled.c (generated): the built-in tools, sorted by name; the profiles document as
 * compact text ("" when there is none). */
extern const struct catalog_compiled_tool catalog_compiled_tools[];
extern const size_t catalog_compiled_ntools;
extern const char catalog_compiled_profiles[];

struct catalog_tool {
    const char *name;  /* borrowed from the document (or the compiled table) */
    const char *group; /* likewise */
    enum catalog_route route;
    enum catalog_budget budget;
    /* A parsed catalog's tool points into its document. A built-in one has its compiled record
     * instead, and its object is parsed at the first accessor that needs it into *tree, which
     * every view of the catalog shares (catalog_builtin.c makes them). */
    const cJSON *tool; /* the tool's object in its document; NULL for a compiled tool */
    const cJSON *input_schema;
    const cJSON *output_schema;                   /* or NULL */
    const cJSON *host_tools;                      /* "hostTools", or NULL */
    const struct catalog_compiled_tool *compiled; /* or NULL */
    _Atomic(cJSON *) *tree;                       /* compiled: where its parsed object is kept */
    bool read_only;
    bool image; /* "answer": "image" */
};

/* One entry of the profiles document: which tools a profile lists, its tools/list budget and
 * the rules its tools share (said once, in the server's instructions). */
struct catalog_profile {
    const char *name;    /* borrowed from the document */
    const cJSON *groups; /* array of group names, or NULL for every group */
    bool read_only;      /* only tools with readOnlyHint */
    size_t budget;       /* most characters its tools/list result may have */
    const char *rules;   /* or NULL */
};

struct catalog {
    cJSON **docs; /* owned parsed documents; none in a view (catalog_select) */
    size_t ndocs;
    struct catalog_tool *tools; /* sorted by name */
    size_t ntools;
    pthread_mutex_t json_mu; /* guards tools_json's first build */
    char *tools_json; /* owned; the tools/list "tools" array, built at the first ask (json_mu) */
    struct catalog_profile *profiles; /* owned array; its strings borrow from the documents */
    size_t nprofiles;
    const char *preamble; /* borrowed: the profiles document's "instructions", or NULL */
    char *instructions;   /* owned, built with the tools: preamble and the rules that apply */
};

/* catalog.c: a zeroed catalog with its json_mu ready (catalog_free frees it), or NULL. */
struct catalog *catalog__alloc(void);

/* catalog.c: prints the tools/list "tools" array of cat->tools. Owned, or NULL (memory). */
char *catalog__tools_json(const struct catalog *cat);

/* catalog.c: a tool's element of catalog_tools_json as a tree that references t's document
 * (cJSON_Delete frees only the copies in it), or NULL (memory). */
cJSON *catalog__tool_entry(const struct catalog_tool *t);

/* catalog.c: a tool's annotations (ann; NULL for none) as tools/list shows them, without the
 * hints that only repeat MCP's defaults: *out is an owned copy, or NULL when nothing is left to
 * show. Returns 0, or -1 when memory ran out. */
int catalog__listed_annotations(const cJSON *ann, cJSON **out);

/* catalog_profile.c: loads the profiles document doc (borrowed; it must outlive cat) into
 * cat->profiles, checking every group name against cat->tools. */
int catalog__load_profiles(struct catalog *cat, const cJSON *doc, size_t index,
                           struct errinfo *err);

/* catalog_profile.c: builds cat->instructions from cat->preamble and the rules of every
 * profile that lists a group with a tool in cat. */
int catalog__build_instructions(struct catalog *cat, struct errinfo *err);

#endif /* COMMON_CATALOG_INT_H */
