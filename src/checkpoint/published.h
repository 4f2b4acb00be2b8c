/* published.h — start from a published checkpoint: lerobot/pi05_base (and
 * LeRobot π0.5 fine-tunes), openpi's PyTorch conversion of π0.5, and
 * nvidia/GR00T-N1.5-3B (and LeRobot GR00T fine-tunes), read in their own
 * files and names. docs/checkpoints.md is the user's guide; the rules:
 *
 * WEIGHTS. A path is a .safetensors file, a model.safetensors.index.json
 * (sharded: its weight_map names each tensor's shard), or a directory
 * holding either (the index wins). Every shard is memory-mapped, and each
 * tensor converts (F32, BF16 or F16) straight into the policy's f32
 * allocation, its pages dropped once read: a 14 GB file needs the model's
 * f32 size in RAM, not twice the file.
 *
 * NAMES. vla.c's parameter names are the published ones (param_spec.h), so
 * binding is by name after one prefix that the file decides: none (openpi,
 * Isaac-GR00T), "model." (LeRobot π0.5) or "_groot_model." (LeRobot GR00T).
 * A tensor stored once for two names is found through the file's
 * __metadata__ alias (safetensors keeps the alphabetically first name of a
 * tied pair and records the other as an alias) or, where a file has no
 * alias, through the known tie: Gemma's token embedding is stored as
 * paligemma.lm_head. Tensors in the file that the policy does not use must
 * be on the documented list (`vla_published_unused`); any other is refused,
 * naming it, as is a missing or mis-shaped tensor, a non-float dtype or a
 * non-finite value: a wrong checkpoint never loads half-way silently.
 *
 * CONFIG. The checkpoint's config.json picks the vla.c config: vla.c's own
 * (a pretrained_model/ directory: its "policy" object, as written), LeRobot's
 * ("type": "pi05" | "groot"), openpi's (Pi0Config fields: "action_horizon",
 * "paligemma_variant", …) or Isaac-GR00T's ("model_type": "gr00t_n1_5").
 * The family's full-size preset (pi05, groot-n1.5) is the base, or the
 * preset the user names; then what config.json states (chunk length,
 * padded state/action widths, tokenizer length, Euler steps, cameras,
 * GR00T's select_layer) overrides it. */
#ifndef VLA_CHECKPOINT_PUBLISHED_H
#define VLA_CHECKPOINT_PUBLISHED_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "policy/param_spec.h"
#include "policy/normalize.h"
#include "policy/policy.h"
#include "checkpoint/pretrained.h"

typedef enum {
    VLA_PUB_UNKNOWN,
    VLA_PUB_VLA,     /* vla.c's own pretrained_model/ (config.json with "policy") */
    VLA_PUB_LEROBOT, /* LeRobot PreTrainedPolicy config.json ("type") */
    VLA_PUB_OPENPI,  /* openpi Pi0Config (PyTorch conversion) */
    VLA_PUB_GROOT,   /* Isaac-GR00T ("model_type": "gr00t_n1_5") */
} vla_pub_format;

const char *vla_pub_format_name(vla_pub_format f);

/* The vla.c config a published checkpoint (directory or a file inside it)
 * describes. `base`: preset name or path to start from (NULL: the
 * family's full-size preset). */
vla_status vla_published_config(const char *path, const char *base, vla_policy_config *cfg, vla_pub_format *fmt);

/* True when `path` looks like a published checkpoint rather than a vla.c
 * pretrained_model/checkpoint/output directory. */
bool vla_published_detect(const char *path);
/* Is `path` something a checkpoint can be read from: a directory holding a
 * config.json, a checkpoint layout or weights, a .safetensors file (its
 * header checked), or a sharded checkpoint's .index.json? Otherwise an
 * error that says it is not a checkpoint and why. `flag` names the flag in
 * the message ("--policy.pretrained_path"). */
vla_status vla_published_check_path(const char *flag, const char *path);

/* What a binding found. */
typedef struct {
    char prefix[32];        /* "", "model." or "_groot_model." */
    int n_files;            /* shards opened */
    int64_t bound;          /* policy tensors found */
    int64_t converted;      /* of them stored as BF16/F16 */
    int64_t aliased;        /* found through an alias or the known tie */
    int64_t unused;         /* file tensors on the unused list */
    int64_t file_tensors;   /* tensors in all files */
    int64_t file_bytes;     /* their bytes */
} vla_published_report;

/* Check names, shapes and dtypes of every tensor in `specs` against the
 * checkpoint at `path` without reading any weight (policy info). */
vla_status vla_published_check(const char *path, const vla_param_list *specs, vla_published_report *rep);
/* Bind and convert into an existing policy (shapes, dtypes, finiteness checked). */
vla_status vla_published_load_weights(vla_policy *p, const char *path, vla_published_report *rep);

/* The tensors present in published files that no vla.c policy uses, each
 * with why: names, or prefixes ending in '.'. NULL-terminated pairs. */
extern const char *const vla_published_unused[][2];

/* STATISTICS. A published fine-tune stores the normalisation statistics it
 * was trained with beside its weights, in its publisher's files
 * (published_stats.c says which and how they are read); a base checkpoint
 * stores none. */
typedef enum {
    VLA_PUB_STATS_NONE,
    VLA_PUB_STATS_LEROBOT, /* policy_preprocessor.json's normalizer_processor + its safetensors */
    VLA_PUB_STATS_OPENPI,  /* assets/<asset_id>/norm_stats.json */
    VLA_PUB_STATS_GROOT,   /* experiment_cfg/metadata.json */
} vla_pub_stats_source;

const char *vla_pub_stats_source_name(vla_pub_stats_source s);

/* The statistics and input features of the checkpoint at `path` (directory
 * or a file in it) for the policy `cfg`: on *src != NONE, ns/na/m are set
 * (the caller frees the normalisers); NONE: the checkpoint has none. `want`
 * picks an openpi asset id or a GR00T embodiment tag where there are
 * several (NULL: the only one). Statistics wider than the policy are
 * refused. Fuzzed (fuzz/fuzz_published_stats.c). */
vla_status vla_published_stats(const char *path, const vla_policy_config *cfg, const char *want, vla_normalizer *ns,
                               vla_normalizer *na, vla_pretrained_meta *m, vla_pub_stats_source *src);

/* A published fine-tune opened for evaluation: config (from `base` as
 * vla_published_config), weights and its own statistics, as
 * vla_pretrained_load opens a vla.c checkpoint (for inference: every group
 * frozen, no gradient memory). A checkpoint with no statistics (a base) is
 * refused, saying to fine-tune it first. */
vla_status vla_published_open(const char *path, const char *base, const char *want, const vla_ops *ops,
                              vla_pretrained *out);

#endif
