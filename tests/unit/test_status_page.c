/* tests/unit/test_status_page.c - the status page's browser rules (status_page_refusal) and its
 * files: the token in the HTML, the paths it serves. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "status_page.h"

static struct status_page *page;

static void setup(void)
{
    page = status_page_new(NULL);
    ck_assert_ptr_nonnull(page);
}

static void teardown(void)
{
    status_page_free(page);
}

START_TEST(test_status_page_token_is_random_hex)
{
    struct status_page *other = status_page_new(NULL);
    const char *t = status_page_token(page);

    ck_assert_uint_eq(strlen(t), STATUS_PAGE_TOKEN_LEN);
    ck_assert_uint_eq(strspn(t, "0123456789abcdef"), STATUS_PAGE_TOKEN_LEN);
    ck_assert_str_ne(t, status_page_token(other));
    status_page_free(other);
}
END_TEST

START_TEST(test_status_page_paths)
{
    ck_assert(status_page_is_path("/"));
    /* One response: the style and the script are in the page. */
    ck_assert(!status_page_is_path("/status.js"));
    ck_assert(!status_page_is_path("/index.html"));
    ck_assert(!status_page_is_path("/health"));
}
END_TEST

/* Rows: method, path, origin, Sec-Fetch-Site, -Mode, -Dest, the page token (1: right, 2:
 * wrong, 0: none), and whether the request is refused. */
static const struct {
    const char *method, *path, *origin, *site, *mode, *dest;
    int token;
    bool refused;
} rows[] = {
    {"GET", "/health", NULL, NULL, NULL, NULL, 0, false},                 /* curl */
    {"POST", "/tool/kill", NULL, NULL, NULL, NULL, 0, false},             /* curl, runbox */
    {"GET", "/health", NULL, "same-origin", "cors", "empty", 0, false},   /* the page */
    {"GET", "/", NULL, "none", "navigate", "document", 0, false},         /* typed in */
    {"GET", "/", NULL, "cross-site", "navigate", "document", 0, false},   /* a link */
    {"GET", "/", NULL, "cross-site", "navigate", "iframe", 0, true},      /* framed */
    {"GET", "/health", NULL, "cross-site", "no-cors", "script", 0, true}, /* <script src> */
    {"GET", "/events", NULL, "same-site", "cors", "empty", 0, true},      /* another port */
    {"POST", "/tool/kill", "http://127.0.0.1:7766", "same-origin", "cors", "empty", 1, false},
    {"POST", "/tool/kill", "http://127.0.0.1:7766", "same-origin", "cors", "empty", 0, true},
    {"POST", "/tool/kill", "http://127.0.0.1:7766", "same-origin", "cors", "empty", 2, true},
    {"POST", "/tool/kill", "http://127.0.0.1:7766", NULL, NULL, NULL, 0, true},
    {"GET", "/health", "http://127.0.0.1:7766", "same-origin", "cors", "empty", 0, false},
    /* MCP over HTTP keeps MCP's rule: our own Origin is fine (the conformance suite checks). */
    {"POST", "/mcp", "http://localhost:7766", NULL, NULL, NULL, 0, false},
    {"POST", "/mcp", "http://localhost:7766", "cross-site", "cors", "empty", 0, true},
};

START_TEST(test_status_page_browser_rules)
{
    struct status_page_request r = {
        .method = rows[_i].method,
        .path = rows[_i].path,
        .origin = rows[_i].origin,
        .fetch_site = rows[_i].site,
        .fetch_mode = rows[_i].mode,
        .fetch_dest = rows[_i].dest,
        .page_token = rows[_i].token == 1   ? status_page_token(page)
                      : rows[_i].token == 2 ? "00000000000000000000000000000000"
                                            : NULL,
    };
    const char *why = status_page_refusal(page, &r);

    ck_assert_msg((why != NULL) == rows[_i].refused, "row %d: %s", _i, why ? why : "allowed");
    if (why)
        ck_assert_ptr_nonnull(strstr(why, "forbidden"));
}
END_TEST

static Suite *status_page_suite(void)
{
    Suite *s = suite_create("status_page");
    TCase *tc = tcase_create("rules");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_status_page_token_is_random_hex);
    tcase_add_test(tc, test_status_page_paths);
    tcase_add_loop_test(tc, test_status_page_browser_rules, 0, sizeof(rows) / sizeof(rows[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(status_page_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
