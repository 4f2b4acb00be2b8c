/* gemm_ref.h — the tensor tests' random matrices and their double-precision
 * GEMM reference (test_ops.c, test_gemm.c). Header-only: each test program
 * is one .c file. */
#ifndef VLA_TESTS_TENSOR_GEMM_REF_H
#define VLA_TESTS_TENSOR_GEMM_REF_H

#include <stdbool.h>
#include <stdint.h>

#include "base/rng.h"

static inline void randn(float *x, int64_t n, uint64_t seed) {
    vla_rng r = vla_rng_stream(seed, 0);
    for (int64_t i = 0; i < n; i++) x[i] = (float)vla_rng_normal(&r);
}

/* c = alpha·op(a)·op(b) + beta·c in double, row-major; beta = 0 does not read c (BLAS's rule). */
static inline void naive_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float *a, int lda,
                              const float *b, int ldb, float beta, double *c, int ldc) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++)
                s += (double)(ta ? a[p * lda + i] : a[i * lda + p]) * (double)(tb ? b[j * ldb + p] : b[p * ldb + j]);
            c[i * ldc + j] = alpha * s + (beta == 0.0f ? 0.0 : beta * c[i * ldc + j]);
        }
}

#endif
