/* tests/unit/test_proxy.c - the proxy's stdin framing (proxy_lines_*): lines split on '\n',
 * '\r' stripped, empty lines skipped, chunks split anywhere, oversized lines dropped and
 * reported once, memory given back after a long line. */
#include "proxy.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEEN 16

struct seen {
    char *lines[MAX_SEEN];
    size_t nlines;
    size_t oversized[MAX_SEEN];
    size_t noversized;
    char order[MAX_SEEN * 2 + 1]; /* 'L' for a line, 'O' for an oversized report */
};

static void on_line(void *ctx, const char *line, size_t len)
{
    struct seen *s = ctx;

    ck_assert_uint_lt(s->nlines, MAX_SEEN);
    ck_assert_uint_gt(len, 0);
    s->lines[s->nlines++] = strndup(line, len);
    strcat(s->order, "L");
}

static void on_oversized(void *ctx, size_t bytes)
{
    struct seen *s = ctx;

    ck_assert_uint_lt(s->noversized, MAX_SEEN);
    s->oversized[s->noversized++] = bytes;
    strcat(s->order, "O");
}

static struct seen seen;
static struct proxy_lines pl;
static struct proxy_lines_sink sink;

static void setup(void)
{
    memset(&seen, 0, sizeof(seen));
    proxy_lines_init(&pl, 16);
    sink = (struct proxy_lines_sink){.line = on_line, .oversized = on_oversized, .ctx = &seen};
}

static void teardown(void)
{
    for (size_t i = 0; i < seen.nlines; i++)
        free(seen.lines[i]);
    proxy_lines_cleanup(&pl);
}

static void feed(const char *s)
{
    ck_assert_int_eq(proxy_lines_feed(&pl, s, strlen(s), &sink, NULL), 0);
}

START_TEST(test_proxy_splits_lines_in_one_chunk)
{
    feed("{\"a\":1}\n{\"b\":2}\n");
    ck_assert_uint_eq(seen.nlines, 2);
    ck_assert_str_eq(seen.lines[0], "{\"a\":1}");
    ck_assert_str_eq(seen.lines[1], "{\"b\":2}");
    ck_assert_uint_eq(proxy_lines_pending(&pl), 0);
}
END_TEST

START_TEST(test_proxy_joins_a_line_split_across_chunks)
{
    feed("{\"a\"");
    ck_assert_uint_eq(seen.nlines, 0);
    ck_assert_uint_eq(proxy_lines_pending(&pl), 4);
    feed(":1}");
    feed("\n{\"b\"");
    ck_assert_uint_eq(seen.nlines, 1);
    ck_assert_str_eq(seen.lines[0], "{\"a\":1}");
    feed(":2}\n");
    ck_assert_uint_eq(seen.nlines, 2);
    ck_assert_str_eq(seen.lines[1], "{\"b\":2}");
}
END_TEST

START_TEST(test_proxy_strips_cr_and_skips_empty_lines)
{
    feed("\n\r\nabc\r\n\n\ndef\n\r\n");
    ck_assert_uint_eq(seen.nlines, 2);
    ck_assert_str_eq(seen.lines[0], "abc");
    ck_assert_str_eq(seen.lines[1], "def");
    ck_assert_uint_eq(seen.noversized, 0);
}
END_TEST

START_TEST(test_proxy_cr_only_stripped_at_the_end)
{
    feed("a\rb\n");
    ck_assert_uint_eq(seen.nlines, 1);
    ck_assert_str_eq(seen.lines[0], "a\rb");
}
END_TEST

/* Byte by byte must give the same lines as all at once. */
START_TEST(test_proxy_byte_at_a_time)
{
    const char *in = "one\ntwo\r\n\nthree\n";

    for (const char *p = in; *p; p++)
        ck_assert_int_eq(proxy_lines_feed(&pl, p, 1, &sink, NULL), 0);
    ck_assert_uint_eq(seen.nlines, 3);
    ck_assert_str_eq(seen.lines[0], "one");
    ck_assert_str_eq(seen.lines[1], "two");
    ck_assert_str_eq(seen.lines[2], "three");
}
END_TEST

START_TEST(test_proxy_line_at_the_limit_is_delivered)
{
    feed("0123456789abcdef\n");   /* exactly 16 bytes */
    feed("0123456789abcdef\r\n"); /* 16 bytes plus '\r' */
    ck_assert_uint_eq(seen.nlines, 2);
    ck_assert_str_eq(seen.lines[0], "0123456789abcdef");
    ck_assert_str_eq(seen.lines[1], "0123456789abcdef");
    ck_assert_uint_eq(seen.noversized, 0);
}
END_TEST

START_TEST(test_proxy_oversized_line_in_one_chunk_is_reported)
{
    feed("ok1\n0123456789abcdefX\nok2\n");
    ck_assert_str_eq(seen.order, "LOL");
    ck_assert_uint_eq(seen.oversized[0], 17);
    ck_assert_str_eq(seen.lines[0], "ok1");
    ck_assert_str_eq(seen.lines[1], "ok2");
}
END_TEST

/* A long line arriving in pieces is dropped as it comes, reported once with its full length,
 * and the next line is served normally. */
START_TEST(test_proxy_oversized_line_across_chunks_is_skipped)
{
    feed("ok1\n0123456789");
    feed("abcdefghij"); /* now 20 pending bytes > 16: skipping starts */
    ck_assert_uint_eq(proxy_lines_pending(&pl), 0);
    ck_assert_uint_eq(seen.noversized, 0);
    for (int i = 0; i < 100; i++)
        feed("xxxxxxxxxx");
    feed("yy\r\nok2\n");
    ck_assert_str_eq(seen.order, "LOL");
    ck_assert_uint_eq(seen.oversized[0], 20 + 1000 + 2);
    ck_assert_str_eq(seen.lines[1], "ok2");
}
END_TEST

START_TEST(test_proxy_finish_delivers_last_line_without_newline)
{
    feed("a\nlast");
    ck_assert_uint_eq(seen.nlines, 1);
    proxy_lines_finish(&pl, &sink);
    ck_assert_uint_eq(seen.nlines, 2);
    ck_assert_str_eq(seen.lines[1], "last");
    proxy_lines_finish(&pl, &sink); /* nothing left: nothing more */
    ck_assert_uint_eq(seen.nlines, 2);
}
END_TEST

START_TEST(test_proxy_finish_reports_unfinished_oversized_line)
{
    feed("0123456789abcdef0123456789");
    ck_assert_uint_eq(seen.noversized, 0);
    proxy_lines_finish(&pl, &sink);
    ck_assert_uint_eq(seen.noversized, 1);
    ck_assert_uint_eq(seen.oversized[0], 26);
    ck_assert_uint_eq(seen.nlines, 0);
}
END_TEST

/* With the real limit, a 40 MiB line never makes the buffer grow past limit plus one read, and
 * the buffer is given back once the line is gone. */
START_TEST(test_proxy_memory_is_bounded_and_returned)
{
    size_t chunk = 1 << 20, max_cap = 0;
    char *data = malloc(chunk);

    proxy_lines_cleanup(&pl);
    proxy_lines_init(&pl, PROXY_LINE_MAX);
    memset(data, 'x', chunk);
    for (int i = 0; i < 40; i++) {
        ck_assert_int_eq(proxy_lines_feed(&pl, data, chunk, &sink, NULL), 0);
        if (proxy_lines_capacity(&pl) > max_cap)
            max_cap = proxy_lines_capacity(&pl);
    }
    feed("\n{\"after\":true}\n");
    ck_assert_str_eq(seen.order, "OL");
    ck_assert_uint_eq(seen.oversized[0], (size_t)40 << 20);
    ck_assert_str_eq(seen.lines[0], "{\"after\":true}");
    ck_assert_uint_le(max_cap, PROXY_LINE_MAX + 2 * chunk);
    ck_assert_uint_le(proxy_lines_capacity(&pl), 128 * 1024);
    free(data);
}
END_TEST

/* A long line that is within the limit is delivered whole, then the buffer shrinks. */
START_TEST(test_proxy_big_line_within_limit_then_shrinks)
{
    size_t n = 3 << 20;
    char *data = malloc(n + 1);

    proxy_lines_cleanup(&pl);
    proxy_lines_init(&pl, PROXY_LINE_MAX);
    memset(data, 'y', n);
    data[n] = '\n';
    ck_assert_int_eq(proxy_lines_feed(&pl, data, n + 1, &sink, NULL), 0);
    ck_assert_uint_eq(seen.nlines, 1);
    ck_assert_uint_eq(strlen(seen.lines[0]), n);
    ck_assert_uint_le(proxy_lines_capacity(&pl), 128 * 1024);
    free(data);
}
END_TEST

/* space + commit is what the loop uses: bytes read straight into the buffer. */
START_TEST(test_proxy_space_and_commit)
{
    size_t avail = 0;
    char *space = proxy_lines_space(&pl, 64, &avail, NULL);

    ck_assert_ptr_nonnull(space);
    ck_assert_uint_ge(avail, 64);
    memcpy(space, "abc\nde", 6);
    proxy_lines_commit(&pl, 6, &sink);
    ck_assert_uint_eq(seen.nlines, 1);
    ck_assert_uint_eq(proxy_lines_pending(&pl), 2);
    space = proxy_lines_space(&pl, 64, &avail, NULL);
    memcpy(space, "f\n", 2);
    proxy_lines_commit(&pl, 2, &sink);
    ck_assert_uint_eq(seen.nlines, 2);
    ck_assert_str_eq(seen.lines[1], "def");
}
END_TEST

static Suite *proxy_suite(void)
{
    Suite *s = suite_create("proxy");
    TCase *tc = tcase_create("lines");
    TCase *big = tcase_create("limits");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_proxy_splits_lines_in_one_chunk);
    tcase_add_test(tc, test_proxy_joins_a_line_split_across_chunks);
    tcase_add_test(tc, test_proxy_strips_cr_and_skips_empty_lines);
    tcase_add_test(tc, test_proxy_cr_only_stripped_at_the_end);
    tcase_add_test(tc, test_proxy_byte_at_a_time);
    tcase_add_test(tc, test_proxy_finish_delivers_last_line_without_newline);
    tcase_add_test(tc, test_proxy_space_and_commit);
    suite_add_tcase(s, tc);

    tcase_add_checked_fixture(big, setup, teardown);
    tcase_add_test(big, test_proxy_line_at_the_limit_is_delivered);
    tcase_add_test(big, test_proxy_oversized_line_in_one_chunk_is_reported);
    tcase_add_test(big, test_proxy_oversized_line_across_chunks_is_skipped);
    tcase_add_test(big, test_proxy_finish_reports_unfinished_oversized_line);
    tcase_add_test(big, test_proxy_memory_is_bounded_and_returned);
    tcase_add_test(big, test_proxy_big_line_within_limit_then_shrinks);
    suite_add_tcase(s, big);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(proxy_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
