/* tests/unit/test_png.c - the PNG encoder for Studio screenshots (daemon/png.c): the file a
 * decoder reads back (signature, IHDR, CRCs, the pixels after inflating IDAT), and the sizes it
 * refuses. */
#include "png.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Walks the chunks of png, checking each CRC; returns the IDAT data (into idat, at most cap
 * bytes) and how many chunks there were. */
static int walk_chunks(const unsigned char *png, size_t len, unsigned char *idat, size_t cap,
                       size_t *idat_len, char types[][5], int max)
{
    size_t at = 8;
    int n = 0;

    *idat_len = 0;
    while (at + 12 <= len && n < max) {
        uint32_t clen = be32(png + at);
        uLong crc = crc32(0L, Z_NULL, 0);

        ck_assert_uint_le(at + 12 + clen, len);
        crc = crc32(crc, png + at + 4, clen + 4);
        ck_assert_uint_eq(be32(png + at + 8 + clen), (uint32_t)crc);
        memcpy(types[n], png + at + 4, 4);
        types[n][4] = '\0';
        if (memcmp(types[n], "IDAT", 4) == 0) {
            ck_assert_uint_le(*idat_len + clen, cap);
            memcpy(idat + *idat_len, png + at + 8, clen);
            *idat_len += clen;
        }
        at += 12 + clen;
        n++;
    }
    ck_assert_uint_eq(at, len); /* nothing after IEND */
    return n;
}

START_TEST(test_png_encodes_what_a_decoder_reads_back)
{
    enum { W = 3, H = 2 };
    unsigned char rgba[W * H * 4], idat[4096], raw[(W * 4 + 1) * H];
    unsigned char *png = NULL;
    size_t len = 0, idat_len;
    uLongf raw_len = sizeof(raw);
    char types[8][5];
    uint32_t w = 0, h = 0;

    for (size_t i = 0; i < sizeof(rgba); i++)
        rgba[i] = (unsigned char)(i * 37 + 5);
    ck_assert_int_eq(png_encode_rgba(rgba, sizeof(rgba), W, H, &png, &len, NULL), 0);
    ck_assert(png_header(png, len, &w, &h));
    ck_assert_uint_eq(w, W);
    ck_assert_uint_eq(h, H);
    ck_assert_int_eq(png[24], 8); /* bit depth */
    ck_assert_int_eq(png[25], 6); /* RGBA */
    ck_assert_int_eq(walk_chunks(png, len, idat, sizeof(idat), &idat_len, types, 8), 3);
    ck_assert_str_eq(types[0], "IHDR");
    ck_assert_str_eq(types[1], "IDAT");
    ck_assert_str_eq(types[2], "IEND");
    ck_assert_int_eq(uncompress(raw, &raw_len, idat, idat_len), Z_OK);
    ck_assert_uint_eq(raw_len, sizeof(raw));
    for (int y = 0; y < H; y++) {
        ck_assert_int_eq(raw[y * (W * 4 + 1)], 0); /* filter: none */
        ck_assert_mem_eq(raw + y * (W * 4 + 1) + 1, rgba + y * W * 4, W * 4);
    }
    free(png);
}
END_TEST

START_TEST(test_png_refuses_sizes_that_do_not_fit)
{
    unsigned char px[16] = {0}, *png = (unsigned char *)"x";
    size_t len = 7;
    struct errinfo err = {0};

    ck_assert_int_eq(png_encode_rgba(px, sizeof(px), 3, 1, &png, &len, &err), -1);
    ck_assert_int_eq(err.kind, ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.msg, "16 bytes of pixels do not make a 3x1 RGBA image"));
    ck_assert_ptr_null(png);
    ck_assert_uint_eq(len, 0);
    err = (struct errinfo){0};
    ck_assert_int_eq(png_encode_rgba(px, 0, 0, 4, &png, &len, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "0x4"));
    err = (struct errinfo){0};
    ck_assert_int_eq(png_encode_rgba(px, sizeof(px), PNG_SIDE_MAX + 1, 1, &png, &len, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "each side 1 to"));
    ck_assert(!png_header((const unsigned char *)"GIF89a", 6, NULL, NULL));
}
END_TEST

static Suite *png_suite(void)
{
    Suite *s = suite_create("png");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_png_encodes_what_a_decoder_reads_back);
    tcase_add_test(tc, test_png_refuses_sizes_that_do_not_fit);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(png_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
