/* pi05.c — the π0.5 network behind policy.h: loss (forward keeping its
 * activations), backward into p->grads, and action sampling with a prefix
 * KV cache (pi05.h has the conventions; pi05_family.c the inventory).
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
#include "nn/linear.h"
#include "nn/time_embedding.h"
#include "policy/flow.h"
#include "policy/pi05_internal.h"

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
    X(xp, (L + 1) * Np * W) /* residual streams at each layer's input */                                        \
    X(xa, (L + 1) * Na * We)                                                                                     \
    X(mod_f, act * S * 3 * We)                                                                                   \
    X(af, Na * We)                                                                                               \
    X(arstd_f, Na)                                                                                               \
    X(vpred, Na * A)                                                                                             \
    X(Q, L * T * HD)        /* per layer, token order, RoPE applied */                                          \
    X(K, L * T * KD)                                                                                             \
    X(V, L * T * KD)                                                                                             \
    X(O, L * T * HD)                                                                                             \
    X(lse, L * T * H)                                                                                            \
    X(blk_p, L * bp)        /* per layer: the two blocks' own saved activations */                              \
    X(blk_a, L * ba)                                                                                             \
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
    double flops;
} pi05_impl;

static pi05_impl *impl_of(vla_policy *p) { return (pi05_impl *)p->impl; }

/* Every size the tables use, for a batch of S samples, T tokens, Np prefix
 * and Na action rows, n_img images. */
#define PI05_DIMS(I, c, S_, T_, Np_, Na_, nimg_, act_)                                                           \
    const vla_lm_config *l_ = &(c)->language;                                                                    \
    const int64_t S = (S_), T = (T_), Np = (Np_), Na = (Na_), act = (act_), L = l_->depth;                       \
    const int64_t W = l_->width, We = (c)->expert.width, H = l_->heads, HD = l_->heads * l_->head_dim;           \
    const int64_t KD = l_->kv_heads * l_->head_dim, A = (c)->action.action_dim, Dv = (c)->vision.width;         \
    const int64_t n_it = (nimg_) * (I)->W.vit.tokens, mx = Np > Na ? Np : Na, Wm = W > We ? W : We;             \
    const int64_t n_px = (nimg_) * (c)->vision.channels * (c)->vision.image_size * (c)->vision.image_size;       \
    const int64_t vit = (nimg_) > 0 ? vla_vit_acts_floats(&(I)->W.vit, (nimg_)) : 0;                              \
    const int64_t bp = vla_block_acts_floats(&(I)->lm_cfg, Np, 0, (int32_t)S);                                   \
    const int64_t ba = vla_block_acts_floats(&(I)->ex_cfg, Na, 0, (int32_t)S);                                   \
    const int64_t bsp = vla_block_scratch_floats(&(I)->lm_cfg, Np, 0, (int32_t)S);                               \
    const int64_t bsa = vla_block_scratch_floats(&(I)->ex_cfg, Na, 0, (int32_t)S);                               \
    const int64_t vt = (nimg_) > 0 && vla_vit_trains(&(I)->W.vit);                                                \
    const int64_t vs = vt ? vla_vit_scratch_floats(&(I)->W.vit, (nimg_), false) : 0;                             \
    (void)S, (void)T, (void)Np, (void)Na, (void)act, (void)L, (void)W, (void)We, (void)H, (void)HD, (void)KD,   \
        (void)A, (void)Dv, (void)n_it, (void)mx, (void)Wm, (void)vit, (void)bp, (void)ba, (void)bsp, (void)bsa,   \
        (void)vt, (void)vs, (void)n_px

/* Start a new lifetime in both arenas. Once a step has shown its peak, an
 * arena is rebuilt with one chunk that holds it, so later steps reuse the
 * same memory instead of freeing and faulting in new chunks. */
static void arena_begin_one(vla_arena *a) {
    size_t peak = a->peak;
    if (peak > a->chunk_size) vla_arena_rebuild(a, peak + peak / 4 + 4096);
    else vla_arena_reset(a);
}
static void arena_begin(pi05_impl *I) {
    arena_begin_one(&I->arena);
    arena_begin_one(&I->harena);
}

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

static void lin(pi05_impl *I, const vla_ops *ops, float *out, const float *in, vla_wg w, vla_wg b, int64_t n,
                int64_t din, int64_t dout) {
    vla_linear_forward(ops, out, in, w.w, b.w, n, din, dout);
    I->flops += 2.0 * (double)n * (double)din * (double)dout;
}

/* The time condition of S samples: cond = swish(out(swish(in(sincos(t))))).
 * t [S] is host; tdev receives it. */
static void time_forward(vla_policy *p, pi05_impl *I, const float *t, float *tdev, int32_t S, float *temb, float *tm1,
                         float *tm1s, float *tm2, float *cond) {
    const vla_policy_config *c = &p->cfg;
    const vla_ops *ops = p->tops;
    int64_t We = c->expert.width;
    vla_temb_config tc = {VLA_TEMB_PERIODS, We, c->flow.time_min_period, c->flow.time_max_period, 0, false};
    ops->to_device(tdev, t, (size_t)S * sizeof(float));
    vla_time_embedding_forward(ops, &tc, temb, tdev, S);
    lin(I, ops, tm1, temb, I->W.tin_w, I->W.tin_b, S, We, We);
    vla_silu_forward(ops, tm1s, tm1, S * We);
    lin(I, ops, tm2, tm1s, I->W.tout_w, I->W.tout_b, S, We, We);
    vla_silu_forward(ops, cond, tm2, S * We);
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* (query, key) pairs the group rule allows, summed over samples (for FLOPs). */
static double attn_pairs(const int32_t *cu, int32_t S, const int32_t *grp) {
    double pairs = 0;
    int64_t maxlen = 0;
    for (int32_t s = 0; s < S; s++)
        if (cu[s + 1] - cu[s] > maxlen) maxlen = cu[s + 1] - cu[s];
    int32_t *tmp = malloc((size_t)(maxlen ? maxlen : 1) * sizeof *tmp);
    if (!tmp) return 0;
    for (int32_t s = 0; s < S; s++) {
        int64_t n = cu[s + 1] - cu[s];
        memcpy(tmp, grp + cu[s], (size_t)n * sizeof *tmp);
        qsort(tmp, (size_t)n, sizeof *tmp, cmp_i32);
        for (int64_t i = 0; i < n;) { /* a query of group g sees all keys with group <= g */
            int64_t j = i;
            while (j < n && tmp[j] == tmp[i]) j++;
            pairs += (double)(j - i) * (double)j;
            i = j;
        }
    }
    free(tmp);
    return pairs;
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

/* Layer li's saved activations: the two blocks' tables (their attention
 * buffers point at the shared temporaries) and the token-order Q K V O lse. */
typedef struct {
    vla_block_acts p, a;
    float *Q, *K, *V, *O, *lse;
} layer_view;

static void view_layer(pi05_impl *I, const vla_policy_config *c, int64_t li, layer_view *v) {
    const fwd_state *f = &I->f;
    PI05_DIMS(I, c, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    vla_block_acts_carve(&I->lm_cfg, Np, 0, (int32_t)S, f->a.blk_p + li * bp, &v->p);
    vla_block_acts_carve(&I->ex_cfg, Na, 0, (int32_t)S, f->a.blk_a + li * ba, &v->a);
    v->p.q = v->a.q = f->a.tq, v->p.k = v->a.k = f->a.tk, v->p.v = v->a.v = f->a.tv;
    v->p.att = v->a.att = f->a.to;
    v->Q = f->a.Q + li * T * HD, v->K = f->a.K + li * T * KD, v->V = f->a.V + li * T * KD;
    v->O = f->a.O + li * T * HD, v->lse = f->a.lse + li * T * H;
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
static vla_status layer_forward(vla_policy *p, pi05_impl *I, int64_t li, double pairs) {
    fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    PI05_DIMS(I, &p->cfg, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    layer_view v;
    view_layer(I, &p->cfg, li, &v);
    vla_block_io iop = prefix_io(f), ioa = action_io(f);
    float *xp = f->a.xp + li * Np * W, *xa = f->a.xa + li * Na * We;
    VLA_TRY(stream_in(I, ops, &I->lm_cfg, &I->W.lm[li], &iop, xp, &v.p, f->m.pre_idx, &v));
    if (act) VLA_TRY(stream_in(I, ops, &I->ex_cfg, &I->W.ex[li], &ioa, xa, &v.a, f->m.act_idx, &v));
    vla_attn_seqs seqs = {f->S, f->m.cu, f->m.grp};
    vla_attn_config ac = vla_block_attn_config(&I->attn, &I->W.lm[li]); /* the joint attention: the LM's precision */
    VLA_TRY(vla_attention_forward(ops, &ac, v.O, v.lse, v.Q, v.K, v.V, &seqs, &seqs, NULL));
    I->flops += 4.0 * pairs * (double)HD;
    if (li < L - 1) VLA_TRY(stream_out(I, ops, &I->lm_cfg, &I->W.lm[li], &iop, xp, xp + Np * W, &v.p, f->m.pre_idx, &v));
    if (act) VLA_TRY(stream_out(I, ops, &I->ex_cfg, &I->W.ex[li], &ioa, xa, xa + Na * We, &v.a, f->m.act_idx, &v));
    return VLA_OK;
}

/* Prefix embeddings: images → ViT → projector; text → table·sqrt(W). */
static vla_status embed_prefix(vla_policy *p, pi05_impl *I, const vla_batch *b) {
    fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    const vla_lm_config *l = &p->cfg.language;
    int64_t W = l->width, Dv = p->cfg.vision.width, n_it = f->n_img * I->W.vit.tokens;
    for (int64_t i = 0; i < f->n_txt; i++)
        if (f->m.txt_id[i] < 0 || f->m.txt_id[i] >= l->vocab)
            return vla_error(VLA_ERR_INVALID_ARG, "pi05: token id %d outside the vocabulary", f->m.txt_id[i]);
    if (f->n_img > 0) {
        const vla_vit_config *vc = &p->cfg.vision;
        ops->to_device(f->a.images, b->images,
                       (size_t)(f->n_img * vc->channels * vc->image_size * vc->image_size) * sizeof(float));
        VLA_TRY(vla_vit_forward(&I->W.vit, f->a.vit_out, f->a.vit_acts, f->a.images, f->n_img));
        I->flops += vla_vit_forward_flops(&I->W.vit, f->n_img);
        lin(I, ops, f->a.img_emb, f->a.vit_out, I->W.proj_w, I->W.proj_b, n_it, Dv, W);
        ops->copy_rows(f->a.xp, W, f->m.img_dst, f->a.img_emb, W, f->m.img_src, f->n_imgrow, W, 1.0f);
    }
    /* text rows: the embedding table times sqrt(W) (Gemma's normaliser) */
    if (f->n_txt > 0) ops->copy_rows(f->a.xp, W, f->m.txt_dst, I->W.embed.w, W, f->m.txt_id, f->n_txt, W, sqrtf((float)W));
    return VLA_OK;
}

/* Forward of a packed batch. x_t [S, H, A] (backend) and t [S] (host) are
 * the action side's input (both NULL for a prefix-only batch: then only the
 * LM runs, and the per-layer K/V of the prefix stay in the arena as the
 * sampling cache). The velocity lands in f->a.vpred [Na, A] (= [S, H, A]). */
static vla_status forward(vla_policy *p, const vla_batch *b, const float *x_t, const float *t) {
    pi05_impl *I = impl_of(p);
    fwd_state *f = &I->f;
    const vla_policy_config *c = &p->cfg;
    I->have_fwd = false;
    I->flops = 0;
    f->act = x_t != NULL;
    VLA_TRY(build_maps(p, I, b, f->act));
    PI05_DIMS(I, c, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    const int64_t sizes[] = {PI05_ACTS(VLA_ACTS_SIZE)};
    VLA_TRY(vla_acts_from_arena(&I->arena, sizes, VLA_ACTS_COUNT(sizes), (float **)&f->a));
    VLA_TRY(embed_prefix(p, I, b));
    if (act) { /* action side: time condition and action embeddings (rows s·H + k: checked in build_maps) */
        time_forward(p, I, t, f->a.tdev, f->S, f->a.temb, f->a.tm1, f->a.tm1s, f->a.tm2, f->a.cond);
        p->tops->copy(f->a.xin, x_t, Na * A);
        lin(I, p->tops, f->a.xa, f->a.xin, I->W.ain_w, I->W.ain_b, Na, A, We);
    }
    double pairs = attn_pairs(f->m.cu, f->S, f->m.grp);
    for (int64_t li = 0; li < L; li++) VLA_TRY(layer_forward(p, I, li, pairs));
    if (act) {
        float *xL = f->a.xa + L * Na * We;
        lin(I, p->tops, f->a.mod_f, f->a.cond, I->W.fin_w, I->W.fin_b, S, We, 3 * We);
        VLA_TRY(vla_adarmsnorm_forward(p->tops, f->a.af, f->a.arstd_f, xL, f->a.mod_f, f->m.acu, f->S, Na, We,
                                       (float)c->language.norm_eps));
        lin(I, p->tops, f->a.vpred, f->a.af, I->W.aout_w, I->W.aout_b, Na, We, A);
        I->have_fwd = true;
    }
    return VLA_OK;
}

/* ---- loss ------------------------------------------------------------------------------------- */

static vla_status pi05_loss(vla_policy *p, const vla_batch *b, bool training, vla_loss_info *info) {
    (void)training; /* π0.5 has no dropout */
    pi05_impl *I = impl_of(p);
    const vla_policy_config *c = &p->cfg;
    VLA_TRY(vla_batch_check(b, c));
    if (!b->actions || !b->action_is_pad)
        return vla_error(VLA_ERR_INVALID_ARG, "pi05 loss: the batch has no actions / action_is_pad");
    int32_t S = b->n_samples;
    int64_t Hz = c->action.horizon, A = c->action.action_dim, n = Hz * A;
    arena_begin(I);
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
    VLA_TRY(forward(p, b, ls.x_t, t));
    double loss = vla_flow_masked_mse(ops, I->f.a.vpred, ls.target, S, Hz, A, b->action_is_pad, b->real_action_dim,
                                      VLA_MSE_MEAN_REAL, b->loss_divisor, I->dpred);
    if (info) {
        memset(info, 0, sizeof *info);
        info->loss = loss;
        info->real_entries = vla_batch_real_entries(b, c);
        info->mean_time = tsum / S;
        info->tokens = b->n_tokens;
        info->flops = I->flops;
    }
    return VLA_OK;
}

/* ---- backward -------------------------------------------------------------------------------- */

/* The velocity head and the final AdaRMS: ∂ into dxa (the last layer's output) and dcond. */
static vla_status head_backward(vla_policy *p, pi05_impl *I, bwd_scratch *g) {
    const fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    PI05_DIMS(I, &p->cfg, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    ops->fill(g->dtmp, 0.0f, Na * We);
    vla_linear_backward(ops, g->dtmp, I->W.aout_w.g, I->W.aout_b.g, I->dpred, f->a.af, I->W.aout_w.w, Na, We, A);
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
    view_layer(I, &p->cfg, li, &v);
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
    ops->fill(g->dtmp, 0.0f, S * We);
    vla_silu_backward(ops, g->dtmp, g->dcond, f->a.tm2, S * We);
    ops->fill(g->dtmp2, 0.0f, S * We);
    vla_linear_backward(ops, g->dtmp2, W_->tout_w.g, W_->tout_b.g, g->dtmp, f->a.tm1s, W_->tout_w.w, S, We, We);
    ops->fill(g->dtmp, 0.0f, S * We);
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
    for (int64_t li = L - 1; li >= 0; li--) VLA_TRY(layer_backward(p, I, li, g, &sp, &sa));
    action_side_backward(p, I, g);
    VLA_TRY(prefix_backward(p, I, g));
    vla_policy_ready_rest(p); /* what this batch did not reach, and frozen parameters */
    return VLA_OK;
}

static vla_status pi05_backward(vla_policy *p) {
    pi05_impl *I = impl_of(p);
    if (!I->have_fwd) return vla_error(VLA_ERR_INVALID_ARG, "pi05 backward: no loss computed since the last step");
    const fwd_state *f = &I->f;
    PI05_DIMS(I, &p->cfg, f->S, f->T, f->Np, f->Na, f->n_img, f->act);
    vla_arena_mark mark = vla_arena_get_mark(&I->arena);
    const int64_t sizes[] = {PI05_GRADS(VLA_ACTS_SIZE)};
    bwd_scratch g;
    vla_status st = vla_acts_from_arena(&I->arena, sizes, VLA_ACTS_COUNT(sizes), (float **)&g);
    if (st == VLA_OK) st = backward_in(p, I, &g);
    vla_arena_rewind(&I->arena, mark);
    return st;
}

/* ---- sampling ----------------------------------------------------------------------------------- */

typedef struct {
    vla_policy *p;
    vla_batch b;      /* the observations packed (host) */
    float *tvec;      /* [S] host */
    vla_arena_mark mark, hmark; /* after the prefix-only forward (cached sampling) */
} sample_ctx;

/* Uncached: the whole sequence through the training forward. */
static vla_status velocity_uncached(void *vctx, float t, const float *x, float *v, int64_t n) {
    sample_ctx *ctx = vctx;
    pi05_impl *I = impl_of(ctx->p);
    arena_begin(I);
    for (int32_t s = 0; s < ctx->b.n_samples; s++) ctx->tvec[s] = t;
    VLA_TRY(forward(ctx->p, &ctx->b, x, ctx->tvec));
    ctx->p->tops->copy(v, I->f.a.vpred, n);
    I->have_fwd = false;
    return VLA_OK;
}

/* The expert's rows of one Euler step (cached sampling): S·H rows, RoPE
 * positions after each sample's prefix, attention group 1 (prefix-LM).
 * keep (real-time chunking's VJP, policy/rtc.h): every layer keeps its own
 * input, block activations, q/k/v/o and log-sum-exp instead of sharing one. */
#define PI05_STEP(X)                                                                                             \
    X(acu, S + 1)                                                                                                \
    X(apos, Na)                                                                                                  \
    X(agrp, Na)
#define PI05_STEP_ACTS(X)                                                                                        \
    X(tdev, S)                                                                                                   \
    X(temb, S * We)                                                                                              \
    X(tm1, S * We)                                                                                               \
    X(tm1s, S * We)                                                                                              \
    X(tm2, S * We)                                                                                               \
    X(cond, S * We)                                                                                              \
    X(xs, (keep ? L + 1 : 2) * Na * We)                                                                          \
    X(blk, (keep ? L : 1) * ba)                                                                                  \
    X(q, (keep ? L : 1) * Na * HD)                                                                               \
    X(k, (keep ? L : 1) * Na * KD)                                                                               \
    X(v, (keep ? L : 1) * Na * KD)                                                                               \
    X(o, (keep ? L : 1) * Na * HD)                                                                               \
    X(lse, keep * L * Na * H)                                                                                    \
    X(mod, S * 3 * We)                                                                                           \
    X(an, Na * We)                                                                                               \
    X(arstd, keep * Na)

typedef struct {
    PI05_STEP(VLA_ACTS_FIELD_I32)
} step_maps;
typedef struct {
    PI05_STEP_ACTS(VLA_ACTS_FIELD)
} step_acts;

/* One pass of the expert alone: its queries against the prefix K/V of each
 * layer (computed once by a prefix-only forward) and its own new K/V; what
 * it computed stays in *m, *a (in the arena, from ctx->mark on). */
static vla_status expert_pass(sample_ctx *ctx, float t, const float *x, float *v, bool keep, step_maps *m,
                              step_acts *a) {
    vla_policy *p = ctx->p;
    pi05_impl *I = impl_of(p);
    const fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    const vla_policy_config *c = &p->cfg;
    const int64_t Hz = c->action.horizon;
    PI05_DIMS(I, c, f->S, f->T, f->Np, (int64_t)f->S * Hz, f->n_img, 1);
    vla_arena_rewind(&I->arena, ctx->mark);
    vla_arena_rewind(&I->harena, ctx->hmark);
    const int64_t isz[] = {PI05_STEP(VLA_ACTS_SIZE)}, fsz[] = {PI05_STEP_ACTS(VLA_ACTS_SIZE)};
    VLA_TRY(vla_acts_from_arena_i32(&I->harena, isz, VLA_ACTS_COUNT(isz), (int32_t **)m));
    VLA_TRY(vla_acts_from_arena(&I->arena, fsz, VLA_ACTS_COUNT(fsz), (float **)a));
    int32_t *acu = m->acu, *apos = m->apos, *agrp = m->agrp;
    for (int32_t s = 0; s <= f->S; s++) acu[s] = (int32_t)(s * Hz);
    for (int32_t s = 0; s < f->S; s++)
        for (int64_t k = 0; k < Hz; k++) {
            apos[s * Hz + k] = (int32_t)(f->m.cu[s + 1] - f->m.cu[s] + k);
            agrp[s * Hz + k] = 1;
        }
    for (int32_t s = 0; s < f->S; s++) ctx->tvec[s] = t;
    time_forward(p, I, ctx->tvec, a->tdev, f->S, a->temb, a->tm1, a->tm1s, a->tm2, a->cond);
    lin(I, ops, a->xs, x, I->W.ain_w, I->W.ain_b, Na, A, We);
    vla_block_io io = {0};
    io.n = Na, io.n_seg = f->S, io.cu = acu, io.pos = apos, io.cond = a->cond;
    vla_attn_seqs qs = {f->S, acu, agrp}, cs = {f->S, f->m.cu, f->m.grp};
    for (int64_t li = 0; li < L; li++) {
        int64_t kl = keep ? li : 0;
        float *xin = a->xs + (keep ? li : li & 1) * Na * We, *xout = a->xs + (keep ? li + 1 : (li + 1) & 1) * Na * We;
        vla_block_acts ba_;
        vla_block_acts_carve(&I->ex_cfg, Na, 0, f->S, a->blk + kl * ba, &ba_);
        ba_.q = a->q + kl * Na * HD, ba_.k = a->k + kl * Na * KD, ba_.v = a->v + kl * Na * KD;
        ba_.att = a->o + kl * Na * HD, ba_.lse = keep ? a->lse + li * Na * H : NULL;
        layer_view lv;
        view_layer(I, c, li, &lv); /* the prefix-only forward's layer: K, V in token order */
        VLA_TRY(vla_block_attn_in(ops, &I->ex_cfg, &I->W.ex[li], &io, xin, &ba_));
        vla_attn_config ac = vla_block_attn_config(&I->attn, &I->W.ex[li]);
        VLA_TRY(vla_attention_forward_cached(ops, &ac, ba_.att, ba_.lse, ba_.q, &qs, lv.K, lv.V, &cs, ba_.k,
                                             ba_.v, &qs, NULL));
        VLA_TRY(vla_block_attn_out(ops, &I->ex_cfg, &I->W.ex[li], &io, xin, xout, &ba_));
    }
    const float *xL = a->xs + (keep ? L : L & 1) * Na * We;
    lin(I, ops, a->mod, a->cond, I->W.fin_w, I->W.fin_b, S, We, 3 * We);
    VLA_TRY(vla_adarmsnorm_forward(ops, a->an, keep ? a->arstd : NULL, xL, a->mod, acu, f->S, Na, We,
                                   (float)c->language.norm_eps));
    lin(I, ops, v, a->an, I->W.aout_w, I->W.aout_b, Na, We, A);
    return VLA_OK;
}

static vla_status velocity_cached(void *vctx, float t, const float *x, float *v, int64_t n) {
    step_maps m;
    step_acts a;
    (void)n;
    return expert_pass(vctx, t, x, v, false, &m, &a);
}

/* ---- real-time chunking: the expert's velocity field and its VJP (policy/rtc.h) ----------------------
 * The VJP runs the training backward's expert halves on a view of the
 * weights without gradients (nothing reaches p->grads), with the prefix's
 * K/V held fixed: the attention's backward sees the expert's queries
 * against [prefix K/V ; its own K/V] per sample, and only the expert rows'
 * ∂K/∂V go on. The time condition does not depend on x: its ∂ is dropped. */
typedef struct {
    sample_ctx *sc;
    step_maps m;
    step_acts a;
} pi05_field;

static vla_status field_velocity(void *vctx, float t, const float *x, float *v, int64_t n) {
    pi05_field *fc = vctx;
    (void)n;
    return expert_pass(fc->sc, t, x, v, true, &fc->m, &fc->a);
}

#define PI05_VJP(X)                                                                                              \
    X(dan, Na * We)                                                                                              \
    X(dx, Na * We)                                                                                               \
    X(dmod, S * 3 * We)                                                                                          \
    X(dcond, S * We)                                                                                             \
    X(sa, bsa)                                                                                                   \
    X(kj, (Tp + Na) * KD)                                                                                        \
    X(vj, (Tp + Na) * KD)                                                                                        \
    X(dkj, (Tp + Na) * KD)                                                                                       \
    X(dvj, (Tp + Na) * KD)
/* host maps: the joint key side, and where each prefix token / expert row lands in it */
#define PI05_VJP_I32(X) X(jcu, S + 1) X(jgrp, Tp + Na) X(jpre, Tp) X(jexp, Na)

static vla_status field_vjp(void *vctx, const float *cot, float *out, int64_t n) {
    pi05_field *fc = vctx;
    vla_policy *p = fc->sc->p;
    pi05_impl *I = impl_of(p);
    const fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    const vla_policy_config *c = &p->cfg;
    const int64_t Hz = c->action.horizon, Tp = f->T;
    PI05_DIMS(I, c, f->S, f->T, f->Np, (int64_t)f->S * Hz, f->n_img, 1);
    (void)n;
    vla_arena_mark mark = vla_arena_get_mark(&I->arena), hmark = vla_arena_get_mark(&I->harena);
    const int64_t fsz[] = {PI05_VJP(VLA_ACTS_SIZE)}, isz[] = {PI05_VJP_I32(VLA_ACTS_SIZE)};
    struct {
        PI05_VJP(VLA_ACTS_FIELD)
    } g;
    struct {
        PI05_VJP_I32(VLA_ACTS_FIELD_I32)
    } gi;
    vla_status st = vla_acts_from_arena(&I->arena, fsz, VLA_ACTS_COUNT(fsz), (float **)&g);
    if (st == VLA_OK) st = vla_acts_from_arena_i32(&I->harena, isz, VLA_ACTS_COUNT(isz), (int32_t **)&gi);
    vla_block_weights *ex = st == VLA_OK ? vla_arena_alloc(&I->harena, (size_t)L * sizeof *ex, 16) : NULL;
    if (st == VLA_OK && !ex) st = vla_error(VLA_ERR_NOMEM, "pi05: out of memory for the VJP");
    if (st != VLA_OK) return st;
    for (int64_t li = 0; li < L; li++) { /* the frozen view of the expert's layers */
        ex[li] = I->W.ex[li];
        vla_wg *w = (vla_wg *)&ex[li];
        for (int k = 0; k < VLA_BLOCK_N_WG; k++) w[k].g = NULL;
    }
    const step_maps *m = &fc->m;
    const step_acts *a = &fc->a;
    vla_block_io io = {0};
    io.n = Na, io.n_seg = f->S, io.cu = m->acu, io.pos = m->apos, io.cond = a->cond;
    vla_block_scratch sa;
    vla_block_scratch_carve(&I->ex_cfg, Na, 0, f->S, g.sa, &sa);
    /* the joint key rows per sample: the prefix's (group 0), then the expert's (group 1) */
    for (int32_t s = 0; s <= f->S; s++) gi.jcu[s] = f->m.cu[s] + (int32_t)(s * Hz);
    for (int32_t s = 0; s < f->S; s++) {
        for (int32_t r = f->m.cu[s]; r < f->m.cu[s + 1]; r++) {
            gi.jpre[r] = gi.jcu[s] + r - f->m.cu[s];
            gi.jgrp[gi.jpre[r]] = 0;
        }
        for (int64_t k = 0; k < Hz; k++) {
            gi.jexp[s * Hz + k] = (int32_t)(gi.jcu[s + 1] - Hz + k);
            gi.jgrp[gi.jexp[s * Hz + k]] = 1;
        }
    }
    vla_attn_seqs qs = {f->S, m->acu, m->agrp}, ks = {f->S, gi.jcu, gi.jgrp};
    /* head: v = aout(AdaRMS(x_L)) */
    ops->fill(g.dan, 0.0f, Na * We);
    vla_linear_backward(ops, g.dan, NULL, NULL, cot, a->an, I->W.aout_w.w, Na, We, A);
    ops->fill(g.dmod, 0.0f, S * 3 * We);
    ops->fill(g.dx, 0.0f, Na * We); /* nn/ backward passes accumulate */
    st = vla_adarmsnorm_backward(ops, g.dx, g.dmod, g.dan, a->xs + L * Na * We, a->mod, a->arstd, m->acu, f->S, Na, We);
    for (int64_t li = L - 1; st == VLA_OK && li >= 0; li--) {
        vla_block_acts ba_;
        vla_block_acts_carve(&I->ex_cfg, Na, 0, f->S, a->blk + li * ba, &ba_);
        ba_.q = a->q + li * Na * HD, ba_.k = a->k + li * Na * KD, ba_.v = a->v + li * Na * KD;
        ba_.att = a->o + li * Na * HD, ba_.lse = a->lse + li * Na * H;
        ops->fill(g.dcond, 0.0f, S * We);
        st = vla_block_attn_out_backward(ops, &I->ex_cfg, &ex[li], &io, &ba_, &sa, g.dx, g.dcond);
        if (st != VLA_OK) break;
        layer_view lv;
        view_layer(I, c, li, &lv);
        /* [prefix K/V ; expert K/V] per sample */
        ops->copy_rows(g.kj, KD, gi.jpre, lv.K, KD, NULL, Tp, KD, 1.0f);
        ops->copy_rows(g.vj, KD, gi.jpre, lv.V, KD, NULL, Tp, KD, 1.0f);
        ops->copy_rows(g.kj, KD, gi.jexp, ba_.k, KD, NULL, Na, KD, 1.0f);
        ops->copy_rows(g.vj, KD, gi.jexp, ba_.v, KD, NULL, Na, KD, 1.0f);
        ops->fill(sa.dq, 0.0f, Na * HD);
        ops->fill(g.dkj, 0.0f, (Tp + Na) * KD);
        ops->fill(g.dvj, 0.0f, (Tp + Na) * KD);
        vla_attn_config ac = vla_block_attn_config(&I->attn, &I->W.ex[li]);
        st = vla_attention_backward(ops, &ac, sa.dq, g.dkj, g.dvj, sa.datt, ba_.q, g.kj, g.vj, ba_.att, ba_.lse,
                                    &qs, &ks, NULL);
        if (st != VLA_OK) break;
        /* the expert rows' own ∂K, ∂V (the prefix's are constants) */
        ops->copy_rows(sa.dk, KD, NULL, g.dkj, KD, gi.jexp, Na, KD, 1.0f);
        ops->copy_rows(sa.dv, KD, NULL, g.dvj, KD, gi.jexp, Na, KD, 1.0f);
        st = vla_block_attn_in_backward(ops, &I->ex_cfg, &ex[li], &io, a->xs + li * Na * We, &ba_, &sa, g.dx, NULL,
                                        g.dcond);
    }
    if (st == VLA_OK) { /* x_0 = ain(x) */
        ops->fill(out, 0.0f, Na * A);
        vla_linear_backward(ops, out, NULL, NULL, g.dx, NULL, I->W.ain_w.w, Na, A, We);
    }
    vla_arena_rewind(&I->arena, mark);
    vla_arena_rewind(&I->harena, hmark);
    return st;
}

/* integ NULL: Euler (sample_actions); else the caller's integrator on the expert's velocity field. */
static vla_status sample(vla_policy *p, const vla_observation *obs, float *actions, bool cached,
                         vla_flow_integrator integ, void *user) {
    pi05_impl *I = impl_of(p);
    const vla_policy_config *c = &p->cfg;
    if (!obs || !obs->state || (c->vision.cameras > 0 && !obs->images))
        return vla_error(VLA_ERR_INVALID_ARG, "pi05 sample: observation needs state and images");
    vla_obs_pack o;
    VLA_TRY(vla_obs_pack_build(p, obs, !cached, &o));
    vla_status st = vla_batch_check(&o.b, c);
    int32_t S = obs->n_samples;
    const vla_ops *ops = p->tops;
    int64_t n = (int64_t)S * c->action.horizon * c->action.action_dim, per = n / S;
    /* x (the chunk being integrated) and v live in backend memory; the
     * starting noise is drawn on the host into `actions` and uploaded */
    float *x = ops->alloc((size_t)n * sizeof(float)), *scratch = ops->alloc((size_t)n * sizeof(float));
    float *tvec = malloc((size_t)S * sizeof(float));
    if (st == VLA_OK && (!x || !scratch || !tvec)) st = vla_error(VLA_ERR_NOMEM, "pi05 sample: out of memory");
    if (st == VLA_OK) {
        for (int32_t s = 0; s < S; s++)
            vla_flow_sample_noise(obs->seed, obs->sample_keys ? obs->sample_keys[s] : (uint64_t)s,
                                  VLA_FLOW_RNG_SAMPLING, actions + s * per, per);
        ops->to_device(x, actions, (size_t)n * sizeof(float));
        sample_ctx ctx = {p, o.b, tvec, {0}, {0}};
        arena_begin(I);
        if (cached) {
            st = forward(p, &o.b, NULL, NULL); /* the prefix once: K/V per layer stay in the arena */
            ctx.mark = vla_arena_get_mark(&I->arena);
            ctx.hmark = vla_arena_get_mark(&I->harena);
            pi05_field fc = {&ctx, {0}, {0}};
            vla_flow_field field = {field_velocity, field_vjp, &fc, ops};
            if (st == VLA_OK && integ) st = integ(user, &I->flow, &field, x, n);
            else if (st == VLA_OK) st = vla_flow_euler(ops, &I->flow, velocity_cached, &ctx, x, scratch, n);
        } else {
            st = vla_flow_euler(ops, &I->flow, velocity_uncached, &ctx, x, scratch, n);
        }
        if (st == VLA_OK) ops->to_host(actions, x, (size_t)n * sizeof(float));
        I->have_fwd = false;
    }
    if (x) ops->free(x);
    if (scratch) ops->free(scratch);
    free(tvec);
    vla_obs_pack_free(&o);
    return st != VLA_OK ? vla_error_context(st, "pi05 sample_actions") : VLA_OK;
}

static vla_status pi05_sample_actions(vla_policy *p, const vla_observation *obs, float *actions) {
    return sample(p, obs, actions, true, NULL, NULL);
}

static vla_status pi05_sample_with(vla_policy *p, const vla_observation *obs, vla_flow_integrator integ, void *user,
                                   float *actions) {
    return sample(p, obs, actions, true, integ, user);
}

vla_status vla_pi05_sample_actions_uncached(vla_policy *p, const vla_observation *obs, float *actions) {
    if (!p || p->cfg.family != &vla_pi05_family) return vla_error(VLA_ERR_INVALID_ARG, "not a pi05 policy");
    return sample(p, obs, actions, false, NULL, NULL);
}

vla_vit *vla_pi05_vit(vla_policy *p) {
    return p && p->cfg.family == &vla_pi05_family ? &impl_of(p)->W.vit : NULL;
}

/* ---- creation ---------------------------------------------------------------------------------- */

static void pi05_destroy(vla_policy *p) {
    pi05_impl *I = impl_of(p);
    if (I) {
        vla_vit_release(&I->W.vit);
        vla_arena_free(&I->arena);
        vla_arena_free(&I->harena);
        vla_arena_free(&I->params_arena);
        free(I);
    }
    vla_policy_free_params(p);
    free(p);
}

static const vla_policy_ops PI05_OPS = {
    "pi05", pi05_destroy, NULL, NULL, NULL, /* init, tokenize, layout: the family's */
    pi05_loss, pi05_backward, pi05_sample_actions, pi05_sample_with,
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
    b.mlp = (vla_mlp_config){true, VLA_ACT_GELU_TANH, l->width, l->mlp, 0};
    I->lm_cfg = b;
    b.norm1 = b.norm2 = VLA_BLOCK_NORM_ADARMS;
    b.dim = b.cond_dim = c->expert.width;
    b.mlp = (vla_mlp_config){true, VLA_ACT_GELU_TANH, c->expert.width, c->expert.mlp, 0};
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
    I->W.vit.owner = p; /* the ViT's backward reports its layers' gradients ready */
    if (st != VLA_OK) {
        pi05_destroy(p);
        return vla_error_context(st, "pi05 '%s'", cfg->name);
    }
    vla_policy_default_init(p, 0);
    *out = p;
    return VLA_OK;
}
