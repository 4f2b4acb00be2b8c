/* adarmsnorm.c — π0.5's adaptive RMSNorm and its gated residual: checks the
 * packed layout on the host, then the backend's kernels. */
#include "nn/adarmsnorm.h"

#include "tensor/seqlens.h"

vla_status vla_adarmsnorm_forward(const vla_ops *ops, float *out, float *rstd, const float *in, const float *mod,
                                  const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim, float eps,
                                  const vla_norm_fuse *fuse) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "adarmsnorm"));
    ops->adarms_forward(out, rstd, in, mod, cu, n_seg, n, dim, eps, fuse);
    return VLA_OK;
}

vla_status vla_adarmsnorm_backward(const vla_ops *ops, float *d_in, float *d_mod, const float *d_out,
                                   const float *in, const float *mod, const float *rstd, const int32_t *cu,
                                   int32_t n_seg, int64_t n, int64_t dim) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "adarmsnorm"));
    ops->adarms_backward(d_in, d_mod, d_out, in, mod, rstd, cu, n_seg, n, dim);
    return VLA_OK;
}

vla_status vla_gated_residual_forward(const vla_ops *ops, float *out, const float *x, const float *y,
                                      const float *mod, const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "gated residual"));
    ops->gated_residual_forward(out, x, y, mod, cu, n_seg, n, dim);
    return VLA_OK;
}

vla_status vla_gated_residual_backward(const vla_ops *ops, float *d_x, float *d_y, float *d_mod, const float *d_out,
                                       const float *y, const float *mod, const int32_t *cu, int32_t n_seg,
                                       int64_t n, int64_t dim) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "gated residual"));
    ops->gated_residual_backward(d_x, d_y, d_mod, d_out, y, mod, cu, n_seg, n, dim);
    return VLA_OK;
}
