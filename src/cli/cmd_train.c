/* cmd_train.c — `vla train`: LeRobot-style flags → vla_train (train/trainer.h),
 * with closed-loop evaluation during training wired in from src/eval. */
#include "base/fault.h"
#include "cli/cli.h"
#include "data/shards.h"
#include "eval/eval.h"
#include "train/trainer.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const char *env, *output_dir;
    int n_episodes;
    uint64_t seed;
    int n_action_steps;
} eval_hook_ctx;

static vla_status eval_hook(void *user, const char *dir, int64_t step, double *success, double *coverage,
                            double *reward) {
    eval_hook_ctx *c = user;
    char out[4200];
    snprintf(out, sizeof out, "%s/eval/step_%06lld", c->output_dir, (long long)step);
    vla_eval_opts o;
    vla_eval_opts_default(&o);
    o.policy_path = dir;
    o.env = c->env;
    o.n_episodes = c->n_episodes;
    o.seed = c->seed;
    o.n_action_steps = c->n_action_steps;
    o.n_videos = 0;
    o.output_dir = out;
    o.quiet = true;
    vla_eval_result r;
    VLA_TRY(vla_eval_run(&o, &r));
    *success = r.policy.success_rate;
    *coverage = r.policy.mean_max_coverage;
    *reward = r.policy.mean_sum_reward;
    return VLA_OK;
}

/* Threads per process: the flag, else $OMP_NUM_THREADS (OpenMP reads it), else
 * the host's cores shared among the ranks mpirun placed on it, so N ranks on
 * one host do not each start one thread per core. */
static void set_threads(int64_t flag) {
    if (flag > 0) {
        omp_set_num_threads((int)flag);
        return;
    }
    if (getenv("OMP_NUM_THREADS")) return;
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (!local) local = getenv("MPI_LOCALNRANKS");
    long n = local ? strtol(local, NULL, 10) : 1, cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (n > 1 && cores > 0) omp_set_num_threads(cores / n > 0 ? (int)(cores / n) : 1);
}

/* The testing flags, as fault points of the training loop (base/fault.h):
 * --stop_after N ends the run after step N (or after the first step, when
 * resumed past N) with no final checkpoint; --nan_at_step N poisons step
 * N's gradients; --crash_at_step N SIGKILLs the process after step N — in a
 * run that did not resume, so that scripts/train_restarts.sh, which adds
 * --resume=true, finishes the job. */
static void arm_test_faults(int64_t stop_after, int64_t nan_at, int64_t crash_at, bool resume) {
    if (stop_after > 0) vla_fault_set(VLA_FAULT_TRAIN_STEP_END, VLA_FAULT_STOP, stop_after, VLA_FAULT_FOREVER);
    if (nan_at > 0) vla_fault_set(VLA_FAULT_TRAIN_GRADS, VLA_FAULT_POISON, nan_at, nan_at);
    if (crash_at > 0 && !resume) vla_fault_set(VLA_FAULT_TRAIN_STEP_END, VLA_FAULT_KILL, crash_at, crash_at);
}

int vla_cmd_train(int argc, char **argv) {
    vla_train_opts o;
    vla_train_opts_default(&o);
    const char *env = NULL, *shards = NULL, *env_task = NULL, *env_model = NULL;
    int64_t eval_n_act = 0;
    int64_t batch = o.batch_size, steps = o.steps, seed = (int64_t)o.seed, workers = o.num_workers, accum = 1;
    int64_t save_freq = -1, log_freq = o.log_freq, eval_freq = 0, eval_eps = 10, warmup = -1, stop_after = 0,
            nan_at = 0, eval_seed = 100000, threads = 0, crash_at = 0;
    int64_t n_obs = 1;
    bool resume = false, skip = false, augment = false, constant = false, quiet = false;
    const vla_flag flags[] = {
        {"dataset.root", VLA_FLAG_STRING, &o.dataset_root, "DIR[,DIR2…]",
         "LeRobot dataset (v2.1 or v3.0) to train on; several, comma-separated: a mixture, one embodiment each "
         "(stats stay per dataset; state/action padded to the widest; docs/dataset.md \"Mixtures\")"},
        {"dataset.shards", VLA_FLAG_STRING, &shards, "DIR[,DIR2…]",
         "train from shard sets written by `vla data prepare` (frames decoded once; samples equal the direct read)"},
        {"dataset.weights", VLA_FLAG_STRING, &o.weights, "W1,W2…",
         "a mixture's sampling weights, one per dataset, any scale (default: proportional to their frames); each "
         "epoch draws every dataset exactly its share"},
        {"dataset.episodes", VLA_FLAG_STRING, &o.episodes, "LIST",
         "train on these episodes only: 0,3,7 or 2-5 or [1, 2] (LeRobot's name; what a partial download needs)"},
        {"dataset.state_keys", VLA_FLAG_STRING, &o.state_keys, "K1,K2",
         "numeric features concatenated as the policy's state, each normalised with its own stats (default "
         "observation.state; PushT: observation.state,observation.environment_state adds the block keypoints)"},
        {"dataset.image_keys", VLA_FLAG_STRING, &o.image_keys, "K1,…",
         "cameras fed to the policy (default: the dataset's; empty: none, a state-only policy)"},
        {"dataset.n_obs_steps", VLA_FLAG_INT, &n_obs, "K",
         "frames of state history fed to the policy: the state keys at t-K+1..t, oldest first, clamped at the "
         "episode start; eval rebuilds it (default 1)"},
        {"dataset.relative_actions", VLA_FLAG_BOOL, &o.relative_actions, NULL,
         "predict each chunk relative to observation.state at t (action - state, normalised with the "
         "differences' own statistics); eval adds the current state back"},
        {"dataset.action_stats_per_step", VLA_FLAG_BOOL, &o.action_stats_per_step, NULL,
         "normalise each step of the action chunk with that step's own statistics (horizon x action dims, "
         "computed from the data) instead of statistics pooled over the chunk; recorded for eval"},
        {"policy.type", VLA_FLAG_STRING, &o.policy_type, "TYPE",
         "pi05 | groot (default: the family of --policy.pretrained_path or --policy.config, else pi05)"},
        {"policy.config", VLA_FLAG_STRING, &o.policy_config, "NAME|PATH",
         "preset (pi05-tiny, groot-tiny, pi05-nano, …) or JSON path (default: <type>-tiny; with "
         "--policy.pretrained_path, the base its config.json overrides, default the full-size pi05 / groot-n1.5)"},
        {"keep_normalization", VLA_FLAG_BOOL, &o.keep_normalization, NULL,
         "with --policy.pretrained_path of a vla.c checkpoint: normalise with its stored statistics instead of the "
         "dataset's (continuing on more data of the same task)"},
        {"policy.pretrained_path", VLA_FLAG_STRING, &o.pretrained_path, "DIR|FILE",
         "fine-tune from these weights: a published checkpoint (lerobot/pi05_base, openpi's PyTorch pi05, "
         "nvidia/GR00T-N1.5-3B, LeRobot fine-tunes; sharded or not, F32/BF16/F16) or a vla.c pretrained_model "
         "directory; its config.json picks the architecture (docs/checkpoints.md)"},
        {"batch_size", VLA_FLAG_INT, &batch, "N", "samples per micro-batch per rank (default 8)"},
        {"gradient_accumulation_steps", VLA_FLAG_INT, &accum, "K", "micro-batches per optimizer step (default 1)"},
        {"token_budget", VLA_FLAG_INT, &o.token_budget, "T",
         "pack each rank's batch_size x K samples of a step first-fit decreasing into micro-batches of at most T "
         "tokens (for mixtures of different lengths; 0: K micro-batches of batch_size)"},
        {"steps", VLA_FLAG_INT, &steps, "N", "optimizer steps (default 1000)"},
        {"output_dir", VLA_FLAG_STRING, &o.output_dir, "DIR", "checkpoints, metrics and plots (default outputs/train)"},
        {"seed", VLA_FLAG_INT, &seed, "S", "seed of weights, sampler, noise (default 1000)"},
        {"num_workers", VLA_FLAG_INT, &workers, "N", "background data threads (0: on the training thread; default 2)"},
        {"optimizer.lr", VLA_FLAG_FLOAT, &o.lr, "LR", "peak learning rate (default: the policy's, pi05 2.5e-5, groot 1e-4)"},
        {"optimizer.weight_decay", VLA_FLAG_FLOAT, &o.weight_decay, "WD", "AdamW weight decay (default: the policy's)"},
        {"optimizer.grad_clip_norm", VLA_FLAG_FLOAT, &o.clip_norm, "N", "clip the global gradient norm (default 1.0; 0 off)"},
        {"ema_decay", VLA_FLAG_FLOAT, &o.ema_decay, "D", "keep an EMA of the weights (e.g. 0.99) and export it (default off)"},
        {"scheduler.warmup_steps", VLA_FLAG_INT, &warmup, "N", "warmup steps (default: the policy's, 5% of short runs)"},
        {"scheduler.constant", VLA_FLAG_BOOL, &constant, NULL, "constant learning rate instead of warmup + cosine"},
        {"save_freq", VLA_FLAG_INT, &save_freq, "N", "checkpoint every N steps (default steps/5; a last one always)"},
        {"log_freq", VLA_FLAG_INT, &log_freq, "N", "progress line + metrics row every N steps (default 10)"},
        {"eval_freq", VLA_FLAG_INT, &eval_freq, "N", "closed-loop eval every N steps (needs --env.type; default off)"},
        {"env.type", VLA_FLAG_STRING, &env, "NAME", "simulator for --eval_freq: pusht | reach | aloha"},
        {"env.task", VLA_FLAG_STRING, &env_task, "NAME", VLA_CLI_ENV_TASK_HELP},
        {"env.model", VLA_FLAG_STRING, &env_model, "FILE", VLA_CLI_ENV_MODEL_HELP},
        {"eval.n_action_steps", VLA_FLAG_INT, &eval_n_act, "N",
         "actions executed per predicted chunk in those evals (default min(horizon, 8), as vla eval)"},
        {"eval.n_episodes", VLA_FLAG_INT, &eval_eps, "N", "episodes per eval during training (default 10)"},
        {"eval.seed", VLA_FLAG_INT, &eval_seed, "S", "first eval episode seed (default 100000)"},
        {"resume", VLA_FLAG_BOOL, &resume, NULL, "continue from the last complete checkpoint in --output_dir"},
        {"skip_nonfinite", VLA_FLAG_BOOL, &skip, NULL, "skip (and count) steps with NaN/Inf loss or gradients instead of stopping"},
        {"augment", VLA_FLAG_BOOL, &augment, NULL, "random brightness/contrast on images"},
        {"quiet", VLA_FLAG_BOOL, &quiet, NULL, "no progress lines"},
        {"max_time_s", VLA_FLAG_FLOAT, &o.max_time_s, "S", "time budget: checkpoint and stop after the step that passes S seconds"},
        {"stop_after", VLA_FLAG_INT, &stop_after, "N", "testing: stop after step N with no final checkpoint (as if killed)"},
        {"nan_at_step", VLA_FLAG_INT, &nan_at, "N", "testing: poison step N's gradient with NaN"},
        {"crash_at_step", VLA_FLAG_INT, &crash_at, "N",
         "testing: SIGKILL this process after step N of a run that did not resume (restart tests)"},
        {"dist.threads_per_rank", VLA_FLAG_INT, &threads, "N",
         "threads per process (default: $OMP_NUM_THREADS, else cores / ranks on this host)"},
        {"dist.bucket_mb", VLA_FLAG_FLOAT, &o.bucket_mb, "MB",
         "gradient all-reduce bucket size; buckets start during backward (default 25)"},
    };
    const vla_command_spec spec = {
        "vla train", NULL, "Train a pi05 or groot policy on a LeRobot dataset.",
        "Checkpoints go to OUTPUT/checkpoints/<step>/{pretrained_model,training_state} (LeRobot's layout),\n"
        "metrics to OUTPUT/metrics.{jsonl,csv}, plots to OUTPUT/{loss,lr,eval_success}.png. --resume=true\n"
        "continues from the last complete checkpoint and reproduces the uninterrupted run's losses bit for\n"
        "bit (CPU, same thread count). Under mpirun every rank takes the same flags; the global batch is\n"
        "batch_size x ranks x gradient_accumulation_steps, and the run resumes on any number of ranks with\n"
        "the same global batch. scripts/train_restarts.sh K -- CMD restarts a failed run from its last\n"
        "checkpoint up to K times (docs/distributed.md).",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (shards && o.dataset_root) {
        fprintf(stderr, "vla: error: vla train: give --dataset.root or --dataset.shards, not both\n");
        return 2;
    }
    static char sets[VLA_SHARDS_MIXTURE_MAX][VLA_ROOT_MAX];
    int n_sets = 0;
    if (shards && vla_dataset_roots(shards, false, sets, VLA_SHARDS_MIXTURE_MAX, &n_sets) != VLA_OK) {
        fprintf(stderr, "vla: error: vla train: --dataset.shards: %s\n", vla_error_message());
        return 2;
    }
    for (int i = 0; i < n_sets; i++) /* each shard set of the list must be complete */
        if (!vla_shards_is_set(sets[i]) && !vla_shards_is_mixture(sets[i])) {
            fprintf(stderr, "vla: error: vla train: --dataset.shards: no %s or %s in '%s' (run `vla data prepare "
                            "--out=%s`, or let an interrupted one finish)\n", VLA_SHARDS_MANIFEST, VLA_SHARDS_MIXTURE,
                    sets[i], sets[i]);
            return 1;
        }
    if (shards) o.dataset_root = shards;
    if (!o.dataset_root) {
        fprintf(stderr, "vla: error: vla train: --dataset.root=DIR (or --dataset.shards=DIR) is required\n");
        return 2;
    }
    if (eval_freq > 0 && !env) {
        fprintf(stderr, "vla: error: vla train: --eval_freq needs --env.type (pusht | reach | aloha)\n");
        return 2;
    }
    if (env && (rc = vla_cli_env(&env, env_task, env_model)) >= 0) return rc;
    o.batch_size = batch, o.steps = steps, o.seed = (uint64_t)seed, o.num_workers = (int)workers, o.accum = accum;
    o.save_freq = save_freq >= 0 ? save_freq : (steps >= 5 ? steps / 5 : 0);
    o.log_freq = log_freq, o.eval_freq = eval_freq, o.warmup_steps = warmup, o.constant_lr = constant;
    o.resume = resume, o.skip_nonfinite = skip, o.augment = augment, o.progress = !quiet;
    arm_test_faults(stop_after, nan_at, crash_at, resume);
    if (n_obs < 1 || n_obs > 64) {
        fprintf(stderr, "vla: error: vla train: --dataset.n_obs_steps must be in 1..64\n");
        return 2;
    }
    o.n_obs_steps = (int)n_obs;
    set_threads(threads);
    eval_hook_ctx ctx = {env, o.output_dir, (int)eval_eps, (uint64_t)eval_seed, (int)eval_n_act};
    if (eval_freq > 0) o.eval_fn = eval_hook, o.eval_user = &ctx;
    vla_train_result r;
    vla_status st = vla_train(&o, &r);
    if (st != VLA_OK) return vla_cli_fail(st);
    if (r.rank != 0) return 0;
    printf("{\"steps\":%lld,\"start_step\":%lld,\"skipped\":%lld,\"first_loss\":%.6g,\"last_loss\":%.6g,"
           "\"seconds\":%.2f,\"samples_per_s\":%.2f,\"data_wait_frac\":%.4f,\"params\":%lld,\"frames\":%lld,"
           "\"checkpoint\":\"%s\"",
           (long long)(r.start_step + r.steps_done), (long long)r.start_step, (long long)r.skipped, r.first_loss,
           r.last_loss, r.seconds, r.samples_per_s, r.data_wait_frac, (long long)r.n_params,
           (long long)r.n_samples, r.last_ckpt);
    printf(",\"micro_batches_per_step\":%.2f,\"tokens_per_micro_batch\":%.1f", r.micro_batches_per_step,
           r.tokens_per_micro_batch);
    if (r.time_budget_hit) printf(",\"time_budget_hit\":true");
    if (!isnan(r.last_eval_success)) printf(",\"eval_success\":%.4f", r.last_eval_success);
    printf(",\"world\":%d,\"threads_per_rank\":%d,\"buckets\":%d,\"comm_exposed_s\":%.4f,"
           "\"buckets_started_in_backward\":%d,\"comm_exposed_frac\":%.4f,\"optimizer_state_bytes_per_rank\":%zu",
           r.world, omp_get_max_threads(), r.n_buckets, r.comm_exposed_s, r.buckets_started_in_backward,
           r.seconds > 0 ? r.comm_exposed_s / r.seconds : 0.0, r.opt_state_bytes);
    printf("}\n");
    return 0;
}
