/* pi05.c — the π0.5-style policy: loss (forward keeping activations in an
 * arena), backward into p->grads, and action sampling with a prefix KV
 * cache (see pi05.h for the conventions and policy.h for the interface).
 *
 * One layer of the mixture of transformers, for a packed batch whose tokens
 * are prefix (image, text) or action tokens:
 *   prefix rows xp [Np, W]  (LM weights)      action rows xa [Na, We]  (expert weights)
 *   pn = RMS1p(xp)                             an = AdaRMS(xa; cond)
 *   qp kp vp = pn·W{q,k,v}ᵀ                    qa ka va = an·W{q,k,v}ᵀ
 *        └──── scattered into the batch's token order: Q K V [T, …] ────┘
 *                RoPE(positions) · one prefix-LM attention (groups) → O
 *        ┌──── gathered back ─────────────────────────────────────────┐
 *   xp += op·Woᵀ                               xa += (oa·Woᵀ)·gate
 *   xp += GeGLU(RMS1p(xp))                     xa += GeGLU(AdaRMS(xa))·gate
 * The expert's final AdaRMS and action_out_proj give the velocity. */
#include "policy/pi05.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "nn/activations.h"
#include "nn/adarmsnorm.h"
#include "nn/attention.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/rmsnorm.h"
#include "nn/rope.h"
#include "nn/time_embedding.h"
#include "policy/flow.h"
#include "policy/vit.h"

static const char *VIT_PREFIX = "paligemma_with_expert.paligemma.model.vision_tower.vision_model";

typedef vla_vit_tensor wg; /* a weight and its gradient (NULL when frozen) */

typedef struct {
    wg in_norm, q, k, v, o, gate, up, down, post_norm;
} lm_layer;

typedef struct {
    wg in_dw, in_db, q, k, v, o, gate, up, down, post_dw, post_db;
} ex_layer;

/* What one layer keeps for the backward. */
typedef struct {
    float *pn, *prstd, *an, *arstd, *mod_in;   /* pre-attention norms */
    float *Q, *K, *V, *O, *lse;                /* joint, token order, after RoPE */
    float *xp_mid, *pn2, *prstd2, *mlp_p;      /* LM after attention */
    float *ya, *xa_mid, *mod_post, *an2, *arstd2, *mlp_a, *ma; /* expert after attention */
} layer_acts;

/* The last forward: sizes, index maps and activations (all in the arena). */
typedef struct {
    int32_t S;
    int64_t T, Np, Na, n_img;
    int32_t *cu, *pos, *grp, *ids;     /* copies of the batch's arrays */
    int32_t *pre_idx, *act_idx;        /* prefix / action row → token */
    int32_t *pre_img;                  /* prefix row → image-token row, or −1 for text */
    int32_t *pcu, *acu;                /* per-sample row ranges of the two streams */
    float *images, *vit_acts, *vit_out, *img_emb;
    float *temb, *tm1, *tm1s, *tm2, *cond;
    float *xin, *mod_f, *af, *arstd_f, *vpred;
    float **xp, **xa;                  /* [L + 1] residual streams */
    layer_acts *la;                    /* [L] */
} fwd_state;

typedef struct {
    vla_vit vit;
    lm_layer *lm;
    ex_layer *ex;
    wg lm_norm; /* in the inventory (checkpoints carry it) but unused: the expert's output is the result */
    wg proj_w, proj_b, embed, fin_dw, fin_db, ain_w, ain_b, aout_w, aout_b, tin_w, tin_b, tout_w, tout_b;
    vla_flow flow;
    vla_arena arena;
    fwd_state f;
    bool have_fwd;  /* f holds a training forward with action tokens */
    float *dpred;   /* [Na, A] ∂loss/∂velocity of the last loss */
    double flops;
} pi05_impl;

static pi05_impl *impl_of(vla_policy *p) { return (pi05_impl *)p->impl; }

/* ---- binding parameters by name ------------------------------------------ */

static vla_status bind(const vla_policy *p, wg *t, int64_t numel, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static vla_status bind(const vla_policy *p, wg *t, int64_t numel, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    float *w = NULL;
    vla_status st = vla_policy_vbind(p, numel, &w, &t->g, fmt, ap);
    va_end(ap);
    t->w = w;
    return st;
}

static vla_status bind_all(vla_policy *p, pi05_impl *I) {
    const vla_policy_config *c = &p->cfg;
    const vla_lm_config *l = &c->language;
    int64_t W = l->width, We = c->expert.width, HD = l->heads * l->head_dim, KD = l->kv_heads * l->head_dim;
    int64_t A = c->action.action_dim;
    const char *pg = "paligemma_with_expert.paligemma.model", *ex = "paligemma_with_expert.gemma_expert.model";
    VLA_TRY(vla_vit_bind(&I->vit, &c->vision, p->tops, p->params, &p->specs, VIT_PREFIX));
    VLA_TRY(bind(p, &I->proj_w, W * c->vision.width, "%s.multi_modal_projector.linear.weight", pg));
    VLA_TRY(bind(p, &I->proj_b, W, "%s.multi_modal_projector.linear.bias", pg));
    VLA_TRY(bind(p, &I->embed, l->vocab * W, "%s.language_model.embed_tokens.weight", pg));
    VLA_TRY(bind(p, &I->lm_norm, W, "%s.language_model.norm.weight", pg));
    I->lm = calloc((size_t)l->depth, sizeof *I->lm);
    I->ex = calloc((size_t)l->depth, sizeof *I->ex);
    if (!I->lm || !I->ex) return vla_error(VLA_ERR_NOMEM, "pi05: out of memory");
    for (int64_t i = 0; i < l->depth; i++) {
        lm_layer *L = &I->lm[i];
        ex_layer *E = &I->ex[i];
        long long li = (long long)i;
        const char *pl = "paligemma_with_expert.paligemma.model.language_model.layers";
        VLA_TRY(bind(p, &L->in_norm, W, "%s.%lld.input_layernorm.weight", pl, li));
        VLA_TRY(bind(p, &L->q, HD * W, "%s.%lld.self_attn.q_proj.weight", pl, li));
        VLA_TRY(bind(p, &L->k, KD * W, "%s.%lld.self_attn.k_proj.weight", pl, li));
        VLA_TRY(bind(p, &L->v, KD * W, "%s.%lld.self_attn.v_proj.weight", pl, li));
        VLA_TRY(bind(p, &L->o, W * HD, "%s.%lld.self_attn.o_proj.weight", pl, li));
        VLA_TRY(bind(p, &L->gate, l->mlp * W, "%s.%lld.mlp.gate_proj.weight", pl, li));
        VLA_TRY(bind(p, &L->up, l->mlp * W, "%s.%lld.mlp.up_proj.weight", pl, li));
        VLA_TRY(bind(p, &L->down, W * l->mlp, "%s.%lld.mlp.down_proj.weight", pl, li));
        VLA_TRY(bind(p, &L->post_norm, W, "%s.%lld.post_attention_layernorm.weight", pl, li));
        int64_t M = c->expert.mlp;
        VLA_TRY(bind(p, &E->in_dw, 3 * We * We, "%s.layers.%lld.input_layernorm.dense.weight", ex, li));
        VLA_TRY(bind(p, &E->in_db, 3 * We, "%s.layers.%lld.input_layernorm.dense.bias", ex, li));
        VLA_TRY(bind(p, &E->q, HD * We, "%s.layers.%lld.self_attn.q_proj.weight", ex, li));
        VLA_TRY(bind(p, &E->k, KD * We, "%s.layers.%lld.self_attn.k_proj.weight", ex, li));
        VLA_TRY(bind(p, &E->v, KD * We, "%s.layers.%lld.self_attn.v_proj.weight", ex, li));
        VLA_TRY(bind(p, &E->o, We * HD, "%s.layers.%lld.self_attn.o_proj.weight", ex, li));
        VLA_TRY(bind(p, &E->gate, M * We, "%s.layers.%lld.mlp.gate_proj.weight", ex, li));
        VLA_TRY(bind(p, &E->up, M * We, "%s.layers.%lld.mlp.up_proj.weight", ex, li));
        VLA_TRY(bind(p, &E->down, We * M, "%s.layers.%lld.mlp.down_proj.weight", ex, li));
        VLA_TRY(bind(p, &E->post_dw, 3 * We * We, "%s.layers.%lld.post_attention_layernorm.dense.weight", ex, li));
        VLA_TRY(bind(p, &E->post_db, 3 * We, "%s.layers.%lld.post_attention_layernorm.dense.bias", ex, li));
    }
    VLA_TRY(bind(p, &I->fin_dw, 3 * We * We, "%s.norm.dense.weight", ex));
    VLA_TRY(bind(p, &I->fin_db, 3 * We, "%s.norm.dense.bias", ex));
    VLA_TRY(bind(p, &I->ain_w, We * A, "action_in_proj.weight"));
    VLA_TRY(bind(p, &I->ain_b, We, "action_in_proj.bias"));
    VLA_TRY(bind(p, &I->aout_w, A * We, "action_out_proj.weight"));
    VLA_TRY(bind(p, &I->aout_b, A, "action_out_proj.bias"));
    VLA_TRY(bind(p, &I->tin_w, We * We, "time_mlp_in.weight"));
    VLA_TRY(bind(p, &I->tin_b, We, "time_mlp_in.bias"));
    VLA_TRY(bind(p, &I->tout_w, We * We, "time_mlp_out.weight"));
    VLA_TRY(bind(p, &I->tout_b, We, "time_mlp_out.bias"));
    return VLA_OK;
}

/* Gradient-ready report (policy.h) of the parameters behind n tensors. */
static void ready(vla_policy *p, const wg *t, int n) {
    if (!p->grad_ready) return;
    const float *w[24];
    for (int k0 = 0; k0 < n; k0 += 24) { /* (a layer has fewer tensors: one pass) */
        int m = n - k0 < 24 ? n - k0 : 24;
        for (int k = 0; k < m; k++) w[k] = t[k0 + k].w;
        vla_policy_ready_weights(p, w, m);
    }
}
#define READY_STRUCT(p, s) ready((p), (const wg *)(s), (int)(sizeof *(s) / sizeof(wg)))

/* ---- small helpers ---------------------------------------------------------- */

/* Start a new lifetime in the activation arena. Once a step has shown its
 * peak, the arena is rebuilt with one chunk that holds it, so later steps
 * reuse the same pages instead of freeing and faulting in new chunks. */
static void arena_begin(pi05_impl *I) {
    size_t peak = I->arena.peak;
    if (peak > I->arena.chunk_size) {
        vla_arena_free(&I->arena);
        vla_arena_init(&I->arena, peak + peak / 4 + 4096);
    } else {
        vla_arena_reset(&I->arena);
    }
}

static float *afloat(pi05_impl *I, int64_t n) {
    return vla_arena_alloc(&I->arena, (size_t)(n > 0 ? n : 1) * sizeof(float), 64);
}
static int32_t *aint(pi05_impl *I, int64_t n) {
    return vla_arena_alloc(&I->arena, (size_t)(n > 0 ? n : 1) * sizeof(int32_t), 64);
}
#define ALLOCF(ptr, n)                                                                                   \
    do {                                                                                                 \
        if (!((ptr) = afloat(I, (n)))) return vla_error(VLA_ERR_NOMEM, "pi05: out of activation memory"); \
    } while (0)
#define ALLOCI(ptr, n)                                                                                   \
    do {                                                                                                 \
        if (!((ptr) = aint(I, (n)))) return vla_error(VLA_ERR_NOMEM, "pi05: out of activation memory");   \
    } while (0)

static void lin(pi05_impl *I, const vla_ops *ops, float *out, const float *in, wg w, const float *b, int64_t n,
                int64_t din, int64_t dout) {
    vla_linear_forward(ops, out, in, w.w, b, n, din, dout);
    I->flops += 2.0 * (double)n * (double)din * (double)dout;
}

static void gather_rows(float *dst, const float *src, const int32_t *idx, int64_t n, int64_t w) {
    for (int64_t i = 0; i < n; i++) memcpy(dst + i * w, src + (int64_t)idx[i] * w, (size_t)w * sizeof(float));
}
static void scatter_rows(float *dst, const float *src, const int32_t *idx, int64_t n, int64_t w) {
    for (int64_t i = 0; i < n; i++) memcpy(dst + (int64_t)idx[i] * w, src + i * w, (size_t)w * sizeof(float));
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* (query, key) pairs the group rule allows, summed over samples. */
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

static vla_attn_config attn_cfg(const vla_policy_config *c) {
    vla_attn_config a = {0};
    a.n_heads = (int32_t)c->language.heads;
    a.n_kv_heads = (int32_t)c->language.kv_heads;
    a.head_dim = (int32_t)c->language.head_dim;
    return a;
}

static vla_mlp_config geglu(int64_t dim, int64_t hidden) {
    vla_mlp_config m = {true, VLA_ACT_GELU_TANH, dim, hidden, 0};
    return m;
}

/* ---- forward ------------------------------------------------------------------ */

/* Index maps of a batch and their checks: every prefix token is an image or
 * text token, sample s has exactly its images' worth of image tokens, and
 * either every sample has `horizon` action tokens or (prefix-only) none. */
static vla_status build_maps(vla_policy *p, pi05_impl *I, const vla_batch *b, bool with_actions) {
    fwd_state *f = &I->f;
    const vla_policy_config *c = &p->cfg;
    int32_t S = b->n_samples;
    int64_t T = b->n_tokens, Hz = c->action.horizon, Ti = I->vit.tokens;
    f->S = S, f->T = T;
    f->n_img = b->n_images > 0 ? b->n_images : 0;
    ALLOCI(f->cu, S + 1);
    ALLOCI(f->pos, T);
    ALLOCI(f->grp, T);
    ALLOCI(f->ids, T);
    ALLOCI(f->pre_idx, T);
    ALLOCI(f->act_idx, T);
    ALLOCI(f->pre_img, T);
    ALLOCI(f->pcu, S + 1);
    ALLOCI(f->acu, S + 1);
    memcpy(f->cu, b->cu_seqlens, (size_t)(S + 1) * sizeof(int32_t));
    memcpy(f->pos, b->positions, (size_t)T * sizeof(int32_t));
    memcpy(f->grp, b->groups, (size_t)T * sizeof(int32_t));
    int64_t np = 0, na = 0;
    f->pcu[0] = f->acu[0] = 0;
    for (int32_t s = 0; s < S; s++) {
        int64_t img0 = b->n_images > 0 ? (int64_t)b->cu_images[s] * Ti : 0;
        int64_t n_imgtok = b->n_images > 0 ? (int64_t)(b->cu_images[s + 1] - b->cu_images[s]) * Ti : 0;
        int64_t k_img = 0, k_act = 0;
        for (int64_t t = b->cu_seqlens[s]; t < b->cu_seqlens[s + 1]; t++) {
            f->ids[t] = 0;
            switch (b->roles[t]) {
            case VLA_ROLE_IMAGE:
                if (k_img >= n_imgtok)
                    return vla_error(VLA_ERR_INVALID_ARG,
                                     "pi05: sample %d has more image tokens than its %lld images give (%lld)", s,
                                     (long long)(n_imgtok / Ti), (long long)n_imgtok);
                f->pre_img[np] = (int32_t)(img0 + k_img++);
                f->pre_idx[np++] = (int32_t)t;
                break;
            case VLA_ROLE_TEXT:
                if (!b->token_ids) return vla_error(VLA_ERR_INVALID_ARG, "pi05: text tokens but no token_ids");
                f->ids[t] = b->token_ids[t];
                f->pre_img[np] = -1;
                f->pre_idx[np++] = (int32_t)t;
                break;
            case VLA_ROLE_ACTION:
                f->act_idx[na++] = (int32_t)t;
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
        f->pcu[s + 1] = (int32_t)np;
        f->acu[s + 1] = (int32_t)na;
    }
    f->Np = np, f->Na = na;
    return VLA_OK;
}

/* The time condition of S samples: cond = swish(out(swish(in(sincos(t))))). */
static vla_status time_forward(vla_policy *p, pi05_impl *I, const float *t, int32_t S, float **temb, float **tm1,
                               float **tm1s, float **tm2, float **cond) {
    const vla_policy_config *c = &p->cfg;
    int64_t We = c->expert.width;
    ALLOCF(*temb, S * We);
    ALLOCF(*tm1, S * We);
    ALLOCF(*tm1s, S * We);
    ALLOCF(*tm2, S * We);
    ALLOCF(*cond, S * We);
    vla_temb_config tc = {VLA_TEMB_PERIODS, We, c->flow.time_min_period, c->flow.time_max_period, 0, false};
    vla_time_embedding_forward(&tc, *temb, t, S);
    lin(I, p->tops, *tm1, *temb, I->tin_w, I->tin_b.w, S, We, We);
    vla_silu_forward(*tm1s, *tm1, S * We);
    lin(I, p->tops, *tm2, *tm1s, I->tout_w, I->tout_b.w, S, We, We);
    vla_silu_forward(*cond, *tm2, S * We);
    return VLA_OK;
}

/* Forward of a packed batch. x_t [S, H, A] and t [S] are the action side's
 * input (both NULL for a prefix-only batch: then only the LM runs, and the
 * per-layer K/V of the prefix stay in f->la[l].K/V as the sampling cache).
 * The velocity lands in f->vpred [Na, A] (= [S, H, A]). */
static vla_status forward(vla_policy *p, const vla_batch *b, const float *x_t, const float *t) {
    pi05_impl *I = impl_of(p);
    fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    const vla_policy_config *c = &p->cfg;
    const vla_lm_config *l = &c->language;
    int64_t L = l->depth, W = l->width, We = c->expert.width, hd = l->head_dim;
    int64_t HD = l->heads * hd, KD = l->kv_heads * hd, A = c->action.action_dim;
    float eps = (float)l->norm_eps;
    bool act = x_t != NULL;
    I->have_fwd = false;
    I->flops = 0;
    VLA_TRY(build_maps(p, I, b, act));
    int32_t S = f->S;
    int64_t T = f->T, Np = f->Np, Na = f->Na, Dv = c->vision.width, Ti = I->vit.tokens;

    /* prefix embeddings: images → ViT → projector; text → table·sqrt(W) */
    int64_t n_imgtok = f->n_img * Ti;
    f->xp = vla_arena_alloc(&I->arena, (size_t)(L + 1) * sizeof(float *), 64);
    f->xa = vla_arena_alloc(&I->arena, (size_t)(L + 1) * sizeof(float *), 64);
    if (!f->xp || !f->xa) return vla_error(VLA_ERR_NOMEM, "pi05: out of activation memory");
    for (int64_t i = 0; i <= L; i++) {
        f->xp[i] = NULL;
        if (i < L || i == 0) ALLOCF(f->xp[i], Np * W); /* the last layer's prefix output is never read */
        f->xa[i] = NULL;
        if (act) ALLOCF(f->xa[i], Na * We);
    }
    if (f->n_img > 0) {
        ALLOCF(f->vit_acts, vla_vit_acts_floats(&I->vit, f->n_img));
        ALLOCF(f->vit_out, n_imgtok * Dv);
        ALLOCF(f->img_emb, n_imgtok * W);
        VLA_TRY(vla_vit_forward(&I->vit, f->vit_out, f->vit_acts, b->images, f->n_img));
        I->flops += vla_vit_forward_flops(&I->vit, f->n_img);
        lin(I, ops, f->img_emb, f->vit_out, I->proj_w, I->proj_b.w, n_imgtok, Dv, W);
    }
    float sq = sqrtf((float)W);
    for (int64_t i = 0; i < Np; i++) {
        float *row = f->xp[0] + i * W;
        if (f->pre_img[i] >= 0) {
            memcpy(row, f->img_emb + (int64_t)f->pre_img[i] * W, (size_t)W * sizeof(float));
        } else {
            int32_t id = f->ids[f->pre_idx[i]];
            if (id < 0 || id >= l->vocab)
                return vla_error(VLA_ERR_INVALID_ARG, "pi05: token id %d outside the vocabulary", id);
            const float *e = I->embed.w + (int64_t)id * W;
            for (int64_t k = 0; k < W; k++) row[k] = e[k] * sq;
        }
    }

    /* action side: time condition and action embeddings */
    if (act) {
        VLA_TRY(time_forward(p, I, t, S, &f->temb, &f->tm1, &f->tm1s, &f->tm2, &f->cond));
        /* rows s·H + k are the action rows in token order (checked in build_maps) */
        ALLOCF(f->xin, Na * A);
        memcpy(f->xin, x_t, (size_t)(Na * A) * sizeof(float));
        lin(I, ops, f->xa[0], f->xin, I->ain_w, I->ain_b.w, Na, A, We);
    }

    f->la = vla_arena_alloc(&I->arena, sizeof(layer_acts) * (size_t)(L > 0 ? L : 1), 64);
    if (!f->la) return vla_error(VLA_ERR_NOMEM, "pi05: out of activation memory");
    vla_attn_config ac = attn_cfg(c);
    vla_attn_seqs seqs = {S, f->cu, f->grp};
    vla_mlp_config mlp_p = geglu(W, l->mlp), mlp_a = geglu(We, c->expert.mlp);
    float *tq, *tk, *tv, *to;
    ALLOCF(tq, (Np > Na ? Np : Na) * HD);
    ALLOCF(tk, (Np > Na ? Np : Na) * KD);
    ALLOCF(tv, (Np > Na ? Np : Na) * KD);
    ALLOCF(to, (Np > Na ? Np : Na) * HD);
    double pairs = attn_pairs(f->cu, S, f->grp);
    for (int64_t li = 0; li < L; li++) {
        layer_acts *a = &f->la[li];
        memset(a, 0, sizeof *a);
        const lm_layer *PL = &I->lm[li];
        const ex_layer *EL = &I->ex[li];
        ALLOCF(a->Q, T * HD);
        ALLOCF(a->K, T * KD);
        ALLOCF(a->V, T * KD);
        ALLOCF(a->O, T * HD);
        ALLOCF(a->lse, T * l->heads);
        /* prefix Q/K/V */
        ALLOCF(a->pn, Np * W);
        ALLOCF(a->prstd, Np);
        vla_rmsnorm_forward(a->pn, a->prstd, f->xp[li], PL->in_norm.w, true, Np, W, eps);
        lin(I, ops, tq, a->pn, PL->q, NULL, Np, W, HD);
        lin(I, ops, tk, a->pn, PL->k, NULL, Np, W, KD);
        lin(I, ops, tv, a->pn, PL->v, NULL, Np, W, KD);
        scatter_rows(a->Q, tq, f->pre_idx, Np, HD);
        scatter_rows(a->K, tk, f->pre_idx, Np, KD);
        scatter_rows(a->V, tv, f->pre_idx, Np, KD);
        /* action Q/K/V */
        if (act) {
            ALLOCF(a->mod_in, S * 3 * We);
            ALLOCF(a->an, Na * We);
            ALLOCF(a->arstd, Na);
            lin(I, ops, a->mod_in, f->cond, EL->in_dw, EL->in_db.w, S, We, 3 * We);
            VLA_TRY(vla_adarmsnorm_forward(a->an, a->arstd, f->xa[li], a->mod_in, f->acu, S, Na, We, eps));
            lin(I, ops, tq, a->an, EL->q, NULL, Na, We, HD);
            lin(I, ops, tk, a->an, EL->k, NULL, Na, We, KD);
            lin(I, ops, tv, a->an, EL->v, NULL, Na, We, KD);
            scatter_rows(a->Q, tq, f->act_idx, Na, HD);
            scatter_rows(a->K, tk, f->act_idx, Na, KD);
            scatter_rows(a->V, tv, f->act_idx, Na, KD);
        }
        /* one joint attention */
        vla_rope_forward(a->Q, a->Q, f->pos, T, l->heads, hd, l->rope_theta);
        vla_rope_forward(a->K, a->K, f->pos, T, l->kv_heads, hd, l->rope_theta);
        VLA_TRY(vla_attention_forward(ops, &ac, a->O, a->lse, a->Q, a->K, a->V, &seqs, &seqs, NULL));
        I->flops += 4.0 * pairs * (double)HD;
        /* prefix: o_proj, residual, MLP — except in the last layer, where only
         * the prefix K/V matter (openpi computes and discards that output) */
        if (li < L - 1) {
            ALLOCF(a->xp_mid, Np * W);
            ALLOCF(a->pn2, Np * W);
            ALLOCF(a->prstd2, Np);
            ALLOCF(a->mlp_p, vla_mlp_acts_floats(&mlp_p, Np));
            gather_rows(to, a->O, f->pre_idx, Np, HD);
            lin(I, ops, a->xp_mid, to, PL->o, NULL, Np, HD, W);
            ops->add(a->xp_mid, a->xp_mid, f->xp[li], Np * W);
            vla_rmsnorm_forward(a->pn2, a->prstd2, a->xp_mid, PL->post_norm.w, true, Np, W, eps);
            vla_mlp_weights mw = {PL->up.w, NULL, PL->gate.w, NULL, PL->down.w, NULL};
            vla_mlp_forward(ops, &mlp_p, f->xp[li + 1], a->mlp_p, a->pn2, &mw, Np);
            I->flops += 2.0 * (double)Np * 3.0 * (double)W * (double)l->mlp;
            ops->add(f->xp[li + 1], f->xp[li + 1], a->xp_mid, Np * W);
        }
        /* actions: o_proj, gated residual, AdaRMS, MLP, gated residual */
        if (act) {
            ALLOCF(a->ya, Na * We);
            ALLOCF(a->xa_mid, Na * We);
            ALLOCF(a->mod_post, S * 3 * We);
            ALLOCF(a->an2, Na * We);
            ALLOCF(a->arstd2, Na);
            ALLOCF(a->mlp_a, vla_mlp_acts_floats(&mlp_a, Na));
            ALLOCF(a->ma, Na * We);
            gather_rows(to, a->O, f->act_idx, Na, HD);
            lin(I, ops, a->ya, to, EL->o, NULL, Na, HD, We);
            VLA_TRY(vla_gated_residual_forward(a->xa_mid, f->xa[li], a->ya, a->mod_in, f->acu, S, Na, We));
            lin(I, ops, a->mod_post, f->cond, EL->post_dw, EL->post_db.w, S, We, 3 * We);
            VLA_TRY(vla_adarmsnorm_forward(a->an2, a->arstd2, a->xa_mid, a->mod_post, f->acu, S, Na, We, eps));
            vla_mlp_weights ew = {EL->up.w, NULL, EL->gate.w, NULL, EL->down.w, NULL};
            vla_mlp_forward(ops, &mlp_a, a->ma, a->mlp_a, a->an2, &ew, Na);
            I->flops += 2.0 * (double)Na * 3.0 * (double)We * (double)c->expert.mlp;
            VLA_TRY(vla_gated_residual_forward(f->xa[li + 1], a->xa_mid, a->ma, a->mod_post, f->acu, S, Na, We));
        }
    }
    if (act) {
        ALLOCF(f->mod_f, S * 3 * We);
        ALLOCF(f->af, Na * We);
        ALLOCF(f->arstd_f, Na);
        ALLOCF(f->vpred, Na * A);
        lin(I, ops, f->mod_f, f->cond, I->fin_dw, I->fin_db.w, S, We, 3 * We);
        VLA_TRY(vla_adarmsnorm_forward(f->af, f->arstd_f, f->xa[L], f->mod_f, f->acu, S, Na, We, eps));
        lin(I, ops, f->vpred, f->af, I->aout_w, I->aout_b.w, Na, We, A);
        I->have_fwd = true;
    }
    return VLA_OK;
}

/* ---- loss and backward ------------------------------------------------------- */

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
    float *t, *noise, *x_t, *target;
    ALLOCF(t, S);
    ALLOCF(noise, S * n);
    ALLOCF(x_t, S * n);
    ALLOCF(target, S * n);
    double tsum = 0;
    for (int32_t s = 0; s < S; s++) {
        uint64_t key = b->sample_keys ? b->sample_keys[s] : (uint64_t)s;
        t[s] = vla_flow_sample_time(&I->flow, b->seed, key);
        tsum += t[s];
        vla_flow_sample_noise(b->seed, key, VLA_FLOW_RNG_NOISE, noise + s * n, n);
        vla_flow_interpolate(&I->flow, t[s], b->actions + s * n, noise + s * n, x_t + s * n, target + s * n, n);
    }
    VLA_TRY(forward(p, b, x_t, t));
    ALLOCF(I->dpred, S * n);
    double loss = vla_flow_masked_mse(I->f.vpred, target, S, Hz, A, b->action_is_pad, b->real_action_dim,
                                      VLA_MSE_MEAN_REAL, b->loss_divisor, I->dpred);
    if (info) {
        memset(info, 0, sizeof *info);
        info->loss = loss;
        int64_t real = 0;
        for (int32_t s = 0; s < S; s++) {
            int64_t rd = b->real_action_dim ? b->real_action_dim[s] : A;
            for (int64_t h = 0; h < Hz; h++)
                if (!b->action_is_pad[s * Hz + h]) real += rd;
        }
        info->real_entries = real;
        info->mean_time = tsum / S;
        info->tokens = b->n_tokens;
        info->flops = I->flops;
    }
    return VLA_OK;
}

static vla_status pi05_backward(vla_policy *p) {
    pi05_impl *I = impl_of(p);
    if (!I->have_fwd) return vla_error(VLA_ERR_INVALID_ARG, "pi05 backward: no loss computed since the last step");
    fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    const vla_policy_config *c = &p->cfg;
    const vla_lm_config *l = &c->language;
    int64_t L = l->depth, W = l->width, We = c->expert.width, hd = l->head_dim;
    int64_t HD = l->heads * hd, KD = l->kv_heads * hd, A = c->action.action_dim;
    int32_t S = f->S;
    int64_t T = f->T, Np = f->Np, Na = f->Na, Dv = c->vision.width, Ti = I->vit.tokens;
    vla_arena_mark mark = vla_arena_get_mark(&I->arena);
    vla_status st = VLA_OK;
    vla_mlp_config mlp_p = geglu(W, l->mlp), mlp_a = geglu(We, c->expert.mlp);
    int64_t mx = Np > Na ? Np : Na;
    float *dxp, *dxa, *dcond, *dmod, *dtmp, *dtmp2, *dq, *dk, *dv, *dO, *dQr, *dKr, *mscr, *dto;
    ALLOCF(dxp, Np * W);
    ALLOCF(dxa, Na * We);
    ALLOCF(dcond, S * We);
    ALLOCF(dmod, S * 3 * We);
    ALLOCF(dtmp, mx * (W > We ? W : We));
    ALLOCF(dtmp2, mx * (W > We ? W : We));
    ALLOCF(dq, T * HD);
    ALLOCF(dk, T * KD);
    ALLOCF(dv, T * KD);
    ALLOCF(dO, T * HD);
    ALLOCF(dQr, T * HD);
    ALLOCF(dKr, T * KD);
    ALLOCF(dto, mx * HD);
    int64_t ms = vla_mlp_scratch_floats(&mlp_p, Np), ms2 = vla_mlp_scratch_floats(&mlp_a, Na);
    ALLOCF(mscr, ms > ms2 ? ms : ms2);
    float *to = dQr; /* gathered attention outputs reuse a buffer that is idle at that point */
    vla_policy_ready_begin(p);
    ready(p, &I->lm_norm, 1); /* never used: final from the start */
    ops->fill(dxp, 0.0f, Np * W);
    ops->fill(dxa, 0.0f, Na * We);
    ops->fill(dcond, 0.0f, S * We);

    /* velocity head and final AdaRMS */
    ops->fill(dtmp, 0.0f, Na * We);
    vla_linear_backward(ops, dtmp, I->aout_w.g, I->aout_b.g, I->dpred, f->af, I->aout_w.w, Na, We, A);
    ops->fill(dmod, 0.0f, S * 3 * We);
    VLA_TRY(vla_adarmsnorm_backward(dxa, dmod, dtmp, f->xa[L], f->mod_f, f->arstd_f, f->acu, S, Na, We));
    vla_linear_backward(ops, dcond, I->fin_dw.g, I->fin_db.g, dmod, f->cond, I->fin_dw.w, S, We, 3 * We);
    {
        const wg head[] = {I->aout_w, I->aout_b, I->fin_dw, I->fin_db};
        ready(p, head, 4);
    }

    vla_attn_config ac = attn_cfg(c);
    vla_attn_seqs seqs = {S, f->cu, f->grp};
    for (int64_t li = L - 1; li >= 0; li--) {
        const layer_acts *a = &f->la[li];
        const lm_layer *PL = &I->lm[li];
        const ex_layer *EL = &I->ex[li];
        /* expert: x_next = x_mid + ma·gate_post; ma = MLP(AdaRMS(x_mid)) */
        ops->fill(dmod, 0.0f, S * 3 * We);
        ops->fill(dtmp, 0.0f, Na * We);
        VLA_TRY(vla_gated_residual_backward(NULL, dtmp, dmod, dxa, a->ma, a->mod_post, f->acu, S, Na, We));
        vla_mlp_weights ew = {EL->up.w, NULL, EL->gate.w, NULL, EL->down.w, NULL};
        vla_mlp_grads eg = {EL->up.g, NULL, EL->gate.g, NULL, EL->down.g, NULL};
        ops->fill(dtmp2, 0.0f, Na * We);
        vla_mlp_backward(ops, &mlp_a, dtmp2, &eg, mscr, dtmp, a->an2, a->mlp_a, &ew, Na);
        VLA_TRY(vla_adarmsnorm_backward(dxa, dmod, dtmp2, a->xa_mid, a->mod_post, a->arstd2, f->acu, S, Na, We));
        vla_linear_backward(ops, dcond, EL->post_dw.g, EL->post_db.g, dmod, f->cond, EL->post_dw.w, S, We, 3 * We);
        /* expert: x_mid = x + ya·gate_in; ya = oa·Woᵀ */
        ops->fill(dmod, 0.0f, S * 3 * We);
        ops->fill(dtmp, 0.0f, Na * We);
        VLA_TRY(vla_gated_residual_backward(NULL, dtmp, dmod, dxa, a->ya, a->mod_in, f->acu, S, Na, We));
        ops->fill(dto, 0.0f, Na * HD);
        gather_rows(to, a->O, f->act_idx, Na, HD);
        vla_linear_backward(ops, dto, EL->o.g, NULL, dtmp, to, EL->o.w, Na, HD, We);
        ops->fill(dO, 0.0f, T * HD);
        scatter_rows(dO, dto, f->act_idx, Na, HD);
        /* prefix: x_next = x_mid + MLP(RMS1p(x_mid)); x_mid = x + op·Woᵀ (not in
         * the last layer: the forward skipped it, its gradients are 0) */
        if (li < L - 1) {
            vla_mlp_weights mw = {PL->up.w, NULL, PL->gate.w, NULL, PL->down.w, NULL};
            vla_mlp_grads mg = {PL->up.g, NULL, PL->gate.g, NULL, PL->down.g, NULL};
            ops->fill(dtmp, 0.0f, Np * W);
            vla_mlp_backward(ops, &mlp_p, dtmp, &mg, mscr, dxp, a->pn2, a->mlp_p, &mw, Np);
            vla_rmsnorm_backward(dxp, PL->post_norm.g, dtmp, a->xp_mid, PL->post_norm.w, true, a->prstd2, Np, W);
            ops->fill(dto, 0.0f, Np * HD);
            gather_rows(to, a->O, f->pre_idx, Np, HD);
            vla_linear_backward(ops, dto, PL->o.g, NULL, dxp, to, PL->o.w, Np, HD, W);
            scatter_rows(dO, dto, f->pre_idx, Np, HD);
        }
        /* joint attention and RoPE */
        ops->fill(dq, 0.0f, T * HD);
        ops->fill(dk, 0.0f, T * KD);
        ops->fill(dv, 0.0f, T * KD);
        VLA_TRY(vla_attention_backward(ops, &ac, dq, dk, dv, dO, a->Q, a->K, a->V, a->O, a->lse, &seqs, &seqs, NULL));
        ops->fill(dQr, 0.0f, T * HD);
        ops->fill(dKr, 0.0f, T * KD);
        vla_rope_backward(dQr, dq, f->pos, T, l->heads, hd, l->rope_theta);
        vla_rope_backward(dKr, dk, f->pos, T, l->kv_heads, hd, l->rope_theta);
        /* prefix Q/K/V → RMS1p → x */
        ops->fill(dtmp, 0.0f, Np * W);
        gather_rows(dto, dQr, f->pre_idx, Np, HD);
        vla_linear_backward(ops, dtmp, PL->q.g, NULL, dto, a->pn, PL->q.w, Np, W, HD);
        gather_rows(dto, dKr, f->pre_idx, Np, KD);
        vla_linear_backward(ops, dtmp, PL->k.g, NULL, dto, a->pn, PL->k.w, Np, W, KD);
        gather_rows(dto, dv, f->pre_idx, Np, KD);
        vla_linear_backward(ops, dtmp, PL->v.g, NULL, dto, a->pn, PL->v.w, Np, W, KD);
        vla_rmsnorm_backward(dxp, PL->in_norm.g, dtmp, f->xp[li], PL->in_norm.w, true, a->prstd, Np, W);
        /* action Q/K/V → AdaRMS → x, cond */
        ops->fill(dtmp, 0.0f, Na * We);
        gather_rows(dto, dQr, f->act_idx, Na, HD);
        vla_linear_backward(ops, dtmp, EL->q.g, NULL, dto, a->an, EL->q.w, Na, We, HD);
        gather_rows(dto, dKr, f->act_idx, Na, KD);
        vla_linear_backward(ops, dtmp, EL->k.g, NULL, dto, a->an, EL->k.w, Na, We, KD);
        gather_rows(dto, dv, f->act_idx, Na, KD);
        vla_linear_backward(ops, dtmp, EL->v.g, NULL, dto, a->an, EL->v.w, Na, We, KD);
        VLA_TRY(vla_adarmsnorm_backward(dxa, dmod, dtmp, f->xa[li], a->mod_in, a->arstd, f->acu, S, Na, We));
        vla_linear_backward(ops, dcond, EL->in_dw.g, EL->in_db.g, dmod, f->cond, EL->in_dw.w, S, We, 3 * We);
        /* each layer's weights serve this layer only: final now (LM and expert: two ranges) */
        READY_STRUCT(p, EL);
        READY_STRUCT(p, PL);
    }
    /* action embedding */
    vla_linear_backward(ops, NULL, I->ain_w.g, I->ain_b.g, dxa, f->xin, I->ain_w.w, Na, A, We);
    {
        const wg ain[] = {I->ain_w, I->ain_b};
        ready(p, ain, 2);
    }
    /* time MLP: cond = swish(tm2), tm2 = out(swish(tm1)), tm1 = in(temb) */
    ops->fill(dtmp, 0.0f, S * We);
    vla_silu_backward(dtmp, dcond, f->tm2, S * We);
    ops->fill(dtmp2, 0.0f, S * We);
    vla_linear_backward(ops, dtmp2, I->tout_w.g, I->tout_b.g, dtmp, f->tm1s, I->tout_w.w, S, We, We);
    ops->fill(dtmp, 0.0f, S * We);
    vla_silu_backward(dtmp, dtmp2, f->tm1, S * We);
    vla_linear_backward(ops, NULL, I->tin_w.g, I->tin_b.g, dtmp, f->temb, I->tin_w.w, S, We, We);
    {
        const wg tm[] = {I->tin_w, I->tin_b, I->tout_w, I->tout_b}; /* after every layer's dcond */
        ready(p, tm, 4);
    }
    /* prefix embeddings: text rows into the table (×sqrt(W)), image rows into projector → ViT */
    float sq = sqrtf((float)W);
    if (I->embed.g)
        for (int64_t i = 0; i < Np; i++) {
            if (f->pre_img[i] >= 0) continue;
            float *g = I->embed.g + (int64_t)f->ids[f->pre_idx[i]] * W;
            const float *d = dxp + i * W;
            for (int64_t k = 0; k < W; k++) g[k] += sq * d[k];
        }
    ready(p, &I->embed, 1);
    int64_t n_imgtok = f->n_img * Ti;
    bool vision_trains = I->vit.patch_w.g || I->vit.pos.g || I->vit.post_w.g;
    if (n_imgtok > 0 && (I->proj_w.g || I->proj_b.g || vision_trains)) {
        float *d_emb, *d_vit;
        ALLOCF(d_emb, n_imgtok * W);
        ALLOCF(d_vit, n_imgtok * Dv);
        ops->fill(d_emb, 0.0f, n_imgtok * W);
        ops->fill(d_vit, 0.0f, n_imgtok * Dv);
        for (int64_t i = 0; i < Np; i++)
            if (f->pre_img[i] >= 0) {
                float *d = d_emb + (int64_t)f->pre_img[i] * W;
                const float *s = dxp + i * W;
                for (int64_t k = 0; k < W; k++) d[k] += s[k];
            }
        vla_linear_backward(ops, vision_trains ? d_vit : NULL, I->proj_w.g, I->proj_b.g, d_emb, f->vit_out,
                            I->proj_w.w, n_imgtok, Dv, W);
        const wg proj[] = {I->proj_w, I->proj_b};
        ready(p, proj, 2);
        if (vision_trains) {
            float *scr;
            ALLOCF(scr, vla_vit_scratch_floats(&I->vit, f->n_img, false));
            st = vla_vit_backward(&I->vit, NULL, d_vit, f->vit_acts, scr, f->n_img); /* reports per layer */
        }
    }
    if (st == VLA_OK) vla_policy_ready_rest(p); /* what this batch did not reach, and frozen parameters */
    vla_arena_rewind(&I->arena, mark);
    return st;
}

/* ---- sampling ---------------------------------------------------------------- */

/* An observation laid out as a packed batch (prefix, plus the action tokens
 * when `with_actions`), in malloc'd arrays. */
typedef struct {
    vla_batch b;
    int32_t *cu, *cu_img, *pos, *grp, *ids;
    uint8_t *roles;
    float *images;
} obs_pack;

static void obs_pack_free(obs_pack *o) {
    free(o->cu), free(o->cu_img), free(o->pos), free(o->grp), free(o->ids), free(o->roles), free(o->images);
    memset(o, 0, sizeof *o);
}

static vla_status pack_obs(vla_policy *p, const vla_observation *obs, bool with_actions, obs_pack *o) {
    memset(o, 0, sizeof *o);
    const vla_policy_config *c = &p->cfg;
    int32_t S = obs->n_samples;
    if (S < 1) return vla_error(VLA_ERR_INVALID_ARG, "pi05 sample: n_samples is %d", S);
    int64_t cams = c->vision.cameras, img_fl = c->vision.channels * c->vision.image_size * c->vision.image_size;
    int64_t maxt = c->language.max_tokens, Hz = c->action.horizon, Ti = vla_policy_image_tokens(c);
    int64_t cap = (int64_t)S * (cams * Ti + maxt + Hz);
    o->cu = malloc((size_t)(S + 1) * sizeof(int32_t));
    o->cu_img = malloc((size_t)(S + 1) * sizeof(int32_t));
    o->pos = malloc((size_t)cap * sizeof(int32_t));
    o->grp = malloc((size_t)cap * sizeof(int32_t));
    o->ids = calloc((size_t)cap, sizeof(int32_t));
    o->roles = malloc((size_t)cap);
    o->images = malloc((size_t)(S * cams * img_fl > 0 ? S * cams * img_fl : 1) * sizeof(float));
    int32_t *tok = malloc((size_t)maxt * sizeof(int32_t));
    vla_status st = VLA_OK;
    if (!o->cu || !o->cu_img || !o->pos || !o->grp || !o->ids || !o->roles || !o->images || !tok) {
        st = vla_error(VLA_ERR_NOMEM, "pi05 sample: out of memory");
        goto done;
    }
    int64_t T = 0, n_img = 0;
    o->cu[0] = o->cu_img[0] = 0;
    for (int32_t s = 0; s < S; s++) {
        int32_t k = 0;
        for (int64_t cam = 0; cam < cams; cam++) {
            if (obs->image_valid && !obs->image_valid[s * cams + cam]) continue;
            memcpy(o->images + n_img * img_fl, obs->images + (s * cams + cam) * img_fl, (size_t)img_fl * sizeof(float));
            n_img++, k++;
        }
        int64_t nt = 0;
        st = vla_policy_tokenize(p, obs->task ? obs->task[s] : "", obs->state + s * c->action.state_dim,
                              c->action.state_dim, tok, maxt, &nt);
        if (st != VLA_OK) goto done;
        int64_t len = vla_policy_sample_layout(p, k, (int32_t)nt, o->roles + T, o->grp + T, o->pos + T);
        int64_t keep = with_actions ? len : len - Hz;
        for (int64_t i = 0, j = 0; i < keep; i++)
            if (o->roles[T + i] == VLA_ROLE_TEXT && j < nt) o->ids[T + i] = tok[j++];
        T += keep;
        o->cu[s + 1] = (int32_t)T;
        o->cu_img[s + 1] = (int32_t)n_img;
    }
    o->b.n_samples = S;
    o->b.n_tokens = T;
    o->b.cu_seqlens = o->cu;
    o->b.roles = o->roles;
    o->b.positions = o->pos;
    o->b.groups = o->grp;
    o->b.token_ids = o->ids;
    o->b.n_images = (int32_t)n_img;
    o->b.cu_images = o->cu_img;
    o->b.images = o->images;
    o->b.state = obs->state;
done:
    free(tok);
    if (st != VLA_OK) obs_pack_free(o);
    return st;
}

typedef struct {
    vla_policy *p;
    obs_pack *o;
    float *tvec; /* [S] */
    vla_arena_mark mark;
} sample_ctx;

/* Uncached: the whole sequence through the training forward. */
static vla_status velocity_uncached(void *vctx, float t, const float *x, float *v, int64_t n) {
    sample_ctx *ctx = vctx;
    pi05_impl *I = impl_of(ctx->p);
    arena_begin(I);
    for (int32_t s = 0; s < ctx->o->b.n_samples; s++) ctx->tvec[s] = t;
    VLA_TRY(forward(ctx->p, &ctx->o->b, x, ctx->tvec));
    memcpy(v, I->f.vpred, (size_t)n * sizeof(float));
    I->have_fwd = false;
    return VLA_OK;
}

/* Cached: the expert alone, its queries against the prefix K/V of f->la[l]
 * (computed once by a prefix-only forward) and its own new K/V. */
static vla_status velocity_cached(void *vctx, float t, const float *x, float *v, int64_t n) {
    sample_ctx *ctx = vctx;
    vla_policy *p = ctx->p;
    pi05_impl *I = impl_of(p);
    const fwd_state *f = &I->f;
    const vla_ops *ops = p->tops;
    const vla_policy_config *c = &p->cfg;
    const vla_lm_config *l = &c->language;
    int64_t L = l->depth, We = c->expert.width, hd = l->head_dim, HD = l->heads * hd, KD = l->kv_heads * hd;
    int64_t A = c->action.action_dim, Hz = c->action.horizon;
    int32_t S = f->S;
    int64_t Na = (int64_t)S * Hz;
    float eps = (float)l->norm_eps;
    (void)n;
    vla_arena_rewind(&I->arena, ctx->mark);
    for (int32_t s = 0; s < S; s++) ctx->tvec[s] = t;
    float *temb, *tm1, *tm1s, *tm2, *cond;
    VLA_TRY(time_forward(p, I, ctx->tvec, S, &temb, &tm1, &tm1s, &tm2, &cond));
    int32_t *acu, *apos, *agrp;
    ALLOCI(acu, S + 1);
    ALLOCI(apos, Na);
    ALLOCI(agrp, Na);
    for (int32_t s = 0; s <= S; s++) acu[s] = (int32_t)(s * Hz);
    for (int32_t s = 0; s < S; s++)
        for (int64_t k = 0; k < Hz; k++) {
            /* positions continue after the sample's prefix; actions form group 1 (prefix-LM) */
            apos[s * Hz + k] = (int32_t)(f->cu[s + 1] - f->cu[s] + k);
            agrp[s * Hz + k] = 1;
        }
    float *xa, *xn, *mod, *an, *q, *k, *vv, *o, *y, *mscr, *ma;
    vla_mlp_config mlp_a = geglu(We, c->expert.mlp);
    ALLOCF(xa, Na * We);
    ALLOCF(xn, Na * We);
    ALLOCF(mod, S * 3 * We);
    ALLOCF(an, Na * We);
    ALLOCF(q, Na * HD);
    ALLOCF(k, Na * KD);
    ALLOCF(vv, Na * KD);
    ALLOCF(o, Na * HD);
    ALLOCF(y, Na * We);
    ALLOCF(ma, Na * We);
    ALLOCF(mscr, vla_mlp_acts_floats(&mlp_a, Na));
    lin(I, ops, xa, x, I->ain_w, I->ain_b.w, Na, A, We);
    vla_attn_config ac = attn_cfg(c);
    vla_attn_seqs qs = {S, acu, agrp}, cs = {S, f->cu, f->grp};
    for (int64_t li = 0; li < L; li++) {
        const ex_layer *EL = &I->ex[li];
        const layer_acts *a = &f->la[li];
        lin(I, ops, mod, cond, EL->in_dw, EL->in_db.w, S, We, 3 * We);
        VLA_TRY(vla_adarmsnorm_forward(an, NULL, xa, mod, acu, S, Na, We, eps));
        lin(I, ops, q, an, EL->q, NULL, Na, We, HD);
        lin(I, ops, k, an, EL->k, NULL, Na, We, KD);
        lin(I, ops, vv, an, EL->v, NULL, Na, We, KD);
        vla_rope_forward(q, q, apos, Na, l->heads, hd, l->rope_theta);
        vla_rope_forward(k, k, apos, Na, l->kv_heads, hd, l->rope_theta);
        VLA_TRY(vla_attention_forward_cached(ops, &ac, o, NULL, q, &qs, a->K, a->V, &cs, k, vv, &qs, NULL));
        lin(I, ops, y, o, EL->o, NULL, Na, HD, We);
        VLA_TRY(vla_gated_residual_forward(xn, xa, y, mod, acu, S, Na, We));
        lin(I, ops, mod, cond, EL->post_dw, EL->post_db.w, S, We, 3 * We);
        VLA_TRY(vla_adarmsnorm_forward(an, NULL, xn, mod, acu, S, Na, We, eps));
        vla_mlp_weights ew = {EL->up.w, NULL, EL->gate.w, NULL, EL->down.w, NULL};
        vla_mlp_forward(ops, &mlp_a, ma, mscr, an, &ew, Na);
        VLA_TRY(vla_gated_residual_forward(xa, xn, ma, mod, acu, S, Na, We));
    }
    lin(I, ops, mod, cond, I->fin_dw, I->fin_db.w, S, We, 3 * We);
    VLA_TRY(vla_adarmsnorm_forward(an, NULL, xa, mod, acu, S, Na, We, eps));
    lin(I, ops, v, an, I->aout_w, I->aout_b.w, Na, We, A);
    return VLA_OK;
}

static vla_status sample(vla_policy *p, const vla_observation *obs, float *actions, bool cached) {
    pi05_impl *I = impl_of(p);
    const vla_policy_config *c = &p->cfg;
    if (!obs || !obs->state || (c->vision.cameras > 0 && !obs->images))
        return vla_error(VLA_ERR_INVALID_ARG, "pi05 sample: observation needs state and images");
    obs_pack o;
    VLA_TRY(pack_obs(p, obs, !cached, &o));
    vla_status st = vla_batch_check(&o.b, c);
    int32_t S = obs->n_samples;
    int64_t n = (int64_t)S * c->action.horizon * c->action.action_dim, per = n / S;
    float *scratch = malloc((size_t)n * sizeof(float)), *tvec = malloc((size_t)S * sizeof(float));
    if (st == VLA_OK && (!scratch || !tvec)) st = vla_error(VLA_ERR_NOMEM, "pi05 sample: out of memory");
    if (st == VLA_OK) {
        for (int32_t s = 0; s < S; s++)
            vla_flow_sample_noise(obs->seed, obs->sample_keys ? obs->sample_keys[s] : (uint64_t)s,
                                  VLA_FLOW_RNG_SAMPLING, actions + s * per, per);
        sample_ctx ctx = {p, &o, tvec, {0}};
        arena_begin(I);
        if (cached) {
            st = forward(p, &o.b, NULL, NULL); /* the prefix once: K/V per layer stay in the arena */
            ctx.mark = vla_arena_get_mark(&I->arena);
            if (st == VLA_OK) st = vla_flow_euler(&I->flow, velocity_cached, &ctx, actions, scratch, n);
        } else {
            st = vla_flow_euler(&I->flow, velocity_uncached, &ctx, actions, scratch, n);
        }
        I->have_fwd = false;
    }
    free(scratch), free(tvec);
    obs_pack_free(&o);
    return st != VLA_OK ? vla_error_context(st, "pi05 sample_actions") : VLA_OK;
}

static vla_status pi05_sample_actions(vla_policy *p, const vla_observation *obs, float *actions) {
    return sample(p, obs, actions, true);
}

vla_status vla_pi05_sample_actions_uncached(vla_policy *p, const vla_observation *obs, float *actions) {
    if (!p || p->cfg.kind != VLA_POLICY_PI05) return vla_error(VLA_ERR_INVALID_ARG, "not a pi05 policy");
    return sample(p, obs, actions, false);
}

/* ---- the rest of the interface ----------------------------------------------- */

static void pi05_destroy(vla_policy *p) {
    pi05_impl *I = impl_of(p);
    if (I) {
        vla_vit_release(&I->vit);
        free(I->lm), free(I->ex);
        vla_arena_free(&I->arena);
        free(I);
    }
    vla_policy_free_params(p);
    free(p);
}

static const vla_policy_ops PI05_OPS = {
    "pi05", pi05_destroy, NULL, NULL, NULL, /* init, tokenize, layout: policy.h defaults */
    pi05_loss, pi05_backward, pi05_sample_actions,
};

vla_status vla_pi05_create(const vla_policy_config *cfg, const vla_ops *ops, vla_policy **out) {
    *out = NULL;
    if (cfg->kind != VLA_POLICY_PI05) return vla_error(VLA_ERR_INVALID_ARG, "pi05: config '%s' is not pi05", cfg->name);
    const vla_lm_config *l = &cfg->language;
    if (cfg->expert.depth != l->depth)
        return vla_error(VLA_ERR_INVALID_ARG, "pi05 '%s': expert depth %lld must equal the LM's %lld", cfg->name,
                         (long long)cfg->expert.depth, (long long)l->depth);
    if (l->head_dim % 2 || l->kv_heads < 1 || l->heads % l->kv_heads)
        return vla_error(VLA_ERR_INVALID_ARG, "pi05 '%s': bad attention shape", cfg->name);
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
    vla_arena_init(&I->arena, 8u << 20);
    vla_flow_from_config(&I->flow, cfg);
    vla_status st = vla_policy_alloc_params(p);
    if (st == VLA_OK) st = bind_all(p, I);
    I->vit.owner = p; /* the ViT's backward reports its layers' gradients ready */
    if (st != VLA_OK) {
        pi05_destroy(p);
        return vla_error_context(st, "pi05 '%s'", cfg->name);
    }
    vla_policy_default_init(p, 0);
    *out = p;
    return VLA_OK;
}
