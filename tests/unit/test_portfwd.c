/* tests/unit/test_portfwd.c - port forwards: once portfwd_detach returns, the forward's port
 * refuses connections. The process registry marks a run done (and kill answers) only after
 * detach, so a client that connects after the kill answer must be refused, never accepted and
 * then reset. */
#include "portfwd.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* connect() to 127.0.0.1:port: 0 when accepted, else the errno. */
static int connect_errno(unsigned long port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

    ck_assert_int_ge(fd, 0);
    rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
    close(fd);
    return rc;
}

/* The accept thread sits in poll() on the listeners; a listener that is only closed stays open
 * for the kernel until that poll returns, and connections made meanwhile are accepted, then
 * reset. Each round detaches and connects at once, before the thread can have woken. */
START_TEST(test_portfwd_detached_forward_refuses_at_once)
{
    struct errinfo err = {0};
    struct portfwd *pf = portfwd_new(&err);
    int accepted = 0;

    ck_assert_msg(pf != NULL, "%s", err.msg);
    for (uint64_t run = 1; run <= 1000; run++) {
        char url[64];
        unsigned long port;

        portfwd_attach(pf, run, -1); /* the host's network: nothing to connect to is needed */
        ck_assert_msg(portfwd_expose(pf, run, 8000, 0, url, sizeof(url), &err) == 0, "%s", err.msg);
        ck_assert_int_eq(strncmp(url, "http://127.0.0.1:", 17), 0);
        port = strtoul(url + 17, NULL, 10);
        ck_assert_uint_gt(port, 0);
        ck_assert_int_eq(connect_errno(port), 0); /* it listens */
        portfwd_detach(pf, run);
        if (connect_errno(port) != ECONNREFUSED)
            accepted++;
    }
    ck_assert_msg(accepted == 0, "%d of 1000 detached forwards still took a connection", accepted);
    portfwd_free(pf);
}
END_TEST

static Suite *portfwd_suite(void)
{
    Suite *s = suite_create("portfwd");
    TCase *tc = tcase_create("detach");

    tcase_add_test(tc, test_portfwd_detached_forward_refuses_at_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(portfwd_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
