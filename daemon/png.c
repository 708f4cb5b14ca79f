/* daemon/png.c - PNG encoding of RGBA pixels (see png.h). */
#include "png.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Writes one chunk (length, type, data, CRC of type and data) at p; returns the end. */
static unsigned char *put_chunk(unsigned char *p, const char type[4], const unsigned char *data,
                                size_t len)
{
    uLong crc = crc32(0L, Z_NULL, 0);

    put32(p, (uint32_t)len);
    memcpy(p + 4, type, 4);
    if (len)
        memcpy(p + 8, data, len);
    crc = crc32(crc, p + 4, (uInt)(len + 4));
    put32(p + 8 + len, (uint32_t)crc);
    return p + 12 + len;
}

int png_encode_rgba(const unsigned char *rgba, size_t len, uint32_t width, uint32_t height,
                    unsigned char **out, size_t *outlen, struct errinfo *err)
{
    size_t row, raw_len;
    unsigned char *raw = NULL, *z = NULL, *png, *p;
    unsigned char ihdr[13];
    uLongf zlen;

    *out = NULL;
    *outlen = 0;
    if (width == 0 || height == 0 || width > PNG_SIDE_MAX || height > PNG_SIDE_MAX) {
        errinfo_set(err, ERR_INVALID, "a %ux%u image cannot be encoded (each side 1 to %u)",
                    (unsigned)width, (unsigned)height, PNG_SIDE_MAX);
        return -1;
    }
    row = (size_t)width * 4;
    if (len != row * height) {
        errinfo_set(err, ERR_INVALID,
                    "%zu bytes of pixels do not make a %ux%u RGBA image (that takes %zu)", len,
                    (unsigned)width, (unsigned)height, row * height);
        return -1;
    }
    raw_len = (row + 1) * height; /* each row after its filter byte (0: none) */
    raw = malloc(raw_len);
    zlen = compressBound((uLong)raw_len);
    z = raw ? malloc(zlen) : NULL;
    if (!z) {
        free(raw);
        errinfo_set(err, ERR_NOMEM, "out of memory encoding a %ux%u PNG", (unsigned)width,
                    (unsigned)height);
        return -1;
    }
    for (size_t y = 0; y < height; y++) {
        raw[y * (row + 1)] = 0;
        memcpy(raw + y * (row + 1) + 1, rgba + y * row, row);
    }
    if (compress2(z, &zlen, raw, (uLong)raw_len, 6) != Z_OK) {
        free(raw);
        free(z);
        errinfo_set(err, ERR_NOMEM, "zlib could not compress a %ux%u PNG", (unsigned)width,
                    (unsigned)height);
        return -1;
    }
    free(raw);
    png = malloc(sizeof(signature) + 12 + sizeof(ihdr) + 12 + zlen + 12);
    if (!png) {
        free(z);
        errinfo_set(err, ERR_NOMEM, "out of memory encoding a %ux%u PNG", (unsigned)width,
                    (unsigned)height);
        return -1;
    }
    put32(ihdr, width);
    put32(ihdr + 4, height);
    ihdr[8] = 8;  /* bits per channel */
    ihdr[9] = 6;  /* truecolour with alpha */
    ihdr[10] = 0; /* deflate */
    ihdr[11] = 0; /* adaptive filtering (each row says its filter) */
    ihdr[12] = 0; /* no interlace */
    memcpy(png, signature, sizeof(signature));
    p = put_chunk(png + sizeof(signature), "IHDR", ihdr, sizeof(ihdr));
    p = put_chunk(p, "IDAT", z, zlen);
    p = put_chunk(p, "IEND", NULL, 0);
    free(z);
    *out = png;
    *outlen = (size_t)(p - png);
    return 0;
}

bool png_header(const unsigned char *data, size_t len, uint32_t *width, uint32_t *height)
{
    if (len < sizeof(signature) + 8 + 13 || memcmp(data, signature, sizeof(signature)) != 0 ||
        get32(data + 8) != 13 || memcmp(data + 12, "IHDR", 4) != 0)
        return false;
    if (width)
        *width = get32(data + 16);
    if (height)
        *height = get32(data + 20);
    return true;
}
