/* tests/unit/test_sse.c - the Server-Sent Events reader: fields, line ends, pieces of any size,
 * comments, the last event id, oversized events, stopping. */
#include "sse.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct got {
    char text[4096]; /* "event|id|data;" for each event */
    size_t n;
    int stop_after; /* stop after this many events (0: never) */
};

static bool on_event(void *ctx, const struct sse_event *ev)
{
    struct got *g = ctx;
    size_t len = strlen(g->text);

    snprintf(g->text + len, sizeof(g->text) - len, "%s|%s|%.*s;", ev->event, ev->id,
             (int)ev->data_len, ev->data);
    g->n++;
    return !(g->stop_after && (int)g->n >= g->stop_after);
}

/* Feeds text in pieces of `step` bytes (0: at once) and returns what was dispatched. */
static const char *parse(const char *text, size_t step, size_t limit, size_t *dropped)
{
    static struct got g;
    struct sse_parser p;
    size_t len = strlen(text);

    memset(&g, 0, sizeof(g));
    sse_init(&p, limit);
    if (!step)
        step = len ? len : 1;
    for (size_t i = 0; i < len; i += step)
        sse_feed(&p, text + i, len - i < step ? len - i : step, on_event, &g);
    if (dropped)
        *dropped = p.dropped;
    sse_cleanup(&p);
    return g.text;
}

static const struct {
    const char *in, *out;
} cases[] = {
    {"data: hi\n\n", "message||hi;"},
    {"event: progress\ndata: {\"a\":1}\n\n", "progress||{\"a\":1};"},
    {"data: one\ndata: two\n\n", "message||one\ntwo;"},
    {"data:nospace\n\n", "message||nospace;"},
    {"data:  two spaces\n\n", "message|| two spaces;"},
    {": keepalive\n\ndata: x\n\n", "message||x;"},
    {"event: e\n\n", ""}, /* no data: nothing is dispatched */
    {"data: a\r\n\r\ndata: b\r\rdata: c\n\n", "message||a;message||b;message||c;"},
    {"id: 7\ndata: a\n\ndata: b\n\n", "message|7|a;message|7|b;"},
    {"id: 7\ndata: a\n\nid\ndata: b\n\n", "message|7|a;message||b;"},
    {"retry: 100\nfoo: bar\ndata: z\n\n", "message||z;"},
    {"data\n\n", "message||;"},
    {"event: a\ndata: 1\n\nevent: b\ndata: 2\n\n", "a||1;b||2;"},
    {"data: no end", ""},
};

START_TEST(test_sse_table_at_once_and_byte_by_byte)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_msg(strcmp(parse(cases[i].in, 0, 0, NULL), cases[i].out) == 0, "case %zu: %s", i,
                      parse(cases[i].in, 0, 0, NULL));
        for (size_t step = 1; step <= 3; step++)
            ck_assert_msg(strcmp(parse(cases[i].in, step, 0, NULL), cases[i].out) == 0,
                          "case %zu in pieces of %zu: %s", i, step,
                          parse(cases[i].in, step, 0, NULL));
    }
}
END_TEST

START_TEST(test_sse_an_event_over_the_limit_is_dropped_and_counted)
{
    char big[400];
    size_t dropped = 0;

    snprintf(big, sizeof(big), "data: %0200d\n\ndata: small\n\n", 0);
    ck_assert_str_eq(parse(big, 0, 100, &dropped), "message||small;");
    ck_assert_uint_eq(dropped, 1);
    ck_assert_str_eq(parse(big, 7, 100, &dropped), "message||small;");
    ck_assert_uint_eq(dropped, 1);
}
END_TEST

START_TEST(test_sse_a_callback_can_stop_the_stream)
{
    struct got g = {.stop_after = 1};
    struct sse_parser p;
    const char *text = "data: 1\n\ndata: 2\n\n";

    sse_init(&p, 0);
    ck_assert(!sse_feed(&p, text, strlen(text), on_event, &g));
    ck_assert_uint_eq(g.n, 1);
    sse_cleanup(&p);
}
END_TEST

static Suite *sse_suite(void)
{
    Suite *s = suite_create("sse");
    TCase *tc = tcase_create("reader");

    tcase_add_test(tc, test_sse_table_at_once_and_byte_by_byte);
    tcase_add_test(tc, test_sse_an_event_over_the_limit_is_dropped_and_counted);
    tcase_add_test(tc, test_sse_a_callback_can_stop_the_stream);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sse_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
