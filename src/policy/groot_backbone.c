/* groot_backbone.c — GR00T N1.5's vision-language backbone (Eagle 2.5 as
 * GR00T cuts it): SigLIP-style ViT (vit.h) → mlp1, one Linear to the LM
 * width → the image rows of the LM input; text rows from the token
 * embedding → Qwen3 decoder layers (nn/block.h: RMSNorm, GQA, per-head
 * q_norm/k_norm before RoPE, SwiGLU, no biases), causal through the batch's
 * attention groups → the final RMSNorm. Only language.depth layers exist
 * (GR00T's select_layer: later layers are deleted at construction, and
 * hidden_states[-1] of the cut model is the normed output of the last kept
 * layer).
 *
 * With save = false (frozen backbone, or sampling) one block's activations
 * and two residual buffers serve every layer, so nothing is kept for a
 * backward that never runs. */
#include "policy/groot_internal.h"

#include <string.h>

#include "nn/acts.h"
#include "nn/embedding.h"
#include "nn/linear.h"
#include "nn/rmsnorm.h"

/* Saved activations (n_it image tokens of width VW, la one block's table, nl
 * the layers whose blocks keep theirs, nx the residual buffers). */
#define BB_ACTS(X)                                                                                               \
    X(vit_acts, vit)                                                                                             \
    X(vit_out, n_it * VW)                                                                                        \
    X(proj, n_it * L)                                                                                            \
    X(te, n_txt * L)                                                                                             \
    X(x, nx * P * L)                                                                                             \
    X(blocks, nl * la)                                                                                           \
    X(rf, P)                                                                                                     \
    X(feats, P * L)
#define BB_GRADS(X)                                                                                              \
    X(dres, P * L)                                                                                               \
    X(scratch, bs)                                                                                               \
    X(dt, n_txt * L)                                                                                             \
    X(dp, n_it * L)                                                                                              \
    X(dvit, nv * n_it * VW)                                                                                      \
    X(vs, nv * vsc)

#define BB_DIMS(g, p, pk, keep)                                                                                  \
    const int64_t P = (pk)->P, L = (p)->cfg.language.width, VW = (p)->cfg.vision.width, n_it = (pk)->n_img_tok;  \
    const int64_t n_txt = (pk)->n_txt, depth = (p)->cfg.language.depth, nl = vla_block_stack_tables(keep, depth);\
    const int64_t nx = vla_block_stack_xs(keep, depth), la = vla_block_acts_floats(&(g)->lm_cfg, P, 0, (pk)->S); \
    const int64_t bs = vla_block_scratch_floats(&(g)->lm_cfg, P, 0, (pk)->S);                                    \
    const int64_t vit = (pk)->n_img > 0 ? vla_vit_acts_floats(&(g)->W.vit, (pk)->n_img) : 0;                      \
    const int64_t nv = (g)->need_vision && (pk)->n_img > 0;                                                      \
    const int64_t vsc = nv ? vla_vit_scratch_floats(&(g)->W.vit, (pk)->n_img, false) : 0;                       \
    (void)P, (void)L, (void)VW, (void)n_it, (void)n_txt, (void)depth, (void)nl, (void)nx, (void)la, (void)bs,   \
        (void)vit, (void)nv, (void)vsc

typedef struct {
    BB_ACTS(VLA_ACTS_FIELD)
} bb_table;
typedef struct {
    BB_GRADS(VLA_ACTS_FIELD)
} bb_grads;

void vla_groot_layer_ready(void *user, int64_t layer) {
    const groot_layers_ready *r = user;
    vla_policy_ready_wgs(r->p, (const vla_wg *)&r->w[layer], VLA_BLOCK_N_WG);
}

static vla_block_io lm_io(const groot_pack *pk) {
    vla_block_io io = {0};
    io.n = pk->P, io.n_seg = pk->S, io.cu = pk->cu_pre, io.groups = pk->pre_group, io.pos = pk->pre_pos;
    return io;
}

/* The LM input: text rows from the embedding, image rows from mlp1(ViT). */
static vla_status lm_input(vla_policy *p, groot_impl *g, const groot_pack *pk, const bb_table *t) {
    const vla_lm_config *l = &p->cfg.language;
    int64_t L = l->width, VW = p->cfg.vision.width;
    if (pk->n_img > 0) {
        VLA_TRY(vla_vit_forward(&g->W.vit, t->vit_out, t->vit_acts, pk->images, pk->n_img));
        vla_linear_forward(p->tops, t->proj, t->vit_out, g->W.mlp1_w.w, g->W.mlp1_b.w, pk->n_img_tok, VW, L);
        p->tops->copy_rows(t->x, L, pk->img_rows, t->proj, L, NULL, pk->n_img_tok, L, 1.0f);
    }
    if (pk->n_txt > 0) {
        VLA_TRY(vla_embedding_forward(p->tops, t->te, pk->txt_ids, g->W.embed.w, pk->n_txt, l->vocab, L));
        p->tops->copy_rows(t->x, L, pk->txt_rows, t->te, L, NULL, pk->n_txt, L, 1.0f);
    }
    return VLA_OK;
}

vla_status vla_groot_backbone_forward(vla_policy *p, vla_arena *a, const groot_pack *pk, vla_block_keep keep,
                                      groot_bb_acts *bb) {
    groot_impl *g = groot_of(p);
    /* the ViT keeps what its backward reads, only when one runs (need_vision): a frozen tower or backbone
     * (and sampling) runs it through two residual buffers and one layer's table (before the sizes) */
    g->W.vit.keep = g->need_vision ? keep : VLA_STACK_NONE;
    BB_DIMS(g, p, pk, keep);
    const int64_t sizes[] = {BB_ACTS(VLA_ACTS_SIZE)};
    bb_table t;
    VLA_TRY(vla_acts_from_arena(a, sizes, VLA_ACTS_COUNT(sizes), (float **)&t));
    memset(bb, 0, sizeof *bb);
    bb->keep = keep, bb->vit_acts = t.vit_acts, bb->vit_out = t.vit_out, bb->x = t.x, bb->blocks = t.blocks;
    bb->rf = t.rf, bb->feats = t.feats;
    VLA_TRY(lm_input(p, g, pk, &t));
    vla_block_io io = lm_io(pk);
    const float *xl;
    VLA_TRY(vla_block_stack_forward(p->tops, &g->lm_cfg, g->W.lm, depth, &io, t.x, t.blocks, keep, &xl));
    vla_rmsnorm_forward(p->tops, t.feats, t.rf, xl, g->W.final_norm.w, false, P, L, (float)p->cfg.language.norm_eps);
    return VLA_OK;
}

/* dres is ∂/∂(LM input): text rows → token embedding, image rows → mlp1 → ViT. */
static vla_status lm_input_backward(vla_policy *p, groot_impl *g, const groot_pack *pk, const groot_bb_acts *bb,
                                    const bb_grads *d) {
    int64_t L = p->cfg.language.width, VW = p->cfg.vision.width;
    if (pk->n_txt > 0 && g->W.embed.g) {
        p->tops->copy_rows(d->dt, L, NULL, d->dres, L, pk->txt_rows, pk->n_txt, L, 1.0f);
        vla_embedding_backward(p->tops, g->W.embed.g, d->dt, pk->txt_ids, pk->n_txt, L);
    }
    vla_policy_ready_wgs(p, &g->W.embed, 1);
    if (pk->n_img == 0 || !(g->need_conn || g->need_vision)) return VLA_OK;
    p->tops->copy_rows(d->dp, L, NULL, d->dres, L, pk->img_rows, pk->n_img_tok, L, 1.0f);
    vla_linear_backward_fresh(p->tops, d->dvit, g->W.mlp1_w.g, g->W.mlp1_b.g, d->dp, bb->vit_out, g->W.mlp1_w.w,
                              pk->n_img_tok, VW, L);
    const vla_wg mlp1[] = {g->W.mlp1_w, g->W.mlp1_b};
    vla_policy_ready_wgs(p, mlp1, 2);
    if (d->dvit) VLA_TRY(vla_vit_backward(&g->W.vit, NULL, d->dvit, bb->vit_acts, d->vs, pk->n_img));
    return VLA_OK;
}

vla_status vla_groot_backbone_backward(vla_policy *p, vla_arena *a, const groot_pack *pk, groot_bb_acts *bb,
                                   float *d_feats) {
    groot_impl *g = groot_of(p);
    if (bb->keep == VLA_STACK_NONE)
        return vla_error(VLA_ERR_INTERNAL, "groot: backbone backward without saved activations");
    BB_DIMS(g, p, pk, bb->keep);
    const int64_t sizes[] = {BB_GRADS(VLA_ACTS_SIZE)};
    bb_grads d;
    VLA_TRY(vla_acts_from_arena(a, sizes, VLA_ACTS_COUNT(sizes), (float **)&d));
    p->tops->fill(d.dres, 0.0f, P * L);
    vla_rmsnorm_backward(p->tops, d.dres, g->W.final_norm.g, d_feats, bb->x + depth * P * L, g->W.final_norm.w, false, bb->rf,
                         P, L);
    vla_policy_ready_wgs(p, &g->W.final_norm, 1);
    vla_block_io io = lm_io(pk);
    groot_layers_ready r = {p, g->W.lm};
    VLA_TRY(vla_block_stack_backward(p->tops, &g->lm_cfg, g->W.lm, depth, &io, bb->x, bb->blocks, bb->keep, d.scratch, d.dres,
                                     vla_groot_layer_ready, &r));
    return lm_input_backward(p, g, pk, bb, &d);
}
