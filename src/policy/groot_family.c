/* groot_family.c — the GR00T N1.5 family table (family.h): its
 * "action_head" config section, the parameter inventory in Isaac-GR00T's
 * naming, estimates, the token layout and prompt of a sample, the flow
 * convention and the training defaults. The network is groot.c,
 * groot_backbone.c and groot_dit.c. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "policy/family.h"
#include "policy/groot_internal.h"

#include "nn/acts.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

static int section_fields(vla_policy_config *c, vla_config_field *f, int cap) {
    vla_groot_head_config *h = &c->head;
    const vla_config_field t[] = {
        VLA_REQ_INT("vl_layers", &h->vl_layers, 0, 1024),
        VLA_REQ_INT("vl_heads", &h->vl_heads, 1, 1024),
        VLA_REQ_INT("vl_head_dim", &h->vl_head_dim, 1, 4096),
        VLA_REQ_INT("dit_layers", &h->dit_layers, 1, 1024),
        VLA_REQ_INT("dit_heads", &h->dit_heads, 1, 1024),
        VLA_REQ_INT("dit_head_dim", &h->dit_head_dim, 1, 4096),
        VLA_REQ_INT("output_dim", &h->output_dim, 1, 65536),
        VLA_REQ_INT("state_hidden", &h->state_hidden, 1, 65536),
        VLA_OPT_INT("ff_mult", &h->ff_mult, 1, 64, 4),
        VLA_REQ_INT("embodiments", &h->embodiments, 1, 4096),
        VLA_REQ_INT("future_tokens", &h->future_tokens, 0, 65536),
        VLA_REQ_INT("max_seq_len", &h->max_seq_len, 1, 1 << 20),
        VLA_REQ_INT("timestep_channels", &h->timestep_channels, 2, 65536),
        VLA_OPT_INT("timestep_buckets", &h->timestep_buckets, 1, 1 << 20, 1000),
    };
    int n = (int)(sizeof t / sizeof t[0]);
    memcpy(f, t, (size_t)(n < cap ? n : cap) * sizeof *f);
    return n < cap ? n : cap;
}

static vla_status validate(const char *what, const vla_policy_config *c) {
    const vla_groot_head_config *h = &c->head;
    if (h->vl_heads * h->vl_head_dim != c->language.width)
        return vla_error(VLA_ERR_FORMAT, "%s: action_head.vl_heads·vl_head_dim (%lld) must equal language.width (%lld)",
                         what, (long long)(h->vl_heads * h->vl_head_dim), (long long)c->language.width);
    if (h->timestep_channels % 2)
        return vla_error(VLA_ERR_FORMAT, "%s: action_head.timestep_channels must be even", what);
    if ((h->dit_heads * h->dit_head_dim) % 2)
        return vla_error(VLA_ERR_FORMAT, "%s: action_head dit inner dim must be even (sin/cos encoding)", what);
    if (c->action.horizon > h->max_seq_len)
        return vla_error(VLA_ERR_FORMAT, "%s: action.horizon (%lld) exceeds action_head.max_seq_len (%lld)", what,
                         (long long)c->action.horizon, (long long)h->max_seq_len);
    return VLA_OK;
}

/* ---- inventory -------------------------------------------------------------------------------- */

/* One Qwen3 decoder layer: input_layernorm, q k v o, gate up down, q_norm
 * k_norm, post_attention_layernorm (the state_dict's order). */
static void qwen3_layer(vla_param_builder *b, vla_block_weights *L, const char *lp) {
    const vla_lm_config *l = &b->cfg->language;
    int64_t W = l->width, Q = l->heads * l->head_dim, K = l->kv_heads * l->head_dim;
    vla_pb_tensor(b, &L->norm1_w, VLA_INIT_ONES, 1, SHAPE(W), "%s.input_layernorm.weight", lp);
    vla_pb_decoder_attn_mlp(b, &L->q_w, &L->k_w, &L->v_w, &L->o_w, &L->gate_w, &L->up_w, &L->down_w, W, Q, K,
                            l->mlp, lp);
    if (l->qk_norm) {
        vla_pb_tensor(b, &L->q_norm, VLA_INIT_ONES, 1, SHAPE(l->head_dim), "%s.self_attn.q_norm.weight", lp);
        vla_pb_tensor(b, &L->k_norm, VLA_INIT_ONES, 1, SHAPE(l->head_dim), "%s.self_attn.k_norm.weight", lp);
    }
    vla_pb_tensor(b, &L->norm2_w, VLA_INIT_ONES, 1, SHAPE(W), "%s.post_attention_layernorm.weight", lp);
}

/* diffusers-style BasicTransformerBlock as GR00T uses it: attn1 (to_q/k/v
 * with bias, to_out.0), FeedForward gelu-approximate (ff.net.0.proj,
 * ff.net.2). `ada` gives norm1 an AdaLayerNorm linear (DiT); otherwise
 * norm1/norm3 are affine LayerNorms (VL self-attention). */
static void basic_block(vla_param_builder *b, vla_block_weights *L, const char *bp, int64_t dim, int64_t kv_dim,
                        bool ada, vla_param_apply tokens, vla_param_apply kv_tokens) {
    int64_t ff = b->cfg->head.ff_mult * dim;
    vla_param_group grp = b->group;
    char q[300];
    vla_pb_group(b, grp, VLA_APPLY_SAMPLE); /* AdaLN's modulation: once per sample */
    snprintf(q, sizeof q, ada ? "%s.norm1.linear" : "%s.norm1", bp);
    if (ada) vla_pb_linear(b, &L->norm1_w, &L->norm1_b, dim, 2 * dim, q);
    else vla_pb_layernorm(b, &L->norm1_w, &L->norm1_b, dim, q);
    vla_pb_group(b, grp, tokens);
    snprintf(q, sizeof q, "%s.attn1.to_q", bp);
    vla_pb_linear(b, &L->q_w, &L->q_b, dim, dim, q);
    vla_pb_group(b, grp, kv_tokens);
    snprintf(q, sizeof q, "%s.attn1.to_k", bp);
    vla_pb_linear(b, &L->k_w, &L->k_b, kv_dim, dim, q);
    snprintf(q, sizeof q, "%s.attn1.to_v", bp);
    vla_pb_linear(b, &L->v_w, &L->v_b, kv_dim, dim, q);
    vla_pb_group(b, grp, tokens);
    snprintf(q, sizeof q, "%s.attn1.to_out.0", bp);
    vla_pb_linear(b, &L->o_w, &L->o_b, dim, dim, q);
    if (!ada) {
        snprintf(q, sizeof q, "%s.norm3", bp);
        vla_pb_layernorm(b, &L->norm2_w, &L->norm2_b, dim, q);
    }
    snprintf(q, sizeof q, "%s.ff.net.0.proj", bp);
    vla_pb_linear(b, &L->up_w, &L->up_b, dim, ff, q);
    snprintf(q, sizeof q, "%s.ff.net.2", bp);
    vla_pb_linear(b, &L->down_w, &L->down_b, ff, dim, q);
}

/* The backbone: Eagle 2.5's SigLIP-2, mlp1 and the cut Qwen3. */
static void backbone_inventory(vla_param_builder *b, const vla_policy_config *c, groot_weights *W) {
    const vla_lm_config *l = &c->language;
    const char *lm = "backbone.eagle_model.language_model.model";
    char lp[260];
    vla_vit_inventory(b, &c->vision, "backbone.eagle_model.vision_model.vision_model", &W->vit);
    vla_pb_group(b, VLA_GROUP_CONNECTOR, VLA_APPLY_IMAGE); /* mlp1 = Sequential(Linear(1152, 2048)) */
    vla_pb_linear(b, &W->mlp1_w, &W->mlp1_b, c->vision.width, l->width, "backbone.eagle_model.mlp1.0");
    vla_pb_group(b, VLA_GROUP_LANGUAGE, VLA_APPLY_PREFIX);
    vla_pb_tensor(b, &W->embed, VLA_INIT_NORMAL, 2, SHAPE(l->vocab, l->width), "%s.embed_tokens.weight", lm);
    vla_pb_last_apply(b, VLA_APPLY_LOOKUP, 1);
    W->lm = vla_pb_blocks(b, l->depth);
    for (int64_t i = 0; i < l->depth && W->lm; i++) {
        snprintf(lp, sizeof lp, "%s.layers.%lld", lm, (long long)i);
        qwen3_layer(b, &W->lm[i], lp);
    }
    vla_pb_tensor(b, &W->final_norm, VLA_INIT_ONES, 1, SHAPE(l->width), "%s.norm.weight", lm);
}

/* The action head: vlln + VL self-attention, timestep encoder, DiT, projections, encoders, decoder. */
static void head_inventory(vla_param_builder *b, const vla_policy_config *c, groot_weights *W) {
    const vla_groot_head_config *h = &c->head;
    int64_t L = c->language.width, D = h->dit_heads * h->dit_head_dim, ne = h->embodiments;
    char q[300];
    /* From scratch, every matrix of the head takes PyTorch's nn.Linear
     * default (U(±1/√in), biases too). Isaac-GR00T's diffusers/nn layers
     * (VL self-attention, timestep encoder, DiT, proj_out) have it; its
     * CategorySpecificLinear encoders/decoder draw 0.02·randn with zero
     * biases — harmless for a head that is always loaded pretrained, fatal
     * at the small presets' widths: each 0.02 matrix scales its input by
     * ~0.16, the five between x_t and the output left training at the
     * predict-the-mean loss (~2.06) for hundreds of steps, and a PushT run
     * with uniform flow time never left it in 16,000 (docs/train.md). The
     * embeddings keep GR00T's 0.02 normal. Published weights are loaded over
     * all of this. */
    b->torch_linear = true;
    vla_pb_group(b, VLA_GROUP_VL_ADAPTER, VLA_APPLY_PREFIX);
    vla_pb_layernorm(b, &W->vlln_w, &W->vlln_b, L, "action_head.vlln");
    W->vl = vla_pb_blocks(b, h->vl_layers);
    for (int64_t i = 0; i < h->vl_layers && W->vl; i++) {
        snprintf(q, sizeof q, "action_head.vl_self_attention.transformer_blocks.%lld", (long long)i);
        basic_block(b, &W->vl[i], q, L, L, false, VLA_APPLY_PREFIX, VLA_APPLY_PREFIX);
    }
    vla_pb_group(b, VLA_GROUP_EXPERT, VLA_APPLY_SAMPLE);
    const char *te = "action_head.model.timestep_encoder.timestep_embedder";
    snprintf(q, sizeof q, "%s.linear_1", te);
    vla_pb_linear(b, &W->te1_w, &W->te1_b, h->timestep_channels, D, q);
    snprintf(q, sizeof q, "%s.linear_2", te);
    vla_pb_linear(b, &W->te2_w, &W->te2_b, D, D, q);
    W->dit = vla_pb_blocks(b, h->dit_layers);
    for (int64_t i = 0; i < h->dit_layers && W->dit; i++) {
        /* interleave_self_attention: even blocks cross-attend to the VL tokens */
        bool cross = i % 2 == 0;
        snprintf(q, sizeof q, "action_head.model.transformer_blocks.%lld", (long long)i);
        basic_block(b, &W->dit[i], q, D, cross ? L : D, true, VLA_APPLY_DIT, cross ? VLA_APPLY_PREFIX : VLA_APPLY_DIT);
    }
    vla_pb_group(b, VLA_GROUP_EXPERT, VLA_APPLY_SAMPLE);
    vla_pb_linear(b, &W->po1_w, &W->po1_b, D, 2 * D, "action_head.model.proj_out_1");
    vla_pb_group(b, VLA_GROUP_EXPERT, VLA_APPLY_DIT);
    vla_pb_linear(b, &W->po2_w, &W->po2_b, D, h->output_dim, "action_head.model.proj_out_2");
    vla_pb_group(b, VLA_GROUP_ACTION_IO, VLA_APPLY_SAMPLE); /* one state token per sample */
    vla_pb_cat_linear(b, &W->st1_w, &W->st1_b, ne, c->action.state_dim, h->state_hidden, "action_head.state_encoder.layer1");
    vla_pb_cat_linear(b, &W->st2_w, &W->st2_b, ne, h->state_hidden, D, "action_head.state_encoder.layer2");
    vla_pb_group(b, VLA_GROUP_ACTION_IO, VLA_APPLY_ACTION);
    vla_pb_cat_linear(b, &W->a1_w, &W->a1_b, ne, c->action.action_dim, D, "action_head.action_encoder.W1");
    vla_pb_cat_linear(b, &W->a2_w, &W->a2_b, ne, 2 * D, D, "action_head.action_encoder.W2");
    vla_pb_cat_linear(b, &W->a3_w, &W->a3_b, ne, D, D, "action_head.action_encoder.W3");
    vla_pb_group(b, VLA_GROUP_ACTION_IO, VLA_APPLY_DIT); /* decoded at every DiT token, then the last H kept */
    vla_pb_cat_linear(b, &W->d1_w, &W->d1_b, ne, h->output_dim, h->output_dim, "action_head.action_decoder.layer1");
    vla_pb_cat_linear(b, &W->d2_w, &W->d2_b, ne, h->output_dim, c->action.action_dim, "action_head.action_decoder.layer2");
    b->torch_linear = false;
    vla_pb_tensor(b, &W->pos, VLA_INIT_NORMAL, 2, SHAPE(h->max_seq_len, D), "action_head.position_embedding.weight");
    vla_pb_last_apply(b, VLA_APPLY_LOOKUP, 1);
    if (h->future_tokens > 0) {
        vla_pb_tensor(b, &W->fut, VLA_INIT_NORMAL, 2, SHAPE(h->future_tokens, D), "action_head.future_tokens.weight");
        vla_pb_last_apply(b, VLA_APPLY_LOOKUP, 1);
    }
}

/* Isaac-GR00T GR00T_N1_5 (backbone + FlowmatchingActionHead), in registration order. */
static void inventory(vla_param_builder *b, const vla_policy_config *c, void *weights) {
    backbone_inventory(b, c, weights);
    head_inventory(b, c, weights);
}

/* ---- estimates ------------------------------------------------------------------------------ */

static double head_tokens(const vla_policy_config *c) {
    return 1 + (double)c->head.future_tokens + (double)c->action.horizon;
}

static void attention_flops(const vla_policy_config *c, double fwd[VLA_GROUP_COUNT]) {
    const vla_lm_config *l = &c->language;
    const vla_groot_head_config *h = &c->head;
    double n_pre = (double)vla_policy_prefix_tokens(c), n_dit = head_tokens(c);
    double inner = (double)(h->dit_heads * h->dit_head_dim);
    fwd[VLA_GROUP_LANGUAGE] += l->depth * 2.0 * n_pre * n_pre * (double)(l->heads * l->head_dim); /* causal: half */
    fwd[VLA_GROUP_VL_ADAPTER] += h->vl_layers * 4.0 * n_pre * n_pre * (double)(h->vl_heads * h->vl_head_dim);
    fwd[VLA_GROUP_EXPERT] += (double)((h->dit_layers + 1) / 2) * 4.0 * n_dit * n_pre * inner +
                             (double)(h->dit_layers / 2) * 4.0 * n_dit * n_dit * inner;
}

static void activations(const vla_policy_config *c, vla_activation_estimate *est, double total[VLA_GROUP_COUNT],
                        double per_layer[VLA_GROUP_COUNT]) {
    const vla_lm_config *l = &c->language;
    const vla_groot_head_config *h = &c->head;
    double n_pre = (double)vla_policy_prefix_tokens(c), horizon = (double)c->action.horizon;
    double vl = (double)(h->vl_heads * h->vl_head_dim), inner = (double)(h->dit_heads * h->dit_head_dim);
    double n_act = head_tokens(c);
    est->tokens[VLA_GROUP_VL_ADAPTER] = (int64_t)n_pre;
    per_layer[VLA_GROUP_VL_ADAPTER] =
        vla_layer_act_floats(n_pre, vl, h->vl_heads, h->vl_heads, h->vl_head_dim, n_pre, h->ff_mult * vl, false,
                             est->bf16_copies);
    total[VLA_GROUP_VL_ADAPTER] = 2 * n_pre * l->width + h->vl_layers * per_layer[VLA_GROUP_VL_ADAPTER];
    est->tokens[VLA_GROUP_EXPERT] = (int64_t)n_act;
    double cross = vla_layer_act_floats(n_act, inner, h->dit_heads, h->dit_heads, h->dit_head_dim, n_pre,
                                        h->ff_mult * inner, false, est->bf16_copies);
    double self = vla_layer_act_floats(n_act, inner, h->dit_heads, h->dit_heads, h->dit_head_dim, n_act,
                                       h->ff_mult * inner, false, est->bf16_copies);
    per_layer[VLA_GROUP_EXPERT] = cross > self ? cross : self;
    total[VLA_GROUP_EXPERT] = (double)((h->dit_layers + 1) / 2) * cross + (double)(h->dit_layers / 2) * self +
                              n_act * (2 * inner + h->output_dim);
    est->recompute_per_sample[VLA_GROUP_VL_ADAPTER] = vla_activation_remat(
        total[VLA_GROUP_VL_ADAPTER], h->vl_layers, per_layer[VLA_GROUP_VL_ADAPTER], n_pre * vl);
    /* the DiT keeps one table of each block kind */
    est->recompute_per_sample[VLA_GROUP_EXPERT] =
        total[VLA_GROUP_EXPERT] - (double)((h->dit_layers + 1) / 2) * cross - (double)(h->dit_layers / 2) * self +
        h->dit_layers * n_act * inner + cross + (h->dit_layers > 1 ? self : 0);
    est->tokens[VLA_GROUP_ACTION_IO] = (int64_t)(horizon + 1);
    per_layer[VLA_GROUP_ACTION_IO] = total[VLA_GROUP_ACTION_IO] =
        (c->action.state_dim + h->state_hidden + inner) +
        horizon * (c->action.action_dim + 5 * inner + 2 * h->output_dim + c->action.action_dim);
    est->recompute_per_sample[VLA_GROUP_ACTION_IO] = total[VLA_GROUP_ACTION_IO];
}

/* ---- a sample on the token axis ----------------------------------------------------------------- */

/* Eagle's <img> token (configs/tokenizers/eagle/added_tokens.json): in its
 * chat template an image's <IMG_CONTEXT> tokens follow it. */
#define EAGLE_IMG_OPEN 151670

/* Whether the prompt is Eagle's chat template (cfg.tokenizer "eagle") rather
 * than the task text alone (the byte-level tokenizer of the small presets). */
static bool eagle_prompt(const vla_policy_config *cfg) { return !strcmp(cfg->tokenizer, "eagle"); }

/* The prefix (image and text tokens, group = position: the Qwen3 LM is
 * causal), then the action head's sequence: 1 state token (position 0) and
 * `horizon` action tokens (positions 0..H−1: the rows of the learned position
 * embedding), group 0 (bidirectional in the DiT). The prefix is images then
 * text, or with Eagle's prompt the text with each image's rows right after
 * its <img> token, where processing_eagle2_5_vl.py expands <image-k> into
 * <img><IMG_CONTEXT>×n</img> (images a cut prompt has no <img> left for
 * follow the text). */
static int64_t layout(const vla_policy_config *cfg, int32_t n_images, const int32_t *ids, int32_t n_text,
                      uint8_t *roles, int32_t *groups, int32_t *positions) {
    int64_t itok = vla_policy_image_tokens(cfg), n_img = (int64_t)n_images * itok, n_pre = n_img + n_text;
    int64_t total = n_pre + 1 + cfg->action.horizon;
    if (!roles && !groups && !positions) return total;
    bool eagle = ids && eagle_prompt(cfg);
    int64_t t = 0, placed = 0;
#define PUT(role, group, pos)                                                                                        do {                                                                                                                 if (roles) roles[t] = (uint8_t)(role);                                                                           if (groups) groups[t] = (int32_t)(group);                                                                        if (positions) positions[t] = (int32_t)(pos);                                                                    t++;                                                                                                         } while (0)
    if (!eagle)
        for (; placed < n_img; placed++) PUT(VLA_ROLE_IMAGE, t, t);
    for (int32_t i = 0; i < n_text; i++) {
        PUT(VLA_ROLE_TEXT, t, t);
        if (eagle && ids[i] == EAGLE_IMG_OPEN && placed < n_img)
            for (int64_t k = 0; k < itok; k++, placed++) PUT(VLA_ROLE_IMAGE, t, t);
    }
    for (; placed < n_img; placed++) PUT(VLA_ROLE_IMAGE, t, t);
    PUT(VLA_ROLE_STATE, 0, 0);
    for (int64_t k = 0; k < cfg->action.horizon; k++) PUT(VLA_ROLE_ACTION, 0, k);
#undef PUT
    return total;
}

/* Byte-level: the task text alone (no BOS, as Qwen3). Eagle: the chat
 * template (vla_eagle_prompt_text) with no <IMG_CONTEXT> tokens: the layout
 * puts the image rows after each <img>. Each special token of the template
 * ends a span the BPE encodes alone, so leaving the <IMG_CONTEXT> tokens out
 * changes no other id: the ids are vla_eagle_tokenize's minus those. */
static vla_status tokenize(const vla_policy_config *cfg, const vla_tokenizer *tok, const char *task,
                           const float *state, int64_t state_dim, int32_t n_images, int32_t *ids, int64_t cap,
                           int64_t *n, bool *truncated) {
    (void)state, (void)state_dim;
    int64_t lim = cap < cfg->language.max_tokens ? cap : cfg->language.max_tokens;
    *n = 0;
    if (truncated) *truncated = false;
    if (lim < 1) return vla_error(VLA_ERR_INVALID_ARG, "tokenize: no room for tokens (cap %lld)", (long long)cap);
    if (!task) task = "";
    char *text = NULL;
    if (eagle_prompt(cfg)) {
        if (vla_tokenizer_token_id(tok, "<img>") != EAGLE_IMG_OPEN)
            return vla_error(VLA_ERR_INVALID_ARG, "tokenize: GR00T's Eagle prompt needs Eagle's tokenizer (<img> = %d), "
                             "not '%s'", EAGLE_IMG_OPEN, tok->ops->name);
        VLA_TRY(vla_eagle_prompt_text(task, n_images, 0, &text));
    }
    const char *what = text ? text : task;
    int64_t need = 0;
    vla_status st = tok->ops->encode(tok, what, strlen(what), ids, lim, &need);
    free(text);
    if (st != VLA_OK) return vla_error_context(st, "tokenize");
    *n = need < lim ? need : lim;
    if (truncated) *truncated = need > lim;
    return VLA_OK;
}

static int64_t embodiments(const vla_policy_config *cfg) { return cfg->head.embodiments; }

static void flow(const vla_policy_config *cfg, vla_flow *f) {
    f->conv = VLA_FLOW_GROOT;
    f->timestep_buckets = cfg->head.timestep_buckets;
}

const vla_policy_family vla_groot_family = {
    .name = "groot",
    .summary = "GR00T N1.5: Eagle backbone (SigLIP-2 → Qwen3 cut after language.depth layers), VL self-attention, "
               "a flow-matching DiT action head with per-embodiment encoders",
    .section = "action_head",
    .section_fields = section_fields,
    .validate = validate,
    .weights_size = sizeof(groot_weights),
    .inventory = inventory,
    .attention_flops = attention_flops,
    .head_tokens = head_tokens,
    .activations = activations,
    .layout = layout,
    .tokenize = tokenize,
    .embodiments = embodiments,
    .flow = flow,
    .create = vla_groot_create,
    /* Isaac-GR00T N1.5 gr00t_finetune.py: HF Trainer AdamW (b1 0.95, b2 0.999,
     * eps 1e-8, weight_decay 1e-5, no decay on biases and norms), lr 1e-4,
     * cosine with warmup_ratio 0.05 from 0 to 0, clip 1.0, no EMA */
    .train = {.lr = 1e-4, .beta1 = 0.95, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 1e-5, .clip_norm = 1.0,
              .decay_biases_and_norms = false, .ema_decay = 0, .warmup_steps = 0, .warmup_fraction = 0.05,
              .default_run_steps = 0, .end_lr = 0, .warmup_from_fraction_of_peak = false},
};
