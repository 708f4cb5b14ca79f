/* daemon/checkpoint.h - workspace checkpoints: save the workspace, list, diff and restore.
 *
 * DESIGN: a store directory outside the workspace (the sandbox never sees it) holds
 *   blobs/<checkpoint id>/<n>   the content of a file, as first saved by that checkpoint
 *   cp/<id>                     a manifest: a JSON header line, then one record per entry
 *                               (type, mode, size, mtime, ctime, inode, blob, path; a symlink's
 *                               target), NUL-terminated because paths may hold newlines
 * A checkpoint walks the workspace (never following symlinks) and compares each file's stat
 * (size, mtime, ctime, inode, mode) with what the previous checkpoint or restore recorded: an
 * unchanged file reuses its blob, so the cost grows with what changed, plus one stat per entry.
 * A file is copied through one open fd and checked again afterwards: a file that changed while
 * it was copied is tried again, then the checkpoint fails naming it. The manifest is written to
 * a temporary name and renamed into place last, so a failed checkpoint (a full disk) is never
 * listed and leaves no blob behind; the workspace is only read.
 *
 * A restore makes the workspace exactly the manifest's tree: contents, modes, symlinks; entries
 * the checkpoint did not have are removed. Each file is written to a temporary name and renamed
 * over the old one (atomic, as write_file). Files whose stat still matches the recorded one are
 * left alone, so a restore also costs what differs.
 *
 * Retention: past keep checkpoints the oldest are deleted, and blobs no manifest refers to.
 * Thread-safety: any thread; one operation at a time (internal lock). */
#ifndef DAEMON_CHECKPOINT_H
#define DAEMON_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

#define CHECKPOINT_KEEP_DEFAULT 50
#define CHECKPOINT_MESSAGE_MAX  1000
#define CHECKPOINT_DIFF_MAX     (64u << 10) /* bytes of unified diff text in one answer */

struct checkpoint_options {
    int ws_fd;     /* the workspace root; borrowed, outlives the store */
    int store_fd;  /* the store directory; taken over (closed by checkpoint_free) */
    unsigned keep; /* most checkpoints kept (0 = CHECKPOINT_KEEP_DEFAULT) */
    bool fsync;    /* fsync blobs and manifests */
};

struct checkpoint; /* opaque */

/* Opens the store (creating blobs/ and cp/). Owned or NULL with err set. */
struct checkpoint *checkpoint_new(const struct checkpoint_options *opt, struct errinfo *err);
void checkpoint_free(struct checkpoint *c); /* NULL is a no-op */

/* Saves the workspace. *out (owned): {id, message, created, files, dirs, symlinks, bytes,
 * copied_files, copied_bytes, removed_old: [ids dropped by retention]}. ERR_IO names the file
 * that kept changing or the write that failed (nothing is listed then). */
int checkpoint_save(struct checkpoint *c, const char *message, cJSON **out, struct errinfo *err);

/* {"checkpoints": [{id, message, created, files, bytes}, ...]} oldest first. Owned or NULL. */
cJSON *checkpoint_list(struct checkpoint *c, struct errinfo *err);

/* Makes the workspace what checkpoint id was. *out (owned): {id, written, removed, unchanged}.
 * ERR_NOT_FOUND for an unknown id (the message lists the known ones). */
int checkpoint_restore(struct checkpoint *c, const char *id, cJSON **out, struct errinfo *err);

/* What changed from checkpoint `from` (NULL = the newest) to `to` (NULL = the workspace now):
 * *text (owned) "added/removed/changed" lines and a unified diff of text files, capped at
 * CHECKPOINT_DIFF_MAX; *json (owned) {from, to, added, removed, changed, truncated}. */
int checkpoint_diff(struct checkpoint *c, const char *from, const char *to, char **text,
                    cJSON **json, struct errinfo *err);

/* Pure, for the unit test: a unified diff (3 lines of context) of a and b into out (bounded by
 * max bytes; *truncated set when cut). Returns the number of changed lines, or -1 when the
 * difference is too large to compute (more than 2000 edits). */
long checkpoint_unified_diff(const char *a, size_t alen, const char *b, size_t blen,
                             const char *name_a, const char *name_b, char **out, size_t max,
                             bool *truncated);

#endif /* DAEMON_CHECKPOINT_H */
