/* tests/unit/test_vfs_search.c - vfs_search: literal, case-insensitive and regex matching,
 * filters, caps, binary files, output shaping (UTF-8, long lines), order, and symlinks.
 *
 * Each test gets a fresh mkdtemp base holding the workspace root "ws" and, beside it, a
 * directory "outside" whose file contains text that must never show up in a result. */
#include "vfs.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "vfs_int.h"

static char base[256];
static struct vfs *v;
static struct errinfo err;
static struct vfs_search_result res;

static const char *hp(const char *rel)
{
    return testutil_path(base, rel);
}

static void put(const char *rel, const char *text)
{
    testutil_put(hp(rel), text, strlen(text));
}

static void put_bytes(const char *rel, const void *data, size_t len)
{
    testutil_put(hp(rel), data, len);
}

static void mkd(const char *rel)
{
    testutil_mkdir(hp(rel));
}

static void setup(void)
{
    testutil_mkdtemp(base, sizeof(base), "test_vfs_search-");
    mkd("ws");
    mkd("outside");
    put("outside/secret.txt", "needle from outside\n");
    errinfo_clear(&err);
    memset(&res, 0, sizeof(res));
    v = vfs_open(hp("ws"), NULL, &err);
    ck_assert_msg(v != NULL, "vfs_open: %s", err.msg);
}

static void teardown(void)
{
    vfs_search_result_cleanup(&res);
    vfs_free(v);
    testutil_rm_rf(base);
}

/* Runs a search that must succeed; the result is in res. */
static void run(struct vfs_search_opts o)
{
    vfs_search_result_cleanup(&res);
    ck_assert_msg(vfs_search(v, &o, &res, &err) == 0, "search failed: %s", err.msg);
    ck_assert_ptr_nonnull(res.text);
    ck_assert_uint_eq(strlen(res.text), res.len);
}

/* ---- matching ---- */

START_TEST(test_vfs_search_literal)
{
    put("ws/a.txt", "first line\nhello world\nnothing\nsay hello\n");
    run((struct vfs_search_opts){.query = "hello", .case_sensitive = true});
    ck_assert_str_eq(res.text, "/a.txt:2: hello world\n/a.txt:4: say hello\n");
    ck_assert_uint_eq(res.matches, 2);
    ck_assert_uint_eq(res.files_scanned, 1);
    ck_assert(!res.truncated);

    /* One report per line, even with several hits on it; no trailing newline needed. */
    put("ws/a.txt", "x\nhello hello hello");
    run((struct vfs_search_opts){.query = "hello", .case_sensitive = true});
    ck_assert_str_eq(res.text, "/a.txt:2: hello hello hello\n");

    run((struct vfs_search_opts){.query = "absent", .case_sensitive = true});
    ck_assert_str_eq(res.text, "");
    ck_assert_uint_eq(res.matches, 0);
}
END_TEST

START_TEST(test_vfs_search_case_insensitive)
{
    /* The hits sit at varied offsets so both the word-at-a-time fold and its tail run. */
    put("ws/c.txt", "HELLO\nxx Hello\nabcdefghijk hElLo!\nhelo\nhello\nHELLOWORLD_HELLO_123\n");
    run((struct vfs_search_opts){.query = "hello", .case_sensitive = false});
    ck_assert_str_eq(res.text, "/c.txt:1: HELLO\n/c.txt:2: xx Hello\n"
                               "/c.txt:3: abcdefghijk hElLo!\n/c.txt:5: hello\n"
                               "/c.txt:6: HELLOWORLD_HELLO_123\n");
    run((struct vfs_search_opts){.query = "HeLLo", .case_sensitive = true});
    ck_assert_uint_eq(res.matches, 0);
    run((struct vfs_search_opts){.query = "_123", .case_sensitive = false});
    ck_assert_str_eq(res.text, "/c.txt:6: HELLOWORLD_HELLO_123\n");
    /* The bytes next to 'A'..'Z' ('@', '[') and 'a'..'z' ('`', '{') do not fold; the first
     * eight bytes go through the word-at-a-time fold, the rest through the byte loop. */
    put("ws/c.txt", "0123x@x[y`y{\n");
    run((struct vfs_search_opts){.query = "X@X[", .case_sensitive = false});
    ck_assert_uint_eq(res.matches, 1);
    run((struct vfs_search_opts){.query = "X`X{", .case_sensitive = false});
    ck_assert_uint_eq(res.matches, 0);
    run((struct vfs_search_opts){.query = "Y`Y{", .case_sensitive = false});
    ck_assert_uint_eq(res.matches, 1);
    run((struct vfs_search_opts){.query = "y@y[", .case_sensitive = false});
    ck_assert_uint_eq(res.matches, 0);
    put("ws/c.txt", "AZAZAZAZ\n");
    run((struct vfs_search_opts){.query = "azazazaz", .case_sensitive = false});
    ck_assert_uint_eq(res.matches, 1);
}
END_TEST

START_TEST(test_vfs_search_regex)
{
    put("ws/r.c", "foobar\nfooooobaz\nfobar x\nbar\nmutex_lock(&m);\nspin_lock(&s);\n"
                  "color\ncolour\nxxyz\nx.txt\nxatxt\nEND\n");
    run((struct vfs_search_opts){.query = "^fo+ba[rz]$", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/r.c:1: foobar\n/r.c:2: fooooobaz\n");
    run((struct vfs_search_opts){.query = "[a-z]+_lock\\(", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/r.c:5: mutex_lock(&m);\n/r.c:6: spin_lock(&s);\n");
    /* Optional parts must not become required in the literal prefilter. */
    run((struct vfs_search_opts){.query = "colou?r", .regex = true, .case_sensitive = true});
    ck_assert_uint_eq(res.matches, 2);
    run((struct vfs_search_opts){.query = "(foo)?bar$", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/r.c:1: foobar\n/r.c:4: bar\n");
    run((struct vfs_search_opts){.query = "x{2}yz", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/r.c:9: xxyz\n");
    run((struct vfs_search_opts){.query = "x\\.txt", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/r.c:10: x.txt\n");
    run((struct vfs_search_opts){.query = "spin|mutex", .regex = true, .case_sensitive = true});
    ck_assert_uint_eq(res.matches, 2);
    /* Alternatives: each one's literal is a candidate (in any order of appearance), an
     * alternative without a usable literal turns the prefilter off, and a group is opaque. */
    run((struct vfs_search_opts){.query = "xxyz|colou?r", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/r.c:7: color\n/r.c:8: colour\n/r.c:9: xxyz\n");
    run((struct vfs_search_opts){.query = "END|q", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/r.c:12: END\n");
    run((struct vfs_search_opts){.query = "SPIN_|mutex_", .regex = true});
    ck_assert_uint_eq(res.matches, 2);
    run((struct vfs_search_opts){
        .query = "(spin|mutex)_lock", .regex = true, .case_sensitive = true});
    ck_assert_uint_eq(res.matches, 2);
    run((struct vfs_search_opts){.query = "^end$", .regex = true, .case_sensitive = false});
    ck_assert_str_eq(res.text, "/r.c:12: END\n");
    run((struct vfs_search_opts){.query = "MUTEX_LOCK\\(", .regex = true});
    ck_assert_str_eq(res.text, "/r.c:5: mutex_lock(&m);\n");
    /* A regex without metacharacters behaves as the literal. */
    run((struct vfs_search_opts){.query = "colour", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/r.c:8: colour\n");
}
END_TEST

START_TEST(test_vfs_search_bad_regex)
{
    struct vfs_search_opts o = {.query = "a(b", .regex = true, .case_sensitive = true};

    put("ws/a.txt", "a(b\n");
    ck_assert_int_eq(vfs_search(v, &o, &res, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "bad regex"));
    ck_assert_ptr_null(res.text);
    /* As a literal, the same text is fine. */
    o.regex = false;
    run(o);
    ck_assert_uint_eq(res.matches, 1);
}
END_TEST

/* PCRE2: Perl classes, assertions and lazy repeats work (glibc's regex silently matched
 * nothing for \\d+). */
START_TEST(test_vfs_search_perl_syntax)
{
    put("ws/p.txt", "no digits here\nport 8080\nfoobar\nfoobaz\na  b\nword wordy\n<a><b>\n");
    run((struct vfs_search_opts){.query = "\\d+", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/p.txt:2: port 8080\n");
    run((struct vfs_search_opts){.query = "foo(?=bar)", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/p.txt:3: foobar\n");
    run((struct vfs_search_opts){.query = "a\\s{2}b", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/p.txt:5: a  b\n");
    run((struct vfs_search_opts){.query = "\\bword\\b", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/p.txt:6: word wordy\n");
    run((struct vfs_search_opts){.query = "<.+?>", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/p.txt:7: <a><b>\n");
    /* An inline option: no literal prefilter may assume case. */
    run((struct vfs_search_opts){.query = "(?i)FOOBAZ", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/p.txt:4: foobaz\n");
    /* A match of \\s+ that would run into the next line counts for the line alone. */
    run((struct vfs_search_opts){.query = "here\\s+port", .regex = true, .case_sensitive = true});
    ck_assert_uint_eq(res.matches, 0);
}
END_TEST

/* The literal prefilter reads PCRE2's escapes and classes right: a literal it wrongly required
 * would hide these lines. */
START_TEST(test_vfs_search_prefilter_reads_pcre)
{
    put("ws/e.txt", "A4243\n]yz\nxyz\na.b\naxb\n\xE2\x84\xAA"
                    "elvin\n\xC5\xBFtop\nab:]cde\n");
    run((struct vfs_search_opts){.query = "\\x414243", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/e.txt:1: A4243\n");
    run((struct vfs_search_opts){.query = "[\\]x]yz", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/e.txt:2: ]yz\n/e.txt:3: xyz\n");
    run((struct vfs_search_opts){.query = "\\Qa.b\\E", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/e.txt:4: a.b\n");
    /* "[[:a]" is the class of '[', ':' and 'a' (a "]" comes before any ":]"), so the '|' after
     * it is a top-level alternative: "abc" is not required. */
    run((struct vfs_search_opts){
        .query = "abc[[:a]x|ab:]cde", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/e.txt:8: ab:]cde\n");
    /* "\\E" at a class's start is nothing, so the ']' after it is a member, not the end. */
    run((struct vfs_search_opts){.query = "[\\E]x]yz", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/e.txt:2: ]yz\n/e.txt:3: xyz\n");
    run((struct vfs_search_opts){
        .query = "[\\Q\\E^\\E]a]yz", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/e.txt:3: xyz\n");
    /* A lone "\\E" is nothing, so the '?' after it makes the last '3' optional: "A42433" is
     * not required. */
    run((struct vfs_search_opts){.query = "A42433\\E?$", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/e.txt:1: A4243\n");
    /* "\\c]" is one character (0x1d): its ']' does not end the class. */
    run((struct vfs_search_opts){.query = "[\\c]x]yz", .regex = true, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/e.txt:3: xyz\n");
    /* Caseless in UTF mode k matches the Kelvin sign and s the long s. */
    run((struct vfs_search_opts){.query = "kelvi.", .regex = true, .case_sensitive = false});
    ck_assert_str_eq(res.text, "/e.txt:6: \xE2\x84\xAA"
                               "elvin\n");
    run((struct vfs_search_opts){.query = "stop$", .regex = true, .case_sensitive = false});
    ck_assert_str_eq(res.text, "/e.txt:7: \xC5\xBFtop\n");
}
END_TEST

/* The literal of a regex (one alternative). */
static const char *literal_of(const char *re)
{
    static char best[64], cur[64];
    size_t n = vfs_regex_literal(re, false, best, cur);

    best[n] = '\0';
    return best;
}

/* A '{' that a PCRE2 of 10.43 or later reads as a repeat ({,m}, spaces inside) makes the last
 * character optional whatever PCRE2 this build links (10.42 reads these as literal braces, and
 * a shorter literal is still right); a '{' no PCRE2 takes for a repeat stays a literal. */
START_TEST(test_vfs_search_prefilter_repeats_of_any_pcre)
{
    ck_assert_str_eq(literal_of("xyzab{2}"), "xyza");
    ck_assert_str_eq(literal_of("xyzab{,2}"), "xyza");
    ck_assert_str_eq(literal_of("xyzab{ 1 , 2 }"), "xyza");
    ck_assert_str_eq(literal_of("xyzab{\t0}"), "xyza");
    ck_assert_str_eq(literal_of("ab{x}"), "ab{x}");
    ck_assert_str_eq(literal_of("ab{,}"), "ab{,}");
    ck_assert_str_eq(literal_of("ab{ }"), "ab{ }");
}
END_TEST

/* A catastrophic pattern ends the search with "pattern too complex" (the backtracking budget),
 * not after the minutes it would take: without the budget this test runs into its timeout. */
START_TEST(test_vfs_search_pattern_too_complex)
{
    char line[200];
    struct vfs_search_opts o = {.query = "(a*)*\\1\\1b", .regex = true, .case_sensitive = true};

    memset(line, 'a', 120);
    memcpy(line + 120, "cb\n", 4);
    put("ws/ok.txt", "b\n");
    put("ws/slow.txt", line);
    ck_assert_int_eq(vfs_search(v, &o, &res, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "search: pattern too complex") && strstr(err.msg, "/slow.txt:1"),
                  "%s", err.msg);
    /* Behind a literal prefilter too: the line holds "XYZ", the regex then blows up. */
    errinfo_clear(&err);
    memcpy(line, "XYZ ", 4);
    put("ws/slow.txt", line);
    o.query = "XYZ.(a*)*\\1\\1b";
    ck_assert_int_eq(vfs_search(v, &o, &res, &err), -1);
    ck_assert_msg(strstr(err.msg, "pattern too complex"), "%s", err.msg);
}
END_TEST

static bool cancel_now(void *ctx)
{
    return ++*(int *)ctx > 1; /* the first file is searched, then it is cancelled */
}

START_TEST(test_vfs_search_cancelled)
{
    int polls = 0;
    struct vfs_search_opts o = {
        .query = "x", .case_sensitive = true, .cancelled = cancel_now, .cancel_ctx = &polls};

    put("ws/a.txt", "x\n");
    put("ws/b.txt", "x\n");
    ck_assert_int_eq(vfs_search(v, &o, &res, &err), -1);
    ck_assert_int_eq(err.kind, ERR_CANCELLED);
    ck_assert_ptr_nonnull(strstr(err.msg, "cancelled"));
}
END_TEST

/* Below VFS_SEARCH_DEPTH_MAX levels nothing is searched, and the result says so. */
START_TEST(test_vfs_search_reports_what_is_too_deep)
{
    char rel[1024] = "ws";

    for (int i = 0; i < VFS_SEARCH_DEPTH_MAX + 2; i++) {
        strcat(rel, "/d");
        if (strlen(rel) + 16 >= sizeof(rel) - strlen(base))
            break;
        mkd(rel);
    }
    ck_assert_uint_gt(strlen(rel), 2 * VFS_SEARCH_DEPTH_MAX);
    put(strcat(rel, "/deep.txt"), "needle\n");
    put("ws/top.txt", "needle\n");
    run((struct vfs_search_opts){.query = "needle", .case_sensitive = true});
    ck_assert_str_eq(res.text, "/top.txt:1: needle\n");
    ck_assert_uint_eq(res.dirs_too_deep, 1);
}
END_TEST

/* ---- filters and caps ---- */

START_TEST(test_vfs_search_ext_and_path_filter)
{
    mkd("ws/sub");
    put("ws/a.js", "needle\n");
    put("ws/a.json", "needle\n");
    put("ws/sub/b.JS", "needle\n");
    put("ws/sub/c.c", "needle\n");
    put("ws/js", "needle\n");
    run((struct vfs_search_opts){.query = "needle", .ext = "js", .case_sensitive = true});
    ck_assert_str_eq(res.text, "/a.js:1: needle\n/sub/b.JS:1: needle\n");
    run((struct vfs_search_opts){.query = "needle", .ext = ".c", .case_sensitive = true});
    ck_assert_str_eq(res.text, "/sub/c.c:1: needle\n");
    run((struct vfs_search_opts){.query = "needle", .path = "/sub", .case_sensitive = true});
    ck_assert_str_eq(res.text, "/sub/b.JS:1: needle\n/sub/c.c:1: needle\n");
    run((struct vfs_search_opts){.query = "needle", .path = "sub/c.c", .case_sensitive = true});
    ck_assert_str_eq(res.text, "/sub/c.c:1: needle\n");
    ck_assert_uint_eq(res.files_scanned, 1);

    struct vfs_search_opts o = {.query = "needle", .path = "/nope", .case_sensitive = true};
    vfs_search_result_cleanup(&res);
    ck_assert_int_eq(vfs_search(v, &o, &res, &err), -1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
    ck_assert_str_eq(err.msg, "/nope: no such file or directory");
}
END_TEST

START_TEST(test_vfs_search_max_results)
{
    put("ws/a.txt", "m1\nm2\nm3\nm4\nm5\n");
    run((struct vfs_search_opts){.query = "m", .max_results = 3, .case_sensitive = true});
    ck_assert_uint_eq(res.matches, 3);
    ck_assert(res.truncated);
    ck_assert_str_eq(res.text, "/a.txt:1: m1\n/a.txt:2: m2\n/a.txt:3: m3\n");
    /* Exactly max_results matches is not a truncation. */
    run((struct vfs_search_opts){.query = "m", .max_results = 5, .case_sensitive = true});
    ck_assert_uint_eq(res.matches, 5);
    ck_assert(!res.truncated);
    /* The one more match may be in a later file. */
    put("ws/b.txt", "m6\n");
    run((struct vfs_search_opts){.query = "m", .max_results = 5, .case_sensitive = true});
    ck_assert(res.truncated);
}
END_TEST

START_TEST(test_vfs_search_binary_skipped)
{
    static const char bin[] = "needle\0\x01\x02needle\n";

    put_bytes("ws/b.bin", bin, sizeof(bin) - 1);
    put("ws/t.txt", "needle\n");
    run((struct vfs_search_opts){.query = "needle", .case_sensitive = true});
    ck_assert_str_eq(res.text, "/t.txt:1: needle\n");
    ck_assert_uint_eq(res.binary_skipped, 1);
    ck_assert_uint_eq(res.files_scanned, 2);

    /* A NUL past the first 8 KiB: the file is text, and the NUL is shown as U+FFFD. */
    char *late = malloc(9000);
    ck_assert_ptr_nonnull(late);
    memset(late, '\n', 9000);
    memcpy(late + 8990, "x\0needle", 8);
    put_bytes("ws/b.bin", late, 9000);
    free(late);
    run((struct vfs_search_opts){.query = "needle", .case_sensitive = true});
    ck_assert_str_eq(res.text, "/b.bin:8991: x\xef\xbf\xbdneedle\n/t.txt:1: needle\n");
    ck_assert_uint_eq(res.binary_skipped, 0);
}
END_TEST

/* ---- output shaping ---- */

START_TEST(test_vfs_search_long_line_cut)
{
    char line[2100], want[400];

    /* Match near the start: the text is cut at max_line bytes and ends with the ellipsis. */
    memset(line, 'a', sizeof(line));
    memcpy(line, "needle", 6);
    line[2000] = '\n';
    line[2001] = '\0';
    put("ws/long.txt", line);
    run((struct vfs_search_opts){.query = "needle", .case_sensitive = true});
    snprintf(want, sizeof(want), "/long.txt:1: needle%.*s\xe2\x80\xa6\n", 294, line + 6);
    ck_assert_str_eq(res.text, want);

    /* Cut on a character boundary: 'é' (2 bytes) must not be split at byte 10. */
    put("ws/long.txt", "needle abc\xc3\xa9xyz\n");
    run((struct vfs_search_opts){.query = "needle", .max_line = 11, .case_sensitive = true});
    ck_assert_str_eq(res.text, "/long.txt:1: needle abc\xe2\x80\xa6\n");

    /* Match far into a long line: the shown window holds the match. */
    memset(line, 'b', sizeof(line));
    memcpy(line + 1500, "needle", 6);
    line[2000] = '\0';
    put("ws/long.txt", line);
    run((struct vfs_search_opts){.query = "needle", .case_sensitive = true});
    ck_assert_ptr_nonnull(strstr(res.text, "needle"));
    ck_assert_ptr_nonnull(strstr(res.text, ":1: \xe2\x80\xa6"));
    ck_assert_uint_le(res.len, strlen("/long.txt:1: ") + 300 + 2 * 3 + 1);
}
END_TEST

START_TEST(test_vfs_search_invalid_utf8_sanitized)
{
    static const char text[] = "bad \xff\xfe ok \xc3\xa9 \xed\xa0\x80 needle\r\n";

    put_bytes("ws/u.txt", text, sizeof(text) - 1);
    run((struct vfs_search_opts){.query = "needle", .case_sensitive = true});
    /* Each invalid byte becomes U+FFFD (a surrogate's 3 bytes too); valid é stays; CR goes. */
    ck_assert_str_eq(res.text, "/u.txt:1: bad \xef\xbf\xbd\xef\xbf\xbd ok \xc3\xa9 "
                               "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd needle\n");

    /* File names are escaped, as every VFS path (vfs.h, Names): valid UTF-8 on one line, and
     * the same spelling the file tools take back. */
    ck_assert_int_eq(unlink(hp("ws/u.txt")), 0);
    put("ws/b\xff.txt", "needle\n");
    put("ws/n\nl.txt", "needle\n");
    put("ws/s\\l.txt", "needle\n");
    run((struct vfs_search_opts){.query = "needle", .case_sensitive = true});
    ck_assert_str_eq(res.text, "/b\\xff.txt:1: needle\n/n\\x0al.txt:1: needle\n"
                               "/s\\\\l.txt:1: needle\n");
    /* A start path in that spelling searches that file. */
    run((struct vfs_search_opts){.query = "needle", .path = "/b\\xFF.txt", .case_sensitive = true});
    ck_assert_str_eq(res.text, "/b\\xff.txt:1: needle\n");
}
END_TEST

START_TEST(test_vfs_search_path_order)
{
    mkd("ws/a");
    mkd("ws/a/c");
    mkd("ws/B");
    put("ws/b.txt", "needle\n");
    put("ws/a/c/d.txt", "needle\n");
    put("ws/a.txt", "needle\n");
    put("ws/a/b.txt", "needle\n");
    put("ws/a-z", "needle\n");
    put("ws/B/x", "needle\n");
    run((struct vfs_search_opts){.query = "needle", .case_sensitive = true});
    /* Full-path byte order: '-' < '.' < '/' and 'B' < 'a'. */
    ck_assert_str_eq(res.text, "/B/x:1: needle\n/a-z:1: needle\n/a.txt:1: needle\n"
                               "/a/b.txt:1: needle\n/a/c/d.txt:1: needle\n/b.txt:1: needle\n");
}
END_TEST

START_TEST(test_vfs_search_line_numbers_across_chunks)
{
    /* A ~10 MiB file is read in pieces; line numbers must stay exact across them. */
    size_t lines = 400000, cap = lines * 32 + 64, n = 0;
    char *big = malloc(cap), want[128];

    ck_assert_ptr_nonnull(big);
    for (size_t i = 1; i <= lines; i++) {
        const char *word = (i == 7 || i == 250001 || i == lines) ? "needle" : "hay haystack hay";
        n += (size_t)snprintf(big + n, cap - n, "%zu %s\n", i, word);
    }
    put_bytes("ws/big.txt", big, n);
    free(big);
    run((struct vfs_search_opts){.query = "needle", .case_sensitive = true});
    snprintf(want, sizeof(want),
             "/big.txt:7: 7 needle\n/big.txt:250001: 250001 needle\n"
             "/big.txt:%zu: %zu needle\n",
             lines, lines);
    ck_assert_str_eq(res.text, want);
    run((struct vfs_search_opts){.query = "^2500.1 NEEDLE$", .regex = true});
    ck_assert_str_eq(res.text, "/big.txt:250001: 250001 needle\n");

    /* One line longer than the biggest buffer (a minified file) is searched in pieces. */
    size_t huge = 5u << 20;
    big = malloc(huge + 16);
    ck_assert_ptr_nonnull(big);
    memset(big, 'a', huge);
    memcpy(big + huge - 100, "needle", 6);
    memcpy(big + huge, "\nneedle 2\n", 10);
    put_bytes("ws/big.txt", big, huge + 10);
    free(big);
    run((struct vfs_search_opts){.query = "needle", .case_sensitive = true});
    ck_assert_uint_eq(res.matches, 2);
    ck_assert_ptr_nonnull(strstr(res.text, "/big.txt:1: \xe2\x80\xa6"));
    ck_assert_ptr_nonnull(strstr(res.text, "\n/big.txt:2: needle 2\n"));
}
END_TEST

START_TEST(test_vfs_search_no_symlink_following)
{
    mkd("ws/d");
    put("ws/d/real.txt", "needle inside\n");
    ck_assert_int_eq(symlink(hp("outside"), hp("ws/out_abs")), 0);
    ck_assert_int_eq(symlink("../outside", hp("ws/out_rel")), 0);
    ck_assert_int_eq(symlink(hp("outside/secret.txt"), hp("ws/file_abs")), 0);
    ck_assert_int_eq(symlink("/d", hp("ws/in_dir")), 0);
    ck_assert_int_eq(symlink("/d/real.txt", hp("ws/in_file")), 0);
    run((struct vfs_search_opts){.query = "needle", .case_sensitive = true});
    /* Only the real file, once: links inside are not followed either. */
    ck_assert_str_eq(res.text, "/d/real.txt:1: needle inside\n");
    ck_assert_ptr_null(strstr(res.text, "outside"));

    /* A start path through a link resolves inside the root: no outside dir there. */
    struct vfs_search_opts o = {.query = "needle", .path = "/out_abs", .case_sensitive = true};
    vfs_search_result_cleanup(&res);
    ck_assert_int_eq(vfs_search(v, &o, &res, &err), -1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
}
END_TEST

static Suite *vfs_search_suite(void)
{
    Suite *s = suite_create("vfs_search");
    TCase *tc;

    tc = tcase_create("match");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_vfs_search_literal);
    tcase_add_test(tc, test_vfs_search_case_insensitive);
    tcase_add_test(tc, test_vfs_search_regex);
    tcase_add_test(tc, test_vfs_search_bad_regex);
    tcase_add_test(tc, test_vfs_search_perl_syntax);
    tcase_add_test(tc, test_vfs_search_prefilter_reads_pcre);
    tcase_add_test(tc, test_vfs_search_prefilter_repeats_of_any_pcre);
    tcase_add_test(tc, test_vfs_search_pattern_too_complex);
    tcase_add_test(tc, test_vfs_search_cancelled);
    tcase_add_test(tc, test_vfs_search_reports_what_is_too_deep);
    suite_add_tcase(s, tc);

    tc = tcase_create("filter");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_vfs_search_ext_and_path_filter);
    tcase_add_test(tc, test_vfs_search_max_results);
    tcase_add_test(tc, test_vfs_search_binary_skipped);
    tcase_add_test(tc, test_vfs_search_no_symlink_following);
    suite_add_tcase(s, tc);

    tc = tcase_create("output");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_vfs_search_long_line_cut);
    tcase_add_test(tc, test_vfs_search_invalid_utf8_sanitized);
    tcase_add_test(tc, test_vfs_search_path_order);
    tcase_add_test(tc, test_vfs_search_line_numbers_across_chunks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(vfs_search_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
