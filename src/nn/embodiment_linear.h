/* embodiment_linear.h — a linear layer with one weight matrix per
 * embodiment (GR00T's CategorySpecificLinear): the tokens of sample s use
 *   out = in · W[e_s] + b[e_s]
 * with W [n_emb, in_dim, out_dim] and b [n_emb, out_dim] in GR00T's layout
 * (note: in × out, not PyTorch Linear's out × in). Samples are packed
 * (cu_seqlens) and e_s = emb_ids[s]. */
#ifndef VLA_NN_EMBODIMENT_LINEAR_H
#define VLA_NN_EMBODIMENT_LINEAR_H

#include <stdint.h>

#include "base/status.h"
#include "tensor/ops.h"

typedef struct {
    int64_t n_emb, in_dim, out_dim;
} vla_emb_linear_config;

/* Fails on a bad cu_seqlens or an embodiment id outside [0, n_emb). b may be NULL. */
vla_status vla_embodiment_linear_forward(const vla_ops *ops, const vla_emb_linear_config *cfg, float *out,
                                         const float *in, const float *w, const float *b, const int32_t *emb_ids,
                                         const int32_t *cu_seqlens, int32_t n_seg, int64_t n);
/* d_in is written, d_w and d_b accumulate (each may be NULL); samples in order, so results are deterministic. */
vla_status vla_embodiment_linear_backward(const vla_ops *ops, const vla_emb_linear_config *cfg, float *d_in,
                                          float *d_w, float *d_b, const float *d_out, const float *in,
                                          const float *w, const int32_t *emb_ids, const int32_t *cu_seqlens,
                                          int32_t n_seg, int64_t n);

#endif
