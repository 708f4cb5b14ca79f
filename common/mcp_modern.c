/* common/mcp_modern.c - what the 2026-07-28 revision adds (see runbox/mcp.h): the per-request
 * _meta checks, the fields every modern result carries, server/discover, subscriptions/listen,
 * and the sealing of requestState.
 *
 * requestState is opaque to the client and must come back unchanged; a stateless server keeps
 * nothing between the two requests, so the state it hands out carries a keyed tag: SipHash-2-4
 * under a key drawn from the kernel at the first use, "rbx1:<16 hex digits>:<state>". A retry
 * whose state does not carry a valid tag is refused (-32602) before its handler runs. */
#include "mcp_int.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "jsonrpc.h"
#include "log.h"

#define TTL_LIST_MS     60000 /* lists change rarely, and every change is notified */
#define TTL_DISCOVER_MS 60000

/* The versions a request may name in its _meta. The legacy ones are served only after
 * initialize, so they are neither listed by server/discover nor offered by -32022: a modern
 * client that retried with one of them per request would be refused again. */
static const char *const modern_versions[] = {MCP_PROTOCOL_MODERN};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

cJSON *mcp__supported_versions(void)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; arr && i < COUNT_OF(modern_versions); i++)
        if (!cJSON_AddItemToArray(arr, cJSON_CreateString(modern_versions[i]))) {
            cJSON_Delete(arr);
            return NULL;
        }
    return arr;
}

/* ---- the _meta of a request ---- */

int mcp__modern_check(struct mcp_session *s, struct batch *batch, void *origin, const cJSON *id,
                      const cJSON *params, struct modern_meta *m)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, MCP_META_VERSION);
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(meta, MCP_META_CAPABILITIES);
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(meta, MCP_META_CLIENT_INFO);
    const cJSON *lvl = cJSON_GetObjectItemCaseSensitive(meta, MCP_META_LOG_LEVEL);
    cJSON *data;

    memset(m, 0, sizeof(*m));
    m->log_level = -1;
    if (!cJSON_IsString(v)) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                         "params._meta[\"" MCP_META_VERSION "\"] must be a string such as \"%s\"",
                         MCP_PROTOCOL_MODERN);
        return -1;
    }
    for (size_t i = 0; i < COUNT_OF(modern_versions); i++)
        if (strcmp(v->valuestring, modern_versions[i]) == 0)
            m->version = modern_versions[i];
    if (!m->version) {
        data = cJSON_CreateObject();
        if (data && (!cJSON_AddItemToObject(data, "supported", mcp__supported_versions()) ||
                     !cJSON_AddStringToObject(data, "requested", v->valuestring))) {
            cJSON_Delete(data);
            data = NULL;
        }
        mcp__reply_error(s, batch, origin, id, MCP_UNSUPPORTED_VERSION, data,
                         "Unsupported protocol version %.40s: this server speaks %s per request, "
                         "and 2025-11-25 and earlier after initialize",
                         v->valuestring, MCP_PROTOCOL_MODERN);
        return -1;
    }
    if (!cJSON_IsObject(caps)) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                         "params._meta[\"" MCP_META_CAPABILITIES
                         "\"] must be an object (send {} when the client has none)");
        return -1;
    }
    if (info && !cJSON_IsObject(info)) {
        mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                         "params._meta[\"" MCP_META_CLIENT_INFO "\"] must be an object "
                         "{\"name\",\"version\"}");
        return -1;
    }
    if (lvl) {
        m->log_level = cJSON_IsString(lvl) ? mcp__parse_log_level(lvl->valuestring) : -1;
        if (m->log_level < 0) {
            mcp__reply_error(s, batch, origin, id, MCP_INVALID_PARAMS, NULL,
                             "params._meta[\"" MCP_META_LOG_LEVEL "\"] must be one of debug, "
                             "info, notice, warning, error, critical, alert, emergency");
            return -1;
        }
    }
    m->caps = caps;
    m->client_info = info;
    return 0;
}

int mcp__modern_decorate(struct mcp_server *srv, cJSON *result, bool cacheable)
{
    cJSON *meta, *info;

    if (!cJSON_GetObjectItemCaseSensitive(result, "resultType") &&
        !cJSON_AddStringToObject(result, "resultType", "complete"))
        return -1;
    meta = cJSON_GetObjectItemCaseSensitive(result, "_meta");
    if (!meta && !(meta = cJSON_AddObjectToObject(result, "_meta")))
        return -1;
    if (cJSON_IsObject(meta) && !cJSON_GetObjectItemCaseSensitive(meta, MCP_META_SERVER_INFO)) {
        info = cJSON_AddObjectToObject(meta, MCP_META_SERVER_INFO);
        if (!info || !cJSON_AddStringToObject(info, "name", srv->name) ||
            !cJSON_AddStringToObject(info, "version", srv->version))
            return -1;
    }
    if (!cacheable)
        return 0;
    if (!cJSON_GetObjectItemCaseSensitive(result, "ttlMs") &&
        !cJSON_AddNumberToObject(result, "ttlMs", TTL_LIST_MS))
        return -1;
    if (!cJSON_GetObjectItemCaseSensitive(result, "cacheScope") &&
        !cJSON_AddStringToObject(result, "cacheScope", "private"))
        return -1;
    return 0;
}

/* ---- server/discover ---- */

void mcp__modern_discover(struct mcp_call *c)
{
    struct mcp_server *srv = c->s->srv;
    cJSON *res = cJSON_CreateObject(), *versions = mcp__supported_versions();
    bool ok = res && versions;

    ok = ok && cJSON_AddItemToObject(res, "supportedVersions", versions);
    if (!ok)
        cJSON_Delete(versions);
    ok = ok && cJSON_AddItemToObject(res, "capabilities", mcp__capabilities(srv)) &&
         (!srv->instructions || cJSON_AddStringToObject(res, "instructions", srv->instructions)) &&
         cJSON_AddNumberToObject(res, "ttlMs", TTL_DISCOVER_MS) &&
         cJSON_AddStringToObject(res, "cacheScope", "public");
    if (!ok) {
        cJSON_Delete(res);
        mcp_call_error(c, MCP_INTERNAL_ERROR, "internal error: out of memory", NULL);
        return;
    }
    mcp_call_result(c, res);
}

/* ---- subscriptions/listen ---- */

void mcp__listen_forget(struct mcp_session *s, struct mcp_call *c)
{
    for (struct listen **pp = &s->listens; *pp; pp = &(*pp)->next)
        if ((*pp)->call == c) {
            struct listen *l = *pp;

            *pp = l->next;
            mcp__interest_unsubscribe_all(s->srv, l->uris);
            cJSON_Delete(l->uris);
            free(l);
            return;
        }
}

static const struct {
    const char *key;
    unsigned bit;
} listen_keys[] = {{"toolsListChanged", MCP_LIST_TOOLS},
                   {"promptsListChanged", MCP_LIST_PROMPTS},
                   {"resourcesListChanged", MCP_LIST_RESOURCES}};

void mcp__modern_listen(struct mcp_call *c)
{
    struct mcp_session *s = c->s;
    const cJSON *filter = cJSON_GetObjectItemCaseSensitive(c->params, "notifications");
    const cJSON *uris = cJSON_GetObjectItemCaseSensitive(filter, "resourceSubscriptions");
    struct listen *l = calloc(1, sizeof(*l));
    cJSON *params = cJSON_CreateObject(), *ack = NULL, *meta;
    const cJSON *u;
    char *line;

    if (filter && !cJSON_IsObject(filter)) {
        free(l);
        cJSON_Delete(params);
        mcp_call_error(c, MCP_INVALID_PARAMS,
                       "subscriptions/listen: params.notifications must be an object", NULL);
        return;
    }
    cJSON_ArrayForEach(u, uris) if (!cJSON_IsString(u))
    {
        free(l);
        cJSON_Delete(params);
        mcp_call_error(c, MCP_INVALID_PARAMS,
                       "subscriptions/listen: resourceSubscriptions must be an array of URIs",
                       NULL);
        return;
    }
    meta = params ? cJSON_AddObjectToObject(params, "_meta") : NULL;
    ack = params ? cJSON_AddObjectToObject(params, "notifications") : NULL;
    if (!l || !meta || !ack ||
        !cJSON_AddItemToObject(meta, MCP_META_SUBSCRIPTION, cJSON_Parse(c->id_text))) {
        free(l);
        cJSON_Delete(params);
        mcp_call_error(c, MCP_INTERNAL_ERROR, "internal error: out of memory", NULL);
        return;
    }
    for (size_t i = 0; i < COUNT_OF(listen_keys); i++)
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(filter, listen_keys[i].key))) {
            l->lists |= listen_keys[i].bit;
            cJSON_AddTrueToObject(ack, listen_keys[i].key);
        }
    if (cJSON_IsArray(uris)) {
        l->uris = cJSON_Duplicate(uris, true);
        cJSON_AddItemToObject(ack, "resourceSubscriptions", cJSON_Duplicate(uris, true));
    }
    /* The embedder may refuse a URI (one that names no resource): then nothing is watched. */
    for (int i = 0; l->uris && i < cJSON_GetArraySize(l->uris); i++) {
        struct errinfo err = {0};
        const cJSON *ui = cJSON_GetArrayItem(l->uris, i);

        if (mcp__interest_subscribe(s->srv, ui->valuestring, &err) == 0)
            continue;
        char msg[sizeof(err.msg) + 64];

        while (--i >= 0)
            mcp__interest_unsubscribe(s->srv, cJSON_GetArrayItem(l->uris, i)->valuestring);
        snprintf(msg, sizeof(msg), "subscriptions/listen: resourceSubscriptions: %s",
                 err.msg[0] ? err.msg : "refused");
        mcp_call_error(c, MCP_INVALID_PARAMS, msg, NULL);
        cJSON_Delete(l->uris);
        free(l);
        cJSON_Delete(params);
        return;
    }
    l->call = c;
    line = jsonrpc_build_notification("notifications/subscriptions/acknowledged", params);
    /* The acknowledgement goes first; only then does the stream take notifications. */
    if (line)
        mcp__call_send(c, line, strlen(line), MCP_ROUTE_LISTEN);
    free(line);
    pthread_mutex_lock(&s->mu);
    c->is_listen = true;
    if (c->cancelled) {
        pthread_mutex_unlock(&s->mu);
        mcp__interest_unsubscribe_all(s->srv, l->uris);
        cJSON_Delete(l->uris);
        free(l);
        mcp_call_result(c, NULL); /* dropped */
        return;
    }
    l->next = s->listens;
    s->listens = l;
    pthread_mutex_unlock(&s->mu);
    /* The call stays in flight: the stream lives until the client cancels it. */
}

/* ---- sealed requestState ---- */

static uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = rotl(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = rotl(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = rotl(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = rotl(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = rotl(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = rotl(v2, 32);                                                                         \
    } while (0)

/* SipHash-2-4 of in[0..n) under the 128-bit key k0:k1. */
static uint64_t siphash(uint64_t k0, uint64_t k1, const unsigned char *in, size_t n)
{
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    uint64_t m, b = (uint64_t)n << 56;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        m = 0;
        for (int j = 7; j >= 0; j--)
            m = (m << 8) | in[i + (size_t)j];
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    for (size_t j = 0; i + j < n; j++)
        b |= (uint64_t)in[i + j] << (8 * j);
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t state_key[2];
static pthread_once_t state_once = PTHREAD_ONCE_INIT;

static void state_key_init(void)
{
    if (getrandom(state_key, sizeof(state_key), 0) != (ssize_t)sizeof(state_key)) {
        /* No kernel randomness: a fixed key still detects accidental changes. */
        log_warn("mcp: getrandom failed; requestState tags use a fixed key");
        state_key[0] = 0x0706050403020100ULL;
        state_key[1] = 0x0f0e0d0c0b0a0908ULL;
    }
}

char *mcp__state_seal(const char *state)
{
    size_t n = strlen(state);
    char *out = malloc(n + 32);

    pthread_once(&state_once, state_key_init);
    if (out)
        snprintf(out, n + 32, "rbx1:%016" PRIx64 ":%s",
                 siphash(state_key[0], state_key[1], (const unsigned char *)state, n), state);
    return out;
}

int mcp__state_unseal(const char *sealed, char **out)
{
    char tag[17];
    const char *state;
    uint64_t want;

    *out = NULL;
    pthread_once(&state_once, state_key_init);
    if (strncmp(sealed, "rbx1:", 5) != 0 || strlen(sealed) < 5 + 16 + 1 || sealed[21] != ':')
        return -1;
    memcpy(tag, sealed + 5, 16);
    tag[16] = '\0';
    state = sealed + 22;
    want = siphash(state_key[0], state_key[1], (const unsigned char *)state, strlen(state));
    if (strtoull(tag, NULL, 16) != want || strspn(tag, "0123456789abcdef") != 16)
        return -1;
    *out = strdup(state);
    return *out ? 0 : -1;
}
