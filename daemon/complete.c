/* daemon/complete.c - completion of prompt and resource-template arguments (see complete.h). */
#include "complete.h"

#include <stdio.h>
#include <string.h>

#include "tools.h"
#include "vfs.h"

/* Adds to values the workspace paths that begin with prefix: the entries of prefix's directory
 * whose names begin with its last part (directories end with '/'). */
static void complete_path(const struct tools_ctx *t, const char *prefix, cJSON *values,
                          size_t *total)
{
    char dir[VFS_PATH_MAX + 1], norm[VFS_PATH_MAX + 1];
    const char *slash, *part;
    struct vfs_listing l = {0};

    if (!prefix[0])
        prefix = "/";
    slash = strrchr(prefix, '/');
    part = slash ? slash + 1 : prefix;
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - prefix) + 1 : 1, slash ? prefix : "/");
    if (vfs_normalize(tools_workspace_alias(dir), norm, sizeof(norm), NULL) < 0 ||
        vfs_list(t->vfs, norm, 1000, &l, NULL) < 0)
        return;
    for (size_t i = 0; i < l.count; i++) {
        char full[2 * VFS_PATH_MAX + 4];

        if (strncmp(l.entries[i].name, part, strlen(part)) != 0)
            continue;
        (*total)++;
        if (cJSON_GetArraySize(values) >= COMPLETE_MAX)
            continue;
        /* A name longer than a path can be is not offered (truncated text would be wrong). */
        if (snprintf(full, sizeof(full), "%s%s%s%s", norm, strcmp(norm, "/") ? "/" : "",
                     l.entries[i].name, l.entries[i].type == VFS_DIR ? "/" : "") > VFS_PATH_MAX + 1)
            continue;
        cJSON_AddItemToArray(values, cJSON_CreateString(full));
    }
    vfs_listing_cleanup(&l);
}

int complete_answer(const struct tools_ctx *t, const cJSON *params, cJSON **out,
                    struct errinfo *err)
{
    static const char *const scaffolds[] = {"bun-api", "python-script", "fullstack"};
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(params, "ref");
    const cJSON *argument = cJSON_GetObjectItemCaseSensitive(params, "argument");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ref, "type");
    const cJSON *rname = cJSON_GetObjectItemCaseSensitive(ref, "name");
    const cJSON *ruri = cJSON_GetObjectItemCaseSensitive(ref, "uri");
    const cJSON *aname = cJSON_GetObjectItemCaseSensitive(argument, "name");
    const cJSON *avalue = cJSON_GetObjectItemCaseSensitive(argument, "value");
    const char *value = cJSON_IsString(avalue) ? avalue->valuestring : "";
    cJSON *res = cJSON_CreateObject(), *comp = cJSON_AddObjectToObject(res, "completion");
    cJSON *values = cJSON_AddArrayToObject(comp, "values");
    size_t total = 0;

    *out = NULL;
    if (!values) {
        cJSON_Delete(res);
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return -1;
    }
    if (!cJSON_IsString(type) || !cJSON_IsString(aname)) {
        cJSON_Delete(res);
        errinfo_set(err, ERR_INVALID,
                    "completion/complete: params.ref.type and params.argument.name must be "
                    "strings");
        return -1;
    }
    if (strcmp(type->valuestring, "ref/prompt") == 0 && cJSON_IsString(rname)) {
        if (strcmp(rname->valuestring, "scaffold") == 0 && strcmp(aname->valuestring, "type") == 0)
            for (size_t i = 0; i < sizeof(scaffolds) / sizeof(scaffolds[0]); i++)
                if (strncmp(scaffolds[i], value, strlen(value)) == 0) {
                    cJSON_AddItemToArray(values, cJSON_CreateString(scaffolds[i]));
                    total++;
                }
        if (strcmp(rname->valuestring, "explain_file") == 0 &&
            strcmp(aname->valuestring, "path") == 0)
            complete_path(t, value, values, &total);
    } else if (strcmp(type->valuestring, "ref/resource") == 0 && cJSON_IsString(ruri) &&
               strcmp(ruri->valuestring, "file:///{path}") == 0 &&
               strcmp(aname->valuestring, "path") == 0) {
        char slashed[VFS_PATH_MAX + 2];

        /* The template's variable is the path without its leading '/'. */
        slashed[0] = '/';
        snprintf(slashed + 1, sizeof(slashed) - 1, "%.*s", VFS_PATH_MAX, value);
        complete_path(t, slashed, values, &total);
        for (cJSON *v = values->child; v; v = v->next)
            memmove(v->valuestring, v->valuestring + 1, strlen(v->valuestring));
    }
    cJSON_AddNumberToObject(comp, "total", (double)total);
    cJSON_AddBoolToObject(comp, "hasMore", total > (size_t)cJSON_GetArraySize(values));
    *out = res;
    return 0;
}
