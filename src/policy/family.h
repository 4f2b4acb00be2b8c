/* family.h — a policy family: everything the rest of vla.c needs to know
 * about one architecture, in one table.
 *
 * Each family (pi05_family.c, groot_family.c) fills one vla_policy_family;
 * registry.c is the only file that names them. Configs, the parameter
 * inventory, FLOP/memory estimates, the token layout of a sample, prompt
 * tokenization, policy creation, the flow-matching convention and the
 * training defaults are all reached through the table, so no code outside a
 * family's own files branches on which family it is. Adding a family is one
 * table and one line in registry.c. */
#ifndef VLA_POLICY_FAMILY_H
#define VLA_POLICY_FAMILY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "policy/config.h"
#include "policy/flow.h"
#include "policy/param_spec.h"
#include "policy/tokenizer.h"
#include "tensor/ops.h"

typedef struct vla_policy vla_policy; /* policy.h */

/* The published training recipe of a family, as plain numbers (the train
 * layer turns them into its optimizer and schedule). */
typedef struct {
    /* AdamW */
    double lr, beta1, beta2, eps, weight_decay, clip_norm;
    bool decay_biases_and_norms; /* false: no weight decay on biases and 1-D norm weights (HF Trainer) */
    double ema_decay;            /* 0: no EMA */
    /* linear warmup then cosine decay to end_lr (train/schedule.h) */
    int64_t warmup_steps;        /* fixed warmup, clamped to the run … */
    double warmup_fraction;      /* … or, when > 0, ceil(fraction · run length) */
    int64_t default_run_steps;   /* decay length when the run length is unknown (0: it is required) */
    double end_lr;               /* floor at the default peak (scaled with the peak) */
    bool warmup_from_fraction_of_peak; /* first lr = peak/(W + 1) (optax) instead of 0 (HF) */
} vla_train_defaults;

typedef struct vla_policy_family {
    const char *name;    /* the config's "policy" and --policy.type: "pi05", "groot" */
    const char *summary; /* one line for help texts */

    /* Config: the family's own section (parsed and written with the same
     * field table, pointed at cfg), and its cross-field checks. */
    const char *section; /* "expert", "action_head" */
    int (*section_fields)(vla_policy_config *cfg, vla_config_field *out, int cap);
    vla_status (*validate)(const char *what, const vla_policy_config *cfg);

    /* Parameters: every tensor exactly once, in allocation order, named as in
     * the published checkpoints. The inventory both lists them (param_spec.h)
     * and binds the family's weight struct (weights_size bytes) to them. */
    size_t weights_size;
    void (*inventory)(vla_param_builder *b, const vla_policy_config *cfg, void *weights);

    /* Estimates: attention FLOPs of one forward per group (the matrices are
     * counted from the inventory), the tokens of the action side's sequence,
     * and saved activations per sample of the family's own groups. */
    void (*attention_flops)(const vla_policy_config *cfg, double per_group[VLA_GROUP_COUNT]);
    double (*head_tokens)(const vla_policy_config *cfg);
    void (*activations)(const vla_policy_config *cfg, vla_activation_estimate *est, double total[VLA_GROUP_COUNT],
                        double per_layer[VLA_GROUP_COUNT]);

    /* One sample on the token axis (policy.h: vla_policy_default_layout) and
     * its text tokens (vla_policy_default_tokenize). */
    int64_t (*layout)(const vla_policy_config *cfg, int32_t n_images, const int32_t *ids, int32_t n_text,
                      uint8_t *roles, int32_t *groups, int32_t *positions);
    vla_status (*tokenize)(const vla_policy_config *cfg, const vla_tokenizer *tok, const char *task,
                           const float *state, int64_t state_dim, int32_t n_images, int32_t *ids, int64_t cap,
                           int64_t *n, bool *truncated);
    /* Embodiment ids a batch may carry (0: the family has none). */
    int64_t (*embodiments)(const vla_policy_config *cfg);

    /* Flow matching: the time/interpolation convention and bucketing. */
    void (*flow)(const vla_policy_config *cfg, vla_flow *f);

    vla_status (*create)(const vla_policy_config *cfg, const vla_ops *ops, vla_policy **out);

    vla_train_defaults train;
} vla_policy_family;

/* The registered families, in a fixed order; NULL after the last. */
const vla_policy_family *vla_policy_family_at(int i);
/* By name; NULL if unknown. */
const vla_policy_family *vla_policy_family_find(const char *name);
/* "pi05, groot" — for error messages. */
const char *vla_policy_family_names(void);

#endif
