/* tests/unit/test_events.c - the event feed: order, kinds, the JSON each event carries, the
 * console as a producer, a listener that blocks (drops are counted and told), unlisten. */
#include "events.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "console.h"

#define SEEN_MAX 20000

struct seen {
    pthread_mutex_t mu;
    size_t n;
    enum events_kind kind[SEEN_MAX];
    uint64_t seq[SEEN_MAX];
    char *json[SEEN_MAX];
    uint64_t dropped;
    atomic_bool block; /* the listener waits while set */
};

static struct events *ev;
static struct seen seen;

static void on_event(void *arg, const struct events_event *e)
{
    struct seen *s = arg;

    while (atomic_load(&s->block))
        usleep(1000);
    pthread_mutex_lock(&s->mu);
    if (e->kind == EVENTS_DROPPED)
        s->dropped += e->dropped;
    if (s->n < SEEN_MAX) {
        s->kind[s->n] = e->kind;
        s->seq[s->n] = e->seq;
        s->json[s->n] = strndup(e->json, e->json_len);
        s->n++;
    }
    pthread_mutex_unlock(&s->mu);
}

static void setup(void)
{
    struct errinfo err = {0};

    memset(&seen, 0, sizeof(seen));
    pthread_mutex_init(&seen.mu, NULL);
    ev = events_new(&err);
    ck_assert_msg(ev != NULL, "%s", err.msg);
}

static void teardown(void)
{
    events_free(ev);
    for (size_t i = 0; i < seen.n; i++)
        free(seen.json[i]);
    pthread_mutex_destroy(&seen.mu);
}

START_TEST(test_events_arrive_in_order_with_their_json)
{
    int h = events_listen(ev, EVENTS_LIST_CHANGED | EVENTS_RESOURCE_UPDATED, on_event, &seen, NULL);

    ck_assert_int_ge(h, 0);
    events_publish_list_changed(ev, EVENTS_LIST_TOOLS | EVENTS_LIST_RESOURCES);
    events_publish_resource_updated(ev, "file:///a \"b\".js");
    events_publish_list_changed(ev, EVENTS_LIST_PROMPTS);
    events_flush(ev);
    ck_assert_uint_eq(seen.n, 3);
    ck_assert_str_eq(seen.json[0], "{\"lists\":[\"tools\",\"resources\"]}");
    ck_assert_str_eq(seen.json[1], "{\"uri\":\"file:///a \\\"b\\\".js\"}");
    ck_assert_str_eq(seen.json[2], "{\"lists\":[\"prompts\"]}");
    ck_assert(seen.seq[0] < seen.seq[1] && seen.seq[1] < seen.seq[2]);
    events_unlisten(ev, h);
}
END_TEST

START_TEST(test_events_a_listener_gets_only_its_kinds)
{
    int h = events_listen(ev, EVENTS_RESOURCE_UPDATED, on_event, &seen, NULL);

    events_publish_list_changed(ev, EVENTS_LIST_TOOLS);
    events_publish_resource_updated(ev, "file:///x");
    events_flush(ev);
    ck_assert_uint_eq(seen.n, 1);
    ck_assert_int_eq(seen.kind[0], EVENTS_RESOURCE_UPDATED);
    events_unlisten(ev, h);
}
END_TEST

static void publish(void *arg, const struct console_entry_view *e)
{
    events_publish_console(arg, e);
}

START_TEST(test_events_console_entries_flow_from_the_console)
{
    struct errinfo err = {0};
    struct console *c = console_new(0, 0, &err);
    int h = events_listen(ev, EVENTS_CONSOLE, on_event, &seen, NULL);

    ck_assert_ptr_nonnull(c);
    console_set_listener(c, publish, ev);
    console_append(c, CONSOLE_WARN, CONSOLE_SRC_EXEC, 7, NULL, 1700000000123, "disk \"full\"", 11);
    console_append(c, CONSOLE_INFO, CONSOLE_SRC_STUDIO, 0, "edit-1", 1700000000456, "hi", 2);
    events_flush(ev);
    ck_assert_uint_eq(seen.n, 2);
    ck_assert_str_eq(seen.json[0],
                     "{\"id\":1,\"ts\":\"2023-11-14T22:13:20.123Z\",\"level\":\"warn\","
                     "\"source\":\"exec\",\"message\":\"disk \\\"full\\\"\",\"pid\":7}");
    ck_assert_str_eq(seen.json[1],
                     "{\"id\":2,\"ts\":\"2023-11-14T22:13:20.456Z\",\"level\":\"info\","
                     "\"source\":\"studio\",\"message\":\"hi\",\"instance\":\"edit-1\"}");
    console_set_listener(c, NULL, NULL);
    console_free(c);
    events_unlisten(ev, h);
}
END_TEST

START_TEST(test_events_a_stuck_listener_costs_a_bounded_queue_and_hears_the_drop)
{
    int h = events_listen(ev, EVENTS_RESOURCE_UPDATED, on_event, &seen, NULL);
    const size_t total = EVENTS_QUEUE_MAX + 500;

    atomic_store(&seen.block, true);
    events_publish_resource_updated(ev, "file:///first");
    usleep(20000); /* the dispatcher may or may not hold "first" already: both are fine */
    for (size_t i = 0; i < total; i++) {
        char uri[64];

        snprintf(uri, sizeof(uri), "file:///%zu", i);
        events_publish_resource_updated(ev, uri);
    }
    atomic_store(&seen.block, false);
    events_flush(ev);
    /* Everything published is either delivered or counted as dropped, and the last event is
     * never the one lost. */
    ck_assert_uint_ge(seen.dropped, 1);
    ck_assert_uint_eq(seen.n - 1 /* the EVENTS_DROPPED event */ + seen.dropped, total + 1);
    ck_assert_str_eq(seen.json[seen.n - 1], "{\"uri\":\"file:///8691\"}");
    for (size_t i = 1, last = 0; i < seen.n; i++)
        if (seen.kind[i] != EVENTS_DROPPED) {
            ck_assert_uint_lt(last, seen.seq[i]);
            last = seen.seq[i];
        }
    events_unlisten(ev, h);
}
END_TEST

static atomic_int calls_after;
static atomic_bool unlistened;

static void count_after(void *arg, const struct events_event *e)
{
    (void)arg;
    (void)e;
    if (atomic_load(&unlistened))
        atomic_fetch_add(&calls_after, 1);
    usleep(200);
}

START_TEST(test_events_unlisten_waits_for_a_running_listener)
{
    int h = events_listen(ev, EVENTS_LIST_CHANGED, count_after, NULL, NULL);

    for (int i = 0; i < 2000; i++)
        events_publish_list_changed(ev, EVENTS_LIST_TOOLS);
    usleep(5000);
    events_unlisten(ev, h);
    atomic_store(&unlistened, true);
    events_flush(ev);
    ck_assert_int_eq(atomic_load(&calls_after), 0);
}
END_TEST

START_TEST(test_events_free_delivers_what_was_queued)
{
    int h = events_listen(ev, EVENTS_LIST_CHANGED, on_event, &seen, NULL);

    for (int i = 0; i < 100; i++)
        events_publish_list_changed(ev, EVENTS_LIST_TOOLS);
    events_unlisten(ev, h); /* the rest goes to nobody, and freeing frees it */
    events_free(ev);
    ev = NULL;
    ck_assert_uint_le(seen.n, 100);
}
END_TEST

static Suite *events_suite(void)
{
    Suite *s = suite_create("events");
    TCase *tc = tcase_create("feed");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_events_arrive_in_order_with_their_json);
    tcase_add_test(tc, test_events_a_listener_gets_only_its_kinds);
    tcase_add_test(tc, test_events_console_entries_flow_from_the_console);
    tcase_add_test(tc, test_events_a_stuck_listener_costs_a_bounded_queue_and_hears_the_drop);
    tcase_add_test(tc, test_events_unlisten_waits_for_a_running_listener);
    tcase_add_test(tc, test_events_free_delivers_what_was_queued);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(events_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
