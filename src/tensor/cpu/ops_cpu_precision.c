/* ops_cpu_precision.c — the CPU backend's mixed precision: a quantised GEMM
 * rounds its operands to bf16 or to scaled FP8 (round to nearest even as
 * base/dtype.h's conversions, FP8 saturating) into scratch copies and runs
 * an f32-accumulating GEMM on them, as cuBLASLt's bf16/FP8 kernels do — and
 * FP8's delayed-scaling update (ops.h has the contract).
 *
 * bf16 runs natively where the CPU has AVX512-BF16 or AMX and oneDNN is the
 * GEMM library (tensor/cpu/gemm.h: vla_gemm_bf16_native): the copies are bf16
 * and oneDNN's bf16 kernels multiply them, about twice the f32 rate on a
 * Zen 5 (docs/benchmarks.md) — issue 35's decision, the faster of the two.
 * Elsewhere (and with VLA_GEMM=openblas) the copies are the rounded values
 * in f32 and the f32 GEMM runs on them: the same products, exact in f32,
 * summed in another order. FP8 is always emulated that way: no CPU
 * multiplies FP8. The copies cost memory traffic a fused kernel would not
 * pay. amax is a max, so the threads' order does not change it. */
#include "tensor/cpu/ops_cpu_internal.h"
#include "tensor/gemm_epilogue.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/numfmt.h"
#include "tensor/cpu/gemm.h"
#include "tensor/cpu/parallel.h"

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

#define BF16_NATIVE_MIN_MACS (128 * 128 * 128)

/* dst [rows, cols] (packed) ← src as bf16 codes (base/numfmt.h, inline:
 * the values vla_nf_bf16_round gives). */
static void pack_bf16(uint16_t *dst, const float *src, int64_t rows, int64_t cols, int64_t ld) {
#pragma omp parallel for if (rows * cols > VLA_PAR_MIN_ELEMS)
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) dst[r * cols + c] = vla_nf_f32_to_bf16(src[r * ld + c]);
}

/* dst [rows, cols] (packed) ← the operand's values as the GEMM reads them;
 * *amax (FP8) ← max(*amax, max |x|), a NaN counting as +Inf. */
static void quantize(float *dst, const float *src, int64_t rows, int64_t cols, int64_t ld, vla_precision mode,
                     const vla_fp8_operand *op) {
    if (mode == VLA_PREC_BF16) {
#pragma omp parallel for if (rows * cols > VLA_PAR_MIN_ELEMS)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) dst[r * cols + c] = vla_nf_bf16_round(src[r * ld + c]);
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

static int64_t operand_casts; /* ops.h, VLA_STAT_OPERAND_CASTS */

int64_t vla_cpu_operand_casts(void) { return __atomic_load_n(&operand_casts, __ATOMIC_RELAXED); }

void vla_cpu_sgemm_q(const vla_gemm_q *q, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    const vla_ops *cpu = vla_cpu_backend_table();
    if (!q || q->mode == VLA_PREC_FP32 || m == 0 || n == 0 || k == 0) {
        cpu->sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    /* the stored shapes: A is m×k (k×m when transposed), B k×n (n×k) */
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    /* a ready B (prepare_operand) is the rounded copy quantize would make, rows of bc */
    const float *rb = q->b_ready, *ra = q->a_ready;
    if (rb) b = rb, ldb = bc;
    if (ra) a = ra, lda = ac; /* a ready A: the rounded copy in A's stored shape (ops.h) */
    __atomic_fetch_add(&operand_casts, (ra ? 0 : 1) + (rb ? 0 : 1), __ATOMIC_RELAXED);
    /* natively from 128³ multiply-adds up: below, oneDNN's bf16 primitive costs more per call than it saves
     * (0.8× f32 at 64³, 1.4× at 128³: docs/benchmarks.md). A function of the shape, as the split is. */
    if (q->mode == VLA_PREC_BF16 && m * n * k >= BF16_NATIVE_MIN_MACS && vla_gemm_lib_active() == VLA_GEMM_ONEDNN &&
        vla_gemm_bf16_native()) {
        uint16_t *ha = malloc((size_t)(ar * ac) * sizeof(uint16_t)), *hb = malloc((size_t)(br * bc) * sizeof(uint16_t));
        if (!ha || !hb) abort(); /* as below */
        pack_bf16(ha, a, ar, ac, lda);
        pack_bf16(hb, b, br, bc, ldb); /* a ready B is bf16 already: packing it again changes no bit */
        vla_cpu_gemm_bf16(ta, tb, m, n, k, alpha, ha, ac, hb, bc, beta, c, ldc);
        free(ha), free(hb);
        return;
    }
    float *qa = ra ? NULL : malloc((size_t)(ar * ac) * sizeof(float)), *qb = rb ? NULL : malloc((size_t)(br * bc) * sizeof(float));
    if ((!ra && !qa) || (!rb && !qb)) abort(); /* scratch of the operands' own size: out of memory here is out of memory everywhere */
    if (!ra) quantize(qa, a, ar, ac, lda, q->mode, &q->a);
    if (!rb) quantize(qb, b, br, bc, ldb, q->mode, &q->b);
    cpu->sgemm(ta, tb, m, n, k, alpha, ra ? ra : qa, ac, rb ? rb : qb, bc, beta, c, ldc);
    free(qa), free(qb);
}

/* The cpu backend keeps no ready copies of its own (ops.h); the checked
 * backend does, through prepare_operand below, to hold the path to the
 * same bits. */
size_t vla_cpu_ready_bytes(const vla_gemm_q *q, int64_t n, int64_t k) {
    (void)q, (void)n, (void)k;
    return 0;
}

void vla_cpu_bf16_ready(void *ready, const float *x, int64_t count) {
    quantize((float *)ready, x, 1, count, count, VLA_PREC_BF16, NULL);
}

float *vla_cpu_out_or_temp(float *out, int64_t count) {
    if (out) return out;
    float *t = malloc(sizeof(float) * (size_t)(count > 0 ? count : 1));
    if (!t) abort(); /* a row block of the activations: out of memory here is out of memory everywhere */
    return t;
}
void vla_cpu_temp_done(float *out, float *y) {
    if (y != out) free(y);
}

/* prepare_operand's FP8 copy of x (trans_b: the stored layout), made by the op that wrote x: not a cast
 * of its own (VLA_STAT_OPERAND_CASTS), the same values and amax */
void vla_cpu_fp8_ready(void *ready, const float *x, int64_t count, const vla_fp8_operand *op) {
    quantize((float *)ready, x, 1, count, count, VLA_PREC_FP8, op);
}

/* op(B) rounded as sgemm_q would round it, in B's stored shape (k×n, or n×k when transposed) */
void vla_cpu_prepare_operand(const vla_gemm_q *q, bool tb, int64_t n, int64_t k, const float *b, int64_t ldb,
                             void *dst) {
    if (!q || q->mode == VLA_PREC_FP32) return;
    __atomic_fetch_add(&operand_casts, 1, __ATOMIC_RELAXED);
    quantize((float *)dst, b, tb ? n : k, tb ? k : n, ldb, q->mode, &q->b);
}

/* the cpu's copies are the rounded matrix in its stored layout whatever the read (above): one cast, the
 * same bytes in both */
void vla_cpu_prepare_operand_pair(const vla_gemm_q *q, int64_t rows, int64_t cols, const float *b, int64_t ldb,
                                  void *dst_n, void *dst_t) {
    if (!q || q->mode == VLA_PREC_FP32 || rows <= 0 || cols <= 0) return;
    __atomic_fetch_add(&operand_casts, 1, __ATOMIC_RELAXED);
    quantize((float *)dst_n, b, rows, cols, ldb, q->mode, &q->b);
    memcpy(dst_t, dst_n, sizeof(float) * (size_t)(rows * cols));
}

void vla_cpu_sgemm_epi(const vla_gemm_q *q, const vla_gemm_epilogue *epi, bool ta, bool tb, int64_t m, int64_t n,
                       int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                       float *c, int64_t ldc) {
    /* c NULL (ops.h, KEPT COPIES): t lands in pre, and act(t) is only the copy */
    vla_cpu_sgemm_q(q, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c ? c : epi->pre, ldc);
    vla_gemm_epilogue_apply(vla_cpu_backend_table(), epi, false, m, n, c, ldc);
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
