/* tests/unit/test_jsonrpc.c - JSON-RPC framing: scan, parse errors, classification, building. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"

/* ---- scan ---- */

static const struct {
    const char *text;
    int max_depth;
    bool nul;
} scan_cases[] = {
    {"", 0, false},
    {"{}", 1, false},
    {"[[[]]]", 3, false},
    {"{\"a\":[{}],\"b\":[]}", 3, false},
    {"\"[[[{{\"", 0, false},      /* brackets inside a string do not count */
    {"[\"\\\"[[\"]", 1, false},   /* an escaped quote does not end the string */
    {"[[", 2, false},             /* unclosed: depth is still measured */
    {"]]]{", 1, false},           /* stray closers never go below zero */
    {"\"\\u0000\"", 0, true},     /* the NUL escape */
    {"[\"a\\u00001\"]", 1, true}, /* followed by more digits, still a NUL */
    {"\"\\\\u0000\"", 0, false},  /* an escaped backslash, then the letters u0000 */
    {"\"\\\\\\u0000\"", 0, true}, /* an escaped backslash, then a real NUL escape */
    {"\\u0000", 0, false},        /* outside a string it is just garbage */
    {"\"\\u000\"", 0, false},     /* too short */
    {"\"\\u0001\"", 0, false},    /* another code point */
    {"\"\\u0000", 0, true},       /* unterminated, but the escape is complete */
};

START_TEST(test_jsonrpc_scan_table)
{
    struct jsonrpc_scan sc;

    jsonrpc_scan(scan_cases[_i].text, strlen(scan_cases[_i].text), &sc);
    ck_assert_msg(sc.max_depth == scan_cases[_i].max_depth, "%s: depth %d, want %d",
                  scan_cases[_i].text, sc.max_depth, scan_cases[_i].max_depth);
    ck_assert_msg(sc.has_nul_escape == scan_cases[_i].nul, "%s: nul %d", scan_cases[_i].text,
                  sc.has_nul_escape);
}
END_TEST

START_TEST(test_jsonrpc_scan_respects_length)
{
    struct jsonrpc_scan sc;

    /* Only the first 2 bytes count; the rest would be deeper. */
    jsonrpc_scan("[[[[[[", 2, &sc);
    ck_assert_int_eq(sc.max_depth, 2);
    /* The escape is cut by the length, so it is not seen. */
    jsonrpc_scan("\"\\u0000\"", 5, &sc);
    ck_assert(!sc.has_nul_escape);
}
END_TEST

/* ---- parse ---- */

static char *nested(int depth)
{
    char *s = malloc((size_t)depth * 2 + 1);

    for (int i = 0; i < depth; i++) {
        s[i] = '[';
        s[depth * 2 - 1 - i] = ']';
    }
    s[depth * 2] = '\0';
    return s;
}

START_TEST(test_jsonrpc_parse_ok)
{
    struct errinfo err;
    cJSON *v;
    const char *text = " {\"a\": [1, \"x\"]}\r\n\t ";

    errinfo_clear(&err);
    v = jsonrpc_parse(text, strlen(text), &err);
    ck_assert_ptr_nonnull(v);
    ck_assert(!errinfo_is_set(&err));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(v, "a")), 2);
    cJSON_Delete(v);
}
END_TEST

START_TEST(test_jsonrpc_parse_not_nul_terminated)
{
    struct errinfo err;
    char buf[8];
    cJSON *v;

    memcpy(buf, "{}{}{}{}", 8); /* no NUL anywhere */
    errinfo_clear(&err);
    v = jsonrpc_parse(buf, 2, &err);
    ck_assert_ptr_nonnull(v);
    ck_assert(cJSON_IsObject(v));
    cJSON_Delete(v);
    v = jsonrpc_parse(buf, 3, &err);
    ck_assert_ptr_null(v);
    ck_assert_str_eq(err.msg, "invalid JSON at byte 2: unexpected data after the value");
}
END_TEST

static const struct {
    const char *text;
    const char *msg;
} parse_errors[] = {
    {"", "invalid JSON at byte 0: empty input"},
    {"   ", "invalid JSON at byte 3: unexpected end of input"},
    {"{", "invalid JSON at byte 1: unexpected end of input"},
    {"[1,", "invalid JSON at byte 3: unexpected end of input"},
    {"{\"a\":", "invalid JSON at byte 5: unexpected end of input"},
    {"[1,]", "invalid JSON at byte 3: unexpected ']'"},
    {"[1 2]", "invalid JSON at byte 3: unexpected '2'"},
    {"{\"a\" 1}", "invalid JSON at byte 5: unexpected '1'"},
    {"{\"a\":1,}", "invalid JSON at byte 7: unexpected '}'"},
    {"tru", "invalid JSON at byte 0: unexpected 't'"},
    {"\x01", "invalid JSON at byte 0: unexpected byte 0x01"},
    {"{} x", "invalid JSON at byte 3: unexpected data after the value"},
    {"1 2", "invalid JSON at byte 2: unexpected data after the value"},
    {"\"abc", "invalid JSON at byte 0: unterminated string"},
    {"[\"x\", \"abc", "invalid JSON at byte 6: unterminated string"},
    {"{\"p\":\"/a\\u0000.png\"}",
     "invalid JSON at byte 8: \\u0000 (NUL) inside a string is not supported"},
    {"{\"p\":\"a\tb\"}",
     "invalid JSON at byte 7: control character 0x09 inside a string must be escaped"},
};

START_TEST(test_jsonrpc_parse_error_table)
{
    struct errinfo err;
    cJSON *v;

    errinfo_clear(&err);
    v = jsonrpc_parse(parse_errors[_i].text, strlen(parse_errors[_i].text), &err);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_str_eq(err.msg, parse_errors[_i].msg);
}
END_TEST

START_TEST(test_jsonrpc_parse_raw_nul_in_string)
{
    /* A raw NUL byte inside a string would cut it as surely as \u0000. */
    const char text[] = "{\"path\":\"/a.txt\0.png\"}";
    struct errinfo err;

    errinfo_clear(&err);
    ck_assert_ptr_null(jsonrpc_parse(text, sizeof(text) - 1, &err));
    ck_assert_str_eq(err.msg,
                     "invalid JSON at byte 15: control character 0x00 inside a string must be "
                     "escaped");
}
END_TEST

START_TEST(test_jsonrpc_parse_escaped_backslash_is_not_nul)
{
    struct errinfo err;
    const char *text = "\"a\\\\u0000\"";
    cJSON *v;

    errinfo_clear(&err);
    v = jsonrpc_parse(text, strlen(text), &err);
    ck_assert_ptr_nonnull(v);
    ck_assert_str_eq(v->valuestring, "a\\u0000");
    cJSON_Delete(v);
}
END_TEST

START_TEST(test_jsonrpc_parse_depth_limit)
{
    struct errinfo err;
    char *ok = nested(JSONRPC_MAX_DEPTH);
    char *deep = nested(JSONRPC_MAX_DEPTH + 1);
    cJSON *v;

    errinfo_clear(&err);
    v = jsonrpc_parse(ok, strlen(ok), &err);
    ck_assert_ptr_nonnull(v);
    cJSON_Delete(v);
    v = jsonrpc_parse(deep, strlen(deep), &err);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(err.kind, ERR_TOO_LARGE);
    ck_assert_str_eq(err.msg, "JSON nests deeper than 64 levels");
    free(ok);
    free(deep);
}
END_TEST

START_TEST(test_jsonrpc_parse_huge_nesting_refused_before_parsing)
{
    /* 10 MB of '[' would make a recursive parser deep enough to matter; it is refused by the
     * scan, with the depth error rather than a syntax error at the end. */
    size_t n = 10 * 1024 * 1024;
    char *text = malloc(n);
    struct errinfo err;

    memset(text, '[', n);
    errinfo_clear(&err);
    ck_assert_ptr_null(jsonrpc_parse(text, n, &err));
    ck_assert_int_eq(err.kind, ERR_TOO_LARGE);
    free(text);
}
END_TEST

START_TEST(test_jsonrpc_parse_null_err)
{
    ck_assert_ptr_null(jsonrpc_parse("{", 1, NULL));
}
END_TEST

/* ---- classify ---- */

static const struct {
    const char *text;
    enum jsonrpc_kind kind;
    const char *why; /* for INVALID */
} classify_cases[] = {
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", JSONRPC_KIND_REQUEST, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"x\",\"params\":{}}", JSONRPC_KIND_REQUEST,
     NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":-7,\"method\":\"x\",\"params\":[1]}", JSONRPC_KIND_REQUEST, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":2.0,\"method\":\"x\"}", JSONRPC_KIND_REQUEST, NULL},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", JSONRPC_KIND_NOTIFICATION,
     NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", JSONRPC_KIND_RESPONSE, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"error\":{\"code\":-1,\"message\":\"no\"}}",
     JSONRPC_KIND_RESPONSE, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}",
     JSONRPC_KIND_RESPONSE, NULL},
    {"[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]", JSONRPC_KIND_BATCH, NULL},
    {"[1]", JSONRPC_KIND_BATCH, NULL},
    {"[]", JSONRPC_KIND_INVALID, "an empty batch is not a valid request"},
    {"42", JSONRPC_KIND_INVALID, "a message must be a JSON object"},
    {"\"x\"", JSONRPC_KIND_INVALID, "a message must be a JSON object"},
    {"null", JSONRPC_KIND_INVALID, "a message must be a JSON object"},
    {"{\"id\":1,\"method\":\"x\"}", JSONRPC_KIND_INVALID, "\"jsonrpc\" must be \"2.0\""},
    {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x\"}", JSONRPC_KIND_INVALID,
     "\"jsonrpc\" must be \"2.0\""},
    {"{\"jsonrpc\":2.0,\"id\":1,\"method\":\"x\"}", JSONRPC_KIND_INVALID,
     "\"jsonrpc\" must be \"2.0\""},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", JSONRPC_KIND_INVALID,
     "\"method\" must be a string"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":\"p\"}", JSONRPC_KIND_INVALID,
     "\"params\" must be an object or an array"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}", JSONRPC_KIND_INVALID,
     "id must be a string or an integer"},
    {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}", JSONRPC_KIND_INVALID,
     "id must be a string or an integer"},
    {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"x\"}", JSONRPC_KIND_INVALID,
     "id must be a string or an integer"},
    {"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"x\"}", JSONRPC_KIND_INVALID,
     "id must be a string or an integer"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1}", JSONRPC_KIND_INVALID,
     "a message needs \"method\" (a request) or \"result\"/\"error\" (a response)"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{\"code\":1,\"message\":\"m\"}}",
     JSONRPC_KIND_INVALID, "a response has \"result\" or \"error\", not both"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"bad\"}", JSONRPC_KIND_INVALID,
     "\"error\" must be an object with an integer \"code\" and a string \"message\""},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1.5,\"message\":\"m\"}}",
     JSONRPC_KIND_INVALID,
     "\"error\" must be an object with an integer \"code\" and a string \"message\""},
    {"{\"jsonrpc\":\"2.0\",\"result\":{}}", JSONRPC_KIND_INVALID, "a response needs an \"id\""},
    {"{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}", JSONRPC_KIND_INVALID,
     "id must be a string or an integer"},
};

START_TEST(test_jsonrpc_classify_table)
{
    const char *text = classify_cases[_i].text;
    const char *why = NULL;
    cJSON *msg = cJSON_Parse(text);
    enum jsonrpc_kind kind;

    ck_assert_ptr_nonnull(msg);
    kind = jsonrpc_classify(msg, &why);
    ck_assert_msg(kind == classify_cases[_i].kind, "%s: kind %d, want %d", text, kind,
                  classify_cases[_i].kind);
    if (kind == JSONRPC_KIND_INVALID)
        ck_assert_str_eq(why, classify_cases[_i].why);
    /* why may be NULL. */
    ck_assert_int_eq(jsonrpc_classify(msg, NULL), kind);
    cJSON_Delete(msg);
}
END_TEST

/* A string id of up to JSONRPC_MAX_ID_BYTES bytes is an id; a longer one is refused with the
 * limit in the reason, in a request and in a response, and no answer can carry it. */
START_TEST(test_jsonrpc_long_id)
{
    char id[JSONRPC_MAX_ID_BYTES + 2], text[sizeof(id) + 100];
    const char *why = NULL;
    cJSON *msg;

    memset(id, 'i', JSONRPC_MAX_ID_BYTES);
    id[JSONRPC_MAX_ID_BYTES] = '\0';
    snprintf(text, sizeof(text), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"x\"}", id);
    msg = cJSON_Parse(text);
    ck_assert_int_eq(jsonrpc_classify(msg, &why), JSONRPC_KIND_REQUEST);
    ck_assert_ptr_nonnull(jsonrpc_usable_id(msg));
    cJSON_Delete(msg);
    strcat(id, "i");
    snprintf(text, sizeof(text), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"x\"}", id);
    msg = cJSON_Parse(text);
    ck_assert_int_eq(jsonrpc_classify(msg, &why), JSONRPC_KIND_INVALID);
    ck_assert_str_eq(why, "id is longer than 512 bytes; use a number or a short string");
    ck_assert_ptr_null(jsonrpc_usable_id(msg));
    cJSON_Delete(msg);
    snprintf(text, sizeof(text), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{}}", id);
    msg = cJSON_Parse(text);
    ck_assert_int_eq(jsonrpc_classify(msg, &why), JSONRPC_KIND_INVALID);
    ck_assert_str_eq(why, "id is longer than 512 bytes; use a number or a short string");
    cJSON_Delete(msg);
}
END_TEST

/* ---- usable id ---- */

static const struct {
    const char *text;
    const char *id; /* printed, or NULL when unusable */
} id_cases[] = {
    {"{\"id\":7,\"method\":1}", "7"},
    {"{\"id\":\"abc\"}", "\"abc\""},
    {"{\"id\":\"\"}", "\"\""},
    {"{\"id\":-3}", "-3"},
    {"{\"id\":1.5}", NULL},
    {"{\"id\":null}", NULL},
    {"{\"id\":true}", NULL},
    {"{\"id\":[1]}", NULL},
    {"{\"id\":9007199254740994}", NULL}, /* beyond 2^53: cannot be echoed exactly */
    {"{\"method\":\"x\"}", NULL},
    {"[{\"id\":1}]", NULL},
};

START_TEST(test_jsonrpc_usable_id_table)
{
    cJSON *msg = cJSON_Parse(id_cases[_i].text);
    const cJSON *id = jsonrpc_usable_id(msg);
    char *printed;

    if (!id_cases[_i].id) {
        ck_assert_ptr_null(id);
    } else {
        ck_assert_ptr_nonnull(id);
        ck_assert_ptr_eq(id, cJSON_GetObjectItem(msg, "id")); /* borrowed, not a copy */
        printed = cJSON_PrintUnformatted(id);
        ck_assert_str_eq(printed, id_cases[_i].id);
        free(printed);
    }
    cJSON_Delete(msg);
}
END_TEST

START_TEST(test_jsonrpc_usable_id_null_message)
{
    ck_assert_ptr_null(jsonrpc_usable_id(NULL));
}
END_TEST

/* ---- build ---- */

START_TEST(test_jsonrpc_build_result_exact)
{
    cJSON *id = cJSON_CreateNumber(1);
    cJSON *sid = cJSON_CreateString("a\"b\n");
    cJSON *big = cJSON_CreateNumber(1000000000000000.0); /* cJSON alone prints 1e+15 */
    cJSON *res = cJSON_Parse("{ \"tools\" : [ 1, 2 ] ,\n \"x\": \"line\\nline\" }");
    char *s;

    s = jsonrpc_build_result(id, res);
    ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[1,2],"
                        "\"x\":\"line\\nline\"}}");
    free(s);
    s = jsonrpc_build_result(sid, cJSON_CreateString("ok"));
    ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\\n\",\"result\":\"ok\"}");
    free(s);
    s = jsonrpc_build_result(big, NULL);
    ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":1000000000000000,\"result\":{}}");
    free(s);
    s = jsonrpc_build_result(NULL, NULL);
    ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}");
    free(s);
    /* The id stays the caller's and is unchanged. */
    ck_assert_str_eq(sid->valuestring, "a\"b\n");
    cJSON_Delete(id);
    cJSON_Delete(sid);
    cJSON_Delete(big);
}
END_TEST

START_TEST(test_jsonrpc_build_result_no_newline)
{
    cJSON *res = cJSON_Parse("{\"a\":{\"b\":[1,\n2]}}");
    cJSON *id = cJSON_CreateString("x");
    char *s = jsonrpc_build_result(id, res);

    ck_assert_ptr_null(strchr(s, '\n'));
    free(s);
    cJSON_Delete(id);
}
END_TEST

START_TEST(test_jsonrpc_build_error_exact)
{
    cJSON *id = cJSON_CreateString("q");
    char *s;

    s = jsonrpc_build_error(NULL, JSONRPC_PARSE_ERROR, "Parse error", NULL);
    ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                        "\"message\":\"Parse error\"}}");
    free(s);
    s = jsonrpc_build_error(id, JSONRPC_INVALID_PARAMS, "Unknown tool \"x\"",
                            cJSON_Parse("{\"tool\":\"x\"}"));
    ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"error\":{\"code\":-32602,"
                        "\"message\":\"Unknown tool \\\"x\\\"\",\"data\":{\"tool\":\"x\"}}}");
    free(s);
    s = jsonrpc_build_error(id, JSONRPC_INTERNAL_ERROR, NULL, NULL);
    ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"error\":{\"code\":-32603,"
                        "\"message\":\"\"}}");
    free(s);
    cJSON_Delete(id);
}
END_TEST

START_TEST(test_jsonrpc_build_notification_exact)
{
    char *s;

    s = jsonrpc_build_notification("notifications/tools/list_changed", NULL);
    ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}");
    free(s);
    s = jsonrpc_build_notification("notifications/progress",
                                   cJSON_Parse("{\"progressToken\":1,\"progress\":0.5}"));
    ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
                        "\"params\":{\"progressToken\":1,\"progress\":0.5}}");
    free(s);
}
END_TEST

START_TEST(test_jsonrpc_build_roundtrip_request_id)
{
    /* The id of a parsed request is echoed exactly, for both kinds of usable id. */
    const char *texts[] = {"{\"jsonrpc\":\"2.0\",\"id\":123456789012,\"method\":\"ping\"}",
                           "{\"jsonrpc\":\"2.0\",\"id\":\"\\u00e9\\\\x\",\"method\":\"ping\"}"};
    const char *want[] = {"{\"jsonrpc\":\"2.0\",\"id\":123456789012,\"result\":{}}",
                          "{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\xa9\\\\x\",\"result\":{}}"};

    for (size_t i = 0; i < 2; i++) {
        struct errinfo err;
        cJSON *msg;
        char *s;

        errinfo_clear(&err);
        msg = jsonrpc_parse(texts[i], strlen(texts[i]), &err);
        ck_assert_ptr_nonnull(msg);
        s = jsonrpc_build_result(jsonrpc_usable_id(msg), NULL);
        ck_assert_str_eq(s, want[i]);
        free(s);
        cJSON_Delete(msg);
    }
}
END_TEST

/* ---- messages from servers runbox is the client of ---- */

START_TEST(test_jsonrpc_parse_peer_nul_becomes_replacement)
{
    struct errinfo err;
    /* Two NULs, an escaped backslash before the letters u0000 (kept), and a NUL in a key. */
    const char *text = "{\"t\":\"a\\u0000b\\u0000\",\"k\":\"\\\\u0000\",\"\\u0000\":1}";
    cJSON *v;

    char copy[64];

    ck_assert_uint_lt(strlen(text), sizeof(copy));
    memcpy(copy, text, strlen(text) + 1);
    ck_assert_uint_eq(jsonrpc_nul_escapes_to_replacement(copy, strlen(copy)), 3);
    ck_assert_ptr_nonnull(strstr(copy, "\"\\\\u0000\"")); /* the escaped backslash's is kept */
    errinfo_clear(&err);
    ck_assert_ptr_null(jsonrpc_parse(text, strlen(text), &err));
    v = jsonrpc_parse_peer(text, strlen(text), &err);
    ck_assert_ptr_nonnull(v);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(v, "t")->valuestring, "a\xef\xbf\xbd"
                                                                            "b\xef\xbf\xbd");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(v, "k")->valuestring, "\\u0000");
    ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(v, "\xef\xbf\xbd"));
    cJSON_Delete(v);
}
END_TEST

START_TEST(test_jsonrpc_parse_peer_refuses_the_rest)
{
    struct errinfo err;
    char *deep = nested(JSONRPC_MAX_DEPTH + 1);
    const char *ctrl = "{\"t\":\"a\x01\\u0000\"}";

    errinfo_clear(&err);
    ck_assert_ptr_null(jsonrpc_parse_peer(deep, strlen(deep), &err));
    ck_assert_int_eq(err.kind, ERR_TOO_LARGE);
    errinfo_clear(&err);
    ck_assert_ptr_null(jsonrpc_parse_peer(ctrl, strlen(ctrl), &err));
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "control character 0x01"));
    errinfo_clear(&err);
    ck_assert_ptr_null(jsonrpc_parse_peer("{\"a\":\\u0000}", 12, &err));
    ck_assert_int_eq(err.kind, ERR_INVALID);
    free(deep);
}
END_TEST

static const struct {
    const char *text;
    bool found;
    unsigned long long id;
} find_id_cases[] = {
    {"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", true, 7},
    {" { \"result\" : {\"id\":1,\"a\":[{\"id\":2}]} , \"id\" : 42 }", true, 42},
    {"{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"content\":[}", true, 9}, /* broken after it */
    {"{\"result\":{\"content\":[}, \"id\":9}", false, 0}, /* a ] missing: the id seems nested */
    {"{\"result\":\"\\\"id\\\":5\",\"id\":6}", true, 6},  /* "id": inside a string value */
    {"{\"result\":{\"id\":3}}", false, 0},                /* only a nested id */
    {"{\"id\":\"7\"}", false, 0},                         /* a string id is not ours */
    {"{\"id\":-1}", false, 0},
    {"{\"id\":12345678901234567890}", false, 0}, /* more digits than an id of ours has */
    {"{\"xid\":1,\"idx\":2}", false, 0},
    {"{\"\\u0069d\":1}", false, 0}, /* an escaped name is not matched */
    {"[{\"id\":1}]", false, 0},     /* a batch has no one id */
    {"not json \"id\":3", false, 0},
    {"", false, 0},
    {"{\"id\":18446744073709551615}", false, 0},
    {"{\"id\":1844674407370955161}", true, 1844674407370955161ULL},
    {"{\"id\" \t:\n 8 }", true, 8},
    {"{\"id\":", false, 0},
    {"{\"id\":7.5}", false, 0},
    {"{\"id\":7e0}", false, 0},
    {"{\"id\":1,\"id\":2}", true, 1}, /* the first, as cJSON_GetObjectItem finds it */
};

START_TEST(test_jsonrpc_find_id_table)
{
    unsigned long long id = 0;
    const char *t = find_id_cases[_i].text;
    bool found = jsonrpc_find_id(t, strlen(t), &id);

    ck_assert_msg(found == find_id_cases[_i].found, "%s: found %d", t, found);
    if (found)
        ck_assert_uint_eq(id, find_id_cases[_i].id);
}
END_TEST

START_TEST(test_jsonrpc_find_id_respects_length)
{
    unsigned long long id = 0;
    const char *t = "{\"id\":123}";

    ck_assert(!jsonrpc_find_id(t, 8, &id)); /* "{"id":12": it may go on */
    ck_assert(!jsonrpc_find_id(t, 9, &id));
    ck_assert(jsonrpc_find_id(t, 10, &id));
    ck_assert_uint_eq(id, 123);
}
END_TEST

static Suite *jsonrpc_suite(void)
{
    Suite *s = suite_create("jsonrpc");
    TCase *tc;

    tc = tcase_create("scan");
    tcase_add_loop_test(tc, test_jsonrpc_scan_table, 0,
                        (int)(sizeof(scan_cases) / sizeof(scan_cases[0])));
    tcase_add_test(tc, test_jsonrpc_scan_respects_length);
    suite_add_tcase(s, tc);

    tc = tcase_create("parse");
    tcase_add_test(tc, test_jsonrpc_parse_ok);
    tcase_add_test(tc, test_jsonrpc_parse_not_nul_terminated);
    tcase_add_loop_test(tc, test_jsonrpc_parse_error_table, 0,
                        (int)(sizeof(parse_errors) / sizeof(parse_errors[0])));
    tcase_add_test(tc, test_jsonrpc_parse_raw_nul_in_string);
    tcase_add_test(tc, test_jsonrpc_parse_escaped_backslash_is_not_nul);
    tcase_add_test(tc, test_jsonrpc_parse_depth_limit);
    tcase_add_test(tc, test_jsonrpc_parse_huge_nesting_refused_before_parsing);
    tcase_add_test(tc, test_jsonrpc_parse_null_err);
    suite_add_tcase(s, tc);

    tc = tcase_create("peer");
    tcase_add_test(tc, test_jsonrpc_parse_peer_nul_becomes_replacement);
    tcase_add_test(tc, test_jsonrpc_parse_peer_refuses_the_rest);
    tcase_add_loop_test(tc, test_jsonrpc_find_id_table, 0,
                        (int)(sizeof(find_id_cases) / sizeof(find_id_cases[0])));
    tcase_add_test(tc, test_jsonrpc_find_id_respects_length);
    suite_add_tcase(s, tc);

    tc = tcase_create("classify");
    tcase_add_loop_test(tc, test_jsonrpc_classify_table, 0,
                        (int)(sizeof(classify_cases) / sizeof(classify_cases[0])));
    tcase_add_loop_test(tc, test_jsonrpc_usable_id_table, 0,
                        (int)(sizeof(id_cases) / sizeof(id_cases[0])));
    tcase_add_test(tc, test_jsonrpc_usable_id_null_message);
    tcase_add_test(tc, test_jsonrpc_long_id);
    suite_add_tcase(s, tc);

    tc = tcase_create("build");
    tcase_add_test(tc, test_jsonrpc_build_result_exact);
    tcase_add_test(tc, test_jsonrpc_build_result_no_newline);
    tcase_add_test(tc, test_jsonrpc_build_error_exact);
    tcase_add_test(tc, test_jsonrpc_build_notification_exact);
    tcase_add_test(tc, test_jsonrpc_build_roundtrip_request_id);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(jsonrpc_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
