/* state_map.h — inside eval: how a checkpoint's state features map onto a
 * simulator's observation vectors (features.state_keys, n_obs_steps), shared
 * by the rollouts (eval.c) and the guess of which simulator a checkpoint is
 * for (infer_env.c). The public side is eval.h's vla_eval_policy_state and
 * vla_eval_history. */
#ifndef VLA_EVAL_STATE_MAP_H
#define VLA_EVAL_STATE_MAP_H

#include "base/status.h"
#include "checkpoint/pretrained.h"
#include "sim/env.h"

/* Which env vector feeds a state feature: observation.state is agent_pos when
 * widths agree (PushT, as LeRobot's pusht) else the full state vector (Reach);
 * observation.environment_state is env_state (PushT's block keypoints). */
enum { VLA_SRC_AGENT_POS, VLA_SRC_STATE, VLA_SRC_ENV_STATE };
#define VLA_STATE_MAX_KEYS 8

typedef struct {
    int n, src[VLA_STATE_MAX_KEYS], width[VLA_STATE_MAX_KEYS];
    int frame_w, K; /* one frame's width; frames of history (the state is K frames) */
} vla_state_map;

/* The env vector of one state feature `width` wide (agent_pos or state). */
vla_status vla_state_source(const vla_env_spec *spec, int64_t width, int *src);
/* The checkpoint's state keys (features.state_keys; none: observation.state
 * alone) → env vectors, checked against the state width it was trained on
 * (one frame's: state_width / n_obs_steps). */
vla_status vla_state_mapping(const vla_env_spec *spec, const vla_pretrained_meta *m, vla_state_map *map);
/* The policy's raw (unnormalised) state for an observation, as the loader
 * concatenates the dataset features. */
void vla_state_from_obs(const vla_state_map *map, const vla_env_obs *ob, float *out);

#endif
