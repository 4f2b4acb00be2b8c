/* param_spec.h — every parameter tensor of a policy, from its config alone:
 * checkpoint name, shape, module group, default trainability and how to
 * initialise it. Nothing is allocated for the tensors themselves, so the
 * full-size models can be counted (and their memory budgeted) on any
 * machine, and pi05.c / groot.c carve their one weight allocation from the
 * same list, in the same order.
 *
 * Names follow the public checkpoints so weights load by name:
 *   π0.5:  openpi's PyTorch port (PI0Pytorch state_dict), e.g.
 *          paligemma_with_expert.paligemma.model.language_model.layers.0.self_attn.q_proj.weight
 *          paligemma_with_expert.gemma_expert.model.layers.0.input_layernorm.dense.weight (AdaRMS)
 *          action_in_proj.weight, time_mlp_in.weight, …
 *   GR00T: Isaac-GR00T N1.5 (GR00T_N1_5 state_dict), e.g.
 *          backbone.eagle_model.vision_model.vision_model.encoder.layers.0.mlp.fc1.weight
 *          backbone.eagle_model.mlp1.0.weight
 *          backbone.eagle_model.language_model.model.layers.0.self_attn.q_norm.weight
 *          action_head.model.transformer_blocks.0.attn1.to_q.weight
 *          action_head.state_encoder.layer1.W  ([n_emb, in, out], GR00T's layout)
 * Left out on purpose (present in some checkpoints, unused by the policy):
 * the LM heads (tied to the token embedding in Gemma and Qwen3-1.7B), the
 * π0.5 expert's unused lm_head, SigLIP's pooling head, and the Qwen3 layers
 * after select_layer (deleted at construction in GR00T). */
#ifndef VLA_POLICY_PARAM_SPEC_H
#define VLA_POLICY_PARAM_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "policy/config.h"

typedef enum {
    VLA_INIT_NORMAL, /* N(0, std²) */
    VLA_INIT_ZEROS,
    VLA_INIT_ONES,
} vla_init_kind;

/* Which tokens a weight multiplies (for FLOP counts): a matrix applied to
 * each of those tokens costs 2·numel FLOPs per token (÷ n_emb for GR00T's
 * per-embodiment weights, of which each sample uses one slice). */
typedef enum {
    VLA_APPLY_NONE,   /* norms, biases: not counted */
    VLA_APPLY_LOOKUP, /* embedding tables: gathered, not multiplied */
    VLA_APPLY_IMAGE,  /* every image token */
    VLA_APPLY_PREFIX, /* every image + text token (LM, VL adapter, cross-attention K/V) */
    VLA_APPLY_ACTION, /* every action token (horizon) */
    VLA_APPLY_DIT,    /* every DiT token: state + future + action */
    VLA_APPLY_SAMPLE, /* once per sample (time conditioning, AdaLN/AdaRMS modulation, state token) */
} vla_param_apply;

typedef struct {
    char name[128];
    int ndim;
    int64_t shape[4];
    int64_t numel;
    vla_param_group group;
    bool trainable;   /* default: false when the config freezes its group */
    vla_init_kind init;
    float init_std;   /* VLA_INIT_NORMAL only */
    vla_param_apply apply;
    int64_t n_emb;    /* > 1 for per-embodiment weights (first dim) */
} vla_param_spec;

typedef struct {
    vla_param_spec *items;
    int64_t n, cap;
} vla_param_list;

/* Fill `out` (initialise it zeroed; it grows with realloc). */
vla_status vla_param_specs(const vla_policy_config *cfg, vla_param_list *out);
void vla_param_list_free(vla_param_list *list);
/* Index of a parameter by name, or -1. */
int64_t vla_param_find(const vla_param_list *list, const char *name);

typedef struct {
    int64_t params[VLA_GROUP_COUNT];
    int64_t trainable[VLA_GROUP_COUNT];
    int64_t tensors[VLA_GROUP_COUNT];
    int64_t total_params, total_trainable, total_tensors;
} vla_param_counts;

void vla_param_count(const vla_param_list *list, vla_param_counts *out);

/* Activation memory of one training step, estimated from shapes: the
 * floats each layer saves for its backward, per sample (token counts from
 * the config: cameras·image tokens, language.max_tokens, the action chunk),
 * llm.c-style. A group's activations count only when gradients must flow
 * through it: its own parameters train, or some upstream group's do (a
 * frozen backbone at the front runs without saving anything). Multiply by
 * the batch size and the element size (4 for f32, 2 for bf16). */
typedef struct {
    int64_t tokens[VLA_GROUP_COUNT];          /* tokens each group processes per sample */
    double floats_per_sample[VLA_GROUP_COUNT]; /* saved activations (0 when not needed) */
    double transient_per_sample[VLA_GROUP_COUNT]; /* largest single-layer working set, saved or not */
    double total_floats_per_sample;
} vla_activation_estimate;

/* Model FLOPs per sample, from shapes: 2·(weights applied)·tokens for every
 * matrix, plus 4·Nq·Nk·heads·head_dim per attention (causal LMs half of
 * that). Training multiplies a group's forward by 1 + (gradients must flow
 * through it) + (its weights train): backward costs about one forward per
 * kind of gradient. Sampling runs the prefix once and the action side
 * cfg.flow.steps times (KV cache). For MFU, count model FLOPs, not
 * recomputation. */
typedef struct {
    double forward[VLA_GROUP_COUNT];
    double train[VLA_GROUP_COUNT];
    double total_forward, total_train;
    double sample; /* one sample_actions call, per sample */
} vla_flops_estimate;

void vla_flops_estimate_compute(const vla_policy_config *cfg, const vla_param_list *list, vla_flops_estimate *out);

void vla_activation_estimate_compute(const vla_policy_config *cfg, const vla_param_list *list,
                                     vla_activation_estimate *out);

#endif
