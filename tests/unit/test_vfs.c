/* tests/unit/test_vfs.c - the workspace: normalization, confinement against planted symlinks,
 * read, atomic write, list, remove, and the :memory: lifecycle.
 *
 * Each test gets a fresh mkdtemp base holding the workspace root "ws" and, beside it, a
 * directory "outside" with a file the workspace must never reach. */
#include "vfs.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define SECRET "SECRET-OUTSIDE"

static char base[256];
static char shm_dirs[3][256]; /* made outside base by the :memory: tests; removed in teardown */
static struct vfs *v;
static struct errinfo err;

/* ---- host-side helpers ---- */

static const char *hp(const char *rel)
{
    return testutil_path(base, rel);
}

static void put_host(const char *rel, const void *data, size_t len)
{
    testutil_put(hp(rel), data, len);
}

/* Reads a host file into buf (NUL-terminated); returns its length or -1. */
static ssize_t get_host(const char *rel, char *buf, size_t cap)
{
    int fd = open(hp(rel), O_RDONLY);
    ssize_t n;

    if (fd < 0)
        return -1;
    n = read(fd, buf, cap - 1);
    close(fd);
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

static void mkdir_host(const char *rel)
{
    testutil_mkdir(hp(rel));
}

static void link_host(const char *target, const char *rel)
{
    ck_assert_int_eq(symlink(target, hp(rel)), 0);
}

static void assert_outside_intact(void)
{
    char buf[64];

    ck_assert_int_eq(get_host("outside/secret.txt", buf, sizeof(buf)), (ssize_t)strlen(SECRET));
    ck_assert_str_eq(buf, SECRET);
}

/* Error messages are for a model: they must never show the host path of the workspace. */
static void assert_no_host_path(void)
{
    ck_assert_ptr_null(strstr(err.msg, base));
}

static void setup(void)
{
    testutil_mkdtemp(base, sizeof(base), "test_vfs-");
    mkdir_host("ws");
    mkdir_host("outside");
    put_host("outside/secret.txt", SECRET, strlen(SECRET));
    umask(022);
    errinfo_clear(&err);
    v = vfs_open(hp("ws"), NULL, &err);
    ck_assert_msg(v != NULL, "vfs_open: %s", err.msg);
}

static void teardown(void)
{
    vfs_free(v);
    v = NULL;
    testutil_rm_rf(base);
    for (int i = 0; i < 3; i++) {
        if (shm_dirs[i][0])
            testutil_rm_rf(shm_dirs[i]);
        shm_dirs[i][0] = '\0';
    }
}

/* ---- normalization ---- */

struct norm_row {
    const char *in;
    const char *out; /* NULL: fails with kind */
    enum errinfo_kind kind;
};

static const struct norm_row norm_rows[] = {
    {"/", "/", ERR_NONE},
    {"", NULL, ERR_INVALID},
    {"a/b", "/a/b", ERR_NONE},
    {"/a//b/", "/a/b", ERR_NONE},
    {"/a/./b/.", "/a/b", ERR_NONE},
    {"/a/../b", "/b", ERR_NONE},
    {"/../../etc/passwd", "/etc/passwd", ERR_NONE},
    {"..", "/", ERR_NONE},
    {"/a/b/../../../..", "/", ERR_NONE},
    {"./", "/", ERR_NONE},
    {"///", "/", ERR_NONE},
    {"/...", "/...", ERR_NONE},
    {"/.hidden/..x", "/.hidden/..x", ERR_NONE},
    {"/a\\b", NULL, ERR_INVALID},
    {"\\..\\etc", NULL, ERR_INVALID},
    {"/src/main.js", "/src/main.js", ERR_NONE},
    /* Names (vfs.h): escapes read back, canonical out, raw bytes escaped. */
    {"/caf\\xE9", "/caf\\xe9", ERR_NONE},
    {"/caf\xe9", "/caf\\xe9", ERR_NONE},
    {"/caf\xc3\xa9", "/caf\xc3\xa9", ERR_NONE},
    {"/a\\\\b", "/a\\\\b", ERR_NONE},
    {"/a\nb", "/a\\x0ab", ERR_NONE},
    {"/a\\x0Ab", "/a\\x0ab", ERR_NONE},
    {"/\\x41", "/A", ERR_NONE},
    {"/\\x2e\\x2e/x", "/x", ERR_NONE},
    {"/\\x2f", NULL, ERR_INVALID},
    {"/\\x00", NULL, ERR_INVALID},
    {"/\\x4", NULL, ERR_INVALID},
    {"/\\xzz", NULL, ERR_INVALID},
    {"/a\\", NULL, ERR_INVALID},
};

START_TEST(test_vfs_normalize_table)
{
    const struct norm_row *r = &norm_rows[_i];
    char out[VFS_PATH_MAX + 1];
    int rc = vfs_normalize(r->in, out, sizeof(out), &err);

    if (r->out) {
        ck_assert_msg(rc == 0, "%s: %s", r->in, err.msg);
        ck_assert_str_eq(out, r->out);
    } else {
        ck_assert_int_eq(rc, -1);
        ck_assert_int_eq(err.kind, r->kind);
    }
}
END_TEST

/* Normalizing twice changes nothing, whatever the bytes. */
START_TEST(test_vfs_normalize_idempotent)
{
    static const char *const ins[] = {"/caf\xe9/\xff\xfe", "/a\\\\b/\\x41\\x0a", "/n\nl/\x7f",
                                      "/\xed\xa0\x80", "/ok/\xe2\x82\xac"};
    char once[VFS_PATH_MAX + 1], twice[VFS_PATH_MAX + 1];

    for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++) {
        ck_assert_int_eq(vfs_normalize(ins[i], once, sizeof(once), &err), 0);
        ck_assert_int_eq(vfs_normalize(once, twice, sizeof(twice), &err), 0);
        ck_assert_str_eq(once, twice);
        /* What the tools send is UTF-8 without control characters. */
        for (const char *p = once; *p; p++)
            ck_assert((unsigned char)*p >= 0x20 && *p != 0x7f);
    }
}
END_TEST

/* A file whose name is not UTF-8 (made by a command) is listed in the escaped form, and read,
 * written and removed with it. */
START_TEST(test_vfs_names_round_trip)
{
    struct vfs_listing l = {0};
    struct vfs_data d = {0};
    uint64_t removed = 0;

    put_host("ws/caf\xe9", "latin-1", 7);
    put_host("ws/back\\slash", "bs", 2);
    ck_assert_int_eq(vfs_list(v, "/", 0, &l, &err), 0);
    ck_assert_uint_eq(l.count, 2);
    ck_assert_str_eq(l.entries[0].name, "back\\\\slash");
    ck_assert_str_eq(l.entries[1].name, "caf\\xe9");
    ck_assert_int_eq(vfs_read(v, "/caf\\xe9", 0, 0, &d, &err), 0);
    ck_assert_str_eq(d.data, "latin-1");
    vfs_data_cleanup(&d);
    ck_assert_int_eq(vfs_read(v, "/back\\\\slash", 0, 0, &d, &err), 0);
    ck_assert_str_eq(d.data, "bs");
    vfs_data_cleanup(&d);
    ck_assert_int_eq(vfs_write(v, "/dir\\xff/new\\x01", "n", 1, NULL, &err), 0);
    {
        char buf[8];

        ck_assert_int_eq(get_host("ws/dir\xff/new\x01", buf, sizeof(buf)), 1);
        ck_assert_int_eq(buf[0], 'n');
    }
    ck_assert_int_eq(vfs_remove(v, "/caf\\xE9", false, &removed, &err), 0);
    ck_assert_int_eq(vfs_remove(v, "/dir\\xff", true, &removed, &err), 0);
    ck_assert_int_eq(access(hp("ws/caf\xe9"), F_OK), -1);
    ck_assert_int_eq(access(hp("ws/dir\xff"), F_OK), -1);
    vfs_listing_cleanup(&l);
}
END_TEST

START_TEST(test_vfs_normalize_limits)
{
    char out[VFS_PATH_MAX + 1], in[2 * VFS_PATH_MAX];

    /* A 255-byte component is fine, 256 is not. */
    memset(in, 'n', 256);
    in[0] = '/';
    in[256] = '\0';
    ck_assert_int_eq(vfs_normalize(in, out, sizeof(out), &err), 0);
    ck_assert_uint_eq(strlen(out), 256);
    in[256] = 'n';
    in[257] = '\0';
    ck_assert_int_eq(vfs_normalize(in, out, sizeof(out), &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);

    /* 2048 components "/a" make 4096 bytes: the limit exactly. One more is too large. */
    errinfo_clear(&err);
    for (int i = 0; i < 2049; i++) {
        in[2 * i] = '/';
        in[2 * i + 1] = 'a';
    }
    in[4096] = '\0';
    ck_assert_int_eq(vfs_normalize(in, out, sizeof(out), &err), 0);
    ck_assert_uint_eq(strlen(out), 4096);
    in[4096] = '/';
    in[4098] = '\0';
    ck_assert_int_eq(vfs_normalize(in, out, sizeof(out), &err), -1);
    ck_assert_int_eq(err.kind, ERR_TOO_LARGE);
}
END_TEST

/* ---- confinement: symlinks planted on disk ---- */

static void plant_escapes(void)
{
    link_host("/etc", "ws/etc_abs");                     /* absolute link to a system dir */
    link_host(hp("outside"), "ws/out_abs");              /* absolute link to a dir outside */
    link_host("../outside", "ws/out_rel");               /* relative link one level up */
    link_host("../../../../../../outside", "ws/out_up"); /* climbing far above */
    link_host(hp("outside/secret.txt"), "ws/file_abs");  /* absolute link to a file outside */
    link_host("../outside/secret.txt", "ws/file_rel");
}

START_TEST(test_vfs_read_never_follows_out)
{
    static const char *paths[] = {
        "/etc_abs/passwd", "/out_abs/secret.txt", "/out_rel/secret.txt",   "/out_up/secret.txt",
        "/file_abs",       "/file_rel",           "/../outside/secret.txt"};
    struct vfs_data d = {0};

    plant_escapes();
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        errinfo_clear(&err);
        ck_assert_msg(vfs_read(v, paths[i], 0, 0, &d, &err) == -1, "%s was readable", paths[i]);
        ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
        assert_no_host_path();
    }
}
END_TEST

START_TEST(test_vfs_symlink_resolves_inside_root)
{
    struct vfs_data d = {0};

    /* "/real.txt" as a link target means <root>/real.txt. */
    put_host("ws/real.txt", "inside", 6);
    link_host("/real.txt", "ws/alias");
    link_host("../../real.txt", "ws/alias_up");
    ck_assert_int_eq(vfs_read(v, "/alias", 0, 0, &d, &err), 0);
    ck_assert_str_eq(d.data, "inside");
    vfs_data_cleanup(&d);
    ck_assert_int_eq(vfs_read(v, "/alias_up", 0, 0, &d, &err), 0);
    ck_assert_str_eq(d.data, "inside");
    vfs_data_cleanup(&d);
}
END_TEST

START_TEST(test_vfs_write_never_lands_outside)
{
    static const char *paths[] = {"/out_abs/secret.txt", "/out_rel/secret.txt",
                                  "/out_up/secret.txt", "/out_rel/new.txt", "/out_abs/sub/x"};
    char buf[64];

    plant_escapes();
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        errinfo_clear(&err);
        /* Landing inside the workspace or failing are both fine; outside is not. */
        vfs_write(v, paths[i], "PWNED", 5, NULL, &err);
        assert_no_host_path();
    }
    assert_outside_intact();
    ck_assert_int_eq(get_host("outside/new.txt", buf, sizeof(buf)), -1);
    ck_assert_int_eq(get_host("outside/sub/x", buf, sizeof(buf)), -1);
}
END_TEST

START_TEST(test_vfs_write_replaces_final_symlink)
{
    struct stat st;
    char buf[64];
    bool created = true;

    plant_escapes();
    ck_assert_int_eq(vfs_write(v, "/file_abs", "NEW", 3, &created, &err), 0);
    ck_assert(!created);
    assert_outside_intact();
    ck_assert_int_eq(lstat(hp("ws/file_abs"), &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(get_host("ws/file_abs", buf, sizeof(buf)), 3);
    ck_assert_str_eq(buf, "NEW");
}
END_TEST

START_TEST(test_vfs_list_never_follows_out)
{
    struct vfs_listing l = {0};

    plant_escapes();
    ck_assert_int_eq(vfs_list(v, "/out_abs", 0, &l, &err), -1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
    errinfo_clear(&err);
    ck_assert_int_eq(vfs_list(v, "/out_rel", 0, &l, &err), -1);
    errinfo_clear(&err);
    ck_assert_int_eq(vfs_list(v, "/", 0, &l, &err), 0);
    ck_assert_uint_eq(l.count, 6);
    for (size_t i = 0; i < l.count; i++)
        ck_assert_int_eq(l.entries[i].type, VFS_SYMLINK);
    vfs_listing_cleanup(&l);
}
END_TEST

START_TEST(test_vfs_remove_never_follows_out)
{
    uint64_t removed = 0;

    mkdir_host("ws/dir");
    mkdir_host("ws/dir/sub");
    link_host(hp("outside"), "ws/dir/out_abs");
    link_host("../../outside", "ws/dir/sub/out_rel");
    link_host(hp("outside/secret.txt"), "ws/dir/file_abs");
    put_host("ws/dir/sub/f.txt", "x", 1);
    ck_assert_int_eq(vfs_remove(v, "/dir", true, &removed, &err), 0);
    ck_assert_uint_eq(removed, 6); /* dir, sub, three links, f.txt */
    assert_outside_intact();
    ck_assert_int_eq(access(hp("ws/dir"), F_OK), -1);

    /* Through a link to the outside dir: resolves inside the root, where it does not exist. */
    link_host(hp("outside"), "ws/out_abs");
    ck_assert_int_eq(vfs_remove(v, "/out_abs/secret.txt", false, NULL, &err), -1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
    assert_outside_intact();
    /* Removing the link removes the link only. */
    errinfo_clear(&err);
    ck_assert_int_eq(vfs_remove(v, "/out_abs", true, &removed, &err), 0);
    ck_assert_uint_eq(removed, 1);
    assert_outside_intact();
    ck_assert_int_eq(access(hp("outside"), F_OK), 0);
}
END_TEST

/* ---- read ---- */

START_TEST(test_vfs_read_directory_and_specials)
{
    struct vfs_data d = {0};

    mkdir_host("ws/src");
    ck_assert_int_eq(vfs_read(v, "/src", 0, 0, &d, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_str_eq(err.msg, "/src is a directory; use list_dir to see what is inside");
    errinfo_clear(&err);
    ck_assert_int_eq(vfs_read(v, "/", 0, 0, &d, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    /* A FIFO must be refused, not block the caller. */
    ck_assert_int_eq(mkfifo(hp("ws/fifo"), 0644), 0);
    errinfo_clear(&err);
    ck_assert_int_eq(vfs_read(v, "/fifo", 0, 0, &d, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    errinfo_clear(&err);
    ck_assert_int_eq(vfs_read(v, "/nope/x", 0, 0, &d, &err), -1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
    ck_assert_str_eq(err.msg, "/nope/x: no such file or directory");
}
END_TEST

START_TEST(test_vfs_read_offset_length_cap)
{
    struct vfs_options o = {.fsync = false, .read_cap = 10};
    const char *text = "0123456789abcdefghijklmno"; /* 25 bytes */
    struct vfs *small;
    struct vfs_data d = {0};

    put_host("ws/f.txt", text, 25);
    ck_assert_int_eq(vfs_read(v, "/f.txt", 0, 0, &d, &err), 0);
    ck_assert_uint_eq(d.len, 25);
    ck_assert_str_eq(d.data, text);
    ck_assert(!d.truncated);
    vfs_data_cleanup(&d);

    ck_assert_int_eq(vfs_read(v, "/f.txt", 2, 3, &d, &err), 0);
    ck_assert_str_eq(d.data, "234");
    ck_assert_uint_eq(d.offset, 2);
    ck_assert_uint_eq(d.file_size, 25);
    ck_assert(d.truncated);
    vfs_data_cleanup(&d);

    ck_assert_int_eq(vfs_read(v, "/f.txt", 100, 0, &d, &err), 0);
    ck_assert_uint_eq(d.len, 0);
    ck_assert_str_eq(d.data, "");
    ck_assert(!d.truncated);
    vfs_data_cleanup(&d);

    small = vfs_open(hp("ws"), &o, &err);
    ck_assert_ptr_nonnull(small);
    ck_assert_int_eq(vfs_read(small, "/f.txt", 0, 0, &d, &err), 0);
    ck_assert_uint_eq(d.len, 10);
    ck_assert_str_eq(d.data, "0123456789");
    ck_assert(d.truncated);
    vfs_data_cleanup(&d);
    ck_assert_int_eq(vfs_read(small, "/f.txt", 0, 1000, &d, &err), 0); /* never over the cap */
    ck_assert_uint_eq(d.len, 10);
    vfs_data_cleanup(&d);
    ck_assert_int_eq(vfs_read(small, "/f.txt", 20, 0, &d, &err), 0);
    ck_assert_str_eq(d.data, "klmno");
    ck_assert(!d.truncated);
    vfs_data_cleanup(&d);
    vfs_free(small);
}
END_TEST

/* ---- write ---- */

static void assert_only_entry(const char *dir_rel, const char *name)
{
    struct vfs_listing l = {0};

    ck_assert_int_eq(vfs_list(v, dir_rel, 0, &l, &err), 0);
    ck_assert_uint_eq(l.count, 1);
    ck_assert_str_eq(l.entries[0].name, name);
    vfs_listing_cleanup(&l);
}

START_TEST(test_vfs_write_atomic_exact_bytes)
{
    static const char bin[] = {'a', '\0', '\xff', '\xfe', '\n', '\x80', 'z'};
    struct vfs_data d = {0};
    struct stat st;
    bool created = false;

    ck_assert_int_eq(vfs_write(v, "/deep/er/f.bin", bin, sizeof(bin), &created, &err), 0);
    ck_assert(created);
    ck_assert_int_eq(vfs_read(v, "/deep/er/f.bin", 0, 0, &d, &err), 0);
    ck_assert_uint_eq(d.len, sizeof(bin));
    ck_assert_mem_eq(d.data, bin, sizeof(bin));
    vfs_data_cleanup(&d);
    ck_assert_int_eq(stat(hp("ws/deep/er/f.bin"), &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0644);

    /* Replace with an empty file: exactly 0 bytes, no temp file left behind. */
    ck_assert_int_eq(vfs_write(v, "/deep/er/f.bin", "", 0, &created, &err), 0);
    ck_assert(!created);
    ck_assert_int_eq(vfs_read(v, "/deep/er/f.bin", 0, 0, &d, &err), 0);
    ck_assert_uint_eq(d.len, 0);
    vfs_data_cleanup(&d);
    assert_only_entry("/deep/er", "f.bin");
    assert_only_entry("/deep", "er");
}
END_TEST

START_TEST(test_vfs_write_failure_keeps_old_file)
{
    struct rlimit lim = {.rlim_cur = 16, .rlim_max = RLIM_INFINITY}, old;
    char big[100], buf[64];
    int rc;

    /* A write that fails half way (here: over the file size limit) must leave the old file
     * untouched and no temp file behind. */
    put_host("ws/keep.txt", "old content", 11);
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    memset(big, 'n', sizeof(big));
    rc = vfs_write(v, "/keep.txt", big, sizeof(big), NULL, &err);
    /* Check reports results through a file: lift the limit before asserting. */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(err.kind, ERR_TOO_LARGE);
    assert_no_host_path();
    ck_assert_int_eq(get_host("ws/keep.txt", buf, sizeof(buf)), 11);
    ck_assert_str_eq(buf, "old content");
    assert_only_entry("/", "keep.txt");
}
END_TEST

START_TEST(test_vfs_write_keeps_mode_of_replaced_file)
{
    struct stat st;

    put_host("ws/run.sh", "#!/bin/sh\n", 10);
    ck_assert_int_eq(chmod(hp("ws/run.sh"), 0755), 0);
    ck_assert_int_eq(vfs_write(v, "/run.sh", "#!/bin/sh\necho hi\n", 18, NULL, &err), 0);
    ck_assert_int_eq(stat(hp("ws/run.sh"), &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0755);
}
END_TEST

START_TEST(test_vfs_write_long_name_temp_fits)
{
    char path[VFS_NAME_MAX + 2];
    struct vfs_data d = {0};

    path[0] = '/';
    memset(path + 1, 'L', VFS_NAME_MAX);
    path[VFS_NAME_MAX + 1] = '\0';
    ck_assert_msg(vfs_write(v, path, "x", 1, NULL, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(vfs_read(v, path, 0, 0, &d, &err), 0);
    ck_assert_str_eq(d.data, "x");
    vfs_data_cleanup(&d);
    assert_only_entry("/", path + 1);
}
END_TEST

START_TEST(test_vfs_write_over_directory)
{
    mkdir_host("ws/src");
    put_host("ws/src/keep.txt", "k", 1);
    ck_assert_int_eq(vfs_write(v, "/src", "x", 1, NULL, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "/src is a directory"));
    assert_only_entry("/src", "keep.txt");
    errinfo_clear(&err);
    ck_assert_int_eq(vfs_write(v, "/", "x", 1, NULL, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    assert_only_entry("/", "src");
}
END_TEST

START_TEST(test_vfs_write_parent_is_file)
{
    char buf[16];

    put_host("ws/a", "file", 4);
    ck_assert_int_eq(vfs_write(v, "/a/b", "x", 1, NULL, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_str_eq(err.msg, "/a/b: a parent (/a) is a file");
    errinfo_clear(&err);
    ck_assert_int_eq(vfs_write(v, "/a/b/c/d", "x", 1, NULL, &err), -1);
    ck_assert_str_eq(err.msg, "/a/b/c/d: a parent (/a) is a file");
    ck_assert_int_eq(get_host("ws/a", buf, sizeof(buf)), 4);
}
END_TEST

/* ---- list and stat ---- */

START_TEST(test_vfs_list_sorted_types)
{
    struct vfs_listing l = {0};

    put_host("ws/b.txt", "bb", 2);
    put_host("ws/a.txt", "a", 1);
    mkdir_host("ws/c");
    link_host("/a.txt", "ws/l");
    ck_assert_int_eq(mkfifo(hp("ws/f"), 0644), 0);
    ck_assert_int_eq(vfs_list(v, "/", 0, &l, &err), 0);
    ck_assert_uint_eq(l.count, 5);
    ck_assert_uint_eq(l.total, 5);
    ck_assert(!l.truncated);
    ck_assert_str_eq(l.entries[0].name, "a.txt");
    ck_assert_int_eq(l.entries[0].type, VFS_FILE);
    ck_assert_uint_eq(l.entries[0].size, 1);
    ck_assert_str_eq(l.entries[1].name, "b.txt");
    ck_assert_uint_eq(l.entries[1].size, 2);
    ck_assert_str_eq(l.entries[2].name, "c");
    ck_assert_int_eq(l.entries[2].type, VFS_DIR);
    ck_assert_str_eq(l.entries[3].name, "f");
    ck_assert_int_eq(l.entries[3].type, VFS_OTHER);
    ck_assert_str_eq(l.entries[4].name, "l");
    ck_assert_int_eq(l.entries[4].type, VFS_SYMLINK);
    ck_assert_int_gt(l.entries[0].mtime_ms, 1600000000000LL);
    vfs_listing_cleanup(&l);

    ck_assert_int_eq(vfs_list(v, "/a.txt", 0, &l, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_str_eq(err.msg, "/a.txt is a file; use read_file");
    errinfo_clear(&err);
    ck_assert_int_eq(vfs_list(v, "/missing", 0, &l, &err), -1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
}
END_TEST

START_TEST(test_vfs_list_capped)
{
    struct vfs_listing l = {0};
    char name[32];

    /* Created out of order; the cap keeps the smallest names, in order. */
    for (int i = 0; i < 25; i++) {
        snprintf(name, sizeof(name), "ws/e%02d", (i * 7) % 25);
        put_host(name, "", 0);
    }
    ck_assert_int_eq(vfs_list(v, "/", 10, &l, &err), 0);
    ck_assert_uint_eq(l.count, 10);
    ck_assert_uint_eq(l.total, 25);
    ck_assert(l.truncated);
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof(name), "e%02d", i);
        ck_assert_str_eq(l.entries[i].name, name);
    }
    vfs_listing_cleanup(&l);
}
END_TEST

static const struct {
    const char *name;
    bool temp;
} temp_rows[] = {
    {".a.txt.rbx-Ab12Cd", true},  {".x.rbx-000000", true},
    {".a.b.c.rbx-zzzzzz", true},  {"a.txt.rbx-Ab12Cd", false}, /* no leading dot */
    {"..rbx-Ab12Cd", false},                                   /* no name */
    {".a.rbx-Ab12C", false},                                   /* five characters */
    {".a.rbx-Ab12Cde", false},                                 /* seven */
    {".a.rbx-Ab-2Cd", false},                                  /* not a letter or digit */
    {".a.txt.rbx_Ab12Cd", false},                              /* not ".rbx-" */
    {".rbx-Ab12Cd", false},       {"", false},
};

START_TEST(test_vfs_temp_names)
{
    const char *n = temp_rows[_i].name;

    ck_assert_msg(vfs_is_temp_name(n, strlen(n)) == temp_rows[_i].temp, "%s", n);
}
END_TEST

/* What a write killed with the daemon leaves: hidden from list_dir; the sweep removes stale
 * ones (older than `before`), in every directory, and keeps everything else. */
START_TEST(test_vfs_temps_hidden_and_swept)
{
    struct vfs_listing l = {0};
    struct timespec old[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};

    mkdir_host("ws/d");
    mkdir_host("ws/d/e");
    put_host("ws/d/a.txt", "a", 1);
    put_host("ws/d/.a.txt.rbx-Ab12Cd", "half", 4);
    put_host("ws/d/e/.b.rbx-000000", "half", 4);
    put_host("ws/d/.new.rbx-zzzzzz", "in flight", 9);
    put_host("ws/.x.rbx-toolong1", "mine", 4);
    mkdir_host("ws/.dir.rbx-qqqqqq"); /* a directory is never a temporary file */
    ck_assert_int_eq(utimensat(AT_FDCWD, hp("ws/d/.a.txt.rbx-Ab12Cd"), old, 0), 0);
    ck_assert_int_eq(utimensat(AT_FDCWD, hp("ws/d/e/.b.rbx-000000"), old, 0), 0);

    ck_assert_int_eq(vfs_list(v, "/d", 0, &l, &err), 0);
    ck_assert_uint_eq(l.count, 2); /* a.txt and e */
    ck_assert_uint_eq(l.total, 2);
    ck_assert_str_eq(l.entries[0].name, "a.txt");
    ck_assert_str_eq(l.entries[1].name, "e");
    vfs_listing_cleanup(&l);

    ck_assert_uint_eq(vfs_sweep_temps(v, 2000), 2);
    ck_assert_int_eq(access(hp("ws/d/.a.txt.rbx-Ab12Cd"), F_OK), -1);
    ck_assert_int_eq(access(hp("ws/d/e/.b.rbx-000000"), F_OK), -1);
    ck_assert_int_eq(access(hp("ws/d/.new.rbx-zzzzzz"), F_OK), 0);
    ck_assert_int_eq(access(hp("ws/d/a.txt"), F_OK), 0);
    ck_assert_int_eq(access(hp("ws/.x.rbx-toolong1"), F_OK), 0);
    ck_assert_int_eq(access(hp("ws/.dir.rbx-qqqqqq"), F_OK), 0);
    ck_assert_uint_eq(vfs_sweep_temps(v, 2000), 0);
}
END_TEST

START_TEST(test_vfs_stat_types)
{
    struct vfs_stat st;

    put_host("ws/f", "abc", 3);
    link_host("/f", "ws/l");
    ck_assert_int_eq(vfs_stat(v, "/f", &st, &err), 0);
    ck_assert_int_eq(st.type, VFS_FILE);
    ck_assert_uint_eq(st.size, 3);
    ck_assert_int_eq(vfs_stat(v, "/l", &st, &err), 0);
    ck_assert_int_eq(st.type, VFS_SYMLINK);
    ck_assert_int_eq(vfs_stat(v, "/", &st, &err), 0);
    ck_assert_int_eq(st.type, VFS_DIR);
    ck_assert_int_eq(vfs_stat(v, "/none", &st, &err), -1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
}
END_TEST

/* ---- remove ---- */

START_TEST(test_vfs_remove_root_refused)
{
    put_host("ws/f", "x", 1);
    ck_assert_int_eq(vfs_remove(v, "/", true, NULL, &err), -1);
    ck_assert_int_eq(err.kind, ERR_DENIED);
    ck_assert_ptr_nonnull(strstr(err.msg, "refusing to remove the workspace root /"));
    errinfo_clear(&err);
    ck_assert_int_eq(vfs_remove(v, "/a/../..", true, NULL, &err), -1);
    ck_assert_int_eq(err.kind, ERR_DENIED);
    ck_assert_int_eq(access(hp("ws/f"), F_OK), 0);
}
END_TEST

START_TEST(test_vfs_remove_nonempty_needs_recursive)
{
    uint64_t removed = 99;

    mkdir_host("ws/a");
    mkdir_host("ws/a/b");
    put_host("ws/a/b/c.txt", "c", 1);
    put_host("ws/a/d.txt", "d", 1);
    ck_assert_int_eq(vfs_remove(v, "/a", false, &removed, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "/a is not empty; pass recursive: true"));
    ck_assert_uint_eq(removed, 0);
    ck_assert_int_eq(access(hp("ws/a/b/c.txt"), F_OK), 0);
    errinfo_clear(&err);
    ck_assert_int_eq(vfs_remove(v, "/a", true, &removed, &err), 0);
    ck_assert_uint_eq(removed, 4);
    ck_assert_int_eq(access(hp("ws/a"), F_OK), -1);

    mkdir_host("ws/empty");
    ck_assert_int_eq(vfs_remove(v, "/empty", false, &removed, &err), 0);
    ck_assert_uint_eq(removed, 1);
    put_host("ws/f", "x", 1);
    ck_assert_int_eq(vfs_remove(v, "/f", false, &removed, &err), 0);
    ck_assert_uint_eq(removed, 1);
    ck_assert_int_eq(vfs_remove(v, "/f", false, &removed, &err), -1);
    ck_assert_int_eq(err.kind, ERR_NOT_FOUND);
    assert_no_host_path();
}
END_TEST

/* ---- the root ---- */

START_TEST(test_vfs_open_creates_root)
{
    struct vfs *w;
    struct stat st;

    w = vfs_open(hp("new/deeper/ws"), NULL, &err);
    ck_assert_msg(w != NULL, "%s", err.msg);
    ck_assert_int_eq(stat(hp("new/deeper/ws"), &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    ck_assert_str_eq(vfs_root_path(w), hp("new/deeper/ws"));
    ck_assert_int_ge(vfs_root_fd(w), 0);
    vfs_free(w);
    vfs_free(NULL);

    put_host("afile", "x", 1);
    ck_assert_ptr_null(vfs_open(hp("afile"), NULL, &err));
    ck_assert_int_ne(err.kind, ERR_NONE);
}
END_TEST

START_TEST(test_vfs_memory_lifecycle)
{
    char root[VFS_PATH_MAX], prefix[64];
    struct vfs *m = vfs_open(VFS_MEMORY, NULL, &err);
    struct vfs_data d = {0};
    const char *slash;

    ck_assert_msg(m != NULL, "%s", err.msg);
    snprintf(root, sizeof(root), "%s", vfs_root_path(m));
    slash = strrchr(root, '/');
    snprintf(prefix, sizeof(prefix), "runbox-mem-%ld-", (long)getpid());
    ck_assert_int_eq(strncmp(slash + 1, prefix, strlen(prefix)), 0);
    ck_assert_int_eq(vfs_write(m, "/x/y.txt", "mem", 3, NULL, &err), 0);
    ck_assert_int_eq(vfs_read(m, "/x/y.txt", 0, 0, &d, &err), 0);
    ck_assert_str_eq(d.data, "mem");
    vfs_data_cleanup(&d);
    ck_assert_int_eq(access(root, F_OK), 0);
    vfs_free(m);
    ck_assert_int_eq(access(root, F_OK), -1);
}
END_TEST

/* A pid that surely does not run: a child that has exited and been reaped. */
static pid_t dead_pid(void)
{
    pid_t pid = fork();

    if (pid == 0)
        _exit(0);
    ck_assert_int_gt(pid, 0);
    waitpid(pid, NULL, 0);
    return pid;
}

static const struct timespec long_ago[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};

START_TEST(test_vfs_memory_removes_stale_dirs)
{
    char *stale = shm_dirs[0], *live = shm_dirs[1], *handed = shm_dirs[2], file[300];
    struct vfs *m;
    const char *shm = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    int fd;

    if (strcmp(shm, "/tmp") == 0)
        setenv("TMPDIR", "/tmp", 1);
    snprintf(stale, sizeof(shm_dirs[0]), "%s/runbox-mem-%ld-stale1", shm, (long)dead_pid());
    snprintf(live, sizeof(shm_dirs[1]), "%s/runbox-mem-%ld-live01", shm, (long)getppid());
    snprintf(handed, sizeof(shm_dirs[2]), "%s/runbox-mem-%ld-handed", shm, (long)dead_pid());
    ck_assert_int_eq(mkdir(stale, 0700), 0);
    ck_assert_int_eq(mkdir(live, 0700), 0);
    /* A daemon started as root hands its directory to the user it drops to. */
    ck_assert_int_eq(mkdir(handed, 0700), 0);
    if (geteuid() == 0)
        ck_assert_int_eq(chown(handed, 65534, 65534), 0);
    snprintf(file, sizeof(file), "%s/left.txt", stale);
    fd = open(file, O_WRONLY | O_CREAT, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    /* Leftovers are old; a directory made in the last minute may belong to a daemon starting. */
    ck_assert_int_eq(utimensat(AT_FDCWD, stale, long_ago, 0), 0);
    ck_assert_int_eq(utimensat(AT_FDCWD, handed, long_ago, 0), 0);
    ck_assert_int_eq(utimensat(AT_FDCWD, live, long_ago, 0), 0);

    m = vfs_open(VFS_MEMORY, NULL, &err);
    ck_assert_msg(m != NULL, "%s", err.msg);
    ck_assert_int_eq(access(stale, F_OK), -1);
    ck_assert_int_eq(access(handed, F_OK), -1);
    ck_assert_int_eq(access(live, F_OK), 0); /* its daemon still runs */
    vfs_free(m);
}
END_TEST

/* A daemon in another pid namespace (a container sharing /dev/shm): the pid in its directory's
 * name runs nothing here, but the daemon holds the directory's lock, so the directory stays;
 * once the lock is gone it is stale. Also: a fresh directory is never taken for stale. */
START_TEST(test_vfs_memory_keeps_dirs_of_other_pid_namespaces)
{
    char *other = shm_dirs[0], *young = shm_dirs[1];
    const char *shm = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    struct vfs *m;
    int lock;

    if (strcmp(shm, "/tmp") == 0)
        setenv("TMPDIR", "/tmp", 1);
    snprintf(other, sizeof(shm_dirs[0]), "%s/runbox-mem-%ld-otherns", shm, (long)dead_pid());
    snprintf(young, sizeof(shm_dirs[1]), "%s/runbox-mem-%ld-young1", shm, (long)dead_pid());
    ck_assert_int_eq(mkdir(other, 0700), 0);
    ck_assert_int_eq(mkdir(young, 0700), 0);
    ck_assert_int_eq(utimensat(AT_FDCWD, other, long_ago, 0), 0);
    lock = open(other, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(lock, 0);
    ck_assert_int_eq(flock(lock, LOCK_SH), 0);

    m = vfs_open(VFS_MEMORY, NULL, &err);
    ck_assert_msg(m != NULL, "%s", err.msg);
    vfs_free(m);
    ck_assert_int_eq(access(other, F_OK), 0);
    ck_assert_int_eq(access(young, F_OK), 0);

    close(lock); /* that daemon ends */
    m = vfs_open(VFS_MEMORY, NULL, &err);
    ck_assert_msg(m != NULL, "%s", err.msg);
    vfs_free(m);
    ck_assert_int_eq(access(other, F_OK), -1);
}
END_TEST

static Suite *vfs_suite(void)
{
    Suite *s = suite_create("vfs");
    TCase *tc;

    tc = tcase_create("normalize");
    tcase_add_loop_test(tc, test_vfs_normalize_table, 0,
                        (int)(sizeof(norm_rows) / sizeof(norm_rows[0])));
    tcase_add_test(tc, test_vfs_normalize_limits);
    tcase_add_test(tc, test_vfs_normalize_idempotent);
    suite_add_tcase(s, tc);

    tc = tcase_create("confinement");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_vfs_read_never_follows_out);
    tcase_add_test(tc, test_vfs_symlink_resolves_inside_root);
    tcase_add_test(tc, test_vfs_write_never_lands_outside);
    tcase_add_test(tc, test_vfs_write_replaces_final_symlink);
    tcase_add_test(tc, test_vfs_list_never_follows_out);
    tcase_add_test(tc, test_vfs_remove_never_follows_out);
    suite_add_tcase(s, tc);

    tc = tcase_create("read");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_vfs_read_directory_and_specials);
    tcase_add_test(tc, test_vfs_read_offset_length_cap);
    suite_add_tcase(s, tc);

    tc = tcase_create("write");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_vfs_write_atomic_exact_bytes);
    tcase_add_test(tc, test_vfs_write_failure_keeps_old_file);
    tcase_add_test(tc, test_vfs_write_keeps_mode_of_replaced_file);
    tcase_add_test(tc, test_vfs_write_long_name_temp_fits);
    tcase_add_test(tc, test_vfs_write_over_directory);
    tcase_add_test(tc, test_vfs_write_parent_is_file);
    suite_add_tcase(s, tc);

    tc = tcase_create("list");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_vfs_list_sorted_types);
    tcase_add_test(tc, test_vfs_list_capped);
    tcase_add_test(tc, test_vfs_names_round_trip);
    tcase_add_loop_test(tc, test_vfs_temp_names, 0, sizeof(temp_rows) / sizeof(temp_rows[0]));
    tcase_add_test(tc, test_vfs_temps_hidden_and_swept);
    tcase_add_test(tc, test_vfs_stat_types);
    suite_add_tcase(s, tc);

    tc = tcase_create("remove");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_vfs_remove_root_refused);
    tcase_add_test(tc, test_vfs_remove_nonempty_needs_recursive);
    suite_add_tcase(s, tc);

    tc = tcase_create("root");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_vfs_open_creates_root);
    tcase_add_test(tc, test_vfs_memory_lifecycle);
    tcase_add_test(tc, test_vfs_memory_removes_stale_dirs);
    tcase_add_test(tc, test_vfs_memory_keeps_dirs_of_other_pid_namespaces);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(vfs_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
