/* linear.h — fully connected layer y = x·Wᵀ + b on [tokens, features] rows.
 *
 * Conventions shared by every nn layer (llm.c style):
 *  - activations are f32, row-major [tokens, features];
 *  - weights keep PyTorch's layout (Linear: W[out_dim, in_dim]) so checkpoints
 *    load without transposes;
 *  - every backward ADDS into its gradient buffers (inputs' and parameters'),
 *    so a layer used twice, or a residual branch, just accumulates; zero the
 *    buffers once per step. Pass NULL for a gradient you do not need. */
#ifndef VLA_NN_LINEAR_H
#define VLA_NN_LINEAR_H

#include <stdint.h>

#include "tensor/ops.h"

/* out[n, out_dim] = in[n, in_dim] · w[out_dim, in_dim]ᵀ + b[out_dim] (b may be NULL). */
void vla_linear_forward(const vla_ops *ops, float *out, const float *in, const float *w, const float *b, int64_t n,
                        int64_t in_dim, int64_t out_dim);

/* d_in += d_out·w, d_w += d_outᵀ·in, d_b += Σ_rows d_out (each may be NULL). */
void vla_linear_backward(const vla_ops *ops, float *d_in, float *d_w, float *d_b, const float *d_out,
                         const float *in, const float *w, int64_t n, int64_t in_dim, int64_t out_dim);

#endif
