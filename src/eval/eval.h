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
#include "policy/rtc.h"
#include "sim/env.h"
#include "checkpoint/pretrained.h"

/* How chunks meet when the policy answers late (inference_delay d > 0
 * control steps; s = n_action_steps actions executed per chunk, H the
 * chunk length; docs/serve.md, "Real-time chunking"):
 *   SYNC   the robot waits: it holds its last action for d steps while the
 *          chunk is computed, then runs the chunk's first s actions; the
 *          observation is d steps old when they start;
 *   NAIVE  asynchronous: the next chunk is asked for d steps before the
 *          current one's s actions run out, from the observation of that
 *          moment; the robot keeps executing the current chunk meanwhile,
 *          then switches to the new one at its step d (the first d are in
 *          the past) — the new chunk ignores what was being executed;
 *   RTC    as NAIVE, but the new chunk is sampled by guided inpainting
 *          (policy/rtc.h) to hold to the d actions executed during the
 *          delay and to blend with the rest of the current chunk.
 * With d = 0 SYNC is the plain chunked loop; the asynchronous modes need
 * d ≤ s and s + d ≤ H. The first chunk is always waited for. */
typedef enum { VLA_EVAL_SYNC, VLA_EVAL_NAIVE, VLA_EVAL_RTC } vla_eval_chunking;

/* "sync", "naive", "rtc". */
vla_status vla_eval_chunking_parse(const char *s, vla_eval_chunking *out);
const char *vla_eval_chunking_name(vla_eval_chunking c);

typedef struct {
    const char *policy_path;  /* pretrained_model dir, checkpoint step dir or training output dir */
    const char *env;          /* "pusht", "reach" */
    const char *embodiment;   /* a mixture-trained checkpoint's embodiment, by name or id (NULL: the one named
                                 after env; checkpoint/pretrained.h vla_pretrained_select_embodiment); for a
                                 published fine-tune, its openpi asset id or GR00T embodiment tag */
    const char *policy_config; /* a published fine-tune's architecture preset (NULL: the family's full size;
                                 checkpoint/published.h vla_published_config) */
    int n_episodes;
    uint64_t seed;            /* episode i: seed + i; also the policy's noise seed */
    int n_action_steps;       /* ≤ 0: the checkpoint's (config.json "n_action_steps", what training decided),
                                 else min(horizon, 8) */
    int flow_steps;           /* Euler steps of flow sampling (≤ 0: the checkpoint's flow.steps) */
    int max_steps;            /* ≤ 0: the env's limit */
    int n_videos;             /* MP4 of the first N episodes */
    int video_size;           /* ≤ 0: 256 */
    const char *device;       /* the backend that runs the policy (tensor/backend.h; NULL: "cpu") */
    const char *precision;    /* fp32 | bf16 | NULL/auto (vla_inference_precision, policy/precision.h) */
    const char *output_dir;   /* eval_info.json and videos/ (NULL: nothing written) */
    int keep_trajectories;    /* return the executed actions of the first N episodes (vla_eval_result.traj; DAgger) */
    bool baselines;           /* also zero-action and random */
    bool published;           /* set by vla_eval_run: a published fine-tune (no robot name to check) */
    bool allow_mismatch;      /* run a checkpoint trained on another robot than the env (its state and action
                                 widths must still fit); otherwise refused, naming both */
    bool quiet;
    bool progress;            /* report progress on stderr while the policy's episodes run (base/progress.h) */
    int inference_delay;      /* control steps a chunk takes to arrive (0: at once) */
    vla_eval_chunking chunking; /* how late chunks are used (see above; default SYNC) */
    vla_rtc_schedule rtc_schedule; /* RTC's prefix weights (default exp) */
    double rtc_beta;          /* RTC's guidance cap β (≤ 0: 5) */
    bool rtc_no_jacobian;     /* RTC's guidance without the VJP (an ablation) */
} vla_eval_opts;

typedef struct {
    int episodes;
    double success_rate, mean_max_coverage, mean_sum_reward, mean_steps, seconds;
    /* LeRobot's avg_max_reward: the mean over episodes of the largest per-step
     * reward, which for PushT is clip(coverage / 0.95, 0, 1), not coverage */
    double mean_max_reward;
    /* smoothness of the executed actions: the third difference
     * ‖a_t − 3a_{t−1} + 3a_{t−2} − a_{t−3}‖ (env units per step³), averaged
     * over every step that has three before it (mean_jerk) and over the
     * steps that start a new chunk (boundary_jerk); chunks: policy calls per
     * episode */
    double mean_jerk, boundary_jerk, chunks;
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
    int n_obs_steps, flow_steps; /* what ran: frames of state history, Euler steps */
    char video_success[4200], video_failure[4200]; /* a written video of a successful / failed episode, or "" */
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

/* The simulator a vla.c checkpoint was trained for, when the user names
 * none: from what the checkpoint records, in this order — train_config.json's
 * --env.type when training evaluated in it (eval_freq > 0), the dataset's
 * robot_type (config.json "name": `vla sim record` writes the env's), a
 * camera key only one env has (observation.images.top: aloha), else the
 * state and action widths when exactly one env fits them. `embodiment`
 * picks a mixture's entry (NULL: the entries must agree). *env gets the
 * env's name (static storage), `why` says from what. A published
 * checkpoint, or one no rule decides, is an error that names the
 * --env.type values. */
vla_status vla_eval_infer_env(const char *policy_path, const char *embodiment, const char **env, char *why,
                              size_t why_cap);

#endif
