/* time_embedding.h — sinusoidal embedding of a scalar per sample (flow-
 * matching time or a discretised timestep): out[k] = sin(t·f_k) for
 * k < dim/2 and cos(t·f_k) after it (or cos first with `cos_first`).
 * Frequencies, by kind:
 *   VLA_TEMB_LOG:     f_k = exp(−ln(max_period)·k / (half − shift))
 *                     GR00T action encoder: max_period 10000, shift 0;
 *                     diffusers Timesteps (GR00T DiT): shift 1, cos_first.
 *   VLA_TEMB_PERIODS: f_k = 2π / (min_period·(max_period/min_period)^(k/(half−1)))
 *                     openpi posemb_sincos: min 4e-3, max 4.0.
 * Frequencies and angles are computed in double. */
#ifndef VLA_NN_TIME_EMBEDDING_H
#define VLA_NN_TIME_EMBEDDING_H

#include <stdbool.h>
#include <stdint.h>

typedef enum { VLA_TEMB_LOG, VLA_TEMB_PERIODS } vla_temb_kind;

typedef struct {
    vla_temb_kind kind;
    int64_t dim; /* even */
    double min_period, max_period, shift;
    bool cos_first;
} vla_temb_config;

/* out [n, dim] from t [n]. */
void vla_time_embedding_forward(const vla_temb_config *cfg, float *out, const float *t, int64_t n);
/* d_t[i] += Σ_k d_out[i, k]·∂out[i, k]/∂t (t is rarely learned, but the chain exists). */
void vla_time_embedding_backward(const vla_temb_config *cfg, float *d_t, const float *d_out, const float *t,
                                 int64_t n);

#endif
