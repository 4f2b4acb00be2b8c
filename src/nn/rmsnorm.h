/* rmsnorm.h — RMSNorm over the last dimension: out = x·rstd·g with
 * rstd = 1/sqrt(mean(x²) + eps) and g = w (LLaMA/Qwen), or g = 1 + w
 * (Gemma's form, `one_plus`), or g = 1 when w is NULL. rstd ([n]) is saved
 * for backward. The kernel is the backend's (ops->rmsnorm_*). */
#ifndef VLA_NN_RMSNORM_H
#define VLA_NN_RMSNORM_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor/ops.h"

static inline void vla_rmsnorm_forward(const vla_ops *ops, float *out, float *rstd, const float *in, const float *w,
                                       bool one_plus, int64_t n, int64_t dim, float eps) {
    ops->rmsnorm_forward(out, rstd, in, w, one_plus, n, dim, eps, NULL);
}
/* the same, doing what fuse says besides (ops.h, vla_norm_fuse) */
static inline void vla_rmsnorm_forward_fused(const vla_ops *ops, float *out, float *rstd, const float *in,
                                             const float *w, bool one_plus, int64_t n, int64_t dim, float eps,
                                             const vla_norm_fuse *fuse) {
    ops->rmsnorm_forward(out, rstd, in, w, one_plus, n, dim, eps, fuse);
}
/* d_in += …, d_w += Σ d_out·x̂ (same for both forms; each may be NULL). */
static inline void vla_rmsnorm_backward(const vla_ops *ops, float *d_in, float *d_w, const float *d_out,
                                        const float *in, const float *w, bool one_plus, const float *rstd, int64_t n,
                                        int64_t dim) {
    ops->rmsnorm_backward(d_in, d_w, d_out, in, w, one_plus, rstd, n, dim);
}

#endif
