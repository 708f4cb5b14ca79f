/* common/schema.h - the JSON Schema (2020-12 subset) validator for tool arguments.
 *
 * Supported keywords: type (a name or an array of names; "integer" accepts only whole
 * numbers), properties, required, additionalProperties (boolean or schema), enum, const,
 * minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength (counted in
 * Unicode code points), pattern is NOT supported, items, minItems, maxItems, oneOf, anyOf,
 * default (ignored when validating). Annotation keywords (title, description, examples,
 * $schema, $id, $comment, format, deprecated, readOnly, writeOnly) are accepted and ignored.
 *
 * Messages name the argument by its path and the rule, e.g.
 *   "arguments.depth: expected integer, got string"
 *   "arguments.path: required property is missing"
 *   "arguments.colour: unexpected property (allowed: path, content, encoding)"
 *   "arguments.encoding: must be one of \"utf8\", \"base64\"; got \"hex\""
 *   "arguments.max_results: must be >= 1; got 0"
 *   "arguments.items[2].name: must be at most 64 characters; got 70"
 * Each message is one line of at most SCHEMA_MSG_MAX - 1 bytes (values are quoted and cut).
 *
 * All functions are pure and may be called from any thread. */
#ifndef COMMON_SCHEMA_H
#define COMMON_SCHEMA_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

#define SCHEMA_MAX_ERRORS 8 /* messages kept per validation; more are only counted */
#define SCHEMA_MSG_MAX    256

struct schema_report {
    size_t count; /* all violations found (may exceed SCHEMA_MAX_ERRORS) */
    char msgs[SCHEMA_MAX_ERRORS][SCHEMA_MSG_MAX]; /* the first min(count, MAX) messages */
};

/* Validates value against schema. root names the value in messages ("arguments").
 * Returns 0 when valid (rep->count == 0), -1 when not (rep holds the messages). value may be
 * NULL, which is reported as "<root>: expected object, got nothing". */
int schema_validate(const cJSON *schema, const cJSON *value, const char *root,
                    struct schema_report *rep);

/* Roblox's HttpService:JSONEncode writes an empty Lua table as [], also where an object is
 * meant (no attributes, no properties). Replaces every empty array in *value whose schema asks
 * for an object (type "object") by an empty object, following properties,
 * additionalProperties and items; *value itself too. Nothing else changes. Returns how many
 * were replaced, or -1 when out of memory (what was replaced stays replaced). */
int schema_coerce_empty_objects(const cJSON *schema, cJSON **value);

/* The report as one text, a message per line, ending with "(N more problems)" when more were
 * found than kept: what a tool result says about arguments a schema refused. Owned (free), or
 * NULL when out of memory. */
char *schema_report_text(const struct schema_report *rep);

/* Checks that a schema uses only supported keywords with well-formed values, so that catalog
 * mistakes fail at build/test time, not at call time. Returns 0, or -1 with err naming the
 * schema path and keyword ("properties.depth.type: unknown type \"int\""). */
int schema_check(const cJSON *schema, struct errinfo *err);

#endif /* COMMON_SCHEMA_H */
