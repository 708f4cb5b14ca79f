/* tests/unit/testutil.h - host-side fixture helpers shared by the unit tests that need a
 * temporary directory tree (test_vfs, test_vfs_search, test_tools, test_api). Every helper
 * fails the running Check test (ck_assert) instead of returning an error. */
#ifndef TESTS_UNIT_TESTUTIL_H
#define TESTS_UNIT_TESTUTIL_H

#include <stddef.h>

/* Creates a fresh private directory /tmp/<prefix>XXXXXX and writes its path to buf (of size
 * bytes). */
void testutil_mkdtemp(char *buf, size_t size, const char *prefix);

/* Removes path and everything below it, never following symlinks; missing is fine. */
void testutil_rm_rf(const char *path);

/* "<base>/<rel>" in one of 4 rotating static buffers (borrowed until the 4th next call). */
const char *testutil_path(const char *base, const char *rel);

/* Creates or truncates the host file path with data[0..len), mode 0644. */
void testutil_put(const char *path, const void *data, size_t len);

/* Creates the host directory path, mode 0755; it must not exist yet. */
void testutil_mkdir(const char *path);

#endif /* TESTS_UNIT_TESTUTIL_H */
