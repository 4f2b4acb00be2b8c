/* adarmsnorm.h — π0.5's adaptive RMSNorm and gated residual (openpi
 * gemma.py RMSNorm with `cond`): a zero-initialised Dense(cond → 3·dim)
 * gives per-sample (scale, shift, gate);
 *   normed = x·rstd·(1 + scale[s]) + shift[s]     (no learned weight)
 *   x_next = x + y·gate[s]                        (the gated residual)
 * `mod` is [n_seg, 3·dim], laid out (scale, shift, gate) as openpi's
 * jnp.split(…, 3). The caller computes it with vla_linear_forward on the
 * time conditioning (zero-initialise that linear's weight and bias so a
 * fresh expert starts as the unmodulated, ungated network). */
#ifndef VLA_NN_ADARMSNORM_H
#define VLA_NN_ADARMSNORM_H

#include <stdint.h>

#include "base/status.h"
#include "tensor/ops.h"

/* rstd ([n]) is saved for backward; fuse: NULL, or what the kernel does
 * besides (ops.h, vla_norm_fuse). */
vla_status vla_adarmsnorm_forward(const vla_ops *ops, float *out, float *rstd, const float *in, const float *mod,
                                  const int32_t *cu_seqlens, int32_t n_seg, int64_t n, int64_t dim, float eps,
                                  const vla_norm_fuse *fuse);
/* d_in += …, d_mod[:, 0:2·dim] += … (scale and shift parts; gate is the residual's). */
vla_status vla_adarmsnorm_backward(const vla_ops *ops, float *d_in, float *d_mod, const float *d_out, const float *in,
                                   const float *mod, const float *rstd, const int32_t *cu_seqlens, int32_t n_seg,
                                   int64_t n, int64_t dim);

/* out = x + y·gate[s]; gate is column 2·dim of `mod` (row stride 3·dim). out may alias x. */
vla_status vla_gated_residual_forward(const vla_ops *ops, float *out, const float *x, const float *y, const float *mod,
                                      const int32_t *cu_seqlens, int32_t n_seg, int64_t n, int64_t dim);
/* d_x += d_out, d_y = d_out·gate (written), d_mod[:, 2·dim:] += Σ d_out·y (each may be NULL). */
vla_status vla_gated_residual_backward(const vla_ops *ops, float *d_x, float *d_y, float *d_mod, const float *d_out, const float *y,
                                       const float *mod, const int32_t *cu_seqlens, int32_t n_seg, int64_t n,
                                       int64_t dim);

#endif
