/* block.c — the configured pre-norm transformer block (see block.h): size
 * tables, the two forward halves around the attention, and their backward. */
#include "nn/block.h"

#include <string.h>

#include "nn/acts.h"
#include "nn/adaln.h"
#include "nn/adarmsnorm.h"
#include "nn/layernorm.h"
#include "nn/linear.h"
#include "nn/rmsnorm.h"
#include "nn/rope.h"

/* ---- sizes ------------------------------------------------------------------ */

static bool adaptive(vla_block_norm k) { return k == VLA_BLOCK_NORM_ADARMS || k == VLA_BLOCK_NORM_ADALN; }
static bool layer_kind(vla_block_norm k) {
    return k == VLA_BLOCK_NORM_LAYER || k == VLA_BLOCK_NORM_LAYER_PLAIN || k == VLA_BLOCK_NORM_ADALN;
}
/* floats of one sample's modulation vector */
static int64_t mod_width(vla_block_norm k, int64_t D) {
    return k == VLA_BLOCK_NORM_ADARMS ? 3 * D : k == VLA_BLOCK_NORM_ADALN ? 2 * D : 0;
}

enum {
#define VLA_BLOCK_ENUM(name, size) ACT_##name,
    VLA_BLOCK_ACTS(VLA_BLOCK_ENUM) N_ACTS
#undef VLA_BLOCK_ENUM
};
enum {
#define VLA_BLOCK_ENUM(name, size) SCR_##name,
    VLA_BLOCK_SCRATCH(VLA_BLOCK_ENUM) N_SCRATCH
#undef VLA_BLOCK_ENUM
};

/* Fill the size tables: the names used by VLA_BLOCK_ACTS / _SCRATCH. */
#define BLOCK_DIMS(c, n_rows, n_ctx, n_seg)                                                                     \
    const int64_t n = (n_rows), nk = (c)->cross ? (n_ctx) : (n_rows), S = (n_seg), D = (c)->dim;              \
    const int64_t Hq = (c)->attn.n_heads, Hk = (c)->attn.n_kv_heads, Q = Hq * (c)->attn.head_dim;             \
    const int64_t K = Hk * (c)->attn.head_dim, k1 = mod_width((c)->norm1, D), k2 = mod_width((c)->norm2, D); \
    const int64_t ln1 = layer_kind((c)->norm1), ln2 = layer_kind((c)->norm2), qkn = (c)->qk_norm;            \
    const int64_t g = (c)->norm1 == VLA_BLOCK_NORM_ADARMS || (c)->norm2 == VLA_BLOCK_NORM_ADARMS;             \
    const int64_t M = vla_mlp_acts_floats(&(c)->mlp, n);                                                     \
    const int64_t ms = vla_mlp_scratch_floats(&(c)->mlp, n), ea = !(c)->external_attention;                  \
    const int64_t hD = (c)->copies ? vla_linear_kept_floats((c)->copies, n, D) : n * D;                      \
    (void)hD, (void)ea, (void)n, (void)nk, (void)S, (void)D, (void)Hq, (void)Hk, (void)Q, (void)K, (void)k1, (void)k2, (void)ln1, \
        (void)ln2, (void)qkn, (void)g, (void)M, (void)ms

int64_t vla_block_acts_floats(const vla_block_config *c, int64_t n_rows, int64_t n_ctx, int32_t n_seg) {
    BLOCK_DIMS(c, n_rows, n_ctx, n_seg);
    const int64_t sizes[] = {VLA_BLOCK_ACTS(VLA_ACTS_SIZE)};
    return vla_acts_total(sizes, N_ACTS);
}

void vla_block_acts_carve(const vla_block_config *c, int64_t n_rows, int64_t n_ctx, int32_t n_seg, float *buf,
                          vla_block_acts *a) {
    BLOCK_DIMS(c, n_rows, n_ctx, n_seg);
    const int64_t sizes[] = {VLA_BLOCK_ACTS(VLA_ACTS_SIZE)};
    _Static_assert(sizeof(vla_block_acts) == N_ACTS * sizeof(float *), "vla_block_acts is the size table");
    vla_acts_carve(sizes, N_ACTS, buf, (float **)a);
}

int64_t vla_block_scratch_floats(const vla_block_config *c, int64_t n_rows, int64_t n_ctx, int32_t n_seg) {
    BLOCK_DIMS(c, n_rows, n_ctx, n_seg);
    const int64_t sizes[] = {VLA_BLOCK_SCRATCH(VLA_ACTS_SIZE)};
    return vla_acts_total(sizes, N_SCRATCH);
}

void vla_block_scratch_carve(const vla_block_config *c, int64_t n_rows, int64_t n_ctx, int32_t n_seg, float *buf,
                             vla_block_scratch *s) {
    BLOCK_DIMS(c, n_rows, n_ctx, n_seg);
    const int64_t sizes[] = {VLA_BLOCK_SCRATCH(VLA_ACTS_SIZE)};
    _Static_assert(sizeof(vla_block_scratch) == N_SCRATCH * sizeof(float *), "vla_block_scratch is the size table");
    vla_acts_carve(sizes, N_SCRATCH, buf, (float **)s);
}

vla_status vla_block_check(const vla_block_config *c) {
    const vla_attn_config *a = &c->attn;
    if (c->dim <= 0 || a->n_heads <= 0 || a->n_kv_heads <= 0 || a->head_dim <= 0 || a->n_heads % a->n_kv_heads)
        return vla_error(VLA_ERR_INVALID_ARG, "block: bad shape (dim %lld, %d heads, %d kv heads, head_dim %d)",
                         (long long)c->dim, a->n_heads, a->n_kv_heads, a->head_dim);
    if (c->mlp.dim != c->dim || c->mlp.hidden <= 0 || (c->mlp.out_dim && c->mlp.out_dim != c->dim))
        return vla_error(VLA_ERR_INVALID_ARG, "block: MLP %lld → %lld must map the block width %lld to itself",
                         (long long)c->mlp.dim, (long long)c->mlp.hidden, (long long)c->dim);
    if ((adaptive(c->norm1) || adaptive(c->norm2)) && c->cond_dim <= 0)
        return vla_error(VLA_ERR_INVALID_ARG, "block: adaptive norm without a conditioning width");
    if (c->rope_theta > 0 && (a->head_dim % 2 || c->cross))
        return vla_error(VLA_ERR_INVALID_ARG, "block: RoPE needs an even head_dim and self-attention");
    if (c->cross && c->kv_dim <= 0) return vla_error(VLA_ERR_INVALID_ARG, "block: cross-attention without kv_dim");
    return VLA_OK;
}

/* ---- norms -------------------------------------------------------------------- */

/* out = norm(x) for either position, doing what fuse says besides (ops.h, vla_norm_fuse: the residual
 * add before it, out's GEMM-ready copy); mod receives an adaptive norm's modulation. */
static vla_status norm_forward(const vla_ops *ops, const vla_block_config *c, vla_block_norm kind, vla_wg nw,
                               vla_wg nb, const vla_block_io *io, const float *x, float *out, float *mean,
                               float *rstd, float *mod, const vla_norm_fuse *fuse) {
    int64_t n = io->n, D = c->dim;
    float eps = c->norm_eps;
    switch (kind) {
    case VLA_BLOCK_NORM_LAYER:
        vla_layernorm_forward_fused(ops, out, mean, rstd, x, nw.w, nb.w, n, D, eps, fuse);
        return VLA_OK;
    case VLA_BLOCK_NORM_LAYER_PLAIN:
        vla_layernorm_forward_fused(ops, out, mean, rstd, x, NULL, NULL, n, D, eps, fuse);
        return VLA_OK;
    case VLA_BLOCK_NORM_RMS: vla_rmsnorm_forward_fused(ops, out, rstd, x, nw.w, false, n, D, eps, fuse); return VLA_OK;
    case VLA_BLOCK_NORM_RMS_1P: vla_rmsnorm_forward_fused(ops, out, rstd, x, nw.w, true, n, D, eps, fuse); return VLA_OK;
    case VLA_BLOCK_NORM_ADARMS:
        vla_linear_forward(ops, mod, io->cond, nw.w, nb.w, io->n_seg, c->cond_dim, 3 * D);
        return vla_adarmsnorm_forward(ops, out, rstd, x, mod, io->cu, io->n_seg, n, D, eps, fuse);
    case VLA_BLOCK_NORM_ADALN:
        vla_linear_forward(ops, mod, io->cond, nw.w, nb.w, io->n_seg, c->cond_dim, 2 * D);
        return vla_adaln_forward(ops, out, mean, rstd, x, mod, io->cu, io->n_seg, n, D, eps, fuse);
    }
    return vla_error(VLA_ERR_INVALID_ARG, "block: unknown norm kind %d", (int)kind);
}

/* d_x += ∂ through the norm from d_out; an adaptive norm adds its part to
 * dmod (which may already hold the gate's) and then runs the modulation
 * Linear's backward into d_cond and its weights. */
static vla_status norm_backward(const vla_ops *ops, const vla_block_config *c, vla_block_norm kind, vla_wg nw,
                                vla_wg nb, const vla_block_io *io, const float *x, const float *d_out,
                                const float *mean, const float *rstd, const float *mod, float *dmod, float *d_x,
                                float *d_cond) {
    int64_t n = io->n, D = c->dim;
    switch (kind) {
    case VLA_BLOCK_NORM_LAYER:
        vla_layernorm_backward(ops, d_x, nw.g, nb.g, d_out, x, nw.w, mean, rstd, n, D);
        return VLA_OK;
    case VLA_BLOCK_NORM_LAYER_PLAIN:
        vla_layernorm_backward(ops, d_x, NULL, NULL, d_out, x, NULL, mean, rstd, n, D);
        return VLA_OK;
    case VLA_BLOCK_NORM_RMS:
    case VLA_BLOCK_NORM_RMS_1P:
        vla_rmsnorm_backward(ops, d_x, nw.g, d_out, x, nw.w, kind == VLA_BLOCK_NORM_RMS_1P, rstd, n, D);
        return VLA_OK;
    case VLA_BLOCK_NORM_ADARMS:
        VLA_TRY(vla_adarmsnorm_backward(ops, d_x, dmod, d_out, x, mod, rstd, io->cu, io->n_seg, n, D));
        vla_linear_backward(ops, d_cond, nw.g, nb.g, dmod, io->cond, nw.w, io->n_seg, c->cond_dim, 3 * D);
        return VLA_OK;
    case VLA_BLOCK_NORM_ADALN:
        VLA_TRY(vla_adaln_backward(ops, d_x, dmod, d_out, x, mod, mean, rstd, io->cu, io->n_seg, n, D));
        vla_linear_backward(ops, d_cond, nw.g, nb.g, dmod, io->cond, nw.w, io->n_seg, c->cond_dim, 2 * D);
        return VLA_OK;
    }
    return vla_error(VLA_ERR_INVALID_ARG, "block: unknown norm kind %d", (int)kind);
}

/* ---- forward -------------------------------------------------------------------- */

/* linear i's precision (NULL: f32) */
#define LQ(w, i) ((w)->prec ? &(w)->prec->lin[VLA_BLOCK_LIN_##i] : NULL)

const vla_wg *vla_block_linear_weight(const vla_block_weights *w, vla_block_linear i) {
    const vla_wg *t[VLA_BLOCK_N_LIN] = {&w->q_w, &w->k_w, &w->v_w, &w->o_w, &w->up_w, &w->gate_w, &w->down_w};
    return (unsigned)i < VLA_BLOCK_N_LIN && t[i]->w ? t[i] : NULL;
}


/* Kept copies (block.h, copies) are read by bf16 GEMMs only: every linear of the block must be bf16. */
static vla_status kept_ok(const vla_block_config *c, const vla_block_weights *w) {
    if (!c->copies) return VLA_OK;
    for (int i = 0; i < VLA_BLOCK_N_LIN; i++)
        if (vla_block_linear_weight(w, (vla_block_linear)i) && (!w->prec || w->prec->lin[i].mode != VLA_PREC_BF16))
            return vla_error(VLA_ERR_INTERNAL, "block: configured to keep bf16 copies of its normed inputs, but its "
                                               "linear %d does not run in bf16 (mode %d)",
                             i, w->prec ? (int)w->prec->lin[i].mode : (int)VLA_PREC_FP32);
    return VLA_OK;
}

/* A normed input's slot (h1, h2) read two ways: its f32 tensor (NULL where the block keeps the copy alone:
 * block.h, copies), and the bf16 copy kept there (NULL where it keeps f32) */
static float *normed_f32(const vla_block_config *c, float *h) { return c->copies ? NULL : h; }
static void *normed_copy(const vla_block_config *c, float *h) { return c->copies ? (void *)h : NULL; }

static vla_mlp_weights mlp_weights(const vla_block_weights *w) {
    vla_mlp_weights m = {w->up_w.w,   w->up_b.w,   w->gate_w.w,   w->gate_b.w,   w->down_w.w,
                         w->down_b.w, LQ(w, UP), LQ(w, GATE), LQ(w, DOWN)};
    return m;
}

static vla_mlp_grads mlp_grads(const vla_block_weights *w) {
    vla_mlp_grads m = {w->up_w.g, w->up_b.g, w->gate_w.g, w->gate_b.g, w->down_w.g, w->down_b.g};
    return m;
}

static vla_attn_seqs q_seqs(const vla_block_io *io) {
    vla_attn_seqs s = {io->n_seg, io->cu, io->groups};
    return s;
}

static vla_attn_seqs k_seqs(const vla_block_config *c, const vla_block_io *io) {
    if (!c->cross) return q_seqs(io);
    vla_attn_seqs s = {io->n_seg, io->cu_ctx, NULL};
    return s;
}

vla_status vla_block_attn_in(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                             const vla_block_io *io, const float *x, vla_block_acts *a) {
    int64_t n = io->n, D = c->dim, hd = c->attn.head_dim, Hq = c->attn.n_heads, Hk = c->attn.n_kv_heads;
    int64_t Q = Hq * hd, K = Hk * hd, nk = c->cross ? io->n_ctx : n;
    VLA_TRY(kept_ok(c, w));
    /* the norm writes h1's bf16 (or FP8) copy that q (k, v) read (nn/linear.h, producer casts); else q, k
     * and v read one input: cast once for the three (shared input casts). Kept (block.h, copies): the
     * copy goes into a->h1 and is all there is of h1 (h1f NULL) */
    const vla_fp8_operand *h1f8 = NULL;
    void *h1p = c->copies ? normed_copy(c, a->h1) : vla_linear_input_ready_fp8(ops, LQ(w, Q), n, D, &h1f8);
    float *h1f = normed_f32(c, a->h1);
    const vla_norm_fuse f1 = {NULL, NULL, h1p, h1f8};
    VLA_TRY(norm_forward(ops, c, c->norm1, w->norm1_w, w->norm1_b, io, x, h1f, a->mean1, a->rstd1, a->mod1,
                         h1p ? &f1 : NULL));
    float *q = c->qk_norm ? a->qp : a->q, *k = c->qk_norm ? a->kp : a->k;
    const void *h1r = h1p ? h1p : c->cross ? NULL : vla_linear_share_input(ops, LQ(w, Q), false, h1f, n, D);
    vla_linear_forward_x(ops, LQ(w, Q), h1r, q, h1f, w->q_w.w, w->q_b.w, n, D, Q);
    if (!c->cross) {
        vla_linear_forward_x(ops, LQ(w, K), h1r, k, h1f, w->k_w.w, w->k_b.w, n, D, K);
        vla_linear_forward_x(ops, LQ(w, V), h1r, a->v, h1f, w->v_w.w, w->v_b.w, n, D, K);
    } else if (!io->k_cached) {
        const void *cr = vla_linear_share_input(ops, LQ(w, K), false, io->ctx, nk, c->kv_dim);
        vla_linear_forward_x(ops, LQ(w, K), cr, k, io->ctx, w->k_w.w, w->k_b.w, nk, c->kv_dim, K);
        vla_linear_forward_x(ops, LQ(w, V), cr, a->v, io->ctx, w->v_w.w, w->v_b.w, nk, c->kv_dim, K);
    }
    if (c->qk_norm) {
        vla_rmsnorm_forward(ops, a->q, a->rq, a->qp, w->q_norm.w, false, n * Hq, hd, c->norm_eps);
        if (!(c->cross && io->k_cached))
            vla_rmsnorm_forward(ops, a->k, a->rk, a->kp, w->k_norm.w, false, nk * Hk, hd, c->norm_eps);
    }
    if (c->rope_theta > 0) {
        vla_rope_forward(ops, a->q, a->q, io->pos, n, Hq, hd, c->rope_theta);
        vla_rope_forward(ops, a->k, a->k, io->pos, n, Hk, hd, c->rope_theta);
    }
    return VLA_OK;
}

vla_status vla_block_attn_out(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                              const vla_block_io *io, const float *x, float *x_out, vla_block_acts *a) {
    return vla_block_attn_out_x(ops, c, w, io, x, x_out, a, NULL);
}

vla_status vla_block_attn_out_x(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                                const vla_block_io *io, const float *x, float *x_out, vla_block_acts *a,
                                const void *att_ready) {
    int64_t n = io->n, D = c->dim, Q = (int64_t)c->attn.n_heads * c->attn.head_dim;
    bool gate1 = c->norm1 == VLA_BLOCK_NORM_ADARMS, gate2 = c->norm2 == VLA_BLOCK_NORM_ADARMS;
    VLA_TRY(kept_ok(c, w));
    vla_linear_forward_x(ops, LQ(w, O), att_ready, gate1 ? a->y1 : a->xm, a->att, w->o_w.w, w->o_b.w, n, Q, D);
    if (gate1) VLA_TRY(vla_gated_residual_forward(ops, a->xm, x, a->y1, a->mod1, io->cu, io->n_seg, n, D));
    /* R1 in norm2's pass (x_mid = o-proj + x, in place), and h2's bf16 (or FP8) copy for the MLP's first
     * GEMMs */
    const vla_fp8_operand *h2f8 = NULL;
    void *h2p = c->copies ? normed_copy(c, a->h2)
                          : vla_linear_input_ready_fp8(ops, c->mlp.gated ? LQ(w, GATE) : LQ(w, UP), n, D, &h2f8);
    float *h2f = normed_f32(c, a->h2); /* kept: the copy is all there is of h2, as h1 */
    const vla_norm_fuse f2 = {gate1 ? NULL : x, gate1 ? NULL : a->xm, h2p, h2f8};
    VLA_TRY(norm_forward(ops, c, c->norm2, w->norm2_w, w->norm2_b, io, a->xm, h2f, a->mean2, a->rstd2, a->mod2,
                         &f2));
    vla_mlp_weights mw = mlp_weights(w);
    vla_mlp_forward(ops, &c->mlp, gate2 ? a->y2 : x_out, a->mlp, h2f, h2p, &mw, n);
    if (gate2) VLA_TRY(vla_gated_residual_forward(ops, x_out, a->xm, a->y2, a->mod2, io->cu, io->n_seg, n, D));
    else ops->add(x_out, x_out, a->xm, n * D);
    return VLA_OK;
}

vla_status vla_block_forward(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                             const vla_block_io *io, const float *x, float *x_out, vla_block_acts *a) {
    VLA_TRY(vla_block_attn_in(ops, c, w, io, x, a));
    vla_attn_seqs qs = q_seqs(io), ks = k_seqs(c, io);
    const float *k = c->cross && io->k_cached ? io->k_cached : a->k;
    const float *v = c->cross && io->v_cached ? io->v_cached : a->v;
    vla_attn_config ac = vla_block_attn_config(&c->attn, w);
    /* the attention writes att's bf16 copy for the o-projection (nn/linear.h, producer casts) */
    void *attr = vla_linear_input_ready_buffer(ops, LQ(w, O), io->n, (int64_t)c->attn.n_heads * c->attn.head_dim);
    VLA_TRY(vla_attention_forward_ready(ops, &ac, a->att, a->lse, a->q, k, v, &qs, &ks, NULL, attr));
    return vla_block_attn_out_x(ops, c, w, io, x, x_out, a, attr);
}

/* ---- backward --------------------------------------------------------------------- */

vla_status vla_block_attn_out_backward(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                                       const vla_block_io *io, const vla_block_acts *a, vla_block_scratch *s,
                                       float *d_x, float *d_cond) {
    int64_t n = io->n, D = c->dim, Q = (int64_t)c->attn.n_heads * c->attn.head_dim;
    int32_t S = io->n_seg;
    bool gate1 = c->norm1 == VLA_BLOCK_NORM_ADARMS, gate2 = c->norm2 == VLA_BLOCK_NORM_ADARMS;
    /* R2 and the MLP: d_x holds ∂L/∂x_out, which is also the identity part of ∂L/∂x_mid */
    const float *d_y2 = d_x;
    if (adaptive(c->norm2)) ops->fill(s->dmod2, 0.0f, S * mod_width(c->norm2, D));
    if (gate2) { /* writes s->dy */
        VLA_TRY(vla_gated_residual_backward(ops, NULL, s->dy, s->dmod2, d_x, a->y2, a->mod2, io->cu, S, n, D));
        d_y2 = s->dy;
    }
    vla_mlp_weights mw = mlp_weights(w);
    vla_mlp_grads mg = mlp_grads(w);
    /* writes s->dh; a kept h2 is its copy, which the MLP's weight gradients read as the forward did */
    vla_mlp_backward(ops, &c->mlp, s->dh, true, &mg, s->mlp, d_y2, normed_f32(c, a->h2), normed_copy(c, a->h2),
                     a->mlp, &mw, n);
    VLA_TRY(norm_backward(ops, c, c->norm2, w->norm2_w, w->norm2_b, io, a->xm, s->dh, a->mean2, a->rstd2, a->mod2,
                          s->dmod2, d_x, d_cond));
    /* R1 and the o-projection: d_x now holds ∂L/∂x_mid */
    const float *d_y1 = d_x;
    if (adaptive(c->norm1)) ops->fill(s->dmod1, 0.0f, S * mod_width(c->norm1, D));
    if (gate1) {
        VLA_TRY(vla_gated_residual_backward(ops, NULL, s->dy, s->dmod1, d_x, a->y1, a->mod1, io->cu, S, n, D));
        d_y1 = s->dy;
    }
    const vla_linear_bwd ob = {NULL, NULL, true}; /* o's dgrad writes s->datt */
    vla_linear_backward_ex(ops, LQ(w, O), &ob, s->datt, w->o_w.g, w->o_b.g, d_y1, a->att, w->o_w.w, n, Q, D);
    return VLA_OK;
}

vla_status vla_block_attn_in_backward(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                                      const vla_block_io *io, const float *x, const vla_block_acts *a,
                                      vla_block_scratch *s, float *d_x, float *d_ctx, float *d_cond) {
    int64_t n = io->n, D = c->dim, hd = c->attn.head_dim, Hq = c->attn.n_heads, Hk = c->attn.n_kv_heads;
    int64_t Q = Hq * hd, K = Hk * hd, nk = c->cross ? io->n_ctx : n;
    if (c->cross && io->k_cached)
        return vla_error(VLA_ERR_INVALID_ARG, "block: no backward through cached context K/V");
    const float *gq = s->dq, *gk = s->dk;
    if (c->rope_theta > 0) { /* RoPE is linear: its backward needs only the gradients, rotated in place */
        vla_rope_backward(ops, s->dq, s->dq, io->pos, n, Hq, hd, c->rope_theta);
        vla_rope_backward(ops, s->dk, s->dk, io->pos, n, Hk, hd, c->rope_theta);
    }
    if (c->qk_norm) {
        ops->fill(s->dqp, 0.0f, n * Q);
        ops->fill(s->dkp, 0.0f, nk * K);
        vla_rmsnorm_backward(ops, s->dqp, w->q_norm.g, gq, a->qp, w->q_norm.w, false, a->rq, n * Hq, hd);
        vla_rmsnorm_backward(ops, s->dkp, w->k_norm.g, gk, a->kp, w->k_norm.w, false, a->rk, nk * Hk, hd);
        gq = s->dqp, gk = s->dkp;
    }
    /* the wgrads of q, k and v read one input: cast once (nn/linear.h, shared input casts) — or, kept
     * (block.h, copies), the forward's copy itself, no cast (q alone reads it in cross-attention) */
    bool kv_train = w->k_w.g || w->v_w.g;
    const float *h1f = normed_f32(c, a->h1);
    const void *h1r = c->copies                               ? normed_copy(c, a->h1)
                      : !c->cross && (w->q_w.g || kv_train) ? vla_linear_share_input(ops, LQ(w, Q), true, h1f, n, D)
                                                            : NULL;
    const vla_linear_bwd qb = {h1r, NULL, true}; /* q's dgrad writes s->dh, k's and v's add to it */
    vla_linear_backward_ex(ops, LQ(w, Q), &qb, s->dh, w->q_w.g, w->q_b.g, gq, h1f, w->q_w.w, n, D, Q);
    if (!c->cross) {
        vla_linear_backward_x(ops, LQ(w, K), h1r, s->dh, w->k_w.g, w->k_b.g, gk, h1f, w->k_w.w, n, D, K);
        vla_linear_backward_x(ops, LQ(w, V), h1r, s->dh, w->v_w.g, w->v_b.g, s->dv, h1f, w->v_w.w, n, D, K);
    } else {
        const void *cr = kv_train ? vla_linear_share_input(ops, LQ(w, K), true, io->ctx, nk, c->kv_dim) : NULL;
        vla_linear_backward_x(ops, LQ(w, K), cr, d_ctx, w->k_w.g, w->k_b.g, gk, io->ctx, w->k_w.w, nk, c->kv_dim, K);
        vla_linear_backward_x(ops, LQ(w, V), cr, d_ctx, w->v_w.g, w->v_b.g, s->dv, io->ctx, w->v_w.w, nk, c->kv_dim,
                              K);
    }
    return norm_backward(ops, c, c->norm1, w->norm1_w, w->norm1_b, io, x, s->dh, a->mean1, a->rstd1, a->mod1,
                         s->dmod1, d_x, d_cond);
}

vla_status vla_block_backward(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                              const vla_block_io *io, const float *x, const vla_block_acts *a, vla_block_scratch *s,
                              float *d_x, float *d_ctx, float *d_cond) {
    int64_t n = io->n, Q = (int64_t)c->attn.n_heads * c->attn.head_dim;
    int64_t K = (int64_t)c->attn.n_kv_heads * c->attn.head_dim, nk = c->cross ? io->n_ctx : n;
    VLA_TRY(vla_block_attn_out_backward(ops, c, w, io, a, s, d_x, d_cond));
    vla_attn_seqs qs = q_seqs(io), ks = k_seqs(c, io);
    ops->fill(s->dq, 0.0f, n * Q);
    ops->fill(s->dk, 0.0f, nk * K);
    ops->fill(s->dv, 0.0f, nk * K);
    vla_attn_config ac = vla_block_attn_config(&c->attn, w);
    VLA_TRY(vla_attention_backward(ops, &ac, s->dq, s->dk, s->dv, s->datt, a->q, a->k, a->v, a->att, a->lse,
                                   &qs, &ks, NULL));
    return vla_block_attn_in_backward(ops, c, w, io, x, a, s, d_x, d_ctx, d_cond);
}

vla_status vla_block_stack_forward(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                                   int64_t depth, const vla_block_io *io, float *xs, float *acts, vla_block_keep keep,
                                   const float **out) {
    int64_t nD = io->n * c->dim, la = vla_block_acts_floats(c, io->n, io->n_ctx, io->n_seg);
    bool all_x = keep != VLA_STACK_NONE, all_a = keep == VLA_STACK_ALL;
    for (int64_t l = 0; l < depth; l++) {
        float *x = xs + (all_x ? l : (l & 1)) * nD, *xo = xs + (all_x ? l + 1 : ((l + 1) & 1)) * nD;
        vla_block_acts a;
        vla_block_acts_carve(c, io->n, io->n_ctx, io->n_seg, acts + (all_a ? l : 0) * la, &a);
        VLA_TRY(vla_block_forward(ops, c, &w[l], io, x, xo, &a));
    }
    *out = xs + (all_x ? depth : (depth & 1)) * nD;
    return VLA_OK;
}

vla_status vla_block_stack_backward(const vla_ops *ops, const vla_block_config *c, const vla_block_weights *w,
                                    int64_t depth, const vla_block_io *io, const float *xs, float *acts,
                                    vla_block_keep keep, float *scratch, float *d_x,
                                    void (*after)(void *user, int64_t layer), void *user) {
    if (keep == VLA_STACK_NONE) return vla_error(VLA_ERR_INTERNAL, "block stack backward: the forward kept nothing");
    int64_t nD = io->n * c->dim, la = vla_block_acts_floats(c, io->n, io->n_ctx, io->n_seg);
    bool all_a = keep == VLA_STACK_ALL;
    vla_block_scratch s;
    vla_block_scratch_carve(c, io->n, io->n_ctx, io->n_seg, scratch, &s);
    for (int64_t l = depth - 1; l >= 0; l--) {
        vla_block_acts a;
        vla_block_acts_carve(c, io->n, io->n_ctx, io->n_seg, acts + (all_a ? l : 0) * la, &a);
        /* the output goes to s.dh, which the block's backward overwrites
         * before reading: the kept xs[l + 1] is another block's input */
        if (!all_a && l < depth - 1) VLA_TRY(vla_block_forward(ops, c, &w[l], io, xs + l * nD, s.dh, &a));
        VLA_TRY(vla_block_backward(ops, c, &w[l], io, xs + l * nD, &a, &s, d_x, NULL, NULL));
        if (after) after(user, l);
    }
    return VLA_OK;
}

double vla_block_matmul_flops(const vla_block_config *c, int64_t n, int64_t n_ctx, int32_t n_seg) {
    double D = (double)c->dim, Q = (double)c->attn.n_heads * c->attn.head_dim;
    double K = (double)c->attn.n_kv_heads * c->attn.head_dim, M = (double)c->mlp.hidden;
    double rows = (double)n, kv_rows = c->cross ? (double)n_ctx : rows, kv_in = c->cross ? (double)c->kv_dim : D;
    double f = 2.0 * rows * D * Q * 2.0 + 2.0 * kv_rows * kv_in * K * 2.0; /* q, o; k, v */
    f += 2.0 * rows * D * M * (c->mlp.gated ? 3.0 : 2.0);
    f += 2.0 * (double)n_seg * (double)c->cond_dim * (double)(mod_width(c->norm1, c->dim) + mod_width(c->norm2, c->dim));
    return f;
}
