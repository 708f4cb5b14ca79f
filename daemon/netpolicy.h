/* daemon/netpolicy.h - the sandbox's network policy as data: the mode, the domain allow list and
 * the address classes the egress proxy refuses.
 *
 * A rule is "host", "*.domain", "*" (any public host), or an IP literal, each with an optional
 * ":port" ("[v6]:port" for IPv6). Without a port a rule allows 80 and 443. "*.example.com"
 * matches every name below example.com, not example.com itself. Names compare without case and
 * without a trailing dot.
 *
 * Everything here is pure (no I/O), so the unit test drives every path.
 * Thread-safety: a struct netpolicy is built before the egress proxy starts, then only read. */
#ifndef DAEMON_NETPOLICY_H
#define DAEMON_NETPOLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "errinfo.h"

#define NETPOLICY_RULES_MAX 128
#define NETPOLICY_HOST_MAX  253

enum netpolicy_mode {
    NETPOLICY_PROXY, /* own netns; out only through the egress proxy, by the allow list */
    NETPOLICY_NONE,  /* own netns; nothing leaves */
    NETPOLICY_FULL   /* the host's network (--allow-network) */
};

/* Where a rule came from, for /health and for messages. */
enum netpolicy_origin {
    NETPOLICY_FROM_FLAG,
    NETPOLICY_FROM_CONFIG,
    NETPOLICY_FROM_NPM,
    NETPOLICY_FROM_PIP
};

struct netpolicy_rule {
    char host[NETPOLICY_HOST_MAX + 1]; /* lower case; without "*." for a wildcard */
    bool wildcard;                     /* "*.host" (or "*" with host "") */
    bool ip;                           /* host is an IP literal */
    uint16_t port;                     /* 0 = 80 and 443 */
    enum netpolicy_origin origin;
    char text[NETPOLICY_HOST_MAX + 16]; /* as written (normalized), for messages */
};

struct netpolicy {
    enum netpolicy_mode mode;
    struct netpolicy_rule rules[NETPOLICY_RULES_MAX];
    size_t n;
};

/* "proxy", "none", "full" -> mode; -1 for anything else. */
int netpolicy_parse_mode(const char *text);
const char *netpolicy_mode_name(enum netpolicy_mode mode);
const char *netpolicy_origin_name(enum netpolicy_origin origin);

/* Parses one allow-list entry. src names it in messages ("--allow-domain",
 * "config.json: network.allow[2]"). ERR_INVALID says what was wrong and what is accepted. */
int netpolicy_parse_rule(const char *text, const char *src, enum netpolicy_origin origin,
                         struct netpolicy_rule *out, struct errinfo *err);

/* Adds a rule (a duplicate of one already there is dropped). ERR_TOO_LARGE past
 * NETPOLICY_RULES_MAX. */
int netpolicy_add(struct netpolicy *p, const struct netpolicy_rule *r, struct errinfo *err);

/* The first rule that allows host:port, or NULL. host as the client sent it (any case, an
 * IPv6 literal without brackets). */
const struct netpolicy_rule *netpolicy_match(const struct netpolicy *p, const char *host,
                                             uint16_t port);

/* True when host is an IPv4 or IPv6 literal (no brackets). */
bool netpolicy_is_ip(const char *host);

enum netpolicy_addr {
    NETPOLICY_ADDR_PUBLIC,
    NETPOLICY_ADDR_LOOPBACK,
    NETPOLICY_ADDR_LINK_LOCAL,  /* incl. 169.254.169.254, the cloud metadata address */
    NETPOLICY_ADDR_PRIVATE,     /* RFC 1918, CGNAT 100.64/10, IPv6 ULA fc00::/7 */
    NETPOLICY_ADDR_UNSPECIFIED, /* 0.0.0.0/8, ::, multicast, broadcast, reserved */
};

/* The class of an AF_INET or AF_INET6 address (IPv4-mapped IPv6 as its IPv4). */
enum netpolicy_addr netpolicy_classify(const struct sockaddr *sa);
const char *netpolicy_addr_name(enum netpolicy_addr c);

/* The host and port of a registry URL ("https://registry.npmjs.org/" -> "registry.npmjs.org",
 * 0; "http://10.0.0.5:4873/npm/" -> "10.0.0.5", 4873), as a rule text "host" or "host:port"
 * into out. -1 when url is not http(s)://host... */
int netpolicy_rule_from_url(const char *url, char *out, size_t outsz);

#endif /* DAEMON_NETPOLICY_H */
