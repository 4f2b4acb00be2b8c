/* groot_dit.c — GR00T N1.5's flow-matching action head
 * (flow_matching_action_head.py, cross_attention_dit.py, action_encoder.py):
 *
 *   VL side (once per sample): vlln LayerNorm → vl_self_attention, blocks of
 *     x += to_out(MHA(LN1(x)));  x += ff(LN3(x))   (affine LNs, GELU-tanh FF,
 *     bidirectional within the sample).
 *   Action side (every flow step), for the bucket b = int(t·1000):
 *     temb  = linear_2(silu(linear_1(Timesteps_cos|sin,shift 1(b))))
 *     state = L2(relu(L1(state)))                         per embodiment
 *     act   = W3(silu(W2([W1(x_t) ‖ sin|cos(b)])))+ pos  per embodiment
 *     X     = [state, future×F, act×H]
 *     block i: X += to_out(attn(AdaLN(X; silu(temb))))  — even i: keys/values
 *              from the sample's VL tokens (cross), odd i: from X (self);
 *              X += ff(LN(X))  (no affine, GELU-tanh)
 *     out   = proj_out_2(LN(X)·(1+scale)+shift), (shift, scale) = proj_out_1(silu(temb))
 *     pred  = decoder L2(relu(L1(out)))   on the last H tokens only
 *   Everything after the last block is per token, so it runs on the H action
 *   rows only (the reference slices pred[:, -H:] after decoding all rows;
 *   the result and gradients are the same).
 * At sampling time the cross-attention K/V of the VL tokens are computed once
 * (groot_head_cross_kv) and reused at every Euler step, like the VL features.
 * Dropout (0.2 in the published config) is left out for now, a documented
 * gap (docs/groot.md): training runs the deterministic forward; adding it
 * needs a config key and masks keyed by sample, as flow.h keys its noise. */
#include "policy/groot_internal.h"

#include <string.h>

#include "nn/activations.h"
#include "nn/adaln.h"
#include "nn/embedding.h"
#include "nn/embodiment_linear.h"
#include "nn/layernorm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/time_embedding.h"

static const float LN_EPS = 1e-5f;     /* diffusers / nn.LayerNorm default */
static const float OUT_LN_EPS = 1e-6f; /* DiT norm_out */

static vla_mlp_config ff_cfg(int64_t dim, int64_t mult) {
    vla_mlp_config m = {false, VLA_ACT_GELU_TANH, dim, mult * dim, 0};
    return m;
}

static vla_mlp_weights ff_w(const groot_block *b) {
    vla_mlp_weights w = {b->f1_w.w, b->f1_b.w, NULL, NULL, b->f2_w.w, b->f2_b.w};
    return w;
}

static vla_mlp_grads ff_g(const groot_block *b) {
    vla_mlp_grads g = {b->f1_w.g, b->f1_b.g, NULL, NULL, b->f2_w.g, b->f2_b.g};
    return g;
}

/* ---- VL adapter ------------------------------------------------------------ */

vla_status groot_vl_forward(vla_policy *p, vla_arena *a, const groot_pack *pk, const float *feats, bool save,
                            groot_vl_acts *va) {
    groot_impl *g = groot_of(p);
    const vla_ops *ops = p->tops;
    const vla_groot_head_config *h = &p->cfg.head;
    int64_t P = pk->P, L = p->cfg.language.width, nlay = h->vl_layers, nl = save ? nlay : 1;
    memset(va, 0, sizeof *va);
    vla_mlp_config mc = ff_cfg(L, h->ff_mult);
    int64_t mlp_n = vla_mlp_acts_floats(&mc, P);
    va->in = (float *)feats;
    GROOT_ALLOC(a, va->m0, P);
    GROOT_ALLOC(a, va->r0, P);
    GROOT_ALLOC(a, va->x, (save ? nlay + 1 : 2) * P * L);
    GROOT_ALLOC(a, va->h1, nl * P * L);
    GROOT_ALLOC(a, va->m1, nl * P);
    GROOT_ALLOC(a, va->r1, nl * P);
    GROOT_ALLOC(a, va->q, nl * P * L);
    GROOT_ALLOC(a, va->k, nl * P * L);
    GROOT_ALLOC(a, va->v, nl * P * L);
    GROOT_ALLOC(a, va->att, nl * P * L);
    GROOT_ALLOC(a, va->lse, nl * P * h->vl_heads);
    GROOT_ALLOC(a, va->xm, nl * P * L);
    GROOT_ALLOC(a, va->h3, nl * P * L);
    GROOT_ALLOC(a, va->m3, nl * P);
    GROOT_ALLOC(a, va->r3, nl * P);
    GROOT_ALLOC(a, va->mlp, nl * mlp_n);
    vla_layernorm_forward(va->x, va->m0, va->r0, feats, g->vlln_w.w, g->vlln_b.w, P, L, LN_EPS);
    vla_attn_config ac = {(int32_t)h->vl_heads, (int32_t)h->vl_heads, (int32_t)h->vl_head_dim, 0.0f, 0, 0,
                          VLA_ATTN_BWD_AUTO};
    vla_attn_seqs seqs = {pk->S, pk->cu_pre, NULL};
    for (int64_t i = 0; i < nlay; i++) {
        const groot_block *b = &g->vl[i];
        int64_t s = save ? i : 0;
        float *x = va->x + (save ? i : (i & 1)) * P * L, *xo = va->x + (save ? i + 1 : ((i + 1) & 1)) * P * L;
        float *h1 = va->h1 + s * P * L, *q = va->q + s * P * L, *k = va->k + s * P * L, *v = va->v + s * P * L;
        float *att = va->att + s * P * L, *xm = va->xm + s * P * L, *h3 = va->h3 + s * P * L;
        vla_layernorm_forward(h1, va->m1 + s * P, va->r1 + s * P, x, b->n1_w.w, b->n1_b.w, P, L, LN_EPS);
        vla_linear_forward(ops, q, h1, b->q_w.w, b->q_b.w, P, L, L);
        vla_linear_forward(ops, k, h1, b->k_w.w, b->k_b.w, P, L, L);
        vla_linear_forward(ops, v, h1, b->v_w.w, b->v_b.w, P, L, L);
        VLA_TRY(vla_attention_forward(ops, &ac, att, va->lse + s * P * h->vl_heads, q, k, v, &seqs, &seqs, NULL));
        vla_linear_forward(ops, xm, att, b->o_w.w, b->o_b.w, P, L, L);
        ops->add(xm, xm, x, P * L);
        vla_layernorm_forward(h3, va->m3 + s * P, va->r3 + s * P, xm, b->n3_w.w, b->n3_b.w, P, L, LN_EPS);
        vla_mlp_weights mw = ff_w(b);
        vla_mlp_forward(ops, &mc, xo, va->mlp + s * mlp_n, h3, &mw, P);
        ops->add(xo, xo, xm, P * L);
    }
    va->out = va->x + (save ? nlay : (nlay & 1)) * P * L;
    return VLA_OK;
}

vla_status groot_vl_backward(vla_policy *p, vla_arena *a, const groot_pack *pk, groot_vl_acts *va, float *dres,
                             float *d_feats) {
    groot_impl *g = groot_of(p);
    const vla_ops *ops = p->tops;
    const vla_groot_head_config *h = &p->cfg.head;
    int64_t P = pk->P, L = p->cfg.language.width, nlay = h->vl_layers;
    vla_mlp_config mc = ff_cfg(L, h->ff_mult);
    int64_t mlp_n = vla_mlp_acts_floats(&mc, P);
    float *dh, *datt, *dq, *dk, *dv, *scratch;
    GROOT_ALLOC(a, dh, P * L);
    GROOT_ALLOC(a, datt, P * L);
    GROOT_ALLOC(a, dq, P * L);
    GROOT_ALLOC(a, dk, P * L);
    GROOT_ALLOC(a, dv, P * L);
    GROOT_ALLOC(a, scratch, vla_mlp_scratch_floats(&mc, P));
    vla_attn_config ac = {(int32_t)h->vl_heads, (int32_t)h->vl_heads, (int32_t)h->vl_head_dim, 0.0f, 0, 0,
                          VLA_ATTN_BWD_AUTO};
    vla_attn_seqs seqs = {pk->S, pk->cu_pre, NULL};
    for (int64_t i = nlay - 1; i >= 0; i--) {
        const groot_block *b = &g->vl[i];
        float *x = va->x + i * P * L, *h1 = va->h1 + i * P * L, *q = va->q + i * P * L, *k = va->k + i * P * L;
        float *v = va->v + i * P * L, *att = va->att + i * P * L, *xm = va->xm + i * P * L, *h3 = va->h3 + i * P * L;
        ops->fill(dh, 0.0f, P * L);
        vla_mlp_weights mw = ff_w(b);
        vla_mlp_grads mg = ff_g(b);
        vla_mlp_backward(ops, &mc, dh, &mg, scratch, dres, h3, va->mlp + i * mlp_n, &mw, P);
        vla_layernorm_backward(dres, b->n3_w.g, b->n3_b.g, dh, xm, b->n3_w.w, va->m3 + i * P, va->r3 + i * P, P, L);
        ops->fill(datt, 0.0f, P * L);
        vla_linear_backward(ops, datt, b->o_w.g, b->o_b.g, dres, att, b->o_w.w, P, L, L);
        ops->fill(dq, 0.0f, P * L);
        ops->fill(dk, 0.0f, P * L);
        ops->fill(dv, 0.0f, P * L);
        VLA_TRY(vla_attention_backward(ops, &ac, dq, dk, dv, datt, q, k, v, att, va->lse + i * P * h->vl_heads,
                                       &seqs, &seqs, NULL));
        ops->fill(dh, 0.0f, P * L);
        vla_linear_backward(ops, dh, b->q_w.g, b->q_b.g, dq, h1, b->q_w.w, P, L, L);
        vla_linear_backward(ops, dh, b->k_w.g, b->k_b.g, dk, h1, b->k_w.w, P, L, L);
        vla_linear_backward(ops, dh, b->v_w.g, b->v_b.g, dv, h1, b->v_w.w, P, L, L);
        vla_layernorm_backward(dres, b->n1_w.g, b->n1_b.g, dh, x, b->n1_w.w, va->m1 + i * P, va->r1 + i * P, P, L);
        GROOT_READY_STRUCT(p, b);
    }
    vla_layernorm_backward(d_feats, g->vlln_w.g, g->vlln_b.g, dres, va->in, g->vlln_w.w, va->m0, va->r0, P, L);
    const groot_t vlln[] = {g->vlln_w, g->vlln_b};
    groot_ready(p, vlln, 2);
    return VLA_OK;
}

/* ---- action side ----------------------------------------------------------- */

static vla_status emb_fwd(vla_policy *p, const groot_pack *pk, const groot_t *w, const groot_t *b, int64_t in,
                          int64_t out, float *y, const float *x, const int32_t *cu, int64_t n) {
    vla_emb_linear_config c = {p->cfg.head.embodiments, in, out};
    return vla_embodiment_linear_forward(p->tops, &c, y, x, w->w, b->w, pk->emb, cu, pk->S, n);
}

static vla_status emb_bwd(vla_policy *p, const groot_pack *pk, const groot_t *w, const groot_t *b, int64_t in,
                          int64_t out, float *dx, const float *dy, const float *x, const int32_t *cu, int64_t n) {
    vla_emb_linear_config c = {p->cfg.head.embodiments, in, out};
    return vla_embodiment_linear_backward(p->tops, &c, dx, w->g, b->g, dy, x, w->w, pk->emb, cu, pk->S, n);
}

vla_status groot_head_cross_kv(vla_policy *p, vla_arena *a, const groot_pack *pk, const float *vl, float **k,
                               float **v) {
    groot_impl *g = groot_of(p);
    const vla_groot_head_config *h = &p->cfg.head;
    int64_t P = pk->P, L = p->cfg.language.width, D = h->dit_heads * h->dit_head_dim;
    GROOT_ALLOC(a, *k, h->dit_layers * P * D);
    GROOT_ALLOC(a, *v, h->dit_layers * P * D);
    for (int64_t i = 0; i < h->dit_layers; i += 2) {
        const groot_block *b = &g->dit[i];
        vla_linear_forward(p->tops, *k + i * P * D, vl, b->k_w.w, b->k_b.w, P, L, D);
        vla_linear_forward(p->tops, *v + i * P * D, vl, b->v_w.w, b->v_b.w, P, L, D);
    }
    return VLA_OK;
}

vla_status groot_head_forward(vla_policy *p, vla_arena *a, const groot_pack *pk, const float *vl,
                              const float *bucket, const float *x_t, const float *cross_k, const float *cross_v,
                              groot_head_acts *ha) {
    groot_impl *g = groot_of(p);
    const vla_ops *ops = p->tops;
    const vla_groot_head_config *h = &p->cfg.head;
    int64_t S = pk->S, N = pk->N, A = pk->A, P = pk->P, L = p->cfg.language.width;
    int64_t D = h->dit_heads * h->dit_head_dim, C = h->timestep_channels, F = h->future_tokens;
    int64_t H = p->cfg.action.horizon, O = h->output_dim, Hs = h->state_hidden, sd = p->cfg.action.state_dim;
    int64_t ad = p->cfg.action.action_dim, nlay = h->dit_layers;
    memset(ha, 0, sizeof *ha);
    ha->vl = vl;
    ha->ck = cross_k, ha->cv = cross_v;
    vla_mlp_config mc = ff_cfg(D, h->ff_mult);
    int64_t mlp_n = vla_mlp_acts_floats(&mc, N);
    ha->kv_stride = (cross_k || P < N ? N : P) * D;

    /* timestep encoder: diffusers Timesteps(flip_sin_to_cos, shift 1) → linear_1 → silu → linear_2 */
    GROOT_ALLOC(a, ha->bucket, S);
    memcpy(ha->bucket, bucket, (size_t)S * sizeof(float));
    GROOT_ALLOC(a, ha->tproj, S * C);
    GROOT_ALLOC(a, ha->te1, S * D);
    GROOT_ALLOC(a, ha->te1a, S * D);
    GROOT_ALLOC(a, ha->temb, S * D);
    GROOT_ALLOC(a, ha->stemb, S * D);
    vla_temb_config tc = {VLA_TEMB_LOG, C, 0.0, 10000.0, 1.0, true};
    vla_time_embedding_forward(&tc, ha->tproj, ha->bucket, S);
    vla_linear_forward(ops, ha->te1, ha->tproj, g->te1_w.w, g->te1_b.w, S, C, D);
    vla_silu_forward(ha->te1a, ha->te1, S * D);
    vla_linear_forward(ops, ha->temb, ha->te1a, g->te2_w.w, g->te2_b.w, S, D, D);
    vla_silu_forward(ha->stemb, ha->temb, S * D);

    /* state encoder */
    GROOT_ALLOC(a, ha->st_h, S * Hs);
    GROOT_ALLOC(a, ha->st_hr, S * Hs);
    GROOT_ALLOC(a, ha->st, S * D);
    VLA_TRY(emb_fwd(p, pk, &g->st1_w, &g->st1_b, sd, Hs, ha->st_h, pk->state, pk->cu_one, S));
    vla_relu_forward(ha->st_hr, ha->st_h, S * Hs);
    VLA_TRY(emb_fwd(p, pk, &g->st2_w, &g->st2_b, Hs, D, ha->st, ha->st_hr, pk->cu_one, S));

    /* action encoder */
    GROOT_ALLOC(a, ha->xt, A * ad);
    memcpy(ha->xt, x_t, (size_t)(A * ad) * sizeof(float));
    GROOT_ALLOC(a, ha->a1, A * D);
    GROOT_ALLOC(a, ha->cat, A * 2 * D);
    GROOT_ALLOC(a, ha->a2, A * D);
    GROOT_ALLOC(a, ha->a2s, A * D);
    GROOT_ALLOC(a, ha->a3, A * D);
    VLA_TRY(emb_fwd(p, pk, &g->a1_w, &g->a1_b, ad, D, ha->a1, ha->xt, pk->cu_act, A));
    float *tau;
    GROOT_ALLOC(a, tau, S * D);
    vla_temb_config ec = {VLA_TEMB_LOG, D, 0.0, 10000.0, 0.0, false};
    vla_time_embedding_forward(&ec, tau, ha->bucket, S);
    for (int64_t s = 0; s < S; s++)
        for (int64_t j = 0; j < H; j++) {
            int64_t r = s * H + j;
            memcpy(ha->cat + r * 2 * D, ha->a1 + r * D, (size_t)D * sizeof(float));
            memcpy(ha->cat + r * 2 * D + D, tau + s * D, (size_t)D * sizeof(float));
        }
    VLA_TRY(emb_fwd(p, pk, &g->a2_w, &g->a2_b, 2 * D, D, ha->a2, ha->cat, pk->cu_act, A));
    vla_silu_forward(ha->a2s, ha->a2, A * D);
    VLA_TRY(emb_fwd(p, pk, &g->a3_w, &g->a3_b, D, D, ha->a3, ha->a2s, pk->cu_act, A));
    for (int64_t r = 0; r < A; r++) ops->add(ha->a3 + r * D, ha->a3 + r * D, g->pos.w + (int64_t)pk->act_pos[r] * D, D);

    /* DiT */
    GROOT_ALLOC(a, ha->x, (nlay + 1) * N * D);
    GROOT_ALLOC(a, ha->mod, nlay * S * 2 * D);
    GROOT_ALLOC(a, ha->h1, nlay * N * D);
    GROOT_ALLOC(a, ha->m1, nlay * N);
    GROOT_ALLOC(a, ha->r1, nlay * N);
    GROOT_ALLOC(a, ha->q, nlay * N * D);
    GROOT_ALLOC(a, ha->kv_k, nlay * ha->kv_stride);
    GROOT_ALLOC(a, ha->kv_v, nlay * ha->kv_stride);
    GROOT_ALLOC(a, ha->att, nlay * N * D);
    GROOT_ALLOC(a, ha->lse, nlay * N * h->dit_heads);
    GROOT_ALLOC(a, ha->xm, nlay * N * D);
    GROOT_ALLOC(a, ha->h3, nlay * N * D);
    GROOT_ALLOC(a, ha->m3, nlay * N);
    GROOT_ALLOC(a, ha->r3, nlay * N);
    GROOT_ALLOC(a, ha->mlp, nlay * mlp_n);
    for (int64_t s = 0; s < S; s++) {
        float *x0 = ha->x + (int64_t)pk->cu_dit[s] * D;
        memcpy(x0, ha->st + s * D, (size_t)D * sizeof(float));
        if (F > 0) memcpy(x0 + D, g->fut.w, (size_t)(F * D) * sizeof(float));
        memcpy(x0 + (1 + F) * D, ha->a3 + s * H * D, (size_t)(H * D) * sizeof(float));
    }
    vla_attn_config ac = {(int32_t)h->dit_heads, (int32_t)h->dit_heads, (int32_t)h->dit_head_dim, 0.0f, 0, 0,
                          VLA_ATTN_BWD_AUTO};
    vla_attn_seqs qs = {pk->S, pk->cu_dit, NULL}, vs = {pk->S, pk->cu_pre, NULL};
    for (int64_t i = 0; i < nlay; i++) {
        const groot_block *b = &g->dit[i];
        bool cross = i % 2 == 0;
        float *x = ha->x + i * N * D, *xo = x + N * D, *mod = ha->mod + i * S * 2 * D, *h1 = ha->h1 + i * N * D;
        float *q = ha->q + i * N * D, *k = ha->kv_k + i * ha->kv_stride, *v = ha->kv_v + i * ha->kv_stride;
        float *att = ha->att + i * N * D, *xm = ha->xm + i * N * D, *h3 = ha->h3 + i * N * D;
        if (cross && cross_k) k = (float *)cross_k + i * P * D, v = (float *)cross_v + i * P * D;
        vla_linear_forward(ops, mod, ha->stemb, b->n1_w.w, b->n1_b.w, S, D, 2 * D);
        VLA_TRY(vla_adaln_forward(h1, ha->m1 + i * N, ha->r1 + i * N, x, mod, pk->cu_dit, pk->S, N, D, LN_EPS));
        vla_linear_forward(ops, q, h1, b->q_w.w, b->q_b.w, N, D, D);
        if (cross && !cross_k) { /* (with cross_k the VL K/V are cached across Euler steps) */
            vla_linear_forward(ops, k, vl, b->k_w.w, b->k_b.w, P, L, D);
            vla_linear_forward(ops, v, vl, b->v_w.w, b->v_b.w, P, L, D);
        } else if (!cross) {
            vla_linear_forward(ops, k, h1, b->k_w.w, b->k_b.w, N, D, D);
            vla_linear_forward(ops, v, h1, b->v_w.w, b->v_b.w, N, D, D);
        }
        VLA_TRY(vla_attention_forward(ops, &ac, att, ha->lse + i * N * h->dit_heads, q, k, v, &qs, cross ? &vs : &qs,
                                      NULL));
        vla_linear_forward(ops, xm, att, b->o_w.w, b->o_b.w, N, D, D);
        ops->add(xm, xm, x, N * D);
        vla_layernorm_forward(h3, ha->m3 + i * N, ha->r3 + i * N, xm, NULL, NULL, N, D, LN_EPS);
        vla_mlp_weights mw = ff_w(b);
        vla_mlp_forward(ops, &mc, xo, ha->mlp + i * mlp_n, h3, &mw, N);
        ops->add(xo, xo, xm, N * D);
    }

    /* output side on the action rows */
    const float *xl = ha->x + nlay * N * D;
    GROOT_ALLOC(a, ha->xa, A * D);
    for (int64_t s = 0; s < S; s++)
        memcpy(ha->xa + s * H * D, xl + ((int64_t)pk->cu_dit[s] + 1 + F) * D, (size_t)(H * D) * sizeof(float));
    GROOT_ALLOC(a, ha->mo, S * 2 * D);
    GROOT_ALLOC(a, ha->mod_out, S * 2 * D);
    vla_linear_forward(ops, ha->mo, ha->stemb, g->po1_w.w, g->po1_b.w, S, D, 2 * D);
    for (int64_t s = 0; s < S; s++) { /* proj_out_1 chunks (shift, scale); AdaLN wants (scale, shift) */
        memcpy(ha->mod_out + s * 2 * D, ha->mo + s * 2 * D + D, (size_t)D * sizeof(float));
        memcpy(ha->mod_out + s * 2 * D + D, ha->mo + s * 2 * D, (size_t)D * sizeof(float));
    }
    GROOT_ALLOC(a, ha->ya, A * D);
    GROOT_ALLOC(a, ha->ma, A);
    GROOT_ALLOC(a, ha->ra, A);
    GROOT_ALLOC(a, ha->za, A * O);
    GROOT_ALLOC(a, ha->d1, A * O);
    GROOT_ALLOC(a, ha->d1r, A * O);
    GROOT_ALLOC(a, ha->pred, A * ad);
    VLA_TRY(vla_adaln_forward(ha->ya, ha->ma, ha->ra, ha->xa, ha->mod_out, pk->cu_act, pk->S, A, D, OUT_LN_EPS));
    vla_linear_forward(ops, ha->za, ha->ya, g->po2_w.w, g->po2_b.w, A, D, O);
    VLA_TRY(emb_fwd(p, pk, &g->d1_w, &g->d1_b, O, O, ha->d1, ha->za, pk->cu_act, A));
    vla_relu_forward(ha->d1r, ha->d1, A * O);
    VLA_TRY(emb_fwd(p, pk, &g->d2_w, &g->d2_b, O, ad, ha->pred, ha->d1r, pk->cu_act, A));
    return VLA_OK;
}

#define ZALLOC(a, ptr, count)                                                                                  \
    do {                                                                                                       \
        GROOT_ALLOC(a, ptr, count);                                                                            \
        ops->fill((ptr), 0.0f, (count));                                                                       \
    } while (0)

vla_status groot_head_backward(vla_policy *p, vla_arena *a, const groot_pack *pk, groot_head_acts *ha,
                               const float *d_pred, float *d_vl) {
    groot_impl *g = groot_of(p);
    const vla_ops *ops = p->tops;
    const vla_groot_head_config *h = &p->cfg.head;
    int64_t S = pk->S, N = pk->N, A = pk->A, P = pk->P, L = p->cfg.language.width;
    int64_t D = h->dit_heads * h->dit_head_dim, C = h->timestep_channels, F = h->future_tokens;
    int64_t H = p->cfg.action.horizon, O = h->output_dim, Hs = h->state_hidden, sd = p->cfg.action.state_dim;
    int64_t ad = p->cfg.action.action_dim, nlay = h->dit_layers;
    vla_mlp_config mc = ff_cfg(D, h->ff_mult);
    int64_t mlp_n = vla_mlp_acts_floats(&mc, N);

    /* decoder, proj_out_2, output AdaLN, proj_out_1 */
    float *dd1r, *dd1, *dza, *dya, *dxa, *dmodo, *dmo, *dstemb;
    ZALLOC(a, dd1r, A * O);
    VLA_TRY(emb_bwd(p, pk, &g->d2_w, &g->d2_b, O, ad, dd1r, d_pred, ha->d1r, pk->cu_act, A));
    ZALLOC(a, dd1, A * O);
    vla_relu_backward(dd1, dd1r, ha->d1, A * O);
    ZALLOC(a, dza, A * O);
    VLA_TRY(emb_bwd(p, pk, &g->d1_w, &g->d1_b, O, O, dza, dd1, ha->za, pk->cu_act, A));
    ZALLOC(a, dya, A * D);
    vla_linear_backward(ops, dya, g->po2_w.g, g->po2_b.g, dza, ha->ya, g->po2_w.w, A, D, O);
    ZALLOC(a, dxa, A * D);
    ZALLOC(a, dmodo, S * 2 * D);
    VLA_TRY(vla_adaln_backward(dxa, dmodo, dya, ha->xa, ha->mod_out, ha->ma, ha->ra, pk->cu_act, pk->S, A, D));
    GROOT_ALLOC(a, dmo, S * 2 * D);
    for (int64_t s = 0; s < S; s++) {
        memcpy(dmo + s * 2 * D, dmodo + s * 2 * D + D, (size_t)D * sizeof(float));
        memcpy(dmo + s * 2 * D + D, dmodo + s * 2 * D, (size_t)D * sizeof(float));
    }
    ZALLOC(a, dstemb, S * D);
    vla_linear_backward(ops, dstemb, g->po1_w.g, g->po1_b.g, dmo, ha->stemb, g->po1_w.w, S, D, 2 * D);
    {
        const groot_t out[] = {g->d2_w, g->d2_b, g->d1_w, g->d1_b, g->po2_w, g->po2_b, g->po1_w, g->po1_b};
        groot_ready(p, out, 8);
    }

    /* DiT blocks */
    float *dX, *dh, *datt, *dq, *dk, *dv, *dmod, *scratch;
    ZALLOC(a, dX, N * D);
    for (int64_t s = 0; s < S; s++)
        memcpy(dX + ((int64_t)pk->cu_dit[s] + 1 + F) * D, dxa + s * H * D, (size_t)(H * D) * sizeof(float));
    int64_t kvr = P > N ? P : N;
    GROOT_ALLOC(a, dh, N * D);
    GROOT_ALLOC(a, datt, N * D);
    GROOT_ALLOC(a, dq, N * D);
    GROOT_ALLOC(a, dk, kvr * D);
    GROOT_ALLOC(a, dv, kvr * D);
    GROOT_ALLOC(a, dmod, S * 2 * D);
    GROOT_ALLOC(a, scratch, vla_mlp_scratch_floats(&mc, N));
    vla_attn_config ac = {(int32_t)h->dit_heads, (int32_t)h->dit_heads, (int32_t)h->dit_head_dim, 0.0f, 0, 0,
                          VLA_ATTN_BWD_AUTO};
    vla_attn_seqs qs = {pk->S, pk->cu_dit, NULL}, vs = {pk->S, pk->cu_pre, NULL};
    for (int64_t i = nlay - 1; i >= 0; i--) {
        const groot_block *b = &g->dit[i];
        bool cross = i % 2 == 0;
        float *x = ha->x + i * N * D, *mod = ha->mod + i * S * 2 * D, *h1 = ha->h1 + i * N * D;
        float *q = ha->q + i * N * D, *k = ha->kv_k + i * ha->kv_stride, *v = ha->kv_v + i * ha->kv_stride;
        float *att = ha->att + i * N * D, *xm = ha->xm + i * N * D, *h3 = ha->h3 + i * N * D;
        if (cross && ha->ck) k = (float *)ha->ck + i * P * D, v = (float *)ha->cv + i * P * D;
        int64_t nk = cross ? P : N;
        ops->fill(dh, 0.0f, N * D);
        vla_mlp_weights mw = ff_w(b);
        vla_mlp_grads mg = ff_g(b);
        vla_mlp_backward(ops, &mc, dh, &mg, scratch, dX, h3, ha->mlp + i * mlp_n, &mw, N);
        vla_layernorm_backward(dX, NULL, NULL, dh, xm, NULL, ha->m3 + i * N, ha->r3 + i * N, N, D);
        ops->fill(datt, 0.0f, N * D);
        vla_linear_backward(ops, datt, b->o_w.g, b->o_b.g, dX, att, b->o_w.w, N, D, D);
        ops->fill(dq, 0.0f, N * D);
        ops->fill(dk, 0.0f, nk * D);
        ops->fill(dv, 0.0f, nk * D);
        VLA_TRY(vla_attention_backward(ops, &ac, dq, dk, dv, datt, q, k, v, att, ha->lse + i * N * h->dit_heads, &qs,
                                       cross ? &vs : &qs, NULL));
        ops->fill(dh, 0.0f, N * D);
        vla_linear_backward(ops, dh, b->q_w.g, b->q_b.g, dq, h1, b->q_w.w, N, D, D);
        if (cross) {
            vla_linear_backward(ops, d_vl, b->k_w.g, b->k_b.g, dk, ha->vl, b->k_w.w, P, L, D);
            vla_linear_backward(ops, d_vl, b->v_w.g, b->v_b.g, dv, ha->vl, b->v_w.w, P, L, D);
        } else {
            vla_linear_backward(ops, dh, b->k_w.g, b->k_b.g, dk, h1, b->k_w.w, N, D, D);
            vla_linear_backward(ops, dh, b->v_w.g, b->v_b.g, dv, h1, b->v_w.w, N, D, D);
        }
        ops->fill(dmod, 0.0f, S * 2 * D);
        VLA_TRY(vla_adaln_backward(dX, dmod, dh, x, mod, ha->m1 + i * N, ha->r1 + i * N, pk->cu_dit, pk->S, N, D));
        vla_linear_backward(ops, dstemb, b->n1_w.g, b->n1_b.g, dmod, ha->stemb, b->n1_w.w, S, D, 2 * D);
        GROOT_READY_STRUCT(p, b); /* a block's weights serve that block only */
    }

    /* split dX: state row, future tokens, action rows */
    float *dst, *da3;
    GROOT_ALLOC(a, dst, S * D);
    GROOT_ALLOC(a, da3, A * D);
    for (int64_t s = 0; s < S; s++) {
        const float *x0 = dX + (int64_t)pk->cu_dit[s] * D;
        memcpy(dst + s * D, x0, (size_t)D * sizeof(float));
        if (F > 0 && g->fut.g) ops->add(g->fut.g, g->fut.g, x0 + D, F * D);
        memcpy(da3 + s * H * D, x0 + (1 + F) * D, (size_t)(H * D) * sizeof(float));
    }
    if (g->pos.g) vla_embedding_backward(g->pos.g, da3, pk->act_pos, A, D);
    {
        const groot_t emb[] = {g->fut, g->pos};
        groot_ready(p, emb, 2);
    }

    /* action encoder (x_t and the timestep are inputs: no gradient past W1) */
    float *da2s, *da2, *dcat, *da1;
    ZALLOC(a, da2s, A * D);
    VLA_TRY(emb_bwd(p, pk, &g->a3_w, &g->a3_b, D, D, da2s, da3, ha->a2s, pk->cu_act, A));
    ZALLOC(a, da2, A * D);
    vla_silu_backward(da2, da2s, ha->a2, A * D);
    ZALLOC(a, dcat, A * 2 * D);
    VLA_TRY(emb_bwd(p, pk, &g->a2_w, &g->a2_b, 2 * D, D, dcat, da2, ha->cat, pk->cu_act, A));
    GROOT_ALLOC(a, da1, A * D);
    for (int64_t r = 0; r < A; r++) memcpy(da1 + r * D, dcat + r * 2 * D, (size_t)D * sizeof(float));
    VLA_TRY(emb_bwd(p, pk, &g->a1_w, &g->a1_b, ad, D, NULL, da1, ha->xt, pk->cu_act, A));
    {
        const groot_t enc[] = {g->a1_w, g->a1_b, g->a2_w, g->a2_b, g->a3_w, g->a3_b};
        groot_ready(p, enc, 6);
    }

    /* state encoder */
    float *dsthr, *dsth;
    ZALLOC(a, dsthr, S * Hs);
    VLA_TRY(emb_bwd(p, pk, &g->st2_w, &g->st2_b, Hs, D, dsthr, dst, ha->st_hr, pk->cu_one, S));
    ZALLOC(a, dsth, S * Hs);
    vla_relu_backward(dsth, dsthr, ha->st_h, S * Hs);
    VLA_TRY(emb_bwd(p, pk, &g->st1_w, &g->st1_b, sd, Hs, NULL, dsth, pk->state, pk->cu_one, S));
    {
        const groot_t enc[] = {g->st1_w, g->st1_b, g->st2_w, g->st2_b};
        groot_ready(p, enc, 4);
    }

    /* timestep encoder */
    float *dtemb, *dte1a, *dte1;
    ZALLOC(a, dtemb, S * D);
    vla_silu_backward(dtemb, dstemb, ha->temb, S * D);
    ZALLOC(a, dte1a, S * D);
    vla_linear_backward(ops, dte1a, g->te2_w.g, g->te2_b.g, dtemb, ha->te1a, g->te2_w.w, S, D, D);
    ZALLOC(a, dte1, S * D);
    vla_silu_backward(dte1, dte1a, ha->te1, S * D);
    vla_linear_backward(ops, NULL, g->te1_w.g, g->te1_b.g, dte1, ha->tproj, g->te1_w.w, S, C, D);
    {
        const groot_t te[] = {g->te1_w, g->te1_b, g->te2_w, g->te2_b}; /* after every block's dstemb */
        groot_ready(p, te, 4);
    }
    return VLA_OK;
}
