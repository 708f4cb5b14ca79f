/* common/schema_int.h - what schema.c (validation) shares with schema_check.c; not for other
 * modules. Pure helpers, no state. */
#ifndef COMMON_SCHEMA_INT_H
#define COMMON_SCHEMA_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#define SCHEMA_MAX_DEPTH 64 /* schema nesting accepted by schema_check */
#define SCHEMA_VALUE_CUT 40 /* bytes of a string value quoted in a message */

/* Longer than a message: a deep path is shown by its tail (see schema_path_shown), so the
 * tail must be kept. 64 levels (the parser's limit) of 40-byte names fit. */
#define SCHEMA_PATH_MAX 4096

/* The path of the value or schema member being checked ("arguments.items[2].name"): one
 * fixed buffer that grows and shrinks as a walk goes down and up. Zero it to start. */
struct schema_path {
    char buf[SCHEMA_PATH_MAX];
    size_t len;
};

/* Appends ".key" (or ["odd key"], escaped and cut) and returns the previous length for
 * schema_path_pop(). A path that no longer fits is cut. */
size_t schema_path_push_key(struct schema_path *p, const char *key);

/* Appends "[i]"; returns the previous length for schema_path_pop(). */
size_t schema_path_push_index(struct schema_path *p, size_t i);

/* Goes back up to the length a push returned. */
void schema_path_pop(struct schema_path *p, size_t old);

/* The path as shown in a message (borrowed from p): a path too long to leave room for the
 * rule keeps its tail (the part that names the failing member), cut on a character boundary,
 * and *prefix is then "..." (else ""). */
const char *schema_path_shown(const struct schema_path *p, const char **prefix);

/* A name from a schema or a value, escaped and cut to SCHEMA_VALUE_CUT bytes for a message
 * (without quotes; "..." marks a cut), written to buf of size bytes. Returns buf. */
const char *schema_quoted(const char *s, char *buf, size_t size);

/* True for a whole number a double holds exactly (magnitude at most 2^53 - 1). */
bool schema_is_safe_whole(double d);

/* The type bit of a JSON Schema type name ("integer", ...), 0 for an unknown name. */
unsigned schema_type_bit(const char *name);

/* The keywords of one schema object, gathered in one pass (borrowed from the schema; NULL
 * when absent). */
struct schema_keywords {
    const cJSON *type, *properties, *required, *additional, *enumv, *constv;
    const cJSON *minimum, *maximum, *exmin, *exmax, *minlen, *maxlen;
    const cJSON *items, *minitems, *maxitems, *oneof, *anyof;
};

/* Fills kw from the members of schema (an object; anything else leaves kw all NULL). */
void schema_gather(const cJSON *schema, struct schema_keywords *kw);

/* Checks v against schema, or with type non-NULL only against that "type" keyword value, in
 * the validator's counting-only mode, naming the value what ("default", "enum[2]"). Returns 0
 * when it passes, else -1 with the first message copied to msg (SCHEMA_MSG_MAX bytes). */
int schema_first_violation(const cJSON *schema, const cJSON *type, const cJSON *v, const char *what,
                           char *msg);

#endif /* COMMON_SCHEMA_INT_H */
