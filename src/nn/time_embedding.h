/* time_embedding.h — sinusoidal embedding of a scalar per sample (flow-
 * matching time or a discretised timestep): out[k] = sin(t·f_k) for
 * k < dim/2 and cos(t·f_k) after it (or cos first with `cos_first`).
 * Frequencies, by kind (vla_temb_config is tensor/ops.h's):
 *   VLA_TEMB_LOG:     f_k = exp(−ln(max_period)·k / (half − shift))
 *                     GR00T action encoder: max_period 10000, shift 0;
 *                     diffusers Timesteps (GR00T DiT): shift 1, cos_first.
 *   VLA_TEMB_PERIODS: f_k = 2π / (min_period·(max_period/min_period)^(k/(half−1)))
 *                     openpi posemb_sincos: min 4e-3, max 4.0.
 * Frequencies and angles are computed in double; t lives in backend memory. */
#ifndef VLA_NN_TIME_EMBEDDING_H
#define VLA_NN_TIME_EMBEDDING_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor/ops.h"

/* out [n, dim] from t [n]. */
static inline void vla_time_embedding_forward(const vla_ops *ops, const vla_temb_config *cfg, float *out,
                                              const float *t, int64_t n) {
    ops->time_embedding_forward(cfg, out, t, n);
}
/* d_t[i] += Σ_k d_out[i, k]·∂out[i, k]/∂t (t is rarely learned, but the chain exists). */
static inline void vla_time_embedding_backward(const vla_ops *ops, const vla_temb_config *cfg, float *d_t,
                                               const float *d_out, const float *t, int64_t n) {
    ops->time_embedding_backward(cfg, d_t, d_out, t, n);
}

#endif
