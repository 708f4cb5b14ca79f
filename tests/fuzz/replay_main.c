/* tests/fuzz/replay_main.c - runs fuzz inputs through a target without libFuzzer.
 *
 * Usage: fuzz_replay_<target> FILE|DIR...  Each file (each regular file of a directory) is
 * read into a buffer of exactly its size, so a sanitizer sees any read past the end, and
 * passed to LLVMFuzzerTestOneInput(). A target reports a bug by crashing or aborting; this
 * driver fails only when an input cannot be read or when there was nothing to run. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    uint8_t *buf;
    size_t got;

    if (!f || fstat(fileno(f), &st) != 0) {
        fprintf(stderr, "fuzz replay: %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return -1;
    }
    buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    if (!buf) {
        fclose(f);
        return -1;
    }
    got = fread(buf, 1, (size_t)st.st_size, f);
    fclose(f);
    if (got != (size_t)st.st_size) {
        fprintf(stderr, "fuzz replay: %s: short read\n", path);
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    return 0;
}

static int run_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    struct stat st;
    int rc = 0;

    if (!d) {
        fprintf(stderr, "fuzz replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    for (e = readdir(d); e; e = readdir(d)) {
        if (e->d_name[0] == '.')
            continue;
        if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
            continue;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (run_file(path) != 0)
            rc = -1;
        else
            (*count)++;
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    struct stat st;
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (run_dir(argv[i], &count) != 0)
                rc = 1;
        } else if (run_file(argv[i]) == 0) {
            count++;
        } else {
            rc = 1;
        }
    }
    fprintf(stderr, "fuzz replay: %zu inputs ran\n", count);
    if (count == 0) {
        fprintf(stderr, "fuzz replay: no inputs (usage: %s FILE|DIR...)\n", argv[0]);
        return 1;
    }
    return rc;
}
