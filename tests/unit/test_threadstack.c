/* tests/unit/test_threadstack.c - threadstack_spawn: the child runs on its own stack in the
 * caller's memory and its status comes back; a child that outgrows that stack dies of SIGSEGV
 * on the guard page below it instead of writing into the caller's memory. */
#include "threadstack.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

struct shared {
    int seen; /* written by the child: it shares the caller's memory */
    int status;
};

static int child_exits(void *arg)
{
    struct shared *s = arg;

    s->seen = 42;
    threadstack_child_exit(s->status);
}

/* TSan's build forks (the child runs on the caller's stack); ASan reports an overflow and exits
 * instead of dying of the signal: the overflow is tested in the other builds. */
#if !defined(THREADSTACK_TSAN) && !defined(UNDER_ASAN)
#define TEST_OVERFLOW 1

/* Uses about depth KiB of stack. */
static int deep(int depth)
{
    volatile char page[1024];

    page[0] = (char)depth;
    page[sizeof(page) - 1] = (char)depth;
    return depth ? deep(depth - 1) + page[0] + page[sizeof(page) - 1] : 0;
}

static int child_overflows(void *arg)
{
    (void)arg;
    /* 80 KiB: past its 64 KiB, not so far that memory below it would end before that. */
    threadstack_child_exit(deep(80) == 7 ? 1 : 2);
}

#endif

static int wait_for(pid_t pid)
{
    int st = 0;

    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        continue;
    return st;
}

START_TEST(test_threadstack_spawn_runs_the_child_and_gives_its_status)
{
    struct shared s = {.seen = 0, .status = 7};
    pid_t pid = threadstack_spawn(child_exits, &s);
    int st;

    ck_assert_int_gt(pid, 0);
    st = wait_for(pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 7);
#ifndef THREADSTACK_TSAN /* a fork there: nothing is shared */
    ck_assert_int_eq(s.seen, 42);
#endif
}
END_TEST

START_TEST(test_threadstack_spawn_child_past_its_stack_dies_of_sigsegv)
{
#ifndef TEST_OVERFLOW
    return;
#else
    pid_t pid = threadstack_spawn(child_overflows, NULL);
    int st;

    ck_assert_int_gt(pid, 0);
    st = wait_for(pid);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %#x", st);
#endif
}
END_TEST

int main(void)
{
    Suite *s = suite_create("threadstack");
    TCase *tc = tcase_create("spawn");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_threadstack_spawn_runs_the_child_and_gives_its_status);
    tcase_add_test(tc, test_threadstack_spawn_child_past_its_stack_dies_of_sigsegv);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
