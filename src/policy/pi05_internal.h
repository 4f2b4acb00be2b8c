/* pi05_internal.h — what the π0.5 family's files share: the weight struct
 * the inventory (pi05_family.c) binds, and the network's state — its size
 * tables, the last forward and the functions that run it — which the
 * training passes (pi05.c) and sampling (pi05_sample.c) both use. */
#ifndef VLA_POLICY_PI05_INTERNAL_H
#define VLA_POLICY_PI05_INTERNAL_H

#include <stdbool.h>

#include "base/arena.h"
#include "nn/acts.h"
#include "nn/attention.h"
#include "nn/block.h"
#include "policy/flow.h"
#include "policy/family.h"
#include "policy/pi05.h"
#include "policy/region.h"
#include "policy/vit.h"

typedef struct {
    vla_vit vit;                    /* vision_tower */
    vla_wg proj_w, proj_b;          /* multi_modal_projector */
    vla_wg embed;                   /* the LM's token embedding */
    vla_block_weights *lm, *ex;     /* [depth]: Gemma layers (prefix), expert layers (actions) */
    vla_wg lm_norm;                 /* in the checkpoints, unused: the expert's output is the result */
    vla_wg fin_w, fin_b;            /* the expert's final AdaRMS modulation */
    vla_wg ain_w, ain_b, aout_w, aout_b, tin_w, tin_b, tout_w, tout_b;
} pi05_weights;

/* ---- the forward's size tables ---------------------------------------------------- */

/* Index maps of a packed batch (int32). */
#define PI05_MAPS(X)                                                                                             \
    X(cu, S + 1)         /* copies of the batch's arrays */                                                      \
    X(pos, T)                                                                                                    \
    X(grp, T)                                                                                                    \
    X(ids, T)                                                                                                    \
    X(pre_idx, T)        /* prefix / action row → token */                                                      \
    X(act_idx, T)                                                                                                \
    X(pre_img, T)        /* prefix row → image-token row, or −1 for text */                                     \
    X(pre_pos, T)        /* positions of the prefix / action rows */                                            \
    X(act_pos, T)                                                                                                \
    X(pcu, S + 1)        /* per-sample row ranges of the two streams */                                         \
    X(acu, S + 1)                                                                                                \
    X(img_dst, T)        /* prefix rows that are image tokens, and their image-token rows */                    \
    X(img_src, T)                                                                                                \
    X(txt_dst, T)        /* prefix rows that are text tokens, and their token ids */                            \
    X(txt_id, T)

/* Saved activations (f32); `act` is 0 for a prefix-only forward (sampling cache). */
#define PI05_ACTS(X)                                                                                             \
    X(images, n_px)       /* the batch's images, uploaded */                                                     \
    X(tdev, act * S)      /* the flow times, uploaded */                                                         \
    X(vit_acts, vit)                                                                                             \
    X(vit_out, n_it * Dv)                                                                                        \
    X(img_emb, n_it * W)                                                                                         \
    X(temb, act * S * We) /* time condition: cond = swish(out(swish(in(sincos(t))))) */                          \
    X(tm1, act * S * We)                                                                                         \
    X(tm1s, act * S * We)                                                                                        \
    X(tm2, act * S * We)                                                                                         \
    X(cond, act * S * We)                                                                                        \
    X(xin, Na * A)                                                                                               \
    X(xp, nxp * Np * W)     /* residual streams at each layer's input (prefix-only: two in turn) */            \
    X(xa, (L + 1) * Na * We)                                                                                     \
    X(mod_f, act * S * 3 * We)                                                                                   \
    X(af, Na * We)                                                                                               \
    X(arstd_f, Na)                                                                                               \
    X(vpred, Na * A)                                                                                             \
    X(Q, Lk * T * HD)        /* per layer, token order, RoPE applied */                                          \
    X(K, Lkv * T * KD)       /* (prefix-only: every layer's K and V, sampling's cache; the rest one slot) */    \
    X(V, Lkv * T * KD)                                                                                           \
    X(O, Lk * T * HD)                                                                                            \
    X(lse, Lk * T * H)                                                                                           \
    X(blk_p, Lk * bp)        /* per layer: the two blocks' own saved activations */                              \
    X(blk_a, Lk * ba)                                                                                            \
    X(tq, mx * HD)          /* one stream's q k v / attention output (temporaries) */                          \
    X(tk, mx * KD)                                                                                               \
    X(tv, mx * KD)                                                                                               \
    X(to, mx * HD)

/* Backward scratch. */
#define PI05_GRADS(X)                                                                                            \
    X(dxp, Np * W)                                                                                               \
    X(dxa, Na * We)                                                                                              \
    X(dcond, S * We)                                                                                             \
    X(dmod, S * 3 * We)                                                                                          \
    X(dtmp, mx * Wm)                                                                                             \
    X(dtmp2, S * We)                                                                                             \
    X(dq, T * HD)                                                                                                \
    X(dk, T * KD)                                                                                                \
    X(dv, T * KD)                                                                                                \
    X(dO, T * HD)                                                                                                \
    X(sp, bsp)                                                                                                   \
    X(sa, bsa)                                                                                                   \
    X(d_emb, n_it * W)                                                                                           \
    X(d_vit, vt * n_it * Dv)                                                                                     \
    X(vit_scratch, vt * vs)

typedef struct {
    PI05_MAPS(VLA_ACTS_FIELD_I32)
} fwd_maps;
typedef struct {
    PI05_ACTS(VLA_ACTS_FIELD)
} fwd_acts;
typedef struct {
    PI05_GRADS(VLA_ACTS_FIELD)
} bwd_scratch;

/* The last forward: sizes, index maps and activations (all in the arena). */
typedef struct {
    int32_t S;
    int64_t T, Np, Na, n_img;
    int64_t n_imgrow, n_txt; /* prefix rows of each kind (img_dst / txt_dst) */
    bool act; /* with action rows (a loss or an uncached sampling step) */
    bool recompute; /* a training forward under vla_policy.recompute_layers: the per-layer
                     * tables (Q K V O lse blk_p blk_a) hold one layer, the backward
                     * recomputes each layer's (vla_pi05_view_layer maps every layer to it) */
    double pairs;   /* attention pairs of the batch (FLOPs of each layer's attention) */
    fwd_maps m;
    fwd_acts a;
} fwd_state;

typedef struct {
    pi05_weights W;
    vla_block_config lm_cfg, ex_cfg; /* Gemma layer (prefix), expert layer (actions) */
    vla_attn_config attn;            /* the joint attention */
    vla_flow flow;
    vla_arena arena;                 /* backend memory: the last forward's activations; the backward's scratch above them */
    vla_arena harena;                /* host memory: the last forward's index maps and flow draws */
    vla_arena params_arena;          /* the weight struct's per-layer arrays */
    fwd_state f;
    bool have_fwd;                   /* f holds a training forward with action tokens */
    float *dpred;                    /* [Na, A] ∂loss/∂velocity of the last loss */
    vla_flow_chunk chunk;            /* sampling's x and v at fixed addresses (policy/flow.h) */
    double flops;
    /* a training step's regions (pi05.c): each key's model FLOPs; nothing; whether layouts repeat */
    struct vla_region_outs *train_fwd_outs, *train_bwd_outs;
    vla_region_trial train_trial;
} pi05_impl;

static inline pi05_impl *pi05_of(vla_policy *p) { return (pi05_impl *)p->impl; }

/* Every size the tables use, for a batch of S samples, T tokens, Np prefix
 * and Na action rows, n_img images. */
#define PI05_DIMS(I, c, S_, T_, Np_, Na_, nimg_, act_)                                                           \
    const vla_lm_config *l_ = &(c)->language;                                                                    \
    const int64_t S = (S_), T = (T_), Np = (Np_), Na = (Na_), act = (act_), L = l_->depth;                       \
    /* layers whose activations are kept: recompute (training) keeps one slot for all; the prefix-only      \
     * forward (sampling's cache, no backward) every layer's K and V and one slot for the rest */            \
    const int64_t Lkv = (I)->f.recompute ? 1 : L, Lk = (I)->f.recompute || !(act_) ? 1 : L;                    \
    const int64_t nxp = (act_) ? L + 1 : 2;                                                                      \
    const int64_t W = l_->width, We = (c)->expert.width, H = l_->heads, HD = l_->heads * l_->head_dim;           \
    const int64_t KD = l_->kv_heads * l_->head_dim, A = (c)->action.action_dim, Dv = (c)->vision.width;          \
    const int64_t n_it = (nimg_) * (I)->W.vit.tokens, mx = Np > Na ? Np : Na, Wm = W > We ? W : We;              \
    const int64_t n_px = (nimg_) * (c)->vision.channels * (c)->vision.image_size * (c)->vision.image_size;       \
    const int64_t vit = (nimg_) > 0 ? vla_vit_acts_floats(&(I)->W.vit, (nimg_)) : 0;                             \
    const int64_t bp = vla_block_acts_floats(&(I)->lm_cfg, Np, 0, (int32_t)S);                                   \
    const int64_t ba = vla_block_acts_floats(&(I)->ex_cfg, Na, 0, (int32_t)S);                                   \
    const int64_t bsp = vla_block_scratch_floats(&(I)->lm_cfg, Np, 0, (int32_t)S);                               \
    const int64_t bsa = vla_block_scratch_floats(&(I)->ex_cfg, Na, 0, (int32_t)S);                               \
    const int64_t vt = (nimg_) > 0 && vla_vit_trains(&(I)->W.vit);                                               \
    const int64_t vs = vt ? vla_vit_scratch_floats(&(I)->W.vit, (nimg_), false) : 0;                             \
    (void)S, (void)T, (void)Np, (void)Na, (void)act, (void)L, (void)W, (void)We, (void)H, (void)HD, (void)KD,   \
        (void)A, (void)Dv, (void)n_it, (void)mx, (void)Wm, (void)vit, (void)bp, (void)ba, (void)bsp, (void)bsa,  \
        (void)vt, (void)vs, (void)n_px, (void)Lk, (void)Lkv, (void)nxp

/* Start a new lifetime in both arenas (vla_arena_begin_call: one chunk
 * holding the last peak, so later steps reuse the same memory). */
static inline void pi05_arena_begin(pi05_impl *I) {
    vla_arena_begin_call(&I->arena);
    vla_arena_begin_call(&I->harena);
}


/* Layer li's saved activations: the two blocks' tables (their attention
 * buffers point at the shared temporaries) and the token-order Q K V O lse. */
typedef struct {
    vla_block_acts p, a;
    float *Q, *K, *V, *O, *lse;
} layer_view;

/* pi05.c: the network's passes sampling runs too */
/* out = in·w + b over n rows, counted in I->flops */
void vla_pi05_lin(pi05_impl *I, const vla_ops *ops, float *out, const float *in, vla_wg w, vla_wg b, int64_t n,
                  int64_t din, int64_t dout);
/* the time condition of S samples (t on the host, tdev receives it; t NULL: tdev holds them) */
void vla_pi05_time_forward(vla_policy *p, pi05_impl *I, const float *t, float *tdev, int32_t S, float *temb,
                           float *tm1, float *tm1s, float *tm2, float *cond);
/* layer li's saved activations in I->f */
void vla_pi05_view_layer(pi05_impl *I, const vla_policy_config *c, int64_t li, layer_view *v);
/* the forward of batch b into I->f; x_t NULL: the prefix only (sampling's cache) */
vla_status vla_pi05_forward(vla_policy *p, const vla_batch *b, const float *x_t, const float *t);

/* pi05_sample.c: the family table's sampling entries */
vla_status vla_pi05_sample_cached(vla_policy *p, const vla_observation *obs, float *actions);
vla_status vla_pi05_sample_with(vla_policy *p, const vla_observation *obs, vla_flow_integrator integ, void *user,
                                float *actions);

/* this family's table (its *_family.c) */
extern const vla_policy_family vla_pi05_family;

#endif
