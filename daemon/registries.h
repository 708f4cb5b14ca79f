/* daemon/registries.h - the package registries the host's own npm and pip are configured to use,
 * which are the sandbox's default network allow list.
 *
 * Asked of the tools themselves, so every layer of their configuration counts (environment,
 * user and global config files, built-in defaults): `npm config list --json` (the "registry"
 * and every "@scope:registry" key) and pip's own configuration loader under python3 (index-url,
 * extra-index-url; without one, pip's built-in index and its file host). Each runs at most
 * REGISTRIES_TIMEOUT_MS with the daemon's own environment (HOME, npm_config_*, PIP_*).
 * Thread-safety: one caller at a time per struct registries. */
#ifndef DAEMON_REGISTRIES_H
#define DAEMON_REGISTRIES_H

#include <stddef.h>

#include "netpolicy.h"

#define REGISTRIES_TIMEOUT_MS 10000
#define REGISTRIES_MAX        16

struct registries {
    char npm[REGISTRIES_MAX][300]; /* rule texts ("host" or "host:port") */
    size_t nnpm;
    char pip[REGISTRIES_MAX][300];
    size_t npip;
    char npm_url[300];   /* npm's "registry" URL, or "" */
    char pip_index[300]; /* pip's index-url (the first index URL), or "" */
    char pip_extra[600]; /* the other index URLs, space-separated, or "" */
    char npm_note[200];  /* "" or why npm's registries are unknown */
    char pip_note[200];
};

/* Asks npm (on path, NULL = the sandbox's PATH) and python3's pip. Cannot fail: what cannot be
 * learnt has a note instead. */
void registries_discover(struct registries *r, const char *path);

/* Pure: the registry hosts in the output of `npm config list --json` (a JSON object). */
size_t registries_parse_npm(const char *json, char out[][300], size_t max);

/* Pure: the hosts in the output of the pip probe: one URL or bare host per line. */
size_t registries_parse_lines(const char *text, char out[][300], size_t max);

#endif /* DAEMON_REGISTRIES_H */
