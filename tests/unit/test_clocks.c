/* tests/unit/test_clocks.c - the clocks in milliseconds and the deadlines of timed waits. */
#include "clocks.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

static int64_t ts_ms(struct timespec ts)
{
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

START_TEST(test_clocks_at_splits_milliseconds)
{
    struct timespec ts = clocks_at(1234999);

    ck_assert_int_eq(ts.tv_sec, 1234);
    ck_assert_int_eq(ts.tv_nsec, 999000000L);
    ts = clocks_at(0);
    ck_assert_int_eq(ts.tv_sec, 0);
    ck_assert_int_eq(ts.tv_nsec, 0);
}
END_TEST

/* A deadline is now plus the distance, with tv_nsec carried into tv_sec, on the clock that
 * clocks_mono_ms reads; a distance of zero or less is now. */
START_TEST(test_clocks_deadline_is_now_plus_ms)
{
    static const int64_t dists[] = {0, -5, 1, 999, 1000, 1999, 86400000};

    for (size_t i = 0; i < sizeof(dists) / sizeof(dists[0]); i++) {
        int64_t before = clocks_mono_ms();
        struct timespec ts = clocks_deadline(dists[i]);
        int64_t after = clocks_mono_ms();
        int64_t d = dists[i] > 0 ? dists[i] : 0;

        ck_assert_int_ge(ts.tv_nsec, 0);
        ck_assert_int_lt(ts.tv_nsec, 1000000000L);
        ck_assert_int_ge(ts_ms(ts), before + d);
        ck_assert_int_le(ts_ms(ts), after + d);
    }
}
END_TEST

START_TEST(test_clocks_wall_is_the_epoch_clock)
{
    struct timespec rt;
    int64_t w = clocks_wall_ms();

    clock_gettime(CLOCK_REALTIME, &rt);
    ck_assert_int_le(w, ts_ms(rt));
    ck_assert_int_gt(w, ts_ms(rt) - 1000);
}
END_TEST

/* A condition from clocks_cond_init times out at a clocks_deadline: not before it (which a
 * condition on CLOCK_REALTIME given a monotonic deadline would do at once: the monotonic
 * clock counts from boot, far behind the epoch). */
START_TEST(test_clocks_cond_waits_on_the_monotonic_clock)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond;
    struct timespec until;
    int64_t t0;
    int rc;

    ck_assert_int_eq(clocks_cond_init(&cond), 0);
    t0 = clocks_mono_ms();
    until = clocks_deadline(50);
    pthread_mutex_lock(&mu);
    do
        rc = pthread_cond_timedwait(&cond, &mu, &until);
    while (rc == 0); /* a spurious wake-up: wait again */
    pthread_mutex_unlock(&mu);
    ck_assert_int_eq(rc, ETIMEDOUT);
    ck_assert_int_ge(clocks_mono_ms() - t0, 50);
    pthread_cond_destroy(&cond);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("clocks");
    TCase *tc = tcase_create("clocks");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_clocks_at_splits_milliseconds);
    tcase_add_test(tc, test_clocks_deadline_is_now_plus_ms);
    tcase_add_test(tc, test_clocks_wall_is_the_epoch_clock);
    tcase_add_test(tc, test_clocks_cond_waits_on_the_monotonic_clock);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
