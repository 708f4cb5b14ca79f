/* tests/fuzz/fuzz_jsonrpc.c - JSON-RPC framing on arbitrary bytes: scan, parse, classify,
 * and build every kind of answer from what was parsed. Besides "no crash, no leak", it checks
 * the contracts that the engine relies on, aborting when one breaks:
 *   - parse refuses exactly what the scan flags (too deep, \u0000), with a one-line message;
 *   - INVALID always comes with a reason; a REQUEST always has a usable id;
 *   - built lines are single-line JSON that parse back as a response carrying the same id;
 *   - parse_peer takes what parse takes, and the same tree, and refuses only for the same
 *     reasons except \u0000; an id find_id finds is the parsed message's own id. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"

static void require(bool ok)
{
    if (!ok)
        abort();
}

static void check_line(char *line, const cJSON *id, bool is_error)
{
    cJSON *back;
    const char *why = NULL;

    require(line != NULL);
    require(strchr(line, '\n') == NULL);
    back = cJSON_Parse(line);
    require(back != NULL);
    require(jsonrpc_classify(back, &why) == JSONRPC_KIND_RESPONSE);
    require(cJSON_GetObjectItemCaseSensitive(back, is_error ? "error" : "result") != NULL);
    if (id)
        require(cJSON_Compare(cJSON_GetObjectItemCaseSensitive(back, "id"), id, true));
    cJSON_Delete(back);
    free(line);
}

static void build_all(const cJSON *msg, enum jsonrpc_kind kind, const char *why)
{
    const cJSON *id = jsonrpc_usable_id(msg);
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
    char *line;

    if (kind == JSONRPC_KIND_REQUEST)
        require(id != NULL);
    /* The whole message as the result and as error data: deep, odd values must print. A
     * result needs an id (a response with "id":null and a result is not valid JSON-RPC). */
    if (id)
        check_line(jsonrpc_build_result(id, cJSON_Duplicate(msg, true)), id, false);
    check_line(jsonrpc_build_error(id, JSONRPC_INVALID_REQUEST, why ? why : "x",
                                   cJSON_Duplicate(msg, true)),
               id, true);
    check_line(jsonrpc_build_error(NULL, JSONRPC_PARSE_ERROR, "Parse error", NULL), NULL, true);
    if (cJSON_IsString(method)) {
        line = jsonrpc_build_notification(
            method->valuestring,
            cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(msg, "params"), true));
        require(line != NULL && strchr(line, '\n') == NULL);
        free(line);
    }
}

/* Both trees printed, not cJSON_Compare'd: 1e400 is inf, which compares unequal to itself. */
static bool same_tree(const cJSON *a, const cJSON *b)
{
    char *pa = cJSON_PrintUnformatted(a), *pb = cJSON_PrintUnformatted(b);
    bool same = pa && pb && strcmp(pa, pb) == 0;

    free(pa);
    free(pb);
    return same;
}

/* parse_peer against parse's result msg (NULL with *err when it refused). */
static void check_peer(const char *text, size_t size, const cJSON *msg, const struct errinfo *err)
{
    struct errinfo perr;
    cJSON *peer;

    errinfo_clear(&perr);
    peer = jsonrpc_parse_peer(text, size, &perr);
    if (msg) {
        require(peer && same_tree(msg, peer));
    } else if (!peer) {
        require(errinfo_is_set(&perr) && strchr(perr.msg, '\n') == NULL);
    } else { /* taken by the peer parse only: what parse refused was a \u0000 */
        require(err->kind == ERR_INVALID && strstr(err->msg, "\\u0000") != NULL);
    }
    cJSON_Delete(peer);
}

static void check_find_id(const char *text, size_t size, const cJSON *msg)
{
    unsigned long long id;
    const cJSON *member;

    if (!jsonrpc_find_id(text, size, &id) || !cJSON_IsObject(msg))
        return;
    member = cJSON_GetObjectItemCaseSensitive(msg, "id");
    require(cJSON_IsNumber(member));
    if (id < (1ULL << 53))
        require(member->valuedouble == (double)id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct jsonrpc_scan sc;
    struct errinfo err;
    const char *why = NULL;
    enum jsonrpc_kind kind;
    const cJSON *member;
    cJSON *msg;

    jsonrpc_scan(text, size, &sc);
    errinfo_clear(&err);
    msg = jsonrpc_parse(text, size, &err);
    check_peer(text, size, msg, &err);
    check_find_id(text, size, msg);
    if (!msg) {
        require(errinfo_is_set(&err));
        require(strchr(err.msg, '\n') == NULL);
        require((err.kind == ERR_TOO_LARGE) == (sc.max_depth > JSONRPC_MAX_DEPTH));
        require(err.kind == ERR_TOO_LARGE || err.kind == ERR_INVALID);
        return 0;
    }
    require(!errinfo_is_set(&err));
    require(sc.max_depth <= JSONRPC_MAX_DEPTH);
    require(!sc.has_nul_escape);
    kind = jsonrpc_classify(msg, &why);
    require(kind != JSONRPC_KIND_INVALID || why != NULL);
    build_all(msg, kind, kind == JSONRPC_KIND_INVALID ? why : NULL);
    if (kind == JSONRPC_KIND_BATCH) {
        cJSON_ArrayForEach(member, msg)
        {
            why = NULL;
            kind = jsonrpc_classify(member, &why);
            require(kind != JSONRPC_KIND_INVALID || why != NULL);
            build_all(member, kind, why);
        }
    }
    cJSON_Delete(msg);
    return 0;
}
