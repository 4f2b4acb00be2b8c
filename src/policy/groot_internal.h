/* groot_internal.h — what the GR00T-N1.5-style policy's files share:
 * groot.c (the policy.h interface, packing, loss, sampling),
 * groot_backbone.c (SigLIP ViT → mlp1 → Qwen3 LM cut after language.depth
 * layers) and groot_dit.c (vlln + VL self-attention, state/action encoders,
 * the DiT with AdaLN and interleaved cross/self attention, the decoder).
 *
 * Every weight is bound by its checkpoint name (param_spec.c) to a
 * (weight, grad) pair; grad is NULL for a frozen parameter, and the nn
 * layers skip NULL gradients, so freezing needs no special cases. Which
 * backward passes run at all follows the gradient flow: a stage runs
 * backward only when it or something upstream of it trains. */
#ifndef VLA_POLICY_GROOT_INTERNAL_H
#define VLA_POLICY_GROOT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "nn/attention.h"
#include "policy/flow.h"
#include "policy/policy.h"
#include "policy/vit.h"

typedef struct {
    const float *w;
    float *g; /* NULL when frozen */
} groot_t;

typedef struct {
    groot_t in_ln, q, k, v, o, q_norm, k_norm, post_ln, gate, up, down;
} groot_lm_layer;

/* diffusers BasicTransformerBlock as GR00T uses it. VL self-attention:
 * n1 = affine LayerNorm (w, b), n3 = affine LayerNorm. DiT: n1 = AdaLN's
 * linear ([2D, D], bias), n3 unused (LayerNorm without affine). */
typedef struct {
    groot_t n1_w, n1_b, q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b, n3_w, n3_b, f1_w, f1_b, f2_w, f2_b;
} groot_block;

/* The batch as the networks see it: the backbone's prefix (image + text
 * tokens) and the action head's own sequence [state, future×F, action×H],
 * each packed with its own cu_seqlens. */
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
    const float *images;                        /* [n_img, C, H, W] */
    const float *state;                         /* [S, state_dim] */
} groot_pack;

/* Saved activations of the backbone (one layer's worth, reused, when the
 * backbone is frozen: nothing is kept for a backward that never runs). */
typedef struct {
    bool saved;
    float *vit_acts, *vit_out, *emb; /* emb = LM input [P, L] */
    float *x;                        /* [depth + 1][P, L] residual stream at each layer input; [depth] = last */
    float *h1, *r1, *qp, *qn, *rq, *kp, *kn, *rk, *q, *k, *v, *att, *lse, *xm, *h2, *r2, *mlp;
    float *rf, *feats; /* final RMSNorm: rstd [P], output [P, L] */
} groot_bb_acts;

/* Saved activations of the VL adapter (vlln + self-attention blocks). */
typedef struct {
    float *in, *m0, *r0;                                            /* vlln: input feats, stats */
    float *x;                                                       /* [layers + 1][P, L] */
    float *h1, *m1, *r1, *q, *k, *v, *att, *lse, *xm, *h3, *m3, *r3, *mlp;
    float *out;                                                     /* = x + layers·P·L */
} groot_vl_acts;

/* Saved activations of one action-head forward (DiT side). */
typedef struct {
    const float *vl; /* [P, L] cross-attention K/V source */
    float *bucket, *tproj, *te1, *te1a, *temb, *stemb; /* [S], [S, C], [S, D]… */
    float *st_h, *st_hr, *st;                          /* state encoder */
    float *xt, *a1, *cat, *a2, *a2s, *a3;              /* action encoder */
    float *x;                                          /* [layers + 1][N, D] */
    float *mod, *h1, *m1, *r1, *q, *kv_k, *kv_v, *att, *lse, *xm, *h3, *m3, *r3, *mlp; /* per layer */
    int64_t kv_stride;                                 /* rows·D per layer of kv_k/kv_v (P or N rows) */
    const float *ck, *cv;                              /* sampling: cross-attention K/V per layer, cached (or NULL) */
    float *xa, *mo, *mod_out, *ya, *ma, *ra, *za, *d1, *d1r, *pred; /* output side, action rows only */
} groot_head_acts;

typedef struct {
    const vla_policy_config *cfg;
    vla_vit vit;
    bool have_vit;
    groot_t mlp1_w, mlp1_b, embed, final_norm;
    groot_lm_layer *lm;
    groot_t vlln_w, vlln_b;
    groot_block *vl, *dit;
    groot_t te1_w, te1_b, te2_w, te2_b, po1_w, po1_b, po2_w, po2_b;
    groot_t st1_w, st1_b, st2_w, st2_b, a1_w, a1_b, a2_w, a2_b, a3_w, a3_b, d1_w, d1_b, d2_w, d2_b, pos, fut;
    /* gradient flow: backward runs through a stage iff it or something upstream trains */
    bool need_vision, need_conn, need_lm, need_vl;
    vla_flow flow;
    vla_arena arena;  /* the last loss's activations (kept for backward) */
    vla_arena sarena; /* sampling scratch */
    size_t arena_cap, sarena_cap; /* their chunk sizes (grown to the high-water mark) */
    /* the last loss call, for backward */
    bool have_fwd;
    groot_pack pk;
    groot_bb_acts bb;
    groot_vl_acts vla;
    groot_head_acts ha;
    float *t, *noise, *target, *d_pred; /* [S], [A, ad] ×3 */
    size_t saved_bytes;                 /* arena use after the last loss */
    const uint8_t *is_pad;
    const int32_t *real_dims;
    /* test hook: recompute the VL features at every Euler step */
    bool recompute_vl;
} groot_impl;

static inline groot_impl *groot_of(vla_policy *p) { return (groot_impl *)p->impl; }

/* Gradient-ready report (policy.h) of the parameters behind n tensors, once
 * their last gradient contribution of this backward is in. */
static inline void groot_ready(vla_policy *p, const groot_t *t, int n) {
    if (!p->grad_ready) return;
    const float *w[24];
    for (int k0 = 0; k0 < n; k0 += 24) { /* (a block has fewer tensors: one pass) */
        int m = n - k0 < 24 ? n - k0 : 24;
        for (int k = 0; k < m; k++) w[k] = t[k0 + k].w;
        vla_policy_ready_weights(p, w, m);
    }
}
/* A struct made only of groot_t (groot_lm_layer, groot_block). */
#define GROOT_READY_STRUCT(p, s) groot_ready((p), (const groot_t *)(s), (int)(sizeof *(s) / sizeof(groot_t)))

/* Allocation from an arena that fails with a status. */
#define GROOT_ALLOC(arena, ptr, count)                                                                          \
    do {                                                                                                       \
        int64_t n_ = (count);                                                                                  \
        (ptr) = vla_arena_alloc((arena), (size_t)(n_ > 0 ? n_ : 1) * sizeof *(ptr), 64);                      \
        if (!(ptr)) return vla_error(VLA_ERR_NOMEM, "groot: out of memory (%lld elements)", (long long)n_);    \
    } while (0)

/* groot_backbone.c: ViT → mlp1 → LM; out bb->feats [P, L]. save: keep what backward needs. */
vla_status groot_backbone_forward(vla_policy *p, vla_arena *a, const groot_pack *pk, bool save, groot_bb_acts *bb);
/* d_feats [P, L]. Adds into the backbone's trainable grads. */
vla_status groot_backbone_backward(vla_policy *p, vla_arena *a, const groot_pack *pk, groot_bb_acts *bb,
                                   const float *d_feats);

/* groot_dit.c */
vla_status groot_vl_forward(vla_policy *p, vla_arena *a, const groot_pack *pk, const float *feats, bool save,
                            groot_vl_acts *va);
/* d_out [P, L] consumed; d_feats [P, L] (accumulated, may be NULL). */
vla_status groot_vl_backward(vla_policy *p, vla_arena *a, const groot_pack *pk, groot_vl_acts *va, float *d_out,
                             float *d_feats);
/* Action side: x_t [A, action_dim] at per-sample buckets → pred [A, action_dim] (ha->pred).
 * cross_k/cross_v (from groot_head_cross_kv, or NULL to compute them here): the
 * cross-attention blocks' K/V of the VL tokens, which do not change across
 * Euler steps. */
vla_status groot_head_forward(vla_policy *p, vla_arena *a, const groot_pack *pk, const float *vl,
                              const float *bucket, const float *x_t, const float *cross_k, const float *cross_v,
                              groot_head_acts *ha);
/* K and V of every cross-attention block ([dit_layers][P, D] each; odd layers unused). */
vla_status groot_head_cross_kv(vla_policy *p, vla_arena *a, const groot_pack *pk, const float *vl, float **k,
                               float **v);
/* d_pred [A, action_dim]; d_vl [P, L] accumulated (NULL: not needed). */
vla_status groot_head_backward(vla_policy *p, vla_arena *a, const groot_pack *pk, groot_head_acts *ha,
                               const float *d_pred, float *d_vl);

#endif
