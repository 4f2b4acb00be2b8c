/* linear.h — fully connected layer y = x·Wᵀ + b on [tokens, features] rows.
 *
 * Conventions shared by every nn layer (llm.c style):
 *  - activations are f32, row-major [tokens, features];
 *  - weights keep PyTorch's layout (Linear: W[out_dim, in_dim]) so checkpoints
 *    load without transposes;
 *  - every backward ADDS into its gradient buffers (inputs' and parameters'),
 *    so a layer used twice, or a residual branch, just accumulates; zero the
 *    buffers once per step. Pass NULL for a gradient you do not need.
 *
 * MIXED PRECISION (docs/precision.md). The _q forms take how the layer's
 * GEMMs read their operands (vla_linear_prec; NULL is f32, the plain forms):
 * BF16 rounds x, W and dy to bf16; FP8 is TransformerEngine's HYBRID
 * format with delayed per-tensor scaling — x and W in E4M3 (forward), dy in
 * E5M2 (the backward's dgrad dx = dy·W and wgrad dW = dyᵀ·x), each of the
 * three roles with its own scale and amax. Accumulation and outputs stay
 * f32; the bias and its gradient are f32 always. */
#ifndef VLA_NN_LINEAR_H
#define VLA_NN_LINEAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor/ops.h"

/* While a policy holds its weights (they cannot change: the micro-batches
 * of a training step, the flow steps of an action chunk), its lowered
 * linears cast each weight once per use — the forward's copy and the input
 * gradient's (transposed) copy — and reuse the copy until the hold ends
 * (ops.h, prepare_operand; PyTorch's autocast caches a weight's cast the
 * same way within its region). gen counts holds; a copy made under another
 * generation is stale. */
typedef struct {
    bool holding;
    uint64_t gen;
    int depth; /* holds open (they nest: the copies last until the outermost release) */
} vla_weight_scope;

typedef struct {
    const vla_weight_scope *scope;
    void *fwd, *dgrad;            /* backend memory, made at first use */
    size_t fwd_bytes, dgrad_bytes;
    uint64_t fwd_gen, dgrad_gen;  /* the hold each copy was made in (0: none) */
} vla_weight_ready;

/* One linear layer's precision: the mode, and in FP8 the scaling state of
 * its input x, its weight W and its output gradient dy (backend memory,
 * carved from the policy's one flat buffer: policy/precision.h); ready:
 * its weight's GEMM-ready copies (NULL: cast at every GEMM). */
typedef struct {
    vla_precision mode;
    vla_fp8_operand x, w, dy;
    vla_weight_ready *ready;
} vla_linear_prec;

/* out[n, out_dim] = in[n, in_dim] · w[out_dim, in_dim]ᵀ + b[out_dim] (b may be NULL). */
void vla_linear_forward(const vla_ops *ops, float *out, const float *in, const float *w, const float *b, int64_t n,
                        int64_t in_dim, int64_t out_dim);
void vla_linear_forward_q(const vla_ops *ops, const vla_linear_prec *q, float *out, const float *in, const float *w,
                          const float *b, int64_t n, int64_t in_dim, int64_t out_dim);

/* out = act(in·wᵀ + b), and pre (NULL: not kept) = in·wᵀ + b — what the
 * activation's backward reads — in one GEMM with its epilogue
 * (ops->sgemm_epi); act IDENTITY is vla_linear_forward_q. */
void vla_linear_forward_act(const vla_ops *ops, const vla_linear_prec *q, float *out, float *pre, const float *in,
                            const float *w, const float *b, vla_act act, int64_t n, int64_t in_dim, int64_t out_dim);

/* d_in += d_out·w, d_w += d_outᵀ·in, d_b += Σ_rows d_out (each may be NULL). */
void vla_linear_backward(const vla_ops *ops, float *d_in, float *d_w, float *d_b, const float *d_out,
                         const float *in, const float *w, int64_t n, int64_t in_dim, int64_t out_dim);
void vla_linear_backward_q(const vla_ops *ops, const vla_linear_prec *q, float *d_in, float *d_w, float *d_b,
                           const float *d_out, const float *in, const float *w, int64_t n, int64_t in_dim,
                           int64_t out_dim);

#endif
