/* trainer.h — `vla train`: the training loop of docs/train.md over a LeRobot
 * dataset and a policy, data parallel from its first line (one rank = the
 * single backend of distributed/comm.h; under mpirun, N ranks with the same flags).
 *
 * Per step: the loader's micro-batches (background threads, packed), loss +
 * backward per micro-batch (gradients add up in the policy's flat buffer),
 * each bucket's all-reduce started by the policy's gradient-ready hook during
 * the last micro-batch's backward (distributed/grad_buckets.h), loss normalised by
 * the real action entries of the whole global batch, global-norm clipping
 * with the NaN/Inf guard, ZeRO-1 AdamW (moments and EMA sharded across
 * ranks, weights all-gathered: train/trainer_opt.h), schedule. Rank 0 writes metrics,
 * the progress line, checkpoints and plots; a checkpoint counts once every
 * rank agrees it was written (vla_comm_agree).
 *
 * Determinism: a step's batches depend only on (seed, step) (the sampler
 * and loader keys), the optimizer is thread-count invariant, and the state a
 * checkpoint holds (weights, moments, EMA, sampler position, skipped count)
 * is all the loop carries, so a resumed run prints the losses of an
 * uninterrupted one bit for bit on CPU with the same thread count.
 *
 * Mixed precision (docs/precision.md): with --precision=fp8 the step's FP8
 * amaxes are all-reduced (MAX) across ranks after backward and the scales
 * updated once per step (a skipped step's amaxes are dropped); checkpoints
 * keep the scaling state (training_state/fp8_scaling.safetensors) after
 * checking that every rank holds the same bytes.
 *
 * Tests break the loop through base/fault.h, not through options here:
 * VLA_FAULT_TRAIN_GRADS (POISON: a NaN into step n's gradients) and
 * VLA_FAULT_TRAIN_STEP_END (STOP: end after step n without a final
 * checkpoint, as if killed; KILL: SIGKILL after step n) and
 * VLA_FAULT_TRAIN_FP8_AMAX (POISON: the last rank's reduced amaxes of step n
 * altered, so its scales leave the others').
 *
 * Interruption (docs/train.md "Interrupting a run"): the caller's signal
 * handler sets *interrupt to the signal's number; the loop finishes the step
 * it is in, every rank agreeing on the step (the flag rides on the step's
 * loss all-reduce), writes a checkpoint through the regular path (so a resume
 * from it is bit-exact), and returns VLA_OK with res->interrupted set.
 *
 * A run directory keeps its flags from the start (OUTPUT/train_config.json),
 * so a run stopped before its first checkpoint resumes from step 0. */
#ifndef VLA_TRAIN_TRAINER_H
#define VLA_TRAIN_TRAINER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "base/status.h"
#include "policy/policy.h"
#include "policy/precision.h"

/* Closed-loop evaluation hook (the eval layer sits below train, so the CLI
 * passes it in): evaluate the pretrained_model directory at `dir`. */
typedef vla_status (*vla_train_eval_fn)(void *user, const char *pretrained_dir, int64_t step, double *success_rate,
                                        double *mean_max_coverage, double *mean_reward);

typedef struct {
    const char *dataset_root;   /* a LeRobot dataset or shard set; "A,B,…": a mixture (one embodiment each, in
                                   this order; train/loader.h, data/mixture.h) */
    const char *weights;        /* --dataset.weights "0.7,0.3" (NULL: proportional to the datasets' frames) */
    const char *episodes;       /* --dataset.episodes: "0,3,7", "2-5" (NULL: all; data/lerobot.h "PARTIAL DATASETS") */
    const char *policy_type;    /* "pi05" | "groot", checked against the config; NULL: the family of
                                   --policy.pretrained_path or --policy.config, else pi05 */
    const char *policy_config;  /* preset name or path (NULL: "<type>-tiny"; with pretrained_path: the
                                   base the checkpoint's config.json overrides, NULL: the family's full size) */
    bool keep_normalization;    /* with a vla.c pretrained_path: normalise with its stored statistics, not the
                                   dataset's (a warm start on grown data, as `vla dagger` does) */
    const char *pretrained_path;/* start from these weights (published or vla.c; checkpoint/published.h):
                                   a weights-only start, the optimizer and schedule begin afresh */
    const char *output_dir;     /* NULL: a fresh outputs/train/<date>/<time>_<job_name> (base/run_dir.h); a named
                                   one must be empty unless resuming or overwrite (moved aside) */
    const char *job_name;       /* the default directory's last part (NULL: "run") */
    bool overwrite;             /* a non-empty output_dir is renamed DIR.old-<date>_<time> and a new run starts */
    const char *state_keys;     /* dataset features concatenated as the state (NULL: observation.state) */
    const char *image_keys;     /* cameras fed to the policy (NULL: the dataset's; "": none, state only) */
    int64_t batch_size;         /* per rank, per micro-batch */
    int64_t accum;              /* gradient accumulation (micro-batches per step) */
    int64_t token_budget;       /* > 0: this rank's batch_size × accum samples of a step go into micro-batches of
                                   at most this many tokens, first-fit decreasing (data/token_budget.h) */
    int64_t steps;
    int64_t schedule_steps;     /* the run the lr schedule (and default warmup) is planned for (≤ 0: steps); a
                                   resumed run keeps its saved plan when --steps grows (docs/train.md) */
    uint64_t seed;
    int num_workers;
    double lr;                  /* ≤ 0: a default — resuming, the checkpoint's; with pretrained_path, the policy's
                                   fine-tuning lr; else the from-scratch lr for the model's size
                                   (vla_train_opt_scratch_lr) */
    double weight_decay;        /* < 0: default */
    double clip_norm;           /* < 0: default (1.0) */
    double ema_decay;           /* < 0: none (0); > 0: EMA, used for pretrained_model weights */
    int64_t warmup_steps;       /* < 0: the policy schedule's default */
    bool constant_lr;
    int64_t save_freq, log_freq, eval_freq; /* 0: off (a final checkpoint is always written) */
    bool resume;
    bool allow_changes;         /* resuming: accept another seed or global batch than the checkpoint's (the CLI's
                                   --resume.allow_changes; the changes are in resume_changes) */
    const json_t *run_flags;    /* the command's flags, kept as "flags" in train_config.json (a resume reads them) */
    const json_t *resume_changes; /* flags changed on resume: one metrics.jsonl line {"step", "resume_changes"} */
    int n_action_steps;         /* actions eval executes per chunk, recorded in config.json (≤ 0: min(horizon, 8)) */
    bool skip_nonfinite;        /* skip (and count) non-finite steps instead of stopping */
    bool augment;
    int augment_shift;          /* random shift of the camera frames by up to N pixels (loader.h; 0: off) */
    bool progress;              /* progress line on stderr */
    double max_time_s;          /* > 0: after the step that crosses this many seconds of training, write a
                                   checkpoint and stop (a time budget; the schedule is not shortened) */
    double bucket_mb;           /* gradient bucket size in MiB (≤ 0: 25) */
    vla_train_eval_fn eval_fn;
    void *eval_user;
    int n_obs_steps;            /* frames of state history fed to the policy (≤ 1: the current one; see
                                   train/loader.h); recorded in the checkpoint for eval */
    bool relative_actions;      /* predict actions relative to observation.state (train/loader.h) */
    bool action_stats_per_step; /* action statistics per chunk step (train/loader.h); recorded for eval */
    const char *device;         /* the backend that runs the model (tensor/backend.h; NULL or "cpu": the CPU) */
    vla_precision precision;    /* how the blocks' large linears run their GEMMs (policy/precision.h; default fp32) */
    bool gradient_checkpointing; /* recompute each layer's activations in backward (vla_policy.recompute_layers) */
    vla_fp8_recipe fp8;         /* FP8's delayed scaling (default: TransformerEngine's) */
    int64_t profile_steps;      /* > 0: time every op of this many steps from the third of this run (after the
                                   warm-up) through the profiling table (tensor/profile.h): OUTPUT/profile.json and
                                   a table on stderr (rank 0); the numbers are the same either way */
    const volatile sig_atomic_t *interrupt; /* non-zero (a signal number): checkpoint after this step and stop */
} vla_train_opts;

void vla_train_opts_default(vla_train_opts *o);

/* The run's flags and plan, in OUTPUT from the first step on (a checkpoint
 * keeps its own copy in pretrained_model/train_config.json). */
#define VLA_TRAIN_RUN_CONFIG "train_config.json"


typedef struct {
    int rank, world;               /* of this process (only rank 0 should print the summary) */
    int64_t start_step, steps_done, skipped;
    bool time_budget_hit;          /* stopped early by max_time_s */
    int interrupted;               /* the signal that stopped the run after a checkpoint (0: not interrupted) */
    bool restarted;                /* --resume found no checkpoint (stopped before its first): began at step 0 */
    int64_t steps_planned;         /* the run's --steps */
    double peak_lr;                /* the optimizer's peak learning rate */
    double first_loss, last_loss;  /* mean of the first / last min(10, n) step losses of this session */
    double seconds, samples_per_s, data_wait_frac;
    double micro_batches_per_step, tokens_per_micro_batch; /* on this rank (a token budget varies them) */
    double last_eval_success;      /* NaN when no eval ran */
    double comm_exposed_s;         /* time blocked waiting for gradient all-reduces (not hidden by backward) */
    int n_buckets, buckets_started_in_backward; /* (the latter: of the last step) */
    size_t opt_state_bytes;        /* optimizer state held by this rank (ZeRO-1: ÷ world) */
    int64_t n_params, n_trainable, n_samples;
    char last_ckpt[4096];
    char output_dir[4096];         /* where the run wrote (the default resolved) */
    char moved_aside[4096];        /* overwrite: where the old directory went ("" when nothing moved) */
} vla_train_result;

vla_status vla_train(const vla_train_opts *o, vla_train_result *res);

#endif
