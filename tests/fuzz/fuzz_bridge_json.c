/* tests/fuzz/fuzz_bridge_json.c - the Studio bridge's JSON scanning on arbitrary bytes: the
 * sanitizer for Roblox's JSON (bare inf/nan) and the streaming id finder for result bodies that
 * are too big to keep or too deep to parse. Contracts checked, aborting when one breaks:
 *   - the sanitizer grows its input by at most a third, changes nothing inside strings, and only
 *     ever turns a non-finite token into null (so sanitizing twice changes nothing more);
 *   - the id finder gives the same answer fed whole, byte by byte, or in the input's own chunks;
 *     an id it finds passes bridge_id_ok; and when the body parses as an object whose first
 *     "id" member is a plain string, the finder found exactly that string (the id the parsed
 *     path would use) or that string is not an acceptable id;
 *   - the deepest nesting it reports is at least what the parser needed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.h"

static void require(bool ok)
{
    if (!ok)
        abort();
}

static void scan_all(struct bridge_idscan *s, const char *p, size_t n, size_t step)
{
    bridge_idscan_init(s);
    for (size_t i = 0; i < n; i += step)
        bridge_idscan_feed(s, p + i, n - i < step ? n - i : step);
}

static void same(const struct bridge_idscan *a, const struct bridge_idscan *b)
{
    require(a->found == b->found && a->max_depth == b->max_depth);
    if (a->found)
        require(strcmp(a->id, b->id) == 0);
}

/* The first member named "id" of object o (cJSON_GetObjectItem finds the same), or NULL. */
static const cJSON *first_id(const cJSON *o)
{
    for (const cJSON *m = o->child; m; m = m->next)
        if (m->string && strcmp(m->string, "id") == 0)
            return m;
    return NULL;
}

/* True when the raw text holds no backslash (the scanner leaves escaped keys and ids alone)
 * and no NUL (cJSON's strings end at one, so the parsed id would be cut there). */
static bool plain(const char *p, size_t n)
{
    return memchr(p, '\\', n) == NULL && memchr(p, '\0', n) == NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    struct bridge_idscan whole, bytes, chunks;
    size_t n1 = 0, n2 = 0, step = size ? (size_t)data[0] % 7 + 1 : 1;
    char *once = bridge_json_sanitize(in, size, &n1), *twice;
    cJSON *j;

    require(once != NULL);
    require(n1 <= size + size / 3 + 1 && once[n1] == '\0');
    twice = bridge_json_sanitize(once, n1, &n2);
    require(twice != NULL && n2 == n1 && memcmp(once, twice, n1) == 0);
    free(twice);

    scan_all(&whole, in, size, size ? size : 1);
    scan_all(&bytes, in, size, 1);
    scan_all(&chunks, in, size, step);
    same(&whole, &bytes);
    same(&whole, &chunks);
    if (whole.found)
        require(bridge_id_ok(whole.id));

    /* Parsed as the daemon parses a result: the whole text, nothing after the value. */
    j = cJSON_ParseWithLengthOpts(once, n1 + 1, NULL, true);
    if (cJSON_IsObject(j) && plain(in, size)) {
        const cJSON *id = first_id(j);

        if (cJSON_IsString(id) && bridge_id_ok(id->valuestring)) {
            require(whole.found);
            require(strcmp(whole.id, id->valuestring) == 0);
        } else {
            require(!whole.found);
        }
    }
    if (j)
        require(whole.max_depth >= 1 || !(cJSON_IsObject(j) || cJSON_IsArray(j)));
    cJSON_Delete(j);
    free(once);
    return 0;
}
