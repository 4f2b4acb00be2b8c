/* trainer.c — the training loop (see trainer.h and docs/train.md). */
#include "train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fault.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "base/log.h"
#include "base/run_dir.h"
#include "base/timer.h"
#include "data/lerobot.h"
#include "train/loader.h"
#include "data/mixture.h"
#include "data/shards.h"
#include "distributed/comm.h"
#include "distributed/grad_buckets.h"
#include "distributed/sampler.h"
#include "distributed/zero1.h"
#include "policy/family.h"
#include "policy/memory.h"
#include "tensor/backend.h"
#include "tensor/profile.h"
#include "tensor/cpu/gemm.h"
#include "checkpoint/checkpoint.h"
#include "train/fp8_state.h"
#include "train/metrics.h"
#include "train/micro_batches.h"
#include "train/plot.h"
#include "checkpoint/pretrained.h"
#include "checkpoint/published.h"
#include "train/schedule.h"
#include "train/step.h"
#include "train/trainer_opt.h"

void vla_train_opts_default(vla_train_opts *o) {
    memset(o, 0, sizeof *o);
    o->policy_type = NULL; /* the checkpoint's or the config's family; pi05 when neither is named */
    o->output_dir = "outputs/train";
    o->batch_size = 8;
    o->accum = 1;
    o->steps = 1000;
    o->seed = 1000;
    o->num_workers = 2;
    o->lr = -1;
    o->weight_decay = -1;
    o->clip_norm = -1;
    o->ema_decay = -1;
    o->warmup_steps = -1;
    o->save_freq = 0;
    o->log_freq = 10;
    o->progress = true;
    o->device = NULL; /* vla_backend_default_name() */
    o->precision = VLA_PREC_FP32;
    vla_fp8_recipe_default(&o->fp8);
}

typedef struct {
    const vla_train_opts *o; /* &opts */
    vla_train_opts opts;     /* the caller's, with the output directory resolved */
    char out_dir[VLA_CKPT_PATH_MAX], moved_aside[VLA_CKPT_PATH_MAX];
    bool made_dir;           /* this run created out_dir: a run that fails before writing anything removes it */
    vla_comm *comm;
    int rank, world;
    vla_lerobot *ds[VLA_LOADER_MAX_DATASETS]; /* --dataset.root=A,B,…: a mixture when more than one */
    int nds;
    int64_t n_rows, n_episodes;               /* of all of them */
    vla_mixture mix;
    vla_policy *p;
    vla_loader *L;
    vla_train_opt *opt;
    vla_schedule sched;
    vla_grad_buckets *gb;
    int64_t *bucket_of; /* parameter → bucket tensor, for the step's gradient-ready hook */
    float *scratch;   /* host weights-layout buffer: the weights a checkpoint exports (EMA or a backend's copy) */
    vla_sampler track;
    vla_micro_batches src; /* the loader's source */
    vla_loader_batch *cur; /* the micro-batch the step is on */
    vla_pretrained_meta meta[VLA_LOADER_MAX_DATASETS]; /* per dataset (embodiment) */
    json_t *train_cfg;
    int64_t skipped;
    double *win;      /* finite step losses since the last logged row (the row shows their mean) */
    int64_t nwin, capwin;
    /* the run (vla_train) */
    vla_metrics metrics;
    bool metrics_open, evals;
    double *losses;   /* every step's loss of this session (first/last means) */
    int64_t nl, start;
    double t_begin, wait_total;
    int64_t micro_batches, micro_tokens; /* this session's, for the summary */
    vla_meter meter;
    bool restarted;   /* resumed with no checkpoint: started over from step 0 */
    char lr_note[160];/* where the peak lr came from, for the info line */
    bool profiled;    /* --profile: the policy runs on the profiling table (tensor/profile.h) */
    /* the last step issued whose results are not accounted yet (settle): a deferred one's arrive
     * while the next step runs (train/step.h, defer_result) */
    bool pend;
    vla_train_step_in pend_in;
    vla_train_step_out pend_out;
    int64_t prof_first, prof_end; /* the profiled steps [first, end) of this session */
} trainer;

static const char *const COLS[] = {"loss", "grad_norm", "lr", "samples_per_s", "data_wait", "skipped",
                                   "eval_success", "eval_coverage", "eval_reward"};
enum { C_LOSS, C_GRAD, C_LR, C_SPS, C_WAIT, C_SKIP, C_EVS, C_EVC, C_EVR, NCOLS };

static json_t *config_json(trainer *t) {
    const vla_normalizer *ns[VLA_LOADER_MAX_DATASETS], *na[VLA_LOADER_MAX_DATASETS];
    for (int d = 0; d < t->nds; d++) {
        vla_loader_dataset info = vla_loader_dataset_info(t->L, d);
        ns[d] = info.state_norm, na[d] = info.action_norm;
    }
    return vla_pretrained_config_json_mixture(t->p, t->nds, ns, na, t->meta);
}

/* Collective (the EMA is sharded): the weights to export, in host memory —
 * the EMA where there is one (frozen tensors from the live weights), else
 * the weights (read in place when the backend's memory is the host's). */
static vla_status export_weights(trainer *t, const float **out) {
    const vla_ops *ops = t->p->tops;
    bool ema = vla_train_opt_has_ema(t->opt);
    *out = t->p->weights;
    if (!ema && ops->host_memory) return VLA_OK;
    ops->to_host(t->scratch, t->p->weights, (size_t)t->p->n_weight_floats * sizeof(float));
    if (ema) VLA_TRY(vla_train_opt_ema_to(t->opt, t->scratch));
    *out = t->scratch;
    return VLA_OK;
}

/* Rank 0 writes the shared files; every rank writes its optimizer shard into
 * the same hidden directory (its path broadcast from rank 0); rank 0 commits
 * only once every shard is written, so the checkpoint is complete or absent.
 * Every rank goes through the same collectives whatever fails where. */
static vla_status save_checkpoint(trainer *t, int64_t step, double lr, char *dir_out, size_t cap) {
    const float *wexp = NULL;
    vla_status st = vla_train_opt_check_finite(t->opt, t->p->weights);
    if (st != VLA_OK) st = vla_error_context(st, "step %lld: not writing a checkpoint", (long long)step);
    if (st == VLA_OK) st = export_weights(t, &wexp);
    if (st != VLA_OK) return vla_comm_agree(t->comm, st, "checkpoint");
    VLA_TRY(vla_fp8_state_agree(t->comm, t->p, step));
    vla_ckpt_writer *w = NULL;
    char state_dir[VLA_CKPT_PATH_MAX + 32];
    state_dir[0] = '\0';
    if (t->rank == 0 && (st = vla_ckpt_begin(t->o->output_dir, step, t->o->steps, &w)) == VLA_OK)
        snprintf(state_dir, sizeof state_dir, "%s/%s", vla_ckpt_writer_dir(w), VLA_CKPT_STATE_DIR);
    VLA_TRY(vla_comm_agree(t->comm, st, "checkpoint: creating the directory"));
    if (t->world > 1) VLA_TRY(vla_comm_bcast(t->comm, state_dir, sizeof state_dir, VLA_COMM_BYTE, 0));
    st = vla_train_opt_save(t->opt, w, state_dir, lr); /* collective: every rank's shard */
    if (t->rank == 0) {
        json_t *cfg = NULL;
        if (st == VLA_OK && !(cfg = config_json(t))) st = vla_error(VLA_ERR_INTERNAL, "checkpoint: config.json");
        if (st == VLA_OK) st = vla_pretrained_write_ckpt(w, VLA_CKPT_MODEL_DIR, t->p, wexp, cfg);
        if (st == VLA_OK) st = vla_ckpt_write_json(w, "pretrained_model/train_config.json", t->train_cfg);
        if (st == VLA_OK && vla_train_opt_has_ema(t->opt))
            st = vla_pretrained_write_ckpt(w, "training_state/raw_model", t->p, NULL, cfg);
        if (st == VLA_OK && vla_policy_precision_mode(t->p) == VLA_PREC_FP8) st = vla_fp8_state_write(t->p, w);
        if (st == VLA_OK) {
            vla_sampler_pos pos = vla_sampler_tell(&t->track);
            /* the losses of the unfinished log window, so a resumed run logs the same means
             * (jansson writes reals with 17 significant digits: exact round trip) */
            json_t *lw = json_array();
            for (int64_t i = 0; i < t->nwin; i++) json_array_append_new(lw, json_real(t->win[i]));
            json_t *rng = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:o}", "seed", (json_int_t)t->o->seed, "epoch",
                                    (json_int_t)pos.epoch, "cursor", (json_int_t)pos.cursor, "skipped_steps",
                                    (json_int_t)t->skipped, "global_batch",
                                    (json_int_t)vla_sampler_global_batch(&t->track), "updates",
                                    (json_int_t)vla_train_opt_updates(t->opt), "world", t->world,
                                    "loss_window", lw);
            st = vla_ckpt_write_json(w, "training_state/rng_state.json", rng);
            json_decref(rng);
        }
        json_decref(cfg);
        if (st == VLA_OK) {
            vla_ckpt_info info;
            st = vla_ckpt_commit(w, &info);
            if (st == VLA_OK && dir_out) snprintf(dir_out, cap, "%s", info.dir);
        } else {
            vla_ckpt_abort(w);
        }
    }
    return vla_comm_agree(t->comm, st, "checkpoint");
}

static vla_status load_checkpoint(trainer *t, const vla_ckpt_info *ck, int64_t *start_step) {
    char path[VLA_CKPT_PATH_MAX + 96];
    snprintf(path, sizeof path, "%s/training_state/raw_model/model.safetensors", ck->dir);
    if (!vla_path_exists(path)) snprintf(path, sizeof path, "%s/pretrained_model/model.safetensors", ck->dir);
    VLA_TRY(vla_pretrained_load_weights(t->p, path));
    VLA_TRY(vla_train_opt_load(t->opt, ck->dir)); /* collective: shards re-cut for this world */
    VLA_TRY(vla_fp8_state_load(t->p, ck->dir, t->rank));
    json_t *rng;
    snprintf(path, sizeof path, "%s/training_state/rng_state.json", ck->dir);
    VLA_TRY(vla_json_load_file(path, &rng));
    int64_t seed = 0, epoch = 0, cursor = 0, gb = 0;
    vla_status st = vla_json_get_int(path, rng, "seed", &seed);
    if (st == VLA_OK) st = vla_json_get_int(path, rng, "epoch", &epoch);
    if (st == VLA_OK) st = vla_json_get_int(path, rng, "cursor", &cursor);
    if (st == VLA_OK) st = vla_json_get_int(path, rng, "skipped_steps", &t->skipped);
    if (st == VLA_OK) st = vla_json_get_int(path, rng, "global_batch", &gb);
    json_t *lw = json_object_get(rng, "loss_window");
    t->nwin = 0;
    for (size_t i = 0; st == VLA_OK && json_is_array(lw) && i < json_array_size(lw) && t->nwin < t->capwin; i++)
        t->win[t->nwin++] = json_number_value(json_array_get(lw, i));
    json_decref(rng);
    VLA_TRY(st);
    if ((uint64_t)seed != t->o->seed && !t->o->allow_changes)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: checkpoint was trained with --seed=%lld, this run has %llu", path,
                         (long long)seed, (unsigned long long)t->o->seed);
    if (gb != vla_sampler_global_batch(&t->track) && !t->o->allow_changes)
        return vla_error(VLA_ERR_INVALID_ARG,
                         "%s: checkpoint's global batch is %lld, this run's is %lld (batch_size × ranks × accum "
                         "must match to resume; --resume.allow_changes=true changes it)",
                         path, (long long)gb, (long long)vla_sampler_global_batch(&t->track));
    if (gb != vla_sampler_global_batch(&t->track) && t->rank == 0)
        VLA_WARN("--resume.allow_changes=true: the global batch goes from %lld to %lld", (long long)gb,
                 (long long)vla_sampler_global_batch(&t->track));
    if (vla_train_opt_updates(t->opt) + t->skipped != ck->step)
        return vla_error(VLA_ERR_FORMAT, "%s: optimizer updates %lld + skipped %lld != step %lld", ck->dir,
                         (long long)vla_train_opt_updates(t->opt), (long long)t->skipped, (long long)ck->step);
    vla_sampler_pos pos = {epoch, cursor};
    VLA_TRY(vla_sampler_seek(&t->track, pos));
    VLA_TRY(vla_sampler_seek(&t->src.s, pos));
    *start_step = ck->step;
    return VLA_OK;
}

static void plots(const trainer *t, bool evals) {
    char jl[4096], png[4200];
    snprintf(jl, sizeof jl, "%s/metrics.jsonl", t->o->output_dir);
    struct { const char *col, *file, *title; int log_y; double smooth; } P[] = {
        {"loss", "loss.png", "training loss", 1, 0.6},
        {"lr", "lr.png", "learning rate", 0, 0},
        {"eval_success", "eval_success.png", "eval success rate", 0, 0},
        {"eval_coverage", "eval_coverage.png", "eval mean max coverage", 0, 0},
    };
    for (int i = 0; i < 4; i++) {
        if (i >= 2 && !evals) continue;
        snprintf(png, sizeof png, "%s/%s", t->o->output_dir, P[i].file);
        vla_status st = i >= 2 ? vla_plot_metric_range(jl, P[i].col, png, P[i].title, 0, 1) /* rates: all of 0..1 */
                               : vla_plot_metric(jl, P[i].col, png, P[i].title, P[i].log_y, P[i].smooth);
        if (st != VLA_OK)
            VLA_WARN("plot %s: %s", png, vla_error_message());
    }
}

static void trainer_free(trainer *t) {
    free(t->losses);
    vla_loader_free(t->L);
    vla_grad_buckets_free(t->gb);
    free(t->bucket_of);
    vla_train_opt_free(t->opt);
    vla_policy_free(t->p);
    for (int d = 0; d < t->nds; d++) vla_lerobot_close(t->ds[d]);
    vla_sampler_free(&t->track);
    vla_micro_batches_free(&t->src);
    free(t->scratch);
    free(t->win);
    json_decref(t->train_cfg);
    if (t->profiled) vla_profile_unwrap();
    if (t->comm) vla_comm_finalize(t->comm);
}

/* The policy config: from the checkpoint when resuming, so the run goes on
 * with what it started with; else the named preset (default <type>-tiny). */
static vla_status load_config(trainer *t, vla_policy_config *cfg, vla_ckpt_info *ck, bool *have_ck) {
    const vla_train_opts *o = t->o;
    *have_ck = false;
    if (!o->resume && o->pretrained_path) {
        vla_pub_format fmt;
        VLA_TRY(vla_published_config(o->pretrained_path, o->policy_config, cfg, &fmt));
        if (o->policy_type && strcmp(o->policy_type, vla_policy_config_family_name(cfg)))
            return vla_error(VLA_ERR_INVALID_ARG, "--policy.type=%s, but %s is a %s checkpoint", o->policy_type,
                             o->pretrained_path, vla_policy_config_family_name(cfg));
        return VLA_OK;
    }
    if (!o->resume) {
        char preset[128];
        const char *type = o->policy_type ? o->policy_type : "pi05";
        snprintf(preset, sizeof preset, "%s-tiny", type);
        return vla_policy_config_load(o->policy_config ? o->policy_config : preset, cfg);
    }
    if (t->rank == 0) VLA_TRY(vla_ckpt_cleanup(o->output_dir));
    VLA_TRY(vla_comm_barrier(t->comm));
    vla_status st = vla_ckpt_find_last(o->output_dir, ck);
    char saved[VLA_CKPT_PATH_MAX + 32];
    snprintf(saved, sizeof saved, "%s/%s", o->output_dir, VLA_TRAIN_RUN_CONFIG);
    if (st != VLA_OK && vla_path_exists(saved)) {
        /* stopped before its first checkpoint: the run starts over in its directory, from step 0 */
        if (t->rank == 0)
            VLA_INFO("--resume=true: %s has no checkpoint yet (the run stopped before its first): starting from "
                     "step 0 with the flags saved in %s", o->output_dir, saved);
        t->opts.resume = false;
        t->restarted = true;
        return load_config(t, cfg, ck, have_ck);
    }
    if (st != VLA_OK) return vla_error_context(st, "--resume=true: no complete checkpoint in %s", o->output_dir);
    *have_ck = true;
    char path[VLA_CKPT_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/pretrained_model/config.json", ck->dir);
    json_t *root;
    VLA_TRY(vla_json_load_file(path, &root));
    st = vla_policy_config_from_json(path, json_object_get(root, "policy"), cfg);
    json_decref(root);
    return st;
}

/* Open the dataset(s): --dataset.root is one directory or a comma-separated
 * mixture (a prepared mixture's directory counts as its sets); with
 * --dataset.episodes (one dataset only) the episodes listed. */
static vla_status open_datasets(trainer *t) {
    const vla_train_opts *o = t->o;
    static char roots[VLA_LOADER_MAX_DATASETS][VLA_ROOT_MAX];
    int n = 0;
    vla_status rst = vla_dataset_roots(o->dataset_root, true, roots, VLA_LOADER_MAX_DATASETS, &n);
    if (rst != VLA_OK) return vla_error_context(rst, "--dataset.root");
    if (n > 1 && o->episodes)
        return vla_error(VLA_ERR_INVALID_ARG, "--dataset.episodes selects episodes of one dataset, not of a mixture of "
                         "%d (select them with `vla data prepare --dataset.episodes=…` per dataset)", n);
    if (n == 1 && o->weights)
        return vla_error(VLA_ERR_INVALID_ARG, "--dataset.weights weighs the datasets of a mixture "
                         "(--dataset.root=A,B); there is one");
    vla_lr_open_opts lo = {0};
    int64_t *eps = NULL;
    if (o->episodes) VLA_TRY(vla_lerobot_parse_episodes(o->episodes, &eps, &lo.n_episodes));
    lo.episodes = eps;
    vla_status st = VLA_OK;
    for (int d = 0; d < n && st == VLA_OK; d++) {
        st = vla_lerobot_open_opts(roots[d], &lo, &t->ds[d]);
        if (st != VLA_OK) break;
        t->nds = d + 1;
        t->n_rows += t->ds[d]->n_rows, t->n_episodes += t->ds[d]->n_episodes;
    }
    free(eps);
    VLA_TRY(st);
    double w[VLA_MIXTURE_MAX];
    if (o->weights) VLA_TRY(vla_mixture_parse_weights(o->weights, n, w));
    int64_t rows[VLA_MIXTURE_MAX];
    for (int d = 0; d < n; d++) rows[d] = t->ds[d]->n_rows;
    return vla_mixture_init(&t->mix, n, rows, o->weights ? w : NULL, o->seed);
}

/* A device's memory, before anything is allocated on it: what the training step needs (policy/memory.h:
 * the step measured on the meta backend, the longest prompts, the optimizer's state over the ZeRO-1 shards
 * beside it: vla_zero1_budget_bytes) against what is free — one line in the log, a warning when it does not fit, with
 * what to do. Not a refusal: real prompts are often shorter than the longest, and an out-of-memory step
 * says the same again. A backend with no free-memory figure (cpu; checked unless given a capacity) skips it. */
static void check_device_memory(trainer *t, const vla_policy_config *cfg, const vla_ops *ops) {
    const vla_train_opts *o = t->o;
    int64_t free_b = vla_ops_stat_of(ops, VLA_STAT_DEVICE_FREE_BYTES);
    if (free_b < 0) return;
    double per_param = vla_zero1_budget_bytes(1, t->world, o->ema_decay > 0);
    vla_memory_opts mo = {.sized_as = ops->name, .precision = o->precision, .fp8 = &o->fp8,
                          .batch = (int32_t)o->batch_size, .recompute = o->gradient_checkpointing};
    bool fits = true;
    char say[1024];
    if (vla_policy_memory_fit(cfg, &mo, (double)free_b, per_param, "--batch_size", &fits, say, sizeof say) != VLA_OK) {
        vla_log(VLA_LOG_WARN, "device memory not measured: %s", vla_error_message());
        vla_error_clear();
        return;
    }
    vla_log(fits ? VLA_LOG_INFO : VLA_LOG_WARN, "%s%s", fits ? "" : "may not fit: ", say);
}

/* Open the dataset(s) and build the policy, its padded state/action dims
 * grown to hold every dataset's (max_state_dim / max_action_dim). */
static vla_status open_dataset_and_policy(trainer *t, vla_policy_config *cfg) {
    const vla_train_opts *o = t->o;
    VLA_TRY(open_datasets(t));
    for (int d = 0; d < t->nds; d++) {
        const vla_lr_feature *fa = vla_lerobot_feature(t->ds[d], "action");
        int64_t sw = 0;
        VLA_TRY(vla_loader_keys_width(t->ds[d], o->state_keys, &sw));
        if (o->n_obs_steps > 1) sw *= o->n_obs_steps; /* K frames of history side by side */
        if (!fa) return vla_error(VLA_ERR_NOT_FOUND, "%s: dataset needs an 'action' feature", t->ds[d]->root);
        if (sw > cfg->action.state_dim) cfg->action.state_dim = sw;
        if (fa->width > cfg->action.action_dim) cfg->action.action_dim = fa->width;
    }
    /* GR00T's per-embodiment encoders/decoders: one slice per dataset of the
     * mixture (ids 0, 1, … in --dataset.root order). A fresh policy grows its
     * table as it grows its dims; a pretrained or resumed one must have it. */
    int64_t n_emb = cfg->family ? cfg->family->embodiments(cfg) : 0;
    if (n_emb > 0 && t->nds > n_emb && !o->pretrained_path && !o->resume) cfg->head.embodiments = n_emb = t->nds;
    if (n_emb > 0 && t->nds > n_emb)
        return vla_error(VLA_ERR_INVALID_ARG, "policy '%s' has per-embodiment weights for %lld embodiments; a mixture "
                         "of %d datasets needs one each", cfg->name, (long long)n_emb, t->nds);
    VLA_TRY(vla_policy_config_validate(cfg->name, cfg));
    const vla_ops *ops;
    VLA_TRY(vla_backend_get(o->device ? o->device : vla_backend_default_name(), &ops));
    if (o->profile_steps > 0) { /* forwarding only, until the profiled steps (vla_train) */
        VLA_TRY(vla_profile_wrap(ops, &ops));
        t->profiled = true;
    }
    check_device_memory(t, cfg, ops);
    VLA_TRY(vla_policy_create(cfg, ops, &t->p));
    VLA_TRY(vla_policy_init_weights(t->p, o->seed));
    VLA_TRY(vla_policy_set_precision(t->p, o->precision, &o->fp8));
    t->p->recompute_layers = o->gradient_checkpointing;
    if (!o->pretrained_path || o->resume) return VLA_OK; /* resuming: the checkpoint's weights come later */
    vla_published_report rep;
    vla_status st = vla_published_load_weights(t->p, o->pretrained_path, &rep);
    if (st != VLA_OK)
        return vla_error_context(st, "--policy.pretrained_path (state/action widths %lld/%lld after fitting the dataset's; "
                                 "a checkpoint's max_state_dim/max_action_dim must hold them)",
                                 (long long)cfg->action.state_dim, (long long)cfg->action.action_dim);
    if (t->rank == 0)
        VLA_INFO("pretrained: %lld tensors from %s (%d file%s, prefix '%s', %lld converted from bf16/f16, %lld "
                     "through a tie or alias, %lld known-unused skipped)", (long long)rep.bound, o->pretrained_path,
                     rep.n_files, rep.n_files == 1 ? "" : "s", rep.prefix, (long long)rep.converted,
                     (long long)rep.aliased, (long long)rep.unused);
    return VLA_OK;
}

/* The samplers (a tracking copy for checkpoints, the loader's source copy),
 * the loader, and what a checkpoint records about each dataset. */
static vla_status create_loader(trainer *t) {
    const vla_train_opts *o = t->o;
    VLA_TRY(vla_sampler_init(&t->track, t->n_rows, o->seed, true, t->rank, t->world, o->batch_size, o->accum));
    if (vla_sampler_steps_per_epoch(&t->track) < 1)
        return vla_error(VLA_ERR_INVALID_ARG, "%s: %lld frames is fewer than one global batch of %lld",
                         o->dataset_root, (long long)t->n_rows, (long long)vla_sampler_global_batch(&t->track));
    VLA_TRY(vla_micro_batches_init(&t->src, t->n_rows, o->seed, t->rank, t->world, o->batch_size, o->accum,
                                   t->nds > 1 ? &t->mix : NULL, o->token_budget));
    int64_t step_samples = o->batch_size * o->accum;
    const vla_lerobot *dss[VLA_LOADER_MAX_DATASETS];
    for (int d = 0; d < t->nds; d++) dss[d] = t->ds[d];
    vla_loader_opts lo = {.datasets = dss, .n_datasets = t->nds, .policy = t->p,
                          .batch_size = o->token_budget > 0 ? step_samples : o->batch_size,
                          .max_tokens = o->token_budget,
                          .source = vla_micro_batches_source, .source_user = &t->src, .seed = o->seed,
                          .num_workers = o->num_workers, .augment = o->augment, .augment_shift = o->augment_shift,
                          .state_keys = o->state_keys, .image_keys = o->image_keys,
                          .n_obs_steps = o->n_obs_steps, .relative_actions = o->relative_actions,
                          .action_stats_per_step = o->action_stats_per_step};
    vla_normalizer ns = {0}, na = {0};
    if (o->keep_normalization && o->pretrained_path && !o->resume) {
        vla_status nst = vla_pretrained_normalizers(o->pretrained_path, &ns, &na);
        if (nst != VLA_OK) return vla_error_context(nst, "--keep_normalization needs a vla.c checkpoint's statistics");
        lo.fixed_state_norm = &ns, lo.fixed_action_norm = &na;
    }
    vla_status lst = vla_loader_create(&lo, &t->L);
    vla_normalizer_free(&ns), vla_normalizer_free(&na);
    VLA_TRY(lst);
    t->src.L = t->L;
    for (int d = 0; d < t->nds; d++) {
        vla_loader_dataset info = vla_loader_dataset_info(t->L, d);
        vla_pretrained_meta *m = &t->meta[d];
        const vla_lerobot *ds = info.ds;
        m->state_width = info.state_width;
        snprintf(m->state_keys, sizeof m->state_keys, "%s", vla_loader_state_keys(t->L));
        m->n_obs_steps = vla_loader_n_obs_steps(t->L);
        m->relative_actions = vla_loader_relative_actions(t->L);
        m->action_stats_per_step = vla_loader_action_stats_per_step(t->L);
        m->n_action_steps = o->n_action_steps;
        m->action_width = info.action_width;
        m->cameras = info.cameras;
        vla_loader_image_keys(t->L, d, m->image_keys, sizeof m->image_keys);
        m->fps = ds->fps;
        m->embodiment = info.embodiment;
        snprintf(m->embodiment_name, sizeof m->embodiment_name, "%s", ds->robot_type ? ds->robot_type : "");
        snprintf(m->task, sizeof m->task, "%s", ds->n_tasks > 0 ? ds->tasks[0] : "");
        snprintf(m->dataset, sizeof m->dataset, "%s", ds->root);
        if (t->rank == 0 && t->nds > 1)
            VLA_INFO("mixture: %s (%s, embodiment %d): %lld frames, weight %.3f, %lld samples per epoch of %lld",
                     ds->root, m->embodiment_name, (int)m->embodiment, (long long)ds->n_rows, t->mix.weight[d],
                     (long long)t->mix.quota[d], (long long)t->mix.total);
    }
    return VLA_OK;
}

/* The sizes of the trainable tensors, in parameter order: the gradient
 * buckets' tensors, as the optimizer's (vla_train_opt_create_for_policy). */
static vla_status trainable_sizes(const vla_policy *p, int64_t **sizes_out, int *n_out) {
    int64_t *sizes = calloc((size_t)(p->specs.n > 0 ? p->specs.n : 1), sizeof *sizes);
    if (!sizes) return vla_error(VLA_ERR_NOMEM, "trainer: out of memory");
    int n = 0;
    for (int64_t i = 0; i < p->specs.n; i++)
        if (p->params[i].grad) sizes[n++] = p->params[i].spec->numel;
    *sizes_out = sizes, *n_out = n;
    return VLA_OK;
}

/* The log window and the EMA export buffer. */
static vla_status alloc_buffers(trainer *t) {
    t->capwin = t->o->log_freq > 0 ? t->o->log_freq : 1;
    t->win = calloc((size_t)t->capwin, sizeof *t->win);
    if (!t->win) return vla_error(VLA_ERR_NOMEM, "trainer: out of memory");
    t->scratch = malloc((size_t)t->p->n_weight_floats * sizeof(float));
    if (!t->scratch) return vla_error(VLA_ERR_NOMEM, "trainer: out of memory");
    return VLA_OK;
}

/* How the run's GEMMs read their operands (docs/precision.md). */
static json_t *precision_json(const vla_policy *p) {
    const vla_policy_precision *q = p->prec;
    vla_precision m = vla_policy_precision_mode(p);
    json_t *j = json_pack("{s:s, s:I}", "mode", vla_precision_name(m), "linears",
                          (json_int_t)(q ? q->n_linears : 0));
    if (j && m == VLA_PREC_FP8)
        json_object_set_new(j, "fp8", json_pack("{s:s, s:I, s:f, s:s, s:I, s:I, s:I}", "format", "HYBRID",
                                                "amax_history_len", (json_int_t)q->recipe.amax_history_len, "margin",
                                                (double)q->recipe.margin, "amax_compute_algo",
                                                q->recipe.most_recent ? "most_recent" : "max", "min_dim",
                                                (json_int_t)q->recipe.min_dim, "linears", (json_int_t)q->n_fp8,
                                                "tensors", (json_int_t)q->n));
    return j;
}

/* train_config.json of the checkpoints: the flags that define the run. */
static void describe_run(trainer *t, const char *kind, const char *config_name) {
    const vla_train_opts *o = t->o;
    char sd[256];
    json_t *optj = vla_train_opt_describe(t->opt);
    t->train_cfg = json_pack(
        "{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:i, s:I, s:I, s:I, s:o, s:s, s:i, s:b, s:b}", "dataset.root",
        o->dataset_root, "policy.type", kind, "policy.config", config_name, "batch_size", (json_int_t)o->batch_size,
        "accum", (json_int_t)o->accum, "steps", (json_int_t)o->steps, "seed", (json_int_t)o->seed, "num_workers",
        o->num_workers, "save_freq", (json_int_t)o->save_freq, "log_freq", (json_int_t)o->log_freq, "eval_freq",
        (json_int_t)o->eval_freq, "optimizer", optj, "scheduler", vla_schedule_describe(&t->sched, sd, sizeof sd),
        "world", t->world, "skip_nonfinite", o->skip_nonfinite, "augment", o->augment);
    if (t->train_cfg) json_object_set_new(t->train_cfg, "device", json_string(t->p->tops->name));
    if (t->train_cfg) json_object_set_new(t->train_cfg, "precision", precision_json(t->p));
    if (t->train_cfg && o->gradient_checkpointing)
        json_object_set_new(t->train_cfg, "gradient_checkpointing", json_true());
    if (t->train_cfg && o->augment_shift > 0)
        json_object_set_new(t->train_cfg, "augment_shift", json_integer(o->augment_shift));
    if (t->train_cfg && o->token_budget > 0)
        json_object_set_new(t->train_cfg, "token_budget", json_integer((json_int_t)o->token_budget));
    if (t->train_cfg && o->weights) json_object_set_new(t->train_cfg, "dataset.weights", json_string(o->weights));
    /* what a resume reads back: the steps the schedule is planned for, and the command's flags */
    if (t->train_cfg)
        json_object_set_new(t->train_cfg, "schedule_steps",
                            json_integer(o->schedule_steps > 0 ? o->schedule_steps : o->steps));
    if (t->train_cfg && o->run_flags) json_object_set(t->train_cfg, "flags", (json_t *)o->run_flags);
}

/* Resume from the checkpoint found, or start a fresh output directory. */
static vla_status start_or_resume(trainer *t, bool have_ck, const vla_ckpt_info *ck, int64_t *start_step) {
    *start_step = 0;
    if (have_ck) {
        VLA_TRY(load_checkpoint(t, ck, start_step));
        if (t->rank == 0)
            VLA_INFO("resuming from %s (step %lld, %lld skipped)", ck->dir, (long long)*start_step,
                     (long long)t->skipped);
    } else if (t->rank == 0) {
        VLA_TRY(vla_mkdirs(t->o->output_dir));
        VLA_TRY(vla_ckpt_cleanup(t->o->output_dir));
    }
    return VLA_OK;
}

/* The output directory (base/run_dir.h): a default one made unique on rank 0
 * and broadcast; a named one, unless resumed, empty or moved aside. */
static vla_status claim_output_dir(trainer *t) {
    vla_status st = VLA_OK;
    if (t->rank == 0) {
        t->made_dir = !t->opts.output_dir || !vla_path_exists(t->opts.output_dir) || t->opts.overwrite;
        if (!t->opts.output_dir)
            st = vla_run_dir_default("train", t->opts.job_name, t->out_dir, sizeof t->out_dir);
        else if (snprintf(t->out_dir, sizeof t->out_dir, "%s", t->opts.output_dir) >= (int)sizeof t->out_dir)
            st = vla_error(VLA_ERR_INVALID_ARG, "--output_dir: path too long");
        else if (!t->opts.resume)
            st = vla_run_dir_claim(t->out_dir, t->opts.overwrite, "continue it with --resume=true, ", t->moved_aside,
                                   sizeof t->moved_aside);
        if (st == VLA_OK && t->moved_aside[0])
            VLA_INFO("--overwrite=true: moved the previous run in %s aside to %s", t->out_dir, t->moved_aside);
    }
    VLA_TRY(vla_comm_agree(t->comm, st, "output directory"));
    if (t->world > 1) VLA_TRY(vla_comm_bcast(t->comm, t->out_dir, sizeof t->out_dir, VLA_COMM_BYTE, 0));
    t->opts.output_dir = t->out_dir;
    return VLA_OK;
}

/* The peak learning rate when --optimizer.lr is not given: a resumed run's
 * is its checkpoint's (so a run started under other defaults goes on with
 * what it had); weights from --policy.pretrained_path are fine-tuned at the
 * family's published lr; a model trained from scratch gets the from-scratch
 * lr for its size (vla_train_opt_scratch_lr). */
static vla_status default_lr(trainer *t, const char *kind, const vla_ckpt_info *ck, double *lr) {
    const vla_policy_family *f = vla_policy_family_find(kind);
    if (!f) return vla_error(VLA_ERR_INVALID_ARG, "unknown policy family '%s'", kind);
    if (ck) {
        char path[VLA_CKPT_PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/pretrained_model/train_config.json", ck->dir);
        json_t *root = NULL;
        VLA_TRY(vla_json_load_file(path, &root));
        json_t *v = json_object_get(json_object_get(root, "optimizer"), "lr");
        *lr = json_is_number(v) ? json_number_value(v) : 0;
        json_decref(root);
        if (!(*lr > 0)) return vla_error(VLA_ERR_FORMAT, "%s: no optimizer.lr > 0 to resume with", path);
        snprintf(t->lr_note, sizeof t->lr_note, "the checkpoint's");
        return VLA_OK;
    }
    if (t->o->pretrained_path) {
        *lr = f->train.lr;
        snprintf(t->lr_note, sizeof t->lr_note, "%s's fine-tuning default, for --policy.pretrained_path", kind);
        return VLA_OK;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < t->p->specs.n; i++) n += t->p->params[i].spec->numel;
    *lr = vla_train_opt_scratch_lr(n);
    snprintf(t->lr_note, sizeof t->lr_note, "from-scratch default for %.1fM params; fine-tuning from "
             "--policy.pretrained_path defaults to %g", (double)n / 1e6, f->train.lr);
    return VLA_OK;
}

static vla_status setup(trainer *t, int64_t *start_step) {
    const vla_train_opts *o = t->o;
    const struct { const char *flag; int64_t v, min; } lim[] = {
        {"batch_size", o->batch_size, 1}, {"steps", o->steps, 1},
        {"gradient_accumulation_steps", o->accum, 1}, {"token_budget", o->token_budget, 0}};
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
        if (lim[i].v < lim[i].min)
            return vla_error(VLA_ERR_INVALID_ARG, "--%s=%lld: must be at least %lld", lim[i].flag, (long long)lim[i].v,
                             (long long)lim[i].min);
    if (!o->dataset_root) return vla_error(VLA_ERR_INVALID_ARG, "--dataset.root=DIR is required");
    VLA_TRY(vla_comm_init(NULL, &t->comm));
    t->rank = vla_comm_rank(t->comm), t->world = vla_comm_world(t->comm);
    vla_log_set_rank(t->world > 1 ? t->rank : -1);
    VLA_TRY(claim_output_dir(t));

    vla_policy_config cfg;
    vla_ckpt_info ck = {0};
    bool have_ck = false;
    VLA_TRY(load_config(t, &cfg, &ck, &have_ck));
    if (o->policy_type && strcmp(o->policy_type, vla_policy_config_family_name(&cfg)) != 0)
        return vla_error(VLA_ERR_INVALID_ARG, "--policy.type=%s but config '%s' is a %s policy", o->policy_type,
                         cfg.name, vla_policy_config_family_name(&cfg));
    if (o->n_action_steps > cfg.action.horizon)
        return vla_error(VLA_ERR_INVALID_ARG, "--policy.n_action_steps=%d: policy '%s' predicts chunks of %lld actions "
                         "(action.horizon); give 1..%lld", o->n_action_steps, cfg.name, (long long)cfg.action.horizon,
                         (long long)cfg.action.horizon);
    VLA_TRY(open_dataset_and_policy(t, &cfg));
    VLA_TRY(create_loader(t));

    /* optimizer over the trainable tensors, and the gradient buckets */
    vla_policy *p = t->p;
    int64_t *sizes = NULL;
    int n = 0;
    const char *kind = vla_policy_config_family_name(&cfg);
    double lr = o->lr;
    if (lr <= 0) VLA_TRY(default_lr(t, kind, have_ck ? &ck : NULL, &lr));
    else snprintf(t->lr_note, sizeof t->lr_note, "--optimizer.lr");
    VLA_TRY(trainable_sizes(p, &sizes, &n));
    vla_train_opt_overrides ov = {lr, o->weight_decay, o->clip_norm, o->ema_decay > 0 ? o->ema_decay : 0};
    vla_status st = vla_train_opt_create_for_policy(t->comm, p, &ov, &t->opt);
    size_t bucket_bytes = o->bucket_mb > 0 ? (size_t)(o->bucket_mb * 1048576.0) : 0;
    if (st == VLA_OK) st = vla_grad_buckets_create(t->comm, p->tops, p->grads, sizes, n, bucket_bytes, &t->gb);
    if (st == VLA_OK && !(t->bucket_of = vla_train_step_bucket_map(p)))
        st = vla_error(VLA_ERR_NOMEM, "trainer: out of memory");
    free(sizes);
    VLA_TRY(st);
    VLA_TRY(alloc_buffers(t));

    /* schedule: the policy's, with the optimizer's peak; a short run warms up over 5% of it */
    if (o->constant_lr) {
        t->sched = (vla_schedule){VLA_SCHED_CONSTANT, 0, 0, 0, 0, 0};
    } else {
        int64_t plan = o->schedule_steps > 0 ? o->schedule_steps : o->steps; /* a resumed run's saved plan */
        VLA_TRY(vla_schedule_defaults(kind, plan, &t->sched));
        if (o->warmup_steps >= 0) t->sched.warmup_steps = o->warmup_steps;
        else if (t->sched.warmup_steps > plan / 10) t->sched.warmup_steps = (plan + 19) / 20;
        if (t->sched.warmup_steps > t->sched.decay_steps) t->sched.warmup_steps = t->sched.decay_steps;
    }
    double peak = vla_train_opt_peak_lr(t->opt);
    double ratio = t->sched.peak_lr > 0 ? peak / t->sched.peak_lr : 1;
    t->sched.init_lr = vla_schedule_warmup_start(kind, peak, t->sched.warmup_steps);
    t->sched.end_lr *= ratio;
    t->sched.peak_lr = peak;
    if (o->constant_lr) t->sched.init_lr = t->sched.end_lr = peak;
    VLA_TRY(vla_schedule_validate(&t->sched));
    if (t->rank == 0 && !o->constant_lr && o->schedule_steps > 0 && o->steps > o->schedule_steps)
        VLA_WARN("steps %lld..%lld run past the %lld the schedule was planned for, at its final learning rate %g "
                 "(--resume.allow_changes=true plans it anew over --steps; docs/train.md \"Resuming\")",
                 (long long)o->schedule_steps + 1, (long long)o->steps, (long long)o->schedule_steps, t->sched.end_lr);

    describe_run(t, kind, cfg.name);
    return start_or_resume(t, have_ck, &ck, start_step);
}

static void mean_losses(const double *l, int64_t n, double *first, double *last) {
    int64_t k = n < 10 ? n : 10;
    double a = 0, b = 0;
    for (int64_t i = 0; i < k; i++) a += l[i], b += l[n - k + i];
    *first = k ? a / (double)k : NAN;
    *last = k ? b / (double)k : NAN;
}

/* Before the first step: the run's sizes into the result, the metrics files
 * and the header line (rank 0), the loss record, the loader threads, the clocks. */
static vla_status begin_run(trainer *t, int64_t start, vla_train_result *res) {
    const vla_train_opts *o = t->o;
    vla_policy *p = t->p;
    res->start_step = start;
    res->rank = t->rank, res->world = t->world;
    res->n_samples = t->n_rows;
    for (int64_t i = 0; i < p->specs.n; i++) {
        res->n_params += p->params[i].spec->numel;
        if (p->params[i].grad) res->n_trainable += p->params[i].spec->numel;
    }
    if (t->rank == 0) {
        VLA_TRY(vla_metrics_open(&t->metrics, o->output_dir, COLS, NCOLS, o->resume ? start : -1));
        t->metrics_open = true;
        if (o->resume && o->resume_changes) /* --resume.allow_changes: what this session changed, at its first step */
            VLA_TRY(vla_metrics_note(&t->metrics, start, "resume_changes", o->resume_changes));
        char sd[256];
        vla_precision prec = vla_policy_precision_mode(p);
        VLA_INFO("train: %s (%lld params, %lld trainable) on %s: %lld frames, %lld episodes; batch %lld × %d "
                 "rank(s) × %lld accum, %lld steps, %s; lr %g (%s); device %s (%s%s), precision %s%s",
                 p->cfg.name, (long long)res->n_params, (long long)res->n_trainable, o->dataset_root,
                 (long long)t->n_rows, (long long)t->n_episodes, (long long)o->batch_size, t->world,
                 (long long)o->accum, (long long)o->steps, vla_schedule_describe(&t->sched, sd, sizeof sd),
                 vla_train_opt_peak_lr(t->opt), t->lr_note, p->tops->name,
                 o->device ? "--device" : "default: ", o->device ? "" : vla_backend_default_why(),
                 vla_precision_name(prec), p->recompute_layers ? ", gradient checkpointing" : "");
        /* the cpu backend runs bf16 GEMMs natively only with AVX512-BF16/AMX (tensor/cpu/gemm.h); FP8 never */
        bool cpu = !strcmp(p->tops->name, "cpu") || !strcmp(p->tops->name, "checked");
        if (cpu && (prec == VLA_PREC_FP8 || (prec == VLA_PREC_BF16 && !vla_gemm_bf16_native())))
            VLA_INFO("note: --precision=%s is emulated on this CPU (operands rounded, f32 GEMMs: %s): it trains "
                     "slower than fp32 here; it is for checking numerics, or for a GPU (docs/precision.md)",
                     vla_precision_name(prec),
                     prec == VLA_PREC_FP8 ? "no CPU has FP8 GEMMs" : "no AVX512-BF16 or AMX-BF16, see `vla version`");
        /* the run's flags from its first step, so a run stopped before its first checkpoint can resume */
        char cfg_path[VLA_CKPT_PATH_MAX + 32];
        snprintf(cfg_path, sizeof cfg_path, "%s/%s", o->output_dir, VLA_TRAIN_RUN_CONFIG);
        if (t->train_cfg) VLA_TRY(vla_json_write_file(cfg_path, t->train_cfg));
    }
    res->restarted = t->restarted;
    res->steps_planned = o->steps;
    res->peak_lr = vla_train_opt_peak_lr(t->opt);
    t->losses = calloc((size_t)(o->steps - start + 1), sizeof *t->losses);
    if (!t->losses) return vla_error(VLA_ERR_NOMEM, "trainer: out of memory");
    VLA_TRY(vla_loader_start(t->L));
    t->start = start;
    t->t_begin = vla_now_s();
    vla_meter_start(&t->meter, t->t_begin);
    return VLA_OK;
}

/* The step's micro-batches, from the loader (vla_train_step_source). */
static vla_status next_micro_batch(void *user, const vla_batch **b, bool *last, double *wait_s) {
    trainer *t = user;
    VLA_TRY(vla_loader_next(t->L, &t->cur, wait_s));
    *b = &t->cur->batch, *last = t->cur->last_of_step;
    return VLA_OK;
}

static void release_micro_batch(void *user, const vla_batch *b) {
    trainer *t = user;
    (void)b;
    vla_loader_release(t->L, t->cur);
    t->cur = NULL;
}

/* Closed-loop evaluation of the weights to export (collective), on rank 0;
 * its figures go into the metrics row. */
static vla_status evaluate(trainer *t, int64_t done_steps, double *row, vla_train_result *res) {
    const float *wexp = NULL;
    VLA_TRY(export_weights(t, &wexp)); /* collective */
    if (t->rank != 0) return VLA_OK;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/eval_model", t->o->output_dir);
    json_t *cfgj = config_json(t);
    vla_status st = vla_pretrained_write_dir(dir, t->p, wexp, cfgj);
    json_decref(cfgj);
    if (st == VLA_OK) st = t->o->eval_fn(t->o->eval_user, dir, done_steps, &row[C_EVS], &row[C_EVC], &row[C_EVR]);
    if (st != VLA_OK) return vla_error_context(st, "eval at step %lld", (long long)done_steps);
    t->evals = true;
    res->last_eval_success = row[C_EVS];
    fprintf(stderr, "eval step %lld: success %.1f%%, max coverage %.3f, reward %.2f\n", (long long)done_steps,
            100 * row[C_EVS], row[C_EVC], row[C_EVR]);
    return VLA_OK;
}

/* Rank 0: one metrics row (the loss is the mean of the log window) and the
 * progress line. */
static vla_status log_row(trainer *t, int64_t done_steps, double loss, double norm, double lr, double *row) {
    const vla_train_opts *o = t->o;
    double sps, wf;
    double now = vla_now_s();
    vla_meter_read(&t->meter, now, &sps, &wf);
    double shown = loss;
    if (t->nwin > 0) {
        double sum = 0;
        for (int64_t i = 0; i < t->nwin; i++) sum += t->win[i];
        shown = sum / (double)t->nwin;
    }
    t->nwin = 0;
    row[C_LOSS] = shown, row[C_GRAD] = norm, row[C_LR] = lr, row[C_SPS] = sps, row[C_WAIT] = wf;
    row[C_SKIP] = (double)t->skipped;
    VLA_TRY(vla_metrics_log(&t->metrics, done_steps, row));
    if (o->progress) {
        vla_progress pr = {done_steps, o->steps, shown, norm, lr, sps, wf,
                           vla_eta_s(now - t->t_begin, done_steps - t->start, o->steps - done_steps), t->skipped};
        char line[512];
        fprintf(stderr, "%s\n", vla_progress_format(&pr, line, sizeof line));
    }
    return VLA_OK;
}

/* Has the run passed --max_time_s (the slowest rank's clock decides)? */
static vla_status over_time_budget(trainer *t, int64_t done_steps, bool *over) {
    *over = false;
    if (t->o->max_time_s <= 0 || done_steps >= t->o->steps) return VLA_OK;
    double el = vla_now_s() - t->t_begin;
    if (t->world > 1) VLA_TRY(vla_comm_allreduce(t->comm, &el, &el, 1, VLA_COMM_F64, VLA_COMM_MAX));
    *over = el > t->o->max_time_s;
    return VLA_OK;
}

/* The pending step's results (train/step.h, vla_train_step_finish: its
 * verdict, a non-finite step's error among them), into this session's
 * record: its loss, the log window, a skipped step counted. */
static vla_status settle(trainer *t) {
    if (!t->pend) return VLA_OK;
    t->pend = false;
    const vla_train_step_out *out = &t->pend_out;
    VLA_TRY(vla_train_step_finish(&t->pend_in, &t->pend_out));
    if (out->skipped && t->rank == 0)
        VLA_WARN("step %lld: non-finite loss or gradients, step skipped (%lld so far)", (long long)t->pend_in.step + 1,
                 (long long)t->skipped + 1);
    t->skipped += out->skipped;
    t->losses[t->nl++] = out->loss;
    if (isfinite(out->loss) && t->nwin < t->capwin) t->win[t->nwin++] = out->loss;
    return VLA_OK;
}

/* One training step (step+1 of the run): gradients, update, bookkeeping,
 * eval, metrics, checkpoint. *stop is set when the run ends early (time
 * budget, or an injected stop). The step's results are read while the
 * next one runs (A STEP WITHOUT THE HOST, docs/train.md) unless this step
 * logs, evaluates, saves or ends the run: the device never waits for the
 * host between steps that do none of these. */
static vla_status train_step(trainer *t, int64_t step, vla_train_result *res, bool *stop) {
    const vla_train_opts *o = t->o;
    double lr = vla_schedule_lr(&t->sched, vla_train_opt_updates(t->opt));
    vla_train_step_in in = {.policy = t->p, .opt = t->opt, .buckets = t->gb, .bucket_of = t->bucket_of, .comm = t->comm,
                            .source = {next_micro_batch, release_micro_batch, t}, .lr = lr, .step = step,
                            .skip_nonfinite = o->skip_nonfinite, .interrupt = o->interrupt,
                            .defer_result = true};
    vla_train_step_out out;
    vla_status sst = vla_train_step(&in, &out);
    if (sst != VLA_OK) {
        vla_train_step_abandon(&in, &out);
        vla_status pst = settle(t); /* the step before may be why (a non-finite step, reported a step late) */
        if (pst != VLA_OK) return pst;
    }
    if (sst == VLA_ERR_NOMEM) /* what to do about it, beside what ran out */
        return vla_error_context(sst, "at --batch_size=%lld on %s (%s--batch_size=%lld "
                                 "--gradient_accumulation_steps=%lld trains on the same samples per update; `vla plan "
                                 "--config=%s --batch=%lld --gpus=1 --precision=%s` budgets the memory)",
                                 (long long)o->batch_size, t->p->tops->name,
                                 t->p->recompute_layers ? "" : "--gradient_checkpointing keeps one layer's activations "
                                 "instead of every layer's; ", (long long)(o->batch_size > 1 ? o->batch_size / 2 : 1),
                                 (long long)(o->batch_size > 1 ? o->accum * 2 : o->accum), t->p->cfg.name,
                                 (long long)o->batch_size, vla_precision_name(o->precision));
    VLA_TRY(sst);
    vla_status pst = settle(t); /* the step before, now that this one is queued behind it */
    if (pst != VLA_OK) {
        vla_train_step_abandon(&in, &out);
        return pst;
    }
    t->pend = true, t->pend_in = in, t->pend_out = out;
    bool interrupted = out.interrupted;
    t->micro_batches += out.micro_batches, t->micro_tokens += out.tokens;
    VLA_TRY(vla_sampler_advance(&t->track));
    int64_t done_steps = step + 1;
    t->wait_total += out.wait_s;
    vla_meter_add(&t->meter, out.samples * t->world, out.wait_s);

    double row[NCOLS];
    for (int i = 0; i < NCOLS; i++) row[i] = NAN;
    bool log_now = o->log_freq > 0 && (done_steps % o->log_freq == 0 || done_steps == o->steps);
    bool eval_now = o->eval_freq > 0 && o->eval_fn && done_steps % o->eval_freq == 0 && !interrupted;
    bool save_now = (o->save_freq > 0 && done_steps % o->save_freq == 0) || done_steps == o->steps || interrupted;
    /* this step's results now when it is logged, evaluated or saved (a checkpoint only after its
     * verdict) or ends the run; otherwise they arrive while the next step runs */
    if (log_now || eval_now || save_now || !out.pending) VLA_TRY(settle(t));
    if (eval_now) {
        VLA_TRY(evaluate(t, done_steps, row, res));
        log_now = true;
    }
    if (log_now && t->rank == 0) VLA_TRY(log_row(t, done_steps, t->pend_out.loss, t->pend_out.grad_norm, lr, row));
    bool over_time;
    VLA_TRY(over_time_budget(t, done_steps, &over_time));
    if (save_now || over_time) {
        VLA_TRY(settle(t));
        VLA_TRY(save_checkpoint(t, done_steps, lr, res->last_ckpt, sizeof res->last_ckpt));
    }
    if (interrupted && done_steps < o->steps) { /* (after the last step the run is complete anyway) */
        res->interrupted = out.signal ? out.signal : SIGTERM; /* a rank stopped by another's signal */
        *stop = true;
        return VLA_OK;
    }
    if (over_time) {
        res->time_budget_hit = true;
        if (t->rank == 0)
            VLA_WARN("time budget of %.0f s reached after step %lld of %lld: checkpoint written, stopping",
                     o->max_time_s, (long long)done_steps, (long long)o->steps);
        *stop = true;
        return VLA_OK;
    }
    /* tests: a kill (never returns) or a stop as if killed, after this step */
    if (vla_fault_at(VLA_FAULT_TRAIN_STEP_END, done_steps) == VLA_FAULT_STOP) *stop = true;
    return VLA_OK;
}

/* --profile: the profiled steps' table on stderr and in OUTPUT/profile.json (rank 0; every rank stops its profile). */
static vla_status profile_finish(trainer *t, int64_t steps) {
    vla_profile prof;
    VLA_TRY(vla_profile_stop(&prof));
    vla_status st = VLA_OK;
    if (t->rank == 0 && steps > 0) {
        fprintf(stderr, "vla train: steps %lld to %lld profiled (%s, %s):\n", (long long)t->prof_first + 1,
                (long long)(t->prof_first + steps), t->p->tops->name, vla_precision_name(t->o->precision));
        vla_profile_print_table(stderr, &prof, (double)steps, "step", 20);
        char *buf = NULL, path[VLA_CKPT_PATH_MAX + 32];
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f) {
            st = vla_error(VLA_ERR_NOMEM, "--profile: out of memory for profile.json");
        } else {
            fprintf(f, "{\"first_step\":%lld,\"steps\":%lld,\"backend\":\"%s\",\"precision\":\"%s\",\"batch_size\":%lld,",
                    (long long)t->prof_first + 1, (long long)steps, t->p->tops->name,
                    vla_precision_name(t->o->precision), (long long)t->o->batch_size);
            vla_profile_print_json_members(f, &prof, (double)steps, prof.n_rows);
            fprintf(f, "}\n");
            fclose(f);
            snprintf(path, sizeof path, "%s/profile.json", t->out_dir);
            st = vla_write_file_atomic(path, buf, len);
            if (st == VLA_OK) VLA_INFO("--profile: where the time goes per step is in %s", path);
            free(buf);
        }
    }
    vla_profile_free(&prof);
    return st;
}

/* After the last step: the result's figures, then (rank 0) the metrics
 * files closed and the plots drawn from them. */
static void finish_run(trainer *t, int64_t steps_done, vla_train_result *res) {
    res->seconds = vla_now_s() - t->t_begin;
    vla_grad_buckets_stats gs = vla_grad_buckets_get_stats(t->gb);
    res->comm_exposed_s = gs.total_exposed_s;
    res->n_buckets = gs.n_buckets;
    res->buckets_started_in_backward = gs.started_before_wait;
    res->opt_state_bytes = vla_train_opt_state_bytes(t->opt);
    res->steps_done = steps_done;
    res->skipped = t->skipped;
    res->samples_per_s =
        res->seconds > 0 ? (double)(res->steps_done * t->o->batch_size * t->o->accum * t->world) / res->seconds : 0;
    res->data_wait_frac = res->seconds > 0 ? t->wait_total / res->seconds : 0;
    res->micro_batches_per_step = steps_done > 0 ? (double)t->micro_batches / (double)steps_done : 0;
    res->tokens_per_micro_batch = t->micro_batches > 0 ? (double)t->micro_tokens / (double)t->micro_batches : 0;
    mean_losses(t->losses, t->nl, &res->first_loss, &res->last_loss);
    if (t->rank == 0) {
        vla_metrics_close(&t->metrics);
        t->metrics_open = false;
        plots(t, t->evals);
    }
}

vla_status vla_train(const vla_train_opts *o, vla_train_result *res) {
    memset(res, 0, sizeof *res);
    res->last_eval_success = NAN;
    trainer t;
    memset(&t, 0, sizeof t);
    t.opts = *o;
    t.o = &t.opts;
    int64_t start = 0, step = 0;
    vla_status st = setup(&t, &start);
    if (st == VLA_OK) st = begin_run(&t, start, res);
    if (st != VLA_OK) goto done;
    /* --profile: N steps from the third of this session (the first ones warm arenas, casts and plans up);
     * fewer when the run is shorter */
    t.prof_first = start + (o->steps - start > 2 ? 2 : 0);
    t.prof_end = o->profile_steps > 0 ? t.prof_first + o->profile_steps : t.prof_first;
    if (t.prof_end > o->steps) t.prof_end = o->steps;
    for (step = start; step < o->steps;) {
        bool stop = false;
        if (step == t.prof_first && t.prof_end > t.prof_first) vla_profile_start();
        st = train_step(&t, step, res, &stop);
        step++;
        if (t.prof_end > t.prof_first && step > t.prof_first && (step == t.prof_end || stop || st != VLA_OK)) {
            if (st == VLA_OK) {
                st = profile_finish(&t, step - t.prof_first);
            } else { /* a failed step: no table (the run's error is what matters) */
                vla_profile prof;
                if (vla_profile_stop(&prof) == VLA_OK) vla_profile_free(&prof);
            }
            t.prof_end = t.prof_first; /* done */
        }
        if (st != VLA_OK) goto done;
        if (stop) break;
    }
    if ((st = settle(&t)) != VLA_OK) goto done; /* (a run stopped by a fault point after a deferred step) */
    finish_run(&t, step - start, res);
done:
    if (t.pend) { /* an error after a deferred step: its read closed (ops.h, at most VLA_READS_IN_FLIGHT open) */
        t.pend = false;
        vla_train_step_abandon(&t.pend_in, &t.pend_out);
    }
    if (st != VLA_OK && t.made_dir && !t.opts.resume) rmdir(t.out_dir); /* only when still empty */
    snprintf(res->output_dir, sizeof res->output_dir, "%s", t.out_dir);
    snprintf(res->moved_aside, sizeof res->moved_aside, "%s", t.moved_aside);
    /* rows logged so far reach the files even when an error aborts the job below */
    if (t.metrics_open) vla_metrics_close(&t.metrics);
    if (st != VLA_OK && t.comm && t.world > 1) {
        VLA_ERROR("%s", vla_error_message());
        vla_comm_abort(t.comm, 1);
    }
    /* keep the message: closing, finalize and frees do not touch it */
    trainer_free(&t);
    return st;
}
