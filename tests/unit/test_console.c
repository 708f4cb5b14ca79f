/* tests/unit/test_console.c - the console ring: bounds, ids, cutting and sanitizing, queries
 * (filters, limit, since_id continuation, dropped), recent errors, clear, threads, and the
 * console_logs tool handler. */
#include "console.h"

#include <check.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools.h"

#if defined(__SANITIZE_ADDRESS__)
/* The sanitizer runtime's; gcc ships no header for it. */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

static struct console *c;

/* Bytes the allocator has handed out and not yet had back (ASan's allocator replaces malloc's,
 * so under ASan it is the one to ask). */
static size_t heap_in_use(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return __sanitizer_get_current_allocated_bytes();
#else
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
#endif
}

static void setup(void)
{
    struct errinfo err = {0};

    c = console_new(4, 1000, &err);
    ck_assert_msg(c != NULL, "console_new: %s", err.msg);
}

static void teardown(void)
{
    console_free(c);
    c = NULL;
}

static uint64_t add(enum console_level lvl, enum console_source src, const char *msg)
{
    return console_append(c, lvl, src, 0, NULL, 0, msg, strlen(msg));
}

/* Runs a query and returns the result (owned by the caller). */
static cJSON *query(int level, int source, uint64_t since, size_t limit)
{
    struct console_query q = {.level = level, .source = source, .since_id = since, .limit = limit};
    cJSON *r = console_query_json(c, &q);

    ck_assert_ptr_nonnull(r);
    return r;
}

static int n_entries(const cJSON *r)
{
    return cJSON_GetArraySize(cJSON_GetObjectItem(r, "entries"));
}

static double entry_id(const cJSON *r, int i)
{
    return cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "entries"), i), "id")
        ->valuedouble;
}

static double num(const cJSON *r, const char *k)
{
    return cJSON_GetObjectItem(r, k)->valuedouble;
}

/* ---- ring bounds and ids ---- */

START_TEST(test_console_ids_start_at_one_and_increase)
{
    ck_assert_uint_eq(console_latest_id(c), 0);
    ck_assert_uint_eq(console_oldest_id(c), 0);
    ck_assert_uint_eq(add(CONSOLE_LOG, CONSOLE_SRC_EXEC, "a"), 1);
    ck_assert_uint_eq(add(CONSOLE_LOG, CONSOLE_SRC_EXEC, "b"), 2);
    ck_assert_uint_eq(console_latest_id(c), 2);
    ck_assert_uint_eq(console_oldest_id(c), 1);
}
END_TEST

START_TEST(test_console_drops_oldest_by_entries)
{
    for (int i = 0; i < 6; i++)
        add(CONSOLE_LOG, CONSOLE_SRC_EXEC, "line");
    ck_assert_uint_eq(console_oldest_id(c), 3); /* 4 kept of 6 */
    ck_assert_uint_eq(console_latest_id(c), 6);
}
END_TEST

START_TEST(test_console_drops_oldest_by_bytes)
{
    char big[401];

    memset(big, 'x', 400);
    big[400] = '\0';
    add(CONSOLE_LOG, CONSOLE_SRC_EXEC, big); /* 400 */
    add(CONSOLE_LOG, CONSOLE_SRC_EXEC, big); /* 800 */
    ck_assert_uint_eq(console_oldest_id(c), 1);
    add(CONSOLE_LOG, CONSOLE_SRC_EXEC, big); /* 1200 > 1000: the first goes */
    ck_assert_uint_eq(console_oldest_id(c), 2);
    ck_assert_uint_eq(console_latest_id(c), 3);
}
END_TEST

START_TEST(test_console_cuts_long_messages_on_utf8_boundary)
{
    struct errinfo err = {0};
    struct console *big = console_new(4, 0, &err);
    size_t n = CONSOLE_MSG_MAX + 100;
    char *msg = malloc(n);
    const char *text;
    cJSON *r;
    struct console_query q = {.level = -1, .source = -1};

    /* 'a' then a run of 3-byte characters, so the cut falls inside one. */
    msg[0] = 'a';
    for (size_t i = 1; i + 3 <= n; i += 3)
        memcpy(msg + i, "\xE2\x82\xAC", 3);
    n = 1 + (n - 1) / 3 * 3;
    console_append(big, CONSOLE_LOG, CONSOLE_SRC_EXEC, 0, NULL, 0, msg, n);
    r = console_query_json(big, &q);
    text = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "entries"), 0), "message")
               ->valuestring;
    ck_assert_ptr_nonnull(strstr(text, "\xE2\x80\xA6[cut "));
    ck_assert_uint_le(strlen(text), CONSOLE_MSG_MAX + 40);
    /* Before the note, only whole euro signs: (len - 1) is a multiple of 3. */
    ck_assert_uint_eq(((size_t)(strstr(text, "\xE2\x80\xA6[cut ") - text) - 1) % 3, 0);
    cJSON_Delete(r);
    console_free(big);
    free(msg);
}
END_TEST

START_TEST(test_console_sanitizes_invalid_utf8)
{
    cJSON *r;
    const char *m;

    console_append(c, CONSOLE_WARN, CONSOLE_SRC_EXEC, 0, NULL, 0, "a\xFF\0b", 4);
    r = query(-1, -1, 0, 0);
    m = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "entries"), 0), "message")
            ->valuestring;
    ck_assert_str_eq(m, "a\xEF\xBF\xBD\xEF\xBF\xBD"
                        "b");
    cJSON_Delete(r);
}
END_TEST

START_TEST(test_console_appendf_drops_trailing_newline)
{
    cJSON *r, *e;

    console_appendf(c, CONSOLE_INFO, CONSOLE_SRC_DAEMON, 42, "started on port %d\n", 7766);
    r = query(-1, -1, 0, 0);
    e = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "entries"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(e, "message")->valuestring, "started on port 7766");
    ck_assert_str_eq(cJSON_GetObjectItem(e, "level")->valuestring, "info");
    ck_assert_str_eq(cJSON_GetObjectItem(e, "source")->valuestring, "daemon");
    ck_assert_int_eq((int)cJSON_GetObjectItem(e, "pid")->valuedouble, 42);
    ck_assert_ptr_null(cJSON_GetObjectItem(e, "instance"));
    /* ISO 8601 UTC with milliseconds: 2026-11-29T20:05:32.123Z */
    ck_assert_uint_eq(strlen(cJSON_GetObjectItem(e, "ts")->valuestring), 24);
    ck_assert_int_eq(cJSON_GetObjectItem(e, "ts")->valuestring[23], 'Z');
    cJSON_Delete(r);
}
END_TEST

START_TEST(test_console_keeps_instance_and_given_time)
{
    cJSON *r, *e;

    console_append(c, CONSOLE_LOG, CONSOLE_SRC_STUDIO, 0, "inst-1", 1000000000123LL, "hi", 2);
    r = query(-1, -1, 0, 0);
    e = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "entries"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(e, "instance")->valuestring, "inst-1");
    ck_assert_str_eq(cJSON_GetObjectItem(e, "ts")->valuestring, "2001-09-09T01:46:40.123Z");
    ck_assert_ptr_null(cJSON_GetObjectItem(e, "pid"));
    cJSON_Delete(r);
}
END_TEST

/* The memory an entry holds follows its message: short messages cost bytes, not the
 * CONSOLE_MSG_MAX-sized buffer each was cleaned in (issue 12: RSS grew ~4 KiB per exec). */
START_TEST(test_console_short_entries_hold_little_memory)
{
    struct errinfo err = {0};
    struct console *big = console_new(2000, 64u << 20, &err);
    size_t before;

    ck_assert_ptr_nonnull(big);
    before = heap_in_use();
    for (int i = 0; i < 2000; i++)
        console_appendf(big, CONSOLE_INFO, CONSOLE_SRC_EXEC, (uint64_t)i, "$ true");
    /* 2000 entries of 6 bytes: well under 256 bytes each, allocator overhead included. */
    ck_assert_uint_lt(heap_in_use() - before, (size_t)2000 * 256);
    console_free(big);
}
END_TEST

/* ---- queries ---- */

START_TEST(test_console_filters_level_and_source)
{
    cJSON *r;

    add(CONSOLE_LOG, CONSOLE_SRC_EXEC, "1");
    add(CONSOLE_ERROR, CONSOLE_SRC_EXEC, "2");
    add(CONSOLE_ERROR, CONSOLE_SRC_STUDIO, "3");
    add(CONSOLE_WARN, CONSOLE_SRC_DAEMON, "4");
    r = query(CONSOLE_ERROR, -1, 0, 0);
    ck_assert_int_eq(n_entries(r), 2);
    ck_assert_int_eq((int)entry_id(r, 0), 2);
    ck_assert_int_eq((int)entry_id(r, 1), 3);
    cJSON_Delete(r);
    r = query(CONSOLE_ERROR, CONSOLE_SRC_STUDIO, 0, 0);
    ck_assert_int_eq(n_entries(r), 1);
    ck_assert_int_eq((int)entry_id(r, 0), 3);
    cJSON_Delete(r);
    r = query(CONSOLE_DEBUG, -1, 0, 0);
    ck_assert_int_eq(n_entries(r), 0);
    ck_assert_int_eq((int)num(r, "next_since_id"), 4);
    cJSON_Delete(r);
}
END_TEST

START_TEST(test_console_filters_pid)
{
    struct console_query q = {.level = -1, .source = -1, .pid = 7};
    cJSON *r;

    console_append(c, CONSOLE_LOG, CONSOLE_SRC_EXEC, 7, NULL, 0, "a", 1);
    console_append(c, CONSOLE_LOG, CONSOLE_SRC_EXEC, 8, NULL, 0, "b", 1);
    r = console_query_json(c, &q);
    ck_assert_int_eq(n_entries(r), 1);
    ck_assert_int_eq((int)entry_id(r, 0), 1);
    cJSON_Delete(r);
}
END_TEST

START_TEST(test_console_limit_without_since_gives_newest)
{
    cJSON *r;

    for (int i = 0; i < 4; i++)
        add(CONSOLE_LOG, CONSOLE_SRC_EXEC, "x");
    r = query(-1, -1, 0, 2);
    ck_assert_int_eq(n_entries(r), 2);
    ck_assert_int_eq((int)entry_id(r, 0), 3); /* the newest two, oldest first */
    ck_assert_int_eq((int)entry_id(r, 1), 4);
    ck_assert_int_eq((int)num(r, "next_since_id"), 4);
    cJSON_Delete(r);
}
END_TEST

START_TEST(test_console_since_id_continues_in_order)
{
    cJSON *r;

    for (int i = 0; i < 4; i++)
        add(CONSOLE_LOG, CONSOLE_SRC_EXEC, "x");
    r = query(-1, -1, 1, 2);
    ck_assert_int_eq(n_entries(r), 2);
    ck_assert_int_eq((int)entry_id(r, 0), 2); /* the oldest after since_id */
    ck_assert_int_eq((int)entry_id(r, 1), 3);
    ck_assert_int_eq((int)num(r, "next_since_id"), 3);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "dropped")));
    cJSON_Delete(r);
    r = query(-1, -1, 3, 2);
    ck_assert_int_eq(n_entries(r), 1);
    ck_assert_int_eq((int)entry_id(r, 0), 4);
    ck_assert_int_eq((int)num(r, "next_since_id"), 4);
    cJSON_Delete(r);
    r = query(-1, -1, 4, 2); /* nothing new: next stays */
    ck_assert_int_eq(n_entries(r), 0);
    ck_assert_int_eq((int)num(r, "next_since_id"), 4);
    cJSON_Delete(r);
}
END_TEST

START_TEST(test_console_reports_dropped)
{
    cJSON *r;

    for (int i = 0; i < 7; i++) /* 1..3 dropped, 4..7 kept */
        add(CONSOLE_LOG, CONSOLE_SRC_EXEC, "x");
    r = query(-1, -1, 1, 0);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "dropped")));
    ck_assert_int_eq((int)entry_id(r, 0), 4);
    ck_assert_int_eq((int)num(r, "oldest_id"), 4);
    ck_assert_int_eq((int)num(r, "latest_id"), 7);
    cJSON_Delete(r);
    r = query(-1, -1, 3, 0);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "dropped")));
    ck_assert_int_eq(n_entries(r), 4);
    cJSON_Delete(r);
}
END_TEST

START_TEST(test_console_recent_errors_text)
{
    char *t;

    ck_assert_ptr_null(console_recent_errors(c, 10));
    console_append(c, CONSOLE_ERROR, CONSOLE_SRC_EXEC, 0, NULL, 1000000000123LL, "boom", 4);
    add(CONSOLE_LOG, CONSOLE_SRC_EXEC, "fine");
    console_append(c, CONSOLE_ERROR, CONSOLE_SRC_STUDIO, 0, NULL, 1000000000456LL, "bad", 3);
    t = console_recent_errors(c, 10);
    ck_assert_str_eq(t, "[2001-09-09T01:46:40.123Z] [exec] boom\n"
                        "[2001-09-09T01:46:40.456Z] [studio] bad");
    free(t);
    t = console_recent_errors(c, 1); /* among the last 1 entry only */
    ck_assert_str_eq(t, "[2001-09-09T01:46:40.456Z] [studio] bad");
    free(t);
}
END_TEST

START_TEST(test_console_clear_keeps_ids_increasing)
{
    cJSON *r;

    add(CONSOLE_LOG, CONSOLE_SRC_EXEC, "a");
    add(CONSOLE_LOG, CONSOLE_SRC_STUDIO, "b");
    add(CONSOLE_LOG, CONSOLE_SRC_EXEC, "c");
    ck_assert_uint_eq(console_clear(c, CONSOLE_SRC_EXEC), 2);
    r = query(-1, -1, 0, 0);
    ck_assert_int_eq(n_entries(r), 1);
    ck_assert_int_eq((int)entry_id(r, 0), 2);
    cJSON_Delete(r);
    r = query(-1, -1, 2, 0); /* id 3 was cleared after 2 */
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "dropped")));
    cJSON_Delete(r);
    ck_assert_uint_eq(console_clear(c, -1), 1);
    ck_assert_uint_eq(console_oldest_id(c), 0);
    ck_assert_uint_eq(add(CONSOLE_LOG, CONSOLE_SRC_EXEC, "d"), 4);
    ck_assert_uint_eq(console_oldest_id(c), 4);
}
END_TEST

START_TEST(test_console_names_parse_both_ways)
{
    for (int i = CONSOLE_LOG; i <= CONSOLE_DEBUG; i++)
        ck_assert_int_eq(console_parse_level(console_level_name(i)), i);
    for (int i = CONSOLE_SRC_EXEC; i <= CONSOLE_SRC_DAEMON; i++)
        ck_assert_int_eq(console_parse_source(console_source_name(i)), i);
    ck_assert_int_eq(console_parse_level("fatal"), -1);
    ck_assert_int_eq(console_parse_source(NULL), -1);
}
END_TEST

/* ---- threads ---- */

#define THREADS    4
#define PER_THREAD 5000
static struct console *shared;

static void *writer(void *arg)
{
    uint64_t last = 0;

    (void)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        uint64_t id = console_append(shared, CONSOLE_LOG, CONSOLE_SRC_EXEC, 0, NULL, 0, "line", 4);

        if (id <= last)
            return (void *)1; /* ids seen by one thread must increase */
        last = id;
        if (i % 100 == 0) {
            struct console_query q = {.level = -1, .source = -1, .limit = 50};

            cJSON_Delete(console_query_json(shared, &q));
        }
    }
    return NULL;
}

START_TEST(test_console_appends_from_many_threads)
{
    pthread_t t[THREADS];
    struct errinfo err = {0};
    struct console_query q = {.level = -1, .source = -1, .since_id = 0, .limit = 1000};
    cJSON *r;
    void *ret;

    shared = console_new(1000, 0, &err);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, writer, NULL);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], &ret);
        ck_assert_ptr_null(ret);
    }
    ck_assert_uint_eq(console_latest_id(shared), THREADS * PER_THREAD);
    r = console_query_json(shared, &q);
    ck_assert_int_eq(n_entries(r), 1000);
    for (int i = 0; i < 1000; i++) /* the last 1000 ids, contiguous and in order */
        ck_assert_int_eq((int)entry_id(r, i), THREADS * PER_THREAD - 999 + i);
    cJSON_Delete(r);
    console_free(shared);
}
END_TEST

/* ---- the console_logs tool ---- */

START_TEST(test_console_tool_applies_filters)
{
    struct tools_ctx ctx = {.console = c};
    struct tools_result res = {0};
    struct errinfo err = {0};
    cJSON *args = cJSON_Parse("{\"level\":\"error\",\"source\":\"exec\",\"limit\":1}");
    cJSON *r;

    add(CONSOLE_ERROR, CONSOLE_SRC_EXEC, "e1");
    add(CONSOLE_ERROR, CONSOLE_SRC_EXEC, "e2");
    add(CONSOLE_ERROR, CONSOLE_SRC_DAEMON, "e3");
    ck_assert_int_eq(tools_call(&ctx, NULL, "console_logs", args, &res, &err), 0);
    ck_assert(res.is_json);
    r = cJSON_Parse(res.data);
    ck_assert_int_eq(n_entries(r), 1);
    ck_assert_int_eq((int)entry_id(r, 0), 2);
    cJSON_Delete(r);
    cJSON_Delete(args);
    tools_result_cleanup(&res);
}
END_TEST

START_TEST(test_console_tool_without_console_fails)
{
    struct tools_ctx ctx = {0};
    struct tools_result res = {0};
    struct errinfo err = {0};
    cJSON *args = cJSON_CreateObject();

    ck_assert_int_eq(tools_call(&ctx, NULL, "console_logs", args, &res, &err), -1);
    ck_assert_int_eq(err.kind, ERR_UNAVAILABLE);
    cJSON_Delete(args);
}
END_TEST

static Suite *console_suite(void)
{
    Suite *s = suite_create("console");
    TCase *ring = tcase_create("ring"), *qc = tcase_create("query"), *th = tcase_create("threads");
    TCase *tool = tcase_create("tool");

    tcase_add_checked_fixture(ring, setup, teardown);
    tcase_add_test(ring, test_console_ids_start_at_one_and_increase);
    tcase_add_test(ring, test_console_drops_oldest_by_entries);
    tcase_add_test(ring, test_console_drops_oldest_by_bytes);
    tcase_add_test(ring, test_console_cuts_long_messages_on_utf8_boundary);
    tcase_add_test(ring, test_console_sanitizes_invalid_utf8);
    tcase_add_test(ring, test_console_appendf_drops_trailing_newline);
    tcase_add_test(ring, test_console_keeps_instance_and_given_time);
    tcase_add_test(ring, test_console_clear_keeps_ids_increasing);
    tcase_add_test(ring, test_console_names_parse_both_ways);
    tcase_add_test(ring, test_console_short_entries_hold_little_memory);
    suite_add_tcase(s, ring);
    tcase_add_checked_fixture(qc, setup, teardown);
    tcase_add_test(qc, test_console_filters_level_and_source);
    tcase_add_test(qc, test_console_filters_pid);
    tcase_add_test(qc, test_console_limit_without_since_gives_newest);
    tcase_add_test(qc, test_console_since_id_continues_in_order);
    tcase_add_test(qc, test_console_reports_dropped);
    tcase_add_test(qc, test_console_recent_errors_text);
    suite_add_tcase(s, qc);
    tcase_add_test(th, test_console_appends_from_many_threads);
    suite_add_tcase(s, th);
    tcase_add_checked_fixture(tool, setup, teardown);
    tcase_add_test(tool, test_console_tool_applies_filters);
    tcase_add_test(tool, test_console_tool_without_console_fails);
    suite_add_tcase(s, tool);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(console_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
