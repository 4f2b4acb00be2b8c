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
 * after select_layer (deleted at construction in GR00T).
 *
 * WRITTEN ONCE. A family's inventory function (family.h) declares each
 * tensor once through a vla_param_builder — name, shape, init, and the
 * vla_wg of the family's weight struct it belongs to. Run in LIST mode it
 * appends the specs; run in BIND mode over the same list (the policy's
 * allocation) it points every vla_wg at its weights and gradient, checking
 * name and shape as it goes. So a name or shape is never written twice. */
#ifndef VLA_POLICY_PARAM_SPEC_H
#define VLA_POLICY_PARAM_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/status.h"
#include "nn/block.h"
#include "nn/weight.h"
#include "policy/config.h"

typedef enum {
    VLA_INIT_NORMAL,  /* N(0, scale²) */
    VLA_INIT_UNIFORM, /* U(−scale, scale) */
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
    float init_scale; /* NORMAL: the std; UNIFORM: the bound */
    vla_param_apply apply;
    int64_t n_emb;    /* > 1 for per-embodiment weights (first dim) */
} vla_param_spec;

typedef struct {
    vla_param_spec *items;
    int64_t n, cap;
} vla_param_list;

/* Fill `out` (initialise it zeroed; it grows with realloc) with the family's inventory. */
vla_status vla_param_specs(const vla_policy_config *cfg, vla_param_list *out);

/* ---- the builder the families' inventories call ---- */
/* Every transformer block of a policy, as the inventory declared them
 * (vla_pb_blocks): mixed precision (policy/precision.h) binds each block's
 * large linears through it, so no family names its blocks twice. */
#define VLA_BLOCK_SET_MAX 8
typedef struct {
    vla_block_weights *arr[VLA_BLOCK_SET_MAX];
    int64_t count[VLA_BLOCK_SET_MAX];
    int n;
    /* the family's block configs (vla_policy_block_config, policy/precision.h): whether they keep bf16
     * copies (nn/block.h, copies) follows the precision */
    vla_block_config *cfg[VLA_BLOCK_SET_MAX];
    int n_cfg;
    const vla_ops *kept; /* what they were last set to keep copies on (NULL: none) */
} vla_block_set;

typedef struct {
    vla_param_list *list;      /* LIST: appended to; BIND: walked in order */
    const vla_policy_config *cfg;
    vla_param_group group;     /* of the tensors added next */
    vla_param_apply apply;     /* FLOP role of the matrices added next */
    bool binding;
    bool torch_linear;         /* vla_pb_linear: PyTorch's nn.Linear default init, not HF's 0.02 normal */
    float *weights, *grads;    /* BIND: the policy's two allocations (spec order; grads of trainable ones) */
    int64_t next, w_off, g_off;
    vla_arena *arena;          /* per-layer weight arrays (vla_pb_array) */
    vla_block_set *blocks;     /* BIND: receives the arrays of vla_pb_blocks (NULL: not wanted) */
    vla_status st;             /* the first error; later calls do nothing */
} vla_param_builder;

/* Group and FLOP role of what follows. */
void vla_pb_group(vla_param_builder *b, vla_param_group g, vla_param_apply apply);
/* One tensor named by fmt; its vla_wg is bound in BIND mode (t may be NULL: a
 * tensor the policy keeps for the checkpoint but never reads). */
void vla_pb_tensor(vla_param_builder *b, vla_wg *t, vla_init_kind init, int ndim, const int64_t *shape,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Override the FLOP role of the tensor just added. */
void vla_pb_last_apply(vla_param_builder *b, vla_param_apply apply, int64_t n_emb);
/* PyTorch Linear "<prefix>.weight" [out, in] (+ "<prefix>.bias" [out] when bias != NULL).
 * Initialised as Hugging Face models initialise them (weight N(0, 0.02²),
 * bias 0), or, while the builder's torch_linear is set, as nn.Linear does
 * (weight and bias U(±1/√in): kaiming_uniform with a = √5), for modules a
 * reference builds from plain PyTorch/diffusers layers. */
void vla_pb_linear(vla_param_builder *b, vla_wg *w, vla_wg *bias, int64_t in, int64_t out, const char *prefix);
/* LayerNorm "<prefix>.weight" (ones) and "<prefix>.bias" (zeros). */
void vla_pb_layernorm(vla_param_builder *b, vla_wg *w, vla_wg *bias, int64_t dim, const char *prefix);
/* GR00T CategorySpecificLinear "<prefix>.W" [n_emb, in, out], "<prefix>.b" [n_emb, out]:
 * GR00T's 0.02·randn and zero bias, or nn.Linear's U(±1/√in) while torch_linear is set. */
void vla_pb_cat_linear(vla_param_builder *b, vla_wg *w, vla_wg *bias, int64_t n_emb, int64_t in, int64_t out,
                       const char *prefix);
/* A Hugging Face decoder layer's attention and gated MLP, no biases, in the
 * state_dict's order: self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj under
 * prefix (Gemma, Qwen3); q/k/v project width → Q, K, K, o Q → width. */
void vla_pb_decoder_attn_mlp(vla_param_builder *b, vla_wg *q, vla_wg *k, vla_wg *v, vla_wg *o, vla_wg *gate,
                             vla_wg *up, vla_wg *down, int64_t width, int64_t Q, int64_t K, int64_t mlp,
                             const char *prefix);
/* A zeroed array of count elements from the builder's arena (per-layer weight structs). */
void *vla_pb_array(vla_param_builder *b, int64_t count, size_t size);
/* The same for count transformer blocks, registered in the builder's block set. */
vla_block_weights *vla_pb_blocks(vla_param_builder *b, int64_t count);
/* Run cfg's family inventory in BIND mode over `list` (the policy's specs),
 * pointing `weights` (the family's weight struct) at the two allocations;
 * per-layer arrays come from `arena`; `blocks` (may be NULL) receives the
 * transformer blocks. */
vla_status vla_param_bind(const vla_policy_config *cfg, const vla_param_list *list, float *weights, float *grads,
                          vla_arena *arena, void *weight_struct, vla_block_set *blocks);
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
 * the batch size and 4 (bytes per float). */
typedef struct {
    /* what it estimates: false, f32 activations (fp32, FP8, or any precision on the cpu backend); true,
     * bf16 training on cuda, whose blocks keep their normed inputs and MLP hidden as bf16 copies alone
     * (nn/linear.h, kept copies) — the remaining activations stay f32 */
    bool bf16_copies;
    int64_t tokens[VLA_GROUP_COUNT];          /* tokens each group processes per sample */
    double floats_per_sample[VLA_GROUP_COUNT]; /* saved activations (0 when not needed) */
    double transient_per_sample[VLA_GROUP_COUNT]; /* largest single-layer working set, saved or not */
    double total_floats_per_sample;
    /* the same under activation checkpointing (vla_policy.recompute_layers):
     * a stack of L layers keeps L layer inputs and one layer's activations
     * instead of L layers' (vla_activation_remat) */
    double recompute_per_sample[VLA_GROUP_COUNT];
    double total_recompute_per_sample;
} vla_activation_estimate;

/* A stack's saved floats under activation checkpointing: `total` with its
 * `layers` · `per_layer` replaced by `layers` inputs of `input` floats and
 * one layer's activations. */
static inline double vla_activation_remat(double total, double layers, double per_layer, double input) {
    return layers > 0 ? total - layers * per_layer + layers * input + per_layer : total;
}

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

/* Floats one pre-norm transformer layer saves for its backward (for the
 * families' activation estimates): n query tokens of width d, n_kv key
 * tokens, an MLP of hidden width ff (gated: GeGLU/SwiGLU). bf16_copies:
 * as bf16 training on a backend that keeps copies (cuda) saves it — the
 * two normed inputs and the MLP's hidden as 2-byte copies alone
 * (nn/linear.h, kept copies), still counted in 4-byte floats. */
double vla_layer_act_floats(double n, double d, double heads, double kv_heads, double head_dim, double n_kv,
                            double ff, bool gated, bool bf16_copies);

void vla_activation_estimate_compute(const vla_policy_config *cfg, const vla_param_list *list, bool bf16_copies,
                                     vla_activation_estimate *out);

#endif
