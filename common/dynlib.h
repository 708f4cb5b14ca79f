/* common/dynlib.h - libcurl and OpenSSL, opened with dlopen() when they are first needed.
 *
 * Neither binary links them. libcurl brings some thirty libraries (TLS, Kerberos, LDAP, SSH,
 * IDN...) whose loading, relocation and constructors cost milliseconds and megabytes: 7.5 MiB
 * of runboxd's resident memory (about 40 % of it) when none of its external MCP servers speaks
 * HTTP, and most of runbox's start. So runbox opens libcurl at its first request, and runboxd
 * only when an external server over HTTP or WebSocket connects.
 *
 * Thread-safety: any thread. The first dynlib_load_*() call opens the library and fills its
 * table (pthread_once); the others wait for it and return its result. A thread may call through
 * a table only after dynlib_load_*() returned 0 in that thread (which orders the filling before
 * the use). The libraries stay loaded until the process exits.
 *
 * STYLE.md asks for curl_global_init in main before any thread starts; runboxd's first HTTP
 * server connects after its workers are up, so here the init runs once, under pthread_once,
 * before any other libcurl call of the process (they all go through this table), and libcurl
 * 7.84 and later make curl_global_init itself thread-safe (Debian 12's 7.88 lists
 * "threadsafe" among its features). */
#ifndef COMMON_DYNLIB_H
#define COMMON_DYNLIB_H

#include <stdbool.h>

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "errinfo.h"

/* The libcurl entry points the two binaries call (each is curl_<member>). */
struct dynlib_curl {
    CURLcode (*global_init)(long flags);
    void (*global_cleanup)(void);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *easy);
    CURLcode (*easy_setopt)(CURL *easy, CURLoption opt, ...);
    CURLcode (*easy_getinfo)(CURL *easy, CURLINFO info, ...);
    const char *(*easy_strerror)(CURLcode code);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_cleanup)(CURLM *multi);
    CURLMcode (*multi_setopt)(CURLM *multi, CURLMoption opt, ...);
    CURLMcode (*multi_add_handle)(CURLM *multi, CURL *easy);
    CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *easy);
    CURLMcode (*multi_socket_action)(CURLM *multi, curl_socket_t s, int ev_bitmask, int *running);
    CURLMcode (*multi_perform)(CURLM *multi, int *running);
    CURLMcode (*multi_poll)(CURLM *multi, struct curl_waitfd extra[], unsigned n, int timeout_ms,
                            int *numfds);
    CURLMsg *(*multi_info_read)(CURLM *multi, int *msgs_in_queue);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
    void (*slist_free_all)(struct curl_slist *list);
    CURLU *(*url)(void);
    void (*url_cleanup)(CURLU *u);
    CURLUcode (*url_get)(const CURLU *u, CURLUPart part, char **out, unsigned flags);
    CURLUcode (*url_set)(CURLU *u, CURLUPart part, const char *content, unsigned flags);
    void (*free)(void *p);
};

/* The OpenSSL entry points runboxd's WebSocket client calls (SSL_*, ERR_*, EVP_*; the member
 * is the function's name in lower case without its prefix where that stays unambiguous). */
struct dynlib_ssl {
    const SSL_METHOD *(*tls_client_method)(void);
    SSL_CTX *(*ctx_new)(const SSL_METHOD *method);
    void (*ctx_free)(SSL_CTX *ctx);
    int (*ctx_set_default_verify_paths)(SSL_CTX *ctx);
    void (*ctx_set_verify)(SSL_CTX *ctx, int mode, SSL_verify_cb cb);
    SSL *(*ssl_new)(SSL_CTX *ctx);
    void (*ssl_free)(SSL *ssl);
    int (*set_fd)(SSL *ssl, int fd);
    long (*ctrl)(SSL *ssl, int cmd, long larg, void *parg);
    int (*set1_host)(SSL *ssl, const char *host);
    int (*connect)(SSL *ssl);
    int (*read)(SSL *ssl, void *buf, int num);
    int (*write)(SSL *ssl, const void *buf, int num);
    int (*pending)(const SSL *ssl);
    int (*get_error)(const SSL *ssl, int ret);
    int (*shutdown)(SSL *ssl);
    unsigned long (*err_get_error)(void);
    void (*err_error_string_n)(unsigned long e, char *buf, size_t len);
    int (*evp_digest)(const void *data, size_t count, unsigned char *md, unsigned int *size,
                      const EVP_MD *type, ENGINE *impl);
    const EVP_MD *(*evp_sha1)(void);
};

/* Filled by dynlib_load_curl() and dynlib_load_ssl(); read-only for everyone else. */
extern struct dynlib_curl dynlib_curl;
extern struct dynlib_ssl dynlib_ssl;

/* Opens libcurl (libcurl.so.4) and calls curl_global_init(CURL_GLOBAL_DEFAULT), once: 0, or -1
 * with err set (ERR_UNAVAILABLE: the library is missing, lacks an entry point or failed to
 * initialise; the same answer every time). */
int dynlib_load_curl(struct errinfo *err);

/* Opens OpenSSL (libssl.so.3, which brings libcrypto), once: 0, or -1 with err set
 * (ERR_UNAVAILABLE, as above). */
int dynlib_load_ssl(struct errinfo *err);

/* True once libcurl was loaded (by any thread). */
bool dynlib_has_curl(void);

/* curl_global_cleanup() when libcurl was loaded, else nothing. At exit, after every thread
 * that used libcurl has ended. */
void dynlib_cleanup(void);

#endif
