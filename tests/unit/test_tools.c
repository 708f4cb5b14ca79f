/* tests/unit/test_tools.c - the workspace tool handlers against a temporary vfs, the dispatch
 * table against the catalog, and the pure base64 helpers (UTF-8: test_utf8.c). */
#include "tools.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "vfs.h"
#include "testutil.h"

static char root[64];
static struct vfs *v;
static struct tools_ctx ctx;
static struct tools_result res;
static struct errinfo err;

static void setup(void)
{
    struct vfs_options opt = {.fsync = false};

    testutil_mkdtemp(root, sizeof(root), "test_tools.");
    v = vfs_open(root, &opt, &err);
    ck_assert_msg(v != NULL, "vfs_open: %s", err.msg);
    ctx.vfs = v;
    memset(&res, 0, sizeof(res));
    memset(&err, 0, sizeof(err));
}

static void teardown(void)
{
    tools_result_cleanup(&res);
    vfs_free(v);
    testutil_rm_rf(root);
}

/* Runs tool with arguments given as JSON text; returns the handler's status. */
static int call(const char *tool, const char *json)
{
    cJSON *args = cJSON_Parse(json);
    int rc;

    ck_assert_msg(args != NULL, "bad test JSON: %s", json);
    tools_result_cleanup(&res);
    memset(&err, 0, sizeof(err));
    rc = tools_call(&ctx, NULL, tool, args, &res, &err);
    cJSON_Delete(args);
    return rc;
}

static void call_ok(const char *tool, const char *json)
{
    ck_assert_msg(call(tool, json) == 0, "%s %s failed: %s", tool, json, err.msg);
}

static void put_file(const char *name, const void *data, size_t len)
{
    char path[256];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", root, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* ---- write_file / read_file ---- */

START_TEST(test_tools_write_then_read)
{
    call_ok("write_file", "{\"path\":\"/d/e/f.txt\",\"content\":\"hello\"}");
    ck_assert(res.is_json);
    ck_assert_str_eq(res.data, "{\"path\":\"/d/e/f.txt\",\"bytes\":5,\"created\":true}");
    call_ok("write_file", "{\"path\":\"d//e/./f.txt\",\"content\":\"bye\"}");
    ck_assert_str_eq(res.data, "{\"path\":\"/d/e/f.txt\",\"bytes\":3,\"created\":false}");
    call_ok("read_file", "{\"path\":\"/d/e/f.txt\"}");
    ck_assert(!res.is_json);
    ck_assert_str_eq(res.data, "bye");
    ck_assert_uint_eq(res.len, 3);
}
END_TEST

START_TEST(test_tools_read_cuts_on_characters)
{
    /* "a" "é" (2 bytes) "€" (3) "z": 7 bytes */
    put_file("u.txt",
             "a\xc3\xa9\xe2\x82\xac"
             "z",
             7);
    call_ok("read_file", "{\"path\":\"/u.txt\",\"offset\":2}"); /* inside "é" */
    ck_assert_str_eq(res.data, "\xe2\x82\xac"
                               "z");
    call_ok("read_file", "{\"path\":\"/u.txt\",\"length\":4}"); /* ends inside "€" */
    ck_assert_str_eq(res.data, "a\xc3\xa9\n[truncated: showed bytes 0-3 of 7; call read_file "
                               "with offset=3 to continue]");
    call_ok("read_file", "{\"path\":\"/u.txt\",\"offset\":3,\"length\":3}");
    ck_assert_str_eq(res.data, "\xe2\x82\xac\n[truncated: showed bytes 3-6 of 7; call read_file "
                               "with offset=6 to continue]");
    call_ok("read_file", "{\"path\":\"/u.txt\",\"offset\":99}");
    ck_assert_str_eq(res.data, "");
    ck_assert_int_eq(call("read_file", "{\"path\":\"/u.txt\",\"offset\":3,\"length\":1}"), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "too small"));
}
END_TEST

START_TEST(test_tools_read_refuses_non_utf8)
{
    put_file("b.bin", "ok\xff\x00zz", 6);
    ck_assert_int_eq(call("read_file", "{\"path\":\"/b.bin\"}"), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "6 bytes") && strstr(err.msg, "offset 2") &&
                      strstr(err.msg, "\"base64\""),
                  "%s", err.msg);
    ck_assert_ptr_null(res.data);
    call_ok("read_file", "{\"path\":\"/b.bin\",\"encoding\":\"base64\"}");
    ck_assert_str_eq(res.data, "b2v/AHp6");
}
END_TEST

START_TEST(test_tools_write_base64)
{
    char buf[8];
    char path[256];
    int fd;

    call_ok("write_file",
            "{\"path\":\"/x.bin\",\"content\":\"AP8K\\nAA==\",\"encoding\":\"base64\"}");
    ck_assert_str_eq(res.data, "{\"path\":\"/x.bin\",\"bytes\":4,\"created\":true}");
    snprintf(path, sizeof(path), "%s/x.bin", root);
    fd = open(path, O_RDONLY);
    ck_assert_int_eq(read(fd, buf, sizeof(buf)), 4);
    close(fd);
    ck_assert_mem_eq(buf, "\x00\xff\x0a\x00", 4);
    ck_assert_int_eq(call("write_file", "{\"path\":\"/y.bin\",\"content\":\"AAA*\","
                                        "\"encoding\":\"base64\"}"),
                     -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "position 3"));
}
END_TEST

START_TEST(test_tools_read_errors)
{
    ck_assert_int_eq(call("read_file", "{\"path\":\"/missing\"}"), -1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
    call_ok("write_file", "{\"path\":\"/dir/f\",\"content\":\"\"}");
    ck_assert_int_eq(call("read_file", "{\"path\":\"/dir\"}"), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "directory"));
    ck_assert_int_eq(call("write_file", "{\"path\":\"/dir\",\"content\":\"x\"}"), -1);
    ck_assert_int_eq(call("write_file", "{\"path\":\"a\\\\b\",\"content\":\"x\"}"), -1);
}
END_TEST

/* ---- list_dir / remove ---- */

START_TEST(test_tools_list_dir)
{
    cJSON *j, *e;

    call_ok("write_file", "{\"path\":\"/l/b.txt\",\"content\":\"12345\"}");
    call_ok("write_file", "{\"path\":\"/l/a/c.txt\",\"content\":\"\"}");
    call_ok("list_dir", "{\"path\":\"/l\"}");
    ck_assert(res.is_json);
    j = cJSON_Parse(res.data);
    ck_assert_str_eq(cJSON_GetObjectItem(j, "path")->valuestring, "/l");
    ck_assert_int_eq(cJSON_GetObjectItem(j, "total")->valueint, 2);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "truncated")));
    e = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "entries"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(e, "name")->valuestring, "a");
    ck_assert_str_eq(cJSON_GetObjectItem(e, "type")->valuestring, "dir");
    e = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "entries"), 1);
    ck_assert_str_eq(cJSON_GetObjectItem(e, "type")->valuestring, "file");
    ck_assert_int_eq(cJSON_GetObjectItem(e, "size")->valueint, 5);
    ck_assert_uint_eq(strlen(cJSON_GetObjectItem(e, "mtime")->valuestring), 24);
    ck_assert_int_eq(cJSON_GetObjectItem(e, "mtime")->valuestring[23], 'Z');
    cJSON_Delete(j);
    call_ok("list_dir", "{}"); /* default "/" */
    ck_assert_ptr_nonnull(strstr(res.data, "\"path\":\"/\""));
}
END_TEST

START_TEST(test_tools_remove)
{
    call_ok("write_file", "{\"path\":\"/r/a/b.txt\",\"content\":\"x\"}");
    ck_assert_int_eq(call("remove", "{\"path\":\"/r\"}"), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "recursive"));
    call_ok("remove", "{\"path\":\"/r/\",\"recursive\":true}");
    ck_assert_str_eq(res.data, "{\"path\":\"/r\",\"removed\":3}");
    ck_assert_int_eq(call("remove", "{\"path\":\"/\",\"recursive\":true}"), -1);
    ck_assert_int_eq(err.kind, ERR_DENIED);
}
END_TEST

/* ---- search ---- */

START_TEST(test_tools_search)
{
    call_ok("write_file", "{\"path\":\"/s/a.js\",\"content\":\"x = 1\\nneedle here\\n\"}");
    call_ok("write_file", "{\"path\":\"/s/b.txt\",\"content\":\"Needle\\nneedle\\n\"}");
    call_ok("search", "{\"query\":\"needle\"}");
    ck_assert(!res.is_json);
    ck_assert_str_eq(res.data, "/s/a.js:2: needle here\n/s/b.txt:2: needle");
    call_ok("search", "{\"query\":\"NEEDLE\",\"case_sensitive\":false,\"ext\":\"txt\"}");
    ck_assert_str_eq(res.data, "/s/b.txt:1: Needle\n/s/b.txt:2: needle");
    call_ok("search", "{\"query\":\"needle\",\"max_results\":1}");
    ck_assert_str_eq(res.data, "/s/a.js:2: needle here\n[truncated: showing the first 1 matches; "
                               "narrow path or raise max_results]");
    call_ok("search", "{\"query\":\"absent\",\"path\":\"/s\"}");
    ck_assert_str_eq(res.data, "no matches for \"absent\" under /s (2 files searched)");
    ck_assert_int_eq(call("search", "{\"query\":\"(\",\"regex\":true}"), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
}
END_TEST

/* What the walk leaves out is said, with and without matches. */
START_TEST(test_tools_search_says_what_it_skipped)
{
    char args[1024] = "{\"path\":\"";

    for (int i = 0; i < 260; i++)
        strcat(args, "/d");
    strcat(args, "/deep.txt\",\"content\":\"needle\"}");
    call_ok("write_file", args);
    call_ok("write_file", "{\"path\":\"/top.txt\",\"content\":\"needle\"}");
    call_ok("search", "{\"query\":\"absent\"}");
    ck_assert_str_eq(res.data, "no matches for \"absent\" under / (1 file searched; 1 directory "
                               "deeper than 256 levels not searched (give a path inside to "
                               "search there))");
    call_ok("search", "{\"query\":\"needle\"}");
    ck_assert_str_eq(res.data, "/top.txt:1: needle\n[not searched: 1 directory deeper than 256 "
                               "levels not searched (give a path inside to search there)]");
}
END_TEST

/* ---- the table against the catalog ---- */

START_TEST(test_tools_table_matches_catalog)
{
    const struct catalog *cat = catalog_builtin();
    static const char *const ours[] = {"read_file", "write_file", "list_dir", "remove", "search"};

    for (size_t i = 0; i < catalog_count(cat); i++) {
        const struct catalog_tool *t = catalog_at(cat, i);

        if (catalog_tool_route(t) == CATALOG_ROUTE_LOCAL &&
            strcmp(catalog_tool_group(t), "workspace") == 0)
            ck_assert_msg(tools_has(catalog_tool_name(t)), "no handler for %s",
                          catalog_tool_name(t));
    }
    for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
        ck_assert_msg(catalog_find(cat, ours[i]) != NULL, "%s is not in the catalog", ours[i]);
    ck_assert(!tools_has("rm_rf"));
    ck_assert_int_eq(call("rm_rf", "{}"), -1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
}
END_TEST

/* ---- pure helpers ---- */

START_TEST(test_tools_base64_round_trip)
{
    unsigned char bytes[256];
    char *dec = NULL;
    size_t elen, dlen;

    for (int i = 0; i < 256; i++)
        bytes[i] = (unsigned char)(255 - i);
    for (size_t n = 0; n <= 7; n++) {
        char *enc = tools_base64_encode(bytes, n, &elen);

        ck_assert_uint_eq(elen, 4 * ((n + 2) / 3));
        ck_assert_int_eq(tools_base64_decode(enc, elen, &dec, &dlen, NULL), 0);
        ck_assert_uint_eq(dlen, n);
        ck_assert_mem_eq(dec, bytes, n);
        free(dec);
        free(enc);
    }
    dec = tools_base64_encode("foobar", 6, NULL);
    ck_assert_str_eq(dec, "Zm9vYmFy");
    free(dec);
    ck_assert_int_eq(tools_base64_decode("Zm9v YmE", 8, &dec, &dlen, NULL), 0); /* no padding */
    ck_assert_mem_eq(dec, "fooba", 5);
    free(dec);
}
END_TEST

START_TEST(test_tools_base64_errors_name_position)
{
    struct errinfo e = {0};
    char *dec = NULL;
    size_t dlen;

    ck_assert_int_eq(tools_base64_decode("Zm9v!", 5, &dec, &dlen, &e), -1);
    ck_assert_ptr_nonnull(strstr(e.msg, "position 4"));
    memset(&e, 0, sizeof(e));
    ck_assert_int_eq(tools_base64_decode("Zm9vY", 5, &dec, &dlen, &e), -1);
    ck_assert_ptr_nonnull(strstr(e.msg, "incomplete"));
    memset(&e, 0, sizeof(e));
    ck_assert_int_eq(tools_base64_decode("Zg==Zg==", 8, &dec, &dlen, &e), -1);
    ck_assert_ptr_nonnull(strstr(e.msg, "position 4"));
}
END_TEST

static Suite *tools_suite(void)
{
    Suite *s = suite_create("tools");
    TCase *tc = tcase_create("files");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_tools_write_then_read);
    tcase_add_test(tc, test_tools_read_cuts_on_characters);
    tcase_add_test(tc, test_tools_read_refuses_non_utf8);
    tcase_add_test(tc, test_tools_write_base64);
    tcase_add_test(tc, test_tools_read_errors);
    tcase_add_test(tc, test_tools_list_dir);
    tcase_add_test(tc, test_tools_remove);
    tcase_add_test(tc, test_tools_search);
    tcase_add_test(tc, test_tools_search_says_what_it_skipped);
    tcase_add_test(tc, test_tools_table_matches_catalog);
    suite_add_tcase(s, tc);

    tc = tcase_create("encoding");
    tcase_add_test(tc, test_tools_base64_round_trip);
    tcase_add_test(tc, test_tools_base64_errors_name_position);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tools_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
