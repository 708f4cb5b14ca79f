/* tests/unit/test_startgate.c - how many stdio MCP servers start at once: slots, giving one back
 * (once, by its own ticket), taking back one held too long, and closing. */
#include "startgate.h"

#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "clocks.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* A thread that enters the gate and records its ticket. */
struct entrant {
    struct startgate *g;
    pthread_t thread;
    atomic_bool done;
    uint64_t ticket;
};

static void *enter_main(void *arg)
{
    struct entrant *e = arg;

    e->ticket = startgate_enter(e->g);
    atomic_store(&e->done, true);
    return NULL;
}

static void start(struct entrant *e, struct startgate *g)
{
    e->g = g;
    atomic_init(&e->done, false);
    ck_assert_int_eq(pthread_create(&e->thread, NULL, enter_main, e), 0);
}

START_TEST(test_startgate_slots_and_leave)
{
    struct errinfo err = {0};
    struct startgate *g = startgate_new(2, 60000, &err);
    struct entrant third;
    uint64_t a, b;

    ck_assert_ptr_nonnull(g);
    a = startgate_enter(g);
    b = startgate_enter(g);
    ck_assert(a != 0 && b != 0 && a != b);
    start(&third, g);
    sleep_ms(100);
    ck_assert_msg(!atomic_load(&third.done), "a third server started with two slots held");
    startgate_leave(g, a);
    pthread_join(third.thread, NULL);
    ck_assert(third.ticket != 0);
    /* A ticket given back twice frees nothing the second time: its slot is the third's now. */
    startgate_leave(g, a);
    start(&third, g); /* reuses the struct: the first thread has ended */
    sleep_ms(100);
    ck_assert_msg(!atomic_load(&third.done), "a stale ticket gave a slot back");
    startgate_leave(g, 0); /* no ticket: nothing */
    startgate_leave(g, b);
    pthread_join(third.thread, NULL);
    ck_assert(third.ticket != 0);
    startgate_close(g);
    startgate_free(g);
}
END_TEST

START_TEST(test_startgate_takes_back_a_slot_held_too_long)
{
    struct errinfo err = {0};
    struct startgate *g = startgate_new(1, 200, &err);
    uint64_t hung, next;
    int64_t t0;

    ck_assert_ptr_nonnull(g);
    hung = startgate_enter(g);
    t0 = clocks_mono_ms();
    next = startgate_enter(g); /* the hung one never leaves */
    ck_assert(next != 0 && next != hung);
    ck_assert_int_ge(clocks_mono_ms() - t0, 190);
    /* The hung server's late leave does not free the slot the next one holds. */
    startgate_leave(g, hung);
    {
        struct entrant e;

        start(&e, g);
        sleep_ms(50);
        ck_assert_msg(!atomic_load(&e.done), "a taken-back ticket freed another's slot");
        startgate_leave(g, next);
        pthread_join(e.thread, NULL);
        ck_assert(e.ticket != 0);
    }
    startgate_close(g);
    startgate_free(g);
}
END_TEST

START_TEST(test_startgate_close_wakes_waiters_with_zero)
{
    struct errinfo err = {0};
    struct startgate *g = startgate_new(1, 60000, &err);
    struct entrant e;

    ck_assert_ptr_nonnull(g);
    ck_assert(startgate_enter(g) != 0);
    start(&e, g);
    sleep_ms(50);
    startgate_close(g);
    pthread_join(e.thread, NULL);
    ck_assert(e.ticket == 0);
    ck_assert(startgate_enter(g) == 0); /* closed: no one gets in */
    startgate_free(g);
}
END_TEST

START_TEST(test_startgate_cores_is_at_least_two)
{
    ck_assert_uint_ge(startgate_cores(), 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("startgate");
    TCase *tc = tcase_create("startgate");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_startgate_slots_and_leave);
    tcase_add_test(tc, test_startgate_takes_back_a_slot_held_too_long);
    tcase_add_test(tc, test_startgate_close_wakes_waiters_with_zero);
    tcase_add_test(tc, test_startgate_cores_is_at_least_two);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
