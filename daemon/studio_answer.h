/* daemon/studio_answer.h - what a Studio tool's answer becomes before it leaves runboxd.
 *
 * The plugin answers in Roblox's JSON (HttpService:JSONEncode), which writes an empty Lua table
 * as [] also where the tool's output schema promises an object (no attributes, no properties):
 * such arrays become {} here, so structuredContent matches the schema clients were shown.
 *
 * Thread-safety: pure functions of their arguments; any thread. */
#ifndef DAEMON_STUDIO_ANSWER_H
#define DAEMON_STUDIO_ANSWER_H

#include "catalog.h"
#include "errinfo.h"

struct tools_result;

/* Finishes the plugin's successful answer for tool in *out (data owned by out): JSON that its
 * output schema describes gets its empty objects back; a tool that answers an image
 * (catalog_tool_answers_image: capture_screenshot) gets its pixels as a PNG in "data" (base64),
 * with "mimeType": "image/png", width, height and bytes (a bad image: ERR_INVALID saying so). Text
 * answers, and JSON with nothing to change, are left as they are (no copy). Returns 0, or -1 with
 * err (out of memory; *out is then unchanged). */
int studio_answer_finish(const struct catalog_tool *tool, struct tools_result *out,
                         struct errinfo *err);

#endif /* DAEMON_STUDIO_ANSWER_H */
