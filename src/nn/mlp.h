/* mlp.h — the feed-forward block in its three forms:
 *   plain:  out = down(act(up(x)))                 (GR00T DiT, ViT: GELU-tanh)
 *   GeGLU:  out = down(gelu_tanh(gate(x)) ⊙ up(x)) (Gemma)
 *   SwiGLU: out = down(silu(gate(x)) ⊙ up(x))      (LLaMA/Qwen)
 * Weights use PyTorch's Linear layout ([out, in]); biases may be NULL.
 * The forward saves its intermediate activations in `acts`
 * (vla_mlp_acts_floats floats); the backward needs them and a scratch
 * buffer of vla_mlp_scratch_floats floats. */
#ifndef VLA_NN_MLP_H
#define VLA_NN_MLP_H

#include <stdbool.h>
#include <stdint.h>

#include "nn/activations.h"
#include "nn/linear.h"
#include "tensor/ops.h"

typedef struct {
    bool gated;   /* GeGLU / SwiGLU when true */
    vla_act act;  /* GELU_TANH + gated = GeGLU, SILU + gated = SwiGLU */
    int64_t dim, hidden, out_dim; /* out_dim 0 means dim */
    /* NULL, or the backend whose bf16 copy of the hidden h is all the forward keeps of it (nn/linear.h,
     * kept copies; the linears must be bf16): the GLU, or plain the up GEMM's epilogue (ops.h, KEPT
     * COPIES), writes only the copy, which down reads forward and for its weight gradient — the block
     * sets it (vla_block_keep_copies) */
    const vla_ops *copies;
} vla_mlp_config;

typedef struct {
    const float *w_up, *b_up;     /* [hidden, dim], [hidden] */
    const float *w_gate, *b_gate; /* gated only */
    const float *w_down, *b_down; /* [out_dim, hidden], [out_dim] */
    /* how each linear's GEMMs read their operands (nn/linear.h); NULL: f32 */
    const vla_linear_prec *q_up, *q_gate, *q_down;
} vla_mlp_weights;

typedef struct {
    float *w_up, *b_up, *w_gate, *b_gate, *w_down, *b_down; /* NULL: not wanted */
} vla_mlp_grads;

int64_t vla_mlp_acts_floats(const vla_mlp_config *cfg, int64_t n);
int64_t vla_mlp_scratch_floats(const vla_mlp_config *cfg, int64_t n);

/* in_ready: NULL, or in's bf16 GEMM-ready copy, written by the op that made in
 * (vla_linear_input_ready_buffer for the first linear: up, or gate when gated); in may be NULL where
 * in_ready is a bf16 copy kept alone (nn/linear.h, kept copies) */
void vla_mlp_forward(const vla_ops *ops, const vla_mlp_config *cfg, float *out, float *acts, const float *in,
                     const void *in_ready, const vla_mlp_weights *w, int64_t n);
/* d_in (may be NULL) and every non-NULL gradient in g are accumulated into — d_in written instead when
 * d_in_fresh (it holds nothing yet: no zero fill needed). in_ready: NULL, or in's bf16 copy kept by
 * the forward (kept copies; in may then be NULL), which the weight gradients read. */
void vla_mlp_backward(const vla_ops *ops, const vla_mlp_config *cfg, float *d_in, bool d_in_fresh,
                      const vla_mlp_grads *g, float *scratch, const float *d_out, const float *in,
                      const void *in_ready, const float *acts, const vla_mlp_weights *w, int64_t n);

#endif
