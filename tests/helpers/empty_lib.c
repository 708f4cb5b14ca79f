/* tests/helpers/empty_lib.c - a shared library with none of the entry points runboxd needs:
 * daemon_server.test.mjs puts it where runboxd looks for libcurl.so.4 and libssl.so.3
 * (LD_LIBRARY_PATH), to show what a daemon that cannot load them says. */
int runbox_empty_lib_marker;
