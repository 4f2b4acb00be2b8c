/* fuzz_png.c — libFuzzer target for PNG decoding (io/image.h): any bytes
 * must decode or fail with a status, never crash, overread or allocate
 * without bound; a successful decode is re-encoded and decoded again.
 *
 * The decoder refuses a chunk whose CRC-32 is wrong, which almost every
 * mutation makes it; so each input is decoded once as it is (the chunk
 * walk) and once with its CRCs recomputed (FFmpeg's decoder and the pixel
 * conversions behind it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "io/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Rewrite the CRC of every whole chunk after the 8-byte signature. */
static void fix_crcs(uint8_t *p, size_t n) {
    for (size_t pos = 8; n >= 12 && pos <= n - 12;) {
        uint32_t len = be32(p + pos);
        if (len > n - pos - 12) return;
        uint32_t c = (uint32_t)crc32(0, p + pos + 4, len + 4);
        uint8_t *q = p + pos + 8 + len;
        q[0] = (uint8_t)(c >> 24), q[1] = (uint8_t)(c >> 16), q[2] = (uint8_t)(c >> 8), q[3] = (uint8_t)c;
        pos += 12 + (size_t)len;
    }
}

static void decode_check(const uint8_t *data, size_t size) {
    uint8_t *rgb = NULL;
    int w = 0, h = 0;
    if (vla_image_decode_png(data, size, &rgb, &w, &h) == VLA_OK && (size_t)w * (size_t)h <= 1u << 20) {
        uint8_t *png = NULL, *back = NULL;
        size_t n = 0;
        int w2, h2;
        if (vla_image_encode_png(rgb, w, h, 0, &png, &n) == VLA_OK &&
            vla_image_decode_png(png, n, &back, &w2, &h2) == VLA_OK) {
            if (w2 != w || h2 != h) abort();
            for (size_t i = 0; i < (size_t)w * (size_t)h * 3; i++)
                if (back[i] != rgb[i]) abort(); /* lossless round trip */
        }
        free(back);
        free(png);
    }
    free(rgb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    decode_check(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    fix_crcs(copy, size);
    if (size && memcmp(copy, data, size) != 0) decode_check(copy, size); /* only when a CRC changed */
    free(copy);
    return 0;
}
