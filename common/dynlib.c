/* common/dynlib.c - libcurl and OpenSSL opened on first use (see dynlib.h).
 *
 * Each library is a table of entry points and a list of their names with the offset of each in
 * the table; loading is dlopen() of the versioned name (then the unversioned one a -dev package
 * provides), one dlsym() per name, and for libcurl its global init. The result, success or the
 * first error, is kept: a library that could not be loaded is not tried again. */
#include "dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#define CURL_SONAME "libcurl.so.4"
#define SSL_SONAME  "libssl.so.3"

struct dynlib_curl dynlib_curl;
struct dynlib_ssl dynlib_ssl;

struct sym {
    const char *name;
    size_t offset;
};

#define CURL_SYM(member)                                                                           \
    {                                                                                              \
        "curl_" #member, offsetof(struct dynlib_curl, member)                                      \
    }
static const struct sym curl_syms[] = {
    CURL_SYM(global_init),
    CURL_SYM(global_cleanup),
    CURL_SYM(easy_init),
    CURL_SYM(easy_cleanup),
    CURL_SYM(easy_setopt),
    CURL_SYM(easy_getinfo),
    CURL_SYM(easy_strerror),
    CURL_SYM(multi_init),
    CURL_SYM(multi_cleanup),
    CURL_SYM(multi_setopt),
    CURL_SYM(multi_add_handle),
    CURL_SYM(multi_remove_handle),
    CURL_SYM(multi_socket_action),
    CURL_SYM(multi_perform),
    CURL_SYM(multi_poll),
    CURL_SYM(multi_info_read),
    CURL_SYM(slist_append),
    CURL_SYM(slist_free_all),
    CURL_SYM(url),
    CURL_SYM(url_cleanup),
    CURL_SYM(url_get),
    CURL_SYM(url_set),
    CURL_SYM(free),
};
#undef CURL_SYM

#define SSL_SYM(name, member)                                                                      \
    {                                                                                              \
        name, offsetof(struct dynlib_ssl, member)                                                  \
    }
static const struct sym ssl_syms[] = {
    SSL_SYM("TLS_client_method", tls_client_method),
    SSL_SYM("SSL_CTX_new", ctx_new),
    SSL_SYM("SSL_CTX_free", ctx_free),
    SSL_SYM("SSL_CTX_set_default_verify_paths", ctx_set_default_verify_paths),
    SSL_SYM("SSL_CTX_set_verify", ctx_set_verify),
    SSL_SYM("SSL_new", ssl_new),
    SSL_SYM("SSL_free", ssl_free),
    SSL_SYM("SSL_set_fd", set_fd),
    SSL_SYM("SSL_ctrl", ctrl),
    SSL_SYM("SSL_set1_host", set1_host),
    SSL_SYM("SSL_connect", connect),
    SSL_SYM("SSL_read", read),
    SSL_SYM("SSL_write", write),
    SSL_SYM("SSL_pending", pending),
    SSL_SYM("SSL_get_error", get_error),
    SSL_SYM("SSL_shutdown", shutdown),
    SSL_SYM("ERR_get_error", err_get_error),
    SSL_SYM("ERR_error_string_n", err_error_string_n),
    SSL_SYM("EVP_Digest", evp_digest),
    SSL_SYM("EVP_sha1", evp_sha1),
};
#undef SSL_SYM

/* What one library's loading came to, kept for every later caller. */
struct outcome {
    pthread_once_t once;
    int rc;
    struct errinfo err;
};

static struct outcome curl_outcome = {.once = PTHREAD_ONCE_INIT};
static struct outcome ssl_outcome = {.once = PTHREAD_ONCE_INIT};
static atomic_bool curl_loaded;

/* Opens soname (or its unversioned name) and fills table from syms: 0, or -1 with err set
 * (what names the library). The library stays loaded on failure: harmless, and dlclose could
 * unmap what a table points to. */
static int open_table(const char *what, const char *soname, const char *devname,
                      const struct sym *syms, size_t n, void *table, struct errinfo *err)
{
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

    if (!lib)
        lib = dlopen(devname, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        errinfo_set(err, ERR_UNAVAILABLE, "cannot load %s (%s): %s", what, soname, dlerror());
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        void *fn = dlsym(lib, syms[i].name);

        if (!fn) {
            errinfo_set(err, ERR_UNAVAILABLE, "%s lacks %s", what, syms[i].name);
            return -1;
        }
        /* A function pointer has the size of a data pointer on every POSIX system. */
        memcpy((char *)table + syms[i].offset, &fn, sizeof(fn));
    }
    return 0;
}

static void load_curl(void)
{
    struct outcome *o = &curl_outcome;

    o->rc = open_table("libcurl", CURL_SONAME, "libcurl.so", curl_syms,
                       sizeof(curl_syms) / sizeof(*curl_syms), &dynlib_curl, &o->err);
    if (o->rc == 0 && dynlib_curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        errinfo_set(&o->err, ERR_UNAVAILABLE, "libcurl failed to initialise");
        o->rc = -1;
    }
    if (o->rc == 0)
        atomic_store(&curl_loaded, true);
}

static void load_ssl(void)
{
    struct outcome *o = &ssl_outcome;

    o->rc = open_table("OpenSSL", SSL_SONAME, "libssl.so", ssl_syms,
                       sizeof(ssl_syms) / sizeof(*ssl_syms), &dynlib_ssl, &o->err);
}

static int outcome_of(const struct outcome *o, struct errinfo *err)
{
    if (o->rc < 0)
        errinfo_set(err, o->err.kind, "%s", o->err.msg);
    return o->rc;
}

int dynlib_load_curl(struct errinfo *err)
{
    pthread_once(&curl_outcome.once, load_curl);
    return outcome_of(&curl_outcome, err);
}

int dynlib_load_ssl(struct errinfo *err)
{
    pthread_once(&ssl_outcome.once, load_ssl);
    return outcome_of(&ssl_outcome, err);
}

bool dynlib_has_curl(void)
{
    return atomic_load(&curl_loaded);
}

void dynlib_cleanup(void)
{
    if (atomic_load(&curl_loaded))
        dynlib_curl.global_cleanup();
}
