/* daemon/netpolicy.c - allow-list rules and address classes (see netpolicy.h). */
#include "netpolicy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int netpolicy_parse_mode(const char *text)
{
    if (strcmp(text, "proxy") == 0)
        return NETPOLICY_PROXY;
    if (strcmp(text, "none") == 0)
        return NETPOLICY_NONE;
    if (strcmp(text, "full") == 0)
        return NETPOLICY_FULL;
    return -1;
}

const char *netpolicy_mode_name(enum netpolicy_mode mode)
{
    switch (mode) {
    case NETPOLICY_PROXY:
        return "proxy";
    case NETPOLICY_NONE:
        return "none";
    case NETPOLICY_FULL:
        return "full";
    }
    return "?";
}

const char *netpolicy_origin_name(enum netpolicy_origin origin)
{
    switch (origin) {
    case NETPOLICY_FROM_FLAG:
        return "--allow-domain";
    case NETPOLICY_FROM_CONFIG:
        return "config network.allow";
    case NETPOLICY_FROM_NPM:
        return "npm config";
    case NETPOLICY_FROM_PIP:
        return "pip config";
    }
    return "?";
}

bool netpolicy_is_ip(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* A DNS name: labels of [a-z0-9-_] (1-63 bytes, no leading or trailing '-'), dot-separated. */
static bool name_ok(const char *s)
{
    size_t label = 0;

    if (!*s)
        return false;
    for (const char *p = s;; p++) {
        if (*p == '.' || *p == '\0') {
            if (label == 0 || label > 63 || p[-1] == '-')
                return false;
            if (*p == '\0')
                return true;
            label = 0;
            continue;
        }
        if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '_'))
            return false;
        if (label == 0 && *p == '-')
            return false;
        label++;
    }
}

static void lower_copy(char *dst, size_t dstsz, const char *src, size_t n)
{
    size_t i;

    for (i = 0; i < n && i + 1 < dstsz; i++)
        dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = '\0';
    if (i > 1 && dst[i - 1] == '.')
        dst[i - 1] = '\0'; /* "example.com." is example.com */
}

static int bad(struct errinfo *err, const char *src, const char *text, const char *why)
{
    errinfo_set(err, ERR_INVALID,
                "%s: invalid allow-list entry \"%.80s\": %s; expected a host name (example.com), "
                "*.domain, *, or an IP address, each with an optional :port (1-65535)",
                src, text, why);
    return -1;
}

int netpolicy_parse_rule(const char *text, const char *src, enum netpolicy_origin origin,
                         struct netpolicy_rule *out, struct errinfo *err)
{
    const char *host = text, *colon = NULL, *end;
    size_t hlen;

    memset(out, 0, sizeof(*out));
    out->origin = origin;
    if (!text[0])
        return bad(err, src, text, "it is empty");
    if (strstr(text, "://") || strchr(text, '/'))
        return bad(err, src, text, "give a host, not a URL");
    if (text[0] == '[') {
        end = strchr(text, ']');
        if (!end)
            return bad(err, src, text, "an IPv6 address needs its closing ']'");
        host = text + 1;
        hlen = (size_t)(end - host);
        if (end[1] == ':')
            colon = end + 1;
        else if (end[1])
            return bad(err, src, text, "only :port may follow ']'");
    } else {
        colon = strrchr(text, ':');
        if (colon && strchr(text, ':') != colon)
            return bad(err, src, text, "write an IPv6 address in brackets ([::1]:8080)");
        hlen = colon ? (size_t)(colon - text) : strlen(text);
    }
    if (colon) {
        char *e;
        long port = strtol(colon + 1, &e, 10);

        if (!colon[1] || *e || port < 1 || port > 65535 || !isdigit((unsigned char)colon[1]))
            return bad(err, src, text, "the port must be a number 1-65535");
        out->port = (uint16_t)port;
    }
    if (hlen > NETPOLICY_HOST_MAX)
        return bad(err, src, text, "the host is longer than 253 bytes");
    if (hlen == 1 && host[0] == '*') {
        out->wildcard = true;
    } else if (hlen > 2 && host[0] == '*' && host[1] == '.') {
        out->wildcard = true;
        lower_copy(out->host, sizeof(out->host), host + 2, hlen - 2);
        if (!name_ok(out->host) || netpolicy_is_ip(out->host))
            return bad(err, src, text, "a wildcard must be *.<domain name>");
    } else {
        lower_copy(out->host, sizeof(out->host), host, hlen);
        out->ip = netpolicy_is_ip(out->host);
        if (text[0] == '[' && !out->ip)
            return bad(err, src, text, "brackets hold an IPv6 address only");
        if (!out->ip && !name_ok(out->host))
            return bad(err, src, text,
                       strchr(out->host, '*')   ? "'*' may only stand alone or start '*.'"
                       : strchr(out->host, '/') ? "give a host, not a URL"
                                                : "a host name has letters, digits, '-' and dots");
    }
    if (out->wildcard)
        snprintf(out->text, sizeof(out->text), "%s%s", out->host[0] ? "*." : "*", out->host);
    else if (strchr(out->host, ':'))
        snprintf(out->text, sizeof(out->text), "[%s]", out->host);
    else
        snprintf(out->text, sizeof(out->text), "%s", out->host);
    if (out->port) {
        size_t n = strlen(out->text);
        snprintf(out->text + n, sizeof(out->text) - n, ":%u", (unsigned)out->port);
    }
    return 0;
}

int netpolicy_add(struct netpolicy *p, const struct netpolicy_rule *r, struct errinfo *err)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->rules[i].text, r->text) == 0)
            return 0;
    if (p->n >= NETPOLICY_RULES_MAX) {
        errinfo_set(err, ERR_TOO_LARGE, "the network allow list holds at most %d entries",
                    NETPOLICY_RULES_MAX);
        return -1;
    }
    p->rules[p->n++] = *r;
    return 0;
}

static bool port_ok(const struct netpolicy_rule *r, uint16_t port)
{
    return r->port ? r->port == port : port == 80 || port == 443;
}

/* Canonical text of an IP literal, so "::0001" and "::1" compare equal. */
static bool ip_canon(const char *host, char *out, size_t outsz)
{
    unsigned char buf[sizeof(struct in6_addr)];

    if (inet_pton(AF_INET, host, buf) == 1)
        return inet_ntop(AF_INET, buf, out, (socklen_t)outsz) != NULL;
    if (inet_pton(AF_INET6, host, buf) == 1)
        return inet_ntop(AF_INET6, buf, out, (socklen_t)outsz) != NULL;
    return false;
}

const struct netpolicy_rule *netpolicy_match(const struct netpolicy *p, const char *host,
                                             uint16_t port)
{
    char h[NETPOLICY_HOST_MAX + 1], ip[INET6_ADDRSTRLEN];
    bool is_ip;
    size_t hl;

    lower_copy(h, sizeof(h), host, strlen(host));
    is_ip = ip_canon(h, ip, sizeof(ip));
    hl = strlen(h);
    for (size_t i = 0; i < p->n; i++) {
        const struct netpolicy_rule *r = &p->rules[i];
        char rip[INET6_ADDRSTRLEN];

        if (!port_ok(r, port))
            continue;
        if (is_ip) {
            /* An IP literal is allowed only by a rule that names it. */
            if (r->ip && ip_canon(r->host, rip, sizeof(rip)) && strcmp(rip, ip) == 0)
                return r;
            continue;
        }
        if (r->ip)
            continue;
        if (r->wildcard && !r->host[0])
            return r;
        if (r->wildcard) {
            size_t rl = strlen(r->host);
            if (hl > rl + 1 && h[hl - rl - 1] == '.' && strcmp(h + hl - rl, r->host) == 0)
                return r;
            continue;
        }
        if (strcmp(h, r->host) == 0)
            return r;
    }
    return NULL;
}

static enum netpolicy_addr classify4(uint32_t a)
{
    if ((a >> 24) == 127)
        return NETPOLICY_ADDR_LOOPBACK;
    if ((a >> 16) == 0xa9fe) /* 169.254/16 */
        return NETPOLICY_ADDR_LINK_LOCAL;
    if ((a >> 24) == 10 || (a >> 20) == 0xac1 /* 172.16/12 */ || (a >> 16) == 0xc0a8 ||
        (a >> 22) == (100u << 2 | 1) /* 100.64/10 */)
        return NETPOLICY_ADDR_PRIVATE;
    if ((a >> 24) == 0 || (a >> 28) >= 0xe) /* 0/8, multicast, 240/4, broadcast */
        return NETPOLICY_ADDR_UNSPECIFIED;
    return NETPOLICY_ADDR_PUBLIC;
}

enum netpolicy_addr netpolicy_classify(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return classify4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        const unsigned char *b = a->s6_addr;

        if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
            uint32_t v4 =
                (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 | b[15];
            if (IN6_IS_ADDR_V4MAPPED(a) || v4 > 1)
                return classify4(v4);
        }
        if (IN6_IS_ADDR_LOOPBACK(a))
            return NETPOLICY_ADDR_LOOPBACK;
        if (IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_MULTICAST(a))
            return NETPOLICY_ADDR_UNSPECIFIED;
        if (IN6_IS_ADDR_LINKLOCAL(a) || IN6_IS_ADDR_SITELOCAL(a))
            return NETPOLICY_ADDR_LINK_LOCAL;
        if ((b[0] & 0xfe) == 0xfc)
            return NETPOLICY_ADDR_PRIVATE;
        if (b[0] == 0x20 && b[1] == 0x02) /* 6to4 2002:V4ADDR::/48 */
            return classify4((uint32_t)b[2] << 24 | (uint32_t)b[3] << 16 | (uint32_t)b[4] << 8 |
                             b[5]);
        if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) /* NAT64 64:ff9b::/96 */
            return classify4((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 | (uint32_t)b[14] << 8 |
                             b[15]);
        return NETPOLICY_ADDR_PUBLIC;
    }
    return NETPOLICY_ADDR_UNSPECIFIED;
}

const char *netpolicy_addr_name(enum netpolicy_addr c)
{
    switch (c) {
    case NETPOLICY_ADDR_PUBLIC:
        return "public";
    case NETPOLICY_ADDR_LOOPBACK:
        return "loopback";
    case NETPOLICY_ADDR_LINK_LOCAL:
        return "link-local";
    case NETPOLICY_ADDR_PRIVATE:
        return "private";
    case NETPOLICY_ADDR_UNSPECIFIED:
        return "unspecified, multicast or reserved";
    }
    return "?";
}

int netpolicy_rule_from_url(const char *url, char *out, size_t outsz)
{
    const char *p, *end;
    size_t n;

    if (strncmp(url, "https://", 8) == 0)
        p = url + 8;
    else if (strncmp(url, "http://", 7) == 0)
        p = url + 7;
    else
        return -1;
    end = p + strcspn(p, "/?#");
    /* Credentials in the URL (user:pass@host) are never copied. */
    for (const char *q = p; q < end; q++)
        if (*q == '@')
            p = q + 1;
    n = (size_t)(end - p);
    if (n == 0 || n >= outsz)
        return -1;
    memcpy(out, p, n);
    out[n] = '\0';
    /* The scheme's own port is what a rule without a port allows. */
    if (n > 4 && (strcmp(out + n - 4, ":443") == 0 || (n > 3 && strcmp(out + n - 3, ":80") == 0)))
        out[strrchr(out, ':') - out] = '\0';
    return 0;
}
