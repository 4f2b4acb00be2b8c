/* vit.c — the SigLIP-style ViT (see vit.h): its inventory, and forward and
 * backward as patch embedding + nn/block.h blocks + a final LayerNorm. */
#include "policy/vit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/acts.h"
#include "nn/layernorm.h"
#include "nn/patch_embed.h"
#include "policy/policy.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

void vla_vit_inventory(vla_param_builder *b, const vla_vit_config *cfg, const char *p, vla_vit *v) {
    int64_t D = cfg->width, side = cfg->patch > 0 ? cfg->image_size / cfg->patch : 0;
    char q[300];
    vla_pb_group(b, VLA_GROUP_VISION, VLA_APPLY_IMAGE);
    vla_pb_tensor(b, &v->patch_w, VLA_INIT_NORMAL, 4, SHAPE(D, cfg->channels, cfg->patch, cfg->patch),
                  "%s.embeddings.patch_embedding.weight", p);
    vla_pb_tensor(b, &v->patch_b, VLA_INIT_ZEROS, 1, SHAPE(D), "%s.embeddings.patch_embedding.bias", p);
    vla_pb_tensor(b, &v->pos, VLA_INIT_NORMAL, 2, SHAPE(side * side, D), "%s.embeddings.position_embedding.weight",
                  p);
    vla_pb_last_apply(b, VLA_APPLY_LOOKUP, 1);
    v->layers = vla_pb_blocks(b, cfg->depth);
    for (int64_t i = 0; i < cfg->depth && v->layers; i++) {
        vla_block_weights *L = &v->layers[i];
        char lp[260];
        snprintf(lp, sizeof lp, "%s.encoder.layers.%lld", p, (long long)i);
        snprintf(q, sizeof q, "%s.layer_norm1", lp);
        vla_pb_layernorm(b, &L->norm1_w, &L->norm1_b, D, q);
        snprintf(q, sizeof q, "%s.self_attn.k_proj", lp); /* the state_dict's order: k, v, q, out */
        vla_pb_linear(b, &L->k_w, &L->k_b, D, D, q);
        snprintf(q, sizeof q, "%s.self_attn.v_proj", lp);
        vla_pb_linear(b, &L->v_w, &L->v_b, D, D, q);
        snprintf(q, sizeof q, "%s.self_attn.q_proj", lp);
        vla_pb_linear(b, &L->q_w, &L->q_b, D, D, q);
        snprintf(q, sizeof q, "%s.self_attn.out_proj", lp);
        vla_pb_linear(b, &L->o_w, &L->o_b, D, D, q);
        snprintf(q, sizeof q, "%s.layer_norm2", lp);
        vla_pb_layernorm(b, &L->norm2_w, &L->norm2_b, D, q);
        snprintf(q, sizeof q, "%s.mlp.fc1", lp);
        vla_pb_linear(b, &L->up_w, &L->up_b, D, cfg->mlp, q);
        snprintf(q, sizeof q, "%s.mlp.fc2", lp);
        vla_pb_linear(b, &L->down_w, &L->down_b, cfg->mlp, D, q);
    }
    snprintf(q, sizeof q, "%s.post_layernorm", p);
    vla_pb_layernorm(b, &v->post_w, &v->post_b, D, q);
}

vla_status vla_vit_setup(vla_vit *v, const vla_vit_config *cfg, const vla_ops *ops) {
    if (cfg->patch <= 0 || cfg->image_size % cfg->patch || cfg->heads <= 0 || cfg->width % cfg->heads ||
        cfg->depth < 0)
        return vla_error(VLA_ERR_INVALID_ARG, "vit: bad config (image %lld, patch %lld, width %lld, heads %lld)",
                         (long long)cfg->image_size, (long long)cfg->patch, (long long)cfg->width,
                         (long long)cfg->heads);
    v->cfg = *cfg;
    v->ops = ops;
    v->keep = VLA_STACK_ALL;
    int64_t side = cfg->image_size / cfg->patch;
    v->tokens = side * side;
    vla_block_config *c = &v->block;
    memset(c, 0, sizeof *c);
    c->dim = cfg->width;
    c->norm1 = c->norm2 = VLA_BLOCK_NORM_LAYER;
    c->norm_eps = (float)cfg->norm_eps;
    c->attn.n_heads = c->attn.n_kv_heads = (int32_t)cfg->heads;
    c->attn.head_dim = (int32_t)(cfg->width / cfg->heads);
    c->qkv_bias = c->o_bias = c->mlp_bias = true;
    c->mlp = (vla_mlp_config){.gated = false, .act = VLA_ACT_GELU_TANH, .dim = cfg->width, .hidden = cfg->mlp};
    return vla_block_check(c);
}

void vla_vit_release(vla_vit *v) {
    free(v->cu);
    v->cu = NULL, v->cu_cap = 0;
}

bool vla_vit_trains(const vla_vit *v) { return v->patch_w.g || v->pos.g || v->post_w.g; }

/* ---- activations: size tables --------------------------------------------------
 * n = n_img·tokens rows of width D; cpp = C·p·p; ni the pixels; la / bs one
 * block's saved activations / backward scratch; di 1 when d_images is wanted. */
#define VIT_ACTS(X)                                                                                             \
    X(img, ni)                 /* 2x − 1 */                                                                     \
    X(patches, n * cpp)        /* im2col of the patch embedding */                                             \
    X(xs, nx * n * D)          /* the residual stream at each block's input; [depth] feeds post_layernorm   \
                                * (nothing kept: two buffers in turn, nn/block.h) */                          \
    X(pmean, n)                                                                                                 \
    X(prstd, n)                                                                                                 \
    X(layers, nt * la)
#define VIT_SCRATCH(X)                                                                                          \
    X(dx, n * D)                                                                                                \
    X(block, bs)                                                                                                \
    X(pscratch, di * n * cpp)                                                                                   \
    X(d_img, di * ni)

typedef struct {
    VIT_ACTS(VLA_ACTS_FIELD)
} vit_acts;
typedef struct {
    VIT_SCRATCH(VLA_ACTS_FIELD)
} vit_scratch;

#define VIT_DIMS(v, n_img, want_d_images)                                                                        \
    const int64_t n = (n_img) * (v)->tokens, D = (v)->cfg.width, depth = (v)->cfg.depth;                        \
    const int64_t cpp = (v)->cfg.channels * (v)->cfg.patch * (v)->cfg.patch;                                     \
    const int64_t ni = (n_img) * (v)->cfg.channels * (v)->cfg.image_size * (v)->cfg.image_size;                \
    const int64_t la = vla_block_acts_floats(&(v)->block, n, 0, (int32_t)(n_img));                               \
    const int64_t bs = vla_block_scratch_floats(&(v)->block, n, 0, (int32_t)(n_img));                           \
    const int64_t di = (want_d_images) ? 1 : 0;                                                                   \
    const int64_t nt = vla_block_stack_tables((v)->keep, depth); /* block tables kept */                         \
    const int64_t nx = vla_block_stack_xs((v)->keep, depth);     /* residual buffers */                          \
    (void)n, (void)D, (void)depth, (void)cpp, (void)ni, (void)la, (void)bs, (void)di, (void)nt, (void)nx

int64_t vla_vit_acts_floats(const vla_vit *v, int64_t n_img) {
    VIT_DIMS(v, n_img, false);
    const int64_t sizes[] = {VIT_ACTS(VLA_ACTS_SIZE)};
    return vla_acts_total(sizes, VLA_ACTS_COUNT(sizes));
}

int64_t vla_vit_scratch_floats(const vla_vit *v, int64_t n_img, bool d_images) {
    VIT_DIMS(v, n_img, d_images);
    const int64_t sizes[] = {VIT_SCRATCH(VLA_ACTS_SIZE)};
    return vla_acts_total(sizes, VLA_ACTS_COUNT(sizes));
}

static void carve_acts(const vla_vit *v, int64_t n_img, float *buf, vit_acts *a) {
    VIT_DIMS(v, n_img, false);
    const int64_t sizes[] = {VIT_ACTS(VLA_ACTS_SIZE)};
    vla_acts_carve(sizes, VLA_ACTS_COUNT(sizes), buf, (float **)a);
}

static void carve_scratch(const vla_vit *v, int64_t n_img, bool d_images, float *buf, vit_scratch *s) {
    VIT_DIMS(v, n_img, d_images);
    const int64_t sizes[] = {VIT_SCRATCH(VLA_ACTS_SIZE)};
    vla_acts_carve(sizes, VLA_ACTS_COUNT(sizes), buf, (float **)s);
}

static vla_status block_io(vla_vit *v, int64_t n_img, vla_block_io *io) {
    if (n_img + 1 > v->cu_cap) { /* grows rarely: sized for the largest batch seen */
        int32_t *c = realloc(v->cu, (size_t)(n_img + 1) * sizeof *c);
        if (!c) return vla_error(VLA_ERR_NOMEM, "vit: out of memory");
        v->cu = c, v->cu_cap = n_img + 1;
    }
    for (int64_t i = 0; i <= n_img; i++) v->cu[i] = (int32_t)(i * v->tokens);
    memset(io, 0, sizeof *io);
    io->n = n_img * v->tokens;
    io->n_seg = (int32_t)n_img;
    io->cu = v->cu;
    return VLA_OK;
}

static vla_patch_embed_config patch_cfg(const vla_vit *v) {
    vla_patch_embed_config pc = {v->cfg.channels, v->cfg.image_size, v->cfg.image_size, v->cfg.patch, v->cfg.width};
    return pc;
}

vla_status vla_vit_forward(vla_vit *v, float *out, float *acts, const float *images, int64_t n_img) {
    if (n_img <= 0) return VLA_OK;
    if (n_img * v->tokens > INT32_MAX) return vla_error(VLA_ERR_INVALID_ARG, "vit: too many images");
    const vla_ops *ops = v->ops;
    vla_block_io io;
    VLA_TRY(block_io(v, n_img, &io));
    int64_t n = io.n, D = v->cfg.width, T = v->tokens, ni = n_img * v->cfg.channels * v->cfg.image_size * v->cfg.image_size;
    vit_acts a;
    carve_acts(v, n_img, acts, &a);
    ops->affine(a.img, images, 2.0f, -1.0f, ni); /* SigLIP: 2x − 1 */
    vla_patch_embed_config pc = patch_cfg(v);
    VLA_TRY(vla_patch_embed_forward(ops, &pc, a.xs, a.patches, a.img, v->patch_w.w, v->patch_b.w, n_img));
    for (int64_t im = 0; im < n_img; im++) ops->add(a.xs + im * T * D, a.xs + im * T * D, v->pos.w, T * D);
    const float *last;
    VLA_TRY(vla_block_stack_forward(ops, &v->block, v->layers, v->cfg.depth, &io, a.xs, a.layers, v->keep, &last));
    vla_layernorm_forward(ops, out, a.pmean, a.prstd, last, v->post_w.w, v->post_b.w, n, D, (float)v->cfg.norm_eps);
    return VLA_OK;
}

/* Gradient-ready report of n weights to the owning policy (policy.h). */
static void ready(const vla_vit *v, const vla_wg *t, int n) {
    if (v->owner) vla_policy_ready_wgs(v->owner, t, n);
}

static void layer_ready(void *user, int64_t l) {
    const vla_vit *v = user;
    ready(v, (const vla_wg *)&v->layers[l], VLA_BLOCK_N_WG);
}

vla_status vla_vit_backward(vla_vit *v, float *d_images, const float *d_out, float *acts, float *scratch,
                            int64_t n_img) {
    if (n_img <= 0) return VLA_OK;
    const vla_ops *ops = v->ops;
    vla_block_io io;
    VLA_TRY(block_io(v, n_img, &io));
    int64_t n = io.n, D = v->cfg.width, T = v->tokens, ni = n_img * v->cfg.channels * v->cfg.image_size * v->cfg.image_size;
    vit_acts a;
    vit_scratch s;
    carve_acts(v, n_img, acts, &a);
    carve_scratch(v, n_img, d_images != NULL, scratch, &s);

    ops->fill(s.dx, 0.0f, n * D);
    vla_layernorm_backward(ops, s.dx, v->post_w.g, v->post_b.g, d_out, a.xs + v->cfg.depth * n * D, v->post_w.w, a.pmean,
                           a.prstd, n, D);
    const vla_wg post[] = {v->post_w, v->post_b};
    ready(v, post, 2);
    VLA_TRY(vla_block_stack_backward(ops, &v->block, v->layers, v->cfg.depth, &io, a.xs, a.layers, v->keep, s.block, s.dx,
                                     layer_ready, v));
    /* x0 = patch(img) + pos */
    if (v->pos.g)
        for (int64_t im = 0; im < n_img; im++) ops->axpy(v->pos.g, 1.0f, s.dx + im * T * D, T * D);
    vla_patch_embed_config pc = patch_cfg(v);
    if (d_images) ops->fill(s.d_img, 0.0f, ni);
    if (v->patch_w.g || v->patch_b.g || d_images)
        vla_patch_embed_backward(ops, &pc, d_images ? s.d_img : NULL, v->patch_w.g, v->patch_b.g, s.pscratch, s.dx,
                                 a.patches, v->patch_w.w, n_img);
    if (d_images) ops->axpy(d_images, 2.0f, s.d_img, ni); /* d/dx of 2x − 1 */
    const vla_wg emb[] = {v->patch_w, v->patch_b, v->pos};
    ready(v, emb, 3);
    return VLA_OK;
}

double vla_vit_forward_flops(const vla_vit *v, int64_t n_img) {
    double n = (double)(n_img * v->tokens), D = (double)v->cfg.width, M = (double)v->cfg.mlp;
    double cpp = (double)(v->cfg.channels * v->cfg.patch * v->cfg.patch), T = (double)v->tokens;
    double per_layer = 2.0 * n * (4 * D * D + 2 * D * M) + 4.0 * (double)n_img * T * T * D;
    return 2.0 * n * cpp * D + (double)v->cfg.depth * per_layer;
}
