/* pi05_family.c — the π0.5 family table (family.h): its "expert" config
 * section, the parameter inventory in openpi's PyTorch naming, estimates,
 * the token layout and prompt of a sample, the flow convention and the
 * training defaults. The network itself is pi05.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/family.h"
#include "policy/pi05_internal.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

static int section_fields(vla_policy_config *c, vla_config_field *f, int cap) {
    vla_expert_config *e = &c->expert;
    const vla_config_field t[] = {
        VLA_REQ_INT("width", &e->width, 1, 65536),
        VLA_REQ_INT("depth", &e->depth, 1, 1024),
        VLA_REQ_INT("mlp", &e->mlp, 1, 1 << 20),
    };
    int n = (int)(sizeof t / sizeof t[0]);
    memcpy(f, t, (size_t)(n < cap ? n : cap) * sizeof *f);
    return n < cap ? n : cap;
}

static vla_status validate(const char *what, const vla_policy_config *c) {
    /* openpi gemma.py Module asserts the experts share depth and heads. */
    if (c->expert.depth != c->language.depth)
        return vla_error(VLA_ERR_FORMAT, "%s: expert.depth (%lld) must equal language.depth (%lld)", what,
                         (long long)c->expert.depth, (long long)c->language.depth);
    if (c->expert.width % 2)
        return vla_error(VLA_ERR_FORMAT, "%s: expert.width (%lld) must be even (sin/cos time embedding)", what,
                         (long long)c->expert.width);
    if (!(c->flow.time_max_period > c->flow.time_min_period))
        return vla_error(VLA_ERR_FORMAT, "%s: flow.time_max_period must exceed flow.time_min_period", what);
    return VLA_OK;
}

/* One Gemma decoder layer's attention and GeGLU MLP (no biases). */
static void decoder_attn_mlp(vla_param_builder *b, vla_block_weights *L, const char *lp, int64_t width, int64_t mlp) {
    const vla_lm_config *l = &b->cfg->language;
    vla_pb_decoder_attn_mlp(b, &L->q_w, &L->k_w, &L->v_w, &L->o_w, &L->gate_w, &L->up_w, &L->down_w, width,
                            l->heads * l->head_dim, l->kv_heads * l->head_dim, mlp, lp);
}

/* AdaRMSNorm's zero-initialised Dense(cond → 3·width): "<prefix>.dense.{weight,bias}". */
static void adarms_dense(vla_param_builder *b, vla_wg *w, vla_wg *bias, int64_t width, const char *prefix) {
    vla_pb_tensor(b, w, VLA_INIT_ZEROS, 2, SHAPE(3 * width, width), "%s.dense.weight", prefix);
    vla_pb_last_apply(b, VLA_APPLY_SAMPLE, 1);
    vla_pb_tensor(b, bias, VLA_INIT_ZEROS, 1, SHAPE(3 * width), "%s.dense.bias", prefix);
}

/* openpi's PyTorch PI0Pytorch(pi05=True) state_dict, in registration order. */
static void inventory(vla_param_builder *b, const vla_policy_config *c, void *weights) {
    pi05_weights *W = weights;
    const vla_lm_config *l = &c->language;
    const vla_expert_config *e = &c->expert;
    const char *pg = "paligemma_with_expert.paligemma.model", *ex = "paligemma_with_expert.gemma_expert.model";
    char q[300], lp[260];
    snprintf(q, sizeof q, "%s.vision_tower.vision_model", pg);
    vla_vit_inventory(b, &c->vision, q, &W->vit);

    vla_pb_group(b, VLA_GROUP_CONNECTOR, VLA_APPLY_IMAGE);
    snprintf(q, sizeof q, "%s.multi_modal_projector.linear", pg);
    vla_pb_linear(b, &W->proj_w, &W->proj_b, c->vision.width, l->width, q);

    vla_pb_group(b, VLA_GROUP_LANGUAGE, VLA_APPLY_PREFIX);
    vla_pb_tensor(b, &W->embed, VLA_INIT_NORMAL, 2, SHAPE(l->vocab, l->width), "%s.language_model.embed_tokens.weight",
                  pg);
    vla_pb_last_apply(b, VLA_APPLY_LOOKUP, 1);
    W->lm = vla_pb_blocks(b, l->depth);
    for (int64_t i = 0; i < l->depth && W->lm; i++) {
        snprintf(lp, sizeof lp, "%s.language_model.layers.%lld", pg, (long long)i);
        /* Gemma's RMSNorm scales by (1 + w): zeros is the identity */
        vla_pb_tensor(b, &W->lm[i].norm1_w, VLA_INIT_ZEROS, 1, SHAPE(l->width), "%s.input_layernorm.weight", lp);
        decoder_attn_mlp(b, &W->lm[i], lp, l->width, l->mlp);
        vla_pb_tensor(b, &W->lm[i].norm2_w, VLA_INIT_ZEROS, 1, SHAPE(l->width), "%s.post_attention_layernorm.weight",
                      lp);
    }
    vla_pb_tensor(b, &W->lm_norm, VLA_INIT_ZEROS, 1, SHAPE(l->width), "%s.language_model.norm.weight", pg);

    /* the action expert: AdaRMSNorm everywhere (use_adarms=[False, True]) */
    vla_pb_group(b, VLA_GROUP_EXPERT, VLA_APPLY_ACTION);
    W->ex = vla_pb_blocks(b, e->depth);
    for (int64_t i = 0; i < e->depth && W->ex; i++) {
        snprintf(lp, sizeof lp, "%s.layers.%lld", ex, (long long)i);
        snprintf(q, sizeof q, "%s.input_layernorm", lp);
        adarms_dense(b, &W->ex[i].norm1_w, &W->ex[i].norm1_b, e->width, q);
        decoder_attn_mlp(b, &W->ex[i], lp, e->width, e->mlp);
        snprintf(q, sizeof q, "%s.post_attention_layernorm", lp);
        adarms_dense(b, &W->ex[i].norm2_w, &W->ex[i].norm2_b, e->width, q);
    }
    snprintf(q, sizeof q, "%s.norm", ex);
    adarms_dense(b, &W->fin_w, &W->fin_b, e->width, q);

    vla_pb_group(b, VLA_GROUP_ACTION_IO, VLA_APPLY_ACTION);
    vla_pb_linear(b, &W->ain_w, &W->ain_b, c->action.action_dim, e->width, "action_in_proj");
    vla_pb_linear(b, &W->aout_w, &W->aout_b, e->width, c->action.action_dim, "action_out_proj");
    vla_pb_group(b, VLA_GROUP_ACTION_IO, VLA_APPLY_SAMPLE);
    vla_pb_linear(b, &W->tin_w, &W->tin_b, e->width, e->width, "time_mlp_in");
    vla_pb_linear(b, &W->tout_w, &W->tout_b, e->width, e->width, "time_mlp_out");
}

/* ---- estimates ------------------------------------------------------------------ */

static void attention_flops(const vla_policy_config *c, double fwd[VLA_GROUP_COUNT]) {
    const vla_lm_config *l = &c->language;
    double n_pre = (double)vla_policy_prefix_tokens(c), h = (double)c->action.horizon;
    double hd = (double)(l->heads * l->head_dim);
    fwd[VLA_GROUP_LANGUAGE] += l->depth * 4.0 * n_pre * n_pre * hd;       /* bidirectional prefix */
    fwd[VLA_GROUP_EXPERT] += c->expert.depth * 4.0 * h * (n_pre + h) * hd; /* actions see prefix + chunk */
}

static double head_tokens(const vla_policy_config *c) { return (double)c->action.horizon; }

static void activations(const vla_policy_config *c, vla_activation_estimate *est, double total[VLA_GROUP_COUNT],
                        double per_layer[VLA_GROUP_COUNT]) {
    const vla_lm_config *l = &c->language;
    const vla_expert_config *e = &c->expert;
    double h = (double)c->action.horizon;
    est->tokens[VLA_GROUP_EXPERT] = est->tokens[VLA_GROUP_ACTION_IO] = (int64_t)h;
    /* the expert's queries attend over prefix + suffix keys; + the two AdaRMS modulations per sample */
    per_layer[VLA_GROUP_EXPERT] =
        vla_layer_act_floats(h, e->width, l->heads, l->kv_heads, l->head_dim, h, e->mlp, true, est->bf16_copies) +
        2 * 3 * e->width;
    total[VLA_GROUP_EXPERT] = e->depth * per_layer[VLA_GROUP_EXPERT] + h * e->width;
    per_layer[VLA_GROUP_ACTION_IO] = total[VLA_GROUP_ACTION_IO] =
        h * (2 * c->action.action_dim + 2 * e->width) + 4 * e->width;
    est->recompute_per_sample[VLA_GROUP_EXPERT] =
        vla_activation_remat(total[VLA_GROUP_EXPERT], e->depth, per_layer[VLA_GROUP_EXPERT], h * e->width);
    est->recompute_per_sample[VLA_GROUP_ACTION_IO] = total[VLA_GROUP_ACTION_IO];
}

/* ---- a sample on the token axis ---------------------------------------------------- */

/* [image×k·tokens | text×n] group 0 (bidirectional prefix), [action×H] group
 * 1; positions 0..len−1 (openpi: cumsum of the mask − 1 over prefix + suffix). */
static int64_t layout(const vla_policy_config *cfg, int32_t n_images, const int32_t *ids, int32_t n_text,
                      uint8_t *roles, int32_t *groups, int32_t *positions) {
    (void)ids; /* images first, whatever the text */
    int64_t n_img = (int64_t)n_images * vla_policy_image_tokens(cfg), n_pre = n_img + n_text;
    int64_t total = n_pre + cfg->action.horizon;
    for (int64_t t = 0; t < total && (roles || groups || positions); t++) {
        if (roles) roles[t] = t < n_img ? VLA_ROLE_IMAGE : t < n_pre ? VLA_ROLE_TEXT : VLA_ROLE_ACTION;
        if (groups) groups[t] = t < n_pre ? 0 : 1;
        if (positions) positions[t] = (int32_t)t;
    }
    return total;
}

/* [BOS] + "Task: …, State: …;\nAction: " with the state in 256 bins, only the
 * real tokens (the packer wants no padding). */
static vla_status tokenize(const vla_policy_config *cfg, const vla_tokenizer *tok, const char *task,
                           const float *state, int64_t state_dim, int32_t n_images, int32_t *ids, int64_t cap,
                           int64_t *n, bool *truncated) {
    (void)n_images; /* openpi's prompt names no image */
    int64_t lim = cap < cfg->language.max_tokens ? cap : cfg->language.max_tokens;
    *n = 0;
    if (truncated) *truncated = false;
    if (lim < 1) return vla_error(VLA_ERR_INVALID_ARG, "tokenize: no room for tokens (cap %lld)", (long long)cap);
    int32_t *tmp = malloc((size_t)lim * sizeof *tmp);
    if (!tmp) return vla_error(VLA_ERR_NOMEM, "tokenize: out of memory");
    int64_t real = 0;
    vla_status st = vla_pi05_tokenize(tok, task, state, state_dim, lim, tmp, NULL, &real, truncated);
    if (st == VLA_OK) memcpy(ids, tmp, (size_t)real * sizeof *ids), *n = real;
    free(tmp);
    return st;
}

static int64_t embodiments(const vla_policy_config *cfg) {
    (void)cfg;
    return 0;
}

static void flow(const vla_policy_config *cfg, vla_flow *f) {
    (void)cfg;
    f->conv = VLA_FLOW_PI05;
    f->timestep_buckets = 1000;
}

const vla_policy_family vla_pi05_family = {
    .name = "pi05",
    .summary = "π0.5: SigLIP ViT → Gemma LM over image+text, a Gemma action expert with AdaRMS on the flow time, "
               "one prefix-LM attention per layer",
    .section = "expert",
    .section_fields = section_fields,
    .validate = validate,
    .weights_size = sizeof(pi05_weights),
    .inventory = inventory,
    .attention_flops = attention_flops,
    .head_tokens = head_tokens,
    .activations = activations,
    .layout = layout,
    .tokenize = tokenize,
    .embodiments = embodiments,
    .flow = flow,
    .create = vla_pi05_create,
    /* openpi: optax AdamW(b1 0.9, b2 0.95, eps 1e-8, weight_decay 1e-10, no mask),
     * CosineDecaySchedule(warmup 1000, peak 2.5e-5, decay 30000, decay_lr 2.5e-6),
     * clip 1.0, EMA 0.99 */
    .train = {.lr = 2.5e-5, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 1e-10, .clip_norm = 1.0,
              .decay_biases_and_norms = true, .ema_decay = 0.99, .warmup_steps = 1000, .warmup_fraction = 0,
              .default_run_steps = 30000, .end_lr = 2.5e-6, .warmup_from_fraction_of_peak = true},
};
