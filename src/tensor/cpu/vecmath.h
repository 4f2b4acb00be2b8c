/* vecmath.h — branch-free f32 exp, sigmoid and tanh-GELU that GCC vectorises
 * inside `#pragma omp simd` loops (glibc's expf/tanhf are scalar calls and
 * were the top costs of training the tiny policies: softmax at head_dim 16,
 * GELU on every MLP).
 *
 * vla_expf: Cody–Waite reduction x = k·ln2 + r, |r| ≤ ln2/2, the Cephes
 * degree-7 polynomial for e^r, and 2^k applied as two power-of-two factors so
 * that results between FLT_MAX and the smallest subnormals need no branch.
 * Against glibc's expf on every 7th float with a normal result: at most
 * 1 ulp apart, 0.8% of inputs differ at all (tests/tensor/test_vecmath.c
 * checks ≤ 2 ulp on every 97th). x < −103 (and −inf) gives +0,
 * x > 88.73 gives +inf, NaN stays NaN.
 *
 * Every operation is a plain IEEE one (no FMA contraction: the build is ISO C,
 * -ffp-contract=off), so a vectorised loop body and its scalar remainder give
 * bitwise the same value for the same input: results never depend on how a
 * loop was split across threads or vector lanes. */
#ifndef VLA_TENSOR_VECMATH_H
#define VLA_TENSOR_VECMATH_H

#include <stdint.h>
#include <string.h>

static inline float vla_vm_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint32_t vla_vm_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float vla_expf(float x) {
    const float magic = 12582912.0f; /* 1.5·2^23: adding it rounds to an integer in the low mantissa bits */
    float xc = x < -104.0f ? -104.0f : x;
    xc = xc > 89.0f ? 89.0f : xc;
    float kr = xc * 1.44269504088896341f + magic;
    int32_t k = (int32_t)(vla_vm_bits(kr) - vla_vm_bits(magic)); /* round(x·log2 e), in [−150, 128] */
    float kf = kr - magic;
    float r = xc - kf * 0.693359375f; /* ln 2 in two parts; kf·C1 is exact */
    r = r - kf * -2.12194440e-4f;
    float z = r * r;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * z + r + 1.0f;
    int32_t k1 = k >> 1, k2 = k - k1; /* both in [−75, 64]: 2^k1 and 2^k2 are normal */
    float y = p * vla_vm_from_bits((uint32_t)(k1 + 127) << 23) * vla_vm_from_bits((uint32_t)(k2 + 127) << 23);
    y = x < -103.0f ? 0.0f : y;
    return x != x ? x : y;
}

/* 1 / (1 + e^−x) */
static inline float vla_sigmoidf(float x) { return 1.0f / (1.0f + vla_expf(-x)); }

/* GELU, tanh approximation: 0.5·x·(1 + tanh(u)) = x·sigmoid(2u),
 * u = √(2/π)·(x + 0.044715·x³) — the sigmoid form has no cancellation. */
#define VLA_GELU_K 0.7978845608028654f
#define VLA_GELU_C 0.044715f

static inline float vla_gelu_tanhf(float x) {
    float u = VLA_GELU_K * (x + VLA_GELU_C * x * x * x);
    return x / (1.0f + vla_expf(-2.0f * u));
}

/* d gelu / dx = s + 2·x·s·(1 − s)·du with s = sigmoid(2u) (since
 * 0.5·(1 + tanh u) = s and 1 − tanh² u = 4·s·(1 − s)); 1 − s = 1/(1 + 1/e)
 * has no cancellation and the right limits at e = 0 and e = ∞. */
static inline float vla_gelu_tanh_gradf(float x) {
    float u = VLA_GELU_K * (x + VLA_GELU_C * x * x * x);
    float e = vla_expf(-2.0f * u);
    float s = 1.0f / (1.0f + e), sc = 1.0f / (1.0f + 1.0f / e);
    float du = VLA_GELU_K * (1.0f + 3.0f * VLA_GELU_C * x * x);
    return s + 2.0f * x * s * sc * du;
}

/* Both at once from one exponential: *value is bitwise vla_gelu_tanhf(x)
 * and the return value bitwise vla_gelu_tanh_gradf(x). */
static inline float vla_gelu_tanh_value_gradf(float x, float *value) {
    float u = VLA_GELU_K * (x + VLA_GELU_C * x * x * x);
    float e = vla_expf(-2.0f * u);
    *value = x / (1.0f + e);
    float s = 1.0f / (1.0f + e), sc = 1.0f / (1.0f + 1.0f / e);
    float du = VLA_GELU_K * (1.0f + 3.0f * VLA_GELU_C * x * x);
    return s + 2.0f * x * s * sc * du;
}

#endif
