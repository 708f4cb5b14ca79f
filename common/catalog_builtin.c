/* common/catalog_builtin.c - the compiled-in catalog (see catalog.h): built from the table the
 * build wrote (catalog_compiled.c, by catalog_compile.c from the JSON files in common/tools/, which
 * it checked), so a start parses only the small profiles document. Each tool's object is parsed
 * when an accessor first needs it (catalog.c), into a cell of this file that every view of the
 * catalog shares; tools/list and the engine's registration use the printed texts as they are.
 *
 * catalog_builtin_amended() is the daemon's: a full catalog_new() of the documents with a note
 * added to some descriptions. */
#include "catalog.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_data.h"
#include "catalog_int.h"
#include "strfmt.h"

static struct catalog *builtin;
static _Atomic(cJSON *) *builtin_trees; /* one cell per compiled tool; never freed */
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static struct catalog *load_compiled(struct errinfo *err)
{
    struct catalog *cat = catalog__alloc();
    size_t n = catalog_compiled_ntools;

    builtin_trees = calloc(n ? n : 1, sizeof(*builtin_trees));
    if (cat) {
        cat->tools = calloc(n ? n : 1, sizeof(*cat->tools));
        cat->docs = calloc(1, sizeof(*cat->docs));
    }
    if (!cat || !cat->tools || !cat->docs || !builtin_trees) {
        errinfo_set(err, ERR_NOMEM, "catalog: out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        const struct catalog_compiled_tool *c = &catalog_compiled_tools[i];
        struct catalog_tool *t = &cat->tools[i];

        t->name = c->name;
        t->group = c->group;
        t->route = c->route;
        t->budget = c->budget;
        t->read_only = c->read_only;
        t->image = c->image;
        t->compiled = c;
        t->tree = &builtin_trees[i];
        atomic_init(t->tree, NULL);
    }
    cat->ntools = n;
    if (catalog_compiled_profiles[0]) {
        cat->docs[0] = cJSON_Parse(catalog_compiled_profiles);
        if (!cat->docs[0]) {
            errinfo_set(err, ERR_NOMEM, "catalog: out of memory");
            goto fail;
        }
        cat->ndocs = 1;
        if (catalog__load_profiles(cat, cat->docs[0], 0, err) != 0)
            goto fail;
    }
    if (catalog__build_instructions(cat, err) != 0)
        goto fail;
    return cat;
fail:
    catalog_free(cat);
    return NULL;
}

static void builtin_init(void)
{
    struct errinfo err;

    errinfo_clear(&err);
    builtin = load_compiled(&err);
    if (!builtin) {
        /* Only memory can fail here (the build checked the documents): no sane way to go on. */
        fprintf(stderr, "runbox: the built-in tool catalog cannot be loaded: %s\n", err.msg);
        abort();
    }
}

const struct catalog *catalog_builtin(void)
{
    pthread_once(&builtin_once, builtin_init);
    return builtin;
}

struct catalog *catalog_builtin_amended(const char *note, struct errinfo *err)
{
    char **docs = calloc(catalog_builtin_ndocs ? catalog_builtin_ndocs : 1, sizeof(*docs));
    struct catalog *cat = NULL;
    size_t i;

    if (!docs) {
        errinfo_set(err, ERR_NOMEM, "catalog: out of memory");
        return NULL;
    }
    for (i = 0; i < catalog_builtin_ndocs; i++) {
        cJSON *doc = cJSON_Parse(catalog_builtin_docs[i]);
        const cJSON *tools = doc ? cJSON_GetObjectItemCaseSensitive(doc, "tools") : NULL;
        cJSON *t;
        bool ok = doc != NULL;

        cJSON_ArrayForEach(t, tools)
        {
            const cJSON *d = cJSON_GetObjectItemCaseSensitive(t, "description");
            char *text;

            if (!cJSON_GetObjectItemCaseSensitive(t, "hostTools") || !cJSON_IsString(d))
                continue;
            text = strfmt_alloc("%s %s", d->valuestring, note);
            ok = ok && text &&
                 cJSON_ReplaceItemInObjectCaseSensitive(t, "description", cJSON_CreateString(text));
            free(text);
        }
        docs[i] = ok ? cJSON_PrintUnformatted(doc) : NULL;
        cJSON_Delete(doc);
        if (!docs[i]) {
            errinfo_set(err, ERR_NOMEM, "catalog: out of memory");
            goto out;
        }
    }
    cat = catalog_new((const char *const *)docs, catalog_builtin_ndocs, err);
out:
    for (i = 0; i < catalog_builtin_ndocs; i++)
        cJSON_free(docs[i]);
    free(docs);
    return cat;
}
