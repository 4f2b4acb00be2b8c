/* vit.c — SigLIP-style ViT forward and backward on the nn layers (see vit.h). */
#include "policy/vit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/activations.h"
#include "nn/attention.h"
#include "nn/layernorm.h"
#include "nn/linear.h"
#include "nn/mlp.h"
#include "nn/patch_embed.h"

static vla_status bind1(vla_vit_tensor *t, const vla_param *params, const vla_param_list *specs, const char *prefix,
                        const char *name, int64_t numel) {
    char full[256];
    int n = snprintf(full, sizeof full, "%s.%s", prefix, name);
    if (n < 0 || (size_t)n >= sizeof full) return vla_error(VLA_ERR_INVALID_ARG, "vit: name too long: %s", prefix);
    int64_t i = vla_param_find(specs, full);
    if (i < 0) return vla_error(VLA_ERR_INVALID_ARG, "vit: parameter %s not found", full);
    if (specs->items[i].numel != numel)
        return vla_error(VLA_ERR_INVALID_ARG, "vit: %s has %lld elements, the config needs %lld", full,
                         (long long)specs->items[i].numel, (long long)numel);
    t->w = params[i].data;
    t->g = params[i].grad;
    return VLA_OK;
}

vla_status vla_vit_bind(vla_vit *v, const vla_vit_config *cfg, const vla_ops *ops, const vla_param *params,
                        const vla_param_list *specs, const char *prefix) {
    memset(v, 0, sizeof *v);
    if (cfg->patch <= 0 || cfg->image_size % cfg->patch || cfg->heads <= 0 || cfg->width % cfg->heads ||
        cfg->depth < 0)
        return vla_error(VLA_ERR_INVALID_ARG, "vit: bad config (image %lld, patch %lld, width %lld, heads %lld)",
                         (long long)cfg->image_size, (long long)cfg->patch, (long long)cfg->width,
                         (long long)cfg->heads);
    v->cfg = *cfg;
    v->ops = ops;
    int64_t side = cfg->image_size / cfg->patch, D = cfg->width, M = cfg->mlp;
    v->tokens = side * side;
    int64_t cpp = cfg->channels * cfg->patch * cfg->patch;
    VLA_TRY(bind1(&v->patch_w, params, specs, prefix, "embeddings.patch_embedding.weight", D * cpp));
    VLA_TRY(bind1(&v->patch_b, params, specs, prefix, "embeddings.patch_embedding.bias", D));
    VLA_TRY(bind1(&v->pos, params, specs, prefix, "embeddings.position_embedding.weight", v->tokens * D));
    VLA_TRY(bind1(&v->post_w, params, specs, prefix, "post_layernorm.weight", D));
    VLA_TRY(bind1(&v->post_b, params, specs, prefix, "post_layernorm.bias", D));
    v->layers = calloc((size_t)(cfg->depth ? cfg->depth : 1), sizeof *v->layers);
    if (!v->layers) return vla_error(VLA_ERR_NOMEM, "vit: out of memory");
    for (int64_t l = 0; l < cfg->depth; l++) {
        vla_vit_layer *L = &v->layers[l];
        char lp[300];
        snprintf(lp, sizeof lp, "%s.encoder.layers.%lld", prefix, (long long)l);
        struct {
            vla_vit_tensor *t;
            const char *name;
            int64_t numel;
        } items[] = {
            {&L->ln1_w, "layer_norm1.weight", D},   {&L->ln1_b, "layer_norm1.bias", D},
            {&L->q_w, "self_attn.q_proj.weight", D * D}, {&L->q_b, "self_attn.q_proj.bias", D},
            {&L->k_w, "self_attn.k_proj.weight", D * D}, {&L->k_b, "self_attn.k_proj.bias", D},
            {&L->v_w, "self_attn.v_proj.weight", D * D}, {&L->v_b, "self_attn.v_proj.bias", D},
            {&L->o_w, "self_attn.out_proj.weight", D * D}, {&L->o_b, "self_attn.out_proj.bias", D},
            {&L->ln2_w, "layer_norm2.weight", D},   {&L->ln2_b, "layer_norm2.bias", D},
            {&L->fc1_w, "mlp.fc1.weight", M * D},   {&L->fc1_b, "mlp.fc1.bias", M},
            {&L->fc2_w, "mlp.fc2.weight", D * M},   {&L->fc2_b, "mlp.fc2.bias", D},
        };
        for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
            vla_status st = bind1(items[i].t, params, specs, lp, items[i].name, items[i].numel);
            if (st != VLA_OK) {
                vla_vit_release(v);
                return st;
            }
        }
    }
    return VLA_OK;
}

void vla_vit_release(vla_vit *v) {
    free(v->layers);
    free(v->cu);
    v->layers = NULL, v->cu = NULL, v->cu_cap = 0;
}

/* ---- activation layout ---------------------------------------------------
 * img [n_img·C·H·W] (2x − 1), patches [n·cpp], xs[0..depth] [n·D] each (the
 * input of layer l; xs[depth] feeds post_layernorm), post mean/rstd [2n],
 * then per layer: ln1 [nD], mean1/rstd1 [2n], q k v [3nD], att [nD], lse [nH],
 * x_mid [nD], ln2 [nD], mean2/rstd2 [2n], mlp acts [2nM]. */
typedef struct {
    float *ln1, *mean1, *rstd1, *q, *k, *vv, *att, *lse, *x_mid, *ln2, *mean2, *rstd2, *mlp;
} layer_acts;

static int64_t layer_floats(const vla_vit *v, int64_t n) {
    int64_t D = v->cfg.width, H = v->cfg.heads, M = v->cfg.mlp;
    return 7 * n * D + 4 * n + n * H + 2 * n * M;
}

static int64_t img_floats(const vla_vit *v, int64_t n_img) {
    return n_img * v->cfg.channels * v->cfg.image_size * v->cfg.image_size;
}

int64_t vla_vit_acts_floats(const vla_vit *v, int64_t n_img) {
    int64_t n = n_img * v->tokens, D = v->cfg.width, cpp = v->cfg.channels * v->cfg.patch * v->cfg.patch;
    return img_floats(v, n_img) + n * cpp + (v->cfg.depth + 1) * n * D + 2 * n + v->cfg.depth * layer_floats(v, n);
}

int64_t vla_vit_scratch_floats(const vla_vit *v, int64_t n_img, bool d_images) {
    int64_t n = n_img * v->tokens, D = v->cfg.width, M = v->cfg.mlp, cpp = v->cfg.channels * v->cfg.patch * v->cfg.patch;
    return 6 * n * D + 2 * n * M + (d_images ? n * cpp + img_floats(v, n_img) : 0);
}

typedef struct {
    float *img, *patches, **xs, *pmean, *prstd;
    float *layer0;
} acts_view;

static void carve(const vla_vit *v, float *acts, int64_t n_img, acts_view *a, float **xs) {
    int64_t n = n_img * v->tokens, D = v->cfg.width, cpp = v->cfg.channels * v->cfg.patch * v->cfg.patch;
    float *p = acts;
    a->img = p, p += img_floats(v, n_img);
    a->patches = p, p += n * cpp;
    for (int64_t l = 0; l <= v->cfg.depth; l++) xs[l] = p, p += n * D;
    a->xs = xs;
    a->pmean = p, p += n;
    a->prstd = p, p += n;
    a->layer0 = p;
}

static void layer_view(const vla_vit *v, const acts_view *a, int64_t n, int64_t l, layer_acts *la) {
    int64_t D = v->cfg.width, H = v->cfg.heads;
    float *p = a->layer0 + l * layer_floats(v, n);
    la->ln1 = p, p += n * D;
    la->mean1 = p, p += n;
    la->rstd1 = p, p += n;
    la->q = p, p += n * D;
    la->k = p, p += n * D;
    la->vv = p, p += n * D;
    la->att = p, p += n * D;
    la->lse = p, p += n * H;
    la->x_mid = p, p += n * D;
    la->ln2 = p, p += n * D;
    la->mean2 = p, p += n;
    la->rstd2 = p, p += n;
    la->mlp = p;
}

static vla_status ensure_cu(vla_vit *v, int64_t n_img) {
    if (n_img + 1 > v->cu_cap) {
        int32_t *c = realloc(v->cu, (size_t)(n_img + 1) * sizeof *c);
        if (!c) return vla_error(VLA_ERR_NOMEM, "vit: out of memory");
        v->cu = c, v->cu_cap = n_img + 1;
    }
    for (int64_t i = 0; i <= n_img; i++) v->cu[i] = (int32_t)(i * v->tokens);
    return VLA_OK;
}

static vla_attn_config attn_cfg(const vla_vit *v) {
    vla_attn_config c = {0};
    c.n_heads = (int32_t)v->cfg.heads;
    c.n_kv_heads = (int32_t)v->cfg.heads;
    c.head_dim = (int32_t)(v->cfg.width / v->cfg.heads);
    return c;
}

static vla_mlp_config mlp_cfg(const vla_vit *v) {
    vla_mlp_config c = {false, VLA_ACT_GELU_TANH, v->cfg.width, v->cfg.mlp, 0};
    return c;
}

vla_status vla_vit_forward(vla_vit *v, float *out, float *acts, const float *images, int64_t n_img) {
    if (n_img <= 0) return VLA_OK;
    if ((int64_t)n_img * v->tokens > INT32_MAX) return vla_error(VLA_ERR_INVALID_ARG, "vit: too many images");
    VLA_TRY(ensure_cu(v, n_img));
    const vla_ops *ops = v->ops;
    int64_t n = n_img * v->tokens, D = v->cfg.width, T = v->tokens;
    float eps = (float)v->cfg.norm_eps;
    float **xv = malloc((size_t)(v->cfg.depth + 1) * sizeof *xv);
    if (!xv) return vla_error(VLA_ERR_NOMEM, "vit: out of memory");
    acts_view a;
    carve(v, acts, n_img, &a, xv);

    int64_t ni = img_floats(v, n_img);
    for (int64_t i = 0; i < ni; i++) a.img[i] = 2.0f * images[i] - 1.0f;
    vla_patch_embed_config pc = {v->cfg.channels, v->cfg.image_size, v->cfg.image_size, v->cfg.patch, D};
    vla_status st = vla_patch_embed_forward(ops, &pc, xv[0], a.patches, a.img, v->patch_w.w, v->patch_b.w, n_img);
    if (st != VLA_OK) goto done;
    for (int64_t im = 0; im < n_img; im++) ops->add(xv[0] + im * T * D, xv[0] + im * T * D, v->pos.w, T * D);

    vla_attn_config ac = attn_cfg(v);
    vla_attn_seqs seqs = {(int32_t)n_img, v->cu, NULL};
    vla_mlp_config mc = mlp_cfg(v);
    for (int64_t l = 0; l < v->cfg.depth; l++) {
        const vla_vit_layer *L = &v->layers[l];
        layer_acts la;
        layer_view(v, &a, n, l, &la);
        vla_layernorm_forward(la.ln1, la.mean1, la.rstd1, xv[l], L->ln1_w.w, L->ln1_b.w, n, D, eps);
        vla_linear_forward(ops, la.q, la.ln1, L->q_w.w, L->q_b.w, n, D, D);
        vla_linear_forward(ops, la.k, la.ln1, L->k_w.w, L->k_b.w, n, D, D);
        vla_linear_forward(ops, la.vv, la.ln1, L->v_w.w, L->v_b.w, n, D, D);
        st = vla_attention_forward(ops, &ac, la.att, la.lse, la.q, la.k, la.vv, &seqs, &seqs, NULL);
        if (st != VLA_OK) goto done;
        vla_linear_forward(ops, la.x_mid, la.att, L->o_w.w, L->o_b.w, n, D, D);
        ops->add(la.x_mid, la.x_mid, xv[l], n * D);
        vla_layernorm_forward(la.ln2, la.mean2, la.rstd2, la.x_mid, L->ln2_w.w, L->ln2_b.w, n, D, eps);
        vla_mlp_weights mw = {L->fc1_w.w, L->fc1_b.w, NULL, NULL, L->fc2_w.w, L->fc2_b.w};
        vla_mlp_forward(ops, &mc, xv[l + 1], la.mlp, la.ln2, &mw, n);
        ops->add(xv[l + 1], xv[l + 1], la.x_mid, n * D);
    }
    vla_layernorm_forward(out, a.pmean, a.prstd, xv[v->cfg.depth], v->post_w.w, v->post_b.w, n, D, eps);
done:
    free(xv);
    return st;
}

/* Gradient-ready report of n tensors to the owning policy (policy.h). */
static void ready(const vla_vit *v, const vla_vit_tensor *t, int n) {
    if (!v->owner || !v->owner->grad_ready) return;
    const float *w[24];
    for (int k0 = 0; k0 < n; k0 += 24) { /* (a layer has 16 tensors: one pass) */
        int m = n - k0 < 24 ? n - k0 : 24;
        for (int k = 0; k < m; k++) w[k] = t[k0 + k].w;
        vla_policy_ready_weights(v->owner, w, m);
    }
}

vla_status vla_vit_backward(vla_vit *v, float *d_images, const float *d_out, const float *acts, float *scratch,
                            int64_t n_img) {
    if (n_img <= 0) return VLA_OK;
    VLA_TRY(ensure_cu(v, n_img));
    const vla_ops *ops = v->ops;
    int64_t n = n_img * v->tokens, D = v->cfg.width, M = v->cfg.mlp, T = v->tokens;
    float **xv = malloc((size_t)(v->cfg.depth + 1) * sizeof *xv);
    if (!xv) return vla_error(VLA_ERR_NOMEM, "vit: out of memory");
    acts_view a;
    carve(v, (float *)acts, n_img, &a, xv);
    float *dx = scratch, *dln = dx + n * D, *dq = dln + n * D, *dk = dq + n * D, *dv = dk + n * D,
          *datt = dv + n * D, *mlp_scratch = datt + n * D, *extra = mlp_scratch + 2 * n * M;
    vla_status st = VLA_OK;

    ops->fill(dx, 0.0f, n * D);
    vla_layernorm_backward(dx, v->post_w.g, v->post_b.g, d_out, xv[v->cfg.depth], v->post_w.w, a.pmean, a.prstd, n,
                           D);
    {
        const vla_vit_tensor post[] = {v->post_w, v->post_b};
        ready(v, post, 2);
    }
    vla_attn_config ac = attn_cfg(v);
    vla_attn_seqs seqs = {(int32_t)n_img, v->cu, NULL};
    vla_mlp_config mc = mlp_cfg(v);
    for (int64_t l = v->cfg.depth - 1; l >= 0; l--) {
        const vla_vit_layer *L = &v->layers[l];
        layer_acts la;
        layer_view(v, &a, n, l, &la);
        /* x_out = x_mid + mlp(ln2(x_mid)): dx holds d x_out, becomes d x_mid */
        vla_mlp_weights mw = {L->fc1_w.w, L->fc1_b.w, NULL, NULL, L->fc2_w.w, L->fc2_b.w};
        vla_mlp_grads mg = {L->fc1_w.g, L->fc1_b.g, NULL, NULL, L->fc2_w.g, L->fc2_b.g};
        ops->fill(dln, 0.0f, n * D);
        vla_mlp_backward(ops, &mc, dln, &mg, mlp_scratch, dx, la.ln2, la.mlp, &mw, n);
        vla_layernorm_backward(dx, L->ln2_w.g, L->ln2_b.g, dln, la.x_mid, L->ln2_w.w, la.mean2, la.rstd2, n, D);
        /* x_mid = x_in + o(att(ln1(x_in))): dx becomes d x_in */
        ops->fill(datt, 0.0f, n * D);
        vla_linear_backward(ops, datt, L->o_w.g, L->o_b.g, dx, la.att, L->o_w.w, n, D, D);
        ops->fill(dq, 0.0f, 3 * n * D);
        st = vla_attention_backward(ops, &ac, dq, dk, dv, datt, la.q, la.k, la.vv, la.att, la.lse, &seqs, &seqs,
                                    NULL);
        if (st != VLA_OK) goto done;
        ops->fill(dln, 0.0f, n * D);
        vla_linear_backward(ops, dln, L->q_w.g, L->q_b.g, dq, la.ln1, L->q_w.w, n, D, D);
        vla_linear_backward(ops, dln, L->k_w.g, L->k_b.g, dk, la.ln1, L->k_w.w, n, D, D);
        vla_linear_backward(ops, dln, L->v_w.g, L->v_b.g, dv, la.ln1, L->v_w.w, n, D, D);
        vla_layernorm_backward(dx, L->ln1_w.g, L->ln1_b.g, dln, xv[l], L->ln1_w.w, la.mean1, la.rstd1, n, D);
        ready(v, (const vla_vit_tensor *)L, (int)(sizeof *L / sizeof(vla_vit_tensor)));
    }
    /* x0 = patch(img) + pos */
    if (v->pos.g)
        for (int64_t im = 0; im < n_img; im++) ops->axpy(v->pos.g, 1.0f, dx + im * T * D, T * D);
    vla_patch_embed_config pc = {v->cfg.channels, v->cfg.image_size, v->cfg.image_size, v->cfg.patch, D};
    float *d_img = NULL, *pscratch = NULL;
    int64_t ni = img_floats(v, n_img);
    if (d_images) {
        int64_t cpp = v->cfg.channels * v->cfg.patch * v->cfg.patch;
        pscratch = extra;
        d_img = extra + n * cpp;
        ops->fill(d_img, 0.0f, ni);
    }
    if (v->patch_w.g || v->patch_b.g || d_images)
        vla_patch_embed_backward(ops, &pc, d_img, v->patch_w.g, v->patch_b.g, pscratch, dx, a.patches, v->patch_w.w,
                                 n_img);
    if (d_images) ops->axpy(d_images, 2.0f, d_img, ni); /* d/dx of 2x − 1 */
    {
        const vla_vit_tensor emb[] = {v->patch_w, v->patch_b, v->pos};
        ready(v, emb, 3);
    }
done:
    free(xv);
    return st;
}

double vla_vit_forward_flops(const vla_vit *v, int64_t n_img) {
    double n = (double)(n_img * v->tokens), D = (double)v->cfg.width, M = (double)v->cfg.mlp;
    double cpp = (double)(v->cfg.channels * v->cfg.patch * v->cfg.patch), T = (double)v->tokens;
    double per_layer = 2.0 * n * (4 * D * D + 2 * D * M) + 4.0 * (double)n_img * T * T * D;
    return 2.0 * n * cpp * D + (double)v->cfg.depth * per_layer;
}
