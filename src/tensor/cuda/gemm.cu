/* gemm.cu — the cuda backend's GEMMs through cuBLASLt: f32 products (TF32
 * off unless VLA_CUDA_TF32=1, so f32 numerics hold), strided-batched ones,
 * the quantized GEMMs of mixed precision (sgemm_q: bf16 operands, or FP8
 * E4M3/E5M2 at their delayed per-tensor scales, f32 accumulation, f32 C),
 * the FP8 scale update, and the tensor-core peak for benchmarks.
 *
 * How a row-major call becomes a cuBLASLt call, which copies a quantized
 * GEMM makes and when FP8 falls back to emulation is decided in plain C
 * (tensor/cuda/gemm_plan.h, unit-tested on the CPU); this file runs it.
 * One cast kernel per operand makes the copy (FP8: K-major, transposing
 * through shared memory when the stored operand is not; bf16: the stored
 * layout), rounds with the cpu backend's own rounding (base/numfmt.h: bit
 * for bit), max-accumulates
 * the operand's amax (an atomic max: order-independent, so deterministic)
 * and writes 1/s where cuBLASLt reads its dequantisation scale. */
#include "tensor/cuda/internal.cuh"

#include <cublasLt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "tensor/cuda/gemm_plan.h"
#include "tensor/cuda/ops_cuda.h"
#include "tensor/gemm_epilogue.h"
}
#include "base/numfmt.h"
#include "tensor/cuda/cast_kernels.cuh"

#define LT_CACHE_ENTRIES 1024

typedef struct {
    bool ok; /* false: cuBLASLt has no algorithm for it (remembered, so the fallback is immediate) */
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    char why[128]; /* !ok: the call that refused and its status (the emulation's warning prints it) */
} lt_entry;

/* why the last product cuBLASLt refused was refused (under lt_lock) */
static char lt_last_refusal[128];

static pthread_mutex_t lt_lock = PTHREAD_MUTEX_INITIALIZER;

static void lt_entry_destroy(void *p) {
    lt_entry *e = (lt_entry *)p;
    if (!e) return;
    if (e->op) cublasLtMatmulDescDestroy(e->op);
    if (e->a) cublasLtMatrixLayoutDestroy(e->a);
    if (e->b) cublasLtMatrixLayoutDestroy(e->b);
    if (e->c) cublasLtMatrixLayoutDestroy(e->c);
    free(e);
}

static cudaDataType_t cuda_type(vla_lt_type t) {
    switch (t) {
    case VLA_LT_BF16: return CUDA_R_16BF;
    case VLA_LT_E4M3: return CUDA_R_8F_E4M3;
    case VLA_LT_E5M2: return CUDA_R_8F_E5M2;
    default: return CUDA_R_32F;
    }
}

/* a setup call of lt_get; on failure e->why names it (by its line) and its status */
#define LT_TRY(call)                                                                                    \
    do {                                                                                                \
        cublasStatus_t lt_st_ = (call);                                                                 \
        if (lt_st_ != CUBLAS_STATUS_SUCCESS) {                                                          \
            snprintf(e->why, sizeof e->why, "gemm.cu:%d: %s", __LINE__, cublasLtGetStatusName(lt_st_)); \
            goto fail;                                                                                  \
        }                                                                                               \
    } while (0)

static cublasLtMatrixLayout_t make_layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                          int64_t stride) {
    cublasLtMatrixLayout_t l = NULL;
    if (cublasLtMatrixLayoutCreate(&l, t, (uint64_t)rows, (uint64_t)cols, ld) != CUBLAS_STATUS_SUCCESS) return NULL;
    if (batch > 1) {
        int32_t b = (int32_t)batch;
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b);
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
    }
    return l;
}

/* The cached descriptors of one product (created and asked to the heuristic once). */
static lt_entry *lt_get(const vla_lt_gemm *g, vla_lt_type at, vla_lt_type bt, vla_lt_type ct, cublasComputeType_t ctype,
                        const void *A, const void *B, const void *C, bool fast_accum, bool bias) {
    vla_cuda_ctx *cx = vla_cuda_ctx_get();
    int al_a = vla_lt_alignment((uintptr_t)A), al_b = vla_lt_alignment((uintptr_t)B);
    int al_c = vla_lt_alignment((uintptr_t)C);
    vla_lt_key key = vla_lt_key_make(g, at, bt, ct, (int)ctype, al_a, al_b, al_c, fast_accum);
    key.w[21] = bias; /* the epilogue is part of the descriptor */
    if (!cx->lt_cache) cx->lt_cache = vla_lt_cache_new(LT_CACHE_ENTRIES, lt_entry_destroy);
    if (!cx->lt_cache) {
        fprintf(stderr, "vla: cuda: out of host memory for the cuBLASLt descriptor cache\n");
        abort();
    }
    lt_entry *e = (lt_entry *)vla_lt_cache_get(cx->lt_cache, &key);
    if (e) return e;
    e = (lt_entry *)calloc(1, sizeof *e);
    if (!e) abort();
    cublasLtMatmulPreference_t pref = NULL;
    {
        cublasOperation_t opa = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, opb = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        LT_TRY(cublasLtMatmulDescCreate(&e->op, ctype, CUDA_R_32F));
        LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
        LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
        if (at == VLA_LT_E4M3 || at == VLA_LT_E5M2) {
            int8_t fa = fast_accum ? 1 : 0;
            LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fa, sizeof fa));
        }
        if (bias) { /* f32 bias of D's rows (the caller's columns), added in the epilogue */
            cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
            cudaDataType_t bt32 = CUDA_R_32F;
            LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
            LT_TRY(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt32, sizeof bt32));
        }
        e->a = make_layout(cuda_type(at), g->a_rows, g->a_cols, g->lda, g->batch, g->stride_a);
        e->b = make_layout(cuda_type(bt), g->b_rows, g->b_cols, g->ldb, g->batch, g->stride_b);
        e->c = make_layout(cuda_type(ct), g->c_rows, g->c_cols, g->ldc, g->batch, g->stride_c);
        if (!e->a || !e->b || !e->c) {
            snprintf(e->why, sizeof e->why, "a matrix layout was refused");
            goto fail;
        }
        LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
        uint64_t ws = cx->lt_ws_bytes;
        LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
        uint32_t aa = (uint32_t)al_a, ab = (uint32_t)al_b, ac = (uint32_t)al_c;
        LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aa, sizeof aa));
        LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ab, sizeof ab));
        LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac));
        LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac));
        cublasLtMatmulHeuristicResult_t res;
        int found = 0;
        cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic((cublasLtHandle_t)cx->lt, e->op, e->a, e->b, e->c, e->c,
                                                           pref, 1, &res, &found);
        if (hs != CUBLAS_STATUS_SUCCESS || found < 1) {
            snprintf(e->why, sizeof e->why, "the heuristic found %d algorithms (%s; alignments A %d, B %d, C %d bytes)",
                     found, cublasLtGetStatusName(hs), al_a, al_b, al_c);
            goto fail;
        }
        e->algo = res.algo;
        e->ok = true;
    }
    cublasLtMatmulPreferenceDestroy(pref);
    vla_lt_cache_put(cx->lt_cache, &key, e);
    return e;
fail:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    e->ok = false;
    snprintf(lt_last_refusal, sizeof lt_last_refusal, "%s", e->why);
    vla_lt_cache_put(cx->lt_cache, &key, e);
    return e;
}

/* Runs the product (with bias: the BIAS epilogue adds it); false when
 * cuBLASLt cannot (no algorithm, or refused). */
static bool lt_run(const vla_lt_gemm *g, vla_lt_type at, vla_lt_type bt, vla_lt_type ct, cublasComputeType_t ctype,
                   const void *A, const void *B, void *C, float alpha, float beta, bool fast_accum,
                   const float *a_scale, const float *b_scale, const float *bias = NULL) {
    vla_cuda_ctx *cx = vla_cuda_ctx_get();
    pthread_mutex_lock(&lt_lock);
    lt_entry *e = lt_get(g, at, bt, ct, ctype, A, B, C, fast_accum, bias != NULL);
    bool ok = e->ok;
    if (ok && bias)
        ok = cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) ==
             CUBLAS_STATUS_SUCCESS;
    if (ok && a_scale) {
        ok = cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof a_scale) ==
                 CUBLAS_STATUS_SUCCESS &&
             cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof b_scale) ==
                 CUBLAS_STATUS_SUCCESS;
        if (!ok) snprintf(lt_last_refusal, sizeof lt_last_refusal, "the FP8 scale pointers were refused");
    }
    if (ok) {
        cublasStatus_t s = cublasLtMatmul((cublasLtHandle_t)cx->lt, e->op, &alpha, A, e->a, B, e->b, &beta, C, e->c,
                                          C, e->c, &e->algo, cx->lt_ws, cx->lt_ws_bytes, cx->stream);
        if (s != CUBLAS_STATUS_SUCCESS && vla_cuda_capturing()) {
            /* while recording (a capture an earlier error invalidated refuses every call): the recording
             * fails and the body runs again plainly, where this shape's own verdict is reached */
            ok = false;
            vla_cuda_capture_fail("cublasLtMatmul refused while recording");
        } else if (s != CUBLAS_STATUS_SUCCESS) {
            e->ok = ok = false; /* remembered: the next call of this shape goes the other way at once */
            snprintf(e->why, sizeof e->why, "cublasLtMatmul: %s", cublasLtGetStatusName(s));
            snprintf(lt_last_refusal, sizeof lt_last_refusal, "%s", e->why);
            if (s != CUBLAS_STATUS_NOT_SUPPORTED && s != CUBLAS_STATUS_INVALID_VALUE) {
                fprintf(stderr, "vla: cuda: cublasLtMatmul failed with status %d (%d×%d×%d)\n", (int)s, (int)g->m,
                        (int)g->n, (int)g->k);
                abort();
            }
        }
    }
    pthread_mutex_unlock(&lt_lock);
    vla_cuda_check("cublasLtMatmul");
    return ok;
}

/* C[r·ldc + c] = beta·C (beta 0 writes zeros) for the k = 0 case */
__global__ void k_scale2d(float *c, int64_t ldc, int64_t m, int64_t n, float beta) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m * n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / n, col = i % n;
        float *p = c + r * ldc + col;
        *p = beta == 0.0f ? 0.0f : beta * *p;
    }
}

static void scale_c(float *c, int64_t ldc, int64_t m, int64_t n, float beta, int64_t batch, int64_t sc) {
    for (int64_t b = 0; b < batch; b++) {
        k_scale2d<<<vla_cuda_blocks(m * n, 256), 256, 0, vla_cuda_stream()>>>(c + b * sc, ldc, m, n, beta);
        vla_cuda_check("sgemm (k = 0)");
    }
}

static cublasComputeType_t f32_compute(void) {
    return vla_cuda_ctx_get()->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

/* Returns whether `bias` (one product, batch 1; NULL: none) was added in the
 * GEMM's epilogue; when not, the caller adds it. */
static bool f32_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                     int64_t sa, const float *b, int64_t ldb, int64_t sb, float beta, float *c, int64_t ldc,
                     int64_t sc, int64_t batch, cublasComputeType_t ctype, const float *bias = NULL) {
    if (m == 0 || n == 0 || batch == 0) return false;
    if (k == 0) {
        scale_c(c, ldc, m, n, beta, batch, sc);
        return false;
    }
    vla_lt_gemm g = vla_lt_from_rowmajor(ta, tb, m, n, k, lda, ldb, ldc, batch, sa, sb, sc);
    if (bias && batch == 1 && lt_run(&g, VLA_LT_F32, VLA_LT_F32, VLA_LT_F32, ctype, b, a, c, alpha, beta, false, NULL,
                                     NULL, bias))
        return true;
    if (lt_run(&g, VLA_LT_F32, VLA_LT_F32, VLA_LT_F32, ctype, b, a, c, alpha, beta, false, NULL, NULL)) return false;
    /* an f32 product cuBLASLt refuses (odd strides): one product at a time, then give up loudly */
    if (batch > 1) {
        for (int64_t i = 0; i < batch; i++)
            f32_gemm(ta, tb, m, n, k, alpha, a + i * sa, lda, 0, b + i * sb, ldb, 0, beta, c + i * sc, ldc, 0, 1, ctype);
        return false;
    }
    fprintf(stderr, "vla: cuda: cuBLASLt has no f32 algorithm for %lld×%lld×%lld (ta %d, tb %d, ld %lld/%lld/%lld)\n",
            (long long)m, (long long)n, (long long)k, ta, tb, (long long)lda, (long long)ldb, (long long)ldc);
    abort();
}

extern "C" void vla_cuda_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                               int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
    f32_gemm(ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1, f32_compute());
}

extern "C" void vla_cuda_sgemm_strided_batched(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                               const float *a, int64_t lda, int64_t sa, const float *b, int64_t ldb,
                                               int64_t sb, float beta, float *c, int64_t ldc, int64_t sc,
                                               int64_t batch) {
    f32_gemm(ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch, f32_compute());
}

/* ---- quantized GEMMs ---------------------------------------------------------------- */

/* the cast kernels (k_cast_operand, k_cast_pair) and their output kinds: cast_kernels.cuh */

static size_t out_size(int kind) {
    return kind == OUT_BF16 ? 2 : kind == OUT_E4M3 || kind == OUT_E5M2 ? 1 : 4;
}

/* cast_operand's kernel, in slabs of rows the grid can address */
static void cast_slabs(void *dst, const float *src, int64_t ld, int64_t rows, int64_t K, int64_t kp, bool transpose,
                       int kind, const vla_fp8_operand *op, float *sinv_out) {
    dim3 grid = vla_cast_operand_grid(rows, kp), block(32, 8);
    if (grid.y > 65535) { /* rows beyond 2M: in slabs */
        for (int64_t r = 0; r < rows; r += 65535LL * 32) {
            int64_t nr = rows - r < 65535LL * 32 ? rows - r : 65535LL * 32;
            const float *s = transpose ? src + r : src + r * ld;
            cast_slabs((char *)dst + (size_t)(r * kp) * out_size(kind), s, ld, nr, K, kp, transpose, kind, op,
                       r == 0 ? sinv_out : NULL);
        }
        return;
    }
    k_cast_operand<<<grid, block, 0, vla_cuda_stream()>>>(dst, src, ld, rows, K, kp, transpose ? 1 : 0, kind,
                                                          op ? op->scale : NULL, op ? op->amax : NULL, sinv_out);
    vla_cuda_check("sgemm_q: operand cast");
}

static int64_t operand_casts; /* ops.h, VLA_STAT_OPERAND_CASTS */

extern "C" int64_t vla_cuda_operand_casts(void) { return __atomic_load_n(&operand_casts, __ATOMIC_RELAXED); }

static void cast_operand(void *dst, const float *src, int64_t ld, int64_t rows, int64_t K, int64_t kp, bool transpose,
                         int kind, const vla_fp8_operand *op, float *sinv_out) {
    __atomic_fetch_add(&operand_casts, 1, __ATOMIC_RELAXED);
    cast_slabs(dst, src, ld, rows, K, kp, transpose, kind, op, sinv_out);
}

/* cast_rows.h's copies, all of them in one launch (the attention's operands): the bytes prepare_operand's
 * bf16 cast writes, 8 elements and one 16-byte store per step; counted as that many operand casts. The
 * GEMMs' own casts keep k_cast_operand until a device has run this kernel's conformance. */
__global__ void k_cast_rows_bf16(vla_cast_rows c) {
    const int64_t total = c.first[c.n];
    for (int64_t ch = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; ch < total; ch += (int64_t)gridDim.x * blockDim.x) {
        int i;
        int64_t at;
        uint16_t v[8];
        vla_cast_rows_chunk(&c, ch, &i, &at, v);
        uint4 w;
        w.x = v[0] | (uint32_t)v[1] << 16, w.y = v[2] | (uint32_t)v[3] << 16;
        w.z = v[4] | (uint32_t)v[5] << 16, w.w = v[6] | (uint32_t)v[7] << 16;
        *(uint4 *)(c.dst[i] + at) = w;
    }
}

extern "C" bool vla_cuda_cast_rows_bf16(vla_cast_rows *c) {
    int64_t total = vla_cast_rows_plan(c);
    if (total < 0) return false;
    for (int i = 0; i < c->n; i++) /* as prepare_operand counts: a tensor with elements */
        if (c->rows[i] > 0 && c->K > 0) __atomic_fetch_add(&operand_casts, 1, __ATOMIC_RELAXED);
    if (total == 0) return true;
    k_cast_rows_bf16<<<vla_cuda_blocks(total, 256), 256, 0, vla_cuda_stream()>>>(*c);
    vla_cuda_check("operand copies (bf16 rows)");
    return true;
}

static int kind_of(const vla_gemm_q *q, const vla_fp8_operand *op, bool emulate) {
    if (q->mode == VLA_PREC_BF16) return emulate ? OUT_F32_BF16 : OUT_BF16;
    bool e4 = op->fmt != VLA_FP8_E5M2; /* as everywhere: E5M2 named, E4M3 otherwise */
    if (emulate) return e4 ? OUT_F32_E4M3 : OUT_F32_E5M2;
    return e4 ? OUT_E4M3 : OUT_E5M2;
}

static int64_t q_emulated; /* quantized GEMMs that fell back to the f32 emulation */

/* a bf16 copy [rows][ld] widened to packed f32 [rows][cols] (cast_kernels.cuh) */
static void widen_bf16(float *dst, const void *copy, int64_t rows, int64_t cols, int64_t ld) {
    int64_t n = rows * cols;
    if (n <= 0) return;
    k_widen_bf16<<<vla_cuda_blocks(n, 256), 256, 0, vla_cuda_stream()>>>(dst, (const uint16_t *)copy, rows, cols, ld);
    vla_cuda_check("widen a kept bf16 copy");
}

extern "C" int64_t vla_cuda_gemm_emulated(void) { return __atomic_load_n(&q_emulated, __ATOMIC_RELAXED); }

static const char *lt_type_name(vla_lt_type t) {
    switch (t) {
    case VLA_LT_BF16: return "bf16";
    case VLA_LT_E4M3: return "e4m3";
    case VLA_LT_E5M2: return "e5m2";
    default: return "f32";
    }
}

/* A ready operand (prepare_operand): the copy sgemm_q's cast writes
 * ([b_rows][b_ld] of the plan: K-major for FP8, the stored layout for bf16),
 * then (FP8) the 1/s it was cast with, 256-byte aligned. */
static size_t ready_sinv_offset(int64_t rows, int64_t ld, size_t es) { return vla_q_ready_sinv_offset(rows, ld, es); }

/* ready_bytes: the sizing lives with the plans (gemm_plan.c), where the CPU tests can read it */
extern "C" size_t vla_cuda_ready_bytes(const vla_gemm_q *q, int64_t n, int64_t k) { return vla_q_ready_bytes(q, n, k); }

extern "C" void vla_cuda_prepare_operand(const vla_gemm_q *q, bool tb, int64_t n, int64_t k, const float *b,
                                         int64_t ldb, void *dst) {
    if (!q || q->mode == VLA_PREC_FP32 || n <= 0 || k <= 0) return;
    vla_q_plan p = vla_q_plan_make(q, false, tb, 1, n, k, n, 0);
    size_t es = p.b_type == VLA_LT_BF16 ? 2 : 1;
    bool fp8 = q->mode == VLA_PREC_FP8;
    cast_operand(dst, b, ldb, p.b_rows, p.b_cols, p.b_ld, p.b_transpose, kind_of(q, &q->b, false),
                 fp8 ? &q->b : NULL, (float *)((char *)dst + ready_sinv_offset(p.b_rows, p.b_ld, es)));
}

extern "C" void vla_cuda_prepare_operand_pair(const vla_gemm_q *q, int64_t rows, int64_t cols, const float *b,
                                              int64_t ldb, void *dst_n, void *dst_t) {
    if (!q || q->mode != VLA_PREC_FP8 || rows <= 0 || cols <= 0) return;
    int64_t kpn = vla_q_fp8_ld(cols), kpt = vla_q_fp8_ld(rows);
    /* the layouts prepare_operand gives (gemm_plan.c, FP8: K-major [n][kp]) */
    vla_q_plan pn = vla_q_plan_make(q, false, true, 1, rows, cols, rows, 0);
    vla_q_plan pt = vla_q_plan_make(q, false, false, 1, cols, rows, cols, 0);
    if (pn.b_ld != kpn || pt.b_ld != kpt || pn.b_transpose || !pt.b_transpose) {
        fprintf(stderr, "vla: cuda: prepare_operand_pair: the FP8 copies' layout is not [n][kp]\n");
        abort(); /* gemm_plan.c and this kernel disagree: a programming error, not an input */
    }
    dim3 grid = vla_cast_pair_grid(rows, cols), block(32, 8); /* the stored index space, padded both ways */
    if (grid.y > 65535) { /* rows beyond 2M: two plain casts (as cast_slabs would cut them) */
        vla_cuda_prepare_operand(q, true, rows, cols, b, ldb, dst_n);
        vla_cuda_prepare_operand(q, false, cols, rows, b, ldb, dst_t);
        return;
    }
    __atomic_fetch_add(&operand_casts, 1, __ATOMIC_RELAXED);
    float *sn = (float *)((char *)dst_n + ready_sinv_offset(rows, kpn, 1));
    float *st = (float *)((char *)dst_t + ready_sinv_offset(cols, kpt, 1));
    k_cast_pair<<<grid, block, 0, vla_cuda_stream()>>>((uint8_t *)dst_n, (uint8_t *)dst_t, b, ldb, rows, cols, kpn, kpt,
                                                       q->b.fmt != VLA_FP8_E5M2, q->b.scale, q->b.amax, sn, st);
    vla_cuda_check("prepare_operand_pair");
}

/* sgemm_q, adding `bias` in cuBLASLt's epilogue where it can (f32 and bf16
 * products; FP8's bias types are narrower than ours): returns whether it did. */
static bool sgemm_q_bias(const vla_gemm_q *q, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc,
                         const float *bias) {
    if (!q || q->mode == VLA_PREC_FP32 || m == 0 || n == 0 || k == 0)
        return f32_gemm(ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1, f32_compute(), bias);
    vla_q_plan p = vla_q_plan_make(q, ta, tb, m, n, k, ldc, (uintptr_t)c);
    bool fp8 = q->mode == VLA_PREC_FP8;
    if (p.use_lt) {
        size_t ea = p.a_type == VLA_LT_BF16 ? 2 : 1, eb = p.b_type == VLA_LT_BF16 ? 2 : 1;
        size_t a_bytes = (size_t)(p.a_rows * p.a_ld) * ea, b_bytes = (size_t)(p.b_rows * p.b_ld) * eb;
        /* the casts' scratch, unless both operands come ready (a held weight and a producer's copy: most
         * bf16 GEMMs of a step) — then no pool allocation and free per call either */
        char *buf = q->a_ready && q->b_ready ? NULL : (char *)vla_cuda_scratch(a_bytes + b_bytes + 512 + 256);
        size_t off_b = (a_bytes + 255) / 256 * 256;
        size_t off_s = (off_b + b_bytes + 255) / 256 * 256;
        void *aq = NULL, *bq = NULL;
        float *sinv = NULL, *sinv_b = NULL; /* the casts' 1/s of A and of B (FP8) */
        if (buf) aq = buf, bq = buf + off_b, sinv = (float *)(buf + off_s), sinv_b = sinv + 1;
        if (q->a_ready) { /* prepare_operand's copy of op(A) (ops.h: B's cast seen from the other side) */
            aq = (void *)q->a_ready;
            sinv = (float *)((char *)aq + ready_sinv_offset(p.a_rows, p.a_ld, ea));
        } else {
            cast_operand(aq, a, lda, p.a_rows, p.a_cols, p.a_ld, p.a_transpose, kind_of(q, &q->a, false),
                         fp8 ? &q->a : NULL, sinv);
        }
        if (q->b_ready) { /* prepare_operand's copy: the same cast, made once */
            bq = (void *)q->b_ready;
            sinv_b = (float *)((char *)bq + ready_sinv_offset(p.b_rows, p.b_ld, eb));
        } else {
            cast_operand(bq, b, ldb, p.b_rows, p.b_cols, p.b_ld, p.b_transpose, kind_of(q, &q->b, false),
                         fp8 ? &q->b : NULL, sinv_b);
        }
        /* cuBLASLt's A is our B: its dequantisation scale is B's 1/s */
        bool folded = bias && !fp8 &&
                      lt_run(&p.lt, p.b_type, p.a_type, VLA_LT_F32, CUBLAS_COMPUTE_32F, bq, aq, c, alpha, beta,
                             p.fast_accum, NULL, NULL, bias);
        bool ok = folded || lt_run(&p.lt, p.b_type, p.a_type, VLA_LT_F32, CUBLAS_COMPUTE_32F, bq, aq, c, alpha, beta,
                                   p.fast_accum, fp8 ? sinv_b : NULL, fp8 ? sinv : NULL);
        vla_cuda_scratch_free(buf);
        if (ok) return folded;
        /* no algorithm: emulate below. The casts above already max-accumulated the amaxes, and
         * the emulation's casts add the same values again: a max, so nothing changes. */
    }
    /* Emulated: f32 products at a fraction of the tensor cores' rate. Counted (bench gemm prints
     * it) and said once, with the first shape, so a slow FP8 run says why. */
    if (__atomic_fetch_add(&q_emulated, 1, __ATOMIC_RELAXED) == 0)
        fprintf(stderr, "vla: cuda: a %s GEMM (%lldx%lldx%lld, A %s, B %s) has no cuBLASLt algorithm here (%s): "
                "emulated in f32 (slow); `vla bench gemm --device=cuda` counts these\n",
                fp8 ? "FP8" : "bf16", (long long)m, (long long)n, (long long)k, lt_type_name(p.a_type),
                lt_type_name(p.b_type), p.use_lt ? lt_last_refusal : "its types or C's alignment rule it out");
    /* an operand that exists only as its bf16 copy (ops.h, kept copies; a NULL a or b) is widened
     * first: the values the cast below would round, rounding them again changes nothing */
    size_t wa = !a && q->a_ready ? (size_t)(m * k) : 0, wb = !b && q->b_ready ? (size_t)(n * k) : 0;
    float *buf = (float *)vla_cuda_scratch(sizeof(float) * ((size_t)((m + n) * k) + wa + wb) + 256);
    float *af = buf, *bf = buf + m * k;
    if (wa) {
        float *wide = bf + n * k;
        widen_bf16(wide, q->a_ready, p.a_rows, p.a_cols, p.a_ld);
        a = wide, lda = p.a_cols;
    }
    if (wb) {
        float *wide = bf + n * k + wa;
        widen_bf16(wide, q->b_ready, p.b_rows, p.b_cols, p.b_ld);
        b = wide, ldb = p.b_cols;
    }
    /* K-major f32 copies of the rounded values (whatever layout the plan's copies have) */
    cast_operand(af, a, lda, m, k, k, ta, kind_of(q, &q->a, true), fp8 ? &q->a : NULL, NULL);
    cast_operand(bf, b, ldb, n, k, k, !tb, kind_of(q, &q->b, true), fp8 ? &q->b : NULL, NULL);
    bool folded = f32_gemm(false, true, m, n, k, alpha, af, k, 0, bf, k, 0, beta, c, ldc, 0, 1, CUBLAS_COMPUTE_32F, bias);
    vla_cuda_scratch_free(buf);
    return folded;
}

extern "C" void vla_cuda_sgemm_q(const vla_gemm_q *q, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                 const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                                 int64_t ldc) {
    sgemm_q_bias(q, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, NULL);
}

/* The bias folded into cuBLASLt's epilogue where it can be; the rest of the
 * epilogue (the bias otherwise, pre, the activation, the ready copy) in one
 * pass of our own (vla_cuda_epilogue), or by the table's kernels where C
 * is a slice of a wider matrix (tensor/gemm_epilogue.h). cuBLASLt's GELU epilogues are not used:
 * their GELU is not our kernel's to the bit, and that is not measured yet. */
extern "C" void vla_cuda_sgemm_epi(const vla_gemm_q *q, const vla_gemm_epilogue *epi, bool ta, bool tb, int64_t m,
                                   int64_t n, int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                                   int64_t ldb, float beta, float *c, int64_t ldc) {
    /* c NULL (ops.h, KEPT COPIES): the GEMM writes t into pre, and the pass after it writes only the copy
     * (a kept C with ldc ≠ n, which no caller makes, would take the table's way: a temporary allocation) */
    float *t = c ? c : epi->pre;
    bool folded = sgemm_q_bias(q, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, t, ldc, epi ? epi->bias : NULL);
    if (epi && ldc == n) vla_cuda_epilogue(epi, folded, m, n, c); /* the rest in one pass (elementwise.cu) */
    else vla_gemm_epilogue_apply(vla_cuda_backend_table(), epi, folded, m, n, c, ldc);
}

/* ---- FP8 delayed-scaling update ------------------------------------------------------------ */

/* One thread per tensor: its column of the [L, n] history (ops.h). */
__global__ void k_fp8_scale_update(float *history, float *scale, int64_t n, int64_t L, const float *fmt_max,
                                   float two_m, bool most_recent) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    scale[i] = vla_nf_fp8_scale_step(history + i, n, L, scale[i], fmt_max[i], two_m, most_recent);
}

extern "C" void vla_cuda_fp8_scale_update(float *history, float *scale, int64_t n, int64_t L, const float *fmt_max,
                                          float margin, bool most_recent) {
    if (n <= 0) return;
    vla_cuda_upload_t fm = vla_cuda_upload(fmt_max, sizeof(float) * (size_t)n);
    k_fp8_scale_update<<<vla_cuda_blocks(n, 128), 128, 0, vla_cuda_stream()>>>(history, scale, n, L,
                                                                               (const float *)fm.dev,
                                                                               exp2f(-margin), most_recent);
    vla_cuda_check("fp8_scale_update");
    vla_cuda_upload_release(&fm);
}

/* ---- the tensor-core peak ----------------------------------------------------------------------- */

__global__ void k_fill_random(void *dst, int64_t n, int kind, uint32_t seed) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
        float v = ((float)(h & 0xffffff) / 16777216.0f - 0.5f) * 2.0f; /* uniform in [-1, 1): random, not zeros */
        if (kind == 0) ((float *)dst)[i] = v;
        else if (kind == 1) ((uint16_t *)dst)[i] = vla_nf_f32_to_bf16(v);
        else ((uint8_t *)dst)[i] = vla_nf_f32_to_e4m3(v * 64.0f);
    }
}

extern "C" vla_status vla_cuda_gemm_peak(vla_dtype dtype, int64_t n, int iters, int reps, double *tflops) {
    VLA_TRY(vla_cuda_probe());
    vla_cuda_ctx *cx = vla_cuda_ctx_get();
    int kind = dtype == VLA_BF16 ? 1 : dtype == VLA_F8E4M3 ? 2 : dtype == VLA_F32 ? 0 : -1;
    if (kind < 0) return vla_error(VLA_ERR_INVALID_ARG, "gemm peak: dtype %s (use f32, bf16 or f8e4m3)", vla_dtype_name(dtype));
    size_t es = kind == 0 ? 4 : kind == 1 ? 2 : 1, cs = kind == 0 ? 4 : 2;
    /* three sets of operands, rotated, so repeated runs do not measure the L2 */
    const int SETS = 3;
    void *A[SETS], *B[SETS], *C = vla_cuda_scratch((size_t)(n * n) * cs);
    float *one = (float *)vla_cuda_scratch(sizeof(float));
    float hone = 1.0f / 64.0f;
    VLA_CUDA_OK(cudaMemcpyAsync(one, &hone, sizeof hone, cudaMemcpyHostToDevice, cx->stream), "gemm peak");
    for (int s = 0; s < SETS; s++) {
        A[s] = vla_cuda_scratch((size_t)(n * n) * es), B[s] = vla_cuda_scratch((size_t)(n * n) * es);
        k_fill_random<<<1024, 256, 0, cx->stream>>>(A[s], n * n, kind, 17u + (uint32_t)s);
        k_fill_random<<<1024, 256, 0, cx->stream>>>(B[s], n * n, kind, 91u + (uint32_t)s);
    }
    vla_cuda_check("gemm peak: fill");
    vla_lt_type t = kind == 0 ? VLA_LT_F32 : kind == 1 ? VLA_LT_BF16 : VLA_LT_E4M3;
    vla_lt_type ct = kind == 0 ? VLA_LT_F32 : VLA_LT_BF16;
    vla_lt_gemm g = vla_lt_from_rowmajor(false, true, n, n, n, n, n, n, 1, 0, 0, 0); /* TN: what FP8 needs */
    cublasComputeType_t ctype = kind == 0 ? f32_compute() : CUBLAS_COMPUTE_32F;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    const float *sc = kind == 2 ? one : NULL;
    bool ok = lt_run(&g, t, t, ct, ctype, B[0], A[0], C, 1.0f, 0.0f, kind == 2, sc, sc); /* warm-up, descriptors */
    double best = 0;
    for (int r = 0; ok && r < reps; r++) {
        cudaEventRecord(e0, cx->stream);
        for (int i = 0; i < iters; i++)
            lt_run(&g, t, t, ct, ctype, B[i % SETS], A[i % SETS], C, 1.0f, 0.0f, kind == 2, sc, sc);
        cudaEventRecord(e1, cx->stream);
        VLA_CUDA_OK(cudaEventSynchronize(e1), "gemm peak");
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        double tf = 2.0 * (double)n * n * n * iters / (ms * 1e-3) * 1e-12;
        if (tf > best) best = tf;
    }
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    for (int s = 0; s < SETS; s++) vla_cuda_scratch_free(A[s]), vla_cuda_scratch_free(B[s]);
    vla_cuda_scratch_free(C), vla_cuda_scratch_free(one);
    VLA_CUDA_OK(cudaStreamSynchronize(cx->stream), "gemm peak");
    if (!ok) return vla_error(VLA_ERR_UNSUPPORTED, "gemm peak: cuBLASLt has no %s algorithm for %lld³",
                              vla_dtype_name(dtype), (long long)n);
    *tflops = best;
    return VLA_OK;
}

extern "C" void vla_cuda_gemm_shutdown(void) {
    vla_cuda_ctx *cx = vla_cuda_ctx_get();
    pthread_mutex_lock(&lt_lock);
    vla_lt_cache_free(cx->lt_cache);
    cx->lt_cache = NULL;
    pthread_mutex_unlock(&lt_lock);
}
