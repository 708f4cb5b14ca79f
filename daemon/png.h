/* daemon/png.h - PNG encoding of raw RGBA pixels, for Studio screenshots
 * (capture_screenshot: StudioCaptureService may hand the plugin raw RGBA8 pixels, and MCP image
 * content wants a PNG).
 *
 * The image is written as one truecolour-with-alpha PNG (colour type 6, 8 bits per channel, no
 * interlace), every row with filter "none", the whole pixel stream deflated by zlib.
 *
 * Thread-safety: pure; any thread. */
#ifndef DAEMON_PNG_H
#define DAEMON_PNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errinfo.h"

#define PNG_SIDE_MAX 8192u /* width and height at most */

/* Encodes width x height pixels of 4 bytes (R, G, B, A) each, row by row from the top, from
 * rgba[0..len): len must be exactly width * height * 4. Returns 0 with *out (owned, free()) and
 * *outlen, or -1 with err: ERR_INVALID (a side of 0 or over PNG_SIDE_MAX, len not matching, saying
 * both), ERR_NOMEM. */
int png_encode_rgba(const unsigned char *rgba, size_t len, uint32_t width, uint32_t height,
                    unsigned char **out, size_t *outlen, struct errinfo *err);

/* True when data[0..len) starts with the PNG signature and an IHDR chunk; *width and *height
 * get its size (either may be NULL). */
bool png_header(const unsigned char *data, size_t len, uint32_t *width, uint32_t *height);

#endif /* DAEMON_PNG_H */
