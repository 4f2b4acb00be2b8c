/* groot_internal.h — what the GR00T-N1.5-style policy's files share:
 * groot_family.c (config section, inventory, estimates, layout),
 * groot.c (the policy.h interface, packing, loss, sampling),
 * groot_backbone.c (SigLIP ViT → mlp1 → Qwen3 LM cut after language.depth
 * layers) and groot_dit.c (vlln + VL self-attention, state/action encoders,
 * the DiT with AdaLN and interleaved cross/self attention, the decoder).
 *
 * Every transformer layer is an nn/block.h block: Qwen3 (RMSNorm, q/k norm,
 * RoPE, SwiGLU), the VL adapter's (LayerNorm, biased attention, GELU-tanh)
 * and the DiT's (AdaLN from the timestep, cross-attention to the VL tokens
 * in even layers). Frozen parameters have NULL gradients, which the layers
 * skip; which backward passes run at all follows the gradient flow: a stage
 * runs backward only when it or something upstream of it trains. Sizes as in
 * policy.h's legend. */
#ifndef VLA_POLICY_GROOT_INTERNAL_H
#define VLA_POLICY_GROOT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "nn/block.h"
#include "policy/family.h"
#include "policy/flow.h"
#include "policy/groot.h"
#include "policy/policy.h"
#include "policy/region.h"
#include "policy/vit.h"

typedef struct {
    vla_vit vit;                          /* backbone.eagle_model.vision_model */
    vla_wg mlp1_w, mlp1_b, embed, final_norm;
    vla_block_weights *lm;                /* [language.depth] Qwen3 layers */
    vla_wg vlln_w, vlln_b;
    vla_block_weights *vl, *dit;          /* [vl_layers], [dit_layers] */
    vla_wg te1_w, te1_b, te2_w, te2_b, po1_w, po1_b, po2_w, po2_b;
    vla_wg st1_w, st1_b, st2_w, st2_b, a1_w, a1_b, a2_w, a2_b, a3_w, a3_b, d1_w, d1_b, d2_w, d2_b, pos, fut;
} groot_weights;

/* The batch as the networks see it: the backbone's prefix (image + text
 * tokens) and the action head's own sequence [state, future×F, action×H],
 * each packed with its own cu_seqlens. The index maps are host memory (a
 * host arena); images and state are the batch's, uploaded to backend memory. */
typedef struct {
    int32_t S;
    int64_t P;         /* prefix tokens */
    int64_t n_img;     /* images */
    int64_t n_img_tok; /* image tokens = n_img · tokens per image */
    int64_t n_txt;     /* text tokens */
    int64_t N;         /* DiT tokens: S·(1 + F + H) */
    int64_t A;         /* action tokens: S·H */
    int32_t *cu_pre, *cu_dit, *cu_act, *cu_one; /* [S+1] */
    int32_t *pre_pos, *pre_group;               /* [P] */
    int32_t *img_rows;                          /* [n_img_tok] prefix row of each ViT output row */
    int32_t *txt_rows, *txt_ids;                /* [n_txt] */
    int32_t *act_pos;                           /* [A] position-embedding rows */
    int32_t *emb;                               /* [S] embodiment ids */
    /* rows of the DiT sequence: each action row's, each sample's state row,
     * and the future tokens' (with the row of `fut` each one copies) */
    int32_t *act_rows, *state_rows, *fut_rows, *fut_src; /* [A], [S], [S·F], [S·F] */
    int32_t *act_sample;                        /* [A] the sample of each action row */
    const float *images;                        /* [n_img, C, H, W] (backend) */
    const float *state;                         /* [S, state_dim] (backend) */
} groot_pack;

/* The backbone's saved activations (one block's worth, reused by every
 * layer, when nothing will run its backward). */
typedef struct {
    vla_block_keep keep;       /* what the forward kept (nn/block.h) */
    float *vit_acts, *vit_out; /* ViT */
    float *x;                  /* [depth + 1][P, L] (kept) or [2][P, L]: the residual stream */
    float *blocks;             /* [depth] (all kept) or [1] block activations */
    float *rf, *feats;         /* final RMSNorm: rstd [P], output [P, L] */
} groot_bb_acts;

/* The VL adapter's saved activations. */
typedef struct {
    const float *in;           /* its input: the backbone's features [P, L] */
    float *m0, *r0;            /* vlln statistics */
    float *x;                  /* [layers + 1][P, L] (or [2]) */
    float *blocks;
    float *out;                /* the VL tokens: x[layers] */
    vla_block_keep keep;
} groot_vl_acts;

/* The action head's saved activations (one forward at the batch's flow times). */
typedef struct {
    const float *vl;           /* [P, L] cross-attention context */
    const float *ck, *cv;      /* sampling: the cross blocks' K/V of vl, cached ([dit_layers][P, D]) or NULL */
    float *blk;                /* the DiT blocks' activations, layer after layer */
    float *bucket, *tproj, *te1, *te1a, *temb, *stemb; /* timestep encoder */
    float *st_h, *st_hr, *st;                          /* state encoder */
    float *xt, *a1, *tau, *cat, *a2, *a2s, *a3;        /* action encoder */
    float *x;                                          /* [layers + 1][N, D] */
    float *xa, *mo, *mod_out, *ya, *ma, *ra, *za, *d1, *d1r, *pred; /* output side, action rows only */
} groot_head_acts;

typedef struct {
    const vla_policy_config *cfg;
    const vla_ops *ops; /* the policy's backend (p->tops) */
    groot_weights W;
    vla_block_config lm_cfg, vl_cfg, dit_self, dit_cross;
    bool dit_recompute; /* the last head forward kept one DiT block table per kind (recompute_layers) */
    /* gradient flow: backward runs through a stage iff it or something upstream trains */
    bool need_vision, need_conn, need_lm, need_vl;
    vla_flow flow;
    vla_arena arena;        /* backend memory: the last loss's activations (kept for backward) */
    vla_arena sarena;       /* backend memory: sampling and frozen-backbone scratch */
    vla_arena harena;       /* host memory: the last loss's index maps and flow draws */
    vla_arena sharena;      /* host memory: sampling's index maps */
    vla_arena params_arena; /* the weight struct's per-layer arrays */
    /* the last loss call, for backward */
    bool have_fwd;
    groot_pack pk;
    /* the prefix pack the backbone and VL adapter ran on: &pk, or upk with
     * one sample per distinct prefix (shared prefixes, groot.c) */
    const groot_pack *ppk;
    groot_pack upk;
    int32_t *prefix_of;  /* [S] upk sample of each pk sample (when ppk == &upk) */
    int32_t *spread_src; /* [pk.P] the upk row each pk prefix row copies (when shared) */
    bool share_prefixes; /* default true; tests turn it off to compare */
    groot_bb_acts bb;
    groot_vl_acts vla;
    groot_head_acts ha;
    float *t, *noise;                   /* host: [S], [A, ad] (vla_groot_last_flow) */
    float *target, *d_pred;             /* backend: [A, ad] ×2 */
    size_t saved_bytes;                 /* arena use after the last loss */
    struct vla_region_outs *prefix_outs; /* sampling's prefix region: each key's VL tokens and cross K/V (region.h) */
    /* a training step's regions (groot.c): each key's VL adapter and head activations; nothing */
    struct vla_region_outs *train_fwd_outs, *train_bwd_outs;
    vla_region_trial train_trial; /* whether the batches' layouts repeat (region.h) */
    /* the frozen backbone's region in a training step (groot.c): nothing kept; its prompts' repeats */
    struct vla_region_outs *backbone_outs;
    vla_region_trial backbone_trial;
} groot_impl;

static inline groot_impl *groot_of(vla_policy *p) { return (groot_impl *)p->impl; }

/* Gradient-ready report of a stack's layer (vla_block_stack_backward's `after`). */
typedef struct {
    vla_policy *p;
    const vla_block_weights *w;
} groot_layers_ready;
void vla_groot_layer_ready(void *user, int64_t layer);

/* groot_backbone.c: ViT → mlp1 → LM; out bb->feats [P, L]. keep: what the backward needs (NONE: no backward). */
vla_status vla_groot_backbone_forward(vla_policy *p, vla_arena *a, const groot_pack *pk, vla_block_keep keep,
                                      groot_bb_acts *bb);
/* d_feats [P, L] consumed. Adds into the backbone's trainable grads. */
vla_status vla_groot_backbone_backward(vla_policy *p, vla_arena *a, const groot_pack *pk, groot_bb_acts *bb,
                                   float *d_feats);

/* groot_dit.c */
vla_status vla_groot_vl_forward(vla_policy *p, vla_arena *a, const groot_pack *pk, const float *feats,
                                vla_block_keep keep, groot_vl_acts *va);
/* d_out [P, L] consumed; d_feats [P, L] (accumulated, may be NULL). */
vla_status vla_groot_vl_backward(vla_policy *p, vla_arena *a, const groot_pack *pk, groot_vl_acts *va, float *d_out,
                             float *d_feats);
/* Action side: x_t [A, action_dim] at per-sample buckets → pred [A, action_dim] (ha->pred).
 * cross_k/cross_v (from vla_groot_head_cross_kv, or NULL to compute them here): the
 * cross-attention blocks' K/V of the VL tokens, which do not change across
 * Euler steps. */
vla_status vla_groot_head_forward(vla_policy *p, vla_arena *a, const groot_pack *pk, const float *vl,
                              const float *bucket, const float *x_t, const float *cross_k, const float *cross_v,
                              groot_head_acts *ha);
/* K and V of every cross-attention block ([dit_layers][P, D] each; odd layers unused). */
vla_status vla_groot_head_cross_kv(vla_policy *p, vla_arena *a, const groot_pack *pk, const float *vl, float **k,
                               float **v);
/* d_pred [A, action_dim]; d_vl [P, L] accumulated (NULL: not needed). */
vla_status vla_groot_head_backward(vla_policy *p, vla_arena *a, const groot_pack *pk, groot_head_acts *ha,
                               const float *d_pred, float *d_vl);

/* RTC (policy/rtc.h): dxt [A, action_dim] = (∂pred/∂x_t)ᵀ·cot at the forward
 * that filled ha (run with cross_k NULL); no parameter gradients. */
vla_status vla_groot_head_vjp(vla_policy *p, vla_arena *a, const groot_pack *pk, const groot_head_acts *ha,
                              const float *cot, float *dxt);

/* this family's table (its *_family.c) */
extern const vla_policy_family vla_groot_family;

#endif
