/* daemon/tools_checkpoints.c - the checkpoint tools: checkpoint, list_checkpoints, diff,
 * restore_checkpoint (see checkpoint.h). */
#include "tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "proc.h"
#include "strfmt.h"
#include "watch.h"

static int need_store(const struct tools_ctx *ctx, struct errinfo *err)
{
    if (ctx->checkpoints)
        return 0;
    errinfo_set(err, ERR_UNAVAILABLE,
                "checkpoints are not available in this daemon (its checkpoint store could not be "
                "opened; see its log and --checkpoint-dir)");
    return -1;
}

/* The running processes, as [{pid, command}] (owned), for the restore answer. */
static cJSON *running(const struct tools_ctx *ctx)
{
    cJSON *list = ctx->proc ? proc_list_json(ctx->proc) : NULL, *out = cJSON_CreateArray(), *p;

    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(list, "processes"))
    {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(p, "state");
        cJSON *o;

        if (!cJSON_IsString(st) || strcmp(st->valuestring, "running") != 0 || !out)
            continue;
        o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddItemToObject(o, "pid",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p, "pid"), 1));
        cJSON_AddItemToObject(o, "command",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p, "command"), 1));
        cJSON_AddItemToArray(out, o);
    }
    cJSON_Delete(list);
    return out;
}

/* Sets out to text (owned, taken) with j as structuredContent (taken). */
static int answer(struct tools_result *out, char *text, cJSON *j, struct errinfo *err)
{
    char *js = j ? cJSON_PrintUnformatted(j) : NULL;

    cJSON_Delete(j);
    if (!text || !js) {
        free(text);
        free(js);
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return -1;
    }
    out->data = text;
    out->len = strlen(text);
    out->is_json = false;
    out->structured = js;
    return 0;
}

static double num(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

int tools_checkpoint(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                     struct tools_result *out, struct errinfo *err)
{
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(args, "message");
    cJSON *j = NULL;
    const cJSON *id, *dropped;
    char *text;

    (void)call;
    if (need_store(ctx, err) < 0 ||
        checkpoint_save(ctx->checkpoints, cJSON_IsString(msg) ? msg->valuestring : "", &j, err) < 0)
        return -1;
    id = cJSON_GetObjectItemCaseSensitive(j, "id");
    dropped = cJSON_GetObjectItemCaseSensitive(j, "removed_old");
    text = strfmt_alloc("[checkpoint %s: %.0f files, %.0f bytes; %.0f files saved since the last "
                        "one%s%s]\nRestore it with restore_checkpoint {\"id\": \"%s\"}; diff "
                        "shows what changed since.\n",
                        id->valuestring, num(j, "files"), num(j, "bytes"), num(j, "copied_files"),
                        cJSON_GetArraySize(dropped) ? "; older checkpoints dropped by the limit: "
                                                    : "",
                        cJSON_GetArraySize(dropped) ? "see removed_old" : "", id->valuestring);
    return answer(out, text, j, err);
}

int tools_list_checkpoints(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                           struct tools_result *out, struct errinfo *err)
{
    cJSON *j;
    char *js;

    (void)call;
    (void)args;
    if (need_store(ctx, err) < 0 || !(j = checkpoint_list(ctx->checkpoints, err)))
        return -1;
    js = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!js) {
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return -1;
    }
    out->data = js;
    out->len = strlen(js);
    out->is_json = true;
    return 0;
}

int tools_diff(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
               struct tools_result *out, struct errinfo *err)
{
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(args, "from");
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(args, "to");
    char *text = NULL;
    cJSON *j = NULL;

    (void)call;
    if (need_store(ctx, err) < 0 ||
        checkpoint_diff(ctx->checkpoints, cJSON_IsString(from) ? from->valuestring : NULL,
                        cJSON_IsString(to) ? to->valuestring : NULL, &text, &j, err) < 0)
        return -1;
    return answer(out, text, j, err);
}

int tools_restore_checkpoint(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                             struct tools_result *out, struct errinfo *err)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(args, "id");
    cJSON *j = NULL, *run;
    char names[1024] = "";
    size_t n = 0;
    const cJSON *p;
    char *text;

    (void)call;
    if (need_store(ctx, err) < 0 ||
        checkpoint_restore(ctx->checkpoints, id->valuestring, &j, err) < 0)
        return -1;
    watch_resources_changed(ctx->watch); /* files came back or went away */
    run = running(ctx);
    cJSON_ArrayForEach(p, run)
    {
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(p, "pid");
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(p, "command");
        int w = snprintf(names + n, sizeof(names) - n, "%s%.0f (%.60s)", n ? ", " : "",
                         cJSON_IsNumber(pid) ? pid->valuedouble : 0,
                         cJSON_IsString(cmd) ? cmd->valuestring : "?");
        if (w > 0 && (size_t)w < sizeof(names) - n)
            n += (size_t)w;
    }
    text = strfmt_alloc("[restored checkpoint %s: %.0f entries written, %.0f removed, %.0f "
                        "unchanged]\n%s%s%s",
                        id->valuestring, num(j, "written"), num(j, "removed"), num(j, "unchanged"),
                        n ? "Still running (they may have files open or "
                            "write again; restart them if needed): "
                          : "",
                        names, n ? "\n" : "");
    if (!run || !cJSON_AddItemToObject(j, "running", run))
        cJSON_Delete(run);
    return answer(out, text, j, err);
}
