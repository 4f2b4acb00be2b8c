/* attention_dense.h — the plain reference for attention: the whole pack's
 * additive mask (0 / −inf, N_q × N_k) is materialised and every head's
 * N_q × N_k probabilities are computed and kept, as LeRobot's eager
 * PyTorch path does (repeat_kv, QKᵀ·scale + mask, softmax, @V). It serves
 * the tests of the tiled kernel (attention.h, same arguments and mask rule)
 * and is the baseline of the attention benchmarks. Memory is O(H·N²). */
#ifndef VLA_NN_ATTENTION_DENSE_H
#define VLA_NN_ATTENTION_DENSE_H

#include <stdint.h>

#include "base/status.h"
#include "nn/attention.h"
#include "tensor/ops.h"

/* Floats of the saved probabilities: n_heads · N_q · N_k. */
int64_t vla_attention_dense_probs_floats(const vla_attn_config *cfg, const vla_attn_seqs *qs,
                                         const vla_attn_seqs *ks);

/* out [N_q, H, d]; probs [H, N_q, N_k] saved for backward (rows that see no
 * key are 0, as is their output). */
vla_status vla_attention_dense_forward(const vla_ops *ops, const vla_attn_config *cfg, float *out, float *probs,
                                       const float *q, const float *k, const float *v, const vla_attn_seqs *qs,
                                       const vla_attn_seqs *ks);
/* dq, dk, dv accumulate (+=). */
vla_status vla_attention_dense_backward(const vla_ops *ops, const vla_attn_config *cfg, float *dq, float *dk,
                                        float *dv, const float *d_out, const float *q, const float *k,
                                        const float *v, const float *probs, const vla_attn_seqs *qs,
                                        const vla_attn_seqs *ks);

#endif
