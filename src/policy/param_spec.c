/* param_spec.c — the parameter inventory of π0.5 and GR00T N1.5 from a
 * config (see param_spec.h), and the activation-memory estimate. The order
 * of tensors here is the order of the weight allocation: embeddings, then
 * layer by layer, then heads, as in the PyTorch modules' registration. */
#include "policy/param_spec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const float STD = 0.02f; /* HF initializer_range / GR00T 0.02·randn */

typedef struct {
    vla_param_list *list;
    const vla_policy_config *cfg;
    vla_param_group group;
    vla_param_apply apply; /* for the matrices added next */
    vla_status st;
} builder;

/* Append one tensor; shape is given as ndim values after `ndim`. */
static void add(builder *b, vla_init_kind init, int ndim, const int64_t *shape, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add(builder *b, vla_init_kind init, int ndim, const int64_t *shape, const char *fmt, ...) {
    if (b->st != VLA_OK) return;
    vla_param_list *l = b->list;
    if (l->n == l->cap) {
        int64_t cap = l->cap ? 2 * l->cap : 256;
        vla_param_spec *p = realloc(l->items, (size_t)cap * sizeof *p);
        if (!p) {
            b->st = vla_error(VLA_ERR_NOMEM, "parameter list: out of memory at %lld entries", (long long)l->n);
            return;
        }
        l->items = p, l->cap = cap;
    }
    vla_param_spec *s = &l->items[l->n];
    memset(s, 0, sizeof *s);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->name, sizeof s->name, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof s->name) {
        b->st = vla_error(VLA_ERR_INTERNAL, "parameter name too long: %s…", s->name);
        return;
    }
    s->ndim = ndim;
    s->numel = 1;
    for (int i = 0; i < ndim; i++) s->shape[i] = shape[i], s->numel *= shape[i];
    s->group = b->group;
    s->trainable = !b->cfg->frozen[b->group];
    s->init = init;
    s->init_std = init == VLA_INIT_NORMAL ? STD : 0.0f;
    s->apply = ndim >= 2 ? b->apply : VLA_APPLY_NONE;
    s->n_emb = 1;
    l->n++;
}

/* Override the FLOP role of the tensor just added. */
static void last_apply(builder *b, vla_param_apply a, int64_t n_emb) {
    if (b->st == VLA_OK && b->list->n > 0) {
        b->list->items[b->list->n - 1].apply = a;
        b->list->items[b->list->n - 1].n_emb = n_emb;
    }
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
/* Linear with PyTorch layout [out, in] and an optional bias. */
static void linear(builder *b, const char *prefix, int64_t in, int64_t out, bool bias) {
    add(b, VLA_INIT_NORMAL, 2, SHAPE(out, in), "%s.weight", prefix);
    if (bias) add(b, VLA_INIT_ZEROS, 1, SHAPE(out), "%s.bias", prefix);
}

static void layernorm(builder *b, const char *prefix, int64_t dim) {
    add(b, VLA_INIT_ONES, 1, SHAPE(dim), "%s.weight", prefix);
    add(b, VLA_INIT_ZEROS, 1, SHAPE(dim), "%s.bias", prefix);
}

/* GR00T CategorySpecificLinear: W [n_emb, in, out], b [n_emb, out]. */
static void cat_linear(builder *b, const char *prefix, int64_t n_emb, int64_t in, int64_t out) {
    add(b, VLA_INIT_NORMAL, 3, SHAPE(n_emb, in, out), "%s.W", prefix);
    last_apply(b, b->apply, n_emb);
    add(b, VLA_INIT_ZEROS, 2, SHAPE(n_emb, out), "%s.b", prefix);
    last_apply(b, VLA_APPLY_NONE, 1);
}

/* HF SiglipVisionModel's vision_model (no pooling head). */
static void siglip(builder *b, const char *p) {
    const vla_vit_config *v = &b->cfg->vision;
    char q[256];
    b->group = VLA_GROUP_VISION;
    b->apply = VLA_APPLY_IMAGE;
    add(b, VLA_INIT_NORMAL, 4, SHAPE(v->width, v->channels, v->patch, v->patch),
        "%s.embeddings.patch_embedding.weight", p);
    add(b, VLA_INIT_ZEROS, 1, SHAPE(v->width), "%s.embeddings.patch_embedding.bias", p);
    int64_t side = v->image_size / v->patch;
    add(b, VLA_INIT_NORMAL, 2, SHAPE(side * side, v->width), "%s.embeddings.position_embedding.weight", p);
    last_apply(b, VLA_APPLY_LOOKUP, 1);
    for (int64_t i = 0; i < v->depth; i++) {
        static const char *const proj[] = {"k_proj", "v_proj", "q_proj", "out_proj"};
        snprintf(q, sizeof q, "%s.encoder.layers.%lld.layer_norm1", p, (long long)i);
        layernorm(b, q, v->width);
        for (int k = 0; k < 4; k++) {
            snprintf(q, sizeof q, "%s.encoder.layers.%lld.self_attn.%s", p, (long long)i, proj[k]);
            linear(b, q, v->width, v->width, true);
        }
        snprintf(q, sizeof q, "%s.encoder.layers.%lld.layer_norm2", p, (long long)i);
        layernorm(b, q, v->width);
        snprintf(q, sizeof q, "%s.encoder.layers.%lld.mlp.fc1", p, (long long)i);
        linear(b, q, v->width, v->mlp, true);
        snprintf(q, sizeof q, "%s.encoder.layers.%lld.mlp.fc2", p, (long long)i);
        linear(b, q, v->mlp, v->width, true);
    }
    snprintf(q, sizeof q, "%s.post_layernorm", p);
    layernorm(b, q, v->width);
}

/* One decoder layer's attention + gated MLP (Gemma / Qwen3 naming, no biases). */
static void decoder_attn_mlp(builder *b, const char *lp, int64_t width, int64_t mlp) {
    const vla_lm_config *l = &b->cfg->language;
    char q[256];
    snprintf(q, sizeof q, "%s.self_attn.q_proj", lp);
    linear(b, q, width, l->heads * l->head_dim, false);
    snprintf(q, sizeof q, "%s.self_attn.k_proj", lp);
    linear(b, q, width, l->kv_heads * l->head_dim, false);
    snprintf(q, sizeof q, "%s.self_attn.v_proj", lp);
    linear(b, q, width, l->kv_heads * l->head_dim, false);
    snprintf(q, sizeof q, "%s.self_attn.o_proj", lp);
    linear(b, q, l->heads * l->head_dim, width, false);
    snprintf(q, sizeof q, "%s.mlp.gate_proj", lp);
    linear(b, q, width, mlp, false);
    snprintf(q, sizeof q, "%s.mlp.up_proj", lp);
    linear(b, q, width, mlp, false);
    snprintf(q, sizeof q, "%s.mlp.down_proj", lp);
    linear(b, q, mlp, width, false);
}

/* π0.5: openpi PyTorch PI0Pytorch(pi05=True). */
static void pi05(builder *b) {
    const vla_policy_config *c = b->cfg;
    const vla_lm_config *l = &c->language;
    const vla_expert_config *e = &c->expert;
    char q[256];
    const char *pg = "paligemma_with_expert.paligemma.model";
    snprintf(q, sizeof q, "%s.vision_tower.vision_model", pg);
    siglip(b, q);

    b->group = VLA_GROUP_CONNECTOR;
    snprintf(q, sizeof q, "%s.multi_modal_projector.linear", pg);
    linear(b, q, c->vision.width, l->width, true);

    b->group = VLA_GROUP_LANGUAGE;
    b->apply = VLA_APPLY_PREFIX;
    add(b, VLA_INIT_NORMAL, 2, SHAPE(l->vocab, l->width), "%s.language_model.embed_tokens.weight", pg);
    last_apply(b, VLA_APPLY_LOOKUP, 1);
    for (int64_t i = 0; i < l->depth; i++) {
        char lp[200];
        snprintf(lp, sizeof lp, "%s.language_model.layers.%lld", pg, (long long)i);
        /* Gemma RMSNorm scales by (1 + w): zeros is the identity. */
        add(b, VLA_INIT_ZEROS, 1, SHAPE(l->width), "%s.input_layernorm.weight", lp);
        decoder_attn_mlp(b, lp, l->width, l->mlp);
        add(b, VLA_INIT_ZEROS, 1, SHAPE(l->width), "%s.post_attention_layernorm.weight", lp);
    }
    add(b, VLA_INIT_ZEROS, 1, SHAPE(l->width), "%s.language_model.norm.weight", pg);

    /* The action expert: AdaRMSNorm everywhere (use_adarms=[False, True]);
     * each norm owns a zero-initialised Dense(cond → 3·width). */
    b->group = VLA_GROUP_EXPERT;
    b->apply = VLA_APPLY_ACTION;
    const char *ex = "paligemma_with_expert.gemma_expert.model";
    for (int64_t i = 0; i < e->depth; i++) {
        char lp[200];
        snprintf(lp, sizeof lp, "%s.layers.%lld", ex, (long long)i);
        add(b, VLA_INIT_ZEROS, 2, SHAPE(3 * e->width, e->width), "%s.input_layernorm.dense.weight", lp);
        last_apply(b, VLA_APPLY_SAMPLE, 1);
        add(b, VLA_INIT_ZEROS, 1, SHAPE(3 * e->width), "%s.input_layernorm.dense.bias", lp);
        decoder_attn_mlp(b, lp, e->width, e->mlp);
        add(b, VLA_INIT_ZEROS, 2, SHAPE(3 * e->width, e->width), "%s.post_attention_layernorm.dense.weight", lp);
        last_apply(b, VLA_APPLY_SAMPLE, 1);
        add(b, VLA_INIT_ZEROS, 1, SHAPE(3 * e->width), "%s.post_attention_layernorm.dense.bias", lp);
    }
    add(b, VLA_INIT_ZEROS, 2, SHAPE(3 * e->width, e->width), "%s.norm.dense.weight", ex);
    last_apply(b, VLA_APPLY_SAMPLE, 1);
    add(b, VLA_INIT_ZEROS, 1, SHAPE(3 * e->width), "%s.norm.dense.bias", ex);

    b->group = VLA_GROUP_ACTION_IO;
    b->apply = VLA_APPLY_ACTION;
    linear(b, "action_in_proj", c->action.action_dim, e->width, true);
    linear(b, "action_out_proj", e->width, c->action.action_dim, true);
    b->apply = VLA_APPLY_SAMPLE;
    linear(b, "time_mlp_in", e->width, e->width, true);
    linear(b, "time_mlp_out", e->width, e->width, true);
}

/* diffusers-style BasicTransformerBlock as GR00T uses it: attn1 (to_q/k/v
 * with bias, to_out.0), FeedForward gelu-approximate (ff.net.0.proj,
 * ff.net.2). `ada` gives norm1 an AdaLayerNorm linear (DiT); otherwise
 * norm1/norm3 are affine LayerNorms (VL self-attention). */
static void basic_block(builder *b, const char *bp, int64_t dim, int64_t inner, int64_t kv_dim, int64_t ff_mult,
                        bool ada, vla_param_apply tokens, vla_param_apply kv_tokens) {
    char q[256];
    b->apply = VLA_APPLY_SAMPLE; /* AdaLN's modulation: once per sample */
    if (ada) {
        snprintf(q, sizeof q, "%s.norm1.linear", bp);
        linear(b, q, dim, 2 * dim, true);
    } else {
        snprintf(q, sizeof q, "%s.norm1", bp);
        layernorm(b, q, dim);
    }
    b->apply = tokens;
    snprintf(q, sizeof q, "%s.attn1.to_q", bp);
    linear(b, q, dim, inner, true);
    b->apply = kv_tokens;
    snprintf(q, sizeof q, "%s.attn1.to_k", bp);
    linear(b, q, kv_dim, inner, true);
    snprintf(q, sizeof q, "%s.attn1.to_v", bp);
    linear(b, q, kv_dim, inner, true);
    b->apply = tokens;
    snprintf(q, sizeof q, "%s.attn1.to_out.0", bp);
    linear(b, q, inner, dim, true);
    if (!ada) {
        snprintf(q, sizeof q, "%s.norm3", bp);
        layernorm(b, q, dim);
    }
    snprintf(q, sizeof q, "%s.ff.net.0.proj", bp);
    linear(b, q, dim, ff_mult * dim, true);
    snprintf(q, sizeof q, "%s.ff.net.2", bp);
    linear(b, q, ff_mult * dim, dim, true);
}

/* GR00T N1.5: Isaac-GR00T GR00T_N1_5 (backbone + FlowmatchingActionHead). */
static void groot(builder *b) {
    const vla_policy_config *c = b->cfg;
    const vla_lm_config *l = &c->language;
    const vla_groot_head_config *h = &c->head;
    char q[256];
    siglip(b, "backbone.eagle_model.vision_model.vision_model");

    b->group = VLA_GROUP_CONNECTOR; /* mlp1 = Sequential(Linear(1152, 2048)) */
    linear(b, "backbone.eagle_model.mlp1.0", c->vision.width, l->width, true);

    b->group = VLA_GROUP_LANGUAGE;
    b->apply = VLA_APPLY_PREFIX;
    const char *lm = "backbone.eagle_model.language_model.model";
    add(b, VLA_INIT_NORMAL, 2, SHAPE(l->vocab, l->width), "%s.embed_tokens.weight", lm);
    last_apply(b, VLA_APPLY_LOOKUP, 1);
    for (int64_t i = 0; i < l->depth; i++) {
        char lp[200];
        snprintf(lp, sizeof lp, "%s.layers.%lld", lm, (long long)i);
        add(b, VLA_INIT_ONES, 1, SHAPE(l->width), "%s.input_layernorm.weight", lp);
        decoder_attn_mlp(b, lp, l->width, l->mlp);
        if (l->qk_norm) {
            add(b, VLA_INIT_ONES, 1, SHAPE(l->head_dim), "%s.self_attn.q_norm.weight", lp);
            add(b, VLA_INIT_ONES, 1, SHAPE(l->head_dim), "%s.self_attn.k_norm.weight", lp);
        }
        add(b, VLA_INIT_ONES, 1, SHAPE(l->width), "%s.post_attention_layernorm.weight", lp);
    }
    add(b, VLA_INIT_ONES, 1, SHAPE(l->width), "%s.norm.weight", lm);

    b->group = VLA_GROUP_VL_ADAPTER;
    layernorm(b, "action_head.vlln", l->width);
    int64_t vl_inner = h->vl_heads * h->vl_head_dim;
    for (int64_t i = 0; i < h->vl_layers; i++) {
        snprintf(q, sizeof q, "action_head.vl_self_attention.transformer_blocks.%lld", (long long)i);
        basic_block(b, q, vl_inner, vl_inner, vl_inner, h->ff_mult, false, VLA_APPLY_PREFIX, VLA_APPLY_PREFIX);
    }

    b->group = VLA_GROUP_EXPERT;
    int64_t inner = h->dit_heads * h->dit_head_dim;
    b->apply = VLA_APPLY_SAMPLE;
    linear(b, "action_head.model.timestep_encoder.timestep_embedder.linear_1", h->timestep_channels, inner, true);
    linear(b, "action_head.model.timestep_encoder.timestep_embedder.linear_2", inner, inner, true);
    for (int64_t i = 0; i < h->dit_layers; i++) {
        snprintf(q, sizeof q, "action_head.model.transformer_blocks.%lld", (long long)i);
        /* interleave_self_attention: even blocks cross-attend to the VL tokens */
        bool cross = i % 2 == 0;
        basic_block(b, q, inner, inner, cross ? l->width : inner, h->ff_mult, true, VLA_APPLY_DIT,
                    cross ? VLA_APPLY_PREFIX : VLA_APPLY_DIT);
    }
    b->apply = VLA_APPLY_SAMPLE;
    linear(b, "action_head.model.proj_out_1", inner, 2 * inner, true);
    b->apply = VLA_APPLY_DIT;
    linear(b, "action_head.model.proj_out_2", inner, h->output_dim, true);

    b->group = VLA_GROUP_ACTION_IO;
    b->apply = VLA_APPLY_SAMPLE; /* one state token per sample */
    cat_linear(b, "action_head.state_encoder.layer1", h->embodiments, c->action.state_dim, h->state_hidden);
    cat_linear(b, "action_head.state_encoder.layer2", h->embodiments, h->state_hidden, inner);
    b->apply = VLA_APPLY_ACTION;
    cat_linear(b, "action_head.action_encoder.W1", h->embodiments, c->action.action_dim, inner);
    cat_linear(b, "action_head.action_encoder.W2", h->embodiments, 2 * inner, inner);
    cat_linear(b, "action_head.action_encoder.W3", h->embodiments, inner, inner);
    b->apply = VLA_APPLY_DIT; /* decoded at every DiT token, then the last `horizon` kept */
    cat_linear(b, "action_head.action_decoder.layer1", h->embodiments, h->output_dim, h->output_dim);
    cat_linear(b, "action_head.action_decoder.layer2", h->embodiments, h->output_dim, c->action.action_dim);
    add(b, VLA_INIT_NORMAL, 2, SHAPE(h->max_seq_len, inner), "action_head.position_embedding.weight");
    last_apply(b, VLA_APPLY_LOOKUP, 1);
    if (h->future_tokens > 0) {
        add(b, VLA_INIT_NORMAL, 2, SHAPE(h->future_tokens, inner), "action_head.future_tokens.weight");
        last_apply(b, VLA_APPLY_LOOKUP, 1);
    }
}

vla_status vla_param_specs(const vla_policy_config *cfg, vla_param_list *out) {
    builder b = {out, cfg, VLA_GROUP_VISION, VLA_APPLY_NONE, VLA_OK};
    if (cfg->kind == VLA_POLICY_PI05) pi05(&b);
    else if (cfg->kind == VLA_POLICY_GROOT) groot(&b);
    else return vla_error(VLA_ERR_INVALID_ARG, "parameter list: unknown policy kind %d", (int)cfg->kind);
    return b.st;
}

void vla_param_list_free(vla_param_list *list) {
    free(list->items);
    memset(list, 0, sizeof *list);
}

int64_t vla_param_find(const vla_param_list *list, const char *name) {
    for (int64_t i = 0; i < list->n; i++)
        if (!strcmp(list->items[i].name, name)) return i;
    return -1;
}

void vla_param_count(const vla_param_list *list, vla_param_counts *out) {
    memset(out, 0, sizeof *out);
    for (int64_t i = 0; i < list->n; i++) {
        const vla_param_spec *s = &list->items[i];
        out->params[s->group] += s->numel;
        out->tensors[s->group]++;
        if (s->trainable) out->trainable[s->group] += s->numel;
    }
    for (int g = 0; g < VLA_GROUP_COUNT; g++) {
        out->total_params += out->params[g];
        out->total_trainable += out->trainable[g];
        out->total_tensors += out->tensors[g];
    }
}

/* ---- activation estimate ------------------------------------------------ */

/* Floats one pre-norm transformer layer saves for its backward, for n query
 * tokens of width d: residual input, normed input and its stats, q, k and v
 * (k/v for n_kv tokens), attention output and log-sum-exp, the residual
 * after attention, the second norm's output, and the MLP's hidden
 * activations (pre-activation and activated; gated MLPs also the up branch). */
static double layer_floats(double n, double d, double heads, double kv_heads, double head_dim, double n_kv,
                           double ff, bool gated) {
    double attn = n * (2 * d + 2) + n * heads * head_dim + 2 * n_kv * kv_heads * head_dim + n * heads * head_dim +
                  n * heads;
    double mlp = n * (2 * d + 2) + n * ff * (gated ? 3 : 2);
    return attn + mlp;
}

/* Which groups train, and which must pass gradients (own weights train, or
 * some upstream group's do). Data flow: vision → connector → language →
 * (GR00T: vl_adapter) → expert, with action_io feeding and reading the expert. */
static void gradient_flow(const vla_policy_config *c, const vla_param_list *list, bool *tr, bool *need) {
    for (int g = 0; g < VLA_GROUP_COUNT; g++) tr[g] = false;
    for (int64_t i = 0; i < list->n; i++)
        if (list->items[i].trainable) tr[list->items[i].group] = true;
    need[VLA_GROUP_VISION] = tr[VLA_GROUP_VISION];
    need[VLA_GROUP_CONNECTOR] = need[VLA_GROUP_VISION] || tr[VLA_GROUP_CONNECTOR];
    need[VLA_GROUP_LANGUAGE] = need[VLA_GROUP_CONNECTOR] || tr[VLA_GROUP_LANGUAGE];
    need[VLA_GROUP_VL_ADAPTER] =
        need[VLA_GROUP_LANGUAGE] || (c->kind == VLA_POLICY_GROOT && tr[VLA_GROUP_VL_ADAPTER]);
    need[VLA_GROUP_EXPERT] = need[VLA_GROUP_VL_ADAPTER] || tr[VLA_GROUP_EXPERT] || tr[VLA_GROUP_ACTION_IO];
    need[VLA_GROUP_ACTION_IO] = need[VLA_GROUP_EXPERT] || tr[VLA_GROUP_ACTION_IO];
}

void vla_flops_estimate_compute(const vla_policy_config *c, const vla_param_list *list, vla_flops_estimate *out) {
    memset(out, 0, sizeof *out);
    bool tr[VLA_GROUP_COUNT], need[VLA_GROUP_COUNT];
    gradient_flow(c, list, tr, need);
    const vla_lm_config *l = &c->language;
    double img1 = (double)vla_policy_image_tokens(c), n_img = c->vision.cameras * img1;
    double n_pre = (double)vla_policy_prefix_tokens(c), horizon = (double)c->action.horizon;
    double n_dit = c->kind == VLA_POLICY_GROOT ? 1 + (double)c->head.future_tokens + horizon : horizon;
    double fwd[VLA_GROUP_COUNT] = {0};
    for (int64_t i = 0; i < list->n; i++) {
        const vla_param_spec *s = &list->items[i];
        double tokens = 0;
        switch (s->apply) {
        case VLA_APPLY_IMAGE: tokens = n_img; break;
        case VLA_APPLY_PREFIX: tokens = n_pre; break;
        case VLA_APPLY_ACTION: tokens = horizon; break;
        case VLA_APPLY_DIT: tokens = n_dit; break;
        case VLA_APPLY_SAMPLE: tokens = 1; break;
        default: break;
        }
        fwd[s->group] += 2.0 * (double)s->numel / (double)(s->n_emb > 0 ? s->n_emb : 1) * tokens;
    }
    /* attention scores and weighted sums: 4·Nq·Nk·(heads·head_dim) */
    double lm_hd = (double)(l->heads * l->head_dim);
    fwd[VLA_GROUP_VISION] += c->vision.depth * c->vision.cameras * 4.0 * img1 * img1 * c->vision.width;
    if (c->kind == VLA_POLICY_PI05) {
        fwd[VLA_GROUP_LANGUAGE] += l->depth * 4.0 * n_pre * n_pre * lm_hd; /* bidirectional prefix */
        fwd[VLA_GROUP_EXPERT] += c->expert.depth * 4.0 * horizon * (n_pre + horizon) * lm_hd;
    } else {
        const vla_groot_head_config *h = &c->head;
        double inner = (double)(h->dit_heads * h->dit_head_dim);
        fwd[VLA_GROUP_LANGUAGE] += l->depth * 2.0 * n_pre * n_pre * lm_hd; /* causal: half the pairs */
        fwd[VLA_GROUP_VL_ADAPTER] += h->vl_layers * 4.0 * n_pre * n_pre * (double)(h->vl_heads * h->vl_head_dim);
        fwd[VLA_GROUP_EXPERT] += (double)((h->dit_layers + 1) / 2) * 4.0 * n_dit * n_pre * inner +
                                 (double)(h->dit_layers / 2) * 4.0 * n_dit * n_dit * inner;
    }
    for (int g = 0; g < VLA_GROUP_COUNT; g++) {
        out->forward[g] = fwd[g];
        out->train[g] = fwd[g] * (1.0 + (need[g] ? 1.0 : 0.0) + (tr[g] ? 1.0 : 0.0));
        out->total_forward += fwd[g];
        out->total_train += out->train[g];
        bool action_side = g == VLA_GROUP_EXPERT || g == VLA_GROUP_ACTION_IO;
        out->sample += action_side ? (double)c->flow.steps * fwd[g] : fwd[g];
    }
}

void vla_activation_estimate_compute(const vla_policy_config *c, const vla_param_list *list,
                                     vla_activation_estimate *out) {
    memset(out, 0, sizeof *out);
    bool tr[VLA_GROUP_COUNT], need[VLA_GROUP_COUNT];
    gradient_flow(c, list, tr, need);
    const vla_vit_config *v = &c->vision;
    const vla_lm_config *l = &c->language;
    double n_img = (double)(v->cameras * vla_policy_image_tokens(c));
    double n_pre = (double)vla_policy_prefix_tokens(c);
    double horizon = (double)c->action.horizon;
    double per_layer[VLA_GROUP_COUNT] = {0}, total[VLA_GROUP_COUNT] = {0};

    /* vision: patches (im2col) + embeddings, then the encoder layers */
    out->tokens[VLA_GROUP_VISION] = (int64_t)n_img;
    per_layer[VLA_GROUP_VISION] = layer_floats(n_img, v->width, v->heads, v->heads, (double)v->width / v->heads,
                                               n_img, v->mlp, false);
    total[VLA_GROUP_VISION] = n_img * (v->channels * v->patch * v->patch + v->width) +
                              v->depth * per_layer[VLA_GROUP_VISION] + n_img * v->width;
    out->tokens[VLA_GROUP_CONNECTOR] = (int64_t)n_img;
    per_layer[VLA_GROUP_CONNECTOR] = total[VLA_GROUP_CONNECTOR] = n_img * (v->width + l->width);
    out->tokens[VLA_GROUP_LANGUAGE] = (int64_t)n_pre;
    per_layer[VLA_GROUP_LANGUAGE] =
        layer_floats(n_pre, l->width, l->heads, l->kv_heads, l->head_dim, n_pre, l->mlp, true);
    total[VLA_GROUP_LANGUAGE] = n_pre * l->width + l->depth * per_layer[VLA_GROUP_LANGUAGE] + n_pre * l->width;

    if (c->kind == VLA_POLICY_PI05) {
        const vla_expert_config *e = &c->expert;
        out->tokens[VLA_GROUP_EXPERT] = out->tokens[VLA_GROUP_ACTION_IO] = (int64_t)horizon;
        /* the expert's queries attend over prefix + suffix keys */
        per_layer[VLA_GROUP_EXPERT] =
            layer_floats(horizon, e->width, l->heads, l->kv_heads, l->head_dim, horizon, e->mlp, true) +
            2 * 3 * e->width; /* the two AdaRMS modulations (scale, shift, gate), per sample */
        total[VLA_GROUP_EXPERT] = e->depth * per_layer[VLA_GROUP_EXPERT] + horizon * e->width;
        per_layer[VLA_GROUP_ACTION_IO] = total[VLA_GROUP_ACTION_IO] =
            horizon * (2 * c->action.action_dim + 2 * e->width) + 4 * e->width;
    } else {
        const vla_groot_head_config *h = &c->head;
        double vl = (double)(h->vl_heads * h->vl_head_dim), inner = (double)(h->dit_heads * h->dit_head_dim);
        double n_act = 1 + (double)h->future_tokens + horizon;
        out->tokens[VLA_GROUP_VL_ADAPTER] = (int64_t)n_pre;
        per_layer[VLA_GROUP_VL_ADAPTER] =
            layer_floats(n_pre, vl, h->vl_heads, h->vl_heads, h->vl_head_dim, n_pre, h->ff_mult * vl, false);
        total[VLA_GROUP_VL_ADAPTER] = 2 * n_pre * l->width + h->vl_layers * per_layer[VLA_GROUP_VL_ADAPTER];
        out->tokens[VLA_GROUP_EXPERT] = (int64_t)n_act;
        double cross = layer_floats(n_act, inner, h->dit_heads, h->dit_heads, h->dit_head_dim, n_pre,
                                    h->ff_mult * inner, false);
        double self = layer_floats(n_act, inner, h->dit_heads, h->dit_heads, h->dit_head_dim, n_act,
                                   h->ff_mult * inner, false);
        per_layer[VLA_GROUP_EXPERT] = cross > self ? cross : self;
        total[VLA_GROUP_EXPERT] = (double)((h->dit_layers + 1) / 2) * cross + (double)(h->dit_layers / 2) * self +
                                  n_act * (2 * inner + h->output_dim);
        out->tokens[VLA_GROUP_ACTION_IO] = (int64_t)(horizon + 1);
        per_layer[VLA_GROUP_ACTION_IO] = total[VLA_GROUP_ACTION_IO] =
            (c->action.state_dim + h->state_hidden + inner) +
            horizon * (c->action.action_dim + 5 * inner + 2 * h->output_dim + c->action.action_dim);
    }
    for (int g = 0; g < VLA_GROUP_COUNT; g++) {
        out->transient_per_sample[g] = per_layer[g];
        out->floats_per_sample[g] = need[g] ? total[g] : 0;
        out->total_floats_per_sample += out->floats_per_sample[g];
    }
}
