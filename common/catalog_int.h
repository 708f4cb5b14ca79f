/* common/catalog_int.h - private to the catalog module (catalog.c, catalog_profile.c) and its
 * unit test: the layout of a catalog and the helpers its two files share. */
#ifndef COMMON_CATALOG_INT_H
#define COMMON_CATALOG_INT_H

#include <pthread.h>

#include "catalog.h"

#define CATALOG_NAME_MAX 128

struct catalog_tool {
    const char *name;  /* borrowed from the document */
    const char *group; /* borrowed from the document */
    enum catalog_route route;
    enum catalog_budget budget;
    const cJSON *tool; /* the tool's object in its document */
    const cJSON *input_schema;
    const cJSON *output_schema; /* or NULL */
    const cJSON *host_tools;    /* "hostTools", or NULL */
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

/* catalog.c: a copy of a tool's annotations without the hints that only repeat MCP's
 * defaults, as tools/list shows them. Owned (cJSON_Delete) or NULL. */
cJSON *catalog__listed_annotations(const cJSON *ann);

/* catalog_profile.c: loads the profiles document doc (borrowed; it must outlive cat) into
 * cat->profiles, checking every group name against cat->tools. */
int catalog__load_profiles(struct catalog *cat, const cJSON *doc, size_t index,
                           struct errinfo *err);

/* catalog_profile.c: builds cat->instructions from cat->preamble and the rules of every
 * profile that lists a group with a tool in cat. */
int catalog__build_instructions(struct catalog *cat, struct errinfo *err);

#endif /* COMMON_CATALOG_INT_H */
