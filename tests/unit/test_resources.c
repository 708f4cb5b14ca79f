/* tests/unit/test_resources.c - MCP resources over a temporary workspace: MIME types, text
 * detection, file URIs, cursors (pure), the path-ordered walk with resume points, and
 * resources_list / resources_read. */
#include "resources.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "console.h"
#include "testutil.h"
#include "tools.h"
#include "vfs.h"

static char root[64];
static struct vfs *v;
static struct console *con;
static struct tools_ctx ctx;

static void setup(void)
{
    struct vfs_options opt = {.fsync = false};
    struct errinfo err = {0};

    testutil_mkdtemp(root, sizeof(root), "test_resources.");
    v = vfs_open(root, &opt, &err);
    ck_assert_msg(v != NULL, "vfs_open: %s", err.msg);
    con = console_new(0, 0, &err);
    ctx = (struct tools_ctx){.vfs = v, .console = con};
}

static void teardown(void)
{
    vfs_free(v);
    console_free(con);
    testutil_rm_rf(root);
}

static void put(const char *rel, const char *data)
{
    testutil_put(testutil_path(root, rel), data, strlen(data));
}

/* ---- pure helpers ---- */

static const struct {
    const char *name, *mime;
    bool binary;
} mimes[] = {
    {"/a.js", "text/javascript", false},
    {"/x/b.MJS", "text/javascript", false},
    {"c.ts", "text/x-typescript", false},
    {"d.tsx", "text/x-typescript", false},
    {"e.json", "application/json", false},
    {"f.html", "text/html", false},
    {"g.css", "text/css", false},
    {"h.md", "text/markdown", false},
    {"i.py", "text/x-python", false},
    {"j.lua", "text/x-lua", false},
    {"k.luau", "text/x-luau", false},
    {"l.txt", "text/plain", false},
    {"m.csv", "text/csv", false},
    {"n.xml", "application/xml", false},
    {"o.yaml", "application/yaml", false},
    {"p.svg", "image/svg+xml", false},
    {"q.png", "image/png", true},
    {"r.jpg", "image/jpeg", true},
    {"s.gif", "image/gif", true},
    {"t.wasm", "application/wasm", true},
    {"Makefile", NULL, false},
    {".env", NULL, false},
    {"/dir.d/noext", NULL, false},
    {"u.unknownext", NULL, false},
};

START_TEST(test_resources_mime_from_extension)
{
    bool binary = true;
    const char *m = resources_mime_for_name(mimes[_i].name, &binary);

    if (mimes[_i].mime)
        ck_assert_str_eq(m, mimes[_i].mime);
    else
        ck_assert_ptr_null(m);
    ck_assert_int_eq(binary, mimes[_i].binary);
}
END_TEST

START_TEST(test_resources_text_detection)
{
    ck_assert(resources_is_text("hello\n", 6, false));
    ck_assert(resources_is_text("", 0, false));
    ck_assert(!resources_is_text("a\0b", 3, false));
    ck_assert(!resources_is_text("\xff\xfe", 2, false));
    /* A character cut by the end of a sniffed prefix is fine only when the prefix was cut. */
    ck_assert(resources_is_text("ab\xE2\x82", 4, true));
    ck_assert(!resources_is_text("ab\xE2\x82", 4, false));
}
END_TEST

START_TEST(test_resources_file_uri_round_trip)
{
    char *uri = resources_file_uri("/src/my file%#?.js");
    char path[VFS_PATH_MAX + 1];
    struct errinfo err = {0};

    ck_assert_str_eq(uri, "file:///src/my%20file%25%23%3F.js");
    ck_assert_int_eq(resources_uri_path(uri, path, sizeof(path), &err), 0);
    ck_assert_str_eq(path, "/src/my file%#?.js");
    free(uri);
    ck_assert_int_eq(resources_uri_path("file:///a%00b", path, sizeof(path), &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    memset(&err, 0, sizeof(err));
    ck_assert_int_eq(resources_uri_path("https://x/y", path, sizeof(path), &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown resource URI"));
}
END_TEST

START_TEST(test_resources_cursor_round_trip_and_rejects_forgeries)
{
    char *c = resources_cursor_encode("/a/b c.js");
    char after[VFS_PATH_MAX + 1];
    struct errinfo err = {0};

    ck_assert_int_eq(resources_cursor_decode(c, after, sizeof(after), &err), 0);
    ck_assert_str_eq(after, "/a/b c.js");
    free(c);
    ck_assert_int_eq(resources_cursor_decode("", after, sizeof(after), &err), -1);
    ck_assert_int_eq(resources_cursor_decode("zz", after, sizeof(after), &err), -1);
    ck_assert_int_eq(resources_cursor_decode("66332f0", after, sizeof(after), &err), -1);
    ck_assert_int_eq(resources_cursor_decode("66332f00", after, sizeof(after), &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "invalid cursor"));
}
END_TEST

/* ---- the walk ---- */

struct collect {
    char paths[64][64];
    size_t n;
};

static int collect(void *cctx, const char *path, const struct vfs_stat *st)
{
    struct collect *c = cctx;

    ck_assert_int_eq(st->type, VFS_FILE);
    ck_assert_uint_lt(c->n, 64);
    snprintf(c->paths[c->n++], 64, "%s", path);
    return 0;
}

static void make_tree(void)
{
    put("a.txt", "1");
    testutil_mkdir(testutil_path(root, "a"));
    put("a/z.txt", "2");
    testutil_mkdir(testutil_path(root, "a/b"));
    put("a/b/c.txt", "3");
    put("b.txt", "4");
    testutil_mkdir(testutil_path(root, "empty"));
    ck_assert_int_eq(symlink("/etc", testutil_path(root, "link")), 0);
    ck_assert_int_eq(symlink("a.txt", testutil_path(root, "flink")), 0);
}

START_TEST(test_resources_walk_in_path_order_without_symlinks)
{
    struct collect c = {0};
    struct errinfo err = {0};
    bool more = true;

    make_tree();
    ck_assert_int_eq(vfs_walk_files(v, NULL, 0, collect, &c, &more, &err), 0);
    ck_assert(!more);
    ck_assert_uint_eq(c.n, 4);
    ck_assert_str_eq(c.paths[0], "/a/b/c.txt");
    ck_assert_str_eq(c.paths[1], "/a/z.txt");
    ck_assert_str_eq(c.paths[2], "/a.txt");
    ck_assert_str_eq(c.paths[3], "/b.txt");
}
END_TEST

START_TEST(test_resources_walk_resumes_after_a_path)
{
    static const char *const after[] = {"/a/b/c.txt", "/a/b", "/a/y", "/a.txt", "/zzz"};
    static const size_t expect_first[] = {1, 1, 1, 3, 4};
    struct errinfo err = {0};
    bool more;

    make_tree();
    for (size_t i = 0; i < sizeof(after) / sizeof(after[0]); i++) {
        struct collect c = {0};
        static const char *const all[] = {"/a/b/c.txt", "/a/z.txt", "/a.txt", "/b.txt"};

        ck_assert_int_eq(vfs_walk_files(v, after[i], 0, collect, &c, &more, &err), 0);
        ck_assert_uint_eq(c.n, 4 - expect_first[i]);
        for (size_t k = 0; k < c.n; k++)
            ck_assert_str_eq(c.paths[k], all[expect_first[i] + k]);
    }
}
END_TEST

START_TEST(test_resources_walk_limit_sets_more)
{
    struct collect c = {0};
    struct errinfo err = {0};
    bool more = false;

    make_tree();
    ck_assert_int_eq(vfs_walk_files(v, NULL, 2, collect, &c, &more, &err), 0);
    ck_assert_uint_eq(c.n, 2);
    ck_assert(more);
    memset(&c, 0, sizeof(c));
    ck_assert_int_eq(vfs_walk_files(v, "/a/z.txt", 2, collect, &c, &more, &err), 0);
    ck_assert_uint_eq(c.n, 2);
    ck_assert(!more); /* exactly the last two: nothing after them */
}
END_TEST

/* ---- list and read ---- */

START_TEST(test_resources_list_pages_cover_every_file_once)
{
    char name[32], *cursor = NULL;
    size_t files = 0, pages = 0;
    cJSON *res;
    struct errinfo err = {0};

    for (int i = 0; i < 250; i++) {
        snprintf(name, sizeof(name), "f%03d.txt", i);
        put(name, "x");
    }
    do {
        const cJSON *arr, *next;

        ck_assert_int_eq(resources_list(&ctx, cursor, &res, &err), 0);
        arr = cJSON_GetObjectItem(res, "resources");
        ck_assert_int_le(cJSON_GetArraySize(arr), RESOURCES_PAGE_SIZE);
        if (pages == 0) {
            ck_assert_str_eq(cJSON_GetArrayItem(arr, 0)->child->valuestring, RESOURCES_URI_CONSOLE);
            files += (size_t)cJSON_GetArraySize(arr) - 2;
        } else {
            files += (size_t)cJSON_GetArraySize(arr);
        }
        free(cursor);
        next = cJSON_GetObjectItem(res, "nextCursor");
        cursor = next ? strdup(next->valuestring) : NULL;
        cJSON_Delete(res);
        pages++;
    } while (cursor);
    ck_assert_uint_eq(files, 250);
    ck_assert_uint_eq(pages, 3);
}
END_TEST

static cJSON *read_uri(const char *uri, struct errinfo *err)
{
    cJSON *res = NULL;

    if (resources_read(&ctx, uri, &res, err) < 0)
        return NULL;
    return res;
}

static const cJSON *first_content(const cJSON *res)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(res, "contents"), 0);
}

START_TEST(test_resources_read_text_blob_and_errors)
{
    struct errinfo err = {0};
    char *big = malloc(RESOURCES_READ_MAX + 2);
    cJSON *res;

    put("t.py", "print('hi')\n");
    testutil_put(testutil_path(root, "b.bin"), "\x00\x01\x02", 3);
    memset(big, 'a', RESOURCES_READ_MAX + 1);
    testutil_put(testutil_path(root, "big.txt"), big, RESOURCES_READ_MAX + 1);
    free(big);
    res = read_uri("file:///t.py", &err);
    ck_assert_str_eq(cJSON_GetObjectItem(first_content(res), "text")->valuestring, "print('hi')\n");
    ck_assert_str_eq(cJSON_GetObjectItem(first_content(res), "mimeType")->valuestring,
                     "text/x-python");
    cJSON_Delete(res);
    res = read_uri("file:///b.bin", &err);
    ck_assert_str_eq(cJSON_GetObjectItem(first_content(res), "blob")->valuestring, "AAEC");
    ck_assert_str_eq(cJSON_GetObjectItem(first_content(res), "mimeType")->valuestring,
                     "application/octet-stream");
    cJSON_Delete(res);
    ck_assert_ptr_null(read_uri("file:///big.txt", &err));
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "read_file"));
    memset(&err, 0, sizeof(err));
    ck_assert_ptr_null(read_uri("file:///missing", &err));
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
    memset(&err, 0, sizeof(err));
    ck_assert_ptr_null(read_uri("runbox://nothing", &err));
    ck_assert_int_eq(err.kind, ERR_INVALID);
}
END_TEST

START_TEST(test_resources_read_console_and_empty_process_list)
{
    struct errinfo err = {0};
    cJSON *res, *doc;

    console_appendf(con, CONSOLE_ERROR, CONSOLE_SRC_EXEC, 3, "it broke");
    res = read_uri(RESOURCES_URI_CONSOLE, &err);
    doc = cJSON_Parse(cJSON_GetObjectItem(first_content(res), "text")->valuestring);
    ck_assert_str_eq(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "entries"), 0), "message")
            ->valuestring,
        "it broke");
    cJSON_Delete(doc);
    cJSON_Delete(res);
    res = read_uri(RESOURCES_URI_PROCESSES, &err); /* ctx.proc is NULL: an empty list */
    doc = cJSON_Parse(cJSON_GetObjectItem(first_content(res), "text")->valuestring);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "processes")), 0);
    cJSON_Delete(doc);
    cJSON_Delete(res);
}
END_TEST

static Suite *resources_suite(void)
{
    Suite *s = suite_create("resources");
    TCase *pure = tcase_create("pure"), *walk = tcase_create("walk"), *io = tcase_create("io");

    tcase_add_loop_test(pure, test_resources_mime_from_extension, 0,
                        (int)(sizeof(mimes) / sizeof(mimes[0])));
    tcase_add_test(pure, test_resources_text_detection);
    tcase_add_test(pure, test_resources_file_uri_round_trip);
    tcase_add_test(pure, test_resources_cursor_round_trip_and_rejects_forgeries);
    suite_add_tcase(s, pure);
    tcase_add_checked_fixture(walk, setup, teardown);
    tcase_add_test(walk, test_resources_walk_in_path_order_without_symlinks);
    tcase_add_test(walk, test_resources_walk_resumes_after_a_path);
    tcase_add_test(walk, test_resources_walk_limit_sets_more);
    suite_add_tcase(s, walk);
    tcase_add_checked_fixture(io, setup, teardown);
    tcase_add_test(io, test_resources_list_pages_cover_every_file_once);
    tcase_add_test(io, test_resources_read_text_blob_and_errors);
    tcase_add_test(io, test_resources_read_console_and_empty_process_list);
    suite_add_tcase(s, io);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(resources_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
