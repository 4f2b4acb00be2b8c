/* eval.h — closed-loop evaluation of a trained policy in a simulator, as
 * LeRobot's `lerobot-eval`: N episodes (episode i resets with seed + i),
 * action chunking (execute n_action_steps of each predicted chunk, then
 * re-plan), success rate, mean max coverage, mean summed reward, per-episode
 * results in eval_info.json, MP4 videos of the first episodes, and the same
 * metrics for zero-action and random policies as baselines.
 *
 * Parallelism: the episodes run in lockstep; at every re-plan the running
 * episodes are ONE batched sample_actions call (the backend parallelises
 * inside its ops, as a GPU would; host threads never run model compute),
 * and environment steps and rendering run in parallel across episodes (one
 * env per episode; host work). Each episode's noise is keyed by (seed,
 * episode, re-plan), so the batch composition changes results only by
 * float rounding.
 *
 * Observation → policy input: the state is rebuilt in the order of the
 * checkpoint's state keys (features.state_keys, saved by `vla train
 * --dataset.state_keys`): observation.state is the env's agent_pos when the
 * widths agree (PushT, as LeRobot's pusht) else the env's full state vector
 * (Reach: agent and target); observation.environment_state is env_state
 * (PushT: the 16-D block keypoints); the vector is normalised with the
 * checkpoint's statistics (each feature's own, concatenated). A checkpoint
 * without state keys means observation.state alone. With n_obs_steps K > 1
 * (features.n_obs_steps, from `vla train --dataset.n_obs_steps=K`) the state
 * is that vector at the last K env steps, oldest first, the first frame
 * repeated until K were seen — the loader's rows t−K+1..t clamped to the
 * episode start (vla_eval_history). Images are rendered at
 * the policy's image size in the renderer's default (gym) style, as the
 * recorded datasets were. */
#ifndef VLA_EVAL_EVAL_H
#define VLA_EVAL_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/status.h"
#include "sim/env.h"
#include "train/pretrained.h"

typedef struct {
    const char *policy_path;  /* pretrained_model dir, checkpoint step dir or training output dir */
    const char *env;          /* "pusht", "reach" */
    const char *embodiment;   /* a mixture-trained checkpoint's embodiment, by name or id (NULL: the one named
                                 after env; train/pretrained.h vla_pretrained_select_embodiment); for a
                                 published fine-tune, its openpi asset id or GR00T embodiment tag */
    const char *policy_config; /* a published fine-tune's architecture preset (NULL: the family's full size;
                                 train/published.h vla_published_config) */
    int n_episodes;
    uint64_t seed;            /* episode i: seed + i; also the policy's noise seed */
    int n_action_steps;       /* ≤ 0: the checkpoint's (config.json "n_action_steps", what training decided),
                                 else min(horizon, 8) */
    int flow_steps;           /* Euler steps of flow sampling (≤ 0: the checkpoint's flow.steps) */
    int max_steps;            /* ≤ 0: the env's limit */
    int n_videos;             /* MP4 of the first N episodes */
    int video_size;           /* ≤ 0: 256 */
    const char *device;       /* the backend that runs the policy (tensor/backend.h; NULL: "cpu") */
    const char *output_dir;   /* eval_info.json and videos/ (NULL: nothing written) */
    int keep_trajectories;    /* return the executed actions of the first N episodes (vla_eval_result.traj; DAgger) */
    bool baselines;           /* also zero-action and random */
    bool published;           /* set by vla_eval_run: a published fine-tune (no robot name to check) */
    bool allow_mismatch;      /* run a checkpoint trained on another robot than the env (its state and action
                                 widths must still fit); otherwise refused, naming both */
    bool quiet;
} vla_eval_opts;

typedef struct {
    int episodes;
    double success_rate, mean_max_coverage, mean_sum_reward, mean_steps, seconds;
    /* LeRobot's avg_max_reward: the mean over episodes of the largest per-step
     * reward, which for PushT is clip(coverage / 0.95, 0, 1), not coverage */
    double mean_max_reward;
} vla_eval_summary;

/* One episode's trajectory: a pure function of (seed, actions) in the simulator. */
typedef struct {
    uint64_t seed;
    int steps;
    bool success;
    double *actions;          /* steps × action_dim (allocated for the step limit; malloc'd) */
} vla_eval_trajectory;

typedef struct {
    vla_eval_summary policy, zero, random;
    bool has_baselines;
    char eval_info[4096];     /* path written, or "" */
    int n_action_steps;       /* actions executed per chunk (the flag's, the checkpoint's or the default) */
    vla_eval_trajectory *traj; /* opts.keep_trajectories entries, or NULL; vla_eval_result_free */
    int n_traj;
} vla_eval_result;

void vla_eval_result_free(vla_eval_result *r);

void vla_eval_opts_default(vla_eval_opts *o);

/* The policy's state vector (raw, before normalisation) for an env
 * observation, in the order of the checkpoint's state keys: the vector the
 * loader built from the recorded dataset at the same env state
 * (observation.state ← agent_pos, observation.environment_state ← env_state). */
/* One frame of it; with n_obs_steps > 1, one frame of the history. */
vla_status vla_eval_policy_state(const char *env, const vla_pretrained_meta *meta, const vla_env_obs *ob, float *out);

/* The policy's state history in a closed loop: push the observation after
 * reset and after every env step; _state writes the raw (unnormalised)
 * [n_obs_steps × frame width] vector the policy is fed, oldest frame first,
 * frames before the first repeating it (what the loader builds at the same
 * step of a recorded episode). */
typedef struct vla_eval_history vla_eval_history;
vla_status vla_eval_history_create(const char *env, const vla_pretrained_meta *meta, vla_eval_history **out);
void vla_eval_history_free(vla_eval_history *h);
void vla_eval_history_reset(vla_eval_history *h);
void vla_eval_history_push(vla_eval_history *h, const vla_env_obs *ob);
int64_t vla_eval_history_width(const vla_eval_history *h);
void vla_eval_history_state(const vla_eval_history *h, float *out);
vla_status vla_eval_run(const vla_eval_opts *o, vla_eval_result *out);

#endif
