/* rope.h — rotary position embedding with explicit per-token positions
 * (packed batches restart positions at 0 per sample, and a KV-cached
 * suffix starts after the prefix). The "rotate half" form of HF
 * transformers and openpi: for i < head_dim/2, with a = pos·θ^(−2i/head_dim),
 *   out[i]        = x[i]·cos a − x[i+half]·sin a
 *   out[i + half] = x[i+half]·cos a + x[i]·sin a
 * x is [n, heads, head_dim] (Q or K layout); angles are computed in double.
 * pos is host metadata; the kernel is the backend's. */
#ifndef VLA_NN_ROPE_H
#define VLA_NN_ROPE_H

#include <stdint.h>

#include "tensor/ops.h"

/* out may alias in. head_dim must be even. */
static inline void vla_rope_forward(const vla_ops *ops, float *out, const float *in, const int32_t *pos, int64_t n,
                                    int64_t heads, int64_t head_dim, double theta) {
    ops->rope_forward(out, in, pos, n, heads, head_dim, theta);
}
/* d_in = Rᵀ·d_out, written (d_in may alias d_out). */
static inline void vla_rope_backward(const vla_ops *ops, float *d_in, const float *d_out, const int32_t *pos,
                                     int64_t n, int64_t heads, int64_t head_dim, double theta) {
    ops->rope_backward(d_in, d_out, pos, n, heads, head_dim, theta);
}

#endif
