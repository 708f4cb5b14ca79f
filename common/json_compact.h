/* common/json_compact.h - checks a JSON text without building a tree, and copies it without
 * the whitespace between its tokens: what a program that only stores and forwards JSON text
 * (the engine's tool schemas, listed as given and parsed only when a call needs them) uses in
 * place of a parse and a print.
 *
 * The grammar is RFC 8259's, with cJSON's own limits, so that a text accepted here is one that
 * cJSON parses: nesting at most JSON_COMPACT_DEPTH deep, and no lone UTF-16 surrogate in a
 * \u escape. Strings are copied byte for byte (escapes kept as written), so the copy means the
 * same as the text but is not always what cJSON_PrintUnformatted would print. */
#ifndef COMMON_JSON_COMPACT_H
#define COMMON_JSON_COMPACT_H

#include <stddef.h>

#include "errinfo.h"
#include "jsonbuf.h"

#define JSON_COMPACT_DEPTH 1000 /* cJSON's CJSON_NESTING_LIMIT */

/* Appends text[0..len) to out without its insignificant whitespace when it is exactly one JSON
 * value (whitespace around it allowed). Returns the value's first character ('{', '[', '"',
 * 't', 'f', 'n', '-' or a digit), or -1: ERR_INVALID with the byte offset and what was wrong
 * for a text that is not JSON (out then holds an unfinished copy: discard it), or as
 * jsonbuf_put for out's ceiling or memory. */
int json_compact(const char *text, size_t len, struct jsonbuf *out, struct errinfo *err);

#endif /* COMMON_JSON_COMPACT_H */
