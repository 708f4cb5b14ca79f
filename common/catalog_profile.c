/* common/catalog_profile.c - tool profiles (see catalog.h): the profiles document, views of a
 * catalog that list only some tools (RUNBOX_TOOLS for runbox, --tools for runboxd), and the
 * server instructions that say the rules the listed tools share.
 *
 * A view is a struct catalog without documents of its own: its tool entries are copies of the
 * base's (which point into the base's documents), so every accessor works on it unchanged and
 * validation, lookup and tools/list serve only the profile's tools. */
#include "catalog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_int.h"
#include "jsonbuf.h"

#define INSTRUCTIONS_MAX (64u << 10)

static bool in_groups(const cJSON *groups, const char *group)
{
    const cJSON *g;

    if (!groups)
        return true;
    cJSON_ArrayForEach(g, groups)
    {
        if (strcmp(g->valuestring, group) == 0)
            return true;
    }
    return false;
}

static bool has_group(const struct catalog *cat, const char *group)
{
    for (size_t i = 0; i < cat->ntools; i++)
        if (strcmp(cat->tools[i].group, group) == 0)
            return true;
    return false;
}

/* Checks one profile object and fills *p. */
static int load_profile(const struct catalog *cat, const cJSON *obj, size_t index,
                        struct catalog_profile *p, struct errinfo *err)
{
    const cJSON *budget = cJSON_GetObjectItemCaseSensitive(obj, "budget");
    const cJSON *ro = cJSON_GetObjectItemCaseSensitive(obj, "readOnly");
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(obj, "rules");
    const cJSON *g, *m;

    p->name = obj->string;
    cJSON_ArrayForEach(m, obj)
    {
        if (strcmp(m->string, "budget") != 0 && strcmp(m->string, "readOnly") != 0 &&
            strcmp(m->string, "rules") != 0 && strcmp(m->string, "groups") != 0)
            goto bad;
    }
    if (!catalog_is_valid_name(p->name) || has_group(cat, p->name) || !cJSON_IsNumber(budget) ||
        !(budget->valuedouble >= 1 && budget->valuedouble <= 1e7) || (ro && !cJSON_IsBool(ro)) ||
        (rules && !cJSON_IsString(rules)))
        goto bad;
    p->groups = cJSON_GetObjectItemCaseSensitive(obj, "groups");
    if (p->groups && !cJSON_IsArray(p->groups))
        goto bad;
    cJSON_ArrayForEach(g, p->groups)
    {
        if (!cJSON_IsString(g) || !has_group(cat, g->valuestring)) {
            errinfo_set(err, ERR_INVALID,
                        "catalog document %zu: profile \"%.40s\" names \"%.60s\", which is no "
                        "group of the catalog",
                        index + 1, p->name, cJSON_IsString(g) ? g->valuestring : "?");
            return -1;
        }
    }
    p->read_only = cJSON_IsTrue(ro);
    p->budget = (size_t)budget->valuedouble;
    p->rules = rules ? rules->valuestring : NULL;
    return 0;
bad:
    errinfo_set(err, ERR_INVALID,
                "catalog document %zu: profile \"%.40s\" must be {\"groups\": [group, ...]?, "
                "\"readOnly\": bool?, \"budget\": characters, \"rules\": text?} under a name "
                "that is no group's",
                index + 1, p->name);
    return -1;
}

int catalog__load_profiles(struct catalog *cat, const cJSON *doc, size_t index, struct errinfo *err)
{
    const cJSON *profiles = cJSON_GetObjectItemCaseSensitive(doc, "profiles");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(doc, "instructions");
    const cJSON *m, *p;

    cJSON_ArrayForEach(m, doc)
    {
        if (strcmp(m->string, "profiles") != 0 && strcmp(m->string, "instructions") != 0) {
            errinfo_set(err, ERR_INVALID,
                        "catalog document %zu: unknown key \"%.40s\" in the profiles document "
                        "(known: instructions, profiles)",
                        index + 1, m->string);
            return -1;
        }
    }
    if (pre && !cJSON_IsString(pre)) {
        errinfo_set(err, ERR_INVALID, "catalog document %zu: instructions must be a string",
                    index + 1);
        return -1;
    }
    cat->preamble = pre ? pre->valuestring : NULL;
    cat->profiles = calloc((size_t)cJSON_GetArraySize(profiles) + 1, sizeof(*cat->profiles));
    if (!cat->profiles) {
        errinfo_set(err, ERR_NOMEM, "catalog: out of memory");
        return -1;
    }
    cJSON_ArrayForEach(p, profiles)
    {
        if (load_profile(cat, p, index, &cat->profiles[cat->nprofiles], err) != 0)
            return -1;
        cat->nprofiles++;
    }
    return 0;
}

int catalog__build_instructions(struct catalog *cat, struct errinfo *err)
{
    struct jsonbuf b = JSONBUF_INIT(INSTRUCTIONS_MAX);

    if (cat->preamble)
        jsonbuf_puts(&b, cat->preamble, NULL);
    for (size_t i = 0; i < cat->nprofiles; i++) {
        const struct catalog_profile *p = &cat->profiles[i];
        bool applies = false;

        if (!p->rules || !p->groups)
            continue;
        for (size_t t = 0; t < cat->ntools && !applies; t++)
            applies = in_groups(p->groups, cat->tools[t].group);
        if (!applies)
            continue;
        if (b.len)
            jsonbuf_puts(&b, "\n\n", NULL);
        jsonbuf_puts(&b, p->rules, NULL);
    }
    if (b.failed) {
        jsonbuf_cleanup(&b);
        errinfo_set(err, ERR_NOMEM, "catalog: out of memory building the instructions");
        return -1;
    }
    cat->instructions = b.len ? b.data : NULL;
    if (!b.len)
        jsonbuf_cleanup(&b);
    return 0;
}

/* ---- views ---- */

static const struct catalog_profile *find_profile(const struct catalog *cat, const char *name)
{
    for (size_t i = 0; i < cat->nprofiles; i++)
        if (strcmp(cat->profiles[i].name, name) == 0)
            return &cat->profiles[i];
    return NULL;
}

/* Orders group names for messages: plain names (workspace, exec) before prefixed ones
 * (studio-scripts), each kind alphabetically. */
static int compare_groups(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    bool dx = strchr(x, '-') != NULL, dy = strchr(y, '-') != NULL;

    if (dx != dy)
        return dx ? 1 : -1;
    return strcmp(x, y);
}

/* "all, sandbox, ...; groups: console, exec, ..." into buf, cut to fit. */
static void accepted_names(const struct catalog *cat, char *buf, size_t size)
{
    const char **groups = calloc(cat->ntools + 1, sizeof(*groups));
    size_t used = 0, ng = 0;
    int n;

    buf[0] = '\0';
    for (size_t i = 0; i < cat->nprofiles && used < size; i++) {
        n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", cat->profiles[i].name);
        used += n > 0 ? (size_t)n : 0;
    }
    for (size_t i = 0; groups && i < cat->ntools; i++) {
        bool seen = false;

        for (size_t j = 0; j < ng && !seen; j++)
            seen = strcmp(groups[j], cat->tools[i].group) == 0;
        if (!seen)
            groups[ng++] = cat->tools[i].group;
    }
    if (groups)
        qsort(groups, ng, sizeof(*groups), compare_groups);
    for (size_t i = 0; i < ng && used < size; i++) {
        n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "; groups: ", groups[i]);
        used += n > 0 ? (size_t)n : 0;
    }
    free(groups);
}

/* Marks in keep[] the tools that the one item `name` selects. */
static int select_item(const struct catalog *base, const char *name, bool *keep,
                       struct errinfo *err)
{
    const struct catalog_profile *p = find_profile(base, name);
    char names[190];
    bool any = false;

    for (size_t i = 0; i < base->ntools; i++) {
        const struct catalog_tool *t = &base->tools[i];
        bool in = p ? in_groups(p->groups, t->group) && (!p->read_only || t->read_only)
                    : strcmp(t->group, name) == 0;

        keep[i] = keep[i] || in;
        any = any || in;
    }
    if (p || any)
        return 0;
    accepted_names(base, names, sizeof(names));
    errinfo_set(err, ERR_INVALID,
                "unknown tool profile or group \"%.40s\"; use one or a comma list of: %s", name,
                names);
    return -1;
}

/* Splits spec on commas (spaces around items ignored) and selects each item. */
static int select_spec(const struct catalog *base, const char *spec, bool *keep,
                       struct errinfo *err)
{
    const char *p = spec;

    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[CATALOG_NAME_MAX + 1];

        while (len && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len == 0 || len > CATALOG_NAME_MAX) {
            errinfo_set(err, ERR_INVALID,
                        "tool profile \"%.60s\" has an empty or overlong item; write e.g. "
                        "\"sandbox\" or \"sandbox,studio-scripts\"",
                        spec);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (select_item(base, item, keep, err) != 0)
            return -1;
        if (!end)
            return 0;
        p = end + 1;
    }
}

struct catalog *catalog_select(const struct catalog *base, const char *spec, struct errinfo *err)
{
    struct catalog *v = catalog__alloc();
    bool *keep = calloc(base->ntools + 1, sizeof(*keep));
    bool all = !spec || !spec[0];

    if (!v || !keep || !(v->tools = calloc(base->ntools + 1, sizeof(*v->tools))) ||
        !(v->profiles = calloc(base->nprofiles + 1, sizeof(*v->profiles)))) {
        errinfo_set(err, ERR_NOMEM, "catalog: out of memory");
        goto fail;
    }
    if (!all && select_spec(base, spec, keep, err) != 0)
        goto fail;
    for (size_t i = 0; i < base->ntools; i++)
        if (all || keep[i])
            v->tools[v->ntools++] = base->tools[i]; /* still sorted: base order is kept */
    memcpy(v->profiles, base->profiles, base->nprofiles * sizeof(*v->profiles));
    v->nprofiles = base->nprofiles;
    v->preamble = base->preamble;
    if (catalog__build_instructions(v, err) != 0)
        goto fail;
    free(keep);
    return v;
fail:
    free(keep);
    catalog_free(v);
    return NULL;
}

const char *catalog_instructions(const struct catalog *cat)
{
    return cat->instructions;
}

size_t catalog_list_chars(const struct catalog *cat)
{
    const char *tools = catalog_tools_json(cat);

    return tools ? strlen("{\"tools\":}") + strlen(tools) : SIZE_MAX;
}

size_t catalog_profile_count(const struct catalog *cat)
{
    return cat->nprofiles;
}

const char *catalog_profile_name(const struct catalog *cat, size_t i)
{
    return cat->profiles[i].name;
}

size_t catalog_profile_budget(const struct catalog *cat, size_t i)
{
    return cat->profiles[i].budget;
}
