/* test_dtype.c — f32 ↔ bf16/f16/FP8 conversions against independent references:
 * tables written by tools/gen_dtype_goldens.py (exact rational FP8 decoding,
 * PyTorch's bf16/f16 casts), a brute-force nearest-code search for FP8
 * encoding, a two-candidate search for bf16, and the compiler's _Float16. */
#include "test_util.h"
#include "base/dtype.h"
#include "base/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}
static float bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static float e4m3_table[256], e5m2_table[256];
static int have_tables;

typedef struct {
    uint32_t in;
    uint32_t out;
} pair;
static pair *bf16_cases, *f16_cases;
static int n_bf16, n_f16;

static void load_goldens(void) {
    if (have_tables) return;
    FILE *f = fopen(test_source_path("tests/base/data/dtype_goldens.txt"), "r");
    assert_non_null(f);
    bf16_cases = malloc(sizeof(pair) * 20000);
    f16_cases = malloc(sizeof(pair) * 20000);
    char kind[32];
    unsigned a, b;
    char line[128];
    int decoded = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        assert_int_equal(sscanf(line, "%31s %x %x", kind, &a, &b), 3);
        if (!strcmp(kind, "decode_e4m3")) e4m3_table[a] = bits_f32(b), decoded++;
        else if (!strcmp(kind, "decode_e5m2")) e5m2_table[a] = bits_f32(b), decoded++;
        else if (!strcmp(kind, "bf16") && n_bf16 < 20000) bf16_cases[n_bf16++] = (pair){a, b};
        else if (!strcmp(kind, "f16") && n_f16 < 20000) f16_cases[n_f16++] = (pair){a, b};
    }
    fclose(f);
    assert_int_equal(decoded, 512);
    assert_true(n_bf16 > 5000 && n_f16 > 5000);
    have_tables = 1;
}

static void same_float(float got, float want, const char *what, unsigned code) {
    if (isnan(want)) {
        if (!isnan(got)) fail_msg("%s %02x: got %g, want NaN", what, code, got);
        return;
    }
    if (f32_bits(got) != f32_bits(want)) fail_msg("%s %02x: got %a, want %a", what, code, got, want);
}

static void test_fp8_decode_all_codes(void **state) {
    load_goldens();
    for (unsigned c = 0; c < 256; c++) {
        same_float(vla_e4m3_to_f32((uint8_t)c), e4m3_table[c], "e4m3", c);
        same_float(vla_e5m2_to_f32((uint8_t)c), e5m2_table[c], "e5m2", c);
    }
    assert_true(vla_e4m3_to_f32(0x7e) == 448.0f);
    assert_true(vla_e5m2_to_f32(0x7b) == 57344.0f);
}

/* Independent encoder: the nearest representable value by exhaustive search
 * over the decoded table; ties go to the code with an even mantissa; beyond
 * the largest finite value (and ±Inf) saturate; NaN maps to NaN. */
static uint8_t brute_encode(const float *table, float max, float x) {
    if (isnan(x)) return 0xff; /* marker: expect a NaN code */
    int neg = signbit(x) != 0;
    double ax = fabs((double)x);
    if (ax >= max) ax = max;
    int best = -1;
    double best_d = INFINITY;
    for (int c = 0; c < 128; c++) {
        float v = table[c];
        if (!isfinite(v)) continue;
        double d = fabs((double)v - ax);
        if (d < best_d || (d == best_d && (c & 1) == 0)) best_d = d, best = c;
    }
    return (uint8_t)(best | (neg ? 0x80 : 0));
}

static void check_fp8_encode(float x) {
    uint8_t want4 = brute_encode(e4m3_table, 448.0f, x), got4 = vla_f32_to_e4m3(x);
    uint8_t want5 = brute_encode(e5m2_table, 57344.0f, x), got5 = vla_f32_to_e5m2(x);
    if (isnan(x)) {
        assert_true(isnan(vla_e4m3_to_f32(got4)));
        assert_true(isnan(vla_e5m2_to_f32(got5)));
        return;
    }
    if (got4 != want4) fail_msg("e4m3(%a): got %02x, want %02x", x, got4, want4);
    if (got5 != want5) fail_msg("e5m2(%a): got %02x, want %02x", x, got5, want5);
}

static void test_fp8_encode_vs_nearest_search(void **state) {
    load_goldens();
    /* every code's value, every midpoint between neighbours (ties), ±1 ulp */
    const float *tables[2] = {e4m3_table, e5m2_table};
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 127; c++) {
            float a = tables[t][c], b = tables[t][c + 1];
            if (!isfinite(a) || !isfinite(b)) continue;
            float mid = (float)(((double)a + (double)b) / 2);
            float xs[] = {a, b, mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), -mid, -a};
            for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) check_fp8_encode(xs[i]);
        }
    float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 448.0f, 449.0f, 464.0f, 1e30f, -1e30f, 57344.0f,
                        61440.0f, 1e-45f, -1e-45f, 1e-38f, 0x1p-10f, 0x1p-17f, 0x1.8p-17f, 0x1p-16f};
    for (unsigned i = 0; i < sizeof specials / sizeof specials[0]; i++) check_fp8_encode(specials[i]);
    /* log-uniform magnitudes across and beyond both ranges */
    vla_rng r = vla_rng_stream(7, 0);
    for (int i = 0; i < 200000; i++) {
        float mag = ldexpf(1.0f + vla_rng_uniform(&r), (int)vla_rng_int(&r, -24, 18));
        check_fp8_encode(vla_rng_u32(&r) & 1 ? -mag : mag);
    }
    /* saturation and NaN rules stated in dtype.h */
    assert_int_equal(vla_f32_to_e4m3(INFINITY), 0x7e);
    assert_int_equal(vla_f32_to_e4m3(-INFINITY), 0xfe);
    assert_int_equal(vla_f32_to_e5m2(INFINITY), 0x7b);
    assert_int_equal(vla_f32_to_e4m3(-NAN) & 0x7f, 0x7f);
}

static void test_bf16_f16_vs_pytorch(void **state) {
    load_goldens();
    for (int i = 0; i < n_bf16; i++) {
        float x = bits_f32(bf16_cases[i].in);
        uint16_t got = vla_f32_to_bf16(x);
        if (got != bf16_cases[i].out) fail_msg("bf16(%a) = %04x, torch %04x", x, got, bf16_cases[i].out);
    }
    for (int i = 0; i < n_f16; i++) {
        float x = bits_f32(f16_cases[i].in);
        uint16_t got = vla_f32_to_f16(x);
        if (got != f16_cases[i].out) fail_msg("f16(%a) = %04x, torch %04x", x, got, f16_cases[i].out);
    }
}

/* bf16 reference: the two candidates around x (truncate, truncate + 1 ulp),
 * the nearer in double wins, a tie goes to the even one. */
static uint16_t bf16_reference(float x) {
    uint32_t u = f32_bits(x);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    double dl = fabs((double)vla_bf16_to_f32(lo) - x);
    /* IEEE rounds as if the exponent were unbounded: Inf stands for ±2^128 */
    double vh = (hi & 0x7fff) == 0x7f80 ? ((hi & 0x8000) ? -0x1p128 : 0x1p128) : (double)vla_bf16_to_f32(hi);
    double dh = fabs(vh - x);
    if (dl < dh) return lo;
    if (dh < dl) return hi;
    return (lo & 1) ? hi : lo;
}

static void test_bf16_sweep_and_ties(void **state) {
    for (uint64_t u = 0; u <= 0xffffffffull; u += 257) {
        float x = bits_f32((uint32_t)u);
        if (isnan(x)) {
            assert_true(isnan(vla_bf16_to_f32(vla_f32_to_bf16(x))));
            continue;
        }
        uint16_t got = vla_f32_to_bf16(x), want = bf16_reference(x);
        if (got != want) fail_msg("bf16(%a): got %04x want %04x", x, got, want);
    }
    /* every exact tie: low half 0x8000 — rounds to the even neighbour */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float x = bits_f32((h << 16) | 0x8000u);
        if (isnan(x) || isinf(x)) continue;
        uint16_t got = vla_f32_to_bf16(x);
        uint16_t want = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        if (got != want) fail_msg("bf16 tie %a: got %04x want %04x", x, got, want);
    }
    for (uint32_t h = 0; h < 0x10000; h++) { /* round trip is exact */
        float x = vla_bf16_to_f32((uint16_t)h);
        if (!isnan(x)) assert_int_equal(vla_f32_to_bf16(x), h);
    }
}

static void test_f16_vs_compiler(void **state) {
    for (uint64_t u = 0; u <= 0xffffffffull; u += 1031) {
        float x = bits_f32((uint32_t)u);
        _Float16 h = (_Float16)x;
        uint16_t want;
        memcpy(&want, &h, 2);
        uint16_t got = vla_f32_to_f16(x);
        if (isnan(x)) {
            assert_true(isnan(vla_f16_to_f32(got)));
            continue;
        }
        if (got != want) fail_msg("f16(%a): got %04x want %04x", x, got, want);
        if (vla_f16_to_f32(got) != (float)h) fail_msg("f16 decode %04x", got);
    }
}

static void test_convert_bulk(void **state) {
    float src[6] = {1.5f, -2.25f, 1000.0f, NAN, 0.0f, 3.0f};
    uint8_t e4[6];
    float back[6];
    vla_convert(e4, VLA_F8E4M3, src, VLA_F32, 6);
    vla_convert(back, VLA_F32, e4, VLA_F8E4M3, 6);
    assert_true(back[0] == 1.5f && back[1] == -2.25f && back[2] == 448.0f && isnan(back[3]));
    int64_t ints[3];
    float f3[3] = {3.9f, -2.5f, 1e30f};
    vla_convert(ints, VLA_I64, f3, VLA_F32, 3);
    assert_true(ints[0] == 3 && ints[1] == -2 && ints[2] == INT64_MAX);
    assert_int_equal(vla_dtype_size(VLA_BF16), 2);
    vla_dtype t;
    assert_int_equal(vla_dtype_from_safetensors_name("F8_E5M2", &t), VLA_OK);
    assert_int_equal(t, VLA_F8E5M2);
    assert_int_equal(vla_dtype_from_safetensors_name("F99", &t), VLA_ERR_UNSUPPORTED);
    assert_non_null(strstr(vla_error_message(), "F99"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_decode_all_codes),  cmocka_unit_test(test_fp8_encode_vs_nearest_search),
        cmocka_unit_test(test_bf16_f16_vs_pytorch),   cmocka_unit_test(test_bf16_sweep_and_ties),
        cmocka_unit_test(test_f16_vs_compiler),       cmocka_unit_test(test_convert_bulk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
