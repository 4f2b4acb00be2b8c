/* groot_dit.c — GR00T N1.5's flow-matching action head
 * (flow_matching_action_head.py, cross_attention_dit.py, action_encoder.py):
 *
 *   VL side (once per sample): vlln LayerNorm → vl_self_attention blocks
 *     (nn/block.h: affine LayerNorms, biased bidirectional attention within
 *     the sample, GELU-tanh MLP).
 *   Action side (every flow step), for the bucket b = int(t·1000):
 *     temb  = linear_2(silu(linear_1(Timesteps_cos|sin,shift 1(b))))
 *     state = L2(relu(L1(state)))                         per embodiment
 *     act   = W3(silu(W2([W1(x_t) ‖ sin|cos(b)])))+ pos  per embodiment
 *     X     = [state, future×F, act×H]
 *     block i (nn/block.h): AdaLN from silu(temb), attention — even i: keys
 *              and values from the sample's VL tokens (cross), odd i: from X
 *              (self) — then LayerNorm (no affine) and a GELU-tanh MLP
 *     out   = proj_out_2(LN(X)·(1+scale)+shift), (shift, scale) = proj_out_1(silu(temb))
 *     pred  = decoder L2(relu(L1(out)))   on the last H tokens only
 *   Everything after the last block is per token, so it runs on the H action
 *   rows only (the reference slices pred[:, -H:] after decoding all rows;
 *   the result and gradients are the same).
 * At sampling time the cross-attention K/V of the VL tokens are computed once
 * (vla_groot_head_cross_kv) and reused at every Euler step, like the VL features.
 * Dropout (0.2 in the published config) is left out for now, a documented
 * gap (docs/groot.md): training runs the deterministic forward; adding it
 * needs a config key and masks keyed by sample, as flow.h keys its noise. */
#include "policy/groot_internal.h"

#include <stddef.h>
#include <string.h>

#include "nn/acts.h"
#include "nn/activations.h"
#include "nn/adaln.h"
#include "nn/embedding.h"
#include "nn/embodiment_linear.h"
#include "nn/layernorm.h"
#include "nn/linear.h"
#include "nn/time_embedding.h"

static const float LN_EPS = 1e-5f;     /* diffusers / nn.LayerNorm default */
static const float OUT_LN_EPS = 1e-6f; /* DiT norm_out */

/* ---- VL adapter --------------------------------------------------------------------------- */

#define VL_ACTS(X)                                                                                               \
    X(m0, P)                                                                                                     \
    X(r0, P)                                                                                                     \
    X(x, nx * P * L)                                                                                             \
    X(blocks, nl * la)
#define VL_GRADS(X) X(scratch, bs)

#define VL_DIMS(g, p, pk, keep)                                                                                  \
    const int64_t P = (pk)->P, L = (p)->cfg.language.width, nlay = (p)->cfg.head.vl_layers;                    \
    const int64_t nl = vla_block_stack_tables(keep, nlay), nx = vla_block_stack_xs(keep, nlay);                 \
    const int64_t la = vla_block_acts_floats(&(g)->vl_cfg, P, 0, (pk)->S);                                     \
    const int64_t bs = vla_block_scratch_floats(&(g)->vl_cfg, P, 0, (pk)->S);                                  \
    (void)P, (void)L, (void)nlay, (void)nl, (void)nx, (void)la, (void)bs

static vla_block_io vl_io(const groot_pack *pk) {
    vla_block_io io = {0};
    io.n = pk->P, io.n_seg = pk->S, io.cu = pk->cu_pre; /* bidirectional within the sample */
    return io;
}

vla_status vla_groot_vl_forward(vla_policy *p, vla_arena *a, const groot_pack *pk, const float *feats,
                                vla_block_keep keep, groot_vl_acts *va) {
    groot_impl *g = groot_of(p);
    VL_DIMS(g, p, pk, keep);
    const int64_t sizes[] = {VL_ACTS(VLA_ACTS_SIZE)};
    struct {
        VL_ACTS(VLA_ACTS_FIELD)
    } t;
    VLA_TRY(vla_acts_from_arena(a, sizes, VLA_ACTS_COUNT(sizes), (float **)&t));
    memset(va, 0, sizeof *va);
    va->in = feats, va->m0 = t.m0, va->r0 = t.r0, va->x = t.x, va->blocks = t.blocks, va->keep = keep;
    vla_layernorm_forward(p->tops, t.x, t.m0, t.r0, feats, g->W.vlln_w.w, g->W.vlln_b.w, P, L, LN_EPS);
    vla_block_io io = vl_io(pk);
    const float *out;
    VLA_TRY(vla_block_stack_forward(p->tops, &g->vl_cfg, g->W.vl, nlay, &io, t.x, t.blocks, keep, &out));
    va->out = (float *)out;
    return VLA_OK;
}

vla_status vla_groot_vl_backward(vla_policy *p, vla_arena *a, const groot_pack *pk, groot_vl_acts *va, float *dres,
                             float *d_feats) {
    groot_impl *g = groot_of(p);
    if (va->keep == VLA_STACK_NONE) return vla_error(VLA_ERR_INTERNAL, "groot: VL backward without saved activations");
    VL_DIMS(g, p, pk, va->keep);
    const int64_t sizes[] = {VL_GRADS(VLA_ACTS_SIZE)};
    struct {
        VL_GRADS(VLA_ACTS_FIELD)
    } t;
    VLA_TRY(vla_acts_from_arena(a, sizes, VLA_ACTS_COUNT(sizes), (float **)&t));
    vla_block_io io = vl_io(pk);
    groot_layers_ready r = {p, g->W.vl};
    VLA_TRY(vla_block_stack_backward(p->tops, &g->vl_cfg, g->W.vl, nlay, &io, va->x, va->blocks, va->keep, t.scratch, dres,
                                     vla_groot_layer_ready, &r));
    vla_layernorm_backward(p->tops, d_feats, g->W.vlln_w.g, g->W.vlln_b.g, dres, va->in, g->W.vlln_w.w, va->m0, va->r0, P, L);
    const vla_wg vlln[] = {g->W.vlln_w, g->W.vlln_b};
    vla_policy_ready_wgs(p, vlln, 2);
    return VLA_OK;
}

/* ---- action side: sizes ---------------------------------------------------------------------------
 * S samples, N = S·(1 + F + H) DiT rows of width D, A = S·H action rows, P VL
 * rows of width L, C timestep channels, Hs state hidden, O output width, ad
 * action dims, sd state dims, blk all DiT blocks' activations. */
#define HEAD_ACTS(X)                                                                                             \
    X(bucket, S)                                                                                                 \
    X(tproj, S * C)                                                                                              \
    X(te1, S * D)                                                                                                \
    X(te1a, S * D)                                                                                               \
    X(temb, S * D)                                                                                               \
    X(stemb, S * D)                                                                                              \
    X(st_h, S * Hs)                                                                                              \
    X(st_hr, S * Hs)                                                                                             \
    X(st, S * D)                                                                                                 \
    X(xt, A * ad)                                                                                                \
    X(a1, A * D)                                                                                                 \
    X(tau, S * D)                                                                                                \
    X(cat, A * 2 * D)                                                                                            \
    X(a2, A * D)                                                                                                 \
    X(a2s, A * D)                                                                                                \
    X(a3, A * D)                                                                                                 \
    X(x, (nlay + 1) * N * D)                                                                                     \
    X(blk, blk)                                                                                                  \
    X(xa, A * D)                                                                                                 \
    X(mo, S * 2 * D)                                                                                             \
    X(mod_out, S * 2 * D)                                                                                        \
    X(ya, A * D)                                                                                                 \
    X(ma, A)                                                                                                     \
    X(ra, A)                                                                                                     \
    X(za, A * O)                                                                                                 \
    X(d1, A * O)                                                                                                 \
    X(d1r, A * O)                                                                                                \
    X(pred, A * ad)

#define HEAD_GRADS(X)                                                                                            \
    X(dd1r, A * O)                                                                                               \
    X(dd1, A * O)                                                                                                \
    X(dza, A * O)                                                                                                \
    X(dya, A * D)                                                                                                \
    X(dxa, A * D)                                                                                                \
    X(dmodo, S * 2 * D)                                                                                          \
    X(dmo, S * 2 * D)                                                                                            \
    X(dstemb, S * D)                                                                                             \
    X(dX, N * D)                                                                                                 \
    X(scratch, bs)                                                                                               \
    X(dst, S * D)                                                                                                \
    X(da3, A * D)                                                                                                \
    X(da2s, A * D)                                                                                               \
    X(da2, A * D)                                                                                                \
    X(dcat, A * 2 * D)                                                                                           \
    X(da1, A * D)                                                                                                \
    X(dsthr, S * Hs)                                                                                             \
    X(dsth, S * Hs)                                                                                              \
    X(dtemb, S * D)                                                                                              \
    X(dte1a, S * D)                                                                                              \
    X(dte1, S * D)

#define HEAD_DIMS(g, p, pk)                                                                                      \
    const vla_groot_head_config *h_ = &(p)->cfg.head;                                                            \
    const int64_t S = (pk)->S, N = (pk)->N, A = (pk)->A, P = (pk)->P, L = (p)->cfg.language.width;              \
    const int64_t D = h_->dit_heads * h_->dit_head_dim, C = h_->timestep_channels, F = h_->future_tokens;        \
    const int64_t H = (p)->cfg.action.horizon, O = h_->output_dim, Hs = h_->state_hidden;                       \
    const int64_t sd = (p)->cfg.action.state_dim, ad = (p)->cfg.action.action_dim, nlay = h_->dit_layers;        \
    const int64_t lc = vla_block_acts_floats(&(g)->dit_cross, N, P, (int32_t)S);                                \
    const int64_t ls = vla_block_acts_floats(&(g)->dit_self, N, 0, (int32_t)S);                                 \
    const int64_t blk = (g)->dit_recompute ? lc + ls : (nlay + 1) / 2 * lc + nlay / 2 * ls;                      \
    const int64_t bsc = vla_block_scratch_floats(&(g)->dit_cross, N, P, (int32_t)S);                            \
    const int64_t bss = vla_block_scratch_floats(&(g)->dit_self, N, 0, (int32_t)S);                             \
    const int64_t bs = bsc > bss ? bsc : bss;                                                                    \
    (void)S, (void)N, (void)A, (void)P, (void)L, (void)D, (void)C, (void)F, (void)H, (void)O, (void)Hs, (void)sd, \
        (void)ad, (void)nlay, (void)blk, (void)bs

typedef struct {
    HEAD_GRADS(VLA_ACTS_FIELD)
} head_grads;

/* DiT block i: even blocks cross-attend to the VL tokens. */
static const vla_block_config *dit_cfg(const groot_impl *g, int64_t i) { return i % 2 == 0 ? &g->dit_cross : &g->dit_self; }

static vla_block_io dit_io(const groot_pack *pk, const groot_head_acts *ha, int64_t i, int64_t P, int64_t D) {
    vla_block_io io = {0};
    io.n = pk->N, io.n_seg = pk->S, io.cu = pk->cu_dit, io.cond = ha->stemb;
    if (i % 2 == 0) {
        io.n_ctx = pk->P, io.cu_ctx = pk->cu_pre, io.ctx = ha->vl;
        if (ha->ck) io.k_cached = ha->ck + i * P * D, io.v_cached = ha->cv + i * P * D;
    }
    return io;
}

/* Block i's activations inside ha->blk (cross and self blocks differ in
 * size); under recompute one table of each kind, [cross | self]. */
static void dit_acts(const groot_impl *g, const groot_pack *pk, const groot_head_acts *ha, int64_t i,
                     vla_block_acts *ba) {
    int64_t lc = vla_block_acts_floats(&g->dit_cross, pk->N, pk->P, pk->S);
    int64_t ls = vla_block_acts_floats(&g->dit_self, pk->N, 0, pk->S);
    int64_t off = g->dit_recompute ? (i % 2 == 0 ? 0 : lc) : (i + 1) / 2 * lc + i / 2 * ls;
    vla_block_acts_carve(dit_cfg(g, i), pk->N, i % 2 == 0 ? pk->P : 0, pk->S, ha->blk + off, ba);
}

static vla_status emb_fwd(vla_policy *p, const groot_pack *pk, const vla_wg *w, const vla_wg *b, int64_t in,
                          int64_t out, float *y, const float *x, const int32_t *cu, int64_t n) {
    vla_emb_linear_config c = {p->cfg.head.embodiments, in, out};
    return vla_embodiment_linear_forward(p->tops, &c, y, x, w->w, b->w, pk->emb, cu, pk->S, n);
}

static vla_status emb_bwd(vla_policy *p, const groot_pack *pk, const vla_wg *w, const vla_wg *b, int64_t in,
                          int64_t out, float *dx, const float *dy, const float *x, const int32_t *cu, int64_t n) {
    vla_emb_linear_config c = {p->cfg.head.embodiments, in, out};
    return vla_embodiment_linear_backward(p->tops, &c, dx, w->g, b->g, dy, x, w->w, pk->emb, cu, pk->S, n);
}

vla_status vla_groot_head_cross_kv(vla_policy *p, vla_arena *a, const groot_pack *pk, const float *vl, float **k,
                               float **v) {
    groot_impl *g = groot_of(p);
    const vla_groot_head_config *h = &p->cfg.head;
    int64_t P = pk->P, L = p->cfg.language.width, D = h->dit_heads * h->dit_head_dim;
    const int64_t sizes[] = {h->dit_layers * P * D, h->dit_layers * P * D};
    float *kv[2];
    VLA_TRY(vla_acts_from_arena(a, sizes, 2, kv));
    *k = kv[0], *v = kv[1];
    for (int64_t i = 0; i < h->dit_layers; i += 2) {
        const vla_block_weights *b = &g->W.dit[i];
        vla_linear_forward(p->tops, *k + i * P * D, vl, b->k_w.w, b->k_b.w, P, L, D);
        vla_linear_forward(p->tops, *v + i * P * D, vl, b->v_w.w, b->v_b.w, P, L, D);
    }
    return VLA_OK;
}

/* ---- action side: forward ------------------------------------------------------------------------- */

/* diffusers Timesteps(flip_sin_to_cos, shift 1) → linear_1 → silu → linear_2; stemb = silu(temb). */
static void timestep_forward(vla_policy *p, groot_impl *g, const groot_pack *pk, groot_head_acts *ha) {
    HEAD_DIMS(g, p, pk);
    vla_temb_config tc = {VLA_TEMB_LOG, C, 0.0, 10000.0, 1.0, true};
    vla_time_embedding_forward(p->tops, &tc, ha->tproj, ha->bucket, S);
    vla_linear_forward(p->tops, ha->te1, ha->tproj, g->W.te1_w.w, g->W.te1_b.w, S, C, D);
    vla_silu_forward(p->tops, ha->te1a, ha->te1, S * D);
    vla_linear_forward(p->tops, ha->temb, ha->te1a, g->W.te2_w.w, g->W.te2_b.w, S, D, D);
    vla_silu_forward(p->tops, ha->stemb, ha->temb, S * D);
}

/* State encoder, action encoder, and X = [state, future×F, act×H] per sample. */
static vla_status encoders_forward(vla_policy *p, groot_impl *g, const groot_pack *pk, groot_head_acts *ha) {
    HEAD_DIMS(g, p, pk);
    const groot_weights *w = &g->W;
    const vla_ops *ops = p->tops;
    VLA_TRY(emb_fwd(p, pk, &w->st1_w, &w->st1_b, sd, Hs, ha->st_h, pk->state, pk->cu_one, S));
    vla_relu_forward(ops, ha->st_hr, ha->st_h, S * Hs);
    VLA_TRY(emb_fwd(p, pk, &w->st2_w, &w->st2_b, Hs, D, ha->st, ha->st_hr, pk->cu_one, S));
    VLA_TRY(emb_fwd(p, pk, &w->a1_w, &w->a1_b, ad, D, ha->a1, ha->xt, pk->cu_act, A));
    vla_temb_config ec = {VLA_TEMB_LOG, D, 0.0, 10000.0, 0.0, false};
    vla_time_embedding_forward(ops, &ec, ha->tau, ha->bucket, S);
    /* cat = [W1(x_t) ‖ tau of the row's sample] */
    ops->copy2d(ha->cat, 2 * D, ha->a1, D, A, D);
    ops->copy_rows(ha->cat + D, 2 * D, NULL, ha->tau, D, pk->act_sample, A, D, 1.0f);
    VLA_TRY(emb_fwd(p, pk, &w->a2_w, &w->a2_b, 2 * D, D, ha->a2, ha->cat, pk->cu_act, A));
    vla_silu_forward(ops, ha->a2s, ha->a2, A * D);
    VLA_TRY(emb_fwd(p, pk, &w->a3_w, &w->a3_b, D, D, ha->a3, ha->a2s, pk->cu_act, A));
    ops->add_rows(ha->a3, D, NULL, w->pos.w, D, pk->act_pos, A, D, 1.0f); /* + the position embedding */
    /* X = [state, future×F, act×H] per sample */
    ops->copy_rows(ha->x, D, pk->state_rows, ha->st, D, NULL, S, D, 1.0f);
    if (F > 0) ops->copy_rows(ha->x, D, pk->fut_rows, w->fut.w, D, pk->fut_src, S * F, D, 1.0f);
    ops->copy_rows(ha->x, D, pk->act_rows, ha->a3, D, NULL, A, D, 1.0f);
    return VLA_OK;
}

/* The action rows of the last block → output AdaLN → proj_out_2 → decoder. */
static vla_status output_forward(vla_policy *p, groot_impl *g, const groot_pack *pk, groot_head_acts *ha) {
    HEAD_DIMS(g, p, pk);
    const groot_weights *w = &g->W;
    const vla_ops *ops = p->tops;
    const float *xl = ha->x + nlay * N * D;
    ops->copy_rows(ha->xa, D, NULL, xl, D, pk->act_rows, A, D, 1.0f);
    vla_linear_forward(ops, ha->mo, ha->stemb, w->po1_w.w, w->po1_b.w, S, D, 2 * D);
    /* proj_out_1 chunks (shift, scale); AdaLN wants (scale, shift) */
    ops->copy2d(ha->mod_out, 2 * D, ha->mo + D, 2 * D, S, D);
    ops->copy2d(ha->mod_out + D, 2 * D, ha->mo, 2 * D, S, D);
    VLA_TRY(vla_adaln_forward(ops, ha->ya, ha->ma, ha->ra, ha->xa, ha->mod_out, pk->cu_act, pk->S, A, D, OUT_LN_EPS, NULL));
    vla_linear_forward(p->tops, ha->za, ha->ya, w->po2_w.w, w->po2_b.w, A, D, O);
    VLA_TRY(emb_fwd(p, pk, &w->d1_w, &w->d1_b, O, O, ha->d1, ha->za, pk->cu_act, A));
    vla_relu_forward(ops, ha->d1r, ha->d1, A * O);
    return emb_fwd(p, pk, &w->d2_w, &w->d2_b, O, ad, ha->pred, ha->d1r, pk->cu_act, A);
}

vla_status vla_groot_head_forward(vla_policy *p, vla_arena *a, const groot_pack *pk, const float *vl,
                              const float *bucket, const float *x_t, const float *cross_k, const float *cross_v,
                              groot_head_acts *ha) {
    groot_impl *g = groot_of(p);
    g->dit_recompute = p->recompute_layers; /* before HEAD_DIMS: it sizes the block tables */
    HEAD_DIMS(g, p, pk);
    const int64_t sizes[] = {HEAD_ACTS(VLA_ACTS_SIZE)};
    struct {
        HEAD_ACTS(VLA_ACTS_FIELD)
    } t;
    VLA_TRY(vla_acts_from_arena(a, sizes, VLA_ACTS_COUNT(sizes), (float **)&t));
    memset(ha, 0, sizeof *ha);
    ha->vl = vl, ha->ck = cross_k, ha->cv = cross_v, ha->blk = t.blk;
    ha->bucket = t.bucket, ha->tproj = t.tproj, ha->te1 = t.te1, ha->te1a = t.te1a, ha->temb = t.temb;
    ha->stemb = t.stemb, ha->st_h = t.st_h, ha->st_hr = t.st_hr, ha->st = t.st, ha->xt = t.xt, ha->a1 = t.a1;
    ha->tau = t.tau, ha->cat = t.cat, ha->a2 = t.a2, ha->a2s = t.a2s, ha->a3 = t.a3, ha->x = t.x, ha->xa = t.xa;
    ha->mo = t.mo, ha->mod_out = t.mod_out, ha->ya = t.ya, ha->ma = t.ma, ha->ra = t.ra, ha->za = t.za;
    ha->d1 = t.d1, ha->d1r = t.d1r, ha->pred = t.pred;
    p->tops->copy(ha->bucket, bucket, S);
    p->tops->copy(ha->xt, x_t, A * ad);
    timestep_forward(p, g, pk, ha);
    VLA_TRY(encoders_forward(p, g, pk, ha));
    for (int64_t i = 0; i < nlay; i++) {
        vla_block_io io = dit_io(pk, ha, i, P, D);
        vla_block_acts ba;
        dit_acts(g, pk, ha, i, &ba);
        VLA_TRY(vla_block_forward(p->tops, dit_cfg(g, i), &g->W.dit[i], &io, ha->x + i * N * D,
                                  ha->x + (i + 1) * N * D, &ba));
    }
    return output_forward(p, g, pk, ha);
}

/* ---- action side: backward ----------------------------------------------------------------------- */

/* Decoder, proj_out_2, output AdaLN, proj_out_1: ∂ into dxa (the last block's action rows) and dstemb. */
static vla_status output_backward(vla_policy *p, groot_impl *g, const groot_pack *pk, const groot_head_acts *ha,
                                  const float *d_pred, head_grads *d) {
    HEAD_DIMS(g, p, pk);
    const groot_weights *w = &g->W;
    const vla_ops *ops = p->tops;
    VLA_TRY(emb_bwd(p, pk, &w->d2_w, &w->d2_b, O, ad, d->dd1r, d_pred, ha->d1r, pk->cu_act, A));
    vla_relu_backward(ops, d->dd1, d->dd1r, ha->d1, A * O);
    VLA_TRY(emb_bwd(p, pk, &w->d1_w, &w->d1_b, O, O, d->dza, d->dd1, ha->za, pk->cu_act, A));
    vla_linear_backward_fresh(ops, d->dya, w->po2_w.g, w->po2_b.g, d->dza, ha->ya, w->po2_w.w, A, D, O);
    ops->fill(d->dxa, 0.0f, A * D);
    ops->fill(d->dmodo, 0.0f, S * 2 * D);
    VLA_TRY(vla_adaln_backward(ops, d->dxa, d->dmodo, d->dya, ha->xa, ha->mod_out, ha->ma, ha->ra, pk->cu_act, pk->S,
                               A, D));
    ops->copy2d(d->dmo, 2 * D, d->dmodo + D, 2 * D, S, D); /* (scale, shift) back to proj_out_1's (shift, scale) */
    ops->copy2d(d->dmo + D, 2 * D, d->dmodo, 2 * D, S, D);
    vla_linear_backward_fresh(ops, d->dstemb, w->po1_w.g, w->po1_b.g, d->dmo, ha->stemb, w->po1_w.w, S, D, 2 * D);
    const vla_wg out[] = {w->d2_w, w->d2_b, w->d1_w, w->d1_b, w->po2_w, w->po2_b, w->po1_w, w->po1_b};
    vla_policy_ready_wgs(p, out, 8);
    return VLA_OK;
}

/* The DiT blocks, last to first; dX ends as ∂/∂X_0, d_vl accumulates the cross blocks' K/V part. */
static vla_status blocks_backward(vla_policy *p, groot_impl *g, const groot_pack *pk, const groot_head_acts *ha,
                                  head_grads *d, float *d_vl) {
    HEAD_DIMS(g, p, pk);
    p->tops->fill(d->dX, 0.0f, N * D);
    p->tops->copy_rows(d->dX, D, pk->act_rows, d->dxa, D, NULL, A, D, 1.0f);
    for (int64_t i = nlay - 1; i >= 0; i--) {
        const vla_block_config *bc = dit_cfg(g, i);
        vla_block_io io = dit_io(pk, ha, i, P, D);
        vla_block_acts ba;
        vla_block_scratch sc;
        dit_acts(g, pk, ha, i, &ba);
        vla_block_scratch_carve(bc, N, i % 2 == 0 ? P : 0, pk->S, d->scratch, &sc);
        /* recompute: the tables hold the last block of each kind (i ≥ nlay − 2);
         * an earlier block runs its forward again from its kept input, its
         * output to sc.dh, which its backward overwrites before reading */
        if (g->dit_recompute && i < nlay - 2)
            VLA_TRY(vla_block_forward(p->tops, bc, &g->W.dit[i], &io, ha->x + i * N * D, sc.dh, &ba));
        VLA_TRY(vla_block_backward(p->tops, bc, &g->W.dit[i], &io, ha->x + i * N * D, &ba, &sc, d->dX,
                                   i % 2 == 0 ? d_vl : NULL, d->dstemb));
        /* a block's weights serve that block only */
        vla_policy_ready_wgs(p, (const vla_wg *)&g->W.dit[i], VLA_BLOCK_N_WG);
    }
    return VLA_OK;
}

/* dX split into the state row, the future tokens and the action rows; the
 * action encoder (x_t and the timestep are inputs: no gradient past W1). */
static vla_status encoders_backward(vla_policy *p, groot_impl *g, const groot_pack *pk, const groot_head_acts *ha,
                                    head_grads *d) {
    HEAD_DIMS(g, p, pk);
    const groot_weights *w = &g->W;
    const vla_ops *ops = p->tops;
    ops->copy_rows(d->dst, D, NULL, d->dX, D, pk->state_rows, S, D, 1.0f);
    if (F > 0 && w->fut.g) ops->add_rows(w->fut.g, D, pk->fut_src, d->dX, D, pk->fut_rows, S * F, D, 1.0f);
    ops->copy_rows(d->da3, D, NULL, d->dX, D, pk->act_rows, A, D, 1.0f);
    if (w->pos.g) vla_embedding_backward(ops, w->pos.g, d->da3, pk->act_pos, A, D);
    const vla_wg emb[] = {w->fut, w->pos};
    vla_policy_ready_wgs(p, emb, 2);
    VLA_TRY(emb_bwd(p, pk, &w->a3_w, &w->a3_b, D, D, d->da2s, d->da3, ha->a2s, pk->cu_act, A));
    vla_silu_backward(ops, d->da2, d->da2s, ha->a2, A * D);
    VLA_TRY(emb_bwd(p, pk, &w->a2_w, &w->a2_b, 2 * D, D, d->dcat, d->da2, ha->cat, pk->cu_act, A));
    ops->copy2d(d->da1, D, d->dcat, 2 * D, A, D);
    VLA_TRY(emb_bwd(p, pk, &w->a1_w, &w->a1_b, ad, D, NULL, d->da1, ha->xt, pk->cu_act, A));
    const vla_wg enc[] = {w->a1_w, w->a1_b, w->a2_w, w->a2_b, w->a3_w, w->a3_b};
    vla_policy_ready_wgs(p, enc, 6);
    VLA_TRY(emb_bwd(p, pk, &w->st2_w, &w->st2_b, Hs, D, d->dsthr, d->dst, ha->st_hr, pk->cu_one, S));
    vla_relu_backward(ops, d->dsth, d->dsthr, ha->st_h, S * Hs);
    VLA_TRY(emb_bwd(p, pk, &w->st1_w, &w->st1_b, sd, Hs, NULL, d->dsth, pk->state, pk->cu_one, S));
    const vla_wg st[] = {w->st1_w, w->st1_b, w->st2_w, w->st2_b};
    vla_policy_ready_wgs(p, st, 4);
    return VLA_OK;
}

/* The timestep encoder, after every block's ∂ of stemb is in. */
static void timestep_backward(vla_policy *p, groot_impl *g, const groot_pack *pk, const groot_head_acts *ha,
                              head_grads *d) {
    HEAD_DIMS(g, p, pk);
    const groot_weights *w = &g->W;
    const vla_ops *ops = p->tops;
    vla_silu_backward(ops, d->dtemb, d->dstemb, ha->temb, S * D);
    vla_linear_backward_fresh(ops, d->dte1a, w->te2_w.g, w->te2_b.g, d->dtemb, ha->te1a, w->te2_w.w, S, D, D);
    vla_silu_backward(ops, d->dte1, d->dte1a, ha->te1, S * D);
    vla_linear_backward(ops, NULL, w->te1_w.g, w->te1_b.g, d->dte1, ha->tproj, w->te1_w.w, S, C, D);
    const vla_wg te[] = {w->te1_w, w->te1_b, w->te2_w, w->te2_b};
    vla_policy_ready_wgs(p, te, 4);
}

vla_status vla_groot_head_backward(vla_policy *p, vla_arena *a, const groot_pack *pk, groot_head_acts *ha,
                               const float *d_pred, float *d_vl) {
    groot_impl *g = groot_of(p);
    HEAD_DIMS(g, p, pk);
    const int64_t sizes[] = {HEAD_GRADS(VLA_ACTS_SIZE)};
    head_grads d;
    VLA_TRY(vla_acts_from_arena(a, sizes, VLA_ACTS_COUNT(sizes), (float **)&d));
    VLA_TRY(output_backward(p, g, pk, ha, d_pred, &d));
    VLA_TRY(blocks_backward(p, g, pk, ha, &d, d_vl));
    VLA_TRY(encoders_backward(p, g, pk, ha, &d));
    timestep_backward(p, g, pk, ha, &d);
    return VLA_OK;
}

/* ---- real-time chunking: the head's vector-Jacobian product (policy/rtc.h) ---------------------------
 * The training backward's output, block and action-encoder stages, run on
 * a view of the weights without gradients (nothing reaches p->grads) and
 * with the VL tokens held fixed; the timestep and state encoders, which x_t
 * does not reach, are skipped. The forward must have computed its cross
 * K/V itself (cross_k NULL): the blocks' backward reads them as activations. */
vla_status vla_groot_head_vjp(vla_policy *p, vla_arena *a, const groot_pack *pk, const groot_head_acts *ha,
                              const float *cot, float *dxt) {
    groot_impl *g = groot_of(p);
    HEAD_DIMS(g, p, pk);
    if (ha->ck) return vla_error(VLA_ERR_INTERNAL, "groot: a head VJP needs a forward without cached cross K/V");
    vla_arena_mark mark = vla_arena_get_mark(a), hmark = vla_arena_get_mark(&g->sharena);
    const int64_t sizes[] = {HEAD_GRADS(VLA_ACTS_SIZE)};
    head_grads d;
    vla_block_weights *dit = NULL; /* host structs (pointers to the weights): the host arena */
    vla_status st = vla_acts_from_arena(a, sizes, VLA_ACTS_COUNT(sizes), (float **)&d);
    if (st == VLA_OK && !(dit = vla_arena_alloc(&g->sharena, (size_t)nlay * sizeof *dit, 16)))
        st = vla_error(VLA_ERR_NOMEM, "groot: out of memory for the head VJP");
    if (st != VLA_OK) return st;
    groot_impl fz = *g; /* the frozen view: the same weights, every gradient NULL */
    _Static_assert(offsetof(groot_weights, fut) - offsetof(groot_weights, te1_w) == 23 * sizeof(vla_wg),
                   "the head's weights te1_w .. fut are 24 consecutive vla_wg");
    for (vla_wg *w = &fz.W.te1_w; w <= &fz.W.fut; w++) w->g = NULL;
    for (int64_t i = 0; i < nlay; i++) {
        dit[i] = g->W.dit[i];
        vla_wg *bw = (vla_wg *)&dit[i];
        for (int k = 0; k < VLA_BLOCK_N_WG; k++) bw[k].g = NULL;
    }
    fz.W.dit = dit;
    vla_grad_ready_fn ready = p->grad_ready; /* a VJP is not a backward: no gradient-ready reports */
    p->grad_ready = NULL;
    st = output_backward(p, &fz, pk, ha, cot, &d);
    if (st == VLA_OK) st = blocks_backward(p, &fz, pk, ha, &d, NULL);
    if (st == VLA_OK) { /* the action rows' ∂ back through the action encoder to x_t */
        const groot_weights *w = &fz.W;
        const vla_ops *ops = p->tops;
        ops->copy_rows(d.da3, D, NULL, d.dX, D, pk->act_rows, A, D, 1.0f);
        st = emb_bwd(p, pk, &w->a3_w, &w->a3_b, D, D, d.da2s, d.da3, ha->a2s, pk->cu_act, A);
        vla_silu_backward(ops, d.da2, d.da2s, ha->a2, A * D);
        if (st == VLA_OK) st = emb_bwd(p, pk, &w->a2_w, &w->a2_b, 2 * D, D, d.dcat, d.da2, ha->cat, pk->cu_act, A);
        ops->copy2d(d.da1, D, d.dcat, 2 * D, A, D);
        if (st == VLA_OK) st = emb_bwd(p, pk, &w->a1_w, &w->a1_b, ad, D, dxt, d.da1, ha->xt, pk->cu_act, A);
    }
    p->grad_ready = ready;
    vla_arena_rewind(a, mark);
    vla_arena_rewind(&g->sharena, hmark);
    return st;
}
