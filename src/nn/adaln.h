/* adaln.h — adaptive LayerNorm (DiT; GR00T's AdaLayerNorm): a LayerNorm
 * without affine weights, modulated per sample by a conditioning vector:
 *   out = LN(x)·(1 + scale[s]) + shift[s]
 * for the tokens of sample s in a packed batch (cu_seqlens). `mod` is
 * [n_seg, 2·dim], laid out (scale, shift) as GR00T's `temb.chunk(2)`; the
 * caller computes it from the conditioning vector with the layers it wants —
 * GR00T: mod = Linear(SiLU(temb)), i.e. vla_silu_forward + vla_linear_forward
 * — so the projection's weights and gradients stay in the linear layer. */
#ifndef VLA_NN_ADALN_H
#define VLA_NN_ADALN_H

#include <stdint.h>

#include "base/status.h"
#include "tensor/ops.h"

/* mean and rstd ([n]) are saved for backward; fuse: NULL, or what the
 * kernel does besides (ops.h, vla_norm_fuse). */
vla_status vla_adaln_forward(const vla_ops *ops, float *out, float *mean, float *rstd, const float *in, const float *mod,
                             const int32_t *cu_seqlens, int32_t n_seg, int64_t n, int64_t dim, float eps,
                             const vla_norm_fuse *fuse);
/* d_in += …, d_mod += … ([n_seg, 2·dim]); either may be NULL. */
vla_status vla_adaln_backward(const vla_ops *ops, float *d_in, float *d_mod, const float *d_out, const float *in, const float *mod,
                              const float *mean, const float *rstd, const int32_t *cu_seqlens, int32_t n_seg,
                              int64_t n, int64_t dim);

#endif
