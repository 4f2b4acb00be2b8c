/* adaln.c — adaptive LayerNorm with per-sample (scale, shift): checks the
 * packed layout on the host, then the backend's kernel. */
#include "nn/adaln.h"

#include "tensor/seqlens.h"

vla_status vla_adaln_forward(const vla_ops *ops, float *out, float *mean, float *rstd, const float *in,
                             const float *mod, const int32_t *cu, int32_t n_seg, int64_t n, int64_t dim, float eps,
                             const vla_norm_fuse *fuse) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "adaln"));
    ops->adaln_forward(out, mean, rstd, in, mod, cu, n_seg, n, dim, eps, fuse);
    return VLA_OK;
}

vla_status vla_adaln_backward(const vla_ops *ops, float *d_in, float *d_mod, const float *d_out, const float *in,
                              const float *mod, const float *mean, const float *rstd, const int32_t *cu,
                              int32_t n_seg, int64_t n, int64_t dim) {
    VLA_TRY(vla_seqlens_check(cu, n_seg, n, "adaln"));
    ops->adaln_backward(d_in, d_mod, d_out, in, mod, mean, rstd, cu, n_seg, n, dim);
    return VLA_OK;
}
