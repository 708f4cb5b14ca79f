/* tests/unit/test_netpolicy.c - the network policy's rules, matching, address classes and
 * registry URLs, and the egress proxy's request-head parser. */
#include "netpolicy.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"

static const struct {
    const char *text, *norm; /* norm NULL: refused */
    const char *why;         /* a part of the message when refused */
} rules[] = {
    {"Registry.NPMjs.org", "registry.npmjs.org", NULL},
    {"example.com.", "example.com", NULL},
    {"*.example.com", "*.example.com", NULL},
    {"*", "*", NULL},
    {"example.com:8443", "example.com:8443", NULL},
    {"10.0.0.5", "10.0.0.5", NULL},
    {"[::1]:8080", "[::1]:8080", NULL},
    {"localhost:5432", "localhost:5432", NULL},
    {"", NULL, "it is empty"},
    {"https://example.com/", NULL, "give a host, not a URL"},
    {"exa mple.com", NULL, "a host name has"},
    {"ex*ample.com", NULL, "'*' may only stand alone"},
    {"*.", NULL, "a host name"},
    {"example.com:0", NULL, "the port must be a number 1-65535"},
    {"example.com:99999", NULL, "the port must be"},
    {"example.com:", NULL, "the port must be"},
    {"::1", NULL, "write an IPv6 address in brackets"},
    {"[example.com]", NULL, "brackets hold an IPv6 address only"},
    {"[::1", NULL, "closing ']'"},
    {"-bad.com", NULL, "a host name"},
};

START_TEST(test_netpolicy_parse_rules)
{
    struct netpolicy_rule r;
    struct errinfo err;
    int rc;

    errinfo_clear(&err);
    rc = netpolicy_parse_rule(rules[_i].text, "--allow-domain", NETPOLICY_FROM_FLAG, &r, &err);
    if (rules[_i].norm) {
        ck_assert_msg(rc == 0, "%s: %s", rules[_i].text, err.msg);
        ck_assert_str_eq(r.text, rules[_i].norm);
    } else {
        ck_assert_int_eq(rc, -1);
        ck_assert_int_eq(err.kind, ERR_INVALID);
        ck_assert_msg(strstr(err.msg, rules[_i].why), "%s", err.msg);
        ck_assert_msg(strstr(err.msg, "--allow-domain: invalid allow-list entry"), "%s", err.msg);
    }
}
END_TEST

static void add(struct netpolicy *p, const char *text)
{
    struct netpolicy_rule r;
    ck_assert_int_eq(netpolicy_parse_rule(text, "t", NETPOLICY_FROM_CONFIG, &r, NULL), 0);
    ck_assert_int_eq(netpolicy_add(p, &r, NULL), 0);
}

static const struct {
    const char *host;
    unsigned port;
    const char *rule; /* NULL: denied */
} matches[] = {
    {"registry.npmjs.org", 443, "registry.npmjs.org"},
    {"REGISTRY.npmjs.org.", 80, "registry.npmjs.org"},
    {"registry.npmjs.org", 8080, NULL},
    {"evil-registry.npmjs.org", 443, NULL},
    {"a.example.com", 443, "*.example.com"},
    {"a.b.example.com", 443, "*.example.com"},
    {"example.com", 443, NULL}, /* *.example.com is below it only */
    {"notexample.com", 443, NULL},
    {"db.internal", 5432, "db.internal:5432"},
    {"db.internal", 443, NULL},
    {"10.0.0.5", 80, "10.0.0.5"},
    {"10.0.0.6", 80, NULL},
    {"::1", 8080, "[::1]:8080"},
    {"0:0::1", 8080, "[::1]:8080"},
};

START_TEST(test_netpolicy_match)
{
    struct netpolicy *p = calloc(1, sizeof(*p));
    const struct netpolicy_rule *r;

    add(p, "registry.npmjs.org");
    add(p, "*.example.com");
    add(p, "db.internal:5432");
    add(p, "10.0.0.5");
    add(p, "[::1]:8080");
    add(p, "registry.npmjs.org"); /* a duplicate is dropped */
    ck_assert_uint_eq(p->n, 5);
    r = netpolicy_match(p, matches[_i].host, (uint16_t)matches[_i].port);
    if (matches[_i].rule) {
        ck_assert_msg(r != NULL, "%s:%u denied", matches[_i].host, matches[_i].port);
        ck_assert_str_eq(r->text, matches[_i].rule);
    } else {
        ck_assert_msg(r == NULL, "%s:%u allowed by %s", matches[_i].host, matches[_i].port,
                      r ? r->text : "");
    }
    free(p);
}
END_TEST

START_TEST(test_netpolicy_star_allows_names_not_ip_literals)
{
    struct netpolicy *p = calloc(1, sizeof(*p));

    add(p, "*");
    ck_assert_ptr_nonnull(netpolicy_match(p, "anything.example", 443));
    ck_assert_ptr_nonnull(netpolicy_match(p, "localhost", 80));
    ck_assert_ptr_null(netpolicy_match(p, "localhost", 22));
    ck_assert_ptr_null(netpolicy_match(p, "127.0.0.1", 80));
    free(p);
}
END_TEST

static enum netpolicy_addr classify(const char *ip)
{
    struct sockaddr_storage ss;

    memset(&ss, 0, sizeof(ss));
    if (inet_pton(AF_INET, ip, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
        ss.ss_family = AF_INET;
    } else {
        ck_assert_int_eq(inet_pton(AF_INET6, ip, &((struct sockaddr_in6 *)&ss)->sin6_addr), 1);
        ss.ss_family = AF_INET6;
    }
    return netpolicy_classify((struct sockaddr *)&ss);
}

START_TEST(test_netpolicy_classify)
{
    ck_assert_int_eq(classify("127.0.0.1"), NETPOLICY_ADDR_LOOPBACK);
    ck_assert_int_eq(classify("127.8.9.10"), NETPOLICY_ADDR_LOOPBACK);
    ck_assert_int_eq(classify("::1"), NETPOLICY_ADDR_LOOPBACK);
    ck_assert_int_eq(classify("::ffff:127.0.0.1"), NETPOLICY_ADDR_LOOPBACK);
    ck_assert_int_eq(classify("169.254.169.254"), NETPOLICY_ADDR_LINK_LOCAL);
    ck_assert_int_eq(classify("fe80::1"), NETPOLICY_ADDR_LINK_LOCAL);
    ck_assert_int_eq(classify("10.1.2.3"), NETPOLICY_ADDR_PRIVATE);
    ck_assert_int_eq(classify("172.16.0.1"), NETPOLICY_ADDR_PRIVATE);
    ck_assert_int_eq(classify("172.31.255.255"), NETPOLICY_ADDR_PRIVATE);
    ck_assert_int_eq(classify("172.32.0.1"), NETPOLICY_ADDR_PUBLIC);
    ck_assert_int_eq(classify("192.168.1.1"), NETPOLICY_ADDR_PRIVATE);
    ck_assert_int_eq(classify("100.64.0.1"), NETPOLICY_ADDR_PRIVATE);
    ck_assert_int_eq(classify("fd00::1"), NETPOLICY_ADDR_PRIVATE);
    ck_assert_int_eq(classify("::ffff:10.0.0.1"), NETPOLICY_ADDR_PRIVATE);
    ck_assert_int_eq(classify("64:ff9b::7f00:1"), NETPOLICY_ADDR_LOOPBACK);
    ck_assert_int_eq(classify("2002:7f00:1::"), NETPOLICY_ADDR_LOOPBACK);
    ck_assert_int_eq(classify("0.0.0.0"), NETPOLICY_ADDR_UNSPECIFIED);
    ck_assert_int_eq(classify("::"), NETPOLICY_ADDR_UNSPECIFIED);
    ck_assert_int_eq(classify("224.0.0.1"), NETPOLICY_ADDR_UNSPECIFIED);
    ck_assert_int_eq(classify("255.255.255.255"), NETPOLICY_ADDR_UNSPECIFIED);
    ck_assert_int_eq(classify("93.184.216.34"), NETPOLICY_ADDR_PUBLIC);
    ck_assert_int_eq(classify("2606:4700::1111"), NETPOLICY_ADDR_PUBLIC);
}
END_TEST

START_TEST(test_netpolicy_rule_from_url)
{
    char out[300];

    ck_assert_int_eq(netpolicy_rule_from_url("https://registry.npmjs.org/", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "registry.npmjs.org");
    ck_assert_int_eq(netpolicy_rule_from_url("http://10.0.0.5:4873/npm/", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "10.0.0.5:4873");
    ck_assert_int_eq(
        netpolicy_rule_from_url("https://u:secret@mirror.test:443/x", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "mirror.test");
    ck_assert_int_eq(netpolicy_rule_from_url("https://pypi.org/simple", out, sizeof(out)), 0);
    ck_assert_str_eq(out, "pypi.org");
    ck_assert_int_eq(netpolicy_rule_from_url("file:///opt/wheels", out, sizeof(out)), -1);
    ck_assert_int_eq(netpolicy_rule_from_url("https:///", out, sizeof(out)), -1);
}
END_TEST

START_TEST(test_netpolicy_modes)
{
    ck_assert_int_eq(netpolicy_parse_mode("proxy"), NETPOLICY_PROXY);
    ck_assert_int_eq(netpolicy_parse_mode("none"), NETPOLICY_NONE);
    ck_assert_int_eq(netpolicy_parse_mode("full"), NETPOLICY_FULL);
    ck_assert_int_eq(netpolicy_parse_mode("on"), -1);
}
END_TEST

/* ---- the egress proxy's request head ---- */

static const struct {
    const char *head;
    bool ok, connect;
    const char *host;
    unsigned port;
    const char *target; /* origin-form target of a plain request */
} heads[] = {
    {"CONNECT registry.npmjs.org:443 HTTP/1.1\r\nHost: x\r\n\r\n", true, true, "registry.npmjs.org",
     443, NULL},
    {"CONNECT [::1]:8080 HTTP/1.1\r\n\r\n", true, true, "::1", 8080, NULL},
    {"GET http://example.com/a/b?c=1 HTTP/1.1\r\n\r\n", true, false, "example.com", 80, "/a/b?c=1"},
    {"GET http://example.com:8080 HTTP/1.0\r\n\r\n", true, false, "example.com", 8080, ""},
    {"GET http://example.com?x HTTP/1.1\r\n\r\n", true, false, "example.com", 80, "?x"},
    {"CONNECT example.com HTTP/1.1\r\n\r\n", false, false, NULL, 0, NULL},
    {"CONNECT example.com:0 HTTP/1.1\r\n\r\n", false, false, NULL, 0, NULL},
    {"CONNECT example.com:70000 HTTP/1.1\r\n\r\n", false, false, NULL, 0, NULL},
    {"GET /path HTTP/1.1\r\n\r\n", false, false, NULL, 0, NULL},
    {"GET https://example.com/ HTTP/1.1\r\n\r\n", false, false, NULL, 0, NULL},
    {"garbage\r\n\r\n", false, false, NULL, 0, NULL},
    {"\x16\x03\x01\x02\x00\r\n\r\n", false, false, NULL, 0, NULL},
    {"get http://example.com/ HTTP/1.1\r\n\r\n", false, false, NULL, 0, NULL},
    {"GET http://user@example.com/ HTTP/1.1\r\n\r\n", false, false, NULL, 0, NULL},
    {"GET http://example.com/ SPDY/3\r\n\r\n", false, false, NULL, 0, NULL},
};

START_TEST(test_egress_parse_head)
{
    char host[256], why[200];
    bool connect = false;
    uint16_t port = 0;
    size_t off = 0, len = 0;
    const char *h = heads[_i].head;
    int rc = egress_parse_head(h, strlen(h), &connect, host, sizeof(host), &port, &off, &len, why,
                               sizeof(why));

    if (!heads[_i].ok) {
        ck_assert_msg(rc == -1, "accepted: %s", h);
        ck_assert(why[0]);
        return;
    }
    ck_assert_msg(rc == 0, "%s: %s", h, why);
    ck_assert_int_eq(connect, heads[_i].connect);
    ck_assert_str_eq(host, heads[_i].host);
    ck_assert_uint_eq(port, heads[_i].port);
    if (heads[_i].target) {
        ck_assert_uint_eq(len, strlen(heads[_i].target));
        ck_assert(memcmp(h + off, heads[_i].target, len) == 0);
    }
}
END_TEST

static Suite *netpolicy_suite(void)
{
    Suite *s = suite_create("netpolicy");
    TCase *tc = tcase_create("rules");

    tcase_add_loop_test(tc, test_netpolicy_parse_rules, 0, (int)(sizeof(rules) / sizeof(rules[0])));
    tcase_add_loop_test(tc, test_netpolicy_match, 0, (int)(sizeof(matches) / sizeof(matches[0])));
    tcase_add_test(tc, test_netpolicy_star_allows_names_not_ip_literals);
    tcase_add_test(tc, test_netpolicy_classify);
    tcase_add_test(tc, test_netpolicy_rule_from_url);
    tcase_add_test(tc, test_netpolicy_modes);
    suite_add_tcase(s, tc);
    tc = tcase_create("egress_head");
    tcase_add_loop_test(tc, test_egress_parse_head, 0, (int)(sizeof(heads) / sizeof(heads[0])));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(netpolicy_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
