/* config.h — a policy's architecture and conventions, read from a JSON file
 * in configs/ (or any path), validated with errors that name the key.
 *
 * One struct describes every family. The sections every policy has (vision,
 * language, action, flow, normalization, frozen) are parsed here; the
 * "policy" key names the family (family.h: "pi05", "groot"), which parses
 * its own section ("expert", "action_head") with the same field tables and
 * checks its own invariants.
 *
 * File format: a JSON object with the sections below. Keys that start with
 * '_' are comments and ignored (JSON has none); any other unknown key is an
 * error, so a typo never silently falls back to a default. Defaults exist
 * only where noted in the field tables.
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

struct vla_policy_family; /* family.h */

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

/* π0.5 action expert (the "expert" section); heads, kv_heads and head_dim
 * are the LM's (openpi asserts they match) and depth must equal the LM's. */
typedef struct {
    int64_t width, depth, mlp;
} vla_expert_config;

/* GR00T N1.5 action head, the "action_head" section (flow_matching_action_head.py,
 * cross_attention_dit.py). */
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
    const struct vla_policy_family *family; /* from "policy": which architecture */
    vla_vit_config vision;
    vla_lm_config language;
    vla_expert_config expert;  /* π0.5's section */
    vla_groot_head_config head; /* GR00T's section */
    vla_action_config action;
    vla_flow_config flow;
    vla_norm_mode norm_state, norm_action;
    bool frozen[VLA_GROUP_COUNT]; /* default freezing of each group */
    /* The text tokenizer (key "tokenizer"): "" or "bytes" = byte-level (the
     * from-scratch presets), "paligemma" (π0.5's published vocabulary, needed
     * to start from its weights), or a tokenizer name/path policy/tokenizer.h
     * resolves; its vocabulary must fit language.vocab. */
    char tokenizer[256];
} vla_policy_config;

/* Parse and validate a config object; `what` names it in errors. */
vla_status vla_policy_config_from_json(const char *what, const json_t *root, vla_policy_config *out);
/* Parse a config from text (tests, fuzzing). */
vla_status vla_policy_config_parse(const char *what, const char *text, size_t len, vla_policy_config *out);
/* Load a preset name or path (see the search order at the top). */
vla_status vla_policy_config_load(const char *name_or_path, vla_policy_config *out);
/* Resolve a preset name or path to an existing file. */
/* The preset names (the *.json of the first config directory that has any,
 * searched as vla_policy_config_find does), ", "-separated, for messages. */
void vla_policy_config_presets(char *buf, size_t cap);
vla_status vla_policy_config_find(const char *name_or_path, char *path, size_t cap);
/* The config as a JSON object with every key written out (defaults
 * included), so a checkpoint can store exactly what it was trained with:
 * vla_policy_config_from_json(to_json(c)) gives c back (but `path`). */
vla_status vla_policy_config_to_json(const vla_policy_config *cfg, json_t **out);
/* Check cross-field invariants (called by the parsers; public for code that
 * edits a config in memory). */
vla_status vla_policy_config_validate(const char *what, const vla_policy_config *cfg);

/* The family's name ("pi05", "groot"). */
const char *vla_policy_config_family_name(const vla_policy_config *cfg);
const char *vla_param_group_name(vla_param_group g);
/* -1 for an unknown name. */
int vla_param_group_from_name(const char *name);
const char *vla_norm_mode_name(vla_norm_mode m);
/* "identity", "mean_std", "min_max", "quantiles" (case-insensitive); -1 if unknown. */
int vla_norm_mode_from_name(const char *name);

/* Derived sizes. */
int64_t vla_policy_image_tokens(const vla_policy_config *cfg);  /* per image */
int64_t vla_policy_prefix_tokens(const vla_policy_config *cfg); /* cameras·image tokens + max text tokens */

/* ---- field tables (for the families' own sections) ----
 * A section is a table of (key, destination, range, default); the same
 * table parses it (errors name "section.key"; unknown keys are refused with
 * the nearest known one) and writes it back. */
typedef enum { VLA_FIELD_INT, VLA_FIELD_NUM, VLA_FIELD_BOOL } vla_field_type;

typedef struct {
    const char *key;
    vla_field_type type;
    void *dst;       /* int64_t, double or bool */
    double lo, hi;   /* inclusive range */
    bool required;
    double def;      /* when not required */
} vla_config_field;

#define VLA_REQ_INT(k, d, lo, hi) {k, VLA_FIELD_INT, d, lo, hi, true, 0}
#define VLA_OPT_INT(k, d, lo, hi, def) {k, VLA_FIELD_INT, d, lo, hi, false, def}
#define VLA_REQ_NUM(k, d, lo, hi) {k, VLA_FIELD_NUM, d, lo, hi, true, 0}
#define VLA_OPT_NUM(k, d, lo, hi, def) {k, VLA_FIELD_NUM, d, lo, hi, false, def}
#define VLA_OPT_BOOL(k, d, def) {k, VLA_FIELD_BOOL, d, 0, 1, false, def}

/* Parse root[section] with the table; `what` names the file in errors. */
vla_status vla_config_parse_section(const char *what, const json_t *root, const char *section,
                                    const vla_config_field *f, int n);
/* root[section] = the table's values; nonzero when out of memory. */
int vla_config_put_section(json_t *root, const char *section, const vla_config_field *f, int n);

#endif
