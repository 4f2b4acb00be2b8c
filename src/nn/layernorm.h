/* layernorm.h — LayerNorm over the last dimension (biased variance, as
 * torch.nn.LayerNorm): out = (x − mean)·rstd·w + b. w and b may be NULL
 * (elementwise_affine=False). mean and rstd ([n]) are saved for backward.
 * The kernel is the backend's (ops->layernorm_*). */
#ifndef VLA_NN_LAYERNORM_H
#define VLA_NN_LAYERNORM_H

#include <stdint.h>

#include "tensor/ops.h"

static inline void vla_layernorm_forward(const vla_ops *ops, float *out, float *mean, float *rstd, const float *in,
                                         const float *w, const float *b, int64_t n, int64_t dim, float eps) {
    ops->layernorm_forward(out, mean, rstd, in, w, b, n, dim, eps, NULL);
}
/* the same, doing what fuse says besides (ops.h, vla_norm_fuse: the residual add before it, the output's
 * GEMM-ready copy) */
static inline void vla_layernorm_forward_fused(const vla_ops *ops, float *out, float *mean, float *rstd,
                                               const float *in, const float *w, const float *b, int64_t n,
                                               int64_t dim, float eps, const vla_norm_fuse *fuse) {
    ops->layernorm_forward(out, mean, rstd, in, w, b, n, dim, eps, fuse);
}
/* d_in += …, d_w += Σ d_out·x̂, d_b += Σ d_out (each may be NULL). */
static inline void vla_layernorm_backward(const vla_ops *ops, float *d_in, float *d_w, float *d_b, const float *d_out,
                                          const float *in, const float *w, const float *mean, const float *rstd,
                                          int64_t n, int64_t dim) {
    ops->layernorm_backward(d_in, d_w, d_b, d_out, in, w, mean, rstd, n, dim);
}

#endif
