/* fuzz_png.c — libFuzzer target for PNG decoding (io/image.h): any bytes
 * must decode or fail with a status, never crash, overread or allocate
 * without bound; a successful decode is re-encoded and decoded again. */
#include <stdint.h>
#include <stdlib.h>

#include "io/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
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
    return 0;
}
