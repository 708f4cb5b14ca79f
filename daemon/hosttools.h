/* daemon/hosttools.h - which of the programs the exec tool promises (node, npm, python3, git:
 * the catalog's "hostTools") are installed where the sandbox looks for them, with versions.
 *
 * Probed once at start: each name is looked up on the sandbox's PATH (the host's /usr, which the
 * sandbox sees read-only) and asked for its version, all at once. The versions are kept in a
 * cache file with the identity of each program's file, so a start finds them without running
 * anything (node --version alone takes 15-30 ms, before the HTTP listener may start) until a
 * program is replaced or upgraded. The result goes into /health
 * (sandbox.tools) and into the exec tool's description in the daemon's catalog, so the model is
 * never told about a program that is not there.
 * Thread-safety: a struct hosttools is written by hosttools_probe, then only read. */
#ifndef DAEMON_HOSTTOOLS_H
#define DAEMON_HOSTTOOLS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#define HOSTTOOLS_MAX 16
/* Where the sandbox finds programs (its PATH). */
#define HOSTTOOLS_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct hosttools_entry {
    char name[33];
    char path[256];   /* "" when not installed */
    char version[64]; /* "" when unknown */
};

struct hosttools {
    struct hosttools_entry e[HOSTTOOLS_MAX];
    size_t n;
};

/* Looks up each of names (at most HOSTTOOLS_MAX) in the directories of path (":"-separated;
 * NULL = HOSTTOOLS_PATH) and runs "<program> --version" for those whose version is not known,
 * all at once (at most 5 s in all). npm's version is read from its package.json.
 * cache_dir: a directory this process may write, or NULL (no cache). "<cache_dir>/hosttools.json"
 * keeps each version with the identity of the file the program resolves to (device, inode,
 * size, mtime, ctime); a program whose identity is unchanged is not run again, and the file is
 * rewritten only when a program was run. Cannot fail: a program that is missing or does not
 * answer has an empty path or version (and is asked again at the next start). */
void hosttools_probe(struct hosttools *h, const char *const *names, size_t n, const char *path,
                     const char *cache_dir);

/* Pure. The version in a program's --version output: the first word that starts with a digit,
 * or with "v" and a digit ("v20.1.0", "Python 3.11.2" -> "3.11.2", "git version 2.39.5" ->
 * "2.39.5"), copied into out (NUL-terminated); "" when there is none. */
void hosttools_parse_version(const char *text, char *out, size_t outsz);

/* Pure. The sentence for the exec tool's description: "Installed: node v20.1.0, git 2.39.5;
 * not installed: python3, npm." Owned (free()) or NULL. */
char *hosttools_sentence(const struct hosttools *h);

/* {"node": {"path": "/usr/bin/node", "version": "v20.1.0"}, "python3": null, ...}. Owned or
 * NULL. */
cJSON *hosttools_json(const struct hosttools *h);

#endif /* DAEMON_HOSTTOOLS_H */
