/* daemon/netio.c - socket plumbing for egress.c and portfwd.c (see netio.h). */
#include "netio.h"
#include "clocks.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define RELAY_BUF (64u << 10)

int netio_write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

ssize_t netio_read_head(int fd, char *buf, size_t cap, int timeout_ms, size_t *got,
                        const char **why)
{
    long long end = clocks_mono_ms() + timeout_ms;

    *got = 0;
    *why = NULL;
    for (;;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        long long left = end - clocks_mono_ms();
        char *eoh;
        ssize_t r;

        buf[*got] = '\0';
        eoh = strstr(buf, "\r\n\r\n");
        if (eoh)
            return (ssize_t)(eoh + 4 - buf);
        if (memchr(buf, '\0', *got)) {
            *why = "the request contains a NUL byte";
            return -1;
        }
        if (*got >= cap - 1) {
            *why = "the request head is longer than 16 KiB";
            return -1;
        }
        if (left <= 0 || poll(&pf, 1, (int)left) <= 0) {
            *why = "no complete request head within the time allowed";
            return -1;
        }
        r = recv(fd, buf + *got, cap - 1 - *got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        *got += (size_t)r;
    }
}

void netio_relay(int a, int b)
{
    char *buf = malloc(RELAY_BUF);
    bool open_a = true, open_b = true;
    int one = 1;

    /* Each read is passed on at once: Nagle's algorithm would hold a small write (a TLS record,
     * an HTTP answer) back until the previous one is acknowledged. */
    setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

    while (buf && (open_a || open_b)) {
        struct pollfd pf[2] = {{.fd = open_a ? a : -1, .events = POLLIN},
                               {.fd = open_b ? b : -1, .events = POLLIN}};

        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            int from = i ? b : a, to = i ? a : b;
            ssize_t r;

            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            r = recv(from, buf, RELAY_BUF, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r > 0 && netio_write_all(to, buf, (size_t)r) == 0)
                continue;
            if (r != 0) { /* an error either way: end both directions */
                open_a = open_b = false;
                break;
            }
            shutdown(to, SHUT_WR); /* end of stream: pass the half-close on */
            if (i)
                open_b = false;
            else
                open_a = false;
        }
    }
    free(buf);
}
