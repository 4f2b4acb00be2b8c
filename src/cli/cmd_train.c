/* cmd_train.c — `vla train`: LeRobot-style flags → vla_train (train/trainer.h),
 * with closed-loop evaluation during training wired in from src/eval.
 *
 * Resuming (docs/train.md, "Resuming"): every checkpoint keeps the command's
 * flags ("flags" in pretrained_model/train_config.json), so `vla train
 * --output_dir=DIR --resume=true` alone goes on with them. A flag given
 * again with another value is judged by what it changes (kind_of below):
 * session flags (where output goes, threads, time budget) and bookkeeping
 * (logging, eval, workers) may change freely; what the resumed run must
 * reproduce (dataset, batch, seed, optimizer, schedule) is refused unless
 * --resume.allow_changes=true, which records each change in metrics.jsonl;
 * what the weights are (policy, inputs, normalisation) never changes on a
 * resume — a new run from the checkpoint does that. --steps may grow: the
 * learning-rate schedule is planned anew over them (train/schedule.c).
 * A run dir whose run stopped before its first checkpoint resumes from step
 * 0 with the flags kept in OUTPUT/train_config.json.
 *
 * Ctrl-C / SIGTERM (docs/train.md "Interrupting a run"): the first one asks
 * the trainer to finish its step and write a checkpoint, then the command
 * says where it is and how to resume, exiting 130 / 143 as shells expect; a
 * second one exits at once without saving (the writes are atomic: the last
 * complete checkpoint stays intact, a half-written one is removed by the
 * resume). */
#include "base/fault.h"
#include "base/json.h"
#include "cli/cli.h"
#include "data/lerobot.h"
#include "data/shards.h"
#include "eval/eval.h"
#include "policy/family.h"
#include "checkpoint/checkpoint.h"
#include "train/trainer.h"
#include "base/signals.h"

#include <limits.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- interruption ------------------------------------------------------------------ *
 * SIGINT/SIGTERM arrive on a thread of their own (base/signals.h says why).
 * Until training starts a signal exits at once, as the default action would;
 * then the first one finishes the step and saves, the second exits at once. */

static volatile sig_atomic_t interrupted; /* the first SIGINT/SIGTERM's number, once training runs */
static volatile sig_atomic_t graceful;    /* training runs: the first signal saves */

static void say(const char *m) {
    ssize_t w = write(STDERR_FILENO, m, strlen(m));
    (void)w;
}

static void on_interrupt(int sig) {
    if (!graceful) _exit(128 + sig); /* before training: what the default action does */
    if (interrupted) {
        say("\nvla train: interrupted again: exiting without saving (the last complete checkpoint is intact; "
            "an unfinished one is removed when the run resumes)\n");
        _exit(128 + sig);
    }
    interrupted = sig;
    say(sig == SIGINT ? "\nvla train: Ctrl-C: finishing this step, then saving a checkpoint (press Ctrl-C again to "
                        "exit at once without saving)\n"
                      : "\nvla train: SIGTERM: finishing this step, then saving a checkpoint (a second signal exits "
                        "at once without saving)\n");
}

/* Training starts: the first signal finishes the step and saves. */
static void catch_interrupts(void) { graceful = 1; }

typedef struct {
    const char *env, *device;
    int n_episodes;
    uint64_t seed;
    int n_action_steps;
} eval_hook_ctx;

/* `dir` is OUTPUT/eval_model (the trainer writes the weights to evaluate
 * there); the results go to OUTPUT/eval/step_<N>. */
static vla_status eval_hook(void *user, const char *dir, int64_t step, double *success, double *coverage,
                            double *reward) {
    eval_hook_ctx *c = user;
    char out[4200], run[4096];
    snprintf(run, sizeof run, "%s", dir);
    char *slash = strrchr(run, '/');
    if (slash) *slash = 0;
    else snprintf(run, sizeof run, ".");
    snprintf(out, sizeof out, "%s/eval/step_%06lld", run, (long long)step);
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
    o.device = c->device;
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

/* ---- resume from the saved flags -------------------------------------------- */

typedef enum {
    K_SESSION,   /* this invocation only (where output goes, threads, budgets, testing): not saved */
    K_FREE,      /* saved and taken back, but free to change: logging, eval, workers, job name */
    K_REPRODUCE, /* what a resume must reproduce: changed only with --resume.allow_changes=true */
    K_FIXED,     /* what the weights are: the policy, its inputs and normalisation; never on a resume */
} flag_kind;

static flag_kind kind_of(const char *name) {
    static const char *const session[] = {"output_dir", "resume", "resume.allow_changes", "overwrite", "quiet", "json",
                                          "max_time_s", "stop_after", "nan_at_step", "crash_at_step",
                                          "poison_fp8_amax_at_step", "profile",
                                          "dist.threads_per_rank", "dist.bucket_mb"};
    /* batch_size and accumulation split the global batch over ranks: they may change with the rank count,
     * and the trainer holds the global batch itself to the checkpoint's (allow_changes lets it differ) */
    static const char *const free_[] = {"steps", "num_workers", "save_freq", "log_freq", "eval_freq", "env.type",
                                        "env.task", "env.model", "eval.n_action_steps",
                                        "eval.n_episodes", "eval.seed", "job_name", "policy.n_action_steps",
                                        "batch_size", "gradient_accumulation_steps",
                                        "device" /* the same numbers on cpu and checked; another backend
                                                    declares its tolerance (docs/design.md) */};
    static const char *const fixed[] = {"policy.type", "policy.config", "policy.pretrained_path", "keep_normalization",
                                        "dataset.state_keys", "dataset.image_keys", "dataset.n_obs_steps",
                                        "dataset.relative_actions", "dataset.action_stats_per_step"};
    for (size_t i = 0; i < sizeof session / sizeof *session; i++)
        if (!strcmp(name, session[i])) return K_SESSION;
    for (size_t i = 0; i < sizeof free_ / sizeof *free_; i++)
        if (!strcmp(name, free_[i])) return K_FREE;
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (!strcmp(name, fixed[i])) return K_FIXED;
    return K_REPRODUCE; /* a new flag is protected until someone decides otherwise */
}

/* The three ways to name the training data: giving one on resume replaces the saved one(s). */
static bool is_data_source(const char *name) {
    return !strcmp(name, "dataset.root") || !strcmp(name, "dataset.shards") || !strcmp(name, "dataset.repo_id");
}

/* Flags whose value is a path (or a comma-separated list of them): saved absolute, so a resume
 * from another working directory finds the same files. */
static bool is_path_flag(const char *name) {
    return !strcmp(name, "dataset.root") || !strcmp(name, "dataset.shards") ||
           !strcmp(name, "policy.pretrained_path") || !strcmp(name, "policy.config");
}

/* Each comma-separated element made absolute where it exists (a preset name stays a name). */
static json_t *absolute_paths(const char *v) {
    char buf[8192] = "";
    for (const char *q = v; *q;) {
        size_t n = strcspn(q, ",");
        char one[PATH_MAX], real[PATH_MAX];
        snprintf(one, sizeof one, "%.*s", (int)n, q);
        bool is_path = strchr(one, '/') || access(one, F_OK) == 0;
        const char *use = is_path && realpath(one, real) ? real : one;
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", buf[0] ? "," : "", use);
        q += n + (q[n] == ',');
    }
    return json_string(buf);
}

static json_t *flag_json(const vla_flag *f) {
    switch (f->type) {
    case VLA_FLAG_STRING: {
        const char *v = *(const char **)f->dest;
        if (v && is_path_flag(f->name)) return absolute_paths(v);
        return v ? json_string(v) : json_null();
    }
    case VLA_FLAG_INT: return json_integer((json_int_t) * (int64_t *)f->dest);
    case VLA_FLAG_FLOAT: return json_real(*(double *)f->dest);
    case VLA_FLAG_BOOL: return json_boolean(*(bool *)f->dest);
    }
    return json_null();
}

/* The flags that define the run (all but session ones), as train_config.json keeps them. */
static json_t *run_flags_json(const vla_command_spec *spec) {
    json_t *o = json_object();
    for (int i = 0; o && i < spec->n_flags; i++)
        if (kind_of(spec->flags[i].name) != K_SESSION)
            json_object_set_new(o, spec->flags[i].name, flag_json(&spec->flags[i]));
    return o;
}

/* Set a flag from its saved value (strings point into the saved JSON, kept alive by the caller). */
static void flag_set(const vla_flag *f, json_t *v) {
    switch (f->type) {
    case VLA_FLAG_STRING: *(const char **)f->dest = json_string_value(v); break;
    case VLA_FLAG_INT: *(int64_t *)f->dest = (int64_t)json_integer_value(v); break;
    case VLA_FLAG_FLOAT: *(double *)f->dest = json_number_value(v); break;
    case VLA_FLAG_BOOL: *(bool *)f->dest = json_is_true(v); break;
    }
}

/* The same files: element by element of comma-separated lists, each resolved. */
static bool same_path(const char *a, const char *b) {
    if (!strcmp(a, b)) return true;
    while (*a && *b) {
        size_t na = strcspn(a, ","), nb = strcspn(b, ",");
        char pa[PATH_MAX], pb[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];
        snprintf(pa, sizeof pa, "%.*s", (int)na, a);
        snprintf(pb, sizeof pb, "%.*s", (int)nb, b);
        if (strcmp(pa, pb) && !(realpath(pa, ra) && realpath(pb, rb) && !strcmp(ra, rb))) return false;
        a += na + (a[na] == ','), b += nb + (b[nb] == ',');
    }
    return !*a && !*b;
}

/* Does the current value equal the saved one? */
static bool flag_same(const vla_flag *f, json_t *v) {
    switch (f->type) {
    case VLA_FLAG_STRING: {
        const char *cur = *(const char **)f->dest, *old = json_string_value(v);
        if (!cur || !old) return !cur && !old;
        return is_path_flag(f->name) ? same_path(cur, old) : !strcmp(cur, old);
    }
    case VLA_FLAG_INT: return json_is_integer(v) && json_integer_value(v) == (json_int_t) * (int64_t *)f->dest;
    case VLA_FLAG_FLOAT: return json_is_number(v) && json_number_value(v) == *(double *)f->dest;
    case VLA_FLAG_BOOL: return json_is_boolean(v) && json_is_true(v) == *(bool *)f->dest;
    }
    return false;
}

/* A saved or given value as a person reads it ("its default" when it is the flag's default). */
static void value_text(json_t *v, json_t *dflt, char *buf, size_t cap) {
    if (dflt && json_equal(v, dflt)) snprintf(buf, cap, "its default");
    else if (json_is_null(v) || !v) snprintf(buf, cap, "(not given)");
    else if (json_is_string(v)) snprintf(buf, cap, "%s", json_string_value(v));
    else {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(10));
        snprintf(buf, cap, "%s", s ? s : "?");
        free(s);
    }
}

typedef struct {
    json_t *cfg;      /* the newest checkpoint's train_config.json (owns the strings flags point into) */
    json_t *changes;  /* flag → {"from", "to"} for the changes --resume.allow_changes let through */
    int64_t done;     /* steps of the newest complete checkpoint */
    int64_t schedule_steps;
    char ckpt[4096];
} resume_state;

/* Fill the flags not given from the newest checkpoint's saved ones, judge
 * those given again (see the file's comment). Returns -1 to go on, else the exit code. */
static int resume_flags(const vla_command_spec *spec, const vla_flags_result *res, json_t *defaults,
                        const char *out_dir, bool allow, resume_state *rs) {
    memset(rs, 0, sizeof *rs);
    vla_ckpt_info ck;
    char path[4200];
    vla_status st = vla_ckpt_find_last(out_dir, &ck);
    if (st != VLA_OK) {
        /* stopped before its first checkpoint: the flags the run saved when it began */
        snprintf(path, sizeof path, "%s/%s", out_dir, VLA_TRAIN_RUN_CONFIG);
        if (access(path, F_OK) != 0) {
            fprintf(stderr, "vla: error: vla train: --resume=true: no complete checkpoint in %s to continue (%s), and "
                            "no %s saying what ran there\n", out_dir, vla_error_message(), VLA_TRAIN_RUN_CONFIG);
            return 1;
        }
        snprintf(ck.dir, sizeof ck.dir, "%s", out_dir);
        ck.step = 0;
    } else {
        snprintf(path, sizeof path, "%s/pretrained_model/train_config.json", ck.dir);
    }
    rs->done = ck.step;
    snprintf(rs->ckpt, sizeof rs->ckpt, "%s", ck.dir);
    if ((st = vla_json_load_file(path, &rs->cfg)) != VLA_OK) return vla_cli_fail(st);
    json_t *saved = json_object_get(rs->cfg, "flags");
    json_t *saved_plan = json_object_get(rs->cfg, "schedule_steps");
    rs->schedule_steps = json_is_integer(saved_plan) ? (int64_t)json_integer_value(saved_plan) : 0;
    if (!json_is_object(saved)) {
        if (vla_flags_given(spec, res, "dataset.root") || vla_flags_given(spec, res, "dataset.shards")) return -1;
        fprintf(stderr, "vla: error: vla train: %s predates saved flags (an older vla.c wrote it): resume it with the "
                        "run's flags given again, as before\n", path);
        return 2;
    }
    bool source_given = false;
    for (int i = 0; i < spec->n_flags; i++)
        source_given |= is_data_source(spec->flags[i].name) && res->given[i];
    rs->changes = json_object();
    for (int i = 0; i < spec->n_flags; i++) {
        const vla_flag *f = &spec->flags[i];
        flag_kind k = kind_of(f->name);
        json_t *v = json_object_get(saved, f->name);
        if (k == K_SESSION || !v) continue; /* a flag newer than the checkpoint keeps its default */
        if (!res->given[i]) {
            if (!(is_data_source(f->name) && source_given)) flag_set(f, v);
            continue;
        }
        if (k == K_FREE || flag_same(f, v)) continue;
        char was[512], now[512];
        value_text(v, json_object_get(defaults, f->name), was, sizeof was);
        json_t *cur = flag_json(f);
        value_text(cur, NULL, now, sizeof now);
        if (k == K_FIXED) {
            json_decref(cur);
            fprintf(stderr, "vla: error: vla train: --%s=%s: the run in %s was trained with %s, and a resumed run keeps "
                            "its policy and inputs; to train these weights on with other ones, start a new run from "
                            "them: --policy.pretrained_path=%s/pretrained_model\n",
                    f->name, now, out_dir, was, ck.dir);
            return 2;
        }
        if (!allow) {
            json_decref(cur);
            fprintf(stderr, "vla: error: vla train: --%s=%s: the run in %s was trained with %s; a resume reproduces "
                            "the run, so changing it is refused (drop the flag to keep %s, or pass "
                            "--resume.allow_changes=true to change it; the change is recorded in metrics.jsonl)\n",
                    f->name, now, out_dir, was, was);
            return 2;
        }
        json_object_set_new(rs->changes, f->name, json_pack("{s:O, s:o}", "from", v, "to", cur));
    }
    /* more steps: the schedule is planned anew over them (train/schedule.c), noted in metrics.jsonl */
    json_t *sv = json_object_get(saved, "steps");
    int64_t saved_steps = json_is_integer(sv) ? (int64_t)json_integer_value(sv) : 0;
    int64_t steps_now = 0;
    for (int i = 0; i < spec->n_flags; i++)
        if (!strcmp(spec->flags[i].name, "steps")) steps_now = *(int64_t *)spec->flags[i].dest;
    int64_t plan = rs->schedule_steps > 0 ? rs->schedule_steps : saved_steps;
    if (plan > 0 && steps_now > plan) {
        json_object_set_new(rs->changes, "schedule_steps",
                            json_pack("{s:I, s:I}", "from", (json_int_t)plan, "to", (json_int_t)steps_now));
        rs->schedule_steps = steps_now;
    } else {
        rs->schedule_steps = plan;
    }
    if (json_object_size(rs->changes) == 0) json_decref(rs->changes), rs->changes = NULL;
    return -1;
}

/* A job name for the default output directory, as LeRobot's: [<env>_]<policy>. */
static void default_job_name(const char *type, const char *config, const char *env, char *buf, size_t cap) {
    char pol[128];
    if (config) {
        const char *base = strrchr(config, '/');
        base = base ? base + 1 : config;
        snprintf(pol, sizeof pol, "%.*s", (int)strcspn(base, "."), base);
    } else {
        snprintf(pol, sizeof pol, "%s", type ? type : "pi05");
    }
    if (env) snprintf(buf, cap, "%s_%s", env, pol);
    else snprintf(buf, cap, "%s", pol);
}

/* The end of a run as a person reads it (stderr, with the progress): where
 * everything is and how to go on. The figures for scripts: --json. */
static void summary(const vla_train_result *r, bool evals) {
    const char *d = r->output_dir;
    int64_t end = r->start_step + r->steps_done;
    if (r->interrupted)
        fprintf(stderr, "\nvla train: interrupted by %s after step %lld of %lld; checkpoint written.\n",
                r->interrupted == SIGINT ? "Ctrl-C" : "SIGTERM", (long long)end, (long long)r->steps_planned);
    else if (r->time_budget_hit)
        fprintf(stderr, "\nvla train: time budget reached after step %lld of %lld; checkpoint written.\n",
                (long long)end, (long long)r->steps_planned);
    else
        fprintf(stderr, "\nvla train: done: %lld steps%s in %.1f s, loss %.4g -> %.4g (means of the first and last "
                        "10 steps).\n", (long long)end, r->start_step ? " (resumed)" : "", r->seconds, r->first_loss,
                r->last_loss);
    if (r->last_ckpt[0])
        fprintf(stderr, "  checkpoint  %s (also %s/checkpoints/last); its pretrained_model/ is what `vla eval "
                        "--policy.path` loads\n", r->last_ckpt, d);
    fprintf(stderr, "  plots       %s/loss.png, %s/lr.png", d, d);
    if (evals) fprintf(stderr, ", %s/eval_success.png, %s/eval_coverage.png", d, d);
    fprintf(stderr, "\n  metrics     %s/metrics.jsonl, %s/metrics.csv\n", d, d);
    if (evals) fprintf(stderr, "  evals       %s/eval/step_<N>/eval_info.json (the last weights evaluated: %s/eval_model)\n",
                       d, d);
    if (r->interrupted || r->time_budget_hit)
        fprintf(stderr, "  resume      vla train --output_dir=%s --resume=true\n", d);
    else
        fprintf(stderr, "  train on    vla train --output_dir=%s --resume=true --steps=N (N > %lld; the schedule is "
                        "planned anew over N)\n", d, (long long)end);
}

int vla_cmd_train(int argc, char **argv) {
    vla_signals_watch(on_interrupt); /* first: before any thread exists */
    vla_train_opts o;
    vla_train_opts_default(&o);
    o.output_dir = NULL; /* a fresh outputs/train/<date>/<time>_<job_name> unless named */
    const char *env = NULL, *shards = NULL, *repo_id = NULL, *env_task = NULL, *env_model = NULL;
    int64_t eval_n_act = 0;
    int64_t batch = o.batch_size, steps = o.steps, seed = (int64_t)o.seed, workers = o.num_workers, accum = 1;
    int64_t profile = 0;
    int64_t save_freq = -1, log_freq = o.log_freq, eval_freq = 0, eval_eps = 10, warmup = -1, stop_after = 0,
            nan_at = 0, eval_seed = 100000, threads = 0, crash_at = 0, n_act = 0;
    int64_t n_obs = 1, augment_shift = 0;
    bool resume = false, skip = false, augment = false, constant = false, quiet = false, allow_changes = false,
         json = false;
    const char *precision = "fp32", *fp8_algo = "max";
    int64_t fp8_hist = o.fp8.amax_history_len, fp8_min_dim = o.fp8.min_dim, poison_amax = 0;
    double fp8_margin = o.fp8.margin;
    const vla_flag flags[] = {
        {"dataset.root", VLA_FLAG_STRING, &o.dataset_root, "DIR[,DIR2…]",
         "LeRobot dataset (v2.1 or v3.0) to train on; several, comma-separated: a mixture, one embodiment each "
         "(stats stay per dataset; state/action padded to the widest; docs/dataset.md \"Mixtures\")"},
        {"dataset.repo_id", VLA_FLAG_STRING, &repo_id, "ORG/NAME[,…]",
         "a dataset by its Hugging Face name, read from the LeRobot cache ($HF_LEROBOT_HOME, else "
         "~/.cache/huggingface/lerobot); vla.c does not download"},
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
        {"policy.n_action_steps", VLA_FLAG_INT, &n_act, "N",
         "actions executed per predicted chunk when the checkpoint is evaluated (stored in its config.json, "
         "LeRobot's name; default min(horizon, 8))"},
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
        {"steps", VLA_FLAG_INT, &steps, "N",
         "optimizer steps (default 1000; on --resume, the saved ones; more continues past them on the saved "
         "schedule)"},
        {"output_dir", VLA_FLAG_STRING, &o.output_dir, "DIR",
         "checkpoints, metrics and plots; must be empty unless --resume or --overwrite (default: a new "
         "outputs/train/<date>/<time>_<job_name>)"},
        {"job_name", VLA_FLAG_STRING, &o.job_name, "NAME",
         "the default output directory's name (default: [<env>_]<policy>, as LeRobot)"},
        {"overwrite", VLA_FLAG_BOOL, &o.overwrite, NULL,
         "a non-empty --output_dir is moved aside to DIR.old-<date>_<time> (nothing deleted) and a new run starts"},
        {"seed", VLA_FLAG_INT, &seed, "S", "seed of weights, sampler, noise (default 1000)"},
        {"device", VLA_FLAG_STRING, &o.device, "NAME", VLA_CLI_DEVICE_HELP},
        {"precision", VLA_FLAG_STRING, &precision, "fp32|bf16|fp8",
         "how the transformer blocks' large linears run their GEMMs: f32; operands in bf16; or FP8 with "
         "delayed per-tensor scaling (E4M3 forward, E5M2 gradients: TransformerEngine's HYBRID recipe). Master "
         "weights and AdamW moments stay f32; the CPU emulates the rounding (docs/precision.md; default fp32)"},
        {"gradient_checkpointing", VLA_FLAG_BOOL, &o.gradient_checkpointing, NULL,
         "keep each transformer layer's input only and run its forward again in backward (π0.5's layers): the "
         "same bits, about a third more layer compute, and one layer's activations in memory instead of one "
         "set per layer (what a large batch needs on a device; HF's and openpi's remat)"},
        {"fp8.amax_history_len", VLA_FLAG_INT, &fp8_hist, "N",
         "with --precision=fp8: steps of amax history each scale is computed from (default 1024, as TE)"},
        {"fp8.margin", VLA_FLAG_FLOAT, &fp8_margin, "M",
         "with --precision=fp8: scale = FP8 max x 2^-M / amax (default 0, as TE)"},
        {"fp8.amax_compute_algo", VLA_FLAG_STRING, &fp8_algo, "max|most_recent",
         "with --precision=fp8: the amax a scale uses: the history's largest, or this step's (default max, as TE)"},
        {"fp8.min_dim", VLA_FLAG_INT, &fp8_min_dim, "N",
         "with --precision=fp8: a block linear with in or out features below N reads bf16, not FP8 (too small to "
         "repay FP8's casts; default 0: every block linear in FP8, as TE's fp8_autocast)"},
        {"profile", VLA_FLAG_INT, &profile, "N",
         "time every op of N steps from the third step of this run (after the first steps' warm-up) and write "
         "where the time goes, per op and per step, to OUTPUT/profile.json and stderr; on cuda on the device's clock "
         "(\"between ops\": the device idle, e.g. waiting for data); the numbers are unchanged (default 0: off)"},
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
        {"resume", VLA_FLAG_BOOL, &resume, NULL,
         "continue the run in --output_dir from its last complete checkpoint, with its saved flags"},
        {"resume.allow_changes", VLA_FLAG_BOOL, &allow_changes, NULL,
         "with --resume: accept flags that change what the run reproduces (dataset, batch, seed, optimizer, "
         "schedule); each change is written to metrics.jsonl"},
        {"skip_nonfinite", VLA_FLAG_BOOL, &skip, NULL, "skip (and count) steps with NaN/Inf loss or gradients instead of stopping"},
        {"augment", VLA_FLAG_BOOL, &augment, NULL, "random brightness/contrast on images"},
        {"augment.shift", VLA_FLAG_INT, &augment_shift, "N",
         "random shift of each camera frame by up to N pixels: edge-padded by N, cropped back at a random offset "
         "per sample and camera (DrQ / Diffusion Policy; default 0: off; eval never augments)"},
        {"quiet", VLA_FLAG_BOOL, &quiet, NULL, "no progress lines"},
        {"json", VLA_FLAG_BOOL, &json, NULL,
         "also print the run's figures as one JSON line on stdout at the end (for scripts)"},
        {"max_time_s", VLA_FLAG_FLOAT, &o.max_time_s, "S", "time budget: checkpoint and stop after the step that passes S seconds"},
        {"stop_after", VLA_FLAG_INT, &stop_after, "N", "testing: stop after step N with no final checkpoint (as if killed)"},
        {"nan_at_step", VLA_FLAG_INT, &nan_at, "N", "testing: poison step N's gradient with NaN"},
        {"crash_at_step", VLA_FLAG_INT, &crash_at, "N",
         "testing: SIGKILL this process after step N of a run that did not resume (restart tests)"},
        {"poison_fp8_amax_at_step", VLA_FLAG_INT, &poison_amax, "N",
         "testing: alter the last rank's reduced FP8 amaxes of step N (its scales diverge; checkpoints refuse)"},
        {"dist.threads_per_rank", VLA_FLAG_INT, &threads, "N",
         "threads per process (default: $OMP_NUM_THREADS, else cores / ranks on this host)"},
        {"dist.bucket_mb", VLA_FLAG_FLOAT, &o.bucket_mb, "MB",
         "gradient all-reduce bucket size; buckets start during backward (default 25)"},
    };
    const vla_command_spec spec = {
        "vla train", NULL, "Train a pi05 or groot policy on a LeRobot dataset.",
        "A run directory (OUTPUT; docs/train.md \"Run directories\"):\n"
        "  train_config.json            the run's flags, from its first step (a resume reads them)\n"
        "  checkpoints/<step>/          pretrained_model/ (weights, config.json: what `vla eval` loads) and\n"
        "                               training_state/ (optimizer, sampler; LeRobot's layout); checkpoints/last\n"
        "  metrics.jsonl, metrics.csv   one row per --log_freq steps (loss, grad_norm, lr, eval_*)\n"
        "  loss.png, lr.png             the curves; with --eval_freq also eval_success.png, eval_coverage.png\n"
        "  eval_model/                  with --eval_freq: the weights the latest eval ran (overwritten each time)\n"
        "  eval/step_<N>/               with --eval_freq: each eval's eval_info.json, as `vla eval` writes it\n"
        "  profile.json                 with --profile=N: where N steps' time went, per op and per step\n"
        "Each run gets its own OUTPUT: a named one must be empty (--overwrite=true moves an old run aside).\n"
        "--resume=true alone continues the run in OUTPUT with its saved flags and reproduces the uninterrupted\n"
        "run's losses bit for bit (CPU, same thread count); a larger --steps plans the schedule anew over them.\n"
        "Ctrl-C (or SIGTERM) finishes the step, writes a checkpoint and says how to resume (exit 130 / 143); a\n"
        "second Ctrl-C exits without saving. See docs/train.md \"Resuming\". Under mpirun every rank takes the\n"
        "same flags; the global batch is batch_size x ranks x gradient_accumulation_steps, and the run resumes on\n"
        "any number of ranks with the same global batch. scripts/train_restarts.sh K -- CMD restarts a failed run\n"
        "from its last checkpoint up to K times (docs/distributed.md).",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    json_t *defaults = run_flags_json(&spec); /* before parsing: what each flag is when not given */
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) {
        json_decref(defaults);
        return rc;
    }
    const char *cmd = "vla train";
#define GIVEN(name) vla_flags_given(&spec, &res, name)
    if (resume && o.overwrite) {
        fprintf(stderr, "vla: error: vla train: --resume=true continues the run in --output_dir and --overwrite=true "
                        "moves it aside for a new one; give one of them\n");
        return json_decref(defaults), 2;
    }
    if (allow_changes && !resume)
        return json_decref(defaults),
               vla_cli_ignored(cmd, "resume.allow_changes", "it judges the flags of a resumed run; add --resume=true");
    if ((o.dataset_root != NULL) + (shards != NULL) + (repo_id != NULL) > 1) {
        fprintf(stderr, "vla: error: vla train: give the data once: --dataset.root, --dataset.repo_id or "
                        "--dataset.shards\n");
        return json_decref(defaults), 2;
    }
    resume_state rs = {0};
    if (resume) {
        if (!o.output_dir) {
            fprintf(stderr, "vla: error: vla train: --resume=true continues a run: name its directory with "
                            "--output_dir=DIR\n");
            return json_decref(defaults), 2;
        }
        rc = resume_flags(&spec, &res, defaults, o.output_dir, allow_changes, &rs);
        json_decref(defaults);
        defaults = NULL;
        if (rc >= 0) {
            json_decref(rs.cfg), json_decref(rs.changes);
            return rc;
        }
        if (steps <= rs.done) {
            fprintf(stderr, "vla train: %s has done %lld steps (%s); --steps=%lld asks for no more: nothing to do "
                            "(give a larger --steps to train on)\n",
                    o.output_dir, (long long)rs.done, rs.ckpt, (long long)steps);
            if (json) {
                printf("{\"steps\":%lld,\"start_step\":%lld,\"nothing_to_do\":true,\"checkpoint\":\"",
                       (long long)rs.done, (long long)rs.done);
                vla_cli_print_json_chars(rs.ckpt);
                printf("\",\"output_dir\":\"");
                vla_cli_print_json_chars(o.output_dir);
                printf("\"}\n");
            }
            json_decref(rs.cfg), json_decref(rs.changes);
            return 0;
        }
    }
    json_decref(defaults);
    /* flags this run would not use */
    const char *ignored = NULL, *why = NULL;
    if (GIVEN("env.type") && eval_freq == 0)
        ignored = "env.type", why = "it names the simulator of the evaluations during training, which --eval_freq=N "
                                    "turns on";
    else if ((GIVEN("eval.n_episodes") || GIVEN("eval.seed")) && eval_freq == 0)
        ignored = GIVEN("eval.seed") ? "eval.seed" : "eval.n_episodes",
        why = "evaluations during training are off; --eval_freq=N --env.type=NAME turns them on";
    else if (GIVEN("keep_normalization") && o.keep_normalization && !o.pretrained_path)
        ignored = "keep_normalization", why = "it keeps the statistics of --policy.pretrained_path, which is not given";
    else if (GIVEN("scheduler.warmup_steps") && constant)
        ignored = "scheduler.warmup_steps", why = "--scheduler.constant=true has no warmup";
    else if (GIVEN("job_name") && o.output_dir)
        ignored = "job_name", why = "it names the default output directory, and --output_dir is given";
    else if ((GIVEN("fp8.amax_history_len") || GIVEN("fp8.margin") || GIVEN("fp8.amax_compute_algo") ||
              GIVEN("fp8.min_dim")) &&
             strcmp(precision, "fp8") != 0)
        ignored = GIVEN("fp8.margin")            ? "fp8.margin"
                  : GIVEN("fp8.amax_compute_algo") ? "fp8.amax_compute_algo"
                  : GIVEN("fp8.min_dim")           ? "fp8.min_dim"
                                                   : "fp8.amax_history_len",
        why = "it tunes FP8's delayed scaling, which --precision=fp8 turns on";
    if (ignored) {
        json_decref(rs.cfg), json_decref(rs.changes);
        return vla_cli_ignored(cmd, ignored, why);
    }
    if (vla_precision_parse(precision, &o.precision) != VLA_OK) {
        fprintf(stderr, "vla: error: vla train: --precision=%s: give fp32, bf16 or fp8\n", precision);
        json_decref(rs.cfg), json_decref(rs.changes);
        return 2;
    }
    if (strcmp(fp8_algo, "max") && strcmp(fp8_algo, "most_recent")) {
        fprintf(stderr, "vla: error: vla train: --fp8.amax_compute_algo=%s: give max or most_recent\n", fp8_algo);
        json_decref(rs.cfg), json_decref(rs.changes);
        return 2;
    }
    if (eval_freq > 0 && !env) {
        fprintf(stderr, "vla: error: vla train: --eval_freq=%lld needs --env.type (pusht | reach)\n", (long long)eval_freq);
        json_decref(rs.cfg), json_decref(rs.changes);
        return 2;
    }
    if (o.policy_type && !vla_policy_family_find(o.policy_type)) {
        fprintf(stderr, "vla: error: vla train: unknown --policy.type=%s; vla.c trains %s\n", o.policy_type,
                vla_policy_family_names());
        json_decref(rs.cfg), json_decref(rs.changes);
        return 2;
    }
    /* values in range, named with what was given */
    if (!vla_cli_int_in(cmd, "batch_size", batch, 1, INT64_MAX) || !vla_cli_int_in(cmd, "steps", steps, 1, INT64_MAX) ||
        !vla_cli_int_in(cmd, "gradient_accumulation_steps", accum, 1, 1 << 20) ||
        !vla_cli_int_in(cmd, "token_budget", o.token_budget, 0, INT64_MAX) ||
        !vla_cli_int_in(cmd, "num_workers", workers, 0, 256) || !vla_cli_int_in(cmd, "profile", profile, 0, 1 << 20) || !vla_cli_int_in(cmd, "log_freq", log_freq, 0, INT64_MAX) ||
        (GIVEN("save_freq") && !vla_cli_int_in(cmd, "save_freq", save_freq, 0, INT64_MAX)) ||
        !vla_cli_int_in(cmd, "eval_freq", eval_freq, 0, INT64_MAX) ||
        !vla_cli_int_in(cmd, "eval.n_episodes", eval_eps, 1, 1 << 20) ||
        !vla_cli_int_in(cmd, "dataset.n_obs_steps", n_obs, 1, 64) ||
        !vla_cli_int_in(cmd, "augment.shift", augment_shift, 0, 4096) ||
        (GIVEN("policy.n_action_steps") && !vla_cli_int_in(cmd, "policy.n_action_steps", n_act, 1, 4096)) ||
        (GIVEN("scheduler.warmup_steps") && !vla_cli_int_in(cmd, "scheduler.warmup_steps", warmup, 0, INT64_MAX)) ||
        !vla_cli_int_in(cmd, "seed", seed, 0, INT64_MAX) || !vla_cli_int_in(cmd, "eval.seed", eval_seed, 0, INT64_MAX) ||
        !vla_cli_int_in(cmd, "dist.threads_per_rank", threads, 0, 4096) ||
        (GIVEN("optimizer.lr") && !vla_cli_float_in(cmd, "optimizer.lr", o.lr, 0, 1, true, false)) ||
        (GIVEN("optimizer.weight_decay") && !vla_cli_float_in(cmd, "optimizer.weight_decay", o.weight_decay, 0, 1e9, false, false)) ||
        (GIVEN("optimizer.grad_clip_norm") && !vla_cli_float_in(cmd, "optimizer.grad_clip_norm", o.clip_norm, 0, 1e30, false, false)) ||
        (GIVEN("ema_decay") && !vla_cli_float_in(cmd, "ema_decay", o.ema_decay, 0, 1, false, true)) ||
        (GIVEN("max_time_s") && !vla_cli_float_in(cmd, "max_time_s", o.max_time_s, 0, INFINITY, true, false)) ||
        (GIVEN("dist.bucket_mb") && !vla_cli_float_in(cmd, "dist.bucket_mb", o.bucket_mb, 0, 1e6, true, false)) ||
        !vla_cli_int_in(cmd, "fp8.amax_history_len", fp8_hist, 1, 1 << 20) ||
        !vla_cli_int_in(cmd, "fp8.min_dim", fp8_min_dim, 0, 1 << 20) ||
        !vla_cli_float_in(cmd, "fp8.margin", fp8_margin, -64, 64, false, false) ||
        !vla_cli_int_in(cmd, "poison_fp8_amax_at_step", poison_amax, 0, INT64_MAX)) {
        json_decref(rs.cfg), json_decref(rs.changes);
        return 2;
    }
    json_t *run_flags = run_flags_json(&spec); /* as given (and taken back), before the data is resolved */
    char repo_roots[8192];
    if (repo_id && (rc = vla_cli_dataset_source(cmd, NULL, NULL, repo_id, repo_roots, sizeof repo_roots,
                                                &o.dataset_root)) >= 0) {
        json_decref(run_flags), json_decref(rs.cfg), json_decref(rs.changes);
        return rc;
    }
    static char sets[VLA_SHARDS_MIXTURE_MAX][VLA_ROOT_MAX];
    int n_sets = 0;
    if (shards && vla_dataset_roots(shards, false, sets, VLA_SHARDS_MIXTURE_MAX, &n_sets) != VLA_OK) {
        fprintf(stderr, "vla: error: vla train: --dataset.shards: %s\n", vla_error_message());
        json_decref(run_flags), json_decref(rs.cfg), json_decref(rs.changes);
        return 2;
    }
    for (int i = 0; i < n_sets; i++) /* each shard set of the list must be complete */
        if (!vla_shards_is_set(sets[i]) && !vla_shards_is_mixture(sets[i])) {
            fprintf(stderr, "vla: error: vla train: --dataset.shards: no %s or %s in '%s' (run `vla data prepare "
                            "--out=%s`, or let an interrupted one finish)\n", VLA_SHARDS_MANIFEST, VLA_SHARDS_MIXTURE,
                    sets[i], sets[i]);
            json_decref(run_flags), json_decref(rs.cfg), json_decref(rs.changes);
            return 1;
        }
    if (shards) o.dataset_root = shards;
    if (!o.dataset_root) {
        fprintf(stderr, "vla: error: vla train: which data? give --dataset.root=DIR, --dataset.repo_id=ORG/NAME or "
                        "--dataset.shards=DIR\n");
        json_decref(run_flags), json_decref(rs.cfg), json_decref(rs.changes);
        return 2;
    }
    if (eval_freq > 0 && !env) {
        fprintf(stderr, "vla: error: vla train: --eval_freq needs --env.type (pusht | reach | aloha)\n");
        json_decref(run_flags), json_decref(rs.cfg), json_decref(rs.changes);
        return 2;
    }
    char job[256];
    if (!o.job_name) {
        default_job_name(o.policy_type, o.policy_config, eval_freq > 0 ? env : NULL, job, sizeof job);
        o.job_name = job;
    }
    if (env && (rc = vla_cli_env(&env, env_task, env_model)) >= 0) {
        json_decref(run_flags), json_decref(rs.cfg), json_decref(rs.changes);
        return rc;
    }
    o.batch_size = batch, o.steps = steps, o.seed = (uint64_t)seed, o.num_workers = (int)workers, o.accum = accum;
    o.save_freq = save_freq >= 0 ? save_freq : (steps >= 5 ? steps / 5 : 0);
    o.profile_steps = profile;
    o.log_freq = log_freq, o.eval_freq = eval_freq, o.warmup_steps = warmup, o.constant_lr = constant;
    o.resume = resume, o.skip_nonfinite = skip, o.augment = augment, o.progress = !quiet;
    o.augment_shift = (int)augment_shift;
    o.allow_changes = allow_changes, o.resume_changes = rs.changes, o.run_flags = run_flags;
    o.schedule_steps = rs.schedule_steps;
    o.n_action_steps = (int)n_act;
    arm_test_faults(stop_after, nan_at, crash_at, resume);
    if (poison_amax > 0) vla_fault_set(VLA_FAULT_TRAIN_FP8_AMAX, VLA_FAULT_POISON, poison_amax, poison_amax);
    o.fp8.amax_history_len = fp8_hist, o.fp8.margin = (float)fp8_margin;
    o.fp8.most_recent = !strcmp(fp8_algo, "most_recent");
    o.fp8.min_dim = fp8_min_dim;
    o.n_obs_steps = (int)n_obs;
    set_threads(threads);
    eval_hook_ctx ctx = {env, o.device, (int)eval_eps, (uint64_t)eval_seed, (int)eval_n_act};
    if (eval_freq > 0) o.eval_fn = eval_hook, o.eval_user = &ctx;
    vla_train_result r;
    o.interrupt = &interrupted;
    catch_interrupts();
    vla_status st = vla_train(&o, &r);
    json_decref(run_flags), json_decref(rs.cfg), json_decref(rs.changes);
    if (st != VLA_OK) return vla_cli_fail(st);
    int exit_code = r.interrupted ? 128 + r.interrupted : 0;
    if (r.rank != 0) return exit_code;
    summary(&r, eval_freq > 0);
    if (!json) return exit_code;
    printf("{\"steps\":%lld,\"start_step\":%lld,\"skipped\":%lld,\"first_loss\":%.6g,\"last_loss\":%.6g,"
           "\"seconds\":%.2f,\"samples_per_s\":%.2f,\"data_wait_frac\":%.4f,\"params\":%lld,\"frames\":%lld,"
           "\"checkpoint\":\"",
           (long long)(r.start_step + r.steps_done), (long long)r.start_step, (long long)r.skipped, r.first_loss,
           r.last_loss, r.seconds, r.samples_per_s, r.data_wait_frac, (long long)r.n_params,
           (long long)r.n_samples);
    vla_cli_print_json_chars(r.last_ckpt);
    printf("\",\"output_dir\":\"");
    vla_cli_print_json_chars(r.output_dir);
    printf("\"");
    printf(",\"micro_batches_per_step\":%.2f,\"tokens_per_micro_batch\":%.1f", r.micro_batches_per_step,
           r.tokens_per_micro_batch);
    if (r.time_budget_hit) printf(",\"time_budget_hit\":true");
    if (!isnan(r.last_eval_success)) printf(",\"eval_success\":%.4f", r.last_eval_success);
    printf(",\"precision\":\"%s\"", vla_precision_name(o.precision));
    if (r.interrupted) printf(",\"interrupted\":\"%s\"", r.interrupted == SIGINT ? "SIGINT" : "SIGTERM");
    printf(",\"world\":%d,\"threads_per_rank\":%d,\"buckets\":%d,\"comm_exposed_s\":%.4f,"
           "\"buckets_started_in_backward\":%d,\"comm_exposed_frac\":%.4f,\"optimizer_state_bytes_per_rank\":%zu",
           r.world, omp_get_max_threads(), r.n_buckets, r.comm_exposed_s, r.buckets_started_in_backward,
           r.seconds > 0 ? r.comm_exposed_s / r.seconds : 0.0, r.opt_state_bytes);
    printf("}\n");
    return exit_code;
#undef GIVEN
}
