/* daemon/tools_ports.c - the port-forward side of the exec tools: expose_port, exec's "ports",
 * and the URLs in process_list (see portfwd.h). */
#include "tools.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portfwd.h"

static int need_portfwd(const struct tools_ctx *ctx, struct errinfo *err)
{
    if (ctx->portfwd)
        return 0;
    errinfo_set(err, ERR_UNAVAILABLE, "port forwards are not running in this daemon");
    return -1;
}

int tools_ports_check(const cJSON *ports, bool background, struct errinfo *err)
{
    const cJSON *a, *b;

    if (!ports || cJSON_GetArraySize(ports) == 0)
        return 0;
    if (!background) {
        errinfo_set(err, ERR_INVALID,
                    "arguments.ports: only a background command can have exposed ports; add "
                    "\"background\": true (or call expose_port for a running one)");
        return -1;
    }
    cJSON_ArrayForEach(a, ports) for (b = a->next; b; b = b->next) if (a->valueint == b->valueint)
    {
        errinfo_set(err, ERR_INVALID, "arguments.ports: port %d is listed twice", a->valueint);
        return -1;
    }
    return 0;
}

cJSON *tools_ports_expose_all(const struct tools_ctx *ctx, uint64_t pid, const cJSON *ports,
                              char *notes, size_t notessz)
{
    cJSON *urls = cJSON_CreateArray();
    const cJSON *p;
    size_t n = 0;

    notes[0] = '\0';
    cJSON_ArrayForEach(p, ports)
    {
        struct errinfo err;
        char url[64];
        int w;

        errinfo_clear(&err);
        if (!ctx->portfwd) {
            w = snprintf(notes + n, notessz - n, "[port %d not exposed: no port forwards]\n",
                         p->valueint);
        } else if (portfwd_expose(ctx->portfwd, pid, (uint16_t)p->valueint, 0, url, sizeof(url),
                                  &err) < 0) {
            w = snprintf(notes + n, notessz - n, "[port %d not exposed: %s]\n", p->valueint,
                         err.msg);
        } else {
            cJSON *o = cJSON_CreateObject();
            if (o && cJSON_AddNumberToObject(o, "port", p->valueint) &&
                cJSON_AddStringToObject(o, "url", url) && urls && cJSON_AddItemToArray(urls, o))
                o = NULL;
            cJSON_Delete(o);
            w = snprintf(notes + n, notessz - n, "[port %d: %s]\n", p->valueint, url);
        }
        if (w > 0 && (size_t)w < notessz - n)
            n += (size_t)w;
    }
    return urls;
}

int tools_ports_add_urls(const struct tools_ctx *ctx, cJSON *list)
{
    cJSON *procs = cJSON_GetObjectItemCaseSensitive(list, "processes"), *it;

    if (!ctx->portfwd)
        return 0;
    cJSON_ArrayForEach(it, procs)
    {
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(it, "pid");
        cJSON *urls = cJSON_IsNumber(pid)
                          ? portfwd_urls_json(ctx->portfwd, (uint64_t)pid->valuedouble)
                          : NULL;

        if (!urls || !cJSON_AddItemToObject(it, "urls", urls)) {
            cJSON_Delete(urls);
            return -1;
        }
    }
    return 0;
}

int tools_expose_port(const struct tools_ctx *ctx, struct call *call, const cJSON *args,
                      struct tools_result *out, struct errinfo *err)
{
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(args, "pid");
    const cJSON *port = cJSON_GetObjectItemCaseSensitive(args, "port");
    const cJSON *hp = cJSON_GetObjectItemCaseSensitive(args, "host_port");
    char url[64];
    cJSON *j;

    (void)call;
    if (need_portfwd(ctx, err) < 0)
        return -1;
    if (portfwd_expose(ctx->portfwd, (uint64_t)pid->valuedouble, (uint16_t)port->valueint,
                       cJSON_IsNumber(hp) ? (uint16_t)hp->valueint : 0, url, sizeof(url), err) < 0)
        return -1;
    j = cJSON_CreateObject();
    if (!j || !cJSON_AddNumberToObject(j, "pid", pid->valuedouble) ||
        !cJSON_AddNumberToObject(j, "port", port->valueint) ||
        !cJSON_AddStringToObject(j, "url", url) || !(out->data = cJSON_PrintUnformatted(j))) {
        cJSON_Delete(j);
        errinfo_set(err, ERR_NOMEM, "out of memory");
        return -1;
    }
    cJSON_Delete(j);
    out->len = strlen(out->data);
    out->is_json = true;
    return 0;
}
