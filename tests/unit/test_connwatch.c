/* tests/unit/test_connwatch.c - the connection watcher: a peer's close runs the callback once,
 * two watches of one socket both fire, a removed watch never fires, and a connection's socket
 * is found by its addresses (again, from the thread's memory, after the first lookup). */
#include "connwatch.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static atomic_int fired[3];

static void on_gone(void *arg)
{
    atomic_fetch_add(&fired[(intptr_t)arg], 1);
}

/* Waits (without a deadline: ctest bounds a hang) until fired[i] reaches n. */
static void wait_fired(int i, int n)
{
    while (atomic_load(&fired[i]) < n)
        usleep(1000);
}

START_TEST(test_connwatch_close_fires_each_watch_once)
{
    struct connwatch *w = connwatch_new(NULL);
    int sv[2], a, b, c;

    ck_assert_ptr_nonnull(w);
    for (int i = 0; i < 3; i++)
        atomic_store(&fired[i], 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    a = connwatch_add(w, sv[0], on_gone, (void *)0, NULL);
    b = connwatch_add(w, sv[0], on_gone, (void *)1, NULL); /* the same socket again */
    c = connwatch_add(w, sv[0], on_gone, (void *)2, NULL);
    ck_assert_int_ge(a, 0);
    ck_assert_int_ge(b, 0);
    ck_assert_int_ge(c, 0);
    connwatch_remove(w, c); /* removed before the close: never fires */
    close(sv[1]);
    wait_fired(0, 1);
    wait_fired(1, 1);
    connwatch_remove(w, a);
    connwatch_remove(w, b);
    ck_assert_int_eq(atomic_load(&fired[0]), 1);
    ck_assert_int_eq(atomic_load(&fired[1]), 1);
    ck_assert_int_eq(atomic_load(&fired[2]), 0);
    close(sv[0]);
    connwatch_free(w);
}
END_TEST

START_TEST(test_connwatch_finds_a_connection_by_its_addresses)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    int l = socket(AF_INET, SOCK_STREAM, 0), cl = socket(AF_INET, SOCK_STREAM, 0), srv;
    int server_port, client_port;

    ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(l, 1), 0);
    ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
    server_port = ntohs(sa.sin_port);
    ck_assert_int_eq(connect(cl, (struct sockaddr *)&sa, sizeof(sa)), 0);
    srv = accept(l, NULL, NULL);
    ck_assert_int_ge(srv, 0);
    sl = sizeof(sa);
    ck_assert_int_eq(getsockname(cl, (struct sockaddr *)&sa, &sl), 0);
    client_port = ntohs(sa.sin_port);
    /* The server's side of the connection: peer is the client's address and port. */
    ck_assert_int_eq(connwatch_find_socket("127.0.0.1", client_port, server_port), srv);
    ck_assert_int_eq(connwatch_find_socket("127.0.0.1", client_port, server_port), srv);
    ck_assert_int_eq(connwatch_find_socket("127.0.0.1", client_port + 1, server_port), -1);
    close(srv);
    /* A closed socket is not found either (the miss above replaced the thread's memory). */
    ck_assert_int_eq(connwatch_find_socket("127.0.0.1", client_port, server_port), -1);
    close(cl);
    close(l);
}
END_TEST

/* Opens a loopback connection: *srv is the server's side; returns the client's side. */
static int loopback_pair(int l, int server_port, int *srv, int *client_port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                             .sin_port = htons((uint16_t)server_port)};
    socklen_t sl = sizeof(sa);
    int cl = socket(AF_INET, SOCK_STREAM, 0);

    ck_assert_int_eq(connect(cl, (struct sockaddr *)&sa, sizeof(sa)), 0);
    *srv = accept(l, NULL, NULL);
    ck_assert_int_ge(*srv, 0);
    ck_assert_int_eq(getsockname(cl, (struct sockaddr *)&sa, &sl), 0);
    *client_port = ntohs(sa.sin_port);
    return cl;
}

START_TEST(test_connwatch_forgets_the_socket_of_a_closed_connection)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    int l = socket(AF_INET, SOCK_STREAM, 0), srv, srv2, cl, cl2, port, cport, cport2;

    ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(listen(l, 2), 0);
    ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
    port = ntohs(sa.sin_port);
    cl = loopback_pair(l, port, &srv, &cport);
    ck_assert_int_eq(connwatch_find_socket("127.0.0.1", cport, port), srv);
    /* The connection closes as civetweb closes one: the callback first, then the socket. */
    connwatch_forget_socket();
    close(srv);
    close(cl);
    ck_assert_int_eq(connwatch_find_socket("127.0.0.1", cport, port), -1);
    /* The next connection on this thread is found afresh, whatever number its socket has. */
    cl2 = loopback_pair(l, port, &srv2, &cport2);
    ck_assert_int_eq(connwatch_find_socket("127.0.0.1", cport2, port), srv2);
    ck_assert_int_eq(connwatch_find_socket("127.0.0.1", cport2, port), srv2);
    connwatch_forget_socket();
    close(srv2);
    close(cl2);
    close(l);
}
END_TEST

static Suite *connwatch_suite(void)
{
    Suite *s = suite_create("connwatch");
    TCase *tc = tcase_create("watch");

    tcase_add_test(tc, test_connwatch_close_fires_each_watch_once);
    tcase_add_test(tc, test_connwatch_finds_a_connection_by_its_addresses);
    tcase_add_test(tc, test_connwatch_forgets_the_socket_of_a_closed_connection);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(connwatch_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
