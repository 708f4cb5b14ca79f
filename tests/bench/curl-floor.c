/* tests/bench/curl-floor.c - the memory floor of any program that forwards with libcurl, for
 * proxy-mem.mjs (a benchmark helper, not a test): it opens libcurl as runbox does (dlopen of
 * libcurl.so.4, curl_global_init), POSTs the same body to the same URL N times over one kept-
 * alive connection, and prints its own RSS, PSS and private memory from /proc/self/smaps_rollup
 * as one JSON line. Nothing else: no catalog, no MCP, no event loop.
 *
 *   cc -O2 -o curl-floor tests/bench/curl-floor.c -ldl
 *   curl-floor URL BODY N   ->  {"rss_kb":…,"pss_kb":…,"private_kb":…}
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

static size_t discard(char *data, size_t size, size_t n, void *user)
{
    (void)data;
    (void)user;
    return size * n;
}

static long rollup_kb(const char *text, const char *key)
{
    const char *p = strstr(text, key);

    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

int main(int argc, char **argv)
{
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    struct curl_slist *hdrs;
    char text[4096];
    size_t len;
    FILE *f;
    CURL *e;
    void *lib;
    long n;

    if (argc != 4) {
        fprintf(stderr, "usage: curl-floor URL BODY N\n");
        return 2;
    }
    lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "curl-floor: %s\n", dlerror());
        return 1;
    }
    *(void **)&global_init = dlsym(lib, "curl_global_init");
    *(void **)&easy_init = dlsym(lib, "curl_easy_init");
    *(void **)&easy_setopt = dlsym(lib, "curl_easy_setopt");
    *(void **)&easy_perform = dlsym(lib, "curl_easy_perform");
    *(void **)&slist_append = dlsym(lib, "curl_slist_append");
    if (!global_init || !easy_init || !easy_setopt || !easy_perform || !slist_append ||
        global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(e = easy_init())) {
        fprintf(stderr, "curl-floor: libcurl does not work\n");
        return 1;
    }
    hdrs = slist_append(NULL, "Content-Type: application/json");
    easy_setopt(e, CURLOPT_URL, argv[1]);
    easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
    easy_setopt(e, CURLOPT_POSTFIELDS, argv[2]);
    easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    n = strtol(argv[3], NULL, 10);
    for (long i = 0; i < n; i++) {
        if (easy_perform(e) != CURLE_OK) {
            fprintf(stderr, "curl-floor: request %ld failed\n", i);
            return 1;
        }
    }
    f = fopen("/proc/self/smaps_rollup", "r");
    len = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f)
        fclose(f);
    text[len] = '\0';
    printf("{\"rss_kb\":%ld,\"pss_kb\":%ld,\"private_kb\":%ld}\n", rollup_kb(text, "\nRss:"),
           rollup_kb(text, "\nPss:"),
           rollup_kb(text, "\nPrivate_Clean:") + rollup_kb(text, "\nPrivate_Dirty:"));
    return 0;
}
