/* tests/unit/test_memusage.c - what a sandbox's processes count for the memory watchdog: the
 * /proc/<pid>/status and /proc/<pid>/smaps parsers, and a measurement of a real process tree. */
#include "memusage.h"

#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

START_TEST(test_memusage_status_fields)
{
    static const char status[] = "Name:\tpython3\nVmRSS:\t  20480 kB\nRssAnon:\t   10240 kB\n"
                                 "RssFile:\t    8192 kB\nRssShmem:\t    2048 kB\nThreads:\t1\n";

    ck_assert_uint_eq(memusage_status_bytes(status, "RssAnon"), 10240u << 10);
    ck_assert_uint_eq(memusage_status_bytes(status, "RssShmem"), 2048u << 10);
    ck_assert_uint_eq(memusage_status_bytes(status, "RssHuge"), 0);
    /* A key is matched whole: "Rss" is not "RssAnon". */
    ck_assert_uint_eq(memusage_status_bytes(status, "Rss"), 0);
}
END_TEST

/* One smaps text with a mapping of each kind. The shm mount is 0:1, one of its objects (inode
 * 7) is held open by a descriptor. */
static const char smaps[] =
    /* private anonymous (heap): its Pss counts */
    "55d0c0000000-55d0c4000000 rw-p 00000000 00:00 0                          [heap]\n"
    "Size:              65536 kB\nRss:                4096 kB\nPss:                3072 kB\n"
    "Pss_Dirty:          3072 kB\nAnonymous:          4096 kB\nVmFlags: rd wr mr mw me ac\n"
    /* private file mapping: only its copied-on-write pages (Anonymous) count */
    "7f0000000000-7f0000100000 rw-p 00001000 08:01 1234                       /usr/lib/libc.so.6\n"
    "Size:               1024 kB\nRss:                 512 kB\nPss:                 300 kB\n"
    "Anonymous:            64 kB\n"
    /* shared, on the shm mount, not held by a descriptor: its Pss counts */
    "7f0000200000-7f0010200000 rw-s 00000000 00:01 9                          /dev/zero (deleted)\n"
    "Size:             262144 kB\nRss:              131072 kB\nPss:               65536 kB\n"
    "Anonymous:             0 kB\n"
    /* shared, on the shm mount, held by a descriptor: counted there, not here */
    "7f0020000000-7f0030000000 rw-s 00000000 00:01 7                          /memfd:x (deleted)\n"
    "Size:             262144 kB\nRss:              262144 kB\nPss:              262144 kB\n"
    "Anonymous:             0 kB\n"
    /* shared mapping of a file on disk: page cache, not counted */
    "7f0040000000-7f0050000000 rw-s 00000000 08:01 555                        /workspace/db\n"
    "Size:             262144 kB\nRss:              100000 kB\nPss:              100000 kB\n"
    "Anonymous:             0 kB\n";

START_TEST(test_memusage_smaps_counts_what_a_cgroup_would)
{
    uint64_t held[] = {7};
    uint64_t got = memusage_smaps_bytes(smaps, strlen(smaps), makedev(0, 1), held, 1);

    ck_assert_uint_eq(got, (uint64_t)(3072 + 64 + 65536) << 10);
    /* Not held: the memfd's mapped pages count here instead. */
    got = memusage_smaps_bytes(smaps, strlen(smaps), makedev(0, 1), NULL, 0);
    ck_assert_uint_eq(got, (uint64_t)(3072 + 64 + 65536 + 262144) << 10);
    ck_assert_uint_eq(memusage_smaps_bytes("", 0, makedev(0, 1), NULL, 0), 0);
}
END_TEST

/* A real tree: this process forks a "sandbox init" that forks a child holding 32 MiB of
 * touched shared memory and 16 MiB of private memory. Measured from this process as bwrap. */
START_TEST(test_memusage_measures_a_process_tree)
{
    int ready[2];
    pid_t init;
    char c;
    struct memusage quick, exact;

    ck_assert_int_eq(pipe(ready), 0);
    init = fork();
    ck_assert_int_ge(init, 0);
    if (init == 0) {
        pid_t kid;

        setpgid(0, 0); /* one group, so the test can end both */
        kid = fork();

        if (kid == 0) {
            char *shared =
                mmap(NULL, 32u << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
            char *priv = malloc(16u << 20);

            if (shared == MAP_FAILED || !priv)
                _exit(1);
            memset(shared, 1, 32u << 20);
            memset(priv, 2, 16u << 20);
            (void)!write(ready[1], "r", 1);
            pause();
            _exit(0);
        }
        pause();
        _exit(0);
    }
    setpgid(init, init); /* also here: whichever runs first */
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    ck_assert_int_eq(memusage_measure(getpid(), 0, false, &quick), 0);
    ck_assert_int_eq(memusage_measure(getpid(), 0, true, &exact), 0);
    /* This process (in bwrap's place), the init and its child: nothing else. */
    ck_assert_uint_eq(quick.nprocs, 3);
    ck_assert_uint_eq(exact.nprocs, 3);
    ck_assert_uint_ge(exact.processes, 48u << 20);
    ck_assert_uint_ge(quick.processes, exact.processes);
    kill(-init, SIGKILL);
    waitpid(init, NULL, 0);
    close(ready[0]);
    close(ready[1]);
}
END_TEST

/* The network agent, a child of bwrap made by forking the daemon, holds the daemon's pages
 * (hundreds of MiB under ThreadSanitizer), not the command's: it is not counted. Here the
 * "agent" touches 64 MiB and the "init" nothing. */
START_TEST(test_memusage_leaves_out_the_agent)
{
    int ready[2];
    pid_t agent, init;
    char c;
    struct memusage all, quick, exact;

    ck_assert_int_eq(pipe(ready), 0);
    agent = fork(); /* first: it comes before init among this process's children */
    ck_assert_int_ge(agent, 0);
    if (agent == 0) {
        /* mmap, not malloc: a memset of malloc'd memory nobody reads may be optimized out. */
        char *priv =
            mmap(NULL, 64u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (priv == MAP_FAILED)
            _exit(1);
        memset(priv, 2, 64u << 20);
        (void)!write(ready[1], "a", 1);
        pause();
        _exit(0);
    }
    init = fork();
    ck_assert_int_ge(init, 0);
    if (init == 0) {
        pause();
        _exit(0);
    }
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    ck_assert_int_eq(memusage_measure(getpid(), 0, true, &all), 0); /* told of no agent */
    ck_assert_int_eq(memusage_measure(getpid(), agent, false, &quick), 0);
    ck_assert_int_eq(memusage_measure(getpid(), agent, true, &exact), 0);
    /* This process (in bwrap's place) and the init; told of no agent, the agent too. */
    ck_assert_uint_eq(all.nprocs, 3);
    ck_assert_uint_eq(quick.nprocs, 2);
    ck_assert_uint_eq(exact.nprocs, 2);
    /* The agent's 64 MiB are not in it (this process's own size varies: a sanitizer's). */
    ck_assert_uint_ge(all.processes, exact.processes + (60u << 20));
    kill(agent, SIGKILL);
    kill(init, SIGKILL);
    waitpid(agent, NULL, 0);
    waitpid(init, NULL, 0);
    close(ready[0]);
    close(ready[1]);
}
END_TEST

static Suite *memusage_suite(void)
{
    Suite *s = suite_create("memusage");
    TCase *parse = tcase_create("parse"), *measure = tcase_create("measure");

    tcase_add_test(parse, test_memusage_status_fields);
    tcase_add_test(parse, test_memusage_smaps_counts_what_a_cgroup_would);
    suite_add_tcase(s, parse);
    tcase_add_test(measure, test_memusage_measures_a_process_tree);
    tcase_add_test(measure, test_memusage_leaves_out_the_agent);
    suite_add_tcase(s, measure);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(memusage_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
