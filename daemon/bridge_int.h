/* daemon/bridge_int.h - private to the Studio bridge's files (bridge.c,
 * bridge_json.c) and its unit test. */
#ifndef DAEMON_BRIDGE_INT_H
#define DAEMON_BRIDGE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "bridge.h"

/* ---- answers (bridge_json.c) ---- */

/* Adds "name":value_json as the first member of r's result when it is a JSON object (ok and
 * is_json); anything else is left alone. Returns 0, or -1 when out of memory (r unchanged). */
int bridge__add_member(struct bridge_reply *r, const char *name, const char *value_json);

#endif /* DAEMON_BRIDGE_INT_H */
