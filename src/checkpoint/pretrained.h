/* pretrained.h — a policy as it leaves training: the pretrained_model/
 * directory of a checkpoint (LeRobot's layout) with config.json (the full
 * policy config, the normalisation statistics and the input/output
 * features, so evaluation rebuilds the policy with nothing else) and
 * model.safetensors (every parameter, f32, under its checkpoint name). */
#ifndef VLA_CHECKPOINT_PRETRAINED_H
#define VLA_CHECKPOINT_PRETRAINED_H

#include <jansson.h>
#include <stdint.h>

#include "base/status.h"
#include "policy/normalize.h"
#include "policy/policy.h"
#include "checkpoint/checkpoint.h"

typedef struct {
    int64_t state_width;   /* real state dims (all state features together) */
    char state_keys[512];  /* dataset features concatenated into the state, comma-separated
                              ("": an older checkpoint, observation.state alone) */
    int64_t action_width;  /* real action dims */
    int cameras;           /* images fed per sample */
    char image_keys[512];  /* the dataset's camera keys fed to the policy, in order, comma-separated ("": none, or an
                              older checkpoint: eval then feeds the env's cameras in its own order) */
    double fps;
    char task[512];        /* the dataset's first task (the prompt at eval) */
    char dataset[1024];    /* dataset root it was trained on */
    int n_obs_steps;       /* frames of state history K: the state is K frames of the state keys' vector,
                              oldest first (state_width = K × one frame; ≤ 1 or absent: one frame) */
    bool relative_actions; /* actions are predicted relative to observation.state at t (train/loader.h) */
    bool action_stats_per_step; /* the action normaliser holds one set of statistics per chunk step
                                   (horizon × action_width channels; train/loader.h) */
    int32_t embodiment;    /* the id its samples carried (GR00T's per-embodiment weights; 0 outside a mixture) */
    char embodiment_name[128]; /* the dataset's robot_type ("pusht"): eval matches it to the environment */
    int n_action_steps;    /* actions executed per predicted chunk, as training decided (config.json's top-level
                              "n_action_steps", LeRobot's name; 0: not stated, eval's default min(horizon, 8)).
                              Checkpoints written before it was recorded state the horizon there. */
} vla_pretrained_meta;

/* config.json as a JSON object. A policy trained on a mixture has one
 * entry per dataset under "embodiments" ({id, name, normalization,
 * features, task, dataset}); the top level repeats the first's, so a
 * single-dataset reader finds what it always found. */
json_t *vla_pretrained_config_json(const vla_policy *p, const vla_normalizer *ns, const vla_normalizer *na,
                                   const vla_pretrained_meta *meta);
json_t *vla_pretrained_config_json_mixture(const vla_policy *p, int n, const vla_normalizer *const *ns,
                                           const vla_normalizer *const *na, const vla_pretrained_meta *metas);
/* Write config.json + model.safetensors (weights = p->weights unless
 * `weights` is given, e.g. EMA) through a checkpoint writer under `prefix`
 * ("pretrained_model"), or into a plain directory (dir created). */
vla_status vla_pretrained_write_ckpt(vla_ckpt_writer *w, const char *prefix, const vla_policy *p, const float *weights,
                                     const json_t *config);
vla_status vla_pretrained_write_dir(const char *dir, const vla_policy *p, const float *weights, const json_t *config);
/* Load weights by name into an existing policy (shapes checked). */
vla_status vla_pretrained_load_weights(vla_policy *p, const char *safetensors_path);

/* Rebuild a policy from a pretrained_model directory (or a checkpoint step
 * directory, or an output dir: the newest valid checkpoint is used). A
 * damaged file is refused with a message naming it. */
typedef struct {
    vla_policy *policy;
    vla_normalizer state_norm, action_norm;
    vla_pretrained_meta meta;
    char dir[VLA_CKPT_PATH_MAX]; /* the pretrained_model directory used */
} vla_pretrained;

/* The policy is built for inference, as vla serve, vla eval and the robot library run it: every group
 * frozen (vla_pretrained_inference_config), so no gradient memory is allocated (π0.5: 12.5 GiB a server
 * held and never used). A caller that trains loads the weights into its own policy
 * (vla_pretrained_load_weights, vla_published_load_weights). */
vla_status vla_pretrained_load(const char *path, const vla_ops *ops, vla_pretrained *out);
/* cfg as an inference policy is built: every group frozen. */
void vla_pretrained_inference_config(vla_policy_config *cfg);
/* After vla_pretrained_load (which takes the first embodiment): use the
 * embodiment named `want` (its name or id; NULL: choose), replacing the
 * normalisers and meta. Without `want`, a mixture's checkpoint takes the one
 * whose name is env_name and fails listing them when none or several match;
 * a single-dataset checkpoint keeps its only one. */
vla_status vla_pretrained_select_embodiment(vla_pretrained *pm, const char *want, const char *env_name);
/* The same on a parsed config.json (`file` names it in messages; `current`:
 * the name of the embodiment already loaded): with *found, ns, na and m hold
 * the chosen entry's (the caller owns the normalisers); without, the
 * checkpoint has one embodiment and nothing changes. Fuzzed
 * (fuzz/fuzz_embodiments.c). */
vla_status vla_pretrained_choose_embodiment(const char *file, const json_t *root, const vla_policy_config *cfg,
                                            const char *current, const char *want, const char *env_name,
                                            vla_normalizer *ns, vla_normalizer *na, vla_pretrained_meta *m,
                                            bool *found);
/* Only the normalisers a pretrained_model directory's config.json stores. */
vla_status vla_pretrained_normalizers(const char *dir, vla_normalizer *state_norm, vla_normalizer *action_norm);
void vla_pretrained_free(vla_pretrained *pm);

#endif
