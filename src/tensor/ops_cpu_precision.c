/* ops_cpu_precision.c — the CPU backend's mixed precision, emulated: a
 * quantised GEMM rounds its operands to bf16 or to scaled FP8 (round to
 * nearest even as base/dtype.h's conversions, FP8 saturating) into scratch copies and
 * runs the f32 GEMM on them — f32 accumulation, as cuBLASLt's bf16/FP8
 * kernels — and FP8's delayed-scaling update (ops.h has the contract).
 *
 * The copies cost memory traffic a real bf16/FP8 kernel would not pay: this
 * is for numerics (the recipe trains here the way it will on a GPU), not
 * speed. amax is a max, so the threads' order does not change it. */
#include "tensor/ops_cpu_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/parallel.h"

/* The value bf16 stores for v (round to nearest even; NaN kept; overflow to
 * ±Inf): base/dtype.h's vla_f32_to_bf16 inlined, without the 16-bit trip. */
static inline float round_bf16(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    if ((u & 0x7fffffffu) <= 0x7f800000u) u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&v, &u, 4);
    return v;
}

/* The value an FP8 format (mbits mantissa bits, smallest normal exponent
 * emin, largest value max) stores for v, saturating, NaN kept: the same
 * values as base/dtype.h's encode + decode (tests/tensor/test_precision.c
 * checks every code against a nearest-value search), without libm. |v| is
 * rounded to a multiple of its quantum 2^k (k = max(e, emin) − mbits) by
 * adding and subtracting 2^(k+23): the f32 sum's ulp is 2^k, so the add
 * rounds to nearest even there. */
static inline float round_fp8(float v, int mbits, int emin, float max) {
    float a = fabsf(v);
    if (!(a < max)) return a >= max ? copysignf(max, v) : v; /* saturate (±Inf too); NaN stays */
    uint32_t u;
    memcpy(&u, &a, 4);
    int e = (int)(u >> 23) - 127;
    int k = (e > emin ? e : emin) - mbits;
    uint32_t mb = (uint32_t)(k + 23 + 127) << 23; /* 2^(k+23) */
    float m;
    memcpy(&m, &mb, 4);
    float r = (a + m) - m;
    return copysignf(r, v);
}

/* dst [rows, cols] (packed) ← the operand's values as the GEMM reads them;
 * *amax (FP8) ← max(*amax, max |x|), a NaN counting as +Inf. */
static void quantize(float *dst, const float *src, int64_t rows, int64_t cols, int64_t ld, vla_precision mode,
                     const vla_fp8_operand *op) {
    if (mode == VLA_PREC_BF16) {
#pragma omp parallel for if (rows * cols > VLA_PAR_MIN_ELEMS)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) dst[r * cols + c] = round_bf16(src[r * ld + c]);
        return;
    }
    bool e4m3 = op->fmt == VLA_FP8_E4M3;
    int mbits = e4m3 ? 3 : 2, emin = e4m3 ? -6 : -14;
    float max = e4m3 ? VLA_E4M3_MAX : VLA_E5M2_MAX, s = *op->scale, sinv = 1.0f / s, amax = 0.0f;
#pragma omp parallel for reduction(max : amax) if (rows * cols > VLA_PAR_MIN_ELEMS)
    for (int64_t r = 0; r < rows; r++) {
        const float *x = src + r * ld;
        float *y = dst + r * cols;
        for (int64_t c = 0; c < cols; c++) {
            float v = x[c], av = fabsf(v);
            av = av == av ? av : INFINITY; /* a NaN poisons the amax: the update keeps the scale */
            amax = av > amax ? av : amax;
            y[c] = round_fp8(v * s, mbits, emin, max) * sinv;
        }
    }
    if (op->amax && amax > *op->amax) *op->amax = amax;
}

void vla_cpu_sgemm_q(const vla_gemm_q *q, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    const vla_ops *cpu = vla_cpu_backend_table();
    if (!q || q->mode == VLA_PREC_FP32 || m == 0 || n == 0 || k == 0) {
        cpu->sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    /* the stored shapes: A is m×k (k×m when transposed), B k×n (n×k) */
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    float *qa = malloc((size_t)(ar * ac) * sizeof(float)), *qb = malloc((size_t)(br * bc) * sizeof(float));
    if (!qa || !qb) abort(); /* scratch of the operands' own size: out of memory here is out of memory everywhere */
    quantize(qa, a, ar, ac, lda, q->mode, &q->a);
    quantize(qb, b, br, bc, ldb, q->mode, &q->b);
    cpu->sgemm(ta, tb, m, n, k, alpha, qa, ac, qb, bc, beta, c, ldc);
    free(qa), free(qb);
}

/* TE's kernel, per tensor: fmaxf from 0 over the window (a NaN entry is
 * passed over, as fmaxf does; the GEMMs above record a NaN operand as +Inf,
 * which keeps the scale), scaled_max / amax in f32, FLT_MAX for an inf. */
void vla_cpu_fp8_scale_update(float *history, float *scale, int64_t n, int64_t L, const float *fmt_max, float margin,
                              bool most_recent) {
    float two_m = exp2f(-margin);
    for (int64_t i = 0; i < n; i++) {
        float a = history[i];
        if (!most_recent) {
            a = fmaxf(0.0f, a);
            for (int64_t j = 1; j < L; j++) a = fmaxf(a, history[j * n + i]);
        }
        if (isfinite(a) && a > 0) {
            float sc = (fmt_max[i] * two_m) / a;
            scale[i] = isinf(sc) ? FLT_MAX : sc;
        }
    }
    /* every row one older, the oldest dropped; row 0 restarts */
    if (L > 1) memmove(history + n, history, (size_t)((L - 1) * n) * sizeof(float));
    memset(history, 0, (size_t)n * sizeof(float));
}
