/* config.h — a policy's architecture and conventions, read from a JSON file
 * in configs/ (or any path), validated with errors that name the key.
 *
 * One struct describes both families; `kind` says which sections matter:
 *   π0.5  (openpi pi0.py / pi0_pytorch.py): vision (SigLIP) → projector →
 *         Gemma LM (prefix) with a Gemma action expert sharing attention.
 *   GR00T (Isaac-GR00T N1.5): vision (SigLIP-2) → mlp1 → Qwen3 LM cut after
 *         `language.depth` layers → vlln + VL self-attention → DiT action head.
 *
 * File format: a JSON object with the sections below. Keys that start with
 * '_' are comments and ignored (JSON has none); any other unknown key is an
 * error, so a typo never silently falls back to a default. Defaults exist
 * only where noted in config.c's tables.
 *
 * Finding a config by preset name (vla_policy_config_find): a name with a
 * '/' or ending in ".json" is a path. Otherwise "<name>.json" is looked up,
 * first match wins, in
 *   1. $VLA_CONFIG_DIR
 *   2. ./configs                         (running from the source root)
 *   3. <dir of the executable>/configs, /../configs, /../../configs and
 *      /../share/vla/configs             (build dirs, build/tests, installs)
 * so `vla` in a build dir and the test binaries in its tests/ find the
 * source tree's configs/ without any setup. */
#ifndef VLA_POLICY_CONFIG_H
#define VLA_POLICY_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef enum { VLA_POLICY_PI05 = 1, VLA_POLICY_GROOT = 2 } vla_policy_kind;

/* Normalisation of state / action features (see normalize.h). */
typedef enum { VLA_NORM_IDENTITY, VLA_NORM_MEAN_STD, VLA_NORM_MIN_MAX, VLA_NORM_QUANTILES } vla_norm_mode;

/* Module groups of a policy: freezing, counting and memory are per group. */
typedef enum {
    VLA_GROUP_VISION,     /* ViT: patch/position embeddings, encoder, post-LN */
    VLA_GROUP_CONNECTOR,  /* vision → LM width projection (multi_modal_projector / mlp1) */
    VLA_GROUP_LANGUAGE,   /* LM: token embedding, decoder layers, final norm */
    VLA_GROUP_VL_ADAPTER, /* GR00T: vlln + vl_self_attention */
    VLA_GROUP_EXPERT,     /* π0.5: Gemma action expert; GR00T: the DiT */
    VLA_GROUP_ACTION_IO,  /* π0.5: action in/out, time MLP; GR00T: state/action encoders, decoder, embeddings */
    VLA_GROUP_COUNT
} vla_param_group;

typedef struct {
    int64_t image_size, patch, channels; /* square images, image_size % patch == 0 */
    int64_t width, depth, heads, mlp;
    int64_t cameras;                     /* images per sample */
    double norm_eps;                     /* LayerNorm eps */
} vla_vit_config;

typedef struct {
    int64_t width, depth, heads, kv_heads, head_dim, mlp, vocab;
    int64_t max_tokens;  /* text tokens per sample (π0.5: tokenizer_max_length 200) */
    double rope_theta, norm_eps;
    bool qk_norm;        /* Qwen3 per-head q_norm/k_norm */
} vla_lm_config;

/* π0.5 action expert; heads, kv_heads and head_dim are the LM's (openpi
 * asserts they match) and depth must equal the LM's. */
typedef struct {
    int64_t width, depth, mlp;
} vla_expert_config;

/* GR00T N1.5 action head (flow_matching_action_head.py, cross_attention_dit.py). */
typedef struct {
    int64_t vl_layers, vl_heads, vl_head_dim;    /* vl_heads·vl_head_dim == language.width */
    int64_t dit_layers, dit_heads, dit_head_dim; /* inner = input_embedding_dim */
    int64_t output_dim;                          /* DiT output = decoder hidden (hidden_size) */
    int64_t state_hidden;                        /* state encoder hidden */
    int64_t ff_mult;                             /* diffusers FeedForward inner = mult·dim */
    int64_t embodiments;                         /* max_num_embodiments */
    int64_t future_tokens;                       /* num_target_vision_tokens */
    int64_t max_seq_len;                         /* position embedding rows */
    int64_t timestep_channels;                   /* diffusers Timesteps num_channels */
    int64_t timestep_buckets;                    /* num_timestep_buckets */
} vla_groot_head_config;

typedef struct {
    int64_t action_dim; /* padded (max_action_dim) */
    int64_t horizon;    /* action chunk length */
    int64_t state_dim;  /* padded (max_state_dim) */
} vla_action_config;

typedef struct {
    int64_t steps;                           /* Euler steps at inference */
    double beta_alpha, beta_beta, time_scale; /* t ~ Beta(α, β); scale 0.999 (both families) */
    double time_min_period, time_max_period; /* π0.5 posemb_sincos (4e-3, 4.0) */
} vla_flow_config;

typedef struct {
    char name[64];             /* "pi05-tiny"; from "name" or the file name */
    char path[1024];           /* file it came from ("" when parsed from memory) */
    vla_policy_kind kind;
    vla_vit_config vision;
    vla_lm_config language;
    vla_expert_config expert;  /* π0.5 only */
    vla_groot_head_config head; /* GR00T only */
    vla_action_config action;
    vla_flow_config flow;
    vla_norm_mode norm_state, norm_action;
    bool frozen[VLA_GROUP_COUNT]; /* default freezing of each group */
} vla_policy_config;

/* Parse and validate a config object; `what` names it in errors. */
vla_status vla_policy_config_from_json(const char *what, const json_t *root, vla_policy_config *out);
/* Parse a config from text (tests, fuzzing). */
vla_status vla_policy_config_parse(const char *what, const char *text, size_t len, vla_policy_config *out);
/* Load a preset name or path (see the search order at the top). */
vla_status vla_policy_config_load(const char *name_or_path, vla_policy_config *out);
/* Resolve a preset name or path to an existing file. */
vla_status vla_policy_config_find(const char *name_or_path, char *path, size_t cap);
/* The config as a JSON object with every key written out (defaults
 * included), so a checkpoint can store exactly what it was trained with:
 * vla_policy_config_from_json(to_json(c)) gives c back (but `path`). */
vla_status vla_policy_config_to_json(const vla_policy_config *cfg, json_t **out);
/* Check cross-field invariants (called by the parsers; public for code that
 * edits a config in memory). */
vla_status vla_policy_config_validate(const char *what, const vla_policy_config *cfg);

const char *vla_policy_kind_name(vla_policy_kind k);
const char *vla_param_group_name(vla_param_group g);
/* -1 for an unknown name. */
int vla_param_group_from_name(const char *name);
const char *vla_norm_mode_name(vla_norm_mode m);
/* "identity", "mean_std", "min_max", "quantiles" (case-insensitive); -1 if unknown. */
int vla_norm_mode_from_name(const char *name);

/* Derived sizes. */
int64_t vla_policy_image_tokens(const vla_policy_config *cfg);  /* per image */
int64_t vla_policy_prefix_tokens(const vla_policy_config *cfg); /* cameras·image tokens + max text tokens */

#endif
