/* gemm_plan.h — how the cuda backend turns the op table's row-major GEMMs
 * into cuBLASLt calls: plain C, built into every configuration and
 * unit-tested on the CPU (tests/tensor/test_gemm_plan.c runs each plan as a
 * naive column-major GEMM against the row-major definition).
 *
 *  - The mapping. cuBLASLt is column-major; a row-major X (r×c, stride ld)
 *    is the column-major Xᵀ with the same stride, so C = op(A)·op(B) is
 *    computed as Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLASLt's A is the caller's B.
 *  - Quantized GEMMs (sgemm_q). The operands are f32 in memory; each is cast
 *    into a packed copy. FP8 (at its delayed scale): K-major — op(A) as
 *    [m][kp], op(B) as [n][kp], transposing on the way when the stored
 *    operand is not — so every FP8 product is the "TN" form Hopper's FP8
 *    kernels require (gpu-notes §4.1, §4.5: A transposed, B not, in
 *    cuBLASLt's terms), K zero-padded to kp = 16 elements (zeros add
 *    nothing). bf16: in the operand's STORED layout, rows padded to 8
 *    elements (16 bytes), no transpose — cuBLASLt's bf16 kernels take every
 *    transposition — so the cast is a plain elementwise pass, and one copy
 *    of a matrix serves every GEMM that reads it, in either role and either
 *    transposition (x: the forward's A and the wgrad's B; dy: the dgrad's A
 *    and the wgrad's Aᵀ; ops.h, a_ready). FP8 runs through cuBLASLt only where its type table
 *    allows (E5M2 × E5M2 is not supported) and C meets its alignment (rows
 *    of 16 bytes, 16-byte pointer); otherwise the cast emulates (casts back
 *    to f32, the cpu backend's computation) — decided here, by shape.
 *  - FAST_ACCUM is on for the forward (E4M3 × E4M3) and off when a gradient
 *    (E5M2) is involved, TransformerEngine's choice (gpu-notes §4.4).
 *  - Workspace: 32 MiB on compute capability >= 9, else 4 MiB
 *    (TransformerEngine's get_cublas_workspace_size_bytes).
 *  - A cache of descriptors per shape: creating descriptors and asking the
 *    heuristic is host work worth ~10–50 µs; a training step repeats a few
 *    hundred shapes. */
#ifndef VLA_TENSOR_GEMM_PLAN_H
#define VLA_TENSOR_GEMM_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "tensor/ops.h"

/* A bf16 copy's row stride (elements) for a stored row of `cols` values: rows padded to 16 bytes,
 * the pad zero — prepare_operand's layout, which the ops that write a ready copy themselves
 * (vla_norm_fuse, glu_forward) follow. */
static inline int64_t vla_q_bf16_ld(int64_t cols) { return (cols + 7) / 8 * 8; }
/* An FP8 copy's row stride (elements = bytes): K padded to 16, the pad zero (the plan's kp). */
static inline int64_t vla_q_fp8_ld(int64_t k) { return (k + 15) / 16 * 16; }
/* Where a ready copy of rows × ld elements of es bytes keeps the 1/s it was cast with (FP8; gemm.cu
 * reads it as the GEMM's dequantisation scale): the first 256-byte boundary after the elements. */
static inline size_t vla_q_ready_sinv_offset(int64_t rows, int64_t ld, size_t es) {
    return ((size_t)(rows * ld) * es + 255) / 256 * 256;
}

typedef enum { VLA_LT_F32, VLA_LT_BF16, VLA_LT_E4M3, VLA_LT_E5M2 } vla_lt_type;

/* One cuBLASLt product D = α·op(A)·op(B) + β·C, column-major, with the
 * stored layouts its matrix-layout descriptors name. */
typedef struct {
    bool trans_a, trans_b;
    int64_t m, n, k;
    int64_t a_rows, a_cols, lda, b_rows, b_cols, ldb, c_rows, c_cols, ldc;
    int64_t batch, stride_a, stride_b, stride_c; /* batch 1: strides unused */
} vla_lt_gemm;

/* The caller's row-major (strided-batched) GEMM as cuBLASLt's: its A is the
 * caller's B and its B the caller's A. */
vla_lt_gemm vla_lt_from_rowmajor(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                                 int64_t ldc, int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c);

/* How a quantized GEMM is run. The copy of A is [a_rows][a_ld] (row-major),
 * made from a_cols values per row of the stored operand, or of its
 * transpose when a_transpose (the cast kernel's rows, K, kp, transpose);
 * zeros fill each row from a_cols to a_ld. B's likewise. */
typedef struct {
    vla_lt_type a_type, b_type; /* of the caller's op(A) and op(B) copies */
    int64_t kp;                 /* FP8: K padded (a_ld = b_ld = kp); bf16: K */
    bool a_transpose, b_transpose; /* the cast transposes the stored operand (FP8 only: into the K-major copy) */
    int64_t a_rows, a_cols, a_ld, b_rows, b_cols, b_ld;
    bool use_lt;                /* false: emulate (f32 copies of the rounded values, f32 GEMM) */
    bool fast_accum;
    vla_lt_gemm lt;             /* the product over the copies: TN for FP8, the caller's transposes for bf16 */
} vla_q_plan;

/* c_addr: the address of C (its alignment matters to FP8). mode BF16 or FP8. */
vla_q_plan vla_q_plan_make(const vla_gemm_q *q, bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t ldc,
                           uintptr_t c_addr);

/* The bytes of a ready operand (ops.h, ready_bytes: prepare_operand's copy of op(B), n × k) on cuda:
 * the copy sgemm_q's cast writes ([b_rows][b_ld]: K-major for FP8, the stored layout for bf16), then the
 * 1/s it was cast with at the next 256-byte boundary — the larger of the two layouts, as ready_bytes
 * does not know trans_b (they differ in bf16's row padding). 0 for f32. */
size_t vla_q_ready_bytes(const vla_gemm_q *q, int64_t n, int64_t k);

size_t vla_lt_workspace_bytes(int cc_major);

/* Largest power of two (<= 256) dividing an address: cuBLASLt's MIN_ALIGNMENT preferences. */
int vla_lt_alignment(uintptr_t addr);

/* ---- the descriptor cache: fixed-size keys → opaque payloads ------------------ */
typedef struct {
    int64_t w[24];
} vla_lt_key;

/* Key of a product: the layout, the types, the compute mode and the operands' alignments. */
vla_lt_key vla_lt_key_make(const vla_lt_gemm *g, vla_lt_type a, vla_lt_type b, vla_lt_type c, int compute,
                           int align_a, int align_b, int align_c, bool fast_accum);

typedef struct vla_lt_cache vla_lt_cache;
/* capacity: entries kept (a power of two is not required); destroy frees a payload. */
vla_lt_cache *vla_lt_cache_new(int capacity, void (*destroy)(void *payload));
void vla_lt_cache_free(vla_lt_cache *c);
void *vla_lt_cache_get(vla_lt_cache *c, const vla_lt_key *k);
/* Adds (key, payload); when the cache is full every entry is destroyed first
 * (a training step's shapes come back: the cache refills at once). */
void vla_lt_cache_put(vla_lt_cache *c, const vla_lt_key *k, void *payload);
int vla_lt_cache_count(const vla_lt_cache *c);

#endif
