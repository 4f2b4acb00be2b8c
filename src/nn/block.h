/* block.h — one pre-norm transformer block, configured rather than rewritten
 * per model. Every transformer layer of both policies is this block:
 *
 *   x_mid = x     + R1( o( attention( q, k, v ) ) )      q, k, v from norm1(x)
 *   x_out = x_mid + R2( mlp( norm2(x_mid) ) )             (k, v from a context for cross-attention)
 *
 * configured by
 *   norm kind      LayerNorm (affine or plain), RMSNorm (w or Gemma's 1 + w),
 *                  AdaRMS (π0.5 expert: rms(x)·(1+scale)+shift, and the
 *                  residuals R1/R2 gated: x + y·gate), AdaLN (GR00T DiT:
 *                  LN(x)·(1+scale)+shift). The adaptive kinds compute their
 *                  per-sample modulation with their own Linear(cond → k·dim)
 *                  (k = 3: scale, shift, gate; k = 2: scale, shift).
 *   attention      heads, KV heads (GQA/MQA), head_dim; biases; per-head
 *                  q/k RMSNorm (Qwen3); RoPE at explicit positions; self- or
 *                  cross-attention (K/V from context rows of another width).
 *   MLP            plain / GeGLU / SwiGLU, with or without biases (nn/mlp.h).
 *
 *   model        norm1, norm2     attention                 MLP
 *   SigLIP ViT   LN, LN           bias, bidirectional       GELU-tanh, bias
 *   Gemma LM     RMS 1+w, RMS 1+w RoPE, GQA, groups         GeGLU
 *   π0.5 expert  AdaRMS, AdaRMS   RoPE, joint with the LM   GeGLU, gated residuals
 *   Qwen3 LM     RMS, RMS         q/k norm, RoPE, causal    SwiGLU
 *   GR00T VL     LN, LN           bias, bidirectional       GELU-tanh, bias
 *   GR00T DiT    AdaLN, LN plain  bias, cross (even) / self GELU-tanh, bias
 *
 * THE TWO HALVES. vla_block_forward runs the attention itself over
 * io->cu (self) or io->cu/io->cu_ctx (cross). A caller whose attention
 * spans more than this block's rows — π0.5, where the LM's prefix rows and
 * the expert's action rows meet in ONE attention with different weights —
 * calls vla_block_attn_in (norm1 → q, k, v, RoPE applied) for each weight
 * stream, runs the attention over all rows, puts each stream's output in
 * its acts->att, and calls vla_block_attn_out (o → R1 → norm2 → MLP → R2).
 * The backward halves mirror them.
 *
 * ACTIVATIONS (llm.c style): everything a block saves for its backward is
 * one allocation of vla_block_acts_floats() floats carved by
 * vla_block_acts_carve() into the tensors of VLA_BLOCK_ACTS below (a size
 * table; tensors a configuration does not use get size 0). A caller that
 * will not run the backward (frozen stages, sampling) may give every layer
 * the same acts: nothing else is kept. The residual stream x / x_out is the
 * caller's (the backward needs each block's input x). The backward needs a
 * scratch of vla_block_scratch_floats() floats, carved the same way; the
 * two backward halves of one block must share it.
 *
 * Conventions of nn/: weights in PyTorch layout, gradients accumulate (+=),
 * NULL gradients are skipped. */
#ifndef VLA_NN_BLOCK_H
#define VLA_NN_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "nn/acts.h"
#include "nn/attention.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/weight.h"
#include "tensor/ops.h"

typedef enum {
    VLA_BLOCK_NORM_LAYER,       /* LayerNorm, weight and bias */
    VLA_BLOCK_NORM_LAYER_PLAIN, /* LayerNorm without affine */
    VLA_BLOCK_NORM_RMS,         /* RMSNorm, x·rstd·w */
    VLA_BLOCK_NORM_RMS_1P,      /* RMSNorm, x·rstd·(1 + w) (Gemma) */
    VLA_BLOCK_NORM_ADARMS,      /* adaptive RMSNorm + gated residual; Linear(cond → 3·dim) */
    VLA_BLOCK_NORM_ADALN,       /* adaptive LayerNorm; Linear(cond → 2·dim) */
} vla_block_norm;

typedef struct {
    int64_t dim;                    /* residual width D */
    vla_block_norm norm1, norm2;
    float norm_eps;                 /* both norms and the q/k norms */
    int64_t cond_dim;               /* conditioning width (adaptive norms) */
    vla_attn_config attn;           /* Hq, Hk, head_dim; Q = Hq·head_dim, K = Hk·head_dim */
    bool qkv_bias, o_bias;
    bool qk_norm;                   /* RMSNorm(w) of each q and k head before RoPE */
    double rope_theta;              /* > 0: RoPE on q and k (self-attention) at io->pos */
    bool cross;                     /* k, v from io->ctx rows of width kv_dim */
    int64_t kv_dim;                 /* width of the rows k, v are projected from (cross) */
    vla_mlp_config mlp;             /* mlp.dim == dim */
    bool mlp_bias;
    /* The caller runs the attention over more rows than this block's and
     * keeps q, k, v, att and lse in its own buffers: the size table gives
     * them no room and the caller points the acts at its buffers. */
    bool external_attention;
    /* KEPT COPIES (nn/linear.h): NULL, or the backend whose bf16 GEMM-ready
     * copies of h1 and h2 (and the MLP's hidden: mlp.copies) are all the
     * block keeps of them — their size-table entries are the copies'
     * (vla_linear_kept_floats), no f32 tensor is written, and the q/k/v,
     * gate/up (or up) and down GEMMs read the copies forward and for the
     * weight gradients.
     * The block's linears must then be bf16 (forward and backward say so
     * otherwise). Set with vla_block_keep_copies (the policy does, when its
     * precision is set). */
    const vla_ops *copies;
} vla_block_config;

/* c keeps its normed inputs (and its MLP's hidden) as ops' bf16 copies (NULL: as f32 tensors). */
static inline void vla_block_keep_copies(vla_block_config *c, const vla_ops *ops) {
    c->copies = ops;
    c->mlp.copies = ops;
}

/* A block's weights (vla_wg: weight + gradient). For the adaptive norms,
 * norm*_w / norm*_b are the modulation Linear's weight [k·dim, cond_dim] and
 * bias; for RMS the weight alone; LN plain has none. */
/* The block's large linear layers, whose GEMMs mixed precision lowers
 * (docs/precision.md); the adaptive norms' modulation Linear (one row per
 * sample) stays f32. */
typedef enum {
    VLA_BLOCK_LIN_Q, VLA_BLOCK_LIN_K, VLA_BLOCK_LIN_V, VLA_BLOCK_LIN_O,
    VLA_BLOCK_LIN_UP, VLA_BLOCK_LIN_GATE, VLA_BLOCK_LIN_DOWN,
    VLA_BLOCK_N_LIN
} vla_block_linear;

/* How each of those linears reads its operands (nn/linear.h). */
typedef struct {
    vla_linear_prec lin[VLA_BLOCK_N_LIN];
} vla_block_prec;

/* The vla_wg come first and are the struct's first VLA_BLOCK_N_WG members:
 * code that walks a block's weights as an array of vla_wg (gradient-ready
 * reports, frozen views) walks that many. */
typedef struct {
    vla_wg norm1_w, norm1_b;
    vla_wg q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
    vla_wg q_norm, k_norm;
    vla_wg norm2_w, norm2_b;
    vla_wg up_w, up_b, gate_w, gate_b, down_w, down_b;
    const vla_block_prec *prec; /* NULL: every GEMM in f32 (policy/precision.h binds it) */
} vla_block_weights;
#define VLA_BLOCK_N_WG ((int)(offsetof(vla_block_weights, prec) / sizeof(vla_wg)))

/* The block's attention config as the bound precision runs it: bf16 or FP8
 * training reads the attention's products in bf16 (TransformerEngine's
 * split: FP8 for the linears, the autocast dtype for attention; ops.h,
 * vla_attn_config.precision). The cpu backend computes f32 whatever it
 * says; the cuda backend picks its bf16 tensor-core kernels. */
static inline vla_attn_config vla_block_attn_config(const vla_attn_config *base, const vla_block_weights *w) {
    vla_attn_config a = *base;
    bool low = w && w->prec && w->prec->lin[VLA_BLOCK_LIN_Q].mode != VLA_PREC_FP32;
    a.precision = low ? VLA_PREC_BF16 : VLA_PREC_FP32;
    return a;
}

/* The weight of linear i of a block (NULL when the block has none, e.g. no gate). */
const vla_wg *vla_block_linear_weight(const vla_block_weights *w, vla_block_linear i);

/* The rows one call works on. */
typedef struct {
    int64_t n;                /* rows of x */
    int32_t n_seg;            /* samples */
    const int32_t *cu;        /* [n_seg + 1]: sample s owns rows cu[s]..cu[s+1] */
    const int32_t *groups;    /* [n] attention groups (nn/attention.h), NULL: bidirectional */
    const int32_t *pos;       /* [n] RoPE positions (rope_theta > 0) */
    const float *cond;        /* [n_seg, cond_dim] (adaptive norms) */
    /* cross-attention: context rows (their own cu, same n_seg) */
    int64_t n_ctx;
    const int32_t *cu_ctx;
    const float *ctx;         /* [n_ctx, kv_dim] */
    const float *k_cached;    /* [n_ctx, K] and [n_ctx, K]: the context's K and V computed */
    const float *v_cached;    /* once (sampling); NULL: projected from ctx at every call */
} vla_block_io;

/* Saved activations: X(name, floats) with n rows, nk key rows, S samples,
 * Q = Hq·head_dim, K = Hk·head_dim, k1/k2 the modulation widths (0 when the
 * norm is not adaptive), M the MLP's saved floats, g 1 when the residuals
 * are gated (AdaRMS), ea 0 when the attention is external (see the config). */
#define VLA_BLOCK_ACTS(X)                                                        \
    X(h1, hD)           /* norm1(x): n·D, or its bf16 copy (config.copies) */    \
    X(mean1, ln1 * n)   /* LayerNorm statistics */                               \
    X(rstd1, n)                                                                  \
    X(mod1, S * k1)     /* modulation of norm1 (and gate of R1) */               \
    X(qp, qkn * n * Q)  /* q, k before their RMSNorm (q/k norm only) */         \
    X(kp, qkn * nk * K)                                                          \
    X(rq, qkn * n * Hq)                                                          \
    X(rk, qkn * nk * Hk)                                                         \
    X(q, ea * n * Q)         /* after q/k norm and RoPE */                            \
    X(k, ea * nk * K)                                                                 \
    X(v, ea * nk * K)                                                                 \
    X(att, ea * n * Q)       /* attention output */                                   \
    X(lse, ea * n * Hq)      /* its log-sum-exp per (row, head) */                    \
    X(y1, g * n * D)    /* o-projection (gated residual only) */                 \
    X(xm, n * D)        /* x_mid */                                              \
    X(h2, hD)           /* norm2(x_mid), as h1 */                                \
    X(mean2, ln2 * n)                                                            \
    X(rstd2, n)                                                                  \
    X(mod2, S * k2)                                                              \
    X(mlp, M)           /* the MLP's own saved activations */                    \
    X(y2, g * n * D)    /* MLP output (gated residual only) */

/* Backward scratch, same conventions; ms the MLP's scratch. */
#define VLA_BLOCK_SCRATCH(X)                                                     \
    X(dh, n * D)        /* ∂ of norm outputs */                                  \
    X(dy, g * n * D)    /* ∂ of a gated branch's output */                       \
    X(datt, n * Q)                                                               \
    X(dq, n * Q)                                                                 \
    X(dk, nk * K)                                                                \
    X(dv, nk * K)                                                                \
    X(dqp, qkn * n * Q) /* q, k gradients before the q/k norm (RoPE's backward   \
                         * rotates dq and dk in place) */                        \
    X(dkp, qkn * nk * K)                                                         \
    X(dmod1, S * k1)                                                             \
    X(dmod2, S * k2)                                                             \
    X(mlp, ms)

typedef struct {
    VLA_BLOCK_ACTS(VLA_ACTS_FIELD)
} vla_block_acts;
typedef struct {
    VLA_BLOCK_SCRATCH(VLA_ACTS_FIELD)
} vla_block_scratch;

/* Floats of the saved activations / the backward scratch for n rows and
 * n_ctx context rows (cross) over n_seg samples; carve a buffer of that
 * many floats (64-byte aligned) into the named tensors (each 64-byte aligned). */
int64_t vla_block_acts_floats(const vla_block_config *c, int64_t n, int64_t n_ctx, int32_t n_seg);
void vla_block_acts_carve(const vla_block_config *c, int64_t n, int64_t n_ctx, int32_t n_seg, float *buf,
                          vla_block_acts *a);
int64_t vla_block_scratch_floats(const vla_block_config *c, int64_t n, int64_t n_ctx, int32_t n_seg);
void vla_block_scratch_carve(const vla_block_config *c, int64_t n, int64_t n_ctx, int32_t n_seg, float *buf,
                             vla_block_scratch *s);

/* Check a config (sizes positive, head counts divide, mlp.dim == dim, …). */
vla_status vla_block_check(const vla_block_config *c);

/* x [n, D] → x_out [n, D] (may not alias x). */
vla_status vla_block_forward(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                             const vla_block_io *io, const float *x, float *x_out, vla_block_acts *a);
/* d_x: on entry ∂L/∂x_out, on return ∂L/∂x. d_ctx [n_ctx, kv_dim] and
 * d_cond [n_seg, cond_dim] accumulate (NULL: not wanted). */
vla_status vla_block_backward(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                              const vla_block_io *io, const float *x, const vla_block_acts *a, vla_block_scratch *s,
                              float *d_x, float *d_ctx, float *d_cond);

/* The halves around an attention the caller runs (see the top). attn_in
 * fills a->q, a->k, a->v (RoPE applied) and the norm1 state; the caller then
 * fills a->att (and a->lse, for the backward). */
vla_status vla_block_attn_in(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                             const vla_block_io *io, const float *x, vla_block_acts *a);
vla_status vla_block_attn_out(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                              const vla_block_io *io, const float *x, float *x_out, vla_block_acts *a);
/* the same with att's bf16 GEMM-ready copy (written by the attention: vla_attention_forward_ready; or NULL)
 * for the o-projection */
vla_status vla_block_attn_out_x(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                                const vla_block_io *io, const float *x, float *x_out, vla_block_acts *a,
                                const void *att_ready);
/* d_x: ∂L/∂x_out → ∂L/∂x_mid; s->datt receives ∂L/∂att (overwritten). */
vla_status vla_block_attn_out_backward(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                                       const vla_block_io *io, const vla_block_acts *a, vla_block_scratch *s,
                                       float *d_x, float *d_cond);
/* From s->dq, s->dk, s->dv (∂ of the roped q, k and of v; filled by the
 * caller's attention backward): d_x += the attention branch's ∂L/∂x
 * (turning ∂L/∂x_mid into ∂L/∂x); d_ctx, d_cond accumulate. */
vla_status vla_block_attn_in_backward(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                                      const vla_block_io *io, const float *x, const vla_block_acts *a,
                                      vla_block_scratch *s, float *d_x, float *d_ctx, float *d_cond);

/* What a stack's forward keeps for its backward. */
typedef enum {
    VLA_STACK_NONE,      /* nothing (inference, frozen): xs 2 buffers used in turn, acts one table */
    VLA_STACK_ALL,       /* every block's activations: xs depth + 1 buffers, acts depth tables */
    VLA_STACK_RECOMPUTE, /* every block's input (xs depth + 1 buffers) and one table the backward
                          * refills by running each block's forward again (activation checkpointing) */
} vla_block_keep;

/* The residual buffers and block tables a stack of `depth` keeping `keep` needs. */
static inline int64_t vla_block_stack_xs(vla_block_keep keep, int64_t depth) {
    return keep == VLA_STACK_NONE ? 2 : depth + 1;
}
static inline int64_t vla_block_stack_tables(vla_block_keep keep, int64_t depth) {
    return keep == VLA_STACK_ALL ? depth : 1;
}

/* A stack of `depth` blocks with one config and one io (ViT, LMs, the VL
 * adapter). xs[0..n·D) holds the input; xs and `acts` hold
 * vla_block_stack_xs() residual buffers of n·D floats (with depth + 1: the
 * input of each block, then the output) and vla_block_stack_tables() tables
 * of vla_block_acts_floats() each. *out is the last block's output (inside
 * xs). */
vla_status vla_block_stack_forward(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                                   int64_t depth, const vla_block_io *io, float *xs, float *acts, vla_block_keep keep,
                                   const float **out);
/* The backward of a stack kept ALL or RECOMPUTE (as its forward): d_x from
 * ∂L/∂(last output) to ∂L/∂xs[0]; `after(user, l)` (may be NULL) runs once
 * block l's gradients are final, last block first (gradient-ready reports).
 * RECOMPUTE runs block l's forward again into `acts` (the last block's is
 * there from the forward) — the same bits as kept ones, the forward being
 * deterministic. */
vla_status vla_block_stack_backward(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                                    int64_t depth, const vla_block_io *io, const float *xs, float *acts,
                                    vla_block_keep keep, float *scratch, float *d_x,
                                    void (*after)(void *user, int64_t layer), void *user);

/* Model FLOPs of one forward's matrix products (2·m·n·k each; attention
 * scores excluded — they depend on the mask: the caller counts them). */
double vla_block_matmul_flops(const vla_block_config *c, int64_t n, int64_t n_ctx, int32_t n_seg);

#endif
