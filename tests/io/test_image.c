/* test_image.c — PNG encode/decode: exact round trips, PNGs of every common
 * colour type written by the ffmpeg CLI, agreement with the CLI's rgb24
 * output, and damaged input (every prefix and sampled bit flips of a PNG
 * vla.c wrote). */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/rng.h"
#include "io/image.h"

#define FF "ffmpeg -hide_banner -loglevel error -nostdin -y "

static void test_roundtrip(void **state) {
    (void)state;
    const int w = 37, h = 23, stride = 37 * 3 + 5;
    uint8_t *img = malloc((size_t)stride * h);
    vla_rng r = vla_rng_stream(11, 0);
    for (int i = 0; i < stride * h; i++) img[i] = (uint8_t)vla_rng_u32(&r);
    uint8_t *png, *back;
    size_t n;
    int bw, bh;
    assert_int_equal(vla_image_encode_png(img, w, h, stride, &png, &n), VLA_OK);
    assert_int_equal(vla_image_decode_png(png, n, &back, &bw, &bh), VLA_OK);
    assert_int_equal(bw, w);
    assert_int_equal(bh, h);
    for (int y = 0; y < h; y++) assert_memory_equal(back + (size_t)y * w * 3, img + (size_t)y * stride, (size_t)w * 3);
    free(back);

    /* A file that the ffmpeg CLI reads back to the same bytes. */
    const char *path = test_tmp_path("rt.png");
    assert_int_equal(vla_image_write_png(path, img, w, h, stride), VLA_OK);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, FF "-i '%s' -f rawvideo -pix_fmt rgb24 -", path);
    char *out = malloc((size_t)w * h * 3 + 2);
    assert_int_equal(test_run(cmd, out, (size_t)w * h * 3 + 2), 0);
    for (int y = 0; y < h; y++) assert_memory_equal(out + (size_t)y * w * 3, img + (size_t)y * stride, (size_t)w * 3);
    assert_int_equal(vla_image_read_png(path, &back, &bw, &bh), VLA_OK);
    assert_memory_equal(back, out, (size_t)w * h * 3);
    free(back);
    free(out);
    free(png);
    free(img);
}

/* Make a PNG of pix_fmt with the CLI; raw the CLI's bytes in raw_fmt. */
static void cli_png(const char *name, const char *pix_fmt, const char *raw_fmt, char *raw, size_t cap) {
    char cmd[1400];
    snprintf(cmd, sizeof cmd, FF "-f lavfi -i testsrc2=size=24x16 -frames:v 1 -pix_fmt %s '%s'", pix_fmt,
             test_tmp_path(name));
    assert_int_equal(test_run(cmd, NULL, 0), 0);
    snprintf(cmd, sizeof cmd, FF "-i '%s' -f rawvideo -pix_fmt %s -", test_tmp_path(name), raw_fmt);
    assert_int_equal(test_run(cmd, raw, cap), 0);
}

static void test_colour_types(void **state) {
    (void)state;
    const int w = 24, h = 16, np = w * h;
    char raw[24 * 16 * 8 + 2];
    uint8_t *rgb;
    int bw, bh;
    /* rgba and pal8: the CLI's rgb24 conversion is exact (drop alpha, look up). */
    const char *exact[][2] = {{"rgba.png", "rgba"}, {"pal.png", "pal8"}, {"rgb.png", "rgb24"}};
    for (int i = 0; i < 3; i++) {
        cli_png(exact[i][0], exact[i][1], "rgb24", raw, sizeof raw);
        assert_int_equal(vla_image_read_png(test_tmp_path(exact[i][0]), &rgb, &bw, &bh), VLA_OK);
        assert_int_equal(bw, w);
        assert_int_equal(bh, h);
        assert_memory_equal(rgb, raw, (size_t)np * 3);
        free(rgb);
    }
    /* grey: replicated; 16-bit: the high byte. */
    cli_png("gray.png", "gray", "gray", raw, sizeof raw);
    assert_int_equal(vla_image_read_png(test_tmp_path("gray.png"), &rgb, &bw, &bh), VLA_OK);
    for (int i = 0; i < np; i++)
        for (int c = 0; c < 3; c++) assert_int_equal(rgb[3 * i + c], (uint8_t)raw[i]);
    free(rgb);
    cli_png("rgb48.png", "rgb48be", "rgb48be", raw, sizeof raw);
    assert_int_equal(vla_image_read_png(test_tmp_path("rgb48.png"), &rgb, &bw, &bh), VLA_OK);
    for (int i = 0; i < np * 3; i++) assert_int_equal(rgb[i], (uint8_t)raw[2 * i]);
    free(rgb);
}

static void test_bad_png(void **state) {
    (void)state;
    uint8_t img[8 * 8 * 3] = {0};
    uint8_t *png, *rgb;
    size_t n;
    int w, h;
    assert_int_equal(vla_image_encode_png(img, 8, 8, 0, &png, &n), VLA_OK);
    assert_int_equal(vla_image_decode_png(png, 4, &rgb, &w, &h), VLA_ERR_FORMAT);
    assert_null(rgb);
    assert_int_not_equal(vla_image_decode_png(png, n / 2, &rgb, &w, &h), VLA_OK);
    assert_null(rgb);
    uint8_t junk[64];
    memcpy(junk, png, 8);
    for (int i = 8; i < 64; i++) junk[i] = (uint8_t)(i * 37);
    assert_int_not_equal(vla_image_decode_png(junk, sizeof junk, &rgb, &w, &h), VLA_OK);
    /* A forged IHDR of 40000×40000 is refused before any allocation. */
    uint8_t forged[256];
    assert_true(n <= sizeof forged);
    memcpy(forged, png, n);
    const uint8_t big[8] = {0, 0, 0x9c, 0x40, 0, 0, 0x9c, 0x40};
    memcpy(forged + 16, big, 8); /* IHDR width, height (big-endian) */
    assert_int_not_equal(vla_image_decode_png(forged, n, &rgb, &w, &h), VLA_OK);
    assert_null(rgb);
    png[0] = 'x';
    assert_int_equal(vla_image_decode_png(png, n, &rgb, &w, &h), VLA_ERR_FORMAT);
    free(png);
    assert_int_equal(vla_image_encode_png(img, 0, 8, 0, &png, &n), VLA_ERR_INVALID_ARG);
    assert_null(png);
    assert_int_equal(vla_image_read_png(test_tmp_path("missing.png"), &rgb, &w, &h) == VLA_OK, 0);
    assert_int_equal(vla_image_write_png("/nonexistent-dir/x.png", img, 8, 8, 0) == VLA_OK, 0);
}

static vla_status decode(const uint8_t *png, size_t n, void *user) {
    (void)user;
    uint8_t *rgb;
    int w, h;
    vla_status st = vla_image_decode_png(png, n, &rgb, &w, &h);
    free(rgb);
    return st;
}

/* A PNG written by vla.c: every prefix and every one of 2000 sampled
 * single-bit flips is refused with a message (chunk lengths, CRC-32s and
 * IEND are checked before FFmpeg decodes), never crashes or reads out of
 * bounds (ASan build). */
static void test_damaged_png_sweeps(void **state) {
    (void)state;
    const int w = 29, h = 17;
    uint8_t img[29 * 17 * 3];
    vla_rng r = vla_rng_stream(5, 0);
    for (size_t i = 0; i < sizeof img; i++) img[i] = (uint8_t)(i % 97 < 50 ? i : vla_rng_u32(&r));
    const char *path = test_tmp_path("sweep.png");
    assert_int_equal(vla_image_write_png(path, img, w, h, w * 3), VLA_OK);
    size_t n;
    uint8_t *png = (uint8_t *)test_slurp(path, &n);
    assert_int_equal(decode(png, n, NULL), VLA_OK);
    test_sweep_prefixes("sweep.png", png, n, 1, NULL, 0, decode, NULL);
    assert_int_equal(test_sweep_bit_flips("sweep.png", png, n, 0, 2000, 9, decode, NULL), 2000);
    free(png);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_colour_types),
        cmocka_unit_test(test_bad_png),
        cmocka_unit_test(test_damaged_png_sweeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
