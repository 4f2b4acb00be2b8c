/* groot_backbone.c — GR00T N1.5's vision-language backbone (Eagle 2.5 as
 * GR00T cuts it): SigLIP-style ViT (vit.h) → mlp1, one Linear to the LM
 * width → the image rows of the LM input; text rows from the token
 * embedding → Qwen3 decoder layers (RMSNorm eps from the config, GQA,
 * per-head q_norm/k_norm RMSNorm before RoPE, SwiGLU, no biases), causal
 * through the batch's attention groups → the final RMSNorm. Only
 * language.depth layers exist (GR00T's select_layer: later layers are
 * deleted at construction, and hidden_states[-1] of the cut model is the
 * normed output of the last kept layer).
 *
 * With save = false (frozen backbone, or sampling) one layer's buffers are
 * reused for every layer, so nothing is kept for a backward that never runs. */
#include "policy/groot_internal.h"

#include <string.h>

#include "nn/embedding.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/rmsnorm.h"
#include "nn/rope.h"

static vla_mlp_config lm_mlp_cfg(const vla_lm_config *l) {
    vla_mlp_config m = {true, VLA_ACT_SILU, l->width, l->mlp, 0};
    return m;
}

static vla_attn_config lm_attn_cfg(const vla_lm_config *l) {
    vla_attn_config c = {(int32_t)l->heads, (int32_t)l->kv_heads, (int32_t)l->head_dim, 0.0f, 0, 0,
                         VLA_ATTN_BWD_AUTO};
    return c;
}

vla_status groot_backbone_forward(vla_policy *p, vla_arena *a, const groot_pack *pk, bool save, groot_bb_acts *bb) {
    groot_impl *g = groot_of(p);
    const vla_ops *ops = p->tops;
    const vla_lm_config *l = &p->cfg.language;
    int64_t P = pk->P, L = l->width, Hq = l->heads, Hk = l->kv_heads, hd = l->head_dim;
    int64_t Q = Hq * hd, K = Hk * hd, depth = l->depth, VW = p->cfg.vision.width;
    float eps = (float)l->norm_eps;
    memset(bb, 0, sizeof *bb);
    bb->saved = save;
    int64_t nl = save ? depth : 1; /* layers whose buffers exist */

    /* LM input: text rows from the embedding, image rows from mlp1(ViT) */
    GROOT_ALLOC(a, bb->emb, P * L);
    if (pk->n_img > 0) {
        if (!g->have_vit) return vla_error(VLA_ERR_UNSUPPORTED, "groot: images given but no ViT");
        GROOT_ALLOC(a, bb->vit_acts, vla_vit_acts_floats(&g->vit, pk->n_img));
        GROOT_ALLOC(a, bb->vit_out, pk->n_img_tok * VW);
        VLA_TRY(vla_vit_forward(&g->vit, bb->vit_out, bb->vit_acts, pk->images, pk->n_img));
        float *proj;
        GROOT_ALLOC(a, proj, pk->n_img_tok * L);
        vla_linear_forward(ops, proj, bb->vit_out, g->mlp1_w.w, g->mlp1_b.w, pk->n_img_tok, VW, L);
        for (int64_t i = 0; i < pk->n_img_tok; i++)
            memcpy(bb->emb + (int64_t)pk->img_rows[i] * L, proj + i * L, (size_t)L * sizeof(float));
    }
    if (pk->n_txt > 0) {
        float *te;
        GROOT_ALLOC(a, te, pk->n_txt * L);
        VLA_TRY(vla_embedding_forward(te, pk->txt_ids, g->embed.w, pk->n_txt, l->vocab, L));
        for (int64_t i = 0; i < pk->n_txt; i++)
            memcpy(bb->emb + (int64_t)pk->txt_rows[i] * L, te + i * L, (size_t)L * sizeof(float));
    }

    vla_mlp_config mc = lm_mlp_cfg(l);
    int64_t mlp_n = vla_mlp_acts_floats(&mc, P);
    GROOT_ALLOC(a, bb->x, (save ? depth + 1 : 2) * P * L);
    GROOT_ALLOC(a, bb->h1, nl * P * L);
    GROOT_ALLOC(a, bb->r1, nl * P);
    GROOT_ALLOC(a, bb->qp, nl * P * Q);
    GROOT_ALLOC(a, bb->kp, nl * P * K);
    if (l->qk_norm) {
        GROOT_ALLOC(a, bb->qn, nl * P * Q);
        GROOT_ALLOC(a, bb->kn, nl * P * K);
        GROOT_ALLOC(a, bb->rq, nl * P * Hq);
        GROOT_ALLOC(a, bb->rk, nl * P * Hk);
    }
    GROOT_ALLOC(a, bb->q, nl * P * Q);
    GROOT_ALLOC(a, bb->k, nl * P * K);
    GROOT_ALLOC(a, bb->v, nl * P * K);
    GROOT_ALLOC(a, bb->att, nl * P * Q);
    GROOT_ALLOC(a, bb->lse, nl * P * Hq);
    GROOT_ALLOC(a, bb->xm, nl * P * L);
    GROOT_ALLOC(a, bb->h2, nl * P * L);
    GROOT_ALLOC(a, bb->r2, nl * P);
    GROOT_ALLOC(a, bb->mlp, nl * mlp_n);
    GROOT_ALLOC(a, bb->rf, P);
    GROOT_ALLOC(a, bb->feats, P * L);

    memcpy(bb->x, bb->emb, (size_t)(P * L) * sizeof(float));
    vla_attn_config ac = lm_attn_cfg(l);
    vla_attn_seqs seqs = {pk->S, pk->cu_pre, pk->pre_group};
    for (int64_t i = 0; i < depth; i++) {
        const groot_lm_layer *w = &g->lm[i];
        int64_t s = save ? i : 0;
        float *x = bb->x + (save ? i : (i & 1)) * P * L, *xo = bb->x + (save ? i + 1 : ((i + 1) & 1)) * P * L;
        float *h1 = bb->h1 + s * P * L, *qp = bb->qp + s * P * Q, *kp = bb->kp + s * P * K;
        float *q = bb->q + s * P * Q, *k = bb->k + s * P * K, *v = bb->v + s * P * K;
        float *att = bb->att + s * P * Q, *xm = bb->xm + s * P * L, *h2 = bb->h2 + s * P * L;
        vla_rmsnorm_forward(h1, bb->r1 + s * P, x, w->in_ln.w, false, P, L, eps);
        vla_linear_forward(ops, qp, h1, w->q.w, NULL, P, L, Q);
        vla_linear_forward(ops, kp, h1, w->k.w, NULL, P, L, K);
        vla_linear_forward(ops, v, h1, w->v.w, NULL, P, L, K);
        const float *qn = qp, *kn = kp;
        if (l->qk_norm) {
            vla_rmsnorm_forward(bb->qn + s * P * Q, bb->rq + s * P * Hq, qp, w->q_norm.w, false, P * Hq, hd, eps);
            vla_rmsnorm_forward(bb->kn + s * P * K, bb->rk + s * P * Hk, kp, w->k_norm.w, false, P * Hk, hd, eps);
            qn = bb->qn + s * P * Q, kn = bb->kn + s * P * K;
        }
        vla_rope_forward(q, qn, pk->pre_pos, P, Hq, hd, l->rope_theta);
        vla_rope_forward(k, kn, pk->pre_pos, P, Hk, hd, l->rope_theta);
        VLA_TRY(vla_attention_forward(ops, &ac, att, bb->lse + s * P * Hq, q, k, v, &seqs, &seqs, NULL));
        vla_linear_forward(ops, xm, att, w->o.w, NULL, P, Q, L);
        ops->add(xm, xm, x, P * L);
        vla_rmsnorm_forward(h2, bb->r2 + s * P, xm, w->post_ln.w, false, P, L, eps);
        vla_mlp_weights mw = {w->up.w, NULL, w->gate.w, NULL, w->down.w, NULL};
        vla_mlp_forward(ops, &mc, xo, bb->mlp + s * mlp_n, h2, &mw, P);
        ops->add(xo, xo, xm, P * L);
    }
    const float *xl = bb->x + (save ? depth : (depth & 1)) * P * L;
    vla_rmsnorm_forward(bb->feats, bb->rf, xl, g->final_norm.w, false, P, L, eps);
    return VLA_OK;
}

vla_status groot_backbone_backward(vla_policy *p, vla_arena *a, const groot_pack *pk, groot_bb_acts *bb,
                                   const float *d_feats) {
    groot_impl *g = groot_of(p);
    const vla_ops *ops = p->tops;
    const vla_lm_config *l = &p->cfg.language;
    int64_t P = pk->P, L = l->width, Hq = l->heads, Hk = l->kv_heads, hd = l->head_dim;
    int64_t Q = Hq * hd, K = Hk * hd, depth = l->depth, VW = p->cfg.vision.width;
    if (!bb->saved) return vla_error(VLA_ERR_INTERNAL, "groot: backbone backward without saved activations");
    vla_mlp_config mc = lm_mlp_cfg(l);
    int64_t mlp_n = vla_mlp_acts_floats(&mc, P);
    float *dres, *dh, *datt, *dq, *dk, *dv, *dqn = NULL, *dkn = NULL, *scratch;
    GROOT_ALLOC(a, dres, P * L);
    GROOT_ALLOC(a, dh, P * L);
    GROOT_ALLOC(a, datt, P * Q);
    GROOT_ALLOC(a, dq, P * Q);
    GROOT_ALLOC(a, dk, P * K);
    GROOT_ALLOC(a, dv, P * K);
    if (l->qk_norm) {
        GROOT_ALLOC(a, dqn, P * Q);
        GROOT_ALLOC(a, dkn, P * K);
    }
    GROOT_ALLOC(a, scratch, vla_mlp_scratch_floats(&mc, P));
    ops->fill(dres, 0.0f, P * L);
    vla_rmsnorm_backward(dres, g->final_norm.g, d_feats, bb->x + depth * P * L, g->final_norm.w, false, bb->rf, P,
                         L);
    groot_ready(p, &g->final_norm, 1);
    vla_attn_config ac = lm_attn_cfg(l);
    vla_attn_seqs seqs = {pk->S, pk->cu_pre, pk->pre_group};
    for (int64_t i = depth - 1; i >= 0; i--) {
        const groot_lm_layer *w = &g->lm[i];
        float *x = bb->x + i * P * L, *h1 = bb->h1 + i * P * L, *qp = bb->qp + i * P * Q, *kp = bb->kp + i * P * K;
        float *q = bb->q + i * P * Q, *k = bb->k + i * P * K, *v = bb->v + i * P * K;
        float *att = bb->att + i * P * Q, *xm = bb->xm + i * P * L, *h2 = bb->h2 + i * P * L;
        /* MLP branch: x_out = xm + mlp(rms(xm)) */
        ops->fill(dh, 0.0f, P * L);
        vla_mlp_weights mw = {w->up.w, NULL, w->gate.w, NULL, w->down.w, NULL};
        vla_mlp_grads mg = {w->up.g, NULL, w->gate.g, NULL, w->down.g, NULL};
        vla_mlp_backward(ops, &mc, dh, &mg, scratch, dres, h2, bb->mlp + i * mlp_n, &mw, P);
        vla_rmsnorm_backward(dres, w->post_ln.g, dh, xm, w->post_ln.w, false, bb->r2 + i * P, P, L);
        /* attention branch: xm = x + o(attn(rope(qk_norm(q(rms(x))))…)) */
        ops->fill(datt, 0.0f, P * Q);
        vla_linear_backward(ops, datt, w->o.g, NULL, dres, att, w->o.w, P, Q, L);
        ops->fill(dq, 0.0f, P * Q);
        ops->fill(dk, 0.0f, P * K);
        ops->fill(dv, 0.0f, P * K);
        VLA_TRY(vla_attention_backward(ops, &ac, dq, dk, dv, datt, q, k, v, att, bb->lse + i * P * Hq, &seqs, &seqs,
                                       NULL));
        /* undo RoPE (and q_norm/k_norm), reusing buffers that are free by now */
        float *dqp, *dkp;
        if (l->qk_norm) {
            ops->fill(dqn, 0.0f, P * Q);
            ops->fill(dkn, 0.0f, P * K);
            vla_rope_backward(dqn, dq, pk->pre_pos, P, Hq, hd, l->rope_theta);
            vla_rope_backward(dkn, dk, pk->pre_pos, P, Hk, hd, l->rope_theta);
            /* dq, dk are free now: hold the pre-norm gradients */
            ops->fill(dq, 0.0f, P * Q);
            ops->fill(dk, 0.0f, P * K);
            vla_rmsnorm_backward(dq, w->q_norm.g, dqn, qp, w->q_norm.w, false, bb->rq + i * P * Hq, P * Hq, hd);
            vla_rmsnorm_backward(dk, w->k_norm.g, dkn, kp, w->k_norm.w, false, bb->rk + i * P * Hk, P * Hk, hd);
            dqp = dq, dkp = dk;
        } else {
            ops->fill(datt, 0.0f, P * Q);
            vla_rope_backward(datt, dq, pk->pre_pos, P, Hq, hd, l->rope_theta);
            ops->fill(dq, 0.0f, P * Q);
            /* dk's rotation goes into dq's first P·K floats (K <= Q) */
            vla_rope_backward(dq, dk, pk->pre_pos, P, Hk, hd, l->rope_theta);
            dqp = datt, dkp = dq;
        }
        ops->fill(dh, 0.0f, P * L);
        vla_linear_backward(ops, dh, w->q.g, NULL, dqp, h1, w->q.w, P, L, Q);
        vla_linear_backward(ops, dh, w->k.g, NULL, dkp, h1, w->k.w, P, L, K);
        vla_linear_backward(ops, dh, w->v.g, NULL, dv, h1, w->v.w, P, L, K);
        vla_rmsnorm_backward(dres, w->in_ln.g, dh, x, w->in_ln.w, false, bb->r1 + i * P, P, L);
        GROOT_READY_STRUCT(p, w);
    }
    /* dres is now ∂/∂(LM input): text rows → token embedding, image rows → mlp1 → ViT */
    if (pk->n_txt > 0 && g->embed.g) {
        float *dt;
        GROOT_ALLOC(a, dt, pk->n_txt * L);
        for (int64_t i = 0; i < pk->n_txt; i++)
            memcpy(dt + i * L, dres + (int64_t)pk->txt_rows[i] * L, (size_t)L * sizeof(float));
        vla_embedding_backward(g->embed.g, dt, pk->txt_ids, pk->n_txt, L);
    }
    groot_ready(p, &g->embed, 1);
    if (pk->n_img > 0 && (g->need_conn || g->need_vision)) {
        float *dp, *dvit = NULL;
        GROOT_ALLOC(a, dp, pk->n_img_tok * L);
        for (int64_t i = 0; i < pk->n_img_tok; i++)
            memcpy(dp + i * L, dres + (int64_t)pk->img_rows[i] * L, (size_t)L * sizeof(float));
        if (g->need_vision) {
            GROOT_ALLOC(a, dvit, pk->n_img_tok * VW);
            ops->fill(dvit, 0.0f, pk->n_img_tok * VW);
        }
        vla_linear_backward(ops, dvit, g->mlp1_w.g, g->mlp1_b.g, dp, bb->vit_out, g->mlp1_w.w, pk->n_img_tok, VW, L);
        const groot_t mlp1[] = {g->mlp1_w, g->mlp1_b};
        groot_ready(p, mlp1, 2);
        if (g->need_vision) {
            float *vs;
            GROOT_ALLOC(a, vs, vla_vit_scratch_floats(&g->vit, pk->n_img, false));
            VLA_TRY(vla_vit_backward(&g->vit, NULL, dvit, bb->vit_acts, vs, pk->n_img));
        }
    }
    return VLA_OK;
}
