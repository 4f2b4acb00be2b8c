/* ops_cpu_precision.c — the CPU backend's mixed precision, emulated: a
 * quantised GEMM rounds its operands to bf16 or to scaled FP8 (base/dtype.h's
 * round-to-nearest-even conversions, FP8 saturating) into scratch copies and
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

/* dst [rows, cols] (packed) ← the operand's values as the GEMM reads them;
 * *amax (FP8) ← max(*amax, max |x|). */
static void quantize(float *dst, const float *src, int64_t rows, int64_t cols, int64_t ld, vla_precision mode,
                     const vla_fp8_operand *op) {
    float s = 1.0f, sinv = 1.0f, amax = 0.0f;
    bool e4m3 = true;
    if (mode == VLA_PREC_FP8) {
        s = *op->scale;
        sinv = 1.0f / s;
        e4m3 = op->fmt == VLA_FP8_E4M3;
    }
#pragma omp parallel for reduction(max : amax) if (rows * cols > VLA_PAR_MIN_ELEMS)
    for (int64_t r = 0; r < rows; r++) {
        const float *x = src + r * ld;
        float *y = dst + r * cols;
        for (int64_t c = 0; c < cols; c++) {
            float v = x[c];
            if (mode == VLA_PREC_BF16) {
                y[c] = vla_bf16_to_f32(vla_f32_to_bf16(v));
                continue;
            }
            float av = fabsf(v);
            if (av > amax || av != av) amax = av != av ? INFINITY : av; /* a NaN poisons the amax: no scale update */
            y[c] = (e4m3 ? vla_e4m3_to_f32(vla_f32_to_e4m3(v * s)) : vla_e5m2_to_f32(vla_f32_to_e5m2(v * s))) * sinv;
        }
    }
    if (mode == VLA_PREC_FP8 && op->amax && (amax > *op->amax || amax != amax)) *op->amax = amax;
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
