/* tests/fuzz/fuzz_json_compact.c - the engine's JSON checker and compactor (common/
 * json_compact.c), against cJSON on arbitrary bytes. Whenever json_compact accepts a text:
 *   - cJSON parses the text and the copy, with no byte left over in either, to the same value
 *     (the copy means what the text meant): their prints are equal (cJSON_Compare would call
 *     two infinities, "1e999", different);
 *   - the copy has no whitespace outside strings, and compacting it again gives it back;
 *   - the returned character is the copy's first.
 * And when cJSON refuses a text, so does json_compact (what the engine accepts, it can parse
 * later). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "json_compact.h"

static void require(bool ok)
{
    if (!ok)
        abort();
}

/* cJSON's parse of the whole of s[0..n), or NULL. */
static cJSON *parse_all(const char *s, size_t n)
{
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(s, n, &end, false);

    if (v && end != s + n) {
        /* cJSON stops at the value's end: only whitespace may follow */
        for (const char *p = end; p < s + n; p++)
            if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
                cJSON_Delete(v);
                return NULL;
            }
    }
    return v;
}

static bool outside_strings_has_space(const char *s, size_t n)
{
    bool in = false;

    for (size_t i = 0; i < n; i++) {
        if (in && s[i] == '\\')
            i++;
        else if (s[i] == '"')
            in = !in;
        else if (!in && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
            return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct jsonbuf out = JSONBUF_INIT(1 << 20), again = JSONBUF_INIT(1 << 20);
    struct errinfo err = {0};
    cJSON *a, *b;
    char *pa, *pb;
    int first;

    if (size > 1 << 16)
        return 0;
    first = json_compact(text, size, &out, &err);
    a = parse_all(text, size);
    if (first < 0) {
        jsonbuf_cleanup(&out);
        cJSON_Delete(a);
        return 0;
    }
    require(a != NULL);
    require(out.data && (unsigned char)out.data[0] == first);
    b = parse_all(out.data, out.len);
    require(b != NULL);
    pa = cJSON_PrintUnformatted(a);
    pb = cJSON_PrintUnformatted(b);
    require(pa && pb && strcmp(pa, pb) == 0);
    cJSON_free(pa);
    cJSON_free(pb);
    require(!outside_strings_has_space(out.data, out.len));
    require(json_compact(out.data, out.len, &again, &err) == first);
    require(again.len == out.len && memcmp(again.data, out.data, out.len) == 0);
    cJSON_Delete(a);
    cJSON_Delete(b);
    jsonbuf_cleanup(&out);
    jsonbuf_cleanup(&again);
    return 0;
}
