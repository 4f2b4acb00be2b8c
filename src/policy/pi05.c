/* pi05.c — the π0.5 network behind policy.h: loss (forward keeping its
 * activations) and backward into p->grads (pi05.h has the conventions;
 * pi05_family.c the inventory; pi05_sample.c samples actions through this
 * forward with a prefix KV cache; pi05_internal.h is what they share).
 *
 * One layer is two nn/block.h blocks, one per weight stream, meeting in one
 * attention over the batch's token order (a mixture of transformers):
 *   prefix rows (image, text; Gemma weights)   action rows (expert weights, AdaRMS on the time)
 *   vla_block_attn_in → q k v                   vla_block_attn_in → q k v
 *        └──── scattered into token order Q K V; one prefix-LM attention → O ────┘
 *        ┌──── O gathered back per stream ─────────────────────────────────────┐
 *   vla_block_attn_out (o, residual, GeGLU)     vla_block_attn_out (gated residuals)
 * In the last layer only the prefix's K/V matter, so its attn_out is skipped
 * (openpi computes and discards it). The expert's final AdaRMS and
 * action_out_proj give the velocity.
 *
 * Sizes (as in policy.h): S samples, T tokens, Np prefix and Na action rows,
 * W and We the LM and expert widths, HD = heads·head_dim, KD = kv_heads·head_dim,
 * A action dims, L layers. */
#include "policy/pi05.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "nn/acts.h"
#include "nn/activations.h"
#include "nn/adarmsnorm.h"
#include "nn/attention.h"
#include "policy/precision.h"
#include "nn/linear.h"
#include "nn/time_embedding.h"
#include "policy/flow.h"
#include "policy/pi05_internal.h"
#include "policy/region.h"
#include "tensor/attn_plan.h"

/* Row copies between the merged token order and one stream's rows (index
 * maps from build_maps). */
static void gather_rows(const vla_ops *ops, float *dst, const float *src, const int32_t *idx, int64_t n, int64_t w) {
    ops->copy_rows(dst, w, NULL, src, w, idx, n, w, 1.0f);
}
static void scatter_rows(const vla_ops *ops, float *dst, const float *src, const int32_t *idx, int64_t n, int64_t w) {
    ops->copy_rows(dst, w, idx, src, w, NULL, n, w, 1.0f);
}

/* ---- index maps ------------------------------------------------------------------------ */

/* Sort a sample's tokens into the two streams; every prefix token is an
 * image or text token, sample s has exactly its images' worth of image
 * tokens, and either every sample has `horizon` action tokens or (prefix-only)
 * none. */
static vla_status split_sample(const vla_policy *p, const vla_batch *b, fwd_maps *m, int32_t s, int64_t *np,
                               int64_t *na, int64_t *n_txt, bool with_actions) {
    int64_t Ti = vla_policy_image_tokens(&p->cfg), Hz = p->cfg.action.horizon;
    int64_t img0 = b->n_images > 0 ? (int64_t)b->cu_images[s] * Ti : 0;
    int64_t n_imgtok = b->n_images > 0 ? (int64_t)(b->cu_images[s + 1] - b->cu_images[s]) * Ti : 0;
    int64_t k_img = 0, k_act = 0;
    for (int64_t t = b->cu_seqlens[s]; t < b->cu_seqlens[s + 1]; t++) {
        m->ids[t] = 0;
        switch (b->roles[t]) {
        case VLA_ROLE_IMAGE:
            if (k_img >= n_imgtok)
                return vla_error(VLA_ERR_INVALID_ARG,
                                 "pi05: sample %d has more image tokens than its %lld images give (%lld)", s,
                                 (long long)(n_imgtok / Ti), (long long)n_imgtok);
            m->pre_img[*np] = (int32_t)(img0 + k_img);
            m->img_dst[img0 + k_img] = (int32_t)*np;
            m->img_src[img0 + k_img] = (int32_t)(img0 + k_img);
            k_img++;
            m->pre_pos[*np] = b->positions[t];
            m->pre_idx[(*np)++] = (int32_t)t;
            break;
        case VLA_ROLE_TEXT:
            if (!b->token_ids) return vla_error(VLA_ERR_INVALID_ARG, "pi05: text tokens but no token_ids");
            m->ids[t] = b->token_ids[t];
            m->pre_img[*np] = -1;
            m->txt_dst[*n_txt] = (int32_t)*np;
            m->txt_id[(*n_txt)++] = b->token_ids[t];
            m->pre_pos[*np] = b->positions[t];
            m->pre_idx[(*np)++] = (int32_t)t;
            break;
        case VLA_ROLE_ACTION:
            m->act_pos[*na] = b->positions[t];
            m->act_idx[(*na)++] = (int32_t)t;
            k_act++;
            break;
        default:
            return vla_error(VLA_ERR_INVALID_ARG, "pi05: token %lld has role %d (π0.5 has no state tokens)",
                             (long long)t, b->roles[t]);
        }
    }
    if (k_img != n_imgtok)
        return vla_error(VLA_ERR_INVALID_ARG, "pi05: sample %d has %lld image tokens, its images give %lld", s,
                         (long long)k_img, (long long)n_imgtok);
    if (k_act != (with_actions ? Hz : 0))
        return vla_error(VLA_ERR_INVALID_ARG, "pi05: sample %d has %lld action tokens, expected %lld", s,
                         (long long)k_act, (long long)(with_actions ? Hz : 0));
    return VLA_OK;
}

static vla_status build_maps(vla_policy *p, pi05_impl *I, const vla_batch *b, bool with_actions) {
    fwd_state *f = &I->f;
    const int64_t S = b->n_samples, T = b->n_tokens;
    const int64_t sizes[] = {PI05_MAPS(VLA_ACTS_SIZE)};
    VLA_TRY(vla_acts_from_arena_i32(&I->harena, sizes, VLA_ACTS_COUNT(sizes), (int32_t **)&f->m));
    fwd_maps *m = &f->m;
    f->S = b->n_samples, f->T = T;
    f->n_img = b->n_images > 0 ? b->n_images : 0;
    memcpy(m->cu, b->cu_seqlens, (size_t)(S + 1) * sizeof(int32_t));
    memcpy(m->pos, b->positions, (size_t)T * sizeof(int32_t));
    memcpy(m->grp, b->groups, (size_t)T * sizeof(int32_t));
    int64_t np = 0, na = 0, n_txt = 0;
    m->pcu[0] = m->acu[0] = 0;
    for (int32_t s = 0; s < S; s++) {
        VLA_TRY(split_sample(p, b, m, s, &np, &na, &n_txt, with_actions));
        m->pcu[s + 1] = (int32_t)np;
        m->acu[s + 1] = (int32_t)na;
    }
    f->Np = np, f->Na = na, f->n_txt = n_txt;
    f->n_imgrow = f->n_img * vla_policy_image_tokens(&p->cfg);
    return VLA_OK;
}

/* ---- forward ------------------------------------------------------------------------------ */

void vla_pi05_lin(pi05_impl *I, const vla_ops *ops, float *out, const float *in, vla_wg w, vla_wg b, int64_t n,
                int64_t din, int64_t dout) {
    vla_linear_forward(ops, out, in, w.w, b.w, n, din, dout);
    I->flops += 2.0 * (double)n * (double)din * (double)dout;
}

/* The time condition of S samples: cond = swish(out(swish(in(sincos(t))))).
 * t [S] is host, and tdev receives it; t NULL: tdev holds the times already. */
void vla_pi05_time_forward(vla_policy *p, pi05_impl *I, const float *t, float *tdev, int32_t S, float *temb, float *tm1,
                         float *tm1s, float *tm2, float *cond) {
    const vla_policy_config *c = &p->cfg;
    const vla_ops *ops = p->tops;
    int64_t We = c->expert.width;
    vla_temb_config tc = {VLA_TEMB_PERIODS, We, c->flow.time_min_period, c->flow.time_max_period, 0, false};
    if (t) ops->to_device(tdev, t, (size_t)S * sizeof(float));
    vla_time_embedding_forward(ops, &tc, temb, tdev, S);
    vla_pi05_lin(I, ops, tm1, temb, I->W.tin_w, I->W.tin_b, S, We, We);
    vla_silu_forward(ops, tm1s, tm1, S * We);
    vla_pi05_lin(I, ops, tm2, tm1s, I->W.tout_w, I->W.tout_b, S, We, We);
    vla_silu_forward(ops, cond, tm2, S * We);
}

static vla_block_io prefix_io(const fwd_state *f) {
    vla_block_io io = {0};
    io.n = f->Np, io.n_seg = f->S, io.cu = f->m.pcu, io.pos = f->m.pre_pos;
    return io;
}

static vla_block_io action_io(const fwd_state *f) {
    vla_block_io io = {0};
    io.n = f->Na, io.n_seg = f->S, io.cu = f->m.acu, io.pos = f->m.act_pos, io.cond = f->a.cond;
    return io;
}

void vla_pi05_view_layer(pi05_impl *I, const vla_policy_config *c, int64_t li, layer_view *v) {
    const fwd_state *f = &I->f;
    PI05_DIMS(I, c, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    /* recompute: every layer in the one slot; the prefix-only forward: K and V per layer, the rest in one */
    const int64_t k = Lk == 1 ? 0 : li, kv = Lkv == 1 ? 0 : li;
    vla_block_acts_carve(&I->lm_cfg, Np, 0, (int32_t)S, f->a.blk_p + k * bp, &v->p);
    vla_block_acts_carve(&I->ex_cfg, Na, 0, (int32_t)S, f->a.blk_a + k * ba, &v->a);
    v->p.q = v->a.q = f->a.tq, v->p.k = v->a.k = f->a.tk, v->p.v = v->a.v = f->a.tv;
    v->p.att = v->a.att = f->a.to;
    v->Q = f->a.Q + k * T * HD, v->K = f->a.K + kv * T * KD, v->V = f->a.V + kv * T * KD;
    v->O = f->a.O + k * T * HD, v->lse = f->a.lse + k * T * H;
}

/* Norm, q k v and RoPE of one stream's rows, scattered into token order. */
static vla_status stream_in(pi05_impl *I, const vla_ops *ops, const vla_block_config *bc, const vla_block_weights *w,
                            const vla_block_io *io, const float *x, vla_block_acts *ba, const int32_t *idx,
                            layer_view *v) {
    VLA_TRY(vla_block_attn_in(ops, bc, w, io, x, ba));
    int64_t HD = (int64_t)bc->attn.n_heads * bc->attn.head_dim, KD = (int64_t)bc->attn.n_kv_heads * bc->attn.head_dim;
    I->flops += 2.0 * (double)io->n * (double)bc->dim * (double)(HD + 2 * KD) +
                (bc->norm1 == VLA_BLOCK_NORM_ADARMS ? 2.0 * io->n_seg * bc->cond_dim * 3.0 * bc->dim : 0.0);
    scatter_rows(ops, v->Q, ba->q, idx, io->n, HD);
    scatter_rows(ops, v->K, ba->k, idx, io->n, KD);
    scatter_rows(ops, v->V, ba->v, idx, io->n, KD);
    return VLA_OK;
}

/* This stream's rows of the attention output → o-projection, residual, MLP. */
static vla_status stream_out(pi05_impl *I, const vla_ops *ops, const vla_block_config *bc,
                             const vla_block_weights *w, const vla_block_io *io, const float *x, float *x_out,
                             vla_block_acts *ba, const int32_t *idx, const layer_view *v) {
    int64_t HD = (int64_t)bc->attn.n_heads * bc->attn.head_dim, D = bc->dim;
    gather_rows(ops, ba->att, v->O, idx, io->n, HD);
    VLA_TRY(vla_block_attn_out(ops, bc, w, io, x, x_out, ba));
    I->flops += 2.0 * (double)io->n * (double)HD * (double)D + 2.0 * (double)io->n * 3.0 * (double)D * bc->mlp.hidden +
                (bc->norm2 == VLA_BLOCK_NORM_ADARMS ? 2.0 * io->n_seg * bc->cond_dim * 3.0 * D : 0.0);
    return VLA_OK;
}

/* One layer: both streams in, the joint attention, both streams out. */
static vla_status layer_forward(vla_policy *p, pi05_impl *I, int64_t li) {
    fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    PI05_DIMS(I, &p->cfg, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    layer_view v;
    vla_pi05_view_layer(I, &p->cfg, li, &v);
    vla_block_io iop = prefix_io(f), ioa = action_io(f);
    /* the prefix's residual stream: every layer's input kept for the backward, or two buffers in turn */
    float *xp = f->a.xp + (nxp == 2 ? li & 1 : li) * Np * W, *xa = act ? f->a.xa + li * Na * We : NULL;
    float *xp_out = f->a.xp + (nxp == 2 ? (li + 1) & 1 : li + 1) * Np * W;
    VLA_TRY(stream_in(I, ops, &I->lm_cfg, &I->W.lm[li], &iop, xp, &v.p, f->m.pre_idx, &v));
    if (act) VLA_TRY(stream_in(I, ops, &I->ex_cfg, &I->W.ex[li], &ioa, xa, &v.a, f->m.act_idx, &v));
    vla_attn_seqs seqs = {f->S, f->m.cu, f->m.grp};
    vla_attn_config ac = vla_block_attn_config(&I->attn, &I->W.lm[li]); /* the joint attention: the LM's precision */
    VLA_TRY(vla_attention_forward(ops, &ac, v.O, v.lse, v.Q, v.K, v.V, &seqs, &seqs, NULL));
    I->flops += 4.0 * f->pairs * (double)HD;
    if (li < L - 1) VLA_TRY(stream_out(I, ops, &I->lm_cfg, &I->W.lm[li], &iop, xp, xp_out, &v.p, f->m.pre_idx, &v));
    if (act) VLA_TRY(stream_out(I, ops, &I->ex_cfg, &I->W.ex[li], &ioa, xa, xa + Na * We, &v.a, f->m.act_idx, &v));
    return VLA_OK;
}

/* The prefix's inputs: token ids checked, images uploaded. */
static vla_status embed_inputs(vla_policy *p, pi05_impl *I, const vla_batch *b) {
    fwd_state *f = &I->f;
    const vla_lm_config *l = &p->cfg.language;
    for (int64_t i = 0; i < f->n_txt; i++)
        if (f->m.txt_id[i] < 0 || f->m.txt_id[i] >= l->vocab)
            return vla_error(VLA_ERR_INVALID_ARG, "pi05: token id %d outside the vocabulary", f->m.txt_id[i]);
    if (f->n_img > 0) {
        const vla_vit_config *vc = &p->cfg.vision;
        p->tops->to_device(f->a.images, b->images,
                           (size_t)(f->n_img * vc->channels * vc->image_size * vc->image_size) * sizeof(float));
    }
    return VLA_OK;
}

/* Prefix embeddings of the uploaded inputs: images → ViT → projector; text → table·sqrt(W). */
static vla_status embed_prefix(vla_policy *p, pi05_impl *I) {
    fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    const vla_lm_config *l = &p->cfg.language;
    int64_t W = l->width, Dv = p->cfg.vision.width, n_it = f->n_img * I->W.vit.tokens;
    if (f->n_img > 0) {
        VLA_TRY(vla_vit_forward(&I->W.vit, f->a.vit_out, f->a.vit_acts, f->a.images, f->n_img));
        I->flops += vla_vit_forward_flops(&I->W.vit, f->n_img);
        vla_pi05_lin(I, ops, f->a.img_emb, f->a.vit_out, I->W.proj_w, I->W.proj_b, n_it, Dv, W);
        ops->copy_rows(f->a.xp, W, f->m.img_dst, f->a.img_emb, W, f->m.img_src, f->n_imgrow, W, 1.0f);
    }
    /* text rows: the embedding table times sqrt(W) (Gemma's normaliser) */
    if (f->n_txt > 0) ops->copy_rows(f->a.xp, W, f->m.txt_dst, I->W.embed.w, W, f->m.txt_id, f->n_txt, W, sqrtf((float)W));
    return VLA_OK;
}

/* The prefix-only forward (sampling's cache) from its uploaded inputs: the embeddings and every LM
 * layer, whose K/V stay in the arena for the flow steps. */
static vla_status prefix_body(void *vp) {
    vla_policy *p = vp;
    pi05_impl *I = pi05_of(p);
    VLA_TRY(embed_prefix(p, I));
    for (int64_t li = 0; li < p->cfg.language.depth; li++) VLA_TRY(layer_forward(p, I, li));
    return VLA_OK;
}

/* prefix_body as a captured region (tensor/ops.h, run_captured; cuda: one graph): its ops follow from the
 * batch's sizes and index maps (token ranges, positions, groups, which rows are image or text tokens and
 * the token ids: another prompt is another key), the activations' addresses (the images among them,
 * uploaded before it: new pixels need no new key) and the weight copies' state. */
static vla_status prefix_captured(vla_policy *p, pi05_impl *I) {
    const fwd_state *f = &I->f;
    struct {
        char magic[8];
        int64_t S, T, Np, n_img, n_imgrow, n_txt, keep;
        fwd_acts acts;
    } head;
    memset(&head, 0, sizeof head);
    memcpy(head.magic, "prefix1", 7);
    head.S = f->S, head.T = f->T, head.Np = f->Np, head.n_img = f->n_img, head.n_imgrow = f->n_imgrow;
    head.n_txt = f->n_txt, head.keep = I->W.vit.keep;
    head.acts = f->a;
    const struct {
        const int32_t *a;
        int64_t n;
    } maps[] = {{f->m.cu, f->S + 1},       {f->m.pcu, f->S + 1},      {f->m.pos, f->T},
                {f->m.grp, f->T},          {f->m.pre_idx, f->Np},     {f->m.pre_pos, f->Np},
                {f->m.pre_img, f->Np},     {f->m.img_dst, f->n_imgrow}, {f->m.img_src, f->n_imgrow},
                {f->m.txt_dst, f->n_txt},  {f->m.txt_id, f->n_txt}};
    vla_key key = {0};
    vla_key_add(&key, &head, sizeof head);
    vla_policy_region_key_add(p, &key);
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) vla_key_add_i32s(&key, maps[i].a, maps[i].n);
    vla_status st = key.failed ? prefix_body(p) : vla_ops_run_captured(p->tops, key.b, key.n, prefix_body, p);
    vla_key_release(&key);
    return st;
}

/* The forward with action rows from the uploaded inputs: the prefix embeddings, the time condition
 * (t on the host, or NULL: already in f->a.tdev), the action embeddings, every layer, the velocity. */
static vla_status act_forward(vla_policy *p, pi05_impl *I, const float *x_t, const float *t) {
    fwd_state *f = &I->f;
    const vla_policy_config *c = &p->cfg;
    PI05_DIMS(I, c, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    VLA_TRY(embed_prefix(p, I));
    /* action side: time condition and action embeddings (rows s·H + k: checked in build_maps) */
    vla_pi05_time_forward(p, I, t, f->a.tdev, f->S, f->a.temb, f->a.tm1, f->a.tm1s, f->a.tm2, f->a.cond);
    p->tops->copy(f->a.xin, x_t, Na * A);
    vla_pi05_lin(I, p->tops, f->a.xa, f->a.xin, I->W.ain_w, I->W.ain_b, Na, A, We);
    for (int64_t li = 0; li < L; li++) VLA_TRY(layer_forward(p, I, li));
    float *xL = f->a.xa + L * Na * We;
    vla_pi05_lin(I, p->tops, f->a.mod_f, f->a.cond, I->W.fin_w, I->W.fin_b, S, We, 3 * We);
    VLA_TRY(vla_adarmsnorm_forward(p->tops, f->a.af, f->a.arstd_f, xL, f->a.mod_f, f->m.acu, f->S, Na, We,
                                   (float)c->language.norm_eps, NULL));
    vla_pi05_lin(I, p->tops, f->a.vpred, f->a.af, I->W.aout_w, I->W.aout_b, Na, We, A);
    I->have_fwd = true;
    return VLA_OK;
}

/* ---- a training step's captured regions -----------------------------------------------------
 * As GR00T's (policy/groot.c has the reasons): a loss call's forward from its uploaded inputs — the
 * prefix embeddings, the time condition, every layer of both streams, the velocity head — and its
 * backward are captured regions (cuda: one graph each). Outside them: the flow draws and times
 * (uploaded to tdev first), the images' upload, the loss (its pad mask) and the optimizer. The
 * prefix trains here, so the prompt's token ids are in the key: a dataset of many prompts makes new
 * keys, and the trial (policy/region.h) then gives the regions up. A step with gradient-ready hooks
 * runs its backward plainly. */

/* k with what both regions depend on: the batch's sizes and index maps, the activations' addresses
 * (f->a: the arena's layout), extra (the region's own addresses), the weight copies' state */
static void train_key(vla_policy *p, pi05_impl *I, const char *tag, const void *extra, size_t extra_bytes,
                      vla_key *k) {
    const fwd_state *f = &I->f;
    if (!vla_train_regions_open(&I->train_trial)) {
        k->failed = true;
        return;
    }
    struct {
        char tag[16];
        int64_t S, T, Np, Na, n_img, n_imgrow, n_txt, recompute, keep;
        fwd_acts acts;
    } head;
    memset(&head, 0, sizeof head);
    snprintf(head.tag, sizeof head.tag, "%s", tag);
    head.S = f->S, head.T = f->T, head.Np = f->Np, head.Na = f->Na, head.n_img = f->n_img;
    head.n_imgrow = f->n_imgrow, head.n_txt = f->n_txt, head.recompute = f->recompute, head.keep = I->W.vit.keep;
    head.acts = f->a;
    vla_key_add(k, &head, sizeof head);
    vla_key_add(k, extra, extra_bytes);
    vla_policy_region_key_add(p, k);
    const struct {
        const int32_t *a;
        int64_t n;
    } maps[] = {{f->m.cu, f->S + 1},   {f->m.pcu, f->S + 1},      {f->m.acu, f->S + 1},       {f->m.pos, f->T},
                {f->m.grp, f->T},      {f->m.pre_idx, f->Np},     {f->m.pre_pos, f->Np},      {f->m.pre_img, f->Np},
                {f->m.act_idx, f->Na}, {f->m.act_pos, f->Na},     {f->m.img_dst, f->n_imgrow}, {f->m.img_src, f->n_imgrow},
                {f->m.txt_dst, f->n_txt}, {f->m.txt_id, f->n_txt}};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) vla_key_add_i32s(k, maps[i].a, maps[i].n);
}

typedef struct {
    vla_policy *p;
    pi05_impl *I;
    const float *x_t;
    double flops; /* the body's host output: the forward's model FLOPs */
} train_fwd;

static vla_status train_fwd_body(void *v) {
    train_fwd *r = v;
    r->I->flops = 0;
    VLA_TRY(act_forward(r->p, r->I, r->x_t, NULL));
    r->flops = r->I->flops;
    return VLA_OK;
}

static vla_status train_forward(vla_policy *p, pi05_impl *I, const float *x_t) {
    train_fwd r = {p, I, x_t, 0};
    vla_key key = {0};
    train_key(p, I, "pi05 train fwd", &x_t, sizeof x_t, &key);
    vla_region_trial_check(&I->train_trial, I->train_fwd_outs, &key, "pi05"); /* layouts that do not repeat */
    VLA_TRY(vla_region_run(p->tops, &I->train_fwd_outs, &key, &I->arena, train_fwd_body, &r, &r.flops,
                           sizeof r.flops));
    I->flops = r.flops, I->have_fwd = true; /* what the body leaves on the host, also after a replay */
    return VLA_OK;
}

/* Forward of a packed batch (see vla_pi05_forward); `recompute`: keep one
 * layer's activations (the backward recomputes each layer's); `train`: a loss call's, whose action
 * side runs as a captured region. */
static vla_status forward(vla_policy *p, const vla_batch *b, const float *x_t, const float *t, bool recompute,
                          bool train) {
    pi05_impl *I = pi05_of(p);
    fwd_state *f = &I->f;
    const vla_policy_config *c = &p->cfg;
    I->have_fwd = false;
    I->flops = 0;
    f->act = x_t != NULL;
    f->recompute = recompute && f->act; /* before PI05_DIMS: it sizes the per-layer tables */
    /* the ViT keeps what its backward reads, only when one runs (it trains, in a loss call): sampling's
     * prefix and a frozen tower run it through two residual buffers and one layer's table */
    I->W.vit.keep = !f->act || !vla_vit_trains(&I->W.vit) ? VLA_STACK_NONE
                    : f->recompute                         ? VLA_STACK_RECOMPUTE
                                                           : VLA_STACK_ALL;
    VLA_TRY(build_maps(p, I, b, f->act));
    PI05_DIMS(I, c, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    const int64_t sizes[] = {PI05_ACTS(VLA_ACTS_SIZE)};
    VLA_TRY(vla_acts_from_arena(&I->arena, sizes, VLA_ACTS_COUNT(sizes), (float **)&f->a));
    VLA_TRY(embed_inputs(p, I, b));
    f->pairs = vla_attn_pairs(&(vla_attn_seqs){f->S, f->m.cu, f->m.grp}, &(vla_attn_seqs){f->S, f->m.cu, f->m.grp});
    if (!act) return prefix_captured(p, I); /* sampling's prefix: one region */
    if (!train) return act_forward(p, I, x_t, t);
    p->tops->to_device(f->a.tdev, t, (size_t)f->S * sizeof(float)); /* the step's flow times: outside the region */
    return train_forward(p, I, x_t);
}

/* x_t [S, H, A] (backend) and t [S] (host) are the action side's input (both
 * NULL for a prefix-only batch: then only the LM runs, and the per-layer K/V
 * of the prefix stay in the arena as the sampling cache). The velocity lands
 * in f->a.vpred [Na, A] (= [S, H, A]). Every layer's activations are kept. */
vla_status vla_pi05_forward(vla_policy *p, const vla_batch *b, const float *x_t, const float *t) {
    return forward(p, b, x_t, t, false, false);
}

/* ---- loss ------------------------------------------------------------------------------------- */

static vla_status pi05_loss(vla_policy *p, const vla_batch *b, bool training, vla_loss_info *info) {
    (void)training; /* π0.5 has no dropout */
    pi05_impl *I = pi05_of(p);
    const vla_policy_config *c = &p->cfg;
    VLA_TRY(vla_batch_check(b, c));
    if (!b->actions || !b->action_is_pad)
        return vla_error(VLA_ERR_INVALID_ARG, "pi05 loss: the batch has no actions / action_is_pad");
    int32_t S = b->n_samples;
    int64_t Hz = c->action.horizon, A = c->action.action_dim, n = Hz * A;
    pi05_arena_begin(I);
    I->have_fwd = false;
    const vla_ops *ops = p->tops;
    /* the flow draws on the host (t, noise), then uploaded with the actions */
    const int64_t hsizes[] = {S, S * n};
    float *hd[2];
    VLA_TRY(vla_acts_from_arena(&I->harena, hsizes, 2, hd));
    float *t = hd[0], *noise = hd[1];
#define PI05_LOSS(X) X(actions, S * n) X(noise, S * n) X(x_t, S * n) X(target, S * n) X(dpred, S * n)
    const int64_t sizes[] = {PI05_LOSS(VLA_ACTS_SIZE)};
    struct {
        PI05_LOSS(VLA_ACTS_FIELD)
    } ls;
    VLA_TRY(vla_acts_from_arena(&I->arena, sizes, VLA_ACTS_COUNT(sizes), (float **)&ls));
    I->dpred = ls.dpred;
    double tsum = 0;
    for (int32_t s = 0; s < S; s++) {
        uint64_t key = b->sample_keys ? b->sample_keys[s] : (uint64_t)s;
        t[s] = vla_flow_sample_time(&I->flow, b->seed, key);
        tsum += t[s];
        vla_flow_sample_noise(b->seed, key, VLA_FLOW_RNG_NOISE, noise + s * n, n);
    }
    ops->to_device(ls.actions, b->actions, (size_t)(S * n) * sizeof(float));
    ops->to_device(ls.noise, noise, (size_t)(S * n) * sizeof(float));
    ops->flow_interpolate(VLA_FLOW_PI05, ls.x_t, ls.target, ls.actions, ls.noise, t, S, n);
    VLA_TRY(forward(p, b, ls.x_t, t, p->recompute_layers, true));
    double loss = vla_flow_masked_mse(ops, I->f.a.vpred, ls.target, S, Hz, A, b->action_is_pad, b->real_action_dim,
                                      VLA_MSE_MEAN_REAL, b->loss_divisor, I->dpred, p->loss_sum);
    if (info) {
        memset(info, 0, sizeof *info);
        info->loss = loss;
        info->real_entries = vla_batch_real_entries(b, c);
        info->mean_time = tsum / S;
        info->tokens = b->n_tokens;
        info->flops = I->flops;
    }
    p->act_peak_bytes = I->arena.peak;
    return VLA_OK;
}

/* ---- backward -------------------------------------------------------------------------------- */

/* The velocity head and the final AdaRMS: ∂ into dxa (the last layer's output) and dcond. */
static vla_status head_backward(vla_policy *p, pi05_impl *I, bwd_scratch *g) {
    const fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    PI05_DIMS(I, &p->cfg, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    vla_linear_backward_fresh(ops, g->dtmp, I->W.aout_w.g, I->W.aout_b.g, I->dpred, f->a.af, I->W.aout_w.w, Na, We, A);
    ops->fill(g->dmod, 0.0f, S * 3 * We);
    VLA_TRY(vla_adarmsnorm_backward(ops, g->dxa, g->dmod, g->dtmp, f->a.xa + L * Na * We, f->a.mod_f, f->a.arstd_f,
                                    f->m.acu, f->S, Na, We));
    vla_linear_backward(ops, g->dcond, I->W.fin_w.g, I->W.fin_b.g, g->dmod, f->a.cond, I->W.fin_w.w, S, We, 3 * We);
    const vla_wg head[] = {I->W.aout_w, I->W.aout_b, I->W.fin_w, I->W.fin_b};
    vla_policy_ready_wgs(p, head, 4);
    return VLA_OK;
}

/* One layer backward: both streams' out halves (∂ of the attention output
 * scattered into token order), the joint attention, both in halves. */
static vla_status layer_backward(vla_policy *p, pi05_impl *I, int64_t li, bwd_scratch *g, vla_block_scratch *sp,
                                 vla_block_scratch *sa) {
    const fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    PI05_DIMS(I, &p->cfg, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    layer_view v;
    vla_pi05_view_layer(I, &p->cfg, li, &v);
    vla_block_io iop = prefix_io(f), ioa = action_io(f);
    const float *xp = f->a.xp + li * Np * W, *xa = f->a.xa + li * Na * We;
    ops->fill(g->dO, 0.0f, T * HD);
    gather_rows(ops, v.a.att, v.O, f->m.act_idx, Na, HD);
    VLA_TRY(vla_block_attn_out_backward(ops, &I->ex_cfg, &I->W.ex[li], &ioa, &v.a, sa, g->dxa, g->dcond));
    scatter_rows(ops, g->dO, sa->datt, f->m.act_idx, Na, HD);
    if (li < L - 1) { /* (the last layer's prefix output was never computed: its gradient is 0) */
        gather_rows(ops, v.p.att, v.O, f->m.pre_idx, Np, HD);
        VLA_TRY(vla_block_attn_out_backward(ops, &I->lm_cfg, &I->W.lm[li], &iop, &v.p, sp, g->dxp, NULL));
        scatter_rows(ops, g->dO, sp->datt, f->m.pre_idx, Np, HD);
    }
    ops->fill(g->dq, 0.0f, T * HD);
    ops->fill(g->dk, 0.0f, T * KD);
    ops->fill(g->dv, 0.0f, T * KD);
    vla_attn_seqs seqs = {f->S, f->m.cu, f->m.grp};
    vla_attn_config ac = vla_block_attn_config(&I->attn, &I->W.lm[li]);
    VLA_TRY(vla_attention_backward(ops, &ac, g->dq, g->dk, g->dv, g->dO, v.Q, v.K, v.V, v.O, v.lse, &seqs, &seqs,
                                   NULL));
    gather_rows(ops, sp->dq, g->dq, f->m.pre_idx, Np, HD);
    gather_rows(ops, sp->dk, g->dk, f->m.pre_idx, Np, KD);
    gather_rows(ops, sp->dv, g->dv, f->m.pre_idx, Np, KD);
    VLA_TRY(vla_block_attn_in_backward(ops, &I->lm_cfg, &I->W.lm[li], &iop, xp, &v.p, sp, g->dxp, NULL, NULL));
    gather_rows(ops, sa->dq, g->dq, f->m.act_idx, Na, HD);
    gather_rows(ops, sa->dk, g->dk, f->m.act_idx, Na, KD);
    gather_rows(ops, sa->dv, g->dv, f->m.act_idx, Na, KD);
    VLA_TRY(vla_block_attn_in_backward(ops, &I->ex_cfg, &I->W.ex[li], &ioa, xa, &v.a, sa, g->dxa, NULL, g->dcond));
    /* each layer's weights serve this layer only: final now */
    vla_policy_ready_wgs(p, (const vla_wg *)&I->W.ex[li], VLA_BLOCK_N_WG);
    vla_policy_ready_wgs(p, (const vla_wg *)&I->W.lm[li], VLA_BLOCK_N_WG);
    return VLA_OK;
}

/* The action embedding and the time MLP: cond = swish(tm2), tm2 = out(swish(tm1)), tm1 = in(temb). */
static void action_side_backward(vla_policy *p, pi05_impl *I, bwd_scratch *g) {
    const fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    PI05_DIMS(I, &p->cfg, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    const pi05_weights *W_ = &I->W;
    vla_linear_backward(ops, NULL, W_->ain_w.g, W_->ain_b.g, g->dxa, f->a.xin, W_->ain_w.w, Na, A, We);
    const vla_wg ain[] = {W_->ain_w, W_->ain_b};
    vla_policy_ready_wgs(p, ain, 2);
    vla_silu_backward(ops, g->dtmp, g->dcond, f->a.tm2, S * We); /* writes dtmp (ops.h) */
    vla_linear_backward_fresh(ops, g->dtmp2, W_->tout_w.g, W_->tout_b.g, g->dtmp, f->a.tm1s, W_->tout_w.w, S, We, We);
    vla_silu_backward(ops, g->dtmp, g->dtmp2, f->a.tm1, S * We);
    vla_linear_backward(ops, NULL, W_->tin_w.g, W_->tin_b.g, g->dtmp, f->a.temb, W_->tin_w.w, S, We, We);
    const vla_wg tm[] = {W_->tin_w, W_->tin_b, W_->tout_w, W_->tout_b}; /* after every layer's dcond */
    vla_policy_ready_wgs(p, tm, 4);
}

/* Prefix embeddings: text rows into the table (×sqrt(W)), image rows into the projector → ViT. */
static vla_status prefix_backward(vla_policy *p, pi05_impl *I, bwd_scratch *g) {
    const fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    PI05_DIMS(I, &p->cfg, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    /* text rows into the table (×sqrt(W)), in token order (repeated ids add up deterministically) */
    if (I->W.embed.g && f->n_txt > 0)
        ops->add_rows(I->W.embed.g, W, f->m.txt_id, g->dxp, W, f->m.txt_dst, f->n_txt, W, sqrtf((float)W));
    vla_policy_ready_wgs(p, &I->W.embed, 1);
    if (n_it == 0 || !(I->W.proj_w.g || I->W.proj_b.g || vt)) return VLA_OK;
    ops->fill(g->d_emb, 0.0f, n_it * W);
    if (vt) ops->fill(g->d_vit, 0.0f, n_it * Dv);
    ops->add_rows(g->d_emb, W, f->m.img_src, g->dxp, W, f->m.img_dst, f->n_imgrow, W, 1.0f);
    vla_linear_backward(ops, vt ? g->d_vit : NULL, I->W.proj_w.g, I->W.proj_b.g, g->d_emb, f->a.vit_out, I->W.proj_w.w,
                        n_it, Dv, W);
    const vla_wg proj[] = {I->W.proj_w, I->W.proj_b};
    vla_policy_ready_wgs(p, proj, 2);
    if (vt) VLA_TRY(vla_vit_backward(&I->W.vit, NULL, g->d_vit, f->a.vit_acts, g->vit_scratch, f->n_img));
    return VLA_OK;
}

static vla_status backward_in(vla_policy *p, pi05_impl *I, bwd_scratch *g) {
    const fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    PI05_DIMS(I, &p->cfg, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    vla_block_scratch sp, sa;
    vla_block_scratch_carve(&I->lm_cfg, Np, 0, (int32_t)S, g->sp, &sp);
    vla_block_scratch_carve(&I->ex_cfg, Na, 0, (int32_t)S, g->sa, &sa);
    vla_policy_ready_begin(p);
    vla_policy_ready_wgs(p, &I->W.lm_norm, 1); /* never used: final from the start */
    ops->fill(g->dxp, 0.0f, Np * W);
    ops->fill(g->dxa, 0.0f, Na * We);
    ops->fill(g->dcond, 0.0f, S * We);
    VLA_TRY(head_backward(p, I, g));
    for (int64_t li = L - 1; li >= 0; li--) {
        /* recompute: the slot holds the last layer's forward; every other
         * layer's runs again from its kept input (its output, rewritten, is
         * the same bits). Model FLOPs count the forward once. */
        if (f->recompute && li < L - 1) {
            double flops = I->flops;
            VLA_TRY(layer_forward(p, I, li));
            I->flops = flops;
        }
        VLA_TRY(layer_backward(p, I, li, g, &sp, &sa));
    }
    action_side_backward(p, I, g);
    VLA_TRY(prefix_backward(p, I, g));
    vla_policy_ready_rest(p); /* what this batch did not reach, and frozen parameters */
    return VLA_OK;
}

typedef struct {
    vla_policy *p;
    pi05_impl *I;
    bwd_scratch *g;
} train_bwd;

static vla_status train_bwd_body(void *v) {
    train_bwd *r = v;
    return backward_in(r->p, r->I, r->g);
}

static vla_status pi05_backward(vla_policy *p) {
    pi05_impl *I = pi05_of(p);
    if (!I->have_fwd) return vla_error(VLA_ERR_INVALID_ARG, "pi05 backward: no loss computed since the last step");
    const fwd_state *f = &I->f;
    PI05_DIMS(I, &p->cfg, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    vla_arena_mark mark = vla_arena_get_mark(&I->arena);
    const int64_t sizes[] = {PI05_GRADS(VLA_ACTS_SIZE)};
    bwd_scratch g;
    vla_status st = vla_acts_from_arena(&I->arena, sizes, VLA_ACTS_COUNT(sizes), (float **)&g);
    if (st == VLA_OK) { /* a captured region (above), but with gradient-ready hooks (host calls) */
        const struct {
            bwd_scratch g;
            const void *dpred, *grads;
        } extra = {g, I->dpred, p->grads};
        vla_key key = {0};
        if (p->grad_ready) key.failed = true;
        else train_key(p, I, "pi05 train bwd", &extra, sizeof extra, &key);
        train_bwd r = {p, I, &g};
        st = vla_region_run(p->tops, &I->train_bwd_outs, &key, &I->arena, train_bwd_body, &r, NULL, 0);
    }
    p->act_peak_bytes = I->arena.peak;
    vla_arena_rewind(&I->arena, mark);
    return st;
}

/* ---- the vision tower, for its own tests and benchmarks ---- */

vla_vit *vla_pi05_vit(vla_policy *p) {
    return p && p->cfg.family == &vla_pi05_family ? &pi05_of(p)->W.vit : NULL;
}

/* ---- creation ---------------------------------------------------------------------------------- */

static void pi05_destroy(vla_policy *p) {
    pi05_impl *I = pi05_of(p);
    if (I) {
        vla_vit_release(&I->W.vit);
        vla_arena_free(&I->arena);
        vla_arena_free(&I->harena);
        vla_arena_free(&I->params_arena);
        vla_flow_chunk_free(p->tops, &I->chunk);
        vla_region_outs_free(I->train_fwd_outs);
        vla_region_outs_free(I->train_bwd_outs);
        free(I);
    }
    vla_policy_free_params(p);
    free(p);
}

static const vla_policy_ops PI05_OPS = {
    "pi05", pi05_destroy, NULL, NULL, NULL, /* init, tokenize, layout: the family's */
    pi05_loss, pi05_backward, vla_pi05_sample_cached, vla_pi05_sample_with,
};

/* The two layer kinds as blocks: Gemma (prefix) and the AdaRMS expert (actions). */
static void block_configs(pi05_impl *I, const vla_policy_config *c) {
    const vla_lm_config *l = &c->language;
    vla_block_config b = {0};
    b.norm1 = b.norm2 = VLA_BLOCK_NORM_RMS_1P;
    b.norm_eps = (float)l->norm_eps;
    b.attn = (vla_attn_config){.n_heads = (int32_t)l->heads, .n_kv_heads = (int32_t)l->kv_heads,
                               .head_dim = (int32_t)l->head_dim};
    b.rope_theta = l->rope_theta;
    b.external_attention = true;
    b.dim = l->width;
    b.mlp = (vla_mlp_config){.gated = true, .act = VLA_ACT_GELU_TANH, .dim = l->width, .hidden = l->mlp};
    I->lm_cfg = b;
    b.norm1 = b.norm2 = VLA_BLOCK_NORM_ADARMS;
    b.dim = b.cond_dim = c->expert.width;
    b.mlp = (vla_mlp_config){.gated = true, .act = VLA_ACT_GELU_TANH, .dim = c->expert.width, .hidden = c->expert.mlp};
    I->ex_cfg = b;
    I->attn = b.attn;
}

vla_status vla_pi05_create(const vla_policy_config *cfg, const vla_ops *ops, vla_policy **out) {
    *out = NULL;
    if (cfg->family != &vla_pi05_family)
        return vla_error(VLA_ERR_INVALID_ARG, "pi05: config '%s' is not pi05", cfg->name);
    vla_policy *p = calloc(1, sizeof *p);
    pi05_impl *I = calloc(1, sizeof *I);
    if (!p || !I) {
        free(p), free(I);
        return vla_error(VLA_ERR_NOMEM, "pi05: out of memory");
    }
    p->ops = &PI05_OPS;
    p->cfg = *cfg;
    p->tops = ops;
    p->tokenizer = vla_tokenizer_bytes();
    p->impl = I;
    vla_arena_init_with(&I->arena, 8u << 20, ops->alloc, ops->free);
    vla_arena_init(&I->harena, 1u << 20);
    vla_arena_init(&I->params_arena, 0);
    vla_flow_from_config(&I->flow, cfg);
    block_configs(I, cfg);
    vla_status st = vla_policy_alloc_params(p);
    if (st == VLA_OK) st = vla_policy_open_tokenizer(p);
    if (st == VLA_OK) st = vla_param_bind(&p->cfg, &p->specs, p->weights, p->grads, &I->params_arena, &I->W, &p->blocks);
    if (st == VLA_OK) st = vla_vit_setup(&I->W.vit, &cfg->vision, ops);
    if (st == VLA_OK) st = vla_block_check(&I->lm_cfg);
    if (st == VLA_OK) st = vla_block_check(&I->ex_cfg);
    if (st == VLA_OK) { /* whether they keep bf16 copies follows the precision (policy/precision.h) */
        vla_policy_block_config(p, &I->lm_cfg);
        vla_policy_block_config(p, &I->ex_cfg);
        vla_policy_block_config(p, &I->W.vit.block);
    }
    I->W.vit.owner = p; /* the ViT's backward reports its layers' gradients ready */
    if (st != VLA_OK) {
        pi05_destroy(p);
        return vla_error_context(st, "pi05 '%s'", cfg->name);
    }
    vla_policy_default_init(p, 0);
    *out = p;
    return VLA_OK;
}
