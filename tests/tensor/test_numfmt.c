/* test_numfmt.c — base/numfmt.h, the number formats as the cuda
 * backend's kernels compute them, against their definition in
 * base/dtype.h (frexpf/ldexpf/rintf): every conversion f32 → bf16, f16,
 * FP8 E4M3 and E5M2 over every 257th f32 bit pattern plus every rounding
 * boundary of every exponent the formats reach (exactly half an ulp, one
 * f32 ulp either side), every code back to f32, the FP8 rounding a
 * quantized GEMM reads, the amax rule, and one tensor's delayed-scaling
 * update against the cpu backend's fp8_scale_update on random histories
 * (zeros, NaN, Inf, margins, most_recent). Equality is bit for bit (NaN:
 * both NaN). */
#include "test_util.h"
#include "base/dtype.h"
#include "base/rng.h"
#include "tensor/backend.h"
#include "base/numfmt.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static float from_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}
static uint32_t to_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static int64_t n_checked;

static void check_one(uint32_t u) {
    float x = from_bits(u);
    n_checked++;
    if (vla_nf_f32_to_bf16(x) != vla_f32_to_bf16(x)) fail_msg("bf16 of 0x%08x: %04x vs %04x", u, vla_nf_f32_to_bf16(x), vla_f32_to_bf16(x));
    if (vla_nf_f32_to_f16(x) != vla_f32_to_f16(x)) fail_msg("f16 of 0x%08x (%g): %04x vs %04x", u, x, vla_nf_f32_to_f16(x), vla_f32_to_f16(x));
    if (vla_nf_f32_to_e4m3(x) != vla_f32_to_e4m3(x))
        fail_msg("e4m3 of 0x%08x (%g): %02x vs %02x", u, x, vla_nf_f32_to_e4m3(x), vla_f32_to_e4m3(x));
    if (vla_nf_f32_to_e5m2(x) != vla_f32_to_e5m2(x))
        fail_msg("e5m2 of 0x%08x (%g): %02x vs %02x", u, x, vla_nf_f32_to_e5m2(x), vla_f32_to_e5m2(x));
}

static void test_encode_sweep(void **state) {
    (void)state;
    n_checked = 0;
    for (uint64_t u = 0; u <= 0xffffffffull; u += 257) check_one((uint32_t)u);
    /* specials */
    const uint32_t sp[] = {0, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u,
                           0x00000001u, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu};
    for (unsigned i = 0; i < sizeof sp / sizeof sp[0]; i++) check_one(sp[i]);
    assert_true(n_checked > 16000000);
}

/* Every rounding boundary: for each target mantissa width and every f32
 * exponent the targets' normal and subnormal ranges reach, mantissas at
 * k·quantum + half a quantum (the tie) and one f32 ulp either side, and
 * the values at k·quantum. */
static void test_encode_boundaries(void **state) {
    (void)state;
    const int mbits[] = {2, 3, 7, 10};
    for (unsigned mi = 0; mi < 4; mi++)
        for (int e = 127 - 40; e <= 127 + 17; e++) /* 2^−40 .. 2^17: every subnormal and normal range here */
            for (int extra = 0; extra <= 12; extra++) { /* quanta below the normal one: subnormal rounding */
                int q = 23 - mbits[mi] + extra;
                if (q > 23) break;
                uint32_t quantum = 1u << q, half = quantum >> 1;
                for (uint32_t k = 0; k < (1u << 23) / quantum && k < 2048; k++)
                    for (int sgn = 0; sgn < 2; sgn++) {
                        uint32_t base = (uint32_t)sgn << 31 | (uint32_t)e << 23 | k * quantum;
                        check_one(base);
                        if (half) {
                            check_one(base + half);
                            check_one(base + half - 1);
                            check_one(base + half + 1);
                        }
                    }
            }
}

static void test_decode_all(void **state) {
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = vla_nf_bf16_to_f32((uint16_t)h), b = vla_bf16_to_f32((uint16_t)h);
        if (to_bits(a) != to_bits(b) && !(isnan(a) && isnan(b))) fail_msg("bf16 %04x: %g vs %g", h, a, b);
        a = vla_nf_f16_to_f32((uint16_t)h), b = vla_f16_to_f32((uint16_t)h);
        if (to_bits(a) != to_bits(b) && !(isnan(a) && isnan(b))) fail_msg("f16 %04x: %g vs %g", h, a, b);
    }
    for (uint32_t c = 0; c < 256; c++) {
        float a = vla_nf_e4m3_to_f32((uint8_t)c), b = vla_e4m3_to_f32((uint8_t)c);
        if (to_bits(a) != to_bits(b) && !(isnan(a) && isnan(b))) fail_msg("e4m3 %02x: %g vs %g", c, a, b);
        a = vla_nf_e5m2_to_f32((uint8_t)c), b = vla_e5m2_to_f32((uint8_t)c);
        if (to_bits(a) != to_bits(b) && !(isnan(a) && isnan(b))) fail_msg("e5m2 %02x: %g vs %g", c, a, b);
    }
}

/* What the cpu backend's emulated GEMM reads for x at scale s, and the amax rule. */
static void test_fp8_round_and_amax(void **state) {
    (void)state;
    vla_rng r = vla_rng_stream(5, 0);
    for (int i = 0; i < 200000; i++) {
        float x = (float)(vla_rng_normal(&r) * pow(10.0, 6 * vla_rng_uniform(&r) - 3)), s = (float)(1 << (i % 12));
        float a = vla_nf_fp8_round(x * s, true), b = vla_e4m3_to_f32(vla_f32_to_e4m3(x * s));
        float c = vla_nf_fp8_round(x * s, false), d = vla_e5m2_to_f32(vla_f32_to_e5m2(x * s));
        assert_true(to_bits(a) == to_bits(b));
        assert_true(to_bits(c) == to_bits(d));
    }
    assert_true(vla_nf_amax_of(-3.5f) == 3.5f);
    assert_true(isinf(vla_nf_amax_of(NAN)) && vla_nf_amax_of(NAN) > 0);
    assert_true(isinf(vla_nf_amax_of(-INFINITY)) && vla_nf_amax_of(-INFINITY) > 0);
    assert_true(vla_nf_amax_of(-0.0f) == 0.0f && !signbit(vla_nf_amax_of(-0.0f)));
}

/* The delayed-scaling step against the cpu backend's slot. */
static void test_scale_step(void **state) {
    (void)state;
    const vla_ops *cpu = vla_backend_find("cpu");
    vla_rng r = vla_rng_stream(9, 0);
    for (int trial = 0; trial < 400; trial++) {
        int64_t n = 1 + trial % 7, L = 1 + (trial / 7) % 9;
        float *h1 = malloc(sizeof(float) * (size_t)(n * L)), *h2 = malloc(sizeof(float) * (size_t)(n * L));
        float *s1 = malloc(sizeof(float) * (size_t)n), *s2 = malloc(sizeof(float) * (size_t)n);
        float *fm = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n * L; i++) {
            double u = vla_rng_uniform(&r);
            h1[i] = u < 0.05 ? 0.0f : u < 0.07 ? NAN : u < 0.09 ? INFINITY : u < 0.1 ? 1e-44f
                                                                                   : (float)(vla_rng_uniform(&r) * 1e3);
            h2[i] = h1[i];
        }
        for (int64_t i = 0; i < n; i++) {
            s1[i] = s2[i] = (float)(vla_rng_uniform(&r) * 10);
            fm[i] = i % 2 ? VLA_E5M2_MAX : VLA_E4M3_MAX;
        }
        float margin = (float)(trial % 5) - 1.0f + (trial % 7 == 3 ? 0.5f : 0.0f); /* TE takes an int; ours a float */
        bool mr = trial % 3 == 0;
        cpu->fp8_scale_update(h1, s1, n, L, fm, margin, mr);
        for (int64_t i = 0; i < n; i++) /* column i of the [L, n] history, as the cuda kernel's thread i */
            s2[i] = vla_nf_fp8_scale_step(h2 + i, n, L, s2[i], fm[i], exp2f(-margin), mr);
        for (int64_t i = 0; i < n; i++) assert_true(to_bits(s1[i]) == to_bits(s2[i]));
        for (int64_t i = 0; i < n * L; i++) assert_true(to_bits(h1[i]) == to_bits(h2[i]) || (isnan(h1[i]) && isnan(h2[i])));
        free(h1), free(h2), free(s1), free(s2), free(fm);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_sweep),       cmocka_unit_test(test_encode_boundaries),
        cmocka_unit_test(test_decode_all),         cmocka_unit_test(test_fp8_round_and_amax),
        cmocka_unit_test(test_scale_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
