/* cmd_dagger.c — `vla dagger`: DAgger (Ross et al. 2011) in a simulator with
 * a scripted expert. Each round rolls out the current policy, lets the
 * expert take over from the states it visited (sim/relabel.h), writes the
 * expert's episodes plus every correction so far as one LeRobot v3.0
 * dataset, fine-tunes from the current weights on it (a weights-only start,
 * `--policy.pretrained_path`), and evaluates closed loop. docs/train.md
 * ("DAgger") has the design and the measurements.
 *
 * Seeds are kept apart: the expert's episodes use --dagger.expert_seed
 * (default 0, as `make demo` records), round k's rollouts
 * --dagger.rollout_seed + (k−1)·rollouts (default 200000), evaluation
 * --seed (default 100000, as `vla eval`): no evaluation episode is ever a
 * training or correction episode. */
#include "cli/cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/run_dir.h"
#include "base/timer.h"
#include "eval/eval.h"
#include "sim/record.h"
#include "sim/relabel.h"
#include "tensor/backend.h"
#include "train/metrics.h"
#include "train/plot.h"
#include "checkpoint/pretrained.h"
#include "train/trainer.h"

typedef struct {
    const char *policy_path, *out, *env, *device;
    int64_t rounds, rollouts, every, per_rollout, expert_episodes, expert_seed, rollout_seed;
    int64_t steps, batch, eval_episodes, eval_seed, n_act, workers, n_videos;
    double lr, ema;
    bool keep_norm;
    int image_size;     /* the starting policy's image size: the datasets' videos are recorded at it */
    char cameras[512];  /* the cameras it was trained on (their dataset keys; "": the env's first) */
} dagger_opts;

typedef struct {
    int round, branches_total, rollout_fails;
    int64_t frames;
    double rollout_success, success, coverage, reward, train_s, record_s, eval_s;
} round_row;

/* Closed-loop success of `policy` on the evaluation seeds. */
static vla_status evaluate(const dagger_opts *d, const char *policy, const char *dir, round_row *row) {
    vla_eval_opts o;
    vla_eval_opts_default(&o);
    o.policy_path = policy, o.env = d->env, o.n_episodes = (int)d->eval_episodes, o.seed = (uint64_t)d->eval_seed;
    o.n_action_steps = (int)d->n_act, o.output_dir = dir, o.n_videos = (int)d->n_videos, o.quiet = true;
    o.device = d->device;
    vla_eval_result r;
    double t0 = vla_now_s();
    vla_status st = vla_eval_run(&o, &r);
    vla_eval_result_free(&r);
    row->eval_s = vla_now_s() - t0;
    row->success = r.policy.success_rate, row->coverage = r.policy.mean_max_coverage;
    row->reward = r.policy.mean_max_reward;
    return st;
}

/* Roll out `policy` on this round's seeds and add the expert's branches from its failed episodes. */
static vla_status collect(const dagger_opts *d, const char *policy, int round, vla_sim_branch **br, int *nb,
                          round_row *row) {
    vla_eval_opts o;
    vla_eval_opts_default(&o);
    o.policy_path = policy, o.env = d->env, o.n_episodes = (int)d->rollouts, o.n_action_steps = (int)d->n_act;
    o.seed = (uint64_t)(d->rollout_seed + (int64_t)(round - 1) * d->rollouts);
    o.keep_trajectories = (int)d->rollouts, o.n_videos = 0, o.quiet = true, o.device = d->device;
    vla_eval_result r;
    vla_status st = vla_eval_run(&o, &r);
    row->rollout_success = r.policy.success_rate;
    int before = *nb;
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < r.n_traj; i++) {
        if (r.traj[i].success) continue; /* nothing to correct */
        vla_sim_branch *mine = NULL;
        int n = 0;
        vla_status s = vla_sim_expert_branches(d->env, r.traj[i].seed, r.traj[i].actions, r.traj[i].steps,
                                               (int)d->every, (int)d->per_rollout, 0, round, &mine, &n);
#pragma omp critical
        {
            row->rollout_fails++;
            if (s != VLA_OK && st == VLA_OK) st = s;
            vla_sim_branch *g = n ? realloc(*br, (size_t)(*nb + n) * sizeof *g) : *br;
            if (g) {
                *br = g;
                memcpy(*br + *nb, mine, (size_t)n * sizeof *mine);
                *nb += n;
                free(mine);
            } else {
                vla_sim_branches_free(mine, n);
            }
        }
    }
    vla_eval_result_free(&r);
    row->branches_total = *nb;
    if (st == VLA_OK && *nb == before)
        fprintf(stderr, "dagger: round %d: no corrections (the policy succeeded on every rollout, or the expert could "
                "not recover from its states)\n", round);
    return st;
}

/* The expert's episodes + every branch so far as one dataset. */
static vla_status write_dataset(const dagger_opts *d, const char *root, const vla_sim_branch *br, int nb,
                                round_row *row) {
    VLA_TRY(vla_remove_tree(root)); /* a rerun rebuilds the round */
    vla_sim_record_opts o = {0};
    o.env = d->env, o.policy = "expert", o.out = root, o.episodes = (int)d->expert_episodes;
    o.seed = (uint64_t)d->expert_seed, o.branches = br, o.n_branches = nb;
    o.image_size = d->image_size, o.cameras = d->cameras[0] ? d->cameras : NULL;
    vla_sim_record_result r;
    double t0 = vla_now_s();
    vla_status st = vla_sim_record(&o, &r);
    row->record_s = vla_now_s() - t0;
    row->frames = r.frames;
    return st;
}

/* Fine-tune from `from` (a pretrained_model directory) on `data`, as the checkpoint was trained. */
static vla_status train_round(const dagger_opts *d, const char *from, const char *data, const char *out,
                              round_row *row) {
    const vla_ops *ops;
    VLA_TRY(vla_backend_get(d->device ? d->device : vla_backend_default_name(), &ops));
    vla_pretrained pm;
    VLA_TRY(vla_pretrained_load(from, ops, &pm));
    vla_train_opts o;
    vla_train_opts_default(&o);
    o.dataset_root = data, o.pretrained_path = pm.dir, o.output_dir = out;
    o.policy_type = vla_policy_config_family_name(&pm.policy->cfg);
    o.state_keys = pm.meta.state_keys[0] ? pm.meta.state_keys : NULL;
    o.image_keys = pm.meta.cameras == 0 ? "" : NULL;
    o.n_obs_steps = pm.meta.n_obs_steps, o.relative_actions = pm.meta.relative_actions;
    o.action_stats_per_step = pm.meta.action_stats_per_step;
    o.steps = d->steps, o.batch_size = d->batch, o.lr = d->lr, o.ema_decay = d->ema, o.num_workers = (int)d->workers;
    o.log_freq = 50, o.progress = true, o.seed = 1000 + (uint64_t)row->round;
    o.keep_normalization = d->keep_norm; /* the weights' own scaling, not the grown dataset's */
    o.device = d->device;
    vla_train_result r;
    double t0 = vla_now_s();
    vla_status st = vla_train(&o, &r);
    row->train_s = vla_now_s() - t0;
    vla_pretrained_free(&pm);
    return st;
}

static void append_metrics(const char *out, const round_row *r) {
    char path[4200], line[512];
    snprintf(path, sizeof path, "%s/dagger.jsonl", out);
    int n = snprintf(line, sizeof line,
                     "{\"round\":%d,\"rollout_success\":%.4f,\"failed_rollouts\":%d,\"corrections\":%d,\"frames\":%lld,"
                     "\"success\":%.4f,\"mean_max_coverage\":%.4f,\"avg_max_reward\":%.4f,\"record_s\":%.1f,"
                     "\"train_s\":%.1f,\"eval_s\":%.1f}\n",
                     r->round, r->rollout_success, r->rollout_fails, r->branches_total, (long long)r->frames,
                     r->success, r->coverage, r->reward, r->record_s, r->train_s, r->eval_s);
    FILE *f = fopen(path, r->round == 0 ? "w" : "a");
    if (f) {
        fwrite(line, 1, (size_t)n, f);
        fclose(f);
    }
}

static void plot_rounds(const char *out, const round_row *rows, int n) {
    double x[64], s[64], c[64];
    for (int i = 0; i < n && i < 64; i++) x[i] = rows[i].round, s[i] = rows[i].success, c[i] = rows[i].coverage;
    vla_plot_series ser[2] = {{"success", x, s, (size_t)n, 0}, {"mean max coverage", x, c, (size_t)n, 0}};
    vla_plot_opts po = {.title = "DAgger: closed-loop eval per round", .xlabel = "round", .ylabel = "rate",
                        .fixed_y = 1, .y_min = 0, .y_max = 1}; /* rates: the whole 0..1 */
    char path[4200];
    snprintf(path, sizeof path, "%s/dagger.png", out);
    if (vla_plot_png(path, &po, ser, 2) != VLA_OK) vla_error_clear();
}

static void print_table(const round_row *rows, int n, int eval_n) {
    printf("\nround  rollouts ok  corrections  dataset frames  train s  success (%d ep.)  coverage  avg_max_reward\n",
           eval_n);
    for (int i = 0; i < n; i++)
        printf("%5d  %11.2f  %11d  %14lld  %7.0f  %16.3f  %8.3f  %14.3f\n", rows[i].round, rows[i].rollout_success,
               rows[i].branches_total, (long long)rows[i].frames, rows[i].train_s, rows[i].success, rows[i].coverage,
               rows[i].reward);
}

int vla_cmd_dagger(int argc, char **argv) {
    bool overwrite = false;
    dagger_opts d = {NULL, NULL, NULL, NULL, 3, 50, 10, 4, 100, 0, 200000, 2000, 64, 100, 100000, 0, 1, 2,
                     -1, -1, true, 0, ""};
    const char *task = NULL, *model = NULL;
    const vla_flag flags[] = {
        {"policy.path", VLA_FLAG_STRING, &d.policy_path, "DIR", "the trained policy to start from (required)"},
        {"output_dir", VLA_FLAG_STRING, &d.out, "DIR",
         "round-K/{data,train,eval}, dagger.jsonl, dagger.png; must be empty (default: a new "
         "outputs/dagger/<date>/<time>_<env>)"},
        {"overwrite", VLA_FLAG_BOOL, &overwrite, NULL,
         "a non-empty --output_dir is moved aside to DIR.old-<date>_<time> (nothing deleted)"},
        {"device", VLA_FLAG_STRING, &d.device, "NAME", VLA_CLI_DEVICE_HELP},
        {"env.type", VLA_FLAG_STRING, &d.env, "NAME", "simulator with a scripted expert: pusht | reach | aloha (default: the one the checkpoint was trained for, "
         "as vla eval infers it; printed)"},
        {"env.task", VLA_FLAG_STRING, &task, "NAME", VLA_CLI_ENV_TASK_HELP},
        {"env.model", VLA_FLAG_STRING, &model, "FILE", VLA_CLI_ENV_MODEL_HELP},
        {"dagger.rounds", VLA_FLAG_INT, &d.rounds, "K", "rounds (default 3)"},
        {"dagger.rollouts", VLA_FLAG_INT, &d.rollouts, "N", "policy rollouts per round (default 50)"},
        {"dagger.every", VLA_FLAG_INT, &d.every, "M", "steps between the expert's take-over points (default 10)"},
        {"dagger.per_rollout", VLA_FLAG_INT, &d.per_rollout, "B", "take-overs per failed rollout, at most (default 4)"},
        {"dagger.expert_episodes", VLA_FLAG_INT, &d.expert_episodes, "E",
         "the expert's own episodes in every round's dataset (default 100, as make demo)"},
        {"dagger.expert_seed", VLA_FLAG_INT, &d.expert_seed, "S", "their first seed (default 0)"},
        {"dagger.rollout_seed", VLA_FLAG_INT, &d.rollout_seed, "S", "first rollout seed (default 200000)"},
        {"steps", VLA_FLAG_INT, &d.steps, "N", "training steps per round (default 2000)"},
        {"batch_size", VLA_FLAG_INT, &d.batch, "B", "batch size (default 64)"},
        {"optimizer.lr", VLA_FLAG_FLOAT, &d.lr, "LR", "learning rate (default: the policy's)"},
        {"ema_decay", VLA_FLAG_FLOAT, &d.ema, "D", "EMA of the weights (default: none)"},
        {"num_workers", VLA_FLAG_INT, &d.workers, "N", "loader threads (default 1)"},
        {"eval.n_episodes", VLA_FLAG_INT, &d.eval_episodes, "N", "evaluation episodes per round (default 100)"},
        {"seed", VLA_FLAG_INT, &d.eval_seed, "S", "first evaluation seed (default 100000)"},
        {"eval.n_videos", VLA_FLAG_INT, &d.n_videos, "N", "MP4s of the first N evaluation episodes per round (default 2)"},
        {"policy.n_action_steps", VLA_FLAG_INT, &d.n_act, "N", "actions executed per chunk (default: eval's)"},
        {"dagger.keep_normalization", VLA_FLAG_BOOL, &d.keep_norm, NULL,
         "normalise with the starting checkpoint's statistics in every round (default true; false: recompute "
         "them from each round's grown dataset)"},
    };
    const vla_command_spec spec = {
        "vla dagger", NULL, "DAgger with the simulator's scripted expert: correct the policy's own mistakes.",
        "Round k: roll out the policy (--dagger.rollouts, seeds --dagger.rollout_seed + (k-1)·N), let the expert take\n"
        "over every --dagger.every steps of each failed rollout, write the expert's episodes plus all corrections so\n"
        "far as OUT/round-k/data (LeRobot v3.0, frames marked dagger.round), fine-tune from the current weights\n"
        "(OUT/round-k/train) and evaluate (OUT/round-k/eval). Round 0 evaluates the starting policy. Metrics go to\n"
        "OUT/dagger.jsonl, the plot to OUT/dagger.png, the table to stdout. docs/train.md explains the design.",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (!d.policy_path) {
        fprintf(stderr, "vla: error: vla dagger: --policy.path=DIR is required (a checkpoint from vla train)\n");
        return 2;
    }
    const char *cmd = "vla dagger";
    if (!vla_cli_int_in(cmd, "dagger.rounds", d.rounds, 1, 60) || !vla_cli_int_in(cmd, "dagger.rollouts", d.rollouts, 1, 1 << 20) ||
        !vla_cli_int_in(cmd, "dagger.every", d.every, 1, 1 << 20) ||
        !vla_cli_int_in(cmd, "dagger.per_rollout", d.per_rollout, 1, 1 << 20) ||
        !vla_cli_int_in(cmd, "dagger.expert_episodes", d.expert_episodes, 1, 1 << 20) ||
        !vla_cli_int_in(cmd, "steps", d.steps, 1, INT64_MAX) || !vla_cli_int_in(cmd, "batch_size", d.batch, 1, INT64_MAX) ||
        !vla_cli_int_in(cmd, "eval.n_episodes", d.eval_episodes, 1, 1 << 20) ||
        !vla_cli_int_in(cmd, "num_workers", d.workers, 0, 256) ||
        (vla_flags_given(&spec, &res, "policy.n_action_steps") && !vla_cli_int_in(cmd, "policy.n_action_steps", d.n_act, 1, 4096)))
        return 2;
    if (!d.env) { /* the simulator the checkpoint was trained for (as vla eval), said aloud */
        char why[2048];
        vla_status ist = vla_eval_infer_env(d.policy_path, NULL, &d.env, why, sizeof why);
        if (ist != VLA_OK) return vla_cli_fail(ist);
        fprintf(stderr, "vla dagger: --env.type=%s, from %s\n", d.env, why);
    }
    if ((rc = vla_cli_env(&d.env, task, model)) >= 0) return rc;
    { /* what the datasets must hold for the policy: its cameras, at its image size */
        const vla_ops *ops;
        vla_pretrained pm;
        vla_status pst = vla_backend_get(d.device ? d.device : vla_backend_default_name(), &ops);
        if (pst == VLA_OK) pst = vla_pretrained_load(d.policy_path, ops, &pm);
        if (pst != VLA_OK) return vla_cli_fail(pst);
        d.image_size = (int)pm.policy->cfg.vision.image_size;
        d.image_size += d.image_size & 1;
        snprintf(d.cameras, sizeof d.cameras, "%s", pm.meta.image_keys);
        vla_pretrained_free(&pm);
    }
    if (overwrite && !d.out) return vla_cli_ignored(cmd, "overwrite", "the default output directory is always new");
    /* a directory of its own (base/run_dir.h): rounds of two runs never mix */
    char out[4096], moved[4200];
    vla_status st = d.out ? vla_run_dir_claim(d.out, overwrite, "", moved, sizeof moved)
                          : vla_run_dir_default("dagger", d.env, out, sizeof out);
    if (st != VLA_OK) return vla_cli_fail(st);
    if (d.out) snprintf(out, sizeof out, "%s", d.out);
    if (d.out && moved[0]) fprintf(stderr, "vla dagger: moved the previous %s aside to %s\n", d.out, moved);
    d.out = out;
    round_row rows[64] = {{0}};
    char dir[4200], data[4200], train[4200], cur[4200];
    snprintf(cur, sizeof cur, "%s", d.policy_path);
    snprintf(dir, sizeof dir, "%s/round-0/eval", d.out);
    if (st == VLA_OK) st = evaluate(&d, cur, dir, &rows[0]);
    if (st != VLA_OK) return vla_cli_fail(st);
    append_metrics(d.out, &rows[0]);
    fprintf(stderr, "dagger: round 0 (the starting policy): success %.3f, coverage %.3f\n", rows[0].success,
            rows[0].coverage);
    vla_sim_branch *br = NULL;
    int nb = 0;
    for (int k = 1; st == VLA_OK && k <= d.rounds; k++) {
        round_row *r = &rows[k];
        r->round = k;
        snprintf(data, sizeof data, "%s/round-%d/data", d.out, k);
        snprintf(train, sizeof train, "%s/round-%d/train", d.out, k);
        snprintf(dir, sizeof dir, "%s/round-%d/eval", d.out, k);
        st = collect(&d, cur, k, &br, &nb, r);
        if (st == VLA_OK) st = write_dataset(&d, data, br, nb, r);
        if (st == VLA_OK) st = train_round(&d, cur, data, train, r);
        if (st == VLA_OK) snprintf(cur, sizeof cur, "%s", train);
        if (st == VLA_OK) st = evaluate(&d, cur, dir, r);
        if (st != VLA_OK) break;
        append_metrics(d.out, r);
        plot_rounds(d.out, rows, k + 1);
        fprintf(stderr, "dagger: round %d: %d corrections from %d failed rollouts; success %.3f, coverage %.3f\n", k,
                nb, r->rollout_fails, r->success, r->coverage);
    }
    vla_sim_branches_free(br, nb);
    if (st != VLA_OK) return vla_cli_fail(st);
    print_table(rows, (int)d.rounds + 1, (int)d.eval_episodes);
    return 0;
}
