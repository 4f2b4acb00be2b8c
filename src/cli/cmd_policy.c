/* cmd_policy.c — `vla policy …`: look at a policy config without building
 * the model. `info` counts parameters per module group (from the parameter
 * inventory, nothing allocated) and budgets memory for weights, gradients,
 * AdamW state and activations at a batch size. */
#include "cli/cli.h"
#include "base/fsutil.h"
#include "base/json.h"
#include "distributed/zero1.h"
#include "policy/config.h"
#include "policy/memory.h"
#include "policy/param_spec.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/published.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void human(char *buf, size_t cap, double x, const char *unit) {
    const char *pre[] = {"", "k", "M", "G", "T"};
    int i = 0;
    double base = unit[0] == 'B' ? 1024.0 : 1000.0;
    while (x >= base && i < 4) x /= base, i++;
    if (unit[0] == 'B' && i > 0) snprintf(buf, cap, "%.2f %siB", x, pre[i]);
    else snprintf(buf, cap, "%.*f %s%s", i ? 2 : 0, x, pre[i], unit);
}

/* What `policy info` reports, computed once for both output forms. */
typedef struct {
    const vla_policy_config *cfg;
    const vla_param_list *plist;
    const vla_param_counts *cnt;
    const vla_activation_estimate *act;
    const vla_flops_estimate *fl;
    const double *mem; /* bytes, in the order of mem_names */
    int64_t batch, img_tokens;
    bool list;         /* every parameter tensor too */
    const char *pretrained;                 /* --policy.pretrained_path, or NULL */
    const vla_published_report *ckpt;       /* its binding (names, shapes, dtypes checked) */
    vla_pub_format fmt;
    vla_pub_stats_source stats;             /* where its normalisation statistics come from (NONE: a base) */
    const vla_pretrained_meta *meta;        /* the features those statistics describe */
    bool state_only;                        /* a vla.c checkpoint trained without cameras */
} info_report;

/* Modules a state-only policy allocates (and saves) but never runs: with no
 * image there is nothing for the vision tower and its projection to do. */
static bool group_idle(const info_report *r, int g) {
    return r->state_only && (g == VLA_GROUP_VISION || g == VLA_GROUP_CONNECTOR);
}

/* Bytes. The activations, copies and device peaks are measured: the policy's training step run on the meta
 * backend sized as cuda (policy/memory.h). *_bf16: `vla train --precision=bf16` on cuda, whose blocks keep their
 * normed inputs and MLP hidden as bf16 copies alone (docs/precision.md, "Kept copies"). activations: the
 * arenas' high-water mark (saved for backward and the backward's scratch); copies: the rest the policy holds at
 * its peak beside weights and gradients (GEMM-ready weight copies, cast buffers, FP8 state, the arenas'
 * headroom); device_peak: all the policy allocates at once (weights, gradients, activations, copies; AdamW's
 * moments are the optimizer's, adamw_f32). */
enum { MEM_COUNT = 18 };
static const char *const mem_names[MEM_COUNT] = {
    "weights_f32", "weights_bf16", "grads_f32", "grads_bf16", "adamw_f32", "activations_f32", "activations_bf16",
    "activations_gradient_checkpointing_f32", "activations_gradient_checkpointing_bf16", "copies_f32", "copies_bf16",
    "device_peak_f32", "device_peak_bf16", "device_peak_gradient_checkpointing_f32",
    "device_peak_gradient_checkpointing_bf16",
    /* inference as vla serve, vla eval and the robot library run it, one observation, bf16 on cuda: what stays
     * on the device between chunks and the most at once (no gradients; the f32 weights and their copies) */
    "inference_resident_bf16", "inference_peak_bf16",
    /* the gradient shard AdamW's update scales into (distributed/zero1.h, vla_zero1_budget_bytes; one rank) */
    "optimizer_grad_shard_f32"};

/* mem[5..16] measured: training at `batch`, inference at one observation (the order of mem_names) */
static vla_status measure_memory(const vla_policy_config *cfg, int64_t batch, double *mem) {
    for (int k = 0; k < 4; k++) {
        bool bf16 = k & 1, remat = k >= 2;
        vla_memory_opts o = {.sized_as = "cuda", .precision = bf16 ? VLA_PREC_BF16 : VLA_PREC_FP32,
                             .batch = (int32_t)batch, .recompute = remat};
        vla_memory_use u;
        VLA_TRY(vla_policy_memory_measure(cfg, &o, &u));
        mem[5 + k] = (double)u.activations;
        mem[11 + k] = (double)u.peak;
        if (!remat) mem[9 + k] = (double)u.peak - (double)u.params - (double)u.activations;
    }
    vla_memory_opts o = {.sized_as = "cuda", .precision = VLA_PREC_BF16, .batch = 1};
    vla_memory_use u;
    VLA_TRY(vla_policy_memory_measure_inference(cfg, &o, &u));
    mem[15] = (double)u.held, mem[16] = (double)u.peak;
    return VLA_OK;
}

/* Per module group: counts, tokens, activations and FLOPs. */
static json_t *groups_json(const info_report *r) {
    const vla_param_counts *cnt = r->cnt;
    json_t *groups = json_object();
    for (int g = 0; g < VLA_GROUP_COUNT; g++) {
        if (!cnt->tensors[g]) continue;
        json_t *go = json_object();
        json_object_set_new(go, "params", json_integer(cnt->params[g]));
        json_object_set_new(go, "trainable", json_integer(cnt->trainable[g]));
        json_object_set_new(go, "tensors", json_integer(cnt->tensors[g]));
        json_object_set_new(go, "tokens_per_sample", json_integer(r->act->tokens[g]));
        json_object_set_new(go, "activation_floats_per_sample", json_real(r->act->floats_per_sample[g]));
        json_object_set_new(go, "peak_layer_floats_per_sample", json_real(r->act->transient_per_sample[g]));
        json_object_set_new(go, "gradient_checkpointing_floats_per_sample", json_real(r->act->recompute_per_sample[g]));
        json_object_set_new(go, "forward_flops_per_sample", json_real(r->fl->forward[g]));
        json_object_set_new(go, "train_flops_per_sample", json_real(r->fl->train[g]));
        json_object_set_new(go, "runs", json_boolean(!group_idle(r, g)));
        json_object_set_new(groups, vla_param_group_name((vla_param_group)g), go);
    }
    return groups;
}

static json_t *params_json(const vla_param_list *plist) {
    json_t *arr = json_array();
    for (int64_t i = 0; i < plist->n; i++) {
        const vla_param_spec *s = &plist->items[i];
        json_t *po = json_object(), *shape = json_array();
        for (int d = 0; d < s->ndim; d++) json_array_append_new(shape, json_integer(s->shape[d]));
        json_object_set_new(po, "name", json_string(s->name));
        json_object_set_new(po, "shape", shape);
        json_object_set_new(po, "group", json_string(vla_param_group_name(s->group)));
        json_object_set_new(po, "trainable", json_boolean(s->trainable));
        json_array_append_new(arr, po);
    }
    return arr;
}

/* --json: one object. */
static void print_json(const info_report *r) {
    const vla_policy_config *cfg = r->cfg;
    json_t *o = json_object();
    json_object_set_new(o, "policy", json_string(vla_policy_config_family_name(cfg)));
    json_object_set_new(o, "name", json_string(cfg->name));
    json_object_set_new(o, "config", json_string(r->pretrained ? r->pretrained : cfg->path));
    json_object_set_new(o, "cameras", json_integer(cfg->vision.cameras));
    json_object_set_new(o, "batch", json_integer(r->batch));
    json_object_set_new(o, "groups", groups_json(r));
    json_object_set_new(o, "total_params", json_integer(r->cnt->total_params));
    json_object_set_new(o, "trainable_params", json_integer(r->cnt->total_trainable));
    json_object_set_new(o, "tensors", json_integer(r->cnt->total_tensors));
    json_t *tok = json_object();
    json_object_set_new(tok, "image", json_integer(r->img_tokens));
    json_object_set_new(tok, "text", json_integer(cfg->language.max_tokens));
    json_object_set_new(tok, "action", json_integer(cfg->action.horizon));
    json_object_set_new(o, "tokens_per_sample", tok);
    json_t *m = json_object();
    for (int i = 0; i < MEM_COUNT; i++) json_object_set_new(m, mem_names[i], json_real(r->mem[i]));
    json_object_set_new(o, "memory_bytes", m);
    json_t *f = json_object();
    json_object_set_new(f, "forward_per_sample", json_real(r->fl->total_forward));
    json_object_set_new(f, "train_per_sample", json_real(r->fl->total_train));
    json_object_set_new(f, "train_per_step", json_real(r->fl->total_train * (double)r->batch));
    json_object_set_new(f, "sample_actions_per_sample", json_real(r->fl->sample));
    json_object_set_new(o, "flops", f);
    if (r->list) json_object_set_new(o, "params", params_json(r->plist));
    if (r->pretrained) {
        const vla_published_report *c = r->ckpt;
        json_object_set_new(o, "pretrained",
                            json_pack("{s:s, s:s, s:i, s:I, s:s, s:I, s:I, s:I, s:I, s:I}", "path", r->pretrained,
                                      "format", vla_pub_format_name(r->fmt), "files", c->n_files, "file_bytes",
                                      (json_int_t)c->file_bytes, "prefix", c->prefix, "file_tensors",
                                      (json_int_t)c->file_tensors, "bound", (json_int_t)c->bound, "converted",
                                      (json_int_t)c->converted, "aliased", (json_int_t)c->aliased, "unused",
                                      (json_int_t)c->unused));
        const vla_pretrained_meta *sm = r->meta;
        json_object_set_new(json_object_get(o, "pretrained"), "statistics",
                            r->stats == VLA_PUB_STATS_NONE
                                ? json_pack("{s:s}", "source", "none")
                                : json_pack("{s:s, s:I, s:I, s:i, s:i, s:s}", "source",
                                            vla_pub_stats_source_name(r->stats), "state_width",
                                            (json_int_t)sm->state_width, "action_width", (json_int_t)sm->action_width,
                                            "cameras", sm->cameras, "embodiment", (int)sm->embodiment,
                                            "embodiment_name", sm->embodiment_name));
    }
    char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
    printf("%s\n", text ? text : "{}");
    free(text);
    json_decref(o);
}

/* The header, and parameters per module group with their weight bytes. */
static void print_groups_text(const info_report *r) {
    const vla_policy_config *cfg = r->cfg;
    const vla_param_counts *cnt = r->cnt;
    char a[32], b[32];
    printf("policy %s (%s, %s)\n", cfg->name, vla_policy_config_family_name(cfg),
           r->pretrained ? r->pretrained : cfg->path);
    printf("tokens per sample: image %lld (%lld camera%s%s), text %lld, action %lld\n\n", (long long)r->img_tokens,
           (long long)cfg->vision.cameras, cfg->vision.cameras == 1 ? "" : "s",
           r->state_only ? ": a state-only policy" : "", (long long)cfg->language.max_tokens,
           (long long)cfg->action.horizon);
    printf("%-11s %14s %14s %8s %12s %12s\n", "group", "params", "trainable", "tensors", "weights f32", "bf16");
    for (int g = 0; g < VLA_GROUP_COUNT; g++) {
        if (!cnt->tensors[g]) continue;
        human(a, sizeof a, 4.0 * cnt->params[g], "B");
        human(b, sizeof b, 2.0 * cnt->params[g], "B");
        printf("%-11s %14lld %14lld %8lld %12s %12s%s\n", vla_param_group_name((vla_param_group)g),
               (long long)cnt->params[g], (long long)cnt->trainable[g], (long long)cnt->tensors[g], a, b,
               group_idle(r, g) ? "  not run" : "");
    }
    human(a, sizeof a, r->mem[0], "B");
    human(b, sizeof b, r->mem[1], "B");
    printf("%-11s %14lld %14lld %8lld %12s %12s\n", "total", (long long)cnt->total_params,
           (long long)cnt->total_trainable, (long long)cnt->total_tensors, a, b);
    human(a, sizeof a, (double)cnt->total_params, "");
    human(b, sizeof b, (double)cnt->total_trainable, "");
    printf("(%s parameters, %s trainable)\n", a, b);
    if (r->state_only) {
        int64_t idle = cnt->params[VLA_GROUP_VISION] + cnt->params[VLA_GROUP_CONNECTOR];
        printf("not run: %lld parameters of vision and connector, allocated and saved with the checkpoint (the policy "
               "builds every module) but never run: the policy was trained without cameras, so its FLOPs, tokens and "
               "activations count none\n", (long long)idle);
    }
    printf("\n");
}

/* Training memory at the batch size: weights, gradients, AdamW, and what the step measured allocates. */
static void print_memory_text(const info_report *r) {
    const double *mem = r->mem;
    char a[32], b[32];
    printf("training memory at batch %lld, prompts of %lld text tokens (measured: the step run on the meta backend "
           "as cuda):\n", (long long)r->batch, (long long)r->cfg->language.max_tokens);
    human(a, sizeof a, mem[0], "B"), human(b, sizeof b, mem[1], "B");
    printf("  weights            f32 %12s   bf16 %12s\n", a, b);
    human(a, sizeof a, mem[2], "B"), human(b, sizeof b, mem[3], "B");
    printf("  grads (trainable)  f32 %12s   bf16 %12s\n", a, b);
    human(a, sizeof a, mem[4], "B"), human(b, sizeof b, mem[17], "B");
    printf("  AdamW m+v          f32 %12s   and the gradient shard its update scales into %s\n", a, b);
    human(a, sizeof a, mem[5], "B"), human(b, sizeof b, mem[6], "B");
    printf("  activations        f32 %12s   bf16 on cuda %12s   (saved for backward and the backward's scratch)\n",
           a, b);
    human(a, sizeof a, mem[9], "B"), human(b, sizeof b, mem[10], "B");
    printf("  copies             f32 %12s   bf16 on cuda %12s   (weights' GEMM-ready copies, cast buffers, the "
           "arenas' headroom)\n", a, b);
    human(a, sizeof a, mem[11] + mem[4] + mem[17], "B"), human(b, sizeof b, mem[12] + mem[4] + mem[17], "B");
    printf("  total, training    f32 %12s   bf16 on cuda %12s   (f32 weights, gradients and the optimizer)\n", a, b);
    human(a, sizeof a, mem[7], "B"), human(b, sizeof b, mem[8], "B");
    printf("  with --gradient_checkpointing:\n");
    printf("    activations      f32 %12s   bf16 on cuda %12s\n", a, b);
    human(a, sizeof a, mem[13] + mem[4] + mem[17], "B"), human(b, sizeof b, mem[14] + mem[4] + mem[17], "B");
    printf("    total, training  f32 %12s   bf16 on cuda %12s\n", a, b);
    human(a, sizeof a, mem[15], "B"), human(b, sizeof b, mem[16], "B");
    printf("inference, one observation (vla serve, vla eval, the robot library: no gradients), bf16 on cuda:\n"
           "  resident %s between chunks (f32 weights, their bf16 copies, the sampling arenas), peak %s\n", a, b);
}

/* Activations per module group, and the model FLOPs. */
static void print_compute_text(const info_report *r) {
    const vla_activation_estimate *act = r->act;
    const vla_flops_estimate *fl = r->fl;
    char a[32], b[32], c[32], d[32];
    printf("\nactivations per sample by group (floats saved for backward; peak single layer; a model estimate by layer: the totals above are measured):\n");
    for (int g = 0; g < VLA_GROUP_COUNT; g++) {
        if (!r->cnt->tensors[g]) continue;
        human(a, sizeof a, act->floats_per_sample[g], "");
        human(b, sizeof b, act->transient_per_sample[g], "");
        printf("  %-11s %6lld tokens  saved %10s  peak layer %10s\n", vla_param_group_name((vla_param_group)g),
               (long long)act->tokens[g], a, b);
    }
    human(a, sizeof a, fl->total_train, "FLOP");
    human(b, sizeof b, fl->total_train * (double)r->batch, "FLOP");
    human(c, sizeof c, fl->total_forward, "FLOP");
    human(d, sizeof d, fl->sample, "FLOP");
    printf("\nmodel FLOPs: training %s per sample, %s per step at batch %lld; forward %s;\n"
           "             sample_actions (prefix once, %lld flow steps) %s per sample\n",
           a, b, (long long)r->batch, c, (long long)r->cfg->flow.steps, d);
}

static void print_params_text(const vla_param_list *plist) {
    printf("\n");
    for (int64_t i = 0; i < plist->n; i++) {
        const vla_param_spec *s = &plist->items[i];
        printf("%s [", s->name);
        for (int k = 0; k < s->ndim; k++) printf("%s%lld", k ? ", " : "", (long long)s->shape[k]);
        printf("] %s%s\n", vla_param_group_name(s->group), s->trainable ? "" : " frozen");
    }
}

/* The pretrained_model directory of `path`: a training output directory (its
 * newest valid checkpoint, vla_ckpt_find_last, as eval and serve resolve
 * it), a checkpoint step directory (verified), or `path` itself. */
static vla_status model_dir_of(const char *path, char *dir, size_t cap) {
    char buf[VLA_CKPT_PATH_MAX + 64];
    snprintf(dir, cap, "%s", path);
    if (!vla_is_dir(path)) return VLA_OK;
    snprintf(buf, sizeof buf, "%s/%s", path, VLA_CKPT_DIR);
    vla_ckpt_info ck;
    if (vla_is_dir(buf)) {
        VLA_TRY(vla_ckpt_find_last(path, &ck));
        snprintf(buf, sizeof buf, "%s/%s", ck.dir, VLA_CKPT_MODEL_DIR);
    } else {
        snprintf(buf, sizeof buf, "%s/%s", path, VLA_CKPT_MANIFEST);
        if (!vla_path_exists(buf)) return VLA_OK;
        VLA_TRY(vla_ckpt_verify(path, NULL));
        snprintf(buf, sizeof buf, "%s/%s", path, VLA_CKPT_MODEL_DIR);
    }
    if (strlen(buf) >= cap) return vla_error(VLA_ERR_INVALID_ARG, "%s: path too long", path);
    snprintf(dir, cap, "%s", buf);
    return VLA_OK;
}

/* Was the vla.c checkpoint in `dir` trained without cameras? Its config.json
 * says how many images it was fed (features.cameras, checkpoint/pretrained.h). */
static vla_status trained_cameras(const char *dir, bool *state_only) {
    char file[VLA_CKPT_PATH_MAX + 32];
    snprintf(file, sizeof file, "%s/config.json", dir);
    *state_only = false;
    json_t *root;
    VLA_TRY(vla_json_load_file(file, &root));
    json_t *cams = json_object_get(json_object_get(root, "features"), "cameras");
    *state_only = json_is_integer(cams) && json_integer_value(cams) == 0;
    json_decref(root);
    return VLA_OK;
}

static int policy_info(int argc, char **argv) {
    const char *config = NULL, *pretrained = NULL, *embodiment = NULL;
    int64_t batch = 32;
    bool as_json = false, list = false;
    const vla_flag flags[] = {
        {"config", VLA_FLAG_STRING, &config, "NAME|PATH", "preset name (pi05, groot-n1.5, pi05-tiny, …) or JSON path"},
        {"policy.pretrained_path", VLA_FLAG_STRING, &pretrained, "DIR|FILE",
         "a checkpoint (published or vla.c): its config.json picks the config (--config: the base it overrides), "
         "and every tensor's name, shape and dtype is checked against the policy without reading the weights"},
        {"policy.embodiment", VLA_FLAG_STRING, &embodiment, "NAME",
         "which statistics of a published fine-tune to report where it holds several (openpi asset id, GR00T tag)"},
        {"batch", VLA_FLAG_INT, &batch, "N", "samples per step for the memory measurement (default 32)"},
        {"json", VLA_FLAG_BOOL, &as_json, NULL, "print one JSON object"},
        {"params", VLA_FLAG_BOOL, &list, NULL, "also list every parameter tensor (name, shape, group, trainable)"},
    };
    const vla_command_spec spec = {
        "vla policy info", NULL, "Count a policy's parameters and measure its training and inference memory.",
        "Presets are looked up in $VLA_CONFIG_DIR, ./configs and configs/ next to the executable.\n"
        "Weights and gradients are given in f32 and bf16; AdamW keeps two f32 moments per trainable\n"
        "parameter. Activations and copies are measured: the policy's training step runs on the\n"
        "meta backend (every op empty, memory address space alone) sized as cuda keeps it, at\n"
        "--batch samples of the longest prompt, in f32 and bf16, with and without gradient\n"
        "checkpointing, and inference for one observation — what the code allocates, a 3B preset\n"
        "included, in milliseconds. The per-group table is a layer-by-layer estimate of the floats\n"
        "saved for backward. Model FLOPs count\n"
        "2·weights·tokens per matrix plus attention; training adds one forward's worth per kind\n"
        "of gradient (inputs, weights).",
        flags, (int)(sizeof flags / sizeof flags[0]), 0, 0};
    vla_flags_result res;
    int rc = vla_cli_parse(&spec, argc, argv, &res);
    if (rc >= 0) return rc;
    if (!config && !pretrained) {
        fprintf(stderr, "vla: error: --config or --policy.pretrained_path is required (e.g. --config pi05)\n");
        return 2;
    }
    if (batch < 1) {
        fprintf(stderr, "vla: error: --batch must be at least 1\n");
        return 2;
    }
    vla_policy_config cfg;
    vla_pub_format fmt = VLA_PUB_UNKNOWN;
    char model_dir[VLA_CKPT_PATH_MAX];
    vla_status st = VLA_OK;
    if (pretrained) { /* a run directory or a checkpoint step, as eval and serve take them */
        if ((st = vla_published_check_path("--policy.pretrained_path", pretrained)) != VLA_OK ||
            (st = model_dir_of(pretrained, model_dir, sizeof model_dir)) != VLA_OK)
            return vla_cli_fail(st);
        pretrained = model_dir;
    }
    st = pretrained ? vla_published_config(pretrained, config, &cfg, &fmt) : vla_policy_config_load(config, &cfg);
    if (st != VLA_OK) return vla_cli_fail(st);
    bool state_only = false;
    if (pretrained && fmt == VLA_PUB_VLA && (st = trained_cameras(pretrained, &state_only)) != VLA_OK)
        return vla_cli_fail(st);
    vla_param_list plist = {0};
    st = vla_param_specs(&cfg, &plist);
    if (st != VLA_OK) return vla_cli_fail(st);
    vla_published_report ckpt = {0};
    if (pretrained && (st = vla_published_check(pretrained, &plist, &ckpt)) != VLA_OK) {
        vla_param_list_free(&plist);
        return vla_cli_fail(st);
    }
    vla_pub_stats_source stats = VLA_PUB_STATS_NONE;
    vla_pretrained_meta meta = {0};
    if (pretrained && fmt != VLA_PUB_VLA) {
        vla_normalizer ns, na;
        if ((st = vla_published_stats(pretrained, &cfg, embodiment, &ns, &na, &meta, &stats)) != VLA_OK) {
            vla_param_list_free(&plist);
            return vla_cli_fail(st);
        }
        if (stats != VLA_PUB_STATS_NONE) vla_normalizer_free(&ns), vla_normalizer_free(&na);
    }
    vla_param_counts cnt;
    vla_param_count(&plist, &cnt);
    /* The parameters are what the policy allocates whatever its cameras; the
     * compute is what it runs: a state-only policy feeds no image. */
    if (state_only) cfg.vision.cameras = 0;
    vla_activation_estimate act; /* the per-group table (f32); the totals are measured */
    vla_activation_estimate_compute(&cfg, &plist, false, &act);
    vla_flops_estimate fl;
    vla_flops_estimate_compute(&cfg, &plist, &fl);

    double P = (double)cnt.total_params, T = (double)cnt.total_trainable;
    double mem[MEM_COUNT] = {4 * P, 2 * P, 4 * T, 2 * T, 8 * T};
    mem[17] = vla_zero1_budget_bytes(cnt.total_trainable, 1, false) - 8 * T;
    if ((st = measure_memory(&cfg, batch, mem)) != VLA_OK) {
        vla_param_list_free(&plist);
        return vla_cli_fail(st);
    }
    int64_t img_tokens = cfg.vision.cameras * vla_policy_image_tokens(&cfg);

    info_report r = {&cfg, &plist, &cnt, &act, &fl, mem, batch, img_tokens, list, pretrained, &ckpt, fmt, stats, &meta,
                     state_only};
    if (as_json) {
        print_json(&r);
    } else {
        print_groups_text(&r);
        print_memory_text(&r);
        print_compute_text(&r);
        if (list) print_params_text(&plist);
        if (pretrained)
            printf("\npretrained %s (%s): %d file%s, %.2f GiB, %lld tensors, prefix '%s'\n"
                   "  every policy tensor present with its shape: %lld (%lld stored as bf16/f16, %lld through a tie "
                   "or alias); %lld known-unused tensors skipped\n",
                   pretrained, vla_pub_format_name(fmt), ckpt.n_files, ckpt.n_files == 1 ? "" : "s",
                   (double)ckpt.file_bytes / (1 << 30), (long long)ckpt.file_tensors, ckpt.prefix,
                   (long long)ckpt.bound, (long long)ckpt.converted, (long long)ckpt.aliased, (long long)ckpt.unused);
        if (pretrained && fmt != VLA_PUB_VLA) {
            if (stats == VLA_PUB_STATS_NONE)
                printf("  normalisation statistics: none (a base checkpoint: fine-tune it before vla eval)\n");
            else
                printf("  normalisation statistics: %s — state %lld, action %lld, %d camera%s, embodiment %s (row %d)\n",
                       vla_pub_stats_source_name(stats), (long long)meta.state_width, (long long)meta.action_width,
                       meta.cameras, meta.cameras == 1 ? "" : "s", meta.embodiment_name[0] ? meta.embodiment_name : "-",
                       (int)meta.embodiment);
        }
    }
    vla_param_list_free(&plist);
    return 0;
}

int vla_cmd_policy(int argc, char **argv) {
    static const vla_cli_command sub[] = {
        {"info", "parameter counts per module and training memory of a policy config", policy_info},
    };
    return vla_cli_dispatch("vla policy", sub, (int)(sizeof sub / sizeof sub[0]), argc, argv);
}
