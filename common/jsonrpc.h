/* common/jsonrpc.h - JSON-RPC 2.0 framing: limits on raw text, parsing, classification, and
 * building response lines.
 *
 * All functions are pure (no I/O, no global state) and may be called from any thread.
 * Built lines are compact JSON with no newline inside (stdio framing needs one message a line);
 * the caller appends the '\n'. */
#ifndef COMMON_JSONRPC_H
#define COMMON_JSONRPC_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "errinfo.h"

#define JSONRPC_MAX_DEPTH 64 /* nesting of arrays/objects in any message or request body */
/* The longest string id, in bytes: its JSON text (6 bytes a byte at worst, \u0010) then fits
 * the 4 KiB an id's text gets wherever it is kept (MCP_ID_TEXT_MAX in mcp_int.h checks it). */
#define JSONRPC_MAX_ID_BYTES 512

enum jsonrpc_code {
    JSONRPC_PARSE_ERROR = -32700,
    JSONRPC_INVALID_REQUEST = -32600,
    JSONRPC_METHOD_NOT_FOUND = -32601,
    JSONRPC_INVALID_PARAMS = -32602,
    JSONRPC_INTERNAL_ERROR = -32603,
};

/* What a quick scan of raw JSON text found, without parsing it. */
struct jsonrpc_scan {
    int max_depth;       /* deepest nesting of [ and { outside strings */
    bool has_nul_escape; /* some string holds \u0000, which cJSON would silently cut there */
};

/* Scans text[0..len) (need not be NUL-terminated). Never fails; garbage scans as garbage. */
void jsonrpc_scan(const char *text, size_t len, struct jsonrpc_scan *out);

/* Parses text[0..len) into a cJSON tree. Returns the owned tree (free with cJSON_Delete) or
 * NULL with err set: ERR_TOO_LARGE when nesting exceeds JSONRPC_MAX_DEPTH, ERR_INVALID with
 * the byte offset of the syntax error otherwise ("invalid JSON at byte 17: ..."). */
cJSON *jsonrpc_parse(const char *text, size_t len, struct errinfo *err);

/* Rewrites each \u0000 escape inside a string of JSON text[0..len) as \ufffd, in place (the
 * same length): cJSON ends a string at a NUL, so a NUL would cut what follows it. Returns how
 * many it rewrote. An escaped backslash before the letters u0000 is left alone. */
size_t jsonrpc_nul_escapes_to_replacement(char *text, size_t len);

/* text[0..len) ready to parse with each \u0000 as U+FFFD: 0 with *copy NULL when text has no
 * "\u0000" at all (parse text itself), 0 with *copy an owned rewritten copy (len bytes; free),
 * -1 when out of memory. A quick search first: the usual message is not copied or walked. */
int jsonrpc_without_nul(const char *text, size_t len, char **copy);

/* jsonrpc_parse for a message from a server runbox is the client of (an external MCP server):
 * \u0000 inside a string becomes U+FFFD instead of refusing the whole message, so an answer
 * that carries a NUL (a binary file read as text) is kept, without its NUL bytes, which cJSON
 * cannot hold. Every other refusal is jsonrpc_parse's. */
cJSON *jsonrpc_parse_peer(const char *text, size_t len, struct errinfo *err);

/* Finds the message's own "id" (a member of the outermost object, not of anything inside it)
 * when it is a non-negative integer, without parsing: text[0..len) may be a message that
 * jsonrpc_parse refused (too deep, broken further on). True with *id set when found. */
bool jsonrpc_find_id(const char *text, size_t len, unsigned long long *id);

enum jsonrpc_kind {
    JSONRPC_KIND_REQUEST,      /* method + id */
    JSONRPC_KIND_NOTIFICATION, /* method, no id */
    JSONRPC_KIND_RESPONSE,     /* result or error + id (a client answering us) */
    JSONRPC_KIND_BATCH,        /* a JSON array */
    JSONRPC_KIND_INVALID,      /* anything else; *why says what is wrong */
};

/* Classifies one parsed message. For JSONRPC_KIND_INVALID, *why (if why is non-NULL) is set
 * to a static one-line reason such as "\"jsonrpc\" must be \"2.0\"", "id must be a string
 * or an integer" or "id is longer than 512 bytes". A request whose id is valid but whose other
 * members are wrong is still INVALID; jsonrpc_usable_id() then tells whether the error response can
 * carry the id. */
enum jsonrpc_kind jsonrpc_classify(const cJSON *msg, const char **why);

/* For a message whose text holds \u0000 (jsonrpc_scan's has_nul_escape), parsed from
 * text[0..len): each string id that cJSON cut at a NUL (the "id" of the message, or of each
 * message of a batch, and its params' "requestId") becomes a cJSON raw item holding the id's
 * whole JSON text ("a\u0000b"), so that answers carry it exactly. The functions below treat such
 * a raw item as a string id. *nul_elsewhere tells whether some other string (an argument)
 * holds \u0000 too. Returns 0, or -1 when out of memory (msg is then partly restored but valid,
 * and *nul_elsewhere is true). */
int jsonrpc_keep_nul_ids(cJSON *msg, const char *text, size_t len, bool *nul_elsewhere);

/* The message's id if it is a string or an integer number (borrowed from msg), else NULL. */
const cJSON *jsonrpc_usable_id(const cJSON *msg);

/* Builds {"jsonrpc":"2.0","id":<id>,"result":<result>}. id is copied (NULL -> null); takes
 * ownership of result (NULL -> {}). Returns an owned string (free with free()) or NULL on
 * allocation failure. */
char *jsonrpc_build_result(const cJSON *id, cJSON *result);

/* Builds {"jsonrpc":"2.0","id":<id>,"error":{"code":code,"message":message[,"data":data]}}.
 * id is copied (NULL -> null); message is copied; takes ownership of data (may be NULL).
 * Returns an owned string (free with free()) or NULL on allocation failure. */
char *jsonrpc_build_error(const cJSON *id, int code, const char *message, cJSON *data);

/* Builds a notification {"jsonrpc":"2.0","method":method[,"params":params]}; takes ownership
 * of params (may be NULL). Returns an owned string (free with free()) or NULL. */
char *jsonrpc_build_notification(const char *method, cJSON *params);

/* Pure. True when d is a finite whole number, of any magnitude (every double of magnitude 2^52
 * or more is whole). */
bool jsonrpc_is_whole(double d);

/* Pure. The JSON type of v as messages name it: "object", "array", "string", "boolean",
 * "null", "integer" (a number for which jsonrpc_is_whole holds) or "number"; "nothing" for
 * NULL or an invalid item. Returns a static string. */
const char *jsonrpc_type_name(const cJSON *v);

#endif /* COMMON_JSONRPC_H */
