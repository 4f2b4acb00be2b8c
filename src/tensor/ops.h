/* ops.h — the op table: every numeric kernel model code may call.
 *
 * Model code (nn/, policy/) never calls BLAS, OpenMP or CUDA directly; it
 * calls through a `const vla_ops *`. The CPU backend (ops_cpu.c) implements
 * the table with OpenMP and GEMM tiles by oneDNN or OpenBLAS (gemm.h); a
 * CUDA backend fills the same table
 * with cuBLAS(Lt) and kernels, and model code does not change.
 *
 * Conventions: matrices are row-major; `lda` etc. are row strides in
 * elements; op(A) is M×K, op(B) is K×N, C is M×N. Lengths are int64_t.
 * Pointers refer to memory of the table's device. */
#ifndef VLA_TENSOR_OPS_H
#define VLA_TENSOR_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/dtype.h"
#include "tensor/tensor.h"

/* Scalars of one AdamW step, formed once per step by the optimizer (in
 * double, rounded to f32 once, as PyTorch does with its Python floats). */
typedef struct {
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    float bias_correction2_sqrt; /* sqrt(1 − beta2^t) */
    float eps;
    float neg_step;              /* −lr / (1 − beta1^t) */
    float decay_mul;             /* 1 − lr·weight_decay (applied when `decay`) */
    float grad_scale;            /* gradient clipping coefficient (1: none) */
} vla_adamw_scalars;

typedef struct vla_ops {
    const char *name;
    vla_device device;

    /* memory of this device (64-byte aligned) */
    void *(*alloc)(size_t bytes);
    void (*free)(void *p);
    /* copies between host memory and this device (plain memcpy on CPU) */
    void (*to_device)(void *dst, const void *host_src, size_t bytes);
    void (*to_host)(void *host_dst, const void *src, size_t bytes);

    /* C = alpha·op(A)·op(B) + beta·C */
    void (*sgemm)(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
    /* the same for `batch` matrices laid out at fixed strides (elements) */
    void (*sgemm_strided_batched)(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                                  const float *a, int64_t lda, int64_t stride_a, const float *b, int64_t ldb,
                                  int64_t stride_b, float beta, float *c, int64_t ldc, int64_t stride_c,
                                  int64_t batch);

    /* elementwise (y may alias an input) */
    void (*fill)(float *y, float value, int64_t n);
    void (*copy)(float *y, const float *x, int64_t n);
    void (*add)(float *y, const float *a, const float *b, int64_t n);  /* y = a + b */
    void (*sub)(float *y, const float *a, const float *b, int64_t n);  /* y = a − b */
    void (*mul)(float *y, const float *a, const float *b, int64_t n);  /* y = a ⊙ b */
    void (*axpy)(float *y, float alpha, const float *x, int64_t n);    /* y += alpha·x */
    void (*scale)(float *y, float alpha, int64_t n);                   /* y *= alpha */
    /* y[r, c] += bias[c] for a rows×cols matrix */
    void (*add_row_vector)(float *y, const float *bias, int64_t rows, int64_t cols);

    /* reductions (accumulated in double) */
    double (*sum)(const float *x, int64_t n);
    double (*dot)(const float *a, const float *b, int64_t n);
    double (*sum_squares)(const float *x, int64_t n);
    float (*max_abs)(const float *x, int64_t n);
    int64_t (*count_nonfinite)(const float *x, int64_t n);
    /* y[c] = beta·y[c] + Σ_r x[r, c] (bias gradients) */
    void (*sum_rows)(float *y, const float *x, int64_t rows, int64_t cols, float beta);

    /* row-wise softmax of a rows×cols matrix, numerically stable */
    void (*softmax_rows)(float *y, const float *x, int64_t rows, int64_t cols);
    /* dx = y ⊙ (dy − Σ_c dy·y), per row */
    void (*softmax_rows_backward)(float *dx, const float *y, const float *dy, int64_t rows, int64_t cols);

    /* One AdamW step on n elements, in torch.optim.AdamW's order:
     *   w ← w·decay_mul (if decay);  g ← g·grad_scale
     *   m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
     *   w ← w + neg_step · m / (sqrt(v)/sqrt(1−β2^t) + eps)
     * Shared by train/optimizer.c and dist/zero1.c; elementwise, so results
     * do not depend on how the vector is split across threads or ranks. */
    void (*adamw)(float *w, const float *g, float *m, float *v, int64_t n, const vla_adamw_scalars *s, bool decay);

    /* element type conversion (see dtype.h for rounding rules) */
    void (*convert)(void *dst, vla_dtype dst_type, const void *src, vla_dtype src_type, int64_t n);
} vla_ops;

/* The CPU backend (OpenMP; GEMM tiles by oneDNN or OpenBLAS, tensor/gemm.h). */
const vla_ops *vla_ops_cpu(void);

/* Checked tensor-level GEMM: c = alpha·op(a)·op(b) + beta·c on 2-D f32
 * tensors with unit column stride; shapes are verified. */
vla_status vla_matmul(const vla_ops *ops, vla_tensor *c, const vla_tensor *a, bool trans_a, const vla_tensor *b,
                      bool trans_b, float alpha, float beta);

#endif
